// bench_soak: a GraphServer on loopback under N correct clients and misbehaving peers for a
// fixed time: what the server holds, and what the correct clients see (issue 19).
//
//   bench_soak [--clients N] [--bad-peers K] [--seconds S] [--scale X] [--dim D]
//              [--reply-cap-mib C] [--server-threads T] [--json]
//
// Two phases of S seconds (default 4), each against a fresh server in a forked child
// process (its memory is its own to measure): "clean", N clients (default 64) alone, and
// "soak", the same N clients beside K misbehaving peers (default 16). Each client has its
// own connection and loops, one call at a time, over pull (256 random rows x D float32 of
// node:feat), push (32 rows of a scratch tensor) and sample_neighbors (64 seeds, fanout 10,
// uniform). The misbehaving peers take five roles in turn: silent after connect; trickling
// a frame one byte every 50 ms after the hello; pulling 64 replies of 4096 rows (2 MiB at
// D = 128) and reading none; a frame header above max_frame_bytes after the hello; a
// 64 MiB frame header before the hello (the last two reconnect every 20 ms). The server
// runs AsioServer's defaults but max_queued_reply_bytes = C MiB (default 8) and T io
// threads (default 2). Everything stops by itself: peers and clients at the phase's end,
// the server child on the parent's word, on its death (PR_SET_PDEATHSIG) or after S + 300 s.
//
// soak_server_peak_rss  bytes: the soak server's peak resident size, VmHWM from its own
//                       /proc/self/status at the end of the phase (a fresh process per
//                       phase, so it covers that server's whole life). Bound: its resident
//                       size once partition and tensors were loaded, before it listened
//                       (the storage), plus (N + K) connections x max_queued_reply_bytes.
//                       Ratio bound/value (>= 1: within what the limits promise).
// soak_p99_ratio        us: the correct clients' p99 call latency in the soak phase. Bound:
//                       their p99 in the clean phase. Ratio bound/value (1 = the misbehaving
//                       peers cost the correct clients nothing).
// soak_client_errors    correct-client calls that failed or came back malformed, both
//                       phases. Bound 0 (ratio 1 when met); the program exits 1 otherwise.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "distgraph/graph/builder.hpp"
#include "distgraph/graph/generators.hpp"
#include "distgraph/partition/load_partition.hpp"
#include "distgraph/partition/partition_graph.hpp"
#include "distgraph/server/graph_server.hpp"
#include "distgraph/server/protocol.hpp"
#include "distgraph/storage/in_memory_storage.hpp"
#include "distgraph/transport/asio_server.hpp"
#include "distgraph/transport/asio_transport.hpp"
#include "distgraph/transport/detail/handshake.hpp"
#include "support/flags.hpp"
#include "support/report.hpp"
#include "support/temp_dir.hpp"

namespace {

using namespace distgraph;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Args {
  int clients = 64, bad_peers = 16, seconds = 4, scale = 16, dim = 128, reply_cap_mib = 8;
  int server_threads = 2;
};

constexpr std::int64_t pull_rows = 256, push_rows = 32, sample_seeds = 64, fanout = 10;
constexpr std::int64_t hog_rows = 4096;  // a non-reading puller's batch (2 MiB at D = 128)
constexpr int hog_requests = 64;
constexpr int bad_roles = 5;
const char* const role_names[bad_roles] = {"silent", "trickle", "non_reading_puller",
                                           "oversized_frame", "oversized_before_hello"};

/// A field of /proc/self/status ("VmRSS:", "VmHWM:"), in bytes.
std::uint64_t own_status_bytes(const std::string& field) {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind(field, 0) == 0) return std::stoull(line.substr(field.size())) * 1024;
  return 0;
}

