// distgraph-infer: `distgraph infer` (cmd_infer.cpp) as a program of its own, linking
// libtorch; `distgraph infer ARGS` runs `distgraph-infer ARGS`.
#include <string>
#include <vector>

#include "cli.hpp"
#include "run_command.hpp"

int main(int argc, char** argv) {
  return distgraph::cli::run_command("infer", distgraph::cli::run_infer,
                                     std::vector<std::string>(argv + 1, argv + argc));
}
