// lower_thread_priority: a background thread yields its core to the threads that matter more.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>

namespace distgraph {

/// Raises the calling thread's niceness to `nice` (at most 19) unless it is already that
/// high; Linux keeps a niceness per thread, so the rest of the process is untouched.
/// Returns whether the thread now runs at `nice` or nicer. Lowering priority needs no
/// privilege; a refusal (a sandbox's seccomp filter, say) leaves the thread as it was,
/// which costs speed and nothing else, so it returns false rather than throwing. Threads
/// the calling thread starts later inherit its niceness.
inline bool lower_thread_priority(int nice) noexcept {
  if (nice <= 0) return true;
  if (nice > 19) nice = 19;
  const auto tid = static_cast<id_t>(::gettid());
  errno = 0;
  const int now = ::getpriority(PRIO_PROCESS, tid);
  if (errno == 0 && now >= nice) return true;
  return ::setpriority(PRIO_PROCESS, tid, nice) == 0;
}

}  // namespace distgraph
