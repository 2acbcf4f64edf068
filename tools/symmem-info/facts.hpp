// What symmem-info reports besides the tunables: this build, the routes it can take, and
// the node as this process sees it (CPUs it may use, cgroup quotas, memory, /dev/shm).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace symmem::info {

struct BuildFacts {
  std::string version, openshmem, compiler, build_type, sanitizer, git, ucx, tls;
};

struct RouteFacts {
  std::string name;         // "shm", "ucx"
  std::string reaches;      // which PEs it serves
  bool usable = false;
  std::string detail;       // what was found, or why not usable
  std::vector<std::string> transports;  // UCX: transport/device pairs it would use
};

struct NodeFacts {
  std::string host;
  int cores_online = 0;
  int cpus_allowed = 0;       // sched_getaffinity
  std::string cpus_list;      // e.g. "0-1"
  double cpu_quota = 0;       // CPUs' worth of time the cgroup grants, 0: no quota
  std::string cpu_quota_from; // the file it came from
  uint64_t mem_total = 0, mem_available = 0;
  bool cgroup_limited = false;
  uint64_t cgroup_limit = 0, cgroup_available = 0;
  std::string cgroup_dir;
  bool shm_known = false;
  uint64_t shm_size = 0, shm_free = 0;

  // CPUs the PEs of this node can run on at once: allowed CPUs, bounded by the quota.
  int usable_cpus() const;
};

BuildFacts build_facts();
std::vector<RouteFacts> route_facts();
NodeFacts node_facts();

}  // namespace symmem::info
