// What `distgraph partition` prints when it is done, in one process or over MPI ranks.
#pragma once

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "distgraph/partition/partition_graph.hpp"

namespace distgraph::cli {

/// The summary of a partitioning run as one JSON object (`--json`), `input` as given.
inline nlohmann::json summary_json(const PartitionResult& r, const std::string& input) {
  nlohmann::json parts = nlohmann::json::array();
  for (std::size_t p = 0; p < r.parts.size(); ++p) {
    const auto& s = r.parts[p];
    nlohmann::json j = {{"part", p},
                        {"nodes", s.inner_nodes},
                        {"halo_nodes", s.halo_nodes},
                        {"edges", s.inner_edges},
                        {"local_edges", s.local_edges}};
    if (!s.class_counts.empty()) {
      j["train_nodes"] = s.class_counts[0];
      j["class_counts"] = s.class_counts;
    }
    parts.push_back(j);
  }
  nlohmann::json stages = nlohmann::json::object();
  double total = 0;
  for (const auto& st : r.stages) {
    stages[st.name] = st.seconds;
    total += st.seconds;
  }
  return {{"input", input},
          {"config", r.config.path.string()},
          {"graph_name", r.config.graph_name},
          {"method", r.config.part_method},
          {"num_parts", r.config.num_parts},
          {"num_nodes", r.config.num_nodes},
          {"num_edges", r.config.num_edges},
          {"edge_cut", r.cross_edges},
          {"edge_cut_fraction", r.config.num_edges > 0 ? static_cast<double>(r.cross_edges) /
                                                             static_cast<double>(r.config.num_edges)
                                                       : 0.0},
          {"metis_edge_cut", r.metis_edge_cut},
          {"node_balance", r.node_balance},
          {"edge_balance", r.edge_balance},
          {"class_balance", r.class_balance},
          {"parts", parts},
          {"stage_s", stages},
          {"total_s", total},
          {"peak_rss_bytes", r.peak_rss_bytes}};
}

/// The summary for people: sizes, cut, balance, time and memory.
inline void print_summary(const nlohmann::json& j) {
  std::printf("partitioned %s into %lld parts (%s) -> %s\n", j["input"].get<std::string>().c_str(),
              j["num_parts"].get<long long>(), j["method"].get<std::string>().c_str(),
              j["config"].get<std::string>().c_str());
  std::printf("nodes %lld, edges %lld, edge cut %lld (%.2f%% of edges)",
              j["num_nodes"].get<long long>(), j["num_edges"].get<long long>(),
              j["edge_cut"].get<long long>(), 100.0 * j["edge_cut_fraction"].get<double>());
  if (j["metis_edge_cut"].get<long long>() >= 0)
    std::printf(", METIS objective %lld", j["metis_edge_cut"].get<long long>());
  std::printf("\n%6s %12s %12s %12s %12s\n", "part", "nodes", "halo", "edges", "train");
  for (const auto& p : j["parts"])
    std::printf(
        "%6lld %12lld %12lld %12lld %12s\n", p["part"].get<long long>(),
        p["nodes"].get<long long>(), p["halo_nodes"].get<long long>(), p["edges"].get<long long>(),
        p.contains("train_nodes") ? std::to_string(p["train_nodes"].get<long long>()).c_str()
                                  : "-");
  std::printf("balance (max/mean): nodes %.3f, edges %.3f", j["node_balance"].get<double>(),
              j["edge_balance"].get<double>());
  const char* names[] = {"train", "val", "test", "other"};
  std::size_t k = 0;
  for (const auto& b : j["class_balance"])
    std::printf(", %s %.3f", k < 4 ? names[k++] : "class", b.get<double>());
  // The stages were printed as they ran; only the total is repeated here.
  std::printf("\ntime: total %.3f s; peak memory %.1f MiB\n", j["total_s"].get<double>(),
              static_cast<double>(j["peak_rss_bytes"].get<long long>()) / (1 << 20));
  // A low cut can come from one partition taking a power-law graph's dense core (METIS
  // too, PHG most: PERFORMANCE.md, R-MAT): servers and trainers then work in proportion to
  // its edges. Over 2x the mean, or 3/4 of all edges where 2x cannot be (2 parts).
  const double edges = j["edge_balance"].get<double>();
  if (edges > std::min(2.0, 0.75 * j["num_parts"].get<double>()))
    std::printf(
        "note: the largest partition holds %.1fx the mean's edges; its server and trainers "
        "do that much more of the work: --balance-edges evens the edges out\n",
        edges);
}

}  // namespace distgraph::cli
