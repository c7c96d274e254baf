// parallel_for over index ranges on plain std::threads, deterministic chunking.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

namespace distgraph {

/// Number of worker threads to use when the caller passes 0: the hardware count.
inline unsigned default_num_threads() noexcept {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

/// Splits [begin, end) into `num_chunks` contiguous chunks of near-equal size.
/// Chunk c is [chunk_begin(c), chunk_begin(c + 1)); the split depends only on the
/// arguments, so results that are combined per chunk are reproducible.
struct ChunkPlan {
  std::int64_t begin = 0, end = 0;
  unsigned num_chunks = 1;
  std::int64_t chunk_begin(unsigned c) const noexcept {
    // n / k * c + (n % k) * c / k == n * c / k without overflowing n * c.
    const std::int64_t n = end - begin, k = num_chunks;
    return begin + n / k * c + (n % k) * c / k;
  }
};

/// Number of chunks parallel_chunks will use for these arguments.
inline unsigned plan_chunks(std::int64_t begin, std::int64_t end, unsigned num_threads,
                            std::int64_t min_per_thread = 1 << 14) noexcept {
  if (num_threads == 0) num_threads = default_num_threads();
  const std::int64_t n = std::max<std::int64_t>(0, end - begin);
  const auto by_size = static_cast<unsigned>(std::max<std::int64_t>(1, n / min_per_thread));
  return std::max(1u, std::min(num_threads, by_size));
}

/// Runs `fn(chunk_index, chunk_begin, chunk_end)` for each chunk of [begin, end) on
/// up to `num_threads` threads (0 = hardware count; ranges below `min_per_thread`
/// run on fewer). Blocks until all chunks finish; rethrows the first exception.
template <class Fn>
void parallel_chunks(std::int64_t begin, std::int64_t end, unsigned num_threads, Fn&& fn,
                     std::int64_t min_per_thread = 1 << 14) {
  const unsigned chunks = plan_chunks(begin, end, num_threads, min_per_thread);
  ChunkPlan plan{begin, end, chunks};
  if (chunks == 1) {
    fn(0u, begin, end);
    return;
  }
  std::vector<std::exception_ptr> errors(chunks);
  std::vector<std::thread> threads;
  threads.reserve(chunks - 1);
  for (unsigned c = 1; c < chunks; ++c)
    threads.emplace_back([&, c] {
      try {
        fn(c, plan.chunk_begin(c), plan.chunk_begin(c + 1));
      } catch (...) {
        errors[c] = std::current_exception();
      }
    });
  try {
    fn(0u, plan.chunk_begin(0), plan.chunk_begin(1));
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

/// Runs `fn(i)` for every i in [begin, end) across threads. Blocks; rethrows.
template <class Fn>
void parallel_for(std::int64_t begin, std::int64_t end, unsigned num_threads, Fn&& fn) {
  parallel_chunks(begin, end, num_threads, [&](unsigned, std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) fn(i);
  });
}

}  // namespace distgraph
