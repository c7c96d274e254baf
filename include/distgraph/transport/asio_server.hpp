// AsioServer: accepts TCP connections, reads frames and answers them with a Handler.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
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
#include "distgraph/core/thread_priority.hpp"
#include "distgraph/core/trace.hpp"
#include "distgraph/transport/detail/frame_stream.hpp"
#include "distgraph/transport/detail/handshake.hpp"
#include "distgraph/transport/endpoint.hpp"
#include "distgraph/transport/frame.hpp"
#include "distgraph/transport/message.hpp"
#include "distgraph/transport/tls.hpp"

namespace distgraph {

/// How an AsioServer listens and what it accepts. The limits bound what one peer can make
/// the server hold, whatever it sends or fails to read (docs/WIRE.md, "Errors and limits").
struct AsioServerOptions {
  std::string address = "127.0.0.1";  ///< IPv4 or IPv6 literal ("0.0.0.0", "::1", "::")
  std::uint16_t port = 0;             ///< 0 = an ephemeral port; read it back with port()
  std::uint64_t max_frame_bytes = default_max_frame_bytes;  ///< largest request payload
  /// Threads that run the handler (one more reads and writes the sockets); 0 = max(2, cores).
  unsigned num_threads = 0;
  /// Requests this returns true for run on the socket thread as soon as they are read,
  /// without waking a handler thread: a small round trip then costs one wake-up on the
  /// server, as a blocking socket does. Only for requests that finish in microseconds and
  /// never wait (not a barrier): while one runs, no other socket is read. Empty = none.
  std::function<bool(MsgType type, std::uint64_t payload_bytes)> run_inline{};
  std::string secret{};  ///< shared secret clients must prove; empty = no authentication
  /// TLS 1.3 for every connection: with a secret, a PSK derived from it; with certificates,
  /// those. Clients must use the same mode (tls.hpp, docs/RUNTIME.md).
  TlsOptions tls{};
  /// A request frame must arrive whole within this time of its first byte.
  std::chrono::milliseconds read_timeout{30000};
  /// The socket and handler threads run under SCHED_BATCH (schedule_as_batch,
  /// core/thread_priority.hpp): a request that wakes them waits for the running thread's
  /// next scheduling point instead of preempting it, which on a machine whose trainers
  /// share the cores spares their training steps; on an idle core it runs at once.
  /// Threads a handler starts inherit it. false: the threads keep the policy of the thread
  /// that called start().
  bool sched_batch = true;
  /// From accept to a valid hello, in total (nothing the client sends extends it); then
  /// the connection is closed without a reply.
  std::chrono::milliseconds handshake_timeout{10000};
  std::chrono::milliseconds drain_timeout{5000};  ///< request_stop waits this long at most
  /// Largest payload a frame may declare before the hello is accepted. A client hello is
  /// detail::client_hello_payload_bytes (80: the 8-byte message prefix and the 72-byte
  /// head); the slack lets a malformed hello (an extra part, a longer head) get its own
  /// bad_request. A larger declared length gets frame_too_large and a close before
  /// anything is allocated for it. At least 80.
  std::uint64_t max_hello_bytes = 256;
  /// Most connections that have not completed the hello at once; one accepted beyond it
  /// is closed at once, without a server hello. Authenticated connections do not count.
  std::size_t max_unauthenticated = 64;
  /// Reply bytes one connection may have queued (produced, not yet taken by its socket)
  /// before the server stops running and reading that connection's requests; both resume
  /// once the peer reads enough. A peer that reads nothing holds at most this plus the
  /// replies of the requests already running (at most num_threads of them, plus one that
  /// run_inline accepted).
  std::uint64_t max_queued_reply_bytes = std::uint64_t{32} << 20;
  /// Receives one line per refused client, bad frame or dropped connection; default:
  /// stderr. Called from io threads, possibly at once.
  std::function<void(std::string_view)> log{};
};

/// What an AsioServer holds and has refused (AsioServer::stats()); counts are since start().
struct AsioServerStats {
  std::size_t connections = 0;                ///< open now
  std::size_t unauthenticated = 0;            ///< open now without an accepted hello
  std::size_t paused_connections = 0;         ///< open now with reading paused (back-pressure)
  std::uint64_t queued_reply_bytes = 0;       ///< queued now, all connections together
  std::uint64_t peak_queued_reply_bytes = 0;  ///< the most one connection ever had queued
  std::uint64_t read_pauses = 0;              ///< times a connection's reading was paused
  std::uint64_t refused_connections = 0;      ///< closed at accept (max_unauthenticated)
  std::uint64_t refused_hello_frames = 0;     ///< frames over max_hello_bytes before the hello
  std::uint64_t refused_tls_handshakes = 0;   ///< TLS handshakes that failed (key, certificate)
  std::uint64_t accept_failures = 0;          ///< accepts failed for lack of descriptors/memory
};

/// A TCP server for one Handler. Threading: one socket thread reads and writes every
/// connection; `num_threads` handler threads run the requests it reads (the socket thread
/// itself runs those `run_inline` accepts, so a quick request is answered without waking
/// another thread). The socket thread starts reading a connection's next frame before its
/// request runs, so requests of one connection run concurrently and replies, which carry
/// their request ID, may go out of order. A reply is written by the thread that produced
/// it as far as the socket takes it at once, the rest by the socket thread; writes are
/// serialised per connection and sent as gather writes from the reply's spans; the reply's
/// keep_alive (and the request's payload) live until it is written. A handler that blocks
/// holds a handler thread: with N threads, N blocked handlers stall the server's requests
/// (not its sockets: quick requests and writes go on).
///
/// Why one socket thread: with several threads in one Asio context, the thread that takes
/// a socket event wakes an idle one to watch the sockets while it runs the handler, so
/// every small request cost two wake-ups (docs/PERFORMANCE.md, rtt_small).
///
/// A bad header (magic, version, flags, length above max_frame_bytes) gets an error reply
/// (frame_too_large or bad_request, with the request ID when the magic was right) and that
/// connection is closed, since the stream cannot be resynchronised; a payload whose
/// lengths lie gets a bad_request reply and the connection stays. Nothing is allocated
/// before a length is checked. Other clients are never affected.
///
/// Memory per peer is bounded whatever the peer does: before its hello is accepted a
/// frame may declare at most max_hello_bytes, and at most max_unauthenticated such
/// connections are open; afterwards at most num_threads of a connection's requests run at
/// once and none starts while its queued replies reach max_queued_reply_bytes (reading
/// pauses meanwhile). Running out of descriptors does not stop the server: accepting
/// backs off (50 ms doubling to 1 s) while the open connections are served.
class AsioServer {
 public:
  /// Takes the handler (thread-safe, see Handler) and options; call start() or
  /// run_until_stopped() to listen.
  /// Throws InvalidArgument when max_hello_bytes is below a client hello's 80 bytes,
  /// max_unauthenticated or max_queued_reply_bytes is 0, or a TLS file cannot be used.
  explicit AsioServer(Handler handler, AsioServerOptions options = {})
      : handler_(std::move(handler)),
        options_(std::move(options)),
        acceptor_(io_),
        drain_timer_(io_),
        accept_timer_(io_) {
    if (options_.max_hello_bytes < detail::client_hello_payload_bytes)
      throw InvalidArgument(
          "server option max_hello_bytes = " + std::to_string(options_.max_hello_bytes) +
          "; a client hello needs " + std::to_string(detail::client_hello_payload_bytes));
    if (options_.max_unauthenticated == 0)
      throw InvalidArgument("server option max_unauthenticated = 0; at least 1 is needed");
    if (options_.max_queued_reply_bytes == 0)
      throw InvalidArgument("server option max_queued_reply_bytes = 0; at least 1 is needed");
    if (options_.num_threads == 0) options_.num_threads = std::max(2u, default_num_threads());
    check_tls_options(options_.tls);
    tls_mode_ = tls_mode(options_.tls, options_.secret);
    if (tls_mode_ != TlsMode::off)
      tls_ = std::make_unique<detail::TlsContext>(tls_mode_, true, options_.tls, options_.secret);
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
    threads_.emplace_back([this] {
      trace::name_thread("socket");
      if (options_.sched_batch) schedule_as_batch();
      io_.run();
    });
    for (unsigned i = 0; i < options_.num_threads; ++i)
      threads_.emplace_back([this] {
        trace::name_thread("handler");
        if (options_.sched_batch) schedule_as_batch();
        pool_.run();
      });
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
    accept_timer_.cancel();
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
      accept_timer_.cancel();
      for (auto& [id, s] : sessions_) s->close("server stopping");
      retire_all_locked();
      work_.reset();
      pool_work_.reset();
      io_.stop();
      pool_.stop();
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

  /// A snapshot of what the server holds now and has refused so far. Thread-safe; takes
  /// the server's lock and each connection's briefly (cheap enough to poll).
  AsioServerStats stats() const {
    std::lock_guard lock(mu_);
    AsioServerStats st;
    st.connections = sessions_.size();
    st.unauthenticated = unauthenticated_;
    st.peak_queued_reply_bytes = retired_peak_queued_;
    for (const auto& [id, s] : sessions_) {
      st.queued_reply_bytes += s->queued_write_bytes();
      st.peak_queued_reply_bytes =
          std::max(st.peak_queued_reply_bytes, s->peak_queued_write_bytes());
      if (s->held()) ++st.paused_connections;
    }
    st.read_pauses = read_pauses_.load();
    st.refused_connections = refused_connections_;
    st.refused_hello_frames = refused_hello_frames_.load();
    st.refused_tls_handshakes = refused_tls_handshakes_.load();
    st.accept_failures = accept_failures_;
    return st;
  }

 private:
  using tcp = boost::asio::ip::tcp;

  /// One accepted connection: the hello exchange, then requests to the handler through the
  /// back-pressure gate (run_gate_locked).
  class Session : public detail::FrameStream<Session> {
   public:
    /// `limits` carry the hello's frame limit and pause after the first frame; the
    /// handshake raises the limit and resumes reading.
    Session(AsioServer* server, int id, tcp::socket socket, detail::StreamLimits limits)
        : FrameStream(std::move(socket), std::move(limits)),
          server_(server),
          id_(id),
          handshake_timer_(server->io_),
          nonce_(detail::random_nonce()) {}

    bool authenticated() const noexcept { return authenticated_; }
    /// Whether reading is paused because requests are waiting at the gate.
    bool held() const {
      std::lock_guard lock(gate_mu_);
      return held_;
    }

    void start() {
      handshake_timer_.expires_after(server_->options_.handshake_timeout);
      handshake_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
        if (ec || self->authenticated_) return;
        self->server_->options_.log(
            self->subject() + ": refused: no valid hello within " +
            std::to_string(self->server_->options_.handshake_timeout.count()) + " ms");
        self->close("handshake timeout");
      });
      write(encode_frame(FrameHeader{.type = MsgType::hello},
                         Message::owning(detail::encode_server_hello(
                             !server_->options_.secret.empty(), server_->tls_mode_, nonce_))));
      if (!server_->tls_) return start_reading();
      // A TLS client starts its handshake; a plaintext one sends its hello, which is read
      // as a frame and refused with the reason (handshake()).
      peek_first_byte([self = shared_from_this()](int first) {
        if (first < 0) return self->close("connection closed before the hello");
        if (first != tls_handshake_record) return self->start_reading();
        self->start_tls(*self->server_->tls_, [self](const std::string& why) {
          if (why.empty()) return self->start_reading();
          ++self->server_->refused_tls_handshakes_;
          self->server_->options_.log(self->subject() + ": refused: TLS handshake failed: " + why);
          self->close("TLS handshake failed: " + why);
        });
      });
    }

