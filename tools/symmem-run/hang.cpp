// symmem-run's reader of the PEs' status pages and memory (hang.hpp).
#include "hang.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "runtime/meta.hpp"

namespace symmem::run {

namespace {

// "<dir>/symmem-<job>-i<k>-<rank>" or "...-i<k>-s<rank>", possibly " (deleted)" (dir:
// /dev/shm, or SYMMEM_HEAP_DIR for heaps): instance k, whether it is the static-data
// object, and the rank.
bool parse_object(const std::string& path, const std::string& job, int* instance, bool* is_static, int* rank) {
  const std::string pre = "/symmem-" + job + "-i";
  const size_t at = path.find(pre);
  if (at == std::string::npos || path.find('/', at + 1) != std::string::npos) return false;
  const char* s = path.c_str() + at + pre.size();
  char* end = nullptr;
  long k = std::strtol(s, &end, 10);
  if (end == s || *end != '-') return false;
  s = end + 1;
  *is_static = *s == 's';
  if (*is_static) ++s;
  long r = std::strtol(s, &end, 10);
  if (end == s || (*end != 0 && std::strcmp(end, " (deleted)") != 0)) return false;
  *instance = int(k);
  *rank = int(r);
  return true;
}

std::string read_link(const std::string& p) {
  char buf[4096];
  ssize_t n = readlink(p.c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

}  // namespace

HangReader::HangReader(std::string job_id, int npes) : job_(std::move(job_id)), pes_(size_t(npes)) {
  src_.job = job_;
  src_.prefix = "symmem-run: ";
  src_.pes.resize(size_t(npes));
  for (int r = 0; r < npes; ++r) src_.pes[size_t(r)].rank = r;
  src_.read = [this](int owner, int space, uint64_t addr, uint32_t width, uint64_t* out) {
    return read(owner, space, addr, width, out);
  };
}

HangReader::~HangReader() {
  for (Pe& p : pes_) detach(p);
}

void HangReader::detach(Pe& p) {
  if (p.meta) munmap(p.meta, p.meta_len);
  if (p.fd >= 0) close(p.fd);
  if (p.sfd >= 0) close(p.sfd);
  p = Pe{};
}

void HangReader::set_life(int rank, dfx::hang::PeInfo::Life life, int code) {
  dfx::hang::PeInfo& pi = src_.pes[size_t(rank)];
  pi.life = life;
  pi.code = code;
}

void HangReader::attach(int rank, int pid) {
  Pe& p = pes_[size_t(rank)];
  dfx::hang::PeInfo& pi = src_.pes[size_t(rank)];
  pi.pid = pid;
  if (p.meta && p.pid == pid) {
    // A finalized instance may have been followed by another one in the same process.
    const auto* page = static_cast<const dfx::Page*>(pi.page);
    if (dfx::State(page->state.load(std::memory_order_relaxed)) != dfx::State::kFinalized) return;
  }
  // Its own object's mappings: offset 0 is the heap, offset H the metadata.
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  int best = -1;
  uint64_t meta_off = 0, meta_len = 0;
  while (std::getline(maps, line)) {
    unsigned long long lo, hi, off;
    char perms[8];
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi, perms, &off, &path_at) < 4 || !path_at)
      continue;
    int k, r;
    bool st;
    if (!parse_object(line.substr(size_t(path_at)), job_, &k, &st, &r) || st || r != rank || off == 0) continue;
    if (k > best) best = k, meta_off = off, meta_len = hi - lo;
  }
  if (best < 0) return;  // no heap yet
  if (p.meta && p.pid == pid && p.instance == best) return;
  detach(p);
  pi.page = nullptr;
  // Our own descriptors of its objects, through its open ones.
  const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(fds.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    int k, r;
    bool st;
    const std::string link = fds + "/" + e->d_name;
    if (!parse_object(read_link(link), job_, &k, &st, &r) || k != best || r != rank) continue;
    int fd = open(link.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    int& slot = st ? p.sfd : p.fd;
    if (slot >= 0) close(slot);
    slot = fd;
  }
  closedir(d);
  if (p.fd < 0) return;
  void* m = mmap(nullptr, meta_len, PROT_READ, MAP_SHARED, p.fd, off_t(meta_off));
  if (m == MAP_FAILED) {
    detach(p);
    return;
  }
  p.pid = pid;
  p.instance = best;
  p.heap_size = meta_off;
  p.meta = m;
  p.meta_len = meta_len;
  pi.page = reinterpret_cast<const dfx::Page*>(static_cast<const char*>(m) + offsetof(MetaFixed, dfx));
}

bool HangReader::read(int owner, int space, uint64_t addr, uint32_t width, uint64_t* out) {
  if (owner < 0 || size_t(owner) >= pes_.size() || space < 0 || size_t(space) >= pes_.size()) return false;
  const dfx::Page* sp = src_.pes[size_t(space)].page;
  if (!sp) return false;
  const uint64_t G = sp->layout_base, H = sp->heap_size, M = sp->meta_size, n = uint64_t(sp->npes);
  int fd = -1;
  uint64_t off = 0;
  if (H && addr - G < n * H) {
    const uint64_t pe = (addr - G) / H;
    fd = pes_[pe].fd;
    off = (addr - G) % H;
  } else if (M && addr - (G + n * H) < n * M) {
    const uint64_t x = addr - (G + n * H), pe = x / M;
    fd = pes_[pe].fd;
    off = pes_[pe].heap_size + x % M;
  } else if (addr - sp->static_start < sp->static_size) {
    fd = pes_[size_t(owner)].sfd;
    off = addr - sp->static_start;
  }
  if (fd < 0 || width == 0 || width > 8) return false;
  uint64_t v = 0;
  if (pread(fd, &v, width, off_t(off)) != ssize_t(width)) return false;
  *out = v;  // little-endian: the low `width` bytes
  return true;
}

int status_query(int launcher_pid) {
  // The PEs are the launcher's children with SYMMEM_RANK in their environment.
  std::map<int, int> pid_of;  // rank -> pid
  std::string job;
  int npes = 0;
  DIR* d = opendir("/proc");
  if (!d) return 1;
  while (dirent* e = readdir(d)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream st("/proc/" + std::to_string(pid) + "/stat");
    std::string s;
    if (!std::getline(st, s)) continue;
    const size_t rp = s.rfind(')');
    int ppid = 0;
    if (rp == std::string::npos || std::sscanf(s.c_str() + rp + 2, "%*c %d", &ppid) != 1 || ppid != launcher_pid)
      continue;
    std::ifstream env("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(env)), std::istreambuf_iterator<char>());
    std::istringstream vars(all);
    std::string kv, my_job;
    int rank = -1, n = 0;
    while (std::getline(vars, kv, '\0')) {
      if (kv.rfind("SYMMEM_RANK=", 0) == 0) rank = std::atoi(kv.c_str() + 12);
      else if (kv.rfind("SYMMEM_NPES=", 0) == 0) n = std::atoi(kv.c_str() + 12);
      else if (kv.rfind("SYMMEM_JOB_ID=", 0) == 0) my_job = kv.substr(14);
    }
    if (rank < 0 || my_job.empty()) continue;
    job = my_job;
    npes = n;
    pid_of[rank] = pid;
  }
  closedir(d);
  if (job.empty() || npes <= 0) {
    std::fprintf(stderr, "symmem-run --status: process %d runs no symmem job (no PE among its children)\n",
                 launcher_pid);
    return 1;
  }
  HangReader reader(job, npes);
  for (int r = 0; r < npes; ++r) {
    auto it = pid_of.find(r);
    if (it != pid_of.end()) reader.attach(r, it->second);
    else reader.set_life(r, dfx::hang::PeInfo::Life::kExited, -1);  // no longer running
  }
  dfx::hang::Options o;
  o.trigger = "symmem-run --status " + std::to_string(launcher_pid);
  const char* path = std::getenv("SYMMEM_HANG_FILE");
  o.json_path = path ? path : "";
  dfx::hang::Report rep = dfx::hang::build(reader.source(), o);
  std::fputs(rep.text.c_str(), stdout);
  return 0;
}

}  // namespace symmem::run
