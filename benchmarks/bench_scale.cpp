// bench_scale: the scale run on one machine (issue 21): a 4-million-node graph partitioned,
// trained for one epoch on a loopback cluster and inferred layer-wise over every node, each
// step the real `distgraph` command a user runs, with the memory of every process measured.
//
//   bench_scale [--scale S] [--edge-factor K] [--cli PATH] [--gpmetis PATH] [--keep DIR] [--json]
//
// The dataset (support/rmat_dataset.hpp, the bench_train one at a larger scale): R-MAT scale S
// (default 22: 4.2M nodes), edge factor K (16), symmetrized, no self loops or duplicates;
// 100-dim standard-normal float32 features, 47 random classes, 10% of the nodes for
// training. Generated in a forked child and written as a dataset folder plus a METIS graph
// file, so this process never holds the graph. Then, in order (docs/SCALE.md has the same
// commands):
//   distgraph partition --input DATA --parts 2 --method metis --out PART --json
//   distgraph train DATA --part-config PART/rmatS.json --parts 2 --epochs 1 --hidden 256
//       --fanouts 10,25 --batch-size 1000 --json --out RUN
//       (2 loopback machines x (1 server + 1 trainer), GraphSAGE-mean, the default recipe)
//   distgraph infer --checkpoint RUN --part-config PART/rmatS.json --output both --out INFER --json
//       (layer-wise inference over every node on the same cluster shape)
// Figures (times in seconds, memory in bytes; all kinds "lower is better", ratio = bound/value):
//   scale_partition_s        wall time of `distgraph partition` (loading the dataset folder,
//                            METIS, writing both partitions); bound: bare `gpmetis FILE 2` on
//                            the same graph as a METIS text file (reading it, partitioning,
//                            writing FILE.part.2), as bench_partition measures it.
//   scale_partition_peak_rss peak RSS of `distgraph partition` (wait4's ru_maxrss); bound:
//                            gpmetis's own peak RSS on the same graph.
//   scale_epoch_s            the training epoch (trainer 0's epoch_s); bound: the forward and
//                            backward seconds of the same epoch on the same trainer (compute_s:
//                            what no prefetching of samples or rows can hide).
//   scale_infer_s            `distgraph infer`'s layer-wise pass over all nodes (infer_s: every
//                            layer, before writing the .npy files); bound: the same layers'
//                            dense compute on all N nodes (each SAGE layer's two [N, in] x
//                            [in, out] products), in row chunks, on every core of this machine.
//   scale_peak_rss_trainer   the largest peak RSS of any trainer process of the train and infer
//                            runs (the launcher's processes.json); bound: the same trainer
//                            program doing nothing (`distgraph infer --help`: libtorch loaded).
//   scale_peak_rss_server    the largest peak RSS of any server process of both runs; bound:
//                            what that server must hold: its partition's files plus, for
//                            inference, one row per owned node of every layer's output
//                            (hidden + classes floats).
#include <sys/resource.h>
#include <sys/wait.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "distgraph/core/timer.hpp"
#include "distgraph/io/dataset.hpp"
#include "support/child.hpp"
#include "support/flags.hpp"
#include "support/gpmetis.hpp"
#include "support/report.hpp"
#include "support/rmat_dataset.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#ifndef DISTGRAPH_CLI
#define DISTGRAPH_CLI "distgraph"
#endif

