#include "common/status.hpp"

#include <cstring>

namespace symmem {

const char* errc_name(Errc c) {
  switch (c) {
    case Errc::kOk: return "ok";
    case Errc::kInvalidArgument: return "invalid argument";
    case Errc::kTimeout: return "timeout";
    case Errc::kIo: return "i/o error";
    case Errc::kRefused: return "refused";
    case Errc::kNoMemory: return "out of memory";
    case Errc::kState: return "invalid state";
    case Errc::kMismatch: return "mismatch between PEs";
    case Errc::kInternal: return "internal error";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return std::string(errc_name(code_)) + ": " + msg_;
}

void Status::throw_if_error() const {
  if (!ok()) throw Error(code_, msg_);
}

Status errno_status(Errc code, const std::string& what, int err) {
  return Status(code, what + ": " + std::strerror(err));
}

}  // namespace symmem
