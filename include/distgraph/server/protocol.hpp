// Wire layouts of the server messages: heads encoded with HeadWriter, read with HeadReader.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "distgraph/core/dtype.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/sampling/rng.hpp"
#include "distgraph/storage/concepts.hpp"
#include "distgraph/transport/message.hpp"

namespace distgraph {

/// Appends little-endian scalars and length-prefixed strings to a message head.
class HeadWriter {
 public:
  template <class T>
  HeadWriter& put(T v) {
    static_assert(std::is_arithmetic_v<T> || std::is_enum_v<T>);
    static_assert(std::endian::native == std::endian::little, "big-endian hosts unsupported");
    const auto at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &v, sizeof(T));
    return *this;
  }
  HeadWriter& put_string(std::string_view s) {
    put(static_cast<std::uint32_t>(s.size()));
    const auto at = bytes_.size();
    bytes_.resize(at + s.size());
    if (!s.empty()) std::memcpy(bytes_.data() + at, s.data(), s.size());
    return *this;
  }
  std::vector<std::byte> take() { return std::move(bytes_); }

 private:
  std::vector<std::byte> bytes_;
};

/// Reads what HeadWriter wrote, checking every length against the bytes present. A
/// short or malformed head throws ProtocolError naming `subject` (the message type).
class HeadReader {
 public:
  HeadReader(std::span<const std::byte> bytes, std::string subject)
      : bytes_(bytes), subject_(std::move(subject)) {}

  template <class T>
  T get() {
    static_assert(std::is_arithmetic_v<T> || std::is_enum_v<T>);
    need(sizeof(T));
    T v;
    std::memcpy(&v, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::string get_string(std::size_t max_len = 4096) {
    const auto n = get<std::uint32_t>();
    if (n > max_len)
      throw ProtocolError(subject_ + ": string of " + std::to_string(n) + " bytes; the limit is " +
                          std::to_string(max_len));
    need(n);
    std::string s(reinterpret_cast<const char*>(bytes_.data() + at_), n);
    at_ += n;
    return s;
  }
  /// Throws unless every byte was consumed (trailing garbage is a malformed request).
  void finish() const {
    if (at_ != bytes_.size())
      throw ProtocolError(subject_ + ": " + std::to_string(bytes_.size() - at_) +
                          " unexpected trailing bytes in the head");
  }

 private:
  void need(std::size_t n) const {
    if (bytes_.size() - at_ < n)
      throw ProtocolError(subject_ + ": head ends after " + std::to_string(bytes_.size()) +
                          " bytes; expected at least " + std::to_string(at_ + n));
  }
  std::span<const std::byte> bytes_;
  std::size_t at_ = 0;
  std::string subject_;
};

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
    q.dtype = static_cast<DType>(r.get<std::uint16_t>());
    q.kind = static_cast<RowKind>(r.get<std::uint8_t>());
    q.rows = r.get<std::int64_t>();
    q.cols = r.get<std::int64_t>();
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

/// Which sampler a sample_neighbors request runs.
enum class SamplerKind : std::uint8_t { uniform = 0, uniform_replace = 1, full = 2, weighted = 3 };

/// How to sample: the sampler, its edge-probability data (weighted: the name of a float32
/// edge data tensor, e.g. "p" for edata "p") and replacement for weighted draws.
struct SamplerSpec {
  SamplerKind kind = SamplerKind::uniform;
  std::string prob;      ///< weighted only
  bool replace = false;  ///< weighted only (uniform_replace is its own kind)
};

/// sample_neighbors: head = key, fanout, sampler spec, seed count; part 0 = global seed IDs
/// the server owns. Reply parts = global src, dst, edge IDs of the sampled in-edges,
/// grouped by seed in request order.
struct SampleRequest {
  SampleKey key{};
  std::int64_t fanout = -1;
  SamplerSpec sampler{};
  std::int64_t count = 0;

  std::vector<std::byte> encode() const {
    HeadWriter w;
    w.put(key.seed).put(key.epoch).put(key.rank).put(key.batch).put(key.layer).put(fanout);
    w.put(static_cast<std::uint8_t>(sampler.kind))
        .put_string(sampler.prob)
        .put(static_cast<std::uint8_t>(sampler.replace ? 1 : 0))
        .put(count);
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
    q.sampler.kind = static_cast<SamplerKind>(r.get<std::uint8_t>());
    q.sampler.prob = r.get_string(256);
    q.sampler.replace = r.get<std::uint8_t>() != 0;
    q.count = r.get<std::int64_t>();
    r.finish();
    return q;
  }
};

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
  if (count < 0 || part.size() != static_cast<std::size_t>(count) * sizeof(T))
    throw ProtocolError(subject + ": part of " + std::to_string(part.size()) + " bytes; expected " +
                        std::to_string(count) + " x " + std::to_string(sizeof(T)));
  if (reinterpret_cast<std::uintptr_t>(part.data()) % alignof(T) != 0)
    throw ProtocolError(subject + ": part not aligned to " + std::to_string(alignof(T)));
  return {reinterpret_cast<const T*>(part.data()), static_cast<std::size_t>(count)};
}

}  // namespace distgraph
