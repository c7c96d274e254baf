// KVServer requests held to docs/WIRE.md: exact bodies, known codes, finite parameters, names.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "distgraph/io/synthetic.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "distgraph/server/graph_server.hpp"
#include "distgraph/storage/in_memory_storage.hpp"
#include "distgraph/storage/mmap_storage.hpp"
#include "support/temp_dir.hpp"

namespace test_server_kv_requests {

using namespace distgraph;
using distgraph::test::TempDir;

namespace {

constexpr double infinity = std::numeric_limits<double>::infinity();
constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();

/// Partition 0 of a small SBM graph served by a GraphServer over InMemoryStorage.
struct Served {
  TempDir tmp;
  std::unique_ptr<GraphServer<InMemoryStorage>> server;
  std::vector<std::int64_t> owned;
  Served() {
    SbmOptions o;
    o.num_nodes = 200;
    o.num_classes = 2;
    o.avg_degree = 4;
    o.feat_dim = 3;
    o.seed = 5;
    const Dataset data = sbm_dataset(o);
    partition_dataset(data, "g", 2, tmp.path(), {.method = PartMethod::random, .seed = 1});
    server = std::make_unique<GraphServer<InMemoryStorage>>(load_partition(tmp / "g.json", 0),
                                                            std::make_shared<InMemoryStorage>());
    owned = (*(server->partition().book).get_if<RangePartitionBook>()).owned_nodes(PartId{0});
  }
  std::int64_t num_nodes() const { return server->kv().book().num_nodes(); }
  Reply handle(MsgType type, std::vector<std::byte> head,
               std::vector<std::span<const std::byte>> parts = {}) {
    Request r;
    r.type = type;
    r.body = Message::owning(std::move(head));
    r.body.parts = std::move(parts);
    return server->handle(r);
  }
  Reply create(const CreateTensorRequest& q) { return handle(MsgType::create_tensor, q.encode()); }
  /// A float32 node tensor `cols` wide, uniform in [-1, 1): an embedding to step.
  Reply create_embedding(const std::string& name, std::int64_t cols) {
    return create(
        {name, DType::float32, RowKind::node, num_nodes(), cols, {InitKind::uniform, -1, 1, 7}});
  }
  /// Row `id` of float32 tensor `name`, `cols` wide.
  std::vector<float> row(const std::string& name, std::int64_t id, std::int64_t cols) {
    const std::int64_t ids[1] = {id};
    const Reply r = handle(MsgType::pull, RowsRequest{name, RowKind::node, 1}.encode(),
                           {std::as_bytes(std::span(ids))});
    REQUIRE(r.status == Status::ok);
    const auto p = r.body.parts.at(0);
    REQUIRE(p.size() == static_cast<std::size_t>(cols) * sizeof(float));
    const auto* f = reinterpret_cast<const float*>(p.data());
    return {f, f + cols};
  }
};

const std::vector<std::byte> junk{std::byte{1}, std::byte{2}, std::byte{3}};

}  // namespace

TEST_CASE("ping, metadata, list_tensors and shutdown with a head or parts get bad_request",
          "[server][bad_input]") {
  Served s;
  for (MsgType t : {MsgType::ping, MsgType::metadata, MsgType::list_tensors, MsgType::shutdown}) {
    INFO(msg_type_name(t));
    const Reply h = s.handle(t, junk);
    CHECK(h.status == Status::bad_request);
    CHECK_THAT(h.text(), Catch::Contains("expected an empty message"));
    CHECK(s.handle(t, {}, {junk}).status == Status::bad_request);
    CHECK(s.handle(t, {}, {std::span<const std::byte>()}).status == Status::bad_request);
  }
  // Nothing was done: the refused shutdowns did not stop the server.
  CHECK_FALSE(s.server->kv().shutdown_requested());
  CHECK(s.handle(MsgType::ping, {}).status == Status::ok);
  CHECK(s.handle(MsgType::metadata, {}).status == Status::ok);
  CHECK(s.handle(MsgType::list_tensors, {}).status == Status::ok);
  CHECK(s.handle(MsgType::shutdown, {}).status == Status::ok);
  CHECK(s.server->kv().shutdown_requested());
}

TEST_CASE("messages whose layout is a head alone refuse parts and do nothing",
          "[server][bad_input]") {
  Served s;
  const CreateTensorRequest q{"t", DType::float32, RowKind::node, s.num_nodes(), 2};
  CHECK(s.handle(MsgType::create_tensor, q.encode(), {junk}).status == Status::bad_request);
  CHECK_FALSE(s.server->kv().storage().contains("t"));
  REQUIRE(s.create(q).status == Status::ok);
  HeadWriter del;
  del.put_string("t");
  CHECK(s.handle(MsgType::delete_tensor, del.take(), {junk}).status == Status::bad_request);
  CHECK(s.server->kv().storage().contains("t"));
  CHECK(s.handle(MsgType::barrier, BarrierRequest{"b", 1, 1000}.encode(), {junk}).status ==
        Status::bad_request);
  CHECK(s.handle(MsgType::barrier, BarrierRequest{"b", 1, 1000}.encode()).status == Status::ok);
  s.server->kv().set_checkpoint_dir(s.tmp / "ckpt");
  CHECK(s.handle(MsgType::save_tensors, TensorCheckpointRequest{"c", {"t"}, false}.encode(), {junk})
            .status == Status::bad_request);
  CHECK_FALSE(std::filesystem::exists(s.tmp / "ckpt" / "c"));
  CHECK(
      s.handle(MsgType::save_tensors, TensorCheckpointRequest{"c", {"t"}, false}.encode()).status ==
      Status::ok);
  HeadWriter rm;
  rm.put_string("c");
  CHECK(s.handle(MsgType::remove_checkpoint, rm.take(), {junk}).status == Status::bad_request);
  CHECK(std::filesystem::exists(s.tmp / "ckpt" / "c"));
}

TEST_CASE("create_tensor refuses unknown init kinds and dtype codes and non-finite init bounds",
          "[server][bad_input]") {
  Served s;
  const auto n = s.num_nodes();
  const auto tensors_before = s.server->kv().storage().list().size();
  auto req = [&](std::string name, InitSpec init) {
    return CreateTensorRequest{std::move(name), DType::float32, RowKind::node, n, 2, init};
  };
  const Reply seven = s.create(req("k7", {static_cast<InitKind>(7), -1, 1, 3}));
  CHECK(seven.status == Status::bad_request);
  CHECK_THAT(seven.text(), Catch::Contains("init kind 7"));
  for (InitKind k : {InitKind::zeros, InitKind::uniform, InitKind::normal})
    for (auto [a, b] : std::vector<std::pair<double, double>>{{infinity, 1.0},
                                                              {0.0, infinity},
                                                              {-infinity, 0.0},
                                                              {not_a_number, 1.0},
                                                              {0.0, not_a_number}}) {
      INFO("kind " << static_cast<int>(k) << " a " << a << " b " << b);
      const Reply r = s.create(req("nf", {k, a, b, 3}));
      CHECK(r.status == Status::bad_request);
      CHECK_THAT(r.text(), Catch::Contains("finite"));
    }
  CHECK(s.create(req("inverted", {InitKind::uniform, 1, -1, 3})).status == Status::bad_request);
  CHECK(s.create(req("negative_sd", {InitKind::normal, 0, -1, 3})).status == Status::bad_request);
  // None of them was created.
  CHECK(s.server->kv().storage().list().size() == tensors_before);
  // A dtype code above 255 used to wrap to float32 (code 0).
  HeadWriter w;
  w.put_string("wide").put(std::uint16_t{256}).put(std::uint8_t{0}).put(n).put(std::int64_t{2});
  w.put(std::uint8_t{0}).put(0.0).put(0.0).put(std::uint64_t{0});
  const Reply wide = s.handle(MsgType::create_tensor, w.take());
  CHECK(wide.status == Status::dtype_mismatch);
  CHECK_THAT(wide.text(), Catch::Contains("dtype code 256"));
  CHECK_FALSE(s.server->kv().storage().contains("wide"));
  // The documented kinds still work, including a constant fill (a == b).
  CHECK(s.create(req("u", {InitKind::uniform, 2, 2, 3})).status == Status::ok);
  CHECK(s.row("u", s.owned[0], 2) == std::vector<float>{2, 2});
  CHECK(s.create(req("z", {InitKind::normal, 0, 0, 3})).status == Status::ok);
}

TEST_CASE("sparse_step refuses non-finite optimizer parameters and leaves the rows alone",
          "[server][bad_input]") {
  Served s;
  REQUIRE(s.create_embedding("emb", 2).status == Status::ok);
  const std::int64_t id = s.owned[0];
  const auto before = s.row("emb", id, 2);
  const std::int64_t ids[1] = {id};
  const float grads[2] = {0.5f, -0.25f};
  auto step = [&](SparseOptimizerParams p) {
    return s.handle(MsgType::sparse_step, SparseStepRequest{"emb", RowKind::node, 1, p}.encode(),
                    {std::as_bytes(std::span(ids)), std::as_bytes(std::span(grads))});
  };
  for (OptimizerKind k : {OptimizerKind::adagrad, OptimizerKind::adam}) {
    for (const SparseOptimizerParams p : {SparseOptimizerParams{k, infinity, 1e-10, 0.9, 0.999},
                                          SparseOptimizerParams{k, not_a_number, 1e-10, 0.9, 0.999},
                                          SparseOptimizerParams{k, 0.1, infinity, 0.9, 0.999},
                                          SparseOptimizerParams{k, 0.1, not_a_number, 0.9, 0.999},
                                          SparseOptimizerParams{k, 0.1, 1e-10, not_a_number, 0.999},
                                          SparseOptimizerParams{k, 0.1, 1e-10, 0.9, -infinity}}) {
      INFO("kind " << static_cast<int>(k) << " lr " << p.lr << " eps " << p.eps << " betas "
                   << p.beta1 << " " << p.beta2);
      const Reply r = step(p);
      CHECK(r.status == Status::bad_request);
      CHECK_THAT(r.text(), Catch::Contains("finite"));
    }
  }
  CHECK(s.row("emb", id, 2) == before);
  CHECK_FALSE(s.server->kv().storage().contains("emb.adagrad_sum"));
  REQUIRE(step({OptimizerKind::adagrad, 0.1, 1e-10, 0.9, 0.999}).status == Status::ok);
  const auto after = s.row("emb", id, 2);
  CHECK(after != before);
  CHECK(std::isfinite(after[0]));
}

TEST_CASE("sparse_step refuses non-finite gradients and changes no row of the step",
          "[server][bad_input]") {
  Served s;
  REQUIRE(s.create_embedding("emb", 2).status == Status::ok);
  const std::int64_t ids[2] = {s.owned[0], s.owned[1]};
  const auto before0 = s.row("emb", ids[0], 2), before1 = s.row("emb", ids[1], 2);
  for (OptimizerKind k : {OptimizerKind::adagrad, OptimizerKind::adam}) {
    for (const float bad : {static_cast<float>(infinity), static_cast<float>(-infinity),
                            static_cast<float>(not_a_number)}) {
      INFO("kind " << static_cast<int>(k) << " gradient " << bad);
      // The first row's gradient is fine: it must not be applied either.
      const float grads[4] = {0.5f, -0.25f, 0.125f, bad};
      const Reply r =
          s.handle(MsgType::sparse_step,
                   SparseStepRequest{"emb", RowKind::node, 2, {k, 0.1, 1e-10, 0.9, 0.999}}.encode(),
                   {std::as_bytes(std::span(ids)), std::as_bytes(std::span(grads))});
      CHECK(r.status == Status::bad_request);
      CHECK_THAT(r.text(),
                 Catch::Contains("gradients must be finite") && Catch::Contains("request's row 1"));
    }
  }
  CHECK(s.row("emb", ids[0], 2) == before0);
  CHECK(s.row("emb", ids[1], 2) == before1);
  CHECK_FALSE(s.server->kv().storage().contains("emb.adagrad_sum"));
}

TEST_CASE("'.' and '..' are not tensor names, on the wire and in every storage",
          "[server][bad_input]") {
  Served s;
  for (const std::string bad : {".", "..", "node:a/.", "a/../b"}) {
    INFO(bad);
    const Reply r = s.create({bad, DType::float32, RowKind::node, s.num_nodes(), 1});
    CHECK(r.status == Status::bad_request);
    CHECK_THAT(r.text(), Catch::Contains("'.' or '..'"));
    CHECK_FALSE(s.server->kv().storage().contains(bad));
  }
  // Dots inside a name are fine.
  CHECK(s.create({"...", DType::float32, RowKind::node, s.num_nodes(), 1}).status == Status::ok);
  CHECK(s.create({".hidden", DType::float32, RowKind::node, s.num_nodes(), 1}).status ==
        Status::ok);
  auto mm = MmapStorage::create_dir(s.tmp / "mm");
  for (const std::string bad : {".", ".."}) {
    CHECK_THROWS_AS(mm.create({bad, DType::float32, 1, 1}), InvalidArgument);
    CHECK_FALSE(mm.contains(bad));
  }
  CHECK(mm.create({"...", DType::float32, 1, 1}));
}

TEST_CASE("quick_request lets only small row reads, writes and degree look-ups run inline",
          "[server]") {
  // What the socket thread may run itself must never wait or scan a partition.
  for (const MsgType t : {MsgType::ping, MsgType::metadata, MsgType::list_tensors, MsgType::pull,
                          MsgType::push, MsgType::push_add, MsgType::degrees}) {
    CHECK(quick_request(t, 0));
    CHECK(quick_request(t, quick_request_bytes));
    CHECK_FALSE(quick_request(t, quick_request_bytes + 1));
  }
  for (const MsgType t :
       {MsgType::barrier, MsgType::shutdown, MsgType::create_tensor, MsgType::delete_tensor,
        MsgType::init_rows, MsgType::sparse_step, MsgType::save_tensors, MsgType::load_tensors,
        MsgType::remove_checkpoint, MsgType::sample_neighbors, MsgType::sample_sources,
        MsgType::find_edges, MsgType::orig_ids, MsgType::hello, static_cast<MsgType>(999)})
    CHECK_FALSE(quick_request(t, 8));
}

TEST_CASE(
    "a count whose count * 8 wraps is bad_request on every ID-list request, never an "
    "internal error",
    "[server][bad_input]") {
  Served s;
  REQUIRE(s.create({"feat", DType::float32, RowKind::node, s.num_nodes(), 3}).status == Status::ok);
  // 2^61 IDs of 8 bytes is 2^64 bytes: 0 after wrapping, the size of an empty part.
  const std::int64_t wraps = std::int64_t{1} << 61;
  const std::span<const std::byte> empty;
  const std::vector<std::pair<MsgType, std::vector<std::byte>>> requests = {
      {MsgType::pull, RowsRequest{"feat", RowKind::node, wraps}.encode()},
      {MsgType::degrees, DegreesRequest{DegreeKind::in, wraps}.encode()},
      {MsgType::degrees, DegreesRequest{DegreeKind::out, wraps}.encode()},
      {MsgType::find_edges, FindEdgesRequest{wraps}.encode()},
      {MsgType::orig_ids, OrigIdsRequest{RowKind::node, wraps}.encode()},
      {MsgType::sample_neighbors,
       SampleRequest{.fanout = 5, .sampler = {"uniform", {}}, .count = wraps}.encode()},
      {MsgType::sample_sources,
       SampleRequest{.fanout = 5, .sampler = {"uniform", {}}, .count = wraps}.encode()},
  };
  for (const auto& [type, head] : requests) {
    INFO(msg_type_name(type));
    const Reply r = s.handle(type, head, {empty});
    CHECK(r.status == Status::bad_request);
    CHECK_THAT(r.text(), Catch::Contains("2305843009213693952"));
  }
  CHECK(s.handle(MsgType::push, RowsRequest{"feat", RowKind::node, wraps}.encode(), {empty, empty})
            .status == Status::bad_request);
  // Still serving.
  CHECK(s.row("feat", s.owned.front(), 3).size() == 3);
}

TEST_CASE(
    "a request whose reply would pass the frame limit is refused with frame_too_large before "
    "the server builds it: a pull of repeated IDs, a sample with a huge fanout",
    "[server][bad_input]") {
  Served s;
  // 4 KiB rows; a 1 MiB reply limit, so 300 rows (2.4 KB of request) ask for 1.2 MiB.
  REQUIRE(s.create({"wide", DType::float32, RowKind::node, s.num_nodes(), 1024}).status ==
          Status::ok);
  s.server->kv().set_max_reply_bytes(std::uint64_t{1} << 20);
  const std::vector<std::int64_t> repeated(300, s.owned.front());
  const Reply pull = s.handle(MsgType::pull, RowsRequest{"wide", RowKind::node, 300}.encode(),
                              {std::as_bytes(std::span(repeated))});
  CHECK(pull.status == Status::frame_too_large);
  CHECK_THAT(pull.text(), Catch::Contains("pull 'wide' of 300 rows: reply refused before "
                                          "building it: frame of 1228800 bytes; the limit is "
                                          "1048576 bytes"));
  // Just under the limit is served.
  const Reply fits = s.handle(MsgType::pull, RowsRequest{"wide", RowKind::node, 256}.encode(),
                              {std::as_bytes(std::span(repeated).first(256))});
  REQUIRE(fits.status == Status::ok);
  CHECK(fits.body.parts.at(0).size() == 256u * 4096u);
  // With replacement, one seed and fanout 2^24 would be 16.8M picks, 402 MB: refused at
  // the default limit (256 MiB) without sampling.
  s.server->kv().set_max_reply_bytes(default_max_frame_bytes);
  std::int64_t seed = -1;
  for (const std::int64_t v : s.owned)
    if (!s.server->in_degrees(std::span(&v, 1)).empty() &&
        s.server->in_degrees(std::span(&v, 1))[0] > 0) {
      seed = v;
      break;
    }
  REQUIRE(seed >= 0);
  const std::int64_t seeds[1] = {seed};
  const auto sample = [&](std::int64_t fanout, MsgType type = MsgType::sample_neighbors) {
    return s.handle(
        type,
        SampleRequest{.fanout = fanout, .sampler = {"uniform_replace", {}}, .count = 1}.encode(),
        {std::as_bytes(std::span(seeds))});
  };
  const Reply huge = sample(std::int64_t{1} << 24);
  CHECK(huge.status == Status::frame_too_large);
  CHECK_THAT(huge.text(), Catch::Contains("at most 16777216 picks") &&
                              Catch::Contains("frame of 402653184 bytes"));
  // Four listings of the seed at fanout 2^62 are 2^64 picks: a sum that wraps to 0 must
  // still be refused.
  const std::int64_t four[4] = {seed, seed, seed, seed};
  const Reply wrapped = s.handle(
      MsgType::sample_neighbors,
      SampleRequest{.fanout = std::int64_t{1} << 62, .sampler = {"uniform_replace", {}}, .count = 4}
          .encode(),
      {std::as_bytes(std::span(four))});
  CHECK(wrapped.status == Status::frame_too_large);
  CHECK_THAT(wrapped.text(), Catch::Contains("2^64 picks or more"));
  const Reply small = sample(1000);
  REQUIRE(small.status == Status::ok);
  CHECK(small.body.parts.at(0).size() == 1000u * 8u);
  // Without destinations and edge IDs a pick is 8 bytes (and the seed's count 8 more):
  // 2^25 picks pass the limit by the count's 8 bytes.
  const auto sources = [&](std::int64_t fanout) { return sample(fanout, MsgType::sample_sources); };
  const Reply too_many = sources(std::int64_t{1} << 25);
  CHECK(too_many.status == Status::frame_too_large);
  CHECK_THAT(too_many.text(), Catch::Contains("sample_sources of 1 seeds") &&
                                  Catch::Contains("at most 33554432 picks") &&
                                  Catch::Contains("frame of 268435464 bytes"));
  const Reply few = sources(1000);
  REQUIRE(few.status == Status::ok);
  REQUIRE(few.body.parts.size() == 2);
  CHECK(few.body.parts[0].size() == 8u);
  CHECK(few.body.parts[1].size() == 1000u * 8u);
}

TEST_CASE(
    "sample_sources answers sample_neighbors' picks as a count per seed and each pick's "
    "source, for any sampler the server holds",
    "[server][sampling]") {
  Served s;
  std::vector<std::int64_t> seeds = s.owned;
  std::reverse(seeds.begin(), seeds.end());  // request order, not the partition's
  for (const std::string sampler : {"uniform", "uniform_replace", "full", "labor"}) {
    INFO(sampler);
    const auto ask = [&](MsgType type) {
      return s.handle(type,
                      SampleRequest{.key = {.seed = 8, .epoch = 1},
                                    .fanout = 3,
                                    .sampler = {sampler, {}},
                                    .count = static_cast<std::int64_t>(seeds.size())}
                          .encode(),
                      {std::as_bytes(std::span(seeds))});
    };
    const Reply full = ask(MsgType::sample_neighbors);
    const Reply bare = ask(MsgType::sample_sources);
    REQUIRE(full.status == Status::ok);
    REQUIRE(bare.status == Status::ok);
    REQUIRE(full.body.parts.size() == 3);
    REQUIRE(bare.body.parts.size() == 2);
    const auto as_ids = [](std::span<const std::byte> p) {
      const auto* v = reinterpret_cast<const std::int64_t*>(p.data());
      return std::vector<std::int64_t>(v, v + p.size() / 8);
    };
    const auto src = as_ids(full.body.parts[0]), dst = as_ids(full.body.parts[1]);
    const auto counts = as_ids(bare.body.parts[0]);
    CHECK(as_ids(bare.body.parts[1]) == src);
    REQUIRE(counts.size() == seeds.size());
    std::vector<std::int64_t> expanded;
    for (std::size_t i = 0; i < seeds.size(); ++i)
      expanded.insert(expanded.end(), static_cast<std::size_t>(counts[i]), seeds[i]);
    CHECK(expanded == dst);
    CHECK(src.size() > seeds.size());
  }
  // A seed another partition owns is out_of_range, as for sample_neighbors.
  const auto& book = *s.server->partition().book.get_if<RangePartitionBook>();
  const auto foreign = book.owned_nodes(PartId{1});
  const std::int64_t theirs[1] = {foreign[0]};
  const Reply r =
      s.handle(MsgType::sample_sources,
               SampleRequest{.fanout = 3, .sampler = {"uniform", {}}, .count = 1}.encode(),
               {std::as_bytes(std::span(theirs))});
  CHECK(r.status == Status::out_of_range);
}

TEST_CASE(
    "a weighted sampler follows pushed probabilities: the site rebuilds what it derived "
    "from edge data once the data's write generation moves",
    "[server][sampling]") {
  Served s;
  const auto& book = *s.server->partition().book.get_if<RangePartitionBook>();
  const auto edges = book.owned_edges(PartId{0});
  REQUIRE(edges.size() > 10);
  const std::string stored = edge_data_name("p");
  REQUIRE(s.create({stored, DType::float32, RowKind::edge, s.server->kv().book().num_edges(), 1})
              .status == Status::ok);
  // Probability 1 on the edges whose global ID has parity `parity`, 0 on the others.
  const auto push_parity = [&](std::int64_t parity) {
    std::vector<float> p(edges.size());
    for (std::size_t i = 0; i < edges.size(); ++i) p[i] = edges[i] % 2 == parity ? 1.0f : 0.0f;
    const Reply r = s.handle(
        MsgType::push,
        RowsRequest{stored, RowKind::edge, static_cast<std::int64_t>(edges.size())}.encode(),
        {std::as_bytes(std::span(edges)), std::as_bytes(std::span(p))});
    REQUIRE(r.status == Status::ok);
  };
  // Every owned node as a seed; all the picks' edge IDs.
  const std::vector<std::int64_t> seeds = s.owned;
  const auto picked = [&] {
    const Reply r = s.handle(MsgType::sample_neighbors,
                             SampleRequest{.fanout = 3,
                                           .sampler = WeightedSampler::spec("p"),
                                           .count = static_cast<std::int64_t>(seeds.size())}
                                 .encode(),
                             {std::as_bytes(std::span(seeds))});
    REQUIRE(r.status == Status::ok);
    const auto p = r.body.parts.at(2);
    const auto* e = reinterpret_cast<const std::int64_t*>(p.data());
    return std::vector<std::int64_t>(e, e + p.size() / 8);
  };
  for (const std::int64_t parity : {0, 1, 0}) {
    INFO("probability 1 on edges of parity " << parity);
    push_parity(parity);
    const auto eids = picked();
    REQUIRE_FALSE(eids.empty());
    for (const std::int64_t e : eids) CHECK(e % 2 == parity);
  }
}

}  // namespace test_server_kv_requests
