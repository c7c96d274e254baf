// Must not compile: KVClient is given a transport whose call() takes no deadline (it would
// wait forever), so it is not a Transport. With DISTGRAPH_COMPILE_FAIL_FIXED it is one.
#include "distgraph/distributed/kv_client.hpp"
#include "distgraph/partition/range_partition_book.hpp"
#include "distgraph/storage/in_memory_storage.hpp"

namespace {

// Declarations are enough: the concept only asks whether the calls are well-formed.
struct ForeverTransport {
  using policy_category = distgraph::transport_tag;

  int num_servers() const;
  distgraph::PendingCall send(int server, distgraph::MsgType type, distgraph::Message m);
#ifdef DISTGRAPH_COMPILE_FAIL_FIXED
  distgraph::Reply call(int server, distgraph::MsgType type, distgraph::Message m,
                        distgraph::Deadline deadline);
#else
  // The defect: no deadline.
  distgraph::Reply call(int server, distgraph::MsgType type, distgraph::Message m);
#endif
};

}  // namespace

std::size_t client_size() {
  return sizeof(distgraph::KVClient<distgraph::RangePartitionBook, ForeverTransport,
                                    distgraph::InMemoryStorage>);
}
