// Umbrella header for train/: models, all-reduce and the trainer (the only one with libtorch).
#pragma once

#include "distgraph/distgraph.hpp"
#include "distgraph/train/allreduce.hpp"
#include "distgraph/train/block_tensors.hpp"
#include "distgraph/train/checkpoint.hpp"
#include "distgraph/train/concepts.hpp"
#include "distgraph/train/graph_sage.hpp"
#include "distgraph/train/metrics.hpp"
#include "distgraph/train/node_classification.hpp"
#include "distgraph/train/run_log.hpp"
#include "distgraph/train/sage_conv.hpp"
#include "distgraph/train/split_linear.hpp"
#include "distgraph/train/threads.hpp"
#include "distgraph/train/torch_storage.hpp"
#include "distgraph/train/trainer.hpp"
