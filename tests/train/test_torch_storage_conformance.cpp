// The Storage contract (tests/conformance/storage_conformance.hpp) run over TorchStorage.
// libtorch first: c10's logging defines a CHECK macro that Catch's must replace.
#include "distgraph/train/torch_storage.hpp"

#include "conformance/storage_conformance.hpp"

namespace test_train_torch_storage_conformance {

using distgraph::TorchStorage;

DISTGRAPH_STORAGE_CONFORMANCE_TESTS(TorchStorage)

}  // namespace test_train_torch_storage_conformance
