// Gradient all-reduce across trainers through c10d's ProcessGroupGloo, in flat buckets.
#pragma once

#include <torch/types.h>
#include <torch/version.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <utility>
#include <vector>
#if defined(USE_C10D_NCCL)  // a CUDA libtorch built with c10d's NCCL backend
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "distgraph/core/error.hpp"
#include "distgraph/core/trace.hpp"
#include "distgraph/runtime/environment.hpp"
#include "distgraph/runtime/ip_config.hpp"
#include "distgraph/train/rendezvous.hpp"
#include "distgraph/train/ring_group.hpp"

namespace distgraph {

/// Trainers disagree on how many batches an epoch has; raised on every trainer (after one
/// all-reduce of the counts) instead of a deadlock at the first missing all-reduce.
class BatchCountMismatch : public Error {
 public:
  BatchCountMismatch(std::int64_t rank, std::int64_t local, std::int64_t min, std::int64_t max)
      : Error("trainer " + std::to_string(rank) + ": " + std::to_string(local) +
              " batches this epoch, others have " + std::to_string(min) + " to " +
              std::to_string(max) +
              "; expected the same count on every trainer (node_split "
              "with force_even gives it)"),
        local_(local),
        min_(min),
        max_(max) {}
  std::int64_t local() const noexcept { return local_; }
  std::int64_t min() const noexcept { return min_; }
  std::int64_t max() const noexcept { return max_; }

