// DistGraph: the trainer's view of a partitioned graph, served by the cluster's servers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/dist/dist_tensor.hpp"
#include "distgraph/dist/kv_client.hpp"
#include "distgraph/partition/load_partition.hpp"
#include "distgraph/sampling/frontier.hpp"
#include "distgraph/sampling/sample_local.hpp"
#include "distgraph/server/partition_site.hpp"
#include "distgraph/server/policies.hpp"
#include "distgraph/server/protocol.hpp"

namespace distgraph {

/// Source and destination of edges, by global ID (find_edges).
struct EdgeEnds {
  std::vector<std::int64_t> src, dst;
};

/// A partitioned graph as one graph, under composition P: sizes, node/edge data as
/// DistTensors, degrees, find_edges, original IDs and neighbour sampling with any sampler
/// of P's sampler set, routed to the partitions that own each ID. The same code runs
/// standalone (StandaloneCluster, in-process transport) and distributed (AsioTransport to
/// servers built with the same composition): only the client differs.
///
/// With `local` (this trainer's machine partition, from load_partition: memory-mapped,
/// nothing copied) and the machine's shared storage, seeds it owns are sampled in the
/// trainer without a request; the result is identical either way (picks depend on the key
/// and node only). Copies share the client and the local site. Thread-safe.
template <Composition P>
class BasicDistGraph {
 public:
  using policies = P;
  using book_type = typename P::book_type;
  using transport_type = typename P::transport_type;
  using storage_type = typename P::storage_type;
  using sampler_set = typename P::sampler_set;
  static_assert(Transport<transport_type>,
                "DistGraph: the composition's transport_type is not a Transport");
  using client_type = KVClient<book_type, transport_type, storage_type>;
  template <class V>
  using tensor_type = DistTensor<V, client_type>;

  explicit BasicDistGraph(std::shared_ptr<client_type> client,
                          std::shared_ptr<const Partition> local = nullptr)
      : client_(std::move(client)), local_(std::move(local)) {
    if (local_ && local_->part_id != client_->layout().machine_id)
      throw InvalidArgument("DistGraph: local partition " + std::to_string(local_->part_id) +
                            " is not this trainer's machine " +
                            std::to_string(client_->layout().machine_id));
    // Co-located sampling needs the machine's storage for samplers that read edge data.
    if (local_ && client_->colocated())
      site_ = std::make_shared<PartitionSite<book_type, storage_type>>(*local_, client_->book(),
                                                                       client_->colocated());
  }

  std::int64_t num_nodes() const { return book().num_nodes(); }
  std::int64_t num_edges() const { return book().num_edges(); }
  std::int64_t num_nodes(NodeType t) const { return book().num_nodes(t); }
  std::int64_t num_edges(EdgeType t) const { return book().num_edges(t); }
  const std::vector<std::string>& ntypes() const { return book().node_type_names(); }
  const std::vector<std::string>& etypes() const { return book().edge_type_names(); }
  const book_type& book() const noexcept { return client_->book(); }
  client_type& client() const noexcept { return *client_; }
  std::shared_ptr<client_type> client_ptr() const noexcept { return client_; }
  /// The partition of this trainer's machine (0 standalone).
  std::int32_t part_id() const noexcept { return std::max(client_->layout().machine_id, 0); }

  /// Node data `name` (as partitioned, or assigned with set_ndata). Throws NotFound.
  template <class V>
  tensor_type<V> ndata(const std::string& name) const {
    return tensor_type<V>::open(client_, node_data_name(name), RowKind::node);
  }
  template <class V>
  tensor_type<V> edata(const std::string& name) const {
    return tensor_type<V>::open(client_, edge_data_name(name), RowKind::edge);
  }
  /// Creates node data `name` (collective, see DistTensor::create).
  template <class V>
  tensor_type<V> create_ndata(const std::string& name, std::int64_t cols, InitSpec init = {}) {
    return tensor_type<V>::create(client_, node_data_name(name), RowKind::node, cols, init);
  }
  template <class V>
  tensor_type<V> create_edata(const std::string& name, std::int64_t cols, InitSpec init = {}) {
    return tensor_type<V>::create(client_, edge_data_name(name), RowKind::edge, cols, init);
  }

