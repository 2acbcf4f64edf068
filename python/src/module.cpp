// symmem._symmem — the pybind11 layer of the Python module, over the public C++ API
// (symmem::Runtime, symmem::Team). The pure-Python package symmem/ sits on top of it.
//
// What lives here: the calls whose per-call cost matters (put/get/p/g, atomics, signals,
// waits, barriers, collectives) take NumPy arrays (any view into a symmetric allocation)
// and check dtypes, shapes and PEs before one C++ call. Blocking calls release the GIL and
// run under a wait check (Runtime::set_wait_check) that raises KeyboardInterrupt on Ctrl-C
// and Timeout past a deadline, naming the team members that never arrived (each PE counts
// its entries into each team's blocking calls in a small symmetric control block).
// Allocation returns a Block (buffer protocol); lifetime rules (orphans, collect) are in
// symmem/_runtime.py.
#include <pybind11/complex.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <sched.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <chrono>
#include <complex>
#include <cstring>
#include <array>
#include <list>
#include <map>
#include <set>
#include <sys/mman.h>
#include <utility>
#include <memory>
#include <string>
#include <thread>
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

using symmem::Cmp;
using symmem::Errc;
using symmem::ReduceOp;
using symmem::Runtime;
using symmem::SignalOp;
using symmem::Team;
using Clock = std::chrono::steady_clock;

namespace {

// ---------------------------------------------------------------- errors

// The exception classes of symmem/_errors.py, looked up once at import.
struct Exc {
  py::object base, init, state, heap, invalid, not_sym, shape, dtype, pe, timeout, symmetry;
};
Exc* exc = nullptr;

[[noreturn]] void raise(const py::object& cls, const std::string& msg) {
  PyErr_SetString(cls.ptr(), msg.c_str());
  throw py::error_already_set();
}

// Thrown by the wait check: the Python error (KeyboardInterrupt, ...) is already set.
struct Interrupted {};
struct DeadlinePassed {};

// ---------------------------------------------------------------- arrays

// A constructor's initial contents: `pattern` (bytes) repeated over [p, p + n). Runs inside
// the allocation, without the GIL: the block is filled before any peer may write into it.
void fill_repeat(char* p, size_t n, const char* pattern, size_t k) {
  if (k == 0 || n == 0) return;
  if (k < n && std::all_of(pattern, pattern + k, [](char c) { return c == 0; })) {
    std::memset(p, 0, n);
    return;
  }
  size_t done = std::min(k, n);
  std::memcpy(p, pattern, done);
  for (; done < n; done *= 2) std::memcpy(p + done, p, std::min(done, n - done));  // doubling copies
}

struct HeldBuffer {  // a Py_buffer released with the GIL held
  Py_buffer view{};
  bool held = false;
  ~HeldBuffer() {
    if (held) PyBuffer_Release(&view);
  }
};

constexpr size_t kReleaseGilBytes = 256 << 10;  // put/get of this much or more release the GIL
constexpr int kTeamCounters = 64;               // a Runtime has at most 64 team slots
constexpr size_t kSiteBytes = 256;
constexpr size_t kCtlBytes = kTeamCounters * 8 + kSiteBytes;

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
};

py::object g_as_array;  // symmem._util.as_array: torch tensors, buffers, lists -> ndarray

View view_of(py::handle h) {
  py::object arr;
  if (py::isinstance<py::array>(h)) arr = py::reinterpret_borrow<py::object>(h);
  else arr = g_as_array(h);
  auto* a = py::detail::array_proxy(arr.ptr());
  auto* d = py::detail::array_descriptor_proxy(a->descr);
  View v;
  v.data = a->data;
  v.ndim = a->nd;
  v.shape = reinterpret_cast<const ssize_t*>(a->dimensions);
  v.strides = reinterpret_cast<const ssize_t*>(a->strides);
  v.size = 1;
  for (ssize_t i = 0; i < v.ndim; ++i) v.size *= v.shape[i];
  v.itemsize = d->elsize;
  v.kind = d->kind;
  if (v.kind == 'b') v.kind = 'u';  // bool moves as a byte
  v.c_contig = (a->flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) != 0;
  v.writeable = (a->flags & py::detail::npy_api::NPY_ARRAY_WRITEABLE_) != 0;
  if (d->kind == 'O' || d->kind == 'V' || d->kind == 'U' || d->kind == 'S' || d->kind == 'M' || d->kind == 'm')
    raise(exc->dtype, std::string("arrays of dtype kind '") + d->kind + "' cannot be moved between PEs");
  v.keep = std::move(arr);
  return v;
}

std::string dtype_name(const View& v) {
  return py::str(v.keep.attr("dtype")).cast<std::string>();
}

std::string shape_str(const View& v) {
  std::string s = "(";
  for (ssize_t i = 0; i < v.ndim; ++i) s += std::to_string(v.shape[i]) + (v.ndim == 1 || i + 1 < v.ndim ? "," : "");
  return s + ")";
}

void same_dtype(const char* call, const View& d, const View& s) {
  if (d.kind != s.kind || d.itemsize != s.itemsize)
    raise(exc->dtype, std::string(call) + ": dtypes differ (destination " + dtype_name(d) + ", source " +
                          dtype_name(s) + "); convert with .astype() first");
}

void same_shape(const char* call, const View& d, const View& s) {
  bool eq = d.ndim == s.ndim;
  for (ssize_t i = 0; eq && i < d.ndim; ++i) eq = d.shape[i] == s.shape[i];
  if (!eq)
    raise(exc->shape, std::string(call) + ": shapes differ (destination " + shape_str(d) + ", source " +
                          shape_str(s) + "); slice one of them so that they match");
}

// Calls f(dst_offset, src_offset, bytes) for each contiguous run of two arrays of one
// shape, in C order (the innermost dimension is one run when both are contiguous in it).
template <class F>
void for_each_run(const View& d, const View& s, F f) {
  if (d.size == 0) return;
  if (d.c_contig && s.c_contig) {
    f(0, 0, size_t(d.size * d.itemsize));
    return;
  }
  const ssize_t nd = d.ndim;
  ssize_t inner = 1, dims = nd;
  if (nd > 0 && d.strides[nd - 1] == d.itemsize && s.strides[nd - 1] == s.itemsize) {
    inner = d.shape[nd - 1];
    dims = nd - 1;
  }
  std::vector<ssize_t> idx(size_t(dims), 0);
  const ssize_t outer = d.size / inner;
  for (ssize_t k = 0; k < outer; ++k) {
    ssize_t doff = 0, soff = 0;
    for (ssize_t i = 0; i < dims; ++i) {
      doff += idx[size_t(i)] * d.strides[i];
      soff += idx[size_t(i)] * s.strides[i];
    }
    f(doff, soff, size_t(inner * d.itemsize));
    for (ssize_t i = dims - 1; i >= 0; --i) {
      if (++idx[size_t(i)] < d.shape[i]) break;
      idx[size_t(i)] = 0;
    }
  }
}

// The address of one element: index None (the array has one element), an int (flat, C
// order) or a tuple (one per dimension). Negative indices count from the end.
char* element(const char* call, const View& v, py::handle index) {
  if (index.is_none()) {
    if (v.size != 1)
      raise(exc->shape, std::string(call) + ": the array has " + std::to_string(v.size) +
                            " elements; say which with index=");
    return v.data;
  }
  ssize_t idx[64];  // NumPy arrays have at most 64 dimensions
  if (py::isinstance<py::tuple>(index)) {
    const ssize_t k = ssize_t(PyTuple_GET_SIZE(index.ptr()));
    if (k != v.ndim)
      raise(exc->shape, std::string(call) + ": index has " + std::to_string(k) + " entries for a " +
                std::to_string(v.ndim) + "-d array");
    for (ssize_t i = 0; i < k; ++i) idx[i] = py::reinterpret_borrow<py::object>(PyTuple_GET_ITEM(index.ptr(), i)).cast<ssize_t>();
  } else {
    if (!PyIndex_Check(index.ptr())) raise(exc->dtype, std::string(call) + ": index must be an int or a tuple");
    ssize_t flat = PyNumber_AsSsize_t(index.ptr(), PyExc_IndexError);
    if (flat == -1 && PyErr_Occurred()) throw py::error_already_set();
    if (flat < 0) flat += v.size;
    if (flat < 0 || flat >= v.size)
      raise(py::reinterpret_borrow<py::object>(PyExc_IndexError),
            std::string(call) + ": index " + std::to_string(flat) + " is out of range for " +
                std::to_string(v.size) + " elements");
    for (ssize_t i = v.ndim - 1; i >= 0; --i) {
      idx[i] = flat % v.shape[i];
      flat /= v.shape[i];
    }
  }
  ssize_t off = 0;
  for (ssize_t i = 0; i < v.ndim; ++i) {
    ssize_t x = idx[i];
    if (x < 0) x += v.shape[i];
    if (x < 0 || x >= v.shape[i])
      raise(py::reinterpret_borrow<py::object>(PyExc_IndexError),
            std::string(call) + ": index " + std::to_string(idx[i]) + " is out of range for axis " +
                std::to_string(i) + " of size " + std::to_string(v.shape[i]));
    off += x * v.strides[i];
  }
  return v.data + off;
}

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

py::object to_py(long double x) { return py::reinterpret_steal<py::object>(PyFloat_FromDouble(double(x))); }
template <class T>
py::object to_py(T x) {
  return py::cast(x);
}

// ---------------------------------------------------------------- the runtime

class PyRt;

// Pages kept mapped after their runtime's finalize (Runtime::keep_after_finalize), counted
// per page over the Blocks on them: a page goes (munmap) when its last Block does.
std::map<uintptr_t, int>& kept_pages() {
  static auto* m = new std::map<uintptr_t, int>;
  return *m;
}
const uintptr_t kPage = uintptr_t(sysconf(_SC_PAGESIZE));

