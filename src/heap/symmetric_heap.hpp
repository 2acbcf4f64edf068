// The symmetric heap of one job instance, mapped at the global layout.
//
// Each PE owns one POSIX shared-memory object of H + M bytes: its user heap (H) followed by
// its metadata region (M). Every process reserves one range of virtual addresses at the
// same base G, agreed at init over the store, and maps
//     PE p's heap      at G + p*H
//     PE p's metadata  at G + n*H + p*M
//     PE p's static data at G + n*(H+M) + p*S  (mapped by StaticData; S may be 0)
// so a symmetric address translates to a peer's with one multiply-add and means the same
// thing in every process of the node.
//
// Nothing is committed until used: the objects are sparse (ftruncate), the reservation is
// PROT_NONE. Memory that /dev/shm cannot back must never turn into a SIGBUS on first
// touch, so every byte the allocator hands out is committed first with fallocate(2) on
// the owner's object (commit()), which fails with ENOSPC at allocation time instead. The
// metadata region is committed whole at init. Once every PE has mapped every object, the
// names are unlinked: a job killed at any moment after init leaves nothing in /dev/shm.
//
// This is the host heap. The device heap of the next issue is a second heap of the same
// shape (PE p at slot p of one reserved range, so remote = ptr + (pe - me) * H there too),
// held next to this one, not inside it; its addresses reach the runtime's out-of-line
// translation and route (transport/route.hpp), never the inline host path.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/store.hpp"
#include "common/status.hpp"
#include "heap/node_memory.hpp"

namespace symmem {

struct HeapParams {
  int rank = 0;
  int npes = 1;
  std::string job_id;      // names objects /dev/shm/symmem-<job_id>-i<instance>-<rank>
  std::string dir;         // SYMMEM_HEAP_DIR: create them there instead (empty: POSIX shm)
  int instance = 0;
  uint64_t heap_size = 0;  // H, rounded up to the huge-page size (2 MiB)
  uint64_t meta_size = 0;  // M, rounded up to the page size
  uint64_t static_size = 0;  // S: address space per PE for its copy of the program's globals
  uint64_t commit_chunk = 2ull << 20;
  double timeout_s = 60;
  // Checks the metadata commit against what the node can give (null: no check).
  const CommitPolicy* commit_policy = nullptr;
  // PEs whose objects this PE maps (those of its node); empty: all. The others' ranges
  // stay reserved (PROT_NONE): their addresses are the transport's remote addresses.
  std::vector<uint8_t> map_pe;
};

class SymmetricHeap {
 public:
  // Collective over `store` (may be null when npes == 1).
  static Result<std::unique_ptr<SymmetricHeap>> create(const HeapParams& p, Store* store);
  ~SymmetricHeap();
  SymmetricHeap(const SymmetricHeap&) = delete;
  SymmetricHeap& operator=(const SymmetricHeap&) = delete;

  uintptr_t base() const { return base_; }
  uint64_t heap_size() const { return heap_size_; }
  uint64_t meta_size() const { return meta_size_; }
  int npes() const { return npes_; }
  int rank() const { return rank_; }
  char* heap(int pe) const { return reinterpret_cast<char*>(base_ + uint64_t(pe) * heap_size_); }
  char* meta(int pe) const {
    return reinterpret_cast<char*>(base_ + uint64_t(npes_) * heap_size_ + uint64_t(pe) * meta_size_);
  }
  char* my_heap() const { return heap(rank_); }
  // Reserved (PROT_NONE) space for PE p's static data, S bytes; StaticData maps it.
  char* statics(int pe) const {
    return reinterpret_cast<char*>(base_ + uint64_t(npes_) * (heap_size_ + meta_size_) + uint64_t(pe) * static_size_);
  }
  // Largest power of two that divides every PE's heap base G + p*H in every run: G is
  // chosen 1 GiB aligned (kBaseAlign; more only by chance, which must not change what a
  // program may ask for), H a multiple of 2 MiB.
  static constexpr uint64_t kBaseAlign = 1ull << 30;
  uint64_t max_alignment() const {
    uint64_t h = heap_size_ & -heap_size_;
    return h < kBaseAlign ? h : kBaseAlign;
  }

  // Makes sure bytes [0, extent) of this PE's heap are backed by /dev/shm (fallocate in
  // commit_chunk steps). Fails with kNoMemory, naming /dev/shm and SHMEM_SYMMETRIC_SIZE;
  // then nothing more is committed than before (tmpfs undoes a failed fallocate).
  Status commit(uint64_t extent);
  // Bytes commit(extent) would add: 0 when [0, extent) is committed already.
  uint64_t commit_need(uint64_t extent) const;
  // Gives back what was committed beyond `extent` (rounded up to commit_chunk): the
  // roll-back of a commit that another PE could not match. Nothing live may lie there.
  void uncommit(uint64_t extent);
  uint64_t committed() const { return committed_; }

  // Keeps the pages holding [addr, addr + n) -- in the heap of this PE or of a PE whose
  // object is mapped here -- mapped after this heap is destroyed, as private anonymous
  // memory holding what those pages held then: objects that outlive the job (the Python
  // module's arrays) stay readable and writable instead of pointing into unmapped memory.
  // Returns false (and keeps nothing) for a range outside the mapped heaps.
  bool retain(const void* addr, uint64_t n);

 private:
  SymmetricHeap() = default;
  Status agree_base(Store* store, const HeapParams& p);
  Status map_all(const HeapParams& p);
  uint64_t commit_target(uint64_t extent) const;

  int rank_ = 0, npes_ = 1;
  uint64_t heap_size_ = 0, meta_size_ = 0, static_size_ = 0, total_ = 0, commit_chunk_ = 0, committed_ = 0;
  uintptr_t base_ = 0;
  int fd_ = -1;  // own object, kept for commit()
  std::string name_;
  std::string dir_;     // HeapParams::dir
  uint64_t page_ = 4096;  // the heap object's page size (a hugetlbfs mount's huge page)
  bool linked_ = false;
  std::vector<uint8_t> mapped_;                          // per PE: its heap is mapped here
  std::vector<std::pair<uintptr_t, uintptr_t>> retained_;  // page ranges kept by retain()
};

// Name of the shared-memory object of `rank` (without the leading '/').
std::string heap_object_name(const std::string& job_id, int instance, int rank);

}  // namespace symmem
