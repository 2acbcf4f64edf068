// Remote memory access: put/get (blocking and nbi, any array views; CUDA tensors in the
// device heap through the core's device route), p/g of one element,
// the strided iput/iget, the int-address forms of the compat layer (shmem_putmem on raw
// addresses, checked without crashing), and fence/quiet.
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <type_traits>

#include "module.hpp"

namespace symmem_py {

// Calls f(dst_offset, src_offset, bytes) for each contiguous run of two arrays of one
// shape, in C order (the innermost dimension is one run when both are contiguous in it).
template <class F>
static void for_each_run(const View& d, const View& s, F f) {
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

template <class IO>
void rma_via(PyRt& r, IO& rt, int npes, std::vector<py::object>& pending, bool is_put, bool nbi, py::handle dst,
             py::handle src, int pe) {
  const char* call = is_put ? (nbi ? "put_nbi" : "put") : (nbi ? "get_nbi" : "get");
  r.check_pe(call, pe, npes);
  View d = view_any(dst), s = view_any(src);
  same_dtype(call, d, s);
  same_shape(call, d, s);
  const View& remote = is_put ? d : s;
  if ((d.device || s.device) && !remote.device)
    device_unsupported(call, std::string("the local side is device memory and the ") +
                                 (is_put ? "destination" : "source") +
                                 " host memory: with device memory the symmetric side must be in the device heap "
                                 "(device=\"cuda\")");
  if (!is_put && !d.writeable) raise(exc->invalid, std::string(call) + ": the destination is read-only");
  if (d.size == 0) return;
  if (!remote.device) {  // device memory: the core checks the range (it is not readable here)
    ssize_t lo = 0, hi = 0;  // byte offsets of the first and last element
    for (ssize_t i = 0; i < remote.ndim; ++i) {
      ssize_t e = (remote.shape[i] - 1) * remote.strides[i];
      (e < 0 ? lo : hi) += e;
    }
    r.check_symmetric(call, is_put ? "the destination" : "the source", remote.data + lo,
                      size_t(hi - lo + remote.itemsize));
  }
  auto one = [&](ssize_t doff, ssize_t soff, size_t n) {
    if constexpr (std::is_same_v<IO, Runtime>) {
      // The device route by name: an address outside the device heap is reported as such.
      if (remote.device) {
        if (is_put) rt.put_device(d.data + doff, s.data + soff, n, pe);
        else rt.get_device(d.data + doff, s.data + soff, n, pe);
        return;
      }
    }
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

template void rma_via<Runtime>(PyRt&, Runtime&, int, std::vector<py::object>&, bool, bool, py::handle, py::handle, int);
template void rma_via<symmem::Ctx>(PyRt&, symmem::Ctx&, int, std::vector<py::object>&, bool, bool, py::handle, py::handle, int);

void rma(PyRt& r, bool is_put, bool nbi, py::handle dst, py::handle src, int pe) {
  rma_via(r, r.need(is_put ? (nbi ? "put_nbi" : "put") : (nbi ? "get_nbi" : "get")), -1, r.pending, is_put, nbi, dst,
          src, pe);
}

// iput / iget: nelems elements, every dst_stride-th of dst and src_stride-th of src.
static void strided(PyRt& r, bool is_put, py::handle dst, py::handle src, ssize_t dst_stride, ssize_t src_stride,
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
  View d = view_any(dst);
  char* at = element("p", d, index);
  dispatch("p", d, [&](auto t) {
    using T = decltype(t);
    T v = value_as<T>("p", d, value);
    if constexpr (std::is_same_v<IO, Runtime>) {
      if (d.device) return rt.put_device(static_cast<void*>(at), &v, sizeof(T), pe);
    }
    rt.put(static_cast<void*>(at), &v, sizeof(T), pe);
  });
}

template <class IO>
py::object g_via(PyRt& r, IO& rt, int npes, py::handle src, int pe, py::handle index) {
  r.check_pe("g", pe, npes);
  View s = view_any(src);
  char* at = element("g", s, index);
  return dispatch("g", s, [&](auto t) -> py::object {
    using T = decltype(t);
    T v;
    if constexpr (std::is_same_v<IO, Runtime>) {
      if (s.device) {
        rt.get_device(&v, at, sizeof(T), pe);
        return to_py(v);
      }
    }
    rt.get(&v, at, sizeof(T), pe);
    return to_py(v);
  });
}

void p_(PyRt& r, py::handle dst, py::handle value, int pe, py::handle index) {
  p_via(r, r.need("p"), -1, dst, value, pe, index);
}
py::object g_(PyRt& r, py::handle src, int pe, py::handle index) { return g_via(r, r.need("g"), -1, src, pe, index); }

template void p_via<Runtime>(PyRt&, Runtime&, int, py::handle, py::handle, int, py::handle);
template void p_via<symmem::Ctx>(PyRt&, symmem::Ctx&, int, py::handle, py::handle, int, py::handle);
template py::object g_via<Runtime>(PyRt&, Runtime&, int, py::handle, int, py::handle);
template py::object g_via<symmem::Ctx>(PyRt&, symmem::Ctx&, int, py::handle, int, py::handle);

// Copies n bytes between this process's addresses without trusting them: a bad address
// gives EFAULT, returned as errno (0: copied); never a crash. Runs without the GIL.
static int checked_copy(void* dst, const void* src, size_t n) {
  if (!n) return 0;
  struct iovec l{dst, n}, rm{const_cast<void*>(src), n};
  ssize_t got = process_vm_readv(getpid(), &l, 1, &rm, 1, 0);
  if (got == ssize_t(n)) return 0;
  return got < 0 ? errno : EFAULT;
}

static void copy_failed(int err, uintptr_t dst, uintptr_t src, size_t n) {
  if (err == EFAULT)
    raise(exc->invalid, "the local range [" + std::to_string(src) + ", +" + std::to_string(n) + ") or [" +
                            std::to_string(dst) + ", +" + std::to_string(n) + ") is not mapped in this process");
  raise(exc->invalid, std::string("cannot check an int address range (process_vm_readv: ") + std::strerror(err) + ")");
}

void bind_rma(py::module_& m) {
  using A = py::arg;
  class_of<PyRt>(m, "_Runtime")
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
}

}  // namespace symmem_py
