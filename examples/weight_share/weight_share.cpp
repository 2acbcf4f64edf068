// weight_share — N inference workers (one PE each) serving from one copy of the weights.
//
// Each worker runs a LLaMA decoder forward pass (RMSNorm, grouped-query attention with its
// own KV cache, SwiGLU MLP, tied LM head; matrix products through single-threaded OpenBLAS)
// over its own stream of requests, with the weights held one of seven ways (--mode):
//   private        every worker reads the F16 file and converts its own F32 copy
//   mmap           the F32 file (already in compute layout) mapped shared: the page cache
//                  holds one copy
//   fork           one loader converts, then forks the other workers (copy-on-write);
//                  run without symmem-run, --workers N
//   symm           the workers convert the layers cooperatively, each into its own part of
//                  the symmetric heap; one barrier; everyone computes in place (shmem_ptr)
//   symm-staged    as symm, but each layer is copied (get) into a private buffer first
//   symm-prefetch  as symm-staged, layer i+1 fetched with get_nbi while layer i computes
//   update         as symm with a double buffer: PE 0 publishes new weights (alternately
//                  --update-weights and --weights) into the inactive half and flips an
//                  epoch; the readers (PEs 1..N-1) switch at request boundaries
// It measures load time and CPU, memory (smaps_rollup per worker, the node's change), tokens/s
// and latency, and writes one JSON report (--json); examples/weight_share/run.sh turns those
// into docs/weight-share.md.
//   symmem-run -n 4 weight_share --mode symm --weights w.safetensors --json out.json
#include <cblas.h>
#include <cpuid.h>
#include <fcntl.h>
#include <immintrin.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <symmem/symmem.hpp>
#include <vector>

#include "safetensors.hpp"

namespace wshare {
namespace {

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}
double cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}
double thread_cpu_s() {  // the calling thread only: cpu_s() minus it is the runtime's own threads
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// ---------------------------------------------------------------------------------------
// Options

struct Options {
  std::string mode = "symm", weights, weights_f32, update_weights, json;
  int workers = 0;  // fork mode only (the others take symmem-run -n)
  int requests = 4, prompt = 4, gen = 8;        // batch-1 phase
  int batch = 16, batch_requests = 1;           // compute-bound phase
  int updates = 2;                              // update mode
  int piece_kib = 4096;
  uint64_t seed = 7;
  bool cold = false;
  bool huge = false;  // private copies in transparent huge pages (run.sh with SYMMEM_HEAP_DIR on huge pages)
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "weight_share: %s\n"
               "usage: weight_share --mode private|mmap|fork|symm|symm-staged|symm-prefetch|update\n"
               "  --weights F16.safetensors [--weights-f32 F32.safetensors (mmap)] [--update-weights F16 (update)]\n"
               "  [--workers N (fork)] [--requests R] [--prompt P] [--gen G] [--batch B] [--batch-requests R]\n"
               "  [--updates K] [--seed S] [--piece-kib K] [--cold] [--huge] [--json out.json]\n",
               why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) usage((a + " needs a value").c_str());
      return argv[++i];
    };
    auto num = [&]() {
      std::string v = val();
      char* e = nullptr;
      long x = std::strtol(v.c_str(), &e, 10);
      if (*e || x < 0) usage((a + " needs a non-negative integer, got " + v).c_str());
      return int(x);
    };
    if (a == "--mode") o.mode = val();
    else if (a == "--weights") o.weights = val();
    else if (a == "--weights-f32") o.weights_f32 = val();
    else if (a == "--update-weights") o.update_weights = val();
    else if (a == "--json") o.json = val();
    else if (a == "--workers") o.workers = num();
    else if (a == "--requests") o.requests = num();
    else if (a == "--prompt") o.prompt = num();
    else if (a == "--gen") o.gen = num();
    else if (a == "--batch") o.batch = num();
    else if (a == "--batch-requests") o.batch_requests = num();
    else if (a == "--updates") o.updates = num();
    else if (a == "--piece-kib") o.piece_kib = num();
    else if (a == "--seed") o.seed = uint64_t(num());
    else if (a == "--cold") o.cold = true;
    else if (a == "--huge") o.huge = true;
    else usage(("unknown argument " + a).c_str());
  }
  static const char* kModes[] = {"private", "mmap", "fork", "symm", "symm-staged", "symm-prefetch", "update"};
  if (std::find_if(std::begin(kModes), std::end(kModes), [&](const char* m) { return o.mode == m; }) ==
      std::end(kModes))
    usage(("unknown mode " + o.mode).c_str());
  if (o.mode == "mmap" ? o.weights_f32.empty() : o.weights.empty())
    usage(o.mode == "mmap" ? "mmap needs --weights-f32" : "--weights is required");
  if (o.mode == "update" && o.update_weights.empty()) usage("update needs --update-weights");
  if (o.mode == "fork" && o.workers < 1) usage("fork needs --workers N (it runs without symmem-run)");
  if (o.prompt < 1 || o.gen < 1 || o.batch < 1 || o.piece_kib < 1)
    usage("--prompt, --gen, --batch and --piece-kib must be at least 1");
  return o;
}

// ---------------------------------------------------------------------------------------
// Model shape and the layout of its tensors in F32 memory

struct Config {
  int dim = 0, n_layers = 0, n_heads = 0, n_kv = 0, ffn = 0, vocab = 0;
  float eps = 1e-5f, theta = 10000.f;
  int head_dim() const { return dim / n_heads; }
  int kv_dim() const { return head_dim() * n_kv; }
  bool operator==(const Config&) const = default;
};

// Every matrix is used as row blocks ("pieces") of at most g_max_piece bytes, in every mode
// (the same BLAS calls everywhere, so outputs are bit-identical). The sharing modes spread
// the pieces over the PEs; whole layers or a whole embedding would leave some PEs' parts much
// larger than others', and a symmetric allocation is as large as the largest part.
uint64_t g_max_piece = 4ull << 20;  // --piece-kib

std::vector<std::string> unit_tensor_names(const Config& c, int u) {
  if (u == c.n_layers) return {"model.embed_tokens.weight", "model.norm.weight"};
  std::string p = "model.layers." + std::to_string(u) + ".";
  return {p + "input_layernorm.weight",  p + "self_attn.q_proj.weight",         p + "self_attn.k_proj.weight",
          p + "self_attn.v_proj.weight", p + "self_attn.o_proj.weight",         p + "post_attention_layernorm.weight",
          p + "mlp.gate_proj.weight",    p + "mlp.up_proj.weight",              p + "mlp.down_proj.weight"};
}

std::vector<std::vector<int64_t>> unit_shapes(const Config& c, int u) {
  const int64_t d = c.dim, kv = c.kv_dim(), f = c.ffn;
  if (u == c.n_layers) return {{c.vocab, d}, {d}};
  return {{d}, {d, d}, {kv, d}, {kv, d}, {d, d}, {d}, {f, d}, {f, d}, {d, f}};
}

int meta_int(const SafeTensors& st, const char* key) {
  auto it = st.meta.find(key);
  if (it == st.meta.end()) throw InputError(st.path + ": __metadata__ has no " + key);
  char* e = nullptr;
  long v = std::strtol(it->second.c_str(), &e, 10);
  if (*e || v <= 0) throw InputError(st.path + ": __metadata__ " + key + " = '" + it->second + "' is not a positive integer");
  return int(v);
}

