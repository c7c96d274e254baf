// bench_train: one epoch of GraphSAGE (or GCN, GAT) training, standalone and on a loopback
// cluster, each beside the same epoch's forward and backward alone on blocks built in memory.
//
//   bench_train [--model sage|gcn|gat] [--scale S] [--epochs E] [--runs R] [--figure NAME]
//   [--variants 0|1] [--device cpu|cuda] [--cli PATH] [--keep DIR] [--json]
//   bench_train --testbed HOSTS,... [--rates RATE,...] [...]   (as root: scripts/testbed.sh)
//
// The dataset: R-MAT (a, b, c, d = 0.57, 0.19, 0.19, 0.05, edge factor 16, seed 1)
// symmetrized, without self loops or duplicates; 100-dim standard-normal float32 features,
// 47 uniform random classes, 10% of the nodes (uniform) for training and no validation or
// test set: the recipe would evaluate it after every epoch with full neighbourhoods, which
// through R-MAT's hubs reach most of the graph (6-9 s per evaluation of 200 nodes at scale
// 18), and that is no part of an epoch's time. Written as a dataset folder and partitioned
// in 2 with METIS (seed 0, what `distgraph train` would do) under a temporary folder. The
// blas line of the header names the BLAS libtorch's matrix products run on. The recipe is
// `distgraph train`'s (train_node_classification: GraphSAGE-mean, Adam lr 0.01, weight
// decay 5e-4, dropout 0.5) with 2 layers, hidden 256, fanouts [10, 25], batch 1000, one
// prefetch thread per loader. With --model gcn or gat the model and its optimiser settings
// are that model's default recipe (node_classification_recipe: GCN without bias, dropout
// 0.5; GAT with 8 heads of 32, dropout 0.6 on inputs and attention, Adam lr 0.005), with the
// same hidden 256, fanouts, batch and data, and the figures are named gcn_... and gat_...
// (`distgraph train ... --model M`). Each run trains 1 + E epochs; the first warms up and the
// figure is the mean epoch_s of the other E. Figures (times in seconds, ratio = bound/value):
//   sage_epoch_standalone  one process: train_node_classification over a StandaloneCluster
//                          of the 2 partitions (in-process servers, no sockets), torch's
//                          and OpenBLAS's default intra-op threads.
//   sage_epoch_dist        the real CLI: `distgraph train DIR --part-config CONFIG --parts 2
//                          --epochs 1+E --hidden 256 --fanouts 10,25 --batch-size 1000 --json
//                          --out RUN`: 2 loopback machines, each 1 server + 1 trainer (the
//                          defaults), gradients on the trainers' ring (RingGroup); epoch_s is
//                          trainer 0's, read from the per-epoch JSON lines. Run with
//                          --cache-mb 0 (no row cache): uniform sampling, float32 features,
//                          every remote row fetched, and --no-tls (as DGL, which has no
//                          TLS, and the testbed's plain). On a machine of no more cores
//                          than trainers, params.best_schedule_s is _cores' bound below,
//                          params.ratio_ceiling = bound / best_schedule_s (about the most
//                          this run's ratio could be with free servers, sockets and
//                          all-reduce and batch making perfectly overlapped; an estimate:
//                          its batch making is the in-process loader's) and
//                          params.bound_above_side_by_side says the bound took longer than
//                          both trainers' compute at once (the VM slowed while it ran).
//   sage_epoch_dist_tls    the same as `distgraph train` runs by default: TLS 1.3 with a key
//                          from the secret it writes (what encryption costs on loopback).
//   sage_epoch_dist_cores  the plain epoch against the work no schedule avoids: both
//                          trainers' forward, backward and Adam over their prebuilt batches
//                          at once, a thread each (the slower one's wall time; two threads
//                          on this shared VM do not run at the speed of one alone), plus
//                          the making of every trainer's batches in this process (sampling,
//                          rows, block tensors; timed alone) spread over the cores
//                          (params.work, params.compute_side_by_side_s).
//   sage_epoch_dist_cache / _labor / _bf16 / _all  the same run with issue 20's fetch-less
//                          policies: a 256 MiB row cache per machine (--cache-mb 256), LABOR
//                          sampling (--sampler labor), bfloat16 features (the same METIS
//                          partition written with feat_dtype bfloat16), all three together;
//                          the plain run's bound (`bound / sage_epoch_dist_all` is the goal's
//                          ratio). --variants 0 runs the plain figure only. _all's params
//                          also hold the plain run once more right after it
//                          (plain_rerun_epoch_s; vs_plain_rerun = that / _all's epoch, above 1
//                          when _all is faster): the VM's speed drifts over a bench run, and
//                          the plain figure ran first.
//   remote_bytes_per_epoch one per variant (params.variant): the timed epochs' mean bytes
//                          pulled from the other machine, summed over both trainers; bound
//                          the plain run's bytes (ratio = plain / variant, higher is better).
//   sage_epoch_dist_10gbit one per variant: a network model, compute_s + sample_s + each
//                          trainer's remote bytes at 10 Gbit/s (no overlap), beside the same
//                          compute bound.
//   sage_epoch_dist_traced the plain dist run with `--trace FILE` (every trainer's and
//                          server's timeline), bound: the same run without it, alternated
//                          twice (best of each); ratio = untraced / traced, the cost of a
//                          trace. params: the trace's events and bytes.
//   labor_input_nodes_ratio  LABOR's distinct input nodes per batch over uniform sampling's,
//                          trainer 0's batches of the bound epoch (ratio = 1 / value).
//   sage_epoch_standalone_cuda, sage_epoch_dist_cuda  with --device cuda (these two only):
//                          the same runs with the model on cuda:0 (`distgraph train ...
//                          --device cuda`; both loopback trainers share the one GPU, so
//                          their gradients go through gloo), each against the same bound
//                          computed on the GPU (batches copied there beforehand, timed to a
//                          device synchronisation). params.h2d_bound_s: the bound batches'
//                          features (through a pinned buffer, as the trainer stages them),
//                          labels and blocks copied to the GPU alone, synchronised.
//   testbed_epoch          with --testbed (these two only): the dist run across separate hosts
//                          (scripts/testbed.sh: network namespaces, real sshd, `distgraph
//                          copy`, `distgraph launch` over ssh), one per host count of
//                          --testbed (e.g. 2,4), link rate of --rates (tc's spelling; default
//                          1gbit,2500mbit,10gbit,unshaped) and variant (plain, tls, cache,
//                          bf16, all; --variants 0: plain and tls only; tls: plain with a
//                          secret file, so every connection runs TLS 1.3 with a PSK derived
//                          from it, where the others run open): params hosts, rate, variant,
//                          remote_bytes_per_epoch, cache_hit_rate. The partition: METIS in
//                          one part per host. Bound: every trainer's batches of the bound epoch,
//                          forward, backward and Adam one after another on all the cores (the
//                          hosts share this computer's cores: no schedule avoids that work).
//                          Each host's trainer sizes its threads for a host of its own, so read
//                          the ratios and bytes, not the absolute times.
//   testbed_resume_s       a plain run on the first host count, unshaped, whose last host is
//                          cut off after trainer 0's third epoch; once the launcher gave up and
//                          every host is idle the link is healed and the same command runs
//                          with --resume: seconds from the cut to the resumed run's first
//                          epoch (params: detect_s, cleanup_s, restart_s), bound: the
//                          undisturbed start's time to its first epoch.
// Bound: the same epoch's batches (epoch 1: same seeds, keys and shuffle as the run, made
// through the StandaloneCluster beforehand) as BlockTensors and feature tensors in memory,
// then GraphSAGE forward, cross-entropy, backward and Adam step over them, nothing else;
// best of R runs. Standalone: all batches, default threads. Dist: trainer 0's batches
// (its share of the seeds, half of them, balanced by in-degree as the recipe splits them), on the
// intra-op threads the CLI gives a trainer (cores / (machines x trainers) = 1 on 2 cores, for
// torch and OpenBLAS alike: before session 6 OpenBLAS kept a thread per core here), as it
// runs beside trainer 1. Shares: each figure's sample, fetch, compute and all-reduce seconds
// (EpochStats, mean over the timed epochs) as fractions of epoch_s; sampling and fetching run on
// the loader's prefetch thread, overlapping compute, so the shares need not add to 1; "wait" is
// epoch_s - compute - all-reduce, the trainer's time outside its own work (mostly blocked
// on the loader); "copy" is the batches put on the model's device (to tensors and, on a
// GPU, the host-to-device copies), also outside compute. params.trainer_cpu_s: the CPU
// seconds trainer 0's process used per epoch (EpochStats::cpu_s, all its threads, not its
// server), and trainer_cores_busy = trainer_cpu_s / epoch_s.
#include <torch/cuda.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "distgraph/core/memory.hpp"
#include "distgraph/core/timer.hpp"
#include "distgraph/distributed/node_split.hpp"
#include "distgraph/distributed/standalone.hpp"
#include "distgraph/graph/builder.hpp"
#include "distgraph/graph/generators.hpp"
#include "distgraph/io/dataset.hpp"
#include "distgraph/loaders/node_data_loader.hpp"
#include "distgraph/nn/block_tensors.hpp"
#include "distgraph/nn/graph_sage.hpp"
#include "distgraph/nn/node_model.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "distgraph/runtime/loopback_cluster.hpp"
#include "distgraph/tasks/node_classification.hpp"
#include "distgraph/train/threads.hpp"
#include "support/flags.hpp"
#include "support/report.hpp"
#include "support/rmat_dataset.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"
#include "support/testbed.hpp"

