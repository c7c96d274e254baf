// AsioServer: accepts TCP connections, reads frames and answers them with a Handler.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

// Asio after <utility>: Boost 1.74 under C++20 needs it (see docs/STYLE.md).
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "distgraph/core/error.hpp"
#include "distgraph/core/parallel.hpp"
#include "distgraph/transport/detail/frame_stream.hpp"
#include "distgraph/transport/detail/handshake.hpp"
#include "distgraph/transport/endpoint.hpp"
#include "distgraph/transport/frame.hpp"
#include "distgraph/transport/message.hpp"

namespace distgraph {

/// How an AsioServer listens and what it accepts.
struct AsioServerOptions {
  std::string address = "127.0.0.1";  ///< IPv4 or IPv6 literal ("0.0.0.0", "::1", "::")
  std::uint16_t port = 0;             ///< 0 = an ephemeral port; read it back with port()
  std::uint64_t max_frame_bytes = default_max_frame_bytes;  ///< largest request payload
  unsigned num_threads = 0;  ///< io threads, which also run the handler; 0 = max(2, cores)
  std::string secret{};      ///< shared secret clients must prove; empty = no authentication
  /// A request frame must arrive whole within this time of its first byte.
  std::chrono::milliseconds read_timeout{30000};
  /// From accept to a valid hello, in total (nothing the client sends extends it); then
  /// the connection is closed without a reply.
  std::chrono::milliseconds handshake_timeout{10000};
  std::chrono::milliseconds drain_timeout{5000};  ///< request_stop waits this long at most
  /// Receives one line per refused client, bad frame or dropped connection; default:
  /// stderr. Called from io threads, possibly at once.
  std::function<void(std::string_view)> log{};
};

/// A TCP server for one Handler. Threading: `num_threads` io threads run every socket; the
/// thread that reads a request also runs the handler and writes the reply (no hand-off for
/// the common case), and it starts reading the connection's next frame first, so requests
/// of one connection run concurrently on other io threads and replies, which carry their
/// request ID, may go out of order. Writes are serialised per connection and sent as
/// gather writes from the reply's spans; the reply's keep_alive (and the request's
/// payload) live until it is written. A handler that blocks holds an io thread: with N
/// threads, N blocked handlers stall the server.
///
/// A bad header (magic, version, flags, length above max_frame_bytes) gets an error reply
/// (frame_too_large or bad_request, with the request ID when the magic was right) and that
/// connection is closed, since the stream cannot be resynchronised; a payload whose
/// lengths lie gets a bad_request reply and the connection stays. Nothing is allocated
/// before a length is checked. Other clients are never affected.
class AsioServer {
 public:
  /// Takes the handler (thread-safe, see Handler) and options; call start() or
  /// run_until_stopped() to listen.
  explicit AsioServer(Handler handler, AsioServerOptions options = {})
      : handler_(std::move(handler)),
        options_(std::move(options)),
        acceptor_(io_),
        drain_timer_(io_) {
    if (options_.num_threads == 0) options_.num_threads = std::max(2u, default_num_threads());
    if (!options_.log)
      options_.log = [](std::string_view line) {
        std::fprintf(stderr, "distgraph server: %.*s\n", static_cast<int>(line.size()),
                     line.data());
      };
  }
  AsioServer(const AsioServer&) = delete;
  AsioServer& operator=(const AsioServer&) = delete;
  /// Stops (closing every connection) and joins the threads.
  ~AsioServer() { stop(); }

  /// Binds, listens and starts the io threads; returns once the port accepts connections
  /// (a client may connect as soon as this returns). Throws InvalidArgument for an
  /// unparsable address and IoError naming the endpoint when it cannot listen. Calling it
  /// again while running does nothing. Not thread-safe against stop().
  void start() {
    std::lock_guard lock(mu_);
    if (started_) return;
    boost::system::error_code ec;
    const auto addr = boost::asio::ip::make_address(options_.address, ec);
    if (ec)
      throw InvalidArgument("server address '" + options_.address + "': " + ec.message() +
                            "; expected an IPv4 or IPv6 literal");
    const boost::asio::ip::tcp::endpoint ep(addr, options_.port);
    const std::string where = "tcp " + Endpoint{options_.address, options_.port}.to_string();
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(boost::asio::ip::tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec);
    if (ec) {
      boost::system::error_code ignored;
      acceptor_.close(ignored);
      throw IoError(where, "cannot listen: " + ec.message());
    }
    port_ = acceptor_.local_endpoint().port();
    started_ = true;
    accept_locked();
    for (unsigned i = 0; i < options_.num_threads; ++i)
      threads_.emplace_back([this] { io_.run(); });
  }

