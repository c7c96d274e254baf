// scheduler_trainer: a trainer for jobs that a scheduler starts (mpirun, torchrun, srun)
// against servers started with `distgraph serve`. Each trainer prints where the environment
// placed it, all of them meet at a barrier, and rank 0 then shuts the servers down: with no
// distgraph launcher in the job, nobody else would (docs/RUNTIME.md, "Under a scheduler").
#include <cstdio>
#include <exception>

#include "distgraph/runtime/initialize.hpp"

int main(int argc, char** argv) try {
  distgraph::InitOptions opts;
  if (argc > 1) opts.part_config = argv[1];  // standalone runs only
  distgraph::Context ctx = distgraph::initialize(opts);
  if (ctx.is_server()) return 0;

  // initialize() has already checked the world size against the servers' and passed the
  // first barrier; this line is what the scheduler's variables said.
  std::printf("trainer %d of %d: ranks from %s, local rank %d, machine %d\n", ctx.rank(),
              ctx.world_size(), ctx.environment().rank_source.c_str(), ctx.local_rank(),
              ctx.machine_id());
  std::fflush(stdout);
  // After this barrier no trainer sends anything more, so rank 0 may stop the servers.
  ctx.barrier("scheduler_trainer:done");
  if (ctx.rank() == 0) {
    std::printf("all %d trainers passed the barrier\n", ctx.world_size());
    std::fflush(stdout);
    if (!ctx.standalone()) ctx.client()->shutdown_servers();
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "scheduler_trainer: %s\n", e.what());
  return 1;
}
