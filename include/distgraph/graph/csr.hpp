// Csr: compressed sparse rows with edge IDs; CSR by source and CSC by destination alike.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "distgraph/core/buffer.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/core/parallel.hpp"

namespace distgraph {

/// Compressed sparse rows. Row r's neighbours are `indices[indptr[r] .. indptr[r+1])` and
/// `edge_ids` holds the edge ID of each of those entries. The same struct is a CSR by
/// source (rows = src, out-neighbours) or a CSC by destination (rows = dst, in-neighbours);
/// build_csr sorts each row by neighbour ID, then edge ID. Arrays are Buffers so a loader
/// can hand out memory-mapped partitions without copying. Accessors do not check `row`;
/// concurrent reads are thread-safe.
struct Csr {
  std::int64_t num_rows = 0, num_cols = 0;
  Buffer<std::int64_t> indptr;    ///< num_rows + 1 offsets, indptr[0] = 0
  Buffer<std::int64_t> indices;   ///< num_edges() column IDs in [0, num_cols)
  Buffer<std::int64_t> edge_ids;  ///< num_edges() edge IDs, parallel to indices

  std::int64_t num_edges() const noexcept { return static_cast<std::int64_t>(indices.size()); }
  std::int64_t degree(std::int64_t row) const noexcept {
    return indptr[static_cast<std::size_t>(row) + 1] - indptr[static_cast<std::size_t>(row)];
  }
  std::span<const std::int64_t> neighbors(std::int64_t row) const noexcept {
    return indices.span().subspan(static_cast<std::size_t>(indptr[static_cast<std::size_t>(row)]),
                                  static_cast<std::size_t>(degree(row)));
  }
  /// Edge IDs of row `row`, parallel to `neighbors(row)`.
  std::span<const std::int64_t> edges(std::int64_t row) const noexcept {
    return edge_ids.span().subspan(static_cast<std::size_t>(indptr[static_cast<std::size_t>(row)]),
                                   static_cast<std::size_t>(degree(row)));
  }

  /// Checks the structure of arrays that came from outside (a file, a peer): lengths,
  /// indptr monotone from 0 to num_edges(), column IDs in range. Throws ShapeError or
  /// IdOutOfRange naming `subject` ("csr" by default) and the bad value. Edge IDs are not
  /// range-checked: their range is the owner's business (a partition holds a subset).
  void validate(const std::string& subject = "csr", unsigned num_threads = 0) const {
    if (num_rows < 0 || num_cols < 0)
      throw ShapeError(subject, "shape (" + std::to_string(num_rows) + ", " +
                                    std::to_string(num_cols) + "); expected non-negative");
    if (indptr.size() != static_cast<std::size_t>(num_rows) + 1)
      throw ShapeError(subject + " indptr",
                       "length " + std::to_string(indptr.size()) +
                           "; expected num_rows + 1 = " + std::to_string(num_rows + 1));
    if (edge_ids.size() != indices.size())
      throw ShapeError(subject + " edge_ids", "length " + std::to_string(edge_ids.size()) +
                                                  "; expected " + std::to_string(indices.size()) +
                                                  " like indices");
    if (indptr[0] != 0 || indptr[static_cast<std::size_t>(num_rows)] != num_edges())
      throw ShapeError(subject + " indptr",
                       "runs from " + std::to_string(indptr[0]) + " to " +
                           std::to_string(indptr[static_cast<std::size_t>(num_rows)]) +
                           "; expected 0 to " + std::to_string(num_edges()));
    for (std::int64_t r = 0; r < num_rows; ++r)
      if (degree(r) < 0)
        throw ShapeError(subject + " indptr", "decreases at row " + std::to_string(r) +
                                                  "; expected non-decreasing offsets");
    const std::int64_t n = num_cols;
    const std::int64_t* p = indices.data();
    parallel_chunks(0, num_edges(), num_threads, [&](unsigned, std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i)
        if (static_cast<std::uint64_t>(p[i]) >= static_cast<std::uint64_t>(n))
          throw IdOutOfRange(subject + " indices", p[i], 0, n);
    });
  }
};

}  // namespace distgraph
