/* One PE of the init-mode tests (tests/init/init_tests.py starts it in various ways).
 *
 *   init_pe uid <id file> <my_pe> <n_pes>   PE 0 creates a unique id, the others read it
 *           (env INIT_PE_VIA=url: PEs other than 0 connect there; INIT_PE_TLS=off)
 *   init_pe default                         shmem_init from the launcher's environment
 *   init_pe attr-default                    shmemx_init_attr(DEFAULT, NULL)
 *   init_pe mpi-flag                        shmemx_init_attr(MPI, comm_args = NULL)
 *   init_pe cycles <n>                      n x (init, work, finalize); no fd, mapping or
 *                                           /dev/shm object may be left behind
 *   init_pe instances                       instance 0 on all PEs, instance 1 on PEs 0, 2
 *
 * After init every mode checks a ring of puts and prints "PE <me> of <n> ok" (PE 0 also
 * prints "heap-base=<decimal address>" for the relay test). Exit code: 0 = ok. */
#include <dirent.h>
#include <shmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond)) {                                         \
      fprintf(stderr, "init_pe: check failed: " __VA_ARGS__); \
      fprintf(stderr, "\n");                               \
      exit(3);                                             \
    }                                                      \
  } while (0)

static int ring(const char* label) {
  int me = shmem_my_pe(), n = shmem_n_pes();
  long* box = shmem_malloc(sizeof(long));
  CHECK(box != NULL, "shmem_malloc");
  *box = -1;
  shmem_barrier_all();
  shmem_long_p(box, 1000 + me, (me + 1) % n);
  shmem_barrier_all();
  int ok = *box == 1000 + (me + n - 1) % n;
  printf("%sPE %d of %d %s\n", label, me, n, ok ? "ok" : "WRONG");
  fflush(stdout);
  shmem_free(box);
  return ok;
}

static void write_id(const char* path, const shmemx_uniqueid_t* uid) {
  char text[SHMEMX_UNIQUEID_TEXT_LEN], tmp[4096];
  CHECK(shmemx_uniqueid_to_string(uid, text, sizeof text) == 0, "uniqueid_to_string");
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  umask(077);
  FILE* f = fopen(tmp, "w");
  CHECK(f != NULL, "open %s", tmp);
  fprintf(f, "%s\n", text);
  fclose(f);
  CHECK(rename(tmp, path) == 0, "rename");
}

