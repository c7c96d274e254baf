// Typed data names: "<type>/<name>" holds one row per node (or edge) of one type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace distgraph {

/// The name of data `name` of node type `type_name` ("paper/feat"), or of an edge type
/// given by its canonical name ("paper:cites:paper/weight"): DGL's partition keys. Such data
/// hold one row per node (edge) of that type, ordered by global ID; everywhere else in
/// distgraph (partition files, server tensors, DistTensor) the name is kept as it is.
inline std::string typed_data_name(std::string_view type_name, std::string_view name) {
  std::string s(type_name);
  s += '/';
  s += name;
  return s;
}

/// The index in `type_names` of the type whose data `name` holds, or -1 when `name` is not
/// "<type>/<rest>" for one of `type_names` (data over every node or edge). A "node:" or
/// "edge:" prefix (how servers store partition data) is skipped first.
inline std::int32_t typed_data_type(std::string_view name,
                                    const std::vector<std::string>& type_names) {
  for (std::string_view prefix : {"node:", "edge:"})
    if (name.substr(0, prefix.size()) == prefix) {
      name.remove_prefix(prefix.size());
      break;
    }
  const auto slash = name.find('/');
  if (slash == std::string_view::npos || slash + 1 == name.size()) return -1;
  const std::string_view type = name.substr(0, slash);
  for (std::size_t t = 0; t < type_names.size(); ++t)
    if (type_names[t] == type) return static_cast<std::int32_t>(t);
  return -1;
}

}  // namespace distgraph
