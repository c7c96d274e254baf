// TLS 1.3 on the transport, attacked: a man in the middle who flips a byte, a recorded
// session replayed, peers in another mode, certificates from a stranger or past their date,
// and 100,000 mangled frames; every server on 127.0.0.1.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "distgraph/transport/asio_server.hpp"
#include "distgraph/transport/asio_transport.hpp"
#include "distgraph/transport/detail/tls_context.hpp"
#include "support/raw_client.hpp"
#include "support/tamper_proxy.hpp"
#include "support/temp_dir.hpp"
#include "support/test_certs.hpp"

namespace test_transport_tls {

using namespace distgraph;
using namespace std::chrono_literals;
using distgraph::test::LogSink;
using distgraph::test::RawClient;
using distgraph::test::TamperProxy;
using distgraph::test::TestCert;

namespace {

Reply echo(const Request& r) { return Reply{Status::ok, r.body}; }

AsioTransportOptions client_options(std::string secret, TlsOptions tls = {}) {
  AsioTransportOptions o;
  o.connect_timeout = 5s;
  o.call_timeout = 10s;
  o.secret = std::move(secret);
  o.tls = std::move(tls);
  return o;
}

std::unique_ptr<AsioServer> start_server(Handler handler, AsioServerOptions o) {
  auto s = std::make_unique<AsioServer>(std::move(handler), std::move(o));
  s->start();
  return s;
}

/// `n` bytes of a pattern that differs with `seed`.
std::vector<std::byte> pattern(std::size_t n, std::uint64_t seed) {
  std::vector<std::byte> b(n);
  std::mt19937_64 rng(seed);
  for (auto& x : b) x = static_cast<std::byte>(rng());
  return b;
}

std::string what_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

/// Certificates for one test: a job CA, a stranger's CA, and leaves signed by each.
struct Pki {
  test::TempDir dir;
  TestCert ca = TestCert::authority(dir.path(), "ca");
  TestCert other_ca = TestCert::authority(dir.path(), "other-ca");
  TestCert server = TestCert::signed_by(ca, dir.path(), "server");
  TestCert client = TestCert::signed_by(ca, dir.path(), "client");
  TestCert stranger = TestCert::signed_by(other_ca, dir.path(), "stranger");
  TestCert expired = TestCert::signed_by(ca, dir.path(), "expired", -2 * 86400, -86400);
};

}  // namespace

TEST_CASE("TLS carries large and pipelined frames intact", "[transport][tls][net]") {
  auto server = start_server(echo, {.secret = "k", .log = [](std::string_view) {}});
  AsioTransport t({server->endpoint()}, client_options("k"));
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w)
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(w));
      for (int i = 0; i < 40; ++i) {
        // From a few bytes to 3 MiB: one record, many records, a partial write.
        const std::size_t n = i % 8 == 7 ? (3u << 20) + rng() % 1000 : rng() % 70000;
        const auto data = pattern(n, rng());
        Message m;
        m.parts = {data};
        const Reply r = t.call(0, MsgType::pull, std::move(m), deadline_in(20s));
        if (r.status != Status::ok || r.body.parts.size() != 1 ||
            !std::equal(data.begin(), data.end(), r.body.parts[0].begin(), r.body.parts[0].end()))
          ++bad;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(bad == 0);
}

TEST_CASE("an OpenSSL error left on the caller's thread does not fail its calls",
          "[transport][tls][net]") {
  // The caller reads its own reply through SSL: an entry someone else (the user's own use
  // of OpenSSL, another connection's failure) left in this thread's error queue must not
  // be taken for this connection's.
  auto server = start_server(echo, {.secret = "k", .log = [](std::string_view) {}});
  AsioTransport t({server->endpoint()}, client_options("k"));
  for (int i = 0; i < 20; ++i) {
    ERR_raise(ERR_LIB_SSL, ERR_R_INTERNAL_ERROR);
    CHECK(t.call(0, MsgType::pull, {}, deadline_in(10s)).status == Status::ok);
  }
  ERR_clear_error();
  CHECK(t.connected(0));
}

