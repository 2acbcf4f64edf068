// The C++ API's teams, collectives, atomics and signals (symmem/team.hpp, symmem.hpp),
// on a symmem::Runtime (mp_main.cpp's) and on a second Runtime of the same process.
// Every PE runs every test; collectives are checked against a sequential reference at
// 0, 1, odd and large (> 8 KiB, past the staged path) sizes, on the world and on a
// strided team.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "mp_env.hpp"
#include "symmem/symmem.hpp"

namespace {

using mp::rt;
using symmem::Cmp;
using symmem::Errc;
using symmem::ReduceOp;
using symmem::Runtime;
using symmem::SymSpan;
using symmem::Team;

int me() { return rt().my_pe(); }
int npes() { return rt().n_pes(); }

// ---------------------------------------------------------------- compile-time checks

template <class T, ReduceOp Op>
concept CanReduce = requires(Team& t, SymSpan<T> s) {
  t.reduce<Op>(s, s);
};
template <class T>
concept CanScan = requires(Team& t, SymSpan<T> s) {
  t.inscan(s, s);
};
template <class T>
concept CanFetchAdd = requires(Runtime& r, T* p, T v) {
  r.atomic_fetch_add(p, v, 0);
};
template <class T>
concept CanSwap = requires(Runtime& r, T* p, T v) {
  r.atomic_swap(p, v, 0);
};
template <class T>
concept CanFetchXor = requires(Runtime& r, T* p, T v) {
  r.atomic_fetch_xor(p, v, 0);
};
template <class T>
concept CanWait = requires(Runtime& r, T* p, T v) {
  r.wait_until(p, Cmp::kEq, v);
};
template <class D, class S>
concept CanBroadcast = requires(Team& t, D d, S s) {
  t.broadcast(d, s, 0);
};

TEST(CxxTypes, OperationsTakeTheStandardsTypes) {
  static_assert(CanReduce<double, ReduceOp::kSum> && CanReduce<long double, ReduceOp::kProd>);
  static_assert(CanReduce<std::complex<double>, ReduceOp::kSum> && CanReduce<std::complex<float>, ReduceOp::kProd>);
  static_assert(!CanReduce<std::complex<double>, ReduceOp::kMax>, "complex has no order");
  static_assert(!CanReduce<double, ReduceOp::kAnd> && !CanReduce<float, ReduceOp::kXor>, "no bitwise on floats");
  static_assert(CanReduce<unsigned, ReduceOp::kAnd> && CanReduce<int64_t, ReduceOp::kXor>);
  static_assert(CanReduce<char, ReduceOp::kMin> && !CanReduce<char, ReduceOp::kAnd>);
  static_assert(!CanReduce<bool, ReduceOp::kSum> && !CanReduce<int*, ReduceOp::kSum>);
  struct Pod {
    int a;
  };
  static_assert(!CanReduce<Pod, ReduceOp::kSum>);
  static_assert(CanScan<int> && CanScan<double> && !CanScan<bool>);
  static_assert(CanFetchAdd<int> && CanFetchAdd<unsigned long long> && CanFetchAdd<size_t>);
  static_assert(!CanFetchAdd<double> && !CanFetchAdd<short> && !CanFetchAdd<char>);
  static_assert(CanSwap<double> && CanSwap<float> && CanSwap<long> && !CanSwap<short>);
  static_assert(CanFetchXor<uint64_t> && CanFetchXor<int32_t> && !CanFetchXor<double>);
  static_assert(CanWait<short> && CanWait<uint64_t> && !CanWait<double>);
  // Collectives: one element type, a writable dest, any contiguous range.
  static_assert(CanBroadcast<SymSpan<int>, SymSpan<int>> && CanBroadcast<std::span<int>, std::span<const int>>);
  static_assert(!CanBroadcast<SymSpan<int>, SymSpan<long>>, "element types differ");
  static_assert(!CanBroadcast<std::span<const int>, SymSpan<int>>, "dest is read-only");
  SUCCEED();
}

// ---------------------------------------------------------------- teams

TEST(CxxTeam, WorldAndShared) {
  Team world = rt().team_world(), shared = rt().team_shared();
  ASSERT_TRUE(world.valid());
  EXPECT_TRUE(static_cast<bool>(shared));
  EXPECT_EQ(world.my_pe(), me());
  EXPECT_EQ(world.n_pes(), npes());
  // The PEs of this node, in order (all of them on one node; across emulated nodes a part).
  int in_shared = 0;
  for (int p = 0; p < npes(); ++p) {
    const int s = world.translate_pe(p, shared);
    if (s < 0) continue;
    EXPECT_EQ(s, in_shared++);
    EXPECT_EQ(shared.translate_pe(s, world), p);
  }
  EXPECT_EQ(in_shared, shared.n_pes());
  EXPECT_GE(world.translate_pe(me(), shared), 0);
  EXPECT_EQ(world.translate_pe(npes(), shared), -1);
  auto buf = rt().alloc<long>(4);
  for (int p = 0; p < npes(); ++p) EXPECT_EQ(world.ptr(buf.data(), p), rt().ptr(buf.data(), p));
  EXPECT_EQ(world.ptr(buf.data(), npes()), nullptr);
  world.sync();
  world.barrier();
  shared.barrier();
  // The predefined teams are never destroyed: their Team objects are handles.
  EXPECT_THROW(world.destroy(), symmem::Error);
  rt().free(buf);
}

TEST(CxxTeam, IssueExample) {
  // From 8 PEs, (start 1, stride 2, size 3) -> PEs 1, 3, 5 numbered 0, 1, 2; other PEs get
  // an invalid team. At other PE counts the same shape, clipped to the job.
  const int n = npes();
  const int size = n >= 6 ? 3 : std::max(1, n / 2);
  const int start = n >= 2 ? 1 : 0;
  Team world = rt().team_world();
  Team t = world.split_strided(start, 2, size);
  const bool member = me() >= start && (me() - start) % 2 == 0 && (me() - start) / 2 < size;
  EXPECT_EQ(t.valid(), member);
  if (n == 8) {
    EXPECT_EQ(t.valid(), me() == 1 || me() == 3 || me() == 5);
  }
  if (t) {
    EXPECT_EQ(t.my_pe(), (me() - start) / 2);
    EXPECT_EQ(t.n_pes(), size);
    for (int i = 0; i < size; ++i) EXPECT_EQ(t.translate_pe(i, world), start + 2 * i);
    EXPECT_EQ(world.translate_pe(me(), t), t.my_pe());
    t.sync();
  } else {
    EXPECT_EQ(t.my_pe(), -1);
    EXPECT_EQ(t.n_pes(), -1);
    EXPECT_EQ(world.translate_pe(me(), t), -1);
    EXPECT_THROW(t.sync(), symmem::Error);
    try {
      t.barrier();
    } catch (const symmem::Error& e) {
      EXPECT_EQ(e.code(), Errc::kState);
    }
  }
  // A split of a split: the reversed team of t's members (collective over t only).
  if (t) {
    Team rev = t.split_strided(size - 1, -1, size);
    ASSERT_TRUE(rev.valid());
    EXPECT_EQ(rev.my_pe(), size - 1 - t.my_pe());
    EXPECT_EQ(rev.translate_pe(0, world), start + 2 * (size - 1));
  }
  // The destructor destroys t on its members, together.
}

TEST(CxxTeam, InvalidTripletsThrowEverywhere) {
  const int n = npes();
  Team world = rt().team_world();
  auto expect_bad = [&](int start, int stride, int size, const char* what) {
    try {
      Team t = world.split_strided(start, stride, size);
      ADD_FAILURE() << "split (" << start << ", " << stride << ", " << size << ") did not throw";
    } catch (const symmem::Error& e) {
      EXPECT_EQ(e.code(), Errc::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("Team::split_strided: invalid triplet"), std::string::npos) << e.what();
    }
  };
  expect_bad(0, 0, 2, "stride 0 needs size 1");
  expect_bad(0, 1, n + 1, "larger than the parent team");
  expect_bad(n, 1, 1, "outside the parent team");
  expect_bad(0, 1, 0, "is not positive");
  if (n >= 2) expect_bad(1, 1, n, "outside the parent team");
  EXPECT_THROW(world.split_2d(0), symmem::Error);
  // The world still works after the failed splits.
  world.barrier();
}

TEST(CxxTeam, TooManyTeamsThenReuse) {
  Team world = rt().team_world();
  std::vector<Team> live;
  bool threw = false;
  for (int i = 0; i < 100 && !threw; ++i) {
    try {
      live.push_back(world.split_strided(0, 1, npes()));
    } catch (const symmem::Error& e) {
      threw = true;
      EXPECT_EQ(e.code(), Errc::kNoMemory);
      EXPECT_NE(std::string(e.what()).find("too many teams"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(threw);
  EXPECT_GE(live.size(), 8u);
  live.clear();  // every member destroys them, in the same order
  Team again = world.split_strided(0, 1, npes());
  EXPECT_TRUE(again.valid());
}

TEST(CxxTeam, MoveAndDestroy) {
  Team world = rt().team_world();
  Team a = world.split_strided(0, 1, npes());
  ASSERT_TRUE(a.valid());
  Team b = std::move(a);
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): moved-from is invalid
  EXPECT_TRUE(b.valid());
  Team c;
  c = std::move(b);
  EXPECT_TRUE(c.valid());
  EXPECT_EQ(c.n_pes(), npes());
  c.destroy();
  EXPECT_FALSE(c.valid());
  // Assigning over an owned team destroys it first.
  Team d = world.split_strided(0, 1, npes());
  d = world.split_strided(npes() - 1, -1, npes());
  EXPECT_EQ(d.my_pe(), npes() - 1 - me());
}

TEST(CxxTeam, Split2d) {
  const int n = npes();
  for (int xrange : {1, 2, 3, n + 2}) {
    Team world = rt().team_world();
    auto [x, y] = world.split_2d(xrange);
    const int xr = std::min(xrange, n);
    ASSERT_TRUE(x.valid());
    ASSERT_TRUE(y.valid());
    EXPECT_EQ(x.my_pe(), me() % xr);
    EXPECT_EQ(x.n_pes(), std::min(xr, n - me() / xr * xr));
    EXPECT_EQ(y.my_pe(), me() / xr);
    EXPECT_EQ(y.n_pes(), (n - me() % xr + xr - 1) / xr);
    for (int i = 0; i < x.n_pes(); ++i) EXPECT_EQ(x.translate_pe(i, world), me() / xr * xr + i);
    for (int i = 0; i < y.n_pes(); ++i) EXPECT_EQ(y.translate_pe(i, world), me() % xr + i * xr);
    x.barrier();
    y.barrier();
  }
}

// ---------------------------------------------------------------- collectives

constexpr size_t kSizes[] = {0, 1, 7, 3001};  // 3001 x 8 bytes: past the 8 KiB staged path
constexpr size_t kMax = 3001;

int64_t val(int p, size_t i) { return int64_t(p + 1) * 100003 + int64_t(i % 1009) * 7 - 5000; }

// Runs f(team) on the world and on the team of even PEs (non-members skip it).
template <class F>
void on_teams(F f) {
  Team world = rt().team_world();
  {
    SCOPED_TRACE("world");
    f(world);
  }
  Team even = world.split_strided(0, 2, (npes() + 1) / 2);
  if (even) {
    SCOPED_TRACE("even PEs");
    f(even);
  }
}

struct Buffers {
  SymSpan<int64_t> src, dst;
  Buffers() : src(rt().alloc<int64_t>(kMax * size_t(npes()))), dst(rt().alloc<int64_t>(kMax * size_t(npes()) + 1)) {}
  ~Buffers() {
    rt().free(dst);
    rt().free(src);
  }
  void fill_dst() { std::fill(dst.begin(), dst.end(), int64_t(-77)); }
};

TEST(CxxColl, Broadcast) {
  Buffers b;
  on_teams([&](Team& t) {
    for (size_t n : kSizes) {
      const int root = t.n_pes() - 1;
      for (size_t i = 0; i < n; ++i) b.src[i] = val(t.my_pe(), i);
      b.fill_dst();
      t.broadcast(b.dst, b.src.subspan(0, n), root);
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(b.dst[i], val(root, i)) << "n " << n << " i " << i;
      EXPECT_EQ(b.dst[n], -77) << "wrote past n " << n;
    }
  });
}

TEST(CxxColl, Fcollect) {
  Buffers b;
  on_teams([&](Team& t) {
    for (size_t n : kSizes) {
      for (size_t i = 0; i < n; ++i) b.src[i] = val(t.my_pe(), i);
      b.fill_dst();
      t.fcollect(b.dst, b.src.subspan(0, n));
      for (int p = 0; p < t.n_pes(); ++p)
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(b.dst[size_t(p) * n + i], val(p, i)) << "n " << n;
      EXPECT_EQ(b.dst[n * size_t(t.n_pes())], -77);
    }
  });
}

TEST(CxxColl, Collect) {
  Buffers b;
  on_teams([&](Team& t) {
    for (size_t n : kSizes) {
      // Member p contributes n - p elements (at least 0): the counts differ.
      auto count = [&](int p) { return n > size_t(p) ? n - size_t(p) : 0; };
      const size_t mine = count(t.my_pe());
      for (size_t i = 0; i < mine; ++i) b.src[i] = val(t.my_pe(), i);
      b.fill_dst();
      size_t total = t.collect(b.dst, b.src.subspan(0, mine));
      size_t expect_total = 0, off = 0;
      for (int p = 0; p < t.n_pes(); ++p) expect_total += count(p);
      EXPECT_EQ(total, expect_total);
      for (int p = 0; p < t.n_pes(); ++p) {
        for (size_t i = 0; i < count(p); ++i) ASSERT_EQ(b.dst[off + i], val(p, i)) << "n " << n << " p " << p;
        off += count(p);
      }
      EXPECT_EQ(b.dst[off], -77);
    }
  });
}

TEST(CxxColl, Alltoall) {
  Buffers b;
  on_teams([&](Team& t) {
    const int np = t.n_pes();
    for (size_t n : kSizes) {
      // Block j of member p holds val(p * np + j, i).
      for (int j = 0; j < np; ++j)
        for (size_t i = 0; i < n; ++i) b.src[size_t(j) * n + i] = val(t.my_pe() * np + j, i);
      b.fill_dst();
      t.alltoall(b.dst, b.src.subspan(0, n * size_t(np)));
      for (int p = 0; p < np; ++p)
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(b.dst[size_t(p) * n + i], val(p * np + t.my_pe(), i)) << "n " << n;
      EXPECT_EQ(b.dst[n * size_t(np)], -77);
    }
  });
}

// The strided form against a sequential reference: member j's dest element
// (p * nelems + k) * dst_stride holds member p's src element (j * nelems + k) * src_stride.
TEST(CxxColl, Alltoalls) {
  Buffers b;
  on_teams([&](Team& t) {
    const int np = t.n_pes();
    const struct {
      ptrdiff_t dst, src;
    } strides[] = {{1, 1}, {2, 3}, {3, 1}};
    for (auto st : strides)
      for (size_t nelems : {size_t(0), size_t(1), size_t(7), size_t(400)}) {
        const size_t span = nelems * size_t(np);
        const size_t src_n = span ? (span - 1) * size_t(st.src) + 1 : 0;
        const size_t dst_n = span ? (span - 1) * size_t(st.dst) + 1 : 0;
        for (size_t i = 0; i < src_n; ++i) b.src[i] = val(t.my_pe(), i);
        b.fill_dst();
        t.alltoalls(b.dst.subspan(0, dst_n), b.src.subspan(0, src_n), st.dst, st.src, nelems);
        for (int p = 0; p < np; ++p)
          for (size_t k = 0; k < nelems; ++k) {
            const size_t at = (size_t(p) * nelems + k) * size_t(st.dst);
            ASSERT_EQ(b.dst[at], val(p, (size_t(t.my_pe()) * nelems + k) * size_t(st.src)))
                << "strides " << st.dst << "," << st.src << " nelems " << nelems << " from " << p;
            if (st.dst > 1) {
              EXPECT_EQ(b.dst[at + 1], -77) << "between the strided elements";
            }
          }
        EXPECT_EQ(b.dst[dst_n], -77);
      }
  });
  Team world = rt().team_world();
  EXPECT_THROW(world.alltoalls(b.dst, b.src, 0, 1, 1), symmem::Error);
  EXPECT_THROW(world.alltoalls(b.dst.subspan(0, 2), b.src, 2, 1, 1 + size_t(npes())), symmem::Error);
  world.barrier();
}

template <ReduceOp Op, class T>
T fold(T a, T b) {
  if constexpr (Op == ReduceOp::kSum)
    return a + b;
  else if constexpr (Op == ReduceOp::kProd)
    return a * b;
  else if constexpr (Op == ReduceOp::kMin)
    return std::min(a, b);
  else if constexpr (Op == ReduceOp::kMax)
    return std::max(a, b);
  else if constexpr (Op == ReduceOp::kAnd)
    return a & b;
  else if constexpr (Op == ReduceOp::kOr)
    return a | b;
  else
    return a ^ b;
}

template <ReduceOp Op>
void check_reduce(Buffers& b, Team& t) {
  for (size_t n : kSizes) {
    // Small factors for prod, so that no product overflows.
    auto v = [&](int p, size_t i) {
      return Op == ReduceOp::kProd ? int64_t((p + int(i)) % 3 + 1) : val(p, i) * (p % 2 ? -1 : 1);
    };
    for (size_t i = 0; i < n; ++i) b.src[i] = v(t.my_pe(), i);
    b.fill_dst();
    t.reduce<Op>(b.dst, b.src.subspan(0, n));
    for (size_t i = 0; i < n; ++i) {
      int64_t r = v(0, i);
      for (int p = 1; p < t.n_pes(); ++p) r = fold<Op>(r, v(p, i));
      ASSERT_EQ(b.dst[i], r) << "op " << int(Op) << " n " << n << " i " << i;
    }
    EXPECT_EQ(b.dst[n], -77);
  }
}

TEST(CxxColl, ReduceEveryOp) {
  Buffers b;
  on_teams([&](Team& t) {
    check_reduce<ReduceOp::kSum>(b, t);
    check_reduce<ReduceOp::kProd>(b, t);
    check_reduce<ReduceOp::kMin>(b, t);
    check_reduce<ReduceOp::kMax>(b, t);
    check_reduce<ReduceOp::kAnd>(b, t);
    check_reduce<ReduceOp::kOr>(b, t);
    check_reduce<ReduceOp::kXor>(b, t);
  });
}

TEST(CxxColl, ReduceOtherTypesAndInPlace) {
  auto d = rt().alloc<double>(kMax);
  auto f = rt().alloc<float>(kMax);
  auto c = rt().alloc<std::complex<double>>(kMax);
  auto u = rt().alloc<unsigned char>(kMax);
  on_teams([&](Team& t) {
    const int np = t.n_pes();
    for (size_t n : kSizes) {
      for (size_t i = 0; i < n; ++i) {
        d[i] = double(t.my_pe()) + 0.5 * double(i);
        f[i] = float(t.my_pe() * 2 + int(i % 5));
        c[i] = {double(t.my_pe()), double(i)};
        u[i] = static_cast<unsigned char>(1u << ((t.my_pe() + i) % 8));
      }
      t.reduce(symmem::op::sum, d, d.subspan(0, n));  // in place
      t.reduce(symmem::op::max, f, f.subspan(0, n));
      t.reduce<ReduceOp::kSum>(c, c.subspan(0, n));
      t.reduce(symmem::op::bit_or, u, u.subspan(0, n));
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(d[i], double(np) * (np - 1) / 2 + 0.5 * double(i) * np);
        ASSERT_EQ(f[i], float((np - 1) * 2 + int(i % 5)));
        ASSERT_EQ(c[i], std::complex<double>(double(np) * (np - 1) / 2, double(i) * np));
        unsigned bits = 0;
        for (int p = 0; p < np; ++p) bits |= 1u << ((p + i) % 8);
        ASSERT_EQ(u[i], bits);
      }
    }
  });
  rt().free(u);
  rt().free(c);
  rt().free(f);
  rt().free(d);
}

TEST(CxxColl, Scans) {
  Buffers b;
  on_teams([&](Team& t) {
    for (size_t n : kSizes) {
      for (size_t i = 0; i < n; ++i) b.src[i] = val(t.my_pe(), i);
      for (bool inclusive : {true, false}) {
        b.fill_dst();
        if (inclusive)
          t.inscan(b.dst, b.src.subspan(0, n));
        else
          t.exscan(b.dst, b.src.subspan(0, n));
        const int last = inclusive ? t.my_pe() : t.my_pe() - 1;
        for (size_t i = 0; i < n; ++i) {
          int64_t r = 0;
          for (int p = 0; p <= last; ++p) r += val(p, i);
          ASSERT_EQ(b.dst[i], r) << (inclusive ? "inscan" : "exscan") << " n " << n << " i " << i;
        }
        EXPECT_EQ(b.dst[n], -77);
      }
    }
  });
}

TEST(CxxColl, MisuseThrows) {
  Buffers b;
  Team world = rt().team_world();
  const int np = npes();
  auto expect_bad = [](auto&& call, const char* what) {
    try {
      call();
      ADD_FAILURE() << "no error; expected " << what;
    } catch (const symmem::Error& e) {
      EXPECT_EQ(e.code(), Errc::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  // Every PE passes the same wrong arguments, so every PE throws before communicating.
  expect_bad([&] { world.broadcast(b.dst.subspan(0, 3), b.src.subspan(0, 4), 0); },
             "Team::broadcast: dest holds 3 elements, the result needs 4");
  expect_bad([&] { world.broadcast(b.dst, b.src.subspan(0, 4), np); }, "root");
  expect_bad([&] { world.fcollect(b.dst.subspan(0, 2 * size_t(np) - 1), b.src.subspan(0, 2)); },
             "Team::fcollect: dest holds");
  expect_bad([&] { world.reduce<ReduceOp::kSum>(b.dst.subspan(0, 1), b.src.subspan(0, 2)); },
             "Team::reduce: dest holds 1 elements");
  if (np > 1) expect_bad([&] { world.alltoall(b.dst, b.src.subspan(0, size_t(np) + 1)); }, "not a multiple");
  std::vector<int64_t> local(16);  // not symmetric
  expect_bad([&] { world.reduce<ReduceOp::kSum>(local, b.src.subspan(0, 16)); }, "not in the symmetric heap");
  expect_bad([&] { world.fcollect(b.dst, std::span<const int64_t>(local).subspan(0, 1)); },
             "not in the symmetric heap");
  // collect: only PE 0's dest is too small, yet every PE throws (they agree on it).
  for (size_t i = 0; i < 4; ++i) b.src[i] = 1;
  const size_t room = me() == 0 ? 4 * size_t(np) - 1 : 4 * size_t(np);
  expect_bad([&] { world.collect(b.dst.subspan(0, room), b.src.subspan(0, 4)); },
             "Team::collect: the dest of team PE 0 holds");
  // The team still works afterwards.
  EXPECT_EQ(world.collect(b.dst, b.src.subspan(0, 4)), 4 * size_t(np));
  world.barrier();
}

// ---------------------------------------------------------------- two runtimes

TEST(CxxTeam, TwoRuntimesEachWithItsTeams) {
  symmem::InitOptions o;
  o.heap_size = 64ull << 20;
  o.instance = 7;
  Runtime r2(o);
  ASSERT_EQ(r2.n_pes(), npes());
  ASSERT_EQ(r2.my_pe(), me());
  {
    Team w1 = rt().team_world(), w2 = r2.team_world();
    EXPECT_EQ(w1.translate_pe(0, w2), -1) << "teams of different runtimes do not translate";
    // A team on each, split the other way round, used interleaved.
    Team t1 = w1.split_strided(0, 1, npes());
    Team t2 = w2.split_strided(npes() - 1, -1, npes());
    ASSERT_TRUE(t1 && t2);
    EXPECT_EQ(t2.my_pe(), npes() - 1 - me());
    auto a = rt().alloc<int>(100);
    auto c = r2.alloc<int>(100);
    for (int i = 0; i < 100; ++i) a[i] = me() + i, c[i] = 10 * me() + i;
    t1.reduce<ReduceOp::kSum>(a, a);
    t2.reduce<ReduceOp::kMax>(c, c);
    t2.broadcast(c.subspan(50, 50), c.subspan(0, 50), 0);  // root: team PE 0 = world PE n-1
    const int s = npes() * (npes() - 1) / 2;
    for (int i = 0; i < 100; ++i) EXPECT_EQ(a[i], s + i * npes());
    for (int i = 0; i < 50; ++i) EXPECT_EQ(c[i], 10 * (npes() - 1) + i);
    for (int i = 50; i < 100; ++i) EXPECT_EQ(c[i], 10 * (npes() - 1) + i - 50);
    // Atomics through each runtime land in that runtime's heap.
    auto w = r2.alloc<long>(1);
    w[0] = 0;
    r2.barrier_all();
    r2.atomic_add(w.data(), 2, 0);
    r2.barrier_all();
    if (me() == 0) {
      EXPECT_EQ(w[0], 2 * npes());
    }
    r2.free(w);
    rt().free(a);
    r2.free(c);
    // t1, t2 destroyed here, before r2.
  }
}

// ---------------------------------------------------------------- atomics and signals

TEST(CxxAtomic, FetchAddUnderContention) {
  constexpr int kIters = 2000;
  auto w = rt().alloc<uint64_t>(1);
  auto l = rt().alloc<long long>(1);
  w[0] = 0;
  l[0] = 0;
  rt().barrier_all();
  std::vector<uint64_t> seen;
  seen.reserve(kIters);
  for (int k = 0; k < kIters; ++k) {
    seen.push_back(rt().atomic_fetch_add(w.data(), 1, 0));
    rt().atomic_inc(l.data(), npes() - 1);
  }
  // Every fetched value is distinct across PEs; a PE's are increasing.
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end());
  rt().barrier_all();
  EXPECT_EQ(rt().atomic_fetch(w.data(), 0), uint64_t(kIters) * npes());
  EXPECT_EQ(rt().atomic_fetch(l.data(), npes() - 1), (long long)kIters * npes());
  // The sum of all fetched values is 0 + 1 + ... + (total - 1).
  auto sums = rt().alloc<uint64_t>(1);
  sums[0] = std::accumulate(seen.begin(), seen.end(), uint64_t(0));
  rt().team_world().reduce(symmem::op::sum, sums, sums);
  const uint64_t total = uint64_t(kIters) * npes();
  EXPECT_EQ(sums[0], total * (total - 1) / 2);
  rt().free(sums);
  rt().free(l);
  rt().free(w);
}

TEST(CxxAtomic, SwapCompareSwapBitwiseSetFetch) {
  auto w = rt().alloc<int>(4);
  auto d = rt().alloc<double>(1);
  auto bits = rt().alloc<uint64_t>(1);
  std::fill(w.begin(), w.end(), 0);
  d[0] = 0;
  bits[0] = ~uint64_t(0);
  rt().barrier_all();
  // Exactly one PE wins the compare-and-swap on PE 0's w[0].
  const int old = rt().atomic_compare_swap(w.data(), 0, me() + 1, 0);
  auto won = rt().alloc<int>(1);
  won[0] = old == 0 ? 1 : 0;
  rt().team_world().reduce(symmem::op::sum, won, won);
  EXPECT_EQ(won[0], 1);
  // Every PE clears its own bit of PE 0's word, sets its bit in w[1], toggles w[2].
  (void)rt().atomic_fetch_and(bits.data(), ~(uint64_t(1) << me()), 0);
  rt().atomic_or(&w[1], 1 << (me() % 31), 0);
  rt().atomic_xor(&w[2], 1, 0);
  rt().barrier_all();
  if (me() == 0) {
    EXPECT_EQ(bits[0], ~uint64_t(0) << npes());
    int expect = 0;
    for (int p = 0; p < npes(); ++p) expect |= 1 << (p % 31);
    EXPECT_EQ(w[1], expect);
    EXPECT_EQ(w[2], npes() % 2);
  }
  rt().barrier_all();
  // Floats: set, fetch, swap (the extended AMO types).
  const int right = (me() + 1) % npes();
  rt().atomic_set(d.data(), 1.5 * me(), right);
  rt().barrier_all();
  const int left = (me() + npes() - 1) % npes();
  EXPECT_EQ(rt().atomic_fetch(d.data(), me()), 1.5 * left);
  rt().barrier_all();  // before the left neighbour swaps it
  EXPECT_EQ(rt().atomic_swap(d.data(), -1.0, right), 1.5 * me());
  rt().barrier_all();
  EXPECT_EQ(d[0], -1.0);
  // Errors: a misaligned or non-symmetric word, a PE out of range.
  long local = 0;
  EXPECT_THROW(rt().atomic_add(&local, 1L, 0), symmem::Error);
  EXPECT_THROW(rt().atomic_add(w.data(), 1, npes()), symmem::Error);
  EXPECT_THROW(rt().atomic_add(reinterpret_cast<int*>(reinterpret_cast<char*>(w.data()) + 1), 1, 0), symmem::Error);
  rt().barrier_all();
  rt().free(won);
  rt().free(bits);
  rt().free(d);
  rt().free(w);
}

TEST(CxxSignal, PutSignalAndWaits) {
  constexpr size_t kN = 5000;  // 40 KB: the weakly ordered copy path
  auto data = rt().alloc<int64_t>(kN);
  auto sig = rt().alloc<uint64_t>(1);
  auto flag = rt().alloc<int>(1);
  sig[0] = 0;
  flag[0] = 0;
  rt().barrier_all();
  const int right = (me() + 1) % npes(), left = (me() + npes() - 1) % npes();
  std::vector<int64_t> mine(kN);
  for (size_t i = 0; i < kN; ++i) mine[i] = val(me(), i);
  for (int round = 1; round <= 3; ++round) {
    mine[0] = round;
    rt().put_signal(data, std::span<const int64_t>(mine), sig.data(), 1, symmem::SignalOp::kAdd, right);
    EXPECT_GE(rt().signal_wait_until(sig.data(), Cmp::kGe, uint64_t(round)), uint64_t(round));
    EXPECT_EQ(data[0], round);
    for (size_t i = 1; i < kN; ++i) ASSERT_EQ(data[i], val(left, i));
    if (round == 3) {
      EXPECT_EQ(rt().signal_fetch(sig.data()), 3u);
    }
    rt().barrier_all();  // the left neighbour's next round overwrites data
  }
  // A set signal, then wait_until on an int variable set by an atomic.
  rt().put_signal(data.data(), mine.data(), 1, sig.data(), 42, symmem::SignalOp::kSet, right);
  EXPECT_EQ(rt().signal_wait_until(sig.data(), Cmp::kEq, 42), 42u);
  rt().atomic_set(flag.data(), me() + 100, right);
  EXPECT_EQ(rt().wait_until(flag.data(), Cmp::kGt, 99), left + 100);
  EXPECT_TRUE(rt().test(flag.data(), Cmp::kEq, left + 100));
  std::vector<int64_t> too_long(kN + 1);
  EXPECT_THROW(rt().put_signal(data, std::span<const int64_t>(too_long), sig.data(), 1, symmem::SignalOp::kSet, right),
               symmem::Error);
  EXPECT_THROW(rt().put_signal(data.data(), mine.data(), 1, sig.data(), 1, static_cast<symmem::SignalOp>(7), right),
               symmem::Error);
  rt().barrier_all();
  rt().free(flag);
  rt().free(sig);
  rt().free(data);
}

}  // namespace

// ---------------------------------------------------------------- hooks for layers above

namespace hooks {

TEST(CxxRuntime, HeapStats) {
  auto before = rt().heap_stats();
  EXPECT_EQ(before.size, rt().heap_size());
  auto buf = rt().alloc<double>(1000);
  auto after = rt().heap_stats();
  EXPECT_GE(after.used, before.used + 8000);
  EXPECT_EQ(after.blocks, before.blocks + 1);
  EXPECT_LE(after.largest_free, after.size - after.used);
  rt().free(buf);
  EXPECT_EQ(rt().heap_stats().used, before.used);
}

// The check runs inside a wait that cannot end by itself, and its exception ends the wait.
TEST(CxxRuntime, WaitCheckEndsAWait) {
  auto flag = rt().alloc<long>(1);
  flag[0] = 0;
  rt().barrier_all();
  int calls = 0;
  rt().set_wait_check([&] {
    if (++calls == 3) throw std::runtime_error("stop waiting");
  });
  EXPECT_THROW(rt().wait_until(flag.data(), Cmp::kEq, 1L), std::runtime_error);  // nobody sets it
  EXPECT_EQ(calls, 3);
  rt().set_wait_check({});
  rt().barrier_all();
  rt().free(flag);
}

// A context numbers PEs as its team does; its quiet completes its non-blocking puts; a
// destroyed context refuses operations.
TEST(CxxCtx, TeamNumberingAndQuiet) {
  const int n = npes();
  auto buf = rt().alloc<int64_t>(size_t(n) * 64);
  std::fill(buf.begin(), buf.end(), int64_t(-1));
  Team world = rt().team_world();
  world.barrier();
  Team rev = world.split_strided(n - 1, -1, n);  // team PE p is world PE n-1-p
  ASSERT_TRUE(rev);
  {
    symmem::Ctx c = rev.ctx_create(symmem::Ctx::kPrivate);
    ASSERT_TRUE(c);
    EXPECT_EQ(c.n_pes(), n);
    EXPECT_EQ(c.options(), symmem::Ctx::kPrivate);
    EXPECT_EQ(c.world_pe(0), n - 1);
    std::vector<int64_t> src(64);
    for (int i = 0; i < 64; ++i) src[size_t(i)] = me() * 1000 + i;
    // To team PE 0 (world PE n-1), into my row.
    c.put_nbi(buf.data() + size_t(me()) * 64, src.data(), 64 * sizeof(int64_t), 0);
    c.fence();
    c.quiet();
    (void)c.atomic_fetch_add(buf.data() + size_t(me()) * 64, int64_t(0), 0);
    EXPECT_THROW(c.put(buf.data(), src.data(), 8, n), symmem::Error);
    c.destroy();
    EXPECT_FALSE(c);
    EXPECT_THROW(c.quiet(), symmem::Error);
  }
  world.barrier();
  if (me() == n - 1) {
    for (int p = 0; p < n; ++p)
      for (int i = 0; i < 64; ++i) ASSERT_EQ(buf[size_t(p) * 64 + size_t(i)], p * 1000 + i) << "from " << p;
  }
  EXPECT_THROW((void)rt().ctx_create(1L << 10), symmem::Error);
  symmem::Ctx w = rt().ctx_create();
  EXPECT_EQ(w.world_pe(n - 1), n - 1);
  rev.destroy();
  world.barrier();
  rt().free(buf);
}

// What keep_after_finalize keeps is readable and writable after its Runtime is gone and
// holds what it held (this PE's copy and a peer's); other addresses are refused.
TEST(CxxRuntime, KeepAfterFinalize) {
  symmem::InitOptions o;
  o.heap_size = 32ull << 20;
  o.instance = 9;
  auto r2 = std::make_unique<Runtime>(o);
  auto a = r2->alloc<int>(3000);  // crosses pages
  for (int i = 0; i < 3000; ++i) a[size_t(i)] = me() * 100000 + i;
  r2->barrier_all();
  int peer = (me() + 1) % npes();  // the next PE, or this one where that is on another node
  if (r2->ptr(a.data(), peer) == nullptr) peer = me();
  int* theirs = static_cast<int*>(r2->ptr(a.data(), peer));
  ASSERT_NE(theirs, nullptr);
  r2->keep_after_finalize(a.data(), a.size_bytes());
  r2->keep_after_finalize(theirs, a.size_bytes());
  int local = 0;
  EXPECT_THROW(r2->keep_after_finalize(&local, sizeof(local)), symmem::Error);
  r2.reset();  // collective: every PE destroys it here
  for (int i = 0; i < 3000; ++i) {
    ASSERT_EQ(a[size_t(i)], me() * 100000 + i);
    ASSERT_EQ(theirs[i], peer * 100000 + i);
  }
  a[0] = -5;  // private now: the peer's copy does not change
  theirs[0] = -6;
  EXPECT_EQ(a[0], peer != me() ? -5 : -6);  // its peer may be itself
  EXPECT_EQ(theirs[0], -6);
}

TEST(CxxTeam, IndexIsTheSameOnEveryMember) {
  Team world = rt().team_world();
  EXPECT_EQ(world.index(), 0);
  EXPECT_EQ(rt().team_shared().index(), 1);
  EXPECT_EQ(Team().index(), -1);
  Team t = world.split_strided(0, 1, npes());
  auto idx = rt().alloc<int>(npes() + 1);
  idx[0] = t.index();
  world.barrier();
  world.fcollect(idx.subspan(1, npes()), idx.subspan(0, 1));
  for (int p = 0; p < npes(); ++p) EXPECT_EQ(idx[1 + p], t.index());
  EXPECT_GE(t.index(), 2);
  t.destroy();
  rt().free(idx);
}

}  // namespace hooks
