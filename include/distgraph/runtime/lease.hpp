// The remote end of a launch: runs a program on a machine the launcher reaches over ssh for
// as long as the launcher's heartbeats keep arriving (`distgraph lease`).
//
// A host whose link is cut can no longer hear the launcher, and TCP alone would keep its
// processes alive for hours (keepalive's 2 hours, or a 300 s collective timeout at best).
// The launcher therefore writes a heartbeat byte every second into each remote ssh's
// standard input; on the remote host `distgraph lease` reads them and holds the program's
// whole tree under a keeper (runtime/detail/process_keeper.hpp). When no heartbeat came
// for the lease, or the input ends (the launcher stopped the ssh, or died), it stops the
// tree: SIGTERM, SIGKILL after the grace period.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "distgraph/core/deadline.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/runtime/detail/process_keeper.hpp"

namespace distgraph {

/// What `distgraph lease` runs and for how long it waits for a heartbeat.
struct LeaseOptions {
  std::vector<std::string> program;         ///< the command (searched on PATH)
  std::chrono::milliseconds lease{12'000};  ///< longest silence before the tree is stopped
  std::chrono::milliseconds grace{5'000};   ///< SIGTERM -> SIGKILL
  int heartbeats = 0;  ///< where heartbeats arrive (any bytes; end of input = launcher gone)
  std::string label;   ///< for messages, e.g. "server 1.0"
};

/// The byte the launcher sends as a heartbeat (any byte renews the lease).
inline constexpr char lease_heartbeat = '.';

namespace detail {

/// Exit status of a program that ended with wait status `st`, as a shell reports it.
inline int shell_status(int st) {
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return 1;
}

}  // namespace detail

namespace detail {

/// The program's output on its way to the lease's stdout (the ssh session). The program
/// writes into a pipe the lease drains, never into the session itself: once the session
/// is gone, its writes still succeed (and are dropped) instead of killing it with SIGPIPE
/// before it has cleaned up, and a stalled session cannot block the lease's clock.
class OutputRelay {
 public:
  explicit OutputRelay(int from) : from_(from) {
    ::fcntl(1, F_SETFL, ::fcntl(1, F_GETFL) | O_NONBLOCK);
  }
  /// Poll entries: the pipe while there is room, stdout while output waits.
  pollfd input() const { return {pending_.size() < max_pending ? from_ : -1, POLLIN, 0}; }
  pollfd output() const { return {pending_.empty() || sink_gone_ ? -1 : 1, POLLOUT, 0}; }
  /// Moves what can be moved without blocking.
  void pump() {
    char buf[16384];
    ssize_t n;
    while (pending_.size() < max_pending && (n = ::read(from_, buf, sizeof buf)) > 0)
      pending_.append(buf, static_cast<std::size_t>(n));
    while (!pending_.empty() && !sink_gone_) {
      const auto w = ::write(1, pending_.data(), pending_.size());
      if (w > 0) {
        pending_.erase(0, static_cast<std::size_t>(w));
      } else {
        if (w < 0 && errno != EAGAIN && errno != EINTR) sink_gone_ = true;  // EPIPE: dropped
        break;
      }
    }
    if (sink_gone_) pending_.clear();
  }

 private:
  static constexpr std::size_t max_pending = 4 << 20;
  int from_;
  std::string pending_;
  bool sink_gone_ = false;
};

}  // namespace detail

/// Runs `o.program` under a keeper, with /dev/null as its input, while heartbeats arrive on
/// `o.heartbeats`; returns the program's exit status (128 + N for signal N). When the lease
/// runs out (no byte for o.lease) or the input ends, says so on stderr, stops the whole
/// tree (SIGTERM, SIGKILL after o.grace) and returns 1 once every process of it is gone.
/// SIGTERM, SIGINT and SIGHUP to this process stop the tree the same way. The program's
/// stdout and stderr reach this process's stdout through a relay (detail::OutputRelay).
/// Blocks those signals and SIGCHLD in the calling thread and ignores SIGPIPE; call it
/// from the main thread of a program that runs nothing else. Throws IoError when the
/// program cannot be started.
inline int run_lease(const LeaseOptions& o) {
  if (o.program.empty()) throw InvalidArgument("lease: no program after '--'");
  sigset_t watched, old;
  sigemptyset(&watched);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&watched, s);
  pthread_sigmask(SIG_BLOCK, &watched, &old);
  ::signal(SIGPIPE, SIG_IGN);  // a gone session gives EPIPE
  const int signals = ::signalfd(-1, &watched, SFD_NONBLOCK | SFD_CLOEXEC);
  int life[2], out[2];
  if (signals < 0 || ::pipe2(life, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0)
    throw IoError("lease", std::string("cannot set up its pipes: ") + std::strerror(errno));
  // The program reads nothing of ours: the heartbeats stay on a descriptor it never sees.
  const int beats = ::fcntl(o.heartbeats, F_DUPFD_CLOEXEC, 3);
  if (const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC); null >= 0) {
    ::dup2(null, o.heartbeats);
    ::close(null);
  }
  ::fcntl(beats, F_SETFL, ::fcntl(beats, F_GETFL) | O_NONBLOCK);
  ::fcntl(out[0], F_SETFL, ::fcntl(out[0], F_GETFL) | O_NONBLOCK);
  const detail::ExecPlan plan(o.program, {}, "", old);
  const detail::KeptProcess k = detail::start_kept(plan, out[1], life[0], o.grace);
  detail::OutputRelay relay(out[0]);
  const auto say = [&](const std::string& what) {
    std::fprintf(stderr, "distgraph lease%s%s: %s\n", o.label.empty() ? "" : " of ",
                 o.label.c_str(), what.c_str());
    std::fflush(stderr);
  };

  // Stages of stopping: 0 running, 1 SIGTERM sent, 2 SIGKILL sent, 3 the keeper killed.
  int stage = 0, status = 0;
  bool ended = false;
  Deadline expires = deadline_in(o.lease), next_stage{};
  const auto read_records = [&] {
    detail::KeeperRecord r{};
    while (::read(k.records, &r, sizeof r) == static_cast<ssize_t>(sizeof r))
      if (r.kind == detail::keeper_ended && !ended) {
        ended = true;
        status = r.value;
      }
  };
  const auto stop = [&](const std::string& why) {
    if (stage > 0) return;
    say(why + "; stopping " + o.program[0]);
    ::kill(k.keeper, detail::keeper_terminate);
    stage = 1;
    next_stage = deadline_in(o.grace);
  };
  for (;;) {
    pollfd fds[] = {{signals, POLLIN, 0},
                    {k.records, POLLIN, 0},
                    {stage ? -1 : beats, POLLIN, 0},
                    relay.input(),
                    relay.output()};
    const Deadline until = stage ? next_stage : expires;
    ::poll(fds, 5, static_cast<int>(std::min<long long>(ms_left(until), 1000)));
    relay.pump();
    signalfd_siginfo si{};
    while (::read(signals, &si, sizeof si) == static_cast<ssize_t>(sizeof si))
      if (si.ssi_signo != SIGCHLD)
        stop(std::string("received ") + ::strsignal(static_cast<int>(si.ssi_signo)));
    read_records();
    if (int st = 0; ::waitpid(k.keeper, &st, WNOHANG) == k.keeper) {
      read_records();  // the keeper may have reported and exited since the read above
      break;           // the tree is gone
    }
    if (stage == 0) {
      char buf[256];
      const auto n = ::read(beats, buf, sizeof buf);
      if (n > 0)
        expires = deadline_in(o.lease);
      else if (n == 0 || (errno != EAGAIN && errno != EINTR))
        stop("the launcher's connection closed");
      else if (ms_left(expires) <= 0)
        stop("no heartbeat from the launcher for " + std::to_string(o.lease.count()) + " ms");
    } else if (stage < 3 && ms_left(next_stage) <= 0) {
      ::kill(k.keeper, stage == 1 ? detail::keeper_kill : SIGKILL);
      ++stage;
      next_stage = deadline_in(std::chrono::seconds(10));
    }
  }
  relay.pump();  // what the tree wrote last
  for (int fd : {k.records, signals, life[0], life[1], out[0], beats}) ::close(fd);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return stage == 0 && ended ? detail::shell_status(status) : 1;
}

}  // namespace distgraph
