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

/// A trainer and a server were built with compositions that disagree (a sampler the
/// server lacks, a book that assigns IDs differently); names the server and what differs.
class CompositionMismatch : public Error {
 public:
  explicit CompositionMismatch(const std::string& what) : Error(what) {}
};

/// A trainer's world size (from its launcher's or scheduler's variables) differs from the
/// number of trainers its servers were started for; the message names both numbers and
/// where each came from.
class WorldSizeMismatch : public Error {
 public:
  WorldSizeMismatch(const std::string& what, std::int32_t world_size, std::int32_t server_trainers)
      : Error(what), world_size_(world_size), server_trainers_(server_trainers) {}
  std::int32_t world_size() const noexcept { return world_size_; }
  std::int32_t server_trainers() const noexcept { return server_trainers_; }

 private:
  std::int32_t world_size_, server_trainers_;
};

/// A named object (tensor, feature, node type, server) does not exist.
class NotFound : public Error {
 public:
  NotFound(std::string subject, const std::string& what)
      : Error(subject + ": " + what), subject_(std::move(subject)) {}
  const std::string& subject() const noexcept { return subject_; }

 private:
  std::string subject_;
};

/// A peer sent bytes that do not follow the wire protocol (bad magic, version, lengths).
class ProtocolError : public Error {
 public:
  explicit ProtocolError(const std::string& what) : Error(what) {}
};

/// A frame announced a payload above the configured maximum; nothing was allocated.
class FrameTooLarge : public ProtocolError {
 public:
  FrameTooLarge(const std::string& subject, std::uint64_t bytes, std::uint64_t limit)
      : ProtocolError(subject + ": frame of " + std::to_string(bytes) + " bytes; the limit is " +
                      std::to_string(limit) + " bytes"),
        bytes_(bytes),
        limit_(limit) {}
  std::uint64_t bytes() const noexcept { return bytes_; }
  std::uint64_t limit() const noexcept { return limit_; }

 private:
  std::uint64_t bytes_, limit_;
};

/// A call's deadline passed before its reply arrived (or a connect never succeeded).
class TimeoutError : public Error {
 public:
  explicit TimeoutError(const std::string& what) : Error(what) {}
};

/// The connection to a peer broke (closed, reset, refused) while a call needed it.
class PeerLost : public Error {
 public:
  explicit PeerLost(const std::string& what) : Error(what) {}
};

/// A peer refused the shared-secret handshake, or a client failed it.
class AuthError : public Error {
 public:
  explicit AuthError(const std::string& what) : Error(what) {}
};

/// A compute device failed a trainer: out of GPU memory, a CUDA error. The message names
/// the trainer, the device and, for memory, the allocation that did not fit.
class DeviceError : public Error {
 public:
  explicit DeviceError(const std::string& what) : Error(what) {}
};

}  // namespace distgraph
