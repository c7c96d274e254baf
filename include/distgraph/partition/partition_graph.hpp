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

// The stages of partition_graph, in the order it runs them: check, assign, relabel, build
// each partition (halo, graph files, data files), measure, publish. partition_distributed
// shares the checks, the graph files and the publishing.

/// Throws InvalidArgument unless `name` can name the config file `<name>.json`.
inline void check_graph_name(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos)
    throw InvalidArgument("graph name '" + name + "': expected a non-empty file name");
}

/// Throws InvalidArgument unless `num_parts` is in [1, max_parts] (the node count).
inline void check_num_parts(std::int64_t num_parts, std::int64_t max_parts) {
  if (num_parts < 1 || num_parts > max_parts)
    throw InvalidArgument("num_parts " + std::to_string(num_parts) + ": expected [1, " +
                          std::to_string(max_parts) + "] (the node count)");
}

/// Throws InvalidArgument unless `halo_hops` is in [1, 16].
inline void check_halo_hops(int halo_hops) {
  if (halo_hops < 1 || halo_hops > 16)
    throw InvalidArgument("halo_hops " + std::to_string(halo_hops) + ": expected [1, 16]");
}

/// Throws InvalidArgument unless `feat_dtype` is one node features may be stored in.
inline void check_feat_dtype(DType feat_dtype) {
  if (!is_feature_dtype(feat_dtype))
    throw InvalidArgument("feat_dtype " + std::string(dtype_name(feat_dtype)) +
                          ": expected float32, float16 or bfloat16");
}

/// The canonical names (`src:etype:dst`) of `types`' edge types, in type order.
inline std::vector<std::string> canonical_edge_type_names(const TypeMap& types) {
  std::vector<std::string> names;
  for (const auto& et : types.edge_types())
    names.push_back(et.src_type + ":" + et.edge_type + ":" + et.dst_type);
  return names;
}

/// The range i [offsets[i], offsets[i + 1]) that holds `id`: its type when types own
/// contiguous ID ranges, its partition when partitions do.
inline std::int64_t range_of(const std::vector<std::int64_t>& offsets, std::int64_t id) {
  return std::upper_bound(offsets.begin() + 1, offsets.end(), id) - (offsets.begin() + 1);
}

/// What checking partition_graph's input found: the class column it counts (or balances)
/// and the type of each data tensor, so later stages need not look them up again.
struct CheckedInput {
  std::span<const std::int64_t> classes;  ///< balance_ntypes, else count_ntypes; may be empty
  std::int64_t num_classes = 0;
  std::vector<std::int32_t> node_data_types, edge_data_types;  ///< -1: untyped data
};

/// The type of each tensor of `list` (node data when `nodes`, else edge data): typed data
/// ("<type>/<name>", typed_data.hpp) has a row per node (edge) of its type, other data one
/// per node (edge). Throws InvalidArgument for a name that is no file name, ShapeError for
/// a row count that does not fit.
inline std::vector<std::int32_t> check_data_rows(const Graph& g, const TensorList& list,
                                                 bool nodes) {
  const std::vector<std::string> type_names =
      nodes ? g.types.node_type_names() : canonical_edge_type_names(g.types);
  std::vector<std::int32_t> types;
  for (const auto& [tname, t] : list) {
    const std::int32_t type = typed_data_type(tname, type_names);
    const std::string file = type < 0 ? tname : tname.substr(tname.find('/') + 1);
    if (file.empty() || file.find('/') != std::string::npos)
      throw InvalidArgument("tensor name '" + tname +
                            "': expected a non-empty file name, or '<type>/<file name>' for "
                            "one of the graph's types");
    const std::int64_t rows = nodes
                                  ? (type < 0 ? g.num_nodes() : g.types.num_nodes(NodeType(type)))
                                  : (type < 0 ? g.num_edges() : g.types.num_edges(EdgeType(type)));
    const char* per = nodes ? (type < 0 ? " (one per node)" : " (one per node of its type)")
                            : (type < 0 ? " (one per edge)" : " (one per edge of its type)");
    if (t.rows() != rows || t.shape.empty())
      throw ShapeError("tensor '" + tname + "'",
                       std::to_string(t.rows()) + " rows; expected " + std::to_string(rows) + per);
    types.push_back(type);
  }
  return types;
}

