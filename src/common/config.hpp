// The tunable registry: one struct whose fields are generated from tunables.def, read once
// from the environment at init, and described (name, value, default, help) for symmem-info.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.hpp"

namespace symmem {

// Parses "512M", "2G", "1.5g", "4096", "64k" (binary units). Rejects junk, negatives,
// overflow.
Result<uint64_t> parse_size(const std::string& text);
std::string format_size(uint64_t bytes);
Result<bool> parse_bool(const std::string& text);

namespace tunable_kind {
using Size = uint64_t;
using Int = int64_t;
using Double = double;
using Bool = bool;
using String = std::string;
}  // namespace tunable_kind

struct Config {
#define SYMMEM_TUNABLE(field, env, kind, def, help) tunable_kind::kind field = def;
#include "common/tunables.def"
#undef SYMMEM_TUNABLE

  // Reads every tunable from the environment; a malformed value is an error naming it.
  static Result<Config> from_env();

  struct Entry {
    std::string env, kind, value, default_value, help;
  };
  std::vector<Entry> describe() const;
};

}  // namespace symmem
