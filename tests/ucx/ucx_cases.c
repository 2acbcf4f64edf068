/* Cases of the UCX route that need a program of their own (tests/ucx/CMakeLists.txt):
 *
 *  progress   PE 1 (on another node than PE 0) waits for PE 0's word in a plain loop of
 *             loads and sleeps, never calling the library; PE 0 meanwhile does puts, gets,
 *             every kind of atomic and a put-with-signal to PE 1, checking each result, and
 *             only then sets PE 1's word. Over UCX's TCP transport the target performs all
 *             of these itself, so without a progress engine PE 0 waits forever (the test's
 *             timeout fails it).
 *  kill-self  the last PE kills itself with SIGKILL after init; the others wait in a
 *             barrier: they must name it (UCX endpoint error) and end the job.
 *  hang       the last PE stops itself (SIGSTOP); PE 0's get from it must end the job
 *             naming it when SYMMEM_OP_TIMEOUT passes.
 *  team-reduce small reductions, fcollects and alltoalls (those that travel inside one sync across nodes) on the
 *             world and on teams whose members fall on the nodes unevenly and out of
 *             node order: exact integer results, float sums the same bits on every
 *             member and in member order, dest == src, back-to-back calls.
 *  data-coll  broadcast (every root), fcollect, collect (uneven sizes) and alltoall of 8 B, odd,
 *             middle and over 64 KiB sizes, a middle sum (in place too) and a 64 KiB sum on the same teams: every byte where the standard
 *             puts it; each PE overwrites its dest as soon as the call returns (a member
 *             still copying from another's dest would see it).
 *  big-reduce large sums, broadcasts, fcollects and alltoalls (64 KiB .. 1 MiB: sliced over the members of each
 *             node and pipelined in chunks where the nodes hold equal runs of members, else
 *             through the leaders) on the world, a team of one member per node and a team
 *             of uneven nodes: long sums out of place and in place, float sums the
 *             member-order bits, counts that do not split evenly, broadcasts from the first
 *             and (in place) the last member; dest overwritten on return.
 *  bcast      back-to-back small broadcasts (1 B .. 8 KiB, every root, roots in turn and
 *             one root many times in a row past the mailbox ring) on the world and on
 *             subset and strided teams; every PE overwrites its dest and its source as soon
 *             as a call returns, and one PE at a time arrives late (sleeps first).
 *  acked-put  small puts right after a quiet go as messages their target acknowledges
 *             (SYMMEM_UCX_ACK_PUT_BYTES): each PE puts 1 B .. 4 KiB (and 4 KiB + 8, over the
 *             limit) to a PE of another node, blocking and nbi, on the default context and
 *             a context of its own, then quiet (or fence) and an atomic flag; the target
 *             waits for the flag and checks every byte (data before flag). The nbi source
 *             is overwritten right after quiet; after the quiet the PE's node mate (2 x 2)
 *             gets the bytes from the target too. Then puts after a first one (UCX's own put)
 *             and a get back of what it wrote.
 *  hang-put   as hang, with an 8-byte put + quiet (its acknowledgement never comes).
 *  bcast-ahead the last PE (another node than the root, PE 0) enters its broadcasts only
 *             once every other PE has returned from all 8 of them: small broadcasts need no
 *             team sync (a PE leaves once it holds the data). A sync per call would keep the
 *             others in broadcast 1: the last PE then gives up waiting after 10 s (failure)
 *             and joins, so the job ends either way.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../capi/check.h"
#include "shmem.h"

static unsigned char pattern(int i, size_t k) { return (unsigned char)(i * 31 + (int)k * 7 + 1); }

static int acked_put_case(void) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int to = (me + n / 2) % n, from = (me + n - n / 2) % n; /* PEs of the other node */
  const size_t sizes[] = {1, 8, 100, 4096, 4096 + 8};
  const int ns = (int)(sizeof sizes / sizeof sizes[0]), rounds = 40;
  unsigned char* dst = shmem_calloc(4096 + 64, 1);
  unsigned char* back = malloc(4096 + 64);
  unsigned char* src = malloc(4096 + 64);
  long* flag = shmem_calloc(1, sizeof(long));
  long* seen = shmem_calloc(1, sizeof(long));
  shmem_ctx_t ctx;
  if (shmem_ctx_create(0, &ctx) != 0) return 1;
  int bad = 0;
  shmem_barrier_all();
  for (int i = 1; i <= rounds * ns; ++i) {
    const size_t sz = sizes[i % ns];
    const int how = (i / ns) % 4; /* 0 blocking, 1 nbi, 2 on ctx, 3 fence instead of quiet */
    for (size_t k = 0; k < sz; ++k) src[k] = pattern(i, k);
    shmem_ctx_t c = how == 2 ? ctx : SHMEM_CTX_DEFAULT;
    if (how == 1) shmem_putmem_nbi(dst, src, sz, to);
    else shmem_ctx_putmem(c, dst, src, sz, to);
    if (how == 3) shmem_ctx_fence(c);
    else shmem_ctx_quiet(c);
    if (how == 1) memset(src, 0xee, sz); /* the nbi source is the program's again */
    if (n == 4 && how != 3) shmem_long_atomic_set(seen, i, me ^ 1); /* my node mate reads it next */
    shmem_ctx_long_atomic_set(c, flag, i, to);
    shmem_long_wait_until(flag, SHMEM_CMP_GE, i); /* the other node's PE did the same to me */
    if (n == 4 && how != 3) { /* after my mate's quiet its put is there for every PE: get it */
      shmem_long_wait_until(seen, SHMEM_CMP_GE, i);
      const int mate_to = ((me ^ 1) + n / 2) % n;
      shmem_getmem(back, dst, sz, mate_to);
      for (size_t k = 0; k < sz; ++k)
        if (back[k] != pattern(i, k)) {
          if (!bad) fprintf(stderr, "PE %d: put %d (%zu B) of PE %d to PE %d after its quiet: byte %zu is %u\n", me, i,
                            sz, me ^ 1, mate_to, k, back[k]);
          bad = 1;
          break;
        }
    }
    for (size_t k = 0; k < sz; ++k)
      if (dst[k] != pattern(i, k)) {
        if (!bad) fprintf(stderr, "PE %d: put %d (%zu B, way %d) from PE %d: byte %zu is %u, expected %u\n", me, i, sz,
                          how, from, k, dst[k], pattern(i, k));
        bad = 1;
        break;
      }
    shmem_barrier_all(); /* every PE checked before the next round's put */
  }
  /* A stream: the first put after the quiet acknowledged, the rest UCX's; all visible
     after one quiet; then a get of them back. */
  for (int j = 0; j < 64; ++j) src[j] = pattern(j, 3);
  for (int j = 0; j < 64; ++j) shmem_putmem(dst + j, src + j, 1, to);
  shmem_quiet();
  shmem_getmem(back, dst, 64, to);
  if (memcmp(back, src, 64) != 0) {
    fprintf(stderr, "PE %d: a stream of 64 puts to PE %d did not land\n", me, to);
    bad = 1;
  }
  shmem_ctx_destroy(ctx);
  shmem_barrier_all();
  free(src);
  free(back);
  return bad;
}

