// custom_book: a partition book defined only here, used by the servers and trainers of a
// job. CountingBook wraps the book the partition's files describe and counts the IDs it
// routes, so a program can see how much routing its access pattern costs. Runs as
// `custom_book PART_CONFIG` standalone, or under
// `distgraph launch --server-program custom_book ... -- custom_book PART_CONFIG`; rank 0
// prints a checksum of every node's features (the same in both modes) and the lookups.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <numeric>
#include <vector>

#include "distgraph/distributed/node_split.hpp"
#include "distgraph/runtime/initialize.hpp"

namespace {

/// A PartitionBook that forwards to the partition's own book and counts the node IDs
/// routed through node_partition (copies share the counter). What a distributed run needs
/// beyond the PartitionBook concept: `from_config`, so servers and trainers build it from
/// the partition config, and a `policy_name` for their start-up check.
class CountingBook {
 public:
  using policy_category = distgraph::partition_book_tag;
  static constexpr std::string_view policy_name = "counting";

  explicit CountingBook(distgraph::AnyPartitionBook inner)
      : inner_(std::move(inner)), routed_(std::make_shared<std::atomic<std::int64_t>>(0)) {}
  static CountingBook from_config(const distgraph::PartitionConfig& c) {
    return CountingBook(distgraph::AnyPartitionBook::from_config(c));
  }
  std::int64_t routed() const { return routed_->load(); }

  void node_partition(std::span<const std::int64_t> ids, std::span<std::int32_t> out) const {
    routed_->fetch_add(static_cast<std::int64_t>(ids.size()), std::memory_order_relaxed);
    inner_.node_partition(ids, out);
  }
  // Everything else forwards unchanged.
  std::int32_t num_partitions() const { return inner_.num_partitions(); }
  std::int64_t num_nodes() const { return inner_.num_nodes(); }
  std::int64_t num_edges() const { return inner_.num_edges(); }
  std::int64_t num_nodes(distgraph::NodeType t) const { return inner_.num_nodes(t); }
  std::int64_t num_edges(distgraph::EdgeType t) const { return inner_.num_edges(t); }
  std::int32_t num_node_types() const { return inner_.num_node_types(); }
  std::int32_t num_edge_types() const { return inner_.num_edge_types(); }
  const std::vector<std::string>& node_type_names() const { return inner_.node_type_names(); }
  const std::vector<std::string>& edge_type_names() const { return inner_.edge_type_names(); }
  std::int64_t num_owned_nodes(distgraph::PartId p) const { return inner_.num_owned_nodes(p); }
  std::int64_t num_owned_edges(distgraph::PartId p) const { return inner_.num_owned_edges(p); }
  std::int64_t num_owned_nodes(distgraph::PartId p, distgraph::NodeType t) const {
    return inner_.num_owned_nodes(p, t);
  }
  std::int64_t num_owned_edges(distgraph::PartId p, distgraph::EdgeType t) const {
    return inner_.num_owned_edges(p, t);
  }
  std::vector<std::int64_t> owned_nodes(distgraph::PartId p) const { return inner_.owned_nodes(p); }
  std::vector<std::int64_t> owned_edges(distgraph::PartId p) const { return inner_.owned_edges(p); }
  std::vector<std::int64_t> owned_nodes(distgraph::PartId p, distgraph::NodeType t) const {
    return inner_.owned_nodes(p, t);
  }
  std::vector<std::int64_t> owned_edges(distgraph::PartId p, distgraph::EdgeType t) const {
    return inner_.owned_edges(p, t);
  }
  void edge_partition(std::span<const std::int64_t> ids, std::span<std::int32_t> out) const {
    inner_.edge_partition(ids, out);
  }
  void node_to_local(std::span<const std::int64_t> ids, std::span<std::int64_t> out) const {
    inner_.node_to_local(ids, out);
  }
  void edge_to_local(std::span<const std::int64_t> ids, std::span<std::int64_t> out) const {
    inner_.edge_to_local(ids, out);
  }
  void node_to_global(distgraph::PartId p, std::span<const std::int64_t> ids,
                      std::span<std::int64_t> out) const {
    inner_.node_to_global(p, ids, out);
  }
  void edge_to_global(distgraph::PartId p, std::span<const std::int64_t> ids,
                      std::span<std::int64_t> out) const {
    inner_.edge_to_global(p, ids, out);
  }
  void node_to_per_type(std::span<const std::int64_t> ids, std::span<std::int32_t> types,
                        std::span<std::int64_t> out) const {
    inner_.node_to_per_type(ids, types, out);
  }
  void edge_to_per_type(std::span<const std::int64_t> ids, std::span<std::int32_t> types,
                        std::span<std::int64_t> out) const {
    inner_.edge_to_per_type(ids, types, out);
  }
  void per_type_to_node(distgraph::NodeType t, std::span<const std::int64_t> ids,
                        std::span<std::int64_t> out) const {
    inner_.per_type_to_node(t, ids, out);
  }
  void per_type_to_edge(distgraph::EdgeType t, std::span<const std::int64_t> ids,
                        std::span<std::int64_t> out) const {
    inner_.per_type_to_edge(t, ids, out);
  }

