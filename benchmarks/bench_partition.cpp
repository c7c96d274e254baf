// bench_partition: partition_graph (METIS and random) on R-MAT, beside Debian's gpmetis on the
// same graph and beside plain file writing, all measured in the same run.
//
//   bench_partition [--scale S] [--edge-factor K] [--parts P] [--feat-dim D] [--threads T]
//                   [--runs R] [--gpmetis PATH] [--keep DIR] [--json]
//
// The input is rmat(scale S, edge factor K, symmetrize) built without self loops and
// duplicates (a simple undirected graph stored both ways), plus a D-dim float32 feature per
// node. Figures (issue 4, "Performance"):
//   partition_metis_time  seconds of the whole partition_graph with METIS, writing every file
//                         into a temporary folder; bound = wall time of `gpmetis FILE P` on the
//                         same graph (reading its text file, partitioning, reporting, writing
//                         FILE.part.P). ratio = bound / value; target >= 1 / 1.3.
//   partition_edge_cut    METIS's objective (undirected cut edges) of our partition; bound =
//                         the edgecut gpmetis reports. ratio = bound / value; target >= 0.95.
//   partition_peak_rss    peak RSS (VmHWM) of a forked child that holds the input (graph and
//                         features, inherited from the parent) and runs the METIS
//                         partition_graph; its high-water mark is reset when it starts, so the
//                         generation of the input does not count. bound = 3 x the bytes of the
//                         input (the Graph's CSR and CSC arrays plus the features).
//   partition_random_time seconds of partition_graph with random assignment; bound = writing
//                         the same bytes into the same number of files in the same folder with
//                         plain write() calls, each file written to a temporary name, fsynced
//                         and renamed (what the partitioner's .npy writer does), on the same
//                         number of threads. ratio = bound / value.
// Each partitioning runs in its own forked child (fork, then the child reports over a pipe).
//
//   bench_partition --distributed 1,2,4 [--scale S] [--edge-factor K] [--parts P]
//                   [--dist-method metis|random] [--dist-partitioner ptscotch|zoltan]
//                   [--balance-edges] [--mpirun PATH] [--json]
//
// partitions the same R-MAT graph with `mpirun -n R distgraph partition --distributed
// --input rmat:S:K --method M --partitioner L` for each R listed (the ranks generate the graph
// between them; issue 33) and compares, in the same run, with gpmetis and the single-process
// `distgraph partition
// --input rmat:S:K` on that graph (no features: the ranks generate none):
//   dist_partition_edge_cut  directed cut edges of the R-rank partition; bound = 2 x the
//                            edgecut gpmetis reports (its undirected count). ratio = bound /
//                            value; goal >= 1 / 1.10.
//   dist_partition_time      wall seconds of the whole mpirun; bound = gpmetis's wall time.
//   dist_partition_peak_rss  the largest rank's peak RSS; bound = 1.3 x the single-process
//                            `distgraph partition` peak / R + 256 MiB (a rank's MPI runtime
//                            and the program itself). ratio = bound / value; goal >= 1.
// With --balance-edges, every partitioner balances in-edges as well (the ranks' vertex
// weight 1 + in-degree, METIS's second constraint): then dist_partition_edge_cut's bound is
// the single-process `distgraph partition --balance-edges` cut (bound_name
// single_process_balance_edges_cut), as gpmetis balances nodes only.
#include <fcntl.h>
#include <malloc.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "distgraph/core/parallel.hpp"
#include "distgraph/core/tensor.hpp"
#include "distgraph/core/timer.hpp"
#include "distgraph/graph/builder.hpp"
#include "distgraph/graph/generators.hpp"
#include "distgraph/partition/partition_graph.hpp"
#include "support/child.hpp"
#include "support/gpmetis.hpp"
#include "support/report.hpp"