#ifndef DISTGRAPH_CLI
#define DISTGRAPH_CLI "distgraph"
#endif

namespace {

namespace fs = std::filesystem;
using distgraph::bench::Figure;
using distgraph::bench::Kind;
using distgraph::bench::Reporter;

struct Args {
  int scale = 18;
  int edge_factor = 16;
  std::int64_t feat_dim = 100;
  std::int64_t classes = 47;
  /// Timed epochs after the warm-up one. Four: one epoch swings +-10% on a shared VM, and a
  /// mean of two moved a ratio by as much between runs.
  std::int64_t epochs = 4;
  int runs = 3;        ///< bound: best of
  std::string figure;  ///< empty = all
  std::string cli = DISTGRAPH_CLI;
  std::string keep;            ///< non-empty: write the dataset and partitions here and keep them
  std::string model = "sage";  ///< sage, gcn or gat
  int variants = 1;            ///< 1: the dist figure's fetch-less variants too; 0: plain only
  std::string device = "cpu";  ///< cpu or cuda (the model's device; figures get "_cuda")
  std::string testbed;         ///< non-empty: the testbed figures only, on these host counts
  std::string rates = "1gbit,2500mbit,10gbit,unshaped";  ///< --testbed's link rates
};

Args parse(int argc, char** argv) {
  Args a;
  distgraph::bench::Flags("bench_train")
      .add("--scale", a.scale, 8, 26)
      .add("--epochs", a.epochs, 1, 100)
      .add("--runs", a.runs, 1, 100)
      .add("--figure", a.figure, "NAME")
      .add("--cli", a.cli, "PATH")
      .add("--keep", a.keep, "DIR")
      .add("--model", a.model, "sage|gcn|gat")
      .add("--variants", a.variants, 0, 1)
      .add("--device", a.device, "cpu|cuda")
      .add("--testbed", a.testbed, "HOSTS,...")
      .add("--rates", a.rates, "RATE,...")
      .parse(argc, argv);
  return a;
}

// The recipe both figures train with (`distgraph train` with these flags).
constexpr std::int64_t hidden = 256;
constexpr std::int64_t batch_size = 1000;
const std::vector<std::int64_t> fanouts{10, 25};
constexpr std::int64_t bound_epoch = 1;  ///< the first timed epoch

/// The model's device (--device).
torch::Device bench_device(const Args& a) {
  return a.device == "cuda" ? torch::Device("cuda:0") : torch::Device(torch::kCPU);
}

/// A figure's name: `base`, with "_cuda" when the model is on the GPU.
std::string on_device(const Args& a, const std::string& base) {
  return a.device == "cuda" ? base + "_cuda" : base;
}

/// The recipe both figures train with: --model's default recipe with the sizes above.
distgraph::NodeClassificationOptions bench_recipe(const Args& a) {
  auto o = distgraph::node_classification_recipe(distgraph::parse_model_kind(a.model));
  o.device = bench_device(a);
  o.hidden = hidden;
  o.fanouts = fanouts;
  o.batch_size = batch_size;
  o.epochs = 1 + a.epochs;
  return o;
}

/// The benchmark's dataset (see the top of the file) as a Dataset.
distgraph::Dataset make_dataset(const Args& a) {
  return distgraph::bench::rmat_dataset({.scale = a.scale,
                                         .edge_factor = a.edge_factor,
                                         .feat_dim = a.feat_dim,
                                         .classes = a.classes});
}

/// One batch made beforehand: what the model reads, as tensors.
struct Prebuilt {
  std::vector<distgraph::BlockTensors> blocks;
  std::vector<float> features;
  std::vector<std::int64_t> labels;
  torch::Tensor x, y;
};

/// Epoch `bound_epoch`'s batches of trainer `rank` of `world`, exactly as the recipe's
/// training loader makes them (its share of the seeds, loader options and keys).
/// `make_s` (if given) gets the seconds the loader took to make them in this process
/// (sampling, feature and label rows, block tensors), one thread, no sockets.
std::vector<Prebuilt> prebuilt_batches(const distgraph::StandaloneGraph& g,
                                       std::span<const std::int64_t> train_all, std::int32_t rank,
                                       std::int32_t world, double* make_s = nullptr) {
  const distgraph::NodeClassificationOptions o;
  // The recipe's own share (balanced by in-degree across the trainers).
  const std::vector<std::int64_t> all(train_all.begin(), train_all.end());
  const auto ids = distgraph::detail::train_share(
      g, all, o, {.rank = rank, .num_trainers = world, .force_even = true});
  distgraph::NodeDataLoader loader(g, ids, fanouts,
                                   {.batch_size = batch_size,
                                    .shuffle = true,
                                    .seed = o.seed,
                                    .rank = rank,
                                    .num_prefetch_threads = 0,
                                    .feature = o.feature,
                                    .label = o.label});
  std::vector<Prebuilt> out;
  distgraph::Stopwatch clock;
  for (distgraph::NodeBatch& b : loader.epoch(bound_epoch)) {
    Prebuilt p;
    p.blocks = distgraph::block_tensors(std::move(b.blocks));
    p.features = std::move(b.features);
    p.labels = std::move(b.labels);
    const auto rows = static_cast<std::int64_t>(p.features.size()) / b.feat_dim;
    p.x = torch::from_blob(p.features.data(), {rows, b.feat_dim}, torch::kFloat);
    p.y = torch::from_blob(p.labels.data(), {static_cast<std::int64_t>(p.labels.size())},
                           torch::kLong);
    out.push_back(std::move(p));
  }
  if (make_s != nullptr) *make_s = clock.seconds();
  return out;
}

/// Mean sizes of `batches`: input nodes, layer-1 destinations, edges of each block.
nlohmann::json batch_sizes(const std::vector<Prebuilt>& batches) {
  double input = 0, middle = 0, edges0 = 0, edges1 = 0;
  for (const Prebuilt& b : batches) {
    input += static_cast<double>(b.blocks.front().num_src);
    middle += static_cast<double>(b.blocks.front().num_dst);
    edges0 += static_cast<double>(b.blocks.front().num_edges());
    edges1 += static_cast<double>(b.blocks.back().num_edges());
  }
  const auto k = static_cast<double>(std::max<std::size_t>(1, batches.size()));
  return {{"batches", batches.size()},
          {"input_nodes", input / k},
          {"layer1_dst", middle / k},
          {"block_edges", {edges0 / k, edges1 / k}}};
}

/// The BLAS library this process has mapped (libtorch's matrix products run on it): the
/// reference BLAS is several times slower than an optimised one.
std::string mapped_blas() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    if (fs::path(path).filename().string().find("blas") != std::string::npos) return path;
  }
  return "none found";
}