  /// The bound port (after start()).
  std::uint16_t port() const {
    std::lock_guard lock(mu_);
    return port_;
  }
  /// The address and bound port, for clients.
  Endpoint endpoint() const { return {options_.address, port()}; }
  const AsioServerOptions& options() const noexcept { return options_; }

  /// Starts if needed and blocks until request_stop() or stop() is called (from a handler,
  /// another thread or a signal watcher) and the server has drained; then joins the threads.
  void run_until_stopped() {
    start();
    {
      std::unique_lock lock(mu_);
      stopped_cv_.wait(lock, [&] { return drained_; });
    }
    stop();
  }

  /// Graceful stop, safe to call from a handler: stops accepting and reading, lets the
  /// requests in progress finish and their replies go out, then closes each connection
  /// (or all of them after drain_timeout). Returns at once; run_until_stopped() returns
  /// when done. Thread-safe.
  void request_stop() {
    std::lock_guard lock(mu_);
    if (stop_requested_ || !started_) {
      stop_requested_ = true;
      drained_ = true;
      stopped_cv_.notify_all();
      return;
    }
    stop_requested_ = true;
    boost::system::error_code ec;
    acceptor_.close(ec);
    for (auto& [id, s] : sessions_) s->drain();
    check_drained_locked();
    drain_timer_.expires_after(options_.drain_timeout);
    drain_timer_.async_wait([this](const boost::system::error_code& e) {
      if (e) return;
      std::lock_guard lk(mu_);
      for (auto& [id, s] : sessions_) s->close("server stopping");
      drained_ = true;
      stopped_cv_.notify_all();
    });
  }

  /// Hard stop: closes the listener and every connection now (clients see PeerLost),
  /// then waits for running handlers and joins the threads. From a handler it only
  /// closes; the thread blocked in run_until_stopped() or the destructor joins.
  /// Thread-safe, idempotent.
  void stop() {
    {
      std::lock_guard lock(mu_);
      stop_requested_ = true;
      drained_ = true;
      boost::system::error_code ec;
      acceptor_.close(ec);
      drain_timer_.cancel();
      for (auto& [id, s] : sessions_) s->close("server stopping");
      sessions_.clear();
      work_.reset();
      io_.stop();
      stopped_cv_.notify_all();
    }
    std::lock_guard join_lock(join_mu_);
    for (auto& t : threads_)
      if (t.get_id() == std::this_thread::get_id()) return;
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    threads_.clear();
  }

  /// Open connections (handshaken or not). Thread-safe.
  std::size_t num_connections() const {
    std::lock_guard lock(mu_);
    return sessions_.size();
  }

 private:
  using tcp = boost::asio::ip::tcp;

  /// One accepted connection: the hello exchange, then requests to the handler.
  class Session : public detail::FrameStream<Session> {
   public:
    Session(AsioServer* server, int id, tcp::socket socket, detail::StreamLimits limits)
        : FrameStream(std::move(socket), std::move(limits)),
          server_(server),
          id_(id),
          handshake_timer_(server->io_),
          nonce_(detail::random_nonce()) {}

    void start() {
      handshake_timer_.expires_after(server_->options_.handshake_timeout);
      handshake_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
        if (ec || self->authenticated_) return;
        self->server_->options_.log(
            self->subject() + ": refused: no valid hello within " +
            std::to_string(self->server_->options_.handshake_timeout.count()) + " ms");
        self->close("handshake timeout");
      });
      write(encode_frame(
          FrameHeader{.type = MsgType::hello},
          Message::owning(detail::encode_server_hello(!server_->options_.secret.empty(), nonce_))));
      start_reading();
    }

    /// Stops taking requests; closes once those in progress are answered.
    void drain() {
      draining_ = true;
      if (in_flight_ == 0) close_after_flush("server stopping");
    }

