// Launcher: starts a job's servers and trainers on every machine and makes sure it ends.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "distgraph/core/deadline.hpp"
#include "distgraph/core/durable_file.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/core/trace.hpp"
#include "distgraph/runtime/detail/output_pump.hpp"
#include "distgraph/runtime/detail/process_keeper.hpp"
#include "distgraph/runtime/environment.hpp"
#include "distgraph/runtime/ip_config.hpp"
#include "distgraph/runtime/lease.hpp"
#include "distgraph/runtime/secret.hpp"
#include "distgraph/transport/asio_transport.hpp"

namespace distgraph {

/// A machine of the job cannot run its processes: ssh cannot reach it or log in, or the
/// workspace or a program is missing there. `machine()` and `host()` name it.
class MachineError : public Error {
 public:
  MachineError(std::int32_t machine, std::string host, const std::string& what)
      : Error("machine " + std::to_string(machine) + " (" + host + "): " + what),
        machine_(machine),
        host_(std::move(host)) {}
  std::int32_t machine() const noexcept { return machine_; }
  const std::string& host() const noexcept { return host_; }

 private:
  std::int32_t machine_;
  std::string host_;
};

/// What `distgraph launch` starts.
struct LaunchOptions {
  std::filesystem::path ip_config, part_config;
  std::int32_t servers = 1;           ///< per machine: 1 main + servers-1 backups
  std::int32_t trainers = 1;          ///< per machine
  std::filesystem::path workspace;    ///< working folder of every process (default: cwd)
  std::filesystem::path secret_file;  ///< passed by path, never by value
  /// Every process's TLS settings (DISTGRAPH_NO_TLS, DISTGRAPH_TLS_*): certificate paths
  /// name files on each machine, like the secret file.
  TlsOptions tls;
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
  /// Remote machines: each process runs under `distgraph lease`, which stops its tree when
  /// the launcher's heartbeats (one a second over the ssh session) stop for this long; the
  /// launcher's ssh gives a silent host up after about as long (ServerAlive, see
  /// docs/RUNTIME.md).
  std::chrono::milliseconds lease{12'000};
  /// Non-empty: the trainers' GLOO_SOCKET_IFNAME, the interface their gradient group binds
  /// (default: the machine's address in the ip config).
  std::string gloo_interface;
  /// Non-empty: at the end, a JSON summary of every process written here (label, pid, exit,
  /// seconds, peak RSS; see docs/RUNTIME.md), so runs can be compared by their memory.
  std::filesystem::path report;
  /// Non-empty: every process records a timeline (DISTGRAPH_TRACE) into `<trace>.parts/`,
  /// and at the end the parts written on this computer are merged into this one Chrome
  /// trace-event file (docs/GUIDE.md, "Where the time goes: --trace").
  std::filesystem::path trace;
};

/// The folder where each process of a traced launch writes its part of `trace`.
inline std::filesystem::path trace_parts_dir(const std::filesystem::path& trace) {
  return trace.string() + ".parts";
}

/// One process the launcher runs.
struct LaunchProcess {
  std::string label;  ///< "server 0.1", "trainer 1.0"
  bool server = false;
  std::int32_t machine = 0;
  std::vector<std::string> env;   ///< KEY=VALUE added to the environment
  std::vector<std::string> argv;  ///< the command as run here (ssh ... for remote)
  bool remote = false;
  std::string host;       ///< the machine's address in the ip config
  pid_t pid = -1;         ///< the program (not its keeper)
  pid_t keeper = -1;      ///< its keeper while alive (runtime/detail/process_keeper.hpp)
  int records = -1;       ///< the keeper's record pipe while alive
  bool running = false;   ///< started and not yet reported ended
  bool reported = false;  ///< its end was handled by the launcher
  int status = 0;         ///< wait status of the program once ended
  /// Peak resident memory of the program in bytes once ended (its keeper's wait4); -1 when
  /// unknown: not ended, its keeper died, or remote (the keeper waits on ssh, not on it).
  std::int64_t peak_rss_bytes = -1;
  std::chrono::steady_clock::time_point started{}, ended{};
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
/// ssh options every remote command gets: fail instead of asking for a password, and
/// give up on a host that stopped answering after about `lease` (ServerAliveInterval a
/// quarter of it, 3 unanswered probes; at least 1 s).
inline std::vector<std::string> ssh_options(std::chrono::milliseconds lease) {
  const auto every = std::max<long long>(1, lease.count() / 4000);
  return {"-o", "BatchMode=yes",        "-o", "ServerAliveInterval=" + std::to_string(every),
          "-o", "ServerAliveCountMax=3"};
}

/// The exit status ssh itself uses for its own failures (connect, authentication).
inline constexpr int ssh_failed = 255;

/// The folder every process runs in: --workspace, else the launcher's own.
inline std::string launch_workspace(const LaunchOptions& o) {
  return o.workspace.empty() ? std::filesystem::current_path().string() : o.workspace.string();
}

inline std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           ::strsignal(WTERMSIG(status)) + ")";
  return "ended with wait status " + std::to_string(status);
}

/// How long the check of the remote machines may take: ssh's ConnectTimeout and 5 s more.
inline constexpr std::chrono::seconds remote_connect_timeout{10};
inline constexpr std::chrono::seconds remote_check_timeout{15};

/// Starts `argv` with stdin /dev/null and stdout + stderr into a pipe; returns the pid and
/// the pipe's read end (non-blocking).
inline std::pair<pid_t, int> start_captured(const std::vector<std::string>& argv) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw IoError("pipe", std::strerror(errno));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw IoError("fork", std::strerror(e));
  }
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDONLY);
    ::dup2(null, 0);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  return {pid, fds[0]};
}