/// `batches` copied to `device` as the trainer stages them (features through one pinned
/// buffer, labels and blocks directly), to a device synchronisation: the copies' seconds.
double copy_to_device(std::vector<Prebuilt>& batches, torch::Device device) {
  distgraph::Stopwatch clock;
  torch::Tensor pinned;
  for (Prebuilt& b : batches) {
    if (pinned.numel() < b.x.numel())
      pinned = torch::empty({b.x.numel()},
                            torch::TensorOptions().dtype(torch::kFloat).pinned_memory(true));
    auto stage = pinned.slice(0, 0, b.x.numel()).view(b.x.sizes());
    stage.copy_(b.x);
    b.x = stage.to(device, /*non_blocking=*/true);
    b.y = b.y.to(device);
    for (auto& blk : b.blocks) blk = blk.to(device);
  }
  torch::cuda::synchronize();
  return clock.seconds();
}

/// Best of `runs` (after one untimed run) of the recipe's model trained over `batches`
/// (on `device`: there already) on `threads` torch intra-op threads and `blas` OpenBLAS
/// threads (where libtorch's BLAS is OpenBLAS): forward, cross-entropy, backward and Adam
/// step, nothing else; on a GPU, to a device synchronisation. Seconds.
double forward_backward(const distgraph::NodeClassificationOptions& o,
                        const std::vector<Prebuilt>& batches, std::int64_t in_feats,
                        std::int64_t classes, int threads, int blas, int runs,
                        torch::Device device = torch::kCPU) {
  const int threads_before = torch::get_num_threads(), blas_before = distgraph::blas_threads();
  torch::set_num_threads(threads);
  if (blas > 0) distgraph::set_blas_threads(blas);
  torch::manual_seed(0);
  distgraph::NodeModel model = distgraph::detail::make_node_model(o, in_feats, classes);
  model->to(device);
  model->train();
  torch::optim::Adam adam(model->parameters(),
                          torch::optim::AdamOptions(o.lr).weight_decay(o.weight_decay));
  double best = std::numeric_limits<double>::infinity();
  for (int r = -1; r < runs; ++r) {
    distgraph::Stopwatch clock;
    for (const Prebuilt& b : batches) {
      const auto loss = torch::cross_entropy_loss(model->forward(b.blocks, b.x), b.y);
      adam.zero_grad();
      loss.backward();
      adam.step();
    }
    if (device.is_cuda()) torch::cuda::synchronize();
    if (r >= 0) best = std::min(best, clock.seconds());
  }
  torch::set_num_threads(threads_before);
  if (blas_before > 0) distgraph::set_blas_threads(blas_before);
  return best;
}

/// Forward, backward and Adam over each trainer's `batches`, every trainer on a thread of
/// its own and all at once (one intra-op and BLAS thread each): the wall time of the
/// slowest, best of `runs`. What the trainers' compute takes side by side on this
/// machine's cores, which a shared VM may not give at the speed of one alone.
double side_by_side(const distgraph::NodeClassificationOptions& o,
                    const std::vector<std::vector<Prebuilt>>& batches, std::int64_t in_feats,
                    std::int64_t classes, int runs) {
  const int threads_before = torch::get_num_threads(), blas_before = distgraph::blas_threads();
  torch::set_num_threads(1);
  if (blas_before > 0) distgraph::set_blas_threads(1);
  struct Trainer {
    distgraph::NodeModel model;
    std::unique_ptr<torch::optim::Adam> adam;
  };
  std::vector<Trainer> trainers;
  for (std::size_t t = 0; t < batches.size(); ++t) {
    torch::manual_seed(0);
    Trainer tr{distgraph::detail::make_node_model(o, in_feats, classes), nullptr};
    tr.model->train();
    tr.adam = std::make_unique<torch::optim::Adam>(
        tr.model->parameters(), torch::optim::AdamOptions(o.lr).weight_decay(o.weight_decay));
    trainers.push_back(std::move(tr));
  }
  double best = std::numeric_limits<double>::infinity();
  for (int r = -1; r < runs; ++r) {
    std::vector<double> wall(batches.size());
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < batches.size(); ++t)
      threads.emplace_back([&, t] {
        distgraph::Stopwatch clock;
        for (const Prebuilt& b : batches[t]) {
          const auto loss =
              torch::cross_entropy_loss(trainers[t].model->forward(b.blocks, b.x), b.y);
          trainers[t].adam->zero_grad();
          loss.backward();
          trainers[t].adam->step();
        }
        wall[t] = clock.seconds();
      });
    for (auto& th : threads) th.join();
    if (r >= 0) best = std::min(best, *std::max_element(wall.begin(), wall.end()));
  }
  torch::set_num_threads(threads_before);
  if (blas_before > 0) distgraph::set_blas_threads(blas_before);
  return best;
}

/// The timed epochs of a run (every row but the first) summed into one mean row.
distgraph::EpochRow mean_row(const std::vector<distgraph::EpochRow>& rows) {
  distgraph::EpochRow m;
  double k = 0;
  for (const auto& r : rows) {
    if (r.epoch == rows.front().epoch) continue;
    m.epoch_s += r.epoch_s;
    m.sample_s += r.sample_s;
    m.fetch_s += r.fetch_s;
    m.compute_s += r.compute_s;
    m.allreduce_s += r.allreduce_s;
    m.copy_s += r.copy_s;
    m.cpu_s += r.cpu_s;
    m.loss = r.loss;
    ++k;
  }
  for (double* x :
       {&m.epoch_s, &m.sample_s, &m.fetch_s, &m.compute_s, &m.allreduce_s, &m.copy_s, &m.cpu_s})
    *x /= k;
  return m;
}

/// The header's description of the model `o` trains.
std::string model_line(const distgraph::NodeClassificationOptions& o) {
  std::string name = o.model == distgraph::ModelKind::gcn ? "GCN (no bias)"
                     : o.model == distgraph::ModelKind::gat
                         ? "GAT, " + std::to_string(o.heads) + " heads"
                         : "GraphSAGE-mean";
  char tail[160];
  std::snprintf(tail, sizeof tail, ", 2 layers, hidden %lld, dropout %g, Adam lr %g wd %g",
                static_cast<long long>(o.hidden), o.dropout, o.lr, o.weight_decay);
  return name + tail;
}

/// What every figure shares.
struct Bench {
  Args args;
  Reporter rep;
  fs::path dataset_dir{}, config{};
  fs::path config_bf16{};  ///< the same partition with bfloat16 features (the variants')
  const distgraph::Dataset* data = nullptr;  ///< the dataset (--testbed partitions it again)
  nlohmann::json params{};
  std::int64_t num_train = 0;
  std::vector<std::pair<std::string, distgraph::EpochRow>> shares{};  ///< printed at the end
};

/// Adds figure `name` from the run's `rows` against `bound` seconds.
void add_epoch_figure(Bench& bench, const std::string& name,
                      const std::vector<distgraph::EpochRow>& rows, double bound,
                      const std::string& bound_name, nlohmann::json params,
                      const std::string& label = "") {
  const auto m = mean_row(rows);
  nlohmann::json epochs = nlohmann::json::array();
  for (const auto& r : rows) epochs.push_back(r.epoch_s);
  params["epoch_s"] = epochs;
  params["timed_epochs"] = bench.args.epochs;
  params["sample_s"] = m.sample_s;
  params["fetch_s"] = m.fetch_s;
  params["compute_s"] = m.compute_s;
  params["allreduce_s"] = m.allreduce_s;
  params["copy_s"] = m.copy_s;
  // Trainer 0's process (not its server): cores it kept busy over the epoch.
  params["trainer_cpu_s"] = m.cpu_s;
  params["trainer_cores_busy"] = m.cpu_s / m.epoch_s;
  const double wait = m.epoch_s - m.compute_s - m.allreduce_s - m.copy_s;
  params["wait_s"] = wait;
  params["shares"] = {
      {"sample", m.sample_s / m.epoch_s},       {"fetch", m.fetch_s / m.epoch_s},
      {"copy", m.copy_s / m.epoch_s},           {"compute", m.compute_s / m.epoch_s},
      {"allreduce", m.allreduce_s / m.epoch_s}, {"wait", wait / m.epoch_s}};
  params["loss"] = m.loss;
  bench.rep.add(Figure{.figure = name,
                       .value = m.epoch_s,
                       .unit = "s",
                       .bound = bound,
                       .bound_name = bound_name,
                       .kind = Kind::time,
                       .params = params,
                       .label = label});
  bench.shares.emplace_back(label.empty() ? name : label, m);
}

