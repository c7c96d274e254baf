// Test helpers for data loaders: ID ranges, whole epochs, and batch equality.
#pragma once

#include <cstdint>
#include <vector>

#include "distgraph/loaders/edge_data_loader.hpp"
#include "distgraph/loaders/node_data_loader.hpp"

namespace distgraph::test {

/// from, from + step, ... below n.
inline std::vector<std::int64_t> every(std::int64_t step, std::int64_t n, std::int64_t from = 0) {
  std::vector<std::int64_t> ids;
  for (std::int64_t v = from; v < n; v += step) ids.push_back(v);
  return ids;
}

/// All batches of epoch `epoch`, in order.
template <class Loader>
auto whole_epoch(Loader& loader, std::int64_t epoch) {
  std::vector<typename Loader::batch_type> out;
  for (auto& b : loader.epoch(epoch)) out.push_back(std::move(b));
  return out;
}

/// Whether two block lists are equal member by member.
inline bool same_blocks(const std::vector<Block>& a, const std::vector<Block>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t l = 0; l < a.size(); ++l)
    if (a[l].src_nodes != b[l].src_nodes || a[l].num_dst != b[l].num_dst ||
        a[l].indptr != b[l].indptr || a[l].indices != b[l].indices || a[l].eid != b[l].eid)
      return false;
  return true;
}

/// Whether two batches carry the same typed inputs (types, and rows per node type).
template <class Batch>
bool same_typed_inputs(const Batch& a, const Batch& b) {
  if (a.input_types != b.input_types || a.typed_features.size() != b.typed_features.size())
    return false;
  for (std::size_t i = 0; i < a.typed_features.size(); ++i) {
    const TypedRows &x = a.typed_features[i], &y = b.typed_features[i];
    if (x.ntype != y.ntype || x.positions != y.positions || x.rows != y.rows || x.cols != y.cols)
      return false;
  }
  return true;
}

/// Whether two batches hold the same nodes, blocks and data (timings aside).
inline bool same_batch(const NodeBatch& a, const NodeBatch& b) {
  return a.index == b.index && a.input_nodes == b.input_nodes && a.output_nodes == b.output_nodes &&
         same_blocks(a.blocks, b.blocks) && a.features == b.features && a.labels == b.labels &&
         same_typed_inputs(a, b);
}

inline bool same_batch(const EdgeBatch& a, const EdgeBatch& b) {
  return a.index == b.index && a.eids == b.eids && a.pos_src == b.pos_src &&
         a.pos_dst == b.pos_dst && a.neg_src == b.neg_src && a.neg_dst == b.neg_dst &&
         a.input_nodes == b.input_nodes && a.output_nodes == b.output_nodes &&
         same_blocks(a.blocks, b.blocks) && a.features == b.features && same_typed_inputs(a, b);
}

}  // namespace distgraph::test
