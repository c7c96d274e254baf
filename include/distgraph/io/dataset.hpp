// Dataset folders (src/dst/feat/label/mask .npy files plus meta.json): load, validate, write.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "distgraph/core/buffer.hpp"
#include "distgraph/core/durable_file.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/core/parallel.hpp"
#include "distgraph/io/npy.hpp"
#include "distgraph/io/posix_file.hpp"

namespace distgraph {

/// A homogeneous graph with optional node features, labels and a train/val/test split, as
/// stored in a dataset folder (format: ../shared/data/README.md and docs/FORMATS.md).
/// Optional parts are empty buffers when absent. Copies share the arrays.
struct Dataset {
  std::string name;
  std::int64_t num_nodes = 0;
  /// Edge i goes src[i] -> dst[i]; ids in [0, num_nodes).
  Buffer<std::int64_t> src, dst;
  /// Row-major [num_nodes, feat_dim]; empty without feat.npy.
  Buffer<float> feat;
  std::int64_t feat_dim = 0;
  /// Class ids in [0, num_classes), one per node; empty without label.npy.
  Buffer<std::int64_t> label;
  std::int64_t num_classes = 0;
  /// One flag per node each; empty when the file is absent.
  Buffer<bool> train_mask, val_mask, test_mask;
  /// meta.json as read (an empty object when there is none).
  nlohmann::json meta = nlohmann::json::object();

  std::int64_t num_edges() const noexcept { return static_cast<std::int64_t>(src.size()); }
  bool has_features() const noexcept { return feat_dim > 0; }
  bool has_labels() const noexcept { return !label.empty(); }
  /// Number of set flags in `mask`.
  static std::int64_t count(std::span<const bool> mask) noexcept {
    return static_cast<std::int64_t>(std::count(mask.begin(), mask.end(), true));
  }
  std::int64_t num_train() const noexcept { return count(train_mask); }
  std::int64_t num_val() const noexcept { return count(val_mask); }
  std::int64_t num_test() const noexcept { return count(test_mask); }
};

/// How load_dataset reads the folder.
struct DatasetLoadOptions {
  /// Map the arrays (zero-copy where the stored dtype is the one Dataset holds).
  bool mmap = true;
  /// Threads for the id range scans (0 = hardware count).
  unsigned num_threads = 0;
};

namespace detail {

struct IdScan {
  std::int64_t min = std::numeric_limits<std::int64_t>::max();
  std::int64_t max = std::numeric_limits<std::int64_t>::min();
};

/// Smallest and largest value of `ids` (min > max when empty), scanned in parallel.
inline IdScan id_scan(std::span<const std::int64_t> ids, unsigned num_threads) {
  const auto n = static_cast<std::int64_t>(ids.size());
  std::vector<IdScan> parts(plan_chunks(0, n, num_threads));
  parallel_chunks(0, n, num_threads, [&](unsigned c, std::int64_t b, std::int64_t e) {
    IdScan r;
    for (std::int64_t i = b; i < e; ++i) {
      r.min = std::min(r.min, ids[static_cast<std::size_t>(i)]);
      r.max = std::max(r.max, ids[static_cast<std::size_t>(i)]);
    }
    parts[c] = r;
  });
  IdScan all;
  for (const auto& r : parts) {
    all.min = std::min(all.min, r.min);
    all.max = std::max(all.max, r.max);
  }
  return all;
}

/// Throws IdOutOfRange naming `subject` unless every id lies in [0, upper).
inline void check_ids(const std::string& subject, std::span<const std::int64_t> ids,
                      std::int64_t upper, unsigned num_threads) {
  if (ids.empty()) return;
  const auto r = id_scan(ids, num_threads);
  if (r.min < 0) throw IdOutOfRange(subject, r.min, 0, upper);
  if (r.max >= upper) throw IdOutOfRange(subject, r.max, 0, upper);
}

/// Parses a JSON file. Throws IoError when unreadable, FormatError naming it when malformed.
inline nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path.string(), "cannot open for reading");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw IoError(path.string(), "cannot read");
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(path.string(), std::string("malformed JSON: ") + e.what());
  }
}

/// meta[key] (json or ordered_json) as a non-negative integer, nullopt when absent. Throws
/// FormatError naming `meta_path` when it is something else.
template <class Json>
std::optional<std::int64_t> meta_count(const Json& meta, const char* key,
                                       const std::string& meta_path) {
  const auto it = meta.find(key);
  if (it == meta.end()) return std::nullopt;
  if (!it->is_number_integer() ||
      (it->is_number_unsigned() &&
       it->template get<std::uint64_t>() >
           static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) ||
      it->template get<std::int64_t>() < 0)
    throw FormatError(meta_path, std::string(key) + " is " + printable(it->dump(), 40) +
                                     "; expected a non-negative integer");
  return it->template get<std::int64_t>();
}

