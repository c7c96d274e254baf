// AsioTransport: the TCP client transport, one connection per server, requests pipelined by ID.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <string>
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
#include "distgraph/transport/concepts.hpp"
#include "distgraph/transport/detail/frame_stream.hpp"
#include "distgraph/transport/detail/handshake.hpp"
#include "distgraph/transport/endpoint.hpp"
#include "distgraph/transport/frame.hpp"
#include "distgraph/transport/message.hpp"
#include "distgraph/transport/pending_call.hpp"

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
  /// A reply must arrive whole within this time of its first byte.
  std::chrono::milliseconds read_timeout{30000};
};

/// A Transport over TCP: one connection per server (TCP_NODELAY), all served by one
/// background io thread. send() is thread-safe and never waits for the network: it assigns
/// a request ID, registers the call and writes the frame (directly from the caller's thread
/// when the socket takes it, else queued for a gather write on the io thread); replies are
/// matched by ID, so any number of requests may be in flight per server and complete in
/// any order. Part data is never copied on send; reply parts are views into one 8-aligned
/// buffer per reply, kept alive by the reply.
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
  /// server refuses the secret or (with a secret) fails to prove it, ProtocolError on a
  /// version mismatch, InvalidArgument for an empty list.
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

  // One server's connection: the handshake, then pending calls matched by request ID.
  class Connection : public detail::FrameStream<Connection> {
   public:
    Connection(int index, Endpoint ep, tcp::socket socket, const AsioTransportOptions& opt)
        : FrameStream(std::move(socket), detail::StreamLimits{opt.max_frame_bytes, opt.read_timeout,
                                                              "server " + std::to_string(index) +
                                                                  " (" + ep.to_string() + ")"}),
          endpoint(std::move(ep)),
          secret_(opt.secret) {}

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
    void on_closed(const std::string& reason, bool) { fail_all(nullptr, reason); }

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
    }

    const Endpoint endpoint;

   private:
    enum class Stage { server_hello, hello_reply, ready, failed };

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
          std::vector<std::byte> head;
          if (!secret_.empty()) {
            const auto proof = detail::client_proof(secret_, server_nonce_, client_nonce_);
            head = detail::encode_client_hello(client_nonce_, &proof);
          } else {
            head = detail::encode_client_hello(client_nonce_, nullptr);
          }
          stage_ = Stage::hello_reply;
          write(
              encode_frame(FrameHeader{.type = MsgType::hello}, Message::owning(std::move(head))));
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
        close("handshake failed");
      }
    }
    void fail_handshake(std::exception_ptr e) {
      if (handshake_settled_.exchange(true)) return;
      ready_.set_exception(std::move(e));
    }

    std::string secret_;
    Stage stage_ = Stage::server_hello;
    detail::Nonce server_nonce_{}, client_nonce_{};
    std::promise<void> ready_;
    std::atomic<bool> handshake_settled_{false};
    std::mutex calls_mu_;
    std::unordered_map<std::uint64_t, std::shared_ptr<detail::CallState>> calls_;
    std::string lost_reason_;
  };

  // Connects one socket with retry and backoff until the deadline (io thread only).
  struct Connector : std::enable_shared_from_this<Connector> {
    Connector(boost::asio::io_context& io, tcp::resolver::results_type eps, Deadline d,
              std::string who)
        : socket(io), timer(io), endpoints(std::move(eps)), deadline(d), subject(std::move(who)) {}

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
        result.set_value(std::move(socket));
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
    std::promise<tcp::socket> result;
  };

  struct Impl {
    Impl(std::vector<Endpoint> servers, AsioTransportOptions opt) : options(std::move(opt)) {
      if (servers.empty())
        throw InvalidArgument("AsioTransport: no servers given; expected at least one");
      io_thread = std::thread([this] { io.run(); });
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
      std::vector<std::future<tcp::socket>> sockets;
      for (std::size_t i = 0; i < servers.size(); ++i) {
        const std::string who = "server " + std::to_string(i) + " (" + servers[i].to_string() + ")";
        tcp::resolver resolver(io);
        boost::system::error_code ec;
        auto eps = resolver.resolve(servers[i].host, std::to_string(servers[i].port), ec);
        if (ec) throw PeerLost(who + ": cannot resolve host: " + ec.message());
        auto c = std::make_shared<Connector>(io, std::move(eps), deadline, who);
        sockets.push_back(c->result.get_future());
        boost::asio::post(io, [c] { c->attempt(); });
      }
      std::vector<std::future<void>> ready;
      for (std::size_t i = 0; i < servers.size(); ++i) {
        // The connector's own timer ends each attempt at the deadline; the margin covers
        // the io thread's hand-off.
        if (sockets[i].wait_until(deadline + std::chrono::seconds(1)) != std::future_status::ready)
          throw TimeoutError("server " + std::to_string(i) + " (" + servers[i].to_string() +
                             "): could not connect within " +
                             std::to_string(options.connect_timeout.count()) + " ms");
        auto c = std::make_shared<Connection>(static_cast<int>(i), servers[i], sockets[i].get(),
                                              options);
        ready.push_back(c->handshake_done());
        conns.push_back(c);
        c->start_reading();
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
      }
      return call;
    }

    AsioTransportOptions options;
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
