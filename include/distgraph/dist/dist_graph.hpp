// DistGraph: the trainer's view of a partitioned graph, served by the cluster's servers.
#pragma once

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
#include "distgraph/sampling/full_neighbor_sampler.hpp"
#include "distgraph/sampling/partition_view.hpp"
#include "distgraph/sampling/sample_local.hpp"
#include "distgraph/sampling/uniform_replace_sampler.hpp"
#include "distgraph/sampling/uniform_sampler.hpp"
#include "distgraph/server/graph_server.hpp"
#include "distgraph/server/protocol.hpp"

namespace distgraph {

/// Source and destination of edges, by global ID (find_edges).
struct EdgeEnds {
  std::vector<std::int64_t> src, dst;
};

/// A partitioned graph as one graph: sizes, node/edge data as DistTensors, degrees,
/// find_edges and neighbour sampling, routed to the partitions that own each ID. The
/// same code runs standalone (StandaloneCluster, in-process transport) and distributed
/// (AsioTransport to `distgraph serve` processes): only the client differs.
///
/// With `local` (this trainer's machine partition, from load_partition: memory-mapped,
/// nothing copied) seeds it owns are sampled in the trainer without a request; the
/// result is identical either way (picks depend on the key and node only). Thread-safe.
template <PartitionBook Book, Transport T, Storage S>
class DistGraph {
 public:
  using client_type = KVClient<Book, T, S>;
  template <class V>
  using tensor_type = DistTensor<V, client_type>;

  explicit DistGraph(std::shared_ptr<client_type> client,
                     std::shared_ptr<const Partition> local = nullptr)
      : client_(std::move(client)), local_(std::move(local)) {
    if (local_ && local_->part_id != client_->layout().machine_id)
      throw InvalidArgument("DistGraph: local partition " + std::to_string(local_->part_id) +
                            " is not this trainer's machine " +
                            std::to_string(client_->layout().machine_id));
  }

  std::int64_t num_nodes() const { return book().num_nodes(); }
  std::int64_t num_edges() const { return book().num_edges(); }
  std::int64_t num_nodes(NodeType t) const { return book().num_nodes(t); }
  std::int64_t num_edges(EdgeType t) const { return book().num_edges(t); }
  const std::vector<std::string>& ntypes() const { return book().node_type_names(); }
  const std::vector<std::string>& etypes() const { return book().edge_type_names(); }
  const Book& book() const noexcept { return client_->book(); }
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
    const auto g = client_->group(RowKind::node, nodes);
    auto calls = client_->send_groups(
        g, nodes, MsgType::degrees,
        [](std::int64_t n) {
          HeadWriter w;
          w.put(static_cast<std::uint8_t>(DegreeKind::in)).put(n);
          return w.take();
        },
        false);
    std::vector<std::int64_t> out(nodes.size());
    const auto d = client_->deadline();
    for (std::size_t k = 0; k < calls.size(); ++k) {
      const Reply r = calls[k].get(d);
      expect_ok(r, "in_degrees");
      const auto v = part_as<std::int64_t>(one_part(r, "in_degrees"),
                                           static_cast<std::int64_t>(g.count(k)), "in_degrees");
      for (std::size_t i = 0; i < v.size(); ++i) out[g.order[g.offsets[k] + i]] = v[i];
    }
    return out;
  }
  /// Out-degrees of `nodes`: a node's out-edges live with their destinations' owners, so
  /// every partition is asked for its share and the shares are summed.
  std::vector<std::int64_t> out_degrees(std::span<const std::int64_t> nodes) const {
    for (auto v : nodes)
      if (v < 0 || v >= num_nodes()) throw IdOutOfRange("node id", v, 0, num_nodes());
    std::vector<PendingCall> calls;
    for (std::int32_t p = 0; p < client_->layout().num_machines; ++p) {
      HeadWriter w;
      w.put(static_cast<std::uint8_t>(DegreeKind::out))
          .put(static_cast<std::int64_t>(nodes.size()));
      calls.push_back(client_->transport().send(
          client_->server_for(p), MsgType::degrees,
          client_type::rows_message(w.take(), {nodes.begin(), nodes.end()})));
    }
    std::vector<std::int64_t> out(nodes.size(), 0);
    const auto d = client_->deadline();
    for (auto& c : calls) {
      const Reply r = c.get(d);
      expect_ok(r, "out_degrees");
      const auto v = part_as<std::int64_t>(one_part(r, "out_degrees"),
                                           static_cast<std::int64_t>(nodes.size()), "out_degrees");
      for (std::size_t i = 0; i < v.size(); ++i) out[i] += v[i];
    }
    return out;
  }
  /// Endpoints of edges `edges` (global IDs), from their owners.
  EdgeEnds find_edges(std::span<const std::int64_t> edges) const {
    const auto g = client_->group(RowKind::edge, edges);
    auto calls = client_->send_groups(
        g, edges, MsgType::find_edges,
        [](std::int64_t n) {
          HeadWriter w;
          w.put(n);
          return w.take();
        },
        false);
    EdgeEnds out{std::vector<std::int64_t>(edges.size()), std::vector<std::int64_t>(edges.size())};
    const auto d = client_->deadline();
    for (std::size_t k = 0; k < calls.size(); ++k) {
      const Reply r = calls[k].get(d);
      expect_ok(r, "find_edges");
      if (r.body.parts.size() != 2) throw ProtocolError("find_edges: reply without 2 parts");
      const auto n = static_cast<std::int64_t>(g.count(k));
      const auto s = part_as<std::int64_t>(r.body.parts[0], n, "find_edges");
      const auto t = part_as<std::int64_t>(r.body.parts[1], n, "find_edges");
      for (std::size_t i = 0; i < s.size(); ++i) {
        out.src[g.order[g.offsets[k] + i]] = s[i];
        out.dst[g.order[g.offsets[k] + i]] = t[i];
      }
    }
    return out;
  }

