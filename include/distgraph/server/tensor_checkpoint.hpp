// TensorCheckpoint: a server's own rows of named tensors saved to, and loaded from, its
// checkpoint folder, so that nothing funnels a whole table through one trainer.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "distgraph/core/dtype.hpp"
#include "distgraph/core/durable_file.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/io/npy.hpp"
#include "distgraph/io/posix_file.hpp"
#include "distgraph/server/protocol.hpp"
#include "distgraph/storage/concepts.hpp"

namespace distgraph {

/// True for a checkpoint tag a client may name: 1 to 128 of [A-Za-z0-9_.-], starting
/// with a letter or digit. Tags become one folder name under the server's checkpoint
/// folder, so nothing a client sends can point elsewhere.
inline bool is_valid_checkpoint_tag(std::string_view tag) {
  if (tag.empty() || tag.size() > 128) return false;
  const auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (!alnum(tag.front())) return false;
  return std::all_of(tag.begin(), tag.end(),
                     [&](char c) { return alnum(c) || c == '_' || c == '.' || c == '-'; });
}

/// The file a tensor is saved in: its name with every byte outside [A-Za-z0-9_-] (and a
/// '.' anywhere) written as %XX, plus ".npy". Injective, and never a path.
inline std::string tensor_file_name(std::string_view name) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
        c == '-') {
      out += ch;
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out + ".npy";
}

/// A partition and the graph's and partition's sizes: the start of a server's metadata,
/// and what saved rows must agree with to be loaded back (a checkpoint's meta.json).
struct CheckpointOwner {
  std::int64_t part_id = 0, num_parts = 1;
  std::int64_t num_nodes = 0, num_edges = 0;
  std::int64_t owned_nodes = 0, owned_edges = 0;

  nlohmann::json to_json() const {
    return {{"part_id", part_id},     {"num_parts", num_parts},     {"num_nodes", num_nodes},
            {"num_edges", num_edges}, {"owned_nodes", owned_nodes}, {"owned_edges", owned_edges}};
  }
};

/// One partition's checkpoints under a folder the server operator chose:
/// `<root>/<tag>/part-<P>/` holds `meta.json` and one `.npy` of local rows per tensor
/// (docs/FORMATS.md). Saving writes a staging folder and renames it into place, so a
/// tag's folder is always complete. Not thread-safe: the caller serialises calls.
class TensorCheckpoint {
 public:
  TensorCheckpoint(std::filesystem::path root, CheckpointOwner owner)
      : root_(std::move(root)), owner_(owner) {}

  const std::filesystem::path& root() const noexcept { return root_; }

  /// The folder of `tag` for this partition; InvalidArgument for a malformed tag.
  std::filesystem::path folder(std::string_view tag) const {
    check_tag(tag);
    return root_ / std::string(tag) / ("part-" + std::to_string(owner_.part_id));
  }

