// bench_transport: AsioServer + AsioTransport over loopback beside raw Asio sockets moving the same
// bytes, in clear and over TLS; with --testbed, the TLS figures between separate hosts.
//
//   bench_transport [--rows R] [--cols C] [--runs N] [--iters I] [--small-iters S]
//                   [--server-threads T] [--testbed RATE,...] [--json]
//
// echo_throughput  GB/s of reply payload: a pull-like request of R int64 IDs (80 KB for R =
//                  10,000) answered with R x C float32 rows (4 MB for C = 100) from a table
//                  the handler points at (no copy), one call at a time. Bound: a raw
//                  blocking Asio socket pair doing the same exchange (32-byte header, same
//                  request and reply sizes, reply read into a reused buffer).
// echo_throughput_pipelined  the same with 4 calls in flight (same bound).
// rtt_small        microseconds per call of a 100-row-sized request (100 int64 IDs, 800 B)
//                  echoed back. Bound: a raw Asio ping-pong of the same frame sizes.
// echo_throughput_tls, rtt_small_tls  the same through a second server and client that
//                  speak TLS 1.3 (a PSK from a shared secret, AES-128-GCM). Bound: the
//                  plaintext figure of the same run (ratio = TLS / plaintext; goal >= 0.8).
// Each figure and bound is the best of N runs (default 5), bound and figure runs
// alternating; the server runs T handler threads (default 2) and answers requests of at
// most 4 KiB on its socket thread (run_inline), as the KV and graph servers do.
//
// --testbed RATE,...  (as root; scripts/testbed.sh) instead: two hosts in network
//                  namespaces, every link shaped to each RATE in turn (tc's spelling:
//                  10gbit; "unshaped" for none); host 1 serves (this program, --serve), host
//                  2 measures (--connect) and the figures come back as testbed_<figure>
//                  with params.rate: testbed_echo_throughput_tls and testbed_rtt_small_tls,
//                  each against the plaintext figure of the same run between the same hosts.
// --serve PORT [--bind ADDR] and --connect HOST [--port PORT] are those two halves: a
// plaintext server on PORT and a TLS one on PORT + 1 until a client asks them to stop (or
// 600 s), and a client that measures both and stops them.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

// Asio after <utility>: Boost 1.74 under C++20 needs it (see docs/STYLE.md).
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "distgraph/core/timer.hpp"
#include "distgraph/transport/asio_server.hpp"
#include "distgraph/transport/asio_transport.hpp"
#include "support/flags.hpp"
#include "support/raw_tcp.hpp"
#include "support/report.hpp"
#include "support/testbed.hpp"