/// Checks all of partition_graph's arguments, before it touches the output folder. Throws
/// what partition_graph documents for bad arguments.
inline CheckedInput check_partition_input(const Graph& g, const std::string& name,
                                          std::int64_t num_parts, const PartitionOptions& opts,
                                          const TensorList& node_data,
                                          const TensorList& edge_data) {
  const std::int64_t n = g.num_nodes();
  check_graph_name(name);
  check_num_parts(num_parts, std::max<std::int64_t>(n, 1));
  check_halo_hops(opts.halo_hops);
  check_feat_dtype(opts.feat_dtype);
  CheckedInput in;
  in.classes = opts.balance_ntypes.empty() ? opts.count_ntypes : opts.balance_ntypes;
  const char* classes_name = opts.balance_ntypes.empty() ? "count_ntypes" : "balance_ntypes";
  if (!in.classes.empty() && static_cast<std::int64_t>(in.classes.size()) != n)
    throw InvalidArgument(std::string(classes_name) + " has " + std::to_string(in.classes.size()) +
                          " entries; expected one per node (" + std::to_string(n) + ")");
  if (!opts.assignment.empty() && static_cast<std::int64_t>(opts.assignment.size()) != n)
    throw InvalidArgument("assignment has " + std::to_string(opts.assignment.size()) +
                          " entries; expected one per node (" + std::to_string(n) + ")");
  for (std::int32_t p : opts.assignment)
    if (p < 0 || p >= num_parts) throw IdOutOfRange("assignment partition id", p, 0, num_parts);
  in.node_data_types = check_data_rows(g, node_data, true);
  in.edge_data_types = check_data_rows(g, edge_data, false);
  for (auto c : in.classes) {
    if (c < 0 || c > 1'000'000)
      throw IdOutOfRange(std::string(classes_name) + " class", c, 0, 1'000'001);
    in.num_classes = std::max(in.num_classes, c + 1);
  }
  return in;
}

/// Which partition each node went to, and how that was decided.
struct Assignment {
  std::vector<std::int32_t> part;    ///< partition of each input node
  std::string method;                ///< the config's part_method: custom, random or metis
  std::int64_t metis_edge_cut = -1;  ///< METIS's objective; -1 for the other methods
};

/// METIS k-way on the symmetrised graph. Constraint columns as DGL builds them: one-hot per
/// balance class, plus in-degree for balance_edges; with no class column the node count is
/// the first constraint. Throws PartitionError.
inline Assignment metis_assignment(const Graph& g, std::int64_t num_parts,
                                   const PartitionOptions& opts, std::int64_t num_classes,
                                   unsigned threads) {
  const std::int64_t n = g.num_nodes();
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
  MetisResult r = metis_partition_rows(
      n, [&](std::int64_t v, auto&& emit) { symmetric_row(g, v, emit); }, mo, threads);
  return {std::move(r.parts), "metis", r.edge_cut};
}

/// Stage 1, assign: the given assignment, balanced random (per class when balancing), or
/// METIS. Throws PartitionError (METIS).
inline Assignment assign_partitions(const Graph& g, std::int64_t num_parts,
                                    const PartitionOptions& opts, std::int64_t num_classes,
                                    unsigned threads) {
  if (!opts.assignment.empty()) return {{opts.assignment.begin(), opts.assignment.end()}, "custom"};
  if (opts.method == PartMethod::random)
    return {opts.balance_ntypes.empty()
                ? random_partition(g.num_nodes(), num_parts, opts.seed)
                : random_by_class(opts.balance_ntypes, num_parts, opts.seed),
            "random"};
  return metis_assignment(g, num_parts, opts, num_classes, threads);
}

