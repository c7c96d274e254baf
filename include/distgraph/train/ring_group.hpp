// The CPU trainers' collectives over a ring of TCP connections, run on the calling thread.
// gloo hands each collective to a worker thread and its transport to an event loop thread;
// on a loaded CPU those hand-offs cost more than the bytes: a 302 KB sum of two trainers on
// loopback took 1.05-1.56 ms (0.67-0.99 ms of CPU) through gloo here, 0.06-0.16 ms this way
// (bench_collectives; docs/PERFORMANCE.md, "The gradients' ring").
#pragma once

#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <torch/types.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <utility>
#include <vector>

#include "distgraph/core/durable_file.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/train/rendezvous.hpp"

namespace distgraph {

namespace detail {

/// A collective that finished before its call returned (the ring runs on the caller).
class DoneWork : public c10d::Work {
 public:
  DoneWork(int rank, c10d::OpType op) : c10d::Work(rank, op) { finish(); }
};

/// What precedes every ring message: which collective and step it belongs to and how many
/// bytes follow, so trainers that call different collectives or sizes fail with both named
/// instead of reading one another's bytes.
struct RingHeader {
  std::uint32_t magic = 0x676e6972;  // "ring"
  std::uint16_t kind = 0;            // 1 reduce-scatter, 2 all-gather, 3 broadcast
  std::uint8_t dtype = 0;            // c10::ScalarType
  std::uint8_t op = 0;               // c10d::ReduceOp (0 broadcast, 0xff all-gather)
  std::uint32_t step = 0;            // within the collective
  std::uint32_t reserved = 0;
  std::uint64_t seq = 0;  // the group's collective count
  std::uint64_t bytes = 0;
  bool operator==(const RingHeader&) const = default;
};
static_assert(sizeof(RingHeader) == 32);
// Headers and greetings go out as the structs lie in memory; WIRE.md says little-endian.
static_assert(std::endian::native == std::endian::little,
              "the ring's wire format is little-endian");

/// The greeting a ring member sends the neighbour it connects to: the group's token (from
/// the store, so a stranger who reaches the port but not the store is refused) and ranks.
struct RingHello {
  std::array<char, 8> magic{'d', 'g', 'r', 'i', 'n', 'g', '1', '\0'};
  std::array<char, 32> token{};
  std::int32_t rank = 0, world = 0;
};

/// Equal without an early exit (the token's bytes do not leak through the time taken).
inline bool same_bytes(std::span<const char> a, std::span<const char> b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

/// The address to listen on and advertise: `o.hostname`, else the first IPv4 (then IPv6)
/// address of `o.interface`, else what this host's name resolves to (as gloo does).
inline std::string ring_address(const RendezvousOptions& o) {
  if (!o.hostname.empty()) {
    const std::string a = resolve_address(o.hostname);
    if (a.empty()) throw CollectiveError("trainers' ring: cannot resolve '" + o.hostname + "'");
    return a;
  }
  if (!o.interface.empty()) {
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) throw CollectiveError(errno_message("getifaddrs", errno));
    std::string v4, v6;
    for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
      if (i->ifa_addr == nullptr || o.interface != i->ifa_name) continue;
      char buf[INET6_ADDRSTRLEN] = {};
      if (i->ifa_addr->sa_family == AF_INET && v4.empty()) {
        if (::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf,
                        sizeof buf) != nullptr)
          v4 = buf;
      } else if (i->ifa_addr->sa_family == AF_INET6) {
        // A global address before a link-local one (whose scope names this host's
        // interface, which the other hosts resolve against theirs).
        const auto* a6 = reinterpret_cast<sockaddr_in6*>(i->ifa_addr);
        const bool link = IN6_IS_ADDR_LINKLOCAL(&a6->sin6_addr);
        if ((v6.empty() || (!link && v6.find('%') != std::string::npos)) &&
            ::inet_ntop(AF_INET6, &a6->sin6_addr, buf, sizeof buf) != nullptr)
          v6 = std::string(buf) + (link ? "%" + o.interface : "");
      }
    }
    ::freeifaddrs(list);
    if (v4.empty() && v6.empty())
      throw CollectiveError("trainers' ring: interface '" + o.interface + "' has no address");
    return v4.empty() ? v6 : v4;
  }
  std::array<char, 256> host{};
  ::gethostname(host.data(), host.size() - 1);
  const std::string a = resolve_address(host.data());
  if (a.empty())
    throw CollectiveError(std::string("trainers' ring: this host's name '") + host.data() +
                          "' resolves to no address");
  return a;
}

