// A real AsioServer on 127.0.0.1 against peers that try to make it hold memory or burn a
// core: oversized frames before the hello, crowds of silent connections, pullers that
// never read, and running out of descriptors (issue 19).
#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "distgraph/transport/asio_server.hpp"
#include "distgraph/transport/asio_transport.hpp"
#include "support/raw_client.hpp"

namespace test_bad_input_server_limits {

using namespace distgraph;
using namespace std::chrono_literals;
using distgraph::test::LogSink;
using distgraph::test::RawClient;

namespace {

Reply echo(const Request& r) { return Reply{Status::ok, r.body}; }

std::unique_ptr<AsioServer> start_server(Handler h, AsioServerOptions o) {
  auto s = std::make_unique<AsioServer>(std::move(h), std::move(o));
  s->start();
  return s;
}

AsioTransportOptions client_options() {
  AsioTransportOptions o;
  o.connect_timeout = 5s;
  o.call_timeout = 10s;
  return o;
}

/// Polls `done` until it holds or `timeout` passes (the server's counters change on its io
/// threads; there is no event to wait on from outside).
bool eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout = 10s) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

/// How many of `log`'s lines contain `phrase`.
std::size_t count_lines(LogSink& log, const std::string& phrase) {
  std::lock_guard lock(log.mu);
  return static_cast<std::size_t>(std::count_if(log.lines.begin(), log.lines.end(), [&](auto& l) {
    return l.find(phrase) != std::string::npos;
  }));
}

/// Answers the server hello `hello` already read by `raw`; returns the hello reply.
RawClient::Frame answer_hello(RawClient& raw, const RawClient::Frame& hello) {
  raw.send_frame({.type = MsgType::hello}, Message::owning(RawClient::client_hello(hello, {})));
  auto reply = raw.read_frame();
  REQUIRE(reply);
  return *reply;
}

double cpu_seconds(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

TEST_CASE("a first frame declaring more than a hello is refused before its body arrives",
          "[bad_input][net]") {
  LogSink log;
  // Generous deadlines: a server that took the 64 MiB header would sit waiting for its body.
  auto server =
      start_server(echo, {.read_timeout = 30s, .handshake_timeout = 30s, .log = log.fn()});
  RawClient raw(server->port());
  REQUIRE(raw.read_frame());  // the server hello
  std::array<std::byte, frame_header_bytes> h;
  encode_header({.type = MsgType::hello, .request_id = 9, .payload_bytes = std::uint64_t{64} << 20},
                h);
  const auto start = std::chrono::steady_clock::now();
  raw.send_bytes(h);  // the header alone: its body never comes
  const auto reply = raw.read_frame();
  REQUIRE(reply);
  CHECK(reply->header.status == Status::frame_too_large);
  CHECK(reply->header.request_id == 9);
  CHECK_THAT(reply->head_text(), Catch::Contains("67108864 bytes before the hello") &&
                                     Catch::Contains("the limit is 256 bytes"));
  CHECK_FALSE(raw.read_frame());  // closed
  CHECK(std::chrono::steady_clock::now() - start < 3s);
  CHECK(server->stats().refused_hello_frames == 1);
  CHECK(log.wait_for("before the hello; the limit is 256 bytes"));
  // The limit is the hello's only: an honest client still gets in and sends big frames.
  AsioTransport good({server->endpoint()}, client_options());
  const std::vector<std::byte> big(1 << 20, std::byte{7});
  Message m;
  m.parts = {big};
  const Reply r = good.call(0, MsgType::pull, std::move(m), deadline_in(10s));
  REQUIRE(r.body.parts.size() == 1);
  CHECK(r.body.parts[0].size() == big.size());
}

TEST_CASE("frames pipelined behind the hello are read under the full frame limit",
          "[bad_input][net]") {
  auto server = start_server(echo, {.max_hello_bytes = 128});
  RawClient raw(server->port());
  const auto hello = raw.read_frame();
  REQUIRE(hello);
  // The hello and a 64 KiB request in one send: the request must not be judged by the
  // hello's limit, although it may arrive in the same read.
  auto bytes = flatten(
      encode_frame({.type = MsgType::hello}, Message::owning(RawClient::client_hello(*hello, {}))));
  const std::vector<std::byte> part(64 << 10, std::byte{3});
  Message m;
  m.parts = {part};
  const auto request = flatten(encode_frame({.type = MsgType::pull, .request_id = 4}, m));
  bytes.insert(bytes.end(), request.begin(), request.end());
  raw.send_bytes(bytes);
  const auto ok = raw.read_frame();
  REQUIRE(ok);
  CHECK(ok->header.status == Status::ok);
  const auto answer = raw.read_frame();
  REQUIRE(answer);
  CHECK(answer->header.request_id == 4);
  CHECK(answer->header.status == Status::ok);
  CHECK(answer->payload.size() == request.size() - frame_header_bytes);
}

TEST_CASE("connections beyond max_unauthenticated are closed at once until one completes its hello",
          "[bad_input][net]") {
  LogSink log;
  auto server = start_server(echo, {.max_unauthenticated = 2, .log = log.fn()});
  AsioTransport trusted({server->endpoint()}, client_options());
  REQUIRE(trusted.call(0, MsgType::ping, {}, deadline_in(10s)).status == Status::ok);

  // Two silent peers take both places (reading their server hello proves they were
  // accepted and counted).
  RawClient a(server->port());
  auto b = std::make_unique<RawClient>(server->port());
  const auto hello_a = a.read_frame();
  REQUIRE(hello_a);
  REQUIRE(b->read_frame());
  CHECK(server->stats().unauthenticated == 2);

  // A third is closed without a hello, at once (not after handshake_timeout).
  const auto start = std::chrono::steady_clock::now();
  {
    RawClient c(server->port());
    CHECK_FALSE(c.read_frame());
  }
  CHECK(std::chrono::steady_clock::now() - start < 3s);
  CHECK(log.wait_for("have not completed the hello (max_unauthenticated)"));
  CHECK(server->stats().refused_connections == 1);

  // Authenticated connections do not count and are served throughout.
  CHECK(trusted.call(0, MsgType::ping, {}, deadline_in(10s)).status == Status::ok);

  // Once `a` completes its hello there is room again.
  CHECK(answer_hello(a, *hello_a).header.status == Status::ok);
  CHECK(server->stats().unauthenticated == 1);
  CHECK(log.wait_for("accepting new connections again"));
  AsioTransport late({server->endpoint()}, client_options());
  CHECK(late.call(0, MsgType::ping, {}, deadline_in(10s)).status == Status::ok);

  // Full again (b and d silent); a peer that leaves frees its place too.
  RawClient d(server->port());
  REQUIRE(d.read_frame());
  {
    RawClient e(server->port());
    CHECK_FALSE(e.read_frame());
  }
  b.reset();
  CHECK(eventually([&] { return server->stats().unauthenticated == 1; }));
  RawClient f(server->port());
  const auto hello_f = f.read_frame();
  REQUIRE(hello_f);
  CHECK(hello_f->header.type == MsgType::hello);
}

TEST_CASE("a peer that sends pulls and reads nothing holds at most the reply cap",
          "[bad_input][net]") {
  constexpr std::size_t reply_bytes = 512 << 10, requests = 200;
  constexpr std::uint64_t cap = 2 << 20;
  constexpr unsigned threads = 2;
  // The "tensor": every pull is answered with a view of it; the shared_ptr counts how many
  // replies the server still holds.
  auto table = std::make_shared<std::vector<std::byte>>(reply_bytes);
  for (std::size_t i = 0; i < table->size(); ++i) (*table)[i] = static_cast<std::byte>(i * 7 + 1);
  const Handler pull_table = [&table](const Request& r) {
    if (r.type != MsgType::pull) return Reply{Status::ok, r.body};
    Message m;
    m.parts = {std::span<const std::byte>(*table)};
    m.keep_alive = table;
    return Reply{Status::ok, std::move(m)};
  };
  LogSink log;
  auto server = start_server(
      pull_table, {.num_threads = threads, .max_queued_reply_bytes = cap, .log = log.fn()});
  // What a connection can hold: the cap, plus the replies of requests that passed the gate
  // below it and were still running (at most num_threads).
  const std::uint64_t bound = cap + threads * (reply_bytes + 64);

  const auto full = [&](const AsioServerStats& st) {
    return st.paused_connections == 1 && st.peak_queued_reply_bytes >= cap;
  };
  const std::vector<std::byte> pulls = [] {
    std::vector<std::byte> all;
    for (std::uint64_t id = 1; id <= requests; ++id) {
      const auto f = flatten(encode_frame({.type = MsgType::pull, .request_id = id}, {}));
      all.insert(all.end(), f.begin(), f.end());
    }
    return all;
  }();

  SECTION("others are served meanwhile and the slow peer gets every reply intact") {
    RawClient slow(server->port(), 10s);
    REQUIRE(slow.handshake().header.status == Status::ok);
    slow.send_bytes(pulls);
    // The server stops reading this peer, and its queue reaches the cap (the kernel's
    // socket buffers take the first replies).
    REQUIRE(eventually([&] { return full(server->stats()); }));
    CHECK(server->stats().peak_queued_reply_bytes <= bound);

    AsioTransport other({server->endpoint()}, client_options());
    const Reply r = other.call(0, MsgType::pull, {}, deadline_in(10s));
    REQUIRE(r.body.parts.size() == 1);
    CHECK(std::equal(r.body.parts[0].begin(), r.body.parts[0].end(), table->begin(), table->end()));
    CHECK(server->stats().paused_connections == 1);  // still not reading the slow one

    std::set<std::uint64_t> seen;
    for (std::size_t i = 0; i < requests; ++i) {
      const auto f = slow.read_frame();
      REQUIRE(f);
      CHECK(f->header.status == Status::ok);
      seen.insert(f->header.request_id);
      const Message m = decode_message(f->payload, nullptr);
      REQUIRE(m.parts.size() == 1);
      REQUIRE(std::equal(m.parts[0].begin(), m.parts[0].end(), table->begin(), table->end()));
    }
    CHECK(seen.size() == requests);
    CHECK(*seen.begin() == 1);
    CHECK(*seen.rbegin() == requests);
    const auto st = server->stats();
    CHECK(st.peak_queued_reply_bytes <= bound);
    CHECK(st.read_pauses >= 1);
    CHECK(st.paused_connections == 0);
    // The connection reads again: a ping is answered.
    slow.send_frame({.type = MsgType::ping, .request_id = 500}, {});
    const auto pong = slow.read_frame();
    REQUIRE(pong);
    CHECK(pong->header.request_id == 500);
  }

  SECTION("a slow peer that leaves frees what the server held for it") {
    {
      RawClient slow(server->port(), 10s);
      REQUIRE(slow.handshake().header.status == Status::ok);
      slow.send_bytes(pulls);
      REQUIRE(eventually([&] { return full(server->stats()); }));
      CHECK(table.use_count() > 1);  // replies queued for it
    }
    // Closing with unread replies resets the connection: the server drops its session,
    // its queue and its waiting requests; nothing keeps a reply alive.
    CHECK(eventually([&] { return server->num_connections() == 0 && table.use_count() == 1; }));
    CHECK(server->stats().queued_reply_bytes == 0);
  }
}

namespace {

/// Lowers the soft RLIMIT_NOFILE for the test's scope and restores it after, so filling
/// the descriptor table takes a few dozen files rather than a million.
class DescriptorLimit {
 public:
  explicit DescriptorLimit(rlim_t soft) {
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved_) == 0);
    rlimit lower = saved_;
    lower.rlim_cur = std::min(soft, saved_.rlim_cur);
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &lower) == 0);
  }
  ~DescriptorLimit() { ::setrlimit(RLIMIT_NOFILE, &saved_); }
  DescriptorLimit(const DescriptorLimit&) = delete;
  DescriptorLimit& operator=(const DescriptorLimit&) = delete;

 private:
  rlimit saved_{};
};

