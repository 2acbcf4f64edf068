#include "heap/static_data.hpp"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "common/config.hpp"
#include "common/log.hpp"

namespace symmem {
namespace {

// The runtime that owns this process's data segment (at most one at a time).
std::atomic<StaticData*> g_owner{nullptr};
std::once_flag g_atfork_once;

uint64_t page_size() { return static_cast<uint64_t>(sysconf(_SC_PAGESIZE)); }
uintptr_t round_down(uintptr_t v, uint64_t a) { return v / a * a; }
uintptr_t round_up(uintptr_t v, uint64_t a) { return (v + a - 1) / a * a; }

struct Range {
  uintptr_t lo, hi;
};

struct Scan {
  bool seen = false;
  std::vector<Range> writable;  // page-rounded PT_LOAD segments with PF_W
  Range relro{0, 0};            // what ld.so makes read-only: [down(start), down(end))
  std::string build_id;
};

std::string read_build_id(uintptr_t addr, uint64_t size, uint64_t align) {
  if (align < 4) align = 4;
  uintptr_t p = addr, end = addr + size;
  while (p + sizeof(ElfW(Nhdr)) <= end) {
    const auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
    uintptr_t name = p + sizeof(ElfW(Nhdr));
    uintptr_t desc = name + round_up(nh->n_namesz, align);
    uintptr_t next = desc + round_up(nh->n_descsz, align);
    if (next > end || next <= p) break;
    if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
        std::memcmp(reinterpret_cast<const char*>(name), "GNU", 4) == 0) {
      std::string hex;
      char b[3];
      for (uint32_t i = 0; i < nh->n_descsz; ++i) {
        std::snprintf(b, sizeof b, "%02x", reinterpret_cast<const unsigned char*>(desc)[i]);
        hex += b;
      }
      return hex;
    }
    p = next;
  }
  return {};
}

// dl_iterate_phdr reports the main program first; we read it and stop.
int scan_main_program(struct dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<Scan*>(data);
  const uint64_t page = page_size();
  s->seen = true;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    uintptr_t a = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W) && ph.p_memsz > 0)
      s->writable.push_back({round_down(a, page), round_up(a + ph.p_memsz, page)});
    else if (ph.p_type == PT_GNU_RELRO)
      s->relro = {round_down(a, page), round_down(a + ph.p_memsz, page)};
    else if (ph.p_type == PT_NOTE && s->build_id.empty())
      s->build_id = read_build_id(a, ph.p_memsz, ph.p_align);
  }
  return 1;
}

// Copies [src, src+n) to zero-filled dst, skipping all-zero pages: an untouched .bss page
// reads as the shared zero page and costs nothing to leave alone.
// The range is whole pages of the data segment, so under AddressSanitizer it includes the
// poisoned red zones around instrumented globals: this copy reads them on purpose, so it
// is not instrumented, and copies word by word (the empty asm keeps the compiler from
// turning the loop into a memcpy call, which ASan intercepts and checks). The shadow of
// the range stays as it was: the move keeps every global at its address.
__attribute__((no_sanitize("address"))) void copy_nonzero_pages(char* dst, const char* src, uint64_t n,
                                                                 uint64_t page) {
  for (uint64_t o = 0; o < n; o += page) {
    const uint64_t* w = reinterpret_cast<const uint64_t*>(src + o);
    uint64_t* out = reinterpret_cast<uint64_t*>(dst + o);
    const uint64_t words = page / sizeof(uint64_t);
    bool zero = true;
    for (uint64_t i = 0; i < words; ++i)
      if (w[i] != 0) {
        zero = false;
        break;
      }
    if (zero) continue;
    for (uint64_t i = 0; i < words; ++i) {
      uint64_t v = w[i];
      asm volatile("" : "+r"(v));
      out[i] = v;
    }
  }
}

// Atomically replaces [to, to+n) with the mapping at `from` (same length). The raw
// syscall: nothing (no interposed wrapper) may run between a copy and this move.
bool move_mapping(void* from, uintptr_t to, uint64_t n) {
  long r = syscall(SYS_mremap, from, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, reinterpret_cast<void*>(to));
  return r != -1;
}

// Turns the range back into private anonymous memory holding the same bytes.
bool make_private(uintptr_t start, uint64_t size) {
  void* tmp = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (tmp == MAP_FAILED) return false;
  copy_nonzero_pages(static_cast<char*>(tmp), reinterpret_cast<const char*>(start), size, page_size());
  if (!move_mapping(tmp, start, size)) {
    munmap(tmp, size);
    return false;
  }
  return true;
}

int count_threads() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

}  // namespace

std::string static_object_name(const std::string& job_id, int instance, int rank) {
  return "symmem-" + job_id + "-i" + std::to_string(instance) + "-s" + std::to_string(rank);
}

