// Joining and leaving a job: the _Runtime's init and finalize, what becomes of its Blocks,
// Teams and contexts when it goes (kept, destroyed, or abandoned to the process exit), the
// wait check behind every blocking call, and unique ids.
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "module.hpp"

namespace symmem_py {

void PyRt::wait_check() {
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

void PyRt::timed_out(const char* call, double timeout, const Team* team, int slot, uint64_t entry) {
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

void PyRt::release_pending() {
  pending.clear();
  for (PyCtx* c : ctxs) c->pending.clear();
}

void PyRt::detach_all(bool keep, bool abandoned) {
  for (Block* b : blocks) {
    if (keep && rt && b->nbytes && !b->device) {
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

PyRt::~PyRt() {
  detach_all(false, true);
  if (rt) {
    (void)rt.release();
    auto* keep = new std::list<TeamEntry>;
    keep->splice(keep->end(), teams);
  }
}

// A Runtime left without finalizing keeps its Teams: destroying them would wait for the
// other PEs.
static void abandon_teams(PyRt& r) {
  static auto* graveyard = new std::list<TeamEntry>;
  graveyard->splice(graveyard->end(), r.teams);
}

static void init_rt(PyRt& r, py::object uid, int pe, int npes, uint64_t heap_size, uint64_t instance, double timeout,
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
static bool finalize_rt(PyRt& r, double timeout, bool keep) {
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

void bind_init(py::module_& m) {
  using A = py::arg;
  class_of<PyRt>(m, "_Runtime")
      .def("init", &init_rt, A("uid"), A("pe"), A("n_pes"), A("heap_size"), A("instance"), A("timeout"), A("tls"))
      .def("finalize", &finalize_rt, A("timeout"), A("keep") = true)
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
           });

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
}

}  // namespace symmem_py
