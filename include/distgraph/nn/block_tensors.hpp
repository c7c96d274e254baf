// BlockTensors: a sampling Block's CSR as int64 torch tensors, for message passing.
#pragma once

#include <torch/types.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/sampling/block.hpp"

namespace distgraph {

/// A Block as tensors (int64, on one device): edges are a CSR by destination, edge k goes
/// from source position `indices[k]` to destination position `dst_index[k]`, and the
/// destinations are the first `num_dst` of the `num_src` sources (Block's layout).
/// Copies share the tensors.
struct BlockTensors {
  torch::Tensor indptr;      ///< [num_dst + 1] edge offsets per destination
  torch::Tensor indices;     ///< [num_edges] source position of each edge
  torch::Tensor dst_index;   ///< [num_edges] destination position of each edge (CSR rows)
  torch::Tensor in_degrees;  ///< [num_dst] edges into each destination
  std::int64_t num_src = 0;
  std::int64_t num_dst = 0;

  std::int64_t num_edges() const { return indices.size(0); }
  torch::Device device() const { return indices.device(); }

  /// The same block on `device` (a no-op on the device it is on). `non_blocking` copies
  /// asynchronously from pinned host memory.
  BlockTensors to(torch::Device device, bool non_blocking = false) const {
    if (device == this->device()) return *this;
    return BlockTensors{indptr.to(device, non_blocking),
                        indices.to(device, non_blocking),
                        dst_index.to(device, non_blocking),
                        in_degrees.to(device, non_blocking),
                        num_src,
                        num_dst};
  }
};

namespace detail {

/// Throws ShapeError / IdOutOfRange unless `b` is a well-formed CSR block (checked once per
/// block, before any tensor is made: later kernels index without bounds checks).
inline void check_block(const Block& b) {
  const std::string who = "block_tensors";
  if (b.num_dst < 0 || b.num_dst > b.num_src())
    throw ShapeError(who, "num_dst " + std::to_string(b.num_dst) + " with " +
                              std::to_string(b.num_src()) +
                              " sources; expected 0 <= num_dst <= num_src");
  if (static_cast<std::int64_t>(b.indptr.size()) != b.num_dst + 1)
    throw ShapeError(who, "indptr has " + std::to_string(b.indptr.size()) + " entries; expected " +
                              "num_dst + 1 = " + std::to_string(b.num_dst + 1));
  if (b.indptr.front() != 0 || b.indptr.back() != b.num_edges())
    throw ShapeError(who, "indptr spans [" + std::to_string(b.indptr.front()) + ", " +
                              std::to_string(b.indptr.back()) + "); expected [0, " +
                              std::to_string(b.num_edges()) + ")");
  if (!std::is_sorted(b.indptr.begin(), b.indptr.end()))
    throw ShapeError(who, "indptr decreases; expected non-decreasing offsets");
  if (!b.indices.empty()) {
    const auto [lo, hi] = std::minmax_element(b.indices.begin(), b.indices.end());
    if (*lo < 0) throw IdOutOfRange(who + " source position", *lo, 0, b.num_src());
    if (*hi >= b.num_src()) throw IdOutOfRange(who + " source position", *hi, 0, b.num_src());
  }
}

/// An int64 CPU tensor over `v`'s storage, which it takes over (no copy).
inline torch::Tensor adopt(std::vector<std::int64_t>&& v) {
  if (v.empty()) return torch::empty({0}, torch::kLong);
  auto* owned = new std::vector<std::int64_t>(std::move(v));
  return torch::from_blob(
      owned->data(), {static_cast<std::int64_t>(owned->size())}, [owned](void*) { delete owned; },
      torch::TensorOptions().dtype(torch::kLong));
}

/// An int64 CPU tensor holding a copy of `v` (one memcpy).
inline torch::Tensor copy_of(const std::vector<std::int64_t>& v) {
  auto t = torch::empty({static_cast<std::int64_t>(v.size())}, torch::kLong);
  std::copy(v.begin(), v.end(), t.data_ptr<std::int64_t>());
  return t;
}

inline BlockTensors finish_block(torch::Tensor indptr, torch::Tensor indices, std::int64_t num_src,
                                 std::int64_t num_dst, torch::Device device) {
  indptr = indptr.to(device);
  indices = indices.to(device);
  auto deg = indptr.slice(0, 1) - indptr.slice(0, 0, num_dst);
  // Row index of each CSR edge, made by one kernel rather than a loop over edges.
  auto dst_index = torch::repeat_interleave(
      torch::arange(num_dst, torch::TensorOptions().dtype(torch::kLong).device(device)), deg,
      /*dim=*/{}, indices.size(0));
  return BlockTensors{std::move(indptr),
                      std::move(indices),
                      std::move(dst_index),
                      std::move(deg),
                      num_src,
                      num_dst};
}

}  // namespace detail

namespace detail {

/// Throws ShapeError naming `who` unless `h` is a [rows, cols] matrix (a layer's input).
inline void check_layer_input(const std::string& who, const torch::Tensor& h, std::int64_t rows,
                              std::int64_t cols) {
  if (h.dim() == 2 && h.size(0) == rows && h.size(1) == cols) return;
  std::string shape = "[";
  for (std::int64_t d = 0; d < h.dim(); ++d) shape += (d ? ", " : "") + std::to_string(h.size(d));
  throw ShapeError(who, "shape " + shape + "]; expected [" + std::to_string(rows) + ", " +
                            std::to_string(cols) + "]");
}

}  // namespace detail

/// Throws ShapeError naming `model` unless `blocks` has `num_layers` blocks that chain
/// (block l's destinations are block l+1's sources): what every model over blocks checks.
inline void check_block_chain(const std::string& model, const std::vector<BlockTensors>& blocks,
                              std::int64_t num_layers) {
  if (static_cast<std::int64_t>(blocks.size()) != num_layers)
    throw ShapeError(model + " blocks", std::to_string(blocks.size()) + " blocks; expected " +
                                            std::to_string(num_layers) + " (one per layer)");
  for (std::size_t l = 0; l + 1 < blocks.size(); ++l)
    if (blocks[l].num_dst != blocks[l + 1].num_src)
      throw ShapeError(model + " blocks",
                       "block " + std::to_string(l) + " has " + std::to_string(blocks[l].num_dst) +
                           " destinations, block " + std::to_string(l + 1) + " " +
                           std::to_string(blocks[l + 1].num_src) + " sources; expected equal");
}

/// `b` as tensors on `device`, its arrays copied (one memcpy each). Throws ShapeError for
/// inconsistent CSR arrays and IdOutOfRange for a source position outside [0, num_src).
inline BlockTensors block_tensors(const Block& b, torch::Device device = torch::kCPU) {
  detail::check_block(b);
  return detail::finish_block(detail::copy_of(b.indptr), detail::copy_of(b.indices), b.num_src(),
                              b.num_dst, device);
}

/// `b` as tensors on `device`; on the CPU the tensors take over b's indptr and indices
/// without copying (b's other arrays are left as they were). Throws as the copying overload.
inline BlockTensors block_tensors(Block&& b, torch::Device device = torch::kCPU) {
  detail::check_block(b);
  const std::int64_t num_src = b.num_src(), num_dst = b.num_dst;
  return detail::finish_block(detail::adopt(std::move(b.indptr)),
                              detail::adopt(std::move(b.indices)), num_src, num_dst, device);
}

/// Every block of a mini-batch (input layer first) as tensors; see block_tensors(Block&&).
inline std::vector<BlockTensors> block_tensors(std::vector<Block>&& blocks,
                                               torch::Device device = torch::kCPU) {
  std::vector<BlockTensors> out;
  out.reserve(blocks.size());
  for (Block& b : blocks) out.push_back(block_tensors(std::move(b), device));
  return out;
}

/// Copying overload of block_tensors for a batch's blocks.
inline std::vector<BlockTensors> block_tensors(const std::vector<Block>& blocks,
                                               torch::Device device = torch::kCPU) {
  std::vector<BlockTensors> out;
  out.reserve(blocks.size());
  for (const Block& b : blocks) out.push_back(block_tensors(b, device));
  return out;
}

}  // namespace distgraph
