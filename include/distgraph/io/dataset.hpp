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

/// meta[key] as a non-negative integer, nullopt when absent. Throws FormatError naming
/// `meta_path` when it is something else.
inline std::optional<std::int64_t> meta_count(const nlohmann::json& meta, const char* key,
                                              const std::string& meta_path) {
  const auto it = meta.find(key);
  if (it == meta.end()) return std::nullopt;
  if (!it->is_number_integer() ||
      (it->is_number_unsigned() &&
       it->get<std::uint64_t>() >
           static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) ||
      it->get<std::int64_t>() < 0)
    throw FormatError(meta_path, std::string(key) + " is " + printable(it->dump(), 40) +
                                     "; expected a non-negative integer");
  return it->get<std::int64_t>();
}

/// Throws ShapeError naming the file unless the array has rank `rank`.
inline void require_rank(const NpyArray& a, std::size_t rank, const char* expected) {
  if (a.header.shape.size() != rank)
    throw ShapeError(a.path, "shape " + shape_string(a.header.shape) + "; expected " + expected);
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
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto status = fs::status(dir, ec);
  if (!fs::exists(status)) throw IoError(dir.string(), "no such folder");
  if (!fs::is_directory(status)) throw IoError(dir.string(), "not a folder");
  const NpyReadOptions read_options{.mmap = options.mmap};
  const auto exists = [&](const char* file) { return fs::exists(dir / file, ec); };
  const auto read = [&](const char* file) { return read_npy(dir / file, read_options); };

  Dataset ds;
  const std::string meta_path = (dir / "meta.json").string();
  std::optional<std::int64_t> meta_nodes, meta_edges, meta_feat_dim, meta_classes;
  if (exists("meta.json")) {
    ds.meta = detail::read_json_file(dir / "meta.json");
    if (!ds.meta.is_object())
      throw FormatError(meta_path, std::string("top level is a JSON ") + ds.meta.type_name() +
                                       "; expected an object");
    meta_nodes = detail::meta_count(ds.meta, "num_nodes", meta_path);
    meta_edges = detail::meta_count(ds.meta, "num_edges", meta_path);
    meta_feat_dim = detail::meta_count(ds.meta, "feat_dim", meta_path);
    meta_classes = detail::meta_count(ds.meta, "num_classes", meta_path);
  }
  if (const auto it = ds.meta.find("name"); it != ds.meta.end()) {
    if (!it->is_string())
      throw FormatError(meta_path,
                        "name is " + detail::printable(it->dump(), 40) + "; expected a string");
    ds.name = it->get<std::string>();
  } else {
    const auto normal = dir.lexically_normal();
    ds.name = (normal.has_filename() ? normal : normal.parent_path()).filename().string();
  }

  // Edges.
  for (const char* required : {"src.npy", "dst.npy"})
    if (!exists(required)) throw IoError((dir / required).string(), "required file is missing");
  const auto src = read("src.npy");
  const auto dst = read("dst.npy");
  detail::require_rank(src, 1, "1-D [num_edges]");
  detail::require_rank(dst, 1, "1-D [num_edges]");
  if (src.header.shape[0] != dst.header.shape[0])
    throw ShapeError(src.path, "length " + std::to_string(src.header.shape[0]) + " but dst.npy (" +
                                   dst.path + ") has length " +
                                   std::to_string(dst.header.shape[0]) +
                                   "; expected equal lengths");
  ds.src = src.to_int64();
  ds.dst = dst.to_int64();

  // Optional arrays, shape-checked before anything is converted.
  std::optional<NpyArray> feat, label, masks[3];
  static constexpr const char* mask_files[3] = {"train_mask.npy", "val_mask.npy", "test_mask.npy"};
  if (exists("feat.npy")) {
    feat = read("feat.npy");
    detail::require_rank(*feat, 2, "2-D [num_nodes, feat_dim]");
  }
  if (exists("label.npy")) {
    label = read("label.npy");
    detail::require_rank(*label, 1, "1-D [num_nodes]");
  }
  for (int m = 0; m < 3; ++m) {
    if (!exists(mask_files[m])) continue;
    masks[m] = read(mask_files[m]);
    detail::require_rank(*masks[m], 1, "1-D [num_nodes]");
  }

  // num_nodes, and a phrase saying where it came from for mismatch messages.
  std::string nodes_source;
  bool nodes_from_ids = false;
  if (meta_nodes) {
    ds.num_nodes = *meta_nodes;
    nodes_source = "meta.json says num_nodes = " + std::to_string(ds.num_nodes);
  } else if (feat) {
    ds.num_nodes = feat->header.shape[0];
    nodes_source = "feat.npy has " + std::to_string(ds.num_nodes) + " rows";
  } else if (label) {
    ds.num_nodes = label->header.shape[0];
    nodes_source = "label.npy has " + std::to_string(ds.num_nodes) + " entries";
  } else {
    nodes_from_ids = true;
  }
  const auto check_length = [&](const NpyArray& a, const char* unit) {
    if (a.header.shape[0] != ds.num_nodes)
      throw ShapeError(a.path, std::to_string(a.header.shape[0]) + " " + unit + ", but " +
                                   nodes_source + "; expected equal");
  };
  if (nodes_from_ids) {
    // No per-node file says N: only negative ids can be wrong.
    std::int64_t upper = 0;
    for (const auto* ids : {&ds.src, &ds.dst}) {
      const auto r = detail::id_scan(ids->span(), options.num_threads);
      if (ids->empty()) continue;
      if (r.min < 0)
        throw IdOutOfRange(ids == &ds.src ? src.path : dst.path, r.min, 0,
                           std::numeric_limits<std::int64_t>::max());
      upper = std::max(upper, r.max + 1);
    }
    ds.num_nodes = upper;
    nodes_source = "the largest edge id + 1 is " + std::to_string(upper);
  } else {
    detail::check_ids(src.path, ds.src.span(), ds.num_nodes, options.num_threads);
    detail::check_ids(dst.path, ds.dst.span(), ds.num_nodes, options.num_threads);
  }
  if (feat) check_length(*feat, "rows");
  if (label) check_length(*label, "entries");
  for (const auto& m : masks)
    if (m) check_length(*m, "entries");
  if (meta_edges && *meta_edges != ds.num_edges())
    throw ShapeError(meta_path, "num_edges is " + std::to_string(*meta_edges) +
                                    ", but src.npy has " + std::to_string(ds.num_edges()) +
                                    " entries; expected equal");

  if (feat) {
    ds.feat_dim = feat->header.shape[1];
    if (meta_feat_dim && *meta_feat_dim != ds.feat_dim)
      throw ShapeError(meta_path, "feat_dim is " + std::to_string(*meta_feat_dim) +
                                      ", but feat.npy has " + std::to_string(ds.feat_dim) +
                                      " columns; expected equal");
    ds.feat = feat->to_float32();
  }

  if (label) {
    ds.label = label->to_int64();
    if (meta_classes) {
      ds.num_classes = *meta_classes;
    } else {
      const auto r = detail::id_scan(ds.label.span(), options.num_threads);
      ds.num_classes = ds.label.empty() ? 0 : std::max<std::int64_t>(r.max + 1, 0);
    }
    // Nodes outside every mask still need a valid class (CiteSeer stores 0 for them).
    detail::check_ids(label->path, ds.label.span(), ds.num_classes, options.num_threads);
  } else if (meta_classes) {
    ds.num_classes = *meta_classes;
  }

  Buffer<bool>* mask_fields[3] = {&ds.train_mask, &ds.val_mask, &ds.test_mask};
  static constexpr const char* split_keys[3] = {"train", "val", "test"};
  const auto split = ds.meta.find("split");
  for (int m = 0; m < 3; ++m) {
    if (!masks[m]) continue;
    *mask_fields[m] = masks[m]->to_bool();
    if (split == ds.meta.end() || !split->is_object()) continue;
    const auto declared = detail::meta_count(*split, split_keys[m], meta_path);
    if (declared && *declared != Dataset::count(*mask_fields[m]))
      throw ShapeError(meta_path, std::string("split.") + split_keys[m] + " is " +
                                      std::to_string(*declared) + ", but " + mask_files[m] +
                                      " has " + std::to_string(Dataset::count(*mask_fields[m])) +
                                      " nodes set; expected equal");
  }
  return ds;
}

