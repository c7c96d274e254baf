// LoaderFeatures: the float node feature a data loader pulls, one tensor or one per node type.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/core/half.hpp"
#include "distgraph/loaders/loader_options.hpp"

namespace distgraph::detail {

/// Feature buffers of batches their consumer is done with (LoaderBase::recycle), for the
/// prefetch threads to pull later batches into. A buffer comes back at its old size, so
/// that resizing it for a batch of no more values than it held writes nothing (beyond
/// that, only the difference is filled): a fresh std::vector zero-fills every element
/// first, 6-8% of a prefetch thread's time in the R-MAT 18 epoch (PERFORMANCE.md), all of
/// it overwritten by the rows. At most `capacity` are kept. Thread-safe.
class SpareBuffers {
 public:
  explicit SpareBuffers(std::size_t capacity) : capacity_(capacity) {}

  /// A buffer for `n` values, stale ones in it: the kept buffer of least capacity that
  /// holds them, else a new one with an eighth to spare (batches vary in size by a few
  /// percent; growing a kept one instead would copy its stale values and double it).
  std::vector<float> take(std::size_t n) {
    std::vector<float> v;
    {
      std::lock_guard lock(mu_);
      auto best = kept_.end();
      for (auto it = kept_.begin(); it != kept_.end(); ++it)
        if (it->capacity() >= n && (best == kept_.end() || it->capacity() < best->capacity()))
          best = it;
      if (best != kept_.end()) {
        v = std::move(*best);
        kept_.erase(best);
        return v;
      }
    }
    v.reserve(n + n / 8);
    return v;
  }

  /// Keeps `v` unless it holds nothing or `capacity` are kept already.
  void give(std::vector<float>&& v) {
    if (v.capacity() == 0) return;
    std::lock_guard lock(mu_);
    if (kept_.size() < capacity_) kept_.push_back(std::move(v));
  }

  /// Frees every kept buffer.
  void clear() {
    std::lock_guard lock(mu_);
    kept_.clear();
  }

 private:
  std::mutex mu_;
  std::size_t capacity_;
  std::vector<std::vector<float>> kept_;
};

/// A graph whose data opens in its stored dtype (BasicDistGraph: raw_ndata and
/// TypeView::raw_data). A user's LoaderGraph without it has float32 features read as such.
template <class G>
concept RawDataGraph = requires(const G& g, const std::string& name) {
  typename G::raw_tensor_type;
  { g.raw_ndata(name) } -> std::same_as<typename G::raw_tensor_type>;
};

template <class Graph>
struct feature_tensor {
  using type = typename Graph::template tensor_type<float>;
};
template <RawDataGraph Graph>
struct feature_tensor<Graph> {
  using type = typename Graph::raw_tensor_type;
};
/// What a loader holds for a feature tensor: the raw tensor where the graph has one (any
/// of float32, float16, bfloat16), else its float32 tensor.
template <class Graph>
using feature_tensor_t = typename feature_tensor<Graph>::type;

/// Throws DTypeError naming feature `name` unless `t` holds float32, float16 or bfloat16.
template <class Tensor>
Tensor checked_feature(Tensor t, const std::string& name) {
  if constexpr (requires { t.row_bytes(); })
    require_feature_dtype("node data '" + name + "'", t.dtype());
  return t;
}

/// Node data `name` as a loader reads input features (see feature_tensor_t). Throws
/// NotFound, DTypeError when it is not float32, float16 or bfloat16.
template <class Graph>
feature_tensor_t<Graph> open_feature(const Graph& graph, const std::string& name) {
  if constexpr (RawDataGraph<Graph>)
    return checked_feature(graph.raw_ndata(name), name);
  else
    return graph.template ndata<float>(name);
}

/// Data `name` of one node type (a graph's TypeView), as open_feature.
template <class Graph, class TypeView>
feature_tensor_t<Graph> open_typed_feature(const TypeView& nodes, const std::string& name) {
  if constexpr (RawDataGraph<Graph>)
    return checked_feature(nodes.raw_data(name), nodes.name() + "/" + name);
  else
    return nodes.template data<float>(name);
}

/// Rows `ids` of feature `t` into `out` as float32 (resized to ids.size() * num_cols()).
/// 16-bit rows are pulled into a per-thread scratch buffer (prefetch threads share the
/// tensors) and widened into `out`: the conversion is the batch's one extra pass.
template <class Tensor>
void pull_float_rows(const Tensor& t, std::span<const std::int64_t> ids, std::vector<float>& out) {
  out.resize(ids.size() * static_cast<std::size_t>(t.num_cols()));
  if constexpr (requires { t.row_bytes(); }) {
    if (t.dtype() == DType::float32) {
      t.pull(ids, std::as_writable_bytes(std::span(out)));
      return;
    }
    thread_local std::vector<std::byte> scratch;
    scratch.resize(ids.size() * t.row_bytes());
    t.pull(ids, scratch);
    convert_to_float32(t.dtype(), scratch, out);
  } else {
    t.pull(ids, out);
  }
}

/// The tensors behind a batch's input features: node data `feature` over all nodes
/// (`untyped`), or on a typed graph whose feature is typed data "<ntype>/<feature>", one
/// tensor per node type that has it (`typed`, indexed by node type). Opened once when the
/// loader is made, then read-only: the prefetch threads share it. Features stored as
/// float16 or bfloat16 travel as such and reach the batch as float32.
template <class Graph>
struct LoaderFeatures {
  using tensor_type = feature_tensor_t<Graph>;
  std::optional<tensor_type> untyped;
  std::vector<std::optional<tensor_type>> typed;  ///< per node type; empty: untyped or none

  /// Opens `feature` of `graph` ("" = none): the untyped node data of that name, else the
  /// typed data of each node type. Throws NotFound when neither exists, DTypeError when
  /// it is not float32, float16 or bfloat16.
  static LoaderFeatures open(const Graph& graph, const std::string& feature) {
    LoaderFeatures f;
    if (feature.empty()) return f;
    try {
      f.untyped = open_feature(graph, feature);
    } catch (const NotFound&) {
      // A typed graph keeps features per node type ("<ntype>/feat", widths differ);
      // types without them (featureless) are the model's to embed.
      if constexpr (requires { graph.nodes(std::string_view{}); }) {
        bool any = false;
        for (const auto& nt : graph.ntypes()) {
          auto& slot = f.typed.emplace_back();
          try {
            slot = open_typed_feature<Graph>(graph.nodes(nt), feature);
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
  /// (the rows of each node type among them that has the feature). Untyped rows go into
  /// a buffer from `spares` when it has one. Blocks on the pulls.
  template <class Batch>
  void pull(const Graph& graph, std::span<const std::int64_t> nodes, Batch& out,
            SpareBuffers& spares) const {
    if (untyped) {
      out.feat_dim = untyped->num_cols();
      out.features = spares.take(nodes.size() * static_cast<std::size_t>(untyped->num_cols()));
      pull_float_rows(*untyped, nodes, out.features);
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
        pull_float_rows(*typed[t], ids, r.rows);
        r.positions = std::move(by_type[t]);
        out.typed_features.push_back(std::move(r));
      }
    }
  }
};

}  // namespace distgraph::detail
