// GraphServer: a KVServer that also holds its partition's graph and answers graph queries.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "distgraph/partition/load_partition.hpp"
#include "distgraph/sampling/sample_local.hpp"
#include "distgraph/server/kv_server.hpp"
#include "distgraph/server/partition_site.hpp"
#include "distgraph/server/policies.hpp"
#include "distgraph/server/protocol.hpp"
#include "distgraph/storage/concepts.hpp"

namespace distgraph {

/// A server's role on its machine: the main server loads the partition's features into
/// the storage; backup servers share that storage (MmapStorage) and only serve.
enum class ServerRole { main, backup };

/// Serves one partition under composition P: the KV protocol over its node/edge data
/// (P's storage, addressed through P's book) plus graph queries (degrees, find_edges,
/// original IDs) and sampling with any sampler of P's sampler set, named by the request.
/// Thread-safe; handle() never throws.
template <Composition P>
class BasicGraphServer {
 public:
  using policies = P;
  using book_type = typename P::book_type;
  using storage_type = typename P::storage_type;
  using sampler_set = typename P::sampler_set;

  /// Takes partition `part` (from load_partition) and builds P's book for it. As
  /// ServerRole::main it copies the partition's node and edge features into `storage`
  /// (reusing them if present).
  BasicGraphServer(Partition part, std::shared_ptr<storage_type> storage,
                   ServerRole role = ServerRole::main)
      : part_(std::make_unique<Partition>(std::move(part))),
        kv_(storage, partition_book<book_type>(*part_), static_cast<std::int32_t>(part_->part_id)),
        site_(*part_, kv_.book(), storage) {
    if (role == ServerRole::main) {
      load_features(part_->node_feats, node_data_name);
      load_features(part_->edge_feats, edge_data_name);
    }
    index_graph();
  }

  Reply handle(const Request& req) {
    try {
      switch (req.type) {
        case MsgType::metadata:
          require_empty_body(req.body, req.type);
          return text_reply(metadata().dump());
        case MsgType::degrees:
          return on_degrees(req);
        case MsgType::find_edges:
          return on_find_edges(req);
        case MsgType::orig_ids:
          return on_orig_ids(req);
        case MsgType::sample_neighbors:
          return on_sample(req);
        case MsgType::sample_sources:
          return on_sample_sources(req);
        default:
          return kv_.handle(req);
      }
    } catch (const std::exception& e) {
      return error_reply(e, req.type);
    }
  }
  Handler handler() {
    return [this](const Request& r) { return handle(r); };
  }

  KVServer<storage_type, book_type>& kv() noexcept { return kv_; }
  const Partition& partition() const noexcept { return *part_; }

  /// The KV facts plus the graph's, and the composition trainers must match: the book's
  /// kind and fingerprint (book_fingerprint) and the sampler set's names.
  nlohmann::json metadata() const {
    nlohmann::json j = kv_.metadata();
    j["graph_name"] = part_->config.graph_name;
    j["num_inner_nodes"] = part_->num_inner_nodes;
    j["num_local_nodes"] = part_->graph.num_rows;
    j["num_local_edges"] = part_->graph.num_edges();
    j["book"] = book_kind_name(kv_.book());
    j["book_fingerprint"] = std::to_string(book_fingerprint(kv_.book()));
    nlohmann::json names = nlohmann::json::array();
    for (auto n : sampler_set::names) names.push_back(std::string(n));
    j["samplers"] = names;
    return j;
  }

  /// In-degrees of owned nodes `global_ids` (IdOutOfRange for others).
  std::vector<std::int64_t> in_degrees(std::span<const std::int64_t> global_ids) const {
    std::vector<std::int64_t> local = owned_nodes(global_ids);
    for (auto& v : local) v = part_->graph.degree(v);
    return local;
  }
  /// Samples in-neighbours of owned seeds `global_ids` with the sampler `spec` names (see
  /// sample_neighbors_local): the same picks a trainer holding this partition would make
  /// for the same key. Throws ProtocolError for a sampler outside P's set or malformed
  /// parameters.
  Frontier sample(std::span<const std::int64_t> global_ids, std::int64_t fanout,
                  const SampleKey& key, const SamplerSpec& spec) {
    return sample_owned(owned_nodes(global_ids), fanout, key, spec);
  }

  /// This partition's share of the out-degrees of any nodes: the edges it owns whose
  /// source is the node (a node's out-edges are spread over its neighbours' owners).
  std::vector<std::int64_t> out_degree_share(std::span<const std::int64_t> global_ids) const {
    std::vector<std::int64_t> out(global_ids.size(), 0);
    for (std::size_t i = 0; i < global_ids.size(); ++i) {
      if (global_ids[i] < 0 || global_ids[i] >= num_nodes_)
        throw IdOutOfRange("node id", global_ids[i], 0, num_nodes_);
      const auto it = local_of_.find(global_ids[i]);
      if (it != local_of_.end()) out[i] = out_share_[static_cast<std::size_t>(it->second)];
    }
    return out;
  }