void write_line(int fd, const std::string& text) {
  const std::string line = text + "\n";
  std::size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::write(fd, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}

// --- the server, a forked child -----------------------------------------------------------

/// What the server child reports at the end of a phase.
struct ServerReport {
  std::uint64_t rss_after_load = 0, peak_rss = 0;
  json stats = json::object();
};

/// The server of one phase in a child process forked while the parent has no other thread.
/// The child loads the partition, says "port <p>", serves until the parent asks for its
/// report, prints it as one JSON line and exits.
class ServerChild {
 public:
  ServerChild(const Args& a, const fs::path& config, std::int64_t num_nodes) {
    int report[2], command[2];
    if (::pipe2(report, O_CLOEXEC) != 0 || ::pipe2(command, O_CLOEXEC) != 0)
      throw std::runtime_error("bench_soak: pipe2 failed");
    std::fflush(nullptr);
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("bench_soak: fork failed");
    if (pid_ == 0) {
      ::close(report[0]);
      ::close(command[1]);
      serve(a, config, num_nodes, report[1], command[0]);
    }
    ::close(report[1]);
    ::close(command[0]);
    report_fd_ = report[0];
    command_fd_ = command[1];
    const std::string first = read_line(std::chrono::seconds(300));
    if (first.rfind("port ", 0) != 0)
      throw std::runtime_error("bench_soak: server child said '" + first + "'");
    port_ = static_cast<std::uint16_t>(std::stoi(first.substr(5)));
  }
  ~ServerChild() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
    if (report_fd_ >= 0) ::close(report_fd_);
    if (command_fd_ >= 0) ::close(command_fd_);
  }
  ServerChild(const ServerChild&) = delete;
  ServerChild& operator=(const ServerChild&) = delete;

  std::uint16_t port() const noexcept { return port_; }

  /// Asks for the report, waits (bounded) for the child to exit and returns the report.
  ServerReport finish() {
    write_line(command_fd_, "report");
    const std::string line = read_line(std::chrono::seconds(60));
    if (line.empty() || line[0] != '{')
      throw std::runtime_error("bench_soak: server child said '" + line + "'");
    const json j = json::parse(line);
    ServerReport r;
    r.rss_after_load = j.at("rss_after_load").get<std::uint64_t>();
    r.peak_rss = j.at("peak_rss").get<std::uint64_t>();
    r.stats = j.at("stats");
    int st = 0;
    ::waitpid(pid_, &st, 0);
    pid_ = -1;
    return r;
  }

 private:
  [[noreturn]] static void serve(const Args& a, const fs::path& config, std::int64_t num_nodes,
                                 int report_fd, int command_fd) {
    // Bounded whatever the parent does: dies with it, and gives up after the phase plus
    // five minutes.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::alarm(static_cast<unsigned>(a.seconds) + 300);
    int rc = 0;
    try {
      GraphServer<InMemoryStorage> server(load_partition(config, 0),
                                          std::make_shared<InMemoryStorage>());
      server.kv().create(
          {"scratch", DType::float32, RowKind::node, num_nodes, a.dim, {InitKind::zeros, 0, 0, 0}});
      const std::uint64_t rss_after_load = own_status_bytes("VmRSS:");
      // Misbehaving peers make the server log a line per refusal: counted, not printed.
      std::atomic<std::uint64_t> log_lines{0};
      AsioServer net(server.handler(),
                     {.num_threads = static_cast<unsigned>(a.server_threads),
                      .max_queued_reply_bytes = std::uint64_t(a.reply_cap_mib) << 20,
                      .log = [&](std::string_view) { ++log_lines; }});
      net.start();
      write_line(report_fd, "port " + std::to_string(net.port()));
      char c = 0;
      while (::read(command_fd, &c, 1) < 0 && errno == EINTR) {
      }
      const AsioServerStats st = net.stats();
      const json report = {{"rss_after_load", rss_after_load},
                           {"peak_rss", own_status_bytes("VmHWM:")},
                           {"stats",
                            {{"peak_queued_reply_bytes", st.peak_queued_reply_bytes},
                             {"read_pauses", st.read_pauses},
                             {"refused_connections", st.refused_connections},
                             {"refused_hello_frames", st.refused_hello_frames},
                             {"accept_failures", st.accept_failures},
                             {"connections_at_end", st.connections},
                             {"log_lines", log_lines.load()}}}};
      write_line(report_fd, report.dump());
      net.stop();
    } catch (const std::exception& e) {
      write_line(report_fd, std::string("error: ") + e.what());
      rc = 1;
    }
    ::_exit(rc);
  }

  std::string read_line(std::chrono::milliseconds timeout) {
    const auto end = Clock::now() + timeout;
    for (;;) {
      if (const auto nl = buf_.find('\n'); nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
      if (left <= 0) return {};
      pollfd p{report_fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char chunk[4096];
      const ssize_t n = ::read(report_fd_, chunk, sizeof chunk);
      if (n <= 0) return {};
      buf_.append(chunk, static_cast<std::size_t>(n));
    }
  }

  pid_t pid_ = -1;
  int report_fd_ = -1, command_fd_ = -1;
  std::uint16_t port_ = 0;
  std::string buf_;
};

// --- correct clients ----------------------------------------------------------------------

struct ClientTally {
  std::vector<double> latencies_us;
  std::int64_t calls = 0, errors = 0;
  std::string first_error;
};

/// One correct client: pull, push, sample in turn on its own connection until `end`. Every
/// call is checked (status, part count and sizes); a failure counts as an error.
void correct_client(AsioTransport& t, int k, std::int64_t n, std::int64_t dim,
                    Clock::time_point end, ClientTally& out) {
  detail::SplitMix64 rng(static_cast<std::uint64_t>(1000 + k));
  std::vector<std::int64_t> ids(static_cast<std::size_t>(pull_rows));
  const std::vector<float> rows(static_cast<std::size_t>(push_rows * dim), 0.25f);
  const auto row_bytes = static_cast<std::size_t>(dim) * sizeof(float);
  for (std::int64_t i = 0; Clock::now() < end; ++i) {
    const int op = static_cast<int>(i % 3);
    const std::int64_t count = op == 0 ? pull_rows : op == 1 ? push_rows : sample_seeds;
    for (std::int64_t j = 0; j < count; ++j)
      ids[static_cast<std::size_t>(j)] =
          static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(n)));
    const auto id_part =
        as_bytes_part(std::span<const std::int64_t>(ids).first(static_cast<std::size_t>(count)));
    Message m;
    MsgType type = MsgType::pull;
    if (op == 0) {
      m = Message::owning(RowsRequest{"node:feat", RowKind::node, count}.encode());
      m.parts = {id_part};
    } else if (op == 1) {
      type = MsgType::push;
      m = Message::owning(RowsRequest{"scratch", RowKind::node, count}.encode());
      m.parts = {id_part, as_bytes_part(std::span<const float>(rows))};
    } else {
      type = MsgType::sample_neighbors;
      SampleRequest q;
      q.key = {.seed = 1, .epoch = 0, .rank = k, .batch = i, .layer = 0};
      q.fanout = fanout;
      q.sampler = SamplerSpec{"uniform", {}};
      q.count = count;
      m = Message::owning(q.encode());
      m.parts = {id_part};
    }
    ++out.calls;
    const auto start = Clock::now();
    try {
      const Reply r = t.call(0, type, std::move(m), deadline_in(std::chrono::seconds(30)));
      const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
      const auto& p = r.body.parts;
      const bool good =
          r.status == Status::ok &&
          (op == 0   ? p.size() == 1 && p[0].size() == static_cast<std::size_t>(count) * row_bytes
           : op == 1 ? p.empty()
                     : p.size() == 3 && p[0].size() == p[1].size() && p[1].size() == p[2].size());
      if (good) {
        out.latencies_us.push_back(us);
      } else {
        ++out.errors;
        if (out.first_error.empty())
          out.first_error = msg_type_name(type) + ": " + status_name(r.status) + " " + r.text();
      }
    } catch (const std::exception& e) {
      ++out.errors;
      if (out.first_error.empty()) out.first_error = e.what();
    }
  }
}

