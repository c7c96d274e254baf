// KVServer: serves the named tensors one partition owns, addressed by global row ID.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/deadline.hpp"
#include "distgraph/core/dtype.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/partition/load_partition.hpp"
#include "distgraph/server/detail/init_values.hpp"
#include "distgraph/server/ownership.hpp"
#include "distgraph/server/protocol.hpp"
#include "distgraph/server/tensor_checkpoint.hpp"
#include "distgraph/storage/concepts.hpp"
#include "distgraph/transport/frame.hpp"
#include "distgraph/transport/message.hpp"

namespace distgraph {

/// Serves the tensors of partition `part_id`: create (idempotent), pull, push, push_add,
/// sparse optimizer steps, delete, list, save/load of its rows under a checkpoint tag,
/// barrier and shutdown (docs/WIRE.md lists the layouts). Rows are addressed by global node or edge
/// ID; the server converts them to its local rows through the partition book and refuses IDs it
/// does not own.
///
/// Thread-safe: transports call handle() from several threads. Never throws out of
/// handle(): every bad request gets an error reply naming what was wrong.
template <Storage S, PartitionBook Book = AnyPartitionBook>
class KVServer {
 public:
  using book_type = Book;
  using storage_type = S;

  /// `storage` may be shared with other servers and co-located trainers of this machine.
  KVServer(std::shared_ptr<S> storage, Book book, std::int32_t part_id)
      : storage_(std::move(storage)), book_(std::move(book)), part_id_(part_id) {
    const auto parts = book_.num_partitions();
    if (part_id_ < 0 || part_id_ >= parts)
      throw IdOutOfRange("server partition id", part_id_, 0, parts);
    spaces_ = detail::RowSpaces(book_, part_id_);
  }

  /// Answers one request; never throws.
  Reply handle(const Request& req) {
    try {
      switch (req.type) {
        case MsgType::hello:
          return Reply{};
        case MsgType::ping:
          require_empty_body(req.body, req.type);
          return Reply{};
        case MsgType::metadata:
          require_empty_body(req.body, req.type);
          return text_reply(metadata().dump());
        case MsgType::create_tensor:
          return on_create(req);
        case MsgType::delete_tensor:
          return on_delete(req);
        case MsgType::list_tensors:
          require_empty_body(req.body, req.type);
          return on_list();
        case MsgType::pull:
          return on_pull(req);
        case MsgType::push:
        case MsgType::push_add:
          return on_push(req);
        case MsgType::sparse_step:
          return on_sparse_step(req);
        case MsgType::save_tensors:
        case MsgType::load_tensors:
        case MsgType::remove_checkpoint:
          return on_checkpoint(req);
        case MsgType::barrier:
          return on_barrier(req);
        case MsgType::shutdown:
          require_empty_body(req.body, req.type);
          request_shutdown();
          return Reply{};
        default:
          return Reply::error(Status::unknown_message,
                              msg_type_name(req.type) + ": not served by this server");
      }
    } catch (const std::exception& e) {
      return error_reply(e, req.type);
    }
  }

  /// The server as a transport Handler (keeps `this` by reference: outlive the transport).
  Handler handler() {
    return [this](const Request& r) { return handle(r); };
  }

  /// Blocks until a shutdown request arrives or `deadline` passes; true on shutdown.
  bool wait_for_shutdown(Deadline deadline) {
    std::unique_lock lock(mu_);
    return cv_.wait_until(lock, deadline, [&] { return shutdown_; });
  }
  bool shutdown_requested() const {
    std::lock_guard lock(mu_);
    return shutdown_;
  }
  void request_shutdown() {
    {
      std::lock_guard lock(mu_);
      shutdown_ = true;
    }
    cv_.notify_all();
  }

  /// Facts trainers need: partition, counts, tensors. Extended by GraphServer.
  nlohmann::json metadata() const {
    nlohmann::json j = owner().to_json();
    nlohmann::json tensors = nlohmann::json::array();
    for (const auto& s : storage_->list())
      tensors.push_back({{"name", s.name},
                         {"dtype", std::string(dtype_name(s.dtype))},
                         {"rows", s.rows},
                         {"cols", s.cols}});
    j["tensors"] = tensors;
    if (const auto n = job_trainers_.load(std::memory_order_relaxed); n > 0) j["num_trainers"] = n;
    return j;
  }