 private:
  distgraph::AnyPartitionBook inner_;
  std::shared_ptr<std::atomic<std::int64_t>> routed_;
};
static_assert(distgraph::LoadablePartitionBook<CountingBook>);

struct CountingPolicies : distgraph::DefaultPolicies {
  using book_type = CountingBook;
};

}  // namespace

int main(int argc, char** argv) try {
  distgraph::InitOptions opts;
  if (argc > 1) opts.part_config = argv[1];
  auto ctx = distgraph::initialize<CountingPolicies>(opts);
  if (ctx.is_server()) return 0;

  auto g = ctx.graph();
  std::vector<std::int64_t> all(static_cast<std::size_t>(g.num_nodes()));
  std::iota(all.begin(), all.end(), 0);
  const auto mine = distgraph::node_split(
      std::span<const std::int64_t>(all), g.book(),
      {.rank = ctx.rank(), .num_trainers = ctx.world_size(), .force_even = false});
  const std::int64_t before = g.book().routed();
  const auto feat = g.ndata<float>("feat");
  const auto rows = feat.pull(mine);
  const std::int64_t routed = g.book().routed() - before;
  // Integer arithmetic: exact whatever order the shares are summed in. Keyed by the
  // input's node IDs, so relabeled and non-relabeled partitions of one dataset agree.
  const auto orig = g.orig_node_ids(mine);
  std::int64_t local = 0;
  const auto cols = static_cast<std::size_t>(feat.num_cols());
  for (std::size_t i = 0; i < mine.size(); ++i)
    for (std::size_t c = 0; c < cols; ++c)
      local += std::llround(rows[i * cols + c] * 1e4) * (orig[i] % 97 + 1);
  auto total = g.create_ndata<std::int64_t>("checksum", 1);
  const std::vector<std::int64_t> row0{0};
  total.push_add(row0, std::vector<std::int64_t>{local});
  ctx.barrier("checksum");
  if (routed != static_cast<std::int64_t>(mine.size())) {
    std::fprintf(stderr, "custom_book: %lld IDs routed for a pull of %zu\n",
                 static_cast<long long>(routed), mine.size());
    return 1;
  }
  if (ctx.rank() == 0) {
    std::printf("trainers %d, book %s, routed %lld, checksum %lld\n", ctx.world_size(),
                std::string(CountingBook::policy_name).c_str(), static_cast<long long>(routed),
                static_cast<long long>(total.pull(row0)[0]));
    std::fflush(stdout);
  }
  ctx.barrier("checksum-read");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "custom_book: %s\n", e.what());
  return 1;
}
