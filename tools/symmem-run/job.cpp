// The supervision loop of symmem-run.
//
// One thread, one poll(2) over a signalfd (SIGCHLD and the signals that stop the job) and
// the stdout/stderr pipes of every PE. The store runs on its own thread inside
// TcpStoreServer; every signal is blocked before it starts so only the signalfd sees them.
//
// A job is Running until the first failure (a PE that exits non-zero or is killed, the
// timeout, or a signal to the launcher); that event alone is reported and decides the exit
// code. The job is then Terminating: the group gets SIGTERM (or the launcher's own
// signal), and SIGKILL after kKillGraceS. When no PE is left the group gets a final SIGKILL
// (whatever the PEs started), output still in the pipes is forwarded, every child is
// reaped, the job's /dev/shm objects are removed and the store stops.
#include "job.hpp"

#include "dfx/trace.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "bootstrap/launch_env.hpp"
#include "bootstrap/tcp_store.hpp"
#include "common/log.hpp"
#include "guardian.hpp"
#include "hang.hpp"
#include "oom.hpp"

extern char** environ;

namespace symmem::run {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kKillGraceS = 2.0;      // SIGTERM -> SIGKILL
constexpr double kDrainS = 1.0;          // output still arriving after the last PE exited
constexpr double kReapS = 1.0;           // orphans we adopted, after the final group kill
constexpr size_t kMaxPartial = 1 << 20;  // a tagged "line" longer than this is cut
constexpr int kLauncherFailure = 125;
constexpr int kGlobalExitPollMs = 20;   // how often the launcher looks for shmem_global_exit

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return {};
  if (static_cast<size_t>(n) < sizeof buf) return std::string(buf, static_cast<size_t>(n));
  std::string s(static_cast<size_t>(n) + 1, '\0');
  va_start(ap, fmt);
  vsnprintf(s.data(), s.size(), fmt, ap);
  va_end(ap);
  s.resize(static_cast<size_t>(n));
  return s;
}

Clock::time_point after(double seconds) {
  seconds = std::min(seconds, 1e9);  // "--timeout 1e300" must not overflow the clock
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// Writes all of [p, p+n), waiting out a non-blocking or slow reader. False when the
// descriptor is broken (EPIPE: nobody reads our output any more).
bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && errno == EAGAIN) {
      pollfd pfd{fd, POLLOUT, 0};
      poll(&pfd, 1, -1);
    } else {
      return false;
    }
  }
  return true;
}

// errno names for the forked child, where strerror (locale, malloc) is off limits.
const char* errno_text(int err) {
  switch (err) {
    case ENOENT: return "No such file or directory";
    case EACCES: return "Permission denied";
    case ENOEXEC: return "Exec format error";
    case E2BIG: return "Argument list too long";
    case ENOMEM: return "Cannot allocate memory";
    case ETXTBSY: return "Text file busy";
    case ELOOP: return "Too many levels of symbolic links";
    case ENAMETOOLONG: return "File name too long";
    case ENOTDIR: return "Not a directory";
    case EISDIR: return "Is a directory";
    case EPERM: return "Operation not permitted";
    default: return "exec failed";
  }
}

void write_str(int fd, const char* s) {
  ssize_t ignored = write(fd, s, std::strlen(s));
  (void)ignored;
}

// Forwards PE output to the launcher's stdout/stderr. Untagged bytes pass through as
// they come; tagged output is cut into lines, each written whole with its "[pe N] ".
class Output {
 public:
  explicit Output(bool tag) : tag_(tag) {}

  void forward(int rank, int dest, std::string& partial, const char* data, size_t n) {
    if (!tag_) {
      emit(dest, data, n);
      return;
    }
    std::string chunk;
    size_t start = 0;
    for (size_t i = 0; i < n; ++i) {
      if (data[i] != '\n') continue;
      chunk += prefix(rank);
      chunk += partial;
      partial.clear();
      chunk.append(data + start, i + 1 - start);
      start = i + 1;
    }
    partial.append(data + start, n - start);
    if (partial.size() > kMaxPartial) {
      chunk += prefix(rank) + partial + "\n";
      partial.clear();
    }
    emit(dest, chunk.data(), chunk.size());
  }

  // End of a stream: a last line without '\n' is still written, and terminated.
  void flush(int rank, int dest, std::string& partial) {
    if (!tag_ || partial.empty()) return;
    std::string line = prefix(rank) + partial + "\n";
    partial.clear();
    emit(dest, line.data(), line.size());
  }

  // The launcher's own one-line message, always at the start of a line of stderr.
  void message(const std::string& text) { lines("symmem-run: " + text + "\n"); }
  // Whole lines of the launcher's own (a hang report), at the start of a line of stderr.
  void lines(const std::string& text) {
    std::string line = at_line_start_[2] ? "" : "\n";
    line += text;
    emit(2, line.data(), line.size());
  }

 private:
  static std::string prefix(int rank) { return "[pe " + std::to_string(rank) + "] "; }

  void emit(int fd, const char* p, size_t n) {
    if (n == 0 || broken_[fd]) return;
    if (!write_all(fd, p, n)) broken_[fd] = true;  // keep supervising; drop the output
    at_line_start_[fd] = p[n - 1] == '\n';
  }

  bool tag_;
  bool at_line_start_[3] = {true, true, true};
  bool broken_[3] = {false, false, false};
};