namespace {

namespace fs = std::filesystem;
using distgraph::bench::Figure;
using distgraph::bench::GpmetisRun;
using distgraph::bench::Kind;
using distgraph::bench::Reporter;
using distgraph::bench::run_gpmetis;
using distgraph::bench::run_in_child;
using distgraph::bench::write_metis_graph;
using nlohmann::json;

struct Args {
  int scale = 20;
  int edge_factor = 16;
  std::int64_t parts = 4;
  std::int64_t feat_dim = 100;
  unsigned threads = 0;
  int runs = 1;
  std::string gpmetis = "/usr/bin/gpmetis";
  std::string mpirun = "/usr/bin/mpirun";
  std::vector<int> distributed;  ///< rank counts for the dist_partition_* figures
  /// The ranks' --method: metis (PT-Scotch) or random, which scales where PT-Scotch does not.
  std::string dist_method = "metis";
  /// --method metis's library under MPI: ptscotch or zoltan (`--partitioner`).
  std::string dist_partitioner = "ptscotch";
  bool balance_edges = false;  ///< --balance-edges for the ranks and the single process
  std::string keep;  ///< output folder to keep; empty = a temporary folder, removed at exit
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "bench_partition: %s\nusage: bench_partition [--scale S] [--edge-factor K] "
               "[--parts P] [--feat-dim D] [--threads T] [--runs R] [--gpmetis PATH] "
               "[--keep DIR] [--json]\n       bench_partition --distributed R1,R2,... "
               "[--scale S] [--edge-factor K] [--parts P] [--dist-method metis|random]\n"
               "                       [--dist-partitioner ptscotch|zoltan] [--balance-edges] "
               "[--mpirun PATH] "
               "[--json]\n",
               why.c_str());
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--json") continue;
    if (flag == "--balance-edges") {
      a.balance_edges = true;
      continue;
    }
    if (i + 1 >= argc) usage("missing value after " + flag);
    const std::string value = argv[++i];
    if (flag == "--keep") {
      a.keep = value;
      continue;
    }
    if (flag == "--mpirun") {
      a.mpirun = value;
      continue;
    }
    if (flag == "--distributed") {
      std::stringstream list(value);
      for (std::string r; std::getline(list, r, ',');) {
        int ranks = 0;
        const auto [p, ec] = std::from_chars(r.data(), r.data() + r.size(), ranks);
        if (ec != std::errc{} || p != r.data() + r.size() || ranks < 1 || ranks > 64)
          usage("--distributed: bad rank count '" + r + "'");
        a.distributed.push_back(ranks);
      }
      continue;
    }
    if (flag == "--dist-method") {
      if (value != "metis" && value != "random") usage("--dist-method: metis or random");
      a.dist_method = value;
      continue;
    }
    if (flag == "--dist-partitioner") {
      if (value != "ptscotch" && value != "zoltan") usage("--dist-partitioner: ptscotch or zoltan");
      a.dist_partitioner = value;
      continue;
    }
    if (flag == "--gpmetis") {
      a.gpmetis = value;
      continue;
    }
    long long v = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    const bool number = ec == std::errc{} && end == value.data() + value.size();
    if (number && flag == "--scale" && v >= 4 && v <= 26)
      a.scale = static_cast<int>(v);
    else if (number && flag == "--edge-factor" && v >= 1 && v <= 256)
      a.edge_factor = static_cast<int>(v);
    else if (number && flag == "--parts" && v >= 2 && v <= 1024)
      a.parts = v;
    else if (number && flag == "--feat-dim" && v >= 0 && v <= 4096)
      a.feat_dim = v;
    else if (number && flag == "--threads" && v >= 0 && v <= 4096)
      a.threads = static_cast<unsigned>(v);
    else if (number && flag == "--runs" && v >= 1 && v <= 100)
      a.runs = static_cast<int>(v);
    else
      usage("bad flag or value: " + flag + " " + value);
  }
  if (a.threads == 0) a.threads = distgraph::default_num_threads();
  return a;
}

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "bench_partition: %s\n", why.c_str());
  std::exit(1);
}

