/* Race check (SYMMEM_RACECHECK=1) provoking programs: race <case>, run with 3 PEs.
 * Racy cases must be reported and end the job with exit code 2; "clean" does the same
 * patterns correctly ordered and must run to the end with no report. */
#include <shmem.h>
#include <stdio.h>
#include <string.h>

static long target[8]; /* static data is symmetric too */

static int racy_putput(char* buf) {
  /* PE 0 and PE 1 write the same 8 bytes of PE 2 between the same two barriers. */
  long v = shmem_my_pe();
  if (shmem_my_pe() < 2) shmem_putmem(buf + 16, &v, sizeof v, 2);
  shmem_barrier_all();
  return 0;
}

static int racy_putget(void) {
  /* PE 0 writes target[1..2] of PE 2 while PE 1 reads target[2..3] there. */
  long v[2] = {1, 2}, w[2];
  if (shmem_my_pe() == 0) shmem_long_put(target + 1, v, 2, 2);
  if (shmem_my_pe() == 1) shmem_long_get(w, target + 2, 2, 2);
  shmem_barrier_all();
  return 0;
}

static int nbi_source(char* buf) {
  static char src[256];
  if (shmem_my_pe() == 0) {
    memset(src, 1, sizeof src);
    shmem_putmem_nbi(buf, src, sizeof src, 1);
    src[100] = 7; /* the library still owns src */
    shmem_quiet();
  }
  shmem_barrier_all();
  return 0;
}

static int nbi_dest(char* buf) {
  char dst[128];
  if (shmem_my_pe() == 0) {
    shmem_getmem_nbi(dst, buf, sizeof dst, 1);
    dst[5] = 9; /* written before the get completed */
    shmem_quiet();
  }
  shmem_barrier_all();
  return 0;
}

static int clean(char* buf, uint64_t* sig) {
  int me = shmem_my_pe();
  long v = me, w[2];
  static char src[256];
  char dst[128];
  /* 1. put/put separated by a barrier */
  if (me == 0) shmem_putmem(buf, &v, sizeof v, 2);
  shmem_barrier_all();
  if (me == 1) shmem_putmem(buf, &v, sizeof v, 2);
  shmem_barrier_all();
  /* 2. put + quiet + signal, then the other PE waits for the signal and accesses */
  if (me == 0) {
    shmem_putmem(buf + 64, &v, sizeof v, 2);
    shmem_quiet();
    shmem_uint64_atomic_set(sig, 1, 1);
  }
  if (me == 1) {
    shmem_uint64_wait_until(sig, SHMEM_CMP_EQ, 1);
    shmem_putmem(buf + 64, &v, sizeof v, 2);
    shmem_getmem(w, buf + 64, sizeof v, 2);
  }
  shmem_barrier_all();
  /* 3. put-with-signal, signal_wait_until, then read the data on the target from a third PE */
  if (me == 0) shmem_putmem_signal(buf + 128, &v, sizeof v, sig + 1, 1, SHMEM_SIGNAL_SET, 1);
  if (me == 1) {
    shmem_signal_wait_until(sig + 1, SHMEM_CMP_EQ, 1);
    shmem_putmem(buf + 128, &v, sizeof v, 1); /* own copy, written by PE 0's put */
    shmem_putmem(buf + 128, &v, sizeof v, 2);
  }
  if (me == 2) shmem_putmem(buf + 192, &v, sizeof v, 1); /* disjoint bytes of the same PE */
  shmem_barrier_all();
  /* 4. atomics on one word from every PE, and one PE writing the same bytes twice */
  shmem_long_atomic_add(target, 1, 2);
  if (me == 0) {
    shmem_putmem(buf + 256, &v, sizeof v, 1);
    shmem_putmem(buf + 256, &v, sizeof v, 1);
  }
  shmem_barrier_all();
  /* 5. nbi buffers touched only after completion */
  if (me == 0) {
    shmem_putmem_nbi(buf, src, sizeof src, 1);
    shmem_quiet();
    src[3] = 1;
    shmem_getmem_nbi(dst, buf, sizeof dst, 1);
    shmem_quiet();
    dst[3] = 1;
    shmem_putmem_nbi(buf, src, sizeof src, 2);
    shmem_getmem_nbi(dst, buf, sizeof dst, 2);
  }
  shmem_barrier_all(); /* completes the last two */
  if (me == 0) src[4] = dst[4];
  shmem_barrier_all();
  if (me == 0) printf("race clean: done\n");
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: race putput|putget|nbi-source|nbi-dest|clean\n");
    return 64;
  }
  shmem_init();
  char* buf = shmem_malloc(4096);
  uint64_t* sig = shmem_calloc(2, sizeof(uint64_t));
  memset(buf, 0, 4096);
  shmem_barrier_all();
  const char* c = argv[1];
  int rc = 64;
  if (!strcmp(c, "putput")) rc = racy_putput(buf);
  else if (!strcmp(c, "putget")) rc = racy_putget();
  else if (!strcmp(c, "nbi-source")) rc = nbi_source(buf);
  else if (!strcmp(c, "nbi-dest")) rc = nbi_dest(buf);
  else if (!strcmp(c, "clean")) rc = clean(buf, sig);
  shmem_free(sig);
  shmem_free(buf);
  shmem_finalize();
  return rc;
}
