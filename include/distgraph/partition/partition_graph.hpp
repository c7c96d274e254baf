// partition_graph: split a graph into N partitions (METIS, random or given), relabel IDs,
// add halo nodes, and write the partition folder that servers and trainers load.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/durable_file.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/core/half.hpp"
#include "distgraph/core/parallel.hpp"
#include "distgraph/core/progress.hpp"
#include "distgraph/core/tensor.hpp"
#include "distgraph/core/timer.hpp"
#include "distgraph/graph/graph.hpp"
#include "distgraph/io/npy.hpp"
#include "distgraph/partition/metis.hpp"
#include "distgraph/partition/partition_config.hpp"
#include "distgraph/partition/typed_data.hpp"

namespace distgraph {

/// How nodes are assigned to partitions.
enum class PartMethod {
  metis,   ///< METIS k-way, minimum edge cut on the symmetrised graph
  random,  ///< balanced random assignment, reproducible from `seed`
};

/// Options of partition_graph (designated initialisers: `{.method = PartMethod::random}`).
struct PartitionOptions {
  PartMethod method = PartMethod::metis;
  /// New IDs so each partition owns one contiguous range per node type (and edge type).
  /// Off: global IDs stay the input IDs and node_map.npy / edge_map.npy are written.
  bool relabel = true;
  /// Halo depth k >= 1: partition p holds the nodes within k in-hops of its own nodes and
  /// the in-edges of every node closer than k hops, so k = 1 holds exactly the in-edges of
  /// its own nodes and their sources (DGL's default).
  int halo_hops = 1;
  /// An integer class per node (e.g. 0 train, 1 val, 2 test, 3 other) to balance across
  /// partitions: METIS multi-constraint weights; per-class dealing for random. Empty: none.
  std::span<const std::int64_t> balance_ntypes{};
  /// Classes to count per partition without balancing them (ignored when balance_ntypes
  /// is set, which is counted itself): lets a summary show train nodes per partition.
  std::span<const std::int64_t> count_ntypes{};
  /// Balance the sum of in-degrees (edges owned) across partitions (METIS only).
  bool balance_edges = false;
  /// A partition ID per node: skips METIS/random ("custom" in the config).
  std::span<const std::int32_t> assignment{};
  /// The dtype float32 node data is stored (and served) in: float32, float16 or bfloat16,
  /// rounded to nearest even (`--feat-dtype`). Node features are the only float32 node
  /// data datasets carry (labels and masks are integers and bools, never converted); edge
  /// data (e.g. sampling weights) stays as given.
  DType feat_dtype = DType::float32;
  std::uint64_t seed = 0;
  unsigned num_threads = 0;      ///< 0 = hardware threads
  Progress* progress = nullptr;  ///< stage reporting; null = silent
};

/// Per-partition sizes after partitioning.
struct PartitionStats {
  std::int64_t inner_nodes = 0, halo_nodes = 0, inner_edges = 0, local_edges = 0;
  std::vector<std::int64_t> class_counts;  ///< per balance/count_ntypes class (empty without)
};

/// What partition_graph did: the config it wrote and the quality of the split.
struct PartitionResult {
  PartitionConfig config;
  std::vector<PartitionStats> parts;
  /// Directed edges whose endpoints lie in different partitions (each is a halo reference).
  std::int64_t cross_edges = 0;
  /// METIS's own objective (undirected cut of the symmetrised graph); -1 for other methods.
  std::int64_t metis_edge_cut = -1;
  double node_balance = 1, edge_balance = 1;  ///< max / mean over partitions
  std::vector<double> class_balance;          ///< max / mean per balance class
  std::vector<Progress::Stage> stages;
  std::int64_t peak_rss_bytes = 0;
};

namespace detail {

/// Sets `r`'s node, edge and per-class balance (max / mean over its partitions, 1 when all
/// are zero) from its partitions' counts.
inline void set_balance(PartitionResult& r) {
  auto max_over_mean = [&](auto get) {
    double mx = 0, sum = 0;
    for (const auto& st : r.parts) {
      const double x = static_cast<double>(get(st));
      mx = std::max(mx, x);
      sum += x;
    }
    return sum > 0 ? mx / (sum / static_cast<double>(r.parts.size())) : 1.0;
  };
  r.node_balance = max_over_mean([](const PartitionStats& st) { return st.inner_nodes; });
  r.edge_balance = max_over_mean([](const PartitionStats& st) { return st.inner_edges; });
  r.class_balance.clear();
  const std::size_t classes = r.parts.empty() ? 0 : r.parts.front().class_counts.size();
  for (std::size_t c = 0; c < classes; ++c)
    r.class_balance.push_back(
        max_over_mean([c](const PartitionStats& st) { return st.class_counts[c]; }));
}

/// What every partitioner writes alike into `r.config`: the names and totals, one folder
/// and one set of counts per partition (from `r.parts`), and the summary's figures with the
/// per-type counts (`node_counts`, `edge_counts`, in input-ID order: a book of an
/// unrelabeled typed partition derives each ID's type from them) in the distgraph section.
inline void describe_partitions(PartitionResult& r, const std::string& name,
                                const std::string& method, std::int64_t halo_hops,
                                std::int64_t num_nodes, std::int64_t num_edges, bool relabel,
                                std::uint64_t seed, const std::vector<std::int64_t>& node_counts,
                                const std::vector<std::int64_t>& edge_counts) {
  PartitionConfig& c = r.config;
  c.graph_name = name;
  c.part_method = method;
  c.num_parts = static_cast<std::int64_t>(r.parts.size());
  c.halo_hops = halo_hops;
  c.num_nodes = num_nodes;
  c.num_edges = num_edges;
  c.relabeled = relabel;
  c.parts.clear();
  c.counts.clear();
  for (std::size_t p = 0; p < r.parts.size(); ++p) {
    const std::string dir = "part" + std::to_string(p);
    c.parts.push_back({dir + "/graph", dir + "/node_feat", dir + "/edge_feat"});
    const auto& st = r.parts[p];
    c.counts.push_back({st.inner_nodes, st.halo_nodes, st.inner_edges, st.local_edges});
  }
  c.extra = {{"seed", seed},
             {"type_counts", {{"nodes", node_counts}, {"edges", edge_counts}}},
             {"relabel", relabel},
             {"cross_edges", r.cross_edges},
             {"metis_edge_cut", r.metis_edge_cut},
             {"node_balance", r.node_balance},
             {"edge_balance", r.edge_balance},
             {"class_balance", r.class_balance}};
}

/// Readies `out_dir` for a new partition of graph `name`: creates it, removes a stale
/// config first (it must not describe new, partial files, also after a crash) and the
/// staging folders interrupted runs left (a SIGKILL runs no cleanup). Throws IoError.
inline void clear_for_new_partition(const std::filesystem::path& out_dir, const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw IoError(out_dir.string(), "cannot create output folder: " + ec.message());
  if (fs::remove(out_dir / (name + ".json"), ec)) sync_folder(out_dir.string());
  const std::string prefix = staging_folder_prefix(name);
  std::vector<fs::path> stale;
  for (auto it = fs::directory_iterator(out_dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec))
    if (it->path().filename().string().rfind(prefix, 0) == 0) stale.push_back(it->path());
  for (const auto& dir : stale) fs::remove_all(dir, ec);
}

/// Moves `staging/item` to `out_dir/item`, replacing what is there. Throws IoError.
inline void move_into_place(const std::filesystem::path& staging,
                            const std::filesystem::path& out_dir, const std::string& item) {
  std::error_code ec;
  std::filesystem::remove_all(out_dir / item, ec);
  std::filesystem::rename(staging / item, out_dir / item, ec);
  if (ec)
    throw IoError((out_dir / item).string(),
                  "cannot move partition output into place: " + ec.message());
}

/// Calls `emit(u)` for each neighbour u of `v` in the symmetrised graph without self loops
/// or duplicates, in increasing order: a merge of v's out- and in-rows (both sorted).
template <class Emit>
void symmetric_row(const Graph& g, std::int64_t v, Emit&& emit) {
  const auto a = g.out.neighbors(v), b = g.in.neighbors(v);
  std::size_t i = 0, j = 0;
  std::int64_t last = -1;
  while (i < a.size() || j < b.size()) {
    std::int64_t x;
    if (j == b.size() || (i < a.size() && a[i] <= b[j]))
      x = a[i++];
    else
      x = b[j++];
    if (x == v || x == last) continue;
    last = x;
    emit(x);
  }
}

/// Random assignment balanced per class: nodes of each class are shuffled and dealt
/// round-robin, starting each class at a different partition so totals stay balanced.
inline std::vector<std::int32_t> random_by_class(std::span<const std::int64_t> cls,
                                                 std::int64_t num_parts, std::uint64_t seed) {
  std::map<std::int64_t, std::vector<std::int64_t>> members;
  for (std::size_t v = 0; v < cls.size(); ++v)
    members[cls[v]].push_back(static_cast<std::int64_t>(v));
  std::vector<std::int32_t> parts(cls.size(), 0);
  std::mt19937_64 rng(seed);
  std::int64_t next = 0;
  for (auto& [c, vs] : members) {
    std::shuffle(vs.begin(), vs.end(), rng);
    for (std::int64_t v : vs) {
      parts[static_cast<std::size_t>(v)] = static_cast<std::int32_t>(next);
      next = (next + 1) % num_parts;
    }
  }
  return parts;
}

/// Parallel stable counting sort of [0, n) by `key(i)` in [0, num_keys): writes the sorted
/// position of each i to `rank` (left alone when empty) and returns the first position of
/// each key (num_keys + 1 offsets). Each chunk counts its keys, so every chunk then fills
/// its ranks in one sequential pass; no order array is materialised.
template <class KeyFn>
std::vector<std::int64_t> stable_ranks(std::int64_t n, std::int64_t num_keys, unsigned threads,
                                       KeyFn&& key, std::span<std::int64_t> rank) {
  const auto k = static_cast<std::size_t>(num_keys);
  const unsigned chunks = plan_chunks(0, n, threads);
  std::vector<std::int64_t> next(chunks * k, 0);  // per chunk: count, then next position
  parallel_chunks(0, n, threads, [&](unsigned c, std::int64_t b, std::int64_t e) {
    std::int64_t* count = next.data() + c * k;
    for (std::int64_t i = b; i < e; ++i) ++count[static_cast<std::size_t>(key(i))];
  });
  std::vector<std::int64_t> offsets(k + 1, 0);
  std::int64_t pos = 0;
  for (std::size_t key_i = 0; key_i < k; ++key_i) {
    offsets[key_i] = pos;
    for (unsigned c = 0; c < chunks; ++c) pos += std::exchange(next[c * k + key_i], pos);
  }
  offsets[k] = pos;
  if (!rank.empty())
    parallel_chunks(0, n, threads, [&](unsigned c, std::int64_t b, std::int64_t e) {
      std::int64_t* at = next.data() + c * k;
      for (std::int64_t i = b; i < e; ++i)
        rank[static_cast<std::size_t>(i)] = at[static_cast<std::size_t>(key(i))]++;
    });
  return offsets;
}

/// Writes one `.npy` file front to back through a 1 MiB buffer, so a partition's arrays
/// never exist in memory as a whole (first-touching fresh pages costs more than writing
/// them to a file on the VMs we measured; see docs/PERFORMANCE.md). The result is the
/// file write_npy writes: a temporary name, fsynced and renamed by finish(). Destroyed
/// unfinished, it removes the temporary file. Throws IoError naming the file.
class NpyStream {
 public:
  NpyStream(std::filesystem::path path, DType dtype, std::vector<std::int64_t> shape)
      : path_(std::move(path)), tmp_(path_.string() + ".tmp") {
    const std::string header = npy_header_bytes(dtype, shape, path_.string());
    remaining_ = static_cast<std::size_t>(*checked_num_elements(shape, dtype_size(dtype))) *
                 dtype_size(dtype);
    fd_ = FileDescriptor(::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd_.get() < 0)
      throw IoError(path_.string(), errno_message("cannot create temporary file", errno));
    write_all(fd_.get(), std::as_bytes(std::span(header)), path_.string());
  }
  NpyStream(const NpyStream&) = delete;
  NpyStream& operator=(const NpyStream&) = delete;
  ~NpyStream() {
    if (!finished_) {
      fd_.close();
      ::unlink(tmp_.c_str());
    }
  }

