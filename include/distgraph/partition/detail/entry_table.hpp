// EntryTable: one partition entry per ID of one kind (nodes or edges), with derived indexes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "distgraph/core/buffer.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/core/ids.hpp"
#include "distgraph/partition/detail/checks.hpp"

namespace distgraph::detail {

/// The ownership of one kind ("node" or "edge") without relabeling: `part[i]` is the
/// partition of ID i (DGL's node_map.npy). Precomputes each ID's local ID (its rank among
/// the IDs of its partition), each partition's owned IDs, and, when types are given, each
/// ID's per-type ID and the IDs of each type. About 20 bytes per ID (36 with types);
/// `part` and `types` are shared, not copied, when they are already int32.
class EntryTable {
 public:
  EntryTable() = default;

  /// Throws InvalidArgument for num_parts < 1 or type arguments that do not fit together,
  /// ShapeError when `types` is neither empty nor one per ID, and IdOutOfRange naming
  /// "<kind>_part[i]" or "<kind>_type[i]" for an entry out of range.
  template <class I>
  EntryTable(const char* kind, std::int32_t num_parts, Buffer<I> part,
             std::vector<std::string> names, Buffer<std::int32_t> types)
      : kind_(kind), num_parts_(num_parts), names_(std::move(names)) {
    static_assert(std::is_same_v<I, std::int32_t> || std::is_same_v<I, std::int64_t>,
                  "partition arrays are int32 or int64");
    if (num_parts < 1)
      throw InvalidArgument("BasicPartitionBook: num_parts " + std::to_string(num_parts) +
                            "; expected at least 1");
    const std::size_t n = part.size();
    for (std::size_t i = 0; i < n; ++i)
      if (part[i] < 0 || part[i] >= num_parts)
        throw IdOutOfRange(std::string(kind_) + "_part[" + std::to_string(i) + "]",
                           static_cast<std::int64_t>(part[i]), 0, num_parts);
    if constexpr (std::is_same_v<I, std::int32_t>) {
      part_ = std::move(part);
    } else {
      std::vector<std::int32_t> narrow(n);
      for (std::size_t i = 0; i < n; ++i) narrow[i] = static_cast<std::int32_t>(part[i]);
      part_ = Buffer<std::int32_t>(std::move(narrow));
    }
    init_types(std::move(types));
    build_owned();
  }

  std::int32_t num_parts() const noexcept { return num_parts_; }
  std::int32_t num_types() const noexcept { return static_cast<std::int32_t>(names_.size()); }
  const std::vector<std::string>& names() const noexcept { return names_; }
  std::int64_t total() const noexcept { return static_cast<std::int64_t>(part_.size()); }
  const Buffer<std::int32_t>& part() const noexcept { return part_; }
  const Buffer<std::int32_t>& types() const noexcept { return types_; }

  std::int64_t type_total(std::int32_t t) const {
    check_type(kind_, t, num_types());
    if (types_.empty()) return total();
    return type_ptr_[static_cast<std::size_t>(t) + 1] - type_ptr_[static_cast<std::size_t>(t)];
  }
  std::int64_t count(PartId p) const {
    check_part(p, num_parts_);
    const auto k = static_cast<std::size_t>(p.value);
    return owned_ptr_[k + 1] - owned_ptr_[k];
  }
  std::int64_t count(PartId p, std::int32_t t) const {
    check_part(p, num_parts_);
    check_type(kind_, t, num_types());
    return owned_type_count_[static_cast<std::size_t>(p.value) * names_.size() +
                             static_cast<std::size_t>(t)];
  }
  /// The IDs partition `p` owns, ascending; a view into the shared table.
  std::span<const std::int64_t> owned(PartId p) const {
    check_part(p, num_parts_);
    const auto k = static_cast<std::size_t>(p.value);
    return std::span<const std::int64_t>(owned_).subspan(
        static_cast<std::size_t>(owned_ptr_[k]),
        static_cast<std::size_t>(owned_ptr_[k + 1] - owned_ptr_[k]));
  }
  std::vector<std::int64_t> owned(PartId p, std::int32_t t) const {
    const std::int64_t c = count(p, t);
    std::vector<std::int64_t> out;
    out.reserve(static_cast<std::size_t>(c));
    for (const std::int64_t g : owned(p))
      if (types_.empty() || types_[static_cast<std::size_t>(g)] == t) out.push_back(g);
    return out;
  }