struct Stream {
  int fd = -1;  // read end of the PE's pipe; -1 once at EOF
  int dest = 1;
  std::string partial;
};

struct Pe {
  int rank = 0;
  pid_t pid = -1;
  bool running = false;
  int status = 0;  // waitpid status once it ended
  Stream out, err;
};

// Everything the forked child needs, prepared before fork: after fork() in a process
// with threads (the store's) only async-signal-safe calls are allowed.
struct ChildPlan {
  const char* path;
  char* const* argv;
  char* const* sh_argv;  // "/bin/sh path args...", for scripts without #! (like execvp)
  char* const* envp;
  pid_t launcher;
  pid_t pgid;
  int stdin_fd;  // -1: keep the launcher's
  int out_fd, err_fd;
  const sigset_t* mask;
  const struct sigaction* sigpipe;
  const struct rlimit* nofile;  // restore when the launcher raised its own limit
  const char* exec_error;       // "symmem-run: PE 3: cannot execute 'prog': "
  const char* pgid_error;
  const cpu_set_t* cpus;  // an emulated node's CPUs, or null (the launcher's)
};

[[noreturn]] void child_exec(const ChildPlan& p) {
  sigprocmask(SIG_SETMASK, p.mask, nullptr);
  sigaction(SIGPIPE, p.sigpipe, nullptr);
  if (p.nofile != nullptr) setrlimit(RLIMIT_NOFILE, p.nofile);
  if (p.cpus != nullptr) sched_setaffinity(0, sizeof(cpu_set_t), p.cpus);
  if (setpgid(0, p.pgid) != 0) {
    write_str(p.err_fd, p.pgid_error);
    _exit(kLauncherFailure);
  }
  // No PE outlives a launcher that is SIGKILLed; the getppid check closes the window in
  // which the launcher died before prctl took effect.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != p.launcher) _exit(kLauncherFailure);
  if (p.stdin_fd >= 0) dup2(p.stdin_fd, 0);
  dup2(p.out_fd, 1);
  dup2(p.err_fd, 2);
  // Like mpirun, PEs inherit no descriptor but 0-2: not the store's sockets, not the
  // other PEs' pipes (which would delay their EOF).
  if (close_range(3, ~0U, 0) != 0) {
    for (int fd = 3; fd < 65536; ++fd) close(fd);
  }
  execve(p.path, p.argv, p.envp);
  if (errno == ENOEXEC) execve("/bin/sh", p.sh_argv, p.envp);
  int err = errno;
  write_str(2, p.exec_error);
  write_str(2, errno_text(err));
  write_str(2, "\n");
  _exit(err == ENOENT ? 127 : 126);
}

std::vector<char*> c_array(std::vector<std::string>& strings) {
  std::vector<char*> v;
  v.reserve(strings.size() + 1);
  for (auto& s : strings) v.push_back(s.data());
  v.push_back(nullptr);
  return v;
}

bool is_contract_var(const std::string& name) {
  for (const char* v : {kEnvRank, kEnvNpes, kEnvStore, kEnvMagic, kEnvJobId, kEnvSecret, kEnvTls}) {
    if (name == v) return true;
  }
  return false;
}

class Job {
 public:
  Job(const Options& opts, std::string exe) : opts_(opts), exe_(std::move(exe)), output_(opts.tag_output) {}
  int run();

 private:
  Status setup_process();
  Status spawn_all();
  // The PEs' SYMMEM_HEAP_DIR (-x first, then ours): where their heap objects are created.
  std::string heap_dir() const {
    for (auto it = opts_.env.rbegin(); it != opts_.env.rend(); ++it)
      if (it->first == "SYMMEM_HEAP_DIR") return it->second;
    const char* d = std::getenv("SYMMEM_HEAP_DIR");
    return d ? d : "";
  }
  void supervise();
  void finish();

  void reap();
  void on_pe_exit(Pe& pe, int status);
  void on_launcher_signal(int sig);
  void on_timeout();
  // The hang report (docs/dfx.md): from the PEs' status pages, text on stderr and JSON.
  dfx::hang::Report hang_report(const std::string& trigger, const std::string& title = "hang report",
                                double look_s = 1.0);
  // --hang-stacks: every live PE's stack from gdb, by rank ("" where none came).
  std::vector<std::string> pe_stacks();
  void refresh_hang_reader();
  void hang_look();
  void begin_termination(int sig);
  void signal_job(int sig);
  void read_stream(Pe& pe, Stream& s);
  void drain_pe(Pe& pe);
  void close_stream(Pe& pe, Stream& s);
  void handle_signalfd();
  void check_global_exit();
  int64_t committed_bytes();

  const Options& opts_;
  std::string exe_;
  Output output_;

  std::string job_id_;
  uint64_t magic_ = 0;
  StoreSecurity security_;  // magic, secret and TLS mode of the job's store
  int sfd_ = -1;
  int devnull_ = -1;
  sigset_t old_mask_{};
  struct sigaction old_sigpipe_ {};
  struct rlimit old_nofile_ {};
  bool raised_nofile_ = false;
  Guardian guardian_;
  bool guardian_reaped_ = false;
  pid_t pgid_ = -1;
  std::unique_ptr<TcpStoreServer> store_;
  std::string store_url_;
  // The launcher's own client of the store: it watches the key a PE sets in
  // shmem_global_exit (and when the C API ends the job after an error).
  std::unique_ptr<TcpStoreClient> watch_;
  Clock::time_point next_watch_{};
  KillWitness kill_witness_;  // OOM-kill counters from before the PEs started

