// bench_sampling: neighbour sampling and loader steps, each beside a bound measured in this run.
//
//   bench_sampling [--scale S] [--edge-factor K] [--batch-size N] [--batches B]
//                  [--fanout F] [--runs R] [--loader-batches L] [--loader-epochs E]
//                  [--feat-dim D] [--figure NAME[,NAME...]] [--json]
//
// The graph is R-MAT (seed 1) symmetrized, without self loops or duplicates, built once.
// Seeds are B batches of N node IDs drawn uniformly (fixed seed), so most fall on small
// rows and some on hubs, as training seeds do. Figures (rates, best of R runs):
//   sample_neighbors_local  sampled edges/s of sample_neighbors_local, one thread,
//                           UniformSampler without replacement, each batch its own key.
//                           Bound: a loop over the same seeds that reads indptr[v],
//                           indptr[v+1] and min(fanout, degree) random entries of v's row of
//                           `indices`, with no sampling logic: the random-access rate the
//                           sampler cannot beat. Target ratio >= 0.5.
//   loader_standalone_t1/_t2  batches/s of a NodeDataLoader, fanouts [10, 25], batch N,
//   loader_dist_t1/_t2        D-dim float32 features and int64 labels, over the graph
//                           partitioned in 2 (random assignment: METIS takes ~40 s at scale
//                           20) into a temporary folder; L batches per epoch of distinct
//                           uniform seeds, best of E epochs after a warm-up, consumer doing
//                           nothing else (so wait_s is the whole batch when nothing overlaps).
//                           standalone: StandaloneCluster (in-process servers, no sockets);
//                           dist: 2 GraphServer<MmapStorage> behind AsioServers on loopback
//                           in this process, the trainer co-located with partition 0 (its
//                           seeds sampled and rows read from the mapped partition and shared
//                           storage). t = prefetch threads. params: per-batch sample_s,
//                           fetch_s, wait_s (means), wall_s, input nodes, block edges and
//                           remote_rows (feature rows pulled from the other machine).
//                           Bound: the in-memory ceiling for the same seed batches, one
//                           thread: MultiLayerNeighborSampler on the whole graph's CSC plus a
//                           memcpy gather of the input rows from a heap array.
//   loader_dist_t1_procs/_t2_procs  the same loader and bound, as users run it: the graph
//                           partitioned in 2 with METIS (same features and labels) into a
//                           temporary folder, 2 `distgraph serve` processes (2 io threads
//                           each) on loopback, the trainer co-located with partition 0 through
//                           the machine's shared storage; the same seed nodes in the same
//                           batches (their IDs mapped to the METIS partition's). The servers
//                           are asked to shut down and are reaped at the end (killed and
//                           reaped if the figure fails). Needs the distgraph CLI target.
//   loader_dist_2procs      loader_dist_t2_procs's twin as DGL's `dist2` runs it: the same
//                           servers, 2 trainer processes (this one and a copy of this program
//                           started with --loader-trainer), one per machine and co-located
//                           with it, 1 prefetch thread each, each with the seeds its partition
//                           owns; both start on one signal (a FIFO). Value: both trainers'
//                           batches of an epoch over the slower one's wall time, best epoch.
//   labor_input_nodes_ratio  LaborSampler's distinct input nodes over UniformSampler's for
//                           the same two-layer [10, 25] MultiLayerNeighborSampler batches
//                           on the whole graph (L batches of N seeds, the first L seed
//                           batches with repeats dropped, each batch its own key), mean
//                           input nodes per batch. Lower is better (Kind::time: ratio =
//                           bound / value, the factor by which LABOR fetches fewer rows).
//                           Bound: 1.0, uniform sampling itself, measured in this run as
//                           the denominator. params: both samplers' input nodes, block
//                           edges and sampling seconds per batch (one thread; LABOR reads
//                           whole rows, O(degree), where uniform draws O(fanout)).
// To add a figure: write `void name(Bench&)` that calls bench.rep.add(...) and append it
// to `figures` in main(); `--figure a,b` runs only those (sharing the graph and partitions).
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/timer.hpp"
#include "distgraph/distributed/dist_graph.hpp"
#include "distgraph/distributed/standalone.hpp"
#include "distgraph/graph/builder.hpp"
#include "distgraph/graph/generators.hpp"
#include "distgraph/loaders/node_data_loader.hpp"
#include "distgraph/partition/partition_graph.hpp"
#include "distgraph/runtime/ip_config.hpp"
#include "distgraph/runtime/server_process.hpp"
#include "distgraph/sampling/labor_sampler.hpp"
#include "distgraph/sampling/local_graph_view.hpp"
#include "distgraph/sampling/multi_layer.hpp"
#include "distgraph/sampling/sample_local.hpp"
#include "distgraph/sampling/uniform_sampler.hpp"
#include "distgraph/server/graph_server.hpp"
#include "distgraph/storage/mmap_storage.hpp"
#include "distgraph/transport/asio_server.hpp"
#include "distgraph/transport/asio_transport.hpp"
#include "support/bounds.hpp"
#include "support/flags.hpp"
#include "support/report.hpp"
#include "support/temp_dir.hpp"
// The tests' child process and loopback ip config helpers: the server processes here are
// started, awaited and reaped exactly as the integration tests do it.
#include "../tests/support/child_process.hpp"

#ifndef DISTGRAPH_CLI
#define DISTGRAPH_CLI ""  // built without the CLI: the *_procs figures are skipped
#endif

