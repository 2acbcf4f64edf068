// The store's wire format: length-prefixed binary frames, big-endian integers.
//
//   frame   := u32 payload_length, payload            (payload_length <= kMaxFrame)
//   payload := u8 op, body
//   str     := u32 length, bytes
//
// A connection starts with the client's kHello (u32 protocol id, u16 version, u64 job
// magic, u32 rank, u8 security mode), in clear; the server answers kOk or
// kRefused(reason) and closes on refusal. Unless the mode is "off", both ends then run a
// TLS 1.3 handshake on the same stream and the server confirms it with one kOk frame,
// encrypted. After that every request gets exactly one response, in order:
//
//   kSet(str key, str value)             -> kOk
//   kGet(str key, u64 timeout_ms)        -> kValue(str) | kTimeout(u32 n, str missing...)
//   kWait(u32 n, str key..., u64 ms)     -> kOk         | kTimeout(u32 n, str missing...)
//   kAdd(str key, i64 delta)             -> kInt(i64 new value)
//   kCheck(u32 n, str key...)            -> kBools(u32 n, u8...)
//   kErase(str key)                      -> kOk
//   kCreate(str key, str value)          -> kValue(str value now stored: ours unless it existed)
//   kWatch(str key, str left, str drop)  -> kOk, later kValue(str value of key)
//   any                                  -> kError(u8 Errc, str message)
//
// kWatch is a dead man's switch for liveness (a connection of its own, one per PE): the
// server answers kOk at once, then kValue once `key` exists; if the connection closes while
// `left` does not exist, the server creates `key` = `drop` (kCreate semantics), which
// answers every other watch of that key.
// The server is the one that times out kGet / kWait (so a waiting client costs it no
// thread); the client only adds a grace period in case the server itself is gone.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace symmem::wire {

inline constexpr uint32_t kProtocolId = 0x53594d53;  // "SYMS"
inline constexpr uint16_t kVersion = 2;  // 2: security mode in the hello, TLS
inline constexpr uint32_t kMaxFrame = 64u << 20;
// Before the handshake only a hello may arrive; anything bigger is not one of ours.
inline constexpr uint32_t kMaxHelloFrame = 256;
inline constexpr size_t kHeaderSize = 4;

enum class Op : uint8_t {
  kHello = 1,
  kSet,
  kGet,
  kWait,
  kAdd,
  kCheck,
  kErase,
  kCreate,
  kWatch,
  kOk = 0x80,
  kRefused,
  kValue,
  kInt,
  kBools,
  kTimeout,
  kError,
};

inline uint32_t load_u32(const void* p) {
  const auto* b = static_cast<const unsigned char*>(p);
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
}

// Builds one frame; frame() patches the length in front.
class Writer {
 public:
  explicit Writer(Op op) : buf_(kHeaderSize, '\0') { u8(static_cast<uint8_t>(op)); }
  Writer& u8(uint8_t v) {
    buf_.push_back(static_cast<char>(v));
    return *this;
  }
  Writer& u16(uint16_t v) { return be(v, 2); }
  Writer& u32(uint32_t v) { return be(v, 4); }
  Writer& u64(uint64_t v) { return be(v, 8); }
  Writer& i64(int64_t v) { return be(static_cast<uint64_t>(v), 8); }
  Writer& str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    buf_.append(s.data(), s.size());
    return *this;
  }
  Writer& strs(const std::vector<std::string>& v) {
    u32(static_cast<uint32_t>(v.size()));
    for (const auto& s : v) str(s);
    return *this;
  }
  size_t payload_size() const { return buf_.size() - kHeaderSize; }
  // Finishes the frame and hands over its bytes (the writer is spent afterwards).
  std::string frame() {
    uint32_t n = static_cast<uint32_t>(payload_size());
    for (int i = 0; i < 4; ++i) buf_[i] = static_cast<char>(n >> (24 - 8 * i));
    return std::move(buf_);
  }

 private:
  Writer& be(uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) buf_.push_back(static_cast<char>(v >> (8 * i)));
    return *this;
  }
  std::string buf_;
};

// Reads one payload; any overrun sets !ok() and returns zeros, so callers check once at
// the end (ok() && at_end()).
class Reader {
 public:
  Reader(const char* p, size_t n) : p_(p), n_(n) {}
  bool ok() const { return ok_; }
  bool at_end() const { return ok_ && n_ == 0; }
  uint8_t u8() { return static_cast<uint8_t>(be(1)); }
  uint16_t u16() { return static_cast<uint16_t>(be(2)); }
  uint32_t u32() { return static_cast<uint32_t>(be(4)); }
  uint64_t u64() { return be(8); }
  int64_t i64() { return static_cast<int64_t>(be(8)); }
  std::string str() {
    uint32_t len = u32();
    if (!take(len)) return {};
    std::string s(p_ - len, len);
    return s;
  }
  std::vector<std::string> strs() {
    uint32_t n = u32();
    std::vector<std::string> v;
    // Each string needs at least its 4-byte length: reject counts the payload can't hold
    // before reserving memory for them.
    if (!ok_ || n > n_ / 4) {
      ok_ = false;
      return v;
    }
    v.reserve(n);
    for (uint32_t i = 0; i < n && ok_; ++i) v.push_back(str());
    return v;
  }

 private:
  bool take(size_t k) {
    if (!ok_ || k > n_) {
      ok_ = false;
      return false;
    }
    p_ += k;
    n_ -= k;
    return true;
  }
  uint64_t be(int bytes) {
    const char* start = p_;
    if (!take(static_cast<size_t>(bytes))) return 0;
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(start[i]);
    return v;
  }
  const char* p_;
  size_t n_;
  bool ok_ = true;
};

}  // namespace symmem::wire