/// Stage 2's result: each node's and edge's global ID and where each partition's run of
/// them starts. Offsets are by (partition, type): run `p * types + t`.
struct Relabeling {
  bool relabeled = true;  ///< false: global IDs are the input IDs
  std::int32_t ntypes = 1, etypes = 1;
  std::vector<std::int32_t> edge_part;   ///< owner of each input edge (its destination's)
  std::vector<std::int64_t> new_nid;     ///< global ID of each input node
  std::vector<std::int64_t> node_order;  ///< input node of each rank (new_nid's inverse)
  std::vector<std::int64_t> node_off;    ///< num_parts * ntypes + 1 offsets into node_order
  std::vector<std::int64_t> new_eid;     ///< global ID of each input edge (relabeled only)
  std::vector<std::int64_t> edge_off;    ///< num_parts * etypes + 1 offsets
  std::vector<std::int64_t> edge_order;  ///< owned input edges by global ID (edge data only)

  std::int64_t global_eid(std::int64_t e) const {
    return relabeled ? new_eid[static_cast<std::size_t>(e)] : e;
  }
  /// Partition p's own nodes (input IDs) in local order.
  std::span<const std::int64_t> inner_nodes(std::int64_t p) const {
    const auto b = node_off[static_cast<std::size_t>(p * ntypes)];
    const auto e = node_off[static_cast<std::size_t>((p + 1) * ntypes)];
    return {node_order.data() + b, static_cast<std::size_t>(e - b)};
  }
  std::int64_t num_owned_edges(std::int64_t p) const {
    return edge_off[static_cast<std::size_t>((p + 1) * etypes)] -
           edge_off[static_cast<std::size_t>(p * etypes)];
  }
  /// Partition p's owned edges (input IDs) in global-ID order; empty without edge_order.
  std::span<const std::int64_t> owned_edges(std::int64_t p) const {
    if (edge_order.empty()) return {};
    return {edge_order.data() + edge_off[static_cast<std::size_t>(p * etypes)],
            static_cast<std::size_t>(num_owned_edges(p))};
  }
};

/// Relabels nodes: new IDs partition-major, then node type, then input ID. Bucket key =
/// partition * types + type; types own contiguous input ranges, so a stable sort by key
/// keeps (type, input ID) order inside each partition. Without relabeling global IDs stay
/// the input IDs and local order is input-ID order within each partition.
inline void relabel_nodes(const Graph& g, std::span<const std::int32_t> part,
                          std::int64_t num_parts, unsigned threads, Relabeling& r) {
  const std::int64_t n = g.num_nodes();
  const std::int32_t ntypes = r.ntypes;
  const auto& offsets = g.types.node_offsets();
  r.new_nid.resize(static_cast<std::size_t>(n));
  r.node_off = stable_ranks(
      n, num_parts * ntypes, threads,
      [&](std::int64_t v) {
        return std::int64_t{part[static_cast<std::size_t>(v)]} * ntypes + range_of(offsets, v);
      },
      r.new_nid);
  r.node_order.resize(static_cast<std::size_t>(n));
  parallel_for(0, n, threads, [&](std::int64_t v) {
    r.node_order[static_cast<std::size_t>(r.new_nid[static_cast<std::size_t>(v)])] = v;
  });
  if (r.relabeled) return;
  for (std::int64_t p = 0; p < num_parts; ++p)
    std::sort(r.node_order.begin() + r.node_off[static_cast<std::size_t>(p * ntypes)],
              r.node_order.begin() + r.node_off[static_cast<std::size_t>((p + 1) * ntypes)]);
  std::iota(r.new_nid.begin(), r.new_nid.end(), 0);
}