TEST_CASE("a flipped byte drops the connection and no altered frame is ever accepted",
          "[transport][tls][net]") {
  const auto dir = GENERATE(TamperProxy::Direction::to_client, TamperProxy::Direction::to_server);
  // In the first record, or behind two good records that are delivered first.
  const std::uint64_t at = GENERATE(5000, 40000);
  INFO((dir == TamperProxy::Direction::to_client ? "server to client" : "client to server")
       << ", byte " << at);
  const auto data = pattern(64 * 1024, 7);
  std::atomic<int> altered_requests{0}, requests{0};
  auto handler = [&](const Request& r) {
    ++requests;
    if (r.body.parts.size() != 1 ||
        !std::equal(data.begin(), data.end(), r.body.parts[0].begin(), r.body.parts[0].end()))
      ++altered_requests;
    return Reply{Status::ok, r.body};
  };
  LogSink log;
  auto server = start_server(handler, {.secret = "k", .log = log.fn()});
  TamperProxy proxy(server->port());
  AsioTransport t({proxy.endpoint()}, client_options("k"));
  // Past the handshake: the flip lands inside the first request or its reply.
  proxy.flip(dir, at);
  int ok = 0, failed = 0, altered_replies = 0;
  for (int i = 0; i < 20; ++i) {
    Message m;
    m.parts = {data};
    try {
      const Reply r = t.call(0, MsgType::pull, std::move(m), deadline_in(10s));
      ++ok;
      if (r.body.parts.size() != 1 ||
          !std::equal(data.begin(), data.end(), r.body.parts[0].begin(), r.body.parts[0].end()))
        ++altered_replies;
    } catch (const PeerLost&) {
      ++failed;
    }
  }
  CHECK(proxy.flipped(dir));
  CHECK(ok == 0);  // the first frame carried the flip; the connection is gone after it
  CHECK(failed == 20);
  CHECK(altered_replies == 0);
  CHECK(altered_requests == 0);
  CHECK_FALSE(t.connected(0));
  if (dir == TamperProxy::Direction::to_server) CHECK(log.wait_for("TLS record rejected"));
  // The server serves the next client.
  AsioTransport again({server->endpoint()}, client_options("k"));
  Message m;
  m.parts = {data};
  CHECK(again.call(0, MsgType::pull, std::move(m), deadline_in(10s)).status == Status::ok);
}

TEST_CASE("a recorded session replayed to the server is refused", "[transport][tls][net]") {
  const bool tls = GENERATE(true, false);
  INFO("tls " << tls);
  std::atomic<int> pushes{0};
  auto handler = [&](const Request& r) {
    if (r.type == MsgType::push) ++pushes;
    return Reply{Status::ok, {}};
  };
  LogSink log;
  auto server = start_server(handler, {.secret = "k", .tls = {.enabled = tls}, .log = log.fn()});
  std::vector<std::byte> session;
  {
    TamperProxy proxy(server->port());
    {
      AsioTransport t({proxy.endpoint()}, client_options("k", {.enabled = tls}));
      for (int i = 0; i < 3; ++i) t.call(0, MsgType::push, {}, deadline_in(10s));
    }
    while (!proxy.finished()) std::this_thread::sleep_for(5ms);  // bounded by its lifetime
    session = proxy.recorded();
  }
  REQUIRE(pushes == 3);
  REQUIRE(session.size() > 100);
  RawClient replay(server->port(), 5s);
  replay.send_bytes(session);
  // The server answers with its own hello and whatever refusal; then it closes.
  int frames = 0;
  try {
    while (replay.read_frame()) ++frames;
  } catch (const std::exception&) {
    // TLS bytes read as a frame header: the server spoke TLS, which the replay cannot.
  }
  CHECK(pushes == 3);
  if (tls) {
    CHECK(log.wait_for("refused: TLS handshake failed"));
    CHECK(server->stats().refused_tls_handshakes == 1);
  } else {
    CHECK(log.wait_for("wrong shared-secret proof"));
  }
}

