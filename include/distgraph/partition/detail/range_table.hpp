// RangeTable: contiguous per-(partition, type) ID ranges of one kind (nodes or edges).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/partition/detail/checks.hpp"

namespace distgraph::detail {

/// The ID layout of one kind ("node" or "edge") after relabeling: partition-major, then
/// type, so partition p owns [part_start(p), part_end(p)) and, inside it, type t owns
/// [start(p, t), start(p, t) + count(p, t)). Holds O(parts x types) integers; every
/// lookup is a binary search over range ends. Immutable after construction, so const
/// calls are thread-safe.
class RangeTable {
 public:
  RangeTable() = default;

  /// `counts[p][t]` IDs of type t in partition p. Throws InvalidArgument naming `kind`
  /// and the entry at fault for ragged rows, negative counts, no partitions or no types.
  RangeTable(const char* kind, std::vector<std::string> type_names,
             const std::vector<std::vector<std::int64_t>>& counts)
      : kind_(kind), names_(std::move(type_names)) {
    const std::string what = std::string("RangePartitionBook ") + kind_;
    if (counts.empty()) throw InvalidArgument(what + " counts: no partitions; expected at least 1");
    if (names_.empty()) throw InvalidArgument(what + " types: none given; expected at least 1");
    if (counts.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()) ||
        names_.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
      throw InvalidArgument(what + " counts: too many partitions or types for 32-bit indices");
    num_parts_ = static_cast<std::int32_t>(counts.size());
    num_types_ = static_cast<std::int32_t>(names_.size());
    const auto P = static_cast<std::size_t>(num_parts_);
    const auto T = static_cast<std::size_t>(num_types_);
    ends_.resize(P * T);
    part_ends_.resize(P);
    type_ends_.resize(T * P);
    std::vector<std::int64_t> type_running(T, 0);
    std::int64_t running = 0;
    for (std::size_t p = 0; p < P; ++p) {
      if (counts[p].size() != T)
        throw InvalidArgument(what + " counts[" + std::to_string(p) +
                              "]: " + std::to_string(counts[p].size()) + " entries; expected " +
                              std::to_string(T) + ", one per " + kind_ + " type");
      for (std::size_t t = 0; t < T; ++t) {
        const std::int64_t c = counts[p][t];
        if (c < 0 || c > std::numeric_limits<std::int64_t>::max() - running)
          throw InvalidArgument(what + " counts[" + std::to_string(p) + "][" + std::to_string(t) +
                                "]: " + std::to_string(c) +
                                "; expected a non-negative count with an int64 total");
        running += c;
        ends_[p * T + t] = running;
        type_running[t] += c;
        type_ends_[t * P + p] = type_running[t];
      }
      part_ends_[p] = running;
    }
  }

  std::int32_t num_parts() const noexcept { return num_parts_; }
  std::int32_t num_types() const noexcept { return num_types_; }
  const std::vector<std::string>& names() const noexcept { return names_; }
  std::int64_t total() const noexcept { return part_ends_.empty() ? 0 : part_ends_.back(); }

  /// Number of IDs of type `t` over all partitions. Throws IdOutOfRange for a bad type.
  std::int64_t type_total(std::int32_t t) const {
    check_type_index(t);
    return type_ends_[idx(t, num_parts_ - 1, num_parts_)];
  }
  std::int64_t part_start(PartId p) const {
    check_part(p, num_parts_);
    return p.value == 0 ? 0 : part_ends_[static_cast<std::size_t>(p.value) - 1];
  }
  std::int64_t part_end(PartId p) const {
    check_part(p, num_parts_);
    return part_ends_[static_cast<std::size_t>(p.value)];
  }
  /// First ID of type `t` in partition `p`.
  std::int64_t start(PartId p, std::int32_t t) const {
    check_part(p, num_parts_);
    check_type_index(t);
    const std::size_t k = idx(p.value, t, num_types_);
    return ends_[k] - count_at(k);
  }
  /// Number of IDs of type `t` in partition `p`.
  std::int64_t count(PartId p, std::int32_t t) const {
    check_part(p, num_parts_);
    check_type_index(t);
    return count_at(idx(p.value, t, num_types_));
  }

