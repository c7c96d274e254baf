// Reading a plain-text edge list (two columns: src dst) into a feature-less Dataset.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/io/dataset.hpp"
#include "distgraph/io/mapped_file.hpp"

namespace distgraph {

/// Reads `path`: one edge per line, "src dst" separated by spaces, tabs or a comma;
/// blank lines and lines starting with '#' or '%' are skipped. IDs are non-negative
/// integers; num_nodes = largest ID + 1. Edges are kept as written (no symmetrising).
/// Throws IoError (missing file) or FormatError naming the line.
inline Dataset read_edge_list(const std::filesystem::path& path) {
  MappedFile file(path);
  const auto bytes = file.bytes();
  const char* p = reinterpret_cast<const char*>(bytes.data());
  const char* end = p + bytes.size();
  std::vector<std::int64_t> src, dst;
  std::int64_t line = 0, max_id = -1;
  auto skip_blank = [&](const char*& q, const char* e) {
    while (q < e && (*q == ' ' || *q == '\t' || *q == ',' || *q == '\r')) ++q;
  };
  while (p < end) {
    ++line;
    const char* eol = std::find(p, end, '\n');
    const char* q = p;
    skip_blank(q, eol);
    if (q < eol && *q != '#' && *q != '%') {
      std::int64_t ids[2];
      for (auto& id : ids) {
        skip_blank(q, eol);
        auto [next, ec] = std::from_chars(q, eol, id);
        if (ec != std::errc{} || id < 0)
          throw FormatError(path.string(), "line " + std::to_string(line) +
                                               ": expected two non-negative integer node IDs");
        q = next;
      }
      skip_blank(q, eol);
      if (q != eol)
        throw FormatError(path.string(),
                          "line " + std::to_string(line) + ": unexpected text after two IDs");
      src.push_back(ids[0]);
      dst.push_back(ids[1]);
      max_id = std::max({max_id, ids[0], ids[1]});
    }
    p = eol < end ? eol + 1 : end;
  }
  Dataset d;
  d.name = path.stem().string();
  d.num_nodes = max_id + 1;
  d.src = Buffer<std::int64_t>(std::move(src));
  d.dst = Buffer<std::int64_t>(std::move(dst));
  return d;
}

}  // namespace distgraph
