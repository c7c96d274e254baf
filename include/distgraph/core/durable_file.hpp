// Files replaced durably: a reader, a killed process and a machine that loses power all
// find the previous file or the whole new one, never a torn or empty one.
//
// The order is what makes it so: write a temporary file beside the target, fsync it,
// rename it over the target, then fsync the folder (the rename is a change of the folder:
// without that fsync it may not survive a crash, and without the first one the rename
// may reach the disk before the data). Every writer of the library that publishes a file
// goes through publish_file / write_file_durably, also on tmpfs (/dev/shm), where the
// fsyncs cost nothing, so that no writer is an exception. Paths are strings (a
// std::filesystem::path converts): core/trace.hpp includes this, and stays cheap to include.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "distgraph/core/error.hpp"

namespace distgraph {
namespace detail {

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

/// fsync of the open descriptor `fd` of `path`; throws IoError naming `path`.
inline void sync_descriptor(int fd, const std::string& path) {
  while (::fsync(fd) != 0) {
    if (errno == EINTR) continue;
    throw IoError(path, errno_message("cannot fsync", errno));
  }
}

/// A fresh temporary name beside `target` (unique within the process and across processes).
inline std::string temporary_beside(const std::string& target) {
  static std::atomic<unsigned> counter{0};
  return target + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

/// The folder that holds `path` ("." for a bare name, "/" for one in the root).
inline std::string folder_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace detail

/// fsyncs the folder `dir`, so that entries created or renamed in it survive a crash.
/// Throws IoError naming it.
inline void sync_folder(const std::string& dir) {
  const std::string d = dir.empty() ? std::string(".") : dir;
  detail::FileDescriptor fd(::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) throw IoError(d, detail::errno_message("cannot open folder", errno));
  detail::sync_descriptor(fd.get(), d);
}

/// Publishes `tmp`, a file the caller wrote and closed (or a folder of such files, each
/// already published into it), as `target`: fsyncs it, renames it over `target` (a folder
/// `target` must not exist) and fsyncs the folder that holds `target`. Throws IoError
/// naming `target`; `tmp` is left for the caller to remove.
inline void publish_file(const std::string& tmp, const std::string& target) {
  {
    detail::FileDescriptor fd(::open(tmp.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0)
      throw IoError(target, detail::errno_message("cannot open the temporary file", errno));
    detail::sync_descriptor(fd.get(), target);
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0)
    throw IoError(target,
                  detail::errno_message("cannot rename the temporary file into place", errno));
  sync_folder(detail::folder_of(target));
}

/// Replaces `path` durably with the concatenation of `pieces` (see the top of the file).
/// Throws IoError naming `path`; the temporary file is removed on failure.
inline void write_file_durably(const std::string& path,
                               std::initializer_list<std::span<const std::byte>> pieces) {
  const std::string tmp = detail::temporary_beside(path);
  detail::FileDescriptor fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0)
    throw IoError(path, detail::errno_message("cannot create temporary file", errno));
  try {
    for (auto piece : pieces) detail::write_all(fd.get(), piece, path);
    detail::sync_descriptor(fd.get(), path);
    if (const int err = fd.close(); err != 0)
      throw IoError(path, detail::errno_message("cannot close", err));
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      throw IoError(path, detail::errno_message("cannot rename temporary file into place", errno));
    sync_folder(detail::folder_of(path));
  } catch (...) {
    fd.close();
    ::unlink(tmp.c_str());
    throw;
  }
}

/// write_file_durably of one piece of text (or bytes in a string).
inline void write_file_durably(const std::string& path, std::string_view text) {
  write_file_durably(path, {std::as_bytes(std::span(text.data(), text.size()))});
}

}  // namespace distgraph