// Reads the shape from the metadata and checks that it divides and that every tensor is there
// with that shape and the dtype `want`.
Config config_of(const SafeTensors& st, const char* want) {
  Config c;
  c.dim = meta_int(st, "dim");
  c.n_layers = meta_int(st, "n_layers");
  c.n_heads = meta_int(st, "n_heads");
  c.n_kv = meta_int(st, "n_kv_heads");
  c.ffn = meta_int(st, "ffn_dim");
  c.vocab = meta_int(st, "vocab_size");
  if (c.dim % c.n_heads != 0)
    throw InputError(st.path + ": dim " + std::to_string(c.dim) + " is not divisible by n_heads " +
                     std::to_string(c.n_heads));
  if (c.n_heads % c.n_kv != 0)
    throw InputError(st.path + ": n_heads " + std::to_string(c.n_heads) + " is not divisible by n_kv_heads " +
                     std::to_string(c.n_kv));
  if (c.head_dim() % 2 != 0) throw InputError(st.path + ": head dimension " + std::to_string(c.head_dim()) + " is odd (RoPE needs pairs)");
  for (int u = 0; u <= c.n_layers; ++u) {
    auto names = unit_tensor_names(c, u);
    auto shapes = unit_shapes(c, u);
    for (size_t t = 0; t < names.size(); ++t) {
      const TensorInfo& ti = st.at(names[t]);
      if (ti.shape != shapes[t]) {
        std::string s;
        for (auto x : shapes[t]) s.append(s.empty() ? "" : "x").append(std::to_string(x));
        throw InputError(st.path + ": tensor " + names[t] + " does not have the shape " + s + " the metadata implies");
      }
      if (ti.dtype != want) throw InputError(st.path + ": tensor " + names[t] + " is " + ti.dtype + ", " + want + " expected");
    }
  }
  return c;
}

// Unit u (a layer; u == n_layers: the final norm and the embedding) as F32: its pieces one
// after another, each 64-byte aligned. A piece is a block of rows of one tensor.
struct Piece {
  std::string name;
  uint64_t row0 = 0, rows = 0, row_len = 0;
  uint64_t begin() const { return row0 * row_len; }  // elements
  uint64_t elems() const { return rows * row_len; }
  uint64_t bytes() const { return elems() * 4; }
};
struct Unit {
  std::vector<Piece> pieces;
  std::vector<uint64_t> off;   // bytes from the unit's start, per piece
  std::vector<size_t> first;   // tensor t is pieces [first[t], first[t+1])
  std::vector<uint64_t> rows_per;  // rows per piece of tensor t
  uint64_t bytes = 0;
};

std::vector<Unit> units_of(const Config& c) {
  std::vector<Unit> us(size_t(c.n_layers) + 1);
  for (int u = 0; u <= c.n_layers; ++u) {
    Unit& x = us[size_t(u)];
    std::vector<std::string> names;
    std::vector<std::vector<int64_t>> shapes;
    if (u < c.n_layers) {
      names = unit_tensor_names(c, u), shapes = unit_shapes(c, u);
    } else {
      names = {"model.norm.weight", "model.embed_tokens.weight"};
      shapes = {{c.dim}, {c.vocab, c.dim}};
    }
    for (size_t t = 0; t < names.size(); ++t) {
      const uint64_t rows = shapes[t].size() == 2 ? uint64_t(shapes[t][0]) : 1;
      const uint64_t len = uint64_t(shapes[t].back());
      const uint64_t per = std::max<uint64_t>(1, std::min<uint64_t>(rows, g_max_piece / (len * 4)));
      x.first.push_back(x.pieces.size());
      x.rows_per.push_back(per);
      for (uint64_t r = 0; r < rows; r += per) x.pieces.push_back({names[t], r, std::min(per, rows - r), len});
    }
    x.first.push_back(x.pieces.size());
    for (auto& pc : x.pieces) {
      x.off.push_back(x.bytes);
      x.bytes += (pc.bytes() + 63) / 64 * 64;
    }
  }
  return us;
}

// ---------------------------------------------------------------------------------------
// F16 -> F32 (the load-time transform)

__attribute__((target("f16c,avx"))) void f16_to_f32_f16c(const uint16_t* s, float* d, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  for (; i < n; ++i) d[i] = _cvtsh_ss(s[i]);
}

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do { ++e; man <<= 1; } while (!(man & 0x400));
      bits = sign | uint32_t(127 - 15 - e) << 23 | (man & 0x3ff) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | man << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | man << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

bool have_f16c() {  // F16C and AVX, with the OS saving the AVX state
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_F16C) || !(c & bit_AVX) || !(c & bit_OSXSAVE)) return false;
  unsigned lo = 0, hi = 0;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & 6) == 6;
}

void f16_to_f32(const uint16_t* s, float* d, size_t n) {
  static const bool f16c = have_f16c();
  if (f16c) return f16_to_f32_f16c(s, d, n);
  for (size_t i = 0; i < n; ++i) d[i] = half_to_float(s[i]);
}

// Writes a piece of the F16 file as F32 at out.
void convert_piece(const MappedTensors& src, const Piece& pc, float* out) {
  f16_to_f32(reinterpret_cast<const uint16_t*>(src.data(pc.name, pc.begin() * 2)), out, pc.elems());
}
void convert_unit(const MappedTensors& src, const Unit& un, float* dst) {
  for (size_t t = 0; t < un.pieces.size(); ++t)
    convert_piece(src, un.pieces[t], reinterpret_cast<float*>(reinterpret_cast<char*>(dst) + un.off[t]));
}

// ---------------------------------------------------------------------------------------
// Memory figures

struct Smaps {  // kB, from /proc/<pid>/smaps_rollup
  double rss = 0, pss = 0, pss_anon = 0, pss_file = 0, pss_shmem = 0, uss = 0, shared_hugetlb = 0, private_hugetlb = 0;
};

Smaps read_smaps(pid_t pid) {
  Smaps s;
  std::ifstream f(pid ? "/proc/" + std::to_string(pid) + "/smaps_rollup" : std::string("/proc/self/smaps_rollup"));
  std::string line;
  while (std::getline(f, line)) {
    char key[64];
    double v = 0;
    if (std::sscanf(line.c_str(), "%63[^:]: %lf", key, &v) != 2) continue;
    std::string k = key;
    if (k == "Rss") s.rss = v;
    else if (k == "Pss") s.pss = v;
    else if (k == "Pss_Anon") s.pss_anon = v;
    else if (k == "Pss_File") s.pss_file = v;
    else if (k == "Pss_Shmem") s.pss_shmem = v;
    else if (k == "Private_Clean" || k == "Private_Dirty") s.uss += v;
    else if (k == "Shared_Hugetlb") s.shared_hugetlb = v;
    else if (k == "Private_Hugetlb") s.private_hugetlb = v;
  }
  return s;
}

// Pss of the one mapping that holds `addr` (/proc/self/smaps), kB: the weights file's own
// share, unmoved by libraries whose share changes as other processes map them.
double mapping_pss_kb(const void* addr) {
  std::ifstream f("/proc/self/smaps");
  std::string line;
  const auto a = reinterpret_cast<uintptr_t>(addr);
  bool in = false;
  while (std::getline(f, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      in = a >= lo && a < hi;
      continue;
    }
    double v = 0;
    if (in && std::sscanf(line.c_str(), "Pss: %lf", &v) == 1) return v;
  }
  return 0;
}

double meminfo_kb(const char* key) {
  std::ifstream f("/proc/meminfo");
  std::string line;
  size_t n = std::strlen(key);
  while (std::getline(f, line))
    if (line.compare(0, n, key) == 0 && line[n] == ':') return std::atof(line.c_str() + n + 1);
  return -1;
}

// This process's memory cgroup's usage (v1 memory.usage_in_bytes or v2 memory.current), -1
// when there is none to read. run.sh gives each job a cgroup of its own, so this is the job's
// node memory without the other processes on the machine.
std::string cgroup_dir(bool& v2) {
  std::ifstream f("/proc/self/cgroup");
  std::string line, v2dir;
  while (std::getline(f, line)) {
    auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string ctrl = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (ctrl == "memory") return v2 = false, "/sys/fs/cgroup/memory" + path;
    if (ctrl.empty() && line.compare(0, 2, "0:") == 0) v2dir = "/sys/fs/cgroup" + path;
  }
  v2 = true;
  return v2dir;
}
double cgroup_bytes() {
  bool v2 = false;
  std::string d = cgroup_dir(v2);
  std::ifstream g(d + (v2 ? "/memory.current" : "/memory.usage_in_bytes"));
  double v = -1;
  if (d.empty() || !(g >> v)) return -1;
  return v;
}
// The cgroup's anon / shmem / mapped-file / page-cache split (bytes), for the report.
std::string cgroup_stat_json() {
  bool v2 = false;
  std::string d = cgroup_dir(v2);
  std::ifstream g(d + "/memory.stat");
  std::string k, out;
  double v;
  while (g >> k >> v) {
    static const char* keep[] = {"cache", "rss", "shmem", "mapped_file", "anon", "file", "file_mapped", "kernel"};
    for (const char* want : keep)
      if (k == want) out.append(out.empty() ? "" : ",").append("\"" + k + "\":" + std::to_string(uint64_t(v)));
  }
  for (const char* mk : {"Shmem", "AnonPages", "Mapped", "PageTables"})
    out.append(out.empty() ? "" : ",").append("\"meminfo_").append(mk).append("\":").append(std::to_string(uint64_t(meminfo_kb(mk) * 1024)));
  return "{" + out + "}";
}

