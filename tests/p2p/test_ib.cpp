// Interleaved block transfers (shmem_ibput / shmem_ibget, OpenSHMEM 1.6): typed forms of
// every RMA type, sized forms of every size, default and created contexts, over several
// block sizes and strides. Each PE puts to its right neighbour; the whole destination
// buffer (gaps and a tail past the last block included) is compared with a model, so a
// block written too long or to the wrong place is caught.
#include <functional>
#include <string>
#include <vector>

#include "p2p_test.hpp"

using namespace p2pt;

namespace {

unsigned char byte(int pe, size_t i) { return static_cast<unsigned char>(pe * 71 + i * 13 + 3); }

// (bsize, nblocks, dst, sst) in elements.
struct Shape {
  size_t bsize, nblocks;
  ptrdiff_t dst, sst;
};
const Shape kShapes[] = {
    {1, 7, 1, 1},  // contiguous
    {1, 5, 3, 2},  // = iput
    {3, 4, 5, 3},  // dense source, gaps at the destination
    {4, 3, 4, 7},  // gaps at the source, dense destination
    {2, 6, 9, 2},
    {7, 1, 7, 7},  // one block
    {5, 0, 5, 5},  // no block
    {0, 3, 2, 2},  // empty blocks
};

// Element size `s`; `put` / `get` wrap one typed or sized routine (with or without ctx).
using Xfer = std::function<void(void* d, const void* s, ptrdiff_t dst, ptrdiff_t sst, size_t bs, size_t nb, int pe)>;

size_t extent(size_t bsize, size_t nblocks, ptrdiff_t stride) {
  return nblocks && bsize ? (nblocks - 1) * size_t(stride) + bsize : 0;
}

void check_shape(const char* name, size_t s, const Xfer& put, const Xfer& get, const Shape& sh) {
  SCOPED_TRACE(std::string(name) + " bsize " + std::to_string(sh.bsize) + " nblocks " + std::to_string(sh.nblocks) +
               " dst " + std::to_string(sh.dst) + " sst " + std::to_string(sh.sst));
  const size_t tail = 3;  // elements past the last block that must stay 0
  const size_t dn = extent(sh.bsize, sh.nblocks, sh.dst) + tail;
  const size_t sn = extent(sh.bsize, sh.nblocks, sh.sst) + tail;
  unsigned char* buf = zalloc<unsigned char>(dn * s);
  std::vector<unsigned char> src(sn * s), back(sn * s, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = byte(me(), i);
  put(buf, src.data(), sh.dst, sh.sst, sh.bsize, sh.nblocks, right());
  shmem_barrier_all();
  // Model of my buffer: my left neighbour's source, block b at b*dst.
  std::vector<unsigned char> want(dn * s, 0);
  for (size_t b = 0; b < sh.nblocks; ++b)
    for (size_t e = 0; e < sh.bsize; ++e)
      for (size_t k = 0; k < s; ++k)
        want[(b * sh.dst + e) * s + k] = byte(left(), (b * sh.sst + e) * s + k);
  EXPECT_EQ(std::memcmp(buf, want.data(), dn * s), 0) << "ibput";
  // The reverse geometry brings my blocks back from my right neighbour to where they were
  // in my source; everything between them stays 0.
  get(back.data(), buf, sh.sst, sh.dst, sh.bsize, sh.nblocks, right());
  std::vector<unsigned char> want_back(sn * s, 0);
  for (size_t b = 0; b < sh.nblocks; ++b)
    for (size_t e = 0; e < sh.bsize; ++e)
      for (size_t k = 0; k < s; ++k) {
        size_t i = (b * sh.sst + e) * s + k;
        want_back[i] = src[i];
      }
  EXPECT_EQ(std::memcmp(back.data(), want_back.data(), sn * s), 0) << "ibget";
  shmem_barrier_all();
  shmem_free(buf);
}

void check_all_shapes(const char* name, size_t s, const Xfer& put, const Xfer& get) {
  for (const Shape& sh : kShapes) check_shape(name, s, put, get, sh);
}

template <class T>
Xfer typed(void (*f)(T*, const T*, ptrdiff_t, ptrdiff_t, size_t, size_t, int)) {
  return [f](void* d, const void* s, ptrdiff_t dst, ptrdiff_t sst, size_t bs, size_t nb, int pe) {
    f(static_cast<T*>(d), static_cast<const T*>(s), dst, sst, bs, nb, pe);
  };
}
template <class T>
Xfer typed_ctx(void (*f)(shmem_ctx_t, T*, const T*, ptrdiff_t, ptrdiff_t, size_t, size_t, int), shmem_ctx_t c) {
  return [f, c](void* d, const void* s, ptrdiff_t dst, ptrdiff_t sst, size_t bs, size_t nb, int pe) {
    f(c, static_cast<T*>(d), static_cast<const T*>(s), dst, sst, bs, nb, pe);
  };
}
Xfer sized(void (*f)(void*, const void*, ptrdiff_t, ptrdiff_t, size_t, size_t, int)) { return f; }
Xfer sized_ctx(void (*f)(shmem_ctx_t, void*, const void*, ptrdiff_t, ptrdiff_t, size_t, size_t, int),
               shmem_ctx_t c) {
  return [f, c](void* d, const void* s, ptrdiff_t dst, ptrdiff_t sst, size_t bs, size_t nb, int pe) {
    f(c, d, s, dst, sst, bs, nb, pe);
  };
}

}  // namespace

TEST(Ib, TypedEveryType) {
  shmem_ctx_t ctx = SHMEM_CTX_INVALID;
  ASSERT_EQ(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx), 0);
#define RUN(T, N)                                                                                          \
  check_all_shapes(#N, sizeof(T), typed<T>(shmem_##N##_ibput), typed<T>(shmem_##N##_ibget));               \
  check_all_shapes(#N " ctx", sizeof(T), typed_ctx<T>(shmem_ctx_##N##_ibput, ctx),                          \
                   typed_ctx<T>(shmem_ctx_##N##_ibget, ctx));                                               \
  check_all_shapes(#N " default ctx", sizeof(T), typed_ctx<T>(shmem_ctx_##N##_ibput, SHMEM_CTX_DEFAULT),    \
                   typed_ctx<T>(shmem_ctx_##N##_ibget, SHMEM_CTX_DEFAULT));
  SHMEM_RMA_TYPES(RUN)
#undef RUN
  shmem_ctx_destroy(ctx);
}

TEST(Ib, SizedEverySize) {
  shmem_ctx_t ctx = SHMEM_CTX_INVALID;
  ASSERT_EQ(shmem_ctx_create(0, &ctx), 0);
#define RUN(BITS, BYTES)                                                                                   \
  check_all_shapes(#BITS, BYTES, sized(shmem_ibput##BITS), sized(shmem_ibget##BITS));                       \
  check_all_shapes(#BITS " ctx", BYTES, sized_ctx(shmem_ctx_ibput##BITS, ctx), sized_ctx(shmem_ctx_ibget##BITS, ctx));
  SHMEM_RMA_SIZES(RUN)
#undef RUN
  shmem_ctx_destroy(ctx);
}

// The C++ overloads of the generic names pick the typed routine.
TEST(Ib, GenericOverloads) {
  const size_t n = 12;
  double* buf = zalloc<double>(n);
  double src[n];
  for (size_t i = 0; i < n; ++i) src[i] = me() * 100.0 + i;
  shmem_ibput(buf, src, 4, 3, 2, 3, right());  // blocks {0,1},{3,4},{6,7} -> {0,1},{4,5},{8,9}
  shmem_barrier_all();
  for (size_t i = 0; i < n; ++i) {
    double want = (i % 4 < 2 && i < 10) ? left() * 100.0 + (i / 4) * 3 + i % 4 : 0.0;
    EXPECT_EQ(buf[i], want) << "element " << i;
  }
  double back[n] = {};
  shmem_ibget(SHMEM_CTX_DEFAULT, back, buf, 3, 4, 2, 3, right());
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(back[i], (i % 3 < 2) ? src[i] : 0.0) << "element " << i;
  shmem_barrier_all();
  shmem_free(buf);
}