  /// Declares the trainers of the whole job (`distgraph serve --trainers`), published in
  /// metadata as `num_trainers`: initialize() refuses a trainer whose world size differs
  /// (WorldSizeMismatch) before its first barrier, which would otherwise wait for trainers
  /// that never come or hold more handler threads than the server sized for. 0, the
  /// default, publishes nothing (in-process servers). Thread-safe.
  void set_job_trainers(std::int32_t n) noexcept {
    job_trainers_.store(n, std::memory_order_relaxed);
  }

  /// The largest reply this server builds (its transport's frame limit): a request whose
  /// reply would be larger is refused with frame_too_large before any of the work, so one
  /// request costs at most about this much memory (docs/WIRE.md, "Bounds"). Thread-safe.
  void set_max_reply_bytes(std::uint64_t n) noexcept {
    max_reply_bytes_.store(n, std::memory_order_relaxed);
  }
  std::uint64_t max_reply_bytes() const noexcept {
    return max_reply_bytes_.load(std::memory_order_relaxed);
  }
  /// Throws FrameTooLarge (frame_too_large) when a reply of `items` x `item_bytes` would
  /// pass max_reply_bytes() (or overflow).
  void check_reply_size(const std::string& subject, std::uint64_t items,
                        std::uint64_t item_bytes) const {
    std::uint64_t bytes = 0;
    const std::uint64_t limit = max_reply_bytes();
    if (__builtin_mul_overflow(items, item_bytes, &bytes))
      throw FrameTooLarge(subject + ": reply of " + std::to_string(items) + " x " +
                              std::to_string(item_bytes) + " bytes (overflows) refused",
                          std::numeric_limits<std::uint64_t>::max(), limit);
    if (bytes > limit)
      throw FrameTooLarge(subject + ": reply refused before building it", bytes, limit);
  }

  /// Where save_tensors writes and load_tensors reads: `dir/<tag>/part-<P>/`. The
  /// operator chooses it; clients only name a tag. Without one, those requests fail
  /// with a message saying so.
  void set_checkpoint_dir(const std::filesystem::path& dir) {
    std::lock_guard lock(checkpoint_mu_);
    checkpoint_.emplace(std::filesystem::absolute(dir), owner());
  }

  S& storage() noexcept { return *storage_; }
  const Book& book() const noexcept { return book_; }
  std::int32_t part_id() const noexcept { return part_id_; }
  /// Where typed data's rows start in this partition.
  const detail::RowSpaces& row_spaces() const noexcept { return spaces_; }

  /// Creates (or reuses) tensor `q` in this server's storage with its owned rows, filling
  /// a new one per q.init. Returns true when created. Throws on a layout mismatch.
  bool create(const CreateTensorRequest& q) {
    if (q.cols < 1 || q.cols > (1 << 24))
      throw InvalidArgument("tensor '" + q.name + "': " + std::to_string(q.cols) +
                            " columns; expected [1, 16777216]");
    if (!is_known_dtype(q.dtype))
      throw DTypeError("tensor '" + q.name + "'",
                       "unknown dtype code " + std::to_string(static_cast<int>(q.dtype)));
    if (q.kind != RowKind::node && q.kind != RowKind::edge)
      throw InvalidArgument("tensor '" + q.name + "': unknown row kind");
    check_init(q.name, q.init);
    // Typed data ("<type>/<name>") holds one row per node or edge of its type.
    const detail::RowSpace space = spaces_.of(q.name, q.kind);
    if (q.rows != space.global)
      throw ShapeError("tensor '" + q.name + "'",
                       std::to_string(q.rows) + " rows; the graph has " +
                           std::to_string(space.global) +
                           (q.kind == RowKind::node ? " nodes" : " edges") +
                           (space.type < 0 ? "" : " of the tensor's type"));
    TensorSpec spec{q.name, q.dtype, space.rows, q.cols};
    if (q.init.kind != InitKind::zeros && q.dtype != DType::float32 && q.dtype != DType::float64)
      throw DTypeError("tensor '" + q.name + "'", "random initialisation needs a float dtype");
    // Serialise creation so that exactly one creator initialises the rows.
    std::lock_guard lock(create_mu_);
    if (!storage_->create(spec)) return false;
    if (q.init.kind != InitKind::zeros) initialise(spec, space, q.init);
    return true;
  }

