// C team handles: the predefined teams are small constants (so SHMEM_TEAM_WORLD is a
// constant expression and stays valid across shmem_finalize / shmem_init); teams made by a
// split are Team pointers of the default instance's registry.
#pragma once

#include "capi/default_instance.hpp"
#include "shmem.h"
#include "shmemx.h"
#include "team/team.hpp"

namespace symmem::capi {

// The team behind `h`, or nullptr for SHMEM_TEAM_INVALID.
inline TeamState* team_of(Runtime::Impl* r, shmem_team_t h) {
  uintptr_t v = reinterpret_cast<uintptr_t>(h);
  if (v == 0) return nullptr;
  if (v == reinterpret_cast<uintptr_t>(SHMEM_TEAM_WORLD)) return teams(*r).world();
  if (v == reinterpret_cast<uintptr_t>(SHMEM_TEAM_SHARED) || v == reinterpret_cast<uintptr_t>(SHMEMX_TEAM_NODE))
    return teams(*r).shared();
  return reinterpret_cast<TeamState*>(h);
}

inline shmem_team_t handle_of(TeamState* t) { return reinterpret_cast<shmem_team_t>(t); }

}  // namespace symmem::capi
