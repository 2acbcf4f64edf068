// Collectives over the OpenSHMEM C API, checked element by element against a sequential
// reference: every reduction op x type of the spec's tables, scans, broadcast, collect,
// fcollect, alltoall(s), on the world and on strided / reversed / partial / one-PE teams,
// for 0, 1, odd and large sizes (both the staged and the direct algorithms), in place
// where the spec allows; plus the active-set (pSync) forms and back-to-back calls.
#include <gtest/gtest.h>
#include <shmem.h>
#include <shmemx.h>

#include <algorithm>
#include <cstring>
#include <unistd.h>
#include <string>
#include <type_traits>
#include <vector>

namespace {

int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }

// The teams every test runs on (collective to create and to free).
struct Teams {
  std::vector<shmem_team_t> all;  // on each PE, the handles it holds (INVALID if not a member)
  std::vector<std::string> names;
  std::vector<shmem_team_t> owned;
  Teams() {
    const int n = npes();
    add("world", SHMEM_TEAM_WORLD, false);
    split("evens", 0, 2, (n + 1) / 2);
    if (n >= 2) split("odds", 1, 2, n / 2);
    if (n >= 2) split("reversed", n - 1, -1, n);
    if (n >= 3) split("all-but-0", 1, 1, n - 1);
    split("last-alone", n - 1, 0, 1);
  }
  ~Teams() {
    for (auto t : owned) shmem_team_destroy(t);
    shmem_barrier_all();
  }
  void add(const char* name, shmem_team_t t, bool own) {
    all.push_back(t);
    names.push_back(name);
    if (own) owned.push_back(t);
  }
  void split(const char* name, int start, int stride, int size) {
    shmem_team_t t = SHMEM_TEAM_INVALID;
    EXPECT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, start, stride, size, nullptr, 0, &t), 0) << name;
    add(name, t, true);
  }
};

template <class T>
constexpr bool kComplex = std::is_same_v<T, double _Complex> || std::is_same_v<T, float _Complex>;

// Operand of team PE `pe` at element j (small values: sums and products cannot overflow
// any type at 8 PEs; fractions make float sums depend on the order of operands).
template <class T>
T value(int op, int pe, size_t j) {
  long k = long(pe) * 131 + long(j) * 7 + op * 13;
  if constexpr (kComplex<T>) {
    T v;
    __real__ v = double(k % 97) / 7.0;
    __imag__ v = double((k / 3) % 89) / 9.0;
    if (op == 6) {  // prod: magnitudes near 1
      __real__ v = 1.0 + double(k % 5) / 16.0;
      __imag__ v = double(k % 3) / 8.0;
    }
    return v;
  } else if constexpr (std::is_floating_point_v<T>) {
    if (op == 6) return T(1) + T(k % 5) / T(8);
    return T(k % 1000) / T(7) - T(50);
  } else {
    switch (op) {
      case 0: return T(~(T(1) << (k % 7)));              // and
      case 1: return T(T(1) << (k % 7));                 // or
      case 2: return T(k * 37 % 128);                    // xor
      case 6: return T(k % 4 == 0 ? 2 : 1);              // prod: at most 2^2 at 8 PEs
      default: return T(std::is_signed_v<T> ? k % 23 - 11 : k % 23);  // max, min, sum
    }
  }
}

template <class T>
T combine(int op, T a, T b) {
  if constexpr (kComplex<T>) {
    return op == 5 ? T(a + b) : T(a * b);
  } else if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case 3: return b > a ? b : a;
      case 4: return b < a ? b : a;
      case 5: return a + b;
      default: return a * b;
    }
  } else {
    switch (op) {
      case 0: return T(a & b);
      case 1: return T(a | b);
      case 2: return T(a ^ b);
      case 3: return b > a ? b : a;
      case 4: return b < a ? b : a;
      case 5: return T(a + b);
      default: return T(a * b);
    }
  }
}

// Sizes in elements: empty, one, odd, just under and over the staging threshold, large.
template <class T>
std::vector<size_t> sizes() {
  const size_t stage = 8192 / sizeof(T);
  return {0, 1, 7, 100, stage, stage + 1, 3 * stage + 5};
}

// The types checked on every team at every size; the others (same code, other widths)
// on the world and one strided team at a sample of sizes, to keep the suite fast.
bool representative(const char* type_name) {
  for (const char* r : {"int", "double", "longdouble", "complexd", "uchar", "int16", "float"})
    if (std::strcmp(r, type_name) == 0) return true;
  return false;
}

struct Case {
  size_t n;
  bool in_place;
};
// Every size, each out of place and in place, for representative types; a sample else.
template <class T>
std::vector<Case> cases(bool full) {
  std::vector<Case> v;
  if (full) {
    for (size_t n : sizes<T>())
      for (bool ip : {false, true}) v.push_back({n, ip});
  } else {
    const size_t stage = 8192 / sizeof(T);
    v = {{0, false}, {1, true}, {7, false}, {stage + 1, true}, {3 * stage + 5, false}};
  }
  return v;
}

template <class T>
bool same(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, long double>) return a == b || (a != a && b != b);
  else return std::memcmp(&a, &b, sizeof(T)) == 0;  // bit-identical (floats too)
}

