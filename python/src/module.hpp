// What the files of symmem._symmem share (private to python/src/): the Python-side
// objects — PyRt (one symmem::Runtime with its Teams, contexts and live Blocks), Block,
// PyTeam, PyCtx —, a NumPy array's View and its checks, the error classes, the
// point-to-point calls that both the runtime and a context run (defined once, instantiated
// for symmem::Runtime and symmem::Ctx), and one bind_<area>() per file.
//
// Blocking calls release the GIL and run under a wait check (Runtime::set_wait_check) that
// raises KeyboardInterrupt on Ctrl-C and Timeout past a deadline, naming the team members
// that never arrived (each PE counts its entries into each team's blocking calls in a small
// symmetric control block, PyRt::ctl).
#pragma once

#include <pybind11/complex.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <sched.h>

#include <chrono>
#include <complex>
#include <cstdint>
#include <list>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "symmem/symmem.hpp"

namespace py = pybind11;

// A timeout argument: None = the runtime's default, else seconds > 0.
struct Secs {
  double v = -1;
};
namespace pybind11::detail {
template <>
struct type_caster<Secs> {
  PYBIND11_TYPE_CASTER(Secs, const_name("float | None"));
  bool load(handle src, bool) {
    if (src.is_none()) {
      value.v = -1;
      return true;
    }
    if (!PyNumber_Check(src.ptr()) || PyBool_Check(src.ptr())) return false;
    PyObject* f = PyNumber_Float(src.ptr());
    if (!f) {
      PyErr_Clear();
      return false;
    }
    double d = PyFloat_AsDouble(f);
    Py_DECREF(f);
    if (!(d > 0)) throw value_error("timeout must be a positive number of seconds (None: the runtime's default)");
    value.v = d;
    return true;
  }
  static handle cast(Secs s, return_value_policy, handle) {
    if (s.v < 0) return none().release();
    return PyFloat_FromDouble(s.v);
  }
};
}  // namespace pybind11::detail

