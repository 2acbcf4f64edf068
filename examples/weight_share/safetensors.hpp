// safetensors.hpp — reads the header of a safetensors file (8-byte little-endian header
// length, a JSON object, then the raw tensor bytes) and checks it against the file's size.
// Enough JSON for that header: objects, arrays, strings, integers and plain numbers.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace wshare {

// Every failure the user can cause (missing file, truncated file, bad shape) is one of these:
// main prints what() on one line and exits non-zero.
// `everywhere`: every PE of the job meets the same error at the same point.
struct InputError : std::runtime_error {
  explicit InputError(const std::string& what, bool all_pes = true) : std::runtime_error(what), everywhere(all_pes) {}
  bool everywhere;
};

struct TensorInfo {
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // relative to the data section
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

struct SafeTensors {
  std::string path;
  int fd = -1;
  uint64_t file_size = 0, data_start = 0;
  std::map<std::string, TensorInfo> tensors;
  std::map<std::string, std::string> meta;
  ~SafeTensors() {
    if (fd >= 0) close(fd);
  }
  const TensorInfo& at(const std::string& name) const {
    auto it = tensors.find(name);
    if (it == tensors.end()) throw InputError(path + ": no tensor " + name);
    return it->second;
  }
};

// The file mapped read-only while it is converted, as safetensors' safe_open and llama.cpp
// read weights: the conversion reads the page cache in place (no copy into a buffer first),
// and each process maps only the pages it converts. Unmapped when it goes, so the page cache
// never counts in a worker's memory figures after the load. The header check at open has
// made sure every tensor lies inside the file; one cut short while mapped (SIGBUS) ends the
// process with one line, as a short read did.
class MappedTensors {
 public:
  explicit MappedTensors(const SafeTensors& st) : st_(st) {
    void* p = mmap(nullptr, st.file_size, PROT_READ, MAP_SHARED, st.fd, 0);
    if (p == MAP_FAILED) throw InputError("cannot map " + st.path + ": " + std::strerror(errno));
    base_ = static_cast<const uint8_t*>(p);
    std::snprintf(bus_line(), kLine, "%s: truncated while it was read (file changed during the load?)\n",
                  st.path.c_str());
    struct sigaction sa {};
    sa.sa_handler = [](int) {
      const char* l = bus_line();
      (void)!write(2, l, std::strlen(l));
      _exit(1);
    };
    sigaction(SIGBUS, &sa, &old_);
  }
  ~MappedTensors() {
    sigaction(SIGBUS, &old_, nullptr);
    munmap(const_cast<uint8_t*>(base_), st_.file_size);
  }
  MappedTensors(const MappedTensors&) = delete;
  MappedTensors& operator=(const MappedTensors&) = delete;
  // Tensor `name`'s data, from its byte `byte_offset` on.
  const uint8_t* data(const std::string& name, uint64_t byte_offset) const {
    return base_ + st_.data_start + st_.at(name).begin + byte_offset;
  }

 private:
  static constexpr size_t kLine = 4096;
  static char* bus_line() {
    static char line[kLine];
    return line;
  }
  const SafeTensors& st_;
  const uint8_t* base_ = nullptr;
  struct sigaction old_ {};
};

namespace detail {

class Json {
 public:
  Json(const std::string& s, const std::string& path) : s_(s), path_(path) {}
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  [[noreturn]] void fail(const char* what) {
    throw InputError(path_ + ": bad safetensors header (" + what + " at byte " + std::to_string(i_) + ")");
  }
  void expect(char c) {
    ws();
    if (i_ >= s_.size() || s_[i_] != c) fail("unexpected character");
    ++i_;
  }
  bool peek(char c) {
    ws();
    return i_ < s_.size() && s_[i_] == c;
  }
  std::string str() {
    expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      if (s_[i_] == '\\') {
        if (++i_ >= s_.size()) fail("bad escape");
        char e = s_[i_];
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;  // \uXXXX is not used by our headers
      } else {
        out += s_[i_];
      }
      ++i_;
    }
    if (i_ >= s_.size()) fail("unterminated string");
    ++i_;
    return out;
  }
  std::string number() {
    ws();
    size_t b = i_;
    while (i_ < s_.size() && (std::isdigit((unsigned char)s_[i_]) || std::strchr("+-.eE", s_[i_]))) ++i_;
    if (b == i_) fail("expected a number");
    return s_.substr(b, i_ - b);
  }
  int64_t integer() {
    std::string t = number();
    char* e = nullptr;
    long long v = std::strtoll(t.c_str(), &e, 10);
    if (*e || v < 0) fail("expected a non-negative integer");
    return v;
  }
  std::vector<int64_t> int_array() {
    std::vector<int64_t> v;
    expect('[');
    if (peek(']')) return ++i_, v;
    for (;;) {
      v.push_back(integer());
      if (peek(',')) { ++i_; continue; }
      expect(']');
      return v;
    }
  }
  void skip_value() {
    ws();
    if (peek('"')) { str(); return; }
    if (peek('[') || peek('{')) {
      char open = s_[i_], close = open == '[' ? ']' : '}';
      ++i_;
      if (peek(close)) { ++i_; return; }
      for (;;) {
        if (open == '{') { str(); expect(':'); }
        skip_value();
        if (peek(',')) { ++i_; continue; }
        expect(close);
        return;
      }
    }
    number();
  }
  size_t pos() const { return i_; }