 private:
  /// This partition and the graph's sizes: metadata's first fields, and what a tensor
  /// checkpoint must agree with to be loaded.
  CheckpointOwner owner() const {
    CheckpointOwner o;
    o.part_id = part_id_;
    o.num_parts = book_.num_partitions();
    o.num_nodes = book_.num_nodes();
    o.num_edges = book_.num_edges();
    o.owned_nodes = book_.num_owned_nodes(PartId{part_id_});
    o.owned_edges = book_.num_owned_edges(PartId{part_id_});
    return o;
  }

  static bool is_known_dtype(DType t) {
    for (DType d : all_dtypes)
      if (d == t) return true;
    return false;
  }

  static Reply text_reply(const std::string& s) {
    std::vector<std::byte> b(s.size());
    std::memcpy(b.data(), s.data(), s.size());
    return Reply{Status::ok, Message::owning(std::move(b))};
  }

  /// `v` as "%g" prints it ("1e-10", "inf", "nan"): std::to_string would show 1e-10 as 0.
  static std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
  }

  /// Throws InvalidArgument for an init a request may not ask for: an unknown kind,
  /// non-finite bounds (they would fill rows with inf or NaN), uniform with b < a, normal
  /// with a negative standard deviation.
  static void check_init(const std::string& name, const InitSpec& init) {
    const auto kind = static_cast<unsigned>(init.kind);
    if (kind > static_cast<unsigned>(InitKind::normal))
      throw InvalidArgument("tensor '" + name + "': unknown init kind " + std::to_string(kind) +
                            "; expected 0 (zeros), 1 (uniform) or 2 (normal)");
    if (!std::isfinite(init.a) || !std::isfinite(init.b))
      throw InvalidArgument("tensor '" + name + "': init parameters " + num(init.a) + ", " +
                            num(init.b) + "; expected finite numbers");
    if (init.kind == InitKind::uniform && init.b < init.a)
      throw InvalidArgument("tensor '" + name + "': uniform init in [" + num(init.a) + ", " +
                            num(init.b) + "); expected a <= b");
    if (init.kind == InitKind::normal && init.b < 0)
      throw InvalidArgument("tensor '" + name + "': normal init with standard deviation " +
                            num(init.b) + "; expected >= 0");
  }

  Reply on_create(const Request& req) {
    require_no_parts(req.body, req.type);
    const auto q = CreateTensorRequest::decode(req.body.head);
    const bool created = create(q);
    HeadWriter w;
    w.put(static_cast<std::uint8_t>(created ? 1 : 0));
    return Reply{Status::ok, Message::owning(w.take())};
  }

  Reply on_delete(const Request& req) {
    require_no_parts(req.body, req.type);
    HeadReader r(req.body.head, "delete_tensor");
    const std::string name = r.get_string(256);
    r.finish();
    if (!storage_->remove(name)) throw NotFound("tensor '" + name + "'", "no such tensor");
    return Reply{};
  }

  Reply on_list() { return Reply{Status::ok, Message::owning(encode_specs(storage_->list()))}; }

  /// Local rows of a rows request, after checking the tensor's kind matches its size.
  std::vector<std::int64_t> local_rows(const RowsRequest& q, std::span<const std::byte> ids_part,
                                       const char* subject, TensorSpec& spec) {
    spec = storage_->spec(q.name);
    if (q.kind != RowKind::node && q.kind != RowKind::edge)
      throw ProtocolError(std::string(subject) + ": unknown row kind");
    const detail::RowSpace space = spaces_.of(q.name, q.kind);
    if (spec.rows != space.rows)
      throw ShapeError(
          "tensor '" + q.name + "'",
          std::string("not indexed by ") + (q.kind == RowKind::node ? "node" : "edge") + " IDs");
    const auto ids = part_as<std::int64_t>(ids_part, q.count, subject);
    std::vector<std::int64_t> local(ids.size());
    detail::global_to_owned(book_, part_id_, space, ids, local);
    return local;
  }

