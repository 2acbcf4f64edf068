// Hang reports (docs/dfx.md, "Hang reports"): one builder behind every trigger
// (symmem-run --timeout / --hang-timeout / SIGUSR1 / --status, and a PE's own watch when
// another launcher started the job). It reads the status pages (dfx_page.hpp) of the PEs it
// can see, looks twice about a second apart, groups the PEs by what they do, reads every
// waited word live from its owner's memory and says DEADLOCK, STALL or PROGRESS; text for
// stderr and a JSON twin ("schema":"symmem-hang/1").
//
// The builder knows nothing of processes or mappings: its Source says where the pages are
// and how to read a word of a PE's memory (symmem-run: the PEs' shared-memory objects
// opened through /proc; a PE: its own mapping of its node's heaps). This file is compiled
// into the runtime and into symmem-run, so it depends on the page layout and libc only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/dfx_page.hpp"

namespace symmem::dfx::hang {

// One PE of the job as the reader knows it.
struct PeInfo {
  int rank = 0;
  const Page* page = nullptr;  // its status page when visible (this node, mapped), else null
  int pid = 0;                 // 0: unknown
  enum class Life { kAlive, kExited, kKilled } life = Life::kAlive;
  int code = 0;         // exit code (kExited) or signal (kKilled)
  double quiet_s = -1;  // how long a monitor has seen it unchanged; -1: unknown
  bool remote = false;  // on another node: never visible from here
  // A PE on another node as its node's watch summed it up (Report::pe_lines, through the
  // job's store): shown and judged as if seen, its words read there.
  bool summarized = false;
  State r_state = State::kInit;
  std::string r_call;
  int r_lane = -1;  // the collective it is in, or -1
  uint32_t r_seq = 0;
  std::vector<uint32_t> r_lane_seq;  // per lane, as Page::lane_seq
  int r_sat = -1;       // its waited word satisfied: 1, 0, -1 unknown
  std::string r_what;   // its line in its node's report ("wait_until(...)   sees 0 (live)")
};

// Fills `pi` from one line of another node's Report::pe_lines; false when malformed.
bool parse_pe_line(const std::string& line, PeInfo* pi);

struct Source {
  std::string job;          // job id: names the default JSON file
  std::string prefix;       // first words of the text ("symmem-run: ", "[pe 0 host:1234] ")
  std::string scope;        // what the reader covers, when not the whole job ("node n1")
  std::vector<PeInfo> pes;  // every PE of the job, by rank
  // Per rank, the PE's stack when the reader took one (symmem-run --hang-stacks: gdb), one
  // frame a line, innermost first; empty: none.
  std::vector<std::string> stacks;
  // Reads `width` (1, 2, 4 or 8) bytes of PE `owner`'s memory at `addr`: a symmetric
  // address in the job's layout, or a static variable's address in PE `space`'s process.
  std::function<bool(int owner, int space, uint64_t addr, uint32_t width, uint64_t* out)> read;
};

struct Options {
  std::string trigger;    // "timeout after 30 s", "no progress for 3 s", "SIGUSR1", "query"
  std::string title = "hang report";  // first words after the prefix ("exit report")
  double look_s = 1.0;    // time between the two looks
  std::string json_path;  // "": symmem-hang-<job>.json in the working directory; "-": none
};

struct Report {
  std::string verdict;  // DEADLOCK, BLOCKED (part of the job not visible), STALL, PROGRESS, FINISHED
  std::string text;     // lines for stderr, each ending in '\n'
  std::string json;
  std::string json_path;  // where the JSON went ("" when not written)
  bool all_blocked = false;  // every live visible PE sleeps in a wait and nothing moved
  // Per PE seen on its page, one line summing it up for another node (parse_pe_line).
  std::vector<std::string> pe_lines;
};

// Takes the two looks (sleeping look_s in between) and writes the JSON file.
Report build(const Source& src, const Options& opt);

// The no-progress deadline (SYMMEM_HANG_TIMEOUT): fed one look at a time, it tracks how
// long each PE has been unchanged (filling PeInfo::quiet_s) and says when every live
// visible PE has slept in a wait, unchanged, for `hang_s` seconds.
class Monitor {
 public:
  bool look(Source& src, double hang_s);
  void reset() { blocked_since_ = 0; }

 private:
  std::vector<uint64_t> sig_, since_;
  uint64_t blocked_since_ = 0;
};

uint64_t mono_ns();  // CLOCK_MONOTONIC, the clock of the pages' time stamps

}  // namespace symmem::dfx::hang
