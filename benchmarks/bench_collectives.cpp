// bench_collectives: the gradient all-reduce of 2 trainers on loopback, through the trainers'
// ring (RingGroup, what CPU trainers use) and through gloo, beside the bytes alone.
//
//   bench_collectives [--floats N] [--calls C] [--runs R] [--json]
//
// Two trainers are two threads of this process, each with its own store connection and
// groups (as the tests' trainers are), summing a float32 tensor of --floats elements
// (default 75,567: bench_train's GraphSAGE gradients, 302 KB) C times; best of R runs.
// Figures (times per call, microseconds; ratio = bound / value):
//   allreduce_ring   RingGroup::allreduce (what make_trainer_groups gives CPU gradients)
//   allreduce_gloo   c10d's ProcessGroupGloo::allreduce (DISTGRAPH_GRADIENT_GROUP=gloo)
// params.cpu_us: the process's CPU time per call and trainer (both trainers' threads and the
// groups' own threads, user + system).
// Bound (raw_tcp_exchange): the same two threads each send their whole tensor to the other
// over a loopback TCP connection and receive the other's (non-blocking sockets, poll), then
// add it: the bytes an all-reduce of two must move, with nothing else.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <torch/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <future>
#include <limits>
#include <string>
#include <vector>

#include "distgraph/core/timer.hpp"
#include "distgraph/train/allreduce.hpp"
#include "distgraph/train/threads.hpp"
#include "support/flags.hpp"
#include "support/report.hpp"

namespace {

using distgraph::bench::Figure;
using distgraph::bench::Kind;

struct Args {
  std::int64_t floats = 75567;
  int calls = 400;
  int runs = 3;
};

/// Wall and CPU seconds per call and trainer of `calls` calls of `step(rank)` on 2 threads
/// that start together (after `setup(rank)` on each).
struct Timing {
  double wall_s = std::numeric_limits<double>::infinity(), cpu_s = 0;
};

Timing time_pair(int calls, const std::function<std::function<void()>(int)>& setup) {
  std::promise<void> go;
  auto go_f = go.get_future().share();
  std::vector<std::promise<void>> ready(2);
  std::vector<std::future<double>> done;
  for (int r = 0; r < 2; ++r)
    done.push_back(std::async(std::launch::async, [&, r] {
      std::function<void()> step;
      try {
        step = setup(r);
        for (int i = 0; i < 10; ++i) step();  // warm: connections, buffers
      } catch (...) {
        ready[static_cast<std::size_t>(r)].set_value();  // the main thread reads the error
        throw;
      }
      ready[static_cast<std::size_t>(r)].set_value();
      go_f.wait();
      distgraph::Stopwatch w;
      for (int i = 0; i < calls; ++i) step();
      return w.seconds();
    }));
  for (auto& p : ready) p.get_future().wait();
  const double cpu0 = distgraph::process_cpu_seconds();
  go.set_value();
  double wall = 0;
  for (auto& f : done) wall = std::max(wall, f.get());
  return {wall / calls, (distgraph::process_cpu_seconds() - cpu0) / (2.0 * calls)};
}

/// Both trainers' store (rank 0 hosts it on a free port) and rendezvous options.
struct Meeting {
  std::promise<std::uint16_t> port;
  std::shared_future<std::uint16_t> port_f = port.get_future().share();

