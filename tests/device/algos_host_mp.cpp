// The device collectives' algorithms (symmem/coll_algos.hpp) run on the host heap with
// HostExec (host_exec.hpp), under symmem-run -n N: the same code the kernels run, with
// channels of std::threads in place of CUDA blocks. Every PE runs the same tests in order.
//
// Each result is compared with a host reference computed independently here. Reductions
// are compared exactly, bit for bit, fp16/bf16 included: every algorithm reduces each
// element in team order 0..size-1 in float and rounds once, and the reference does the
// same, so any difference is a bug (the values are chosen so that float sums do round).
//
// Coverage: every algorithm; every DType x allowed RedOp; sizes 0, 1, odd (not divisible
// by the PE count or the 16-byte pack), unaligned bases, a few KiB and ~1 MiB; channels 1
// and 3 with 1 and 4 threads; the world team and the halves (even PEs and odd PEs, two
// teams running concurrently on the same channels: the pairwise epochs then differ per
// pair); chains of calls back to back on the same buffers, with and without the buffers
// being rewritten between calls (reuse races); in place where allowed.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "host_exec.hpp"
#include "mp_env.hpp"

namespace sa = symmem::algo;
using symmem::test::HostPe;
using symmem::test::run_channels;
using symmem::test::Worker;

namespace {

constexpr size_t kCap = 24 << 20;  // bytes per buffer (~1 MiB per pair of alltoall at 8 PEs, and more)

struct Env {
  HostPe pe;
  char* src;
  char* dest;
};

Env& env() {  // first use is collective: every PE runs the same tests
  static Env* e = [] {
    auto& rt = mp::rt();
    auto* sync = static_cast<char*>(rt.calloc(sa::SyncLayout::kBytes, 1));
    auto* src = static_cast<char*>(rt.malloc(kCap));
    auto* dest = static_cast<char*>(rt.malloc(kCap));
    if (!sync || !src || !dest) std::abort();
    return new Env{HostPe(rt, sync), src, dest};
  }();
  return *e;
}

enum class Mode { kWorld, kHalves };
const char* name(Mode m) { return m == Mode::kWorld ? "world" : "halves"; }

// World, or this PE's half: the even PEs, or the odd ones (both run at once).
sa::Team team_for(Mode m) {
  const int me = mp::rt().my_pe(), n = mp::rt().n_pes();
  if (m == Mode::kWorld) return sa::Team{0, 1, n, me};
  const int start = me % 2;
  return sa::Team{start, 2, (n - start + 1) / 2, me / 2};
}

uint64_t mix(uint64_t seed, int pe, size_t i) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + (uint64_t(pe) << 40) + i + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Element i of world PE pe's source: values whose float sums round.
template <class T>
T gen(uint64_t seed, int pe, size_t i) {
  const uint64_t h = mix(seed, pe, i);
  if constexpr (std::is_same_v<T, float>) {
    return float(int64_t(h % 2000001) - 1000000) * 0.001234f;
  } else if constexpr (std::is_same_v<T, sa::f16>) {
    return sa::float_to_f16(float(int64_t(h % 2001) - 1000) / 37.f);
  } else if constexpr (std::is_same_v<T, sa::bf16>) {
    return sa::float_to_bf16(float(int64_t(h % 200001) - 100000) / 37.f);
  } else {
    return T(h);
  }
}

float to_f(float v) { return v; }
float to_f(sa::f16 v) { return sa::f16_to_float(v); }
float to_f(sa::bf16 v) { return sa::bf16_to_float(v); }
template <class T>
T from_f(float v) {
  if constexpr (std::is_same_v<T, sa::f16>) return sa::float_to_f16(v);
  else if constexpr (std::is_same_v<T, sa::bf16>) return sa::float_to_bf16(v);
  else return v;
}

// The reference reduction, written apart from the library's combine(): integers in
// uint64 arithmetic truncated, floats in float, in team order.
template <class T, sa::RedOp op>
T ref_reduce(const sa::Team& t, uint64_t seed, size_t i) {
  if constexpr (std::is_integral_v<T>) {
    uint64_t acc = uint64_t(int64_t(gen<T>(seed, sa::world_pe(t, 0), i)));
    T m = gen<T>(seed, sa::world_pe(t, 0), i);
    for (int j = 1; j < t.size; ++j) {
      const T v = gen<T>(seed, sa::world_pe(t, j), i);
      acc = op == sa::RedOp::kSum ? acc + uint64_t(int64_t(v)) : acc * uint64_t(int64_t(v));
      m = op == sa::RedOp::kMin ? std::min(m, v) : std::max(m, v);
    }
    return op == sa::RedOp::kMin || op == sa::RedOp::kMax ? m : T(acc);
  } else {
    float acc = to_f(gen<T>(seed, sa::world_pe(t, 0), i));
    for (int j = 1; j < t.size; ++j) {
      const float v = to_f(gen<T>(seed, sa::world_pe(t, j), i));
      acc = op == sa::RedOp::kSum ? acc + v : op == sa::RedOp::kMin ? std::min(acc, v) : std::max(acc, v);
    }
    return from_f<T>(acc);
  }
}

template <class T>
std::string show(T v) {
  if constexpr (std::is_integral_v<T>) return std::to_string(v);
  else return std::to_string(to_f(v));
}

enum class Algo { kReduceScatter, kOneShot, kTwoShot, kAuto, kTwoShotInPlace, kAutoInPlace };
const char* name(Algo a) {
  switch (a) {
    case Algo::kReduceScatter: return "reduce_scatter";
    case Algo::kOneShot: return "allreduce_one_shot";
    case Algo::kTwoShot: return "allreduce_two_shot";
    case Algo::kAuto: return "allreduce";
    case Algo::kTwoShotInPlace: return "allreduce_two_shot(in place)";
    case Algo::kAutoInPlace: return "allreduce(in place)";
  }
  return "?";
}
bool in_place(Algo a) { return a == Algo::kTwoShotInPlace || a == Algo::kAutoInPlace; }

template <class T, sa::RedOp op>
void call(Algo a, symmem::test::HostExec& x, const sa::Team& t, int ch, int nch, T* d, const T* s, size_t n) {
  switch (a) {
    case Algo::kReduceScatter: sa::reduce_scatter<T, op>(x, t, ch, nch, d, s, n); break;
    case Algo::kOneShot: sa::allreduce_one_shot<T, op>(x, t, ch, nch, d, s, n); break;
    case Algo::kTwoShot:
    case Algo::kTwoShotInPlace: sa::allreduce_two_shot<T, op>(x, t, ch, nch, d, s, n); break;
    case Algo::kAuto:
    case Algo::kAutoInPlace: sa::allreduce<T, op>(x, t, ch, nch, d, s, n); break;
  }
}

struct Config {
  int nch;
  unsigned nth;
};

// One group of reductions, run back to back by the same channel threads, each on its own
// region of the buffers; then each checked against the reference.
template <class T, sa::RedOp op>
void reductions(Mode mode, Config cfg, const std::vector<Algo>& algos, const std::vector<size_t>& sizes,
                uint64_t seed) {
  Env& e = env();
  const sa::Team t = team_for(mode);
  struct Case {
    Algo a;
    size_t n, misalign;
    T *src, *dest;
    uint64_t seed;
  };
  std::vector<Case> cases;
  size_t off = 0;
  auto add = [&](Algo a, size_t n, size_t mis) {
    const size_t in = a == Algo::kReduceScatter ? n * size_t(t.size) : n;
    Case c{a, n, mis, reinterpret_cast<T*>(e.src + off + mis), reinterpret_cast<T*>(e.dest + off + mis),
           seed + cases.size()};
    off += (in * sizeof(T) + mis + 255) / 256 * 256;
    if (off > kCap) {
      std::fprintf(stderr, "algos_host_mp: the cases need more than kCap bytes\n");
      std::abort();
    }
    T* fill = in_place(a) ? c.dest : c.src;
    for (size_t k = 0; k < in; ++k) fill[k] = gen<T>(c.seed, mp::rt().my_pe(), k);
    if (!in_place(a)) std::memset(static_cast<void*>(c.dest), 0xa5, n * sizeof(T));
    cases.push_back(c);
  };
  for (Algo a : algos) {
    for (size_t n : sizes) add(a, n, 0);
    if (sizeof(T) < 16) add(a, sizes.back(), sizeof(T));  // a base that is not 16-aligned
  }
  // No host barrier here: the algorithms' entry sync alone must order the sources.
  run_channels(e.pe, cfg.nch, cfg.nth, [&](Worker& w) {
    for (auto& c : cases) call<T, op>(c.a, w.x, t, w.ch, w.nch, c.dest, in_place(c.a) ? c.dest : c.src, c.n);
  });
  for (auto& c : cases) {
    int bad = 0;
    for (size_t k = 0; k < c.n; ++k) {
      const size_t idx = c.a == Algo::kReduceScatter ? size_t(t.me) * c.n + k : k;
      const T want = ref_reduce<T, op>(t, c.seed, idx);
      if (std::memcmp(&want, &c.dest[k], sizeof(T)) != 0 && bad++ < 3)
        ADD_FAILURE() << name(c.a) << " op " << int(op) << " n " << c.n << " misaligned by " << c.misalign
                      << " team " << name(mode) << " channels " << cfg.nch << "x" << cfg.nth << ": element " << k
                      << " is " << show(c.dest[k]) << ", want " << show(want);
    }
    if (bad > 3) ADD_FAILURE() << "... " << bad << " wrong elements in all";
  }
}

const std::vector<Algo> kAllReductions = {Algo::kReduceScatter, Algo::kOneShot,        Algo::kTwoShot,
                                          Algo::kAuto,          Algo::kTwoShotInPlace, Algo::kAutoInPlace};
const std::vector<size_t> kSmallSizes = {0, 1, 13, 1003};

template <sa::DType D, sa::RedOp op>
void matrix_one() {
  using T = sa::elem_t<D>;
  if constexpr (sa::kOpAllowed<T, op>) {
    for (Mode m : {Mode::kWorld, Mode::kHalves})
      for (Config cfg : {Config{1, 1}, Config{3, 4}})
        reductions<T, op>(m, cfg, kAllReductions, kSmallSizes, uint64_t(D) * 100 + uint64_t(op) * 10 + cfg.nch);
  }
}
template <sa::DType D>
void matrix_ops() {
  matrix_one<D, sa::RedOp::kSum>();
  matrix_one<D, sa::RedOp::kProd>();
  matrix_one<D, sa::RedOp::kMin>();
  matrix_one<D, sa::RedOp::kMax>();
}

TEST(AlgosHost, ReduceF32) { matrix_ops<sa::DType::kF32>(); }
TEST(AlgosHost, ReduceF16) { matrix_ops<sa::DType::kF16>(); }
TEST(AlgosHost, ReduceBF16) { matrix_ops<sa::DType::kBF16>(); }
TEST(AlgosHost, ReduceI32) { matrix_ops<sa::DType::kI32>(); }
TEST(AlgosHost, ReduceI64) { matrix_ops<sa::DType::kI64>(); }

// A few KiB and ~1 MiB (odd element counts), channels 3 x 4 and 1 x 1.
TEST(AlgosHost, ReduceLarge) {
  const std::vector<Algo> allreduces = {Algo::kOneShot, Algo::kTwoShot, Algo::kAuto, Algo::kAutoInPlace};
  reductions<float, sa::RedOp::kSum>(Mode::kWorld, {3, 4}, allreduces, {1021, 262147}, 7);
  reductions<float, sa::RedOp::kSum>(Mode::kWorld, {3, 4}, {Algo::kReduceScatter}, {1021, 32771}, 8);
  reductions<sa::bf16, sa::RedOp::kMax>(Mode::kHalves, {3, 4}, {Algo::kOneShot, Algo::kTwoShot, Algo::kReduceScatter},
                                        {2053, 131101}, 9);
  reductions<int64_t, sa::RedOp::kSum>(Mode::kWorld, {1, 1}, {Algo::kAuto, Algo::kReduceScatter}, {513, 16411}, 10);
  reductions<int64_t, sa::RedOp::kSum>(Mode::kWorld, {1, 1}, {Algo::kAuto}, {131101}, 11);  // two-shot by size
  reductions<sa::f16, sa::RedOp::kSum>(Mode::kWorld, {3, 1}, {Algo::kAuto, Algo::kAutoInPlace}, {524309}, 12);
}

// ---- barrier ----

// Each thread of each channel writes its own word for round r, then the barrier; after it
// every thread checks every peer's words of that round from every thread of its channel.
TEST(AlgosHost, Barrier) {
  Env& e = env();
  constexpr int kRounds = 20;
  for (Mode m : {Mode::kWorld, Mode::kHalves})
    for (Config cfg : {Config{1, 1}, Config{3, 4}}) {
      const sa::Team t = team_for(m);
      auto* words = reinterpret_cast<uint64_t*>(e.src);  // [round][ch][thread]
      std::memset(words, 0, sizeof(uint64_t) * kRounds * 3 * 4);
      std::atomic<int> bad{0};
      run_channels(e.pe, cfg.nch, cfg.nth, [&](Worker& w) {
        for (int r = 0; r < kRounds; ++r) {
          const size_t slot = (size_t(r) * 3 + size_t(w.ch)) * 4;
          words[slot + w.x.tid()] = uint64_t(r + 1) << 32 | uint64_t(mp::rt().my_pe());
          if (r % 2) sa::barrier(w.x, t, w.ch);
          else sa::sync(w.x, t, w.ch);
          for (int j = 0; j < t.size; ++j)
            for (unsigned k = 0; k < cfg.nth; ++k) {
              const int q = sa::world_pe(t, j);
              const uint64_t v = *w.x.peer(&words[slot + k], q);
              if (v != (uint64_t(r + 1) << 32 | uint64_t(q))) bad++;
            }
        }
      });
      mp::rt().barrier_all();  // peers read this PE's words after the last barrier
      EXPECT_EQ(bad.load(), 0) << "team " << name(m) << " channels " << cfg.nch << "x" << cfg.nth
                               << ": words written before the barrier not seen after it";
    }
}

// ---- broadcast, fcollect, alltoall ----

enum class Bytes { kBroadcast0, kBroadcastLast, kBroadcastInPlace, kFcollect, kAlltoall };
const char* name(Bytes b) {
  switch (b) {
    case Bytes::kBroadcast0: return "broadcast(root 0)";
    case Bytes::kBroadcastLast: return "broadcast(root size-1)";
    case Bytes::kBroadcastInPlace: return "broadcast(in place, root size/2)";
    case Bytes::kFcollect: return "fcollect";
    case Bytes::kAlltoall: return "alltoall";
  }
  return "?";
}

uint8_t byte_of(uint64_t seed, int pe, size_t i) { return uint8_t(mix(seed, pe, i) >> 17); }

void byte_collectives(Mode mode, Config cfg, const std::vector<size_t>& sizes, uint64_t seed) {
  Env& e = env();
  const sa::Team t = team_for(mode);
  const int me = mp::rt().my_pe();
  struct Case {
    Bytes b;
    size_t nb;
    char *src, *dest;
    int root;
    uint64_t seed;
  };
  std::vector<Case> cases;
  size_t soff = 0, doff = 0;
  for (Bytes b : {Bytes::kBroadcast0, Bytes::kBroadcastLast, Bytes::kBroadcastInPlace, Bytes::kFcollect,
                  Bytes::kAlltoall})
    for (size_t nb : sizes) {
      const size_t sb = b == Bytes::kAlltoall ? nb * size_t(t.size) : nb;
      const size_t db = b == Bytes::kAlltoall || b == Bytes::kFcollect ? nb * size_t(t.size) : nb;
      const int root = b == Bytes::kBroadcast0 ? 0 : b == Bytes::kBroadcastLast ? t.size - 1 : t.size / 2;
      Case c{b, nb, e.src + soff, e.dest + doff, root, seed + cases.size()};
      if (b == Bytes::kBroadcastInPlace) c.src = c.dest;
      soff += (sb + 255) / 256 * 256 + 16 * (cases.size() % 3);  // bases 0, 16, 32 mod 256
      doff += (db + 255) / 256 * 256 + 8 * (cases.size() % 2);   // and 8-byte misaligned ones
      if (soff > kCap || doff > kCap) {
        std::fprintf(stderr, "algos_host_mp: the cases need more than kCap bytes\n");
        std::abort();
      }
      for (size_t k = 0; k < sb; ++k) c.src[k] = char(byte_of(c.seed, me, k));
      if (c.src != c.dest) std::memset(c.dest, 0x5a, db);
      cases.push_back(c);
    }
  run_channels(e.pe, cfg.nch, cfg.nth, [&](Worker& w) {
    for (auto& c : cases) {
      switch (c.b) {
        case Bytes::kBroadcast0:
        case Bytes::kBroadcastLast:
        case Bytes::kBroadcastInPlace: sa::broadcast(w.x, t, w.ch, w.nch, c.dest, c.src, c.nb, c.root); break;
        case Bytes::kFcollect: sa::fcollect(w.x, t, w.ch, w.nch, c.dest, c.src, c.nb); break;
        case Bytes::kAlltoall: sa::alltoall(w.x, t, w.ch, w.nch, c.dest, c.src, c.nb); break;
      }
    }
  });
  for (auto& c : cases) {
    int bad = 0;
    const size_t db = c.b == Bytes::kAlltoall || c.b == Bytes::kFcollect ? c.nb * size_t(t.size) : c.nb;
    for (size_t k = 0; k < db; ++k) {
      uint8_t want;
      const size_t j = k / (c.nb ? c.nb : 1), b = k % (c.nb ? c.nb : 1);
      if (c.b == Bytes::kFcollect) want = byte_of(c.seed, sa::world_pe(t, int(j)), b);
      else if (c.b == Bytes::kAlltoall) want = byte_of(c.seed, sa::world_pe(t, int(j)), size_t(t.me) * c.nb + b);
      else want = byte_of(c.seed, sa::world_pe(t, c.root), k);
      if (uint8_t(c.dest[k]) != want && bad++ < 3)
        ADD_FAILURE() << name(c.b) << " " << c.nb << " bytes, team " << name(mode) << " channels " << cfg.nch << "x"
                      << cfg.nth << ": byte " << k << " is " << int(uint8_t(c.dest[k])) << ", want " << int(want);
    }
    if (bad > 3) ADD_FAILURE() << "... " << bad << " wrong bytes in all";
  }
}

TEST(AlgosHost, Bytes) {
  for (Mode m : {Mode::kWorld, Mode::kHalves})
    for (Config cfg : {Config{1, 1}, Config{1, 4}, Config{3, 1}, Config{3, 4}})
      byte_collectives(m, cfg, {0, 1, 13, 1003, 4099}, 1000 + uint64_t(cfg.nch) * 10 + cfg.nth);
}
TEST(AlgosHost, BytesLarge) { byte_collectives(Mode::kWorld, {3, 4}, {(1 << 20) + 24}, 2000); }

// ---- chains: calls back to back on the same buffers ----

// Steps of a chain; the state of every member is simulated here. Odd rounds rewrite each
// result after a PE-wide barrier of the channel threads (a kernel boundary) and scribble on
// the dead source (a peer still reading it would see that); calls of the same kind run back
// to back, calls of different kinds (which split the buffers differently) with a kernel
// boundary between them, as coll_algos.hpp requires.
enum class Step { kOneShot, kTwoShot, kTwoShotInPlace, kAuto, kAlltoall, kFcollect, kBroadcast, kBroadcastInPlace };

void chain(Mode mode, Config cfg, const std::vector<Step>& steps, int rounds, uint64_t seed) {
  Env& e = env();
  const sa::Team t = team_for(mode);
  const size_t m = 2053, n = m * size_t(t.size);  // int64 elements; alltoall blocks of m
  auto* a = reinterpret_cast<int64_t*>(e.src);
  auto* b = reinterpret_cast<int64_t*>(e.dest);
  std::vector<std::vector<int64_t>> st(size_t(t.size), std::vector<int64_t>(n));
  for (int j = 0; j < t.size; ++j)
    for (size_t k = 0; k < n; ++k) st[size_t(j)][k] = gen<int64_t>(seed, sa::world_pe(t, j), k);
  std::memcpy(a, st[size_t(t.me)].data(), n * 8);
  bool final_in_a = true;
  // Simulate: which buffer holds the state after each round, and the state itself.
  std::vector<bool> in_a(static_cast<size_t>(rounds));
  for (int r = 0; r < rounds; ++r) {
    const Step s = steps[size_t(r) % steps.size()];
    const bool ip = s == Step::kTwoShotInPlace || s == Step::kBroadcastInPlace;
    auto next = st;
    if (s == Step::kAlltoall) {
      for (int i = 0; i < t.size; ++i)
        for (int j = 0; j < t.size; ++j)
          for (size_t k = 0; k < m; ++k) next[size_t(i)][size_t(j) * m + k] = st[size_t(j)][size_t(i) * m + k];
    } else if (s == Step::kFcollect) {  // the first m elements of each member
      for (int i = 0; i < t.size; ++i)
        for (int j = 0; j < t.size; ++j)
          for (size_t k = 0; k < m; ++k) next[size_t(i)][size_t(j) * m + k] = st[size_t(j)][k];
    } else if (s == Step::kBroadcast || s == Step::kBroadcastInPlace) {
      for (int i = 0; i < t.size; ++i) next[size_t(i)] = st[size_t(r % t.size)];
    } else {
      for (size_t k = 0; k < n; ++k) {
        uint64_t sum = 0;
        for (int j = 0; j < t.size; ++j) sum += uint64_t(st[size_t(j)][k]);
        for (int i = 0; i < t.size; ++i) next[size_t(i)][k] = int64_t(sum);
      }
    }
    if (r % 2)  // odd rounds: every PE rewrites its result after the call (a user reusing it)
      for (int i = 0; i < t.size; ++i)
        for (size_t k = 0; k < n; ++k) next[size_t(i)][k] += int64_t(k) * (sa::world_pe(t, i) + 1) + r;
    st = std::move(next);
    if (!ip) final_in_a = !final_in_a;
    in_a[size_t(r)] = final_in_a;
  }
  run_channels(e.pe, cfg.nch, cfg.nth, [&](Worker& w) {
    bool cur_a = true;
    for (int r = 0; r < rounds; ++r) {
      const Step s = steps[size_t(r) % steps.size()];
      int64_t* src = cur_a ? a : b;
      int64_t* dst = cur_a ? b : a;
      switch (s) {
        case Step::kOneShot: sa::allreduce_one_shot<int64_t, sa::RedOp::kSum>(w.x, t, w.ch, w.nch, dst, src, n); break;
        case Step::kTwoShot: sa::allreduce_two_shot<int64_t, sa::RedOp::kSum>(w.x, t, w.ch, w.nch, dst, src, n); break;
        case Step::kTwoShotInPlace:
          dst = src;
          sa::allreduce_two_shot<int64_t, sa::RedOp::kSum>(w.x, t, w.ch, w.nch, dst, src, n);
          break;
        case Step::kAuto: sa::allreduce<int64_t, sa::RedOp::kSum>(w.x, t, w.ch, w.nch, dst, src, n); break;
        case Step::kAlltoall: sa::alltoall(w.x, t, w.ch, w.nch, dst, src, m * 8); break;
        case Step::kFcollect: sa::fcollect(w.x, t, w.ch, w.nch, dst, src, m * 8); break;
        case Step::kBroadcast: sa::broadcast(w.x, t, w.ch, w.nch, dst, src, n * 8, r % t.size); break;
        case Step::kBroadcastInPlace:
          dst = src;
          sa::broadcast(w.x, t, w.ch, w.nch, dst, src, n * 8, r % t.size);
          break;
      }
      if (r % 2) {  // a kernel boundary, then the rewrite, then the next kernel
        w.all.arrive_and_wait();
        for (size_t k = w.gtid; k < n; k += w.gthreads) {
          dst[k] += int64_t(k) * (mp::rt().my_pe() + 1) + r;
          if (src != dst) src[k] = -1;  // dead now; a peer still reading it would see this
        }
        w.all.arrive_and_wait();
      } else if (steps[size_t(r + 1) % steps.size()] != s) {
        w.all.arrive_and_wait();  // the next call splits the buffers differently: a kernel boundary
      }
      cur_a = dst == a;
    }
  });
  const int64_t* got = in_a[size_t(rounds - 1)] ? a : b;
  int bad = 0;
  for (size_t k = 0; k < n; ++k)
    if (got[k] != st[size_t(t.me)][k] && bad++ < 3)
      ADD_FAILURE() << "chain team " << name(mode) << " channels " << cfg.nch << "x" << cfg.nth << ": element " << k
                    << " is " << got[k] << ", want " << st[size_t(t.me)][k];
  EXPECT_EQ(bad, 0);
}

TEST(AlgosHost, Chains) {
  const std::vector<std::vector<Step>> chains = {
      {Step::kOneShot},
      {Step::kTwoShot},
      {Step::kTwoShotInPlace},
      {Step::kAlltoall},
      {Step::kFcollect},
      {Step::kBroadcast},
      {Step::kBroadcastInPlace},
      {Step::kOneShot, Step::kAlltoall, Step::kTwoShotInPlace, Step::kBroadcast, Step::kFcollect, Step::kAuto,
       Step::kTwoShot, Step::kBroadcastInPlace}};
  uint64_t seed = 5000;
  for (Mode m : {Mode::kWorld, Mode::kHalves})
    for (Config cfg : {Config{1, 1}, Config{3, 4}})
      for (auto& c : chains) chain(m, cfg, c, 12, seed++);
}

}  // namespace
