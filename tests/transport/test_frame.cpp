// Frame and message codec, SHA-256/HMAC vectors, the hello heads, InProcessTransport.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "distgraph/transport/detail/handshake.hpp"
#include "distgraph/transport/detail/tls_context.hpp"
#include "distgraph/transport/frame.hpp"
#include "distgraph/transport/in_process_transport.hpp"

namespace test_transport_frame {

using namespace distgraph;

namespace {

std::vector<std::byte> bytes_of(std::string_view s) {
  std::vector<std::byte> b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

std::string hex(std::span<const std::byte> d) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (auto b : d) {
    const auto v = std::to_integer<unsigned>(b);
    s += digits[v >> 4];
    s += digits[v & 15];
  }
  return s;
}

// The payload of a flattened frame, copied into an 8-aligned buffer as a transport does.
struct Payload {
  std::shared_ptr<std::uint64_t[]> words;
  std::span<const std::byte> bytes;
};
Payload payload_of(const std::vector<std::byte>& frame) {
  const std::size_t n = frame.size() - frame_header_bytes;
  Payload p;
  p.words.reset(new std::uint64_t[(n + 7) / 8 + 1]);
  std::memcpy(p.words.get(), frame.data() + frame_header_bytes, n);
  p.bytes = {reinterpret_cast<const std::byte*>(p.words.get()), n};
  return p;
}

std::array<std::byte, frame_header_bytes> header_bytes(const FrameHeader& h) {
  std::array<std::byte, frame_header_bytes> a;
  encode_header(h, a);
  return a;
}

// A payload built by hand: head_len, num_parts, part lengths, then `rest` bytes of zeros.
std::vector<std::uint64_t> raw_payload(std::uint32_t head_len, std::uint32_t num_parts,
                                       std::vector<std::uint64_t> part_lens, std::size_t rest) {
  std::vector<std::uint64_t> w(1 + part_lens.size() + (rest + 7) / 8, 0);
  w[0] = head_len | (std::uint64_t{num_parts} << 32);
  for (std::size_t i = 0; i < part_lens.size(); ++i) w[1 + i] = part_lens[i];
  return w;
}
std::span<const std::byte> first_bytes(const std::vector<std::uint64_t>& w, std::size_t n) {
  return {reinterpret_cast<const std::byte*>(w.data()), n};
}

}  // namespace

TEST_CASE("a frame header is 32 little-endian bytes starting with DGRF and round-trips",
          "[transport]") {
  const FrameHeader h{.type = MsgType::pull,
                      .request_id = 0x0102030405060708ull,
                      .status = Status::not_found,
                      .flags = frame_flag_reply,
                      .payload_bytes = 0x1122334455ull};
  const auto a = header_bytes(h);
  CHECK(std::memcmp(a.data(), "DGRF", 4) == 0);
  CHECK(std::to_integer<int>(a[4]) == protocol_version);
  CHECK(std::to_integer<int>(a[6]) == static_cast<int>(MsgType::pull));
  CHECK(std::to_integer<int>(a[8]) == 0x08);
  CHECK(std::to_integer<int>(a[15]) == 0x01);
  CHECK(std::to_integer<int>(a[24]) == 0x55);
  const auto d = decode_header(a, std::uint64_t{1} << 40);
  CHECK(d.type == h.type);
  CHECK(d.request_id == h.request_id);
  CHECK(d.status == h.status);
  CHECK(d.is_reply());
  CHECK(d.payload_bytes == h.payload_bytes);
  CHECK(peek_request_id(a) == h.request_id);
}

TEST_CASE("a message round-trips with every part 8-byte aligned and parts never copied",
          "[transport]") {
  std::vector<std::int64_t> ids(37);
  std::iota(ids.begin(), ids.end(), -5);
  std::vector<float> rows(11, 2.5f);
  const std::string odd = "abc";
  Message m = Message::owning(bytes_of("head!"));
  m.parts = {as_bytes_part(std::span<const std::int64_t>(ids)),
             std::as_bytes(std::span(odd)),
             {},
             as_bytes_part(std::span<const float>(rows))};
  const std::vector<std::span<const std::byte>> sent = m.parts;
  const auto f = encode_frame({.type = MsgType::push, .request_id = 9}, std::move(m));
  // The gather list points at the parts themselves.
  for (auto part : sent) {
    if (part.empty()) continue;
    bool found = false;
    for (auto piece : f.pieces) found = found || piece.data() == part.data();
    CHECK(found);
  }
  const auto frame = flatten(f);
  REQUIRE(frame.size() == f.total_bytes);
  const auto h = decode_header(std::span<const std::byte, frame_header_bytes>(frame.data(), 32),
                               default_max_frame_bytes);
  CHECK(h.payload_bytes == frame.size() - frame_header_bytes);
  const auto p = payload_of(frame);
  const Message d = decode_message(p.bytes, p.words);
  CHECK(std::string(reinterpret_cast<const char*>(d.head.data()), d.head.size()) == "head!");
  REQUIRE(d.parts.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(d.parts[i].size() == sent[i].size());
    CHECK((d.parts[i].data() - p.bytes.data()) % 8 == 0);
    CHECK(std::memcmp(d.parts[i].data(), sent[i].data(), sent[i].size()) == 0);
  }
  const auto* back = reinterpret_cast<const std::int64_t*>(d.parts[0].data());
  CHECK(back[0] == -5);
  CHECK(back[36] == 31);
  CHECK(d.keep_alive == p.words);
}

TEST_CASE("an empty message encodes to the 8-byte prefix", "[transport]") {
  const auto f = encode_frame({}, Message{});
  CHECK(f.total_bytes == frame_header_bytes + 8);
  const auto frame = flatten(f);
  const auto p = payload_of(frame);
  const Message d = decode_message(p.bytes, nullptr);
  CHECK(d.head.empty());
  CHECK(d.parts.empty());
}

TEST_CASE("decode_header rejects bad magic, version, flags and lengths with typed errors",
          "[transport]") {
  const FrameHeader good{.type = MsgType::ping, .request_id = 5, .payload_bytes = 64};
  auto a = header_bytes(good);
  CHECK_NOTHROW(decode_header(a, 64));

  SECTION("payload above the limit is FrameTooLarge, carrying size and limit") {
    try {
      decode_header(a, 63, "client x");
      FAIL("no exception");
    } catch (const FrameTooLarge& e) {
      CHECK(e.bytes() == 64);
      CHECK(e.limit() == 63);
      CHECK(std::string(e.what()).find("client x") != std::string::npos);
    }
    auto huge = good;
    huge.payload_bytes = ~std::uint64_t{0};
    CHECK_THROWS_AS(decode_header(header_bytes(huge), default_max_frame_bytes), FrameTooLarge);
  }
  SECTION("bad magic") {
    a[0] = std::byte{'X'};
    CHECK_THROWS_AS(decode_header(a, 64), ProtocolError);
    CHECK_FALSE(peek_request_id(a).has_value());
  }
  SECTION("other version") {
    a[4] = std::byte{2};
    CHECK_THROWS_WITH(decode_header(a, 64), Catch::Contains("protocol version 2"));
  }
  SECTION("unknown flags and reserved bits") {
    a[18] = std::byte{2};
    CHECK_THROWS_AS(decode_header(a, 64), ProtocolError);
    a = header_bytes(good);
    a[21] = std::byte{1};
    CHECK_THROWS_AS(decode_header(a, 64), ProtocolError);
  }
  SECTION("payload shorter than the message prefix") {
    auto tiny = good;
    tiny.payload_bytes = 7;
    CHECK_THROWS_AS(decode_header(header_bytes(tiny), 64), ProtocolError);
  }
}

TEST_CASE("decode_message rejects every lying or overflowing length", "[transport]") {
  SECTION("truncated prefix") {
    const auto w = raw_payload(0, 0, {}, 0);
    CHECK_THROWS_AS(decode_message(first_bytes(w, 7), nullptr), ProtocolError);
  }
  SECTION("too many parts") {
    const auto w = raw_payload(0, 65, std::vector<std::uint64_t>(65, 0), 0);
    CHECK_THROWS_WITH(decode_message(first_bytes(w, w.size() * 8), nullptr),
                      Catch::Contains("65 parts"));
  }
  SECTION("part lengths cut off") {
    const auto w = raw_payload(0, 3, {0, 0}, 0);
    CHECK_THROWS_AS(decode_message(first_bytes(w, 24), nullptr), ProtocolError);
  }
  SECTION("head longer than the payload") {
    const auto w = raw_payload(100, 0, {}, 16);
    CHECK_THROWS_AS(decode_message(first_bytes(w, 24), nullptr), ProtocolError);
  }
  SECTION("part longer than the payload") {
    const auto w = raw_payload(0, 1, {17}, 16);
    CHECK_THROWS_AS(decode_message(first_bytes(w, 32), nullptr), ProtocolError);
  }
  SECTION("part lengths near 2^64 cannot wrap around") {
    const auto w = raw_payload(3, 2, {~std::uint64_t{0} - 2, 8}, 16);
    CHECK_THROWS_AS(decode_message(first_bytes(w, 40), nullptr), ProtocolError);
    const auto v = raw_payload(0, 2, {std::uint64_t{1} << 63, std::uint64_t{1} << 63}, 16);
    CHECK_THROWS_AS(decode_message(first_bytes(v, 40), nullptr), ProtocolError);
  }
  SECTION("bytes left over after the last part") {
    const auto w = raw_payload(0, 1, {8}, 16);
    CHECK_THROWS_WITH(decode_message(first_bytes(w, 32), nullptr), Catch::Contains("left over"));
    CHECK_NOTHROW(decode_message(first_bytes(w, 24), nullptr));
  }
}

TEST_CASE("encode_frame refuses more than 64 parts", "[transport]") {
  Message m;
  m.parts.resize(max_message_parts + 1);
  CHECK_THROWS_AS(encode_frame({}, std::move(m)), InvalidArgument);
}

// The proofs go through OpenSSL; these check that the key and input reach it as meant.
TEST_CASE("HMAC-SHA256 matches the RFC 4231 test vectors", "[transport]") {
  auto hmac = [](const std::vector<std::byte>& key, const std::vector<std::byte>& data) {
    return hex(detail::hmac_sha256(key, data, {}));
  };
  auto rep = [](int v, std::size_t n) { return std::vector<std::byte>(n, std::byte(v)); };
  CHECK(hmac(rep(0x0b, 20), bytes_of("Hi There")) ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  CHECK(hmac(bytes_of("Jefe"), bytes_of("what do ya want for nothing?")) ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  CHECK(hmac(rep(0xaa, 20), rep(0xdd, 50)) ==
        "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  std::vector<std::byte> key4;
  for (int i = 1; i <= 25; ++i) key4.push_back(std::byte(i));
  CHECK(hmac(key4, rep(0xcd, 50)) ==
        "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  CHECK(hmac(rep(0xaa, 131), bytes_of("Test Using Larger Than Block-Size Key - Hash Key First")) ==
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  CHECK(hmac(rep(0xaa, 131),
             bytes_of("This is a test using a larger than block-size key and a larger than "
                      "block-size data. The key needs to be hashed before being used by the "
                      "HMAC algorithm.")) ==
        "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
  // Split input hashes like the concatenation.
  const auto whole = detail::hmac_sha256(bytes_of("k"), bytes_of("abcdef"), {});
  const auto split = detail::hmac_sha256(bytes_of("k"), bytes_of("ab"), bytes_of("cdef"));
  CHECK(whole == split);
}

TEST_CASE("hello heads round-trip and the two proofs differ", "[transport]") {
  const auto sn = detail::random_nonce(), cn = detail::random_nonce();
  CHECK(sn != cn);
  const auto sh =
      detail::decode_server_hello(detail::encode_server_hello(true, TlsMode::psk, sn), "s");
  CHECK(sh.secret_required);
  CHECK(sh.tls == TlsMode::psk);
  CHECK(sh.nonce == sn);
  const auto proof = detail::client_proof("secret", sn, cn);
  const auto ch = detail::decode_client_hello(
      detail::encode_client_hello(cn, &proof, TlsMode::certificates), "c");
  CHECK(ch.version == protocol_version);
  CHECK(ch.has_proof);
  CHECK(ch.tls == TlsMode::certificates);
  CHECK(detail::decode_client_hello(detail::encode_client_hello(cn, nullptr, TlsMode::off), "c")
            .tls == TlsMode::off);
  // Both TLS bits at once name no mode.
  auto both = detail::encode_server_hello(false, TlsMode::psk, sn);
  both[2] = std::byte{detail::hello_flag_tls_psk | detail::hello_flag_tls_certificates};
  CHECK_THROWS_AS(detail::decode_server_hello(both, "s"), ProtocolError);
  CHECK(ch.nonce == cn);
  CHECK(detail::constant_time_equal(ch.proof, proof));
  CHECK_FALSE(detail::constant_time_equal(detail::server_proof("secret", sn, cn), proof));
  CHECK_FALSE(detail::constant_time_equal(detail::client_proof("secreT", sn, cn), proof));
  CHECK_THROWS_AS(detail::decode_client_hello(bytes_of("short"), "c"), ProtocolError);
  CHECK_THROWS_AS(detail::decode_server_hello(bytes_of("short"), "s"), ProtocolError);
}

TEST_CASE("in-process transport hands the handler's reply spans straight back", "[transport]") {
  static const std::vector<float> table(1000, 1.5f);
  std::vector<std::uint64_t> seen_ids;
  InProcessTransport t({
      [&](const Request& r) {
        seen_ids.push_back(r.id);
        CHECK(r.connection == -1);
        Reply rep;
        rep.body.head = r.body.head;  // a view into the request, kept alive with the reply
        rep.body.parts = {as_bytes_part(std::span<const float>(table))};
        return rep;
      },
      [](const Request&) -> Reply { throw std::runtime_error("boom"); },
  });
  CHECK(t.num_servers() == 2);
  auto call = t.send(0, MsgType::pull, Message::owning(bytes_of("ids")));
  CHECK(call.ready());
  const Reply r = call.get(deadline_in(std::chrono::seconds(1)));
  CHECK(r.status == Status::ok);
  CHECK(r.text() == "ids");
  REQUIRE(r.body.parts.size() == 1);
  CHECK(r.body.parts[0].data() == reinterpret_cast<const std::byte*>(table.data()));

  const Reply e = t.call(1, MsgType::pull, {}, deadline_in(std::chrono::seconds(1)));
  CHECK(e.status == Status::internal_error);
  CHECK_THAT(e.text(), Catch::Contains("boom"));
  CHECK_THROWS_AS(t.send(2, MsgType::ping, {}), IdOutOfRange);
  t.call(0, MsgType::ping, {}, deadline_in(std::chrono::seconds(1)));
  REQUIRE(seen_ids.size() == 2);
  CHECK(seen_ids[0] != seen_ids[1]);
  CHECK_THROWS_AS(InProcessTransport({}), InvalidArgument);
}

}  // namespace test_transport_frame