  std::vector<Pe> pes_;
  std::unordered_map<pid_t, int> rank_of_;
  int running_ = 0;
  int open_streams_ = 0;

  enum class Phase { kRunning, kTerminating } phase_ = Phase::kRunning;
  int exit_code_ = 0;
  bool sigkilled_ = false;
  bool ended_ = false;
  Clock::time_point timeout_deadline_{}, kill_deadline_{}, drain_deadline_{};
  double hang_timeout_s_ = 0;  // --hang-timeout / SYMMEM_HANG_TIMEOUT; 0 off
  std::unique_ptr<HangReader> hang_;
  dfx::hang::Monitor hang_monitor_;
  Clock::time_point next_hang_look_{};
  Clock::time_point next_attach_{};  // the pages are mapped early: a PE that dies is still readable
};

Status Job::setup_process() {
  // Every PE needs two pipes here; raise the soft descriptor limit if that is short.
  if (getrlimit(RLIMIT_NOFILE, &old_nofile_) == 0) {
    rlim_t need = static_cast<rlim_t>(opts_.npes) * 2 + 64;
    if (old_nofile_.rlim_cur != RLIM_INFINITY && old_nofile_.rlim_cur < need) {
      if (old_nofile_.rlim_max != RLIM_INFINITY && old_nofile_.rlim_max < need) {
        return Status(Errc::kInvalidArgument, format("%d PEs need %llu open files, but the limit is %llu (ulimit -Hn)",
                                                     opts_.npes, static_cast<unsigned long long>(need),
                                                     static_cast<unsigned long long>(old_nofile_.rlim_max)));
      }
      struct rlimit raised = old_nofile_;
      raised.rlim_cur = need;
      if (setrlimit(RLIMIT_NOFILE, &raised) != 0) return errno_status(Errc::kIo, "setrlimit(RLIMIT_NOFILE)", errno);
      raised_nofile_ = true;
    }
  }

  // Signals are read from a signalfd; they must be blocked before the store's thread
  // exists so that no thread takes them the default way. SIGINT and SIGHUP that our parent
  // ignores (nohup, a background job of a script) stay ignored, as in any program.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);  // a live hang report
  for (int sig : {SIGINT, SIGHUP}) {
    struct sigaction cur {};
    if (sigaction(sig, nullptr, &cur) == 0 && cur.sa_handler == SIG_IGN) continue;
    sigaddset(&set, sig);
  }
  if (sigprocmask(SIG_BLOCK, &set, &old_mask_) != 0) return errno_status(Errc::kIo, "sigprocmask", errno);
  sfd_ = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sfd_ < 0) return errno_status(Errc::kIo, "signalfd", errno);
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, &old_sigpipe_);  // a closed stdout must not kill the launcher

  // Orphans of the PEs (a shell's background children) are re-parented to us, so they
  // are reaped here and never linger as zombies under an init that does not reap.
  prctl(PR_SET_CHILD_SUBREAPER, 1);

  devnull_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull_ < 0) return errno_status(Errc::kIo, "open /dev/null", errno);
  return Status::Ok();
}

