// bench_policies: the policy composition matrix (partition book x transport x storage, and
// the built-in samplers) on one graph, each figure beside the bound the other benchmarks use
// for that kind of figure.
//
//   bench_policies [--scale S] [--calls C] [--runs R] [--loader-batches L]
//                  [--loader-epochs E] [--json]
//
// Defaults: --scale 18 --calls 100 --runs 5 --loader-batches 20 --loader-epochs 3 (about a
// minute); smoke run: --scale 12 (a few seconds). The graph is bench_train's: R-MAT (edge factor
// 16, seed 1) symmetrized, without self loops or duplicates (scale 18: n = 262,144), with 100-dim
// float32 node features, int64 labels and one float32 probability per edge in [0.5, 1.5)
// (edge data "prob", for the weighted sampler), all hashes of the IDs. It is partitioned in
// 2 under a temporary folder twice: with METIS and relabeling (the range book's files), then
// with the same assignment (the METIS result read back, as PartitionOptions::assignment)
// and no relabeling (the basic book's files, as `distgraph partition --no-relabel` writes
// them), so both books split the nodes identically.
//
// Compositions: DistGraph<Book, Transport, Storage> for Book in {RangePartitionBook,
// BasicPartitionBook} x Transport in {InProcessTransport, AsioTransport} x Storage in
// {InMemoryStorage, MmapStorage}: 8 types. One GraphServer per partition (make_servers),
// called in the trainer's thread (in_process) or behind an AsioServer with 2 io threads on
// 127.0.0.1 port 0 (asio). The trainer is co-located with partition 0 as in bench_sampling:
// it reads partition 0's rows from that server's storage (the same InMemoryStorage object,
// or its /dev/shm folder attached) and samples its seeds from the mapped partition, so about
// half of every call is local. Inputs are drawn as input node IDs and mapped to each book's
// global IDs: every composition touches the same nodes. Figures (params: book, transport,
// storage, sampler, "none" for pulls):
//   policy_pull    rows/s of DistTensor::pull, C calls of 1000 uniform random rows. Bound,
//   in_process: the plain gather loop of the same rows from a
//                  heap array (bench_kvstore's pull_colocated); asio: a raw blocking socket
//                  pair moving the remote rows' request and reply bytes (bench_kvstore's
//                  pull_remote) with the gather of the local rows between its send and
//                  receive, as the client overlaps them.
//   policy_sample  edges/s of DistGraph::sample_neighbors, C calls of 1000 uniform random
//                  seeds, fanout 10, for every built-in sampler (uniform,
//                  uniform_replace, full, weighted) on every composition: the server's
//                  dispatch, the trainer's local path and the bytes on the wire all depend on
//                  the sampler (weighted needs the edge data "prob" where it samples).
//                  Bound, in_process: random-access reads of as many entries of each seed's
//                  row of the whole graph's CSC as the sampler returns edges (bench_sampling's
//                  sample_neighbors_local bound); asio: the raw socket pair moving the remote
//                  seeds and their edges (3 int64 each) with the local seeds' reads between
//                  send and receive (the remote server's reads run on the other core, free).
//                  Weighted draws read a seed's whole row of weights, more than it returns,
//                  so its ratio is low by construction: compare its values across rows.
//   policy_loader  batches/s of a NodeDataLoader, fanouts [10, 25], batch 1000, uniform, 1
//                  prefetch thread (the training recipe's), features and labels, L batches
//                  of distinct uniform seeds per epoch, best of E epochs after a warm-up.
//                  Bound: bench_sampling's in-memory ceiling, MultiLayerNeighborSampler over
//                  the whole graph plus a memcpy gather of the input rows, same seed batches,
//                  one thread; bound and loader epochs alternate.
// Pull and sample time each call alone, R runs alternating with their bound's, and sum
// each call's best (bench::best_per_call): a lost scheduler slice on this shared 2-core VM
// would otherwise land in every run of 100 calls. The loader's batches overlap, so it keeps
// the best whole epoch.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "distgraph/core/timer.hpp"
#include "distgraph/distributed/dist_graph.hpp"
#include "distgraph/distributed/kv_client.hpp"
#include "distgraph/graph/builder.hpp"
#include "distgraph/graph/generators.hpp"
#include "distgraph/loaders/node_data_loader.hpp"
#include "distgraph/partition/basic_partition_book.hpp"
#include "distgraph/partition/load_partition.hpp"
#include "distgraph/partition/partition_graph.hpp"
#include "distgraph/partition/range_partition_book.hpp"
#include "distgraph/sampling/full_neighbor_sampler.hpp"
#include "distgraph/sampling/local_graph_view.hpp"
#include "distgraph/sampling/multi_layer.hpp"
#include "distgraph/sampling/rng.hpp"
#include "distgraph/sampling/sampler_spec.hpp"
#include "distgraph/sampling/uniform_replace_sampler.hpp"
#include "distgraph/sampling/uniform_sampler.hpp"
#include "distgraph/sampling/weighted_sampler.hpp"
#include "distgraph/server/graph_server.hpp"
#include "distgraph/server/policies.hpp"
#include "distgraph/storage/in_memory_storage.hpp"
#include "distgraph/storage/mmap_storage.hpp"
#include "distgraph/transport/asio_server.hpp"
#include "distgraph/transport/asio_transport.hpp"
#include "distgraph/transport/in_process_transport.hpp"
#include "support/bounds.hpp"
#include "support/flags.hpp"
#include "support/raw_tcp.hpp"
#include "support/report.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using namespace distgraph;
using bench::Figure;
using bench::RowPicks;

