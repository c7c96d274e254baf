// Must compile: the hosts of the compile-fail snippets accept real models, so those snippets
// fail because of their non-models and not because of the harness.
#include <cstdint>
#include <span>

#include "distgraph/distributed/kv_client.hpp"
#include "distgraph/partition/range_partition_book.hpp"
#include "distgraph/sampling/sample_local.hpp"
#include "distgraph/sampling/uniform_sampler.hpp"
#include "distgraph/storage/in_memory_storage.hpp"
#include "distgraph/transport/in_process_transport.hpp"

std::size_t client_size() {
  return sizeof(distgraph::KVClient<distgraph::RangePartitionBook, distgraph::InProcessTransport,
                                    distgraph::InMemoryStorage>);
}

distgraph::Frontier sample(const distgraph::LocalGraphView& view,
                           std::span<const std::int64_t> seeds) {
  return distgraph::sample_neighbors_local(view, seeds, 10, distgraph::SampleKey{},
                                           distgraph::UniformSampler{});
}
