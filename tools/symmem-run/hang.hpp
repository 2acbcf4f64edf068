// symmem-run's side of the hang reports (docs/dfx.md, "Hang reports"): it opens each PE's
// status page and memory without the PE's help and hands them to the report builder
// (src/dfx/hang.hpp).
//
// How. Each PE's heap and metadata live in one POSIX shared-memory object, unlinked once
// every PE has mapped it (heap/symmetric_heap.hpp), so there is no name to open. The PE
// keeps its own object open, though: /proc/<pid>/maps says which mapping of it is the
// metadata (its file offset is the heap size H), /proc/<pid>/fd/N reaches the object, and
// opening that link gives us our own read-only descriptor. The metadata is mapped read-only;
// heap words are read with pread, which does not commit the object's holes.
#pragma once

#include <string>
#include <vector>

#include "dfx/hang.hpp"

namespace symmem::run {

class HangReader {
 public:
  HangReader(std::string job_id, int npes);
  ~HangReader();
  HangReader(const HangReader&) = delete;
  HangReader& operator=(const HangReader&) = delete;

  // Opens the pages of PEs not opened yet (a PE has one once its init mapped the heap), and
  // of a PE that started a new instance after finalizing the old one.
  void attach(int rank, int pid);
  void set_life(int rank, dfx::hang::PeInfo::Life life, int code);
  dfx::hang::Source& source() { return src_; }

 private:
  struct Pe {
    int pid = 0;
    int instance = -1;
    int fd = -1, sfd = -1;  // heap+metadata object, static data object
    uint64_t heap_size = 0;
    void* meta = nullptr;
    size_t meta_len = 0;
  };
  void detach(Pe& p);
  bool read(int owner, int space, uint64_t addr, uint32_t width, uint64_t* out);

  std::string job_;
  std::vector<Pe> pes_;
  dfx::hang::Source src_;
};

// `symmem-run --status PID`: the live report of the job that symmem-run PID runs, on stdout.
int status_query(int launcher_pid);

}  // namespace symmem::run
