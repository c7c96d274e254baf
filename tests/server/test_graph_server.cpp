// KVServer and GraphServer answering requests directly: graph queries and bad requests.
#include <catch2/catch.hpp>
#include <random>

#include "distgraph/io/synthetic.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "distgraph/server/graph_server.hpp"
#include "distgraph/storage/in_memory_storage.hpp"
#include "support/temp_dir.hpp"

namespace test_server_graph_server {

using namespace distgraph;
using distgraph::test::TempDir;

namespace {

struct Fixture {
  TempDir tmp;
  Dataset data;
  std::filesystem::path config;
  Fixture() {
    SbmOptions o;
    o.num_nodes = 300;
    o.num_classes = 3;
    o.avg_degree = 5;
    o.feat_dim = 3;
    o.seed = 2;
    data = sbm_dataset(o);
    partition_dataset(data, "g", 2, tmp.path(), {.method = PartMethod::random, .seed = 1});
    config = tmp / "g.json";
  }
};

Request request(MsgType type, std::vector<std::byte> head,
                std::vector<std::span<const std::byte>> parts = {}) {
  Request r;
  r.type = type;
  r.body = Message::owning(std::move(head));
  r.body.parts = std::move(parts);
  return r;
}

template <class T>
std::span<const T> view(const Reply& r, std::size_t part) {
  const auto p = r.body.parts.at(part);
  return {reinterpret_cast<const T*>(p.data()), p.size() / sizeof(T)};
}

}  // namespace

TEST_CASE("graph servers answer degrees and find_edges consistently with the input graph",
          "[server]") {
  Fixture f;
  std::vector<std::unique_ptr<GraphServer<InMemoryStorage>>> servers;
  for (int p = 0; p < 2; ++p)
    servers.push_back(std::make_unique<GraphServer<InMemoryStorage>>(
        load_partition(f.config, p), std::make_shared<InMemoryStorage>()));
  const Graph g = dataset_graph(f.data);
  // Global -> input node ID, from the partitions.
  std::vector<std::int64_t> orig(static_cast<std::size_t>(f.data.num_nodes));
  for (auto& s : servers) {
    const auto& part = s->partition();
    for (std::size_t v = 0; v < part.nid.size(); ++v)
      orig[static_cast<std::size_t>(part.nid[v])] = part.orig_nid[v];
  }
  std::int64_t edges_seen = 0;
  for (int p = 0; p < 2; ++p) {
    auto& s = *servers[static_cast<std::size_t>(p)];
    const auto owned = (*(s.partition().book).get_if<RangePartitionBook>()).owned_nodes(PartId{p});
    const auto in = s.in_degrees(owned);
    for (std::size_t i = 0; i < owned.size(); ++i)
      REQUIRE(in[i] == g.in.degree(orig[static_cast<std::size_t>(owned[i])]));
    // find_edges over every owned edge: endpoints map back to an input edge.
    const auto edges = (*(s.partition().book).get_if<RangePartitionBook>()).owned_edges(PartId{p});
    HeadWriter w;
    w.put(static_cast<std::int64_t>(edges.size()));
    const Reply r =
        s.handle(request(MsgType::find_edges, w.take(), {std::as_bytes(std::span(edges))}));
    REQUIRE(r.status == Status::ok);
    const auto src = view<std::int64_t>(r, 0), dst = view<std::int64_t>(r, 1);
    for (std::size_t i = 0; i < edges.size(); ++i) {
      const auto u = orig[static_cast<std::size_t>(src[i])],
                 v = orig[static_cast<std::size_t>(dst[i])];
      const auto nb = g.out.neighbors(u);
      REQUIRE(std::find(nb.begin(), nb.end(), v) != nb.end());
    }
    edges_seen += static_cast<std::int64_t>(edges.size());
  }
  CHECK(edges_seen == g.num_edges());
  // Out-degree shares sum to the out-degree.
  std::vector<std::int64_t> all(static_cast<std::size_t>(f.data.num_nodes));
  std::iota(all.begin(), all.end(), 0);
  const auto a = servers[0]->out_degree_share(all), b = servers[1]->out_degree_share(all);
  for (std::size_t i = 0; i < all.size(); ++i) REQUIRE(a[i] + b[i] == g.out.degree(orig[i]));
}

TEST_CASE("a server answers malformed requests with an error status and keeps serving",
          "[server][bad_input]") {
  Fixture f;
  GraphServer<InMemoryStorage> s(load_partition(f.config, 0), std::make_shared<InMemoryStorage>());
  const auto& book = (*(s.partition().book).get_if<RangePartitionBook>());
  const auto owned = book.owned_nodes(PartId{0});
  const auto foreign = book.owned_nodes(PartId{1});
  auto pull = [&](std::string name, std::int64_t count, std::span<const std::int64_t> ids) {
    return s.handle(request(MsgType::pull,
                            RowsRequest{std::move(name), RowKind::node, count}.encode(),
                            {std::as_bytes(ids)}));
  };
  const std::vector<std::int64_t> ids(owned.begin(), owned.begin() + 5);

  CHECK(pull(node_data_name("feat"), 5, ids).status == Status::ok);
  CHECK(pull("missing", 5, ids).status == Status::not_found);
  CHECK(pull(node_data_name("feat"), 6, ids).status == Status::bad_request);  // lying count
  CHECK(pull(node_data_name("feat"), -1, ids).status == Status::bad_request);
  const std::vector<std::int64_t> theirs{foreign[0]};
  const Reply r = pull(node_data_name("feat"), 1, theirs);
  CHECK(r.status == Status::out_of_range);
  CHECK_THAT(r.text(), Catch::Contains("partition 1"));
  CHECK(s.handle(request(MsgType::pull, {std::byte{1}, std::byte{2}})).status ==
        Status::bad_request);
  CHECK(s.handle(request(static_cast<MsgType>(999), {})).status == Status::unknown_message);
  // A push whose rows are short.
  const std::vector<float> short_rows(2);
  CHECK(s.handle(request(MsgType::push,
                         RowsRequest{node_data_name("feat"), RowKind::node, 5}.encode(),
                         {std::as_bytes(std::span(ids)), std::as_bytes(std::span(short_rows))}))
            .status == Status::shape_mismatch);
  // An edge-kind request on a node tensor.
  CHECK(s.handle(request(MsgType::pull,
                         RowsRequest{node_data_name("feat"), RowKind::edge, 5}.encode(),
                         {std::as_bytes(std::span(ids))}))
            .status != Status::ok);
  // A bounded loop of random heads for every message type never escapes as an exception.
  std::mt19937_64 rng(1);
  for (int i = 0; i < 3000; ++i) {
    std::vector<std::byte> head(rng() % 64);
    for (auto& b : head) b = static_cast<std::byte>(rng());
    const auto type =
        static_cast<MsgType>(std::vector<int>{10, 11, 12, 13, 20, 21, 22, 23, 31, 32}[rng() % 10]);
    const Reply bad = s.handle(request(type, head, {std::as_bytes(std::span(ids))}));
    REQUIRE((bad.status != Status::internal_error || !bad.text().empty()));
  }
  // Still serving.
  const Reply ok = pull(node_data_name("feat"), 5, ids);
  REQUIRE(ok.status == Status::ok);
  CHECK(ok.body.parts[0].size() == 5 * 3 * sizeof(float));
}

}  // namespace test_server_graph_server
