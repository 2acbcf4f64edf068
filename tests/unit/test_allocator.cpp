// Unit tests of the symmetric heap allocator.
//
// Besides targeted cases, a reference model (a plain list of live blocks, best fit done by
// scanning the gaps between them) predicts every offset the allocator must return; the
// stress tests compare the two and check the invariants after every step.
#include "heap/allocator.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <vector>

namespace symmem {
namespace {

constexpr uint64_t KiB = 1024;
constexpr uint64_t MiB = 1024 * KiB;

uint64_t round64(uint64_t x) { return (x + 63) / 64 * 64; }

// The allocator's contract, written the slow and obvious way.
class Model {
 public:
  explicit Model(uint64_t capacity) : capacity_(capacity) {}

  struct Gap {
    uint64_t off, size;
  };
  std::vector<Gap> gaps() const {
    std::vector<Gap> g;
    uint64_t pos = 0;
    for (const auto& [off, size] : live_) {
      if (off > pos) g.push_back({pos, off - pos});
      pos = off + size;
    }
    if (capacity_ > pos) g.push_back({pos, capacity_ - pos});
    return g;
  }

  std::optional<uint64_t> alloc(uint64_t size, uint64_t align = 64) {
    align = std::max<uint64_t>(align, 64);
    const uint64_t r = round64(size);
    std::optional<Gap> best;
    uint64_t best_start = 0;
    for (const Gap& g : gaps()) {
      const uint64_t start = (g.off + align - 1) / align * align;
      if (start - g.off > g.size || g.size - (start - g.off) < r) continue;
      if (!best || g.size < best->size) {  // gaps() is in offset order: ties keep the lowest
        best = g;
        best_start = start;
      }
    }
    if (!best) return std::nullopt;
    live_[best_start] = r;
    return best_start;
  }

  bool free(uint64_t off) { return live_.erase(off) == 1; }

  std::optional<Allocator::Realloc> realloc(uint64_t off, uint64_t new_size) {
    auto it = live_.find(off);
    if (it == live_.end()) return std::nullopt;
    const uint64_t old = it->second;
    const uint64_t r = round64(new_size);
    if (r <= old) {
      it->second = r;
      return Allocator::Realloc{off, false, old};
    }
    auto next = std::next(it);
    const uint64_t room = (next == live_.end() ? capacity_ : next->first) - off;
    if (room >= r) {
      it->second = r;
      return Allocator::Realloc{off, false, old};
    }
    auto moved = alloc(new_size);
    if (!moved) return std::nullopt;
    live_.erase(off);
    return Allocator::Realloc{*moved, true, old};
  }

  const std::map<uint64_t, uint64_t>& live() const { return live_; }

