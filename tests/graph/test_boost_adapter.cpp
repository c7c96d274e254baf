#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/connected_components.hpp>
#include <boost/graph/graph_concepts.hpp>
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "distgraph/graph/boost_adapter.hpp"
#include "distgraph/graph/generators.hpp"

namespace test_graph_boost_adapter {

using namespace distgraph;

namespace {

using DirectedList = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
using UndirectedList = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;

template <class G, class V>
std::vector<std::int64_t> bfs_distances(const G& g, V source) {
  std::vector<std::int64_t> dist(num_vertices(g), -1);
  dist[static_cast<std::size_t>(source)] = 0;
  auto recorder = boost::make_bfs_visitor(boost::record_distances(
      boost::make_iterator_property_map(dist.begin(), get(boost::vertex_index, g)),
      boost::on_tree_edge()));
  boost::breadth_first_search(g, source, boost::visitor(recorder));
  return dist;
}

}  // namespace

BOOST_CONCEPT_ASSERT((boost::IncidenceGraphConcept<Csr>));
BOOST_CONCEPT_ASSERT((boost::AdjacencyGraphConcept<Csr>));
BOOST_CONCEPT_ASSERT((boost::VertexListGraphConcept<Csr>));
BOOST_CONCEPT_ASSERT((boost::EdgeListGraphConcept<Csr>));
BOOST_CONCEPT_ASSERT(
    (boost::ReadablePropertyGraphConcept<Csr, std::int64_t, boost::vertex_index_t>));

TEST_CASE("BFS on our Csr gives the distances BFS gives on an adjacency_list", "[graph]") {
  const Coo coo = rmat({.scale = 10, .edge_factor = 4, .seed = 5});
  const Graph g = build_graph(coo);
  DirectedList ref(static_cast<std::size_t>(coo.num_nodes));
  for (std::int64_t i = 0; i < coo.num_edges(); ++i)
    add_edge(static_cast<std::size_t>(coo.src[static_cast<std::size_t>(i)]),
             static_cast<std::size_t>(coo.dst[static_cast<std::size_t>(i)]), ref);
  for (std::int64_t s : {0, 1, 17, 1000}) {
    INFO("source " << s);
    CHECK(bfs_distances(g.out, s) == bfs_distances(ref, static_cast<std::size_t>(s)));
  }
}

TEST_CASE("iterating a Csr through BGL visits every edge with its edge ID", "[graph]") {
  const Coo coo{4, Buffer<std::int64_t>(std::vector<std::int64_t>{3, 0, 0, 2}),
                Buffer<std::int64_t>(std::vector<std::int64_t>{1, 2, 1, 3})};
  const Graph g = build_graph(coo);
  CHECK(num_edges(g.out) == 4);
  CHECK(num_vertices(g.out) == 4);
  CHECK(out_degree(0, g.out) == 2);
  std::vector<std::int64_t> seen(4, -1);
  auto [it, end] = edges(g.out);
  std::int64_t count = 0;
  for (; it != end; ++it, ++count) {
    const auto e = edge_id(*it, g.out);
    CHECK(source(*it, g.out) == coo.src[static_cast<std::size_t>(e)]);
    CHECK(target(*it, g.out) == coo.dst[static_cast<std::size_t>(e)]);
    seen[static_cast<std::size_t>(e)] = e;
  }
  CHECK(count == 4);
  CHECK(seen == std::vector<std::int64_t>{0, 1, 2, 3});
  auto [a, a_end] = adjacent_vertices(0, g.out);
  CHECK(std::vector<std::int64_t>(a, a_end) == std::vector<std::int64_t>{1, 2});
}

TEST_CASE("from_boost converts adjacency_lists and round-trips their edges", "[graph]") {
  DirectedList d(5);
  add_edge(0, 1, d);
  add_edge(1, 2, d);
  add_edge(4, 0, d);
  add_edge(1, 2, d);
  const Graph g = from_boost(d);
  CHECK(g.num_nodes() == 5);
  CHECK(g.num_edges() == 4);
  const Coo back = g.to_coo();
  std::vector<std::pair<std::int64_t, std::int64_t>> ours, theirs;
  for (std::int64_t i = 0; i < back.num_edges(); ++i)
    ours.emplace_back(back.src[static_cast<std::size_t>(i)], back.dst[static_cast<std::size_t>(i)]);
  auto [it, end] = edges(d);
  for (; it != end; ++it)
    theirs.emplace_back(static_cast<std::int64_t>(source(*it, d)),
                        static_cast<std::int64_t>(target(*it, d)));
  CHECK(ours == theirs);  // no cleaning: edge ID = position in edges(d)

  UndirectedList u(6);
  add_edge(0, 1, u);
  add_edge(1, 2, u);
  add_edge(3, 4, u);
  const Graph ug = from_boost(u);
  CHECK(ug.num_edges() == 6);
  CHECK(ug.out_degrees() == ug.in_degrees());
  // Components on the undirected original match reachability in our symmetric graph.
  std::vector<int> comp(6);
  CHECK(boost::connected_components(u, comp.data()) == 3);
  for (std::int64_t s = 0; s < 6; ++s) {
    const auto dist = bfs_distances(ug.out, s);
    for (std::size_t v = 0; v < 6; ++v)
      CHECK((dist[v] >= 0) == (comp[v] == comp[static_cast<std::size_t>(s)]));
  }
  const Graph simple = from_boost(d, {.remove_duplicates = true});
  CHECK(simple.num_edges() == 3);
}

}  // namespace test_graph_boost_adapter