namespace symmem_py {

using symmem::Cmp;
using symmem::Errc;
using symmem::ReduceOp;
using symmem::Runtime;
using symmem::SignalOp;
using symmem::Team;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------- errors

// The exception classes of symmem/_errors.py, looked up once at import (module.cpp).
struct Exc {
  py::object base, init, state, heap, invalid, not_sym, shape, dtype, pe, timeout, symmetry, device, unsupported;
};
extern Exc* exc;

[[noreturn]] inline void raise(const py::object& cls, const std::string& msg) {
  PyErr_SetString(cls.ptr(), msg.c_str());
  throw py::error_already_set();
}

// Sets the Python error a symmem::Error stands for.
void set_error(const symmem::Error& e);

// Thrown by the wait check: the Python error (KeyboardInterrupt, ...) is already set.
struct Interrupted {};
struct DeadlinePassed {};

constexpr size_t kReleaseGilBytes = 256 << 10;  // put/get of this much or more release the GIL
constexpr int kTeamCounters = 64;               // a Runtime has at most 64 team slots
constexpr size_t kSiteBytes = 256;
constexpr size_t kCtlBytes = kTeamCounters * 8 + kSiteBytes;

// ---------------------------------------------------------------- arrays (arrays.cpp)

// One NumPy array's geometry, read from the array object without copies.
struct View {
  char* data;
  ssize_t ndim;
  const ssize_t* shape;
  const ssize_t* strides;
  ssize_t size;
  ssize_t itemsize;
  char kind;
  bool c_contig;
  bool writeable;
  py::object keep;  // the array (owns a reference when converted from another object)
  // Device memory (a CUDA tensor, __cuda_array_interface__): data is a GPU address, never
  // dereferenced here; shape and strides point into geom. Kind 'B' is bfloat16.
  bool device = false;
  std::shared_ptr<std::vector<ssize_t>> geom;
};

extern py::object g_as_array;  // symmem._util.as_array: torch tensors, buffers, lists -> ndarray
extern py::object g_as_view;   // symmem._util.as_view: as_array, or a device object's geometry

// A NumPy view of h; device objects raise DeviceNotSupported (the calls that use it take
// host memory only).
View view_of(py::handle h);
// The same, and device objects give a View with device set: for the calls that hand device
// addresses to the core (put/get, p/g, atomics, signals, one-word waits, collectives).
View view_any(py::handle h);
// Raises DeviceNotSupported: `what` on device memory.
[[noreturn]] void device_unsupported(const char* call, const std::string& what);
// The CUstream (as a pointer; nullptr: the default stream) of a collective on device
// memory: `stream` (None, an int, a torch.cuda.Stream, a CuPy stream), or with None torch's
// current stream when `x` is a torch tensor (symmem._device.stream_for).
void* stream_of(py::handle x, py::handle stream);
std::string dtype_name(const View& v);
void same_dtype(const char* call, const View& d, const View& s);
void same_shape(const char* call, const View& d, const View& s);

// The address of one element: index None (the array has one element), an int (flat, C
// order) or a tuple (one per dimension). Negative indices count from the end.
char* element(const char* call, const View& v, py::handle index);

// Calls f(T{}) with T the C++ type of the array's elements.
template <class F>
decltype(auto) dispatch(const char* call, const View& v, F&& f) {
  switch (v.kind) {
    case 'i':
      switch (v.itemsize) {
        case 1: return f(int8_t{});
        case 2: return f(int16_t{});
        case 4: return f(int32_t{});
        case 8: return f(int64_t{});
      }
      break;
    case 'u':
      switch (v.itemsize) {
        case 1: return f(uint8_t{});
        case 2: return f(uint16_t{});
        case 4: return f(uint32_t{});
        case 8: return f(uint64_t{});
      }
      break;
    case 'f':
      switch (v.itemsize) {
        case 4: return f(float{});
        case 8: return f(double{});
        case sizeof(long double): return f((long double){});
      }
      break;
    case 'c':
      switch (v.itemsize) {
        case 8: return f(std::complex<float>{});
        case 16: return f(std::complex<double>{});
      }
      break;
  }
  raise(exc->dtype, std::string(call) + ": dtype " + dtype_name(v) + " is not supported here");
}

template <class T>
T value_as(const char* call, const View& v, py::handle x) {
  try {
    return x.cast<T>();
  } catch (py::cast_error&) {
    raise(exc->dtype, std::string(call) + ": " + py::repr(x).cast<std::string>() + " is not a value of dtype " +
                          dtype_name(v));
  }
}

inline py::object to_py(long double x) { return py::reinterpret_steal<py::object>(PyFloat_FromDouble(double(x))); }
template <class T>
py::object to_py(T x) {
  return py::cast(x);
}


// Pages kept mapped after their runtime's finalize, counted over the Blocks on them.
void keep_pages(const char* p, size_t n);
bool is_kept(const void* p);

// ---------------------------------------------------------------- the runtime

class PyRt;

// The memory behind symmem's arrays: an allocation, or (peer) a view of a peer's copy.
// NumPy arrays point into it and hold it (their .base); while it lives its memory stays
// valid: after the runtime's finalize its pages are kept as private memory (detached).
class Block {
 public:
  Block(PyRt* o, char* p, size_t n, bool is_peer = false);
  ~Block();
  PyRt* owner;     // null once detached
  char* ptr;
  size_t nbytes;
  bool freed = false;
  bool peer = false;
  bool detached = false;  // its runtime is finalized
  bool kept = false;      // its pages are kept (kept_pages)
  bool device = false;    // in the device heap: never read or written by the CPU
  py::object source;      // a peer view's array (free() counts it as a view of that array)
};

struct TeamEntry {
  Team team;
  bool destroyed = false;
};

class PyRt {
 public:
  std::unique_ptr<Runtime> rt;
  int me = -1, npes = 0;
  bool broken = false;   // a blocking call was interrupted: only finalize() is left
  double default_timeout = 0;  // seconds; 0 = none
  uint64_t* ctl = nullptr;     // symmetric: team entry counters, then this PE's last alloc site
  std::list<TeamEntry> teams;  // every Team made here, in creation order (world and shared first)
  uint64_t generation = 0;     // counts inits: a Team of an earlier init is stale
  std::vector<py::object> pending;  // objects of nbi calls, kept alive until quiet()
  std::set<Block*> blocks;          // live Blocks of this runtime (allocations, peer views)
  std::set<struct PyCtx*> ctxs;     // live contexts
  py::object scratch = py::none();  // symmetric uint8 array of the value-style collectives

  // wait check state
  bool has_deadline = false;
  Clock::time_point deadline, next_signal_check;

  Runtime& need(const char* call) {
    if (!rt) {
      if (generation)
        raise(exc->state, std::string(call) + ": this symmem runtime is finalized (its arrays are plain local "
                                              "memory now; symmem.init() starts a new job)");
      raise(exc->state, std::string(call) + ": symmem is not initialized (call symmem.init() first)");
    }
    return *rt;
  }
  // n: the PEs of the context's team (-1: the job's)
  void check_pe(const char* call, int pe, int n = -1) {
    if (n < 0) n = npes;
    if (static_cast<unsigned>(pe) >= static_cast<unsigned>(n))
      raise(exc->pe, std::string(call) + ": PE " + std::to_string(pe) + " is out of range (the " +
                         (n == npes ? "job" : "context's team") + " has " + std::to_string(n) + " PEs, 0.." +
                         std::to_string(n - 1) + ")");
  }