Status Job::spawn_all() {
  const int n = opts_.npes;
  std::vector<std::string> argv_s(opts_.program.begin(), opts_.program.end());
  std::vector<std::string> sh_argv_s{"/bin/sh", exe_};
  sh_argv_s.insert(sh_argv_s.end(), opts_.program.begin() + 1, opts_.program.end());
  std::vector<char*> argv = c_array(argv_s), sh_argv = c_array(sh_argv_s);

  // The launcher's environment, then -x, then the contract (which nothing overrides).
  std::vector<std::string> base;
  auto overridden = [&](const std::string& name) {
    if (is_contract_var(name)) return true;
    for (auto& [k, v] : opts_.env) {
      if (k == name) return true;
    }
    return false;
  };
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    std::string name = kv.substr(0, kv.find('='));
    if (opts_.emulate_nodes > 0 && name == "SYMMEM_NODE_ID") continue;  // set per PE below
    if (!overridden(name)) base.push_back(std::move(kv));
  }
  for (auto& [k, v] : opts_.env) {
    if (opts_.emulate_nodes > 0 && k == "SYMMEM_NODE_ID") continue;  // --emulate-nodes decides
    if (is_contract_var(k)) {
      output_.message(format("-x %s is ignored: symmem-run sets it for each PE", k.c_str()));
      continue;
    }
    base.push_back(k + "=" + v);
  }
  base.push_back(std::string(kEnvNpes) + "=" + std::to_string(n));
  base.push_back(std::string(kEnvStore) + "=" + store_url_);
  base.push_back(std::string(kEnvMagic) + "=" + format("%016llx", static_cast<unsigned long long>(magic_)));
  // The secret goes in the environment, never on a command line (/proc/PID/environ is
  // readable only by the job's own user).
  base.push_back(std::string(kEnvTls) + "=" + StoreSecurity::mode_name(security_.mode));
  if (security_.mode == StoreSecurity::Mode::kPsk)
    base.push_back(std::string(kEnvSecret) + "=" + to_hex(security_.secret.data(), security_.secret.size()));
  base.push_back(std::string(kEnvJobId) + "=" + job_id_);

  // PE 0 reads the launcher's stdin unless that is a terminal: the PEs are not the
  // terminal's foreground group, so reading it would stop them with SIGTTIN.
  bool pass_stdin = !isatty(0);
  const pid_t me = getpid();
  // Emulated nodes as real ones: each its own CPUs, a slice of the launcher's (when there
  // are at least as many CPUs as nodes), so that the nodes' leaders do not share a core
  // while other CPUs serve no node. The PEs then bind within their node's slice (SYMMEM_BIND).
  std::vector<cpu_set_t> node_cpus;
  if (cpu_set_t all; opts_.emulate_nodes > 1 && sched_getaffinity(0, sizeof(all), &all) == 0 &&
                     CPU_COUNT(&all) >= opts_.emulate_nodes) {
    const int k = opts_.emulate_nodes, m = CPU_COUNT(&all);
    node_cpus.resize(size_t(k));
    for (cpu_set_t& c : node_cpus) CPU_ZERO(&c);
    for (int cpu = 0, i = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &all)) CPU_SET(cpu, &node_cpus[size_t(int64_t(i++) * k / m)]);
  }
  pes_.resize(static_cast<size_t>(n));
  rank_of_.reserve(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    Pe& pe = pes_[static_cast<size_t>(r)];
    pe.rank = r;
    std::vector<std::string> env_s = base;
    env_s.push_back(std::string(kEnvRank) + "=" + std::to_string(r));
    if (opts_.emulate_nodes > 0) {
      const int k = opts_.emulate_nodes;
      env_s.push_back("SYMMEM_NODE_ID=emu" + std::to_string(int64_t(r) * k / n));
    }
    std::vector<char*> envp = c_array(env_s);
    std::string exec_error = format("symmem-run: PE %d: cannot execute '%s': ", r, exe_.c_str());
    std::string pgid_error = format("symmem-run: PE %d: cannot join the job's process group\n", r);

    int out_pipe[2], err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0) return errno_status(Errc::kIo, "pipe", errno);
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
      int err = errno;
      close(out_pipe[0]);
      close(out_pipe[1]);
      return errno_status(Errc::kIo, "pipe", err);
    }
    ChildPlan plan{exe_.c_str(),
                   argv.data(),
                   sh_argv.data(),
                   envp.data(),
                   me,
                   pgid_,
                   (r == 0 && pass_stdin) ? -1 : devnull_,
                   out_pipe[1],
                   err_pipe[1],
                   &old_mask_,
                   &old_sigpipe_,
                   raised_nofile_ ? &old_nofile_ : nullptr,
                   exec_error.c_str(),
                   pgid_error.c_str(),
                   node_cpus.empty() ? nullptr : &node_cpus[size_t(int64_t(r) * opts_.emulate_nodes / n)]};
    pid_t pid = fork();
    if (pid == 0) child_exec(plan);
    int fork_err = errno;
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (pid < 0) {
      close(out_pipe[0]);
      close(err_pipe[0]);
      return errno_status(Errc::kIo, format("fork for PE %d", r), fork_err);
    }
    setpgid(pid, pgid_);  // the child does it too; EACCES once it has exec'd is fine
    fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
    fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
    pe.pid = pid;
    pe.running = true;
    pe.out = Stream{out_pipe[0], 1, {}};
    pe.err = Stream{err_pipe[0], 2, {}};
    rank_of_[pid] = r;
    ++running_;
    open_streams_ += 2;
    SYMMEM_LOG(kDebug, "symmem-run: PE %d is pid %d", r, static_cast<int>(pid));
  }
  return Status::Ok();
}

void Job::signal_job(int sig) {
  if (pgid_ > 0) kill(-pgid_, sig);
  // A PE that left the group (setsid) is still reached directly; its pid cannot have been
  // reused while it is unreaped. Only such a PE: one in the group has the signal already,
  // and a second SIGINT reaching a Python PE while it handles the first would raise a
  // second KeyboardInterrupt inside its except clause.
  for (Pe& pe : pes_) {
    if (pe.running && (pgid_ <= 0 || getpgid(pe.pid) != pgid_)) kill(pe.pid, sig);
  }
}

void Job::begin_termination(int sig) {
  phase_ = Phase::kTerminating;
  signal_job(sig);
  if (sig != SIGKILL) signal_job(SIGCONT);  // a stopped PE acts on the signal now
  kill_deadline_ = after(kKillGraceS);
}

void Job::on_pe_exit(Pe& pe, int status) {
  bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::string what;
  if (WIFEXITED(status)) {
    what = format("PE %d (pid %d) exited with code %d", pe.rank, static_cast<int>(pe.pid), WEXITSTATUS(status));
  } else {
    int sig = WTERMSIG(status);
    what = format("PE %d (pid %d) was killed by signal %d (%s)%s", pe.rank, static_cast<int>(pe.pid), sig,
                  strsignal(sig), WCOREDUMP(status) ? ", core dumped" : "");
    // While the job runs symmem-run sends no signal: a SIGKILL came from outside.
    if (sig == SIGKILL && phase_ == Phase::kRunning) what += kill_witness_.explain(pe.pid, committed_bytes());
  }
  if (ok || phase_ == Phase::kTerminating) {
    SYMMEM_LOG(kDebug, "symmem-run: %s", what.c_str());
    return;
  }
  output_.message(what);
  // Killed mid-job: what it was doing (its page, still mapped here) and where the others
  // are. (A PE that exits with a code has said why itself: a check, an error, global_exit.)
  if (hang_ && running_ > 0 && WIFSIGNALED(status))
    hang_report(format("PE %d was killed by signal %d", pe.rank, WTERMSIG(status)), "exit report", 0.3);
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  begin_termination(SIGTERM);
}