/// Before anything starts: logs into every remote machine once (all at once) and checks
/// that the workspace and the programs exist there (`distgraph` itself, which runs the
/// lease and the servers, the server program and the trainer command). Throws MachineError
/// naming the machine, its address and what is wrong (every failing machine, one after
/// the other), at the latest remote_check_timeout after the start.
inline void check_remote_machines(const LaunchOptions& o, const std::vector<LaunchProcess>& procs) {
  struct Check {
    std::int32_t machine;
    std::string host;
    pid_t pid = -1;
    int out = -1;
    std::string output;
    std::optional<int> status;
  };
  std::vector<Check> checks;
  for (const auto& p : procs)
    if (p.remote && std::none_of(checks.begin(), checks.end(),
                                 [&](const Check& c) { return c.machine == p.machine; }))
      checks.push_back({p.machine, p.host, -1, -1, {}, std::nullopt});
  if (checks.empty()) return;
  const std::string ws = launch_workspace(o);
  std::string script = "cd " + shell_quote(ws) + " 2>/dev/null || exit 3; for p in";
  for (const auto* prog : {&o.distgraph_program, &o.server_program, &o.program[0]})
    if (!prog->empty()) script += " " + shell_quote(*prog);
  script +=
      "; do case $p in */*) test -f \"$p\" && test -x \"$p\" ;; *) command -v \"$p\" "
      ">/dev/null 2>&1 ;; esac || { echo \"$p\"; exit 4; }; done";
  for (auto& c : checks) {
    std::vector<std::string> argv{
        o.ssh, "-T", "-o", "ConnectTimeout=" + std::to_string(remote_connect_timeout.count())};
    for (auto& opt : ssh_options(o.lease)) argv.push_back(std::move(opt));
    argv.insert(argv.end(), {c.host, script});
    std::tie(c.pid, c.out) = start_captured(argv);
  }
  const Deadline until = deadline_in(remote_check_timeout);
  for (;;) {
    std::vector<pollfd> fds;
    for (auto& c : checks)
      if (c.out >= 0) fds.push_back({c.out, POLLIN, 0});
    ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(ms_left(until), 100)));
    bool running = false;
    for (auto& c : checks) {
      char buf[4096];
      ssize_t n;
      while (c.out >= 0 && (n = ::read(c.out, buf, sizeof buf)) > 0)
        c.output.append(buf, static_cast<std::size_t>(n));
      int st = 0;
      if (!c.status && ::waitpid(c.pid, &st, WNOHANG) == c.pid) c.status = st;
      running = running || !c.status;
    }
    if (!running || ms_left(until) <= 0) break;
  }
  const Check* first = nullptr;
  std::string first_what, others;
  for (auto& c : checks) {
    if (!c.status) {
      ::kill(c.pid, SIGKILL);
      ::waitpid(c.pid, nullptr, 0);
    }
    ::close(c.out);
    // ssh's own message, or the script's: the last line.
    while (!c.output.empty() && (c.output.back() == '\n' || c.output.back() == '\r'))
      c.output.pop_back();
    if (const auto nl = c.output.rfind('\n'); nl != std::string::npos) c.output.erase(0, nl + 1);
    const int code = c.status && WIFEXITED(*c.status) ? WEXITSTATUS(*c.status) : -1;
    if (code == 0) continue;
    std::string what;
    if (!c.status)
      what = "no answer over ssh within " + std::to_string(remote_check_timeout.count()) +
             " s; expected a host that answers ssh at this address";
    else if (code == ssh_failed)
      what = "ssh failed (" + c.output +
             "); expected the host to be up, its sshd to run and a login without a password "
             "(keys, BatchMode)";
    else if (code == 3)
      what = "no workspace folder " + ws + " there; expected it on every machine (--workspace)";
    else if (code == 4)
      what = "program " + c.output + " not found there (in " + ws +
             "); expected it at the same path on every machine";
    else
      what = "the check over ssh " + describe_status(*c.status) + " (" + c.output + ")";
    if (first == nullptr) {
      first = &c;
      first_what = what;
    } else {
      others += std::string("; ") + MachineError(c.machine, c.host, what).what();
    }
  }
  if (first != nullptr) throw MachineError(first->machine, first->host, first_what + others);
}