 private:
  uint64_t capacity_;
  std::map<uint64_t, uint64_t> live_;
};

// Everything observable about `a` must agree with `m`: same live blocks, no overlap, one
// free block per maximal gap (so no two free blocks are adjacent), free + used == capacity.
void expect_consistent(const Allocator& a, const Model& m) {
  uint64_t used = 0;
  uint64_t prev_end = 0;
  for (const auto& [off, size] : m.live()) {
    ASSERT_GE(off, prev_end) << "blocks overlap at " << off;
    ASSERT_EQ(a.block_size(off), size) << "block at " << off;
    ASSERT_EQ(off % 64, 0u);
    used += size;
    prev_end = off + size;
  }
  ASSERT_LE(prev_end, a.capacity());
  ASSERT_EQ(a.live_block_count(), m.live().size());
  ASSERT_EQ(a.bytes_in_use(), used);
  ASSERT_EQ(a.extent(), prev_end);
  const auto gaps = m.gaps();
  uint64_t free_total = 0, largest = 0;
  for (const auto& g : gaps) {
    free_total += g.size;
    largest = std::max(largest, g.size);
  }
  ASSERT_EQ(free_total + used, a.capacity());
  ASSERT_EQ(a.free_block_count(), gaps.size()) << "free blocks not coalesced";
  ASSERT_EQ(a.largest_free(), largest);
}

TEST(Allocator, FreshAllocatorIsOneFreeBlock) {
  Allocator a(1 * MiB);
  EXPECT_EQ(a.capacity(), 1 * MiB);
  EXPECT_EQ(a.free_block_count(), 1u);
  EXPECT_EQ(a.largest_free(), 1 * MiB);
  EXPECT_EQ(a.bytes_in_use(), 0u);
  EXPECT_EQ(a.extent(), 0u);
  EXPECT_EQ(a.live_block_count(), 0u);
}

TEST(Allocator, RejectsZeroSizeAndBadAlignment) {
  Allocator a(1 * MiB);
  EXPECT_FALSE(a.alloc(0));
  EXPECT_FALSE(a.alloc(64, 0));
  EXPECT_FALSE(a.alloc(64, 96));
  EXPECT_FALSE(a.alloc(UINT64_MAX));
  EXPECT_EQ(a.free_block_count(), 1u);
  EXPECT_EQ(a.bytes_in_use(), 0u);
}

TEST(Allocator, SizesRoundUpTo64) {
  Allocator a(1 * MiB);
  auto p = a.alloc(1);
  auto q = a.alloc(65);
  auto r = a.alloc(128);
  ASSERT_TRUE(p && q && r);
  EXPECT_EQ(*p, 0u);
  EXPECT_EQ(a.block_size(*p), 64u);
  EXPECT_EQ(*q, 64u);
  EXPECT_EQ(a.block_size(*q), 128u);
  EXPECT_EQ(*r, 192u);
  EXPECT_EQ(a.bytes_in_use(), 320u);
}

TEST(Allocator, EveryBlockIsAlignedToDefault) {
  Allocator a(16 * MiB);
  std::mt19937_64 rng(1);
  for (int i = 0; i < 500; ++i) {
    auto p = a.alloc(1 + rng() % 5000);
    ASSERT_TRUE(p);
    EXPECT_EQ(*p % 64, 0u) << "size request " << i;
  }
}

TEST(Allocator, LargeAlignments) {
  for (uint64_t align : {uint64_t{4096}, uint64_t{1 * MiB}}) {
    Allocator a(64 * MiB);
    Model m(64 * MiB);
    for (int i = 0; i < 20; ++i) {
      // A small default-aligned block first puts every next free block off alignment.
      ASSERT_EQ(a.alloc(100), m.alloc(100));
      auto p = a.alloc(1000 + i, align);
      ASSERT_TRUE(p) << "align " << align << " step " << i;
      EXPECT_EQ(*p % align, 0u);
      EXPECT_EQ(p, m.alloc(1000 + i, align));
      expect_consistent(a, m);
    }
  }
}

TEST(Allocator, AlignmentGapIsLeftFreeAndReused) {
  Allocator a(1 * MiB);
  ASSERT_EQ(a.alloc(64), 0u);
  auto p = a.alloc(64, 4096);
  ASSERT_EQ(p, 4096u);
  // [64, 4096) is a free block now; a small request takes it (best fit).
  EXPECT_EQ(a.free_block_count(), 2u);
  EXPECT_EQ(a.alloc(64), 64u);
  EXPECT_TRUE(a.free(4096).ok());
  EXPECT_EQ(a.extent(), 128u);
}

TEST(Allocator, AlignmentLargerThanCapacityStillFitsAtZero) {
  Allocator a(4096);
  EXPECT_EQ(a.alloc(64, 1 * MiB), 0u);
  EXPECT_FALSE(a.alloc(64, 1 * MiB));  // 1 MiB is past the end
}

TEST(Allocator, ExhaustionThenFreeSucceeds) {
  Allocator a(64 * KiB);
  std::vector<uint64_t> blocks;
  while (auto p = a.alloc(4 * KiB)) blocks.push_back(*p);
  EXPECT_EQ(blocks.size(), 16u);
  EXPECT_EQ(a.bytes_in_use(), 64 * KiB);
  EXPECT_EQ(a.free_block_count(), 0u);
  EXPECT_EQ(a.largest_free(), 0u);
  EXPECT_FALSE(a.alloc(1));
  ASSERT_TRUE(a.free(blocks[5]).ok());
  EXPECT_FALSE(a.alloc(4 * KiB + 1));
  EXPECT_EQ(a.alloc(4 * KiB), blocks[5]);
}

TEST(Allocator, CapacityNotAMultipleOf64) {
  Allocator a(1000);
  EXPECT_EQ(a.alloc(960), 0u);
  EXPECT_FALSE(a.alloc(1));  // 40 bytes left, less than one 64-byte unit
  EXPECT_EQ(a.largest_free(), 40u);
  ASSERT_TRUE(a.free(0).ok());
  EXPECT_EQ(a.free_block_count(), 1u);
  EXPECT_EQ(a.largest_free(), 1000u);
}

TEST(Allocator, Fragmentation) {
  // 1000 blocks of varied sizes that fill the heap exactly.
  std::mt19937_64 rng(42);
  std::vector<uint64_t> sizes;
  uint64_t cap = 0;
  for (int i = 0; i < 1000; ++i) {
    sizes.push_back(64 + rng() % (32 * KiB));
    cap += round64(sizes.back());
  }
  Allocator a(cap);
  std::vector<uint64_t> blocks;
  for (uint64_t s : sizes) {
    auto p = a.alloc(s);
    ASSERT_TRUE(p);
    blocks.push_back(*p);
  }
  EXPECT_EQ(a.extent(), cap);
  EXPECT_EQ(a.free_block_count(), 0u);

  uint64_t biggest_hole = 0;
  for (size_t i = 0; i < blocks.size(); i += 2) {
    biggest_hole = std::max(biggest_hole, a.block_size(blocks[i]));
    ASSERT_TRUE(a.free(blocks[i]).ok());
  }
  // Every other block free: 500 holes, none merged, about half the heap free in total,
  // yet nothing bigger than the largest hole fits.
  EXPECT_EQ(a.free_block_count(), 500u);
  EXPECT_EQ(a.largest_free(), biggest_hole);
  EXPECT_GT(cap - a.bytes_in_use(), 100 * biggest_hole);
  EXPECT_FALSE(a.alloc(biggest_hole + 1));
  EXPECT_FALSE(a.alloc(64 * KiB));
  // Small requests reuse the holes.
  int small = 0;
  while (a.alloc(64 + small % 512)) ++small;
  EXPECT_GT(small, 1000);
  EXPECT_EQ(a.extent(), cap);

  // Free everything: exactly one free block, the whole heap.
  for (uint64_t off = 0; off < cap; off += 64) {
    if (a.block_size(off) != 0) {
      ASSERT_TRUE(a.free(off).ok());
    }
  }
  EXPECT_EQ(a.live_block_count(), 0u);
  EXPECT_EQ(a.free_block_count(), 1u);
  EXPECT_EQ(a.largest_free(), cap);
  EXPECT_EQ(a.bytes_in_use(), 0u);
  EXPECT_EQ(a.extent(), 0u);
  EXPECT_EQ(a.alloc(cap), 0u);
}

class Coalesce : public ::testing::Test {
 protected:
  // Five 1 KiB blocks A..E, then the rest of the heap free.
  void SetUp() override {
    for (auto& b : blk) b = *a.alloc(1 * KiB);
  }
  Allocator a{16 * KiB};
  uint64_t blk[5];
};

TEST_F(Coalesce, WithLeftNeighbour) {
  ASSERT_TRUE(a.free(blk[1]).ok());
  ASSERT_TRUE(a.free(blk[2]).ok());
  EXPECT_EQ(a.free_block_count(), 2u);  // B+C, and the tail
  EXPECT_EQ(a.alloc(2 * KiB), blk[1]);
}

TEST_F(Coalesce, WithRightNeighbour) {
  ASSERT_TRUE(a.free(blk[2]).ok());
  ASSERT_TRUE(a.free(blk[1]).ok());
  EXPECT_EQ(a.free_block_count(), 2u);
  EXPECT_EQ(a.alloc(2 * KiB), blk[1]);
}

TEST_F(Coalesce, WithBothNeighbours) {
  ASSERT_TRUE(a.free(blk[1]).ok());
  ASSERT_TRUE(a.free(blk[3]).ok());
  EXPECT_EQ(a.free_block_count(), 3u);
  ASSERT_TRUE(a.free(blk[2]).ok());
  EXPECT_EQ(a.free_block_count(), 2u);
  EXPECT_EQ(a.largest_free(), 11 * KiB);  // the tail is still bigger than B+C+D
  EXPECT_EQ(a.alloc(3 * KiB), blk[1]);     // best fit: the 3 KiB hole, not the tail
}

TEST_F(Coalesce, WithTheTail) {
  ASSERT_TRUE(a.free(blk[4]).ok());
  EXPECT_EQ(a.free_block_count(), 1u);
  EXPECT_EQ(a.largest_free(), 12 * KiB);
  ASSERT_TRUE(a.free(blk[0]).ok());
  ASSERT_TRUE(a.free(blk[2]).ok());
  ASSERT_TRUE(a.free(blk[1]).ok());
  ASSERT_TRUE(a.free(blk[3]).ok());
  EXPECT_EQ(a.free_block_count(), 1u);
  EXPECT_EQ(a.largest_free(), 16 * KiB);
}

TEST(Allocator, BestFitPrefersSmallestThenLowest) {
  Allocator a(64 * KiB);
  uint64_t b[7];
  for (auto& x : b) x = *a.alloc(1 * KiB);
  // Holes: b0 (1 KiB), b2 (1 KiB), b4+b5 (2 KiB); b1, b3, b6 stay.
  ASSERT_TRUE(a.free(b[4]).ok());
  ASSERT_TRUE(a.free(b[5]).ok());
  ASSERT_TRUE(a.free(b[2]).ok());
  ASSERT_TRUE(a.free(b[0]).ok());
  EXPECT_EQ(a.alloc(1500), b[4]);  // only the 2 KiB hole (and the tail) fit
  EXPECT_EQ(a.alloc(1000), b[0]);  // two 1 KiB holes: lowest offset
  EXPECT_EQ(a.alloc(1000), b[2]);
  EXPECT_EQ(a.alloc(1000), b[6] + 1 * KiB);  // only the tail left
}

TEST(Allocator, Deterministic) {
  Allocator a(256 * MiB), b(256 * MiB);
  std::mt19937_64 rng(7);
  std::vector<uint64_t> live;
  for (int i = 0; i < 20000; ++i) {
    const uint64_t r = rng();
    if (live.empty() || r % 3 != 0) {
      const uint64_t size = 1 + (rng() % (r % 17 == 0 ? 4 * MiB : 8 * KiB));
      const uint64_t align = r % 11 == 0 ? 4096 : 64;
      auto pa = a.alloc(size, align);
      auto pb = b.alloc(size, align);
      ASSERT_EQ(pa, pb) << "step " << i;
      if (pa) live.push_back(*pa);
    } else {
      const size_t k = rng() % live.size();
      ASSERT_TRUE(a.free(live[k]).ok());
      ASSERT_TRUE(b.free(live[k]).ok());
      live[k] = live.back();
      live.pop_back();
    }
  }
  EXPECT_EQ(a.extent(), b.extent());
  EXPECT_EQ(a.free_block_count(), b.free_block_count());
}

TEST(Allocator, ReallocGrowsInPlace) {
  Allocator a(1 * MiB);
  auto p = *a.alloc(1 * KiB);
  auto q = *a.alloc(1 * KiB);
  ASSERT_TRUE(a.free(q).ok());  // p is followed by one free block (q's space + tail)
  auto r = a.realloc(p, 100 * KiB);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->offset, p);
  EXPECT_FALSE(r->moved);
  EXPECT_EQ(r->old_size, 1 * KiB);
  EXPECT_EQ(a.block_size(p), 100 * KiB);
  EXPECT_EQ(a.bytes_in_use(), 100 * KiB);
  EXPECT_EQ(a.extent(), p + 100 * KiB);
  EXPECT_EQ(a.free_block_count(), 1u);
}

TEST(Allocator, ReallocGrowsIntoExactlyTheNextHole) {
  Allocator a(1 * MiB);
  auto p = *a.alloc(1 * KiB);
  auto q = *a.alloc(1 * KiB);
  auto s = *a.alloc(1 * KiB);
  ASSERT_TRUE(a.free(q).ok());
  auto r = a.realloc(p, 2 * KiB);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->moved);
  EXPECT_EQ(a.free_block_count(), 1u);  // the hole is used up; only the tail is left
  EXPECT_EQ(a.block_size(s), 1 * KiB);
}

