// AnyPartitionBook: the book a partition's files call for, chosen at run time; and
// load_book<B>, which builds any book model from a partition config.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/io/npy.hpp"
#include "distgraph/partition/basic_partition_book.hpp"
#include "distgraph/partition/concepts.hpp"
#include "distgraph/partition/partition_config.hpp"
#include "distgraph/partition/range_partition_book.hpp"

namespace distgraph {

/// Either built-in book, as a partition's config calls for (ranges after relabeling, a
/// per-ID map without), behind one PartitionBook model: the run-time choice of book, as
/// AnyTransport is for transports. Every call is one std::visit over a batch, so the
/// dispatch costs nothing per ID. Copies share the tables; const calls are thread-safe.
class AnyPartitionBook {
 public:
  using policy_category = partition_book_tag;
  using variant_type = std::variant<RangePartitionBook, BasicPartitionBook>;

  AnyPartitionBook(RangePartitionBook b) : book_(std::move(b)) {}  // NOLINT: implicit on purpose
  AnyPartitionBook(BasicPartitionBook b) : book_(std::move(b)) {}  // NOLINT

  /// The model held, or nullptr when it is the other one.
  template <class B>
  const B* get_if() const noexcept {
    return std::get_if<B>(&book_);
  }
  /// Calls `f` with the model held.
  template <class F>
  decltype(auto) visit(F&& f) const {
    return std::visit(std::forward<F>(f), book_);
  }
  /// "range" or "basic": what the partition's files describe.
  std::string kind_name() const { return book_.index() == 0 ? "range" : "basic"; }

  std::int32_t num_partitions() const {
    return visit([](const auto& b) { return b.num_partitions(); });
  }
  std::int64_t num_nodes() const {
    return visit([](const auto& b) { return b.num_nodes(); });
  }
  std::int64_t num_edges() const {
    return visit([](const auto& b) { return b.num_edges(); });
  }
  std::int64_t num_nodes(NodeType t) const {
    return visit([&](const auto& b) { return b.num_nodes(t); });
  }
  std::int64_t num_edges(EdgeType t) const {
    return visit([&](const auto& b) { return b.num_edges(t); });
  }
  std::int32_t num_node_types() const {
    return visit([](const auto& b) { return b.num_node_types(); });
  }
  std::int32_t num_edge_types() const {
    return visit([](const auto& b) { return b.num_edge_types(); });
  }
  const std::vector<std::string>& node_type_names() const {
    return visit(
        [](const auto& b) -> const std::vector<std::string>& { return b.node_type_names(); });
  }
  const std::vector<std::string>& edge_type_names() const {
    return visit(
        [](const auto& b) -> const std::vector<std::string>& { return b.edge_type_names(); });
  }
  std::int64_t num_owned_nodes(PartId p) const {
    return visit([&](const auto& b) { return b.num_owned_nodes(p); });
  }
  std::int64_t num_owned_edges(PartId p) const {
    return visit([&](const auto& b) { return b.num_owned_edges(p); });
  }
  std::int64_t num_owned_nodes(PartId p, NodeType t) const {
    return visit([&](const auto& b) { return b.num_owned_nodes(p, t); });
  }
  std::int64_t num_owned_edges(PartId p, EdgeType t) const {
    return visit([&](const auto& b) { return b.num_owned_edges(p, t); });
  }
  std::vector<std::int64_t> owned_nodes(PartId p) const {
    return visit([&](const auto& b) { return b.owned_nodes(p); });
  }
  std::vector<std::int64_t> owned_edges(PartId p) const {
    return visit([&](const auto& b) { return b.owned_edges(p); });
  }
  std::vector<std::int64_t> owned_nodes(PartId p, NodeType t) const {
    return visit([&](const auto& b) { return b.owned_nodes(p, t); });
  }
  std::vector<std::int64_t> owned_edges(PartId p, EdgeType t) const {
    return visit([&](const auto& b) { return b.owned_edges(p, t); });
  }
  void node_partition(std::span<const std::int64_t> ids, std::span<std::int32_t> out) const {
    visit([&](const auto& b) { b.node_partition(ids, out); });
  }
  void edge_partition(std::span<const std::int64_t> ids, std::span<std::int32_t> out) const {
    visit([&](const auto& b) { b.edge_partition(ids, out); });
  }
  void node_to_local(std::span<const std::int64_t> ids, std::span<std::int64_t> out) const {
    visit([&](const auto& b) { b.node_to_local(ids, out); });
  }
  void edge_to_local(std::span<const std::int64_t> ids, std::span<std::int64_t> out) const {
    visit([&](const auto& b) { b.edge_to_local(ids, out); });
  }
  void node_to_global(PartId p, std::span<const std::int64_t> ids,
                      std::span<std::int64_t> out) const {
    visit([&](const auto& b) { b.node_to_global(p, ids, out); });
  }
  void edge_to_global(PartId p, std::span<const std::int64_t> ids,
                      std::span<std::int64_t> out) const {
    visit([&](const auto& b) { b.edge_to_global(p, ids, out); });
  }
  void node_to_per_type(std::span<const std::int64_t> ids, std::span<std::int32_t> types,
                        std::span<std::int64_t> out) const {
    visit([&](const auto& b) { b.node_to_per_type(ids, types, out); });
  }
  void edge_to_per_type(std::span<const std::int64_t> ids, std::span<std::int32_t> types,
                        std::span<std::int64_t> out) const {
    visit([&](const auto& b) { b.edge_to_per_type(ids, types, out); });
  }
  void per_type_to_node(NodeType t, std::span<const std::int64_t> ids,
                        std::span<std::int64_t> out) const {
    visit([&](const auto& b) { b.per_type_to_node(t, ids, out); });
  }
  void per_type_to_edge(EdgeType t, std::span<const std::int64_t> ids,
                        std::span<std::int64_t> out) const {
    visit([&](const auto& b) { b.per_type_to_edge(t, ids, out); });
  }

