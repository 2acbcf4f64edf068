// Gradient all-reduce with the C++ API: every PE sums its gradient shard with everyone's
// (team.reduce), the even PEs also average a second buffer on a team of their own, and a
// work counter is shared with an atomic. Checks its results; exit code 0 when right.
//   symmem-run -n 2 build/examples/cxx_allreduce
#include <symmem/symmem.hpp>

#include <cstdio>

int main() {
  symmem::Runtime rt;  // joins the job; the destructor finalizes
  const int me = rt.my_pe(), n = rt.n_pes();
  constexpr size_t kCount = 1 << 16;

  auto grad = rt.alloc<float>(kCount);  // symmetric: same address on every PE
  auto work = rt.alloc<long>(1);
  for (size_t i = 0; i < kCount; ++i) grad[i] = float(me + 1) * 0.25f;
  work[0] = 0;
  rt.barrier_all();

  symmem::Team world = rt.team_world();
  world.reduce(symmem::op::sum, grad, grad);  // in place, every PE gets the sum
  const float expect = 0.25f * float(n) * float(n + 1) / 2;
  size_t bad = 0;
  for (size_t i = 0; i < kCount; ++i) bad += grad[i] != expect;

  {
    // The even PEs form a team; the odd ones get an invalid Team and skip the block.
    symmem::Team even = world.split_strided(0, 2, (n + 1) / 2);
    if (even) {
      auto box = grad.subspan(0, 1);  // reuses the (already checked) first element
      box[0] = float(even.my_pe());
      even.reduce(symmem::op::max, box, box);
      bad += box[0] != float(even.n_pes() - 1);
    }
  }  // every even PE destroys the team here, together

  long ticket = rt.atomic_fetch_add(work.data(), 1, 0);  // take a ticket from PE 0
  world.barrier();
  if (me == 0) bad += work[0] != n;
  bad += ticket < 0 || ticket >= n;

  std::printf("PE %d of %d: all-reduce %s (sum %.2f), ticket %ld\n", me, n, bad ? "WRONG" : "ok", double(grad[1]),
              ticket);
  rt.free(work);
  rt.free(grad);
  return bad == 0 ? 0 : 1;
}
