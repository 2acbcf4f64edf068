// The trace tool's ring file (SYMMEM_TRACE=path[,size=64M]) and its merger.
//
// Each PE records every operation as a 32-byte record in a ring in a file-backed shared
// mapping, /dev/shm/symmem-<job>-trace-pe<N> (MAP_SHARED), so the records are in the page
// cache the moment they are stored and survive a segfault or a kill -9 of the PE. The file
// describes itself (names of calls and op kinds, heap layout, clock conversion), so the
// merger needs nothing else: symmem-run merges a job's rings into one Chrome/Perfetto JSON
// file after the job ends (a killed PE's ring included) and removes them; `symmem-trace
// merge` does the same for jobs started by other launchers.
//
// Plain layout (no pointers), shared by the writer (dfx/trace.cpp) and the merger
// (dfx/trace_merge.cpp, also built into symmem-run and symmem-trace).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace symmem::trace {

inline constexpr uint64_t kRingMagic = 0x31676e6972746d73ull;  // "smtring1"
inline constexpr uint32_t kRingVersion = 1;
inline constexpr uint32_t kHeaderBytes = 32768;
inline constexpr int kCallNames = 256, kCallNameLen = 32;
inline constexpr int kOpNames = 64, kOpNameLen = 16;
inline constexpr int kAllocNames = 128, kAllocNameLen = 80;

// Record op codes: dfx::Op values, plus the trace's own.
inline constexpr uint8_t kOpAllocInfo = 60;  // addr = heap offset, peer = number, ext f = size
inline constexpr uint8_t kOpFreeInfo = 61;   // addr = heap offset
inline constexpr uint8_t kOpWaitSleep = 62;  // a wait went to sleep (open until it wakes)

inline constexpr uint8_t kFlagExt = 0x80;     // extension of the record before it
inline constexpr uint8_t kFlagTidMask = 0x3f;  // application thread index (0 = first)
inline constexpr uint32_t kDurOpen = 0xffffffffu;  // not finished (yet, or ever: the PE died)
inline constexpr uint32_t kDurCoarse = 0x80000000u;  // low 31 bits are ticks >> 16

// One event. t0 and dur are in clock ticks (see Header::clock).
struct Rec {
  uint64_t t0;
  uint32_t dur;    // kDurOpen, ticks, or kDurCoarse | (ticks >> 16)
  uint8_t op;      // dfx::Op or kOp* above
  uint8_t flags;   // kFlagExt, thread index
  uint16_t call;   // Header::names index
  int32_t peer;    // target PE, wait owner, collective root (-1 none)
  uint32_t bytes;  // saturated at 2^32-1
  uint64_t addr;   // address as this PE saw it (heap copy of the target, or static)
};
static_assert(sizeof(Rec) == 32);

// The record after a collective's: its team and number.
struct CollExt {
  uint64_t src;
  uint32_t team_seq;
  uint8_t op;  // same as the record before
  uint8_t flags;  // kFlagExt | tid
  uint16_t lane;
  int32_t elem_size;
  uint32_t pad;
  uint64_t members;  // start (21 bits) | stride << 21 | size << 42
};
static_assert(sizeof(CollExt) == 32);

struct AllocName {
  uint32_t number;
  uint32_t pad;
  uint64_t offset, size;
  char name[kAllocNameLen];  // "'halo' (allocation #3, 64 KiB)"
};

struct Header {
  uint64_t magic;
  uint32_t version;
  uint32_t rec_size;
  int32_t rank, npes, pid;
  uint32_t clock;  // 1: raw TSC (ticks -> ns by the pairs below), 0: CLOCK_MONOTONIC ns
  uint64_t capacity;            // records in the ring
  std::atomic<uint64_t> head;   // records reserved so far; record i at slot i % capacity
  std::atomic<uint32_t> state;  // 1 recording, 2 finalized
  std::atomic<uint32_t> threads;  // application threads seen
  uint64_t heap_base, heap_size, static_start, static_size;
  // Clock conversion: (ticks, CLOCK_MONOTONIC ns) at start and the latest pair (updated at
  // every collective's end); pair_seq is odd while the latest pair is written.
  uint64_t tick0, ns0;
  std::atomic<uint32_t> pair_seq;
  uint32_t pad0;
  uint64_t tick1, ns1;
  char host[64];
  char job[64];
  char out_path[1024];
  std::atomic<uint32_t> name_count;
  char names[kCallNames][kCallNameLen];
  char op_names[kOpNames][kOpNameLen];
  std::atomic<uint32_t> alloc_name_count;
  AllocName alloc_names[kAllocNames];
};
static_assert(sizeof(Header) <= kHeaderBytes);

inline std::string ring_prefix(const std::string& job) { return "symmem-" + job + "-trace-pe"; }

struct MergeResult {
  std::string out_path;
  int pes = 0;
  int unfinished_pes = 0;  // rings of PEs that did not finalize (killed, crashed, stopped)
  size_t events = 0, flows = 0;
  std::vector<std::string> rings;  // the files merged
  std::vector<std::string> clocks;  // rings from several hosts: each other host's clock offset
};

// Merges the rings of `job` found in `dir` (default /dev/shm) into one Chrome/Perfetto
// trace-event JSON file: `out` or, when empty, the path the PEs recorded. Removes the rings
// unless `keep`. False and *err when there is nothing to merge or the output cannot be
// written.
bool merge_job(const std::string& job, const std::string& dir, const std::string& out, bool keep, MergeResult* res,
               std::string* err);
// The job ids that have rings in `dir`.
std::vector<std::string> jobs_with_rings(const std::string& dir);

}  // namespace symmem::trace
