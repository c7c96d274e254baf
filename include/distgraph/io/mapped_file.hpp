// MappedFile: a whole file mapped copy-on-write, shared by the buffers that view it.
#pragma once

#include <sys/mman.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <span>
#include <string>

#include "distgraph/core/error.hpp"
#include "distgraph/io/posix_file.hpp"

namespace distgraph {

/// A regular file mapped into memory with MAP_PRIVATE and PROT_READ | PROT_WRITE: pages
/// are read from disk on first touch, and writes through `data()` go to private
/// copy-on-write pages, never to the file. Copies of a MappedFile share one mapping,
/// which is unmapped when the last copy and the last Buffer made from `owner()` go away.
/// An empty file has `size() == 0` and `data() == nullptr` (nothing is mapped).
/// Thread-safe to share; the mapped bytes follow Buffer's rules. If another process
/// truncates the file while it is mapped, touching the lost pages raises SIGBUS (POSIX).
class MappedFile {
 public:
  MappedFile() = default;

  /// Maps all of `path`. Throws IoError naming the path when it is missing, a folder,
  /// not readable (with the system's reason) or cannot be mapped.
  explicit MappedFile(const std::filesystem::path& path) {
    auto [fd, size] = detail::open_regular_file(path);
    if (size > std::numeric_limits<std::size_t>::max())
      throw IoError(path.string(), "file of " + std::to_string(size) + " bytes is too large");
    auto mapping = std::make_shared<Mapping>();
    mapping->path = path.string();
    if (size > 0) {
      // MAP_NORESERVE: the pages are only charged to swap if the caller writes them.
      void* p = ::mmap(nullptr, static_cast<std::size_t>(size), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_NORESERVE, fd.get(), 0);
      if (p == MAP_FAILED)
        throw IoError(path.string(), detail::errno_message("cannot mmap", errno));
      mapping->data = static_cast<std::byte*>(p);
      mapping->size = static_cast<std::size_t>(size);
    }
    mapping_ = std::move(mapping);
  }

  /// First byte of the mapping (writable copy-on-write), nullptr when empty or default.
  std::byte* data() const noexcept { return mapping_ ? mapping_->data : nullptr; }
  /// Length of the file in bytes when it was mapped.
  std::size_t size() const noexcept { return mapping_ ? mapping_->size : 0; }
  std::span<std::byte> bytes() const noexcept { return {data(), size()}; }
  /// The path the file was opened with ("" for a default-constructed MappedFile).
  const std::string& path() const noexcept {
    static const std::string none;
    return mapping_ ? mapping_->path : none;
  }
  /// Keep-alive handle for Buffer views into the mapping.
  std::shared_ptr<const void> owner() const noexcept { return mapping_; }
  explicit operator bool() const noexcept { return mapping_ != nullptr; }

 private:
  struct Mapping {
    std::byte* data = nullptr;
    std::size_t size = 0;
    std::string path;
    Mapping() = default;
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    ~Mapping() {
      if (data != nullptr) ::munmap(data, size);
    }
  };
  std::shared_ptr<Mapping> mapping_;
};

}  // namespace distgraph
