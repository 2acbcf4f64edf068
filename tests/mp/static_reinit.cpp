// Init/finalize cycles with symmetric globals: each cycle moves the data segment into
// shared memory and back. Values survive every move, puts work in every cycle, and
// nothing accumulates: after each finalize the globals are private memory again and the
// process holds the same number of mappings and file descriptors as after the first.
// Exit code is the verdict (plain program, run under symmem-run).
#include <dirent.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "symmem/symmem.hpp"

namespace {

long g_value = 5;            // .data
long g_from_left[64];        // .bss
int g_failures = 0;

#define EXPECT(cond, ...)                                    \
  do {                                                       \
    if (!(cond)) {                                           \
      ++g_failures;                                          \
      std::fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                     \
      std::fputc('\n', stderr);                              \
    }                                                        \
  } while (0)

int count_fds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

// The /proc/self/maps line of the mapping holding `addr`, and how many lines there are.
std::string mapping_of(const void* addr, int* lines) {
  std::ifstream maps("/proc/self/maps");
  std::string line, found;
  *lines = 0;
  auto a = reinterpret_cast<uintptr_t>(addr);
  while (std::getline(maps, line)) {
    ++*lines;
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi) found = line;
  }
  return found;
}

}  // namespace

int main() {
  const int kCycles = 20;
  EXPECT(g_value == 5, "initial value %ld before the first init", g_value);
  int fds0 = -1, maps0 = -1;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    {
      // A fresh instance id per cycle keeps the bootstrap store's tags apart (reusing
      // one instance id across cycles is issue 5's business, not this test's).
      symmem::InitOptions o;
      o.instance = cycle;
      symmem::Runtime rt(o);
      const int me = rt.my_pe(), n = rt.n_pes();
      int lines = 0;
      std::string m = mapping_of(&g_value, &lines);
      EXPECT(m.find("/dev/shm/symmem-") != std::string::npos, "cycle %d: globals are not in shared memory: %s",
             cycle, m.c_str());
      EXPECT(g_value == 5 + cycle, "cycle %d: value %ld lost across finalize/init", cycle, g_value);
      long v = 1000L * me + cycle;
      rt.put(&g_from_left[cycle], &v, 1, (me + 1) % n);
      rt.barrier_all();
      long want = 1000L * ((me + n - 1) % n) + cycle;
      EXPECT(g_from_left[cycle] == want, "cycle %d: got %ld from the left neighbour, want %ld", cycle,
             g_from_left[cycle], want);
      ++g_value;
    }  // finalize
    int lines = 0;
    std::string m = mapping_of(&g_value, &lines);
    EXPECT(m.find("/dev/shm") == std::string::npos, "cycle %d: after finalize the globals are still shared: %s",
           cycle, m.c_str());
    EXPECT(g_value == 6 + cycle, "cycle %d: value %ld after finalize", cycle, g_value);
    int fds = count_fds();
    if (cycle == 0) {
      fds0 = fds;
      maps0 = lines;
    } else {
      EXPECT(fds == fds0, "cycle %d: %d open descriptors, %d after the first cycle", cycle, fds, fds0);
      // Mappings may merge or split by a few as the process's own allocations come and go.
      EXPECT(lines <= maps0 + 4, "cycle %d: %d mappings, %d after the first cycle", cycle, lines, maps0);
    }
  }
  for (int c = 0; c < kCycles; ++c)
    EXPECT(g_from_left[c] % 1000 == c, "value of cycle %d gone after the last finalize: %ld", c, g_from_left[c]);
  if (g_failures == 0) std::printf("static_reinit: %d init/finalize cycles OK\n", kCycles);
  return g_failures ? 1 : 0;
}
