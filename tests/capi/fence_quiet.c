/* Ordering and completion: message passing around a ring. Each PE writes a data block to
 * the next PE, then a flag; the receiver polls its own flag and, once it sees it, the
 * data must be complete. The order is enforced four ways: blocking put + fence, nbi put
 * + fence, blocking put + quiet, nbi put + quiet. Then quiet as remote completion: after
 * puts to every PE and one quiet, gets see all of them. */
#include "capi_check.h"

enum { kMaxData = 1 << 20, kIters = 120 };
enum Mode { kPutFence, kNbiFence, kPutQuiet, kNbiQuiet, kModes };
static const char *const kModeName[kModes] = {"putmem + fence", "putmem_nbi + fence",
                                              "putmem + quiet", "putmem_nbi + quiet"};

static unsigned char pattern(int pe, size_t i, long seq) {
  return (unsigned char)(i * 7 + (size_t)pe * 59 + (size_t)seq * 13);
}

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  const size_t sizes[] = {8, 1000, 65536, kMaxData};

  unsigned char *data = shmem_malloc(kMaxData);
  long *flag = capi_zalloc(1, sizeof(long)); /* set by prev: "your data is there" */
  long *ack = capi_zalloc(1, sizeof(long));  /* set by next: "I have read it" */
  unsigned char *local = malloc(kMaxData);
  if (!data || !flag || !ack || !local) FATAL("allocation failed");

  for (int mode = 0; mode < kModes; ++mode) {
    for (int it = 0; it < kIters; ++it) {
      const long seq = (long)mode * kIters + it + 1; /* never repeats, so no stale match */
      const size_t size = sizes[it % 4];
      for (size_t i = 0; i < size; ++i) local[i] = pattern(me, i, seq);

      if (mode == kPutFence || mode == kPutQuiet)
        shmem_putmem(data, local, size, next);
      else
        shmem_putmem_nbi(data, local, size, next);
      if (mode == kPutFence || mode == kNbiFence)
        shmem_fence();
      else
        shmem_quiet();
      shmem_long_p(flag, seq, next);

      capi_wait_long(flag, seq, "the data flag");
      for (size_t i = 0; i < size; ++i) {
        if (data[i] != pattern(prev, i, seq)) {
          CHECK(0, "%s: flag %ld seen but data byte %zu of %zu is %u, expected %u",
                kModeName[mode], seq, i, size, data[i], pattern(prev, i, seq));
          break;
        }
      }
      /* Tell prev it may overwrite `data`; wait until next has read mine before `local`
       * (possibly still the source of an nbi put) and next's `data` are reused. */
      shmem_long_p(ack, seq, prev);
      capi_wait_long(ack, seq, "the ack");
    }
  }
  shmem_barrier_all();

  /* quiet completes puts to every PE at once: afterwards a get sees each of them. */
  long *slots = capi_zalloc((size_t)n, sizeof(long));
  if (!slots) FATAL("allocation failed");
  shmem_barrier_all();
  for (int pe = 0; pe < n; ++pe) shmem_long_p(&slots[me], 1000 + me, pe);
  shmem_quiet();
  for (int pe = 0; pe < n; ++pe) {
    const long v = shmem_long_g(&slots[me], pe);
    CHECK(v == 1000 + me, "after shmem_quiet, PE %d's slot reads %ld, expected %d", pe, v, 1000 + me);
  }
  shmem_barrier_all();

  free(local);
  shmem_free(slots);
  shmem_free(ack);
  shmem_free(flag);
  shmem_free(data);
  return capi_finish();
}
