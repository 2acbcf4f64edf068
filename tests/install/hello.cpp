// An outside C++ program built with the installed oshc++: the C API from C++.
#include <shmem.h>

#include <cstdio>

int main() {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  int* box = static_cast<int*>(shmem_malloc(sizeof(int)));
  shmem_int_p(box, me, (me + 1) % n);
  shmem_barrier_all();
  const bool ok = *box == (me + n - 1) % n;
  std::printf("hello from C++ PE %d of %d: %s\n", me, n, ok ? "ok" : "WRONG");
  shmem_free(box);
  shmem_finalize();
  return ok ? 0 : 1;
}
