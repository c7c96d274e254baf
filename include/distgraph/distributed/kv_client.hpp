// KVClient: the trainer's connection to every server; splits row requests by owner.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "distgraph/core/deadline.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/core/trace.hpp"
#include "distgraph/distributed/remote_traffic.hpp"
#include "distgraph/distributed/row_cache.hpp"
#include "distgraph/partition/concepts.hpp"
#include "distgraph/server/ownership.hpp"
#include "distgraph/server/protocol.hpp"
#include "distgraph/storage/concepts.hpp"
#include "distgraph/storage/scatter_read.hpp"
#include "distgraph/transport/concepts.hpp"

namespace distgraph {

/// Where the servers are. Machine m serves partition m with `servers_per_machine`
/// servers, flat indices m * servers_per_machine + s; server s = 0 is the main server.
struct ClusterLayout {
  std::int32_t num_machines = 1;
  std::int32_t servers_per_machine = 1;
  /// This trainer's machine (its rows are read from `colocated` storage without a
  /// request); -1 when none is co-located.
  std::int32_t machine_id = -1;
  /// Which server of each machine this trainer sends reads to (spreads trainers over
  /// backup servers); taken modulo servers_per_machine.
  std::int32_t preferred_server = 0;
  /// Trainers in the whole job: collective calls (create, barrier) wait for all.
  std::int32_t num_trainers = 1;
};

/// Per-call settings.
struct ClientOptions {
  std::chrono::milliseconds timeout{60'000};  ///< deadline of every call
  /// A pull() whose rows come to more bytes than this goes out in pieces of at most this
  /// many bytes (one piece after another, each one request per owner): a server refuses a
  /// reply over its frame limit (256 MiB by default), and one layer-wise inference batch
  /// through R-MAT hubs asked for 380 MB. Must be > 0.
  std::size_t max_pull_bytes = std::size_t{64} << 20;
};

/// The trainer side of the KV protocol over transport `T`, for a graph partitioned under
/// `Book`. Row calls take global IDs, validate them all before sending anything
/// (IdOutOfRange), group them by owning partition, read co-located rows directly from
/// the shared storage, send one request per remote partition in parallel, and reassemble
/// rows in request order. A server error becomes RemoteError; no reply by the deadline,
/// TimeoutError; a dead server, PeerLost. Thread-safe when T and S are.
template <PartitionBook Book, Transport T, Storage S>
class KVClient {
 public:
  using book_type = Book;
  using transport_type = T;
  using storage_type = S;

  KVClient(std::shared_ptr<T> transport, Book book, ClusterLayout layout,
           std::shared_ptr<S> colocated = nullptr, ClientOptions options = {})
      : transport_(std::move(transport)),
        book_(std::move(book)),
        layout_(layout),
        colocated_(std::move(colocated)),
        options_(options) {
    if (!transport_) throw InvalidArgument("KVClient: null transport");
    if (layout_.num_machines != book_.num_partitions())
      throw InvalidArgument("cluster of " + std::to_string(layout_.num_machines) +
                            " machines for a graph of " + std::to_string(book_.num_partitions()) +
                            " partitions; expected one machine per partition");
    if (layout_.servers_per_machine < 1) throw InvalidArgument("servers_per_machine must be >= 1");
    if (transport_->num_servers() != layout_.num_machines * layout_.servers_per_machine)
      throw InvalidArgument("transport has " + std::to_string(transport_->num_servers()) +
                            " servers; the layout needs " +
                            std::to_string(layout_.num_machines * layout_.servers_per_machine));
    if (colocated_ && (layout_.machine_id < 0 || layout_.machine_id >= layout_.num_machines))
      throw InvalidArgument("co-located storage given without a valid machine_id");
    spaces_ = detail::RowSpaces(book_, colocated_ ? layout_.machine_id : 0);
  }

  const Book& book() const noexcept { return book_; }
  const ClusterLayout& layout() const noexcept { return layout_; }
  /// The machine's shared storage this trainer reads its own partition's rows from
  /// (null when none is co-located).
  const std::shared_ptr<S>& colocated() const noexcept { return colocated_; }
  T& transport() noexcept { return *transport_; }
  /// What pull() has fetched from other machines so far (copies of a client share it).
  RemoteTraffic remote_traffic() const noexcept {
    return {traffic_->rows.load(std::memory_order_relaxed),
            traffic_->bytes.load(std::memory_order_relaxed),
            traffic_->cached_rows.load(std::memory_order_relaxed),
            traffic_->cached_bytes.load(std::memory_order_relaxed)};
  }

  /// Serves pulls of `cache->tensor()` rows that `cache` holds from it instead of their
  /// owners (build_row_cache calls it), and refuses writes to that tensor from then on
  /// (InvalidArgument): cached copies must never go stale. Replaces an earlier cache of the
  /// tensor. Copies of the client share it.
  void use_row_cache(std::shared_ptr<const RowCache<S>> cache) {
    if (!cache) throw InvalidArgument("use_row_cache: null cache");
    std::lock_guard lock(caches_->mu);
    auto table = std::make_shared<CacheTable>(*caches_->table.load());
    std::erase_if(*table, [&](const auto& c) { return c->tensor() == cache->tensor(); });
    table->push_back(std::move(cache));
    caches_->table.store(std::move(table));
  }
  /// The row cache pulls of tensor `name` use, or null.
  std::shared_ptr<const RowCache<S>> row_cache(std::string_view name) const {
    const auto table = caches_->table.load();
    for (const auto& c : *table)
      if (c->tensor() == name) return c;
    return nullptr;
  }