/// Milliseconds left until `deadline`, at least 0.
inline int ms_left(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 1 << 30));
}

/// Bytes still to move through one socket: up to two spans (a header, then a payload).
struct RingCursor {
  std::array<std::span<std::byte>, 2> parts;
  std::size_t done = 0;

  std::size_t total() const { return parts[0].size() + parts[1].size(); }
  bool finished() const { return done == total(); }
  /// iovecs of what is left (at most 2).
  int left(std::array<iovec, 2>& v) const {
    int n = 0;
    std::size_t skip = done;
    for (const auto& p : parts) {
      if (skip >= p.size()) {
        skip -= p.size();
        continue;
      }
      v[static_cast<std::size_t>(n++)] = iovec{p.data() + skip, p.size() - skip};
      skip = 0;
    }
    return n;
  }
};

template <class T>
std::span<std::byte> bytes_of(T& x) {
  return {reinterpret_cast<std::byte*>(&x), sizeof x};
}

}  // namespace detail

/// A CPU collective group of `world_size` trainers on a ring of TCP connections (each
/// sends to rank + 1 and receives from rank - 1): all-reduce (sum, product, min, max of
/// float32, float64, float16, bfloat16, int32 or int64 tensors, reduced in their dtype: a
/// reduce-scatter and an all-gather, each trainer sending 2 (N - 1) / N of the tensor),
/// all-gather, broadcast and barrier, each run to the end on the calling thread, so the
/// returned work is already complete and no thread of its own wakes between collectives. A
/// peer that dies or stops answering fails the collective with CollectiveError within the
/// group's timeout (or the collective's own), and every later one at once; so does a peer that
/// calls a different collective or size. What `make_trainer_groups` gives CPU trainers for
/// their gradients and their control collectives alike. Rendezvous through the store
/// under "distgraph/ring/<name>/"; connections are plain TCP, as gloo's are.
class RingGroup final : public CollectiveGroup {
 public:
  /// Joins the ring: listens on the address `o.hostname` or `o.interface` gives (else this
  /// host's name), publishes it, connects to the next rank and accepts the previous one,
  /// refusing connections without the group's token. Collective; blocks at most
  /// `o.timeout`, then throws CollectiveError. `name` tells apart groups of one store.
  RingGroup(const c10::intrusive_ptr<c10d::Store>& store, const RendezvousOptions& o,
            const std::string& name = "gradients")
      : CollectiveGroup((detail::check_rank(o.rank, o.world_size, "RingGroup"), o.rank),
                        o.world_size),
        timeout_(o.timeout) {
    if (o.world_size > 1) join(store, o, "distgraph/ring/" + name + "/");
  }

  const std::string getBackendName() const override { return "distgraph-ring"; }