/// Opens /dev/null until the process has no descriptor left; closes them on destruction.
class DescriptorFill {
 public:
  DescriptorFill() {
    for (;;) {
      const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        REQUIRE(errno == EMFILE);
        return;
      }
      fds_.push_back(fd);
    }
  }
  ~DescriptorFill() { release(); }
  DescriptorFill(const DescriptorFill&) = delete;
  DescriptorFill& operator=(const DescriptorFill&) = delete;
  /// Frees one descriptor (for the test's own client socket).
  void free_one() {
    REQUIRE(!fds_.empty());
    ::close(fds_.back());
    fds_.pop_back();
  }
  void release() {
    for (int fd : fds_) ::close(fd);
    fds_.clear();
  }

 private:
  std::vector<int> fds_;
};

int highest_open_descriptor() {
  int top = 2;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd"))
    top = std::max(top, std::stoi(e.path().filename().string()));
  return top;
}

}  // namespace

TEST_CASE("out of descriptors, the server backs off accepting and keeps serving",
          "[bad_input][net]") {
  LogSink log;
  auto server = start_server(echo, {.num_threads = 2, .log = log.fn()});
  AsioTransport trusted({server->endpoint()}, client_options());
  REQUIRE(trusted.call(0, MsgType::ping, {}, deadline_in(10s)).status == Status::ok);
  {
    DescriptorLimit limit(static_cast<rlim_t>(highest_open_descriptor() + 16));
    DescriptorFill fill;
    // One descriptor for our socket: the connection completes in the kernel's backlog and
    // the server's accept fails with EMFILE, again at every retry while the shortage lasts.
    fill.free_one();
    RawClient pending(server->port(), 10s);
    REQUIRE(log.wait_for("cannot accept connections"));

    // A window of at least 600 ms in which the open connection is served; a server that
    // retried at once would spin a core through it (CPU ~ wall time).
    const double cpu0 =
        cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
    const auto wall0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 6; ++i) {
      CHECK(trusted.call(0, MsgType::ping, {}, deadline_in(10s)).status == Status::ok);
      // Waits 100 ms for what must not happen: a second report of the same episode.
      CHECK_FALSE(log.wait_for("accepting connections again", 100ms));
    }
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    const double cpu =
        cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    INFO("server and client threads used " << cpu << " s of CPU in " << wall << " s");
    CHECK(cpu < 0.2 * wall);
    CHECK(count_lines(log, "cannot accept connections") == 1);  // once per episode
    CHECK(server->stats().accept_failures >= 2);

    // Descriptors free again: the pending connection is accepted at the next retry (at
    // most a second away) and gets its server hello.
    fill.release();
    const auto hello = pending.read_frame();
    REQUIRE(hello);
    CHECK(hello->header.type == MsgType::hello);
    CHECK(log.wait_for("accepting connections again"));
  }
  RawClient fresh(server->port());
  CHECK(fresh.handshake().header.status == Status::ok);
  CHECK(trusted.call(0, MsgType::ping, {}, deadline_in(10s)).status == Status::ok);
}

}  // namespace test_bad_input_server_limits
