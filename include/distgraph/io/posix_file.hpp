// POSIX file helpers for the readers of io/, storage/ and server/: a regular file opened
// for reading, full positioned reads (the descriptor, full writes and durable replacement
// are core/durable_file.hpp's).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <utility>

#include "distgraph/core/durable_file.hpp"
#include "distgraph/core/error.hpp"

namespace distgraph::detail {

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

}  // namespace distgraph::detail
