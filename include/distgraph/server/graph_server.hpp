// GraphServer: a KVServer that also holds its partition's graph and answers graph queries.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "distgraph/partition/load_partition.hpp"
#include "distgraph/sampling/full_neighbor_sampler.hpp"
#include "distgraph/sampling/partition_view.hpp"
#include "distgraph/sampling/sample_local.hpp"
#include "distgraph/sampling/uniform_replace_sampler.hpp"
#include "distgraph/sampling/uniform_sampler.hpp"
#include "distgraph/sampling/weighted_sampler.hpp"
#include "distgraph/server/kv_server.hpp"
#include "distgraph/server/protocol.hpp"
#include "distgraph/storage/concepts.hpp"

namespace distgraph {

/// Storage names of graph data: node data "feat" is tensor "node:feat", edge data "w"
/// is "edge:w" (one namespace per kind, so a node and an edge tensor may share a name).
inline std::string node_data_name(const std::string& name) { return "node:" + name; }
inline std::string edge_data_name(const std::string& name) { return "edge:" + name; }

/// A server's role on its machine: the main server loads the partition's features into
/// the storage; backup servers share that storage (MmapStorage) and only serve.
enum class ServerRole { main, backup };

/// Direction of a degree query.
enum class DegreeKind : std::uint8_t { in = 0, out = 1 };

/// Serves one partition: the KV protocol over its node/edge data plus graph queries
/// (degrees, find_edges). Thread-safe; handle() never throws.
template <Storage S>
class GraphServer {
 public:
  /// Takes partition `part` (from load_partition). As ServerRole::main it copies the
  /// partition's node and edge features into `storage` (reusing them if present).
  GraphServer(Partition part, std::shared_ptr<S> storage, ServerRole role = ServerRole::main)
      : part_(std::move(part)),
        kv_(std::move(storage), part_.book, static_cast<std::int32_t>(part_.part_id)) {
    if (role == ServerRole::main) {
      load_features(part_.node_feats, node_data_name);
      load_features(part_.edge_feats, edge_data_name);
    }
    index_graph();
  }

  Reply handle(const Request& req) {
    try {
      switch (req.type) {
        case MsgType::metadata:
          return text_reply(metadata().dump());
        case MsgType::degrees:
          return on_degrees(req);
        case MsgType::find_edges:
          return on_find_edges(req);
        case MsgType::sample_neighbors:
          return on_sample(req);
        default:
          return kv_.handle(req);
      }
    } catch (const ProtocolError& e) {
      return Reply::error(Status::bad_request, e.what());
    } catch (const IdOutOfRange& e) {
      return Reply::error(Status::out_of_range, e.what());
    } catch (const NotFound& e) {
      return Reply::error(Status::not_found, e.what());
    } catch (const DTypeError& e) {
      return Reply::error(Status::dtype_mismatch, e.what());
    } catch (const ShapeError& e) {
      return Reply::error(Status::shape_mismatch, e.what());
    } catch (const InvalidArgument& e) {
      return Reply::error(Status::bad_request, e.what());
    } catch (const std::exception& e) {
      return Reply::error(Status::internal_error, e.what());
    }
  }
  Handler handler() {
    return [this](const Request& r) { return handle(r); };
  }

  KVServer<S>& kv() noexcept { return kv_; }
  const Partition& partition() const noexcept { return part_; }

  nlohmann::json metadata() const {
    nlohmann::json j = kv_.metadata();
    j["graph_name"] = part_.config.graph_name;
    j["num_inner_nodes"] = part_.num_inner_nodes;
    j["num_local_nodes"] = part_.graph.num_rows;
    j["num_local_edges"] = part_.graph.num_edges();
    return j;
  }

