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

namespace detail {

// The stages below are load_hetero_dataset's, in its order: meta.json and the type
// declarations first (nothing else can be checked without them), then each edge type's
// arrays, each node type's features, and last the target type's labels and split.

/// meta.json of a typed folder, in file order, and the checks every declaration shares:
/// a lookup checks the kind of its value, and every complaint names meta.json.
class TypedMeta {
 public:
  using Json = nlohmann::ordered_json;

  TypedMeta(Json json, std::string path) : json_(std::move(json)), path_(std::move(path)) {}
  const Json& json() const noexcept { return json_; }
  const std::string& path() const noexcept { return path_; }
  /// A value as it appears in messages, cut short.
  static std::string dump(const Json& j) { return printable(j.dump(), 60); }
  /// The FormatError for `what` is wrong in meta.json; `expected` says what would do.
  FormatError bad(const std::string& what, const std::string& expected) const {
    return FormatError(path_, what + "; expected " + expected);
  }
  /// json()[key], nullptr when absent. Throws FormatError unless its kind is `is_kind`.
  const Json* find(const char* key, bool (Json::*is_kind)() const noexcept,
                   const char* kind) const {
    const auto it = json_.find(key);
    if (it == json_.end()) return nullptr;
    if (!((*it).*is_kind)()) throw bad(std::string(key) + " is " + dump(*it), kind);
    return &*it;
  }

 private:
  Json json_;
  std::string path_;
};

/// Stage 1: meta.json, which a typed folder cannot do without (it declares the types).
inline TypedMeta read_typed_meta(const std::filesystem::path& dir) {
  std::error_code ec;
  const auto file = dir / "meta.json";
  if (!std::filesystem::exists(file, ec))
    throw IoError(file.string(),
                  "required file is missing; a typed dataset folder needs meta.json "
                  "with ntypes and etypes");
  TypedMeta meta(read_ordered_json_file(file), file.string());
  require_json_object(meta.json(), meta.path());
  return meta;
}

/// The dataset's name: meta.json "name", else the folder's.
inline std::string typed_dataset_name(const TypedMeta& meta, const std::filesystem::path& dir) {
  using J = TypedMeta::Json;
  if (const auto* name = meta.find("name", &J::is_string, "a string"))
    return name->get<std::string>();
  return dataset_folder_name(dir);
}

/// Node types in the order meta.json lists them, with their counts.
struct NodeTypeList {
  std::vector<std::string> names;
  std::vector<std::int64_t> counts;
  /// "a, b, c", for messages that list the choices.
  std::string list;

