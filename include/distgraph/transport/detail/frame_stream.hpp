// FrameStream: one TCP connection that reads and writes frames; shared by server and client.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// Asio after <utility>: Boost 1.74 under C++20 needs it (see docs/STYLE.md).
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "distgraph/core/error.hpp"
#include "distgraph/transport/detail/tls_context.hpp"
#include "distgraph/transport/frame.hpp"

namespace distgraph::detail {

/// A frame as read: its header and decoded message, or the decode error (the stream is
/// still in sync after a bad payload, since the header delimited it).
struct InFrame {
  FrameHeader header;
  Message message;
  std::exception_ptr error;
};

struct StreamLimits {
  /// Largest payload a frame may declare; checked before anything is allocated for it.
  /// A server starts a connection at its hello limit and raises it after the handshake
  /// (FrameStream::set_max_frame_bytes).
  std::uint64_t max_frame_bytes = default_max_frame_bytes;
  /// A frame must arrive whole within this time of its first byte (progress does not
  /// extend it, so a peer trickling bytes cannot hold a connection open for ever).
  std::chrono::milliseconds read_timeout{30000};
  std::string subject;  ///< names the peer in errors and logs
  /// Pause reading after the first frame (a server's hello): nothing behind it is parsed
  /// under the hello's limit before the handshake decides and calls resume_reading().
  bool pause_after_first_frame = false;
  /// Stop the io threads' read chain for good after this many frames (0 = never): from
  /// then on the owner's threads read with read_now() (a client after its handshake, whose
  /// callers read their own replies).
  std::uint32_t hand_over_after_frames = 0;
};

/// What FrameStream::read_now() found.
enum class ReadNow { progress, would_block, closed };

/// A TCP connection carrying frames, the base of a server session and a client connection
/// (CRTP: `Derived` provides the hooks below). Reads run as one chain (never two reads at
/// once), so the read state needs no lock; everything that touches the socket object or
/// the write queue holds `mu_`, which makes write() and close() callable from any thread
/// while several io threads run the context.
///
/// Reads go into a 64 KiB buffer that may hold several small frames (one syscall for a
/// burst); a payload larger than what is buffered gets its own 8-aligned buffer and the
/// rest is read straight into it. Writes first try a non-blocking sendmsg on the caller's
/// thread (no thread hop for a reply or request that fits the socket buffer) and hand what
/// is left to an async gather write, which also sweeps up frames queued meanwhile.
///
/// A client hands reading over to its callers after the handshake
/// (StreamLimits::hand_over_after_frames): the read chain ends, and read_now() plus
/// wait_readable() let one thread at a time read on the caller's own thread, with the same
/// parsing, limits and read deadline, so a reply reaches its caller without a thread hop.
/// The socket then also leaves Asio's reactor until an async write or watch_readable()
/// needs it, so a reply wakes only the thread waiting for it.
///
/// Reading can be paused at a frame boundary (pause_reading/resume_reading): a paused stream
/// parses nothing more, starts no read and has no read deadline armed (the peer is not the
/// one keeping a frame waiting), so what a paused peer sends waits in the kernel's socket
/// buffer, not in ours. Bytes queued for writing are counted (queued_write_bytes), which
/// is what a server's back-pressure keys on.
///
/// TLS (start_tls): after the handshake every byte goes through the connection's SSL
/// object, on the same paths: the read chain waits for the socket and reads what SSL can
/// decrypt, read_now() reads on the caller's thread, and write() encrypts on the caller's
/// thread as far as the socket takes it. One SSL object may not be used by two threads at
/// once, so every SSL call holds `mu_`. SSL may hold decrypted bytes the socket no longer
/// signals, so a reader that stopped short of "would block" reads again before it waits.
///
/// Hooks, called on an io thread: `on_frames(std::vector<InFrame>&)` for each batch in
/// order (the next read is already started, so batches of one stream may overlap on
/// different threads); `on_bad_header(std::exception_ptr, std::optional<std::uint64_t>
/// request_id)` once when a header is invalid (reading has stopped); `on_closed(const
/// std::string& reason, bool clean)` once after the socket is closed; optionally
/// `on_queue_shrunk()` after an async write took bytes off the queue (never under the
/// stream's lock, so it may call write() or resume_reading()).
template <class Derived>
class FrameStream : public std::enable_shared_from_this<Derived> {
 public:
  using tcp = boost::asio::ip::tcp;

