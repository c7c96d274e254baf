// NpyRowFile: a .npy array filled row by row in any order, published under its name only
// when complete.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "distgraph/core/dtype.hpp"
#include "distgraph/core/durable_file.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/io/npy.hpp"

namespace distgraph {

/// A [rows, cols] (cols 0: [rows]) .npy file of `dtype` written into a temporary file
/// beside `path` (its header first, the rest mapped), rows placed at any index with
/// put_row; publish() syncs it and renames it to `path`. Destroyed unpublished, the
/// temporary file is removed: a run killed or failing midway leaves no file under `path`
/// (nor, unless killed, the temporary one). Not thread-safe; movable neither.
class NpyRowFile {
 public:
  /// Throws IoError naming the temporary file when it cannot be created, sized or mapped.
  NpyRowFile(std::filesystem::path path, DType dtype, std::int64_t rows, std::int64_t cols)
      : path_(std::move(path)),
        tmp_(path_.string() + ".tmp-" + std::to_string(::getpid())),
        row_bytes_(static_cast<std::size_t>(cols > 0 ? cols : 1) * dtype_size(dtype)),
        rows_(rows) {
    std::vector<std::int64_t> shape{rows};
    if (cols > 0) shape.push_back(cols);
    const std::string header = npy_header_bytes(dtype, shape, path_.string());
    header_bytes_ = header.size();
    fd_ = ::open(tmp_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw IoError(tmp_, std::string("cannot create: ") + std::strerror(errno));
    size_ = header_bytes_ + static_cast<std::size_t>(rows) * row_bytes_;
    if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) fail("cannot size");
    void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) fail("cannot map");
    data_ = static_cast<std::byte*>(p);
    std::memcpy(data_, header.data(), header.size());
  }
  NpyRowFile(const NpyRowFile&) = delete;
  NpyRowFile& operator=(const NpyRowFile&) = delete;
  ~NpyRowFile() {
    release();
    if (!published_) ::unlink(tmp_.c_str());
  }

  /// Copies one row (row_bytes() bytes at `src`) to index `row`. Throws IdOutOfRange
  /// outside [0, rows).
  void put_row(std::int64_t row, const void* src) {
    if (row < 0 || row >= rows_) throw IdOutOfRange(path_.string() + " row", row, 0, rows_);
    std::memcpy(data_ + header_bytes_ + static_cast<std::size_t>(row) * row_bytes_, src,
                row_bytes_);
  }
  std::size_t row_bytes() const noexcept { return row_bytes_; }

  /// Writes the file out, syncs it and renames it to its final name. Throws IoError.
  void publish() {
    if (::msync(data_, size_, MS_SYNC) != 0 || ::fsync(fd_) != 0) fail("cannot write");
    release();
    publish_file(tmp_, path_);
    published_ = true;
  }

 private:
  [[noreturn]] void fail(const char* what) {
    const std::string why = std::strerror(errno);
    release();
    ::unlink(tmp_.c_str());  // the constructor may be failing: no destructor will
    throw IoError(tmp_, std::string(what) + ": " + why);
  }
  void release() noexcept {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = nullptr;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  std::filesystem::path path_;
  std::string tmp_;
  std::size_t row_bytes_ = 0, header_bytes_ = 0, size_ = 0;
  std::int64_t rows_ = 0;
  int fd_ = -1;
  std::byte* data_ = nullptr;
  bool published_ = false;
};

}  // namespace distgraph