/// The port the trainers' process group meets on at the first machine: MASTER_PORT when
/// set; else a free port here when the first machine is this one and the launch is real;
/// else the first machine's server port + 1000. A port found free here is none of the
/// servers' ports: they are not listening yet, so the system may hand out one of them.
inline std::string master_port(const LaunchOptions& o, const IpConfig& ip) {
  if (const char* mp = std::getenv("MASTER_PORT")) return mp;
  const bool master_local = is_local_address(ip.machines[0].ip);
  if (!master_local || o.dry_run) return std::to_string(ip.machines[0].port + 1000);
  auto a_server_port = [&](int port) {
    for (const auto& m : ip.machines)
      if (port >= m.port && port < m.port + o.servers) return true;
    return false;
  };
  for (int attempt = 0; attempt < 100; ++attempt)
    if (const int p = free_local_port(); p != 0 && !a_server_port(p)) return std::to_string(p);
  throw IoError("127.0.0.1", "no free port for the trainers' process group");
}

/// Points `p` at its own file of the job's trace (--trace), named after its label, so
/// that the parts merge into one timeline.
inline void add_trace_environment(const LaunchOptions& o, LaunchProcess& p) {
  if (o.trace.empty()) return;
  std::string file = p.label;
  std::replace(file.begin(), file.end(), ' ', '-');
  std::string var = "DISTGRAPH_TRACE=";
  var += std::filesystem::absolute(trace_parts_dir(o.trace) / (file + ".json")).string();
  p.env.push_back(std::move(var));
  var = "DISTGRAPH_TRACE_NAME=";
  var += p.label;
  p.env.push_back(std::move(var));
}

/// Places `p`, whose argv is its command, on `host`: here it runs as is; on another machine
/// argv becomes the ssh line that runs it there, in workspace `ws`, under `distgraph lease`.
inline void place_process(const LaunchOptions& o, const std::string& ws, LaunchProcess& p,
                          const std::string& host) {
  add_trace_environment(o, p);
  p.remote = !is_local_address(host);
  p.host = host;
  if (!p.remote) return;
  // The remote shell gets the environment inline. `distgraph lease` holds the remote
  // process's tree for as long as the launcher's heartbeats arrive on the session's
  // input (runtime/lease.hpp): a cut-off host ends its processes by itself.
  // Appends, not "lit" + temporary: GCC 12 misreports the latter (-Wrestrict).
  std::string line = "cd ";
  line += shell_quote(ws);
  line += " && exec";
  const auto add = [&line](const std::vector<std::string>& words) {
    for (const auto& w : words) {
      line += ' ';
      line += shell_quote(w);
    }
  };
  add({o.distgraph_program, "lease", "--lease-ms", std::to_string(o.lease.count()), "--grace-ms",
       std::to_string(o.grace.count()), "--label", p.label, "--", "env"});
  add(p.env);
  add(p.argv);
  p.argv = {o.ssh, "-T"};
  for (auto& opt : ssh_options(o.lease)) p.argv.push_back(std::move(opt));
  p.argv.insert(p.argv.end(), {host, line});
}