  FrameStream(tcp::socket socket, StreamLimits limits)
      : sock_(std::move(socket)),
        timer_(sock_.get_executor()),
        limits_(std::move(limits)),
        max_frame_bytes_(limits_.max_frame_bytes),
        pause_after_frame_(limits_.pause_after_first_frame),
        hand_over_left_(limits_.hand_over_after_frames),
        rbuf_(new std::byte[read_buffer_bytes]) {
    fd_ = sock_.native_handle();
    boost::system::error_code ec;
    protocol_ = sock_.local_endpoint(ec).protocol();
    sock_.set_option(tcp::no_delay(true), ec);
    // User-level non-blocking mode up front, so later async initiations never modify the
    // socket's state flags (they only read them) and our own sendmsg never blocks.
    sock_.non_blocking(true, ec);
  }
  FrameStream(const FrameStream&) = delete;
  FrameStream& operator=(const FrameStream&) = delete;

  /// Starts the read chain. Call once, after the object is owned by a shared_ptr.
  void start_reading() { read_more(); }

  /// Queues `f` for sending; returns false (and drops it) when the stream is closed or
  /// closing. Thread-safe; never blocks on the network.
  bool write(OutFrame f) {
    std::lock_guard lock(mu_);
    if (closed_ || close_when_flushed_) return false;
    std::uint64_t sent = 0;
    if (!writing_ && queue_.empty()) {
      sent = send_now(f);
      // With TLS the last records may still wait in the socket BIO: the socket thread
      // sends them once the socket takes more.
      if (sent == f.total_bytes && !(ssl_ && tls_unsent(ssl_.get()) > 0)) return true;
      if (closed_) return false;
      first_skip_ = sent;
    }
    queued_bytes_ += f.total_bytes - sent;
    peak_queued_bytes_ = std::max(peak_queued_bytes_, queued_bytes_);
    queue_.push_back(std::move(f));
    if (!writing_) start_write_locked();
    return true;
  }

  /// Closes the socket now; pending writes are dropped. Thread-safe, idempotent.
  void close(const std::string& reason, bool clean = false) {
    std::lock_guard lock(mu_);
    close_locked(reason, clean);
  }
  /// Closes once everything queued is written; later writes are refused.
  void close_after_flush(const std::string& reason) {
    std::lock_guard lock(mu_);
    if (closed_) return;
    if (!writing_ && queue_.empty()) {
      close_locked(reason, false);
    } else {
      close_when_flushed_ = true;
      flush_reason_ = reason;
    }
  }
  bool is_open() const {
    std::lock_guard lock(mu_);
    return !closed_;
  }
  const std::string& subject() const noexcept { return limits_.subject; }

  /// Frame bytes handed to write() that the socket has not taken yet (what this stream
  /// holds for its peer), and the most it ever held. Thread-safe.
  std::uint64_t queued_write_bytes() const {
    std::lock_guard lock(mu_);
    return queued_bytes_;
  }
  std::uint64_t peak_queued_write_bytes() const {
    std::lock_guard lock(mu_);
    return peak_queued_bytes_;
  }

  /// Sets the largest payload later frame headers may declare. Call while reading is
  /// paused (or before it starts) so no header in flight sees the old limit. Thread-safe.
  void set_max_frame_bytes(std::uint64_t n) noexcept {
    max_frame_bytes_.store(n, std::memory_order_relaxed);
  }