// Bytes of `path` now in the page cache (mincore over a mapping that touches nothing).
double resident_bytes(const std::string& path) {
  if (path.empty()) return 0;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat sb {};
  fstat(fd, &sb);
  double out = 0;
  if (sb.st_size > 0) {
    void* p = mmap(nullptr, size_t(sb.st_size), PROT_READ, MAP_SHARED, fd, 0);
    if (p != MAP_FAILED) {
      const size_t pg = size_t(sysconf(_SC_PAGESIZE)), n = (size_t(sb.st_size) + pg - 1) / pg;
      std::vector<unsigned char> v(n);
      if (mincore(p, size_t(sb.st_size), v.data()) == 0)
        for (auto c : v) out += (c & 1) ? double(pg) : 0;
      munmap(p, size_t(sb.st_size));
    }
  }
  close(fd);
  return out;
}

void drop_cache(const std::string& path) {
  if (path.empty()) return;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
}

struct NodeMem {
  double cgroup = -1, used = 0, cached_read = 0;  // bytes
  std::string stat;
};
NodeMem node_mem(const std::vector<std::string>& read_files) {
  NodeMem m;
  m.cgroup = cgroup_bytes();
  m.used = (meminfo_kb("MemTotal") - meminfo_kb("MemAvailable")) * 1024;
  for (auto& f : read_files) m.cached_read += resident_bytes(f);
  m.stat = cgroup_stat_json();
  return m;
}

// ---------------------------------------------------------------------------------------
// The decoder

// The tensors of one unit as F32 pointers.
struct UnitPtrs {
  std::vector<const float*> t;  // per piece
};
// Where unit `u` of a private F32 copy goes: a malloc'ed block of its own, or with --huge
// its place in one 2 MiB-aligned arena for all units, advised for transparent huge pages
// (what a server that wants huge pages for its own copy does). `blocks` is what to free.
float* private_block(const Options& o, const Unit& u, const std::vector<Unit>& units, std::vector<float*>& blocks) {
  auto up = [](uint64_t v, uint64_t a) { return (v + a - 1) / a * a; };
  if (!o.huge) {
    float* p = static_cast<float*>(std::aligned_alloc(64, u.bytes));
    if (!p) throw InputError("out of memory converting the weights");
    blocks.push_back(p);
    return p;
  }
  constexpr uint64_t kHuge = 2u << 20;
  uint64_t at = 0, total = 0;
  for (const Unit& x : units) {
    if (&x == &u) at = total;
    total += up(x.bytes, 64);
  }
  if (blocks.empty()) {
    void* a = std::aligned_alloc(kHuge, up(total, kHuge));
    if (!a) throw InputError("out of memory converting the weights");
    madvise(a, up(total, kHuge), MADV_HUGEPAGE);
    blocks.push_back(static_cast<float*>(a));
  }
  return reinterpret_cast<float*>(reinterpret_cast<char*>(blocks[0]) + at);
}

UnitPtrs ptrs_at(const Unit& un, const void* base) {
  UnitPtrs p;
  for (size_t i = 0; i < un.off.size(); ++i)
    p.t.push_back(reinterpret_cast<const float*>(static_cast<const char*>(base) + un.off[i]));
  return p;
}

// Where the forward pass gets unit u's weights: zero-copy tables, or a copy into a private
// buffer (staged / prefetch modes).
struct WeightSource {
  virtual ~WeightSource() = default;
  virtual void begin_forward() {}
  virtual const UnitPtrs& stage(int u) = 0;  // called for u = 0..n_layers in order
  virtual const float* embed_chunk(int k) = 0;  // piece k of the last unit, for the token lookup
  double fetch_s = 0;                 // time this worker spent blocked on copies
  uint64_t fetch_bytes = 0;
};

struct TableSource : WeightSource {
  std::vector<UnitPtrs> table;
  const UnitPtrs& stage(int u) override { return table[size_t(u)]; }
  const float* embed_chunk(int k) override { return table.back().t[size_t(k)]; }
};

uint64_t fnv(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ull;
  return h;
}
uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

class Decoder {
 public:
  Decoder(const Config& c, const std::vector<Unit>& units, int max_seqs, int max_pos, int max_rows)
      : c_(c), units_(units), S_(max_seqs), T_(max_pos), R_(max_rows) {
    const size_t d = size_t(c.dim), kv = size_t(c.kv_dim()), f = size_t(c.ffn);
    k_.assign(size_t(c.n_layers) * S_ * T_ * kv, 0.f);
    v_.assign(k_.size(), 0.f);
    x_.resize(R_ * d), xn_.resize(R_ * d), q_.resize(R_ * d), kk_.resize(R_ * kv), vv_.resize(R_ * kv);
    att_.resize(R_ * d), g_.resize(R_ * f), up_.resize(R_ * f), logits_.resize(size_t(S_) * c.vocab);
    sc_.resize(size_t(T_));
    const int hd = c.head_dim();
    cos_.resize(size_t(T_) * hd / 2), sin_.resize(cos_.size());
    for (int p = 0; p < int(T_); ++p)
      for (int i = 0; i < hd / 2; ++i) {
        double fr = std::pow(double(c.theta), -2.0 * i / hd);
        cos_[size_t(p) * hd / 2 + i] = float(std::cos(p * fr));
        sin_[size_t(p) * hd / 2 + i] = float(std::sin(p * fr));
      }
  }
  // Bytes of activations and KV cache this worker holds privately.
  uint64_t private_bytes() const {
    return 4 * (k_.size() + v_.size() + x_.size() + xn_.size() + q_.size() + kk_.size() + vv_.size() + att_.size() +
                g_.size() + up_.size() + logits_.size());
  }

  // One request: `prompts` (B sequences of P tokens) prefilled in one pass, then gen-1 decode
  // steps; greedy. Returns a hash of the generated tokens and the last logits' bits.
  uint64_t request(WeightSource& ws, const std::vector<std::vector<int>>& prompts, int gen) {
    const int B = int(prompts.size()), P = int(prompts[0].size());
    std::vector<int> seq, pos, tok;
    for (int s = 0; s < B; ++s)
      for (int p = 0; p < P; ++p) seq.push_back(s), pos.push_back(p), tok.push_back(prompts[size_t(s)][size_t(p)]);
    uint64_t h = 1469598103934665603ull;
    std::vector<int> next(static_cast<size_t>(B));
    for (int step = 0; step < gen; ++step) {
      forward(ws, seq, pos, tok, next);
      for (int s = 0; s < B; ++s) h = fnv(h, uint64_t(next[size_t(s)]));
      tok.assign(next.begin(), next.end());
      seq.resize(size_t(B)), pos.resize(size_t(B));
      for (int s = 0; s < B; ++s) seq[size_t(s)] = s, pos[size_t(s)] = P + step;
    }
    double sum = 0;
    for (size_t i = 0; i < size_t(c_.vocab); ++i) sum += logits_[i];
    uint64_t bits;
    std::memcpy(&bits, &sum, 8);
    return fnv(h, bits);
  }

