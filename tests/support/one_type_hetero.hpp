// A homogeneous dataset restated as a typed one of one node type and one edge type: what
// the tests that the homogeneous case equals the one-type typed case compare.
#pragma once

#include "distgraph/io/dataset.hpp"
#include "distgraph/io/hetero_dataset.hpp"

namespace distgraph::test {

/// `d` as a typed dataset: node type "node", edge type "node:link:node", the same arrays.
inline HeteroDataset one_type_hetero(const Dataset& d) {
  HeteroDataset h;
  h.name = "one";
  h.types = TypeMap({"node"}, {d.num_nodes}, {{"node", "link", "node"}}, {d.num_edges()});
  h.src = {d.src};
  h.dst = {d.dst};
  h.feat = {d.feat};
  h.feat_dim = {d.feat_dim};
  h.target_ntype = "node";
  h.label = d.label;
  h.num_classes = d.num_classes;
  h.train_mask = d.train_mask;
  h.val_mask = d.val_mask;
  h.test_mask = d.test_mask;
  return h;
}

}  // namespace distgraph::test
