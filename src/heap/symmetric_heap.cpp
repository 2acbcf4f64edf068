#include "heap/symmetric_heap.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>

#include "common/config.hpp"
#include "common/log.hpp"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

namespace symmem {
namespace {

constexpr uint64_t kHugePage = 2ull << 20;
constexpr int kMaxBaseAttempts = 16;

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Reserves `len` bytes of address space without committing anything. With a hint, only
// exactly there (MAP_FIXED_NOREPLACE); returns 0 when the range is taken.
uintptr_t reserve(uintptr_t hint, uint64_t len) {
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  if (hint) flags |= MAP_FIXED_NOREPLACE;
  void* p = mmap(reinterpret_cast<void*>(hint), len, PROT_NONE, flags, -1, 0);
  if (p == MAP_FAILED) return 0;
  if (hint && reinterpret_cast<uintptr_t>(p) != hint) {  // old kernels ignore NOREPLACE
    munmap(p, len);
    return 0;
  }
  return reinterpret_cast<uintptr_t>(p);
}

// A kernel-chosen range, aligned to 1 GiB so that heaps start on huge-page boundaries.
uintptr_t reserve_anywhere(uint64_t len) {
  const uint64_t align = SymmetricHeap::kBaseAlign;
  uintptr_t p = reserve(0, len + align);
  if (!p) return 0;
  uintptr_t a = round_up(p, align);
  if (a > p) munmap(reinterpret_cast<void*>(p), a - p);
  uintptr_t end = p + len + align, aend = a + len;
  if (end > aend) munmap(reinterpret_cast<void*>(aend), end - aend);
  return a;
}

// The object `name` (no leading '/'): a POSIX shm object, or a file of `dir`.
int open_object(const std::string& dir, const std::string& name, int flags) {
  if (dir.empty()) return shm_open(("/" + name).c_str(), flags, 0600);
  return open((dir + "/" + name).c_str(), flags, 0600);
}

void unlink_object(const std::string& dir, const std::string& name) {
  if (dir.empty()) shm_unlink(("/" + name).c_str());
  else unlink((dir + "/" + name).c_str());
}

std::string object_path(const std::string& dir, const std::string& name) {
  return (dir.empty() ? std::string("/dev/shm") : dir) + "/" + name;
}

}  // namespace

std::string heap_object_name(const std::string& job_id, int instance, int rank) {
  return "symmem-" + job_id + "-i" + std::to_string(instance) + "-" + std::to_string(rank);
}

Result<std::unique_ptr<SymmetricHeap>> SymmetricHeap::create(const HeapParams& p, Store* store) {
  std::unique_ptr<SymmetricHeap> h(new SymmetricHeap());
  h->rank_ = p.rank;
  h->npes_ = p.npes;
  h->dir_ = p.dir;
  // A hugetlbfs file is sized, mapped and allocated in whole huge pages (its f_bsize).
  uint64_t page = 4096;
  if (!p.dir.empty()) {
    struct stat st {};
    if (stat(p.dir.c_str(), &st) != 0) return errno_status(Errc::kInvalidArgument, "SYMMEM_HEAP_DIR=" + p.dir, errno);
    if (!S_ISDIR(st.st_mode)) return Status(Errc::kInvalidArgument, "SYMMEM_HEAP_DIR=" + p.dir + ": not a directory");
    struct statfs fs {};
    if (is_hugetlbfs(p.dir) && statfs(p.dir.c_str(), &fs) == 0 && fs.f_bsize > 4096) page = uint64_t(fs.f_bsize);
  }
  h->page_ = page;
  h->heap_size_ = round_up(p.heap_size, std::max(page, kHugePage));
  h->meta_size_ = round_up(p.meta_size, page);
  h->commit_chunk_ = round_up(p.commit_chunk ? p.commit_chunk : kHugePage, page);
  h->static_size_ = round_up(p.static_size, 4096);
  h->total_ = (h->heap_size_ + h->meta_size_ + h->static_size_) * uint64_t(p.npes);
  if (h->heap_size_ == 0) return Status(Errc::kInvalidArgument, "symmetric heap size must be > 0");
  if (h->total_ / uint64_t(p.npes) != h->heap_size_ + h->meta_size_ + h->static_size_ || h->total_ > (1ull << 46))
    return Status(Errc::kInvalidArgument,
                  "symmetric heap of " + format_size(h->heap_size_) + " x " + std::to_string(p.npes) +
                      " PEs does not fit in the address space; lower SHMEM_SYMMETRIC_SIZE");
  if (p.npes > 1 && !store) return Status(Errc::kInvalidArgument, "a multi-PE heap needs a store");

  // Own object: heap then metadata. O_EXCL: a name collision means another job's object.
  h->name_ = heap_object_name(p.job_id, p.instance, p.rank);
  const std::string path = object_path(p.dir, h->name_);
  h->fd_ = open_object(p.dir, h->name_, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC);
  if (h->fd_ < 0) return errno_status(Errc::kIo, "creating " + path, errno);
  h->linked_ = true;
  if (ftruncate(h->fd_, off_t(h->heap_size_ + h->meta_size_)) != 0)
    return errno_status(Errc::kIo, "ftruncate(" + path + ")", errno);
  if (p.commit_policy) {
    Status s = p.commit_policy->check(h->meta_size_);
    if (!s.ok()) return Status(s.code(), "metadata region (SYMMEM_METADATA_SIZE): " + s.message());
  }
  if (int e = posix_fallocate(h->fd_, off_t(h->heap_size_), off_t(h->meta_size_)); e != 0)
    return Status(Errc::kNoMemory, "cannot commit " + format_size(h->meta_size_) + " of metadata in " +
                                       (p.dir.empty() ? std::string("/dev/shm") : p.dir) + ": " + std::strerror(e));

  SYMMEM_RETURN_IF_ERROR(h->agree_base(store, p));
  SYMMEM_RETURN_IF_ERROR(h->map_all(p));
  if (p.npes > 1) SYMMEM_RETURN_IF_ERROR(store_barrier(*store, "heap/i" + std::to_string(p.instance) + "/mapped", p.rank, p.npes, p.timeout_s));
  unlink_object(p.dir, h->name_);
  h->linked_ = false;
  log_pe(LogLevel::kDebug, p.rank, "symmetric heap: %d x %s at 0x%" PRIxPTR, p.npes,
         format_size(h->heap_size_).c_str(), h->base_);
  return h;
}

// PE 0 proposes a base; every PE tries to reserve exactly there; all report. If any PE
// could not, PE 0 proposes again at a base that PE reported free, up to kMaxBaseAttempts.
Status SymmetricHeap::agree_base(Store* store, const HeapParams& p) {
  if (p.npes == 1) {
    base_ = reserve_anywhere(total_);
    if (!base_) return errno_status(Errc::kNoMemory, "reserving the symmetric heap's address range", errno);
    return {};
  }
  std::string proposal;
  for (int attempt = 0; attempt < kMaxBaseAttempts; ++attempt) {
    std::string tag = "heap/i" + std::to_string(p.instance) + "/base/" + std::to_string(attempt);
    uintptr_t want = 0;
    if (p.rank == 0) {
      if (attempt == 0) {
        // A kernel-chosen free range of PE 0; other PEs of the same program usually have
        // the same region free too.
        want = reserve_anywhere(total_);
        if (!want) return errno_status(Errc::kNoMemory, "reserving the symmetric heap's address range", errno);
        munmap(reinterpret_cast<void*>(want), total_);
      } else {
        want = std::strtoull(proposal.c_str(), nullptr, 16);
      }
      SYMMEM_RETURN_IF_ERROR(store->set(tag + "/proposal", std::to_string(want)));
    } else {
      SYMMEM_ASSIGN_OR_RETURN(std::string s, store->get(tag + "/proposal", p.timeout_s));
      want = std::strtoull(s.c_str(), nullptr, 10);
    }
    uintptr_t got = reserve(want, total_);
    // Each PE also offers a range that is free for it, used if this attempt fails.
    char mine[64];
    uintptr_t alt = 0;
    if (!got) {
      alt = reserve_anywhere(total_);
      if (alt) munmap(reinterpret_cast<void*>(alt), total_);
    }
    std::snprintf(mine, sizeof(mine), "%d %" PRIxPTR, got ? 1 : 0, alt);
    SYMMEM_ASSIGN_OR_RETURN(auto all, store_allgather(*store, tag, p.rank, p.npes, mine, p.timeout_s));
    bool everyone = true;
    proposal.clear();
    for (int r = 0; r < p.npes; ++r) {
      int ok = 0;
      char altbuf[32] = {0};
      std::sscanf(all[r].c_str(), "%d %31s", &ok, altbuf);
      if (!ok) {
        everyone = false;
        if (proposal.empty()) proposal = altbuf;
      }
    }
    if (everyone) {
      base_ = got;
      return {};
    }
    if (got) munmap(reinterpret_cast<void*>(got), total_);
    log_pe(LogLevel::kDebug, p.rank, "heap base 0x%" PRIxPTR " is taken on some PE; retrying", want);
  }
  return Status(Errc::kNoMemory, "PEs could not agree on a free address range for the symmetric heap after " +
                                     std::to_string(kMaxBaseAttempts) + " attempts; lower SHMEM_SYMMETRIC_SIZE");
}

Status SymmetricHeap::map_all(const HeapParams& p) {
  mapped_.assign(size_t(p.npes), 0);
  for (int pe = 0; pe < p.npes; ++pe) {
    if (pe != p.rank && !p.map_pe.empty() && !p.map_pe[size_t(pe)]) continue;  // another node's
    int fd = fd_;
    if (pe != p.rank) {
      const std::string name = heap_object_name(p.job_id, p.instance, pe);
      // Peers create their objects concurrently: the heap-base agreement (a store
      // allgather) happens after every PE created its own, so it exists now.
      fd = open_object(p.dir, name, O_RDWR | O_CLOEXEC);
      if (fd < 0) return errno_status(Errc::kIo, "opening " + object_path(p.dir, name) + " of PE " + std::to_string(pe), errno);
    }
    // MAP_NORESERVE: hugetlbfs would otherwise reserve the whole sparse heap from the pool
    // at once; pages are allocated by commit() instead (elsewhere the flag changes nothing).
    void* h = mmap(heap(pe), heap_size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_NORESERVE, fd, 0);
    void* m = h == MAP_FAILED ? MAP_FAILED
                              : mmap(meta(pe), meta_size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
                                     off_t(heap_size_));
    int err = errno;
    if (fd != fd_) close(fd);
    if (h == MAP_FAILED || m == MAP_FAILED)
      return errno_status(Errc::kIo, "mapping the heap of PE " + std::to_string(pe), err);
    mapped_[size_t(pe)] = 1;
  }
  return {};
}

uint64_t SymmetricHeap::commit_target(uint64_t extent) const {
  uint64_t target = round_up(extent, commit_chunk_);
  return target > heap_size_ ? heap_size_ : target;
}

uint64_t SymmetricHeap::commit_need(uint64_t extent) const {
  if (extent <= committed_) return 0;
  return commit_target(extent) - committed_;
}

Status SymmetricHeap::commit(uint64_t extent) {
  if (extent <= committed_) return {};
  uint64_t target = commit_target(extent);
  int e = posix_fallocate(fd_, off_t(committed_), off_t(target - committed_));
  if (e != 0) {
    const std::string where = dir_.empty() ? "/dev/shm" : dir_;
    return Status(Errc::kNoMemory,
                  where + " cannot back " + format_size(target - committed_) + " more bytes of symmetric heap (" +
                      std::strerror(e) + "); free space in " + where + " or lower SHMEM_SYMMETRIC_SIZE / the allocation");
  }
  committed_ = target;
  return {};
}

void SymmetricHeap::uncommit(uint64_t extent) {
  uint64_t keep = extent == 0 ? 0 : commit_target(extent);
  if (keep >= committed_) return;
  // Punching the hole frees the pages at once; should it fail, they stay committed, which
  // is safe (only wasteful), so committed_ keeps saying so.
  if (fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off_t(keep), off_t(committed_ - keep)) == 0)
    committed_ = keep;
}

