// The OpenSHMEM C API: each function is a thin skin over Runtime::Impl of the default
// instance (one check, one call). Typed families are stamped from the type table.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <new>

#include "capi/default_instance.hpp"
#include "common/log.hpp"
#include "shmem.h"
#include "shmemx.h"

namespace symmem::capi {

Runtime::Impl* g_default = nullptr;
bool g_finalized = false;

void not_initialized(const char* call) {
  log_pe(LogLevel::kError, log_pe_default(), "%s: called %s; the OpenSHMEM library is not initialized", call,
         g_finalized ? "after shmem_finalize" : "before shmem_init");
  std::fflush(nullptr);
  _exit(1);
}

}  // namespace symmem::capi

using symmem::capi::rt;

extern "C" {

// shmem_init and shmem_finalize are in init.cpp, with the other init calls.

void shmem_global_exit(int status) { rt("shmem_global_exit")->global_exit(status); }
int shmem_my_pe(void) { return rt("shmem_my_pe")->rank_; }
int shmem_n_pes(void) { return rt("shmem_n_pes")->npes_; }
// Accessible = reachable by the data transfer routines (shared memory or UCX); shmem_ptr
// alone is limited to the PEs of this node.
int shmem_pe_accessible(int pe) {
  auto* r = rt("shmem_pe_accessible");
  return pe >= 0 && pe < r->npes_;
}
int shmem_addr_accessible(const void* addr, int pe) {
  auto* r = rt("shmem_addr_accessible");
  return pe >= 0 && pe < r->npes_ && (r->in_heap(addr) || r->in_static(addr));
}
void* shmem_ptr(const void* dest, int pe) { return rt("shmem_ptr")->ptr(dest, pe); }

void shmem_info_get_version(int* major, int* minor) {
  *major = SHMEM_MAJOR_VERSION;
  *minor = SHMEM_MINOR_VERSION;
}
void shmem_info_get_name(char* name) {
  std::strncpy(name, SHMEM_VENDOR_STRING, SHMEM_MAX_NAME_LEN - 1);
  name[SHMEM_MAX_NAME_LEN - 1] = '\0';
}

// ---- memory management ----
void* shmem_malloc(size_t size) {
  return rt("shmem_malloc")->collective_alloc("shmem_malloc", symmem::AllocOp::kMalloc, size, 64, nullptr);
}
void* shmem_calloc(size_t count, size_t size) {
  auto* r = rt("shmem_calloc");
  // An overflowing count x size is more than any heap holds: NULL on every PE with the
  // heap-exhausted warning, as C's calloc (SIZE_MAX never fits; the PEs still meet, so a
  // PE that asked for something else is reported as for any other size).
  const size_t bytes = size && count > SIZE_MAX / size ? SIZE_MAX : count * size;
  return r->collective_alloc("shmem_calloc", symmem::AllocOp::kCalloc, bytes, 64, nullptr);
}
void* shmem_align(size_t alignment, size_t size) {
  auto* r = rt("shmem_align");
  if (alignment == 0 || (alignment & (alignment - 1)))
    r->fail(symmem::Errc::kInvalidArgument, "shmem_align", "alignment %zu is not a power of two", alignment);
  return r->collective_alloc("shmem_align", symmem::AllocOp::kAlign, size, alignment, nullptr);
}
void* shmem_realloc(void* ptr, size_t size) {
  auto* r = rt("shmem_realloc");
  if (!ptr) return r->collective_alloc("shmem_realloc", symmem::AllocOp::kMalloc, size, 64, nullptr);
  return r->collective_alloc("shmem_realloc", symmem::AllocOp::kRealloc, size, 64, ptr);
}
void shmem_free(void* ptr) { rt("shmem_free")->collective_free("shmem_free", ptr); }

// Every hint but SHMEMX_MALLOC_DEVICE gives shmem_malloc's memory: on the shm route a
// remote atomic or signal update is a CPU atomic on the peer's mapped heap wherever the
// block lies, and the standard makes unusable hints plain shmem_malloc. The device hint
// places the block in the device heap (runtime/device.cpp).
void* shmem_malloc_with_hints(size_t size, long hints) {
  auto* r = rt("shmem_malloc_with_hints");
  if (hints & SHMEMX_MALLOC_DEVICE) return r->device_alloc("shmem_malloc_with_hints", size, 64);
  return r->collective_alloc("shmem_malloc_with_hints", symmem::AllocOp::kMalloc, size, 64, nullptr);
}

int shmemx_device_heap_query(shmemx_device_heap_t* out) {
  auto* r = rt("shmemx_device_heap_query");
  if (!out || !r->dev_heap_) return -1;
  out->base = reinterpret_cast<void*>(r->dev_heap_->base());
  out->heap_size = r->dev_heap_->size();
  out->my_pe = r->rank_;
  out->n_pes = r->npes_;
  out->device = r->dev_heap_->device();
  out->wait_record = static_cast<shmemx_device_wait_record_t*>(r->dev_heap_->wait_record());
  return 0;
}

const shmemx_device_wait_record_t* shmemx_device_wait_record(void) {
  // Not rt(): a program that calls this after a failure may be past shmem_finalize.
  auto* r = symmem::capi::g_default;
  return r && r->heap_ ? &r->dfx_.page()->gpu.rec : nullptr;
}

// ---- deprecated names (start_pes is in init.cpp) ----
int _my_pe(void) { return rt("_my_pe")->rank_; }
int _num_pes(void) { return rt("_num_pes")->npes_; }
void* shmalloc(size_t size) {
  return rt("shmalloc")->collective_alloc("shmalloc", symmem::AllocOp::kMalloc, size, 64, nullptr);
}
void shfree(void* ptr) { rt("shfree")->collective_free("shfree", ptr); }
void* shrealloc(void* ptr, size_t size) {
  auto* r = rt("shrealloc");
  if (!ptr) return r->collective_alloc("shrealloc", symmem::AllocOp::kMalloc, size, 64, nullptr);
  return r->collective_alloc("shrealloc", symmem::AllocOp::kRealloc, size, 64, ptr);
}
void* shmemalign(size_t alignment, size_t size) {
  auto* r = rt("shmemalign");
  if (alignment == 0 || (alignment & (alignment - 1)))
    r->fail(symmem::Errc::kInvalidArgument, "shmemalign", "alignment %zu is not a power of two", alignment);
  return r->collective_alloc("shmemalign", symmem::AllocOp::kAlign, size, alignment, nullptr);
}
// Cache management: nothing to do on cache-coherent hardware.
void shmem_clear_cache_inv(void) {}
void shmem_set_cache_inv(void) {}
void shmem_clear_cache_line_inv(void*) {}
void shmem_set_cache_line_inv(void*) {}
void shmem_udcflush(void) {}
void shmem_udcflush_line(void*) {}

// The profiling interface's control call: nothing to control in the library itself.
void shmem_pcontrol(const int, ...) {}

// ---- RMA ----
void shmem_putmem(void* d, const void* s, size_t n, int pe) { rt("shmem_putmem")->put("shmem_putmem", d, s, n, pe); }
void shmem_getmem(void* d, const void* s, size_t n, int pe) { rt("shmem_getmem")->get("shmem_getmem", d, s, n, pe); }
void shmem_putmem_nbi(void* d, const void* s, size_t n, int pe) {
  rt("shmem_putmem_nbi")->put_nbi("shmem_putmem_nbi", d, s, n, pe);
}
void shmem_getmem_nbi(void* d, const void* s, size_t n, int pe) {
  rt("shmem_getmem_nbi")->get_nbi("shmem_getmem_nbi", d, s, n, pe);
}

#define SYMMEM_DEF_RMA(T, N)                                                                 \
  void shmem_##N##_put(T* d, const T* s, size_t n, int pe) {                                 \
    rt("shmem_" #N "_put")->put("shmem_" #N "_put", d, s, n * sizeof(T), pe);                \
  }                                                                                          \
  void shmem_##N##_get(T* d, const T* s, size_t n, int pe) {                                 \
    rt("shmem_" #N "_get")->get("shmem_" #N "_get", d, s, n * sizeof(T), pe);                \
  }                                                                                          \
  void shmem_##N##_put_nbi(T* d, const T* s, size_t n, int pe) {                             \
    rt("shmem_" #N "_put_nbi")->put_nbi("shmem_" #N "_put_nbi", d, s, n * sizeof(T), pe);        \
  }                                                                                          \
  void shmem_##N##_get_nbi(T* d, const T* s, size_t n, int pe) {                             \
    rt("shmem_" #N "_get_nbi")->get_nbi("shmem_" #N "_get_nbi", d, s, n * sizeof(T), pe);        \
  }                                                                                          \
  void shmem_##N##_p(T* d, T v, int pe) { rt("shmem_" #N "_p")->p("shmem_" #N "_p", d, v, pe); } \
  T shmem_##N##_g(const T* s, int pe) { return rt("shmem_" #N "_g")->g("shmem_" #N "_g", s, pe); }
SHMEM_RMA_TYPES(SYMMEM_DEF_RMA)
#undef SYMMEM_DEF_RMA

#define SYMMEM_DEF_SIZED(BITS, BYTES)                                                        \
  void shmem_put##BITS(void* d, const void* s, size_t n, int pe) {                           \
    rt("shmem_put" #BITS)->put("shmem_put" #BITS, d, s, n * BYTES, pe);                      \
  }                                                                                          \
  void shmem_get##BITS(void* d, const void* s, size_t n, int pe) {                           \
    rt("shmem_get" #BITS)->get("shmem_get" #BITS, d, s, n * BYTES, pe);                      \
  }                                                                                          \
  void shmem_put##BITS##_nbi(void* d, const void* s, size_t n, int pe) {                     \
    rt("shmem_put" #BITS "_nbi")->put_nbi("shmem_put" #BITS "_nbi", d, s, n * BYTES, pe);        \
  }                                                                                          \
  void shmem_get##BITS##_nbi(void* d, const void* s, size_t n, int pe) {                     \
    rt("shmem_get" #BITS "_nbi")->get_nbi("shmem_get" #BITS "_nbi", d, s, n * BYTES, pe);        \
  }
SHMEM_RMA_SIZES(SYMMEM_DEF_SIZED)
#undef SYMMEM_DEF_SIZED

// ---- ordering and synchronisation ----
void shmem_fence(void) { rt("shmem_fence")->fence(); }
void shmem_quiet(void) { rt("shmem_quiet")->quiet(); }
void shmem_barrier_all(void) { rt("shmem_barrier_all")->barrier_all(); }
void shmem_sync_all(void) { rt("shmem_sync_all")->sync_all(); }

}  // extern "C"
