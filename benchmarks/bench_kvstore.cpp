// bench_kvstore: the KV data plane (KVServer + KVClient) beside bounds measured in the same run.
//
//   bench_kvstore [--rows-per-part N] [--cols C] [--runs R] [--clients K] [--json]
//
// pull_colocated   rows/s: KVClient::pull of 1000 random rows x C float32 that this
//                  trainer's machine owns, read from the shared MmapStorage without a
//                  request. Bound: a plain gather loop (memcpy of the same rows from a heap
//                  array of the same size). Target ratio >= 0.5.
// pull_remote      GB/s of rows: 10,000 random rows x C float32 owned by a server reached
//                  over AsioTransport on loopback. Bound: a raw blocking socket pair moving
//                  the same request and reply bytes. Target ratio >= 0.6.
// rtt_small        us per pull of 100 rows over loopback. Bound: the raw socket pair's
//                  exchange of the same sizes. Target ratio (bound/value) >= 0.5.
// pull_remote_tls, rtt_small_tls  the same from the same servers through a second port
//                  that speaks TLS 1.3 (a PSK from a shared secret, AES-128-GCM). Bound:
//                  the plaintext figure of the same run (ratio = TLS / plaintext).
// pull_concurrent  aggregate rows/s of K trainer clients (own connections) pulling 10,000
//                  random rows each from 2 servers at once. Bound: the raw pair's single
//                  stream in rows/s. Afterwards K clients push_add to overlapping rows and
//                  the sums are checked (params.lost_updates must be 0).
// checkpoint_save  GB/s: both servers save their rows of the feature table (save_tensors,
//                  in parallel, fsynced .npy files in a temporary folder). Bound: two
//                  threads writing the same bytes from memory into new files the same way.
// checkpoint_load  GB/s: both servers load them back (load_tensors: checks, then rows
//                  into the shared storage). Bound: two threads reading the same files
//                  into memory touched beforehand.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "distgraph/distributed/dist_tensor.hpp"
#include "distgraph/distributed/kv_client.hpp"
#include "distgraph/io/npy.hpp"
#include "distgraph/io/posix_file.hpp"
#include "distgraph/partition/range_partition_book.hpp"
#include "distgraph/server/kv_server.hpp"
#include "distgraph/storage/mmap_storage.hpp"
#include "distgraph/transport/asio_server.hpp"
#include "distgraph/transport/asio_transport.hpp"
#include "support/bounds.hpp"
#include "support/flags.hpp"
#include "support/raw_tcp.hpp"
#include "support/report.hpp"

namespace {

using namespace distgraph;
using distgraph::bench::Figure;
using distgraph::bench::Kind;
using distgraph::bench::RawPair;
using distgraph::bench::seconds_of;
using Client = KVClient<RangePartitionBook, AsioTransport, MmapStorage>;

constexpr int parts = 2;

/// Two KV servers (partition 0 and 1) over MmapStorage folders, listening on loopback.
struct Servers {
  std::vector<std::filesystem::path> dirs;
  std::vector<std::shared_ptr<MmapStorage>> stores;
  std::vector<std::unique_ptr<KVServer<MmapStorage>>> kv;
  std::vector<std::unique_ptr<AsioServer>> net;
  std::vector<std::unique_ptr<AsioServer>> net_tls;  // the same handlers over TLS

