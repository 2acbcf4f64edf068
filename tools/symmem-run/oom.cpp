#include "oom.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>

namespace symmem::run {
namespace {

int64_t vmstat_oom_kills() {
  std::ifstream f("/proc/vmstat");
  std::string k;
  long long v;
  while (f >> k >> v)
    if (k == "oom_kill") return v;
  return -1;
}

// The kernel log's record of the OOM killer ending `pid` ("Memory cgroup out of memory:
// Killed process 42 (prog)", "Out of memory: Killed process 42 (prog)"), without the
// figures that follow, logged after `since_us` (CLOCK_MONOTONIC, as the log's stamps are:
// an older line may name an earlier process that had the same pid). Empty when there is
// none or the log cannot be read.
std::string kmsg_oom_line(pid_t pid, uint64_t since_us, bool* readable) {
  *readable = false;
  int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {};
  *readable = true;
  const std::string needle = "Killed process " + std::to_string(pid) + " ";
  std::string found;
  char buf[8192];
  for (int records = 0; records < 100000; ++records) {
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n < 0 && errno == EPIPE) continue;  // a record was overwritten while we read
    if (n <= 0) break;                        // EAGAIN: the end of the log
    buf[n] = 0;
    // "<prio>,<seq>,<usec>,<flags>;<text>\n" followed by continuation lines
    const char* text = std::strchr(buf, ';');
    unsigned long long usec = 0;
    if (!text || std::sscanf(buf, "%*u,%*u,%llu", &usec) != 1 || usec < since_us) continue;
    ++text;
    const char* hit = std::strstr(text, needle.c_str());
    if (!hit) continue;
    const char* end = std::strchr(hit + needle.size(), ')');
    const char* nl = std::strchr(text, '\n');
    if (!end || (nl && end > nl)) end = nl ? nl - 1 : text + std::strlen(text) - 1;
    found.assign(text, size_t(end - text + 1));
  }
  close(fd);
  return found;
}

std::string committed_text(int64_t committed) {
  if (committed < 0) return "";
  return "; the job had committed " + human_size(uint64_t(committed)) + " of symmetric memory on this node";
}

}  // namespace

KillWitness KillWitness::snapshot() {
  KillWitness w;
  w.cg_ = find_memory_cgroup();
  w.cg_oom_ = cgroup_oom_kills(w.cg_);
  w.vm_oom_ = vmstat_oom_kills();
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  const uint64_t now_us = uint64_t(t.tv_sec) * 1000000 + uint64_t(t.tv_nsec) / 1000;
  w.since_us_ = now_us > 1000000 ? now_us - 1000000 : 0;  // a second of slack between the clocks
  return w;
}

std::string KillWitness::explain(pid_t pid, int64_t committed) const {
  std::string s = " from outside the job (symmem-run sent no signal)";
  bool kmsg_readable = false;
  std::string line = kmsg_oom_line(pid, since_us_, &kmsg_readable);
  int64_t cg_now = cg_oom_ >= 0 ? cgroup_oom_kills(cg_) : -1;
  int64_t vm_now = vm_oom_ >= 0 ? vmstat_oom_kills() : -1;
  std::string counters;
  auto note = [&](const std::string& what, int64_t before, int64_t now) {
    if (before < 0 || now <= before) return;
    counters += (counters.empty() ? "" : ", ") + what + " " + std::to_string(before) + " -> " + std::to_string(now);
  };
  const char* cg_file = cg_.version == 2 ? "/memory.events" : "/memory.oom_control";
  note(cg_.dir + cg_file + " oom_kill", cg_oom_, cg_now);
  const bool cg_saw = cg_oom_ >= 0 && cg_now > cg_oom_;
  note("/proc/vmstat oom_kill", vm_oom_, vm_now);
  // The kernel log names the victim; the counters only say that the killer ran (a v2
  // cgroup's counts another process of the subtree too), so they decide only without it.
  if (!line.empty() || (cg_saw && !kmsg_readable)) {
    s += ": the kernel's out-of-memory killer ended it (";
    s += line.empty() ? counters : "kernel log: \"" + line + "\"" + (counters.empty() ? "" : "; " + counters);
    s += ")" + committed_text(committed) +
         "; give the job more memory (the cgroup's limit, other processes) or make it use less";
  } else if (!counters.empty()) {
    s += "; the out-of-memory killer ran during the job (" + counters + ") and may have ended it" +
         (kmsg_readable ? " (the kernel log does not name pid " + std::to_string(pid) + ")" : std::string()) +
         committed_text(committed);
  } else if (cg_oom_ < 0 && vm_oom_ < 0 && !kmsg_readable) {
    s += "; whether the out-of-memory killer did it cannot be told here (no OOM counter, /dev/kmsg not readable)" +
         committed_text(committed);
  } else {
    std::string seen;
    if (cg_oom_ >= 0) seen += "memory cgroup";
    if (vm_oom_ >= 0) seen += std::string(seen.empty() ? "" : ", ") + "/proc/vmstat";
    if (kmsg_readable) seen += std::string(seen.empty() ? "" : ", ") + "kernel log";
    s += "; no out-of-memory kill is recorded (" + seen +
         "), so the PE itself, another process or a person sent it" + committed_text(committed);
  }
  return s;
}

}  // namespace symmem::run
