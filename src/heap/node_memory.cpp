// Probing what the node can give (see node_memory.hpp). Files only, parsed by hand: these
// run before every commit that grows a heap, so they stay a few reads and no allocation
// beyond a small string each.
#include "heap/node_memory.hpp"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/config.hpp"

namespace symmem {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kMinMargin = 256 * kMiB;

bool read_text(const std::string& path, std::string* out) {
  std::ifstream f(path);
  if (!f) return false;
  std::ostringstream s;
  s << f.rdbuf();
  *out = s.str();
  return true;
}

// A file holding one number, or "max" (v2: no limit). False when absent or junk.
bool read_number(const std::string& path, uint64_t* out, bool* unlimited = nullptr) {
  std::string t;
  if (!read_text(path, &t)) return false;
  if (unlimited) *unlimited = t.rfind("max", 0) == 0;
  if (unlimited && *unlimited) return true;
  char* end = nullptr;
  unsigned long long v = std::strtoull(t.c_str(), &end, 10);
  if (end == t.c_str()) return false;
  *out = v;
  return true;
}

// The value of `key` in a "key value" file (memory.stat, memory.events, memory.oom_control).
bool read_keyed(const std::string& path, const char* key, uint64_t* out) {
  std::ifstream f(path);
  std::string k;
  unsigned long long v;
  while (f >> k >> v) {
    if (k == key) {
      *out = v;
      return true;
    }
  }
  return false;
}

uint64_t meminfo_kb(const std::string& text, const char* key) {
  const char* p = std::strstr(text.c_str(), key);
  if (!p) return 0;
  return std::strtoull(p + std::strlen(key), nullptr, 10) * 1024;
}

uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
uint64_t sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

}  // namespace

std::string human_size(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.1f GiB", double(b) / double(1ull << 30));
  else if (b >= kMiB) std::snprintf(buf, sizeof buf, "%.1f MiB", double(b) / double(kMiB));
  else std::snprintf(buf, sizeof buf, "%" PRIu64 " KiB", b >> 10);
  return buf;
}

MemoryCgroup find_memory_cgroup(int pid) {
  MemoryCgroup cg;
  std::string self = pid > 0 ? "/proc/" + std::to_string(pid) : "/proc/self";
  std::ifstream in(self + "/cgroup");
  std::string line, v1_path, v2_path;
  bool have_v1 = false, have_v2 = false;
  while (std::getline(in, line)) {
    // hierarchy-id:controller-list:path
    size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::string ctrls = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && ctrls.empty()) {
      v2_path = path;
      have_v2 = true;
      continue;
    }
    std::stringstream cs(ctrls);
    for (std::string c; std::getline(cs, c, ',');) {
      if (c == "memory") {
        v1_path = path;
        have_v1 = true;
      }
    }
  }
  // mountinfo: id parent maj:min root mount-point options [optional...] - fstype source super-options
  std::ifstream mi("/proc/self/mountinfo");
  std::string v1_mount, v1_root, v2_mount, v2_root;
  while (std::getline(mi, line)) {
    std::istringstream ls(line);
    std::string id, parent, dev, root, mount, tok, fstype, source, super;
    ls >> id >> parent >> dev >> root >> mount;
    while (ls >> tok && tok != "-") {
    }
    ls >> fstype >> source >> super;
    if (fstype == "cgroup" && have_v1 && v1_mount.empty()) {
      std::stringstream ss(super);
      for (std::string o; std::getline(ss, o, ',');)
        if (o == "memory") {
          v1_mount = mount;
          v1_root = root;
        }
    } else if (fstype == "cgroup2" && have_v2 && v2_mount.empty()) {
      v2_mount = mount;
      v2_root = root;
    }
  }
  auto join = [](const std::string& mount, const std::string& root, const std::string& path) {
    std::string rel = path;
    if (root != "/" && rel.compare(0, root.size(), root) == 0) rel = rel.substr(root.size());
    if (rel == "/") rel.clear();
    return mount + rel;
  };
  if (!v1_mount.empty()) {
    cg.version = 1;
    cg.mount = v1_mount;
    cg.dir = join(v1_mount, v1_root, v1_path);
  } else if (!v2_mount.empty()) {
    std::string ctrl;
    // The memory controller must be enabled on this hierarchy (not so in hybrid setups).
    if (read_text(v2_mount + "/cgroup.controllers", &ctrl) && ctrl.find("memory") != std::string::npos) {
      cg.version = 2;
      cg.mount = v2_mount;
      cg.dir = join(v2_mount, v2_root, v2_path);
    }
  }
  if (cg.version && access(cg.dir.c_str(), R_OK) != 0) cg = MemoryCgroup{};
  return cg;
}

