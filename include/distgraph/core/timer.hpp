// Wall-clock stopwatch, process CPU time and peak-RSS reading for stage summaries and benchmarks.
#pragma once

#include <sys/resource.h>

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

/// CPU seconds (user + system) this process's threads have used so far, all of them
/// together; 0 if unavailable. The difference over a stretch of wall time says how many
/// cores the process kept busy in it.
inline double process_cpu_seconds() {
  rusage u{};
  if (::getrusage(RUSAGE_SELF, &u) != 0) return 0;
  const auto sec = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

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
