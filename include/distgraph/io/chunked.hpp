// Chunked graph folders: a graph as edge chunks and node-data row chunks described by one
// metadata.json, so that no process ever has to hold the whole graph (docs/FORMATS.md,
// "Chunked graph folder"). `distgraph chunk` writes one from a dataset folder;
// `distgraph partition --distributed` reads it, each MPI rank its own share.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "distgraph/core/buffer.hpp"
#include "distgraph/core/dtype.hpp"
#include "distgraph/core/durable_file.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/graph/type_map.hpp"
#include "distgraph/io/dataset.hpp"
#include "distgraph/io/hetero_dataset.hpp"
#include "distgraph/io/npy.hpp"

namespace distgraph {

/// The file that describes a chunked graph folder; written last, so it marks it complete.
inline constexpr const char* chunked_metadata_name = "metadata.json";
/// The value of metadata.json's "format" key.
inline constexpr const char* chunked_format_name = "distgraph-chunked";

/// One node-data array split into row chunks: chunk c holds the array's rows of the nodes
/// [node_bounds[c], node_bounds[c + 1]). An array over every node has a row per node; a
/// typed array ("<ntype>/<name>", e.g. "paper/feat") a row per node of its type, so its
/// chunk c holds the rows of that type's nodes inside node chunk c (possibly none).
struct ChunkedArray {
  std::string name;                 ///< e.g. "feat", "label", "train_mask", "paper/feat"
  DType dtype = DType::float32;     ///< every chunk's dtype
  std::vector<std::int64_t> shape;  ///< the whole array's shape; shape[0] = its rows
  std::vector<std::string> files;   ///< one per node chunk, relative to the folder
  std::int32_t ntype = -1;          ///< the node type of a typed array, else -1
  std::int64_t first_id = 0;        ///< the node ID of row 0 (its type's first node)
  std::size_t row_bytes() const;
  /// The node IDs it has rows for: [first_id, first_id + shape[0]).
  IdRange ids() const { return {first_id, first_id + (shape.empty() ? 0 : shape[0])}; }
};

/// A chunked graph folder as read_chunked_graph validated it. Edge chunk c holds edges
/// [edge_bounds[c], edge_bounds[c + 1]): its position k is input edge ID edge_bounds[c] + k.
struct ChunkedGraph {
  std::filesystem::path dir;
  std::string name;
  std::int64_t num_nodes = 0, num_edges = 0;
  std::vector<std::int64_t> edge_bounds;          ///< num_edge_chunks + 1 offsets
  std::vector<std::string> src_files, dst_files;  ///< int64 [count] each, relative
  std::vector<std::int64_t> node_bounds;          ///< num_node_chunks + 1 offsets
  std::vector<ChunkedArray> node_data;
  /// The dataset's meta.json (num_classes, split sizes, ...) without its "files" entry.
  nlohmann::json dataset_meta = nlohmann::json::object();
  /// Node and edge types: each type a contiguous range of node IDs (edge IDs), in type
  /// order. A homogeneous graph has one of each ("_N", "_N:_E:_N").
  TypeMap types;
  bool typed = false;  ///< the metadata declares node and edge types

