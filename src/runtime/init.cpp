// The init sequence of a Runtime (Runtime::Impl's constructors):
//
//   1. configuration: the tunables, then InitAttr's overrides
//   2. plan the join: who am I (rank, PE count), where is the store, who hosts it, what
//      secret protects it — from symmem-run's variables, a unique id, MPI, another
//      launcher's environment (Open MPI, PMI, Slurm, torchrun), or nothing (1 PE)
//   3. host the store if this PE must, connect to it (TLS unless switched off)
//   4. consistency: every PE publishes what it believes (library version, PE count, heap
//      size, how it was started); a PE that disagrees with PE 0 or with the others stops
//      with a message naming who differs and how; a PE that never arrives is named
//   5. the symmetric heap at the global layout
//   6. the executable's static data made symmetric (runtime_static.cpp)
//   7. routes, wait policy, metadata; the ready barrier; the rendezvous file goes
#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <tuple>
#include <vector>

#include "bootstrap/launcher_env_detect.hpp"
#include "bootstrap/unique_id.hpp"
#include "common/log.hpp"
#include "runtime/runtime_impl.hpp"
#include "shmem.h"

#ifndef SYMMEM_LIBRARY_VERSION
#define SYMMEM_LIBRARY_VERSION "unknown"
#endif

namespace symmem {
namespace {

// Spinning only pays when the peer we wait for can run at the same time; with more PEs
// than cores, spin briefly and give the core away.
WaitPolicy make_wait_policy(const Config& c, int local_pes) {
  WaitPolicy w;
  unsigned cores = std::thread::hardware_concurrency();
  bool oversubscribed = cores && unsigned(local_pes) > cores;
  // A pause costs 10-100 ns, so 1000 polls spin well under 0.1 ms: long enough to catch a
  // peer that is running, short enough not to burn a time slice on a loaded machine.
  w.spin = c.wait_spin >= 0 ? int(c.wait_spin) : (oversubscribed ? 16 : 1000);
  w.yield = c.wait_yield >= 0 ? int(c.wait_yield) : (oversubscribed ? 16 : 64);
  w.max_sleep_us = int(c.wait_max_sleep_us > 0 ? c.wait_max_sleep_us : 1000);
  w.first_sleep_us = int(c.wait_first_sleep_us > 0 ? std::min<int64_t>(c.wait_first_sleep_us, w.max_sleep_us) : 1);
  return w;
}

// The size of the largest CPU cache this process's CPU shares, from sysfs (sysconf's figure
// comes from CPUID, which virtual machines often misreport); 0 when unknown.
size_t last_level_cache_bytes() {
  size_t best = 0;
  for (int i = 0; i < 8; ++i) {
    std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size");
    unsigned long long v = 0;
    char unit = 0;
    if (!(f >> v)) continue;
    f >> unit;
    size_t bytes = v * (unit == 'K' ? 1024ull : unit == 'M' ? 1ull << 20 : unit == 'G' ? 1ull << 30 : 1ull);
    best = std::max(best, bytes);
  }
  return best;
}

// The CPUs this process may run on (before it binds itself), as hex words "w0.w1..." with
// the trailing zero words left off; "" when unknown.
std::string allowed_cpus_text() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return "";
  std::vector<uint64_t> words(CPU_SETSIZE / 64);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &allowed)) words[size_t(cpu / 64)] |= uint64_t(1) << (cpu % 64);
  while (words.size() > 1 && words.back() == 0) words.pop_back();
  std::string out;
  for (size_t w = 0; w < words.size(); ++w) {
    char buf[20];
    std::snprintf(buf, sizeof buf, "%s%" PRIx64, w ? "." : "", words[w]);
    out += buf;
  }
  return out;
}

// This PE's node: SYMMEM_NODE_ID, else host name and boot id (two containers of one host
// with separate /dev/shm are told apart only by SYMMEM_NODE_ID). With transport ucx every
// PE is a node of its own, so every peer goes through UCX.
std::string this_node_id(const Config& c, const std::string& transport, int rank) {
  std::string id = c.node_id;
  if (id.empty()) {
    char host[256] = {0};
    ::gethostname(host, sizeof(host) - 1);
    std::string boot;
    std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
    id = std::string(host) + "/" + boot;
  }
  if (transport == "ucx") id += "#pe" + std::to_string(rank);
  for (char& ch : id)
    if (ch == ' ' || ch == '=' || ch == '\t') ch = '_';
  return id;
}

// How this PE joins its job.
struct JoinPlan {
  int rank = 0, npes = 1;
  std::optional<StoreAddress> store;       // connect here
  std::optional<StoreAddress> host_at;     // and host the store there first
  std::unique_ptr<TcpStoreServer> hosted;  // already running (the unique id was made here)
  StoreSecurity sec;
  std::string job_id;
  std::string how;  // "symmem-run", "unique id", "MPI", "Open MPI", ... for messages
  bool from_launcher = false;
  std::string rendezvous;  // single-node launchers: PE 0 publishes the store here
};

Status invalid(const std::string& msg) { return Status(Errc::kInvalidArgument, msg); }

// The security the caller asked for: InitAttr first, then SYMMEM_STORE_TLS / SYMMEM_TLS_*.
Result<StoreSecurity> requested_security(const InitAttr& a) {
  StoreSecurity sec;
  if (!a.tls.empty()) {
    SYMMEM_ASSIGN_OR_RETURN(sec.mode, StoreSecurity::parse_mode(a.tls));
  } else {
    SYMMEM_ASSIGN_OR_RETURN(sec, security_from_env());
  }
  sec.ca_file = a.tls_ca_file;
  sec.ca_path = a.tls_ca_path;
  sec.cert_file = a.tls_cert;
  sec.key_file = a.tls_key;
  sec.crl_file = a.tls_crl;
  sec.cert_paths_from_env();
  return sec;
}

