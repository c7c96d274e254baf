// MmapStorage: named tensors as .npy files in a folder, mapped shared by every process.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "distgraph/core/durable_file.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/io/npy.hpp"
#include "distgraph/storage/concepts.hpp"
#include "distgraph/storage/detail/shared_mapping.hpp"
#include "distgraph/storage/row_locks.hpp"
#include "distgraph/storage/tensor_rows.hpp"

namespace distgraph {

/// How an MmapStorage maps its tensor files.
struct MmapStorageOptions {
  /// Build every page-table entry when a tensor file is mapped (MAP_POPULATE), so the
  /// first read of each 4 KiB page takes no minor page fault. Costs time at open and
  /// create proportional to the tensors' size, and on a disk folder reads the whole
  /// files; worth it for co-located trainers that will touch every page anyway.
  bool prefault = false;
};

/// Storage in a folder (e.g. `/dev/shm/distgraph-<job>/m0`) shared by the processes of
/// one machine: a main server, backup servers and co-located trainers each open the
/// folder and map the same pages, the role of DGL's shared memory. Tensor `name` is the
/// file `<name>.npy` (2-D, data 64-byte aligned, readable by `numpy.load`); the file
/// `.locks` holds the row seqlocks, mapped shared, so row reads, writes and adds are
/// atomic across processes (docs/concepts/Storage.md).
///
/// create, create_from_npy and the row calls come from detail::StorageCalls. Here create
/// takes an flock on `.locks`, reserves the file's space (a full /dev/shm throws IoError
/// then, not SIGBUS later), fills it and renames it into place: racing processes create
/// a tensor exactly once and nobody maps a half-written file. Tensors other processes
/// create are found on the next lookup; removals are noticed through a counter in
/// `.locks`. All members are thread-safe and process-safe. Movable, not copyable.
class MmapStorage : public detail::StorageCalls<MmapStorage> {
 public:
  using policy_category = storage_tag;

  /// Opens the storage in `dir`, creating the folder and its lock file when missing,
  /// and checks every tensor file already there. Throws IoError when the folder cannot
  /// be made or read, FormatError naming a malformed `.locks` or tensor file.
  explicit MmapStorage(const std::filesystem::path& dir, MmapStorageOptions options = {})
      : MmapStorage(dir, true, options) {}

  /// Same as the constructor: opens or creates the storage in `dir`.
  static MmapStorage create_dir(const std::filesystem::path& dir, MmapStorageOptions options = {}) {
    return MmapStorage(dir, true, options);
  }

  /// Opens the existing storage in `dir` (made by another process or an earlier run) and
  /// checks every tensor file in it. Throws IoError when `dir` or its `.locks` is missing,
  /// FormatError naming a malformed `.locks` or tensor file (corrupt or truncated).
  static MmapStorage attach(const std::filesystem::path& dir, MmapStorageOptions options = {}) {
    return MmapStorage(dir, false, options);
  }

  /// The folder.
  const std::filesystem::path& path() const noexcept { return state_->dir; }

  /// The file tensor `name` lives in (whether or not it exists). Throws InvalidArgument
  /// for a bad name.
  std::filesystem::path file_path(std::string_view name) const {
    detail::validate_tensor_name(name);
    return tensor_file(name);
  }

  /// Whether tensor `name` exists now (looks in the folder when it is not mapped yet).
  /// Throws FormatError when its file is malformed.
  bool contains(std::string_view name) const { return lookup(name) != nullptr; }

  /// The spec of tensor `name`. Throws NotFound, FormatError for a malformed file.
  TensorSpec spec(std::string_view name) const { return find(name)->rows.spec; }

