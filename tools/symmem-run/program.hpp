// Finding the program to run, the way execvp(3) does, but before anything is started so
// that "not found" and "not executable" are reported once, by the launcher, with the
// shell's exit codes (127 and 126) instead of once per PE.
#pragma once

#include <string>

namespace symmem::run {

struct ProgramLookup {
  std::string path;  // the file to execve, when err == 0
  int err = 0;       // ENOENT: not found; EACCES, EISDIR, ...: found but cannot be run
};

// A name containing '/' is used as is; otherwise each PATH entry is tried in order (an
// unset PATH means "/bin:/usr/bin", an empty entry the current directory). Like execvp,
// a match that is not executable is skipped but remembered, so that the error is EACCES
// rather than ENOENT when nothing better turns up.
ProgramLookup find_program(const std::string& name);

}  // namespace symmem::run
