// What keeps a job from outliving its launcher, and what removes its shared memory.
//
// The guardian is a small process forked by symmem-run before anything else (while the
// launcher still has one thread). It forks the job's *group holder*: an idle process that
// leads the process group every PE joins. Because the holder is the guardian's child and
// is only reaped at the very end, the group id cannot be recycled while the launcher may
// still signal it, so `kill(-pgid, ...)` never reaches an unrelated process.
//
// The launcher keeps the write end of a pipe to the guardian. On a normal end it writes
// "done" and the guardian just reaps the holder and exits. If the launcher dies without
// saying so (SIGKILL, crash), the guardian sees EOF, SIGKILLs the whole group -- PEs and
// anything they started, which PR_SET_PDEATHSIG alone would miss -- and removes the job's
// /dev/shm objects.
#pragma once

#include <sys/types.h>

#include <string>

#include "common/status.hpp"

namespace symmem::run {

struct Guardian {
  pid_t pid = -1;
  pid_t pgid = -1;  // the group the PEs must join
  int done_fd = -1;
};

// Must be called while the process is single-threaded. `heap_dir` is the PEs'
// SYMMEM_HEAP_DIR (empty: none), swept as /dev/shm is.
Result<Guardian> start_guardian(const std::string& job_id, const std::string& heap_dir);

// Tells the guardian the job ended cleanly (the launcher has already killed the group).
// The caller still reaps guardian.pid.
void release_guardian(Guardian& guardian);

// Removes every symmem-<job_id>-* entry of /dev/shm and of `heap_dir` (when not empty);
// returns how many were removed.
int remove_job_shm(const std::string& job_id, const std::string& heap_dir);

}  // namespace symmem::run