int64_t cgroup_oom_kills(const MemoryCgroup& cg) {
  uint64_t v = 0;
  if (cg.version == 2 && read_keyed(cg.dir + "/memory.events", "oom_kill", &v)) return int64_t(v);
  if (cg.version == 1 && read_keyed(cg.dir + "/memory.oom_control", "oom_kill", &v)) return int64_t(v);
  return -1;
}

uint64_t cgroup_identity(const MemoryCgroup& cg) {
  struct stat st {};
  if (cg.version == 0 || stat(cg.dir.c_str(), &st) != 0) return 0;
  return uint64_t(st.st_ino);
}

bool is_hugetlbfs(const std::string& dir) {
  constexpr long kHugetlbfsMagic = 0x958458f6;
  struct statfs fs {};
  return !dir.empty() && statfs(dir.c_str(), &fs) == 0 && long(fs.f_type) == kHugetlbfsMagic;
}

NodeMemory probe_node_memory(const MemoryCgroup& cg, const std::string& shm_dir) {
  NodeMemory m;
  std::string info;
  if (read_text("/proc/meminfo", &info)) {
    m.mem_total = meminfo_kb(info, "MemTotal:");
    m.mem_available = meminfo_kb(info, "MemAvailable:");
  }
  if (cg.version) {
    // Every level from the process's cgroup up to the hierarchy's root; a limit at or
    // above MemTotal cannot bind before MemAvailable does.
    std::string dir = cg.dir;
    for (;;) {
      uint64_t limit = 0, usage = 0, inactive = 0, active = 0;
      bool unlimited = false;
      bool have = cg.version == 2
                      ? read_number(dir + "/memory.max", &limit, &unlimited) &&
                            read_number(dir + "/memory.current", &usage)
                      : read_number(dir + "/memory.limit_in_bytes", &limit) &&
                            read_number(dir + "/memory.usage_in_bytes", &usage);
      if (have && !unlimited && (m.mem_total == 0 || limit < m.mem_total)) {
        const std::string stat = dir + "/memory.stat";
        // Page cache can be reclaimed to make room; shmem (our heaps) cannot without swap.
        if (cg.version == 2) {
          read_keyed(stat, "inactive_file", &inactive);
          read_keyed(stat, "active_file", &active);
        } else {
          read_keyed(stat, "total_inactive_file", &inactive);
          read_keyed(stat, "total_active_file", &active);
        }
        uint64_t avail = limit > usage ? limit - usage : 0;
        avail = sat_add(avail, inactive + active);
        if (avail > limit) avail = limit;
        if (!m.cgroup_limited || avail < m.cgroup_available) {
          m.cgroup_limited = true;
          m.cgroup_version = cg.version;
          m.cgroup_dir = dir;
          m.cgroup_limit = limit;
          m.cgroup_usage = usage;
          m.cgroup_available = avail;
        }
      }
      if (dir.size() <= cg.mount.size()) break;
      size_t slash = dir.rfind('/');
      if (slash == std::string::npos || slash < cg.mount.size()) break;
      dir = slash == cg.mount.size() ? cg.mount : dir.substr(0, slash);
    }
  }
  if (!shm_dir.empty()) m.shm_dir = shm_dir;
  struct statvfs vs {};
  if (statvfs(m.shm_dir.c_str(), &vs) == 0 && vs.f_blocks > 0) {
    m.shm_known = true;
    m.shm_size = sat_mul(vs.f_blocks, vs.f_frsize);
    m.shm_free = sat_mul(vs.f_bavail, vs.f_frsize);
  }
  return m;
}