TEST_CASE("peers in different TLS modes each get one clear error", "[transport][tls][net]") {
  Pki pki;
  LogSink log;
  SECTION("a plaintext client to a TLS server") {
    auto server = start_server(echo, {.secret = "k", .log = log.fn()});
    const auto e = what_of(
        [&] { AsioTransport({server->endpoint()}, client_options("k", {.enabled = false})); });
    CHECK_THAT(e, Catch::Contains("server requires TLS (psk)") &&
                      Catch::Contains("this client runs with TLS off"));
    CHECK(log.wait_for("plaintext client: this server requires TLS (psk)"));
  }
  SECTION("a TLS client to a plaintext server") {
    auto server = start_server(echo, {.secret = "k", .tls = {.enabled = false}, .log = log.fn()});
    CHECK_THROWS_AS(AsioTransport({server->endpoint()}, client_options("k")), AuthError);
    const auto e = what_of([&] { AsioTransport({server->endpoint()}, client_options("k")); });
    CHECK_THAT(e, Catch::Contains("server runs without TLS") &&
                      Catch::Contains("will not send frames in clear"));
    CHECK(log.wait_for("client requires TLS (psk); this server runs without TLS"));
  }
  SECTION("a hello in clear that claims TLS") {
    auto server = start_server(echo, {.secret = "k", .log = log.fn()});
    RawClient raw(server->port());
    const auto hello = raw.read_frame();
    REQUIRE(hello);
    raw.send_frame({.type = MsgType::hello},
                   Message::owning(RawClient::client_hello(*hello, "k", TlsMode::psk)));
    const auto reply = raw.read_frame();
    REQUIRE(reply);
    CHECK(reply->header.status == Status::unauthorized);
    CHECK(log.wait_for("client claims TLS (psk) but sent its hello in clear"));
  }
  SECTION("a certificate client to a PSK server") {
    auto server = start_server(echo, {.secret = "k", .log = log.fn()});
    const auto e = what_of([&] {
      AsioTransport({server->endpoint()}, client_options("k", pki.client.options(pki.ca)));
    });
    CHECK_THAT(e, Catch::Contains("server uses TLS with psk; this client uses TLS with "
                                  "certificates"));
    CHECK(log.wait_for("client requires TLS (certificates); this server runs TLS with psk"));
  }
}

TEST_CASE("a PSK client refuses a peer that fakes the PSK mode and shows a certificate",
          "[transport][tls][net]") {
  // A man in the middle: a server hello in clear that says "PSK", then a TLS handshake
  // with a certificate of its own in place of the PSK, hoping for the client's hello.
  Pki pki;
  const detail::TlsContext rogue_tls(TlsMode::certificates, true, pki.stranger.options(pki.ca), "");
  const int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  REQUIRE(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(lfd, 1) == 0);
  REQUIRE(::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  std::atomic<long> hello_bytes{-1};  // what the rogue read after its handshake
  std::thread rogue([&] {
    const int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    const auto hello = flatten(encode_frame(
        {.type = MsgType::hello},
        Message::owning(detail::encode_server_hello(true, TlsMode::psk, detail::random_nonce()))));
    ::send(fd, hello.data(), hello.size(), MSG_NOSIGNAL);
    const auto ssl = rogue_tls.make_ssl(fd);
    SSL_set_verify(ssl.get(), SSL_VERIFY_NONE, nullptr);  // asks the client for nothing
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    auto wait = [&](int r) {
      const int err = SSL_get_error(ssl.get(), r);
      if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) return false;
      pollfd p{fd, static_cast<short>(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), 0};
      return std::chrono::steady_clock::now() < deadline && ::poll(&p, 1, 100) >= 0;
    };
    int r = 0;
    while ((r = SSL_accept(ssl.get())) != 1 && wait(r)) {
    }
    long got = 0;
    std::array<char, 256> buf;
    while (std::chrono::steady_clock::now() < deadline) {
      r = SSL_read(ssl.get(), buf.data(), static_cast<int>(buf.size()));
      if (r > 0) {
        got += r;
        continue;
      }
      if (!wait(r)) break;
    }
    ERR_clear_error();
    hello_bytes = got;
    ::close(fd);
  });
  const std::string e = what_of([&] {
    AsioTransport({{"127.0.0.1", ntohs(a.sin_port)}}, client_options("k"));
  });
  rogue.join();
  ::close(lfd);
  CHECK_THAT(e, Catch::Contains("TLS handshake failed") &&
                    Catch::Contains("did not use the shared secret's key"));
  CHECK(hello_bytes == 0);  // the client never sent its hello (nonce and proof) to it
}