// Runs reduction `op` (0 and .. 6 prod) of type T through `fn` on every team and size,
// out of place and in place, and checks every element against the reference.
template <class T, class Fn>
void check_reduce(const Teams& teams, const char* type_name, const char* name, int op, Fn fn) {
  const bool full = representative(type_name);
  const size_t max = sizes<T>().back();
  T* src = static_cast<T*>(shmem_malloc(max * sizeof(T)));
  T* dst = static_cast<T*>(shmem_malloc(max * sizeof(T)));
  std::vector<T> ref(max);
  for (size_t ti = 0; ti < (full ? teams.all.size() : 2); ++ti) {
    shmem_team_t t = teams.all[ti];
    for (Case c : cases<T>(full)) {
      const size_t n = c.n;
      const bool in_place = c.in_place;
      {
        if (t != SHMEM_TEAM_INVALID) {
          const int tn = shmem_team_n_pes(t), tme = shmem_team_my_pe(t);
          for (size_t j = 0; j < n; ++j) src[j] = value<T>(op, tme, j);
          for (size_t j = 0; j < n; ++j) {
            T acc = value<T>(op, 0, j);
            for (int p = 1; p < tn; ++p) acc = combine<T>(op, acc, value<T>(op, p, j));
            ref[j] = acc;
          }
          T* out = in_place ? src : dst;
          EXPECT_EQ(fn(t, out, src, n), 0);
          size_t bad = 0, first = 0;
          for (size_t j = 0; j < n; ++j)
            if (!same(out[j], ref[j]) && bad++ == 0) first = j;
          EXPECT_EQ(bad, 0u) << name << " on team " << teams.names[ti] << ", " << n << " elements"
                             << (in_place ? " in place" : "") << ": first wrong element " << first;
        }
        shmem_barrier_all();
      }
    }
  }
  shmem_free(dst);
  shmem_free(src);
}

