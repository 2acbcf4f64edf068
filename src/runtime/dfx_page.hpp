// The DFX status page: what a PE is doing, in its metadata region (MetaFixed::dfx), written
// by the PE and read by its peers and by symmem-run without the PE's help, even while it is
// stuck in user code or stopped. Plain layout (no pointers): another process maps it.
//
// Readers see words that change under them. Each multi-word record carries a sequence word
// (odd while its writer is inside it); a reader copies the record and accepts the copy only
// when the sequence word was even and unchanged around the copy (read_stable below).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "symmem/device_wait.h"

namespace symmem::dfx {

inline constexpr uint64_t kPageMagic = 0x3170676678666473ull;  // "sdfxgpg1"
inline constexpr uint32_t kPageVersion = 9;  // 2: allocation slots, layout; 3: race ring; 4: team ids, check claim; 5: write ring; 6: vector waits; 7: exit times; 8: lane history; 9: GPU wait record
inline constexpr int kTeamLanes = 65;       // team slots 0..63, lane 64: pSync active sets
inline constexpr int kActiveSetLane = 64;
inline constexpr int kCollRing = 64;        // recent collectives described in full, all teams together
inline constexpr int kLaneHist = 8;         // each lane's latest collectives, in brief
inline constexpr int kNames = 256;          // interned call names
inline constexpr int kNameLen = 32;
inline constexpr int kAllocSlots = 128;     // live allocations named on the page
inline constexpr int kAllocNameLen = 24;
inline constexpr int kRaceRing = 256;     // recent remote accesses into this PE's memory (race check)
inline constexpr int kWriteRing = 32;     // this PE's recent one-sided writes (hang reports)
inline constexpr int kWaitWords = 8;      // words of a vector wait shown on the page

// What a PE is doing now, as a reader sees it.
enum class State : uint32_t {
  kInit = 0,       // before init completed
  kUser = 1,       // running its own code
  kInCall = 2,     // inside a blocking library call (collective, barrier, wait, alloc)
  kWaiting = 3,    // that call has gone to sleep waiting (see Page::wait)
  kFinalized = 4,  // after finalize
};
const char* state_name(State s);

// What an operation is, for the page, the hooks and every tool's report.
enum class Op : uint16_t {
  kNone = 0,
  // point to point
  kPut, kGet, kPutNbi, kGetNbi, kAmo, kAmoFetch, kPutSignal, kSignal, kWait, kTest, kLock, kQuiet, kFence,
  // collectives (one per team and sequence number)
  kBarrier, kSync, kBroadcast, kCollect, kFcollect, kAlltoall, kAlltoalls, kReduce, kScan,
  kAlloc, kFree, kTeamSplit, kTeamDestroy,
  kCount
};
const char* op_name(Op op);
inline bool is_collective(Op op) { return op >= Op::kBarrier && op < Op::kCount; }

// A wait that has gone to sleep: the word(s) it waits on and what it expects.
struct WaitRecord {
  std::atomic<uint32_t> seq;
  std::atomic<uint32_t> held;  // 1 while a wait of this PE owns the record
  uint16_t op;        // Op
  uint16_t call_id;   // Page::names index of the call
  int32_t owner;      // PE whose memory holds the word
  int32_t cmp;        // p2p::Cmp of a wait_until; -1: a sync word (value - expect >= 0)
  uint32_t width;     // bytes of each word
  uint32_t nwords;    // words of a vector wait (1 for scalars)
  uint64_t addr;      // symmetric address (the owner's copy, in the job's global layout)
  uint64_t expect;    // value compared with (bits)
  int32_t team_lane;  // collective being waited in, or -1
  uint32_t team_seq;
  uint64_t since_ns;  // CLOCK_MONOTONIC when the wait went to sleep
  // A vector wait (wait_until_all / any / some and their _vector forms): the whole vector,
  // of which the words above are the part slept on (all: the current element; any, some:
  // the vector). The first kWaitWords elements taking part (status 0), with their values.
  uint32_t vec_kind;   // 0 scalar, 1 all, 2 any, 3 some
  uint32_t vec_count;  // elements taking part
  uint64_t vec_base;   // address of element 0
  uint32_t vec_n;      // elements of the vector
  uint32_t vec_shown;  // of vec_count, recorded below
  uint32_t vec_index[kWaitWords];
  uint64_t vec_expect[kWaitWords];
};

// A collective in brief (Page::lane_hist): one word, written with one store on entry and
// one on exit. Bits 0-7: Op; 8-23: names index of the call; 24: open (this PE is inside
// it); 25: the root and size are known (Dfx::lane_args_); 26: described (its record is in
// Page::colls, while open); 32-63: team_seq.
inline constexpr uint64_t kBriefOpen = 1ull << 24;
inline constexpr uint64_t kBriefArgs = 1ull << 25;
inline constexpr uint64_t kBriefDescribed = 1ull << 26;
// Dfx::colls_ and Page::tools: SYMMEM_STATUS=0 with no tool on, collectives not kept.
inline constexpr uint32_t kCollsOff = 1u << 31;
inline constexpr uint64_t brief_word(Op op, uint32_t call_id, uint32_t team_seq, bool open) {
  return uint64_t(op) | uint64_t(call_id) << 8 | (open ? kBriefOpen : 0) | uint64_t(team_seq) << 32;
}
struct Brief {
  Op op;
  uint32_t call_id, team_seq;
  bool done;
};
inline Brief brief_of(uint64_t w) {
  return {Op(w & 0xff), uint32_t(w >> 8) & 0xffff, uint32_t(w >> 32), (w & kBriefOpen) == 0};
}

// One collective as this PE called it, in full: with a tool on, every collective; with
// none, one that waited (it describes itself once it goes to sleep, as a wait does).
struct CollRecord {
  std::atomic<uint32_t> seq;  // record sequence (odd while written)
  uint16_t op;                // Op
  uint16_t lane;              // team slot, or kActiveSetLane
  uint32_t team_seq;          // this PE's number of this collective on the lane (1, 2, ...)
  std::atomic<uint32_t> done;  // 1 once this PE left the collective
  int32_t root;               // -1 where none
  uint32_t elem_size;
  uint64_t bytes;             // this PE's bytes (per member block for collect-style ops)
  uint32_t redop;             // reduction kernel id, 0 when none
  uint32_t call_id;
  uint64_t dest, src;         // symmetric addresses
  uint64_t call_site;         // return address into the caller, 0 when unknown
  uint64_t t_enter_ns;        // CLOCK_MONOTONIC at entry when a tool is on, else 0
  int32_t team_start;         // the PEs taking part (world numbers): start, stride, size
  int32_t team_stride;
  int32_t team_size;
  // The team as all its members name it (0 world, 1 shared, others from the split that
  // made it) and this collective's number on that team (1, 2, ... the same on every member,
  // also when a lane is reused by a later team).
  uint32_t team_id;
  uint32_t team_rel;
  uint32_t pad;
  uint64_t t_exit_ns;  // CLOCK_MONOTONIC at exit with SYMMEM_STATS on, else 0 (outside seq)
};

// One live collective allocation, so that a process without the PE's allocation table
// (symmem-run) names an address the way Dfx::describe does. number 0: a free slot.
struct AllocSlot {
  std::atomic<uint32_t> seq;
  uint32_t number;
  uint64_t offset, size;
  char name[kAllocNameLen];
};

// One one-sided access into a PE's symmetric memory, as its origin recorded it.
struct RaceAccess {
  std::atomic<uint32_t> seq;  // odd while written
  int32_t origin;             // world PE that issued the access
  uint16_t kind;              // 1 read, 2 write, 3 atomic
  uint16_t call_id;           // names index in the origin's page
  uint32_t epoch;             // origin's completed world barriers at the access
  uint64_t where;             // heap offset, or kRaceStatic | offset into static data
  uint64_t bytes;
  uint64_t call_site;         // return address in the origin process
};
inline constexpr uint64_t kRaceStatic = 1ull << 63;

// One one-sided write of this PE into a PE's memory (put, atomic, signal), for the hang
// report's candidate writers of a waited word: recorded when it goes over UCX, and on the
// node when a DFX tool is on (Page::writes_all).
struct WriteRecord {
  std::atomic<uint32_t> seq;  // odd while written
  uint16_t op;                // Op
  uint16_t call_id;           // names index in this PE's page
  int32_t target;             // world PE whose memory was written
  uint32_t ucx;               // 1: posted on the UCX route
  uint64_t where;             // heap offset, or kRaceStatic | offset into static data
  uint64_t bytes;
  uint64_t quiets;            // Page::quiet_count when written: pending until it moves on
};

// The record of this PE's device wait that expired (symmem/device_wait.h), written by its
// GPU: the area is a host page of its own, which the device heap's creation maps for the
// GPU (cuMemHostRegister, runtime/device.cpp) and kernels write through its device address
// (shmemx_device_heap_t::wait_record). A reader sees it after the trap has killed the PE's
// CUDA context, and after the PE is gone. The words after the record are the host's, for
// readers in another process: where this PE's device heap lies in its address space.
struct alignas(4096) GpuWaitArea {
  shmemx_device_wait_record_t rec;
  uint64_t heap_base;   // PE 0's slot of this PE's device heap (0: none)
  uint64_t heap_size;   // per PE
  uint64_t sync_begin;  // the device collectives' sync pads: [sync_begin, sync_end) of a slot
  uint64_t sync_end;
  int32_t device;       // GPU ordinal (where heap_base is set)
  uint32_t mapped;      // 1 while the GPU writes rec here (0: kernels use their slot's start)
};

struct alignas(4096) Page {  // 4096: GpuWaitArea, at its end, is a page of its own
  uint64_t magic;
  uint32_t version;
  int32_t pid;
  int32_t rank;
  int32_t npes;
  std::atomic<uint32_t> state;   // State
  std::atomic<uint32_t> tools;   // bits of the tools switched on (dfx.hpp Tool), and kCollsOff
  // Bumped when a blocking call ends: a reader that sees it unchanged across two looks and
  // the state kWaiting knows this PE has not moved in between.
  std::atomic<uint64_t> progress;
  std::atomic<uint32_t> call_id;  // current blocking call (names index), 0 none
  uint32_t pad0;
  std::atomic<uint64_t> call_site;
  alignas(64) WaitRecord wait;
  // Per lane: this PE's number of its latest collective there (0: none yet), and its
  // latest kLaneHist collectives in brief (collective n at lane_hist[lane][n % kLaneHist]).
  alignas(64) std::atomic<uint32_t> lane_seq[kTeamLanes];
  alignas(64) std::atomic<uint64_t> lane_hist[kTeamLanes][kLaneHist];
  alignas(64) std::atomic<uint64_t> coll_count;  // records claimed; record i at colls[i % kCollRing]
  CollRecord colls[kCollRing];
  std::atomic<uint32_t> name_count;
  char names[kNames][kNameLen];
  // The job's address layout (symmetric_heap.hpp), for readers in another process: PE p's
  // heap at layout_base + p*heap_size, its metadata at layout_base + npes*heap_size +
  // p*meta_size; this process's own static data at [static_start, +static_size).
  uint64_t layout_base;
  uint64_t heap_size, meta_size, static_size;
  uint64_t static_start;
  AllocSlot allocs[kAllocSlots];
  // Race check (SYMMEM_RACECHECK, dfx/race.cpp): the recent one-sided accesses of any PE
  // into this PE's memory, written by the origin PE. Record i at race[i % kRaceRing].
  alignas(64) std::atomic<uint64_t> race_count;
  RaceAccess race[kRaceRing];
  // v2: on the page of the node's first PE, 1 + the PE that reports a check failure (the
  // check tool elects one reporter per node with it), else 0.
  std::atomic<int32_t> check_claim;
  // v5: this PE's recent one-sided writes (record i at writes[i % kWriteRing]); the UCX
  // route's operations posted and those completed by a quiet (in flight: the difference).
  alignas(64) std::atomic<uint64_t> write_count;
  std::atomic<uint32_t> writes_all;  // 1: writes on the node are recorded too (a tool is on)
  uint32_t pad1;
  std::atomic<uint64_t> ucx_posted;
  std::atomic<uint64_t> ucx_quieted;
  std::atomic<uint64_t> quiet_count;
  WriteRecord writes[kWriteRing];
  // v9: a device wait that expired (GpuWaitArea).
  GpuWaitArea gpu;
};

// The page's allocation slots, written by their PE only (Dfx::allocated / freed / set_name).
inline void page_alloc_write(AllocSlot& a, uint32_t number, uint64_t offset, uint64_t size, const char* name) {
  const uint32_t s = a.seq.load(std::memory_order_relaxed);
  a.seq.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  a.number = number;
  a.offset = offset;
  a.size = size;
  std::memset(a.name, 0, sizeof a.name);
  if (name) std::strncpy(a.name, name, sizeof a.name - 1);
  a.seq.store(s + 2, std::memory_order_release);
}
// A new allocation takes a free slot, or the oldest one when all are taken.
inline void page_alloc_add(Page& p, uint32_t number, uint64_t offset, uint64_t size) {
  AllocSlot* best = &p.allocs[0];
  for (AllocSlot& a : p.allocs) {
    if (a.number == 0) {
      best = &a;
      break;
    }
    if (a.number < best->number) best = &a;
  }
  page_alloc_write(*best, number, offset, size, nullptr);
}
inline AllocSlot* page_alloc_find(Page& p, uint64_t offset) {
  for (AllocSlot& a : p.allocs)
    if (a.number != 0 && a.offset == offset) return &a;
  return nullptr;
}

// The PE's collectives so far, all lanes together: it moved when this changed.
inline uint64_t collectives_entered(const Page& p) {
  uint64_t n = 0;
  for (const auto& l : p.lane_seq) n += l.load(std::memory_order_relaxed);
  return n;
}

// A field of a record that threads of one PE may write at once: a relaxed atomic store (a
// plain move on x86), so such writers share a slot without a data race.
template <class T>
inline void relaxed_store(T& field, std::type_identity_t<T> v) {
  std::atomic_ref<T>(field).store(v, std::memory_order_relaxed);
}

// The seqlock read of the two below: copy() once the record's sequence word was even and
// unchanged around it.
template <class T, class Copy>
bool read_stable_with(const T& rec, int tries, Copy copy) {
  for (int i = 0; i < tries; ++i) {
    const uint32_t s0 = rec.seq.load(std::memory_order_acquire);
    if (s0 & 1) continue;
    copy();
    std::atomic_thread_fence(std::memory_order_acquire);
    if (rec.seq.load(std::memory_order_relaxed) == s0) return true;
  }
  return false;
}
// Copies a record of `T` (which starts with its sequence word) into *out once it is stable;
// false when the writer kept changing it (a reader then shows it as "changing"). For a
// record another process writes (a peer's page; the compiler may then load only the fields
// the caller reads).
template <class T>
bool read_stable(const T& rec, T* out, int tries = 100) {
  return read_stable_with(rec, tries, [&] { std::memcpy(static_cast<void*>(out), static_cast<const void*>(&rec), sizeof(T)); });
}
// The same for a record of this process's own page, which another thread of it may be
// writing (relaxed_store): copied by relaxed loads of 4-byte words (plain moves), so that
// this is no data race either.
template <class T>
bool read_stable_own(const T& rec, T* out, int tries = 100) {
  static_assert(sizeof(T) % 4 == 0 && alignof(T) >= 4);
  using Word = uint32_t __attribute__((may_alias));
  const Word* from = reinterpret_cast<const Word*>(&rec);
  Word* to = reinterpret_cast<Word*>(static_cast<void*>(out));
  return read_stable_with(rec, tries, [&] {
    for (size_t w = 0; w < sizeof(T) / 4; ++w) to[w] = __atomic_load_n(&from[w], __ATOMIC_RELAXED);
  });
}

}  // namespace symmem::dfx