    // FrameStream hooks.
    void on_frames(std::vector<detail::InFrame>& frames) {
      std::size_t first = 0;
      if (!authenticated_) {
        if (!handshake(frames[0])) return;
        first = 1;
      }
      if (draining_ || first == frames.size()) return;
      in_flight_ += static_cast<int>(frames.size() - first);
      // Hand all but the last to other io threads; run the last here.
      for (std::size_t i = first; i + 1 < frames.size(); ++i)
        boost::asio::post(server_->io_, [self = shared_from_this(),
                                         f = std::move(frames[i])]() mutable { self->handle(f); });
      handle(frames.back());
    }
    void on_bad_header(std::exception_ptr e, std::optional<std::uint64_t> request_id) {
      Status status = Status::internal_error;
      std::string text;
      try {
        std::rethrow_exception(e);
      } catch (const FrameTooLarge& x) {
        status = Status::frame_too_large;
        text = x.what();
      } catch (const ProtocolError& x) {
        status = Status::bad_request;
        text = x.what();
      } catch (const std::exception& x) {
        text = subject() + ": " + x.what();
      }
      server_->options_.log(text + "; closing the connection");
      // The peer may not have passed the hello: it gets the fault without our name for
      // it (its address and the connection counter), which stays in the log.
      write(encode_frame(
          FrameHeader{
              .request_id = request_id.value_or(0), .status = status, .flags = frame_flag_reply},
          Reply::error(status, without_subject(text)).body));
      close_after_flush(without_subject(text));
    }
    void on_closed(const std::string& reason, bool clean) { server_->forget(id_, reason, clean); }

   private:
    /// `text` without the leading "<subject>: " (what the peer is told).
    std::string without_subject(std::string text) const {
      const std::string prefix = subject() + ": ";
      if (text.compare(0, prefix.size(), prefix) == 0) text.erase(0, prefix.size());
      return text;
    }

    // Checks the client's hello; replies and returns true when accepted.
    bool handshake(detail::InFrame& f) {
      const auto& opt = server_->options_;
      // A refused peer learns nothing but the status: the reason, its address and the
      // connection counter go to the log only.
      auto refuse = [&](Status s, const std::string& why) {
        opt.log(subject() + ": refused: " + why);
        write(encode_frame(FrameHeader{.type = MsgType::hello,
                                       .request_id = f.header.request_id,
                                       .status = s,
                                       .flags = frame_flag_reply},
                           Reply::error(s, "handshake refused").body));
        close_after_flush(why);
        return false;
      };
      if (f.header.type != MsgType::hello || f.header.is_reply())
        return refuse(Status::bad_request, "expected a hello frame first, got " +
                                               msg_type_name(f.header.type) +
                                               (f.header.is_reply() ? " reply" : ""));
      if (f.error) {
        try {
          std::rethrow_exception(f.error);
        } catch (const std::exception& x) {
          return refuse(Status::bad_request, "malformed hello: " + without_subject(x.what()));
        }
      }
      if (!f.message.parts.empty())
        return refuse(Status::bad_request, "hello with " + std::to_string(f.message.parts.size()) +
                                               " parts; expected none");
      detail::ClientHello c;
      try {
        c = detail::decode_client_hello(f.message.head, subject());
      } catch (const ProtocolError& x) {
        return refuse(Status::bad_request, without_subject(x.what()));
      }
      if (c.version != protocol_version)
        return refuse(Status::bad_request, "client speaks protocol version " +
                                               std::to_string(c.version) + "; server speaks " +
                                               std::to_string(protocol_version));
      std::vector<std::byte> head;
      if (!opt.secret.empty()) {
        if (!c.has_proof)
          return refuse(Status::unauthorized, "no shared-secret proof; one is required");
        const auto expected = detail::client_proof(opt.secret, nonce_, c.nonce);
        if (!detail::constant_time_equal(expected, c.proof))
          return refuse(Status::unauthorized, "wrong shared-secret proof");
        const auto proof = detail::server_proof(opt.secret, nonce_, c.nonce);
        head.assign(proof.begin(), proof.end());
      }
      // Set before replying: the client sends requests as soon as it reads the reply, and
      // another io thread may read them.
      authenticated_ = true;
      handshake_timer_.cancel();
      write(encode_frame(
          FrameHeader{
              .type = MsgType::hello, .request_id = f.header.request_id, .flags = frame_flag_reply},
          Message::owning(std::move(head))));
      return true;
    }

