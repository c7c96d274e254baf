// RelationFanouts: per-layer fanouts of every relation, a default plus named overrides.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"

namespace distgraph {

/// Fanouts of every layer for every relation: `layers[l]` is the default fanout of layer l
/// (input layer first, like --fanouts 10,25); `overrides` set relation-specific fanouts,
/// named by canonical triple "src:etype:dst" or by the relation name alone when that name
/// is unique among the graph's edge types. Unlike DGL's fanout dicts, which must name every
/// relation, an omitted relation takes the layer's default.
struct RelationFanouts {
  std::vector<std::int64_t> layers;
  /// (relation, fanouts): one value for all layers, or one per layer.
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> overrides;

  /// resolved[l][r]: fanout of relation r (index into `edge_type_names`, canonical
  /// "src:etype:dst" names as partition books give them) at layer l. Throws
  /// InvalidArgument naming an unknown or ambiguous relation (listing the known ones), a
  /// relation given twice, a wrong per-layer count, no layers, or a value < -1.
  std::vector<std::vector<std::int64_t>> resolve(
      const std::vector<std::string>& edge_type_names) const {
    if (layers.empty())
      throw InvalidArgument("relation fanouts: no layers; expected one default fanout per layer");
    for (const std::int64_t f : layers) check_value(f, "default fanout");
    std::vector<std::vector<std::int64_t>> resolved;
    for (const std::int64_t f : layers) resolved.emplace_back(edge_type_names.size(), f);
    std::vector<const std::string*> set_by(edge_type_names.size(), nullptr);
    for (const auto& [name, values] : overrides) {
      const std::size_t r = find_relation(name, edge_type_names);
      if (set_by[r])
        throw InvalidArgument("relation fanouts: relation '" + name + "' is " + edge_type_names[r] +
                              ", already given as '" + *set_by[r] +
                              "'; expected each relation at most once");
      set_by[r] = &name;
      if (values.size() != 1 && values.size() != layers.size())
        throw InvalidArgument("relation fanouts: '" + name + "' has " +
                              std::to_string(values.size()) +
                              " values; expected 1 (all layers) or " +
                              std::to_string(layers.size()) + " (one per layer)");
      for (std::size_t l = 0; l < layers.size(); ++l) {
        const std::int64_t f = values[values.size() == 1 ? 0 : l];
        check_value(f, "fanout of '" + name + "'");
        resolved[l][r] = f;
      }
    }
    return resolved;
  }

  /// Parses "--relation-fanouts" text: "rev_pv=20,paper:pa:author=5/10" (NAME=F, or
  /// NAME=F1/F2/... one per layer, items separated by commas; spaces around items are
  /// ignored; empty text gives no overrides). Throws InvalidArgument quoting the
  /// offending item.
  static std::vector<std::pair<std::string, std::vector<std::int64_t>>> parse_overrides(
      std::string_view text) {
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> out;
    if (trim(text).empty()) return out;
    for (std::size_t start = 0;;) {
      const std::size_t comma = text.find(',', start);
      const std::string_view item =
          trim(text.substr(start, comma == std::string_view::npos ? text.npos : comma - start));
      out.push_back(parse_item(item));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    return out;
  }

 private:
  static void check_value(std::int64_t f, const std::string& what) {
    if (f < -1)
      throw InvalidArgument("relation fanouts: " + what + " " + std::to_string(f) +
                            "; expected -1 (all neighbours) or >= 0");
  }

  static std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  }

  static std::string known(const std::vector<std::string>& names) {
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
    return s;
  }

  /// The relation part of "src:etype:dst" (the whole name when it is not a triple).
  static std::string_view relation_of(std::string_view canonical) {
    const std::size_t a = canonical.find(':');
    const std::size_t b = canonical.rfind(':');
    if (a == std::string_view::npos || a == b) return canonical;
    return canonical.substr(a + 1, b - a - 1);
  }

  /// Index of the edge type `name` denotes: an exact (canonical) name first, else the
  /// unique type whose relation part is `name`.
  static std::size_t find_relation(const std::string& name, const std::vector<std::string>& names) {
    for (std::size_t r = 0; r < names.size(); ++r)
      if (names[r] == name) return r;
    std::vector<std::size_t> hits;
    if (name.find(':') == std::string::npos)
      for (std::size_t r = 0; r < names.size(); ++r)
        if (relation_of(names[r]) == name) hits.push_back(r);
    if (hits.empty())
      throw InvalidArgument("relation fanouts: relation '" + name +
                            "' is unknown; expected one of " + known(names) +
                            " (or a relation name that is unique among them)");
    if (hits.size() > 1) {
      std::vector<std::string> which;
      for (const std::size_t r : hits) which.push_back(names[r]);
      throw InvalidArgument("relation fanouts: relation '" + name + "' is ambiguous (" +
                            known(which) + "); expected its canonical src:etype:dst name");
    }
    return hits.front();
  }

  static std::pair<std::string, std::vector<std::int64_t>> parse_item(std::string_view item) {
    auto bad = [&](const std::string& why) {
      return InvalidArgument("relation fanouts: item '" + std::string(item) + "': " + why +
                             "; expected NAME=F or NAME=F1/F2/... (integers >= -1)");
    };
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) throw bad("no '='");
    const std::string_view name = trim(item.substr(0, eq));
    if (name.empty()) throw bad("no relation name");
    std::vector<std::int64_t> values;
    std::string_view rest = item.substr(eq + 1);
    for (;;) {
      const std::size_t slash = rest.find('/');
      const std::string_view tok = trim(rest.substr(0, slash));
      std::int64_t v = 0;
      const auto [ptr, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
      if (tok.empty() || ec != std::errc{} || ptr != tok.data() + tok.size())
        throw bad("'" + std::string(tok) + "' is not an integer");
      if (v < -1) throw bad("fanout " + std::to_string(v));
      values.push_back(v);
      if (slash == std::string_view::npos) break;
      rest.remove_prefix(slash + 1);
    }
    return {std::string(name), std::move(values)};
  }
};

}  // namespace distgraph
