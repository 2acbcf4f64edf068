// A ring exchange with the C++ API: every PE passes a typed buffer to its right neighbour,
// n_pes() times, so each buffer travels the whole ring and comes home unchanged.
//   symmem-run -n 4 build/examples/ring
#include <symmem/symmem.hpp>

#include <cstdio>
#include <vector>

int main() {
  symmem::Runtime rt;  // joins the job; the destructor finalizes
  const int me = rt.my_pe(), n = rt.n_pes();
  const size_t count = 1 << 16;

  auto inbox = rt.alloc<double>(count);  // symmetric: same address on every PE
  std::vector<double> mine(count);
  for (size_t i = 0; i < count; ++i) mine[i] = me * 1e6 + double(i);

  std::vector<double> travelling = mine;
  for (int hop = 0; hop < n; ++hop) {
    rt.put(inbox.data(), travelling.data(), count, (me + 1) % n);  // store into the peer's heap
    rt.barrier_all();                                              // quiet + everyone arrived
    travelling.assign(inbox.begin(), inbox.end());
    rt.barrier_all();  // nobody overwrites inbox before its owner copied it out
  }
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) bad += travelling[i] != mine[i];
  std::printf("PE %d of %d: buffer came back after %d hops, %zu wrong elements\n", me, n, n, bad);
  rt.free(inbox);
  return bad == 0 ? 0 : 1;
}
