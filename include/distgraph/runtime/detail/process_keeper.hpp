// Process keeper: a small process per launched program that holds the program's whole
// process tree, so that a launch ends whatever the program's own children do.
//
// The launcher forks a keeper (no exec); the keeper becomes a child subreaper and forks the
// program in its own process group. Everything the program starts stays below the keeper:
// orphans are reparented to it instead of to init. The keeper
//   - reports the program's pid at start and its wait status and peak resident memory when
//     it ends (a record on a pipe), then terminates what the program left behind: SIGTERM, SIGKILL
//     after `grace`;
//   - forwards the launcher's requests to the whole tree: SIGTERM -> SIGTERM, SIGUSR1 ->
//     SIGKILL;
//   - kills the whole tree at once when the launcher is gone (the read end of a pipe only the
//     launcher writes to reports a hang-up), SIGKILL of the launcher included;
//   - exits once the program and every descendant have been reaped.
// The keeper is forked from a process that may have threads, so after fork it makes only
// async-signal-safe calls: everything it needs (argv, envp) is prepared before the fork.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "distgraph/core/error.hpp"

extern char** environ;

namespace distgraph::detail {

/// A command ready to run after fork without allocating: argv, the full environment
/// (the current one with `overrides` replacing or adding KEY=VALUE entries), the folder.
struct ExecPlan {
  std::vector<std::string> args, env;
  std::vector<char*> argv, envp;
  std::string workdir;
  sigset_t mask{};  ///< the signal mask the program starts with
  int input = -1;   ///< the program's standard input (-1: the keeper's own)

