// Buffer<T>: a contiguous array that owns its memory or keeps a mapping alive.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace distgraph {

/// A contiguous, immutable-size array of T. It either owns a std::vector or
/// views memory kept alive by `owner` (a memory-mapped file, a torch tensor),
/// so loaders can hand out mapped data without copying. Copies share the data;
/// `clone()` makes an owned copy. Not thread-safe for concurrent writes to
/// the same elements; concurrent reads are fine.
template <class T>
class Buffer {
 public:
  using value_type = T;

  Buffer() = default;
  /// Takes ownership of `v` (not for bool: std::vector<bool> is not contiguous; use zeros).
  explicit Buffer(std::vector<T> v) requires(!std::is_same_v<T, bool>) {
    auto holder = std::make_shared<std::vector<T>>(std::move(v));
    data_ = holder->data();
    size_ = holder->size();
    owner_ = std::move(holder);
  }
  /// Views `size` elements at `data`, kept alive by `owner`.
  Buffer(std::shared_ptr<const void> owner, T* data, std::size_t size)
      : owner_(std::move(owner)), data_(data), size_(size) {}
  /// An owned buffer of `n` value-initialised elements.
  static Buffer zeros(std::size_t n) {
    std::shared_ptr<T[]> holder(new T[n]());
    T* data = holder.get();
    return Buffer(std::shared_ptr<const void>(std::move(holder), data), data, n);
  }

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  T* begin() noexcept { return data_; }
  T* end() noexcept { return data_ + size_; }
  const T* begin() const noexcept { return data_; }
  const T* end() const noexcept { return data_ + size_; }
  std::span<T> span() noexcept { return {data_, size_}; }
  std::span<const T> span() const noexcept { return {data_, size_}; }
  operator std::span<const T>() const noexcept { return span(); }
  /// The keep-alive handle (shared with views made from this buffer).
  const std::shared_ptr<const void>& owner() const noexcept { return owner_; }

  /// An owned deep copy.
  Buffer clone() const {
    Buffer b = zeros(size_);
    std::copy(begin(), end(), b.begin());
    return b;
  }
  /// A view of `[offset, offset + n)` sharing this buffer's owner.
  Buffer slice(std::size_t offset, std::size_t n) const {
    return Buffer(owner_, data_ + offset, n);
  }

 private:
  std::shared_ptr<const void> owner_;
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace distgraph
