// The executable's static data (global and static variables) as symmetric objects.
//
// OpenSHMEM makes every global and static variable of the program symmetric: a put to
// `&counter` on PE 3 writes PE 3's `counter`. We give that memcpy-speed puts and real
// atomics by moving the main program's writable data segment into shared memory:
//
//  1. find the page range of the executable's writable, non-RELRO data (.got.plt, .data,
//     .bss, copy relocations) with dl_iterate_phdr;
//  2. create a POSIX shm object of that size per PE (symmem-<job>-i<instance>-s<rank>),
//     copy the current contents in, and move the shared mapping over the original range
//     with one mremap(2): from then on the program's own loads and stores of its globals
//     go to the shared object;
//  3. map every PE's object inside the heap's reservation (PE p's copy at
//     statics + p*S), so the remote address of a global is
//     statics + pe*S + (addr - start): the executable may be PIE, only offsets are shared;
//  4. unlink the names once every PE mapped every object.
//
// At destruction (finalize) the range is copied back into private anonymous memory with
// the same mremap trick, so after finalize the process is as it was before init and a
// re-init starts from scratch. A fork() while the range is shared gives the child a
// private copy (pthread_atfork), so the child does not write into the parent's globals.
// The executable's data segment exists once per process: one runtime at a time owns it.
// See docs/static-data.md for the reasoning.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/store.hpp"
#include "common/status.hpp"
#include "heap/node_memory.hpp"

namespace symmem {

// The page-aligned range [start, start+size) of the main program's writable data that
// is not RELRO, and how to recognise the executable.
struct StaticSegment {
  uintptr_t start = 0;
  uint64_t size = 0;
  std::string build_id;  // hex NT_GNU_BUILD_ID, empty when the executable has none
  std::string exe;       // path, for messages
};

// Reads the program headers of the main program (first dl_iterate_phdr entry).
Result<StaticSegment> find_static_segment();

struct StaticParams {
  int rank = 0;
  int npes = 1;
  std::string job_id;
  int instance = 0;
  bool enabled = true;  // SYMMEM_STATIC_DATA
  double timeout_s = 60;
  const CommitPolicy* commit_policy = nullptr;  // checks the commit of the copy (null: none)
};

class StaticData {
 public:
  // Collective over `store` (may be null when npes == 1). Moves this PE's segment into
  // shared memory and checks with every PE that all run the same executable. Returns
  // nullptr on every PE when no PE makes its static data symmetric (switched off, or
  // another runtime of each process owns it); an error when PEs disagree.
  static Result<std::unique_ptr<StaticData>> attach(const StaticParams& p, Store* store);
  // Collective. Maps PE p's object at copies + p*size() (reserved address space, size()
  // bytes per PE), then removes this PE's name once every PE has mapped every object.
  // `map_pe` (empty: all) names the PEs of this node; the others' copies are not mapped.
  Status map_peers(char* copies, Store* store, const std::vector<uint8_t>& map_pe = {});
  // Puts the range back into private memory (contents kept) and releases it. Every PE
  // must have stopped accessing this PE's globals (finalize's barrier).
  ~StaticData();
  StaticData(const StaticData&) = delete;
  StaticData& operator=(const StaticData&) = delete;

  uintptr_t start() const { return seg_.start; }
  uint64_t size() const { return seg_.size; }
  const StaticSegment& segment() const { return seg_; }

 private:
  StaticData() = default;
  Status share(const StaticParams& p);
  static void after_fork_in_child();

  StaticSegment seg_;
  StaticParams params_;
  std::string name_;
  int fd_ = -1;
  bool linked_ = false;
  bool owner_ = false;   // holds the process-wide claim on the segment
  bool shared_ = false;  // the range is the shared object now
};

// Name of the static-data object of `rank` (without the leading '/').
std::string static_object_name(const std::string& job_id, int instance, int rank);

}  // namespace symmem
