// What this node can really give to a commit of shared memory, and how to say it.
//
// tmpfs accepts a commit up to its own size, which is usually the machine's RAM and not
// what is free; a memory cgroup's limit is not visible to tmpfs at all, and going past it
// brings the out-of-memory killer instead of ENOSPC. So before a symmetric allocation
// commits memory, each PE probes three things (docs/memory.md):
//   - MemAvailable (/proc/meminfo),
//   - the memory cgroup of this process (v1 or v2, found from /proc/self/cgroup and
//     /proc/self/mountinfo): for it and every ancestor with a limit, limit - usage plus
//     its reclaimable page cache; the tightest level counts,
//   - the free space of the shared-memory filesystem (statvfs of /dev/shm).
// Everything here reads files only; nothing is cached, since the answer changes.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.hpp"

namespace symmem {

// Where this process's memory cgroup lives. version 0: none found (no memory controller
// mounted, or not readable).
struct MemoryCgroup {
  int version = 0;      // 1 or 2
  std::string dir;      // e.g. /sys/fs/cgroup/memory/job42 or /sys/fs/cgroup/job42
  std::string mount;    // the hierarchy's mount point: ancestors are walked up to it
};

// `pid` 0: this process.
MemoryCgroup find_memory_cgroup(int pid = 0);

// Number of processes of the cgroup (and its descendants, v2 memory.events is
// hierarchical) killed by the out-of-memory killer: v2 memory.events oom_kill, v1
// memory.oom_control oom_kill. -1 when the cgroup has no such counter.
int64_t cgroup_oom_kills(const MemoryCgroup& cg);

// A stable identity of the cgroup (the inode number of its directory), 0 when none:
// PEs with the same identity are charged to the same limits.
uint64_t cgroup_identity(const MemoryCgroup& cg);

struct NodeMemory {
  uint64_t mem_total = 0;      // MemTotal
  uint64_t mem_available = 0;  // MemAvailable
  // The tightest memory cgroup level, when any level has a limit below MemTotal.
  bool cgroup_limited = false;
  int cgroup_version = 0;
  std::string cgroup_dir;      // the level that binds
  uint64_t cgroup_limit = 0;
  uint64_t cgroup_usage = 0;
  uint64_t cgroup_available = 0;  // limit - usage + reclaimable page cache, at that level
  std::string shm_dir = "/dev/shm";  // where the heaps live (SYMMEM_HEAP_DIR)
  uint64_t shm_size = 0;
  uint64_t shm_free = 0;
  bool shm_known = false;
};

// Whether `dir` is on a hugetlbfs mount (its pages come from the reserved huge-page pool).
bool is_hugetlbfs(const std::string& dir);

// Reads /proc/meminfo, the cgroup files and statvfs of `shm_dir` (empty: /dev/shm) now.
NodeMemory probe_node_memory(const MemoryCgroup& cg, const std::string& shm_dir = "");

// The memory kept free for the programs themselves. `setting` is SYMMEM_COMMIT_MARGIN:
// "auto" (3% of the node's memory, or of the cgroup limit when lower; at least 256 MiB,
// at most a quarter of it), or a size.
Result<uint64_t> commit_margin(const std::string& setting, const NodeMemory& m);

// The verdict on committing `bytes` more on this PE while `node_pes` PEs of this node
// (`cgroup_pes` of them in this PE's cgroup) commit as much at the same moment.
struct CommitCheck {
  bool ok = true;
  std::string why;  // when refused: what the node has, the other PEs, what to change
};
CommitCheck check_commit(uint64_t bytes, int node_pes, int cgroup_pes, uint64_t margin, const NodeMemory& m);

// What a PE knows at init about committing on its node: its cgroup, how many PEs of the
// job share the node and the cgroup (they commit the same amounts at the same moments),
// and SYMMEM_COMMIT_MARGIN.
struct CommitPolicy {
  MemoryCgroup cgroup;
  int node_pes = 1;
  int cgroup_pes = 1;
  std::string margin = "auto";
  bool enabled = true;  // SYMMEM_COMMIT_CHECK
  std::string shm_dir;  // SYMMEM_HEAP_DIR (empty: /dev/shm)
  // Probes now; kNoMemory with the one-line reason when the node cannot back `bytes` more
  // on this PE (and as much on each of the other node_pes).
  Status check(uint64_t bytes) const;
};

// "20.0 GiB", "384.0 MiB", "512 KiB": for messages (format_size prints exact units).
std::string human_size(uint64_t bytes);

}  // namespace symmem