/// Throws ShapeError naming the file unless the array has rank `rank`.
inline void require_rank(const NpyArray& a, std::size_t rank, const char* expected) {
  if (a.header.shape.size() != rank)
    throw ShapeError(a.path, "shape " + shape_string(a.header.shape) + "; expected " + expected);
}

// The stages below are load_dataset's, in its order; the ones marked "shared" are
// load_hetero_dataset's too, so both layouts check a folder, labels and masks alike.

/// Shared: throws IoError unless `dir` is an existing folder, before any file is opened.
inline void require_dataset_folder(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto status = fs::status(dir, ec);
  if (!fs::exists(status)) throw IoError(dir.string(), "no such folder");
  if (!fs::is_directory(status)) throw IoError(dir.string(), "not a folder");
}

/// Shared: a dataset's name when meta.json gives none, the folder's own (a trailing '/'
/// does not make it empty).
inline std::string dataset_folder_name(const std::filesystem::path& dir) {
  const auto normal = dir.lexically_normal();
  return (normal.has_filename() ? normal : normal.parent_path()).filename().string();
}

/// Shared: throws FormatError naming `path` unless meta.json's top level is an object
/// (every key lookup after this one assumes it).
template <class Json>
void require_json_object(const Json& meta, const std::string& path) {
  if (!meta.is_object())
    throw FormatError(
        path, std::string("top level is a JSON ") + meta.type_name() + "; expected an object");
}

/// A homogeneous folder's meta.json and the counts it declares: all optional, each one
/// later cross-checked against the arrays.
struct DatasetMeta {
  nlohmann::json json = nlohmann::json::object();
  std::string path;
  std::string name;
  std::optional<std::int64_t> num_nodes, num_edges, feat_dim, num_classes;
};

/// Stage 1: meta.json, read first so that every later mismatch can name what it declares.
inline DatasetMeta read_dataset_meta(const std::filesystem::path& dir) {
  std::error_code ec;
  DatasetMeta meta;
  meta.path = (dir / "meta.json").string();
  if (std::filesystem::exists(dir / "meta.json", ec)) {
    meta.json = read_json_file(dir / "meta.json");
    require_json_object(meta.json, meta.path);
    meta.num_nodes = meta_count(meta.json, "num_nodes", meta.path);
    meta.num_edges = meta_count(meta.json, "num_edges", meta.path);
    meta.feat_dim = meta_count(meta.json, "feat_dim", meta.path);
    meta.num_classes = meta_count(meta.json, "num_classes", meta.path);
  }
  if (const auto it = meta.json.find("name"); it != meta.json.end()) {
    if (!it->is_string())
      throw FormatError(meta.path, "name is " + printable(it->dump(), 40) + "; expected a string");
    meta.name = it->get<std::string>();
  } else {
    meta.name = dataset_folder_name(dir);
  }
  return meta;
}

/// The edge arrays widened to int64, with their paths for messages about their ids.
struct DatasetEdges {
  Buffer<std::int64_t> src, dst;
  std::string src_path, dst_path;
};

/// Stage 2: the required src.npy and dst.npy, of equal length; ids are checked once the
/// node count is known.
inline DatasetEdges read_dataset_edges(const std::filesystem::path& dir,
                                       const NpyReadOptions& read_options) {
  std::error_code ec;
  for (const char* required : {"src.npy", "dst.npy"})
    if (!std::filesystem::exists(dir / required, ec))
      throw IoError((dir / required).string(), "required file is missing");
  const auto src = read_npy(dir / "src.npy", read_options);
  const auto dst = read_npy(dir / "dst.npy", read_options);
  require_rank(src, 1, "1-D [num_edges]");
  require_rank(dst, 1, "1-D [num_edges]");
  if (src.header.shape[0] != dst.header.shape[0])
    throw ShapeError(src.path, "length " + std::to_string(src.header.shape[0]) + " but dst.npy (" +
                                   dst.path + ") has length " +
                                   std::to_string(dst.header.shape[0]) +
                                   "; expected equal lengths");
  return {src.to_int64(), dst.to_int64(), src.path, dst.path};
}

/// The file names of the train, val and test masks, in Dataset's field order.
inline constexpr const char* mask_files[3] = {"train_mask.npy", "val_mask.npy", "test_mask.npy"};
/// The keys of meta.json "split", in the same order.
inline constexpr const char* split_keys[3] = {"train", "val", "test"};