    /// Stops taking requests (those waiting at the gate are dropped); closes once those
    /// in progress are answered.
    void drain() {
      std::lock_guard lock(gate_mu_);
      draining_ = true;
      waiting_.clear();
      if (in_flight_ == 0) close_after_flush("server stopping");
    }

    // FrameStream hooks.
    void on_frames(std::vector<detail::InFrame>& frames) {
      std::size_t first = 0;
      if (!authenticated_) {
        if (!handshake(frames[0])) return;
        first = 1;
      }
      std::vector<detail::InFrame> ready;
      {
        std::lock_guard lock(gate_mu_);
        if (draining_ || first == frames.size()) return;
        for (std::size_t i = first; i < frames.size(); ++i)
          waiting_.push_back(std::move(frames[i]));
        run_gate_locked(ready);
      }
      run(std::move(ready));
    }
    // The peer read some replies: requests held at the gate may run now.
    void on_queue_shrunk() {
      if (!authenticated_) return;
      std::vector<detail::InFrame> ready;
      {
        std::lock_guard lock(gate_mu_);
        if (waiting_.empty()) return;
        run_gate_locked(ready);
      }
      run(std::move(ready));
    }
    void on_bad_header(std::exception_ptr e, std::optional<std::uint64_t> request_id) {
      Status status = Status::internal_error;
      std::string text;
      try {
        std::rethrow_exception(e);
      } catch (const FrameTooLarge& x) {
        status = Status::frame_too_large;
        text = x.what();
        if (!authenticated_) {
          // Only a hello may come first, and it is tiny (max_hello_bytes).
          ++server_->refused_hello_frames_;
          text = subject() + ": frame of " + std::to_string(x.bytes()) +
                 " bytes before the hello; the limit is " + std::to_string(x.limit()) +
                 " bytes until the hello is accepted";
        }
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
    void on_closed(const std::string& reason, bool clean) {
      {
        // Nothing may keep the connection's memory alive once it is gone: requests held at
        // the gate go now, and the handshake timer (holding this session) is cancelled
        // rather than left to expire.
        std::lock_guard lock(gate_mu_);
        waiting_.clear();
        handshake_timer_.cancel();
      }
      server_->forget(id_, reason, clean);
    }

   private:
    static constexpr int tls_handshake_record = 0x16;  // a TLS record's first byte

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
      const TlsMode mine = server_->tls_mode_;
      // A hello in clear to a TLS server is refused whatever it claims.
      if (!tls_active() && mine != TlsMode::off) {
        if (c.tls == TlsMode::off)
          return refuse(Status::unauthorized,
                        std::string("plaintext client: this server requires TLS (") +
                            tls_mode_name(mine) +
                            "); the client runs with TLS off (--no-tls, or no secret or "
                            "certificate to use)");
        if (c.tls == mine)
          return refuse(Status::unauthorized, std::string("client claims TLS (") +
                                                  tls_mode_name(mine) +
                                                  ") but sent its hello in clear");
      }
      if (c.tls != mine)
        return refuse(Status::unauthorized,
                      std::string("client requires TLS (") + tls_mode_name(c.tls) +
                          "); this server runs " +
                          (mine == TlsMode::off ? std::string("without TLS (--no-tls)")
                                                : std::string("TLS with ") + tls_mode_name(mine)));
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
      {
        // Counted under the server's lock, as forget() reads it there.
        std::lock_guard lock(server_->mu_);
        authenticated_ = true;
        server_->left_unauthenticated_locked();
      }
      {
        std::lock_guard lock(gate_mu_);
        handshake_timer_.cancel();
      }
      // Reading paused after the hello (StreamLimits::pause_after_first_frame): raise the
      // frame limit before anything behind the hello is parsed, then go on.
      set_max_frame_bytes(opt.max_frame_bytes);
      write(encode_frame(
          FrameHeader{
              .type = MsgType::hello, .request_id = f.header.request_id, .flags = frame_flag_reply},
          Message::owning(std::move(head))));
      resume_reading();
      return true;
    }

    // The back-pressure gate (gate_mu_ held). Moves waiting requests to `ready`, in order,
    // while fewer than num_threads of this connection's requests are in progress (more
    // could not run at once anyway; one more may run if run_inline accepts it, as on the
    // socket thread it holds no handler thread) and its queued replies are under
    // max_queued_reply_bytes, so a peer that sends requests and reads nothing holds at most
    // the cap plus the replies of requests already running. While requests wait, reading
    // pauses, which bounds the waiting list by what was read before the pause (one or two
    // reads).
    void run_gate_locked(std::vector<detail::InFrame>& ready) {
      const auto& opt = server_->options_;
      while (!waiting_.empty() && !draining_ &&
             (in_flight_ < static_cast<int>(opt.num_threads) ||
              (in_flight_ == static_cast<int>(opt.num_threads) && inline_ok(waiting_.front()))) &&
             queued_write_bytes() < opt.max_queued_reply_bytes) {
        ++in_flight_;
        ready.push_back(std::move(waiting_.front()));
        waiting_.pop_front();
      }
      if (waiting_.empty()) {
        if (held_) {
          held_ = false;
          resume_reading();
        }
      } else if (!held_) {
        held_ = true;
        ++server_->read_pauses_;
        pause_reading();
      }
    }

    // Runs requests that passed the gate: all but the last on handler threads; the last
    // here when this is a handler thread or the request may run inline (see run_inline),
    // else on a handler thread too. Each finished request lets the gate release the next
    // (a loop, not recursion, however many wait).
    void run(std::vector<detail::InFrame> ready) {
      while (!ready.empty()) {
        const bool here =
            !server_->io_.get_executor().running_in_this_thread() || inline_ok(ready.back());
        for (std::size_t i = 0; i + (here ? 1 : 0) < ready.size(); ++i)
          boost::asio::post(server_->pool_,
                            [self = shared_from_this(), f = std::move(ready[i])]() mutable {
                              std::vector<detail::InFrame> one;
                              one.push_back(std::move(f));
                              self->run(std::move(one));
                            });
        if (!here) return;
        detail::InFrame f = std::move(ready.back());
        ready.clear();
        handle(f);
        bool close = false;
        {
          std::lock_guard lock(gate_mu_);
          --in_flight_;
          run_gate_locked(ready);
          close = draining_ && in_flight_ == 0;
        }
        if (close) close_after_flush("server stopping");
      }
    }

    bool inline_ok(const detail::InFrame& f) const {
      const auto& quick = server_->options_.run_inline;
      return quick && !f.error && quick(f.header.type, f.header.payload_bytes);
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
    }

    Reply run_handler(const Request& req) {
      // Off, the span costs one load: no name built, no bytes counted on this hot path.
      const bool traced = trace::enabled();
      trace::Span span(traced ? msg_type_name(req.type) : std::string(), "server");
      if (traced) span.arg("request_bytes", static_cast<std::int64_t>(req.body.size_bytes()));
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
    boost::asio::steady_timer handshake_timer_;  // cancelled under gate_mu_
    detail::Nonce nonce_;
    std::atomic<bool> authenticated_{false};  // written under the server's lock
    // The gate (gate_mu_; lock order: server mu_, then gate_mu_, then the stream's).
    mutable std::mutex gate_mu_;
    std::deque<detail::InFrame> waiting_;  // read, not yet started
    int in_flight_ = 0;                    // started, reply not yet queued
    bool held_ = false;                    // reading paused because requests wait
    bool draining_ = false;
  };

  // Accept back-off when the process runs out of descriptors (or kernel memory): the
  // pending connection stays in the backlog, so the listener is readable again at once
  // and retrying immediately would spin a core for as long as the shortage lasts.
  static constexpr std::chrono::milliseconds accept_backoff_first{50};
  static constexpr std::chrono::milliseconds accept_backoff_max{1000};

  static bool out_of_resources(const boost::system::error_code& ec) {
    return ec == boost::asio::error::no_descriptors ||
           ec == boost::system::errc::too_many_files_open_in_system ||
           ec == boost::asio::error::no_buffer_space || ec == boost::asio::error::no_memory;
  }

  void accept_locked() {
    acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
      std::lock_guard lock(mu_);
      if (stop_requested_ || !acceptor_.is_open()) return;
      if (ec && out_of_resources(ec)) {
        back_off_accept_locked(ec);
        return;
      }
      // Other accept errors concern one connection (e.g. reset before accept): go on.
      if (!ec) {
        if (accept_backoff_.count() != 0) {
          options_.log("accepting connections again");
          accept_backoff_ = std::chrono::milliseconds{0};
        }
        admit_locked(std::move(socket));
      }
      accept_locked();
    });
  }

