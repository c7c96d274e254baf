// AsioServer and AsioTransport on 127.0.0.1 (and ::1): pipelining, limits, failures, auth.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "distgraph/transport/any_transport.hpp"
#include "distgraph/transport/asio_server.hpp"
#include "distgraph/transport/asio_transport.hpp"
#include "distgraph/transport/detail/handshake.hpp"
#include "support/free_port.hpp"
#include "support/raw_client.hpp"
#include "support/sched_batch.hpp"

namespace test_transport_asio_transport {

using namespace distgraph;
using namespace std::chrono_literals;
using distgraph::test::LogSink;
using distgraph::test::RawClient;

namespace {

std::vector<std::byte> bytes_of(std::string_view s) {
  std::vector<std::byte> b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}
Message text(std::string_view s) { return Message::owning(bytes_of(s)); }

/// Replies with the request's own head and parts (views into the request payload).
Reply echo(const Request& r) { return Reply{Status::ok, r.body}; }

AsioTransportOptions client_options() {
  AsioTransportOptions o;
  o.connect_timeout = 5s;
  o.call_timeout = 10s;
  return o;
}

Deadline soon() { return deadline_in(10s); }

/// A server on 127.0.0.1:0 with `handler`, started.
std::unique_ptr<AsioServer> start_server(Handler handler, AsioServerOptions o = {}) {
  auto s = std::make_unique<AsioServer>(std::move(handler), std::move(o));
  s->start();
  return s;
}

}  // namespace

TEST_CASE("asio transport round-trips head and parts through a real server", "[transport][net]") {
  auto server = start_server(echo);
  REQUIRE(server->port() != 0);
  AsioTransport t({server->endpoint()}, client_options());
  CHECK(t.num_servers() == 1);
  CHECK(t.connected(0));
  std::vector<std::int64_t> ids(1001);
  std::iota(ids.begin(), ids.end(), 0);
  const std::string odd = "xyz";
  Message m = text("hello");
  m.parts = {std::as_bytes(std::span(odd)), as_bytes_part(std::span<const std::int64_t>(ids))};
  const Reply r = expect_ok(t.call(0, MsgType::pull, std::move(m), soon()), "echo");
  CHECK(r.text() == "hello");
  REQUIRE(r.body.parts.size() == 2);
  CHECK(reinterpret_cast<std::uintptr_t>(r.body.parts[1].data()) % 8 == 0);
  const auto* back = reinterpret_cast<const std::int64_t*>(r.body.parts[1].data());
  CHECK(std::equal(ids.begin(), ids.end(), back));
  CHECK(std::string(reinterpret_cast<const char*>(r.body.parts[0].data()), 3) == "xyz");
  CHECK(t.call(0, MsgType::ping, {}).status == Status::ok);
}

TEST_CASE("many threads pipeline requests and every reply finds its caller", "[transport][net]") {
  auto server = start_server(echo, {.num_threads = 4});
  AsioTransport t({server->endpoint()}, client_options());
  constexpr int threads = 4, per_thread = 250;
  std::vector<std::future<int>> workers;
  for (int w = 0; w < threads; ++w)
    workers.push_back(std::async(std::launch::async, [&t, w] {
      std::vector<std::pair<std::string, PendingCall>> calls;
      for (int i = 0; i < per_thread; ++i) {
        std::string tag = std::to_string(w);  // built up, not "w" + ...: GCC 12 -Wrestrict noise
        tag += '/';
        tag += std::to_string(i);
        auto c = t.send(0, MsgType::pull, text(tag));
        calls.emplace_back(std::move(tag), std::move(c));
      }
      int matched = 0;
      for (auto& [tag, c] : calls) matched += c.get(soon()).text() == tag ? 1 : 0;
      return matched;
    }));
  int matched = 0;
  for (auto& w : workers) {
    REQUIRE(w.wait_for(30s) == std::future_status::ready);
    matched += w.get();
  }
  CHECK(matched == threads * per_thread);
}

TEST_CASE("callers sharing a connection read each other's replies, in any order of waiting",
          "[transport][net]") {
  // A "hold" request is answered only after every other call has completed, so its reply
  // comes last; each thread waits for its window of calls newest first, so the caller
  // reading the connection completes calls whose owners are asleep or not yet waiting.
  std::promise<void> all_done;
  std::shared_future<void> done = all_done.get_future().share();
  auto server = start_server(
      [done](const Request& r) {
        if (r.type == MsgType::barrier && done.wait_for(20s) != std::future_status::ready)
          return Reply::error(Status::internal_error, "never released");
        return echo(r);
      },
      {.num_threads = 4});
  AsioTransport t({server->endpoint()}, client_options());
  auto held = t.send(0, MsgType::barrier, text("held"));
  static constexpr int threads = 8, per_thread = 200, window = 16;
  std::vector<std::future<int>> workers;
  for (int w = 0; w < threads; ++w)
    workers.push_back(std::async(std::launch::async, [&t, w] {
      int matched = 0;
      for (int first = 0; first < per_thread; first += window) {
        std::vector<std::pair<std::string, PendingCall>> calls;
        for (int i = first; i < std::min(per_thread, first + window); ++i) {
          std::string tag = std::to_string(w);
          tag += '/';
          tag += std::to_string(i);
          auto c = t.send(0, MsgType::pull, text(tag));
          calls.emplace_back(std::move(tag), std::move(c));
        }
        for (auto it = calls.rbegin(); it != calls.rend(); ++it)
          matched += it->second.get(soon()).text() == it->first ? 1 : 0;
      }
      return matched;
    }));
  int matched = 0;
  for (auto& w : workers) {
    REQUIRE(w.wait_for(60s) == std::future_status::ready);
    matched += w.get();
  }
  CHECK(matched == threads * per_thread);
  CHECK_FALSE(held.ready());
  all_done.set_value();
  CHECK(held.get(soon()).text() == "held");
}

TEST_CASE("a reading caller's deadline passes on time and a waiting caller takes over the reading",
          "[transport][net]") {
  std::promise<void> release_first, release_second;
  std::shared_future<void> first = release_first.get_future().share(),
                           second = release_second.get_future().share();
  auto server = start_server(
      [first, second](const Request& r) {
        const std::string what = Reply{Status::ok, r.body}.text();
        if (what == "first") first.wait_for(10s);
        if (what == "second") second.wait_for(10s);
        return echo(r);
      },
      {.num_threads = 4});
  AsioTransport t({server->endpoint()}, client_options());
  // Whichever of the two callers reads the connection first, the first one's deadline
  // passes while it waits (reading or asleep), and the second one's reply, sent later,
  // still reaches it: a reader that leaves hands the reading over.
  auto a = t.send(0, MsgType::pull, text("first"));
  const auto start = std::chrono::steady_clock::now();
  auto reader = std::async(std::launch::async, [&a] {
    try {
      a.get(deadline_in(300ms));
      return false;
    } catch (const TimeoutError&) {
      return true;
    }
  });
  auto b = t.send(0, MsgType::pull, text("second"));
  auto follower = std::async(std::launch::async, [&b] { return b.get(deadline_in(10s)).text(); });
  REQUIRE(reader.wait_for(10s) == std::future_status::ready);
  CHECK(reader.get());
  const auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed >= 300ms);
  CHECK(elapsed < 2s);
  CHECK(follower.wait_for(0s) == std::future_status::timeout);  // its reply is still held
  release_second.set_value();
  REQUIRE(follower.wait_for(10s) == std::future_status::ready);
  CHECK(follower.get() == "second");
  auto c = t.send(0, MsgType::pull, text("third"));
  CHECK(c.get(deadline_in(10s)).text() == "third");
  release_first.set_value();  // the abandoned reply arrives late and is discarded
  CHECK(t.call(0, MsgType::pull, text("next"), soon()).text() == "next");
}

