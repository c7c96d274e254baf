// PendingCall: the trainer's handle on a request in flight, completed by the transport.
#pragma once

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
struct CallState {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Reply> reply;
  std::exception_ptr error;
  std::function<void()> on_abandon;  // lets the transport forget a call that timed out
  std::string description;           // "server 1 (127.0.0.1:30050): pull #17"
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
  /// Does not check the reply's status (see expect_ok).
  Reply get(Deadline deadline) {
    std::unique_lock lock(state_->mu);
    if (!state_->cv.wait_until(lock, deadline,
                               [&] { return state_->reply.has_value() || state_->error; })) {
      auto abandon = std::move(state_->on_abandon);
      const std::string what = state_->description;
      lock.unlock();
      if (abandon) abandon();
      throw TimeoutError(what + ": no reply within the deadline");
    }
    if (state_->error) std::rethrow_exception(state_->error);
    return std::move(*state_->reply);
  }
  /// True once a reply or error has arrived.
  bool ready() const {
    std::lock_guard lock(state_->mu);
    return state_->reply.has_value() || state_->error != nullptr;
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
    {
      std::lock_guard lock(s.mu);
      if (s.reply || s.error) return;
      s.reply = std::move(r);
    }
    s.cv.notify_all();
  }
  /// For transports: fails `s` with `e` (first completion wins).
  static void fail(detail::CallState& s, std::exception_ptr e) {
    {
      std::lock_guard lock(s.mu);
      if (s.reply || s.error) return;
      s.error = std::move(e);
    }
    s.cv.notify_all();
  }

 private:
  std::shared_ptr<detail::CallState> state_;
};

}  // namespace distgraph
