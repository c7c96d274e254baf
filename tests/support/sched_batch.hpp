// Whether a test can watch threads go under SCHED_BATCH here.
#pragma once

#include <sched.h>
#include <stdlib.h>

#include <string>
#include <thread>

#include "distgraph/core/thread_priority.hpp"

namespace distgraph::test {

/// Why a test of SCHED_BATCH cannot run here ("" = it can): the test's thread is under
/// another policy than the default (its threads could not be told apart), or the system
/// refuses SCHED_BATCH (a sandbox; schedule_as_batch reports and tolerates that). Clears
/// DISTGRAPH_SCHED_BATCH from the environment first, so that a value the test's caller
/// set does not turn the change off.
inline std::string sched_batch_untestable() {
  ::unsetenv(sched_batch_variable);
  if (::sched_getscheduler(0) != SCHED_OTHER) return "the test does not run under SCHED_OTHER";
  bool refused = false;
  std::thread([&] {
    sched_param p{};
    refused = ::sched_setscheduler(0, SCHED_BATCH, &p) != 0;
  }).join();
  return refused ? "SCHED_BATCH is refused here" : "";
}

}  // namespace distgraph::test