// --- misbehaving peers --------------------------------------------------------------------

/// A blocking loopback socket whose reads and writes give up after 1 s, so a peer notices
/// the end of its phase. Closed on destruction.
class RawPeer {
 public:
  explicit RawPeer(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    const timeval tv{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawPeer() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawPeer(const RawPeer&) = delete;
  RawPeer& operator=(const RawPeer&) = delete;

  bool ok() const noexcept { return fd_ >= 0; }

  /// Sends all of `b`; false when the server closed or the socket stayed full for 1 s.
  bool send_all(std::span<const std::byte> b) {
    std::size_t off = 0;
    while (off < b.size()) {
      const ssize_t n = ::send(fd_, b.data() + off, b.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      off += static_cast<std::size_t>(n);
    }
    return true;
  }
  /// Sends all of `b`, waiting out full socket buffers until `end`; false when the server
  /// closed or `end` came first.
  bool send_until(std::span<const std::byte> b, Clock::time_point end) {
    std::size_t off = 0;
    while (off < b.size()) {
      const ssize_t n = ::send(fd_, b.data() + off, b.size() - off, MSG_NOSIGNAL);
      if (n > 0) {
        off += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        if (Clock::now() >= end) return false;
        continue;
      }
      return false;
    }
    return true;
  }
  /// Reads one frame; false on close, error or a 1 s silence.
  bool read_frame(FrameHeader& h, std::vector<std::byte>& payload) {
    std::array<std::byte, frame_header_bytes> raw;
    if (!read_exact(raw.data(), raw.size())) return false;
    try {
      h = decode_header(raw, default_max_frame_bytes);
    } catch (const std::exception&) {
      return false;
    }
    payload.resize(h.payload_bytes);
    return read_exact(payload.data(), payload.size());
  }
  /// The hello exchange without a secret; true when the server accepted it.
  bool hello() {
    FrameHeader h;
    std::vector<std::byte> payload;
    if (!read_frame(h, payload) || h.type != MsgType::hello) return false;
    try {
      const Message m = decode_message(payload, nullptr);
      detail::decode_server_hello(m.head, "server hello");
    } catch (const std::exception&) {
      return false;
    }
    const auto head = detail::encode_client_hello(detail::random_nonce(), nullptr, TlsMode::off);
    if (!send_all(flatten(encode_frame({.type = MsgType::hello}, Message::owning(head)))))
      return false;
    return read_frame(h, payload) && h.status == Status::ok;
  }
  /// Waits (reading and dropping anything) until the server closes or `end`; true if closed.
  bool closed_before(Clock::time_point end) {
    std::array<std::byte, 4096> sink;
    while (Clock::now() < end) {
      const ssize_t n = ::recv(fd_, sink.data(), sink.size(), 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
        return true;
    }
    return false;
  }
  /// Waits until `end` without reading anything.
  void idle_until(Clock::time_point end) const {
    while (Clock::now() < end) {
      pollfd p{fd_, 0, 0};  // no events: wakes only on errors/hang-up
      ::poll(&p, 1, 200);
      if (p.revents & (POLLERR | POLLHUP)) return;
    }
  }

 private:
  bool read_exact(std::byte* p, std::size_t n) {
    std::size_t off = 0;
    while (off < n) {
      const ssize_t r = ::recv(fd_, p + off, n - off, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      off += static_cast<std::size_t>(r);
    }
    return true;
  }
  int fd_ = -1;
};

struct BadTally {
  std::int64_t connections = 0;  ///< connections opened
  std::int64_t refusals = 0;     ///< frame_too_large replies received (oversized roles)
};

std::vector<std::byte> header_bytes(const FrameHeader& h) {
  std::vector<std::byte> out(frame_header_bytes);
  encode_header(h, std::span<std::byte, frame_header_bytes>(out.data(), frame_header_bytes));
  return out;
}

/// One misbehaving peer in role `role` (see the top of the file) until `end`.
void misbehave(int role, std::uint16_t port, std::int64_t n, Clock::time_point end,
               BadTally& tally) {
  const auto pace = [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); };
  detail::SplitMix64 rng(static_cast<std::uint64_t>(77 + role));
  while (Clock::now() < end) {
    RawPeer p(port);
    if (!p.ok()) {
      pace();
      continue;
    }
    ++tally.connections;
    switch (role) {
      case 0:  // silent: holds an unauthenticated connection until handshake_timeout
        p.closed_before(end);
        break;
      case 1: {  // trickle: a pull frame one byte every 50 ms, never complete in time
        if (!p.hello()) break;
        std::vector<std::byte> bytes =
            header_bytes({.type = MsgType::pull, .request_id = 1, .payload_bytes = 4096});
        bytes.resize(frame_header_bytes + 4096);
        for (std::size_t i = 0; i < bytes.size() && Clock::now() < end; ++i) {
          if (!p.send_all(std::span(bytes).subspan(i, 1))) break;
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        break;
      }
      case 2: {  // non-reading puller: big replies, none read
        if (!p.hello()) break;
        std::vector<std::int64_t> ids(static_cast<std::size_t>(hog_rows));
        for (auto& v : ids) v = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(n)));
        std::vector<std::byte> all;
        for (int r = 0; r < hog_requests; ++r) {
          Message m = Message::owning(RowsRequest{"node:feat", RowKind::node, hog_rows}.encode());
          m.parts = {as_bytes_part(std::span<const std::int64_t>(ids))};
          const auto f = flatten(encode_frame(
              {.type = MsgType::pull, .request_id = static_cast<std::uint64_t>(r + 1)}, m));
          all.insert(all.end(), f.begin(), f.end());
        }
        // Once the server stops reading this peer (back-pressure), sends stall; keep
        // offering the rest until the end, never reading a reply.
        if (p.send_until(all, end)) p.idle_until(end);
        break;
      }
      case 3: {  // a frame above max_frame_bytes after the hello
        if (!p.hello()) break;
        p.send_all(header_bytes({.type = MsgType::push,
                                 .request_id = 9,
                                 .payload_bytes = default_max_frame_bytes + 1}));
        FrameHeader h;
        std::vector<std::byte> payload;
        if (p.read_frame(h, payload) && h.status == Status::frame_too_large) ++tally.refusals;
        p.closed_before(end);
        pace();
        break;
      }
      default: {  // a 64 MiB frame before the hello
        p.send_all(header_bytes(
            {.type = MsgType::hello, .request_id = 9, .payload_bytes = std::uint64_t{64} << 20}));
        FrameHeader h;
        std::vector<std::byte> payload;
        while (p.read_frame(h, payload)) {  // the server hello, then the refusal
          if (h.status == Status::frame_too_large) {
            ++tally.refusals;
            break;
          }
        }
        p.closed_before(end);
        pace();
        break;
      }
    }
  }
}

// --- phases -------------------------------------------------------------------------------

struct Phase {
  std::vector<double> latencies_us;
  std::int64_t calls = 0, errors = 0;
  std::string first_error;
  std::vector<BadTally> bad;
  ServerReport server;
  double seconds = 0;
};

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  const auto k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

/// One phase against a fresh server child: the clients (and, with `bad_peers` > 0, the
/// misbehaving peers) for a.seconds, then the server's report.
Phase run_phase(const Args& a, const fs::path& config, std::int64_t n, int bad_peers) {
  ServerChild server(a, config, n);  // forked now, while this process has one thread
  // Clients connect one after the other, each authenticated before the next: N at once
  // could meet max_unauthenticated (64) for a moment.
  AsioTransportOptions opt;
  opt.connect_timeout = std::chrono::seconds(60);
  std::vector<std::unique_ptr<AsioTransport>> transports;
  for (int k = 0; k < a.clients; ++k)
    transports.push_back(std::make_unique<AsioTransport>(
        std::vector<Endpoint>{Endpoint{"127.0.0.1", server.port()}}, opt));
  std::vector<ClientTally> tallies(static_cast<std::size_t>(a.clients));
  Phase out;
  out.bad.resize(static_cast<std::size_t>(bad_peers));
  const auto start = Clock::now();
  const auto end = start + std::chrono::seconds(a.seconds);
  {
    std::vector<std::thread> threads;
    for (int b = 0; b < bad_peers; ++b)
      threads.emplace_back(misbehave, b % bad_roles, server.port(), n, end,
                           std::ref(out.bad[static_cast<std::size_t>(b)]));
    for (int k = 0; k < a.clients; ++k)
      threads.emplace_back(correct_client, std::ref(*transports[static_cast<std::size_t>(k)]), k, n,
                           static_cast<std::int64_t>(a.dim), end,
                           std::ref(tallies[static_cast<std::size_t>(k)]));
    for (auto& t : threads) t.join();
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  transports.clear();
  for (auto& t : tallies) {
    out.latencies_us.insert(out.latencies_us.end(), t.latencies_us.begin(), t.latencies_us.end());
    out.calls += t.calls;
    out.errors += t.errors;
    if (out.first_error.empty()) out.first_error = t.first_error;
  }
  out.server = server.finish();
  return out;
}

struct GraphSize {
  std::int64_t nodes = 0, edges = 0;
};

/// Writes the R-MAT graph and its features as one partition (`dir/rmat.json`). Nothing of
/// it stays in this process: the server children, forked later, would otherwise inherit
/// the arrays and count them in their resident size.
GraphSize write_partition(const Args& a, const fs::path& dir) {
  const Graph g =
      build_graph(rmat({.scale = a.scale, .edge_factor = 16, .seed = 1}),
                  {.remove_self_loops = true, .remove_duplicates = true, .symmetrize = true});
  const std::int64_t n = g.num_nodes();
  std::vector<float> feat(static_cast<std::size_t>(n * a.dim));
  for (std::size_t i = 0; i < feat.size(); ++i) feat[i] = static_cast<float>(i % 1000) * 1e-3f;
  partition_graph(g, "rmat", 1, dir, {.method = PartMethod::random, .seed = 0},
                  {{"feat", HostTensor::from(Buffer<float>(std::move(feat)), {n, a.dim})}});
  return {n, g.num_edges()};
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  bench::Flags("bench_soak")
      .add("--clients", a.clients, 1, 512)
      .add("--bad-peers", a.bad_peers, 0, 256)
      .add("--seconds", a.seconds, 1, 120)
      .add("--scale", a.scale, 8, 22)
      .add("--dim", a.dim, 1, 4096)
      .add("--reply-cap-mib", a.reply_cap_mib, 1, 4096)
      .add("--server-threads", a.server_threads, 1, 64)
      .parse(argc, argv);
  bench::Reporter rep(argc, argv, "bench_soak");
  const bench::TempDir tmp(fs::temp_directory_path() /
                           ("distgraph-bench-soak-" + std::to_string(::getpid())));

  rep.note("building R-MAT and its single partition ...");
  const fs::path config = tmp.path / "rmat.json";
  const auto [n, m] = write_partition(a, tmp.path);
  const std::uint64_t tensor_bytes = 2 * static_cast<std::uint64_t>(n * a.dim) * sizeof(float);
  const std::uint64_t cap = std::uint64_t(a.reply_cap_mib) << 20;

  rep.header(
      {{"graph", "rmat(scale=" + std::to_string(a.scale) +
                     ", edge_factor=16, seed=1), symmetrized, simple; 1 partition"},
       {"n", std::to_string(n)},
       {"m", std::to_string(m)},
       {"tensors", "node:feat and scratch, " + std::to_string(a.dim) + " x float32 each (" +
                       std::to_string(tensor_bytes) + " bytes)"},
       {"server", "GraphServer<InMemoryStorage> in a forked child, " +
                      std::to_string(a.server_threads) + " io threads, max_queued_reply_bytes " +
                      std::to_string(a.reply_cap_mib) + " MiB, other limits default"},
       {"clients", std::to_string(a.clients) +
                       " (own connections; pull 256 rows, push 32 rows, sample 64 seeds x 10)"},
       {"bad_peers", std::to_string(a.bad_peers) +
                         " (silent, trickle, non-reading puller, oversized frame, "
                         "oversized before hello, in turn)"},
       {"seconds", std::to_string(a.seconds) + " per phase (clean, then soak)"}});

  rep.note("clean phase: " + std::to_string(a.clients) + " clients ...");
  const Phase clean = run_phase(a, config, n, 0);
  rep.note("soak phase: " + std::to_string(a.clients) + " clients and " +
           std::to_string(a.bad_peers) + " misbehaving peers ...");
  const Phase soak = run_phase(a, config, n, a.bad_peers);

  json roles = json::object();
  for (int r = 0; r < bad_roles; ++r) {
    std::int64_t peers = 0, connections = 0, refusals = 0;
    for (std::size_t b = static_cast<std::size_t>(r); b < soak.bad.size(); b += bad_roles) {
      ++peers;
      connections += soak.bad[b].connections;
      refusals += soak.bad[b].refusals;
    }
    roles[role_names[r]] = {{"peers", peers}, {"connections", connections}, {"refusals", refusals}};
  }
  const auto connections = static_cast<std::uint64_t>(a.clients + a.bad_peers);
  rep.add({"soak_server_peak_rss",
           static_cast<double>(soak.server.peak_rss),
           "bytes",
           static_cast<double>(soak.server.rss_after_load + connections * cap),
           "storage_rss+conns*cap",
           bench::Kind::time,
           {{"rss_after_load", soak.server.rss_after_load},
            {"clean_phase_rss_after_load", clean.server.rss_after_load},
            {"clean_phase_peak_rss", clean.server.peak_rss},
            {"tensor_bytes", tensor_bytes},
            {"connections", connections},
            {"max_queued_reply_bytes", cap},
            {"server", soak.server.stats},
            {"bad_peers", roles}}});
  const double p99_soak = percentile(soak.latencies_us, 0.99);
  const double p99_clean = percentile(clean.latencies_us, 0.99);
  rep.add({"soak_p99_ratio",
           p99_soak,
           "us",
           p99_clean,
           "p99_without_bad_peers",
           bench::Kind::time,
           {{"clients", a.clients},
            {"bad_peers", a.bad_peers},
            {"p50_us_clean", percentile(clean.latencies_us, 0.5)},
            {"p50_us_soak", percentile(soak.latencies_us, 0.5)},
            {"calls_per_s_clean", static_cast<double>(clean.calls) / clean.seconds},
            {"calls_per_s_soak", static_cast<double>(soak.calls) / soak.seconds}}});
  const std::int64_t errors = clean.errors + soak.errors;
  rep.add({"soak_client_errors",
           static_cast<double>(errors),
           "calls",
           0,
           "none_allowed",
           bench::Kind::limit,
           {{"errors_clean", clean.errors},
            {"errors_soak", soak.errors},
            {"calls_clean", clean.calls},
            {"calls_soak", soak.calls}}});
  if (errors != 0) {
    std::fprintf(stderr, "bench_soak: %lld correct-client calls failed; first: %s\n",
                 static_cast<long long>(errors),
                 (clean.first_error.empty() ? soak.first_error : clean.first_error).c_str());
    return 1;
  }
  return 0;
}
