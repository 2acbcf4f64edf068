// The instruction sets the arithmetic reduction kernels are compiled for
// (coll/reduce_ops.hpp): the build's baseline (x86-64: SSE2) and, on x86-64, AVX2. The
// runtime picks one at init (SYMMEM_REDUCE_ISA) and the collectives index their kernels
// with it, once per kernel call over a chunk.
#pragma once

namespace symmem {

enum Isa : int { kIsaBase = 0, kIsaAvx2 = 1, kIsaCount = 2 };

// Whether this CPU and its OS (saved ymm state) run AVX2 code.
inline bool cpu_has_avx2() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

}  // namespace symmem
