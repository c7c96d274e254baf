// bench_graph: R-MAT generation and COO -> CSR / full graph build, beside memcpy bandwidth.
//
//   bench_graph [--scale S] [--edge-factor K] [--threads T] [--runs R] [--json]
//
// Every figure is edges/s, best of R runs (default 3). The bound is a parallel memcpy (same
// threads) of the bytes the step must at least read and write, measured in this run, into
// a freshly allocated destination as the builder's output is (on the 2-core VM we measured,
// first-touch memcpy ran at ~0.65 GB/s against ~33 GB/s into touched memory, both of
// which the header prints), expressed in edges/s of that step:
//   csr_build    reads src and dst (16 B/edge), writes indices and edge_ids (16 B/edge) and
//                indptr (8 B/node): memcpy of 16*m + 8*(n+1) bytes.
//   graph_build  build_graph with symmetrize + remove_duplicates + remove_self_loops: reads
//                the COO (16 B/edge) and writes CSR and CSC of the m' output edges
//                (2 * (16*m' + 8*(n+1)) bytes): memcpy bound scaled to those bytes.
//   rmat         writes src and dst (16 B/edge): memcpy bound scaled to those bytes.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "distgraph/core/parallel.hpp"
#include "distgraph/core/timer.hpp"
#include "distgraph/graph/builder.hpp"
#include "distgraph/graph/generators.hpp"
#include "support/report.hpp"

namespace {

using distgraph::bench::Figure;
using distgraph::bench::Reporter;

struct Args {
  int scale = 20;
  int edge_factor = 16;
  unsigned threads = 0;
  int runs = 3;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "bench_graph: %s\nusage: bench_graph [--scale S] [--edge-factor K] "
               "[--threads T] [--runs R] [--json]\n",
               why);
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--json") continue;
    if (i + 1 >= argc) usage(("missing value after " + flag).c_str());
    const long v = std::strtol(argv[++i], nullptr, 10);
    if (flag == "--scale" && v >= 1 && v <= 30)
      a.scale = static_cast<int>(v);
    else if (flag == "--edge-factor" && v >= 1 && v <= 1024)
      a.edge_factor = static_cast<int>(v);
    else if (flag == "--threads" && v >= 0 && v <= 4096)
      a.threads = static_cast<unsigned>(v);
    else if (flag == "--runs" && v >= 1 && v <= 100)
      a.runs = static_cast<int>(v);
    else
      usage(("bad flag or value: " + flag + " " + argv[i]).c_str());
  }
  if (a.threads == 0) a.threads = distgraph::default_num_threads();
  return a;
}

template <class Fn>
double best_seconds(int runs, Fn&& fn) {
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < runs; ++r) {
    distgraph::Stopwatch clock;
    fn();
    best = std::min(best, clock.seconds());
  }
  return best;
}

/// Bytes per second of a parallel memcpy of `bytes` bytes from a touched buffer into a
/// freshly allocated one (`fresh`) or into a touched one.
double memcpy_bytes_per_s(std::size_t bytes, unsigned threads, int runs, bool fresh) {
  std::vector<char> from(bytes, 1), touched(fresh ? 0 : bytes, 0);
  const double s = best_seconds(runs, [&] {
    std::unique_ptr<char[]> fresh_to(fresh ? new char[bytes] : nullptr);
    char* to = fresh ? fresh_to.get() : touched.data();
    distgraph::parallel_chunks(
        0, static_cast<std::int64_t>(bytes), threads,
        [&](unsigned, std::int64_t b, std::int64_t e) {
          std::memcpy(to + b, from.data() + b, static_cast<std::size_t>(e - b));
        },
        1 << 20);
  });
  return static_cast<double>(bytes) / s;
}

}  // namespace

