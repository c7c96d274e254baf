// Checks and batched row loops shared by every storage model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "distgraph/core/dtype.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/core/prefetch.hpp"
#include "distgraph/io/npy.hpp"
#include "distgraph/storage/concepts.hpp"
#include "distgraph/storage/row_locks.hpp"

namespace distgraph::detail {

/// Longest tensor name accepted; with ".npy" and a temporary suffix it stays a legal
/// file name (NAME_MAX is 255 on Linux).
inline constexpr std::size_t max_tensor_name_chars = 200;

/// "tensor 'feat'", the subject of every error about one tensor.
inline std::string tensor_subject(std::string_view name) {
  return "tensor '" + std::string(name) + "'";
}

/// Whether `c` may appear in a tensor name: [A-Za-z0-9_.:/-].
constexpr bool is_tensor_name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == ':' || c == '-' || c == '/';
}

/// The file name of tensor `name` ('/', typed data's separator, becomes '@', which no
/// name holds, so file_tensor_name inverts it).
inline std::string tensor_file_name(std::string_view name) {
  std::string f(name);
  for (char& c : f)
    if (c == '/') c = '@';
  return f;
}
inline std::string file_tensor_name(std::string_view file) {
  std::string n(file);
  for (char& c : n)
    if (c == '@') c = '/';
  return n;
}

/// Whether `name`, split at '/', has an empty, "." or ".." part: such names look like
/// paths and are refused ("a/b", typed data, is fine). A name without '/' is one part, so
/// "." and ".." themselves are refused too.
inline bool has_bad_segment(std::string_view name) {
  std::size_t b = 0;
  while (true) {
    const std::size_t e = name.find('/', b);
    const auto part = name.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b);
    if (part.empty() || part == "." || part == "..") return true;
    if (e == std::string_view::npos) return false;
    b = e + 1;
  }
}

/// Whether `name` is 1 to 200 characters of [A-Za-z0-9_.:/-] whose '/'-separated parts
/// are neither empty nor "." or ".." (has_bad_segment). Every model checks names
/// alike, so one that works in memory also works as a file name in an MmapStorage folder.
constexpr bool is_valid_tensor_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > max_tensor_name_chars) return false;
  for (char c : name)
    if (!is_tensor_name_char(c)) return false;
  return !has_bad_segment(name);
}

/// Throws InvalidArgument naming `name` and its fault unless is_valid_tensor_name(name).
inline void validate_tensor_name(std::string_view name) {
  if (is_valid_tensor_name(name)) return;
  std::string what;
  if (name.empty()) {
    what = "empty; expected 1 to 200 characters of [A-Za-z0-9_.:/-]";
  } else if (name.size() > max_tensor_name_chars) {
    what = std::to_string(name.size()) + " characters; expected at most 200";
  } else if (has_bad_segment(name)) {
    what =
        name.find('/') == std::string_view::npos
            ? std::string("a path component ('.' or '..'); expected a name")
            : std::string("an empty, '.' or '..' part between slashes; expected '<type>/<name>'");
  } else {
    for (char c : name)
      if (!is_tensor_name_char(c)) {
        what = "character '" + printable(std::string_view(&c, 1)) +
               "'; expected only [A-Za-z0-9_.:/-]";
        break;
      }
  }
  throw InvalidArgument("tensor name '" + printable(name) + "': " + what);
}

/// "(10, 4) float32", for messages.
inline std::string layout_string(const TensorSpec& s) {
  // Appending, not "(" + std::to_string(...): GCC 12 warns falsely about the latter
  // (-Wrestrict, GCC bug 105329).
  std::string out = "(";
  out += std::to_string(s.rows);
  out += ", ";
  out += std::to_string(s.cols);
  out += ") ";
  out += dtype_name(s.dtype);
  return out;
}

/// Throws InvalidArgument for a bad name and ShapeError for negative rows, fewer than one
/// column or a byte size that overflows.
inline void validate_spec(const TensorSpec& spec) {
  validate_tensor_name(spec.name);
  const std::int64_t shape[] = {spec.rows, spec.cols};
  if (spec.cols < 1 || !checked_num_elements(shape, dtype_size(spec.dtype)))
    throw ShapeError(tensor_subject(spec.name),
                     "shape " + layout_string(spec) +
                         "; expected rows >= 0, cols >= 1 and a size below 2^63 bytes");
}

