// DistGraph: the trainer's view of a partitioned graph, served by the cluster's servers.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "distgraph/core/trace.hpp"
#include "distgraph/distributed/dist_tensor.hpp"
#include "distgraph/distributed/kv_client.hpp"
#include "distgraph/distributed/row_cache.hpp"
#include "distgraph/partition/load_partition.hpp"
#include "distgraph/partition/typed_data.hpp"
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
  using raw_tensor_type = RawDistTensor<client_type>;

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
  /// This trainer's machine partition (mapped from its files), or null when none was given.
  const Partition* local_partition() const noexcept { return local_.get(); }
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
  /// Builds this machine's shared cache of node data `name`'s rows owned by other machines
  /// and has this trainer's pulls use it (build_row_cache: collective, once per tensor;
  /// one trainer per machine calls `rank_candidates()` for the global IDs it expects to
  /// read, most wanted first, and fills up to `budget_bytes`). Only node data loaded from
  /// the partition can be cached, since it is the job's read-only input; anything else
  /// (a DistEmbedding, data made with create_ndata) throws InvalidArgument before any
  /// barrier, as does a trainer with shared storage but no local partition to check it
  /// against. Cached rows are byte for byte the owners' rows; writes to the tensor are
  /// refused from then on.
  template <class RankCandidates>
  RowCacheStats cache_remote_rows(const std::string& name, std::size_t budget_bytes,
                                  RankCandidates&& rank_candidates) const {
    if (budget_bytes > 0 && client_->colocated()) {
      if (!local_)
        throw InvalidArgument("cache_remote_rows: the graph has no local partition to check '" +
                              name + "' against");
      if (!local_->node_feats.contains(name))
        throw InvalidArgument("cache_remote_rows: '" + name +
                              "' is not node data of the partition; only the job's read-only "
                              "input features can be cached (a learnable embedding's rows "
                              "change, and cached copies would go stale)");
    }
    return build_row_cache(*client_, node_data_name(name), RowKind::node, budget_bytes,
                           std::forward<RankCandidates>(rank_candidates));
  }

  /// Node (edge) data `name` in whatever dtype it is stored, as raw rows (e.g. features
  /// partitioned with --feat-dtype). Throws NotFound.
  raw_tensor_type raw_ndata(const std::string& name) const {
    return raw_tensor_type::open(client_, node_data_name(name), RowKind::node);
  }
  raw_tensor_type raw_edata(const std::string& name) const {
    return raw_tensor_type::open(client_, edge_data_name(name), RowKind::edge);
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

  /// One node or edge type (DGL's `g.nodes[ntype]` / `g.edges[etype]`): its size, ID
  /// conversions and its data. Typed data is stored as "<type>/<name>" (typed_data.hpp):
  /// one row per node (edge) of the type, addressed like every DistTensor by global ID
  /// (to_global converts type-wise IDs; an ID of another type is refused by its owner).
  /// Cheap to copy (shares the graph's client).
  class TypeView {
   public:
    const std::string& name() const noexcept { return name_; }
    std::int32_t index() const noexcept { return type_; }
    RowKind kind() const noexcept { return kind_; }
    std::int64_t count() const {
      return kind_ == RowKind::node ? graph_.num_nodes(NodeType(type_))
                                    : graph_.num_edges(EdgeType(type_));
    }
    /// Global IDs of type-wise IDs `ids`. Throws IdOutOfRange outside [0, count()).
    std::vector<std::int64_t> to_global(std::span<const std::int64_t> ids) const {
      std::vector<std::int64_t> out(ids.size());
      if (kind_ == RowKind::node)
        graph_.book().per_type_to_node(NodeType(type_), ids, out);
      else
        graph_.book().per_type_to_edge(EdgeType(type_), ids, out);
      return out;
    }
    /// Type-wise IDs of global IDs of this type. Throws IdOutOfRange naming the type for
    /// an ID of another type or outside the graph.
    std::vector<std::int64_t> to_type_wise(std::span<const std::int64_t> global) const {
      std::vector<std::int32_t> types(global.size());
      std::vector<std::int64_t> out(global.size());
      if (kind_ == RowKind::node)
        graph_.book().node_to_per_type(global, types, out);
      else
        graph_.book().edge_to_per_type(global, types, out);
      for (std::size_t i = 0; i < types.size(); ++i)
        if (types[i] != type_)
          throw IdOutOfRange("id of type '" + name_ + "' (it has another type)", global[i], 0, 0);
      return out;
    }
    /// Data `name` of this type (as partitioned, or created with create_data). Throws
    /// NotFound.
    template <class V>
    tensor_type<V> data(const std::string& name) const {
      return tensor_type<V>::open(graph_.client_, data_name(name), kind_);
    }
    /// Data `name` of this type in whatever dtype it is stored (see raw_ndata). Throws
    /// NotFound.
    raw_tensor_type raw_data(const std::string& name) const {
      return raw_tensor_type::open(graph_.client_, data_name(name), kind_);
    }
    /// Creates data `name` of this type, one row per node (edge) of it (collective).
    template <class V>
    tensor_type<V> create_data(const std::string& name, std::int64_t cols,
                               InitSpec init = {}) const {
      return tensor_type<V>::create(graph_.client_, data_name(name), kind_, cols, init);
    }
    /// The server-side name of data `name` of this type ("node:paper/feat").
    std::string data_name(const std::string& name) const {
      const std::string typed = typed_data_name(name_, name);
      return kind_ == RowKind::node ? node_data_name(typed) : edge_data_name(typed);
    }

   private:
    friend class BasicDistGraph;
    TypeView(BasicDistGraph graph, RowKind kind, std::int32_t type, std::string name)
        : graph_(std::move(graph)), kind_(kind), type_(type), name_(std::move(name)) {}
    BasicDistGraph graph_;
    RowKind kind_;
    std::int32_t type_;
    std::string name_;
  };

  /// Index of node type `ntype`. Throws InvalidArgument naming it and the known types.
  NodeType node_type(std::string_view ntype) const {
    return NodeType(find_type(ntypes(), ntype, "node type"));
  }
  /// Index of edge type `etype`: canonical "src:etype:dst" (always unambiguous) or a
  /// relation name alone when only one edge type has it (DGL's short form; DistDGL's
  /// `g.edges[...]` rejects canonical triples). Throws InvalidArgument for an unknown or
  /// ambiguous name.
  EdgeType edge_type(std::string_view etype) const {
    const auto& names = etypes();
    if (etype.find(':') != std::string_view::npos)
      return EdgeType(find_type(names, etype, "edge type"));
    std::int32_t found = -1;
    for (std::size_t i = 0; i < names.size(); ++i) {
      const auto& n = names[i];
      const auto a = n.find(':'), b = n.rfind(':');
      if (a == std::string::npos || n.substr(a + 1, b - a - 1) != etype) continue;
      if (found >= 0)
        throw InvalidArgument("edge type '" + std::string(etype) +
                              "': ambiguous; expected a canonical src:etype:dst name, one of " +
                              join_names(names));
      found = static_cast<std::int32_t>(i);
    }
    if (found < 0) return EdgeType(find_type(names, etype, "edge type"));
    return EdgeType(found);
  }
  std::int64_t num_nodes(std::string_view ntype) const { return num_nodes(node_type(ntype)); }
  std::int64_t num_edges(std::string_view etype) const { return num_edges(edge_type(etype)); }
  /// The nodes of type `ntype` (throws as node_type).
  TypeView nodes(std::string_view ntype) const {
    const NodeType t = node_type(ntype);
    return TypeView(*this, RowKind::node, t.value, ntypes()[static_cast<std::size_t>(t.value)]);
  }
  /// The edges of type `etype`, canonical or by unique relation name (throws as edge_type).
  TypeView edges(std::string_view etype) const {
    const EdgeType t = edge_type(etype);
    return TypeView(*this, RowKind::edge, t.value, etypes()[static_cast<std::size_t>(t.value)]);
  }
  /// Node type of each global ID (DGL's `map_to_per_ntype`, types only). Throws
  /// IdOutOfRange for an ID outside the graph.
  std::vector<std::int32_t> node_types_of(std::span<const std::int64_t> nodes) const {
    std::vector<std::int32_t> types(nodes.size());
    std::vector<std::int64_t> ids(nodes.size());
    book().node_to_per_type(nodes, types, ids);
    return types;
  }
  /// Edge type of each global edge ID. Throws IdOutOfRange for an ID outside the graph.
  std::vector<std::int32_t> edge_types_of(std::span<const std::int64_t> edges) const {
    std::vector<std::int32_t> types(edges.size());
    std::vector<std::int64_t> ids(edges.size());
    book().edge_to_per_type(edges, types, ids);
    return types;
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
    const auto n = static_cast<std::int64_t>(nodes.size());
    const auto shares = client_->ask_every_partition(
        MsgType::degrees, DegreesRequest{DegreeKind::out, n}.encode(), nodes, "out_degrees");
    std::vector<std::int64_t> out(nodes.size(), 0);
    for (const auto& share : shares)
      for (std::size_t i = 0; i < share.size(); ++i) out[i] += share[i];
    return out;
  }
  /// Endpoints of edges `edges` (global IDs), from their owners.
  EdgeEnds find_edges(std::span<const std::int64_t> edges) const {
    const auto answers = client_->ask_owners(
        RowKind::edge, edges, MsgType::find_edges, "find_edges",
        [](std::int64_t n) { return FindEdgesRequest{n}.encode(); }, 2, 2);
    EdgeEnds out{std::vector<std::int64_t>(edges.size()), std::vector<std::int64_t>(edges.size())};
    for (const auto& a : answers)
      for (std::size_t i = 0; i < a.positions.size(); ++i) {
        out.src[a.positions[i]] = a.values[0][i];
        out.dst[a.positions[i]] = a.values[1][i];
      }
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
  /// TimeoutError at the client's deadline. With EdgeIds::omitted the same edges come
  /// without edge IDs (`eid` empty): owners then answer with each seed's pick count and
  /// the picks' sources (MsgType::sample_sources, a third of the bytes), and the
  /// destinations are filled in here from the seeds.
  Frontier sample_neighbors(std::span<const std::int64_t> seeds, std::int64_t fanout,
                            const SampleKey& key, const SamplerSpec& sampler = {},
                            EdgeIds edge_ids = EdgeIds::included) const {
    check_fanout(fanout);
    if (!sampler_set::contains(sampler.name))
      throw InvalidArgument("sample_neighbors: sampler '" + sampler.name +
                            "' is not in this graph's sampler set " + sampler_set::describe());
    if (edge_ids == EdgeIds::omitted) return sample_sources(seeds, fanout, key, sampler);
    auto answers = ask_samplers(
        seeds, fanout, key, sampler, MsgType::sample_neighbors, 3, 0,
        [&](const LocalGraphView& view, const auto& local, const auto& s) {
          return sample_neighbors_local(view, local, fanout, key, s, here_options());
        },
        [](Frontier f) {
          return std::vector<std::vector<std::int64_t>>{std::move(f.src), std::move(f.dst),
                                                        std::move(f.eid)};
        });
    // One owner's answer is the frontier as it stands; several are laid end to end, each
    // array sized once.
    if (answers.size() == 1)
      return Frontier{std::move(answers[0].values[0]), std::move(answers[0].values[1]),
                      std::move(answers[0].values[2])};
    Frontier out;
    std::size_t total = 0;
    for (const auto& a : answers) total += a.values[0].size();
    const std::array<std::vector<std::int64_t>*, 3> arrays{&out.src, &out.dst, &out.eid};
    for (std::size_t j = 0; j < arrays.size(); ++j) {
      arrays[j]->reserve(total);
      for (const auto& a : answers)
        arrays[j]->insert(arrays[j]->end(), a.values[j].begin(), a.values[j].end());
    }
    return out;
  }

 private:
  static std::string join_names(const std::vector<std::string>& names) {
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
    return s;
  }
  static std::int32_t find_type(const std::vector<std::string>& names, std::string_view name,
                                const char* what) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end())
      throw InvalidArgument(std::string(what) + " '" + std::string(name) +
                            "': unknown; expected one of " + join_names(names));
    return static_cast<std::int32_t>(it - names.begin());
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
    const auto answers = client_->ask_owners(kind, ids, type, what, head, 1, 1);
    std::vector<std::int64_t> out(ids.size());
    for (const auto& a : answers)
      for (std::size_t i = 0; i < a.positions.size(); ++i) out[a.positions[i]] = a.values[0][i];
    return out;
  }

  /// sample_neighbors without edge IDs: each owner's answer is its seeds' pick counts
  /// and the picks' sources; the destinations are `seeds` repeated by those counts.
  Frontier sample_sources(std::span<const std::int64_t> seeds, std::int64_t fanout,
                          const SampleKey& key, const SamplerSpec& sampler) const {
    auto answers = ask_samplers(
        seeds, fanout, key, sampler, MsgType::sample_sources, 2, 1,
        [&](const LocalGraphView& view, const auto& local, const auto& s) {
          return sample_sources_local(view, local, fanout, key, s, here_options());
        },
        [](SeedSources s) {
          return std::vector<std::vector<std::int64_t>>{std::move(s.counts), std::move(s.src)};
        });
    // Every count is checked against its answer's sources before any destination is
    // written: a reply whose counts disagree is refused, not read past.
    std::size_t total = 0;
    for (const auto& a : answers) {
      const auto& counts = a.values[0];
      const std::size_t sources = a.values[1].size();
      if (counts.size() != a.positions.size())  // a co-located sampler that broke its concept
        throw ProtocolError("sample_sources: partition " + std::to_string(a.part) + " answered " +
                            std::to_string(counts.size()) + " counts for " +
                            std::to_string(a.positions.size()) + " seeds");
      std::size_t sum = 0;
      for (const std::int64_t c : counts) {
        if (c < 0 || static_cast<std::size_t>(c) > sources - sum)
          throw ProtocolError("sample_sources: partition " + std::to_string(a.part) +
                              " answered a count of " + std::to_string(c) + " with " +
                              std::to_string(sources - sum) + " sources left");
        sum += static_cast<std::size_t>(c);
      }
      if (sum != sources)
        throw ProtocolError("sample_sources: partition " + std::to_string(a.part) +
                            " answered counts summing to " + std::to_string(sum) + " with " +
                            std::to_string(sources) + " sources");
      total += sources;
    }
    Frontier out;
    if (answers.size() == 1) {
      out.src = std::move(answers[0].values[1]);
    } else {
      out.src.reserve(total);
      for (const auto& a : answers)
        out.src.insert(out.src.end(), a.values[1].begin(), a.values[1].end());
    }
    out.dst.resize(total);
    std::int64_t* dst = out.dst.data();
    for (const auto& a : answers)
      for (std::size_t i = 0; i < a.positions.size(); ++i)
        dst = std::fill_n(dst, a.values[0][i], seeds[a.positions[i]]);
    return out;
  }

  /// Sends each owner of `seeds` request `type` (a SampleRequest) and, while those fly,
  /// answers this machine's own seeds here: `sample(view, local_seeds, sampler)` on its
  /// partition with the sampler `spec` names, laid out as the reply's parts by
  /// `parts(result)`. The owners' answers as KVClient::ask_owners returns them.
  template <class SampleFn, class PartsFn>
  auto ask_samplers(std::span<const std::int64_t> seeds, std::int64_t fanout, const SampleKey& key,
                    const SamplerSpec& spec, MsgType type, std::size_t num_parts,
                    std::size_t per_id_parts, SampleFn&& sample, PartsFn&& parts) const {
    typename client_type::AnswerHere here;
    if (site_ != nullptr)
      here = [&](std::vector<std::int64_t> ids) {
        trace::Span span("sample local", "sample");
        span.arg("seeds", static_cast<std::int64_t>(ids.size()));
        std::vector<std::int64_t> local(ids.size());
        client_->to_local(RowKind::node, ids, local);
        return parts(sampler_set::visit(spec, *site_, [&](const auto& sampler) {
          return sample(site_->view(), std::as_const(local), sampler);
        }));
      };
    return client_->ask_owners(
        RowKind::node, seeds, type, msg_type_name(type),
        [&](std::int64_t n) {
          return SampleRequest{key, fanout, spec, n}.encode();
        },
        num_parts, per_id_parts, here);
  }
  static SampleOptions here_options() {
    SampleOptions opts;
    opts.num_threads = 1;  // loaders parallelise over batches
    return opts;
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
