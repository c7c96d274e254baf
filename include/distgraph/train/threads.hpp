// Intra-op threads of libtorch and of the BLAS under it, set together.
#pragma once

#include <dlfcn.h>
#include <torch/utils.h>

namespace distgraph {

/// Sets OpenBLAS's pool to `n` threads when libtorch's BLAS is OpenBLAS (Debian's
/// libblas.so.3 alternative); otherwise does nothing. Process-wide.
inline void set_blas_threads(int n) {
  using SetThreads = void (*)(int);
  if (auto f = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    f(n);
}

/// Sets libtorch's intra-op threads and OpenBLAS's pool (set_blas_threads) to `n`:
/// torch::set_num_threads leaves OpenBLAS at one thread per core, so a "one-thread"
/// trainer still ran its matrix products on every core, and trainers sharing a computer
/// oversubscribed it (a one-thread batch took 1.8x as long beside a compiler).
/// Process-wide.
inline void set_intra_op_threads(int n) {
  torch::set_num_threads(n);
  set_blas_threads(n);
}

/// OpenBLAS's thread count, or 0 when libtorch's BLAS is not OpenBLAS.
inline int blas_threads() {
  using GetThreads = int (*)();
  auto f = reinterpret_cast<GetThreads>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return f ? f() : 0;
}

}  // namespace distgraph