TEST(Allocator, ReallocMovesWhenNextIsLive) {
  Allocator a(1 * MiB);
  auto p = *a.alloc(1 * KiB);
  auto q = *a.alloc(1 * KiB);
  auto r = a.realloc(p, 4 * KiB);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->moved);
  EXPECT_EQ(r->old_size, 1 * KiB);
  EXPECT_EQ(r->offset, q + 1 * KiB);  // the new block never overlaps the old one
  EXPECT_EQ(a.block_size(p), 0u);
  EXPECT_EQ(a.block_size(r->offset), 4 * KiB);
  EXPECT_EQ(a.bytes_in_use(), 5 * KiB);
  // The old block is free again and reusable.
  EXPECT_EQ(a.alloc(1 * KiB), p);
}

TEST(Allocator, ReallocShrinksInPlace) {
  Allocator a(1 * MiB);
  auto p = *a.alloc(8 * KiB);
  auto q = *a.alloc(1 * KiB);
  auto r = a.realloc(p, 1000);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->offset, p);
  EXPECT_FALSE(r->moved);
  EXPECT_EQ(r->old_size, 8 * KiB);
  EXPECT_EQ(a.block_size(p), 1024u);
  EXPECT_EQ(a.bytes_in_use(), 2 * KiB);
  // The returned tail is a free block of its own (q is live after it) and is reused.
  EXPECT_EQ(a.free_block_count(), 2u);
  EXPECT_EQ(a.alloc(7 * KiB), p + 1 * KiB);
  // Shrinking the last block merges its tail with the free space after it.
  ASSERT_TRUE(a.realloc(q, 64));
  EXPECT_EQ(a.free_block_count(), 1u);
  EXPECT_EQ(a.extent(), q + 64);
}