void keep_pages(const char* p, size_t n) {
  for (uintptr_t a = uintptr_t(p) / kPage * kPage; a < uintptr_t(p) + n; a += kPage) ++kept_pages()[a];
}
void drop_pages(const char* p, size_t n) {
  auto& m = kept_pages();
  for (uintptr_t a = uintptr_t(p) / kPage * kPage; a < uintptr_t(p) + n; a += kPage) {
    auto it = m.find(a);
    if (it == m.end() || --it->second > 0) continue;
    m.erase(it);
    munmap(reinterpret_cast<void*>(a), kPage);
  }
}
bool is_kept(const void* p) { return kept_pages().count(uintptr_t(p) / kPage * kPage) != 0; }

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
  void check_symmetric(const char* call, const char* what, const void* p, size_t n) {
    if (!rt->ptr(p, me) || (n > 1 && !rt->ptr(static_cast<const char*>(p) + n - 1, me))) {
      if (is_kept(p))
        raise(exc->state, std::string(call) + ": " + what +
                              " belongs to a symmem runtime that is finalized (its memory is plain local memory now, "
                              "no longer symmetric)");
      raise(exc->not_sym, std::string(call) + ": " + what +
                              " is not in symmetric memory (make it with symmem.zeros/empty/array, or pass a "
                              "view of such an array)");
    }
  }

  bool destroying = false;  // in ~Runtime: it must not throw, so a passed deadline ends the process

  void wait_check() {
    auto now = Clock::now();
    if (has_deadline && now >= deadline) {
      if (destroying) {
        std::fprintf(stderr, "[pe %d] symmem.finalize: the other PEs did not finish in time; leaving without them\n", me);
        std::fflush(stderr);
        _exit(1);
      }
      throw DeadlinePassed{};
    }
    if (destroying) return;
    if (now >= next_signal_check) {
      next_signal_check = now + std::chrono::milliseconds(5);
      py::gil_scoped_acquire g;
      if (PyErr_CheckSignals() != 0) throw Interrupted{};
    }
  }

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
      std::string msg = std::string(call) + ": timed out after " + std::to_string(timeout) + " s";
      if (slot >= 0 && slot < kTeamCounters) {
        std::string missing;
        int nmissing = 0;
        for (int i = 0; i < team->n_pes(); ++i) {
          int w = team->translate_pe(i, teams.front().team);
          if (w == me) continue;
          uint64_t theirs = 0;
          if (auto* p = static_cast<uint64_t*>(rt->ptr(&ctl[slot], w))) theirs = __atomic_load_n(p, __ATOMIC_ACQUIRE);
          else continue;
          if (theirs < entry) missing += (nmissing++ ? ", " : "") + std::to_string(w);
        }
        msg += nmissing ? "; PE(s) " + missing + " never arrived" : "; every PE arrived, some did not leave";
      } else {
        msg += " (nothing changed the awaited value)";
      }
      msg += "; the job cannot continue (finalize() returns without waiting)";
      raise(exc->timeout, msg);
    }
  }

  template <class F>
  auto blocking(const char* call, Secs timeout, const Team* team, F&& f) -> decltype(f()) {
    return blocking(call, timeout.v, team, std::forward<F>(f));
  }

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

  void write_site(const std::string& site) {
    char* s = reinterpret_cast<char*>(ctl + kTeamCounters);
    size_t n = std::min(site.size(), kSiteBytes - 1);
    std::memcpy(s, site.data(), n);
    s[n] = 0;
  }
  std::string site_of(int pe) {
    auto* s = static_cast<const char*>(rt->ptr(reinterpret_cast<char*>(ctl + kTeamCounters), pe));
    if (!s) return "?";
    return std::string(s, strnlen(s, kSiteBytes));
  }

  Team& world() { return teams.front().team; }

  // The runtime's quiet (and barriers) completes every context's operations too.
  void release_pending();

  // The runtime goes: its Blocks stop referring to it. keep: the heap is about to be
  // destroyed and their pages are to be kept. Its contexts are destroyed, or left when
  // the runtime is abandoned (never destroyed: its heap stays mapped).
  void detach_all(bool keep, bool abandoned);

  // A Runtime still joined when its Python object goes (interpreter exit after an error):
  // destroying it would wait for the other PEs, so it is left to the process exit.
  ~PyRt() {
    detach_all(false, true);
    if (rt) {
      (void)rt.release();
      auto* keep = new std::list<TeamEntry>;
      keep->splice(keep->end(), teams);
    }
  }
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

Block::Block(PyRt* o, char* p, size_t n, bool is_peer) : owner(o), ptr(p), nbytes(n), peer(is_peer) {
  owner->blocks.insert(this);
}

Block::~Block() {
  if (owner) owner->blocks.erase(this);
  if (kept) drop_pages(ptr, nbytes);
}

void PyRt::release_pending() {
  pending.clear();
  for (PyCtx* c : ctxs) c->pending.clear();
}

void PyRt::detach_all(bool keep, bool abandoned) {
  for (Block* b : blocks) {
    if (keep && rt && b->nbytes) {
      try {
        rt->keep_after_finalize(b->ptr, b->nbytes);
        keep_pages(b->ptr, b->nbytes);
        b->kept = true;
      } catch (const symmem::Error&) {  // not in a mapped heap: nothing to keep
      }
    }
    b->owner = nullptr;
    b->detached = true;
  }
  blocks.clear();
  for (PyCtx* c : ctxs) {
    if (!abandoned) {
      try {
        c->c->destroy();
      } catch (const symmem::Error&) {
      }
    } else {
      (void)c->c.release();
    }
    c->r = nullptr;
  }
  ctxs.clear();
}

// ---------------------------------------------------------------- init / finalize

// A Runtime left without finalizing keeps its Teams: destroying them would wait for the
// other PEs.
void abandon_teams(PyRt& r) {
  static auto* graveyard = new std::list<TeamEntry>;
  graveyard->splice(graveyard->end(), r.teams);
}

void init_rt(PyRt& r, py::object uid, int pe, int npes, uint64_t heap_size, uint64_t instance, double timeout,
             const std::string& tls) {
  if (r.rt) raise(exc->state, "init: this runtime is already initialized");
  symmem::InitAttr a;
  if (!uid.is_none()) {
    std::string b = uid.cast<py::bytes>();
    if (b.size() != symmem::UniqueId::kSize)
      raise(exc->invalid, "init: a unique id has " + std::to_string(symmem::UniqueId::kSize) + " bytes, not " +
                              std::to_string(b.size()));
    a.mode = symmem::InitMode::kUniqueId;
    std::memcpy(a.uid.bytes.data(), b.data(), b.size());
    if (pe < 0 || npes <= 0 || pe >= npes)
      raise(exc->invalid, "init(uid=...): pe= and n_pes= are required, 0 <= pe < n_pes");
  }
  a.my_pe = pe;
  a.n_pes = npes;
  a.heap_size = heap_size;
  a.instance_id = instance;
  a.tls = tls;
  {
    py::gil_scoped_release nogil;
    r.rt = std::make_unique<Runtime>(a);
  }
  r.me = r.rt->my_pe();
  r.npes = r.rt->n_pes();
  r.default_timeout = timeout;
  r.broken = false;
  abandon_teams(r);
  ++r.generation;
  r.teams.push_back({r.rt->team_world(), false});
  r.teams.push_back({r.rt->team_shared(), false});
  r.rt->set_wait_check([&r] { r.wait_check(); });
  void* c = nullptr;
  r.blocking("init", -1, &r.world(), [&] { c = r.rt->calloc(1, kCtlBytes); });
  if (!c) raise(exc->heap, "init: the symmetric heap cannot hold symmem's control block");
  r.ctl = static_cast<uint64_t*>(c);
}

// Returns false when the runtime was left without waiting (broken, or the barrier timed out).
// keep: arrays still referenced keep their memory (a private copy of their pages); off at
// interpreter exit, where nothing runs on them any more and copying would only cost.
bool finalize_rt(PyRt& r, double timeout, bool keep) {
  if (!r.rt) return true;
  r.release_pending();
  if (r.broken) {
    // A wait was interrupted: the PEs' sync state disagrees, so waiting for them could
    // hang. Leave the Runtime undestroyed; the process exit unmaps everything.
    r.detach_all(false, true);
    (void)r.rt.release();
    abandon_teams(r);
    r.ctl = nullptr;
    return false;
  }
  try {
    for (auto it = std::next(r.teams.begin(), 2); it != r.teams.end(); ++it)
      if (it->team.valid() && !it->destroyed) {
        r.blocking("finalize (destroying a team)", timeout, &it->team, [&] { it->team.destroy(); });
        it->destroyed = true;
      }
    r.blocking("finalize", timeout, &r.world(), [&] { r.rt->barrier_all(); });
  } catch (py::error_already_set&) {
    r.detach_all(false, true);
    (void)r.rt.release();
    abandon_teams(r);
    r.ctl = nullptr;
    throw;
  }
  r.teams.clear();
  r.detach_all(keep, false);  // arrays that outlive the runtime keep their memory (a private copy)
  r.ctl = nullptr;
  r.destroying = true;  // the destructor's barrier: bounded, never throws (see wait_check)
  r.has_deadline = timeout > 0;
  if (r.has_deadline)
    r.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout));
  {
    py::gil_scoped_release nogil;
    r.rt.reset();
  }
  r.destroying = false;
  return true;
}

// ---------------------------------------------------------------- RMA

// The RMA, atomics and signals below run on `rt`: the Runtime, or a Ctx (npes: its team's
// size, pending: its nbi keep-alive list).
template <class IO>
void rma_via(PyRt& r, IO& rt, int npes, std::vector<py::object>& pending, bool is_put, bool nbi, py::handle dst,
             py::handle src, int pe) {
  const char* call = is_put ? (nbi ? "put_nbi" : "put") : (nbi ? "get_nbi" : "get");
  r.check_pe(call, pe, npes);
  View d = view_of(dst), s = view_of(src);
  same_dtype(call, d, s);
  same_shape(call, d, s);
  const View& remote = is_put ? d : s;
  if (!is_put && !d.writeable) raise(exc->invalid, std::string(call) + ": the destination is read-only");
  if (d.size == 0) return;
  {
    ssize_t lo = 0, hi = 0;  // byte offsets of the first and last element
    for (ssize_t i = 0; i < remote.ndim; ++i) {
      ssize_t e = (remote.shape[i] - 1) * remote.strides[i];
      (e < 0 ? lo : hi) += e;
    }
    r.check_symmetric(call, is_put ? "the destination" : "the source", remote.data + lo,
                      size_t(hi - lo + remote.itemsize));
  }
  auto one = [&](ssize_t doff, ssize_t soff, size_t n) {
    if (is_put) {
      if (nbi) rt.put_nbi(d.data + doff, s.data + soff, n, pe);
      else rt.put(d.data + doff, s.data + soff, n, pe);
    } else {
      if (nbi) rt.get_nbi(d.data + doff, s.data + soff, n, pe);
      else rt.get(d.data + doff, s.data + soff, n, pe);
    }
  };
  const size_t bytes = size_t(d.size * d.itemsize);
  if (bytes >= kReleaseGilBytes) {
    py::gil_scoped_release nogil;
    for_each_run(d, s, one);
  } else {
    for_each_run(d, s, one);
  }
  if (nbi) {
    pending.push_back(py::reinterpret_borrow<py::object>(dst));
    pending.push_back(py::reinterpret_borrow<py::object>(src));
  }
}

void rma(PyRt& r, bool is_put, bool nbi, py::handle dst, py::handle src, int pe) {
  rma_via(r, r.need(is_put ? (nbi ? "put_nbi" : "put") : (nbi ? "get_nbi" : "get")), -1, r.pending, is_put, nbi, dst,
          src, pe);
}