struct Args {
  int scale = 18;
  int edge_factor = 16;  ///< bench_train's
  std::int64_t feat_dim = 100;
  std::int64_t calls = 100;  ///< pull and sample calls per timed run
  int runs = 5;              ///< best of
  std::int64_t loader_batches = 20;
  int loader_epochs = 3;
};

Args parse(int argc, char** argv) {
  Args a;
  bench::Flags("bench_policies")
      .add("--scale", a.scale, 8, 24)
      .add("--calls", a.calls, 1, 100'000)
      .add("--runs", a.runs, 1, 100)
      .add("--loader-batches", a.loader_batches, 1, 10'000)
      .add("--loader-epochs", a.loader_epochs, 1, 100)
      .parse(argc, argv);
  return a;
}

constexpr std::int64_t batch = 1000;  ///< rows per pull, seeds per sample call and per batch
constexpr std::int64_t fanout = 10;
constexpr std::uint64_t loader_seed = 1;
const std::vector<std::int64_t> loader_fanouts{10, 25};
constexpr int parts = 2;
const ClusterLayout trainer_layout{
    .num_machines = parts, .servers_per_machine = 1, .machine_id = 0, .num_trainers = 1};

// --- names --------------------------------------------------------------------------------

template <class P>
constexpr std::string_view policy_name() {
  if constexpr (std::is_same_v<P, RangePartitionBook>) return "range";
  if constexpr (std::is_same_v<P, BasicPartitionBook>) return "basic";
  if constexpr (std::is_same_v<P, InProcessTransport>) return "in_process";
  if constexpr (std::is_same_v<P, AsioTransport>) return "asio";
  if constexpr (std::is_same_v<P, InMemoryStorage>) return "in_memory";
  if constexpr (std::is_same_v<P, MmapStorage>) return "mmap";
}

/// A built-in sampler by name, and how many entries of a row it returns (its bound's reads).
struct SamplerModel {
  std::string name;
  RowPicks picks;
};
const std::vector<SamplerModel> sampler_models = {{"uniform", RowPicks::at_most_fanout},
                                                  {"uniform_replace", RowPicks::exactly_fanout},
                                                  {"full", RowPicks::whole_row},
                                                  {"weighted", RowPicks::at_most_fanout}};

/// The request form of built-in sampler `name` (weighted: over edge data "prob").
/// API seam (b): the one place that spells a SamplerSpec.
SamplerSpec spec_for(const std::string& name) {
  if (name == "uniform") return sampler_spec<UniformSampler>();
  if (name == "uniform_replace") return sampler_spec<UniformReplaceSampler>();
  if (name == "full") return sampler_spec<FullNeighborSampler>();
  if (name == "weighted") return WeightedSampler::spec("prob");
  throw std::invalid_argument("bench_policies: no built-in sampler named " + name);
}

// --- the data every composition shares -------------------------------------------------------

/// One call's inputs (input node IDs), split by owner for the asio bounds.
struct Call {
  std::vector<std::int64_t> all, local, remote;
};

struct Bench {
  Args args;
  bench::Reporter rep;
  Graph graph{};
  std::vector<float> feat{};  ///< n x feat_dim by input node ID: the bounds' table
  fs::path range_config{}, basic_config{};
  std::vector<std::int32_t> owner{};  ///< partition of each input node ID
  std::vector<Call> pulls{}, samples{};
  std::vector<std::int64_t> train{};  ///< the loader's seeds, distinct input node IDs
  bench::RawPair raw{};               ///< the asio bounds' socket pair
  nlohmann::json params{};
};

template <class Book>
const fs::path& config_of(const Bench& b) {
  return std::is_same_v<Book, RangePartitionBook> ? b.range_config : b.basic_config;
}

/// Global node ID of each input node ID under the partitioning at `config`.
std::vector<std::int64_t> global_ids_of(const fs::path& config, std::int64_t n) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(n), -1);
  for (int p = 0; p < parts; ++p) {
    const Partition part = load_partition(config, p);
    for (std::int64_t v = 0; v < part.num_inner_nodes; ++v)
      out[static_cast<std::size_t>(part.orig_nid[static_cast<std::size_t>(v)])] =
          part.nid[static_cast<std::size_t>(v)];
  }
  return out;
}