TEST_CASE("callers waiting behind a reader get PeerLost when the server goes away",
          "[transport][net]") {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> entered{0};
  std::promise<void> all_in;
  auto server = start_server(
      [&entered, &all_in, released](const Request& r) {
        if (r.type == MsgType::barrier) {
          if (++entered == 3) all_in.set_value();
          released.wait_for(10s);
        }
        return echo(r);
      },
      {.num_threads = 4});
  AsioTransport t({server->endpoint()}, client_options());
  std::vector<std::future<bool>> waiters;
  for (int i = 0; i < 3; ++i) {
    auto call = std::make_shared<PendingCall>(t.send(0, MsgType::barrier, {}));
    waiters.push_back(std::async(std::launch::async, [call] {
      try {
        call->get(deadline_in(10s));
        return false;
      } catch (const PeerLost&) {
        return true;
      }
    }));
  }
  REQUIRE(all_in.get_future().wait_for(10s) == std::future_status::ready);
  auto stopper = std::async(std::launch::async, [&] { server->stop(); });
  const auto start = std::chrono::steady_clock::now();
  for (auto& w : waiters) {
    REQUIRE(w.wait_for(10s) == std::future_status::ready);
    CHECK(w.get());
  }
  CHECK(std::chrono::steady_clock::now() - start < 3s);
  release.set_value();
  REQUIRE(stopper.wait_for(10s) == std::future_status::ready);
}

