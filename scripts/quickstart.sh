#!/usr/bin/env bash
# The README's first command: set up, build the distgraph program (with distgraph-train and
# distgraph-infer, which it runs; tests, benchmarks and examples are the test command's),
# run the main job on the built-in default.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_TARGETS=distgraph_cli bash scripts/build.sh
./build/tools/distgraph/distgraph train "$@"
