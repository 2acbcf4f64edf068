// Arrays and their lifetime: a NumPy array's View and the checks on it (dtype, shape,
// element, symmetric), the Block behind every symmem array (allocation, free, peer views),
// and the pages a Block keeps after its runtime's finalize.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "module.hpp"

namespace symmem_py {

// A constructor's initial contents: `pattern` (bytes) repeated over [p, p + n). Runs inside
// the allocation, without the GIL: the block is filled before any peer may write into it.
static void fill_repeat(char* p, size_t n, const char* pattern, size_t k) {
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

py::object g_as_array;

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

py::object g_as_view;

View view_any(py::handle h) {
  if (py::isinstance<py::array>(h)) return view_of(h);
  py::object g = g_as_view(h);
  if (!py::isinstance<py::tuple>(g)) return view_of(g);
  // (ptr, shape, byte strides, kind, itemsize) of device memory: geometry only.
  auto t = g.cast<py::tuple>();
  auto shape = t[1].cast<std::vector<ssize_t>>();
  auto strides = t[2].cast<std::vector<ssize_t>>();
  View v;
  v.device = true;
  v.geom = std::make_shared<std::vector<ssize_t>>(shape);
  v.geom->insert(v.geom->end(), strides.begin(), strides.end());
  v.data = reinterpret_cast<char*>(t[0].cast<uintptr_t>());
  v.ndim = ssize_t(shape.size());
  v.shape = v.geom->data();
  v.strides = v.geom->data() + v.ndim;
  v.itemsize = t[4].cast<ssize_t>();
  v.kind = t[3].cast<std::string>().at(0);
  v.size = 1;
  for (ssize_t x : shape) v.size *= x;
  ssize_t step = v.itemsize;
  v.c_contig = true;
  for (ssize_t i = v.ndim - 1; i >= 0; --i) {
    if (v.shape[i] != 1 && v.strides[i] != step) v.c_contig = false;
    step *= v.shape[i];
  }
  if (v.size == 0) v.c_contig = true;
  v.writeable = true;
  v.keep = py::reinterpret_borrow<py::object>(h);
  return v;
}

void device_unsupported(const char* call, const std::string& what) {
  raise(exc->unsupported, std::string(call) + ": " + what + " (docs/python.md, \"CUDA tensors\")");
}

void* stream_of(py::handle x, py::handle stream) {
  static py::object* f = new py::object(py::module_::import("symmem._device").attr("stream_for"));
  return reinterpret_cast<void*>((*f)(x, stream).cast<uintptr_t>());
}

std::string dtype_name(const View& v) {
  if (v.device && v.kind == 'B') return "bfloat16";
  return py::str(v.keep.attr("dtype")).cast<std::string>();
}

static std::string shape_str(const View& v) {
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

// Pages kept mapped after their runtime's finalize (Runtime::keep_after_finalize), counted
// per page over the Blocks on them: a page goes (munmap) when its last Block does.
static std::map<uintptr_t, int>& kept_pages() {
  static auto* m = new std::map<uintptr_t, int>;
  return *m;
}
static const uintptr_t kPage = uintptr_t(sysconf(_SC_PAGESIZE));

void keep_pages(const char* p, size_t n) {
  for (uintptr_t a = uintptr_t(p) / kPage * kPage; a < uintptr_t(p) + n; a += kPage) ++kept_pages()[a];
}
static void drop_pages(const char* p, size_t n) {
  auto& m = kept_pages();
  for (uintptr_t a = uintptr_t(p) / kPage * kPage; a < uintptr_t(p) + n; a += kPage) {
    auto it = m.find(a);
    if (it == m.end() || --it->second > 0) continue;
    m.erase(it);
    munmap(reinterpret_cast<void*>(a), kPage);
  }
}
bool is_kept(const void* p) { return kept_pages().count(uintptr_t(p) / kPage * kPage) != 0; }

Block::Block(PyRt* o, char* p, size_t n, bool is_peer) : owner(o), ptr(p), nbytes(n), peer(is_peer) {
  owner->blocks.insert(this);
}

Block::~Block() {
  if (owner) owner->blocks.erase(this);
  if (kept) drop_pages(ptr, nbytes);
}

void PyRt::check_symmetric(const char* call, const char* what, const void* p, size_t n) {
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

void PyRt::write_site(const std::string& site) {
  char* s = reinterpret_cast<char*>(ctl + kTeamCounters);
  size_t n = std::min(site.size(), kSiteBytes - 1);
  std::memcpy(s, site.data(), n);
  s[n] = 0;
}

std::string PyRt::site_of(int pe) {
  auto* s = static_cast<const char*>(rt->ptr(reinterpret_cast<char*>(ctl + kTeamCounters), pe));
  if (!s) return "?";
  return std::string(s, strnlen(s, kSiteBytes));
}

void bind_arrays(py::module_& m) {
  using A = py::arg;
  class_of<Block>(m, "Block")
      .def_buffer([](Block& b) -> py::buffer_info {
        if (b.freed) raise(exc->state, "the symmetric block is freed");
        if (b.device) raise(exc->invalid, "a device block has no CPU buffer (use its tensor on the GPU)");
        return py::buffer_info(b.ptr, 1, "B", 1, {ssize_t(b.nbytes)}, {ssize_t(1)});
      })
      .def_property_readonly("addr", [](const Block& b) { return uintptr_t(b.ptr); })
      .def_property_readonly("nbytes", [](const Block& b) { return b.nbytes; })
      .def_property_readonly("freed", [](const Block& b) { return b.freed; })
      .def_property_readonly("detached", [](const Block& b) { return b.detached; })
      .def_property_readonly("peer", [](const Block& b) { return b.peer; })
      .def_property_readonly("device", [](const Block& b) { return b.device; })
      .def_readonly("source", &Block::source)
      .def("__int__", [](const Block& b) { return uintptr_t(b.ptr); })
      .def("__index__", [](const Block& b) { return uintptr_t(b.ptr); })
      .def("__len__", [](const Block& b) { return b.nbytes; })
      .def("__repr__", [](const Block& b) {
        return "<symmem.Block " + std::to_string(b.nbytes) + " bytes at 0x" +
               py::str(py::int_(uintptr_t(b.ptr)).attr("__format__")("x")).cast<std::string>() +
               (b.device ? " (device)" : "") +
               (b.freed ? " (freed)>" : b.detached ? " (its runtime is finalized)>" : ">");
      });

  class_of<PyRt>(m, "_Runtime")
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
          A("a"));

  m.def("_kept_pages", [] { return kept_pages().size(); }, "pages kept for arrays that outlived their runtime");
}

}  // namespace symmem_py
