// ID types: global IDs are int64_t; small strong types for easily swapped scalars.
#pragma once

#include <compare>
#include <cstdint>

namespace distgraph {

/// Node and edge IDs, global or local, are plain int64_t in bulk spans.
using NodeId = std::int64_t;
using EdgeId = std::int64_t;

namespace detail {
template <class Tag>
struct StrongIndex {
  std::int32_t value = 0;
  constexpr StrongIndex() = default;
  constexpr explicit StrongIndex(std::int32_t v) : value(v) {}
  constexpr explicit operator std::int32_t() const { return value; }
  constexpr auto operator<=>(const StrongIndex&) const = default;
};
}  // namespace detail

/// Index of a partition in [0, num_parts).
using PartId = detail::StrongIndex<struct PartIdTag>;
/// Index of a node type in a graph's type map.
using NodeType = detail::StrongIndex<struct NodeTypeTag>;
/// Index of a canonical edge type in a graph's type map.
using EdgeType = detail::StrongIndex<struct EdgeTypeTag>;

}  // namespace distgraph