// put / get in their usual form, checked inline without building Views: three positional
// arguments, two C-contiguous ndarrays of one dtype and shape, a PE in range, the remote
// side in this PE's heap, less than kReleaseGilBytes. Anything else (and every error) is
// left to rma(), which says what is wrong. Returns whether it moved the data.
bool rma_usual(PyRt& r, bool is_put, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  if (nargs != 3 || kwnames || !r.rt) return false;
  static PyTypeObject* const ndarray = py::detail::npy_api::get().PyArray_Type_;
  PyObject* dst = args[0];
  PyObject* src = args[1];
  if (Py_TYPE(dst) != ndarray || Py_TYPE(src) != ndarray || !PyLong_CheckExact(args[2])) return false;
  const auto* d = py::detail::array_proxy(dst);
  const auto* s = py::detail::array_proxy(src);
  constexpr int kContig = py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_;
  constexpr int kWrite = py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  if (!(d->flags & s->flags & kContig) || (!is_put && !(d->flags & kWrite)) || d->nd != s->nd) return false;
  const auto* dd = py::detail::array_descriptor_proxy(d->descr);
  const auto* sd = py::detail::array_descriptor_proxy(s->descr);
  const char k = dd->kind;
  if (k != sd->kind || dd->elsize != sd->elsize || !(k == 'f' || k == 'i' || k == 'u' || k == 'c' || k == 'b'))
    return false;
  ssize_t n = 1;
  for (int i = 0; i < d->nd; ++i) {
    if (d->dimensions[i] != s->dimensions[i]) return false;
    n *= d->dimensions[i];
  }
  const size_t bytes = size_t(n) * size_t(dd->elsize);
  const long pe = PyLong_AsLong(args[2]);
  if (pe == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  if (bytes == 0 || bytes >= kReleaseGilBytes || static_cast<unsigned long>(pe) >= static_cast<unsigned long>(r.npes))
    return false;
  const char* remote = is_put ? d->data : s->data;
  if (!r.rt->ptr(remote, r.me) || !r.rt->ptr(remote + bytes - 1, r.me)) return false;
  if (is_put) r.rt->put(d->data, s->data, bytes, int(pe));
  else r.rt->get(d->data, s->data, bytes, int(pe));
  return true;
}

// iput / iget: nelems elements, every dst_stride-th of dst and src_stride-th of src.
void strided(PyRt& r, bool is_put, py::handle dst, py::handle src, ssize_t dst_stride, ssize_t src_stride,
             py::object nelems_o, int pe) {
  const char* call = is_put ? "iput" : "iget";
  Runtime& rt = r.need(call);
  r.check_pe(call, pe);
  View d = view_of(dst), s = view_of(src);
  same_dtype(call, d, s);
  if (d.ndim != 1 || s.ndim != 1) raise(exc->shape, std::string(call) + ": takes 1-d arrays");
  if (dst_stride < 1 || src_stride < 1) raise(exc->invalid, std::string(call) + ": strides must be >= 1");
  ssize_t n = nelems_o.is_none() ? std::min((d.size + dst_stride - 1) / dst_stride, (s.size + src_stride - 1) / src_stride)
                                 : nelems_o.cast<ssize_t>();
  if (nelems_o.is_none() && (d.size + dst_stride - 1) / dst_stride != (s.size + src_stride - 1) / src_stride)
    raise(exc->shape, std::string(call) + ": the strides select " +
                          std::to_string((d.size + dst_stride - 1) / dst_stride) + " elements of dst but " +
                          std::to_string((s.size + src_stride - 1) / src_stride) + " of src; pass nelems=");
  if (n < 0 || (n > 0 && ((n - 1) * dst_stride >= d.size || (n - 1) * src_stride >= s.size)))
    raise(exc->shape, std::string(call) + ": " + std::to_string(n) + " elements at these strides run past the arrays");
  if (!is_put && !d.writeable) raise(exc->invalid, std::string(call) + ": the destination is read-only");
  const size_t es = size_t(d.itemsize);
  for (ssize_t i = 0; i < n; ++i) {
    char* dp = d.data + i * dst_stride * d.strides[0];
    char* sp = s.data + i * src_stride * s.strides[0];
    if (is_put) rt.put(dp, sp, es, pe);
    else rt.get(dp, sp, es, pe);
  }
}

template <class IO>
void p_via(PyRt& r, IO& rt, int npes, py::handle dst, py::handle value, int pe, py::handle index) {
  r.check_pe("p", pe, npes);
  View d = view_of(dst);
  char* at = element("p", d, index);
  dispatch("p", d, [&](auto t) {
    using T = decltype(t);
    T v = value_as<T>("p", d, value);
    rt.put(static_cast<void*>(at), &v, sizeof(T), pe);
  });
}

template <class IO>
py::object g_via(PyRt& r, IO& rt, int npes, py::handle src, int pe, py::handle index) {
  r.check_pe("g", pe, npes);
  View s = view_of(src);
  char* at = element("g", s, index);
  return dispatch("g", s, [&](auto t) -> py::object {
    using T = decltype(t);
    T v;
    rt.get(&v, at, sizeof(T), pe);
    return to_py(v);
  });
}

void p_(PyRt& r, py::handle dst, py::handle value, int pe, py::handle index) {
  p_via(r, r.need("p"), -1, dst, value, pe, index);
}
py::object g_(PyRt& r, py::handle src, int pe, py::handle index) { return g_via(r, r.need("g"), -1, src, pe, index); }

// ---------------------------------------------------------------- atomics

enum Amo { kFetch, kSet, kSwap, kCswap, kFetchAdd, kAdd, kFetchInc, kInc, kFetchAnd, kAnd, kFetchOr, kOr, kFetchXor, kXor };
const char* const kAmoName[] = {"atomic_fetch",     "atomic_set",    "atomic_swap",      "atomic_compare_swap",
                                "atomic_fetch_add", "atomic_add",    "atomic_fetch_inc", "atomic_inc",
                                "atomic_fetch_and", "atomic_and",    "atomic_fetch_or",  "atomic_or",
                                "atomic_fetch_xor", "atomic_xor"};

template <class IO>
py::object amo_via(PyRt& r, IO& rt, int npes, Amo k, py::handle a, py::handle v1, py::handle v2, int pe,
                   py::handle index) {
  const char* call = kAmoName[k];
  r.check_pe(call, pe, npes);
  View v = view_of(a);
  char* at = element(call, v, index);
  r.check_symmetric(call, "the atomic's array", at, size_t(v.itemsize));
  if (reinterpret_cast<uintptr_t>(at) % uintptr_t(v.itemsize))
    raise(exc->invalid, std::string(call) + ": the element is not naturally aligned");
  return dispatch(call, v, [&](auto t) -> py::object {
    using T = decltype(t);
    T* p = reinterpret_cast<T*>(at);
    auto bad = [&](const char* which) -> py::object {
      raise(exc->dtype, std::string(call) + ": dtype " + dtype_name(v) + " is not one of the " + which +
                            " types of OpenSHMEM (int32, int64, uint32, uint64" +
                            (std::string(which) == "extended AMO" ? ", float32, float64" : "") + ")");
    };
    if (k == kFetch || k == kSet || k == kSwap) {
      if constexpr (symmem::AmoExtType<T>) {
        if (k == kFetch) return to_py(rt.atomic_fetch(p, pe));
        T x = value_as<T>(call, v, v1);
        if (k == kSet) {
          rt.atomic_set(p, x, pe);
          return py::none();
        }
        return to_py(rt.atomic_swap(p, x, pe));
      } else {
        return bad("extended AMO");
      }
    }
    if (k == kCswap || k == kFetchAdd || k == kAdd || k == kFetchInc || k == kInc) {
      if constexpr (symmem::AmoType<T>) {
        switch (k) {
          case kCswap: return to_py(rt.atomic_compare_swap(p, value_as<T>(call, v, v1), value_as<T>(call, v, v2), pe));
          case kFetchAdd: return to_py(rt.atomic_fetch_add(p, value_as<T>(call, v, v1), pe));
          case kAdd: rt.atomic_add(p, value_as<T>(call, v, v1), pe); return py::none();
          case kFetchInc: return to_py(rt.atomic_fetch_inc(p, pe));
          default: rt.atomic_inc(p, pe); return py::none();
        }
      } else {
        return bad("standard AMO");
      }
    }
    if constexpr (symmem::AmoBitwiseType<T>) {
      T x = value_as<T>(call, v, v1);
      switch (k) {
        case kFetchAnd: return to_py(rt.atomic_fetch_and(p, x, pe));
        case kAnd: rt.atomic_and(p, x, pe); return py::none();
        case kFetchOr: return to_py(rt.atomic_fetch_or(p, x, pe));
        case kOr: rt.atomic_or(p, x, pe); return py::none();
        case kFetchXor: return to_py(rt.atomic_fetch_xor(p, x, pe));
        default: rt.atomic_xor(p, x, pe); return py::none();
      }
    } else {
      return bad("bitwise AMO");
    }
  });
}

py::object amo(PyRt& r, Amo k, py::handle a, py::handle v1, py::handle v2, int pe, py::handle index) {
  return amo_via(r, r.need(kAmoName[k]), -1, k, a, v1, v2, pe, index);
}

// ---------------------------------------------------------------- waits and signals

Cmp cmp_of(py::handle c) {
  if (py::isinstance<py::int_>(c)) {
    int x = c.cast<int>();
    if (x >= 0 && x <= 5) return Cmp(x);
  } else if (py::isinstance<py::str>(c)) {
    std::string s = c.cast<std::string>();
    if (s == "==" || s == "eq") return Cmp::kEq;
    if (s == "!=" || s == "ne") return Cmp::kNe;
    if (s == ">" || s == "gt") return Cmp::kGt;
    if (s == ">=" || s == "ge") return Cmp::kGe;
    if (s == "<" || s == "lt") return Cmp::kLt;
    if (s == "<=" || s == "le") return Cmp::kLe;
  }
  raise(exc->invalid, "cmp must be one of '==', '!=', '>', '>=', '<', '<=' (or eq, ne, gt, ge, lt, le, CMP.*), not " +
                          py::repr(c).cast<std::string>());
}

template <class T>
bool compare(T a, Cmp c, T b) {
  switch (c) {
    case Cmp::kEq: return a == b;
    case Cmp::kNe: return a != b;
    case Cmp::kGt: return a > b;
    case Cmp::kGe: return a >= b;
    case Cmp::kLt: return a < b;
    case Cmp::kLe: return a <= b;
  }
  return false;
}

py::object wait_until_(PyRt& r, py::handle a, py::handle cmp, py::handle value, py::handle index, Secs timeout,
                       bool block) {
  const char* call = block ? "wait_until" : "test";
  Runtime& rt = r.need(call);
  View v = view_of(a);
  char* at = element(call, v, index);
  r.check_symmetric(call, "the awaited variable", at, size_t(v.itemsize));
  Cmp c = cmp_of(cmp);
  return dispatch(call, v, [&](auto t) -> py::object {
    using T = decltype(t);
    if constexpr (symmem::WaitType<T>) {
      T x = value_as<T>(call, v, value);
      T* p = reinterpret_cast<T*>(at);
      if (!block) return py::bool_(rt.test(p, c, x));
      T got = r.blocking(call, timeout, nullptr, [&] { return rt.wait_until(p, c, x); });
      return to_py(got);
    } else {
      raise(exc->dtype, std::string(call) + ": dtype " + dtype_name(v) +
                            " cannot be waited on (int16, uint16, int32, uint32, int64, uint64)");
    }
  });
}

// wait_until_all / any / some and their _vector forms, and the test_ forms (block false).
// mode 0 all, 1 any, 2 some. values: one value, or one per element (vector).
py::object wait_set(PyRt& r, int mode, bool block, py::handle a, py::handle cmp, py::handle values,
                    py::handle status, Secs timeout) {
  static const char* const names[2][3] = {{"test_all", "test_any", "test_some"},
                                          {"wait_until_all", "wait_until_any", "wait_until_some"}};
  const char* call = names[block][mode];
  Runtime& rt = r.need(call);
  View v = view_of(a);
  if (v.ndim != 1) raise(exc->shape, std::string(call) + ": takes a 1-d array of variables");
  if (v.size) r.check_symmetric(call, "the awaited array", v.data, size_t(v.size * v.itemsize));
  Cmp c = cmp_of(cmp);
  std::vector<char> excluded(size_t(v.size), 0);
  if (!status.is_none()) {
    py::list st = py::reinterpret_steal<py::list>(PySequence_List(status.ptr()));
    if (!st) throw py::error_already_set();
    if (ssize_t(st.size()) != v.size)
      raise(exc->shape, std::string(call) + ": status has " + std::to_string(st.size()) + " entries for " +
                            std::to_string(v.size) + " variables");
    for (ssize_t i = 0; i < v.size; ++i) excluded[size_t(i)] = py::cast<long>(st[size_t(i)]) != 0;
  }
  return dispatch(call, v, [&](auto t) -> py::object {
    using T = decltype(t);
    if constexpr (symmem::WaitType<T>) {
      std::vector<T> xs;
      bool vec = !PyNumber_Check(values.ptr()) || py::isinstance<py::array>(values);
      if (vec) {
        View xv = view_of(values);
        if (xv.size != v.size)
          raise(exc->shape, std::string(call) + ": " + std::to_string(xv.size) + " values for " +
                                std::to_string(v.size) + " variables");
        py::list l = xv.keep.attr("ravel")().attr("tolist")();
        for (auto x : l) xs.push_back(value_as<T>(call, v, x));
      } else {
        xs.assign(size_t(v.size), value_as<T>(call, v, values));
      }
      std::vector<char> done(size_t(v.size), 0);
      auto elem = [&](ssize_t i) { return reinterpret_cast<T*>(v.data + i * v.strides[0]); };
      size_t found = SIZE_MAX;
      std::vector<size_t> some;
      auto pass = [&]() -> bool {
        bool all = true, any = false;
        for (ssize_t i = 0; i < v.size; ++i) {
          if (excluded[size_t(i)]) continue;
          if (!done[size_t(i)]) done[size_t(i)] = rt.test(elem(i), c, xs[size_t(i)]);
          if (done[size_t(i)]) {
            any = true;
            if (mode == 1 && found == SIZE_MAX) found = size_t(i);
          } else {
            all = false;
          }
        }
        if (mode == 0) return all;
        if (mode == 1) return any;
        if (!any) return false;
        for (ssize_t i = 0; i < v.size; ++i)
          if (!excluded[size_t(i)] && done[size_t(i)]) some.push_back(size_t(i));
        return true;
      };
      bool active = false;
      for (ssize_t i = 0; i < v.size; ++i) active |= !excluded[size_t(i)];
      if (!active) {  // the standard: nothing to wait for
        if (mode == 0) return block ? py::object(py::none()) : py::object(py::bool_(true));
        if (mode == 1) return py::none();
        return py::list();
      }
      bool ok;
      if (block) {
        r.blocking(call, timeout, nullptr, [&] { r.poll(pass); });
        ok = true;
      } else {
        ok = pass();
      }
      if (mode == 0) return block ? py::object(py::none()) : py::object(py::bool_(ok));
      if (mode == 1) return ok ? py::object(py::int_(found)) : py::object(py::none());
      return py::cast(some);
    } else {
      raise(exc->dtype, std::string(call) + ": dtype " + dtype_name(v) + " cannot be waited on");
    }
  });
}

uint64_t* signal_word(PyRt& r, const char* call, py::handle sig, py::handle index) {
  View v = view_of(sig);
  if (v.kind != 'u' || v.itemsize != 8)
    raise(exc->dtype, std::string(call) + ": a signal is a uint64 array (symmem.signals()), not " + dtype_name(v));
  char* at = element(call, v, index);
  r.check_symmetric(call, "the signal", at, 8);
  return reinterpret_cast<uint64_t*>(at);
}

SignalOp sig_op_of(py::handle op) {
  if (py::isinstance<py::int_>(op)) return op.cast<int>() ? SignalOp::kAdd : SignalOp::kSet;
  std::string s = op.cast<std::string>();
  if (s == "set") return SignalOp::kSet;
  if (s == "add") return SignalOp::kAdd;
  raise(exc->invalid, "signal op must be 'set' or 'add', not '" + s + "'");
}

template <class IO>
void put_signal_via(PyRt& r, IO& rt, int npes, std::vector<py::object>& pending, bool nbi, py::handle dst,
                    py::handle src, py::handle sig, uint64_t value, int pe, py::handle op, py::handle index) {
  const char* call = nbi ? "put_signal_nbi" : "put_signal";
  r.check_pe(call, pe, npes);
  View d = view_of(dst), s = view_of(src);
  same_dtype(call, d, s);
  same_shape(call, d, s);
  if (!d.c_contig || !s.c_contig) raise(exc->shape, std::string(call) + ": dst and src must be contiguous");
  uint64_t* w = signal_word(r, call, sig, index);
  SignalOp o = sig_op_of(op);
  const size_t bytes = size_t(d.size * d.itemsize);
  if (bytes >= kReleaseGilBytes) {
    py::gil_scoped_release nogil;
    rt.put_signal(d.data, s.data, bytes, w, value, o, pe);
  } else {
    rt.put_signal(d.data, s.data, bytes, w, value, o, pe);
  }
  if (nbi) {
    pending.push_back(py::reinterpret_borrow<py::object>(dst));
    pending.push_back(py::reinterpret_borrow<py::object>(src));
  }
}

void put_signal_(PyRt& r, bool nbi, py::handle dst, py::handle src, py::handle sig, uint64_t value, int pe,
                 py::handle op, py::handle index) {
  put_signal_via(r, r.need(nbi ? "put_signal_nbi" : "put_signal"), -1, r.pending, nbi, dst, src, sig, value, pe, op,
                 index);
}

// ---------------------------------------------------------------- teams and collectives

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

py::object with_fast_calls(py::object obj, PyTeam* t);  // below, with the other fast calls

py::object make_team(PyTeam& parent, Team&& t) {
  if (!t.valid()) return py::none();
  parent.r->teams.push_back({std::move(t), false});
  auto* pt = new PyTeam(parent.owner, parent.r, &parent.r->teams.back(), parent.r->generation);
  return with_fast_calls(py::cast(pt, py::return_value_policy::take_ownership), pt);
}

ReduceOp op_of(py::handle op) {
  std::string s = py::isinstance<py::str>(op) ? op.cast<std::string>() : py::str(op.attr("value")).cast<std::string>();
  if (s == "sum") return ReduceOp::kSum;
  if (s == "prod") return ReduceOp::kProd;
  if (s == "min") return ReduceOp::kMin;
  if (s == "max") return ReduceOp::kMax;
  if (s == "and" || s == "band") return ReduceOp::kAnd;
  if (s == "or" || s == "bor") return ReduceOp::kOr;
  if (s == "xor" || s == "bxor") return ReduceOp::kXor;
  raise(exc->invalid, "op must be one of sum, prod, min, max, and, or, xor; not '" + s + "'");
}

// dst, src of a collective: contiguous, symmetric, one dtype.
void coll_args(PyRt& r, const char* call, View& d, View& s, py::handle dst, py::handle src) {
  d = view_of(dst);
  s = view_of(src);
  same_dtype(call, d, s);
  if (!d.c_contig || !s.c_contig)
    raise(exc->shape, std::string(call) + ": dst and src must be contiguous (use np.ascontiguousarray on a copy)");
  if (!d.writeable) raise(exc->invalid, std::string(call) + ": dst is read-only");
  if (d.size) r.check_symmetric(call, "dst", d.data, size_t(d.size * d.itemsize));
  if (s.size) r.check_symmetric(call, "src", s.data, size_t(s.size * s.itemsize));
}

// A contiguous range of bytes as a span of T for the typed C++ collectives.
template <class T>
std::span<T> span_of(const View& v) {
  return {reinterpret_cast<T*>(v.data), size_t(v.size)};
}

template <ReduceOp Op, class T>
void reduce_typed(Team& t, int fold, const View& d, const View& s) {
  if constexpr (symmem::Reducible<T, Op>) {
    if (fold == 0) t.reduce<Op>(span_of<T>(d), std::span<const T>(span_of<T>(s)));
    else if constexpr (Op == ReduceOp::kSum) {
      if (fold == 1) t.inscan(span_of<T>(d), std::span<const T>(span_of<T>(s)));
      else t.exscan(span_of<T>(d), std::span<const T>(span_of<T>(s)));
    }
  }
}

template <class T>
bool reducible(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return symmem::Reducible<T, ReduceOp::kSum>;
    case ReduceOp::kProd: return symmem::Reducible<T, ReduceOp::kProd>;
    case ReduceOp::kMin: return symmem::Reducible<T, ReduceOp::kMin>;
    case ReduceOp::kMax: return symmem::Reducible<T, ReduceOp::kMax>;
    case ReduceOp::kAnd: return symmem::Reducible<T, ReduceOp::kAnd>;
    case ReduceOp::kOr: return symmem::Reducible<T, ReduceOp::kOr>;
    case ReduceOp::kXor: return symmem::Reducible<T, ReduceOp::kXor>;
  }
  return false;
}

