// How each PE of a job is reached, decided once at init: PEs of this node (same host name
// and boot id, or the same SYMMEM_NODE_ID) share memory (kShm: inline loads and stores);
// the others are reached through UCX (kUcx; every peer with SYMMEM_TRANSPORT=ucx).
#pragma once

#include <cstdint>
#include <vector>

namespace symmem {

enum class Route : uint8_t { kShm = 0, kUcx = 1, kNone = 2 };

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