// What the PEs added to kCommittedKey; -1 when it cannot be read.
int64_t Job::committed_bytes() {
  if (!watch_) return -1;
  auto seen = watch_->check({kCommittedKey});
  if (!seen.ok() || !(*seen)[0]) return -1;  // no PE got as far as reporting
  auto v = watch_->add(kCommittedKey, 0);
  return v.ok() ? *v : -1;
}

void Job::on_launcher_signal(int sig) {
  if (running_ == 0) {  // the job is over; stop waiting for stray output
    drain_deadline_ = Clock::now();
    return;
  }
  if (phase_ == Phase::kRunning) {
    output_.message(format("received signal %d (%s); stopping the job", sig, strsignal(sig)));
    exit_code_ = 128 + sig;
    begin_termination(sig);  // the PEs get the same signal, as they would from a terminal
  } else if (!sigkilled_) {
    signal_job(SIGKILL);  // a second Ctrl-C does not wait for the grace period
    sigkilled_ = true;
  }
}

void Job::refresh_hang_reader() {
  if (!hang_) hang_ = std::make_unique<HangReader>(job_id_, opts_.npes);
  for (const Pe& pe : pes_) {
    if (pe.pid <= 0) continue;
    if (pe.running) {
      hang_->attach(pe.rank, static_cast<int>(pe.pid));
      hang_->set_life(pe.rank, dfx::hang::PeInfo::Life::kAlive, 0);
    } else if (WIFSIGNALED(pe.status)) {
      hang_->set_life(pe.rank, dfx::hang::PeInfo::Life::kKilled, WTERMSIG(pe.status));
    } else {
      hang_->set_life(pe.rank, dfx::hang::PeInfo::Life::kExited, WEXITSTATUS(pe.status));
    }
  }
}

dfx::hang::Report Job::hang_report(const std::string& trigger, const std::string& title, double look_s) {
  refresh_hang_reader();
  bool any = false;  // a program that is no symmem program (or not yet past init) has no page
  for (const auto& pi : hang_->source().pes) any = any || pi.page != nullptr;
  if (!any) return {};
  dfx::hang::Options o;
  o.trigger = trigger;
  o.title = title;
  o.look_s = look_s;
  if (opts_.hang_stacks) hang_->source().stacks = pe_stacks();
  const char* path = std::getenv("SYMMEM_HANG_FILE");
  o.json_path = path ? path : "";
  for (auto& [k, v] : opts_.env)
    if (k == "SYMMEM_HANG_FILE") o.json_path = v;
  dfx::hang::Report r = dfx::hang::build(hang_->source(), o);
  output_.lines(r.text);
  return r;
}

namespace {
// A demangled name without template arguments, parameter lists and namespace symmem::
// ("symmem::p2p::wait_for<int, ...>(...)::{lambda(...)#1}" -> "p2p::wait_for::{lambda#1}").
std::string short_frame(const std::string& f) {
  std::string o;
  int angle = 0, paren = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    const char c = f[i];
    if (c == '<' && paren == 0 && !(o.size() >= 8 && o.compare(o.size() - 8, 8, "operator") == 0)) {
      ++angle;
    } else if (c == '>' && angle > 0 && paren == 0) {
      --angle;
    } else if (angle == 0 && c == '(') {
      if (paren++ == 0 && o.size() >= 8 && o.compare(o.size() - 8, 8, "operator") == 0) o += "()";
    } else if (angle == 0 && c == ')' && paren > 0) {
      --paren;
    } else if (angle == 0 && paren == 0) {
      o += c;
    }
  }
  for (size_t at; (at = o.find("::::")) != std::string::npos;) o.erase(at, 2);  // an anonymous namespace
  if (o.compare(0, 8, "symmem::") == 0) o.erase(0, 8);
  while (!o.empty() && o.back() == ' ') o.pop_back();
  if (o.size() > 6 && o.compare(o.size() - 6, 6, " const") == 0) o.resize(o.size() - 6);
  return o;
}
}  // namespace

