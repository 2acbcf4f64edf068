// The METH_FASTCALL entry points: the calls of the small-message path (put, get, p, g,
// atomics, barrier_all, sync_all, quiet, fence, my_pe, n_pes) bound to their runtime, and
// the collective calls bound to each Team object. No pybind11 dispatcher and no kwargs dict;
// every error is left to the checked forms of the other files, which say what is wrong.
#include <array>
#include <utility>

#include "module.hpp"

namespace symmem_py {

// put / get in their usual form, checked inline without building Views: three positional
// arguments, two C-contiguous ndarrays of one dtype and shape, a PE in range, the remote
// side in this PE's heap, less than kReleaseGilBytes. Anything else (and every error) is
// left to rma(), which says what is wrong. Returns whether it moved the data.
static bool rma_usual(PyRt& r, bool is_put, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
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

// Arguments of a fast call: positional, or by name (kwnames).
constexpr int kFastBarrierAll = 4 + kXor + 1;  // fast_call kinds: put get p g, the atomics, then barrier_all sync_all quiet fence my_pe n_pes

// A timeout argument of a fast call (absent or None: the runtime's default).
static Secs secs_of(PyObject* o) {
  if (!o || o == Py_None) return {};
  py::detail::make_caster<Secs> c;
  if (!c.load(o, true)) raise(exc->dtype, "timeout must be a number of seconds or None");
  return py::detail::cast_op<Secs>(c);
}

static PyObject* kSum() {
  static PyObject* s = PyUnicode_InternFromString("sum");
  return s;
}

// The interned str of a keyword name (a string literal): keyword names in calls are
// interned, so comparing pointers finds them without a string compare.
static PyObject* interned(const char* name) {
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
static PyObject* py_guard(F&& body) noexcept {
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
static PyObject* fast_call(PyObject* cap, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
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

static const char* fast_name(int k) {
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
static PyObject* team_fast_call(PyObject* cap, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return py_guard([&]() -> PyObject* {
    auto* ref = static_cast<TeamRef*>(PyCapsule_GetPointer(cap, nullptr));
    if (!*ref->alive) raise(exc->state, std::string(kTeamFast[Kind]) + ": the Team object is gone");
    PyTeam& pt = *ref->t;
    FastArgs a{args, nargs, kwnames, kTeamFast[Kind]};
    // stream: only device collectives look at it (None: torch's current stream or 0).
    PyObject* st = a.at(99, "stream");
    const py::handle stream = st ? py::handle(st) : py::handle(Py_None);
    if constexpr (Kind == 0) {
      a.check(3, {"dst", "src", "op", "timeout", "stream"});
      PyObject* op = a.at(2, "op");
      team_reduce(pt, 0, a.need(0, "dst"), a.need(1, "src"), op ? py::handle(op) : py::handle(kSum()),
                  secs_of(a.at(99, "timeout")), stream);
    } else if constexpr (Kind == 1) {
      a.check(3, {"dst", "src", "root", "timeout", "stream"});
      PyObject* root = a.need(2, "root");
      long v = PyLong_AsLong(root);
      if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
      team_move(pt, 0, a.need(0, "dst"), a.need(1, "src"), int(v), secs_of(a.at(99, "timeout")), stream);
    } else if constexpr (Kind == 2 || Kind == 3) {
      a.check(2, {"dst", "src", "timeout", "stream"});
      team_move(pt, Kind == 2 ? 1 : 3, a.need(0, "dst"), a.need(1, "src"), 0, secs_of(a.at(99, "timeout")), stream);
    } else {
      a.check(0, {"timeout", "stream"});
      team_barrier(pt, Kind == 5, secs_of(a.at(99, "timeout")), stream);
    }
    Py_RETURN_NONE;
  });
}

template <int... K>
static std::array<PyMethodDef, sizeof...(K)> team_fast_defs(std::integer_sequence<int, K...>) {
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
static std::array<PyMethodDef, sizeof...(K)> fast_defs(std::integer_sequence<int, K...>) {
  return {PyMethodDef{fast_name(K), reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&fast_call<K>)),
                      METH_FASTCALL | METH_KEYWORDS, nullptr}...};
}

void bind_fast_calls(py::module_& m) {
  class_of<PyRt>(m, "_Runtime")
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
           });
}

}  // namespace symmem_py
