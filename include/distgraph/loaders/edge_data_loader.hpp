// EdgeDataLoader: link-prediction mini-batches of seed edges, uniform negatives and blocks.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
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
#include "distgraph/sampling/frontier.hpp"
#include "distgraph/sampling/id_hash_map.hpp"
#include "distgraph/sampling/multi_layer.hpp"
#include "distgraph/sampling/rng.hpp"

namespace distgraph {

/// Which edges a batch keeps out of its sampled neighbourhood (DGL's `exclude`): a model
/// that sees the edge it must predict learns nothing.
enum class ExcludeEdges {
  none,              ///< sample from the whole graph
  self,              ///< drop the batch's seed edges
  self_and_reverse,  ///< and their reverses (EdgeLoaderOptions::reverse_eids)
};

/// What EdgeDataLoader adds to LoaderOptions.
struct EdgeLoaderOptions {
  std::int64_t num_negatives = 1;  ///< uniform negatives per positive edge, >= 0
  ExcludeEdges exclude = ExcludeEdges::none;
  /// For self_and_reverse: the reverse of each edge by global edge ID (num_edges entries,
  /// -1 for an edge without one), e.g. edge i + m/2 for edge i of a graph whose second
  /// half reverses the first.
  std::vector<std::int64_t> reverse_eids{};
  /// The edge type every seed edge has, canonical ("author:writes:paper") or a relation
  /// name unique in the graph ("writes"); "" = untyped. When set, a negative's destination
  /// is uniform over the nodes of that type's destination node type (DGL's per-etype
  /// Uniform): a pair the relation could hold, never an author scored as a paper. Needs a
  /// graph with type views (DistGraph).
  std::string edge_type{};
};

/// One link-prediction mini-batch. Endpoints are positions in `output_nodes`, the
/// destinations of the last block, so the model scores pairs of its output rows.
struct EdgeBatch {
  std::int64_t epoch = 0;
  std::int64_t index = 0;                  ///< batch number within the epoch
  std::vector<std::int64_t> eids;          ///< the positive (seed) edges, global IDs
  std::vector<std::int64_t> pos_src;       ///< one per seed edge
  std::vector<std::int64_t> pos_dst;       ///< one per seed edge
  std::vector<std::int64_t> neg_src;       ///< num_negatives per seed edge, edge-major
  std::vector<std::int64_t> neg_dst;       ///< likewise
  std::vector<std::int64_t> input_nodes;   ///< global IDs; blocks[0].src_nodes
  std::vector<std::int64_t> output_nodes;  ///< distinct endpoints, first appearance order
  std::vector<Block> blocks;               ///< input layer first
  std::vector<float> features;             ///< input_nodes.size() x feat_dim, row-major
  std::int64_t feat_dim = 0;               ///< 0 when the loader fetches no features
  /// Typed graphs whose feature is typed data ("<ntype>/<feature>"), as in NodeBatch: the
  /// node type of each input node, and per node type among them that has the feature, its
  /// rows. `features` stays empty then (widths differ per type).
  std::vector<std::int32_t> input_types;
  std::vector<TypedRows> typed_features;
  BatchTimings timings;
};

namespace detail {

/// What an EdgeDataLoader's batches are made from (read-only, shared with its threads).
template <class Graph>
struct EdgeLoaderState {
  Graph graph;
  std::vector<std::int64_t> ids, fanouts;  ///< ids: the seed edges
  LoaderOptions options;
  EdgeLoaderOptions edge_options;
  LoaderFeatures<Graph> feat;
  /// With edge_options.edge_type: the node type negatives are drawn from (its
  /// destination type) and its node count; "" = all nodes.
  std::string neg_ntype;
  std::int64_t neg_count = 0;
};

/// What a typed EdgeDataLoader needs beyond EdgeLoaderGraph: edge type names and
/// resolution, each edge's type, and node type views to draw negatives in.
template <class G>
concept TypedEdgeLoaderGraph = requires(const G& g, std::string_view name,
                                        std::span<const std::int64_t> ids) {
  { g.etypes()[0] } -> std::convertible_to<std::string>;
  g.edge_type(name).value;
  g.edge_types_of(ids);
  { g.nodes(name).count() } -> std::convertible_to<std::int64_t>;
  g.nodes(name).to_global(ids);
};

}  // namespace detail

/// DGL's (Dist)EdgeDataLoader with a uniform negative sampler, over any DistGraph. Each
/// epoch splits this trainer's seed edges, in epoch_order, into batches; batch b (key
/// SampleKey{seed, epoch, rank, b}) looks up the seed edges' endpoints (find_edges),
/// draws `num_negatives` corrupted pairs per edge (same source, a destination uniform over
/// all nodes, from the key's stream at layer -1 and the edge's position in the batch; a
/// negative may happen to be an edge, as with DGL's Uniform), takes the distinct endpoints
/// as output nodes, samples their blocks like NodeDataLoader (removing excluded edges from
/// every layer's frontier, so an excluded neighbour leaves its seed with fewer than
/// `fanout` edges) and pulls the input features. `options.label` is not used. Prefetch,
/// determinism, threads and errors as NodeDataLoader (see detail::LoaderBase). Not
/// thread-safe; movable.
///
/// On a typed graph, `edge_options.edge_type` picks one canonical edge type (DGL's
/// `{etype: eids}` with one etype): the seeds must all be of it, and each negative's
/// destination is drawn type-wise from the same stream, uniform over the edge type's
/// destination node type, then made a global ID. Blocks span every relation; a typed
/// feature arrives per node type, as in NodeBatch.
template <EdgeLoaderGraph Graph>
class EdgeDataLoader : public detail::LoaderBase<detail::EdgeLoaderState<Graph>, EdgeBatch> {
  using State = detail::EdgeLoaderState<Graph>;
  using Base = detail::LoaderBase<State, EdgeBatch>;

