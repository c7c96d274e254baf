// Typed dataset folders (nodes/<ntype>/, edges/<src>__<etype>__<dst>/, meta.json): load, validate,
// write.
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
#include <string_view>
#include <system_error>
#include <unordered_set>
#include <utility>
#include <vector>

#include "distgraph/core/buffer.hpp"
#include "distgraph/core/durable_file.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/core/ids.hpp"
#include "distgraph/graph/type_map.hpp"
#include "distgraph/io/dataset.hpp"
#include "distgraph/io/npy.hpp"

namespace distgraph {

/// A typed graph as stored in a typed dataset folder (format: docs/FORMATS.md, "Heterogeneous
/// dataset folders"). Node type t owns type-wise IDs [0, types.num_nodes(t)); edge type e
/// owns types.num_edges(e) edges. Optional parts are empty. Copies share the arrays.
struct HeteroDataset {
  std::string name;
  /// Node types in meta.json "ntypes" order (the order the file lists them), edge types in
  /// "etypes" order; edge counts per type.
  TypeMap types;
  /// Per edge type (index = EdgeType value): type-wise IDs of its src and dst node types.
  std::vector<Buffer<std::int64_t>> src, dst;
  /// Per node type, row-major [N_t, feat_dim[t]]; empty for featureless types.
  std::vector<Buffer<float>> feat;
  /// Per node type; 0 = featureless.
  std::vector<std::int64_t> feat_dim;
  /// The labelled node type; "" when the folder has no labels.
  std::string target_ntype;
  /// [N_target] class ids in [0, num_classes).
  Buffer<std::int64_t> label;
  std::int64_t num_classes = 0;
  /// [N_target] each; empty when absent.
  Buffer<bool> train_mask, val_mask, test_mask;
  /// meta.json as read (object keys sorted: use `types` for the declared order).
  nlohmann::json meta = nlohmann::json::object();

  /// types.node_type(target_ntype). Throws InvalidArgument when there is no target type.
  NodeType target() const {
    if (target_ntype.empty())
      throw InvalidArgument("dataset '" + name +
                            "': no target node type (no labels); expected a labelled dataset");
    return types.node_type(target_ntype);
  }
  /// Nodes over all types.
  std::int64_t num_nodes() const noexcept { return types.num_nodes(); }
  /// Edges over all types.
  std::int64_t num_edges() const noexcept { return types.num_edges(); }
};

namespace detail {

/// "src__etype__dst": the folder of a canonical edge type under edges/ and its key in
/// meta.json "num_edges".
inline std::string edge_folder_name(const CanonicalEdgeType& c) {
  return c.src_type + "__" + c.edge_type + "__" + c.dst_type;
}

/// Empty when `name` can be a folder name (non-empty, no '/', no NUL, not "." or ".."),
/// else why not.
inline std::string bad_type_name(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name == "." || name == "..") return "is \"" + std::string(name) + "\"";
  if (name.find('/') != std::string_view::npos) return "contains '/'";
  if (name.find('\0') != std::string_view::npos) return "contains a NUL byte";
  return {};
}

/// j as a non-negative int64, nullopt when it is anything else.
template <class J>
std::optional<std::int64_t> json_count(const J& j) {
  if (!j.is_number_integer()) return std::nullopt;
  if (j.is_number_unsigned()) {
    const auto u = j.template get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  const auto v = j.template get<std::int64_t>();
  if (v < 0) return std::nullopt;
  return v;
}

/// Parses meta.json keeping object key order. nlohmann keeps only one of two equal keys
/// silently, which would hide a node type declared twice, so duplicate keys are found
/// with a parser callback and rejected. Throws IoError (unreadable), FormatError naming
/// `path` (malformed, duplicate key).
inline nlohmann::ordered_json read_ordered_json_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path.string(), "cannot open for reading");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw IoError(path.string(), "cannot read");
  using J = nlohmann::ordered_json;
  struct Frame {
    std::string name;
    std::unordered_set<std::string> keys;
  };
  std::vector<Frame> stack;
  std::string last_key, duplicate;
  const J::parser_callback_t callback = [&](int, J::parse_event_t event, J& parsed) {
    switch (event) {
      case J::parse_event_t::object_start:
        stack.push_back({last_key, {}});
        break;
      case J::parse_event_t::object_end:
        if (!stack.empty()) stack.pop_back();
        break;
      case J::parse_event_t::key:
        last_key = parsed.template get<std::string>();
        if (!stack.empty() && !stack.back().keys.insert(last_key).second && duplicate.empty())
          duplicate = "key \"" + printable(last_key, 40) + "\" appears twice in " +
                      (stack.back().name.empty() ? std::string("the top-level object")
                                                 : "object \"" + stack.back().name + "\"");
        break;
      default:
        break;
    }
    return true;
  };
  J j;
  try {
    j = J::parse(text.str(), callback);
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(path.string(), std::string("malformed JSON: ") + e.what());
  }
  if (!duplicate.empty())
    throw FormatError(path.string(), duplicate + "; expected unique keys (a type declared twice?)");
  return j;
}

}  // namespace detail