  std::optional<std::size_t> index(const std::string& t) const {
    const auto it = std::find(names.begin(), names.end(), t);
    if (it == names.end()) return std::nullopt;
    return static_cast<std::size_t>(it - names.begin());
  }
};

/// Stage 2: "ntypes", each name usable as a folder name and each count a count.
inline NodeTypeList read_node_types(const TypedMeta& meta) {
  using J = TypedMeta::Json;
  const auto* ntypes = meta.find("ntypes", &J::is_object, "an object {node type: count}");
  if (!ntypes) throw meta.bad("no \"ntypes\"", "an object {node type: count} (typed layout)");
  if (ntypes->empty()) throw meta.bad("ntypes is empty", "at least one node type");
  NodeTypeList nodes;
  for (const auto& [t, count] : ntypes->items()) {
    if (const auto why = bad_type_name(t); !why.empty())
      throw meta.bad("node type \"" + printable(t, 40) + "\" in ntypes: name " + why,
                     "a name usable as a folder name");
    const auto n = json_count(count);
    if (!n)
      throw meta.bad("node type '" + t + "': ntypes count is " + TypedMeta::dump(count),
                     "a non-negative integer");
    nodes.names.push_back(t);
    nodes.counts.push_back(*n);
  }
  for (const auto& t : nodes.names) nodes.list += (nodes.list.empty() ? "" : ", ") + t;
  return nodes;
}

/// Canonical edge types in "etypes" order and the folder of each under edges/.
struct EdgeTypeList {
  std::vector<CanonicalEdgeType> types;
  std::vector<std::string> folders;
};

/// Stage 3: "etypes", unique triples between declared node types (two relations may
/// share a relation name), whose folder names differ.
inline EdgeTypeList read_edge_types(const TypedMeta& meta, const NodeTypeList& nodes) {
  using J = TypedMeta::Json;
  const auto* etypes = meta.find("etypes", &J::is_array, "an array of [src, etype, dst]");
  if (!etypes) throw meta.bad("no \"etypes\"", "an array of [src, etype, dst] string triples");
  if (etypes->empty()) throw meta.bad("etypes is empty", "at least one edge type");
  EdgeTypeList edges;
  for (std::size_t i = 0; i < etypes->size(); ++i) {
    const auto& e = (*etypes)[i];
    const std::string where = "etypes[" + std::to_string(i) + "]";
    if (!e.is_array() || e.size() != 3 ||
        !std::all_of(e.begin(), e.end(), [](const J& s) { return s.is_string(); }))
      throw meta.bad(where + " is " + TypedMeta::dump(e), "a [src, etype, dst] triple of strings");
    CanonicalEdgeType c{e[0].get<std::string>(), e[1].get<std::string>(), e[2].get<std::string>()};
    const std::string label = TypeMap::edge_type_label(c);
    if (const auto why = bad_type_name(c.edge_type); !why.empty())
      throw meta.bad(where + " " + label + ": relation name " + why,
                     "a name usable in a folder name");
    for (const auto* end : {&c.src_type, &c.dst_type})
      if (!nodes.index(*end))
        throw meta.bad(
            where + " edge type " + label + ": node type '" + *end + "' is not in ntypes",
            "one of " + nodes.list);
    if (std::find(edges.types.begin(), edges.types.end(), c) != edges.types.end())
      throw meta.bad(where + " edge type " + label + " is declared twice",
                     "unique canonical [src, etype, dst] triples");
    auto folder = edge_folder_name(c);
    if (std::find(edges.folders.begin(), edges.folders.end(), folder) != edges.folders.end())
      throw meta.bad(where + " edge type " + label + " has the same folder name " + folder +
                         " as an earlier one",
                     "type names whose src__etype__dst folder names differ");
    edges.types.push_back(std::move(c));
    edges.folders.push_back(std::move(folder));
  }
  return edges;
}

/// The optional per-type declarations of meta.json, indexed like the declared types.
struct TypeDeclarations {
  std::vector<std::optional<std::int64_t>> num_edges, feat_dims;
  std::vector<bool> featureless;
  std::string target_ntype;
  std::optional<std::int64_t> num_classes;
};

/// Stage 4: "num_edges", "feat_dims", "featureless_ntypes", "target_ntype" and
/// "num_classes", each key checked against the declared types before any array is read.
inline TypeDeclarations read_type_declarations(const TypedMeta& meta, const NodeTypeList& nodes,
                                               const EdgeTypeList& edges) {
  using J = TypedMeta::Json;
  TypeDeclarations decl;
  decl.num_edges.resize(edges.types.size());
  if (const auto* ne = meta.find("num_edges", &J::is_object, "an object {src__etype__dst: count}"))
    for (const auto& [k, v] : ne->items()) {
      const auto it = std::find(edges.folders.begin(), edges.folders.end(), k);
      if (it == edges.folders.end())
        throw meta.bad("num_edges names \"" + printable(k, 60) +
                           "\", not a declared "
                           "edge type",
                       "src__etype__dst of an etypes entry");
      const auto n = json_count(v);
      if (!n)
        throw meta.bad("num_edges[\"" + k + "\"] is " + TypedMeta::dump(v),
                       "a non-negative integer");
      decl.num_edges[static_cast<std::size_t>(it - edges.folders.begin())] = *n;
    }
  decl.feat_dims.resize(nodes.names.size());
  if (const auto* fd = meta.find("feat_dims", &J::is_object, "an object {node type: width}"))
    for (const auto& [k, v] : fd->items()) {
      const auto t = nodes.index(k);
      if (!t)
        throw meta.bad(
            "feat_dims names node type \"" + printable(k, 40) + "\", which is not in ntypes",
            "one of " + nodes.list);
      const auto n = json_count(v);
      if (!n)
        throw meta.bad("feat_dims['" + k + "'] is " + TypedMeta::dump(v), "a non-negative integer");
      decl.feat_dims[*t] = *n;
    }
  decl.featureless.assign(nodes.names.size(), false);
  if (const auto* fl = meta.find("featureless_ntypes", &J::is_array, "an array of node type names"))
    for (const auto& v : *fl) {
      const auto t = v.is_string() ? nodes.index(v.get<std::string>()) : std::nullopt;
      if (!t)
        throw meta.bad(
            "featureless_ntypes holds " + TypedMeta::dump(v) + ", which is not a node type",
            "names from ntypes: " + nodes.list);
      decl.featureless[*t] = true;
    }
  if (const auto* tt = meta.find("target_ntype", &J::is_string, "a node type name")) {
    decl.target_ntype = tt->get<std::string>();
    if (!nodes.index(decl.target_ntype))
      throw meta.bad("target_ntype '" + decl.target_ntype + "' is not in ntypes",
                     "one of " + nodes.list);
  }
  decl.num_classes = meta_count(meta.json(), "num_classes", meta.path());
  return decl;
}

/// Throws IoError naming `p` unless it is a file; `why` says who needs it.
inline void require_file(const std::filesystem::path& p, const std::string& why) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(p, ec))
    throw IoError(p.string(), "required file is missing; " + why);
}