  /// Stops reading at the next frame boundary: frames already parsed are still delivered,
  /// bytes already buffered stay buffered, and no read deadline runs while paused.
  /// Thread-safe; pausing a paused stream does nothing.
  void pause_reading() {
    std::lock_guard lock(mu_);
    paused_ = true;
  }
  /// After the hand-over (StreamLimits::hand_over_after_frames): reads what the socket
  /// holds now without blocking and hands the whole frames to on_frames on this thread.
  /// progress: bytes were read; would_block: none were there; closed: the stream is closed
  /// (now, by EOF or an error, or before). One thread at a time, and only after the hand-over.
  ReadNow read_now() {
    std::size_t n = 0;
    // Whole headers left buffered at the hand-over are parsed before anything is read.
    if (have_header_ || rlen_ < frame_header_bytes) {
      std::lock_guard lock(mu_);
      if (closed_) return ReadNow::closed;
      std::byte* dst =
          have_header_ ? reinterpret_cast<std::byte*>(payload_.get()) + got_ : rbuf_.get() + rlen_;
      const std::size_t room = have_header_ ? static_cast<std::size_t>(header_.payload_bytes - got_)
                                            : read_buffer_bytes - rlen_;
      if (ssl_) {
        const ReadNow t = tls_read_locked(dst, room, n);
        if (t != ReadNow::progress) return t;
      }
      ssize_t r = static_cast<ssize_t>(n);
      while (!ssl_) {
        r = ::recv(fd_, dst, room, MSG_DONTWAIT);
        if (r >= 0 || errno != EINTR) break;
      }
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return ReadNow::would_block;
      if (r <= 0) {
        if (r < 0)
          close_locked(std::string("receive failed: ") + std::strerror(errno), false);
        else if (have_header_ || rlen_ > 0)
          close_locked("connection closed in the middle of a frame", false);
        else
          close_locked("connection closed by peer", true);
        return ReadNow::closed;
      }
      n = static_cast<std::size_t>(r);
    }
    if (have_header_)
      got_ += n;
    else
      rlen_ += n;
    std::vector<InFrame> frames;
    if (!parse_frames(frames)) return ReadNow::closed;
    update_read_timer(have_header_ || rlen_ > 0, !frames.empty());
    if (!frames.empty()) derived().on_frames(frames);
    return ReadNow::progress;
  }
  /// After the hand-over: calls `on_ready(error_code)` on an io thread once the socket has
  /// bytes to read (an error when the stream closes meanwhile). Edge-triggered: bytes that
  /// arrived before the call and were not read since may not trigger it (the owner's
  /// threads read them when they need them). Thread-safe.
  template <class Handler>
  void watch_readable(Handler&& on_ready) {
    std::lock_guard lock(mu_);
    if (closed_ || !enter_reactor_locked()) return;
    ++watches_;
    // The count drops after the handler ran: one that watches again (a large reply still
    // streaming in) keeps the socket in the reactor instead of leaving and re-entering.
    auto run = [self = this->shared_from_this(),
                h = std::forward<Handler>(on_ready)](const boost::system::error_code& ec) mutable {
      h(ec);
      std::lock_guard lk(self->mu_);
      --self->watches_;
      self->leave_reactor_locked();
    };
    // SSL may hold bytes already read from the socket, which no socket event announces.
    if (ssl_ && !tls_read_blocked_)
      boost::asio::post(sock_.get_executor(),
                        [run = std::move(run)]() mutable { run(boost::system::error_code{}); });
    else
      sock_.async_wait(tcp::socket::wait_read, std::move(run));
  }
  /// Blocks until the socket has bytes to read, is closed, or `timeout` passes. Polls a
  /// duplicate of the socket's descriptor, so a close() meanwhile (which shuts the socket
  /// down and so wakes the poll) never leaves it watching a reused descriptor number.
  void wait_readable(std::chrono::nanoseconds timeout) {
    int fd = -1;
    short events = POLLIN;
    {
      std::lock_guard lock(mu_);
      if (closed_) return;
      if (ssl_) {
        if (!tls_read_blocked_) return;  // SSL may have decrypted bytes the socket won't signal
        if (tls_read_wants_write_) events = POLLOUT;
      }
      if (poll_fd_ < 0) poll_fd_ = ::dup(fd_);
      // Out of descriptors: poll the socket itself (a close meanwhile still wakes it).
      fd = poll_fd_ >= 0 ? poll_fd_ : fd_;
    }
    pollfd p{fd, events, 0};
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(timeout);
    const timespec ts{static_cast<time_t>(secs.count()),
                      static_cast<long>((timeout - secs).count())};
    ::ppoll(&p, 1, &ts, nullptr);
  }

  /// After the hand-over, for the thread reading: whether a whole frame header is buffered,
  /// so read_now() would make progress without the socket.
  bool header_buffered() const noexcept { return !have_header_ && rlen_ >= frame_header_bytes; }

  /// Undoes pause_reading(): parses what is buffered, then reads on. Thread-safe.
  void resume_reading() {
    {
      std::lock_guard lock(mu_);
      if (!paused_) return;
      paused_ = false;
      // A chain still running sees the flag itself; only a parked one needs a restart.
      if (!parked_ || closed_) return;
      parked_ = false;
    }
    boost::asio::post(sock_.get_executor(),
                      [self = this->shared_from_this()] { self->parse_buffered(); });
  }

  /// Calls `on_first(byte)` on an io thread with the first byte the peer sent, left unread
  /// (-1 when the connection closed or failed first): lets a server tell a TLS client (a
  /// TLS record starts 0x16) from a plaintext one before reading either way. Call before
  /// the read chain starts.
  template <class Handler>
  void peek_first_byte(Handler&& on_first) {
    std::lock_guard lock(mu_);
    if (closed_) return;
    sock_.async_wait(tcp::socket::wait_read,
                     [self = this->shared_from_this(), h = std::forward<Handler>(on_first)](
                         const boost::system::error_code& ec) mutable {
                       if (ec) return h(-1);
                       unsigned char b = 0;
                       ssize_t r = 0;
                       do {
                         r = ::recv(self->fd_, &b, 1, MSG_PEEK | MSG_DONTWAIT);
                       } while (r < 0 && errno == EINTR);
                       if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                         return self->peek_first_byte(std::move(h));
                       h(r == 1 ? static_cast<int>(b) : -1);
                     });
  }

