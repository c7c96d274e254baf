// RowCache: a machine's shared copy of the remote rows its trainers ask for most.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/server/protocol.hpp"
#include "distgraph/storage/concepts.hpp"
#include "distgraph/storage/scatter_read.hpp"

namespace distgraph {

/// Storage names of tensor `tensor`'s cache in a machine's shared storage: the cached rows'
/// global IDs (ascending, int64, one column) and the rows themselves, in that order.
inline std::string row_cache_ids_name(std::string_view tensor) {
  return "cache:" + std::string(tensor) + ":ids";
}
inline std::string row_cache_rows_name(std::string_view tensor) {
  return "cache:" + std::string(tensor) + ":rows";
}

/// One tensor's cached rows as a trainer reads them: the global IDs (copied into the
/// process when opened, so a lookup is a binary search in private memory) and the rows
/// (left in the machine's shared storage, read like co-located rows). Read-only and
/// thread-safe.
template <Storage S>
class RowCache {
 public:
  /// Opens the cache of tensor `tensor` that build_row_cache made in `storage`. Throws
  /// NotFound when there is none, FormatError when its two tensors disagree.
  RowCache(std::shared_ptr<const S> storage, std::string tensor)
      : storage_(std::move(storage)),
        tensor_(std::move(tensor)),
        rows_name_(row_cache_rows_name(tensor_)) {
    const std::string ids_name = row_cache_ids_name(tensor_);
    const TensorSpec ids = storage_->spec(ids_name);
    spec_ = storage_->spec(rows_name_);
    if (ids.dtype != DType::int64 || ids.cols != 1 || ids.rows != spec_.rows)
      throw FormatError(ids_name, "cache IDs of another layout than its " +
                                      std::to_string(spec_.rows) + " rows");
    ids_.resize(static_cast<std::size_t>(ids.rows));
    std::vector<std::int64_t> all(ids_.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
    storage_->read_rows(ids_name, all, std::as_writable_bytes(std::span(ids_)));
    if (!std::is_sorted(ids_.begin(), ids_.end()) ||
        std::adjacent_find(ids_.begin(), ids_.end()) != ids_.end())
      throw FormatError(ids_name, "cache IDs not strictly ascending");
  }

  /// The cached tensor's name.
  const std::string& tensor() const noexcept { return tensor_; }
  /// Rows held.
  std::int64_t size() const noexcept { return static_cast<std::int64_t>(ids_.size()); }
  std::size_t row_bytes() const noexcept { return spec_.row_bytes(); }
  /// The cached global IDs, ascending.
  std::span<const std::int64_t> ids() const noexcept { return ids_; }

  /// Cache slot of global ID `id`, or -1 when it is not cached.
  std::int64_t slot(std::int64_t id) const noexcept {
    const auto it = std::lower_bound(ids_.begin(), ids_.end(), id);
    return it != ids_.end() && *it == id ? static_cast<std::int64_t>(it - ids_.begin()) : -1;
  }

  /// Copies cached rows `slots` into row slots `at` of `out` (rows of row_bytes()).
  void read(std::span<const std::int64_t> slots, std::span<const std::size_t> at,
            std::span<std::byte> out) const {
    read_rows_into(*storage_, rows_name_, slots, at, out, row_bytes());
  }

 private:
  std::shared_ptr<const S> storage_;
  std::string tensor_, rows_name_;
  TensorSpec spec_;
  std::vector<std::int64_t> ids_;
};

/// Counts how often each row is asked for (e.g. the input nodes of pre-sampled batches),
/// to rank a cache's candidates.
class RowFrequency {
 public:
  void add(std::span<const std::int64_t> ids) {
    for (const auto id : ids) ++counts_[id];
  }
  /// Distinct IDs seen.
  std::size_t size() const noexcept { return counts_.size(); }
  /// Every ID seen, most asked for first (ties: the smaller ID first, so the ranking does
  /// not depend on the hash map's order).
  std::vector<std::int64_t> ranked() const {
    std::vector<std::pair<std::int64_t, std::int64_t>> v(counts_.begin(), counts_.end());
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    std::vector<std::int64_t> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = v[i].first;
    return out;
  }

