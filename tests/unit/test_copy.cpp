// The on-node route's bulk copy (transport/shm/shm_ops.hpp): the non-temporal path must
// copy exactly the bytes asked for, whatever the alignment of either side and the length
// (head before the first 16-byte aligned store, 64-byte body, tail), and nothing more.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "transport/shm/shm_ops.hpp"

namespace {

TEST(StreamCopy, EveryAlignmentAndLength) {
  std::vector<unsigned char> src(1024 + 64), dst(1024 + 128);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + 3);
  for (size_t so = 0; so < 17; ++so)
    for (size_t dof = 0; dof < 17; ++dof)
      for (size_t n : {size_t(0), size_t(1), size_t(15), size_t(16), size_t(17), size_t(63), size_t(64),
                       size_t(65), size_t(127), size_t(200), size_t(1000)}) {
        std::fill(dst.begin(), dst.end(), 0xEE);
        symmem::shm::stream_copy(dst.data() + 32 + dof, src.data() + so, n);
        for (size_t i = 0; i < dst.size(); ++i) {
          const bool inside = i >= 32 + dof && i < 32 + dof + n;
          const unsigned expect = inside ? src[so + i - 32 - dof] : 0xEE;
          ASSERT_EQ(dst[i], expect) << "src offset " << so << ", dst offset " << dof << ", n " << n << ", byte " << i;
        }
      }
}

TEST(StreamCopy, CopyChoosesByThreshold) {
  std::vector<uint64_t> src(1 << 16), dst(1 << 16, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = i * 0x9E3779B97F4A7C15ull;
  const size_t saved = symmem::shm::stream_copy_min;
  for (size_t threshold : {size_t(SIZE_MAX), size_t(4096), size_t(1)}) {
    symmem::shm::stream_copy_min = threshold;
    std::fill(dst.begin(), dst.end(), 0);
    symmem::shm::copy(dst.data() + 1, src.data(), (src.size() - 1) * 8);
    EXPECT_EQ(dst[0], 0u);
    for (size_t i = 1; i < dst.size(); ++i) ASSERT_EQ(dst[i], src[i - 1]) << "threshold " << threshold << ", word " << i;
  }
  symmem::shm::stream_copy_min = saved;
}

}  // namespace