/// Server `s` of machine `m` (of `machines`), not yet placed: `distgraph serve` with its
/// flags, or the user's --server-program, which reads the same settings from the
/// environment (initialize()). `job_env`: the TLS settings and DISTGRAPH_SCHED_BATCH as
/// variables.
inline LaunchProcess server_process(const LaunchOptions& o, std::int32_t machines, std::int32_t m,
                                    std::int32_t s, const std::vector<std::string>& job_env) {
  const std::string secret_arg = o.secret_file.string();
  LaunchProcess p;
  p.label = "server " + std::to_string(m) + "." + std::to_string(s);
  p.server = true;
  p.machine = m;
  if (!o.server_program.empty()) {
    p.env = {"DISTGRAPH_ROLE=server",
             "DISTGRAPH_IP_CONFIG=" + o.ip_config.string(),
             "DISTGRAPH_PART_CONFIG=" + o.part_config.string(),
             "DISTGRAPH_MACHINE_ID=" + std::to_string(m),
             "DISTGRAPH_SERVER_ID=" + std::to_string(s),
             "DISTGRAPH_NUM_SERVERS=" + std::to_string(o.servers),
             "DISTGRAPH_NUM_TRAINERS=" + std::to_string(o.trainers)};
    if (!secret_arg.empty()) p.env.push_back("DISTGRAPH_SECRET_FILE=" + secret_arg);
    for (auto& v : job_env) p.env.push_back(v);
    if (!o.checkpoint_dir.empty())
      p.env.push_back("DISTGRAPH_CHECKPOINT_DIR=" + o.checkpoint_dir.string());
    p.argv = {o.server_program};
    p.argv.insert(p.argv.end(), o.program.begin() + 1, o.program.end());
    return p;
  }
  p.argv = {o.distgraph_program, "serve",
            "--ip-config",       o.ip_config.string(),
            "--part-config",     o.part_config.string(),
            "--machine",         std::to_string(m),
            "--server-id",       std::to_string(s),
            "--servers",         std::to_string(o.servers),
            "--trainers",        std::to_string(o.trainers * machines)};
  if (!secret_arg.empty()) p.argv.insert(p.argv.end(), {"--secret-file", secret_arg});
  p.env = job_env;  // `distgraph serve` reads the same variables
  if (!o.checkpoint_dir.empty())
    p.argv.insert(p.argv.end(), {"--checkpoint-dir", o.checkpoint_dir.string()});
  return p;
}

/// Trainer `t` of machine `m`, not yet placed: the user's program with its rank, the
/// job's shape and the process group's meeting point (`master_port`) in its environment.
inline LaunchProcess trainer_process(const LaunchOptions& o, const IpConfig& ip, std::int32_t m,
                                     std::int32_t t, const std::string& master_port,
                                     const std::vector<std::string>& job_env) {
  const std::string secret_arg = o.secret_file.string();
  const std::int32_t machines = ip.num_machines();
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
  for (auto& v : job_env) p.env.push_back(v);
  if (!o.gloo_interface.empty()) p.env.push_back("GLOO_SOCKET_IFNAME=" + o.gloo_interface);
  p.argv = o.program;
  return p;
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
  const std::string ws = detail::launch_workspace(o);
  const std::string master_port = detail::master_port(o, ip);
  std::vector<std::string> job_env = tls_environment(o.tls);
  // Every process, remote ones too, follows the launching shell's choice.
  if (!read_sched_batch_environment()) job_env.push_back(std::string(sched_batch_variable) + "=0");
  if (!o.server_program.empty() && !o.dry_run) detail::check_program(o.server_program);
  std::vector<LaunchProcess> procs;
  const auto place = [&](LaunchProcess p) {
    detail::place_process(o, ws, p, ip.machines[static_cast<std::size_t>(p.machine)].ip);
    procs.push_back(std::move(p));
  };
  for (std::int32_t m = 0; m < machines; ++m)
    for (std::int32_t s = 0; s < o.servers; ++s)
      place(detail::server_process(o, machines, m, s, job_env));
  for (std::int32_t m = 0; m < machines; ++m)
    for (std::int32_t t = 0; t < o.trainers; ++t)
      place(detail::trainer_process(o, ip, m, t, master_port, job_env));
  return procs;
}