  /// Flat index of the server this trainer uses for partition `part`.
  int server_for(std::int32_t part, bool main = false) const {
    const int s = main ? 0 : layout_.preferred_server % layout_.servers_per_machine;
    return part * layout_.servers_per_machine + s;
  }

  /// Global rows of `kind`.
  std::int64_t num_rows(RowKind kind) const {
    return kind == RowKind::node ? book_.num_nodes() : book_.num_edges();
  }
  /// Global rows of tensor `name`: those of its type for typed data ("<type>/<name>").
  std::int64_t num_rows(RowKind kind, std::string_view name) const {
    return spaces_.of(name, kind).global;
  }

  /// Creates tensor `q` on every partition's main server (idempotent: an identical
  /// tensor is reused, a different layout throws RemoteError shape/dtype_mismatch), then
  /// waits at a barrier for all trainers. Collective: every trainer must call it. Returns
  /// true when this call created it on some server.
  bool create(const CreateTensorRequest& q) {
    std::vector<PendingCall> calls;
    for (std::int32_t p = 0; p < layout_.num_machines; ++p)
      calls.push_back(transport_->send(server_for(p, true), MsgType::create_tensor,
                                       Message::owning(q.encode())));
    bool created = false;
    const auto d = deadline();
    for (auto& c : calls) {
      const Reply r = c.get(d);
      expect_ok(r, "create tensor '" + q.name + "'");
      created = created || (!r.body.head.empty() && r.body.head[0] == std::byte{1});
    }
    barrier("create:" + q.name);
    return created;
  }

  /// Waits until all layout().num_trainers trainers called barrier with `name`, at most
  /// the client's call timeout.
  void barrier(const std::string& name) { barrier(name, options_.timeout); }

  /// barrier(name) with its own deadline: for meeting points after work whose length does
  /// not depend on one call (a layer of layer-wise inference over a large graph). The
  /// server clamps it to one hour.
  void barrier(const std::string& name, std::chrono::milliseconds timeout) {
    BarrierRequest q{name, layout_.num_trainers, timeout.count()};
    expect_ok(transport_->call(server_for(0, true), MsgType::barrier, Message::owning(q.encode()),
                               deadline_in(timeout) + std::chrono::seconds(1)),
              "barrier '" + name + "'");
  }

  /// The tensors partition `part` holds (local row counts).
  std::vector<TensorSpec> list(std::int32_t part = 0) {
    const Reply r =
        transport_->call(server_for(part), MsgType::list_tensors, Message{}, deadline());
    expect_ok(r, "list tensors of partition " + std::to_string(part));
    return decode_specs(r.body.head);
  }

  /// Server `server`'s metadata (JSON).
  nlohmann::json metadata(int server) {
    const Reply r = transport_->call(server, MsgType::metadata, Message{}, deadline());
    expect_ok(r, "metadata of server " + std::to_string(server));
    try {
      return nlohmann::json::parse(r.text());
    } catch (const nlohmann::json::exception& e) {
      throw ProtocolError("metadata of server " + std::to_string(server) + ": " + e.what());
    }
  }

  /// Deletes tensor `name` on every partition.
  void remove(const std::string& name) {
    HeadWriter w;
    w.put_string(name);
    call_main_servers(MsgType::delete_tensor, w.take(), "delete tensor '" + name + "'");
  }

  /// Every partition's main server saves its own rows of tensors `names` (with
  /// `with_state`, also their sparse optimizer state) under checkpoint `tag` in the
  /// checkpoint folder it was started with (`distgraph serve --checkpoint-dir`); a tag
  /// saved again is replaced. The caller makes sure no trainer writes those tensors
  /// meanwhile. Throws RemoteError (bad tag, unknown tensor, no checkpoint folder, a
  /// failed write) naming the partition.
  void save_tensors(const std::string& tag, const std::vector<std::string>& names,
                    bool with_state = true) {
    call_main_servers(MsgType::save_tensors,
                      TensorCheckpointRequest{tag, names, with_state}.encode(),
                      "save checkpoint '" + tag + "'");
  }

  /// Every partition's main server loads what save_tensors saved under `tag` into its
  /// tensors (creating missing ones). A partition checks the whole checkpoint before it
  /// writes anything, so a mismatch (another graph or partitioning, a changed shape)
  /// leaves its tensors as they were. Throws RemoteError naming the partition.
  void load_tensors(const std::string& tag, const std::vector<std::string>& names,
                    bool with_state = true) {
    call_main_servers(MsgType::load_tensors,
                      TensorCheckpointRequest{tag, names, with_state}.encode(),
                      "load checkpoint '" + tag + "'");
  }

  /// Every partition's main server deletes its files of checkpoint `tag` (none: no-op).
  void remove_checkpoint(const std::string& tag) {
    HeadWriter w;
    w.put_string(tag);
    call_main_servers(MsgType::remove_checkpoint, w.take(), "remove checkpoint '" + tag + "'");
  }

