// prefetch_lines: ask for a row's cache lines ahead of the copy that would miss on them.
#pragma once

#include <cstddef>

namespace distgraph::detail {

/// How many rows ahead of the one being copied a row gather or scatter asks for a later
/// row's lines. A row at a random (or strided) place is a cache and TLB miss, and a copy
/// alone keeps little more than one row's misses in flight. Measured on bench_kvstore's
/// pull_colocated (1000 random rows x 100 float32 of a 200 MB mapping, 2-core AMD EPYC VM,
/// runs where the plain gather bound read 20-21.5 M rows/s): 13.1-13.6 M rows/s without
/// prefetching, 20-25 M with 8 rows ahead; 4 and 16 ahead were within the noise of 8.
inline constexpr std::size_t prefetch_rows_ahead = 8;

/// A longer row has only its first KiB asked for: the hardware's stream prefetcher follows
/// the rest once the copy walks it, and more lines ahead would crowd the misses the core
/// can track.
inline constexpr std::size_t prefetch_max_bytes = 1024;

/// Asks for the cache lines of the `n` bytes at `p` (the first prefetch_max_bytes of them)
/// without waiting, to be read (Write = false) or written. A hint only: it never faults,
/// and n = 0 asks for nothing.
template <bool Write = false>
inline void prefetch_lines(const void* p, std::size_t n) noexcept {
  if (n == 0) return;
  const auto* b = static_cast<const std::byte*>(p);
  if (n > prefetch_max_bytes) n = prefetch_max_bytes;
  for (std::size_t o = 0; o < n; o += 64) __builtin_prefetch(b + o, Write ? 1 : 0);
  __builtin_prefetch(b + n - 1, Write ? 1 : 0);  // a row's last line when it straddles one
}

}  // namespace distgraph::detail
