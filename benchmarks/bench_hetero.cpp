// bench_hetero: typed graphs (hsbm): per-relation sampling, the typed data loader and R-GCN
// epochs, standalone and on a loopback cluster, each beside a bound measured in the same run.
//
//   bench_hetero [--smoke | --small] [--papers P] [--batches B] [--runs R]
//                [--loader-batches L] [--loader-epochs E] [--epochs T] [--figure NAME]
//                [--train-cli PATH] [--json]
//
// The graph: hsbm_dataset with HsbmOptions defaults (20,000 papers, 8,000 authors, 40 venues,
// 4 classes, 32-dim paper and author features, featureless venues, seed 42; about 340k
// edges in 5 relations: writes, rev_writes, published_in, rev_published_in, cites). --papers
// P scales papers and authors (authors = 2P/5); --small is --papers 5000, --smoke --papers
// 1000 with 8 venues and one run of everything (a few seconds plus the training runs).
// Full size takes about two minutes in all on 2 cores. It is partitioned in 2 (METIS,
// seed 0) under a temporary folder and written there as a dataset folder for the CLI.
// Figures:
//   hetero_sample  sampled edges/s of PerRelationSampler through sample_neighbors_local on
//                  the whole graph (group_in_edges_by_type of hetero_graph), one thread, B
//                  batches of 1000 seeds uniform over all nodes (every type: paper seeds
//                  alone have no rev_writes or published_in in-edges), one layer. Overall
//                  (relation "all"): fanout 10 for every relation; bound: UniformSampler
//                  with fanout 10 over the relation-split CSC (the same edges, row v*R+r =
//                  v's in-edges of relation r) with seeds {v*R+r}: the homogeneous code
//                  path picking exactly as many edges. The note and params give the
//                  per-sampled-edge cost typed / homogeneous (bound / value; target <= 1.3,
//                  reported, not asserted). A second "all" figure takes UniformSampler with
//                  fanout 50 (the sum) over the plain homogeneous CSC, same seeds: it picks
//                  ~10% more edges and draws far less (most rows have < 50 edges and are
//                  copied whole), so its per-edge cost is a looser bound. Per relation r
//                  (params.relation): fanout 10 for r and 0 for the others; bound:
//                  UniformSampler fanout 10 over the CSC of r's edges alone (same node IDs,
//                  same seeds), so both pick exactly the same number of edges.
//   hetero_loader  batches/s of a NodeDataLoader over a StandaloneCluster of the 2 typed
//                  partitions: 2 layers of PerRelationSampler::spec (10 per relation), batch
//                  1000, 1 prefetch thread, typed features "feat" and "paper/label", L
//                  batches of distinct random papers per epoch, best of E epochs after a
//                  warm-up. Bound: bench_policies' in-memory ceiling made typed: the same
//                  seed batches through MultiLayerNeighborSampler<PerRelationSampler> over
//                  the whole graph, then a memcpy gather of each input node's row from its
//                  type's feature table, one thread; bound and loader epochs alternate.
//   rgcn_epoch_standalone  seconds per epoch of train_hetero_node_classification
//                  (HeteroNodeClassificationOptions defaults: rgcn, hidden 64, fanouts
//                  [10, 10] per relation, batch 128, target "paper") over the StandaloneCluster
//                  (in-process servers), mean of T epochs after one warm-up.
//   rgcn_epoch_dist  the real CLI: `distgraph-train DIR --part-config CONFIG --parts 2
//                  --epochs 1+T --hidden 64 --fanouts 10,10 --batch-size 128 --json --out RUN`
//                  (the library defaults spelled out; 2 loopback machines x (1 server + 1
//                  trainer)), trainer 0's epoch_s from the per-epoch JSON lines, mean of T
//                  after the first; the result line's epoch_s_mean is in params.
// Bound of both epoch figures (bound_name in_memory_sample+gather): the epoch's input
// pipeline with nothing distributed in the way: the epoch's batches of training papers
// (standalone: all of them; dist: trainer 0's half) sampled from the whole graph as the
// loader bound does and their typed input rows memcpy-gathered, one thread, best of R. It
// leaves out the model's compute, so the ratio says how far the epoch is from a pure data
// pipeline floor (how much of it is compute, RPC and overheads), not from a compute optimum.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/memory.hpp"
#include "distgraph/core/timer.hpp"
#include "distgraph/distributed/standalone.hpp"
#include "distgraph/io/hetero_dataset.hpp"
#include "distgraph/io/hetero_synthetic.hpp"
#include "distgraph/loaders/loader_options.hpp"
#include "distgraph/loaders/node_data_loader.hpp"
#include "distgraph/partition/partition_hetero.hpp"
#include "distgraph/sampling/local_graph_view.hpp"
#include "distgraph/sampling/multi_layer.hpp"
#include "distgraph/sampling/per_relation_sampler.hpp"
#include "distgraph/sampling/sample_local.hpp"
#include "distgraph/sampling/uniform_sampler.hpp"
#include "distgraph/tasks/hetero_node_classification.hpp"
#include "support/bounds.hpp"
#include "support/flags.hpp"
#include "support/report.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#ifndef DISTGRAPH_TRAIN_CLI
#define DISTGRAPH_TRAIN_CLI "distgraph-train"
#endif