  std::int64_t num_edge_chunks() const { return static_cast<std::int64_t>(src_files.size()); }
  std::int64_t num_node_chunks() const { return static_cast<std::int64_t>(node_bounds.size()) - 1; }
  std::filesystem::path file(const std::string& rel) const { return dir / rel; }
};

inline std::size_t ChunkedArray::row_bytes() const {
  std::size_t n = dtype_size(dtype);
  for (std::size_t i = 1; i < shape.size(); ++i) n *= static_cast<std::size_t>(shape[i]);
  return n;
}

/// True when `dir` is a folder with a chunked graph's metadata.json.
inline bool is_chunked_folder(const std::filesystem::path& dir) {
  std::error_code ec;
  return std::filesystem::is_regular_file(dir / chunked_metadata_name, ec);
}

namespace detail {

/// `count` items split into `chunks` near-equal runs: chunks + 1 offsets (floor of
/// count * c / chunks, computed without overflow).
inline std::vector<std::int64_t> even_bounds(std::int64_t count, std::int64_t chunks) {
  chunks = std::max<std::int64_t>(chunks, 1);
  std::vector<std::int64_t> b(static_cast<std::size_t>(chunks) + 1);
  for (std::int64_t c = 0; c <= chunks; ++c)
    b[static_cast<std::size_t>(c)] = count / chunks * c + count % chunks * c / chunks;
  return b;
}

/// Checks that `b` runs from 0 to `total` without going down.
inline void check_bounds(const std::vector<std::int64_t>& b, std::int64_t total,
                         const std::string& where, const std::string& key) {
  if (b.size() < 2 || b.front() != 0 || b.back() != total)
    throw FormatError(where, "key '" + key + "' must run from 0 to " + std::to_string(total) +
                                 " in at least one chunk");
  for (std::size_t i = 1; i < b.size(); ++i)
    if (b[i] < b[i - 1])
      throw FormatError(where, "key '" + key + "' decreases at chunk " + std::to_string(i - 1));
}

/// The header of chunk file `path`, checked against the dtype and shape the metadata gives
/// it. Reads only the header: the mapping stays untouched.
inline void check_chunk_file(const std::filesystem::path& path, DType dtype,
                             std::vector<std::int64_t> shape, const std::string& metadata) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw IoError(path.string(), "chunk file is missing (listed in " + metadata + ")");
  const NpyArray a = read_npy(path);  // parses and checks the header against the file size
  if (a.header.dtype != dtype)
    throw DTypeError(path.string(), "dtype " + std::string(dtype_name(a.header.dtype)) + "; " +
                                        metadata + " says " + std::string(dtype_name(dtype)));
  if (a.header.shape != shape)
    throw ShapeError(path.string(), "shape " + shape_string(a.header.shape) + "; " + metadata +
                                        " says " + shape_string(shape));
}

/// The node and edge types metadata.json declares (DGL's keys: "node_type",
/// "num_nodes_per_type", "edge_type" as "src:etype:dst", "num_edges_per_type"), or one of
/// each for a homogeneous graph. Throws FormatError naming `where`.
inline TypeMap chunked_types(const nlohmann::json& j, std::int64_t num_nodes,
                             std::int64_t num_edges, const std::string& where) {
  if (!j.contains("node_type") && !j.contains("edge_type"))
    return TypeMap::homogeneous(num_nodes, num_edges);
  const auto ntypes = j.at("node_type").get<std::vector<std::string>>();
  const auto ncounts = j.at("num_nodes_per_type").get<std::vector<std::int64_t>>();
  const auto etypes = j.at("edge_type").get<std::vector<std::string>>();
  const auto ecounts = j.at("num_edges_per_type").get<std::vector<std::int64_t>>();
  if (ntypes.size() != ncounts.size() || etypes.size() != ecounts.size() || ntypes.empty() ||
      etypes.empty())
    throw FormatError(where,
                      "node_type / num_nodes_per_type and edge_type / "
                      "num_edges_per_type must be non-empty lists of equal length");
  // Counts are checked one by one, so no sum can overflow.
  auto sum = [&](const std::vector<std::int64_t>& v) {
    std::int64_t t = 0;
    for (const auto c : v)
      if (c < 0 || __builtin_add_overflow(t, c, &t))
        throw FormatError(
            where, "a type's count " + std::to_string(c) + " is negative or the counts overflow");
    return t;
  };
  if (sum(ncounts) != num_nodes || sum(ecounts) != num_edges)
    throw FormatError(where, "the types' counts add up to " + std::to_string(sum(ncounts)) +
                                 " nodes and " + std::to_string(sum(ecounts)) +
                                 " edges; num_nodes " + std::to_string(num_nodes) + ", num_edges " +
                                 std::to_string(num_edges));
  std::vector<CanonicalEdgeType> canonical;
  for (const auto& e : etypes) {
    const auto a = e.find(':'), b = e.find(':', a == std::string::npos ? a : a + 1);
    if (a == std::string::npos || b == std::string::npos || e.find(':', b + 1) != e.npos)
      throw FormatError(where, "edge type '" + e + "': expected \"src:etype:dst\"");
    canonical.push_back({e.substr(0, a), e.substr(a + 1, b - a - 1), e.substr(b + 1)});
  }
  for (const auto& t : ntypes)
    if (const auto why = bad_type_name(t); !why.empty() || t.find(':') != std::string::npos)
      throw FormatError(where, "node type '" + t + "' " + (why.empty() ? "contains ':'" : why) +
                                   "; expected a folder name without ':'");
  try {
    return TypeMap(ntypes, ncounts, canonical, ecounts);
  } catch (const InvalidArgument& e) {
    throw FormatError(where, e.what());
  }
}

/// Sets `a`'s node type and first node ID from its name: "<ntype>/<name>" is typed data of
/// a declared node type, a name without '/' data over every node. Throws FormatError.
inline void place_chunked_array(const ChunkedGraph& g, ChunkedArray& a, const std::string& where) {
  const auto slash = a.name.find('/');
  if (a.name.empty() ||
      (slash != std::string::npos && (!g.typed || slash == 0 || slash + 1 == a.name.size() ||
                                      a.name.find('/', slash + 1) != std::string::npos)))
    throw FormatError(where, "node_data array name '" + a.name +
                                 "': expected a file name, or \"<node type>/<name>\" in a "
                                 "typed graph");
  if (slash == std::string::npos) return;
  const std::string type = a.name.substr(0, slash);
  const auto& names = g.types.node_type_names();
  const auto it = std::find(names.begin(), names.end(), type);
  if (it == names.end())
    throw FormatError(
        where, "node_data array '" + a.name + "': '" + type + "' is not a declared node type");
  a.ntype = static_cast<std::int32_t>(it - names.begin());
  a.first_id = g.types.node_range(NodeType(a.ntype)).begin;
}

/// The node IDs whose rows node chunk `c` of `a` holds: the chunk's nodes that `a` has
/// rows for.
inline IdRange chunk_rows(const ChunkedGraph& g, const ChunkedArray& a, std::size_t c) {
  const IdRange ids = a.ids();
  const std::int64_t b = std::max(g.node_bounds[c], ids.begin);
  return {b, std::max(b, std::min(g.node_bounds[c + 1], ids.end))};
}

}  // namespace detail