  /// Specs of all tensors in the folder, sorted by name (rescans it). Throws IoError when
  /// the folder cannot be read, FormatError naming a malformed tensor file.
  std::vector<TensorSpec> list() const {
    std::vector<TensorSpec> out;
    std::error_code ec;
    std::filesystem::directory_iterator it(state_->dir, ec);
    for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
      const std::string file = it->path().filename().string();
      constexpr std::string_view suffix = ".npy";
      if (file.size() <= suffix.size() || !file.ends_with(suffix)) continue;
      const std::string name =
          detail::file_tensor_name(std::string_view(file.data(), file.size() - suffix.size()));
      if (!detail::is_valid_tensor_name(name)) continue;
      // Removed since the scan saw it: not listed.
      if (const auto t = lookup(name)) out.push_back(t->rows.spec);
    }
    if (ec) throw IoError(state_->dir.string(), "cannot list the folder: " + ec.message());
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return out;
  }

  /// Unlinks tensor `name`'s file; returns false when there was none. Processes and
  /// calls that still map it keep a valid mapping until they drop it; later lookups in
  /// every process see it gone. Throws IoError when the file cannot be unlinked.
  bool remove(std::string_view name) {
    if (!detail::is_valid_tensor_name(name)) return false;
    const std::string file = tensor_file(name).string();
    detail::FileLock lock(state_->lock_path, true);
    const bool removed = ::unlink(file.c_str()) == 0;
    if (!removed && errno != ENOENT)
      throw IoError(file, detail::errno_message("cannot unlink", errno));
    if (removed) {
      epoch().fetch_add(1, std::memory_order_acq_rel);
      state_->generations.bump(detail::stripe_salt(name));
    }
    std::unique_lock cache_lock(state_->mutex);
    if (const auto it = state_->cache.find(name); it != state_->cache.end())
      state_->cache.erase(it);
    return removed;
  }

 private:
  friend class detail::StorageCalls<MmapStorage>;

  /// One tensor file mapped into this process.
  struct Mapped {
    detail::SharedMapping mapping;
    detail::TensorRows rows;
    // Identity of the file, to notice it was replaced by another process.
    dev_t dev = 0;
    ino_t ino = 0;
  };
  struct State {
    std::filesystem::path dir;
    std::string lock_path;
    MmapStorageOptions options;
    detail::SharedMapping lock_mapping;
    detail::RowLockTable locks;
    detail::GenerationTable generations;
    mutable std::shared_mutex mutex;
    // Guarded by `mutex`: the tensors mapped so far and the removal count they reflect.
    mutable std::map<std::string, std::shared_ptr<const Mapped>, std::less<>> cache;
    mutable std::uint64_t seen_epoch = 0;
  };

  MmapStorage(const std::filesystem::path& dir, bool create_missing, MmapStorageOptions options)
      : state_(std::make_unique<State>()) {
    state_->dir = dir;
    state_->options = options;
    state_->lock_path = (dir / ".locks").string();
    if (create_missing) {
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      if (ec) throw IoError(dir.string(), "cannot create the folder: " + ec.message());
    } else if (!std::filesystem::is_directory(dir)) {
      throw IoError(dir.string(), "no such folder; expected an MmapStorage folder");
    }
    auto fd = detail::open_file(state_->lock_path, O_RDWR | (create_missing ? O_CREAT : 0), true);
    if (fd.get() < 0)
      throw IoError(dir.string(),
                    "no .locks file; expected a folder made by MmapStorage::create_dir");
    {
      // Racing openers: the first one initialises, the others wait and then check it.
      detail::FileLock lock(state_->lock_path, true);
      detail::prepare_lock_file(lock.fd(), state_->lock_path, create_missing);
    }
    state_->lock_mapping =
        detail::SharedMapping(fd.get(), detail::lock_file_bytes, state_->lock_path);
    state_->locks = detail::RowLockTable(reinterpret_cast<std::uint64_t*>(
        state_->lock_mapping.data() + sizeof(detail::LockFileHeader)));
    state_->generations = detail::GenerationTable(reinterpret_cast<std::uint64_t*>(
        state_->lock_mapping.data() + detail::lock_file_generations_offset));
    state_->seen_epoch = epoch().load(std::memory_order_acquire);
    // Map and check every tensor now, so a corrupt file fails here, naming itself.
    list();
  }

