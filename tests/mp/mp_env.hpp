// Shared state of a multi-PE test program of the C++ API (see mp_main.cpp).
#pragma once

#include "mp_gtest.hpp"
#include "symmem/symmem.hpp"

namespace mp {
symmem::Runtime& rt();
// Whether world PE `pe` shares this PE's node (TEAM_SHARED): then ptr() gives load/store
// access to its memory; across emulated or real nodes it is reached through UCX only.
inline bool on_my_node(int pe) { return rt().team_world().translate_pe(pe, rt().team_shared()) >= 0; }
// Whether world PEs a and b share a node, the same answer on every PE (a collective: a
// test that skips on it keeps every PE's collectives matched).
inline bool same_node(int a, int b) {
  auto v = rt().alloc<int>(2);
  v[0] = rt().my_pe() == a && on_my_node(b) ? 1 : 0;
  rt().team_world().reduce<symmem::ReduceOp::kMax>(v.subspan(1, 1), v.subspan(0, 1));
  const bool same = v[1] != 0;
  rt().free(v);
  return same;
}
}  // namespace mp