  /// Copies rows `global_ids` of tensor `name` into `out` (global_ids.size() rows of
  /// `row_bytes` each, in request order). Blocks until every owner answered. Rows of
  /// other machines that the machine's row cache holds (use_row_cache) come from it.
  void pull(const std::string& name, RowKind kind, std::span<const std::int64_t> global_ids,
            std::span<std::byte> out, std::size_t row_bytes) {
    pull_rows(name, kind, global_ids, out, row_bytes, true);
  }

  /// pull() from the owners only: no row cache, and not counted in remote_traffic() (how
  /// a cache is filled).
  void pull_uncached(const std::string& name, RowKind kind,
                     std::span<const std::int64_t> global_ids, std::span<std::byte> out,
                     std::size_t row_bytes) {
    pull_rows(name, kind, global_ids, out, row_bytes, false);
  }

  /// pull() and pull_uncached(): `via_cache` serves cached rows from the machine's cache
  /// and counts what crosses to other machines in remote_traffic().
  void pull_rows(const std::string& name, RowKind kind, std::span<const std::int64_t> global_ids,
                 std::span<std::byte> out, std::size_t row_bytes, bool via_cache) {
    if (out.size() != global_ids.size() * row_bytes)
      throw ShapeError("pull '" + name + "'", std::to_string(out.size()) +
                                                  " output bytes; expected " +
                                                  std::to_string(global_ids.size() * row_bytes));
    if (global_ids.size() > 1 && out.size() > options_.max_pull_bytes) {
      pull_in_pieces(name, kind, global_ids, out, row_bytes, via_cache);
      return;
    }
    std::vector<std::int32_t> owner(global_ids.size());
    const Placement found = read_if_all_colocated(name, kind, global_ids, out, owner);
    if (found == Placement::all_colocated) return;
    if (found == Placement::owners_unknown) owners(kind, global_ids, owner);
    const Groups g = group_owners(owner);
    check_type(kind, name, global_ids);
    const auto cache = via_cache ? row_cache(name) : nullptr;
    if (cache && cache->row_bytes() != row_bytes)
      throw ShapeError("pull '" + name + "'", std::to_string(row_bytes) +
                                                  " bytes per row; the tensor has " +
                                                  std::to_string(cache->row_bytes()));
    const std::uint64_t sent_ns = trace::enabled() ? trace::now_ns() : 0;
    PullRequests sent = send_pulls(name, kind, global_ids, g, cache.get());
    // Co-located and cached rows are read while the remote requests are in flight, each
    // straight into its place in `out`.
    read_colocated_groups(name, kind, global_ids, g, out, row_bytes);
    if (!sent.hit_slots.empty()) read_cached(*cache, sent, out, row_bytes);
    collect(
        sent.calls, g, "pull '" + name + "'",
        [&](std::size_t k, const Reply& r) {
          const std::size_t rows = place_pulled_rows(name, g, sent, k, r, out, row_bytes);
          if (via_cache && g.parts[k] != layout_.machine_id)
            count_traffic(rows, rows * row_bytes, /*cached=*/false);
        },
        sent_ns);
  }

  /// Writes (add = false) or adds (add = true) `rows` at `global_ids` of tensor `name`.
  /// Blocks until every owner acknowledged. Within one call a row listed twice ends as
  /// its last listing (write) or receives both additions (add).
  void push(const std::string& name, RowKind kind, std::span<const std::int64_t> global_ids,
            std::span<const std::byte> rows, std::size_t row_bytes, bool add) {
    if (rows.size() != global_ids.size() * row_bytes)
      throw ShapeError("push '" + name + "'", std::to_string(rows.size()) +
                                                  " bytes of rows; expected " +
                                                  std::to_string(global_ids.size() * row_bytes));
    check_writable(name, add ? "push_add" : "push");
    const Groups g = group(kind, global_ids);
    check_type(kind, name, global_ids);
    std::vector<PendingCall> calls(g.parts.size());
    for (std::size_t k = 0; k < g.parts.size(); ++k) {
      if (is_colocated(g.parts[k])) continue;
      RowsRequest q{name, kind, static_cast<std::int64_t>(g.count(k))};
      calls[k] = transport_->send(
          server_for(g.parts[k]), add ? MsgType::push_add : MsgType::push,
          rows_message(q.encode(), g.ids_of(k, global_ids), g.gather(k, rows, row_bytes), true));
    }
    for (std::size_t k = 0; k < g.parts.size(); ++k) {
      if (!is_colocated(g.parts[k])) continue;
      const auto gids = g.ids_of(k, global_ids);
      std::vector<std::int64_t> local(gids.size());
      to_local(kind, name, gids, local);
      const auto data = g.gather(k, rows, row_bytes);
      if (add)
        colocated_->add_rows(name, local, data);
      else
        colocated_->write_rows(name, local, data);
    }
    collect(calls, g, std::string(add ? "push_add '" : "push '") + name + "'",
            [](std::size_t, const Reply&) {});
  }

