/* Starting a job from a unique id passed through a file (SHMEMX_INIT_WITH_UNIQUEID).
 *
 *   uid_file <id file> <my_pe> <n_pes>     (start n_pes of them, any way you like)
 *
 * PE 0 creates the id (this starts the job's store inside PE 0) and writes its text form
 * to the file, readable only by this user: the id holds the job's secret. The other PEs
 * wait for the file, read the id and join. Every PE then puts its number into its right
 * neighbour's symmetric buffer and checks what it received. */
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int write_id(const char* path, const shmemx_uniqueid_t* uid) {
  char text[SHMEMX_UNIQUEID_TEXT_LEN], tmp[4096];
  if (shmemx_uniqueid_to_string(uid, text, sizeof text) != SHMEMX_SUCCESS) return -1;
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  umask(077);
  FILE* f = fopen(tmp, "w");
  if (!f) return -1;
  fprintf(f, "%s\n", text);
  if (fclose(f) != 0) return -1;
  return rename(tmp, path); /* the others never see a half-written file */
}

static int read_id(const char* path, shmemx_uniqueid_t* uid) {
  char text[SHMEMX_UNIQUEID_TEXT_LEN + 2];
  for (int i = 0; i < 6000; ++i) { /* up to 60 s */
    FILE* f = fopen(path, "r");
    if (f) {
      int ok = fgets(text, sizeof text, f) != NULL;
      fclose(f);
      if (ok) {
        text[strcspn(text, "\n")] = '\0';
        return shmemx_uniqueid_from_string(text, uid);
      }
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return -1;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s <id file> <my_pe> <n_pes>\n", argv[0]);
    return 2;
  }
  const char* path = argv[1];
  int me = atoi(argv[2]), n = atoi(argv[3]);
  shmemx_uniqueid_t uid = SHMEMX_UNIQUEID_INITIALIZER;
  if (me == 0) {
    if (shmemx_get_uniqueid(&uid) != SHMEMX_SUCCESS || write_id(path, &uid) != 0) {
      fprintf(stderr, "PE 0: cannot create or publish the unique id\n");
      return 1;
    }
  } else if (read_id(path, &uid) != 0) {
    fprintf(stderr, "PE %d: no unique id in %s\n", me, path);
    return 1;
  }

  shmemx_init_attr_t attr;
  shmemx_set_attr_uniqueid_args(me, n, 64 << 20, &uid, &attr);
  int rc = shmemx_init_attr(SHMEMX_INIT_WITH_UNIQUEID, &attr);
  if (rc != SHMEMX_SUCCESS) {
    fprintf(stderr, "PE %d: shmemx_init_attr failed (%d)\n", me, rc);
    return 1;
  }
  if (me == 0) unlink(path);

  long* box = shmem_malloc(sizeof(long));
  *box = -1;
  shmem_barrier_all();
  shmem_long_p(box, me, (me + 1) % n);
  shmem_barrier_all();
  int ok = *box == (me + n - 1) % n;
  printf("PE %d of %d: received %ld from my left neighbour: %s\n", shmem_my_pe(), shmem_n_pes(), *box,
         ok ? "ok" : "WRONG");
  shmem_free(box);
  shmem_finalize();
  return ok ? 0 : 1;
}
