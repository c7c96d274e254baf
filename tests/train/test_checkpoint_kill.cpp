// A run SIGKILLed while it writes its checkpoint leaves the previous checkpoint or the new
// one, whole, every time: --resume never finds a torn or empty file.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "distgraph/train/checkpoint.hpp"
#include "support/temp_dir.hpp"

namespace test_train_checkpoint_kill {

namespace fs = std::filesystem;
using distgraph::test::TempDir;

TEST_CASE(
    "SIGKILL at points spread over checkpoint writes: the file is always the previous or "
    "the new checkpoint, whole, and loads",
    "[train][checkpoint][durable]") {
  torch::manual_seed(0);
  torch::nn::Linear model(64, 64);
  torch::optim::Adam adam(model->parameters());
  // Two checkpoints told apart by their progress, each ~4 MB (a write takes a while).
  std::vector<std::string> versions;
  for (int v = 0; v < 2; ++v)
    versions.push_back(distgraph::checkpoint_bytes(
        *model, adam, {{"epochs_done", v + 1}},
        {{"pad", torch::full({1 << 20}, static_cast<float>(v))}}));
  const TempDir tmp;
  const fs::path path = tmp / "checkpoint.pt";
  distgraph::write_checkpoint_file(path, versions[0]);
  constexpr int iterations = 40;
  for (int i = 0; i < iterations; ++i) {
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    // Whatever ends this iteration (a failed REQUIRE included), the writer does not outlive it.
    struct Reaper {
      pid_t pid;
      ~Reaper() {
        if (pid <= 0) return;
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    } reaper{pid};
    if (pid == 0) {
      // The writer: the two versions in turn until it is killed. No torch here (its thread
      // pools do not survive a fork); only the writer under test.
      ::close(ready[0]);
      try {
        for (unsigned k = 1;; ++k) {
          distgraph::write_checkpoint_file(path, versions[k % 2]);
          if (k == 1 && ::write(ready[1], "w", 1) != 1) ::_exit(3);
        }
      } catch (...) {
        ::_exit(2);
      }
    }
    ::close(ready[1]);
    char c = 0;
    REQUIRE(::read(ready[0], &c, 1) == 1);  // it has published once and is writing again
    ::close(ready[0]);
    ::usleep(static_cast<useconds_t>(i * 500));  // kill points 0-20 ms into the writes
    REQUIRE(::kill(pid, SIGKILL) == 0);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    reaper.pid = 0;
    INFO("kill " << i);
    CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));  // not a writer error
    const std::string bytes = distgraph::read_checkpoint_file(path);
    CHECK((bytes == versions[0] || bytes == versions[1]));
    distgraph::CheckpointReader reader(bytes, path.string());
    const auto done = reader.meta().value("epochs_done", 0);
    CHECK((done == 1 || done == 2));
    reader.load(*model, adam);
  }
  // The next write removes the temporary files the killed writers left.
  distgraph::write_checkpoint_file(path, versions[1]);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(tmp.path()))
    if (e.path() != path) left.push_back(e.path().filename().string());
  INFO(left.size() << " files beside the checkpoint");
  CHECK(left.empty());
}

}  // namespace test_train_checkpoint_kill