/// Reads `dir/metadata.json` and checks every chunk it lists: present, dtype and shape as
/// declared (so a truncated chunk, whose size disagrees with its header, fails here), chunk
/// counts adding up to num_nodes / num_edges. Edge IDs are not scanned here (see
/// read_edge_chunk). Throws IoError (missing folder, metadata or chunk), FormatError
/// (malformed metadata or chunk header), DTypeError, ShapeError, each naming the file.
inline ChunkedGraph read_chunked_graph(const std::filesystem::path& dir) {
  const auto meta_path = dir / chunked_metadata_name;
  if (!is_chunked_folder(dir))
    throw IoError(meta_path.string(), "no chunked graph here (metadata.json is missing)");
  const nlohmann::json j = detail::read_json_file(meta_path);
  const std::string where = meta_path.string();
  ChunkedGraph g;
  g.dir = dir;
  try {
    if (j.at("format").get<std::string>() != chunked_format_name)
      throw FormatError(where, "format '" + j.at("format").get<std::string>() + "'; expected '" +
                                   chunked_format_name + "'");
    if (j.at("version").get<int>() != 1)
      throw FormatError(where, "version " + j.at("version").dump() + "; this reader knows 1");
    g.name = j.at("graph_name").get<std::string>();
    g.num_nodes = j.at("num_nodes").get<std::int64_t>();
    g.num_edges = j.at("num_edges").get<std::int64_t>();
    if (g.num_nodes < 1 || g.num_edges < 0)
      throw FormatError(where, "num_nodes must be positive and num_edges non-negative");
    const auto& edges = j.at("edges");
    g.edge_bounds = edges.at("chunk_bounds").get<std::vector<std::int64_t>>();
    g.src_files = edges.at("src").get<std::vector<std::string>>();
    g.dst_files = edges.at("dst").get<std::vector<std::string>>();
    const auto& nodes = j.at("node_data");
    g.node_bounds = nodes.at("chunk_bounds").get<std::vector<std::int64_t>>();
    for (auto it = nodes.at("arrays").begin(); it != nodes.at("arrays").end(); ++it) {
      ChunkedArray a;
      a.name = it.key();
      const auto dtype_text = it.value().at("dtype").get<std::string>();
      const auto dtype = dtype_from_name(dtype_text);
      if (!dtype)
        throw FormatError(
            where, "node_data array '" + a.name + "' has unknown dtype '" + dtype_text + "'");
      a.dtype = *dtype;
      a.shape = it.value().at("shape").get<std::vector<std::int64_t>>();
      a.files = it.value().at("files").get<std::vector<std::string>>();
      g.node_data.push_back(std::move(a));
    }
    if (j.contains("dataset_meta") && j.at("dataset_meta").is_object())
      g.dataset_meta = j.at("dataset_meta");
    g.types = detail::chunked_types(j, g.num_nodes, g.num_edges, where);
    g.typed = j.contains("node_type");
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(where, std::string("malformed: ") + e.what());
  }
  detail::check_bounds(g.edge_bounds, g.num_edges, where, "edges.chunk_bounds");
  detail::check_bounds(g.node_bounds, g.num_nodes, where, "node_data.chunk_bounds");
  const auto edge_chunks = g.edge_bounds.size() - 1;
  if (g.src_files.size() != edge_chunks || g.dst_files.size() != edge_chunks)
    throw FormatError(where, "edges: " + std::to_string(g.src_files.size()) + " src and " +
                                 std::to_string(g.dst_files.size()) + " dst files for " +
                                 std::to_string(edge_chunks) + " chunks");
  for (std::size_t c = 0; c < edge_chunks; ++c) {
    const std::vector<std::int64_t> shape{g.edge_bounds[c + 1] - g.edge_bounds[c]};
    detail::check_chunk_file(g.file(g.src_files[c]), DType::int64, shape, where);
    detail::check_chunk_file(g.file(g.dst_files[c]), DType::int64, shape, where);
  }
  for (auto& a : g.node_data) {
    detail::place_chunked_array(g, a, where);
    const std::int64_t rows = a.ntype < 0 ? g.num_nodes : g.types.num_nodes(NodeType(a.ntype));
    if (a.shape.empty() || a.shape[0] != rows)
      throw FormatError(where, "node_data array '" + a.name + "' has shape " +
                                   detail::shape_string(a.shape) + "; expected " +
                                   std::to_string(rows) + " rows");
    if (a.files.size() != static_cast<std::size_t>(g.num_node_chunks()))
      throw FormatError(where, "node_data array '" + a.name + "' has " +
                                   std::to_string(a.files.size()) + " files for " +
                                   std::to_string(g.num_node_chunks()) + " chunks");
    for (std::size_t c = 0; c < a.files.size(); ++c) {
      std::vector<std::int64_t> shape = a.shape;
      shape[0] = detail::chunk_rows(g, a, c).size();
      detail::check_chunk_file(g.file(a.files[c]), a.dtype, shape, where);
    }
  }
  return g;
}