 private:
  // y[M,N] (+)= x[M,K] . W[N,K]^T
  static void matmul(const float* x, int M, int K, const float* W, int N, float* y, float beta, int ldy) {
    if (M == 1)
      cblas_sgemv(CblasRowMajor, CblasNoTrans, N, K, 1.f, W, K, x, 1, beta, y, 1);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.f, x, K, W, K, beta, y, ldy);
  }
  // y[M, rows of tensor t] (+)= x[M,K] . W_t^T, one call per piece of W_t.
  void mm(const float* x, int M, int K, const Unit& un, const UnitPtrs& w, size_t t, float* y, int N, float beta) const {
    for (size_t p = un.first[t]; p < un.first[t + 1]; ++p) {
      const Piece& pc = un.pieces[p];
      matmul(x, M, K, w.t[p], int(pc.rows), y + pc.row0, beta, N);
    }
  }
  const float* vec(const Unit& un, const UnitPtrs& w, size_t t) const { return w.t[un.first[t]]; }
  void rmsnorm(const float* x, const float* w, float* out, int M) const {
    const int d = c_.dim;
    for (int r = 0; r < M; ++r) {
      const float* xr = x + size_t(r) * d;
      double ss = 0;
      for (int i = 0; i < d; ++i) ss += double(xr[i]) * xr[i];
      const float inv = float(1.0 / std::sqrt(ss / d + c_.eps));
      for (int i = 0; i < d; ++i) out[size_t(r) * d + i] = xr[i] * inv * w[i];
    }
  }
  void rope(float* v, int heads, int p) const {
    const int hd = c_.head_dim(), h2 = hd / 2;
    const float *cs = &cos_[size_t(p) * h2], *sn = &sin_[size_t(p) * h2];
    for (int h = 0; h < heads; ++h) {
      float* x = v + size_t(h) * hd;
      for (int i = 0; i < h2; ++i) {
        float a = x[i], b = x[i + h2];
        x[i] = a * cs[i] - b * sn[i];
        x[i + h2] = a * sn[i] + b * cs[i];
      }
    }
  }

  void forward(WeightSource& ws, const std::vector<int>& seq, const std::vector<int>& pos, const std::vector<int>& tok,
               std::vector<int>& next) {
    const int M = int(tok.size()), d = c_.dim, kv = c_.kv_dim(), hd = c_.head_dim(), f = c_.ffn;
    const int group = c_.n_heads / c_.n_kv;
    ws.begin_forward();
    const Unit& gu = units_.back();
    const uint64_t rpp = gu.rows_per[1];
    for (int r = 0; r < M; ++r) {
      const uint64_t t = uint64_t(tok[size_t(r)]);
      std::memcpy(&x_[size_t(r) * d], ws.embed_chunk(int(gu.first[1] + t / rpp)) + (t % rpp) * d, size_t(d) * 4);
    }
    const float scale = 1.f / std::sqrt(float(hd));
    for (int l = 0; l < c_.n_layers; ++l) {
      const UnitPtrs& w = ws.stage(l);
      const Unit& un = units_[size_t(l)];
      rmsnorm(x_.data(), vec(un, w, 0), xn_.data(), M);
      mm(xn_.data(), M, d, un, w, 1, q_.data(), d, 0.f);
      mm(xn_.data(), M, d, un, w, 2, kk_.data(), kv, 0.f);
      mm(xn_.data(), M, d, un, w, 3, vv_.data(), kv, 0.f);
      float* Kc = &k_[size_t(l) * S_ * T_ * kv];
      float* Vc = &v_[size_t(l) * S_ * T_ * kv];
      for (int r = 0; r < M; ++r) {
        rope(&q_[size_t(r) * d], c_.n_heads, pos[size_t(r)]);
        rope(&kk_[size_t(r) * kv], c_.n_kv, pos[size_t(r)]);
        const size_t at = (size_t(seq[size_t(r)]) * T_ + size_t(pos[size_t(r)])) * kv;
        std::memcpy(Kc + at, &kk_[size_t(r) * kv], size_t(kv) * 4);
        std::memcpy(Vc + at, &vv_[size_t(r) * kv], size_t(kv) * 4);
      }
      for (int r = 0; r < M; ++r) {  // causal attention over this sequence's cache
        const int s = seq[size_t(r)], p = pos[size_t(r)];
        for (int h = 0; h < c_.n_heads; ++h) {
          const float* qh = &q_[size_t(r) * d + size_t(h) * hd];
          const int kh = h / group;
          float mx = -INFINITY;
          for (int t = 0; t <= p; ++t) {
            const float* kt = Kc + (size_t(s) * T_ + t) * kv + size_t(kh) * hd;
            float a = 0;
            for (int i = 0; i < hd; ++i) a += qh[i] * kt[i];
            sc_[size_t(t)] = a * scale;
            mx = std::max(mx, sc_[size_t(t)]);
          }
          float z = 0;
          for (int t = 0; t <= p; ++t) z += (sc_[size_t(t)] = std::exp(sc_[size_t(t)] - mx));
          float* o = &att_[size_t(r) * d + size_t(h) * hd];
          std::fill(o, o + hd, 0.f);
          for (int t = 0; t <= p; ++t) {
            const float* vt = Vc + (size_t(s) * T_ + t) * kv + size_t(kh) * hd;
            const float wt = sc_[size_t(t)] / z;
            for (int i = 0; i < hd; ++i) o[i] += wt * vt[i];
          }
        }
      }
      mm(att_.data(), M, d, un, w, 4, x_.data(), d, 1.f);  // residual
      rmsnorm(x_.data(), vec(un, w, 5), xn_.data(), M);
      mm(xn_.data(), M, d, un, w, 6, g_.data(), f, 0.f);
      mm(xn_.data(), M, d, un, w, 7, up_.data(), f, 0.f);
      for (size_t i = 0; i < size_t(M) * f; ++i) {
        const float gv = g_[i];
        g_[i] = gv / (1.f + std::exp(-gv)) * up_[i];
      }
      mm(g_.data(), M, f, un, w, 8, x_.data(), d, 1.f);  // residual
    }
    // The LM head for each sequence's last row only.
    const UnitPtrs& gl = ws.stage(c_.n_layers);
    const int B = int(next.size());
    for (int s = 0; s < B; ++s) {
      int last = -1;
      for (int r = 0; r < M; ++r)
        if (seq[size_t(r)] == s) last = r;
      std::memcpy(&att_[size_t(s) * d], &x_[size_t(last) * d], size_t(d) * 4);
    }
    rmsnorm(att_.data(), vec(gu, gl, 0), xn_.data(), B);
    mm(xn_.data(), B, d, gu, gl, 1, logits_.data(), c_.vocab, 0.f);
    for (int s = 0; s < B; ++s) {
      const float* lg = &logits_[size_t(s) * c_.vocab];
      next[size_t(s)] = int(std::max_element(lg, lg + c_.vocab) - lg);
    }
  }

  Config c_;
  const std::vector<Unit>& units_;
  size_t S_, T_, R_;
  std::vector<float> k_, v_, x_, xn_, q_, kk_, vv_, att_, g_, up_, logits_, sc_, cos_, sin_;
};

// ---------------------------------------------------------------------------------------
// What one worker measured; PE 0 (or the fork parent) collects one per worker.

constexpr int kMaxReq = 64;
// Phases of the load: the symmetric allocation (collective: barriers, commit), reading and
// converting (private: into malloc'ed memory), mapping what the worker reads (mmap's
// MAP_POPULATE, the symm modes' fault-in of the peers' parts), the staging buffers.
constexpr const char* kLoadPhase[4] = {"alloc", "convert", "map", "stage"};
struct WorkerStat {
  int32_t pe = 0, pid = 0, serves = 1;
  double load_wall = 0, load_cpu = 0, minflt = 0, majflt = 0;
  // load split into phases (kLoadPhase): process CPU, this thread's CPU, wall, minor faults
  double lph_cpu[4] = {}, lph_tcpu[4] = {}, lph_wall[4] = {}, lph_minflt[4] = {};
  double phase_wall[2] = {}, phase_cpu[2] = {}, phase_tokens[2] = {}, phase_t0[2] = {}, phase_t1[2] = {};
  int32_t nreq[2] = {};
  double lat[2][kMaxReq] = {};
  uint64_t hash[2][kMaxReq] = {};
  int32_t ver[2][kMaxReq] = {};
  double fetch_s = 0, fetch_bytes = 0, compute_s = 0, serve_minflt = 0;
  Smaps mem0, mem1;
  double weights_file_pss_kb = 0;  // mmap mode: the weights mapping's Pss at the end
  double private_bytes = 0;
  int32_t switches = 0, torn = 0;
  uint64_t served = 0;  // bit v: a request was served on version v (every request, recorded or not)
  double stall_max = 0, stall_sum = 0, boundaries = 0, publish_s = 0, publishes = 0;
};

