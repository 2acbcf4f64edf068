// Command-line parsing of symmem-run. Options stop at the first non-option word, which is
// the program; everything after it is the program's own argv. Kept apart from the process
// machinery so the grammar can be read (and checked) on its own.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace symmem::run {

struct Options {
  int npes = 0;
  double timeout_s = 0;  // 0 = no timeout
  double hang_timeout_s = -1;  // --hang-timeout; -1: SYMMEM_HANG_TIMEOUT, else off
  int status_pid = 0;          // --status PID
  bool tag_output = false;
  bool hang_stacks = false;    // --hang-stacks: every live PE's stack in the hang report (gdb)
  int emulate_nodes = 0;  // --emulate-nodes K: SYMMEM_NODE_ID per PE, K blocks of PEs
  std::vector<int> gpus;  // --gpus LIST: the PE with node index i gets SYMMEM_DEVICE=gpus[i % size]
  std::vector<std::pair<std::string, std::string>> env;  // -x VAR=VALUE, in order
  std::vector<std::string> program;                      // program and its arguments
};

enum class ParseAction { kRun, kHelp, kVersion, kStatus, kUsageError };

struct ParseOutcome {
  ParseAction action = ParseAction::kUsageError;
  Options options;
  std::string error;  // for kUsageError: what is wrong, one line, no prefix
};

ParseOutcome parse_options(int argc, char** argv);

// --gpus LIST: "0,1", "0-3", "4-7,0": GPU ordinals in order (a range counts up). False with
// *error ("--gpus: ...") for anything else.
bool parse_gpu_list(const std::string& text, std::vector<int>* out, std::string* error);

// One line: "usage: symmem-run [options] -n N program [args...]".
const char* usage_line();
// The full --help text.
const char* help_text();

}  // namespace symmem::run