namespace detail {

/// One run of a launch: the steps of run_launch (start, watch, shut down, stop), sharing
/// the processes, their keepers and the output pump.
class LaunchRun {
 public:
  LaunchRun(const LaunchOptions& o, std::vector<LaunchProcess> procs, std::FILE* out)
      : o_(o), procs_(std::move(procs)), pump_(out, out_mu_) {
    sigemptyset(&watched_);
    for (int s : {SIGCHLD, SIGINT, SIGTERM}) sigaddset(&watched_, s);
    pthread_sigmask(SIG_BLOCK, &watched_, &old_mask_);
    signals_ = ::signalfd(-1, &watched_, SFD_NONBLOCK | SFD_CLOEXEC);
    int life[2];
    if (signals_ < 0 || ::pipe2(life, O_CLOEXEC) != 0) {
      const int e = errno;
      restore();
      throw IoError("launch",
                    std::string("cannot set up signal and life pipes: ") + std::strerror(e));
    }
    life_read_ = life[0];
    life_write_ = life[1];
    streams_.resize(procs_.size(), 0);
    beats_.resize(procs_.size(), -1);
    // Started after the mask above, which it inherits: the launcher's signals stay with
    // the signalfd.
    heart_ = std::thread([this] { beat(); });
  }
  LaunchRun(const LaunchRun&) = delete;
  LaunchRun& operator=(const LaunchRun&) = delete;
  ~LaunchRun() {
    // Only on an exception: make sure no tree outlives us (closing `life` would too).
    if (any_kept(false)) {
      signal_keepers(keeper_kill, false);
      wait_gone(deadline_in(std::chrono::seconds(10)), false);
    }
    stop_heart();
    pump_.join(std::chrono::milliseconds(0));
    restore();
  }

  int run() {
    if (!start_all()) return end(1);
    if (const auto failed = watch_trainers()) return end(*failed);
    request_shutdown();
    const int code = stop_servers();
    // What finished trainers left behind: their keepers end it within the grace period.
    if (!wait_gone(deadline_in(o_.grace + std::chrono::seconds(1)), false)) stop_all();
    return end(code);
  }

 private:
  /// Starts every process under a keeper; on failure stops what started.
  bool start_all() {
    try {
      for (std::size_t i = 0; i < procs_.size(); ++i) start(i);
      return true;
    } catch (const std::exception& e) {
      say(std::string("could not start every process: ") + e.what());
      stop_all();
      return false;
    }
  }

  void start(std::size_t i) {
    LaunchProcess& p = procs_[i];
    ExecPlan plan(p.argv, p.remote ? std::vector<std::string>{} : p.env, o_.workspace.string(),
                  old_mask_);
    int fds[2], beat[2] = {-1, -1};
    if (::pipe2(fds, O_CLOEXEC) != 0) throw IoError("pipe", std::strerror(errno));
    // A remote process's ssh reads the heartbeats that keep its `distgraph lease` going.
    if (p.remote && ::pipe2(beat, O_CLOEXEC) != 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      throw IoError("pipe", std::strerror(errno));
    }
    plan.input = beat[0];
    KeptProcess k;
    try {
      k = start_kept(plan, fds[1], life_read_, o_.grace);
    } catch (...) {
      ::close(fds[0]);
      for (int fd : beat)
        if (fd >= 0) ::close(fd);
      throw;
    }
    if (p.remote) {
      ::close(beat[0]);
      ::fcntl(beat[1], F_SETFL, ::fcntl(beat[1], F_GETFL) | O_NONBLOCK);
      std::lock_guard lock(beats_mu_);
      beats_[i] = beat[1];
    }
    p.pid = k.program;
    p.started = std::chrono::steady_clock::now();
    p.keeper = k.keeper;
    p.records = k.records;
    p.running = true;
    streams_[i] = pump_.add(fds[0], p.label);
  }