/// One edge type's arrays, widened to int64.
struct TypedEdgeArrays {
  Buffer<std::int64_t> src, dst;
};

/// Stage 5, per edge type: its folder's src.npy and dst.npy, of equal length, agreeing
/// with meta.json, each id inside its endpoint's node type.
inline TypedEdgeArrays read_edge_type(const std::filesystem::path& dir, const TypedMeta& meta,
                                      const NodeTypeList& nodes, const CanonicalEdgeType& c,
                                      const std::string& folder_name,
                                      std::optional<std::int64_t> declared_count,
                                      const NpyReadOptions& read_options, unsigned num_threads) {
  const std::string label = "edge type " + TypeMap::edge_type_label(c);
  const auto folder = dir / "edges" / folder_name;
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec))
    throw IoError(folder.string(),
                  "folder is missing; " + label + " is declared in meta.json etypes and needs it");
  require_file(folder / "src.npy", label + " needs it");
  require_file(folder / "dst.npy", label + " needs it");
  const auto src = read_npy(folder / "src.npy", read_options);
  const auto dst = read_npy(folder / "dst.npy", read_options);
  require_rank(src, 1, ("1-D [num_edges] (" + label + ")").c_str());
  require_rank(dst, 1, ("1-D [num_edges] (" + label + ")").c_str());
  const auto m = src.header.shape[0];
  if (dst.header.shape[0] != m)
    throw ShapeError(src.path, "length " + std::to_string(m) + " but " + dst.path + " has length " +
                                   std::to_string(dst.header.shape[0]) +
                                   "; expected equal lengths (" + label + ")");
  if (declared_count && *declared_count != m)
    throw ShapeError(meta.path(), "num_edges[\"" + folder_name + "\"] is " +
                                      std::to_string(*declared_count) + ", but " + src.path +
                                      " has " + std::to_string(m) + " entries; expected equal");
  TypedEdgeArrays out{src.to_int64(), dst.to_int64()};
  check_ids(src.path + " (" + label + ", ids of node type '" + c.src_type + "')", out.src.span(),
            nodes.counts[*nodes.index(c.src_type)], num_threads);
  check_ids(dst.path + " (" + label + ", ids of node type '" + c.dst_type + "')", out.dst.span(),
            nodes.counts[*nodes.index(c.dst_type)], num_threads);
  return out;
}

