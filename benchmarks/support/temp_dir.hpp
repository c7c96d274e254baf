// A benchmark's scratch folder: made empty at start, removed with everything in it at the end.
#pragma once

#include <filesystem>
#include <system_error>

namespace distgraph::bench {

/// A temporary folder at `p` (emptied first), removed with everything in it on destruction.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::filesystem::path& p) : path(p) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace distgraph::bench
