// hetero_tour: a typed (heterogeneous) graph end to end, without libtorch. Partitions a
// typed dataset folder (or the built-in hsbm graph) into 2 parts, opens them standalone,
// and shows the typed DistGraph API: per-type counts, typed feature rows, a node_split
// over two node types, and a loader with per-relation fanouts from a map that omits
// relations. `hetero_tour [DATASET_DIR [OVERRIDES [OUT_DIR]]]`; OVERRIDES is
// --relation-fanouts text ("rev_pv=20,paper:pa:author=5/10"), by default the graph's first
// relation at 2 neighbours per layer.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "distgraph/distributed/node_split.hpp"
#include "distgraph/distributed/standalone.hpp"
#include "distgraph/io/hetero_dataset.hpp"
#include "distgraph/io/hetero_synthetic.hpp"
#include "distgraph/loaders/node_data_loader.hpp"
#include "distgraph/partition/partition_hetero.hpp"
#include "distgraph/sampling/per_relation_sampler.hpp"
#include "distgraph/sampling/relation_fanouts.hpp"

namespace {

/// The relation part of a canonical name: "writes" of "author:writes:paper".
std::string relation_of(const std::string& canonical) {
  const auto a = canonical.find(':'), b = canonical.rfind(':');
  return canonical.substr(a + 1, b - a - 1);
}

}  // namespace

int main(int argc, char** argv) try {
  namespace fs = std::filesystem;
  const distgraph::HeteroDataset data =
      argc > 1 ? distgraph::load_hetero_dataset(argv[1]) : distgraph::hsbm_dataset();
  const fs::path out = argc > 3 ? fs::path(argv[3]) : fs::temp_directory_path() / "hetero_tour";

  // 1. Partition: METIS, balancing each type and the target's train/val/test split.
  const auto classes = distgraph::hetero_split_classes(data);
  const auto parts = distgraph::partition_hetero_dataset(
      data, data.name, 2, out, {.balance_ntypes = classes, .seed = 1});
  std::printf("%s: partitioned into 2 parts under %s, %lld edges cut\n", data.name.c_str(),
              out.string().c_str(), static_cast<long long>(parts.cross_edges));

  // 2. Open it standalone: every partition's server in this process.
  distgraph::StandaloneCluster<> cluster(out / (data.name + ".json"));
  auto g = cluster.graph();
  for (const auto& t : g.ntypes()) std::printf("  node type %-10s %7lld\n", t.c_str(),
                                               static_cast<long long>(g.nodes(t).count()));
  for (const auto& e : g.etypes()) std::printf("  edge type %-36s %7lld\n", e.c_str(),
                                               static_cast<long long>(g.edges(e).count()));

  // 3. Typed data: rows are addressed by global ID; to_global converts type-wise IDs.
  for (const auto& t : g.ntypes()) {
    const auto nodes = g.nodes(t);
    try {
      auto feat = nodes.data<float>("feat");  // "<ntype>/feat": each type its own width
      const std::vector<std::int64_t> wise{0, 1, 2};
      const auto ids = nodes.to_global(wise);
      const std::vector<float> rows = feat.pull(ids);
      std::printf("  %s/feat: %lld columns; type-wise 0,1,2 are global %lld,%lld,%lld; "
                  "row 0 starts %.3f %.3f\n",
                  t.c_str(), static_cast<long long>(feat.num_cols()),
                  static_cast<long long>(ids[0]), static_cast<long long>(ids[1]),
                  static_cast<long long>(ids[2]), rows[0], rows[1]);
    } catch (const distgraph::NotFound&) {
      std::printf("  %s: featureless (a model learns an embedding)\n", t.c_str());
    }
  }

  // 4. node_split over two node types in one call (DGL splits one type per call).
  const auto& ntypes = g.ntypes();
  std::vector<distgraph::TypedIds> seeds;
  for (std::size_t t = 0; t < std::min<std::size_t>(2, ntypes.size()); ++t) {
    distgraph::TypedIds s{.ntype = ntypes[t], .ids = {}};  // every 50th node of the type
    for (std::int64_t i = 0; i < g.nodes(ntypes[t]).count(); i += 50) s.ids.push_back(i);
    seeds.push_back(std::move(s));
  }
  std::vector<std::int64_t> mine;  // rank 0's share, the loader's seeds below
  for (std::int32_t rank = 0; rank < 2; ++rank) {
    const auto share = distgraph::node_split(std::span<const distgraph::TypedIds>(seeds),
                                             g.book(), {.rank = rank, .num_trainers = 2});
    std::map<std::int32_t, std::int64_t> per_type;
    for (const auto t : g.node_types_of(share)) ++per_type[t];
    std::printf("node_split, rank %d of 2: %zu seeds:", static_cast<int>(rank), share.size());
    for (const auto& [t, n] : per_type)
      std::printf(" %s %lld", ntypes[static_cast<std::size_t>(t)].c_str(),
                  static_cast<long long>(n));
    std::printf("\n");
    if (rank == 0) mine = share;
  }

  // 5. Per-relation fanouts: a default per layer, overrides for some relations only.
  distgraph::RelationFanouts rf;
  rf.layers = {10, 10};  // input layer first, like --fanouts 10,10
  if (argc > 2)
    rf.overrides = distgraph::RelationFanouts::parse_overrides(argv[2]);  // CLI syntax
  else
    rf.overrides = {{relation_of(g.etypes().front()), {2}}};  // by unique relation name
  const auto resolved = rf.resolve(g.etypes());  // resolved[layer][relation]
  distgraph::LoaderOptions lo{.batch_size = 64, .seed = 1, .label = ""};
  for (const auto& layer : resolved)
    lo.layer_samplers.push_back(distgraph::PerRelationSampler::spec(layer));
  // The fanouts live in the specs: -1 per layer is only the layer count.
  distgraph::NodeDataLoader loader(g, mine, std::vector<std::int64_t>(resolved.size(), -1), lo);
  for (distgraph::NodeBatch& b : loader.epoch(0)) {
    std::printf("batch 0: %zu seeds, %zu input nodes, typed feature rows of %zu types\n",
                b.output_nodes.size(), b.input_nodes.size(), b.typed_features.size());
    for (std::size_t l = 0; l < b.blocks.size(); ++l) {
      std::vector<std::int64_t> count(g.etypes().size(), 0);
      for (const auto r : g.edge_types_of(b.blocks[l].eid)) ++count[static_cast<std::size_t>(r)];
      for (std::size_t r = 0; r < count.size(); ++r)
        std::printf("  layer %zu %-36s fanout %3lld  edges %6lld\n", l, g.etypes()[r].c_str(),
                    static_cast<long long>(resolved[l][r]), static_cast<long long>(count[r]));
    }
    break;  // one batch is the tour
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "hetero_tour: %s\n", e.what());
  return 1;
}
