// Summary statistics of a Dataset: sizes, degree distribution, classes, split sizes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "distgraph/io/dataset.hpp"

namespace distgraph {

/// Degree distribution summary (in-degree: each edge counted at its destination).
struct DegreeStats {
  std::int64_t min = 0, max = 0, median = 0, p90 = 0, p99 = 0;
  double mean = 0;
  std::int64_t isolated = 0;  ///< nodes with neither in- nor out-edges
  std::int64_t self_loops = 0;
  /// histogram[k] = number of nodes with in-degree in [2^k - 1, 2^(k+1) - 1): 0, 1-2, 3-6, ...
  std::vector<std::int64_t> log2_histogram;
};

/// What `distgraph info` prints.
struct DatasetStats {
  std::int64_t num_nodes = 0, num_edges = 0, feat_dim = 0, num_classes = 0;
  DegreeStats in_degree;
  std::vector<std::int64_t> class_counts;  ///< over all nodes
  std::int64_t train = 0, val = 0, test = 0;
};

/// Computes DatasetStats in O(N + E) time and O(N) memory. Assumes a validated Dataset
/// (as load_dataset returns). Thread-compatible.
inline DatasetStats describe(const Dataset& d) {
  DatasetStats s;
  s.num_nodes = d.num_nodes;
  s.num_edges = d.num_edges();
  s.feat_dim = d.feat_dim;
  s.num_classes = d.num_classes;
  const auto n = static_cast<std::size_t>(d.num_nodes);
  std::vector<std::int64_t> in_deg(n, 0);
  std::vector<std::uint8_t> has_out(n, 0);
  for (std::size_t e = 0; e < d.src.size(); ++e) {
    in_deg[static_cast<std::size_t>(d.dst[e])]++;
    has_out[static_cast<std::size_t>(d.src[e])] = 1;
    s.in_degree.self_loops += d.src[e] == d.dst[e];
  }
  for (std::size_t v = 0; v < n; ++v) s.in_degree.isolated += in_deg[v] == 0 && !has_out[v];
  if (n > 0) {
    std::vector<std::int64_t> sorted = in_deg;
    std::sort(sorted.begin(), sorted.end());
    auto q = [&](double f) { return sorted[std::min(n - 1, static_cast<std::size_t>(f * n))]; };
    s.in_degree.min = sorted.front();
    s.in_degree.max = sorted.back();
    s.in_degree.median = q(0.5);
    s.in_degree.p90 = q(0.9);
    s.in_degree.p99 = q(0.99);
    s.in_degree.mean = static_cast<double>(s.num_edges) / static_cast<double>(n);
    for (std::int64_t deg : in_deg) {
      std::size_t k = 0;
      while ((std::int64_t{2} << k) - 1 <= deg) ++k;
      if (s.in_degree.log2_histogram.size() <= k) s.in_degree.log2_histogram.resize(k + 1, 0);
      s.in_degree.log2_histogram[k]++;
    }
  }
  if (!d.label.empty() && d.num_classes > 0) {
    s.class_counts.assign(static_cast<std::size_t>(d.num_classes), 0);
    for (std::int64_t c : d.label) s.class_counts[static_cast<std::size_t>(c)]++;
  }
  auto count = [](const Buffer<bool>& m) {
    return static_cast<std::int64_t>(std::count(m.begin(), m.end(), true));
  };
  s.train = count(d.train_mask);
  s.val = count(d.val_mask);
  s.test = count(d.test_mask);
  return s;
}

}  // namespace distgraph
