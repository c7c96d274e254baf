// Test helper: a block's edges as a dense matrix, for checking sparse layers against the
// same formula written with dense tensors.
#pragma once

#include <torch/types.h>

#include <cstddef>
#include <cstdint>

#include "distgraph/sampling/block.hpp"

namespace distgraph::test {

/// Dense [num_dst, num_src] edge counts of `b` (float64; a repeated edge counts twice).
inline torch::Tensor dense_adjacency(const Block& b) {
  auto a = torch::zeros({b.num_dst, b.num_src()}, torch::kDouble);
  for (std::int64_t i = 0; i < b.num_dst; ++i)
    for (auto k = b.indptr[static_cast<std::size_t>(i)];
         k < b.indptr[static_cast<std::size_t>(i) + 1]; ++k)
      a[i][b.indices[static_cast<std::size_t>(k)]] += 1.0;
  return a;
}

}  // namespace distgraph::test