/// Relabels edges: each is owned by its destination's partition (read from the CSC), new
/// IDs partition-major, then edge type, then input ID (only counted without relabeling).
/// The m-sized arrays are the cost of this stage, so only those needed are made:
/// edge_order only `with_edge_order` (edge data needs it).
inline void relabel_edges(const Graph& g, std::span<const std::int32_t> part,
                          std::int64_t num_parts, bool with_edge_order, unsigned threads,
                          Relabeling& r) {
  const std::int64_t n = g.num_nodes(), m = g.num_edges();
  const std::int32_t etypes = r.etypes;
  const auto& offsets = g.types.edge_offsets();
  r.edge_part.resize(static_cast<std::size_t>(m));
  parallel_for(0, n, threads, [&](std::int64_t v) {
    for (std::int64_t e : g.in.edges(v))
      r.edge_part[static_cast<std::size_t>(e)] = part[static_cast<std::size_t>(v)];
  });
  r.new_eid.resize(r.relabeled ? static_cast<std::size_t>(m) : 0);
  r.edge_off = stable_ranks(
      m, num_parts * etypes, threads,
      [&](std::int64_t e) {
        return std::int64_t{r.edge_part[static_cast<std::size_t>(e)]} * etypes +
               range_of(offsets, e);
      },
      r.new_eid);
  if (!with_edge_order) return;
  r.edge_order.resize(static_cast<std::size_t>(m));
  if (r.relabeled) {
    parallel_for(0, m, threads, [&](std::int64_t e) {
      r.edge_order[static_cast<std::size_t>(r.new_eid[static_cast<std::size_t>(e)])] = e;
    });
    return;
  }
  std::vector<std::int64_t> at(static_cast<std::size_t>(num_parts));
  for (std::int64_t p = 0; p < num_parts; ++p)
    at[static_cast<std::size_t>(p)] = r.edge_off[static_cast<std::size_t>(p * etypes)];
  for (std::int64_t e = 0; e < m; ++e)
    r.edge_order[static_cast<std::size_t>(
        at[static_cast<std::size_t>(r.edge_part[static_cast<std::size_t>(e)])]++)] = e;
}

/// Stage 2, relabel: global IDs for `part` (one partition per node), so each partition
/// owns one contiguous ID range per node type (and edge type), in partition order.
inline Relabeling relabel(const Graph& g, std::span<const std::int32_t> part,
                          std::int64_t num_parts, bool relabel_ids, bool with_edge_order,
                          unsigned threads) {
  Relabeling r;
  r.relabeled = relabel_ids;
  r.ntypes = g.types.num_node_types();
  r.etypes = g.types.num_edge_types();
  relabel_edges(g, part, num_parts, with_edge_order, threads, r);
  relabel_nodes(g, part, num_parts, threads, r);
  return r;
}

/// Stage 3a, halo: a partition's local nodes (input IDs by local ID) into `local_nodes`:
/// its own nodes `inner`, then the nodes h in-hops away for h = 1..halo_hops, each level
/// sorted by global ID; `local_of` (input ID -> local ID, -1 elsewhere on entry) is set for
/// each. Returns the number of edge rows: rows of levels below halo_hops hold all their
/// in-edges, the outermost level none.
inline std::size_t gather_halo(const Graph& g, std::span<const std::int64_t> inner, int halo_hops,
                               const Relabeling& r, std::vector<std::int64_t>& local_of,
                               std::vector<std::int64_t>& local_nodes) {
  local_nodes.assign(inner.begin(), inner.end());
  for (std::size_t i = 0; i < local_nodes.size(); ++i)
    local_of[static_cast<std::size_t>(local_nodes[i])] = static_cast<std::int64_t>(i);
  std::size_t level_begin = 0, edge_rows = local_nodes.size();
  for (int hop = 1; hop <= halo_hops; ++hop) {
    const std::size_t level_end = local_nodes.size();
    edge_rows = level_end;
    for (std::size_t row = level_begin; row < level_end; ++row)
      for (std::int64_t u : g.in.neighbors(local_nodes[row]))
        if (local_of[static_cast<std::size_t>(u)] < 0) {
          local_of[static_cast<std::size_t>(u)] = 0;  // numbered below
          local_nodes.push_back(u);
        }
    if (local_nodes.size() == level_end) break;  // nothing new: no further hops
    // Sort the new level by global ID: sort the IDs themselves, then map them back.
    const auto first = local_nodes.begin() + static_cast<std::ptrdiff_t>(level_end);
    for (auto it = first; it != local_nodes.end(); ++it)
      *it = r.new_nid[static_cast<std::size_t>(*it)];
    std::sort(first, local_nodes.end());
    for (auto it = first; it != local_nodes.end(); ++it)
      if (r.relabeled) *it = r.node_order[static_cast<std::size_t>(*it)];
    for (std::size_t i = level_end; i < local_nodes.size(); ++i)
      local_of[static_cast<std::size_t>(local_nodes[i])] = static_cast<std::int64_t>(i);
    level_begin = level_end;
  }
  return edge_rows;
}

