// TorchStorage: named tensors held as torch tensors (optionally in pinned host memory), so a
// trainer can hand rows to libtorch and copy them to a GPU without another buffer.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/csrc/api/include/torch/cuda.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/storage/concepts.hpp"
#include "distgraph/storage/row_locks.hpp"
#include "distgraph/storage/tensor_rows.hpp"

namespace distgraph {

/// The torch element type of a DType. Throws DTypeError for dtypes torch 1.13 lacks
/// (uint16, uint32, uint64).
inline c10::ScalarType torch_scalar_type(DType t, const std::string& subject = "tensor") {
  switch (t) {
    case DType::float32:
      return c10::kFloat;
    case DType::float64:
      return c10::kDouble;
    case DType::float16:
      return c10::kHalf;
    case DType::bfloat16:
      return c10::kBFloat16;
    case DType::int8:
      return c10::kChar;
    case DType::int16:
      return c10::kShort;
    case DType::int32:
      return c10::kInt;
    case DType::int64:
      return c10::kLong;
    case DType::uint8:
      return c10::kByte;
    case DType::bool_:
      return c10::kBool;
    default:
      break;
  }
  throw DTypeError(subject, "dtype " + std::string(dtype_name(t)) + " has no torch equivalent");
}

/// Options of TorchStorage.
struct TorchStorageOptions {
  /// Allocate in page-locked host memory (faster, asynchronous host-to-GPU copies). Only
  /// honoured where CUDA is available; elsewhere tensors are ordinary CPU memory.
  bool pinned = false;
};

/// Storage whose tensors are CPU torch tensors, 2-D [rows, cols]: the same row semantics
/// as InMemoryStorage (atomic rows through striped seqlocks, no lost adds; see
/// docs/concepts/Storage.md) plus tensor(name), the torch tensor itself (shares memory:
/// reads of it are not synchronised with concurrent row writes). Thread-safe. Movable.
class TorchStorage : public detail::StorageCalls<TorchStorage> {
 public:
  using policy_category = storage_tag;

  explicit TorchStorage(TorchStorageOptions options = {}) : state_(std::make_unique<State>()) {
    state_->pinned = options.pinned && torch::cuda::is_available();
  }

  /// Whether tensors are in pinned memory (false where CUDA is unavailable).
  bool pinned() const noexcept { return state_->pinned; }

  bool contains(std::string_view name) const {
    std::shared_lock lock(state_->mutex);
    return state_->tensors.find(name) != state_->tensors.end();
  }
  TensorSpec spec(std::string_view name) const { return find(name)->rows.spec; }
  std::vector<TensorSpec> list() const {
    std::shared_lock lock(state_->mutex);
    std::vector<TensorSpec> out;
    for (const auto& [n, t] : state_->tensors) out.push_back(t->rows.spec);
    return out;
  }
  bool remove(std::string_view name) {
    std::unique_lock lock(state_->mutex);
    const auto it = state_->tensors.find(name);
    if (it == state_->tensors.end()) return false;
    state_->tensors.erase(it);
    state_->generations.bump(detail::stripe_salt(name));
    return true;
  }
  /// The torch tensor behind `name` ([rows, cols], sharing memory). Throws NotFound.
  at::Tensor tensor(std::string_view name) const { return find(name)->tensor; }

 private:
  friend class detail::StorageCalls<TorchStorage>;
  struct Tensor {
    at::Tensor tensor;
    detail::TensorRows rows;
  };
  struct State {
    mutable std::shared_mutex mutex;
    std::map<std::string, std::shared_ptr<const Tensor>, std::less<>> tensors;
    bool pinned = false;
    alignas(64) std::uint64_t counters[detail::row_lock_stripes] = {};
    detail::RowLockTable locks{counters};
    alignas(64) std::uint64_t generation_words[detail::generation_stripes] = {};
    detail::GenerationTable generations{generation_words};
  };

  const detail::RowLockTable& row_locks() const noexcept { return state_->locks; }
  const detail::GenerationTable& generations() const noexcept { return state_->generations; }

  std::shared_ptr<const Tensor> find(std::string_view name) const {
    {
      std::shared_lock lock(state_->mutex);
      const auto it = state_->tensors.find(name);
      if (it != state_->tensors.end()) return it->second;
    }
    throw NotFound(detail::tensor_subject(name), "no such tensor in this torch storage");
  }

  bool create_filled(const TensorSpec& spec, std::span<const std::byte> bytes, bool fill) {
    detail::validate_spec(spec);
    if (fill) detail::require_fill_bytes(spec, bytes.size());
    const auto type = torch_scalar_type(spec.dtype, detail::tensor_subject(spec.name));
    {
      std::shared_lock lock(state_->mutex);
      if (const auto it = state_->tensors.find(spec.name); it != state_->tensors.end()) {
        detail::require_same_layout(it->second->rows.spec, spec);
        return false;
      }
    }
    auto t = std::make_shared<Tensor>();
    t->tensor = at::empty({spec.rows, spec.cols},
                          at::TensorOptions().dtype(type).pinned_memory(state_->pinned));
    auto* p = static_cast<std::byte*>(t->tensor.data_ptr());
    if (spec.size_bytes() > 0) {
      if (fill)
        std::memcpy(p, bytes.data(), bytes.size());
      else
        std::memset(p, 0, spec.size_bytes());
    }
    t->rows = detail::TensorRows(spec, p);
    std::unique_lock lock(state_->mutex);
    const auto [it, inserted] = state_->tensors.try_emplace(spec.name, std::move(t));
    if (!inserted) detail::require_same_layout(it->second->rows.spec, spec);
    return inserted;
  }

  std::unique_ptr<State> state_;
};

static_assert(Storage<TorchStorage>);

}  // namespace distgraph