std::vector<std::vector<int>> make_prompts(const Options& o, const Config& c, int worker, int phase, int r, int B) {
  std::vector<std::vector<int>> p(size_t(B), std::vector<int>(size_t(o.prompt)));
  for (int s = 0; s < B; ++s)
    for (int i = 0; i < o.prompt; ++i) {
      uint64_t k = splitmix(o.seed ^ splitmix(uint64_t(worker) << 40 | uint64_t(phase) << 32 | uint64_t(r) << 16 | uint64_t(s)) ^ uint64_t(i) * 0x51ed27);
      p[size_t(s)][size_t(i)] = int(k % uint64_t(c.vocab));
    }
  return p;
}

// Serves phase `ph` (0: batch 1, o.requests requests; 1: batch o.batch, o.batch_requests).
// `boundary` runs before each request and returns the weight version it will use; `more`
// says whether to go on past the count (update mode waits for the last version).
template <class Boundary, class After, class More>
void serve_phase(const Options& o, const Config& c, Decoder& dec, WeightSource& ws, WorkerStat& st, int worker, int ph,
                 Boundary&& boundary, After&& after, More&& more) {
  const int B = ph == 0 ? 1 : o.batch, R = ph == 0 ? o.requests : o.batch_requests;
  const double t0 = now_s(), c0 = cpu_s();
  for (int r = 0; r < R || more(r); ++r) {
    int ver = boundary();
    auto prompts = make_prompts(o, c, worker, ph, r, B);
    double a = now_s();
    uint64_t h = dec.request(ws, prompts, o.gen);
    double b = now_s();
    after(ver);
    if (ver >= 0 && ver < 64) st.served |= uint64_t(1) << ver;
    st.phase_tokens[ph] += double(B) * o.gen;
    if (r < kMaxReq) {
      st.lat[ph][r] = b - a, st.hash[ph][r] = h, st.ver[ph][r] = ver;
      st.nreq[ph] = r + 1;
    }
  }
  st.phase_t0[ph] = t0, st.phase_t1[ph] = now_s();  // CLOCK_MONOTONIC: comparable across the workers
  st.phase_wall[ph] = st.phase_t1[ph] - t0;
  st.phase_cpu[ph] = cpu_s() - c0;
}

void serve_plain(const Options& o, const Config& c, Decoder& dec, WeightSource& ws, WorkerStat& st, int worker) {
  for (int ph = 0; ph < 2; ++ph)
    serve_phase(o, c, dec, ws, st, worker, ph, [] { return 0; }, [](int) {}, [](int) { return false; });
}

void fault_counts(double& minflt, double& majflt) {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  minflt = double(ru.ru_minflt), majflt = double(ru.ru_majflt);
}

// ---------------------------------------------------------------------------------------
// The report

std::string json_smaps(const Smaps& s) {
  std::ostringstream o;
  o << "{\"rss_kb\":" << s.rss << ",\"pss_kb\":" << s.pss << ",\"pss_anon_kb\":" << s.pss_anon << ",\"pss_file_kb\":"
    << s.pss_file << ",\"pss_shmem_kb\":" << s.pss_shmem << ",\"uss_kb\":" << s.uss << ",\"hugetlb_kb\":"
    << s.shared_hugetlb + s.private_hugetlb << "}";
  return o.str();
}

void write_report(const Options& o, const Config& c, uint64_t model_bytes, uint64_t part_bytes, int n, const std::vector<WorkerStat>& ws,
                  const NodeMem& n0, const NodeMem& n1, double load_wall_total) {
  std::ostringstream j;
  j.precision(9);
  const char* heap_dir = std::getenv("SYMMEM_HEAP_DIR");
  j << "{\"mode\":\"" << o.mode << "\",\"workers\":" << n << ",\"cold\":" << (o.cold ? "true" : "false")
    << ",\"huge\":" << (o.huge ? "true" : "false") << ",\"heap_dir\":\"" << (heap_dir ? heap_dir : "") << "\""
    << ",\"config\":{\"dim\":" << c.dim << ",\"n_layers\":" << c.n_layers << ",\"n_heads\":" << c.n_heads
    << ",\"n_kv_heads\":" << c.n_kv << ",\"ffn_dim\":" << c.ffn << ",\"vocab\":" << c.vocab << "}"
    << ",\"model_f32_bytes\":" << model_bytes << ",\"part_bytes\":" << part_bytes << ",\"batch\":" << o.batch << ",\"prompt\":" << o.prompt
    << ",\"gen\":" << o.gen << ",\"load_wall_s\":" << load_wall_total << ",\"blas_core\":\"" << openblas_get_corename()
    << "\",\"node\":{\"cgroup_before\":" << n0.cgroup << ",\"cgroup_after\":" << n1.cgroup
    << ",\"used_before\":" << n0.used << ",\"used_after\":" << n1.used << ",\"read_cache_before\":" << n0.cached_read
    << ",\"read_cache_after\":" << n1.cached_read << ",\"stat_before\":" << n0.stat << ",\"stat_after\":" << n1.stat << "},\"per_worker\":[";
  uint64_t check = 1469598103934665603ull;
  for (size_t i = 0; i < ws.size(); ++i) {
    const WorkerStat& w = ws[i];
    j << (i ? "," : "") << "{\"pe\":" << w.pe << ",\"pid\":" << w.pid << ",\"serves\":" << w.serves
      << ",\"load_wall_s\":" << w.load_wall << ",\"load_cpu_s\":" << w.load_cpu << ",\"minflt\":" << w.minflt
      << ",\"load_phases\":{";
    for (int ph = 0; ph < 4; ++ph)
      j << (ph ? "," : "") << "\"" << kLoadPhase[ph] << "\":{\"cpu_s\":" << w.lph_cpu[ph] << ",\"thread_cpu_s\":"
        << w.lph_tcpu[ph] << ",\"wall_s\":" << w.lph_wall[ph] << ",\"minflt\":" << w.lph_minflt[ph] << "}";
    j << "}"
      << ",\"majflt\":" << w.majflt << ",\"serve_minflt\":" << w.serve_minflt << ",\"private_bytes\":" << w.private_bytes << ",\"fetch_s\":" << w.fetch_s
      << ",\"fetch_bytes\":" << w.fetch_bytes << ",\"compute_s\":" << w.compute_s << ",\"mem_start\":" << json_smaps(w.mem0)
      << ",\"mem_end\":" << json_smaps(w.mem1) << ",\"weights_file_pss_kb\":" << w.weights_file_pss_kb << ",\"switches\":" << w.switches << ",\"served_mask\":" << w.served << ",\"torn\":" << w.torn
      << ",\"stall_max_s\":" << w.stall_max << ",\"stall_sum_s\":" << w.stall_sum << ",\"boundaries\":" << w.boundaries
      << ",\"publish_s\":" << w.publish_s << ",\"publishes\":" << w.publishes << ",\"phases\":[";
    for (int ph = 0; ph < 2; ++ph) {
      j << (ph ? "," : "") << "{\"wall_s\":" << w.phase_wall[ph] << ",\"t0\":" << w.phase_t0[ph]
        << ",\"t1\":" << w.phase_t1[ph] << ",\"cpu_s\":" << w.phase_cpu[ph]
        << ",\"tokens\":" << w.phase_tokens[ph] << ",\"requests\":[";
      for (int r = 0; r < w.nreq[ph]; ++r) {
        j << (r ? "," : "") << "[" << w.lat[ph][r] << ",\"" << std::hex << w.hash[ph][r] << std::dec << "\","
          << w.ver[ph][r] << "]";
        if (w.serves && w.ver[ph][r] == 0) check = fnv(fnv(fnv(check, uint64_t(w.pe)), uint64_t(ph * kMaxReq + r)), w.hash[ph][r]);
      }
      j << "]}";
    }
    j << "]}";
  }
  j << "],\"checksum\":\"" << std::hex << check << std::dec << "\"}\n";
  if (!o.json.empty()) {
    std::ofstream f(o.json);
    f << j.str();
    if (!f) throw InputError("cannot write " + o.json);
  }
  double pss = 0, tok = 0, wall = 0;
  for (auto& w : ws) pss += w.mem1.pss - w.mem0.pss, tok += w.phase_tokens[0], wall = std::max(wall, w.phase_wall[0]);
  std::printf("weight_share %s: %d workers, model %.1f MiB F32, load %.3f s, sum dPSS %.1f MiB, node d%.1f MiB, "
              "batch-1 %.2f tok/s, checksum %016llx\n",
              o.mode.c_str(), n, double(model_bytes) / 1048576, load_wall_total, pss / 1024,
              ((n1.cgroup >= 0 ? n1.cgroup - n0.cgroup : n1.used - n0.used) - (n1.cached_read - n0.cached_read)) / 1048576,
              wall > 0 ? tok / wall : 0.0, (unsigned long long)check);
}