  /// Runs the TLS handshake as `ctx`'s side (client or server), then calls `done(why)` on an
  /// io thread: `why` empty = from here on every frame is encrypted and authenticated;
  /// otherwise OpenSSL's reason (the caller closes). Call with nothing buffered either way:
  /// before the read chain starts, or while reading is paused with nothing beyond the last
  /// frame, and nothing queued for writing. Not called when the stream closes meanwhile.
  template <class Done>
  void start_tls(const TlsContext& ctx, Done&& done) {
    {
      std::lock_guard lock(mu_);
      if (closed_) return;
      if (writing_ || !queue_.empty() || rlen_ > 0 || have_header_) {
        close_locked("bytes in flight when TLS was to start", false);
        return;
      }
      ssl_ = ctx.make_ssl(fd_);
    }
    tls_handshake_step(std::make_shared<std::decay_t<Done>>(std::forward<Done>(done)));
  }
  /// Whether frames travel through TLS (start_tls() succeeded or is under way).
  bool tls_active() const {
    std::lock_guard lock(mu_);
    return ssl_ != nullptr;
  }

 protected:
  ~FrameStream() {
    if (poll_fd_ >= 0) ::close(poll_fd_);
    if (!in_reactor_ && !closed_) ::close(fd_);
  }
  const StreamLimits& limits() const noexcept { return limits_; }

 private:
  static constexpr std::size_t read_buffer_bytes = 64 * 1024;
  static constexpr std::size_t max_iov = 2 + 2 * max_message_parts;

  Derived& derived() { return static_cast<Derived&>(*this); }

  void read_more() {
    std::lock_guard lock(mu_);
    if (closed_) return;
    auto self = this->shared_from_this();
    if (paused_ || handed_over_) {
      parked_ = !handed_over_;
      disarm_locked();
      return;
    }
    if (!have_header_ && rlen_ >= frame_header_bytes) {
      // A pause ended while the chain was still running: frames left buffered at the
      // pause are parsed before waiting for bytes the peer may never send.
      boost::asio::post(sock_.get_executor(), [self] { self->parse_buffered(); });
      return;
    }
    if (ssl_) {
      // Bytes SSL holds raise no socket event: read them before waiting for more.
      if (!tls_read_blocked_) {
        boost::asio::post(sock_.get_executor(), [self] { self->tls_read_step(); });
        return;
      }
      sock_.async_wait(tls_read_wants_write_ ? tcp::socket::wait_write : tcp::socket::wait_read,
                       [self](const boost::system::error_code& ec) {
                         if (ec)
                           self->on_read(ec, 0, false);
                         else
                           self->tls_read_step();
                       });
      return;
    }
    if (have_header_) {
      // Everything buffered went into the payload; read the rest straight into it.
      auto* dst = reinterpret_cast<std::byte*>(payload_.get()) + got_;
      boost::asio::async_read(sock_, boost::asio::buffer(dst, header_.payload_bytes - got_),
                              [self](const boost::system::error_code& ec, std::size_t n) {
                                self->on_read(ec, n, true);
                              });
    } else {
      sock_.async_read_some(boost::asio::buffer(rbuf_.get() + rlen_, read_buffer_bytes - rlen_),
                            [self](const boost::system::error_code& ec, std::size_t n) {
                              self->on_read(ec, n, false);
                            });
    }
  }

  void on_read(const boost::system::error_code& ec, std::size_t n, bool into_payload) {
    if (ec) {
      const bool eof = ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset;
      const bool mid_frame = have_header_ || rlen_ > 0;
      if (!eof)
        close(ec.message());
      else if (mid_frame)
        close("connection closed in the middle of a frame");
      else
        close("connection closed by peer", true);
      return;
    }
    if (into_payload)
      got_ += n;
    else
      rlen_ += n;
    parse_buffered();
  }

  // The read chain's read with TLS: as much as SSL can decrypt now, into the payload being
  // read or the read buffer; waits again (read_more) when nothing was there.
  void tls_read_step() {
    std::size_t n = 0;
    ReadNow r = ReadNow::closed;
    {
      std::lock_guard lock(mu_);
      if (closed_) return;
      std::byte* dst =
          have_header_ ? reinterpret_cast<std::byte*>(payload_.get()) + got_ : rbuf_.get() + rlen_;
      const std::size_t room = have_header_ ? static_cast<std::size_t>(header_.payload_bytes - got_)
                                            : read_buffer_bytes - rlen_;
      r = tls_read_locked(dst, room, n);
    }
    if (r == ReadNow::closed) return;
    if (r == ReadNow::would_block) return read_more();
    on_read({}, n, have_header_);
  }

