// The symmetric heap allocator (see allocator.hpp for the contract).
//
// Free space is kept twice: by offset (to find neighbours when coalescing) and by
// (size, offset) (for best fit). Both index the same set of maximal free runs, so two
// free blocks are never adjacent. Every live block starts and ends on a multiple of
// kDefaultAlign; only a capacity that is not such a multiple leaves a short free tail at
// the very end, which nothing can use until it merges with its left neighbour.
//
// Determinism is the point: nothing here depends on addresses, time or hashing, only on
// the sequence of calls, so every PE computes the same offsets.
#include "heap/allocator.hpp"

#include <iterator>
#include <string>

namespace symmem {

namespace {

bool is_pow2(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

// Rounds up to a multiple of `align` (a power of two); false on overflow.
bool round_up(uint64_t x, uint64_t align, uint64_t* out) {
  uint64_t bumped;
  if (__builtin_add_overflow(x, align - 1, &bumped)) return false;
  *out = bumped & ~(align - 1);
  return true;
}

}  // namespace

Allocator::Allocator(uint64_t capacity) : capacity_(capacity) {
  if (capacity_ > 0) insert_free(0, capacity_);
}

void Allocator::insert_free(uint64_t off, uint64_t size) {
  free_by_off_.emplace(off, size);
  free_by_size_.emplace(size, off);
}

void Allocator::erase_free(uint64_t off, uint64_t size) {
  free_by_off_.erase(off);
  free_by_size_.erase({size, off});
}

// Returns [off, off+size) to the free lists, merged with a free block on either side.
void Allocator::release(uint64_t off, uint64_t size) {
  uint64_t start = off;
  uint64_t end = off + size;
  auto next = free_by_off_.lower_bound(end);
  if (next != free_by_off_.end() && next->first == end) {
    end += next->second;
    erase_free(next->first, next->second);
  }
  auto after = free_by_off_.lower_bound(start);
  if (after != free_by_off_.begin()) {
    auto prev = std::prev(after);
    if (prev->first + prev->second == start) {
      start = prev->first;
      erase_free(prev->first, prev->second);
    }
  }
  insert_free(start, end - start);
}

std::optional<uint64_t> Allocator::alloc(uint64_t size, uint64_t align) {
  if (size == 0 || !is_pow2(align)) return std::nullopt;
  if (align < kDefaultAlign) align = kDefaultAlign;
  uint64_t rsize;
  if (!round_up(size, kDefaultAlign, &rsize)) return std::nullopt;

  // Smallest free block that holds the aligned request; lowest offset among equals. With
  // the default alignment every free block starts aligned, so the first candidate wins.
  for (auto it = free_by_size_.lower_bound({rsize, 0}); it != free_by_size_.end(); ++it) {
    const auto [fsize, foff] = *it;
    uint64_t start;
    if (!round_up(foff, align, &start)) continue;
    const uint64_t gap = start - foff;
    if (gap > fsize || fsize - gap < rsize) continue;
    const uint64_t tail = fsize - gap - rsize;
    erase_free(foff, fsize);  // invalidates `it`; we are done iterating
    if (gap > 0) insert_free(foff, gap);
    if (tail > 0) insert_free(start + rsize, tail);
    live_.emplace(start, rsize);
    in_use_ += rsize;
    return start;
  }
  return std::nullopt;
}

Status Allocator::free(uint64_t offset) {
  auto it = live_.find(offset);
  if (it == live_.end()) {
    return Status(Errc::kInvalidArgument,
                  "free of offset " + std::to_string(offset) +
                      ", which is not the start of a live block (double free or foreign pointer?)");
  }
  const uint64_t size = it->second;
  live_.erase(it);
  in_use_ -= size;
  release(offset, size);
  return Status::Ok();
}

// A new_size of 0 is not a request this class serves (shmem_realloc(p, 0) is a free, which
// the caller does); it returns nullopt like any other impossible request.
std::optional<Allocator::Realloc> Allocator::realloc(uint64_t offset, uint64_t new_size) {
  auto it = live_.find(offset);
  if (it == live_.end() || new_size == 0) return std::nullopt;
  const uint64_t old_size = it->second;
  uint64_t rnew;
  if (!round_up(new_size, kDefaultAlign, &rnew)) return std::nullopt;

  if (rnew <= old_size) {
    if (rnew < old_size) {
      it->second = rnew;
      in_use_ -= old_size - rnew;
      release(offset + rnew, old_size - rnew);
    }
    return Realloc{offset, false, old_size};
  }

  const uint64_t need = rnew - old_size;
  auto next = free_by_off_.find(offset + old_size);
  if (next != free_by_off_.end() && next->second >= need) {
    const uint64_t noff = next->first;
    const uint64_t nsize = next->second;
    erase_free(noff, nsize);
    if (nsize > need) insert_free(noff + need, nsize - need);
    it->second = rnew;
    in_use_ += need;
    return Realloc{offset, false, old_size};
  }

  // Move. The new block is found while the old one is still live, so the two never
  // overlap and the caller may copy with a plain memcpy.
  auto moved = alloc(rnew);
  if (!moved) return std::nullopt;
  Status st = free(offset);
  (void)st;  // cannot fail: offset is live (checked above)
  return Realloc{*moved, true, old_size};
}

uint64_t Allocator::block_size(uint64_t offset) const {
  auto it = live_.find(offset);
  return it == live_.end() ? 0 : it->second;
}

uint64_t Allocator::extent() const {
  if (live_.empty()) return 0;
  const auto& [off, size] = *live_.rbegin();
  return off + size;
}

uint64_t Allocator::largest_free() const {
  return free_by_size_.empty() ? 0 : free_by_size_.rbegin()->first;
}

}  // namespace symmem
