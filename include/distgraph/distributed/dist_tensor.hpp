// DistTensor: a 2-D tensor whose rows live on the servers that own them.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "distgraph/core/dtype.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/server/protocol.hpp"

namespace distgraph {

/// Rows of element type T indexed by global node (or edge) ID, stored on the servers of
/// the partitions that own them and reached through a KVClient. Cheap to copy (shares
/// the client). Every call validates IDs before sending and blocks until all owners
/// answered (see KVClient for errors and deadlines).
template <class T, class Client>
class DistTensor {
 public:
  DistTensor() = default;

  /// Creates the tensor on all servers, or reuses an identical one. Collective: every
  /// trainer calls it with the same arguments; returns once all have (DGL's DistTensor
  /// constructor). `init` fills new rows from a (seed, row, column) hash.
  static DistTensor create(std::shared_ptr<Client> client, std::string name, RowKind kind,
                           std::int64_t cols, InitSpec init = {}) {
    CreateTensorRequest q{name, dtype_of<T>, kind, client->num_rows(kind, name), cols, init};
    client->create(q);
    return DistTensor(std::move(client), std::move(name), kind, cols);
  }
  /// A handle on an existing tensor (e.g. node features a server loaded). Throws
  /// NotFound when partition 0 has no tensor `name`, DTypeError when it is not of T.
  static DistTensor open(std::shared_ptr<Client> client, std::string name, RowKind kind) {
    for (const auto& s : client->list(0)) {
      if (s.name != name) continue;
      if (s.dtype != dtype_of<T>)
        throw DTypeError("tensor '" + name + "'", "stored as " + std::string(dtype_name(s.dtype)) +
                                                      "; requested " +
                                                      std::string(dtype_name(dtype_of<T>)));
      return DistTensor(std::move(client), std::move(name), kind, s.cols);
    }
    throw NotFound("tensor '" + name + "'", "not on the servers");
  }

  const std::string& name() const noexcept { return name_; }
  RowKind kind() const noexcept { return kind_; }
  /// Rows over all partitions: the nodes (edges) of its type for typed data.
  std::int64_t num_rows() const { return client_->num_rows(kind_, name_); }
  std::int64_t num_cols() const noexcept { return cols_; }
  DType dtype() const noexcept { return dtype_of<T>; }
  Client& client() const noexcept { return *client_; }

  /// Rows `global_ids` into `out` (global_ids.size() * num_cols() values, request order).
  void pull(std::span<const std::int64_t> global_ids, std::span<T> out) const {
    client_->pull(name_, kind_, global_ids, std::as_writable_bytes(out), row_bytes());
  }
  /// Rows `global_ids` as a new vector (not for bool: std::vector<bool> has no array to
  /// fill; pull into a span instead).
  std::vector<T> pull(std::span<const std::int64_t> global_ids) const
      requires(!std::is_same_v<T, bool>) {
    std::vector<T> out(global_ids.size() * static_cast<std::size_t>(cols_));
    pull(global_ids, out);
    return out;
  }
  /// Replaces rows `global_ids`; a row listed twice ends as its last listing.
  void push(std::span<const std::int64_t> global_ids, std::span<const T> rows) const {
    client_->push(name_, kind_, global_ids, std::as_bytes(rows), row_bytes(), false);
  }
  /// Adds `rows` element-wise, atomically per row on the server (no lost updates); a
  /// row listed twice gets both additions.
  void push_add(std::span<const std::int64_t> global_ids, std::span<const T> rows) const {
    client_->push(name_, kind_, global_ids, std::as_bytes(rows), row_bytes(), true);
  }

 private:
  DistTensor(std::shared_ptr<Client> client, std::string name, RowKind kind, std::int64_t cols)
      : client_(std::move(client)), name_(std::move(name)), kind_(kind), cols_(cols) {}
  std::size_t row_bytes() const noexcept { return static_cast<std::size_t>(cols_) * sizeof(T); }

  std::shared_ptr<Client> client_;
  std::string name_;
  RowKind kind_ = RowKind::node;
  std::int64_t cols_ = 0;
};

/// Rows of an existing tensor in whatever dtype the servers hold it, as raw bytes: what
/// reads a tensor of a dtype only known at run time (node features stored as float32,
/// float16 or bfloat16, see `distgraph partition --feat-dtype`) and converts rows itself.
/// Rows cross the wire in the stored dtype. Cheap to copy; calls block like DistTensor's.
template <class Client>
class RawDistTensor {
 public:
  RawDistTensor() = default;

  /// A handle on tensor `name` as partition 0 holds it. Throws NotFound when it has none.
  static RawDistTensor open(std::shared_ptr<Client> client, std::string name, RowKind kind) {
    for (const auto& s : client->list(0))
      if (s.name == name) return RawDistTensor(std::move(client), std::move(name), kind, s);
    throw NotFound("tensor '" + name + "'", "not on the servers");
  }

  const std::string& name() const noexcept { return name_; }
  RowKind kind() const noexcept { return kind_; }
  std::int64_t num_rows() const { return client_->num_rows(kind_, name_); }
  std::int64_t num_cols() const noexcept { return cols_; }
  /// The dtype the servers store (and send) the rows in.
  DType dtype() const noexcept { return dtype_; }
  std::size_t row_bytes() const noexcept {
    return static_cast<std::size_t>(cols_) * dtype_size(dtype_);
  }
  Client& client() const noexcept { return *client_; }

  /// Rows `global_ids` into `out` (global_ids.size() * row_bytes() bytes, request order).
  void pull(std::span<const std::int64_t> global_ids, std::span<std::byte> out) const {
    client_->pull(name_, kind_, global_ids, out, row_bytes());
  }

 private:
  template <class Spec>
  RawDistTensor(std::shared_ptr<Client> client, std::string name, RowKind kind, const Spec& s)
      : client_(std::move(client)), name_(std::move(name)), kind_(kind), cols_(s.cols),
        dtype_(s.dtype) {}

  std::shared_ptr<Client> client_;
  std::string name_;
  RowKind kind_ = RowKind::node;
  std::int64_t cols_ = 0;
  DType dtype_ = DType::float32;
};

}  // namespace distgraph
