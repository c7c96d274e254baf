// TorchStorage: the Storage contract over torch tensors, and the tensors it exposes.
// libtorch first: c10's logging defines a CHECK macro that Catch's must replace.
#include "distgraph/train/torch_storage.hpp"

#include <catch2/catch.hpp>
#include <thread>
#include <vector>

namespace test_train_torch_storage {

using namespace distgraph;

TEST_CASE("TorchStorage keeps the storage contract and exposes its rows as a torch tensor",
          "[train][storage]") {
  TorchStorage s;
  CHECK_FALSE(s.pinned());  // no CUDA here, or not asked for
  const TensorSpec spec{"emb", DType::float32, 6, 3};
  REQUIRE(s.create(spec));
  CHECK_FALSE(s.create(spec));
  CHECK_THROWS_AS(s.create(TensorSpec{"emb", DType::float32, 6, 4}), ShapeError);
  CHECK_THROWS_AS(s.create(TensorSpec{"emb", DType::float64, 6, 3}), DTypeError);
  CHECK_THROWS_AS(s.create(TensorSpec{"u", DType::uint32, 2, 1}), DTypeError);

  const std::vector<std::int64_t> rows{4, 1, 4};
  const std::vector<float> vals{1, 2, 3, 4, 5, 6, 7, 8, 9};
  s.write_rows("emb", rows, std::as_bytes(std::span(vals)));  // row 4 ends as its last listing
  s.add_rows("emb", rows, std::as_bytes(std::span(vals)));    // row 4 gets both additions
  const at::Tensor t = s.tensor("emb");
  REQUIRE(t.dim() == 2);
  CHECK(t.size(0) == 6);
  CHECK(t.size(1) == 3);
  const float* p = t.data_ptr<float>();
  CHECK(p[4 * 3 + 0] == 7 + 1 + 7);
  CHECK(p[1 * 3 + 2] == 6 + 6);
  CHECK(p[0] == 0);
  std::vector<float> out(3);
  s.read_rows("emb", std::vector<std::int64_t>{1}, std::as_writable_bytes(std::span(out)));
  CHECK((out == std::vector<float>{8, 10, 12}));
  CHECK_THROWS_AS(
      s.read_rows("emb", std::vector<std::int64_t>{6}, std::as_writable_bytes(std::span(out))),
      IdOutOfRange);
  CHECK_THROWS_AS(
      s.read_rows("nope", std::vector<std::int64_t>{0}, std::as_writable_bytes(std::span(out))),
      NotFound);
  CHECK(s.list().size() == 1);
  CHECK(s.remove("emb"));
  CHECK_FALSE(s.contains("emb"));
  // The tensor handed out earlier stays valid.
  CHECK(t.data_ptr<float>()[0] == 0);
}

TEST_CASE("TorchStorage push_add from several threads loses no update", "[train][storage]") {
  TorchStorage s;
  REQUIRE(s.create(TensorSpec{"c", DType::int64, 8, 4}));
  std::vector<std::thread> ts;
  for (int k = 0; k < 4; ++k)
    ts.emplace_back([&] {
      const std::vector<std::int64_t> rows{0, 1, 2, 3, 4, 5, 6, 7, 3};
      const std::vector<std::int64_t> ones(rows.size() * 4, 1);
      for (int i = 0; i < 2000; ++i) s.add_rows("c", rows, std::as_bytes(std::span(ones)));
    });
  for (auto& t : ts) t.join();
  const auto* p = s.tensor("c").data_ptr<std::int64_t>();
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 4; ++c) REQUIRE(p[r * 4 + c] == (r == 3 ? 16000 : 8000));
}

}  // namespace test_train_torch_storage
