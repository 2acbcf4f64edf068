// Sandia OpenSHMEM's shmemx_ names of OpenSHMEM 1.6 routines (symmem/shmemx_sos.h): each
// one call of the standard routine, stamped from the same type tables.
#include <shmemx.h>

extern "C" {

#define SYMMEM_DEF_SOS_IB(T, N)                                                                        \
  void shmemx_##N##_ibput(T* d, const T* s, SYMMEM_IB_PARAMS) {                                         \
    shmem_##N##_ibput(d, s, dst, sst, bsize, nblocks, pe);                                               \
  }                                                                                                      \
  void shmemx_##N##_ibget(T* d, const T* s, SYMMEM_IB_PARAMS) {                                         \
    shmem_##N##_ibget(d, s, dst, sst, bsize, nblocks, pe);                                               \
  }                                                                                                      \
  void shmemx_ctx_##N##_ibput(shmem_ctx_t c, T* d, const T* s, SYMMEM_IB_PARAMS) {                      \
    shmem_ctx_##N##_ibput(c, d, s, dst, sst, bsize, nblocks, pe);                                        \
  }                                                                                                      \
  void shmemx_ctx_##N##_ibget(shmem_ctx_t c, T* d, const T* s, SYMMEM_IB_PARAMS) {                      \
    shmem_ctx_##N##_ibget(c, d, s, dst, sst, bsize, nblocks, pe);                                        \
  }
SHMEM_RMA_TYPES(SYMMEM_DEF_SOS_IB)
#undef SYMMEM_DEF_SOS_IB

#define SYMMEM_DEF_SOS_IB_SIZED(BITS, BYTES)                                                           \
  void shmemx_ibput##BITS(void* d, const void* s, SYMMEM_IB_PARAMS) {                                   \
    shmem_ibput##BITS(d, s, dst, sst, bsize, nblocks, pe);                                               \
  }                                                                                                      \
  void shmemx_ibget##BITS(void* d, const void* s, SYMMEM_IB_PARAMS) {                                   \
    shmem_ibget##BITS(d, s, dst, sst, bsize, nblocks, pe);                                               \
  }                                                                                                      \
  void shmemx_ctx_ibput##BITS(shmem_ctx_t c, void* d, const void* s, SYMMEM_IB_PARAMS) {                \
    shmem_ctx_ibput##BITS(c, d, s, dst, sst, bsize, nblocks, pe);                                        \
  }                                                                                                      \
  void shmemx_ctx_ibget##BITS(shmem_ctx_t c, void* d, const void* s, SYMMEM_IB_PARAMS) {                \
    shmem_ctx_ibget##BITS(c, d, s, dst, sst, bsize, nblocks, pe);                                        \
  }
SHMEM_RMA_SIZES(SYMMEM_DEF_SOS_IB_SIZED)
#undef SYMMEM_DEF_SOS_IB_SIZED

void shmemx_signal_set(uint64_t* sig, uint64_t v, int pe) { shmem_signal_set(sig, v, pe); }
void shmemx_signal_add(uint64_t* sig, uint64_t v, int pe) { shmem_signal_add(sig, v, pe); }
void shmemx_ctx_signal_set(shmem_ctx_t c, uint64_t* sig, uint64_t v, int pe) { shmem_ctx_signal_set(c, sig, v, pe); }
void shmemx_ctx_signal_add(shmem_ctx_t c, uint64_t* sig, uint64_t v, int pe) { shmem_ctx_signal_add(c, sig, v, pe); }

void shmemx_query_initialized(int* initialized) { shmem_query_initialized(initialized); }

#define SYMMEM_DEF_SOS_SCAN(T, N, OP)                                                                  \
  int shmemx_##N##_sum_inscan(shmem_team_t t, T* d, const T* s, size_t n) {                             \
    return shmem_##N##_sum_inscan(t, d, s, n);                                                           \
  }                                                                                                      \
  int shmemx_##N##_sum_exscan(shmem_team_t t, T* d, const T* s, size_t n) {                             \
    return shmem_##N##_sum_exscan(t, d, s, n);                                                           \
  }
SHMEM_REDUCE_ARITH_TYPES(SYMMEM_DEF_SOS_SCAN, sum)
#undef SYMMEM_DEF_SOS_SCAN

}  // extern "C"