  Reply on_pull(const Request& req) {
    const auto q = RowsRequest::decode(req.body.head, "pull");
    if (req.body.parts.size() != 1)
      throw ProtocolError("pull: " + std::to_string(req.body.parts.size()) +
                          " parts; expected 1 (row IDs)");
    TensorSpec spec;
    const auto local = local_rows(q, req.body.parts[0], "pull", spec);
    // Repeated IDs make a small request ask for a large reply: refuse it before reading.
    check_reply_size("pull '" + q.name + "' of " + std::to_string(local.size()) + " rows",
                     local.size(), spec.row_bytes());
    // 8-byte aligned reply buffer: the receiver views the rows in place. Not zeroed:
    // read_rows writes every byte of `out` or throws (and then nothing is sent).
    const std::size_t bytes = local.size() * spec.row_bytes();
    // At least one word, so that a reply of no rows still points at memory it owns.
    std::shared_ptr<std::uint64_t[]> rows =
        std::make_shared_for_overwrite<std::uint64_t[]>(std::max<std::size_t>(1, (bytes + 7) / 8));
    std::span<std::byte> out(reinterpret_cast<std::byte*>(rows.get()), bytes);
    storage_->read_rows(q.name, local, out);
    Reply r;
    r.body.parts.push_back(out);
    r.body.keep_alive = std::move(rows);
    return r;
  }

  Reply on_push(const Request& req) {
    const char* subject = req.type == MsgType::push ? "push" : "push_add";
    const auto q = RowsRequest::decode(req.body.head, subject);
    if (req.body.parts.size() != 2)
      throw ProtocolError(std::string(subject) + ": " + std::to_string(req.body.parts.size()) +
                          " parts; expected 2 (row IDs, rows)");
    TensorSpec spec;
    const auto local = local_rows(q, req.body.parts[0], subject, spec);
    const auto rows = req.body.parts[1];
    if (rows.size() != local.size() * spec.row_bytes())
      throw ShapeError("tensor '" + q.name + "'",
                       std::string(subject) + " of " + std::to_string(rows.size()) + " bytes for " +
                           std::to_string(local.size()) + " rows; expected " +
                           std::to_string(local.size() * spec.row_bytes()));
    if (req.type == MsgType::push)
      storage_->write_rows(q.name, local, rows);
    else
      storage_->add_rows(q.name, local, rows);
    return Reply{};
  }