/// The sizes of one partition's graph files.
struct GraphFileShape {
  std::int64_t num_local = 0, num_inner = 0, local_edges = 0;
};

/// Writes a partition's graph files into `dir` (docs/FORMATS.md, streamed: see NpyStream):
/// indptr from `row_degree(r)` of each local row r (0 past the edge rows); the per-edge
/// files from `each_edge(push)`, which calls push(local source, global edge ID, input edge
/// ID, owned) for every local edge in CSC order; nid from `nid_of(i)` and orig_nid from
/// `orig_nid` for each local node i, own nodes first. Throws IoError.
template <class RowDegree, class EachEdge, class NidOf>
void write_partition_graph(const std::filesystem::path& dir, const GraphFileShape& s,
                           RowDegree&& row_degree, EachEdge&& each_edge, NidOf&& nid_of,
                           std::span<const std::int64_t> orig_nid) {
  {
    NpyStream indptr(dir / "indptr.npy", DType::int64, {s.num_local + 1});
    std::int64_t at = 0;
    indptr.push(at);
    for (std::int64_t r = 0; r < s.num_local; ++r) indptr.push(at += row_degree(r));
    indptr.finish();
  }
  {
    NpyStream indices(dir / "indices.npy", DType::int64, {s.local_edges});
    NpyStream eid(dir / "eid.npy", DType::int64, {s.local_edges});
    NpyStream orig_eid(dir / "orig_eid.npy", DType::int64, {s.local_edges});
    NpyStream inner_edge(dir / "inner_edge.npy", DType::bool_, {s.local_edges});
    each_edge([&](std::int64_t src, std::int64_t global, std::int64_t input, bool owned) {
      indices.push(src);
      eid.push(global);
      orig_eid.push(input);
      inner_edge.push(static_cast<std::uint8_t>(owned));
    });
    indices.finish();
    eid.finish();
    orig_eid.finish();
    inner_edge.finish();
  }
  NpyStream nid(dir / "nid.npy", DType::int64, {s.num_local});
  NpyStream orig(dir / "orig_nid.npy", DType::int64, {s.num_local});
  NpyStream inner_node(dir / "inner_node.npy", DType::bool_, {s.num_local});
  for (std::int64_t i = 0; i < s.num_local; ++i) {
    nid.push(std::int64_t{nid_of(i)});
    inner_node.push(static_cast<std::uint8_t>(i < s.num_inner));
  }
  orig.append(orig_nid.data(), orig_nid.size() * sizeof(std::int64_t));
  nid.finish();
  orig.finish();
  inner_node.finish();
}

/// The rows of type `type` among `ids` (input IDs), as rows of that type (ID - type start).
inline std::vector<std::int64_t> typed_rows(std::span<const std::int64_t> ids,
                                            const std::vector<std::int64_t>& offsets,
                                            std::int32_t type) {
  std::vector<std::int64_t> rows;
  for (const std::int64_t v : ids)
    if (range_of(offsets, v) == type) rows.push_back(v - offsets[static_cast<std::size_t>(type)]);
  return rows;
}

/// Writes rows `ids` of each tensor of `list` into `dir` (`types[i]`: the type of tensor i,
/// -1 untyped; typed rows go to `<type>/<name>.npy`), stored as `stored(tensor)`.
template <class Stored>
void write_partition_data(const std::filesystem::path& dir, const TensorList& list,
                          const std::vector<std::int32_t>& types, std::span<const std::int64_t> ids,
                          const std::vector<std::int64_t>& type_offsets, Stored&& stored) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& [tname, t] = list[i];
    const std::filesystem::path file = dir / (tname + ".npy");
    if (types[i] < 0) {
      write_rows(file, t, ids, stored(t));
      continue;
    }
    std::filesystem::create_directories(file.parent_path());
    write_rows(file, t, typed_rows(ids, type_offsets, types[i]), stored(t));
  }
}

/// Everything building a partition reads: the input, the options, what the stages before
/// found, and the staging folder the partitions are written into.
struct PartitionJob {
  const Graph& g;
  const PartitionOptions& opts;
  const TensorList& node_data;
  const TensorList& edge_data;
  const CheckedInput& in;
  const Relabeling& r;
  std::filesystem::path staging;
};