std::vector<std::string> Job::pe_stacks() {
  std::vector<std::string> out(pes_.size());
  if (access("/usr/bin/gdb", X_OK) != 0) {
    output_.message("--hang-stacks: gdb is not installed (/usr/bin/gdb); no stacks");
    return out;
  }
  // One gdb per PE, all at once: each stops its PE for the moment it reads the stack.
  struct Run {
    pid_t pid = -1;
    int fd = -1;
    std::string text;
  };
  std::vector<Run> runs(pes_.size());
  for (size_t i = 0; i < pes_.size(); ++i) {
    if (!pes_[i].running) continue;
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) continue;
    const std::string pid = std::to_string(static_cast<int>(pes_[i].pid));
    pid_t c = fork();
    if (c == 0) {
      sigprocmask(SIG_SETMASK, &old_mask_, nullptr);  // ours has the job's signals blocked
      dup2(p[1], 1);
      int nul = open("/dev/null", O_RDWR);
      if (nul >= 0) dup2(nul, 0), dup2(nul, 2);
      execl("/usr/bin/gdb", "gdb", "-nx", "-batch", "-p", pid.c_str(), "-ex", "bt 24", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(p[1]);
    if (c < 0) {
      close(p[0]);
      continue;
    }
    runs[i].pid = c;
    runs[i].fd = p[0];
  }
  const auto deadline = after(40.0);  // gdb reads the debug info first: seconds on a loaded machine
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<size_t> who;
    for (size_t i = 0; i < runs.size(); ++i)
      if (runs[i].fd >= 0) fds.push_back({runs[i].fd, POLLIN, 0}), who.push_back(i);
    if (fds.empty()) break;
    const double ms = std::chrono::duration<double, std::milli>(deadline - Clock::now()).count();
    if (ms <= 0) break;
    if (poll(fds.data(), fds.size(), int(std::ceil(ms))) < 0 && errno != EINTR) break;
    for (size_t k = 0; k < fds.size(); ++k) {
      if (!fds[k].revents) continue;
      Run& r = runs[who[k]];
      char buf[4096];
      ssize_t n = read(r.fd, buf, sizeof buf);
      if (n > 0) {
        r.text.append(buf, size_t(n));
      } else {
        close(r.fd);
        r.fd = -1;
      }
    }
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    Run& r = runs[i];
    if (r.pid < 0) continue;
    if (r.fd >= 0) {
      kill(r.pid, SIGKILL);
      close(r.fd);
    }
    waitpid(r.pid, nullptr, 0);  // the SIGCHLD handler's reap() skips pids it does not know
    // "#3  0x... in symmem::Runtime::barrier_all (this=...) at src/x.cpp:12" -> the function
    std::string frames;
    size_t a = 0;
    while (a < r.text.size()) {
      size_t e = r.text.find('\n', a);
      if (e == std::string::npos) e = r.text.size();
      std::string line = r.text.substr(a, e - a);
      a = e + 1;
      if (line.size() < 2 || line[0] != '#') continue;
      size_t f = line.find(" in ");
      size_t start = f != std::string::npos ? f + 4 : line.find_first_not_of("0123456789# ");
      if (start == std::string::npos) continue;
      size_t stop = line.find(" (", start);
      std::string fn = short_frame(line.substr(start, stop == std::string::npos ? std::string::npos : stop - start));
      if (fn.empty() || fn == "operator()") continue;  // a lambda's call: its enclosing function says more
      frames += fn;
      frames += '\n';
    }
    out[i] = frames;
  }
  return out;
}

// The no-progress deadline: a look at the pages every step; a report once every PE has
// slept in a wait, unchanged, for hang_timeout_s_, and the end of the job if the report's
// second look agrees.
void Job::hang_look() {
  refresh_hang_reader();
  if (!hang_monitor_.look(hang_->source(), hang_timeout_s_)) return;
  dfx::hang::Report r = hang_report(format("no progress for %g s", hang_timeout_s_));
  if (!r.all_blocked) {
    hang_monitor_.reset();  // something moved meanwhile
    return;
  }
  output_.message(format("no progress for %g s (%s); stopping the job", hang_timeout_s_, r.verdict.c_str()));
  exit_code_ = 124;
  begin_termination(SIGTERM);
}

void Job::on_timeout() {
  hang_report(format("timeout after %g s", opts_.timeout_s));
  std::vector<int> ranks;
  for (const Pe& pe : pes_) {
    if (pe.running) ranks.push_back(pe.rank);
  }
  output_.message(format("timeout after %g s; %s had not finished", opts_.timeout_s, pes_text(ranks).c_str()));
  exit_code_ = 124;
  begin_termination(SIGTERM);
}

void Job::check_global_exit() {
  auto seen = watch_->check({kGlobalExitKey});
  if (!seen.ok() || !(*seen)[0]) return;
  auto v = watch_->get(kGlobalExitKey, 1.0);
  if (!v.ok()) return;
  int status = 0, rank = -1;
  if (std::sscanf(v->c_str(), "%d %d", &status, &rank) < 1) return;
  output_.message(format("PE %d ended the job with shmem_global_exit(%d)", rank, status));
  exit_code_ = status & 0xff;
  begin_termination(SIGTERM);
}

void Job::close_stream(Pe& pe, Stream& s) {
  output_.flush(pe.rank, s.dest, s.partial);
  close(s.fd);
  s.fd = -1;
  --open_streams_;
}

void Job::read_stream(Pe& pe, Stream& s) {
  char buf[64 * 1024];
  ssize_t n = read(s.fd, buf, sizeof buf);
  if (n > 0) {
    output_.forward(pe.rank, s.dest, s.partial, buf, static_cast<size_t>(n));
  } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
    close_stream(pe, s);
  }
}

// A PE that has exited may have left output in its pipes; forward it before reporting
// the exit, so that its last words come before our line about it.
void Job::drain_pe(Pe& pe) {
  for (Stream* s : {&pe.out, &pe.err}) {
    for (int i = 0; i < 64 && s->fd >= 0; ++i) {
      pollfd pfd{s->fd, POLLIN, 0};
      if (poll(&pfd, 1, 0) <= 0) break;
      read_stream(pe, *s);
    }
  }
}

