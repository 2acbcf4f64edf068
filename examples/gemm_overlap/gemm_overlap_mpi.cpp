// gemm_overlap_mpi — the outside baseline of gemm_overlap: the same operators, shapes,
// inputs, timing and checks, with Open MPI's collectives around one cblas_sgemm.
//
//   OPENBLAS_NUM_THREADS=1 mpirun -n 2 --bind-to core build/examples/gemm_overlap/gemm_overlap_mpi
//       --op ag|rs|ar [--variant mono,comm,bulk] [--m --n --k --tile --iters ...]
//
//   mono  the PE's GEMM alone;  comm  the collective alone (MPI_Allgather of the X shards,
//   MPI_Reduce_scatter_block or MPI_Allreduce of the partial products);  bulk  both, the
//   collective before (ag) or after (rs, ar) the GEMM. Rows are printed with impl "mpi".
#include <mpi.h>

#include "gemm_common.hpp"

namespace {

using gemm::Op;

int run(int argc, char** argv) {
  int me = 0, P = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  openblas_set_num_threads(1);
  const std::vector<std::string> known = {"mono", "comm", "bulk"};
  gemm::Args a;
  gemm::Shape s;
  auto err = gemm::parse_args(argc, argv, known, &a);
  if (!err && a.skew_us) err = "--skew-us is not supported by the MPI baseline";
  if (!err && a.op == Op::kPipe) err = "--op pipe has no MPI baseline here (it is a point-to-point hand-over)";
  if (!err) err = gemm::make_shape(a, P, &s);
  if (err) {
    if (me == 0) std::fprintf(stderr, "gemm_overlap_mpi: %s\n", err->c_str());
    return 2;
  }
  const long m = a.m, n = a.n, k = a.k, ml = s.ml, nl = s.nl, kl = s.kl;
  std::vector<float> X, Xs, Xfull, W, Z, Y;
  if (a.op == Op::kAg) {
    Xs.resize(size_t(ml * k));
    Xfull.resize(size_t(m * k));
    W.resize(size_t(k * nl));
    Y.resize(size_t(m * nl));
    gemm::fill(Xs.data(), a.seed, gemm::kMatX, me * ml, 0, ml, k);
    gemm::fill(Xfull.data(), a.seed, gemm::kMatX, 0, 0, m, k);
    gemm::fill(W.data(), a.seed, gemm::mat_w(0), 0, me * nl, k, nl);
  } else {
    X.resize(size_t(m * kl));
    W.resize(size_t(kl * n));
    Z.resize(size_t(m * n));
    Y.resize(size_t((a.op == Op::kRs ? ml : m) * n));
    gemm::fill(X.data(), a.seed, gemm::kMatX, 0, me * kl, m, kl);
    gemm::fill(W.data(), a.seed, gemm::mat_w(0), me * kl, 0, kl, n);
  }
  const std::vector<float> ref = gemm::reference(a, s, P, me);

  auto gemm_once = [&] {
    if (a.op == Op::kAg) gemm::sgemm(Xfull.data(), k, W.data(), nl, Y.data(), nl, m, nl, k, 0);
    else gemm::sgemm(X.data(), kl, W.data(), n, Z.data(), n, m, n, kl, 0);
  };
  auto comm_once = [&] {
    if (a.op == Op::kAg)
      MPI_Allgather(Xs.data(), int(ml * k), MPI_FLOAT, Xfull.data(), int(ml * k), MPI_FLOAT, MPI_COMM_WORLD);
    else if (a.op == Op::kRs)
      MPI_Reduce_scatter_block(Z.data(), Y.data(), int(ml * n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else
      MPI_Allreduce(Z.data(), Y.data(), int(m * n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  };
  auto body = [&](const std::string& v) {
    if (v == "mono") return gemm_once();
    if (a.op == Op::kAg && v == "bulk") comm_once();
    if (a.op != Op::kAg && v == "bulk") gemm_once();
    if (a.op != Op::kAg || v == "comm") comm_once();
    if (a.op == Op::kAg && v == "bulk") gemm_once();
  };
  if (me == 0) {
    std::printf("# openblas %s core=%s threads=%d\n", openblas_get_config(), openblas_get_corename(),
                openblas_get_num_threads());
    if (a.header) gemm::print_header();
  }
  long total_wrong = 0;
  long last_preempted = 0;
  auto once = [&](const std::string& v, bool check, long* wrong) {
    if (check) {
      gemm::poison(Y.data(), Y.size());
      if (a.op == Op::kAg && v != "mono")
        for (int q = 0; q < P; ++q)
          if (q != me) gemm::poison(Xfull.data() + q * ml * k, size_t(ml * k));
      if (a.op != Op::kAg && v == "bulk") gemm::poison(Z.data(), Z.size());
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    const long c0 = gemm::preemptions();
    body(v);
    double t = MPI_Wtime() - t0;
    last_preempted = gemm::preemptions() - c0;
    if (check) {
      long first = -1, bad = 0;
      if (a.op == Op::kAg && v == "comm") {  // the all-gathered X itself
        std::vector<float> refx(Xfull.size());
        gemm::fill(refx.data(), a.seed, gemm::kMatX, 0, 0, m, k);
        bad = gemm::mismatches(Xfull.data(), refx, k, &first);
      } else {
        bad = gemm::mismatches(Y.data(), ref, a.op == Op::kAg ? nl : n, &first);
      }
      if (bad) std::fprintf(stderr, "gemm_overlap_mpi: rank %d %s: %ld elements wrong, first in row %ld\n", me, v.c_str(), bad, first);
      *wrong += bad;
    }
    return t;
  };
  // Interleaved as in gemm_overlap: round i runs iteration i of every variant.
  const auto& vs = a.variants;
  const size_t nv = vs.size();
  std::vector<long> wrong(nv, 0);
  std::vector<double> tw(nv, 0.0);
  for (int i = 0; i < std::max(a.warmup, 1); ++i)
    for (size_t j = 0; j < nv; ++j) tw[j] = std::max(tw[j], once(vs[j], false, &wrong[j]));
  MPI_Allreduce(MPI_IN_PLACE, tw.data(), int(nv), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  double round = 0;
  for (double x : tw) round += x;
  const int iters = std::min(a.iters, std::max(a.min_iters, int(a.budget_s * double(nv) / std::max(round, 1e-9))));
  std::vector<double> t(static_cast<size_t>(iters) * nv), pre(t.size());
  for (int i = 0; i < iters; ++i)
    for (size_t j = 0; j < nv; ++j) {
      t[size_t(i) * nv + j] = once(vs[j], a.check_all, &wrong[j]);
      pre[size_t(i) * nv + j] = double(last_preempted);
    }
  MPI_Allreduce(MPI_IN_PLACE, t.data(), int(t.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, pre.data(), int(pre.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  for (size_t j = 0; j < nv; ++j) {
    std::vector<double> times;
    double preempted = 0;
    for (int i = 0; i < iters; ++i) {
      times.push_back(t[size_t(i) * nv + j]);
      preempted += pre[size_t(i) * nv + j] > 0 ? 1.0 / iters : 0.0;
    }
    // mono's output is the result only for ag; rs/ar's partial product is not.
    const bool checkable = vs[j] != "mono" || a.op == Op::kAg;
    if (checkable && !a.check_all) once(vs[j], true, &wrong[j]);
    if (!checkable) wrong[j] = 0;
    MPI_Allreduce(MPI_IN_PLACE, &wrong[j], 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0) gemm::print_row("mpi", a, s, P, vs[j], iters, gemm::stats(times), preempted, checkable, wrong[j]);
    total_wrong += wrong[j];
  }
  return total_wrong ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = run(argc, argv);
  MPI_Finalize();
  return rc;
}