static void nap_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int progress_case(void) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int target = n - 1; /* another node than PE 0 in the layouts this runs in */
  long* go = shmem_calloc(1, sizeof(long));
  long* data = shmem_calloc(64, sizeof(long));
  int* i32 = shmem_calloc(4, sizeof(int));
  long* i64 = shmem_calloc(4, sizeof(long));
  double* f64 = shmem_calloc(2, sizeof(double));
  float* f32 = shmem_calloc(2, sizeof(float));
  uint64_t* sig = shmem_calloc(1, sizeof(uint64_t));
  if (me == 0) CHECK(shmem_ptr(data, target) == NULL, "shmem_ptr to PE %d of another node is not NULL", target);
  shmem_barrier_all();
  if (me == target) {
    /* Computing: no library call until PE 0's word arrives. */
    while (*(volatile long*)go == 0) nap_ms(1);
  } else if (me == 0) {
    long src[64], back[64];
    for (int i = 0; i < 64; ++i) src[i] = 1000 + i;
    shmem_long_put(data, src, 64, target);
    shmem_quiet();
    shmem_long_get(back, data, 64, target);
    CHECK(memcmp(back, src, sizeof src) == 0, "get after put from a computing PE returned other data");
    shmem_long_put_nbi(data + 8, src, 8, target);
    shmem_quiet();
    CHECK(shmem_long_g(data + 15, target) == 1007, "g after put_nbi + quiet");
    CHECK(shmem_int_atomic_fetch_add(i32, 5, target) == 0, "int fetch_add");
    shmem_int_atomic_add(i32, 2, target);
    CHECK(shmem_int_atomic_compare_swap(i32, 7, 40, target) == 7, "int compare_swap");
    unsigned int* u32 = (unsigned int*)(i32 + 1);
    CHECK(shmem_uint_atomic_fetch_or(u32, 6u, target) == 0, "uint fetch_or");
    CHECK(shmem_uint_atomic_fetch_and(u32, 3u, target) == 6, "uint fetch_and");
    CHECK(shmem_uint_atomic_fetch_xor(u32, 1u, target) == 2, "uint fetch_xor");
    shmem_uint_atomic_or(u32, 8u, target);
    shmem_uint_atomic_xor(u32, 8u, target);
    CHECK(shmem_int_atomic_fetch(i32 + 1, target) == 3, "int fetch");
    CHECK(shmem_long_atomic_fetch_inc(i64, target) == 0, "long fetch_inc");
    shmem_long_atomic_inc(i64, target);
    CHECK(shmem_long_atomic_swap(i64, -9, target) == 2, "long swap");
    shmem_long_atomic_set(i64 + 1, 1L << 40, target);
    CHECK(shmem_long_atomic_fetch(i64 + 1, target) == (1L << 40), "long set/fetch");
    shmem_double_atomic_set(f64, 2.5, target);
    CHECK(shmem_double_atomic_swap(f64, -1.25, target) == 2.5, "double swap");
    CHECK(shmem_double_atomic_fetch(f64, target) == -1.25, "double fetch");
    shmem_float_atomic_set(f32, 0.5f, target);
    CHECK(shmem_float_atomic_fetch(f32, target) == 0.5f, "float fetch");
    shmem_long_put_signal(data + 32, src, 16, sig, 77, SHMEM_SIGNAL_SET, target);
    shmem_quiet();
    CHECK(shmem_uint64_atomic_fetch(sig, target) == 77, "signal set");
    CHECK(shmem_long_g(data + 47, target) == 1015, "put_signal data");
    shmem_long_p(go, 1, target);
    shmem_quiet();
  }
  shmem_barrier_all();
  if (me == target) {
    CHECK(i32[0] == 40 && i32[1] == 3, "target's ints %d %d", i32[0], i32[1]);
    CHECK(i64[0] == -9 && i64[1] == (1L << 40), "target's longs %ld %ld", i64[0], i64[1]);
    CHECK(f64[0] == -1.25 && f32[0] == 0.5f, "target's floats");
    CHECK(*sig == 77 && data[47] == 1015, "target's signal %llu data %ld", (unsigned long long)*sig, data[47]);
  }
  shmem_free(sig);
  shmem_free(f32);
  shmem_free(f64);
  shmem_free(i64);
  shmem_free(i32);
  shmem_free(data);
  shmem_free(go);
  return failures;
}

