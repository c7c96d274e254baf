// Small command-line toolkit for the distgraph subcommands: option parsing, errors, output.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace distgraph::cli {

/// A usage mistake (unknown option, missing value): printed as one line, exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Declarative parser: flags (`--json`), valued options (`--parts 4` or `--parts=4`) and
/// positional arguments. Unknown options are a UsageError naming them.
class Args {
 public:
  Args(std::string command, std::vector<std::string> argv)
      : command_(std::move(command)), argv_(std::move(argv)) {}

  /// Declares a boolean flag.
  Args& flag(std::string name, std::string help) {
    specs_[name] = {false, std::move(help)};
    order_.push_back(std::move(name));
    return *this;
  }
  /// Declares an option that takes a value.
  Args& option(std::string name, std::string help) {
    specs_[name] = {true, std::move(help)};
    order_.push_back(std::move(name));
    return *this;
  }
  /// Parses argv; call after declaring. Throws UsageError.
  void parse(std::size_t max_positional) {
    for (std::size_t i = 0; i < argv_.size(); ++i) {
      const std::string& a = argv_[i];
      if (a == "--help" || a == "-h") {
        help_ = true;
        continue;
      }
      if (a.rfind("--", 0) != 0 || a == "--") {
        positional_.push_back(a);
        continue;
      }
      std::string name = a.substr(2), value;
      bool has_value = false;
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      auto it = specs_.find(name);
      if (it == specs_.end())
        throw UsageError(command_ + ": unknown option '--" + name + "' (see --help)");
      if (it->second.takes_value) {
        if (!has_value) {
          if (i + 1 >= argv_.size())
            throw UsageError(command_ + ": option '--" + name + "' needs a value");
          value = argv_[++i];
        }
        values_[name] = value;
      } else {
        if (has_value) throw UsageError(command_ + ": flag '--" + name + "' takes no value");
        values_[name] = "1";
      }
    }
    if (positional_.size() > max_positional)
      throw UsageError(command_ + ": unexpected argument '" + positional_[max_positional] + "'");
  }

  bool help() const noexcept { return help_; }
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::optional<std::string> get(const std::string& name) const {
    auto it = values_.find(name);
    if (it == values_.end()) return std::nullopt;
    return it->second;
  }
  std::string get_or(const std::string& name, std::string fallback) const {
    return get(name).value_or(std::move(fallback));
  }
  /// An integer option within [lo, hi], or `fallback` when absent.
  std::int64_t get_int(const std::string& name, std::int64_t fallback, std::int64_t lo,
                       std::int64_t hi) const {
    auto v = get(name);
    if (!v) return fallback;
    std::int64_t x = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
    if (ec != std::errc{} || p != v->data() + v->size())
      throw UsageError(command_ + ": --" + name + " '" + *v + "' is not an integer");
    if (x < lo || x > hi)
      throw UsageError(command_ + ": --" + name + " " + *v + " out of range; expected [" +
                       std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return x;
  }
  /// A real option within [lo, hi], or `fallback` when absent.
  double get_double(const std::string& name, double fallback, double lo, double hi) const {
    auto v = get(name);
    if (!v) return fallback;
    char* end = nullptr;
    const double x = std::strtod(v->c_str(), &end);
    if (v->empty() || end != v->c_str() + v->size() || !(x == x))
      throw UsageError(command_ + ": --" + name + " '" + *v + "' is not a number");
    if (x < lo || x > hi)
      throw UsageError(command_ + ": --" + name + " " + *v + " out of range; expected [" +
                       std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return x;
  }
  const std::vector<std::string>& positional() const noexcept { return positional_; }

  /// Prints `usage` and each declared option with its help text.
  void print_help(std::string_view usage) const {
    std::printf("usage: %.*s\n\noptions:\n", static_cast<int>(usage.size()), usage.data());
    for (const auto& n : order_) {
      const auto& s = specs_.at(n);
      std::string left = "--" + n + (s.takes_value ? " VALUE" : "");
      std::printf("  %-24s %s\n", left.c_str(), s.help.c_str());
    }
  }

 private:
  struct Spec {
    bool takes_value = false;
    std::string help;
  };
  std::string command_;
  std::vector<std::string> argv_;
  std::map<std::string, Spec> specs_;
  std::vector<std::string> order_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
  bool help_ = false;
};

/// Subcommand entry point: receives the arguments after the subcommand name.
using Command = int (*)(std::vector<std::string> args);

int run_info(std::vector<std::string> args);
int run_partition(std::vector<std::string> args);
int run_chunk(std::vector<std::string> args);
int run_serve(std::vector<std::string> args);
int run_launch(std::vector<std::string> args);
int run_copy(std::vector<std::string> args);
int run_lease(std::vector<std::string> args);
int run_train(std::vector<std::string> args);  // needs libtorch (DISTGRAPH_CLI_TRAIN)
int run_infer(std::vector<std::string> args);  // needs libtorch

}  // namespace distgraph::cli