  void partition(std::span<const std::int64_t> ids, std::span<std::int32_t> parts_out) const {
    check_out_size(kind_, "_partition", "parts_out", parts_out.size(), ids.size());
    check_global(ids);
    for (std::size_t i = 0; i < ids.size(); ++i)
      parts_out[i] = part_[static_cast<std::size_t>(ids[i])];
  }
  void to_local(std::span<const std::int64_t> ids, std::span<std::int64_t> local_out) const {
    check_out_size(kind_, "_to_local", "local_out", local_out.size(), ids.size());
    check_global(ids);
    for (std::size_t i = 0; i < ids.size(); ++i)
      local_out[i] = local_[static_cast<std::size_t>(ids[i])];
  }
  void to_global(PartId p, std::span<const std::int64_t> local_ids,
                 std::span<std::int64_t> global_out) const {
    check_out_size(kind_, "_to_global", "global_out", global_out.size(), local_ids.size());
    const std::span<const std::int64_t> mine = owned(p);
    check_ids(
        [&] {
          return "local " + std::string(kind_) + " id of partition " + std::to_string(p.value);
        },
        local_ids, 0, static_cast<std::int64_t>(mine.size()));
    for (std::size_t i = 0; i < local_ids.size(); ++i)
      global_out[i] = mine[static_cast<std::size_t>(local_ids[i])];
  }
  void to_per_type(std::span<const std::int64_t> ids, std::span<std::int32_t> types_out,
                   std::span<std::int64_t> per_type_out) const {
    check_out_size(kind_, "_to_per_type", "types_out", types_out.size(), ids.size());
    check_out_size(kind_, "_to_per_type", "per_type_out", per_type_out.size(), ids.size());
    check_global(ids);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const auto g = static_cast<std::size_t>(ids[i]);
      types_out[i] = types_.empty() ? 0 : types_[g];
      per_type_out[i] = types_.empty() ? ids[i] : per_type_[g];
    }
  }
  void from_per_type(std::int32_t t, std::span<const std::int64_t> per_type_ids,
                     std::span<std::int64_t> global_out) const {
    check_out_size("per_type_to_", kind_, "global_out", global_out.size(), per_type_ids.size());
    const std::int64_t n = type_total(t);
    check_ids(
        [&] {
          return std::string(kind_) + " id of type '" + names_[static_cast<std::size_t>(t)] + "'";
        },
        per_type_ids, 0, n);
    if (types_.empty()) {
      std::copy(per_type_ids.begin(), per_type_ids.end(), global_out.begin());
      return;
    }
    const std::int64_t base = type_ptr_[static_cast<std::size_t>(t)];
    for (std::size_t i = 0; i < per_type_ids.size(); ++i)
      global_out[i] = by_type_[static_cast<std::size_t>(base + per_type_ids[i])];
  }

 private:
  void check_global(std::span<const std::int64_t> ids) const {
    check_ids([&] { return std::string(kind_) + " id"; }, ids, 0, total());
  }

  // Validates the type arguments; with per-ID types, builds the per-type ranks and the
  // IDs of each type (a counting sort, so both are in ascending global order).
  void init_types(Buffer<std::int32_t> types) {
    const std::string who = std::string("BasicPartitionBook ") + kind_ + " types";
    if (names_.empty()) {
      if (!types.empty())
        throw InvalidArgument(who + ": per-" + kind_ + " types given without type names");
      names_.push_back(std::string(kind_) == "node" ? "_N" : "_E");
    }
    if (names_.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
      throw InvalidArgument(who + ": too many types for 32-bit type indices");
    if (types.empty()) {
      if (names_.size() != 1)
        throw InvalidArgument(who + ": " + std::to_string(names_.size()) +
                              " type names but no per-" + kind_ + " types; expected both");
      return;
    }
    const std::size_t n = part_.size(), T = names_.size();
    if (types.size() != n)
      throw ShapeError(std::string(kind_) + "_type", std::to_string(types.size()) +
                                                         " entries; expected " + std::to_string(n) +
                                                         ", one per " + kind_);
    for (std::size_t i = 0; i < n; ++i)
      if (types[i] < 0 || static_cast<std::size_t>(types[i]) >= T)
        throw IdOutOfRange(std::string(kind_) + "_type[" + std::to_string(i) + "]", types[i], 0,
                           static_cast<std::int64_t>(T));
    types_ = std::move(types);
    type_ptr_.assign(T + 1, 0);
    for (std::size_t i = 0; i < n; ++i) ++type_ptr_[static_cast<std::size_t>(types_[i]) + 1];
    for (std::size_t t = 0; t < T; ++t) type_ptr_[t + 1] += type_ptr_[t];
    std::vector<std::int64_t> next(type_ptr_.begin(), type_ptr_.end() - 1);
    by_type_.resize(n);
    per_type_.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto t = static_cast<std::size_t>(types_[i]);
      per_type_[i] = next[t] - type_ptr_[t];
      by_type_[static_cast<std::size_t>(next[t]++)] = static_cast<std::int64_t>(i);
    }
  }

  // Counting sort by partition: owned_ lists each partition's IDs ascending, and an ID's
  // local ID is its position in that list.
  void build_owned() {
    const std::size_t n = part_.size(), P = static_cast<std::size_t>(num_parts_);
    const std::size_t T = names_.size();
    owned_ptr_.assign(P + 1, 0);
    owned_type_count_.assign(P * T, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const auto p = static_cast<std::size_t>(part_[i]);
      ++owned_ptr_[p + 1];
      ++owned_type_count_[p * T + (types_.empty() ? 0 : static_cast<std::size_t>(types_[i]))];
    }
    for (std::size_t p = 0; p < P; ++p) owned_ptr_[p + 1] += owned_ptr_[p];
    std::vector<std::int64_t> next(owned_ptr_.begin(), owned_ptr_.end() - 1);
    owned_.resize(n);
    local_.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto p = static_cast<std::size_t>(part_[i]);
      local_[i] = next[p] - owned_ptr_[p];
      owned_[static_cast<std::size_t>(next[p]++)] = static_cast<std::int64_t>(i);
    }
  }

  const char* kind_ = "node";
  std::int32_t num_parts_ = 0;
  std::vector<std::string> names_;
  Buffer<std::int32_t> part_;                   // [id] partition
  Buffer<std::int32_t> types_;                  // [id] type, empty when homogeneous
  std::vector<std::int64_t> local_;             // [id] rank within its partition
  std::vector<std::int64_t> owned_ptr_;         // [p] offset of partition p in owned_
  std::vector<std::int64_t> owned_;             // IDs grouped by partition, ascending
  std::vector<std::int64_t> owned_type_count_;  // [p * T + t]
  std::vector<std::int64_t> type_ptr_;          // [t] offset of type t in by_type_
  std::vector<std::int64_t> by_type_;           // IDs grouped by type, ascending
  std::vector<std::int64_t> per_type_;          // [id] rank within its type
};

}  // namespace distgraph::detail
