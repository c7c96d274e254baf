// NodeDataLoader: mini-batches of seed nodes with their sampled blocks, features and labels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/core/timer.hpp"
#include "distgraph/core/trace.hpp"
#include "distgraph/distributed/graph_concepts.hpp"
#include "distgraph/loaders/detail/loader_base.hpp"
#include "distgraph/loaders/detail/source_grouping.hpp"
#include "distgraph/loaders/loader_features.hpp"
#include "distgraph/loaders/loader_options.hpp"
#include "distgraph/sampling/block.hpp"
#include "distgraph/sampling/multi_layer.hpp"
#include "distgraph/sampling/rng.hpp"

namespace distgraph {

/// One mini-batch of a NodeDataLoader (DGL's `input_nodes, output_nodes, blocks`, plus
/// what the model reads).
struct NodeBatch {
  std::int64_t epoch = 0;
  std::int64_t index = 0;                  ///< batch number within the epoch
  std::vector<std::int64_t> input_nodes;   ///< global IDs; blocks[0].src_nodes
  std::vector<std::int64_t> output_nodes;  ///< the seeds; blocks.back().dst_nodes()
  std::vector<Block> blocks;               ///< input layer first
  std::vector<float> features;             ///< input_nodes.size() x feat_dim, row-major
  std::int64_t feat_dim = 0;               ///< 0 when the loader fetches no features
  /// Typed graphs whose feature is typed data ("<ntype>/<feature>"): the node type of each
  /// input node, and per node type among them that has the feature, its rows. `features`
  /// stays empty then (widths differ per type).
  std::vector<std::int32_t> input_types;
  std::vector<TypedRows> typed_features;
  std::vector<std::int64_t> labels;  ///< one per output node; empty without labels
  BatchTimings timings;
};

namespace detail {

/// What a NodeDataLoader's batches are made from (read-only, shared with its threads).
template <class Graph>
struct NodeLoaderState {
  using label_tensor = typename Graph::template tensor_type<std::int64_t>;
  Graph graph;
  std::vector<std::int64_t> ids, fanouts;  ///< ids: the seed nodes
  LoaderOptions options;
  LoaderFeatures<Graph> feat;
  std::optional<label_tensor> label;
};

}  // namespace detail

/// DGL's (Dist)NodeDataLoader over a DistGraph (standalone or distributed: any
/// `DistGraph<Book, Transport, Storage>`). Each epoch splits this trainer's seed nodes, in
/// epoch_order, into batches; batch b samples one block per layer with
/// `graph.sample_neighbors(seeds, fanout, key.at_layer(layer), options.sampler)` under
/// `key = SampleKey{seed, epoch, rank, b}`, then pulls the input nodes' features and the
/// seeds' labels. Where the graph has a partition book, each block's sources that are not
/// destinations come grouped by the partition that owns them (group_sources), so that
/// each owner's rows land in runs of the batch. A batch therefore depends only on (graph,
/// seeds, fanouts, options.seed, rank, epoch, b): not on the thread count, the process or
/// where the rows live.
///
/// `begin_epoch(e)` + `next()`, or `for (NodeBatch& b : loader.epoch(e))` (see
/// detail::LoaderBase). With `num_prefetch_threads` > 0 batches are made in order on
/// background threads, at most `prefetch_depth` ahead of the consumer: sampling and
/// fetching overlap with training. Starting another epoch or destroying the loader stops
/// them (each finishes the batch in hand, bounded by the client's deadline). Not
/// thread-safe: one consumer per loader. Movable.
///
/// `Sampler` (optional) names the sampler in the type, as `NodeDataLoader<Graph,
/// UniformSampler>`: it must be in the graph's sampler set (checked at compile time) and
/// replaces the name in `options.sampler` (its parameters stay as given).
template <LoaderGraph Graph, class Sampler = void>
class NodeDataLoader : public detail::LoaderBase<detail::NodeLoaderState<Graph>, NodeBatch> {
  using State = detail::NodeLoaderState<Graph>;
  using Base = detail::LoaderBase<State, NodeBatch>;

 public:
  using graph_type = Graph;
  using sampler_type = Sampler;

  /// Validates everything up front. `train_ids`: this trainer's seed nodes (global IDs,
  /// distinct; e.g. from node_split). `fanouts`: one per layer, input layer first, as DGL
  /// lists them (`{10, 25}`: 25 neighbours of each seed, 10 of each of those), -1 = all.
  /// Throws InvalidArgument for an empty or repeated seed set, batch_size or
  /// prefetch_depth < 1, empty fanouts or one below -1; IdOutOfRange for a seed outside the
  /// graph; NotFound / DTypeError when the feature (float32) or label (int64) tensor is
  /// missing or of another type; ShapeError for a label tensor of more than one column.
  NodeDataLoader(Graph graph, std::span<const std::int64_t> train_ids,
                 std::vector<std::int64_t> fanouts, LoaderOptions options = {})
      : Base(make_state(std::move(graph), train_ids, std::move(fanouts), std::move(options)),
             &make_batch, "NodeDataLoader") {}

