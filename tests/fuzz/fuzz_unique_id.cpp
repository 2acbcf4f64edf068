// libFuzzer target: the unique id in binary form (decode_unique_id, what a program
// receives by MPI_Bcast or a file) and in text form (unique_id_from_text, what arrives in
// SYMMEM_UNIQUEID). Whatever decodes must encode back to an id that decodes the same, and
// a text id must print back as itself (hex digits in lower case).
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bootstrap/unique_id.hpp"

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_unique_id: %s\n", what);
  std::abort();
}

void check_binary(const uint8_t id[symmem::kUniqueIdSize]) {
  auto r = symmem::decode_unique_id(id);
  if (!r.ok()) {
    if (r.status().code() != symmem::Errc::kInvalidArgument) fail("a bad id is not kInvalidArgument");
    return;
  }
  uint8_t again[symmem::kUniqueIdSize];
  symmem::encode_unique_id(*r, again);
  auto r2 = symmem::decode_unique_id(again);
  if (!r2.ok()) fail("a decoded id does not decode after encoding");
  if (r2->store.host != r->store.host || r2->store.port != r->store.port ||
      r2->security.magic != r->security.magic || r2->security.secret != r->security.secret ||
      r2->security.mode != r->security.mode || r2->job_id != r->job_id)
    fail("decode(encode(decode(id))) differs from decode(id)");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t id[symmem::kUniqueIdSize] = {};
  std::memcpy(id, data, size < sizeof(id) ? size : sizeof(id));
  check_binary(id);

  std::string text(reinterpret_cast<const char*>(data), size);
  uint8_t parsed[symmem::kUniqueIdSize];
  if (symmem::unique_id_from_text(text, parsed).ok()) {
    std::string back = symmem::unique_id_to_text(parsed);
    std::string lower = text;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (back != lower && back != text) fail("a text id does not print back as itself");
    check_binary(parsed);
  }
  return 0;
}
