// distgraph: the command-line face of the library, one subcommand per workflow step.
#include <cstdio>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "cli.hpp"
#include "distgraph/core/error.hpp"

namespace {

#ifndef DISTGRAPH_CLI_TRAIN
int train_unavailable(std::vector<std::string>) {
  std::fprintf(stderr,
               "distgraph train: this distgraph was built without libtorch (install "
               "libtorch-dev and rebuild)\n");
  return 1;
}
#endif

struct Subcommand {
  const char* name;
  distgraph::cli::Command run;
  const char* summary;
};

const Subcommand subcommands[] = {
    {"info", distgraph::cli::run_info,
     "load the built-in SBM graph or a dataset folder and print its statistics"},
    {"partition", distgraph::cli::run_partition,
     "split a graph into partitions (METIS or random) and write the partition folder"},
    {"serve", distgraph::cli::run_serve,
     "run one server of a cluster machine (started by the launcher)"},
    {"launch", distgraph::cli::run_launch,
     "start servers and trainers on every machine of an ip config; stop them all at the end"},
    {"copy", distgraph::cli::run_copy,
     "copy each remote machine's partition files into its workspace (ssh + rsync)"},
#ifdef DISTGRAPH_CLI_TRAIN
    {"train", distgraph::cli::run_train,
     "train GraphSAGE on a dataset (the main job): standalone or on a loopback cluster"},
#else
    {"train", train_unavailable, "train GraphSAGE (needs a build with libtorch)"},
#endif
};

void print_usage() {
  std::printf("usage: distgraph <command> [options]   (distgraph <command> --help)\n\ncommands:\n");
  for (const auto& s : subcommands) std::printf("  %-10s %s\n", s.name, s.summary);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage();
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_usage();
    return 0;
  }
  for (const auto& s : subcommands) {
    if (name != s.name) continue;
    std::vector<std::string> args(argv + 2, argv + argc);
    // One-line errors and distinct exit codes: 2 for usage, 1 for everything else.
    try {
      return s.run(std::move(args));
    } catch (const distgraph::cli::UsageError& e) {
      std::fprintf(stderr, "distgraph %s\n", e.what());
      return 2;
    } catch (const distgraph::Error& e) {
      std::fprintf(stderr, "distgraph %s: %s\n", s.name, e.what());
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "distgraph %s: unexpected error: %s\n", s.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "distgraph: unknown command '%s' (see distgraph --help)\n", name.c_str());
  return 2;
}