Result<StaticSegment> find_static_segment() {
  Scan s;
  dl_iterate_phdr(scan_main_program, &s);
  if (!s.seen) return Status(Errc::kInternal, "dl_iterate_phdr reported no main program");
  // Writable pages minus what ld.so protects as RELRO (.got, .dynamic, .data.rel.ro):
  // those are not program variables, and they must stay read-only.
  std::vector<Range> pieces;
  for (const Range& w : s.writable) {
    Range below{w.lo, std::min(w.hi, s.relro.lo)}, above{std::max(w.lo, s.relro.hi), w.hi};
    if (s.relro.hi <= s.relro.lo) {
      pieces.push_back(w);
      continue;
    }
    if (below.lo < below.hi) pieces.push_back(below);
    if (above.lo < above.hi) pieces.push_back(above);
  }
  std::sort(pieces.begin(), pieces.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
  std::vector<Range> merged;
  for (const Range& r : pieces) {
    if (!merged.empty() && r.lo <= merged.back().hi) merged.back().hi = std::max(merged.back().hi, r.hi);
    else merged.push_back(r);
  }
  char exe[4096];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  StaticSegment seg;
  seg.exe = len > 0 ? std::string(exe, size_t(len)) : "?";
  seg.build_id = s.build_id;
  if (merged.empty()) return Status(Errc::kInvalidArgument, "the executable has no writable data segment");
  if (merged.size() > 1)
    return Status(Errc::kInvalidArgument, "the executable's writable data is in " + std::to_string(merged.size()) +
                                              " separate ranges (unusual linker layout); static data stays private");
  seg.start = merged[0].lo;
  seg.size = merged[0].hi - merged[0].lo;
  return seg;
}

Result<std::unique_ptr<StaticData>> StaticData::attach(const StaticParams& p, Store* store) {
  if (p.npes > 1 && !store) return Status(Errc::kInvalidArgument, "multi-PE static data needs a store");
  std::unique_ptr<StaticData> d(new StaticData());
  d->params_ = p;
  std::string mine;  // what this PE tells the others: "on <S> <build-id|-> <exe>" or "off <why>"
  StaticData* expected = nullptr;
  if (!p.enabled) {
    mine = "off SYMMEM_STATIC_DATA=0";
  } else if (!g_owner.compare_exchange_strong(expected, d.get())) {
    mine = "off another runtime of that process owns its static data";
  } else {
    d->owner_ = true;
    auto seg = find_static_segment();
    if (!seg.ok()) {
      mine = "off " + seg.status().message();
    } else {
      d->seg_ = *seg;
      SYMMEM_RETURN_IF_ERROR(d->share(p));
      char buf[128];
      std::snprintf(buf, sizeof buf, "on %" PRIu64 " %s ", d->seg_.size,
                    d->seg_.build_id.empty() ? "-" : d->seg_.build_id.c_str());
      mine = buf + d->seg_.exe;
    }
  }
  std::vector<std::string> all{mine};
  if (p.npes > 1) {
    SYMMEM_ASSIGN_OR_RETURN(all, store_allgather(*store, "static/i" + std::to_string(p.instance) + "/info", p.rank,
                                                 p.npes, mine, p.timeout_s));
  }
  int on = -1, off = -1;
  for (int pe = 0; pe < p.npes; ++pe) (all[pe].rfind("on ", 0) == 0 ? on : off) = pe;
  if (on < 0) {
    if (p.enabled && p.rank == 0) log_pe(LogLevel::kDebug, p.rank, "static data is not symmetric: %s", mine.c_str() + 4);
    return std::unique_ptr<StaticData>();
  }
  if (off >= 0)
    return Status(Errc::kMismatch, "global and static variables are symmetric on PE " + std::to_string(on) +
                                       " but not on PE " + std::to_string(off) + " (" + all[off].substr(4) +
                                       "); set SYMMEM_STATIC_DATA the same on every PE");
  for (int pe = 0; pe < p.npes; ++pe) {
    unsigned long long size = 0;
    char id[128] = {0};
    int used = 0;
    std::sscanf(all[pe].c_str(), "on %llu %127s %n", &size, id, &used);
    bool same_id = d->seg_.build_id.empty() || std::strcmp(id, "-") == 0 || d->seg_.build_id == id;
    if (size != d->seg_.size || !same_id)
      return Status(Errc::kMismatch,
                    "PE " + std::to_string(pe) + " runs another executable (" + all[pe].substr(size_t(used)) + ", " +
                        std::to_string(size) + " bytes of static data, build-id " + id + ") than this PE (" +
                        d->seg_.exe + ", " + std::to_string(d->seg_.size) + " bytes, build-id " +
                        (d->seg_.build_id.empty() ? "-" : d->seg_.build_id) +
                        "); every PE must run the same program for its global variables to be symmetric");
  }
  return d;
}

Status StaticData::share(const StaticParams& p) {
  std::call_once(g_atfork_once, [] { pthread_atfork(nullptr, nullptr, &StaticData::after_fork_in_child); });
  name_ = static_object_name(p.job_id, p.instance, p.rank);
  std::string path = "/" + name_;
  fd_ = shm_open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd_ < 0) return errno_status(Errc::kIo, "shm_open(" + path + ")", errno);
  linked_ = true;
  if (ftruncate(fd_, off_t(seg_.size)) != 0) return errno_status(Errc::kIo, "ftruncate(" + path + ")", errno);
  // Committed whole now: a store to a global must never turn into a SIGBUS later.
  if (p.commit_policy) {
    CommitPolicy in_shm = *p.commit_policy;  // static data lives in /dev/shm whatever SYMMEM_HEAP_DIR says
    in_shm.shm_dir.clear();
    Status s = in_shm.check(seg_.size);
    if (!s.ok())
      return Status(s.code(), "the program's global variables (SYMMEM_STATIC_DATA=0 keeps them private): " + s.message());
  }
  if (int e = posix_fallocate(fd_, 0, off_t(seg_.size)); e != 0)
    return Status(Errc::kNoMemory, "/dev/shm cannot hold the program's " + format_size(seg_.size) +
                                       " of global variables (" + std::strerror(e) +
                                       "); free space in /dev/shm or set SYMMEM_STATIC_DATA=0");
  if (int t = count_threads(); t > 1)
    log_pe(LogLevel::kInfo, p.rank, "static data: %d threads are running while the program's globals move into "
           "shared memory; a store another thread makes to a global during the move is lost (docs/static-data.md)", t);
  void* tmp = mmap(nullptr, seg_.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (tmp == MAP_FAILED) return errno_status(Errc::kIo, "mmap(" + path + ")", errno);
  // From the copy to the move, nothing may write the range (another thread of this
  // process writing a global now would lose its store; see docs/static-data.md).
  copy_nonzero_pages(static_cast<char*>(tmp), reinterpret_cast<const char*>(seg_.start), seg_.size, page_size());
  if (!move_mapping(tmp, seg_.start, seg_.size)) {
    int e = errno;
    munmap(tmp, seg_.size);
    return errno_status(Errc::kIo, "mremap of the program's data segment into shared memory", e);
  }
  shared_ = true;
  log_pe(LogLevel::kDebug, p.rank, "static data: %s at 0x%" PRIxPTR " of %s is shared as %s",
         format_size(seg_.size).c_str(), seg_.start, seg_.exe.c_str(), path.c_str());
  return {};
}

Status StaticData::map_peers(char* copies, Store* store, const std::vector<uint8_t>& map_pe) {
  const StaticParams& p = params_;
  for (int pe = 0; pe < p.npes; ++pe) {
    if (pe != p.rank && !map_pe.empty() && !map_pe[size_t(pe)]) continue;  // another node's
    int fd = fd_;
    std::string path = "/";  // then +=: "/" + a temporary trips GCC 12's -Wrestrict (a false positive)
    path += static_object_name(p.job_id, p.instance, pe);
    if (pe != p.rank) {
      fd = shm_open(path.c_str(), O_RDWR | O_CLOEXEC, 0600);  // created before attach's allgather
      if (fd < 0) return errno_status(Errc::kIo, "shm_open(" + path + ") of PE " + std::to_string(pe), errno);
    }
    struct stat st;
    int err = 0;
    if (fstat(fd, &st) != 0) err = errno;
    else if (uint64_t(st.st_size) != seg_.size) err = EINVAL;
    void* m = err ? MAP_FAILED
                  : mmap(copies + uint64_t(pe) * seg_.size, seg_.size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                         fd, 0);
    if (m == MAP_FAILED && !err) err = errno;
    if (fd != fd_) close(fd);
    if (err) return errno_status(Errc::kIo, "mapping the static data of PE " + std::to_string(pe) + " (" + path + ")", err);
  }
  if (p.npes > 1)
    SYMMEM_RETURN_IF_ERROR(store_barrier(*store, "static/i" + std::to_string(p.instance) + "/mapped", p.rank, p.npes,
                                         p.timeout_s));
  shm_unlink(("/" + name_).c_str());
  linked_ = false;
  close(fd_);
  fd_ = -1;
  return {};
}

void StaticData::after_fork_in_child() {
  StaticData* d = g_owner.load();
  if (!d) return;
  if (d->shared_ && !make_private(d->seg_.start, d->seg_.size)) {
    static const char kMsg[] = "symmem: fork: cannot give the child a private copy of its global variables\n";
    ssize_t r = write(2, kMsg, sizeof kMsg - 1);
    (void)r;
  }
  d->shared_ = false;
  d->owner_ = false;
  if (d->fd_ >= 0) close(d->fd_);
  d->fd_ = -1;
  d->linked_ = false;  // the name is the parent's to remove
  g_owner.store(nullptr);
}

StaticData::~StaticData() {
  if (shared_ && !make_private(seg_.start, seg_.size))
    log_pe(LogLevel::kWarn, params_.rank, "static data: cannot move the program's globals back into private memory "
           "(%s); they stay in shared memory", std::strerror(errno));
  if (fd_ >= 0) close(fd_);
  if (linked_) shm_unlink(("/" + name_).c_str());
  if (owner_) {
    StaticData* self = this;
    g_owner.compare_exchange_strong(self, nullptr);
  }
}

}  // namespace symmem