// InitAttr's fields replace the tunables they stand for; the table says "api" for them.
void apply_init_attr(const InitAttr& a, Config* c) {
  using Id = Config::Id;
  if (a.init_timeout_s > 0) c->init_timeout = a.init_timeout_s, c->set_by_api(Id::init_timeout, "init_timeout");
  if (a.op_timeout_s > 0) c->op_timeout = a.op_timeout_s, c->set_by_api(Id::op_timeout, "op_timeout");
  if (a.heap_size) c->symmetric_size = a.heap_size, c->set_by_api(Id::symmetric_size, "heap_size");
  if (a.device_heap_size)
    c->device_heap_size = a.device_heap_size, c->set_by_api(Id::device_heap_size, "device_heap_size");
  if (a.device >= 0) c->device = a.device, c->set_by_api(Id::device, "device");
  if (!a.transport.empty() && a.transport != "auto") c->transport = a.transport, c->set_by_api(Id::transport, "transport");
  if (!a.tls.empty()) c->store_tls = a.tls, c->set_by_api(Id::store_tls, "tls");
  for (auto [value, field, id] : {std::tuple{&a.tls_ca_file, &c->tls_ca, Id::tls_ca},
                                  std::tuple{&a.tls_ca_path, &c->tls_ca_path, Id::tls_ca_path},
                                  std::tuple{&a.tls_cert, &c->tls_cert, Id::tls_cert},
                                  std::tuple{&a.tls_key, &c->tls_key, Id::tls_key},
                                  std::tuple{&a.tls_crl, &c->tls_crl, Id::tls_crl}})
    if (!value->empty()) *field = *value, c->set_by_api(id, "tls path");
}

// PE 0 of the default instance, once per process: SHMEM_VERSION and SHMEM_INFO (the
// standard's variables) print on stdout; a SYMMEM_* / SHMEM_* variable that symmem does not
// know is named, with the nearest known name (common/config.hpp), on stderr.
void announce_config(const Config& c) {
  static std::atomic<bool> done{false};
  if (done.exchange(true)) return;
  for (const auto& u : unknown_variables()) log_pe(LogLevel::kWarn, 0, "%s", u.message().c_str());
  if (!c.info && !c.version) return;
  std::string text = std::string("symmem ") + SYMMEM_LIBRARY_VERSION + " (OpenSHMEM " +
                     std::to_string(SHMEM_MAJOR_VERSION) + "." + std::to_string(SHMEM_MINOR_VERSION) + ")\n";
  if (c.info)
    text += "SHMEM_INFO: the variables symmem reads, with their values in this job and where each came from\n" +
            tunable_table(c) + "(symmem-info prints this with the build, the node and a --check of the environment)\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

std::string job_id_from(uint64_t h) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string id;
  for (int i = 0; i < 12; ++i) {
    id.push_back(kAlphabet[h % 36]);
    h = h / 36 ^ (h * 0x9e3779b97f4a7c15ull);
  }
  return id;
}

Status plan_from_unique_id(const InitAttr& a, const uint8_t* uid, const std::string& how, JoinPlan* p) {
  SYMMEM_ASSIGN_OR_RETURN(UniqueIdInfo info, decode_unique_id(uid));
  if (a.n_pes < 1) return invalid("n_pes=" + std::to_string(a.n_pes) + ": a job started from a unique id needs "
                                  "n_pes >= 1 on every PE");
  if (a.my_pe < 0 || a.my_pe >= a.n_pes)
    return invalid("my_pe=" + std::to_string(a.my_pe) + " is out of range for n_pes=" + std::to_string(a.n_pes));
  p->rank = a.my_pe;
  p->npes = a.n_pes;
  p->how = how;
  p->job_id = info.job_id;
  StoreSecurity mine;
  SYMMEM_ASSIGN_OR_RETURN(mine, requested_security(a));
  p->sec = info.security;  // the id's creator chose the mode; certificate paths are ours
  p->sec.ca_file = mine.ca_file;
  p->sec.ca_path = mine.ca_path;
  p->sec.cert_file = mine.cert_file;
  p->sec.key_file = mine.key_file;
  p->sec.crl_file = mine.crl_file;
  p->hosted = adopt_hosted_store(info.security.magic);
  p->store = info.store;
  if (!p->hosted && !a.store_url.empty()) {
    SYMMEM_ASSIGN_OR_RETURN(StoreAddress via, StoreAddress::parse(a.store_url));
    p->store = via;
  }
  return {};
}

// ---- INIT_WITH_MPI: through libsymmem_mpi, loaded on demand so libsymmem needs no MPI.

using MpiRankSize = int (*)(void* comm, int* rank, int* size, char* err, size_t errlen);
using MpiBcast = int (*)(void* comm, void* buf, size_t len, char* err, size_t errlen);