/// Writes `ds` as a dataset folder that load_dataset reads back equal: src.npy, dst.npy,
/// feat.npy (when feat_dim > 0), label.npy and masks (when non-empty), and meta.json
/// (ds.meta without its stale "files" entry, with name, num_nodes, num_edges, feat_dim,
/// num_classes and split sizes set from the data). Removes optional files of the format
/// that `ds` lacks. Creates `dir` if needed; each file is replaced atomically. Throws
/// ShapeError or IdOutOfRange when `ds` is inconsistent (before writing anything) and
/// IoError when a write fails.
inline void write_dataset(const std::filesystem::path& dir, const Dataset& ds) {
  namespace fs = std::filesystem;
  const std::string subject = "dataset '" + ds.name + "'";
  const auto n = ds.num_nodes;
  const auto require_size = [&](std::size_t size, std::int64_t expected, const char* what) {
    if (static_cast<std::int64_t>(size) != expected)
      throw ShapeError(subject, std::string(what) + " has " + std::to_string(size) +
                                    " entries; expected " + std::to_string(expected));
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

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw IoError(dir.string(), "cannot create folder: " + ec.message());
  const auto drop = [&](const char* file) {
    fs::remove(dir / file, ec);
    if (ec) throw IoError((dir / file).string(), "cannot remove stale file: " + ec.message());
  };
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
