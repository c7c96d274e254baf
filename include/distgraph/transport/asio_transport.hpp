// AsioTransport: the TCP client transport, one connection per server, requests pipelined by ID.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

// Asio after <utility>: Boost 1.74 under C++20 needs it (see docs/STYLE.md).
#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "distgraph/core/deadline.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/core/thread_priority.hpp"
#include "distgraph/core/trace.hpp"
#include "distgraph/transport/concepts.hpp"
#include "distgraph/transport/detail/frame_stream.hpp"
#include "distgraph/transport/detail/handshake.hpp"
#include "distgraph/transport/endpoint.hpp"
#include "distgraph/transport/frame.hpp"
#include "distgraph/transport/message.hpp"
#include "distgraph/transport/pending_call.hpp"
#include "distgraph/transport/tls.hpp"

namespace distgraph {

/// How an AsioTransport connects and what it accepts.
struct AsioTransportOptions {
  /// Overall time to connect to every server and finish the handshakes; refused connects
  /// are retried with backoff (20 ms doubling to 1 s) until then, so trainers may start
  /// before their servers.
  std::chrono::milliseconds connect_timeout{30000};
  std::chrono::milliseconds call_timeout{30000};            ///< deadline of call() without one
  std::uint64_t max_frame_bytes = default_max_frame_bytes;  ///< largest reply payload
  std::string secret{};  ///< shared secret to prove (and require the server to prove); "" = none
  /// TLS 1.3 to every server, in the mode the servers use (tls.hpp): a PSK derived from the
  /// secret, or certificates. A server in another mode fails the connect with AuthError.
  TlsOptions tls{};
  /// A reply must arrive whole within this time of its first byte.
  std::chrono::milliseconds read_timeout{30000};
  /// The I/O thread runs under SCHED_BATCH (schedule_as_batch, core/thread_priority.hpp):
  /// a reply streaming in waits for the running thread's next scheduling point instead of
  /// preempting it (the caller's training step, on a busy machine), and is then read in
  /// fewer, larger pieces. false: it keeps the policy of the thread that made the transport.
  bool sched_batch = true;
};

/// A Transport over TCP: one connection per server (TCP_NODELAY). send() is thread-safe
/// and never waits for the network: it assigns a request ID, registers the call and writes
/// the frame (directly from the caller's thread when the socket takes it, else queued for
/// a gather write on the background io thread); replies are matched by ID, so any number
/// of requests may be in flight per server and complete in any order. Replies are read by
/// the callers waiting for them (PendingCall::get): one waiting caller per connection
/// reads it and completes every reply that arrives, its own and others', while the
/// connection's other waiters sleep until theirs is in or the reader leaves and one of
/// them takes over. A small round trip thus costs one wake-up, as a blocking socket does
/// (the io thread does not watch the socket meanwhile, so it is not woken either).
/// After a large request (16 KiB or more), or when a reader leaves with calls pending, the
/// io thread reads the connection while no caller does, so a large reply streams in while
/// its caller still works; a small reply nobody waits for stays in the socket until its
/// caller (or ready()) reads it. Part data is never copied on send; reply parts are views into
/// one 8-aligned buffer per reply, kept alive by the reply.
///
/// Failure model: a connection that closes or resets fails every call pending on it with
/// PeerLost naming the server index and endpoint, and later sends to that server fail
/// fast with PeerLost (there is no reconnect: a lost server means a lost partition). A
/// silent server surfaces as TimeoutError from PendingCall::get at the caller's deadline;
/// the abandoned call is forgotten and a late reply is discarded. A reply frame above
/// max_frame_bytes or with a bad header fails every pending call on that server with
/// ProtocolError and closes the connection.
class AsioTransport {
 public:
  using policy_category = transport_tag;