namespace {

namespace fs = std::filesystem;
using namespace distgraph;
using bench::Figure;
using bench::Kind;

struct Args {
  std::int64_t papers = 20000;  ///< HsbmOptions' default
  std::int64_t venues = 40;
  std::int64_t batches = 20;  ///< hetero_sample batches per timed run
  int runs = 5;               ///< best of
  std::int64_t loader_batches = 20;
  int loader_epochs = 3;
  int epochs = 3;  ///< timed training epochs (after one warm-up)
  std::string figure;
  std::string cli = DISTGRAPH_TRAIN_CLI;
  std::string size = "full";
};

/// Parses the flags; --smoke and --small (no value) set sizes that later flags may override.
Args parse(int argc, char** argv) {
  Args a;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--smoke") == 0) {
      a.size = "smoke";
      a.papers = 1000;
      a.venues = 8;
      a.batches = 2;
      a.runs = 1;
      a.loader_batches = 1;
      a.loader_epochs = 1;
      a.epochs = 1;
    } else if (std::strcmp(argv[i], "--small") == 0) {
      a.size = "small";
      a.papers = 5000;
      a.loader_batches = 5;
    } else {
      rest.push_back(argv[i]);
    }
  }
  bench::Flags("bench_hetero")
      .add("--papers", a.papers, 100, 10'000'000)
      .add("--batches", a.batches, 1, 100'000)
      .add("--runs", a.runs, 1, 100)
      .add("--loader-batches", a.loader_batches, 1, 10'000)
      .add("--loader-epochs", a.loader_epochs, 1, 100)
      .add("--epochs", a.epochs, 1, 1000)
      .add("--figure", a.figure, "NAME")
      .add("--train-cli", a.cli, "PATH")
      .parse(static_cast<int>(rest.size()), rest.data());
  return a;
}

constexpr std::int64_t batch = 1000;  ///< seeds per sample call and per loader batch
constexpr std::int64_t fanout = 10;   ///< per relation
constexpr std::uint64_t loader_seed = 1;
constexpr int parts = 2;

struct Bench {
  Args args;
  bench::Reporter rep;
  HeteroDataset data{};
  Graph graph{};         ///< hetero_graph(data): homogeneous IDs = input IDs
  TypedInEdges typed{};  ///< graph's CSC grouped by edge type
  std::int32_t relations = 0;
  fs::path dataset_dir{}, config{};
  nlohmann::json params{};
};

/// Node type of homogeneous ID v (a handful of types: a linear scan).
std::int32_t type_of(const HeteroDataset& d, std::int64_t v) {
  for (std::int32_t t = 0; t < d.types.num_node_types(); ++t)
    if (v < d.types.node_range(NodeType(t)).end) return t;
  return d.types.num_node_types() - 1;
}

/// The typed gather of the bounds: each input node's row of its type's feature table
/// (featureless types skipped) into one buffer per type, one memcpy per row.
void gather_typed(const HeteroDataset& d, std::span<const std::int64_t> nodes,
                  std::vector<std::vector<float>>& rows) {
  const auto nt = static_cast<std::size_t>(d.types.num_node_types());
  rows.resize(nt);
  std::vector<std::size_t> count(nt, 0);
  for (const auto v : nodes) ++count[static_cast<std::size_t>(type_of(d, v))];
  for (std::size_t t = 0; t < nt; ++t)
    rows[t].resize(count[t] * static_cast<std::size_t>(d.feat_dim[t]));
  std::fill(count.begin(), count.end(), 0);
  for (const auto v : nodes) {
    const auto t = static_cast<std::size_t>(type_of(d, v));
    const auto w = static_cast<std::size_t>(d.feat_dim[t]);
    if (w == 0) continue;
    const auto i = static_cast<std::size_t>(
        v - d.types.node_range(NodeType(static_cast<std::int32_t>(t))).begin);
    std::memcpy(rows[t].data() + count[t]++ * w, d.feat[t].data() + i * w, w * sizeof(float));
  }
}

/// One epoch of the typed in-memory ceiling, in seconds: each batch's blocks from the whole
/// graph, then the typed gather of its input rows.
double in_memory_epoch(const Bench& b, const MultiLayerNeighborSampler<PerRelationSampler>& s,
                       const std::vector<std::vector<std::int64_t>>& batches, std::int64_t epoch) {
  std::vector<std::vector<float>> rows;
  const LocalGraphView view = b.typed.view();
  Stopwatch clock;
  for (std::size_t i = 0; i < batches.size(); ++i) {
    const auto mb = s.sample_blocks(
        view, batches[i],
        {.seed = loader_seed, .epoch = epoch, .batch = static_cast<std::int64_t>(i)});
    gather_typed(b.data, mb.input_nodes, rows);
  }
  return clock.seconds();
}

MultiLayerNeighborSampler<PerRelationSampler> typed_sampler(const Bench& b, std::size_t layers) {
  return MultiLayerNeighborSampler<PerRelationSampler>(
      std::vector<std::int64_t>(layers, -1),
      PerRelationSampler(b.typed.view(), b.typed.edge_types,
                         std::vector<std::int64_t>(static_cast<std::size_t>(b.relations), fanout)),
      {.num_threads = 1});
}

/// `ids` cut into batches of `size`.
std::vector<std::vector<std::int64_t>> cut(const std::vector<std::int64_t>& ids,
                                           std::int64_t size) {
  std::vector<std::vector<std::int64_t>> out;
  for (std::size_t at = 0; at < ids.size(); at += static_cast<std::size_t>(size))
    out.emplace_back(ids.begin() + static_cast<std::ptrdiff_t>(at),
                     ids.begin() + static_cast<std::ptrdiff_t>(
                                       std::min(ids.size(), at + static_cast<std::size_t>(size))));
  return out;
}

/// The CSC of relation r's edges alone (rows and columns: all homogeneous IDs).
Csr relation_csc(const TypedInEdges& t, std::int32_t r) {
  const Csr& c = t.in;
  std::vector<std::int64_t> indptr(static_cast<std::size_t>(c.num_rows) + 1, 0), indices, eids;
  for (std::int64_t v = 0; v < c.num_rows; ++v) {
    for (auto i = c.indptr[static_cast<std::size_t>(v)];
         i < c.indptr[static_cast<std::size_t>(v) + 1]; ++i)
      if (t.edge_types[static_cast<std::size_t>(i)] == r) {
        indices.push_back(c.indices[static_cast<std::size_t>(i)]);
        eids.push_back(c.edge_ids[static_cast<std::size_t>(i)]);
      }
    indptr[static_cast<std::size_t>(v) + 1] = static_cast<std::int64_t>(indices.size());
  }
  return Csr{c.num_rows, c.num_cols, Buffer<std::int64_t>(std::move(indptr)),
             Buffer<std::int64_t>(std::move(indices)), Buffer<std::int64_t>(std::move(eids))};
}

/// The relation-split CSC: row v * R + r holds v's in-edges of relation r (the typed rows
/// cut at their type boundaries), so UniformSampler over it with seeds {v * R + r} picks
/// exactly what PerRelationSampler picks per seed, through the homogeneous code path.
/// Columns stay node IDs (a row ID is not a node: fine for timing, not for use).
Csr relation_split_csc(const TypedInEdges& t, std::int32_t relations) {
  const Csr& c = t.in;
  const auto rows = static_cast<std::size_t>(c.num_rows) * static_cast<std::size_t>(relations);
  std::vector<std::int64_t> indptr(rows + 1, 0);
  for (std::int64_t v = 0; v < c.num_rows; ++v)
    for (auto i = c.indptr[static_cast<std::size_t>(v)];
         i < c.indptr[static_cast<std::size_t>(v) + 1]; ++i)
      ++indptr[static_cast<std::size_t>(v) * static_cast<std::size_t>(relations) +
               static_cast<std::size_t>(t.edge_types[static_cast<std::size_t>(i)]) + 1];
  for (std::size_t r = 0; r < rows; ++r) indptr[r + 1] += indptr[r];
  return Csr{static_cast<std::int64_t>(rows), c.num_cols, Buffer<std::int64_t>(std::move(indptr)),
             c.indices, c.edge_ids};
}

// --- figures ----------------------------------------------------------------------------------

void hetero_sample(Bench& b) {
  const std::int64_t n = b.graph.num_nodes();
  std::vector<std::vector<std::int64_t>> seeds(static_cast<std::size_t>(b.args.batches));
  distgraph::detail::SplitMix64 rng(7, 0);
  for (auto& s : seeds) {
    s.resize(static_cast<std::size_t>(batch));
    for (auto& v : s) v = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(n)));
  }
  const SampleOptions one{.num_threads = 1};
  const LocalGraphView typed_view = b.typed.view();
  const std::size_t calls = seeds.size();
  // One figure: the typed sampler with `fans`, against UniformSampler over `bound_view`
  // with `bound_fanout`; returns (typed edges, bound edges) per run.
  auto measure = [&](const std::vector<std::int64_t>& fans, const LocalGraphView& bound_view,
                     std::int64_t bound_fanout, const std::string& bound_name,
                     nlohmann::json params, const std::string& label,
                     const std::vector<std::vector<std::int64_t>>& bound_seeds) {
    const PerRelationSampler typed(typed_view, b.typed.edge_types, fans);
    const UniformSampler plain;
    std::int64_t edges = 0, bound_edges = 0;
    for (std::size_t k = 0; k < calls; ++k) {
      edges +=
          sample_neighbors_local(typed_view, seeds[k], -1,
                                 {.seed = 1, .batch = static_cast<std::int64_t>(k)}, typed, one)
              .num_edges();
      bound_edges +=
          sample_neighbors_local(bound_view, bound_seeds[k], bound_fanout,
                                 {.seed = 1, .batch = static_cast<std::int64_t>(k)}, plain, one)
              .num_edges();
    }
    const auto [t, tb] = bench::best_per_call(
        b.args.runs, calls,
        [&](std::size_t k) {
          sample_neighbors_local(typed_view, seeds[k], -1,
                                 {.seed = 1, .batch = static_cast<std::int64_t>(k)}, typed, one);
        },
        [&](std::size_t k) {
          sample_neighbors_local(bound_view, bound_seeds[k], bound_fanout,
                                 {.seed = 1, .batch = static_cast<std::int64_t>(k)}, plain, one);
        });
    const double value = static_cast<double>(edges) / t,
                 bound = static_cast<double>(bound_edges) / tb;
    params["edges_per_run"] = edges;
    params["bound_edges_per_run"] = bound_edges;
    params["per_edge_cost_ratio"] = bound / value;  // (t / edges) / (tb / bound_edges)
    b.rep.add(Figure{.figure = "hetero_sample",
                     .value = value,
                     .unit = "edges/s",
                     .bound = bound,
                     .bound_name = bound_name,
                     .kind = Kind::rate,
                     .params = params,
                     .label = label});
    return bound / value;
  };
  nlohmann::json base = b.params;
  base["batches"] = b.args.batches;
  base["batch"] = batch;
  base["seeds"] = "uniform over all nodes";
  base["threads"] = 1;
  base["runs"] = b.args.runs;
  for (std::int32_t r = 0; r < b.relations; ++r) {
    const Csr rc = relation_csc(b.typed, r);
    std::vector<std::int64_t> fans(static_cast<std::size_t>(b.relations), 0);
    fans[static_cast<std::size_t>(r)] = fanout;
    const auto& c = b.data.types.edge_type(EdgeType(r));
    const std::string name = c.src_type + ":" + c.edge_type + ":" + c.dst_type;
    nlohmann::json params = base;
    params["relation"] = name;
    params["fanouts"] = fans;
    measure(fans, make_view(rc), fanout, "uniform_relation_csc_f10", params, name, seeds);
  }
  const std::vector<std::int64_t> fans(static_cast<std::size_t>(b.relations), fanout);
  const auto rels = static_cast<std::int64_t>(b.relations);
  // Same picks, homogeneous code path: each seed v becomes the R split rows v * R + r.
  std::vector<std::vector<std::int64_t>> split_seeds(seeds.size());
  for (std::size_t k = 0; k < seeds.size(); ++k)
    for (const std::int64_t v : seeds[k])
      for (std::int64_t r = 0; r < rels; ++r) split_seeds[k].push_back(v * rels + r);
  const Csr split = relation_split_csc(b.typed, b.relations);
  nlohmann::json params = base;
  params["relation"] = "all";
  params["fanouts"] = fans;
  params["bound_fanout"] = fanout;
  params["bound_seeds"] = "each seed's relation rows of the relation-split CSC";
  const double ratio = measure(fans, make_view(split), fanout, "uniform_relation_split_csc_f10",
                               params, "all", split_seeds);
  // The same seeds on the plain homogeneous CSC with the summed fanout: fewer rows exceed
  // it, so that sampler mostly copies whole rows where the typed one draws (a cheaper
  // edge); kept as the looser comparison.
  const std::int64_t sum = fanout * rels;
  params["bound_fanout"] = sum;
  params["bound_seeds"] = "the same seeds";
  const double loose =
      measure(fans, in_edges_view(b.graph), sum, "uniform_homogeneous_csc_f" + std::to_string(sum),
              params, "all, homogeneous fanout " + std::to_string(sum), seeds);
  b.rep.note("hetero_sample: per sampled edge, typed costs " + std::to_string(ratio) +
             "x UniformSampler picking the same edges from the relation-split CSC (target "
             "<= 1.3); " +
             std::to_string(loose) + "x UniformSampler at fanout " + std::to_string(sum) +
             " on the homogeneous CSC");
}