/// Stage 6, per node type: feat.npy when the type has features (a type without it is
/// featureless, and meta.json must agree); its row count is the declared node count.
/// Returns the features and their width (0 and empty when featureless).
inline std::pair<Buffer<float>, std::int64_t> read_node_features(
    const std::filesystem::path& dir, const TypedMeta& meta, const NodeTypeList& nodes,
    const TypeDeclarations& decl, std::size_t t, const NpyReadOptions& read_options) {
  const std::string& nt = nodes.names[t];
  const auto feat_file = dir / "nodes" / nt / "feat.npy";
  const auto& declared = decl.feat_dims[t];
  std::error_code ec;
  if (!std::filesystem::exists(feat_file, ec)) {
    if (declared && *declared > 0)
      throw IoError(feat_file.string(),
                    "required file is missing; meta.json feat_dims gives node type '" + nt + "' " +
                        std::to_string(*declared) +
                        " columns (a featureless type is omitted from feat_dims)");
    return {Buffer<float>(), 0};
  }
  if (decl.featureless[t])
    throw FormatError(feat_file.string(), "node type '" + nt +
                                              "' is listed in meta.json featureless_ntypes; "
                                              "expected no feat.npy for it");
  const auto feat = read_npy(feat_file, read_options);
  require_rank(feat, 2, ("2-D [N, F] for node type '" + nt + "'").c_str());
  if (feat.header.shape[0] != nodes.counts[t])
    throw ShapeError(feat.path, std::to_string(feat.header.shape[0]) +
                                    " rows, but meta.json ntypes gives node type '" + nt + "' " +
                                    std::to_string(nodes.counts[t]) + " nodes; expected equal");
  const auto width = feat.header.shape[1];
  if (declared && *declared != width)
    throw ShapeError(meta.path(), "feat_dims['" + nt + "'] is " + std::to_string(*declared) +
                                      ", but " + feat.path + " has " + std::to_string(width) +
                                      " columns; expected equal");
  return {feat.to_float32(), width};
}

/// Stage 6, per node type but the target: no labels or split files, which would
/// otherwise be silently ignored.
inline void refuse_stray_labels(const std::filesystem::path& dir, const std::string& nt,
                                const std::string& target) {
  const auto folder = dir / "nodes" / nt;
  std::error_code ec;
  for (const char* f : {"label.npy", "train_mask.npy", "val_mask.npy", "test_mask.npy"})
    if (std::filesystem::exists(folder / f, ec))
      throw FormatError((folder / f).string(),
                        "labels or split of node type '" + nt + "', but meta.json " +
                            (target.empty() ? std::string("has no target_ntype")
                                            : "target_ntype is '" + target + "'") +
                            "; expected them only under the target type");
}

/// Stage 7: the target type's label.npy (required) and masks (optional), each 1-D with
/// one entry per node of the type; labels and masks are checked as load_dataset does.
inline void read_target_labels(const std::filesystem::path& dir, const TypedMeta& meta,
                               const NodeTypeList& nodes, const TypeDeclarations& decl,
                               const NpyReadOptions& read_options, unsigned num_threads,
                               HeteroDataset& d) {
  const std::string& target = decl.target_ntype;
  const auto n_target = nodes.counts[*nodes.index(target)];
  const auto folder = dir / "nodes" / target;
  const auto check_length = [&](const NpyArray& a) {
    require_rank(a, 1, ("1-D [N] for target node type '" + target + "'").c_str());
    if (a.header.shape[0] != n_target)
      throw ShapeError(a.path, std::to_string(a.header.shape[0]) +
                                   " entries, but meta.json ntypes gives target node type '" +
                                   target + "' " + std::to_string(n_target) +
                                   " nodes; expected equal");
  };
  require_file(folder / "label.npy", "meta.json names '" + target + "' as target_ntype");
  const auto label = read_npy(folder / "label.npy", read_options);
  check_length(label);
  auto labels = read_labels(label, decl.num_classes,
                            label.path + " (labels of node type '" + target + "')", num_threads);
  d.label = std::move(labels.label);
  d.num_classes = labels.num_classes;
  Buffer<bool>* mask_fields[3] = {&d.train_mask, &d.val_mask, &d.test_mask};
  std::error_code ec;
  for (int m = 0; m < 3; ++m) {
    const auto file = folder / mask_files[m];
    if (!std::filesystem::exists(file, ec)) continue;
    const auto mask = read_npy(file, read_options);
    check_length(mask);
    *mask_fields[m] = read_split_mask(mask, m, d.meta, meta.path(), mask.path);
  }
}

}  // namespace detail