#define RUN_REDUCE(T, N, OP) \
  check_reduce<T>(teams, #N, "shmem_" #N "_" #OP "_reduce", op, shmem_##N##_##OP##_reduce);

TEST(Reduce, And) {
  Teams teams;
  int op = 0;
  SHMEM_REDUCE_BITWISE_TYPES(RUN_REDUCE, and)
}
TEST(Reduce, Or) {
  Teams teams;
  int op = 1;
  SHMEM_REDUCE_BITWISE_TYPES(RUN_REDUCE, or)
}
TEST(Reduce, Xor) {
  Teams teams;
  int op = 2;
  SHMEM_REDUCE_BITWISE_TYPES(RUN_REDUCE, xor)
}
TEST(Reduce, Max) {
  Teams teams;
  int op = 3;
  SHMEM_REDUCE_MINMAX_TYPES(RUN_REDUCE, max)
}
TEST(Reduce, Min) {
  Teams teams;
  int op = 4;
  SHMEM_REDUCE_MINMAX_TYPES(RUN_REDUCE, min)
}
TEST(Reduce, Sum) {
  Teams teams;
  int op = 5;
  SHMEM_REDUCE_ARITH_TYPES(RUN_REDUCE, sum)
}
TEST(Reduce, Prod) {
  Teams teams;
  int op = 6;
  SHMEM_REDUCE_ARITH_TYPES(RUN_REDUCE, prod)
}

// C++ generic overloads reach the same functions.
TEST(Reduce, GenericNames) {
  double* s = static_cast<double*>(shmem_malloc(4 * sizeof(double)));
  double* d = static_cast<double*>(shmem_malloc(4 * sizeof(double)));
  for (int j = 0; j < 4; ++j) s[j] = me() + j;
  EXPECT_EQ(shmem_sum_reduce(SHMEM_TEAM_WORLD, d, s, 4), 0);
  const int n = npes();
  for (int j = 0; j < 4; ++j) EXPECT_EQ(d[j], double(n) * (n - 1) / 2 + double(j) * n);
  EXPECT_EQ(shmem_max_reduce(SHMEM_TEAM_WORLD, d, s, 4), 0);
  EXPECT_EQ(d[0], double(n - 1));
  shmem_free(d);
  shmem_free(s);
}

// Scans: inclusive and exclusive sums over every arithmetic type.
template <class T, class Fn>
void check_scan(const Teams& teams, const char* type_name, const char* name, bool inclusive, Fn fn) {
  const bool full = representative(type_name);
  const size_t max = sizes<T>().back();
  T* src = static_cast<T*>(shmem_malloc(max * sizeof(T)));
  T* dst = static_cast<T*>(shmem_malloc(max * sizeof(T)));
  std::vector<T> ref(max);
  for (size_t ti = 0; ti < (full ? teams.all.size() : 2); ++ti) {
    shmem_team_t t = teams.all[ti];
    for (Case c : cases<T>(full)) {
      const size_t n = c.n;
      const bool in_place = c.in_place;
      {
        if (t != SHMEM_TEAM_INVALID) {
          const int tme = shmem_team_my_pe(t);
          const int last = inclusive ? tme : tme - 1;
          for (size_t j = 0; j < n; ++j) src[j] = value<T>(5, tme, j);
          for (size_t j = 0; j < n; ++j) {
            T acc = T(0);
            if (last >= 0) {
              acc = value<T>(5, 0, j);
              for (int p = 1; p <= last; ++p) acc = combine<T>(5, acc, value<T>(5, p, j));
            }
            ref[j] = acc;
          }
          T* out = in_place ? src : dst;
          EXPECT_EQ(fn(t, out, src, n), 0);
          size_t bad = 0, first = 0;
          for (size_t j = 0; j < n; ++j)
            if (!same(out[j], ref[j]) && bad++ == 0) first = j;
          EXPECT_EQ(bad, 0u) << name << " on team " << teams.names[ti] << ", " << n << " elements"
                             << (in_place ? " in place" : "") << ": first wrong element " << first;
        }
        shmem_barrier_all();
      }
    }
  }
  shmem_free(dst);
  shmem_free(src);
}

#define RUN_SCAN(T, N, OP)                                                          \
  check_scan<T>(teams, #N, "shmem_" #N "_sum_inscan", true, shmem_##N##_sum_inscan);    \
  check_scan<T>(teams, #N, "shmem_" #N "_sum_exscan", false, shmem_##N##_sum_exscan);

TEST(Scan, InclusiveAndExclusive) {
  Teams teams;
  SHMEM_REDUCE_ARITH_TYPES(RUN_SCAN, sum)
}

// ---- data movement ----

// Byte pattern of team PE `pe`, element j of a `es`-byte type.
unsigned char pattern(int pe, size_t byte) { return static_cast<unsigned char>(pe * 61 + byte * 7 + 1); }

template <class T>
void fill(T* p, int pe, size_t n, size_t skip_bytes = 0) {
  auto* b = reinterpret_cast<unsigned char*>(p);
  for (size_t i = 0; i < n * sizeof(T); ++i) b[i] = pattern(pe, i + skip_bytes);
}

template <class T>
size_t first_diff(const T* p, int pe, size_t n, size_t skip_bytes = 0) {
  auto* b = reinterpret_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n * sizeof(T); ++i)
    if (b[i] != pattern(pe, i + skip_bytes)) return i;
  return SIZE_MAX;
}

struct DataFns {
  int (*bcast)(shmem_team_t, void*, const void*, size_t, int);
  int (*collect)(shmem_team_t, void*, const void*, size_t);
  int (*fcollect)(shmem_team_t, void*, const void*, size_t);
  int (*alltoall)(shmem_team_t, void*, const void*, size_t);
  int (*alltoalls)(shmem_team_t, void*, const void*, ptrdiff_t, ptrdiff_t, size_t);
};

template <class T>
void check_data(const Teams& teams, const char* tname, const DataFns& f, bool all_sizes) {
  std::vector<size_t> ns = all_sizes ? sizes<T>() : std::vector<size_t>{3};
  const size_t max = ns.back();
  const int n_world = npes();
  // Room for the largest result: alltoalls with stride 3 over max * n_world elements.
  const size_t room = 3 * max * size_t(n_world) + 8;
  T* src = static_cast<T*>(shmem_malloc(room * sizeof(T)));
  T* dst = static_cast<T*>(shmem_malloc(room * sizeof(T)));
  for (size_t ti = 0; ti < (all_sizes ? teams.all.size() : 2); ++ti) {
    shmem_team_t t = teams.all[ti];
    const std::string where = std::string(tname) + " on team " + teams.names[ti];
    for (size_t n : ns) {
      const int tn = t != SHMEM_TEAM_INVALID ? shmem_team_n_pes(t) : 0;
      const int tme = t != SHMEM_TEAM_INVALID ? shmem_team_my_pe(t) : -1;
      // broadcast from the first, last and a middle member
      for (int root_sel = 0; root_sel < 3; ++root_sel) {
        if (t != SHMEM_TEAM_INVALID) {
          int root = root_sel == 0 ? 0 : root_sel == 1 ? tn - 1 : tn / 2;
          fill(src, tme, n);
          std::memset(dst, 0xee, n * sizeof(T) + 1);
          EXPECT_EQ(f.bcast(t, dst, src, n, root), 0);
          EXPECT_EQ(first_diff(dst, root, n), SIZE_MAX) << "broadcast " << where << " root " << root << " n " << n;
          EXPECT_EQ(reinterpret_cast<unsigned char*>(dst)[n * sizeof(T)], 0xee) << "broadcast wrote past the end";
        }
        shmem_barrier_all();
      }
      // fcollect and collect (collect: member i contributes n + (i * 5) % 7 elements)
      if (t != SHMEM_TEAM_INVALID) {
        fill(src, tme, n);
        EXPECT_EQ(f.fcollect(t, dst, src, n), 0);
        for (int i = 0; i < tn; ++i)
          EXPECT_EQ(first_diff(dst + size_t(i) * n, i, n), SIZE_MAX) << "fcollect " << where << " block " << i;
      }
      shmem_barrier_all();
      if (t != SHMEM_TEAM_INVALID) {
        auto cnt = [&](int i) { return n == 0 ? size_t(i % 2) : n + size_t(i * 5 % 7); };
        fill(src, tme, cnt(tme));
        size_t total = 0;
        for (int i = 0; i < tn; ++i) total += cnt(i);
        std::memset(dst, 0xee, (total + 1) * sizeof(T));
        EXPECT_EQ(f.collect(t, dst, src, cnt(tme)), 0);
        size_t off = 0;
        for (int i = 0; i < tn; ++i) {
          EXPECT_EQ(first_diff(dst + off, i, cnt(i)), SIZE_MAX) << "collect " << where << " block " << i;
          off += cnt(i);
        }
        EXPECT_EQ(reinterpret_cast<unsigned char*>(dst + total)[0], 0xee) << "collect wrote past the end";
      }
      shmem_barrier_all();
      // alltoall: block j of member i's source is pattern(i, j-th block bytes)
      if (t != SHMEM_TEAM_INVALID) {
        fill(src, tme, n * size_t(tn));
        EXPECT_EQ(f.alltoall(t, dst, src, n), 0);
        for (int i = 0; i < tn; ++i)
          EXPECT_EQ(first_diff(dst + size_t(i) * n, i, n, size_t(tme) * n * sizeof(T)), SIZE_MAX)
              << "alltoall " << where << " block from " << i << " n " << n;
      }
      shmem_barrier_all();
      // alltoalls with strides (dst 2, sst 3) and (1, 1)
      for (auto [ds, ss] : {std::pair<ptrdiff_t, ptrdiff_t>{2, 3}, {1, 1}}) {
        if (t != SHMEM_TEAM_INVALID) {
          const size_t span = n * size_t(tn);
          for (size_t e = 0; e < span * size_t(ss); ++e) fill(src + e, tme, 1, e * sizeof(T));
          std::memset(dst, 0, (span * size_t(ds) + 1) * sizeof(T));
          EXPECT_EQ(f.alltoalls(t, dst, src, ds, ss, n), 0);
          size_t bad = 0;
          for (int i = 0; i < tn; ++i)
            for (size_t e = 0; e < n; ++e) {
              size_t from = (size_t(tme) * n + e) * size_t(ss);  // element of member i's source
              if (first_diff(dst + (size_t(i) * n + e) * size_t(ds), i, 1, from * sizeof(T)) != SIZE_MAX) ++bad;
            }
          EXPECT_EQ(bad, 0u) << "alltoalls " << where << " dst " << ds << " sst " << ss << " n " << n;
        }
        shmem_barrier_all();
      }
    }
  }
  shmem_free(dst);
  shmem_free(src);
}

#define TYPED_FNS(T, N)                                                                                    \
  DataFns{[](shmem_team_t t, void* d, const void* s, size_t n, int r) {                                   \
            return shmem_##N##_broadcast(t, static_cast<T*>(d), static_cast<const T*>(s), n, r);          \
          },                                                                                               \
          [](shmem_team_t t, void* d, const void* s, size_t n) {                                          \
            return shmem_##N##_collect(t, static_cast<T*>(d), static_cast<const T*>(s), n);               \
          },                                                                                               \
          [](shmem_team_t t, void* d, const void* s, size_t n) {                                          \
            return shmem_##N##_fcollect(t, static_cast<T*>(d), static_cast<const T*>(s), n);              \
          },                                                                                               \
          [](shmem_team_t t, void* d, const void* s, size_t n) {                                          \
            return shmem_##N##_alltoall(t, static_cast<T*>(d), static_cast<const T*>(s), n);              \
          },                                                                                               \
          [](shmem_team_t t, void* d, const void* s, ptrdiff_t a, ptrdiff_t b, size_t n) {                \
            return shmem_##N##_alltoalls(t, static_cast<T*>(d), static_cast<const T*>(s), a, b, n);       \
          }}

TEST(Data, MemForms) {
  Teams teams;
  check_data<char>(teams, "mem", DataFns{shmem_broadcastmem, shmem_collectmem, shmem_fcollectmem, shmem_alltoallmem,
                                         shmem_alltoallsmem},
                   true);
}

TEST(Data, TypedForms) {
  Teams teams;
  // Every typed function; all sizes and teams for the representative widths.
#define RUN_DATA(T, N) check_data<T>(teams, #N, TYPED_FNS(T, N), representative(#N));
  SHMEM_RMA_TYPES(RUN_DATA)
#undef RUN_DATA
}

// Many collectives back to back without barriers, alternating staged and direct sizes,
// each checked: exercises the scratch parity rule.
TEST(Coll, BackToBackWithoutBarriers) {
  const int n = npes();
  const size_t big = 5000;
  double* src = static_cast<double*>(shmem_malloc(big * sizeof(double)));
  double* dst = static_cast<double*>(shmem_malloc(big * n * sizeof(double)));
  size_t bad = 0;
  for (int it = 0; it < 300; ++it) {
    size_t m = it % 3 == 2 ? big : size_t(1 + it % 50);
    for (size_t j = 0; j < m; ++j) src[j] = double(me() * 1000 + it + int(j));
    if (it % 2 == 0) {
      EXPECT_EQ(shmem_double_sum_reduce(SHMEM_TEAM_WORLD, dst, src, m), 0);
      for (size_t j = 0; j < m; ++j)
        if (dst[j] != 1000.0 * n * (n - 1) / 2 + double(n) * double(it + int(j))) ++bad;
    } else {
      EXPECT_EQ(shmem_double_fcollect(SHMEM_TEAM_WORLD, dst, src, m), 0);
      for (int p = 0; p < n; ++p)
        for (size_t j = 0; j < m; ++j)
          if (dst[size_t(p) * m + j] != double(p * 1000 + it + int(j))) ++bad;
    }
  }
  EXPECT_EQ(bad, 0u);
  shmem_barrier_all();
  shmem_free(dst);
  shmem_free(src);
}

// Small reductions back to back (the "line" shape: each member pushes its operand into a
// line of every other member's, no sync), in place, 1..7 longs, a member lagging now and
// then so that the others run a call ahead and refill a line parity as soon as the
// protocol allows; then on teams made and destroyed in turn, whose slots are reused (stale
// call numbers from the previous team must not satisfy a wait).
TEST(Coll, SmallReductionsBackToBackInPlace) {
  const int n = npes();
  long* buf = static_cast<long*>(shmem_malloc(8 * sizeof(long)));
  size_t bad = 0;
  auto round = [&](shmem_team_t team, int tme, int tn, int it) {
    const size_t m = size_t(1 + it % 7);
    for (size_t j = 0; j < m; ++j) buf[j] = long(tme) * 1000 + it + long(j);
    if (tme == 0 && it % 97 == 0) usleep(2000);
    EXPECT_EQ(shmem_long_sum_reduce(team, buf, buf, m), 0);
    for (size_t j = 0; j < m; ++j)
      if (buf[j] != 1000L * tn * (tn - 1) / 2 + long(tn) * (it + long(j))) ++bad;
  };
  for (int it = 0; it < 3000; ++it) round(SHMEM_TEAM_WORLD, me(), n, it);
  for (int k = 0; k < 6; ++k) {
    shmem_team_t t = SHMEM_TEAM_INVALID;
    const int size = n > 2 && k % 2 ? n - 1 : n;
    EXPECT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, size, nullptr, 0, &t), 0);
    if (t != SHMEM_TEAM_INVALID) {
      for (int it = 0; it < 200 + 50 * k; ++it) round(t, shmem_team_my_pe(t), size, it);
      shmem_team_destroy(t);
    }
    shmem_barrier_all();
  }
  EXPECT_EQ(bad, 0u);
  shmem_barrier_all();
  shmem_free(buf);
}

