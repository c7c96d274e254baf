// The partition config file (`<name>.json`): DGL-compatible keys plus distgraph's own.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/durable_file.hpp"
#include "distgraph/core/error.hpp"

namespace distgraph {

/// Where one partition's files live, relative to the config's folder.
struct PartitionPaths {
  std::string part_graph;  ///< e.g. "part0/graph"
  std::string node_feats;  ///< e.g. "part0/node_feat"
  std::string edge_feats;  ///< e.g. "part0/edge_feat"
};

/// Name, dtype and row shape of a feature tensor stored per partition.
struct FeatureSpec {
  std::string name;
  std::string dtype;                ///< NumPy dtype name, e.g. "float32"
  std::vector<std::int64_t> shape;  ///< full shape over all partitions, rows first
};

/// Per-partition counts recorded at partition time and checked at load time.
struct PartitionCounts {
  std::int64_t inner_nodes = 0, halo_nodes = 0, inner_edges = 0, local_edges = 0;
};

/// Contents of `<name>.json`. Keys follow DGL's partition config (`graph_name`,
/// `part_method`, `num_parts`, `halo_hops`, `node_map`, `edge_map`, `ntypes`, `etypes`,
/// `num_nodes`, `num_edges`, `part-<i>`); distgraph's extras live under "distgraph".
struct PartitionConfig {
  std::filesystem::path path;  ///< the config file itself; partition paths are relative to it
  std::string graph_name;
  std::string part_method;  ///< "metis", "random" or "custom"
  std::int64_t num_parts = 0;
  std::int64_t halo_hops = 1;
  std::int64_t num_nodes = 0, num_edges = 0;
  std::vector<std::string> ntypes{"_N"};
  std::vector<std::string> etypes{"_N:_E:_N"};  ///< canonical "src:edge:dst"
  bool relabeled = true;
  /// With relabeling: [type][part] = [start, end) of global IDs. Without: empty.
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> node_ranges, edge_ranges;
  std::string node_map_file, edge_map_file;  ///< without relabeling: "node_map.npy", ...
  std::vector<PartitionPaths> parts;
  std::vector<PartitionCounts> counts;
  std::vector<FeatureSpec> node_feats, edge_feats;
  nlohmann::json extra = nlohmann::json::object();  ///< balance report, seed, timings

  std::filesystem::path folder() const { return path.parent_path(); }
  std::filesystem::path resolve(const std::string& rel) const { return folder() / rel; }
};

namespace detail {

inline std::string config_subject(const std::filesystem::path& p, const std::string& key) {
  return p.string() + ": key '" + key + "'";
}

template <class T>
T config_get(const nlohmann::json& j, const std::filesystem::path& p, const std::string& key) {
  auto it = j.find(key);
  if (it == j.end()) throw FormatError(p.string(), "missing key '" + key + "'");
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw FormatError(
        p.string(), "key '" + key + "' has the wrong type (" + std::string(it->type_name()) + ")");
  }
}

inline std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> parse_ranges(
    const nlohmann::json& j, const std::filesystem::path& p, const std::string& key,
    const std::vector<std::string>& types, std::int64_t num_parts, std::int64_t total) {
  if (!j.is_object())
    throw FormatError(p.string(), "key '" + key + "' must map each type to its ranges");
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> out;
  std::int64_t covered = 0;
  for (const auto& t : types) {
    auto it = j.find(t);
    if (it == j.end())
      throw FormatError(p.string(), "key '" + key + "' has no entry for type '" + t + "'");
    std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
    try {
      for (const auto& r : *it)
        ranges.emplace_back(r.at(0).get<std::int64_t>(), r.at(1).get<std::int64_t>());
    } catch (const nlohmann::json::exception&) {
      throw FormatError(p.string(),
                        "key '" + key + "' type '" + t + "': ranges must be [[start, end], ...]");
    }
    if (static_cast<std::int64_t>(ranges.size()) != num_parts)
      throw FormatError(p.string(), "key '" + key + "' type '" + t + "' has " +
                                        std::to_string(ranges.size()) + " ranges; num_parts is " +
                                        std::to_string(num_parts));
    for (const auto& [s, e] : ranges) {
      if (s < 0 || e < s || e > total)
        throw FormatError(p.string(),
                          "key '" + key + "' type '" + t + "' has range [" + std::to_string(s) +
                              ", " + std::to_string(e) +
                              "); expected 0 <= start <= end <= " + std::to_string(total));
      covered += e - s;
    }
    out.push_back(std::move(ranges));
  }
  if (covered != total)
    throw FormatError(p.string(), "key '" + key + "' ranges cover " + std::to_string(covered) +
                                      " IDs; expected " + std::to_string(total));
  return out;
}

inline nlohmann::json ranges_json(
    const std::vector<std::string>& types,
    const std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>>& ranges) {
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t t = 0; t < types.size(); ++t) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [s, e] : ranges[t]) list.push_back({s, e});
    j[types[t]] = list;
  }
  return j;
}