/// Input edges [begin, end) of `d`'s homogeneous view into `src` / `dst` (end - begin
/// each): edge type r's i-th edge is edge `d.types.edge_range(r).begin + i`, and node type
/// t's node i is node `d.types.node_range(t).begin + i` (DGL's `to_homogeneous`).
inline void homogeneous_edges(const HeteroDataset& d, std::int64_t begin, std::int64_t end,
                              std::int64_t* src, std::int64_t* dst) {
  const TypeMap& types = d.types;
  for (std::int32_t r = 0; r < types.num_edge_types(); ++r) {
    const IdRange er = types.edge_range(EdgeType(r));
    const std::int64_t from = std::max(begin, er.begin), to = std::min(end, er.end);
    const auto& c = types.edge_type(EdgeType(r));
    const std::int64_t so = types.node_range(types.node_type(c.src_type)).begin;
    const std::int64_t dof = types.node_range(types.node_type(c.dst_type)).begin;
    const auto& s = d.src[static_cast<std::size_t>(r)];
    const auto& t = d.dst[static_cast<std::size_t>(r)];
    for (std::int64_t i = from; i < to; ++i) {
      src[i - begin] = s[static_cast<std::size_t>(i - er.begin)] + so;
      dst[i - begin] = t[static_cast<std::size_t>(i - er.begin)] + dof;
    }
  }
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
  detail::require_dataset_folder(dir);
  const auto meta = detail::read_typed_meta(dir);
  HeteroDataset d;
  d.meta = nlohmann::json(meta.json());
  d.name = detail::typed_dataset_name(meta, dir);
  const auto nodes = detail::read_node_types(meta);
  const auto edges = detail::read_edge_types(meta, nodes);
  const auto decl = detail::read_type_declarations(meta, nodes, edges);
  d.target_ntype = decl.target_ntype;

  const NpyReadOptions read_options{.mmap = opts.mmap};
  std::vector<std::int64_t> edge_counts;
  for (std::size_t e = 0; e < edges.types.size(); ++e) {
    auto arrays = detail::read_edge_type(dir, meta, nodes, edges.types[e], edges.folders[e],
                                         decl.num_edges[e], read_options, opts.num_threads);
    edge_counts.push_back(static_cast<std::int64_t>(arrays.src.size()));
    d.src.push_back(std::move(arrays.src));
    d.dst.push_back(std::move(arrays.dst));
  }
  d.types = TypeMap(nodes.names, nodes.counts, edges.types, edge_counts);

  for (std::size_t t = 0; t < nodes.names.size(); ++t) {
    auto [feat, width] = detail::read_node_features(dir, meta, nodes, decl, t, read_options);
    d.feat.push_back(std::move(feat));
    d.feat_dim.push_back(width);
    if (nodes.names[t] != d.target_ntype)
      detail::refuse_stray_labels(dir, nodes.names[t], d.target_ntype);
  }

  if (d.target_ntype.empty()) {
    if (decl.num_classes) d.num_classes = *decl.num_classes;
    return d;
  }
  detail::read_target_labels(dir, meta, nodes, decl, read_options, opts.num_threads, d);
  return d;
}