void epoch_standalone(Bench& bench) {
  // The process's default threads: torch's (1 on this VM, omp_get_max_threads()) and
  // OpenBLAS's (one per core). `distgraph train --standalone` gives both every core, which
  // measured slower here (two spinning pools on 2 cores).
  const int threads = torch::get_num_threads();
  distgraph::StandaloneCluster<> cluster(bench.config);
  const distgraph::StandaloneGraph g = cluster.graph();
  const auto train_all = distgraph::detail::masked_nodes(g, "train_mask");
  distgraph::Stopwatch clock;
  auto batches = prebuilt_batches(g, train_all, 0, 1);
  const auto o = bench_recipe(bench.args);
  const double h2d = o.device.is_cuda() ? copy_to_device(batches, o.device) : 0.0;
  const double bound =
      forward_backward(o, batches, bench.args.feat_dim, bench.args.classes, threads,
                       distgraph::blas_threads(), bench.args.runs, o.device);
  bench.rep.note("standalone bound: " + std::to_string(batches.size()) + " batches, " +
                 std::to_string(bound) + " s (made and timed in " +
                 std::to_string(clock.seconds()) + " s)");
  std::vector<distgraph::EpochRow> rows;
  clock.reset();
  distgraph::train_node_classification(
      g, o, {}, [&](const distgraph::EpochRow& r, distgraph::Metric) { rows.push_back(r); });
  bench.rep.note("standalone run: " + std::to_string(o.epochs) + " epochs in " +
                 std::to_string(clock.seconds()) + " s (the whole run)");
  nlohmann::json params = bench.params;
  params["mode"] = "standalone (StandaloneCluster, 2 METIS parts, in-process)";
  params["threads"] = threads;
  params["batch"] = batch_sizes(batches);
  params["device"] = o.device.str();
  if (o.device.is_cuda()) params["h2d_bound_s"] = h2d;
  add_epoch_figure(bench, on_device(bench.args, bench.args.model + "_epoch_standalone"), rows,
                   bound,
                   (o.device.is_cuda() ? "fwd+bwd_all_batches_cuda" : "fwd+bwd_all_batches_t") +
                       std::to_string(threads),
                   params);
}

/// The recipe's flags of `distgraph train` (`epochs` epochs, one JSON line each).
std::vector<std::string> recipe_flags(const Args& a, std::int64_t epochs) {
  return {"--epochs",     std::to_string(epochs),
          "--hidden",     std::to_string(hidden),
          "--fanouts",    "10,25",
          "--batch-size", std::to_string(batch_size),
          "--model",      a.model,
          "--device",     a.device,
          "--json"};
}

/// One distributed run of `distgraph train` on the bench's partition (`config`, else the
/// float32 one) with `flags` added: its epoch rows (remote bytes and cache hit rate
/// included) and its result line.
struct DistRun {
  std::vector<distgraph::EpochRow> rows;
  nlohmann::json result;

  /// Takes one line of `distgraph train --json`'s output: an epoch line or the result;
  /// true for an epoch line. Anything else is ignored.
  bool read(const std::string& line) {
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return false;
    if (j.contains("epoch_s")) {
      rows.push_back({.epoch = j["epoch"].get<std::int64_t>(),
                      .loss = j["loss"].get<double>(),
                      .epoch_s = j["epoch_s"].get<double>(),
                      .sample_s = j["sample_s"].get<double>(),
                      .fetch_s = j["fetch_s"].get<double>(),
                      .compute_s = j["compute_s"].get<double>(),
                      .allreduce_s = j["allreduce_s"].get<double>(),
                      .remote_rows = j.value("remote_rows", std::int64_t{0}),
                      .remote_bytes = j.value("remote_bytes", std::int64_t{0}),
                      .cache_hit_rate = j.value("cache_hit_rate", 0.0),
                      .copy_s = j.value("copy_s", 0.0),
                      .cpu_s = j.value("cpu_s", 0.0)});
      return true;
    }
    if (j.contains("epoch_s_mean")) result = j;
    return false;
  }
};
DistRun run_dist(Bench& bench, const std::vector<std::string>& flags, const fs::path& config) {
  const fs::path run = bench.dataset_dir.parent_path() / "run";
  std::vector<std::string> argv = {
      bench.args.cli, "train", bench.dataset_dir.string(), "--part-config", config.string(),
      "--parts",      "2"};
  for (const auto& w : recipe_flags(bench.args, 1 + bench.args.epochs)) argv.push_back(w);
  argv.insert(argv.end(), {"--out", run.string()});
  argv.insert(argv.end(), flags.begin(), flags.end());
  std::string command;
  for (const auto& s : argv) command += (command.empty() ? "" : " ") + s;
  bench.rep.note("running " + command);
  DistRun out;
  distgraph::Stopwatch clock;
  const int status =
      distgraph::bench::run_lines(argv, [&](const std::string& line) { out.read(line); });
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      static_cast<std::int64_t>(out.rows.size()) != 1 + bench.args.epochs) {
    throw std::runtime_error("`" + command + "` failed (wait status " + std::to_string(status) +
                             ", " + std::to_string(out.rows.size()) + " epoch lines)");
  }
  bench.rep.note("dist run: " + std::to_string(out.rows.size()) + " epochs, whole command " +
                 std::to_string(clock.seconds()) + " s; result " + out.result.dump());
  return out;
}

/// Mean of the timed epochs' remote bytes (summed over trainers) and cache hit rate.
std::pair<double, double> mean_traffic(const std::vector<distgraph::EpochRow>& rows) {
  double bytes = 0, hits = 0, k = 0;
  for (const auto& r : rows) {
    if (r.epoch == rows.front().epoch) continue;
    bytes += static_cast<double>(r.remote_bytes);
    hits += r.cache_hit_rate;
    ++k;
  }
  return {bytes / k, hits / k};
}

/// The fetch-less policies of issue 20, each a `distgraph train` variant of the plain run
/// (uniform sampling, float32 features, no row cache).
struct DistVariant {
  const char* name;                ///< params' "variant"; the figure's suffix
  std::vector<std::string> flags;  ///< added to the command line
  bool bf16 = false;               ///< on the bfloat16 partition
  bool secret = false;  ///< TLS with a PSK (testbed: a secret file; loopback: no --no-tls)
};
const std::vector<DistVariant> dist_variants = {
    {"plain", {"--cache-mb", "0"}},
    {"cache", {"--cache-mb", "256"}},
    {"labor", {"--sampler", "labor", "--cache-mb", "0"}},
    {"bf16", {"--cache-mb", "0"}, true},
    {"all", {"--sampler", "labor", "--cache-mb", "256"}, true},
};

/// 10 Gbit/s in bytes per second: the network model's link.
constexpr double link_bytes_per_s = 10e9 / 8;

/// What the dist figures are measured against, from prebuilt batches in this process:
/// trainer 0's forward, backward and Adam steps (`bound`), and (CPU only) the work no
/// schedule of the job avoids: every trainer making its batches (timed alone) and their
/// compute side by side.
struct DistBound {
  double bound = 0, h2d = 0;
  std::size_t num_batches = 0;
  nlohmann::json sizes;
  nlohmann::json work = nlohmann::json::array();
  double make_all_s = 0, side_by_side_s = 0;
};