TEST(Allocator, ReallocSameRoundedSizeIsANoOp) {
  Allocator a(1 * MiB);
  auto p = *a.alloc(100);
  auto r = a.realloc(p, 128);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->offset, p);
  EXPECT_FALSE(r->moved);
  EXPECT_EQ(a.block_size(p), 128u);
  EXPECT_EQ(a.free_block_count(), 1u);
}

TEST(Allocator, ReallocFailureChangesNothing) {
  Allocator a(16 * KiB);
  auto p = *a.alloc(4 * KiB);
  auto q = *a.alloc(4 * KiB);
  auto s = *a.alloc(4 * KiB);
  ASSERT_TRUE(a.free(q).ok());
  // p could grow into q's hole (4 KiB) but wants more; no other block is big enough.
  const auto in_use = a.bytes_in_use();
  const auto nfree = a.free_block_count();
  EXPECT_FALSE(a.realloc(p, 9 * KiB));
  EXPECT_EQ(a.block_size(p), 4 * KiB);
  EXPECT_EQ(a.block_size(s), 4 * KiB);
  EXPECT_EQ(a.bytes_in_use(), in_use);
  EXPECT_EQ(a.free_block_count(), nfree);
  EXPECT_EQ(a.largest_free(), 4 * KiB);
  EXPECT_FALSE(a.realloc(p, UINT64_MAX));
  EXPECT_FALSE(a.realloc(p, 0));
  EXPECT_FALSE(a.realloc(q, 64));  // not live
  EXPECT_EQ(a.bytes_in_use(), in_use);
  // And the unchanged state still works.
  EXPECT_EQ(a.alloc(4 * KiB), q);
}

