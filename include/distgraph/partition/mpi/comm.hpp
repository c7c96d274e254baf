// What the distributed partitioner needs of MPI: errors as exceptions, collectives on
// int64, an all-to-all exchange in bounded pieces, and failing together.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "distgraph/core/error.hpp"

namespace distgraph::mpi {

/// Another rank failed (its own error was reported there): this rank stops as well.
class PeerFailed : public Error {
 public:
  explicit PeerFailed(const std::string& what) : Error(what) {}
};

/// Throws PartitionError "MPI <what>: <MPI's message>" unless `rc` is MPI_SUCCESS.
inline void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw PartitionError(std::string("MPI ") + what + ": " + std::string(text, len));
}

/// True when this process was started by an MPI launcher (mpirun, mpiexec, srun with PMI):
/// checked before MPI_Init, so that a plain run can say so in one line instead of
/// becoming a job of one rank.
inline bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE",
                          "MPI_LOCALNRANKS", "HYDRA_CONTROL_FD"})
    if (std::getenv(var) != nullptr) return true;
  return false;
}

/// A communicator with its rank and size.
struct Comm {
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0, size = 1;

  explicit Comm(MPI_Comm c = MPI_COMM_WORLD) : comm(c) {
    check(MPI_Comm_rank(c, &rank), "Comm_rank");
    check(MPI_Comm_size(c, &size), "Comm_size");
  }
  void barrier() const { check(MPI_Barrier(comm), "Barrier"); }
  std::int64_t sum(std::int64_t x) const {
    std::int64_t out = 0;
    check(MPI_Allreduce(&x, &out, 1, MPI_INT64_T, MPI_SUM, comm), "Allreduce");
    return out;
  }
  std::int64_t max(std::int64_t x) const {
    std::int64_t out = 0;
    check(MPI_Allreduce(&x, &out, 1, MPI_INT64_T, MPI_MAX, comm), "Allreduce");
    return out;
  }
  /// Element-wise sum over ranks, in place (in pieces: MPI's counts are ints).
  void sum(std::span<std::int64_t> xs) const {
    constexpr std::size_t piece = std::size_t{1} << 28;
    for (std::size_t at = 0; at < xs.size(); at += piece)
      check(MPI_Allreduce(MPI_IN_PLACE, xs.data() + at,
                          static_cast<int>(std::min(piece, xs.size() - at)), MPI_INT64_T, MPI_SUM,
                          comm),
            "Allreduce");
  }
  /// Sum of x over the ranks before this one.
  std::int64_t exclusive_sum(std::int64_t x) const {
    std::int64_t out = 0;
    check(MPI_Exscan(&x, &out, 1, MPI_INT64_T, MPI_SUM, comm), "Exscan");
    return rank == 0 ? 0 : out;
  }
  /// Every rank's `xs` (equal lengths), rank after rank.
  std::vector<std::int64_t> all_gather(std::span<const std::int64_t> xs) const {
    std::vector<std::int64_t> out(xs.size() * static_cast<std::size_t>(size));
    check(MPI_Allgather(xs.data(), static_cast<int>(xs.size()), MPI_INT64_T, out.data(),
                        static_cast<int>(xs.size()), MPI_INT64_T, comm),
          "Allgather");
    return out;
  }
  /// Every rank's `xs` (any lengths), rank after rank.
  std::vector<std::int64_t> all_gather_v(std::span<const std::int64_t> xs) const {
    const std::int64_t mine = static_cast<std::int64_t>(xs.size());
    const auto sizes = all_gather(std::span(&mine, 1));
    std::vector<int> counts(sizes.size()), displs(sizes.size());
    int total = 0;
    for (std::size_t r = 0; r < sizes.size(); ++r) {
      counts[r] = static_cast<int>(sizes[r]);
      displs[r] = total;
      total += counts[r];
    }
    std::vector<std::int64_t> out(static_cast<std::size_t>(total));
    check(MPI_Allgatherv(xs.data(), static_cast<int>(xs.size()), MPI_INT64_T, out.data(),
                         counts.data(), displs.data(), MPI_INT64_T, comm),
          "Allgatherv");
    return out;
  }
  /// Rank 0's value of `x`, on every rank.
  std::int64_t broadcast(std::int64_t x) const {
    check(MPI_Bcast(&x, 1, MPI_INT64_T, 0, comm), "Bcast");
    return x;
  }
};

/// Set when this rank's error was seen by every rank (all_or_none, a failed collective
/// check): they all stop together, so the process may finalize MPI instead of aborting the
/// job. Any other error leaves the other ranks waiting in a collective: abort.
inline bool& failure_agreed() {
  static bool agreed = false;
  return agreed;
}

/// Runs `step` on every rank; if it throws anywhere, it throws everywhere: the failing ranks
/// rethrow their own error, the others PeerFailed. So no rank goes on to write while
/// another has found bad input, and none waits in a collective for a rank that gave up.
template <class Step>
void all_or_none(const Comm& c, Step&& step) {
  std::exception_ptr error;
  try {
    step();
  } catch (...) {
    error = std::current_exception();
  }
  const std::int64_t failed = c.max(error ? c.rank + 1 : 0);
  if (failed > 0) failure_agreed() = true;
  if (error) std::rethrow_exception(error);
  if (failed > 0)
    throw PeerFailed("rank " + std::to_string(failed - 1) + " failed (its error is above)");
}

