// Process-wide allocator settings for programs that allocate and free large buffers in a loop.
#pragma once

#include <malloc.h>

namespace distgraph {

/// Makes glibc's malloc keep freed memory for reuse instead of handing it back to the kernel:
/// blocks up to 32 MiB come from the heap (not one mmap each), the heap is never trimmed, and
/// it grows 64 MiB at a time. A training batch allocates and frees tens of MB of tensors and
/// frames; handed back, every batch faults them in again page by page, which cost a
/// distributed epoch a quarter of its time on a VM (docs/PERFORMANCE.md). The price: the
/// process keeps its peak heap for its whole life. Called by `initialize()` (see
/// InitOptions::retain_freed_memory), `distgraph serve` and `distgraph train`; a no-op with
/// another allocator preloaded (jemalloc, tcmalloc ignore mallopt). Returns false if glibc
/// refused a setting. Safe to call more than once and from any thread.
inline bool retain_freed_memory() noexcept {
#if defined(__GLIBC__)
  constexpr int mmap_threshold = 32 << 20;  // glibc's ceiling for M_MMAP_THRESHOLD on 64-bit
  constexpr int top_pad = 64 << 20;
  bool ok = ::mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1;
  ok = ::mallopt(M_TRIM_THRESHOLD, -1) == 1 && ok;  // -1 = never trim (as size_t: the maximum)
  ok = ::mallopt(M_TOP_PAD, top_pad) == 1 && ok;
  return ok;
#else
  return true;
#endif
}

}  // namespace distgraph
