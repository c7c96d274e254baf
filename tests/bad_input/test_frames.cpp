// Fuzz loops: corrupted, truncated and random frames either decode in bounds or throw
// ProtocolError.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "distgraph/transport/detail/handshake.hpp"
#include "distgraph/transport/frame.hpp"

namespace test_bad_input_frames {

using namespace distgraph;

namespace {

/// Decodes a whole frame as a transport would (header first, then the payload copied into
/// an 8-aligned buffer). Returns "" when it decodes with every span inside the payload or
/// fails with a ProtocolError, else a description of what went wrong.
std::string try_decode(const std::vector<std::byte>& frame, std::uint64_t max_frame_bytes) {
  if (frame.size() < frame_header_bytes) return "";
  try {
    const auto h = decode_header(std::span<const std::byte, frame_header_bytes>(frame.data(), 32),
                                 max_frame_bytes);
    if (h.payload_bytes > max_frame_bytes) return "header passed an oversized payload";
    // A real reader waits for payload_bytes; the fuzzer decodes what is there.
    const std::size_t n = std::min<std::size_t>(frame.size() - frame_header_bytes, h.payload_bytes);
    std::shared_ptr<std::uint64_t[]> words(new std::uint64_t[n / 8 + 1]);
    std::memcpy(words.get(), frame.data() + frame_header_bytes, n);
    const std::span<const std::byte> payload(reinterpret_cast<const std::byte*>(words.get()), n);
    const Message m = decode_message(payload, words);
    auto inside = [&](std::span<const std::byte> s) {
      return s.data() >= payload.data() && s.data() + s.size() <= payload.data() + payload.size();
    };
    if (!inside(m.head)) return "head outside the payload";
    for (auto p : m.parts) {
      if (!inside(p)) return "part outside the payload";
      if ((p.data() - payload.data()) % 8 != 0) return "unaligned part";
    }
    return "";
  } catch (const ProtocolError&) {
    return "";
  } catch (const std::exception& e) {
    return std::string("foreign exception: ") + e.what();
  }
}

std::vector<std::byte> sample_frame(std::mt19937_64& rng) {
  Message m;
  static const std::vector<std::byte> data(4096, std::byte{0x5a});
  m.head = std::span(data).first(rng() % 40);
  const std::size_t parts = rng() % 6;
  for (std::size_t i = 0; i < parts; ++i) m.parts.push_back(std::span(data).first(rng() % 300));
  return flatten(encode_frame({.type = MsgType::pull, .request_id = rng()}, std::move(m)));
}

}  // namespace

TEST_CASE("randomly corrupted frames decode in bounds or throw ProtocolError", "[bad_input]") {
  std::mt19937_64 rng(20240601);
  int decoded = 0, rejected = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    auto frame = sample_frame(rng);
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      // Bias towards the header and length prefix, where the interesting fields are.
      const std::size_t limit = rng() % 2 ? std::min<std::size_t>(frame.size(), 80) : frame.size();
      frame[rng() % limit] = static_cast<std::byte>(rng());
    }
    if (rng() % 4 == 0) frame.resize(rng() % frame.size());
    const auto problem = try_decode(frame, 1 << 16);
    INFO("iteration " << iter);
    REQUIRE(problem.empty());
    (frame.size() >= frame_header_bytes ? decoded : rejected)++;
  }
  CHECK(decoded > 0);
}

TEST_CASE("random bytes never pass as a frame header with an oversized payload", "[bad_input]") {
  std::mt19937_64 rng(7);
  for (int iter = 0; iter < 20000; ++iter) {
    std::vector<std::byte> frame(frame_header_bytes + rng() % 64);
    for (auto& b : frame) b = static_cast<std::byte>(rng());
    // Half the time keep the magic and version right so the length checks are reached.
    if (iter % 2 == 0) {
      std::memcpy(frame.data(), "DGRF", 4);
      frame[4] = std::byte{protocol_version};
      frame[5] = std::byte{0};
    }
    INFO("iteration " << iter);
    REQUIRE(try_decode(frame, 1 << 20).empty());
  }
}

TEST_CASE("truncated or padded hello heads are rejected", "[bad_input]") {
  const auto nonce = detail::random_nonce();
  const auto server = detail::encode_server_hello(true, TlsMode::off, nonce);
  const auto client = detail::encode_client_hello(nonce, nullptr, TlsMode::off);
  for (std::size_t n = 0; n < server.size(); ++n)
    CHECK_THROWS_AS(detail::decode_server_hello(std::span(server).first(n), "s"), ProtocolError);
  for (std::size_t n = 0; n < client.size(); ++n)
    CHECK_THROWS_AS(detail::decode_client_hello(std::span(client).first(n), "c"), ProtocolError);
  auto longer = client;
  longer.push_back(std::byte{0});
  CHECK_THROWS_AS(detail::decode_client_hello(longer, "c"), ProtocolError);
  auto other_version = server;
  other_version[0] = std::byte{9};
  CHECK_THROWS_WITH(detail::decode_server_hello(other_version, "s"),
                    Catch::Contains("protocol version 9"));
}

}  // namespace test_bad_input_frames