  /// Applies a sparse optimizer step to the rows of embedding `q.name`. Each row's read,
  /// update and write happen under this server's lock for that row, so concurrent steps
  /// from several trainers serialise per row. Steps of one embedding must all go to one
  /// server process per partition (the trainer routes them to the main server) for this
  /// to hold across processes.
  Reply on_sparse_step(const Request& req) {
    const auto q = SparseStepRequest::decode(req.body.head);
    if (req.body.parts.size() != 2)
      throw ProtocolError("sparse_step: expected 2 parts (row IDs, gradients)");
    // isfinite first: lr = +inf passes "> 0" and would turn every row to -inf.
    const auto& p = q.params;
    if (!std::isfinite(p.lr) || !std::isfinite(p.eps) || !std::isfinite(p.beta1) ||
        !std::isfinite(p.beta2) || !(p.lr > 0) || !(p.eps > 0) || !(p.beta1 >= 0 && p.beta1 < 1) ||
        !(p.beta2 >= 0 && p.beta2 < 1))
      throw InvalidArgument("sparse_step '" + q.name + "': lr " + num(p.lr) + ", eps " +
                            num(p.eps) + ", betas " + num(p.beta1) + ", " + num(p.beta2) +
                            "; expected finite lr and eps > 0, betas in [0, 1)");
    RowsRequest rq{q.name, q.kind, q.count};
    TensorSpec spec;
    const auto local = local_rows(rq, req.body.parts[0], "sparse_step", spec);
    if (spec.dtype != DType::float32)
      throw DTypeError(
          "embedding '" + q.name + "'",
          "dtype " + std::string(dtype_name(spec.dtype)) + "; sparse optimizers need float32");
    const auto cols = static_cast<std::size_t>(spec.cols);
    std::int64_t values = 0;
    if (__builtin_mul_overflow(q.count, spec.cols, &values))
      throw ProtocolError("sparse_step: " + std::to_string(q.count) + " rows x " +
                          std::to_string(spec.cols) + " columns overflows");
    const auto grads = part_as<float>(req.body.parts[1], values, "sparse_step");
    const bool adam = q.params.kind == OptimizerKind::adam;
    if (!adam && q.params.kind != OptimizerKind::adagrad)
      throw ProtocolError("sparse_step: unknown optimizer kind");
    // One inf or NaN would poison the row and its optimizer state for good: refuse the
    // whole step before any row changes.
    for (std::size_t k = 0; k < grads.size(); ++k)
      if (!std::isfinite(grads[k]))
        throw InvalidArgument("sparse_step '" + q.name + "': gradient " + num(grads[k]) +
                              " for the request's row " + std::to_string(k / cols) +
                              "; gradients must be finite");
    // Lazily created per-row state, named after the embedding (saved with it).
    const std::string s1 =
        q.name + std::string(adam ? SparseState::adam_m : SparseState::adagrad_sum);
    const std::string s2 = q.name + std::string(SparseState::adam_v);
    const std::string st = q.name + std::string(SparseState::adam_t);
    {
      std::lock_guard lock(create_mu_);
      storage_->create(TensorSpec{s1, DType::float32, spec.rows, spec.cols});
      if (adam) {
        storage_->create(TensorSpec{s2, DType::float32, spec.rows, spec.cols});
        storage_->create(TensorSpec{st, DType::float32, spec.rows, 1});
      }
    }
    std::vector<float> w(cols), a(cols), b(cols);
    float t = 0;
    auto bytes = [](auto& v) { return std::as_writable_bytes(std::span(v)); };
    for (std::size_t i = 0; i < local.size(); ++i) {
      const std::int64_t row[1] = {local[i]};
      const float* g = grads.data() + i * cols;
      std::lock_guard lock(row_mu_[static_cast<std::size_t>(local[i]) % row_mu_.size()]);
      storage_->read_rows(q.name, row, bytes(w));
      storage_->read_rows(s1, row, bytes(a));
      if (!adam) {
        for (std::size_t c = 0; c < cols; ++c) {
          a[c] += g[c] * g[c];
          w[c] -= static_cast<float>(q.params.lr * g[c] / (std::sqrt(double(a[c])) + q.params.eps));
        }
      } else {
        storage_->read_rows(s2, row, bytes(b));
        storage_->read_rows(st, row, std::as_writable_bytes(std::span(&t, 1)));
        t += 1;
        const double c1 = 1 - std::pow(q.params.beta1, t), c2 = 1 - std::pow(q.params.beta2, t);
        for (std::size_t c = 0; c < cols; ++c) {
          a[c] = static_cast<float>(q.params.beta1 * a[c] + (1 - q.params.beta1) * g[c]);
          b[c] = static_cast<float>(q.params.beta2 * b[c] + (1 - q.params.beta2) * g[c] * g[c]);
          const double mhat = a[c] / c1, vhat = b[c] / c2;
          w[c] -= static_cast<float>(q.params.lr * mhat / (std::sqrt(vhat) + q.params.eps));
        }
        storage_->write_rows(s2, row, std::as_bytes(std::span(b)));
        storage_->write_rows(st, row, std::as_bytes(std::span(&t, 1)));
      }
      storage_->write_rows(s1, row, std::as_bytes(std::span(a)));
      storage_->write_rows(q.name, row, std::as_bytes(std::span(w)));
    }
    return Reply{};
  }

  /// save_tensors, load_tensors, remove_checkpoint: one at a time per server, in the
  /// operator's checkpoint folder. Both take every row lock, so neither interleaves with
  /// a sparse step's read-modify-write of a row (callers still quiesce their trainers to
  /// get one consistent point in training).
  Reply on_checkpoint(const Request& req) {
    const char* subject = req.type == MsgType::save_tensors   ? "save_tensors"
                          : req.type == MsgType::load_tensors ? "load_tensors"
                                                              : "remove_checkpoint";
    require_no_parts(req.body, req.type);
    std::lock_guard lock(checkpoint_mu_);
    if (!checkpoint_)
      throw InvalidArgument(std::string(subject) + ": partition " + std::to_string(part_id_) +
                            "'s server has no checkpoint folder (distgraph serve "
                            "--checkpoint-dir)");
    if (req.type == MsgType::remove_checkpoint) {
      HeadReader r(req.body.head, subject);
      const std::string tag = r.get_string(256);
      r.finish();
      checkpoint_->remove(tag);
      return Reply{};
    }
    const auto q = TensorCheckpointRequest::decode(req.body.head, subject);
    std::lock_guard create(create_mu_);
    std::vector<std::unique_lock<std::mutex>> rows;
    for (auto& m : row_mu_) rows.emplace_back(m);
    if (req.type == MsgType::save_tensors)
      checkpoint_->save(*storage_, q.tag, q.names, q.with_state);
    else
      checkpoint_->load(*storage_, q.tag, q.names, q.with_state);
    return Reply{};
  }