/* Member m of the team contributes m*7+e (longs) / a float whose sum depends on the order
 * of addition; checks one team. */
static void reduce_on(shmem_team_t team, int rep) {
  enum { kN = 9 };
  /* shmem_malloc is collective over the world: every PE allocates, members or not */
  const size_t n = (size_t)shmem_n_pes();
  long* src = shmem_malloc(kN * sizeof(long));
  long* dst = shmem_malloc(kN * sizeof(long));
  float* fs = shmem_malloc(4 * sizeof(float));
  float* fd = shmem_malloc(4 * sizeof(float));
  float* all = shmem_malloc(n * 4 * sizeof(float));
  long* gathered = shmem_malloc(n * 3 * sizeof(long));
  int* a2a_src = shmem_malloc(n * 2 * sizeof(int));
  int* a2a_dst = shmem_malloc(n * 2 * sizeof(int));
  if (team == SHMEM_TEAM_INVALID) goto out;
  const int m = shmem_team_my_pe(team), tn = shmem_team_n_pes(team);
  for (int e = 0; e < kN; ++e) src[e] = m * 7 + e + rep;
  CHECK(shmem_long_sum_reduce(team, dst, src, kN) == 0, "sum_reduce failed");
  for (int e = 0; e < kN; ++e) {
    long want = 0;
    for (int q = 0; q < tn; ++q) want += q * 7 + e + rep;
    CHECK(dst[e] == want, "team of %d, member %d: sum[%d] = %ld, want %ld", tn, m, e, dst[e], want);
  }
  CHECK(shmem_long_max_reduce(team, src, src, kN) == 0, "in-place max_reduce failed");
  CHECK(src[0] == (tn - 1) * 7 + rep, "team of %d, member %d: in-place max %ld", tn, m, src[0]);
  /* Large and small magnitudes: the sum is order-dependent; it must be the member-order one. */
  for (int e = 0; e < 4; ++e) fs[e] = (m % 2 ? 1e8f : 1.0f) * (float)(1 + ((m * 31 + e * 17) % 13)) / 3.0f;
  CHECK(shmem_float_sum_reduce(team, fd, fs, 4) == 0, "float sum_reduce failed");
  for (int e = 0; e < 4; ++e) {
    float want = 0;
    for (int q = 0; q < tn; ++q) {
      const float v = (q % 2 ? 1e8f : 1.0f) * (float)(1 + ((q * 31 + e * 17) % 13)) / 3.0f;
      want = q == 0 ? v : want + v;
    }
    CHECK(memcmp(&fd[e], &want, sizeof want) == 0, "team of %d, member %d: float sum[%d] %.9g, member order gives %.9g",
          tn, m, e, fd[e], want);
  }
  CHECK(shmem_float_fcollect(team, all, fd, 4) == 0, "fcollect failed");
  for (int q = 1; q < tn; ++q) CHECK(memcmp(all, all + 4 * q, 4 * sizeof(float)) == 0, "member %d's sum differs", q);
  src[0] = m * 100L + rep, src[1] = m * 100L + 1, src[2] = -m;
  CHECK(shmem_long_fcollect(team, gathered, src, 3) == 0, "fcollect failed");
  for (int q = 0; q < tn; ++q)
    CHECK(gathered[3 * q] == q * 100L + rep && gathered[3 * q + 1] == q * 100L + 1 && gathered[3 * q + 2] == -q,
          "team of %d, member %d: fcollect block %d = %ld %ld %ld", tn, m, q, gathered[3 * q], gathered[3 * q + 1],
          gathered[3 * q + 2]);
  for (int q = 0; q < tn; ++q) a2a_src[2 * q] = m * 1000 + q, a2a_src[2 * q + 1] = rep - m;
  CHECK(shmem_int_alltoall(team, a2a_dst, a2a_src, 2) == 0, "alltoall failed");
  for (int q = 0; q < tn; ++q)
    CHECK(a2a_dst[2 * q] == q * 1000 + m && a2a_dst[2 * q + 1] == rep - q, "team of %d, member %d: alltoall from %d: %d %d",
          tn, m, q, a2a_dst[2 * q], a2a_dst[2 * q + 1]);
  shmem_team_sync(team);
out:
  shmem_free(a2a_dst);
  shmem_free(a2a_src);
  shmem_free(gathered);
  shmem_free(all);
  shmem_free(fd);
  shmem_free(fs);
  shmem_free(dst);
  shmem_free(src);
}

