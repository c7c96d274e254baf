// Prefetcher: one epoch of batches made in order by background threads into a bounded window.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <iterator>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "distgraph/core/thread_priority.hpp"
#include "distgraph/core/timer.hpp"
#include "distgraph/core/trace.hpp"

namespace distgraph::detail {

/// Makes batches 0 .. num_batches-1 of one epoch with `produce(i)` and hands them out in
/// index order. With `num_threads` = 0 next() calls produce itself (synchronous); else
/// that many threads claim indices in order and work at most `depth` batches ahead of the
/// consumer (made, being made or waiting), so memory stays bounded and batch i is the
/// same whatever the thread count (produce must depend on i only). An exception thrown by
/// produce(i) is rethrown by the next() that would have returned batch i; later batches
/// are still handed out. The destructor stops the threads: each finishes the batch it is
/// making (bounded by the deadlines inside produce) and none starts another, so an epoch
/// abandoned midway never hangs. next() is for one consumer thread.
template <class Batch>
class Prefetcher {
 public:
  using produce_type = std::function<Batch(std::int64_t)>;

  /// Starts the threads, each under `priority` (apply_thread_priority).
  /// `depth` >= 1 (checked by the loaders).
  Prefetcher(std::int64_t num_batches, unsigned num_threads, std::int64_t depth,
             produce_type produce, ThreadPriority priority = {})
      : num_batches_(num_batches),
        depth_(depth < 1 ? 1 : depth),
        priority_(priority),
        produce_(std::move(produce)),
        slots_(static_cast<std::size_t>(depth_)) {
    if (num_threads == 0) return;
    threads_.reserve(num_threads);
    for (unsigned t = 0; t < num_threads; ++t) threads_.emplace_back([this] { work(); });
  }
  ~Prefetcher() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    can_claim_.notify_all();
    for (auto& t : threads_) t.join();
  }
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  std::int64_t num_batches() const noexcept { return num_batches_; }

  /// The next batch in index order, or nullopt after the last. Blocks until it is made;
  /// the time blocked is added to `wait_s`. Rethrows what produce threw for that batch.
  std::optional<Batch> next(double& wait_s) {
    if (consumed_ >= num_batches_) return std::nullopt;
    const std::int64_t i = consumed_;
    if (threads_.empty()) {
      ++consumed_;  // a batch that throws is passed over, as with threads
      return produce_(i);
    }
    Slot& s = slots_[static_cast<std::size_t>(i % depth_)];
    std::unique_lock lock(mu_);
    Stopwatch waited;
    made_.wait(lock, [&] { return s.ready; });
    wait_s += waited.seconds();
    std::optional<Batch> out = std::move(s.batch);
    const std::exception_ptr error = s.error;
    s = Slot{};
    ++consumed_;
    lock.unlock();
    can_claim_.notify_all();
    if (error) std::rethrow_exception(error);
    return out;
  }

 private:
  struct Slot {
    bool ready = false;
    std::optional<Batch> batch;
    std::exception_ptr error;
  };

  void work() {
    trace::name_thread("prefetch");
    apply_thread_priority(priority_);
    for (;;) {
      std::int64_t i = 0;
      {
        std::unique_lock lock(mu_);
        // Claim the next index once it is within `depth` of the consumer: slot i % depth
        // is then free, since batch i - depth was consumed.
        can_claim_.wait(lock, [&] {
          return stop_ || claimed_ >= num_batches_ || claimed_ < consumed_ + depth_;
        });
        if (stop_ || claimed_ >= num_batches_) return;
        i = claimed_++;
      }
      Slot done;
      done.ready = true;
      try {
        done.batch.emplace(produce_(i));
      } catch (...) {
        done.error = std::current_exception();
      }
      {
        std::lock_guard lock(mu_);
        slots_[static_cast<std::size_t>(i % depth_)] = std::move(done);
      }
      made_.notify_all();
    }
  }

  const std::int64_t num_batches_;
  const std::int64_t depth_;
  const ThreadPriority priority_;
  const produce_type produce_;
  std::mutex mu_;
  std::condition_variable can_claim_, made_;
  std::vector<Slot> slots_;
  std::int64_t claimed_ = 0;   // next index a thread takes (guarded by mu_)
  std::int64_t consumed_ = 0;  // next index next() returns (written under mu_ with threads)
  bool stop_ = false;
  std::vector<std::thread> threads_;  // last: started after everything they read
};

/// `for (auto& batch : loader.epoch(e))`: an input range over a loader's next().
template <class Loader, class Batch>
class EpochRange {
 public:
  class iterator {
   public:
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    explicit iterator(Loader* l) : loader_(l) { ++*this; }
    Batch& operator*() const { return *current_; }
    Batch* operator->() const { return &*current_; }
    iterator& operator++() {
      // The batch in hand is done with: its buffers make a later one.
      if (current_) loader_->recycle(std::move(*current_));
      current_ = loader_->next();
      return *this;
    }
    void operator++(int) { ++*this; }
    bool operator==(std::default_sentinel_t) const { return !current_.has_value(); }

   private:
    Loader* loader_ = nullptr;
    mutable std::optional<Batch> current_;
  };

  explicit EpochRange(Loader& l) : loader_(&l) {}
  iterator begin() { return iterator(loader_); }
  std::default_sentinel_t end() const noexcept { return {}; }

 private:
  Loader* loader_;
};

}  // namespace distgraph::detail
