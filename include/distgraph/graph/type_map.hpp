// TypeMap: node and canonical edge types, each owning a contiguous range of homogeneous IDs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/core/ids.hpp"

namespace distgraph {

/// A relation `(src_type, edge_type, dst_type)`, as DGL names edge types.
struct CanonicalEdgeType {
  std::string src_type, edge_type, dst_type;
  friend bool operator==(const CanonicalEdgeType&, const CanonicalEdgeType&) = default;
};

/// Half-open range of homogeneous IDs `[begin, end)`.
struct IdRange {
  std::int64_t begin = 0, end = 0;
  std::int64_t size() const noexcept { return end - begin; }
  friend bool operator==(const IdRange&, const IdRange&) = default;
};

namespace detail {

/// Names plus an offsets array (size T + 1): type t owns `[offsets[t], offsets[t + 1])`.
/// Shared by node and edge types so both convert IDs with the same code.
class TypeRanges {
 public:
  TypeRanges() : offsets_{0} {}
  TypeRanges(std::vector<std::string> names, std::span<const std::int64_t> counts,
             std::string_view what)
      : names_(std::move(names)), offsets_{0} {
    if (names_.size() != counts.size())
      throw ShapeError(std::string(what), std::to_string(names_.size()) + " type names but " +
                                              std::to_string(counts.size()) +
                                              " counts; expected equal lengths");
    if (names_.empty())
      throw InvalidArgument(std::string(what) + ": no types; expected at least one");
    offsets_.reserve(counts.size() + 1);
    for (std::size_t t = 0; t < counts.size(); ++t) {
      if (counts[t] < 0)
        throw InvalidArgument(std::string(what) + " '" + names_[t] + "': count " +
                              std::to_string(counts[t]) + "; expected >= 0");
      offsets_.push_back(offsets_.back() + counts[t]);
    }
  }

  std::int32_t size() const noexcept { return static_cast<std::int32_t>(names_.size()); }
  std::int64_t total() const noexcept { return offsets_.back(); }
  const std::vector<std::string>& names() const noexcept { return names_; }
  const std::vector<std::int64_t>& offsets() const noexcept { return offsets_; }
  IdRange range(std::int32_t t) const noexcept {
    return {offsets_[static_cast<std::size_t>(t)], offsets_[static_cast<std::size_t>(t) + 1]};
  }

  void check_type(std::int32_t t, std::string_view what) const {
    if (t < 0 || t >= size()) throw IdOutOfRange(std::string(what), t, 0, size());
  }

  void to_homogeneous(std::int32_t t, std::span<const std::int64_t> type_wise,
                      std::span<std::int64_t> out, const std::string& subject) const {
    if (out.size() != type_wise.size())
      throw ShapeError(subject, "output holds " + std::to_string(out.size()) + " ids for " +
                                    std::to_string(type_wise.size()) +
                                    " inputs; expected equal lengths");
    const IdRange r = range(t);
    for (std::int64_t id : type_wise)
      if (id < 0 || id >= r.size()) throw IdOutOfRange(subject, id, 0, r.size());
    for (std::size_t i = 0; i < type_wise.size(); ++i) out[i] = type_wise[i] + r.begin;
  }

  void to_typed(std::span<const std::int64_t> homo, std::span<std::int32_t> types_out,
                std::span<std::int64_t> type_wise_out, const std::string& subject) const {
    if (types_out.size() != homo.size() || type_wise_out.size() != homo.size())
      throw ShapeError(subject, "outputs hold " + std::to_string(types_out.size()) + " and " +
                                    std::to_string(type_wise_out.size()) + " ids for " +
                                    std::to_string(homo.size()) +
                                    " inputs; expected equal lengths");
    const std::int64_t n = total();
    for (std::int64_t id : homo)
      if (id < 0 || id >= n) throw IdOutOfRange(subject, id, 0, n);
    // Few types: a branch-free scan would also do, but binary search keeps many-type
    // graphs (e.g. OGB-MAG-style schemas) at O(log T) per ID.
    for (std::size_t i = 0; i < homo.size(); ++i) {
      const auto it = std::upper_bound(offsets_.begin() + 1, offsets_.end(), homo[i]);
      const auto t = static_cast<std::int32_t>(it - (offsets_.begin() + 1));
      types_out[i] = t;
      type_wise_out[i] = homo[i] - offsets_[static_cast<std::size_t>(t)];
    }
  }