// ---------------------------------------------------------------------------------------
// fork mode: no runtime; the parent loads, forks workers-1 children, serves as worker 0.

int run_fork(const Options& o) {
  SafeTensors st;
  open_safetensors(o.weights, st);
  const Config c = config_of(st, "F16");
  auto units = units_of(c);
  uint64_t model = 0;
  for (auto& u : units) model += u.bytes;
  const double avail = meminfo_kb("MemAvailable") * 1024;
  if (double(model) > 0.9 * avail)
    throw InputError("one F32 copy (" + std::to_string(model >> 20) + " MiB) does not fit in MemAvailable (" +
                     std::to_string(uint64_t(avail) >> 20) + " MiB)");
  if (o.cold) drop_cache(o.weights);
  const std::vector<std::string> files = {o.weights};
  WorkerStat me;
  me.mem0 = read_smaps(0);
  NodeMem n0 = node_mem(files);
  const double t0 = now_s(), c0 = cpu_s();
  double f0, j0;
  fault_counts(f0, j0);
  TableSource src;
  std::vector<float*> blocks;
  {
    const MappedTensors f16(st);  // unmapped before the fork
    for (auto& u : units) {
      float* p = private_block(o, u, units, blocks);
      convert_unit(f16, u, p);
      src.table.push_back(ptrs_at(u, p));
    }
  }
  const int B = std::max(1, o.batch);
  int go[2], res[2];
  if (pipe(go) || pipe(res)) throw InputError("pipe failed");
  std::vector<pid_t> kids;
  fflush(nullptr);
  for (int w = 1; w < o.workers; ++w) {
    pid_t pid = fork();
    if (pid < 0) throw InputError("fork failed: " + std::string(std::strerror(errno)));
    if (pid == 0) {
      close(go[1]), close(res[0]);
      WorkerStat ks;
      ks.pe = w, ks.pid = getpid();
      Decoder dec(c, units, B, o.prompt + o.gen, B * o.prompt);
      ks.private_bytes = double(dec.private_bytes());
      double a0, b0, a1, b1;
      fault_counts(a0, b0);
      serve_plain(o, c, dec, src, ks, w);
      fault_counts(a1, b1);
      ks.serve_minflt = a1 - a0;
      ssize_t wr = write(res[1], &ks, sizeof ks);
      char x;
      ssize_t rd = read(go[0], &x, 1);  // stay alive (and mapped) until the parent has measured
      _exit(wr == ssize_t(sizeof ks) && rd >= 0 ? 0 : 1);
    }
    kids.push_back(pid);
  }
  close(go[0]), close(res[1]);
  me.load_wall = now_s() - t0, me.load_cpu = cpu_s() - c0;
  double f1, j1;
  fault_counts(f1, j1);
  me.minflt = f1 - f0, me.majflt = j1 - j0;
  me.pid = getpid();
  Decoder dec(c, units, B, o.prompt + o.gen, B * o.prompt);
  me.private_bytes = double(dec.private_bytes());
  double a0, b0, a1, b1;
  fault_counts(a0, b0);
  serve_plain(o, c, dec, src, me, 0);
  fault_counts(a1, b1);
  me.serve_minflt = a1 - a0;
  std::vector<WorkerStat> all{me};
  for (size_t k = 0; k < kids.size(); ++k) {
    WorkerStat ks;
    size_t got = 0;
    while (got < sizeof ks) {
      ssize_t r = read(res[0], reinterpret_cast<char*>(&ks) + got, sizeof ks - got);
      if (r <= 0) throw InputError("a forked worker died before reporting");
      got += size_t(r);
    }
    all.push_back(ks);
  }
  // Every worker is done and alive: measure them all now.
  for (auto& w : all) {
    w.mem1 = read_smaps(w.pid == getpid() ? 0 : w.pid);
    if (w.pe != 0) w.mem0 = Smaps{};  // a child starts with nothing of its own
  }
  all[0].mem1 = read_smaps(0);
  NodeMem n1 = node_mem(files);
  close(go[1]);
  int bad = 0;
  for (pid_t p : kids) {
    int s = 0;
    waitpid(p, &s, 0);
    bad += !(WIFEXITED(s) && WEXITSTATUS(s) == 0);
  }
  std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.pe < b.pe; });
  write_report(o, c, model, 0, o.workers, all, n0, n1, me.load_wall);
  for (auto* p : blocks) std::free(p);
  return bad ? 1 : 0;
}

// ---------------------------------------------------------------------------------------
// Modes over the runtime

// The pieces spread over the PEs, largest first onto the least loaded PE (deterministic, so
// every PE computes the same assignment): each piece's owner and offset in its owner's part,
// and the part size every PE allocates (symmetric allocation: the same on every PE).
struct Placement {
  std::vector<std::vector<int>> owner;
  std::vector<std::vector<uint64_t>> off;
  uint64_t part = 0;
};
Placement place(const std::vector<Unit>& units, int n) {
  Placement p;
  std::vector<std::pair<size_t, size_t>> order;
  for (size_t u = 0; u < units.size(); ++u) {
    p.owner.emplace_back(units[u].pieces.size());
    p.off.emplace_back(units[u].pieces.size());
    for (size_t t = 0; t < units[u].pieces.size(); ++t) order.emplace_back(u, t);
  }
  auto sz = [&](std::pair<size_t, size_t> x) { return (units[x.first].pieces[x.second].bytes() + 63) / 64 * 64; };
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return sz(a) > sz(b); });
  std::vector<uint64_t> load(size_t(n), 0);
  for (auto x : order) {
    int pe = int(std::min_element(load.begin(), load.end()) - load.begin());
    p.owner[x.first][x.second] = pe, p.off[x.first][x.second] = load[size_t(pe)];
    load[size_t(pe)] += sz(x);
  }
  p.part = *std::max_element(load.begin(), load.end());
  return p;
}

// Faults every page of every piece into this process's page table (read-only); pieces
// owned by `skip_owner` (this PE, which wrote them) are mapped already.
void prefault(const std::vector<UnitPtrs>& table, const std::vector<Unit>& units, const Placement& pl, int skip_owner) {
  const uintptr_t pg = uintptr_t(sysconf(_SC_PAGESIZE));
  for (size_t u = 0; u < units.size(); ++u)
    for (size_t t = 0; t < units[u].pieces.size(); ++t) {
      if (pl.owner[u][t] == skip_owner) continue;
      const uintptr_t a = reinterpret_cast<uintptr_t>(table[u].t[t]), e = a + units[u].pieces[t].bytes();
      const uintptr_t b = a & ~(pg - 1);
#ifdef MADV_POPULATE_READ
      if (madvise(reinterpret_cast<void*>(b), e - b, MADV_POPULATE_READ) == 0) continue;
#endif
      volatile const char* p = reinterpret_cast<const char*>(a);
      char sink = 0;
      for (uintptr_t x = 0; x < e - a; x += pg) sink ^= p[x];
      (void)sink;
    }
}

// Unit u's pointers into the owners' parts (through shmem_ptr).
UnitPtrs symm_ptrs(symmem::Runtime& rt, const Placement& pl, char* part, size_t u, size_t npieces) {
  UnitPtrs p;
  for (size_t t = 0; t < npieces; ++t) p.t.push_back(static_cast<const float*>(rt.ptr(part + pl.off[u][t], pl.owner[u][t])));
  return p;
}