static int team_reduce_case(void) {
  const int n = shmem_n_pes();
  shmem_team_t odd = SHMEM_TEAM_INVALID, tail = SHMEM_TEAM_INVALID, rev = SHMEM_TEAM_INVALID;
  /* 1, 3, 5, ...; 1..n-1; and the world (block-placed nodes: uneven, out of node order
   * for the strided team when nodes hold more than 2 PEs) */
  if (n >= 2) shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n / 2, NULL, 0, &odd);
  if (n >= 3) shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, n - 1, NULL, 0, &tail);
  if (n >= 4) shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 3, (n + 2) / 3, NULL, 0, &rev);
  for (int rep = 0; rep < 3; ++rep) {
    reduce_on(SHMEM_TEAM_WORLD, rep);
    reduce_on(odd, rep);
    reduce_on(tail, rep);
    reduce_on(rev, rep);
  }
  if (odd != SHMEM_TEAM_INVALID) shmem_team_destroy(odd);
  if (tail != SHMEM_TEAM_INVALID) shmem_team_destroy(tail);
  if (rev != SHMEM_TEAM_INVALID) shmem_team_destroy(rev);
  shmem_barrier_all();
  return failures;
}

static unsigned char pat(int member, size_t j, int rep) { return (unsigned char)(member * 37 + j * 7 + rep + (j >> 8)); }

/* dest -> copy, then dest overwritten at once; returns the copy. */
static unsigned char* take(unsigned char* dest, size_t bytes) {
  unsigned char* c = malloc(bytes ? bytes : 1);
  memcpy(c, dest, bytes);
  memset(dest, 0xEE, bytes);
  return c;
}