TEST_CASE("replies complete out of order when the server finishes a later request first",
          "[transport][net]") {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto server = start_server(
      [released](const Request& r) {
        if (Reply{Status::ok, r.body}.text() == "slow" &&
            released.wait_for(10s) != std::future_status::ready)
          return Reply::error(Status::internal_error, "never released");
        return echo(r);
      },
      {.num_threads = 2});
  AsioTransport t({server->endpoint()}, client_options());
  auto slow = t.send(0, MsgType::pull, text("slow"));
  auto fast = t.send(0, MsgType::pull, text("fast"));
  CHECK(fast.get(soon()).text() == "fast");
  CHECK_FALSE(slow.ready());
  release.set_value();
  CHECK(slow.get(soon()).text() == "slow");
}

TEST_CASE("a request run_inline accepts is answered while every handler thread is blocked",
          "[transport][net]") {
  // One handler thread, held by one client's slow request: another client's ping (inline)
  // is still answered, on another thread, while that client's ordinary request, sent just
  // before it, waits for the handler thread (so the ping is the connection's one request
  // beyond num_threads that the gate lets run inline).
  std::promise<void> release, entered;
  std::shared_future<void> released = release.get_future().share();
  std::mutex mu;
  std::thread::id slow_thread, ping_thread;
  auto server = start_server(
      [&, released](const Request& r) {
        if (r.type == MsgType::ping) {
          std::lock_guard lock(mu);
          ping_thread = std::this_thread::get_id();
          return Reply{};
        }
        if (Reply{Status::ok, r.body}.text() == "slow") {
          {
            std::lock_guard lock(mu);
            slow_thread = std::this_thread::get_id();
          }
          entered.set_value();
          if (released.wait_for(10s) != std::future_status::ready)
            return Reply::error(Status::internal_error, "never released");
        }
        return echo(r);
      },
      {.num_threads = 1,
       .run_inline = [](MsgType type, std::uint64_t) { return type == MsgType::ping; }});
  AsioTransport holder({server->endpoint()}, client_options());
  AsioTransport t({server->endpoint()}, client_options());
  auto slow = holder.send(0, MsgType::pull, text("slow"));
  REQUIRE(entered.get_future().wait_for(10s) == std::future_status::ready);
  auto queued = t.send(0, MsgType::pull, text("queued"));
  CHECK(t.call(0, MsgType::ping, {}, soon()).status == Status::ok);
  CHECK_FALSE(slow.ready());
  CHECK_FALSE(queued.ready());  // the only handler thread is still held
  {
    std::lock_guard lock(mu);
    CHECK(ping_thread != slow_thread);
  }
  release.set_value();
  CHECK(slow.get(soon()).text() == "slow");
  CHECK(queued.get(soon()).text() == "queued");
}