static void read_id(const char* path, shmemx_uniqueid_t* uid) {
  char text[SHMEMX_UNIQUEID_TEXT_LEN + 2];
  for (int i = 0; i < 6000; ++i) {
    FILE* f = fopen(path, "r");
    if (f) {
      int ok = fgets(text, sizeof text, f) != NULL;
      fclose(f);
      if (ok) {
        text[strcspn(text, "\n")] = '\0';
        CHECK(shmemx_uniqueid_from_string(text, uid) == 0, "uniqueid_from_string");
        return;
      }
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  CHECK(0, "no id in %s", path);
}

static int count_dir(const char* path, const char* prefix) {
  DIR* d = opendir(path);
  if (!d) return -1;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.' && strncmp(e->d_name, prefix, strlen(prefix)) == 0) ++n;
  closedir(d);
  return n;
}

static int count_lines(const char* path) {
  FILE* f = fopen(path, "r");
  if (!f) return -1;
  int n = 0, c;
  while ((c = fgetc(f)) != EOF)
    if (c == '\n') ++n;
  fclose(f);
  return n;
}

static int cmd_uid(int argc, char** argv) {
  CHECK(argc == 5, "uid <file> <my_pe> <n_pes>");
  int me = atoi(argv[3]), n = atoi(argv[4]);
  const char* tls = getenv("INIT_PE_TLS");
  if (tls && strcmp(tls, "off") == 0) CHECK(shmemx_set_conf_store_tls(false, NULL, 0) == 0, "set tls");
  shmemx_uniqueid_t uid = SHMEMX_UNIQUEID_INITIALIZER;
  if (me == 0) {
    CHECK(shmemx_get_uniqueid(&uid) == 0, "get_uniqueid");
    write_id(argv[2], &uid);
  } else {
    read_id(argv[2], &uid);
  }
  shmemx_init_attr_t attr;
  CHECK(shmemx_set_attr_uniqueid_args(me, n, 32 << 20, &uid, &attr) == 0, "set_attr_uniqueid_args");
  const char* via = getenv("INIT_PE_VIA");
  if (via && me != 0) snprintf(attr.ip_port, sizeof attr.ip_port, "%s", via);
  int rc = shmemx_init_attr(SHMEMX_INIT_WITH_UNIQUEID, &attr);
  if (rc != 0) {
    fprintf(stderr, "init_pe: shmemx_init_attr returned %d\n", rc);
    return 4;
  }
  CHECK(shmemx_init_status() == SHMEMX_STATUS_IS_INITIALIZED, "status");
  long* p = shmem_malloc(64);
  if (me == 0) printf("heap-base=%llu\n", (unsigned long long)(uintptr_t)p);
  shmem_free(p);
  int ok = ring("");
  shmem_finalize();
  return ok ? 0 : 1;
}

static int cmd_cycles(int argc, char** argv) {
  CHECK(argc == 3, "cycles <n>");
  int cycles = atoi(argv[2]);
  int fds0 = -1, maps0 = -1, shm0 = -1;
  for (int i = 0; i < cycles; ++i) {
    int inited = -1;
    shmem_query_initialized(&inited);
    CHECK(inited == 0 && shmemx_init_status() == SHMEMX_STATUS_NOT_INITIALIZED, "cycle %d: initialized before init", i);
    shmem_init();
    CHECK(shmemx_init_status() == SHMEMX_STATUS_IS_INITIALIZED, "cycle %d: status after init", i);
    int me = shmem_my_pe(), n = shmem_n_pes();
    /* A fresh job state: the heap is empty again, so the first block is at the same place. */
    long* a = shmem_calloc(1024, sizeof(long));
    CHECK(a != NULL, "calloc");
    for (int k = 0; k < 1024; ++k) CHECK(a[k] == 0, "cycle %d: heap not fresh", i);
    shmem_barrier_all();
    shmem_long_p(&a[i % 1024], i, (me + 1) % n);
    shmem_barrier_all();
    CHECK(a[i % 1024] == i, "cycle %d: put not received", i);
    shmem_free(a);
    shmem_finalize();
    int fin = 0;
    shmem_query_finalized(&fin);
    CHECK(fin == 1, "cycle %d: not finalized", i);
    int fds = count_dir("/proc/self/fd", ""), maps = count_lines("/proc/self/maps"),
        shm = count_dir("/dev/shm", "symmem-");
    if (i == 1) { /* after the first cycles the process has loaded everything it needs */
      fds0 = fds;
      maps0 = maps;
      shm0 = shm;
    } else if (i > 1) {
      CHECK(fds <= fds0, "cycle %d: %d descriptors open, %d after cycle 1 (a leak)", i, fds, fds0);
      CHECK(maps <= maps0 + 2, "cycle %d: %d mappings, %d after cycle 1 (a leak)", i, maps, maps0);
      (void)shm0;
    }
  }
  printf("cycles %d ok: %d descriptors, %d mappings at the end\n", cycles, fds0, maps0);
  return 0;
}

static int cmd_instances(void) {
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  CHECK(n == 4, "needs 4 PEs");
  long* sym0 = shmem_calloc(4, sizeof(long));
  /* Instance 1: PEs 0 and 2 of instance 0 as its PEs 0 and 1, with a smaller heap. The id
   * travels through instance 0's symmetric memory. */
  shmemx_uniqueid_t* idbox = shmem_calloc(1, sizeof(shmemx_uniqueid_t));
  int in1 = me == 0 || me == 2;
  if (me == 0) {
    shmemx_uniqueid_t uid;
    CHECK(shmemx_get_uniqueid(&uid) == 0, "get_uniqueid");
    *idbox = uid;
    shmem_putmem(idbox, &uid, sizeof uid, 2);
  }
  shmem_barrier_all();
  if (in1) {
    shmemx_init_attr_t attr;
    CHECK(shmemx_set_attr_uniqueid_args(me / 2, 2, 16 << 20, idbox, &attr) == 0, "args");
    attr.instance_id = 1;
    CHECK(shmemx_init_attr(SHMEMX_INIT_WITH_UNIQUEID, &attr) == 0, "init instance 1");
    CHECK(shmemx_instance_current() == 1, "instance 1 selected after its init");
    CHECK(shmem_my_pe() == me / 2 && shmem_n_pes() == 2, "instance 1 numbering");
    long* sym1 = shmem_calloc(4, sizeof(long));
    CHECK(sym1 != NULL, "instance 1 calloc");
    /* Interleave work on both instances: each must see only its own traffic. */
    for (int round = 0; round < 50; ++round) {
      CHECK(shmemx_instance_select(1) == 0, "select 1");
      shmem_long_p(&sym1[round % 4], 100000 + round, 1 - shmem_my_pe());
      shmem_barrier_all();
      CHECK(sym1[round % 4] == 100000 + round, "instance 1 round %d", round);
      CHECK(shmemx_instance_select(0) == 0, "select 0");
      shmem_long_p(&sym0[round % 4], round, (me + 1) % 4);
      shmem_barrier_all();
      CHECK(sym0[round % 4] == round, "instance 0 round %d", round);
    }
    shmemx_instance_select(1);
    CHECK(!shmem_addr_accessible(sym0, 0), "instance 0's memory is not instance 1's");
    shmem_free(sym1);
    CHECK(shmemx_instance_finalize(1) == 0, "finalize 1");
    CHECK(shmemx_instance_current() == 0, "back to instance 0");
  } else {
    for (int round = 0; round < 50; ++round) {
      shmem_long_p(&sym0[round % 4], round, (me + 1) % 4);
      shmem_barrier_all();
      CHECK(sym0[round % 4] == round, "instance 0 round %d", round);
    }
  }
  CHECK(shmemx_instance_select(1) != 0, "instance 1 is gone");
  int ok = ring("instance 0: ");
  shmem_free(idbox);
  shmem_free(sym0);
  shmem_finalize();
  return ok ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const char* mode = argv[1];
  if (strcmp(mode, "uid") == 0) return cmd_uid(argc, argv);
  if (strcmp(mode, "cycles") == 0) return cmd_cycles(argc, argv);
  if (strcmp(mode, "instances") == 0) return cmd_instances();
  if (strcmp(mode, "default") == 0) {
    shmem_init();
  } else if (strcmp(mode, "attr-default") == 0 || strcmp(mode, "mpi-flag") == 0) {
    shmemx_init_attr_t attr = SHMEMX_INIT_ATTR_INITIALIZER;
    int rc = shmemx_init_attr(strcmp(mode, "mpi-flag") == 0 ? SHMEMX_INIT_WITH_MPI : SHMEMX_INIT_WITH_DEFAULT, &attr);
    if (rc != 0) {
      fprintf(stderr, "init_pe: shmemx_init_attr returned %d\n", rc);
      return 4;
    }
  } else {
    return 2;
  }
  int ok = ring("");
  shmem_finalize();
  return ok ? 0 : 1;
}
