// What the data loaders and the training recipes require of a graph type.
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <string>

#include "distgraph/partition/concepts.hpp"
#include "distgraph/sampling/frontier.hpp"
#include "distgraph/sampling/rng.hpp"
#include "distgraph/sampling/sampler_spec.hpp"

namespace distgraph {

/// A graph NodeDataLoader can batch (docs/GUIDE.md, "Data loaders"): sizes, node data as
/// tensors with `pull(ids)` and `num_cols()`, and keyed neighbour sampling by SamplerSpec.
/// Every BasicDistGraph models it; a user's wrapper must provide these members.
template <class G>
concept LoaderGraph = std::copy_constructible<G> &&
    requires(const G& g, std::span<const std::int64_t> ids, std::int64_t fanout,
             const SampleKey& key, const SamplerSpec& spec, const std::string& name) {
  typename G::template tensor_type<float>;
  typename G::template tensor_type<std::int64_t>;
  { g.num_nodes() } -> std::convertible_to<std::int64_t>;
  { g.template ndata<float>(name) } -> std::same_as<typename G::template tensor_type<float>>;
  {
    g.template ndata<std::int64_t>(name)
    } -> std::same_as<typename G::template tensor_type<std::int64_t>>;
  { g.template ndata<float>(name).num_cols() } -> std::convertible_to<std::int64_t>;
  g.template ndata<float>(name).pull(ids);
  { g.sample_neighbors(ids, fanout, key, spec) } -> std::same_as<Frontier>;
};

/// A graph EdgeDataLoader can batch: a LoaderGraph with edge count and find_edges.
template <class G>
concept EdgeLoaderGraph = LoaderGraph<G> &&
    requires(const G& g, std::span<const std::int64_t> ids) {
  { g.num_edges() } -> std::convertible_to<std::int64_t>;
  g.find_edges(ids).src;
  g.find_edges(ids).dst;
};

/// A graph the training recipes (train_node_classification, train_link_prediction) run on:
/// an EdgeLoaderGraph with its partition book (node_split), in-degrees (balanced splits)
/// and the client behind it (barriers, collective tensors, embeddings).
template <class G>
concept TrainingGraph = EdgeLoaderGraph<G> &&
    requires(const G& g, std::span<const std::int64_t> ids) {
  requires PartitionBook<std::remove_cvref_t<decltype(g.book())>>;
  g.in_degrees(ids);
  g.client().layout();
  g.client_ptr();
};

}  // namespace distgraph