 private:
  template <class Namer>
  void load_features(const std::map<std::string, HostTensor>& feats, Namer namer) {
    for (const auto& [name, t] : feats) {
      TensorSpec spec{namer(name), t.dtype, t.rows(), t.row_elements()};
      const auto bytes = t.bytes.span();
      kv_.storage().create(spec, std::span<const std::byte>(bytes.data(), bytes.size()));
    }
  }

  void index_graph() {
    num_nodes_ = kv_.book().num_nodes();
    const auto n = static_cast<std::size_t>(part_->graph.num_rows);
    local_of_.reserve(n);
    for (std::size_t v = 0; v < n; ++v)
      local_of_.emplace(part_->nid[v], static_cast<std::int64_t>(v));
    // Only the edges this partition owns: deeper halos also store edges owned elsewhere,
    // which their owners count.
    out_share_.assign(n, 0);
    const auto sources = part_->graph.indices.span();
    for (std::size_t e = 0; e < sources.size(); ++e)
      if (part_->inner_edge[e]) ++out_share_[static_cast<std::size_t>(sources[e])];
  }

  /// Owned nodes' local IDs (IdOutOfRange for others).
  std::vector<std::int64_t> owned_nodes(std::span<const std::int64_t> global_ids) const {
    std::vector<std::int64_t> local(global_ids.size());
    detail::global_to_owned(kv_.book(), kv_.part_id(), RowKind::node, global_ids, local);
    return local;
  }
  Frontier sample_owned(const std::vector<std::int64_t>& local, std::int64_t fanout,
                        const SampleKey& key, const SamplerSpec& spec) {
    return visit_sampler(spec, [&](const auto& sampler, const SampleOptions& opts) {
      return sample_neighbors_local(site_.view(), local, fanout, key, sampler, opts);
    });
  }
  /// `sample(sampler, options)` with the sampler `spec` names, on one thread: the server
  /// runs many requests at once.
  template <class SampleFn>
  auto visit_sampler(const SamplerSpec& spec, SampleFn&& sample) {
    SampleOptions opts;
    opts.num_threads = 1;
    return sampler_set::visit(spec, site_,
                              [&](const auto& sampler) { return sample(sampler, opts); });
  }

  static Reply text_reply(const std::string& s) {
    std::vector<std::byte> b(s.size());
    std::memcpy(b.data(), s.data(), s.size());
    return Reply{Status::ok, Message::owning(std::move(b))};
  }
  static Reply ids_reply(std::vector<std::vector<std::int64_t>> arrays) {
    auto owned = std::make_shared<std::vector<std::vector<std::int64_t>>>(std::move(arrays));
    Reply r;
    for (const auto& a : *owned) r.body.parts.push_back(std::as_bytes(std::span(a)));
    r.body.keep_alive = owned;
    return r;
  }
  /// Part 0 of `req` as `count` int64 IDs (ProtocolError otherwise).
  static std::span<const std::int64_t> id_part(const Request& req, std::int64_t count,
                                               const char* subject) {
    if (req.body.parts.size() != 1)
      throw ProtocolError(std::string(subject) + ": " + std::to_string(req.body.parts.size()) +
                          " parts; expected 1 (IDs)");
    return part_as<std::int64_t>(req.body.parts[0], count, subject);
  }

  /// The owned seeds of a sample request (sample_neighbors or sample_sources), checked
  /// against the reply limit for `pick_bytes` a pick and `seed_bytes` a seed.
  std::vector<std::int64_t> sample_seeds(const Request& req, const SampleRequest& q,
                                         std::uint64_t pick_bytes, std::uint64_t seed_bytes) {
    const std::string what = msg_type_name(req.type);
    const auto seeds = id_part(req, q.count, what.c_str());
    check_fanout(q.fanout, what + ": fanout");
    auto local = owned_nodes(seeds);
    check_sample_size(what, local, q.fanout, pick_bytes, seed_bytes);
    return local;
  }

  Reply on_sample(const Request& req) {
    const auto q = SampleRequest::decode(req.body.head);
    const auto local = sample_seeds(req, q, 3 * sizeof(std::int64_t), 0);
    Frontier f = sample_owned(local, q.fanout, q.key, q.sampler);
    return ids_reply({std::move(f.src), std::move(f.dst), std::move(f.eid)});
  }

  /// Part 0: the picks of each seed, in request order; part 1: each pick's source.
  Reply on_sample_sources(const Request& req) {
    const auto q = SampleRequest::decode(req.body.head);
    const auto local = sample_seeds(req, q, sizeof(std::int64_t), sizeof(std::int64_t));
    SeedSources s = visit_sampler(q.sampler, [&](const auto& sampler, const SampleOptions& opts) {
      return sample_sources_local(site_.view(), local, q.fanout, q.key, sampler, opts);
    });
    return ids_reply({std::move(s.counts), std::move(s.src)});
  }

