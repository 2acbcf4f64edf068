// gemm_overlap — a GEMM fused with its communication, over symmem's C++ API.
//
//   OPENBLAS_NUM_THREADS=1 symmem-run -n 2 build/examples/gemm_overlap/gemm_overlap
//       --op ag|rs|ar|pipe [--variant mono,tiled,comm,bulk,push,pull,store]
//       [--m 1024 --n 1024 --k 1024 --tile 128 --iters 20 --min-iters 5 --warmup 3 --budget 1
//        --check-all --skew-us 0 --seed 1 --no-header]
//
// Operators (gemm_common.hpp has the shapes): ag  Y = allgather(X) W_p;  rs  reduce-scatter
// of the partial products X_p W_p;  ar  their all-reduce;  pipe  PE s computes stage s of
// act(X W_0) W_1 ... by row tiles and hands each finished tile to PE s+1.
// What is measured, one CSV row each (every PE runs it at once; a row's time is the max over
// PEs of one iteration; min/median/p10/p90 over iterations):
//   mono   the PE's whole GEMM as one cblas_sgemm, no communication
//   tiled  the same GEMM cut into the tiles the fused variants use, no communication
//   comm   the communication alone (ag: fcollect; rs: alltoall + local sum; ar: the
//          library's all-reduce, team.reduce; pipe: one put_signal of the whole H)
//   bulk   comm and mono one after the other: the strongest non-fused baseline
//   push   finished tiles sent with put_signal while the next tile computes; consumers
//          wait per tile on its signal
//   pull   no copy: the consumer's GEMM (or add) reads the peer's tile in place (ptr)
//   store  no copy: the producer's GEMM writes straight into the owner's memory; for rs/ar
//          the next contributor accumulates onto it with beta = 1, the owner last, one call
//          per owner block (--tile only cuts ar's last step, for its all-gather half)
// Every variant's output (and comm's, where it is a result) is compared element by element
// with a single-PE reference, after its destination buffers were filled with NaN; with
// --check-all every timed iteration is. A bad argument prints one line and exits 2.
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <symmem/symmem.hpp>

#include "gemm_common.hpp"