const char* op_name(ReduceOp op) {
  static const char* const n[] = {"sum", "prod", "min", "max", "and", "or", "xor"};
  return n[int(op)];
}

void team_reduce(PyTeam& pt, int fold, py::handle dst, py::handle src, py::handle op_h, Secs timeout) {
  const char* call = fold == 0 ? "reduce" : fold == 1 ? "inscan" : "exscan";
  Team& t = pt.t(call);
  View d, s;
  coll_args(*pt.r, call, d, s, dst, src);
  if (d.size < s.size)
    raise(exc->shape, std::string(call) + ": dst has " + std::to_string(d.size) + " elements, src " +
                          std::to_string(s.size));
  ReduceOp op = fold == 0 ? op_of(op_h) : ReduceOp::kSum;
  dispatch(call, s, [&](auto tag) {
    using T = decltype(tag);
    if (!reducible<T>(op))
      raise(exc->dtype, std::string(call) + ": op '" + op_name(op) + "' does not take dtype " + dtype_name(s) +
                            " (OpenSHMEM table 10: bitwise ops take integers, min/max no complex)");
    pt.r->blocking(call, timeout, &t, [&] {
      switch (op) {
        case ReduceOp::kSum: reduce_typed<ReduceOp::kSum, T>(t, fold, d, s); break;
        case ReduceOp::kProd: reduce_typed<ReduceOp::kProd, T>(t, fold, d, s); break;
        case ReduceOp::kMin: reduce_typed<ReduceOp::kMin, T>(t, fold, d, s); break;
        case ReduceOp::kMax: reduce_typed<ReduceOp::kMax, T>(t, fold, d, s); break;
        case ReduceOp::kAnd: reduce_typed<ReduceOp::kAnd, T>(t, fold, d, s); break;
        case ReduceOp::kOr: reduce_typed<ReduceOp::kOr, T>(t, fold, d, s); break;
        case ReduceOp::kXor: reduce_typed<ReduceOp::kXor, T>(t, fold, d, s); break;
      }
    });
  });
}

// broadcast / fcollect / collect / alltoall move bytes: elements as byte ranges of the
// element size (1, 2, 4, 8 or 16 bytes).
template <class F>
auto by_size(const char* call, const View& v, F f) {
  switch (v.itemsize) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
    case 16: return f(std::complex<double>{});
  }
  raise(exc->dtype, std::string(call) + ": elements of " + std::to_string(v.itemsize) + " bytes are not supported");
}

py::object team_move(PyTeam& pt, int what, py::handle dst, py::handle src, int root, Secs timeout) {
  static const char* const names[] = {"broadcast", "fcollect", "collect", "alltoall"};
  const char* call = names[what];
  Team& t = pt.t(call);
  View d, s;
  coll_args(*pt.r, call, d, s, dst, src);
  const ssize_t n = t.n_pes();
  if (what == 0 && (root < 0 || root >= n))
    raise(exc->pe, std::string(call) + ": root " + std::to_string(root) + " is not a member (the team has " +
                       std::to_string(n) + " PEs)");
  if ((what == 0 && d.size < s.size) || (what == 1 && d.size < n * s.size) || (what == 3 && d.size < s.size))
    raise(exc->shape, std::string(call) + ": dst has " + std::to_string(d.size) + " elements, it needs " +
                          std::to_string(what == 1 ? n * s.size : s.size));
  if (what == 3 && s.size % n)
    raise(exc->shape, std::string(call) + ": src has " + std::to_string(s.size) + " elements, not a multiple of " +
                          std::to_string(n) + " PEs");
  size_t total = 0;
  by_size(call, s, [&](auto tag) {
    using T = decltype(tag);
    pt.r->blocking(call, timeout, &t, [&] {
      auto ds = span_of<T>(d);
      auto ss = std::span<const T>(span_of<T>(s));
      switch (what) {
        case 0: t.broadcast(ds, ss, root); break;
        case 1: t.fcollect(ds, ss); break;
        case 2: total = t.collect(ds, ss); break;
        default: t.alltoall(ds, ss); break;
      }
    });
  });
  if (what == 2) return py::int_(total);
  return py::none();
}