Status plan_from_mpi(const InitAttr& a, JoinPlan* p) {
  std::vector<std::string> tries;
  Dl_info self{};
  if (::dladdr(reinterpret_cast<void*>(&plan_from_mpi), &self) && self.dli_fname) {
    std::string dir = self.dli_fname;
    dir = dir.substr(0, dir.rfind('/') + 1);
    tries.push_back(dir + "libsymmem_mpi.so");
  }
  tries.push_back("libsymmem_mpi.so");
  void* lib = nullptr;
  std::string last;
  for (const auto& t : tries) {
    lib = ::dlopen(t.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (lib) break;
    last = ::dlerror();
  }
  if (!lib)
    return Status(Errc::kState, "SHMEMX_INIT_WITH_MPI needs libsymmem_mpi.so (built when MPI is found), which "
                                "cannot be loaded: " + last);
  auto rank_size = reinterpret_cast<MpiRankSize>(::dlsym(lib, "symmem_mpi_rank_size"));
  auto bcast = reinterpret_cast<MpiBcast>(::dlsym(lib, "symmem_mpi_bcast"));
  if (!rank_size || !bcast) return Status(Errc::kState, "libsymmem_mpi.so lacks its entry points");
  char err[256] = {0};
  int rank = 0, size = 0;
  if (rank_size(a.mpi_comm, &rank, &size, err, sizeof(err)) != 0) return Status(Errc::kState, err);
  UniqueId uid;
  if (rank == 0) {
    StoreSecurity sec;
    SYMMEM_ASSIGN_OR_RETURN(sec, requested_security(a));
    SYMMEM_ASSIGN_OR_RETURN(StoreAddress where, choose_store_address(std::getenv("SYMMEM_BOOTSTRAP_ADDR") ?: "",
                                                                     std::getenv("SYMMEM_BOOTSTRAP_IFNAME") ?: ""));
    SYMMEM_ASSIGN_OR_RETURN(UniqueIdInfo info, create_unique_id(where, sec));
    encode_unique_id(info, uid.bytes.data());
  }
  if (bcast(a.mpi_comm, uid.bytes.data(), uid.bytes.size(), err, sizeof(err)) != 0) return Status(Errc::kState, err);
  InitAttr b = a;
  b.my_pe = rank;
  b.n_pes = size;
  b.store_url.clear();
  return plan_from_unique_id(b, uid.bytes.data(), "MPI", p);
}

// ---- single-node launchers: PE 0 publishes the store's address and secret in a file
// only this user can read.

std::string rendezvous_path(const LauncherEnv& l, uint64_t instance) {
  char name[96];
  std::snprintf(name, sizeof(name), "/symmem-%016" PRIx64 "-i%" PRIu64 ".rdv", hash64(l.job_key), instance);
  return l.rendezvous_dir + name;
}

Status publish_rendezvous(const std::string& path, const StoreAddress& at, const StoreSecurity& sec) {
  std::string tmp = path + ".tmp" + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return errno_status(Errc::kIo, "creating the rendezvous file " + tmp, errno);
  char magic[17];
  std::snprintf(magic, sizeof(magic), "%016" PRIx64, sec.magic);
  std::string text = at.to_url() + " " + magic + " " + to_hex(sec.secret.data(), sec.secret.size()) + "\n";
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return errno_status(Errc::kIo, "writing the rendezvous file " + path, e);
  }
  return {};
}