  /// Connects to `servers` (server i = servers[i]) and completes each handshake, in
  /// parallel, blocking until all are ready. Throws TimeoutError naming the first server
  /// not reached within connect_timeout (with the last connect error), AuthError when a
  /// server refuses the secret or (with a secret) fails to prove it, or when its TLS mode
  /// differs or its TLS handshake fails (a wrong key, a certificate the CA did not sign),
  /// ProtocolError on a version mismatch, InvalidArgument for an empty list or a TLS file
  /// that cannot be used.
  explicit AsioTransport(std::vector<Endpoint> servers, AsioTransportOptions options = {})
      : impl_(std::make_unique<Impl>(std::move(servers), std::move(options))) {}
  AsioTransport(AsioTransport&&) noexcept = default;
  AsioTransport& operator=(AsioTransport&&) noexcept = default;
  /// Closes every connection (pending calls fail with PeerLost) and joins the io thread.
  ~AsioTransport() = default;

  int num_servers() const noexcept { return static_cast<int>(impl_->conns.size()); }

  /// Sends `m` to `server` and returns its pending reply; never blocks on the network.
  /// Thread-safe. The memory `m` views must stay valid until the call completes, times out
  /// or fails (`keep_alive` is held until the frame is written). A payload above
  /// max_frame_bytes fails the call with FrameTooLarge without sending; a lost server
  /// fails it with PeerLost. Throws IdOutOfRange for a bad server index and
  /// InvalidArgument for more than max_message_parts parts.
  PendingCall send(int server, MsgType type, Message m) {
    return impl_->send(server, type, std::move(m));
  }

  /// send() then get(deadline): blocks until the reply or `deadline` (TimeoutError).
  Reply call(int server, MsgType type, Message m, Deadline deadline) {
    return send(server, type, std::move(m)).get(deadline);
  }
  /// call() with the default call_timeout.
  Reply call(int server, MsgType type, Message m) {
    return call(server, type, std::move(m), deadline_in(impl_->options.call_timeout));
  }

  const Endpoint& endpoint(int server) const { return impl_->conn(server).endpoint; }
  /// Whether the connection to `server` is still up. Thread-safe.
  bool connected(int server) const { return impl_->conn(server).is_open(); }
  const AsioTransportOptions& options() const noexcept { return impl_->options; }

 private:
  using tcp = boost::asio::ip::tcp;

  // One server's connection: the handshake (read by the io thread), then pending calls
  // matched by request ID, their replies read by their callers.
  class Connection : public detail::FrameStream<Connection>, public detail::ReplyReader {
   public:
    /// `tls`: the client's TLS context, null when TLS is off.
    Connection(int index, Endpoint ep, tcp::socket socket, const AsioTransportOptions& opt,
               std::shared_ptr<const detail::TlsContext> tls)
        : FrameStream(
              std::move(socket),
              detail::StreamLimits{
                  .max_frame_bytes = opt.max_frame_bytes,
                  .read_timeout = opt.read_timeout,
                  .subject = "server " + std::to_string(index) + " (" + ep.to_string() + ")",
                  // With TLS nothing may be read past the server's hello before the TLS
                  // handshake takes the socket.
                  .pause_after_first_frame = tls != nullptr,
                  .hand_over_after_frames = 2}),  // the server's hello and hello reply
          endpoint(std::move(ep)),
          secret_(opt.secret),
          tls_(std::move(tls)) {}