namespace {

namespace fs = std::filesystem;
using distgraph::bench::Figure;
using distgraph::bench::Kind;
using distgraph::bench::Reporter;
using nlohmann::json;

struct Args {
  int scale = 22;
  int edge_factor = 16;
  std::string cli = DISTGRAPH_CLI;
  std::string gpmetis = "/usr/bin/gpmetis";
  std::string keep;  ///< non-empty: work (and keep everything) here
};

Args parse(int argc, char** argv) {
  Args a;
  distgraph::bench::Flags("bench_scale")
      .add("--scale", a.scale, 8, 26)
      .add("--edge-factor", a.edge_factor, 1, 256)
      .add("--cli", a.cli, "PATH")
      .add("--gpmetis", a.gpmetis, "PATH")
      .add("--keep", a.keep, "DIR")
      .parse(argc, argv);
  return a;
}

constexpr std::int64_t feat_dim = 100, classes = 47, hidden = 256;

std::string mib(double bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.0f MiB", bytes / (1 << 20));
  return s;
}

/// One command run to the end: its JSON stdout lines, wall seconds and peak RSS (of the
/// command and whatever it waited for, wait4's ru_maxrss). Throws unless it exited 0.
struct CommandRun {
  std::vector<json> lines;
  double seconds = 0;
  double peak_rss_bytes = 0;
};
CommandRun run_command(const Reporter& rep, const std::vector<std::string>& argv) {
  std::string command;
  for (const auto& s : argv) command += (command.empty() ? "" : " ") + s;
  rep.note("running " + command);
  CommandRun out;
  struct rusage ru {};
  distgraph::Stopwatch clock;
  const int status = distgraph::bench::run_lines(
      argv,
      [&](const std::string& line) {
        auto j = json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (j.is_object()) out.lines.push_back(std::move(j));
      },
      &ru);
  out.seconds = clock.seconds();
  out.peak_rss_bytes = static_cast<double>(ru.ru_maxrss) * 1024;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("`" + command + "` failed (wait status " + std::to_string(status) +
                             ")");
  rep.note("  done in " + std::to_string(out.seconds) + " s");
  return out;
}

/// The launcher's processes.json in `dir`: the largest peak RSS of its servers and trainers.
struct ProcessPeaks {
  double server = 0, trainer = 0;
  json processes;
};
ProcessPeaks process_peaks(const fs::path& dir) {
  std::ifstream in(dir / "processes.json");
  if (!in) throw std::runtime_error((dir / "processes.json").string() + ": missing");
  ProcessPeaks p;
  const json j = json::parse(in);
  p.processes = j["processes"];
  for (const auto& proc : p.processes) {
    const auto rss = proc["peak_rss_bytes"].get<double>();
    double& slot = proc["server"].get<bool>() ? p.server : p.trainer;
    slot = std::max(slot, rss);
  }
  return p;
}

/// Bytes of every file under `dir`.
double folder_bytes(const fs::path& dir) {
  double bytes = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) bytes += static_cast<double>(e.file_size());
  return bytes;
}

/// Seconds of the dense part of a 2-layer GraphSAGE-mean forward pass on `n` nodes
/// (feat_dim -> hidden -> classes; per layer fc_self and fc_neigh, [rows, in] x [in, out]),
/// in chunks of 64Ki rows on every core, after one warm-up chunk.
double dense_compute_seconds(std::int64_t n) {
  const int before = torch::get_num_threads();
  torch::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  torch::manual_seed(0);
  constexpr std::int64_t chunk = 1 << 16;
  const std::vector<std::pair<std::int64_t, std::int64_t>> layers = {{feat_dim, hidden},
                                                                     {hidden, classes}};
  std::vector<torch::Tensor> x, w_self, w_neigh;
  for (const auto& [in, out] : layers) {
    x.push_back(torch::randn({chunk, in}));
    w_self.push_back(torch::randn({in, out}));
    w_neigh.push_back(torch::randn({in, out}));
  }
  auto one_chunk = [&](std::int64_t rows) {
    for (std::size_t l = 0; l < layers.size(); ++l) {
      const auto h = x[l].narrow(0, 0, rows);
      const auto y = torch::mm(h, w_self[l]) + torch::mm(h, w_neigh[l]);
      (void)y.sum().item<float>();
    }
  };
  one_chunk(chunk);
  distgraph::Stopwatch clock;
  for (std::int64_t done = 0; done < n; done += chunk) one_chunk(std::min(chunk, n - done));
  const double s = clock.seconds();
  torch::set_num_threads(before);
  return s;
}

