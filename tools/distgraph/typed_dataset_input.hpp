// The typed inputs every subcommand accepts: a typed dataset folder or the built-in "hsbm".
#pragma once

#include <filesystem>
#include <string>

#include "distgraph/io/hetero_dataset.hpp"
#include "distgraph/io/hetero_synthetic.hpp"

namespace distgraph::cli {

/// True when `input` names a typed graph: "hsbm" or a folder in the typed layout.
inline bool is_hetero_input(const std::string& input) {
  if (input == "hsbm") return true;
  std::error_code ec;
  return std::filesystem::is_directory(input, ec) && is_hetero_dataset(input);
}

/// The typed graph `input` names (see is_hetero_input).
inline HeteroDataset load_hetero_input(const std::string& input) {
  return input == "hsbm" ? hsbm_dataset() : load_hetero_dataset(input);
}

}  // namespace distgraph::cli