    // Leader/follower per connection: the first waiting caller reads until its own reply
    // is in; the others sleep until theirs is completed by it or it leaves, then one of
    // them reads. Replies for calls nobody waits on yet stay in the socket meanwhile.
    void read_until_done(detail::CallState& s, Deadline deadline) override {
      const auto done = [&] { return s.done.load(std::memory_order_acquire); };
      {
        std::unique_lock lock(reader_mu_);
        // The role is mostly held for a moment (the io thread finding little or nothing to
        // read): poll for it briefly, yielding the core, before sleeping behind it.
        const auto poll_until = std::min(deadline, std::chrono::steady_clock::now() + role_poll);
        while (reading_ && !done() && std::chrono::steady_clock::now() < poll_until) {
          lock.unlock();
          std::this_thread::yield();
          lock.lock();
        }
        while (reading_) {
          if (done()) return;
          ++followers_;
          const auto st = reader_cv_.wait_until(lock, deadline);
          --followers_;
          if (st == std::cv_status::timeout) return;
        }
        if (done()) return;
        reading_.store(true, std::memory_order_release);
      }
      ReadRole role(*this);
      // Wait in slices: a completion by another thread (fail_all after a close) is seen
      // within one even if no byte arrives to wake the poll.
      constexpr std::chrono::nanoseconds slice = std::chrono::milliseconds(50);
      // Mostly the caller has just sent its request and the reply is not in yet: wait first
      // rather than try a recv that finds nothing (one system call less per round trip).
      bool wait_first = !header_buffered();
      while (!done()) {
        if (wait_first) {
          wait_first = false;
          const auto left = deadline - std::chrono::steady_clock::now();
          if (left > std::chrono::nanoseconds::zero())
            wait_readable(std::min<std::chrono::nanoseconds>(left, slice));
        }
        const auto r = read_now();
        if (r == detail::ReadNow::closed) break;
        if (r == detail::ReadNow::progress) continue;
        const auto left = deadline - std::chrono::steady_clock::now();
        if (left <= std::chrono::nanoseconds::zero()) break;
        wait_readable(std::min<std::chrono::nanoseconds>(left, slice));
      }
    }
    void read_available() override {
      {
        std::lock_guard lock(reader_mu_);
        if (reading_.load(std::memory_order_relaxed)) return;  // the reader completes what comes
        reading_.store(true, std::memory_order_release);
      }
      ReadRole role(*this);
      while (read_now() == detail::ReadNow::progress) {
      }
    }

    // While calls are pending and no caller reads, the io thread reads what arrives, so a
    // reply streams in while its caller still works (a pull's co-located rows). Armed by
    // send() of a large request and by a reader leaving calls pending; a watch that finds a
    // caller reading lapses (measured: re-arming at once, with the io thread's locking
    // beside the reader, made small round trips slower than the old thread hop). Only the
    // watch's own bookkeeping (FrameStream::watch_readable) takes the stream's lock.
    void arm_watch() {
      if (watching_.exchange(true, std::memory_order_acq_rel)) return;
      watch_readable([self = shared_from_this()](const boost::system::error_code& ec) {
        self->watching_.store(false, std::memory_order_release);
        if (ec || self->reading_.load(std::memory_order_acquire)) return;
        if (!self->has_pending()) return;
        self->read_available();
        if (self->has_pending()) self->arm_watch();
      });
    }

    std::future<void> handshake_done() { return ready_.get_future(); }

    // Registers a call; false (with the reason in `lost`) when the connection is gone.
    bool add(std::uint64_t id, std::shared_ptr<detail::CallState> s, std::string& lost) {
      std::lock_guard lock(calls_mu_);
      if (!lost_reason_.empty()) {
        lost = lost_reason_;
        return false;
      }
      calls_.emplace(id, std::move(s));
      return true;
    }
    void forget(std::uint64_t id) {
      std::lock_guard lock(calls_mu_);
      calls_.erase(id);
    }
    std::string lost_reason() {
      std::lock_guard lock(calls_mu_);
      return lost_reason_;
    }

