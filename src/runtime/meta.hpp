// Layout of a PE's metadata region (outside the user heap, same offsets on every PE).
// Fixed part first; the rest is carved deterministically at init by MetaArena for teams,
// signals and collective scratch, so every PE finds a peer's object at the same offset.
#pragma once

#include <atomic>
#include <cstdint>

#include "runtime/dfx_page.hpp"

namespace symmem {

inline constexpr uint64_t kMetaMagic = 0x73796d6d656d3031ull;  // "symmem01"
inline constexpr int kMaxBarrierRounds = 32;

// A 32-bit word another PE can wait on. The sleeper count lives on the same cache line,
// so the writer learns whether to issue a futex wake from the line it just wrote.
struct alignas(64) WaitWord {
  std::atomic<uint32_t> v{0};
  std::atomic<uint32_t> sleepers{0};
};
static_assert(sizeof(WaitWord) == 64);

// Two PEs' words on one cache line, for the rounds of a sync in which two PEs wait for each
// other (PairWord): each stores into its own half and waits on the other's, so the line a PE
// fetches to store its arrival already carries the other's, where a word in each PE's
// metadata moves one line each way. v and sleepers as in WaitWord.
struct WaitHalf {
  std::atomic<uint32_t> v{0};
  std::atomic<uint32_t> sleepers{0};
};
struct alignas(64) PairWord {
  WaitHalf half[2];  // [0]: the lower member of the pair
};
static_assert(sizeof(PairWord) == 64);
inline constexpr int kPairRounds = 16;  // pairwise syncs for groups of up to 2^16 PEs

// What each PE declares for its n-th collective allocation call, read by every peer
// after the call's barrier to check that all PEs made the same call.
// A call that grows the committed part of the heaps has a second round: `need` > 0 on some
// PE after the first barrier means every PE commits, then publishes commit_ok under
// commit_seq, and after a second barrier all keep the block or all roll back.
struct alignas(64) AllocRecord {
  std::atomic<uint64_t> seq{0};
  uint32_t op = 0;    // AllocOp
  uint32_t ok = 0;    // 1 when this PE could allocate and the node can back its commit
  uint64_t size = 0;
  uint64_t align = 0;
  uint64_t offset = 0;
  uint64_t need = 0;  // bytes this call commits on this PE (0: committed already)
  std::atomic<uint64_t> commit_seq{0};
  uint32_t commit_ok = 0;
};
static_assert(sizeof(AllocRecord) == 64);

// Synchronisation state of one set of PEs (the world, later each team), at the same
// metadata offset on every PE. When every PE has a core: a group of 2^k PEs pairs them off
// in each round (round r: member m with m ^ 2^r) on the lower member's `pair[r]`; other
// sizes use dissemination on `round` (one flag per round). The central algorithm uses the
// root PE's `arrive` and `release`.
struct SyncState {
  WaitWord round[kMaxBarrierRounds];
  WaitWord arrive;
  WaitWord release;
  // Central algorithm: the epoch of this PE's latest arrival, read by the PEs that share
  // its CPU (Runtime::Impl::wait_release) to know whether it still needs the CPU.
  alignas(64) std::atomic<uint32_t> arrived{0};
  PairWord pair[kPairRounds];
};

struct MetaFixed {
  uint64_t magic;
  int32_t pid;
  int32_t rank;
  int32_t cpu_plus_1;  // 1 + the CPU this PE is bound to; 0 when not bound (SYMMEM_BIND)
  int32_t heavy_fence;  // 1: this PE's process takes part in heavy_fence() (common/wait.hpp)
  // The CPUs this PE was allowed at init, before binding (bit c of word c / 64): every PE
  // reads every PE's after the init barrier and decides the same sync algorithm.
  uint64_t allowed_cpus[16];
  SyncState world_sync;
  AllocRecord alloc[2];  // indexed by call number parity
  // Wake-up of threads sleeping in a wait on this PE's user memory (wait_until, signal
  // waits, locks): v is a generation they sleep on, sleepers counts them. A writer that
  // updates this PE's memory with an atomic or a signal checks sleepers afterwards (see
  // runtime/p2p.hpp).
  WaitWord user_wake;
  // Active-set syncs when PEs outnumber cores (coll::PsyncGroup::sync): the key of the
  // pSync and active set this PE has arrived at and waits in, 0 when in none; read by the
  // PEs that share its CPU to know whether it still needs the CPU.
  alignas(64) std::atomic<uint64_t> active_set_waiting{0};
  // Non-zero once the job is failing (runtime/liveness.hpp: JobFailure::word): written by
  // any PE of this node that learns it, read by this PE's waits before they sleep.
  alignas(64) std::atomic<uint64_t> job_failing{0};
  // What this PE is doing, for its peers and symmem-run (runtime/dfx_page.hpp).
  dfx::Page dfx;
};

inline constexpr uint64_t kMetaArenaStart = (sizeof(MetaFixed) + 4095) / 4096 * 4096;
// Team slots (src/team/team.hpp) take the first kMetaTeamArea bytes of the arena (fewer
// slots when SYMMEM_METADATA_SIZE is smaller); anything else carves after them.
inline constexpr uint64_t kMetaTeamArea = 3584ull << 10;

}  // namespace symmem