// Broadcasts back to back without barriers, every member in turn the root (then one root
// for 20 calls while a member lags), sizes that
// alternate between the mailbox (<= 2 KiB: the root runs ahead, no team sync), the staged
// and the direct algorithms, on every team, each result checked at once: a root that
// refilled a mailbox before its member emptied it, or a member that read a stale box,
// shows here. Interleaved fcollects check that the mailbox leaves the team's sync epochs
// alone.
TEST(Coll, BroadcastsBackToBackEveryRoot) {
  Teams teams;
  const size_t max = 12000;
  long* src = static_cast<long*>(shmem_malloc(max * sizeof(long)));
  long* dst = static_cast<long*>(shmem_malloc(npes() * max * sizeof(long)));
  for (size_t ti = 0; ti < teams.all.size(); ++ti) {
    shmem_team_t t = teams.all[ti];
    if (t == SHMEM_TEAM_INVALID) continue;
    const int tn = shmem_team_n_pes(t), tme = shmem_team_my_pe(t);
    size_t bad = 0;
    for (int it = 0; it < 400; ++it) {
      const int root = it < 200 ? it % tn : (it / 20) % tn;  // then 20 in a row from one root
      const size_t small = size_t(1 + (it * 37) % 100);  // <= 800 bytes: the mailbox
      const size_t m = it >= 200 ? small : it % 7 == 6 ? max : it % 5 == 4 ? 900 : small + 156;
      for (size_t j = 0; j < m; ++j) src[j] = long(tme) * 1000003 + it * 7919 + long(j);
      // now and then a member lags while one root goes on, so that the root runs ahead as far
      // as the mailbox lets it
      if (it >= 200 && it % 20 == 1 && tn > 1 && tme == (root + 1) % tn) usleep(3000);
      EXPECT_EQ(shmem_long_broadcast(t, dst, src, m, root), 0);
      for (size_t j = 0; j < m; ++j)
        if (dst[j] != long(root) * 1000003 + it * 7919 + long(j)) ++bad;
      if (it < 200 && it % 11 == 10) {
        EXPECT_EQ(shmem_long_fcollect(t, dst, src, 3), 0);
        for (int p = 0; p < tn; ++p)
          for (size_t j = 0; j < 3; ++j)
            if (dst[size_t(p) * 3 + j] != long(p) * 1000003 + it * 7919 + long(j)) ++bad;
      }
    }
    EXPECT_EQ(bad, 0u) << "team " << teams.names[ti];
  }
  shmem_barrier_all();
  shmem_free(dst);
  shmem_free(src);
}

