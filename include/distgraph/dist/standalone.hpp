// StandaloneCluster: every partition's server in this process, reached in-process.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <utility>
#include <variant>
#include <vector>

#include "distgraph/dist/dist_graph.hpp"
#include "distgraph/dist/kv_client.hpp"
#include "distgraph/partition/load_partition.hpp"
#include "distgraph/server/graph_server.hpp"
#include "distgraph/storage/in_memory_storage.hpp"
#include "distgraph/transport/in_process_transport.hpp"

namespace distgraph {

/// The DistGraph a standalone (single-process) run uses.
using StandaloneGraph = DistGraph<RangePartitionBook, InProcessTransport, InMemoryStorage>;

/// Standalone mode: loads every partition of `config` into a GraphServer of its own
/// storage in this process, and hands out clients whose calls go straight to those
/// servers (InProcessTransport), so trainer code runs unchanged without any process or
/// socket. Outlive every client made from it.
template <Storage S = InMemoryStorage>
class StandaloneCluster {
 public:
  /// `checkpoint_dir`: where the servers save tensors on request (KVClient::
  /// save_tensors), as `distgraph serve --checkpoint-dir` sets it.
  explicit StandaloneCluster(const std::filesystem::path& config,
                             const std::filesystem::path& checkpoint_dir = "distgraph-checkpoints")
      : StandaloneCluster(load_partition(config, 0), config) {
    for (auto& s : servers_) s->kv().set_checkpoint_dir(checkpoint_dir);
  }

  std::int32_t num_parts() const noexcept { return static_cast<std::int32_t>(servers_.size()); }

  GraphServer<S>& server(std::int32_t p) { return *servers_.at(static_cast<std::size_t>(p)); }
  const AnyPartitionBook& book() const noexcept { return book_; }

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

  /// A client for one of `num_trainers` trainers, typed on the book the partition uses
  /// (throws InvalidArgument when the partition has the other kind of book).
  template <PartitionBook Book>
  std::shared_ptr<KVClient<Book, InProcessTransport, S>> client(std::int32_t num_trainers = 1,
                                                                ClientOptions options = {}) {
    const Book* b = std::get_if<Book>(&book_);
    if (b == nullptr)
      throw InvalidArgument(
          "standalone cluster: the partition's book is not of the requested type");
    ClusterLayout layout{.num_machines = num_parts(),
                         .servers_per_machine = 1,
                         .machine_id = -1,
                         .preferred_server = 0,
                         .num_trainers = num_trainers};
    return std::make_shared<KVClient<Book, InProcessTransport, S>>(transport(), *b, layout, nullptr,
                                                                   options);
  }

  /// A DistGraph over client<Book>(num_trainers).
  template <PartitionBook Book = RangePartitionBook>
  DistGraph<Book, InProcessTransport, S> graph(std::int32_t num_trainers = 1,
                                               ClientOptions options = {}) {
    return DistGraph<Book, InProcessTransport, S>(client<Book>(num_trainers, options));
  }

 private:
  StandaloneCluster(Partition first, const std::filesystem::path& config) : book_(first.book) {
    const auto parts = first.config.num_parts;
    servers_.push_back(std::make_unique<GraphServer<S>>(std::move(first), std::make_shared<S>()));
    for (std::int64_t p = 1; p < parts; ++p)
      servers_.push_back(
          std::make_unique<GraphServer<S>>(load_partition(config, p), std::make_shared<S>()));
  }

  AnyPartitionBook book_;
  std::vector<std::unique_ptr<GraphServer<S>>> servers_;
};

}  // namespace distgraph
