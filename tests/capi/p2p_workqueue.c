/* A small OpenSHMEM 1.5 program of the kind users write, using only the standard API:
 * PEs take work items from a shared counter on PE 0 (atomic fetch-and-increment), compute
 * them, send each result to the PE that owns its slot with a typed put, count deliveries
 * with atomic adds, and report completion with put-with-signal. Every PE then checks
 * the results it owns. Built with -std=c11 -Wall -Werror; the exit code is the verdict. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>

static int failures;
#define CHECK(cond, ...)                                                   \
  do {                                                                     \
    if (!(cond) && failures++ == 0) {                                      \
      fprintf(stderr, "FAIL [pe %d] line %d: ", shmem_my_pe(), __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                        \
      fputc('\n', stderr);                                                 \
    }                                                                      \
  } while (0)
#define FATAL(msg)                                          \
  do {                                                      \
    fprintf(stderr, "FATAL [pe %d] %s\n", shmem_my_pe(), msg); \
    shmem_global_exit(1);                                   \
  } while (0)

enum { kItems = 2000, kPerPe = 64 };

/* Global and static variables are symmetric objects too (OpenSHMEM 1.5 section 3.1). */
long next_item;      /* on PE 0: next work item */
static long lock;    /* a distributed lock */
static long maxv;    /* on the last PE: the most items any PE did */

static long square(long i) { return i * i - 3 * i + 7; }

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int slots = (kItems + n - 1) / n;

  long *results = shmem_calloc(slots, sizeof(long)); /* item i lives on PE i % n */
  int *delivered = shmem_calloc(1, sizeof(int));     /* items delivered to this PE */
  double *sum = shmem_calloc(1, sizeof(double));     /* partial sums, set atomically */
  uint64_t *done = shmem_calloc(1, sizeof(uint64_t));
  long *summary = shmem_calloc(n, sizeof(long));
  if (!results || !delivered || !sum || !done || !summary) FATAL("shmem_calloc failed");
  shmem_barrier_all();

  long mine = 0;
  for (;;) {
    long i = shmem_atomic_fetch_inc(&next_item, 0);
    if (i >= kItems) break;
    long r = square(i);
    int owner = (int)(i % n);
    shmem_long_p(&results[i / n], r, owner);
    shmem_fence(); /* the result is delivered before the count says so */
    shmem_int_atomic_add(delivered, 1, owner);
    ++mine;
  }
  shmem_quiet();

  /* Everyone tells PE 0 how many items it did; the signal says the data is there. */
  shmem_long_put_signal(&summary[me], &mine, 1, done, 1, SHMEM_SIGNAL_ADD, 0);
  if (me == 0) {
    shmem_signal_wait_until(done, SHMEM_CMP_EQ, (uint64_t)n);
    long total = 0;
    for (int pe = 0; pe < n; ++pe) total += summary[pe];
    CHECK(total == kItems, "the PEs did %ld items in all, expected %d", total, kItems);
  }

  /* The results this PE owns all arrive: wait for the delivery count, then check. */
  int mine_items = 0;
  for (long i = me; i < kItems; i += n) ++mine_items;
  shmem_int_wait_until(delivered, SHMEM_CMP_EQ, mine_items);
  for (long i = me; i < kItems; i += n)
    CHECK(results[i / n] == square(i), "result of item %ld is %ld, expected %ld", i, results[i / n], square(i));

  /* Atomic swap / fetch / compare_swap on a double and a long, generic and typed. */
  shmem_atomic_set(sum, 0.5 * me, (me + 1) % n);
  shmem_barrier_all();
  CHECK(shmem_atomic_fetch(sum, me) == 0.5 * ((me + n - 1) % n), "atomic_set of a double");
  double old = shmem_double_atomic_swap(sum, 2.0, me);
  CHECK(old == 0.5 * ((me + n - 1) % n), "atomic_swap returned %f", old);
  shmem_barrier_all();
  if (me == 0) {
    long prev = shmem_atomic_compare_swap(&next_item, (long)(kItems + n), -1L, 0);
    CHECK(prev == kItems + n, "compare_swap saw %ld, expected %d", prev, kItems + n);
    CHECK(next_item == -1, "compare_swap did not store");
  }

  /* A lock-protected running maximum, kept on the last PE. */
  shmem_set_lock(&lock);
  long m = shmem_long_g(&maxv, n - 1);
  if (mine > m) shmem_long_p(&maxv, mine, n - 1);
  shmem_clear_lock(&lock);
  shmem_barrier_all();
  if (me == 0) {
    long most = 0;
    for (int pe = 0; pe < n; ++pe) most = summary[pe] > most ? summary[pe] : most;
    long got = shmem_long_g(&maxv, n - 1);
    CHECK(got == most, "the lock-protected maximum is %ld, expected %ld", got, most);
  }

  shmem_free(summary);
  shmem_free(done);
  shmem_free(sum);
  shmem_free(delivered);
  shmem_free(results);
  shmem_finalize();
  return failures ? 1 : 0;
}