  /// Refuses (frame_too_large) a sample whose reply could pass the reply limit, before any
  /// sampling: every sampler picks at most `fanout` edges per seed (all of them for -1, none
  /// for a seed without in-edges); each pick costs `pick_bytes` (24 for sample_neighbors:
  /// source, destination, edge ID; 8 for sample_sources) and each seed `seed_bytes`.
  void check_sample_size(const std::string& what, const std::vector<std::int64_t>& local,
                         std::int64_t fanout, std::uint64_t pick_bytes,
                         std::uint64_t seed_bytes) const {
    // The usual request (a fanout of tens) fits without looking at a single degree.
    const std::uint64_t limit = kv_.max_reply_bytes();
    const auto n = static_cast<std::uint64_t>(local.size());
    if (std::uint64_t per_seed = 0, all = 0;
        fanout >= 0 && static_cast<std::uint64_t>(fanout) <= limit / pick_bytes &&
        !__builtin_add_overflow(static_cast<std::uint64_t>(fanout) * pick_bytes, seed_bytes,
                                &per_seed) &&
        !__builtin_mul_overflow(n, per_seed, &all) && all <= limit)
      return;
    // A huge fanout on repeated seeds must not wrap the sum back under the limit.
    std::uint64_t picks = 0;
    bool too_many = false;
    for (const std::int64_t v : local) {
      const auto degree = static_cast<std::uint64_t>(part_->graph.degree(v));
      const std::uint64_t p = degree == 0  ? 0
                              : fanout < 0 ? degree
                                           : static_cast<std::uint64_t>(fanout);
      if (__builtin_add_overflow(picks, p, &picks)) {
        too_many = true;
        break;
      }
    }
    std::uint64_t bytes = 0;
    const bool overflows = too_many || __builtin_mul_overflow(picks, pick_bytes, &bytes) ||
                           __builtin_add_overflow(bytes, n * seed_bytes, &bytes);
    kv_.check_reply_size(
        what + " of " + std::to_string(local.size()) + " seeds, fanout " + std::to_string(fanout) +
            (too_many ? " (2^64 picks or more)" : " (at most " + std::to_string(picks) + " picks)"),
        overflows ? std::numeric_limits<std::uint64_t>::max() : bytes, 1);
  }

  Reply on_degrees(const Request& req) {
    const auto q = DegreesRequest::decode(req.body.head);
    const auto ids = id_part(req, q.count, "degrees");
    if (q.kind == DegreeKind::in) return ids_reply({in_degrees(ids)});
    return ids_reply({out_degree_share(ids)});
  }

  Reply on_find_edges(const Request& req) {
    const auto q = FindEdgesRequest::decode(req.body.head);
    const auto ids = id_part(req, q.count, "find_edges");
    std::vector<std::int64_t> local(ids.size());
    detail::global_to_owned(kv_.book(), kv_.part_id(), RowKind::edge, ids, local);
    std::vector<std::int64_t> src(ids.size()), dst(ids.size());
    const auto indptr = part_->graph.indptr.span();
    const auto& pos_of = site_.edge_positions();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const std::int64_t pos = pos_of[static_cast<std::size_t>(local[i])];
      // The destination is the CSC row whose range holds `pos`.
      const auto row = std::upper_bound(indptr.begin(), indptr.end(), pos) - indptr.begin() - 1;
      src[i] =
          part_->nid[static_cast<std::size_t>(part_->graph.indices[static_cast<std::size_t>(pos)])];
      dst[i] = part_->nid[static_cast<std::size_t>(row)];
    }
    return ids_reply({std::move(src), std::move(dst)});
  }

  /// Owned nodes are local rows [0, num_inner_nodes) in book order, so a node's input ID is
  /// orig_nid at its book-local ID; an owned edge's is orig_eid at its CSC position.
  Reply on_orig_ids(const Request& req) {
    const auto q = OrigIdsRequest::decode(req.body.head);
    const auto ids = id_part(req, q.count, "orig_ids");
    std::vector<std::int64_t> local(ids.size());
    detail::global_to_owned(kv_.book(), kv_.part_id(), q.kind, ids, local);
    // Edge positions are built on first use (and locked per call): fetched once, and only
    // for edges.
    const std::vector<std::int64_t>* pos_of =
        q.kind == RowKind::edge ? &site_.edge_positions() : nullptr;
    for (auto& v : local)
      v = pos_of == nullptr
              ? part_->orig_nid[static_cast<std::size_t>(v)]
              : part_->orig_eid[static_cast<std::size_t>((*pos_of)[static_cast<std::size_t>(v)])];
    return ids_reply({std::move(local)});
  }

  // The partition is held by pointer: the site and the mapped arrays keep referring to it
  // when the server moves.
  std::unique_ptr<Partition> part_;
  KVServer<storage_type, book_type> kv_;
  PartitionSite<book_type, storage_type> site_;
  std::int64_t num_nodes_ = 0;
  std::unordered_map<std::int64_t, std::int64_t> local_of_;  // global -> local node
  std::vector<std::int64_t> out_share_;                      // per local node
};

/// A graph server over composition `X` (DefaultPolicies when omitted); `X` may also be a
/// Storage alone, for the default composition with that storage (GraphServer<InMemoryStorage>).
template <class X = DefaultPolicies>
using GraphServer = BasicGraphServer<typename detail::server_compose<X>::type>;

}  // namespace distgraph
