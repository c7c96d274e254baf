// distgraph partition --distributed: one rank of an MPI job that partitions a chunked graph
// folder (or generated R-MAT) with PT-Scotch or Zoltan; each rank writes the partitions it
// owns.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli.hpp"
#include "distgraph/core/progress.hpp"
#include "distgraph/io/chunked.hpp"
#include "partition_distributed_command.hpp"
#include "partition_summary.hpp"
#include "rmat_spec.hpp"

#ifdef DISTGRAPH_HAVE_MPI
#include "distgraph/partition/mpi/partition_distributed.hpp"
#endif

namespace distgraph::cli {

#ifndef DISTGRAPH_HAVE_MPI

int run_partition_distributed(const DistributedPartitionRequest&) {
  throw UsageError(
      "partition: --distributed: this distgraph was built without MPI and 64-bit PT-Scotch; "
      "install libopenmpi-dev and libptscotch-dev (scripts/setup.sh does) and rebuild");
}

#else

namespace {

/// Rank 0's report: the single-process summary plus each rank's peak memory.
void report(const DistPartitionResult& r, const DistributedPartitionRequest& req) {
  nlohmann::json j = summary_json(r.summary, req.input);
  j["ranks"] = r.num_ranks;
  j["peak_rss_bytes_per_rank"] = r.peak_rss_per_rank;
  j["block_nodes_per_rank"] = r.block_nodes_per_rank;
  j["block_edges_per_rank"] = r.block_edges_per_rank;
  j["writer_of_part"] = r.writer_of_part;
  if (req.json) {
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  print_summary(j);
  std::printf("ranks %lld; peak memory per rank (MiB):", static_cast<long long>(r.num_ranks));
  for (const auto b : r.peak_rss_per_rank) std::printf(" %.1f", static_cast<double>(b) / (1 << 20));
  std::printf("\n");
}

}  // namespace

int run_partition_distributed(const DistributedPartitionRequest& req) {
  if (!mpi::launched_by_mpi())
    throw UsageError(
        "partition: --distributed runs as the ranks of an MPI job, and no MPI launcher started "
        "this process: mpirun -n P distgraph partition --distributed ... (or srun under Slurm)");
  DistPartitionInput input;
  input.rmat = parse_rmat_spec(req.input, req.opts.seed);
  if (!input.rmat) {
    if (!is_chunked_folder(req.input)) {
      if (std::filesystem::is_directory(req.input))
        throw UsageError("partition: --distributed reads a chunked graph folder; '" + req.input +
                         "' has no metadata.json (write one with: distgraph chunk " + req.input +
                         " --chunks C --out DIR)");
      throw IoError(req.input, "no such chunked graph folder");
    }
    input.chunked = req.input;
  }
  DistPartitionOptions opts;
  opts.method = req.opts.method;
  opts.halo_hops = req.opts.halo_hops;
  opts.balance_train = req.balance_train;
  opts.balance_edges = req.opts.balance_edges;
  opts.feat_dtype = req.opts.feat_dtype;
  opts.seed = req.opts.seed;
  const auto strategy = mpi::scotch_strategy_from_name(req.scotch_strategy);
  if (!strategy)
    throw UsageError("partition: --scotch-strategy '" + req.scotch_strategy +
                     "': expected speed, balance, quality or scalability");
  opts.scotch_strategy = *strategy;
  const auto partitioner = dist_partitioner_from_name(req.partitioner);
  if (!partitioner)
    throw UsageError("partition: --partitioner '" + req.partitioner +
                     "': expected ptscotch or zoltan");
  opts.partitioner = *partitioner;
#if !DISTGRAPH_HAVE_ZOLTAN
  // Before every rank reads its share of the graph, not after.
  if (opts.partitioner == DistPartitioner::zoltan)
    throw UsageError(
        "partition: --partitioner zoltan: this distgraph was built without Zoltan (install "
        "libtrilinos-zoltan-dev and rebuild)");
#endif
  opts.hub_degree = req.hub_degree;

  // PT-Scotch's threads call MPI at once (ptscotch.hpp says what less than this did).
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  int code = 1;
  try {
    const mpi::Comm comm;
    Progress progress(req.json || comm.rank != 0);
    opts.progress = &progress;
    const DistPartitionResult r =
        partition_distributed(comm, input, req.name.value_or(""), req.parts, req.out, opts);
    if (comm.rank == 0) report(r, req);
    code = 0;
  } catch (const mpi::PeerFailed&) {
    code = 1;  // the failing rank printed its error
  } catch (const std::exception& e) {
    const bool typed = dynamic_cast<const Error*>(&e) != nullptr;
    std::fprintf(stderr, "distgraph partition: %s%s\n",
                 typed ? "" : "unexpected error: ", e.what());
    std::fflush(stderr);
    // The other ranks know only of errors they agreed on; otherwise they wait in a
    // collective for this one, so the job must end here.
    if (!mpi::failure_agreed()) MPI_Abort(MPI_COMM_WORLD, 1);
    code = 1;
  }
  MPI_Finalize();
  return code;
}

#endif

}  // namespace distgraph::cli