// alltoalls: block j (nelems elements, src_stride apart, starting at j*nelems*src_stride)
// goes to member j, landing dst_stride apart at me*nelems*dst_stride (Team::alltoalls).
void team_alltoalls(PyTeam& pt, py::handle dst, py::handle src, ssize_t dst_stride, ssize_t src_stride,
                    ssize_t nelems, Secs timeout) {
  const char* call = "alltoalls";
  Team& t = pt.t(call);
  View d, s;
  coll_args(*pt.r, call, d, s, dst, src);
  const ssize_t n = t.n_pes();
  if (dst_stride < 1 || src_stride < 1) raise(exc->invalid, "alltoalls: strides must be >= 1");
  if (nelems < 0) nelems = s.size / (n * src_stride);
  auto need = [&](ssize_t stride) { return nelems ? ((n * nelems - 1) * stride + 1) : 0; };
  if (s.size < need(src_stride) || d.size < need(dst_stride))
    raise(exc->shape, "alltoalls: " + std::to_string(nelems) + " elements per PE at these strides need " +
                          std::to_string(need(src_stride)) + " src and " + std::to_string(need(dst_stride)) +
                          " dst elements");
  by_size(call, s, [&](auto tag) {
    using T = decltype(tag);
    pt.r->blocking(call, timeout, &t, [&] {
      t.alltoalls(span_of<T>(d), std::span<const T>(span_of<T>(s)), dst_stride, src_stride, size_t(nelems));
    });
  });
}

// ---------------------------------------------------------------- locks

// A ticket lock in PE 0's copy of a symmetric uint64 (high half: next ticket, low half:
// now serving), as shmem_set_lock.
void lock_acquire(PyRt& r, py::handle a, Secs timeout) {
  Runtime& rt = r.need("Lock.acquire");
  View v = view_of(a);
  auto* w = reinterpret_cast<uint64_t*>(v.data);
  uint64_t old = rt.atomic_fetch_add(w, uint64_t(1) << 32, 0);
  const uint32_t ticket = uint32_t(old >> 32);
  if (uint32_t(old) == ticket) return;
  r.blocking("Lock.acquire", timeout, nullptr,
             [&] { r.poll([&] { return uint32_t(rt.atomic_fetch(w, 0)) == ticket; }); });
}

bool lock_test(PyRt& r, py::handle a) {
  Runtime& rt = r.need("Lock.test");
  View v = view_of(a);
  auto* w = reinterpret_cast<uint64_t*>(v.data);
  uint64_t cur = rt.atomic_fetch(w, 0);
  if (uint32_t(cur) != uint32_t(cur >> 32)) return false;
  return rt.atomic_compare_swap(w, cur, cur + (uint64_t(1) << 32), 0) == cur;
}

void lock_release(PyRt& r, py::handle a) {
  Runtime& rt = r.need("Lock.release");
  View v = view_of(a);
  rt.quiet();
  rt.atomic_add(reinterpret_cast<uint64_t*>(v.data), uint64_t(1), 0);
}

// ---------------------------------------------------------------- int addresses (compat)

// Copies n bytes between this process's addresses without trusting them: a bad address
// gives EFAULT, returned as errno (0: copied); never a crash. Runs without the GIL.
int checked_copy(void* dst, const void* src, size_t n) {
  if (!n) return 0;
  struct iovec l{dst, n}, rm{const_cast<void*>(src), n};
  ssize_t got = process_vm_readv(getpid(), &l, 1, &rm, 1, 0);
  if (got == ssize_t(n)) return 0;
  return got < 0 ? errno : EFAULT;
}

void copy_failed(int err, uintptr_t dst, uintptr_t src, size_t n) {
  if (err == EFAULT)
    raise(exc->invalid, "the local range [" + std::to_string(src) + ", +" + std::to_string(n) + ") or [" +
                            std::to_string(dst) + ", +" + std::to_string(n) + ") is not mapped in this process");
  raise(exc->invalid, std::string("cannot check an int address range (process_vm_readv: ") + std::strerror(err) + ")");
}


void set_error(const symmem::Error& e) {
  py::object cls;
  switch (e.code()) {
    case Errc::kInvalidArgument: cls = exc->invalid; break;
    case Errc::kTimeout: cls = exc->timeout; break;
    case Errc::kNoMemory: cls = exc->heap; break;
    case Errc::kState: cls = exc->state; break;
    case Errc::kMismatch: cls = exc->symmetry; break;
    case Errc::kIo:
    case Errc::kRefused: cls = exc->init; break;
    default: cls = exc->base; break;
  }
  PyErr_SetString(cls.ptr(), e.what());
}

// ---------------------------------------------------------------- vectorcall entry points
// The calls of the small-message path (put, get, p, g, atomics) as METH_FASTCALL builtins
// bound to their runtime: no pybind11 dispatcher, and index= without building a kwargs
// dict. Arguments: positional, or by name (kwnames).
constexpr int kFastBarrierAll = 4 + kXor + 1;  // fast_call kinds: put get p g, the atomics, then barrier_all sync_all quiet fence my_pe n_pes

// A timeout argument of a fast call (absent or None: the runtime's default).
Secs secs_of(PyObject* o) {
  if (!o || o == Py_None) return {};
  py::detail::make_caster<Secs> c;
  if (!c.load(o, true)) raise(exc->dtype, "timeout must be a number of seconds or None");
  return py::detail::cast_op<Secs>(c);
}

PyObject* kSum() {
  static PyObject* s = PyUnicode_InternFromString("sum");
  return s;
}

// The interned str of a keyword name (a string literal): keyword names in calls are
// interned, so comparing pointers finds them without a string compare.
PyObject* interned(const char* name) {
  static std::vector<std::pair<const char*, PyObject*>> cache;
  for (auto& [n, o] : cache)
    if (n == name) return o;
  cache.emplace_back(name, PyUnicode_InternFromString(name));
  return cache.back().second;
}

struct FastArgs {
  PyObject* const* args;
  Py_ssize_t nargs;
  PyObject* kwnames;
  const char* call;
  // Argument i, called `name`; nullptr when absent.
  PyObject* at(Py_ssize_t i, const char* name) const {
    if (i < nargs) return args[i];
    if (kwnames) {
      PyObject* want = interned(name);
      for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); ++k)
        if (PyTuple_GET_ITEM(kwnames, k) == want) return args[nargs + k];
      for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); ++k)
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, k), name) == 0) return args[nargs + k];
    }
    return nullptr;
  }
  PyObject* need(Py_ssize_t i, const char* name) const {
    PyObject* o = at(i, name);
    if (!o) {
      PyErr_Format(PyExc_TypeError, "%s() missing argument '%s'", call, name);
      throw py::error_already_set();
    }
    return o;
  }
  int pe(Py_ssize_t i) const {
    PyObject* o = need(i, "pe");
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
    if (v < INT32_MIN || v > INT32_MAX) return -1;
    return int(v);
  }
  void check(Py_ssize_t max_pos, std::initializer_list<const char*> names) const {
    if (nargs > max_pos) {
      PyErr_Format(PyExc_TypeError, "%s() takes at most %zd positional arguments", call, max_pos);
      throw py::error_already_set();
    }
    if (!kwnames) return;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); ++k) {
      bool ok = false;
      PyObject* kw = PyTuple_GET_ITEM(kwnames, k);
      for (const char* n : names) ok = ok || kw == interned(n);
      for (const char* n : names) ok = ok || PyUnicode_CompareWithASCIIString(kw, n) == 0;
      if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", call, PyTuple_GET_ITEM(kwnames, k));
        throw py::error_already_set();
      }
    }
  }
};

// Runs a fast call's body (a new reference, or nullptr with the error set) with the C++
// exceptions it throws set as the Python errors they stand for.
template <class F>
PyObject* py_guard(F&& body) noexcept {
  try {
    return body();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const symmem::Error& e) {
    set_error(e);
  } catch (const py::builtin_exception& e) {
    e.set_error();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

template <int Kind>
PyObject* fast_call(PyObject* cap, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const names[] = {"put", "get", "p", "g"};
  return py_guard([&]() -> PyObject* {
    PyRt& r = *static_cast<PyRt*>(PyCapsule_GetPointer(cap, nullptr));
    if constexpr (Kind < 2) {
      if (rma_usual(r, Kind == 0, args, nargs, kwnames)) Py_RETURN_NONE;
      FastArgs a{args, nargs, kwnames, names[Kind]};
      a.check(3, {"dst", "src", "pe"});
      rma(r, Kind == 0, false, a.need(0, "dst"), a.need(1, "src"), a.pe(2));
      Py_RETURN_NONE;
    } else if constexpr (Kind == 2) {
      FastArgs a{args, nargs, kwnames, "p"};
      a.check(3, {"dst", "value", "pe", "index"});
      PyObject* idx = a.at(99, "index");
      p_(r, a.need(0, "dst"), a.need(1, "value"), a.pe(2), idx ? py::handle(idx) : py::handle(Py_None));
      Py_RETURN_NONE;
    } else if constexpr (Kind == 3) {
      FastArgs a{args, nargs, kwnames, "g"};
      a.check(2, {"src", "pe", "index"});
      PyObject* idx = a.at(99, "index");
      return g_(r, a.need(0, "src"), a.pe(1), idx ? py::handle(idx) : py::handle(Py_None)).release().ptr();
    } else if constexpr (Kind >= kFastBarrierAll) {
      static const char* const nm[] = {"barrier_all", "sync_all", "quiet", "fence", "my_pe", "n_pes"};
      FastArgs a{args, nargs, kwnames, nm[Kind - kFastBarrierAll]};
      if constexpr (Kind >= kFastBarrierAll + 4) {
        a.check(0, {});
        r.need(a.call);
        return PyLong_FromLong(Kind == kFastBarrierAll + 4 ? r.me : r.npes);
      }
      a.check(0, {"timeout"});
      Runtime& rt = r.need(a.call);
      if constexpr (Kind == kFastBarrierAll) {
        r.blocking("barrier_all", secs_of(a.at(99, "timeout")), &r.world(), [&] { rt.barrier_all(); });
        r.release_pending();
      } else if constexpr (Kind == kFastBarrierAll + 1) {
        r.blocking("sync_all", secs_of(a.at(99, "timeout")), &r.world(), [&] { rt.sync_all(); });
      } else if constexpr (Kind == kFastBarrierAll + 2) {
        a.check(0, {});
        {
          py::gil_scoped_release nogil;
          rt.quiet();
        }
        r.release_pending();
      } else if constexpr (Kind == kFastBarrierAll + 3) {
        a.check(0, {});
        rt.fence();
      }
      Py_RETURN_NONE;
    } else {
      constexpr Amo k = Amo(Kind - 4);
      constexpr bool two = k == kCswap, none = k == kFetch || k == kFetchInc || k == kInc;
      FastArgs a{args, nargs, kwnames, kAmoName[k]};
      PyObject* idx = a.at(99, "index");
      py::handle ih = idx ? py::handle(idx) : py::handle(Py_None);
      py::object out;
      if constexpr (none) {
        a.check(2, {"a", "pe", "index"});
        out = amo(r, k, a.need(0, "a"), py::none(), py::none(), a.pe(1), ih);
      } else if constexpr (two) {
        a.check(4, {"a", "cond", "value", "pe", "index"});
        out = amo(r, k, a.need(0, "a"), a.need(1, "cond"), a.need(2, "value"), a.pe(3), ih);
      } else {
        a.check(3, {"a", "value", "pe", "index"});
        out = amo(r, k, a.need(0, "a"), a.need(1, "value"), py::none(), a.pe(2), ih);
      }
      return out.release().ptr();
    }
  });
}

const char* fast_name(int k) {
  static const char* const first[] = {"put", "get", "p", "g"};
  static const char* const last[] = {"barrier_all", "sync_all", "quiet", "fence", "my_pe", "n_pes"};
  return k < 4 ? first[k] : k >= kFastBarrierAll ? last[k - kFastBarrierAll] : kAmoName[k - 4];
}

// The team calls of the collective path as METH_FASTCALL builtins bound to one Team
// object (set on it at creation): reduce, broadcast, fcollect, alltoall, barrier, sync. The
// capsule holds the team's liveness token, so a call kept past its team's life raises.
struct TeamRef {
  PyTeam* t;
  std::shared_ptr<bool> alive;
};
const char* const kTeamFast[] = {"reduce", "broadcast", "fcollect", "alltoall", "barrier", "sync"};

template <int Kind>
PyObject* team_fast_call(PyObject* cap, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return py_guard([&]() -> PyObject* {
    auto* ref = static_cast<TeamRef*>(PyCapsule_GetPointer(cap, nullptr));
    if (!*ref->alive) raise(exc->state, std::string(kTeamFast[Kind]) + ": the Team object is gone");
    PyTeam& pt = *ref->t;
    FastArgs a{args, nargs, kwnames, kTeamFast[Kind]};
    if constexpr (Kind == 0) {
      a.check(3, {"dst", "src", "op", "timeout"});
      PyObject* op = a.at(2, "op");
      team_reduce(pt, 0, a.need(0, "dst"), a.need(1, "src"), op ? py::handle(op) : py::handle(kSum()),
                  secs_of(a.at(99, "timeout")));
    } else if constexpr (Kind == 1) {
      a.check(3, {"dst", "src", "root", "timeout"});
      PyObject* root = a.need(2, "root");
      long v = PyLong_AsLong(root);
      if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
      team_move(pt, 0, a.need(0, "dst"), a.need(1, "src"), int(v), secs_of(a.at(99, "timeout")));
    } else if constexpr (Kind == 2 || Kind == 3) {
      a.check(2, {"dst", "src", "timeout"});
      team_move(pt, Kind == 2 ? 1 : 3, a.need(0, "dst"), a.need(1, "src"), 0, secs_of(a.at(99, "timeout")));
    } else {
      a.check(0, {"timeout"});
      Team& me = pt.t(a.call);
      if constexpr (Kind == 4) {
        pt.r->blocking("barrier", secs_of(a.at(99, "timeout")), &me, [&] { me.barrier(); });
        pt.r->release_pending();
      } else {
        pt.r->blocking("sync", secs_of(a.at(99, "timeout")), &me, [&] { me.sync(); });
      }
    }
    Py_RETURN_NONE;
  });
}

template <int... K>
std::array<PyMethodDef, sizeof...(K)> team_fast_defs(std::integer_sequence<int, K...>) {
  return {PyMethodDef{kTeamFast[K], reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&team_fast_call<K>)),
                      METH_FASTCALL | METH_KEYWORDS, nullptr}...};
}

