#!/usr/bin/env bash
# The README's first command: set up, build, run the main job on the built-in default.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
./build/tools/distgraph/distgraph train "$@"
