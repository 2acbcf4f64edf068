/* A PE for the liveness tests (live_tests.py): one PE fails while the others are blocked
 * in waits of every kind, and the job must end by itself, whatever started it.
 *
 *   live_pe ok
 *   live_pe badarg|kill|kill_forked|global_exit <victim> <waits> [code]
 *
 * <waits> is a comma list of barrier, wait_until, signal, lock, coll: the i-th PE other than
 * the victim blocks in the i-th (cyclically). The victim takes the lock, meets the others in
 * a barrier, gives them time to fall asleep in their waits, prints "live_pe: PE v fails at
 * <unix time>", then: badarg puts to PE n_pes (an error that ends the job), kill sends
 * itself SIGKILL (kill_forked after forking a child that sleeps), global_exit calls shmem_global_exit(code). Nothing is meant to return.
 *
 * Started with SHMEMX_INIT_WITH_UNIQUEID when LIVE_UID_FILE is set (by hand: LIVE_RANK,
 * LIVE_NPES; PE 0 creates the id and writes it to the file), else with shmem_init. */
#include <shmem.h>
#include <shmemx.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static void init_from_file(const char* path) {
  int me = atoi(getenv("LIVE_RANK")), n = atoi(getenv("LIVE_NPES"));
  shmemx_uniqueid_t uid = SHMEMX_UNIQUEID_INITIALIZER;
  char text[SHMEMX_UNIQUEID_TEXT_LEN + 2];
  if (me == 0) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    umask(077);
    FILE* f;
    if (shmemx_get_uniqueid(&uid) != SHMEMX_SUCCESS || shmemx_uniqueid_to_string(&uid, text, sizeof text) != 0 ||
        !(f = fopen(tmp, "w"))) {
      fprintf(stderr, "live_pe: cannot create the unique id\n");
      exit(2);
    }
    fprintf(f, "%s\n", text);
    fclose(f);
    rename(tmp, path);
  } else {
    int got = 0;
    for (int i = 0; i < 6000 && !got; ++i) {
      FILE* f = fopen(path, "r");
      if (f) {
        got = fgets(text, sizeof text, f) != NULL;
        fclose(f);
      }
      if (!got) usleep(10000);
    }
    text[strcspn(text, "\n")] = '\0';
    if (!got || shmemx_uniqueid_from_string(text, &uid) != SHMEMX_SUCCESS) {
      fprintf(stderr, "live_pe: PE %d found no unique id in %s\n", me, path);
      exit(2);
    }
  }
  shmemx_init_attr_t attr;
  shmemx_set_attr_uniqueid_args(me, n, 64 << 20, &uid, &attr);
  if (shmemx_init_attr(SHMEMX_INIT_WITH_UNIQUEID, &attr) != SHMEMX_SUCCESS) exit(2);
  if (me == 0) unlink(path);
}

static long lock_word = 0;  /* symmetric: a global */
static long flag = 0;       /* never set: wait_until blocks */
static uint64_t sig = 0;    /* never signalled */
static long src[4], dst[4];

int main(int argc, char** argv) {
  const char* uid_file = getenv("LIVE_UID_FILE");
  if (uid_file) init_from_file(uid_file);
  else shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  const char* mode = argc > 1 ? argv[1] : "ok";

  if (strcmp(mode, "ok") == 0) {
    long* box = shmem_malloc(sizeof(long));
    int good = 1;
    for (int i = 0; i < 50; ++i) {
      shmem_long_p(box, me * 1000 + i, (me + 1) % n);
      shmem_barrier_all();
      good &= *box == ((me + n - 1) % n) * 1000 + i;
      shmem_barrier_all();
    }
    shmem_free(box);
    printf("live_pe: PE %d of %d: %s\n", me, n, good ? "ok" : "WRONG");
    shmem_finalize();
    return good ? 0 : 1;
  }
  if (argc < 4) {
    fprintf(stderr, "usage: live_pe ok | live_pe badarg|kill|global_exit <victim> <waits> [code]\n");
    return 2;
  }
  int victim = atoi(argv[2]);
  int code = argc > 4 ? atoi(argv[4]) : 7;
  if (me == victim) shmem_set_lock(&lock_word);
  shmem_barrier_all();
  if (me == victim) {
    usleep(300 * 1000);
    struct timeval tv;
    gettimeofday(&tv, NULL);
    fprintf(stderr, "live_pe: PE %d fails at %.3f\n", me, tv.tv_sec + tv.tv_usec / 1e6);
    fflush(stderr);
    if (strcmp(mode, "badarg") == 0) shmem_putmem(dst, src, sizeof src, n);
    else if (strcmp(mode, "kill") == 0) raise(SIGKILL);
    else if (strcmp(mode, "kill_forked") == 0) {
      /* A child that outlives us a while holds copies of our sockets: the store must still
       * see this PE's watch connection close. */
      int ready[2];
      if (pipe(ready) != 0) return 5;
      pid_t parent = getpid(), child = fork();
      if (child == 0) {
        /* It outlives us (the test kills it; at most 20 s), holding none of our output
         * pipes; its pid goes to $LIVE_CHILD_FILE. */
        (void)parent;
        int null_fd = open("/dev/null", O_WRONLY);
        dup2(null_fd, 1);
        dup2(null_fd, 2);
        const char* path = getenv("LIVE_CHILD_FILE");
        FILE* f = path ? fopen(path, "w") : NULL;
        if (f) {
          fprintf(f, "%d\n", (int)getpid());
          fclose(f);
        }
        if (write(ready[1], "", 1) != 1) _exit(1);
        sleep(20);
        _exit(0);
      }
      char c;
      if (child < 0 || read(ready[0], &c, 1) != 1) return 5;
      raise(SIGKILL);
    }
    else if (strcmp(mode, "global_exit") == 0) shmem_global_exit(code);
    fprintf(stderr, "live_pe: PE %d is still running after '%s'\n", me, mode);
    return 3;
  }
  /* The i-th survivor takes the i-th wait of the list. */
  int idx = me < victim ? me : me - 1, count = 0;
  char waits[256], *save = NULL, *w, *pick = NULL;
  snprintf(waits, sizeof waits, "%s", argv[3]);
  char* names[16];
  for (w = strtok_r(waits, ",", &save); w && count < 16; w = strtok_r(NULL, ",", &save)) names[count++] = w;
  pick = names[idx % count];
  fprintf(stderr, "live_pe: PE %d waits in %s\n", me, pick);
  fflush(stderr);
  if (strcmp(pick, "barrier") == 0) shmem_barrier_all();
  else if (strcmp(pick, "wait_until") == 0) shmem_long_wait_until(&flag, SHMEM_CMP_NE, 0);
  else if (strcmp(pick, "signal") == 0) shmem_signal_wait_until(&sig, SHMEM_CMP_NE, 0);
  else if (strcmp(pick, "lock") == 0) shmem_set_lock(&lock_word);
  else if (strcmp(pick, "coll") == 0) shmem_long_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 4);
  else {
    fprintf(stderr, "live_pe: unknown wait '%s'\n", pick);
    return 2;
  }
  fprintf(stderr, "live_pe: PE %d left its wait (%s): it should not have\n", me, pick);
  return 4;
}
