// schedule_as_batch and apply_thread_priority: a thread changes its own policy and niceness only.
#include <sched.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <string>
#include <thread>

#include "distgraph/core/thread_priority.hpp"
#include "support/sched_batch.hpp"

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
  if (const std::string why = test::sched_batch_untestable(); !why.empty()) {
    WARN("SKIPPED: " << why);
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

TEST_CASE("schedule_as_batch does nothing where DISTGRAPH_SCHED_BATCH is 0", "[core]") {
  if (const std::string why = test::sched_batch_untestable(); !why.empty()) {
    WARN("SKIPPED: " << why);
    return;
  }
  ::setenv(sched_batch_variable, "0", 1);
  const Seen off = on_thread([] {
    Seen t;
    t.ok = !schedule_as_batch();
    t.policy = ::sched_getscheduler(0);
    return t;
  });
  ::setenv(sched_batch_variable, "1", 1);
  const Seen on = on_thread([] {
    Seen t;
    t.ok = schedule_as_batch();
    t.policy = ::sched_getscheduler(0);
    return t;
  });
  ::unsetenv(sched_batch_variable);
  CHECK(off.ok);
  CHECK(off.policy == SCHED_OTHER);
  CHECK(on.ok);
  CHECK(on.policy == SCHED_BATCH);
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
    WARN("SKIPPED: SCHED_IDLE is refused here");
    return;
  }
  CHECK(s.ok);
  CHECK(s.policy == SCHED_IDLE);
}

TEST_CASE("apply_thread_priority sets the niceness and the policy asked, and nothing else",
          "[core]") {
  const int before = niceness();
  if (const std::string why = test::sched_batch_untestable();
      !why.empty() || before < 0 || before >= 7) {
    WARN("SKIPPED: " << (why.empty() ? "the test does not run at niceness 0-6" : why));
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