  /// In-degrees of `nodes` (global IDs), from their owners.
  std::vector<std::int64_t> in_degrees(std::span<const std::int64_t> nodes) const {
    return per_id_query(RowKind::node, nodes, MsgType::degrees, "in_degrees", [](std::int64_t n) {
      return DegreesRequest{DegreeKind::in, n}.encode();
    });
  }
  /// Out-degrees of `nodes`: a node's out-edges live with their destinations' owners, so
  /// every partition is asked for its share and the shares are summed.
  std::vector<std::int64_t> out_degrees(std::span<const std::int64_t> nodes) const {
    for (auto v : nodes)
      if (v < 0 || v >= num_nodes()) throw IdOutOfRange("node id", v, 0, num_nodes());
    // Every partition gets every ID: one "group" per partition.
    typename client_type::Groups g;
    g.offsets.push_back(0);
    std::vector<PendingCall> calls;
    const auto n = static_cast<std::int64_t>(nodes.size());
    for (std::int32_t p = 0; p < client_->layout().num_machines; ++p) {
      g.parts.push_back(p);
      g.offsets.push_back(nodes.size());
      calls.push_back(client_->transport().send(
          client_->server_for(p), MsgType::degrees,
          client_type::rows_message(DegreesRequest{DegreeKind::out, n}.encode(),
                                    {nodes.begin(), nodes.end()})));
    }
    std::vector<std::int64_t> out(nodes.size(), 0);
    client_->collect(calls, g, "out_degrees", [&](std::size_t, const Reply& r) {
      const auto v = part_as<std::int64_t>(one_part(r, "out_degrees"), n, "out_degrees");
      for (std::size_t i = 0; i < v.size(); ++i) out[i] += v[i];
    });
    return out;
  }
  /// Endpoints of edges `edges` (global IDs), from their owners.
  EdgeEnds find_edges(std::span<const std::int64_t> edges) const {
    const auto g = client_->group(RowKind::edge, edges);
    auto calls = client_->send_groups(
        g, edges, MsgType::find_edges, [](std::int64_t n) { return FindEdgesRequest{n}.encode(); },
        false);
    EdgeEnds out{std::vector<std::int64_t>(edges.size()), std::vector<std::int64_t>(edges.size())};
    client_->collect(calls, g, "find_edges", [&](std::size_t k, const Reply& r) {
      if (r.body.parts.size() != 2) throw ProtocolError("find_edges: reply without 2 parts");
      const auto n = static_cast<std::int64_t>(g.count(k));
      const auto s = part_as<std::int64_t>(r.body.parts[0], n, "find_edges");
      const auto t = part_as<std::int64_t>(r.body.parts[1], n, "find_edges");
      for (std::size_t i = 0; i < s.size(); ++i) {
        out.src[g.order[g.offsets[k] + i]] = s[i];
        out.dst[g.order[g.offsets[k] + i]] = t[i];
      }
    });
    return out;
  }

  /// The input graph's IDs of nodes `nodes` (global IDs of this graph): what the node was
  /// called before partitioning relabeled it, for joining results with the user's own
  /// data (node i of the dataset's arrays). From their owners; throws IdOutOfRange.
  std::vector<std::int64_t> orig_node_ids(std::span<const std::int64_t> nodes) const {
    return orig_ids(RowKind::node, nodes);
  }
  /// The input graph's IDs of edges `edges` (position in the input edge list).
  std::vector<std::int64_t> orig_edge_ids(std::span<const std::int64_t> edges) const {
    return orig_ids(RowKind::edge, edges);
  }