TEST(Allocator, DoubleAndBogusFreeRejected) {
  Allocator a(1 * MiB);
  auto p = *a.alloc(1 * KiB);
  auto q = *a.alloc(1 * KiB);
  const auto in_use = a.bytes_in_use();
  const auto nfree = a.free_block_count();

  Status inside = a.free(p + 64);  // inside a live block
  EXPECT_EQ(inside.code(), Errc::kInvalidArgument);
  EXPECT_FALSE(inside.message().empty());
  EXPECT_EQ(a.free(q + 1 * KiB).code(), Errc::kInvalidArgument);  // free space
  EXPECT_EQ(a.free(10 * MiB).code(), Errc::kInvalidArgument);     // past the end
  EXPECT_EQ(a.free(1).code(), Errc::kInvalidArgument);            // unaligned
  EXPECT_EQ(a.bytes_in_use(), in_use);
  EXPECT_EQ(a.free_block_count(), nfree);

  ASSERT_TRUE(a.free(p).ok());
  EXPECT_EQ(a.free(p).code(), Errc::kInvalidArgument);  // double free
  EXPECT_EQ(a.bytes_in_use(), 1 * KiB);
  EXPECT_EQ(a.free_block_count(), 2u);
  EXPECT_EQ(a.block_size(q), 1 * KiB);
}