  // Raises NotSymmetricError (StateError for a finalized runtime's memory) unless the n
  // bytes at p are in this PE's symmetric heap.
  void check_symmetric(const char* call, const char* what, const void* p, size_t n);

  bool destroying = false;  // in ~Runtime: it must not throw, so a passed deadline ends the process

  // Ctrl-C (every 5 ms) and the deadline; the runtime's own waits call it as they sleep.
  void wait_check();

  // Runs f() with the GIL released under the wait check; `team` names the members that
  // have not entered this call when the deadline passes (nullptr: a point-to-point wait).
  template <class F>
  auto blocking(const char* call, double timeout, const Team* team, F&& f) -> decltype(f()) {
    if (timeout < 0) timeout = default_timeout;
    int slot = team ? team->index() : -1;
    uint64_t entry = 0;
    if (!ctl) slot = -1;  // init's own allocation
    if (slot >= 0 && slot < kTeamCounters) entry = __atomic_add_fetch(&ctl[slot], 1, __ATOMIC_RELEASE);
    has_deadline = timeout > 0;
    if (has_deadline)
      deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout));
    next_signal_check = {};  // the first sleep of the wait looks at signals, then every 5 ms
    try {
      py::gil_scoped_release nogil;
      return f();
    } catch (Interrupted&) {
      broken = true;
      throw py::error_already_set();
    } catch (DeadlinePassed&) {
      broken = true;
      timed_out(call, timeout, team, slot, entry);
    }
  }

  template <class F>
  auto blocking(const char* call, Secs timeout, const Team* team, F&& f) -> decltype(f()) {
    return blocking(call, timeout.v, team, std::forward<F>(f));
  }

  // Raises Timeout for blocking(): which members of the team never arrived (entry: this
  // PE's count of entries into the team's blocking calls).
  [[noreturn]] void timed_out(const char* call, double timeout, const Team* team, int slot, uint64_t entry);

  // Polls until done() (spin, yield, sleep with backoff), running the wait check.
  template <class Done>
  void poll(Done done) {
    for (int i = 0; i < 2000; ++i) {
      if (done()) return;
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
    for (int i = 0; i < 64; ++i) {
      if (done()) return;
      sched_yield();
    }
    int us = 1;
    while (!done()) {
      wait_check();
      std::this_thread::sleep_for(std::chrono::microseconds(us));
      if (us < 500) us *= 2;
    }
  }

  // The call site of this PE's last allocation, in its control block (a SymmetryError
  // names every PE's).
  void write_site(const std::string& site);
  std::string site_of(int pe);

  Team& world() { return teams.front().team; }

  // The runtime's quiet (and barriers) completes every context's operations too.
  void release_pending();

  // The runtime goes: its Blocks stop referring to it. keep: the heap is about to be
  // destroyed and their pages are to be kept. Its contexts are destroyed, or left when
  // the runtime is abandoned (never destroyed: its heap stays mapped).
  void detach_all(bool keep, bool abandoned);

  // A Runtime still joined when its Python object goes (interpreter exit after an error):
  // destroying it would wait for the other PEs, so it is left to the process exit.
  ~PyRt();
};

// A context (symmem::Ctx) seen from Python: its own nbi keep-alive list, released by its
// quiet(); destroyed with its runtime's finalize.
struct PyCtx {
  py::object owner;  // the _Runtime (kept alive)
  PyRt* r;
  uint64_t generation;
  std::unique_ptr<symmem::Ctx> c;
  std::vector<py::object> pending;
  PyCtx(py::object o, PyRt* rt, symmem::Ctx&& ctx)
      : owner(std::move(o)), r(rt), generation(rt->generation), c(std::make_unique<symmem::Ctx>(std::move(ctx))) {
    r->ctxs.insert(this);
  }
  ~PyCtx() {
    if (r) {
      r->ctxs.erase(this);
      try {
        if (c) c->destroy();
      } catch (const symmem::Error&) {
      }
    } else if (c) {
      (void)c.release();  // its runtime was abandoned: nothing of it may run any more
    }
  }
  symmem::Ctx& need(const char* call) {
    if (!r || !r->rt || generation != r->generation)
      raise(exc->state, std::string("Ctx.") + call + ": the context's runtime is finalized");
    if (!c || !c->valid()) raise(exc->state, std::string("Ctx.") + call + ": the context is destroyed");
    return *c;
  }
};

// A Team seen from Python: its entry in its runtime's list, checked against the runtime's
// generation (a Team of an earlier init is stale).
class PyTeam {
 public:
  PyTeam(py::object o, PyRt* rt, TeamEntry* te, uint64_t g) : owner(std::move(o)), r(rt), e(te), generation(g) {}
  ~PyTeam() { *alive = false; }
  py::object owner;  // the PyRt (kept alive)
  PyRt* r;
  TeamEntry* e;
  uint64_t generation;
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);  // for the fast calls bound to it
  bool live() const { return r->rt && generation == r->generation && !e->destroyed && e->team.valid(); }
  Team& t(const char* call) {
    if (!r->rt || generation != r->generation) raise(exc->state, std::string(call) + ": the runtime of this team is finalized");
    if (e->destroyed || !e->team.valid()) raise(exc->state, std::string(call) + ": the team is destroyed");
    return e->team;
  }
};

