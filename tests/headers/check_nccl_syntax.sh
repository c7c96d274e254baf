#!/usr/bin/env bash
# Compile-only check of distgraph's NCCL path (train/allreduce.hpp with USE_C10D_NCCL)
# against the installed libtorch headers, for machines without a CUDA libtorch: needs the
# CUDA toolkit's headers (cuda_runtime.h, nccl.h) and libtorch's c10d/ATen CUDA headers.
# Exits 77 (skipped) when any is missing. Usage: check_nccl_syntax.sh INCLUDE_DIR [CXX]
set -euo pipefail
include_dir=$1
cxx=${2:-c++}
torch_inc=${TORCH_INCLUDE:-/usr/include}
cuda_inc=${CUDA_INCLUDE:-/usr/local/cuda/include}
for need in "$cuda_inc/cuda_runtime.h" "$cuda_inc/nccl.h" \
            "$torch_inc/torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp" \
            "$torch_inc/ATen/cuda/CUDAContext.h"; do
  if [[ ! -f "$need" ]]; then
    echo "SKIPPED: $need not found (no CUDA toolkit or libtorch CUDA headers here)"
    exit 77
  fi
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A CPU libtorch ships c10/cuda headers without this file, which its CUDA build generates.
mkdir -p "$work/shim/c10/cuda/impl"
if [[ ! -f "$torch_inc/c10/cuda/impl/cuda_cmake_macros.h" ]]; then
  echo '#pragma once' > "$work/shim/c10/cuda/impl/cuda_cmake_macros.h"
fi
cat > "$work/nccl.cpp" <<'CPP'
#include <distgraph/torch.hpp>
static_assert(distgraph::has_nccl);
// Instantiates the NCCL choice and the group as CollectiveGroup, as a trainer would.
distgraph::TrainerGroups groups(const c10::intrusive_ptr<c10d::Store>& store,
                                const distgraph::RendezvousOptions& o) {
  c10::intrusive_ptr<distgraph::CollectiveGroup> nccl = distgraph::make_nccl_group(store, o);
  (void)nccl;
  return distgraph::make_trainer_groups(store, o, torch::Device("cuda:0"));
}
CPP
"$cxx" -std=c++20 -fsyntax-only -DUSE_C10D_NCCL -DUSE_C10D_GLOO -DUSE_DISTRIBUTED \
  -I"$work/shim" -I"$include_dir" -I"$torch_inc" -I"$torch_inc/torch/csrc/api/include" \
  -I"$cuda_inc" "$work/nccl.cpp"
echo "NCCL path compiles against $torch_inc"
