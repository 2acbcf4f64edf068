// symmem/error.hpp — the error type of the C++ API.
//
// Public C++ calls that cannot complete throw symmem::Error; its code() says why. The C
// API never throws: it reports and ends the job, or returns the standard's error value.
#pragma once

#include <stdexcept>
#include <string>

#if defined(SYMMEM_BUILDING)
#define SYMMEM_API __attribute__((visibility("default")))
#else
#define SYMMEM_API
#endif

namespace symmem {

enum class Errc {
  kOk = 0,
  kInvalidArgument,  // a bad value from the caller (PE out of range, bad size, ...)
  kTimeout,          // a peer or the store did not answer in time
  kIo,               // a system call failed (socket, shm, mmap)
  kRefused,          // authentication failed or the peer refused us
  kNoMemory,         // the symmetric heap or /dev/shm cannot back the request
  kState,            // the call is not valid now (before init, after finalize)
  kMismatch,         // PEs disagree (collective called with different arguments)
  kInternal,
};

SYMMEM_API const char* errc_name(Errc c);

class SYMMEM_API Error : public std::runtime_error {
 public:
  Error(Errc code, const std::string& what) : std::runtime_error(what), code_(code) {}
  Errc code() const noexcept { return code_; }

 private:
  Errc code_;
};

}  // namespace symmem