 private:
  std::int64_t local_, min_, max_;
};

/// Where a trainer's gloo group binds, as gloo_binding chose it.
struct GlooBinding {
  std::string hostname;   ///< address to bind ("" with an interface, or PyTorch's default)
  std::string interface;  ///< network interface to bind (GLOO_SOCKET_IFNAME)
  /// A host of the job that is not this computer ("" when every machine is here): why a
  /// loopback binding would be unreachable.
  std::string other_host;
};

/// Chooses the address trainer `o.rank` binds its gloo group to, which gloo also
/// advertises to the other trainers: o.interface (GLOO_SOCKET_IFNAME) when set; else the
/// address ip config `ip` gives this trainer's `machine` (servers bind it too, so the
/// other hosts reach it); else 127.0.0.1 for a loopback master; else what this host's name
/// resolves to, as PyTorch does. Debian writes `127.0.1.1 <hostname>` into /etc/hosts, so
/// that default advertises a loopback address to trainers on other hosts, which then
/// connect to themselves and are refused. Throws CollectiveError when the choice is
/// loopback while the job spans hosts (a machine of `ip`, or the master, is not this
/// computer), naming the address and where it came from.
inline GlooBinding gloo_binding(const RendezvousOptions& o, const IpConfig* ip,
                                std::int32_t machine) {
  GlooBinding b;
  if (ip != nullptr)
    for (const auto& m : ip->machines)
      if (b.other_host.empty() && !is_local_address(m.ip)) b.other_host = m.ip;
  if (b.other_host.empty() && !is_local_address(o.master_addr) &&
      !detail::is_loopback_address(o.master_addr))
    b.other_host = o.master_addr;
  const auto refuse = [&](const std::string& what) {
    throw CollectiveError("gloo process group (trainer " + std::to_string(o.rank) + " of " +
                          std::to_string(o.world_size) + "): " + what +
                          ", but the job spans hosts (" + b.other_host +
                          " is another host); expected an address the other hosts reach: "
                          "set GLOO_SOCKET_IFNAME (distgraph launch --gloo-interface) or give "
                          "this machine its own address in the ip config");
  };
  if (!o.interface.empty()) {
    if (!b.other_host.empty() && detail::is_loopback_interface(o.interface))
      refuse("GLOO_SOCKET_IFNAME=" + o.interface + " names a loopback interface");
    b.interface = o.interface;
    return b;
  }
  if (ip != nullptr && machine >= 0 && machine < ip->num_machines()) {
    const MachineEntry& m = ip->machines[static_cast<std::size_t>(machine)];
    const std::string where = ip->path.string() + " line " + std::to_string(m.line);
    if (!b.other_host.empty() && detail::is_loopback_address(m.ip))
      refuse("machine " + std::to_string(machine) + "'s address " + m.ip + " (" + where +
             ") is a loopback address");
    if (!is_local_address(m.ip))
      throw CollectiveError("gloo process group (trainer " + std::to_string(o.rank) +
                            "): machine " + std::to_string(machine) + "'s address " + m.ip + " (" +
                            where +
                            ") is not an address of this host; expected DISTGRAPH_MACHINE_ID "
                            "to name this host's line of the ip config");
    b.hostname = m.ip;
    return b;
  }
  if (detail::is_loopback_address(o.master_addr)) {
    b.hostname = "127.0.0.1";  // a one-computer cluster needs no network interface
    return b;
  }
  std::array<char, 256> host{};
  ::gethostname(host.data(), host.size() - 1);
  const std::string resolved = detail::resolve_address(host.data());
  if (!b.other_host.empty() && detail::is_loopback_address(resolved))
    refuse(std::string("this host's name '") + host.data() + "' resolves to " + resolved +
           ", a loopback address");
  return b;
}

namespace detail {

/// The environment's rendezvous, bound where gloo_binding says (the ip config and machine
/// of a launched trainer: DISTGRAPH_IP_CONFIG, DISTGRAPH_MACHINE_ID).
inline RendezvousOptions trainer_rendezvous(std::chrono::milliseconds timeout) {
  RendezvousOptions base;
  base.timeout = timeout;
  RendezvousOptions o = rendezvous_from_env(base);
  if (o.world_size <= 1) return o;  // no group to bind
  const Environment env = read_environment();
  std::optional<IpConfig> ip;
  if (!env.ip_config.empty()) ip = read_ip_config(env.ip_config);
  const GlooBinding b = gloo_binding(o, ip ? &*ip : nullptr, env.machine_id);
  o.hostname = b.hostname;
  o.interface = b.interface;
  return o;
}

/// libtorch >= 2.4 asks for the libuv TCPStore backend by default and throws where it was
/// built without libuv (Debian 13's 2.6: "use_libuv was requested but PyTorch was build
/// without libuv support"). The classic backend exists in every build and serves a job's
/// few trainers as well. Older versions have no such option. (A template, so the member
/// test is a substitution.)
template <class StoreOptions>
void use_classic_store_backend(StoreOptions& so) {
  if constexpr (requires { so.useLibUV; }) so.useLibUV = false;
}

}  // namespace detail

/// A TCPStore for the rendezvous: rank 0 hosts it on master_port (0 = any free port; read
/// it back with `store->getPort()`), the others connect to master_addr:master_port.
/// Blocks until connected, at most `timeout`; throws CollectiveError when it cannot.
inline c10::intrusive_ptr<c10d::TCPStore> make_tcp_store(const RendezvousOptions& o) {
  detail::check_rank(o.rank, o.world_size, "make_tcp_store");
  c10d::TCPStoreOptions so;
  so.port = o.master_port;
  so.isServer = o.rank == 0;
  so.numWorkers = static_cast<std::size_t>(o.world_size);
  // Rank 0 must return (to publish a picked port) before the others connect; the process
  // group's rendezvous through the store waits for everyone anyway.
  so.waitWorkers = false;
  so.timeout = o.timeout;
  detail::use_classic_store_backend(so);
  try {
    return c10::make_intrusive<c10d::TCPStore>(o.master_addr, so);
  } catch (const std::exception& e) {
    throw CollectiveError("TCPStore " + o.master_addr + ":" + std::to_string(o.master_port) +
                          " (trainer " + std::to_string(o.rank) + "): " + e.what());
  }
}

/// A FileStore at `path` shared by `world_size` processes or threads (tests, one machine).
inline c10::intrusive_ptr<c10d::Store> make_file_store(const std::string& path,
                                                       std::int32_t world_size) {
  return c10::make_intrusive<c10d::FileStore>(path, world_size);
}

/// A gloo process group of `o.world_size` trainers meeting through `store`; every trainer
/// calls it with its own rank. Blocks until all have joined, at most o.timeout; throws
/// CollectiveError otherwise. Collectives on the group must be issued in the same order
/// on every trainer; one group per thread.
inline c10::intrusive_ptr<c10d::ProcessGroupGloo> make_gloo_group(
    const c10::intrusive_ptr<c10d::Store>& store, const RendezvousOptions& o) {
  detail::check_rank(o.rank, o.world_size, "make_gloo_group");
  auto opts = c10d::ProcessGroupGloo::Options::create(o.timeout);
  try {
    if (!o.hostname.empty())
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(o.hostname));
    else if (!o.interface.empty())
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(o.interface));
    else
      opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    opts->threads = 2;
    return c10::make_intrusive<c10d::ProcessGroupGloo>(store, o.rank, o.world_size, opts);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (const auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
    throw CollectiveError("gloo process group (trainer " + std::to_string(o.rank) + " of " +
                          std::to_string(o.world_size) + "): " + msg);
  }
}