std::vector<std::int64_t> mapped(std::span<const std::int64_t> ids,
                                 const std::vector<std::int64_t>& global_of) {
  std::vector<std::int64_t> out(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) out[i] = global_of[static_cast<std::size_t>(ids[i])];
  return out;
}

// --- compositions ----------------------------------------------------------------------------

/// The servers of one (book, storage) pair, shared by both transports, and what a trainer
/// co-located with partition 0 needs from them. Removes its storage folders.
template <class Book, class S>
struct ServerSet {
  // Servers never use the transport: both transports' clients share these (AnyTransport,
  // the default, names none in particular).
  using server_type = GraphServer<Policies<Book, AnyTransport, S>>;
  std::vector<fs::path> dirs;  ///< MmapStorage folders, one per partition
  std::vector<std::unique_ptr<server_type>> servers;
  std::optional<Book> book;                ///< the trainer's book
  std::shared_ptr<const Partition> local;  ///< partition 0, mapped
  std::shared_ptr<S> colocated;            ///< partition 0's storage, as the trainer sees it

  std::vector<Handler> handlers() {
    std::vector<Handler> out;
    for (auto& s : servers) out.push_back(s->handler());
    return out;
  }
  ServerSet() = default;
  ~ServerSet() {
    servers.clear();
    colocated.reset();
    std::error_code ec;
    for (const auto& d : dirs) fs::remove_all(d, ec);
  }
  ServerSet(const ServerSet&) = delete;
  ServerSet& operator=(const ServerSet&) = delete;
};