/// True when dir/meta.json exists and is a JSON object with "ntypes" (the typed layout),
/// false otherwise (the homogeneous layout, or no readable meta.json: load_dataset then
/// reports what is wrong). Blocks on file I/O; never throws for a bad file.
inline bool is_hetero_dataset(const std::filesystem::path& dir) {
  std::error_code ec;
  const auto path = dir / "meta.json";
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  const auto j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("ntypes");
}

/// Loads and validates a typed dataset folder. meta.json must hold "ntypes" ({type:
/// count}) and "etypes" ([src, etype, dst] string triples); "num_edges", "feat_dims",
/// "featureless_ntypes", "target_ntype", "num_classes", "split" and "name" are optional
/// and cross-checked when present. Per edge type edges/<src>__<etype>__<dst>/src.npy and
/// dst.npy (integer, 1-D, equal length; widened to int64) are required; per node type
/// nodes/<t>/feat.npy (float [N_t, F]) is optional (a type without it is featureless);
/// nodes/<target>/label.npy (integer [N_target]) is required when target_ntype is set,
/// and its train/val/test_mask.npy (bool or 0/1 uint8) are optional. Arrays in the held
/// dtypes are mapped, not copied (DatasetLoadOptions). Blocks; thread-safe. Throws, each
/// naming the file and the type: IoError (missing folder, meta.json or required file),
/// FormatError (malformed meta.json or file, bad type declarations, labels outside the
/// target type), DTypeError, ShapeError (lengths disagree with each other or meta.json),
/// IdOutOfRange (edge endpoint outside its node type, label outside [0, num_classes)).
inline HeteroDataset load_hetero_dataset(const std::filesystem::path& dir,
                                         const DatasetLoadOptions& opts = {}) {
  namespace fs = std::filesystem;
  using OJ = nlohmann::ordered_json;
  std::error_code ec;
  const auto status = fs::status(dir, ec);
  if (!fs::exists(status)) throw IoError(dir.string(), "no such folder");
  if (!fs::is_directory(status)) throw IoError(dir.string(), "not a folder");
  const auto meta_file = dir / "meta.json";
  const std::string meta_path = meta_file.string();
  if (!fs::exists(meta_file, ec))
    throw IoError(meta_path,
                  "required file is missing; a typed dataset folder needs meta.json "
                  "with ntypes and etypes");
  const OJ meta = detail::read_ordered_json_file(meta_file);
  if (!meta.is_object())
    throw FormatError(
        meta_path, std::string("top level is a JSON ") + meta.type_name() + "; expected an object");
  const auto dump = [](const OJ& j) { return detail::printable(j.dump(), 60); };
  const auto bad_meta = [&](const std::string& what, const std::string& expected) {
    return FormatError(meta_path, what + "; expected " + expected);
  };
  const auto find_key = [&](const char* key, bool (OJ::*is_kind)() const noexcept,
                            const char* kind) -> const OJ* {
    const auto it = meta.find(key);
    if (it == meta.end()) return nullptr;
    if (!((*it).*is_kind)()) throw bad_meta(std::string(key) + " is " + dump(*it), kind);
    return &*it;
  };

  HeteroDataset d;
  d.meta = nlohmann::json(meta);
  if (const auto* name = find_key("name", &OJ::is_string, "a string"))
    d.name = name->get<std::string>();
  else {
    const auto normal = dir.lexically_normal();
    d.name = (normal.has_filename() ? normal : normal.parent_path()).filename().string();
  }

  // Node types, in the order the file lists them.
  const auto* ntypes = find_key("ntypes", &OJ::is_object, "an object {node type: count}");
  if (!ntypes) throw bad_meta("no \"ntypes\"", "an object {node type: count} (typed layout)");
  if (ntypes->empty()) throw bad_meta("ntypes is empty", "at least one node type");
  std::vector<std::string> node_names;
  std::vector<std::int64_t> node_counts;
  for (const auto& [t, count] : ntypes->items()) {
    if (const auto why = detail::bad_type_name(t); !why.empty())
      throw bad_meta("node type \"" + detail::printable(t, 40) + "\" in ntypes: name " + why,
                     "a name usable as a folder name");
    const auto n = detail::json_count(count);
    if (!n)
      throw bad_meta("node type '" + t + "': ntypes count is " + dump(count),
                     "a non-negative integer");
    node_names.push_back(t);
    node_counts.push_back(*n);
  }
  const auto node_index = [&](const std::string& t) -> std::optional<std::size_t> {
    const auto it = std::find(node_names.begin(), node_names.end(), t);
    if (it == node_names.end()) return std::nullopt;
    return static_cast<std::size_t>(it - node_names.begin());
  };
  std::string node_list;
  for (const auto& t : node_names) node_list += (node_list.empty() ? "" : ", ") + t;

  // Canonical edge types: unique triples (two relations may share a relation name).
  const auto* etypes = find_key("etypes", &OJ::is_array, "an array of [src, etype, dst]");
  if (!etypes) throw bad_meta("no \"etypes\"", "an array of [src, etype, dst] string triples");
  if (etypes->empty()) throw bad_meta("etypes is empty", "at least one edge type");
  std::vector<CanonicalEdgeType> edge_types;
  std::vector<std::string> folders;
  for (std::size_t i = 0; i < etypes->size(); ++i) {
    const auto& e = (*etypes)[i];
    const std::string where = "etypes[" + std::to_string(i) + "]";
    if (!e.is_array() || e.size() != 3 ||
        !std::all_of(e.begin(), e.end(), [](const OJ& s) { return s.is_string(); }))
      throw bad_meta(where + " is " + dump(e), "a [src, etype, dst] triple of strings");
    CanonicalEdgeType c{e[0].get<std::string>(), e[1].get<std::string>(), e[2].get<std::string>()};
    const std::string label = TypeMap::edge_type_label(c);
    if (const auto why = detail::bad_type_name(c.edge_type); !why.empty())
      throw bad_meta(where + " " + label + ": relation name " + why,
                     "a name usable in a folder name");
    for (const auto* end : {&c.src_type, &c.dst_type})
      if (!node_index(*end))
        throw bad_meta(
            where + " edge type " + label + ": node type '" + *end + "' is not in ntypes",
            "one of " + node_list);
    if (std::find(edge_types.begin(), edge_types.end(), c) != edge_types.end())
      throw bad_meta(where + " edge type " + label + " is declared twice",
                     "unique canonical [src, etype, dst] triples");
    auto folder = detail::edge_folder_name(c);
    if (std::find(folders.begin(), folders.end(), folder) != folders.end())
      throw bad_meta(where + " edge type " + label + " has the same folder name " + folder +
                         " as an earlier one",
                     "type names whose src__etype__dst folder names differ");
    edge_types.push_back(std::move(c));
    folders.push_back(std::move(folder));
  }

  // Optional per-type declarations, each key checked against the declared types.
  std::vector<std::optional<std::int64_t>> meta_edges(edge_types.size());
  if (const auto* ne = find_key("num_edges", &OJ::is_object, "an object {src__etype__dst: count}"))
    for (const auto& [k, v] : ne->items()) {
      const auto it = std::find(folders.begin(), folders.end(), k);
      if (it == folders.end())
        throw bad_meta("num_edges names \"" + detail::printable(k, 60) +
                           "\", not a declared "
                           "edge type",
                       "src__etype__dst of an etypes entry");
      const auto n = detail::json_count(v);
      if (!n) throw bad_meta("num_edges[\"" + k + "\"] is " + dump(v), "a non-negative integer");
      meta_edges[static_cast<std::size_t>(it - folders.begin())] = *n;
    }
  std::vector<std::optional<std::int64_t>> meta_feat_dims(node_names.size());
  if (const auto* fd = find_key("feat_dims", &OJ::is_object, "an object {node type: width}"))
    for (const auto& [k, v] : fd->items()) {
      const auto t = node_index(k);
      if (!t)
        throw bad_meta("feat_dims names node type \"" + detail::printable(k, 40) +
                           "\", which is not in ntypes",
                       "one of " + node_list);
      const auto n = detail::json_count(v);
      if (!n) throw bad_meta("feat_dims['" + k + "'] is " + dump(v), "a non-negative integer");
      meta_feat_dims[*t] = *n;
    }
  std::vector<bool> listed_featureless(node_names.size(), false);
  if (const auto* fl = find_key("featureless_ntypes", &OJ::is_array, "an array of node type names"))
    for (const auto& v : *fl) {
      const auto t = v.is_string() ? node_index(v.get<std::string>()) : std::nullopt;
      if (!t)
        throw bad_meta("featureless_ntypes holds " + dump(v) + ", which is not a node type",
                       "names from ntypes: " + node_list);
      listed_featureless[*t] = true;
    }
  if (const auto* tt = find_key("target_ntype", &OJ::is_string, "a node type name")) {
    d.target_ntype = tt->get<std::string>();
    if (!node_index(d.target_ntype))
      throw bad_meta("target_ntype '" + d.target_ntype + "' is not in ntypes",
                     "one of " + node_list);
  }
  const auto meta_classes = detail::meta_count(d.meta, "num_classes", meta_path);
  const NpyReadOptions read_options{.mmap = opts.mmap};
  const auto require_file = [&](const fs::path& p, const std::string& why) {
    if (!fs::is_regular_file(p, ec)) throw IoError(p.string(), "required file is missing; " + why);
  };

  // Edges, per type: checked against meta.json and the node counts of both endpoints.
  std::vector<std::int64_t> edge_counts;
  for (std::size_t e = 0; e < edge_types.size(); ++e) {
    const auto& c = edge_types[e];
    const std::string label = "edge type " + TypeMap::edge_type_label(c);
    const auto folder = dir / "edges" / folders[e];
    if (!fs::is_directory(folder, ec))
      throw IoError(folder.string(), "folder is missing; " + label +
                                         " is declared in meta.json etypes and needs it");
    require_file(folder / "src.npy", label + " needs it");
    require_file(folder / "dst.npy", label + " needs it");
    const auto src = read_npy(folder / "src.npy", read_options);
    const auto dst = read_npy(folder / "dst.npy", read_options);
    detail::require_rank(src, 1, ("1-D [num_edges] (" + label + ")").c_str());
    detail::require_rank(dst, 1, ("1-D [num_edges] (" + label + ")").c_str());
    const auto m = src.header.shape[0];
    if (dst.header.shape[0] != m)
      throw ShapeError(src.path, "length " + std::to_string(m) + " but " + dst.path +
                                     " has length " + std::to_string(dst.header.shape[0]) +
                                     "; expected equal lengths (" + label + ")");
    if (meta_edges[e] && *meta_edges[e] != m)
      throw ShapeError(meta_path, "num_edges[\"" + folders[e] + "\"] is " +
                                      std::to_string(*meta_edges[e]) + ", but " + src.path +
                                      " has " + std::to_string(m) + " entries; expected equal");
    d.src.push_back(src.to_int64());
    d.dst.push_back(dst.to_int64());
    const auto n_src = node_counts[*node_index(c.src_type)];
    const auto n_dst = node_counts[*node_index(c.dst_type)];
    detail::check_ids(src.path + " (" + label + ", ids of node type '" + c.src_type + "')",
                      d.src.back().span(), n_src, opts.num_threads);
    detail::check_ids(dst.path + " (" + label + ", ids of node type '" + c.dst_type + "')",
                      d.dst.back().span(), n_dst, opts.num_threads);
    edge_counts.push_back(m);
  }
  d.types = TypeMap(node_names, node_counts, edge_types, edge_counts);

  // Node features: a type without feat.npy is featureless; meta.json must agree.
  const std::string target = d.target_ntype;
  for (std::size_t t = 0; t < node_names.size(); ++t) {
    const std::string& nt = node_names[t];
    const auto folder = dir / "nodes" / nt;
    const auto feat_file = folder / "feat.npy";
    std::int64_t width = 0;
    if (fs::exists(feat_file, ec)) {
      if (listed_featureless[t])
        throw FormatError(feat_file.string(), "node type '" + nt +
                                                  "' is listed in meta.json featureless_ntypes; "
                                                  "expected no feat.npy for it");
      const auto feat = read_npy(feat_file, read_options);
      detail::require_rank(feat, 2, ("2-D [N, F] for node type '" + nt + "'").c_str());
      if (feat.header.shape[0] != node_counts[t])
        throw ShapeError(feat.path, std::to_string(feat.header.shape[0]) +
                                        " rows, but meta.json ntypes gives node type '" + nt +
                                        "' " + std::to_string(node_counts[t]) +
                                        " nodes; expected equal");
      width = feat.header.shape[1];
      if (meta_feat_dims[t] && *meta_feat_dims[t] != width)
        throw ShapeError(meta_path, "feat_dims['" + nt + "'] is " +
                                        std::to_string(*meta_feat_dims[t]) + ", but " + feat.path +
                                        " has " + std::to_string(width) +
                                        " columns; expected equal");
      d.feat.push_back(feat.to_float32());
    } else {
      if (meta_feat_dims[t] && *meta_feat_dims[t] > 0)
        throw IoError(feat_file.string(),
                      "required file is missing; meta.json feat_dims gives node type '" + nt +
                          "' " + std::to_string(*meta_feat_dims[t]) +
                          " columns (a featureless type is omitted from feat_dims)");
      d.feat.emplace_back();
    }
    d.feat_dim.push_back(width);
    if (nt == target) continue;
    // Labels anywhere but the target type would be silently ignored: refuse them.
    for (const char* f : {"label.npy", "train_mask.npy", "val_mask.npy", "test_mask.npy"})
      if (fs::exists(folder / f, ec))
        throw FormatError((folder / f).string(),
                          "labels or split of node type '" + nt + "', but meta.json " +
                              (target.empty() ? std::string("has no target_ntype")
                                              : "target_ntype is '" + target + "'") +
                              "; expected them only under the target type");
  }

  // Labels and split of the target type.
  if (target.empty()) {
    if (meta_classes) d.num_classes = *meta_classes;
    return d;
  }
  const auto n_target = node_counts[*node_index(target)];
  const auto tfolder = dir / "nodes" / target;
  const auto check_length = [&](const NpyArray& a) {
    detail::require_rank(a, 1, ("1-D [N] for target node type '" + target + "'").c_str());
    if (a.header.shape[0] != n_target)
      throw ShapeError(a.path, std::to_string(a.header.shape[0]) +
                                   " entries, but meta.json ntypes gives target node type '" +
                                   target + "' " + std::to_string(n_target) +
                                   " nodes; expected equal");
  };
  require_file(tfolder / "label.npy", "meta.json names '" + target + "' as target_ntype");
  const auto label = read_npy(tfolder / "label.npy", read_options);
  check_length(label);
  d.label = label.to_int64();
  if (meta_classes) {
    d.num_classes = *meta_classes;
  } else {
    const auto r = detail::id_scan(d.label.span(), opts.num_threads);
    d.num_classes = d.label.empty() ? 0 : std::max<std::int64_t>(r.max + 1, 0);
  }
  detail::check_ids(label.path + " (labels of node type '" + target + "')", d.label.span(),
                    d.num_classes, opts.num_threads);

  Buffer<bool>* mask_fields[3] = {&d.train_mask, &d.val_mask, &d.test_mask};
  static constexpr const char* split_keys[3] = {"train", "val", "test"};
  const auto split = d.meta.find("split");
  for (int m = 0; m < 3; ++m) {
    const auto file = tfolder / (std::string(split_keys[m]) + "_mask.npy");
    if (!fs::exists(file, ec)) continue;
    const auto mask = read_npy(file, read_options);
    check_length(mask);
    *mask_fields[m] = mask.to_bool();
    if (split == d.meta.end() || !split->is_object()) continue;
    const auto declared = detail::meta_count(*split, split_keys[m], meta_path);
    const auto set = Dataset::count(*mask_fields[m]);
    if (declared && *declared != set)
      throw ShapeError(meta_path, std::string("split.") + split_keys[m] + " is " +
                                      std::to_string(*declared) + ", but " + mask.path + " has " +
                                      std::to_string(set) + " nodes set; expected equal");
  }
  return d;
}