/// Throws DTypeError or ShapeError when `existing` (a tensor of the requested name) has
/// another dtype or shape than `requested`.
inline void require_same_layout(const TensorSpec& existing, const TensorSpec& requested) {
  if (existing.dtype != requested.dtype)
    throw DTypeError(tensor_subject(requested.name),
                     "exists with dtype " + std::string(dtype_name(existing.dtype)) +
                         "; requested " + std::string(dtype_name(requested.dtype)));
  if (!existing.same_layout(requested))
    throw ShapeError(
        tensor_subject(requested.name),
        "exists with shape " + layout_string(existing) + "; requested " + layout_string(requested));
}

/// Throws ShapeError unless `bytes` is exactly the size of a tensor of `spec`.
inline void require_fill_bytes(const TensorSpec& spec, std::size_t bytes) {
  if (bytes != spec.size_bytes())
    throw ShapeError(tensor_subject(spec.name),
                     "initial data of " + std::to_string(bytes) + " bytes; expected " +
                         std::to_string(spec.size_bytes()) + " for " + layout_string(spec));
}

/// The spec of tensor `name` holding the array `a`: rank 1 is one column, higher ranks
/// flatten the trailing dimensions into columns. Throws ShapeError naming the file for a
/// rank-0 array, InvalidArgument for a bad name.
inline TensorSpec spec_from_npy(std::string_view name, const NpyArray& a) {
  if (a.header.shape.empty())
    throw ShapeError(a.path, "rank-0 array; expected (rows,) or (rows, cols, ...)");
  TensorSpec spec{.name = std::string(name), .dtype = a.header.dtype, .rows = a.header.shape[0]};
  spec.cols = 1;
  for (std::size_t i = 1; i < a.header.shape.size(); ++i) spec.cols *= a.header.shape[i];
  if (spec.cols < 1)
    throw ShapeError(a.path, "shape " + shape_string(a.header.shape) +
                                 " has no columns; expected every dimension after the first >= 1");
  validate_spec(spec);
  return spec;
}

/// Adds `src` (unaligned bytes) to the row `dst` element-wise. Integers wrap (two's
/// complement) rather than overflow, which would be undefined.
template <class T>
void add_row(T* dst, const std::byte* src, std::size_t cols) noexcept {
  for (std::size_t j = 0; j < cols; ++j) {
    T v;
    std::memcpy(&v, src + j * sizeof(T), sizeof(T));
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      dst[j] = static_cast<T>(static_cast<U>(dst[j]) + static_cast<U>(v));
    } else {
      dst[j] += v;
    }
  }
}

/// One tensor's rows in memory (heap or a shared mapping) and the batched, validated row
/// operations of the Storage concept on them. Models own the memory; this only views it.
struct TensorRows {
  TensorSpec spec;
  std::byte* data = nullptr;
  /// Offsets the tensor's rows in the lock table (stripe_salt of the name).
  std::uint64_t salt = 0;
  /// tensor_subject(spec.name), built once for error messages.
  std::string subject;

  TensorRows() = default;
  TensorRows(TensorSpec s, std::byte* d)
      : spec(std::move(s)),
        data(d),
        salt(stripe_salt(spec.name)),
        subject(tensor_subject(spec.name)) {}