  // Reads up to `room` bytes through SSL into `dst` (`got`): progress (some bytes),
  // would_block (none; tls_read_blocked_ says what to wait for) or closed (by EOF or a
  // rejected record: the stream is closed with the reason). mu_ held.
  ReadNow tls_read_locked(std::byte* dst, std::size_t room, std::size_t& got) {
    got = 0;
    if (tls_read_failure_) {
      // A failure found behind good bytes, which went out first: report it now (an SSL
      // object in error would not name it again).
      close_locked(*tls_read_failure_, false);
      return ReadNow::closed;
    }
    while (got < room) {
      const int want = static_cast<int>(std::min<std::size_t>(room - got, INT_MAX));
      // SSL_get_error reads this thread's error queue: an entry left by another
      // connection's failure must not fail this one.
      ERR_clear_error();
      const int r = SSL_read(ssl_.get(), dst + got, want);
      if (r > 0) {
        got += static_cast<std::size_t>(r);
        continue;
      }
      const int err = SSL_get_error(ssl_.get(), r);
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        tls_read_blocked_ = true;
        tls_read_wants_write_ = err == SSL_ERROR_WANT_WRITE;
        return got > 0 ? ReadNow::progress : ReadNow::would_block;
      }
      // A reset counts as the end of the stream, as in clear (on_read).
      const bool eof = err == SSL_ERROR_ZERO_RETURN ||
                       (err == SSL_ERROR_SYSCALL && (errno == 0 || errno == ECONNRESET));
      if (!eof) {
        // What came before the failure is authentic: it goes out first.
        const std::string why = err == SSL_ERROR_SYSCALL
                                    ? std::string("receive failed: ") + std::strerror(errno)
                                    : "TLS record rejected: " + tls_failure_text(ssl_.get(), r);
        if (got > 0) {
          tls_read_failure_ = why;
          break;
        }
        close_locked(why, false);
      } else if (got > 0) {
        break;  // the end repeats on the next read
      } else if (have_header_ || rlen_ > 0) {
        close_locked("connection closed in the middle of a frame", false);
      } else {
        close_locked("connection closed by peer", true);
      }
      return ReadNow::closed;
    }
    tls_read_blocked_ = false;
    return ReadNow::progress;
  }