int main(int argc, char** argv) {
  Reporter rep(argc, argv, "bench_graph");
  const Args args = parse(argc, argv);
  const std::int64_t n = std::int64_t{1} << args.scale;
  const std::int64_t m = n * args.edge_factor;
  const auto mz = static_cast<double>(m);
  const std::size_t csr_bytes = static_cast<std::size_t>(16 * m + 8 * (n + 1));
  const double bw = memcpy_bytes_per_s(csr_bytes, args.threads, args.runs, true);
  const double warm_bw = memcpy_bytes_per_s(csr_bytes, args.threads, args.runs, false);
  const auto gbps = [](double b) { return std::to_string(b / 1e9) + " GB/s"; };
  rep.header({{"graph", "rmat(scale=" + std::to_string(args.scale) +
                            ", edge_factor=" + std::to_string(args.edge_factor) + ", seed=1)"},
              {"n", std::to_string(n)},
              {"m", std::to_string(m)},
              {"threads", std::to_string(args.threads)},
              {"runs", "best of " + std::to_string(args.runs)},
              {"bound", "parallel memcpy of the bytes each step reads + writes, fresh dst"},
              {"memcpy_fresh", gbps(bw)},
              {"memcpy_touched", gbps(warm_bw)}});
  const nlohmann::json params = {{"scale", args.scale},
                                 {"edge_factor", args.edge_factor},
                                 {"n", n},
                                 {"m", m},
                                 {"threads", args.threads}};

  rep.note("generating R-MAT ...");
  distgraph::Coo coo;
  const double gen_s = best_seconds(args.runs, [&] {
    coo = distgraph::rmat(
        {.scale = args.scale, .edge_factor = args.edge_factor, .num_threads = args.threads});
  });
  rep.add(Figure{.figure = "rmat",
                 .value = mz / gen_s,
                 .unit = "edges/s",
                 .bound = bw / 16.0,
                 .bound_name = "memcpy",
                 .params = params});

  rep.note("building CSR ...");
  std::int64_t checksum = 0;
  const double csr_s = best_seconds(args.runs, [&] {
    const distgraph::Csr csr =
        distgraph::build_csr(n, n, coo.src.span(), coo.dst.span(), {}, args.threads);
    checksum += csr.indptr[static_cast<std::size_t>(n)];
  });
  rep.add(Figure{.figure = "csr_build",
                 .value = mz / csr_s,
                 .unit = "edges/s",
                 .bound = mz * bw / static_cast<double>(csr_bytes),
                 .bound_name = "memcpy",
                 .params = params});

  rep.note("building graph (CSR + CSC, symmetrize + dedup + no self loops) ...");
  std::int64_t out_edges = 0;
  const double graph_s = best_seconds(args.runs, [&] {
    const distgraph::Graph g = distgraph::build_graph(coo, {.remove_self_loops = true,
                                                            .remove_duplicates = true,
                                                            .symmetrize = true,
                                                            .num_threads = args.threads});
    out_edges = g.num_edges();
  });
  const double graph_bytes =
      16.0 * mz + 2.0 * (16.0 * static_cast<double>(out_edges) + 8.0 * static_cast<double>(n + 1));
  nlohmann::json graph_params = params;
  graph_params["output_edges"] = out_edges;
  rep.add(Figure{.figure = "graph_build",
                 .value = mz / graph_s,
                 .unit = "edges/s",
                 .bound = mz * bw / graph_bytes,
                 .bound_name = "memcpy",
                 .params = graph_params});
  rep.note("csr_build " + std::to_string(csr_s) + " s, graph_build " + std::to_string(graph_s) +
           " s (" + std::to_string(out_edges) + " output edges), memcpy " +
           std::to_string(bw / 1e9) + " GB/s into fresh memory, " + std::to_string(warm_bw / 1e9) +
           " GB/s into touched memory, peak RSS " +
           std::to_string(distgraph::peak_rss_bytes() >> 20) + " MiB" +
           (checksum == m * args.runs ? "" : " (checksum mismatch!)"));
  return checksum == m * args.runs ? 0 : 1;
}