  /// Samples up to `fanout` in-neighbours of each seed (-1: all) with `sampler`, keyed by
  /// `key` (see SampleKey: reproducible, independent of threads and of where it runs).
  /// Seeds are grouped by owner: owned by this trainer's machine, sampled here; the rest
  /// by their owners' servers, in parallel. Edges come back grouped by owning partition
  /// (ascending), within it by seed in request order. Throws IdOutOfRange for a seed
  /// outside the graph, InvalidArgument for fanout < -1; a server that died surfaces as
  /// PeerLost, one that hangs as TimeoutError at the client's deadline.
  Frontier sample_neighbors(std::span<const std::int64_t> seeds, std::int64_t fanout,
                            const SampleKey& key, const SamplerSpec& sampler = {}) const {
    check_fanout(fanout);
    const auto g = client_->group(RowKind::node, seeds);
    const bool here = local_ != nullptr;
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
    const auto d = client_->deadline();
    Frontier out;
    for (std::size_t k = 0; k < g.parts.size(); ++k) {
      if (calls[k].valid()) {
        const Reply r = calls[k].get(d);
        expect_ok(r, "sample_neighbors on partition " + std::to_string(g.parts[k]));
        if (r.body.parts.size() != 3)
          throw ProtocolError("sample_neighbors: reply without 3 parts");
        const auto n = static_cast<std::int64_t>(r.body.parts[0].size() / 8);
        for (int a = 0; a < 3; ++a) {
          const auto v = part_as<std::int64_t>(r.body.parts[static_cast<std::size_t>(a)], n,
                                               "sample_neighbors");
          auto& dst = a == 0 ? out.src : a == 1 ? out.dst : out.eid;
          dst.insert(dst.end(), v.begin(), v.end());
        }
      } else {
        out.src.insert(out.src.end(), parts[k].src.begin(), parts[k].src.end());
        out.dst.insert(out.dst.end(), parts[k].dst.begin(), parts[k].dst.end());
        out.eid.insert(out.eid.end(), parts[k].eid.begin(), parts[k].eid.end());
      }
    }
    return out;
  }

 private:
  static std::span<const std::byte> one_part(const Reply& r, const char* what) {
    if (r.body.parts.size() != 1) throw ProtocolError(std::string(what) + ": reply without 1 part");
    return r.body.parts[0];
  }

  Frontier sample_local(const std::vector<std::int64_t>& seeds, std::int64_t fanout,
                        const SampleKey& key, const SamplerSpec& spec) const {
    std::vector<std::int64_t> local(seeds.size());
    client_->to_local(RowKind::node, seeds, local);
    const LocalGraphView view = partition_view(*local_);
    SampleOptions opts;
    opts.num_threads = 1;  // loaders parallelise over batches
    switch (spec.kind) {
      case SamplerKind::uniform:
        return sample_neighbors_local(view, local, fanout, key, UniformSampler{}, opts);
      case SamplerKind::uniform_replace:
        return sample_neighbors_local(view, local, fanout, key, UniformReplaceSampler{}, opts);
      case SamplerKind::full:
        return sample_neighbors_local(view, local, fanout, key, FullNeighborSampler{}, opts);
      case SamplerKind::weighted:
        break;
    }
    // Weighted sampling needs the probability tensor laid out by CSC position, which the
    // server builds and caches; ask the local server for it instead.
    const Reply r = client_->transport().call(
        client_->server_for(local_->part_id), MsgType::sample_neighbors,
        client_type::rows_message(
            SampleRequest{key, fanout, spec, static_cast<std::int64_t>(seeds.size())}.encode(),
            seeds),
        client_->deadline());
    expect_ok(r, "sample_neighbors (weighted)");
    Frontier f;
    const auto n = static_cast<std::int64_t>(r.body.parts.at(0).size() / 8);
    for (int a = 0; a < 3; ++a) {
      const auto v = part_as<std::int64_t>(r.body.parts.at(static_cast<std::size_t>(a)), n,
                                           "sample_neighbors");
      (a == 0 ? f.src : a == 1 ? f.dst : f.eid).assign(v.begin(), v.end());
    }
    return f;
  }

  std::shared_ptr<client_type> client_;
  std::shared_ptr<const Partition> local_;
};

}  // namespace distgraph
