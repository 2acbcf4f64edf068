// Shared state of a multi-PE test program of the C++ API (see mp_main.cpp).
#pragma once

#include "mp_gtest.hpp"
#include "symmem/symmem.hpp"

namespace mp {
symmem::Runtime& rt();
// Whether world PE `pe` shares this PE's node (TEAM_SHARED): then ptr() gives load/store
// access to its memory; across emulated or real nodes it is reached through UCX only.
inline bool on_my_node(int pe) { return rt().team_world().translate_pe(pe, rt().team_shared()) >= 0; }
}  // namespace mp
