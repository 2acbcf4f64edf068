#include "facts.hpp"

#include <sched.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <ucp/api/ucp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "heap/node_memory.hpp"
#include "device/cuda_driver.hpp"
#include "transport/ucx/ucx_transport.hpp"

#ifndef SYMMEM_VERSION
#define SYMMEM_VERSION "unknown"
#endif
#ifndef SYMMEM_BUILD_TYPE
#define SYMMEM_BUILD_TYPE "unknown"
#endif
#ifndef SYMMEM_SANITIZERS
#define SYMMEM_SANITIZERS ""
#endif
#ifndef SYMMEM_GIT_REV
#define SYMMEM_GIT_REV ""
#endif

namespace symmem::info {
namespace {

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string cpu_list(const cpu_set_t& set) {
  std::string out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    int e = c;
    while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set)) ++e;
    if (!out.empty()) out += ',';
    out += std::to_string(c);
    if (e > c) out.append("-").append(std::to_string(e));
    c = e;
  }
  return out;
}

// The tightest CPU quota of this process's cgroup and its ancestors (v2 cpu.max, v1
// cpu.cfs_quota_us / cpu.cfs_period_us), in CPUs; 0 when there is none.
double cpu_quota(std::string* from) {
  std::ifstream cg("/proc/self/cgroup");
  std::string line, v1_path, v2_path;
  bool v1 = false, v2 = false;
  while (std::getline(cg, line)) {
    size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string ctl(",");
    ctl.append(line, a + 1, b - a - 1).append(",");
    if (ctl == ",,") v2 = true, v2_path = line.substr(b + 1);
    else if (ctl.find(",cpu,") != std::string::npos) v1 = true, v1_path = line.substr(b + 1);
  }
  std::ifstream mi("/proc/self/mountinfo");
  std::string v1_mount, v2_mount, v1_root = "/", v2_root = "/";
  while (std::getline(mi, line)) {
    std::istringstream f(line);
    std::string id, parent, dev, root, mount, opts, field;
    f >> id >> parent >> dev >> root >> mount >> opts;
    while (f >> field && field != "-") {
    }
    std::string type, source, super;
    f >> type >> source >> super;
    if (type == "cgroup2") v2_mount = mount, v2_root = root;
    std::string opts_list(",");
    opts_list.append(super).append(",");
    if (type == "cgroup" && opts_list.find(",cpu,") != std::string::npos) v1_mount = mount, v1_root = root;
  }
  double best = 0;
  auto consider = [&](double cpus, const std::string& file) {
    if (cpus > 0 && (best == 0 || cpus < best)) best = cpus, *from = file;
  };
  auto walk = [&](const std::string& mount, const std::string& root, std::string path, bool is_v2) {
    if (mount.empty()) return;
    if (root != "/" && path.rfind(root, 0) == 0) path = path.substr(root.size());
    for (;;) {
      std::string dir = mount + (path == "/" ? "" : path);
      if (is_v2) {
        std::istringstream f(read_line(dir + "/cpu.max"));
        std::string quota;
        double period = 0;
        if (f >> quota >> period && quota != "max" && period > 0) consider(std::atof(quota.c_str()) / period, dir + "/cpu.max");
      } else {
        double q = std::atof(read_line(dir + "/cpu.cfs_quota_us").c_str());
        double p = std::atof(read_line(dir + "/cpu.cfs_period_us").c_str());
        if (q > 0 && p > 0) consider(q / p, dir + "/cpu.cfs_quota_us");
      }
      if (path.empty() || path == "/") break;
      size_t slash = path.rfind('/');
      path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
    }
  };
  if (v2) walk(v2_mount, v2_root, v2_path, true);
  if (v1) walk(v1_mount, v1_root, v1_path, false);
  return best;
}

}  // namespace

int NodeFacts::usable_cpus() const {
  int n = cpus_allowed > 0 ? cpus_allowed : cores_online;
  if (cpu_quota > 0) n = std::min(n, std::max(1, int(std::ceil(cpu_quota - 1e-9))));
  return n;
}