void hetero_loader(Bench& b) {
  StandaloneCluster<> cluster(b.config);
  const StandaloneGraph g = cluster.graph();
  // Distinct random papers: type-wise IDs are the homogeneous IDs of type 0 ("paper").
  const auto paper = b.data.types.node_type("paper");
  const IdRange pr = b.data.types.node_range(paper);
  std::vector<std::int64_t> all(static_cast<std::size_t>(pr.end - pr.begin));
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
  distgraph::detail::SplitMix64 rng(11, 0);
  for (std::size_t i = all.size(); i > 1; --i) std::swap(all[i - 1], all[rng.below(i)]);
  all.resize(std::min(all.size(), static_cast<std::size_t>(b.args.loader_batches * batch)));
  std::vector<std::int64_t> input_ids(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) input_ids[i] = pr.begin + all[i];

  LoaderOptions lo{.batch_size = batch,
                   .seed = loader_seed,
                   .num_prefetch_threads = 1,
                   .prefetch_depth = 2,
                   .label = "paper/label"};
  const std::vector<std::int64_t> fans(static_cast<std::size_t>(b.relations), fanout);
  lo.layer_samplers.assign(2, PerRelationSampler::spec(fans));
  NodeDataLoader loader(g, g.nodes("paper").to_global(all), {-1, -1}, lo);
  const auto sampler = typed_sampler(b, 2);
  double best = std::numeric_limits<double>::infinity(), best_bound = best;
  std::int64_t batches = 0, inputs = 0;
  double sample_s = 0, fetch_s = 0, wait_s = 0;
  for (int e = -1; e < b.args.loader_epochs; ++e) {  // epoch -1 warms up
    // The loader's order only permutes positions of its seed list: the same permutation
    // of the input-ID list gives the same nodes in each batch.
    const auto order = epoch_order(input_ids, true, loader_seed, e, 0);
    const double bound_s = in_memory_epoch(b, sampler, cut(order, batch), e);
    std::int64_t k = 0, in = 0;
    double sample = 0, fetch = 0, wait = 0;
    Stopwatch clock;
    for (const NodeBatch& nb : loader.epoch(e)) {
      ++k;
      in += static_cast<std::int64_t>(nb.input_nodes.size());
      sample += nb.timings.sample_s;
      fetch += nb.timings.fetch_s;
      wait += nb.timings.wait_s;
    }
    const double s = clock.seconds();
    if (e < 0) continue;
    best_bound = std::min(best_bound, bound_s);
    if (s < best) {
      best = s;
      batches = k;
      inputs = in;
      sample_s = sample;
      fetch_s = fetch;
      wait_s = wait;
    }
  }
  nlohmann::json params = b.params;
  params["layers"] = 2;
  params["fanouts_per_relation"] = fanout;
  params["batch"] = batch;
  params["batches"] = batches;
  params["epochs"] = b.args.loader_epochs;
  params["prefetch_threads"] = 1;
  params["mean_input_nodes"] =
      batches ? static_cast<double>(inputs) / static_cast<double>(batches) : 0.0;
  params["sample_s"] = sample_s;
  params["fetch_s"] = fetch_s;
  params["wait_s"] = wait_s;
  params["mode"] = "StandaloneCluster, 2 METIS parts, in-process";
  const double nb = static_cast<double>(batches);
  b.rep.add(Figure{.figure = "hetero_loader",
                   .value = nb / best,
                   .unit = "batches/s",
                   .bound = nb / best_bound,
                   .bound_name = "in_memory_sample+gather",
                   .kind = Kind::rate,
                   .params = params});
}