  /// Copies rows `rows` into `out` in request order, each row atomically.
  void read(const RowLockTable& locks, std::span<const std::int64_t> rows,
            std::span<std::byte> out) const {
    check_batch(rows, out.size(), "output");
    const std::size_t rb = spec.row_bytes();
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (i + prefetch_rows_ahead < rows.size()) prefetch_row(rows[i + prefetch_rows_ahead], rb);
      locks.read(rows[i], salt, out.data() + i * rb, row_ptr(rows[i]), rb, subject.c_str());
    }
  }

  /// Copies row rows[i] to row slot at[i] of `out` (a whole number of rows), each row
  /// atomically: a grouped request's scatter folded into the one copy.
  void read_at(const RowLockTable& locks, std::span<const std::int64_t> rows,
               std::span<const std::size_t> at, std::span<std::byte> out) const {
    const std::size_t rb = spec.row_bytes();
    if (at.size() != rows.size() || out.size() % rb != 0)
      throw ShapeError(subject, "scattered read of " + std::to_string(rows.size()) + " rows to " +
                                    std::to_string(at.size()) + " slots of " +
                                    std::to_string(out.size()) +
                                    " bytes; expected one slot per row and whole rows of " +
                                    std::to_string(rb) + " bytes");
    const std::size_t slots = out.size() / rb;
    bool bad = false;
    for (const std::size_t a : at) bad |= a >= slots;
    if (bad)
      for (const std::size_t a : at)
        if (a >= slots)
          throw IdOutOfRange(subject + " output slot", static_cast<std::int64_t>(a), 0,
                             static_cast<std::int64_t>(slots));
    check_batch(rows, rows.size() * rb, "scattered read");
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (i + prefetch_rows_ahead < rows.size()) prefetch_row(rows[i + prefetch_rows_ahead], rb);
      locks.read(rows[i], salt, out.data() + at[i] * rb, row_ptr(rows[i]), rb, subject.c_str());
    }
  }

  /// Replaces each listed row atomically, in listing order (a duplicate's last listing wins).
  void write(const RowLockTable& locks, std::span<const std::int64_t> rows,
             std::span<const std::byte> in) const {
    check_batch(rows, in.size(), "input");
    const std::size_t rb = spec.row_bytes();
    for (std::size_t i = 0; i < rows.size(); ++i) {
      std::byte* dst = row_ptr(rows[i]);
      const std::byte* src = in.data() + i * rb;
      locks.write(rows[i], salt, subject.c_str(), [&]() noexcept { std::memcpy(dst, src, rb); });
    }
  }

  /// Adds `in` to each listed row atomically (every listing of a duplicate adds). Throws
  /// DTypeError unless the dtype is float32, float64, int32 or int64.
  void add(const RowLockTable& locks, std::span<const std::int64_t> rows,
           std::span<const std::byte> in) const {
    switch (spec.dtype) {
      case DType::float32:
        return add_as<float>(locks, rows, in);
      case DType::float64:
        return add_as<double>(locks, rows, in);
      case DType::int32:
        return add_as<std::int32_t>(locks, rows, in);
      case DType::int64:
        return add_as<std::int64_t>(locks, rows, in);
      default:
        throw DTypeError(subject, "add_rows on dtype " + std::string(dtype_name(spec.dtype)) +
                                      "; expected float32, float64, int32 or int64");
    }
  }

 private:
  std::byte* row_ptr(std::int64_t row) const noexcept {
    return data + static_cast<std::size_t>(row) * spec.row_bytes();
  }

  /// Asks for the cache lines of `row` (row_bytes `rb`) without waiting: a hint only, so
  /// it needs no seqlock; the copy that follows is still validated as always.
  void prefetch_row(std::int64_t row, std::size_t rb) const noexcept {
    prefetch_lines(row_ptr(row), rb);
  }

  template <class T>
  void add_as(const RowLockTable& locks, std::span<const std::int64_t> rows,
              std::span<const std::byte> in) const {
    check_batch(rows, in.size(), "input");
    const std::size_t rb = spec.row_bytes();
    const auto cols = static_cast<std::size_t>(spec.cols);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      // Rows are aligned for T: the data starts 64-byte (heap) or page + dtype-multiple
      // (mapping) aligned, and row_bytes is a multiple of sizeof(T).
      T* dst = reinterpret_cast<T*>(row_ptr(rows[i]));
      const std::byte* src = in.data() + i * rb;
      locks.write(rows[i], salt, subject.c_str(), [&]() noexcept { add_row(dst, src, cols); });
    }
  }

  /// Validates a whole batch before any row is touched: the byte span's size, then every
  /// row ID (the first bad one is named).
  void check_batch(std::span<const std::int64_t> rows, std::size_t bytes, const char* what) const {
    const std::size_t rb = spec.row_bytes();
    std::size_t need = 0;
    if (__builtin_mul_overflow(rows.size(), rb, &need) || need != bytes)
      throw ShapeError(subject, std::string(what) + " of " + std::to_string(bytes) + " bytes for " +
                                    std::to_string(rows.size()) + " rows; expected " +
                                    std::to_string(rows.size()) + " x " + std::to_string(rb) +
                                    " bytes (" + std::to_string(spec.cols) + " x " +
                                    std::string(dtype_name(spec.dtype)) + " per row)");
    // One branch-free pass; the slow pass only runs to name the culprit.
    const auto n = static_cast<std::uint64_t>(spec.rows);
    bool bad = false;
    for (const std::int64_t r : rows) bad |= static_cast<std::uint64_t>(r) >= n;
    if (bad)
      for (const std::int64_t r : rows)
        if (static_cast<std::uint64_t>(r) >= n) throw IdOutOfRange(subject, r, 0, spec.rows);
  }
};

