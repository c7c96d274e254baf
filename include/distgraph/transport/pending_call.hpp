// PendingCall: the trainer's handle on a request in flight, completed by the transport.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "distgraph/core/deadline.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/transport/message.hpp"

namespace distgraph {

namespace detail {
struct CallState;

/// What a transport whose callers read their own replies implements (AsioTransport's
/// connections): PendingCall::get lends its thread to it.
class ReplyReader {
 public:
  /// Reads replies (completing whichever calls they answer) until `s` is completed or
  /// `deadline` passes; may also return early (the connection closed). Thread-safe.
  virtual void read_until_done(CallState& s, Deadline deadline) = 0;
  /// Reads whatever replies have arrived, without blocking, unless another thread is
  /// reading already. Thread-safe.
  virtual void read_available() = 0;

 protected:
  ~ReplyReader() = default;
};

struct CallState {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Reply> reply;
  std::exception_ptr error;
  std::function<void()> on_abandon;  // lets the transport forget a call that timed out
  std::string description;           // "server 1 (127.0.0.1:30050): pull #17"
  // Where get() reads the reply itself; empty = wait for the transport to complete it.
  std::weak_ptr<ReplyReader> reader;
  // Set (release) once reply or error is written, under mu; never cleared. A thread that
  // sees it may read reply/error without the lock: nothing writes them afterwards.
  std::atomic<bool> done{false};
  bool sleeping = false;  // get() waits on cv (under mu): only then is a wake-up needed
};
}  // namespace detail

/// A request sent and not yet answered. The transport completes it with a reply or an
/// error (PeerLost when the connection breaks). Movable, not copyable; get() may be
/// called once.
class PendingCall {
 public:
  PendingCall() = default;
  explicit PendingCall(std::shared_ptr<detail::CallState> s) : state_(std::move(s)) {}

  /// Blocks until the reply arrives or `deadline` passes. Throws TimeoutError naming the
  /// server, message type and request ID; rethrows PeerLost and other transport errors.
  /// Does not check the reply's status (see expect_ok). Over AsioTransport the calling
  /// thread reads the reply from the socket itself (and completes other callers' replies
  /// that arrive first) unless another caller is reading that connection already.
  Reply get(Deadline deadline) {
    CallState& s = *state_;
    if (!s.done.load(std::memory_order_acquire))
      if (auto reader = s.reader.lock()) reader->read_until_done(s, deadline);
    if (!s.done.load(std::memory_order_acquire)) {
      std::unique_lock lock(s.mu);
      s.sleeping = true;
      const bool arrived =
          s.cv.wait_until(lock, deadline, [&] { return s.done.load(std::memory_order_relaxed); });
      s.sleeping = false;
      if (!arrived) {
        auto abandon = std::move(s.on_abandon);
        const std::string what = s.description;
        lock.unlock();
        if (abandon) abandon();
        throw TimeoutError(what + ": no reply within the deadline");
      }
    }
    if (s.error) std::rethrow_exception(s.error);
    return std::move(*s.reply);
  }
  /// True once a reply or error has arrived. Thread-safe; never blocks (over AsioTransport
  /// it reads the replies already in the socket when no other caller is reading them).
  bool ready() const {
    if (state_->done.load(std::memory_order_acquire)) return true;
    if (auto reader = state_->reader.lock()) reader->read_available();
    return state_->done.load(std::memory_order_acquire);
  }
  bool valid() const noexcept { return state_ != nullptr; }

  /// For transports: a fresh call state described by `description`.
  static std::shared_ptr<detail::CallState> make_state(std::string description) {
    auto s = std::make_shared<detail::CallState>();
    s->description = std::move(description);
    return s;
  }
  /// For transports: completes `s` with a reply (first completion wins).
  static void complete(detail::CallState& s, Reply r) {
    settle(s, [&] { s.reply = std::move(r); });
  }
  /// For transports: fails `s` with `e` (first completion wins).
  static void fail(detail::CallState& s, std::exception_ptr e) {
    settle(s, [&] { s.error = std::move(e); });
  }

 private:
  using CallState = detail::CallState;

  template <class Fill>
  static void settle(CallState& s, Fill&& fill) {
    bool wake = false;
    {
      std::lock_guard lock(s.mu);
      if (s.done.load(std::memory_order_relaxed)) return;
      fill();
      s.done.store(true, std::memory_order_release);
      wake = s.sleeping;
    }
    if (wake) s.cv.notify_all();
  }

  std::shared_ptr<CallState> state_;
};

}  // namespace distgraph