BuildFacts build_facts() {
  BuildFacts b;
  b.version = SYMMEM_VERSION;
  b.openshmem = "1.5";
#if defined(__clang__)
  b.compiler = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  b.compiler = std::string("gcc ") + __VERSION__;
#else
  b.compiler = "unknown";
#endif
  while (!b.compiler.empty() && b.compiler.back() == ' ') b.compiler.pop_back();
  b.build_type = SYMMEM_BUILD_TYPE;
  b.sanitizer = std::strlen(SYMMEM_SANITIZERS) ? SYMMEM_SANITIZERS : "none";
  b.git = SYMMEM_GIT_REV;
  b.ucx = ucp_get_version_string();
  b.tls = OpenSSL_version(OPENSSL_VERSION);
  return b;
}

std::vector<RouteFacts> route_facts() {
  std::vector<RouteFacts> out;
  NodeFacts n = node_facts();
  RouteFacts shm{"shm", "PEs of this node: loads and stores into their mapped heaps", n.shm_known,
                 n.shm_known ? "/dev/shm " + human_size(n.shm_size) + " (" + human_size(n.shm_free) + " free)"
                             : "/dev/shm is not mounted or not readable",
                 {}};
  out.push_back(shm);
  RouteFacts ucx{"ucx", "PEs of other nodes (or every PE with SYMMEM_TRANSPORT=ucx)", false,
                 UcxTransport::describe(), {}};
  char* buf = nullptr;
  size_t len = 0;
  if (FILE* mem = open_memstream(&buf, &len)) {
    ucx.usable = UcxTransport::print_resources(mem);
    std::fclose(mem);
    // ucp_context_print_info: "#      resource 1  :  md 1  dev 1  flags -- tcp/lo"
    std::istringstream lines(std::string(buf, len));
    std::string line;
    while (std::getline(lines, line)) {
      size_t at = line.find("flags -- ");
      if (line.find("resource") != std::string::npos && at != std::string::npos) {
        std::string tl = line.substr(at + 9);
        while (!tl.empty() && (tl.back() == ' ' || tl.back() == '\r')) tl.pop_back();
        ucx.transports.push_back(tl);
      }
    }
    std::free(buf);
  }
  if (!ucx.usable) ucx.detail += "; UCX cannot start here (ucp_init failed)";
  out.push_back(ucx);
  // The CUDA device route: whether it is built, the driver (loaded here, as a device
  // allocation would), the devices it sees and whether MPS can be controlled.
  device::RouteProbe dp = device::probe_route();
  RouteFacts cuda{"cuda", "device heap (SHMEMX_MALLOC_DEVICE) of the PEs of this node", dp.usable(), "", {}};
  if (!dp.built) {
    cuda.detail = "not built (SYMMEM_CUDA=OFF, or AUTO without nvcc)";
  } else if (!dp.driver) {
    cuda.detail = "built; " + dp.why;
  } else {
    cuda.detail = "built; driver " + std::to_string(dp.driver_version / 1000) + "." +
                  std::to_string(dp.driver_version % 1000 / 10) + ", " + std::to_string(dp.devices.size()) + " device(s)";
    cuda.transports = dp.devices;
  }
  cuda.detail += "; MPS: " + dp.mps;
  out.push_back(cuda);
  return out;
}

NodeFacts node_facts() {
  NodeFacts n;
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  n.host = host;
  n.cores_online = int(::sysconf(_SC_NPROCESSORS_ONLN));
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    n.cpus_allowed = CPU_COUNT(&set);
    n.cpus_list = cpu_list(set);
  }
  n.cpu_quota = cpu_quota(&n.cpu_quota_from);
  NodeMemory m = probe_node_memory(find_memory_cgroup());
  n.mem_total = m.mem_total;
  n.mem_available = m.mem_available;
  n.cgroup_limited = m.cgroup_limited;
  n.cgroup_limit = m.cgroup_limit;
  n.cgroup_available = m.cgroup_available;
  n.cgroup_dir = m.cgroup_dir;
  n.shm_known = m.shm_known;
  n.shm_size = m.shm_size;
  n.shm_free = m.shm_free;
  return n;
}

}  // namespace symmem::info