// Copies unit u from its owner's heap into a private buffer before it is used.
struct StagedSource : WeightSource {
  symmem::Runtime& rt;
  const std::vector<Unit>& units;
  const Placement& pl;
  char* part;
  UnitPtrs emb;
  bool prefetch;
  std::vector<float*> buf;
  int pending = -1;
  StagedSource(symmem::Runtime& r, const std::vector<Unit>& u, const Placement& p, char* base, bool pf)
      : rt(r), units(u), pl(p), part(base), prefetch(pf) {
    uint64_t mx = 0;
    for (auto& x : units) mx = std::max(mx, x.bytes);
    for (int i = 0; i < (pf ? 2 : 1); ++i) {
      float* b = static_cast<float*>(std::aligned_alloc(64, mx));
      if (!b) throw InputError("out of memory for the staging buffer");
      std::memset(b, 0, mx);
      buf.push_back(b);
    }
    const size_t g = units.size() - 1;
    emb = symm_ptrs(rt, pl, part, g, units[g].pieces.size());
  }
  ~StagedSource() override {
    for (auto* b : buf) std::free(b);
  }
  uint64_t private_bytes() const { return buf.size() * std::max_element(units.begin(), units.end(), [](auto& a, auto& b) { return a.bytes < b.bytes; })->bytes; }
  void fetch(int u, float* into, bool nbi) {
    const Unit& un = units[size_t(u)];
    for (size_t t = 0; t < un.pieces.size(); ++t) {
      char* dst = reinterpret_cast<char*>(into) + un.off[t];
      const char* src = part + pl.off[size_t(u)][t];
      const size_t bytes = un.pieces[t].bytes();
      if (nbi)
        rt.get_nbi(dst, src, bytes, pl.owner[size_t(u)][t]);
      else
        rt.get(dst, src, bytes, pl.owner[size_t(u)][t]);
      fetch_bytes += bytes;
    }
  }
  void begin_forward() override {
    if (!prefetch) return;
    double t = now_s();
    fetch(0, buf[0], true);
    pending = 0;
    fetch_s += now_s() - t;
  }
  UnitPtrs cur;
  const UnitPtrs& stage(int u) override {
    double t = now_s();
    float* b;
    if (!prefetch) {
      b = buf[0];
      fetch(u, b, false);
    } else {
      rt.quiet();  // unit u (issued one stage ago) is complete
      b = buf[size_t(u & 1)];
      if (u + 1 < int(units.size())) fetch(u + 1, buf[size_t((u + 1) & 1)], true);
    }
    fetch_s += now_s() - t;
    cur = ptrs_at(units[size_t(u)], b);
    return cur;
  }
  const float* embed_chunk(int k) override { return emb.t[size_t(k)]; }
};

