// Communication contexts. A context is an ordering / completion stream bound to a team:
// its operations take PE numbers relative to that team. The C handle shmem_ctx_t points
// at one of these. On the shm route every operation is complete when it returns, so a
// context's quiet is a memory fence of the calling thread and never waits for the
// operations of another context. Across nodes each context has a UCX worker of its own
// (UcxLane): the C calls on a context make it the thread's current lane (UcxLaneScope).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/runtime_impl.hpp"

struct symmem_team_s;  // a team of the team layer (opaque here)

struct symmem_ctx_s {
  uint64_t magic = 0;  // kCtxLive while valid
  symmem::Runtime::Impl* rt = nullptr;
  long options = 0;
  symmem_team_s* team = nullptr;  // null: the world team
  // Team-relative PE p is world PE pe_start + p * pe_stride, for 0 <= p < pe_count.
  int pe_start = 0, pe_stride = 1, pe_count = 0;
  std::thread::id owner;  // creating thread (SHMEM_CTX_PRIVATE)
  symmem::UcxLane* lane = nullptr;  // its own UCX worker (null: none, or no PE off the node)
};

namespace symmem {

inline constexpr uint64_t kCtxLive = 0x73796d63747821ull;
inline constexpr uint64_t kCtxDestroyed = 0x646561646374782dull;
inline constexpr long kCtxKnownOptions = (1L << 0) | (1L << 1) | (1L << 2);

// Owns the contexts of one runtime instance. Destroyed contexts are kept (marked) and
// reused, so a stale handle is reported as destroyed rather than read after free.
struct CtxPool {
  std::mutex mu;
  std::vector<std::unique_ptr<symmem_ctx_s>> all;
  std::vector<symmem_ctx_s*> free;
};

// Makes `lane` the calling thread's UCX lane for one call on a context (nothing when null:
// the default context, or every PE on this node).
class UcxLaneScope {
 public:
  explicit UcxLaneScope(UcxLane* lane) : set_(lane != nullptr) {
    if (SYMMEM_UNLIKELY(set_)) prev_ = UcxTransport::swap_lane(lane);
  }
  ~UcxLaneScope() {
    if (SYMMEM_UNLIKELY(set_)) UcxTransport::swap_lane(prev_);
  }
  UcxLaneScope(const UcxLaneScope&) = delete;
  UcxLaneScope& operator=(const UcxLaneScope&) = delete;

 private:
  bool set_;
  UcxLane* prev_ = nullptr;
};

// Creates a context on `rt` for the PEs pe_start + k*pe_stride (k < pe_count) of the
// world, tagged with `team` (null: the world team). Thread-safe; never fails.
symmem_ctx_s* ctx_create(Runtime::Impl& rt, long options, symmem_team_s* team, int pe_start, int pe_stride,
                         int pe_count);
// Quiets and releases `ctx` (which must be live).
void ctx_destroy(Runtime::Impl& rt, symmem_ctx_s* ctx);
// The completion and ordering of one live context (the C API's shmem_ctx_quiet/fence and
// the C++ API's Ctx): every operation issued on `ctx` is complete / ordered.
void ctx_quiet(Runtime::Impl& rt, symmem_ctx_s* ctx);
void ctx_fence(Runtime::Impl& rt, symmem_ctx_s* ctx);

}  // namespace symmem