/// Loads each partition at `config` into a main GraphServer over a storage of type S (a
/// fresh InMemoryStorage, or an MmapStorage folder under /dev/shm as `distgraph serve`
/// makes), and the co-located trainer's book, partition and storage.
/// API seam (a): the one place that builds servers and takes the book out of a partition.
template <class Book, class S>
std::unique_ptr<ServerSet<Book, S>> make_servers(const fs::path& config) {
  auto set = std::make_unique<ServerSet<Book, S>>();
  const fs::path shm =
      fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
  std::vector<std::shared_ptr<S>> stores;
  for (int p = 0; p < parts; ++p) {
    if constexpr (std::is_same_v<S, MmapStorage>) {
      set->dirs.push_back(shm / ("distgraph-bench-policies-" + std::to_string(::getpid()) + "-" +
                                 std::to_string(p)));
      fs::remove_all(set->dirs.back());
      stores.push_back(std::make_shared<S>(S::create_dir(set->dirs.back())));
    } else {
      stores.push_back(std::make_shared<S>());
    }
    set->servers.push_back(std::make_unique<typename ServerSet<Book, S>::server_type>(
        load_partition(config, p), stores.back()));
  }
  set->local = std::make_shared<const Partition>(load_partition(config, 0));
  set->book.emplace(partition_book<Book>(*set->local));
  if constexpr (std::is_same_v<S, MmapStorage>)
    set->colocated = std::make_shared<S>(S::attach(set->dirs[0]));  // as a trainer process would
  else
    set->colocated = stores[0];  // the same process: the server's own storage object
  return set;
}

/// The transport of a composition and whatever serves it: nothing for in-process calls;
/// an AsioServer per server on 127.0.0.1 port 0 for asio.
template <class T>
struct Wire;

template <>
struct Wire<InProcessTransport> {
  std::shared_ptr<InProcessTransport> transport;
  explicit Wire(std::vector<Handler> handlers)
      : transport(std::make_shared<InProcessTransport>(std::move(handlers))) {}
};

template <>
struct Wire<AsioTransport> {
  std::vector<std::unique_ptr<AsioServer>> net;
  std::shared_ptr<AsioTransport> transport;
  explicit Wire(std::vector<Handler> handlers) {
    std::vector<Endpoint> endpoints;
    for (auto& h : handlers) {
      net.push_back(std::make_unique<AsioServer>(
          std::move(h), AsioServerOptions{.num_threads = 2, .run_inline = quick_request}));
      net.back()->start();
      endpoints.push_back(net.back()->endpoint());
    }
    transport = std::make_shared<AsioTransport>(endpoints);
  }
  ~Wire() {
    transport.reset();
    for (auto& n : net) n->stop();
  }
  Wire(const Wire&) = delete;
  Wire& operator=(const Wire&) = delete;
};

/// The trainer's DistGraph: a KVClient over `transport` co-located with partition 0.
template <class Book, class T, class S>
DistGraph<Book, T, S> make_graph(const ServerSet<Book, S>& set, std::shared_ptr<T> transport) {
  auto client = std::make_shared<KVClient<Book, T, S>>(std::move(transport), *set.book,
                                                       trainer_layout, set.colocated);
  return DistGraph<Book, T, S>(std::move(client), set.local);
}

// --- figures ---------------------------------------------------------------------------------

/// What one composition's figures share: its names and the input mapping of its book.
struct Combo {
  std::string book, transport, storage;
  bool asio = false;
  std::vector<std::int64_t> global_of;

  nlohmann::json params(const Bench& b, const std::string& sampler) const {
    nlohmann::json p = b.params;
    p["book"] = book;
    p["transport"] = transport;
    p["storage"] = storage;
    p["sampler"] = sampler;
    return p;
  }
  std::string label(const std::string& sampler) const {
    return book + "/" + transport + "/" + storage + "/" + sampler;
  }
};

