// The CUDA and NCCL paths: the trainer on a GPU, NCCL gradient groups, pinned storage, and
// a trainer that runs out of GPU memory. They run where a GPU is (scripts/gpu_check.sh runs
// `ctest -R "CUDA|NCCL|cuda"` on a lent device); everywhere else each case skips, so CI
// builds them against a CPU libtorch and checks that they skip cleanly.
// libtorch first: c10's logging defines a CHECK macro that Catch's must replace.
#include <dlfcn.h>
#include <sys/wait.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/torch.hpp"
#include "support/processes.hpp"
#include "support/program_run.hpp"
#include "support/temp_dir.hpp"
#include "train/sbm_fixture.hpp"
#include "train/trainer_threads.hpp"

namespace test_gpu_cuda {

using namespace distgraph;
using distgraph::test::SbmFixture;

namespace {

/// The distgraph program (test_gpu is built after it; empty where the tools are not built).
#ifdef DISTGRAPH_CLI
const std::string cli = DISTGRAPH_CLI;
#else
const std::string cli;
#endif

#define REQUIRE_CLI()                                \
  if (cli.empty()) {                                 \
    WARN("SKIPPED: the distgraph CLI is not built"); \
    return;                                          \
  }

#define REQUIRE_CUDA()                                                       \
  if (!torch::cuda::is_available()) {                                        \
    WARN("SKIPPED: no CUDA device here (or a libtorch built without CUDA)"); \
    return;                                                                  \
  }

/// Trains `trainer` for `epochs` on the fixture's training nodes and returns its test
/// accuracy and the last epoch's stats.
template <class T>
std::pair<double, EpochStats> train_and_test(const SbmFixture& f, T& trainer, int epochs) {
  auto train = f.source(f.ids(f.data.train_mask), {5, 10}, 64);
  EpochStats last;
  for (int e = 0; e < epochs; ++e) last = trainer.train_epoch(train, e);
  auto test = f.source(f.ids(f.data.test_mask), {-1, -1}, 256);
  return {trainer.evaluate(test).value, last};
}

/// Device memory held by this process through the CUDA runtime that libtorch loaded
/// (looked up at run time, so the test needs no CUDA headers): another tenant of the GPU.
class DeviceMemoryHog {
 public:
  /// Takes all but `leave` bytes of the current device's free memory.
  explicit DeviceMemoryHog(std::size_t leave) {
    using MemGetInfo = int (*)(std::size_t*, std::size_t*);
    using Malloc = int (*)(void**, std::size_t);
    void* lib = RTLD_DEFAULT;
    if (::dlsym(lib, "cudaMalloc") == nullptr)  // not in the global scope: load a runtime
      for (const char* so : {"libcudart.so.13", "libcudart.so.12", "libcudart.so"})
        if ((lib = ::dlopen(so, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    REQUIRE(lib != nullptr);
    const auto info = reinterpret_cast<MemGetInfo>(::dlsym(lib, "cudaMemGetInfo"));
    const auto alloc = reinterpret_cast<Malloc>(::dlsym(lib, "cudaMalloc"));
    free_ = reinterpret_cast<Free>(::dlsym(lib, "cudaFree"));
    REQUIRE(info != nullptr);
    REQUIRE(alloc != nullptr);
    REQUIRE(free_ != nullptr);
    std::size_t free_bytes = 0, total = 0;
    REQUIRE(info(&free_bytes, &total) == 0);
    REQUIRE(free_bytes > leave);
    held_ = free_bytes - leave;
    REQUIRE(alloc(&ptr_, held_) == 0);
  }
  ~DeviceMemoryHog() {
    if (ptr_ != nullptr) free_(ptr_);
  }
  DeviceMemoryHog(const DeviceMemoryHog&) = delete;
  DeviceMemoryHog& operator=(const DeviceMemoryHog&) = delete;
  std::size_t held() const noexcept { return held_; }

 private:
  using Free = int (*)(void*);
  Free free_ = nullptr;
  void* ptr_ = nullptr;
  std::size_t held_ = 0;
};

}  // namespace

TEST_CASE("cuda: the trainer runs the same code on a CUDA device", "[gpu]") {
  REQUIRE_CUDA();
  const SbmFixture f;
  torch::manual_seed(3);
  Trainer<GraphSAGE> gpu(f.model(),
                         {.lr = 0.01, .weight_decay = 0, .device = torch::Device("cuda:0")});
  const auto [gpu_acc, gpu_last] = train_and_test(f, gpu, 8);
  CHECK(gpu.model()->parameters().front().device().is_cuda());
  torch::manual_seed(3);
  Trainer<GraphSAGE> cpu(f.model(), {.lr = 0.01, .weight_decay = 0});
  const auto [cpu_acc, cpu_last] = train_and_test(f, cpu, 8);
  INFO("test accuracy: cuda " << gpu_acc << ", cpu " << cpu_acc);
  CHECK(gpu_acc > 0.7);
  // Same seeds, batches and model; only the kernels (and dropout's draws) differ.
  CHECK(std::abs(gpu_acc - cpu_acc) < 0.05);
  CHECK(gpu_last.loss == Approx(cpu_last.loss).epsilon(0.2));
  // The batches' copies to the GPU are timed apart from the compute.
  CHECK(gpu_last.copy_s > 0);
  CHECK(gpu_last.compute_s > 0);
}

TEST_CASE("NCCL: a trainer group on one GPU picks NCCL for the gradients and trains through it",
          "[gpu]") {
  REQUIRE_CUDA();
  if (!has_nccl) {
    WARN("SKIPPED: this libtorch has no c10d NCCL backend");
    return;
  }
  // One rank: NCCL refuses two ranks on one GPU, and this machine has one.
  const SbmFixture f;
  double acc = 0;
  test::with_store(
      1, [&](int, const c10::intrusive_ptr<c10d::Store>& store, const RendezvousOptions& o) {
        const TrainerGroups g = make_trainer_groups(store, o, torch::Device("cuda:0"));
        REQUIRE(g.control);
        REQUIRE(g.gradients);
        CHECK(g.gradients.get() != g.control.get());
        CHECK(g.gradients->getBackendName() == "nccl");
        // A sum over the group reaches the device and comes back.
        std::vector<torch::Tensor> t{torch::full({4}, 3.0f, torch::Device("cuda:0"))};
        g.gradients->allreduce(t)->wait();
        CHECK(t[0].sum().item<float>() == Approx(12.0f));
        torch::manual_seed(3);
        Trainer<GraphSAGE> trainer(f.model(),
                          {.lr = 0.01,
                           .weight_decay = 0,
                           .device = torch::Device("cuda:0"),
                           .gradient_group = g.gradients},
                          g.control);
        acc = train_and_test(f, trainer, 8).first;
      });
  CHECK(acc > 0.7);
}

TEST_CASE("cuda: TorchStorage allocates pinned host tensors where CUDA is available", "[gpu]") {
  REQUIRE_CUDA();
  TorchStorage s(TorchStorageOptions{.pinned = true});
  CHECK(s.pinned());
  REQUIRE(s.create(TensorSpec{"emb", DType::float32, 1000, 16}));
  const at::Tensor t = s.tensor("emb");
  CHECK(t.is_pinned());
  // A pinned row range reaches the GPU asynchronously and intact.
  std::vector<float> vals(16 * 3);
  for (std::size_t i = 0; i < vals.size(); ++i) vals[i] = static_cast<float>(i);
  s.write_rows("emb", std::vector<std::int64_t>{0, 1, 2}, std::as_bytes(std::span(vals)));
  const auto gpu = t.slice(0, 0, 3).to(torch::Device("cuda:0"), /*non_blocking=*/true);
  torch::cuda::synchronize();
  CHECK(gpu.sum().item<double>() == Approx(47.0 * 48 / 2));
}

TEST_CASE(
    "cuda: a trainer out of GPU memory stops the launched job, naming the trainer and "
    "the allocation, and leaves no process behind",
    "[gpu]") {
  REQUIRE_CUDA();
  REQUIRE_CLI();
  const test::TempDir tmp;
  const std::string out = (tmp.path() / "run").string();
  // The GPU is shared with a tenant that leaves 2 GiB. The model (32 features, 2^20
  // hidden units, 8 classes: 335 MB) fits; the first layer's output for a batch's
  // thousands of destinations (4 MiB a row) does not.
  DeviceMemoryHog hog(std::size_t{2} << 30);
  INFO("held " << hog.held() << " bytes of device memory");
  const test::ProgramRun r =
      test::run_program({cli, "train", "--device", "cuda", "--parts", "1", "--epochs", "1",
                         "--hidden", "1048576", "--out", out},
                        std::chrono::minutes(4));
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK(r.exit_code != -1);  // ended by itself, not at the deadline
  CHECK(r.output.find("trainer 0 of 1 (machine 0) on cuda:0: out of GPU memory") !=
        std::string::npos);
  CHECK(r.output.find("Tried to allocate") != std::string::npos);
  // The launcher stopped the server too: nothing mentions the run folder any more.
  CHECK(test::none_left(out, std::chrono::seconds(30)));
}

TEST_CASE(
    "cuda: --device cuda with no visible GPU, or cuda:N past the machine's GPUs, fails "
    "in one line before anything starts",
    "[gpu][bad_input]") {
  REQUIRE_CLI();
  const test::TempDir tmp;
  const std::string out = (tmp.path() / "run").string();
  // The child's view of the GPUs: none, then at most one (cuda:7 is then always past the
  // end). A CPU-only libtorch refuses both for that reason instead.
  const auto run = [&](const char* visible, const std::string& device) {
    ::setenv("CUDA_VISIBLE_DEVICES", visible, 1);
    const auto r = test::run_program(
        {cli, "train", "--device", device, "--epochs", "1", "--out", out}, std::chrono::minutes(2));
    ::unsetenv("CUDA_VISIBLE_DEVICES");
    return r;
  };
  for (const auto& [visible, device] :
       std::vector<std::pair<const char*, std::string>>{{"", "cuda"}, {"0", "cuda:7"}}) {
    const test::ProgramRun r = run(visible, device);
    INFO("CUDA_VISIBLE_DEVICES='" << visible << "' --device " << device << "\n" << r.output);
    CHECK(r.exit_code == 2);
    REQUIRE(!r.output.empty());
    CHECK(r.output.find('\n') == r.output.size() - 1);
    CHECK(r.output.find("--device " + device + ":") != std::string::npos);
    const bool reason =
        r.output.find("built without CUDA") != std::string::npos ||
        r.output.find("no CUDA device is visible") != std::string::npos ||
        r.output.find("this machine has 1 CUDA device (cuda:0)") != std::string::npos;
    CHECK(reason);
  }
  CHECK_FALSE(std::filesystem::exists(out));  // refused before anything was written
}

}  // namespace test_gpu_cuda