/// Writes `d` as a typed dataset folder that load_hetero_dataset reads back equal:
/// edges/<src>__<etype>__<dst>/{src,dst}.npy (int64), nodes/<t>/feat.npy (float32) for
/// types with features, nodes/<target>/label.npy and the masks that are non-empty, and
/// meta.json last: the structural keys (name, ntypes in type order, etypes, num_edges,
/// target_ntype, num_classes, feat_dims, featureless_ntypes, split, files with dtype and
/// shape) first, then d.meta's other keys. Removes stale optional files of declared types.
/// Each file is replaced atomically. Throws ShapeError, IdOutOfRange or InvalidArgument
/// when `d` is inconsistent (before writing anything), IoError when a write fails.
inline void write_hetero_dataset(const HeteroDataset& d, const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  using OJ = nlohmann::ordered_json;
  const std::string subject = "dataset '" + d.name + "'";
  const auto& types = d.types;
  const auto num_nt = static_cast<std::size_t>(types.num_node_types());
  const auto num_et = static_cast<std::size_t>(types.num_edge_types());
  const auto& node_names = types.node_type_names();
  const auto require_size = [&](std::size_t size, std::int64_t expected, const std::string& what) {
    if (static_cast<std::int64_t>(size) != expected)
      throw ShapeError(subject, what + " has " + std::to_string(size) + " entries; expected " +
                                    std::to_string(expected));
  };
  for (const auto& t : node_names)
    if (const auto why = detail::bad_type_name(t); !why.empty())
      throw InvalidArgument(subject + ": node type name \"" + t + "\" " + why +
                            "; expected a name usable as a folder name");
  require_size(d.src.size(), static_cast<std::int64_t>(num_et), "src (one per edge type)");
  require_size(d.dst.size(), static_cast<std::int64_t>(num_et), "dst (one per edge type)");
  std::vector<std::string> folders;
  for (std::size_t e = 0; e < num_et; ++e) {
    const auto& c = types.edge_types()[e];
    const auto et = EdgeType(static_cast<std::int32_t>(e));
    const std::string label = "edge type " + TypeMap::edge_type_label(c);
    if (const auto why = detail::bad_type_name(c.edge_type); !why.empty())
      throw InvalidArgument(subject + ": " + label + ": relation name " + why +
                            "; expected a name usable in a folder name");
    folders.push_back(detail::edge_folder_name(c));
    if (std::find(folders.begin(), folders.end() - 1, folders.back()) != folders.end() - 1)
      throw InvalidArgument(subject + ": " + label + ": folder name " + folders.back() +
                            " is taken by an earlier edge type; expected distinct folders");
    require_size(d.src[e].size(), types.num_edges(et), label + " src (its edge count)");
    require_size(d.dst[e].size(), types.num_edges(et), label + " dst (its edge count)");
    detail::check_ids(subject + " " + label + " src", d.src[e].span(),
                      types.num_nodes(types.node_type(c.src_type)), 0);
    detail::check_ids(subject + " " + label + " dst", d.dst[e].span(),
                      types.num_nodes(types.node_type(c.dst_type)), 0);
  }
  const auto width = [&](std::size_t t) { return t < d.feat_dim.size() ? d.feat_dim[t] : 0; };
  for (std::size_t t = 0; t < num_nt; ++t) {
    const auto n = types.num_nodes(NodeType(static_cast<std::int32_t>(t)));
    const auto f = width(t);
    const std::size_t have = t < d.feat.size() ? d.feat[t].size() : 0;
    std::int64_t cells = 0;
    if (f < 0 || __builtin_mul_overflow(n, f, &cells))
      throw ShapeError(subject, "node type '" + node_names[t] + "': feat_dim " + std::to_string(f) +
                                    "; expected >= 0 and N * F in range");
    require_size(have, cells, "node type '" + node_names[t] + "' feat (N * feat_dim)");
  }
  std::int64_t n_target = 0;
  if (d.target_ntype.empty()) {
    if (!d.label.empty() || !d.train_mask.empty() || !d.val_mask.empty() || !d.test_mask.empty())
      throw InvalidArgument(subject +
                            ": labels or masks without a target_ntype; expected a "
                            "target node type");
  } else {
    n_target = types.num_nodes(d.target());
    require_size(d.label.size(), n_target, "label (target type '" + d.target_ntype + "')");
    if (d.num_classes < 0) throw ShapeError(subject, "num_classes is negative; expected >= 0");
    detail::check_ids(subject + " label", d.label.span(), d.num_classes, 0);
    for (const auto* m : {&d.train_mask, &d.val_mask, &d.test_mask})
      if (!m->empty()) require_size(m->size(), n_target, "a mask (target type)");
  }

  std::error_code ec;
  const auto make_dir = [&](const fs::path& p) {
    fs::create_directories(p, ec);
    if (ec) throw IoError(p.string(), "cannot create folder: " + ec.message());
  };
  const auto drop = [&](const fs::path& p) {
    fs::remove(p, ec);
    if (ec) throw IoError(p.string(), "cannot remove stale file: " + ec.message());
  };
  make_dir(dir);
  OJ files = OJ::object();
  const auto record = [&](const std::string& rel, DType dtype, std::vector<std::int64_t> shape) {
    files[rel] = {{"dtype", dtype_name(dtype)}, {"shape", shape}};
  };

  OJ ntypes = OJ::object(), etypes = OJ::array(), num_edges = OJ::object(),
     feat_dims = OJ::object(), featureless = OJ::array();
  for (std::size_t e = 0; e < num_et; ++e) {
    const auto& c = types.edge_types()[e];
    const auto m = static_cast<std::int64_t>(d.src[e].size());
    const auto folder = dir / "edges" / folders[e];
    make_dir(folder);
    write_npy(folder / "src.npy", d.src[e].span());
    write_npy(folder / "dst.npy", d.dst[e].span());
    record("edges/" + folders[e] + "/src.npy", DType::int64, {m});
    record("edges/" + folders[e] + "/dst.npy", DType::int64, {m});
    etypes.push_back({c.src_type, c.edge_type, c.dst_type});
    num_edges[folders[e]] = m;
  }
  static constexpr const char* split_keys[3] = {"train", "val", "test"};
  const Buffer<bool>* masks[3] = {&d.train_mask, &d.val_mask, &d.test_mask};
  OJ split = OJ::object();
  for (std::size_t t = 0; t < num_nt; ++t) {
    const auto& nt = node_names[t];
    const auto n = types.num_nodes(NodeType(static_cast<std::int32_t>(t)));
    const auto folder = dir / "nodes" / nt;
    ntypes[nt] = n;
    const bool is_target = nt == d.target_ntype;
    if (width(t) > 0) {
      make_dir(folder);
      write_npy(folder / "feat.npy", d.feat[t].span(), {n, width(t)});
      record("nodes/" + nt + "/feat.npy", DType::float32, {n, width(t)});
      feat_dims[nt] = width(t);
    } else {
      drop(folder / "feat.npy");
      featureless.push_back(nt);
    }
    if (!is_target) {
      drop(folder / "label.npy");
      for (const char* k : split_keys) drop(folder / (std::string(k) + "_mask.npy"));
      continue;
    }
    make_dir(folder);
    write_npy(folder / "label.npy", d.label.span());
    record("nodes/" + nt + "/label.npy", DType::int64, {n});
    for (int m = 0; m < 3; ++m) {
      const std::string file = std::string(split_keys[m]) + "_mask.npy";
      if (masks[m]->empty()) {
        drop(folder / file);
        continue;
      }
      write_npy(folder / file, masks[m]->span());
      record("nodes/" + nt + "/" + file, DType::bool_, {n});
      split[split_keys[m]] = Dataset::count(*masks[m]);
    }
  }

  OJ meta = OJ::object();
  meta["name"] = d.name;
  meta["ntypes"] = ntypes;
  meta["etypes"] = etypes;
  meta["num_edges"] = num_edges;
  if (!d.target_ntype.empty()) meta["target_ntype"] = d.target_ntype;
  meta["num_classes"] = d.num_classes;
  meta["feat_dims"] = feat_dims;
  meta["featureless_ntypes"] = featureless;
  if (!split.empty()) meta["split"] = split;
  if (d.meta.is_object())
    for (const auto& [k, v] : d.meta.items())
      if (!meta.contains(k) && k != "files" && k != "split" && k != "target_ntype") meta[k] = OJ(v);
  meta["files"] = files;
  const std::string text = meta.dump(2) + "\n";
  write_file_durably(dir / "meta.json", {std::as_bytes(std::span(text))});
}

}  // namespace distgraph