  /// Sends a sparse optimizer step for unique rows `global_ids` with float32 gradients
  /// `grads` (global_ids.size() x cols) to each owner's main server.
  void sparse_step(const std::string& name, RowKind kind, std::span<const std::int64_t> global_ids,
                   std::span<const float> grads, std::int64_t cols,
                   const SparseOptimizerParams& params) {
    const std::size_t row_bytes = static_cast<std::size_t>(cols) * sizeof(float);
    const auto bytes = std::as_bytes(grads);
    if (bytes.size() != global_ids.size() * row_bytes)
      throw ShapeError("sparse step '" + name + "'", "gradient size disagrees with the row count");
    check_writable(name, "sparse step");
    const Groups g = group(kind, global_ids);
    check_type(kind, name, global_ids);
    std::vector<PendingCall> calls(g.parts.size());
    for (std::size_t k = 0; k < g.parts.size(); ++k) {
      SparseStepRequest q{name, kind, static_cast<std::int64_t>(g.count(k)), params};
      calls[k] = transport_->send(
          server_for(g.parts[k], true), MsgType::sparse_step,
          rows_message(q.encode(), g.ids_of(k, global_ids), g.gather(k, bytes, row_bytes), true));
    }
    collect(calls, g, "sparse step '" + name + "'", [](std::size_t, const Reply&) {});
  }

  /// Asks every server to shut down (each acknowledges first). Servers already gone
  /// are skipped.
  void shutdown_servers() {
    std::vector<PendingCall> calls;
    for (int s = 0; s < transport_->num_servers(); ++s)
      calls.push_back(transport_->send(s, MsgType::shutdown, Message{}));
    const auto d = deadline();
    for (auto& c : calls) {
      try {
        c.get(d);
      } catch (const PeerLost&) {
      }
    }
  }

  /// One owner's answer to ask_owners: its partition, the request positions of the IDs it
  /// was asked about (in the order sent), and its reply's parts as int64 arrays.
  struct OwnerAnswer {
    std::int32_t part = 0;
    std::vector<std::size_t> positions;
    std::vector<std::vector<std::int64_t>> values;
  };
  /// Answers for this machine's co-located partition without a request (ask_owners).
  using AnswerHere =
      std::function<std::vector<std::vector<std::int64_t>>(std::vector<std::int64_t>)>;

  /// Asks the owners of `ids` in parallel: request `type` with head `head(count)` and that
  /// owner's IDs as its rows. Every reply must hold `num_parts` int64 parts: the first
  /// `per_id_parts` of one value per ID, the others all of one length (their own, any).
  /// Owners come back in ascending
  /// partition order. With `here`, this machine's co-located partition is answered by it
  /// (while the requests are in flight) instead of its server. Throws IdOutOfRange before
  /// sending, RemoteError, TimeoutError or PeerLost as pull does, and ProtocolError naming
  /// `what` for a malformed reply.
  template <class HeadFn>
  std::vector<OwnerAnswer> ask_owners(RowKind kind, std::span<const std::int64_t> ids, MsgType type,
                                      const std::string& what, HeadFn&& head, std::size_t num_parts,
                                      std::size_t per_id_parts, const AnswerHere& here = {}) {
    const Groups g = group(kind, ids);
    const std::uint64_t sent_ns = trace::enabled() ? trace::now_ns() : 0;
    auto calls = send_groups(g, ids, type, head, static_cast<bool>(here));
    std::vector<OwnerAnswer> out(g.parts.size());
    for (std::size_t k = 0; k < g.parts.size(); ++k) {
      out[k].part = g.parts[k];
      const auto at = g.positions(k);
      out[k].positions.assign(at.begin(), at.end());
      if (here && !calls[k].valid()) out[k].values = here(g.ids_of(k, ids));
    }
    collect(
        calls, g, what,
        [&](std::size_t k, const Reply& r) {
          out[k].values = int64_parts(r, num_parts, per_id_parts, g.count(k), what);
        },
        sent_ns);
    return out;
  }

  /// Asks every partition's server the same question about all of `ids` (request `type`,
  /// head `head`) and returns each partition's one-part reply of one int64 per ID.
  std::vector<std::vector<std::int64_t>> ask_every_partition(MsgType type,
                                                             std::vector<std::byte> head,
                                                             std::span<const std::int64_t> ids,
                                                             const std::string& what) {
    Groups g;  // every partition gets every ID: one group per partition
    g.offsets.push_back(0);
    std::vector<PendingCall> calls;
    for (std::int32_t p = 0; p < layout_.num_machines; ++p) {
      g.parts.push_back(p);
      g.offsets.push_back(ids.size());
      calls.push_back(
          transport_->send(server_for(p), type, rows_message(head, {ids.begin(), ids.end()})));
    }
    std::vector<std::vector<std::int64_t>> out(calls.size());
    collect(calls, g, what, [&](std::size_t k, const Reply& r) {
      out[k] = std::move(int64_parts(r, 1, 1, ids.size(), what)[0]);
    });
    return out;
  }

  /// Global IDs `gids` of `kind` as this machine's partition's local IDs.
  void to_local(RowKind kind, std::span<const std::int64_t> gids,
                std::span<std::int64_t> out) const {
    if (kind == RowKind::node)
      book_.node_to_local(gids, out);
    else
      book_.edge_to_local(gids, out);
  }