  /// In-degrees of owned nodes `global_ids` (IdOutOfRange for others).
  std::vector<std::int64_t> in_degrees(std::span<const std::int64_t> global_ids) const {
    std::vector<std::int64_t> local(global_ids.size());
    detail::global_to_owned(part_.book, kv_.part_id(), RowKind::node, global_ids, local);
    for (auto& v : local) v = part_.graph.degree(v);
    return local;
  }
  /// Samples in-neighbours of owned seeds `global_ids` (see sample_neighbors_local): the
  /// same picks a trainer holding this partition would make for the same key.
  Frontier sample(std::span<const std::int64_t> global_ids, std::int64_t fanout,
                  const SampleKey& key, const SamplerSpec& spec) {
    std::vector<std::int64_t> local(global_ids.size());
    detail::global_to_owned(part_.book, kv_.part_id(), RowKind::node, global_ids, local);
    const LocalGraphView view = partition_view(part_);
    SampleOptions opts;
    opts.num_threads = 1;  // the server runs many requests at once
    switch (spec.kind) {
      case SamplerKind::uniform:
        return sample_neighbors_local(view, local, fanout, key, UniformSampler{}, opts);
      case SamplerKind::uniform_replace:
        return sample_neighbors_local(view, local, fanout, key, UniformReplaceSampler{}, opts);
      case SamplerKind::full:
        return sample_neighbors_local(view, local, fanout, key, FullNeighborSampler{}, opts);
      case SamplerKind::weighted:
        return sample_neighbors_local(view, local, fanout, key, weighted_sampler(spec), opts);
    }
    throw ProtocolError("sample_neighbors: unknown sampler kind");
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
    num_nodes_ = std::visit([](const auto& b) { return b.num_nodes(); }, part_.book);
    const auto n = static_cast<std::size_t>(part_.graph.num_rows);
    local_of_.reserve(n);
    for (std::size_t v = 0; v < n; ++v)
      local_of_.emplace(part_.nid[v], static_cast<std::int64_t>(v));
    // Only the edges this partition owns: deeper halos also store edges owned elsewhere,
    // which their owners count.
    out_share_.assign(n, 0);
    const auto sources = part_.graph.indices.span();
    for (std::size_t e = 0; e < sources.size(); ++e)
      if (part_.inner_edge[e]) ++out_share_[static_cast<std::size_t>(sources[e])];
    // Position in the CSC of each owned edge, by its local (book) edge ID.
    std::vector<std::int64_t> owned_pos, owned_gid;
    for (std::size_t e = 0; e < part_.eid.size(); ++e)
      if (part_.inner_edge[e]) {
        owned_pos.push_back(static_cast<std::int64_t>(e));
        owned_gid.push_back(part_.eid[e]);
      }
    std::vector<std::int64_t> owned_local(owned_gid.size());
    detail::global_to_owned(part_.book, kv_.part_id(), RowKind::edge, owned_gid, owned_local);
    edge_pos_.assign(owned_gid.size(), -1);
    for (std::size_t i = 0; i < owned_local.size(); ++i)
      edge_pos_[static_cast<std::size_t>(owned_local[i])] = owned_pos[i];
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

  Reply on_sample(const Request& req) {
    const auto q = SampleRequest::decode(req.body.head);
    if (req.body.parts.size() != 1)
      throw ProtocolError("sample_neighbors: expected 1 part (seeds)");
    const auto seeds = part_as<std::int64_t>(req.body.parts[0], q.count, "sample_neighbors");
    Frontier f = sample(seeds, q.fanout, q.key, q.sampler);
    return ids_reply({std::move(f.src), std::move(f.dst), std::move(f.eid)});
  }

  /// The weighted sampler over edge data tensor `spec.prob`, its values laid out by CSC
  /// position; built on first use and cached (a later push to the tensor is not seen).
  WeightedSampler weighted_sampler(const SamplerSpec& spec) {
    const std::string name = edge_data_name(spec.prob);
    std::lock_guard lock(weights_mu_);
    const std::string key = name + (spec.replace ? "#r" : "#n");
    if (auto it = weights_.find(key); it != weights_.end()) return it->second;
    const TensorSpec ts = kv_.storage().spec(name);
    if (ts.dtype != DType::float32 || ts.cols != 1)
      throw DTypeError("edge data '" + spec.prob + "'",
                       "probabilities must be one float32 per edge");
    std::vector<std::int64_t> rows(static_cast<std::size_t>(ts.rows));
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::int64_t>(i);
    std::vector<float> by_local(rows.size());
    kv_.storage().read_rows(name, rows, std::as_writable_bytes(std::span(by_local)));
    // Edges outside the partition's own (deeper halos) are never a seed's in-edge: 0.
    std::vector<float> by_pos(static_cast<std::size_t>(part_.graph.num_edges()), 0.0f);
    for (std::size_t l = 0; l < edge_pos_.size() && l < by_local.size(); ++l)
      by_pos[static_cast<std::size_t>(edge_pos_[l])] = by_local[l];
    WeightedOptions wo;
    wo.replace = spec.replace;
    return weights_.emplace(key, WeightedSampler(std::move(by_pos), wo)).first->second;
  }

  /// degrees: head = u8 kind (in/out), i64 count; part 0 = global node IDs. Reply part 0
  /// = int64 degrees (out: this partition's share; the trainer sums over partitions).
  Reply on_degrees(const Request& req) {
    HeadReader r(req.body.head, "degrees");
    const auto kind = static_cast<DegreeKind>(r.get<std::uint8_t>());
    const auto count = r.get<std::int64_t>();
    r.finish();
    if (req.body.parts.size() != 1) throw ProtocolError("degrees: expected 1 part (node IDs)");
    const auto ids = part_as<std::int64_t>(req.body.parts[0], count, "degrees");
    if (kind == DegreeKind::in) return ids_reply({in_degrees(ids)});
    if (kind == DegreeKind::out) return ids_reply({out_degree_share(ids)});
    throw ProtocolError("degrees: unknown direction");
  }

  /// find_edges: head = i64 count; part 0 = owned global edge IDs. Reply parts = global
  /// source IDs, global destination IDs.
  Reply on_find_edges(const Request& req) {
    HeadReader r(req.body.head, "find_edges");
    const auto count = r.get<std::int64_t>();
    r.finish();
    if (req.body.parts.size() != 1) throw ProtocolError("find_edges: expected 1 part (edge IDs)");
    const auto ids = part_as<std::int64_t>(req.body.parts[0], count, "find_edges");
    std::vector<std::int64_t> local(ids.size());
    detail::global_to_owned(part_.book, kv_.part_id(), RowKind::edge, ids, local);
    std::vector<std::int64_t> src(ids.size()), dst(ids.size());
    const auto indptr = part_.graph.indptr.span();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const std::int64_t pos = edge_pos_[static_cast<std::size_t>(local[i])];
      // The destination is the CSC row whose range holds `pos`.
      const auto row = std::upper_bound(indptr.begin(), indptr.end(), pos) - indptr.begin() - 1;
      src[i] =
          part_.nid[static_cast<std::size_t>(part_.graph.indices[static_cast<std::size_t>(pos)])];
      dst[i] = part_.nid[static_cast<std::size_t>(row)];
    }
    return ids_reply({std::move(src), std::move(dst)});
  }

  Partition part_;
  KVServer<S> kv_;
  std::int64_t num_nodes_ = 0;
  std::unordered_map<std::int64_t, std::int64_t> local_of_;  // global -> local node
  std::vector<std::int64_t> out_share_;                      // per local node
  std::vector<std::int64_t> edge_pos_;                       // owned edge -> CSC position
  std::mutex weights_mu_;
  std::map<std::string, WeightedSampler> weights_;
};

}  // namespace distgraph
