// Message, Request, Reply: what a transport carries between trainers and servers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"

namespace distgraph {

/// Message types on the wire (docs/WIRE.md). Values are part of the protocol: never
/// renumber, only append.
enum class MsgType : std::uint16_t {
  hello = 1,  ///< connection handshake (version, optional secret proof)
  ping = 2,   ///< empty request, empty reply: liveness and latency
  metadata = 10,
  create_tensor = 11,
  delete_tensor = 12,
  list_tensors = 13,
  pull = 20,
  push = 21,
  push_add = 22,
  sparse_step = 23,
  init_rows = 24,
  save_tensors = 25,  ///< a server saves its own rows of named tensors under a tag
  load_tensors = 26,  ///< ... and loads them back
  remove_checkpoint = 27,
  sample_neighbors = 30,
  degrees = 31,
  find_edges = 32,
  orig_ids = 33,  ///< input (pre-relabeling) IDs of owned nodes or edges
  /// sample_neighbors answered as a count per seed and each pick's source: no
  /// destinations, no edge IDs (8 bytes a pick instead of 24)
  sample_sources = 34,
  barrier = 40,
  shutdown = 41,
};

/// Printable name of a message type ("pull", "unknown(77)").
inline std::string msg_type_name(MsgType t) {
  switch (t) {
    case MsgType::hello:
      return "hello";
    case MsgType::ping:
      return "ping";
    case MsgType::metadata:
      return "metadata";
    case MsgType::create_tensor:
      return "create_tensor";
    case MsgType::delete_tensor:
      return "delete_tensor";
    case MsgType::list_tensors:
      return "list_tensors";
    case MsgType::pull:
      return "pull";
    case MsgType::push:
      return "push";
    case MsgType::push_add:
      return "push_add";
    case MsgType::sparse_step:
      return "sparse_step";
    case MsgType::init_rows:
      return "init_rows";
    case MsgType::save_tensors:
      return "save_tensors";
    case MsgType::load_tensors:
      return "load_tensors";
    case MsgType::remove_checkpoint:
      return "remove_checkpoint";
    case MsgType::sample_neighbors:
      return "sample_neighbors";
    case MsgType::degrees:
      return "degrees";
    case MsgType::find_edges:
      return "find_edges";
    case MsgType::sample_sources:
      return "sample_sources";
    case MsgType::orig_ids:
      return "orig_ids";
    case MsgType::barrier:
      return "barrier";
    case MsgType::shutdown:
      return "shutdown";
  }
  return "unknown(" + std::to_string(static_cast<unsigned>(t)) + ")";
}

/// Reply status on the wire. A non-ok reply's head is a UTF-8 message naming what was
/// wrong. Values are part of the protocol.
enum class Status : std::uint16_t {
  ok = 0,
  bad_request = 1,      ///< payload malformed for its message type
  unknown_message = 2,  ///< message type this server does not serve
  not_found = 3,        ///< unknown tensor or name
  out_of_range = 4,     ///< an ID outside what the server owns
  dtype_mismatch = 5,
  shape_mismatch = 6,
  frame_too_large = 7,
  unauthorized = 8,
  internal_error = 9,
  shutting_down = 10,
  timeout = 11,  ///< the server gave up waiting (e.g. a barrier whose peers never came)
};

/// Printable name of a status ("not_found").
inline std::string status_name(Status s) {
  switch (s) {
    case Status::ok:
      return "ok";
    case Status::bad_request:
      return "bad_request";
    case Status::unknown_message:
      return "unknown_message";
    case Status::not_found:
      return "not_found";
    case Status::out_of_range:
      return "out_of_range";
    case Status::dtype_mismatch:
      return "dtype_mismatch";
    case Status::shape_mismatch:
      return "shape_mismatch";
    case Status::frame_too_large:
      return "frame_too_large";
    case Status::unauthorized:
      return "unauthorized";
    case Status::internal_error:
      return "internal_error";
    case Status::shutting_down:
      return "shutting_down";
    case Status::timeout:
      return "timeout";
  }
  return "status(" + std::to_string(static_cast<unsigned>(s)) + ")";
}

/// A server answered a call with a non-ok status. `status()` is the wire status; the
/// message carries the server's own text.
class RemoteError : public Error {
 public:
  RemoteError(Status status, const std::string& what) : Error(what), status_(status) {}
  Status status() const noexcept { return status_; }

 private:
  Status status_;
};

/// A message body: a small `head` (encoded fields, or error text) and bulk `parts` (ID
/// arrays, rows) sent with scatter/gather I/O, never concatenated. The spans point into
/// memory that `keep_alive` owns (or that the caller keeps alive until the call returns).
/// On the wire a message is encoded as described in docs/WIRE.md with every part
/// starting 8-byte aligned, so a receiver may view parts as int64/float arrays in place.
struct Message {
  std::span<const std::byte> head;
  std::vector<std::span<const std::byte>> parts;
  std::shared_ptr<const void> keep_alive;

  /// A message owning `head`; parts may be added that point into memory kept alive
  /// elsewhere.
  static Message owning(std::vector<std::byte> head_bytes) {
    auto owned = std::make_shared<std::vector<std::byte>>(std::move(head_bytes));
    Message m;
    m.head = std::span<const std::byte>(owned->data(), owned->size());
    m.keep_alive = std::move(owned);
    return m;
  }
  /// Bytes of the head and all parts.
  std::size_t size_bytes() const noexcept {
    std::size_t n = head.size();
    for (auto p : parts) n += p.size();
    return n;
  }
};

/// Views any contiguous range of trivially copyable values as bytes for a Message part.
template <class T>
std::span<const std::byte> as_bytes_part(std::span<const T> s) {
  return std::as_bytes(s);
}

/// What a server's handler receives: the message type, the caller's request ID, the
/// body, and which connection it came from (stable per client while connected; -1 for
/// in-process calls).
struct Request {
  MsgType type = MsgType::ping;
  std::uint64_t id = 0;
  Message body;
  int connection = -1;
};

/// What a handler returns and a client receives.
struct Reply {
  Status status = Status::ok;
  Message body;

  /// An error reply whose head is `text`.
  static Reply error(Status s, std::string_view text) {
    std::vector<std::byte> b(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) b[i] = static_cast<std::byte>(text[i]);
    return Reply{s, Message::owning(std::move(b))};
  }
  /// The head as text (for error replies).
  std::string text() const {
    return std::string(reinterpret_cast<const char*>(body.head.data()), body.head.size());
  }
};

/// Throws RemoteError "<subject>: <status>: <server text>" unless `r` is ok; returns r.
inline const Reply& expect_ok(const Reply& r, const std::string& subject) {
  if (r.status != Status::ok)
    throw RemoteError(r.status, subject + ": " + status_name(r.status) + ": " + r.text());
  return r;
}

/// A server's request handler. Must be thread-safe: transports call it from several
/// threads at once. It should not throw; a transport turns an escaped exception into an
/// internal_error reply and keeps serving.
using Handler = std::function<Reply(const Request&)>;

}  // namespace distgraph
