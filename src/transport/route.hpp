// How each PE of a job is reached, decided once at init: PEs of this node (same host name
// and boot id, or the same SYMMEM_NODE_ID) share memory (kShm: inline loads and stores);
// the others are reached through UCX (kUcx; every peer with SYMMEM_TRANSPORT=ucx).
//
// Where a route plugs in: the data path tests one thing inline, `route != kShm`
// (Runtime::Impl::off_node), and every other route is taken out of line behind that branch
// (today Runtime::Impl::ucx_put / ucx_get / the UcxTransport calls). A new route is a value
// below, a transport object the runtime owns, and a case on that out-of-line side, so the
// shared-memory path stays a memcpy with no virtual call. A route chosen by the address
// rather than the PE (the device heap of the next issue) is found where an address leaves
// the host heap: Runtime::Impl::translate_static, the out-of-line second chance.
#pragma once

#include <cstdint>
#include <vector>

namespace symmem {

enum class Route : uint8_t {
  kShm = 0,   // inline: memcpy / atomics on the peer's mapped heap (transport/shm/shm_ops.hpp)
  kUcx = 1,   // out of line: transport/ucx
  kNone = 2,  // not reachable
  // 3: kDevice (next issue): memory of the GPU the PE is bound to, out of line like kUcx.
};

class RouteTable {
 public:
  RouteTable() = default;
  explicit RouteTable(std::vector<Route> r) : routes_(std::move(r)) {}
  Route operator[](int pe) const { return routes_[static_cast<size_t>(pe)]; }
  int size() const { return static_cast<int>(routes_.size()); }
  const Route* data() const { return routes_.data(); }
  bool all_shm() const {
    for (Route r : routes_)
      if (r != Route::kShm) return false;
    return true;
  }

 private:
  std::vector<Route> routes_;
};

}  // namespace symmem
