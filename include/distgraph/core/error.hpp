// Typed exceptions under one root, distgraph::Error; each carries the object at fault.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace distgraph {

/// Root of every exception distgraph throws. Messages read
/// `<subject>: <what is wrong>; <what was expected>`.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// A file or folder is missing or cannot be read or written. `path()` names it.
class IoError : public Error {
 public:
  IoError(std::string path, const std::string& what)
      : Error(path + ": " + what), path_(std::move(path)) {}
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

/// A file's contents are malformed: bad magic, garbled header, truncated data,
/// inconsistent lengths. `path()` names the file.
class FormatError : public Error {
 public:
  FormatError(std::string path, const std::string& what)
      : Error(path + ": " + what), path_(std::move(path)) {}
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

/// A tensor or file has a dtype other than the one required or supported.
class DTypeError : public Error {
 public:
  DTypeError(std::string subject, const std::string& what)
      : Error(subject + ": " + what), subject_(std::move(subject)) {}
  const std::string& subject() const noexcept { return subject_; }

 private:
  std::string subject_;
};

/// Array shapes or lengths disagree with each other or with a declared size.
class ShapeError : public Error {
 public:
  ShapeError(std::string subject, const std::string& what)
      : Error(subject + ": " + what), subject_(std::move(subject)) {}
  const std::string& subject() const noexcept { return subject_; }

 private:
  std::string subject_;
};

/// An ID (node, edge, partition, label, type) lies outside its valid range.
class IdOutOfRange : public Error {
 public:
  IdOutOfRange(std::string subject, std::int64_t value, std::int64_t lo, std::int64_t hi)
      : Error(subject + ": id " + std::to_string(value) + " out of range; expected [" +
              std::to_string(lo) + ", " + std::to_string(hi) + ")"),
        subject_(std::move(subject)),
        value_(value),
        lo_(lo),
        hi_(hi) {}
  const std::string& subject() const noexcept { return subject_; }
  std::int64_t value() const noexcept { return value_; }
  std::int64_t lower() const noexcept { return lo_; }
  std::int64_t upper() const noexcept { return hi_; }

 private:
  std::string subject_;
  std::int64_t value_, lo_, hi_;
};

/// A caller passed an argument outside the function's contract (e.g. zero parts).
class InvalidArgument : public Error {
 public:
  explicit InvalidArgument(const std::string& what) : Error(what) {}
};

/// Partitioning failed or a partition's files disagree with its config.
class PartitionError : public Error {
 public:
  explicit PartitionError(const std::string& what) : Error(what) {}
};

}  // namespace distgraph