/// The optional per-node files of a homogeneous folder, opened but not converted.
struct DatasetNodeFiles {
  std::optional<NpyArray> feat, label, masks[3];
};

/// Stage 3: the optional per-node files, shape-checked before anything is converted, so
/// that a wrong rank is reported before a wrong length.
inline DatasetNodeFiles read_dataset_node_files(const std::filesystem::path& dir,
                                                const NpyReadOptions& read_options) {
  std::error_code ec;
  const auto exists = [&](const char* file) { return std::filesystem::exists(dir / file, ec); };
  DatasetNodeFiles files;
  if (exists("feat.npy")) {
    files.feat = read_npy(dir / "feat.npy", read_options);
    require_rank(*files.feat, 2, "2-D [num_nodes, feat_dim]");
  }
  if (exists("label.npy")) {
    files.label = read_npy(dir / "label.npy", read_options);
    require_rank(*files.label, 1, "1-D [num_nodes]");
  }
  for (int m = 0; m < 3; ++m) {
    if (!exists(mask_files[m])) continue;
    files.masks[m] = read_npy(dir / mask_files[m], read_options);
    require_rank(*files.masks[m], 1, "1-D [num_nodes]");
  }
  return files;
}

/// num_nodes, and a phrase saying where it came from for mismatch messages.
struct NodeCount {
  std::int64_t num_nodes = 0;
  std::string source;
};

/// Stage 4: num_nodes from meta.json, else feat.npy's rows, else label.npy's length, else
/// the largest edge id + 1; the edge ids are checked against it.
inline NodeCount count_dataset_nodes(const DatasetMeta& meta, const DatasetNodeFiles& files,
                                     const DatasetEdges& edges, unsigned num_threads) {
  NodeCount count;
  if (meta.num_nodes) {
    count.num_nodes = *meta.num_nodes;
    count.source = "meta.json says num_nodes = " + std::to_string(count.num_nodes);
  } else if (files.feat) {
    count.num_nodes = files.feat->header.shape[0];
    count.source = "feat.npy has " + std::to_string(count.num_nodes) + " rows";
  } else if (files.label) {
    count.num_nodes = files.label->header.shape[0];
    count.source = "label.npy has " + std::to_string(count.num_nodes) + " entries";
  } else {
    // No per-node file says N: only negative ids can be wrong.
    std::int64_t upper = 0;
    for (const auto* ids : {&edges.src, &edges.dst}) {
      const auto r = id_scan(ids->span(), num_threads);
      if (ids->empty()) continue;
      if (r.min < 0)
        throw IdOutOfRange(ids == &edges.src ? edges.src_path : edges.dst_path, r.min, 0,
                           std::numeric_limits<std::int64_t>::max());
      upper = std::max(upper, r.max + 1);
    }
    count.num_nodes = upper;
    count.source = "the largest edge id + 1 is " + std::to_string(upper);
    return count;
  }
  check_ids(edges.src_path, edges.src.span(), count.num_nodes, num_threads);
  check_ids(edges.dst_path, edges.dst.span(), count.num_nodes, num_threads);
  return count;
}

/// Stage 5: every per-node file has num_nodes rows and meta.json's num_edges is the edge
/// count, checked before the (possibly copying) conversions.
inline void check_dataset_lengths(const DatasetNodeFiles& files, const NodeCount& count,
                                  const DatasetMeta& meta, std::int64_t num_edges) {
  const auto check_length = [&](const NpyArray& a, const char* unit) {
    if (a.header.shape[0] != count.num_nodes)
      throw ShapeError(a.path, std::to_string(a.header.shape[0]) + " " + unit + ", but " +
                                   count.source + "; expected equal");
  };
  if (files.feat) check_length(*files.feat, "rows");
  if (files.label) check_length(*files.label, "entries");
  for (const auto& m : files.masks)
    if (m) check_length(*m, "entries");
  if (meta.num_edges && *meta.num_edges != num_edges)
    throw ShapeError(meta.path, "num_edges is " + std::to_string(*meta.num_edges) +
                                    ", but src.npy has " + std::to_string(num_edges) +
                                    " entries; expected equal");
}

/// Labels widened to int64 and their class count.
struct Labels {
  Buffer<std::int64_t> label;
  std::int64_t num_classes = 0;
};