/// The epoch bound: the training papers (shuffled as epoch 1, cut into `batch_size`
/// batches; `share` of them, trainer 0's) through the in-memory ceiling, best of runs.
double epoch_bound(const Bench& b, std::int64_t batch_size, double share, std::size_t layers,
                   std::size_t& num_batches) {
  std::vector<std::int64_t> train;
  const auto pr = b.data.types.node_range(b.data.types.node_type("paper"));
  for (std::size_t i = 0; i < b.data.train_mask.size(); ++i)
    if (b.data.train_mask[i]) train.push_back(pr.begin + static_cast<std::int64_t>(i));
  auto order = epoch_order(train, true, 0, 1, 0);
  order.resize(static_cast<std::size_t>(static_cast<double>(order.size()) * share));
  const auto batches = cut(order, batch_size);
  num_batches = batches.size();
  const auto sampler = typed_sampler(b, layers);
  double best = std::numeric_limits<double>::infinity();
  for (int r = -1; r < b.args.runs; ++r) {
    const double s = in_memory_epoch(b, sampler, batches, 1);
    if (r >= 0) best = std::min(best, s);
  }
  return best;
}

/// Mean epoch_s of every row but the first (the warm-up).
double mean_epoch(const std::vector<double>& epoch_s) {
  double sum = 0;
  for (std::size_t i = 1; i < epoch_s.size(); ++i) sum += epoch_s[i];
  return epoch_s.size() > 1 ? sum / static_cast<double>(epoch_s.size() - 1) : epoch_s.front();
}

