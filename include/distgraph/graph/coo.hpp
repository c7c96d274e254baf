// Coo: an edge list (src[i], dst[i]) over homogeneous node IDs, the builder's input.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "distgraph/core/buffer.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/core/parallel.hpp"

namespace distgraph {

namespace detail {

/// Throws IdOutOfRange naming `subject` for the first (lowest-index) ID of `ids` outside
/// `[0, n)`. Scans in parallel; which ID is reported does not depend on `num_threads`.
inline void check_ids_in_range(std::span<const std::int64_t> ids, std::int64_t n,
                               const std::string& subject, unsigned num_threads = 0) {
  const auto size = static_cast<std::int64_t>(ids.size());
  const unsigned chunks = plan_chunks(0, size, num_threads, 1 << 16);
  std::vector<std::int64_t> first_bad(chunks, -1);
  parallel_chunks(
      0, size, num_threads,
      [&](unsigned c, std::int64_t b, std::int64_t e) {
        const std::int64_t* p = ids.data();
        // An unsigned compare folds both bounds into one test, so the loop vectorises.
        std::int64_t bad = 0;
        for (std::int64_t i = b; i < e; ++i)
          bad += static_cast<std::uint64_t>(p[i]) >= static_cast<std::uint64_t>(n);
        if (bad == 0) return;
        for (std::int64_t i = b; i < e; ++i)
          if (static_cast<std::uint64_t>(p[i]) >= static_cast<std::uint64_t>(n)) {
            first_bad[c] = i;
            return;
          }
      },
      1 << 16);
  for (std::int64_t i : first_bad)
    if (i >= 0) throw IdOutOfRange(subject, ids[static_cast<std::size_t>(i)], 0, n);
}

}  // namespace detail

/// A directed edge list: edge i goes from `src[i]` to `dst[i]`, both homogeneous node IDs
/// in `[0, num_nodes)`. Position i is the edge's ID unless a builder says otherwise
/// (see build_graph). Copies share the arrays (Buffer semantics).
struct Coo {
  std::int64_t num_nodes = 0;
  Buffer<std::int64_t> src, dst;

  std::int64_t num_edges() const noexcept { return static_cast<std::int64_t>(src.size()); }

  /// Throws ShapeError if src and dst differ in length or num_nodes is negative, and
  /// IdOutOfRange naming "src" or "dst" and the first bad value otherwise.
  void validate(unsigned num_threads = 0) const {
    if (num_nodes < 0)
      throw ShapeError("coo", "num_nodes " + std::to_string(num_nodes) + "; expected >= 0");
    if (src.size() != dst.size())
      throw ShapeError("coo", "src has " + std::to_string(src.size()) + " ids, dst has " +
                                  std::to_string(dst.size()) + "; expected equal lengths");
    detail::check_ids_in_range(src.span(), num_nodes, "src", num_threads);
    detail::check_ids_in_range(dst.span(), num_nodes, "dst", num_threads);
  }
};

}  // namespace distgraph
