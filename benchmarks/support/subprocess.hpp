// Child processes of the benchmark programs: a program run to completion, its stdout read
// line by line as it comes.
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace distgraph::bench {

/// Runs `argv` (argv[0] a path, no PATH search) to completion with its stdout captured and
/// calls `on_line` with each line of it (without the newline) as it arrives; stderr stays
/// the caller's. Returns the wait status (WIFEXITED / WEXITSTATUS; 127 when argv[0] could
/// not be started). With `usage`, the child's resource usage (wait4: its CPU time and peak
/// RSS, ru_maxrss in KiB) is stored there. Exits the program with status 1 when no pipe or
/// process can be made.
inline int run_lines(const std::vector<std::string>& argv,
                     const std::function<void(const std::string&)>& on_line,
                     struct rusage* usage = nullptr) {
  // Built before fork: the child of a multi-threaded parent must not allocate.
  std::vector<char*> args;
  for (const auto& s : argv) args.push_back(const_cast<char*>(s.c_str()));
  args.push_back(nullptr);
  int fds[2];
  if (::pipe(fds) != 0) {
    std::perror("pipe");
    std::exit(1);
  }
  std::fflush(nullptr);  // nothing buffered here is written twice by the child
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::perror("fork");
    std::exit(1);
  }
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string buf;
  char chunk[4096];
  for (;;) {
    const auto n = ::read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buf.append(chunk, static_cast<std::size_t>(n));
    std::size_t start = 0, nl = 0;
    while ((nl = buf.find('\n', start)) != std::string::npos) {
      on_line(buf.substr(start, nl - start));
      start = nl + 1;
    }
    buf.erase(0, start);
  }
  if (!buf.empty()) on_line(buf);
  ::close(fds[0]);
  int status = 0;
  struct rusage ru {};
  while (::wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  if (usage != nullptr) *usage = ru;
  return status;
}

}  // namespace distgraph::bench
