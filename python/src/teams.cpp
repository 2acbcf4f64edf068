// Teams and collectives: the Team class (split, translate, destroy), reduce/scans,
// broadcast/collect/alltoall(s) on NumPy arrays, and the runtime's barrier_all/sync_all.
// On CUDA tensors reduce, reduce_scatter, broadcast, fcollect, alltoall and barrier/sync
// (stream=) are the core's stream-ordered forms, queued on the caller's stream.
// Collectives are dispatched on the element type (reduce) or only its size (data movement).
#include "module.hpp"

namespace symmem_py {

static py::object make_team(PyTeam& parent, Team&& t) {
  if (!t.valid()) return py::none();
  parent.r->teams.push_back({std::move(t), false});
  auto* pt = new PyTeam(parent.owner, parent.r, &parent.r->teams.back(), parent.r->generation);
  return with_fast_calls(py::cast(pt, py::return_value_policy::take_ownership), pt);
}

static ReduceOp op_of(py::handle op) {
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

// dst, src of a collective: contiguous, symmetric, one dtype. device: whether they are
// device memory (both, or DeviceNotSupported), which the core checks (the stream forms).
static void coll_args(PyRt& r, const char* call, View& d, View& s, py::handle dst, py::handle src,
                      bool device_ok = false) {
  d = device_ok ? view_any(dst) : view_of(dst);
  s = device_ok ? view_any(src) : view_of(src);
  if (d.device != s.device)
    device_unsupported(call, std::string(d.device ? "dst" : "src") + " is device memory and " +
                                 (d.device ? "src" : "dst") +
                                 " host memory: collectives on device memory take both in the device heap");
  same_dtype(call, d, s);
  if (!d.c_contig || !s.c_contig)
    raise(exc->shape, std::string(call) + ": dst and src must be contiguous (use np.ascontiguousarray on a copy)");
  if (!d.writeable) raise(exc->invalid, std::string(call) + ": dst is read-only");
  if (d.device) return;
  if (d.size) r.check_symmetric(call, "dst", d.data, size_t(d.size * d.itemsize));
  if (s.size) r.check_symmetric(call, "src", s.data, size_t(s.size * s.itemsize));
}

// The element type of a reduction on device memory.
static Team::DeviceType device_type(const char* call, const View& v) {
  using DT = Team::DeviceType;
  if (v.kind == 'f' && v.itemsize == 4) return DT::kFloat;
  if (v.kind == 'f' && v.itemsize == 2) return DT::kHalf;
  if (v.kind == 'B') return DT::kBfloat16;
  if (v.kind == 'i' && v.itemsize == 4) return DT::kInt32;
  if (v.kind == 'i' && v.itemsize == 8) return DT::kInt64;
  raise(exc->dtype, std::string(call) + ": reductions on device memory take float32, float16, bfloat16, int32, "
                                        "int64; not " + dtype_name(v));
}

// A reduction on device memory, queued on the stream: all-reduce (dst: as src) or
// reduce-scatter (src: n_pes blocks of dst's size).
static void device_reduce(PyTeam& pt, const char* call, bool scatter, const View& d, const View& s, ReduceOp op,
                          py::handle dst, py::handle stream) {
  Team& t = pt.t(call);
  const auto type = device_type(call, s);
  const bool integer = s.kind == 'i';
  if (!(op == ReduceOp::kSum || op == ReduceOp::kMin || op == ReduceOp::kMax || (integer && op == ReduceOp::kProd))) {
    static const char* const names[] = {"sum", "prod", "min", "max", "and", "or", "xor"};
    raise(exc->dtype, std::string(call) + ": op '" + names[int(op)] + "' on " + dtype_name(s) +
                          " device memory: sum, min, max (and prod on int32, int64)");
  }
  const ssize_t n = t.n_pes();
  if (scatter ? s.size != d.size * n : d.size < s.size)
    raise(exc->shape, std::string(call) + ": dst has " + std::to_string(d.size) + " elements, src " +
                          std::to_string(s.size) + (scatter ? " (src holds n_pes blocks of dst's size)" : ""));
  void* st = stream_of(dst, stream);
  if (scatter) t.reduce_scatter_on_stream(type, op, d.data, s.data, size_t(d.size), st);
  else t.reduce_on_stream(type, op, d.data, s.data, size_t(s.size), st);
}

// A contiguous range of bytes as a span of T for the typed C++ collectives.
template <class T>
static std::span<T> span_of(const View& v) {
  return {reinterpret_cast<T*>(v.data), size_t(v.size)};
}

template <ReduceOp Op, class T>
static void reduce_typed(Team& t, int fold, const View& d, const View& s) {
  if constexpr (symmem::Reducible<T, Op>) {
    if (fold == 0) t.reduce<Op>(span_of<T>(d), std::span<const T>(span_of<T>(s)));
    else if constexpr (Op == ReduceOp::kSum) {
      if (fold == 1) t.inscan(span_of<T>(d), std::span<const T>(span_of<T>(s)));
      else t.exscan(span_of<T>(d), std::span<const T>(span_of<T>(s)));
    }
  }
}

template <class T>
static bool reducible(ReduceOp op) {
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

static const char* op_name(ReduceOp op) {
  static const char* const n[] = {"sum", "prod", "min", "max", "and", "or", "xor"};
  return n[int(op)];
}

void team_reduce(PyTeam& pt, int fold, py::handle dst, py::handle src, py::handle op_h, Secs timeout,
                 py::handle stream) {
  const char* call = fold == 0 ? "reduce" : fold == 1 ? "inscan" : "exscan";
  Team& t = pt.t(call);
  View d, s;
  coll_args(*pt.r, call, d, s, dst, src, fold == 0);
  if (d.device) return device_reduce(pt, call, false, d, s, op_of(op_h), dst, stream);
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
static auto by_size(const char* call, const View& v, F f) {
  switch (v.itemsize) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
    case 16: return f(std::complex<double>{});
  }
  raise(exc->dtype, std::string(call) + ": elements of " + std::to_string(v.itemsize) + " bytes are not supported");
}

py::object team_move(PyTeam& pt, int what, py::handle dst, py::handle src, int root, Secs timeout,
                     py::handle stream) {
  static const char* const names[] = {"broadcast", "fcollect", "collect", "alltoall"};
  const char* call = names[what];
  Team& t = pt.t(call);
  View d, s;
  coll_args(*pt.r, call, d, s, dst, src, what != 2);
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
  if (d.device) {  // queued on the stream; sizes in bytes per PE
    void* st = stream_of(dst, stream);
    const size_t bytes = size_t(s.size * s.itemsize);
    switch (what) {
      case 0: t.broadcast_on_stream(d.data, s.data, bytes, root, st); break;
      case 1: t.fcollect_on_stream(d.data, s.data, bytes, st); break;
      default: t.alltoall_on_stream(d.data, s.data, bytes / size_t(n), st); break;
    }
    return py::none();
  }
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
static void team_alltoalls(PyTeam& pt, py::handle dst, py::handle src, ssize_t dst_stride, ssize_t src_stride,
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

void team_barrier(PyTeam& pt, bool sync, Secs timeout, py::handle stream) {
  const char* call = sync ? "sync" : "barrier";
  Team& me = pt.t(call);
  if (!stream.is_none()) {  // the stream-ordered form: the same device barrier for both
    me.sync_on_stream(stream_of(py::none(), stream));
    return;
  }
  pt.r->blocking(call, timeout, &me, [&] { sync ? me.sync() : me.barrier(); });
  if (!sync) pt.r->release_pending();
}

// reduce_scatter: device memory only (the host collectives have none).
static void team_reduce_scatter(PyTeam& pt, py::handle dst, py::handle src, py::handle op, py::handle stream) {
  const char* call = "reduce_scatter";
  View d, s;
  coll_args(*pt.r, call, d, s, dst, src, true);
  if (!d.device)
    raise(exc->invalid, "reduce_scatter: takes CUDA tensors / device arrays (device=\"cuda\"); on host memory use "
                        "reduce() and take your block");
  device_reduce(pt, call, true, d, s, op_of(op), dst, stream);
}

void bind_teams(py::module_& m) {
  using A = py::arg;
  class_of<PyTeam>(m, "Team")
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
          "sync", [](PyTeam& t, Secs timeout, py::handle st) { team_barrier(t, true, timeout, st); },
          py::kw_only(), py::arg("timeout") = Secs{}, py::arg("stream") = py::none())
      .def(
          "barrier", [](PyTeam& t, Secs timeout, py::handle st) { team_barrier(t, false, timeout, st); },
          py::kw_only(), py::arg("timeout") = Secs{}, py::arg("stream") = py::none())
      .def(
          "broadcast",
          [](PyTeam& t, py::handle d, py::handle s, int root, Secs to, py::handle st) {
            team_move(t, 0, d, s, root, to, st);
          },
          py::arg("dst"), py::arg("src"), py::arg("root"), py::kw_only(), py::arg("timeout") = Secs{},
          py::arg("stream") = py::none())
      .def(
          "fcollect", [](PyTeam& t, py::handle d, py::handle s, Secs to, py::handle st) { team_move(t, 1, d, s, 0, to, st); },
          py::arg("dst"), py::arg("src"), py::kw_only(), py::arg("timeout") = Secs{}, py::arg("stream") = py::none())
      .def(
          "collect", [](PyTeam& t, py::handle d, py::handle s, Secs to) { return team_move(t, 2, d, s, 0, to); },
          py::arg("dst"), py::arg("src"), py::kw_only(), py::arg("timeout") = Secs{})
      .def(
          "alltoall", [](PyTeam& t, py::handle d, py::handle s, Secs to, py::handle st) { team_move(t, 3, d, s, 0, to, st); },
          py::arg("dst"), py::arg("src"), py::kw_only(), py::arg("timeout") = Secs{}, py::arg("stream") = py::none())
      .def("alltoalls", &team_alltoalls, py::arg("dst"), py::arg("src"), py::kw_only(), py::arg("dst_stride") = 1,
           py::arg("src_stride") = 1, py::arg("nelems") = -1, py::arg("timeout") = Secs{})
      .def(
          "reduce",
          [](PyTeam& t, py::handle d, py::handle s, py::handle op, Secs to, py::handle st) {
            team_reduce(t, 0, d, s, op, to, st);
          },
          py::arg("dst"), py::arg("src"), py::arg("op") = "sum", py::kw_only(), py::arg("timeout") = Secs{},
          py::arg("stream") = py::none())
      .def("reduce_scatter", &team_reduce_scatter, py::arg("dst"), py::arg("src"), py::arg("op") = "sum",
           py::kw_only(), py::arg("stream") = py::none())
      .def(
          "inscan", [](PyTeam& t, py::handle d, py::handle s, Secs to) { team_reduce(t, 1, d, s, py::none(), to); },
          py::arg("dst"), py::arg("src"), py::kw_only(), py::arg("timeout") = Secs{})
      .def(
          "exscan", [](PyTeam& t, py::handle d, py::handle s, Secs to) { team_reduce(t, 2, d, s, py::none(), to); },
          py::arg("dst"), py::arg("src"), py::kw_only(), py::arg("timeout") = Secs{})
      .def("__repr__", [](PyTeam& t) {
        if (!t.live()) return std::string("<symmem.Team (destroyed)>");
        return "<symmem.Team " + std::to_string(t.e->team.n_pes()) + " PEs, me " + std::to_string(t.e->team.my_pe()) +
               ", index " + std::to_string(t.e->team.index()) + ">";
      });

  class_of<PyRt>(m, "_Runtime")
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
          py::kw_only(), A("timeout") = Secs{});
}

}  // namespace symmem_py
