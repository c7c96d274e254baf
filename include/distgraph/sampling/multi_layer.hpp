// Multi-layer block sampling: MiniBatch, sample_blocks and MultiLayerNeighborSampler.
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/core/trace.hpp"
#include "distgraph/sampling/block.hpp"
#include "distgraph/sampling/concepts.hpp"
#include "distgraph/sampling/frontier.hpp"
#include "distgraph/sampling/local_graph_view.hpp"
#include "distgraph/sampling/rng.hpp"
#include "distgraph/sampling/sample_local.hpp"
#include "distgraph/sampling/uniform_sampler.hpp"

namespace distgraph {

/// The blocks of one mini-batch, input layer first (DGL's `input_nodes, output_nodes,
/// blocks`): `blocks[0].src_nodes == input_nodes`, `blocks.back().dst_nodes() ==
/// output_nodes`, and block l's destinations are block l+1's sources.
struct MiniBatch {
  std::vector<std::int64_t> input_nodes;   ///< global IDs whose features the model reads
  std::vector<std::int64_t> output_nodes;  ///< the seeds, in their given order
  std::vector<Block> blocks;
};

/// Throws InvalidArgument unless `fanouts` is non-empty and each is -1 or >= 0.
inline void check_fanouts(std::span<const std::int64_t> fanouts) {
  if (fanouts.empty()) throw InvalidArgument("fanouts: empty; expected one per layer");
  for (std::size_t l = 0; l < fanouts.size(); ++l)
    check_fanout(fanouts[l], "fanouts[" + std::to_string(l) + "]");
}

/// What sample_blocks calls per layer: `fn(seeds, fanout, layer)` returning a Frontier.
template <class F>
concept LayerSampleFn =
    std::invocable<F&, std::span<const std::int64_t>, std::int64_t, std::int32_t> &&
    std::convertible_to<
        std::invoke_result_t<F&, std::span<const std::int64_t>, std::int64_t, std::int32_t>,
        Frontier>;

/// Samples one block per layer, from the output layer down to the input layer, by calling
/// `sample_fn(global_seeds, fanout, layer) -> Frontier` with `layer` counted from the input
/// layer (0) as `fanouts` is listed: `{10, 25}` samples 25 neighbours of each seed for
/// layer 1, then 10 for each node of that block for layer 0 (DGL's order). The callable
/// is where the routing goes: sample_neighbors_local on a whole graph, or requests to the
/// servers that own the seeds. Each frontier's destinations must be among the seeds it
/// was given. `arrange(block)`, where given, may renumber each block's sources that are not
/// destinations (group_sources) before they become the next layer's seeds. Throws
/// InvalidArgument for bad fanouts or repeated seeds, and whatever sample_fn, to_block or
/// arrange throws. Blocks until every layer is sampled.
template <class SampleFn, class ArrangeFn>
requires LayerSampleFn<SampleFn> && std::invocable<ArrangeFn&, Block&> MiniBatch
sample_blocks(std::span<const std::int64_t> seeds, std::span<const std::int64_t> fanouts,
              SampleFn&& sample_fn, ArrangeFn&& arrange) {
  check_fanouts(fanouts);
  MiniBatch mb;
  mb.output_nodes.assign(seeds.begin(), seeds.end());
  mb.blocks.resize(fanouts.size());
  std::vector<std::int64_t> frontier_nodes = mb.output_nodes;
  for (std::size_t l = fanouts.size(); l-- > 0;) {
    trace::Span span("layer", "sample");
    span.arg("layer", static_cast<std::int64_t>(l))
        .arg("seeds", static_cast<std::int64_t>(frontier_nodes.size()));
    const Frontier f = sample_fn(std::span<const std::int64_t>(frontier_nodes), fanouts[l],
                                 static_cast<std::int32_t>(l));
    trace::Span compact("to_block", "sample");
    mb.blocks[l] = to_block(f, frontier_nodes);
    arrange(mb.blocks[l]);
    frontier_nodes = mb.blocks[l].src_nodes;
  }
  mb.input_nodes = std::move(frontier_nodes);
  return mb;
}

/// sample_blocks with every block's sources in to_block's order.
template <LayerSampleFn SampleFn>
MiniBatch sample_blocks(std::span<const std::int64_t> seeds, std::span<const std::int64_t> fanouts,
                        SampleFn&& sample_fn) {
  return sample_blocks(seeds, fanouts, std::forward<SampleFn>(sample_fn), [](Block&) {});
}

/// DGL's `MultiLayerNeighborSampler`: a fanout per layer (input layer first) and a sampler
/// policy applied at every layer. `sample_blocks(g, seeds, key)` samples a whole graph;
/// distributed code reads `fanouts()`, `sampler()` and `options()` to answer each layer
/// through its own routing with `key.at_layer(layer)`. Copies are cheap when the sampler's
/// are; const calls are thread-safe.
template <Sampler S = UniformSampler>
class MultiLayerNeighborSampler {
 public:
  using sampler_type = S;

  /// Throws InvalidArgument for empty fanouts or a fanout below -1.
  explicit MultiLayerNeighborSampler(std::vector<std::int64_t> fanouts, S sampler = S{},
                                     SampleOptions opts = {})
      : fanouts_(std::move(fanouts)), sampler_(std::move(sampler)), opts_(opts) {
    check_fanouts(fanouts_);
  }

  const std::vector<std::int64_t>& fanouts() const noexcept { return fanouts_; }
  const S& sampler() const noexcept { return sampler_; }
  const SampleOptions& options() const noexcept { return opts_; }
  std::size_t num_layers() const noexcept { return fanouts_.size(); }

  /// Samples the blocks of `seeds` (global IDs) from `g`, whose local IDs must be the
  /// global IDs (a whole graph: `node_ids` empty), layer l with `key.at_layer(l)`.
  /// Throws InvalidArgument for a view with a node map (sample a partition through
  /// sample_blocks and a routing callable instead), an out-edge view or repeated seeds,
  /// and what
  /// sample_neighbors_local throws (IdOutOfRange for a seed outside the graph).
  MiniBatch sample_blocks(const LocalGraphView& g, std::span<const std::int64_t> seeds,
                          const SampleKey& key) const {
    if (!g.node_ids.empty())
      throw InvalidArgument(
          "MultiLayerNeighborSampler::sample_blocks: the view maps local to global IDs; "
          "expected a whole-graph view whose local IDs are global IDs");
    if (g.dir != EdgeDir::in)
      throw InvalidArgument(
          "MultiLayerNeighborSampler::sample_blocks: the view holds out-edges; expected "
          "in-edges (blocks carry messages from sampled sources into the seeds)");
    return distgraph::sample_blocks(
        seeds, fanouts_,
        [&](std::span<const std::int64_t> layer_seeds, std::int64_t fanout, std::int32_t layer) {
          return sample_neighbors_local(g, layer_seeds, fanout, key.at_layer(layer), sampler_,
                                        opts_);
        });
  }

 private:
  std::vector<std::int64_t> fanouts_;
  S sampler_;
  SampleOptions opts_;
};

}  // namespace distgraph
