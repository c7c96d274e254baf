// A real AsioServer on 127.0.0.1 fed malformed hellos and trickled frames by a raw client.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "distgraph/transport/asio_server.hpp"
#include "support/raw_client.hpp"

namespace test_bad_input_server_handshake {

using namespace distgraph;
using namespace std::chrono_literals;
using distgraph::test::LogSink;
using distgraph::test::RawClient;

namespace {

Reply echo(const Request& r) { return Reply{Status::ok, r.body}; }

std::unique_ptr<AsioServer> start_server(AsioServerOptions o) {
  auto s = std::make_unique<AsioServer>(echo, std::move(o));
  s->start();
  return s;
}

/// Whether `text` names the peer: its address or the server's connection counter.
bool names_the_peer(const std::string& text) {
  return text.find("127.0.0.1") != std::string::npos ||
         text.find("connection") != std::string::npos;
}

}  // namespace

TEST_CASE("a hello with a valid proof and an extra part is refused", "[bad_input][net]") {
  LogSink log;
  auto server = start_server({.secret = "s3cret", .tls = {.enabled = false}, .log = log.fn()});
  RawClient raw(server->port());
  auto hello = raw.read_frame();
  REQUIRE(hello);
  Message m = Message::owning(RawClient::client_hello(*hello, "s3cret"));
  static const std::vector<std::byte> extra(8, std::byte{0});
  m.parts = {extra};
  raw.send_frame({.type = MsgType::hello}, std::move(m));
  const auto reply = raw.read_frame();
  REQUIRE(reply);
  CHECK(reply->header.type == MsgType::hello);
  CHECK(reply->header.status == Status::bad_request);
  CHECK_FALSE(raw.read_frame());  // closed
  CHECK(log.wait_for("hello with 1 parts; expected none"));
  // The same proof without the part is accepted.
  RawClient good(server->port());
  CHECK(good.handshake("s3cret").header.status == Status::ok);
}

TEST_CASE("a refused peer learns neither its address nor the connection counter",
          "[bad_input][net]") {
  LogSink log;
  auto server = start_server({.secret = "s3cret", .tls = {.enabled = false}, .log = log.fn()});
  SECTION("wrong proof") {
    RawClient raw(server->port());
    const auto reply = raw.handshake("guess");
    CHECK(reply.header.status == Status::unauthorized);
    CHECK(reply.head_text() == "handshake refused");
    CHECK_FALSE(raw.read_frame());
    // The detail stays in the server's log.
    CHECK(log.wait_for("wrong shared-secret proof"));
    CHECK(log.wait_for("127.0.0.1"));
  }
  SECTION("no proof") {
    RawClient raw(server->port());
    const auto reply = raw.handshake();
    CHECK(reply.header.status == Status::unauthorized);
    CHECK(reply.head_text() == "handshake refused");
    CHECK(log.wait_for("no shared-secret proof"));
  }
  SECTION("another frame first") {
    RawClient raw(server->port());
    REQUIRE(raw.read_frame());
    raw.send_frame({.type = MsgType::ping, .request_id = 5}, {});
    const auto reply = raw.read_frame();
    REQUIRE(reply);
    CHECK(reply->header.status == Status::bad_request);
    CHECK(reply->head_text() == "handshake refused");
    CHECK(log.wait_for("expected a hello frame first, got ping"));
  }
  SECTION("a bad header before the hello") {
    RawClient raw(server->port());
    REQUIRE(raw.read_frame());
    const std::string http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n......";
    raw.send_bytes(std::as_bytes(std::span(http)));
    const auto reply = raw.read_frame();
    REQUIRE(reply);
    CHECK(reply->header.status == Status::bad_request);
    CHECK_THAT(reply->head_text(), Catch::Contains("bad frame magic"));
    CHECK_FALSE(names_the_peer(reply->head_text()));
    CHECK(log.wait_for("127.0.0.1"));
  }
}

TEST_CASE("a frame must arrive whole within read_timeout of its first byte", "[bad_input][net]") {
  LogSink log;
  auto server = start_server({.read_timeout = 300ms, .log = log.fn()});
  RawClient raw(server->port());
  REQUIRE(raw.handshake().header.status == Status::ok);
  std::array<std::byte, frame_header_bytes> h;
  encode_header({.type = MsgType::ping, .request_id = 1, .payload_bytes = 8}, h);
  // One header byte every 100 ms: each byte comes well within read_timeout of the last,
  // but the frame as a whole does not.
  const auto start = std::chrono::steady_clock::now();
  bool closed = false;
  for (std::size_t i = 0; i + 1 < h.size() && !closed; ++i) {
    try {
      raw.send_bytes(std::span(h).subspan(i, 1));
    } catch (const std::runtime_error&) {
      closed = true;  // the server closed the connection
    }
    closed = closed || log.wait_for("after its first byte", 100ms);
  }
  CHECK(closed);
  CHECK(std::chrono::steady_clock::now() - start < 2s);
  CHECK(log.wait_for("frame incomplete 300 ms after its first byte"));
  CHECK_FALSE(raw.read_frame());
}

TEST_CASE("a client that misses the hello deadline is closed without a reply", "[bad_input][net]") {
  LogSink log;
  auto server = start_server({.handshake_timeout = 300ms, .log = log.fn()});
  RawClient raw(server->port());
  REQUIRE(raw.read_frame());  // the server hello; this client never answers it
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(raw.read_frame());
  CHECK(std::chrono::steady_clock::now() - start < 3s);
  CHECK(log.wait_for("no valid hello within 300 ms"));
}

}  // namespace test_bad_input_server_handshake
