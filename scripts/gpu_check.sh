#!/usr/bin/env bash
# The GPU check: builds distgraph against the machine's CUDA libtorch (the python3 torch
# package's), runs the CUDA and NCCL tests, `distgraph train --device cuda` on Cora
# (standalone and as launched jobs, beside the same runs on the CPU) and
# `bench_train --device cuda` (and the CPU figures on the same machine); every figure and
# log goes to $OUT (default ./gpu-check-out). RUNTIME.md, "GPU trainers", says more.
#
#   bash scripts/gpu_check.sh fetch   on a Debian 12 machine with apt (no GPU needed): the
#                                     header-only and small dependencies as .deb files, and
#                                     the Cora dataset, into .gpu-deps/ (git ignores it)
#   bash scripts/gpu_check.sh [run]   on the GPU machine (carry .gpu-deps there): unpack,
#                                     build the targets the checks need, run the checks
#
# GPU_CHECK_STEPS picks steps of `run` (default "build tests cora bench"; "configure" alone
# unpacks and configures); JOBS the build's
# parallelism (default: every core). Exit status: 0 every check passed; 1 a check failed;
# 2 usage or a missing piece (no .gpu-deps, no torch); 3 no GPU here (nothing was built).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
deps=$root/.gpu-deps
mode=${1:-run}

# The Debian 12 packages the build needs beside libtorch: Boost's headers (Asio, Graph),
# METIS, nlohmann_json, CLI11 (the distgraph program's options), Catch2 v2, and gloo's headers
# for a libtorch that lacks them.
packages=(libboost1.74-dev libmetis-dev libmetis5 nlohmann-json3-dev libcli11-dev catch2 libgloo-dev)