  std::filesystem::path tensor_file(std::string_view name) const {
    return state_->dir / (detail::tensor_file_name(name) + ".npy");
  }

  std::atomic_ref<std::uint64_t> epoch() const noexcept {
    auto* header = reinterpret_cast<detail::LockFileHeader*>(state_->lock_mapping.data());
    return std::atomic_ref<std::uint64_t>(header->epoch);
  }

  const detail::RowLockTable& row_locks() const noexcept { return state_->locks; }
  const detail::GenerationTable& generations() const noexcept { return state_->generations; }

  /// The tensor `name`, kept mapped for the caller. Throws NotFound.
  std::shared_ptr<const Mapped> find(std::string_view name) const {
    auto t = lookup(name);
    if (!t)
      throw NotFound(detail::tensor_subject(name),
                     "no such tensor in MmapStorage " + state_->dir.string());
    return t;
  }

  /// The tensor `name` from the cache, else mapped from its file; nullptr when absent.
  std::shared_ptr<const Mapped> lookup(std::string_view name) const {
    const std::uint64_t now = epoch().load(std::memory_order_acquire);
    {
      std::shared_lock lock(state_->mutex);
      if (now == state_->seen_epoch)
        if (const auto it = state_->cache.find(name); it != state_->cache.end()) return it->second;
    }
    if (!detail::is_valid_tensor_name(name)) return nullptr;
    std::unique_lock lock(state_->mutex);
    if (now != state_->seen_epoch) {
      drop_replaced_files();
      state_->seen_epoch = now;
    }
    if (const auto it = state_->cache.find(name); it != state_->cache.end()) return it->second;
    auto t = map_file(name);
    if (t) state_->cache.emplace(std::string(name), t);
    return t;
  }

  /// Forgets cached tensors whose file is gone or is another file now. Caller holds
  /// `mutex` exclusively.
  void drop_replaced_files() const {
    for (auto it = state_->cache.begin(); it != state_->cache.end();)
      it = maps_file_now(it->first, *it->second) ? std::next(it) : state_->cache.erase(it);
  }

  /// Whether `m` maps the file that is tensor `name`'s now (not a removed or replaced one).
  bool maps_file_now(std::string_view name, const Mapped& m) const {
    struct stat st {};
    return ::stat(tensor_file(name).c_str(), &st) == 0 && st.st_dev == m.dev && st.st_ino == m.ino;
  }

  /// Maps tensor `name`'s file and checks its header; nullptr when there is no file.
  /// Throws FormatError (or DTypeError) naming the file when it is malformed.
  std::shared_ptr<const Mapped> map_file(std::string_view name) const {
    const std::string file = tensor_file(name).string();
    auto fd = detail::open_file(file, O_RDWR, true);
    if (fd.get() < 0) return nullptr;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
      throw IoError(file, detail::errno_message("cannot stat", errno));
    if (!S_ISREG(st.st_mode)) throw IoError(file, "not a regular file");
    auto t = std::make_shared<Mapped>();
    t->dev = st.st_dev;
    t->ino = st.st_ino;
    t->mapping = detail::SharedMapping(fd.get(), static_cast<std::size_t>(st.st_size), file,
                                       state_->options.prefault);
    const NpyHeader h = parse_npy_header(t->mapping.bytes(), file);
    if (h.shape.empty() || h.shape.size() > 2 || (h.shape.size() == 2 && h.shape[1] < 1))
      throw FormatError(file, "shape " + detail::shape_string(h.shape) +
                                  "; expected (rows,) or (rows, cols) with cols >= 1");
    // Rows must be aligned for add_rows' typed access; the mapping is page aligned.
    if (h.data_offset % dtype_size(h.dtype) != 0)
      throw FormatError(file, "data starts at byte " + std::to_string(h.data_offset) +
                                  "; expected a multiple of " +
                                  std::to_string(dtype_size(h.dtype)));
    TensorSpec spec{.name = std::string(name),
                    .dtype = h.dtype,
                    .rows = h.shape[0],
                    .cols = h.shape.size() == 2 ? h.shape[1] : 1};
    t->rows = detail::TensorRows(std::move(spec), t->mapping.data() + h.data_offset);
    return t;
  }