namespace {

using gemm::Args;
using gemm::Op;
using gemm::Shape;
using symmem::Cmp;
using symmem::SignalOp;
using symmem::SymSpan;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void add_into(float* __restrict y, const float* __restrict x, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += x[i];
}
void sum2(float* __restrict y, const float* __restrict a, const float* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

struct Bench {
  symmem::Runtime& rt;
  symmem::Team world;
  Args a;
  Shape s;
  int me, P;
  long T;  // tiles per owner block (ag/rs/ar) or of m (pipe)
  uint64_t ep = 0;
  SymSpan<uint64_t> sig;  // [0, P*T): per (source, tile); [P*T, 2P*T): ar's all-gather half; then the store chain
  SymSpan<double> tloc, tmax;
  SymSpan<long> wloc, wsum;

  // Symmetric buffers (allocated per op; empty where unused).
  SymSpan<float> X, Xs, Xfull, W, Y, Z, stage, Hin, Hout;
  std::vector<float> tmp, ref, refx;
  std::vector<float*> Yr, Zr, Xsr, Wr, Hinr, Houtr;  // the peers' copies, by PE

  Bench(symmem::Runtime& r, const Args& args, const Shape& sh)
      : rt(r), world(r.team_world()), a(args), s(sh), me(r.my_pe()), P(r.n_pes()), T(sh.tiles) {}

  uint64_t* sa(long src, long t) { return sig.data() + src * T + t; }
  uint64_t* sb(long src, long t) { return sig.data() + P * T + src * T + t; }
  uint64_t* sc(long step, long t) { return sig.data() + 2 * P * T + step * T + t; }

  // Signals PE pe that the stores this PE made before (plain stores, through ptr or into its
  // own heap) are done: release fence, then a put_signal of no data.
  void notify(uint64_t* word, int pe) {
    std::atomic_thread_fence(std::memory_order_release);
    rt.put_signal(word, word, 0, word, ep, SignalOp::kSet, pe);
  }
  void await(uint64_t* word) { rt.signal_wait_until(word, Cmp::kGe, ep); }

  template <class T>
  std::vector<T*> peers(SymSpan<T> b) {
    std::vector<T*> v(static_cast<size_t>(P));
    for (int q = 0; q < P; ++q) v[size_t(q)] = static_cast<T*>(rt.ptr(b.data(), q));
    return v;
  }

  void setup() {
    const long m = a.m, n = a.n, k = a.k, ml = s.ml, nl = s.nl, kl = s.kl;
    sig = rt.alloc<uint64_t>(size_t(3 * P * T + 1));
    std::fill(sig.begin(), sig.end(), 0);
    tloc = rt.alloc<double>(size_t(std::max(a.iters, 1) + 1));
    tmax = rt.alloc<double>(tloc.size());
    wloc = rt.alloc<long>(1);
    wsum = rt.alloc<long>(1);
    switch (a.op) {
      case Op::kAg:
        Xs = rt.alloc<float>(size_t(ml * k));
        Xfull = rt.alloc<float>(size_t(m * k));
        W = rt.alloc<float>(size_t(k * nl));
        Y = rt.alloc<float>(size_t(m * nl));
        gemm::fill(Xs.data(), a.seed, gemm::kMatX, me * ml, 0, ml, k);
        gemm::fill(Xfull.data(), a.seed, gemm::kMatX, 0, 0, m, k);
        gemm::fill(W.data(), a.seed, gemm::mat_w(0), 0, me * nl, k, nl);
        break;
      case Op::kRs:
      case Op::kAr:
        X = rt.alloc<float>(size_t(m * kl));
        W = rt.alloc<float>(size_t(kl * n));
        Z = rt.alloc<float>(size_t(m * n));
        stage = rt.alloc<float>(size_t(P * ml * n));
        Y = rt.alloc<float>(size_t((a.op == Op::kRs ? ml : m) * n));
        gemm::fill(X.data(), a.seed, gemm::kMatX, 0, me * kl, m, kl);
        gemm::fill(W.data(), a.seed, gemm::mat_w(0), me * kl, 0, kl, n);
        tmp.resize(size_t(a.tile * n));
        break;
      case Op::kPipe:
        break;
    }
    if (a.op == Op::kPipe) {
      // Allocation is collective with equal sizes: every PE allocates every buffer.
      X = rt.alloc<float>(size_t(m * k));
      W = rt.alloc<float>(size_t(std::max(k, n) * n));
      Hin = rt.alloc<float>(size_t(m * n));
      Hout = rt.alloc<float>(size_t(m * n));
      if (me == 0) gemm::fill(X.data(), a.seed, gemm::kMatX, 0, 0, m, k);
      gemm::fill(W.data(), a.seed, gemm::mat_w(me), 0, 0, me == 0 ? k : n, n);
      gemm::fill(Hin.data(), a.seed, 99, 0, 0, m, n);  // a stand-in input for mono/tiled
      std::fill(Hout.begin(), Hout.end(), 0.0f);
    }
    if (!Y.empty()) std::fill(Y.begin(), Y.end(), 0.0f);
    if (!Z.empty()) std::fill(Z.begin(), Z.end(), 0.0f);
    if (!stage.empty()) std::fill(stage.begin(), stage.end(), 0.0f);
    Yr = peers(Y);
    Zr = peers(Z);
    Xsr = peers(Xs);
    Wr = peers(W);
    Hinr = peers(Hin);
    Houtr = peers(Hout);
    ref = gemm::reference(a, s, P, me);
    rt.barrier_all();
  }

  // ---------------------------------------------------------------- ag
  void ag_run(const std::string& v) {
    const long ml = s.ml, nl = s.nl, k = a.k, tl = a.tile;
    auto rows_gemm = [&](const float* x, long row0, long rows) {
      gemm::sgemm(x, k, W.data(), nl, Y.data() + row0 * nl, nl, rows, nl, k, 0);
    };
    if (v == "mono") return rows_gemm(Xfull.data(), 0, a.m);
    if (v == "tiled") {
      for (long r = 0; r < a.m; r += tl) rows_gemm(Xfull.data() + r * k, r, tl);
      return;
    }
    if (v == "comm" || v == "bulk") {
      world.fcollect(Xfull, Xs);
      if (v == "bulk") rows_gemm(Xfull.data(), 0, a.m);
      return;
    }
    if (v == "push") {
      // Send chunk c to every peer, compute my own chunk c; then the peers' chunks as they land.
      for (long c = 0; c < T; ++c) {
        for (int d = 1; d < P; ++d) {
          int q = (me + d) % P;
          rt.put_signal(Xfull.data() + (me * ml + c * tl) * k, Xs.data() + c * tl * k, size_t(tl * k), sa(me, c), ep,
                        SignalOp::kSet, q);
        }
        rows_gemm(Xs.data() + c * tl * k, me * ml + c * tl, tl);
      }
      for (int d = 1; d < P; ++d) {
        int src = (me - d + P) % P;
        for (long c = 0; c < T; ++c) {
          await(sa(src, c));
          rows_gemm(Xfull.data() + (src * ml + c * tl) * k, src * ml + c * tl, tl);
        }
      }
      return;
    }
    if (v == "pull") {
      // The peers' shards are read in place by the GEMM's packing; they are ready since the
      // iteration's barrier (inputs), so there is nothing to wait for.
      for (int d = 0; d < P; ++d) {
        int src = (me - d + P) % P;
        rows_gemm(src == me ? Xs.data() : Xsr[size_t(src)], src * ml, ml);
      }
      return;
    }
    // store: my shard times every PE's W_q (read in place), written into that PE's Y.
    for (int d = 1; d <= P; ++d) {
      int q = (me + d) % P;
      float* y = (q == me ? Y.data() : Yr[size_t(q)]) + me * ml * nl;
      gemm::sgemm(Xs.data(), k, q == me ? W.data() : Wr[size_t(q)], nl, y, nl, ml, nl, k, 0);
      if (q != me) notify(sa(me, 0), q);
    }
    for (int d = 1; d < P; ++d) await(sa((me + d) % P, 0));
  }

  // ---------------------------------------------------------------- rs / ar
  // Partial product rows [row0, row0+rows) into c (leading dimension n).
  void part(long row0, long rows, float* c, float beta) {
    gemm::sgemm(X.data() + row0 * s.kl, s.kl, W.data(), a.n, c, a.n, rows, a.n, s.kl, beta);
  }

  void rs_run(const std::string& v) {
    const bool ar = a.op == Op::kAr;
    const long ml = s.ml, n = a.n, tl = a.tile;
    const size_t tile_n = size_t(tl * n), block_n = size_t(ml * n);
    float* yown = Y.data() + (ar ? me * ml * n : 0);  // my rows of the result
    auto yrows = [&](int q) { return (q == me ? Y.data() : Yr[size_t(q)]) + (ar ? q * ml * n : 0); };
    // ar: my finished tile t goes to every peer's Y (the all-gather half).
    auto ag_send = [&](long t) {
      if (!ar) return;
      for (int d = 1; d < P; ++d) {
        int q = (me + d) % P;
        rt.put_signal(Y.data() + (me * ml + t * tl) * n, Y.data() + (me * ml + t * tl) * n, tile_n, sb(me, t), ep,
                      SignalOp::kSet, q);
      }
    };
    auto ag_wait = [&] {
      if (!ar) return;
      for (int d = 1; d < P; ++d)
        for (long t = 0; t < T; ++t) await(sb((me - d + P) % P, t));
    };

    if (v == "mono") return part(0, a.m, Z.data(), 0);
    if (v == "tiled") {
      for (long r = 0; r < a.m; r += tl) part(r, tl, Z.data() + r * n, 0);
      return;
    }
    if (v == "comm" || v == "bulk") {
      if (v == "bulk") part(0, a.m, Z.data(), 0);
      if (ar) return world.reduce(symmem::op::sum, Y, Z);
      world.alltoall(stage, Z);  // block j of Z to PE j
      if (P == 1) { std::memcpy(Y.data(), stage.data(), block_n * sizeof(float)); return; }
      sum2(Y.data(), stage.data(), stage.data() + block_n, block_n);
      for (int j = 2; j < P; ++j) add_into(Y.data(), stage.data() + j * block_n, block_n);
      return;
    }
    if (v == "push") {
      // Peers' rows first, each tile sent from cache into the owner's staging block for me.
      for (int d = 1; d < P; ++d) {
        int q = (me + d) % P;
        for (long t = 0; t < T; ++t) {
          part(q * ml + t * tl, tl, tmp.data(), 0);
          rt.put_signal(stage.data() + me * block_n + t * tile_n, tmp.data(), tile_n, sa(me, t), ep, SignalOp::kSet, q);
        }
      }
      for (long t = 0; t < T; ++t) {
        float* y = yown + t * tile_n;
        part(me * ml + t * tl, tl, y, 0);
        for (int d = 1; d < P; ++d) {
          int src = (me - d + P) % P;
          await(sa(src, t));
          add_into(y, stage.data() + src * block_n + t * tile_n, tile_n);
        }
        ag_send(t);
      }
      return ag_wait();
    }
    if (v == "pull") {
      // Peers' rows into my own Z, each tile announced; the owner adds it reading it in place.
      for (int d = 1; d < P; ++d) {
        int q = (me + d) % P;
        for (long t = 0; t < T; ++t) {
          part(q * ml + t * tl, tl, Z.data() + (q * ml + t * tl) * n, 0);
          notify(sa(me, t), q);
        }
      }
      for (long t = 0; t < T; ++t) {
        float* y = yown + t * tile_n;
        part(me * ml + t * tl, tl, y, 0);
        for (int d = 1; d < P; ++d) {
          int src = (me - d + P) % P;
          await(sa(src, t));
          add_into(y, Zr[size_t(src)] + (me * ml + t * tl) * n, tile_n);
        }
        if (ar)
          for (int d = 1; d < P; ++d) notify(sb(me, t), (me + d) % P);
      }
      if (ar)  // the all-gather half by pull: copy each owner's finished tiles from its Y
        for (int d = 1; d < P; ++d) {
          int src = (me - d + P) % P;
          for (long t = 0; t < T; ++t) {
            await(sb(src, t));
            size_t off = size_t((src * ml + t * tl) * n);
            std::memcpy(Y.data() + off, Yr[size_t(src)] + off, tile_n * sizeof(float));
          }
        }
      return;
    }
    // store: at step st I contribute to owner q = me+1+st; the first contributor writes with
    // beta 0 into the owner's rows, each next one (after the previous one's signal) adds with
    // beta 1, the owner itself is last. One writer per block at a time, no copy, no add pass.
    // The chain needs only the order between contributors, so each step is one GEMM call over
    // the owner's whole block: every further call would repack W (OpenBLAS packs B per call)
    // and buy nothing, since the contributors move through the steps in lockstep. Only ar's
    // last step goes by tiles, each sent (ag_send) while still in cache.
    for (int st = 0; st < P; ++st) {
      int q = (me + 1 + st) % P;
      if (st > 0) await(sc(st - 1, 0));
      const float beta = st > 0 ? 1.0f : 0.0f;
      if (st < P - 1 || !ar) {
        part(q * ml, ml, yrows(q), beta);
        if (st < P - 1) notify(sc(st, 0), (me - 1 + P) % P);
      } else {
        for (long t = 0; t < T; ++t) {
          part(q * ml + t * tl, tl, yrows(q) + t * tile_n, beta);
          ag_send(t);
        }
      }
    }
    ag_wait();
  }

  // ---------------------------------------------------------------- pipe
  void pipe_run(const std::string& v) {
    const long n = a.n, tl = a.tile;
    const long din = me == 0 ? a.k : n;
    const bool first = me == 0, last = me == P - 1;
    const float* in = first ? X.data() : Hin.data();
    auto stage_rows = [&](const float* x, long rows, float* out) {  // my stage of `rows` rows of x
      gemm::sgemm(x, din, W.data(), n, out, n, rows, n, din, 0);
      if (!last) gemm::relu6(out, size_t(rows * n));
    };
    if (v == "mono") return stage_rows(in, a.m, Hout.data());
    if (v == "tiled") {
      for (long r = 0; r < a.m; r += tl) stage_rows(in + r * din, tl, Hout.data() + r * n);
      return;
    }
    if (v == "comm") {
      if (!last) rt.put_signal(Hin.data(), Hout.data(), size_t(a.m * n), sa(0, 0), ep, SignalOp::kSet, me + 1);
      if (!first) await(sa(0, 0));
      return;
    }
    if (v == "bulk") {
      if (!first) await(sa(0, 0));
      stage_rows(in, a.m, Hout.data());
      if (!last) rt.put_signal(Hin.data(), Hout.data(), size_t(a.m * n), sa(0, 0), ep, SignalOp::kSet, me + 1);
      return;
    }
    for (long t = 0; t < T; ++t) {
      const long r = t * tl;
      const size_t off = size_t(r * n);
      if (!first) await(sa(0, t));
      if (v == "push") {
        stage_rows(in + r * din, tl, Hout.data() + off);
        if (!last)
          rt.put_signal(Hin.data() + off, Hout.data() + off, size_t(tl * n), sa(0, t), ep, SignalOp::kSet, me + 1);
      } else if (v == "pull") {  // read the previous stage's tile where it was computed
        const float* x = first ? X.data() + r * din : Houtr[size_t(me - 1)] + off;
        stage_rows(x, tl, Hout.data() + off);
        if (!last) notify(sa(0, t), me + 1);
      } else {  // store: write my tile straight into the next stage's input
        float* out = last ? Hout.data() + off : Hinr[size_t(me + 1)] + off;
        stage_rows(in + r * din, tl, out);
        if (!last) notify(sa(0, t), me + 1);
      }
    }
  }

  void run(const std::string& v) {
    switch (a.op) {
      case Op::kAg: return ag_run(v);
      case Op::kPipe: return pipe_run(v);
      default: return rs_run(v);
    }
  }

  // What a variant's result is checked on (nullptr: nothing to check), and what to poison.
  const float* result(const std::string& v) {
    if (a.op == Op::kPipe) return (v == "mono" || v == "tiled" || v == "comm" || me != P - 1) ? nullptr : Hout.data();
    if (a.op == Op::kAg) return Y.data();
    if (v == "mono" || v == "tiled") return nullptr;  // a partial product, not the result
    return Y.data();
  }
  bool checkable(const std::string& v) {
    if (a.op == Op::kPipe) return !(v == "mono" || v == "tiled" || v == "comm");
    if (a.op == Op::kAg) return true;
    return !(v == "mono" || v == "tiled");
  }
  void poison(const std::string& v) {
    auto p = [](SymSpan<float> b) { if (!b.empty()) gemm::poison(b.data(), b.size()); };
    switch (a.op) {
      case Op::kAg:
        p(Y);
        if (v == "comm" || v == "bulk" || v == "push")
          for (int q = 0; q < P; ++q)
            if (q != me) gemm::poison(Xfull.data() + q * s.ml * a.k, size_t(s.ml * a.k));
        break;
      case Op::kRs:
      case Op::kAr:
        p(Y);
        p(stage);
        if (v != "comm") p(Z);
        else part(0, a.m, Z.data(), 0);  // comm reduces the partial product in Z
        break;
      case Op::kPipe:
        p(Hout);
        if (me > 0 && v != "pull") p(Hin);  // pull does not write Hin; mono and tiled read it
        break;
    }
  }
  long check_local(const std::string& v) {
    const float* got = result(v);
    long first = -1, bad = 0;
    if (a.op == Op::kAg && v == "comm") {  // the all-gathered X itself
      if (refx.empty()) {
        refx.resize(Xfull.size());
        gemm::fill(refx.data(), a.seed, gemm::kMatX, 0, 0, a.m, a.k);
      }
      bad = gemm::mismatches(Xfull.data(), refx, a.k, &first);
    } else {
      if (!got || ref.empty()) return 0;
      bad = gemm::mismatches(got, ref, a.op == Op::kAg ? s.nl : a.n, &first);
    }
    if (bad)
      std::fprintf(stderr, "gemm_overlap: PE %d %s/%s: %ld elements differ from the reference, first in row %ld (tile %ld)\n",
                   me, gemm::op_name(a.op), v.c_str(), bad, first, first / a.tile);
    return bad;
  }

  double max_over_pes(double x) {
    tloc[0] = x;
    world.reduce(symmem::op::max, tmax.subspan(0, 1), tloc.subspan(0, 1));
    return tmax[0];
  }
  long sum_over_pes(long x) {
    wloc[0] = x;
    world.reduce(symmem::op::sum, wsum, wloc);
    return wsum[0];
  }

  // One iteration: a barrier, then this PE's time for the operator.
  double once(const std::string& v, bool check, long* wrong) {
    if (check) {
      rt.barrier_all();  // nobody still reads what I poison
      poison(v);
    }
    rt.barrier_all();
    ++ep;
    double t0 = now_s();
    // busy, as a PE still finishing earlier work would be; --check-all rotates the late PE
    // so that every consumer meets a late producer
    const int late = a.check_all ? int(ep % uint64_t(P)) : 0;
    if (me == late && a.skew_us)
      while (now_s() - t0 < double(a.skew_us) * 1e-6) {
      }
    const long c0 = gemm::preemptions();
    run(v);
    double t = now_s() - t0;
    last_preempted = gemm::preemptions() - c0;
    if (check) *wrong += check_local(v);
    return t;
  }

  // All variants, interleaved: round i runs iteration i of every variant, so that a load
  // that drifts (other processes on the machine) is spread over them alike.
  void measure(const std::vector<std::string>& vs) {
    const size_t nv = vs.size();
    std::vector<long> wrong(nv, 0);
    std::vector<double> tw(nv, 0.0);
    for (int i = 0; i < std::max(a.warmup, 1); ++i)
      for (size_t j = 0; j < nv; ++j) tw[j] = std::max(tw[j], once(vs[j], false, &wrong[j]));
    double round = 0;
    for (size_t j = 0; j < nv; ++j) round += max_over_pes(tw[j]);
    const int iters = std::min(a.iters, std::max(a.min_iters, int(a.budget_s * double(nv) / std::max(round, 1e-9))));
    std::vector<double> t(size_t(iters) * nv), pre(t.size());
    for (int i = 0; i < iters; ++i)
      for (size_t j = 0; j < nv; ++j) {
        t[size_t(i) * nv + j] = once(vs[j], a.check_all, &wrong[j]);
        pre[size_t(i) * nv + j] = double(last_preempted);
      }
    for (size_t j = 0; j < nv; ++j) {
      for (int i = 0; i < iters; ++i) tloc[size_t(i)] = pre[size_t(i) * nv + j];
      world.reduce(symmem::op::max, tmax.subspan(0, size_t(iters)), tloc.subspan(0, size_t(iters)));
      double preempted = 0;
      for (int i = 0; i < iters; ++i) preempted += tmax[size_t(i)] > 0 ? 1.0 / iters : 0.0;
      for (int i = 0; i < iters; ++i) tloc[size_t(i)] = t[size_t(i) * nv + j];
      world.reduce(symmem::op::max, tmax.subspan(0, size_t(iters)), tloc.subspan(0, size_t(iters)));
      std::vector<double> times(tmax.begin(), tmax.begin() + iters);
      const bool check = checkable(vs[j]);
      if (check && !a.check_all) once(vs[j], true, &wrong[j]);
      long w = sum_over_pes(wrong[j]);
      if (me == 0) gemm::print_row("symmem", a, s, P, vs[j], iters, gemm::stats(times), preempted, check, w);
      total_wrong += w;
    }
  }
  long total_wrong = 0;
  long last_preempted = 0;
};

int cpu_of_this_thread() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set)) return -1;
  if (CPU_COUNT(&set) != 1) return -CPU_COUNT(&set);  // not pinned: minus the CPU count
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) return c;
  return -1;
}