template <class Graph>
void pull_figure(Bench& b, const Combo& c, const Graph& graph) {
  const auto dim = static_cast<std::size_t>(b.args.feat_dim);
  const auto feat = graph.template ndata<float>("feat");
  std::vector<std::vector<std::int64_t>> ids;
  for (const Call& call : b.pulls) ids.push_back(mapped(call.all, c.global_of));
  std::vector<float> out(static_cast<std::size_t>(batch) * dim);
  const auto run = [&](std::size_t k) { feat.pull(ids[k], out); };
  const std::size_t row_bytes = dim * sizeof(float);
  const auto bound = [&](std::size_t k) {
    const Call& call = b.pulls[k];
    if (!c.asio) {
      bench::gather_rows(b.feat.data(), dim, call.all, out.data());
      return;
    }
    // Request and reply bytes as the KV protocol moves them (frame header, head, parts).
    b.raw.send(call.remote.size() * 8 + 64, call.remote.size() * row_bytes + 32);
    bench::gather_rows(b.feat.data(), dim, call.local, out.data());
    b.raw.receive();
  };
  const auto [s, bound_s] = bench::best_per_call(b.args.runs, ids.size(), run, bound);
  const double rows = static_cast<double>(b.pulls.size()) * static_cast<double>(batch);
  nlohmann::json params = c.params(b, "none");
  params["rows_per_call"] = batch;
  params["calls"] = b.pulls.size();
  b.rep.add(Figure{.figure = "policy_pull",
                   .value = rows / s,
                   .unit = "rows/s",
                   .bound = rows / bound_s,
                   .bound_name = c.asio ? "raw_loopback_tcp+gather" : "plain_gather_loop",
                   .params = params,
                   .label = c.label("-")});
}

template <class Graph>
void sample_figure(Bench& b, const Combo& c, const Graph& graph, const SamplerModel& model) {
  const auto view = in_edges_view(b.graph);
  const SamplerSpec spec = spec_for(model.name);
  std::vector<std::vector<std::int64_t>> seeds;
  std::vector<std::int64_t> remote_reads;
  for (const Call& call : b.samples) {
    seeds.push_back(mapped(call.all, c.global_of));
    remote_reads.push_back(
        bench::random_row_reads(view.indptr, view.indices, call.remote, fanout, model.picks).reads);
  }
  std::vector<std::int64_t> edges(seeds.size()), reads(seeds.size());
  std::uint64_t checksum = 0;
  const auto run = [&](std::size_t k) {
    const auto key = SampleKey{.seed = 1, .batch = static_cast<std::int64_t>(k)};
    edges[k] = graph.sample_neighbors(seeds[k], fanout, key, spec).num_edges();
  };
  const auto bound = [&](std::size_t k) {
    const Call& call = b.samples[k];
    if (!c.asio) {
      const auto r =
          bench::random_row_reads(view.indptr, view.indices, call.all, fanout, model.picks);
      reads[k] = r.reads;
      checksum += r.checksum;
      return;
    }
    // Request: head (key, fanout, sampler, count) and the seeds; reply: src, dst and edge
    // IDs of every remote edge.
    b.raw.send(call.remote.size() * 8 + 96, static_cast<std::size_t>(remote_reads[k]) * 24 + 32);
    const auto r =
        bench::random_row_reads(view.indptr, view.indices, call.local, fanout, model.picks);
    b.raw.receive();
    reads[k] = r.reads + remote_reads[k];
    checksum += r.checksum;
  };
  const auto [s, bound_s] = bench::best_per_call(b.args.runs, seeds.size(), run, bound);
  const std::int64_t total_edges = std::accumulate(edges.begin(), edges.end(), std::int64_t{0});
  const std::int64_t total_reads = std::accumulate(reads.begin(), reads.end(), std::int64_t{0});
  nlohmann::json params = c.params(b, model.name);
  params["seeds_per_call"] = batch;
  params["calls"] = b.samples.size();
  params["fanout"] = fanout;
  params["sampled_edges"] = total_edges;
  params["bound_reads"] = total_reads;
  b.rep.add(
      Figure{.figure = "policy_sample",
             .value = static_cast<double>(total_edges) / s,
             .unit = "edges/s",
             .bound = static_cast<double>(total_reads) / bound_s,
             .bound_name = c.asio ? "random_access_reads+raw_loopback_tcp" : "random_access_reads",
             .params = params,
             .label = c.label(model.name)});
  if (total_edges != total_reads)
    b.rep.note("policy_sample " + c.label(model.name) + ": " + std::to_string(total_edges) +
               " edges sampled, " + std::to_string(total_reads) + " read by the bound (checksum " +
               std::to_string(checksum % 1000) + "): the counts should agree");
}