// Large reductions (the non-temporal path under SYMMEM_STREAM_COPY=4096: mp.coll.stream), out of place, in place and at a
// dest that is not 16-byte aligned, against the sequential reference in PE order.
TEST(Coll, LargeSumAllPlacements) {
  const size_t m = (size_t(1) << 18) + 3;  // 2 MiB of doubles and a bit
  double* src = static_cast<double*>(shmem_malloc((m + 1) * sizeof(double)));
  double* dst = static_cast<double*>(shmem_malloc((m + 1) * sizeof(double)));
  auto val = [](int pe, size_t j) { return double((size_t(pe) * 7919 + j * 31) % 1009) / 3.0; };
  for (int placement = 0; placement < 3; ++placement) {
    double* s = placement == 2 ? src + 1 : src;
    double* d = placement == 0 ? dst : placement == 1 ? src : dst + 1;
    for (size_t j = 0; j < m; ++j) s[j] = val(me(), j);
    EXPECT_EQ(shmem_double_sum_reduce(SHMEM_TEAM_WORLD, d, s, m), 0);
    size_t bad = 0;
    for (size_t j = 0; j < m; ++j) {
      double acc = val(0, j);
      for (int p = 1; p < npes(); ++p) acc += val(p, j);
      bad += std::memcmp(&acc, &d[j], sizeof(double)) != 0;
    }
    EXPECT_EQ(bad, 0u) << "placement " << placement;
    shmem_barrier_all();
  }
  shmem_free(dst);
  shmem_free(src);
}

// The large reduction's kernels (coll/reduce_ops.hpp) at every length around their edges
// (0, 1, 7, 4097 elements and odd multi-chunk lengths), with dest and source a few elements
// off a cache line (so that the streamed path has a ragged head and tail around its
// whole lines), for several ops and element sizes, against the sequential reference in PE
// order, bit for bit. The CTests run it under each instruction set (SYMMEM_REDUCE_ISA) and,
// with SYMMEM_STREAM_COPY=4096, at 2-4 PEs (every dest written in one pass) and 5 (one
// dest after another).
template <class T, class Val, class Op>
void check_reduce_edges(const char* name, int (*reduce)(shmem_team_t, T*, const T*, size_t), Val val, Op op) {
  const size_t max = 12289 + 8;
  T* src = static_cast<T*>(shmem_malloc(max * sizeof(T)));
  T* dst = static_cast<T*>(shmem_malloc(max * sizeof(T)));
  for (size_t m : {size_t(0), size_t(1), size_t(7), size_t(4097), size_t(12289)})
    for (size_t doff : {size_t(0), size_t(1), size_t(3)})
      for (size_t soff : {size_t(0), size_t(1)}) {
        T* s = src + soff;
        T* d = dst + doff;
        for (size_t j = 0; j < m; ++j) s[j] = val(me(), j);
        EXPECT_EQ(reduce(SHMEM_TEAM_WORLD, d, s, m), 0);
        size_t bad = 0;
        for (size_t j = 0; j < m; ++j) {
          T acc = val(0, j);
          for (int p = 1; p < npes(); ++p) acc = op(acc, val(p, j));
          bad += std::memcmp(&acc, &d[j], sizeof(T)) != 0;
        }
        EXPECT_EQ(bad, 0u) << name << ": " << m << " elements, dest +" << doff << ", source +" << soff;
        shmem_barrier_all();
      }
  shmem_free(dst);
  shmem_free(src);
}