  /// Waits until every trainer exited 0 (nullopt), or returns the launch's exit code after
  /// stopping everything: 1 when a process failed, 128 + N on signal N.
  std::optional<int> watch_trainers() {
    std::size_t trainers_left = 0;
    for (const auto& p : procs_) trainers_left += p.server ? 0 : 1;
    while (trainers_left > 0) {
      if (const int sig = wait_events(deadline_in(std::chrono::seconds(1)))) {
        say(std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
            "; stopping every process");
        stop_all();
        return 128 + sig;
      }
      for (LaunchProcess* p : take_ended()) {
        const bool ok = WIFEXITED(p->status) && WEXITSTATUS(p->status) == 0;
        if (!p->server && ok) {
          --trainers_left;
          continue;
        }
        if (p->remote && WIFEXITED(p->status) && WEXITSTATUS(p->status) == ssh_failed)
          say("machine " + std::to_string(p->machine) + " (" + p->host + "): lost: the ssh of " +
              p->label +
              " exited 255 (the host stopped answering, or refused the connection or "
              "the login); stopping every process");
        else
          say(p->label + " (pid " + std::to_string(p->pid) + ") " + describe_status(p->status) +
              "; stopping every process");
        stop_all();
        return 1;
      }
    }
    return std::nullopt;
  }

  /// Every trainer succeeded: asks every server to shut down (a failed request is said and
  /// left to stop_servers' signals).
  void request_shutdown() {
    try {
      const IpConfig ip = read_ip_config(o_.ip_config, o_.servers);
      AsioTransportOptions to;
      to.connect_timeout = std::chrono::seconds(5);
      if (!o_.secret_file.empty()) to.secret = read_secret_file(o_.secret_file);
      to.tls = o_.tls;
      AsioTransport t(ip.all_servers(o_.servers), to);
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
  }

  /// Waits for the servers to leave after the shutdown request, then insists; returns 0 when
  /// every server exited 0.
  int stop_servers() {
    if (!wait_gone(deadline_in(o_.shutdown_grace), true)) {
      say("servers still running after the shutdown request; sending SIGTERM");
      stop(true);
    }
    int code = 0;
    for (const auto& p : procs_)
      if (p.server && !(WIFEXITED(p.status) && WEXITSTATUS(p.status) == 0)) {
        say(p.label + " " + describe_status(p.status) + " during shutdown");
        code = 1;
      }
    return code;
  }

  void stop_all() { stop(false); }

  /// SIGTERM to each (selected) tree, SIGKILL after the grace period; returns once every
  /// keeper is gone (a keeper that outlives 10 s more is killed itself).
  void stop(bool servers_only) {
    signal_keepers(keeper_terminate, servers_only);
    if (wait_gone(deadline_in(o_.grace), servers_only)) return;
    signal_keepers(keeper_kill, servers_only);
    if (wait_gone(deadline_in(std::chrono::seconds(10)), servers_only)) return;
    signal_keepers(SIGKILL, servers_only);
    wait_gone(deadline_in(std::chrono::seconds(2)), servers_only);
  }

  /// Waits until no (selected) keeper is left or `deadline`; true if none is left.
  bool wait_gone(Deadline deadline, bool servers_only) {
    for (;;) {
      poll_records();
      reap_keepers();
      if (!any_kept(servers_only)) return true;
      if (ms_left(deadline) <= 0) return false;
      wait_events(deadline);  // a signal here changes nothing: we are stopping already
    }
  }

  /// Blocks until a signal, a record or `deadline` (at most 1 s); returns SIGINT/SIGTERM
  /// when the launcher received one, else 0. SIGCHLD only wakes it.
  int wait_events(Deadline deadline) {
    std::vector<pollfd> fds{{signals_, POLLIN, 0}};
    for (const auto& p : procs_)
      if (p.records >= 0) fds.push_back({p.records, POLLIN, 0});
    const auto left = std::min<long long>(ms_left(deadline), 1000);
    ::poll(fds.data(), fds.size(), static_cast<int>(left));
    int received = 0;
    signalfd_siginfo si{};
    while (::read(signals_, &si, sizeof si) == static_cast<ssize_t>(sizeof si))
      if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM)
        received = static_cast<int>(si.ssi_signo);
    return received;
  }