  /// Reduces the one CPU tensor in `tensors` over the group, in place. Throws
  /// InvalidArgument for other tensors or ops, CollectiveError when the ring fails.
  c10::intrusive_ptr<c10d::Work> allreduce(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override {
    at::Tensor& t = one_tensor(tensors, "allreduce");
    check_op(opts.reduceOp, t);
    {
      std::lock_guard lock(mutex_);
      in_place(t, [&](at::Tensor& c) { ring_allreduce(c, opts.reduceOp, deadline(opts.timeout)); });
    }
    return c10::make_intrusive<detail::DoneWork>(getRank(), c10d::OpType::ALLREDUCE);
  }

  /// Copies rank `opts.rootRank`'s tensor into every trainer's, passed along the ring.
  c10::intrusive_ptr<c10d::Work> broadcast(
      std::vector<at::Tensor>& tensors,
      const c10d::BroadcastOptions& opts = c10d::BroadcastOptions()) override {
    at::Tensor& t = one_tensor(tensors, "broadcast");
    if (opts.rootRank < 0 || opts.rootRank >= getSize())
      throw IdOutOfRange("RingGroup broadcast root", opts.rootRank, 0, getSize());
    {
      std::lock_guard lock(mutex_);
      in_place(t, [&](at::Tensor& c) {
        ring_broadcast(c, static_cast<int>(opts.rootRank), deadline(opts.timeout));
      });
    }
    return c10::make_intrusive<detail::DoneWork>(getRank(), c10d::OpType::BROADCAST);
  }

  /// Every trainer's tensor in rank order: `outputs[0][r]` receives rank r's
  /// `inputs[0]`, passed along the ring (N - 1 steps). The outputs must be `world`
  /// contiguous CPU tensors of the input's dtype and size. Throws InvalidArgument for
  /// other tensors, CollectiveError when the ring fails (or another trainer's tensor is of
  /// another size or dtype).
  c10::intrusive_ptr<c10d::Work> allgather(
      std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override {
    const at::Tensor& in = one_tensor(inputs, "allgather");
    if (outputs.size() != 1 || outputs[0].size() != static_cast<std::size_t>(getSize()))
      throw InvalidArgument("RingGroup allgather: expected one list of " +
                            std::to_string(getSize()) + " output tensors");
    for (const at::Tensor& o : outputs[0])
      if (!o.defined() || !o.device().is_cpu() || !o.is_contiguous() ||
          o.scalar_type() != in.scalar_type() || o.numel() != in.numel())
        throw InvalidArgument(
            "RingGroup allgather: each output must be a contiguous CPU tensor of the input's "
            "dtype and size");
    {
      std::lock_guard lock(mutex_);
      outputs[0][static_cast<std::size_t>(getRank())].copy_(
          in.reshape_as(outputs[0][static_cast<std::size_t>(getRank())]));
      ring_allgather(outputs[0], deadline(opts.timeout));
    }
    return c10::make_intrusive<detail::DoneWork>(getRank(), c10d::OpType::ALLGATHER);
  }

  /// Returns when every trainer of the group has called it.
  c10::intrusive_ptr<c10d::Work> barrier(
      const c10d::BarrierOptions& opts = c10d::BarrierOptions()) override {
    std::vector<at::Tensor> one{at::zeros({1}, at::kLong)};
    c10d::AllreduceOptions ao;
    ao.timeout = opts.timeout;
    allreduce(one, ao);
    return c10::make_intrusive<detail::DoneWork>(getRank(), c10d::OpType::BARRIER);
  }

 private:
  enum Kind : std::uint16_t { kReduceScatter = 1, kAllGather = 2, kBroadcast = 3 };
  /// The header's op of a plain all-gather (no c10d::ReduceOp has it).
  static constexpr std::uint8_t kGatherOnly = 0xff;

  static at::Tensor& one_tensor(std::vector<at::Tensor>& tensors, const char* what) {
    if (tensors.size() != 1)
      throw InvalidArgument(std::string("RingGroup ") + what + ": " +
                            std::to_string(tensors.size()) + " tensors; expected 1");
    at::Tensor& t = tensors[0];
    if (!t.defined() || !t.device().is_cpu() || t.layout() != at::kStrided)
      throw InvalidArgument(std::string("RingGroup ") + what +
                            ": expected a dense CPU tensor (CUDA gradients use NCCL or gloo)");
    return t;
  }

  static void check_op(const c10d::ReduceOp& op, const at::Tensor& t) {
    const auto o = op.op_;
    if (o != c10d::ReduceOp::SUM && o != c10d::ReduceOp::PRODUCT && o != c10d::ReduceOp::MIN &&
        o != c10d::ReduceOp::MAX)
      throw InvalidArgument("RingGroup allreduce: op " + std::to_string(static_cast<int>(o)) +
                            "; expected SUM, PRODUCT, MIN or MAX");
    const auto s = t.scalar_type();
    if (s != at::kFloat && s != at::kDouble && s != at::kInt && s != at::kLong && s != at::kHalf &&
        s != at::kBFloat16)
      throw DTypeError("RingGroup allreduce",
                       std::string(c10::toString(s)) +
                           " tensor; expected float32, float64, float16, bfloat16, int32 or int64");
  }

  /// Runs `f` on `t`, through a contiguous copy written back when `t` is not contiguous.
  template <class F>
  static void in_place(at::Tensor& t, F&& f) {
    if (t.is_contiguous()) return f(t);
    at::Tensor c = t.contiguous();
    f(c);
    t.copy_(c);
  }

  std::chrono::steady_clock::time_point deadline(std::chrono::milliseconds t) const {
    return std::chrono::steady_clock::now() + (t.count() >= 0 ? t : timeout_);
  }

  int left_rank() const { return (getRank() + getSize() - 1) % getSize(); }
  int right_rank() const { return (getRank() + 1) % getSize(); }

  std::string who() const {
    return "trainers' ring (trainer " + std::to_string(getRank()) + " of " +
           std::to_string(getSize()) + ")";
  }

  /// Marks the ring broken (its byte streams are out of step) and throws.
  [[noreturn]] void fail(const std::string& what) {
    broken_ = what;
    right_.close();
    left_.close();
    throw CollectiveError(who() + ": " + what);
  }

  // -- rendezvous ------------------------------------------------------------------------

  void join(const c10::intrusive_ptr<c10d::Store>& store, const RendezvousOptions& o,
            const std::string& base) {
    const auto until = std::chrono::steady_clock::now() + o.timeout;
    const auto store_error = [&](const std::exception& e) {
      std::string msg = e.what();
      if (const auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
      return CollectiveError(who() + ": rendezvous through the store: " + msg);
    };
    // Rings made one after another under one name take fresh keys: every member counts its
    // join first thing, and the barrier that ends a join makes all of one ring's counts come
    // before the next ring's.
    std::int64_t joins = 0;
    try {
      joins = store->add(base + "joins", 1);
    } catch (const std::exception& e) {
      throw store_error(e);
    }
    const std::string prefix = base + std::to_string((joins - 1) / o.world_size) + "/";
    const std::string address = detail::ring_address(o);
    detail::FileDescriptor listener = listen_on(address);
    std::string token;
    try {
      if (o.rank == 0) {
        std::random_device rd;
        const char* hex = "0123456789abcdef";
        for (int i = 0; i < 32; ++i) token += hex[rd() & 15U];
        store->set(prefix + "token", std::vector<std::uint8_t>(token.begin(), token.end()));
      } else {
        store->wait({prefix + "token"},
                    std::chrono::milliseconds(std::max(1, detail::ms_left(until))));
        const auto v = store->get(prefix + "token");
        token.assign(v.begin(), v.end());
        if (token.size() != 32)
          throw CollectiveError(who() + ": the store's ring token has " +
                                std::to_string(token.size()) + " bytes; expected 32");
      }
      const std::string mine = address + " " + std::to_string(bound_port(listener.get()));
      store->set(prefix + std::to_string(o.rank),
                 std::vector<std::uint8_t>(mine.begin(), mine.end()));
      const std::string right_key = prefix + std::to_string(right_rank());
      store->wait({right_key}, std::chrono::milliseconds(std::max(1, detail::ms_left(until))));
      const auto v = store->get(right_key);
      const std::string theirs(v.begin(), v.end());
      const auto space = theirs.rfind(' ');
      right_ = connect_to(theirs.substr(0, space), theirs.substr(space + 1), until);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw store_error(e);
    }
    detail::RingHello hello;
    std::memcpy(hello.token.data(), token.data(), hello.token.size());
    hello.rank = o.rank;
    hello.world = o.world_size;
    detail::RingCursor greeting{{detail::bytes_of(hello), {}}};
    if (!transfer(&greeting, nullptr, until, no_check))
      throw CollectiveError(who() + ": could not greet trainer " + std::to_string(right_rank()) +
                            ": " + why_);
    left_ = accept_left(listener.get(), hello.token, until);
    for (int fd : {left_.get(), right_.get()}) {
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
    at::Tensor barrier = at::zeros({1}, at::kLong);  // collective #0 of every ring
    ring_allreduce(barrier, c10d::ReduceOp::SUM, until);
  }

  detail::FileDescriptor listen_on(const std::string& address) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
    addrinfo* list = nullptr;
    if (::getaddrinfo(address.c_str(), "0", &hints, &list) != 0 || list == nullptr)
      throw CollectiveError(who() + ": cannot listen on '" + address + "'");
    // Non-blocking: a connection that poll reported may be gone before accept4 takes it.
    detail::FileDescriptor fd(
        ::socket(list->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    const bool ok = fd.get() >= 0 && ::bind(fd.get(), list->ai_addr, list->ai_addrlen) == 0 &&
                    ::listen(fd.get(), 16) == 0;
    const int err = errno;
    ::freeaddrinfo(list);
    if (!ok)
      throw CollectiveError(who() + ": " +
                            detail::errno_message(("listen on " + address).c_str(), err));
    return fd;
  }

  static std::uint16_t bound_port(int fd) {
    sockaddr_storage a{};
    socklen_t n = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
    return ntohs(a.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&a)->sin_port
                                        : reinterpret_cast<sockaddr_in6*>(&a)->sin6_port);
  }

  detail::FileDescriptor connect_to(const std::string& host, const std::string& port,
                                    std::chrono::steady_clock::time_point until) {
    const std::string where =
        "trainer " + std::to_string(right_rank()) + " at " + host + " port " + port;
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    addrinfo* list = nullptr;
    if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &list) != 0 || list == nullptr)
      throw CollectiveError(who() + ": the store gave " + where + ", not an address");
    detail::FileDescriptor fd(
        ::socket(list->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    int err = fd.get() < 0 ? errno : 0;
    if (err == 0 && ::connect(fd.get(), list->ai_addr, list->ai_addrlen) != 0) err = errno;
    ::freeaddrinfo(list);
    if (err == EINPROGRESS) {
      pollfd p{fd.get(), POLLOUT, 0};
      int ready = -1;
      while (ready < 0) {
        ready = ::poll(&p, 1, detail::ms_left(until));
        if (ready < 0 && errno != EINTR) break;
      }
      if (ready != 1) throw CollectiveError(who() + ": connecting to " + where + " timed out");
      socklen_t n = sizeof err;
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &n);
    }
    if (err != 0)
      throw CollectiveError(who() + ": " +
                            detail::errno_message(("connect to " + where).c_str(), err));
    return fd;
  }

  /// Accepts connections until one greets with the group's token from the previous rank,
  /// reading every pending greeting at once (a silent or slow stranger delays nobody);
  /// the others (a wrong magic, token, rank or world size, or the oldest past 64 pending)
  /// are closed. Throws CollectiveError at `until`.
  detail::FileDescriptor accept_left(int listener, const std::array<char, 32>& token,
                                     std::chrono::steady_clock::time_point until) {
    struct Pending {
      detail::FileDescriptor fd;
      detail::RingHello hello;
      std::size_t got = 0;
    };
    std::vector<Pending> pending;
    int refused = 0;
    for (;;) {
      const int ms = detail::ms_left(until);
      std::vector<pollfd> p{{listener, POLLIN, 0}};
      for (const auto& c : pending) p.push_back({c.fd.get(), POLLIN, 0});
      if (ms == 0 || ::poll(p.data(), p.size(), ms) == 0)
        throw CollectiveError(who() + ": trainer " + std::to_string(left_rank()) +
                              " never connected and greeted (" + std::to_string(refused) +
                              " other connections refused)");
      if ((p[0].revents & POLLIN) != 0) {
        detail::FileDescriptor fd(
            ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
        const int err = errno;
        if (fd.get() >= 0) {
          if (pending.size() >= 64) pending.erase(pending.begin()), ++refused;
          pending.push_back({std::move(fd), {}, 0});
        } else if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
          throw CollectiveError(who() + ": " +
                                detail::errno_message("accepting the previous trainer", err));
        }
      }
      for (std::size_t i = 0; i < pending.size();) {
        Pending& c = pending[i];
        auto bytes = detail::bytes_of(c.hello);
        const ssize_t n = ::read(c.fd.get(), bytes.data() + c.got, bytes.size() - c.got);
        const int err = errno;
        if (n > 0) c.got += static_cast<std::size_t>(n);
        const bool done = c.got == bytes.size();
        if (done && detail::same_bytes(c.hello.magic, detail::RingHello{}.magic) &&
            detail::same_bytes(c.hello.token, token) && c.hello.rank == left_rank() &&
            c.hello.world == getSize())
          return std::move(c.fd);
        if (done || n == 0 || (n < 0 && err != EAGAIN && err != EWOULDBLOCK && err != EINTR)) {
          pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
          ++refused;
        } else {
          ++i;
        }
      }
    }
  }

  static constexpr auto no_check = [](const detail::RingCursor&) { return true; };

  /// Moves `out` to the next trainer and `in` from the previous one (either may be null), both at
  /// once, until done (true) or a peer closes, fails, `until` passes or `check` (called
  /// after each read) says no (false, with why_).
  template <class Check>
  bool transfer(detail::RingCursor* out, detail::RingCursor* in,
                std::chrono::steady_clock::time_point until, Check&& check) {
    const int out_fd = right_.get(), in_fd = left_.get();
    for (;;) {
      bool moved = false;
      std::array<iovec, 2> v{};
      if (out != nullptr && !out->finished()) {
        msghdr m{};
        m.msg_iov = v.data();
        m.msg_iovlen = static_cast<std::size_t>(out->left(v));
        const ssize_t n = ::sendmsg(out_fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
          out->done += static_cast<std::size_t>(n);
          moved = true;
        } else if (const int err = errno;
                   n < 0 && err != EAGAIN && err != EWOULDBLOCK && err != EINTR) {
          why_ = detail::errno_message(
              ("sending to trainer " + std::to_string(right_rank())).c_str(), err);
          return false;
        }
      }
      if (in != nullptr && !in->finished()) {
        const ssize_t n = ::readv(in_fd, v.data(), in->left(v));
        if (n > 0) {
          in->done += static_cast<std::size_t>(n);
          moved = true;
          if (!check(*in)) return false;
        } else if (n == 0) {
          why_ = "trainer " + std::to_string(left_rank()) + " closed its connection";
          return false;
        } else if (const int err = errno; err != EAGAIN && err != EWOULDBLOCK && err != EINTR) {
          why_ = detail::errno_message(
              ("receiving from trainer " + std::to_string(left_rank())).c_str(), err);
          return false;
        }
      }
      const bool out_left = out != nullptr && !out->finished();
      const bool in_left = in != nullptr && !in->finished();
      if (!out_left && !in_left) return true;
      if (moved) continue;
      std::array<pollfd, 2> p{};
      nfds_t np = 0;
      if (out_left) p[np++] = pollfd{out_fd, POLLOUT, 0};
      if (in_left) p[np++] = pollfd{in_fd, POLLIN, 0};
      const int ms = detail::ms_left(until);
      if (ms == 0 || ::poll(p.data(), np, ms) == 0) {
        why_ = in_left ? "trainer " + std::to_string(left_rank()) + " sent nothing"
                       : "trainer " + std::to_string(right_rank()) + " read nothing";
        why_ += " in time";
        return false;
      }
    }
  }

  // -- collectives -----------------------------------------------------------------------

  /// One step: sends `send` to the right, receives into `recv` from the left, each after
  /// its header, and checks the received header against what this trainer expects.
  void step(detail::RingHeader what, std::span<std::byte> send, std::span<std::byte> recv,
            bool sending, bool receiving, std::chrono::steady_clock::time_point until) {
    if (!broken_.empty()) throw CollectiveError(who() + ": the ring broke earlier: " + broken_);
    what.seq = seq_;
    detail::RingHeader out_h = what, want = what, in_h;
    out_h.bytes = send.size();
    want.bytes = recv.size();
    detail::RingCursor out{{detail::bytes_of(out_h), send}};
    detail::RingCursor in{{detail::bytes_of(in_h), recv}};
    bool checked = false;
    const auto check = [&](const detail::RingCursor& c) {
      if (checked || c.done < sizeof in_h) return true;
      checked = true;
      if (in_h == want) return true;
      why_ = "trainer " + std::to_string(left_rank()) + " sent " + describe(in_h) +
             " where this trainer expected " + describe(want) +
             "; expected every trainer to call the same collectives on tensors of the same "
             "size and dtype, in the same order";
      return false;
    };
    if (!transfer(sending ? &out : nullptr, receiving ? &in : nullptr, until, check))
      fail(why_ + " (collective #" + std::to_string(seq_) + ")");
  }

  static std::string describe(const detail::RingHeader& h) {
    if (h.magic != detail::RingHeader{}.magic) return "bytes that are no ring header";
    static constexpr const char* kinds[] = {"?", "reduce-scatter", "all-gather", "broadcast"};
    return "collective #" + std::to_string(h.seq) + " (" + kinds[h.kind < 4 ? h.kind : 0] +
           " step " + std::to_string(h.step) + ", dtype " + std::to_string(h.dtype) + ", op " +
           std::to_string(h.op) + ") of " + std::to_string(h.bytes) + " bytes";
  }

  void ring_allreduce(at::Tensor& t, const c10d::ReduceOp& op,
                      std::chrono::steady_clock::time_point until) {
    const int n = getSize();
    const int r = getRank();
    if (n == 1) return;
    const std::int64_t numel = t.numel();
    const auto es = static_cast<std::size_t>(t.element_size());
    auto* base = static_cast<std::byte*>(t.data_ptr());
    const auto chunk = [&](int i) {
      i = ((i % n) + n) % n;
      const std::int64_t q = numel / n, rem = numel % n;
      const std::int64_t off = i * q + std::min<std::int64_t>(i, rem);
      const std::int64_t len = q + (i < rem ? 1 : 0);
      return std::span<std::byte>(base + off * static_cast<std::int64_t>(es),
                                  static_cast<std::size_t>(len) * es);
    };
    scratch_.resize(chunk(0).size() / sizeof(double) + 1);
    auto* scratch = reinterpret_cast<std::byte*>(scratch_.data());
    detail::RingHeader h{.kind = kReduceScatter,
                         .dtype = static_cast<std::uint8_t>(t.scalar_type()),
                         .op = static_cast<std::uint8_t>(op.op_)};
    for (int s = 0; s < n - 1; ++s) {
      const auto mine = chunk(r - s - 1);
      h.step = static_cast<std::uint32_t>(s);
      step(h, chunk(r - s), std::span<std::byte>(scratch, mine.size()), true, true, until);
      reduce_into(mine, scratch, t.scalar_type(), op.op_);
    }
    h.kind = kAllGather;
    for (int s = 0; s < n - 1; ++s) {
      h.step = static_cast<std::uint32_t>(s);
      step(h, chunk(r + 1 - s), chunk(r - s), true, true, until);
    }
    ++seq_;
  }

  // Rank r's slot travels right: at step s each trainer passes on the slot it received at
  // step s - 1 (its own first) and receives its left neighbour's. The header's op (no
  // reduce op's number) tells it apart from an all-reduce's all-gather half.
  void ring_allgather(std::vector<at::Tensor>& slots, std::chrono::steady_clock::time_point until) {
    const int n = getSize();
    if (n == 1) return;
    const auto slot = [&](int i) {
      at::Tensor& t = slots[static_cast<std::size_t>(((i % n) + n) % n)];
      return std::span<std::byte>(static_cast<std::byte*>(t.data_ptr()),
                                  static_cast<std::size_t>(t.numel() * t.element_size()));
    };
    detail::RingHeader h{.kind = kAllGather,
                         .dtype = static_cast<std::uint8_t>(slots[0].scalar_type()),
                         .op = kGatherOnly};
    const int r = getRank();
    for (int s = 0; s < n - 1; ++s) {
      h.step = static_cast<std::uint32_t>(s);
      step(h, slot(r - s), slot(r - s - 1), true, true, until);
    }
    ++seq_;
  }

  void ring_broadcast(at::Tensor& t, int root, std::chrono::steady_clock::time_point until) {
    const int n = getSize();
    if (n == 1) return;
    const int k = (getRank() - root + n) % n;  // hops from the root
    const std::span<std::byte> all(static_cast<std::byte*>(t.data_ptr()),
                                   static_cast<std::size_t>(t.numel() * t.element_size()));
    const detail::RingHeader h{.kind = kBroadcast,
                               .dtype = static_cast<std::uint8_t>(t.scalar_type())};
    if (k > 0) step(h, {}, all, false, true, until);
    if (k < n - 1) step(h, all, {}, true, false, until);
    ++seq_;
  }

  template <class T>
  static void reduce_as(std::span<std::byte> into, const std::byte* from, std::uint8_t op) {
    auto* a = reinterpret_cast<T*>(into.data());
    const auto* b = reinterpret_cast<const T*>(from);
    const std::size_t n = into.size() / sizeof(T);
    switch (op) {
      case c10d::ReduceOp::SUM:
        for (std::size_t i = 0; i < n; ++i) a[i] += b[i];
        break;
      case c10d::ReduceOp::PRODUCT:
        for (std::size_t i = 0; i < n; ++i) a[i] *= b[i];
        break;
      case c10d::ReduceOp::MIN:
        for (std::size_t i = 0; i < n; ++i) a[i] = std::min(a[i], b[i]);
        break;
      default:
        for (std::size_t i = 0; i < n; ++i) a[i] = std::max(a[i], b[i]);
    }
  }

  static void reduce_into(std::span<std::byte> into, const std::byte* from, at::ScalarType s,
                          std::uint8_t op) {
    if (s == at::kFloat) return reduce_as<float>(into, from, op);
    if (s == at::kDouble) return reduce_as<double>(into, from, op);
    if (s == at::kInt) return reduce_as<std::int32_t>(into, from, op);
    if (s == at::kHalf) return reduce_as<c10::Half>(into, from, op);
    if (s == at::kBFloat16) return reduce_as<c10::BFloat16>(into, from, op);
    reduce_as<std::int64_t>(into, from, op);
  }

  std::chrono::milliseconds timeout_;
  detail::FileDescriptor right_, left_;  // send to rank + 1, receive from rank - 1
  std::vector<double> scratch_;          // a received chunk; doubles: aligned for every dtype
  std::uint64_t seq_ = 0;
  std::string broken_, why_;
  std::mutex mutex_;
};

}  // namespace distgraph
