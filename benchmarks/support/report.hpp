// Benchmark reporting: a self-describing header, a table of figures beside their bounds,
// and with --json one JSON object per figure per line.
#pragma once

#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace distgraph::bench {

/// Whether a figure is a rate (higher is better: ratio = value / bound) or a time
/// (lower is better: ratio = bound / value). Either way ratio >= 1 means "at the bound".
/// A limit is a count that must not exceed its bound (errors, bound 0): ratio 1 when
/// within it, else bound / value (0 against a bound of 0).
enum class Kind { rate, time, limit };

struct Figure {
  std::string figure;  ///< stable name scripts key on, e.g. "csr_build"
  double value = 0;
  std::string unit;  ///< "edges/s", "s", "GB/s"
  double bound = 0;
  std::string bound_name;  ///< what the bound measured, e.g. "memcpy"
  Kind kind = Kind::rate;
  nlohmann::json params = nlohmann::json::object();
  /// Table only: what tells rows of the same figure apart (e.g. "range/asio/mmap"),
  /// printed after the ratio; --json has it in params instead.
  std::string label{};

  double ratio() const {
    if (kind == Kind::rate) return bound > 0 ? value / bound : 0.0;
    if (kind == Kind::limit) return value <= bound ? 1.0 : bound / value;
    return value > 0 ? bound / value : 0.0;
  }
};

/// Collects figures and prints them as a table (stdout) or JSON lines (--json).
class Reporter {
 public:
  /// Parses `--json` from argv; other flags are left to the program.
  Reporter(int argc, char** argv, std::string program) : program_(std::move(program)) {
    for (int i = 1; i < argc; ++i)
      if (std::strcmp(argv[i], "--json") == 0) json_ = true;
  }
  bool json() const noexcept { return json_; }

  /// Prints the header block: program name, hardware threads, then `params`.
  void header(const std::map<std::string, std::string>& params) const {
    std::FILE* out = json_ ? stderr : stdout;
    std::fprintf(out, "# %s  (hardware threads: %u)\n", program_.c_str(),
                 std::thread::hardware_concurrency());
    for (const auto& [k, v] : params) std::fprintf(out, "#   %-18s %s\n", k.c_str(), v.c_str());
  }

  /// Progress notes go to stderr so --json stdout stays machine-readable.
  void note(std::string_view text) const {
    std::fprintf(stderr, "%.*s\n", static_cast<int>(text.size()), text.data());
  }

  void add(Figure f) {
    if (json_) {
      nlohmann::json j = {{"figure", f.figure}, {"value", f.value},           {"unit", f.unit},
                          {"bound", f.bound},   {"bound_name", f.bound_name}, {"ratio", f.ratio()},
                          {"params", f.params}};
      std::printf("%s\n", j.dump().c_str());
    } else {
      if (!printed_table_head_) {
        std::printf("%-26s %14s %-10s %14s %-22s %7s\n", "figure", "value", "unit", "bound",
                    "bound_name", "ratio");
        printed_table_head_ = true;
      }
      std::printf("%-26s %14.4g %-10s %14.4g %-22s %7.3f%s%s\n", f.figure.c_str(), f.value,
                  f.unit.c_str(), f.bound, f.bound_name.c_str(), f.ratio(),
                  f.label.empty() ? "" : "  ", f.label.c_str());
    }
    std::fflush(stdout);
    figures_.push_back(std::move(f));
  }
  const std::vector<Figure>& figures() const noexcept { return figures_; }

 private:
  std::string program_;
  bool json_ = false;
  bool printed_table_head_ = false;
  std::vector<Figure> figures_;
};

}  // namespace distgraph::bench
