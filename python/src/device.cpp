// Device (GPU) memory from Python: allocation in the device heap (Runtime::align_device, the
// block filled through the CUDA driver before the closing barrier), the address of a node
// peer's copy, and DLPack capsules that torch, CuPy or NumPy turn into tensors/arrays.
//
// Nothing here reads or writes device memory from the CPU: a device Block refuses the
// buffer protocol, and a capsule only carries the pointer. symmem/_device.py makes the
// user-facing objects.
#include <cstring>

#include "module.hpp"

namespace symmem_py {

namespace {

// DLPack (dlpack.h, ABI version 0.x: the "dltensor" capsule every consumer accepts).
struct DLDevice {
  int32_t device_type;  // kDLCPU = 1, kDLCUDA = 2
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;  // kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLComplex 5, kDLBool 6
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};

// The capsule's tensor with its shape and strides, and the Python object (`keep`) that
// holds the memory alive until the consumer's tensor dies.
struct Managed {
  DLManagedTensor t{};
  std::vector<int64_t> shape, strides;
  PyObject* keep = nullptr;
};

void delete_managed(DLManagedTensor* t) {
  auto* m = static_cast<Managed*>(t->manager_ctx);
  if (m->keep && Py_IsInitialized()) {
    // The consumer may drop its tensor from any thread (torch's allocator, a CUDA callback).
    PyGILState_STATE g = PyGILState_Ensure();
    Py_DECREF(m->keep);
    PyGILState_Release(g);
  }
  delete m;
}

void capsule_destructor(PyObject* cap) {
  // Consumed capsules are renamed "used_dltensor" and belong to their consumer.
  if (!PyCapsule_IsValid(cap, "dltensor")) return;
  auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
  if (t && t->deleter) t->deleter(t);
}

}  // namespace

void bind_device(py::module_& m) {
  using A = py::arg;
  class_of<PyRt>(m, "_Runtime")
      .def(
          "_alloc_device",
          [](PyRt& r, size_t nbytes, size_t align, const std::string& site, Secs timeout, py::object fill) {
            Runtime& rt = r.need("alloc");
            if (align < 64) align = 64;
            std::string pattern;  // copied: the fill runs without the GIL
            if (!fill.is_none()) pattern = py::bytes(fill).cast<std::string>();
            r.write_site(site);
            void* p = nullptr;
            try {
              r.blocking("alloc", timeout, &r.world(), [&] {
                p = rt.align_device(align, nbytes, pattern.empty() ? nullptr : pattern.data(), pattern.size());
              });
            } catch (const symmem::Error& e) {
              if (e.code() != Errc::kMismatch) throw;
              std::string msg = std::string(e.what()) + "; call sites:";
              for (int pe = 0; pe < r.npes; ++pe) msg += " PE " + std::to_string(pe) + " " + r.site_of(pe) + ";";
              raise(exc->symmetry, msg);
            }
            if (!p && nbytes)
              raise(exc->device, "device=\"cuda\": device allocation of " + std::to_string(nbytes) + " bytes at " +
                                     site + " failed on every PE: " + rt.device_error());
            auto* b = new Block(&r, static_cast<char*>(p), nbytes);
            b->device = true;
            return b;
          },
          A("nbytes"), A("align"), A("site"), A("timeout"), A("fill") = py::none())
      .def(
          "_device_ordinal",
          [](PyRt& r) {
            Runtime::DeviceHeapInfo h;
            return r.need("device").device_heap(&h) ? h.device : -1;
          },
          "the GPU ordinal of this PE's device heap; -1 while there is none")
      .def(
          "_device_peer",
          [](PyRt& r, uintptr_t addr, size_t nbytes, int pe) -> py::object {
            Runtime& rt = r.need("peer");
            r.check_pe("peer", pe);
            Runtime::DeviceHeapInfo h;
            // Both ends in this PE's slot of the device heap.
            const bool in = rt.device_heap(&h) && rt.ptr(reinterpret_cast<void*>(addr), r.me) &&
                            (nbytes == 0 || rt.ptr(reinterpret_cast<void*>(addr + nbytes - 1), r.me)) &&
                            addr - (h.base + uint64_t(r.me) * h.heap_size) < h.heap_size;
            if (!in) raise(exc->not_sym, "peer: the tensor is not in symmem's device heap (make it with device=\"cuda\")");
            void* p = rt.ptr(reinterpret_cast<void*>(addr), pe);
            if (!p) return py::none();
            return py::int_(uintptr_t(p));
          },
          A("addr"), A("nbytes"), A("pe"));

  m.def(
      "_dlpack_capsule",
      [](py::object keep, uintptr_t data, std::vector<int64_t> shape, std::vector<int64_t> strides, int code,
         int bits, int device_type, int device_id) {
        if (shape.size() != strides.size()) raise(exc->invalid, "_dlpack_capsule: shape and strides differ in length");
        auto* m = new Managed;
        m->shape = std::move(shape);
        m->strides = std::move(strides);
        m->keep = keep.inc_ref().ptr();
        DLTensor& t = m->t.dl_tensor;
        t.data = reinterpret_cast<void*>(data);
        t.device = {device_type, device_id};
        t.ndim = int32_t(m->shape.size());
        t.dtype = {uint8_t(code), uint8_t(bits), 1};
        t.shape = m->shape.data();
        t.strides = m->strides.data();
        t.byte_offset = 0;
        m->t.manager_ctx = m;
        m->t.deleter = delete_managed;
        PyObject* cap = PyCapsule_New(&m->t, "dltensor", capsule_destructor);
        if (!cap) {
          delete_managed(&m->t);
          throw py::error_already_set();
        }
        return py::reinterpret_steal<py::object>(cap);
      },
      A("keep"), A("data"), A("shape"), A("strides"), A("code"), A("bits"), A("device_type"), A("device_id"),
      "A DLPack capsule (\"dltensor\") over memory that `keep` holds alive; strides in elements.");
  m.def(
      "_dlpack_fields",
      [](py::capsule cap) {
        if (!PyCapsule_IsValid(cap.ptr(), "dltensor")) raise(exc->invalid, "not an unconsumed DLPack capsule");
        auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
        const DLTensor& d = t->dl_tensor;
        py::dict out;
        out["data"] = uintptr_t(d.data);
        out["device"] = py::make_tuple(d.device.device_type, d.device.device_id);
        out["dtype"] = py::make_tuple(int(d.dtype.code), int(d.dtype.bits), int(d.dtype.lanes));
        out["shape"] = std::vector<int64_t>(d.shape, d.shape + d.ndim);
        out["strides"] = std::vector<int64_t>(d.strides, d.strides + d.ndim);
        out["byte_offset"] = d.byte_offset;
        out["has_deleter"] = t->deleter != nullptr;
        return out;
      },
      A("capsule"), "The fields of an unconsumed DLPack capsule (for tests; reads no tensor memory).");
}

}  // namespace symmem_py