int run_main(int argc, char** argv) {
  const std::vector<std::string> known = {"mono", "tiled", "comm", "bulk", "push", "pull", "store"};
  openblas_set_num_threads(1);
  symmem::Runtime rt;
  const int me = rt.my_pe(), P = rt.n_pes();
  Args a;
  Shape s;
  auto err = gemm::parse_args(argc, argv, known, &a);
  if (!err) err = gemm::make_shape(a, P, &s);
  if (!err)
    for (int q = 0; q < P; ++q)
      if (!rt.pe_accessible(q)) err = "PE " + std::to_string(q) + " does not share memory with PE " + std::to_string(me) +
                                      ": this example runs on one node";
  if (err) {
    if (me == 0) std::fprintf(stderr, "gemm_overlap: %s\n", err->c_str());
    return 2;
  }
  Bench b(rt, a, s);
  try {
    b.setup();
  } catch (const symmem::Error& e) {  // every PE fails the same allocation; say it before finalize
    if (me == 0) std::fprintf(stderr, "gemm_overlap: %s (SHMEM_SYMMETRIC_SIZE sets the heap per PE)\n", e.what());
    return 3;
  }
  // Where each PE runs: the CPU it is pinned to (symmem pins by default, SYMMEM_BIND).
  auto cpus = rt.alloc<int>(size_t(P));
  auto mine = rt.alloc<int>(1);
  mine[0] = cpu_of_this_thread();
  b.world.fcollect(cpus, mine);
  if (me == 0) {
    std::printf("# openblas %s core=%s threads=%d\n", openblas_get_config(), openblas_get_corename(),
                openblas_get_num_threads());
    std::printf("# pinned cpus:");
    for (int q = 0; q < P; ++q) std::printf(" pe%d=%d", q, cpus[size_t(q)]);
    std::printf("\n");
    if (a.header) gemm::print_header();
  }
  b.measure(a.variants);
  rt.barrier_all();
  return b.total_wrong ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const symmem::Error& e) {  // init failed: every PE says why (the launcher may stop the others first)
    std::fprintf(stderr, "gemm_overlap: %s\n", e.what());
    return 3;
  }
}