TEST(Allocator, ExtentTracksHighestLiveByte) {
  Allocator a(1 * MiB);
  EXPECT_EQ(a.extent(), 0u);
  auto p = *a.alloc(100);
  EXPECT_EQ(a.extent(), 128u);
  auto q = *a.alloc(1000);
  EXPECT_EQ(a.extent(), q + 1024);
  auto s = *a.alloc(64, 64 * KiB);
  EXPECT_EQ(a.extent(), 64 * KiB + 64);
  ASSERT_TRUE(a.free(q).ok());  // a hole below does not change the extent
  EXPECT_EQ(a.extent(), s + 64);
  ASSERT_TRUE(a.free(s).ok());  // freeing the top block drops it to the next live one
  EXPECT_EQ(a.extent(), p + 128);
  ASSERT_TRUE(a.realloc(p, 10 * KiB));  // grows in place into the free space
  EXPECT_EQ(a.extent(), p + 10 * KiB);
  ASSERT_TRUE(a.realloc(p, 64));
  EXPECT_EQ(a.extent(), 64u);
  ASSERT_TRUE(a.free(p).ok());
  EXPECT_EQ(a.extent(), 0u);
}

// Random alloc / aligned alloc / free / realloc / bogus free; every result must match the
// model and every invariant must hold after every step.
void stress(uint64_t capacity, uint64_t seed, int steps) {
  Allocator a(capacity);
  Model m(capacity);
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> live;
  auto pick_size = [&] {
    switch (rng() % 4) {
      case 0: return 1 + rng() % 256;
      case 1: return 1 + rng() % (16 * KiB);
      case 2: return 1 + rng() % (capacity / 16);
      default: return 64 * (1 + rng() % 8);
    }
  };
  for (int step = 0; step < steps; ++step) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " step " + std::to_string(step));
    const uint64_t op = rng() % 10;
    if (op < 4 || live.empty()) {
      const uint64_t size = pick_size();
      const uint64_t align = op == 0 ? uint64_t{1} << (6 + rng() % 12) : 64;
      auto pa = a.alloc(size, align);
      ASSERT_EQ(pa, m.alloc(size, align)) << "alloc " << size << " align " << align;
      if (pa) {
        ASSERT_EQ(*pa % align, 0u);
        live.push_back(*pa);
      }
    } else if (op < 7) {
      const size_t k = rng() % live.size();
      ASSERT_TRUE(a.free(live[k]).ok());
      ASSERT_TRUE(m.free(live[k]));
      live[k] = live.back();
      live.pop_back();
    } else if (op < 9) {
      const size_t k = rng() % live.size();
      const uint64_t size = pick_size();
      auto ra = a.realloc(live[k], size);
      auto rm = m.realloc(live[k], size);
      ASSERT_EQ(ra.has_value(), rm.has_value()) << "realloc " << size;
      if (ra) {
        ASSERT_EQ(ra->offset, rm->offset);
        ASSERT_EQ(ra->moved, rm->moved);
        ASSERT_EQ(ra->old_size, rm->old_size);
        live[k] = ra->offset;
      }
    } else {
      const uint64_t off = (rng() % capacity) & ~uint64_t{63};
      const bool is_live = m.live().count(off) != 0;
      if (!is_live) {
        ASSERT_EQ(a.free(off).code(), Errc::kInvalidArgument) << "bogus free " << off;
      }
    }
    expect_consistent(a, m);
    if (::testing::Test::HasFatalFailure()) return;
  }
  for (uint64_t off : live) ASSERT_TRUE(a.free(off).ok());
  EXPECT_EQ(a.free_block_count(), capacity ? 1u : 0u);
  EXPECT_EQ(a.largest_free(), capacity);
}

TEST(Allocator, RandomizedStress) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    stress(4 * MiB, seed, 3000);
    if (HasFatalFailure()) return;
  }
}

TEST(Allocator, RandomizedStressOddCapacity) {
  stress(1 * MiB + 4000, 99, 3000);
}

}  // namespace
}  // namespace symmem
