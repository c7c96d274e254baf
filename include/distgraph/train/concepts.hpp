// TrainingBatch and BatchSource: what the trainer needs from a data loader and its batches.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "distgraph/sampling/block.hpp"

namespace distgraph {

/// A mini-batch the trainer can consume (NodeBatch models it): the blocks (input layer
/// first), the input nodes' features row-major `blocks[0].num_src() x feat_dim`, one label
/// per output node, and where its time went (`timings.sample_s`, `fetch_s`, `wait_s`).
template <class B>
concept TrainingBatch = requires(B& b) {
  { b.blocks } -> std::convertible_to<std::vector<Block>&>;
  { b.features } -> std::convertible_to<const std::vector<float>&>;
  { b.feat_dim } -> std::convertible_to<std::int64_t>;
  { b.labels } -> std::convertible_to<const std::vector<std::int64_t>&>;
  { b.timings.sample_s } -> std::convertible_to<double>;
  { b.timings.fetch_s } -> std::convertible_to<double>;
  { b.timings.wait_s } -> std::convertible_to<double>;
};

namespace detail {
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
}  // namespace detail

/// Where the trainer gets its batches (NodeDataLoader models it): `begin_epoch(e)` starts
/// epoch e, `next()` yields its batches in order and then nullopt, and `num_batches()`
/// says up front how many an epoch has (checked equal across trainers before each epoch).
template <class S>
concept BatchSource = requires(S& s, std::int64_t epoch) {
  s.begin_epoch(epoch);
  { s.num_batches() } -> std::convertible_to<std::int64_t>;
  requires detail::is_optional<decltype(s.next())>::value;
  requires TrainingBatch<typename decltype(s.next())::value_type>;
};

}  // namespace distgraph