  // Retries accepting after a growing delay; logs once per episode (until an accept works).
  void back_off_accept_locked(const boost::system::error_code& ec) {
    ++accept_failures_;
    if (accept_backoff_.count() == 0) {
      accept_backoff_ = accept_backoff_first;
      options_.log("cannot accept connections: " + ec.message() + "; retrying after " +
                   std::to_string(accept_backoff_first.count()) + " ms, backing off to " +
                   std::to_string(accept_backoff_max.count()) +
                   " ms, while open connections are served");
    }
    accept_timer_.expires_after(accept_backoff_);
    accept_backoff_ = std::min(accept_backoff_ * 2, accept_backoff_max);
    accept_timer_.async_wait([this](const boost::system::error_code& e) {
      std::lock_guard lock(mu_);
      if (e || stop_requested_ || !acceptor_.is_open()) return;
      accept_locked();
    });
  }

  // Starts a session for an accepted socket, or closes it at once when too many
  // connections have not completed their hello (each holds a read buffer and a timer).
  void admit_locked(tcp::socket socket) {
    if (unauthenticated_ >= options_.max_unauthenticated) {
      ++refused_connections_;
      if (!refusing_) {
        refusing_ = true;
        options_.log("closing new connections: " + std::to_string(unauthenticated_) +
                     " have not completed the hello (max_unauthenticated)");
      }
      boost::system::error_code e;
      socket.close(e);
      return;
    }
    boost::system::error_code e;
    const auto remote = socket.remote_endpoint(e);
    const std::string peer = e ? std::string("unknown peer")
                               : Endpoint{remote.address().to_string(), remote.port()}.to_string();
    const int id = next_connection_++;
    auto s = std::make_shared<Session>(
        this, id, std::move(socket),
        detail::StreamLimits{
            .max_frame_bytes = std::min(options_.max_hello_bytes, options_.max_frame_bytes),
            .read_timeout = options_.read_timeout,
            .subject = "client " + peer + " (connection " + std::to_string(id) + ")",
            .pause_after_first_frame = true});
    sessions_.emplace(id, s);
    ++unauthenticated_;
    s->start();
  }

