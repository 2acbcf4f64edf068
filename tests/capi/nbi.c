/* Non-blocking putmem_nbi / getmem_nbi: many operations in flight, then shmem_quiet
 * completes them all (puts delivered at the target, gets landed locally). */
#include "capi_check.h"

enum { kBuf = 4 << 20, kSmall = 4096 };

static unsigned char pattern(int pe, size_t i, int round) {
  return (unsigned char)(i * 17 + (size_t)pe * 101 + (size_t)round * 3);
}

static void check_bytes(const unsigned char *buf, size_t size, int pe, int round, const char *what) {
  for (size_t i = 0; i < size; ++i) {
    if (buf[i] != pattern(pe, i, round)) {
      CHECK(0, "%s round %d: byte %zu is %u, expected %u (from PE %d)", what, round, i, buf[i],
            pattern(pe, i, round), pe);
      return;
    }
  }
}

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;

  unsigned char *src = shmem_malloc(kBuf);
  unsigned char *dst = shmem_malloc(kBuf);
  unsigned char *local = malloc(kBuf);
  if (!src || !dst || !local) FATAL("allocation failed");

  /* Round 0: one large nbi put; round 1: 1024 small ones, each to its own 4 KiB slot
   * (strided through the buffer); round 2: 8-byte puts at every 8th byte of 64 KiB.
   * Each round: puts, quiet, then the target checks after a barrier. */
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < kBuf; ++i) local[i] = pattern(me, i, round);
    memset(dst, 0, kBuf);
    shmem_barrier_all();
    size_t checked = kBuf;
    if (round == 0) {
      shmem_putmem_nbi(dst, local, kBuf, next);
    } else if (round == 1) {
      for (size_t k = 0; k < kBuf / kSmall; ++k)
        shmem_putmem_nbi(dst + k * kSmall, local + k * kSmall, kSmall, next);
    } else {
      checked = 65536;
      for (size_t off = 0; off < checked; off += 8) shmem_putmem_nbi(dst + off, local + off, 8, next);
    }
    shmem_quiet();
    /* After quiet the puts are complete at the target: reading the target back with a
     * get, before any barrier, sees them. */
    unsigned char back[kSmall];
    shmem_getmem(back, dst + checked - kSmall, kSmall, next);
    for (size_t i = 0; i < kSmall; ++i) {
      if (back[i] != local[checked - kSmall + i]) {
        CHECK(0, "putmem_nbi round %d: after shmem_quiet, a get from PE %d reads stale byte %zu",
              round, next, checked - kSmall + i);
        break;
      }
    }
    shmem_barrier_all();
    check_bytes(dst, checked, prev, round, "putmem_nbi");
  }

  /* Gets: the data is in `local` only after quiet. */
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < kBuf; ++i) src[i] = pattern(me, i, round + 10);
    memset(local, 0, kBuf);
    shmem_barrier_all();
    const size_t total = round == 2 ? 65536 : kBuf;
    if (round == 0) {
      shmem_getmem_nbi(local, src, kBuf, next);
    } else {
      const size_t chunk = round == 1 ? kSmall : 8;
      /* Issued in reverse order: completion must not depend on issue order. */
      for (size_t k = total / chunk; k-- > 0;)
        shmem_getmem_nbi(local + k * chunk, src + k * chunk, chunk, next);
    }
    shmem_quiet();
    check_bytes(local, total, next, round + 10, "getmem_nbi");
    shmem_barrier_all(); /* next round rewrites src */
  }

  free(local);
  shmem_free(dst);
  shmem_free(src);
  return capi_finish();
}