/// Edge chunk `c`: its sources and destinations (mapped, not copied). With `check_ids`,
/// throws IdOutOfRange naming the file for an ID outside [0, num_nodes), or in a typed
/// graph for an endpoint outside its edge type's source or destination node type.
inline std::pair<Buffer<std::int64_t>, Buffer<std::int64_t>> read_edge_chunk(
    const ChunkedGraph& g, std::int64_t c, bool check_ids = true) {
  const auto i = static_cast<std::size_t>(c);
  auto src = read_npy_as<std::int64_t>(g.file(g.src_files[i]));
  auto dst = read_npy_as<std::int64_t>(g.file(g.dst_files[i]));
  if (!check_ids) return {std::move(src), std::move(dst)};
  for (const auto& [ids, rel] : {std::pair{&src, &g.src_files[i]}, {&dst, &g.dst_files[i]}})
    for (const std::int64_t v : *ids)
      if (v < 0 || v >= g.num_nodes) throw IdOutOfRange(g.file(*rel).string(), v, 0, g.num_nodes);
  if (!g.typed) return {std::move(src), std::move(dst)};
  // Typed: each edge's endpoints are nodes of its edge type's source and destination types.
  const std::int64_t first = g.edge_bounds[i], last = g.edge_bounds[i + 1];
  for (std::int32_t r = 0; r < g.types.num_edge_types(); ++r) {
    const IdRange er = g.types.edge_range(EdgeType(r));
    const auto& ct = g.types.edge_type(EdgeType(r));
    const IdRange ends[2] = {g.types.node_range(g.types.node_type(ct.src_type)),
                             g.types.node_range(g.types.node_type(ct.dst_type))};
    for (auto e = std::max(first, er.begin); e < std::min(last, er.end); ++e)
      for (int side = 0; side < 2; ++side) {
        const std::int64_t v = (side == 0 ? src : dst)[static_cast<std::size_t>(e - first)];
        if (v < ends[side].begin || v >= ends[side].end)
          throw IdOutOfRange(g.file(side == 0 ? g.src_files[i] : g.dst_files[i]).string() +
                                 ": edge " + std::to_string(e) + " of type " + ct.src_type + ":" +
                                 ct.edge_type + ":" + ct.dst_type + ", " +
                                 (side == 0 ? ct.src_type : ct.dst_type) + " node",
                             v, ends[side].begin, ends[side].end);
      }
  }
  return {std::move(src), std::move(dst)};
}

