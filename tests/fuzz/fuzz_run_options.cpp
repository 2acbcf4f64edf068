// libFuzzer target: symmem-run's command line. The input is split at NUL bytes into the
// words after argv[0]; parse_options must return a usage error or options that hold what
// the launcher relies on (1 <= npes <= 65536, a program to run, a finite timeout >= 0).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "options.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> words{"symmem-run"};
  std::string cur;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      words.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(static_cast<char>(data[i]));
    }
  }
  if (size) words.push_back(cur);
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);

  using symmem::run::ParseAction;
  auto out = symmem::run::parse_options(static_cast<int>(words.size()), argv.data());
  bool bad = false;
  if (out.action == ParseAction::kRun) {
    const auto& o = out.options;
    bad = o.npes < 1 || o.npes > (1 << 16) || o.program.empty() || !std::isfinite(o.timeout_s) || o.timeout_s < 0;
    for (const auto& [name, value] : o.env) bad = bad || name.empty() || name.find('=') != std::string::npos;
  } else if (out.action == ParseAction::kUsageError) {
    bad = out.error.empty();
  }
  if (bad) {
    std::fprintf(stderr, "fuzz_run_options: parse_options broke its contract\n");
    std::abort();
  }
  return 0;
}
