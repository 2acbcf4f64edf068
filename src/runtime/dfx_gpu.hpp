// An expired device wait as every reader names it (dfx_page.hpp GpuWaitArea): the hang
// report, symmem-run's line about a PE that ended, and the PE's own error once a device
// call fails after the trap. Page layout and libc only: built into symmem-run too.
//
//   PE 2: a GPU wait expired after 10.0 s in block 3 thread 0: waited for the word at
//   0x7f3a40220018 (a sync pad of the device collectives, written by PE 1) to be >= 7,
//   last seen 6
#pragma once

#include <cstdio>
#include <cstring>
#include <string>

#include "runtime/dfx_page.hpp"

namespace symmem::dfx {

// Copies the record once its GPU has written it whole (state 1); false while there is none.
inline bool gpu_wait_read(const GpuWaitArea& a, shmemx_device_wait_record_t* out) {
  if (__atomic_load_n(&a.rec.state, __ATOMIC_ACQUIRE) != 1u) return false;
  std::memcpy(static_cast<void*>(out), static_cast<const void*>(&a.rec), sizeof *out);
  return true;
}

// SHMEM_CMP_EQ..LE as the report writes them.
inline const char* cmp_symbol(int c) {
  static const char* const k[] = {"==", "!=", ">", ">=", "<", "<="};
  return c >= 0 && c < 6 ? k[c] : "?";
}

// What the awaited word is: "a sync pad of the device collectives", "a signal word at +0x200040
// of its device heap slot" (of PE q's, when another's), or "not in the device heap".
inline std::string gpu_word_text(const GpuWaitArea& a, const shmemx_device_wait_record_t& r) {
  char b[160];
  if (a.heap_base == 0 || a.heap_size == 0 || r.addr < a.heap_base) return "not in the device heap";
  const unsigned long long slot = (r.addr - a.heap_base) / a.heap_size;
  const unsigned long long off = (r.addr - a.heap_base) % a.heap_size;
  if (off >= a.sync_begin && off < a.sync_end) return "a sync pad of the device collectives";
  if (slot == (unsigned long long)r.pe)
    std::snprintf(b, sizeof b, "a signal word at +0x%llx of its device heap slot", off);
  else
    std::snprintf(b, sizeof b, "a signal word at +0x%llx of PE %llu's device heap slot", off, slot);
  return b;
}

// The line naming it, without a trailing newline; "" when no device wait of this PE expired.
inline std::string gpu_wait_text(const GpuWaitArea& a) {
  shmemx_device_wait_record_t r;
  if (!gpu_wait_read(a, &r)) return "";
  std::string who = gpu_word_text(a, r);
  if (r.peer >= 0) who += ", written by PE " + std::to_string(r.peer);
  char b[512];
  std::snprintf(b, sizeof b,
                "PE %d: a GPU wait expired after %.1f s in block %u thread %u: waited for the word at 0x%llx (%s) to "
                "be %s %llu, last seen %llu",
                r.pe, double(r.waited_ns) * 1e-9, r.block, r.thread, r.addr, who.c_str(), cmp_symbol(r.cmp),
                r.expected, r.seen);
  return b;
}

}  // namespace symmem::dfx