/// Copies the rows of nodes [begin, end) of node-data array `a` into `out` (row_bytes()
/// each), from whichever chunks hold them. [begin, end) lies inside `a.ids()`.
inline void read_node_rows(const ChunkedGraph& g, const ChunkedArray& a, std::int64_t begin,
                           std::int64_t end, std::byte* out) {
  const std::size_t rb = a.row_bytes();
  for (std::size_t c = 0; c + 1 < g.node_bounds.size() && begin < end; ++c) {
    const IdRange rows = detail::chunk_rows(g, a, c);
    const std::int64_t from = std::max(begin, rows.begin), to = std::min(end, rows.end);
    if (from >= to) continue;
    const NpyArray chunk = read_npy(g.file(a.files[c]));
    std::memcpy(out + static_cast<std::size_t>(from - begin) * rb,
                chunk.bytes.data() + static_cast<std::size_t>(from - rows.begin) * rb,
                static_cast<std::size_t>(to - from) * rb);
  }
}

namespace detail {

/// A node array to chunk: `data` holds its rows (of the nodes `first_id`.. on).
struct ArrayToChunk {
  std::string name;
  DType dtype;
  std::vector<std::int64_t> shape;
  const std::byte* data;
  std::int32_t ntype = -1;
  std::int64_t first_id = 0;
};

/// Writes the chunked folder of a graph of `types` (homogeneous: one type each) under
/// `out`: `edges_of(b, e, src, dst)` fills the endpoints of input edges [b, e), `arrays`
/// are the node data; metadata.json last. See write_chunked.
template <class EdgesOf>
ChunkedGraph write_chunked_folder(const std::string& name, const TypeMap& types, bool typed,
                                  EdgesOf&& edges_of, const std::vector<ArrayToChunk>& arrays,
                                  nlohmann::json meta, const std::filesystem::path& out,
                                  std::int64_t edge_chunks, std::int64_t node_chunks) {
  namespace fs = std::filesystem;
  const std::int64_t n = types.num_nodes(), m = types.num_edges();
  if (edge_chunks < 1 || edge_chunks > std::max<std::int64_t>(m, 1))
    throw InvalidArgument("edge chunks " + std::to_string(edge_chunks) + ": expected [1, " +
                          std::to_string(std::max<std::int64_t>(m, 1)) + "] (the edge count)");
  if (node_chunks < 1 || node_chunks > n)
    throw InvalidArgument("node chunks " + std::to_string(node_chunks) + ": expected [1, " +
                          std::to_string(n) + "] (the node count)");
  std::error_code ec;
  fs::create_directories(out / "edges", ec);
  fs::create_directories(out / "node_data", ec);
  if (ec) throw IoError(out.string(), "cannot create folder: " + ec.message());
  // A stale metadata.json must not describe the new, partial chunks.
  if (fs::remove(out / chunked_metadata_name, ec)) sync_folder(out.string());
  ChunkedGraph g;
  g.dir = out;
  g.name = name;
  g.num_nodes = n;
  g.num_edges = m;
  g.types = types;
  g.typed = typed;
  g.edge_bounds = even_bounds(m, edge_chunks);
  g.node_bounds = even_bounds(n, node_chunks);
  for (std::int64_t c = 0; c < edge_chunks; ++c) {
    const auto b = g.edge_bounds[static_cast<std::size_t>(c)];
    const auto e = g.edge_bounds[static_cast<std::size_t>(c) + 1];
    const std::string suffix = "-" + std::to_string(c) + ".npy";
    g.src_files.push_back("edges/src" + suffix);
    g.dst_files.push_back("edges/dst" + suffix);
    std::vector<std::int64_t> src(static_cast<std::size_t>(e - b)), dst(src.size());
    edges_of(b, e, src.data(), dst.data());
    write_npy(out / g.src_files.back(), src);
    write_npy(out / g.dst_files.back(), dst);
  }
  for (const auto& in : arrays) {
    ChunkedArray a{in.name, in.dtype, in.shape, {}, in.ntype, in.first_id};
    if (a.ntype >= 0) {
      const auto folder = out / "node_data" / types.node_type_name(NodeType(a.ntype));
      if (fs::create_directories(folder, ec); ec)
        throw IoError(folder.string(), "cannot create folder: " + ec.message());
    }
    const std::size_t rb = a.row_bytes();
    for (std::size_t c = 0; c + 1 < g.node_bounds.size(); ++c) {
      const IdRange rows = chunk_rows(g, a, c);
      std::vector<std::int64_t> part = a.shape;
      part[0] = rows.size();
      a.files.push_back("node_data/" + a.name + "-" + std::to_string(c) + ".npy");
      write_npy(out / a.files.back(), a.dtype, part,
                in.data + static_cast<std::size_t>(rows.begin - a.first_id) * rb);
    }
    g.node_data.push_back(std::move(a));
  }
  g.dataset_meta = meta.is_object() ? std::move(meta) : nlohmann::json::object();
  g.dataset_meta.erase("files");  // the checksums of the unchunked files

  nlohmann::json listed = nlohmann::json::object();
  for (const auto& a : g.node_data)
    listed[a.name] = {{"dtype", dtype_name(a.dtype)}, {"shape", a.shape}, {"files", a.files}};
  nlohmann::json j = {
      {"format", chunked_format_name},
      {"version", 1},
      {"graph_name", g.name},
      {"num_nodes", n},
      {"num_edges", m},
      {"edges", {{"chunk_bounds", g.edge_bounds}, {"src", g.src_files}, {"dst", g.dst_files}}},
      {"node_data", {{"chunk_bounds", g.node_bounds}, {"arrays", listed}}},
      {"dataset_meta", g.dataset_meta}};
  if (typed) {
    std::vector<std::int64_t> ncounts, ecounts;
    std::vector<std::string> etypes;
    for (std::int32_t t = 0; t < types.num_node_types(); ++t)
      ncounts.push_back(types.num_nodes(NodeType(t)));
    for (std::int32_t r = 0; r < types.num_edge_types(); ++r) {
      const auto& c = types.edge_type(EdgeType(r));
      etypes.push_back(c.src_type + ":" + c.edge_type + ":" + c.dst_type);
      ecounts.push_back(types.num_edges(EdgeType(r)));
    }
    j["node_type"] = types.node_type_names();
    j["num_nodes_per_type"] = ncounts;
    j["edge_type"] = etypes;
    j["num_edges_per_type"] = ecounts;
  }
  write_file_durably((out / chunked_metadata_name).string(), j.dump(2) + "\n");
  return g;
}

}  // namespace detail

