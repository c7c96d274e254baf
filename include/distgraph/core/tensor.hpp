// HostTensor: a dense row-major array of any DType in host memory (owned or mapped).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/buffer.hpp"
#include "distgraph/core/dtype.hpp"
#include "distgraph/core/error.hpp"

namespace distgraph {

/// A dense, row-major tensor: dtype, shape (rows first) and bytes. Rank 1 is a column of
/// scalars (one per row). Copies share the bytes, like Buffer.
struct HostTensor {
  DType dtype = DType::float32;
  std::vector<std::int64_t> shape;
  Buffer<std::byte> bytes;

  /// Wraps a typed buffer; `shape` defaults to 1-D of its size. Throws ShapeError when
  /// the shape does not multiply to the buffer's size.
  template <class T>
  static HostTensor from(Buffer<T> data, std::vector<std::int64_t> shape = {}) {
    if (shape.empty()) shape = {static_cast<std::int64_t>(data.size())};
    HostTensor t;
    t.dtype = dtype_of<T>;
    t.shape = std::move(shape);
    if (t.num_elements() != static_cast<std::int64_t>(data.size()))
      throw ShapeError("tensor", "shape has " + std::to_string(t.num_elements()) +
                                     " elements; buffer has " + std::to_string(data.size()));
    auto* p = reinterpret_cast<std::byte*>(data.data());
    t.bytes = Buffer<std::byte>(data.owner(), p, data.size() * sizeof(T));
    return t;
  }

  std::int64_t rows() const noexcept { return shape.empty() ? 1 : shape.front(); }
  std::int64_t num_elements() const noexcept {
    return std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
  }
  /// Elements per row (product of the trailing dimensions).
  std::int64_t row_elements() const noexcept {
    return shape.size() <= 1 ? 1
                             : std::accumulate(shape.begin() + 1, shape.end(), std::int64_t{1},
                                               std::multiplies<>());
  }
  std::size_t row_bytes() const noexcept {
    return static_cast<std::size_t>(row_elements()) * dtype_size(dtype);
  }
  /// Typed view; throws DTypeError naming `subject` if T is not the stored dtype.
  template <class T>
  const T* data_as(const std::string& subject = "tensor") const {
    require_dtype(subject, dtype, dtype_of<T>);
    return reinterpret_cast<const T*>(bytes.data());
  }

  /// Copies rows `rows` (each in [0, rows())) into a new owned tensor, in that order.
  /// The caller validates the row IDs.
  HostTensor gather_rows(std::span<const std::int64_t> row_ids) const {
    HostTensor out;
    out.dtype = dtype;
    out.shape = shape.empty() ? std::vector<std::int64_t>{1} : shape;
    out.shape[0] = static_cast<std::int64_t>(row_ids.size());
    const std::size_t rb = row_bytes();
    out.bytes = Buffer<std::byte>::zeros(rb * row_ids.size());
    for (std::size_t i = 0; i < row_ids.size(); ++i)
      std::memcpy(out.bytes.data() + i * rb,
                  bytes.data() + static_cast<std::size_t>(row_ids[i]) * rb, rb);
    return out;
  }
};

/// Named tensors to carry along with a graph (node data or edge data).
using TensorList = std::vector<std::pair<std::string, HostTensor>>;

}  // namespace distgraph