TEST_CASE("large and small exchanges alternate on shared connections without a lost reply",
          "[transport][net]") {
  // A 4 MiB request outgrows the socket buffer (an async write) and arms the io thread's
  // background read; small ones leave both to the caller. The connection moves in and out
  // of Asio's reactor between them; every reply must still reach its caller intact.
  auto server = start_server(echo, {.num_threads = 2});
  AsioTransport t({server->endpoint()}, client_options());
  constexpr int threads = 3, rounds = 20;
  std::vector<std::future<int>> workers;
  for (int w = 0; w < threads; ++w)
    workers.push_back(std::async(std::launch::async, [&t, w] {
      std::vector<std::int64_t> big(std::size_t{1} << 19);
      int good = 0;
      for (int i = 0; i < rounds; ++i) {
        std::iota(big.begin(), big.end(), std::int64_t{w} * 1000 + i);
        Message m = text("big");
        m.parts.push_back(as_bytes_part(std::span<const std::int64_t>(big)));
        auto large = t.send(0, MsgType::push, std::move(m));
        const std::string tag = "small " + std::to_string(w) + "/" + std::to_string(i);
        const bool small_ok = t.call(0, MsgType::pull, text(tag), soon()).text() == tag;
        const Reply r = large.get(soon());
        const bool large_ok = r.body.parts.size() == 1 &&
                              r.body.parts[0].size() == big.size() * 8 &&
                              std::memcmp(r.body.parts[0].data(), big.data(), big.size() * 8) == 0;
        good += small_ok && large_ok ? 1 : 0;
      }
      return good;
    }));
  int good = 0;
  for (auto& w : workers) {
    REQUIRE(w.wait_for(60s) == std::future_status::ready);
    good += w.get();
  }
  CHECK(good == threads * rounds);
}

TEST_CASE("a 64 MiB message in four parts survives the round trip", "[transport][net][slow]") {
  auto server = start_server(echo);
  AsioTransport t({server->endpoint()}, client_options());
  constexpr std::size_t words = (16u << 20) / 8;
  std::vector<std::vector<std::uint64_t>> parts(4, std::vector<std::uint64_t>(words));
  Message m = text("big");
  for (std::size_t p = 0; p < 4; ++p) {
    std::iota(parts[p].begin(), parts[p].end(), p * words);
    m.parts.push_back(as_bytes_part(std::span<const std::uint64_t>(parts[p])));
  }
  const Reply r = expect_ok(t.call(0, MsgType::push, std::move(m), deadline_in(60s)), "big echo");
  REQUIRE(r.body.parts.size() == 4);
  bool same = true;
  for (std::size_t p = 0; p < 4; ++p) {
    REQUIRE(r.body.parts[p].size() == words * 8);
    same = same && std::memcmp(r.body.parts[p].data(), parts[p].data(), words * 8) == 0;
  }
  CHECK(same);
}

TEST_CASE("an oversized frame gets frame_too_large and a close while others keep being served",
          "[transport][net]") {
  LogSink log;
  auto server = start_server(echo, {.max_frame_bytes = 1 << 20, .log = log.fn()});
  AsioTransport good({server->endpoint()}, client_options());
  CHECK(good.call(0, MsgType::ping, {}, soon()).status == Status::ok);

  RawClient raw(server->port());
  // After the hello: before it, any frame above max_hello_bytes is refused (bad_input tests).
  REQUIRE(raw.handshake().header.status == Status::ok);
  std::array<std::byte, frame_header_bytes> h;
  encode_header({.type = MsgType::push, .request_id = 77, .payload_bytes = std::uint64_t{1} << 40},
                h);
  raw.send_bytes(h);
  const auto reply = raw.read_frame();
  REQUIRE(reply);
  CHECK(reply->header.status == Status::frame_too_large);
  CHECK(reply->header.request_id == 77);
  CHECK_THAT(reply->head_text(), Catch::Contains("limit is 1048576"));
  CHECK_FALSE(raw.read_frame());  // closed
  CHECK(log.wait_for("closing the connection"));

  CHECK(good.call(0, MsgType::ping, {}, soon()).status == Status::ok);
  CHECK(good.call(0, MsgType::pull, text("still here"), soon()).text() == "still here");
}

