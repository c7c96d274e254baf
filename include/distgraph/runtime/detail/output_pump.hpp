// Output pump: prints each line the launched processes write, prefixed by their labels.
#pragma once

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace distgraph::detail {

/// One thread per stream; a stream ends at end of output, or `linger` after its process
/// tree is known to be gone: a descendant that left the tree (or a process it handed the
/// descriptor to) may hold the pipe open forever, and the launcher must still end.
class OutputPump {
 public:
  OutputPump(std::FILE* out, std::mutex& mu) : out_(out), mu_(mu) {}
  OutputPump(const OutputPump&) = delete;
  OutputPump& operator=(const OutputPump&) = delete;
  ~OutputPump() { join(std::chrono::milliseconds(0)); }

  /// Starts printing `fd` (owned from now on) as "[label] line"; returns the stream's index.
  std::size_t add(int fd, std::string label) {
    auto s = std::make_unique<Stream>();
    s->fd = fd;
    s->label = std::move(label);
    Stream* raw = s.get();
    s->thread = std::thread([this, raw] { pump(*raw); });
    streams_.push_back(std::move(s));
    return streams_.size() - 1;
  }

  /// The writer's process tree has ended: give the stream at most `linger` more.
  void tree_gone(std::size_t index, std::chrono::milliseconds linger) {
    auto& s = *streams_[index];
    long long expected = 0;
    s.give_up_ms.compare_exchange_strong(expected, now_ms() + linger.count());
  }

  /// Ends every stream (those without a tree_gone() get `linger` from now) and joins.
  void join(std::chrono::milliseconds linger) {
    for (std::size_t i = 0; i < streams_.size(); ++i) tree_gone(i, linger);
    for (auto& s : streams_)
      if (s->thread.joinable()) s->thread.join();
  }

 private:
  struct Stream {
    int fd = -1;
    std::string label;
    std::atomic<long long> give_up_ms{0};  ///< 0: not yet
    std::thread thread;
  };

  static long long now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  void pump(Stream& s) {
    std::string buf;
    char chunk[4096];
    for (;;) {
      const long long give_up = s.give_up_ms.load();
      const long long left = give_up == 0 ? 100 : give_up - now_ms();
      if (left < 0) break;
      pollfd p{s.fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(std::min(left, 100LL))) <= 0) continue;
      const auto n = ::read(s.fd, chunk, sizeof chunk);
      if (n <= 0) break;
      buf.append(chunk, static_cast<std::size_t>(n));
      std::size_t nl;
      while ((nl = buf.find('\n')) != std::string::npos) {
        print(s.label, std::string_view(buf).substr(0, nl));
        buf.erase(0, nl + 1);
      }
    }
    if (!buf.empty()) print(s.label, buf);
    ::close(s.fd);
  }

  void print(const std::string& label, std::string_view line) {
    std::lock_guard lock(mu_);
    std::fprintf(out_, "[%s] %.*s\n", label.c_str(), static_cast<int>(line.size()), line.data());
    std::fflush(out_);
  }

  std::FILE* out_;
  std::mutex& mu_;
  std::vector<std::unique_ptr<Stream>> streams_;
};

}  // namespace distgraph::detail
