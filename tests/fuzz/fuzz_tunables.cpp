// libFuzzer target: the tunables' values as a user writes them in the environment.
// Input: byte 0 picks a tunable (any of tunables.def), the rest is its value. The value
// goes through the real path (setenv + Config::from_env), and through parse_size /
// parse_bool directly, with the round trip parse_size(format_size(v)) == v checked.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/config.hpp"

namespace {

const std::vector<std::string>& names() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> out;
#define SYMMEM_TUNABLE(field, env, kind, def, help) out.push_back(env);
#include "common/tunables.def"
#undef SYMMEM_TUNABLE
    return out;
  }();
  return v;
}

[[noreturn]] void fail(const char* what, const std::string& text) {
  std::fprintf(stderr, "fuzz_tunables: %s for '%s'\n", what, text.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string& env = names()[data[0] % names().size()];
  // An environment value ends at its first NUL.
  std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  text = text.substr(0, text.find('\0'));

  if (auto r = symmem::parse_size(text); r.ok()) {
    auto again = symmem::parse_size(symmem::format_size(*r));
    if (!again.ok() || *again != *r) fail("format_size does not parse back", text);
  } else if (r.status().message().empty()) {
    fail("error without a message", text);
  }
  (void)symmem::parse_bool(text);

  ::setenv(env.c_str(), text.c_str(), 1);
  auto c = symmem::Config::from_env();
  ::unsetenv(env.c_str());
  if (c.ok()) {
    (void)c->describe();
  } else if (c.status().message().find(env) == std::string::npos) {
    fail("error does not name the variable", text);
  }
  return 0;
}
