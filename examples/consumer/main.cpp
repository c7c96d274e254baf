// Builds a small graph with the installed distgraph headers and prints its degree sum.
#include <cstdio>

#include <distgraph/distgraph.hpp>

int main() {
  // A ring of 5 nodes, stored in both directions.
  std::vector<std::int64_t> src{0, 1, 2, 3, 4}, dst{1, 2, 3, 4, 0};
  distgraph::Coo coo{5, distgraph::Buffer<std::int64_t>(src), distgraph::Buffer<std::int64_t>(dst)};
  auto g = distgraph::build_graph(coo, {.symmetrize = true});
  std::int64_t degree_sum = 0;
  for (std::int64_t v = 0; v < g.num_nodes(); ++v) degree_sum += g.out_degree(v);
  std::printf("nodes=%lld edges=%lld degree_sum=%lld\n", static_cast<long long>(g.num_nodes()),
              static_cast<long long>(g.num_edges()), static_cast<long long>(degree_sum));
  return degree_sum == 10 ? 0 : 1;
}