DistBound dist_bound(Bench& bench, const torch::Device& device, int threads, int trainers) {
  DistBound b;
  distgraph::StandaloneCluster<> cluster(bench.config);
  const distgraph::StandaloneGraph g = cluster.graph();
  const auto train_all = distgraph::detail::masked_nodes(g, "train_mask");
  std::vector<std::vector<Prebuilt>> all;
  for (std::int32_t r = 0; r < (device.is_cuda() ? 1 : trainers); ++r) {
    double make_s = 0;
    all.push_back(prebuilt_batches(g, train_all, r, trainers, &make_s));
    auto& batches = all.back();
    if (r == 0) {
      b.num_batches = batches.size();
      b.sizes = batch_sizes(batches);
      if (device.is_cuda()) b.h2d = copy_to_device(batches, device);
    }
    const double compute =
        forward_backward(bench_recipe(bench.args), batches, bench.args.feat_dim, bench.args.classes,
                         threads, threads, bench.args.runs, device);
    if (r == 0) b.bound = compute;
    b.work.push_back({{"trainer", r}, {"make_batches_s", make_s}, {"compute_alone_s", compute}});
    b.make_all_s += make_s;
  }
  if (!device.is_cuda())
    b.side_by_side_s = side_by_side(bench_recipe(bench.args), all, bench.args.feat_dim,
                                    bench.args.classes, bench.args.runs);
  return b;
}

/// A variant's figures besides its epoch: its remote bytes against the plain run's, and
/// its epoch on a 10 Gbit/s network (the epoch's own work plus each trainer's share of the
/// bytes at link speed, nothing overlapped).
void add_traffic_figures(Bench& bench, const std::string& base, const char* variant,
                         const DistRun& r, double plain_bytes, const DistBound& b,
                         const std::string& bound_name, int trainers) {
  const auto [bytes, hit_rate] = mean_traffic(r.rows);
  // Bytes: lower is better, so they are reported as a time-like figure against the plain
  // run's (ratio = plain / this).
  bench.rep.add(Figure{
      .figure = "remote_bytes_per_epoch",
      .value = bytes,
      .unit = "B",
      .bound = plain_bytes,
      .bound_name = "plain_run_remote_bytes",
      .kind = Kind::time,
      .params = {
          {"variant", variant}, {"cache_hit_rate", hit_rate}, {"summed_over_trainers", trainers}}});
  const auto m = mean_row(r.rows);
  const double modeled = m.compute_s + m.copy_s + m.sample_s + bytes / trainers / link_bytes_per_s;
  bench.rep.add(Figure{.figure = base + "_10gbit",
                       .value = modeled,
                       .unit = "s",
                       .bound = b.bound,
                       .bound_name = bound_name,
                       .kind = Kind::time,
                       .params = {{"variant", variant},
                                  {"model",
                                   "compute_s + copy_s + sample_s + remote_bytes / "
                                   "trainers / 1.25e9 B/s"},
                                  {"compute_s", m.compute_s},
                                  {"sample_s", m.sample_s},
                                  {"remote_bytes_per_trainer", bytes / trainers}}});
}

void epoch_dist(Bench& bench) {
  // Trainer 0's batches, on the threads `distgraph train` gives a trainer.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = std::max(1, cores / 2);
  constexpr int trainers = 2;
  const torch::Device device = bench_device(bench.args);
  const DistBound b = dist_bound(bench, device, threads, trainers);
  bench.rep.note("dist bound: trainer 0's " + std::to_string(b.num_batches) + " batches, " +
                 std::to_string(b.bound) + " s on " + device.str() + ", " +
                 std::to_string(threads) + " thread(s)");
  const std::string bound_name =
      (device.is_cuda() ? "fwd+bwd_trainer0_batches_cuda_t" : "fwd+bwd_trainer0_batches_t") +
      std::to_string(threads);
  const std::string base = on_device(bench.args, bench.args.model + "_epoch_dist");
  double plain_bytes = 0;
  // As DGL, which has no TLS, and as the testbed's plain runs: the connections in clear.
  // Variant `tls` is plain as `distgraph train` runs by default (TLS 1.3, PSK from the
  // secret it writes): what encryption costs on loopback, where nothing else limits.
  std::vector<DistVariant> variants = dist_variants;
  for (DistVariant& v : variants) v.flags.push_back("--no-tls");
  variants.insert(variants.begin() + 1, {"tls", {"--cache-mb", "0"}, false, true});
  for (const DistVariant& v : variants) {
    if (!bench.args.variants && std::string(v.name) != "plain") continue;
    const DistRun r = run_dist(bench, v.flags, v.bf16 ? bench.config_bf16 : bench.config);
    const auto [bytes, hit_rate] = mean_traffic(r.rows);
    const bool plain = std::string(v.name) == "plain";
    if (plain) plain_bytes = bytes;
    nlohmann::json params = bench.params;
    params["mode"] = "distributed (distgraph train, 2 loopback machines x (1 server + 1 trainer))";
    params["variant"] = v.name;
    params["flags"] = v.flags;
    params["tls"] = v.secret ? "1.3 psk" : "off";
    params["feat_dtype"] = v.bf16 ? "bfloat16" : "float32";
    params["trainer_threads"] = threads;
    params["device"] = device.str();
    if (device.is_cuda()) params["h2d_bound_s"] = b.h2d;
    params["batch"] = b.sizes;
    params["result"] = r.result;
    params["remote_bytes_per_epoch"] = bytes;
    params["cache_hit_rate"] = hit_rate;
    if (std::string(v.name) == "all") {
      // Plain again, next to _all in time: the fair neighbour to compare it with.
      const double rerun = mean_row(run_dist(bench, variants[0].flags, bench.config).rows).epoch_s;
      params["plain_rerun_epoch_s"] = rerun;
      params["vs_plain_rerun"] = rerun / mean_row(r.rows).epoch_s;
    }
    // A trainer per core or more, so that side_by_side's one thread each is what a trainer
    // gets (on more cores `distgraph train` gives each trainer cores / 2 threads).
    const bool cores_figure = plain && !device.is_cuda() && cores <= trainers;
    // The trainers' compute side by side plus their batches' making (as the in-process
    // loader does it) spread over the cores: no epoch on this machine is shorter, whatever
    // overlaps, so bound / it is about the most this run's ratio could be. A bound above
    // the side-by-side compute means the VM slowed while it was timed (one thread alone is
    // never slower than two at once).
    const double best_schedule = b.side_by_side_s + b.make_all_s / cores;
    if (cores_figure) {
      params["best_schedule_s"] = best_schedule;
      params["ratio_ceiling"] = b.bound / best_schedule;
      params["bound_above_side_by_side"] = b.bound > b.side_by_side_s;
    }
    add_epoch_figure(bench, plain ? base : base + "_" + v.name, r.rows, b.bound, bound_name,
                     params);
    if (cores_figure) {
      // The same epoch against the best schedule.
      params["work"] = b.work;
      params["compute_side_by_side_s"] = b.side_by_side_s;
      params["cores"] = cores;
      bench.rep.add(
          Figure{.figure = base + "_cores",
                 .value = mean_row(r.rows).epoch_s,
                 .unit = "s",
                 .bound = best_schedule,
                 .bound_name = "all_trainers_work_over_" + std::to_string(cores) + "_cores",
                 .kind = Kind::time,
                 .params = params});
    }
    if (!bench.args.variants) return;
    add_traffic_figures(bench, base, v.name, r, plain_bytes, b, bound_name, trainers);
  }
}

