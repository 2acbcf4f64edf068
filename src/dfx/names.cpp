// Names for DFX reports: the executable's global and static variables (its ELF symbol
// table, read from /proc/self/exe once, on first use) and call sites (dfx/names.hpp).
// Everything but user_call_site runs only while a report is made.
#include "dfx/names.hpp"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "runtime/dfx.hpp"

namespace symmem::dfx {
namespace {

struct Range {
  uintptr_t lo = 0, hi = 0;
  bool has(uintptr_t a) const { return a - lo < hi - lo; }
};

// The executable's and this library's loaded extents, and the executable's load bias.
struct Layout {
  Range exe, lib;
  uintptr_t exe_bias = 0;
  bool exe_is_dyn = false;
};

const Layout& layout() {
  static const Layout l = [] {
    Layout out;
    struct Ctx {
      Layout* l;
      uintptr_t probe;
      bool first = true;
    } ctx{&out, reinterpret_cast<uintptr_t>(&user_call_site)};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* p) {
          auto* c = static_cast<Ctx*>(p);
          Range r{UINTPTR_MAX, 0};
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const auto& ph = info->dlpi_phdr[i];
            if (ph.p_type != PT_LOAD) continue;
            r.lo = std::min<uintptr_t>(r.lo, info->dlpi_addr + ph.p_vaddr);
            r.hi = std::max<uintptr_t>(r.hi, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
          }
          if (c->first) {  // the main program comes first
            c->l->exe = r;
            c->l->exe_bias = info->dlpi_addr;
            c->l->exe_is_dyn = info->dlpi_addr != 0;
            c->first = false;
          }
          if (r.has(c->probe)) c->l->lib = r;
          return 0;
        },
        &ctx);
    return out;
  }();
  return l;
}

struct Symbol {
  uintptr_t addr;
  uint64_t size;
  std::string name;
};

std::string demangle(const char* s) {
  int status = 0;
  char* d = abi::__cxa_demangle(s, nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : s;
  std::free(d);
  return out;
}

// Data objects of the executable's .symtab (.dynsym when it is stripped), by address.
const std::vector<Symbol>& data_symbols() {
  static const std::vector<Symbol> syms = [] {
    std::vector<Symbol> out;
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return out;
    struct stat st;
    void* map = MAP_FAILED;
    if (fstat(fd, &st) == 0 && size_t(st.st_size) >= sizeof(Elf64_Ehdr))
      map = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return out;
    const auto* base = static_cast<const unsigned char*>(map);
    const size_t len = size_t(st.st_size);
    const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
    auto in_file = [&](uint64_t off, uint64_t n) { return off <= len && n <= len - off; };
    if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
        in_file(eh->e_shoff, uint64_t(eh->e_shnum) * sizeof(Elf64_Shdr))) {
      const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
      const uintptr_t bias = eh->e_type == ET_DYN ? layout().exe_bias : 0;
      for (uint32_t want : {uint32_t(SHT_SYMTAB), uint32_t(SHT_DYNSYM)}) {
        for (int i = 0; i < eh->e_shnum; ++i) {
          if (sh[i].sh_type != want || sh[i].sh_link >= eh->e_shnum) continue;
          const Elf64_Shdr& strs = sh[sh[i].sh_link];
          if (!in_file(sh[i].sh_offset, sh[i].sh_size) || !in_file(strs.sh_offset, strs.sh_size)) continue;
          const auto* sym = reinterpret_cast<const Elf64_Sym*>(base + sh[i].sh_offset);
          const size_t n = sh[i].sh_size / sizeof(Elf64_Sym);
          for (size_t k = 0; k < n; ++k) {
            const int type = ELF64_ST_TYPE(sym[k].st_info);
            if ((type != STT_OBJECT && type != STT_TLS) || sym[k].st_size == 0 || sym[k].st_shndx == SHN_UNDEF ||
                sym[k].st_name >= strs.sh_size)
              continue;
            const char* nm = reinterpret_cast<const char*>(base + strs.sh_offset + sym[k].st_name);
            out.push_back({uintptr_t(sym[k].st_value) + bias, sym[k].st_size, demangle(nm)});
          }
        }
        if (!out.empty()) break;
      }
    }
    munmap(map, len);
    std::sort(out.begin(), out.end(), [](const Symbol& a, const Symbol& b) { return a.addr < b.addr; });
    return out;
  }();
  return syms;
}

}  // namespace