namespace {

using distgraph::bench::Figure;
using distgraph::bench::Reporter;

struct Args {
  int scale = 20;
  int edge_factor = 16;
  std::int64_t batch_size = 1000;
  std::int64_t batches = 500;
  std::int64_t fanout = 10;
  int runs = 5;
  std::int64_t loader_batches = 30;  ///< batches per loader epoch
  int loader_epochs = 3;             ///< timed loader epochs (best kept)
  std::int64_t feat_dim = 100;
  std::string figure;  ///< empty = all
};

Args parse(int argc, char** argv) {
  Args a;
  distgraph::bench::Flags("bench_sampling")
      .add("--scale", a.scale, 1, 30)
      .add("--edge-factor", a.edge_factor, 1, 1024)
      .add("--batch-size", a.batch_size, 1, 10'000'000)
      .add("--batches", a.batches, 1, 1'000'000)
      .add("--fanout", a.fanout, 1, 100'000)
      .add("--runs", a.runs, 1, 100)
      .add("--loader-batches", a.loader_batches, 1, 100'000)
      .add("--loader-epochs", a.loader_epochs, 1, 100)
      .add("--feat-dim", a.feat_dim, 1, 4096)
      .add("--figure", a.figure, "NAME[,NAME...]")
      .parse(argc, argv);
  return a;
}

struct LoaderData;

/// What every figure shares: arguments, reporter, the graph and the seed batches.
struct Bench {
  Args args;
  Reporter rep;
  distgraph::Graph graph{};
  std::vector<std::int64_t> seeds{};  ///< args.batches * args.batch_size node IDs
  nlohmann::json params{};
  std::shared_ptr<LoaderData> loader{};  ///< made by the first loader figure

  std::span<const std::int64_t> batch(std::int64_t b) const {
    return std::span<const std::int64_t>(seeds).subspan(
        static_cast<std::size_t>(b * args.batch_size), static_cast<std::size_t>(args.batch_size));
  }
};

void sample_neighbors_local_figure(Bench& bench) {
  const auto view = distgraph::in_edges_view(bench.graph);
  const std::int64_t fanout = bench.args.fanout;
  std::int64_t sampled = 0;
  const auto sample = [&] {
    sampled = 0;
    for (std::int64_t b = 0; b < bench.args.batches; ++b) {
      const distgraph::Frontier f =
          distgraph::sample_neighbors_local(view, bench.batch(b), fanout, {.seed = 1, .batch = b},
                                            distgraph::UniformSampler{}, {.num_threads = 1});
      sampled += f.num_edges();
    }
  };
  // The bound touches what the sampler must: both row offsets of each seed and as many
  // random entries of its row as the sampler returns, accumulated so nothing is elided.
  std::int64_t reads = 0;
  std::uint64_t checksum = 0;
  const auto bound = [&] {
    const auto r =
        distgraph::bench::random_row_reads(view.indptr, view.indices, bench.seeds, fanout);
    reads = r.reads;
    checksum += r.checksum;
  };
  const auto [s, bound_s] = distgraph::bench::best_pair(bench.args.runs, sample, bound);
  nlohmann::json params = bench.params;
  params["fanout"] = fanout;
  params["sampler"] = "UniformSampler";
  params["sampled_edges"] = sampled;
  params["threads"] = 1;
  bench.rep.add(Figure{.figure = "sample_neighbors_local",
                       .value = static_cast<double>(sampled) / s,
                       .unit = "edges/s",
                       .bound = static_cast<double>(reads) / bound_s,
                       .bound_name = "random_access_reads",
                       .params = params});
  bench.rep.note("sample_neighbors_local: " + std::to_string(sampled) + " edges in " +
                 std::to_string(s) + " s; bound loop " + std::to_string(reads) + " reads in " +
                 std::to_string(bound_s) + " s (checksum " + std::to_string(checksum % 1000) + ")" +
                 (sampled == reads ? "" : " (edge count mismatch!)"));
}

/// Mean input nodes, block edges and sampling seconds per batch of a two-layer sampler.
struct BlockTotals {
  double input_nodes = 0, block_edges = 0, sample_s = 0;
};

template <class S>
BlockTotals block_totals(const Bench& bench, const std::vector<std::vector<std::int64_t>>& batches,
                         const std::vector<std::int64_t>& fanouts) {
  const auto view = distgraph::in_edges_view(bench.graph);
  const distgraph::MultiLayerNeighborSampler<S> sampler(fanouts, S{}, {.num_threads = 1});
  BlockTotals t;
  for (std::size_t b = 0; b < batches.size(); ++b) {
    distgraph::Stopwatch clock;
    const distgraph::MiniBatch mb =
        sampler.sample_blocks(view, batches[b], {.seed = 1, .batch = static_cast<std::int64_t>(b)});
    t.sample_s += clock.seconds();
    t.input_nodes += static_cast<double>(mb.input_nodes.size());
    for (const auto& blk : mb.blocks) t.block_edges += static_cast<double>(blk.num_edges());
  }
  const auto n = static_cast<double>(batches.size());
  return {t.input_nodes / n, t.block_edges / n, t.sample_s / n};
}

void labor_input_nodes_ratio(Bench& bench) {
  const std::vector<std::int64_t> fanouts{10, 25};  // the loader figures' fanouts
  std::vector<std::vector<std::int64_t>> batches;
  const std::int64_t count = std::min(bench.args.loader_batches, bench.args.batches);
  for (std::int64_t b = 0; b < count; ++b) {
    const auto seeds = bench.batch(b);
    std::vector<std::int64_t> batch(seeds.begin(), seeds.end());
    std::sort(batch.begin(), batch.end());  // blocks need distinct seeds
    batch.erase(std::unique(batch.begin(), batch.end()), batch.end());
    batches.push_back(std::move(batch));
  }
  const BlockTotals labor = block_totals<distgraph::LaborSampler>(bench, batches, fanouts);
  const BlockTotals uniform = block_totals<distgraph::UniformSampler>(bench, batches, fanouts);
  nlohmann::json params = bench.params;
  params["fanouts"] = fanouts;
  params["sampled_batches"] = count;
  params["threads"] = 1;
  params["labor_input_nodes"] = labor.input_nodes;
  params["uniform_input_nodes"] = uniform.input_nodes;
  params["labor_block_edges"] = labor.block_edges;
  params["uniform_block_edges"] = uniform.block_edges;
  params["labor_sample_s"] = labor.sample_s;
  params["uniform_sample_s"] = uniform.sample_s;
  bench.rep.add(Figure{.figure = "labor_input_nodes_ratio",
                       .value = labor.input_nodes / uniform.input_nodes,
                       .unit = "ratio",
                       .bound = 1.0,
                       .bound_name = "uniform_sampler",
                       .kind = distgraph::bench::Kind::time,
                       .params = params});
  bench.rep.note("labor_input_nodes_ratio: input nodes per batch labor " +
                 std::to_string(labor.input_nodes) + ", uniform " +
                 std::to_string(uniform.input_nodes) + "; block edges labor " +
                 std::to_string(labor.block_edges) + ", uniform " +
                 std::to_string(uniform.block_edges) + "; sampling s per batch labor " +
                 std::to_string(labor.sample_s) + ", uniform " + std::to_string(uniform.sample_s));
}

// --- data loader figures -----------------------------------------------------------------

using distgraph::AsioServer;
using distgraph::GraphServer;
using distgraph::MmapStorage;
using DistLoaderGraph =
    distgraph::DistGraph<distgraph::RangePartitionBook, distgraph::AsioTransport, MmapStorage>;

constexpr std::int64_t loader_seed = 1;
const std::vector<std::int64_t> loader_fanouts{10, 25};

/// The DistGraph of a trainer co-located with partition `machine` of `config` (2 machines,
/// one server each at `endpoints`), reading its machine's rows from the storage in `storage`.
DistLoaderGraph colocated_trainer(const std::filesystem::path& config,
                                  std::vector<distgraph::Endpoint> endpoints,
                                  const std::filesystem::path& storage, std::int32_t machine = 0) {
  auto part =
      std::make_shared<const distgraph::Partition>(distgraph::load_partition(config, machine));
  auto client = std::make_shared<DistLoaderGraph::client_type>(
      std::make_shared<distgraph::AsioTransport>(std::move(endpoints)),
      (*part->book.get_if<distgraph::RangePartitionBook>()),
      distgraph::ClusterLayout{
          .num_machines = 2, .servers_per_machine = 1, .machine_id = machine, .num_trainers = 1},
      std::make_shared<MmapStorage>(MmapStorage::attach(storage)));
  return DistLoaderGraph(std::move(client), std::move(part));
}

/// 2 GraphServers over MmapStorage folders (as `distgraph serve` runs them), each behind an
/// AsioServer on loopback, and the DistGraph of a trainer co-located with partition 0.
struct LoopbackServers {
  std::vector<std::filesystem::path> dirs;
  std::vector<std::unique_ptr<GraphServer<MmapStorage>>> servers;
  std::vector<std::unique_ptr<AsioServer>> net;
  std::unique_ptr<DistLoaderGraph> graph;

  explicit LoopbackServers(const std::filesystem::path& config) {
    const std::filesystem::path base = std::filesystem::is_directory("/dev/shm")
                                           ? "/dev/shm"
                                           : std::filesystem::temp_directory_path();
    std::vector<distgraph::Endpoint> endpoints;
    for (int p = 0; p < 2; ++p) {
      dirs.push_back(base / ("distgraph-bench-loader-" + std::to_string(::getpid()) + "-" +
                             std::to_string(p)));
      std::filesystem::remove_all(dirs.back());
      servers.push_back(std::make_unique<GraphServer<MmapStorage>>(
          distgraph::load_partition(config, p),
          std::make_shared<MmapStorage>(MmapStorage::create_dir(dirs.back()))));
      net.push_back(std::make_unique<AsioServer>(
          servers.back()->handler(),
          distgraph::AsioServerOptions{.num_threads = 2, .run_inline = distgraph::quick_request}));
      net.back()->start();
      endpoints.push_back(net.back()->endpoint());
    }
    graph = std::make_unique<DistLoaderGraph>(colocated_trainer(config, endpoints, dirs[0]));
  }
  ~LoopbackServers() {
    graph.reset();
    for (auto& n : net) n->stop();
    for (auto& d : dirs) std::filesystem::remove_all(d);
  }
  LoopbackServers(const LoopbackServers&) = delete;
  LoopbackServers& operator=(const LoopbackServers&) = delete;
};

struct ServeProcesses;

/// The graph partitioned in 2 with features and labels, the seeds, the in-memory bound and
/// (made on first use) the standalone and loopback clusters. Removes its folders.
struct LoaderData {
  std::filesystem::path dir, config;
  std::vector<float> feat;            ///< n x feat_dim by input node ID: the bound's array
  std::vector<std::int64_t> orig_of;  ///< global (relabeled) node ID -> input node ID
  std::vector<std::int64_t> train;    ///< distinct uniform seeds, global IDs
  double bound = 0;                   ///< in-memory ceiling, batches/s
  std::unique_ptr<distgraph::StandaloneCluster<>> standalone;
  std::unique_ptr<LoopbackServers> loopback;
  std::unique_ptr<ServeProcesses> procs;

  ~LoaderData();
};

/// The epoch's seed batches as the loader cuts them.
std::vector<std::vector<std::int64_t>> epoch_batches(const LoaderData& d, std::int64_t epoch,
                                                     std::int64_t batch_size) {
  const auto order = distgraph::epoch_order(d.train, true, loader_seed, epoch, 0);
  std::vector<std::vector<std::int64_t>> out;
  for (std::size_t b = 0; b < order.size(); b += static_cast<std::size_t>(batch_size))
    out.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(b),
                     order.begin() + static_cast<std::ptrdiff_t>(std::min(
                                         order.size(), b + static_cast<std::size_t>(batch_size))));
  return out;
}

/// Best epoch time of the in-memory ceiling over the loader's seed batches (mapped to input
/// IDs): MultiLayerNeighborSampler on the whole graph, one thread, then a memcpy gather of
/// the input rows. Returns batches/s.
double loader_bound(const Bench& bench, const LoaderData& d) {
  const auto view = distgraph::in_edges_view(bench.graph);
  const distgraph::MultiLayerNeighborSampler<> sampler(loader_fanouts, {}, {.num_threads = 1});
  const auto dim = static_cast<std::size_t>(bench.args.feat_dim);
  std::vector<float> rows;
  double best = std::numeric_limits<double>::infinity();
  std::int64_t batches = 0;
  for (int e = -1; e < bench.args.loader_epochs; ++e) {
    auto seeds = epoch_batches(d, e, bench.args.batch_size);
    for (auto& batch : seeds)
      for (auto& v : batch) v = d.orig_of[static_cast<std::size_t>(v)];
    const double s = distgraph::bench::in_memory_loader_epoch(view, sampler, seeds, loader_seed, e,
                                                              d.feat, dim, rows);
    if (e >= 0) best = std::min(best, s);  // epoch -1 warms up
    batches = static_cast<std::int64_t>(seeds.size());
  }
  return static_cast<double>(batches) / best;
}

/// The loader's node data: d.feat (n x dim) as `feat` and 10 label classes as `label`.
distgraph::TensorList loader_node_data(const LoaderData& d, std::int64_t n, std::size_t dim) {
  std::vector<std::int64_t> label(static_cast<std::size_t>(n));
  for (std::size_t v = 0; v < label.size(); ++v)
    label[v] = static_cast<std::int64_t>(distgraph::detail::mix64(v + 0x5bd1e995) % 10);
  return {
      {"feat", distgraph::HostTensor::from(distgraph::Buffer<float>(d.feat),
                                           {n, static_cast<std::int64_t>(dim)})},
      {"label", distgraph::HostTensor::from(distgraph::Buffer<std::int64_t>(std::move(label)))}};
}

/// Partitions the benchmark graph with random D-dim features and labels (once).
LoaderData& loader_data(Bench& bench) {
  if (bench.loader) return *bench.loader;
  auto d = std::make_shared<LoaderData>();
  const Args& a = bench.args;
  const std::int64_t n = bench.graph.num_nodes();
  const auto dim = static_cast<std::size_t>(a.feat_dim);
  d->dir = std::filesystem::temp_directory_path() /
           ("distgraph-bench-loader-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d->dir);
  d->feat.resize(static_cast<std::size_t>(n) * dim);
  for (std::size_t i = 0; i < d->feat.size(); ++i)
    d->feat[i] = static_cast<float>(distgraph::detail::mix64(i) >> 40) * 0x1.0p-24f - 0.5f;
  distgraph::Stopwatch clock;
  distgraph::partition_graph(bench.graph, "rmat", 2, d->dir,
                             {.method = distgraph::PartMethod::random, .seed = 3},
                             loader_node_data(*d, n, dim));
  d->config = d->dir / "rmat.json";
  bench.rep.note("loader: partitioned into 2 (random) with " + std::to_string(dim) +
                 "-dim features in " + std::to_string(clock.seconds()) + " s");
  d->orig_of.assign(static_cast<std::size_t>(n), -1);
  for (int p = 0; p < 2; ++p) {
    const auto part = distgraph::load_partition(d->config, p);
    for (std::int64_t v = 0; v < part.num_inner_nodes; ++v)
      d->orig_of[static_cast<std::size_t>(part.nid[static_cast<std::size_t>(v)])] =
          part.orig_nid[static_cast<std::size_t>(v)];
  }
  // Distinct uniform seeds: the head of a partial Fisher-Yates shuffle.
  const std::int64_t count = std::min(n, a.loader_batches * a.batch_size);
  std::vector<std::int64_t> all(static_cast<std::size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  distgraph::detail::SplitMix64 rng(11);
  for (std::int64_t i = 0; i < count; ++i)
    std::swap(all[static_cast<std::size_t>(i)],
              all[static_cast<std::size_t>(
                  i + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(n - i))))]);
  d->train.assign(all.begin(), all.begin() + count);
  clock.reset();
  d->bound = loader_bound(bench, *d);
  bench.rep.note("loader: in-memory bound " + std::to_string(d->bound) + " batches/s (" +
                 std::to_string(clock.seconds()) + " s)");
  bench.loader = d;
  return *d;
}

/// Runs a NodeDataLoader with `threads` prefetch threads for a warm-up and the timed epochs
/// and reports the best epoch as `name`.
/// How a loader figure's graph was cut and which global IDs its seeds have there.
struct LoaderSetup {
  std::string mode;
  std::string partitions = "2, random";
  const std::vector<std::int64_t>* train = nullptr;  ///< default: LoaderData::train
};

template <class Graph>
void loader_figure(Bench& bench, const std::string& name, Graph graph, unsigned threads,
                   const LoaderSetup& setup) {
  LoaderData& d = loader_data(bench);
  const Args& a = bench.args;
  const std::vector<std::int64_t>& train = setup.train ? *setup.train : d.train;
  // Feature rows pulled from the other machine's server: what the partition decides.
  const auto remote_pulled = [client = graph.client_ptr()] {
    return client->remote_traffic().rows;
  };
  distgraph::NodeDataLoader loader(std::move(graph), train, loader_fanouts,
                                   {.batch_size = a.batch_size,
                                    .seed = loader_seed,
                                    .num_prefetch_threads = threads,
                                    .prefetch_depth = 2 * static_cast<std::int64_t>(threads)});
  struct Sums {
    double wall = 0, sample = 0, fetch = 0, wait = 0;
    std::int64_t batches = 0, input_nodes = 0, edges = 0, remote_rows = 0;
  } best;
  best.wall = std::numeric_limits<double>::infinity();
  for (int e = -1; e < a.loader_epochs; ++e) {
    Sums s;
    const std::int64_t remote_before = remote_pulled();
    distgraph::Stopwatch clock;
    for (const distgraph::NodeBatch& b : loader.epoch(e)) {
      s.sample += b.timings.sample_s;
      s.fetch += b.timings.fetch_s;
      s.wait += b.timings.wait_s;
      s.input_nodes += static_cast<std::int64_t>(b.input_nodes.size());
      for (const auto& blk : b.blocks) s.edges += blk.num_edges();
      ++s.batches;
    }
    s.wall = clock.seconds();
    s.remote_rows = remote_pulled() - remote_before;
    if (e >= 0 && s.wall < best.wall) best = s;  // epoch -1 warms up
  }
  const auto per = [&](double x) { return x / static_cast<double>(best.batches); };
  nlohmann::json params = bench.params;
  params["mode"] = setup.mode;
  params["prefetch_threads"] = threads;
  params["prefetch_depth"] = 2 * threads;
  params["fanouts"] = loader_fanouts;
  params["feat_dim"] = a.feat_dim;
  params["partitions"] = setup.partitions;
  params["batches_per_epoch"] = best.batches;
  params["epochs"] = a.loader_epochs;
  params["sample_s"] = per(best.sample);
  params["fetch_s"] = per(best.fetch);
  params["wait_s"] = per(best.wait);
  params["wall_s"] = per(best.wall);
  params["input_nodes"] = best.input_nodes / best.batches;
  params["block_edges"] = best.edges / best.batches;
  params["remote_rows"] = best.remote_rows / best.batches;
  bench.rep.add(Figure{.figure = name,
                       .value = static_cast<double>(best.batches) / best.wall,
                       .unit = "batches/s",
                       .bound = d.bound,
                       .bound_name = "in_memory_blocks+gather",
                       .params = params});
  bench.rep.note(name + ": per batch sample " + std::to_string(per(best.sample)) + " s, fetch " +
                 std::to_string(per(best.fetch)) + " s, wait " + std::to_string(per(best.wait)) +
                 " s, wall " + std::to_string(per(best.wall)) + " s");
}

distgraph::StandaloneGraph standalone_graph(Bench& bench) {
  LoaderData& d = loader_data(bench);
  if (!d.standalone) d.standalone = std::make_unique<distgraph::StandaloneCluster<>>(d.config);
  return d.standalone->graph();
}

DistLoaderGraph loopback_graph(Bench& bench) {
  LoaderData& d = loader_data(bench);
  if (!d.loopback) d.loopback = std::make_unique<LoopbackServers>(d.config);
  return *d.loopback->graph;
}

/// The loader's graph partitioned in 2 with METIS, served by 2 `distgraph serve` processes
/// on loopback, and the DistGraph of a trainer co-located with partition 0. Destroying it
/// asks the servers to shut down and reaps them (killing any that do not exit).
struct ServeProcesses {
  distgraph::bench::TempDir tmp;  // first: removed after the processes are gone
  std::filesystem::path config;
  distgraph::IpConfig ip;
  std::vector<std::filesystem::path> storage;  ///< each machine's shared storage folder
  std::vector<std::unique_ptr<distgraph::test::ChildProcess>> procs;
  std::shared_ptr<DistLoaderGraph::client_type> client;
  std::unique_ptr<DistLoaderGraph> graph;
  std::vector<std::int64_t> train;  ///< LoaderData::train's nodes, as global IDs here

  ServeProcesses(Bench& bench, const LoaderData& d)
      : tmp(std::filesystem::temp_directory_path() /
            ("distgraph-bench-procs-" + std::to_string(::getpid()))) {
    using namespace std::chrono_literals;
    const std::int64_t n = bench.graph.num_nodes();
    const auto dim = static_cast<std::size_t>(bench.args.feat_dim);
    distgraph::Stopwatch clock;
    distgraph::partition_graph(bench.graph, "rmat", 2, tmp.path,
                               {.method = distgraph::PartMethod::metis, .seed = 3},
                               loader_node_data(d, n, dim));
    config = tmp.path / "rmat.json";
    bench.rep.note("loader procs: partitioned into 2 (METIS) in " +
                   std::to_string(clock.seconds()) + " s");
    // The same seed nodes: random-partition global ID -> input ID -> METIS global ID.
    std::vector<std::int64_t> global_of(static_cast<std::size_t>(n), -1);
    for (int p = 0; p < 2; ++p) {
      const auto part = distgraph::load_partition(config, p);
      for (std::int64_t v = 0; v < part.num_inner_nodes; ++v)
        global_of[static_cast<std::size_t>(part.orig_nid[static_cast<std::size_t>(v)])] =
            part.nid[static_cast<std::size_t>(v)];
    }
    for (const std::int64_t v : d.train)
      train.push_back(global_of[static_cast<std::size_t>(d.orig_of[static_cast<std::size_t>(v)])]);
    const auto ip_path = tmp.path / "ip_config.txt";
    distgraph::test::write_loopback_ip_config(ip_path.string(), 2, 1);
    ip = distgraph::read_ip_config(ip_path, 1);
    clock.reset();
    for (int m = 0; m < 2; ++m) {
      storage.push_back(
          distgraph::machine_storage_dir("rmat", ip.machines[static_cast<std::size_t>(m)]));
      procs.push_back(std::make_unique<distgraph::test::ChildProcess>(std::vector<std::string>{
          DISTGRAPH_CLI, "serve", "--ip-config", ip_path.string(), "--part-config", config.string(),
          "--machine", std::to_string(m), "--servers", "1", "--trainers", "1", "--threads", "2"}));
    }
    for (auto& p : procs)
      if (!p->wait_for_line("listening on", 300s))
        throw std::runtime_error("bench_sampling: a `distgraph serve` did not start:\n" +
                                 p->output());
    distgraph::wait_for_storage(storage[0], distgraph::deadline_in(300s));
    bench.rep.note("loader procs: 2 servers up in " + std::to_string(clock.seconds()) + " s");
    graph =
        std::make_unique<DistLoaderGraph>(colocated_trainer(config, ip.all_servers(1), storage[0]));
    client = graph->client_ptr();
  }
  ~ServeProcesses() {
    using namespace std::chrono_literals;
    graph.reset();
    if (client) {
      try {
        client->shutdown_servers();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_sampling: shutting the servers down: %s\n", e.what());
      }
      client.reset();
    }
    for (auto& p : procs)
      if (!p->wait(30s)) std::fprintf(stderr, "bench_sampling: a server did not exit; killed\n");
    procs.clear();                     // kills and reaps whatever is still running
    for (const auto& dir : storage) {  // left behind only by a killed server
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  }
  ServeProcesses(const ServeProcesses&) = delete;
  ServeProcesses& operator=(const ServeProcesses&) = delete;
};

LoaderData::~LoaderData() {
  procs.reset();
  standalone.reset();
  loopback.reset();
  std::filesystem::remove_all(dir);
}

void loader_standalone_t1(Bench& b) {
  loader_figure(b, "loader_standalone_t1", standalone_graph(b), 1, {.mode = "standalone"});
}
void loader_standalone_t2(Bench& b) {
  loader_figure(b, "loader_standalone_t2", standalone_graph(b), 2, {.mode = "standalone"});
}
void loader_dist_t1(Bench& b) {
  loader_figure(b, "loader_dist_t1", loopback_graph(b), 1, {.mode = "dist (2 servers, loopback)"});
}
void loader_dist_t2(Bench& b) {
  loader_figure(b, "loader_dist_t2", loopback_graph(b), 2, {.mode = "dist (2 servers, loopback)"});
}

/// Runs loader figure `name` on the server processes (started on first use); skipped with
/// a note when this program was built without the CLI.
void loader_procs_figure(Bench& b, const std::string& name, unsigned threads) {
  if (std::string(DISTGRAPH_CLI).empty()) {
    b.rep.note(name + ": skipped (built without the distgraph CLI target)");
    return;
  }
  LoaderData& d = loader_data(b);
  if (!d.procs) d.procs = std::make_unique<ServeProcesses>(b, d);
  loader_figure(b, name, *d.procs->graph, threads,
                {.mode = "dist (2 `distgraph serve` processes, loopback)",
                 .partitions = "2, metis",
                 .train = &d.procs->train});
}
void loader_dist_t1_procs(Bench& b) { loader_procs_figure(b, "loader_dist_t1_procs", 1); }
void loader_dist_t2_procs(Bench& b) { loader_procs_figure(b, "loader_dist_t2_procs", 2); }

/// One trainer's loader epochs (epoch -1 first, to warm up), each timed: wall seconds and
/// batches. `start` runs once the loader is built, just before the first epoch: where the
/// two trainers of loader_dist_2procs meet.
std::vector<std::pair<double, std::int64_t>> timed_loader_epochs(
    DistLoaderGraph graph, const std::vector<std::int64_t>& seeds, std::int64_t rank,
    std::int64_t batch_size, int epochs, const std::function<void()>& start) {
  distgraph::NodeDataLoader loader(std::move(graph), seeds, loader_fanouts,
                                   {.batch_size = batch_size,
                                    .seed = loader_seed,
                                    .rank = rank,
                                    .num_prefetch_threads = 1,
                                    .prefetch_depth = 2});
  start();
  std::vector<std::pair<double, std::int64_t>> out;
  for (int e = -1; e < epochs; ++e) {
    distgraph::Stopwatch clock;
    std::int64_t batches = 0;
    for (const distgraph::NodeBatch& b : loader.epoch(e)) batches += b.blocks.empty() ? 0 : 1;
    out.emplace_back(clock.seconds(), batches);
  }
  return out;
}

/// `bench_sampling --loader-trainer FILE`: the second trainer of loader_dist_2procs, on the
/// machine and seeds FILE (JSON) names. Prints "ready", waits for the start byte on the
/// FIFO FILE names, then one JSON line per epoch.
int loader_trainer_role(const std::string& file) {
  std::ifstream in(file);
  const auto j = nlohmann::json::parse(in);
  const auto machine = j["machine"].get<std::int32_t>();
  const auto ip = distgraph::read_ip_config(j["ip_config"].get<std::string>(), 1);
  const int go = ::open(j["fifo"].get<std::string>().c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (go < 0) throw std::runtime_error("bench_sampling: cannot open the start FIFO");
  const auto epochs = timed_loader_epochs(
      colocated_trainer(j["config"].get<std::string>(), ip.all_servers(1),
                        j["storage"].get<std::string>(), machine),
      j["seeds"].get<std::vector<std::int64_t>>(), machine, j["batch_size"].get<std::int64_t>(),
      j["epochs"].get<int>(), [go] {
        // Built and connected: say so, then wait for the other trainer's start byte.
        std::printf("ready\n");
        std::fflush(stdout);
        pollfd p{go, POLLIN, 0};
        char c = 0;
        if (::poll(&p, 1, 300'000) != 1 || ::read(go, &c, 1) != 1)
          throw std::runtime_error("bench_sampling: no start signal within 300 s");
      });
  ::close(go);
  for (std::size_t e = 0; e < epochs.size(); ++e)
    std::printf("%s\n", nlohmann::json{{"epoch", static_cast<int>(e) - 1},
                                       {"wall_s", epochs[e].first},
                                       {"batches", epochs[e].second}}
                            .dump()
                            .c_str());
  return 0;
}

/// loader_dist_t2_procs's twin as DGL's `dist2` runs it: 2 trainer processes, one per
/// machine and co-located with it, each with 1 prefetch thread and the seeds its partition
/// owns, started together; batches/s of both together (per epoch: all batches over the
/// slower trainer's wall time, best epoch).
void loader_dist_2procs(Bench& b) {
  using namespace std::chrono_literals;
  if (std::string(DISTGRAPH_CLI).empty()) {
    b.rep.note("loader_dist_2procs: skipped (built without the distgraph CLI target)");
    return;
  }
  LoaderData& d = loader_data(b);
  if (!d.procs) d.procs = std::make_unique<ServeProcesses>(b, d);
  ServeProcesses& sp = *d.procs;
  const auto& book = sp.graph->book();
  std::vector<std::int32_t> owner(sp.train.size());
  book.node_partition(sp.train, owner);
  std::vector<std::vector<std::int64_t>> seeds(2);
  for (std::size_t i = 0; i < owner.size(); ++i)
    seeds[static_cast<std::size_t>(owner[i])].push_back(sp.train[i]);
  const auto fifo = sp.tmp.path / "go";
  if (::mkfifo(fifo.c_str(), 0600) != 0 && errno != EEXIST)
    throw std::runtime_error("bench_sampling: mkfifo " + fifo.string() + " failed");
  const auto role = sp.tmp.path / "trainer1.json";
  std::ofstream(role) << nlohmann::json{
      {"machine", 1},
      {"config", sp.config.string()},
      {"ip_config", (sp.tmp.path / "ip_config.txt").string()},
      {"storage", sp.storage[1].string()},
      {"fifo", fifo.string()},
      {"seeds", seeds[1]},
      {"batch_size", b.args.batch_size},
      {"epochs",
       b.args.loader_epochs}}.dump();
  char self[4096];
  const auto n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) throw std::runtime_error("bench_sampling: cannot find its own program");
  self[n] = '\0';
  distgraph::test::ChildProcess other({self, "--loader-trainer", role.string()});
  const auto mine =
      timed_loader_epochs(*sp.graph, seeds[0], 0, b.args.batch_size, b.args.loader_epochs, [&] {
        // Both loaders built: start together.
        if (!other.wait_for_line("ready", 300s))
          throw std::runtime_error("bench_sampling: the second trainer did not start:\n" +
                                   other.output());
        const int go = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        const bool sent = go >= 0 && ::write(go, "g", 1) == 1;
        if (go >= 0) ::close(go);
        if (!sent) throw std::runtime_error("bench_sampling: cannot start the second trainer");
      });
  const auto status = other.wait(300s);
  if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0)
    throw std::runtime_error("bench_sampling: the second trainer failed:\n" + other.output());
  std::vector<std::pair<double, std::int64_t>> theirs;
  std::istringstream lines(other.output());
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line.front() == '{') {
      const auto j = nlohmann::json::parse(line);
      theirs.emplace_back(j["wall_s"].get<double>(), j["batches"].get<std::int64_t>());
    }
  if (theirs.size() != mine.size())
    throw std::runtime_error("bench_sampling: the second trainer reported " +
                             std::to_string(theirs.size()) + " epochs, expected " +
                             std::to_string(mine.size()));
  double best = 0;
  nlohmann::json walls = nlohmann::json::array();
  for (std::size_t e = 1; e < mine.size(); ++e) {  // 0 is the warm-up
    const double wall = std::max(mine[e].first, theirs[e].first);
    best = std::max(best, static_cast<double>(mine[e].second + theirs[e].second) / wall);
    walls.push_back({mine[e].first, theirs[e].first});
  }
  nlohmann::json params = b.params;
  params["mode"] = "dist (2 `distgraph serve` processes, 2 trainer processes, loopback)";
  params["trainers"] = 2;
  params["prefetch_threads_per_trainer"] = 1;
  params["partitions"] = "2, metis";
  params["seeds_per_trainer"] = {seeds[0].size(), seeds[1].size()};
  params["batches_per_epoch"] = {mine.back().second, theirs.back().second};
  params["wall_s_per_epoch"] = walls;
  b.rep.add(Figure{.figure = "loader_dist_2procs",
                   .value = best,
                   .unit = "batches/s",
                   .bound = d.bound,
                   .bound_name = "in_memory_blocks+gather",
                   .params = params});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--loader-trainer") {  // loader_dist_2procs's
    try {
      return loader_trainer_role(argv[2]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_sampling --loader-trainer: %s\n", e.what());
      return 1;
    }
  }
  Bench bench{.args = parse(argc, argv), .rep = Reporter(argc, argv, "bench_sampling")};
  const Args& args = bench.args;
  const std::vector<std::pair<std::string, std::function<void(Bench&)>>> figures = {
      {"sample_neighbors_local", sample_neighbors_local_figure},
      {"labor_input_nodes_ratio", labor_input_nodes_ratio},
      {"loader_standalone_t1", loader_standalone_t1},
      {"loader_standalone_t2", loader_standalone_t2},
      {"loader_dist_t1", loader_dist_t1},
      {"loader_dist_t2", loader_dist_t2},
      {"loader_dist_t1_procs", loader_dist_t1_procs},
      {"loader_dist_t2_procs", loader_dist_t2_procs},
      {"loader_dist_2procs", loader_dist_2procs},
  };
  std::vector<std::string> chosen;  // empty = every figure
  for (std::size_t at = 0; !args.figure.empty() && at <= args.figure.size();) {
    const std::size_t comma = std::min(args.figure.find(',', at), args.figure.size());
    chosen.push_back(args.figure.substr(at, comma - at));
    at = comma + 1;
  }
  const auto wanted = [&](const std::string& name) {
    return chosen.empty() || std::find(chosen.begin(), chosen.end(), name) != chosen.end();
  };
  for (const auto& c : chosen)
    if (std::none_of(figures.begin(), figures.end(), [&](const auto& f) { return f.first == c; })) {
      std::fprintf(stderr, "bench_sampling: no figure named %s\n", c.c_str());
      return 2;
    }

  bench.rep.note("generating and building R-MAT ...");
  distgraph::Stopwatch build_clock;
  bench.graph = distgraph::build_graph(
      distgraph::rmat({.scale = args.scale, .edge_factor = args.edge_factor, .seed = 1}),
      {.remove_self_loops = true, .remove_duplicates = true, .symmetrize = true});
  const double build_s = build_clock.seconds();
  const std::int64_t n = bench.graph.num_nodes();
  distgraph::detail::SplitMix64 rng(7);
  bench.seeds.resize(static_cast<std::size_t>(args.batches * args.batch_size));
  for (auto& v : bench.seeds)
    v = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(n)));

  bench.rep.header(
      {{"graph", "rmat(scale=" + std::to_string(args.scale) + ", edge_factor=" +
                     std::to_string(args.edge_factor) + ", seed=1), symmetrized, simple"},
       {"n", std::to_string(n)},
       {"m", std::to_string(bench.graph.num_edges())},
       {"hub_in_degree", std::to_string(bench.graph.in_degree(0)) + " (node 0)"},
       {"seeds", std::to_string(args.batches) + " batches x " + std::to_string(args.batch_size) +
                     " uniform node IDs"},
       {"fanout", std::to_string(args.fanout)},
       {"threads", "1"},
       {"runs", "best of " + std::to_string(args.runs)},
       {"bound", "random-access reads of the same rows, no sampling logic"},
       {"loader", "NodeDataLoader [10, 25], batch " + std::to_string(args.batch_size) + ", " +
                      std::to_string(args.feat_dim) + "-dim float32, " +
                      std::to_string(args.loader_batches) + " batches x best of " +
                      std::to_string(args.loader_epochs) +
                      " epochs, 2 random parts (*_procs: 2 METIS parts, 2 serve processes)"},
       {"loader_bound", "in-memory MultiLayerNeighborSampler + memcpy gather, 1 thread"},
       {"labor", "LaborSampler / UniformSampler input nodes, [10, 25], " +
                     std::to_string(std::min(args.loader_batches, args.batches)) +
                     " batches, whole graph; bound 1.0 (uniform)"},
       {"build_seconds", std::to_string(build_s)}});
  bench.params = {
      {"scale", args.scale},          {"edge_factor", args.edge_factor}, {"n", n},
      {"m", bench.graph.num_edges()}, {"batch_size", args.batch_size},   {"batches", args.batches}};
  // A figure that fails still ends the servers it started (bench.loader's destructor):
  // an escaping exception would terminate without unwinding.
  try {
    for (const auto& [name, run] : figures)
      if (wanted(name)) run(bench);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_sampling: %s\n", e.what());
    bench.loader.reset();
    return 1;
  }
  return 0;
}