TEST(Coll, LargeReduceEdgesEveryKernel) {
  auto fval = [](int pe, size_t j) { return double((size_t(pe) * 7919 + j * 31) % 1009) / 3.0 * (j % 3 ? 1e-9 : 1e7); };
  check_reduce_edges<double>("double sum", shmem_double_sum_reduce, fval, [](double a, double b) { return a + b; });
  check_reduce_edges<float>("float max", shmem_float_max_reduce,
                            [&](int pe, size_t j) { return j % 101 == 5 && pe == 1 ? -0.0f : float(fval(pe, j)); },
                            [](float a, float b) { return b > a ? b : a; });
  check_reduce_edges<unsigned long long>(
      "ulonglong prod", shmem_ulonglong_prod_reduce,
      [](int pe, size_t j) { return (unsigned long long)(j * 2654435761u + size_t(pe) * 40503u) | 1; },
      [](unsigned long long a, unsigned long long b) { return a * b; });
  check_reduce_edges<short>("short sum", shmem_short_sum_reduce,
                            [](int pe, size_t j) { return short((j * 31 + size_t(pe) * 7) % 200 - 100); },
                            [](short a, short b) { return short(a + b); });
}

// Floating-point sums give the same bits on every PE and every repetition.
TEST(Coll, DeterministicFloatSum) {
  const size_t m = 100000;
  float* src = static_cast<float*>(shmem_malloc(m * sizeof(float)));
  float* dst = static_cast<float*>(shmem_malloc(m * sizeof(float)));
  float* all = static_cast<float*>(shmem_malloc(size_t(npes()) * 16 * sizeof(float)));
  std::vector<float> first(m);
  for (size_t j = 0; j < m; ++j) src[j] = 1.0f / float(1 + (j * 7919 + size_t(me()) * 104729) % 1000) * (me() % 2 ? 1e4f : 1e-3f);
  for (int rep = 0; rep < 3; ++rep) {
    EXPECT_EQ(shmem_float_sum_reduce(SHMEM_TEAM_WORLD, dst, src, m), 0);
    if (rep == 0) std::memcpy(first.data(), dst, m * sizeof(float));
    else EXPECT_EQ(std::memcmp(first.data(), dst, m * sizeof(float)), 0) << "repetition " << rep;
  }
  // Compare a sample across PEs.
  EXPECT_EQ(shmem_float_fcollect(SHMEM_TEAM_WORLD, all, dst + 12345, 16), 0);
  for (int p = 1; p < npes(); ++p) EXPECT_EQ(std::memcmp(all, all + p * 16, 16 * sizeof(float)), 0) << "PE " << p;
  shmem_barrier_all();
  shmem_free(all);
  shmem_free(dst);
  shmem_free(src);
}

// ---- active-set (pSync) forms ----

struct ActiveSet {
  int start, log_stride, size;
};
std::vector<ActiveSet> active_sets() {
  const int n = npes();
  std::vector<ActiveSet> v{{0, 0, n}};
  if (n >= 2) v.push_back({1, 0, n - 1});
  if (n >= 3) v.push_back({0, 1, (n + 1) / 2});
  if (n >= 4) v.push_back({1, 1, n / 2});
  return v;
}
int index_in(const ActiveSet& a) {
  int d = me() - a.start, s = 1 << a.log_stride;
  return d >= 0 && d % s == 0 && d / s < a.size ? d / s : -1;
}

TEST(ActiveSet, BarrierSyncAndPsyncRestored) {
  long* psync = static_cast<long*>(shmem_malloc(SHMEM_BARRIER_SYNC_SIZE * sizeof(long)));
  long* ring = static_cast<long*>(shmem_calloc(2, sizeof(long)));
  for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; ++i) psync[i] = SHMEM_SYNC_VALUE;
  shmem_barrier_all();
  for (auto a : active_sets()) {
    int idx = index_in(a);
    if (idx >= 0) {
      const int next = a.start + ((idx + 1) % a.size) * (1 << a.log_stride);
      const int prev = (idx + a.size - 1) % a.size;
      bool ok = true;
      for (long i = 1; i <= 200; ++i) {
        shmem_long_p(&ring[i % 2], i * 100 + idx, next);
        if (i % 2) shmem_barrier(a.start, a.log_stride, a.size, psync);
        else {
          shmem_quiet();
          shmem_sync(a.start, a.log_stride, a.size, psync);
        }
        ok = ok && ring[i % 2] == i * 100 + prev;
      }
      EXPECT_TRUE(ok) << "active set (" << a.start << "," << a.log_stride << "," << a.size << ")";
    }
    shmem_barrier_all();
    for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; ++i) EXPECT_EQ(psync[i], SHMEM_SYNC_VALUE) << "pSync[" << i << "]";
    shmem_barrier_all();  // nobody posts into the next set's barrier before everyone looked
  }
  shmem_free(ring);
  shmem_free(psync);
}

