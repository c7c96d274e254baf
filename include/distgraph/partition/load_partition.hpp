// load_partition: map one partition's files, validate them against the config, and
// build the partition book every trainer and server shares.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/core/tensor.hpp"
#include "distgraph/graph/csr.hpp"
#include "distgraph/io/npy.hpp"
#include "distgraph/partition/any_partition_book.hpp"
#include "distgraph/partition/basic_partition_book.hpp"
#include "distgraph/partition/partition_config.hpp"
#include "distgraph/partition/range_partition_book.hpp"
#include "distgraph/partition/typed_data.hpp"

namespace distgraph {

/// One partition as stored: its local graph, ID maps, masks and the rows it owns.
/// Arrays are memory-mapped, not copied (copy-on-write: writing them never changes files).
struct Partition {
  PartitionConfig config;
  std::int64_t part_id = 0;
  /// Local CSC: row = local destination, `indices` = local sources, `edge_ids` = global
  /// edge IDs (the same buffer as `eid`). Owned nodes come first (local IDs
  /// [0, num_inner_nodes)), then halo nodes.
  Csr graph{};
  Buffer<std::int64_t> nid{};       ///< global node ID of each local node
  Buffer<std::int64_t> orig_nid{};  ///< input (pre-relabeling) node ID of each local node
  Buffer<std::int64_t> eid{};       ///< global edge ID of each local edge
  Buffer<std::int64_t> orig_eid{};  ///< input edge ID of each local edge
  Buffer<bool> inner_node{}, inner_edge{};
  std::int64_t num_inner_nodes = 0, num_inner_edges = 0;
  /// Rows of the nodes this partition owns, in local order; edge rows in global-ID order.
  std::map<std::string, HostTensor> node_feats{}, edge_feats{};
  AnyPartitionBook book;
};

namespace detail {

inline void check_ids_in(const Buffer<std::int64_t>& ids, std::int64_t hi,
                         const std::filesystem::path& path) {
  for (std::int64_t x : ids)
    if (x < 0 || x >= hi) throw IdOutOfRange(path.string(), x, 0, hi);
}

inline HostTensor read_feature(const std::filesystem::path& path, const FeatureSpec& spec,
                               std::int64_t rows) {
  NpyArray a = read_npy(path);
  // NumPy writes bfloat16 words as plain uint16 (a file made outside distgraph carries no
  // note): the config says what they are.
  if (a.header.dtype == DType::uint16 && spec.dtype == dtype_name(DType::bfloat16))
    a.header.dtype = DType::bfloat16;
  if (std::string(dtype_name(a.header.dtype)) != spec.dtype)
    throw PartitionError(path.string() + ": dtype " + std::string(dtype_name(a.header.dtype)) +
                         "; config says " + spec.dtype);
  std::vector<std::int64_t> expect = spec.shape;
  if (expect.empty()) expect = {rows};
  expect[0] = rows;
  if (a.header.shape != expect) {
    auto str = [](const std::vector<std::int64_t>& s) {
      std::string r = "(";
      for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
      return r + ")";
    };
    throw PartitionError(path.string() + ": shape " + str(a.header.shape) + "; expected " +
                         str(expect));
  }
  HostTensor t;
  t.dtype = a.header.dtype;
  t.shape = a.header.shape;
  t.bytes = a.bytes;
  return t;
}

}  // namespace detail

/// Builds the partition book a config describes (RangePartitionBook after relabeling,
/// BasicPartitionBook from node_map.npy/edge_map.npy otherwise). Throws PartitionError
/// or FormatError naming the file at fault.
inline AnyPartitionBook load_partition_book(const PartitionConfig& c) {
  return AnyPartitionBook::from_config(c);
}

/// Loads partition `part_id` of the config at `config_path`: maps its arrays, checks every
/// length, dtype and ID range against the config and the book, and returns it. Throws
/// IoError (missing files), FormatError (malformed files), PartitionError (files that
/// disagree with the config) or IdOutOfRange, each naming the file.
inline Partition load_partition(const std::filesystem::path& config_path, std::int64_t part_id) {
  PartitionConfig config = read_partition_config(config_path);
  if (part_id < 0 || part_id >= config.num_parts)
    throw IdOutOfRange(config_path.string() + ": partition id", part_id, 0, config.num_parts);
  AnyPartitionBook book = load_partition_book(config);
  Partition part{.config = std::move(config), .part_id = part_id, .book = std::move(book)};
  const PartitionConfig& c = part.config;
  const auto& paths = c.parts[static_cast<std::size_t>(part_id)];
  const auto gdir = c.resolve(paths.part_graph);
  using detail::read_part_array;
  auto indptr = read_part_array<std::int64_t>(gdir / "indptr.npy", -1);
  if (indptr.empty() || indptr[0] != 0)
    throw PartitionError((gdir / "indptr.npy").string() + ": must start with 0");
  const auto num_local = static_cast<std::int64_t>(indptr.size()) - 1;
  for (std::size_t i = 1; i < indptr.size(); ++i)
    if (indptr[i] < indptr[i - 1])
      throw PartitionError((gdir / "indptr.npy").string() + ": decreases at row " +
                           std::to_string(i - 1) + "; expected non-decreasing offsets");
  const std::int64_t num_local_edges = indptr[indptr.size() - 1];
  auto indices = read_part_array<std::int64_t>(gdir / "indices.npy", num_local_edges);
  part.eid = read_part_array<std::int64_t>(gdir / "eid.npy", num_local_edges);
  part.orig_eid = read_part_array<std::int64_t>(gdir / "orig_eid.npy", num_local_edges);
  part.nid = read_part_array<std::int64_t>(gdir / "nid.npy", num_local);
  part.orig_nid = read_part_array<std::int64_t>(gdir / "orig_nid.npy", num_local);
  part.inner_node = read_part_array<bool>(gdir / "inner_node.npy", num_local);
  part.inner_edge = read_part_array<bool>(gdir / "inner_edge.npy", num_local_edges);
  detail::check_ids_in(indices, num_local, gdir / "indices.npy");
  detail::check_ids_in(part.nid, c.num_nodes, gdir / "nid.npy");
  detail::check_ids_in(part.orig_nid, c.num_nodes, gdir / "orig_nid.npy");
  detail::check_ids_in(part.eid, c.num_edges, gdir / "eid.npy");
  detail::check_ids_in(part.orig_eid, c.num_edges, gdir / "orig_eid.npy");

  part.num_inner_nodes = std::count(part.inner_node.begin(), part.inner_node.end(), true);
  part.num_inner_edges = std::count(part.inner_edge.begin(), part.inner_edge.end(), true);
  if (!std::is_partitioned(part.inner_node.begin(), part.inner_node.end(),
                           [](bool b) { return b; }))
    throw PartitionError((gdir / "inner_node.npy").string() + ": owned nodes must come first");
  const auto p = PartId(static_cast<std::int32_t>(part_id));
  const AnyPartitionBook& b = part.book;
  if (b.num_owned_nodes(p) != part.num_inner_nodes)
    throw PartitionError(
        (gdir / "inner_node.npy").string() + ": " + std::to_string(part.num_inner_nodes) +
        " owned nodes; the partition book says " + std::to_string(b.num_owned_nodes(p)));
  if (b.num_owned_edges(p) != part.num_inner_edges)
    throw PartitionError(
        (gdir / "inner_edge.npy").string() + ": " + std::to_string(part.num_inner_edges) +
        " owned edges; the partition book says " + std::to_string(b.num_owned_edges(p)));
  const auto owned = b.owned_nodes(p);
  if (!std::equal(owned.begin(), owned.end(), part.nid.begin()))
    throw PartitionError((gdir / "nid.npy").string() +
                         ": owned nodes differ from the partition book's");
  if (!c.counts.empty()) {
    const auto& k = c.counts[static_cast<std::size_t>(part_id)];
    if (k.inner_nodes != part.num_inner_nodes || k.inner_edges != part.num_inner_edges ||
        k.inner_nodes + k.halo_nodes != num_local || k.local_edges != num_local_edges)
      throw PartitionError(gdir.string() + ": node/edge counts differ from the config's counts");
  }
  part.graph.num_rows = num_local;
  part.graph.num_cols = num_local;
  part.graph.indptr = std::move(indptr);
  part.graph.indices = std::move(indices);
  part.graph.edge_ids = part.eid;
  // Typed data ("<type>/<name>") has a row per owned node (edge) of its type.
  for (const auto& spec : c.node_feats) {
    const std::int32_t t = typed_data_type(spec.name, b.node_type_names());
    part.node_feats[spec.name] = detail::read_feature(
        c.resolve(paths.node_feats) / (spec.name + ".npy"), spec,
        t < 0 ? part.num_inner_nodes : b.num_owned_nodes(p, NodeType(t)));
  }
  for (const auto& spec : c.edge_feats) {
    const std::int32_t t = typed_data_type(spec.name, b.edge_type_names());
    part.edge_feats[spec.name] = detail::read_feature(
        c.resolve(paths.edge_feats) / (spec.name + ".npy"), spec,
        t < 0 ? part.num_inner_edges : b.num_owned_edges(p, EdgeType(t)));
  }
  return part;
}

/// Book model B for loaded partition `p`: the partition's own book when B is
/// AnyPartitionBook or the model it holds, else built from the config (load_book<B>).
template <LoadablePartitionBook B>
B partition_book(const Partition& p) {
  if constexpr (std::same_as<B, AnyPartitionBook>) {
    return p.book;
  } else {
    if constexpr (std::same_as<B, RangePartitionBook> || std::same_as<B, BasicPartitionBook>)
      if (const B* held = p.book.template get_if<B>()) return *held;
    return load_book<B>(p.config);
  }
}

}  // namespace distgraph