 private:
  /// Sends `head` as `type` to every partition's main server at once and waits for all;
  /// a failure throws naming `what` and the partition.
  void call_main_servers(MsgType type, std::vector<std::byte> head, const std::string& what) {
    std::vector<PendingCall> calls;
    for (std::int32_t p = 0; p < layout_.num_machines; ++p)
      calls.push_back(transport_->send(server_for(p, true), type, Message::owning(head)));
    const auto d = deadline();
    for (std::int32_t p = 0; p < layout_.num_machines; ++p)
      expect_ok(calls[static_cast<std::size_t>(p)].get(d),
                what + " on partition " + std::to_string(p));
  }

  /// A request whose head, IDs and rows the message itself keeps alive: a call that
  /// times out may still be queued for writing after the caller has moved on.
  static Message rows_message(std::vector<std::byte> head, std::vector<std::int64_t> ids,
                              std::vector<std::byte> rows = {}, bool with_rows = false) {
    struct Owned {
      std::vector<std::byte> head;
      std::vector<std::int64_t> ids;
      std::vector<std::byte> rows;
    };
    auto o = std::make_shared<Owned>(Owned{std::move(head), std::move(ids), std::move(rows)});
    Message m;
    m.head = std::span<const std::byte>(o->head);
    m.parts.push_back(std::as_bytes(std::span<const std::int64_t>(o->ids)));
    if (with_rows) m.parts.push_back(std::span<const std::byte>(o->rows));
    m.keep_alive = std::move(o);
    return m;
  }

  /// IDs grouped by owning partition: `parts` lists the partitions present, `order` the
  /// request positions sorted by partition, `offsets` where each partition's run starts.
  struct Groups {
    std::vector<std::int32_t> parts;
    std::vector<std::size_t> order, offsets;

    std::size_t count(std::size_t k) const { return offsets[k + 1] - offsets[k]; }
    std::vector<std::int64_t> ids_of(std::size_t k, std::span<const std::int64_t> all) const {
      std::vector<std::int64_t> v(count(k));
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = all[order[offsets[k] + i]];
      return v;
    }
    /// The request positions of group k's IDs, in the order they are sent.
    std::span<const std::size_t> positions(std::size_t k) const {
      return std::span<const std::size_t>(order).subspan(offsets[k], count(k));
    }
    std::vector<std::byte> gather(std::size_t k, std::span<const std::byte> rows,
                                  std::size_t row_bytes) const {
      std::vector<std::byte> v(count(k) * row_bytes);
      for (std::size_t i = 0; i < count(k); ++i)
        std::memcpy(v.data() + i * row_bytes, rows.data() + order[offsets[k] + i] * row_bytes,
                    row_bytes);
      return v;
    }
  };

  Groups group(RowKind kind, std::span<const std::int64_t> global_ids) const {
    std::vector<std::int32_t> owner(global_ids.size());
    owners(kind, global_ids, owner);
    return group_owners(owner);
  }
  /// group() of IDs whose owners the owner pass found: owner[i] owns request position i.
  Groups group_owners(std::span<const std::int32_t> owner) const {
    Groups g;
    // One owner (most batches of a co-located or single-server job): request order is
    // already grouped, so the counting sort is skipped.
    if (!owner.empty() &&
        std::all_of(owner.begin(), owner.end(), [&](std::int32_t p) { return p == owner[0]; })) {
      g.parts = {owner[0]};
      g.order.resize(owner.size());
      for (std::size_t i = 0; i < owner.size(); ++i) g.order[i] = i;
      g.offsets = {0, owner.size()};
      return g;
    }
    const auto np = static_cast<std::size_t>(layout_.num_machines);
    std::vector<std::size_t> count(np + 1, 0);
    for (auto p : owner) ++count[static_cast<std::size_t>(p) + 1];
    for (std::size_t p = 0; p < np; ++p) count[p + 1] += count[p];
    g.order.resize(owner.size());
    std::vector<std::size_t> at(count.begin(), count.end() - 1);
    for (std::size_t i = 0; i < owner.size(); ++i)
      g.order[at[static_cast<std::size_t>(owner[i])]++] = i;
    g.offsets.push_back(0);
    for (std::size_t p = 0; p < np; ++p)
      if (count[p + 1] > count[p]) {
        g.parts.push_back(static_cast<std::int32_t>(p));
        g.offsets.push_back(count[p + 1]);
      }
    return g;
  }

  /// owner[i] = partition owning global_ids[i]. The book validates the whole batch
  /// (IdOutOfRange) before anything is sent.
  void owners(RowKind kind, std::span<const std::int64_t> global_ids,
              std::span<std::int32_t> owner) const {
    if (kind == RowKind::node)
      book_.node_partition(global_ids, owner);
    else
      book_.edge_partition(global_ids, owner);
  }

  /// What place_colocated learnt of a batch.
  enum class Placement {
    all_colocated,   ///< the co-located partition owns every ID; their local IDs are known
    owners_known,    ///< some ID is owned elsewhere; the owner pass has filled `owner`
    owners_unknown,  ///< some ID lies outside the co-located range; no owner pass yet
  };