/// The plain distributed epoch with `--trace` against the same run without it, alternated
/// (plain, traced, plain, traced) so that both see the same machine: what a timeline costs.
void epoch_traced(Bench& bench) {
  const fs::path file = bench.dataset_dir.parent_path() / "trace.json";
  const std::vector<std::string> plain_flags{"--cache-mb", "0", "--no-tls"};
  std::vector<std::string> traced_flags = plain_flags;
  traced_flags.insert(traced_flags.end(), {"--trace", file.string()});
  std::vector<double> plain, traced;
  std::int64_t events = 0, bytes = 0;
  for (int i = 0; i < 2; ++i) {
    plain.push_back(mean_row(run_dist(bench, plain_flags, bench.config).rows).epoch_s);
    traced.push_back(mean_row(run_dist(bench, traced_flags, bench.config).rows).epoch_s);
    std::ifstream in(file);
    events = -2;  // the opening and closing lines
    for (std::string line; std::getline(in, line);) ++events;
    bytes = static_cast<std::int64_t>(fs::file_size(file));
  }
  nlohmann::json params = bench.params;
  params["plain_epoch_s"] = plain;
  params["traced_epoch_s"] = traced;
  params["trace_events"] = events;
  params["trace_bytes"] = bytes;
  params["epochs_per_run"] = 1 + bench.args.epochs;
  bench.rep.add(Figure{.figure = on_device(bench.args, bench.args.model + "_epoch_dist_traced"),
                       .value = *std::min_element(traced.begin(), traced.end()),
                       .unit = "s",
                       .bound = *std::min_element(plain.begin(), plain.end()),
                       .bound_name = bench.args.model + "_epoch_dist_untraced_same_run",
                       .kind = Kind::time,
                       .params = params});
}

/// LABOR's distinct input nodes per batch over uniform sampling's, on trainer 0's batches
/// of the bound epoch (the same seeds and keys).
void labor_input_nodes(Bench& bench) {
  distgraph::StandaloneCluster<> cluster(bench.config);
  const distgraph::StandaloneGraph g = cluster.graph();
  const auto train_all = distgraph::detail::masked_nodes(g, "train_mask");
  const distgraph::NodeClassificationOptions o;
  const auto ids = distgraph::detail::train_share(
      g, train_all, o, {.rank = 0, .num_trainers = 2, .force_even = true});
  double inputs[2] = {0, 0};
  std::int64_t batches = 0;
  for (int k = 0; k < 2; ++k) {
    distgraph::NodeDataLoader loader(
        g, ids, fanouts,
        {.batch_size = batch_size,
         .shuffle = true,
         .seed = o.seed,
         .rank = 0,
         .num_prefetch_threads = 0,
         .sampler = distgraph::SamplerSpec{k == 0 ? "uniform" : "labor", {}}});
    batches = loader.num_batches();
    for (std::int64_t b = 0; b < batches; ++b)
      inputs[k] += static_cast<double>(loader.sample_input_nodes(bound_epoch, b).size());
  }
  bench.rep.add(Figure{.figure = "labor_input_nodes_ratio",
                       .value = inputs[1] / inputs[0],
                       .unit = "x",
                       .bound = 1.0,
                       .bound_name = "uniform_input_nodes",
                       .kind = Kind::time,
                       .params = {{"batches", batches},
                                  {"uniform_input_nodes_per_batch", inputs[0] / batches},
                                  {"labor_input_nodes_per_batch", inputs[1] / batches}}});
}

// --testbed: the epoch across separate hosts (scripts/testbed.sh) at several link rates.

using distgraph::bench::Testbed;

/// The comma-separated items of `list`.
std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  std::string item;
  for (const char c : list + ",")
    if (c == ',') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  return out;
}

/// The bench's dataset partitioned in `parts` (METIS, seed 0, float32 or bfloat16 features)
/// under the work folder, once per (parts, dtype): its config.
fs::path partition_parts(Bench& bench, int parts, bool bf16) {
  const fs::path dir = bench.dataset_dir.parent_path() /
                       ("partition-" + std::to_string(parts) + (bf16 ? "-bf16" : ""));
  const fs::path config = dir / (bench.data->name + ".json");
  if (fs::exists(config)) return config;
  distgraph::PartitionOptions o{.method = distgraph::PartMethod::metis, .seed = 0};
  if (bf16) o.feat_dtype = distgraph::DType::bfloat16;
  distgraph::partition_dataset(*bench.data, bench.data->name, parts, dir, o);
  return config;
}

/// Puts the partition of `config` on the testbed under `ws`, as a user would: host 1 (the
/// machine that partitioned) gets every part, `distgraph copy` gives each other host its
/// own; the ip config lists one machine per host. Returns the config's path on the hosts.
std::string place_on(const Bench& bench, const Testbed& tb, const fs::path& config,
                     const std::string& ws) {
  std::string ip;
  for (int h = 1; h <= tb.hosts(); ++h) ip += Testbed::address(h) + " 30050\n";
  tb.run_checked(1, {"/bin/sh", "-c",
                     "mkdir -p \"$1\" && cp -r \"$2\"/. \"$1\"/ && printf '%s' \"$3\" > "
                     "\"$1\"/ip_config.txt",
                     "sh", ws, config.parent_path().string(), ip});
  const std::string there = ws + "/" + config.filename().string();
  tb.run_checked(1, {bench.args.cli, "copy", "--ip-config", ws + "/ip_config.txt", "--part-config",
                     there, "--workspace", ws, "--ssh", tb.ssh(), "--rsync", tb.rsync()});
  return there;
}

/// One `distgraph launch` on the testbed: trainer 0's epoch lines and result, the
/// launcher's exit status and last lines.
struct TestbedRun : DistRun {
  int status = 0;
  std::deque<std::string> tail;
};

/// `distgraph launch` from host 1 over the testbed's ssh with `distgraph train` (the
/// bench's recipe, `epochs` epochs, `flags` added, run folder `out`) as the trainers.
/// `on_epoch` hears each of trainer 0's epoch lines as it comes.
/// `secret`: a secret file (written once, outside the hosts' private folders, so every host
/// reads it at the same path) goes to the launcher, and with it TLS to every connection.
TestbedRun launch_on(const Bench& bench, const Testbed& tb, const std::string& ws,
                     const std::string& config, std::int64_t epochs,
                     const std::vector<std::string>& flags, const std::string& out,
                     const std::function<void(const distgraph::EpochRow&)>& on_epoch = {},
                     bool secret = false) {
  std::vector<std::string> argv{bench.args.cli,  "launch", "--ip-config", ws + "/ip_config.txt",
                                "--part-config", config,   "--ssh",       tb.ssh(),
                                "--workspace",   ws};
  if (secret) {
    const fs::path file = fs::temp_directory_path() / "distgraph-bench-testbed-secret";
    if (!fs::exists(file)) distgraph::write_secret(file);
    argv.insert(argv.end(), {"--secret-file", file.string()});
  }
  argv.insert(argv.end(), {"--", bench.args.cli, "train"});
  for (const auto& w : recipe_flags(bench.args, epochs)) argv.push_back(w);
  argv.insert(argv.end(), {"--out", out});
  argv.insert(argv.end(), flags.begin(), flags.end());
  TestbedRun r;
  const std::string trainer0 = "[trainer 0.0] ";
  r.status = tb.run_on(
      1, argv,
      [&](const std::string& line) {
        if (line.rfind(trainer0, 0) == 0 && r.read(line.substr(trainer0.size())) && on_epoch)
          on_epoch(r.rows.back());
      },
      &r.tail);
  return r;
}

/// The compute bound of one epoch of `parts` hosts that share this computer's cores: every
/// trainer's batches of the bound epoch (each its own share of the seeds, as the recipe
/// splits them), forward, backward and Adam one after another on all the cores, which no
/// schedule of the hosts' trainers on these cores avoids. Seconds, best of --runs.
double testbed_bound(const Bench& bench, const fs::path& config, int parts, nlohmann::json& sizes,
                     int& threads) {
  distgraph::StandaloneCluster<> cluster(config);
  const distgraph::StandaloneGraph g = cluster.graph();
  const auto train_all = distgraph::detail::masked_nodes(g, "train_mask");
  std::vector<Prebuilt> batches;
  for (int r = 0; r < parts; ++r)
    for (Prebuilt& b : prebuilt_batches(g, train_all, r, parts)) batches.push_back(std::move(b));
  sizes = batch_sizes(batches);
  threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return forward_backward(bench_recipe(bench.args), batches, bench.args.feat_dim,
                          bench.args.classes, threads, threads, bench.args.runs);
}

