/* Blocking putmem / getmem around a ring, 1 B to 8 MiB, odd sizes, unaligned offsets on
 * both sides, from and into non-symmetric local memory. Guard bytes around every target
 * must stay untouched. */
#include "capi_check.h"

enum { kGuard = 64, kMaxSize = 8 << 20 };

static unsigned char pattern(int pe, size_t i, size_t salt) {
  return (unsigned char)((i * 131) ^ ((size_t)pe * 29 + salt * 7));
}

/* Checks buf[off .. off+size) against the pattern of `pe`, and that the guard bytes
 * either side still hold `guard`. Reports the first difference. */
static void check_region(const unsigned char *buf, size_t off, size_t size, int pe, size_t salt,
                         unsigned char guard, const char *what) {
  for (size_t i = 0; i < size; ++i) {
    if (buf[off + i] != pattern(pe, i, salt)) {
      CHECK(0, "%s of %zu bytes (offset %zu): byte %zu is %u, expected %u (from PE %d)", what,
            size, off, i, buf[off + i], pattern(pe, i, salt), pe);
      return;
    }
  }
  for (size_t i = off - kGuard; i < off; ++i)
    CHECK(buf[i] == guard, "%s of %zu bytes: wrote before its target (byte %zu)", what, size, i);
  for (size_t i = off + size; i < off + size + kGuard; ++i)
    CHECK(buf[i] == guard, "%s of %zu bytes: wrote past its target (byte %zu)", what, size, i);
}

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  const size_t span = kMaxSize + 2 * kGuard + 64;

  unsigned char *sym_src = shmem_malloc(span); /* what others get from me */
  unsigned char *sym_dst = shmem_malloc(span); /* where others put to me */
  unsigned char *local = malloc(span);         /* my put source / get destination */
  if (!sym_src || !sym_dst || !local) FATAL("allocation of %zu bytes failed", span);

  const size_t sizes[] = {1,    2,    3,    7,     8,      9,         63,          64,
                          65,   127,  1000, 4095,  4096,   4097,      65536 + 3,   1 << 20,
                          (1 << 20) + 1,    kMaxSize - 1,  kMaxSize};
  const size_t offsets[][2] = {{0, 0}, {1, 3}, {7, 0}, {0, 5}}; /* {source, target} */

  size_t salt = 0;
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; ++s) {
    for (size_t o = 0; o < sizeof offsets / sizeof *offsets; ++o) {
      const size_t size = sizes[s];
      if (size > 65536 && o >= 2) continue; /* two offset pairs are enough for big sizes */
      const size_t soff = kGuard + offsets[o][0], doff = kGuard + offsets[o][1];
      const size_t dirty = size + 2 * kGuard; /* the target plus its guards, from doff - kGuard */
      ++salt;

      /* put: my local buffer -> next PE's sym_dst */
      for (size_t i = 0; i < size; ++i) local[soff + i] = pattern(me, i, salt);
      memset(sym_dst + doff - kGuard, 0xEE, dirty);
      shmem_barrier_all();
      shmem_putmem(sym_dst + doff, local + soff, size, next);
      shmem_barrier_all();
      check_region(sym_dst, doff, size, prev, salt, 0xEE, "putmem");

      /* get: next PE's sym_src -> my local buffer */
      for (size_t i = 0; i < size; ++i) sym_src[soff + i] = pattern(me, i, salt);
      memset(local + doff - kGuard, 0xDD, dirty);
      shmem_barrier_all();
      shmem_getmem(local + doff, sym_src + soff, size, next);
      check_region(local, doff, size, next, salt, 0xDD, "getmem");

      /* symmetric source and target, and a source reused right after the put returns
       * (a blocking put may return only when its source is free to change) */
      memset(sym_dst + doff - kGuard, 0xEE, dirty);
      shmem_barrier_all();
      shmem_putmem(sym_dst + doff, sym_src + soff, size, next);
      memset(sym_src + soff, 0, size);
      shmem_barrier_all();
      check_region(sym_dst, doff, size, prev, salt, 0xEE, "putmem (symmetric source)");
    }
  }

  /* Zero-length transfers are no-ops. */
  shmem_putmem(sym_dst, local, 0, next);
  shmem_getmem(local, sym_src, 0, next);
  shmem_barrier_all();

  free(local);
  shmem_free(sym_dst);
  shmem_free(sym_src);
  return capi_finish();
}
