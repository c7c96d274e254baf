// PartitionSite: a loaded partition (and its machine's storage) as a SamplerSite.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/partition/load_partition.hpp"
#include "distgraph/sampling/partition_view.hpp"
#include "distgraph/sampling/sampler_site.hpp"
#include "distgraph/server/ownership.hpp"
#include "distgraph/server/protocol.hpp"
#include "distgraph/storage/concepts.hpp"

namespace distgraph {

/// Partition `part` with the storage holding its rows, as the site a DistributedSampler
/// is rebuilt at: a server's, or a trainer's co-located partition (the same storage,
/// mapped), so both rebuild identical samplers. Keeps references: outlive neither the
/// partition nor the storage. Thread-safe.
template <PartitionBook Book, Storage S>
class PartitionSite final : public SamplerSite {
 public:
  /// `storage` may be null (a trainer without shared storage): then samplers that read
  /// edge data fail with InvalidArgument.
  PartitionSite(const Partition& part, const Book& book, std::shared_ptr<S> storage)
      : part_(part),
        book_(book),
        storage_(std::move(storage)),
        view_(partition_view(part)),
        num_edge_types_(book.num_edge_types()) {
    // Edge type of every position (halo edges too: the book types any global edge ID).
    if (num_edge_types_ > 1) {
      edge_types_.resize(part_.eid.size());
      std::vector<std::int64_t> per_type(part_.eid.size());
      book.edge_to_per_type(part_.eid.span(), edge_types_, per_type);
    }
  }

  const LocalGraphView& view() const override { return view_; }
  std::int32_t part_id() const override { return static_cast<std::int32_t>(part_.part_id); }
  /// CSC position of each owned edge, by local edge ID (find_edges, orig_ids, edge data),
  /// made on first use: 8 bytes per owned edge that a trainer's co-located site, which
  /// only samples, never needs (docs/SCALE.md). Thread-safe.
  const std::vector<std::int64_t>& edge_positions() const {
    std::lock_guard lock(edge_pos_mu_);
    if (!edge_pos_made_) {
      edge_pos_ = owned_edge_positions();
      edge_pos_made_ = true;
    }
    return edge_pos_;
  }

  std::span<const std::int32_t> edge_types_by_position() const override { return edge_types_; }
  std::int32_t num_edge_types() const override { return num_edge_types_; }

  Buffer<float> edge_values_by_position(const std::string& name) override {
    const TensorSpec ts = stored_spec(SiteData::edge, name);
    if (ts.dtype != DType::float32 || ts.cols != 1)
      throw DTypeError("edge data '" + name + "'", "dtype " + std::string(dtype_name(ts.dtype)) +
                                                       " x " + std::to_string(ts.cols) +
                                                       "; expected one float32 per edge");
    return edge_values<float>(name).values();
  }

  std::int64_t num_owned_nodes() const override { return part_.num_inner_nodes; }
  std::span<const std::int64_t> orig_node_ids() const override { return part_.orig_nid.span(); }

  /// Made again when edge data it read through edge_values_by_position has been written
  /// since (a push of new probabilities, by anyone sharing the storage), where the storage
  /// keeps write generations (VersionedStorage); else made once.
  std::shared_ptr<const void> cached(
      const std::string& key, const std::function<std::shared_ptr<const void>()>& make) override {
    std::lock_guard lock(mu_);
    Entry& e = cache_[key];
    if (e.value && unchanged(e.reads)) return e.value;
    Recording rec{this, {}};
    Recording* const outer = std::exchange(recording(), &rec);
    struct Restore {
      Recording* outer;
      ~Restore() { recording() = outer; }
    } restore{outer};
    auto value = make();
    e.value = std::move(value);
    e.reads = std::move(rec.reads);
    return e.value;
  }

 protected:
  /// The tensor's owned rows (all, or its type's: RowSpaces), each at its position: an
  /// owned node's local ID is its row, an owned edge's position is edge_positions().
  void read_by_position(SiteData data, const std::string& name, DType dtype,
                        const Allocate& allocate) override {
    const std::string stored = stored_name(data, name);
    const TensorSpec ts = stored_spec(data, name);  // first: a site without storage throws
    note_read(stored);  // before reading: a write that races the read moves it again
    require_dtype(subject(data, name), ts.dtype, dtype);
    const RowKind kind = data == SiteData::node ? RowKind::node : RowKind::edge;
    // Untyped data covers every owned row: no per-type spaces (O(owned IDs)) to build.
    const bool typed = typed_data_type(name, data == SiteData::node ? book_.node_type_names()
                                                                    : book_.edge_type_names()) >= 0;
    const PartId p{static_cast<std::int32_t>(part_.part_id)};
    const detail::RowSpace space =
        typed
            ? row_spaces().of(name, kind)
            : detail::RowSpace{
                  kind, -1, 0,
                  data == SiteData::node ? book_.num_owned_nodes(p) : book_.num_owned_edges(p), 0};
    std::vector<std::int64_t> rows(static_cast<std::size_t>(std::min(ts.rows, space.rows)));
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::int64_t>(i);
    std::vector<std::byte> by_row(rows.size() * ts.row_bytes());
    storage_->read_rows(stored, rows, by_row);
    const std::span<std::byte> out = allocate(ts.cols);
    place_rows(data, space.start, ts.row_bytes(), by_row, out);
  }

