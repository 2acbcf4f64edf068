// Why a PE died of a SIGKILL that symmem-run did not send.
//
// The usual sender is the kernel's out-of-memory killer. symmem-run notes, before the PEs
// start, the OOM-kill counters that can witness it: its memory cgroup's (the PEs inherit
// the cgroup; v2 memory.events oom_kill, v1 memory.oom_control oom_kill) and the
// machine's (/proc/vmstat oom_kill). When a PE is SIGKILLed, a counter that grew, or the
// kernel log's "Killed process <pid>" line (/dev/kmsg, where readable), names the OOM
// killer; otherwise the message says another process sent the signal.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "heap/node_memory.hpp"

namespace symmem::run {

class KillWitness {
 public:
  // Reads the counters now (before the PEs start).
  static KillWitness snapshot();
  // The rest of the sentence "PE 1 (pid 42) was killed by signal 9 (Killed)": who sent
  // it, and `committed` (bytes of symmetric memory the job had committed on this node;
  // negative when unknown).
  std::string explain(pid_t pid, int64_t committed) const;

 private:
  MemoryCgroup cg_;
  int64_t cg_oom_ = -1;
  int64_t vm_oom_ = -1;
  uint64_t since_us_ = 0;  // kernel log lines older than this are about other processes
};

}  // namespace symmem::run