inline std::vector<std::string> type_names(const nlohmann::json& j, const std::filesystem::path& p,
                                           const std::string& key) {
  // DGL writes {"name": type_id}; order by id.
  if (!j.is_object() || j.empty())
    throw FormatError(p.string(), "key '" + key + "' must be a non-empty {name: id} object");
  std::vector<std::string> names(j.size());
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_number_integer())
      throw FormatError(p.string(),
                        "key '" + key + "' entry '" + it.key() + "' must be an integer id");
    const auto id = it.value().get<std::int64_t>();
    if (id < 0 || id >= static_cast<std::int64_t>(names.size()) || !names[id].empty())
      throw FormatError(p.string(), "key '" + key + "' ids must be 0.." +
                                        std::to_string(names.size() - 1) + " without repeats");
    names[id] = it.key();
  }
  return names;
}

}  // namespace detail

/// The start of the name of the hidden folder partition_graph stages graph `name`'s output
/// in (the process ID follows): an interrupted run leaves it behind.
inline std::string staging_folder_prefix(const std::string& name) {
  return ".staging-" + name + "-";
}

/// Reads and validates `<name>.json`: every required key present with the right type,
/// ranges consistent with num_parts and the totals, one `part-<i>` per partition.
/// Throws IoError (missing/unreadable) or FormatError naming the file and the key.
inline PartitionConfig read_partition_config(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) {
    // partition_graph removes the config first and writes it last: a run that was
    // interrupted leaves its part folders or its staging folder without one.
    const std::string stem = path.stem().string();
    const auto dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator(dir, ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
      const std::string entry = it->path().filename().string();
      if (entry == "part0" || entry.rfind(staging_folder_prefix(stem), 0) == 0)
        throw IoError(path.string(),
                      "incomplete partition: " + dir.string() + " holds " + entry +
                          " but not this config, which partitioning writes last (it was "
                          "interrupted; partition again)");
    }
    throw IoError(path.string(), "cannot open partition config");
  }
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(path.string(), std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw FormatError(path.string(), "top level must be a JSON object");
  using detail::config_get;
  PartitionConfig c;
  c.path = path;
  c.graph_name = config_get<std::string>(j, path, "graph_name");
  c.part_method = config_get<std::string>(j, path, "part_method");
  c.num_parts = config_get<std::int64_t>(j, path, "num_parts");
  c.halo_hops = config_get<std::int64_t>(j, path, "halo_hops");
  c.num_nodes = config_get<std::int64_t>(j, path, "num_nodes");
  c.num_edges = config_get<std::int64_t>(j, path, "num_edges");
  if (c.num_parts < 1 || c.num_parts > (1 << 20))
    throw FormatError(path.string(), "num_parts " + std::to_string(c.num_parts) +
                                         " out of range; expected [1, 2^20]");
  if (c.num_nodes < 0 || c.num_edges < 0)
    throw FormatError(path.string(), "num_nodes and num_edges must be non-negative");
  if (c.halo_hops < 0) throw FormatError(path.string(), "halo_hops must be non-negative");
  c.ntypes = detail::type_names(config_get<nlohmann::json>(j, path, "ntypes"), path, "ntypes");
  c.etypes = detail::type_names(config_get<nlohmann::json>(j, path, "etypes"), path, "etypes");
  const auto node_map = config_get<nlohmann::json>(j, path, "node_map");
  const auto edge_map = config_get<nlohmann::json>(j, path, "edge_map");
  if (node_map.is_string() != edge_map.is_string())
    throw FormatError(path.string(), "node_map and edge_map must both be ranges or both be files");
  c.relabeled = !node_map.is_string();
  if (c.relabeled) {
    c.node_ranges =
        detail::parse_ranges(node_map, path, "node_map", c.ntypes, c.num_parts, c.num_nodes);
    c.edge_ranges =
        detail::parse_ranges(edge_map, path, "edge_map", c.etypes, c.num_parts, c.num_edges);
  } else {
    c.node_map_file = node_map.get<std::string>();
    c.edge_map_file = edge_map.get<std::string>();
  }
  for (std::int64_t p = 0; p < c.num_parts; ++p) {
    const std::string key = "part-" + std::to_string(p);
    const auto part = config_get<nlohmann::json>(j, path, key);
    if (!part.is_object()) throw FormatError(path.string(), "key '" + key + "' must be an object");
    c.parts.push_back({config_get<std::string>(part, path, "part_graph"),
                       config_get<std::string>(part, path, "node_feats"),
                       config_get<std::string>(part, path, "edge_feats")});
  }
  const auto dg = j.value("distgraph", nlohmann::json::object());
  try {
    if (dg.contains("counts")) {
      for (const auto& k : dg.at("counts"))
        c.counts.push_back(
            {k.at("inner_nodes").get<std::int64_t>(), k.at("halo_nodes").get<std::int64_t>(),
             k.at("inner_edges").get<std::int64_t>(), k.at("local_edges").get<std::int64_t>()});
      if (static_cast<std::int64_t>(c.counts.size()) != c.num_parts)
        throw FormatError(path.string(), "distgraph.counts has " + std::to_string(c.counts.size()) +
                                             " entries; num_parts is " +
                                             std::to_string(c.num_parts));
    }
    for (const auto* key : {"node_feats", "edge_feats"}) {
      auto& specs = std::string(key) == "node_feats" ? c.node_feats : c.edge_feats;
      if (!dg.contains(key)) continue;
      for (auto it = dg.at(key).begin(); it != dg.at(key).end(); ++it)
        specs.push_back({it.key(), it.value().at("dtype").get<std::string>(),
                         it.value().at("shape").get<std::vector<std::int64_t>>()});
    }
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(path.string(), std::string("malformed 'distgraph' section: ") + e.what());
  }
  c.extra = dg;
  return c;
}