/// Where each step reads and writes, under the work folder.
struct Paths {
  fs::path work, data_dir, metis_file, part_dir, run_dir, infer_dir;
  Paths(const fs::path& w, int scale)
      : work(w),
        data_dir(w / ("rmat" + std::to_string(scale))),
        metis_file(w / "graph.metis"),
        part_dir(w / "partition"),
        run_dir(w / "run"),
        infer_dir(w / "infer") {}
};

/// The dataset folder and the METIS file, made in a forked child so that this process never
/// holds the graph and stays small: the child's summary and peak RSS.
json generate_dataset(const Args& args, const Paths& paths) {
  return distgraph::bench::run_in_child([&] {
    distgraph::Stopwatch clock;
    distgraph::Graph g;
    const distgraph::Dataset d = distgraph::bench::rmat_dataset({.scale = args.scale,
                                                                 .edge_factor = args.edge_factor,
                                                                 .feat_dim = feat_dim,
                                                                 .classes = classes},
                                                                &g);
    const double generate_s = clock.seconds();
    clock.reset();
    distgraph::write_dataset(paths.data_dir, d);
    distgraph::bench::write_metis_graph(paths.metis_file, g, distgraph::default_num_threads());
    std::int64_t train = 0;
    for (std::size_t v = 0; v < d.train_mask.size(); ++v) train += d.train_mask[v] ? 1 : 0;
    return json{{"nodes", d.num_nodes},
                {"edges", d.num_edges()},
                {"train_nodes", train},
                {"generate_s", generate_s},
                {"write_s", clock.seconds()}};
  });
}

/// The header, and how long the generator took and how much memory it used.
void print_header(const Reporter& rep, const Args& args, const Paths& paths, const json& gen) {
  rep.header({{"graph", "rmat(scale=" + std::to_string(args.scale) +
                            ", edge_factor=" + std::to_string(args.edge_factor) +
                            ", seed=1) symmetrized, no self loops or duplicates"},
              {"n", std::to_string(gen["nodes"].get<std::int64_t>())},
              {"m", std::to_string(gen["edges"].get<std::int64_t>()) + " directed"},
              {"data", "100-dim float32 features, 47 classes, " +
                           std::to_string(gen["train_nodes"].get<std::int64_t>()) +
                           " training nodes; " + mib(folder_bytes(paths.data_dir)) + " on disk"},
              {"cluster", "2 loopback machines x (1 server + 1 trainer), METIS 2 parts"},
              {"recipe", "GraphSAGE-mean, hidden 256, fanouts 10,25, batch 1000, 1 epoch"},
              {"cores", std::to_string(std::thread::hardware_concurrency())},
              {"output", paths.work.string() + (args.keep.empty() ? " (removed at exit)" : "")}});
  rep.note("generated in " + std::to_string(gen["generate_s"].get<double>()) + " s, written in " +
           std::to_string(gen["write_s"].get<double>()) + " s; generator peak RSS " +
           mib(gen["peak_rss_bytes"].get<double>()));
}

/// What every figure runs from: the flags, the report, the folders, the params every figure
/// starts from and gpmetis's run on the same graph (the partitioning bounds).
struct Bench {
  const Args& args;
  Reporter& rep;
  const Paths& paths;
  json params;
  distgraph::bench::GpmetisRun gp;
};

/// `distgraph partition`'s run and its summary (the partition config, each part's size).
struct PartitionRun {
  CommandRun command;
  json summary;
  fs::path config;
};

