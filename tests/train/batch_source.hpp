// Test helper: a minimal BatchSource (the shape of NodeDataLoader) over any sampler/fetcher.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "distgraph/core/timer.hpp"
#include "distgraph/sampling/block.hpp"
#include "distgraph/sampling/multi_layer.hpp"
#include "distgraph/sampling/rng.hpp"

namespace distgraph::test {

struct TestTimings {
  double sample_s = 0, fetch_s = 0, wait_s = 0;
};

/// The fields of NodeBatch the trainer reads.
struct TestBatch {
  std::int64_t index = 0;
  std::vector<std::int64_t> input_nodes, output_nodes;
  std::vector<Block> blocks;
  std::vector<float> features;
  std::int64_t feat_dim = 0;
  std::vector<std::int64_t> labels;
  TestTimings timings;
};

/// Splits `seeds` into batches (shuffled per epoch from `seed` when asked); batch b of
/// epoch e is sampled by `sample(seeds, key)` with key {seed, e, rank, b} and filled by
/// `fetch(batch)` (features and labels of its input / output nodes).
class TestBatchSource {
 public:
  using SampleFn = std::function<MiniBatch(std::span<const std::int64_t>, const SampleKey&)>;
  using FetchFn = std::function<void(TestBatch&)>;

  TestBatchSource(std::vector<std::int64_t> seeds, std::int64_t batch_size, bool shuffle,
                  std::uint64_t seed, std::int64_t rank, SampleFn sample, FetchFn fetch)
      : seeds_(std::move(seeds)),
        batch_size_(batch_size),
        shuffle_(shuffle),
        seed_(seed),
        rank_(rank),
        sample_(std::move(sample)),
        fetch_(std::move(fetch)) {}

  std::int64_t num_batches() const {
    return (static_cast<std::int64_t>(seeds_.size()) + batch_size_ - 1) / batch_size_;
  }

  void begin_epoch(std::int64_t epoch) {
    epoch_ = epoch;
    next_ = 0;
    order_ = seeds_;
    if (shuffle_) {
      std::mt19937_64 rng(seed_ * 1000003u + static_cast<std::uint64_t>(epoch) * 7919u +
                          static_cast<std::uint64_t>(rank_));
      std::shuffle(order_.begin(), order_.end(), rng);
    }
  }

  std::optional<TestBatch> next() {
    if (next_ >= num_batches()) return std::nullopt;
    const auto b = next_++;
    const auto begin = static_cast<std::size_t>(b * batch_size_);
    const auto end = std::min(order_.size(), begin + static_cast<std::size_t>(batch_size_));
    const std::span<const std::int64_t> seeds(order_.data() + begin, end - begin);
    TestBatch out;
    out.index = b;
    Stopwatch clock;
    MiniBatch mb =
        sample_(seeds, SampleKey{.seed = seed_, .epoch = epoch_, .rank = rank_, .batch = b});
    out.timings.sample_s = clock.seconds();
    out.input_nodes = std::move(mb.input_nodes);
    out.output_nodes = std::move(mb.output_nodes);
    out.blocks = std::move(mb.blocks);
    clock.reset();
    fetch_(out);
    out.timings.fetch_s = clock.seconds();
    return out;
  }

 private:
  std::vector<std::int64_t> seeds_, order_;
  std::int64_t batch_size_;
  bool shuffle_;
  std::uint64_t seed_;
  std::int64_t rank_;
  SampleFn sample_;
  FetchFn fetch_;
  std::int64_t epoch_ = 0, next_ = 0;
};

/// Copies rows `ids` of a row-major [*, dim] matrix.
inline std::vector<float> gather_rows(std::span<const float> feat, std::int64_t dim,
                                      std::span<const std::int64_t> ids) {
  std::vector<float> out(ids.size() * static_cast<std::size_t>(dim));
  for (std::size_t i = 0; i < ids.size(); ++i)
    std::copy_n(feat.begin() + ids[i] * dim, dim,
                out.begin() + static_cast<std::ptrdiff_t>(i) * dim);
  return out;
}

}  // namespace distgraph::test
