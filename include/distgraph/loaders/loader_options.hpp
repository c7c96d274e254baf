// LoaderOptions, BatchTimings and TypedRows: what the node and edge data loaders share.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/core/thread_priority.hpp"
#include "distgraph/distributed/remote_traffic.hpp"
#include "distgraph/sampling/frontier.hpp"
#include "distgraph/sampling/rng.hpp"
#include "distgraph/server/protocol.hpp"

namespace distgraph {

/// How a data loader batches and fetches (designated initialisers:
/// `{.batch_size = 1000, .num_prefetch_threads = 2}`).
struct LoaderOptions {
  std::int64_t batch_size = 1;  ///< seeds per batch, >= 1
  bool shuffle = true;          ///< a new order each epoch (see epoch_order)
  bool drop_last = false;       ///< drop the last batch when it is short
  std::uint64_t seed = 0;       ///< decides shuffles, sampling and negatives
  std::int64_t rank = 0;        ///< this trainer's rank (part of every random key)
  /// Background threads making batches ahead of the consumer; 0 makes each batch inside
  /// next(). Batch i is the same for any count.
  unsigned num_prefetch_threads = 0;
  std::int64_t prefetch_depth = 4;  ///< batches made or in the making ahead, >= 1
  /// The niceness (0-19) the prefetch threads give themselves (Linux: per thread). Where
  /// the cores are all busy, a higher value lets the consumer's training step run on
  /// rather than share its core with batch making the window does not need yet; a thread
  /// that falls behind gets the core when the consumer waits for it and no thread of
  /// normal priority wants it (at 19 it has about 1.5% of a core another thread wants: on
  /// a computer shared with other busy work, keep 0). The batches are the same for any
  /// value; 0 leaves the threads as the process is.
  int prefetch_nice = 0;
  /// The prefetch threads run under SCHED_BATCH (schedule_as_batch, core/thread_priority.hpp):
  /// a thread whose reply arrives or whose window opens waits for the consumer's next
  /// scheduling point instead of preempting its training step. The batches are the same
  /// either way. Threads a sampler or storage starts from them inherit it; false leaves
  /// them under the policy of the thread that began the epoch.
  bool prefetch_sched_batch = false;
  /// With prefetch threads: keep making batches across the end of an epoch, so that the
  /// first batches of epoch e + 1 are made while the consumer still trains on epoch e's
  /// last ones and begin_epoch(e + 1) finds them ready (without it, every epoch's first
  /// batch is waited for). begin_epoch of any other epoch, or of e + 1 before epoch e was
  /// read to its end, discards them. The batches are the same either way; the cost is at
  /// most prefetch_depth batches made for an epoch that never begins.
  bool prefetch_next_epoch = false;
  /// The last epoch that will begin, when known (a recipe's epoch count - 1): with
  /// prefetch_next_epoch, no batch of a later epoch is made.
  std::optional<std::int64_t> last_epoch{};
  std::string feature =
      "feat";  ///< float32/float16/bfloat16 node data of the input nodes, as float32; "" = none
  std::string label = "label";  ///< int64 node data of the output nodes; "" = none
  /// EdgeIds::omitted: the blocks come without edge IDs (Block::eid empty), for models
  /// that never read them. Sampling then skips a random read per sampled edge, and a
  /// BasicDistGraph's servers send 8 bytes per remote edge instead of 24. A graph type
  /// whose sample_neighbors takes no EdgeIds argument gets them anyway. An EdgeDataLoader
  /// that excludes edges needs them (InvalidArgument).
  EdgeIds edge_ids = EdgeIds::included;
  /// The neighbour sampler of every layer. Last on purpose: GCC 12 at -O3 warns
  /// (-Wmaybe-uninitialized, a false positive) about its string when a member initialised
  /// after it may throw.
  SamplerSpec sampler{};
  /// One sampler per layer (input layer first), replacing `sampler` when not empty: e.g.
  /// PerRelationSampler::spec with each layer's per-relation fanouts.
  std::vector<SamplerSpec> layer_samplers{};
};

/// `graph.sample_neighbors(seeds, fanout, key, sampler)`, without edge IDs where `edge_ids`
/// asks and the graph type can leave them out (a fifth, EdgeIds argument).
template <class Graph>
Frontier sample_layer(const Graph& graph, std::span<const std::int64_t> seeds, std::int64_t fanout,
                      const SampleKey& key, const SamplerSpec& sampler, EdgeIds edge_ids) {
  if constexpr (requires { graph.sample_neighbors(seeds, fanout, key, sampler, edge_ids); })
    return graph.sample_neighbors(seeds, fanout, key, sampler, edge_ids);
  else
    return graph.sample_neighbors(seeds, fanout, key, sampler);
}

/// The sampler of layer `layer` (input layer first) under `o`.
inline const SamplerSpec& layer_sampler(const LoaderOptions& o, std::int32_t layer) {
  return o.layer_samplers.empty() ? o.sampler : o.layer_samplers[static_cast<std::size_t>(layer)];
}

/// Where one batch's time went, in seconds, and what it fetched from other machines.
struct BatchTimings {
  double sample_s = 0;  ///< sampling the blocks (and, for edges, find_edges and negatives)
  double fetch_s = 0;   ///< pulling features and labels
  double wait_s = 0;    ///< the consumer blocked in next() for it (0 when it was ready)
  /// What its fetch pulled from other machines, and what the row cache served of them.
  RemoteTraffic traffic{};
};

/// Rows of one node type's typed data for some of a batch's input nodes.
struct TypedRows {
  std::int32_t ntype = 0;
  std::vector<std::int64_t> positions;  ///< indices into the batch's input_nodes
  std::vector<float> rows;              ///< positions.size() x cols, row-major
  std::int64_t cols = 0;
};

/// The seed order of epoch `epoch` for trainer `rank`: `ids` as given without `shuffle`,
/// else a Fisher-Yates shuffle drawn from the stream of SampleKey{seed, epoch, rank,
/// batch = -1} (a key no sampling call uses), so every run, thread count and process
/// gets the same order for the same (seed, epoch, rank).
inline std::vector<std::int64_t> epoch_order(std::span<const std::int64_t> ids, bool shuffle,
                                             std::uint64_t seed, std::int64_t epoch,
                                             std::int64_t rank) {
  std::vector<std::int64_t> order(ids.begin(), ids.end());
  if (!shuffle) return order;
  SampleRng rng(hash_key(SampleKey{.seed = seed, .epoch = epoch, .rank = rank, .batch = -1}), -1);
  for (std::size_t i = order.size(); i > 1; --i)
    std::swap(order[i - 1], order[static_cast<std::size_t>(rng.below(i))]);
  return order;
}

namespace detail {

/// Validates the options every loader shares; `who` names the loader in messages.
inline void check_loader_options(const LoaderOptions& o, const std::string& who) {
  for (const auto& l : o.layer_samplers)
    if (l.name.empty())
      throw InvalidArgument(who + ": a layer sampler without a name; expected a sampler's spec");
  if (o.batch_size < 1)
    throw InvalidArgument(who + ": batch_size " + std::to_string(o.batch_size) + "; expected >= 1");
  if (o.prefetch_depth < 1)
    throw InvalidArgument(who + ": prefetch_depth " + std::to_string(o.prefetch_depth) +
                          "; expected >= 1");
  check_nice(o.prefetch_nice, who + ": prefetch_nice");
}

/// Throws InvalidArgument unless `o.layer_samplers` is empty or has one per layer.
inline void check_layer_samplers(const LoaderOptions& o, std::size_t layers,
                                 const std::string& who) {
  if (!o.layer_samplers.empty() && o.layer_samplers.size() != layers)
    throw InvalidArgument(who + ": " + std::to_string(o.layer_samplers.size()) +
                          " layer samplers for " + std::to_string(layers) +
                          " layers; expected one per layer");
}

/// Throws InvalidArgument for an empty seed set, IdOutOfRange for one outside [0, hi).
inline void check_seed_ids(std::span<const std::int64_t> ids, std::int64_t hi,
                           const std::string& who, const std::string& what) {
  if (ids.empty())
    throw InvalidArgument(who + ": the training set is empty; expected at least one " + what);
  for (const std::int64_t v : ids)
    if (v < 0 || v >= hi) throw IdOutOfRange(who + " " + what, v, 0, hi);
}

}  // namespace detail

}  // namespace distgraph