static void data_on(shmem_team_t team, int rep) {
  static const size_t sizes[] = {8, 13, 3001, 12000, 65536 + 5};
  const size_t n = (size_t)shmem_n_pes(), most = 65536 + 5 + 3 * n;
  unsigned char* src = shmem_malloc(most);
  unsigned char* dst = shmem_malloc(most * n);
  if (team == SHMEM_TEAM_INVALID) goto out;
  const int m = shmem_team_my_pe(team), tn = shmem_team_n_pes(team);
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
    const size_t b = sizes[s];
    for (int root = 0; root < tn; ++root) {
      for (size_t j = 0; j < b; ++j) src[j] = pat(m, j, rep + root);
      memset(dst, 0xCD, b);
      CHECK(shmem_broadcastmem(team, dst, src, b, root) == 0, "broadcastmem failed");
      unsigned char* c = take(dst, b);
      size_t bad = 0;
      for (size_t j = 0; j < b; ++j) bad += c[j] != pat(root, j, rep + root);
      CHECK(bad == 0, "team of %d, member %d: broadcast of %zu B from %d: %zu bytes wrong", tn, m, b, root, bad);
      free(c);
    }
    for (size_t j = 0; j < b; ++j) src[j] = pat(m, j, rep);
    CHECK(shmem_fcollectmem(team, dst, src, b) == 0, "fcollectmem failed");
    unsigned char* c = take(dst, b * (size_t)tn);
    size_t bad = 0;
    for (int q = 0; q < tn; ++q)
      for (size_t j = 0; j < b; ++j) bad += c[(size_t)q * b + j] != pat(q, j, rep);
    CHECK(bad == 0, "team of %d, member %d: fcollect of %zu B: %zu bytes wrong", tn, m, b, bad);
    free(c);
    /* collect: member q gives b + 3q bytes (the last member none at the 8 B size) */
    const size_t mine = b == 8 && m == tn - 1 ? 0 : b + 3 * (size_t)m;
    for (size_t j = 0; j < mine; ++j) src[j] = pat(m, j, rep + 1);
    size_t total = 0;
    for (int q = 0; q < tn; ++q) total += b == 8 && q == tn - 1 ? 0 : b + 3 * (size_t)q;
    CHECK(shmem_collectmem(team, dst, src, mine) == 0, "collectmem failed");
    c = take(dst, total);
    bad = 0;
    size_t off = 0;
    for (int q = 0; q < tn; ++q) {
      const size_t len = b == 8 && q == tn - 1 ? 0 : b + 3 * (size_t)q;
      for (size_t j = 0; j < len; ++j) bad += c[off + j] != pat(q, j, rep + 1);
      off += len;
    }
    CHECK(bad == 0, "team of %d, member %d: collect around %zu B: %zu bytes wrong", tn, m, b, bad);
    free(c);
    if (b * (size_t)tn <= most) { /* alltoall: block q of member m's source is pat(m, j, rep + q) */
      for (int q = 0; q < tn; ++q)
        for (size_t j = 0; j < b; ++j) src[(size_t)q * b + j] = pat(m, j, rep + q);
      CHECK(shmem_alltoallmem(team, dst, src, b) == 0, "alltoallmem failed");
      c = take(dst, b * (size_t)tn);
      bad = 0;
      for (int q = 0; q < tn; ++q)
        for (size_t j = 0; j < b; ++j) bad += c[(size_t)q * b + j] != pat(q, j, rep + m);
      CHECK(bad == 0, "team of %d, member %d: alltoall of %zu B blocks: %zu bytes wrong", tn, m, b, bad);
      free(c);
    }
  }
  /* middle sums (a few syncs' scratch: consecutive pieces; more: pushed, a reduce-scatter
   * then an allgather), out of place and in place; a float sum in member order */
  for (size_t k = 700; k <= 3000; k += 2300) {
    long* ls = (long*)src;
    for (int in_place = 0; in_place < 2; ++in_place) {
      for (size_t j = 0; j < k; ++j) ls[j] = (long)(m * 17 + (int)j * 3 + rep);
      long* d = in_place ? ls : (long*)dst;
      CHECK(shmem_long_sum_reduce(team, d, ls, k) == 0, "sum_reduce failed");
      long* c = (long*)take((unsigned char*)d, k * sizeof(long));
      size_t bad = 0;
      for (size_t j = 0; j < k; ++j) bad += c[j] != (long)(17 * tn * (tn - 1) / 2) + (long)tn * (long)((int)j * 3 + rep);
      CHECK(bad == 0, "team of %d, member %d: sum of %zu longs (in place %d): %zu wrong", tn, m, k, in_place, bad);
      free(c);
    }
    float* fs = (float*)src;
    for (size_t j = 0; j < k; ++j) fs[j] = (m % 2 ? 1e8f : 1.0f) * (float)(1 + ((m * 31 + (int)j * 17) % 13)) / 3.0f;
    CHECK(shmem_float_sum_reduce(team, (float*)dst, fs, k) == 0, "float sum_reduce failed");
    float* fc = (float*)take(dst, k * sizeof(float));
    size_t bad = 0;
    for (size_t j = 0; j < k; ++j) {
      float want = 0;
      for (int q = 0; q < tn; ++q) {
        const float v = (q % 2 ? 1e8f : 1.0f) * (float)(1 + ((q * 31 + (int)j * 17) % 13)) / 3.0f;
        want = q == 0 ? v : want + v;
      }
      bad += memcmp(&fc[j], &want, sizeof want) != 0;
    }
    CHECK(bad == 0, "team of %d, member %d: float sum of %zu: %zu not the member-order sum", tn, m, k, bad);
    free(fc);
  }
  { /* a large sum (the chain over the nodes), dest overwritten on return too */
    const size_t k = 8193;
    long* ls = (long*)src;
    for (size_t j = 0; j < k; ++j) ls[j] = (long)(m * 131 + (int)j + rep);
    CHECK(shmem_long_sum_reduce(team, (long*)dst, ls, k) == 0, "sum_reduce failed");
    long* c = (long*)take(dst, k * sizeof(long));
    size_t bad = 0;
    for (size_t j = 0; j < k; ++j) bad += c[j] != (long)(131 * tn * (tn - 1) / 2) + (long)tn * (long)((int)j + rep);
    CHECK(bad == 0, "team of %d, member %d: sum of %zu longs: %zu wrong", tn, m, k, bad);
    free(c);
  }
  shmem_team_sync(team);
out:
  shmem_free(dst);
  shmem_free(src);
}

static int data_coll_case(void) {
  const int n = shmem_n_pes();
  shmem_team_t odd = SHMEM_TEAM_INVALID, tail = SHMEM_TEAM_INVALID, rev = SHMEM_TEAM_INVALID;
  if (n >= 3) shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, n - 1, NULL, 0, &tail);
  if (n >= 2) shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n / 2, NULL, 0, &odd);
  if (n >= 4) shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 3, (n + 2) / 3, NULL, 0, &rev);
  for (int rep = 0; rep < 2; ++rep) {
    data_on(SHMEM_TEAM_WORLD, rep);
    data_on(odd, rep);
    data_on(tail, rep);
    data_on(rev, rep);
  }
  if (odd != SHMEM_TEAM_INVALID) shmem_team_destroy(odd);
  if (tail != SHMEM_TEAM_INVALID) shmem_team_destroy(tail);
  if (rev != SHMEM_TEAM_INVALID) shmem_team_destroy(rev);
  shmem_barrier_all();
  return failures;
}

