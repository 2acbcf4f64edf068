#include "options.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace symmem::run {
namespace {

// Upper bound on -n: each PE costs the launcher two pipes; beyond this the job would not
// fit a single node's process table anyway.
constexpr long kMaxNpes = 1 << 16;

bool parse_npes(const std::string& text, int* out, std::string* error) {
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v < 1) {
    *error = "-n: '" + text + "' is not a positive integer";
    return false;
  }
  if (v > kMaxNpes) {
    *error = "-n: " + text + " PEs is more than the limit of " + std::to_string(kMaxNpes);
    return false;
  }
  *out = static_cast<int>(v);
  return true;
}

bool parse_timeout(const std::string& text, double* out, std::string* error, const char* opt = "--timeout") {
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(v) || v < 0) {
    *error = std::string(opt) + ": '" + text + "' is not a number of seconds >= 0";
    return false;
  }
  *out = v;
  return true;
}

bool valid_env_name(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

// VAR=VALUE sets VAR; a bare VAR passes the launcher's own value (Open MPI's -x VAR),
// which must then exist.
bool parse_env(const std::string& text, Options* opts, std::string* error) {
  size_t eq = text.find('=');
  std::string name = text.substr(0, eq);
  if (!valid_env_name(name)) {
    *error = "-x: '" + text + "' is not VAR=VALUE";
    return false;
  }
  if (eq != std::string::npos) {
    opts->env.emplace_back(name, text.substr(eq + 1));
    return true;
  }
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) {
    *error = "-x: " + name + " has no value here; write -x " + name + "=VALUE";
    return false;
  }
  opts->env.emplace_back(name, value);
  return true;
}

}  // namespace

bool parse_gpu_list(const std::string& text, std::vector<int>* out, std::string* error) {
  constexpr long kMaxOrdinal = 1023;
  auto bad = [&](const std::string& why) {
    *error = "--gpus: '" + text + "' is not a list of GPU ordinals such as 0,1 or 0-3 (" + why + ")";
    return false;
  };
  auto number = [&](const std::string& t, long* v) {
    if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos) return false;
    errno = 0;
    *v = std::strtol(t.c_str(), nullptr, 10);
    return errno == 0 && *v <= kMaxOrdinal;
  };
  std::vector<int> gpus;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t dash = item.find('-');
    long lo = 0, hi = 0;
    if (dash == std::string::npos) {
      if (!number(item, &lo)) return bad("'" + item + "' is not an ordinal 0.." + std::to_string(kMaxOrdinal));
      hi = lo;
    } else {
      if (!number(item.substr(0, dash), &lo) || !number(item.substr(dash + 1), &hi))
        return bad("'" + item + "' is not a range A-B of ordinals 0.." + std::to_string(kMaxOrdinal));
      if (hi < lo) return bad("the range '" + item + "' counts down");
    }
    for (long g = lo; g <= hi; ++g) gpus.push_back(int(g));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  *out = std::move(gpus);
  return true;
}

const char* usage_line() {
  return "usage: symmem-run [--timeout S] [--hang-timeout S] [--hang-stacks] [--tag-output] [--emulate-nodes K] [--gpus LIST] [-x VAR=VALUE]... -n N program [args...]";
}

const char* help_text() {
  return "usage: symmem-run [options] -n N program [args...]\n"
         "\n"
         "Starts N processing elements (PEs) of program, hosts the job's bootstrap store,\n"
         "forwards their output and supervises them: when one PE fails the others are\n"
         "stopped and symmem-run exits with the failing PE's code.\n"
         "\n"
         "options (they end at the first word that is not an option, or at --):\n"
         "  -n, -np, --npes N     number of PEs (required)\n"
         "  --timeout S           end the job after S seconds (fractions allowed; 0 = never)\n"
         "                        and exit with 124, after a hang report (docs/dfx.md)\n"
         "  --hang-timeout S      when every PE has waited in the library with nothing moving\n"
         "                        for S seconds: hang report, end the job, exit with 124\n"
         "                        (default: SYMMEM_HANG_TIMEOUT; 0 = never)\n"
         "  --hang-stacks         add each live PE's stack to the hang report (gdb -p; the PE\n"
         "                        stops for the moment gdb needs)\n"
         "  --status PID          print a live hang report of the job that symmem-run PID runs\n"
         "                        (kill -USR1 PID prints one on that job's stderr)\n"
         "  --tag-output          prefix every output line with \"[pe N] \"\n"
         "  --emulate-nodes K     split the PEs into K emulated nodes (blocks of consecutive\n"
         "                        PEs, SYMMEM_NODE_ID=emu<k>): PEs of other blocks are reached\n"
         "                        through UCX as if on other hosts\n"
         "  --gpus LIST           bind the PEs to GPUs: the PE with index i on its node gets\n"
         "                        SYMMEM_DEVICE=LIST[i mod len(LIST)], the ordinal as CUDA\n"
         "                        numbers the visible devices; LIST: 0,1 or 0-3 or 4-7,0\n"
         "                        (without it: node index mod visible GPUs; docs/device.md)\n"
         "  -x, --env VAR=VALUE   set VAR in every PE (a bare VAR passes this shell's value);\n"
         "                        PEs inherit symmem-run's environment in any case\n"
         "  -h, --help            this text\n"
         "  --version             print the version\n"
         "\n"
         "Each PE gets SYMMEM_RANK, SYMMEM_NPES, SYMMEM_STORE, SYMMEM_STORE_MAGIC and\n"
         "SYMMEM_JOB_ID. Exit codes: the first failing PE's code (128+signal if it was\n"
         "killed), 2 bad arguments, 124 timeout, 125 launcher failure, 126 program not\n"
         "executable, 127 program not found, 128+signal when symmem-run was interrupted.\n";
}

