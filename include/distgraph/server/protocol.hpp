// Wire layouts of the server messages: heads encoded with HeadWriter, read with HeadReader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "distgraph/core/dtype.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/sampling/rng.hpp"
#include "distgraph/sampling/sampler_spec.hpp"
#include "distgraph/storage/concepts.hpp"
#include "distgraph/transport/head_codec.hpp"
#include "distgraph/transport/message.hpp"

namespace distgraph {

/// Which global ID space a tensor's rows are indexed by.
enum class RowKind : std::uint8_t { node = 0, edge = 1 };

/// How create_tensor fills a new tensor. Values are a pure function of (seed, global row,
/// column), so a tensor's contents do not depend on how the graph was partitioned.
enum class InitKind : std::uint8_t { zeros = 0, uniform = 1, normal = 2 };

struct InitSpec {
  InitKind kind = InitKind::zeros;
  double a = 0, b = 0;  ///< uniform [a, b); normal mean a, stddev b
  std::uint64_t seed = 0;
};

/// create_tensor: head = name, dtype, kind, global rows, cols, init. Reply head: u8
/// created (1) or reused (0).
struct CreateTensorRequest {
  std::string name;
  DType dtype = DType::float32;
  RowKind kind = RowKind::node;
  std::int64_t rows = 0;  ///< global rows (num_nodes or num_edges)
  std::int64_t cols = 1;
  InitSpec init{};

  std::vector<std::byte> encode() const {
    HeadWriter w;
    w.put_string(name)
        .put(static_cast<std::uint16_t>(dtype))
        .put(static_cast<std::uint8_t>(kind))
        .put(rows)
        .put(cols)
        .put(static_cast<std::uint8_t>(init.kind))
        .put(init.a)
        .put(init.b)
        .put(init.seed);
    return w.take();
  }
  static CreateTensorRequest decode(std::span<const std::byte> head) {
    HeadReader r(head, "create_tensor");
    CreateTensorRequest q;
    q.name = r.get_string(256);
    // DType is one byte: a wider code would wrap to a known one (256 to float32).
    const auto dtype = r.get<std::uint16_t>();
    if (dtype > 0xff)
      throw DTypeError("tensor '" + q.name + "'", "unknown dtype code " + std::to_string(dtype));
    q.dtype = static_cast<DType>(dtype);
    q.kind = static_cast<RowKind>(r.get<std::uint8_t>());
    q.rows = r.get<std::int64_t>();
    q.cols = r.get<std::int64_t>();
    // An unknown kind is KVServer::create's to refuse (it checks in-process callers too).
    q.init.kind = static_cast<InitKind>(r.get<std::uint8_t>());
    q.init.a = r.get<double>();
    q.init.b = r.get<double>();
    q.init.seed = r.get<std::uint64_t>();
    r.finish();
    return q;
  }
};

/// pull / push / push_add: head = tensor name, row count; part 0 = global row IDs
/// (int64), part 1 (push, push_add) = the rows. A pull reply's part 0 holds the rows in
/// request order.
struct RowsRequest {
  std::string name;
  RowKind kind = RowKind::node;
  std::int64_t count = 0;

  std::vector<std::byte> encode() const {
    HeadWriter w;
    w.put_string(name).put(static_cast<std::uint8_t>(kind)).put(count);
    return w.take();
  }
  static RowsRequest decode(std::span<const std::byte> head, const char* subject) {
    HeadReader r(head, subject);
    RowsRequest q;
    q.name = r.get_string(256);
    q.kind = static_cast<RowKind>(r.get<std::uint8_t>());
    q.count = r.get<std::int64_t>();
    r.finish();
    return q;
  }
};

/// Sparse optimizer kinds applied on the servers.
enum class OptimizerKind : std::uint8_t { adagrad = 0, adam = 1 };

/// The per-row state a sparse optimizer keeps beside embedding `name`: tensors
/// `name + suffix`, created (zeros) by the first step and saved with the embedding.
struct SparseState {
  static constexpr std::string_view adagrad_sum = ".adagrad_sum";  ///< Adagrad
  static constexpr std::string_view adam_m = ".adam_m", adam_v = ".adam_v";
  static constexpr std::string_view adam_t = ".adam_t";  ///< one column: the row's steps
  static constexpr std::string_view all[] = {adagrad_sum, adam_m, adam_v, adam_t};
};

/// Hyper-parameters of a sparse optimizer step.
struct SparseOptimizerParams {
  OptimizerKind kind = OptimizerKind::adagrad;
  double lr = 0.01;
  double eps = 1e-10;
  double beta1 = 0.9, beta2 = 0.999;  ///< Adam only
};

/// sparse_step: head = embedding name, count, params; part 0 = unique global row IDs,
/// part 1 = their summed gradients (float32 rows).
struct SparseStepRequest {
  std::string name;
  RowKind kind = RowKind::node;
  std::int64_t count = 0;
  SparseOptimizerParams params{};