/// Whether this build can make NCCL groups (libtorch with CUDA and c10d's NCCL backend).
inline constexpr bool has_nccl =
#if defined(USE_C10D_NCCL)
    true;
#else
    false;
#endif

#if defined(USE_C10D_NCCL)
/// An NCCL process group of `o.world_size` trainers meeting through `store` (under the
/// key prefix "nccl/", so the same store can also hold a gloo group's rendezvous). For
/// CUDA tensors only, one device per trainer (NCCL refuses two ranks on one GPU).
/// Collectives block the calling thread until done (blocking wait), so a dead peer gives
/// CollectiveError after o.timeout, as with gloo, instead of a watchdog abort.
inline c10::intrusive_ptr<c10d::ProcessGroupNCCL> make_nccl_group(
    const c10::intrusive_ptr<c10d::Store>& store, const RendezvousOptions& o) {
  detail::check_rank(o.rank, o.world_size, "make_nccl_group");
  // Read by the group's constructor: the 1.x name, then the 2.x one; a user's value stays.
  ::setenv("NCCL_BLOCKING_WAIT", "1", /*overwrite=*/0);
  ::setenv("TORCH_NCCL_BLOCKING_WAIT", "1", /*overwrite=*/0);
  auto opts = c10d::ProcessGroupNCCL::Options::create();
  opts->timeout = o.timeout;
  try {
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(
        c10::make_intrusive<c10d::PrefixStore>("nccl", store), o.rank, o.world_size, opts);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (const auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
    throw CollectiveError("NCCL process group (trainer " + std::to_string(o.rank) + " of " +
                          std::to_string(o.world_size) + "): " + msg);
  }
}
#endif

/// The trainers' gloo group as the environment describes it (MASTER_ADDR, MASTER_PORT,
/// RANK, WORLD_SIZE, as `distgraph launch`, torchrun and friends set them), or none for a
/// single trainer, bound where gloo_binding says (a launched trainer: its machine's ip
/// config address). Blocks until every trainer joined, at most `timeout`; throws
/// CollectiveError, also for a loopback binding in a job that spans hosts.
inline c10::intrusive_ptr<CollectiveGroup> trainer_group_from_env(
    std::chrono::milliseconds timeout = std::chrono::minutes(5)) {
  const RendezvousOptions o = detail::trainer_rendezvous(timeout);
  if (o.world_size <= 1) return {};
  return make_gloo_group(make_tcp_store(o), o);
}

/// Sums `values` element-wise over all trainers of `group` (in double) and returns the
/// sums. Collective: every trainer calls it with the same length. Blocks at most
/// `timeout`, then throws CollectiveError.
inline std::vector<double> all_reduce_sum(
    CollectiveGroup& group, std::span<const double> values,
    std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  auto t = torch::empty({static_cast<std::int64_t>(values.size())}, torch::kDouble);
  std::copy(values.begin(), values.end(), t.data_ptr<double>());
  std::vector<torch::Tensor> ts{t};
  c10d::AllreduceOptions ao;
  ao.timeout = timeout;  // a group that runs the collective in the call (RingGroup) sees it
  detail::run_collective("all_reduce_sum", group.getRank(), timeout,
                         [&] { return group.allreduce(ts, ao); });
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
}

/// The smallest and largest `value` over all trainers of `group` (one all-reduce).
/// Collective; blocks at most `timeout`, then throws CollectiveError.
inline std::pair<std::int64_t, std::int64_t> all_reduce_min_max(
    CollectiveGroup& group, std::int64_t value,
    std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  auto t = torch::tensor({value, -value}, torch::kLong);
  std::vector<torch::Tensor> ts{t};
  c10d::AllreduceOptions ao;
  ao.reduceOp = c10d::ReduceOp::MAX;
  ao.timeout = timeout;
  detail::run_collective("all_reduce_min_max", group.getRank(), timeout,
                         [&] { return group.allreduce(ts, ao); });
  return {-t[1].item<std::int64_t>(), t[0].item<std::int64_t>()};
}

/// Every trainer's 1-D CPU tensor `local` concatenated in rank order (lengths may
/// differ; they are padded to the longest for gloo's equal-size all-gather and cut back).
/// Collective; blocks at most `timeout`, then throws CollectiveError.
inline torch::Tensor all_gather_cat(CollectiveGroup& group, const torch::Tensor& local,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  const std::int64_t n = local.numel();
  const std::int32_t world = group.getSize();
  auto lengths = torch::zeros({world}, torch::kLong);
  lengths[group.getRank()] = n;
  {
    std::vector<torch::Tensor> ts{lengths};
    c10d::AllreduceOptions ao;
    ao.timeout = timeout;
    detail::run_collective("all_gather_cat (lengths)", group.getRank(), timeout,
                           [&] { return group.allreduce(ts, ao); });
  }
  const std::int64_t longest = lengths.max().item<std::int64_t>();
  auto padded = torch::zeros({longest}, local.options());
  padded.slice(0, 0, n).copy_(local.reshape({-1}));
  std::vector<std::vector<torch::Tensor>> outs(1);
  for (std::int32_t r = 0; r < world; ++r) outs[0].push_back(torch::empty_like(padded));
  std::vector<torch::Tensor> ins{padded};
  c10d::AllgatherOptions go;
  go.timeout = timeout;
  detail::run_collective("all_gather_cat", group.getRank(), timeout,
                         [&] { return group.allgather(outs, ins, go); });
  std::vector<torch::Tensor> parts;
  for (std::int32_t r = 0; r < world; ++r)
    parts.push_back(
        outs[0][static_cast<std::size_t>(r)].slice(0, 0, lengths[r].item<std::int64_t>()));
  return torch::cat(parts);
}

/// Rank `root`'s `bytes` on every trainer of `group` (the others' input is replaced): how
/// one trainer's checkpoint reaches all of them without a shared file system. Collective;
/// blocks at most `timeout`, then throws CollectiveError.
inline std::string broadcast_bytes(CollectiveGroup& group, std::string bytes, std::int32_t root,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  c10d::BroadcastOptions bo;
  bo.rootRank = root;
  bo.timeout = timeout;
  auto size = torch::tensor({static_cast<std::int64_t>(bytes.size())}, torch::kLong);
  {
    std::vector<torch::Tensor> ts{size};
    detail::run_collective("broadcast_bytes (size)", group.getRank(), timeout,
                           [&] { return group.broadcast(ts, bo); });
  }
  const std::int64_t n = size.item<std::int64_t>();
  if (n == 0) return {};
  auto data = torch::empty({n}, torch::kUInt8);
  if (group.getRank() == root)
    std::memcpy(data.data_ptr<std::uint8_t>(), bytes.data(), bytes.size());
  std::vector<torch::Tensor> ts{data};
  detail::run_collective("broadcast_bytes", group.getRank(), timeout,
                         [&] { return group.broadcast(ts, bo); });
  return std::string(reinterpret_cast<const char*>(data.data_ptr<std::uint8_t>()),
                     static_cast<std::size_t>(n));
}

/// The process groups of data-parallel trainers: `control` carries the small CPU
/// collectives (batch counts, metrics, checkpoints); `gradients` averages the gradients
/// and broadcasts the parameters. make_trainer_groups says which group is which (CPU
/// trainers: one RingGroup for both). Both null for a single trainer.
struct TrainerGroups {
  c10::intrusive_ptr<CollectiveGroup> control;
  c10::intrusive_ptr<CollectiveGroup> gradients;

  TrainerGroups() = default;
  /// One group for everything (none: a single trainer).
  template <class Group>
  requires std::convertible_to<Group*, CollectiveGroup*> TrainerGroups(
      c10::intrusive_ptr<Group> group)  // NOLINT: implicit, as a group converts
      : control(group), gradients(std::move(group)) {}
  TrainerGroups(c10::intrusive_ptr<CollectiveGroup> control_group,
                c10::intrusive_ptr<CollectiveGroup> gradient_group)
      : control(std::move(control_group)), gradients(std::move(gradient_group)) {}
};

namespace detail {

/// DISTGRAPH_GRADIENT_GROUP: "ring" (unset: the default) or "gloo". Throws InvalidArgument
/// for another value.
inline std::string gradient_group_from_env() {
  const char* v = std::getenv("DISTGRAPH_GRADIENT_GROUP");
  if (v == nullptr || *v == '\0') return "ring";
  const std::string s = v;
  if (s != "ring" && s != "gloo")
    throw InvalidArgument("DISTGRAPH_GRADIENT_GROUP='" + s + "': expected ring or gloo");
  return s;
}

}  // namespace detail

/// The groups of trainer `o.rank` meeting through `store`, for parameters on `device`: one
/// RingGroup for the control collectives and the gradients when every trainer trains on the
/// CPU (unless one sets DISTGRAPH_GRADIENT_GROUP=gloo: then gloo for both); otherwise a
/// gloo control group, and for the gradients an NCCL group when this build has NCCL and
/// every trainer trains on its own CUDA device (no two on one GPU of one host: NCCL refuses
/// that), else the control group itself (gloo also reduces CUDA tensors). The trainers
/// exchange their choices over gloo first, so all build the same groups. Collective; each
/// step (gloo's join, the vote, the ring's or NCCL's join) blocks at most o.timeout, then
/// throws CollectiveError.
inline TrainerGroups make_trainer_groups(const c10::intrusive_ptr<c10d::Store>& store,
                                         const RendezvousOptions& o, torch::Device device) {
  TrainerGroups g;
  g.control = make_gloo_group(store, o);
  g.gradients = g.control;
  // CPU gradients take the ring unless any trainer asks for gloo (or trains on a GPU). A
  // trainer whose choice is malformed votes too (-1) before it throws, so the others throw
  // at once instead of waiting for it in the ring's rendezvous.
  std::string bad;
  std::int64_t vote = 0;
  try {
    vote = device.is_cpu() && detail::gradient_group_from_env() == "ring" ? 1 : 0;
  } catch (const InvalidArgument& e) {
    bad = e.what();
    vote = -1;
  }
  const std::int64_t least = all_reduce_min_max(*g.control, vote, o.timeout).first;
  if (!bad.empty()) throw InvalidArgument(bad);
  if (least < 0)
    throw InvalidArgument("another trainer's DISTGRAPH_GRADIENT_GROUP is neither ring nor gloo");
  if (least == 1) {
    // The control collectives take the ring too, and gloo goes: its event loop wakes every
    // 10 ms while it lives, and spins while a peer's message waits for this trainer to
    // reach the collective (on 2 shared cores, 1-2% of the epoch's CPU).
    g.gradients = c10::make_intrusive<RingGroup>(store, o);
    g.control = g.gradients;
    return g;
  }
#if defined(USE_C10D_NCCL)
  {
    std::array<char, 256> host{};
    ::gethostname(host.data(), host.size() - 1);
    const auto me = torch::tensor({std::int64_t{device.is_cuda()},
                                   static_cast<std::int64_t>(std::hash<std::string>{}(host.data())),
                                   std::int64_t{device.has_index() ? device.index() : 0}},
                                  torch::kLong);
    const auto all = all_gather_cat(*g.control, me, o.timeout);  // (cuda?, host, device) each
    const std::int64_t* v = all.data_ptr<std::int64_t>();
    bool cuda_everywhere = true;
    std::set<std::pair<std::int64_t, std::int64_t>> seats;
    for (std::int64_t r = 0; r < o.world_size; ++r) {
      cuda_everywhere = cuda_everywhere && v[3 * r] != 0;
      seats.emplace(v[3 * r + 1], v[3 * r + 2]);
    }
    if (cuda_everywhere && static_cast<std::int64_t>(seats.size()) == o.world_size)
      g.gradients = make_nccl_group(store, o);
  }
#else
  (void)device;
#endif
  return g;
}

/// The trainers' groups as the environment describes it (see trainer_group_from_env and
/// make_trainer_groups), or none for a single trainer. Blocks until every trainer joined,
/// at most `timeout`; throws CollectiveError otherwise.
inline TrainerGroups trainer_groups_from_env(
    torch::Device device, std::chrono::milliseconds timeout = std::chrono::minutes(5)) {
  const RendezvousOptions o = detail::trainer_rendezvous(timeout);
  if (o.world_size <= 1) return {};
  return make_trainer_groups(make_tcp_store(o), o, device);
}

/// How GradientAllReducer buckets (designated initialisers).
struct AllReduceOptions {
  /// Gradients are packed into flat buffers of about this size, one all-reduce each
  /// (PyTorch DDP's default bucket_cap_mb = 25); a larger tensor gets a bucket of its own.
  std::int64_t bucket_bytes = 25 << 20;
  std::chrono::milliseconds timeout{60000};  ///< per collective; then CollectiveError
};

/// Averages the gradients of a fixed parameter list over all trainers of a process group,
/// as DDP does after backward: gradients are copied into a few flat buckets (grouped by
/// dtype and device, in parameter order), each bucket is all-reduced (sum) once, divided
/// by the world size and copied back. A parameter without a gradient counts as zero and
/// gets one. Not thread-safe; collective (every trainer calls in the same order).
class GradientAllReducer {
 public:
  /// Throws InvalidArgument for a null group or bucket_bytes < 1.
  GradientAllReducer(c10::intrusive_ptr<CollectiveGroup> group,
                     std::vector<torch::Tensor> parameters, AllReduceOptions options = {})
      : group_(std::move(group)), params_(std::move(parameters)), options_(options) {
    if (!group_) throw InvalidArgument("GradientAllReducer: no process group");
    if (options_.bucket_bytes < 1)
      throw InvalidArgument("GradientAllReducer: bucket_bytes " +
                            std::to_string(options_.bucket_bytes) + "; expected >= 1");
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const auto& p = params_[i];
      const auto bytes = p.numel() * static_cast<std::int64_t>(p.element_size());
      Bucket* open = nullptr;
      for (auto& b : buckets_)
        if (b.dtype == p.scalar_type() && b.device == p.device() &&
            b.bytes + bytes <= options_.bucket_bytes)
          open = &b;
      if (open == nullptr) {
        buckets_.push_back(Bucket{p.scalar_type(), p.device(), {}, 0, 0, {}});
        open = &buckets_.back();
      }
      open->members.push_back(i);
      open->bytes += bytes;
      open->numel += p.numel();
    }
    for (auto& b : buckets_)
      b.flat = torch::empty({b.numel}, torch::TensorOptions().dtype(b.dtype).device(b.device));
  }

  /// Replaces every trainer's gradients by their mean over the group. Blocks until all
  /// buckets are reduced, each at most options().timeout, then throws CollectiveError.
  void all_reduce_gradients() {
    torch::NoGradGuard no_grad;
    const double scale = 1.0 / static_cast<double>(group_->getSize());
    for (std::size_t k = 0; k < buckets_.size(); ++k) {
      Bucket& b = buckets_[k];
      trace::Span span("bucket", "all-reduce");
      span.arg("bucket", static_cast<std::int64_t>(k))
          .arg("bytes", b.flat.numel() * static_cast<std::int64_t>(b.flat.element_size()));
      std::int64_t off = 0;
      for (const std::size_t i : b.members) {
        auto& p = params_[i];
        if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
        b.flat.slice(0, off, off + p.numel()).copy_(p.grad().reshape({-1}));
        off += p.numel();
      }
      std::vector<torch::Tensor> ts{b.flat};
      c10d::AllreduceOptions ao;
      ao.timeout = options_.timeout;  // a RingGroup reduces within the call: tell it
      detail::run_collective(("gradient all-reduce of bucket " + std::to_string(k)).c_str(),
                             group_->getRank(), options_.timeout,
                             [&] { return group_->allreduce(ts, ao); });
      b.flat.mul_(scale);
      off = 0;
      for (const std::size_t i : b.members) {
        auto& p = params_[i];
        p.mutable_grad().copy_(b.flat.slice(0, off, off + p.numel()).view_as(p));
        off += p.numel();
      }
    }
  }

  /// Copies trainer `root`'s parameter values to every trainer (so all start equal, as
  /// DDP's constructor does). Collective; blocks as all_reduce_gradients.
  void broadcast_parameters(std::int32_t root = 0) {
    torch::NoGradGuard no_grad;
    c10d::BroadcastOptions bo;
    bo.rootRank = root;
    bo.timeout = options_.timeout;
    for (std::size_t k = 0; k < buckets_.size(); ++k) {
      Bucket& b = buckets_[k];
      std::int64_t off = 0;
      for (const std::size_t i : b.members) {
        b.flat.slice(0, off, off + params_[i].numel()).copy_(params_[i].reshape({-1}));
        off += params_[i].numel();
      }
      std::vector<torch::Tensor> ts{b.flat};
      detail::run_collective("parameter broadcast", group_->getRank(), options_.timeout,
                             [&] { return group_->broadcast(ts, bo); });
      off = 0;
      for (const std::size_t i : b.members) {
        params_[i].copy_(b.flat.slice(0, off, off + params_[i].numel()).view_as(params_[i]));
        off += params_[i].numel();
      }
    }
  }

  std::size_t num_buckets() const noexcept { return buckets_.size(); }
  CollectiveGroup& group() const noexcept { return *group_; }
  const AllReduceOptions& options() const noexcept { return options_; }

 private:
  struct Bucket {
    c10::ScalarType dtype;
    c10::Device device;
    std::vector<std::size_t> members;  // indices into params_, in order
    std::int64_t bytes = 0, numel = 0;
    torch::Tensor flat;
  };

  c10::intrusive_ptr<CollectiveGroup> group_;
  std::vector<torch::Tensor> params_;
  AllReduceOptions options_;
  std::vector<Bucket> buckets_;
};

}  // namespace distgraph
