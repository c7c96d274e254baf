// lower_thread_priority: a background thread yields its core to the threads that matter more.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "distgraph/core/error.hpp"

namespace distgraph {

/// The highest niceness Linux gives a thread (the lowest priority).
inline constexpr int max_nice = 19;

/// Throws InvalidArgument naming `what` unless 0 <= nice <= max_nice: a thread may only
/// lower its own priority.
inline void check_nice(int nice, const std::string& what) {
  if (nice < 0 || nice > max_nice)
    throw InvalidArgument(what + " " + std::to_string(nice) + "; expected 0-" +
                          std::to_string(max_nice) + " (a thread may only lower its own priority)");
}

/// Raises the calling thread's niceness to `nice` (at most max_nice) unless it is already that
/// high; Linux keeps a niceness per thread, so the rest of the process is untouched.
/// Returns whether the thread now runs at `nice` or nicer. Lowering priority needs no
/// privilege; a refusal (a sandbox's seccomp filter, say) leaves the thread as it was,
/// which costs speed and nothing else, so it returns false rather than throwing. Threads
/// the calling thread starts later inherit its niceness.
inline bool lower_thread_priority(int nice) noexcept {
  if (nice <= 0) return true;
  if (nice > max_nice) nice = max_nice;
  const auto tid = static_cast<id_t>(::gettid());
  errno = 0;
  const int now = ::getpriority(PRIO_PROCESS, tid);
  if (errno == 0 && now >= nice) return true;
  return ::setpriority(PRIO_PROCESS, tid, nice) == 0;
}

}  // namespace distgraph