  /// Whether the co-located partition owns every ID of `global_ids`; if so `local` holds
  /// their local IDs. A book whose partitions own one contiguous ID range each
  /// (node_range / edge_range, as RangePartitionBook) answers in one subtract-and-compare
  /// pass and leaves any ID outside the range (another owner's, or out of range) to the
  /// caller's owner pass; any other book takes the owner pass here, into `owner`, then
  /// to_local when it found one owner.
  Placement place_colocated(RowKind kind, std::span<const std::int64_t> global_ids,
                            std::span<std::int64_t> local, std::span<std::int32_t> owner) const {
    const PartId me{layout_.machine_id};
    if constexpr (requires(const Book& b, PartId p) {
                    { b.node_range(p).first } -> std::convertible_to<std::int64_t>;
                    { b.edge_range(p).first } -> std::convertible_to<std::int64_t>;
                  }) {
      const auto [begin, end] = kind == RowKind::node ? book_.node_range(me) : book_.edge_range(me);
      const auto size = static_cast<std::uint64_t>(end - begin);
      // Branch-free: one flag for the batch, as TensorRows::check_batch.
      bool outside = false;
      for (std::size_t i = 0; i < global_ids.size(); ++i) {
        local[i] = global_ids[i] - begin;
        outside |= static_cast<std::uint64_t>(local[i]) >= size;
      }
      return outside ? Placement::owners_unknown : Placement::all_colocated;
    } else {
      owners(kind, global_ids, owner);
      if (!std::all_of(owner.begin(), owner.end(),
                       [&](std::int32_t p) { return p == layout_.machine_id; }))
        return Placement::owners_known;
      to_local(kind, global_ids, local);
      return Placement::all_colocated;
    }
  }

  bool is_colocated(std::int32_t part) const {
    return colocated_ != nullptr && part == layout_.machine_id;
  }

  /// Throws IdOutOfRange naming the tensor when typed data `name` gets an ID of another
  /// type: checked for the whole batch before anything is sent, so a refused write
  /// changes no row anywhere.
  void check_type(RowKind kind, std::string_view name, std::span<const std::int64_t> gids) const {
    const detail::RowSpace space = spaces_.of(name, kind);
    if (space.type < 0) return;
    std::vector<std::int32_t> types(gids.size());
    std::vector<std::int64_t> per_type(gids.size());
    if (kind == RowKind::node)
      book_.node_to_per_type(gids, types, per_type);
    else
      book_.edge_to_per_type(gids, types, per_type);
    for (std::size_t i = 0; i < types.size(); ++i)
      if (types[i] != space.type)
        throw IdOutOfRange("tensor '" + std::string(name) + "': " +
                               (kind == RowKind::node ? "node" : "edge") + " id of another type",
                           gids[i], 0, 0);
  }

  /// Throws InvalidArgument when tensor `name` is served from a row cache: a write would
  /// leave the cached copies of other trainers stale. Checked before anything is sent.
  void check_writable(std::string_view name, const char* what) const {
    if (row_cache(name))
      throw InvalidArgument(std::string(what) + " '" + std::string(name) +
                            "': the tensor is cached read-only on this machine "
                            "(build_row_cache); writes would leave cached copies stale");
  }

  /// Co-located rows of tensor `name`: typed data's rows start at its type's offset.
  /// Call after check_type.
  void to_local(RowKind kind, std::string_view name, std::span<const std::int64_t> gids,
                std::span<std::int64_t> out) const {
    to_local(kind, gids, out);
    shift_to_tensor_rows(kind, name, out);
  }
  /// Turns local IDs of the co-located partition into rows of tensor `name` in place.
  /// Call after check_type.
  void shift_to_tensor_rows(RowKind kind, std::string_view name,
                            std::span<std::int64_t> local) const {
    const detail::RowSpace space = spaces_.of(name, kind);
    if (space.type < 0) return;
    for (auto& r : local) r -= space.start;  // the batch's types were checked (check_type)
  }

  /// Waits for each valid call of `calls` (one per group of `g`, as send_groups made them)
  /// within one deadline, checks its status (RemoteError naming `what` and the
  /// partition) and hands it to `on_reply(k, reply)`. The one send-and-collect loop every
  /// grouped request shares.
  /// In a trace each call is a request in flight from `sent_ns` (0: now) until its reply
  /// was taken, named after `what` and the partition.
  template <class OnReply>
  void collect(std::vector<PendingCall>& calls, const Groups& g, const std::string& what,
               OnReply&& on_reply, std::uint64_t sent_ns = 0) const {
    const auto d = deadline();
    if (sent_ns == 0 && trace::enabled()) sent_ns = trace::now_ns();
    for (std::size_t k = 0; k < calls.size(); ++k) {
      if (!calls[k].valid()) continue;
      const Reply r = calls[k].get(d);
      expect_ok(r, what + " on partition " + std::to_string(g.parts[k]));
      if (trace::enabled())
        trace::async_span(what + " -> partition " + std::to_string(g.parts[k]), "rpc", sent_ns,
                          {{"part", g.parts[k]},
                           {"ids", static_cast<std::int64_t>(g.count(k))},
                           {"reply_bytes", static_cast<std::int64_t>(r.body.size_bytes())}});
      on_reply(k, r);
    }
  }