  Servers(const RangePartitionBook& book, std::int64_t cols, unsigned threads) {
    const std::filesystem::path base = std::filesystem::is_directory("/dev/shm")
                                           ? "/dev/shm"
                                           : std::filesystem::temp_directory_path();
    for (int p = 0; p < parts; ++p) {
      dirs.push_back(
          base / ("distgraph-bench-kv-" + std::to_string(::getpid()) + "-" + std::to_string(p)));
      std::filesystem::remove_all(dirs.back());
      stores.push_back(std::make_shared<MmapStorage>(MmapStorage::create_dir(dirs.back())));
      kv.push_back(
          std::make_unique<KVServer<MmapStorage>>(stores.back(), AnyPartitionBook(book), p));
      kv.back()->create({"feat",
                         DType::float32,
                         RowKind::node,
                         book.num_nodes(),
                         cols,
                         {InitKind::uniform, -1, 1, 7}});
      kv.back()->create({"counter", DType::int64, RowKind::node, book.num_nodes(), 1, {}});
      net.push_back(std::make_unique<AsioServer>(
          kv.back()->handler(),
          AsioServerOptions{.num_threads = threads, .run_inline = quick_request}));
      net.back()->start();
      net_tls.push_back(std::make_unique<AsioServer>(
          kv.back()->handler(), AsioServerOptions{.num_threads = threads,
                                                  .run_inline = quick_request,
                                                  .secret = std::string(tls_secret)}));
      net_tls.back()->start();
    }
  }
  ~Servers() {
    for (auto& n : net_tls) n->stop();
    for (auto& n : net) n->stop();
    for (auto& d : dirs) std::filesystem::remove_all(d);
  }
  std::vector<Endpoint> endpoints(bool tls = false) const {
    std::vector<Endpoint> e;
    for (auto& n : tls ? net_tls : net) e.push_back(n->endpoint());
    return e;
  }
  static constexpr std::string_view tls_secret = "bench";
};

std::vector<std::int64_t> random_ids(std::int64_t lo, std::int64_t hi, std::size_t n,
                                     std::mt19937_64& rng) {
  std::uniform_int_distribution<std::int64_t> d(lo, hi - 1);
  std::vector<std::int64_t> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

/// The flags: the table's size and how often each figure is measured.
struct Options {
  std::int64_t rows_per_part = 500'000, cols = 100;
  int runs = 5, clients = 4;
};

/// What every figure group shares: the flags, the two partitions' book, the running servers,
/// the report and one random stream (drawn in figure order, so each run asks the same rows).
struct Bench {
  Options opt;
  RangePartitionBook book;
  Servers& servers;
  bench::Reporter& rep;
  std::mt19937_64 rng{1};

  std::size_t row_bytes() const { return static_cast<std::size_t>(opt.cols) * sizeof(float); }

  /// A trainer's client on `machine` (its partition read from the shared storage; -1: every
  /// row over the network), in clear or over the servers' TLS port.
  std::shared_ptr<Client> make_client(int machine, bool tls = false) const {
    std::shared_ptr<MmapStorage> local;
    if (machine >= 0)
      local = std::make_shared<MmapStorage>(
          MmapStorage::attach(servers.dirs[static_cast<std::size_t>(machine)]));
    AsioTransportOptions to;
    if (tls) to.secret = std::string(Servers::tls_secret);
    return std::make_shared<Client>(std::make_shared<AsioTransport>(servers.endpoints(tls), to),
                                    book,
                                    ClusterLayout{.num_machines = parts,
                                                  .servers_per_machine = 1,
                                                  .machine_id = machine,
                                                  .num_trainers = 1},
                                    local);
  }
};

Options parse_options(int argc, char** argv) {
  Options o;
  bench::Flags("bench_kvstore")
      .add("--rows-per-part", o.rows_per_part, 10'000, 100'000'000)
      .add("--cols", o.cols, 1, 10'000)
      .add("--runs", o.runs, 1, 1000)
      .add("--clients", o.clients, 1, 64)
      .parse(argc, argv);
  return o;
}

void print_header(const bench::Reporter& rep, const Options& o) {
  rep.header({{"partitions", std::to_string(parts)},
              {"rows_per_partition", std::to_string(o.rows_per_part)},
              {"cols", std::to_string(o.cols) + " x float32"},
              {"clients", std::to_string(o.clients)},
              {"server_io_threads", "2"},
              {"runs", std::to_string(o.runs) + " (best kept; bound and figure alternate)"}});
}

/// Every ID in [0, n): the pulls that touch a whole table.
std::vector<std::int64_t> all_ids(std::size_t n) {
  std::vector<std::int64_t> all(n);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
  return all;
}

/// pull_colocated: random rows of machine 0's own partition against a heap gather loop.
void measure_pull_colocated(Bench& b) {
  const std::int64_t rows_per_part = b.opt.rows_per_part, cols = b.opt.cols;
  auto client = b.make_client(0);
  const auto feat = DistTensor<float, Client>::open(client, "feat", RowKind::node);
  std::vector<float> heap(static_cast<std::size_t>(rows_per_part * cols), 1.0f);
  std::vector<float> out(1000 * static_cast<std::size_t>(cols));
  // Touch every page of both sources first: first-touch faults are not the steady state.
  const auto all = all_ids(static_cast<std::size_t>(rows_per_part));
  for (std::size_t at = 0; at < all.size(); at += 1000)
    feat.pull(std::span(all).subspan(at, std::min<std::size_t>(1000, all.size() - at)),
              std::span(out).first(std::min<std::size_t>(1000, all.size() - at) * cols));
  constexpr int batches = 2000;
  std::vector<std::vector<std::int64_t>> ids;
  for (int i = 0; i < batches; ++i) ids.push_back(random_ids(0, rows_per_part, 1000, b.rng));
  double best_ours = 1e300, best_bound = 1e300;
  for (int r = 0; r < b.opt.runs; ++r) {
    best_bound = std::min(best_bound, seconds_of([&] {
                            for (const auto& batch : ids)
                              bench::gather_rows(heap.data(), static_cast<std::size_t>(cols), batch,
                                                 out.data());
                          }));
    best_ours = std::min(best_ours, seconds_of([&] {
                           for (const auto& batch : ids) feat.pull(batch, out);
                         }));
  }
  const double rows = 1000.0 * batches;
  b.rep.add({"pull_colocated",
             rows / best_ours,
             "rows/s",
             rows / best_bound,
             "plain_gather_loop",
             Kind::rate,
             {{"batch_rows", 1000}, {"cols", cols}, {"batches", batches}}});
}

/// Best times of the remote pulls and of the raw socket pair moving the same bytes: big pulls
/// (10,000 rows) and small ones (100 rows), in clear and over TLS.
struct RemoteTimes {
  std::size_t big_rows = 0, small_rows = 0;
  double ours_big = 1e300, raw_big = 1e300, tls_big = 1e300;
  double ours_small = 1e300, raw_small = 1e300, tls_small = 1e300;
};
constexpr int big_iters = 100, small_iters = 2000;

/// Alternates the raw pair and the plain and TLS clients, each pulling partition 1's rows.
RemoteTimes time_remote_pulls(Bench& b) {
  const std::int64_t rows_per_part = b.opt.rows_per_part, cols = b.opt.cols;
  auto client = b.make_client(-1);
  const auto feat = DistTensor<float, Client>::open(client, "feat", RowKind::node);
  const auto feat_tls =
      DistTensor<float, Client>::open(b.make_client(-1, true), "feat", RowKind::node);
  RawPair raw;
  const auto big = random_ids(rows_per_part, 2 * rows_per_part, 10'000, b.rng);  // partition 1
  const auto small = random_ids(rows_per_part, 2 * rows_per_part, 100, b.rng);
  std::vector<float> out_big(big.size() * cols), out_small(small.size() * cols);
  // Request and reply bytes as the KV protocol moves them (frame header, head, parts).
  const std::size_t big_req = big.size() * 8 + 64, big_rep = big.size() * b.row_bytes() + 32;
  const std::size_t small_req = small.size() * 8 + 64,
                    small_rep = small.size() * b.row_bytes() + 32;
  for (int i = 0; i < 20; ++i) {
    feat.pull(big, out_big);
    feat_tls.pull(big, out_big);
    raw.exchange(big_req, big_rep);
  }
  RemoteTimes t{.big_rows = big.size(), .small_rows = small.size()};
  for (int r = 0; r < b.opt.runs; ++r) {
    t.raw_big = std::min(t.raw_big, seconds_of([&] {
                           for (int i = 0; i < big_iters; ++i) raw.exchange(big_req, big_rep);
                         }));
    t.ours_big = std::min(t.ours_big, seconds_of([&] {
                            for (int i = 0; i < big_iters; ++i) feat.pull(big, out_big);
                          }));
    t.raw_small = std::min(t.raw_small, seconds_of([&] {
                             for (int i = 0; i < small_iters; ++i)
                               raw.exchange(small_req, small_rep);
                           }));
    t.ours_small = std::min(t.ours_small, seconds_of([&] {
                              for (int i = 0; i < small_iters; ++i) feat.pull(small, out_small);
                            }));
    t.tls_big = std::min(t.tls_big, seconds_of([&] {
                           for (int i = 0; i < big_iters; ++i) feat_tls.pull(big, out_big);
                         }));
    t.tls_small = std::min(t.tls_small, seconds_of([&] {
                             for (int i = 0; i < small_iters; ++i) feat_tls.pull(small, out_small);
                           }));
  }
  return t;
}

/// pull_remote and rtt_small against the raw pair; their TLS twins against the plaintext.
void report_remote(Bench& b, const RemoteTimes& t) {
  const std::int64_t cols = b.opt.cols;
  const double gb = static_cast<double>(t.big_rows * b.row_bytes()) * big_iters / 1e9;
  b.rep.add({"pull_remote",
             gb / t.ours_big,
             "GB/s",
             gb / t.raw_big,
             "raw_loopback_tcp",
             Kind::rate,
             {{"rows", t.big_rows}, {"cols", cols}}});
  b.rep.add({"rtt_small",
             t.ours_small / small_iters * 1e6,
             "us",
             t.raw_small / small_iters * 1e6,
             "raw_tcp_ping_pong",
             Kind::time,
             {{"rows", t.small_rows}, {"cols", cols}}});
  b.rep.add({"pull_remote_tls",
             gb / t.tls_big,
             "GB/s",
             gb / t.ours_big,
             "plaintext_same_run",
             Kind::rate,
             {{"rows", t.big_rows}, {"cols", cols}, {"tls", "1.3 psk"}}});
  b.rep.add({"rtt_small_tls",
             t.tls_small / small_iters * 1e6,
             "us",
             t.ours_small / small_iters * 1e6,
             "plaintext_same_run",
             Kind::time,
             {{"rows", t.small_rows}, {"cols", cols}, {"tls", "1.3 psk"}}});
}

constexpr int conc_iters = 40;

/// Best time of K clients, each on its own thread, pulling 10,000 random rows of both
/// partitions at once.
double time_concurrent_pulls(Bench& b, const std::vector<std::shared_ptr<Client>>& cs) {
  const int clients = b.opt.clients;
  const std::int64_t cols = b.opt.cols;
  std::vector<std::vector<std::int64_t>> conc_ids;
  for (int k = 0; k < clients; ++k)
    conc_ids.push_back(random_ids(0, 2 * b.opt.rows_per_part, 10'000, b.rng));
  double best_conc = 1e300;
  for (int r = 0; r < b.opt.runs; ++r) {
    best_conc = std::min(best_conc, seconds_of([&] {
                           std::vector<std::thread> ts;
                           for (int k = 0; k < clients; ++k)
                             ts.emplace_back([&, k] {
                               const auto t = DistTensor<float, Client>::open(
                                   cs[static_cast<std::size_t>(k)], "feat", RowKind::node);
                               std::vector<float> o(10'000 * static_cast<std::size_t>(cols));
                               for (int i = 0; i < conc_iters; ++i)
                                 t.pull(conc_ids[static_cast<std::size_t>(k)], o);
                             });
                           for (auto& t : ts) t.join();
                         }));
  }
  return best_conc;
}

/// No lost updates: every client adds 1 to the same 20,000 rows (both partitions) 20 times
/// at once; returns how far the counters are from the expected sums.
std::int64_t count_lost_updates(Bench& b, const std::vector<std::shared_ptr<Client>>& cs) {
  const int clients = b.opt.clients;
  constexpr int add_rounds = 20;
  const auto hot = random_ids(0, 2 * b.opt.rows_per_part, 20'000, b.rng);
  {
    std::vector<std::thread> ts;
    for (int k = 0; k < clients; ++k)
      ts.emplace_back([&, k] {
        const auto t = DistTensor<std::int64_t, Client>::open(cs[static_cast<std::size_t>(k)],
                                                              "counter", RowKind::node);
        const std::vector<std::int64_t> ones(hot.size(), 1);
        for (int i = 0; i < add_rounds; ++i) t.push_add(hot, ones);
      });
    for (auto& t : ts) t.join();
  }
  std::vector<std::int64_t> expected(static_cast<std::size_t>(2 * b.opt.rows_per_part), 0);
  for (auto id : hot) expected[static_cast<std::size_t>(id)] += clients * add_rounds;
  const auto counter = DistTensor<std::int64_t, Client>::open(cs[0], "counter", RowKind::node);
  const auto got = counter.pull(all_ids(expected.size()));
  std::int64_t lost = 0;
  for (std::size_t i = 0; i < got.size(); ++i) lost += std::llabs(expected[i] - got[i]);
  return lost;
}

/// pull_concurrent against the raw pair's single stream in rows/s, then the push_add check;
/// false when an update was lost.
bool measure_pull_concurrent(Bench& b, const RemoteTimes& remote) {
  std::vector<std::shared_ptr<Client>> cs;
  for (int k = 0; k < b.opt.clients; ++k) cs.push_back(b.make_client(-1));
  const double best_conc = time_concurrent_pulls(b, cs);
  const std::int64_t lost = count_lost_updates(b, cs);
  const double conc_rows = 10'000.0 * conc_iters * b.opt.clients;
  const double raw_rows_per_s = (static_cast<double>(remote.big_rows) * big_iters) / remote.raw_big;
  b.rep.add({"pull_concurrent",
             conc_rows / best_conc,
             "rows/s",
             raw_rows_per_s,
             "raw_loopback_tcp_rows",
             Kind::rate,
             {{"clients", b.opt.clients},
              {"servers", parts},
              {"rows_per_request", 10'000},
              {"lost_updates", lost}}});
  if (lost != 0) {
    std::fprintf(stderr, "bench_kvstore: %lld lost updates under concurrent push_add\n",
                 static_cast<long long>(lost));
    return false;
  }
  return true;
}

/// The checkpoint bounds: two threads doing what the servers' file I/O does, minus the
/// reads from storage and the bookkeeping.
class PlainFileIo {
 public:
  PlainFileIo(std::filesystem::path dir, const Options& o)
      : dir_(std::move(dir)),
        rows_(static_cast<std::size_t>(o.rows_per_part * o.cols), 0.5f),
        shape_{o.rows_per_part, o.cols},
        row_bytes_(static_cast<std::size_t>(o.cols) * sizeof(float)),
        // Reads land in memory that was touched before, as the servers' storage is.
        touched_(parts, std::vector<std::byte>(rows_.size() * sizeof(float) + 4096, std::byte{1})) {
  }

  void write_both() {
    both([&](int p) { write(file(p)); });
  }
  void read_both() {
    both([&](int p) { read(file(p), p); });
  }

 private:
  static void both(const auto& f) {
    std::vector<std::thread> ts;
    for (int p = 0; p < parts; ++p) ts.emplace_back(f, p);
    for (auto& t : ts) t.join();
  }
  std::filesystem::path file(int p) const { return dir_ / ("bound-" + std::to_string(p) + ".npy"); }
  // Writes like a server does: a new file, 64Ki-row writes, fsync.
  void write(const std::filesystem::path& path) const {
    std::filesystem::remove(path);
    detail::FileDescriptor fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    const std::string header = npy_header_bytes(DType::float32, shape_);
    detail::write_all(fd.get(), std::as_bytes(std::span(header)), path.string());
    const auto bytes = std::as_bytes(std::span(rows_));
    const std::size_t step = (std::size_t{1} << 16) * row_bytes_;
    for (std::size_t at = 0; at < bytes.size(); at += step)
      detail::write_all(fd.get(), bytes.subspan(at, std::min(bytes.size() - at, step)),
                        path.string());
    ::fsync(fd.get());
  }
  void read(const std::filesystem::path& path, int p) {
    auto [fd, size] = detail::open_regular_file(path);
    auto& buf = touched_[static_cast<std::size_t>(p)];
    detail::pread_all(fd.get(), std::span(buf).first(std::min<std::size_t>(size, buf.size())), 0,
                      path.string());
  }

  std::filesystem::path dir_;
  std::vector<float> rows_;
  std::int64_t shape_[2];
  std::size_t row_bytes_;
  std::vector<std::vector<std::byte>> touched_;
};

/// checkpoint_save and checkpoint_load: both servers' save_tensors and load_tensors into a
/// temporary folder, alternating with the plain file writes and reads.
void measure_checkpoints(Bench& b) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("distgraph-bench-ckpt-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (auto& kv : b.servers.kv) kv->set_checkpoint_dir(dir);
  auto client = b.make_client(-1);
  PlainFileIo plain(dir, b.opt);
  double save = 1e300, save_bound = 1e300, load = 1e300, load_bound = 1e300;
  const int ck_runs = std::min(b.opt.runs, 3);
  for (int r = 0; r < ck_runs; ++r) {
    save_bound = std::min(save_bound, seconds_of([&] { plain.write_both(); }));
    save = std::min(save, seconds_of([&] { client->save_tensors("bench", {"feat"}, false); }));
    load_bound = std::min(load_bound, seconds_of([&] { plain.read_both(); }));
    load = std::min(load, seconds_of([&] { client->load_tensors("bench", {"feat"}, false); }));
  }
  std::filesystem::remove_all(dir);
  const std::int64_t rows = parts * b.opt.rows_per_part;
  const double gb = static_cast<double>(rows) * static_cast<double>(b.row_bytes()) / 1e9;
  b.rep.add({"checkpoint_save",
             gb / save,
             "GB/s",
             gb / save_bound,
             "plain_npy_file_writes",
             Kind::rate,
             {{"rows", rows}, {"cols", b.opt.cols}, {"runs", ck_runs}}});
  b.rep.add({"checkpoint_load",
             gb / load,
             "GB/s",
             gb / load_bound,
             "plain_npy_file_reads",
             Kind::rate,
             {{"rows", rows}, {"cols", b.opt.cols}, {"runs", ck_runs}}});
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse_options(argc, argv);
  bench::Reporter rep(argc, argv, "bench_kvstore");
  const RangePartitionBook book({opt.rows_per_part, opt.rows_per_part}, {0, 0});
  print_header(rep, opt);
  Servers servers(book, opt.cols, 2);
  Bench b{.opt = opt, .book = book, .servers = servers, .rep = rep};
  measure_pull_colocated(b);
  const RemoteTimes remote = time_remote_pulls(b);
  report_remote(b, remote);
  if (!measure_pull_concurrent(b, remote)) return 1;
  measure_checkpoints(b);
  return 0;
}
