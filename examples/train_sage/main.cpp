// train_sage: a complete trainer program. Run it alone with a partition config, or start
// it on every machine with `distgraph launch ... -- train_sage`: the same binary trains
// standalone or data-parallel against the servers, unchanged.
#include <cstdio>
#include <distgraph/runtime/initialize.hpp>
#include <distgraph/torch.hpp>
#include <exception>

int main(int argc, char** argv) try {
  // Standalone runs name the partition config; under `distgraph launch` the environment
  // gives it (and the role, the machine, the servers).
  distgraph::InitOptions init;
  if (argc > 1) init.part_config = argv[1];
  distgraph::Context ctx = distgraph::initialize(init);
  if (ctx.is_server()) return 0;  // a server role served until shutdown
  // torch's and OpenBLAS's threads: this computer's cores shared by its trainers.
  distgraph::set_intra_op_threads(ctx.intra_op_threads());

  distgraph::NodeClassificationOptions recipe;         // the defaults of `distgraph train`
  recipe.out = argc > 2 ? argv[2] : "train_sage-run";  // metrics.csv, curves.svg, checkpoint

  // Gradients are averaged over every trainer of the job (none alone): on the trainers'
  // ring (CPU), or NCCL when recipe.device is a GPU of each trainer's own and libtorch has
  // NCCL.
  auto groups = distgraph::trainer_groups_from_env(recipe.device);

  const auto result = distgraph::train_node_classification(
      ctx.graph(), recipe, groups, [](const distgraph::EpochRow& r, distgraph::Metric m) {
        std::printf("epoch %lld loss %.4f val %s %.4f\n", static_cast<long long>(r.epoch), r.loss,
                    distgraph::to_string(m), r.val_metric);
      });
  if (ctx.rank() == 0)
    std::printf("test %s %.4f over %d trainer(s)\n", distgraph::to_string(result.metric),
                result.test, ctx.world_size());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "train_sage: %s\n", e.what());
  return 1;
}
