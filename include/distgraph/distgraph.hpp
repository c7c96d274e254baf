// Umbrella header: everything except train/ (never includes libtorch).
#pragma once

#include "distgraph/core/buffer.hpp"
#include "distgraph/core/dtype.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/core/ids.hpp"
#include "distgraph/core/parallel.hpp"
#include "distgraph/core/progress.hpp"
#include "distgraph/core/timer.hpp"
#include "distgraph/graph/builder.hpp"
#include "distgraph/graph/coo.hpp"
#include "distgraph/graph/csr.hpp"
#include "distgraph/graph/generators.hpp"
#include "distgraph/graph/type_map.hpp"
#include "distgraph/io/dataset.hpp"
#include "distgraph/io/dataset_stats.hpp"
#include "distgraph/io/npy.hpp"
#include "distgraph/io/synthetic.hpp"