  /// The book partition files at config `c` describe. Throws PartitionError or
  /// FormatError naming the file at fault.
  static AnyPartitionBook from_config(const PartitionConfig& c);

 private:
  variant_type book_;
};

static_assert(PartitionBook<AnyPartitionBook>);

namespace detail {

/// A partition file's 1-D array, checked to hold `expected_len` entries (-1: any).
template <class T>
Buffer<T> read_part_array(const std::filesystem::path& path, std::int64_t expected_len) {
  NpyArray a = read_npy(path);
  if (a.header.shape.size() != 1)
    throw PartitionError(path.string() + ": rank " + std::to_string(a.header.shape.size()) +
                         "; expected a 1-D array");
  if (expected_len >= 0 && a.header.shape[0] != expected_len)
    throw PartitionError(path.string() + ": " + std::to_string(a.header.shape[0]) +
                         " entries; expected " + std::to_string(expected_len));
  return a.template as<T>();
}

/// Per-ID owners of every node (edge) under the config's ranges: what a BasicPartitionBook
/// needs to serve a relabeled partition.
inline Buffer<std::int32_t> owners_from_ranges(
    const std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>>& ranges,
    std::int64_t total) {
  std::vector<std::int32_t> owner(static_cast<std::size_t>(total), 0);
  for (const auto& type_ranges : ranges)
    for (std::size_t p = 0; p < type_ranges.size(); ++p)
      for (auto v = type_ranges[p].first; v < type_ranges[p].second && v < total; ++v)
        owner[static_cast<std::size_t>(v)] = static_cast<std::int32_t>(p);
  return Buffer<std::int32_t>(std::move(owner));
}

/// The type of each global ID of one kind: from the relabeled ranges ([type][part]), else
/// from the per-type counts an unrelabeled typed partition records (input IDs are
/// type-major). Empty for a single type (BasicBookTypes' convention). Throws
/// PartitionError naming the config when an unrelabeled typed partition lacks the counts.
inline Buffer<std::int32_t> types_of_ids(
    const PartitionConfig& c, const std::vector<std::string>& names,
    const std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>>& ranges,
    std::int64_t total, const char* kind) {
  if (names.size() < 2) return {};
  std::vector<std::int32_t> type(static_cast<std::size_t>(total), 0);
  if (c.relabeled) {
    for (std::size_t t = 0; t < ranges.size(); ++t)
      for (const auto& [b, e] : ranges[t])
        for (auto v = b; v < e && v < total; ++v)
          type[static_cast<std::size_t>(v)] = static_cast<std::int32_t>(t);
    return Buffer<std::int32_t>(std::move(type));
  }
  const auto counts =
      c.extra.value("type_counts", nlohmann::json::object()).value(kind, nlohmann::json());
  if (!counts.is_array() || counts.size() != names.size())
    throw PartitionError(c.path.string() + ": a typed partition without relabeling needs "
                         "distgraph.type_counts." + kind + " (one count per type)");
  std::int64_t at = 0;
  for (std::size_t t = 0; t < counts.size(); ++t) {
    const auto n = counts[t].get<std::int64_t>();
    if (n < 0 || at + n > total)
      throw PartitionError(c.path.string() + ": distgraph.type_counts." + kind +
                           " does not add up to the graph's count");
    std::fill(type.begin() + at, type.begin() + at + n, static_cast<std::int32_t>(t));
    at += n;
  }
  if (at != total)
    throw PartitionError(c.path.string() + ": distgraph.type_counts." + kind + " sums to " +
                         std::to_string(at) + "; the graph has " + std::to_string(total));
  return Buffer<std::int32_t>(std::move(type));
}

/// The types of a config's IDs as a BasicPartitionBook takes them.
inline BasicBookTypes book_types(const PartitionConfig& c) {
  BasicBookTypes t;
  if (c.ntypes.size() > 1) {
    t.ntypes = c.ntypes;
    t.node_types = types_of_ids(c, c.ntypes, c.node_ranges, c.num_nodes, "nodes");
  }
  if (c.etypes.size() > 1) {
    t.etypes = c.etypes;
    t.edge_types = types_of_ids(c, c.etypes, c.edge_ranges, c.num_edges, "edges");
  }
  return t;
}

}  // namespace detail

/// How a book model is built from a partition config, for servers and trainers alike.
/// Specialised for the built-in books; a user's book provides
/// `static B from_config(const PartitionConfig&)` instead.
template <class B>
struct BookLoader {
  static B load(const PartitionConfig& c) { return B::from_config(c); }
};

template <>
struct BookLoader<RangePartitionBook> {
  static RangePartitionBook load(const PartitionConfig& c) {
    if (!c.relabeled)
      throw PartitionError(c.path.string() +
                           ": not relabeled (made with --no-relabel), so it has no ID ranges for "
                           "a RangePartitionBook; use BasicPartitionBook or AnyPartitionBook "
                           "(the default composition's book)");
    // ranges[type][part] -> counts[part][type]; the layout must be partition-major then
    // type, which from_ranges checks.
    return RangePartitionBook::from_ranges(c.ntypes, c.node_ranges, c.etypes, c.edge_ranges);
  }
};

template <>
struct BookLoader<BasicPartitionBook> {
  static BasicPartitionBook load(const PartitionConfig& c) {
    const auto parts = static_cast<std::int32_t>(c.num_parts);
    if (c.relabeled)
      return BasicPartitionBook(parts, detail::owners_from_ranges(c.node_ranges, c.num_nodes),
                                detail::owners_from_ranges(c.edge_ranges, c.num_edges),
                                detail::book_types(c));
    auto owners = [&](const std::string& file, std::int64_t n) {
      const auto path = c.resolve(file);
      auto map = detail::read_part_array<std::int32_t>(path, n);
      for (auto p : map)
        if (p < 0 || p >= c.num_parts) throw IdOutOfRange(path.string(), p, 0, c.num_parts);
      return map;
    };
    return BasicPartitionBook(parts, owners(c.node_map_file, c.num_nodes),
                              owners(c.edge_map_file, c.num_edges), detail::book_types(c));
  }
};

template <>
struct BookLoader<AnyPartitionBook> {
  static AnyPartitionBook load(const PartitionConfig& c) {
    if (c.relabeled) return BookLoader<RangePartitionBook>::load(c);
    return BookLoader<BasicPartitionBook>::load(c);
  }
};

inline AnyPartitionBook AnyPartitionBook::from_config(const PartitionConfig& c) {
  return BookLoader<AnyPartitionBook>::load(c);
}

/// A book a distributed run can use: a PartitionBook that servers and trainers can each
/// build from the partition config (BookLoader<B>, i.e. the built-ins or a static
/// `B::from_config`).
template <class B>
concept LoadablePartitionBook = PartitionBook<B> && requires(const PartitionConfig& c) {
  { BookLoader<B>::load(c) } -> std::same_as<B>;
};

/// Builds book model B for the partition at config `c` (see BookLoader).
template <LoadablePartitionBook B>
B load_book(const PartitionConfig& c) {
  return BookLoader<B>::load(c);
}

/// A short name of book `b`'s kind for messages and server metadata: its kind_name() when
/// it has one, else its static `policy_name`, else "custom".
template <class B>
std::string book_kind_name(const B& b) {
  if constexpr (requires { b.kind_name(); })
    return std::string(b.kind_name());
  else if constexpr (requires { B::policy_name; })
    return std::string(B::policy_name);
  else
    return "custom";
}

/// A fingerprint of how `b` assigns IDs: sizes plus the owners of up to 4096 evenly spaced
/// node and edge IDs. Trainers compare it with each server's, so a trainer and servers
/// built with books that disagree are refused at start-up instead of misrouting rows.
template <PartitionBook B>
std::uint64_t book_fingerprint(const B& b) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&](std::uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  mix(static_cast<std::uint64_t>(b.num_partitions()));
  mix(static_cast<std::uint64_t>(b.num_nodes()));
  mix(static_cast<std::uint64_t>(b.num_edges()));
  auto sample = [&](std::int64_t n, bool nodes) {
    if (n <= 0) return;
    const std::int64_t k = std::min<std::int64_t>(n, 4096);
    std::vector<std::int64_t> ids(static_cast<std::size_t>(k));
    for (std::int64_t i = 0; i < k; ++i) ids[static_cast<std::size_t>(i)] = i * n / k;
    std::vector<std::int32_t> owner(ids.size());
    if (nodes)
      b.node_partition(ids, owner);
    else
      b.edge_partition(ids, owner);
    for (auto o : owner) mix(static_cast<std::uint64_t>(o));
  };
  sample(b.num_nodes(), true);
  sample(b.num_edges(), false);
  return h;
}

}  // namespace distgraph