 private:
  std::vector<std::string> names_;
  std::vector<std::int64_t> offsets_;
};

}  // namespace detail

/// Heterogeneous graph metadata: node types and canonical edge types, each owning a
/// contiguous range of homogeneous IDs in declaration order (type 0 first). A homogeneous
/// graph is the one-type case (`homogeneous()`); nothing else treats it specially.
/// Immutable after construction; all const members are thread-safe.
class TypeMap {
 public:
  /// A map with no nodes or edges of one default type each.
  TypeMap() : TypeMap(homogeneous(0, 0)) {}

  /// Node type `node_types[t]` owns `node_counts[t]` IDs, edge type `edge_types[e]` owns
  /// `edge_counts[e]`. Throws ShapeError on mismatched lengths, InvalidArgument on empty
  /// type lists, negative counts, duplicate names, or an edge type naming an unknown
  /// node type.
  TypeMap(std::vector<std::string> node_types, std::vector<std::int64_t> node_counts,
          std::vector<CanonicalEdgeType> edge_types, std::vector<std::int64_t> edge_counts)
      : nodes_(std::move(node_types), node_counts, "node types"),
        edge_types_(std::move(edge_types)) {
    std::vector<std::string> enames;
    enames.reserve(edge_types_.size());
    for (const auto& e : edge_types_) enames.push_back(edge_type_label(e));
    edges_ = detail::TypeRanges(std::move(enames), edge_counts, "edge types");
    for (std::size_t i = 0; i < nodes_.names().size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (nodes_.names()[i] == nodes_.names()[j])
          throw InvalidArgument("node type '" + nodes_.names()[i] +
                                "': declared twice; expected unique names");
    for (std::size_t i = 0; i < edge_types_.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j)
        if (edge_types_[i] == edge_types_[j])
          throw InvalidArgument("edge type " + edges_.names()[i] +
                                ": declared twice; expected unique canonical types");
      node_type(edge_types_[i].src_type);
      node_type(edge_types_[i].dst_type);
    }
  }

  /// One node type "_N" with `num_nodes` IDs and one edge type ("_N", "_E", "_N") with
  /// `num_edges` IDs (DGL's default names).
  static TypeMap homogeneous(std::int64_t num_nodes, std::int64_t num_edges) {
    return TypeMap({"_N"}, {num_nodes}, {{"_N", "_E", "_N"}}, {num_edges});
  }

  std::int32_t num_node_types() const noexcept { return nodes_.size(); }
  std::int32_t num_edge_types() const noexcept { return edges_.size(); }
  /// Total nodes over all types.
  std::int64_t num_nodes() const noexcept { return nodes_.total(); }
  /// Total edges over all types.
  std::int64_t num_edges() const noexcept { return edges_.total(); }
  bool is_homogeneous() const noexcept { return num_node_types() == 1 && num_edge_types() == 1; }

  /// Nodes of type `t`. Throws IdOutOfRange for an unknown index.
  std::int64_t num_nodes(NodeType t) const { return node_range(t).size(); }
  std::int64_t num_edges(EdgeType t) const { return edge_range(t).size(); }
  /// Homogeneous IDs owned by node type `t`. Throws IdOutOfRange for an unknown index.
  IdRange node_range(NodeType t) const {
    nodes_.check_type(t.value, "node type index");
    return nodes_.range(t.value);
  }
  IdRange edge_range(EdgeType t) const {
    edges_.check_type(t.value, "edge type index");
    return edges_.range(t.value);
  }
  /// Start offsets of every node type plus the total at the end (size T + 1).
  const std::vector<std::int64_t>& node_offsets() const noexcept { return nodes_.offsets(); }
  const std::vector<std::int64_t>& edge_offsets() const noexcept { return edges_.offsets(); }

  const std::vector<std::string>& node_type_names() const noexcept { return nodes_.names(); }
  const std::vector<CanonicalEdgeType>& edge_types() const noexcept { return edge_types_; }
  const std::string& node_type_name(NodeType t) const {
    nodes_.check_type(t.value, "node type index");
    return nodes_.names()[static_cast<std::size_t>(t.value)];
  }
  const CanonicalEdgeType& edge_type(EdgeType t) const {
    edges_.check_type(t.value, "edge type index");
    return edge_types_[static_cast<std::size_t>(t.value)];
  }