/// scale_partition_s and scale_partition_peak_rss, against gpmetis.
PartitionRun measure_partition(Bench& b) {
  const Args& args = b.args;
  const Paths& paths = b.paths;
  PartitionRun part;
  part.command =
      run_command(b.rep, {args.cli, "partition", "--input", paths.data_dir.string(), "--parts", "2",
                          "--method", "metis", "--out", paths.part_dir.string(), "--json"});
  if (part.command.lines.empty())
    throw std::runtime_error("distgraph partition printed no summary");
  part.summary = part.command.lines.back();
  part.config = part.summary["config"].get<std::string>();
  json pparams = b.params;
  pparams["stage_s"] = part.summary["stage_s"];
  pparams["edge_cut"] = part.summary["edge_cut"];
  pparams["gpmetis_edge_cut"] = b.gp.edge_cut;
  pparams["gpmetis_partitioning_s"] = b.gp.partitioning_s;
  pparams["gpmetis_io_s"] = b.gp.io_s;
  b.rep.add(Figure{.figure = "scale_partition_s",
                   .value = part.command.seconds,
                   .unit = "s",
                   .bound = b.gp.wall_s,
                   .bound_name = "gpmetis_wall",
                   .kind = Kind::time,
                   .params = pparams});
  b.rep.add(Figure{.figure = "scale_partition_peak_rss",
                   .value = part.command.peak_rss_bytes,
                   .unit = "bytes",
                   .bound = static_cast<double>(b.gp.max_rss_bytes),
                   .bound_name = "gpmetis_peak_rss",
                   .kind = Kind::time,
                   .params = b.params});
  return part;
}

/// scale_epoch_s: one epoch of `distgraph train` against trainer 0's compute; the run.
CommandRun measure_epoch(Bench& b, const PartitionRun& part) {
  const CommandRun train = run_command(
      b.rep, {b.args.cli, "train", b.paths.data_dir.string(), "--part-config", part.config.string(),
              "--parts", "2", "--epochs", "1", "--hidden", std::to_string(hidden), "--fanouts",
              "10,25", "--batch-size", "1000", "--json", "--out", b.paths.run_dir.string()});
  const json* epoch = nullptr;
  for (const auto& j : train.lines)
    if (j.contains("epoch_s")) epoch = &j;
  if (epoch == nullptr) throw std::runtime_error("distgraph train printed no epoch line");
  json tparams = b.params;
  for (const char* k :
       {"sample_s", "fetch_s", "compute_s", "allreduce_s", "remote_rows", "remote_bytes", "loss"})
    if (epoch->contains(k)) tparams[k] = (*epoch)[k];
  tparams["command_s"] = train.seconds;
  b.rep.add(Figure{.figure = "scale_epoch_s",
                   .value = (*epoch)["epoch_s"].get<double>(),
                   .unit = "s",
                   .bound = (*epoch)["compute_s"].get<double>(),
                   .bound_name = "trainer0_compute",
                   .kind = Kind::time,
                   .params = tparams});
  return train;
}

/// scale_infer_s: `distgraph infer` over every node against the same layers' dense compute.
void measure_infer(Bench& b, const PartitionRun& part, std::int64_t n) {
  const CommandRun infer =
      run_command(b.rep, {b.args.cli, "infer", "--checkpoint", b.paths.run_dir.string(),
                          "--part-config", part.config.string(), "--output", "both", "--out",
                          b.paths.infer_dir.string(), "--json"});
  if (infer.lines.empty()) throw std::runtime_error("distgraph infer printed no result");
  const json& ij = infer.lines.back();
  b.rep.note("dense-compute bound on " + std::to_string(n) + " nodes ...");
  const double dense_s = dense_compute_seconds(n);
  json iparams = b.params;
  for (const char* k : {"layer_s", "write_s", "seconds"})
    if (ij.contains(k)) iparams[k] = ij[k];
  iparams["command_s"] = infer.seconds;
  b.rep.add(Figure{.figure = "scale_infer_s",
                   .value = ij["infer_s"].get<double>(),
                   .unit = "s",
                   .bound = dense_s,
                   .bound_name = "dense_sage_layers_all_nodes",
                   .kind = Kind::time,
                   .params = iparams});
}