    void handle(detail::InFrame& f) {
      const FrameHeader& h = f.header;
      Reply r;
      std::shared_ptr<const void> request_payload = f.message.keep_alive;
      if (f.error) {
        try {
          std::rethrow_exception(f.error);
        } catch (const std::exception& x) {
          r = Reply::error(Status::bad_request, x.what());
        }
      } else if (h.is_reply() || h.type == MsgType::hello) {
        r = Reply::error(Status::bad_request, subject() + ": unexpected " + msg_type_name(h.type) +
                                                  (h.is_reply() ? " reply" : "") +
                                                  " after the handshake");
      } else {
        r = run_handler(Request{h.type, h.request_id, std::move(f.message), id_});
      }
      send_reply(h, std::move(r), std::move(request_payload));
      if (--in_flight_ == 0 && draining_) close_after_flush("server stopping");
    }

    Reply run_handler(const Request& req) {
      try {
        return server_->handler_(req);
      } catch (const std::exception& x) {
        return Reply::error(Status::internal_error, subject() + ": " + msg_type_name(req.type) +
                                                        " #" + std::to_string(req.id) +
                                                        ": handler threw: " + x.what());
      } catch (...) {
        return Reply::error(Status::internal_error, subject() + ": " + msg_type_name(req.type) +
                                                        ": handler threw a non-standard exception");
      }
    }

    void send_reply(const FrameHeader& h, Reply r, std::shared_ptr<const void> request_payload) {
      const FrameHeader out{.type = h.type,
                            .request_id = h.request_id,
                            .status = r.status,
                            .flags = frame_flag_reply};
      OutFrame f;
      try {
        const auto bytes = message_payload_bytes(r.body);
        if (bytes > server_->options_.max_frame_bytes)
          throw FrameTooLarge(subject() + ": reply to " + msg_type_name(h.type) + " #" +
                                  std::to_string(h.request_id),
                              bytes, server_->options_.max_frame_bytes);
        f = encode_frame(out, std::move(r.body));
      } catch (const FrameTooLarge& x) {
        f = encode_frame({out.type, out.request_id, Status::frame_too_large, out.flags, 0},
                         Reply::error(Status::frame_too_large, x.what()).body);
      } catch (const std::exception& x) {
        f = encode_frame({out.type, out.request_id, Status::internal_error, out.flags, 0},
                         Reply::error(Status::internal_error, x.what()).body);
      }
      f.request_keep_alive = std::move(request_payload);
      write(std::move(f));
    }

    AsioServer* server_;
    int id_;
    boost::asio::steady_timer handshake_timer_;
    detail::Nonce nonce_;
    std::atomic<bool> authenticated_{false}, draining_{false};
    std::atomic<int> in_flight_{0};
  };

  void accept_locked() {
    acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
      std::lock_guard lock(mu_);
      if (stop_requested_ || !acceptor_.is_open()) return;
      if (!ec) {
        boost::system::error_code e;
        const auto remote = socket.remote_endpoint(e);
        const std::string peer =
            e ? std::string("unknown peer")
              : Endpoint{remote.address().to_string(), remote.port()}.to_string();
        const int id = next_connection_++;
        auto s = std::make_shared<Session>(
            this, id, std::move(socket),
            detail::StreamLimits{options_.max_frame_bytes, options_.read_timeout,
                                 "client " + peer + " (connection " + std::to_string(id) + ")"});
        sessions_.emplace(id, s);
        s->start();
      }
      // Accept errors (e.g. out of descriptors) are not fatal; keep listening.
      accept_locked();
    });
  }

  void forget(int id, const std::string& reason, bool clean) {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    if (!clean && !stop_requested_) options_.log(it->second->subject() + ": dropped: " + reason);
    sessions_.erase(it);
    check_drained_locked();
  }

  void check_drained_locked() {
    if (stop_requested_ && sessions_.empty()) {
      drained_ = true;
      drain_timer_.cancel();
      stopped_cv_.notify_all();
    }
  }

  Handler handler_;
  AsioServerOptions options_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{
      io_.get_executor()};
  tcp::acceptor acceptor_;
  boost::asio::steady_timer drain_timer_;
  mutable std::mutex mu_;
  std::mutex join_mu_;
  std::condition_variable stopped_cv_;
  std::map<int, std::shared_ptr<Session>> sessions_;
  std::vector<std::thread> threads_;
  std::uint16_t port_ = 0;
  int next_connection_ = 0;
  bool started_ = false, stop_requested_ = false, drained_ = false;
};

}  // namespace distgraph