TEST_CASE("TLS options name all three certificate files or none", "[transport][tls]") {
  Pki pki;
  auto partial = pki.server.options(pki.ca);
  partial.cert_file.clear();  // a key and a CA alone would silently mean PSK, or nothing
  CHECK_THAT(what_of([&] { AsioServer s(echo, {.secret = "k", .tls = partial}); }),
             Catch::Contains("all three") && Catch::Contains("2 given"));
  CHECK_THROWS_AS(AsioTransport({{"127.0.0.1", 1}}, client_options("", partial)), InvalidArgument);
}

TEST_CASE("certificates: peers signed by the job's CA talk, a stranger or an expired one does not",
          "[transport][tls][net]") {
  Pki pki;
  LogSink log;
  auto server = start_server(echo, {.tls = pki.server.options(pki.ca), .log = log.fn()});
  SECTION("both signed by the CA, with and without a secret on top") {
    AsioTransport t({server->endpoint()}, client_options("", pki.client.options(pki.ca)));
    CHECK(t.call(0, MsgType::pull, {}, deadline_in(10s)).status == Status::ok);
    auto both = start_server(echo, {.secret = "k", .tls = pki.server.options(pki.ca)});
    AsioTransport u({both->endpoint()}, client_options("k", pki.client.options(pki.ca)));
    CHECK(u.call(0, MsgType::pull, {}, deadline_in(10s)).status == Status::ok);
    CHECK_THROWS_AS(
        AsioTransport({both->endpoint()}, client_options("wrong", pki.client.options(pki.ca))),
        AuthError);
  }
  SECTION("a client certificate from another CA") {
    CHECK_THROWS_AS(
        AsioTransport({server->endpoint()}, client_options("", pki.stranger.options(pki.other_ca))),
        AuthError);
    CHECK(log.wait_for("refused: TLS handshake failed"));
    CHECK(server->stats().refused_tls_handshakes == 1);
  }
  SECTION("an expired client certificate") {
    CHECK_THROWS_AS(
        AsioTransport({server->endpoint()}, client_options("", pki.expired.options(pki.ca))),
        AuthError);
    CHECK(log.wait_for("certificate has expired"));
    const auto e = what_of([&] {
      AsioTransport({server->endpoint()}, client_options("", pki.expired.options(pki.ca)));
    });
    CHECK_THAT(e, Catch::Contains("TLS handshake failed") && Catch::Contains("expired"));
  }
  SECTION("a server certificate from another CA, or expired") {
    auto stranger = start_server(echo, {.tls = pki.stranger.options(pki.ca)});
    const auto e = what_of([&] {
      AsioTransport({stranger->endpoint()}, client_options("", pki.client.options(pki.ca)));
    });
    CHECK_THAT(
        e, Catch::Contains("TLS handshake failed") && Catch::Contains("certificate verify failed"));
    auto expired = start_server(echo, {.tls = pki.expired.options(pki.ca)});
    const auto x = what_of([&] {
      AsioTransport({expired->endpoint()}, client_options("", pki.client.options(pki.ca)));
    });
    CHECK_THAT(x, Catch::Contains("certificate has expired"));
  }
  SECTION("unusable files are named at start") {
    auto no_key = pki.server.options(pki.ca);
    no_key.key_file = pki.dir.path() / "missing.key";
    CHECK_THAT(what_of([&] { AsioServer s(echo, {.tls = no_key}); }),
               Catch::Contains("missing.key") && Catch::Contains("private key (PEM)"));
    auto wrong_key = pki.server.options(pki.ca);
    wrong_key.key_file = pki.client.key_file();
    CHECK_THAT(what_of([&] { AsioServer s(echo, {.tls = wrong_key}); }),
               Catch::Contains("client.key") && Catch::Contains("of the certificate") &&
                   Catch::Contains("server.crt"));
    auto no_ca = pki.server.options(pki.ca);
    no_ca.ca_file.clear();
    CHECK_THROWS_AS(AsioServer(echo, AsioServerOptions{.tls = no_ca}), InvalidArgument);
  }
}