  /// Saves tensors `names` of `storage` (each must exist: NotFound) under `tag`, plus,
  /// with `with_state`, each one's sparse optimizer state that exists. Replaces an
  /// earlier save of the same tag. Throws IoError naming the file that failed.
  template <Storage S>
  void save(const S& storage, std::string_view tag, const std::vector<std::string>& names,
            bool with_state) const {
    const auto dir = folder(tag);
    std::vector<std::string> all;
    for (const auto& n : names) {
      if (!storage.contains(n)) throw NotFound("tensor '" + n + "'", "no such tensor to save");
      all.push_back(n);
      if (with_state)
        for (auto suffix : SparseState::all)
          if (storage.contains(n + std::string(suffix))) all.push_back(n + std::string(suffix));
    }
    std::filesystem::create_directories(dir.parent_path());
    const auto staging = dir.parent_path() /
                         (".staging-" + dir.filename().string() + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(staging);
    std::filesystem::create_directory(staging);
    try {
      nlohmann::json tensors = nlohmann::json::array();
      for (const auto& n : all) {
        const TensorSpec spec = storage.spec(n);
        write_rows_npy(storage, spec, staging / tensor_file_name(n));
        tensors.push_back({{"name", n},
                           {"dtype", std::string(dtype_name(spec.dtype))},
                           {"rows", spec.rows},
                           {"cols", spec.cols}});
      }
      nlohmann::json meta = {{"format", "distgraph-tensor-checkpoint"},
                             {"version", 1},
                             {"tag", std::string(tag)},
                             {"owner", owner_.to_json()},
                             {"tensors", tensors}};
      const std::string text = meta.dump(2) + "\n";
      write_file_durably(staging / "meta.json", {std::as_bytes(std::span(text))});
      // Swap the complete folder in; an earlier save of this tag goes only afterwards.
      const auto old = dir.parent_path() /
                       (".old-" + dir.filename().string() + "-" + std::to_string(::getpid()));
      std::filesystem::remove_all(old);
      if (std::filesystem::exists(dir)) std::filesystem::rename(dir, old);
      std::filesystem::rename(staging, dir);
      sync_folder(dir.parent_path());
      std::filesystem::remove_all(old);
    } catch (const std::filesystem::filesystem_error& e) {
      std::error_code ec;
      std::filesystem::remove_all(staging, ec);
      throw IoError(e.path1().string(), e.code().message());
    } catch (...) {
      std::error_code ec;
      std::filesystem::remove_all(staging, ec);
      throw;
    }
  }

  /// Loads tensors `names` saved under `tag` into `storage`, creating those that do not
  /// exist. With `with_state`, each one's saved optimizer state is loaded too, and state
  /// that exists now but was not saved is zeroed (as if it had never been created).
  /// Throws NotFound (no such tag or tensor), PartitionError (saved by another partition
  /// or graph), FormatError/ShapeError/DTypeError (files that do not match meta.json or
  /// the tensor in storage).
  template <Storage S>
  void load(S& storage, std::string_view tag, const std::vector<std::string>& names,
            bool with_state) const {
    const auto dir = folder(tag);
    const auto meta_path = dir / "meta.json";
    if (!std::filesystem::exists(meta_path))
      throw NotFound("checkpoint '" + std::string(tag) + "'",
                     "partition " + std::to_string(owner_.part_id) + " has no such checkpoint in " +
                         root_.string());
    nlohmann::json meta;
    try {
      meta = nlohmann::json::parse(std::ifstream(meta_path));
    } catch (const nlohmann::json::exception& e) {
      throw FormatError(meta_path.string(), e.what());
    }
    if (!meta.is_object()) throw FormatError(meta_path.string(), "not a JSON object");
    if (meta.value("owner", nlohmann::json()) != owner_.to_json())
      throw PartitionError(meta_path.string() + ": saved for " +
                           meta.value("owner", nlohmann::json()).dump() + "; this server has " +
                           owner_.to_json().dump() + " (another partitioning or graph)");
    const nlohmann::json listed = meta.value("tensors", nlohmann::json::array());
    if (!listed.is_array()) throw FormatError(meta_path.string(), "'tensors' is not a list");
    const auto saved = [&](const std::string& n) -> const nlohmann::json* {
      for (const auto& t : listed)
        if (t.is_object() && t.value("name", std::string()) == n) return &t;
      return nullptr;
    };
    // Validate everything before the first write, so a bad checkpoint changes nothing.
    struct Item {
      std::string name;
      std::filesystem::path path;
      std::uint64_t data_offset;
      TensorSpec spec;
    };
    std::vector<Item> items;
    std::vector<std::string> zero;
    const auto read = [&](const std::string& n, const nlohmann::json& t) {
      const auto path = dir / tensor_file_name(n);
      NpyArray a = read_npy(path);
      const auto& shape = a.header.shape;
      const std::int64_t rows = t.value("rows", std::int64_t{-1});
      const std::int64_t cols = t.value("cols", std::int64_t{-1});
      if (shape.size() != 2 || shape[0] != rows || shape[1] != cols)
        throw ShapeError(path.string(), "shape differs from meta.json's " + std::to_string(rows) +
                                            " x " + std::to_string(cols));
      TensorSpec spec{n, a.header.dtype, rows, cols};
      if (storage.contains(n)) {
        const TensorSpec have = storage.spec(n);
        if (have.dtype != spec.dtype)
          throw DTypeError(path.string(), "dtype " + std::string(dtype_name(spec.dtype)) +
                                              "; tensor '" + n + "' is " +
                                              std::string(dtype_name(have.dtype)));
        if (have.rows != spec.rows || have.cols != spec.cols)
          throw ShapeError(path.string(), std::to_string(rows) + " x " + std::to_string(cols) +
                                              "; tensor '" + n + "' is " +
                                              std::to_string(have.rows) + " x " +
                                              std::to_string(have.cols));
      }
      items.push_back({n, path, a.header.data_offset, spec});
    };
    for (const auto& n : names) {
      const auto* t = saved(n);
      if (t == nullptr)
        throw NotFound("tensor '" + n + "'", "not in checkpoint '" + std::string(tag) + "'");
      read(n, *t);
      if (!with_state) continue;
      for (auto suffix : SparseState::all) {
        const std::string s = n + std::string(suffix);
        if (const auto* st = saved(s))
          read(s, *st);
        else if (storage.contains(s))
          zero.push_back(s);
      }
    }
    // Rows stream through one reused buffer: reading through the file's mapping would
    // fault page by page, several times slower than pread.
    std::vector<std::byte> chunk;
    for (auto& it : items) {
      storage.create(it.spec);
      auto [fd, size] = detail::open_regular_file(it.path);
      for_chunks(it.spec.rows, [&](std::span<const std::int64_t> local, std::int64_t lo) {
        chunk.resize(local.size() * it.spec.row_bytes());
        detail::pread_all(fd.get(), chunk,
                          it.data_offset + static_cast<std::uint64_t>(lo) * it.spec.row_bytes(),
                          it.path.string());
        storage.write_rows(it.name, local, chunk);
      });
    }
    for (const auto& s : zero) {
      const TensorSpec spec = storage.spec(s);
      std::vector<std::byte> zeros;
      for_chunks(spec.rows, [&](std::span<const std::int64_t> local, std::int64_t) {
        zeros.assign(local.size() * spec.row_bytes(), std::byte{0});
        storage.write_rows(s, local, zeros);
      });
    }
  }

  /// Deletes this partition's folder of `tag` (and the tag's folder once empty). True
  /// when there was one.
  bool remove(std::string_view tag) const {
    const auto dir = folder(tag);
    std::error_code ec;
    const bool had = std::filesystem::remove_all(dir, ec) > 0;
    if (ec) throw IoError(dir.string(), ec.message());
    std::filesystem::remove(dir.parent_path(), ec);  // fails while other parts remain
    return had;
  }

 private:
  static void check_tag(std::string_view tag) {
    if (!is_valid_checkpoint_tag(tag))
      throw InvalidArgument("checkpoint tag '" + detail::printable(tag) +
                            "': expected 1 to 128 of [A-Za-z0-9_.-], starting with a letter or "
                            "digit");
  }

  /// Streams every row of `spec` into a `.npy` file at `path` through one reused chunk
  /// buffer (a table-sized buffer would cost its first-touch page faults on every save),
  /// then fsyncs it. The caller renames the folder it is in into place.
  template <Storage S>
  static void write_rows_npy(const S& storage, const TensorSpec& spec,
                             const std::filesystem::path& path) {
    const std::int64_t shape[] = {spec.rows, spec.cols};
    const std::string header = npy_header_bytes(spec.dtype, shape, path.string());
    const std::string name = path.string();
    detail::FileDescriptor fd(::open(name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.get() < 0) throw IoError(name, detail::errno_message("cannot create", errno));
    detail::write_all(fd.get(), std::as_bytes(std::span(header)), name);
    std::vector<std::byte> chunk;
    for_chunks(spec.rows, [&](std::span<const std::int64_t> local, std::int64_t) {
      chunk.resize(local.size() * spec.row_bytes());
      storage.read_rows(spec.name, local, chunk);
      detail::write_all(fd.get(), chunk, name);
    });
    if (::fsync(fd.get()) != 0) throw IoError(name, detail::errno_message("cannot fsync", errno));
    if (const int err = fd.close(); err != 0)
      throw IoError(name, detail::errno_message("cannot close", err));
  }

  /// Calls f(local row IDs, first row) over [0, rows) in chunks of 64Ki rows.
  template <class F>
  static void for_chunks(std::int64_t rows, F&& f) {
    std::vector<std::int64_t> local;
    for (std::int64_t lo = 0; lo < rows; lo += 1 << 16) {
      const std::int64_t hi = std::min(rows, lo + (1 << 16));
      local.resize(static_cast<std::size_t>(hi - lo));
      for (std::int64_t r = lo; r < hi; ++r) local[static_cast<std::size_t>(r - lo)] = r;
      f(std::span<const std::int64_t>(local), lo);
    }
  }

  std::filesystem::path root_;
  CheckpointOwner owner_;
};

}  // namespace distgraph
