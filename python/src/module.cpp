// symmem._symmem — the pybind11 layer of the Python module, over the public C++ API
// (symmem::Runtime, symmem::Team). The pure-Python package symmem/ sits on top of it.
//
// The calls whose per-call cost matters (put/get/p/g, atomics, signals, waits, barriers,
// collectives) take NumPy arrays (any view into a symmetric allocation) and check dtypes,
// shapes and PEs before one C++ call. Allocation returns a Block (buffer protocol);
// lifetime rules (orphans, collect) are in symmem/_runtime.py.
//
// This file makes the module: the error classes, then the four classes, then each area's
// calls (one file each, see module.hpp).
#include "module.hpp"

namespace symmem_py {

Exc* exc = nullptr;

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

}  // namespace symmem_py

using namespace symmem_py;

PYBIND11_MODULE(_symmem, m) {
  m.doc() = "symmem's native layer (use the symmem package)";
  py::module_ errs = py::module_::import("symmem._errors");
  exc = new Exc{errs.attr("Error"),          errs.attr("InitError"),       errs.attr("StateError"),
                errs.attr("HeapExhausted"),  errs.attr("InvalidArgument"), errs.attr("NotSymmetricError"),
                errs.attr("ShapeError"),     errs.attr("DTypeError"),      errs.attr("PEError"),
                errs.attr("Timeout"),        errs.attr("SymmetryError"),   errs.attr("DeviceUnavailable"),
                errs.attr("DeviceNotSupported")};
  g_as_array = py::module_::import("symmem._util").attr("as_array");
  g_as_view = py::module_::import("symmem._util").attr("as_view");

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const symmem::Error& e) {
      set_error(e);
    }
  });

  // The classes first, so that every signature names them, whichever file binds it.
  py::class_<Block>(m, "Block", py::buffer_protocol(), "A symmetric allocation (exports the buffer protocol).");
  py::class_<PyTeam>(m, "Team", py::dynamic_attr(), "A team of PEs (symmem.TEAM_WORLD, TEAM_SHARED, or a split).");
  py::class_<PyCtx>(m, "_Ctx");
  py::class_<PyRt>(m, "_Runtime").def(py::init<>());

  bind_arrays(m);
  bind_init(m);
  bind_rma(m);
  bind_amo(m);
  bind_waits(m);
  bind_teams(m);
  bind_ctx(m);
  bind_fast_calls(m);
  bind_device(m);
}
