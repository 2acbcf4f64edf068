// Contexts (symmem.Ctx): the runtime's point-to-point calls on a symmem::Ctx, with the
// context's team numbering, its own fence/quiet and its own nbi keep-alive list; made by
// a Team or by the runtime (its world team).
#include "module.hpp"

namespace symmem_py {

void bind_ctx(py::module_& m) {
  using A = py::arg;
  auto ctx = class_of<PyCtx>(m, "_Ctx");
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

  class_of<PyTeam>(m, "Team")
      .def("_ctx_create",
           [](PyTeam& t, long options) {
             Team& me = t.t("Ctx");
             return new PyCtx(t.owner, t.r, me.ctx_create(options));
           });

  class_of<PyRt>(m, "_Runtime")
      .def("_ctx_create",
           [](py::object self, long options) {
             PyRt& r = self.cast<PyRt&>();
             return new PyCtx(self, &r, r.need("Ctx").ctx_create(options));
           });
}

}  // namespace symmem_py
