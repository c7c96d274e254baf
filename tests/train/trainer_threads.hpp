// Test helper: several trainers as threads of one process, each with its own c10d store
// connection or gloo group, for collectives without processes.
#pragma once

#include <torch/types.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/train/allreduce.hpp"

namespace distgraph::test {

inline constexpr std::chrono::milliseconds collective_timeout{30000};

/// Runs `body(rank, store, options)` on `world` threads, each connected to a TCPStore
/// that rank 0 hosts on a free port of 127.0.0.1 (options: loopback, that port). Rethrows
/// the first exception of any rank after all have finished.
inline void with_store(int world,
                       const std::function<void(int, const c10::intrusive_ptr<c10d::Store>&,
                                                const RendezvousOptions&)>& body) {
  std::promise<std::uint16_t> port;
  auto port_future = port.get_future().share();
  std::vector<std::future<void>> done;
  for (int r = 0; r < world; ++r)
    done.push_back(std::async(std::launch::async, [&, r] {
      RendezvousOptions o{.master_addr = "127.0.0.1",
                          .master_port = 0,
                          .rank = r,
                          .world_size = world,
                          .timeout = collective_timeout,
                          .hostname = "127.0.0.1",
                          .interface = {}};
      c10::intrusive_ptr<c10d::TCPStore> store;
      if (r == 0) {
        store = make_tcp_store(o);
        port.set_value(store->getPort());
      } else {
        if (port_future.wait_for(collective_timeout) != std::future_status::ready)
          throw TimeoutError("rank 0 never published its store port");
        o.master_port = port_future.get();
        store = make_tcp_store(o);
      }
      body(r, store, o);
    }));
  std::exception_ptr first;
  for (auto& f : done) {
    REQUIRE(f.wait_for(std::chrono::seconds(120)) == std::future_status::ready);
    try {
      f.get();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

/// Runs `body(rank, group)` on `world` threads, each with its own gloo group (see
/// with_store).
inline void with_group(int world,
                const std::function<void(int, c10::intrusive_ptr<CollectiveGroup>)>& body) {
  with_store(world, [&](int r, const c10::intrusive_ptr<c10d::Store>& store,
                        const RendezvousOptions& o) { body(r, make_gloo_group(store, o)); });
}

}  // namespace distgraph::test
