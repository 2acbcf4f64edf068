#include "guardian.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "bootstrap/launch_env.hpp"

namespace symmem::run {
namespace {

constexpr char kDone = 'D';

void ignore_signal(int sig) {
  struct sigaction sa {};
  sa.sa_handler = SIG_IGN;
  sigaction(sig, &sa, nullptr);
}

// Closes every descriptor above 2 except `keep_a` and `keep_b`.
void close_fds_except(int keep_a, int keep_b) {
  int lo = keep_a < keep_b ? keep_a : keep_b, hi = keep_a < keep_b ? keep_b : keep_a;
  if (lo > 3) close_range(3, lo - 1, 0);
  if (hi > lo + 1) close_range(lo + 1, hi - 1, 0);
  close_range(hi + 1, ~0U, 0);
}

int remove_in(const char* path, const std::string& prefix) {
  DIR* dir = opendir(path);
  if (dir == nullptr) return 0;
  int removed = 0;
  while (struct dirent* e = readdir(dir)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) != 0) continue;
    if (unlinkat(dirfd(dir), e->d_name, 0) == 0) ++removed;
  }
  closedir(dir);
  return removed;
}

int remove_shm_with_prefix(const std::string& prefix, const std::string& heap_dir) {
  int n = remove_in("/dev/shm", prefix);
  if (!heap_dir.empty() && heap_dir != "/dev/shm") n += remove_in(heap_dir.c_str(), prefix);
  return n;
}

[[noreturn]] void holder_main(pid_t guardian) {
  prctl(PR_SET_NAME, "symmem-pgroup");
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != guardian) _exit(0);
  // Group-wide SIGINT/SIGTERM are meant for the PEs; only SIGKILL ends the holder.
  ignore_signal(SIGINT);
  ignore_signal(SIGTERM);
  ignore_signal(SIGHUP);
  ignore_signal(SIGQUIT);
  for (;;) pause();
}

[[noreturn]] void guardian_main(int done_rd, int pgid_wr, const std::string& shm_prefix, const std::string& heap_dir) {
  prctl(PR_SET_NAME, "symmem-guard");
  // The guardian ends when the launcher does (EOF on done_rd), never on a signal meant
  // for the launcher's process group, such as Ctrl-C.
  ignore_signal(SIGINT);
  ignore_signal(SIGTERM);
  ignore_signal(SIGHUP);
  ignore_signal(SIGQUIT);
  ignore_signal(SIGPIPE);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // Do not hold the launcher's output open after it is gone.
  int null_fd = open("/dev/null", O_RDWR);
  if (null_fd >= 0) {
    dup2(null_fd, 0);
    dup2(null_fd, 1);
    dup2(null_fd, 2);
    if (null_fd > 2) close(null_fd);
  }
  close_fds_except(done_rd, pgid_wr);

  pid_t me = getpid();
  pid_t holder = fork();
  if (holder == 0) {
    close(done_rd);
    close(pgid_wr);
    holder_main(me);
  }
  if (holder > 0) setpgid(holder, holder);  // also done by the holder; whoever is first
  pid_t msg = holder;                       // -1 tells the launcher fork failed
  ssize_t ignored = write(pgid_wr, &msg, sizeof msg);
  (void)ignored;
  close(pgid_wr);
  if (holder < 0) _exit(1);

  bool done = false;
  char buf[64];
  for (;;) {
    ssize_t n = read(done_rd, buf, sizeof buf);
    if (n > 0) {
      if (std::memchr(buf, kDone, static_cast<size_t>(n)) != nullptr) done = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  if (!done) {
    // The launcher died. The unreaped holder keeps the group id ours, so the group kill
    // is safe. Kill and sweep twice: a PE killed inside shm_open may still create its
    // object after the first sweep.
    kill(-holder, SIGKILL);
    remove_shm_with_prefix(shm_prefix, heap_dir);
    usleep(200 * 1000);
    kill(-holder, SIGKILL);
    remove_shm_with_prefix(shm_prefix, heap_dir);
  }
  kill(holder, SIGKILL);
  while (waitpid(holder, nullptr, 0) < 0 && errno == EINTR) {
  }
  _exit(0);
}

std::string shm_prefix(const std::string& job_id) { return std::string(kShmPrefix) + job_id + "-"; }

}  // namespace

Result<Guardian> start_guardian(const std::string& job_id, const std::string& heap_dir) {
  int done_pipe[2], pgid_pipe[2];
  if (pipe2(done_pipe, O_CLOEXEC) != 0) return errno_status(Errc::kIo, "pipe", errno);
  if (pipe2(pgid_pipe, O_CLOEXEC) != 0) {
    int err = errno;
    close(done_pipe[0]);
    close(done_pipe[1]);
    return errno_status(Errc::kIo, "pipe", err);
  }
  std::string prefix = shm_prefix(job_id);
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    for (int fd : {done_pipe[0], done_pipe[1], pgid_pipe[0], pgid_pipe[1]}) close(fd);
    return errno_status(Errc::kIo, "fork", err);
  }
  if (pid == 0) {
    close(done_pipe[1]);
    close(pgid_pipe[0]);
    guardian_main(done_pipe[0], pgid_pipe[1], prefix, heap_dir);
  }
  close(done_pipe[0]);
  close(pgid_pipe[1]);

  pid_t pgid = -1;
  ssize_t n;
  do {
    n = read(pgid_pipe[0], &pgid, sizeof pgid);
  } while (n < 0 && errno == EINTR);
  close(pgid_pipe[0]);
  if (n != static_cast<ssize_t>(sizeof pgid) || pgid <= 0) {
    close(done_pipe[1]);
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return Status(Errc::kIo, "could not start the process that holds the job's process group");
  }
  return Guardian{pid, pgid, done_pipe[1]};
}

void release_guardian(Guardian& guardian) {
  if (guardian.done_fd < 0) return;
  char c = kDone;
  ssize_t ignored = write(guardian.done_fd, &c, 1);
  (void)ignored;
  close(guardian.done_fd);
  guardian.done_fd = -1;
}

int remove_job_shm(const std::string& job_id, const std::string& heap_dir) {
  return remove_shm_with_prefix(shm_prefix(job_id), heap_dir);
}

}  // namespace symmem::run
