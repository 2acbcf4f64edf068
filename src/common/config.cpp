#include "common/config.hpp"

#include <fnmatch.h>
#include <strings.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace symmem {

Result<uint64_t> parse_size(const std::string& text) {
  if (text.empty()) return Status(Errc::kInvalidArgument, "empty size");
  const char* s = text.c_str();
  char* end = nullptr;
  errno = 0;
  if (text[0] == '-') return Status(Errc::kInvalidArgument, "negative size '" + text + "'");
  double v = std::strtod(s, &end);
  if (end == s || errno != 0 || !std::isfinite(v) || v < 0)
    return Status(Errc::kInvalidArgument, "not a size: '" + text + "'");
  uint64_t mult = 1;
  std::string suffix(end);
  if (!suffix.empty()) {
    char c = static_cast<char>(std::tolower(suffix[0]));
    std::string rest = suffix.substr(1);
    if (c == 'k') mult = 1ull << 10;
    else if (c == 'm') mult = 1ull << 20;
    else if (c == 'g') mult = 1ull << 30;
    else if (c == 't') mult = 1ull << 40;
    else if (c == 'b' && rest.empty()) mult = 1;
    else return Status(Errc::kInvalidArgument, "unknown size suffix in '" + text + "'");
    if (!rest.empty() && strcasecmp(rest.c_str(), "b") != 0 && strcasecmp(rest.c_str(), "ib") != 0)
      return Status(Errc::kInvalidArgument, "unknown size suffix in '" + text + "'");
  }
  long double bytes = static_cast<long double>(v) * mult;
  if (bytes > 1.8e19L) return Status(Errc::kInvalidArgument, "size too large: '" + text + "'");
  if (mult == 1 && std::floor(v) != v)
    return Status(Errc::kInvalidArgument, "fractional byte count '" + text + "'");
  return static_cast<uint64_t>(bytes);
}

std::string format_size(uint64_t b) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (u < 4 && b >= 1024 && b % 1024 == 0) {
    b /= 1024;
    ++u;
  }
  return std::to_string(b) + units[u];
}

Result<bool> parse_bool(const std::string& t) {
  for (const char* y : {"1", "y", "yes", "true", "on"})
    if (strcasecmp(t.c_str(), y) == 0) return true;
  for (const char* n : {"0", "n", "no", "false", "off", ""})
    if (strcasecmp(t.c_str(), n) == 0) return false;
  return Status(Errc::kInvalidArgument, "not a boolean: '" + t + "'");
}

namespace {

Status read_value(const std::string& env, const std::string& text, uint64_t* out, const char*) {
  auto r = parse_size(text);
  if (!r.ok()) return Status(Errc::kInvalidArgument, env + ": " + r.status().message());
  *out = *r;
  return {};
}
Status read_value(const std::string& env, const std::string& text, int64_t* out, const char*) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != 0 || errno)
    return Status(Errc::kInvalidArgument, env + ": not an integer: '" + text + "'");
  *out = v;
  return {};
}
Status read_value(const std::string& env, const std::string& text, double* out, const char*) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != 0 || !std::isfinite(v))
    return Status(Errc::kInvalidArgument, env + ": not a number: '" + text + "'");
  *out = v;
  return {};
}
Status read_value(const std::string& env, const std::string& text, bool* out, const char* kind) {
  if (std::strcmp(kind, "Flag") == 0) {  // the standard's "any value"
    auto r = parse_bool(text);
    *out = !r.ok() || *r;  // "" is off, as unset
    return {};
  }
  auto r = parse_bool(text);
  if (!r.ok()) return Status(Errc::kInvalidArgument, env + ": " + r.status().message());
  *out = *r;
  return {};
}
Status read_value(const std::string&, const std::string& text, std::string* out, const char*) {
  *out = text;
  return {};
}

std::string show(uint64_t v) { return format_size(v); }
std::string show(int64_t v) { return std::to_string(v); }
std::string show(double v) {
  std::string s = std::to_string(v);
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}
std::string show(bool v) { return v ? "true" : "false"; }
std::string show(const std::string& v) { return v; }

// The deprecated SMA_X of a standard SHMEM_X (the spec still honours it; SHMEM_X wins).
std::string sma_alias(const char* env) {
  return std::strncmp(env, "SHMEM_", 6) == 0 ? std::string("SMA_") + (env + 6) : std::string();
}

