/* shmem_ptr and shmem_addr_accessible. The PEs of this node (SHMEM_TEAM_SHARED: all of
 * them on one node) are reachable by load/store: shmem_ptr must return non-NULL for them,
 * and reads and writes through it reach that PE's copy of the object. For the PEs of
 * other nodes (tests/ucx runs it on 2 emulated nodes) it must return NULL, while
 * shmem_addr_accessible still says 1. */
#include <stdint.h>

#include "capi_check.h"

enum { kN = 4096 };

static long value(int pe, int i) { return (long)pe * 1000003L + i; }

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;

  long *a = shmem_malloc(kN * sizeof(long));
  long *mail = capi_zalloc((size_t)n, sizeof(long));
  if (!a || !mail) FATAL("allocation failed");
  for (int i = 0; i < kN; ++i) a[i] = value(me, i);
  shmem_barrier_all();

  /* Reading through shmem_ptr sees each PE's data; interior pointers map consistently. */
  for (int pe = 0; pe < n; ++pe) {
    const long *q = shmem_ptr(a, pe);
    const int near = shmem_team_translate_pe(SHMEM_TEAM_WORLD, pe, SHMEM_TEAM_SHARED) >= 0;
    CHECK((q != NULL) == near, "shmem_ptr(a, %d) is %s for a PE %s", pe, q ? "not NULL" : "NULL",
          near ? "of this node" : "of another node");
    if (!q) continue;
    CHECK(shmem_ptr(a + 100, pe) == q + 100, "shmem_ptr(a + 100, %d) != shmem_ptr(a, %d) + 100",
          pe, pe);
    for (int i = 0; i < kN; ++i) {
      if (q[i] != value(pe, i)) {
        CHECK(0, "through shmem_ptr to PE %d, a[%d] = %ld, expected %ld", pe, i, q[i], value(pe, i));
        break;
      }
    }
  }
  const long *self = shmem_ptr(a, me);
  CHECK(self == NULL || self[7] == a[7], "shmem_ptr to my own PE does not alias my data");
  shmem_barrier_all();

  /* Writing through it: a store into the next PE's mailbox, seen there after a barrier. */
  long *slot = shmem_ptr(&mail[me], next);
  if (slot) *slot = value(me, 1);
  else shmem_long_p(&mail[me], value(me, 1), next); /* another node */
  shmem_barrier_all();
  CHECK(mail[prev] == value(prev, 1), "store through shmem_ptr from PE %d: mail = %ld", prev,
        mail[prev]);

  /* shmem_addr_accessible: symmetric heap yes, stack and private heap no. */
  long on_stack = 0;
  long *private_heap = malloc(sizeof(long));
  for (int pe = 0; pe < n; ++pe) {
    CHECK(shmem_addr_accessible(a, pe) == 1, "shmem_addr_accessible(heap object, %d) = 0", pe);
    CHECK(shmem_addr_accessible(a + kN - 1, pe) == 1,
          "shmem_addr_accessible(last element of a heap object, %d) = 0", pe);
    CHECK(shmem_addr_accessible(&on_stack, pe) == 0, "shmem_addr_accessible(stack, %d) = 1", pe);
    CHECK(shmem_addr_accessible(private_heap, pe) == 0,
          "shmem_addr_accessible(malloc'd memory, %d) = 1", pe);
  }
  free(private_heap);

  shmem_barrier_all();
  shmem_free(mail);
  shmem_free(a);
  return capi_finish();
}