TEST_CASE("bad magic gets bad_request and a close while lying lengths get bad_request only",
          "[transport][net]") {
  LogSink log;
  auto server = start_server(echo, {.log = log.fn()});
  SECTION("bad magic") {
    RawClient raw(server->port());
    raw.read_frame();
    raw.send_bytes(bytes_of("GET / HTTP/1.1\r\nHost: x\r\n\r\n......"));
    const auto reply = raw.read_frame();
    REQUIRE(reply);
    CHECK(reply->header.status == Status::bad_request);
    CHECK(reply->header.request_id == 0);
    CHECK_FALSE(raw.read_frame());
  }
  SECTION("a part length that overruns the payload") {
    RawClient raw(server->port());
    REQUIRE(raw.handshake().header.status == Status::ok);
    // head_len 0, one part of 100 bytes, but only 8 bytes follow.
    std::vector<std::byte> payload(24, std::byte{0});
    payload[4] = std::byte{1};
    payload[8] = std::byte{100};
    std::array<std::byte, frame_header_bytes> h;
    encode_header({.type = MsgType::pull, .request_id = 12, .payload_bytes = payload.size()}, h);
    raw.send_bytes(h);
    raw.send_bytes(payload);
    const auto reply = raw.read_frame();
    REQUIRE(reply);
    CHECK(reply->header.status == Status::bad_request);
    CHECK(reply->header.request_id == 12);
    CHECK_THAT(reply->head_text(), Catch::Contains("overruns"));
    // The stream is still in sync: a valid request on the same connection is answered.
    raw.send_frame({.type = MsgType::pull, .request_id = 13}, text("ok?"));
    const auto next = raw.read_frame();
    REQUIRE(next);
    CHECK(next->header.request_id == 13);
    CHECK(next->head_text() == "ok?");
  }
  SECTION("a request before the hello is refused") {
    RawClient raw(server->port());
    raw.read_frame();
    raw.send_frame({.type = MsgType::pull, .request_id = 3}, text("sneaky"));
    const auto reply = raw.read_frame();
    REQUIRE(reply);
    CHECK(reply->header.status == Status::bad_request);
    CHECK_FALSE(raw.read_frame());
    CHECK(log.wait_for("expected a hello frame first"));
  }
}

TEST_CASE("a client that disconnects or goes silent mid-frame is dropped", "[transport][net]") {
  LogSink log;
  auto server = start_server(echo, {.read_timeout = 200ms, .log = log.fn()});
  AsioTransport good({server->endpoint()}, client_options());
  std::array<std::byte, frame_header_bytes> h;
  encode_header({.type = MsgType::push, .request_id = 1, .payload_bytes = 1000}, h);
  const std::vector<std::byte> some(100, std::byte{0});
  SECTION("disconnect") {
    {
      RawClient raw(server->port());
      raw.handshake();
      raw.send_bytes(h);
      raw.send_bytes(some);
    }
    CHECK(log.wait_for("connection closed in the middle of a frame"));
  }
  SECTION("silence") {
    RawClient raw(server->port());
    raw.handshake();
    raw.send_bytes(h);
    raw.send_bytes(some);
    const auto start = std::chrono::steady_clock::now();
    CHECK_FALSE(raw.read_frame());  // the server closes after read_timeout
    CHECK(std::chrono::steady_clock::now() - start < 4s);
    CHECK(log.wait_for("frame incomplete 200 ms after its first byte"));
  }
  CHECK(good.call(0, MsgType::pull, text("fine"), soon()).text() == "fine");
}

