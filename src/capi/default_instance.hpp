// The default instance behind the OpenSHMEM C API: the only process-wide runtime pointer
// in symmem, owned by the C layer (the core keeps none).
#pragma once

#include "runtime/runtime_impl.hpp"

namespace symmem::capi {

extern Runtime::Impl* g_default;  // the selected instance (init.cpp keeps them all)
extern bool g_finalized;          // for the message of a call after shmem_finalize

[[noreturn]] void not_initialized(const char* call);

// The default instance, or a report naming `call` and the end of this PE.
inline Runtime::Impl* rt(const char* call) {
  Runtime::Impl* r = g_default;
  if (SYMMEM_UNLIKELY(r == nullptr)) not_initialized(call);
  return r;
}

}  // namespace symmem::capi