// The active set of every PE runs on the world team (capi/coll.cpp on_active_set): its
// calls interleave with the team forms on SHMEM_TEAM_WORLD and with a smaller set's pSync
// calls, back to back without barriers, every root in turn, each result checked at once;
// the world set leaves its pSync as it found it.
TEST(ActiveSet, WorldSetInterleavesWithTeamCalls) {
  const int n = npes();
  long* psync = static_cast<long*>(shmem_malloc(3 * SHMEM_SYNC_SIZE * sizeof(long)));
  for (int i = 0; i < 3 * SHMEM_SYNC_SIZE; ++i) psync[i] = SHMEM_SYNC_VALUE;
  long* wrk = static_cast<long*>(shmem_malloc(SHMEM_REDUCE_MIN_WRKDATA_SIZE * sizeof(long)));
  const size_t m = 40;  // longs: the mailbox (320 B) for broadcasts, scratch for the rest
  long* src = static_cast<long*>(shmem_malloc(m * sizeof(long)));
  long* dst = static_cast<long*>(shmem_malloc(m * size_t(n) * sizeof(long)));
  shmem_barrier_all();
  const bool in_sub = me() >= 1;  // the set (1, 0, n - 1), when n >= 3
  size_t bad = 0;
  for (int it = 0; it < 300; ++it) {
    const int root = it % n;
    for (size_t j = 0; j < m; ++j) src[j] = long(me()) * 100000 + it * 100 + long(j);
    long* ps = psync + (it % 2) * SHMEM_SYNC_SIZE;
    switch (it % 4) {
      case 0:  // active-set broadcast on the world: the root's dest stays as it was
        dst[0] = -1;
        shmem_broadcast64(dst, src, m, root, 0, 0, n, ps);
        for (size_t j = 0; j < m && me() != root; ++j) bad += dst[j] != long(root) * 100000 + it * 100 + long(j);
        if (me() == root) bad += dst[0] != -1;
        break;
      case 1:  // team broadcast on the world
        EXPECT_EQ(shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, m, root), 0);
        for (size_t j = 0; j < m; ++j) bad += dst[j] != long(root) * 100000 + it * 100 + long(j);
        break;
      case 2:  // active-set sum on the world
        shmem_long_sum_to_all(dst, src, int(m), 0, 0, n, wrk, ps);
        for (size_t j = 0; j < m; ++j)
          bad += dst[j] != 100000L * n * (n - 1) / 2 + long(n) * (it * 100 + long(j));
        break;
      default:  // active-set fcollect on the world, then a pSync barrier of a smaller set
        shmem_fcollect64(dst, src, m, 0, 0, n, ps);
        for (int p = 0; p < n; ++p)
          for (size_t j = 0; j < m; ++j) bad += dst[size_t(p) * m + j] != long(p) * 100000 + it * 100 + long(j);
        if (n >= 3 && in_sub) shmem_barrier(1, 0, n - 1, psync + 2 * SHMEM_SYNC_SIZE);
        break;
    }
  }
  EXPECT_EQ(bad, 0u);
  shmem_barrier_all();
  for (int i = 0; i < 3 * SHMEM_SYNC_SIZE; ++i) EXPECT_EQ(psync[i], SHMEM_SYNC_VALUE) << "pSync[" << i << "]";
  shmem_barrier_all();
  shmem_free(dst);
  shmem_free(src);
  shmem_free(wrk);
  shmem_free(psync);
}

TEST(ActiveSet, DataCollectives) {
  long* psync = static_cast<long*>(shmem_malloc(2 * SHMEM_SYNC_SIZE * sizeof(long)));
  for (int i = 0; i < 2 * SHMEM_SYNC_SIZE; ++i) psync[i] = SHMEM_SYNC_VALUE;
  const size_t max = 4000;
  uint64_t* src = static_cast<uint64_t*>(shmem_malloc(3 * max * 8 * size_t(npes())));
  uint64_t* dst = static_cast<uint64_t*>(shmem_malloc(3 * max * 8 * size_t(npes())));
  shmem_barrier_all();
  for (auto a : active_sets()) {
    const int idx = index_in(a);
    for (size_t n : {size_t(0), size_t(1), size_t(33), size_t(1037), max}) {  // 1037: past the scratch, not whole lines
      if (idx >= 0) {
        long* ps = psync + (n % 2) * SHMEM_SYNC_SIZE;  // alternate pSync arrays
        const int root = a.size - 1;
        // broadcast64: the root's dest stays untouched
        for (size_t j = 0; j < n; ++j) src[j] = uint64_t(idx) << 32 | j;
        for (size_t j = 0; j < n; ++j) dst[j] = 7;
        shmem_broadcast64(dst, src, n, root, a.start, a.log_stride, a.size, ps);
        size_t bad = 0;
        for (size_t j = 0; j < n; ++j) bad += dst[j] != (idx == root ? 7 : (uint64_t(root) << 32 | j));
        // broadcast32 of 2n 32-bit elements
        shmem_broadcast32(dst, src, 2 * n, 0, a.start, a.log_stride, a.size, ps);
        if (idx != 0)
          for (size_t j = 0; j < n; ++j) bad += dst[j] != (uint64_t(0) << 32 | j);
        EXPECT_EQ(bad, 0u) << "broadcast, n " << n;
        // fcollect64 / collect64 (member i gives n + i elements)
        shmem_fcollect64(dst, src, n, a.start, a.log_stride, a.size, ps);
        bad = 0;
        for (int i = 0; i < a.size; ++i)
          for (size_t j = 0; j < n; ++j) bad += dst[size_t(i) * n + j] != (uint64_t(i) << 32 | j);
        EXPECT_EQ(bad, 0u) << "fcollect64, n " << n;
        for (size_t j = 0; j < n + size_t(idx); ++j) src[j] = uint64_t(idx) << 32 | j;
        shmem_collect64(dst, src, n + size_t(idx), a.start, a.log_stride, a.size, ps);
        bad = 0;
        size_t off = 0;
        for (int i = 0; i < a.size; ++i)
          for (size_t j = 0; j < n + size_t(i); ++j) bad += dst[off++] != (uint64_t(i) << 32 | j);
        EXPECT_EQ(bad, 0u) << "collect64, n " << n;
        // collect32 / fcollect32 on 32-bit halves
        uint32_t* s32 = reinterpret_cast<uint32_t*>(src);
        uint32_t* d32 = reinterpret_cast<uint32_t*>(dst);
        for (size_t j = 0; j < n + 1; ++j) s32[j] = uint32_t(idx * 100000 + int(j));
        shmem_fcollect32(d32, s32, n + 1, a.start, a.log_stride, a.size, ps);
        bad = 0;
        for (int i = 0; i < a.size; ++i)
          for (size_t j = 0; j < n + 1; ++j) bad += d32[size_t(i) * (n + 1) + j] != uint32_t(i * 100000 + int(j));
        shmem_collect32(d32, s32, size_t(idx) % 2, a.start, a.log_stride, a.size, ps);
        off = 0;
        for (int i = 0; i < a.size; ++i)
          for (size_t j = 0; j < size_t(i) % 2; ++j) bad += d32[off++] != uint32_t(i * 100000 + int(j));
        EXPECT_EQ(bad, 0u) << "fcollect32/collect32, n " << n;
        // alltoall64 / alltoall32 / alltoalls64
        for (size_t j = 0; j < n * size_t(a.size); ++j) src[j] = uint64_t(idx) << 32 | j;
        shmem_alltoall64(dst, src, n, a.start, a.log_stride, a.size, ps);
        bad = 0;
        for (int i = 0; i < a.size; ++i)
          for (size_t j = 0; j < n; ++j) bad += dst[size_t(i) * n + j] != (uint64_t(i) << 32 | (size_t(idx) * n + j));
        shmem_alltoall32(dst, src, 2 * n, a.start, a.log_stride, a.size, ps);
        for (int i = 0; i < a.size; ++i)
          for (size_t j = 0; j < n; ++j) bad += dst[size_t(i) * n + j] != (uint64_t(i) << 32 | (size_t(idx) * n + j));
        EXPECT_EQ(bad, 0u) << "alltoall, n " << n;
        for (size_t j = 0; j < 3 * n * size_t(a.size); ++j) src[j] = uint64_t(idx) << 32 | j;
        shmem_alltoalls64(dst, src, 2, 3, n, a.start, a.log_stride, a.size, ps);
        bad = 0;
        for (int i = 0; i < a.size; ++i)
          for (size_t e = 0; e < n; ++e)
            bad += dst[(size_t(i) * n + e) * 2] != (uint64_t(i) << 32 | ((size_t(idx) * n + e) * 3));
        shmem_alltoalls32(dst, src, 2, 2, 2 * n, a.start, a.log_stride, a.size, ps);
        EXPECT_EQ(bad, 0u) << "alltoalls64, n " << n;
      }
      shmem_barrier_all();
    }
  }
  for (int i = 0; i < 2 * SHMEM_SYNC_SIZE; ++i) EXPECT_EQ(psync[i], SHMEM_SYNC_VALUE) << "pSync[" << i << "]";
  shmem_free(dst);
  shmem_free(src);
  shmem_free(psync);
}

