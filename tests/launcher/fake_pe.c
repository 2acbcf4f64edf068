/* A PE that does what its arguments say, for the launcher's failure tests.
 *
 * Each argument is one step, run in order: "[@R:]verb[=value]". A step with "@R:" is run
 * only by the PE whose SYMMEM_RANK is R. Verbs:
 *   out=TEXT    write TEXT to stdout ("\n" in TEXT is a newline); err=TEXT: to stderr
 *   env=VAR     print "VAR=value" (or "VAR unset") on stdout
 *   exit=CODE   exit with CODE
 *   signal=SIG  send SIG to itself
 *   sleep=SEC   sleep SEC seconds (fractions allowed)
 *   ignore=SIG  ignore SIG from now on
 *   shm=NAME    create /dev/shm/symmem-$SYMMEM_JOB_ID-NAME-<rank> and print "shm <path>"
 *   spawn=SEC   fork a child (same argv, so same marker) that sleeps SEC seconds
 *   mark=ANY    nothing; a unique word for finding the test's processes in /proc
 * After the last step the PE exits 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static void write_text(int fd, const char* text) {
  char buf[4096];
  size_t n = 0;
  for (const char* p = text; *p != '\0' && n < sizeof buf; ++p) {
    if (p[0] == '\\' && p[1] == 'n') {
      buf[n++] = '\n';
      ++p;
    } else {
      buf[n++] = *p;
    }
  }
  if (write(fd, buf, n) < 0) exit(90);
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

int main(int argc, char** argv) {
  const char* rank_env = getenv("SYMMEM_RANK");
  int rank = rank_env != NULL ? atoi(rank_env) : -1;
  for (int i = 1; i < argc; ++i) {
    const char* step = argv[i];
    if (step[0] == '@') {
      char* colon = strchr(step, ':');
      if (colon == NULL) {
        fprintf(stderr, "fake_pe: bad step '%s'\n", step);
        return 91;
      }
      if (atoi(step + 1) != rank) continue;
      step = colon + 1;
    }
    const char* eq = strchr(step, '=');
    const char* value = eq != NULL ? eq + 1 : "";
    size_t verb_len = eq != NULL ? (size_t)(eq - step) : strlen(step);
#define IS(v) (verb_len == strlen(v) && strncmp(step, v, verb_len) == 0)
    if (IS("out")) {
      write_text(1, value);
    } else if (IS("err")) {
      write_text(2, value);
    } else if (IS("env")) {
      const char* v = getenv(value);
      if (v != NULL) {
        printf("%s=%s\n", value, v);
      } else {
        printf("%s unset\n", value);
      }
      fflush(stdout);
    } else if (IS("exit")) {
      exit(atoi(value));
    } else if (IS("signal")) {
      kill(getpid(), atoi(value));
    } else if (IS("sleep")) {
      sleep_s(atof(value));
    } else if (IS("ignore")) {
      signal(atoi(value), SIG_IGN);
    } else if (IS("shm")) {
      const char* job = getenv("SYMMEM_JOB_ID");
      char name[256];
      snprintf(name, sizeof name, "/symmem-%s-%s-%d", job != NULL ? job : "nojob", value, rank);
      int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
      if (fd < 0 || ftruncate(fd, 4096) != 0) {
        perror("fake_pe: shm_open");
        return 92;
      }
      close(fd);
      printf("shm /dev/shm%s\n", name);
      fflush(stdout);
    } else if (IS("spawn")) {
      pid_t pid = fork();
      if (pid == 0) {
        sleep_s(atof(value));
        _exit(0);
      }
    } else if (IS("mark")) {
    } else {
      fprintf(stderr, "fake_pe: unknown step '%s'\n", step);
      return 93;
    }
#undef IS
  }
  return 0;
}