    // FrameStream hooks (io thread).
    void on_frames(std::vector<detail::InFrame>& frames) {
      for (auto& f : frames) {
        if (stage_ != Stage::ready) {
          handshake_step(f);
          continue;
        }
        std::shared_ptr<detail::CallState> s;
        {
          std::lock_guard lock(calls_mu_);
          auto it = calls_.find(f.header.request_id);
          if (it == calls_.end()) continue;  // abandoned after a timeout: discard
          s = std::move(it->second);
          calls_.erase(it);
        }
        if (f.error)
          PendingCall::fail(*s, f.error);
        else
          PendingCall::complete(*s, Reply{f.header.status, std::move(f.message)});
      }
      wake_followers();
    }
    void on_bad_header(std::exception_ptr e, std::optional<std::uint64_t>) {
      std::string what = "bad reply header";
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        what = x.what();
      }
      fail_all(e, what);  // the typed error (FrameTooLarge, ProtocolError) for every call
      close(what);
    }
    void on_closed(const std::string& reason, bool) {
      // In TLS 1.3 the server checks the client's certificate after the client's side of
      // the handshake is done: its refusal arrives as an alert in place of the hello reply.
      static constexpr std::string_view rejected = "TLS record rejected: ";
      if (stage_ == Stage::hello_reply && reason.compare(0, rejected.size(), rejected) == 0)
        fail_handshake(std::make_exception_ptr(tls_refusal(reason.substr(rejected.size()))));
      fail_all(nullptr, reason);
    }

    // Fails the handshake and every pending call; `e` null = PeerLost per call.
    void fail_all(std::exception_ptr e, const std::string& reason) {
      std::unordered_map<std::uint64_t, std::shared_ptr<detail::CallState>> calls;
      {
        std::lock_guard lock(calls_mu_);
        if (lost_reason_.empty()) lost_reason_ = subject() + ": connection lost: " + reason;
        calls.swap(calls_);
      }
      fail_handshake(e ? e
                       : std::make_exception_ptr(PeerLost(
                             subject() + ": connection lost during the handshake: " + reason)));
      for (auto& [id, s] : calls)
        PendingCall::fail(*s, e ? e
                                : std::make_exception_ptr(PeerLost(
                                      s->description + ": connection lost (" + reason + ")")));
      wake_followers();
    }

    const Endpoint endpoint;

   private:
    enum class Stage { server_hello, hello_reply, ready, failed };

    // Gives the read role back when the reader leaves (also by an exception from a hook)
    // and wakes the followers, one of which takes it over.
    struct ReadRole {
      Connection& c;
      explicit ReadRole(Connection& conn) : c(conn) {}
      ReadRole(const ReadRole&) = delete;
      ReadRole& operator=(const ReadRole&) = delete;
      ~ReadRole() {
        bool wake = false;
        {
          std::lock_guard lock(c.reader_mu_);
          c.reading_.store(false, std::memory_order_release);
          wake = c.followers_ > 0;
        }
        if (wake)
          c.reader_cv_.notify_all();
        else if (c.has_pending())
          c.arm_watch();  // nobody waits: the io thread reads what is still to come
      }
    };

    bool has_pending() {
      std::lock_guard lock(calls_mu_);
      return !calls_.empty();
    }

    // Followers check their own call after every batch of completions.
    void wake_followers() {
      {
        std::lock_guard lock(reader_mu_);
        if (followers_ == 0) return;
      }
      reader_cv_.notify_all();
    }

