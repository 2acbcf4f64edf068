// Teams over the OpenSHMEM C API: predefined teams, split_strided (the issue's examples,
// negative strides, splits of splits), split_2d, translate_pe, team_ptr, get_config, team
// syncs that leave non-members alone, invalid arguments, slot exhaustion and reuse.
#include <gtest/gtest.h>
#include <shmem.h>
#include <shmemx.h>

#include <atomic>
#include <vector>

namespace {

int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }

long load(const long* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

// Checks that `t` holds world PEs start + i*stride (i < size) numbered i, on members, and
// SHMEM_TEAM_INVALID elsewhere.
void expect_team(shmem_team_t t, int start, int stride, int size) {
  int idx = -1;
  for (int i = 0; i < size; ++i)
    if (start + i * stride == me()) idx = i;
  if (idx < 0) {
    EXPECT_EQ(t, SHMEM_TEAM_INVALID) << "PE " << me() << " is not in (" << start << "," << stride << "," << size << ")";
    return;
  }
  ASSERT_NE(t, SHMEM_TEAM_INVALID);
  EXPECT_EQ(shmem_team_my_pe(t), idx);
  EXPECT_EQ(shmem_team_n_pes(t), size);
  for (int i = 0; i < size; ++i) {
    EXPECT_EQ(shmem_team_translate_pe(t, i, SHMEM_TEAM_WORLD), start + i * stride);
    EXPECT_EQ(shmem_team_translate_pe(SHMEM_TEAM_WORLD, start + i * stride, t), i);
  }
  EXPECT_EQ(shmem_team_translate_pe(t, size, SHMEM_TEAM_WORLD), -1);
  EXPECT_EQ(shmem_team_translate_pe(t, -1, SHMEM_TEAM_WORLD), -1);
}

TEST(Team, Predefined) {
  // The world, and the PEs of this node (all of them on one node; across emulated or real
  // nodes, as many as share memory with this PE: exactly those shmem_ptr reaches).
  long* x = static_cast<long*>(shmem_malloc(sizeof(long)));
  for (shmem_team_t t : {SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED, SHMEMX_TEAM_NODE}) {
    int members = 0, last = -1;
    for (int p = 0; p < npes(); ++p) {
      const bool in = shmem_team_translate_pe(SHMEM_TEAM_WORLD, p, t) >= 0;
      members += in;
      if (in) last = p;
      if (t != SHMEM_TEAM_WORLD) {
        EXPECT_EQ(in, shmem_ptr(x, p) != nullptr) << "PE " << p;
      }
    }
    if (t == SHMEM_TEAM_WORLD) {
      EXPECT_EQ(members, npes());
    }
    EXPECT_EQ(shmem_team_n_pes(t), members);
    EXPECT_EQ(shmem_team_translate_pe(t, shmem_team_my_pe(t), SHMEM_TEAM_WORLD), me());
    EXPECT_EQ(shmem_team_translate_pe(t, members - 1, SHMEM_TEAM_WORLD), last);
    EXPECT_EQ(shmem_team_sync(t), 0);
  }
  shmem_free(x);
  EXPECT_EQ(shmem_team_my_pe(SHMEM_TEAM_INVALID), -1);
  EXPECT_EQ(shmem_team_n_pes(SHMEM_TEAM_INVALID), -1);
  EXPECT_EQ(shmem_team_translate_pe(SHMEM_TEAM_INVALID, 0, SHMEM_TEAM_WORLD), -1);
  EXPECT_NE(shmem_team_sync(SHMEM_TEAM_INVALID), 0);
  shmem_team_config_t cfg{-5};
  EXPECT_EQ(shmem_team_get_config(SHMEM_TEAM_WORLD, SHMEM_TEAM_NUM_CONTEXTS, &cfg), 0);
  EXPECT_EQ(cfg.num_contexts, 0);
  EXPECT_GE(shmemx_team_max_teams(), 8);
}

TEST(Team, IssueExamples) {
  // From 8 PEs: (1, 2, 3) -> PEs 1, 3, 5 numbered 0, 1, 2; (0, 2, 4) -> 0, 2, 4, 6. At other
  // PE counts the same shapes, clipped to the job.
  const int n = npes();
  shmem_team_t a = SHMEM_TEAM_INVALID, b = SHMEM_TEAM_INVALID;
  const int a_size = n >= 6 ? 3 : n / 2, b_size = (n + 1) / 2;
  if (a_size >= 1) {
    ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, a_size, nullptr, 0, &a), 0);
    expect_team(a, 1, 2, a_size);
    if (n == 8) {
      if (me() == 1 || me() == 3 || me() == 5) {
        EXPECT_EQ(shmem_team_my_pe(a), (me() - 1) / 2);
      }
      else EXPECT_EQ(a, SHMEM_TEAM_INVALID);
    }
  }
  ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, b_size, nullptr, 0, &b), 0);
  expect_team(b, 0, 2, b_size);
  if (n == 8) {
    EXPECT_EQ(shmem_team_n_pes(b) == 4, me() % 2 == 0);
  }
  // Teams translate to each other through their world PEs: 3 is a's PE 1, not in b.
  if (n == 8 && a != SHMEM_TEAM_INVALID) {
    EXPECT_EQ(shmem_team_translate_pe(a, 1, b), -1);
  }
  if (a != SHMEM_TEAM_INVALID) {
    EXPECT_EQ(shmem_team_sync(a), 0);
  }
  if (b != SHMEM_TEAM_INVALID) {
    EXPECT_EQ(shmem_team_sync(b), 0);
  }
  shmem_team_destroy(a);
  shmem_team_destroy(b);
  shmem_barrier_all();
}

