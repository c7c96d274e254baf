// Must not compile: KVClient is given a book that converts one ID at a time, so it is not a
// PartitionBook (every conversion takes a span). With DISTGRAPH_COMPILE_FAIL_FIXED it is one.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "distgraph/distributed/kv_client.hpp"
#include "distgraph/storage/in_memory_storage.hpp"
#include "distgraph/transport/in_process_transport.hpp"

namespace {

// Declarations are enough: the concept only asks whether the calls are well-formed.
struct PerIdBook {
  using policy_category = distgraph::partition_book_tag;
  using Ids = std::span<const std::int64_t>;
  using Out = std::span<std::int64_t>;
  using Parts = std::span<std::int32_t>;

  std::int32_t num_partitions() const;
  std::int64_t num_nodes() const;
  std::int64_t num_edges() const;
  std::int64_t num_nodes(distgraph::NodeType) const;
  std::int64_t num_edges(distgraph::EdgeType) const;
  std::int32_t num_node_types() const;
  std::int32_t num_edge_types() const;
  const std::vector<std::string>& node_type_names() const;
  const std::vector<std::string>& edge_type_names() const;
  std::int64_t num_owned_nodes(distgraph::PartId) const;
  std::int64_t num_owned_edges(distgraph::PartId) const;
  std::int64_t num_owned_nodes(distgraph::PartId, distgraph::NodeType) const;
  std::int64_t num_owned_edges(distgraph::PartId, distgraph::EdgeType) const;
  std::vector<std::int64_t> owned_nodes(distgraph::PartId) const;
  std::vector<std::int64_t> owned_edges(distgraph::PartId) const;
  std::vector<std::int64_t> owned_nodes(distgraph::PartId, distgraph::NodeType) const;
  std::vector<std::int64_t> owned_edges(distgraph::PartId, distgraph::EdgeType) const;
#ifdef DISTGRAPH_COMPILE_FAIL_FIXED
  void node_partition(Ids global_ids, Parts parts_out) const;
#else
  // The defect: one ID in, one partition out.
  std::int32_t node_partition(std::int64_t global_id) const;
#endif
  void edge_partition(Ids global_ids, Parts parts_out) const;
  void node_to_local(Ids global_ids, Out local_ids) const;
  void edge_to_local(Ids global_ids, Out local_ids) const;
  void node_to_global(distgraph::PartId, Ids local_ids, Out global_ids) const;
  void edge_to_global(distgraph::PartId, Ids local_ids, Out global_ids) const;
  void node_to_per_type(Ids global_ids, Parts types_out, Out per_type_ids) const;
  void edge_to_per_type(Ids global_ids, Parts types_out, Out per_type_ids) const;
  void per_type_to_node(distgraph::NodeType, Ids per_type_ids, Out global_ids) const;
  void per_type_to_edge(distgraph::EdgeType, Ids per_type_ids, Out global_ids) const;
};

}  // namespace

std::size_t client_size() {
  return sizeof(
      distgraph::KVClient<PerIdBook, distgraph::InProcessTransport, distgraph::InMemoryStorage>);
}
