// schedule_as_batch and apply_thread_priority: a thread changes its own policy and niceness only.
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <thread>

#include "distgraph/core/thread_priority.hpp"

namespace test_core_thread_priority {

using namespace distgraph;

namespace {

int niceness() {
  errno = 0;
  const int n = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
  return errno == 0 ? n : -100;
}

/// Runs `fn` on a new thread and returns what it returned.
template <class Fn>
auto on_thread(Fn fn) {
  decltype(fn()) out{};
  std::thread([&] { out = fn(); }).join();
  return out;
}

struct Seen {
  bool ok = false;
  int policy = -1, nice = -100, child_policy = -1;
};

}  // namespace

TEST_CASE("schedule_as_batch puts the calling thread alone under SCHED_BATCH", "[core]") {
  if (::sched_getscheduler(0) != SCHED_OTHER || niceness() >= max_nice) {
    WARN("skipped: the test does not run under the default policy at a low niceness");
    return;
  }
  const Seen s = on_thread([] {
    Seen t;
    t.ok = schedule_as_batch();
    t.policy = ::sched_getscheduler(0);
    t.child_policy = on_thread([] { return ::sched_getscheduler(0); });
    t.ok = t.ok && schedule_as_batch();  // again: already so
    return t;
  });
  CHECK(s.ok);
  CHECK(s.policy == SCHED_BATCH);
  CHECK(s.child_policy == SCHED_BATCH);  // threads it starts inherit it
  CHECK(::sched_getscheduler(0) == SCHED_OTHER);
  // The next thread starts under the process's policy again.
  CHECK(on_thread([] { return ::sched_getscheduler(0); }) == SCHED_OTHER);
}

TEST_CASE("schedule_as_batch leaves a thread under another policy as it is", "[core]") {
  // SCHED_IDLE, which any thread may choose for itself, stands in for a policy the user set.
  const Seen s = on_thread([] {
    Seen t;
    sched_param p{};
    if (::sched_setscheduler(0, SCHED_IDLE, &p) != 0) return t;
    t.ok = !schedule_as_batch();
    t.policy = ::sched_getscheduler(0);
    return t;
  });
  if (s.policy == -1) {
    WARN("skipped: SCHED_IDLE refused here");
    return;
  }
  CHECK(s.ok);
  CHECK(s.policy == SCHED_IDLE);
}

TEST_CASE("apply_thread_priority sets the niceness and the policy asked, and nothing else",
          "[core]") {
  const int before = niceness();
  if (::sched_getscheduler(0) != SCHED_OTHER || before < 0 || before >= 7) {
    WARN("skipped: the test does not run under the default policy at niceness 0-6");
    return;
  }
  const auto run = [](ThreadPriority p) {
    return on_thread([p] {
      apply_thread_priority(p);
      Seen s;
      s.policy = ::sched_getscheduler(0);
      s.nice = niceness();
      return s;
    });
  };
  const Seen both = run({.nice = 7, .batch = true});
  CHECK(both.policy == SCHED_BATCH);
  CHECK(both.nice == 7);
  const Seen nice_only = run({.nice = 7});
  CHECK(nice_only.policy == SCHED_OTHER);
  CHECK(nice_only.nice == 7);
  const Seen none = run({});
  CHECK(none.policy == SCHED_OTHER);
  CHECK(none.nice == before);
  CHECK(niceness() == before);
}

}  // namespace test_core_thread_priority