/// Stage 3b, one partition's graph files: rows are local destinations; a typed graph's
/// rows hold their edges grouped by edge type (then source), so per-relation samplers find
/// each relation's edges as one run of positions.
inline void write_local_graph(const PartitionJob& job, const std::filesystem::path& dir,
                              const GraphFileShape& shape, std::size_t edge_rows,
                              const std::vector<std::int64_t>& local_of,
                              const std::vector<std::int64_t>& local_nodes) {
  const Graph& g = job.g;
  const Relabeling& r = job.r;
  const auto& edge_offsets = g.types.edge_offsets();
  auto row_degree = [&](std::int64_t row) {
    const auto i = static_cast<std::size_t>(row);
    return i < edge_rows ? g.in.degree(local_nodes[i]) : std::int64_t{0};
  };
  auto each_edge = [&](auto&& push) {
    std::vector<std::pair<std::int32_t, std::uint32_t>> by_type;  // (edge type, k)
    for (std::size_t row = 0; row < edge_rows; ++row) {
      const auto sources = g.in.neighbors(local_nodes[row]);
      const auto edges = g.in.edges(local_nodes[row]);
      // An edge is owned by its destination's partition: the rows of owned nodes hold
      // exactly the owned edges (no lookup in edge_part).
      const bool owned = static_cast<std::int64_t>(row) < shape.num_inner;
      by_type.clear();
      for (std::size_t k = 0; k < sources.size(); ++k)
        by_type.emplace_back(
            r.etypes > 1 ? static_cast<std::int32_t>(range_of(edge_offsets, edges[k])) : 0,
            static_cast<std::uint32_t>(k));
      if (r.etypes > 1) std::stable_sort(by_type.begin(), by_type.end());
      for (const auto& [edge_type, kk] : by_type) {
        const std::size_t k = kk;
        // new_eid is read at random (edge IDs follow the source order); prefetching a few
        // edges ahead overlaps those cache misses.
        if (r.relabeled && k + 8 < edges.size() && r.etypes == 1)
          __builtin_prefetch(r.new_eid.data() + edges[k + 8]);
        push(local_of[static_cast<std::size_t>(sources[k])], r.global_eid(edges[k]), edges[k],
             owned);
      }
    }
  };
  auto nid_of = [&](std::int64_t i) {
    return r.new_nid[static_cast<std::size_t>(local_nodes[static_cast<std::size_t>(i)])];
  };
  write_partition_graph(dir / "graph", shape, row_degree, each_edge, nid_of, local_nodes);
}

/// Stage 3, build partition p into the staging folder: its halo, its graph files and the
/// rows of node and edge data it owns. `local_of` (-1 for every node) and `local_nodes` are
/// the worker's scratch, left as found. Returns the partition's sizes.
inline PartitionStats build_partition(const PartitionJob& job, std::int64_t p,
                                      std::vector<std::int64_t>& local_of,
                                      std::vector<std::int64_t>& local_nodes) {
  namespace fs = std::filesystem;
  const Graph& g = job.g;
  const std::span<const std::int64_t> inner = job.r.inner_nodes(p);
  const std::size_t edge_rows =
      gather_halo(g, inner, job.opts.halo_hops, job.r, local_of, local_nodes);
  GraphFileShape shape{static_cast<std::int64_t>(local_nodes.size()),
                       static_cast<std::int64_t>(inner.size()), 0};
  for (std::size_t row = 0; row < edge_rows; ++row)
    shape.local_edges += g.in.degree(local_nodes[row]);
  const fs::path dir = job.staging / ("part" + std::to_string(p));
  for (const char* sub : {"graph", "node_feat", "edge_feat"}) fs::create_directories(dir / sub);
  write_local_graph(job, dir, shape, edge_rows, local_of, local_nodes);
  write_partition_data(dir / "node_feat", job.node_data, job.in.node_data_types, inner,
                       g.types.node_offsets(),
                       [&](const HostTensor& t) { return stored_node_dtype(t, job.opts); });
  write_partition_data(dir / "edge_feat", job.edge_data, job.in.edge_data_types,
                       job.r.owned_edges(p), g.types.edge_offsets(),
                       [](const HostTensor& t) { return t.dtype; });
  for (auto v : local_nodes) local_of[static_cast<std::size_t>(v)] = -1;
  return {static_cast<std::int64_t>(inner.size()),
          shape.num_local - shape.num_inner,
          job.r.num_owned_edges(p),
          shape.local_edges,
          {}};
}