/// What the largest server must hold: its partition's files plus, for inference, one row per
/// owned node of every layer's output (hidden + classes floats).
double server_need_bytes(const PartitionRun& part) {
  double need = 0;
  for (const auto& p : part.summary["parts"]) {
    const auto part_id = p["part"].get<std::int64_t>();
    const double files =
        folder_bytes(part.config.parent_path() / ("part" + std::to_string(part_id)));
    const double outputs =
        static_cast<double>(p["nodes"].get<std::int64_t>()) * (hidden + classes) * 4.0;
    need = std::max(need, files + outputs);
  }
  return need;
}

/// scale_peak_rss_trainer and scale_peak_rss_server: the memory of every process of both runs.
void measure_memory(Bench& b, const PartitionRun& part, const CommandRun& train) {
  const ProcessPeaks tp = process_peaks(b.paths.run_dir), ip = process_peaks(b.paths.infer_dir);
  const CommandRun bare = run_command(b.rep, {b.args.cli, "infer", "--help"});
  json mparams = b.params;
  mparams["train_processes"] = tp.processes;
  mparams["infer_processes"] = ip.processes;
  mparams["train_launcher_s"] = train.seconds;
  b.rep.add(Figure{.figure = "scale_peak_rss_trainer",
                   .value = std::max(tp.trainer, ip.trainer),
                   .unit = "bytes",
                   .bound = bare.peak_rss_bytes,
                   .bound_name = "bare_trainer_program",
                   .kind = Kind::time,
                   .params = mparams});
  b.rep.add(Figure{.figure = "scale_peak_rss_server",
                   .value = std::max(tp.server, ip.server),
                   .unit = "bytes",
                   .bound = server_need_bytes(part),
                   .bound_name = "partition_files_plus_layer_outputs",
                   .kind = Kind::time,
                   .params = mparams});
  b.rep.note("peak RSS: train run trainer " + mib(tp.trainer) + ", server " + mib(tp.server) +
             "; infer run trainer " + mib(ip.trainer) + ", server " + mib(ip.server) +
             "; partition " + mib(part.command.peak_rss_bytes) + " (gpmetis " +
             mib(static_cast<double>(b.gp.max_rss_bytes)) + ")");
}

int run(int argc, char** argv) {
  Reporter rep(argc, argv, "bench_scale");
  const Args args = parse(argc, argv);
  if (!fs::exists(args.cli))
    throw std::runtime_error("no distgraph program at " + args.cli + " (give --cli PATH)");
  const distgraph::bench::WorkDir work(args.keep, "distgraph-bench-scale");
  const Paths paths(work.path, args.scale);

  rep.note("generating R-MAT scale " + std::to_string(args.scale) + " and its dataset folder ...");
  const json gen = generate_dataset(args, paths);
  const auto n = gen["nodes"].get<std::int64_t>();
  print_header(rep, args, paths, gen);

  rep.note("running gpmetis ...");
  const auto gp =
      distgraph::bench::run_gpmetis(args.gpmetis, paths.metis_file, 2, paths.work / "gpmetis.log");
  fs::remove(paths.metis_file);
  fs::remove(paths.work / "graph.metis.part.2");
  Bench b{.args = args,
          .rep = rep,
          .paths = paths,
          .params = {{"scale", args.scale},
                     {"edge_factor", args.edge_factor},
                     {"n", n},
                     {"m", gen["edges"].get<std::int64_t>()},
                     {"feat_dim", feat_dim},
                     {"parts", 2},
                     {"trainers", 2}},
          .gp = gp};

  const PartitionRun part = measure_partition(b);
  const CommandRun train = measure_epoch(b, part);
  measure_infer(b, part, n);
  measure_memory(b, part, train);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_scale: %s\n", e.what());
    return 1;
  }
}