TEST_CASE("unknown types reach the handler and a throwing handler gets internal_error",
          "[transport][net]") {
  auto server = start_server([](const Request& r) {
    if (r.type == MsgType::ping) throw std::runtime_error("handler bug");
    if (r.type != MsgType::pull)
      return Reply::error(Status::unknown_message, msg_type_name(r.type));
    return echo(r);
  });
  AsioTransport t({server->endpoint()}, client_options());
  const Reply u = t.call(0, static_cast<MsgType>(777), {}, soon());
  CHECK(u.status == Status::unknown_message);
  CHECK(u.text() == "unknown(777)");
  const Reply e = t.call(0, MsgType::ping, {}, soon());
  CHECK(e.status == Status::internal_error);
  CHECK_THAT(e.text(), Catch::Contains("handler bug"));
  CHECK_THROWS_AS(expect_ok(e, "ping"), RemoteError);
  CHECK(t.call(0, MsgType::pull, text("alive"), soon()).text() == "alive");
}

TEST_CASE("a server that never replies gives TimeoutError at the deadline", "[transport][net]") {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto server = start_server(
      [released](const Request& r) {
        if (r.type == MsgType::barrier) released.wait_for(10s);
        return echo(r);
      },
      {.num_threads = 2});
  AsioTransport t({server->endpoint()}, client_options());
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(t.call(0, MsgType::barrier, text("late"), deadline_in(300ms)), TimeoutError);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed >= 300ms);
  CHECK(elapsed < 2s);
  release.set_value();
  // The late reply is discarded; the connection keeps working.
  CHECK(t.call(0, MsgType::pull, text("next"), soon()).text() == "next");
}

TEST_CASE("stopping the server fails pending calls with PeerLost quickly", "[transport][net]") {
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  auto server = start_server(
      [&entered, released](const Request& r) {
        if (r.type == MsgType::barrier) {
          entered.set_value();
          released.wait_for(10s);
        }
        return echo(r);
      },
      {.num_threads = 2});
  AsioTransport t({server->endpoint()}, client_options());
  auto pending = t.send(0, MsgType::barrier, {});
  REQUIRE(entered.get_future().wait_for(10s) == std::future_status::ready);
  auto stopper = std::async(std::launch::async, [&] { server->stop(); });
  const auto start = std::chrono::steady_clock::now();
  try {
    pending.get(soon());
    FAIL("no PeerLost");
  } catch (const PeerLost& e) {
    CHECK_THAT(e.what(), Catch::Contains("server 0 (127.0.0.1:"));
  }
  CHECK(std::chrono::steady_clock::now() - start < 3s);
  release.set_value();
  REQUIRE(stopper.wait_for(10s) == std::future_status::ready);
  // Later sends fail fast.
  CHECK_THROWS_AS(t.call(0, MsgType::ping, {}, soon()), PeerLost);
  CHECK_FALSE(t.connected(0));
}

TEST_CASE("oversized frames are refused on the client side too", "[transport][net]") {
  static const std::vector<std::byte> big(8192);
  auto server = start_server([](const Request& r) {
    if (r.type != MsgType::push) return echo(r);
    Reply rep;
    rep.body.parts = {big};
    return rep;
  });
  auto opt = client_options();
  opt.max_frame_bytes = 4096;
  AsioTransport t({server->endpoint()}, opt);
  Message m;
  m.parts = {big};
  CHECK_THROWS_AS(t.call(0, MsgType::pull, std::move(m), soon()), FrameTooLarge);
  CHECK(t.connected(0));  // nothing was sent
  CHECK(t.call(0, MsgType::pull, text("small"), soon()).text() == "small");
  // A reply above the client's limit cannot be skipped: the call fails, the connection closes.
  CHECK_THROWS_AS(t.call(0, MsgType::push, {}, soon()), FrameTooLarge);
  CHECK_THROWS_AS(t.call(0, MsgType::pull, text("after"), soon()), PeerLost);
}

