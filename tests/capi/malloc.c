/* Symmetric allocation: malloc, calloc, align, realloc, free. Blocks must be symmetric
 * (a put to the same address on another PE lands in that PE's block), suitably aligned,
 * calloc'd memory zeroed, and realloc must keep the contents. */
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>

#include "capi_check.h"

static int me, npes;

static unsigned char pattern(int pe, size_t i, size_t salt) {
  return (unsigned char)(i * 31 + (size_t)pe * 7 + salt);
}

/* Each PE writes its pattern into `block` on the next PE; then every PE checks that what
 * it holds came from the previous one. Fails if the block is not symmetric. */
static void check_symmetric(unsigned char *block, size_t size, size_t salt, const char *what) {
  const int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
  unsigned char *src = malloc(size);
  if (!src) FATAL("out of local memory");
  for (size_t i = 0; i < size; ++i) src[i] = pattern(me, i, salt);
  shmem_barrier_all(); /* nobody still reads `block` from an earlier round */
  shmem_putmem(block, src, size, next);
  shmem_barrier_all();
  for (size_t i = 0; i < size; ++i) {
    if (block[i] != pattern(prev, i, salt)) {
      CHECK(0, "%s: byte %zu of %zu is %u, expected %u from PE %d", what, i, size, block[i],
            pattern(prev, i, salt), prev);
      break;
    }
  }
  for (int pe = 0; pe < npes; ++pe)
    CHECK(shmem_addr_accessible(block, pe), "%s: shmem_addr_accessible(block, %d) = 0", what, pe);
  free(src);
}

static int aligned(const void *p, size_t a) { return ((uintptr_t)p & (a - 1)) == 0; }