 private:
  static std::string stored_name(SiteData data, const std::string& name) {
    return data == SiteData::node ? node_data_name(name) : edge_data_name(name);
  }
  /// The spec of the storage's tensor for `name`. Throws InvalidArgument without a
  /// storage, NotFound naming `name` when the storage lacks it.
  TensorSpec stored_spec(SiteData data, const std::string& name) const {
    if (!storage_)
      throw InvalidArgument(subject(data, name) + ": partition " + std::to_string(part_.part_id) +
                            " is sampled without its storage; ask its server instead");
    const std::string stored = stored_name(data, name);
    if (!storage_->contains(stored))
      throw NotFound(subject(data, name),
                     "no such tensor in partition " + std::to_string(part_.part_id) + "'s storage");
    return storage_->spec(stored);
  }
  /// Copies row r of a tensor whose rows start at owned row `start` to its position: node
  /// start + r, or the CSC position of owned edge start + r. Edges outside the partition's
  /// own (deeper halos) are never a seed's in-edge, and halo nodes have no rows here: both
  /// keep the zeros `out` came with.
  void place_rows(SiteData data, std::int64_t start, std::size_t row_bytes,
                  std::span<const std::byte> by_row, std::span<std::byte> out) const {
    const std::size_t n = row_bytes == 0 ? 0 : by_row.size() / row_bytes;
    const auto* pos_of = data == SiteData::edge ? &edge_positions() : nullptr;
    for (std::size_t r = 0; r < n; ++r) {
      const auto local = static_cast<std::size_t>(start) + r;
      if (pos_of != nullptr && local >= pos_of->size()) break;
      const auto pos = static_cast<std::size_t>(pos_of ? (*pos_of)[local] : std::int64_t(local));
      std::copy_n(by_row.begin() + static_cast<std::ptrdiff_t>(r * row_bytes), row_bytes,
                  out.begin() + static_cast<std::ptrdiff_t>(pos * row_bytes));
    }
  }
  /// Where each node and edge type's owned rows start (typed data), made on first use.
  const detail::RowSpaces& row_spaces() const {
    std::call_once(spaces_made_, [this] {
      spaces_ = detail::RowSpaces(book_, static_cast<std::int32_t>(part_.part_id));
    });
    return spaces_;
  }

  /// The edge data a cached entry was made from, each with its generation then.
  using Reads = std::vector<std::pair<std::string, std::uint64_t>>;
  struct Entry {
    std::shared_ptr<const void> value;
    Reads reads;
  };
  /// What the cached() call running on this thread has read, and at which site.
  struct Recording {
    const PartitionSite* site;
    Reads reads;
  };
  static Recording*& recording() {
    thread_local Recording* current = nullptr;
    return current;
  }
  void note_read(const std::string& stored) const {
    if constexpr (VersionedStorage<S>) {
      Recording* rec = recording();
      if (rec != nullptr && rec->site == this)
        rec->reads.emplace_back(stored, storage_->generation(stored));
    }
  }
  bool unchanged(const Reads& reads) const {
    if constexpr (VersionedStorage<S>) {
      for (const auto& [name, generation] : reads)
        if (storage_->generation(name) != generation) return false;
    }
    return true;
  }

  /// edge_positions(), computed.
  std::vector<std::int64_t> owned_edge_positions() const {
    // Position in the CSC of each owned edge, by its local (book) edge ID, mapped a chunk
    // at a time: temporaries for the whole partition cost 4x the result (3 GB beside it at
    // 100M edges, in every server and trainer; docs/SCALE.md).
    std::size_t owned = 0;
    for (std::size_t e = 0; e < part_.inner_edge.size(); ++e) owned += part_.inner_edge[e] ? 1 : 0;
    std::vector<std::int64_t> out(owned, -1);
    constexpr std::size_t chunk = std::size_t{1} << 20;
    std::vector<std::int64_t> pos, gid, local;
    for (std::size_t e = 0; e < part_.eid.size();) {
      pos.clear();
      gid.clear();
      for (; e < part_.eid.size() && pos.size() < chunk; ++e)
        if (part_.inner_edge[e]) {
          pos.push_back(static_cast<std::int64_t>(e));
          gid.push_back(part_.eid[e]);
        }
      local.resize(gid.size());
      detail::global_to_owned(book_, static_cast<std::int32_t>(part_.part_id), RowKind::edge, gid,
                              local);
      for (std::size_t i = 0; i < local.size(); ++i) {
        if (local[i] < 0 || static_cast<std::size_t>(local[i]) >= owned)
          throw PartitionError("partition " + std::to_string(part_.part_id) + ": owned edge " +
                               std::to_string(gid[i]) + " has local ID " +
                               std::to_string(local[i]) + ", outside its " + std::to_string(owned) +
                               " owned edges");
        out[static_cast<std::size_t>(local[i])] = pos[i];
      }
    }
    return out;
  }

  const Partition& part_;
  Book book_;  ///< a copy: books share their arrays
  std::shared_ptr<S> storage_;
  LocalGraphView view_;
  std::int32_t num_edge_types_;
  mutable std::mutex edge_pos_mu_;
  mutable bool edge_pos_made_ = false;
  mutable std::vector<std::int64_t> edge_pos_;
  mutable std::once_flag spaces_made_;
  mutable detail::RowSpaces spaces_;
  std::vector<std::int32_t> edge_types_;  ///< by CSC position; empty for one edge type
  std::mutex mu_;
  std::map<std::string, Entry> cache_;
};

}  // namespace distgraph