TEST_CASE("the shared secret admits the right clients and refuses the others", "[transport][net]") {
  // Over TLS (the default with a secret: a PSK derived from it) and in clear (--no-tls),
  // where the hello's HMAC proof does the work.
  const bool tls = GENERATE(true, false);
  INFO("tls " << tls);
  LogSink log;
  auto server =
      start_server(echo, {.secret = "open sesame", .tls = {.enabled = tls}, .log = log.fn()});
  auto opt = client_options();
  opt.tls.enabled = tls;
  SECTION("right secret") {
    opt.secret = "open sesame";
    AsioTransport t({server->endpoint()}, opt);
    CHECK(t.call(0, MsgType::pull, text("in"), soon()).text() == "in");
  }
  SECTION("no secret") {
    CHECK_THROWS_AS(AsioTransport({server->endpoint()}, opt), AuthError);
    CHECK(log.wait_for(tls ? "plaintext client: this server requires TLS (psk)"
                           : "no shared-secret proof"));
  }
  SECTION("wrong secret") {
    opt.secret = "open sesame!";
    CHECK_THROWS_AS(AsioTransport({server->endpoint()}, opt), AuthError);
    CHECK(log.wait_for(tls ? "refused: TLS handshake failed" : "wrong shared-secret proof"));
  }
  SECTION("a client with a secret refuses a server that cannot prove it") {
    auto open = start_server(echo);
    opt.secret = "open sesame";
    CHECK_THROWS_AS(AsioTransport({open->endpoint()}, opt), AuthError);
  }
}

TEST_CASE("the transport listens and connects over IPv6 loopback", "[transport][net]") {
  AsioServer server(echo, {.address = "::1"});
  try {
    server.start();
  } catch (const IoError& e) {
    WARN("SKIPPED: cannot listen on ::1: " << e.what());
    return;
  }
  AsioTransport t({server.endpoint()}, client_options());
  CHECK(t.endpoint(0).to_string() == "[::1]:" + std::to_string(server.port()));
  CHECK(t.call(0, MsgType::pull, text("v6"), soon()).text() == "v6");
}

TEST_CASE("a client started before its server connects once the server listens",
          "[transport][net]") {
  test::PortBlock reserved;
  const std::uint16_t port = reserved.base();
  auto client = std::async(std::launch::async, [port] {
    return AsioTransport({{"127.0.0.1", port}}, client_options());
  });
  // Nothing listens yet, so the client is still retrying.
  REQUIRE(client.wait_for(100ms) == std::future_status::timeout);
  reserved.release();
  auto server = start_server(echo, {.port = port});
  REQUIRE(client.wait_for(10s) == std::future_status::ready);
  AsioTransport t = client.get();
  CHECK(t.call(0, MsgType::pull, text("late start"), soon()).text() == "late start");
}

TEST_CASE("a server that is up completes the handshake while another is still starting",
          "[transport][net]") {
  // Servers load their partitions at different speeds: the client must answer the hello of
  // the one that listens first at once, not after connecting to the slow one (which, past
  // the fast one's handshake timeout, got the client refused).
  test::PortBlock late;
  const std::uint16_t late_port = late.base();
  LogSink log;
  AsioServerOptions fast_options;
  fast_options.handshake_timeout = 300ms;
  fast_options.log = log.fn();
  auto fast = start_server(echo, fast_options);
  const std::uint16_t fast_port = fast->port();
  auto client = std::async(std::launch::async, [late_port, fast_port] {
    return AsioTransport({{"127.0.0.1", late_port}, {"127.0.0.1", fast_port}}, client_options());
  });
  const auto authenticated = [&] {
    const auto s = fast->stats();
    return s.connections == 1 && s.unauthenticated == 0;
  };
  for (const auto until = std::chrono::steady_clock::now() + 5s;
       !authenticated() && std::chrono::steady_clock::now() < until;)
    std::this_thread::sleep_for(5ms);
  CHECK(authenticated());
  // Server 0 is not up: the client is still connecting.
  REQUIRE(client.wait_for(0ms) == std::future_status::timeout);
  late.release();
  auto slow = start_server(echo, {.port = late_port});
  REQUIRE(client.wait_for(10s) == std::future_status::ready);
  AsioTransport t = client.get();
  CHECK(t.call(1, MsgType::pull, text("fast"), soon()).text() == "fast");
  CHECK(t.call(0, MsgType::pull, text("slow"), soon()).text() == "slow");
  std::lock_guard lock(log.mu);
  for (const auto& line : log.lines) CHECK_THAT(line, !Catch::Contains("no valid hello"));
}

