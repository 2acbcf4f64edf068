// Running one job: start the store, spawn the PEs into one process group, forward their
// output, supervise them, and clean up on every way out.
#pragma once

#include <string>

#include "options.hpp"

namespace symmem::run {

// Runs the job described by `opts` with the program resolved to `exe_path`; returns the
// launcher's exit code (see docs/launcher.md for the table).
int run_job(const Options& opts, const std::string& exe_path);

}  // namespace symmem::run