/// The calls of the Storage concept that every model spells the same way, written once
/// (CRTP): create, create_from_npy and the batched row calls. `Derived` provides
/// `create_filled(spec, bytes, fill)` (the model's create), `find(name)` (a pointer-like
/// handle to an entry with a TensorRows member `rows` that keeps the tensor alive for the
/// call; throws NotFound), `row_locks()` (its RowLockTable) and `generations()` (its
/// GenerationTable, bumped here after every write, add and create; the model bumps it in
/// remove), and befriends this class to keep them private.
template <class Derived>
class StorageCalls {
 public:
  /// Makes a zero-filled tensor and returns true; returns false when a tensor of that
  /// name, dtype and shape exists (its data is left as it is). Throws InvalidArgument for
  /// a bad name, ShapeError or DTypeError (naming the tensor) for a bad or different
  /// layout, and what the model throws when memory or disk runs out. Thread-safe.
  bool create(const TensorSpec& spec) {
    return created(spec, self().create_filled(spec, {}, false));
  }

  /// Like create(spec), then copies `bytes` (spec.size_bytes() bytes, row-major) into the
  /// new tensor before any other caller can see it. An existing tensor of the same layout
  /// is left untouched. Throws ShapeError when `bytes` has another size, before anything
  /// is created.
  bool create(const TensorSpec& spec, std::span<const std::byte> bytes) {
    return created(spec, self().create_filled(spec, bytes, true));
  }

  /// Creates tensor `name` from the `.npy` file `npy` (one copy of its data); rank 1 is
  /// one column, higher ranks flatten into columns. Returns as create(). Throws what
  /// read_npy throws (naming the file), ShapeError for a rank-0 array, and what create
  /// throws.
  bool create_from_npy(std::string_view name, const std::filesystem::path& npy) {
    const NpyArray a = read_npy(npy);
    return create(spec_from_npy(name, a), a.bytes.span());
  }

  /// Copies rows `rows` of tensor `name` into `out` (rows.size() x row_bytes bytes) in
  /// request order, each row atomically (across processes where the storage is shared).
  /// Throws NotFound, ShapeError for a wrong `out` size, IdOutOfRange for a row outside
  /// [0, rows) (nothing copied). Thread-safe; does not allocate.
  void read_rows(std::string_view name, std::span<const std::int64_t> rows,
                 std::span<std::byte> out) const {
    self().find(name)->rows.read(self().row_locks(), rows, out);
  }

  /// Copies row rows[i] of tensor `name` into row slot at[i] of `out` (whole rows), each
  /// atomically: read_rows and a scatter in one copy (a client reassembling rows of several
  /// owners in request order). Throws as read_rows, ShapeError when `at` and `rows` differ
  /// in length or `out` is not whole rows, IdOutOfRange for a slot past `out` (nothing
  /// copied). Thread-safe; does not allocate. Optional in the Storage concept.
  void read_rows_at(std::string_view name, std::span<const std::int64_t> rows,
                    std::span<const std::size_t> at, std::span<std::byte> out) const {
    self().find(name)->rows.read_at(self().row_locks(), rows, at, out);
  }

  /// Replaces rows `rows` of tensor `name` with `in`, each atomically, in listing order
  /// (a row listed twice ends as its last listing). Throws as read_rows; on a throw
  /// nothing was written. Thread-safe.
  void write_rows(std::string_view name, std::span<const std::int64_t> rows,
                  std::span<const std::byte> in) {
    const auto entry = self().find(name);
    entry->rows.write(self().row_locks(), rows, in);
    self().generations().bump(entry->rows.salt);
  }

  /// Adds `in` to rows `rows` of tensor `name`, each atomically: concurrent adds never
  /// lose an update, and a row listed twice gets both additions. Throws as write_rows
  /// and DTypeError for dtypes other than float32, float64, int32 and int64.
  void add_rows(std::string_view name, std::span<const std::int64_t> rows,
                std::span<const std::byte> in) {
    const auto entry = self().find(name);
    entry->rows.add(self().row_locks(), rows, in);
    self().generations().bump(entry->rows.salt);
  }

  /// The write generation of tensor `name` (whether or not it exists): it changes after
  /// every write, add, create and remove of the tensor, in any process sharing the storage
  /// (and sometimes after another tensor's: see GenerationTable). Read it before reading
  /// the tensor; if it has not changed since, neither has the tensor. Thread-safe, one
  /// atomic load. Optional in the Storage concept (VersionedStorage).
  std::uint64_t generation(std::string_view name) const noexcept {
    return self().generations().get(stripe_salt(name));
  }

 private:
  bool created(const TensorSpec& spec, bool made) {
    if (made) self().generations().bump(stripe_salt(spec.name));
    return made;
  }
  Derived& self() noexcept { return static_cast<Derived&>(*this); }
  const Derived& self() const noexcept { return static_cast<const Derived&>(*this); }
};

}  // namespace distgraph::detail