/// All-to-all of variable record counts: `count[d]` records for rank d, each `width`
/// elements of T, produced in order by `fill(d, out, k)`, which writes the next k records
/// for d. Runs in rounds of at most `piece_bytes` per pair of ranks (MPI_Alltoallv), so
/// MPI's int counts never overflow and no send buffer holds more than one round. Returns
/// every rank's records for this one, rank after rank; `from` (when given) gets the
/// num_ranks + 1 record offsets of each sender's run.
template <class T, class Fill>
std::vector<T> exchange_records(const Comm& c, const std::vector<std::int64_t>& count,
                                std::size_t width, Fill&& fill,
                                std::vector<std::int64_t>* from = nullptr,
                                std::size_t piece_bytes = std::size_t{32} << 20) {
  static_assert(std::is_trivially_copyable_v<T>);
  const auto p = static_cast<std::size_t>(c.size);
  const std::size_t rb = width * sizeof(T);
  std::vector<std::int64_t> recv_count(p);
  check(MPI_Alltoall(count.data(), 1, MPI_INT64_T, recv_count.data(), 1, MPI_INT64_T, c.comm),
        "Alltoall");
  std::vector<std::int64_t> offset(p + 1, 0);
  for (std::size_t s = 0; s < p; ++s) offset[s + 1] = offset[s] + recv_count[s];
  std::vector<T> result(static_cast<std::size_t>(offset[p]) * width);
  auto* result_bytes = reinterpret_cast<std::byte*>(result.data());
  // A round's displacements are ints over all ranks together. The width is the same on
  // every rank, so this fails everywhere or nowhere.
  piece_bytes = std::min(piece_bytes, static_cast<std::size_t>(INT32_MAX) / p);
  if (rb > piece_bytes)
    throw InvalidArgument("exchange: records of " + std::to_string(rb) + " bytes; at most " +
                          std::to_string(piece_bytes) + " with " + std::to_string(p) + " ranks");
  const auto per_round = static_cast<std::int64_t>(std::max<std::size_t>(1, piece_bytes / rb));
  std::int64_t most = 0;
  for (std::size_t d = 0; d < p; ++d) most = std::max({most, count[d], recv_count[d]});
  const std::int64_t rounds = c.max((most + per_round - 1) / per_round);
  std::vector<std::int64_t> sent(p, 0), got(p, 0);
  std::vector<int> scount(p), sdispl(p), rcount(p), rdispl(p);
  std::vector<T> sendbuf;
  std::vector<std::byte> recvbuf;
  for (std::int64_t round = 0; round < rounds; ++round) {
    std::size_t stotal = 0, rtotal = 0;
    for (std::size_t d = 0; d < p; ++d) {
      const auto k = std::min(per_round, count[d] - sent[d]);
      scount[d] = static_cast<int>(static_cast<std::size_t>(k) * rb);
      sdispl[d] = static_cast<int>(stotal);
      stotal += static_cast<std::size_t>(scount[d]);
      const auto r = std::min(per_round, recv_count[d] - got[d]);
      rcount[d] = static_cast<int>(static_cast<std::size_t>(r) * rb);
      rdispl[d] = static_cast<int>(rtotal);
      rtotal += static_cast<std::size_t>(rcount[d]);
    }
    sendbuf.resize(stotal / sizeof(T));
    recvbuf.resize(rtotal);
    for (std::size_t d = 0; d < p; ++d) {
      const auto k = static_cast<std::int64_t>(static_cast<std::size_t>(scount[d]) / rb);
      if (k > 0) fill(static_cast<int>(d), sendbuf.data() + sdispl[d] / sizeof(T), k);
      sent[d] += k;
    }
    check(MPI_Alltoallv(sendbuf.data(), scount.data(), sdispl.data(), MPI_BYTE, recvbuf.data(),
                        rcount.data(), rdispl.data(), MPI_BYTE, c.comm),
          "Alltoallv");
    for (std::size_t s = 0; s < p; ++s) {
      if (rcount[s] > 0)
        std::memcpy(result_bytes + static_cast<std::size_t>(offset[s] + got[s]) * rb,
                    recvbuf.data() + rdispl[s], static_cast<std::size_t>(rcount[s]));
      got[s] += static_cast<std::int64_t>(static_cast<std::size_t>(rcount[s]) / rb);
    }
  }
  if (from != nullptr) *from = std::move(offset);
  return result;
}

/// exchange_records of whole vectors: `out[d]` goes to rank d.
template <class T>
std::vector<T> exchange(const Comm& c, const std::vector<std::vector<T>>& out,
                        std::vector<std::int64_t>* from = nullptr) {
  std::vector<std::int64_t> count(out.size());
  for (std::size_t d = 0; d < out.size(); ++d) count[d] = static_cast<std::int64_t>(out[d].size());
  std::vector<std::size_t> at(out.size(), 0);
  return exchange_records<T>(
      c, count, 1,
      [&](int d, T* dst, std::int64_t k) {
        const auto i = static_cast<std::size_t>(d);
        std::copy_n(out[i].data() + at[i], k, dst);
        at[i] += static_cast<std::size_t>(k);
      },
      from);
}

}  // namespace distgraph::mpi