/// The params both epoch figures report: the recipe, the epoch times, the bound's batches.
nlohmann::json epoch_params(const Bench& b, const HeteroNodeClassificationOptions& o,
                            const std::vector<double>& epochs, std::size_t num_batches,
                            const std::string& mode) {
  nlohmann::json params = b.params;
  params["mode"] = mode;
  params["model"] = o.model;
  params["hidden"] = o.hidden;
  params["fanouts"] = o.fanouts;
  params["batch_size"] = o.batch_size;
  params["epoch_s"] = epochs;
  params["timed_epochs"] = b.args.epochs;
  params["bound_batches"] = num_batches;
  return params;
}

void rgcn_epoch_standalone(Bench& b) {
  HeteroNodeClassificationOptions o;
  o.target_ntype = "paper";
  o.epochs = 1 + b.args.epochs;
  std::size_t num_batches = 0;
  const double bound = epoch_bound(b, o.batch_size, 1.0, o.fanouts.size(), num_batches);
  StandaloneCluster<> cluster(b.config);
  const StandaloneGraph g = cluster.graph();
  std::vector<double> epochs;
  nlohmann::json last;
  Stopwatch clock;
  const auto res = train_hetero_node_classification(g, o, {}, [&](const EpochRow& r, Metric) {
    epochs.push_back(r.epoch_s);
    last = {{"sample_s", r.sample_s},
            {"fetch_s", r.fetch_s},
            {"compute_s", r.compute_s},
            {"loss", r.loss}};
  });
  b.rep.note("rgcn standalone: " + std::to_string(o.epochs) + " epochs, whole run " +
             std::to_string(clock.seconds()) + " s, test " + std::to_string(res.test));
  nlohmann::json params = epoch_params(b, o, epochs, num_batches,
                                       "standalone (StandaloneCluster, 2 METIS parts, in-process)");
  params["last_epoch"] = last;
  params["test_accuracy"] = res.test;
  params["torch_threads"] = torch::get_num_threads();
  b.rep.add(Figure{.figure = "rgcn_epoch_standalone",
                   .value = mean_epoch(epochs),
                   .unit = "s",
                   .bound = bound,
                   .bound_name = "in_memory_sample+gather",
                   .kind = Kind::time,
                   .params = params});
}