TEST_CASE("connecting gives up with TimeoutError after connect_timeout", "[transport][net]") {
  test::PortBlock reserved;
  auto opt = client_options();
  opt.connect_timeout = 300ms;
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(AsioTransport({{"127.0.0.1", reserved.base()}}, opt), TimeoutError);
  CHECK(std::chrono::steady_clock::now() - start < 3s);
}

TEST_CASE("request_stop from a handler answers the request, then run_until_stopped returns",
          "[transport][net]") {
  AsioServer* self = nullptr;
  AsioServer server(
      [&self](const Request& r) {
        if (r.type == MsgType::shutdown) self->request_stop();
        return echo(r);
      },
      {});
  self = &server;
  server.start();
  auto runner = std::async(std::launch::async, [&] { server.run_until_stopped(); });
  AsioTransport t({server.endpoint()}, client_options());
  CHECK(t.call(0, MsgType::shutdown, text("bye"), soon()).text() == "bye");
  REQUIRE(runner.wait_for(10s) == std::future_status::ready);
  runner.get();
  CHECK_THROWS_AS(t.call(0, MsgType::ping, {}, soon()), PeerLost);
}

TEST_CASE("AnyTransport runs the same calls in process and over TCP", "[transport][net]") {
  auto check = [](AnyTransport& t) {
    CHECK(t.num_servers() == 1);
    CHECK(t.call(0, MsgType::pull, text("any"), soon()).text() == "any");
    CHECK(t.send(0, MsgType::pull, text("way")).get(soon()).text() == "way");
  };
  AnyTransport local(InProcessTransport({echo}));
  CHECK_FALSE(local.is_remote());
  check(local);
  auto server = start_server(echo);
  AnyTransport remote(AsioTransport({server->endpoint()}, client_options()));
  CHECK(remote.is_remote());
  check(remote);
}

/// Scheduling policy of each of this process's threads named `os_name` (their OS names).
std::multiset<int> policies_of_threads(const std::string& os_name) {
  std::multiset<int> out;
  for (const auto& t : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(t.path() / "comm");
    std::string name;
    if (!std::getline(comm, name) || name != os_name) continue;
    const int p = ::sched_getscheduler(static_cast<pid_t>(std::stol(t.path().filename())));
    if (p >= 0) out.insert(p);
  }
  return out;
}

TEST_CASE("server and client threads run under SCHED_BATCH unless told otherwise",
          "[transport][net]") {
  if (const std::string why = test::sched_batch_untestable(); !why.empty()) {
    WARN("SKIPPED: " << why);
    return;
  }
  for (const bool batch : {true, false}) {
    std::atomic<int> handler_policy{-1};
    auto server = start_server(
        [&](const Request& r) {
          handler_policy = ::sched_getscheduler(0);
          return echo(r);
        },
        {.num_threads = 2, .sched_batch = batch});
    auto co = client_options();
    co.sched_batch = batch;
    AsioTransport t({server->endpoint()}, co);
    CHECK(t.call(0, MsgType::pull, text("x"), soon()).status == Status::ok);
    const int want = batch ? SCHED_BATCH : SCHED_OTHER;
    CHECK(handler_policy.load() == want);
    // start() and the constructor return once their threads exist; one that has had no
    // work yet (the idle handler, perhaps the client's I/O thread) may not have named
    // itself and set its policy by now.
    const std::multiset<int> one{want}, two{want, want};
    const auto settled = [&] {
      return policies_of_threads("dg-handler") == two && policies_of_threads("dg-socket") == one &&
             policies_of_threads("dg-client-io") == one;
    };
    for (const auto until = std::chrono::steady_clock::now() + 10s;
         !settled() && std::chrono::steady_clock::now() < until;)
      std::this_thread::sleep_for(1ms);
    CHECK(policies_of_threads("dg-handler") == two);
    CHECK(policies_of_threads("dg-socket") == one);
    CHECK(policies_of_threads("dg-client-io") == one);
    CHECK(::sched_getscheduler(0) == SCHED_OTHER);  // the caller's thread is left alone
  }
}

}  // namespace test_transport_asio_transport