template <class Graph>
void loader_figure(Bench& b, const Combo& c, const Graph& graph) {
  const auto dim = static_cast<std::size_t>(b.args.feat_dim);
  NodeDataLoader loader(
      graph, mapped(b.train, c.global_of), loader_fanouts,
      {.batch_size = batch, .seed = loader_seed, .num_prefetch_threads = 1, .prefetch_depth = 2});
  // The bound's batches: the loader's epoch order only permutes positions of its seed list,
  // so the same permutation of the input-ID list gives the same nodes in each batch.
  const auto view = in_edges_view(b.graph);
  const MultiLayerNeighborSampler<> sampler(loader_fanouts, {}, {.num_threads = 1});
  std::vector<float> rows;
  double best = std::numeric_limits<double>::infinity(), best_bound = best;
  std::int64_t batches = 0, input_nodes = 0;
  double sample_s = 0, fetch_s = 0, wait_s = 0;
  for (int e = -1; e < b.args.loader_epochs; ++e) {  // epoch -1 warms up
    const auto order = epoch_order(b.train, true, loader_seed, e, 0);
    std::vector<std::vector<std::int64_t>> seeds;
    for (std::size_t at = 0; at < order.size(); at += static_cast<std::size_t>(batch))
      seeds.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(at),
                         order.begin() + static_cast<std::ptrdiff_t>(std::min(
                                             order.size(), at + static_cast<std::size_t>(batch))));
    const double bound_s =
        bench::in_memory_loader_epoch(view, sampler, seeds, loader_seed, e, b.feat, dim, rows);
    std::int64_t n = 0, inputs = 0;
    double sample = 0, fetch = 0, wait = 0;
    Stopwatch clock;
    for (const NodeBatch& nb : loader.epoch(e)) {
      ++n;
      inputs += static_cast<std::int64_t>(nb.input_nodes.size());
      sample += nb.timings.sample_s;
      fetch += nb.timings.fetch_s;
      wait += nb.timings.wait_s;
    }
    const double s = clock.seconds();
    if (e < 0) continue;
    best_bound = std::min(best_bound, bound_s);
    if (s < best) {
      best = s;
      batches = n;
      input_nodes = inputs / n;
      sample_s = sample / static_cast<double>(n);
      fetch_s = fetch / static_cast<double>(n);
      wait_s = wait / static_cast<double>(n);
    }
  }
  nlohmann::json params = c.params(b, "uniform");
  params["fanouts"] = loader_fanouts;
  params["batch_size"] = batch;
  params["prefetch_threads"] = 1;
  params["batches_per_epoch"] = batches;
  params["epochs"] = b.args.loader_epochs;
  params["input_nodes"] = input_nodes;
  params["sample_s"] = sample_s;
  params["fetch_s"] = fetch_s;
  params["wait_s"] = wait_s;
  const auto k = static_cast<double>(batches);
  b.rep.add(Figure{.figure = "policy_loader",
                   .value = k / best,
                   .unit = "batches/s",
                   .bound = k / best_bound,
                   .bound_name = "in_memory_blocks+gather",
                   .params = params,
                   .label = c.label("uniform")});
}

template <class Book, class T, class S>
void run_composition(Bench& b, ServerSet<Book, S>& set,
                     const std::vector<std::int64_t>& global_of) {
  const Combo c{.book = std::string(policy_name<Book>()),
                .transport = std::string(policy_name<T>()),
                .storage = std::string(policy_name<S>()),
                .asio = std::is_same_v<T, AsioTransport>,
                .global_of = global_of};
  Stopwatch clock;
  Wire<T> wire(set.handlers());
  const DistGraph<Book, T, S> graph = make_graph<Book, T, S>(set, wire.transport);
  pull_figure(b, c, graph);
  for (const SamplerModel& m : sampler_models) sample_figure(b, c, graph, m);
  loader_figure(b, c, graph);
  b.rep.note(c.book + "/" + c.transport + "/" + c.storage + ": " + std::to_string(clock.seconds()) +
             " s");
}