    void handshake_step(detail::InFrame& f) {
      try {
        if (stage_ == Stage::failed) return;
        if (f.error) std::rethrow_exception(f.error);
        if (f.header.type != MsgType::hello)
          throw ProtocolError(subject() + ": expected hello, got " + msg_type_name(f.header.type));
        if (stage_ == Stage::server_hello) {
          const auto hello = detail::decode_server_hello(f.message.head, subject());
          server_nonce_ = hello.nonce;
          client_nonce_ = detail::random_nonce();
          const TlsMode mine = tls_ ? tls_->mode() : TlsMode::off;
          if (hello.tls != mine) {
            // Tell the server why (in clear, without a proof), then give up here.
            write(encode_frame(
                FrameHeader{.type = MsgType::hello},
                Message::owning(detail::encode_client_hello(client_nonce_, nullptr, mine))));
            close_after_flush("TLS modes differ");
            throw AuthError(subject() + ": " + tls_mismatch(hello.tls, mine));
          }
          stage_ = Stage::hello_reply;
          if (!tls_) return send_hello();
          start_tls(*tls_, [self = shared_from_this()](const std::string& why) {
            if (why.empty()) {
              self->send_hello();
              return self->resume_reading();
            }
            self->stage_ = Stage::failed;
            self->fail_handshake(std::make_exception_ptr(self->tls_refusal(why)));
            self->close("TLS handshake failed");
          });
          return;
        }
        if (f.header.status == Status::unauthorized)
          throw AuthError(subject() + ": server refused the handshake: " +
                          Reply{f.header.status, f.message}.text());
        if (f.header.status != Status::ok)
          throw ProtocolError(subject() + ": handshake failed: " + status_name(f.header.status) +
                              ": " + Reply{f.header.status, f.message}.text());
        if (!secret_.empty()) {
          const auto expected = detail::server_proof(secret_, server_nonce_, client_nonce_);
          if (!detail::constant_time_equal(expected, f.message.head))
            throw AuthError(subject() +
                            ": server did not prove the shared secret; refusing "
                            "to talk to it");
        }
        stage_ = Stage::ready;
        if (!handshake_settled_.exchange(true)) ready_.set_value();
      } catch (...) {
        stage_ = Stage::failed;
        fail_handshake(std::current_exception());
        close_after_flush("handshake failed");  // a mismatch's own hello still goes out
      }
    }
    // The AuthError of a failed TLS handshake, with a hint at the usual cause.
    AuthError tls_refusal(const std::string& why) const {
      return AuthError(subject() + ": TLS handshake failed: " + why +
                       (tls_->mode() == TlsMode::psk
                            ? " (do both sides use the same shared secret?)"
                            : " (is each side's certificate signed by the CA the other trusts, "
                              "and within its dates?)"));
    }
    void send_hello() {
      std::vector<std::byte> head;
      const TlsMode mine = tls_ ? tls_->mode() : TlsMode::off;
      if (!secret_.empty()) {
        const auto proof = detail::client_proof(secret_, server_nonce_, client_nonce_);
        head = detail::encode_client_hello(client_nonce_, &proof, mine);
      } else {
        head = detail::encode_client_hello(client_nonce_, nullptr, mine);
      }
      write(encode_frame(FrameHeader{.type = MsgType::hello}, Message::owning(std::move(head))));
    }
    static std::string tls_mismatch(TlsMode server, TlsMode client) {
      if (client == TlsMode::off)
        return std::string("server requires TLS (") + tls_mode_name(server) +
               "); this client runs with TLS off (--no-tls, or no secret or certificate); "
               "refusing the connection";
      if (server == TlsMode::off)
        return std::string("server runs without TLS (--no-tls); this client requires TLS (") +
               tls_mode_name(client) +
               ") and will not send frames in clear; give both sides the same TLS settings";
      return std::string("server uses TLS with ") + tls_mode_name(server) +
             "; this client uses TLS with " + tls_mode_name(client) +
             "; give both sides the same TLS settings";
    }
    void fail_handshake(std::exception_ptr e) {
      if (handshake_settled_.exchange(true)) return;
      ready_.set_exception(std::move(e));
    }

    std::string secret_;
    std::shared_ptr<const detail::TlsContext> tls_;
    Stage stage_ = Stage::server_hello;
    detail::Nonce server_nonce_{}, client_nonce_{};
    std::promise<void> ready_;
    std::atomic<bool> handshake_settled_{false};
    std::mutex calls_mu_;
    std::unordered_map<std::uint64_t, std::shared_ptr<detail::CallState>> calls_;
    std::string lost_reason_;
    // How long a caller polls for a read role held by another thread before sleeping.
    static constexpr std::chrono::microseconds role_poll{50};
    std::mutex reader_mu_;  // guards reading_ and followers_
    std::condition_variable reader_cv_;
    // A thread holds the read role (written under reader_mu_; read without it by the watch).
    std::atomic<bool> reading_{false};
    std::atomic<bool> watching_{false};  // an io-thread watch is armed
    int followers_ = 0;                  // callers waiting for it
  };

