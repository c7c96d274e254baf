// IdHashMap: open-addressing map from non-negative int64 IDs to int64 values.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace distgraph::detail {

/// Linear-probing hash map for non-negative keys (global node IDs), with keys and values
/// side by side so a probe touches one cache line. Kept at most half full; doubles when a
/// key would pass that. Hashing is Fibonacci multiplicative (Knuth, TAOCP 6.4): R-MAT and
/// relabeled IDs are clustered, and the golden-ratio multiply spreads runs of consecutive
/// IDs over the table. std::unordered_map allocates a node per key and was the hot spot
/// of compaction in DGL's early to_block. Not thread-safe.
class IdHashMap {
 public:
  static constexpr std::int64_t absent = -1;

  explicit IdHashMap(std::size_t expected = 0) { reset(expected); }

  /// Empties the map and sizes it for `expected` keys without growing. O(capacity).
  void reset(std::size_t expected) {
    const std::size_t cap = std::bit_ceil(std::max<std::size_t>(16, 2 * expected));
    slots_.assign(cap, Slot{absent, 0});
    shift_ = 64 - std::countr_zero(cap);
    size_ = 0;
  }

  std::size_t size() const noexcept { return size_; }

  /// The value stored for `key`, inserting `value` first if `key` is absent. `key` >= 0.
  std::int64_t insert(std::int64_t key, std::int64_t value) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    Slot& s = slots_[slot_of(key)];
    if (s.key == absent) {
      s = Slot{key, value};
      ++size_;
    }
    return s.value;
  }

  /// Asks for the cache line where a look-up of `key` starts, without waiting: a batch of
  /// look-ups of scattered keys issued a few keys ahead overlaps their misses. A hint only.
  void prefetch(std::int64_t key) const noexcept { __builtin_prefetch(slots_.data() + home(key)); }

  /// The value stored for `key`, or `absent`.
  std::int64_t find(std::int64_t key) const noexcept {
    const Slot& s = slots_[slot_of(key)];
    return s.key == absent ? absent : s.value;
  }

 private:
  struct Slot {
    std::int64_t key, value;
  };

  std::size_t home(std::int64_t key) const noexcept {
    return static_cast<std::size_t>((static_cast<std::uint64_t>(key) * 0x9E3779B97F4A7C15ull) >>
                                    shift_);
  }
  /// The slot holding `key`, else the empty slot where it would go. The table is at most
  /// half full, so the scan meets one of the two well before it wraps around.
  std::size_t slot_of(std::int64_t key) const noexcept {
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = home(key);
    for (std::size_t n = 0; n < slots_.size(); ++n, i = (i + 1) & mask)
      if (slots_[i].key == key || slots_[i].key == absent) break;
    return i;
  }
  void grow() {
    std::vector<Slot> old(2 * slots_.size(), Slot{absent, 0});
    old.swap(slots_);
    shift_ -= 1;
    for (const Slot& s : old)
      if (s.key != absent) slots_[slot_of(s.key)] = s;
  }

  std::vector<Slot> slots_;
  int shift_ = 60;
  std::size_t size_ = 0;
};

}  // namespace distgraph::detail