  /// The input nodes (blocks[0].src_nodes, global IDs) of batch `b` of epoch `epoch`, as
  /// next() would sample them, without fetching features or labels: what a row cache is
  /// planned from (pre-sampling). Throws as next() does, IdOutOfRange for a batch outside
  /// [0, num_batches()).
  std::vector<std::int64_t> sample_input_nodes(std::int64_t epoch, std::int64_t b) const {
    const State& s = this->state();
    if (b < 0 || b >= this->num_batches())
      throw IdOutOfRange("NodeDataLoader batch", b, 0, this->num_batches());
    const LoaderOptions& o = s.options;
    const auto order = epoch_order(s.ids, o.shuffle, o.seed, epoch, o.rank);
    const auto begin = static_cast<std::size_t>(b * o.batch_size);
    const auto end = std::min(order.size(), begin + static_cast<std::size_t>(o.batch_size));
    const SampleKey key{.seed = o.seed, .epoch = epoch, .rank = o.rank, .batch = b};
    return sample(s, std::span<const std::int64_t>(order).subspan(begin, end - begin), key)
        .input_nodes;
  }

 private:
  static std::shared_ptr<const State> make_state(Graph graph,
                                                 std::span<const std::int64_t> train_ids,
                                                 std::vector<std::int64_t> fanouts,
                                                 LoaderOptions options) {
    const std::string who = "NodeDataLoader";
    if constexpr (!std::is_void_v<Sampler>) {
      if constexpr (requires { Graph::sampler_set::names; })
        static_assert(Graph::sampler_set::contains(Sampler::wire_name),
                      "NodeDataLoader<Graph, Sampler>: the sampler is not in the graph's "
                      "composition (add it to its sampler_set)");
      options.sampler.name = std::string(Sampler::wire_name);
    }
    detail::check_loader_options(options, who);
    check_fanouts(fanouts);
    detail::check_seed_ids(train_ids, graph.num_nodes(), who, "train node");
    std::vector<std::int64_t> sorted(train_ids.begin(), train_ids.end());
    std::sort(sorted.begin(), sorted.end());
    if (const auto it = std::adjacent_find(sorted.begin(), sorted.end()); it != sorted.end())
      throw InvalidArgument(who + ": train node " + std::to_string(*it) +
                            " listed twice; expected distinct seeds (a block has one "
                            "destination per node)");
    auto feat = detail::LoaderFeatures<Graph>::open(graph, options.feature);
    std::optional<typename State::label_tensor> label;
    detail::check_layer_samplers(options, fanouts.size(), who);
    if (!options.label.empty()) {
      label = graph.template ndata<std::int64_t>(options.label);
      if (label->num_cols() != 1)
        throw ShapeError(who + " label '" + options.label + "'",
                         std::to_string(label->num_cols()) + " columns; expected 1");
    }
    return std::make_shared<const State>(State{std::move(graph),
                                               {train_ids.begin(), train_ids.end()},
                                               std::move(fanouts),
                                               std::move(options),
                                               std::move(feat),
                                               std::move(label)});
  }

  static MiniBatch sample(const State& s, std::span<const std::int64_t> seeds,
                          const SampleKey& key) {
    return sample_blocks(
        seeds, s.fanouts,
        [&](std::span<const std::int64_t> layer_seeds, std::int64_t fanout, std::int32_t layer) {
          return sample_layer(s.graph, layer_seeds, fanout, key.at_layer(layer),
                              layer_sampler(s.options, layer), s.options.edge_ids);
        },
        detail::group_by_owner(s.graph));
  }

  static NodeBatch make_batch(const State& s, std::span<const std::int64_t> seeds,
                              const SampleKey& key, detail::SpareBuffers& spares) {
    NodeBatch out;
    Stopwatch clock;
    trace::Span sample_span("sample", "loader");
    sample_span.arg("batch", key.batch).arg("seeds", static_cast<std::int64_t>(seeds.size()));
    MiniBatch mb = sample(s, seeds, key);
    sample_span.end();
    out.timings.sample_s = clock.seconds();
    clock.reset();
    trace::Span fetch_span("fetch", "loader");
    fetch_span.arg("batch", key.batch)
        .arg("rows", static_cast<std::int64_t>(mb.input_nodes.size()));
    {
      const TrafficScope traffic(out.timings.traffic);
      s.feat.pull(s.graph, mb.input_nodes, out, spares);
      if (s.label) out.labels = s.label->pull(mb.output_nodes);
    }
    fetch_span.end();
    out.timings.fetch_s = clock.seconds();
    out.input_nodes = std::move(mb.input_nodes);
    out.output_nodes = std::move(mb.output_nodes);
    out.blocks = std::move(mb.blocks);
    return out;
  }
};

}  // namespace distgraph
