// Must not compile: KVClient is given a storage with every member but no opt-in tag, so it
// is not a Storage. With DISTGRAPH_COMPILE_FAIL_FIXED it declares the tag and is one.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "distgraph/distributed/kv_client.hpp"
#include "distgraph/partition/range_partition_book.hpp"
#include "distgraph/transport/in_process_transport.hpp"

namespace {

// Declarations are enough: the concept only asks whether the calls are well-formed.
struct UntaggedStorage {
#ifdef DISTGRAPH_COMPILE_FAIL_FIXED
  using policy_category = distgraph::storage_tag;
#endif
  using Rows = std::span<const std::int64_t>;

  bool create(const distgraph::TensorSpec& spec);
  bool create(const distgraph::TensorSpec& spec, std::span<const std::byte> bytes);
  bool contains(std::string_view name) const;
  distgraph::TensorSpec spec(std::string_view name) const;
  std::vector<distgraph::TensorSpec> list() const;
  bool remove(std::string_view name);
  void read_rows(std::string_view name, Rows rows, std::span<std::byte> out) const;
  void write_rows(std::string_view name, Rows rows, std::span<const std::byte> in);
  void add_rows(std::string_view name, Rows rows, std::span<const std::byte> in);
};

}  // namespace

std::size_t client_size() {
  return sizeof(distgraph::KVClient<distgraph::RangePartitionBook, distgraph::InProcessTransport,
                                    UntaggedStorage>);
}
