// SamplerSite: what a partition offers a sampler that is rebuilt where the graph lives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "distgraph/core/buffer.hpp"
#include "distgraph/core/dtype.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/sampling/local_graph_view.hpp"

namespace distgraph {

/// Rows of one node or edge tensor laid out by a site's positions: local node IDs (the
/// view's rows) for node data, the view's edge positions for edge data. Row-major,
/// `cols()` values per position. Copies share the values; concurrent reads are fine.
template <class T>
class SiteValues {
 public:
  SiteValues() = default;
  SiteValues(Buffer<T> values, std::int64_t cols) : values_(std::move(values)), cols_(cols) {}

  /// Positions (local nodes or edge positions).
  std::int64_t size() const noexcept {
    return cols_ == 0 ? 0 : static_cast<std::int64_t>(values_.size()) / cols_;
  }
  std::int64_t cols() const noexcept { return cols_; }
  /// The first value of position `pos` (the only one of a one-column tensor).
  const T& operator[](std::int64_t pos) const noexcept {
    return values_[static_cast<std::size_t>(pos * cols_)];
  }
  /// The `cols()` values of position `pos`.
  std::span<const T> row(std::int64_t pos) const noexcept {
    return values_.span().subspan(static_cast<std::size_t>(pos * cols_),
                                  static_cast<std::size_t>(cols_));
  }
  /// Every value, position-major.
  const Buffer<T>& values() const noexcept { return values_; }

 private:
  Buffer<T> values_;
  std::int64_t cols_ = 0;
};

/// Which rows a site tensor has: one per node, or one per edge.
enum class SiteData : std::uint8_t { node, edge };

/// The place a sampling request runs: a server's partition, or a trainer's co-located one.
/// A DistributedSampler's `at_site` reads what it needs from here; servers and trainers
/// implement it over the same partition, so a sampler built at either site picks the same
/// edges. Called once per request (not per seed), hence a virtual interface.
class SamplerSite {
 public:
  virtual ~SamplerSite() = default;
  /// The partition's in-edges: rows are its local nodes, positions index indices/edge_ids.
  virtual const LocalGraphView& view() const = 0;
  /// The partition this site holds.
  virtual std::int32_t part_id() const = 0;
  /// Float32 edge data `name` (the name given to set_edata / partitioned as edge feature;
  /// one value per edge) laid out by the view's edge positions, 0 for edges the partition
  /// holds but does not own. O(edges) per call: keep the result with cached(). Throws
  /// NotFound for an unknown tensor, DTypeError unless it is one float32 per edge.
  virtual Buffer<float> edge_values_by_position(const std::string& name) = 0;
  /// The edge type (EdgeType index under the partition book) of each of the view's edge
  /// positions; empty when the graph has a single edge type. Lives as long as the site.
  virtual std::span<const std::int32_t> edge_types_by_position() const = 0;
  /// Edge types of the graph (1 for a homogeneous graph).
  virtual std::int32_t num_edge_types() const = 0;
  /// The object cached under `key` at this site, made by `make` on first use (once, even
  /// with concurrent callers). For what a sampler derives from the partition, e.g. a
  /// weighted sampler's checked probabilities. Made again when edge data that `make` read
  /// through edge_values_by_position has been written since, at sites whose storage keeps
  /// write generations (VersionedStorage: every built-in storage), so a sampler never
  /// picks by probabilities older than the last completed push.
  virtual std::shared_ptr<const void> cached(
      const std::string& key, const std::function<std::shared_ptr<const void>()>& make) = 0;

  /// Node data `name` (as given to set_ndata / partitioned as a node feature; typed data as
  /// `<type>/<name>`) by local node ID, T being its dtype, any number of columns. Only the
  /// nodes the partition owns have rows here (local IDs [0, num_owned_nodes()), every seed
  /// a request brings); halo nodes read T{}: their rows live with their owners. O(nodes)
  /// per call: keep the result with cached(), which makes it again after a write to the
  /// tensor. Throws NotFound naming the tensor when absent, DTypeError naming it when T is
  /// not its dtype.
  template <class T>
  SiteValues<T> node_values(const std::string& name) {
    return read_values<T>(SiteData::node, name, view().num_rows());
  }
  /// Edge data `name` of any dtype T and width by the view's edge positions, as
  /// node_values is by local node: edges the partition holds but does not own read T{}.
  template <class T>
  SiteValues<T> edge_values(const std::string& name) {
    return read_values<T>(SiteData::edge, name, view().num_edges());
  }
  /// Local nodes the partition owns: they come first, local IDs [0, num_owned_nodes()).
  virtual std::int64_t num_owned_nodes() const { return view().num_rows(); }
  /// Degree of each row of view(): in-degrees at a partition's site, whose view is its
  /// CSC. Exact for owned nodes; a halo node counts only the in-edges the partition holds
  /// (none with one hop of halo). O(nodes) per call.
  Buffer<std::int64_t> in_degrees() const {
    const LocalGraphView& g = view();
    auto out = Buffer<std::int64_t>::zeros(static_cast<std::size_t>(g.num_rows()));
    for (std::int64_t v = 0; v < g.num_rows(); ++v) out[static_cast<std::size_t>(v)] = g.degree(v);
    return out;
  }
  /// The original (input, before relabeling) ID of each local node, the partition's
  /// orig_nid; empty where the site has none. Lives as long as the site.
  virtual std::span<const std::int64_t> orig_node_ids() const { return {}; }

 protected:
  /// Gives the values of `cols` columns at every position (view's rows or edge positions),
  /// zeroed, as bytes of the caller's dtype: where read_by_position writes.
  using Allocate = std::function<std::span<std::byte>(std::int64_t cols)>;
  /// Reads tensor `name` of `data`'s kind, laid out by position (see node_values), into
  /// `allocate(cols)`, once its dtype is checked. What a site with data implements. Throws
  /// NotFound (no such tensor) or DTypeError (its dtype is not `dtype`), each naming
  /// `name`. This default holds no data: NotFound.
  virtual void read_by_position(SiteData data, const std::string& name, DType dtype,
                                const Allocate& allocate) {
    (void)dtype;
    (void)allocate;
    throw NotFound(subject(data, name), "this sampler site holds no node or edge data");
  }
  /// How errors name tensor `name`: "node data 'x'" or "edge data 'x'".
  static std::string subject(SiteData data, const std::string& name) {
    return std::string(data == SiteData::node ? "node" : "edge") + " data '" + name + "'";
  }

 private:
  template <class T>
  SiteValues<T> read_values(SiteData data, const std::string& name, std::int64_t positions) {
    Buffer<T> values;
    std::int64_t width = 0;
    read_by_position(data, name, dtype_of<T>, [&](std::int64_t cols) {
      width = cols;
      values = Buffer<T>::zeros(static_cast<std::size_t>(positions * cols));
      return std::as_writable_bytes(values.span());
    });
    return SiteValues<T>(std::move(values), width);
  }
};

}  // namespace distgraph