int serve_pe(const Options& o, symmem::Runtime& rt) {
  // The input checks give the same verdict on every PE.
  SafeTensors st, st2;
  Config c;
  if (o.mode == "mmap") {
    open_safetensors(o.weights_f32, st);
    c = config_of(st, "F32");
  } else {
    open_safetensors(o.weights, st);
    c = config_of(st, "F16");
  }
  if (o.mode == "update") {
    open_safetensors(o.update_weights, st2);
    if (!(config_of(st2, "F16") == c)) throw InputError(o.update_weights + ": not the same shape as " + o.weights);
  }
  auto units = units_of(c);
  uint64_t model = 0;
  for (auto& u : units) model += u.bytes;

  const int me = rt.my_pe(), n = rt.n_pes();
  if (o.mode == "update" && n < 2) throw InputError("update needs at least 2 PEs (PE 0 publishes, the others serve)");
  const Placement pl = place(units, n);
  const bool symm = o.mode.rfind("symm", 0) == 0 || o.mode == "update";

  // PE 0 decides, everyone learns: the private copies must fit in memory; the heap must hold
  // this job's part.
  auto stats = rt.alloc<WorkerStat>(size_t(n));
  auto verdict = rt.alloc<int64_t>(1);
  verdict[0] = 0;
  if (me == 0) {
    const double avail = meminfo_kb("MemAvailable") * 1024;
    if (o.mode == "private" && double(model) * n > 0.9 * avail) verdict[0] = 1;
    if (o.cold) {
      drop_cache(o.mode == "mmap" ? o.weights_f32 : o.weights);
      if (o.mode == "update") drop_cache(o.update_weights);
    }
  }
  rt.barrier_all();
  verdict[0] = rt.g(verdict.data(), 0);
  if (verdict[0] == 1)
    throw InputError(std::to_string(n) + " private F32 copies of " + std::to_string(model >> 20) +
                     " MiB do not fit in MemAvailable (" + std::to_string(uint64_t(meminfo_kb("MemAvailable")) >> 10) +
                     " MiB): use fewer workers or a sharing mode");
  const std::vector<std::string> files =
      o.mode == "mmap" ? std::vector<std::string>{} : o.mode == "update" ? std::vector<std::string>{o.weights, o.update_weights}
                                                                        : std::vector<std::string>{o.weights};
  // Update-mode words: epoch (per reader, set by PE 0), ack (on PE 0, one per reader), tags
  // (on PE 0: per half and unit, the version written before and after the unit's data).
  auto epoch = rt.alloc<uint64_t>(1);
  auto ack = rt.alloc<uint64_t>(size_t(n));
  auto tags = rt.alloc<uint64_t>(2 * units.size() * 2);
  epoch[0] = 0;
  for (auto& a : ack) a = 0;
  for (size_t i = 0; i < tags.size(); ++i) tags[i] = (i < units.size() * 2) ? 0 : ~0ull;

  WorkerStat ws;
  ws.pe = me, ws.pid = getpid();
  ws.serves = o.mode == "update" ? me != 0 : 1;
  rt.barrier_all();
  NodeMem n0;
  if (me == 0) n0 = node_mem(files);
  ws.mem0 = read_smaps(0);
  rt.barrier_all();

  // ---- load: until this worker can serve, with the data resident ----
  const double t0 = now_s();
  double f0, j0;
  fault_counts(f0, j0);
  // lap(ph) charges what was spent since the last lap to load phase ph; skip() to nothing.
  double lc = cpu_s(), lt = thread_cpu_s(), lw = t0, lf = f0;
  auto lap = [&](int ph) {
    double c = cpu_s(), t = thread_cpu_s(), w = now_s(), f, j;
    fault_counts(f, j);
    if (ph >= 0) {
      ws.lph_cpu[ph] += c - lc, ws.lph_tcpu[ph] += t - lt, ws.lph_wall[ph] += w - lw, ws.lph_minflt[ph] += f - lf;
      ws.load_cpu += c - lc;
    }
    lc = c, lt = t, lw = w, lf = f;
  };
  auto skip = [&] { lap(-1); };
  char* part[2] = {nullptr, nullptr};
  if (symm) {
    const int halves = o.mode == "update" ? 2 : 1;
    for (int h = 0; h < halves; ++h) {
      part[h] = static_cast<char*>(rt.align(64, pl.part));
      if (!part[h])
        throw InputError("the symmetric heap (" + std::to_string(rt.heap_size() >> 20) + " MiB per PE) cannot hold " +
                         std::to_string(halves) + " x " + std::to_string(pl.part >> 20) + " MiB of weights per PE for " +
                         std::to_string(n) + " workers: raise SHMEM_SYMMETRIC_SIZE (or /dev/shm)");
    }
    lap(0);
  }
  std::vector<float*> blocks;
  void* map = MAP_FAILED;
  TableSource table[2];
  if (o.mode == "private") {
    const MappedTensors f16(st);
    for (auto& u : units) {
      float* p = private_block(o, u, units, blocks);
      convert_unit(f16, u, p);
      table[0].table.push_back(ptrs_at(u, p));
    }
  } else if (o.mode == "mmap") {
    map = mmap(nullptr, st.file_size, PROT_READ, MAP_SHARED | MAP_POPULATE, st.fd, 0);
    if (map == MAP_FAILED) throw InputError("cannot map " + st.path + ": " + std::strerror(errno));
    lap(2);
    for (auto& u : units) {
      UnitPtrs p;
      for (size_t t = 0; t < u.pieces.size(); ++t)
        p.t.push_back(reinterpret_cast<const float*>(static_cast<const char*>(map) + st.data_start +
                                                     st.at(u.pieces[t].name).begin + u.pieces[t].begin() * 4));
      table[0].table.push_back(p);
    }
  } else {
    const MappedTensors f16(st);
    for (size_t u = 0; u < units.size(); ++u)
      for (size_t t = 0; t < units[u].pieces.size(); ++t)
        if (pl.owner[u][t] == me) convert_piece(f16, units[u].pieces[t], reinterpret_cast<float*>(part[0] + pl.off[u][t]));
  }
  lap(o.mode == "mmap" ? 2 : 1);
  rt.barrier_all();  // symm: every part is written
  skip();            // waiting for the slowest converter is not load work
  if (symm) {
    for (int h = 0; h < (o.mode == "update" ? 2 : 1); ++h)
      for (size_t u = 0; u < units.size(); ++u)
        table[h].table.push_back(symm_ptrs(rt, pl, part[h], u, units[u].pieces.size()));
    // Ready to serve means mapped too: fault the peers' parts into this process's page
    // table now (as mmap's MAP_POPULATE does), not during the first requests.
    prefault(table[0].table, units, pl, me);
    lap(2);
  }
  std::unique_ptr<StagedSource> staged;
  if (o.mode == "symm-staged" || o.mode == "symm-prefetch") {
    staged = std::make_unique<StagedSource>(rt, units, pl, part[0], o.mode == "symm-prefetch");
    lap(3);  // the staging buffers are part of getting ready
  }
  ws.load_wall = now_s() - t0;
  double f1, j1;
  fault_counts(f1, j1);
  ws.minflt = f1 - f0, ws.majflt = j1 - j0;
  rt.barrier_all();
  const double load_wall_total = now_s() - t0;

  // ---- serve ----
  const int B = std::max(1, o.batch);
  Decoder dec(c, units, B, o.prompt + o.gen, B * o.prompt);
  ws.private_bytes = double(dec.private_bytes()) + (staged ? double(staged->private_bytes()) : 0);
  WeightSource& src = staged ? static_cast<WeightSource&>(*staged) : table[0];
  const double s0 = now_s();
  double sf0, sj0;
  fault_counts(sf0, sj0);
  if (o.mode != "update") {
    serve_plain(o, c, dec, src, ws, me);
  } else if (me == 0) {
    // Publisher: version v goes into half v & 1, from --update-weights when v is odd.
    uint64_t* tag0 = tags.data();
    for (int v = 1; v <= o.updates; ++v) {
      for (int r = 1; r < n; ++r) rt.wait_until(&ack[size_t(r)], symmem::Cmp::kGe, uint64_t(v - 1));  // grace
      const double a = now_s();
      const int h = v & 1;
      const MappedTensors from((v & 1) ? st2 : st);
      for (size_t u = 0; u < units.size(); ++u) {
        uint64_t* tg = tag0 + (size_t(h) * units.size() + u) * 2;
        std::atomic_ref<uint64_t>(tg[0]).store(uint64_t(v), std::memory_order_release);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        for (size_t t = 0; t < units[u].pieces.size(); ++t)
          convert_piece(from, units[u].pieces[t], static_cast<float*>(rt.ptr(part[h] + pl.off[u][t], pl.owner[u][t])));
        std::atomic_ref<uint64_t>(tg[1]).store(uint64_t(v), std::memory_order_release);
      }
      rt.quiet();
      std::atomic_thread_fence(std::memory_order_release);  // the stores through shmem_ptr, then the epoch
      for (int r = 1; r < n; ++r) rt.atomic_set(epoch.data(), uint64_t(v), r);
      ws.publish_s += now_s() - a;
      ws.publishes += 1;
    }
  } else {
    // Reader: switch halves only between requests; check the halves' tags around each one.
    uint64_t cur = 0;
    const uint64_t* tag0 = static_cast<const uint64_t*>(rt.ptr(tags.data(), 0));
    auto tags_ok = [&](uint64_t v) {
      const size_t h = v & 1;
      for (size_t u = 0; u < units.size(); ++u) {
        const uint64_t* tg = tag0 + (h * units.size() + u) * 2;
        uint64_t b = std::atomic_ref<const uint64_t>(tg[0]).load(std::memory_order_acquire);
        uint64_t e = std::atomic_ref<const uint64_t>(tg[1]).load(std::memory_order_acquire);
        if (b != v || e != v) return false;
      }
      return true;
    };
    TableSource live;  // the table the decoder reads: half cur & 1
    live.table = table[0].table;
    auto boundary = [&]() {
      const double a = now_s();
      const uint64_t e = rt.atomic_fetch(epoch.data(), me);
      if (e != cur) {
        std::atomic_thread_fence(std::memory_order_acquire);
        cur = e;
        live.table = table[cur & 1].table;
        rt.atomic_set(&ack[size_t(me)], cur, 0);
        ws.switches += 1;
        ws.stall_max = std::max(ws.stall_max, now_s() - a);
      }
      ws.stall_sum += now_s() - a;
      ws.boundaries += 1;
      if (!tags_ok(cur)) ws.torn += 1;
      return int(cur);
    };
    auto after = [&](int v) {
      if (!tags_ok(uint64_t(v))) ws.torn += 1;
    };
    // Phase 0 goes on (serving, never idle) until the last version has been served.
    auto more = [&](int) { return cur < uint64_t(o.updates); };
    serve_phase(o, c, dec, live, ws, me, 0, boundary, after, more);
    serve_phase(o, c, dec, live, ws, me, 1, boundary, after, [](int) { return false; });
  }
  ws.compute_s = now_s() - s0 - src.fetch_s;
  double sf1, sj1;
  fault_counts(sf1, sj1);
  ws.serve_minflt = sf1 - sf0;
  ws.fetch_s = src.fetch_s, ws.fetch_bytes = double(src.fetch_bytes);
  rt.barrier_all();
  ws.mem1 = read_smaps(0);
  if (map != MAP_FAILED) ws.weights_file_pss_kb = mapping_pss_kb(map);
  rt.put(stats.data() + me, &ws, 1, 0);
  rt.barrier_all();  // every worker measured, all still alive
  if (me == 0) {
    NodeMem n1 = node_mem(files);
    std::vector<WorkerStat> all(stats.begin(), stats.end());
    write_report(o, c, model, symm ? pl.part * (o.mode == "update" ? 2 : 1) : 0, n, all, n0, n1, load_wall_total);
  }
  rt.barrier_all();
  if (map != MAP_FAILED) munmap(map, st.file_size);
  for (auto* p : blocks) std::free(p);
  staged.reset();
  rt.free(tags), rt.free(ack), rt.free(epoch);
  for (char* p : part)
    if (p) rt.free(p);
  rt.free(verdict), rt.free(stats);
  return 0;
}

int run_pe(const Options& o) {
  symmem::Runtime rt;
  try {
    return serve_pe(o, rt);
  } catch (const InputError& e) {
    // Every PE found the same problem at the same point: PE 0 says it, once, and nobody
    // leaves before it has (the launcher ends the job when the first PE exits).
    if (rt.my_pe() == 0 || !e.everywhere) std::fprintf(stderr, "weight_share: error: %s\n", e.what());
    std::fflush(stderr);
    if (e.everywhere) rt.barrier_all();
    return 1;
  }
}

}  // namespace
}  // namespace wshare

int main(int argc, char** argv) {
  openblas_set_num_threads(1);
  const wshare::Options o = wshare::parse(argc, argv);
  wshare::g_max_piece = uint64_t(o.piece_kib) << 10;
  try {
    return o.mode == "fork" ? wshare::run_fork(o) : wshare::run_pe(o);
  } catch (const wshare::InputError& e) {
    std::fprintf(stderr, "weight_share: error: %s\n", e.what());
    return 1;
  } catch (const symmem::Error& e) {
    std::fprintf(stderr, "weight_share: error: %s\n", e.what());
    return 1;
  }
}
