// Batch validation helpers shared by the partition books and the METIS boundary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>

#include "distgraph/core/error.hpp"
#include "distgraph/core/ids.hpp"

namespace distgraph::detail {

/// Throws IdOutOfRange(subject, v, lo, hi) for the first v in `ids` outside [lo, hi).
/// `subject` is a string or a callable returning one, called only on failure so a valid
/// batch costs one branch-light pass of compares and no allocation.
template <class Subject>
void check_ids(const Subject& subject, std::span<const std::int64_t> ids, std::int64_t lo,
               std::int64_t hi) {
  bool bad = false;
  for (const std::int64_t v : ids) bad |= (v < lo) | (v >= hi);
  if (!bad) return;
  for (const std::int64_t v : ids) {
    if (v >= lo && v < hi) continue;
    if constexpr (std::is_invocable_v<const Subject&>)
      throw IdOutOfRange(std::string(subject()), v, lo, hi);
    else
      throw IdOutOfRange(std::string(subject), v, lo, hi);
  }
}

/// Throws ShapeError unless output span `out_name` of the call named `<head><tail>` has
/// `expected` entries (the name is built only on failure).
inline void check_out_size(const char* head, const char* tail, const char* out_name,
                           std::size_t actual, std::size_t expected) {
  if (actual != expected)
    throw ShapeError(std::string(head) + tail, std::string(out_name) + " holds " +
                                                   std::to_string(actual) + " entries; expected " +
                                                   std::to_string(expected) + ", one per input id");
}

/// Throws IdOutOfRange unless `p` is a partition index in [0, num_parts).
inline void check_part(PartId p, std::int32_t num_parts) {
  if (p.value < 0 || p.value >= num_parts)
    throw IdOutOfRange("partition id", p.value, 0, num_parts);
}

/// Throws IdOutOfRange("<kind> type", ...) unless `t` is a type index in [0, num_types).
inline void check_type(const char* kind, std::int32_t t, std::int32_t num_types) {
  if (t < 0 || t >= num_types) throw IdOutOfRange(std::string(kind) + " type", t, 0, num_types);
}

}  // namespace distgraph::detail
