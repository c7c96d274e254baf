// Launcher: starts a job's servers and trainers on every machine and makes sure it ends.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "distgraph/core/deadline.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/runtime/ip_config.hpp"
#include "distgraph/runtime/secret.hpp"
#include "distgraph/transport/asio_transport.hpp"

namespace distgraph {

/// What `distgraph launch` starts.
struct LaunchOptions {
  std::filesystem::path ip_config, part_config;
  std::int32_t servers = 1;              ///< per machine: 1 main + servers-1 backups
  std::int32_t trainers = 1;             ///< per machine
  std::filesystem::path workspace;       ///< working folder of every process (default: cwd)
  std::filesystem::path secret_file;     ///< passed by path, never by value
  std::filesystem::path checkpoint_dir;  ///< servers' --checkpoint-dir (empty: their default)
  std::string distgraph_program;         ///< the `distgraph` binary servers run (this one)
  /// A user's program built with its own composition to run as every server instead of
  /// `distgraph serve` (initialize() runs the server role from the environment); it gets
  /// the trainer command's arguments. Empty: `distgraph serve`.
  std::string server_program;
  std::vector<std::string> program;  ///< the trainer command
  bool dry_run = false;
  std::chrono::milliseconds grace{5'000};            ///< SIGTERM -> SIGKILL
  std::chrono::milliseconds shutdown_grace{15'000};  ///< shutdown request -> SIGTERM
  std::string ssh = "ssh";                           ///< program used for remote machines
};

/// One process the launcher runs.
struct LaunchProcess {
  std::string label;  ///< "server 0.1", "trainer 1.0"
  bool server = false;
  std::int32_t machine = 0;
  std::vector<std::string> env;   ///< KEY=VALUE added to the environment
  std::vector<std::string> argv;  ///< the command as run here (ssh ... for remote)
  bool remote = false;
  pid_t pid = -1;
  bool running = false;
  int status = 0;
};

/// Single-quotes `s` for a POSIX shell.
inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

namespace detail {
inline std::uint16_t free_local_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  std::uint16_t port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0) ::close(fd);
  return port;
}
/// Throws InvalidArgument unless `program` names an executable file (a path, or a name
/// found on PATH), so a mistyped --server-program fails before anything starts.
inline void check_program(const std::string& program) {
  auto executable = [](const std::filesystem::path& p) {
    std::error_code ec;
    return std::filesystem::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (program.find('/') != std::string::npos) {
    if (executable(program)) return;
  } else if (const char* path = std::getenv("PATH")) {
    std::string dirs = path;
    std::size_t at = 0;
    while (at <= dirs.size()) {
      const auto end = std::min(dirs.find(':', at), dirs.size());
      if (end > at && executable(std::filesystem::path(dirs.substr(at, end - at)) / program))
        return;
      at = end + 1;
    }
  }
  throw InvalidArgument("launch: --server-program '" + program +
                        "' is not an executable file; expected a program built with "
                        "distgraph's initialize() (path or name on PATH)");
}
inline std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           ::strsignal(WTERMSIG(status)) + ")";
  return "ended with wait status " + std::to_string(status);
}
}  // namespace detail

/// The processes a launch runs, in start order (servers machine by machine, then
/// trainers). Throws FormatError for a bad ip config and InvalidArgument for bad counts.
inline std::vector<LaunchProcess> plan_launch(const LaunchOptions& o) {
  if (o.servers < 1 || o.trainers < 1)
    throw InvalidArgument("launch: --servers and --trainers must be >= 1");
  if (o.program.empty()) throw InvalidArgument("launch: no trainer program after '--'");
  const IpConfig ip = read_ip_config(o.ip_config, o.servers);
  const std::int32_t machines = ip.num_machines();
  const std::string ws =
      o.workspace.empty() ? std::filesystem::current_path().string() : o.workspace.string();
  const bool master_local = is_local_address(ip.machines[0].ip);
  std::string master_port;
  if (const char* mp = std::getenv("MASTER_PORT"))
    master_port = mp;
  else
    master_port = std::to_string(master_local && !o.dry_run ? detail::free_local_port()
                                                            : ip.machines[0].port + 1000);
  std::vector<LaunchProcess> procs;
  auto finish = [&](LaunchProcess p, const std::string& host, const std::vector<std::string>& cmd) {
    p.remote = !is_local_address(host);
    if (!p.remote) {
      p.argv = cmd;
    } else {
      // The remote shell gets the environment inline; -tt ties the remote process to the
      // ssh session, so it receives SIGHUP when the launcher's ssh goes away.
      // Appends, not "lit" + temporary: GCC 12 misreports the latter (-Wrestrict).
      std::string line = "cd ";
      line += shell_quote(ws);
      line += " && exec env";
      const auto add = [&line](const std::vector<std::string>& words) {
        for (const auto& w : words) {
          line += ' ';
          line += shell_quote(w);
        }
      };
      add(p.env);
      add(cmd);
      p.argv = {o.ssh, "-tt", "-o", "BatchMode=yes", host, line};
    }
    procs.push_back(std::move(p));
  };
  const std::string secret_arg = o.secret_file.string();
  if (!o.server_program.empty() && !o.dry_run) detail::check_program(o.server_program);
  for (std::int32_t m = 0; m < machines; ++m)
    for (std::int32_t s = 0; s < o.servers; ++s) {
      LaunchProcess p;
      p.label = "server " + std::to_string(m) + "." + std::to_string(s);
      p.server = true;
      p.machine = m;
      if (!o.server_program.empty()) {
        // The user's program in the server role: what `distgraph serve` takes as flags
        // travels as the environment initialize() reads.
        p.env = {"DISTGRAPH_ROLE=server",
                 "DISTGRAPH_IP_CONFIG=" + o.ip_config.string(),
                 "DISTGRAPH_PART_CONFIG=" + o.part_config.string(),
                 "DISTGRAPH_MACHINE_ID=" + std::to_string(m),
                 "DISTGRAPH_SERVER_ID=" + std::to_string(s),
                 "DISTGRAPH_NUM_SERVERS=" + std::to_string(o.servers),
                 "DISTGRAPH_NUM_TRAINERS=" + std::to_string(o.trainers)};
        if (!secret_arg.empty()) p.env.push_back("DISTGRAPH_SECRET_FILE=" + secret_arg);
        if (!o.checkpoint_dir.empty())
          p.env.push_back("DISTGRAPH_CHECKPOINT_DIR=" + o.checkpoint_dir.string());
        std::vector<std::string> cmd{o.server_program};
        cmd.insert(cmd.end(), o.program.begin() + 1, o.program.end());
        finish(std::move(p), ip.machines[static_cast<std::size_t>(m)].ip, cmd);
        continue;
      }
      std::vector<std::string> cmd{o.distgraph_program, "serve",
                                   "--ip-config",       o.ip_config.string(),
                                   "--part-config",     o.part_config.string(),
                                   "--machine",         std::to_string(m),
                                   "--server-id",       std::to_string(s),
                                   "--servers",         std::to_string(o.servers),
                                   "--trainers",        std::to_string(o.trainers * machines)};
      if (!secret_arg.empty()) cmd.insert(cmd.end(), {"--secret-file", secret_arg});
      if (!o.checkpoint_dir.empty())
        cmd.insert(cmd.end(), {"--checkpoint-dir", o.checkpoint_dir.string()});
      finish(std::move(p), ip.machines[static_cast<std::size_t>(m)].ip, cmd);
    }
  for (std::int32_t m = 0; m < machines; ++m)
    for (std::int32_t t = 0; t < o.trainers; ++t) {
      LaunchProcess p;
      p.label = "trainer " + std::to_string(m) + "." + std::to_string(t);
      p.machine = m;
      p.env = {"DISTGRAPH_ROLE=trainer",
               "DISTGRAPH_IP_CONFIG=" + o.ip_config.string(),
               "DISTGRAPH_PART_CONFIG=" + o.part_config.string(),
               "DISTGRAPH_MACHINE_ID=" + std::to_string(m),
               "DISTGRAPH_NUM_SERVERS=" + std::to_string(o.servers),
               "DISTGRAPH_NUM_TRAINERS=" + std::to_string(o.trainers),
               "RANK=" + std::to_string(m * o.trainers + t),
               "WORLD_SIZE=" + std::to_string(machines * o.trainers),
               "LOCAL_RANK=" + std::to_string(t),
               "MASTER_ADDR=" + ip.machines[0].ip,
               "MASTER_PORT=" + master_port};
      if (!secret_arg.empty()) p.env.push_back("DISTGRAPH_SECRET_FILE=" + secret_arg);
      finish(std::move(p), ip.machines[static_cast<std::size_t>(m)].ip, o.program);
    }
  return procs;
}

/// Runs a launch to the end (see docs/RUNTIME.md): starts every process with its output
/// prefixed by its label, forwards SIGINT/SIGTERM, shuts the servers down once every
/// trainer exited 0 (a shutdown request, then SIGTERM after shutdown_grace, SIGKILL after
/// grace) and returns 0; when any process fails, stops all the others (SIGTERM, SIGKILL
/// after grace), names the failed one and returns 1 (128 + signal when the launcher was
/// signalled). Children die with the launcher even when it is SIGKILLed (parent-death
/// signal). Must be called from the main thread before other threads exist: it blocks
/// SIGCHLD/SIGINT/SIGTERM in the calling thread.
inline int run_launch(const LaunchOptions& o, std::FILE* out = stdout) {
  auto procs = plan_launch(o);
  if (o.dry_run) {
    for (const auto& p : procs) {
      std::fprintf(out, "[%s]%s", p.label.c_str(), p.remote ? " (ssh)" : "");
      if (!p.remote)
        for (const auto& e : p.env) std::fprintf(out, " %s", shell_quote(e).c_str());
      for (const auto& a : p.argv) std::fprintf(out, " %s", shell_quote(a).c_str());
      std::fprintf(out, "\n");
    }
    return 0;
  }
  sigset_t watched, old;
  sigemptyset(&watched);
  sigaddset(&watched, SIGCHLD);
  sigaddset(&watched, SIGINT);
  sigaddset(&watched, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &watched, &old);
  const pid_t launcher = ::getpid();
  std::mutex out_mu;
  std::vector<std::thread> readers;
  auto start = [&](LaunchProcess& p) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw IoError("pipe", std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid < 0) throw IoError("fork", std::strerror(errno));
    if (pid == 0) {
      // Child: its own process group (signals reach its children too), dies with the
      // launcher, default signal mask, output into the pipe.
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != launcher) ::_exit(127);
      pthread_sigmask(SIG_SETMASK, &old, nullptr);
      ::dup2(fds[1], 1);
      ::dup2(fds[1], 2);
      if (!o.workspace.empty() && ::chdir(o.workspace.c_str()) != 0) {
        std::fprintf(stderr, "cannot enter workspace %s: %s\n", o.workspace.c_str(),
                     std::strerror(errno));
        ::_exit(127);
      }
      if (!p.remote)
        for (const auto& e : p.env) ::putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> args;
      for (const auto& a : p.argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
      ::_exit(127);
    }
    ::close(fds[1]);
    p.pid = pid;
    p.running = true;
    readers.emplace_back([fd = fds[0], label = p.label, out, &out_mu] {
      std::string buf;
      char chunk[4096];
      for (;;) {
        const auto n = ::read(fd, chunk, sizeof chunk);
        if (n <= 0) break;
        buf.append(chunk, static_cast<std::size_t>(n));
        std::size_t nl;
        while ((nl = buf.find('\n')) != std::string::npos) {
          std::lock_guard lock(out_mu);
          std::fprintf(out, "[%s] %.*s\n", label.c_str(), static_cast<int>(nl), buf.data());
          std::fflush(out);
          buf.erase(0, nl + 1);
        }
      }
      if (!buf.empty()) {
        std::lock_guard lock(out_mu);
        std::fprintf(out, "[%s] %s\n", label.c_str(), buf.c_str());
      }
      ::close(fd);
    });
  };
  auto say = [&](const std::string& line) {
    std::lock_guard lock(out_mu);
    std::fprintf(stderr, "distgraph launch: %s\n", line.c_str());
    std::fflush(stderr);
  };
  auto reap = [&]() -> LaunchProcess* {
    int st = 0;
    const pid_t pid = ::waitpid(-1, &st, WNOHANG);
    if (pid <= 0) return nullptr;
    for (auto& p : procs)
      if (p.pid == pid) {
        p.running = false;
        p.status = st;
        return &p;
      }
    return nullptr;
  };
  auto any_running = [&](bool servers_only) {
    for (const auto& p : procs)
      if (p.running && (!servers_only || p.server)) return true;
    return false;
  };
  // Waits for children until none (of the kind) run or `deadline`; true if all ended.
  auto wait_all = [&](Deadline deadline, bool servers_only) {
    while (any_running(servers_only)) {
      while (reap()) {
      }
      if (!any_running(servers_only)) break;
      const auto left = ms_left(deadline);
      if (left <= 0) return false;
      timespec ts{static_cast<time_t>(std::min<long long>(left, 100) / 1000),
                  static_cast<long>(std::min<long long>(left, 100) % 1000) * 1'000'000};
      sigtimedwait(&watched, nullptr, &ts);
    }
    return true;
  };
  auto signal_all = [&](int sig, bool servers_only) {
    for (auto& p : procs)
      if (p.running && (!servers_only || p.server)) ::kill(-p.pid, sig);
  };
  auto stop_all = [&] {
    signal_all(SIGTERM, false);
    if (!wait_all(deadline_in(o.grace), false)) {
      signal_all(SIGKILL, false);
      wait_all(deadline_in(std::chrono::seconds(10)), false);
    }
  };
  auto finish = [&](int code) {
    for (auto& t : readers) t.join();
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return code;
  };

