// RowLockTable: striped seqlocks that make each row read, write and add atomic.
#pragma once

#include <atomic>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>

#include "distgraph/core/error.hpp"

namespace distgraph::detail {

/// Number of sequence counters in a lock table (a power of two): 32 KiB of counters, so
/// the table stays in L2 while readers walk random rows.
inline constexpr std::size_t row_lock_stripes = 4096;

/// How long a reader or writer waits for one stripe before it gives up. A stripe is held
/// for the copy of one row, so only a writer that died mid-row (killed process) holds it
/// this long.
inline constexpr std::chrono::milliseconds row_lock_timeout{10000};

// The counters may live in a MAP_SHARED file mapped by several processes; that works only
// when the atomic operations are lock-free, hence address-free ([atomics.lockfree]).
static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free,
              "row locks shared between processes need lock-free 64-bit atomics");

/// A stable 64-bit hash of a tensor name (FNV-1a). It offsets each tensor's rows in the
/// table so row r of two tensors rarely shares a stripe; unlike std::hash it is the same
/// in every process and build, which processes sharing one table need.
constexpr std::uint64_t stripe_salt(std::string_view name) noexcept {
  std::uint64_t h = 14695981039346656037ull;
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

/// Spin-then-yield waiting with a deadline, for one stripe.
class Backoff {
 public:
  /// Waits a little; throws TimeoutError naming `what` once `timeout` has passed since
  /// the first call that yielded.
  void pause(std::chrono::milliseconds timeout, const char* what) {
    ++spins_;
    if (spins_ < 64) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      return;
    }
    // The holder may be descheduled (more threads than cores): let it run.
    std::this_thread::yield();
    if ((spins_ & 255) != 0) return;
    const auto now = std::chrono::steady_clock::now();
    if (!started_) {
      started_ = true;
      since_ = now;
    } else if (now - since_ > timeout) {
      throw TimeoutError(std::string(what) + ": row lock held for over " +
                         std::to_string(timeout.count()) +
                         " ms; a writer may have died while writing the row");
    }
  }

 private:
  std::uint64_t spins_ = 0;
  bool started_ = false;
  std::chrono::steady_clock::time_point since_;
};

/// A view of `row_lock_stripes` 64-bit sequence counters owned elsewhere (heap memory, or
/// a MAP_SHARED file shared by processes). Row r of a tensor with salt s maps to one
/// counter; an even value means no writer, odd means a writer is copying the row.
/// Writers take a stripe by CAS from even to odd and release it at the next even value,
/// never holding two stripes, so there is no lock-order deadlock. Readers copy without
/// writing the counter and retry while it was odd or changed (Lameter's seqlock; fences
/// as in Boehm, "Can seqlocks get along with programming language memory models?", 2012).
/// The row bytes themselves are copied with memcpy: a torn copy is detected and retried,
/// never returned. Thread- and process-safe; waits throw TimeoutError after `timeout`.
class RowLockTable {
 public:
  RowLockTable() = default;
  /// Views `counters`, which must hold row_lock_stripes 8-byte-aligned words.
  explicit RowLockTable(std::uint64_t* counters,
                        std::chrono::milliseconds timeout = row_lock_timeout) noexcept
      : counters_(counters), timeout_(timeout) {}

  /// The counter guarding `row` of the tensor with `salt`. Consecutive rows map to
  /// counters 64 bytes apart, so writers of neighbouring rows do not share a cache line.
  std::uint64_t& counter(std::int64_t row, std::uint64_t salt) const noexcept {
    constexpr std::uint64_t mask = row_lock_stripes - 1;
    const std::uint64_t s = (static_cast<std::uint64_t>(row) + salt) & mask;
    constexpr unsigned high_shift = std::countr_zero(row_lock_stripes / 8);
    return counters_[((s & (row_lock_stripes / 8 - 1)) << 3) | (s >> high_shift)];
  }

  /// Copies `bytes` bytes of the row at `src` to `dst` so that the copy never mixes two
  /// writes. `what` names the tensor for a TimeoutError.
  void read(std::int64_t row, std::uint64_t salt, std::byte* dst, const std::byte* src,
            std::size_t bytes, const char* what) const {
    std::atomic_ref<std::uint64_t> seq(counter(row, salt));
    Backoff backoff;
    while (true) {
      const std::uint64_t before = seq.load(std::memory_order_acquire);
      if ((before & 1) == 0) {
        std::memcpy(dst, src, bytes);
        // Keeps the data loads above the re-check of the counter.
        std::atomic_thread_fence(std::memory_order_acquire);
        if (seq.load(std::memory_order_relaxed) == before) return;
      }
      backoff.pause(timeout_, what);
    }
  }

  /// Runs `fn()` (which writes the row) while holding the row's stripe.
  template <class Fn>
  void write(std::int64_t row, std::uint64_t salt, const char* what, Fn&& fn) const {
    // Nothing may throw while the stripe is odd, or it would stay held forever.
    static_assert(std::is_nothrow_invocable_v<Fn&>, "row writers must be noexcept");
    std::atomic_ref<std::uint64_t> seq(counter(row, salt));
    Backoff backoff;
    std::uint64_t s = seq.load(std::memory_order_relaxed);
    while ((s & 1) != 0 || !seq.compare_exchange_weak(s, s + 1, std::memory_order_acquire,
                                                      std::memory_order_relaxed)) {
      backoff.pause(timeout_, what);
      s = seq.load(std::memory_order_relaxed);
    }
    // A reader that sees any of the stores below also sees the odd counter.
    std::atomic_thread_fence(std::memory_order_release);
    fn();
    seq.store(s + 2, std::memory_order_release);
  }

  std::chrono::milliseconds timeout() const noexcept { return timeout_; }

 private:
  std::uint64_t* counters_ = nullptr;
  std::chrono::milliseconds timeout_ = row_lock_timeout;
};

/// Number of write-generation counters (a power of two): 8 KiB, beside the lock stripes.
inline constexpr std::size_t generation_stripes = 1024;

/// Write generations: one counter per stripe of tensor names (stripe_salt), bumped after
/// every write, add, create and remove of a tensor of that stripe, so whoever derived
/// something from a tensor (a sampler's probabilities, a cache) can tell that it may have
/// changed since. Two tensors may share a stripe: a write to one then also marks the other
/// changed (a needless rebuild, never a missed one). The counters may live in a MAP_SHARED
/// file (MmapStorage), so writers in any process are seen. Thread- and process-safe.
class GenerationTable {
 public:
  GenerationTable() = default;
  /// Views `words`, which must hold generation_stripes 8-byte-aligned words.
  explicit GenerationTable(std::uint64_t* words) noexcept : words_(words) {}

  /// After a change to a tensor with `salt`: its writes happen before a reader that sees
  /// the new generation reads the tensor.
  void bump(std::uint64_t salt) const noexcept {
    std::atomic_ref<std::uint64_t>(word(salt)).fetch_add(1, std::memory_order_release);
  }
  /// The generation of the tensors with `salt`; read it before reading the tensor.
  std::uint64_t get(std::uint64_t salt) const noexcept {
    return std::atomic_ref<std::uint64_t>(word(salt)).load(std::memory_order_acquire);
  }

 private:
  std::uint64_t& word(std::uint64_t salt) const noexcept {
    return words_[salt & (generation_stripes - 1)];
  }
  std::uint64_t* words_ = nullptr;
};

}  // namespace distgraph::detail