void Job::reap() {
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    if (pid == guardian_.pid) {
      guardian_reaped_ = true;
      continue;
    }
    auto it = rank_of_.find(pid);
    if (it == rank_of_.end()) continue;  // an adopted orphan of some PE
    Pe& pe = pes_[static_cast<size_t>(it->second)];
    pe.running = false;
    pe.status = status;
    --running_;
    drain_pe(pe);
    on_pe_exit(pe, status);
  }
}

void Job::handle_signalfd() {
  signalfd_siginfo si;
  while (read(sfd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
    int sig = static_cast<int>(si.ssi_signo);
    if (sig == SIGCHLD) {
      reap();
    } else if (sig == SIGUSR1) {
      if (phase_ == Phase::kRunning && running_ > 0) hang_report("SIGUSR1 to symmem-run, the job continues");
    } else {
      on_launcher_signal(sig);
    }
  }
}

void Job::supervise() {
  if (opts_.timeout_s > 0) timeout_deadline_ = after(opts_.timeout_s);
  hang_timeout_s_ = opts_.hang_timeout_s;
  if (hang_timeout_s_ < 0) {
    const char* v = std::getenv("SYMMEM_HANG_TIMEOUT");
    for (auto& [k, val] : opts_.env)
      if (k == "SYMMEM_HANG_TIMEOUT") v = val.c_str();
    hang_timeout_s_ = v ? std::strtod(v, nullptr) : 0;
    if (!(hang_timeout_s_ > 0)) hang_timeout_s_ = 0;
  }
  next_hang_look_ = Clock::now();
  std::vector<pollfd> pfds;
  std::vector<std::pair<Pe*, Stream*>> owners;
  for (;;) {
    reap();
    if (running_ == 0) {
      if (!ended_) {
        ended_ = true;
        if (pgid_ > 0) kill(-pgid_, SIGKILL);  // whatever the PEs left behind in the group
        drain_deadline_ = after(kDrainS);
      }
      if (open_streams_ == 0 || Clock::now() >= drain_deadline_) return;
    }

    auto now = Clock::now();
    Clock::time_point next = Clock::time_point::max();
    if (running_ > 0 && phase_ == Phase::kRunning && opts_.timeout_s > 0) next = std::min(next, timeout_deadline_);
    if (running_ > 0 && phase_ == Phase::kTerminating && !sigkilled_) next = std::min(next, kill_deadline_);
    if (running_ == 0) next = std::min(next, drain_deadline_);
    if (running_ > 0 && phase_ == Phase::kRunning && watch_) next = std::min(next, next_watch_);
    if (running_ > 0 && phase_ == Phase::kRunning && hang_timeout_s_ > 0) next = std::min(next, next_hang_look_);
    if (running_ > 0 && phase_ == Phase::kRunning) next = std::min(next, next_attach_);
    int timeout_ms = -1;
    if (next != Clock::time_point::max()) {
      double ms = std::chrono::duration<double, std::milli>(next - now).count();
      timeout_ms = ms <= 0 ? 0 : static_cast<int>(std::min(std::ceil(ms), 3.6e6));
    }

    pfds.clear();
    owners.clear();
    pfds.push_back({sfd_, POLLIN, 0});
    owners.emplace_back(nullptr, nullptr);
    for (Pe& pe : pes_) {
      for (Stream* s : {&pe.out, &pe.err}) {
        if (s->fd < 0) continue;
        pfds.push_back({s->fd, POLLIN, 0});
        owners.emplace_back(&pe, s);
      }
    }
    int r = poll(pfds.data(), pfds.size(), timeout_ms);
    if (r < 0 && errno != EINTR) {
      output_.message(format("poll failed: %s; stopping the job", strerror(errno)));
      if (exit_code_ == 0) exit_code_ = kLauncherFailure;
      signal_job(SIGKILL);
      return;
    }

    now = Clock::now();
    if (running_ > 0 && phase_ == Phase::kRunning && watch_ && now >= next_watch_) {
      check_global_exit();
      next_watch_ = now + std::chrono::milliseconds(kGlobalExitPollMs);
    }
    if (running_ > 0 && phase_ == Phase::kRunning && now >= next_attach_) {
      refresh_hang_reader();
      next_attach_ = now + std::chrono::milliseconds(100);
    }
    if (running_ > 0 && phase_ == Phase::kRunning && hang_timeout_s_ > 0 && now >= next_hang_look_) {
      hang_look();
      next_hang_look_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                           std::min(0.5, std::max(0.05, hang_timeout_s_ / 4))));
    }
    if (running_ > 0 && phase_ == Phase::kRunning && opts_.timeout_s > 0 && now >= timeout_deadline_) on_timeout();
    if (running_ > 0 && phase_ == Phase::kTerminating && !sigkilled_ && now >= kill_deadline_) {
      std::vector<int> ranks;
      for (const Pe& pe : pes_) {
        if (pe.running) ranks.push_back(pe.rank);
      }
      SYMMEM_LOG(kInfo, "symmem-run: %s still running %g s after SIGTERM; sending SIGKILL",
                 pes_text(ranks).c_str(), kKillGraceS);
      signal_job(SIGKILL);
      sigkilled_ = true;
    }
    if (r <= 0) continue;
    if (pfds[0].revents != 0) handle_signalfd();
    for (size_t i = 1; i < pfds.size(); ++i) {
      if (pfds[i].revents == 0) continue;
      auto [pe, s] = owners[i];
      if (s->fd == pfds[i].fd) read_stream(*pe, *s);  // not already closed by a drain
    }
  }
}

