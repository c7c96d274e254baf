// Deadline: the point in time by which a blocking call must return.
#pragma once

#include <chrono>

namespace distgraph {

/// Every blocking call takes one; nothing waits forever (see docs/WIRE.md).
using Deadline = std::chrono::steady_clock::time_point;

/// A deadline `timeout` from now.
inline Deadline deadline_in(std::chrono::steady_clock::duration timeout) {
  return std::chrono::steady_clock::now() + timeout;
}

/// Milliseconds left until `d` (0 once passed), for error messages and socket timers.
inline long long ms_left(Deadline d) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(d - std::chrono::steady_clock::now());
  return left.count() > 0 ? left.count() : 0;
}

}  // namespace distgraph
