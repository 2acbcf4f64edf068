// gemm_common.hpp — what gemm_overlap (symmem) and gemm_overlap_mpi (Open MPI) share:
// the command line, the shapes of each operator, the synthetic inputs, the reference, the
// statistics and the CSV row, so that both binaries measure the same thing the same way.
//
// Inputs are small integers (-2..2) from a hash of (seed, matrix, row, column), and the
// pipeline's activation is ReLU6, so every partial sum is an integer far below 2^24: float
// arithmetic is exact in any summation order and every output element must be *equal* to
// the single-PE reference, whatever the tiling or the order of accumulation.
#pragma once

#include <cblas.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace gemm {

enum class Op { kAg, kRs, kAr, kPipe };

inline const char* op_name(Op op) {
  switch (op) {
    case Op::kAg: return "ag";
    case Op::kRs: return "rs";
    case Op::kAr: return "ar";
    default: return "pipe";
  }
}

struct Args {
  Op op = Op::kRs;
  std::vector<std::string> variants;  // empty: all the binary has
  long m = 1024, n = 1024, k = 1024;  // the global GEMM: X is m x k, W is k x n
  long tile = 128;                    // rows per tile
  int iters = 20;                     // at most this many timed iterations
  int warmup = 3;
  double budget_s = 1.0;              // seconds per variant: fewer iterations (>= min_iters) when slower
  int min_iters = 5;
  bool check_all = false;             // poison and check every iteration (smoke tests)
  long skew_us = 0;                   // PE 0 starts each iteration this late (load skew)
  bool header = true;                 // print the CSV header
  uint64_t seed = 1;
};

// Parses argv; returns an error line, or nothing. `known` lists the valid variants.
inline std::optional<std::string> parse_args(int argc, char** argv, const std::vector<std::string>& known, Args* a) {
  auto num = [](const std::string& name, const char* s, long lo, long* out) -> std::optional<std::string> {
    char* end = nullptr;
    errno = 0;
    long v = std::strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo)
      return "--" + name + " '" + s + "' is not an integer >= " + std::to_string(lo);
    *out = v;
    return std::nullopt;
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--check-all") { a->check_all = true; continue; }
    if (arg == "--no-header") { a->header = false; continue; }
    if (arg.rfind("--", 0) != 0 || i + 1 >= argc) return "unknown or incomplete argument '" + arg + "' (see the top of gemm_overlap.cpp)";
    std::string name = arg.substr(2);
    const char* v = argv[++i];
    long x = 0;
    std::optional<std::string> err;
    if (name == "op") {
      std::string s = v;
      if (s == "ag") a->op = Op::kAg;
      else if (s == "rs") a->op = Op::kRs;
      else if (s == "ar") a->op = Op::kAr;
      else if (s == "pipe") a->op = Op::kPipe;
      else return "--op '" + s + "' is not one of ag, rs, ar, pipe";
    } else if (name == "variant" || name == "variants") {
      a->variants.clear();
      std::string s = v;
      size_t pos = 0;
      while (pos <= s.size()) {
        size_t c = s.find(',', pos);
        std::string one = s.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
        if (std::find(known.begin(), known.end(), one) == known.end()) {
          std::string all;
          for (auto& k : known) all += (all.empty() ? "" : ", ") + k;
          return "--variant '" + one + "' is not one of " + all;
        }
        a->variants.push_back(one);
        if (c == std::string::npos) break;
        pos = c + 1;
      }
    } else if (name == "m") { if ((err = num(name, v, 1, &x))) return err; a->m = x; }
    else if (name == "n") { if ((err = num(name, v, 1, &x))) return err; a->n = x; }
    else if (name == "k") { if ((err = num(name, v, 1, &x))) return err; a->k = x; }
    else if (name == "tile") { if ((err = num(name, v, 1, &x))) return err; a->tile = x; }
    else if (name == "iters") { if ((err = num(name, v, 1, &x))) return err; a->iters = int(x); }
    else if (name == "min-iters") { if ((err = num(name, v, 1, &x))) return err; a->min_iters = int(x); }
    else if (name == "warmup") { if ((err = num(name, v, 0, &x))) return err; a->warmup = int(x); }
    else if (name == "skew-us") { if ((err = num(name, v, 0, &x))) return err; a->skew_us = x; }
    else if (name == "seed") { if ((err = num(name, v, 0, &x))) return err; a->seed = uint64_t(x); }
    else if (name == "budget") {
      char* end = nullptr;
      double d = std::strtod(v, &end);
      if (end == v || *end || !(d > 0)) return std::string("--budget '") + v + "' is not a number of seconds > 0";
      a->budget_s = d;
    } else {
      return "unknown argument '" + arg + "' (see the top of gemm_overlap.cpp)";
    }
  }
  if (a->variants.empty()) a->variants = known;
  return std::nullopt;
}

