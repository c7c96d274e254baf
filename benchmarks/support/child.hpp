// A benchmark's work in a forked child, measured alone: its peak resident memory from a
// reset high-water mark, its result sent back as JSON over a pipe.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace distgraph::bench {

/// A value from /proc/self/status ("VmHWM:", "VmRSS:") in bytes; 0 if absent.
inline std::int64_t proc_status_bytes(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string k;
  while (in >> k) {
    if (k == key) {
      std::int64_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
    std::getline(in, k);
  }
  return 0;
}

/// Runs `fn` in a forked child and returns the JSON object it produced, with the child's
/// "start_rss_bytes" (resident right after the fork: the inherited input) and
/// "peak_rss_bytes" (VmHWM since the start, reset via /proc/self/clear_refs) added.
/// The parent must be single-threaded here (parallel_chunks joins its threads).
inline nlohmann::json run_in_child(const std::function<nlohmann::json()>& fn) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    nlohmann::json out;
    try {
      // "5" resets the peak RSS to the current RSS (Linux >= 4.0, proc(5)).
      bool reset = false;
      if (std::FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
        reset = std::fputs("5", f) >= 0;
        reset = (std::fclose(f) == 0) && reset;
      }
      const std::int64_t start_rss = proc_status_bytes("VmRSS:");
      out = fn();
      out["start_rss_bytes"] = start_rss;
      out["peak_rss_bytes"] = proc_status_bytes("VmHWM:");
      out["peak_reset"] = reset;
    } catch (const std::exception& e) {
      out = {{"error", e.what()}};
    }
    const std::string text = out.dump();
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t w = ::write(fds[1], text.data() + done, text.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      done += static_cast<std::size_t>(w);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char buf[1 << 12];
  for (;;) {
    const ssize_t r = ::read(fds[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    text.append(buf, static_cast<std::size_t>(r));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text.empty())
    throw std::runtime_error("benchmark child died (status " + std::to_string(status) + ")");
  nlohmann::json j = nlohmann::json::parse(text);
  if (j.contains("error"))
    throw std::runtime_error("benchmark child: " + j["error"].get<std::string>());
  return j;
}

}  // namespace distgraph::bench