if [[ $mode == fetch ]]; then
  set -e
  mkdir -p "$deps/debs" "$deps/data"
  (cd "$deps/debs" && rm -f ./*.deb && apt-get download "${packages[@]}")
  data=${DISTGRAPH_SHARED_DATA:-$root/../shared/data}
  [[ -d $data/cora ]] || { echo "gpu_check: no dataset at $data/cora" >&2; exit 2; }
  rm -rf "$deps/data/cora" && cp -r "$data/cora" "$deps/data/cora" && chmod -R u+w "$deps/data"
  du -sh "$deps"
  echo "gpu_check: fetched; carry .gpu-deps to the GPU machine and run scripts/gpu_check.sh there"
  exit 0
fi
[[ $mode == run ]] || { echo "usage: gpu_check.sh [fetch|run]" >&2; exit 2; }

# No GPU: say so in one line and build nothing. (GPU_CHECK_ALLOW_CPU=1 with
# GPU_CHECK_TORCH_PREFIX and GPU_CHECK_TORCH_INCLUDE, a CPU libtorch's, tries the build step
# on a machine without one: how the script's CPU parts are tested.)
if [[ ${GPU_CHECK_ALLOW_CPU:-0} != 1 ]]; then
  if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gpu_check: no NVIDIA GPU here (nvidia-smi finds none); nothing to check" >&2
    exit 3
  fi
  if ! python3 -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1; then
    echo "gpu_check: python3's torch is missing or sees no CUDA device; nothing to check" >&2
    exit 3
  fi
fi
torch_prefix=${GPU_CHECK_TORCH_PREFIX:-$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')}
torch_inc=${GPU_CHECK_TORCH_INCLUDE:-$(python3 -c 'import torch.utils.cpp_extension as c; print(c.include_paths()[0])')}
[[ -d $deps/debs ]] || { echo "gpu_check: no $deps/debs (run 'gpu_check.sh fetch' where apt works, and carry .gpu-deps)" >&2; exit 2; }

OUT=${OUT:-$root/gpu-check-out}
mkdir -p "$OUT"
work=${GPU_CHECK_WORK:-/tmp/distgraph-gpu-check}
mkdir -p "$work/runs"
log=$OUT/gpu_check.log
figures=$OUT/figures.jsonl
steps=" ${GPU_CHECK_STEPS:-build tests cora bench} "
jobs=${JOBS:-$(nproc)}
build=$root/build-gpu
failed=()
exec > >(tee -a "$log") 2>&1

step() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }
fail() { echo "gpu_check: FAILED: $*"; failed+=("$*"); }
# One JSON object a line, as bench programs print them.
record() { echo "$1" >> "$figures"; echo "figure: $1"; }

step "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())' || true
(. /etc/os-release && echo "$PRETTY_NAME"); c++ --version | head -1; cmake --version | head -1
command -v nvcc >/dev/null && nvcc --version | tail -1

# Unpack a .deb without dpkg (data.tar.{xz,zst,gz} inside an ar archive).
unpack() {
  local deb=$1 dest=$2 member
  mkdir -p "$dest"
  if command -v dpkg-deb >/dev/null 2>&1; then dpkg-deb -x "$deb" "$dest"; return; fi
  member=$(ar t "$deb" | grep '^data\.tar')
  case $member in
    *.xz) ar p "$deb" "$member" | tar -xJ -C "$dest" ;;
    *.zst) ar p "$deb" "$member" | zstd -dc | tar -x -C "$dest" ;;
    *) ar p "$deb" "$member" | tar -xz -C "$dest" ;;
  esac
}

prefix=$work/prefix
if [[ $steps == *" build "* || $steps == *" configure "* ]]; then
  step "dependencies"
  rm -rf "$prefix" "$prefix-gloo"
  for deb in "$deps"/debs/*.deb; do
    case $(basename "$deb") in
      libgloo-dev_*) unpack "$deb" "$prefix-gloo" ;;  # only used if torch lacks gloo's headers
      *) unpack "$deb" "$prefix" ;;
    esac
  done
  gloo_flag=()
  if [[ -f $torch_inc/gloo/algorithm.h ]]; then
    echo "gloo headers: torch's own ($torch_inc/gloo)"
  else
    echo "gloo headers: Debian's libgloo-dev (torch ships none)"
    gloo_flag=(-DDISTGRAPH_GLOO_INCLUDE_DIR="$prefix-gloo/usr/include")
  fi
  # c10d's NCCL and gloo backends, as python3's torch has them: their macros (torch's CMake
  # targets may not carry them) and nccl.h, which NCCL's pip package keeps apart.
  cxx_flags=""
  if python3 -c 'import sys, torch.distributed as d; sys.exit(0 if d.is_gloo_available() else 1)' 2>/dev/null; then
    cxx_flags+=" -DUSE_DISTRIBUTED -DUSE_C10D_GLOO"
  fi
  if python3 -c 'import sys, torch.distributed as d; sys.exit(0 if d.is_nccl_available() else 1)' 2>/dev/null; then
    nccl_inc=$(python3 -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "include"))' 2>/dev/null)
    [[ -f $nccl_inc/nccl.h ]] || nccl_inc=$(dirname "$(find /usr/include /usr/local/cuda/include /usr/local/cuda/targets -name nccl.h 2>/dev/null | head -1)")
    echo "NCCL: available; nccl.h in $nccl_inc"
    cxx_flags+=" -DUSE_C10D_NCCL -isystem $nccl_inc"
  fi
  step "configure"
  gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
  cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$torch_prefix;$prefix/usr" \
    -DBoost_DIR="$prefix/usr/lib/x86_64-linux-gnu/cmake/Boost-1.74.0" \
    -DBOOST_ROOT="$prefix/usr" -DBoost_NO_SYSTEM_PATHS=ON \
    -DCMAKE_POLICY_VERSION_MINIMUM=3.5 -DCMAKE_CXX_FLAGS="$cxx_flags" \
    -DDISTGRAPH_SHARED_DATA="$deps/data" -DDISTGRAPH_BUILD_EXAMPLES=OFF \
    "${gloo_flag[@]}" || { fail "configure"; }
fi
if [[ $steps == *" build "* ]]; then
  step "build (distgraph, distgraph-train, distgraph-infer, test_gpu, bench_train; $jobs jobs)"
  # Keep going past a failing file, so one run shows every compile error.
  kg=(); [[ -f $build/build.ninja ]] && kg=(-- -k 0)
  cmake --build "$build" -j "$jobs" --target distgraph_cli test_gpu bench_train "${kg[@]}" \
    || fail "build"
fi
export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cli=$build/tools/distgraph/distgraph

if [[ $steps == *" tests "* ]]; then
  step "ctest -R \"CUDA|NCCL|cuda\""
  ctest --test-dir "$build" -R "CUDA|NCCL|cuda" --output-on-failure --timeout 300 \
    | tee "$work/ctest.log" || fail "ctest"
  # On a GPU no test of tests/gpu may skip: a skip there is a check that did not run. (The
  # headers' NCCL compile check looks for a system libtorch and skips; test_gpu runs it.)
  if grep -E "gpu:.*(Skipped|Not Run)" "$work/ctest.log"; then
    fail "ctest: a GPU test skipped on the GPU"
  fi
fi

# `distgraph train` on Cora: the run's result line, recorded as figures.
cora() {  # cora NAME ARGS...
  local name=$1; shift
  local out=$work/runs/$name
  rm -rf "$out"
  local t0=$SECONDS
  if timeout 150 "$cli" train "$deps/data/cora" --seed 0 --epochs 60 --json --out "$out" "$@" \
      > "$work/runs/$name.jsonl"; then
    local res
    res=$(grep '"test"' "$work/runs/$name.jsonl" | tail -1 | sed 's/^[^{]*//')
    record "{\"figure\":\"cora_test_accuracy\",\"run\":\"$name\",\"args\":\"$*\",\"seconds\":$((SECONDS - t0)),\"result\":$res}"
  else
    fail "cora $name ($*)"
  fi
}
if [[ $steps == *" cora "* ]]; then
  step "Cora: standalone and launched, GPU beside CPU"
  cora cuda_standalone --standalone --device cuda
  cora cpu_standalone --standalone --device cpu
  cora cuda_launch_1x1 --parts 1 --device cuda
  cora cuda_launch_1x2 --parts 1 --trainers 2 --device cuda
  [[ ${GPU_CHECK_MORE:-0} == 1 ]] && cora cuda_launch_2x1 --parts 2 --device cuda
fi

if [[ $steps == *" bench "* ]]; then
  step "bench_train --device cuda, then the CPU figures on the same machine"
  bench=$build/benchmarks/bench_train
  for dev in cuda cpu; do
    timeout 240 "$bench" --device "$dev" --variants 0 --scale 18 --epochs 2 --runs 2 \
      --cli "$cli" --json > "$work/bench_$dev.jsonl" || fail "bench_train --device $dev"
    grep '^{' "$work/bench_$dev.jsonl" | grep -v labor_input >> "$figures"
    grep '^{' "$work/bench_$dev.jsonl" | grep -v labor_input | cut -c1-400
  done
fi

step "collect"
(cd "$work" && tar czf "$OUT/runs.tar.gz" --exclude='partition' --exclude='*.pt' --exclude='*.npy' \
  runs ctest.log bench_*.jsonl 2>/dev/null) || true
if ((${#failed[@]})); then
  echo "gpu_check: ${#failed[@]} check(s) failed: ${failed[*]}"
  exit 1
fi
echo "gpu_check: every check passed"
