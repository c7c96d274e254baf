// AnyTransport: a Transport chosen at run time, in-process or TCP, without virtual calls.
#pragma once

#include <utility>
#include <variant>

#include "distgraph/core/deadline.hpp"
#include "distgraph/transport/asio_transport.hpp"
#include "distgraph/transport/concepts.hpp"
#include "distgraph/transport/in_process_transport.hpp"
#include "distgraph/transport/message.hpp"
#include "distgraph/transport/pending_call.hpp"

namespace distgraph {

/// Holds an InProcessTransport or an AsioTransport and forwards to it (one std::visit per
/// call), so one binary runs standalone or distributed. Thread-safety, blocking and
/// errors are those of the held transport.
class AnyTransport {
 public:
  using policy_category = transport_tag;
  using variant_type = std::variant<InProcessTransport, AsioTransport>;

  explicit AnyTransport(InProcessTransport t)
      : t_(std::in_place_type<InProcessTransport>, std::move(t)) {}
  explicit AnyTransport(AsioTransport t) : t_(std::in_place_type<AsioTransport>, std::move(t)) {}

  int num_servers() const {
    return std::visit([](const auto& t) { return t.num_servers(); }, t_);
  }
  PendingCall send(int server, MsgType type, Message m) {
    return std::visit([&](auto& t) { return t.send(server, type, std::move(m)); }, t_);
  }
  Reply call(int server, MsgType type, Message m, Deadline deadline) {
    return std::visit([&](auto& t) { return t.call(server, type, std::move(m), deadline); }, t_);
  }
  /// True when the calls go over TCP.
  bool is_remote() const noexcept { return std::holds_alternative<AsioTransport>(t_); }
  variant_type& get() noexcept { return t_; }
  const variant_type& get() const noexcept { return t_; }

 private:
  variant_type t_;
};

static_assert(Transport<AnyTransport>);

}  // namespace distgraph