struct FileSize {
  fs::path relative;
  std::uintmax_t bytes = 0;
};

/// Every regular file under `dir` with its size, in a fixed order.
std::vector<FileSize> list_files(const fs::path& dir) {
  std::vector<FileSize> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files.push_back({fs::relative(e.path(), dir), e.file_size()});
  std::sort(files.begin(), files.end(),
            [](const FileSize& a, const FileSize& b) { return a.relative < b.relative; });
  return files;
}

/// Seconds to write `files` (same names and sizes) under `dir` as the partitioner's .npy
/// writer does: write() the bytes to a temporary name, fsync, close, rename; `threads`
/// writers take whole files in turn.
double write_files_seconds(const fs::path& dir, const std::vector<FileSize>& files,
                           unsigned threads) {
  std::uintmax_t largest = 0;
  for (const auto& f : files) largest = std::max(largest, f.bytes);
  std::vector<char> source(static_cast<std::size_t>(largest), 'x');  // touched up front
  for (const auto& f : files) fs::create_directories((dir / f.relative).parent_path());
  std::atomic<std::size_t> next{0};
  distgraph::Stopwatch clock;
  distgraph::parallel_chunks(
      0, threads, threads,
      [&](unsigned, std::int64_t, std::int64_t) {
        for (std::size_t i = next++; i < files.size(); i = next++) {
          const fs::path target = dir / files[i].relative;
          const std::string tmp = target.string() + ".tmp";
          const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
          if (fd < 0) fail(tmp + ": cannot create: " + std::strerror(errno));
          std::size_t done = 0;
          const auto size = static_cast<std::size_t>(files[i].bytes);
          while (done < size) {
            const ssize_t w = ::write(fd, source.data() + done, size - done);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) fail(tmp + ": write failed: " + std::strerror(errno));
            done += static_cast<std::size_t>(w);
          }
          if (::fsync(fd) != 0 || ::close(fd) != 0 || ::rename(tmp.c_str(), target.c_str()) != 0)
            fail(tmp + ": fsync/close/rename failed: " + std::strerror(errno));
        }
      },
      1);
  return clock.seconds();
}

std::string mib(double bytes) {
  char b[64];
  std::snprintf(b, sizeof b, "%.1f MiB", bytes / (1 << 20));
  return b;
}

std::string fixed(double x, int digits = 3) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, x);
  return b;
}

/// The partition_graph result as JSON, for the report from the child.
json result_json(const distgraph::PartitionResult& r, double seconds) {
  json stages = json::array();  // [name, seconds] pairs, in the order they ran
  for (const auto& s : r.stages) stages.push_back({s.name, s.seconds});
  return {{"seconds", seconds},
          {"metis_edge_cut", r.metis_edge_cut},
          {"cross_edges", r.cross_edges},
          {"node_balance", r.node_balance},
          {"edge_balance", r.edge_balance},
          {"stage_s", stages}};
}

/// Runs `command` (a shell command line) to its end: wall seconds and its last stdout line
/// that is a JSON object (null when none, or when it failed).
std::pair<double, json> run_for_json(const std::string& command) {
  distgraph::Stopwatch clock;
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) fail("cannot run: " + command);
  std::string out;
  char buf[4096];
  while (const std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = ::pclose(p);
  const double seconds = clock.seconds();
  json last;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line.front() == '{') last = json::parse(line);
  if (status != 0) fail("failed (status " + std::to_string(status) + "): " + command);
  return {seconds, last};
}

#ifdef DISTGRAPH_CLI
/// The generated graph's size, as the header and the params give it.
struct GraphSize {
  std::int64_t n = 0, m = 0;
};