namespace {

using distgraph::bench::Figure;
using distgraph::bench::Kind;
using distgraph::bench::RawPair;
using distgraph::bench::Reporter;
using distgraph::bench::seconds_of;

struct Args {
  long rows = 10000;
  long cols = 100;
  int runs = 5;
  int iters = 200;
  int small_iters = 5000;
  unsigned server_threads = 2;
  int serve = 0;  ///< --serve PORT: the server half only
  std::string bind = "0.0.0.0";
  std::string connect;  ///< --connect HOST: the client half only
  int port = 30600;     ///< --connect's plaintext port (TLS: port + 1)
  std::string testbed;  ///< --testbed RATE,...: both halves on two testbed hosts
};

Args parse(int argc, char** argv) {
  Args a;
  distgraph::bench::Flags("bench_transport")
      .add("--rows", a.rows, 1, 100'000'000)
      .add("--cols", a.cols, 1, 100'000)
      .add("--runs", a.runs, 1, 1000)
      .add("--iters", a.iters, 1, 1'000'000)
      .add("--small-iters", a.small_iters, 1, 10'000'000)
      .add("--server-threads", a.server_threads, 1, 256)
      .add("--serve", a.serve, 1, 65534)
      .add("--bind", a.bind, "ADDR")
      .add("--connect", a.connect, "HOST")
      .add("--port", a.port, 1, 65534)
      .add("--testbed", a.testbed, "RATE,...")
      .parse(argc, argv);
  return a;
}

constexpr const char* tls_secret = "bench";

/// A pull-like echo server: pings come back as sent, anything else gets the whole table
/// (no copy); a shutdown request calls `on_shutdown`.
std::unique_ptr<distgraph::AsioServer> make_server(const std::vector<float>& table, const Args& a,
                                                   std::string secret, std::string address,
                                                   int port, std::function<void()> on_shutdown,
                                                   distgraph::bench::Reporter& rep) {
  using namespace distgraph;
  auto s = std::make_unique<AsioServer>(
      [&table, on_shutdown](const Request& r) {
        if (r.type == MsgType::ping) return Reply{Status::ok, r.body};
        if (r.type == MsgType::shutdown) {
          if (on_shutdown) on_shutdown();
          return Reply{Status::ok, {}};
        }
        Reply out;
        out.body.parts = {as_bytes_part(std::span<const float>(table))};
        return out;
      },
      AsioServerOptions{
          .address = std::move(address),
          .port = static_cast<std::uint16_t>(port),
          .num_threads = a.server_threads,
          // Small requests on the socket thread, as the KV and graph servers' quick_request.
          .run_inline = [](MsgType, std::uint64_t bytes) { return bytes <= 4096; },
          .secret = std::move(secret),
          .log = [&rep](std::string_view l) { rep.note(l); }});
  s->start();
  return s;
}

/// Best-of-N seconds of each measurement; raw_* stay unset without a raw pair.
struct Times {
  double raw_big = 1e300, raw_small = 1e300, ours_big = 1e300, ours_pipe = 1e300,
         ours_small = 1e300, tls_big = 1e300, tls_small = 1e300;
};

/// Measures `plain` and `tls` (and `raw`, when given) in alternating runs.
Times measure(const Args& a, distgraph::AsioTransport& plain, distgraph::AsioTransport& tls,
              RawPair* raw) {
  using namespace distgraph;
  const std::size_t request_bytes = static_cast<std::size_t>(a.rows) * 8;
  const std::size_t reply_bytes = static_cast<std::size_t>(a.rows * a.cols) * 4;
  const std::size_t small_bytes = 100 * 8;
  const std::vector<std::int64_t> ids(static_cast<std::size_t>(a.rows), 7);
  const std::vector<std::int64_t> small_ids(100, 7);
  AsioTransport* tp = &plain;  // the pair being measured
  auto pull = [&] {
    Message m;
    m.parts = {as_bytes_part(std::span<const std::int64_t>(ids))};
    return tp->send(0, MsgType::pull, std::move(m));
  };
  auto check = [&](Reply r) {
    if (r.status != Status::ok || r.body.parts.size() != 1 || r.body.parts[0].size() != reply_bytes)
      throw std::runtime_error("bench_transport: unexpected reply");
  };
  auto ping = [&] {
    Message m;
    m.parts = {as_bytes_part(std::span<const std::int64_t>(small_ids))};
    Reply r = tp->call(0, MsgType::ping, std::move(m), deadline_in(std::chrono::seconds(30)));
    if (r.body.parts.size() != 1 || r.body.parts[0].size() != small_bytes)
      throw std::runtime_error("bench_transport: unexpected small reply");
  };
  for (AsioTransport* p : {&plain, &tls}) {
    tp = p;
    for (int i = 0; i < 10; ++i) {
      if (raw) raw->exchange(request_bytes, reply_bytes);
      check(pull().get(deadline_in(std::chrono::seconds(30))));
    }
    for (int i = 0; i < 100; ++i) {
      if (raw) raw->exchange(small_bytes, small_bytes);
      ping();
    }
  }
  const auto big_calls = [&] {
    for (int i = 0; i < a.iters; ++i) check(pull().get(deadline_in(std::chrono::seconds(30))));
  };
  const auto small_calls = [&] {
    for (int i = 0; i < a.small_iters; ++i) ping();
  };
  // Bounds and figures alternate run by run, so load from other processes on a shared
  // machine hits both alike; each keeps its best run.
  Times t;
  for (int run = 0; run < a.runs; ++run) {
    tp = &plain;
    if (raw)
      t.raw_big = std::min(t.raw_big, seconds_of([&] {
                             for (int i = 0; i < a.iters; ++i)
                               raw->exchange(request_bytes, reply_bytes);
                           }));
    t.ours_big = std::min(t.ours_big, seconds_of(big_calls));
    t.ours_pipe = std::min(t.ours_pipe, seconds_of([&] {
                             std::vector<PendingCall> window;
                             for (int i = 0; i < a.iters; ++i) {
                               window.push_back(pull());
                               if (window.size() == 4) {
                                 check(window.front().get(deadline_in(std::chrono::seconds(30))));
                                 window.erase(window.begin());
                               }
                             }
                             for (auto& c : window)
                               check(c.get(deadline_in(std::chrono::seconds(30))));
                           }));
    if (raw)
      t.raw_small = std::min(t.raw_small, seconds_of([&] {
                               for (int i = 0; i < a.small_iters; ++i)
                                 raw->exchange(small_bytes, small_bytes);
                             }));
    t.ours_small = std::min(t.ours_small, seconds_of(small_calls));
    tp = &tls;
    t.tls_big = std::min(t.tls_big, seconds_of(big_calls));
    t.tls_small = std::min(t.tls_small, seconds_of(small_calls));
  }
  return t;
}

/// The two TLS figures of `t`, named with `prefix`, with `extra` in their params.
void add_tls_figures(Reporter& rep, const Args& a, const Times& t, const std::string& prefix,
                     const nlohmann::json& extra) {
  const double gb = static_cast<double>(a.rows * a.cols) * 4 * a.iters / 1e9;
  nlohmann::json params = {{"tls", "1.3 psk"}, {"cipher", "TLS_AES_128_GCM_SHA256"}};
  if (extra.is_object()) params.update(extra);
  rep.add({prefix + "echo_throughput_tls", gb / t.tls_big, "GB/s", gb / t.ours_big,
           "plaintext_same_run", Kind::rate, params});
  rep.add({prefix + "rtt_small_tls", t.tls_small / a.small_iters * 1e6, "us",
           t.ours_small / a.small_iters * 1e6, "plaintext_same_run", Kind::time, params});
}

/// --serve: both servers on `a.bind` until a client's shutdown request or 600 s.
int serve(const Args& a, Reporter& rep) {
  const std::vector<float> table(static_cast<std::size_t>(a.rows * a.cols), 0.5f);
  std::mutex mu;
  std::condition_variable cv;
  int stops = 0;
  auto stop = [&] {
    std::lock_guard lock(mu);
    ++stops;
    cv.notify_all();
  };
  const auto plain = make_server(table, a, "", a.bind, a.serve, stop, rep);
  const auto tls = make_server(table, a, tls_secret, a.bind, a.serve + 1, stop, rep);
  std::printf("bench_transport: serving on %s:%d (plaintext) and :%d (TLS)\n", a.bind.c_str(),
              a.serve, a.serve + 1);
  std::fflush(stdout);
  std::unique_lock lock(mu);
  cv.wait_for(lock, std::chrono::seconds(600), [&] { return stops >= 2; });
  return stops >= 2 ? 0 : 1;
}

/// --connect: measures both servers of a --serve, reports the TLS figures, stops them.
int connect(const Args& a, Reporter& rep) {
  using namespace distgraph;
  AsioTransportOptions po, to;
  po.connect_timeout = to.connect_timeout = std::chrono::seconds(30);
  to.secret = tls_secret;
  AsioTransport plain({{a.connect, static_cast<std::uint16_t>(a.port)}}, po);
  AsioTransport tls({{a.connect, static_cast<std::uint16_t>(a.port + 1)}}, to);
  const Times t = measure(a, plain, tls, nullptr);
  add_tls_figures(rep, a, t, "", {{"server", a.connect}});
  // The server may exit before its reply to the second one is out.
  for (AsioTransport* p : {&plain, &tls}) try {
      p->call(0, MsgType::shutdown, {}, deadline_in(std::chrono::seconds(10)));
    } catch (const PeerLost&) {
    }
  return 0;
}

/// --testbed: host 1 serves, host 2 measures, at each rate.
int testbed(const Args& a, Reporter& rep) {
  using distgraph::bench::Testbed;
  const std::string why = Testbed::unavailable();
  if (!why.empty()) {
    std::fprintf(stderr, "bench_transport: SKIPPED: no testbed here: %s\n", why.c_str());
    return 77;
  }
  char self[4096];
  const auto n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) throw std::runtime_error("bench_transport: cannot find its own program");
  self[n] = '\0';
  const std::vector<std::string> sizes = {"--rows",           std::to_string(a.rows),
                                          "--cols",           std::to_string(a.cols),
                                          "--runs",           std::to_string(a.runs),
                                          "--iters",          std::to_string(a.iters),
                                          "--small-iters",    std::to_string(a.small_iters),
                                          "--server-threads", std::to_string(a.server_threads)};
  Testbed tb(2);
  std::stringstream rates(a.testbed);
  for (std::string rate; std::getline(rates, rate, ',');) {
    tb.shape(rate);
    std::mutex mu;
    std::condition_variable cv;
    bool serving = false, server_done = false;
    std::deque<std::string> server_tail;
    std::thread server([&] {
      std::vector<std::string> argv = {self, "--serve", std::to_string(a.port), "--bind",
                                       Testbed::address(1)};
      argv.insert(argv.end(), sizes.begin(), sizes.end());
      tb.run_on(1, argv, [&](const std::string& l) {
        std::lock_guard lock(mu);
        if (l.find("serving on") != std::string::npos) serving = true;
        server_tail.push_back(l);
        if (server_tail.size() > 30) server_tail.pop_front();
        cv.notify_all();
      });
      std::lock_guard lock(mu);
      server_done = true;
      cv.notify_all();
    });
    {
      std::unique_lock lock(mu);
      cv.wait_for(lock, std::chrono::seconds(60), [&] { return serving || server_done; });
    }
    std::vector<std::string> argv = {
        self, "--connect", Testbed::address(1), "--port", std::to_string(a.port), "--json"};
    argv.insert(argv.end(), sizes.begin(), sizes.end());
    std::deque<std::string> tail;
    int figures = 0;
    const int st = tb.run_on(
        2, argv,
        [&](const std::string& l) {
          if (l.empty() || l[0] != '{') return;
          const auto j = nlohmann::json::parse(l);
          nlohmann::json params = j.at("params");
          params["rate"] = rate;
          params["hosts"] = 2;
          rep.add({"testbed_" + j.at("figure").get<std::string>(), j.at("value").get<double>(),
                   j.at("unit").get<std::string>(), j.at("bound").get<double>(),
                   j.at("bound_name").get<std::string>(),
                   j.at("unit").get<std::string>() == "us" ? Kind::time : Kind::rate, params});
          ++figures;
        },
        &tail);
    server.join();
    if (st != 0 || figures == 0)
      throw std::runtime_error(Testbed::failure("host 2: bench_transport --connect", tail) + "\n" +
                               Testbed::failure("host 1: bench_transport --serve", server_tail));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace distgraph;
  const Args a = parse(argc, argv);
  Reporter rep(argc, argv, "bench_transport");
  if (a.serve > 0) return serve(a, rep);
  if (!a.connect.empty()) return connect(a, rep);
  const std::size_t request_bytes = static_cast<std::size_t>(a.rows) * 8;
  const std::size_t reply_bytes = static_cast<std::size_t>(a.rows * a.cols) * 4;
  const std::size_t small_bytes = 100 * 8;
  rep.header({{"rows", std::to_string(a.rows)},
              {"cols", std::to_string(a.cols)},
              {"request_bytes", std::to_string(request_bytes)},
              {"reply_bytes", std::to_string(reply_bytes)},
              {"small_bytes", std::to_string(small_bytes)},
              {"runs", std::to_string(a.runs)},
              {"iters", std::to_string(a.iters)},
              {"small_iters", std::to_string(a.small_iters)},
              {"server_threads", std::to_string(a.server_threads)}});
  if (!a.testbed.empty()) return testbed(a, rep);

  // One server and client in clear, one pair over TLS (a PSK from the secret).
  const std::vector<float> table(static_cast<std::size_t>(a.rows * a.cols), 0.5f);
  const auto server = make_server(table, a, "", "127.0.0.1", 0, nullptr, rep);
  const auto tls_server = make_server(table, a, tls_secret, "127.0.0.1", 0, nullptr, rep);
  AsioTransport plain({server->endpoint()}, {});
  AsioTransportOptions tls_options;
  tls_options.secret = tls_secret;
  AsioTransport tls({tls_server->endpoint()}, tls_options);
  RawPair raw;
  const Times t = measure(a, plain, tls, &raw);

  const double gb = static_cast<double>(reply_bytes) * a.iters / 1e9;
  const nlohmann::json params = {{"rows", a.rows}, {"cols", a.cols}, {"reply_bytes", reply_bytes}};
  rep.add({"echo_throughput", gb / t.ours_big, "GB/s", gb / t.raw_big, "raw_asio_socket_pair",
           Kind::rate, params});
  rep.add({"echo_throughput_pipelined",
           gb / t.ours_pipe,
           "GB/s",
           gb / t.raw_big,
           "raw_asio_socket_pair",
           Kind::rate,
           {{"depth", 4}, {"reply_bytes", reply_bytes}}});
  rep.add({"rtt_small",
           t.ours_small / a.small_iters * 1e6,
           "us",
           t.raw_small / a.small_iters * 1e6,
           "raw_tcp_ping_pong",
           Kind::time,
           {{"request_bytes", small_bytes}}});
  add_tls_figures(rep, a, t, "", {});
  return 0;
}
