// Raw loopback TCP bounds: a blocking Asio socket pair moving given request/reply sizes.
#pragma once

#include <cstdint>
#include <future>
#include <thread>
#include <utility>
#include <vector>

// Asio after <utility>: Boost 1.74 under C++20 needs it (see docs/STYLE.md).
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "distgraph/core/timer.hpp"

namespace distgraph::bench {

using tcp = boost::asio::ip::tcp;

/// Raw bound: a blocking Asio socket pair. The server reads a 32-byte header carrying the
/// request size and the reply size, then the request, and writes header + reply.
class RawPair {
 public:
  RawPair() : acceptor_(io_, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0)) {
    auto accepted = std::async(std::launch::async, [this] { return acceptor_.accept(); });
    client_.connect(acceptor_.local_endpoint());
    server_sock_ = accepted.get();
    client_.set_option(tcp::no_delay(true));
    server_sock_.set_option(tcp::no_delay(true));
    server_ = std::thread([this] { serve(); });
  }
  ~RawPair() {
    std::uint64_t stop[4] = {0, 0, 0, 0};
    boost::asio::write(client_, boost::asio::buffer(stop));
    server_.join();
  }
  /// One exchange: `request` bytes out, `reply` bytes back.
  void exchange(std::size_t request, std::size_t reply) {
    send(request, reply);
    receive();
  }
  /// The first half of an exchange: writes the header and `request` bytes, asking for
  /// `reply` bytes back, which receive() reads. Work done between the two overlaps the
  /// server's reply, as a client's local work overlaps its requests in flight.
  void send(std::size_t request, std::size_t reply) {
    std::uint64_t h[4] = {1, request, reply, 0};
    if (out_.size() < request) out_.resize(request);
    if (in_.size() < reply + 32) in_.resize(reply + 32);
    std::vector<boost::asio::const_buffer> bufs{boost::asio::buffer(h, 32),
                                                boost::asio::buffer(out_.data(), request)};
    boost::asio::write(client_, bufs);
    pending_reply_ = reply;
  }
  /// The second half: reads the reply the last send() asked for.
  void receive() {
    boost::asio::read(client_, boost::asio::buffer(in_.data(), pending_reply_ + 32));
  }

 private:
  void serve() {
    std::vector<char> req, rep;
    for (;;) {
      std::uint64_t h[4];
      boost::asio::read(server_sock_, boost::asio::buffer(h, 32));
      if (h[0] == 0) return;
      if (req.size() < h[1]) req.resize(h[1]);
      if (rep.size() < h[2] + 32) rep.resize(h[2] + 32);
      boost::asio::read(server_sock_, boost::asio::buffer(req.data(), h[1]));
      boost::asio::write(server_sock_, boost::asio::buffer(rep.data(), h[2] + 32));
    }
  }
  boost::asio::io_context io_;
  tcp::acceptor acceptor_;
  tcp::socket client_{io_}, server_sock_{io_};
  std::thread server_;
  std::vector<char> out_, in_;
  std::size_t pending_reply_ = 0;
};

/// Seconds one call of fn() takes.
template <class Fn>
double seconds_of(Fn&& fn) {
  distgraph::Stopwatch w;
  fn();
  return w.seconds();
}

}  // namespace distgraph::bench