// 100,000 frames with mangled payloads, and now and then a mangled header, through one
// connection at a time: every frame of a batch whose headers are intact is answered with
// its ID (ok or bad_request), a mangled header costs that connection only, and the server
// serves a correct client at the end.
TEST_CASE("a hundred thousand mangled frames against a TLS server and a plaintext one",
          "[transport][tls][net][bad_input]") {
  const bool tls = GENERATE(true, false);
  INFO("tls " << tls);
  auto server = start_server(
      echo, {.secret = "fuzz", .tls = {.enabled = tls}, .log = [](std::string_view) {}});
  const detail::TlsContext client_tls(TlsMode::psk, false, {}, "fuzz");
  std::mt19937_64 rng(tls ? 34 : 43);
  static const std::vector<std::byte> data(4096, std::byte{0x5a});
  constexpr int total = 100000, batch = 32;
  int sent = 0, answered = 0, unread = 0, connections = 0, header_mangled = 0;
  std::unique_ptr<RawClient> raw;
  while (sent < total) {
    if (!raw) {
      raw = std::make_unique<RawClient>(server->port(), 10s);
      ++connections;
      REQUIRE(raw->handshake("fuzz", tls ? &client_tls : nullptr).header.status == Status::ok);
    }
    std::vector<std::byte> bytes;
    std::vector<std::uint64_t> ids;
    bool mangled_header = false;
    for (int i = 0; i < batch && sent < total; ++i, ++sent) {
      Message m;
      m.head = std::span(data).first(rng() % 40);
      for (std::size_t p = rng() % 6; p > 0; --p)
        m.parts.push_back(std::span(data).first(rng() % 300));
      const std::uint64_t id = static_cast<std::uint64_t>(sent) + 1;
      auto frame = flatten(encode_frame({.type = MsgType::pull, .request_id = id}, std::move(m)));
      const std::size_t payload = frame.size() - frame_header_bytes;
      if (payload > 0 && rng() % 2)
        for (int f = 1 + static_cast<int>(rng() % 4); f > 0; --f)
          frame[frame_header_bytes + rng() % payload] = static_cast<std::byte>(rng());
      // The last frame of one batch in 300 gets a mangled header.
      if (i == batch - 1 && rng() % 300 == 0) {
        frame[rng() % frame_header_bytes] ^= static_cast<std::byte>(1 + rng() % 255);
        mangled_header = true;
      } else {
        ids.push_back(id);
      }
      bytes.insert(bytes.end(), frame.begin(), frame.end());
    }
    raw->send_bytes(bytes);
    if (mangled_header) {
      // What the server makes of it is its business (it may close at once, dropping the
      // replies in flight, or wait for a longer frame): the next batch reconnects.
      ++header_mangled;
      unread += static_cast<int>(ids.size()) + 1;
      raw.reset();
      continue;
    }
    std::vector<std::uint64_t> got;
    while (got.size() < ids.size()) {
      const auto r = raw->read_frame();
      if (!r) break;
      REQUIRE(r->header.is_reply());
      REQUIRE((r->header.status == Status::ok || r->header.status == Status::bad_request));
      got.push_back(r->header.request_id);
    }
    std::sort(got.begin(), got.end());
    answered += static_cast<int>(got.size());
    CHECK(got == ids);
  }
  CHECK(answered + unread == total);
  CHECK(answered > total * 9 / 10);
  CHECK(header_mangled > 0);
  CHECK(connections == header_mangled + (raw ? 1 : 0));  // one more unless the last was cut
  raw.reset();
  AsioTransport t({server->endpoint()}, client_options("fuzz", {.enabled = tls}));
  CHECK(t.call(0, MsgType::pull, {}, deadline_in(10s)).status == Status::ok);
}

}  // namespace test_transport_tls
