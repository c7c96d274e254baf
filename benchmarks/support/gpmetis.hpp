// The bare-METIS bound of the partitioning benchmarks: a graph written as a METIS graph file
// and Debian's gpmetis run on it, its wall time, edge cut and peak memory read back.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "distgraph/core/parallel.hpp"
#include "distgraph/core/timer.hpp"
#include "distgraph/graph/graph.hpp"

extern char** environ;

namespace distgraph::bench {

/// Writes `g` (symmetric, no self loops) as a METIS graph file: "n m" with m undirected
/// edges, then one line of 1-based neighbours per node. Rows are formatted in parallel,
/// a round of `threads` blocks at a time, and written in order.
inline void write_metis_graph(const std::filesystem::path& path, const distgraph::Graph& g,
                              unsigned threads) {
  const std::int64_t n = g.num_nodes();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error(path.string() + ": cannot create: " + std::strerror(errno));
  std::fprintf(f, "%lld %lld\n", static_cast<long long>(n),
               static_cast<long long>(g.num_edges() / 2));
  const std::int64_t* indptr = g.out.indptr.data();
  const std::int64_t* indices = g.out.indices.data();
  // Blocks of about 1M adjacency entries keep the buffers small.
  std::vector<std::int64_t> cuts{0};
  for (std::int64_t v = 0; v < n;) {
    std::int64_t e = v + 1;
    while (e < n && indptr[e] - indptr[cuts.back()] < (1 << 20)) ++e;
    cuts.push_back(e);
    v = e;
  }
  const auto blocks = static_cast<std::int64_t>(cuts.size()) - 1;
  std::vector<std::string> text(threads);
  for (std::int64_t first = 0; first < blocks; first += threads) {
    const std::int64_t last = std::min<std::int64_t>(blocks, first + threads);
    distgraph::parallel_chunks(
        first, last, threads,
        [&](unsigned, std::int64_t bb, std::int64_t be) {
          for (std::int64_t b = bb; b < be; ++b) {
            std::string& s = text[static_cast<std::size_t>(b - first)];
            const std::int64_t vb = cuts[static_cast<std::size_t>(b)];
            const std::int64_t ve = cuts[static_cast<std::size_t>(b) + 1];
            s.resize(static_cast<std::size_t>((indptr[ve] - indptr[vb]) * 21 + (ve - vb)));
            char* p = s.data();
            for (std::int64_t v = vb; v < ve; ++v) {
              for (std::int64_t k = indptr[v]; k < indptr[v + 1]; ++k) {
                if (k > indptr[v]) *p++ = ' ';
                p = std::to_chars(p, p + 20, indices[k] + 1).ptr;
              }
              *p++ = '\n';
            }
            s.resize(static_cast<std::size_t>(p - s.data()));
          }
        },
        1);
    for (std::int64_t b = first; b < last; ++b) {
      const std::string& s = text[static_cast<std::size_t>(b - first)];
      if (std::fwrite(s.data(), 1, s.size(), f) != s.size())
        throw std::runtime_error(path.string() + ": write failed: " + std::strerror(errno));
    }
  }
  if (std::fclose(f) != 0)
    throw std::runtime_error(path.string() + ": close failed: " + std::strerror(errno));
}

struct GpmetisRun {
  double wall_s = 0;
  double partitioning_s = -1;  ///< its own "Partitioning:" time (METIS only)
  double io_s = -1;
  std::int64_t edge_cut = -1;
  std::int64_t max_rss_bytes = 0;
};

/// Runs `gpmetis FILE parts` with its output in `log`, and reads its figures back.
inline GpmetisRun run_gpmetis(const std::string& exe, const std::filesystem::path& graph_file,
                              std::int64_t parts, const std::filesystem::path& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  const std::string parts_s = std::to_string(parts);
  std::string file_s = graph_file.string();
  std::string exe_s = exe;
  char* argv[] = {exe_s.data(), file_s.data(), const_cast<char*>(parts_s.c_str()), nullptr};
  distgraph::Stopwatch clock;
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    throw std::runtime_error(exe + ": cannot start: " + std::strerror(rc) +
                             " (install Debian's metis)");
  int status = 0;
  struct rusage ru {};
  while (::wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  GpmetisRun r;
  r.wall_s = clock.seconds();
  r.max_rss_bytes = static_cast<std::int64_t>(ru.ru_maxrss) * 1024;
  std::ifstream in(log);
  std::stringstream all;
  all << in.rdbuf();
  const std::string out = all.str();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(exe + " failed (status " + std::to_string(status) + "):\n" + out);
  auto number_after = [&](const std::string& key) -> std::string {
    const auto at = out.find(key);
    if (at == std::string::npos) return {};
    auto p = out.find_first_not_of(" \t", at + key.size());
    const auto e = out.find_first_of(" \t,\n", p);
    return p == std::string::npos ? std::string{} : out.substr(p, e - p);
  };
  try {
    r.edge_cut = std::stoll(number_after("Edgecut:"));
    r.partitioning_s = std::stod(number_after("Partitioning:"));
    r.io_s = std::stod(number_after("I/O:"));
  } catch (const std::exception&) {
    throw std::runtime_error(exe + ": cannot read Edgecut / Partitioning time from its output:\n" +
                             out);
  }
  return r;
}

}  // namespace distgraph::bench
