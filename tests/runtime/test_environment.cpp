// read_environment's switches: DISTGRAPH_SCHED_BATCH.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "distgraph/runtime/environment.hpp"

namespace test_runtime_environment {

using namespace distgraph;

namespace {

/// Sets (or, with nullopt, unsets) `name` for the scope, restoring what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = ::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value->c_str(), 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace

TEST_CASE("DISTGRAPH_SCHED_BATCH turns the service threads' SCHED_BATCH on and off", "[runtime]") {
  {
    ScopedEnv e("DISTGRAPH_SCHED_BATCH", std::nullopt);
    CHECK(read_sched_batch_environment());
    CHECK(read_environment().sched_batch);
  }
  {
    ScopedEnv e("DISTGRAPH_SCHED_BATCH", "0");
    CHECK_FALSE(read_sched_batch_environment());
    CHECK_FALSE(read_environment().sched_batch);
  }
  {
    ScopedEnv e("DISTGRAPH_SCHED_BATCH", "1");
    CHECK(read_environment().sched_batch);
  }
  for (const char* bad : {"yes", "2", " 1", "off"}) {
    ScopedEnv e("DISTGRAPH_SCHED_BATCH", bad);
    CHECK_THROWS_WITH(read_environment(), Catch::Contains("DISTGRAPH_SCHED_BATCH='" +
                                                          std::string(bad) + "'; expected 0 or 1"));
  }
}

}  // namespace test_runtime_environment