/// The variants measured on the testbed: plain, cache, bf16 and all three.
std::vector<DistVariant> testbed_variants(const Args& a) {
  std::vector<DistVariant> out;
  for (const DistVariant& v : dist_variants) {
    if (std::string(v.name) == "labor" || (!a.variants && std::string(v.name) != "plain")) continue;
    out.push_back(v);
    // Beside plain, the same through TLS: what encryption costs an epoch.
    if (std::string(v.name) == "plain") out.push_back({"tls", v.flags, false, true});
  }
  return out;
}

void testbed_epochs(Bench& bench) {
  for (const std::string& h : split_list(bench.args.testbed)) {
    const int hosts = std::stoi(h);
    const fs::path f32 = partition_parts(bench, hosts, false);
    const fs::path b16 = partition_parts(bench, hosts, true);
    nlohmann::json sizes;
    int threads = 1;
    const double bound = testbed_bound(bench, f32, hosts, sizes, threads);
    const std::string bound_name = "fwd+bwd_all_trainers_batches_t" + std::to_string(threads);
    bench.rep.note(std::to_string(hosts) + " hosts: bound " + std::to_string(bound) + " s");
    const Testbed tb(hosts);
    const std::string ws = tb.workspace();
    const std::string c32 = place_on(bench, tb, f32, ws + "/float32");
    const std::string c16 = place_on(bench, tb, b16, ws + "/bfloat16");
    for (const std::string& rate : split_list(bench.args.rates)) {
      tb.shape(rate);
      for (const DistVariant& v : testbed_variants(bench.args)) {
        const std::string vws = ws + (v.bf16 ? "/bfloat16" : "/float32");
        const std::string label = "hosts=" + h + " rate=" + rate + " variant=" + v.name;
        bench.rep.note("testbed: " + label);
        const TestbedRun r = launch_on(bench, tb, vws, v.bf16 ? c16 : c32, 1 + bench.args.epochs,
                                       v.flags, vws + "/run", {}, v.secret);
        if (r.status != 0 || static_cast<std::int64_t>(r.rows.size()) != 1 + bench.args.epochs)
          throw std::runtime_error(Testbed::failure("the launch of " + label, r.tail));
        const auto [bytes, hit_rate] = mean_traffic(r.rows);
        nlohmann::json params = bench.params;
        params["mode"] = "testbed: distgraph launch over ssh, 1 server + 1 trainer per host";
        params["hosts"] = hosts;
        params["parts"] = hosts;
        params["rate"] = rate;
        params["variant"] = v.name;
        params["tls"] = v.secret ? "1.3 psk" : "off";
        params["flags"] = v.flags;
        params["feat_dtype"] = v.bf16 ? "bfloat16" : "float32";
        params["bound_threads"] = threads;
        params["batch"] = sizes;
        params["result"] = r.result;
        params["remote_bytes_per_epoch"] = bytes;
        params["cache_hit_rate"] = hit_rate;
        add_epoch_figure(bench, "testbed_epoch", r.rows, bound, bound_name, params, label);
      }
    }
  }
}

/// How long a job takes to continue after losing a host: a plain run on the first
/// --testbed host count (unshaped) whose last host is cut off after trainer 0's third
/// epoch; once the launcher has given up and the host has ended its part, the link is
/// healed and the same command runs again with --resume. The figure is the time from the
/// cut to the resumed run's first epoch; the bound is the undisturbed start's time to its
/// first epoch (what any restart costs at least).
void testbed_resume(Bench& bench) {
  using Clock = std::chrono::steady_clock;
  const auto since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  const int hosts = std::stoi(split_list(bench.args.testbed).front());
  const fs::path f32 = partition_parts(bench, hosts, false);
  const Testbed tb(hosts);
  const std::string ws = tb.workspace() + "/float32";
  const std::string config = place_on(bench, tb, f32, ws);
  const std::string out = ws + "/resume";
  constexpr std::int64_t epochs = 6, cut_after = 2;
  const std::vector<std::string> flags{"--cache-mb", "0"};
  const auto start = Clock::now();
  Clock::time_point cut_at{};
  double first_epoch_s = -1;
  const TestbedRun fresh =
      launch_on(bench, tb, ws, config, epochs, flags, out, [&](const distgraph::EpochRow& r) {
        if (first_epoch_s < 0) first_epoch_s = since(start);
        if (r.epoch == cut_after) {
          tb.cut(hosts);
          cut_at = Clock::now();
        }
      });
  if (cut_at == Clock::time_point{} || fresh.status == 0)
    throw std::runtime_error(Testbed::failure("the run to interrupt", fresh.tail));
  const double detect_s = since(cut_at);
  tb.heal(hosts);
  for (int h = 1; h <= hosts; ++h)
    if (!tb.idle(h, 30))
      throw std::runtime_error("host " + std::to_string(h) + " still runs the job 30 s after " +
                               "the launcher gave up");
  const double cleanup_s = since(cut_at);
  std::vector<std::string> resume = flags;
  resume.push_back("--resume");
  const auto relaunch = Clock::now();
  double restart_s = -1, total_s = -1;
  std::int64_t resumed_epoch = -1;
  const TestbedRun resumed =
      launch_on(bench, tb, ws, config, epochs, resume, out, [&](const distgraph::EpochRow& r) {
        if (restart_s >= 0) return;
        restart_s = since(relaunch);
        total_s = since(cut_at);
        resumed_epoch = r.epoch;
      });
  if (resumed.status != 0 || restart_s < 0)
    throw std::runtime_error(Testbed::failure("the resumed run", resumed.tail));
  bench.rep.add(Figure{.figure = "testbed_resume_s",
                       .value = total_s,
                       .unit = "s",
                       .bound = first_epoch_s,
                       .bound_name = "fresh_start_to_first_epoch",
                       .kind = Kind::time,
                       .params = {{"hosts", hosts},
                                  {"rate", "unshaped"},
                                  {"cut_host", hosts},
                                  {"cut_after_epoch", cut_after},
                                  {"detect_s", detect_s},
                                  {"cleanup_s", cleanup_s},
                                  {"restart_s", restart_s},
                                  {"first_resumed_epoch", resumed_epoch},
                                  {"epochs", epochs}},
                       .label = "cut -> launcher exits -> host idle -> --resume -> epoch"});
}

/// The shares of each figure's epoch, as a table (text mode; --json has them in params).
void print_shares(const Bench& bench) {
  if (bench.rep.json() || bench.shares.empty()) return;
  std::printf(
      "\nwhere an epoch goes (mean of the timed epochs; seconds, share of epoch_s; sample and "
      "fetch\nrun on the prefetch thread, overlapping compute; copy: batches onto the model's "
      "device;\nwait = epoch - copy - compute - all-reduce)\n%-28s %9s %16s %16s %16s %16s %16s "
      "%16s\n",
      "figure", "epoch_s", "sample", "fetch", "copy", "compute", "all-reduce", "wait");
  for (const auto& [name, m] : bench.shares) {
    std::printf("%-28s %9.3f", name.c_str(), m.epoch_s);
    const double wait = m.epoch_s - m.copy_s - m.compute_s - m.allreduce_s;
    for (const double x : {m.sample_s, m.fetch_s, m.copy_s, m.compute_s, m.allreduce_s, wait})
      std::printf(" %8.3f (%4.1f%%)", x, 100.0 * x / m.epoch_s);
    std::printf("\n");
  }
}

}  // namespace