/// Generates the graph the ranks generate (symmetrised, simple) and writes it as gpmetis's
/// input; the graph is freed, and its memory returned, before anything is measured.
GraphSize write_rmat_for_gpmetis(const Args& args, const fs::path& metis_file) {
  const unsigned T = args.threads;
  GraphSize size;
  {
    const distgraph::Graph g = distgraph::build_graph(
        distgraph::rmat({.scale = args.scale,
                         .edge_factor = args.edge_factor,
                         .symmetrize = true,
                         .num_threads = T}),
        {.remove_self_loops = true, .remove_duplicates = true, .num_threads = T});
    size = {g.num_nodes(), g.num_edges()};
    write_metis_graph(metis_file, g, T);
  }
  ::malloc_trim(0);
  return size;
}

/// "1,2,4": the rank counts as the header lists them.
std::string rank_list(const std::vector<int>& ranks) {
  std::string r;
  for (const int x : ranks) r += (r.empty() ? "" : ",") + std::to_string(x);
  return r;
}

/// The single-process `distgraph partition` of the same graph, the peak-RSS bound's base:
/// its wall seconds and its report.
std::pair<double, json> run_single_process(const Args& args, const std::string& spec,
                                           const fs::path& root) {
  auto result = run_for_json(std::string(DISTGRAPH_CLI) + " partition --input " + spec +
                             (args.balance_edges ? " --balance-edges" : "") + " --parts " +
                             std::to_string(args.parts) + " --out " + (root / "single").string() +
                             " --json 2>/dev/null");
  fs::remove_all(root / "single");
  return result;
}

/// One `mpirun -n ranks distgraph partition --distributed`: its wall seconds and its report.
std::pair<double, json> run_ranks(const Args& args, int ranks, const std::string& spec,
                                  const fs::path& root) {
  auto result = run_for_json(
      args.mpirun + " --allow-run-as-root --oversubscribe --bind-to none -n " +
      std::to_string(ranks) + " " + DISTGRAPH_CLI + " partition --distributed --input " + spec +
      " --method " + args.dist_method + " --partitioner " + args.dist_partitioner +
      (args.balance_edges ? " --balance-edges" : "") + " --parts " + std::to_string(args.parts) +
      " --out " + (root / "dist").string() + " --json 2>/dev/null");
  fs::remove_all(root / "dist");
  return result;
}

/// What every rank count's figures compare with: gpmetis and the single process.
struct DistBaseline {
  GpmetisRun gp;
  double single_peak = 0;
  bool balance_edges = false;
  json params;  ///< the graph, gpmetis's and the single process's figures
};

/// The three dist_partition_* figures of one rank count from its report `r`.
void report_ranks(Reporter& rep, int ranks, double secs, const json& r, const DistBaseline& base) {
  json params = base.params;
  params["ranks"] = ranks;
  params["method"] = r["method"];
  params["peak_rss_bytes_per_rank"] = r["peak_rss_bytes_per_rank"];
  params["stage_s"] = r["stage_s"];
  params["node_balance"] = r["node_balance"];
  params["edge_balance"] = r["edge_balance"];
  const std::string label = std::to_string(ranks) + " rank(s)";
  rep.add(Figure{.figure = "dist_partition_edge_cut",
                 .value = r["edge_cut"].get<double>(),
                 .unit = "edges",
                 .bound = base.balance_edges ? base.params["single_process_edge_cut"].get<double>()
                                             : 2.0 * static_cast<double>(base.gp.edge_cut),
                 .bound_name = base.balance_edges ? "single_process_balance_edges_cut"
                                                  : "gpmetis_edgecut_directed",
                 .kind = Kind::time,
                 .params = params,
                 .label = label});
  rep.add(Figure{.figure = "dist_partition_time",
                 .value = secs,
                 .unit = "s",
                 .bound = base.gp.wall_s,
                 .bound_name = "gpmetis_wall",
                 .kind = Kind::time,
                 .params = params,
                 .label = label});
  rep.add(Figure{.figure = "dist_partition_peak_rss",
                 .value = r["peak_rss_bytes"].get<double>(),
                 .unit = "bytes",
                 .bound = 1.3 * base.single_peak / ranks + 256.0 * (1 << 20),
                 .bound_name = "1.3x_single_process_peak_per_rank_plus_256MiB",
                 .kind = Kind::time,
                 .params = params,
                 .label = label});
}
#endif

