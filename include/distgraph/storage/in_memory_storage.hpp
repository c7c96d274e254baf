// InMemoryStorage: named tensors on the 64-byte-aligned heap of one process.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/io/npy.hpp"
#include "distgraph/storage/concepts.hpp"
#include "distgraph/storage/row_locks.hpp"
#include "distgraph/storage/tensor_rows.hpp"

namespace distgraph {

/// Storage in the memory of one process: each tensor is a 64-byte-aligned heap block
/// (whole cache lines, so SIMD copies of row 0 start aligned). Row reads, writes and adds
/// are atomic per row through striped seqlocks (docs/concepts/Storage.md); the registry
/// of names is guarded by a shared mutex, taken once per call. create, create_from_npy
/// and the row calls come from detail::StorageCalls; create throws std::bad_alloc when
/// memory runs out. All members are thread-safe. Movable, not copyable; a moved-from
/// storage may only be destroyed or assigned to. remove() while another thread uses the
/// tensor is safe: that call keeps the memory alive until it returns.
class InMemoryStorage : public detail::StorageCalls<InMemoryStorage> {
 public:
  using policy_category = storage_tag;

  InMemoryStorage() : state_(std::make_unique<State>()) {}

  /// Whether tensor `name` exists.
  bool contains(std::string_view name) const {
    std::shared_lock lock(state_->mutex);
    return state_->tensors.find(name) != state_->tensors.end();
  }

  /// The spec of tensor `name`. Throws NotFound.
  TensorSpec spec(std::string_view name) const { return find(name)->rows.spec; }

  /// Specs of all tensors, sorted by name.
  std::vector<TensorSpec> list() const {
    std::shared_lock lock(state_->mutex);
    std::vector<TensorSpec> out;
    out.reserve(state_->tensors.size());
    for (const auto& [name, t] : state_->tensors) out.push_back(t->rows.spec);
    return out;
  }

  /// Drops tensor `name`; returns false when there was none. Calls already reading or
  /// writing it finish on the old memory.
  bool remove(std::string_view name) {
    std::unique_lock lock(state_->mutex);
    const auto it = state_->tensors.find(name);
    if (it == state_->tensors.end()) return false;
    state_->tensors.erase(it);
    state_->generations.bump(detail::stripe_salt(name));
    return true;
  }

 private:
  friend class detail::StorageCalls<InMemoryStorage>;

  struct AlignedFree {
    void operator()(std::byte* p) const noexcept { ::operator delete[](p, std::align_val_t{64}); }
  };
  struct Tensor {
    std::unique_ptr<std::byte[], AlignedFree> memory;
    detail::TensorRows rows;
  };
  struct State {
    mutable std::shared_mutex mutex;
    std::map<std::string, std::shared_ptr<const Tensor>, std::less<>> tensors;
    // One table for all tensors; each tensor's salt offsets its rows in it.
    alignas(64) std::uint64_t counters[detail::row_lock_stripes] = {};
    detail::RowLockTable locks{counters};
    alignas(64) std::uint64_t generation_words[detail::generation_stripes] = {};
    detail::GenerationTable generations{generation_words};
  };

  const detail::RowLockTable& row_locks() const noexcept { return state_->locks; }
  const detail::GenerationTable& generations() const noexcept { return state_->generations; }

  /// The tensor `name`, kept alive for the caller. Throws NotFound.
  std::shared_ptr<const Tensor> find(std::string_view name) const {
    {
      std::shared_lock lock(state_->mutex);
      const auto it = state_->tensors.find(name);
      if (it != state_->tensors.end()) return it->second;
    }
    throw NotFound(detail::tensor_subject(name), "no such tensor in this in-memory storage");
  }

  bool create_filled(const TensorSpec& spec, std::span<const std::byte> bytes, bool fill) {
    detail::validate_spec(spec);
    if (fill) detail::require_fill_bytes(spec, bytes.size());
    {
      std::shared_lock lock(state_->mutex);
      if (const auto it = state_->tensors.find(spec.name); it != state_->tensors.end()) {
        detail::require_same_layout(it->second->rows.spec, spec);
        return false;
      }
    }
    // Allocate and fill outside the registry lock; readers only see the finished tensor.
    auto t = std::make_shared<Tensor>();
    const std::size_t n = std::max<std::size_t>(spec.size_bytes(), 1);
    t->memory.reset(static_cast<std::byte*>(::operator new[](n, std::align_val_t{64})));
    if (fill && !bytes.empty())
      std::memcpy(t->memory.get(), bytes.data(), bytes.size());
    else
      std::memset(t->memory.get(), 0, n);
    t->rows = detail::TensorRows(spec, t->memory.get());
    std::unique_lock lock(state_->mutex);
    const auto [it, inserted] = state_->tensors.try_emplace(spec.name, std::move(t));
    // Another thread created it meanwhile: same contract as if it had been there first.
    if (!inserted) detail::require_same_layout(it->second->rows.spec, spec);
    return inserted;
  }

  std::unique_ptr<State> state_;
};

static_assert(Storage<InMemoryStorage>);
static_assert(VersionedStorage<InMemoryStorage>);

}  // namespace distgraph
