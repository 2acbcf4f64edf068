// symmem-info: what this build of symmem is, what it finds on this node, and every setting
// it reads with its value and where that value came from (docs/dfx.md, "symmem-info").
//
//   symmem-info                  build, routes, node, every tunable, the other variables
//   symmem-info -F PATTERN       only the variables whose names match (substring or glob)
//   symmem-info --json           the same as one JSON object, "schema":"symmem-info/1"
//   symmem-info --check [-n N]   environment doctor: exit 1 with one line per problem
//   symmem-info --ucx            also UCX's own listing of the devices it would use
#include <sys/types.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "facts.hpp"
#include "heap/node_memory.hpp"
#include "transport/ucx/ucx_transport.hpp"

namespace symmem::info {
namespace {

constexpr const char* kUsage =
    "usage: symmem-info [--json] [-F PATTERN] [--check [-n N]] [--ucx]\n"
    "Prints this build of symmem, the routes and the node it finds, and every variable it reads:\n"
    "value, default, where the value came from (default, env, api) and what it means.\n"
    "  -F PATTERN  only the variables whose names contain PATTERN (or match it, with * ? [..])\n"
    "  --json      one JSON object (\"schema\": \"symmem-info/1\")\n"
    "  --check     check the environment: /dev/shm and memory against SHMEM_SYMMETRIC_SIZE x the\n"
    "              PEs of this node, the PEs against the CPUs they may use, misspelt or malformed\n"
    "              SYMMEM_*/SHMEM_* variables; exit 1 with one line per problem\n"
    "  -n N        --check: N PEs on this node (default: from the launcher's environment)\n"
    "  --ucx       also list the UCX devices and transports it would use\n";

struct Options {
  bool json = false, check = false, ucx = false;
  std::string filter;
  int npes = -1;
};

// ---------------------------------------------------------------------------------- JSON

std::string jstr(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += char(c);
    else if (c == '\n') o += "\\n";
    else if (c == '\t') o += "\\t";
    else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else o += char(c);
  }
  return o + "\"";
}

// A tunable's value as JSON of its kind (a size in bytes, a number, a boolean, a string).
std::string jvalue(const std::string& kind, const std::string& text) {
  if (kind == "Size") {
    auto r = parse_size(text);
    return r.ok() ? std::to_string(*r) : jstr(text);
  }
  if (kind == "Int" || kind == "Double") return text;
  if (kind == "Bool" || kind == "Flag") return text == "true" ? "true" : "false";
  return jstr(text);
}

struct Obj {  // {"k": v, ...} built in order
  std::string s;
  Obj& raw(const char* k, const std::string& v) {
    s += (s.empty() ? "" : ", ") + jstr(k) + ": " + v;
    return *this;
  }
  Obj& str(const char* k, const std::string& v) { return raw(k, jstr(v)); }
  Obj& num(const char* k, double v) {
    char b[64];
    std::snprintf(b, sizeof b, "%.17g", v);
    return raw(k, b);
  }
  Obj& u64(const char* k, uint64_t v) { return raw(k, std::to_string(v)); }
  Obj& boolean(const char* k, bool v) { return raw(k, v ? "true" : "false"); }
  std::string done() const { return "{" + s + "}"; }
};

std::string jarray(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string o = "[";
  for (size_t i = 0; i < items.size(); ++i) o += (i ? sep : "") + items[i];
  return o + "]";
}

// ---------------------------------------------------------------------------------- check

struct Check {
  int npes = 1;
  std::string npes_from;
  std::vector<std::string> problems;
  std::vector<std::string> notes;
};

// The PEs of this node: -n, else what the launcher's environment says.
void pes_on_node(const Options& o, Check* c) {
  if (o.npes > 0) {
    c->npes = o.npes, c->npes_from = "-n";
    return;
  }
  for (const char* v : {"SYMMEM_NPES", "OMPI_COMM_WORLD_LOCAL_SIZE", "LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE",
                        "MPI_LOCALNRANKS"}) {
    const char* e = std::getenv(v);
    char* end = nullptr;
    long n = e ? std::strtol(e, &end, 10) : 0;
    if (e && end != e && *end == 0 && n > 0) {
      c->npes = int(n), c->npes_from = v;
      return;
    }
  }
  c->npes = 1, c->npes_from = "assumed: give -n N";
}

Check run_check(const Options& o, const Config& cfg, const std::vector<std::string>& errors,
                const std::vector<UnknownVariable>& unknown, const NodeFacts& node) {
  Check c;
  pes_on_node(o, &c);
  for (const auto& e : errors) c.problems.push_back(e + ": init would stop here; correct the value");
  for (const auto& u : unknown) c.problems.push_back(u.message() + (u.suggestion.empty() ? "" : " (rename it)"));
  const auto& origin = cfg.origin[size_t(Config::Id::symmetric_size)];
  const uint64_t heap = cfg.symmetric_size;
  const long double want = (long double)heap * c.npes;
  const std::string ask = "SHMEM_SYMMETRIC_SIZE=" + format_size(heap) + " x " + std::to_string(c.npes) +
                          " PE(s) on this node = " + human_size(uint64_t(std::min(want, 1.8e19L)));
  if (origin.source != Source::kDefault) {
    if (node.shm_known && want > node.shm_free)
      c.problems.push_back(ask + ", but /dev/shm has " + human_size(node.shm_free) + " free (of " +
                           human_size(node.shm_size) + "): set SHMEM_SYMMETRIC_SIZE to at most " +
                           format_size(node.shm_free / uint64_t(c.npes) / (1 << 20) << 20) +
                           ", run fewer PEs per node, or enlarge /dev/shm (mount -o remount,size=... /dev/shm; "
                           "docker --shm-size)");
    if (node.cgroup_limited && want > node.cgroup_limit)
      c.problems.push_back(ask + ", but the memory cgroup " + node.cgroup_dir + " is limited to " +
                           human_size(node.cgroup_limit) + ": set SHMEM_SYMMETRIC_SIZE to at most " +
                           format_size(node.cgroup_limit / uint64_t(c.npes) / (1 << 20) << 20) +
                           " or raise the job's memory limit");
  } else if (node.shm_known && want > node.shm_free) {
    c.notes.push_back("the default heap (" + format_size(heap) + " per PE) is reserved sparsely: " +
                      human_size(node.shm_free) + " free in /dev/shm is what " + std::to_string(c.npes) +
                      " PE(s) can commit together; allocations beyond it return NULL");
  }
  const int cpus = node.usable_cpus();
  if (c.npes > cpus) {
    std::string why = std::to_string(node.cpus_allowed) + " allowed to this process (CPUs " + node.cpus_list + ")";
    if (node.cpu_quota > 0 && cpus < node.cpus_allowed) {
      char q[32];
      std::snprintf(q, sizeof q, "%.2f", node.cpu_quota);
      why = "a CPU quota of " + std::string(q) + " (" + node.cpu_quota_from + ")";
    }
    c.problems.push_back(std::to_string(c.npes) + " PEs on this node (" + c.npes_from + ") but only " +
                         std::to_string(cpus) + " CPU(s) to run them: " + why +
                         "; the PEs share cores (waits yield and sleep, so the job runs, slower): run at most " +
                         std::to_string(cpus) + " PEs per node, or give the job more CPUs (taskset, cpuset, quota)");
  }
  return c;
}

// ---------------------------------------------------------------------------------- output

void print_text(const Options& o, const BuildFacts& b, const std::vector<RouteFacts>& routes, const NodeFacts& n,
                const Config& cfg, const std::vector<std::string>& errors, const std::vector<UnknownVariable>& unknown) {
  if (o.filter.empty()) {
    std::printf("symmem %s (OpenSHMEM %s)\n\n", b.version.c_str(), b.openshmem.c_str());
    std::printf("build\n");
    std::printf("  compiler    %s\n", b.compiler.c_str());
    std::printf("  build type  %s\n", b.build_type.c_str());
    std::printf("  sanitizer   %s\n", b.sanitizer.c_str());
    if (!b.git.empty()) std::printf("  source      %s (at configure)\n", b.git.c_str());
    std::printf("  UCX         %s\n", b.ucx.c_str());
    std::printf("  TLS         %s (the bootstrap store: TLS 1.3, PSK from the job secret, by default)\n\n",
                b.tls.c_str());
    std::printf("routes\n");
    for (const auto& r : routes) {
      std::printf("  %-4s %-10s %s\n", r.name.c_str(), r.usable ? "usable" : "NOT USABLE", r.reaches.c_str());
      std::printf("  %-4s %-10s %s\n", "", "", r.detail.c_str());
      if (!r.transports.empty()) {
        std::string t;
        for (const auto& x : r.transports) t += (t.empty() ? "" : " ") + x;
        std::printf("  %-4s %-10s transports/devices: %s\n", "", "", t.c_str());
      }
    }
    std::printf("\nnode\n");
    std::printf("  host        %s\n", n.host.c_str());
    std::string quota = "none";
    if (n.cpu_quota > 0) {
      char q[64];
      std::snprintf(q, sizeof q, "%.2f CPUs", n.cpu_quota);
      quota = std::string(q) + " (" + n.cpu_quota_from + ")";
    }
    std::printf("  CPUs        %d online, %d allowed to this process (%s), cgroup CPU quota %s\n", n.cores_online,
                n.cpus_allowed, n.cpus_list.c_str(), quota.c_str());
    std::printf("  memory      %s (%s available), memory cgroup limit %s\n", human_size(n.mem_total).c_str(),
                human_size(n.mem_available).c_str(),
                n.cgroup_limited ? (human_size(n.cgroup_limit) + " (" + n.cgroup_dir + ")").c_str() : "none");
    if (n.shm_known)
      std::printf("  /dev/shm    %s (%s free)\n\n", human_size(n.shm_size).c_str(), human_size(n.shm_free).c_str());
    else
      std::printf("  /dev/shm    not mounted or not readable\n\n");
    std::printf("tunables (SHMEM_INFO=1 prints this table at init; source: default, env, or api = an init attribute)\n");
  }
  std::fputs(tunable_table(cfg, o.filter).c_str(), stdout);
  std::vector<OtherVariable> others;
  for (const auto& v : other_variables())
    if (name_matches(v.name, o.filter)) others.push_back(v);
  if (!others.empty()) {
    std::printf("\nother variables (not tunables: set by launchers, read by the tools around symmem)\n");
    for (const auto& v : others) std::printf("  %-24s %s\n", v.name, v.who);
  }
  if (o.filter.empty())
    std::printf("\nlaunchers' variables read at init: OMPI_COMM_WORLD_RANK/SIZE/LOCAL_SIZE, PMI_RANK/SIZE, "
                "SLURM_PROCID/NTASKS/JOB_ID/STEP_ID, RANK/WORLD_SIZE/LOCAL_WORLD_SIZE/MASTER_ADDR/MASTER_PORT\n");
  if (!errors.empty() || !unknown.empty()) {
    std::printf("\nwarnings\n");
    for (const auto& e : errors) std::printf("  %s (its default is shown; init would stop)\n", e.c_str());
    for (const auto& u : unknown) std::printf("  %s\n", u.message().c_str());
  }
}

void print_json(const Options& o, const BuildFacts& b, const std::vector<RouteFacts>& routes, const NodeFacts& n,
                const Config& cfg, const std::vector<std::string>& errors, const std::vector<UnknownVariable>& unknown,
                const Check* check) {
  Obj top;
  top.str("schema", "symmem-info/1").str("version", b.version).str("openshmem", b.openshmem);
  top.raw("build", Obj()
                       .str("compiler", b.compiler)
                       .str("build_type", b.build_type)
                       .str("sanitizer", b.sanitizer)
                       .str("git", b.git)
                       .str("ucx", b.ucx)
                       .str("tls", b.tls)
                       .done());
  std::vector<std::string> rs;
  for (const auto& r : routes) {
    std::vector<std::string> t;
    for (const auto& x : r.transports) t.push_back(jstr(x));
    rs.push_back(Obj()
                     .str("name", r.name)
                     .boolean("usable", r.usable)
                     .str("reaches", r.reaches)
                     .str("detail", r.detail)
                     .raw("transports", jarray(t))
                     .done());
  }
  top.raw("routes", jarray(rs));
  Obj node;
  node.str("host", n.host).num("cores_online", n.cores_online).num("cpus_allowed", n.cpus_allowed);
  node.str("cpus_list", n.cpus_list).num("cpu_quota", n.cpu_quota).str("cpu_quota_from", n.cpu_quota_from);
  node.u64("mem_total", n.mem_total).u64("mem_available", n.mem_available);
  node.raw("cgroup_memory_limit", n.cgroup_limited ? std::to_string(n.cgroup_limit) : "null");
  node.raw("shm_size", n.shm_known ? std::to_string(n.shm_size) : "null");
  node.raw("shm_free", n.shm_known ? std::to_string(n.shm_free) : "null");
  top.raw("node", node.done());
  std::vector<std::string> ts;
  for (const auto& e : cfg.describe()) {
    if (!name_matches(e.env, o.filter)) continue;
    ts.push_back(Obj()
                     .str("name", e.env)
                     .str("kind", e.kind)
                     .raw("value", jvalue(e.kind, e.value))
                     .raw("default", jvalue(e.kind, e.default_value))
                     .str("source", source_name(e.source))
                     .str("from", e.from)
                     .str("help", e.help)
                     .done());
  }
  top.raw("tunables", jarray(ts, ",\n  "));
  std::vector<std::string> os;
  for (const auto& v : other_variables())
    if (name_matches(v.name, o.filter)) os.push_back(Obj().str("name", v.name).str("who", v.who).done());
  top.raw("other_variables", jarray(os));
  std::vector<std::string> us, es;
  for (const auto& u : unknown)
    us.push_back(Obj().str("name", u.name).raw("suggestion", u.suggestion.empty() ? "null" : jstr(u.suggestion)).done());
  for (const auto& e : errors) es.push_back(jstr(e));
  top.raw("unknown_variables", jarray(us)).raw("errors", jarray(es));
  if (check) {
    std::vector<std::string> ps, ns;
    for (const auto& p : check->problems) ps.push_back(jstr(p));
    for (const auto& p : check->notes) ns.push_back(jstr(p));
    top.raw("check", Obj()
                         .boolean("ok", check->problems.empty())
                         .num("pes_per_node", check->npes)
                         .str("pes_from", check->npes_from)
                         .raw("problems", jarray(ps))
                         .raw("notes", jarray(ns))
                         .done());
  }
  std::printf("%s\n", top.done().c_str());
}

int run(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* what) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "symmem-info: %s needs a value\n%s", what, kUsage);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--check") {
      o.check = true;
    } else if (a == "--ucx") {
      o.ucx = true;
    } else if (a == "-F" || a == "--filter") {
      o.filter = value("-F");
    } else if (a == "-n") {
      std::string v = value("-n");
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (end == v.c_str() || *end || n < 1 || n > 1 << 20) {
        std::fprintf(stderr, "symmem-info: -n %s: expected a positive PE count\n", v.c_str());
        return 2;
      }
      o.npes = int(n);
    } else {
      std::fprintf(stderr, "symmem-info: unknown argument '%s'\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
  std::vector<std::string> errors;
  Config cfg = Config::from_env_all(&errors);
  auto unknown = unknown_variables();
  BuildFacts b = build_facts();
  NodeFacts n = node_facts();
  // The routes cost a UCX start-up: only where they are printed.
  std::vector<RouteFacts> routes;
  if (o.json || (!o.check && o.filter.empty())) routes = route_facts();
  Check check;
  if (o.check) check = run_check(o, cfg, errors, unknown, n);

  if (o.json) {
    print_json(o, b, routes, n, cfg, errors, unknown, o.check ? &check : nullptr);
  } else if (o.check) {
    if (check.problems.empty()) {
      std::printf("symmem-info --check: no problem found (%d PE(s) on this node (%s), %d CPU(s) to run them, heap %s "
                  "per PE (%s))\n",
                  check.npes, check.npes_from.c_str(), n.usable_cpus(), format_size(cfg.symmetric_size).c_str(),
                  source_name(cfg.origin[size_t(Config::Id::symmetric_size)].source));
    } else {
      std::printf("symmem-info --check: %zu problem(s)\n", check.problems.size());
      for (const auto& p : check.problems) std::printf("  %s\n", p.c_str());
    }
    for (const auto& p : check.notes) std::printf("  note: %s\n", p.c_str());
  } else {
    print_text(o, b, routes, n, cfg, errors, unknown);
    if (o.ucx) {
      std::printf("\nUCX resources with this environment (pin UCX_NET_DEVICES across nodes):\n");
      std::fflush(stdout);
      if (!UcxTransport::print_resources(stdout)) std::printf("UCX cannot start here\n");
    }
  }
  std::fflush(stdout);
  return o.check && !check.problems.empty() ? 1 : 0;
}

}  // namespace
}  // namespace symmem::info

int main(int argc, char** argv) { return symmem::info::run(argc, argv); }