  // Connects one socket with retry and backoff until the deadline (io thread only), then
  // makes its Connection there at once, so that its handshake starts while other servers
  // are still being connected: a server that is up must not time out our hello because
  // another one is slow to load its partition.
  struct Connector : std::enable_shared_from_this<Connector> {
    using Make = std::function<std::shared_ptr<Connection>(tcp::socket)>;
    Connector(boost::asio::io_context& io, tcp::resolver::results_type eps, Deadline d,
              std::string who, Make make_connection)
        : socket(io),
          timer(io),
          endpoints(std::move(eps)),
          deadline(d),
          subject(std::move(who)),
          make(std::move(make_connection)) {}

    void attempt() {
      socket = tcp::socket(socket.get_executor());
      in_progress = true;
      timer.expires_at(deadline);
      timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
        if (!ec && self->in_progress) {
          boost::system::error_code ignored;
          self->socket.close(ignored);
        }
      });
      boost::asio::async_connect(
          socket, endpoints,
          [self = shared_from_this()](const boost::system::error_code& ec, const tcp::endpoint&) {
            self->done(ec);
          });
    }
    void done(const boost::system::error_code& ec) {
      in_progress = false;
      timer.cancel();
      if (!ec) {
        try {
          result.set_value(make(std::move(socket)));
        } catch (...) {
          result.set_exception(std::current_exception());
        }
        return;
      }
      if (ec != boost::asio::error::operation_aborted) last_error = ec.message();
      if (std::chrono::steady_clock::now() + backoff >= deadline) {
        result.set_exception(std::make_exception_ptr(TimeoutError(
            subject +
            ": could not connect within the connect timeout; last error: " + last_error)));
        return;
      }
      timer.expires_after(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
      timer.async_wait([self = shared_from_this()](const boost::system::error_code& e) {
        if (!e) self->attempt();
      });
    }

    tcp::socket socket;
    boost::asio::steady_timer timer;
    tcp::resolver::results_type endpoints;
    Deadline deadline;
    std::string subject, last_error = "none";
    std::chrono::milliseconds backoff{20};
    bool in_progress = false;
    Make make;
    std::promise<std::shared_ptr<Connection>> result;
  };

  // Requests of at least this many payload bytes arm the io thread's background read.
  static constexpr std::uint64_t background_read_request_bytes = 16 * 1024;

  struct Impl {
    Impl(std::vector<Endpoint> servers, AsioTransportOptions opt) : options(std::move(opt)) {
      if (servers.empty())
        throw InvalidArgument("AsioTransport: no servers given; expected at least one");
      check_tls_options(options.tls);
      if (const TlsMode m = tls_mode(options.tls, options.secret); m != TlsMode::off)
        tls = std::make_shared<const detail::TlsContext>(m, false, options.tls, options.secret);
      io_thread = std::thread([this] {
        trace::name_thread("client-io");
        if (options.sched_batch) schedule_as_batch();
        io.run();
      });
      try {
        connect_all(servers);
      } catch (...) {
        shutdown();
        throw;
      }
    }
    ~Impl() { shutdown(); }

    void connect_all(const std::vector<Endpoint>& servers) {
      const Deadline deadline = deadline_in(options.connect_timeout);
      std::vector<std::future<std::shared_ptr<Connection>>> made;
      for (std::size_t i = 0; i < servers.size(); ++i) {
        const std::string who = "server " + std::to_string(i) + " (" + servers[i].to_string() + ")";
        tcp::resolver resolver(io);
        boost::system::error_code ec;
        auto eps = resolver.resolve(servers[i].host, std::to_string(servers[i].port), ec);
        if (ec) throw PeerLost(who + ": cannot resolve host: " + ec.message());
        auto make = [this, i, ep = servers[i]](tcp::socket socket) {
          auto c = std::make_shared<Connection>(static_cast<int>(i), ep, std::move(socket), options,
                                                tls);
          c->start_reading();
          return c;
        };
        auto c = std::make_shared<Connector>(io, std::move(eps), deadline, who, std::move(make));
        made.push_back(c->result.get_future());
        boost::asio::post(io, [c] { c->attempt(); });
      }
      std::vector<std::future<void>> ready;
      for (std::size_t i = 0; i < servers.size(); ++i) {
        // The connector's own timer ends each attempt at the deadline; the margin covers
        // the io thread's hand-off.
        if (made[i].wait_until(deadline + std::chrono::seconds(1)) != std::future_status::ready)
          throw TimeoutError("server " + std::to_string(i) + " (" + servers[i].to_string() +
                             "): could not connect within " +
                             std::to_string(options.connect_timeout.count()) + " ms");
        conns.push_back(made[i].get());
        ready.push_back(conns.back()->handshake_done());
      }
      for (std::size_t i = 0; i < conns.size(); ++i) {
        if (ready[i].wait_until(deadline) != std::future_status::ready)
          throw TimeoutError(conns[i]->subject() + ": no handshake within " +
                             std::to_string(options.connect_timeout.count()) + " ms");
        ready[i].get();
      }
    }

    void shutdown() {
      for (auto& c : conns) c->close("transport shut down");
      work.reset();
      io.stop();
      if (io_thread.joinable()) io_thread.join();
      // on_closed hooks may not have run after stop(): fail what is still pending here.
      for (auto& c : conns) c->fail_all(nullptr, "transport shut down");
    }

    Connection& conn(int server) const {
      if (server < 0 || server >= static_cast<int>(conns.size()))
        throw IdOutOfRange("server", server, 0, static_cast<std::int64_t>(conns.size()));
      return *conns[static_cast<std::size_t>(server)];
    }

    PendingCall send(int server, MsgType type, Message m) {
      auto& c = conn(server);
      const std::uint64_t id = next_id.fetch_add(1, std::memory_order_relaxed);
      auto s = PendingCall::make_state(c.subject() + ": " + msg_type_name(type) + " #" +
                                       std::to_string(id));
      PendingCall call(s);
      const std::uint64_t bytes = message_payload_bytes(m);
      if (bytes > options.max_frame_bytes) {
        PendingCall::fail(*s, std::make_exception_ptr(
                                  FrameTooLarge(s->description, bytes, options.max_frame_bytes)));
        return call;
      }
      s->on_abandon = [w = std::weak_ptr<Connection>(c.shared_from_this()), id] {
        if (auto p = w.lock()) p->forget(id);
      };
      s->reader = std::static_pointer_cast<detail::ReplyReader>(c.shared_from_this());
      std::string lost;
      if (!c.add(id, s, lost)) {
        PendingCall::fail(*s, std::make_exception_ptr(PeerLost(s->description + ": " + lost)));
        return call;
      }
      if (!c.write(encode_frame(FrameHeader{.type = type, .request_id = id}, std::move(m)))) {
        c.forget(id);
        const std::string why = c.lost_reason();
        PendingCall::fail(
            *s, std::make_exception_ptr(
                    PeerLost(s->description + ": " + (why.empty() ? "connection closed" : why))));
        return call;
      }
      // A large request (a pull of many rows) likely has a large reply, worth reading in
      // the background while the caller still works; arming costs a small round trip
      // about 2-3 us (bench_transport), so small requests leave it to their caller.
      if (bytes >= background_read_request_bytes) c.arm_watch();
      return call;
    }

    AsioTransportOptions options;
    std::shared_ptr<const detail::TlsContext> tls;  // null when TLS is off
    boost::asio::io_context io{1};  // one io thread: lets Asio skip cross-thread wakeups
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{
        io.get_executor()};
    std::thread io_thread;
    std::vector<std::shared_ptr<Connection>> conns;
    std::atomic<std::uint64_t> next_id{1};
  };

  std::unique_ptr<Impl> impl_;
};

static_assert(Transport<AsioTransport>);

}  // namespace distgraph