/* Float j of member q's operand: large and small magnitudes (the sum depends on the order). */
static float fval(int q, size_t j, int rep) {
  return (q % 2 ? 1e7f : 1.0f) * (float)(1 + ((q * 31 + (int)(j % 1000) * 17 + rep) % 13)) / 3.0f;
}

static void big_on(shmem_team_t team, long* ls, long* ld, int rep) {
  static const size_t counts[] = {8193, 40001, 131072}; /* longs or floats: 64 KiB+, odd, 1 MiB */
  if (team == SHMEM_TEAM_INVALID) return;
  const int m = shmem_team_my_pe(team), tn = shmem_team_n_pes(team);
  for (size_t s = 0; s < sizeof counts / sizeof counts[0]; ++s) {
    const size_t k = counts[s];
    for (int in_place = 0; in_place < 2; ++in_place) {
      for (size_t j = 0; j < k; ++j) ls[j] = (long)(m * 131 + (int)(j % 100000) + rep);
      long* d = in_place ? ls : ld;
      CHECK(shmem_long_sum_reduce(team, d, ls, k) == 0, "sum_reduce failed");
      long* c = (long*)take((unsigned char*)d, k * sizeof(long));
      size_t bad = 0;
      for (size_t j = 0; j < k; ++j)
        bad += c[j] != (long)(131 * tn * (tn - 1) / 2) + (long)tn * (long)((int)(j % 100000) + rep);
      CHECK(bad == 0, "team of %d, member %d: sum of %zu longs (in place %d): %zu wrong", tn, m, k, in_place, bad);
      free(c);
    }
    float* fs = (float*)ls;
    for (int in_place = 0; in_place < 2; ++in_place) {
      for (size_t j = 0; j < k; ++j) fs[j] = fval(m, j, rep);
      float* d = in_place ? fs : (float*)ld;
      CHECK(shmem_float_sum_reduce(team, d, fs, k) == 0, "float sum_reduce failed");
      float* fc = (float*)take((unsigned char*)d, k * sizeof(float));
      size_t bad = 0;
      for (size_t j = 0; j < k; ++j) {
        float want = 0;
        for (int q = 0; q < tn; ++q) want = q == 0 ? fval(q, j, rep) : want + fval(q, j, rep);
        bad += memcmp(&fc[j], &want, sizeof want) != 0;
      }
      CHECK(bad == 0, "team of %d, member %d: float sum of %zu (in place %d): %zu not the member-order sum", tn, m, k,
            in_place, bad);
      free(fc);
    }
    /* broadcast of k longs from the first member, then in place (dest == source on every
     * member) from the last */
    for (int r = 0; r < 2; ++r) {
      const int root = r ? tn - 1 : 0;
      for (size_t j = 0; j < k; ++j) ls[j] = (long)(m * 7 + (int)(j % 100000) + rep);
      long* d = r ? ls : ld;
      CHECK(shmem_broadcastmem(team, d, ls, k * sizeof(long), root) == 0, "broadcastmem failed");
      long* c = (long*)take((unsigned char*)d, k * sizeof(long));
      size_t bad = 0;
      for (size_t j = 0; j < k; ++j) bad += c[j] != (long)(root * 7 + (int)(j % 100000) + rep);
      CHECK(bad == 0, "team of %d, member %d: broadcast of %zu longs from %d: %zu wrong", tn, m, k, root, bad);
      free(c);
    }
  }
  /* fcollect: 20001 longs per member (odd; up to 6 members fill ld) */
  const size_t fk = 20001;
  for (size_t j = 0; j < fk; ++j) ls[j] = (long)(m * 1000003L + (long)j + rep);
  CHECK(shmem_long_fcollect(team, ld, ls, fk) == 0, "fcollect failed");
  long* fc = (long*)take((unsigned char*)ld, fk * (size_t)tn * sizeof(long));
  size_t fbad = 0;
  for (int q = 0; q < tn; ++q)
    for (size_t j = 0; j < fk; ++j) fbad += fc[(size_t)q * fk + j] != (long)(q * 1000003L + (long)j + rep);
  CHECK(fbad == 0, "team of %d, member %d: fcollect of %zu longs each: %zu wrong", tn, m, fk, fbad);
  free(fc);
  /* alltoall and fcollect filling ld (1 MiB): a pair's 512 KiB blocks are pushed, by
   * rendezvous across nodes */
  const size_t ak = 131072 / (size_t)tn;
  for (int q = 0; q < tn; ++q)
    for (size_t j = 0; j < ak; ++j) ls[(size_t)q * ak + j] = ((long)m << 40) + ((long)q << 32) + (long)j + rep;
  CHECK(shmem_long_alltoall(team, ld, ls, ak) == 0, "alltoall failed");
  long* ac = (long*)take((unsigned char*)ld, ak * (size_t)tn * sizeof(long));
  size_t abad = 0;
  for (int q = 0; q < tn; ++q)
    for (size_t j = 0; j < ak; ++j) abad += ac[(size_t)q * ak + j] != ((long)q << 40) + ((long)m << 32) + (long)j + rep;
  CHECK(abad == 0, "team of %d, member %d: alltoall of %zu longs each: %zu wrong", tn, m, ak, abad);
  free(ac);
  shmem_team_sync(team); /* ls is the next source */
  for (size_t j = 0; j < ak; ++j) ls[j] = ((long)m << 40) + (long)j + rep;
  CHECK(shmem_long_fcollect(team, ld, ls, ak) == 0, "fcollect failed");
  fc = (long*)take((unsigned char*)ld, ak * (size_t)tn * sizeof(long));
  fbad = 0;
  for (int q = 0; q < tn; ++q)
    for (size_t j = 0; j < ak; ++j) fbad += fc[(size_t)q * ak + j] != ((long)q << 40) + (long)j + rep;
  CHECK(fbad == 0, "team of %d, member %d: fcollect of %zu longs each: %zu wrong", tn, m, ak, fbad);
  free(fc);
  shmem_team_sync(team);
}