/// Builds every partition, in parallel: one worker per partition at a time, each with its
/// own input ID -> local ID table. Returns each partition's sizes.
inline std::vector<PartitionStats> build_partitions(const PartitionJob& job, std::int64_t num_parts,
                                                    unsigned threads) {
  std::vector<PartitionStats> stats(static_cast<std::size_t>(num_parts));
  const unsigned workers = static_cast<unsigned>(std::min<std::int64_t>(threads, num_parts));
  parallel_chunks(
      0, num_parts, workers,
      [&](unsigned, std::int64_t pb, std::int64_t pe) {
        std::vector<std::int64_t> local_of(static_cast<std::size_t>(job.g.num_nodes()), -1),
            local_nodes;
        for (std::int64_t p = pb; p < pe; ++p)
          stats[static_cast<std::size_t>(p)] = build_partition(job, p, local_of, local_nodes);
      },
      1);
  return stats;
}

/// Stage 4, quality: the edges whose endpoints lie in different partitions, the nodes of
/// each class per partition, and the balance figures.
inline void measure_partitions(const Graph& g, std::span<const std::int32_t> part,
                               const CheckedInput& in, PartitionResult& result) {
  std::int64_t cross = 0;
  for (std::int64_t v = 0; v < g.num_nodes(); ++v)
    for (std::int64_t u : g.in.neighbors(v))
      cross += part[static_cast<std::size_t>(u)] != part[static_cast<std::size_t>(v)];
  result.cross_edges = cross;
  if (in.num_classes > 0) {
    for (auto& st : result.parts)
      st.class_counts.assign(static_cast<std::size_t>(in.num_classes), 0);
    for (std::int64_t v = 0; v < g.num_nodes(); ++v)
      result.parts[static_cast<std::size_t>(part[static_cast<std::size_t>(v)])]
          .class_counts[static_cast<std::size_t>(in.classes[static_cast<std::size_t>(v)])]++;
  }
  set_balance(result);
}

/// For each of `per` types, each partition's [begin, end) of IDs, from offsets by
/// (partition, type): the config's node_ranges / edge_ranges.
inline std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> type_ranges(
    const std::vector<std::int64_t>& off, std::int64_t num_parts, std::int32_t per) {
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> r(static_cast<std::size_t>(per));
  for (std::int32_t t = 0; t < per; ++t)
    for (std::int64_t p = 0; p < num_parts; ++p)
      r[static_cast<std::size_t>(t)].emplace_back(off[static_cast<std::size_t>(p * per + t)],
                                                  off[static_cast<std::size_t>(p * per + t + 1)]);
  return r;
}

/// The config partition_graph writes for `job`, as `result.config` (with describe_partitions
/// for what every partitioner writes alike).
inline void describe_local_partition(PartitionResult& result, const PartitionJob& job,
                                     const std::string& name, const std::string& method,
                                     std::int64_t num_parts,
                                     const std::filesystem::path& config_path) {
  const TypeMap& types = job.g.types;
  const PartitionOptions& opts = job.opts;
  std::vector<std::int64_t> node_counts, edge_counts;
  for (std::int32_t t = 0; t < job.r.ntypes; ++t)
    node_counts.push_back(types.num_nodes(NodeType(t)));
  for (std::int32_t t = 0; t < job.r.etypes; ++t)
    edge_counts.push_back(types.num_edges(EdgeType(t)));
  describe_partitions(result, name, method, opts.halo_hops, job.g.num_nodes(), job.g.num_edges(),
                      opts.relabel, opts.seed, node_counts, edge_counts);
  PartitionConfig& c = result.config;
  c.path = config_path;
  c.ntypes = types.node_type_names();
  c.etypes = canonical_edge_type_names(types);
  if (opts.relabel) {
    c.node_ranges = type_ranges(job.r.node_off, num_parts, job.r.ntypes);
    c.edge_ranges = type_ranges(job.r.edge_off, num_parts, job.r.etypes);
  } else {
    c.node_map_file = "node_map.npy";
    c.edge_map_file = "edge_map.npy";
  }
  for (const auto& [tname, t] : job.node_data)
    c.node_feats.push_back({tname, std::string(dtype_name(stored_node_dtype(t, opts))), t.shape});
  for (const auto& [tname, t] : job.edge_data)
    c.edge_feats.push_back({tname, std::string(dtype_name(t.dtype)), t.shape});
}

