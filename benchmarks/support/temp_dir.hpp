// A benchmark's scratch folder: made empty at start, removed with everything in it at the end.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
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

/// A benchmark's working folder: a fresh temporary one named after `stem` and the process,
/// removed with everything in it on destruction; or `keep` when non-empty (emptied first and
/// kept, for profiling the programs on the same files afterwards).
struct WorkDir {
  std::filesystem::path path;
  bool remove = true;
  WorkDir(const std::string& keep, const std::string& stem)
      : path(keep.empty() ? std::filesystem::temp_directory_path() /
                                (stem + "-" + std::to_string(::getpid()))
                          : std::filesystem::path(keep)),
        remove(keep.empty()) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~WorkDir() {
    std::error_code ec;
    if (remove) std::filesystem::remove_all(path, ec);
  }
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
};

}  // namespace distgraph::bench
