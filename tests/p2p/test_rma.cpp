// Context, strided and sized forms of RMA, for every type of the RMA table, on the
// default context and on a created one.
#include <vector>

#include "p2p_test.hpp"

using namespace p2pt;

namespace {

template <class T>
T val(int pe, size_t i) {
  return static_cast<T>((pe * 37 + i * 11 + 5) % 100);
}

template <class T>
struct CtxRma {
  void (*put)(shmem_ctx_t, T*, const T*, size_t, int);
  void (*get)(shmem_ctx_t, T*, const T*, size_t, int);
  void (*put_nbi)(shmem_ctx_t, T*, const T*, size_t, int);
  void (*get_nbi)(shmem_ctx_t, T*, const T*, size_t, int);
  void (*p)(shmem_ctx_t, T*, T, int);
  T (*g)(shmem_ctx_t, const T*, int);
  void (*iput)(T*, const T*, ptrdiff_t, ptrdiff_t, size_t, int);
  void (*iget)(T*, const T*, ptrdiff_t, ptrdiff_t, size_t, int);
  void (*ctx_iput)(shmem_ctx_t, T*, const T*, ptrdiff_t, ptrdiff_t, size_t, int);
  void (*ctx_iget)(shmem_ctx_t, T*, const T*, ptrdiff_t, ptrdiff_t, size_t, int);
};

template <class T>
void check_ctx_rma(const char* name, const CtxRma<T>& f, shmem_ctx_t ctx) {
  SCOPED_TRACE(name);
  const size_t n = 37;
  T* buf = zalloc<T>(2 * n + 1);
  std::vector<T> src(2 * n + 1), back(2 * n + 1);
  for (size_t i = 0; i < src.size(); ++i) src[i] = val<T>(me(), i);
  f.put(ctx, buf, src.data(), n, right());
  f.put_nbi(ctx, buf + n, src.data() + n, n, right());
  f.p(ctx, buf + 2 * n, src[2 * n], right());
  shmem_ctx_quiet(ctx);
  shmem_barrier_all();
  for (size_t i = 0; i <= 2 * n; ++i) EXPECT_TRUE(buf[i] == val<T>(left(), i)) << "element " << i;
  // My right neighbour's buffer holds my values: get them back.
  f.get(ctx, back.data(), buf, n, right());
  f.get_nbi(ctx, back.data() + n, buf + n, n, right());
  shmem_ctx_quiet(ctx);
  back[2 * n] = f.g(ctx, buf + 2 * n, right());
  for (size_t i = 0; i <= 2 * n; ++i) EXPECT_TRUE(back[i] == src[i]) << "got back element " << i;
  shmem_barrier_all();
  shmem_free(buf);
}

// Strided: every 2nd source element to every 3rd destination element, and back.
template <class T>
void check_strided(const char* name, const CtxRma<T>& f, shmem_ctx_t ctx, bool use_ctx) {
  SCOPED_TRACE(name);
  const size_t n = 10;
  T* buf = zalloc<T>(3 * n);
  std::vector<T> src(2 * n), back(2 * n, T(0));
  for (size_t i = 0; i < src.size(); ++i) src[i] = val<T>(me(), i);
  if (use_ctx) f.ctx_iput(ctx, buf, src.data(), 3, 2, n, right());
  else f.iput(buf, src.data(), 3, 2, n, right());
  shmem_barrier_all();
  for (size_t i = 0; i < 3 * n; ++i) {
    T want = i % 3 == 0 ? val<T>(left(), (i / 3) * 2) : T(0);
    EXPECT_TRUE(buf[i] == want) << "element " << i;
  }
  if (use_ctx) f.ctx_iget(ctx, back.data(), buf, 2, 3, n, right());
  else f.iget(back.data(), buf, 2, 3, n, right());
  for (size_t i = 0; i < 2 * n; ++i) {
    T want = i % 2 == 0 ? val<T>(me(), i) : T(0);
    EXPECT_TRUE(back[i] == want) << "iget element " << i;
  }
  shmem_barrier_all();
  shmem_free(buf);
}

#define CTX_RMA(T, N)                                                                                       \
  CtxRma<T>{shmem_ctx_##N##_put, shmem_ctx_##N##_get, shmem_ctx_##N##_put_nbi, shmem_ctx_##N##_get_nbi,     \
            shmem_ctx_##N##_p,   shmem_ctx_##N##_g,   shmem_##N##_iput,        shmem_##N##_iget,            \
            shmem_ctx_##N##_iput, shmem_ctx_##N##_iget}

TEST(Rma, ContextFormsEveryType) {
  shmem_ctx_t ctx = SHMEM_CTX_INVALID;
  ASSERT_EQ(shmem_ctx_create(0, &ctx), 0);
  for (shmem_ctx_t c : {SHMEM_CTX_DEFAULT, ctx}) {
#define RUN(T, N) check_ctx_rma<T>(#N, CTX_RMA(T, N), c);
    SHMEM_RMA_TYPES(RUN)
#undef RUN
  }
  shmem_ctx_destroy(ctx);
}

TEST(Rma, StridedEveryType) {
  shmem_ctx_t ctx = SHMEM_CTX_INVALID;
  ASSERT_EQ(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx), 0);
#define RUN(T, N)                                     \
  check_strided<T>(#N, CTX_RMA(T, N), ctx, false);    \
  check_strided<T>(#N " ctx", CTX_RMA(T, N), ctx, true);
  SHMEM_RMA_TYPES(RUN)
#undef RUN
  shmem_ctx_destroy(ctx);
}

// The sized forms move elements of BYTES bytes, whatever their type.
struct SizedFns {
  size_t bytes;
  void (*ctx_put)(shmem_ctx_t, void*, const void*, size_t, int);
  void (*ctx_get)(shmem_ctx_t, void*, const void*, size_t, int);
  void (*ctx_put_nbi)(shmem_ctx_t, void*, const void*, size_t, int);
  void (*ctx_get_nbi)(shmem_ctx_t, void*, const void*, size_t, int);
  void (*iput)(void*, const void*, ptrdiff_t, ptrdiff_t, size_t, int);
  void (*iget)(void*, const void*, ptrdiff_t, ptrdiff_t, size_t, int);
  void (*ctx_iput)(shmem_ctx_t, void*, const void*, ptrdiff_t, ptrdiff_t, size_t, int);
  void (*ctx_iget)(shmem_ctx_t, void*, const void*, ptrdiff_t, ptrdiff_t, size_t, int);
};

unsigned char byte(int pe, size_t i) { return static_cast<unsigned char>(pe * 59 + i * 7 + 1); }

void check_sized(const SizedFns& f, shmem_ctx_t ctx) {
  SCOPED_TRACE(std::to_string(f.bytes * 8) + "-bit");
  const size_t n = 9, s = f.bytes;
  unsigned char* buf = zalloc<unsigned char>(3 * n * s);
  std::vector<unsigned char> src(3 * n * s), back(3 * n * s, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = byte(me(), i);
  // Contiguous: n elements blocking, n elements nbi.
  f.ctx_put(ctx, buf, src.data(), n, right());
  f.ctx_put_nbi(ctx, buf + n * s, src.data() + n * s, n, right());
  shmem_ctx_quiet(ctx);
  shmem_barrier_all();
  bool ok = true;
  for (size_t i = 0; i < 2 * n * s && ok; ++i) ok = buf[i] == byte(left(), i);
  EXPECT_TRUE(ok) << "ctx put";
  f.ctx_get(ctx, back.data(), buf, n, right());
  f.ctx_get_nbi(ctx, back.data() + n * s, buf + n * s, n, right());
  shmem_ctx_quiet(ctx);
  EXPECT_EQ(std::memcmp(back.data(), src.data(), 2 * n * s), 0) << "ctx get";
  shmem_barrier_all();
  // Strided, default and context forms: element i of the source (stride 1) lands at
  // destination element 3i (stride 3); the iget brings every 3rd element back densely.
  std::memset(buf, 0, 3 * n * s);
  shmem_barrier_all();
  f.iput(buf, src.data(), 3, 1, n, right());
  shmem_barrier_all();
  ok = true;
  for (size_t e = 0; e < 3 * n && ok; ++e)
    for (size_t b = 0; b < s && ok; ++b)
      ok = buf[e * s + b] == (e % 3 == 0 ? byte(left(), (e / 3) * s + b) : 0);
  EXPECT_TRUE(ok) << "iput";
  std::fill(back.begin(), back.end(), 0);
  f.ctx_iget(ctx, back.data(), buf, 1, 3, n, right());
  EXPECT_EQ(std::memcmp(back.data(), src.data(), n * s), 0) << "ctx iget";
  shmem_barrier_all();
  std::memset(buf, 0, 3 * n * s);
  shmem_barrier_all();
  f.ctx_iput(ctx, buf, src.data(), 1, 2, n, right());  // every 2nd source element, densely
  shmem_barrier_all();
  ok = true;
  for (size_t e = 0; e < n && ok; ++e)
    for (size_t b = 0; b < s && ok; ++b) ok = buf[e * s + b] == byte(left(), 2 * e * s + b);
  EXPECT_TRUE(ok) << "ctx iput";
  std::fill(back.begin(), back.end(), 0);
  f.iget(back.data(), buf, 2, 1, n, right());  // back to every 2nd element
  ok = true;
  for (size_t e = 0; e < 2 * n && ok; ++e)
    for (size_t b = 0; b < s && ok; ++b) ok = back[e * s + b] == (e % 2 == 0 ? src[e * s + b] : 0);
  EXPECT_TRUE(ok) << "iget";
  shmem_barrier_all();
  shmem_free(buf);
}

TEST(Rma, SizedFormsEverySize) {
  shmem_ctx_t ctx = SHMEM_CTX_INVALID;
  ASSERT_EQ(shmem_ctx_create(SHMEM_CTX_SERIALIZED, &ctx), 0);
  for (shmem_ctx_t c : {SHMEM_CTX_DEFAULT, ctx}) {
#define RUN(BITS, BYTES)                                                                                       \
  check_sized(SizedFns{BYTES, shmem_ctx_put##BITS, shmem_ctx_get##BITS, shmem_ctx_put##BITS##_nbi,             \
                       shmem_ctx_get##BITS##_nbi, shmem_iput##BITS, shmem_iget##BITS, shmem_ctx_iput##BITS,    \
                       shmem_ctx_iget##BITS},                                                                  \
              c);
    SHMEM_RMA_SIZES(RUN)
#undef RUN
  }
  shmem_ctx_destroy(ctx);
}

TEST(Rma, ContextMemForms) {
  shmem_ctx_t ctx = SHMEM_CTX_INVALID;
  ASSERT_EQ(shmem_ctx_create(SHMEM_CTX_PRIVATE | SHMEM_CTX_SERIALIZED, &ctx), 0);
  const size_t n = 100000;  // spans several pages; odd size
  char* buf = zalloc<char>(2 * n);
  std::vector<char> src(2 * n), back(2 * n);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<char>(byte(me(), i));
  shmem_ctx_putmem(ctx, buf, src.data(), n, right());
  shmem_ctx_putmem_nbi(ctx, buf + n, src.data() + n, n, right());
  shmem_ctx_quiet(ctx);
  shmem_ctx_getmem(ctx, back.data(), buf, n, right());
  shmem_ctx_getmem_nbi(SHMEM_CTX_DEFAULT, back.data() + n, buf + n, n, right());
  shmem_quiet();
  EXPECT_EQ(std::memcmp(back.data(), src.data(), 2 * n), 0);
  shmem_barrier_all();
  shmem_ctx_destroy(ctx);
  shmem_free(buf);
}

// The C++ overloads select the typed routines, context forms included.
TEST(Rma, CxxOverloads) {
  long* l = zalloc<long>(4);
  double* d = zalloc<double>(4);
  long ls[2] = {me() + 10L, me() + 20L};
  shmem_put(SHMEM_CTX_DEFAULT, l, ls, 2, right());
  shmem_p(SHMEM_CTX_DEFAULT, d, 0.25 * me(), right());
  shmem_iput(l + 2, ls, 1, 1, 2, right());
  shmem_barrier_all();
  EXPECT_EQ(l[0], left() + 10L);
  EXPECT_EQ(l[3], left() + 20L);
  EXPECT_EQ(d[0], 0.25 * left());
  EXPECT_EQ(shmem_g(SHMEM_CTX_DEFAULT, l + 1, right()), me() + 20L);
  shmem_barrier_all();
  shmem_free(d);
  shmem_free(l);
}

}  // namespace
