// distgraph: the command-line face of the library, one subcommand per workflow step.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include <metis.h>

#include <boost/version.hpp>

#include "cli.hpp"
#include "distgraph/core/error.hpp"
#include "run_command.hpp"
#include "version_info.hpp"

namespace {

/// `distgraph train` and `distgraph infer` run the separate programs `distgraph-train` and
/// `distgraph-infer` beside this one: only they link libtorch, so servers and the other
/// subcommands start without loading it.
int exec_torch_program(const char* command, const std::string& program,
                       std::vector<std::string> args) {
  const std::string path = distgraph::cli::sibling_program(program);
  std::vector<char*> argv{const_cast<char*>(path.c_str())};
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(path.c_str(), argv.data());
  std::fprintf(stderr,
               "distgraph %s: cannot run %s (%s); it is built with libtorch: install "
               "libtorch-dev and rebuild\n",
               command, path.c_str(), std::strerror(errno));
  return 1;
}

int exec_train(std::vector<std::string> args) {
  return exec_torch_program("train", "distgraph-train", std::move(args));
}

int exec_infer(std::vector<std::string> args) {
  return exec_torch_program("infer", "distgraph-infer", std::move(args));
}

struct Subcommand {
  const char* name;
  distgraph::cli::Command run;
  const char* summary;
};

const Subcommand subcommands[] = {
    {"info", distgraph::cli::run_info,
     "load the built-in SBM graph or a dataset folder and print its statistics"},
    {"chunk", distgraph::cli::run_chunk,
     "write a dataset folder as a chunked graph folder (partition --distributed reads it)"},
    {"partition", distgraph::cli::run_partition,
     "split a graph into partitions (METIS or random) and write the partition folder"},
    {"serve", distgraph::cli::run_serve,
     "run one server of a cluster machine (started by the launcher)"},
    {"launch", distgraph::cli::run_launch,
     "start servers and trainers on every machine of an ip config; stop them all at the end"},
    {"copy", distgraph::cli::run_copy,
     "copy each remote machine's partition files into its workspace (ssh + rsync)"},
    {"lease", distgraph::cli::run_lease,
     "run a program while the launcher's heartbeats arrive on stdin (the launcher's remote end)"},
    {"train", exec_train,
     "train GraphSAGE on a dataset (the main job): standalone or on a loopback cluster"},
    {"infer", exec_infer,
     "every node's embedding and predicted class from a trained run (layer-wise inference)"},
};

/// What a bug report needs: the version, the commit and the libraries this was built with.
void print_version() {
  std::printf("distgraph %s (commit %s)\n", DISTGRAPH_VERSION, DISTGRAPH_COMMIT);
  std::printf("built with libtorch %s, Boost %d.%d.%d, METIS %d.%d.%d, %s\n",
              DISTGRAPH_TORCH_VERSION, BOOST_VERSION / 100000, BOOST_VERSION / 100 % 1000,
              BOOST_VERSION % 100, METIS_VER_MAJOR, METIS_VER_MINOR, METIS_VER_SUBMINOR,
#if defined(__clang__)
              "clang " __clang_version__
#elif defined(__GNUC__)
              "GCC " __VERSION__
#else
              "an unknown compiler"
#endif
  );
}

void print_usage() {
  std::printf("usage: distgraph <command> [options]   (distgraph <command> --help; distgraph "
              "--version)\n\ncommands:\n");
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
  if (name == "--version" || name == "version") {
    print_version();
    return 0;
  }
  for (const auto& s : subcommands) {
    if (name != s.name) continue;
    return distgraph::cli::run_command(s.name, s.run,
                                       std::vector<std::string>(argv + 2, argv + argc));
  }
  std::fprintf(stderr, "distgraph: unknown command '%s' (see distgraph --help)\n", name.c_str());
  return 2;
}