  /// Processes whose end was reported since the last call (by their keeper's record, or by
  /// the keeper's own end when it died without one).
  std::vector<LaunchProcess*> take_ended() {
    poll_records();
    reap_keepers();
    std::vector<LaunchProcess*> out;
    for (auto& p : procs_)
      if (!p.running && !p.reported) {
        p.reported = true;
        out.push_back(&p);
      }
    return out;
  }

  void poll_records() {
    for (auto& p : procs_) {
      KeeperRecord r{};
      while (p.records >= 0 && ::read(p.records, &r, sizeof r) == static_cast<ssize_t>(sizeof r))
        if (r.kind == keeper_ended && p.running) {
          p.running = false;
          p.status = r.value;
          p.ended = std::chrono::steady_clock::now();
          if (!p.remote) p.peak_rss_bytes = r.peak_rss_kib * 1024;
        }
    }
  }

  void reap_keepers() {
    int st = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &st, WNOHANG)) > 0)
      for (std::size_t i = 0; i < procs_.size(); ++i) {
        LaunchProcess& p = procs_[i];
        if (p.keeper != pid) continue;
        poll_records();
        if (p.running) {  // the keeper died before reporting: its status is all we know
          p.running = false;
          p.status = st;
          p.ended = std::chrono::steady_clock::now();
        }
        p.keeper = -1;
        ::close(p.records);
        p.records = -1;
        {
          std::lock_guard lock(beats_mu_);
          if (beats_[i] >= 0) ::close(beats_[i]);
          beats_[i] = -1;
        }
        pump_.tree_gone(streams_[i], output_linger);
      }
  }

  bool any_kept(bool servers_only) const {
    for (const auto& p : procs_)
      if (p.keeper > 0 && (!servers_only || p.server)) return true;
    return false;
  }

  void signal_keepers(int sig, bool servers_only) {
    for (const auto& p : procs_)
      if (p.keeper > 0 && (!servers_only || p.server)) ::kill(p.keeper, sig);
  }

  /// The heartbeat thread: a byte a second to every remote process's ssh, until stopped.
  /// A full pipe (ssh stalled on a dead link) or a closed one is skipped: the lease on the
  /// other side and ssh's ServerAlive probes decide what a silence means.
  void beat() {
    sigset_t pipe_signal;
    sigemptyset(&pipe_signal);
    sigaddset(&pipe_signal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);  // a gone ssh gives EPIPE, not death
    std::unique_lock lock(beats_mu_);
    while (!heart_stop_) {
      for (const int fd : beats_)
        if (fd >= 0) (void)::write(fd, &lease_heartbeat, 1);
      heart_cv_.wait_for(lock, std::chrono::seconds(1));
    }
  }

  void stop_heart() {
    {
      std::lock_guard lock(beats_mu_);
      heart_stop_ = true;
    }
    heart_cv_.notify_all();
    if (heart_.joinable()) heart_.join();
    for (int& fd : beats_)
      if (fd >= 0) {
        ::close(fd);
        fd = -1;
      }
  }

  void say(const std::string& line) {
    std::lock_guard lock(out_mu_);
    std::fprintf(stderr, "distgraph launch: %s\n", line.c_str());
    std::fflush(stderr);
  }

  int end(int code) {
    stop_heart();
    pump_.join(output_linger);
    if (!o_.report.empty()) write_report(code);
    if (!o_.trace.empty()) merge_trace_parts();
    return code;
  }

  /// o_.trace: the part files this computer's processes wrote, as one timeline.
  void merge_trace_parts() {
    const auto dir = trace_parts_dir(o_.trace);
    std::vector<std::string> parts;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.path().extension() == ".json") parts.push_back(e.path().string());
    std::sort(parts.begin(), parts.end());
    try {
      trace::merge_traces(parts, o_.trace.string());
      std::filesystem::remove_all(dir, ec);
      say("trace of " + std::to_string(parts.size()) + " processes in " + o_.trace.string());
    } catch (const Error& e) {
      say("trace not merged: " + std::string(e.what()) + " (the parts stay in " + dir.string() +
          ")");
    }
  }

  /// o_.report: {"exit": code, "processes": [{label, server, machine, pid, status, seconds,
  /// peak_rss_bytes}]}, written under a temporary name and renamed. A failure is said, not
  /// thrown: the launch's own outcome matters more than its summary.
  void write_report(int code) {
    nlohmann::json processes = nlohmann::json::array();
    for (const LaunchProcess& p : procs_) {
      const bool done = p.pid > 0 && !p.running && p.ended >= p.started;
      const double secs = done ? std::chrono::duration<double>(p.ended - p.started).count() : -1;
      processes.push_back({{"label", p.label},
                           {"server", p.server},
                           {"machine", p.machine},
                           {"pid", p.pid},
                           {"status", done ? describe_status(p.status) : std::string("not ended")},
                           {"seconds", std::round(secs * 1000) / 1000},
                           {"peak_rss_bytes", p.peak_rss_bytes}});
    }
    const std::string s =
        nlohmann::json{{"exit", code}, {"processes", std::move(processes)}}.dump(1) + "\n";
    try {
      write_file_durably(o_.report, s);
    } catch (const IoError& e) {
      say(std::string("could not write the process report: ") + e.what());
    }
  }

  void restore() {
    if (signals_ >= 0) ::close(signals_);
    if (life_read_ >= 0) ::close(life_read_);
    if (life_write_ >= 0) ::close(life_write_);
    signals_ = life_read_ = life_write_ = -1;
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }

  /// How long output may still arrive after a process tree is gone.
  static constexpr std::chrono::milliseconds output_linger{1000};

  const LaunchOptions& o_;
  std::vector<LaunchProcess> procs_;
  std::mutex out_mu_;
  OutputPump pump_;
  std::vector<std::size_t> streams_;  ///< pump stream of each process
  sigset_t watched_{}, old_mask_{};
  int signals_ = -1;                      ///< signalfd of SIGCHLD, SIGINT, SIGTERM
  int life_read_ = -1, life_write_ = -1;  ///< hangs up in every keeper when we are gone
  std::mutex beats_mu_;
  std::vector<int> beats_;  ///< write end of each remote process's heartbeat pipe, or -1
  std::condition_variable heart_cv_;
  bool heart_stop_ = false;
  std::thread heart_;
};

}  // namespace detail

