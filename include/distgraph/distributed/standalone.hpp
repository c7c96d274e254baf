// StandaloneCluster: every partition's server in this process, reached in-process.
#pragma once

#include <concepts>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <utility>
#include <vector>

#include "distgraph/distributed/dist_graph.hpp"
#include "distgraph/distributed/kv_client.hpp"
#include "distgraph/partition/load_partition.hpp"
#include "distgraph/server/graph_server.hpp"
#include "distgraph/server/policies.hpp"
#include "distgraph/storage/in_memory_storage.hpp"
#include "distgraph/transport/in_process_transport.hpp"

namespace distgraph {

/// The DistGraph a standalone (single-process) run uses.
using StandaloneGraph = DistGraph<RangePartitionBook, InProcessTransport, InMemoryStorage>;

namespace detail {
/// In-process servers hold their rows in P's storage when it can be made without a
/// folder, else (MmapStorage) in InMemoryStorage: one process needs no shared memory.
template <class S>
using standalone_storage_t = std::conditional_t<std::default_initializable<S>, S, InMemoryStorage>;
}  // namespace detail

/// Standalone mode: loads every partition of `config` into a server of composition P
/// (P's book, P's sampler set; P's storage, see standalone_storage_t) in this process,
/// and hands out clients whose calls go straight to those servers (InProcessTransport),
/// so trainer code runs unchanged without any process or socket. `ClientBook` is the book
/// graph() and client() type the client on by default. Outlive every client made from it.
template <Composition P, PartitionBook ClientBook = typename P::book_type>
class BasicStandaloneCluster {
 public:
  using storage_type = detail::standalone_storage_t<typename P::storage_type>;
  using server_policies =
      Policies<typename P::book_type, InProcessTransport, storage_type, typename P::sampler_set>;
  using server_type = BasicGraphServer<server_policies>;

  /// `checkpoint_dir`: where the servers save tensors on request (KVClient::
  /// save_tensors), as `distgraph serve --checkpoint-dir` sets it.
  explicit BasicStandaloneCluster(
      const std::filesystem::path& config,
      const std::filesystem::path& checkpoint_dir = "distgraph-checkpoints") {
    Partition first = load_partition(config, 0);
    const auto parts = first.config.num_parts;
    servers_.push_back(
        std::make_unique<server_type>(std::move(first), std::make_shared<storage_type>()));
    for (std::int64_t p = 1; p < parts; ++p)
      servers_.push_back(std::make_unique<server_type>(load_partition(config, p),
                                                       std::make_shared<storage_type>()));
    for (auto& s : servers_) s->kv().set_checkpoint_dir(checkpoint_dir);
  }

  std::int32_t num_parts() const noexcept { return static_cast<std::int32_t>(servers_.size()); }

  server_type& server(std::int32_t p) { return *servers_.at(static_cast<std::size_t>(p)); }
  /// The book the partition's files describe.
  const AnyPartitionBook& book() const noexcept { return servers_.front()->partition().book; }

  /// A transport calling the servers directly (server i = partition i).
  std::shared_ptr<InProcessTransport> transport() {
    return std::make_shared<InProcessTransport>(handlers());
  }
  /// One handler per partition's server, for a transport of the caller's choosing.
  std::vector<Handler> handlers() {
    std::vector<Handler> out;
    for (auto& s : servers_) out.push_back(s->handler());
    return out;
  }

  /// A client for one of `num_trainers` trainers, typed on `Book` (built for the partition
  /// with partition_book<Book>; throws InvalidArgument naming the book to ask for when the
  /// partition cannot give one, e.g. a range book of a partition made with --no-relabel).
  template <PartitionBook Book = ClientBook>
  std::shared_ptr<KVClient<Book, InProcessTransport, storage_type>> client(
      std::int32_t num_trainers = 1, ClientOptions options = {}) {
    ClusterLayout layout{.num_machines = num_parts(),
                         .servers_per_machine = 1,
                         .machine_id = -1,
                         .preferred_server = 0,
                         .num_trainers = num_trainers};
    return std::make_shared<KVClient<Book, InProcessTransport, storage_type>>(
        transport(), book_for<Book>(), layout, nullptr, options);
  }

  /// A DistGraph over client<Book>(num_trainers), with P's sampler set.
  template <PartitionBook Book = ClientBook>
  BasicDistGraph<Policies<Book, InProcessTransport, storage_type, typename P::sampler_set>> graph(
      std::int32_t num_trainers = 1, ClientOptions options = {}) {
    return BasicDistGraph<
        Policies<Book, InProcessTransport, storage_type, typename P::sampler_set>>(
        client<Book>(num_trainers, options));
  }

 private:
  template <class Book>
  Book book_for() const {
    const Partition& part = servers_.front()->partition();
    try {
      return partition_book<Book>(part);
    } catch (const PartitionError& e) {
      throw InvalidArgument(std::string("standalone cluster: ") + e.what() + " (the partition's " +
                            "own book is a " +
                            (book().kind_name() == "range" ? "RangePartitionBook"
                                                           : "BasicPartitionBook: ask for "
                                                             "graph<BasicPartitionBook>() or "
                                                             "graph<AnyPartitionBook>()") +
                            ")");
    }
  }

  std::vector<std::unique_ptr<server_type>> servers_;
};

namespace detail {
template <class X>
struct standalone_compose {
  using type = BasicStandaloneCluster<X>;
};
/// Storage alone (the old spelling): servers take the partition's own book, clients a
/// RangePartitionBook unless another is asked for.
template <Storage X>
struct standalone_compose<X> {
  using type =
      BasicStandaloneCluster<Policies<AnyPartitionBook, InProcessTransport, X>, RangePartitionBook>;
};
}  // namespace detail

/// A standalone cluster of composition `X`, or of storage `X` with the default book
/// handling (StandaloneCluster<> = in-memory servers, range-book clients).
template <class X = InMemoryStorage>
using StandaloneCluster = typename detail::standalone_compose<X>::type;

}  // namespace distgraph
