// Inside symmem-run's job (job.cpp, job_spawn.cpp, job_hang.cpp): the Job that runs one
// job, the PE records it keeps, and how PE output is forwarded. Private to those files.
#pragma once

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

namespace symmem::run {

using Clock = std::chrono::steady_clock;

inline constexpr double kKillGraceS = 2.0;      // SIGTERM -> SIGKILL
inline constexpr double kDrainS = 1.0;          // output still arriving after the last PE exited
inline constexpr double kReapS = 1.0;           // orphans we adopted, after the final group kill
inline constexpr size_t kMaxPartial = 1 << 20;  // a tagged "line" longer than this is cut
inline constexpr int kLauncherFailure = 125;

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
Clock::time_point after(double seconds);
bool write_all(int fd, const char* p, size_t n);
const char* errno_text(int err);
void write_str(int fd, const char* s);

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
  void on_global_exit();
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
  // The launcher's own clients of the store: one for its requests, one that watches the
  // key a PE sets in shmem_global_exit (and when the C API ends the job after an error),
  // its answer polled with the PEs' output.
  std::unique_ptr<TcpStoreClient> watch_;
  std::unique_ptr<TcpStoreClient> exit_watch_;
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

}  // namespace symmem::run