/// The dist_partition_* figures (see the top of this file).
int run_distributed(const Args& args, Reporter& rep, const fs::path& root) {
#ifndef DISTGRAPH_CLI
  (void)args, (void)rep, (void)root;
  fail("--distributed needs the distgraph program (built with the tools)");
#else
  const std::string spec =
      "rmat:" + std::to_string(args.scale) + ":" + std::to_string(args.edge_factor);
  rep.note("generating " + spec + " for gpmetis ...");
  const fs::path metis_file = root / "graph.metis";
  const auto [n, m] = write_rmat_for_gpmetis(args, metis_file);
  rep.header({{"graph", spec + " (symmetrised, no self loops or duplicates), seed 1"},
              {"n", std::to_string(n)},
              {"m", std::to_string(m) + " directed"},
              {"parts", std::to_string(args.parts)},
              {"ranks", rank_list(args.distributed)}});
  rep.note("running gpmetis ...");
  DistBaseline base;
  base.gp = run_gpmetis(args.gpmetis, metis_file, args.parts, root / "gpmetis.log");
  fs::remove(metis_file);
  fs::remove(root / ("graph.metis.part." + std::to_string(args.parts)));
  rep.note("single-process distgraph partition ...");
  const auto [single_s, single] = run_single_process(args, spec, root);
  base.balance_edges = args.balance_edges;
  base.single_peak = single["peak_rss_bytes"].get<double>();
  base.params = {{"scale", args.scale},
                 {"edge_factor", args.edge_factor},
                 {"n", n},
                 {"m", m},
                 {"parts", args.parts},
                 {"gpmetis_edgecut", base.gp.edge_cut},
                 {"gpmetis_wall_s", base.gp.wall_s},
                 {"gpmetis_max_rss_bytes", base.gp.max_rss_bytes},
                 {"single_process_s", single_s},
                 {"single_process_peak_rss_bytes", base.single_peak},
                 {"single_process_edge_cut", single["edge_cut"]},
                 {"single_process_edge_balance", single["edge_balance"]},
                 {"balance_edges", args.balance_edges}};
  for (const int ranks : args.distributed) {
    rep.note("mpirun -n " + std::to_string(ranks) + " distgraph partition --distributed ...");
    const auto [secs, r] = run_ranks(args, ranks, spec, root);
    report_ranks(rep, ranks, secs, r, base);
  }
  rep.note("gpmetis: wall " + fixed(base.gp.wall_s) + " s, edgecut " +
           std::to_string(base.gp.edge_cut) + " (undirected), max RSS " +
           mib(static_cast<double>(base.gp.max_rss_bytes)) +
           "; single-process distgraph partition: " + fixed(single_s) + " s, peak " +
           mib(base.single_peak) + ", directed cut " + single["edge_cut"].dump());
  return 0;
#endif
}

/// The output folder: --keep DIR (kept), else a fresh temporary one, removed at exit.
class OutputFolder {
 public:
  explicit OutputFolder(const std::string& keep) : keep_(!keep.empty()) {
    if (keep_) {
      root_ = keep;
      fs::create_directories(root_);
    } else {
      std::string tmpl = (fs::temp_directory_path() / "bench_partition-XXXXXX").string();
      if (!::mkdtemp(tmpl.data())) fail(std::string("mkdtemp: ") + std::strerror(errno));
      root_ = tmpl;
    }
  }
  ~OutputFolder() {
    std::error_code ec;
    if (!keep_) fs::remove_all(root_, ec);
  }
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;
  const fs::path& path() const noexcept { return root_; }

 private:
  fs::path root_;
  bool keep_;
};

/// The single-process figures' input, and its sizes for the peak-RSS bound.
struct Input {
  distgraph::Graph g;
  distgraph::TensorList node_data;
  double graph_bytes = 0, feat_bytes = 0, input_bytes = 0;
};