namespace detail {

// The stages below are write_hetero_dataset's, in its order: every check before any
// file is written (so a refused dataset leaves the folder as it was), then the edge
// files, the node files, and meta.json last (a reader finds it only once the arrays are
// in place).

/// The declared width of node type t's features; 0 (featureless) past feat_dim's end.
inline std::int64_t feat_width(const HeteroDataset& d, std::size_t t) {
  return t < d.feat_dim.size() ? d.feat_dim[t] : 0;
}

/// Check stage: every type name can be a folder name, every edge type has its own
/// folder and arrays of its edge count with ids inside its endpoint types. Returns the
/// edge types' folder names.
inline std::vector<std::string> check_typed_edges(const HeteroDataset& d,
                                                  const std::string& subject) {
  const auto& types = d.types;
  const auto num_et = static_cast<std::size_t>(types.num_edge_types());
  for (const auto& t : types.node_type_names())
    if (const auto why = bad_type_name(t); !why.empty())
      throw InvalidArgument(subject + ": node type name \"" + t + "\" " + why +
                            "; expected a name usable as a folder name");
  require_entries(subject, d.src.size(), static_cast<std::int64_t>(num_et),
                  "src (one per edge type)");
  require_entries(subject, d.dst.size(), static_cast<std::int64_t>(num_et),
                  "dst (one per edge type)");
  std::vector<std::string> folders;
  for (std::size_t e = 0; e < num_et; ++e) {
    const auto& c = types.edge_types()[e];
    const auto et = EdgeType(static_cast<std::int32_t>(e));
    const std::string label = "edge type " + TypeMap::edge_type_label(c);
    if (const auto why = bad_type_name(c.edge_type); !why.empty())
      throw InvalidArgument(subject + ": " + label + ": relation name " + why +
                            "; expected a name usable in a folder name");
    folders.push_back(edge_folder_name(c));
    if (std::find(folders.begin(), folders.end() - 1, folders.back()) != folders.end() - 1)
      throw InvalidArgument(subject + ": " + label + ": folder name " + folders.back() +
                            " is taken by an earlier edge type; expected distinct folders");
    require_entries(subject, d.src[e].size(), types.num_edges(et), label + " src (its edge count)");
    require_entries(subject, d.dst[e].size(), types.num_edges(et), label + " dst (its edge count)");
    check_ids(subject + " " + label + " src", d.src[e].span(),
              types.num_nodes(types.node_type(c.src_type)), 0);
    check_ids(subject + " " + label + " dst", d.dst[e].span(),
              types.num_nodes(types.node_type(c.dst_type)), 0);
  }
  return folders;
}

/// Check stage: each node type's features hold N * width values, and labels and masks
/// belong to a target type and hold one entry per node of it.
inline void check_typed_nodes(const HeteroDataset& d, const std::string& subject) {
  const auto& types = d.types;
  const auto& node_names = types.node_type_names();
  for (std::size_t t = 0; t < node_names.size(); ++t) {
    const auto n = types.num_nodes(NodeType(static_cast<std::int32_t>(t)));
    const auto f = feat_width(d, t);
    const std::size_t have = t < d.feat.size() ? d.feat[t].size() : 0;
    std::int64_t cells = 0;
    if (f < 0 || __builtin_mul_overflow(n, f, &cells))
      throw ShapeError(subject, "node type '" + node_names[t] + "': feat_dim " + std::to_string(f) +
                                    "; expected >= 0 and N * F in range");
    require_entries(subject, have, cells, "node type '" + node_names[t] + "' feat (N * feat_dim)");
  }
  if (d.target_ntype.empty()) {
    if (!d.label.empty() || !d.train_mask.empty() || !d.val_mask.empty() || !d.test_mask.empty())
      throw InvalidArgument(subject +
                            ": labels or masks without a target_ntype; expected a "
                            "target node type");
    return;
  }
  const auto n_target = types.num_nodes(d.target());
  require_entries(subject, d.label.size(), n_target,
                  "label (target type '" + d.target_ntype + "')");
  if (d.num_classes < 0) throw ShapeError(subject, "num_classes is negative; expected >= 0");
  check_ids(subject + " label", d.label.span(), d.num_classes, 0);
  for (const auto* m : {&d.train_mask, &d.val_mask, &d.test_mask})
    if (!m->empty()) require_entries(subject, m->size(), n_target, "a mask (target type)");
}

/// meta.json "files": each written file's dtype and shape, by its path in the folder.
inline void record_file(nlohmann::ordered_json& files, const std::string& rel, DType dtype,
                        std::vector<std::int64_t> shape) {
  files[rel] = {{"dtype", dtype_name(dtype)}, {"shape", shape}};
}

/// Write stage: each edge type's src.npy and dst.npy under its folder.
inline void write_typed_edges(const HeteroDataset& d, const std::filesystem::path& dir,
                              const std::vector<std::string>& folders,
                              nlohmann::ordered_json& files) {
  for (std::size_t e = 0; e < folders.size(); ++e) {
    const auto m = static_cast<std::int64_t>(d.src[e].size());
    const auto folder = dir / "edges" / folders[e];
    make_folder(folder);
    write_npy(folder / "src.npy", d.src[e].span());
    write_npy(folder / "dst.npy", d.dst[e].span());
    record_file(files, "edges/" + folders[e] + "/src.npy", DType::int64, {m});
    record_file(files, "edges/" + folders[e] + "/dst.npy", DType::int64, {m});
  }
}

/// Write stage: each node type's feat.npy (or none), and the target type's label.npy
/// and non-empty masks; optional files the data lacks are removed. Returns meta.json
/// "split": the number of nodes in each mask written.
inline nlohmann::ordered_json write_typed_nodes(const HeteroDataset& d,
                                                const std::filesystem::path& dir,
                                                nlohmann::ordered_json& files) {
  const auto& node_names = d.types.node_type_names();
  const Buffer<bool>* masks[3] = {&d.train_mask, &d.val_mask, &d.test_mask};
  auto split = nlohmann::ordered_json::object();
  for (std::size_t t = 0; t < node_names.size(); ++t) {
    const auto& nt = node_names[t];
    const auto n = d.types.num_nodes(NodeType(static_cast<std::int32_t>(t)));
    const auto folder = dir / "nodes" / nt;
    if (feat_width(d, t) > 0) {
      make_folder(folder);
      write_npy(folder / "feat.npy", d.feat[t].span(), {n, feat_width(d, t)});
      record_file(files, "nodes/" + nt + "/feat.npy", DType::float32, {n, feat_width(d, t)});
    } else {
      remove_stale_file(folder / "feat.npy");
    }
    if (nt != d.target_ntype) {
      remove_stale_file(folder / "label.npy");
      for (const char* file : mask_files) remove_stale_file(folder / file);
      continue;
    }
    make_folder(folder);
    write_npy(folder / "label.npy", d.label.span());
    record_file(files, "nodes/" + nt + "/label.npy", DType::int64, {n});
    for (int m = 0; m < 3; ++m) {
      if (masks[m]->empty()) {
        remove_stale_file(folder / mask_files[m]);
        continue;
      }
      write_npy(folder / mask_files[m], masks[m]->span());
      record_file(files, "nodes/" + nt + "/" + mask_files[m], DType::bool_, {n});
      split[split_keys[m]] = Dataset::count(*masks[m]);
    }
  }
  return split;
}

/// The type declarations of meta.json, in type order: "ntypes" ({type: count}), "etypes"
/// ([src, etype, dst] triples), "num_edges" ({src__etype__dst: count}), "feat_dims"
/// ({type: width}) and "featureless_ntypes". Shared by write_hetero_dataset and
/// hsbm_dataset, so a generated dataset declares its types as a written one does.
struct TypeDeclarationsJson {
  nlohmann::ordered_json ntypes = nlohmann::ordered_json::object();
  nlohmann::ordered_json etypes = nlohmann::ordered_json::array();
  nlohmann::ordered_json num_edges = nlohmann::ordered_json::object();
  nlohmann::ordered_json feat_dims = nlohmann::ordered_json::object();
  nlohmann::ordered_json featureless_ntypes = nlohmann::ordered_json::array();
};

/// meta.json's declarations of `types`, and of the feature widths `feat_dim` (a type
/// past its end, or of width 0, is featureless).
inline TypeDeclarationsJson type_declarations_json(const TypeMap& types,
                                                   const std::vector<std::int64_t>& feat_dim) {
  TypeDeclarationsJson j;
  for (std::int32_t t = 0; t < types.num_node_types(); ++t) {
    const auto& nt = types.node_type_name(NodeType(t));
    j.ntypes[nt] = types.num_nodes(NodeType(t));
    const auto tz = static_cast<std::size_t>(t);
    if (tz < feat_dim.size() && feat_dim[tz] > 0)
      j.feat_dims[nt] = feat_dim[tz];
    else
      j.featureless_ntypes.push_back(nt);
  }
  for (std::int32_t e = 0; e < types.num_edge_types(); ++e) {
    const auto& c = types.edge_type(EdgeType(e));
    j.etypes.push_back({c.src_type, c.edge_type, c.dst_type});
    j.num_edges[edge_folder_name(c)] = types.num_edges(EdgeType(e));
  }
  return j;
}

/// Write stage: meta.json, the structural keys first, then d.meta's other keys, "files"
/// last.
inline void write_typed_meta(const HeteroDataset& d, const std::filesystem::path& dir,
                             nlohmann::ordered_json split, nlohmann::ordered_json files) {
  using OJ = nlohmann::ordered_json;
  auto decl = type_declarations_json(d.types, d.feat_dim);
  OJ meta = OJ::object();
  meta["name"] = d.name;
  meta["ntypes"] = std::move(decl.ntypes);
  meta["etypes"] = std::move(decl.etypes);
  meta["num_edges"] = std::move(decl.num_edges);
  if (!d.target_ntype.empty()) meta["target_ntype"] = d.target_ntype;
  meta["num_classes"] = d.num_classes;
  meta["feat_dims"] = std::move(decl.feat_dims);
  meta["featureless_ntypes"] = std::move(decl.featureless_ntypes);
  if (!split.empty()) meta["split"] = std::move(split);
  if (d.meta.is_object())
    for (const auto& [k, v] : d.meta.items())
      if (!meta.contains(k) && k != "files" && k != "split" && k != "target_ntype") meta[k] = OJ(v);
  meta["files"] = std::move(files);
  const std::string text = meta.dump(2) + "\n";
  write_file_durably(dir / "meta.json", {std::as_bytes(std::span(text))});
}

}  // namespace detail

