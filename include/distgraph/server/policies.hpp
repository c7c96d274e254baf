// Policies: one place that names a composition (book, transport, storage, sampler set) for
// DistGraph, the servers, StandaloneCluster, initialize() and the data loaders.
#pragma once

#include <concepts>

#include "distgraph/partition/any_partition_book.hpp"
#include "distgraph/partition/concepts.hpp"
#include "distgraph/sampling/sampler_set.hpp"
#include "distgraph/storage/concepts.hpp"
#include "distgraph/storage/mmap_storage.hpp"

namespace distgraph {

class AnyTransport;  // transport/any_transport.hpp: only clients need it complete

/// A composition: the policies a job's servers and trainers are built with, named once
/// (docs/GUIDE.md, "Compose your own types"). Override what differs from the defaults by
/// deriving, the rest is inherited:
///
///     struct MyPolicies : distgraph::DefaultPolicies {
///       using sampler_set = distgraph::BuiltinSamplers::with<TopWeightSampler>;
///     };
///
/// or spell all four: `Policies<RangePartitionBook, InProcessTransport, InMemoryStorage>`.
/// The transport is checked where a client is made (it is unused by servers).
template <PartitionBook Book = AnyPartitionBook, class T = AnyTransport, Storage S = MmapStorage,
          class Samplers = BuiltinSamplers>
struct Policies {
  static_assert(is_sampler_set_v<Samplers>, "Policies: the fourth policy must be a SamplerSet");
  using book_type = Book;
  using transport_type = T;
  using storage_type = S;
  using sampler_set = Samplers;
};

/// The default composition: the book the partition's files call for (range or basic),
/// the transport chosen at run time, the machine's shared memory, the built-in samplers.
/// What `distgraph train`/`serve` and initialize() use.
using DefaultPolicies = Policies<>;

/// A type naming the four policies (Policies or a struct derived from it).
template <class P>
concept Composition = requires {
  typename P::book_type;
  typename P::transport_type;
  typename P::storage_type;
  typename P::sampler_set;
}
&&PartitionBook<typename P::book_type>&& Storage<typename P::storage_type>&&
    is_sampler_set_v<typename P::sampler_set>;

namespace detail {
template <class... A>
struct compose;
template <>
struct compose<> {
  using type = DefaultPolicies;
};
template <class A>
struct compose<A> {
  using type = Policies<A>;
};
template <Composition P>
struct compose<P> {
  using type = P;
};
template <class B, class T>
struct compose<B, T> {
  using type = Policies<B, T>;
};
template <class B, class T, class S>
struct compose<B, T, S> {
  using type = Policies<B, T, S>;
};
template <class B, class T, class S, class Samplers>
struct compose<B, T, S, Samplers> {
  using type = Policies<B, T, S, Samplers>;
};

/// Servers were once templated on the storage alone: `GraphServer<InMemoryStorage>` still
/// means the default composition with that storage.
template <class X>
struct server_compose {
  using type = X;
};
template <Storage X>
struct server_compose<X> {
  using type = Policies<AnyPartitionBook, AnyTransport, X>;
};
}  // namespace detail

/// The composition named by a host's template arguments: none (the defaults), a
/// Composition, or positional policies (book, transport, storage[, sampler set]).
template <class... A>
using compose_t = typename detail::compose<A...>::type;

}  // namespace distgraph