static int big_reduce_case(void) {
  const int n = shmem_n_pes();
  long* ls = shmem_malloc(131072 * sizeof(long));
  long* ld = shmem_malloc(131072 * sizeof(long));
  shmem_team_t tail = SHMEM_TEAM_INVALID, pairs = SHMEM_TEAM_INVALID;
  /* 1..n-1: node 0 holds one member fewer (uneven: the chain); PEs 0, 2, 4, ...: one
   * member per node where nodes hold 2 */
  if (n >= 3) shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, n - 1, NULL, 0, &tail);
  if (n >= 4) shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, n / 2, NULL, 0, &pairs);
  for (int rep = 0; rep < 2; ++rep) {
    big_on(SHMEM_TEAM_WORLD, ls, ld, rep);
    big_on(tail, ls, ld, rep);
    big_on(pairs, ls, ld, rep);
  }
  if (tail != SHMEM_TEAM_INVALID) shmem_team_destroy(tail);
  if (pairs != SHMEM_TEAM_INVALID) shmem_team_destroy(pairs);
  shmem_free(ld);
  shmem_free(ls);
  shmem_barrier_all();
  return failures;
}

/* Byte j of the c-th broadcast's data. */
static unsigned char bpat(int c, size_t j) { return (unsigned char)(c * 29 + j * 11 + (j >> 7) + 1); }

/* One small broadcast of `b` bytes from `root` (call number c): checked, then the PE's
 * dest and source are overwritten at once (a PE still reading them would deliver that). */
static void bcast_one(shmem_team_t team, unsigned char* dst, unsigned char* src, size_t b, int root, int c) {
  const int m = shmem_team_my_pe(team), tn = shmem_team_n_pes(team);
  for (size_t j = 0; j < b; ++j) src[j] = m == root ? bpat(c, j) : (unsigned char)(0x5A ^ j);
  memset(dst, 0xCD, b + 8);
  CHECK(shmem_broadcastmem(team, dst, src, b, root) == 0, "broadcastmem failed");
  size_t bad = 0;
  for (size_t j = 0; j < b; ++j) bad += dst[j] != bpat(c, j);
  memset(src, 0xEE, b);
  memset(dst, 0xEF, b);
  CHECK(bad == 0, "team of %d, member %d: broadcast %d of %zu B from %d: %zu bytes wrong", tn, m, c, b, root, bad);
  CHECK(dst[b] == 0xCD, "team of %d, member %d: broadcast %d of %zu B wrote past its end", tn, m, c, b);
}

static void bcast_on(shmem_team_t team, int rep) {
  static const size_t sizes[] = {1,    2,    3,    7,    8,    16,   63,   64,   100,  255,  512,
                                 513,  1000, 1023, 1024, 1025, 1500, 2047, 2048, 5000, 7169, 8192};
  enum { kSizes = sizeof sizes / sizeof sizes[0] };
  unsigned char* src = shmem_malloc(8192 + 64);
  unsigned char* dst = shmem_malloc(8192 + 64);
  if (team != SHMEM_TEAM_INVALID) {
    const int m = shmem_team_my_pe(team), tn = shmem_team_n_pes(team);
    int c = rep * 100000;
    /* every size from every root, the roots in turn; now and then one member is late */
    for (int s = 0; s < kSizes; ++s)
      for (int root = 0; root < tn; ++root, ++c) {
        if (c % 7 == 0 && m == (c / 7) % tn) nap_ms(3);
        bcast_one(team, dst, src, sizes[s], root, c);
      }
    /* one root 70 times in a row (past the 32 mailboxes twice) while the last member
     * arrives 50 ms late and another naps halfway */
    for (int root = 0; root < tn; root += tn > 2 ? tn - 1 : 1)
      for (int i = 0; i < 70; ++i, ++c) {
        if (i == 0 && m == tn - 1 && m != root) nap_ms(50);
        if (i == 35 && m == (root + 1) % tn && m != root) nap_ms(20);
        bcast_one(team, dst, src, sizes[(size_t)i % kSizes], root, c);
      }
    shmem_team_sync(team);
  }
  shmem_free(dst);
  shmem_free(src);
}