  /// Appends one element.
  template <class T>
  void push(T x) {
    if (used_ + sizeof(T) > capacity) flush();
    std::memcpy(buffer_.get() + used_, &x, sizeof(T));
    used_ += sizeof(T);
  }
  /// Appends `bytes` bytes from `data`.
  void append(const void* data, std::size_t bytes) {
    if (used_ + bytes > capacity) flush();
    if (bytes > capacity) {
      write_direct({static_cast<const std::byte*>(data), bytes});
      return;
    }
    std::memcpy(buffer_.get() + used_, data, bytes);
    used_ += bytes;
  }
  /// Checks that the shape is filled, then fsyncs, closes and renames into place.
  void finish() {
    flush();
    if (remaining_ != 0)
      throw IoError(path_.string(), std::to_string(remaining_) +
                                        " bytes short of the shape in its header; not published");
    if (const int err = fd_.close(); err != 0)
      throw IoError(path_.string(), errno_message("cannot close", err));
    publish_file(tmp_, path_);
    finished_ = true;
  }

 private:
  static constexpr std::size_t capacity = std::size_t{1} << 20;
  void flush() {
    write_direct({buffer_.get(), used_});
    used_ = 0;
  }
  void write_direct(std::span<const std::byte> bytes) {
    if (bytes.size() > remaining_)
      throw IoError(path_.string(), "more bytes than the shape in its header");
    write_all(fd_.get(), bytes, path_.string());
    remaining_ -= bytes.size();
  }
  std::filesystem::path path_;
  std::string tmp_;
  FileDescriptor fd_;
  std::unique_ptr<std::byte[]> buffer_{new std::byte[capacity]};  // untouched until used
  std::size_t used_ = 0, remaining_ = 0;
  bool finished_ = false;
};

/// The dtype node data `t` is stored in under `opts` (feat_dtype for float32 data).
inline DType stored_node_dtype(const HostTensor& t, const PartitionOptions& opts) {
  return t.dtype == DType::float32 ? opts.feat_dtype : t.dtype;
}

/// Streams rows `rows` of `t` into `dir/<name>.npy`, converted from float32 to `as` when
/// that differs from t.dtype (row by row: no converted copy of the tensor exists).
inline void write_rows(const std::filesystem::path& path, const HostTensor& t,
                       std::span<const std::int64_t> rows, DType as) {
  std::vector<std::int64_t> shape = t.shape.empty() ? std::vector<std::int64_t>{1} : t.shape;
  shape[0] = static_cast<std::int64_t>(rows.size());
  NpyStream out(path, as, shape);
  const std::size_t rb = t.row_bytes();
  if (as == t.dtype) {
    for (std::int64_t r : rows) out.append(t.bytes.data() + static_cast<std::size_t>(r) * rb, rb);
  } else {
    const auto cols = static_cast<std::size_t>(t.row_elements());
    std::vector<std::byte> row(cols * dtype_size(as));
    for (std::int64_t r : rows) {
      const auto* src =
          reinterpret_cast<const float*>(t.bytes.data() + static_cast<std::size_t>(r) * rb);
      convert_from_float32(as, {src, cols}, row);
      out.append(row.data(), row.size());
    }
  }
  out.finish();
}

}  // namespace detail

/// Partitions `g` into `num_parts` parts and writes `<out_dir>/<name>.json` plus one
/// `part<i>/` folder each (see docs/FORMATS.md). `node_data` rows are nodes and
/// `edge_data` rows are edges (input IDs); each partition stores the rows it owns.
/// Every edge belongs to the partition of its destination. The config is written last, and
/// a stale config of the same name is removed first, so an interrupted run never leaves a
/// folder that looks complete. Blocks; uses `opts.num_threads` threads. Throws
/// InvalidArgument (bad num_parts, lengths, feat_dtype), IdOutOfRange (assignment values),
/// PartitionError (METIS), IoError (writing).
inline PartitionResult partition_graph(const Graph& g, const std::string& name,
                                       std::int64_t num_parts, const std::filesystem::path& out_dir,
                                       const PartitionOptions& opts = {},
                                       const TensorList& node_data = {},
                                       const TensorList& edge_data = {}) {
  namespace fs = std::filesystem;
  const std::int64_t n = g.num_nodes(), m = g.num_edges();
  const unsigned threads = opts.num_threads == 0 ? default_num_threads() : opts.num_threads;
  Progress silent(true);
  Progress& progress = opts.progress ? *opts.progress : silent;
  const std::size_t first_stage = progress.stages().size();

  // Validate everything before touching the output folder.
  if (name.empty() || name.find('/') != std::string::npos)
    throw InvalidArgument("graph name '" + name + "': expected a non-empty file name");
  if (num_parts < 1 || num_parts > std::max<std::int64_t>(n, 1))
    throw InvalidArgument("num_parts " + std::to_string(num_parts) + ": expected [1, " +
                          std::to_string(std::max<std::int64_t>(n, 1)) + "] (the node count)");
  if (opts.halo_hops < 1 || opts.halo_hops > 16)
    throw InvalidArgument("halo_hops " + std::to_string(opts.halo_hops) + ": expected [1, 16]");
  if (!is_feature_dtype(opts.feat_dtype))
    throw InvalidArgument("feat_dtype " + std::string(dtype_name(opts.feat_dtype)) +
                          ": expected float32, float16 or bfloat16");
  const std::span<const std::int64_t> classes =
      opts.balance_ntypes.empty() ? opts.count_ntypes : opts.balance_ntypes;
  const char* classes_name = opts.balance_ntypes.empty() ? "count_ntypes" : "balance_ntypes";
  if (!classes.empty() && static_cast<std::int64_t>(classes.size()) != n)
    throw InvalidArgument(std::string(classes_name) + " has " + std::to_string(classes.size()) +
                          " entries; expected one per node (" + std::to_string(n) + ")");
  if (!opts.assignment.empty() && static_cast<std::int64_t>(opts.assignment.size()) != n)
    throw InvalidArgument("assignment has " + std::to_string(opts.assignment.size()) +
                          " entries; expected one per node (" + std::to_string(n) + ")");
  for (std::int32_t p : opts.assignment)
    if (p < 0 || p >= num_parts) throw IdOutOfRange("assignment partition id", p, 0, num_parts);
  // Typed data ("<type>/<name>", typed_data.hpp) has a row per node (edge) of its type.
  const std::vector<std::string> node_type_names = g.types.node_type_names();
  std::vector<std::string> edge_type_names;
  for (const auto& et : g.types.edge_types())
    edge_type_names.push_back(et.src_type + ":" + et.edge_type + ":" + et.dst_type);
  auto data_type = [&](const TensorList* list, const std::string& tname) {
    return typed_data_type(tname, list == &node_data ? node_type_names : edge_type_names);
  };
  for (const auto* list : {&node_data, &edge_data}) {
    for (const auto& [tname, t] : *list) {
      const std::int32_t type = data_type(list, tname);
      const std::string file = type < 0 ? tname : tname.substr(tname.find('/') + 1);
      if (file.empty() || file.find('/') != std::string::npos)
        throw InvalidArgument("tensor name '" + tname +
                              "': expected a non-empty file name, or '<type>/<file name>' for "
                              "one of the graph's types");
      const std::int64_t rows =
          list == &node_data ? (type < 0 ? n : g.types.num_nodes(NodeType(type)))
                             : (type < 0 ? m : g.types.num_edges(EdgeType(type)));
      const char* per = list == &node_data
                            ? (type < 0 ? " (one per node)" : " (one per node of its type)")
                            : (type < 0 ? " (one per edge)" : " (one per edge of its type)");
      if (t.rows() != rows || t.shape.empty())
        throw ShapeError("tensor '" + tname + "'", std::to_string(t.rows()) + " rows; expected " +
                                                       std::to_string(rows) + per);
    }
  }
  std::int64_t num_classes = 0;
  for (auto c : classes) {
    if (c < 0 || c > 1'000'000)
      throw IdOutOfRange(std::string(classes_name) + " class", c, 0, 1'000'001);
    num_classes = std::max(num_classes, c + 1);
  }

  PartitionResult result;
  // 1. Assign nodes to partitions.
  progress.begin("assign partitions");
  std::vector<std::int32_t> part;
  std::string method;
  if (!opts.assignment.empty()) {
    part.assign(opts.assignment.begin(), opts.assignment.end());
    method = "custom";
  } else if (opts.method == PartMethod::random) {
    part = opts.balance_ntypes.empty()
               ? random_partition(n, num_parts, opts.seed)
               : detail::random_by_class(opts.balance_ntypes, num_parts, opts.seed);
    method = "random";
  } else {
    // Constraint columns, as DGL builds them: one-hot per balance class, plus in-degree
    // for balance_edges; with no class column the node count is the first constraint.
    const bool cls = !opts.balance_ntypes.empty();
    const std::int64_t ncon = (cls ? num_classes : 1) + (opts.balance_edges ? 1 : 0);
    std::vector<std::int64_t> weights;
    if (ncon > 1) {
      weights.assign(static_cast<std::size_t>(n * ncon), 0);
      for (std::int64_t v = 0; v < n; ++v) {
        auto* w = &weights[static_cast<std::size_t>(v * ncon)];
        if (cls)
          w[opts.balance_ntypes[static_cast<std::size_t>(v)]] = 1;
        else
          w[0] = 1;
        if (opts.balance_edges) w[ncon - 1] = g.in_degree(v);
      }
    }
    MetisOptions mo;
    mo.num_parts = num_parts;
    mo.vertex_weights = weights;
    mo.ncon = static_cast<int>(ncon);
    mo.seed = opts.seed;
    // The symmetrised rows go straight into METIS's 32-bit arrays (no 64-bit copy).
    MetisResult r = detail::metis_partition_rows(
        n, [&](std::int64_t v, auto&& emit) { detail::symmetric_row(g, v, emit); }, mo, threads);
    part = std::move(r.parts);
    result.metis_edge_cut = r.edge_cut;
    method = "metis";
  }
  progress.end();

  // 2. Relabel: new node IDs partition-major, then node type, then input ID; edges
  //    partition-major (owner = partition of the destination), then edge type, then input ID.
  //    Bucket key = partition * types + type; types own contiguous input ranges, so a stable
  //    sort by key keeps (type, input ID) order inside each partition.
  progress.begin("relabel");
  const auto& types = g.types;
  const std::int32_t ntypes = types.num_node_types(), etypes = types.num_edge_types();
  auto node_type_of = [&](std::int64_t v) {
    const auto& off = types.node_offsets();
    return static_cast<std::int32_t>(std::upper_bound(off.begin() + 1, off.end(), v) -
                                     (off.begin() + 1));
  };
  auto edge_type_of = [&](std::int64_t e) {
    const auto& off = types.edge_offsets();
    return static_cast<std::int32_t>(std::upper_bound(off.begin() + 1, off.end(), e) -
                                     (off.begin() + 1));
  };
  // Edge owner: partition of the destination, read from the CSC.
  std::vector<std::int32_t> edge_part(static_cast<std::size_t>(m));
  parallel_for(0, n, threads, [&](std::int64_t v) {
    for (std::int64_t e : g.in.edges(v))
      edge_part[static_cast<std::size_t>(e)] = part[static_cast<std::size_t>(v)];
  });
  // Nodes: new_nid[v] = rank of v; node_order = input ID at each rank (its inverse).
  std::vector<std::int64_t> new_nid(static_cast<std::size_t>(n));
  const std::vector<std::int64_t> node_off = detail::stable_ranks(
      n, num_parts * ntypes, threads,
      [&](std::int64_t v) {
        return std::int64_t{part[static_cast<std::size_t>(v)]} * ntypes + node_type_of(v);
      },
      new_nid);
  std::vector<std::int64_t> node_order(static_cast<std::size_t>(n));
  parallel_for(0, n, threads, [&](std::int64_t v) {
    node_order[static_cast<std::size_t>(new_nid[static_cast<std::size_t>(v)])] = v;
  });
  if (!opts.relabel) {
    // Global IDs stay the input IDs; local order is input-ID order within each partition.
    for (std::int64_t p = 0; p < num_parts; ++p)
      std::sort(node_order.begin() + node_off[static_cast<std::size_t>(p * ntypes)],
                node_order.begin() + node_off[static_cast<std::size_t>((p + 1) * ntypes)]);
    std::iota(new_nid.begin(), new_nid.end(), 0);
  }
  // Edges: the same stable sort gives the new IDs (only counted without relabeling). The
  // m-sized arrays are the cost of this stage, so only those needed are made.
  std::vector<std::int64_t> new_eid(opts.relabel ? static_cast<std::size_t>(m) : 0);
  const std::vector<std::int64_t> edge_off = detail::stable_ranks(
      m, num_parts * etypes, threads,
      [&](std::int64_t e) {
        return std::int64_t{edge_part[static_cast<std::size_t>(e)]} * etypes + edge_type_of(e);
      },
      new_eid);
  auto global_eid = [&](std::int64_t e) {
    return opts.relabel ? new_eid[static_cast<std::size_t>(e)] : e;
  };
  // Input IDs of each partition's owned edges in global-ID order: only edge data needs them.
  std::vector<std::int64_t> edge_order;
  if (!edge_data.empty()) {
    edge_order.resize(static_cast<std::size_t>(m));
    if (opts.relabel) {
      parallel_for(0, m, threads, [&](std::int64_t e) {
        edge_order[static_cast<std::size_t>(new_eid[static_cast<std::size_t>(e)])] = e;
      });
    } else {
      std::vector<std::int64_t> at(static_cast<std::size_t>(num_parts));
      for (std::int64_t p = 0; p < num_parts; ++p)
        at[static_cast<std::size_t>(p)] = edge_off[static_cast<std::size_t>(p * etypes)];
      for (std::int64_t e = 0; e < m; ++e)
        edge_order[static_cast<std::size_t>(
            at[static_cast<std::size_t>(edge_part[static_cast<std::size_t>(e)])]++)] = e;
    }
  }
  progress.end();

  // 3. Build and write each partition: owned nodes first (global-ID order), then halo
  //    nodes hop by hop (each hop sorted by global ID). Rows are local destinations. The
  //    arrays are streamed into their files as they are computed (see NpyStream).
  progress.begin("build partitions");
  const fs::path config_path = out_dir / (name + ".json");
  detail::clear_for_new_partition(out_dir, name);
  std::error_code ec;
  const fs::path staging = out_dir / (staging_folder_prefix(name) + std::to_string(::getpid()));
  fs::remove_all(staging, ec);
  fs::create_directories(staging, ec);
  if (ec) throw IoError(staging.string(), "cannot create staging folder: " + ec.message());
  // Whatever fails below, the staging folder goes; only finished output is ever moved out.
  struct StagingGuard {
    fs::path dir;
    ~StagingGuard() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } staging_guard{staging};
  result.parts.resize(static_cast<std::size_t>(num_parts));
  // local_of: input ID -> local ID (-1 = not local), one table per worker, reset after use.
  auto build_part = [&](std::int64_t p, std::vector<std::int64_t>& local_of,
                        std::vector<std::int64_t>& local_nodes) {
    const auto nb = node_off[static_cast<std::size_t>(p * ntypes)];
    const auto ne = node_off[static_cast<std::size_t>((p + 1) * ntypes)];
    const auto eb = edge_off[static_cast<std::size_t>(p * etypes)];
    const auto ee = edge_off[static_cast<std::size_t>((p + 1) * etypes)];
    const std::span<const std::int64_t> inner(node_order.data() + nb,
                                              static_cast<std::size_t>(ne - nb));
    local_nodes.assign(inner.begin(), inner.end());  // input IDs by local ID
    for (std::size_t i = 0; i < local_nodes.size(); ++i)
      local_of[static_cast<std::size_t>(local_nodes[i])] = static_cast<std::int64_t>(i);
    // Level h holds the nodes h in-hops away; rows of levels below halo_hops hold all their
    // in-edges, the outermost level none.
    std::size_t level_begin = 0, edge_rows = local_nodes.size();
    for (int hop = 1; hop <= opts.halo_hops; ++hop) {
      const std::size_t level_end = local_nodes.size();
      edge_rows = level_end;
      for (std::size_t r = level_begin; r < level_end; ++r)
        for (std::int64_t u : g.in.neighbors(local_nodes[r]))
          if (local_of[static_cast<std::size_t>(u)] < 0) {
            local_of[static_cast<std::size_t>(u)] = 0;  // numbered below
            local_nodes.push_back(u);
          }
      if (local_nodes.size() == level_end) break;  // nothing new: no further hops
      // Sort the new level by global ID: sort the IDs themselves, then map them back.
      const auto first = local_nodes.begin() + static_cast<std::ptrdiff_t>(level_end);
      for (auto it = first; it != local_nodes.end(); ++it)
        *it = new_nid[static_cast<std::size_t>(*it)];
      std::sort(first, local_nodes.end());
      for (auto it = first; it != local_nodes.end(); ++it)
        if (opts.relabel) *it = node_order[static_cast<std::size_t>(*it)];
      for (std::size_t i = level_end; i < local_nodes.size(); ++i)
        local_of[static_cast<std::size_t>(local_nodes[i])] = static_cast<std::int64_t>(i);
      level_begin = level_end;
    }
    const auto num_local = static_cast<std::int64_t>(local_nodes.size());
    std::int64_t local_edges = 0;
    for (std::size_t r = 0; r < edge_rows; ++r) local_edges += g.in.degree(local_nodes[r]);

    const fs::path dir = staging / ("part" + std::to_string(p));
    fs::create_directories(dir / "graph");
    fs::create_directories(dir / "node_feat");
    fs::create_directories(dir / "edge_feat");
    using detail::NpyStream;
    {
      NpyStream indptr(dir / "graph" / "indptr.npy", DType::int64, {num_local + 1});
      std::int64_t at = 0;
      indptr.push(at);
      for (std::size_t r = 0; r < local_nodes.size(); ++r) {
        if (r < edge_rows) at += g.in.degree(local_nodes[r]);
        indptr.push(at);
      }
      indptr.finish();
    }
    {
      NpyStream indices(dir / "graph" / "indices.npy", DType::int64, {local_edges});
      NpyStream eid(dir / "graph" / "eid.npy", DType::int64, {local_edges});
      NpyStream orig_eid(dir / "graph" / "orig_eid.npy", DType::int64, {local_edges});
      NpyStream inner_edge(dir / "graph" / "inner_edge.npy", DType::bool_, {local_edges});
      std::vector<std::pair<std::int32_t, std::uint32_t>> by_type;  // (edge type, k)
      for (std::size_t r = 0; r < edge_rows; ++r) {
        const auto sources = g.in.neighbors(local_nodes[r]);
        const auto edges = g.in.edges(local_nodes[r]);
        // An edge is owned by its destination's partition: the rows of owned nodes hold
        // exactly the owned edges (no lookup in edge_part).
        const auto owned = static_cast<std::uint8_t>(r < inner.size());
        // Typed graphs: a row's edges grouped by edge type (then source), so per-relation
        // samplers find each relation's edges as one run of positions.
        by_type.clear();
        for (std::size_t k = 0; k < sources.size(); ++k)
          by_type.emplace_back(etypes > 1 ? edge_type_of(edges[k]) : 0,
                               static_cast<std::uint32_t>(k));
        if (etypes > 1) std::stable_sort(by_type.begin(), by_type.end());
        for (const auto& [edge_type, kk] : by_type) {
          const std::size_t k = kk;
          const std::int64_t e = edges[k];
          // new_eid is read at random (edge IDs follow the source order); prefetching a few
          // edges ahead overlaps those cache misses.
          if (opts.relabel && k + 8 < edges.size() && etypes == 1)
            __builtin_prefetch(new_eid.data() + edges[k + 8]);
          indices.push(local_of[static_cast<std::size_t>(sources[k])]);
          eid.push(global_eid(e));
          orig_eid.push(e);
          inner_edge.push(owned);
        }
      }
      indices.finish();
      eid.finish();
      orig_eid.finish();
      inner_edge.finish();
    }
    {
      NpyStream nid(dir / "graph" / "nid.npy", DType::int64, {num_local});
      NpyStream orig_nid(dir / "graph" / "orig_nid.npy", DType::int64, {num_local});
      NpyStream inner_node(dir / "graph" / "inner_node.npy", DType::bool_, {num_local});
      for (std::size_t i = 0; i < local_nodes.size(); ++i) {
        nid.push(new_nid[static_cast<std::size_t>(local_nodes[i])]);
        inner_node.push(static_cast<std::uint8_t>(i < inner.size()));
      }
      orig_nid.append(local_nodes.data(), local_nodes.size() * sizeof(std::int64_t));
      nid.finish();
      orig_nid.finish();
      inner_node.finish();
    }
    const std::span<const std::int64_t> owned_edges(edge_order.data() + eb,
                                                     static_cast<std::size_t>(ee - eb));
    // Typed data: the owned IDs of its type, as rows of that type (input ID - type start).
    auto typed_rows = [](std::span<const std::int64_t> ids, const std::vector<std::int64_t>& off,
                         std::int32_t type, auto type_of) {
      std::vector<std::int64_t> rows;
      for (const std::int64_t v : ids)
        if (type_of(v) == type) rows.push_back(v - off[static_cast<std::size_t>(type)]);
      return rows;
    };
    for (const auto& [tname, t] : node_data) {
      const std::int32_t type = data_type(&node_data, tname);
      const fs::path file = dir / "node_feat" / (tname + ".npy");
      const DType as = detail::stored_node_dtype(t, opts);
      if (type < 0) {
        detail::write_rows(file, t, inner, as);
        continue;
      }
      fs::create_directories(file.parent_path());
      detail::write_rows(file, t, typed_rows(inner, types.node_offsets(), type, node_type_of), as);
    }
    for (const auto& [tname, t] : edge_data) {
      const std::int32_t type = data_type(&edge_data, tname);
      const fs::path file = dir / "edge_feat" / (tname + ".npy");
      if (type < 0) {
        detail::write_rows(file, t, owned_edges, t.dtype);
        continue;
      }
      fs::create_directories(file.parent_path());
      detail::write_rows(file, t, typed_rows(owned_edges, types.edge_offsets(), type, edge_type_of),
                         t.dtype);
    }
    for (auto v : local_nodes) local_of[static_cast<std::size_t>(v)] = -1;
    auto& st = result.parts[static_cast<std::size_t>(p)];
    st.inner_nodes = ne - nb;
    st.halo_nodes = num_local - st.inner_nodes;
    st.inner_edges = ee - eb;
    st.local_edges = local_edges;
  };
  // Partitions are built and written in parallel, one worker per partition at a time.
  const unsigned workers = static_cast<unsigned>(std::min<std::int64_t>(threads, num_parts));
  parallel_chunks(
      0, num_parts, workers,
      [&](unsigned, std::int64_t pb, std::int64_t pe) {
        std::vector<std::int64_t> local_of(static_cast<std::size_t>(n), -1), local_nodes;
        for (std::int64_t p = pb; p < pe; ++p) build_part(p, local_of, local_nodes);
      },
      1);
  if (!opts.relabel) {
    write_npy<std::int32_t>(staging / "node_map.npy", part);
    write_npy<std::int32_t>(staging / "edge_map.npy", edge_part);
  }
  progress.end();

  // 4. Quality: cut and balance.
  progress.begin("statistics");
  std::int64_t cross = 0;
  for (std::int64_t v = 0; v < n; ++v)
    for (std::int64_t u : g.in.neighbors(v))
      cross += part[static_cast<std::size_t>(u)] != part[static_cast<std::size_t>(v)];
  result.cross_edges = cross;
  if (num_classes > 0) {
    for (auto& st : result.parts) st.class_counts.assign(static_cast<std::size_t>(num_classes), 0);
    for (std::int64_t v = 0; v < n; ++v)
      result.parts[static_cast<std::size_t>(part[static_cast<std::size_t>(v)])]
          .class_counts[static_cast<std::size_t>(classes[static_cast<std::size_t>(v)])]++;
  }
  detail::set_balance(result);
  progress.end();

  // 5. Publish: move the staged files into place, then write the config last.
  progress.begin("publish");
  std::vector<std::int64_t> node_counts, edge_counts;
  for (std::int32_t t = 0; t < ntypes; ++t) node_counts.push_back(types.num_nodes(NodeType(t)));
  for (std::int32_t t = 0; t < etypes; ++t) edge_counts.push_back(types.num_edges(EdgeType(t)));
  detail::describe_partitions(result, name, method, opts.halo_hops, n, m, opts.relabel, opts.seed,
                              node_counts, edge_counts);
  PartitionConfig& c = result.config;
  c.path = config_path;
  c.ntypes = types.node_type_names();
  c.etypes.clear();
  for (const auto& et : types.edge_types())
    c.etypes.push_back(et.src_type + ":" + et.edge_type + ":" + et.dst_type);
  if (opts.relabel) {
    auto ranges = [&](const std::vector<std::int64_t>& off, std::int32_t per) {
      std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> r(
          static_cast<std::size_t>(per));
      for (std::int32_t t = 0; t < per; ++t)
        for (std::int64_t p = 0; p < num_parts; ++p)
          r[static_cast<std::size_t>(t)].emplace_back(
              off[static_cast<std::size_t>(p * per + t)],
              off[static_cast<std::size_t>(p * per + t + 1)]);
      return r;
    };
    c.node_ranges = ranges(node_off, ntypes);
    c.edge_ranges = ranges(edge_off, etypes);
  } else {
    c.node_map_file = "node_map.npy";
    c.edge_map_file = "edge_map.npy";
  }
  for (const auto& [tname, t] : node_data)
    c.node_feats.push_back(
        {tname, std::string(dtype_name(detail::stored_node_dtype(t, opts))), t.shape});
  for (const auto& [tname, t] : edge_data)
    c.edge_feats.push_back({tname, std::string(dtype_name(t.dtype)), t.shape});
  auto publish = [&](const std::string& item) { detail::move_into_place(staging, out_dir, item); };
  for (std::int64_t p = 0; p < num_parts; ++p) publish("part" + std::to_string(p));
  if (!opts.relabel) {
    publish("node_map.npy");
    publish("edge_map.npy");
  }
  // The moves on disk before the config that says the partition is complete.
  sync_folder(out_dir);
  write_partition_config(c);
  progress.end();
  result.stages.assign(progress.stages().begin() + static_cast<std::ptrdiff_t>(first_stage),
                       progress.stages().end());
  result.peak_rss_bytes = peak_rss_bytes();
  return result;
}

}  // namespace distgraph