 private:
  const std::string& s_;
  std::string path_;
  size_t i_ = 0;
};

}  // namespace detail

// Opens and checks `path`; throws InputError with one line saying what is wrong.
inline void open_safetensors(const std::string& path, SafeTensors& st) {
  st.path = path;
  st.fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (st.fd < 0) throw InputError("cannot open weights file " + path + ": " + std::strerror(errno));
  struct stat sb {};
  fstat(st.fd, &sb);
  st.file_size = uint64_t(sb.st_size);
  uint64_t hlen = 0;
  if (st.file_size < 8 || pread(st.fd, &hlen, 8, 0) != 8)
    throw InputError(path + ": truncated (" + std::to_string(st.file_size) + " bytes, no safetensors header)");
  if (hlen > 100u << 20 || 8 + hlen > st.file_size)
    throw InputError(path + ": truncated or not safetensors (header length " + std::to_string(hlen) +
                     ", file " + std::to_string(st.file_size) + " bytes)");
  std::string h(hlen, '\0');
  if (pread(st.fd, h.data(), hlen, 8) != ssize_t(hlen)) throw InputError(path + ": cannot read header");
  st.data_start = 8 + hlen;
  detail::Json j(h, path);
  j.expect('{');
  while (!j.peek('}')) {
    std::string key = j.str();
    j.expect(':');
    if (key == "__metadata__") {
      j.expect('{');
      while (!j.peek('}')) {
        std::string k = j.str();
        j.expect(':');
        st.meta[k] = j.str();
        if (j.peek(',')) j.expect(',');
      }
      j.expect('}');
    } else {
      TensorInfo t;
      bool have_off = false;
      j.expect('{');
      while (!j.peek('}')) {
        std::string k = j.str();
        j.expect(':');
        if (k == "dtype") {
          t.dtype = j.str();
        } else if (k == "shape") {
          t.shape = j.int_array();
        } else if (k == "data_offsets") {
          auto o = j.int_array();
          if (o.size() != 2 || o[1] < o[0]) j.fail("bad data_offsets");
          t.begin = uint64_t(o[0]), t.end = uint64_t(o[1]);
          have_off = true;
        } else {
          j.skip_value();
        }
        if (j.peek(',')) j.expect(',');
      }
      j.expect('}');
      if (!have_off) j.fail("tensor without data_offsets");
      const uint64_t esize = t.dtype == "F16" || t.dtype == "BF16" ? 2 : t.dtype == "F32" ? 4 : 0;
      if (esize == 0) throw InputError(path + ": tensor " + key + " has dtype " + t.dtype + " (F16 or F32 expected)");
      if (uint64_t(t.numel()) * esize != t.end - t.begin)
        throw InputError(path + ": tensor " + key + " shape does not match its byte range");
      if (st.data_start + t.end > st.file_size)
        throw InputError(path + ": truncated: tensor " + key + " ends at byte " + std::to_string(st.data_start + t.end) +
                         " but the file has " + std::to_string(st.file_size));
      st.tensors[key] = std::move(t);
    }
    if (j.peek(',')) j.expect(',');
  }
}

}  // namespace wshare