/// Writes `d` as a typed dataset folder that load_hetero_dataset reads back equal:
/// edges/<src>__<etype>__<dst>/{src,dst}.npy (int64), nodes/<t>/feat.npy (float32) for
/// types with features, nodes/<target>/label.npy and the masks that are non-empty, and
/// meta.json last: the structural keys (name, ntypes in type order, etypes, num_edges,
/// target_ntype, num_classes, feat_dims, featureless_ntypes, split, files with dtype and
/// shape) first, then d.meta's other keys. Removes stale optional files of declared types.
/// Each file is replaced atomically. Throws ShapeError, IdOutOfRange or InvalidArgument
/// when `d` is inconsistent (before writing anything), IoError when a write fails.
inline void write_hetero_dataset(const HeteroDataset& d, const std::filesystem::path& dir) {
  const std::string subject = "dataset '" + d.name + "'";
  const auto folders = detail::check_typed_edges(d, subject);
  detail::check_typed_nodes(d, subject);
  detail::make_folder(dir);
  auto files = nlohmann::ordered_json::object();
  detail::write_typed_edges(d, dir, folders, files);
  auto split = detail::write_typed_nodes(d, dir, files);
  detail::write_typed_meta(d, dir, std::move(split), std::move(files));
}

}  // namespace distgraph
