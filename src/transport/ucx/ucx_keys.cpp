// Memory registration and remote keys. The heap, the metadata region and the static data
// are registered once at init, sparse (UCP_MEM_MAP_NONBLOCK: nothing is committed or
// pinned up front); each PE publishes one line over the bootstrap store — its service
// worker's address, a packed remote key per region, its devices — and every peer's keys
// are unpacked on each endpoint made to it. The lookup of a key by address is on the data
// path (rkey_for, ucx_ops.cpp).
#include <cstdio>
#include <sstream>

#include "common/config.hpp"
#include "transport/ucx/ucx_impl.hpp"

namespace symmem {
namespace {

bool unhex(const std::string& s, std::vector<uint8_t>* out) {
  if (s.size() % 2) return false;
  out->resize(s.size() / 2);
  for (size_t i = 0; i < out->size(); ++i) {
    unsigned v = 0;
    if (std::sscanf(s.c_str() + 2 * i, "%2x", &v) != 1) return false;
    (*out)[i] = uint8_t(v);
  }
  return true;
}

}  // namespace

std::string UcxTransport::Impl::hex(const void* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) {
    s.push_back(d[b[i] >> 4]);
    s.push_back(d[b[i] & 15]);
  }
  return s;
}

// Registered without committing the sparse heap (NONBLOCK: on InfiniBand this needs
// on-demand paging; over TCP nothing is pinned). A region of length 0 publishes "-".
Status UcxTransport::Impl::register_regions(std::string* line) {
  for (const UcxRegion& r : p.regions) {
    ucp_mem_h mh = nullptr;
    std::string packed = "-";
    if (r.length) {
      ucp_mem_map_params_t mp{};
      mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
      mp.address = reinterpret_cast<void*>(r.base0 + uint64_t(p.rank) * r.stride);
      mp.length = r.length;
      mp.flags = UCP_MEM_MAP_NONBLOCK;
      ucs_status_t st = ucp_mem_map(ctx, &mp, &mh);
      if (st != UCS_OK) return ucs_error("UCX: registering " + format_size(r.length) + " of symmetric memory", st);
      void* buf = nullptr;
      size_t len = 0;
      st = ucp_rkey_pack(ctx, mh, &buf, &len);
      if (st != UCS_OK) return ucs_error("UCX: ucp_rkey_pack", st);
      packed = hex(buf, len);
      ucp_rkey_buffer_release(buf);
    }
    memh.push_back(mh);
    *line += " " + packed;
  }
  return Status();
}

Status UcxTransport::Impl::read_publication(int pe, const std::string& line) {
  std::istringstream in(line);
  std::string addr_hex;
  in >> addr_hex;
  if (!unhex(addr_hex, &addrs[size_t(pe)])) return Status(Errc::kState, "UCX: malformed worker address from " + who(pe));
  rkey_bufs[size_t(pe)].resize(p.regions.size());
  for (size_t k = 0; k < p.regions.size(); ++k) {
    std::string rk;
    in >> rk;
    if (rk != "-" && !unhex(rk, &rkey_bufs[size_t(pe)][k]))
      return Status(Errc::kState, "UCX: malformed remote key from " + who(pe));
  }
  in >> where[size_t(pe)];
  return Status();
}

Status UcxTransport::Impl::unpack_rkeys(UcxPeer& q, ucp_ep_h ep) {
  q.rkeys.assign(p.regions.size(), nullptr);
  for (size_t k = 0; k < p.regions.size(); ++k) {
    const std::vector<uint8_t>& b = rkey_bufs[size_t(q.pe)][k];
    if (b.empty()) continue;
    ucs_status_t st = ucp_ep_rkey_unpack(ep, b.data(), &q.rkeys[k]);
    if (st != UCS_OK) return ucs_error("UCX: unpacking the remote key of " + who(q.pe), st);
  }
  return Status();
}

void UcxTransport::Impl::destroy_rkeys(UcxPeer& q) {
  for (ucp_rkey_h h : q.rkeys)
    if (h) ucp_rkey_destroy(h);
  q.rkeys.clear();
}

void UcxTransport::Impl::unmap_regions() {
  for (ucp_mem_h mh : memh)
    if (mh) ucp_mem_unmap(ctx, mh);
}

}  // namespace symmem
