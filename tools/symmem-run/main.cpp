// symmem-run: starts N PEs of a program and supervises them. See docs/launcher.md.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "hang.hpp"
#include "job.hpp"
#include "options.hpp"
#include "program.hpp"

#ifndef SYMMEM_VERSION
#define SYMMEM_VERSION "unknown"
#endif

namespace {

// With 0, 1 or 2 closed, our own pipes could land there and be clobbered by dup2.
void ensure_std_fds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
      int n = open("/dev/null", O_RDWR);
      if (n >= 0 && n != fd) close(n);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace symmem::run;
  ensure_std_fds();
  ParseOutcome parsed = parse_options(argc, argv);
  switch (parsed.action) {
    case ParseAction::kHelp: std::fputs(help_text(), stdout); return 0;
    case ParseAction::kVersion: std::printf("symmem-run (symmem) %s\n", SYMMEM_VERSION); return 0;
    case ParseAction::kUsageError:
      std::fprintf(stderr, "symmem-run: %s\n%s\n", parsed.error.c_str(), usage_line());
      return 2;
    case ParseAction::kStatus: return status_query(parsed.options.status_pid);
    case ParseAction::kRun: break;
  }

  const std::string& name = parsed.options.program[0];
  ProgramLookup prog = find_program(name);
  if (prog.err == ENOENT) {
    bool is_path = name.find('/') != std::string::npos;
    std::fprintf(stderr, "symmem-run: %s: %s\n", name.c_str(),
                 is_path ? "No such file or directory" : "command not found");
    return 127;
  }
  if (prog.err != 0) {
    std::fprintf(stderr, "symmem-run: %s: %s\n", name.c_str(), std::strerror(prog.err));
    return 126;
  }
  return run_job(parsed.options, prog.path);
}
