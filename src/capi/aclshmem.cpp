// The part of symmem/aclshmem.h that needs state: aclshmem names teams with small
// integers (ACLSHMEM_TEAM_WORLD = 0), symmem with handles. One table per process, in the
// C layer with the rest of the C API's state; a destroyed team's slot is reused.
#include <mutex>
#include <vector>

#include "common/log.hpp"
#include "symmem/aclshmem.h"

namespace {

std::mutex g_mu;
std::vector<shmem_team_t>& table() {
  static auto* t = new std::vector<shmem_team_t>{SHMEM_TEAM_WORLD};
  return *t;
}

int add(shmem_team_t t) {
  std::lock_guard<std::mutex> lk(g_mu);
  auto& v = table();
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] == SHMEM_TEAM_INVALID) {
      v[i] = t;
      return static_cast<int>(i);
    }
  v.push_back(t);
  return static_cast<int>(v.size() - 1);
}

}  // namespace

extern "C" {

shmem_team_t symmem_aclshmem_team(aclshmem_team_t team) {
  std::lock_guard<std::mutex> lk(g_mu);
  auto& v = table();
  if (team < 0 || static_cast<size_t>(team) >= v.size()) return SHMEM_TEAM_INVALID;
  return v[static_cast<size_t>(team)];
}

int aclshmem_team_split_strided(aclshmem_team_t parent, int pe_start, int pe_stride, int pe_size,
                                aclshmem_team_t* new_team) {
  if (!new_team) return ACLSHMEM_INVALID_PARAM;
  *new_team = ACLSHMEM_TEAM_INVALID;
  shmem_team_t t = SHMEM_TEAM_INVALID;
  int rc = shmem_team_split_strided(symmem_aclshmem_team(parent), pe_start, pe_stride, pe_size, nullptr, 0, &t);
  if (rc != 0) return ACLSHMEM_INVALID_PARAM;
  if (t != SHMEM_TEAM_INVALID) *new_team = add(t);  // PEs outside the new team get INVALID
  return ACLSHMEM_SUCCESS;
}

int aclshmem_team_split_2d(aclshmem_team_t parent, int x_range, aclshmem_team_t* x_team, aclshmem_team_t* y_team) {
  if (!x_team || !y_team) return ACLSHMEM_INVALID_PARAM;
  *x_team = *y_team = ACLSHMEM_TEAM_INVALID;
  shmem_team_t x = SHMEM_TEAM_INVALID, y = SHMEM_TEAM_INVALID;
  int rc = shmem_team_split_2d(symmem_aclshmem_team(parent), x_range, nullptr, 0, &x, nullptr, 0, &y);
  if (rc != 0) return ACLSHMEM_INVALID_PARAM;
  if (x != SHMEM_TEAM_INVALID) *x_team = add(x);
  if (y != SHMEM_TEAM_INVALID) *y_team = add(y);
  return ACLSHMEM_SUCCESS;
}

void aclshmem_team_destroy(aclshmem_team_t team) {
  if (team <= ACLSHMEM_TEAM_WORLD) return;  // the world team is not destroyed
  shmem_team_t t;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    auto& v = table();
    if (static_cast<size_t>(team) >= v.size() || v[static_cast<size_t>(team)] == SHMEM_TEAM_INVALID) return;
    t = v[static_cast<size_t>(team)];
    v[static_cast<size_t>(team)] = SHMEM_TEAM_INVALID;
  }
  shmem_team_destroy(t);
}

}  // extern "C"
