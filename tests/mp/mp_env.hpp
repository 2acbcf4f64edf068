// Shared state of a multi-PE test program (see mp_main.cpp).
#pragma once

#include <memory>
#include <string>

#include "bootstrap/store.hpp"
#include "symmem/symmem.hpp"

namespace mp {
symmem::Runtime& rt();
// Combines a per-PE verdict across PEs out of band.
bool all_passed(bool mine, std::string* failing);
}  // namespace mp
