// InProcessTransport: calls each server's handler directly, for standalone mode and tests.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/deadline.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/transport/concepts.hpp"
#include "distgraph/transport/message.hpp"
#include "distgraph/transport/pending_call.hpp"

namespace distgraph {

/// A Transport whose "servers" are handlers in this process. send() runs the handler on
/// the caller's thread and returns an already-completed PendingCall: no copies, no
/// threads; the reply's spans are the handler's own, and the request's keep_alive is kept
/// alive with the reply (as AsioServer does), so a handler may answer with views into its
/// request. An exception escaping a handler becomes an internal_error reply. Thread-safe
/// as far as the handlers are. Request IDs count from 1; Request::connection is -1.
class InProcessTransport {
 public:
  using policy_category = transport_tag;

  /// Server i is served by `handlers[i]`. Throws InvalidArgument for an empty list or an
  /// empty handler.
  explicit InProcessTransport(std::vector<Handler> handlers)
      : handlers_(std::move(handlers)), next_id_(std::make_unique<std::atomic<std::uint64_t>>(1)) {
    if (handlers_.empty())
      throw InvalidArgument("InProcessTransport: no handlers given; expected one per server");
    for (std::size_t i = 0; i < handlers_.size(); ++i)
      if (!handlers_[i])
        throw InvalidArgument("InProcessTransport: handler " + std::to_string(i) + " is empty");
  }

  int num_servers() const noexcept { return static_cast<int>(handlers_.size()); }

  /// Runs server `server`'s handler on `m` now and returns the completed call. Throws
  /// IdOutOfRange for a bad server index.
  PendingCall send(int server, MsgType type, Message m) {
    auto s = PendingCall::make_state("in-process server " + std::to_string(server) + ": " +
                                     msg_type_name(type));
    PendingCall::complete(*s, dispatch(server, type, std::move(m)));
    return PendingCall(std::move(s));
  }

  /// Runs the handler and returns its reply (the deadline cannot pass: the call is
  /// synchronous).
  Reply call(int server, MsgType type, Message m, Deadline /*deadline*/) {
    return dispatch(server, type, std::move(m));
  }

 private:
  Reply dispatch(int server, MsgType type, Message m) {
    if (server < 0 || server >= num_servers())
      throw IdOutOfRange("server", server, 0, num_servers());
    Request req{type, next_id_->fetch_add(1, std::memory_order_relaxed), std::move(m), -1};
    Reply r;
    try {
      r = handlers_[static_cast<std::size_t>(server)](req);
    } catch (const std::exception& e) {
      return Reply::error(Status::internal_error, "in-process server " + std::to_string(server) +
                                                      ": " + msg_type_name(type) +
                                                      ": handler threw: " + e.what());
    } catch (...) {
      return Reply::error(Status::internal_error, "in-process server " + std::to_string(server) +
                                                      ": " + msg_type_name(type) +
                                                      ": handler threw a non-standard exception");
    }
    auto& request_owner = req.body.keep_alive;
    if (request_owner && request_owner != r.body.keep_alive) {
      using Both = std::pair<std::shared_ptr<const void>, std::shared_ptr<const void>>;
      r.body.keep_alive =
          std::make_shared<Both>(std::move(r.body.keep_alive), std::move(request_owner));
    }
    return r;
  }

  std::vector<Handler> handlers_;
  // Behind a pointer so the transport stays movable (AnyTransport holds it in a variant).
  std::unique_ptr<std::atomic<std::uint64_t>> next_id_;
};

static_assert(Transport<InProcessTransport>);

}  // namespace distgraph
