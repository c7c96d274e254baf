// POSIX file helpers for io/: an owning descriptor, full reads and writes, atomic replace.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>

#include "distgraph/core/error.hpp"

namespace distgraph::detail {

/// "<what>: <strerror(err)>", e.g. "cannot open: No such file or directory".
inline std::string errno_message(const char* what, int err) {
  return std::string(what) + ": " + std::strerror(err);
}

/// An owned file descriptor, closed on destruction (errors on that close are ignored;
/// writers call close() themselves to see them).
class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) noexcept : fd_(fd) {}
  FileDescriptor(FileDescriptor&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  FileDescriptor& operator=(FileDescriptor&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() { reset(); }

  int get() const noexcept { return fd_; }
  /// Closes the descriptor; returns 0 or the errno of a failed close.
  int close() noexcept {
    if (fd_ < 0) return 0;
    const int rc = ::close(std::exchange(fd_, -1));
    return rc == 0 ? 0 : errno;
  }

 private:
  void reset() noexcept {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  }
  int fd_ = -1;
};

/// Opens `path` read-only and checks it is a regular file. Returns the descriptor and
/// its size. Throws IoError naming the path (missing, a folder, permission denied).
inline std::pair<FileDescriptor, std::uint64_t> open_regular_file(
    const std::filesystem::path& path) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw IoError(path.string(), errno_message("cannot open", errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    throw IoError(path.string(), errno_message("cannot stat", errno));
  if (S_ISDIR(st.st_mode)) throw IoError(path.string(), "is a folder; expected a file");
  if (!S_ISREG(st.st_mode)) throw IoError(path.string(), "not a regular file");
  return {std::move(fd), static_cast<std::uint64_t>(st.st_size)};
}

/// Reads exactly `out.size()` bytes at `offset`. Throws IoError on error or early EOF.
inline void pread_all(int fd, std::span<std::byte> out, std::uint64_t offset,
                      const std::string& path) {
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n =
        ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError(path, errno_message("cannot read", errno));
    }
    if (n == 0)
      throw IoError(path, "file shrank while reading: got " + std::to_string(done) + " of " +
                              std::to_string(out.size()) + " bytes");
    done += static_cast<std::size_t>(n);
  }
}

/// Writes all of `bytes`, retrying partial writes. Throws IoError naming `path`.
inline void write_all(int fd, std::span<const std::byte> bytes, const std::string& path) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError(path, errno_message("cannot write", errno));
    }
    done += static_cast<std::size_t>(n);
  }
}

/// Replaces `path` with the concatenation of `pieces`: writes `<path>.tmp-<pid>-<n>`,
/// fsyncs, closes and renames it over `path`, so readers see the old file or the whole
/// new one. Throws IoError naming `path`; the temporary file is removed on failure.
inline void write_file_atomically(const std::filesystem::path& path,
                                  std::initializer_list<std::span<const std::byte>> pieces) {
  static std::atomic<unsigned> counter{0};
  const std::string target = path.string();
  const std::string tmp =
      target + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  FileDescriptor fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) throw IoError(target, errno_message("cannot create temporary file", errno));
  try {
    for (auto piece : pieces) write_all(fd.get(), piece, target);
    if (::fsync(fd.get()) != 0) throw IoError(target, errno_message("cannot fsync", errno));
    if (const int err = fd.close(); err != 0)
      throw IoError(target, errno_message("cannot close", err));
    if (::rename(tmp.c_str(), target.c_str()) != 0)
      throw IoError(target, errno_message("cannot rename temporary file into place", errno));
  } catch (...) {
    fd.close();
    ::unlink(tmp.c_str());
    throw;
  }
}

}  // namespace distgraph::detail
