// Wall-clock stopwatch and peak-RSS reading for stage summaries and benchmarks.
#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>

namespace distgraph {

/// Monotonic stopwatch; `seconds()` since construction or the last `reset()`.
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  void reset() { start_ = std::chrono::steady_clock::now(); }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

/// Peak resident set size of this process in bytes (VmHWM), 0 if unavailable.
inline std::int64_t peak_rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmHWM:") {
      std::int64_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
    std::getline(in, key);
  }
  return 0;
}

}  // namespace distgraph