/// Shared: the labels of `label` (a checked 1-D file) with num_classes from meta.json,
/// else the largest label + 1; every label, masked or not, must be a class (CiteSeer
/// stores 0 for nodes outside every mask). `subject` names the labels in the error.
inline Labels read_labels(const NpyArray& label, std::optional<std::int64_t> meta_classes,
                          const std::string& subject, unsigned num_threads) {
  Labels out;
  out.label = label.to_int64();
  if (meta_classes) {
    out.num_classes = *meta_classes;
  } else {
    const auto r = id_scan(out.label.span(), num_threads);
    out.num_classes = out.label.empty() ? 0 : std::max<std::int64_t>(r.max + 1, 0);
  }
  check_ids(subject, out.label.span(), out.num_classes, num_threads);
  return out;
}

/// Shared: mask `m` (0 train, 1 val, 2 test) as flags, its count checked against
/// meta.json "split" when that is an object: a split that disagrees with its files is a
/// stale meta.json. `file` names the mask in the message.
inline Buffer<bool> read_split_mask(const NpyArray& mask, int m, const nlohmann::json& meta,
                                    const std::string& meta_path, const std::string& file) {
  auto flags = mask.to_bool();
  const auto split = meta.find("split");
  if (split == meta.end() || !split->is_object()) return flags;
  const auto declared = meta_count(*split, split_keys[m], meta_path);
  const auto set = Dataset::count(flags);
  if (declared && *declared != set)
    throw ShapeError(meta_path, std::string("split.") + split_keys[m] + " is " +
                                    std::to_string(*declared) + ", but " + file + " has " +
                                    std::to_string(set) + " nodes set; expected equal");
  return flags;
}

}  // namespace detail

/// Loads a dataset folder. src.npy and dst.npy (integer, 1-D, equal length) are required;
/// feat.npy (float [N, F]), label.npy (integer [N]), train/val/test_mask.npy (bool or 0/1
/// uint8 [N]) and meta.json are optional. num_nodes comes from meta.json, else feat.npy's
/// rows, else label.npy's length, else the largest edge id + 1; num_classes from
/// meta.json, else the largest label + 1. Everything is cross-checked. Arrays stored in
/// Dataset's dtypes are mapped, not copied (see DatasetLoadOptions). Blocks; thread-safe.
/// Throws IoError (missing folder or required file), FormatError (malformed file or
/// meta.json), DTypeError, ShapeError (lengths disagree; names both files and lengths),
/// IdOutOfRange (edge id or label out of range; names the file and the value).
inline Dataset load_dataset(const std::filesystem::path& dir, DatasetLoadOptions options = {}) {
  detail::require_dataset_folder(dir);
  const NpyReadOptions read_options{.mmap = options.mmap};
  auto meta = detail::read_dataset_meta(dir);
  auto edges = detail::read_dataset_edges(dir, read_options);
  const auto files = detail::read_dataset_node_files(dir, read_options);
  const auto count = detail::count_dataset_nodes(meta, files, edges, options.num_threads);
  detail::check_dataset_lengths(files, count, meta, static_cast<std::int64_t>(edges.src.size()));

  Dataset ds;
  ds.name = meta.name;
  ds.num_nodes = count.num_nodes;
  ds.src = std::move(edges.src);
  ds.dst = std::move(edges.dst);
  if (files.feat) {
    ds.feat_dim = files.feat->header.shape[1];
    if (meta.feat_dim && *meta.feat_dim != ds.feat_dim)
      throw ShapeError(meta.path, "feat_dim is " + std::to_string(*meta.feat_dim) +
                                      ", but feat.npy has " + std::to_string(ds.feat_dim) +
                                      " columns; expected equal");
    ds.feat = files.feat->to_float32();
  }
  if (files.label) {
    auto labels =
        detail::read_labels(*files.label, meta.num_classes, files.label->path, options.num_threads);
    ds.label = std::move(labels.label);
    ds.num_classes = labels.num_classes;
  } else if (meta.num_classes) {
    ds.num_classes = *meta.num_classes;
  }
  Buffer<bool>* mask_fields[3] = {&ds.train_mask, &ds.val_mask, &ds.test_mask};
  for (int m = 0; m < 3; ++m)
    if (files.masks[m])
      *mask_fields[m] =
          detail::read_split_mask(*files.masks[m], m, meta.json, meta.path, detail::mask_files[m]);
  ds.meta = std::move(meta.json);
  return ds;
}

