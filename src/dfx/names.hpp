// Call sites for DFX reports: where the user called the library, stored cheaply (one stack
// walk that stops at the first frame outside libsymmem) and named only when a report is
// printed (dladdr, then addr2line when it is installed); and the executable's variables by
// name (static_name, for Dfx::describe through the seam).
#pragma once

#include <cstdint>
#include <string>

namespace symmem::dfx {

// The first return address on this thread's stack that is outside libsymmem: the caller of
// the library's entry point. 0 when the walk finds none.
uintptr_t user_call_site();
// A call site as records keep it: relative to the executable's load address when it lies in
// the executable (so that another PE of the same program can name it), else the absolute
// address with kSiteAbsolute set (named correctly only in its own process).
inline constexpr uint64_t kSiteAbsolute = 1ull << 63;
uint64_t encode_site(uintptr_t pc);
// "main bad_pe.c:15" (function and file:line with debug info), "main+0x1c (prog)" without
// it; "" for 0.
std::string site_name(uint64_t encoded);
// Loads what the stack walk needs (libgcc's unwinder) before it is timed or needed.
void warm_up_call_sites();
// "static 'name' +off" for an address inside a variable of the executable, from its ELF
// symbol table (read from /proc/self/exe once, on first use); "" when no symbol holds it.
std::string static_name(uintptr_t addr);

}  // namespace symmem::dfx