Status read_rendezvous(const std::string& path, double timeout_s, StoreAddress* at, StoreSecurity* sec) {
  Deadline d = deadline_after(timeout_s);
  for (;;) {
    struct stat st{};
    if (::stat(path.c_str(), &st) == 0) {
      if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
        return Status(Errc::kRefused, "the rendezvous file " + path + " belongs to another user or is readable by "
                                      "others; refusing to trust it");
      std::ifstream in(path);
      std::string url, magic, secret;
      in >> url >> magic >> secret;
      auto a = StoreAddress::parse(url);
      if (a.ok() && magic.size() == 16 && from_hex(secret, sec->secret.data(), sec->secret.size())) {
        *at = *a;
        sec->magic = std::strtoull(magic.c_str(), nullptr, 16);
        return {};
      }
    }
    if (Clock::now() >= d)
      return Status(Errc::kTimeout, "PE 0 did not publish the job's store in " + path + " within " +
                                        std::to_string(int(timeout_s)) + " s (PE 0 not started, or crashed?)");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Status plan_from_launcher(const InitAttr& a, const Config& cfg, const LauncherEnv* l, JoinPlan* p) {
  p->rank = a.my_pe >= 0 ? a.my_pe : (l ? l->rank : 0);
  p->npes = a.n_pes >= 1 ? a.n_pes : (l ? l->size : 1);
  p->how = l ? l->name : "init attributes";
  p->from_launcher = l != nullptr;
  if (p->rank < 0 || p->rank >= p->npes)
    return invalid("PE " + std::to_string(p->rank) + " is out of range for " + std::to_string(p->npes) + " PEs");
  if (l && (p->rank != l->rank || p->npes != l->size))
    return invalid("my_pe/n_pes " + std::to_string(p->rank) + "/" + std::to_string(p->npes) + " disagree with " +
                   l->name + "'s " + l->vars + " = " + std::to_string(l->rank) + "/" + std::to_string(l->size));
  std::string key = l ? l->job_key : "attr";
  if (p->npes == 1) {
    p->job_id = random_job_id();
    return {};
  }
  SYMMEM_ASSIGN_OR_RETURN(p->sec, requested_security(a));
  // Where the store is: the caller's choice, SYMMEM_STORE, torchrun's master, or (one
  // node) wherever PE 0 publishes it.
  std::string url = !a.store_url.empty() ? a.store_url : (std::getenv(kEnvStore) ?: "");
  if (!url.empty()) {
    SYMMEM_ASSIGN_OR_RETURN(StoreAddress s, StoreAddress::parse(url));
    p->store = s;
  } else if (l && l->store) {
    p->store = l->store;
  } else if (l && l->single_node) {
    p->rendezvous = rendezvous_path(*l, a.instance_id);
  } else {
    return invalid(p->how + " started " + std::to_string(p->npes) + " PEs on several nodes (or on nodes it does not "
                   "describe) and symmem cannot tell where PE 0 will host the job's store: set SYMMEM_STORE="
                   "tcp://<host of PE 0>:<free port> on every PE, or use SHMEMX_INIT_WITH_MPI / _UNIQUEID");
  }
  const char* secret = std::getenv(kEnvSecret);
  if (p->sec.mode == StoreSecurity::Mode::kPsk) {
    if (secret) {
      if (!from_hex(secret, p->sec.secret.data(), p->sec.secret.size()))
        return invalid(std::string(kEnvSecret) + ": expected 64 hex digits");
    } else if (p->rendezvous.empty()) {
      return Status(Errc::kRefused,
                    "no secret can be shared under " + p->how + " across nodes, and the store is TLS-protected by "
                    "default: give every PE the same secret (export " + kEnvSecret + "=$(openssl rand -hex 32) and "
                    "pass it through the launcher's environment), use SHMEMX_INIT_WITH_MPI or _UNIQUEID, or switch "
                    "TLS off explicitly with " + kEnvTls + "=off on trusted networks");
    }
  }
  uint64_t h = hash64(key + "|" + (p->store ? p->store->to_url() : p->rendezvous) + "|" + std::to_string(a.instance_id));
  p->sec.magic = h ^ hash64(secret ? secret : "");
  p->job_id = job_id_from(h ^ 0x5bd1e995u);
  if (p->rank == 0) {
    if (p->store) {
      p->host_at = *p->store;
    } else {
      p->host_at = StoreAddress{"127.0.0.1", 0};
      if (p->sec.mode == StoreSecurity::Mode::kPsk && !secret) p->sec.secret = random_secret();
      p->sec.magic = random_u64();
    }
  } else if (!p->rendezvous.empty()) {
    StoreAddress at;
    SYMMEM_RETURN_IF_ERROR(read_rendezvous(p->rendezvous, cfg.init_timeout, &at, &p->sec));
    p->store = at;
    p->rendezvous.clear();  // only PE 0 removes it
  }
  return {};
}

Status plan_join(const InitAttr& a, const Config& cfg, JoinPlan* p) {
  switch (a.mode) {
    case InitMode::kUniqueId:
      if (a.uid.empty()) return invalid("SHMEMX_INIT_WITH_UNIQUEID without a unique id (attr.comm_args / uid)");
      return plan_from_unique_id(a, a.uid.bytes.data(), "unique id", p);
    case InitMode::kMpi:
      return plan_from_mpi(a, p);
    case InitMode::kDefault:
      break;
  }
  if (std::getenv(kEnvRank)) {  // symmem-run
    SYMMEM_ASSIGN_OR_RETURN(LaunchEnv env, LaunchEnv::from_env());
    if ((a.my_pe >= 0 && a.my_pe != env.rank) || (a.n_pes >= 1 && a.n_pes != env.npes))
      return invalid("my_pe/n_pes " + std::to_string(a.my_pe) + "/" + std::to_string(a.n_pes) +
                     " disagree with symmem-run's SYMMEM_RANK/SYMMEM_NPES = " + std::to_string(env.rank) + "/" +
                     std::to_string(env.npes));
    p->rank = env.rank;
    p->npes = env.npes;
    p->store = env.store;
    p->sec = env.security;
    p->job_id = env.job_id;
    p->how = "symmem-run";
    p->from_launcher = true;
    return {};
  }
  SYMMEM_ASSIGN_OR_RETURN(std::optional<LauncherEnv> l, detect_launcher_env());
  if (const char* text = std::getenv("SYMMEM_UNIQUEID")) {  // an id handed over in the environment
    UniqueId uid;
    SYMMEM_RETURN_IF_ERROR(unique_id_from_text(text, uid.bytes.data()));
    InitAttr b = a;
    if (b.my_pe < 0 && l) b.my_pe = l->rank;
    if (b.n_pes < 1 && l) b.n_pes = l->size;
    return plan_from_unique_id(b, uid.bytes.data(), "unique id (SYMMEM_UNIQUEID)", p);
  }
  if (!l && a.my_pe < 0 && a.n_pes < 1) {
    p->job_id = random_job_id();
    p->how = "none";
    return {};
  }
  return plan_from_launcher(a, cfg, l ? &*l : nullptr, p);
}

// ---- consistency

std::map<std::string, std::string> parse_fields(const std::string& text) {
  std::map<std::string, std::string> m;
  std::istringstream in(text);
  std::string item;
  while (in >> item) {
    size_t eq = item.find('=');
    if (eq != std::string::npos) m[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return m;
}

}  // namespace

// ------------------------------------------------------------------------------------------

Runtime::Impl::Impl(const InitOptions& opts, ErrorMode mode)
    : Impl(
          [&] {
            InitAttr a;
            a.heap_size = opts.heap_size;
            a.instance_id = static_cast<uint64_t>(opts.instance);
            return a;
          }(),
          mode) {}

// A PE that hosts the store and cannot complete init keeps the store up until the other
// PEs have left (or a few seconds), so that each of them reports its own view of what went
// wrong instead of only "connection closed".
void Runtime::Impl::linger_as_store_host() {
  if (!rendezvous_file_.empty()) ::unlink(rendezvous_file_.c_str());
  rendezvous_file_.clear();
  if (!hosted_store_) return;
  if (live_) {  // the ready barrier failed: the others report their own view, not this PE's end
    live_->leave();
    live_.reset();
  }
  epoch_store_.reset();
  store_.reset();
  Deadline d = deadline_after(3.0);
  while (hosted_store_->connections() > 0 && Clock::now() < d)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

Runtime::Impl::Impl(const InitAttr& attr, ErrorMode mode) : mode_(mode) {
  // 1. configuration
  auto cfg = Config::from_env();
  if (!cfg.ok()) fail(cfg.status().code(), "init", "%s", cfg.status().message().c_str());
  cfg_ = *cfg;
  apply_init_attr(attr, &cfg_);
  LogLevel lvl;
  if (cfg_.debug) set_log_level(LogLevel::kDebug);
  else if (parse_log_level(cfg_.log_level.c_str(), &lvl)) set_log_level(lvl);
  instance_id_ = attr.instance_id;
  commit_policy_.margin = cfg_.commit_margin;
  commit_policy_.enabled = cfg_.commit_check;
  commit_policy_.shm_dir = cfg_.heap_dir;
  commit_policy_.cgroup = find_memory_cgroup();
  if (auto m = commit_margin(cfg_.commit_margin, NodeMemory{}); !m.ok())
    fail(m.status().code(), "init", "%s", m.status().message().c_str());
  // The engine (aclshmem's MTE = shm, ROCE = ucx): the init attribute, else SYMMEM_TRANSPORT.
  const std::string transport = cfg_.transport;
  if (transport != "auto" && transport != "shm" && transport != "ucx")
    fail(Errc::kInvalidArgument, "init", "transport '%s' is not one of auto, shm, ucx (SYMMEM_TRANSPORT)",
         transport.c_str());

  // 2. who am I, where is the store
  JoinPlan plan;
  if (Status s = plan_join(attr, cfg_, &plan); !s.ok()) fail(s.code(), "init", "%s", s.message().c_str());
  rank_ = plan.rank;
  npes_ = plan.npes;
  env_.rank = rank_;
  env_.npes = npes_;
  env_.store = plan.store;
  env_.magic = plan.sec.magic;
  env_.security = plan.sec;
  env_.job_id = plan.job_id;
  env_.from_launcher = plan.from_launcher;
  dfx_.init(this, cfg_, rank_, npes_);  // after the job id: the trace's ring is named by it
  if (instance_id_ == 0) set_log_pe(rank_);
  if (plan.how == "none") log_pe(LogLevel::kInfo, rank_, "no launcher found: running as a 1-PE job");
  if (rank_ == 0 && instance_id_ == 0) announce_config(cfg_);

  // 3. the store
  hosted_store_ = std::move(plan.hosted);
  if (npes_ > 1 && plan.sec.mode == StoreSecurity::Mode::kPlain)
    log_pe(LogLevel::kWarn, rank_, "the bootstrap store runs without TLS (switched off explicitly): its traffic is "
           "not encrypted and anyone who can reach it and learn the magic can join the job");
  if (plan.host_at && npes_ > 1) {
    auto srv = TcpStoreServer::start(plan.host_at->host, plan.host_at->port, plan.sec);
    if (!srv.ok()) {
      std::string hint = srv.status().message().find("Address already in use") != std::string::npos
                             ? " (is another process PE 0 of this job too? then the launcher's variables are "
                               "inconsistent; or the port is taken: choose another with SYMMEM_STORE)"
                             : "";
      fail(srv.status().code(), "init", "PE 0 cannot host the job's store at %s: %s%s",
           plan.host_at->to_url().c_str(), srv.status().message().c_str(), hint.c_str());
    }
    hosted_store_ = std::move(srv).value();
    StoreAddress at{plan.host_at->host == "0.0.0.0" || plan.host_at->host.empty() ? "127.0.0.1" : plan.host_at->host,
                    hosted_store_->port()};
    if (!plan.store) plan.store = at;
    if (!plan.rendezvous.empty()) {
      Status s = publish_rendezvous(plan.rendezvous, at, plan.sec);
      if (!s.ok()) fail(s.code(), "init", "%s", s.message().c_str());
      rendezvous_file_ = plan.rendezvous;
    }
  }
  if (npes_ > 1) {
    if (!plan.store) fail(Errc::kInternal, "init", "no store address for a %d-PE job", npes_);
    auto c = TcpStoreClient::connect(*plan.store, plan.sec, rank_, cfg_.init_timeout);
    if (!c.ok())
      fail(c.status().code(), "init", "PE %d cannot join the job's store (started by %s): %s", rank_,
           plan.how.c_str(), c.status().message().c_str());
    store_ = std::move(c).value();
  }

  // Every init of an instance in a job (shmem_init after shmem_finalize) uses keys of its
  // own: its epoch, counted per PE in the store (all PEs init the same number of times).
  std::string inst = "init/i" + std::to_string(instance_id_);
  std::string me_text;
  {
    char host[64] = {0};
    ::gethostname(host, sizeof(host) - 1);
    me_text = std::string(host) + ":" + std::to_string(::getpid());
  }
  if (store_) {
    auto epoch = store_->add(inst + "/epochs/" + std::to_string(rank_), 1);
    if (!epoch.ok()) init_failed(epoch.status().code(), epoch.status().message());
    const std::string owner = inst + "/owner/" + std::to_string(rank_);
    if (*epoch == 1) {
      if (Status s = store_->set(owner, me_text); !s.ok()) init_failed(s.code(), s.message());
    } else {
      auto first = store_->get(owner, cfg_.init_timeout);
      if (first.ok() && *first != me_text)
        init_failed(Errc::kMismatch, "process " + me_text + " joins as PE " + std::to_string(rank_) + " but " +
                                         *first + " has already joined as PE " + std::to_string(rank_) +
                                         ": two processes believe they are PE " + std::to_string(rank_) +
                                         " (the launcher's variables are inconsistent, or the same my_pe was given "
                                         "twice)");
    }
    inst += "/e" + std::to_string(*epoch);
    epoch_store_ = std::make_unique<PrefixStore>("e" + std::to_string(*epoch), *store_);
  }

  HeapParams hp;
  hp.rank = rank_;
  hp.npes = npes_;
  hp.job_id = plan.job_id;
  job_id_ = plan.job_id;
  hp.instance = static_cast<int>(instance_id_);
  hp.heap_size = cfg_.symmetric_size;
  hp.meta_size = cfg_.metadata_size;
  hp.commit_chunk = cfg_.commit_chunk;
  hp.dir = cfg_.heap_dir;
  hp.timeout_s = cfg_.init_timeout;
  hp.commit_policy = &commit_policy_;

  // 4. consistency: what each PE believes, compared with PE 0 first (a PE that thinks
  // the job is bigger or smaller learns it at once), then among all.
  if (store_) {
    const char* fake = std::getenv("SYMMEM_TEST_LIBRARY_VERSION");  // tests of the check only
    char host[64] = {0};
    ::gethostname(host, sizeof(host) - 1);
    std::string mine = std::string("version=") + (fake ? fake : SYMMEM_LIBRARY_VERSION) +
                       " npes=" + std::to_string(npes_) + " heap=" + format_size(hp.heap_size) +
                       " start=" + [&] {
                         std::string h = plan.how;
                         for (char& ch : h)
                           if (ch == ' ') ch = '_';
                         return h;
                       }() + " host=" + host + " pid=" + std::to_string(::getpid()) +
                       " cg=" + std::to_string(cgroup_identity(commit_policy_.cgroup)) +
                       " cpus=" + allowed_cpus_text() +
                       " node=" + this_node_id(cfg_, transport, rank_);
    const std::string tag = inst + "/info";
    if (Status s = store_->set(tag + "/" + std::to_string(rank_), mine); !s.ok()) init_failed(s.code(), s.message());
    auto pe0 = store_->get(tag + "/0", cfg_.init_timeout);
    if (!pe0.ok() && pe0.status().code() != Errc::kTimeout) init_failed(pe0.status().code(), pe0.status().message());
    if (pe0.ok()) {
      auto f0 = parse_fields(*pe0), me = parse_fields(mine);
      if (f0["npes"] != me["npes"])
        init_failed(Errc::kMismatch, "the PE count differs: this PE (PE " + std::to_string(rank_) + ", started by " +
                    plan.how + ") believes the job has " + me["npes"] + " PEs, PE 0 (" + f0["host"] + ", pid " +
                    f0["pid"] + ") believes " + f0["npes"]);
    }
    auto all = store_allgather(*store_, tag, rank_, npes_, mine, cfg_.init_timeout);
    if (all.ok()) all_info_ = *all;
    if (!all.ok()) {
      std::string msg = all.status().message();
      if (all.status().code() == Errc::kTimeout)
        msg += " (SYMMEM_INIT_TIMEOUT): never started, crashed, or cannot reach the store at " +
               plan.store->to_url();
      init_failed(all.status().code(), msg);
    }
    auto me = parse_fields(mine);
    // The PEs of this machine commit the same amounts at the same moments; those of its
    // cgroup are charged to the same limit.
    commit_policy_.node_pes = commit_policy_.cgroup_pes = 0;
    std::vector<uint64_t> host_cpus;  // the union of this machine's PEs' CPUs
    for (int pe = 0; pe < npes_; ++pe) {
      auto f = parse_fields((*all)[pe]);
      pe_where_.push_back(f["host"] + ":" + f["pid"]);
      if (f["host"] != me["host"]) continue;
      if (commit_policy_.node_pes++ == 0) node_first_pe_ = pe;
      if (f["cg"] == me["cg"]) ++commit_policy_.cgroup_pes;
      std::istringstream words(f["cpus"]);
      std::string word;
      for (size_t w = 0; std::getline(words, word, '.'); ++w) {
        if (host_cpus.size() <= w) host_cpus.resize(w + 1);
        host_cpus[w] |= std::strtoull(word.c_str(), nullptr, 16);
      }
    }
    host_cpus_ = 0;
    for (uint64_t w : host_cpus) host_cpus_ += __builtin_popcountll(w);
    std::string report;
    for (const char* field : {"version", "npes", "heap"}) {
      std::map<std::string, std::vector<int>> by_value;
      for (int pe = 0; pe < npes_; ++pe) by_value[parse_fields((*all)[pe])[field]].push_back(pe);
      if (by_value.size() < 2) continue;
      std::string what = std::string(field) == "version" ? "library version"
                         : std::string(field) == "npes"  ? "PE count"
                                                          : "symmetric heap size";
      report += (report.empty() ? "" : "; ") + what + " differs: ";
      bool first = true;
      for (auto& [value, pes] : by_value) {
        const char* verb = what == "PE count" ? (pes.size() == 1 ? "believes " : "believe ")
                                              : (pes.size() == 1 ? "has " : "have ");
        report += (first ? "" : ", ") + pes_text(pes) + " " + verb + value;
        first = false;
      }
      if (what == "symmetric heap size") report += " (set SHMEM_SYMMETRIC_SIZE / heap_size the same on every PE)";
      if (what == "library version") report += " (every PE must run the same symmem)";
    }
    if (!report.empty())
      init_failed(Errc::kMismatch, "PEs disagree (this is PE " + std::to_string(rank_) + ", version " + me["version"] +
                                       ", heap " + me["heap"] + "): " + report);
  }
  // Routes: PEs of this node share memory, the others are reached through UCX.
  {
    if (store_) {
      for (int pe = 0; pe < npes_; ++pe) node_of_.push_back(parse_fields(all_info_[size_t(pe)])["node"]);
    } else {
      node_of_.push_back(this_node_id(cfg_, transport, rank_));
    }
    std::vector<Route> routes(size_t(npes_), Route::kShm);
    for (int pe = 0; pe < npes_; ++pe) {
      if (node_of_[size_t(pe)] == node_of_[size_t(rank_)]) node_pes_.push_back(pe);
      else routes[size_t(pe)] = Route::kUcx, all_shm_ = false;
    }
    std::map<std::string, int> index;
    for (int pe = 0; pe < npes_; ++pe) {
      auto it = index.emplace(node_of_[size_t(pe)], int(index.size())).first;
      node_index_.push_back(it->second);
    }
    node_count_ = index.size();
    routes_ = RouteTable(std::move(routes));
    route_of_ = routes_.data();
    if (transport == "shm" && !all_shm_)
      init_failed(Errc::kInvalidArgument, "the transport is shm (one node), but the job's PEs are on " +
                                              std::to_string(npes_ - int(node_pes_.size())) +
                                              " PE(s) outside this node (node id " + node_of_[size_t(rank_)] +
                                              "); use transport auto or ucx");
  }

  // 5. the symmetric heap, with room for every PE's copy of the program's globals, which
  // 6. become symmetric (runtime_static.cpp)
  {
    InitOptions so;
    so.instance = static_cast<int>(instance_id_);
    so.heap_size = hp.heap_size;
    hp.static_size = attach_static_data(so);
  }
  if (!all_shm_) {
    hp.map_pe.assign(size_t(npes_), 0);
    for (int pe : node_pes_) hp.map_pe[size_t(pe)] = 1;
  }
  auto heap = SymmetricHeap::create(hp, epoch_store_.get());
  if (!heap.ok()) init_failed(heap.status().code(), heap.status().message());
  heap_ = std::move(heap).value();
  map_static_data(hp.map_pe);
  heap_size_ = heap_->heap_size();
  my_heap_ = reinterpret_cast<uintptr_t>(heap_->my_heap());
  alloc_ = std::make_unique<Allocator>(heap_size_);
  note_node_capacity();
  report_commits_ = plan.how == "symmem-run" && store_ != nullptr;
  if (report_commits_)
    (void)store_->add(kCommittedKey, int64_t(heap_->meta_size() + (static_ ? static_->size() : 0)));
  // 6b. the PEs of other nodes: UCX endpoints and remote keys (runtime/remote.cpp)
  if (!all_shm_) connect_ucx(inst);

  // 7. waiting, metadata; then every PE is ready
  wait_ = make_wait_policy(cfg_, int(node_pes_.size()));
  {
    // copies of at least half the last-level cache stream past it (transport/shm/shm_ops.hpp)
    size_t llc = last_level_cache_bytes();
    shm::stream_copy_min = cfg_.stream_copy > 0 ? size_t(cfg_.stream_copy) : llc ? llc / 2 : size_t(16) << 20;
  }
  {
    // the reduction kernels' instruction set, fixed for the job (every PE of a node picks
    // the same; the kernels give the same bits whichever runs: coll/reduce_ops.hpp)
    const std::string& isa = cfg_.reduce_isa;
    if (isa == "auto") reduce_isa_ = cpu_has_avx2() ? kIsaAvx2 : kIsaBase;
    else if (isa == "base") reduce_isa_ = kIsaBase;
    else if (isa == "avx2" && cpu_has_avx2()) reduce_isa_ = kIsaAvx2;
    else if (isa == "avx2") fail(Errc::kInvalidArgument, "init", "SYMMEM_REDUCE_ISA=avx2, but this CPU has no AVX2");
    else fail(Errc::kInvalidArgument, "init", "SYMMEM_REDUCE_ISA=%s: expected auto, avx2 or base", isa.c_str());
  }
  spin_budget_.store(wait_.spin, std::memory_order_relaxed);
  MetaFixed* m = meta(rank_);
  {
    // The CPUs this PE may run on (taskset, a container's cpuset, mpirun's binding), before
    // it binds itself; all ones when unknown.
    cpu_set_t allowed;
    const bool known = sched_getaffinity(0, sizeof(allowed), &allowed) == 0;
    for (int w = 0; w < 16; ++w) {
      uint64_t bits = 0;
      for (int b = 0; b < 64; ++b)
        if (!known || (w * 64 + b < CPU_SETSIZE && CPU_ISSET(w * 64 + b, &allowed))) bits |= uint64_t(1) << b;
      m->allowed_cpus[w] = bits;
    }
  }
  supervised_ = plan.how == "symmem-run";
  const int cpu = cfg_.bind ? bind_to_cpu() : -1;
  m->cpu_plus_1 = cpu + 1;
  m->heavy_fence = cfg_.asym_fence && heavy_fence_register() ? 1 : 0;
  m->magic = kMetaMagic;
  m->pid = getpid();
  m->rank = rank_;
  dfx_.set_heap(my_heap_, heap_size_, static_start_, static_size_);
  dfx_.attach(&m->dfx, m->pid);
  m->dfx.layout_base = heap_->base();  // for readers in other processes (dfx/hang.hpp)
  m->dfx.heap_size = heap_size_;
  m->dfx.meta_size = heap_->meta_size();
  m->dfx.static_size = static_size_;  // PE p's copy at layout_base + npes*(heap+meta) + p*static_size
  m->dfx.static_start = static_start_;
  failing_word_ = &m->job_failing;
  // Liveness from here on: a PE that dies after this is seen by every other (liveness.hpp).
  if (store_) {
    Liveness::Params lp;
    lp.rank = rank_;
    lp.npes = npes_;
    lp.supervised = supervised_;
    lp.my_word = &m->job_failing;
    for (int pe = 0; pe < npes_; ++pe)
      if (routes_[pe] == Route::kShm) lp.node_words.push_back(&meta(pe)->job_failing);
    lp.where = pe_where_;
    lp.keys = inst + "/live/";
    lp.store_url = plan.store->to_url();
    lp.hosted = hosted_store_.get();
#if SYMMEM_DFX_HOOKS
    if (!dfx_.hooks_.empty()) lp.last_words = [this](int failed_pe) { dfx_.job_ending(failed_pe); };
#endif
    auto l = Liveness::start(std::move(lp), *store_, *plan.store, plan.sec, cfg_.init_timeout);
    if (!l.ok()) init_failed(l.status().code(), "cannot watch the job's store: " + l.status().message());
    live_ = std::move(l).value();
    if (hosted_store_)
      if (Status s = store_->set(inst + "/live/host", std::to_string(rank_)); !s.ok()) init_failed(s.code(), s.message());
  }
  // Every PE's metadata is initialised before any PE may signal into it.
  if (store_) {
    Status s = store_barrier(*store_, inst + "/ready", rank_, npes_, cfg_.init_timeout);
    if (!s.ok()) init_failed(s.code(), s.message());
    if (auto h = store_->check({inst + "/live/host"}); h.ok() && (*h)[0]) {
      auto v = store_->get(inst + "/live/host", cfg_.init_timeout);
      if (v.ok()) live_->set_store_host(std::atoi(v->c_str()));
    }
  }
  {
    // PEs outnumber the CPUs they may use together (the union of their masks, so that
    // every PE decides the same): syncs take the central algorithm (runtime.cpp).
    unsigned cpus = 0;
    for (int w = 0; w < 16; ++w) {
      uint64_t any = 0;
      for (int pe = 0; pe < npes_; ++pe)
        if (routes_[pe] == Route::kShm) any |= meta(pe)->allowed_cpus[w];  // this node's PEs
      cpus += unsigned(__builtin_popcountll(any));
    }
    central_sync_ = node_pes_.size() > cpus;
    // Light fences only where every PE of the node runs heavy_fence() before it sleeps.
    light_fences_ = store_ != nullptr;
    for (int pe = 0; pe < npes_; ++pe)
      if (routes_[pe] == Route::kShm && !meta(pe)->heavy_fence) light_fences_ = false;
    if (central_sync_) learn_colocation();  // every PE's CPU was published before the ready barrier
    if (npes_ > 1)
      log_pe(LogLevel::kDebug, rank_, "syncs: %s (%d PEs on %u CPUs), %s", central_sync_ ? "central counter" : "dissemination",
             npes_, cpus, light_fences_ ? "arrivals without a fence (membarrier before a sleep)" : "a fence at every arrival");
  }
  if (!rendezvous_file_.empty()) {
    ::unlink(rendezvous_file_.c_str());
    rendezvous_file_.clear();
  }
  if (cfg_.hang_timeout > 0 && !supervised_ && !node_pes_.empty() && node_pes_[0] == rank_ &&
      dfx::tool_seam.watch_hangs)
    hang_watch_ = dfx::tool_seam.watch_hangs(this, cfg_.hang_timeout);
  init_done_ = true;
}

// ------------------------------------------------------------------------------------------
// symmem::UniqueId (public C++ API)

UniqueId UniqueId::create(const std::string& tls) {
  InitAttr a;
  a.tls = tls;
  auto sec = requested_security(a);
  if (!sec.ok()) throw Error(sec.status().code(), "UniqueId::create: " + sec.status().message());
  const char* addr = std::getenv("SYMMEM_BOOTSTRAP_ADDR");
  const char* ifname = std::getenv("SYMMEM_BOOTSTRAP_IFNAME");
  auto where = choose_store_address(addr ? addr : "", ifname ? ifname : "");
  if (!where.ok()) throw Error(where.status().code(), "UniqueId::create: " + where.status().message());
  auto info = create_unique_id(*where, *sec);
  if (!info.ok()) throw Error(info.status().code(), "UniqueId::create: " + info.status().message());
  UniqueId id;
  encode_unique_id(*info, id.bytes.data());
  return id;
}

std::string UniqueId::to_string() const { return unique_id_to_text(bytes.data()); }

UniqueId UniqueId::from_string(const std::string& text) {
  UniqueId id;
  Status s = unique_id_from_text(text, id.bytes.data());
  if (!s.ok()) throw Error(s.code(), s.message());
  auto info = decode_unique_id(id.bytes.data());
  if (!info.ok()) throw Error(info.status().code(), info.status().message());
  return id;
}

std::string UniqueId::store_url() const {
  auto info = decode_unique_id(bytes.data());
  return info.ok() ? info->store.to_url() : std::string();
}

bool UniqueId::empty() const {
  for (uint8_t b : bytes)
    if (b) return false;
  return true;
}

}  // namespace symmem

namespace symmem {

// Heaps are reserved sparsely, so a job whose heaps exceed the node is fine as long as it
// allocates less; the first PE of the node says so once, at info level.
void Runtime::Impl::note_node_capacity() {
  if (rank_ != node_first_pe_) return;
  NodeMemory m = probe_node_memory(commit_policy_.cgroup, commit_policy_.shm_dir);
  auto margin = commit_margin(commit_policy_.margin, m);
  uint64_t mg = margin.ok() ? *margin : 0;
  const int n = commit_policy_.node_pes;
  uint64_t heaps = heap_size_ * uint64_t(n);
  uint64_t can = m.mem_total > mg ? m.mem_total - mg : 0;
  std::string what = "its " + human_size(m.mem_total) + " of memory less " + human_size(mg) +
                     " kept free (SYMMEM_COMMIT_MARGIN)";
  if (m.cgroup_limited) {
    // Only this cgroup's PEs are charged to its limit.
    uint64_t per_pe = (m.cgroup_limit > mg ? m.cgroup_limit - mg : 0) / uint64_t(commit_policy_.cgroup_pes);
    if (per_pe * uint64_t(n) < can) {
      can = per_pe * uint64_t(n);
      what = "the memory cgroup limit of " + human_size(m.cgroup_limit) + " less " + human_size(mg) +
             " kept free (SYMMEM_COMMIT_MARGIN)";
    }
  }
  if (m.shm_known && m.shm_size < can) {
    can = m.shm_size;
    what = "the size of " + m.shm_dir + ", " + human_size(m.shm_size);
  }
  if (m.mem_total == 0 || heaps <= can) return;
  log_pe(LogLevel::kInfo, rank_, "the symmetric heaps of the %d PE(s) on this node (%d x %s) could never all be "
         "committed here: at most %s can be, bounded by %s; allocations beyond that return NULL", n, n,
         human_size(heap_size_).c_str(), human_size(can).c_str(), what.c_str());
}

void Runtime::Impl::init_failed(Errc code, const std::string& msg) {
  std::string m = msg;
  if (!hosted_store_ && (msg.find("connection closed") != std::string::npos ||
                         msg.find("Connection reset") != std::string::npos))
    m += " -- the job's store is gone: the PE hosting it has ended (its own message says why)";
  fail(code, "init", "%s", m.c_str());
}

}  // namespace symmem
