// Starting a job's PEs (Job::spawn_all): each PE's environment (the job's contract
// variables, then -x), its pipes, and a fork whose child does only async-signal-safe calls
// from a plan made before the fork (ChildPlan) until it execs the program.
#include "job_impl.hpp"

extern char** environ;

namespace symmem::run {
namespace {

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

}  // namespace

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
    if (!opts_.gpus.empty() && name == "SYMMEM_DEVICE") continue;          // --gpus decides
    if (!overridden(name)) base.push_back(std::move(kv));
  }
  for (auto& [k, v] : opts_.env) {
    if (opts_.emulate_nodes > 0 && k == "SYMMEM_NODE_ID") continue;  // --emulate-nodes decides
    if (!opts_.gpus.empty() && k == "SYMMEM_DEVICE") {
      output_.message("-x SYMMEM_DEVICE is ignored: --gpus sets it for each PE");
      continue;
    }
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
    if (!opts_.gpus.empty()) {
      // The PE's index on its node: its rank, or its place in its emulated node's block.
      int local = r;
      if (opts_.emulate_nodes > 0) {
        const int64_t k = opts_.emulate_nodes, node = int64_t(r) * k / n;
        while (local > 0 && int64_t(local - 1) * k / n == node) --local;
        local = r - local;
      }
      env_s.push_back("SYMMEM_DEVICE=" + std::to_string(opts_.gpus[size_t(local) % opts_.gpus.size()]));
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

}  // namespace symmem::run
