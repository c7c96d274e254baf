// LoaderFeatures: the float node feature a data loader pulls, one tensor or one per node type.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/dist/loader_options.hpp"

namespace distgraph::detail {

/// The tensors behind a batch's input features: node data `feature` over all nodes
/// (`untyped`), or on a typed graph whose feature is typed data "<ntype>/<feature>", one
/// tensor per node type that has it (`typed`, indexed by node type). Opened once when the
/// loader is made, then read-only: the prefetch threads share it.
template <class Graph>
struct LoaderFeatures {
  using tensor_type = typename Graph::template tensor_type<float>;
  std::optional<tensor_type> untyped;
  std::vector<std::optional<tensor_type>> typed;  ///< per node type; empty: untyped or none

  /// Opens `feature` of `graph` ("" = none): the untyped node data of that name, else the
  /// typed data of each node type. Throws NotFound when neither exists, DTypeError when
  /// it is not float32.
  static LoaderFeatures open(const Graph& graph, const std::string& feature) {
    LoaderFeatures f;
    if (feature.empty()) return f;
    try {
      f.untyped = graph.template ndata<float>(feature);
    } catch (const NotFound&) {
      // A typed graph keeps features per node type ("<ntype>/feat", widths differ);
      // types without them (featureless) are the model's to embed.
      if constexpr (requires { graph.nodes(std::string_view{}); }) {
        bool any = false;
        for (const auto& nt : graph.ntypes()) {
          auto& slot = f.typed.emplace_back();
          try {
            slot = graph.nodes(nt).template data<float>(feature);
            any = true;
          } catch (const NotFound&) {
          }
        }
        if (!any) throw;
      } else {
        throw;
      }
    }
    return f;
  }

  /// Pulls the rows of `nodes` into `out` (a NodeBatch or EdgeBatch): `features` and
  /// `feat_dim` when untyped; else `input_types` (each node's type) and `typed_features`
  /// (the rows of each node type among them that has the feature). Blocks on the pulls.
  template <class Batch>
  void pull(const Graph& graph, std::span<const std::int64_t> nodes, Batch& out) const {
    if (untyped) {
      out.feat_dim = untyped->num_cols();
      out.features.resize(nodes.size() * static_cast<std::size_t>(out.feat_dim));
      untyped->pull(nodes, out.features);
    }
    if (typed.empty()) return;
    if constexpr (requires { graph.node_types_of(nodes); }) {
      out.input_types = graph.node_types_of(nodes);
      std::vector<std::vector<std::int64_t>> by_type(typed.size());
      for (std::size_t i = 0; i < nodes.size(); ++i)
        by_type[static_cast<std::size_t>(out.input_types[i])].push_back(
            static_cast<std::int64_t>(i));
      for (std::size_t t = 0; t < by_type.size(); ++t) {
        if (by_type[t].empty() || !typed[t]) continue;
        TypedRows r;
        r.ntype = static_cast<std::int32_t>(t);
        r.cols = typed[t]->num_cols();
        std::vector<std::int64_t> ids(by_type[t].size());
        for (std::size_t i = 0; i < ids.size(); ++i)
          ids[i] = nodes[static_cast<std::size_t>(by_type[t][i])];
        r.rows.resize(ids.size() * static_cast<std::size_t>(r.cols));
        typed[t]->pull(ids, r.rows);
        r.positions = std::move(by_type[t]);
        out.typed_features.push_back(std::move(r));
      }
    }
  }
};

}  // namespace distgraph::detail