  std::pair<c10::intrusive_ptr<c10d::Store>, distgraph::RendezvousOptions> join(int rank) {
    distgraph::RendezvousOptions o{.master_addr = "127.0.0.1",
                                   .master_port = 0,
                                   .rank = rank,
                                   .world_size = 2,
                                   .timeout = std::chrono::seconds(60),
                                   .hostname = "127.0.0.1",
                                   .interface = {}};
    if (rank == 1) o.master_port = port_f.get();
    auto store = distgraph::make_tcp_store(o);
    if (rank == 0) port.set_value(store->getPort());
    return {store, o};
  }
};

Timing time_group(const Args& a, bool ring) {
  Meeting m;
  std::vector<c10::intrusive_ptr<distgraph::CollectiveGroup>> groups(2);
  std::vector<torch::Tensor> tensors(2);
  return time_pair(a.calls, [&](int r) -> std::function<void()> {
    auto [store, o] = m.join(r);
    auto& g = groups[static_cast<std::size_t>(r)];
    if (ring)
      g = c10::make_intrusive<distgraph::RingGroup>(store, o);
    else
      g = distgraph::make_gloo_group(store, o);
    tensors[static_cast<std::size_t>(r)] = torch::ones({a.floats});
    return [&g, &t = tensors[static_cast<std::size_t>(r)]] {
      std::vector<torch::Tensor> ts{t};
      g->allreduce(ts)->wait();
    };
  });
}

/// The bound: each thread sends its tensor and receives the other's at once, then adds it.
Timing time_raw(const Args& a) {
  int fds[2];
  {
    const int l = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof addr;
    ::bind(l, reinterpret_cast<sockaddr*>(&addr), n);
    ::listen(l, 1);
    ::getsockname(l, reinterpret_cast<sockaddr*>(&addr), &n);
    fds[0] = ::socket(AF_INET, SOCK_STREAM, 0);
    ::connect(fds[0], reinterpret_cast<sockaddr*>(&addr), n);
    fds[1] = ::accept(l, nullptr, nullptr);
    ::close(l);
    for (const int fd : fds) {
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::fcntl(fd, F_SETFL, O_NONBLOCK);
    }
  }
  std::vector<std::vector<float>> mine(2,
                                       std::vector<float>(static_cast<std::size_t>(a.floats), 1));
  std::vector<std::vector<float>> theirs(2, std::vector<float>(static_cast<std::size_t>(a.floats)));
  const Timing t = time_pair(a.calls, [&](int r) -> std::function<void()> {
    return [&, r] {
      const int fd = fds[r];
      auto& out = mine[static_cast<std::size_t>(r)];
      auto& in = theirs[static_cast<std::size_t>(r)];
      const std::size_t bytes = out.size() * sizeof(float);
      std::size_t sent = 0, got = 0;
      const auto* s = reinterpret_cast<const char*>(out.data());
      auto* d = reinterpret_cast<char*>(in.data());
      while (sent < bytes || got < bytes) {
        bool moved = false;
        if (sent < bytes)
          if (const ssize_t k = ::send(fd, s + sent, bytes - sent, MSG_NOSIGNAL); k > 0)
            sent += static_cast<std::size_t>(k), moved = true;
        if (got < bytes)
          if (const ssize_t k = ::recv(fd, d + got, bytes - got, 0); k > 0)
            got += static_cast<std::size_t>(k), moved = true;
        if (!moved) {
          pollfd p{
              fd, static_cast<short>((sent < bytes ? POLLOUT : 0) | (got < bytes ? POLLIN : 0)), 0};
          ::poll(&p, 1, 1000);
        }
      }
      for (std::size_t i = 0; i < out.size(); ++i) out[i] += in[i];
    };
  });
  ::close(fds[0]);
  ::close(fds[1]);
  return t;
}

Timing best_of(int runs, const std::function<Timing()>& f) {
  Timing best;
  for (int i = 0; i < runs; ++i)
    if (const Timing t = f(); t.wall_s < best.wall_s) best = t;
  return best;
}

/// Times the ring, gloo and the bound, and reports them.
void run(distgraph::bench::Reporter& rep, const Args& a) {
  const Timing raw = best_of(a.runs, [&] { return time_raw(a); });
  const nlohmann::json common = {{"floats", a.floats},
                                 {"bytes", a.floats * 4},
                                 {"trainers", 2},
                                 {"calls", a.calls},
                                 {"runs", a.runs}};
  for (const bool ring : {true, false}) {
    rep.note(ring ? "the ring ..." : "gloo ...");
    const Timing t = best_of(a.runs, [&] { return time_group(a, ring); });
    nlohmann::json params = common;
    params["cpu_us"] = t.cpu_s * 1e6;
    params["bound_cpu_us"] = raw.cpu_s * 1e6;
    rep.add(Figure{.figure = ring ? "allreduce_ring" : "allreduce_gloo",
                   .value = t.wall_s * 1e6,
                   .unit = "us",
                   .bound = raw.wall_s * 1e6,
                   .bound_name = "raw_tcp_exchange",
                   .kind = Kind::time,
                   .params = params,
                   .label = "cpu " + std::to_string(static_cast<int>(t.cpu_s * 1e6)) + " us (raw " +
                            std::to_string(static_cast<int>(raw.cpu_s * 1e6)) + ")"});
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  distgraph::bench::Flags("bench_collectives")
      .add("--floats", a.floats, 1, 1 << 28)
      .add("--calls", a.calls, 1, 1000000)
      .add("--runs", a.runs, 1, 100)
      .parse(argc, argv);
  distgraph::bench::Reporter rep(argc, argv, "bench_collectives");
  distgraph::set_intra_op_threads(1);  // torch and OpenBLAS, as a trainer of this VM
  rep.header({{"trainers", "2 threads of this process, loopback"},
              {"tensor", std::to_string(a.floats) + " float32 (" + std::to_string(a.floats * 4) +
                             " bytes), summed"},
              {"calls", std::to_string(a.calls) + " per run, best of " + std::to_string(a.runs)}});
  try {
    run(rep, a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_collectives: %s\n", e.what());
    return 1;
  }
  return 0;
}
