// The Storage concept: named row-major 2-D tensors read and written by row.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "distgraph/core/dtype.hpp"

namespace distgraph {

/// Name, dtype and shape of a stored tensor: `rows` x `cols` elements, row-major.
struct TensorSpec {
  std::string name;
  DType dtype = DType::float32;
  std::int64_t rows = 0;
  std::int64_t cols = 1;

  std::size_t row_bytes() const noexcept {
    return static_cast<std::size_t>(cols) * dtype_size(dtype);
  }
  std::size_t size_bytes() const noexcept { return static_cast<std::size_t>(rows) * row_bytes(); }
  bool same_layout(const TensorSpec& o) const noexcept {
    return dtype == o.dtype && rows == o.rows && cols == o.cols;
  }
};

/// Opt-in tag: a storage declares `using policy_category = storage_tag;`.
struct storage_tag {};

/// Named tensors addressed by local row index. Semantics every model guarantees
/// (docs/concepts/Storage.md):
/// - create(spec) makes a zero-filled tensor and returns true, or returns false when one
///   of the same name, dtype and shape exists; a different dtype or shape throws
///   DTypeError/ShapeError naming the tensor. create(spec, bytes) also fills it.
/// - read_rows copies rows in request order; each row is read atomically (never half of
///   one write and half of another), also across processes sharing the storage. It writes
///   every byte of `out` or throws: a server sends `out` without zeroing it first.
/// - write_rows replaces each row atomically; a row listed twice ends as its last listing.
/// - add_rows adds element-wise, atomically per row, so concurrent adds never lose an
///   update; a row listed twice gets both additions. Numeric dtypes only (float32,
///   float64, int32, int64); others throw DTypeError.
/// - Rows are validated for the whole batch first (IdOutOfRange, nothing written);
///   unknown names throw NotFound; byte spans of the wrong length throw ShapeError.
/// All methods are thread-safe.
template <class S>
concept Storage = std::same_as<typename S::policy_category, storage_tag> &&
    requires(S& s, const S& cs, const TensorSpec& spec, std::string_view name,
             std::span<const std::int64_t> rows, std::span<std::byte> out,
             std::span<const std::byte> in) {
  { s.create(spec) } -> std::same_as<bool>;
  { s.create(spec, in) } -> std::same_as<bool>;
  { cs.contains(name) } -> std::same_as<bool>;
  { cs.spec(name) } -> std::same_as<TensorSpec>;
  { cs.list() } -> std::same_as<std::vector<TensorSpec>>;
  { s.remove(name) } -> std::same_as<bool>;
  cs.read_rows(name, rows, out);
  s.write_rows(name, rows, in);
  s.add_rows(name, rows, in);
};

/// A Storage that says when a tensor may have changed: `generation(name)` changes after
/// every write, add, create and remove of `name`, by any writer sharing the storage (it may
/// also change when nothing did). Whatever is derived from a tensor (a sampler's
/// probabilities at a site) is rebuilt when its generation moves. Optional: without it,
/// such derived data is made once and never refreshed (docs/concepts/Storage.md).
template <class S>
concept VersionedStorage = Storage<S> && requires(const S& cs, std::string_view name) {
  { cs.generation(name) } -> std::same_as<std::uint64_t>;
};

/// A Storage that can also read rows straight into scattered row slots of an output
/// buffer (`read_rows_at(name, rows, at, out)`: row rows[i] into slot at[i]), which saves a
/// client the second copy when it reassembles rows of several owners in request order.
/// Optional: clients fall back to read_rows and a scatter.
template <class S>
concept ScatterReadStorage = Storage<S> &&
    requires(const S& cs, std::string_view name, std::span<const std::int64_t> rows,
             std::span<const std::size_t> at, std::span<std::byte> out) {
  cs.read_rows_at(name, rows, at, out);
};

}  // namespace distgraph