  ExecPlan(const std::vector<std::string>& command, const std::vector<std::string>& overrides,
           std::string dir, const sigset_t& program_mask)
      : args(command), workdir(std::move(dir)), mask(program_mask) {
    auto key = [](const std::string& kv) { return kv.substr(0, kv.find('=')); };
    for (char** e = environ; e && *e; ++e) {
      const std::string kv = *e;
      bool replaced = false;
      for (const auto& o : overrides) replaced = replaced || key(o) == key(kv);
      if (!replaced) env.push_back(kv);
    }
    env.insert(env.end(), overrides.begin(), overrides.end());
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
  }
};

/// What a keeper writes on its record pipe (each record is one atomic pipe write).
struct KeeperRecord {
  std::int32_t kind;   ///< keeper_started or keeper_ended
  std::int32_t value;  ///< started: the program's pid (or -errno); ended: its wait status
  std::int64_t peak_rss_kib = 0;  ///< ended: the program's peak RSS (wait4's ru_maxrss)
};
inline constexpr std::int32_t keeper_started = 1;
inline constexpr std::int32_t keeper_ended = 2;

/// Signals the launcher sends a keeper: stop the tree politely, or at once.
inline constexpr int keeper_terminate = SIGTERM;
inline constexpr int keeper_kill = SIGUSR1;

/// A running keeper as the launcher sees it.
struct KeptProcess {
  pid_t keeper = -1;   ///< the keeper (the launcher's child)
  pid_t program = -1;  ///< the program (the keeper's child, leader of its process group)
  int records = -1;    ///< read end of the record pipe (non-blocking)
};

namespace keeper_detail {

inline volatile std::sig_atomic_t terminate_requested = 0;
inline volatile std::sig_atomic_t kill_requested = 0;

inline void on_signal(int sig) {
  if (sig == keeper_kill) kill_requested = 1;
  if (sig == SIGTERM || sig == SIGINT) terminate_requested = 1;
  // SIGCHLD and SIGHUP only wake ppoll; the keeper outlives a hang-up on purpose.
}

inline constexpr int handled_signals[] = {SIGTERM, SIGINT, SIGUSR1, SIGCHLD, SIGHUP};

inline void write_all(int fd, const char* s) {
  for (std::size_t n = std::strlen(s); n > 0;) {
    const auto w = ::write(fd, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<std::size_t>(w);
  }
}

inline long long now_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

/// Parses decimal pids separated by anything else; calls f(pid) for each.
template <typename F>
void for_each_number(const char* buf, long n, F&& f) {
  long long v = -1;
  for (long i = 0; i <= n; ++i) {
    const char c = i < n ? buf[i] : ' ';
    if (c >= '0' && c <= '9') {
      v = (v < 0 ? 0 : v * 10) + (c - '0');
    } else if (v >= 0) {
      f(static_cast<pid_t>(v));
      v = -1;
    }
  }
}

/// Formats "/proc/<a>/task/<a>/children" (or "/proc/<a>/stat" when `stat`) into out.
inline void proc_path(char* out, pid_t a, bool stat) {
  char digits[16];
  int n = 0;
  for (auto v = static_cast<long long>(a); v > 0 || n == 0; v /= 10)
    digits[n++] = static_cast<char>('0' + v % 10);
  char num[16];
  for (int i = 0; i < n; ++i) num[i] = digits[n - 1 - i];
  num[n] = '\0';
  std::strcpy(out, "/proc/");
  std::strcat(out, num);
  if (stat) {
    std::strcat(out, "/stat");
    return;
  }
  std::strcat(out, "/task/");
  std::strcat(out, num);
  std::strcat(out, "/children");
}

/// Calls f(pid) for every child of `self`: from /proc/<self>/task/<self>/children, or,
/// on kernels without it, by scanning every /proc/<pid>/stat for its parent.
template <typename F>
void for_each_child(pid_t self, F&& f) {
  char path[64];
  char buf[4096];
  proc_path(path, self, false);
  if (const int fd = ::open(path, O_RDONLY | O_CLOEXEC); fd >= 0) {
    // Pids may straddle two reads; keep the unfinished tail.
    long keep = 0;
    for (;;) {
      const auto n = ::read(fd, buf + keep, sizeof buf - 1 - static_cast<std::size_t>(keep));
      if (n <= 0) break;
      long end = keep + n;
      long cut = end;
      while (cut > 0 && buf[cut - 1] >= '0' && buf[cut - 1] <= '9') --cut;
      for_each_number(buf, cut, f);
      keep = end - cut;
      std::memmove(buf, buf + cut, static_cast<std::size_t>(keep));
    }
    for_each_number(buf, keep, f);
    ::close(fd);
    return;
  }
  const int dir = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return;
  char entries[8192];
  for (;;) {
    const auto n = ::syscall(SYS_getdents64, dir, entries, sizeof entries);
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      // linux_dirent64: ino (8), off (8), reclen (2), type (1), name.
      unsigned short reclen;
      std::memcpy(&reclen, entries + off + 16, sizeof reclen);
      const char* name = entries + off + 19;
      off += reclen;
      if (name[0] < '1' || name[0] > '9') continue;
      pid_t pid = 0;
      for_each_number(name, static_cast<long>(std::strlen(name)), [&](pid_t p) { pid = p; });
      proc_path(path, pid, true);
      const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      const auto len = ::read(fd, buf, sizeof buf - 1);
      ::close(fd);
      if (len <= 0) continue;
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
      long paren = len - 1;
      while (paren > 0 && buf[paren] != ')') --paren;
      pid_t ppid = -1;
      int field = 0;
      for_each_number(buf + paren + 1, len - paren - 1, [&](pid_t v) {
        if (field++ == 0) ppid = v;
      });
      if (ppid == self) f(pid);
    }
  }
  ::close(dir);
}

/// Sends `sig` to the program's process group and to every child of the keeper (orphans
/// of the tree land there) and the group each leads. SIGTERM is followed by SIGCONT: a
/// stopped process (SIGSTOP, a debugger's stop) then handles its SIGTERM, and a server
/// removes its shared-memory folder, instead of waiting stopped for the SIGKILL.
inline void signal_tree(pid_t self, pid_t program, int sig) {
  for (const int s : {sig, sig == SIGTERM ? SIGCONT : 0}) {
    if (s == 0) continue;
    if (program > 0) ::kill(-program, s);
    for_each_child(self, [s](pid_t p) {
      ::kill(p, s);
      ::kill(-p, s);
    });
  }
}

[[noreturn]] inline void run_program(const ExecPlan& plan, pid_t keeper, int out) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // dies with its keeper
  if (::getppid() != keeper) ::_exit(127);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s : handled_signals) ::sigaction(s, &dfl, nullptr);
  ::sigaction(SIGPIPE, &dfl, nullptr);
  ::sigprocmask(SIG_SETMASK, &plan.mask, nullptr);
  if (plan.input >= 0) ::dup2(plan.input, 0);
  ::dup2(out, 1);
  ::dup2(out, 2);
  if (!plan.workdir.empty() && ::chdir(plan.workdir.c_str()) != 0) {
    write_all(2, "cannot enter workspace ");
    write_all(2, plan.workdir.c_str());
    write_all(2, ": ");
    write_all(2, std::strerror(errno));
    write_all(2, "\n");
    ::_exit(127);
  }
  ::execvpe(plan.argv[0], plan.argv.data(), plan.envp.data());
  write_all(2, "cannot run ");
  write_all(2, plan.argv[0]);
  write_all(2, ": ");
  write_all(2, std::strerror(errno));
  write_all(2, "\n");
  ::_exit(127);
}