 public:
  using graph_type = Graph;

  /// Validates everything up front. `train_eids`: this trainer's seed edges (global IDs;
  /// e.g. from edge_split). Throws InvalidArgument for an empty seed set, batch_size or
  /// prefetch_depth < 1, bad fanouts, num_negatives < 0, reverse_eids of the wrong length
  /// or given without self_and_reverse, an unknown or ambiguous edge_type, a seed edge of
  /// another type, or an edge_type on a graph without types; IdOutOfRange for a seed edge
  /// outside the graph or a reverse ID outside [-1, num_edges); NotFound / DTypeError for
  /// the feature (untyped, else "<ntype>/<feature>" of at least one node type).
  EdgeDataLoader(Graph graph, std::span<const std::int64_t> train_eids,
                 std::vector<std::int64_t> fanouts, LoaderOptions options = {},
                 EdgeLoaderOptions edge_options = {})
      : Base(make_state(std::move(graph), train_eids, std::move(fanouts), std::move(options),
                        std::move(edge_options)),
             &make_batch, "EdgeDataLoader") {}

  const EdgeLoaderOptions& edge_options() const noexcept { return this->state().edge_options; }

 private:
  static std::shared_ptr<const State> make_state(Graph graph,
                                                 std::span<const std::int64_t> train_eids,
                                                 std::vector<std::int64_t> fanouts,
                                                 LoaderOptions options,
                                                 EdgeLoaderOptions edge_options) {
    const std::string who = "EdgeDataLoader";
    detail::check_loader_options(options, who);
    check_fanouts(fanouts);
    detail::check_layer_samplers(options, fanouts.size(), who);
    const std::int64_t m = graph.num_edges();
    detail::check_seed_ids(train_eids, m, who, "train edge");
    if (edge_options.num_negatives < 0)
      throw InvalidArgument(who + ": num_negatives " + std::to_string(edge_options.num_negatives) +
                            "; expected >= 0");
    const bool reverse = edge_options.exclude == ExcludeEdges::self_and_reverse;
    if (reverse && static_cast<std::int64_t>(edge_options.reverse_eids.size()) != m)
      throw InvalidArgument(who + ": reverse_eids has " +
                            std::to_string(edge_options.reverse_eids.size()) +
                            " entries; expected one per edge (" + std::to_string(m) + ")");
    if (!reverse && !edge_options.reverse_eids.empty())
      throw InvalidArgument(who +
                            ": reverse_eids given but exclude is not self_and_reverse; "
                            "expected them only to exclude reverse edges");
    for (const std::int64_t r : edge_options.reverse_eids)
      if (r < -1 || r >= m) throw IdOutOfRange(who + " reverse_eids entry", r, -1, m);
    if (edge_options.exclude != ExcludeEdges::none && options.edge_ids == EdgeIds::omitted)
      throw InvalidArgument(who +
                            ": edge_ids omitted while excluding edges; expected "
                            "EdgeIds::included (sampled edges are excluded by their IDs)");
    std::string neg_ntype;
    std::int64_t neg_count = 0;
    if (!edge_options.edge_type.empty()) {
      if constexpr (detail::TypedEdgeLoaderGraph<Graph>) {
        neg_ntype = check_edge_type(graph, train_eids, edge_options.edge_type, who);
        neg_count = graph.nodes(neg_ntype).count();
      } else {
        throw InvalidArgument(who + ": edge_type '" + edge_options.edge_type +
                              "' on a graph without types; expected a graph with etypes(), "
                              "edge_types_of and nodes(ntype) (a DistGraph)");
      }
    }
    auto feat = detail::LoaderFeatures<Graph>::open(graph, options.feature);
    return std::make_shared<const State>(State{std::move(graph),
                                               {train_eids.begin(), train_eids.end()},
                                               std::move(fanouts),
                                               std::move(options),
                                               std::move(edge_options),
                                               std::move(feat),
                                               std::move(neg_ntype),
                                               neg_count});
  }

