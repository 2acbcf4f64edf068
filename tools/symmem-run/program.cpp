#include "program.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace symmem::run {
namespace {

// 0 if `path` can be executed by us, else the errno that execve would give.
int check_executable(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return errno;
  if (S_ISDIR(st.st_mode)) return EISDIR;
  if (!S_ISREG(st.st_mode)) return EACCES;
  if (access(path.c_str(), X_OK) != 0) return errno;
  return 0;
}

}  // namespace

ProgramLookup find_program(const std::string& name) {
  if (name.empty()) return {"", ENOENT};
  if (name.find('/') != std::string::npos) {
    int err = check_executable(name);
    return {err == 0 ? name : "", err};
  }
  const char* env_path = std::getenv("PATH");
  std::string search = env_path != nullptr ? env_path : "/bin:/usr/bin";
  int remembered = ENOENT;
  size_t start = 0;
  while (start <= search.size()) {
    size_t colon = search.find(':', start);
    if (colon == std::string::npos) colon = search.size();
    std::string dir = search.substr(start, colon - start);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    int err = check_executable(candidate);
    if (err == 0) return {candidate, 0};
    // Like execvp: a file that exists but cannot be run beats "not found".
    if (err != ENOENT && err != ENOTDIR) remembered = err;
    start = colon + 1;
  }
  return {"", remembered};
}

}  // namespace symmem::run