/// Writes `ds` as a chunked graph folder under `out`: `edge_chunks` edge chunks
/// (edges/src-<c>.npy, edges/dst-<c>.npy) and `node_chunks` row chunks of each node array
/// (node_data/<name>-<c>.npy: feat, label and the masks present), then metadata.json last,
/// so a folder without it is incomplete. Throws InvalidArgument for chunk counts below 1 or
/// above the items they split, IoError when writing fails.
inline ChunkedGraph write_chunked(const Dataset& ds, const std::filesystem::path& out,
                                  std::int64_t edge_chunks, std::int64_t node_chunks) {
  const std::int64_t n = ds.num_nodes;
  std::vector<detail::ArrayToChunk> arrays;
  auto bytes = [](const auto* p) { return reinterpret_cast<const std::byte*>(p); };
  if (ds.has_features())
    arrays.push_back({"feat", DType::float32, {n, ds.feat_dim}, bytes(ds.feat.data())});
  if (ds.has_labels()) arrays.push_back({"label", DType::int64, {n}, bytes(ds.label.data())});
  const std::pair<const char*, const Buffer<bool>*> masks[] = {
      {"train_mask", &ds.train_mask}, {"val_mask", &ds.val_mask}, {"test_mask", &ds.test_mask}};
  for (const auto& [name, mask] : masks)
    if (!mask->empty()) arrays.push_back({name, DType::bool_, {n}, bytes(mask->data())});
  nlohmann::json meta = ds.meta.is_object() ? ds.meta : nlohmann::json::object();
  if (ds.num_classes > 0) meta["num_classes"] = ds.num_classes;
  return detail::write_chunked_folder(
      ds.name, TypeMap::homogeneous(n, ds.num_edges()), false,
      [&](std::int64_t b, std::int64_t e, std::int64_t* src, std::int64_t* dst) {
        std::copy(ds.src.begin() + b, ds.src.begin() + e, src);
        std::copy(ds.dst.begin() + b, ds.dst.begin() + e, dst);
      },
      arrays, std::move(meta), out, edge_chunks, node_chunks);
}

