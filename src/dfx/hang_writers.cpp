// The word a waiting PE waits on and who could write it (hang_look.hpp): the waited
// address named and read live from its owner's memory, whether its value satisfies the
// wait, vector waits element by element, and the candidate writers from the PEs' write
// rings (a one-sided write to the word's range, and whether a quiet completed it).
#include "dfx/hang_look.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>

#include "common/config.hpp"
#include "common/log.hpp"

namespace symmem::dfx::hang {

// The address as Dfx::describe names it, from the pages' layout and allocation slots.
std::string describe(const Source& src, int space, int owner, uint64_t addr) {
  const Page* p = src.pes[size_t(space)].page;
  if (!p) return fmt("0x%" PRIx64, addr);
  const uint64_t G = p->layout_base, H = p->heap_size, M = p->meta_size;
  const uint64_t n = uint64_t(p->npes);
  if (H && addr - G < n * H) {
    const int pe = int((addr - G) / H);
    const uint64_t off = (addr - G) % H;
    for (int look : {space, owner, pe}) {
      const Page* q = look >= 0 && size_t(look) < src.pes.size() ? src.pes[size_t(look)].page : nullptr;
      if (!q || q->version != kPageVersion) continue;
      for (const AllocSlot& a : q->allocs) {
        AllocSlot c;
        if (!read_stable(a, &c) || c.number == 0 || off - c.offset >= c.size) continue;
        std::string size = format_size(c.size);
        std::string who = pe == space ? "" : fmt(" on PE %d", pe);
        if (c.name[0])
          return fmt("'%.*s' (allocation #%u, %s) +%" PRIu64 "%s", int(sizeof c.name), c.name, c.number, size.c_str(),
                     off - c.offset, who.c_str());
        return fmt("allocation #%u (%s) +%" PRIu64 "%s", c.number, size.c_str(), off - c.offset, who.c_str());
      }
    }
    return fmt("heap +%" PRIu64 " of PE %d (no live allocation)", off, pe);
  }
  if (M && addr - (G + n * H) < n * M) {
    const uint64_t x = addr - (G + n * H);
    return fmt("sync word (metadata +0x%" PRIx64 ") of PE %d", x % M, int(x / M));
  }
  if (addr - p->static_start < p->static_size) return fmt("static data +0x%" PRIx64, addr - p->static_start);
  return fmt("0x%" PRIx64, addr);
}

// A symmetric address of PE `space`'s process as (owner PE, WriteRecord::where); false for
// words outside the heap and the static data (the sync words of collectives).
bool word_where(const Source& src, int space, uint64_t addr, int* pe, uint64_t* where) {
  const Page* p = src.pes[size_t(space)].page;
  if (!p) return false;
  const uint64_t G = p->layout_base, H = p->heap_size, n = uint64_t(p->npes);
  if (H && addr - G < n * H) {
    *pe = int((addr - G) / H);
    *where = (addr - G) % H;
    return true;
  }
  if (addr - p->static_start < p->static_size) {
    *pe = space;
    *where = kRaceStatic | (addr - p->static_start);
    return true;
  }
  return false;
}

// Whether a write covers [lo, hi) of the same kind of memory (heap or static).
bool overlaps(const Write& w, uint64_t lo, uint64_t hi) {
  if ((w.where & kRaceStatic) != (lo & kRaceStatic)) return false;
  return w.where < hi && lo < w.where + std::max<uint64_t>(w.bytes, 1);
}

// Whether a wait's condition holds for `v` against `expect`; -1 when it depends on the
// type's signedness (the page does not say).
int satisfied(const Wait& w, uint64_t v, uint64_t expect) {
  if (w.cmp < 0) return int32_t(uint32_t(v) - uint32_t(expect)) >= 0;  // sync word
  const int bits = int(w.width) * 8;
  const uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
  const uint64_t a = v & mask, b = expect & mask;
  auto sx = [&](uint64_t x) { return bits >= 64 ? int64_t(x) : int64_t(x << (64 - bits)) >> (64 - bits); };
  auto test = [&](auto x, auto y) {
    switch (w.cmp) {
      case 0: return x == y;
      case 1: return x != y;
      case 2: return x > y;
      case 3: return x >= y;
      case 4: return x < y;
      default: return x <= y;
    }
  };
  const bool u = test(a, b), s = test(sx(a), sx(b));
  return u == s ? int(u) : -1;
}

std::string value_text(uint64_t v, uint32_t width) {
  const int bits = int(width) * 8;
  if (bits <= 0 || bits > 64) return std::to_string(v);
  const uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
  v &= mask;
  if (v >> (bits - 1)) {  // top bit set: show it signed
    const int64_t s = bits >= 64 ? int64_t(v) : int64_t(v << (64 - bits)) >> (64 - bits);
    return std::to_string(s);
  }
  return std::to_string(v);
}

// Where a write went, named from the writer's side: "'flags' (allocation #1, 64) +8 of PE 3".
std::string write_target(const Source& src, int writer, const Write& w) {
  const Page* p = src.pes[size_t(writer)].page;
  if (!p) return "?";
  if (w.where & kRaceStatic) {
    std::string d = describe(src, writer, w.target, p->static_start + (w.where & ~kRaceStatic));
    return d + fmt(" of PE %d", w.target);
  }
  std::string d = describe(src, writer, w.target, p->layout_base + uint64_t(w.target) * p->heap_size + w.where);
  if (w.target == writer) d += " (its own)";
  return d;
}

std::string write_text(const Source& src, int writer, const Write& w) {
  std::string call = name_of(src.pes[size_t(writer)].page, w.call_id);
  std::string t = fmt("%s to %s", call.empty() ? "write" : call.c_str(), write_target(src, writer, w).c_str());
  if (w.bytes != 8 && w.bytes != 4) t += " " + format_size(w.bytes);
  return t;
}

// The candidate writers of PE `waiter`'s waited word, from every visible PE's write ring:
// a text line (without its indent) and the JSON members.
void writers_of(const Source& src, const std::vector<PeView>& v, int waiter, std::string* text, std::string* json) {
  const Wait& wt = v[size_t(waiter)].b.w;
  int owner = -1;
  uint64_t lo = 0;
  // A vector wait: any element of the vector.
  const uint64_t base = wt.vec_kind ? wt.vec_base : wt.addr;
  const uint32_t words = wt.vec_kind ? wt.vec_n : wt.nwords;
  if (!word_where(src, waiter, base, &owner, &lo)) return;
  const uint64_t hi = lo + uint64_t(wt.width) * std::max<uint32_t>(words, 1);
  // The allocation holding the word (owner's slots), for writes that went elsewhere in it.
  uint64_t alo = lo, ahi = hi;
  if (!(lo & kRaceStatic)) {
    for (int look : {owner, waiter}) {
      const Page* q = src.pes[size_t(look)].page;
      if (!q) continue;
      bool found = false;
      for (const AllocSlot& a : q->allocs) {
        AllocSlot c;
        if (!read_stable(a, &c) || c.number == 0 || lo - c.offset >= c.size) continue;
        alo = c.offset, ahi = c.offset + c.size, found = true;
        break;
      }
      if (found) break;
    }
  }
  std::vector<std::string> hits, near, unseen;
  std::string jw = "[", je = "[";
  bool all = true, partial = false;
  for (size_t pe = 0; pe < v.size(); ++pe) {
    const Snap& s = v[pe].b;
    if (!s.visible) {
      if (src.pes[pe].remote) unseen.push_back(std::to_string(pe));
      continue;
    }
    all = all && s.writes_all;
    partial = partial || s.write_count > uint64_t(kWriteRing);
    int count = 0, pending = 0;
    const Write* last = nullptr;
    const Write* elsewhere = nullptr;
    for (const Write& w : s.writes) {
      if (w.target != owner) continue;
      if (overlaps(w, lo, hi)) {
        ++count;
        if (!last) last = &w;
        if (w.ucx && w.quiets == s.quiet_count) ++pending;
      } else if (!elsewhere && alo != lo && overlaps(w, alo, ahi)) {
        elsewhere = &w;
      }
    }
    const std::string call = last ? name_of(src.pes[pe].page, last->call_id) : "";
    if (last) {
      std::string h = fmt("PE %zu (%s", pe, call.c_str());
      if (count > 1) h += fmt(", %d of its last %zu writes", count, s.writes.size());
      if (pending) h += fmt(", %d pending on UCX: not yet quieted", pending);
      hits.push_back(h + ")");
      jw += fmt("%s{\"pe\":%zu,\"call\":%s,\"writes\":%d,\"pending\":%d}", jw.size() > 1 ? "," : "", pe,
                json_str(call).c_str(), count, pending);
    } else if (elsewhere) {
      const std::string ec = name_of(src.pes[pe].page, elsewhere->call_id);
      near.push_back(fmt("PE %zu %s to %s", pe, ec.c_str(), write_target(src, int(pe), *elsewhere).c_str()));
      je += fmt("%s{\"pe\":%zu,\"call\":%s,\"offset\":%" PRIu64 ",\"bytes\":%" PRIu64 "}", je.size() > 1 ? "," : "",
                pe, json_str(ec).c_str(), elsewhere->where - alo, elsewhere->bytes);
    }
  }
  std::string t = "candidate writers: ";
  if (!hits.empty()) {
    for (size_t i = 0; i < hits.size(); ++i) t += (i ? ", " : "") + hits[i];
  } else {
    t += "no PE has written it";
    if (!all) t += " over UCX (writes on the node are recorded with a DFX tool on, e.g. SYMMEM_CHECK=1)";
    if (!near.empty()) {
      t += "; nearby: ";
      for (size_t i = 0; i < near.size() && i < 3; ++i) t += (i ? ", " : "") + near[i];
    }
  }
  if (partial) t += fmt(" (of each PE's last %d writes)", kWriteRing);
  if (!unseen.empty()) {
    t += "; PEs on other nodes not seen:";
    for (auto& u : unseen) t += " " + u;
  }
  *text = t;
  *json = ",\"writers\":";
  *json += jw;
  *json += "],\"written_nearby\":";
  *json += je;
  *json += all ? "],\"writes_complete\":true" : "],\"writes_complete\":false";
}

const char* vec_kind_name(uint32_t k) { return k == 1 ? "all" : k == 2 ? "any" : k == 3 ? "some" : ""; }

// A vector wait as a call: "wait_until_all('flags' (allocation #1, 64) +0, 4 words, == 1)".
std::string vector_what(const Source& src, const PeView& p, int pe, const std::string& call) {
  const Wait& w = p.b.w;
  std::string t = call + "(" + describe(src, pe, w.owner, w.vec_base) + fmt(", %u words", w.vec_n);
  if (w.vec_count != w.vec_n) t += fmt(" (%u taking part)", w.vec_count);
  bool same = true;
  for (uint32_t k = 1; k < w.vec_shown; ++k) same = same && w.vec_expect[k] == w.vec_expect[0];
  t += fmt(", %s ", cmp_text(w.cmp));
  t += same && w.vec_shown ? value_text(w.vec_expect[0], w.width) : std::string("per-element values");
  return t + ")";
}

// "   1 of 4 satisfied (live), sleeps on [2]": what the vector holds now.
std::string vector_summary(const PeView& p) {
  const Wait& w = p.b.w;
  std::string t = fmt("   %d of %u", p.vec_sat, w.vec_shown);
  if (w.vec_shown < w.vec_count) t += fmt(" shown (%u taking part)", w.vec_count);
  t += " satisfied (live)";
  if (w.vec_kind == 1 && w.vec_n && w.addr >= w.vec_base && w.width)
    t += fmt(", sleeps on [%" PRIu64 "]", (w.addr - w.vec_base) / w.width);
  if (p.sat == 1) t += " — satisfied";
  return t;
}

// One line per element shown: its word, the value expected, the value now.
std::string vector_lines(const Source& src, const PeView& p, int pe) {
  const Wait& w = p.b.w;
  std::string t;
  for (uint32_t k = 0; k < w.vec_shown && k < p.vec.size(); ++k) {
    const PeView::Elem& e = p.vec[k];
    const uint64_t a = w.vec_base + uint64_t(w.vec_index[k]) * w.width;
    std::string l = std::string(16, ' ') + fmt("[%u] %s %s %s", w.vec_index[k], describe(src, pe, w.owner, a).c_str(),
                                               cmp_text(w.cmp), value_text(w.vec_expect[k], w.width).c_str());
    if (e.have) {
      l += "   sees ";
      l += value_text(e.value, w.width);
    } else {
      l += "   not readable here";
    }
    if (e.sat == 1) l += "   satisfied";
    else if (e.sat < 0 && e.have) l += "   (satisfied depends on signedness)";
    if (w.vec_kind == 1 && a == w.addr) l += "   <- sleeps on this one";
    t += l + "\n";
  }
  if (w.vec_count > w.vec_shown)
    t += std::string(16, ' ') + fmt("... and %u more taking part, not shown\n", w.vec_count - w.vec_shown);
  return t;
}

}  // namespace symmem::dfx::hang