void rgcn_epoch_dist(Bench& b) {
  const HeteroNodeClassificationOptions o;
  std::size_t num_batches = 0;
  const double bound = epoch_bound(b, o.batch_size, 0.5, o.fanouts.size(), num_batches);
  const fs::path run = b.dataset_dir.parent_path() / "run";
  std::string fan;
  for (const auto f : o.fanouts) {
    if (!fan.empty()) fan += ',';
    fan += std::to_string(f);
  }
  fs::create_directories(run);  // the CLI writes its ip_config.txt there before anything else
  const std::vector<std::string> argv = {b.args.cli,      b.dataset_dir.string(),
                                         "--part-config", b.config.string(),
                                         "--parts",       "2",
                                         "--epochs",      std::to_string(1 + b.args.epochs),
                                         "--hidden",      std::to_string(o.hidden),
                                         "--fanouts",     fan,
                                         "--batch-size",  std::to_string(o.batch_size),
                                         "--json",        "--out",
                                         run.string()};
  std::string command;
  for (const auto& s : argv) command += (command.empty() ? "" : " ") + s;
  b.rep.note("running " + command);
  std::vector<double> epochs;
  nlohmann::json result;
  Stopwatch clock;
  const int status = bench::run_lines(argv, [&](const std::string& line) {
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return;
    if (j.contains("epoch_s"))
      epochs.push_back(j["epoch_s"].get<double>());
    else if (j.contains("epoch_s_mean"))
      result = j;
  });
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      static_cast<std::int64_t>(epochs.size()) != 1 + b.args.epochs)
    throw std::runtime_error("`" + command + "` failed (wait status " + std::to_string(status) +
                             ", " + std::to_string(epochs.size()) + " epoch lines)");
  b.rep.note("rgcn dist: whole command " + std::to_string(clock.seconds()) + " s; result " +
             result.dump());
  nlohmann::json params =
      epoch_params(b, o, epochs, num_batches,
                   "distributed (distgraph-train, 2 loopback machines x (1 server + 1 trainer))");
  params["result"] = result;
  b.rep.add(Figure{.figure = "rgcn_epoch_dist",
                   .value = mean_epoch(epochs),
                   .unit = "s",
                   .bound = bound,
                   .bound_name = "in_memory_sample+gather",
                   .kind = Kind::time,
                   .params = params});
}

}  // namespace