  /// parts_out[i] = owner of ids[i].
  void partition(std::span<const std::int64_t> ids, std::span<std::int32_t> parts_out) const {
    check_out_size(kind_, "_partition", "parts_out", parts_out.size(), ids.size());
    check_global(ids);
    for (std::size_t i = 0; i < ids.size(); ++i) parts_out[i] = part_of(ids[i]);
  }
  /// local_out[i] = index of ids[i] among the IDs its owner owns.
  void to_local(std::span<const std::int64_t> ids, std::span<std::int64_t> local_out) const {
    check_out_size(kind_, "_to_local", "local_out", local_out.size(), ids.size());
    check_global(ids);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const std::int32_t p = part_of(ids[i]);
      local_out[i] = ids[i] - (p == 0 ? 0 : part_ends_[static_cast<std::size_t>(p) - 1]);
    }
  }
  /// global_out[i] = global ID of local ID local_ids[i] of partition `p`.
  void to_global(PartId p, std::span<const std::int64_t> local_ids,
                 std::span<std::int64_t> global_out) const {
    check_out_size(kind_, "_to_global", "global_out", global_out.size(), local_ids.size());
    const std::int64_t begin = part_start(p), end = part_end(p);
    check_ids(
        [&] {
          return "local " + std::string(kind_) + " id of partition " + std::to_string(p.value);
        },
        local_ids, 0, end - begin);
    for (std::size_t i = 0; i < local_ids.size(); ++i) global_out[i] = begin + local_ids[i];
  }
  /// types_out[i], per_type_out[i] = type of ids[i] and its rank among IDs of that type.
  void to_per_type(std::span<const std::int64_t> ids, std::span<std::int32_t> types_out,
                   std::span<std::int64_t> per_type_out) const {
    check_out_size(kind_, "_to_per_type", "types_out", types_out.size(), ids.size());
    check_out_size(kind_, "_to_per_type", "per_type_out", per_type_out.size(), ids.size());
    check_global(ids);
    const auto T = static_cast<std::size_t>(num_types_);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      // The first range whose end exceeds the ID holds it; empty ranges are skipped
      // because their end equals the previous end.
      const auto k = static_cast<std::size_t>(std::upper_bound(ends_.begin(), ends_.end(), ids[i]) -
                                              ends_.begin());
      const std::size_t p = k / T, t = k % T;
      const std::int64_t c = count_at(k);
      types_out[i] = static_cast<std::int32_t>(t);
      per_type_out[i] =
          type_ends_[t * static_cast<std::size_t>(num_parts_) + p] - c + (ids[i] - (ends_[k] - c));
    }
  }
  /// global_out[i] = global ID of the per_type_ids[i]-th ID of type `t`.
  void from_per_type(std::int32_t t, std::span<const std::int64_t> per_type_ids,
                     std::span<std::int64_t> global_out) const {
    check_out_size("per_type_to_", kind_, "global_out", global_out.size(), per_type_ids.size());
    const std::int64_t n = type_total(t);
    check_ids(
        [&] {
          return std::string(kind_) + " id of type '" + names_[static_cast<std::size_t>(t)] + "'";
        },
        per_type_ids, 0, n);
    const auto P = static_cast<std::size_t>(num_parts_);
    const auto row =
        type_ends_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(t) * P);
    for (std::size_t i = 0; i < per_type_ids.size(); ++i) {
      const auto q = static_cast<std::size_t>(
          std::upper_bound(row, row + static_cast<std::ptrdiff_t>(P), per_type_ids[i]) - row);
      const std::size_t k = idx(static_cast<std::int32_t>(q), t, num_types_);
      const std::int64_t c = count_at(k);
      const std::int64_t before = row[static_cast<std::ptrdiff_t>(q)] - c;
      global_out[i] = (ends_[k] - c) + (per_type_ids[i] - before);
    }
  }

  /// [start, end) of type `t` in each partition, in partition order.
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges(std::int32_t t) const {
    check_type_index(t);
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    out.reserve(static_cast<std::size_t>(num_parts_));
    for (std::int32_t p = 0; p < num_parts_; ++p) {
      const std::size_t k = idx(p, t, num_types_);
      out.emplace_back(ends_[k] - count_at(k), ends_[k]);
    }
    return out;
  }

 private:
  static std::size_t idx(std::int32_t major, std::int32_t minor, std::int32_t minor_size) {
    return static_cast<std::size_t>(major) * static_cast<std::size_t>(minor_size) +
           static_cast<std::size_t>(minor);
  }
  std::int64_t count_at(std::size_t k) const { return ends_[k] - (k == 0 ? 0 : ends_[k - 1]); }
  std::int32_t part_of(std::int64_t g) const {
    return static_cast<std::int32_t>(std::upper_bound(part_ends_.begin(), part_ends_.end(), g) -
                                     part_ends_.begin());
  }
  void check_global(std::span<const std::int64_t> ids) const {
    check_ids([&] { return std::string(kind_) + " id"; }, ids, 0, total());
  }
  void check_type_index(std::int32_t t) const { check_type(kind_, t, num_types_); }

  const char* kind_ = "node";
  std::vector<std::string> names_;
  std::int32_t num_parts_ = 0, num_types_ = 0;
  std::vector<std::int64_t> ends_;       // [p * T + t]: end of (p, t), cumulative
  std::vector<std::int64_t> part_ends_;  // [p]: end of partition p
  std::vector<std::int64_t> type_ends_;  // [t * P + p]: IDs of type t in partitions <= p
};

}  // namespace distgraph::detail
