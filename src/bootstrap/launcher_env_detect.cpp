// Reading the environment of Open MPI, PMI, Slurm and torchrun (launcher_env_detect.hpp).
#include "bootstrap/launcher_env_detect.hpp"

#include <unistd.h>

#include <cstdlib>
#include <vector>

namespace symmem {
namespace {

const char* get(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

bool parse_nonneg(const char* s, int* out) {
  if (!s || !*s) return false;
  long v = 0;
  for (const char* p = s; *p; ++p) {
    if (*p < '0' || *p > '9' || v > 100000000) return false;
    v = v * 10 + (*p - '0');
  }
  *out = static_cast<int>(v);
  return true;
}

struct Claim {
  LauncherEnv env;
  int local_size = -1;
  const char* local_var = nullptr;
};

// Reads one family: nullopt when its rank variable is absent, an error when it is
// present but unusable.
Result<std::optional<Claim>> read_family(const char* name, const char* rank_var, const char* size_var,
                                         const char* alt_size_var = nullptr) {
  const char* r = get(rank_var);
  if (!r) return std::optional<Claim>();
  const char* s = get(size_var);
  const char* sv = size_var;
  if (!s && alt_size_var) {
    s = get(alt_size_var);
    sv = alt_size_var;
  }
  Claim c;
  c.env.name = name;
  c.env.vars = std::string(rank_var) + "/" + sv;
  if (!s)
    return Status(Errc::kInvalidArgument, std::string(name) + ": " + rank_var + "=" + r + " is set but " + size_var +
                                              " is not; the launcher's environment is incomplete");
  if (!parse_nonneg(r, &c.env.rank))
    return Status(Errc::kInvalidArgument, std::string(name) + ": " + rank_var + "='" + r + "' is not a PE number");
  if (!parse_nonneg(s, &c.env.size) || c.env.size < 1)
    return Status(Errc::kInvalidArgument, std::string(name) + ": " + sv + "='" + s + "' is not a positive PE count");
  if (c.env.rank >= c.env.size)
    return Status(Errc::kInvalidArgument, std::string(name) + ": " + rank_var + "=" + r + " is out of range for " + sv +
                                              "=" + s + " (ranks are 0.." + std::to_string(c.env.size - 1) + ")");
  return std::optional<Claim>(std::move(c));
}

std::string tmp_dir() {
  const char* t = get("TMPDIR");
  return t ? t : "/tmp";
}

}  // namespace

Result<std::optional<LauncherEnv>> detect_launcher_env() {
  std::vector<Claim> claims;
  auto add = [&](Result<std::optional<Claim>> r) -> Status {
    if (!r.ok()) return r.status();
    if (r->has_value()) claims.push_back(std::move(**r));
    return {};
  };
  SYMMEM_RETURN_IF_ERROR(add(read_family("Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")));
  if (!claims.empty() && claims.back().env.name == "Open MPI") {
    Claim& c = claims.back();
    int local = -1;
    if (parse_nonneg(get("OMPI_COMM_WORLD_LOCAL_SIZE"), &local)) {
      c.local_size = local;
      c.local_var = "OMPI_COMM_WORLD_LOCAL_SIZE";
    }
    const char* job = get("OMPI_MCA_ess_base_jobid");
    if (!job) job = get("PMIX_NAMESPACE");
    c.env.job_key = std::string("ompi:") + (job ? job : std::to_string(::getppid()));
    int nodes = 0;
    c.env.single_node = (parse_nonneg(get("OMPI_MCA_orte_num_nodes"), &nodes) && nodes == 1) ||
                        (local >= 0 && local == c.env.size);
    const char* session = get("OMPI_MCA_orte_jobfam_session_dir");
    c.env.rendezvous_dir = session ? session : tmp_dir();
  }
  SYMMEM_RETURN_IF_ERROR(add(read_family("Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_NPROCS")));
  if (!claims.empty() && claims.back().env.name == "Slurm") {
    Claim& c = claims.back();
    const char* job = get("SLURM_JOB_ID");
    const char* step = get("SLURM_STEP_ID");
    c.env.job_key = std::string("slurm:") + (job ? job : "?") + "." + (step ? step : "?");
    int nodes = 0;
    c.env.single_node = parse_nonneg(get("SLURM_STEP_NUM_NODES"), &nodes) ? nodes == 1
                        : parse_nonneg(get("SLURM_NNODES"), &nodes)       ? nodes == 1
                                                                          : false;
    c.env.rendezvous_dir = tmp_dir();
  }
  SYMMEM_RETURN_IF_ERROR(add(read_family("PMI", "PMI_RANK", "PMI_SIZE")));
  if (!claims.empty() && claims.back().env.name == "PMI") {
    Claim& c = claims.back();
    const char* kvs = get("PMI_KVSNAME");
    c.env.job_key = std::string("pmi:") + (kvs ? kvs : std::to_string(::getppid()));
    c.env.rendezvous_dir = tmp_dir();
  }
  SYMMEM_RETURN_IF_ERROR(add(read_family("torchrun", "RANK", "WORLD_SIZE")));
  if (!claims.empty() && claims.back().env.name == "torchrun") {
    Claim& c = claims.back();
    int local = -1;
    if (parse_nonneg(get("LOCAL_WORLD_SIZE"), &local)) {
      c.local_size = local;
      c.local_var = "LOCAL_WORLD_SIZE";
    }
    const char* addr = get("MASTER_ADDR");
    const char* port = get("MASTER_PORT");
    const char* run = get("TORCHELASTIC_RUN_ID");
    c.env.job_key = std::string("torchrun:") + (run ? run : "") + "@" + (addr ? addr : "") + ":" + (port ? port : "");
    if (addr && port) {
      int p = 0;
      if (!parse_nonneg(port, &p) || p < 1 || p >= 65535)
        return Status(Errc::kInvalidArgument, std::string("torchrun: MASTER_PORT='") + port + "' is not a port");
      // torchrun's own store listens on MASTER_PORT; symmem's is the next port.
      std::string host = addr;
      c.env.store = StoreAddress{host.front() == '[' ? host.substr(1, host.size() - 2) : host,
                                 static_cast<uint16_t>(p + 1)};
    }
    c.env.single_node = local >= 0 && local == c.env.size;
    c.env.rendezvous_dir = tmp_dir();
  }
  if (claims.empty()) return std::optional<LauncherEnv>();

  for (const Claim& c : claims) {
    if (c.local_size > c.env.size) {
      std::string what = c.env.size == 1 ? "every process believes it is PE 0 of 1"
                                         : "the job cannot have fewer PEs than one of its nodes";
      return Status(Errc::kInvalidArgument,
                    c.env.name + ": " + c.local_var + "=" + std::to_string(c.local_size) +
                        " processes share this node but " + c.env.vars.substr(c.env.vars.find('/') + 1) + "=" +
                        std::to_string(c.env.size) + ": " + what + "; the launcher's variables are inconsistent");
    }
  }
  const Claim& first = claims.front();
  for (size_t i = 1; i < claims.size(); ++i) {
    const Claim& c = claims[i];
    if (c.env.rank != first.env.rank || c.env.size != first.env.size)
      return Status(Errc::kInvalidArgument,
                    "the launcher's variables disagree: " + first.env.name + " says PE " + std::to_string(first.env.rank) +
                        " of " + std::to_string(first.env.size) + " (" + first.env.vars + ") but " + c.env.name +
                        " says PE " + std::to_string(c.env.rank) + " of " + std::to_string(c.env.size) + " (" +
                        c.env.vars + ")");
  }
  LauncherEnv out = first.env;
  // Another family may know more (torchrun's master address under Slurm, say).
  for (const Claim& c : claims) {
    if (!out.store && c.env.store) out.store = c.env.store;
    out.single_node = out.single_node || c.env.single_node;
  }
  return std::optional<LauncherEnv>(std::move(out));
}

}  // namespace symmem