/// A staging folder, created empty (whatever an earlier run of this process ID left is
/// removed) and removed with everything still in it when this goes out of scope: whatever
/// fails, only finished output is ever moved out of it. Throws IoError.
class StagingFolder {
 public:
  explicit StagingFolder(std::filesystem::path dir) : dir_(std::move(dir)) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    std::filesystem::create_directories(dir_, ec);
    if (ec) throw IoError(dir_.string(), "cannot create staging folder: " + ec.message());
  }
  StagingFolder(const StagingFolder&) = delete;
  StagingFolder& operator=(const StagingFolder&) = delete;
  ~StagingFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  const std::filesystem::path& path() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

/// Moves each of `items` from `staging` into `out_dir`, then syncs `out_dir` so the moves
/// are on disk before any config says the partition is complete. Throws IoError.
inline void publish_staged(const std::filesystem::path& staging,
                           const std::filesystem::path& out_dir,
                           const std::vector<std::string>& items) {
  for (const auto& item : items) move_into_place(staging, out_dir, item);
  sync_folder(out_dir);
}

/// Stage 5, publish: the staged `items` into place, then the config, written last: it is
/// what says the partition is complete. Throws IoError (no config is written then).
inline void publish_partition(const std::filesystem::path& staging,
                              const std::filesystem::path& out_dir,
                              const std::vector<std::string>& items, const PartitionConfig& c) {
  publish_staged(staging, out_dir, items);
  write_partition_config(c);
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
  const unsigned threads = opts.num_threads == 0 ? default_num_threads() : opts.num_threads;
  Progress silent(true);
  Progress& progress = opts.progress ? *opts.progress : silent;
  const std::size_t first_stage = progress.stages().size();
  const detail::CheckedInput in =
      detail::check_partition_input(g, name, num_parts, opts, node_data, edge_data);
  PartitionResult result;

  progress.begin("assign partitions");
  const detail::Assignment a =
      detail::assign_partitions(g, num_parts, opts, in.num_classes, threads);
  result.metis_edge_cut = a.metis_edge_cut;
  progress.end();

  progress.begin("relabel");
  const detail::Relabeling r =
      detail::relabel(g, a.part, num_parts, opts.relabel, !edge_data.empty(), threads);
  progress.end();

  progress.begin("build partitions");
  detail::clear_for_new_partition(out_dir, name);
  const detail::StagingFolder staging(out_dir /
                                      (staging_folder_prefix(name) + std::to_string(::getpid())));
  const detail::PartitionJob job{g, opts, node_data, edge_data, in, r, staging.path()};
  result.parts = detail::build_partitions(job, num_parts, threads);
  std::vector<std::string> items;
  for (std::int64_t p = 0; p < num_parts; ++p) items.push_back("part" + std::to_string(p));
  if (!opts.relabel) {
    write_npy<std::int32_t>(staging.path() / "node_map.npy", a.part);
    write_npy<std::int32_t>(staging.path() / "edge_map.npy", r.edge_part);
    items.insert(items.end(), {"node_map.npy", "edge_map.npy"});
  }
  progress.end();

  progress.begin("statistics");
  detail::measure_partitions(g, a.part, in, result);
  progress.end();

  progress.begin("publish");
  detail::describe_local_partition(result, job, name, a.method, num_parts,
                                   out_dir / (name + ".json"));
  detail::publish_partition(staging.path(), out_dir, items, result.config);
  progress.end();
  result.stages.assign(progress.stages().begin() + static_cast<std::ptrdiff_t>(first_stage),
                       progress.stages().end());
  result.peak_rss_bytes = peak_rss_bytes();
  return result;
}

}  // namespace distgraph
