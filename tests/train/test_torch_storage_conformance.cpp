// The Storage contract (tests/conformance/storage_conformance.hpp) run over TorchStorage.
#include "conformance/storage_conformance.hpp"
#include "distgraph/train/torch_storage.hpp"

using distgraph::TorchStorage;

DISTGRAPH_STORAGE_CONFORMANCE_TESTS(TorchStorage)