int main(void) {
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();

  /* Size 0: no action, NULL. */
  CHECK(shmem_calloc(0, 8) == NULL && shmem_calloc(8, 0) == NULL,
        "shmem_calloc with a zero count or size did not return NULL");
  if (!CAPI_OSHMEM) {
    CHECK(shmem_malloc(0) == NULL, "shmem_malloc(0) did not return NULL");
    CHECK(shmem_align(4096, 0) == NULL, "shmem_align(4096, 0) did not return NULL");
  } else if (me == 0) {
    fprintf(stderr, "note: OSHMEM: shmem_malloc(0) / shmem_align(a, 0) checks skipped\n");
  }
  shmem_free(NULL); /* a no-op */

  /* malloc of assorted sizes: suitably aligned and symmetric. */
  const size_t sizes[] = {1, 7, 64, 100, 4096, 65537, 1 << 20, 8 << 20};
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; ++k) {
    unsigned char *p = shmem_malloc(sizes[k]);
    if (!p) FATAL("shmem_malloc(%zu) returned NULL", sizes[k]);
    CHECK(aligned(p, alignof(max_align_t)), "shmem_malloc(%zu) = %p is not aligned to %zu",
          sizes[k], (void *)p, alignof(max_align_t));
    check_symmetric(p, sizes[k], k, "shmem_malloc");
    shmem_free(p);
  }

  /* calloc: zeroed even when it reuses a block that held data. */
  const size_t csize = 256 * 1024;
  unsigned char *dirty = shmem_malloc(csize);
  if (!dirty) FATAL("shmem_malloc(%zu) returned NULL", csize);
  memset(dirty, 0xA5, csize);
  shmem_free(dirty);
  long *z = shmem_calloc(csize / sizeof(long), sizeof(long));
  if (!z) FATAL("shmem_calloc returned NULL");
  for (size_t i = 0; i < csize / sizeof(long); ++i) {
    if (z[i] != 0) {
      CHECK(0, "shmem_calloc: element %zu is %ld, not 0", i, z[i]);
      break;
    }
  }
  check_symmetric((unsigned char *)z, csize, 11, "shmem_calloc");
  shmem_free(z);

  /* calloc zeroes before its exit barrier: a put issued by a peer as soon as its own
   * call returns must survive. Repeated, since it is a race when broken. */
  if (!CAPI_OSHMEM) {
    for (int round = 0; round < 20; ++round) {
      long *slots = shmem_calloc((size_t)npes, sizeof(long));
      if (!slots) FATAL("shmem_calloc returned NULL");
      for (int pe = 0; pe < npes; ++pe) shmem_long_p(&slots[me], me + 1, pe);
      shmem_barrier_all();
      for (int pe = 0; pe < npes; ++pe)
        CHECK(slots[pe] == pe + 1,
              "a put from PE %d right after shmem_calloc was wiped (zeroed after the barrier?)",
              pe);
      shmem_free(slots);
    }
  } else if (me == 0) {
    fprintf(stderr, "note: OSHMEM: shmem_calloc zero-before-barrier check skipped\n");
  }

  /* align: the address is a multiple of the alignment, whatever was allocated before. */
  unsigned char *small = shmem_malloc(24); /* puts the next free byte off any alignment */
  const size_t aligns[] = {8, 64, 4096, 65536, 1 << 21};
  unsigned char *al[sizeof aligns / sizeof *aligns];
  for (size_t k = 0; k < sizeof aligns / sizeof *aligns; ++k) {
    al[k] = shmem_align(aligns[k], 1000 + k);
    if (!al[k]) FATAL("shmem_align(%zu, %zu) returned NULL", aligns[k], 1000 + k);
    CHECK(aligned(al[k], aligns[k]), "shmem_align(%zu) = %p is misaligned", aligns[k],
          (void *)al[k]);
    check_symmetric(al[k], 1000 + k, 20 + k, "shmem_align");
  }
  for (size_t k = 0; k < sizeof aligns / sizeof *aligns; ++k) shmem_free(al[k]);
  shmem_free(small);

  /* realloc: grow (with a live block right after, so it likely moves), shrink; contents
   * up to the smaller size survive, and the result is symmetric. */
  unsigned char *r = shmem_malloc(1000);
  unsigned char *blocker = shmem_malloc(64);
  if (!r || !blocker) FATAL("shmem_malloc returned NULL");
  for (size_t i = 0; i < 1000; ++i) r[i] = pattern(me, i, 40);
  r = shmem_realloc(r, 1 << 20);
  if (!r) FATAL("shmem_realloc to 1 MiB returned NULL");
  for (size_t i = 0; i < 1000; ++i) {
    if (r[i] != pattern(me, i, 40)) {
      CHECK(0, "shmem_realloc (grow) lost byte %zu: %u, expected %u", i, r[i], pattern(me, i, 40));
      break;
    }
  }
  check_symmetric(r, 1 << 20, 41, "shmem_realloc (grown)");
  for (size_t i = 0; i < 4096; ++i) r[i] = pattern(me, i, 42);
  r = shmem_realloc(r, 100);
  if (!r) FATAL("shmem_realloc to 100 bytes returned NULL");
  for (size_t i = 0; i < 100; ++i) {
    if (r[i] != pattern(me, i, 42)) {
      CHECK(0, "shmem_realloc (shrink) lost byte %zu", i);
      break;
    }
  }
  check_symmetric(r, 100, 43, "shmem_realloc (shrunk)");
  CHECK(shmem_realloc(r, 0) == NULL, "shmem_realloc(p, 0) did not return NULL");
  unsigned char *fresh = shmem_realloc(NULL, 512); /* behaves like shmem_malloc */
  if (!fresh) FATAL("shmem_realloc(NULL, 512) returned NULL");
  check_symmetric(fresh, 512, 44, "shmem_realloc(NULL)");
  shmem_free(fresh);
  shmem_free(blocker);

  /* Many live blocks at once, freed out of order, all symmetric. */
  enum { kBlocks = 64 };
  unsigned char *many[kBlocks];
  for (int k = 0; k < kBlocks; ++k) {
    many[k] = shmem_malloc((size_t)(k * 37 % 500 + 1) * 8);
    if (!many[k]) FATAL("shmem_malloc #%d returned NULL", k);
  }
  for (int k = 0; k < kBlocks; k += 2) shmem_free(many[k]);
  for (int k = 1; k < kBlocks; k += 2)
    check_symmetric(many[k], (size_t)(k * 37 % 500 + 1) * 8, (size_t)k, "interleaved blocks");
  for (int k = 1; k < kBlocks; k += 2) shmem_free(many[k]);

  return capi_finish();
}
