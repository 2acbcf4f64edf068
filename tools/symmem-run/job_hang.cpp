// The job's hang reports (docs/dfx.md): the launcher's reader of the PEs' status pages,
// the report itself (on --timeout, SIGUSR1, --status and at the no-progress deadline),
// the deadline (--hang-timeout), and the PEs' stacks from gdb (--hang-stacks).
#include "job_impl.hpp"

namespace symmem::run {

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

}  // namespace symmem::run