TEST(Team, NegativeStrideAndSplitOfSplit) {
  const int n = npes();
  shmem_team_t rev = SHMEM_TEAM_INVALID, sub = SHMEM_TEAM_INVALID;
  ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, nullptr, 0, &rev), 0);
  expect_team(rev, n - 1, -1, n);
  // Every other PE of the reversed team, from its PE 0: world PEs n-1, n-3, ...
  ASSERT_EQ(shmem_team_split_strided(rev, 0, 2, (n + 1) / 2, nullptr, 0, &sub), 0);
  expect_team(sub, n - 1, -2, (n + 1) / 2);
  if (sub != SHMEM_TEAM_INVALID) {
    for (int i = 0; i < shmem_team_n_pes(sub); ++i) EXPECT_EQ(shmem_team_translate_pe(sub, i, rev), 2 * i);
  }
  // Stride 0 makes a one-PE team.
  shmem_team_t one = SHMEM_TEAM_INVALID;
  ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, 0, 1, nullptr, 0, &one), 0);
  expect_team(one, n - 1, 1, 1);
  if (one != SHMEM_TEAM_INVALID) {
    EXPECT_EQ(shmem_team_sync(one), 0);
  }
  shmem_team_destroy(one);
  shmem_team_destroy(sub);
  shmem_team_destroy(rev);
  shmem_barrier_all();
}

TEST(Team, Split2d) {
  const int n = npes();
  for (int xr : {1, 2, 3, n + 2}) {
    shmem_team_t xt = SHMEM_TEAM_INVALID, yt = SHMEM_TEAM_INVALID;
    shmem_team_config_t cfg{3};
    ASSERT_EQ(shmem_team_split_2d(SHMEM_TEAM_WORLD, xr, &cfg, SHMEM_TEAM_NUM_CONTEXTS, &xt, nullptr, 0, &yt), 0);
    const int x_range = xr > n ? n : xr;
    const int x = me() % x_range, y = me() / x_range;
    ASSERT_NE(xt, SHMEM_TEAM_INVALID);
    ASSERT_NE(yt, SHMEM_TEAM_INVALID);
    EXPECT_EQ(shmem_team_my_pe(xt), x);
    EXPECT_EQ(shmem_team_my_pe(yt), y);
    int row = y * x_range;
    EXPECT_EQ(shmem_team_n_pes(xt), std::min(x_range, n - row));
    EXPECT_EQ(shmem_team_n_pes(yt), (n - x + x_range - 1) / x_range);
    for (int i = 0; i < shmem_team_n_pes(xt); ++i) EXPECT_EQ(shmem_team_translate_pe(xt, i, SHMEM_TEAM_WORLD), row + i);
    for (int i = 0; i < shmem_team_n_pes(yt); ++i)
      EXPECT_EQ(shmem_team_translate_pe(yt, i, SHMEM_TEAM_WORLD), x + i * x_range);
    shmem_team_config_t got{0};
    EXPECT_EQ(shmem_team_get_config(xt, SHMEM_TEAM_NUM_CONTEXTS, &got), 0);
    EXPECT_EQ(got.num_contexts, 3);
    EXPECT_EQ(shmem_team_get_config(yt, SHMEM_TEAM_NUM_CONTEXTS, &got), 0);
    EXPECT_EQ(got.num_contexts, 0);
    EXPECT_EQ(shmem_team_sync(xt), 0);
    EXPECT_EQ(shmem_team_sync(yt), 0);
    shmem_team_destroy(xt);
    shmem_team_destroy(yt);
  }
  shmem_barrier_all();
}