  // One step of the TLS handshake; waits on the socket for what OpenSSL wants next.
  template <class Done>
  void tls_handshake_step(std::shared_ptr<Done> done) {
    std::string why;
    {
      std::lock_guard lock(mu_);
      if (closed_) return;
      ERR_clear_error();
      const int r = SSL_do_handshake(ssl_.get());
      if (r != 1) {
        const int err = SSL_get_error(ssl_.get(), r);
        if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
          if (!enter_reactor_locked()) return;
          sock_.async_wait(
              err == SSL_ERROR_WANT_READ ? tcp::socket::wait_read : tcp::socket::wait_write,
              [self = this->shared_from_this(), done](const boost::system::error_code& ec) {
                if (!ec) self->tls_handshake_step(done);
              });
          return;
        }
        why = tls_failure_text(ssl_.get(), r);
        if (why.empty()) why = "TLS handshake failed";
      } else {
        why = tls_established_check(ssl_.get());
      }
      // SSL may already hold bytes read with its last flight.
      tls_read_blocked_ = false;
    }
    (*done)(why);
  }

  // Parses every whole frame buffered (up to a pause), starts the next read and hands
  // the frames to the derived class. The read chain's only entry besides on_read.
  void parse_buffered() {
    if (!is_open()) return;
    std::vector<InFrame> frames;
    if (!parse_frames(frames)) return;
    update_read_timer(have_header_ || rlen_ > 0, !frames.empty());
    read_more();
    if (!frames.empty()) derived().on_frames(frames);
  }

  // Moves every whole frame buffered (up to a pause or the hand-over) into `frames`.
  // False after a bad header: reading has stopped and the hooks have run.
  bool parse_frames(std::vector<InFrame>& frames) {
    std::size_t pos = 0;
    for (;;) {
      if (!have_header_) {
        if (rlen_ - pos < frame_header_bytes || reading_paused()) break;
        std::span<const std::byte, frame_header_bytes> h(rbuf_.get() + pos, frame_header_bytes);
        try {
          header_ =
              decode_header(h, max_frame_bytes_.load(std::memory_order_relaxed), limits_.subject);
          // Rounded up to whole words so parts can be viewed as int64/double in place.
          payload_.reset(new std::uint64_t[(header_.payload_bytes + 7) / 8]);
        } catch (...) {
          const auto id = peek_request_id(h);
          stop_reading();
          if (!frames.empty()) derived().on_frames(frames);
          derived().on_bad_header(std::current_exception(), id);
          return false;
        }
        pos += frame_header_bytes;
        have_header_ = true;
        got_ = 0;
      }
      const std::size_t take = static_cast<std::size_t>(
          std::min<std::uint64_t>(rlen_ - pos, header_.payload_bytes - got_));
      std::memcpy(reinterpret_cast<std::byte*>(payload_.get()) + got_, rbuf_.get() + pos, take);
      pos += take;
      got_ += take;
      if (got_ < header_.payload_bytes) break;
      frames.push_back(finish_frame());
      if (pause_after_frame_) {
        pause_after_frame_ = false;
        pause_reading();
      }
      if (hand_over_left_ > 0 && --hand_over_left_ == 0) {
        std::lock_guard lock(mu_);
        handed_over_ = true;
        leave_reactor_locked();
        break;
      }
    }
    if (pos > 0 && pos < rlen_) std::memmove(rbuf_.get(), rbuf_.get() + pos, rlen_ - pos);
    rlen_ -= pos;
    return true;
  }

  InFrame finish_frame() {
    InFrame f;
    f.header = header_;
    have_header_ = false;
    std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(payload_.get()),
                                     header_.payload_bytes);
    try {
      f.message = decode_message(bytes, std::move(payload_), limits_.subject);
    } catch (...) {
      f.error = std::current_exception();
    }
    payload_.reset();
    return f;
  }

  void stop_reading() {
    std::lock_guard lock(mu_);
    have_header_ = false;
    rlen_ = 0;
    disarm_locked();
  }
  bool reading_paused() const {
    std::lock_guard lock(mu_);
    return paused_;
  }

  // The read deadline: armed when a frame's first byte arrives, kept (not extended) while
  // that frame is incomplete, disarmed when nothing is pending. `completed`: this read
  // finished a frame, so a partial one now is a new frame that started in this read.
  void update_read_timer(bool partial, bool completed) {
    std::lock_guard lock(mu_);
    if (closed_) return;
    if (!partial || paused_) {
      disarm_locked();
      return;
    }
    if (armed_ && !completed) return;
    armed_ = true;
    const std::uint64_t gen = ++timer_gen_;
    timer_.expires_after(limits_.read_timeout);
    timer_.async_wait([self = this->shared_from_this(), gen](const boost::system::error_code& ec) {
      if (ec) return;
      std::lock_guard lk(self->mu_);
      if (gen != self->timer_gen_) return;
      self->close_locked("frame incomplete " + std::to_string(self->limits_.read_timeout.count()) +
                             " ms after its first byte",
                         false);
    });
  }
  void disarm_locked() {
    if (!armed_) return;
    armed_ = false;
    ++timer_gen_;
    timer_.cancel();
  }

  // Writes as much of `f` as the socket takes without blocking; returns the bytes sent.
  // Closes the stream on a hard error. Called with mu_ held.
  std::uint64_t send_now(const OutFrame& f) {
    if (ssl_) return tls_send_locked(f, 0);
    std::array<iovec, max_iov> iov;
    std::size_t n = 0;
    for (auto s : f.pieces) {
      if (n == iov.size()) return 0;  // more pieces than expected: let Asio split it
      iov[n++] = {const_cast<std::byte*>(s.data()), s.size()};
    }
    std::uint64_t sent = 0;
    std::size_t first = 0;
    while (first < n) {
      msghdr msg{};
      msg.msg_iov = iov.data() + first;
      msg.msg_iovlen = n - first;
      const ssize_t r = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (r < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        close_locked(std::string("send failed: ") + std::strerror(errno), false);
        return sent;
      }
      sent += static_cast<std::uint64_t>(r);
      auto left = static_cast<std::size_t>(r);
      while (first < n && left >= iov[first].iov_len) left -= iov[first++].iov_len;
      if (first < n) {
        iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
        iov[first].iov_len -= left;
      }
    }
    return sent;
  }

  // With TLS: writes as much of `f` past its first `from` bytes as the socket takes now and
  // returns the bytes written (the rest waits for tls_write_wait_locked; written bytes may
  // still wait in the socket BIO, tls_unsent). Small pieces are
  // copied together into one record's worth (one record and one send per small frame, as
  // sendmsg gathers them); a piece of a record or more goes from its own memory. A write
  // that would block is retried with the same bytes and length, as OpenSSL requires.
  // Closes the stream on a hard error. mu_ held.
  std::uint64_t tls_send_locked(const OutFrame& f, std::uint64_t from) {
    std::uint64_t sent = 0;
    tls_write_wants_read_ = false;
    while (from + sent < f.total_bytes) {
      std::size_t i = 0;
      std::uint64_t off = from + sent;
      while (off >= f.pieces[i].size()) off -= f.pieces[i++].size();
      const std::size_t len = tls_retry_len_ > 0 ? tls_retry_len_
                                                 : static_cast<std::size_t>(std::min<std::uint64_t>(
                                                       f.total_bytes - from - sent, tls_record));
      const std::byte* src = f.pieces[i].data() + off;
      if (f.pieces[i].size() - off < len) {
        if (!tls_stage_) tls_stage_.reset(new std::byte[tls_record]);
        for (std::size_t k = 0; k < len; ++i, off = 0) {
          const std::size_t take =
              std::min<std::size_t>(len - k, static_cast<std::size_t>(f.pieces[i].size() - off));
          std::memcpy(tls_stage_.get() + k, f.pieces[i].data() + off, take);
          k += take;
        }
        src = tls_stage_.get();
      }
      ERR_clear_error();
      const int r = SSL_write(ssl_.get(), src, static_cast<int>(len));
      if (r > 0) {
        tls_retry_len_ = 0;
        sent += static_cast<std::uint64_t>(r);
        continue;
      }
      const int err = SSL_get_error(ssl_.get(), r);
      if (err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ) {
        tls_retry_len_ = len;
        tls_write_wants_read_ = err == SSL_ERROR_WANT_READ;
        break;
      }
      close_locked("TLS send failed: " + tls_failure_text(ssl_.get(), r), false);
      return sent;
    }
    // The records gathered in the socket BIO go out now, as far as the socket takes them.
    if (tls_flush(ssl_.get()) < 0)
      close_locked(std::string("send failed: ") + std::strerror(errno), false);
    return sent;
  }

  // With TLS, the queue is written by tls_send_locked whenever the socket can take more.
  void tls_write_wait_locked() {
    sock_.async_wait(tls_write_wants_read_ ? tcp::socket::wait_read : tcp::socket::wait_write,
                     [self = this->shared_from_this()](const boost::system::error_code& ec) {
                       self->on_tls_writable(ec);
                     });
  }
  void on_tls_writable(const boost::system::error_code& ec) {
    {
      std::vector<OutFrame> done;  // released after the lock (declared first, destroyed last)
      std::lock_guard lock(mu_);
      if (closed_) return;
      if (ec) {
        close_locked("send failed: " + ec.message(), false);
        return;
      }
      // First what the socket BIO still holds, then the queue.
      const int flushed = tls_flush(ssl_.get());
      if (flushed < 0) {
        close_locked(std::string("send failed: ") + std::strerror(errno), false);
        return;
      }
      if (flushed == 0) {
        tls_write_wants_read_ = false;
        tls_write_wait_locked();
        return;
      }
      std::size_t finished = 0;
      for (; finished < queue_.size(); ++finished) {
        const OutFrame& f = queue_[finished];
        const std::uint64_t n = tls_send_locked(f, first_skip_);
        queued_bytes_ -= std::min(queued_bytes_, n);
        first_skip_ += n;
        if (closed_) return;
        if (first_skip_ < f.total_bytes) break;
        first_skip_ = 0;
      }
      done.assign(std::make_move_iterator(queue_.begin()),
                  std::make_move_iterator(queue_.begin() + static_cast<std::ptrdiff_t>(finished)));
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(finished));
      if (!queue_.empty() || tls_unsent(ssl_.get()) > 0)
        tls_write_wait_locked();
      else
        write_queue_drained_locked();
    }
    if constexpr (requires(Derived & d) { d.on_queue_shrunk(); }) derived().on_queue_shrunk();
  }

  void start_write_locked() {
    if (!enter_reactor_locked()) return;
    writing_ = true;
    if (ssl_) {
      tls_write_wait_locked();
      return;
    }
    inflight_.clear();
    std::swap(inflight_, queue_);
    std::vector<boost::asio::const_buffer> bufs;
    std::uint64_t skip = first_skip_;
    first_skip_ = 0;
    for (const auto& f : inflight_)
      for (auto s : f.pieces) {
        if (skip >= s.size()) {
          skip -= s.size();
          continue;
        }
        bufs.emplace_back(s.data() + skip, s.size() - skip);
        skip = 0;
      }
    boost::asio::async_write(
        sock_, bufs,
        [self = this->shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
          self->on_written(ec, n);
        });
  }

  void on_written(const boost::system::error_code& ec, std::size_t n) {
    {
      std::vector<OutFrame> done;
      std::lock_guard lock(mu_);
      done.swap(inflight_);  // released after the lock (declared first, destroyed last)
      queued_bytes_ -= std::min<std::uint64_t>(queued_bytes_, n);
      if (ec) {
        close_locked("send failed: " + ec.message(), false);
        return;
      }
      if (!queue_.empty())
        start_write_locked();
      else
        write_queue_drained_locked();
    }
    if constexpr (requires(Derived & d) { d.on_queue_shrunk(); }) derived().on_queue_shrunk();
  }
  // Everything queued is written: a close_after_flush may close now. mu_ held.
  void write_queue_drained_locked() {
    writing_ = false;
    if (close_when_flushed_) close_locked(flush_reason_, false);
    leave_reactor_locked();
  }

  // After the hand-over the socket stays out of Asio's reactor while no async operation
  // needs it: registered (edge-triggered), every reply would also wake the io thread,
  // which has nothing to do with it (the caller reads it). Asio takes the descriptor back
  // for an async write or a watch (enter) and gives it up once neither is pending (leave);
  // the descriptor number never changes. Both with mu_ held; enter closes the stream and
  // returns false when Asio cannot take it.
  bool enter_reactor_locked() {
    if (in_reactor_) return true;
    boost::system::error_code ec;
    sock_.assign(protocol_, fd_, ec);
    if (ec) {
      close_locked("cannot watch the socket: " + ec.message(), false);
      return false;
    }
    in_reactor_ = true;  // sock_ owns the descriptor from here, whatever follows
    sock_.non_blocking(true, ec);
    if (ec) {
      close_locked("cannot watch the socket: " + ec.message(), false);
      return false;
    }
    return true;
  }
  void leave_reactor_locked() {
    if (!in_reactor_ || !handed_over_ || closed_ || writing_ || watches_ > 0) return;
    boost::system::error_code ec;
    sock_.release(ec);
    if (!ec) in_reactor_ = false;
  }

  void close_locked(const std::string& reason, bool clean) {
    if (closed_) return;
    closed_ = true;
    close_reason_ = reason;
    armed_ = true;
    disarm_locked();
    // Out of the reactor first (release deregisters explicitly: a close alone would not
    // while wait_readable's duplicate keeps the socket open), then shut down and closed.
    bool ours = !in_reactor_;
    if (in_reactor_) {
      boost::system::error_code ec;
      sock_.release(ec);
      ours = !ec;
      if (!ours) {
        sock_.shutdown(tcp::socket::shutdown_both, ec);
        sock_.close(ec);
      }
    }
    if (ours) {
      ::shutdown(fd_, SHUT_RDWR);
      ::close(fd_);
    }
    queue_.clear();
    queued_bytes_ = 0;
    // The hook runs outside the lock, on an io thread.
    boost::asio::post(sock_.get_executor(), [self = this->shared_from_this(), clean] {
      self->derived().on_closed(self->close_reason_, clean);
    });
  }

  tcp::socket sock_;
  // The socket's descriptor, owned by sock_ while in_reactor_, else by this stream (mu_).
  int fd_ = -1;
  tcp protocol_ = tcp::v4();
  bool in_reactor_ = true;
  int watches_ = 0;  // watch_readable calls pending (mu_)
  boost::asio::steady_timer timer_;
  StreamLimits limits_;
  mutable std::mutex mu_;
  // Write state (mu_).
  std::vector<OutFrame> queue_, inflight_;
  std::uint64_t first_skip_ = 0;  // bytes of queue_.front() already sent by send_now
  std::uint64_t queued_bytes_ = 0, peak_queued_bytes_ = 0;
  bool writing_ = false, closed_ = false, close_when_flushed_ = false, armed_ = false;
  // Read gate (mu_): paused_ = stop at the next frame boundary; parked_ = the chain did
  // stop (no read in flight), so resume_reading() must restart it.
  bool paused_ = false, parked_ = false;
  // handed_over_ (mu_): the read chain has ended; read_now() reads from here on.
  bool handed_over_ = false;
  int poll_fd_ = -1;  // dup of the socket for wait_readable (mu_), closed with the stream
  std::uint64_t timer_gen_ = 0;
  std::string flush_reason_, close_reason_;
  // Read state (the read chain only).
  std::atomic<std::uint64_t> max_frame_bytes_;
  bool pause_after_frame_;
  std::uint32_t hand_over_left_;
  std::unique_ptr<std::byte[]> rbuf_;
  std::size_t rlen_ = 0;
  bool have_header_ = false;
  FrameHeader header_;
  std::shared_ptr<std::uint64_t[]> payload_;
  std::uint64_t got_ = 0;
  // TLS (mu_): the connection's SSL object once start_tls() ran; what the last SSL_read
  // that found nothing waits for (blocked = false: SSL may hold more, read before waiting);
  // the length of a write to retry, and what it waits for; one record's staging.
  static constexpr std::size_t tls_record = 16 * 1024;
  SslPtr ssl_;
  bool tls_read_blocked_ = true, tls_read_wants_write_ = false, tls_write_wants_read_ = false;
  std::size_t tls_retry_len_ = 0;
  std::unique_ptr<std::byte[]> tls_stage_;
  std::optional<std::string> tls_read_failure_;  // found behind good bytes, reported next
};

}  // namespace distgraph::detail