/// R-MAT, symmetrised, no self loops or duplicates; D-dim float32 features.
Input make_input(const Args& args) {
  const unsigned T = args.threads;
  Input in;
  {
    const distgraph::Coo coo = distgraph::rmat({.scale = args.scale,
                                                .edge_factor = args.edge_factor,
                                                .symmetrize = true,
                                                .num_threads = T});
    in.g = distgraph::build_graph(
        coo, {.remove_self_loops = true, .remove_duplicates = true, .num_threads = T});
  }
  const std::int64_t n = in.g.num_nodes(), m = in.g.num_edges();
  auto feat_buf = distgraph::detail::uninit_buffer<float>(static_cast<std::size_t>(n) *
                                                          static_cast<std::size_t>(args.feat_dim));
  distgraph::parallel_chunks(
      0, static_cast<std::int64_t>(feat_buf.size()), T,
      [&](unsigned, std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i)  // cheap deterministic values, every page touched
          feat_buf[static_cast<std::size_t>(i)] =
              static_cast<float>((static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull) >> 40) *
              0x1.0p-24f;
      });
  if (args.feat_dim > 0)
    in.node_data.emplace_back("feat",
                              distgraph::HostTensor::from(std::move(feat_buf), {n, args.feat_dim}));
  ::malloc_trim(0);  // return the generator's freed memory, so children inherit only the input
  in.graph_bytes = 2.0 * (8.0 * static_cast<double>(n + 1) + 16.0 * static_cast<double>(m));
  in.feat_bytes = 4.0 * static_cast<double>(n) * static_cast<double>(args.feat_dim);
  in.input_bytes = in.graph_bytes + in.feat_bytes;
  return in;
}

/// What the single-process figures share: the flags, the report, the output folder and the
/// input.
struct Bench {
  const Args& args;
  Reporter& rep;
  const fs::path& root;
  const Input& in;
};

void print_header(const Bench& b, double metis_file_bytes) {
  const Args& args = b.args;
  const std::int64_t n = b.in.g.num_nodes(), m = b.in.g.num_edges();
  b.rep.header({{"graph", "rmat(scale=" + std::to_string(args.scale) +
                              ", edge_factor=" + std::to_string(args.edge_factor) +
                              ", symmetrize, seed=1), no self loops or duplicates"},
                {"n", std::to_string(n)},
                {"m", std::to_string(m) + " directed (" + std::to_string(m / 2) + " undirected)"},
                {"parts", std::to_string(args.parts)},
                {"threads", std::to_string(args.threads)},
                {"features", std::to_string(n) + " x " + std::to_string(args.feat_dim) +
                                 " float32 (" + mib(b.in.feat_bytes) + ")"},
                {"input_bytes", mib(b.in.input_bytes) + " = graph CSR + CSC " +
                                    mib(b.in.graph_bytes) + " + features"},
                {"gpmetis", args.gpmetis + " FILE " + std::to_string(args.parts) + " (" +
                                mib(metis_file_bytes) + " text file)"},
                {"runs", "best of " + std::to_string(args.runs)},
                {"output", b.root.string() + (args.keep.empty() ? " (removed at exit)" : "")}});
}

/// The params every single-process figure starts from.
json base_params(const Bench& b) {
  return {{"scale", b.args.scale},     {"edge_factor", b.args.edge_factor},
          {"n", b.in.g.num_nodes()},   {"m", b.in.g.num_edges()},
          {"parts", b.args.parts},     {"feat_dim", b.args.feat_dim},
          {"threads", b.args.threads}, {"runs", b.args.runs}};
}

