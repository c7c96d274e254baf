// Test helpers: a self-deleting temporary folder and the path to ../shared/data.
#pragma once

#include <atomic>
#include <filesystem>
#include <random>
#include <string>
#include <unistd.h>

namespace distgraph::test {

/// A fresh folder under the system temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("distgraph-test-" + std::to_string(::getpid()) + "-" +
             std::to_string(counter++) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

/// The shared datasets folder, or an empty path if it is absent.
inline std::filesystem::path shared_data_dir() {
  std::filesystem::path p = DISTGRAPH_SHARED_DATA;
  return std::filesystem::is_directory(p) ? p : std::filesystem::path{};
}

}  // namespace distgraph::test

/// Skips the current test (Catch2 v2 has no SKIP) unless ../shared/data/<name> exists.
#define DISTGRAPH_REQUIRE_DATASET(dir_var, name)                                   \
  const std::filesystem::path dir_var = [] {                                      \
    auto d = ::distgraph::test::shared_data_dir();                                \
    return d.empty() ? d : d / (name);                                            \
  }();                                                                            \
  if (dir_var.empty() || !std::filesystem::is_directory(dir_var)) {               \
    WARN("SKIPPED: dataset '" << (name) << "' not found under " DISTGRAPH_SHARED_DATA); \
    return;                                                                       \
  }
