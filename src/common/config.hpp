// The tunable registry: one struct whose fields are generated from tunables.def, read once
// from the environment at init, and described (name, value, default, where the value came
// from, help) for symmem-info and SHMEM_INFO. It also knows every other variable symmem or
// its launchers read, so that a misspelt SYMMEM_* / SHMEM_* name can be named at init.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
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
// A switch the standard defines as "any value" (SHMEM_INFO, SHMEM_DEBUG): set means on,
// unless the value is empty or one of 0, n, no, false, off.
using Flag = bool;
using String = std::string;
}  // namespace tunable_kind

// Where a tunable's value came from.
enum class Source : uint8_t { kDefault, kEnv, kApi };
const char* source_name(Source s);  // "default", "env", "api"

struct Config {
#define SYMMEM_TUNABLE(field, env, kind, def, help) tunable_kind::kind field = def;
#include "common/tunables.def"
#undef SYMMEM_TUNABLE

  // One id per tunable, in the order of tunables.def: Config::Id::symmetric_size.
  enum class Id : int {
#define SYMMEM_TUNABLE(field, env, kind, def, help) field,
#include "common/tunables.def"
#undef SYMMEM_TUNABLE
  };
  static constexpr int kCount = 0
#define SYMMEM_TUNABLE(field, env, kind, def, help) +1
#include "common/tunables.def"
#undef SYMMEM_TUNABLE
      ;

  struct Origin {
    Source source = Source::kDefault;
    std::string from;  // the variable read (SHMEM_X, or its deprecated SMA_X), or the API field
  };
  std::array<Origin, kCount> origin{};

  // An init attribute (InitAttr::heap_size ...) replaced the value: say so in the table.
  void set_by_api(Id id, std::string what) { origin[size_t(id)] = {Source::kApi, std::move(what)}; }

  // Reads every tunable from the environment; a malformed value is an error naming it.
  // A standard SHMEM_X is also read from the deprecated SMA_X when SHMEM_X is unset.
  static Result<Config> from_env();
  // The same, but goes on past a malformed value (keeping its default) and collects every
  // error: symmem-info reports them all.
  static Config from_env_all(std::vector<std::string>* errors);

  struct Entry {
    std::string env, kind, value, default_value, help;
    Source source = Source::kDefault;
    std::string from;  // see Origin
  };
  std::vector<Entry> describe() const;
};

// Case-insensitive: a glob (*, ?, [...]) when `pattern` has one, else a substring. "" matches.
bool name_matches(const std::string& name, const std::string& pattern);

// The table of every tunable whose name matches `filter` (see name_matches): variable,
// kind, value, default, source, meaning. What symmem-info and SHMEM_INFO print.
std::string tunable_table(const Config& c, const std::string& filter = "");

// Variables of symmem that are not tunables: set by symmem-run and other launchers for the
// PEs, read by the Python package, the compiler wrappers or the test drivers.
struct OtherVariable {
  const char* name;
  const char* who;  // who sets or reads it
};
const std::vector<OtherVariable>& other_variables();

// A SYMMEM_* or SHMEM_* variable of the environment that symmem does not know, with the
// known name nearest to it (edit distance, ignoring case), when one is close.
struct UnknownVariable {
  std::string name, suggestion;
  std::string message() const;  // "X is not a symmem variable; did you mean Y?"
};
// `envp`: an environ-style array (nullptr: this process's environ).
std::vector<UnknownVariable> unknown_variables(char** envp = nullptr);
// The known name nearest to `name`, or "" when none is close enough.
std::string nearest_known_variable(std::string_view name);
bool is_known_variable(std::string_view name);
// Edit distance with adjacent transpositions (optimal string alignment), ignoring case.
size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace symmem