bool SymmetricHeap::retain(const void* addr, uint64_t n) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  if (!base_ || a < base_ || n == 0) return false;
  const uint64_t pe = (a - base_) / heap_size_;
  if (pe >= uint64_t(npes_) || !mapped_[pe] || a + n > base_ + (pe + 1) * heap_size_ || a + n < a) return false;
  const uintptr_t page = std::max<uintptr_t>(uintptr_t(sysconf(_SC_PAGESIZE)), page_);  // hugetlbfs: whole huge pages
  retained_.emplace_back(a / page * page, round_up(a + n, page));
  return true;
}

SymmetricHeap::~SymmetricHeap() {
  // Retained pages: a private copy replaces the shared pages in one mremap (the range is
  // never unmapped in between, so nothing else can be mapped there); then the rest goes.
  if (base_ && !retained_.empty()) {
    std::sort(retained_.begin(), retained_.end());
    std::vector<std::pair<uintptr_t, uintptr_t>> keep;
    for (auto r : retained_) {
      if (!keep.empty() && r.first <= keep.back().second) keep.back().second = std::max(keep.back().second, r.second);
      else keep.push_back(r);
    }
    for (auto [lo, hi] : keep) {
      const size_t len = hi - lo;
      void* copy = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      void* got = MAP_FAILED;
      if (copy != MAP_FAILED) {
        std::memcpy(copy, reinterpret_cast<void*>(lo), len);
        // The raw syscall: an interposed mremap (UCX's memory hooks) may drop new_address.
        got = reinterpret_cast<void*>(
            syscall(SYS_mremap, copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, reinterpret_cast<void*>(lo)));
        if (got == MAP_FAILED) munmap(copy, len);  // the shared pages stay: still valid memory
      }
    }
    uintptr_t at = base_;
    for (auto [lo, hi] : keep) {
      if (lo > at) munmap(reinterpret_cast<void*>(at), lo - at);
      at = hi;
    }
    if (base_ + total_ > at) munmap(reinterpret_cast<void*>(at), base_ + total_ - at);
    base_ = 0;
  }
  if (base_) munmap(reinterpret_cast<void*>(base_), total_);
  if (fd_ >= 0) close(fd_);
  if (linked_) unlink_object(dir_, name_);
}

}  // namespace symmem
