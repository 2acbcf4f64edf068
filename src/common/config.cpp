#include "common/config.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <strings.h>

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

Status read_value(const std::string& env, const std::string& text, uint64_t* out) {
  auto r = parse_size(text);
  if (!r.ok()) return Status(Errc::kInvalidArgument, env + ": " + r.status().message());
  *out = *r;
  return {};
}
Status read_value(const std::string& env, const std::string& text, int64_t* out) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != 0 || errno)
    return Status(Errc::kInvalidArgument, env + ": not an integer: '" + text + "'");
  *out = v;
  return {};
}
Status read_value(const std::string& env, const std::string& text, double* out) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != 0 || !std::isfinite(v))
    return Status(Errc::kInvalidArgument, env + ": not a number: '" + text + "'");
  *out = v;
  return {};
}
Status read_value(const std::string& env, const std::string& text, bool* out) {
  auto r = parse_bool(text);
  if (!r.ok()) return Status(Errc::kInvalidArgument, env + ": " + r.status().message());
  *out = *r;
  return {};
}
Status read_value(const std::string&, const std::string& text, std::string* out) {
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

}  // namespace

Result<Config> Config::from_env() {
  Config c;
#define SYMMEM_TUNABLE(field, env, kind, def, help)                      \
  if (const char* e = std::getenv(env)) {                                \
    SYMMEM_RETURN_IF_ERROR(read_value(env, e, &c.field));                \
  }
#include "common/tunables.def"
#undef SYMMEM_TUNABLE
  return c;
}

std::vector<Config::Entry> Config::describe() const {
  std::vector<Entry> out;
#define SYMMEM_TUNABLE(field, env, kind, def, help) \
  out.push_back({env, #kind, show(field), show(tunable_kind::kind(def)), help});
#include "common/tunables.def"
#undef SYMMEM_TUNABLE
  return out;
}

}  // namespace symmem