/// Why `args` cannot run (a one-line message), or "" when they can.
std::string invalid_args(const Args& args) {
  if (args.model != "sage" && args.model != "gcn" && args.model != "gat")
    return "--model " + args.model + "; expected sage, gcn or gat";
  if (args.device != "cpu" && args.device != "cuda")
    return "--device " + args.device + "; expected cpu or cuda";
  if (args.device == "cuda" && !torch::cuda::is_available())
    return "--device cuda: no CUDA device here (or a libtorch built without CUDA)";
  return "";
}

using FigureList = std::vector<std::pair<std::string, std::function<void(Bench&)>>>;

/// The figures `args` ask for (--device, --testbed), or a one-line reason why none can run.
std::variant<FigureList, std::string> figures_of(Args& args) {
  const std::string standalone_name = on_device(args, args.model + "_epoch_standalone"),
                    dist_name = on_device(args, args.model + "_epoch_dist");
  FigureList figures = {{standalone_name, epoch_standalone}, {dist_name, epoch_dist}};
  // On the GPU: the two epoch figures, plain (the fetch-less variants are about the CPU
  // cluster's network; LABOR's input nodes and a trace's cost do not depend on the device).
  if (args.device == "cuda") {
    args.variants = 0;
  } else {
    figures.emplace_back(dist_name + "_traced", epoch_traced);
    figures.emplace_back("labor_input_nodes_ratio", labor_input_nodes);
  }
  // --testbed: the figures across separate hosts, and no others.
  if (!args.testbed.empty()) {
    const auto hosts = split_list(args.testbed);
    if (hosts.empty() || std::any_of(hosts.begin(), hosts.end(), [](const std::string& h) {
          return h.find_first_not_of("0123456789") != std::string::npos || std::stoi(h) < 2 ||
                 std::stoi(h) > 16;
        }))
      return "--testbed " + args.testbed + "; expected host counts 2-16, e.g. 2,4";
    if (args.device != "cpu") return "--testbed measures CPU trainers (drop --device)";
    if (const std::string why = Testbed::unavailable(); !why.empty()) return "--testbed: " + why;
    figures = {{"testbed_epoch", testbed_epochs}, {"testbed_resume_s", testbed_resume}};
  }
  if (!args.figure.empty() && std::none_of(figures.begin(), figures.end(),
                                           [&](const auto& f) { return f.first == args.figure; }))
    return "no figure named " + args.figure;
  if ((args.figure.empty() || args.figure.rfind(dist_name, 0) == 0 || !args.testbed.empty()) &&
      !fs::exists(args.cli))
    return "no distgraph program at " + args.cli + " (give --cli PATH)";
  return figures;
}

/// The R-MAT dataset written under `dir` and, off the testbed, its METIS partitions (and
/// their bfloat16 twin for the variants) in bench's config paths; returns the seconds the
/// dataset and the partitions took.
std::pair<double, double> prepare_data(Bench& bench, const distgraph::Dataset& data,
                                       const fs::path& dir) {
  const Args& args = bench.args;
  distgraph::Stopwatch clock;
  bench.dataset_dir = dir / data.name;
  distgraph::write_dataset(bench.dataset_dir, data);
  const double build_s = clock.seconds();
  bench.data = &data;
  clock.reset();
  if (args.testbed.empty()) {
    bench.rep.note("partitioning in 2 (METIS) ...");
    distgraph::partition_dataset(data, data.name, 2, dir / "partition",
                                 {.method = distgraph::PartMethod::metis, .seed = 0});
    bench.config = dir / "partition" / (data.name + ".json");
  }
  const std::string dist_name = on_device(args, args.model + "_epoch_dist");
  if (args.testbed.empty() && args.variants != 0 &&
      (args.figure.empty() || args.figure == dist_name)) {
    distgraph::partition_dataset(data, data.name, 2, dir / "partition-bf16",
                                 {.method = distgraph::PartMethod::metis,
                                  .feat_dtype = distgraph::DType::bfloat16,
                                  .seed = 0});
    bench.config_bf16 = dir / "partition-bf16" / (data.name + ".json");
  }
  bench.num_train = data.num_train();
  return {build_s, clock.seconds()};
}

/// The report's header and every figure's common params.
void describe_run(Bench& bench, const distgraph::Dataset& data, double build_s,
                  double partition_s) {
  const Args& args = bench.args;
  const std::string blas = mapped_blas();
  const std::string fan =
      "[" + std::to_string(fanouts[0]) + ", " + std::to_string(fanouts[1]) + "]";
  bench.rep.header(
      {{"graph", "rmat(scale=" + std::to_string(args.scale) + ", edge_factor=" +
                     std::to_string(args.edge_factor) + ", seed=1), symmetrized, simple"},
       {"n", std::to_string(data.num_nodes)},
       {"m", std::to_string(data.num_edges())},
       {"features", std::to_string(args.feat_dim) + "-dim standard normal float32"},
       {"classes", std::to_string(args.classes) + " uniform"},
       {"split", std::to_string(bench.num_train) + " train (10%), no val or test set"},
       {"model", model_line(bench_recipe(args))},
       {"loader",
        "fanouts " + fan + ", batch " + std::to_string(batch_size) + ", 1 prefetch thread"},
       {"partitions", args.testbed.empty()
                          ? "2, METIS (seed 0), made in " + std::to_string(partition_s) + " s"
                          : "one per host (METIS, seed 0), made per host count"},
       {"epochs", "1 warm-up + " + std::to_string(args.epochs) + " timed (mean)"},
       {"bound", "forward+backward+Adam over epoch " + std::to_string(bound_epoch) +
                     "'s prebuilt batches, best of " + std::to_string(args.runs)},
       {"device", bench_device(args).str()},
       {"torch_threads", std::to_string(torch::get_num_threads())},
       {"blas_threads", std::to_string(distgraph::blas_threads())},
       {"dataset_seconds", std::to_string(build_s)},
       {"cli", args.cli},
       {"blas", blas}});
  bench.params = {{"model", args.model},
                  {"device", bench_device(args).str()},
                  {"scale", args.scale},
                  {"edge_factor", args.edge_factor},
                  {"n", data.num_nodes},
                  {"m", data.num_edges()},
                  {"feat_dim", args.feat_dim},
                  {"classes", args.classes},
                  {"train_nodes", bench.num_train},
                  {"hidden", hidden},
                  {"fanouts", fanouts},
                  {"batch_size", batch_size},
                  {"parts", 2},
                  {"bound_epoch", bound_epoch},
                  {"blas", blas}};
}

int main(int argc, char** argv) {
  Bench bench{.args = parse(argc, argv), .rep = Reporter(argc, argv, "bench_train")};
  distgraph::retain_freed_memory();  // as `distgraph train` does, for the standalone figure
  // The runs choose TLS by their flags (plain: --no-tls; tls: the default), so an inherited
  // DISTGRAPH_NO_TLS=1 must not turn the tls variant into another plain run.
  if (std::getenv("DISTGRAPH_NO_TLS") != nullptr) {
    bench.rep.note("DISTGRAPH_NO_TLS is set; ignored (each run's flags decide TLS)");
    ::unsetenv("DISTGRAPH_NO_TLS");
  }
  std::string why = invalid_args(bench.args);
  const auto figures = why.empty() ? figures_of(bench.args) : why;
  if (const auto* reason = std::get_if<std::string>(&figures)) {
    std::fprintf(stderr, "bench_train: %s\n", reason->c_str());
    return 2;
  }
  const distgraph::bench::WorkDir tmp(bench.args.keep, "distgraph-bench-train");
  bench.rep.note("generating the R-MAT dataset ...");
  const distgraph::Dataset data = make_dataset(bench.args);
  const auto [build_s, partition_s] = prepare_data(bench, data, tmp.path);
  describe_run(bench, data, build_s, partition_s);
  try {
    for (const auto& [name, run] : std::get<FigureList>(figures))
      if (bench.args.figure.empty() || bench.args.figure == name) run(bench);
  } catch (const std::exception& e) {  // return, so that the temporary folder goes
    std::fprintf(stderr, "bench_train: %s\n", e.what());
    return 1;
  }
  print_shares(bench);
  return 0;
}