  /// Blocks this handler thread until `participants` calls with the same name arrived.
  /// Transports must run enough handler threads for every participant (AsioServer's pool
  /// size; the in-process transport runs each caller on its own thread).
  Reply on_barrier(const Request& req) {
    require_no_parts(req.body, req.type);
    const auto q = BarrierRequest::decode(req.body.head);
    if (q.participants < 1 || q.participants > 1'000'000)
      throw InvalidArgument("barrier '" + q.name + "': " + std::to_string(q.participants) +
                            " participants");
    const auto deadline = deadline_in(
        std::chrono::milliseconds(std::clamp<std::int64_t>(q.timeout_ms, 0, 3'600'000)));
    std::unique_lock lock(mu_);
    auto& b = barriers_[q.name];
    if (b.participants != 0 && b.participants != q.participants)
      throw InvalidArgument("barrier '" + q.name + "': " + std::to_string(q.participants) +
                            " participants; others said " + std::to_string(b.participants));
    b.participants = q.participants;
    const std::uint64_t gen = b.generation;
    if (++b.arrived == b.participants) {
      b.arrived = 0;
      b.participants = 0;
      ++b.generation;
      cv_.notify_all();
      return Reply{};
    }
    if (!cv_.wait_until(lock, deadline, [&] { return b.generation != gen || shutdown_; })) {
      --b.arrived;
      return Reply::error(Status::timeout, "barrier '" + q.name +
                                               "': " + std::to_string(b.arrived + 1) + " of " +
                                               std::to_string(q.participants) +
                                               " participants arrived before the timeout");
    }
    if (b.generation == gen)
      return Reply::error(Status::shutting_down, "barrier '" + q.name + "': server shut down");
    return Reply{};
  }

  void initialise(const TensorSpec& spec, const detail::RowSpace& space, const InitSpec& init) {
    if (spec.dtype != DType::float32 && spec.dtype != DType::float64)
      throw DTypeError("tensor '" + spec.name + "'", "random initialisation needs a float dtype");
    constexpr std::int64_t chunk = 4096;
    std::vector<std::byte> rows;
    for (std::int64_t begin = 0; begin < spec.rows; begin += chunk) {
      const std::int64_t end = std::min(spec.rows, begin + chunk);
      const auto global = detail::owned_to_global(book_, part_id_, space, begin, end);
      std::vector<std::int64_t> local(global.size());
      rows.assign(global.size() * spec.row_bytes(), std::byte{0});
      for (std::size_t i = 0; i < global.size(); ++i) {
        local[i] = begin + static_cast<std::int64_t>(i);
        for (std::int64_t c = 0; c < spec.cols; ++c) {
          const double v =
              init.kind == InitKind::uniform
                  ? init.a + (init.b - init.a) * detail::unit_hash(init.seed, global[i], c)
                  : init.a + init.b * detail::normal_hash(init.seed, global[i], c);
          const std::size_t at =
              i * static_cast<std::size_t>(spec.cols) + static_cast<std::size_t>(c);
          if (spec.dtype == DType::float32) {
            const float f = static_cast<float>(v);
            std::memcpy(rows.data() + at * 4, &f, 4);
          } else {
            std::memcpy(rows.data() + at * 8, &v, 8);
          }
        }
      }
      storage_->write_rows(spec.name, local, rows);
    }
  }

  struct BarrierState {
    std::int64_t participants = 0, arrived = 0;
    std::uint64_t generation = 0;
  };

  std::shared_ptr<S> storage_;
  Book book_;
  std::int32_t part_id_;
  detail::RowSpaces spaces_;  ///< where each type's rows start in this partition
  mutable std::mutex mu_;     // barriers and shutdown
  std::condition_variable cv_;
  bool shutdown_ = false;
  std::map<std::string, BarrierState> barriers_;
  std::atomic<std::int32_t> job_trainers_{0};  ///< see set_job_trainers
  std::atomic<std::uint64_t> max_reply_bytes_{
      default_max_frame_bytes};  ///< see set_max_reply_bytes
  std::mutex create_mu_;
  std::array<std::mutex, 256> row_mu_;
  std::mutex checkpoint_mu_;
  std::optional<TensorCheckpoint> checkpoint_;
};

}  // namespace distgraph
