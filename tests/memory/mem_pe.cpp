// The PE program of tests/memory (memory_tests.py drives it under symmem-run).
//
//   mem_pe capi BIG SMALL   each C allocator (shmem_malloc, calloc, align, realloc) asks
//                           for BIG bytes and must get NULL; then SMALL bytes must work
//                           (symmetric, zeroed by calloc) and the realloc'd block be intact
//   mem_pe cxx BIG SMALL    the same through symmem::Runtime: malloc gives nullptr,
//                           alloc<T> throws Error(kNoMemory); then SMALL works
//   mem_pe hold BYTES       allocates and fills BYTES, says "PE <r> pid <p> ready", waits
//                           for a signal (the driver kills a PE from outside)
//   mem_pe hog BYTES        like hold, then the last PE touches private memory until the
//                           out-of-memory killer ends it (run inside a small cgroup)
//   mem_pe huge BYTES       allocates BYTES, puts into the next PE's block and checks its
//                           own; then prints "PE <r> huge_kb <k>": the kB of this PE's and its
//                           peers' heaps mapped here in huge pages (/proc/self/smaps)
// Exit code 0 when every check of this PE held; each failed check prints one line.
#include <shmem.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "symmem/symmem.hpp"

namespace {

int failures = 0;

#define EXPECT(cond, ...)                                  \
  do {                                                     \
    if (!(cond)) {                                         \
      std::fprintf(stderr, "mem_pe: FAILED %s: ", #cond); \
      std::fprintf(stderr, __VA_ARGS__);                   \
      std::fprintf(stderr, "\n");                          \
      ++failures;                                          \
    }                                                      \
  } while (0)

size_t parse_bytes(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  switch (*end) {
    case 'G': v *= 1 << 30; break;
    case 'M': v *= 1 << 20; break;
    case 'K': v *= 1 << 10; break;
    default: break;
  }
  return size_t(v);
}

// A block of `n` bytes every PE allocated: each PE writes into the next PE's block, and
// checks what the previous one wrote into its own (so the block is symmetric and backed).
template <class Put, class Barrier>
void check_block(unsigned char* block, size_t n, int me, int npes, Put put, Barrier barrier, const char* what) {
  const int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
  std::vector<unsigned char> src(n);
  for (size_t i = 0; i < n; ++i) src[i] = (unsigned char)(i * 13 + me);
  barrier();
  put(block, src.data(), n, next);
  barrier();
  size_t bad = n;
  for (size_t i = 0; i < n && bad == n; ++i)
    if (block[i] != (unsigned char)(i * 13 + prev)) bad = i;
  EXPECT(bad == n, "%s: byte %zu of the %zu-byte block is not what PE %d put there", what, bad, n, prev);
}

int run_capi(size_t big, size_t small) {
  shmem_init();
  const int me = shmem_my_pe(), npes = shmem_n_pes();
  auto put = [](void* d, const void* s, size_t n, int pe) { shmem_putmem(d, s, n, pe); };
  auto barrier = [] { shmem_barrier_all(); };

  void* p = shmem_malloc(big);
  EXPECT(p == nullptr, "shmem_malloc(%zu) = %p, expected NULL", big, p);
  p = shmem_calloc(1, big);
  EXPECT(p == nullptr, "shmem_calloc(1, %zu) = %p, expected NULL", big, p);
  p = shmem_align(1 << 21, big);
  EXPECT(p == nullptr, "shmem_align(2M, %zu) = %p, expected NULL", big, p);
  // realloc: a refused growth leaves the old block as it was
  auto* q = static_cast<unsigned char*>(shmem_malloc(4096));
  EXPECT(q != nullptr, "shmem_malloc(4096) = NULL");
  if (q) {
    std::memset(q, 0x5a, 4096);
    p = shmem_realloc(q, big);
    EXPECT(p == nullptr, "shmem_realloc(q, %zu) = %p, expected NULL", big, p);
    bool intact = true;
    for (int i = 0; i < 4096; ++i) intact = intact && q[i] == 0x5a;
    EXPECT(intact, "the block a refused shmem_realloc kept was changed");
    check_block(q, 4096, me, npes, put, barrier, "the block a refused shmem_realloc kept");
  }
  // Afterwards the heap works: a smaller allocation that commits new memory succeeds on
  // every PE, is symmetric, and calloc zeroes.
  auto* s = static_cast<unsigned char*>(shmem_malloc(small));
  EXPECT(s != nullptr, "shmem_malloc(%zu) after the refusals = NULL", small);
  if (s) check_block(s, small, me, npes, put, barrier, "shmem_malloc after the refusals");
  auto* z = static_cast<unsigned char*>(shmem_calloc(small, 1));
  EXPECT(z != nullptr, "shmem_calloc(%zu, 1) after the refusals = NULL", small);
  if (z) {
    size_t nonzero = 0;
    for (size_t i = 0; i < small; ++i) nonzero += z[i] != 0;
    EXPECT(nonzero == 0, "shmem_calloc gave %zu nonzero bytes", nonzero);
  }
  if (q) {
    auto* g = static_cast<unsigned char*>(shmem_realloc(q, small));
    EXPECT(g != nullptr, "shmem_realloc(q, %zu) after the refusals = NULL", small);
    if (g) {
      bool kept = true;
      for (int i = 0; i < 4096; ++i) kept = kept && g[i] == (unsigned char)(i * 13 + (me + npes - 1) % npes);
      EXPECT(kept, "shmem_realloc did not keep the block's contents");
      q = g;
    }
  }
  shmem_free(z);
  shmem_free(s);
  shmem_free(q);
  if (me == 0 && failures == 0) std::printf("mem_pe capi: every check held\n");
  std::fflush(stdout);
  shmem_finalize();
  return failures ? 1 : 0;
}

int run_cxx(size_t big, size_t small) {
  symmem::Runtime rt;
  const int me = rt.my_pe(), npes = rt.n_pes();
  void* p = rt.malloc(big);
  EXPECT(p == nullptr, "Runtime::malloc(%zu) = %p, expected nullptr", big, p);
  bool threw = false;
  try {
    auto span = rt.alloc<double>(big / sizeof(double));
    rt.free(span);
  } catch (const symmem::Error& e) {
    threw = e.code() == symmem::Errc::kNoMemory;
    EXPECT(threw, "Runtime::alloc threw %s (%s), expected kNoMemory", symmem::errc_name(e.code()), e.what());
  }
  EXPECT(threw, "Runtime::alloc<double>(%zu) did not throw", big / sizeof(double));
  auto put = [&](void* d, const void* s, size_t n, int pe) { rt.put(d, s, n, pe); };
  auto barrier = [&] { rt.barrier_all(); };
  auto span = rt.alloc<unsigned char>(small);
  EXPECT(span.data() != nullptr, "Runtime::alloc(%zu) after the refusals = nullptr", small);
  check_block(span.data(), small, me, npes, put, barrier, "Runtime::alloc after the refusals");
  rt.free(span);
  if (me == 0 && failures == 0) std::printf("mem_pe cxx: every check held\n");
  std::fflush(stdout);
  return failures ? 1 : 0;
}

int run_hold(size_t bytes, bool hog) {
  shmem_init();
  const int me = shmem_my_pe(), npes = shmem_n_pes();
  auto* b = static_cast<unsigned char*>(shmem_malloc(bytes));
  EXPECT(b != nullptr, "shmem_malloc(%zu) = NULL", bytes);
  if (!b) return 1;
  std::memset(b, me + 1, bytes);
  shmem_barrier_all();
  std::printf("PE %d pid %d ready\n", me, int(getpid()));
  std::fflush(stdout);
  if (hog && me == npes - 1) {
    // Be the one the out-of-memory killer picks, then grow until it does.
    if (FILE* f = std::fopen("/proc/self/oom_score_adj", "w")) {
      std::fputs("1000", f);
      std::fclose(f);
    }
    // Volatile stores, one per page: an optimiser may drop a memset of memory never read
    // (clang -O3 dropped the malloc too, and nothing was touched).
    for (size_t mib = 0; mib < (size_t(64) << 10); ++mib) {
      auto* c = static_cast<volatile char*>(std::malloc(1 << 20));
      if (!c) break;
      for (size_t i = 0; i < (1 << 20); i += 4096) c[i] = 1;
    }
    std::fprintf(stderr, "mem_pe: FAILED: touched 64 GiB of private memory and was not stopped\n");
    return 1;
  }
  // Held until the driver kills a PE and symmem-run ends the rest (the hog's peers wait in
  // a barrier the hog never reaches).
  if (hog) shmem_barrier_all();
  for (;;) pause();
}

// kB of the mappings overlapping [lo, hi) that /proc/self/smaps shows in huge pages:
// PMD-mapped shmem or file pages (tmpfs huge=) or hugetlbfs pages.
long huge_kb(uintptr_t lo, uintptr_t hi) {
  FILE* f = std::fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  char line[512];
  bool in = false;
  long kb = 0;
  while (std::fgets(line, sizeof line, f)) {
    unsigned long a, b;
    if (std::sscanf(line, "%lx-%lx ", &a, &b) == 2) {  // a mapping's first line; "Name: value" lines fail
      in = a < hi && b > lo;
      continue;
    }
    long v = 0;
    if (in && (std::sscanf(line, "ShmemPmdMapped: %ld", &v) == 1 || std::sscanf(line, "FilePmdMapped: %ld", &v) == 1 ||
               std::sscanf(line, "Shared_Hugetlb: %ld", &v) == 1 || std::sscanf(line, "Private_Hugetlb: %ld", &v) == 1))
      kb += v;
  }
  std::fclose(f);
  return kb;
}

int run_huge(size_t bytes) {
  shmem_init();
  const int me = shmem_my_pe(), npes = shmem_n_pes();
  auto* b = static_cast<unsigned char*>(shmem_malloc(bytes));
  EXPECT(b != nullptr, "shmem_malloc(%zu) = NULL", bytes);
  if (b) {
    auto put = [](void* d, const void* s, size_t n, int pe) { shmem_putmem(d, s, n, pe); };
    check_block(b, bytes, me, npes, put, [] { shmem_barrier_all(); }, "the block");
    // Every PE's block is mapped here (this PE's own heap and its on-node peers'): read
    // each one through its mapping so that all of them are in this process's page tables.
    unsigned sum = 0;
    for (int pe = 0; pe < npes; ++pe) {
      const auto* q = static_cast<const volatile unsigned char*>(shmem_ptr(b, pe));
      for (size_t i = 0; q && i < bytes; i += 4096) sum += q[i];
    }
    EXPECT(sum != 0, "every PE's block reads as zeros");
    auto lo = reinterpret_cast<uintptr_t>(shmem_ptr(b, 0));
    auto hi = reinterpret_cast<uintptr_t>(shmem_ptr(b, npes - 1)) + bytes;
    std::printf("PE %d huge_kb %ld\n", me, huge_kb(lo, hi));
  }
  std::fflush(stdout);
  shmem_barrier_all();
  shmem_free(b);
  shmem_finalize();
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if ((mode == "capi" || mode == "cxx") && argc >= 4) {
    size_t big = parse_bytes(argv[2]), small = parse_bytes(argv[3]);
    return mode == "capi" ? run_capi(big, small) : run_cxx(big, small);
  }
  if ((mode == "hold" || mode == "hog") && argc >= 3) return run_hold(parse_bytes(argv[2]), mode == "hog");
  if (mode == "huge" && argc >= 3) return run_huge(parse_bytes(argv[2]));
  std::fprintf(stderr, "usage: mem_pe capi|cxx BIG SMALL | hold|hog|huge BYTES [marker]\n");
  return 2;
}