static int bcast_case(void) {
  const int n = shmem_n_pes();
  shmem_team_t odd = SHMEM_TEAM_INVALID, tail = SHMEM_TEAM_INVALID, rev = SHMEM_TEAM_INVALID, even = SHMEM_TEAM_INVALID;
  /* 1..n-1; 1, 3, ...; 0, 3, 6, ...; 0, 2, 4, ... (one member per node on 2x2 and 3x5) */
  if (n >= 3) shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, n - 1, NULL, 0, &tail);
  if (n >= 2) shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n / 2, NULL, 0, &odd);
  if (n >= 4) shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 3, (n + 2) / 3, NULL, 0, &rev);
  if (n >= 3) shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &even);
  for (int rep = 0; rep < 2; ++rep) {
    bcast_on(SHMEM_TEAM_WORLD, rep);
    bcast_on(odd, rep);
    bcast_on(tail, rep);
    bcast_on(rev, rep);
    bcast_on(even, rep);
  }
  if (even != SHMEM_TEAM_INVALID) shmem_team_destroy(even);
  if (odd != SHMEM_TEAM_INVALID) shmem_team_destroy(odd);
  if (tail != SHMEM_TEAM_INVALID) shmem_team_destroy(tail);
  if (rev != SHMEM_TEAM_INVALID) shmem_team_destroy(rev);
  shmem_barrier_all();
  return failures;
}

static int bcast_ahead_case(void) {
  enum { kCalls = 8 };
  const int me = shmem_my_pe(), n = shmem_n_pes(), late = n - 1;
  long* back = shmem_calloc(1, sizeof(long));
  unsigned char* src = shmem_malloc(64);
  unsigned char* dst = shmem_malloc(64);
  shmem_barrier_all();
  if (me == late) {
    /* the others have returned from every broadcast before this PE enters the first */
    const int limit_ms = 10000;
    int waited = 0;
    while (shmem_long_atomic_fetch(back, me) < n - 1 && waited < limit_ms) nap_ms(1), ++waited;
    const long got = shmem_long_atomic_fetch(back, me);
    CHECK(got == n - 1, "after %d ms only %ld of %d PEs returned from %d broadcasts this PE had not entered",
          waited, got, n - 1, kCalls);
  }
  for (int c = 0; c < kCalls; ++c) bcast_one(SHMEM_TEAM_WORLD, dst, src, 8 + (size_t)c, 0, c);
  if (me != late) shmem_long_atomic_inc(back, late);
  shmem_barrier_all();
  shmem_free(dst);
  shmem_free(src);
  shmem_free(back);
  return failures;
}

int main(int argc, char** argv) {
  const char* c = argc > 1 ? argv[1] : "progress";
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  if (strcmp(c, "progress") == 0 || strcmp(c, "team-reduce") == 0 || strcmp(c, "data-coll") == 0 ||
      strcmp(c, "big-reduce") == 0 || strcmp(c, "bcast") == 0 || strcmp(c, "bcast-ahead") == 0 ||
      strcmp(c, "acked-put") == 0) {
    int f = c[0] == 'p'                        ? progress_case()
            : c[0] == 't'                      ? team_reduce_case()
            : c[0] == 'd'                      ? data_coll_case()
            : c[0] == 'a'                      ? acked_put_case()
            : strcmp(c, "big-reduce") == 0     ? big_reduce_case()
            : strcmp(c, "bcast") == 0          ? bcast_case()
                                               : bcast_ahead_case();
    shmem_finalize();
    return f ? 1 : 0;
  }
  long* x = shmem_calloc(1, sizeof(long));
  shmem_barrier_all();
  if (strcmp(c, "kill-self") == 0) {
    if (me == n - 1) raise(SIGKILL);
    for (;;) shmem_barrier_all(); /* the job must end with PE n-1 named */
  }
  if (strcmp(c, "hang") == 0 || strcmp(c, "hang-put") == 0) {
    if (me == n - 1) raise(SIGSTOP);
    nap_ms(200);
    if (me == 0 && c[4] == '-') {
      shmem_long_p(x, 1, n - 1);
      shmem_quiet();
    } else if (me == 0) {
      (void)shmem_long_g(x, n - 1);
    }
    shmem_barrier_all();
    return 3; /* not reached: the get or the barrier ends the job */
  }
  fprintf(stderr, "unknown case %s\n", c);
  return 2;
}