Result<uint64_t> commit_margin(const std::string& setting, const NodeMemory& m) {
  if (setting.empty() || setting == "auto") {
    uint64_t base = m.mem_total;
    if (m.cgroup_limited && (base == 0 || m.cgroup_limit < base)) base = m.cgroup_limit;
    uint64_t margin = base / 100 * 3;
    if (margin < kMinMargin) margin = kMinMargin;
    if (base && margin > base / 4) margin = base / 4;
    return margin;
  }
  auto r = parse_size(setting);
  if (!r.ok())
    return Status(Errc::kInvalidArgument, "SYMMEM_COMMIT_MARGIN: " + r.status().message() + " (auto or a size)");
  return *r;
}

CommitCheck check_commit(uint64_t bytes, int node_pes, int cgroup_pes, uint64_t margin, const NodeMemory& m) {
  CommitCheck c;
  if (bytes == 0) return c;
  if (node_pes < 1) node_pes = 1;
  if (cgroup_pes < 1 || cgroup_pes > node_pes) cgroup_pes = node_pes;
  const uint64_t node_need = sat_mul(bytes, uint64_t(node_pes));
  const uint64_t cg_need = sat_mul(bytes, uint64_t(cgroup_pes));
  // What binds, most specific first: the cgroup, then the machine's memory, then /dev/shm.
  std::string fix;
  if (m.cgroup_limited && sat_add(cg_need, margin) > m.cgroup_available) {
    fix = "raise the memory cgroup's limit (" + m.cgroup_dir +
          (m.cgroup_version == 2 ? "/memory.max" : "/memory.limit_in_bytes") + ")";
  } else if (m.mem_total && sat_add(node_need, margin) > m.mem_available) {
    fix = "free memory on this node";
  } else if (m.shm_known && node_need > m.shm_free) {
    fix = "enlarge " + m.shm_dir + " (mount -o remount,size=... " + m.shm_dir + ") or remove what fills it";
  } else {
    return c;
  }
  c.ok = false;
  std::string peers = node_pes == 1 ? "this PE alone on the node"
                                    : "the " + std::to_string(node_pes) + " PEs on this node commit " +
                                          human_size(node_need) + " together" +
                                          (cgroup_pes < node_pes
                                               ? " (" + std::to_string(cgroup_pes) + " of them in this PE's cgroup)"
                                               : "");
  std::string has = "the node has " + human_size(m.mem_available) + " available of " + human_size(m.mem_total);
  if (m.cgroup_limited)
    has += ", cgroup limit " + human_size(m.cgroup_limit) + " with " + human_size(m.cgroup_usage) + " used";
  else
    has += ", no memory cgroup limit";
  if (m.shm_known) has += ", " + m.shm_dir + " " + human_size(m.shm_free) + " free";
  c.why = "cannot commit " + human_size(bytes) + " more of symmetric memory: " + peers + "; " + has + "; " +
          human_size(margin) + " is kept free for the programs (SYMMEM_COMMIT_MARGIN); allocate less, use fewer PEs "
          "per node, or " + fix;
  return c;
}

Status CommitPolicy::check(uint64_t bytes) const {
  if (bytes == 0 || !enabled) return {};
  // hugetlbfs pages come from a pool reserved apart from MemAvailable; its fallocate
  // refuses cleanly (ENOSPC) when the pool is short, so there is nothing to check first.
  if (is_hugetlbfs(shm_dir)) return {};
  NodeMemory m = probe_node_memory(cgroup, shm_dir);
  SYMMEM_ASSIGN_OR_RETURN(uint64_t mg, commit_margin(margin, m));
  CommitCheck c = check_commit(bytes, node_pes, cgroup_pes, mg, m);
  if (!c.ok) return Status(Errc::kNoMemory, c.why);
  return {};
}

}  // namespace symmem