ParseOutcome parse_options(int argc, char** argv) {
  ParseOutcome out;
  Options& o = out.options;
  auto fail = [&out](std::string msg) {
    out.action = ParseAction::kUsageError;
    out.error = std::move(msg);
    return out;
  };

  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.empty() || arg[0] != '-' || arg == "-") break;  // the program

    // Split "--opt=value"; short options take their value from the next word or, for
    // -n and -x, from the rest of the word ("-n4").
    std::string name = arg, inline_value;
    bool has_inline = false;
    if (arg.rfind("--", 0) == 0) {
      size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        name = arg.substr(0, eq);
        inline_value = arg.substr(eq + 1);
        has_inline = true;
      }
    } else if (arg != "-np" && arg.size() > 2 && (arg[1] == 'n' || arg[1] == 'x')) {
      name = arg.substr(0, 2);
      inline_value = arg.substr(2);
      has_inline = true;
    }
    auto value = [&](std::string* v) {
      if (has_inline) {
        *v = inline_value;
        return true;
      }
      if (i + 1 >= argc) return false;
      *v = argv[++i];
      return true;
    };
    auto takes_no_value = [&]() { return !has_inline; };

    std::string v, error;
    if (name == "-n" || name == "-np" || name == "--npes") {
      if (!value(&v)) return fail(name + " needs a number of PEs");
      if (!parse_npes(v, &o.npes, &error)) return fail(error);
    } else if (name == "--timeout") {
      if (!value(&v)) return fail("--timeout needs a number of seconds");
      if (!parse_timeout(v, &o.timeout_s, &error)) return fail(error);
    } else if (name == "--hang-timeout") {
      if (!value(&v)) return fail("--hang-timeout needs a number of seconds");
      if (!parse_timeout(v, &o.hang_timeout_s, &error, "--hang-timeout")) return fail(error);
    } else if (name == "--status") {
      if (!value(&v)) return fail("--status needs the process id of a running symmem-run");
      char* end = nullptr;
      long pid = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || pid < 1 || pid > (1L << 30)) return fail("--status: '" + v + "' is not a process id");
      o.status_pid = int(pid);
      out.action = ParseAction::kStatus;
      return out;
    } else if (name == "-x" || name == "--env") {
      if (!value(&v)) return fail(name + " needs VAR=VALUE");
      if (!parse_env(v, &o, &error)) return fail(error);
    } else if (name == "--emulate-nodes") {
      if (!value(&v)) return fail("--emulate-nodes needs a number of nodes");
      char* end = nullptr;
      long k = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || k < 1 || k > 1000000) return fail("--emulate-nodes: '" + v + "' is not a number of nodes >= 1");
      o.emulate_nodes = int(k);
    } else if (name == "--gpus") {
      if (!value(&v)) return fail("--gpus needs a list of GPU ordinals, such as 0,1 or 0-3");
      if (!parse_gpu_list(v, &o.gpus, &error)) return fail(error);
    } else if (name == "--tag-output" && takes_no_value()) {
      o.tag_output = true;
    } else if (name == "--hang-stacks" && takes_no_value()) {
      o.hang_stacks = true;
    } else if ((name == "-h" || name == "--help") && takes_no_value()) {
      out.action = ParseAction::kHelp;
      return out;
    } else if (name == "--version" && takes_no_value()) {
      out.action = ParseAction::kVersion;
      return out;
    } else {
      return fail("unknown option '" + arg + "'");
    }
  }

  for (; i < argc; ++i) o.program.emplace_back(argv[i]);
  if (o.npes == 0) {
    return fail(o.program.empty() ? "missing -n N and the program to run" : "missing -n N (the number of PEs)");
  }
  if (o.program.empty()) return fail("missing the program to run");
  out.action = ParseAction::kRun;
  return out;
}

}  // namespace symmem::run