py::object with_fast_calls(py::object obj, PyTeam* t) {
  static auto defs = team_fast_defs(std::make_integer_sequence<int, 6>{});
  auto cap = py::reinterpret_steal<py::object>(PyCapsule_New(new TeamRef{t, t->alive}, nullptr, [](PyObject* c) {
    delete static_cast<TeamRef*>(PyCapsule_GetPointer(c, nullptr));
  }));
  for (auto& d : defs)
    if (PyObject_SetAttrString(obj.ptr(), d.ml_name,
                               py::reinterpret_steal<py::object>(PyCFunction_NewEx(&d, cap.ptr(), nullptr)).ptr()) != 0)
      throw py::error_already_set();
  return obj;
}

template <int... K>
std::array<PyMethodDef, sizeof...(K)> fast_defs(std::integer_sequence<int, K...>) {
  return {PyMethodDef{fast_name(K), reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&fast_call<K>)),
                      METH_FASTCALL | METH_KEYWORDS, nullptr}...};
}
}  // namespace

// ---------------------------------------------------------------- the module

PYBIND11_MODULE(_symmem, m) {
  m.doc() = "symmem's native layer (use the symmem package)";
  py::module_ errs = py::module_::import("symmem._errors");
  exc = new Exc{errs.attr("Error"),          errs.attr("InitError"),       errs.attr("StateError"),
                errs.attr("HeapExhausted"),  errs.attr("InvalidArgument"), errs.attr("NotSymmetricError"),
                errs.attr("ShapeError"),     errs.attr("DTypeError"),      errs.attr("PEError"),
                errs.attr("Timeout"),        errs.attr("SymmetryError")};
  g_as_array = py::module_::import("symmem._util").attr("as_array");

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const symmem::Error& e) {
      set_error(e);
    }
  });

  py::class_<Block>(m, "Block", py::buffer_protocol(), "A symmetric allocation (exports the buffer protocol).")
      .def_buffer([](Block& b) -> py::buffer_info {
        if (b.freed) raise(exc->state, "the symmetric block is freed");
        return py::buffer_info(b.ptr, 1, "B", 1, {ssize_t(b.nbytes)}, {ssize_t(1)});
      })
      .def_property_readonly("addr", [](const Block& b) { return uintptr_t(b.ptr); })
      .def_property_readonly("nbytes", [](const Block& b) { return b.nbytes; })
      .def_property_readonly("freed", [](const Block& b) { return b.freed; })
      .def_property_readonly("detached", [](const Block& b) { return b.detached; })
      .def_property_readonly("peer", [](const Block& b) { return b.peer; })
      .def_readonly("source", &Block::source)
      .def("__int__", [](const Block& b) { return uintptr_t(b.ptr); })
      .def("__index__", [](const Block& b) { return uintptr_t(b.ptr); })
      .def("__len__", [](const Block& b) { return b.nbytes; })
      .def("__repr__", [](const Block& b) {
        return "<symmem.Block " + std::to_string(b.nbytes) + " bytes at 0x" +
               py::str(py::int_(uintptr_t(b.ptr)).attr("__format__")("x")).cast<std::string>() +
               (b.freed ? " (freed)>" : b.detached ? " (its runtime is finalized)>" : ">");
      });

  py::class_<PyTeam>(m, "Team", py::dynamic_attr(), "A team of PEs (symmem.TEAM_WORLD, TEAM_SHARED, or a split).")
      .def_property_readonly("my_pe", [](PyTeam& t) { return t.t("my_pe").my_pe(); })
      .def_property_readonly("n_pes", [](PyTeam& t) { return t.t("n_pes").n_pes(); })
      .def_property_readonly("valid", [](PyTeam& t) { return t.live(); })
      .def_property_readonly("index", [](PyTeam& t) { return t.t("index").index(); })
      .def_property_readonly("_rt", [](PyTeam& t) { return t.owner; })
      .def(
          "translate_pe",
          [](PyTeam& t, int pe, PyTeam* to) {
            Team& me = t.t("translate_pe");
            return me.translate_pe(pe, to ? to->t("translate_pe") : t.r->world());
          },
          py::arg("pe"), py::arg("to") = nullptr)
      .def(
          "split_strided",
          [](PyTeam& t, int start, int stride, int size, Secs timeout) {
            Team& me = t.t("split_strided");
            Team out;
            t.r->blocking("split_strided", timeout, &me, [&] { out = me.split_strided(start, stride, size); });
            int slot = out.index();
            if (slot >= 0 && slot < kTeamCounters) __atomic_store_n(&t.r->ctl[slot], 0, __ATOMIC_RELEASE);
            return make_team(t, std::move(out));
          },
          py::arg("start"), py::arg("stride"), py::arg("size"), py::kw_only(), py::arg("timeout") = Secs{})
      .def(
          "split_2d",
          [](PyTeam& t, int xrange, Secs timeout) {
            Team& me = t.t("split_2d");
            Team::Split2d s;
            t.r->blocking("split_2d", timeout, &me, [&] { s = me.split_2d(xrange); });
            for (Team* x : {&s.x, &s.y}) {
              int slot = x->index();
              if (slot >= 0 && slot < kTeamCounters) __atomic_store_n(&t.r->ctl[slot], 0, __ATOMIC_RELEASE);
            }
            py::object x = make_team(t, std::move(s.x));
            py::object y = make_team(t, std::move(s.y));
            return py::make_tuple(x, y);
          },
          py::arg("xrange"), py::kw_only(), py::arg("timeout") = Secs{})
      .def(
          "destroy",
          [](PyTeam& t, Secs timeout) {
            if (!t.live()) return;
            Team& me = t.e->team;
            if (me.index() < 2) raise(exc->state, "destroy: the world and shared teams cannot be destroyed");
            t.r->blocking("destroy", timeout, &me, [&] { me.destroy(); });
            t.e->destroyed = true;
          },
          py::kw_only(), py::arg("timeout") = Secs{})
      .def(
          "sync",
          [](PyTeam& t, Secs timeout) {
            Team& me = t.t("sync");
            t.r->blocking("sync", timeout, &me, [&] { me.sync(); });
          },
          py::kw_only(), py::arg("timeout") = Secs{})
      .def(
          "barrier",
          [](PyTeam& t, Secs timeout) {
            Team& me = t.t("barrier");
            t.r->blocking("barrier", timeout, &me, [&] { me.barrier(); });
            t.r->release_pending();
          },
          py::kw_only(), py::arg("timeout") = Secs{})
      .def(
          "broadcast", [](PyTeam& t, py::handle d, py::handle s, int root, Secs to) { team_move(t, 0, d, s, root, to); },
          py::arg("dst"), py::arg("src"), py::arg("root"), py::kw_only(), py::arg("timeout") = Secs{})
      .def(
          "fcollect", [](PyTeam& t, py::handle d, py::handle s, Secs to) { team_move(t, 1, d, s, 0, to); },
          py::arg("dst"), py::arg("src"), py::kw_only(), py::arg("timeout") = Secs{})
      .def(
          "collect", [](PyTeam& t, py::handle d, py::handle s, Secs to) { return team_move(t, 2, d, s, 0, to); },
          py::arg("dst"), py::arg("src"), py::kw_only(), py::arg("timeout") = Secs{})
      .def(
          "alltoall", [](PyTeam& t, py::handle d, py::handle s, Secs to) { team_move(t, 3, d, s, 0, to); },
          py::arg("dst"), py::arg("src"), py::kw_only(), py::arg("timeout") = Secs{})
      .def("alltoalls", &team_alltoalls, py::arg("dst"), py::arg("src"), py::kw_only(), py::arg("dst_stride") = 1,
           py::arg("src_stride") = 1, py::arg("nelems") = -1, py::arg("timeout") = Secs{})
      .def(
          "reduce",
          [](PyTeam& t, py::handle d, py::handle s, py::handle op, Secs to) { team_reduce(t, 0, d, s, op, to); },
          py::arg("dst"), py::arg("src"), py::arg("op") = "sum", py::kw_only(), py::arg("timeout") = Secs{})
      .def(
          "inscan", [](PyTeam& t, py::handle d, py::handle s, Secs to) { team_reduce(t, 1, d, s, py::none(), to); },
          py::arg("dst"), py::arg("src"), py::kw_only(), py::arg("timeout") = Secs{})
      .def(
          "exscan", [](PyTeam& t, py::handle d, py::handle s, Secs to) { team_reduce(t, 2, d, s, py::none(), to); },
          py::arg("dst"), py::arg("src"), py::kw_only(), py::arg("timeout") = Secs{})
      .def("_ctx_create",
           [](PyTeam& t, long options) {
             Team& me = t.t("Ctx");
             return new PyCtx(t.owner, t.r, me.ctx_create(options));
           })
      .def("__repr__", [](PyTeam& t) {
        if (!t.live()) return std::string("<symmem.Team (destroyed)>");
        return "<symmem.Team " + std::to_string(t.e->team.n_pes()) + " PEs, me " + std::to_string(t.e->team.my_pe()) +
               ", index " + std::to_string(t.e->team.index()) + ">";
      });

  using A = py::arg;
  // A context's calls: those of the runtime, with the context's team numbering and its own
  // fence/quiet (symmem::Ctx).
  py::class_<PyCtx> ctx(m, "_Ctx");
  ctx.def("put", [](PyCtx& c, py::handle d, py::handle s, int pe) {
       auto& x = c.need("put");
       rma_via(*c.r, x, x.n_pes(), c.pending, true, false, d, s, pe);
     }, A("dst"), A("src"), A("pe"))
      .def("get", [](PyCtx& c, py::handle d, py::handle s, int pe) {
        auto& x = c.need("get");
        rma_via(*c.r, x, x.n_pes(), c.pending, false, false, d, s, pe);
      }, A("dst"), A("src"), A("pe"))
      .def("put_nbi", [](PyCtx& c, py::handle d, py::handle s, int pe) {
        auto& x = c.need("put_nbi");
        rma_via(*c.r, x, x.n_pes(), c.pending, true, true, d, s, pe);
      }, A("dst"), A("src"), A("pe"))
      .def("get_nbi", [](PyCtx& c, py::handle d, py::handle s, int pe) {
        auto& x = c.need("get_nbi");
        rma_via(*c.r, x, x.n_pes(), c.pending, false, true, d, s, pe);
      }, A("dst"), A("src"), A("pe"))
      .def("p", [](PyCtx& c, py::handle d, py::handle v, int pe, py::handle index) {
        auto& x = c.need("p");
        p_via(*c.r, x, x.n_pes(), d, v, pe, index);
      }, A("dst"), A("value"), A("pe"), py::kw_only(), A("index") = py::none())
      .def("g", [](PyCtx& c, py::handle s, int pe, py::handle index) {
        auto& x = c.need("g");
        return g_via(*c.r, x, x.n_pes(), s, pe, index);
      }, A("src"), A("pe"), py::kw_only(), A("index") = py::none())
      .def("put_signal",
           [](PyCtx& c, py::handle d, py::handle s, py::handle sig, uint64_t value, int pe, py::handle op,
              py::handle index) {
             auto& x = c.need("put_signal");
             put_signal_via(*c.r, x, x.n_pes(), c.pending, false, d, s, sig, value, pe, op, index);
           },
           A("dst"), A("src"), A("sig"), A("value"), A("pe"), py::kw_only(), A("op") = "set", A("index") = 0)
      .def("fence", [](PyCtx& c) { c.need("fence").fence(); })
      .def("quiet", [](PyCtx& c) {
        auto& x = c.need("quiet");
        {
          py::gil_scoped_release nogil;
          x.quiet();
        }
        c.pending.clear();
      })
      .def("destroy", [](PyCtx& c) {
        if (!c.r || !c.c || !c.c->valid()) return;
        if (c.r->rt && c.generation == c.r->generation) c.c->destroy();
        c.pending.clear();
      })
      .def_property_readonly("valid", [](PyCtx& c) { return c.r && c.r->rt && c.generation == c.r->generation && c.c && c.c->valid(); })
      .def_property_readonly("n_pes", [](PyCtx& c) { return c.need("n_pes").n_pes(); })
      .def_property_readonly("options", [](PyCtx& c) { return c.need("options").options(); })
      .def_property_readonly("n_pending", [](PyCtx& c) { return c.pending.size(); });
  for (int k = kFetch; k <= kXor; ++k) {
    const Amo kind = Amo(k);
    const bool two = kind == kCswap, none = kind == kFetch || kind == kFetchInc || kind == kInc;
    if (none)
      ctx.def(kAmoName[k], [kind](PyCtx& c, py::handle a, int pe, py::handle index) {
        auto& x = c.need(kAmoName[kind]);
        return amo_via(*c.r, x, x.n_pes(), kind, a, py::none(), py::none(), pe, index);
      }, A("a"), A("pe"), py::kw_only(), A("index") = py::none());
    else if (two)
      ctx.def(kAmoName[k], [kind](PyCtx& c, py::handle a, py::handle cond, py::handle value, int pe, py::handle index) {
        auto& x = c.need(kAmoName[kind]);
        return amo_via(*c.r, x, x.n_pes(), kind, a, cond, value, pe, index);
      }, A("a"), A("cond"), A("value"), A("pe"), py::kw_only(), A("index") = py::none());
    else
      ctx.def(kAmoName[k], [kind](PyCtx& c, py::handle a, py::handle value, int pe, py::handle index) {
        auto& x = c.need(kAmoName[kind]);
        return amo_via(*c.r, x, x.n_pes(), kind, a, value, py::none(), pe, index);
      }, A("a"), A("value"), A("pe"), py::kw_only(), A("index") = py::none());
  }

  py::class_<PyRt>(m, "_Runtime")
      .def(py::init<>())
      .def("init", &init_rt, A("uid"), A("pe"), A("n_pes"), A("heap_size"), A("instance"), A("timeout"), A("tls"))
      .def("finalize", &finalize_rt, A("timeout"), A("keep") = true)
      .def("_fast",
           [](py::object self) {
             // put, get, p, g, then the atomics in kAmoName order, bound to this runtime
             static auto defs = fast_defs(std::make_integer_sequence<int, kFastBarrierAll + 6>{});
             PyRt& r = self.cast<PyRt&>();
             auto cap = py::reinterpret_steal<py::object>(PyCapsule_New(&r, nullptr, [](PyObject* c) {
               Py_XDECREF(static_cast<PyObject*>(PyCapsule_GetContext(c)));  // the runtime it keeps alive
             }));
             PyCapsule_SetContext(cap.ptr(), self.inc_ref().ptr());
             py::dict out;
             for (auto& d : defs)
               out[d.ml_name] = py::reinterpret_steal<py::object>(PyCFunction_NewEx(&d, cap.ptr(), nullptr));
             return out;
           })
      .def("_ctx_create",
           [](py::object self, long options) {
             PyRt& r = self.cast<PyRt&>();
             return new PyCtx(self, &r, r.need("Ctx").ctx_create(options));
           })
      .def("_abandon", [](PyRt& r) {  // leave without waiting for anyone (the process is dying)
        r.broken = true;
        return finalize_rt(r, 0, false);
      })
      .def_property_readonly("initialized", [](PyRt& r) { return bool(r.rt); })
      .def_property_readonly("broken", [](PyRt& r) { return r.broken; })
      .def_readwrite("default_timeout", &PyRt::default_timeout)
      .def_readwrite("scratch", &PyRt::scratch)
      .def_property_readonly("n_pending", [](PyRt& r) { return r.pending.size(); })
      .def("my_pe", [](PyRt& r) {
        r.need("my_pe");
        return r.me;
      })
      .def("n_pes", [](PyRt& r) {
        r.need("n_pes");
        return r.npes;
      })
      .def("heap_stats",
           [](PyRt& r) {
             auto h = r.need("heap_stats").heap_stats();
             py::dict d;
             d["size"] = h.size;
             d["used"] = h.used;
             d["largest_free"] = h.largest_free;
             d["blocks"] = h.blocks;
             return d;
           })
      .def("team",
           [](py::object self, int which) {
             PyRt& r = self.cast<PyRt&>();
             r.need("team");
             auto it = r.teams.begin();
             if (which) ++it;
             auto* pt = new PyTeam(self, &r, &*it, r.generation);
             return with_fast_calls(py::cast(pt, py::return_value_policy::take_ownership), pt);
           })
      .def(
          "_alloc",
          [](PyRt& r, size_t nbytes, size_t align, const std::string& site, Secs timeout, py::object fill) {
            Runtime& rt = r.need("alloc");
            if (align < 64) align = 64;
            // fill: None (uninitialised) or a C-contiguous buffer whose bytes repeat over the block
            HeldBuffer pat;
            if (!fill.is_none()) {
              if (PyObject_GetBuffer(fill.ptr(), &pat.view, PyBUF_C_CONTIGUOUS) != 0) throw py::error_already_set();
              pat.held = true;
            }
            r.write_site(site);
            void* p = nullptr;
            try {
              r.blocking("alloc", timeout, &r.world(), [&] {
                if (!pat.held) {
                  p = rt.align(align, nbytes);
                  return;
                }
                p = rt.align(align, nbytes, [&pat](void* local, size_t n) {
                  fill_repeat(static_cast<char*>(local), n, static_cast<const char*>(pat.view.buf), size_t(pat.view.len));
                });
              });
            } catch (const symmem::Error& e) {
              if (e.code() != Errc::kMismatch) throw;
              std::string msg = std::string(e.what()) + "; call sites:";
              for (int pe = 0; pe < r.npes; ++pe) msg += " PE " + std::to_string(pe) + " " + r.site_of(pe) + ";";
              raise(exc->symmetry, msg);
            }
            if (!p && nbytes) {
              auto h = rt.heap_stats();
              raise(exc->heap, "symmetric heap exhausted: asked " + std::to_string(nbytes) + " bytes at " + site +
                                   "; heap " + std::to_string(h.size) + " bytes, " + std::to_string(h.used) +
                                   " used, largest free block " + std::to_string(h.largest_free) +
                                   " (on this PE or another); raise SHMEM_SYMMETRIC_SIZE (or init(heap_size=...))");
            }
            return new Block(&r, static_cast<char*>(p), nbytes);
          },
          A("nbytes"), A("align"), A("site"), A("timeout"), A("fill") = py::none())
      .def(
          "_free",
          [](PyRt& r, Block& b, Secs timeout) {
            Runtime& rt = r.need("free");
            if (b.freed) raise(exc->state, "free: the block is already freed");
            r.blocking("free", timeout, &r.world(), [&] { rt.free(b.ptr); });
            b.freed = true;
          },
          A("block"), A("timeout"))
      .def(
          "_free_addr",
          [](PyRt& r, uintptr_t addr, Secs timeout) {
            Runtime& rt = r.need("collect");
            r.blocking("collect", timeout, &r.world(), [&] { rt.free(reinterpret_cast<void*>(addr)); });
          },
          A("addr"), A("timeout"))
      .def("put", [](PyRt& r, py::handle d, py::handle s, int pe) { rma(r, true, false, d, s, pe); }, A("dst"), A("src"), A("pe"))
      .def("get", [](PyRt& r, py::handle d, py::handle s, int pe) { rma(r, false, false, d, s, pe); }, A("dst"), A("src"), A("pe"))
      .def("put_nbi", [](PyRt& r, py::handle d, py::handle s, int pe) { rma(r, true, true, d, s, pe); }, A("dst"), A("src"), A("pe"))
      .def("get_nbi", [](PyRt& r, py::handle d, py::handle s, int pe) { rma(r, false, true, d, s, pe); }, A("dst"), A("src"), A("pe"))
      .def(
          "iput", [](PyRt& r, py::handle d, py::handle s, int pe, ssize_t ds, ssize_t ss, py::object n) { strided(r, true, d, s, ds, ss, n, pe); },
          A("dst"), A("src"), A("pe"), py::kw_only(), A("dst_stride") = 1, A("src_stride") = 1, A("nelems") = py::none())
      .def(
          "iget", [](PyRt& r, py::handle d, py::handle s, int pe, ssize_t ds, ssize_t ss, py::object n) { strided(r, false, d, s, ds, ss, n, pe); },
          A("dst"), A("src"), A("pe"), py::kw_only(), A("dst_stride") = 1, A("src_stride") = 1, A("nelems") = py::none())
      .def("p", &p_, A("dst"), A("value"), A("pe"), py::kw_only(), A("index") = py::none())
      .def("g", &g_, A("src"), A("pe"), py::kw_only(), A("index") = py::none())
      .def("fence", [](PyRt& r) { r.need("fence").fence(); })
      .def("quiet", [](PyRt& r) {
        Runtime& rt = r.need("quiet");
        {
          py::gil_scoped_release nogil;
          rt.quiet();
        }
        r.release_pending();
      })
      .def(
          "barrier_all",
          [](PyRt& r, Secs timeout) {
            Runtime& rt = r.need("barrier_all");
            r.blocking("barrier_all", timeout, &r.world(), [&] { rt.barrier_all(); });
            r.release_pending();
          },
          py::kw_only(), A("timeout") = Secs{})
      .def(
          "sync_all",
          [](PyRt& r, Secs timeout) {
            Runtime& rt = r.need("sync_all");
            r.blocking("sync_all", timeout, &r.world(), [&] { rt.sync_all(); });
          },
          py::kw_only(), A("timeout") = Secs{})
      .def(
          "ptr",
          [](PyRt& r, py::handle a, int pe) -> py::object {
            r.need("ptr");
            r.check_pe("ptr", pe);
            View v = view_of(a);
            void* p = r.rt->ptr(v.data, pe);
            if (!p) return py::none();
            return py::int_(uintptr_t(p));
          },
          A("a"), A("pe"))
      .def(
          "peer",
          [](PyRt& r, py::handle a, int pe, bool readonly) {
            r.need("peer");
            r.check_pe("peer", pe);
            View v = view_of(a);
            if (v.size) r.check_symmetric("peer", "the array", v.data, 1);
            char* p = v.size ? static_cast<char*>(r.rt->ptr(v.data, pe)) : v.data;
            if (!p)
              raise(exc->invalid, "peer: PE " + std::to_string(pe) +
                                      " is not reachable by load/store from this PE (another node); use get()");
            // The view's base is a peer Block (its pages are kept at finalize, as the
            // array's), which holds the array it views (free() counts it as a view).
            ssize_t lo = 0, hi = 0;
            for (ssize_t i = 0; i < v.ndim; ++i) {
              ssize_t e = v.shape[i] > 0 ? (v.shape[i] - 1) * v.strides[i] : 0;
              (e < 0 ? lo : hi) += e;
            }
            auto* blk = new Block(&r, p + lo, v.size ? size_t(hi - lo + v.itemsize) : 0, true);
            blk->source = v.keep;
            py::object base = py::cast(blk, py::return_value_policy::take_ownership);
            py::array arr(py::reinterpret_borrow<py::dtype>(py::detail::array_proxy(v.keep.ptr())->descr),
                          std::vector<ssize_t>(v.shape, v.shape + v.ndim),
                          std::vector<ssize_t>(v.strides, v.strides + v.ndim), p, base);
            if (readonly || !v.writeable)
              py::detail::array_proxy(arr.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
            return arr;
          },
          A("a"), A("pe"), py::kw_only(), A("readonly") = false)
      .def(
          "is_symmetric",
          [](PyRt& r, py::handle a) {
            r.need("is_symmetric");
            View v = view_of(a);
            if (!v.size) return bool(r.rt->ptr(v.data, r.me));
            return r.rt->ptr(v.data, r.me) != nullptr && r.rt->ptr(v.data + v.size * v.itemsize - 1, r.me) != nullptr;
          },
          A("a"))
      .def(
          "put_signal",
          [](PyRt& r, py::handle d, py::handle s, py::handle sig, uint64_t value, int pe, py::handle op, py::handle index) {
            put_signal_(r, false, d, s, sig, value, pe, op, index);
          },
          A("dst"), A("src"), A("sig"), A("value"), A("pe"), py::kw_only(), A("op") = "set", A("index") = 0)
      .def(
          "put_signal_nbi",
          [](PyRt& r, py::handle d, py::handle s, py::handle sig, uint64_t value, int pe, py::handle op, py::handle index) {
            put_signal_(r, true, d, s, sig, value, pe, op, index);
          },
          A("dst"), A("src"), A("sig"), A("value"), A("pe"), py::kw_only(), A("op") = "set", A("index") = 0)
      .def(
          "signal_fetch",
          [](PyRt& r, py::handle sig, py::handle index) {
            Runtime& rt = r.need("signal_fetch");
            return rt.signal_fetch(signal_word(r, "signal_fetch", sig, index));
          },
          A("sig"), py::kw_only(), A("index") = 0)
      .def(
          "signal_add",
          [](PyRt& r, py::handle sig, uint64_t value, int pe, py::handle index) {
            Runtime& rt = r.need("signal_add");
            r.check_pe("signal_add", pe);
            rt.atomic_add(signal_word(r, "signal_add", sig, index), value, pe);
          },
          A("sig"), A("value"), A("pe"), py::kw_only(), A("index") = 0)
      .def(
          "signal_set",
          [](PyRt& r, py::handle sig, uint64_t value, int pe, py::handle index) {
            Runtime& rt = r.need("signal_set");
            r.check_pe("signal_set", pe);
            rt.atomic_set(signal_word(r, "signal_set", sig, index), value, pe);
          },
          A("sig"), A("value"), A("pe"), py::kw_only(), A("index") = 0)
      .def(
          "signal_wait_until",
          [](PyRt& r, py::handle sig, py::handle cmp, uint64_t value, py::handle index, Secs timeout) {
            Runtime& rt = r.need("signal_wait_until");
            uint64_t* w = signal_word(r, "signal_wait_until", sig, index);
            Cmp c = cmp_of(cmp);
            return r.blocking("signal_wait_until", timeout, nullptr, [&] { return rt.signal_wait_until(w, c, value); });
          },
          A("sig"), A("cmp"), A("value"), py::kw_only(), A("index") = 0, A("timeout") = Secs{})
      .def(
          "wait_until",
          [](PyRt& r, py::handle a, py::handle cmp, py::handle v, py::handle index, Secs timeout) {
            return wait_until_(r, a, cmp, v, index, timeout, true);
          },
          A("a"), A("cmp"), A("value"), py::kw_only(), A("index") = py::none(), A("timeout") = Secs{})
      .def(
          "test",
          [](PyRt& r, py::handle a, py::handle cmp, py::handle v, py::handle index) {
            return wait_until_(r, a, cmp, v, index, Secs{}, false);
          },
          A("a"), A("cmp"), A("value"), py::kw_only(), A("index") = py::none())
      .def("_lock_acquire", &lock_acquire, A("word"), A("timeout"))
      .def("_lock_test", &lock_test, A("word"))
      .def("_lock_release", &lock_release, A("word"))
      .def(
          "_putmem_addr",
          [](PyRt& r, uintptr_t dest, uintptr_t src, size_t n, int pe) {
            Runtime& rt = r.need("shmem_putmem");
            r.check_pe("shmem_putmem", pe);
            r.check_symmetric("shmem_putmem", "dest", reinterpret_cast<void*>(dest), n);
            if (!n) return;
            void* remote = rt.ptr(reinterpret_cast<void*>(dest), pe);
            int err = 0;
            {
              py::gil_scoped_release nogil;
              if (remote) {
                err = checked_copy(remote, reinterpret_cast<void*>(src), n);
              } else {
                std::vector<char> tmp(n);
                err = checked_copy(tmp.data(), reinterpret_cast<void*>(src), n);
                if (!err) rt.put(reinterpret_cast<void*>(dest), tmp.data(), n, pe);
              }
            }
            if (err) copy_failed(err, uintptr_t(remote), src, n);
          },
          A("dest"), A("src"), A("n"), A("pe"))
      .def(
          "_getmem_addr",
          [](PyRt& r, uintptr_t dest, uintptr_t src, size_t n, int pe) {
            Runtime& rt = r.need("shmem_getmem");
            r.check_pe("shmem_getmem", pe);
            r.check_symmetric("shmem_getmem", "source", reinterpret_cast<void*>(src), n);
            if (!n) return;
            void* remote = rt.ptr(reinterpret_cast<void*>(src), pe);
            int err = 0;
            {
              py::gil_scoped_release nogil;
              if (remote) {
                // process_vm_writev checks the destination: the bad address is the remote side
                struct iovec l{remote, n}, rm{reinterpret_cast<void*>(dest), n};
                ssize_t got = process_vm_writev(getpid(), &l, 1, &rm, 1, 0);
                err = got == ssize_t(n) ? 0 : got < 0 ? errno : EFAULT;
              } else {
                std::vector<char> tmp(n);
                rt.get(tmp.data(), reinterpret_cast<void*>(src), n, pe);
                struct iovec l{tmp.data(), n}, rm{reinterpret_cast<void*>(dest), n};
                ssize_t got = process_vm_writev(getpid(), &l, 1, &rm, 1, 0);
                err = got == ssize_t(n) ? 0 : got < 0 ? errno : EFAULT;
              }
            }
            if (err) copy_failed(err, dest, uintptr_t(remote), n);
          },
          A("dest"), A("src"), A("n"), A("pe"))
      .def(
          "_is_symmetric_addr",
          [](PyRt& r, uintptr_t addr, size_t n) {
            r.need("is_symmetric");
            auto* p = reinterpret_cast<const char*>(addr);
            return r.rt->ptr(p, r.me) != nullptr && (n <= 1 || r.rt->ptr(p + n - 1, r.me) != nullptr);
          },
          A("addr"), A("n"));

  for (int k = kFetch; k <= kXor; ++k) {
    const Amo kind = Amo(k);
    const bool two = kind == kCswap, none = kind == kFetch || kind == kFetchInc || kind == kInc;
    auto cls = py::reinterpret_borrow<py::class_<PyRt>>(m.attr("_Runtime"));
    if (none)
      cls.def(kAmoName[k], [kind](PyRt& r, py::handle a, int pe, py::handle index) {
        return amo(r, kind, a, py::none(), py::none(), pe, index);
      }, A("a"), A("pe"), py::kw_only(), A("index") = py::none());
    else if (two)
      cls.def(kAmoName[k], [kind](PyRt& r, py::handle a, py::handle cond, py::handle value, int pe, py::handle index) {
        return amo(r, kind, a, cond, value, pe, index);
      }, A("a"), A("cond"), A("value"), A("pe"), py::kw_only(), A("index") = py::none());
    else
      cls.def(kAmoName[k], [kind](PyRt& r, py::handle a, py::handle value, int pe, py::handle index) {
        return amo(r, kind, a, value, py::none(), pe, index);
      }, A("a"), A("value"), A("pe"), py::kw_only(), A("index") = py::none());
  }
  {
    auto cls = py::reinterpret_borrow<py::class_<PyRt>>(m.attr("_Runtime"));
    const char* const wnames[2][3] = {{"test_all", "test_any", "test_some"},
                                      {"wait_until_all", "wait_until_any", "wait_until_some"}};
    for (int block = 0; block < 2; ++block)
      for (int mode = 0; mode < 3; ++mode) {
        for (int vec = 0; vec < 2; ++vec) {
          std::string name = std::string(wnames[block][mode]) + (vec ? "_vector" : "");
          if (block)
            cls.def(name.c_str(), [mode](PyRt& r, py::handle a, py::handle cmp, py::handle values, py::handle status, Secs timeout) {
              return wait_set(r, mode, true, a, cmp, values, status, timeout);
            }, A("a"), A("cmp"), A(vec ? "values" : "value"), py::kw_only(), A("status") = py::none(), A("timeout") = Secs{});
          else
            cls.def(name.c_str(), [mode](PyRt& r, py::handle a, py::handle cmp, py::handle values, py::handle status) {
              return wait_set(r, mode, false, a, cmp, values, status, Secs{});
            }, A("a"), A("cmp"), A(vec ? "values" : "value"), py::kw_only(), A("status") = py::none());
        }
      }
  }

  m.def("get_unique_id", [](const std::string& tls) {
    symmem::UniqueId u;
    {
      py::gil_scoped_release nogil;
      u = symmem::UniqueId::create(tls);
    }
    return py::bytes(reinterpret_cast<const char*>(u.bytes.data()), u.bytes.size());
  }, A("tls") = "");
  m.def("uid_to_string", [](py::bytes b) {
    std::string s = b;
    symmem::UniqueId u;
    if (s.size() != u.bytes.size()) raise(exc->invalid, "a unique id has 136 bytes");
    std::memcpy(u.bytes.data(), s.data(), s.size());
    return u.to_string();
  });
  m.def("uid_from_string", [](const std::string& s) {
    symmem::UniqueId u = symmem::UniqueId::from_string(s);
    return py::bytes(reinterpret_cast<const char*>(u.bytes.data()), u.bytes.size());
  });
  m.attr("UID_SIZE") = symmem::UniqueId::kSize;
  m.def("_kept_pages", [] { return kept_pages().size(); }, "pages kept for arrays that outlived their runtime");
}
