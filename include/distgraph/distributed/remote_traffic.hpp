// RemoteTraffic: the rows and bytes a trainer's pulls bring from other machines, in total
// (KVClient::remote_traffic) and per batch (TrafficScope).
#pragma once

#include <cstdint>

namespace distgraph {

/// Rows and bytes a client pulled from the servers of other machines than its own (all
/// servers when it has no machine): what a network carries for it. Counted when the
/// replies arrive. `cached_rows` / `cached_bytes`: rows of other machines the machine's
/// row cache served instead (not in rows / bytes).
struct RemoteTraffic {
  std::int64_t rows = 0;
  std::int64_t bytes = 0;
  std::int64_t cached_rows = 0;
  std::int64_t cached_bytes = 0;

  RemoteTraffic& operator+=(const RemoteTraffic& o) noexcept {
    rows += o.rows;
    bytes += o.bytes;
    cached_rows += o.cached_rows;
    cached_bytes += o.cached_bytes;
    return *this;
  }
};

namespace detail {
/// Where the calling thread's pulls also count their traffic (see TrafficScope).
inline thread_local RemoteTraffic* traffic_sink = nullptr;
}  // namespace detail

/// While alive, the pulls this thread makes also add their traffic to `into`: what one
/// batch fetched, whichever thread made it and whenever (a prefetch thread may make the
/// next epoch's batches before this epoch ends). Scopes nest; the innermost counts.
class TrafficScope {
 public:
  explicit TrafficScope(RemoteTraffic& into) noexcept : previous_(detail::traffic_sink) {
    detail::traffic_sink = &into;
  }
  ~TrafficScope() { detail::traffic_sink = previous_; }
  TrafficScope(const TrafficScope&) = delete;
  TrafficScope& operator=(const TrafficScope&) = delete;

 private:
  RemoteTraffic* previous_;
};

}  // namespace distgraph