/// Prints the commands a dry run would start, one line each with its environment.
inline void print_launch(const std::vector<LaunchProcess>& procs, std::FILE* out) {
  for (const auto& p : procs) {
    std::fprintf(out, "[%s]%s", p.label.c_str(), p.remote ? " (ssh)" : "");
    if (!p.remote)
      for (const auto& e : p.env) std::fprintf(out, " %s", shell_quote(e).c_str());
    for (const auto& a : p.argv) std::fprintf(out, " %s", shell_quote(a).c_str());
    std::fprintf(out, "\n");
  }
}

/// Runs a launch to the end (see docs/RUNTIME.md): starts every process, each under a
/// keeper that holds its whole process tree, with output prefixed by its label; forwards
/// SIGINT/SIGTERM; shuts the servers down once every trainer exited 0 (a shutdown request,
/// then SIGTERM after shutdown_grace, SIGKILL after grace) and returns 0; when any process
/// fails, stops every tree (SIGTERM, SIGKILL after grace), names the failed process and
/// returns 1 (128 + signal when the launcher was signalled). Every descendant dies with the
/// launcher even when it is SIGKILLed (the keepers see their life pipe hang up). Must be
/// called from the main thread before other threads exist: it blocks SIGCHLD/SIGINT/SIGTERM
/// in the calling thread (restored on return).
inline int run_launch(const LaunchOptions& o, std::FILE* out = stdout) {
  auto procs = plan_launch(o);
  if (o.dry_run) {
    print_launch(procs, out);
    return 0;
  }
  detail::check_remote_machines(o, procs);
  if (!o.trace.empty()) {  // a fresh folder: no part of an earlier run is merged
    std::filesystem::remove_all(trace_parts_dir(o.trace));
    std::filesystem::create_directories(trace_parts_dir(o.trace));
  }
  detail::LaunchRun run(o, std::move(procs), out);
  return run.run();
}

}  // namespace distgraph
