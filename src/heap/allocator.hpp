// The symmetric heap allocator: manages offsets in [0, capacity) of one PE's heap.
//
// Deterministic by construction: the same sequence of calls gives the same offsets on
// every PE, which is what makes an allocation symmetric. Best fit by size, lowest offset
// on ties; free blocks coalesce with both neighbours at once. No memory of its own is
// touched: the heap itself may be reserved but uncommitted.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "common/status.hpp"

namespace symmem {

class Allocator {
 public:
  static constexpr uint64_t kDefaultAlign = 64;

  explicit Allocator(uint64_t capacity);

  // Offset of a new block of `size` bytes (size > 0) aligned to `align` (a power of two,
  // at least kDefaultAlign is applied), or nullopt when no free block fits.
  std::optional<uint64_t> alloc(uint64_t size, uint64_t align = kDefaultAlign);
  // Frees the block that starts at `offset`; an offset that is not a live block is an
  // error (kInvalidArgument), and nothing changes.
  Status free(uint64_t offset);
  // Grows or shrinks in place when the following free space allows; otherwise allocates a
  // new block and frees the old one (the caller copies min(old, new) bytes *before* the
  // old contents can be reused, i.e. before its next allocation). Returns the new offset
  // and whether it moved, or nullopt (and no change) when no space.
  struct Realloc {
    uint64_t offset;
    bool moved;
    uint64_t old_size;
  };
  std::optional<Realloc> realloc(uint64_t offset, uint64_t new_size);

  // Size of the live block at offset, or 0 if none.
  uint64_t block_size(uint64_t offset) const;
  // One past the highest byte of any live block (0 when empty).
  uint64_t extent() const;
  uint64_t capacity() const { return capacity_; }
  uint64_t bytes_in_use() const { return in_use_; }
  size_t free_block_count() const { return free_by_off_.size(); }
  uint64_t largest_free() const;
  size_t live_block_count() const { return live_.size(); }

 private:
  void insert_free(uint64_t off, uint64_t size);
  void erase_free(uint64_t off, uint64_t size);
  void release(uint64_t off, uint64_t size);  // insert_free, coalescing with neighbours

  uint64_t capacity_;
  uint64_t in_use_ = 0;
  std::map<uint64_t, uint64_t> free_by_off_;           // offset -> size
  std::set<std::pair<uint64_t, uint64_t>> free_by_size_;  // (size, offset)
  std::map<uint64_t, uint64_t> live_;                  // offset -> size (as rounded)
};

}  // namespace symmem
