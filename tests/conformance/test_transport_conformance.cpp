// The Transport contract (docs/concepts/Transport.md), run over every model: in-process,
// TCP against real AsioServers on 127.0.0.1, and AnyTransport holding each.
#include <catch2/catch.hpp>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "distgraph/transport/any_transport.hpp"
#include "distgraph/transport/asio_server.hpp"
#include "distgraph/transport/asio_transport.hpp"
#include "distgraph/transport/concepts.hpp"
#include "distgraph/transport/in_process_transport.hpp"
#include "support/what_contains.hpp"

namespace test_conformance_transport_conformance {

using namespace distgraph;
using namespace std::chrono_literals;

namespace {

/// The AsioServers a TCP model talks to (none for in-process ones).
using Servers = std::vector<std::unique_ptr<AsioServer>>;

/// Per-model setup: `connect(handlers, servers)` makes a transport to servers 0..n-1, server
/// i running `handlers[i]`. `synchronous`: send() runs the handler before it returns, so a
/// call is never in flight and a handler must never block.
struct InProcessTraits {
  using transport_type = InProcessTransport;
  static constexpr bool synchronous = true;
  static InProcessTransport connect(std::vector<Handler> handlers, Servers&) {
    return InProcessTransport(std::move(handlers));
  }
};

struct AsioTraits {
  using transport_type = AsioTransport;
  static constexpr bool synchronous = false;
  static AsioTransport connect(std::vector<Handler> handlers, Servers& servers) {
    std::vector<Endpoint> endpoints;
    for (auto& h : handlers) {
      // Two handler threads: one request may block in its handler while the next is served.
      servers.push_back(std::make_unique<AsioServer>(
          std::move(h), AsioServerOptions{.port = 0, .num_threads = 2}));
      servers.back()->start();
      endpoints.push_back(servers.back()->endpoint());
    }
    return AsioTransport(std::move(endpoints), {.connect_timeout = 5s, .call_timeout = 10s});
  }
};

template <class Inner>
struct AnyTraits {
  using transport_type = AnyTransport;
  static constexpr bool synchronous = Inner::synchronous;
  static AnyTransport connect(std::vector<Handler> handlers, Servers& servers) {
    return AnyTransport(Inner::connect(std::move(handlers), servers));
  }
};

std::vector<std::byte> bytes_of(std::string_view s) {
  std::vector<std::byte> b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}
Message text(std::string_view s) { return Message::owning(bytes_of(s)); }
std::string text_of(std::span<const std::byte> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

/// A message whose head and parts live only as long as its keep_alive.
Message owned_message(std::string head, std::vector<std::vector<std::byte>> parts) {
  struct Owned {
    std::string head;
    std::vector<std::vector<std::byte>> parts;
  };
  auto o = std::make_shared<Owned>(Owned{std::move(head), std::move(parts)});
  Message m;
  m.head = std::as_bytes(std::span(o->head));
  for (const auto& p : o->parts) m.parts.emplace_back(p);
  m.keep_alive = std::move(o);
  return m;
}

/// Handlers block on it until the test opens it; opening twice is harmless.
class Gate {
 public:
  void wait() const { opened_.wait(); }
  void open() {
    std::call_once(once_, [this] { promise_.set_value(); });
  }

 private:
  std::promise<void> promise_;
  std::shared_future<void> opened_ = promise_.get_future().share();
  std::once_flag once_;
};

/// Two servers behind a transport of the model `Traits`. Server i answers
///   ping     an empty ok reply;
///   pull     ok, head "server i: <request head>", parts copied from the request;
///   metadata not_found, head "tensor 'nope': not found on server i";
///   push     its handler throws;
///   barrier  waits for `gate`, then ok with head "server i: released".
template <class Traits>
struct Cluster {
  static constexpr int num_servers = 2;

  Cluster() : transport(Traits::connect(handlers(), servers)) {}
  ~Cluster() { gate.open(); }  // before the transport and servers go: no handler stays blocked
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  Gate gate;
  Servers servers;
  typename Traits::transport_type transport;

 private:
  std::vector<Handler> handlers() {
    std::vector<Handler> hs;
    for (int i = 0; i < num_servers; ++i)
      hs.emplace_back([this, i](const Request& r) { return serve(i, r); });
    return hs;
  }
  Reply serve(int server, const Request& r) const {
    const std::string me = "server " + std::to_string(server);
    switch (r.type) {
      case MsgType::pull: {
        std::vector<std::vector<std::byte>> parts;
        for (auto p : r.body.parts) parts.emplace_back(p.begin(), p.end());
        return Reply{Status::ok, owned_message(me + ": " + text_of(r.body.head), std::move(parts))};
      }
      case MsgType::metadata:
        return Reply::error(Status::not_found, "tensor 'nope': not found on " + me);
      case MsgType::push:
        throw std::runtime_error(me + " fails on purpose");
      case MsgType::barrier:
        gate.wait();
        return Reply{Status::ok, text(me + ": released")};
      default:
        return Reply{};
    }
  }
};

Deadline soon() { return deadline_in(10s); }

template <class T>
std::vector<std::byte> raw(const std::vector<T>& v) {
  const auto b = std::as_bytes(std::span(v));
  return {b.begin(), b.end()};
}

}  // namespace

TEMPLATE_TEST_CASE("transports deliver each request to its server and hand back its reply",
                   "[conformance][transport][net]", InProcessTraits, AsioTraits,
                   AnyTraits<InProcessTraits>, AnyTraits<AsioTraits>) {
  using T = typename TestType::transport_type;
  static_assert(Transport<T>);
  Cluster<TestType> cluster;
  T& t = cluster.transport;
  const T& ct = t;
  CHECK(ct.num_servers() == Cluster<TestType>::num_servers);

  SECTION("call and send carry the head and every part intact, both ways") {
    std::vector<std::int64_t> ids(1001);
    std::iota(ids.begin(), ids.end(), -500);
    const std::vector<double> values = {0.5, -2.25, 1e300};
    // Odd sizes and an empty part: parts must not run into each other.
    const std::vector<std::vector<std::byte>> parts = {bytes_of("xyz"), raw(ids), {}, raw(values)};
    for (int server = 0; server < ct.num_servers(); ++server) {
      const std::string head = "request for " + std::to_string(server);
      // The request's memory lives only in its keep_alive: the transport keeps it.
      PendingCall pending = t.send(server, MsgType::pull, owned_message(head, parts));
      const Reply by_call = t.call(server, MsgType::pull, owned_message(head, parts), soon());
      const Reply by_send = pending.get(soon());
      for (const Reply* r : {&by_call, &by_send}) {
        CHECK(r->status == Status::ok);
        CHECK(r->text() == "server " + std::to_string(server) + ": " + head);
        REQUIRE(r->body.parts.size() == parts.size());
        for (std::size_t i = 0; i < parts.size(); ++i) {
          const auto got = r->body.parts[i];
          CHECK(std::vector<std::byte>(got.begin(), got.end()) == parts[i]);
          CHECK(reinterpret_cast<std::uintptr_t>(got.data()) % 8 == 0);
        }
      }
    }
    const Reply empty = t.call(1, MsgType::ping, Message{}, soon());
    CHECK(empty.status == Status::ok);
    CHECK(empty.body.head.empty());
    CHECK(empty.body.parts.empty());
  }

  SECTION("replies find their requests when many are in flight from several threads") {
    constexpr int threads = 3, per_thread = 100;
    std::vector<std::future<int>> workers;
    for (int w = 0; w < threads; ++w)
      workers.push_back(std::async(std::launch::async, [&t, w] {
        std::vector<std::pair<std::string, PendingCall>> calls;
        for (int i = 0; i < per_thread; ++i) {
          const int server = (i + w) % Cluster<TestType>::num_servers;
          std::string tag = std::to_string(w);  // built up, not "w" + ...: GCC 12 -Wrestrict
          tag += '/';
          tag += std::to_string(i);
          auto call = t.send(server, MsgType::pull, text(tag));
          calls.emplace_back("server " + std::to_string(server) + ": " + tag, std::move(call));
        }
        // Waited on newest first: a reply must not depend on the order of the waits.
        int matched = 0;
        for (auto it = calls.rbegin(); it != calls.rend(); ++it)
          matched += it->second.get(soon()).text() == it->first ? 1 : 0;
        return matched;
      }));
    int matched = 0;
    for (auto& w : workers) {
      REQUIRE(w.wait_for(30s) == std::future_status::ready);
      matched += w.get();
    }
    CHECK(matched == threads * per_thread);
  }

  SECTION("a non-ok status comes back as the reply; expect_ok turns it into RemoteError") {
    const Reply r = t.call(1, MsgType::metadata, Message{}, soon());
    CHECK(r.status == Status::not_found);
    CHECK(r.text() == "tensor 'nope': not found on server 1");
    CHECK(t.send(0, MsgType::metadata, Message{}).get(soon()).status == Status::not_found);
    CHECK_THROWS_MATCHES(expect_ok(r, "lookup"), RemoteError,
                         test::WhatContains({"lookup", "not_found", "tensor 'nope'"}));
    bool thrown = false;
    try {
      expect_ok(r, "lookup");
    } catch (const RemoteError& e) {
      thrown = true;
      CHECK(e.status() == Status::not_found);
    }
    CHECK(thrown);
    CHECK_NOTHROW(expect_ok(t.call(0, MsgType::ping, Message{}, soon()), "ping"));
  }

  SECTION("a handler that throws gives an internal_error reply and the server keeps serving") {
    const Reply r = t.call(0, MsgType::push, Message{}, soon());
    CHECK(r.status == Status::internal_error);
    CHECK_THAT(r.text(), Catch::Matchers::Contains("server 0 fails on purpose"));
    CHECK(t.call(0, MsgType::pull, text("still there"), soon()).text() == "server 0: still there");
  }

  SECTION("a server index outside [0, num_servers()) throws IdOutOfRange") {
    for (const int bad : {-1, ct.num_servers(), INT_MAX}) {
      CHECK_THROWS_MATCHES(t.send(bad, MsgType::ping, Message{}), IdOutOfRange,
                           test::WhatContains({"server", "id " + std::to_string(bad)}));
      CHECK_THROWS_AS(t.call(bad, MsgType::pull, text("lost"), soon()), IdOutOfRange);
    }
    CHECK(t.call(ct.num_servers() - 1, MsgType::ping, Message{}, soon()).status == Status::ok);
  }

  SECTION("a deadline that passes before the reply throws TimeoutError naming the call") {
    if constexpr (TestType::synchronous) {
      // The handler has run when send returns: even a past deadline gets the reply.
      const Deadline past = std::chrono::steady_clock::now() - 1s;
      CHECK(t.call(0, MsgType::pull, text("late"), past).text() == "server 0: late");
      CHECK(t.send(1, MsgType::pull, text("late")).get(past).text() == "server 1: late");
    } else {
      // The barrier handler holds its reply until the gate opens, after both deadlines.
      CHECK_THROWS_MATCHES(t.call(0, MsgType::barrier, Message{}, deadline_in(50ms)), TimeoutError,
                           test::WhatContains({"server 0", "barrier"}));
      PendingCall pending = t.send(1, MsgType::barrier, Message{});
      CHECK_THROWS_MATCHES(pending.get(deadline_in(20ms)), TimeoutError,
                           test::WhatContains({"server 1", "barrier"}));
      cluster.gate.open();
      // The late replies are discarded: later calls get their own.
      CHECK(t.call(0, MsgType::pull, text("after"), soon()).text() == "server 0: after");
      CHECK(t.call(1, MsgType::barrier, Message{}, soon()).text() == "server 1: released");
    }
  }

  SECTION("send returns without waiting for the reply, which may come after later ones") {
    if constexpr (TestType::synchronous) {
      CHECK(t.send(0, MsgType::ping, Message{}).ready());
    } else {
      PendingCall slow = t.send(0, MsgType::barrier, Message{});
      PendingCall fast = t.send(0, MsgType::pull, text("fast"));
      CHECK(fast.get(soon()).text() == "server 0: fast");
      CHECK_FALSE(slow.ready());
      cluster.gate.open();
      CHECK(slow.get(soon()).text() == "server 0: released");
    }
  }
}

}  // namespace test_conformance_transport_conformance
