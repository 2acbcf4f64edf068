// Atomics (the 14 OpenSHMEM AMOs, each on the dtypes its table allows) and signals:
// put_signal(_nbi), signal_fetch, signal_add, signal_set.
#include "module.hpp"

namespace symmem_py {

template <class IO>
py::object amo_via(PyRt& r, IO& rt, int npes, Amo k, py::handle a, py::handle v1, py::handle v2, int pe,
                   py::handle index) {
  const char* call = kAmoName[k];
  r.check_pe(call, pe, npes);
  View v = view_any(a);  // device memory: the core's atomic kernels
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

template py::object amo_via<Runtime>(PyRt&, Runtime&, int, Amo, py::handle, py::handle, py::handle, int, py::handle);
template py::object amo_via<symmem::Ctx>(PyRt&, symmem::Ctx&, int, Amo, py::handle, py::handle, py::handle, int, py::handle);

py::object amo(PyRt& r, Amo k, py::handle a, py::handle v1, py::handle v2, int pe, py::handle index) {
  return amo_via(r, r.need(kAmoName[k]), -1, k, a, v1, v2, pe, index);
}

uint64_t* signal_word(PyRt& r, const char* call, py::handle sig, py::handle index, bool* device) {
  View v = view_any(sig);  // device memory: the core's signal kernels
  if (device) *device = v.device;
  if (v.kind != 'u' || v.itemsize != 8)
    raise(exc->dtype, std::string(call) + ": a signal is a uint64 array (symmem.signals()), not " + dtype_name(v));
  char* at = element(call, v, index);
  r.check_symmetric(call, "the signal", at, 8);
  return reinterpret_cast<uint64_t*>(at);
}

static SignalOp sig_op_of(py::handle op) {
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
  View d = view_any(dst), s = view_any(src);
  same_dtype(call, d, s);
  same_shape(call, d, s);
  if (!d.c_contig || !s.c_contig) raise(exc->shape, std::string(call) + ": dst and src must be contiguous");
  bool sig_device = false;
  uint64_t* w = signal_word(r, call, sig, index, &sig_device);
  if ((d.device || s.device || sig_device) && !(d.device && sig_device))
    device_unsupported(call, "with device memory, dst and the signal must both be in the device heap "
                             "(device=\"cuda\"); src may be host or device memory");
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

template void put_signal_via<Runtime>(PyRt&, Runtime&, int, std::vector<py::object>&, bool, py::handle, py::handle, py::handle, uint64_t, int, py::handle, py::handle);
template void put_signal_via<symmem::Ctx>(PyRt&, symmem::Ctx&, int, std::vector<py::object>&, bool, py::handle, py::handle, py::handle, uint64_t, int, py::handle, py::handle);

static void put_signal_(PyRt& r, bool nbi, py::handle dst, py::handle src, py::handle sig, uint64_t value, int pe,
                 py::handle op, py::handle index) {
  put_signal_via(r, r.need(nbi ? "put_signal_nbi" : "put_signal"), -1, r.pending, nbi, dst, src, sig, value, pe, op,
                 index);
}

void bind_amo(py::module_& m) {
  using A = py::arg;
  auto cls = class_of<PyRt>(m, "_Runtime");
  cls.def(
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
          A("sig"), A("value"), A("pe"), py::kw_only(), A("index") = 0);

  for (int k = kFetch; k <= kXor; ++k) {
    const Amo kind = Amo(k);
    const bool two = kind == kCswap, none = kind == kFetch || kind == kFetchInc || kind == kInc;
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
}

}  // namespace symmem_py
