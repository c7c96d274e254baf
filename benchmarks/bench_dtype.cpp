// bench_dtype: float32 <-> float16 / bfloat16 conversion rates (core/half.hpp), each beside
// a memcpy of the same float32 bytes: the copy a 16-bit feature row's conversion replaces.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/half.hpp"
#include "support/bounds.hpp"
#include "support/report.hpp"

using namespace distgraph;

int main(int argc, char** argv) {
  bench::Reporter report(argc, argv, "bench_dtype");
  // 4 Mi values (16 MiB of float32): a few large batches of features, beyond the L2 cache.
  std::size_t n = std::size_t{1} << 22;
  int runs = 7;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--values") n = std::stoull(argv[i + 1]);
    if (std::string(argv[i]) == "--runs") runs = std::stoi(argv[i + 1]);
  }
  report.header({{"values", std::to_string(n)},
                 {"runs", std::to_string(runs) + " (best of, alternating with the bound)"},
                 {"bound", "memcpy of n float32 (4n bytes)"}});
  std::vector<float> src(n), dst(n), copy(n);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto& x : src) x = normal(rng);
  std::vector<std::byte> words(2 * n);
  const double bytes = 4.0 * static_cast<double>(n);  // float32 bytes written or read
  auto memcpy_bound = [&] { std::memcpy(copy.data(), src.data(), n * sizeof(float)); };
  auto add = [&](const std::string& figure, std::pair<double, double> times, DType from, DType to) {
    report.add({.figure = figure,
                .value = bytes / times.first / 1e9,
                .unit = "GB/s",
                .bound = bytes / times.second / 1e9,
                .bound_name = "memcpy",
                .params = {{"values", n}, {"from", dtype_name(from)}, {"to", dtype_name(to)}}});
  };
  for (DType t : {DType::bfloat16, DType::float16}) {
    const std::string name = t == DType::bfloat16 ? "bf16" : "f16";
    add("dtype_narrow_" + name,
        bench::best_pair(runs, [&] { convert_from_float32(t, src, words); }, memcpy_bound),
        DType::float32, t);
    add("dtype_widen_" + name,
        bench::best_pair(runs, [&] { convert_to_float32(t, words, dst); }, memcpy_bound), t,
        DType::float32);
  }
  // Keep the results observable.
  return dst[n / 2] == copy[n / 2] + 1e30f ? 1 : 0;
}
