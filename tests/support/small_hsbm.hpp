// A small built-in typed graph for tests: hsbm at a few hundred nodes, fixed seed.
#pragma once

#include "distgraph/io/hetero_synthetic.hpp"

namespace distgraph::test {

/// 300 papers, 120 authors, 8 venues, 4 classes; features 5 (paper) and 3 (author) wide.
inline HeteroDataset small_hsbm() {
  HsbmOptions o;
  o.num_papers = 300;
  o.num_authors = 120;
  o.num_venues = 8;
  o.num_classes = 4;
  o.paper_feat_dim = 5;
  o.author_feat_dim = 3;
  o.avg_citations = 3;
  o.seed = 11;
  return hsbm_dataset(o);
}

}  // namespace distgraph::test