/// Writes the typed dataset `d` as a chunked graph folder (see the Dataset overload) of its
/// homogeneous view: node type t's node i is node ID `d.types.node_range(t).begin + i`,
/// edge type r's i-th edge is edge ID `d.types.edge_range(r).begin + i`; metadata.json
/// declares the types (node_type, num_nodes_per_type, edge_type, num_edges_per_type) and
/// the node data is typed: "<ntype>/feat" per featured type, the target's label and masks.
inline ChunkedGraph write_chunked(const HeteroDataset& d, const std::filesystem::path& out,
                                  std::int64_t edge_chunks, std::int64_t node_chunks) {
  const TypeMap& types = d.types;
  std::vector<detail::ArrayToChunk> arrays;
  auto bytes = [](const auto* p) { return reinterpret_cast<const std::byte*>(p); };
  for (std::int32_t t = 0; t < types.num_node_types(); ++t) {
    const auto k = static_cast<std::size_t>(t);
    if (d.feat_dim[k] > 0)
      arrays.push_back({types.node_type_name(NodeType(t)) + "/feat",
                        DType::float32,
                        {types.num_nodes(NodeType(t)), d.feat_dim[k]},
                        bytes(d.feat[k].data()),
                        t,
                        types.node_range(NodeType(t)).begin});
  }
  nlohmann::json meta = d.meta.is_object() ? d.meta : nlohmann::json::object();
  if (!d.target_ntype.empty()) {
    const NodeType t = d.target();
    const std::int64_t rows = types.num_nodes(t), first = types.node_range(t).begin;
    const std::string prefix = d.target_ntype + "/";
    if (!d.label.empty())
      arrays.push_back(
          {prefix + "label", DType::int64, {rows}, bytes(d.label.data()), t.value, first});
    const std::pair<const char*, const Buffer<bool>*> masks[] = {
        {"train_mask", &d.train_mask}, {"val_mask", &d.val_mask}, {"test_mask", &d.test_mask}};
    for (const auto& [name, mask] : masks)
      if (!mask->empty())
        arrays.push_back(
            {prefix + name, DType::bool_, {rows}, bytes(mask->data()), t.value, first});
    meta["target_ntype"] = d.target_ntype;
    if (d.num_classes > 0) meta["num_classes"] = d.num_classes;
  }
  return detail::write_chunked_folder(
      d.name, types, true,
      [&](std::int64_t b, std::int64_t e, std::int64_t* src, std::int64_t* dst) {
        homogeneous_edges(d, b, e, src, dst);
      },
      arrays, std::move(meta), out, edge_chunks, node_chunks);
}