TEST(Team, BarrierOnTeamLeavesOthersAlone) {
  // Even PEs run team barriers that order puts among them while the odd PEs wait for a
  // flag the evens set only after their barriers: if a team barrier needed the odd PEs,
  // this would hang.
  const int n = npes();
  long* flag = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  long* ring = static_cast<long*>(shmem_calloc(2, sizeof(long)));
  shmem_team_t ev = SHMEM_TEAM_INVALID;
  ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, nullptr, 0, &ev), 0);
  if (ev != SHMEM_TEAM_INVALID) {
    const int tn = shmem_team_n_pes(ev), tme = shmem_team_my_pe(ev);
    const int next = shmem_team_translate_pe(ev, (tme + 1) % tn, SHMEM_TEAM_WORLD);
    const int prev = (tme + tn - 1) % tn;
    bool ok = true;
    for (long i = 1; i <= 300; ++i) {
      shmem_long_p(&ring[i % 2], i * 100 + tme, next);
      EXPECT_EQ(shmemx_team_barrier(ev), 0);
      ok = ok && ring[i % 2] == i * 100 + prev;
    }
    EXPECT_TRUE(ok) << "a put before shmemx_team_barrier was not visible after it";
    if (tme == 0)
      for (int pe = 1; pe < n; pe += 2) shmem_long_p(flag, 1, pe);
    shmem_quiet();
  } else {
    while (load(flag) == 0) {
    }
  }
  shmem_team_destroy(ev);
  shmem_barrier_all();
  shmem_free(ring);
  shmem_free(flag);
}

TEST(Team, TeamPtr) {
  const int n = npes();
  long* x = static_cast<long*>(shmem_malloc(sizeof(long)));
  shmem_team_t rev = SHMEM_TEAM_INVALID;
  ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, nullptr, 0, &rev), 0);
  for (int i = 0; i < n; ++i) EXPECT_EQ(shmem_team_ptr(rev, x, i), shmem_ptr(x, n - 1 - i));
  EXPECT_EQ(shmem_team_ptr(rev, x, n), nullptr);
  EXPECT_EQ(shmem_team_ptr(SHMEM_TEAM_INVALID, x, 0), nullptr);
  EXPECT_EQ(shmem_team_ptr(SHMEM_TEAM_WORLD, x, me()), x);
  shmem_team_destroy(rev);
  shmem_free(x);
}

TEST(Team, InvalidArgumentsFailEverywhere) {
  const int n = npes();
  struct {
    int start, stride, size;
  } bad[] = {{0, 0, 2}, {0, 1, n + 1}, {0, 1, 0}, {-1, 1, 1}, {n, 1, 1}, {n - 1, 1, 2}, {0, -1, 2}};
  for (auto b : bad) {
    shmem_team_t t = SHMEM_TEAM_WORLD;
    EXPECT_NE(shmem_team_split_strided(SHMEM_TEAM_WORLD, b.start, b.stride, b.size, nullptr, 0, &t), 0)
        << "(" << b.start << "," << b.stride << "," << b.size << ")";
    EXPECT_EQ(t, SHMEM_TEAM_INVALID);
  }
  shmem_team_t t = SHMEM_TEAM_WORLD, u = SHMEM_TEAM_WORLD;
  EXPECT_NE(shmem_team_split_strided(SHMEM_TEAM_INVALID, 0, 1, 1, nullptr, 0, &t), 0);
  EXPECT_EQ(t, SHMEM_TEAM_INVALID);
  EXPECT_NE(shmem_team_split_2d(SHMEM_TEAM_WORLD, 0, nullptr, 0, &t, nullptr, 0, &u), 0);
  EXPECT_EQ(t, SHMEM_TEAM_INVALID);
  EXPECT_EQ(u, SHMEM_TEAM_INVALID);
  shmem_team_destroy(SHMEM_TEAM_INVALID);  // no-op
  shmem_barrier_all();
}

