// cluster_checksum: the smallest distgraph trainer program. It runs unchanged standalone
// (`cluster_checksum PART_CONFIG`) and under `distgraph launch ... -- cluster_checksum`:
// every trainer pulls the features of its share of the nodes, the shares are summed on
// the servers, and rank 0 prints one checksum that is the same in both modes.
#include <cmath>
#include <cstdio>
#include <exception>
#include <numeric>
#include <vector>

#include "distgraph/distributed/node_split.hpp"
#include "distgraph/runtime/initialize.hpp"

int main(int argc, char** argv) try {
  distgraph::InitOptions opts;
  if (argc > 1) opts.part_config = argv[1];
  distgraph::Context ctx = distgraph::initialize(opts);
  if (ctx.is_server()) return 0;  // this process was a server and has been shut down

  distgraph::RuntimeGraph g = ctx.graph();
  // Every node once, split evenly over the trainers (no padding: a plain sum).
  std::vector<std::int64_t> all(static_cast<std::size_t>(g.num_nodes()));
  std::iota(all.begin(), all.end(), 0);
  const auto mine = distgraph::node_split(
      std::span<const std::int64_t>(all), g.book(),
      {.rank = ctx.rank(), .num_trainers = ctx.world_size(), .force_even = false});
  const auto feat = g.ndata<float>("feat");
  const auto rows = feat.pull(mine);
  // Integer arithmetic: the sum is exact whatever order the trainers' shares arrive in.
  std::int64_t local = 0;
  for (std::size_t i = 0; i < mine.size(); ++i)
    for (std::int64_t c = 0; c < feat.num_cols(); ++c)
      local +=
          std::llround(
              rows[i * static_cast<std::size_t>(feat.num_cols()) + static_cast<std::size_t>(c)] *
              1e4) *
          (mine[i] % 97 + 1);
  // Sum the shares on the servers: a one-row tensor every trainer adds to.
  auto total = distgraph::DistTensor<std::int64_t, distgraph::RuntimeClient>::create(
      ctx.client(), "checksum", distgraph::RowKind::node, 1);
  const std::vector<std::int64_t> row0{0};
  total.push_add(row0, std::vector<std::int64_t>{local});
  ctx.barrier("checksum");
  if (ctx.rank() == 0) {
    std::printf("trainers %d, nodes %lld, checksum %lld\n", ctx.world_size(),
                static_cast<long long>(g.num_nodes()), static_cast<long long>(total.pull(row0)[0]));
    std::fflush(stdout);
  }
  ctx.barrier("checksum-read");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "cluster_checksum: %s\n", e.what());
  return 1;
}