/// Writes `c` to `c.path` atomically (temporary file, then rename), so a reader never sees
/// a half-written config. Throws IoError.
inline void write_partition_config(const PartitionConfig& c) {
  nlohmann::json j;
  j["graph_name"] = c.graph_name;
  j["part_method"] = c.part_method;
  j["num_parts"] = c.num_parts;
  j["halo_hops"] = c.halo_hops;
  j["num_nodes"] = c.num_nodes;
  j["num_edges"] = c.num_edges;
  nlohmann::json nt = nlohmann::json::object(), et = nlohmann::json::object();
  for (std::size_t i = 0; i < c.ntypes.size(); ++i) nt[c.ntypes[i]] = i;
  for (std::size_t i = 0; i < c.etypes.size(); ++i) et[c.etypes[i]] = i;
  j["ntypes"] = nt;
  j["etypes"] = et;
  if (c.relabeled) {
    j["node_map"] = detail::ranges_json(c.ntypes, c.node_ranges);
    j["edge_map"] = detail::ranges_json(c.etypes, c.edge_ranges);
  } else {
    j["node_map"] = c.node_map_file;
    j["edge_map"] = c.edge_map_file;
  }
  for (std::size_t p = 0; p < c.parts.size(); ++p)
    j["part-" + std::to_string(p)] = {{"part_graph", c.parts[p].part_graph},
                                      {"node_feats", c.parts[p].node_feats},
                                      {"edge_feats", c.parts[p].edge_feats}};
  nlohmann::json dg = c.extra.is_object() ? c.extra : nlohmann::json::object();
  dg["format_version"] = 1;
  nlohmann::json counts = nlohmann::json::array();
  for (const auto& k : c.counts)
    counts.push_back({{"inner_nodes", k.inner_nodes},
                      {"halo_nodes", k.halo_nodes},
                      {"inner_edges", k.inner_edges},
                      {"local_edges", k.local_edges}});
  dg["counts"] = counts;
  for (const auto* key : {"node_feats", "edge_feats"}) {
    const auto& specs = std::string(key) == "node_feats" ? c.node_feats : c.edge_feats;
    nlohmann::json m = nlohmann::json::object();
    for (const auto& s : specs) m[s.name] = {{"dtype", s.dtype}, {"shape", s.shape}};
    dg[key] = m;
  }
  j["distgraph"] = dg;
  // Durably: it is the "complete" marker, so it must not reach the disk before the parts.
  write_file_durably(c.path, j.dump(2) + "\n");
}

}  // namespace distgraph
