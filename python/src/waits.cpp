// Waiting on symmetric memory: wait_until/test on one element, the wait_until_/test_
// all/any/some sets and their _vector forms, signal_wait_until, and the ticket lock behind
// symmem.Lock. Blocking forms release the GIL under the wait check (PyRt::blocking).
#include "module.hpp"

namespace symmem_py {

static Cmp cmp_of(py::handle c) {
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

static py::object wait_until_(PyRt& r, py::handle a, py::handle cmp, py::handle value, py::handle index, Secs timeout,
                       bool block) {
  const char* call = block ? "wait_until" : "test";
  Runtime& rt = r.need(call);
  View v = view_any(a);  // one word of device memory: the core reads it through the GPU
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
static py::object wait_set(PyRt& r, int mode, bool block, py::handle a, py::handle cmp, py::handle values,
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

// ---------------------------------------------------------------- locks

// A ticket lock in PE 0's copy of a symmetric uint64 (high half: next ticket, low half:
// now serving), as shmem_set_lock.
static void lock_acquire(PyRt& r, py::handle a, Secs timeout) {
  Runtime& rt = r.need("Lock.acquire");
  View v = view_of(a);
  auto* w = reinterpret_cast<uint64_t*>(v.data);
  uint64_t old = rt.atomic_fetch_add(w, uint64_t(1) << 32, 0);
  const uint32_t ticket = uint32_t(old >> 32);
  if (uint32_t(old) == ticket) return;
  r.blocking("Lock.acquire", timeout, nullptr,
             [&] { r.poll([&] { return uint32_t(rt.atomic_fetch(w, 0)) == ticket; }); });
}

static bool lock_test(PyRt& r, py::handle a) {
  Runtime& rt = r.need("Lock.test");
  View v = view_of(a);
  auto* w = reinterpret_cast<uint64_t*>(v.data);
  uint64_t cur = rt.atomic_fetch(w, 0);
  if (uint32_t(cur) != uint32_t(cur >> 32)) return false;
  return rt.atomic_compare_swap(w, cur, cur + (uint64_t(1) << 32), 0) == cur;
}

static void lock_release(PyRt& r, py::handle a) {
  Runtime& rt = r.need("Lock.release");
  View v = view_of(a);
  rt.quiet();
  rt.atomic_add(reinterpret_cast<uint64_t*>(v.data), uint64_t(1), 0);
}

void bind_waits(py::module_& m) {
  using A = py::arg;
  auto cls = class_of<PyRt>(m, "_Runtime");
  cls.def(
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
      .def("_lock_release", &lock_release, A("word"));

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

}  // namespace symmem_py