  std::vector<std::byte> encode() const {
    HeadWriter w;
    w.put_string(name)
        .put(static_cast<std::uint8_t>(kind))
        .put(count)
        .put(static_cast<std::uint8_t>(params.kind))
        .put(params.lr)
        .put(params.eps)
        .put(params.beta1)
        .put(params.beta2);
    return w.take();
  }
  static SparseStepRequest decode(std::span<const std::byte> head) {
    HeadReader r(head, "sparse_step");
    SparseStepRequest q;
    q.name = r.get_string(256);
    q.kind = static_cast<RowKind>(r.get<std::uint8_t>());
    q.count = r.get<std::int64_t>();
    q.params.kind = static_cast<OptimizerKind>(r.get<std::uint8_t>());
    q.params.lr = r.get<double>();
    q.params.eps = r.get<double>();
    q.params.beta1 = r.get<double>();
    q.params.beta2 = r.get<double>();
    r.finish();
    return q;
  }
};

/// save_tensors / load_tensors: head = checkpoint tag, u8 with_state, u32 count, then
/// the tensor names. The server saves (loads) its own rows of each tensor, and with
/// with_state = 1 each one's sparse optimizer state, under `<its checkpoint folder>/<tag>`.
/// remove_checkpoint: head = the tag alone.
struct TensorCheckpointRequest {
  std::string tag;
  std::vector<std::string> names;
  bool with_state = true;

  std::vector<std::byte> encode() const {
    HeadWriter w;
    w.put_string(tag)
        .put(static_cast<std::uint8_t>(with_state ? 1 : 0))
        .put(static_cast<std::uint32_t>(names.size()));
    for (const auto& n : names) w.put_string(n);
    return w.take();
  }
  static TensorCheckpointRequest decode(std::span<const std::byte> head, const char* subject) {
    HeadReader r(head, subject);
    TensorCheckpointRequest q;
    q.tag = r.get_string(256);
    q.with_state = r.get<std::uint8_t>() != 0;
    const auto n = r.get<std::uint32_t>();
    if (n > 4096)
      throw ProtocolError(std::string(subject) + ": " + std::to_string(n) +
                          " tensors; the limit is 4096");
    for (std::uint32_t i = 0; i < n; ++i) q.names.push_back(r.get_string(256));
    r.finish();
    return q;
  }
};

/// barrier: head = barrier name, the number of participants, timeout in ms. Every
/// participant's call returns once all have arrived (or fails at the timeout).
struct BarrierRequest {
  std::string name;
  std::int64_t participants = 0;
  std::int64_t timeout_ms = 0;

  std::vector<std::byte> encode() const {
    HeadWriter w;
    w.put_string(name).put(participants).put(timeout_ms);
    return w.take();
  }
  static BarrierRequest decode(std::span<const std::byte> head) {
    HeadReader r(head, "barrier");
    BarrierRequest q;
    q.name = r.get_string(256);
    q.participants = r.get<std::int64_t>();
    q.timeout_ms = r.get<std::int64_t>();
    r.finish();
    return q;
  }
};

/// Largest payload of a request quick_request() lets the socket thread answer itself:
/// 4 KiB is about 500 row or node IDs, a few microseconds of work.
inline constexpr std::uint64_t quick_request_bytes = 4096;

/// Whether a KV or graph server request is small and never waits, so the server's socket
/// thread may run it itself (AsioServerOptions::run_inline) instead of waking a handler
/// thread: row reads and writes and degree look-ups of at most quick_request_bytes. All
/// else goes to the handler threads: barriers and shutdown wait; tensor creation and
/// checkpoints take long; a sparse step may wait for a checkpoint's row locks; a sampler's
/// or an edge look-up's first call builds tables over the whole partition, and a sample's
/// work is not bounded by its request's size (a full neighbourhood).
inline bool quick_request(MsgType type, std::uint64_t payload_bytes) noexcept {
  if (payload_bytes > quick_request_bytes) return false;
  switch (type) {
    case MsgType::ping:
    case MsgType::metadata:
    case MsgType::list_tensors:
    case MsgType::pull:
    case MsgType::push:
    case MsgType::push_add:
    case MsgType::degrees:
      return true;
    default:
      return false;
  }
}

/// Storage names of graph data: node data "feat" is tensor "node:feat", edge data "w"
/// is "edge:w" (one namespace per kind, so a node and an edge tensor may share a name).
inline std::string node_data_name(const std::string& name) { return "node:" + name; }
inline std::string edge_data_name(const std::string& name) { return "edge:" + name; }

/// Direction of a degree query.
enum class DegreeKind : std::uint8_t { in = 0, out = 1 };

/// degrees: head = u8 kind (in/out), i64 count; part 0 = global node IDs. Reply part 0 =
/// int64 degrees (out: the server's share; the trainer sums over partitions).
struct DegreesRequest {
  DegreeKind kind = DegreeKind::in;
  std::int64_t count = 0;