// The per-PE shape of each operator on P PEs, and what does not divide.
//  ag:   X row-sharded (ml = m/P rows per PE), W column-sharded (nl = n/P); Y_p = X W_p, m x nl.
//  rs:   X column-sharded (kl = k/P), W row-sharded; partial Z_p = X_p W_p (m x n);
//        PE q gets rows [q ml, (q+1) ml) of sum_p Z_p.
//  ar:   as rs, every PE gets all of sum_p Z_p.
//  pipe: PE s is stage s: H_0 = act(X W_0) (W_0: k x n), H_s = act(H_{s-1} W_s) (W_s: n x n),
//        the last stage without act; PE P-1 holds Y.
struct Shape {
  long ml = 0, nl = 0, kl = 0;  // local rows / columns / inner of each PE's GEMM
  long tiles = 0;               // tiles of `tile` rows: per owner block (ag/rs/ar), or of m (pipe)
  double flops_pe = 0;          // flops of the busiest PE per operator
};

inline std::optional<std::string> make_shape(const Args& a, int P, Shape* s) {
  auto tl = std::to_string(a.tile), ps = std::to_string(P);
  if (a.op == Op::kPipe) {
    if (P < 2) return "--op pipe needs at least 2 PEs (one pipeline stage per PE), got " + ps;
    if (a.m % a.tile) return "--m " + std::to_string(a.m) + " is not a multiple of --tile " + tl;
    s->ml = a.m;
    s->nl = a.n;
    s->kl = a.k;
    s->tiles = a.m / a.tile;
    s->flops_pe = 2.0 * double(a.m) * double(a.n) * double(std::max(a.k, a.n));
    return std::nullopt;
  }
  if (a.m % (long(P) * a.tile))
    return "--m " + std::to_string(a.m) + " does not split into " + ps + " row blocks of whole tiles of --tile " + tl +
           " rows (m must be a multiple of " + std::to_string(long(P) * a.tile) + ")";
  s->ml = a.m / P;
  s->tiles = s->ml / a.tile;
  if (a.op == Op::kAg) {
    if (a.n % P) return "--n " + std::to_string(a.n) + " does not split into " + ps + " column shards (ag shards W by columns)";
    s->nl = a.n / P;
    s->kl = a.k;
    s->flops_pe = 2.0 * double(a.m) * double(s->nl) * double(a.k);
  } else {
    if (a.k % P) return "--k " + std::to_string(a.k) + " does not split into " + ps + " shards (rs/ar shard the inner dimension)";
    s->nl = a.n;
    s->kl = a.k / P;
    s->flops_pe = 2.0 * double(a.m) * double(a.n) * double(s->kl);
  }
  return std::nullopt;
}

// ---- synthetic inputs and the reference ----

inline float val(uint64_t seed, int mat, long i, long j) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull ^ (uint64_t(mat) << 56) ^ (uint64_t(i) << 28) ^ uint64_t(j);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return float(int(x % 5) - 2);
}

// Fills dst (rows x cols, leading dimension cols) with the block of matrix `mat` whose top
// left corner is (r0, c0).
inline void fill(float* dst, uint64_t seed, int mat, long r0, long c0, long rows, long cols) {
  for (long i = 0; i < rows; ++i)
    for (long j = 0; j < cols; ++j) dst[i * cols + j] = val(seed, mat, r0 + i, c0 + j);
}

inline void sgemm(const float* a, long lda, const float* b, long ldb, float* c, long ldc, long m, long n, long k,
                  float beta) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(n), int(k), 1.0f, a, int(lda), b, int(ldb), beta,
              c, int(ldc));
}

inline void relu6(float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = std::min(std::max(x[i], 0.0f), 6.0f);
}

// Matrix ids of the synthetic inputs: X, and W_s of pipeline stage s (W_0 = W elsewhere).
constexpr int kMatX = 0;
inline int mat_w(int stage) { return 1 + stage; }

