// The Transport concept: moves request/reply messages between a trainer and its servers.
#pragma once

#include <concepts>
#include <utility>

#include "distgraph/core/deadline.hpp"
#include "distgraph/transport/message.hpp"
#include "distgraph/transport/pending_call.hpp"

namespace distgraph {

/// Opt-in tag: a transport declares `using policy_category = transport_tag;`.
struct transport_tag {};

/// A client-side transport to servers numbered 0..num_servers()-1 (server i of the
/// cluster's flat server list; see docs/WIRE.md). send() never waits for the reply, so a
/// caller issues one request per server and then waits on all: requests to one server
/// are pipelined and matched by request ID. Every method is thread-safe. call() is
/// send() then get(deadline).
template <class T>
concept Transport = std::same_as<typename T::policy_category, transport_tag> &&
    requires(T& t, const T& ct, int server, MsgType type, Message m, Deadline d) {
  { ct.num_servers() } -> std::same_as<int>;
  { t.send(server, type, std::move(m)) } -> std::same_as<PendingCall>;
  { t.call(server, type, std::move(m), d) } -> std::same_as<Reply>;
};

}  // namespace distgraph
