// The verdict harness of the multi-PE GoogleTest programs (tests/mp, tests/p2p), run
// under symmem-run. Every PE runs the same tests in the same order; after each test the
// PEs combine their verdicts out of band, over the bootstrap store (never over the
// collectives under test). Only PE 0 prints the summary; a test failed on any PE fails on
// all, named with the failing PEs, and every PE exits with the combined verdict.
//
// A program's main() names how its PE starts and stops and calls run_all_tests:
//   0 all passed, 1 a test failed on some PE, 2 no launch environment, store or PE,
//   3 the verdict exchange itself failed.
#pragma once

#include <string>

namespace mp {

struct Program {
  // Prefix of the program's messages and of its verdict keys in the store.
  const char* name;
  // Other PEs print each failed assertion to stderr as "[pe N] file:line: summary" (their
  // gtest printer is off); PE 0's printer prints its own.
  bool peer_failures_to_stderr;
  // Starts this PE once the store is connected: sets *me and *npes and returns 0, or
  // prints why not and returns the exit code.
  int (*start)(int* me, int* npes);
  void (*stop)();
};

// InitGoogleTest, store, start, the tests with a combined verdict each, stop.
int run_all_tests(int argc, char** argv, const Program& program);

// Combines a per-PE verdict (true = passed) across PEs out of band; *failing (if given)
// gets the comma-separated list of the PEs that did not pass.
bool all_passed(bool mine, std::string* failing);

}  // namespace mp
