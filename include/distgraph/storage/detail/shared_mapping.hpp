// POSIX pieces of MmapStorage: a MAP_SHARED mapping, a folder-wide flock and the lock file.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <utility>

#include "distgraph/core/error.hpp"
#include "distgraph/io/posix_file.hpp"
#include "distgraph/storage/row_locks.hpp"

namespace distgraph::detail {

/// A whole file mapped MAP_SHARED, read-write: stores reach every process mapping the same
/// file (and the file). Unmapped on destruction; the mapping stays valid after the file
/// is unlinked. An empty file maps nothing (`data() == nullptr`). Move-only.
class SharedMapping {
 public:
  SharedMapping() = default;
  /// Maps `size` bytes of the open file `fd`; `prefault` also builds all page-table
  /// entries now (MAP_POPULATE). Throws IoError naming `path`.
  SharedMapping(int fd, std::size_t size, const std::string& path, bool prefault = false)
      : size_(size) {
    if (size == 0) return;
    const int flags = MAP_SHARED | (prefault ? MAP_POPULATE : 0);
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, flags, fd, 0);
    if (p == MAP_FAILED) throw IoError(path, errno_message("cannot mmap shared", errno));
    data_ = static_cast<std::byte*>(p);
  }
  SharedMapping(SharedMapping&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  SharedMapping& operator=(SharedMapping&& o) noexcept {
    if (this != &o) {
      unmap();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;
  ~SharedMapping() { unmap(); }

  std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }

 private:
  void unmap() noexcept {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = nullptr;
  }
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

/// Opens `path` with `flags` (O_CLOEXEC added). Returns an invalid descriptor when the
/// file is missing and `missing_ok`; otherwise throws IoError naming the path.
inline FileDescriptor open_file(const std::string& path, int flags, bool missing_ok = false,
                                mode_t mode = 0644) {
  FileDescriptor fd(::open(path.c_str(), flags | O_CLOEXEC, mode));
  if (fd.get() < 0 && !(missing_ok && errno == ENOENT))
    throw IoError(path, errno_message("cannot open", errno));
  return fd;
}

/// An flock on the lock file, held until destruction. Each holder opens the file itself:
/// flock belongs to the open file description, which fork() would share between parent
/// and child, so a descriptor kept open across calls would not exclude a forked child.
class FileLock {
 public:
  /// Locks `path` (which must exist) exclusively or shared. Throws IoError.
  FileLock(const std::string& path, bool exclusive) : fd_(open_file(path, O_RDWR)) {
    while (::flock(fd_.get(), exclusive ? LOCK_EX : LOCK_SH) != 0)
      if (errno != EINTR) throw IoError(path, errno_message("cannot flock", errno));
  }
  int fd() const noexcept { return fd_.get(); }

 private:
  // Closing the descriptor releases the lock.
  FileDescriptor fd_;
};

/// Layout of an MmapStorage folder's `.locks` file: a 64-byte header, then
/// row_lock_stripes sequence counters, then generation_stripes write generations
/// (docs/concepts/Storage.md).
struct LockFileHeader {
  char magic[8];
  std::uint64_t stripes;
  /// Bumped by every remove(), so processes know their cached mappings may be stale.
  std::uint64_t epoch;
  std::uint64_t reserved[5];
};
static_assert(sizeof(LockFileHeader) == 64);

inline constexpr char lock_file_magic[8] = {'D', 'G', 'S', 'L', 'O', 'C', 'K', '2'};
inline constexpr std::size_t lock_file_generations_offset =
    sizeof(LockFileHeader) + row_lock_stripes * sizeof(std::uint64_t);
inline constexpr std::size_t lock_file_bytes =
    lock_file_generations_offset + generation_stripes * sizeof(std::uint64_t);

/// Checks the `.locks` file open as `fd` (size, magic, stripe count); when `init` and the
/// file is empty, writes a fresh header and zero counters first. The caller holds the
/// file's flock. Throws FormatError naming `path` for a file of another layout.
inline void prepare_lock_file(int fd, const std::string& path, bool init) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw IoError(path, errno_message("cannot stat", errno));
  if (st.st_size == 0 && init) {
    LockFileHeader h{};
    std::memcpy(h.magic, lock_file_magic, sizeof h.magic);
    h.stripes = row_lock_stripes;
    if (::ftruncate(fd, static_cast<off_t>(lock_file_bytes)) != 0)
      throw IoError(path, errno_message("cannot size the lock file", errno));
    write_all(fd, std::as_bytes(std::span(&h, 1)), path);
    return;
  }
  if (static_cast<std::uint64_t>(st.st_size) != lock_file_bytes)
    throw FormatError(path, "lock file of " + std::to_string(st.st_size) + " bytes; expected " +
                                std::to_string(lock_file_bytes));
  LockFileHeader h{};
  pread_all(fd, std::as_writable_bytes(std::span(&h, 1)), 0, path);
  if (std::memcmp(h.magic, lock_file_magic, sizeof h.magic) != 0)
    throw FormatError(path, "bad magic; expected DGSLOCK2 (an MmapStorage lock file of this "
                            "version; DGSLOCK1 files have no write generations)");
  if (h.stripes != row_lock_stripes)
    throw FormatError(path, std::to_string(h.stripes) + " lock stripes; expected " +
                                std::to_string(row_lock_stripes));
}

}  // namespace distgraph::detail
