// LoaderBase: what both data loaders do per epoch (seed order, batching, prefetch, next).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/loaders/detail/prefetcher.hpp"
#include "distgraph/loaders/loader_features.hpp"
#include "distgraph/loaders/loader_options.hpp"
#include "distgraph/sampling/rng.hpp"

namespace distgraph::detail {

/// The epoch machinery of a data loader whose read-only `State` has `graph`, `ids` (the
/// seeds), `fanouts` and `options` (LoaderOptions): epoch e orders the seeds with
/// epoch_order, cuts batches of batch_size, and makes batch b with `make(state, seeds,
/// SampleKey{seed, e, rank, b}, spares)` through a Prefetcher, filling in the Batch's
/// `epoch`, `index` and `timings.wait_s`; `spares` holds the feature buffers recycle() took
/// back. The state is shared with the prefetch threads, so a
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
  /// joined first. Then starts this epoch's threads. With options().prefetch_next_epoch,
  /// epoch e + 1 after epoch e was read to its end keeps the threads, which are already
  /// making its first batches.
  void begin_epoch(std::int64_t epoch) {
    const std::int64_t batches = num_batches();
    if (prefetcher_ && across_ && left_ == 0 && epoch == epoch_ + 1) {
      epoch_ = epoch;
      left_ = batches;
      return;
    }
    prefetcher_.reset();
    const LoaderOptions& o = state_->options;
    epoch_ = epoch;
    left_ = batches;
    across_ = o.prefetch_next_epoch && o.num_prefetch_threads > 0 && batches > 0;
    // Across epochs item i is batch i % batches of epoch `epoch + i / batches`, up to the
    // last epoch when it is known (else without end); the prefetch window still bounds
    // how far the threads run ahead.
    std::int64_t items = batches;
    if (across_ && !o.last_epoch)
      items = std::numeric_limits<std::int64_t>::max();
    else if (across_ && *o.last_epoch > epoch)
      items = (*o.last_epoch - epoch + 1) * batches;
    auto orders = std::make_shared<EpochOrders>();
    prefetcher_ = std::make_unique<Prefetcher<Batch>>(
        items, o.num_prefetch_threads, o.prefetch_depth,
        [state = state_, make = make_, spares = spares_, orders, epoch, batches](std::int64_t i) {
          const LoaderOptions& opt = state->options;
          const std::int64_t e = epoch + i / batches, b = i % batches;
          const auto order = orders->of(*state, e);
          const auto begin = static_cast<std::size_t>(b * opt.batch_size);
          const auto end =
              std::min(order->size(), begin + static_cast<std::size_t>(opt.batch_size));
          const SampleKey key{.seed = opt.seed, .epoch = e, .rank = opt.rank, .batch = b};
          Batch out =
              make(*state, std::span<const std::int64_t>(*order).subspan(begin, end - begin), key,
                   *spares);
          out.epoch = e;
          out.index = b;
          return out;
        },
        ThreadPriority{.nice = o.prefetch_nice, .batch = o.prefetch_sched_batch});
  }

  /// The epoch's next batch in order, or nullopt after its last. Blocks until the batch
  /// is made (timings.wait_s says how long). Rethrows what making this batch threw
  /// (RemoteError, TimeoutError, PeerLost from the servers); the batch after it can still
  /// be asked for. Throws InvalidArgument before the first begin_epoch.
  std::optional<Batch> next() {
    if (!prefetcher_)
      throw InvalidArgument(who_ + "::next: no epoch begun; call begin_epoch first");
    if (left_ == 0) {
      // No later batch of this loader's threads will use the kept buffers (an evaluation's
      // may be large, and the loader may live long after): free them. Threads running on
      // into the next epoch keep theirs.
      const auto& last = state_->options.last_epoch;
      if (!across_ || (last && epoch_ >= *last)) spares_->clear();
      return std::nullopt;
    }
    --left_;  // before: a batch that throws is passed over
    double wait_s = 0;
    std::optional<Batch> b = prefetcher_->next(wait_s);
    if (b) b->timings.wait_s = wait_s;
    return b;
  }

  /// Hands back a batch its consumer is done with: a later batch that fits is made in its
  /// feature buffer, without a new allocation and its zero-fill. Optional (a batch dropped
  /// instead is simply freed); views of `b.features` must not be used after it. The range
  /// of epoch() recycles each batch as it moves to the next.
  void recycle(Batch&& b) { spares_->give(std::move(b.features)); }

  /// begin_epoch(epoch), then the epoch's batches as a range:
  /// `for (auto& batch : loader.epoch(e))`. Leaving the loop early abandons the epoch.
  EpochRange<LoaderBase, Batch> epoch(std::int64_t epoch) {
    begin_epoch(epoch);
    return EpochRange<LoaderBase, Batch>(*this);
  }

 protected:
  using make_type = Batch (*)(const State&, std::span<const std::int64_t>, const SampleKey&,
                              SpareBuffers&);

  LoaderBase(std::shared_ptr<const State> state, make_type make, std::string who)
      : state_(std::move(state)),
        make_(make),
        who_(std::move(who)),
        // Enough for every batch that can be queued or in the making at once, plus the
        // consumer's.
        spares_(std::make_shared<SpareBuffers>(
            static_cast<std::size_t>(state_->options.prefetch_depth) +
            state_->options.num_prefetch_threads + 1)) {}

  const State& state() const noexcept { return *state_; }

 private:
  std::shared_ptr<const State> state_;
  make_type make_;
  std::string who_;
  std::shared_ptr<SpareBuffers> spares_;
  /// The seed order of the epochs the prefetch threads are in (two around an epoch's end;
  /// more only when the window is longer than an epoch, which then recomputes some), made
  /// once per epoch.
  class EpochOrders {
   public:
    std::shared_ptr<const std::vector<std::int64_t>> of(const State& s, std::int64_t epoch) {
      std::lock_guard lock(mu_);
      for (auto& [e, order] : kept_)
        if (order && e == epoch) return order;
      const LoaderOptions& o = s.options;
      auto made = std::make_shared<const std::vector<std::int64_t>>(
          epoch_order(s.ids, o.shuffle, o.seed, epoch, o.rank));
      kept_[next_++ % kept_.size()] = {epoch, made};
      return made;
    }

   private:
    std::mutex mu_;
    std::array<std::pair<std::int64_t, std::shared_ptr<const std::vector<std::int64_t>>>, 2>
        kept_{};
    std::size_t next_ = 0;
  };

  std::unique_ptr<Prefetcher<Batch>> prefetcher_;
  std::int64_t epoch_ = 0;  ///< the epoch begun last
  std::int64_t left_ = 0;   ///< its batches not yet handed out
  bool across_ = false;     ///< the prefetcher runs on into the following epochs
};

}  // namespace distgraph::detail