  std::vector<std::byte> encode() const {
    HeadWriter w;
    w.put(static_cast<std::uint8_t>(kind)).put(count);
    return w.take();
  }
  static DegreesRequest decode(std::span<const std::byte> head) {
    HeadReader r(head, "degrees");
    DegreesRequest q;
    const auto k = r.get<std::uint8_t>();
    if (k > 1) throw ProtocolError("degrees: unknown direction " + std::to_string(k));
    q.kind = static_cast<DegreeKind>(k);
    q.count = r.get<std::int64_t>();
    r.finish();
    return q;
  }
};

/// find_edges: head = i64 count; part 0 = owned global edge IDs. Reply parts = global
/// source IDs, global destination IDs.
struct FindEdgesRequest {
  std::int64_t count = 0;

  std::vector<std::byte> encode() const {
    HeadWriter w;
    w.put(count);
    return w.take();
  }
  static FindEdgesRequest decode(std::span<const std::byte> head) {
    HeadReader r(head, "find_edges");
    FindEdgesRequest q;
    q.count = r.get<std::int64_t>();
    r.finish();
    return q;
  }
};

/// orig_ids: head = u8 row kind, i64 count; part 0 = owned global node or edge IDs. Reply
/// part 0 = each one's input (pre-relabeling) ID, int64.
struct OrigIdsRequest {
  RowKind kind = RowKind::node;
  std::int64_t count = 0;

  std::vector<std::byte> encode() const {
    HeadWriter w;
    w.put(static_cast<std::uint8_t>(kind)).put(count);
    return w.take();
  }
  static OrigIdsRequest decode(std::span<const std::byte> head) {
    HeadReader r(head, "orig_ids");
    OrigIdsRequest q;
    const auto k = r.get<std::uint8_t>();
    if (k > 1) throw ProtocolError("orig_ids: unknown row kind " + std::to_string(k));
    q.kind = static_cast<RowKind>(k);
    q.count = r.get<std::int64_t>();
    r.finish();
    return q;
  }
};

/// Longest sampler name and parameter block a sample_neighbors head may carry.
inline constexpr std::size_t max_sampler_name_bytes = 64;
inline constexpr std::size_t max_sampler_params_bytes = 64 * 1024;

/// sample_neighbors: head = key, fanout, sampler name, sampler parameter block (u32
/// length + bytes, the sampler's own layout), seed count; part 0 = global seed IDs the
/// server owns. Reply parts = global src, dst, edge IDs of the sampled in-edges, grouped
/// by seed in request order.
struct SampleRequest {
  SampleKey key{};
  std::int64_t fanout = -1;
  SamplerSpec sampler{};
  std::int64_t count = 0;