TEST(Team, TooManyTeamsThenReuse) {
  // Fill every free slot, check the next split fails on every PE, free them, and check the
  // slots come back.
  const int max = shmemx_team_max_teams();
  std::vector<shmem_team_t> made;
  for (int round = 0; round < 2; ++round) {
    made.clear();
    for (;;) {
      shmem_team_t t = SHMEM_TEAM_INVALID;
      int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes(), nullptr, 0, &t);
      if (rc != 0) {
        EXPECT_EQ(t, SHMEM_TEAM_INVALID);
        break;
      }
      ASSERT_NE(t, SHMEM_TEAM_INVALID);
      made.push_back(t);
      ASSERT_LE(int(made.size()), max);
    }
    EXPECT_EQ(int(made.size()), max - 2) << "round " << round;  // the world and shared teams hold two
    for (auto t : made) shmem_team_destroy(t);
  }
  shmem_barrier_all();
}

TEST(Team, CreateDestroyLoopDoesNotLeak) {
  const int n = npes();
  for (int i = 0; i < 1000; ++i) {
    shmem_team_t t = SHMEM_TEAM_INVALID;
    ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, i % n, 1, n - i % n, nullptr, 0, &t), 0) << "iteration " << i;
    if (t != SHMEM_TEAM_INVALID) {
      EXPECT_EQ(shmem_team_my_pe(t), me() - i % n);
      EXPECT_EQ(shmem_team_sync(t), 0);
    }
    shmem_team_destroy(t);
  }
  // Every slot is free again: as many teams as before fit.
  std::vector<shmem_team_t> made;
  shmem_team_t t = SHMEM_TEAM_INVALID;
  while (shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, nullptr, 0, &t) == 0) made.push_back(t);
  EXPECT_EQ(int(made.size()), shmemx_team_max_teams() - 2);
  for (auto m : made) shmem_team_destroy(m);
  shmem_barrier_all();
}

}  // namespace

namespace {

TEST(Team, ContextsOnTeams) {
  const int n = npes();
  long* box = static_cast<long*>(shmem_calloc(size_t(n), sizeof(long)));
  shmem_barrier_all();
  shmem_team_t rev = SHMEM_TEAM_INVALID;
  ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, nullptr, 0, &rev), 0);
  shmem_ctx_t ctx = SHMEM_CTX_INVALID;
  ASSERT_EQ(shmem_team_create_ctx(rev, 0, &ctx), 0);
  ASSERT_NE(ctx, SHMEM_CTX_INVALID);
  shmem_team_t back = SHMEM_TEAM_INVALID;
  EXPECT_EQ(shmem_ctx_get_team(ctx, &back), 0);
  EXPECT_EQ(back, rev);
  // The context numbers PEs within the reversed team: its PE 0 is world PE n-1, where
  // every PE leaves its number.
  long mine = me() + 1;
  shmem_ctx_putmem(ctx, &box[me()], &mine, sizeof(long), 0);
  shmem_ctx_quiet(ctx);
  shmem_barrier_all();
  if (me() == n - 1) {
    for (int p = 0; p < n; ++p) EXPECT_EQ(box[p], p + 1) << "from PE " << p;
  }
  shmem_ctx_destroy(ctx);
  // Predefined and default contexts.
  ASSERT_EQ(shmem_team_create_ctx(SHMEM_TEAM_WORLD, 0, &ctx), 0);
  EXPECT_EQ(shmem_ctx_get_team(ctx, &back), 0);
  EXPECT_EQ(back, SHMEM_TEAM_WORLD);
  shmem_ctx_destroy(ctx);
  EXPECT_EQ(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &back), 0);
  EXPECT_EQ(back, SHMEM_TEAM_WORLD);
  ASSERT_EQ(shmem_ctx_create(0, &ctx), 0);
  EXPECT_EQ(shmem_ctx_get_team(ctx, &back), 0);
  EXPECT_EQ(back, SHMEM_TEAM_WORLD);
  shmem_ctx_destroy(ctx);
  EXPECT_NE(shmem_ctx_get_team(SHMEM_CTX_INVALID, &back), 0);
  EXPECT_EQ(back, SHMEM_TEAM_INVALID);
  ctx = SHMEM_CTX_DEFAULT;
  EXPECT_NE(shmem_team_create_ctx(SHMEM_TEAM_INVALID, 0, &ctx), 0);
  EXPECT_EQ(ctx, SHMEM_CTX_INVALID);
  shmem_team_destroy(rev);
  shmem_free(box);
}

}  // namespace