// ---------------------------------------------------------------- the calls

// The RMA, atomics and signals run on `rt`: the Runtime, or a Ctx (npes: its team's size,
// pending: its nbi keep-alive list). Defined in rma.cpp and amo.cpp for both.
template <class IO>
void rma_via(PyRt& r, IO& rt, int npes, std::vector<py::object>& pending, bool is_put, bool nbi, py::handle dst,
             py::handle src, int pe);
template <class IO>
void p_via(PyRt& r, IO& rt, int npes, py::handle dst, py::handle value, int pe, py::handle index);
template <class IO>
py::object g_via(PyRt& r, IO& rt, int npes, py::handle src, int pe, py::handle index);

enum Amo { kFetch, kSet, kSwap, kCswap, kFetchAdd, kAdd, kFetchInc, kInc, kFetchAnd, kAnd, kFetchOr, kOr, kFetchXor, kXor };
inline constexpr const char* kAmoName[] = {"atomic_fetch",     "atomic_set",    "atomic_swap",      "atomic_compare_swap",
                                           "atomic_fetch_add", "atomic_add",    "atomic_fetch_inc", "atomic_inc",
                                           "atomic_fetch_and", "atomic_and",    "atomic_fetch_or",  "atomic_or",
                                           "atomic_fetch_xor", "atomic_xor"};
template <class IO>
py::object amo_via(PyRt& r, IO& rt, int npes, Amo k, py::handle a, py::handle v1, py::handle v2, int pe,
                   py::handle index);
template <class IO>
void put_signal_via(PyRt& r, IO& rt, int npes, std::vector<py::object>& pending, bool nbi, py::handle dst,
                    py::handle src, py::handle sig, uint64_t value, int pe, py::handle op, py::handle index);

// The runtime's own forms (the job's PE numbering, its nbi list).
void rma(PyRt& r, bool is_put, bool nbi, py::handle dst, py::handle src, int pe);
void p_(PyRt& r, py::handle dst, py::handle value, int pe, py::handle index);
py::object g_(PyRt& r, py::handle src, int pe, py::handle index);
py::object amo(PyRt& r, Amo k, py::handle a, py::handle v1, py::handle v2, int pe, py::handle index);

// A signal word: element `index` of a symmetric uint64 array (host or device memory;
// *device says which).
uint64_t* signal_word(PyRt& r, const char* call, py::handle sig, py::handle index, bool* device = nullptr);

// reduce (fold 0), inscan (1), exscan (2); broadcast (what 0), fcollect (1), collect (2),
// alltoall (3): teams.cpp.
// stream: a device collective's stream (see stream_of); ignored for host memory.
void team_reduce(PyTeam& pt, int fold, py::handle dst, py::handle src, py::handle op_h, Secs timeout,
                 py::handle stream = py::none());
py::object team_move(PyTeam& pt, int what, py::handle dst, py::handle src, int root, Secs timeout,
                     py::handle stream = py::none());
// A team's barrier (sync: false) or sync; with a stream (not None) the stream-ordered form.
void team_barrier(PyTeam& pt, bool sync, Secs timeout, py::handle stream);

// Sets a Team object's fast collective calls (fast_calls.cpp).
py::object with_fast_calls(py::object obj, PyTeam* t);

// ---------------------------------------------------------------- the bindings, one per file

// A class module.cpp made, for a file to add its calls to.
template <class T>
py::class_<T> class_of(py::module_& m, const char* name) {
  return py::reinterpret_borrow<py::class_<T>>(m.attr(name));
}

void bind_arrays(py::module_& m);      // arrays.cpp: Block, allocation, free, peer views
void bind_init(py::module_& m);        // init.cpp: init/finalize, unique ids
void bind_rma(py::module_& m);         // rma.cpp: put/get, p/g, strided, int addresses, fence/quiet
void bind_amo(py::module_& m);         // amo.cpp: atomics, put_signal, signal_*
void bind_waits(py::module_& m);       // waits.cpp: wait_until, test, wait sets, locks
void bind_teams(py::module_& m);       // teams.cpp: Team, collectives, barrier_all
void bind_ctx(py::module_& m);         // ctx.cpp: contexts
void bind_fast_calls(py::module_& m);  // fast_calls.cpp: the METH_FASTCALL entry points
void bind_device(py::module_& m);      // device.cpp: device allocation, peers, DLPack capsules

}  // namespace symmem_py
