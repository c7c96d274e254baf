// The Storage contract (docs/concepts/Storage.md), run over every model without libtorch;
// TorchStorage runs the same cases in tests/train/test_torch_storage_conformance.cpp.
#include "conformance/storage_conformance.hpp"
#include "distgraph/storage/in_memory_storage.hpp"
#include "distgraph/storage/mmap_storage.hpp"

namespace test_conformance_storage_conformance {

using distgraph::InMemoryStorage;
using distgraph::MmapStorage;

DISTGRAPH_STORAGE_CONFORMANCE_TESTS(InMemoryStorage, MmapStorage)

}  // namespace test_conformance_storage_conformance
