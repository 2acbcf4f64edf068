// Layout of a PE's metadata region (outside the user heap, same offsets on every PE).
// Fixed part first; the rest is carved deterministically at init by MetaArena for teams,
// signals and collective scratch, so every PE finds a peer's object at the same offset.
#pragma once

#include <atomic>
#include <cstdint>

namespace symmem {

inline constexpr uint64_t kMetaMagic = 0x73796d6d656d3031ull;  // "symmem01"
inline constexpr int kMaxBarrierRounds = 32;

struct alignas(64) PaddedWord {
  std::atomic<uint32_t> v{0};
};
static_assert(sizeof(PaddedWord) == 64);

// What each PE declares for its n-th collective allocation call, read by every peer
// after the call's barrier to check that all PEs made the same call.
struct alignas(64) AllocRecord {
  std::atomic<uint64_t> seq{0};
  uint32_t op = 0;    // AllocOp
  uint32_t ok = 0;    // 1 when this PE could allocate and commit
  uint64_t size = 0;
  uint64_t align = 0;
  uint64_t offset = 0;
};

struct MetaFixed {
  uint64_t magic;
  int32_t pid;
  int32_t rank;
  // Number of this PE's threads sleeping in a futex on one of its words; a writer that
  // sees it non-zero after its store issues the wake.
  alignas(64) std::atomic<uint32_t> sleepers;
  alignas(64) PaddedWord world_barrier[kMaxBarrierRounds];
  AllocRecord alloc[2];  // indexed by call number parity
};

inline constexpr uint64_t kMetaArenaStart = (sizeof(MetaFixed) + 4095) / 4096 * 4096;

}  // namespace symmem