  /// Resolves `etype` through the graph (its errors, prefixed with `who`), checks that
  /// every seed edge has that type, and returns the type's destination node type.
  static std::string check_edge_type(
      const Graph& graph, std::span<const std::int64_t> eids, const std::string& etype,
      const std::string& who) requires detail::TypedEdgeLoaderGraph<Graph> {
    std::int32_t t = 0;
    try {
      t = graph.edge_type(etype).value;
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(who + ": " + e.what());
    }
    const std::string canonical = graph.etypes()[static_cast<std::size_t>(t)];
    const auto types = graph.edge_types_of(eids);
    for (std::size_t i = 0; i < eids.size(); ++i)
      if (types[i] != t)
        throw InvalidArgument(who + ": train edge " + std::to_string(eids[i]) + " has edge type '" +
                              std::string(graph.etypes()[static_cast<std::size_t>(types[i])]) +
                              "'; expected '" + canonical + "' (edge_type '" + etype + "')");
    // Canonical names are "src:etype:dst" (DistGraph::edge_type).
    return canonical.substr(canonical.rfind(':') + 1);
  }

  static EdgeBatch make_batch(const State& s, std::span<const std::int64_t> seeds,
                              const SampleKey& key, detail::SpareBuffers& spares) {
    EdgeBatch out;
    out.eids.assign(seeds.begin(), seeds.end());
    Stopwatch clock;
    trace::Span sample_span("sample", "loader");
    sample_span.arg("batch", key.batch).arg("seeds", static_cast<std::int64_t>(seeds.size()));
    const auto ends = s.graph.find_edges(seeds);

    // Output nodes: distinct endpoints in order of first appearance (positive pairs, then
    // negative destinations); every endpoint becomes its position among them.
    const auto k = static_cast<std::size_t>(s.edge_options.num_negatives);
    detail::IdHashMap pos(seeds.size() * (2 + k));
    const auto position = [&](std::int64_t v) {
      const auto at = static_cast<std::int64_t>(out.output_nodes.size());
      const std::int64_t p = pos.insert(v, at);
      if (p == at) out.output_nodes.push_back(v);
      return p;
    };
    out.pos_src.resize(seeds.size());
    out.pos_dst.resize(seeds.size());
    for (std::size_t i = 0; i < seeds.size(); ++i) {
      out.pos_src[i] = position(ends.src[i]);
      out.pos_dst[i] = position(ends.dst[i]);
    }
    // Negative destinations: uniform over all nodes, or type-wise over the edge type's
    // destination type and then made global in one batch-shaped call.
    const bool typed = !s.neg_ntype.empty();
    const auto n = static_cast<std::uint64_t>(typed ? s.neg_count : s.graph.num_nodes());
    const std::uint64_t neg_hash = hash_key(key.at_layer(-1));
    std::vector<std::int64_t> drawn(seeds.size() * k);
    for (std::size_t i = 0; i < seeds.size(); ++i) {
      SampleRng rng(neg_hash, static_cast<std::int64_t>(i));
      for (std::size_t j = 0; j < k; ++j)
        drawn[i * k + j] = static_cast<std::int64_t>(rng.below(n));
    }
    if constexpr (detail::TypedEdgeLoaderGraph<Graph>)
      if (typed && !drawn.empty()) drawn = s.graph.nodes(s.neg_ntype).to_global(drawn);
    out.neg_src.resize(seeds.size() * k);
    out.neg_dst.resize(seeds.size() * k);
    for (std::size_t i = 0; i < seeds.size(); ++i)
      for (std::size_t j = 0; j < k; ++j) {
        out.neg_src[i * k + j] = out.pos_src[i];
        out.neg_dst[i * k + j] = position(drawn[i * k + j]);
      }

    // Excluded edge IDs, looked up per sampled edge of every layer.
    detail::IdHashMap excluded;
    const bool exclude = s.edge_options.exclude != ExcludeEdges::none;
    if (exclude) {
      excluded.reset(2 * seeds.size());
      for (const std::int64_t e : seeds) {
        excluded.insert(e, 1);
        if (s.edge_options.exclude == ExcludeEdges::self_and_reverse) {
          const std::int64_t r = s.edge_options.reverse_eids[static_cast<std::size_t>(e)];
          if (r >= 0) excluded.insert(r, 1);
        }
      }
    }
    MiniBatch mb = sample_blocks(
        out.output_nodes, s.fanouts,
        [&](std::span<const std::int64_t> layer_seeds, std::int64_t fanout, std::int32_t layer) {
          Frontier f = sample_layer(s.graph, layer_seeds, fanout, key.at_layer(layer),
                                    layer_sampler(s.options, layer), s.options.edge_ids);
          if (exclude) drop_edges(f, excluded);
          return f;
        },
        detail::group_by_owner(s.graph));
    sample_span.end();
    out.timings.sample_s = clock.seconds();
    clock.reset();
    trace::Span fetch_span("fetch", "loader");
    fetch_span.arg("batch", key.batch)
        .arg("rows", static_cast<std::int64_t>(mb.input_nodes.size()));
    {
      const TrafficScope traffic(out.timings.traffic);
      s.feat.pull(s.graph, mb.input_nodes, out, spares);
    }
    fetch_span.end();
    out.timings.fetch_s = clock.seconds();
    out.input_nodes = std::move(mb.input_nodes);
    out.blocks = std::move(mb.blocks);
    return out;
  }

  /// Removes the edges whose ID is in `excluded`, keeping the others in order.
  static void drop_edges(Frontier& f, const detail::IdHashMap& excluded) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < f.eid.size(); ++i) {
      if (excluded.find(f.eid[i]) != detail::IdHashMap::absent) continue;
      f.src[kept] = f.src[i];
      f.dst[kept] = f.dst[i];
      f.eid[kept] = f.eid[i];
      ++kept;
    }
    f.src.resize(kept);
    f.dst.resize(kept);
    f.eid.resize(kept);
  }
};

}  // namespace distgraph
