// Command-line flags of the benchmark programs: `--name value` pairs checked against ranges.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace distgraph::bench {

/// A table of flags, each bound to a variable that keeps its default unless the flag is
/// given. `--json` is always accepted and left to Reporter. parse() prints
/// `<program>: <why>` and the usage line to stderr and exits with status 2 on an unknown
/// flag, a missing value, or a number outside its range.
class Flags {
 public:
  explicit Flags(std::string program) : program_(std::move(program)) {}

  /// An integer flag with a value in [lo, hi].
  template <class Int>
  Flags& add(std::string name, Int& target, std::int64_t lo, std::int64_t hi) {
    usage_ += " [" + name + " " + std::to_string(lo) + ".." + std::to_string(hi) + "]";
    entries_.push_back({std::move(name), [&target, lo, hi](const std::string& v) {
                          char* end = nullptr;
                          errno = 0;
                          const long long x = std::strtoll(v.c_str(), &end, 10);
                          if (errno != 0 || end == v.c_str() || *end != '\0' || x < lo || x > hi)
                            return false;
                          target = static_cast<Int>(x);
                          return true;
                        }});
    return *this;
  }

  /// A string flag (a name, a path).
  Flags& add(std::string name, std::string& target, const std::string& what) {
    usage_ += " [" + name + " " + what + "]";
    entries_.push_back({std::move(name), [&target](const std::string& v) {
                          target = v;
                          return true;
                        }});
    return *this;
  }

  void parse(int argc, char** argv) const {
    for (int i = 1; i < argc; ++i) {
      const std::string flag = argv[i];
      if (flag == "--json") continue;
      const Entry* entry = nullptr;
      for (const Entry& e : entries_)
        if (e.name == flag) entry = &e;
      if (entry == nullptr) fail("unknown flag " + flag);
      if (i + 1 >= argc) fail("missing value after " + flag);
      const std::string value = argv[++i];
      if (!entry->set(value)) fail("bad value for " + flag + ": " + value);
    }
  }

 private:
  struct Entry {
    std::string name;
    std::function<bool(const std::string&)> set;
  };

  [[noreturn]] void fail(const std::string& why) const {
    std::fprintf(stderr, "%s: %s\nusage: %s%s [--json]\n", program_.c_str(), why.c_str(),
                 program_.c_str(), usage_.c_str());
    std::exit(2);
  }

  std::string program_;
  std::string usage_;
  std::vector<Entry> entries_;
};

}  // namespace distgraph::bench