// The reference output of PE `pe` computed by one PE alone from the global inputs:
// ag m x nl, rs ml x n, ar m x n, pipe (PE P-1 only; empty elsewhere) m x n.
inline std::vector<float> reference(const Args& a, const Shape& s, int P, int pe) {
  std::vector<float> ref;
  if (a.op == Op::kPipe) {
    if (pe != P - 1) return ref;
    std::vector<float> x(size_t(a.m * a.k)), h(size_t(a.m * a.n)), w;
    fill(x.data(), a.seed, kMatX, 0, 0, a.m, a.k);
    w.resize(size_t(a.k * a.n));
    fill(w.data(), a.seed, mat_w(0), 0, 0, a.k, a.n);
    sgemm(x.data(), a.k, w.data(), a.n, h.data(), a.n, a.m, a.n, a.k, 0);
    std::vector<float> nxt(h.size());
    w.resize(size_t(a.n * a.n));
    for (int st = 1; st < P; ++st) {
      relu6(h.data(), h.size());
      fill(w.data(), a.seed, mat_w(st), 0, 0, a.n, a.n);
      sgemm(h.data(), a.n, w.data(), a.n, nxt.data(), a.n, a.m, a.n, a.n, 0);
      h.swap(nxt);
    }
    return h;
  }
  long r0 = 0, rows = a.m, c0 = 0, cols = a.n;
  if (a.op == Op::kAg) { c0 = pe * s.nl; cols = s.nl; }
  if (a.op == Op::kRs) { r0 = pe * s.ml; rows = s.ml; }
  std::vector<float> x(size_t(rows * a.k)), w(size_t(a.k * cols));
  fill(x.data(), a.seed, kMatX, r0, 0, rows, a.k);
  fill(w.data(), a.seed, mat_w(0), 0, c0, a.k, cols);
  ref.resize(size_t(rows * cols));
  sgemm(x.data(), a.k, w.data(), cols, ref.data(), cols, rows, cols, a.k, 0);
  return ref;
}

// Elements of got that are not equal to ref; *first_row the first wrong row (or -1).
inline long mismatches(const float* got, const std::vector<float>& ref, long cols, long* first_row) {
  long bad = 0;
  *first_row = -1;
  for (size_t i = 0; i < ref.size(); ++i)
    if (!(got[i] == ref[i])) {
      if (!bad) *first_row = long(i) / cols;
      ++bad;
    }
  return bad;
}

inline void poison(float* p, size_t n) {
  const float nan = std::nanf("");
  for (size_t i = 0; i < n; ++i) p[i] = nan;
}

// ---- statistics and the CSV row ----

// Involuntary context switches of the calling thread so far: a timed iteration during
// which some PE's count grew was disturbed by another process.
inline long preemptions() {
  struct rusage ru {};
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_nivcsw;
}

struct Stats {
  double min = 0, med = 0, p10 = 0, p90 = 0;
};

inline Stats stats(std::vector<double> t) {
  Stats s;
  if (t.empty()) return s;
  std::sort(t.begin(), t.end());
  auto q = [&](double f) { return t[size_t(std::lround(f * double(t.size() - 1)))]; };
  s.min = t.front();
  s.med = q(0.5);
  s.p10 = q(0.1);
  s.p90 = q(0.9);
  return s;
}

inline void print_header() {
  std::printf("impl,op,what,npes,m,n,k,tile,tiles,iters,min_ms,med_ms,p10_ms,p90_ms,gflops_pe,preempted,check,wrong\n");
}

// preempted: the share of the timed iterations in which some PE was preempted.
inline void print_row(const char* impl, const Args& a, const Shape& s, int P, const std::string& what, int iters,
                      const Stats& st, double preempted, bool checked, long wrong) {
  double gf = (what == "comm" || st.min <= 0) ? 0.0 : s.flops_pe / st.min / 1e9;  // at the best iteration
  std::printf("%s,%s,%s,%d,%ld,%ld,%ld,%ld,%ld,%d,%.4f,%.4f,%.4f,%.4f,%.2f,%.2f,%s,%ld\n", impl, op_name(a.op),
              what.c_str(), P, a.m, a.n, a.k, a.tile, s.tiles, iters, st.min * 1e3, st.med * 1e3, st.p10 * 1e3,
              st.p90 * 1e3, gf, preempted,
              checked ? (wrong ? "WRONG" : "ok") : "-", wrong);
  std::fflush(stdout);
}

}  // namespace gemm