  std::vector<std::byte> encode() const {
    HeadWriter w;
    w.put(key.seed).put(key.epoch).put(key.rank).put(key.batch).put(key.layer).put(fanout);
    w.put_string(sampler.name).put_bytes(sampler.params).put(count);
    return w.take();
  }
  static SampleRequest decode(std::span<const std::byte> head) {
    HeadReader r(head, "sample_neighbors");
    SampleRequest q;
    q.key.seed = r.get<std::uint64_t>();
    q.key.epoch = r.get<std::int64_t>();
    q.key.rank = r.get<std::int64_t>();
    q.key.batch = r.get<std::int64_t>();
    q.key.layer = r.get<std::int32_t>();
    q.fanout = r.get<std::int64_t>();
    q.sampler.name = r.get_string(max_sampler_name_bytes);
    const auto params = r.get_bytes(max_sampler_params_bytes);
    q.sampler.params.assign(params.begin(), params.end());
    q.count = r.get<std::int64_t>();
    r.finish();
    return q;
  }
};

/// Throws ProtocolError unless `body` is empty (no head bytes, no parts): the request of
/// ping, metadata, list_tensors and shutdown. A malformed request is refused, not
/// half-understood, so a shutdown with junk in it stops nothing.
inline void require_empty_body(const Message& body, MsgType type) {
  if (!body.head.empty() || !body.parts.empty())
    throw ProtocolError(msg_type_name(type) + ": head of " + std::to_string(body.head.size()) +
                        " bytes and " + std::to_string(body.parts.size()) +
                        " parts; expected an empty message");
}

/// Throws ProtocolError unless `body` has no parts (messages whose layout is a head alone).
inline void require_no_parts(const Message& body, MsgType type) {
  if (!body.parts.empty())
    throw ProtocolError(msg_type_name(type) + ": " + std::to_string(body.parts.size()) +
                        " parts; expected none");
}

/// Maps a typed exception to the wire status a server replies with (docs/WIRE.md), so
/// every server answers the same error the same way and keeps serving.
inline Reply error_reply(const std::exception& e, MsgType type) {
  if (dynamic_cast<const std::bad_alloc*>(&e))
    return Reply::error(Status::internal_error, msg_type_name(type) + ": out of memory");
  if (dynamic_cast<const PartitionError*>(&e)) return Reply::error(Status::bad_request, e.what());
  if (dynamic_cast<const FrameTooLarge*>(&e))
    return Reply::error(Status::frame_too_large, e.what());
  if (dynamic_cast<const ProtocolError*>(&e)) return Reply::error(Status::bad_request, e.what());
  if (dynamic_cast<const IdOutOfRange*>(&e)) return Reply::error(Status::out_of_range, e.what());
  if (dynamic_cast<const NotFound*>(&e)) return Reply::error(Status::not_found, e.what());
  if (dynamic_cast<const DTypeError*>(&e)) return Reply::error(Status::dtype_mismatch, e.what());
  if (dynamic_cast<const ShapeError*>(&e)) return Reply::error(Status::shape_mismatch, e.what());
  if (dynamic_cast<const InvalidArgument*>(&e)) return Reply::error(Status::bad_request, e.what());
  return Reply::error(Status::internal_error, e.what());
}

/// Encodes a TensorSpec list (list_tensors reply head) and reads it back.
inline std::vector<std::byte> encode_specs(const std::vector<TensorSpec>& specs) {
  HeadWriter w;
  w.put(static_cast<std::uint32_t>(specs.size()));
  for (const auto& s : specs)
    w.put_string(s.name).put(static_cast<std::uint16_t>(s.dtype)).put(s.rows).put(s.cols);
  return w.take();
}
inline std::vector<TensorSpec> decode_specs(std::span<const std::byte> head) {
  HeadReader r(head, "list_tensors reply");
  const auto n = r.get<std::uint32_t>();
  if (n > 1'000'000) throw ProtocolError("list_tensors reply: " + std::to_string(n) + " tensors");
  std::vector<TensorSpec> out;
  for (std::uint32_t i = 0; i < n; ++i) {
    TensorSpec s;
    s.name = r.get_string(256);
    s.dtype = static_cast<DType>(r.get<std::uint16_t>());
    s.rows = r.get<std::int64_t>();
    s.cols = r.get<std::int64_t>();
    out.push_back(std::move(s));
  }
  r.finish();
  return out;
}

/// A byte span viewed as `count` values of T, or ProtocolError when its length differs.
/// Parts arrive 8-byte aligned (docs/WIRE.md), so no copy is needed.
template <class T>
std::span<const T> part_as(std::span<const std::byte> part, std::int64_t count,
                           const std::string& subject) {
  // The division first: a count whose count * sizeof(T) wraps must not match a short part.
  if (count < 0 || static_cast<std::uint64_t>(count) > part.size() / sizeof(T) ||
      part.size() != static_cast<std::size_t>(count) * sizeof(T))
    throw ProtocolError(subject + ": part of " + std::to_string(part.size()) + " bytes; expected " +
                        std::to_string(count) + " x " + std::to_string(sizeof(T)));
  if (reinterpret_cast<std::uintptr_t>(part.data()) % alignof(T) != 0)
    throw ProtocolError(subject + ": part not aligned to " + std::to_string(alignof(T)));
  return {reinterpret_cast<const T*>(part.data()), static_cast<std::size_t>(count)};
}

}  // namespace distgraph
