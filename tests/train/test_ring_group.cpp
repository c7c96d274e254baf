// The trainers' ring (RingGroup): sums like gloo for 1-3 trainers, gathers, broadcasts, and
// fails within its deadline on a dead, silent or mismatched peer; strangers are refused.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <future>
#include <span>
#include <string>
#include <vector>

#include "distgraph/core/timer.hpp"
#include "distgraph/torch.hpp"
#include "trainer_threads.hpp"

namespace test_train_ring_group {

using namespace distgraph;
using distgraph::test::collective_timeout;
using distgraph::test::with_store;

namespace {

/// Rank r's values: integers, so every order of summing gives the same floats.
torch::Tensor values(int rank, std::int64_t n, torch::ScalarType dtype) {
  return (torch::arange(n, torch::kLong) * 7 % 11 - 5 + rank * 3).to(dtype);
}

/// Reduces `t` over the group with `op`.
void reduce(CollectiveGroup& g, torch::Tensor& t, c10d::ReduceOp::RedOpType op,
            std::chrono::milliseconds timeout = std::chrono::milliseconds(-1)) {
  std::vector<torch::Tensor> ts{t};
  c10d::AllreduceOptions ao;
  ao.reduceOp = op;
  ao.timeout = timeout;
  g.allreduce(ts, ao)->wait();
}

/// A raw TCP connection to trainer `rank`'s ring port, as the store publishes it (-1 when
/// it cannot connect).
int connect_to_ring(c10d::Store& store, int rank) {
  const std::string key = "distgraph/ring/gradients/0/" + std::to_string(rank);
  store.wait({key}, collective_timeout);
  const auto v = store.get(key);
  const std::string addr(v.begin(), v.end());
  const int port = std::stoi(addr.substr(addr.rfind(' ') + 1));
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
  ::close(fd);
  return -1;
}

/// Runs `call`, which the ring should refuse before sending anything; notes in `bad` when
/// it returned instead of throwing InvalidArgument, DTypeError or IdOutOfRange.
template <class F>
void note_unrefused(std::vector<std::string>& bad, F&& call, const char* what) {
  try {
    call();
    bad.push_back(std::string(what) + " was not refused");
  } catch (const InvalidArgument&) {
  } catch (const DTypeError&) {
  } catch (const IdOutOfRange&) {
  }
}

}  // namespace

// Catch's assertions are not thread-safe: the trainers' threads record what they saw and
// the test's thread checks it after they have all finished.

TEST_CASE("the gradient ring reduces as gloo does for 1 to 3 trainers", "[train][net]") {
  const int world = GENERATE(1, 2, 3);
  std::vector<std::vector<std::string>> wrong(3);
  std::vector<int> ranks(3, -1), sizes(3, -1);
  with_store(world, [&](int rank, const c10::intrusive_ptr<c10d::Store>& store,
                        const RendezvousOptions& o) {
    auto& bad = wrong[static_cast<std::size_t>(rank)];
    RingGroup ring(store, o);
    auto gloo = make_gloo_group(store, o);
    ranks[static_cast<std::size_t>(rank)] = ring.getRank();
    sizes[static_cast<std::size_t>(rank)] = ring.getSize();
    for (const auto dtype :
         {torch::kFloat, torch::kDouble, torch::kInt, torch::kLong, torch::kHalf})
      for (const auto op :
           {c10d::ReduceOp::SUM, c10d::ReduceOp::MIN, c10d::ReduceOp::MAX, c10d::ReduceOp::PRODUCT})
        // 0 and 2 elements: fewer than trainers; 100,003: more than a socket buffer.
        for (const std::int64_t n : {0, 2, 5, 100003}) {
          auto a = values(rank, n, dtype);
          if (op == c10d::ReduceOp::PRODUCT) a = a.remainder(3);
          auto b = a.clone();
          reduce(ring, a, op);
          reduce(*gloo, b, op);
          if (!torch::equal(a, b))
            bad.push_back(std::string(c10::toString(dtype)) + " op " +
                          std::to_string(static_cast<int>(op)) + " n " + std::to_string(n));
        }
    // bfloat16 (which gloo does not reduce here): small integers, exact in it.
    auto bf = values(rank, 1001, torch::kBFloat16);
    reduce(ring, bf, c10d::ReduceOp::SUM);
    auto bf_expected = torch::zeros({1001}, torch::kBFloat16);
    for (int r = 0; r < world; ++r) bf_expected += values(r, 1001, torch::kBFloat16);
    if (!torch::equal(bf, bf_expected)) bad.push_back("bfloat16 sum");
    // A strided view is reduced through a copy and written back.
    auto m = values(rank, 12, torch::kFloat).reshape({3, 4});
    std::vector<torch::Tensor> ts{m.t()};
    ring.allreduce(ts)->wait();
    auto expected = torch::zeros({3, 4});
    for (int r = 0; r < world; ++r) expected += values(r, 12, torch::kFloat).reshape({3, 4});
    if (!torch::equal(m, expected)) bad.push_back("the strided view");
    ring.barrier()->wait();
  });
  for (int r = 0; r < world; ++r) {
    INFO("trainer " << r << " of " << world);
    CHECK(ranks[static_cast<std::size_t>(r)] == r);
    CHECK(sizes[static_cast<std::size_t>(r)] == world);
    CHECK(wrong[static_cast<std::size_t>(r)] == std::vector<std::string>{});
  }
}

TEST_CASE("the gradient ring broadcasts from every root", "[train][net]") {
  std::vector<std::vector<std::string>> wrong(3);
  with_store(3, [&](int rank, const c10::intrusive_ptr<c10d::Store>& store,
                    const RendezvousOptions& o) {
    auto& bad = wrong[static_cast<std::size_t>(rank)];
    RingGroup ring(store, o);
    for (int root = 0; root < 3; ++root) {
      auto t = torch::full({70001}, static_cast<double>(rank + 10 * root), torch::kDouble);
      std::vector<torch::Tensor> ts{t};
      c10d::BroadcastOptions bo;
      bo.rootRank = root;
      ring.broadcast(ts, bo)->wait();
      if (!torch::equal(t, torch::full({70001}, 11.0 * root, torch::kDouble)))
        bad.push_back("root " + std::to_string(root));
    }
    const auto refused = [&](auto&& call, const char* what) { note_unrefused(bad, call, what); };
    std::vector<torch::Tensor> two{torch::zeros({1}), torch::zeros({1})};
    refused([&] { ring.allreduce(two); }, "two tensors");
    std::vector<torch::Tensor> complex{torch::zeros({1}, torch::kComplexFloat)};
    refused([&] { ring.allreduce(complex); }, "complex64");
    std::vector<torch::Tensor> one{torch::zeros({1})};
    c10d::BroadcastOptions bad_root;
    bad_root.rootRank = 3;
    refused([&] { ring.broadcast(one, bad_root); }, "root 3");
    // The refused calls sent nothing: the ring is still in step.
    auto t = torch::ones({4});
    reduce(ring, t, c10d::ReduceOp::SUM);
    if (!torch::equal(t, torch::full({4}, 3.0f))) bad.push_back("the sum after refusals");
  });
  for (const auto& bad : wrong) CHECK(bad == std::vector<std::string>{});
}

TEST_CASE("the ring gathers every trainer's tensor in rank order for 1 to 3 trainers",
          "[train][net]") {
  for (int world = 1; world <= 3; ++world) {
    std::vector<std::vector<std::string>> wrong(static_cast<std::size_t>(world));
    with_store(world, [&](int rank, const c10::intrusive_ptr<c10d::Store>& store,
                          const RendezvousOptions& o) {
      auto& bad = wrong[static_cast<std::size_t>(rank)];
      RingGroup ring(store, o);
      // Uneven lengths (rank r holds 2r + 1 values; the largest is not the last rank's
      // when world is 3 and the order is checked) through the helper the trainers use.
      torch::Tensor expected = torch::empty({0}, torch::kLong);
      for (int r = 0; r < world; ++r)
        expected = torch::cat({expected, values(r, 2 * ((r + 1) % world) + 1, torch::kLong)});
      const auto got =
          all_gather_cat(ring, values(rank, 2 * ((rank + 1) % world) + 1, torch::kLong));
      if (!torch::equal(got, expected)) bad.push_back("all_gather_cat");
      // Many bytes per slot: each step is several socket writes.
      std::vector<std::vector<torch::Tensor>> outs(1);
      for (int r = 0; r < world; ++r) outs[0].push_back(torch::empty({300001}, torch::kFloat));
      std::vector<torch::Tensor> in{torch::full({300001}, static_cast<float>(rank + 1))};
      ring.allgather(outs, in)->wait();
      for (int r = 0; r < world; ++r)
        if (!torch::equal(outs[0][static_cast<std::size_t>(r)],
                          torch::full({300001}, static_cast<float>(r + 1))))
          bad.push_back("slot " + std::to_string(r));
      // Refused before anything is sent: the ring stays in step.
      const auto refused = [&](auto&& call, const char* what) { note_unrefused(bad, call, what); };
      std::vector<std::vector<torch::Tensor>> short_list(1);
      short_list[0].push_back(torch::empty({1}));
      std::vector<torch::Tensor> one{torch::zeros({1})};
      if (world > 1) refused([&] { ring.allgather(short_list, one); }, "too few outputs");
      std::vector<std::vector<torch::Tensor>> other_dtype(1);
      for (int r = 0; r < world; ++r) other_dtype[0].push_back(torch::empty({1}, torch::kDouble));
      refused([&] { ring.allgather(other_dtype, one); }, "outputs of another dtype");
      auto t = torch::ones({4});
      reduce(ring, t, c10d::ReduceOp::SUM);
      if (!torch::equal(t, torch::full({4}, static_cast<float>(world))))
        bad.push_back("the sum after the gathers");
    });
    for (const auto& bad : wrong) {
      INFO(world << " trainers");
      CHECK(bad == std::vector<std::string>{});
    }
  }
}

namespace {

/// What trainer 0 saw when its collective failed.
struct Failure {
  std::string first, second;  // the failed call's message, and the next call's
  double seconds = -1;        // how long the failed call took
};

/// Runs `call` and returns its CollectiveError's message ("" when it returned).
template <class F>
std::string collective_error(F&& call) {
  try {
    call();
  } catch (const CollectiveError& e) {
    return e.what();
  }
  return "";
}

/// Runs `call(rank, ring)` on both trainers of a 2-trainer ring; what each one's call threw.
template <class Call>
std::vector<Failure> each_trainers_failure(Call&& call) {
  std::vector<Failure> f(2);
  with_store(
      2, [&](int rank, const c10::intrusive_ptr<c10d::Store>& store, const RendezvousOptions& o) {
        RingGroup ring(store, o);
        const Stopwatch clock;
        f[static_cast<std::size_t>(rank)].first = collective_error([&] { call(rank, ring); });
        f[static_cast<std::size_t>(rank)].seconds = clock.seconds();
      });
  return f;
}

/// Both trainers' calls failed within 5 s (their connection's end or a header, not the
/// timeout), each naming the other.
void check_each_named_the_other(const std::vector<Failure>& f) {
  for (int r = 0; r < 2; ++r) {
    INFO("trainer " << r);
    CHECK_THAT(f[static_cast<std::size_t>(r)].first,
               Catch::Contains("trainer " + std::to_string(1 - r)));
    CHECK(f[static_cast<std::size_t>(r)].seconds >= 0);
    CHECK(f[static_cast<std::size_t>(r)].seconds < 5.0);
  }
}

}  // namespace

TEST_CASE("a dead ring neighbour fails the all-reduce at once and every later one",
          "[train][net][fault]") {
  std::promise<void> gone;
  auto gone_f = gone.get_future();
  Failure f;
  with_store(
      2, [&](int rank, const c10::intrusive_ptr<c10d::Store>& store, const RendezvousOptions& o) {
        auto ring = std::make_unique<RingGroup>(store, o);
        if (rank == 1) {
          ring.reset();  // closes both of its connections
          gone.set_value();
          return;
        }
        if (gone_f.wait_for(collective_timeout) != std::future_status::ready) return;
        auto t = torch::ones({100003});
        const Stopwatch clock;
        f.first = collective_error([&] { reduce(*ring, t, c10d::ReduceOp::SUM); });
        f.seconds = clock.seconds();
        f.second = collective_error([&] { reduce(*ring, t, c10d::ReduceOp::SUM); });
      });
  CHECK_THAT(f.first,
             Catch::Contains("trainers' ring (trainer 0 of 2)") && Catch::Contains("trainer 1"));
  CHECK(f.seconds >= 0);
  CHECK(f.seconds < 5.0);  // the connection's end, not the 30 s timeout
  CHECK_THAT(f.second, Catch::Contains("broke earlier"));
}

TEST_CASE("a silent ring neighbour fails the all-reduce at its deadline", "[train][net][fault]") {
  std::promise<void> done;
  auto done_f = done.get_future().share();
  Failure f;
  with_store(
      2, [&](int rank, const c10::intrusive_ptr<c10d::Store>& store, const RendezvousOptions& o) {
        RingGroup ring(store, o);
        if (rank == 1) {  // alive and connected; never joins the collective
          done_f.wait_for(collective_timeout);
          return;
        }
        auto t = torch::ones({8});
        const Stopwatch clock;
        f.first = collective_error(
            [&] { reduce(ring, t, c10d::ReduceOp::SUM, std::chrono::milliseconds(300)); });
        f.seconds = clock.seconds();
        done.set_value();
      });
  CHECK_THAT(f.first, Catch::Contains("trainer 1 sent nothing in time"));
  CHECK(f.seconds >= 0.29);
  CHECK(f.seconds < 5.0);
}

TEST_CASE("trainers reducing different sizes both fail and the sizes are named",
          "[train][net][fault]") {
  const std::vector<Failure> f = each_trainers_failure([](int rank, RingGroup& ring) {
    auto t = torch::ones({rank == 0 ? 10 : 12});
    reduce(ring, t, c10d::ReduceOp::SUM);
  });
  // Whoever reads its neighbour's header first names both sizes; the other may instead see
  // its connection closed.
  CHECK_THAT(f[0].first + f[1].first, Catch::Contains("bytes where this trainer expected"));
  check_each_named_the_other(f);
}

TEST_CASE("a trainer gathering while the other reduces both fail and name the collectives",
          "[train][net][fault]") {
  const std::vector<Failure> f = each_trainers_failure([](int rank, RingGroup& ring) {
    // One element each: an all-gather step and an all-reduce's first step move the same
    // 4 bytes, so only the header's kind and op tell them apart.
    auto t = torch::ones({rank == 0 ? 1 : 2});
    if (rank == 0) {
      std::vector<std::vector<torch::Tensor>> outs(1);
      for (int r = 0; r < 2; ++r) outs[0].push_back(torch::empty({1}));
      std::vector<torch::Tensor> in{t};
      ring.allgather(outs, in);
    } else {
      reduce(ring, t, c10d::ReduceOp::SUM);
    }
  });
  CHECK_THAT(f[0].first + f[1].first, Catch::Contains("all-gather") &&
                                          Catch::Contains("reduce-scatter") &&
                                          Catch::Contains("where this trainer expected"));
  check_each_named_the_other(f);
}

TEST_CASE("the gradient ring refuses strangers and still forms", "[train][net][fault]") {
  std::vector<float> sums(2, 0.0f);
  std::vector<int> stranger_reads;
  std::vector<double> join_seconds(2, -1);
  with_store(2, [&](int rank, const c10::intrusive_ptr<c10d::Store>& store,
                    const RendezvousOptions& o) {
    std::vector<int> strangers;
    if (rank == 1) {
      // Before joining, queue strangers at trainer 0's port: one says nothing, one greets
      // with the right magic and a wrong token, one with the store's token but claiming
      // to be trainer 0 itself.
      strangers.push_back(connect_to_ring(*store, 0));
      distgraph::detail::RingHello hello;
      hello.token.fill('0');
      hello.rank = 1;
      hello.world = 2;
      strangers.push_back(connect_to_ring(*store, 0));
      const auto token = store->get("distgraph/ring/gradients/0/token");
      distgraph::detail::RingHello claims_zero = hello;
      std::copy(token.begin(), token.end(), claims_zero.token.begin());
      claims_zero.rank = 0;
      strangers.push_back(connect_to_ring(*store, 0));
      if (::write(strangers[1], &hello, sizeof hello) != static_cast<ssize_t>(sizeof hello) ||
          ::write(strangers[2], &claims_zero, sizeof hello) != static_cast<ssize_t>(sizeof hello))
        return;
    }
    const Stopwatch clock;
    RingGroup ring(store, o);
    join_seconds[static_cast<std::size_t>(rank)] = clock.seconds();
    // Trainer 0 closed every stranger: each reads the end of its stream.
    for (const int fd : strangers) {
      pollfd p{fd, POLLIN, 0};
      char c = 1;
      stranger_reads.push_back(::poll(&p, 1, 10000) == 1 ? static_cast<int>(::read(fd, &c, 1))
                                                         : -2);
      ::close(fd);
    }
    auto t = torch::full({3}, 1.0f + static_cast<float>(rank));
    reduce(ring, t, c10d::ReduceOp::SUM);
    sums[static_cast<std::size_t>(rank)] = t.sum().item<float>();
  });
  CHECK(stranger_reads == std::vector<int>{0, 0, 0});
  // The silent stranger, ahead of trainer 1 in the queue, delayed nobody.
  CHECK(join_seconds[1] >= 0);
  CHECK(join_seconds[1] < 5.0);
  CHECK(sums == std::vector<float>{9.0f, 9.0f});
}

TEST_CASE("gradients averaged over the ring equal those over gloo", "[train][net]") {
  std::vector<std::vector<torch::Tensor>> by_ring(2), by_gloo(2);
  with_store(
      2, [&](int rank, const c10::intrusive_ptr<c10d::Store>& store, const RendezvousOptions& o) {
        const auto run = [&](c10::intrusive_ptr<CollectiveGroup> group) {
          // Made from the rank (torch's generator is one for all threads).
          const auto make = [&](std::vector<std::int64_t> shape, double scale,
                                torch::ScalarType dtype = torch::kFloat) {
            std::int64_t n = 1;
            for (const auto d : shape) n *= d;
            return (torch::arange(n, torch::kDouble).sin() * scale * (rank + 1))
                .reshape(shape)
                .to(dtype);
          };
          std::vector<torch::Tensor> params{make({3, 4}, 1.0), make({5}, 2.0),
                                            make({2, 2}, 3.0, torch::kDouble), make({40}, 4.0)};
          for (auto& p : params) p.requires_grad_(true);
          // 64-byte buckets: several float buckets, the 160-byte tensor alone, double apart.
          GradientAllReducer reducer(group, params,
                                     {.bucket_bytes = 64, .timeout = collective_timeout});
          reducer.broadcast_parameters(1);
          for (std::size_t i = 0; i < params.size(); ++i)
            if (i != 1 || rank == 1)  // parameter 1 has no gradient on trainer 0: counts as zero
              params[i].mutable_grad() = (params[i].detach().cos() * (rank + 0.5)).contiguous();
          reducer.all_reduce_gradients();
          std::vector<torch::Tensor> out;
          for (auto& p : params) out.push_back(p.grad().clone()), out.push_back(p.detach().clone());
          return out;
        };
        by_ring[static_cast<std::size_t>(rank)] = run(c10::make_intrusive<RingGroup>(store, o));
        by_gloo[static_cast<std::size_t>(rank)] = run(make_gloo_group(store, o));
      });
  REQUIRE(by_ring[0].size() == 8);
  for (std::size_t i = 0; i < 8; ++i) {
    INFO("tensor " << i);
    CHECK(torch::equal(by_ring[0][i], by_ring[1][i]));  // every trainer, the same bits
    CHECK(torch::allclose(by_ring[0][i], by_gloo[0][i]));
  }
}

TEST_CASE("a ring message split anywhere resumes where it stopped", "[train]") {
  std::array<std::byte, 32> head{};
  std::array<std::byte, 100> body{};
  distgraph::detail::RingCursor c{{std::span<std::byte>(head), std::span<std::byte>(body)}};
  std::array<iovec, 2> v{};
  CHECK(c.total() == 132);
  for (const std::size_t done : {std::size_t{0}, std::size_t{5}, std::size_t{31}, std::size_t{32},
                                 std::size_t{33}, std::size_t{131}}) {
    c.done = done;
    const int n = c.left(v);
    INFO("done " << done);
    std::size_t left = 0;
    for (int i = 0; i < n; ++i) left += v[static_cast<std::size_t>(i)].iov_len;
    CHECK(left == 132 - done);
    const auto* first = static_cast<std::byte*>(v[0].iov_base);
    CHECK(first == (done < 32 ? head.data() + done : body.data() + (done - 32)));
    CHECK(n == (done < 32 ? 2 : 1));
  }
  c.done = 132;
  CHECK(c.finished());
  CHECK(c.left(v) == 0);
}

TEST_CASE("trainers reducing different dtypes of one size fail and the dtypes are named",
          "[train][net][fault]") {
  std::vector<std::string> errors(2);
  with_store(
      2, [&](int rank, const c10::intrusive_ptr<c10d::Store>& store, const RendezvousOptions& o) {
        RingGroup ring(store, o);
        auto t = torch::ones({6}, rank == 0 ? torch::kFloat : torch::kInt);  // 24 bytes each
        errors[static_cast<std::size_t>(rank)] =
            collective_error([&] { reduce(ring, t, c10d::ReduceOp::SUM); });
      });
  // c10::ScalarType: Int 3, Float 6.
  CHECK_THAT(errors[0] + errors[1], Catch::Contains("dtype 6") && Catch::Contains("dtype 3"));
  CHECK_FALSE(errors[0].empty());
  CHECK_FALSE(errors[1].empty());
}

TEST_CASE("rings made one after another under one name on one store each form", "[train][net]") {
  // 4 trainers: a member's next ring may start before the last member of this one has
  // finished joining (the join's barrier keeps their counts apart).
  const int world = GENERATE(2, 4);
  std::vector<std::vector<float>> sums(4);
  with_store(world, [&](int rank, const c10::intrusive_ptr<c10d::Store>& store,
                        const RendezvousOptions& o) {
    for (int k = 0; k < 4; ++k) {
      RingGroup ring(store, o);
      auto t = torch::full({2}, static_cast<float>(k + rank));
      reduce(ring, t, c10d::ReduceOp::SUM);
      sums[static_cast<std::size_t>(rank)].push_back(t[0].item<float>());
    }
  });
  std::vector<float> expected;
  for (int k = 0; k < 4; ++k)
    expected.push_back(static_cast<float>(world * k + world * (world - 1) / 2));
  for (int r = 0; r < world; ++r) CHECK(sums[static_cast<std::size_t>(r)] == expected);
}

TEST_CASE("the gradient all-reduce keeps the reducer's deadline on the ring",
          "[train][net][fault]") {
  // The group's own timeout is 30 s; the reducer's is 300 ms and must be the one that ends
  // the wait for a trainer that never reduces.
  std::promise<void> done;
  auto done_f = done.get_future().share();
  Failure f;
  with_store(
      2, [&](int rank, const c10::intrusive_ptr<c10d::Store>& store, const RendezvousOptions& o) {
        auto ring = c10::make_intrusive<RingGroup>(store, o);
        std::vector<torch::Tensor> params{torch::zeros({10}, torch::requires_grad())};
        GradientAllReducer reducer(ring, params, {.timeout = std::chrono::milliseconds(300)});
        if (rank == 1) {
          done_f.wait_for(collective_timeout);
          return;
        }
        params[0].mutable_grad() = torch::ones({10});
        const Stopwatch clock;
        f.first = collective_error([&] { reducer.all_reduce_gradients(); });
        f.seconds = clock.seconds();
        done.set_value();
      });
  CHECK_THAT(f.first, Catch::Contains("sent nothing in time"));
  CHECK(f.seconds >= 0.29);
  CHECK(f.seconds < 5.0);
}

}  // namespace test_train_ring_group