template <class Book, class S>
void run_servers(Bench& b) {
  Stopwatch clock;
  const fs::path& config = config_of<Book>(b);
  auto set = make_servers<Book, S>(config);
  const auto global_of = global_ids_of(config, b.graph.num_nodes());
  b.rep.note(std::string(policy_name<Book>()) + "/" + std::string(policy_name<S>()) +
             ": servers up in " + std::to_string(clock.seconds()) + " s");
  run_composition<Book, InProcessTransport, S>(b, *set, global_of);
  run_composition<Book, AsioTransport, S>(b, *set, global_of);
}

// --- set-up ----------------------------------------------------------------------------------

/// Features, labels and edge probabilities, partitioned twice (see the top of the file).
/// Returns the seconds of the METIS partitioning (partition_graph, its files included).
double partition_both(Bench& b, const fs::path& dir) {
  const std::int64_t n = b.graph.num_nodes(), m = b.graph.num_edges();
  const auto dim = static_cast<std::size_t>(b.args.feat_dim);
  b.feat.resize(static_cast<std::size_t>(n) * dim);
  for (std::size_t i = 0; i < b.feat.size(); ++i)
    b.feat[i] = static_cast<float>(detail::mix64(i) >> 40) * 0x1.0p-24f - 0.5f;
  std::vector<std::int64_t> label(static_cast<std::size_t>(n));
  for (std::size_t v = 0; v < label.size(); ++v)
    label[v] = static_cast<std::int64_t>(detail::mix64(v + 0x5bd1e995) % 10);
  std::vector<float> prob(static_cast<std::size_t>(m));
  for (std::size_t e = 0; e < prob.size(); ++e)
    prob[e] = 0.5f + static_cast<float>(detail::mix64(e + 0x2545F491) >> 40) * 0x1.0p-24f;
  const TensorList node_data = {
      {"feat", HostTensor::from(Buffer<float>(b.feat), {n, static_cast<std::int64_t>(dim)})},
      {"label", HostTensor::from(Buffer<std::int64_t>(std::move(label)))}};
  const TensorList edge_data = {{"prob", HostTensor::from(Buffer<float>(std::move(prob)))}};
  Stopwatch clock;
  partition_graph(b.graph, "rmat", parts, dir / "range", {.method = PartMethod::metis, .seed = 0},
                  node_data, edge_data);
  const double metis_s = clock.seconds();
  b.range_config = dir / "range" / "rmat.json";
  b.owner.assign(static_cast<std::size_t>(n), -1);
  for (int p = 0; p < parts; ++p) {
    const Partition part = load_partition(b.range_config, p);
    for (std::int64_t v = 0; v < part.num_inner_nodes; ++v)
      b.owner[static_cast<std::size_t>(part.orig_nid[static_cast<std::size_t>(v)])] = p;
  }
  partition_graph(b.graph, "rmat", parts, dir / "basic", {.relabel = false, .assignment = b.owner},
                  node_data, edge_data);
  b.basic_config = dir / "basic" / "rmat.json";
  return metis_s;
}

/// `count` calls of `batch` uniform random input node IDs each, split by owner.
std::vector<Call> random_calls(const Bench& b, std::int64_t count, std::uint64_t seed) {
  detail::SplitMix64 rng(seed);
  const auto n = static_cast<std::uint64_t>(b.graph.num_nodes());
  std::vector<Call> calls(static_cast<std::size_t>(count));
  for (Call& c : calls) {
    c.all.resize(static_cast<std::size_t>(batch));
    for (auto& v : c.all) {
      v = static_cast<std::int64_t>(rng.below(n));
      (b.owner[static_cast<std::size_t>(v)] == 0 ? c.local : c.remote).push_back(v);
    }
  }
  return calls;
}