  /// Sends `type` to the server of each group in `g` (the main server when `main`), with
  /// head `head(count)` and part 0 = that group's IDs; co-located groups are skipped when
  /// `skip_colocated` (their PendingCall is left invalid). Does not wait.
  template <class HeadFn>
  std::vector<PendingCall> send_groups(const Groups& g, std::span<const std::int64_t> global_ids,
                                       MsgType type, HeadFn&& head, bool skip_colocated,
                                       bool main = false) {
    std::vector<PendingCall> calls(g.parts.size());
    for (std::size_t k = 0; k < g.parts.size(); ++k) {
      if (skip_colocated && is_colocated(g.parts[k])) continue;
      calls[k] = transport_->send(
          server_for(g.parts[k], main), type,
          rows_message(head(static_cast<std::int64_t>(g.count(k))), g.ids_of(k, global_ids)));
    }
    return calls;
  }

  Deadline deadline() const { return deadline_in(options_.timeout); }

  /// A reply's `num_parts` parts as int64 arrays: the first `per_id_parts` of `count`
  /// values each, the rest of one common length; ProtocolError naming `what` otherwise.
  static std::vector<std::vector<std::int64_t>> int64_parts(const Reply& r, std::size_t num_parts,
                                                            std::size_t per_id_parts,
                                                            std::size_t count,
                                                            const std::string& what) {
    if (r.body.parts.size() != num_parts)
      throw ProtocolError(what + ": reply without " + std::to_string(num_parts) +
                          (num_parts == 1 ? " part" : " parts"));
    const std::size_t common = per_id_parts < num_parts ? r.body.parts[per_id_parts].size() / 8 : 0;
    std::vector<std::vector<std::int64_t>> v(num_parts);
    for (std::size_t i = 0; i < num_parts; ++i) {
      const std::size_t n = i < per_id_parts ? count : common;
      const auto values =
          part_as<std::int64_t>(r.body.parts[i], static_cast<std::int64_t>(n), what.c_str());
      v[i].assign(values.begin(), values.end());
    }
    return v;
  }

  /// A pull's requests to the owners: `calls[k]` to group k (invalid for a co-located
  /// group or one the row cache served whole). When the cache took some of group k's rows,
  /// `sent_at[k]` lists where the rest go (else: empty, all of g.positions(k)); the rows
  /// it took are `hit_slots` of the cache, for request positions `hit_at`.
  struct PullRequests {
    std::vector<PendingCall> calls;
    std::vector<std::vector<std::size_t>> sent_at;
    std::vector<std::int64_t> hit_slots;
    std::vector<std::size_t> hit_at;
  };

  /// pull_rows in pieces of at most options_.max_pull_bytes (at least one row each), one
  /// after another: a server refuses a reply over its frame limit.
  void pull_in_pieces(const std::string& name, RowKind kind,
                      std::span<const std::int64_t> global_ids, std::span<std::byte> out,
                      std::size_t row_bytes, bool via_cache) {
    const std::size_t rows = std::max<std::size_t>(1, options_.max_pull_bytes / row_bytes);
    for (std::size_t at = 0; at < global_ids.size(); at += rows) {
      const std::size_t n = std::min(rows, global_ids.size() - at);
      pull_rows(name, kind, global_ids.subspan(at, n), out.subspan(at * row_bytes, n * row_bytes),
                row_bytes, via_cache);
    }
  }

  /// When this machine's partition owns every row, reads them straight into `out` (no
  /// grouping, no reordering) and returns all_colocated; else returns what it learnt of
  /// the owners (filled into `owner` when owners_known). Tried before the owner pass: it is
  /// the common case of a co-located trainer, and the general path spent two book passes
  /// and a counting sort on it (in a perf profile of pull_colocated, 9.5% of the samples
  /// outside the row copies before, 3.5% after).
  Placement read_if_all_colocated(const std::string& name, RowKind kind,
                                  std::span<const std::int64_t> global_ids,
                                  std::span<std::byte> out, std::span<std::int32_t> owner) {
    if (colocated_ == nullptr || global_ids.empty()) return Placement::owners_unknown;
    std::vector<std::int64_t> local(global_ids.size());
    const Placement found = place_colocated(kind, global_ids, local, owner);
    if (found != Placement::all_colocated) return found;
    trace::Span span("read local", "fetch");
    span.arg("rows", static_cast<std::int64_t>(global_ids.size()));
    check_type(kind, name, global_ids);
    shift_to_tensor_rows(kind, name, local);
    colocated_->read_rows(name, local, out);
    return found;
  }

  /// Sends one pull request per remote group of `g` for the rows `cache` (null: none) does
  /// not hold; co-located groups are read by read_colocated_groups. Does not wait.
  PullRequests send_pulls(const std::string& name, RowKind kind,
                          std::span<const std::int64_t> global_ids, const Groups& g,
                          const RowCache<S>* cache) {
    PullRequests sent;
    sent.calls.resize(g.parts.size());
    sent.sent_at.resize(g.parts.size());
    for (std::size_t k = 0; k < g.parts.size(); ++k) {
      if (is_colocated(g.parts[k])) continue;
      auto ids = g.ids_of(k, global_ids);
      if (cache && g.parts[k] != layout_.machine_id) {
        take_cached(*cache, g.positions(k), ids, sent, k);
        if (ids.empty()) continue;
      }
      RowsRequest q{name, kind, static_cast<std::int64_t>(ids.size())};
      sent.calls[k] = transport_->send(server_for(g.parts[k]), MsgType::pull,
                                       rows_message(q.encode(), std::move(ids)));
    }
    return sent;
  }