 private:
  std::unordered_map<std::int64_t, std::int64_t> counts_;
};

/// What build_row_cache made on this trainer's machine.
struct RowCacheStats {
  std::int64_t rows = 0;        ///< rows the machine's cache holds
  std::int64_t bytes = 0;       ///< their bytes in shared memory
  std::int64_t candidates = 0;  ///< distinct remote rows the filling trainer ranked
  bool filled_here = false;     ///< this trainer filled the machine's cache
};

/// Builds the machine's shared cache of tensor `tensor` (rows of `kind`) for `client`
/// (a KVClient) and has every trainer use it. Collective: every trainer of the job calls it
/// with the same tensor. On each machine one trainer (whichever claims it first) calls
/// `rank_candidates()` for global IDs, most wanted first, keeps the first of them owned by
/// other machines that fit `budget_bytes`, fetches those rows from their owners and writes
/// them into the machine's shared storage; the others wait, then all open it. Trainers
/// without a co-located storage (standalone runs, trainers off the cluster's machines) and
/// a zero budget get no cache and only take part in the barriers. Once per tensor and job
/// (InvalidArgument otherwise: a rebuild under readers could hand them new rows for old
/// slots). The caller makes sure the tensor is read-only for the job
/// (DistGraph::cache_remote_rows checks it is partition data); the client refuses writes to
/// it from then on. Throws what the pulls throw (IdOutOfRange for a candidate outside the
/// graph), and IoError when shared memory is full.
template <class Client, class RankCandidates>
RowCacheStats build_row_cache(Client& client, const std::string& tensor, RowKind kind,
                              std::size_t budget_bytes, RankCandidates&& rank_candidates) {
  using S = typename Client::storage_type;
  if (client.row_cache(tensor))
    throw InvalidArgument("build_row_cache: tensor '" + tensor +
                          "' is cached already; a machine's cache is built once per job");
  RowCacheStats st;
  const std::string barrier = "distgraph:row-cache:" + tensor;
  const std::string claim = "cache:" + tensor + ":filler";
  auto storage = budget_bytes > 0 ? client.colocated() : nullptr;
  // Exactly one trainer per machine creates the claim (Storage::create returns true once).
  st.filled_here = storage && storage->create(TensorSpec{claim, DType::int64, 1, 1});
  if (st.filled_here) {
    TensorSpec rows_spec = storage->spec(tensor);
    const std::size_t rb = rows_spec.row_bytes();
    const std::vector<std::int64_t> ranked = rank_candidates();
    std::vector<std::int32_t> owner(ranked.size());
    if (kind == RowKind::node)
      client.book().node_partition(ranked, owner);
    else
      client.book().edge_partition(ranked, owner);
    const std::size_t capacity = rb == 0 ? 0 : budget_bytes / rb;
    std::vector<std::int64_t> ids;
    for (std::size_t i = 0; i < ranked.size(); ++i)
      if (owner[i] != client.layout().machine_id) {
        ++st.candidates;
        if (ids.size() < capacity) ids.push_back(ranked[i]);
      }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    std::vector<std::byte> rows(ids.size() * rb);
    constexpr std::size_t chunk = 1 << 16;  // rows per request: bounded frames
    for (std::size_t at = 0; at < ids.size(); at += chunk) {
      const std::size_t n = std::min(chunk, ids.size() - at);
      client.pull_uncached(tensor, kind, std::span(ids).subspan(at, n),
                           std::span(rows).subspan(at * rb, n * rb), rb);
    }
    rows_spec.name = row_cache_rows_name(tensor);
    rows_spec.rows = static_cast<std::int64_t>(ids.size());
    storage->remove(row_cache_ids_name(tensor));
    storage->remove(rows_spec.name);
    storage->create(rows_spec, rows);
    storage->create(
        TensorSpec{row_cache_ids_name(tensor), DType::int64, rows_spec.rows, 1},
        std::as_bytes(std::span<const std::int64_t>(ids)));
  }
  client.barrier(barrier + ":filled");
  if (storage && storage->contains(row_cache_ids_name(tensor))) {
    auto cache = std::make_shared<const RowCache<S>>(storage, tensor);
    st.rows = cache->size();
    st.bytes = cache->size() * static_cast<std::int64_t>(cache->row_bytes());
    client.use_row_cache(std::move(cache));
  }
  client.barrier(barrier + ":opened");
  if (st.filled_here) storage->remove(claim);
  return st;
}

}  // namespace distgraph
