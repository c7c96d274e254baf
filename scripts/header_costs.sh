#!/usr/bin/env bash
# Measures what including each header listed in docs/API.md costs to compile and rewrites
# the cost column there (with --write; otherwise prints the change as a diff).
#
# Usage: scripts/header_costs.sh [--write] [--runs N] [--build-dir DIR]
#
# A header's cost is the best of N (3) wall times of `g++ -fsyntax-only` on a file that
# includes only that header, with the flags of the build in DIR ($BUILD_DIR, else build/):
# -std=c++20, the build type's flags and the include directories and defines a consumer of
# distgraph::distgraph (distgraph::torch for the libtorch layers nn/, train/, infer/, tasks/
# and torch.hpp) gets, as written by tests/docs/CMakeLists.txt. Those are measured only
# where that build found libtorch; their cells stay as they are otherwise. The "Renamed"
# table lists old paths and is left alone. A header that does not compile alone
# gets "not measured: does not compile alone". A table row is measured when its first
# backticked cell ending in .hpp names a header (relative to include/distgraph/ unless it
# starts with distgraph/); its last cell is the cost. The paragraph starting "Last
# measured" gets the date, machine, load, compiler and the cost of an empty file.
set -euo pipefail
cd "$(dirname "$0")/.."
write=0 runs=3 build_dir=${BUILD_DIR:-build}
while (($#)); do
  case $1 in
    --write) write=1 ;;
    --runs) runs=${2:?--runs N}; shift ;;
    --build-dir) build_dir=${2:?--build-dir DIR}; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "header_costs.sh: unknown argument '$1'; see --help" >&2; exit 2 ;;
  esac
  shift
done
doc=docs/API.md
flags=$build_dir/tests/docs/distgraph.rsp
torch_flags=$build_dir/tests/docs/torch.rsp
if [[ ! -f $flags ]]; then
  echo "header_costs.sh: $flags missing; configure a build with tests first:" >&2
  echo "  cmake -S . -B $build_dir -G Ninja -DCMAKE_BUILD_TYPE=Release" >&2
  exit 1
fi
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
cxx=${cxx:-g++}
[[ -f $torch_flags ]] || torch_flags=

# The headers the tables list, in order of appearance.
mapfile -t headers < <(awk '
  /^## / { renamed = ($0 ~ /^## Renamed/) }  # old paths, not headers to measure
  /^\|/ && !renamed {
    n = split($0, cell, "|")
    for (i = 2; i < n; i++)
      if (match(cell[i], /`[^`]*\.hpp`/)) {
        h = substr(cell[i], RSTART + 1, RLENGTH - 2)
        if (h !~ /^distgraph\//) h = "distgraph/" h
        if (!(h in seen)) { seen[h] = 1; print h }
        break
      }
  }' "$doc")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Prints the best of $runs wall times, in seconds, of compiling `#include <$1>` (empty:
# an empty file) with flags file $2; returns 1, printing the errors, when it fails.
best_time() {
  local tu=$tmp/tu.cpp best="" t0 t1 t i
  if [[ -n $1 ]]; then echo "#include <$1>" >"$tu"; else : >"$tu"; fi
  for ((i = 0; i < runs; i++)); do
    t0=$EPOCHREALTIME
    if ! "$cxx" @"$2" -fsyntax-only "$tu" 2>"$tmp/err"; then
      head -20 "$tmp/err" >&2
      return 1
    fi
    t1=$EPOCHREALTIME
    t=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
    if [[ -z $best ]] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$t; fi
  done
  echo "$best"
}

load=$(cut -d' ' -f1 /proc/loadavg)
empty=$(best_time "" "$flags")
echo "empty file: $empty s (load average at the start: $load)"
: >"$tmp/costs"
for h in "${headers[@]}"; do
  if [[ $h =~ ^distgraph/(nn|train|infer|tasks|gpu)/ || $h == distgraph/torch.hpp ]]; then
    if [[ -z $torch_flags ]]; then
      echo "$h: not measured (this build has no distgraph::torch)"
      continue
    fi
    f=$torch_flags
  else
    f=$flags
  fi
  if [[ ! -f include/$h ]]; then
    echo "$h: listed in $doc but include/$h does not exist" >&2
    continue
  fi
  if cost=$(best_time "$h" "$f"); then
    printf '%s\t%s s\n' "$h" "$cost" | tee -a "$tmp/costs"
  else
    echo "$h: does not compile alone (errors above)" >&2
    printf '%s\t%s\n' "$h" "not measured: does not compile alone" >>"$tmp/costs"
  fi
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
compiler=g++
"$cxx" --version | head -1 | grep -q clang && compiler=clang++
compiler+=" $("$cxx" -dumpfullversion 2>/dev/null || "$cxx" -dumpversion)"
stamp="Last measured $(date +%Y-%m-%d) on ${cpu:-an unknown CPU} ($(nproc) cores; load average"
stamp+=" $load at the start, $(cut -d' ' -f1 /proc/loadavg) at the end), $compiler, best of"
stamp+=" $runs runs; an empty file takes $empty s."
stamp=$(fold -s -w 90 <<<"$stamp" | sed 's/ *$//')
awk -v costs="$tmp/costs" -v stamp="$stamp" '
  BEGIN { FS = "\t"; while ((getline line < costs) > 0) { split(line, kv, "\t"); cost[kv[1]] = kv[2] } }
  # The "Last measured" paragraph, up to the next blank line, becomes the new stamp.
  /^Last measured/ { print stamp; skipping = 1; next }
  skipping && !/^[ \t]*$/ { next }
  { skipping = 0 }
  /^## / { renamed = ($0 ~ /^## Renamed/) }
  /^\|/ && !renamed {
    n = split($0, cell, "|")
    for (i = 2; i < n; i++)
      if (match(cell[i], /`[^`]*\.hpp`/)) {
        h = substr(cell[i], RSTART + 1, RLENGTH - 2)
        if (h !~ /^distgraph\//) h = "distgraph/" h
        if (h in cost) {
          cell[n - 1] = " " cost[h] " "
          out = ""
          for (j = 1; j < n; j++) out = out cell[j] "|"
          print out
          next
        }
        break
      }
  }
  { print }' "$doc" >"$tmp/API.md"

if ((write)); then
  cp "$tmp/API.md" "$doc"
  echo "wrote $doc"
else
  diff -u "$doc" "$tmp/API.md" || true
  echo "(dry run: --write applies this to $doc)"
fi