/// The whole chunked graph as a Dataset (feat, label and masks as load_dataset reads them;
/// other node arrays are ignored), for single-process partitioning and checks. Holds the
/// whole graph: for graphs that fit one process. Throws InvalidArgument for a typed one.
inline Dataset load_chunked_dataset(const std::filesystem::path& dir) {
  const ChunkedGraph g = read_chunked_graph(dir);
  if (g.typed)
    throw InvalidArgument(dir.string() +
                          ": a typed chunked graph; it is read by partition --distributed "
                          "(one process reads the typed dataset folder instead)");
  Dataset ds;
  ds.name = g.name;
  ds.num_nodes = g.num_nodes;
  ds.meta = g.dataset_meta;
  std::vector<std::int64_t> src(static_cast<std::size_t>(g.num_edges)),
      dst(static_cast<std::size_t>(g.num_edges));
  for (std::int64_t c = 0; c < g.num_edge_chunks(); ++c) {
    const auto [s, d] = read_edge_chunk(g, c);
    const auto at = static_cast<std::size_t>(g.edge_bounds[static_cast<std::size_t>(c)]);
    std::copy(s.begin(), s.end(), src.begin() + static_cast<std::ptrdiff_t>(at));
    std::copy(d.begin(), d.end(), dst.begin() + static_cast<std::ptrdiff_t>(at));
  }
  ds.src = Buffer<std::int64_t>(std::move(src));
  ds.dst = Buffer<std::int64_t>(std::move(dst));
  for (const auto& a : g.node_data) {
    auto whole = [&]<class T>(T*) {
      std::vector<T> v(static_cast<std::size_t>(g.num_nodes) * (a.row_bytes() / sizeof(T)));
      read_node_rows(g, a, 0, g.num_nodes, reinterpret_cast<std::byte*>(v.data()));
      return v;
    };
    if (a.name == "feat" && a.dtype == DType::float32 && a.shape.size() == 2) {
      ds.feat_dim = a.shape[1];
      ds.feat = Buffer<float>(whole(static_cast<float*>(nullptr)));
    } else if (a.name == "label" && a.dtype == DType::int64 && a.shape.size() == 1) {
      ds.label = Buffer<std::int64_t>(whole(static_cast<std::int64_t*>(nullptr)));
    } else if (a.dtype == DType::bool_ && a.shape.size() == 1) {
      Buffer<bool>* mask = a.name == "train_mask"  ? &ds.train_mask
                           : a.name == "val_mask"  ? &ds.val_mask
                           : a.name == "test_mask" ? &ds.test_mask
                                                   : nullptr;
      if (mask != nullptr) {
        const auto bytes = whole(static_cast<std::uint8_t*>(nullptr));
        auto flags = std::make_shared<bool[]>(bytes.size());
        for (std::size_t i = 0; i < bytes.size(); ++i) flags[i] = bytes[i] != 0;
        *mask = Buffer<bool>(flags, flags.get(), bytes.size());
      }
    }
  }
  if (g.dataset_meta.contains("num_classes") && g.dataset_meta["num_classes"].is_number_integer())
    ds.num_classes = g.dataset_meta["num_classes"].get<std::int64_t>();
  else if (!ds.label.empty())
    ds.num_classes = *std::max_element(ds.label.begin(), ds.label.end()) + 1;
  return ds;
}

}  // namespace distgraph
