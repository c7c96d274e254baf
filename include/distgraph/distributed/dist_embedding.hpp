// DistEmbedding: learnable float32 rows on the servers, updated by sparse optimizers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/distributed/dist_tensor.hpp"
#include "distgraph/server/protocol.hpp"

namespace distgraph {

/// Gradients of one embedding, deduplicated: `ids` unique and ascending, `grads` their
/// summed rows (ids.size() x dim).
struct SparseGradient {
  std::vector<std::int64_t> ids;
  std::vector<float> grads;
};

/// A learnable embedding per node (or edge): a float32 DistTensor initialised on the
/// servers, plus the trainer-side record of which rows a mini-batch touched and their
/// gradients. A sparse optimizer (SparseAdagrad, SparseAdam) consumes the record and
/// applies the update on the servers. Thread-safe; copies share the record.
template <class Client>
class DistEmbedding {
 public:
  DistEmbedding() = default;

  /// Creates (collectively, like DistTensor::create) an embedding of `dim` columns with
  /// rows drawn by `init` (default uniform in [-1, 1), as DGL's examples initialise).
  static DistEmbedding create(std::shared_ptr<Client> client, std::string name, std::int64_t dim,
                              InitSpec init = {InitKind::uniform, -1.0, 1.0, 0},
                              RowKind kind = RowKind::node) {
    DistEmbedding e;
    e.table_ =
        DistTensor<float, Client>::create(std::move(client), std::move(name), kind, dim, init);
    e.record_ = std::make_shared<Record>();
    return e;
  }

  const std::string& name() const noexcept { return table_.name(); }
  std::int64_t dim() const noexcept { return table_.num_cols(); }
  std::int64_t num_rows() const { return table_.num_rows(); }
  const DistTensor<float, Client>& table() const noexcept { return table_; }

  /// Each server saves its own rows of this embedding, and of the sparse optimizer state
  /// kept beside it, under checkpoint `tag` in its checkpoint folder (KVClient::
  /// save_tensors). Call it from one trainer while no optimizer steps this embedding.
  void save(const std::string& tag) const { table_.client().save_tensors(tag, {name()}, true); }

  /// Each server loads its rows and optimizer state saved under `tag` back; state
  /// created after that save is zeroed. One trainer calls it, then all meet at a barrier.
  void load(const std::string& tag) const { table_.client().load_tensors(tag, {name()}, true); }

  /// Current rows `global_ids` (global_ids.size() x dim()).
  std::vector<float> pull(std::span<const std::int64_t> global_ids) const {
    return table_.pull(global_ids);
  }

  /// Records d(loss)/d(rows) for rows `global_ids` (global_ids.size() x dim()); the same
  /// ID may appear several times and across calls: the optimizer sums them.
  void record_gradient(std::span<const std::int64_t> global_ids, std::span<const float> grads) {
    if (grads.size() != global_ids.size() * static_cast<std::size_t>(dim()))
      throw ShapeError("embedding '" + name() + "' gradient",
                       std::to_string(grads.size()) + " values for " +
                           std::to_string(global_ids.size()) + " rows of " + std::to_string(dim()));
    // Global IDs of any type: a typed embedding's servers refuse IDs of another type.
    const std::int64_t n = table_.client().num_rows(table_.kind());
    for (auto id : global_ids)
      if (id < 0 || id >= n) throw IdOutOfRange("embedding '" + name() + "' row", id, 0, n);
    std::lock_guard lock(record_->mu);
    record_->ids.insert(record_->ids.end(), global_ids.begin(), global_ids.end());
    record_->grads.insert(record_->grads.end(), grads.begin(), grads.end());
  }

  /// Takes the recorded gradients (clearing the record), duplicates summed.
  SparseGradient take_gradients() {
    std::vector<std::int64_t> ids;
    std::vector<float> grads;
    {
      std::lock_guard lock(record_->mu);
      ids.swap(record_->ids);
      grads.swap(record_->grads);
    }
    const auto d = static_cast<std::size_t>(dim());
    std::vector<std::size_t> order(ids.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return ids[a] < ids[b]; });
    SparseGradient out;
    for (std::size_t i : order) {
      if (out.ids.empty() || out.ids.back() != ids[i]) {
        out.ids.push_back(ids[i]);
        out.grads.insert(out.grads.end(), grads.begin() + static_cast<std::ptrdiff_t>(i * d),
                         grads.begin() + static_cast<std::ptrdiff_t>((i + 1) * d));
      } else {
        float* row = out.grads.data() + (out.ids.size() - 1) * d;
        for (std::size_t c = 0; c < d; ++c) row[c] += grads[i * d + c];
      }
    }
    return out;
  }

 private:
  struct Record {
    std::mutex mu;
    std::vector<std::int64_t> ids;
    std::vector<float> grads;
  };
  DistTensor<float, Client> table_;
  std::shared_ptr<Record> record_;
};

/// A sparse optimizer over DistEmbeddings, applied on the servers (as DGL's
/// dgl.distributed.optim does): step() deduplicates each embedding's recorded rows, sums
/// their gradients and sends one sparse_step per owning partition. Per-row state is
/// created lazily on the servers and only rows with gradients are touched.
template <class Client>
class SparseOptimizer {
 public:
  SparseOptimizer(std::vector<DistEmbedding<Client>> embeddings, SparseOptimizerParams params)
      : embeddings_(std::move(embeddings)), params_(params) {
    if (!(params_.lr > 0)) throw InvalidArgument("sparse optimizer: lr must be > 0");
    if (!(params_.eps > 0)) throw InvalidArgument("sparse optimizer: eps must be > 0");
  }

  /// Applies the recorded gradients of every embedding; blocks until the servers did.
  void step() {
    for (auto& e : embeddings_) {
      const SparseGradient g = e.take_gradients();
      if (g.ids.empty()) continue;
      e.table().client().sparse_step(e.name(), e.table().kind(), g.ids, g.grads, e.dim(), params_);
    }
  }
  const SparseOptimizerParams& params() const noexcept { return params_; }
  void set_lr(double lr) {
    if (!(lr > 0)) throw InvalidArgument("sparse optimizer: lr must be > 0");
    params_.lr = lr;
  }

 private:
  std::vector<DistEmbedding<Client>> embeddings_;
  SparseOptimizerParams params_;
};

/// Element-wise Adagrad (torch.optim.Adagrad's rule: sum += g^2; w -= lr g / (sqrt(sum)
/// + eps)) applied to the touched rows only.
template <class Client>
SparseOptimizer<Client> SparseAdagrad(std::vector<DistEmbedding<Client>> embeddings, double lr,
                                      double eps = 1e-10) {
  return SparseOptimizer<Client>(std::move(embeddings),
                                 {.kind = OptimizerKind::adagrad, .lr = lr, .eps = eps});
}

/// Lazy Adam (torch.optim.SparseAdam's rule, bias correction with a per-row step count).
template <class Client>
SparseOptimizer<Client> SparseAdam(std::vector<DistEmbedding<Client>> embeddings, double lr,
                                   double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8) {
  return SparseOptimizer<Client>(
      std::move(embeddings),
      {.kind = OptimizerKind::adam, .lr = lr, .eps = eps, .beta1 = beta1, .beta2 = beta2});
}

}  // namespace distgraph
