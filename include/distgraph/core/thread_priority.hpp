// lower_thread_priority, schedule_as_batch: a background thread yields its core to the threads
// that matter more.
#pragma once

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <string_view>

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

/// The environment variable that turns schedule_as_batch off for a whole process: "0" =
/// off; unset, "1" or anything else = on (runtime's read_environment() refuses other
/// values at start-up, naming the variable; here, below it, nothing may throw).
inline constexpr const char* sched_batch_variable = "DISTGRAPH_SCHED_BATCH";

/// Puts the calling thread under Linux's SCHED_BATCH: it keeps its niceness and its share
/// of the CPU, but when it wakes it no longer preempts the thread running on the core; it
/// runs at that thread's next scheduling point (a few ms at most), or at once on an idle
/// core. For the threads that serve a training step (a server's socket and handler
/// threads, a client's I/O thread, a loader's prefetch threads): where trainers and
/// servers share the cores, each reply or request that woke them used to cut into a
/// forward or backward pass, costing a context switch and the caches it had warmed
/// (docs/PERFORMANCE.md, "Service threads that do not preempt"). The price: a reply that
/// a thread of normal policy is blocked on may wait one scheduling slice for a busy core.
/// Returns whether the thread now runs so. Does nothing (false) where DISTGRAPH_SCHED_BATCH
/// is "0", under a policy other than the default (a real-time one or SCHED_IDLE the user
/// chose), or where the change is refused (a sandbox): that costs speed, nothing else.
/// Needs no privilege. Threads the calling thread starts later inherit the policy (and
/// its niceness), so a handler or sampler that starts a long-lived pool starts it so.
inline bool schedule_as_batch() noexcept {
#if defined(__linux__)
  if (const char* v = std::getenv(sched_batch_variable); v != nullptr && std::string_view(v) == "0")
    return false;
  // sched_getscheduler and sched_setscheduler with pid 0 act on the calling thread on
  // Linux, and read the kernel's value (pthread_getschedparam may answer from glibc's
  // cache, which a `chrt -p` behind its back leaves stale).
  const int policy = ::sched_getscheduler(0);
  if (policy == SCHED_BATCH) return true;
  if (policy != SCHED_OTHER) return false;
  sched_param param{};
  return ::sched_setscheduler(0, SCHED_BATCH, &param) == 0;
#else
  return false;
#endif
}

/// How a background thread the library starts gives way to the threads that matter more.
struct ThreadPriority {
  int nice = 0;        ///< its niceness (0-max_nice): lower_thread_priority
  bool batch = false;  ///< SCHED_BATCH: schedule_as_batch
};

/// Applies `p` to the calling thread (each part as its function says; refusals are ignored).
inline void apply_thread_priority(const ThreadPriority& p) noexcept {
  lower_thread_priority(p.nice);
  if (p.batch) schedule_as_batch();
}

}  // namespace distgraph