namespace detail {

// Steps both writers (write_dataset, write_hetero_dataset) take alike.

/// Throws ShapeError naming `subject` unless `what` has `expected` entries: a writer
/// checks every array's size before it writes anything.
inline void require_entries(const std::string& subject, std::size_t size, std::int64_t expected,
                            const std::string& what) {
  if (static_cast<std::int64_t>(size) != expected)
    throw ShapeError(subject, what + " has " + std::to_string(size) + " entries; expected " +
                                  std::to_string(expected));
}

/// Creates folder `p` and its parents. Throws IoError naming it on failure.
inline void make_folder(const std::filesystem::path& p) {
  std::error_code ec;
  std::filesystem::create_directories(p, ec);
  if (ec) throw IoError(p.string(), "cannot create folder: " + ec.message());
}

/// Removes optional file `p` that the data written lacks, so an older one is not read
/// back with it. Throws IoError naming it on failure; absent is fine.
inline void remove_stale_file(const std::filesystem::path& p) {
  std::error_code ec;
  std::filesystem::remove(p, ec);
  if (ec) throw IoError(p.string(), "cannot remove stale file: " + ec.message());
}

}  // namespace detail

/// Writes `ds` as a dataset folder that load_dataset reads back equal: src.npy, dst.npy,
/// feat.npy (when feat_dim > 0), label.npy and masks (when non-empty), and meta.json
/// (ds.meta without its stale "files" entry, with name, num_nodes, num_edges, feat_dim,
/// num_classes and split sizes set from the data). Removes optional files of the format
/// that `ds` lacks. Creates `dir` if needed; each file is replaced atomically. Throws
/// ShapeError or IdOutOfRange when `ds` is inconsistent (before writing anything) and
/// IoError when a write fails.
inline void write_dataset(const std::filesystem::path& dir, const Dataset& ds) {
  const std::string subject = "dataset '" + ds.name + "'";
  const auto n = ds.num_nodes;
  const auto require_size = [&](std::size_t size, std::int64_t expected, const char* what) {
    detail::require_entries(subject, size, expected, what);
  };
  if (n < 0 || ds.feat_dim < 0 || ds.num_classes < 0)
    throw ShapeError(subject, "negative num_nodes, feat_dim or num_classes");
  require_size(ds.dst.size(), ds.num_edges(), "dst (src has that many)");
  if (ds.feat_dim > 0 || !ds.feat.empty()) {
    std::int64_t cells = 0;
    if (__builtin_mul_overflow(n, ds.feat_dim, &cells))
      throw ShapeError(subject, "num_nodes * feat_dim overflows");
    require_size(ds.feat.size(), cells, "feat (num_nodes * feat_dim)");
  }
  if (!ds.label.empty()) require_size(ds.label.size(), n, "label");
  if (!ds.train_mask.empty()) require_size(ds.train_mask.size(), n, "train_mask");
  if (!ds.val_mask.empty()) require_size(ds.val_mask.size(), n, "val_mask");
  if (!ds.test_mask.empty()) require_size(ds.test_mask.size(), n, "test_mask");
  detail::check_ids(subject + " src", ds.src.span(), n, 0);
  detail::check_ids(subject + " dst", ds.dst.span(), n, 0);
  if (!ds.label.empty()) detail::check_ids(subject + " label", ds.label.span(), ds.num_classes, 0);

  detail::make_folder(dir);
  const auto drop = [&](const char* file) { detail::remove_stale_file(dir / file); };
  write_npy(dir / "src.npy", ds.src.span());
  write_npy(dir / "dst.npy", ds.dst.span());
  if (ds.feat_dim > 0 || !ds.feat.empty())
    write_npy(dir / "feat.npy", ds.feat.span(), {n, ds.feat_dim});
  else
    drop("feat.npy");
  if (!ds.label.empty())
    write_npy(dir / "label.npy", ds.label.span());
  else
    drop("label.npy");

  nlohmann::json meta = ds.meta.is_object() ? ds.meta : nlohmann::json::object();
  meta.erase("files");
  meta["name"] = ds.name;
  meta["num_nodes"] = n;
  meta["num_edges"] = ds.num_edges();
  meta["feat_dim"] = ds.feat_dim;
  meta["num_classes"] = ds.num_classes;
  nlohmann::json split = nlohmann::json::object();
  const std::pair<const char*, const Buffer<bool>*> masks[3] = {
      {"train", &ds.train_mask}, {"val", &ds.val_mask}, {"test", &ds.test_mask}};
  for (const auto& [key, mask] : masks) {
    const std::string file = std::string(key) + "_mask.npy";
    if (mask->empty()) {
      drop(file.c_str());
      continue;
    }
    write_npy(dir / file, mask->span());
    split[key] = Dataset::count(*mask);
  }
  if (split.empty())
    meta.erase("split");
  else
    meta["split"] = split;
  const std::string text = meta.dump(2) + "\n";
  write_file_durably(dir / "meta.json", {std::as_bytes(std::span(text))});
}

}  // namespace distgraph