/// Distinct uniform input node IDs: the head of a partial Fisher-Yates shuffle.
std::vector<std::int64_t> distinct_seeds(std::int64_t n, std::int64_t count, std::uint64_t seed) {
  count = std::min(n, count);
  std::vector<std::int64_t> all(static_cast<std::size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  detail::SplitMix64 rng(seed);
  for (std::int64_t i = 0; i < count; ++i)
    std::swap(all[static_cast<std::size_t>(i)],
              all[static_cast<std::size_t>(
                  i + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(n - i))))]);
  all.resize(static_cast<std::size_t>(count));
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  Bench b{.args = parse(argc, argv), .rep = bench::Reporter(argc, argv, "bench_policies")};
  const Args& a = b.args;
  Stopwatch total;
  const bench::TempDir tmp(fs::temp_directory_path() /
                           ("distgraph-bench-policies-" + std::to_string(::getpid())));
  try {
    b.rep.note("generating and building R-MAT ...");
    Stopwatch clock;
    b.graph =
        build_graph(rmat({.scale = a.scale, .edge_factor = a.edge_factor, .seed = 1}),
                    {.remove_self_loops = true, .remove_duplicates = true, .symmetrize = true});
    const double build_s = clock.seconds();
    b.rep.note("partitioning in 2 (METIS, relabeled; then the same assignment, not relabeled) ...");
    clock.reset();
    const double metis_s = partition_both(b, tmp.path);
    const double partition_s = clock.seconds();
    const std::int64_t n = b.graph.num_nodes();
    b.pulls = random_calls(b, a.calls, 7);
    b.samples = random_calls(b, a.calls, 8);
    b.train = distinct_seeds(n, a.loader_batches * batch, 11);
    std::int64_t local = 0;
    for (const Call& c : b.pulls) local += static_cast<std::int64_t>(c.local.size());
    const double local_share = static_cast<double>(local) / static_cast<double>(a.calls * batch);

    b.rep.header(
        {{"graph", "rmat(scale=" + std::to_string(a.scale) + ", edge_factor=" +
                       std::to_string(a.edge_factor) + ", seed=1), symmetrized, simple"},
         {"n", std::to_string(n)},
         {"m", std::to_string(b.graph.num_edges())},
         {"features", std::to_string(a.feat_dim) + "-dim float32, int64 labels, edge data prob"},
         {"parts", "2, METIS (seed 0) in " + std::to_string(metis_s) +
                       " s; range: relabeled, basic: same assignment, not relabeled"},
         {"compositions", "{range, basic} x {in_process, asio} x {in_memory, mmap}"},
         {"samplers",
          "uniform, uniform_replace, full, weighted (policy_sample, every composition)"},
         {"trainer",
          "co-located with partition 0 (" + std::to_string(local_share) + " of pulled rows local)"},
         {"threads", "trainer 1; asio servers 2 io threads each; loader 1 prefetch thread"},
         {"pull", std::to_string(a.calls) + " calls x " + std::to_string(batch) +
                      " uniform rows, each call's best of " + std::to_string(a.runs)},
         {"sample", std::to_string(a.calls) + " calls x " + std::to_string(batch) +
                        " uniform seeds, fanout " + std::to_string(fanout) +
                        ", each call's best of " + std::to_string(a.runs)},
         {"loader", "NodeDataLoader [10, 25], batch " + std::to_string(batch) + ", " +
                        std::to_string(a.loader_batches) + " batches x best of " +
                        std::to_string(a.loader_epochs) + " epochs"},
         {"build_seconds", std::to_string(build_s)},
         {"partition_seconds", std::to_string(partition_s)}});
    b.params = {{"scale", a.scale},         {"edge_factor", a.edge_factor}, {"n", n},
                {"m", b.graph.num_edges()}, {"feat_dim", a.feat_dim},       {"parts", parts},
                {"runs", a.runs},           {"local_share", local_share}};

    run_servers<RangePartitionBook, InMemoryStorage>(b);
    run_servers<RangePartitionBook, MmapStorage>(b);
    run_servers<BasicPartitionBook, InMemoryStorage>(b);
    run_servers<BasicPartitionBook, MmapStorage>(b);
  } catch (const std::exception& e) {  // return, so that the temporary folders go
    std::fprintf(stderr, "bench_policies: %s\n", e.what());
    return 1;
  }
  b.rep.note("bench_policies: " + std::to_string(total.seconds()) + " s in all");
  return 0;
}