/// gpmetis on the graph in `metis_file`, the best wall time of R runs; its files are removed.
GpmetisRun best_gpmetis(const Bench& b, const fs::path& metis_file) {
  GpmetisRun gp;
  gp.wall_s = std::numeric_limits<double>::infinity();
  for (int r = 0; r < b.args.runs; ++r) {
    b.rep.note("running gpmetis ...");
    const GpmetisRun one =
        run_gpmetis(b.args.gpmetis, metis_file, b.args.parts, b.root / "gpmetis.log");
    if (one.wall_s < gp.wall_s) gp = one;
  }
  fs::remove(metis_file);
  fs::remove(b.root / ("graph.metis.part." + std::to_string(b.args.parts)));
  fs::remove(b.root / "gpmetis.log");
  return gp;
}

/// Runs partition_graph with `options` into root/<sub> in a forked child holding the input,
/// best of R runs; `after` sees each run's output before it is removed.
json best_partition_run(const Bench& b, const std::string& sub,
                        const distgraph::PartitionOptions& options,
                        const std::function<void(const fs::path&)>& after) {
  json best;
  for (int r = 0; r < b.args.runs; ++r) {
    b.rep.note("partition_graph (" + sub + ") ...");
    const fs::path dir = b.root / sub;
    fs::remove_all(dir);
    json j = run_in_child([&] {
      distgraph::Stopwatch clock;
      const auto res =
          distgraph::partition_graph(b.in.g, "rmat", b.args.parts, dir, options, b.in.node_data);
      return result_json(res, clock.seconds());
    });
    if (best.is_null() || j["seconds"].get<double>() < best["seconds"].get<double>()) best = j;
    if (after) after(dir);
    fs::remove_all(dir);
  }
  return best;
}

/// partition_metis_time, partition_edge_cut and partition_peak_rss of the best METIS run.
void report_metis(const Bench& b, const json& params, const GpmetisRun& gp, const json& metis_run) {
  json tparams = params;
  tparams["gpmetis_wall_s"] = gp.wall_s;
  tparams["gpmetis_partitioning_s"] = gp.partitioning_s;
  tparams["gpmetis_io_s"] = gp.io_s;
  tparams["gpmetis_max_rss_bytes"] = gp.max_rss_bytes;
  tparams["stage_s"] = metis_run["stage_s"];
  tparams["target_ratio"] = 1 / 1.3;
  b.rep.add(Figure{.figure = "partition_metis_time",
                   .value = metis_run["seconds"].get<double>(),
                   .unit = "s",
                   .bound = gp.wall_s,
                   .bound_name = "gpmetis_wall",
                   .kind = Kind::time,
                   .params = tparams});
  json cparams = params;
  cparams["cross_edges_directed"] = metis_run["cross_edges"];
  cparams["node_balance"] = metis_run["node_balance"];
  cparams["edge_balance"] = metis_run["edge_balance"];
  cparams["target_ratio"] = 0.95;
  b.rep.add(Figure{.figure = "partition_edge_cut",
                   .value = metis_run["metis_edge_cut"].get<double>(),
                   .unit = "edges",
                   .bound = static_cast<double>(gp.edge_cut),
                   .bound_name = "gpmetis_edgecut",
                   .kind = Kind::time,
                   .params = cparams});
  json rparams = params;
  rparams["input_bytes"] = b.in.input_bytes;
  rparams["graph_bytes"] = b.in.graph_bytes;
  rparams["feature_bytes"] = b.in.feat_bytes;
  rparams["child_start_rss_bytes"] = metis_run["start_rss_bytes"];
  rparams["peak_reset"] = metis_run["peak_reset"];
  rparams["target_ratio"] = 1.0;
  b.rep.add(Figure{.figure = "partition_peak_rss",
                   .value = metis_run["peak_rss_bytes"].get<double>(),
                   .unit = "bytes",
                   .bound = 3 * b.in.input_bytes,
                   .bound_name = "3x_input_bytes",
                   .kind = Kind::time,
                   .params = rparams});
}

/// The best random run, and what it wrote and how fast plain writes of the same files were.
struct RandomRun {
  json best;
  std::vector<FileSize> files;
  std::uintmax_t out_bytes = 0;
  double write_s = std::numeric_limits<double>::infinity();
};