int main(int argc, char** argv) {
  Bench b{.args = parse(argc, argv), .rep = bench::Reporter(argc, argv, "bench_hetero")};
  retain_freed_memory();  // as `distgraph train` does, for the standalone epochs
  const Args& a = b.args;
  const std::vector<std::pair<std::string, std::function<void(Bench&)>>> figures = {
      {"hetero_sample", hetero_sample},
      {"hetero_loader", hetero_loader},
      {"rgcn_epoch_standalone", rgcn_epoch_standalone},
      {"rgcn_epoch_dist", rgcn_epoch_dist},
  };
  if (!a.figure.empty() && std::none_of(figures.begin(), figures.end(),
                                        [&](const auto& f) { return f.first == a.figure; })) {
    std::fprintf(stderr, "bench_hetero: no figure named %s\n", a.figure.c_str());
    return 2;
  }
  if ((a.figure.empty() || a.figure == "rgcn_epoch_dist") && !fs::exists(a.cli)) {
    std::fprintf(stderr, "bench_hetero: no distgraph-train program at %s (give --train-cli PATH)\n",
                 a.cli.c_str());
    return 2;
  }
  const bench::TempDir tmp(fs::temp_directory_path() /
                           ("distgraph-bench-hetero-" + std::to_string(::getpid())));
  try {
    HsbmOptions ho;
    ho.num_papers = a.papers;
    ho.num_authors = a.papers * 2 / 5;
    ho.num_venues = a.venues;
    Stopwatch clock;
    b.data = hsbm_dataset(ho);
    b.graph = hetero_graph(b.data);
    b.typed = group_in_edges_by_type(b.graph);
    b.relations = b.data.types.num_edge_types();
    const double build_s = clock.seconds();
    clock.reset();
    b.dataset_dir = tmp.path / "hsbm";
    write_hetero_dataset(b.data, b.dataset_dir);
    partition_hetero_dataset(b.data, "hsbm", parts, tmp.path / "partition",
                             {.method = PartMethod::metis, .seed = 0});
    b.config = tmp.path / "partition" / "hsbm.json";
    const double partition_s = clock.seconds();
    const std::string size = "hsbm(papers=" + std::to_string(ho.num_papers) +
                             ", authors=" + std::to_string(ho.num_authors) +
                             ", venues=" + std::to_string(ho.num_venues) + ", seed=42)";
    b.rep.header({{"graph", size + ", other HsbmOptions defaults"},
                  {"size", a.size},
                  {"n", std::to_string(b.graph.num_nodes())},
                  {"m", std::to_string(b.graph.in.num_edges())},
                  {"relations", std::to_string(b.relations)},
                  {"partitions", "2, METIS (seed 0), written with the dataset in " +
                                     std::to_string(partition_s) + " s"},
                  {"dataset_seconds", std::to_string(build_s)},
                  {"runs", "best of " + std::to_string(a.runs)},
                  {"epochs", "1 warm-up + " + std::to_string(a.epochs) + " timed (mean)"},
                  {"torch_threads", std::to_string(torch::get_num_threads())},
                  {"cli", a.cli}});
    b.params = {{"graph", size},
                {"size", a.size},
                {"papers", ho.num_papers},
                {"authors", ho.num_authors},
                {"venues", ho.num_venues},
                {"n", b.graph.num_nodes()},
                {"m", b.graph.in.num_edges()},
                {"parts", parts}};
    for (const auto& [name, fn] : figures)
      if (a.figure.empty() || a.figure == name) fn(b);
  } catch (const std::exception& e) {  // return, so that the temporary folder goes
    std::fprintf(stderr, "bench_hetero: %s\n", e.what());
    return 1;
  }
  return 0;
}
