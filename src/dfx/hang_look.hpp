// Inside the hang report builder (hang.cpp, hang_look.cpp, hang_writers.cpp): plain copies
// of a PE's page records, what one look at a PE says, and the helpers that name what was
// seen. Private to those files (and built into symmem-run with them); the page layout and
// libc only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dfx/hang.hpp"
#include "runtime/dfx_gpu.hpp"

namespace symmem::dfx::hang {

// Plain copies of the page's records (those carry atomics and cannot be copied as values).
struct Wait {
  uint16_t op = 0, call_id = 0;
  int32_t owner = -1, cmp = -1;
  uint32_t width = 0, nwords = 0;
  uint64_t addr = 0, expect = 0;
  int32_t lane = -1;
  uint32_t seq = 0;
  uint64_t since_ns = 0;
  uint32_t vec_kind = 0, vec_count = 0, vec_n = 0, vec_shown = 0;
  uint64_t vec_base = 0;
  uint32_t vec_index[kWaitWords] = {};
  uint64_t vec_expect[kWaitWords] = {};
};

struct Coll {
  uint16_t op = 0, lane = 0;
  uint32_t seq = 0, done = 0, call_id = 0;
  int32_t root = -1;
  uint64_t bytes = 0;
  int32_t start = 0, stride = 1, size = 0;  // size 0: only the brief word is known
};

struct Write {
  uint16_t op = 0, call_id = 0;
  int32_t target = -1;
  bool ucx = false;
  uint64_t where = 0, bytes = 0, quiets = 0;
};

struct Snap {
  bool visible = false;
  State state = State::kInit;
  uint32_t call_id = 0;
  uint64_t progress = 0, coll_count = 0;
  bool waiting = false;  // state kWaiting with a stable wait record
  Wait w;
  uint32_t lane_seq[kTeamLanes] = {};
  std::vector<Coll> recent;  // each lane's latest (lane_hist), newest first, lane 0 first
  std::vector<Coll> full;    // the ring's records (described collectives), newest first
  std::vector<Write> writes;  // newest first
  uint64_t write_count = 0, ucx_posted = 0, ucx_quieted = 0, quiet_count = 0;
  bool writes_all = false;   // plain puts on the node are recorded too
  bool colls_off = false;    // SYMMEM_STATUS=0: its collectives are not numbered
  bool gpu_expired = false;  // a device wait of this PE expired (Page::gpu)
  shmemx_device_wait_record_t gpu{};
  std::string gpu_text;      // its line (dfx_gpu.hpp)
  char pstate = '?';         // /proc/<pid>/stat state
  double cpu_s = -1;         // user + system CPU seconds
};

// What a PE is doing, as one group key and its parts.
struct Doing {
  std::string key;
  std::string kind;  // waiting, in call, user code, finalized, init, exited, killed, not visible
  std::string call;
  int lane = -1;
  uint32_t seq = 0;
  const Coll* coll = nullptr;  // the open collective
};

struct PeView {
  Snap a, b;
  Doing d;
  bool moved = false;
  bool live = false;     // alive and past init, not finalized
  bool blocked = false;  // sleeping in a wait
  double cpu_pct = -1;
  double wait_s = -1;
  bool have_value = false;
  uint64_t value = 0;
  int sat = 0;  // waited word satisfied: 1, 0, -1 unknown
  std::string where;  // the waited word, named
  // A vector wait: each shown element read live (have, value, satisfied 1/0/-1).
  struct Elem {
    bool have = false;
    uint64_t value = 0;
    int sat = -1;
  };
  std::vector<Elem> vec;
  int vec_sat = 0;  // elements shown that are satisfied
};

// hang_look.cpp: one look at a PE's page, what it is doing, and names for what it shows.
std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string json_str(const std::string& s);
std::string json_ints(const std::vector<int>& v);
void proc_stat(int pid, char* state, double* cpu_s);
Snap take(const PeInfo& pi);
std::string name_of(const Page* p, uint32_t id);
const char* cmp_text(int c);
std::string team_name(int lane, const Coll* c);
const char* op_name_fallback(Op op);
const Coll* open_coll(const Snap& s);
uint32_t current_call(const Snap& s);
Doing doing(const PeInfo& pi, const Snap& s);
std::string coll_text(const Page* p, const Coll& c);
std::string state_at_end(const Page* page, const Snap& s);
std::string stack_path(const std::string& st);

// hang_writers.cpp: the word a PE waits on, read live, and the PEs that could write it.
std::string describe(const Source& src, int space, int owner, uint64_t addr);
bool word_where(const Source& src, int space, uint64_t addr, int* pe, uint64_t* where);
bool overlaps(const Write& w, uint64_t lo, uint64_t hi);
int satisfied(const Wait& w, uint64_t v, uint64_t expect);
std::string value_text(uint64_t v, uint32_t width);
std::string write_target(const Source& src, int writer, const Write& w);
std::string write_text(const Source& src, int writer, const Write& w);
void writers_of(const Source& src, const std::vector<PeView>& v, int waiter, std::string* text, std::string* json);
const char* vec_kind_name(uint32_t k);
std::string vector_what(const Source& src, const PeView& p, int pe, const std::string& call);
std::string vector_summary(const PeView& p);
std::string vector_lines(const Source& src, const PeView& p, int pe);

}  // namespace symmem::dfx::hang