std::string static_name(uintptr_t addr) {
  const auto& syms = data_symbols();
  auto it = std::upper_bound(syms.begin(), syms.end(), addr, [](uintptr_t a, const Symbol& s) { return a < s.addr; });
  if (it == syms.begin()) return "";
  --it;
  if (addr - it->addr >= it->size) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "' +%" PRIuPTR, addr - it->addr);
  return "static '" + it->name + buf;
}

void warm_up_call_sites() {
  void* frames[2];
  (void)backtrace(frames, 2);  // the first call loads libgcc_s
  (void)layout();
}

uintptr_t user_call_site() {
  void* frames[24];
  const int n = backtrace(frames, 24);
  const Range& lib = layout().lib;
  for (int i = 1; i < n; ++i) {
    const uintptr_t pc = reinterpret_cast<uintptr_t>(frames[i]);
    if (!lib.has(pc)) return pc;
  }
  return 0;
}

uint64_t encode_site(uintptr_t pc) {
  if (pc == 0) return 0;
  const Layout& l = layout();
  if (l.exe.has(pc)) return pc - l.exe_bias;
  return uint64_t(pc) | kSiteAbsolute;
}

std::string site_name(uint64_t encoded) {
  if (encoded == 0) return "";
  static std::mutex mu;
  static std::map<uint64_t, std::string> cache;
  std::lock_guard<std::mutex> g(mu);
  auto hit = cache.find(encoded);
  if (hit != cache.end()) return hit->second;
  const Layout& l = layout();
  const uintptr_t pc = (encoded & kSiteAbsolute) ? uintptr_t(encoded & ~kSiteAbsolute) : uintptr_t(encoded) + l.exe_bias;
  // A return address: the call is the instruction before it.
  Dl_info info{};
  std::string file, func;
  {
    char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    file = n > 0 ? std::string(exe, size_t(n)) : "/proc/self/exe";  // addr2line's own would be wrong
  }
  uintptr_t rel = pc - 1, fbase = l.exe_bias;
  if (dladdr(reinterpret_cast<void*>(pc - 1), &info) && info.dli_fbase) {
    fbase = reinterpret_cast<uintptr_t>(info.dli_fbase);
    if (!l.exe.has(pc) && info.dli_fname && *info.dli_fname) file = info.dli_fname;
    if (info.dli_sname) func = demangle(info.dli_sname);
  }
  // addr2line wants file offsets for position-independent objects, addresses otherwise.
  const bool dyn = l.exe.has(pc) ? l.exe_is_dyn : true;
  rel = dyn ? pc - 1 - fbase : pc - 1;
  std::string where;
  if (access("/usr/bin/addr2line", X_OK) == 0 && file.find('\'') == std::string::npos) {
    char cmd[600];
    std::snprintf(cmd, sizeof cmd, "/usr/bin/addr2line -f -C -e '%s' 0x%" PRIxPTR " 2>/dev/null", file.c_str(), rel);
    if (FILE* p = popen(cmd, "r")) {
      char fn[256] = "", line[512] = "";
      if (std::fgets(fn, sizeof fn, p) && std::fgets(line, sizeof line, p)) {
        fn[std::strcspn(fn, "\n")] = 0;
        line[std::strcspn(line, "\n ")] = 0;
        if (std::strcmp(fn, "??") != 0) func = fn;
        const char* slash = std::strrchr(line, '/');
        const char* shortname = slash ? slash + 1 : line;
        if (line[0] != '?' && !std::strchr(shortname, '?') && std::strstr(shortname, ":0") == nullptr) where = shortname;
      }
      pclose(p);
    }
  }
  std::string out = func.empty() ? "?" : func;
  if (!where.empty()) {
    out += " " + where;
  } else {
    char buf[64];
    std::snprintf(buf, sizeof buf, "+0x%" PRIxPTR, rel);
    const char* slash = std::strrchr(file.c_str(), '/');
    out += std::string(" (") + (slash ? slash + 1 : file.c_str()) + buf + ")";
  }
  cache[encoded] = out;
  return out;
}

}  // namespace symmem::dfx
