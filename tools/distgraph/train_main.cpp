// distgraph-train: `distgraph train` (cmd_train.cpp) as a program of its own, the only one
// that links libtorch; `distgraph train ARGS` runs `distgraph-train ARGS`.
#include <string>
#include <vector>

#include "cli.hpp"
#include "run_command.hpp"

int main(int argc, char** argv) {
  return distgraph::cli::run_command("train", distgraph::cli::run_train,
                                     std::vector<std::string>(argv + 1, argv + argc));
}