// The variable a tunable is read from, or nullptr.
const char* lookup(const char* env, std::string* from) {
  if (const char* v = std::getenv(env)) {
    *from = env;
    return v;
  }
  std::string alias = sma_alias(env);
  if (!alias.empty())
    if (const char* v = std::getenv(alias.c_str())) {
      *from = alias;
      return v;
    }
  return nullptr;
}

Config read_env(std::vector<std::string>* errors, bool stop_at_first) {
  Config c;
  std::string from;
#define SYMMEM_TUNABLE(field, env, kind, def, help)                                       \
  if (!(stop_at_first && !errors->empty()))                                               \
    if (const char* e = lookup(env, &from)) {                                             \
      Status s = read_value(from, e, &c.field, #kind);                                    \
      if (s.ok()) c.origin[size_t(Config::Id::field)] = {Source::kEnv, from};              \
      else errors->push_back(s.message());                                                \
    }
#include "common/tunables.def"
#undef SYMMEM_TUNABLE
  return c;
}

}  // namespace

const char* source_name(Source s) {
  switch (s) {
    case Source::kEnv: return "env";
    case Source::kApi: return "api";
    case Source::kDefault: break;
  }
  return "default";
}

Result<Config> Config::from_env() {
  std::vector<std::string> errors;
  Config c = read_env(&errors, true);
  if (!errors.empty()) return Status(Errc::kInvalidArgument, errors.front());
  return c;
}

Config Config::from_env_all(std::vector<std::string>* errors) { return read_env(errors, false); }

std::vector<Config::Entry> Config::describe() const {
  std::vector<Entry> out;
#define SYMMEM_TUNABLE(field, env, kind, def, help)                                                  \
  out.push_back({env, #kind, show(field), show(tunable_kind::kind(def)), help,                         \
                 origin[size_t(Id::field)].source, origin[size_t(Id::field)].from});
#include "common/tunables.def"
#undef SYMMEM_TUNABLE
  // A unique id carries the job's secret: say that it is set, never what it is.
  for (auto& e : out)
    if (e.env == "SYMMEM_UNIQUEID" && !e.value.empty())
      e.value = "(hidden: " + std::to_string(e.value.size()) + " characters)";
  return out;
}

namespace {

std::string upper(std::string_view s) {
  std::string u(s);
  for (char& ch : u) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return u;
}

}  // namespace

bool name_matches(const std::string& name, const std::string& pattern) {
  if (pattern.empty()) return true;
  if (pattern.find_first_of("*?[") != std::string::npos)
    return fnmatch(pattern.c_str(), name.c_str(), FNM_CASEFOLD) == 0;
  return upper(name).find(upper(pattern)) != std::string::npos;
}

std::string tunable_table(const Config& c, const std::string& filter) {
  std::vector<Config::Entry> rows;
  for (auto& e : c.describe())
    if (name_matches(e.env, filter)) rows.push_back(std::move(e));
  auto source_text = [](const Config::Entry& e) {
    if (e.source == Source::kDefault) return std::string("default");
    if (e.source == Source::kEnv && e.from == e.env) return std::string("env");
    return std::string(source_name(e.source)) + " " + e.from;
  };
  size_t w[5] = {8, 4, 5, 7, 6};  // the headers' widths
  for (const auto& e : rows) {
    w[0] = std::max(w[0], e.env.size());
    w[1] = std::max(w[1], e.kind.size());
    w[2] = std::max(w[2], std::min<size_t>(e.value.size(), 24));
    w[3] = std::max(w[3], std::min<size_t>(e.default_value.size(), 24));
    w[4] = std::max(w[4], source_text(e).size());
  }
  std::string out;
  auto line = [&](const std::string& a, const std::string& b, const std::string& v, const std::string& d,
                  const std::string& s, const std::string& help) {
    auto pad = [](std::string t, size_t n) {
      if (t.size() < n) t.append(n - t.size(), ' ');
      return t;
    };
    std::string vv = v.empty() ? "''" : v, dd = d.empty() ? "''" : d;
    out += pad(a, w[0]) + "  " + pad(b, w[1]) + "  " + pad(vv, w[2]) + "  " + pad(dd, w[3]) + "  " + pad(s, w[4]) +
           "  " + help + "\n";
  };
  line("variable", "kind", "value", "default", "source", "meaning");
  for (const auto& e : rows) line(e.env, e.kind, e.value, e.default_value, source_text(e), e.help);
  if (rows.empty()) out += "(no variable matches '" + filter + "')\n";
  return out;
}

