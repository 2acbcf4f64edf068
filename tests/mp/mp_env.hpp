// Shared state of a multi-PE test program of the C++ API (see mp_main.cpp).
#pragma once

#include "mp_gtest.hpp"
#include "symmem/symmem.hpp"

namespace mp {
symmem::Runtime& rt();
}  // namespace mp