  try {
    for (auto& p : procs) start(p);
  } catch (const std::exception& e) {
    say(std::string("could not start every process: ") + e.what());
    stop_all();
    return finish(1);
  }
  std::size_t trainers_left = 0;
  for (const auto& p : procs) trainers_left += p.server ? 0 : 1;
  while (trainers_left > 0) {
    siginfo_t info{};
    timespec ts{1, 0};
    const int sig = sigtimedwait(&watched, &info, &ts);
    if (sig == SIGINT || sig == SIGTERM) {
      say(std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
          "; stopping every process");
      stop_all();
      return finish(128 + sig);
    }
    while (LaunchProcess* p = reap()) {
      const bool ok = WIFEXITED(p->status) && WEXITSTATUS(p->status) == 0;
      if (!p->server && ok) {
        --trainers_left;
        continue;
      }
      say(p->label + " (pid " + std::to_string(p->pid) + ") " + detail::describe_status(p->status) +
          "; stopping every process");
      stop_all();
      return finish(1);
    }
  }
  // Every trainer succeeded: ask the servers to shut down, then insist.
  try {
    const IpConfig ip = read_ip_config(o.ip_config, o.servers);
    AsioTransportOptions to;
    to.connect_timeout = std::chrono::seconds(5);
    if (!o.secret_file.empty()) to.secret = read_secret_file(o.secret_file);
    AsioTransport t(ip.all_servers(o.servers), to);
    std::vector<PendingCall> calls;
    for (int s = 0; s < t.num_servers(); ++s)
      calls.push_back(t.send(s, MsgType::shutdown, Message{}));
    const auto d = deadline_in(std::chrono::seconds(5));
    for (auto& c : calls) {
      try {
        c.get(d);
      } catch (const Error&) {
      }
    }
  } catch (const Error& e) {
    say(std::string("shutdown request failed (") + e.what() + "); terminating the servers");
  }
  if (!wait_all(deadline_in(o.shutdown_grace), true)) {
    say("servers still running after the shutdown request; sending SIGTERM");
    signal_all(SIGTERM, true);
    if (!wait_all(deadline_in(o.grace), true)) {
      signal_all(SIGKILL, true);
      wait_all(deadline_in(std::chrono::seconds(10)), true);
    }
  }
  int code = 0;
  for (const auto& p : procs)
    if (p.server && !(WIFEXITED(p.status) && WEXITSTATUS(p.status) == 0)) {
      say(p.label + " " + detail::describe_status(p.status) + " during shutdown");
      code = 1;
    }
  return finish(code);
}

}  // namespace distgraph