const std::vector<OtherVariable>& other_variables() {
  static const std::vector<OtherVariable> v = {
      {"SYMMEM_RANK", "symmem-run: this PE's number"},
      {"SYMMEM_NPES", "symmem-run: the job's PE count"},
      {"SYMMEM_STORE_MAGIC", "symmem-run: the job's store magic"},
      {"SYMMEM_STORE_SECRET", "symmem-run: the job's store secret"},
      {"SYMMEM_JOB_ID", "symmem-run: the job's id"},
      {"SYMMEM_TIMEOUT", "Python package: default timeout of blocking calls, seconds"},
      {"SYMMEM_PY_SCRATCH", "Python package: scratch size of its collectives"},
      {"SYMMEM_FINALIZE_TIMEOUT", "Python package: seconds finalize at exit may wait"},
      {"SYMMEM_CC", "oshcc: the C compiler"},
      {"SHMEM_CC", "oshcc: the C compiler"},
      {"SYMMEM_CXX", "oshc++: the C++ compiler"},
      {"SHMEM_CXX", "oshc++: the C++ compiler"},
      {"SYMMEM_RUN", "test drivers: the symmem-run to use"},
      {"SYMMEM_TEST_*", "test programs and drivers: their own variables"},
  };
  return v;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  const std::string x = upper(a), y = upper(b);
  const size_t n = x.size(), m = y.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i)
    for (size_t j = 1; j <= m; ++j) {
      size_t cost = x[i - 1] == y[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && x[i - 1] == y[j - 2] && x[i - 2] == y[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

namespace {

// Names symmem reads: every tunable (and the SMA_ twin of a standard one), then the others.
std::vector<std::string> known_names(bool with_aliases) {
  std::vector<std::string> names;
#define SYMMEM_TUNABLE(field, env, kind, def, help) \
  names.push_back(env);                             \
  if (with_aliases && !sma_alias(env).empty()) names.push_back(sma_alias(env));
#include "common/tunables.def"
#undef SYMMEM_TUNABLE
  for (const auto& o : other_variables())
    if (!std::strchr(o.name, '*')) names.push_back(o.name);
  return names;
}

// Test programs and drivers keep their own variables under this prefix.
constexpr std::string_view kTestPrefix = "SYMMEM_TEST_";

bool ours(std::string_view name) { return name.starts_with("SYMMEM_") || name.starts_with("SHMEM_"); }

}  // namespace

bool is_known_variable(std::string_view name) {
  if (name.starts_with(kTestPrefix)) return true;
  for (const auto& k : known_names(true))
    if (k == name) return true;
  return false;
}

std::string nearest_known_variable(std::string_view name) {
  // How far a misspelling may be: one edit for short names, up to three for long ones
  // (SYMMEM_ for SHMEM_ is two).
  size_t stem = name.size() - std::min(name.size(), name.find('_') + 1);
  size_t limit = stem >= 12 ? 3 : stem >= 5 ? 2 : 1;
  std::string best;
  size_t best_d = limit + 1;
  for (const auto& k : known_names(false)) {
    size_t d = edit_distance(name, k);
    if (d < best_d) best_d = d, best = k;
  }
  return best;
}

std::string UnknownVariable::message() const {
  if (!suggestion.empty()) return name + " is not a symmem variable; did you mean " + suggestion + "?";
  return name + " is not a symmem variable (ignored; symmem-info lists every variable)";
}

std::vector<UnknownVariable> unknown_variables(char** envp) {
  std::vector<UnknownVariable> out;
  for (char** e = envp ? envp : environ; e && *e; ++e) {
    std::string_view kv(*e);
    std::string_view name = kv.substr(0, kv.find('='));
    if (!ours(name) || is_known_variable(name)) continue;
    out.push_back({std::string(name), nearest_known_variable(name)});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

}  // namespace symmem