template <class T, class Fn>
void check_to_all(const char* type_name, const char* name, int op, Fn fn, long* psync, T* work) {
  const size_t max = 3000;
  const bool full = representative(type_name);
  T* src = static_cast<T*>(shmem_malloc(max * sizeof(T)));
  T* dst = static_cast<T*>(shmem_malloc(max * sizeof(T)));
  auto sets = active_sets();
  if (!full) sets.resize(std::min<size_t>(sets.size(), 2));
  std::vector<Case> cs{{0, false}, {1, true}, {13, false}, {max, true}};
  if (full) cs = {{0, false}, {1, false}, {1, true}, {13, false}, {13, true}, {max, false}, {max, true}};
  for (auto a : sets) {
    const int idx = index_in(a);
    for (Case c : cs) {
      const size_t n = c.n;
      const bool in_place = c.in_place;
      {
        if (idx >= 0) {
          for (size_t j = 0; j < n; ++j) src[j] = value<T>(op, idx, j);
          T* out = in_place ? src : dst;
          fn(out, src, int(n), a.start, a.log_stride, a.size, work, psync);
          size_t bad = 0;
          for (size_t j = 0; j < n; ++j) {
            T acc = value<T>(op, 0, j);
            for (int p = 1; p < a.size; ++p) acc = combine<T>(op, acc, value<T>(op, p, j));
            bad += !same(out[j], acc);
          }
          EXPECT_EQ(bad, 0u) << name << " active set (" << a.start << "," << a.log_stride << "," << a.size
                             << ") n " << n << (in_place ? " in place" : "");
        }
        shmem_barrier_all();
      }
    }
  }
  shmem_free(dst);
  shmem_free(src);
}

TEST(ActiveSet, Reductions) {
  long* psync = static_cast<long*>(shmem_malloc(SHMEM_REDUCE_SYNC_SIZE * sizeof(long)));
  for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; ++i) psync[i] = SHMEM_SYNC_VALUE;
  void* work = shmem_malloc(16 * (3000 / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE));
  shmem_barrier_all();
  int op;
#define RUN_TO_ALL(T, N, OP) \
  check_to_all<T>(#N, "shmem_" #N "_" #OP "_to_all", op, shmem_##N##_##OP##_to_all, psync, static_cast<T*>(work));
  op = 0;
  SHMEM_TO_ALL_BITWISE_TYPES(RUN_TO_ALL, and)
  op = 1;
  SHMEM_TO_ALL_BITWISE_TYPES(RUN_TO_ALL, or)
  op = 2;
  SHMEM_TO_ALL_BITWISE_TYPES(RUN_TO_ALL, xor)
  op = 3;
  SHMEM_TO_ALL_MINMAX_TYPES(RUN_TO_ALL, max)
  op = 4;
  SHMEM_TO_ALL_MINMAX_TYPES(RUN_TO_ALL, min)
  op = 5;
  SHMEM_TO_ALL_ARITH_TYPES(RUN_TO_ALL, sum)
  op = 6;
  SHMEM_TO_ALL_ARITH_TYPES(RUN_TO_ALL, prod)
#undef RUN_TO_ALL
  for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; ++i) EXPECT_EQ(psync[i], SHMEM_SYNC_VALUE) << "pSync[" << i << "]";
  shmem_free(work);
  shmem_free(psync);
}

}  // namespace