void Job::finish() {
  for (Pe& pe : pes_) {
    for (Stream* s : {&pe.out, &pe.err}) {
      if (s->fd >= 0) close_stream(pe, *s);
    }
  }
  if (pgid_ > 0) kill(-pgid_, SIGKILL);
  // Only after an internal failure can a PE still be running here.
  for (Pe& pe : pes_) {
    if (!pe.running) continue;
    kill(pe.pid, SIGKILL);
    while (waitpid(pe.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    pe.running = false;
    --running_;
  }
  release_guardian(guardian_);
  hang_.reset();  // our mappings of the PEs' objects

  // Reap the guardian and every orphan we adopted (they were in the group, so they are
  // dying); a process that escaped the group and still runs after kReapS is left to init.
  auto deadline = after(kReapS);
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      if (pid == guardian_.pid) guardian_reaped_ = true;
      continue;
    }
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) break;  // ECHILD: nobody left
    auto left = std::chrono::duration<double, std::milli>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd pfd{sfd_, POLLIN, 0};
    poll(&pfd, 1, static_cast<int>(std::ceil(left)));
    signalfd_siginfo si;
    while (read(sfd_, &si, sizeof si) > 0) {
    }
  }
  if (guardian_.pid > 0 && !guardian_reaped_) {
    SYMMEM_LOG(kWarn, "symmem-run: the guardian process %d did not exit", static_cast<int>(guardian_.pid));
  }

  // Every process of the job is gone, so nothing can create an object after this sweep.
  if (!job_id_.empty()) {
    // SYMMEM_TRACE: merge the PEs' rings (a killed PE's too) before they are removed.
    {
      trace::MergeResult mr;
      std::string err;
      if (trace::merge_job(job_id_, "/dev/shm", "", false, &mr, &err)) {
        output_.message(format("trace of %d PEs (%zu events, %zu flows%s) written to %s", mr.pes, mr.events, mr.flows,
                               mr.unfinished_pes ? format(", %d PEs did not finalize", mr.unfinished_pes).c_str() : "",
                               mr.out_path.c_str()));
      } else if (err.find("no trace rings") == std::string::npos) {
        output_.message("trace: " + err);
      }
    }
    int removed = remove_job_shm(job_id_, heap_dir());
    if (removed > 0) SYMMEM_LOG(kDebug, "symmem-run: removed %d /dev/shm objects of job %s", removed, job_id_.c_str());
  }
  if (store_) store_->stop();
}

int Job::run() {
  job_id_ = random_job_id();
  magic_ = random_u64();
  if (Status s = setup_process(); !s.ok()) {
    output_.message(s.message());
    return kLauncherFailure;
  }
  // The guardian is forked while we are still single-threaded (before the store).
  auto guardian = start_guardian(job_id_, heap_dir());
  if (!guardian.ok()) {
    output_.message(guardian.status().message());
    finish();
    return kLauncherFailure;
  }
  guardian_ = *guardian;
  pgid_ = guardian_.pgid;

  auto sec = security_from_env();
  if (!sec.ok()) {
    output_.message(sec.status().message());
    finish();
    return kLauncherFailure;
  }
  security_ = *sec;
  security_.magic = magic_;
  security_.secret = random_secret();
  if (security_.mode == StoreSecurity::Mode::kPlain)
    SYMMEM_LOG(kWarn, "symmem-run: the job's store runs without TLS (%s=off): its traffic is not encrypted and "
               "any local process that learns the magic can join the job", kEnvTls);
  auto server = TcpStoreServer::start("127.0.0.1", 0, security_);
  if (!server.ok()) {
    output_.message("cannot start the store: " + server.status().message());
    finish();
    return kLauncherFailure;
  }
  store_ = std::move(*server);
  store_url_ = StoreAddress{"127.0.0.1", store_->port()}.to_url();
  if (auto w = TcpStoreClient::connect(StoreAddress{"127.0.0.1", store_->port()}, security_, -1, 10.0); w.ok()) {
    watch_ = std::move(w).value();
  } else {
    output_.message("cannot watch the store for shmem_global_exit: " + w.status().message());
  }
  SYMMEM_LOG(kDebug, "symmem-run: job %s, store %s, %d PEs of %s", job_id_.c_str(), store_url_.c_str(), opts_.npes,
             exe_.c_str());

  kill_witness_ = KillWitness::snapshot();
  if (Status s = spawn_all(); !s.ok()) {
    output_.message(s.message() + "; stopping the job");
    exit_code_ = kLauncherFailure;
    phase_ = Phase::kTerminating;
    signal_job(SIGKILL);
    sigkilled_ = true;
  }
  supervise();
  finish();
  return exit_code_;
}

}  // namespace

int run_job(const Options& opts, const std::string& exe_path) {
  Job job(opts, exe_path);
  return job.run();
}

}  // namespace symmem::run