  void left_unauthenticated_locked() {
    if (unauthenticated_ > 0) --unauthenticated_;
    if (refusing_ && unauthenticated_ < options_.max_unauthenticated) {
      refusing_ = false;
      options_.log("accepting new connections again: " + std::to_string(unauthenticated_) +
                   " have not completed the hello");
    }
  }

  void forget(int id, const std::string& reason, bool clean) {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    if (!clean && !stop_requested_) options_.log(it->second->subject() + ": dropped: " + reason);
    if (!it->second->authenticated()) left_unauthenticated_locked();
    retired_peak_queued_ = std::max(retired_peak_queued_, it->second->peak_queued_write_bytes());
    sessions_.erase(it);
    check_drained_locked();
  }

  // Forgets every session at once (stop()); keeps their peaks for stats().
  void retire_all_locked() {
    for (const auto& [id, s] : sessions_)
      retired_peak_queued_ = std::max(retired_peak_queued_, s->peak_queued_write_bytes());
    sessions_.clear();
    unauthenticated_ = 0;
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
  // The socket thread's context: concurrency hint 1 (one thread runs it), so Asio never
  // wakes a second thread to watch the sockets while a handler runs.
  boost::asio::io_context io_{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{
      io_.get_executor()};
  boost::asio::io_context pool_;  // the handler threads'
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> pool_work_{
      pool_.get_executor()};
  tcp::acceptor acceptor_;
  boost::asio::steady_timer drain_timer_;
  boost::asio::steady_timer accept_timer_;  // accept back-off (mu_)
  mutable std::mutex mu_;
  std::mutex join_mu_;
  std::condition_variable stopped_cv_;
  std::map<int, std::shared_ptr<Session>> sessions_;
  std::vector<std::thread> threads_;
  std::uint16_t port_ = 0;
  int next_connection_ = 0;
  bool started_ = false, stop_requested_ = false, drained_ = false;
  // Limits and their counts (mu_, except the atomics, which sessions bump lock-free).
  std::size_t unauthenticated_ = 0;
  bool refusing_ = false;                        // closing new connections; logged once per episode
  std::chrono::milliseconds accept_backoff_{0};  // next back-off delay; 0 = accepting
  std::uint64_t refused_connections_ = 0, accept_failures_ = 0, retired_peak_queued_ = 0;
  std::atomic<std::uint64_t> read_pauses_{0}, refused_hello_frames_{0}, refused_tls_handshakes_{0};
  TlsMode tls_mode_ = TlsMode::off;
  std::unique_ptr<detail::TlsContext> tls_;  // null when tls_mode_ is off
};

}  // namespace distgraph
