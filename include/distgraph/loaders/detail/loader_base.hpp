// LoaderBase: what both data loaders do per epoch (seed order, batching, prefetch, next).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/loaders/detail/prefetcher.hpp"
#include "distgraph/loaders/loader_options.hpp"
#include "distgraph/sampling/rng.hpp"

namespace distgraph::detail {

/// The epoch machinery of a data loader whose read-only `State` has `graph`, `ids` (the
/// seeds), `fanouts` and `options` (LoaderOptions): epoch e orders the seeds with
/// epoch_order, cuts batches of batch_size, and makes batch b with `make(state, seeds,
/// SampleKey{seed, e, rank, b})` through a Prefetcher, filling in the Batch's `epoch`,
/// `index` and `timings.wait_s`. The state is shared with the prefetch threads, so a
/// loader can move while they run. One consumer thread per loader.
template <class State, class Batch>
class LoaderBase {
 public:
  using batch_type = Batch;

  /// Batches per epoch: ceil(seeds / batch_size), or floor with drop_last.
  std::int64_t num_batches() const noexcept {
    const LoaderOptions& o = state_->options;
    const auto n = static_cast<std::int64_t>(state_->ids.size());
    return o.drop_last ? n / o.batch_size : (n + o.batch_size - 1) / o.batch_size;
  }
  const LoaderOptions& options() const noexcept { return state_->options; }
  const std::vector<std::int64_t>& fanouts() const noexcept { return state_->fanouts; }
  const auto& graph() const noexcept { return state_->graph; }

  /// Starts epoch `epoch` (any integer; an epoch revisited gives the same batches),
  /// abandoning the current one: its prefetch threads finish the batch in hand and are
  /// joined first. Then starts this epoch's threads.
  void begin_epoch(std::int64_t epoch) {
    prefetcher_.reset();
    const LoaderOptions& o = state_->options;
    auto order = std::make_shared<const std::vector<std::int64_t>>(
        epoch_order(state_->ids, o.shuffle, o.seed, epoch, o.rank));
    prefetcher_ = std::make_unique<Prefetcher<Batch>>(
        num_batches(), o.num_prefetch_threads, o.prefetch_depth,
        [state = state_, make = make_, order, epoch](std::int64_t b) {
          const LoaderOptions& opt = state->options;
          const auto begin = static_cast<std::size_t>(b * opt.batch_size);
          const auto end =
              std::min(order->size(), begin + static_cast<std::size_t>(opt.batch_size));
          const SampleKey key{.seed = opt.seed, .epoch = epoch, .rank = opt.rank, .batch = b};
          Batch out =
              make(*state, std::span<const std::int64_t>(*order).subspan(begin, end - begin), key);
          out.epoch = epoch;
          out.index = b;
          return out;
        });
  }

  /// The epoch's next batch in order, or nullopt after its last. Blocks until the batch
  /// is made (timings.wait_s says how long). Rethrows what making this batch threw
  /// (RemoteError, TimeoutError, PeerLost from the servers); the batch after it can still
  /// be asked for. Throws InvalidArgument before the first begin_epoch.
  std::optional<Batch> next() {
    if (!prefetcher_)
      throw InvalidArgument(who_ + "::next: no epoch begun; call begin_epoch first");
    double wait_s = 0;
    std::optional<Batch> b = prefetcher_->next(wait_s);
    if (b) b->timings.wait_s = wait_s;
    return b;
  }

  /// begin_epoch(epoch), then the epoch's batches as a range:
  /// `for (auto& batch : loader.epoch(e))`. Leaving the loop early abandons the epoch.
  EpochRange<LoaderBase, Batch> epoch(std::int64_t epoch) {
    begin_epoch(epoch);
    return EpochRange<LoaderBase, Batch>(*this);
  }

 protected:
  using make_type = Batch (*)(const State&, std::span<const std::int64_t>, const SampleKey&);

  LoaderBase(std::shared_ptr<const State> state, make_type make, std::string who)
      : state_(std::move(state)), make_(make), who_(std::move(who)) {}

  const State& state() const noexcept { return *state_; }

 private:
  std::shared_ptr<const State> state_;
  make_type make_;
  std::string who_;
  std::unique_ptr<Prefetcher<Batch>> prefetcher_;
};

}  // namespace distgraph::detail
