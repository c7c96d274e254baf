#!/usr/bin/env bash
# The build-time figures of docs/PERFORMANCE.md ("Build time"): a fresh clone of this
# checkout's HEAD with ../shared beside it, as CI builds it, through the README's test command
# with an empty compiler cache; then the same command after one test file changed.
# Usage: scripts/build_time.sh [WORK_DIR]   (default /tmp/distgraph-build-time; removed first)
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/distgraph-build-time}
rm -rf "$work" && mkdir -p "$work"
[[ -d $src/../shared ]] && ln -s "$(cd "$src/../shared" && pwd)" "$work/shared"
git clone -q "$src" "$work/distgraph" || exit 1
export CCACHE_DIR=$work/ccache
cd "$work/distgraph" || exit 1
timed() {  # timed LABEL LOG: the README's test command, its seconds and the suite's result
  local t0 t1 rc
  t0=$(date +%s.%N)
  bash scripts/test.sh >"$2" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  echo "$1: exit $rc, $(echo "$t1 - $t0" | bc) s; $(grep -E 'tests passed|tests failed' "$2")"
}
timed "clean clone, build and suite" "$work/clean.log"
awk 'NR > 1 { s += ($2 - $1) / 1000 } END { printf "compile CPU-seconds: %.0f\n", s }' \
    build/.ninja_log
# A code change (not a comment, which the cache would see through) in the largest folder.
sed -i 's|^}  // namespace test_train_gat$|static_assert(sizeof(int) >= 2);\n&|' \
    tests/train/test_gat.cpp
timed "one test file changed, build and suite" "$work/incremental.log"