  bool create_filled(const TensorSpec& spec, std::span<const std::byte> bytes, bool fill) {
    detail::validate_spec(spec);
    if (fill) detail::require_fill_bytes(spec, bytes.size());
    detail::FileLock lock(state_->lock_path, true);
    // Under the flock the folder is the truth; the cache may be stale.
    if (auto existing = current_mapping(spec.name)) {
      detail::require_same_layout(existing->rows.spec, spec);
      return false;
    }
    write_tensor_file(spec, fill ? bytes : std::span<const std::byte>{});
    auto created = map_file(spec.name);
    if (!created) throw IoError(tensor_file(spec.name).string(), "vanished right after creation");
    remember(std::move(created));
    return true;
  }

  /// Writes the `.npy` file of `spec` (zeros, or `bytes` when not empty) under a
  /// temporary name and renames it into place. Caller holds the folder's flock.
  void write_tensor_file(const TensorSpec& spec, std::span<const std::byte> bytes) const {
    static std::atomic<unsigned> counter{0};
    const std::string target = tensor_file(spec.name).string();
    // A leading dot and a suffix other than ".npy": list() never takes it for a tensor.
    const std::string tmp =
        (state_->dir / ("." + detail::tensor_file_name(spec.name) + ".npy.tmp-" +
                        std::to_string(::getpid()) + "-" + std::to_string(counter++)))
            .string();
    const std::int64_t shape[] = {spec.rows, spec.cols};
    const std::string header = npy_header_bytes(spec.dtype, shape, target);
    auto fd = detail::open_file(tmp, O_RDWR | O_CREAT | O_EXCL);
    try {
      // Reserve every page now: on a full /dev/shm, create fails with IoError here rather
      // than a later row write through the mapping dying of SIGBUS. New pages are zeros.
      const auto total = static_cast<off_t>(header.size() + spec.size_bytes());
      if (const int err = ::posix_fallocate(fd.get(), 0, total); err != 0)
        throw IoError(target, detail::errno_message("cannot allocate the tensor file", err));
      detail::write_all(fd.get(), std::as_bytes(std::span(header)), target);
      detail::write_all(fd.get(), bytes, target);
      if (const int err = fd.close(); err != 0)
        throw IoError(target, detail::errno_message("cannot close", err));
      publish_file(tmp, target);
    } catch (...) {
      fd.close();
      ::unlink(tmp.c_str());
      throw;
    }
  }

  /// The tensor `name` as its file is now (nullptr when there is none): the cached mapping
  /// while it still maps that file, else a fresh mapping, remembered. Reusing the mapping
  /// matters: a fresh one faults every page in again on first touch (4 KiB at a time), which
  /// made loading a checkpoint into an existing 400 MB table 30 times slower than reading
  /// the file. Caller holds the folder's flock, so the file cannot change meanwhile.
  std::shared_ptr<const Mapped> current_mapping(std::string_view name) {
    {
      std::shared_lock lock(state_->mutex);
      if (const auto it = state_->cache.find(name);
          it != state_->cache.end() && maps_file_now(name, *it->second))
        return it->second;
    }
    auto t = map_file(name);
    if (t) remember(t);
    return t;
  }

  /// Puts a freshly mapped tensor in the cache, replacing a stale entry.
  void remember(std::shared_ptr<const Mapped> t) {
    std::unique_lock lock(state_->mutex);
    state_->cache.insert_or_assign(t->rows.spec.name, std::move(t));
  }

  std::unique_ptr<State> state_;
};

static_assert(Storage<MmapStorage>);

}  // namespace distgraph