  /// Samples up to `fanout` in-neighbours of each seed (-1: all) with the sampler `sampler`
  /// names (default uniform), keyed by `key` (see SampleKey: reproducible, independent of
  /// threads and of where it runs). Seeds are grouped by owner: owned by this trainer's
  /// machine, sampled here; the rest by their owners' servers, in parallel. Edges come
  /// back grouped by owning partition (ascending), within it by seed in request order.
  /// Throws InvalidArgument for a sampler outside P's sampler set or fanout < -1,
  /// IdOutOfRange for a seed outside the graph, RemoteError when a server lacks the sampler
  /// or rejects its parameters; a server that died surfaces as PeerLost, one that hangs as
  /// TimeoutError at the client's deadline.
  Frontier sample_neighbors(std::span<const std::int64_t> seeds, std::int64_t fanout,
                            const SampleKey& key, const SamplerSpec& sampler = {}) const {
    check_fanout(fanout);
    if (!sampler_set::contains(sampler.name))
      throw InvalidArgument("sample_neighbors: sampler '" + sampler.name +
                            "' is not in this graph's sampler set " + sampler_set::describe());
    const auto g = client_->group(RowKind::node, seeds);
    const bool here = site_ != nullptr;
    auto calls = client_->send_groups(
        g, seeds, MsgType::sample_neighbors,
        [&](std::int64_t n) {
          return SampleRequest{key, fanout, sampler, n}.encode();
        },
        here);
    std::vector<Frontier> parts(g.parts.size());
    for (std::size_t k = 0; k < g.parts.size(); ++k)
      if (here && g.parts[k] == local_->part_id)
        parts[k] = sample_local(g.ids_of(k, seeds), fanout, key, sampler);
    client_->collect(calls, g, "sample_neighbors", [&](std::size_t k, const Reply& r) {
      if (r.body.parts.size() != 3) throw ProtocolError("sample_neighbors: reply without 3 parts");
      const auto n = static_cast<std::int64_t>(r.body.parts[0].size() / 8);
      for (int a = 0; a < 3; ++a) {
        const auto v =
            part_as<std::int64_t>(r.body.parts[static_cast<std::size_t>(a)], n, "sample_neighbors");
        auto& dst = a == 0 ? parts[k].src : a == 1 ? parts[k].dst : parts[k].eid;
        dst.assign(v.begin(), v.end());
      }
    });
    Frontier out;
    for (auto& f : parts) {
      out.src.insert(out.src.end(), f.src.begin(), f.src.end());
      out.dst.insert(out.dst.end(), f.dst.begin(), f.dst.end());
      out.eid.insert(out.eid.end(), f.eid.begin(), f.eid.end());
    }
    return out;
  }

 private:
  static std::span<const std::byte> one_part(const Reply& r, const char* what) {
    if (r.body.parts.size() != 1) throw ProtocolError(std::string(what) + ": reply without 1 part");
    return r.body.parts[0];
  }

  std::vector<std::int64_t> orig_ids(RowKind kind, std::span<const std::int64_t> ids) const {
    return per_id_query(kind, ids, MsgType::orig_ids, "orig_ids", [&](std::int64_t n) {
      return OrigIdsRequest{kind, n}.encode();
    });
  }

  /// One int64 answer per ID from each ID's owner (`type` with head `head(count)`), put
  /// back in request order.
  template <class HeadFn>
  std::vector<std::int64_t> per_id_query(RowKind kind, std::span<const std::int64_t> ids,
                                         MsgType type, const char* what, HeadFn&& head) const {
    const auto g = client_->group(kind, ids);
    auto calls = client_->send_groups(g, ids, type, head, false);
    std::vector<std::int64_t> out(ids.size());
    client_->collect(calls, g, what, [&](std::size_t k, const Reply& r) {
      const auto v =
          part_as<std::int64_t>(one_part(r, what), static_cast<std::int64_t>(g.count(k)), what);
      for (std::size_t i = 0; i < v.size(); ++i) out[g.order[g.offsets[k] + i]] = v[i];
    });
    return out;
  }

  Frontier sample_local(const std::vector<std::int64_t>& seeds, std::int64_t fanout,
                        const SampleKey& key, const SamplerSpec& spec) const {
    std::vector<std::int64_t> local(seeds.size());
    client_->to_local(RowKind::node, seeds, local);
    SampleOptions opts;
    opts.num_threads = 1;  // loaders parallelise over batches
    return sampler_set::visit(spec, *site_, [&](const auto& sampler) {
      return sample_neighbors_local(site_->view(), local, fanout, key, sampler, opts);
    });
  }

  std::shared_ptr<client_type> client_;
  std::shared_ptr<const Partition> local_;
  std::shared_ptr<PartitionSite<book_type, storage_type>> site_;
};

/// The DistGraph of a composition: `DistGraph<>` (DefaultPolicies), `DistGraph<MyPolicies>`,
/// or positional policies `DistGraph<Book, Transport, Storage>` with the built-in samplers.
template <class... A>
using DistGraph = BasicDistGraph<compose_t<A...>>;

}  // namespace distgraph