  /// Takes the rows `cache` holds out of `ids` (group k's, for request `positions`) into
  /// sent.hit_slots and sent.hit_at; when it took any, sent.sent_at[k] lists where the
  /// rows left in `ids` go.
  static void take_cached(const RowCache<S>& cache, std::span<const std::size_t> positions,
                          std::vector<std::int64_t>& ids, PullRequests& sent, std::size_t k) {
    std::vector<std::int64_t> miss;
    std::vector<std::size_t> miss_at;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const std::size_t at = positions[i];
      if (const auto slot = cache.slot(ids[i]); slot >= 0) {
        sent.hit_slots.push_back(slot);
        sent.hit_at.push_back(at);
      } else {
        miss.push_back(ids[i]);
        miss_at.push_back(at);
      }
    }
    if (miss.size() == ids.size()) return;
    ids = std::move(miss);
    sent.sent_at[k] = std::move(miss_at);
  }

  /// Reads the rows of the co-located groups of `g` from the shared storage, each into its
  /// place in `out`.
  void read_colocated_groups(const std::string& name, RowKind kind,
                             std::span<const std::int64_t> global_ids, const Groups& g,
                             std::span<std::byte> out, std::size_t row_bytes) const {
    for (std::size_t k = 0; k < g.parts.size(); ++k) {
      if (!is_colocated(g.parts[k])) continue;
      trace::Span span("read local", "fetch");
      span.arg("rows", static_cast<std::int64_t>(g.count(k)));
      const auto gids = g.ids_of(k, global_ids);
      std::vector<std::int64_t> local(gids.size());
      to_local(kind, name, gids, local);
      read_rows_into(*colocated_, name, local, g.positions(k), out, row_bytes);
    }
  }

  /// Copies the rows send_pulls took from `cache` into their places in `out` and counts
  /// them as cached traffic.
  void read_cached(const RowCache<S>& cache, const PullRequests& sent, std::span<std::byte> out,
                   std::size_t row_bytes) const {
    trace::Span span("read cache", "fetch");
    span.arg("rows", static_cast<std::int64_t>(sent.hit_slots.size()));
    cache.read(sent.hit_slots, sent.hit_at, out);
    count_traffic(sent.hit_slots.size(), sent.hit_slots.size() * row_bytes, /*cached=*/true);
  }

  /// Puts group k's pull reply `r` into its places in `out` after checking its size
  /// (ProtocolError); returns its rows.
  std::size_t place_pulled_rows(const std::string& name, const Groups& g, const PullRequests& sent,
                                std::size_t k, const Reply& r, std::span<std::byte> out,
                                std::size_t row_bytes) const {
    const std::span<const std::size_t> at =
        sent.sent_at[k].empty() ? g.positions(k) : std::span<const std::size_t>(sent.sent_at[k]);
    const std::size_t want = at.size() * row_bytes;
    if (r.body.parts.size() != 1 || r.body.parts[0].size() != want)
      throw ProtocolError("pull '" + name + "' from partition " + std::to_string(g.parts[k]) +
                          ": reply of the wrong size; expected " + std::to_string(want) + " bytes");
    if (g.parts.size() == 1 && sent.sent_at[k].empty())
      std::memcpy(out.data(), r.body.parts[0].data(), want);  // request order already
    else
      scatter_rows(r.body.parts[0], at, out, row_bytes);
    return at.size();
  }

  /// Adds rows and bytes from other machines to remote_traffic() (shared by copies of the
  /// client) and to this thread's traffic sink, if any; `cached`: served by the row cache.
  void count_traffic(std::size_t rows, std::size_t bytes, bool cached) const {
    const auto r = static_cast<std::int64_t>(rows);
    const auto b = static_cast<std::int64_t>(bytes);
    (cached ? traffic_->cached_rows : traffic_->rows).fetch_add(r, std::memory_order_relaxed);
    (cached ? traffic_->cached_bytes : traffic_->bytes).fetch_add(b, std::memory_order_relaxed);
    if (RemoteTraffic* sink = detail::traffic_sink) {
      (cached ? sink->cached_rows : sink->rows) += r;
      (cached ? sink->cached_bytes : sink->bytes) += b;
    }
  }

  std::shared_ptr<T> transport_;
  Book book_;
  detail::RowSpaces spaces_;  ///< of the co-located partition (else partition 0): typed rows
  ClusterLayout layout_;
  std::shared_ptr<S> colocated_;
  ClientOptions options_;
  struct TrafficCounters {
    std::atomic<std::int64_t> rows{0}, bytes{0}, cached_rows{0}, cached_bytes{0};
  };
  std::shared_ptr<TrafficCounters> traffic_ = std::make_shared<TrafficCounters>();
  /// The row caches in use: replaced whole under `mu`, read without a lock by pulls.
  using CacheTable = std::vector<std::shared_ptr<const RowCache<S>>>;
  struct Caches {
    std::mutex mu;
    std::atomic<std::shared_ptr<const CacheTable>> table{std::make_shared<const CacheTable>()};
  };
  std::shared_ptr<Caches> caches_ = std::make_shared<Caches>();
};

}  // namespace distgraph