  /// Index of node type `name`. Throws InvalidArgument naming it when unknown.
  NodeType node_type(std::string_view name) const {
    const auto& n = nodes_.names();
    const auto it = std::find(n.begin(), n.end(), name);
    if (it == n.end())
      throw InvalidArgument("node type '" + std::string(name) + "': unknown; expected one of " +
                            join(n));
    return NodeType(static_cast<std::int32_t>(it - n.begin()));
  }
  /// Index of the canonical edge type. Throws InvalidArgument naming it when unknown.
  EdgeType edge_type(const CanonicalEdgeType& c) const {
    const auto it = std::find(edge_types_.begin(), edge_types_.end(), c);
    if (it == edge_types_.end())
      throw InvalidArgument("edge type " + edge_type_label(c) + ": unknown; expected one of " +
                            join(edges_.names()));
    return EdgeType(static_cast<std::int32_t>(it - edge_types_.begin()));
  }
  /// Index of the edge type whose relation name is `name` (DGL's short form). Throws
  /// InvalidArgument when no type or more than one type has that name.
  EdgeType edge_type(std::string_view name) const {
    std::int32_t found = -1;
    for (std::size_t i = 0; i < edge_types_.size(); ++i) {
      if (edge_types_[i].edge_type != name) continue;
      if (found >= 0)
        throw InvalidArgument("edge type '" + std::string(name) +
                              "': ambiguous; expected a canonical (src, edge, dst) type");
      found = static_cast<std::int32_t>(i);
    }
    if (found < 0)
      throw InvalidArgument("edge type '" + std::string(name) + "': unknown; expected one of " +
                            join(edges_.names()));
    return EdgeType(found);
  }

  /// Writes the homogeneous ID of each type-wise ID of node type `t` to `out` (same length).
  /// Throws IdOutOfRange naming the type, ShapeError on mismatched lengths; on a throw `out`
  /// is untouched.
  void to_homogeneous(NodeType t, std::span<const std::int64_t> type_wise_ids,
                      std::span<std::int64_t> out) const {
    nodes_.check_type(t.value, "node type index");
    nodes_.to_homogeneous(t.value, type_wise_ids, out, node_subject(t));
  }
  /// Splits homogeneous node IDs into type indices and type-wise IDs (binary search over
  /// the type offsets). Throws IdOutOfRange or ShapeError before writing anything.
  void to_typed(std::span<const std::int64_t> homo_ids, std::span<std::int32_t> types_out,
                std::span<std::int64_t> type_wise_out) const {
    nodes_.to_typed(homo_ids, types_out, type_wise_out, "homogeneous node ids");
  }
  /// Edge counterpart of `to_homogeneous`.
  void edge_to_homogeneous(EdgeType t, std::span<const std::int64_t> type_wise_ids,
                           std::span<std::int64_t> out) const {
    edges_.check_type(t.value, "edge type index");
    edges_.to_homogeneous(t.value, type_wise_ids, out, edge_subject(t));
  }
  /// Edge counterpart of `to_typed`.
  void edge_to_typed(std::span<const std::int64_t> homo_ids, std::span<std::int32_t> types_out,
                     std::span<std::int64_t> type_wise_out) const {
    edges_.to_typed(homo_ids, types_out, type_wise_out, "homogeneous edge ids");
  }

  /// Throws IdOutOfRange naming node type `t` unless every ID is in `[0, num_nodes(t))`.
  void validate_node_ids(NodeType t, std::span<const std::int64_t> type_wise_ids) const {
    const std::int64_t n = num_nodes(t);
    for (std::int64_t id : type_wise_ids)
      if (id < 0 || id >= n) throw IdOutOfRange(node_subject(t), id, 0, n);
  }
  /// Throws IdOutOfRange naming edge type `t` unless every ID is in `[0, num_edges(t))`.
  void validate_edge_ids(EdgeType t, std::span<const std::int64_t> type_wise_ids) const {
    const std::int64_t n = num_edges(t);
    for (std::int64_t id : type_wise_ids)
      if (id < 0 || id >= n) throw IdOutOfRange(edge_subject(t), id, 0, n);
  }

  /// "('user', 'follows', 'item')", the form error messages use.
  static std::string edge_type_label(const CanonicalEdgeType& c) {
    return "('" + c.src_type + "', '" + c.edge_type + "', '" + c.dst_type + "')";
  }

 private:
  std::string node_subject(NodeType t) const {
    return "node type '" + nodes_.names()[static_cast<std::size_t>(t.value)] + "'";
  }
  std::string edge_subject(EdgeType t) const {
    return "edge type " + edges_.names()[static_cast<std::size_t>(t.value)];
  }
  static std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  }

  detail::TypeRanges nodes_, edges_;
  std::vector<CanonicalEdgeType> edge_types_;
};

}  // namespace distgraph
