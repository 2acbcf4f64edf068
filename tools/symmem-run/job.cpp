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
//
// This file: the process setup, the supervision loop and the end of the job; starting the
// PEs is in job_spawn.cpp, the hang reports and timeouts in job_hang.cpp, the Job itself
// in job_impl.hpp.
#include "job_impl.hpp"
#include "runtime/dfx_gpu.hpp"

#include <cstdarg>

namespace symmem::run {

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
  // A GPU wait of it expired (its kernel trapped; its page, still mapped here, says which):
  // named at once. A killed PE's exit report below names it too.
  if (hang_ && WIFEXITED(status) && size_t(pe.rank) < hang_->source().pes.size())
    if (const dfx::Page* page = hang_->source().pes[size_t(pe.rank)].page;
        page && page->magic == dfx::kPageMagic && page->version == dfx::kPageVersion)
      if (std::string g = dfx::gpu_wait_text(page->gpu); !g.empty()) output_.message(g);
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

void Job::on_global_exit() {
  auto v = exit_watch_->wait_watch();
  exit_watch_.reset();  // answered (or the store is gone): it has nothing more to say
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
    if (running_ > 0 && phase_ == Phase::kRunning && hang_timeout_s_ > 0) next = std::min(next, next_hang_look_);
    if (running_ > 0 && phase_ == Phase::kRunning) next = std::min(next, next_attach_);
    const bool exit_said = running_ > 0 && phase_ == Phase::kRunning && exit_watch_ && exit_watch_->watch_buffered();
    int timeout_ms = exit_said ? 0 : -1;
    if (!exit_said && next != Clock::time_point::max()) {
      double ms = std::chrono::duration<double, std::milli>(next - now).count();
      timeout_ms = ms <= 0 ? 0 : static_cast<int>(std::min(std::ceil(ms), 3.6e6));
    }

    pfds.clear();
    owners.clear();
    pfds.push_back({sfd_, POLLIN, 0});
    owners.emplace_back(nullptr, nullptr);
    const bool exit_polled = running_ > 0 && phase_ == Phase::kRunning && exit_watch_;
    if (exit_polled) {
      pfds.push_back({exit_watch_->watch_fd(), POLLIN, 0});
      owners.emplace_back(nullptr, nullptr);
    }
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
    if (exit_said || (exit_polled && r > 0 && pfds[1].revents != 0)) on_global_exit();
    if (running_ > 0 && phase_ == Phase::kRunning && now >= next_attach_) {
      refresh_hang_reader();
      // Once every running PE's page is mapped, a look a second finds a later instance.
      bool all = true;
      for (const Pe& pe : pes_) all = all && (!pe.running || hang_->source().pes[size_t(pe.rank)].page != nullptr);
      next_attach_ = now + std::chrono::milliseconds(all ? 1000 : 100);
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
    for (size_t i = exit_polled ? 2 : 1; i < pfds.size(); ++i) {
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
    output_.message("cannot connect to the job's store: " + w.status().message());
  }
  // The key itself is the watch's "left" key: once this connection closes (the job is
  // over) without it, the store sets it empty, which nobody reads any more.
  auto ew = TcpStoreClient::connect(StoreAddress{"127.0.0.1", store_->port()}, security_, -1, 10.0);
  Status ews = ew.ok() ? (*ew)->watch(kGlobalExitKey, kGlobalExitKey, "") : ew.status();
  if (ews.ok()) exit_watch_ = std::move(ew).value();
  else output_.message("cannot watch the store for shmem_global_exit: " + ews.message());
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

int run_job(const Options& opts, const std::string& exe_path) {
  Job job(opts, exe_path);
  return job.run();
}

}  // namespace symmem::run