/// partition_random_time: partition_graph with random assignment, then the same bytes
/// written as plain files after each run.
RandomRun measure_random(const Bench& b, const json& params) {
  const unsigned T = b.args.threads;
  RandomRun run;
  run.best = best_partition_run(
      b, "random", {.method = distgraph::PartMethod::random, .seed = 7, .num_threads = T},
      [&](const fs::path& dir) {
        run.files = list_files(dir);
        fs::remove_all(dir);
        b.rep.note("writing the same bytes as plain files ...");
        const auto writers = static_cast<unsigned>(std::min<std::int64_t>(T, b.args.parts));
        run.write_s =
            std::min(run.write_s, write_files_seconds(b.root / "write_bound", run.files, writers));
        fs::remove_all(b.root / "write_bound");
      });
  for (const auto& f : run.files) run.out_bytes += f.bytes;
  json wparams = params;
  wparams["output_bytes"] = run.out_bytes;
  wparams["output_files"] = run.files.size();
  wparams["stage_s"] = run.best["stage_s"];
  wparams["peak_rss_bytes"] = run.best["peak_rss_bytes"];
  b.rep.add(Figure{.figure = "partition_random_time",
                   .value = run.best["seconds"].get<double>(),
                   .unit = "s",
                   .bound = run.write_s,
                   .bound_name = "write_same_files",
                   .kind = Kind::time,
                   .params = wparams});
  return run;
}

/// "relabel 0.12 s, ...": a run's stages as the notes list them.
std::string stage_list(const json& j) {
  std::string s;
  for (const auto& st : j["stage_s"])
    s += (s.empty() ? "" : ", ") + st[0].get<std::string>() + " " + fixed(st[1].get<double>(), 2) +
         " s";
  return s;
}

/// Readable details of where the time went.
void note_details(const Bench& b, const json& metis_run, const GpmetisRun& gp,
                  const RandomRun& random) {
  b.rep.note("METIS partition_graph: " + stage_list(metis_run) + "; peak RSS " +
             mib(metis_run["peak_rss_bytes"].get<double>()) + " (child started at " +
             mib(metis_run["start_rss_bytes"].get<double>()) + ", input " + mib(b.in.input_bytes) +
             (metis_run["peak_reset"].get<bool>() ? ")" : "; peak reset failed: includes parent)"));
  b.rep.note("gpmetis: wall " + fixed(gp.wall_s) + " s (I/O " + fixed(gp.io_s) +
             " s, partitioning " + fixed(gp.partitioning_s) + " s), edgecut " +
             std::to_string(gp.edge_cut) + ", max RSS " +
             mib(static_cast<double>(gp.max_rss_bytes)));
  b.rep.note("random partition_graph: " + stage_list(random.best) + "; " +
             std::to_string(random.files.size()) + " files, " +
             mib(static_cast<double>(random.out_bytes)) + " written; plain writes took " +
             fixed(random.write_s) + " s");
}

}  // namespace

int run(int argc, char** argv) {
  Reporter rep(argc, argv, "bench_partition");
  const Args args = parse(argc, argv);
  const OutputFolder out(args.keep);
  const fs::path& root = out.path();
  if (!args.distributed.empty()) return run_distributed(args, rep, root);

  rep.note("generating R-MAT and features ...");
  const Input in = make_input(args);
  const Bench b{args, rep, root, in};
  rep.note("writing the METIS graph file ...");
  const fs::path metis_file = root / "graph.metis";
  write_metis_graph(metis_file, in.g, args.threads);
  print_header(b, static_cast<double>(fs::file_size(metis_file)));
  const json params = base_params(b);
  const GpmetisRun gp = best_gpmetis(b, metis_file);
  const json metis_run = best_partition_run(
      b, "metis", {.method = distgraph::PartMethod::metis, .num_threads = args.threads}, nullptr);
  report_metis(b, params, gp, metis_run);
  const RandomRun random = measure_random(b, params);
  note_details(b, metis_run, gp, random);
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fail(e.what());
  }
}
