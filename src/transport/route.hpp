// How each PE of a job is reached, decided once at init. Today every PE of a job shares
// this node (kShm); the network route (UCX) plugs in here as a second kind.
#pragma once

#include <cstdint>
#include <vector>

namespace symmem {

enum class Route : uint8_t { kShm = 0, kNone = 1 };

class RouteTable {
 public:
  RouteTable() = default;
  explicit RouteTable(std::vector<Route> r) : routes_(std::move(r)) {}
  Route operator[](int pe) const { return routes_[static_cast<size_t>(pe)]; }
  int size() const { return static_cast<int>(routes_.size()); }
  bool all_shm() const {
    for (Route r : routes_)
      if (r != Route::kShm) return false;
    return true;
  }

 private:
  std::vector<Route> routes_;
};

}  // namespace symmem