/// The keeper's whole life (see the file comment).
[[noreturn]] inline void keep(const ExecPlan& plan, int out, int life, int records,
                              std::chrono::milliseconds grace) {
  const pid_t self = ::getpid();
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  // Only what the keeper uses stays open: the launcher's other pipes (above all the write
  // end of `life`) must not be held here.
  int keepfds[] = {out, life, records, plan.input};
  std::sort(std::begin(keepfds), std::end(keepfds));
  unsigned next = 3;
  for (int fd : keepfds) {
    if (fd < static_cast<int>(next)) continue;  // -1 (no input) or a standard descriptor
    if (static_cast<unsigned>(fd) > next) ::close_range(next, static_cast<unsigned>(fd) - 1, 0);
    next = static_cast<unsigned>(fd) + 1;
  }
  ::close_range(next, ~0U, 0);

  sigset_t blocked, waiting;
  sigemptyset(&blocked);
  for (int s : handled_signals) sigaddset(&blocked, s);
  ::sigprocmask(SIG_BLOCK, &blocked, nullptr);
  ::sigprocmask(SIG_BLOCK, nullptr, &waiting);
  for (int s : handled_signals) sigdelset(&waiting, s);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int s : handled_signals) ::sigaction(s, &sa, nullptr);
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ign, nullptr);  // the launcher may be gone when we report

  const pid_t program = ::fork();
  if (program == 0) run_program(plan, self, out);
  if (program > 0) ::setpgid(program, program);  // both sides: no race with kill(-program)
  ::close(out);
  if (plan.input >= 0) ::close(plan.input);
  KeeperRecord started{keeper_started, program > 0 ? program : -errno};
  (void)::write(records, &started, sizeof started);
  if (program < 0) ::_exit(127);

  bool program_done = false, killing = false, launcher_gone = false;
  long long leftover_deadline = -1;
  for (;;) {
    for (;;) {
      int st = 0;
      struct rusage ru {};
      const pid_t p = ::wait4(-1, &st, WNOHANG, &ru);
      if (p > 0) {
        if (p == program) {
          program_done = true;
          const KeeperRecord ended{keeper_ended, st, static_cast<std::int64_t>(ru.ru_maxrss)};
          (void)::write(records, &ended, sizeof ended);
          // What the program left behind goes with it.
          signal_tree(self, program, SIGTERM);
          leftover_deadline = now_ms() + grace.count();
        }
        continue;
      }
      if (p < 0 && errno == ECHILD && program_done) ::_exit(0);
      break;
    }
    if (kill_requested || launcher_gone ||
        (leftover_deadline >= 0 && now_ms() >= leftover_deadline))
      killing = true;
    if (terminate_requested && !killing) {
      terminate_requested = 0;
      signal_tree(self, program, SIGTERM);
    }
    // Repeated while killing: each death may reparent more orphans to the keeper.
    if (killing) signal_tree(self, program, SIGKILL);
    long long timeout = 1000;
    if (killing)
      timeout = 20;
    else if (leftover_deadline >= 0)
      timeout = std::max(0LL, std::min(timeout, leftover_deadline - now_ms()));
    pollfd pfd{launcher_gone ? -1 : life, POLLIN, 0};
    const timespec ts{static_cast<time_t>(timeout / 1000),
                      static_cast<long>(timeout % 1000) * 1'000'000};
    if (::ppoll(&pfd, 1, &ts, &waiting) > 0 && pfd.revents != 0) launcher_gone = true;
  }
}

}  // namespace keeper_detail

/// Starts `plan` under a keeper; `out` is where the program's stdout and stderr go (closed
/// here), `life` the read end of the launcher's life pipe. Returns once the keeper has
/// reported the program's pid; throws IoError when the process cannot be started.
inline KeptProcess start_kept(const ExecPlan& plan, int out, int life,
                              std::chrono::milliseconds grace) {
  int rec[2];
  if (::pipe2(rec, O_CLOEXEC) != 0) throw IoError("pipe", std::strerror(errno));
  const pid_t keeper = ::fork();
  if (keeper < 0) {
    const int e = errno;
    ::close(rec[0]);
    ::close(rec[1]);
    throw IoError("fork", std::strerror(e));
  }
  if (keeper == 0) {
    ::close(rec[0]);
    keeper_detail::keep(plan, out, life, rec[1], grace);
  }
  ::close(rec[1]);
  ::close(out);
  KeptProcess k{keeper, -1, rec[0]};
  KeeperRecord r{};
  // The keeper writes this right after its fork; a keeper that died first gives EOF.
  ssize_t n;
  while ((n = ::read(rec[0], &r, sizeof r)) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(sizeof r) || r.kind != keeper_started || r.value < 0) {
    ::kill(keeper, SIGKILL);
    ::waitpid(keeper, nullptr, 0);
    ::close(rec[0]);
    throw IoError("fork", n == static_cast<ssize_t>(sizeof r) && r.value < 0
                              ? std::strerror(-r.value)
                              : "the process keeper ended before starting the program");
  }
  k.program = r.value;
  ::fcntl(rec[0], F_SETFL, ::fcntl(rec[0], F_GETFL) | O_NONBLOCK);
  return k;
}

}  // namespace distgraph::detail
