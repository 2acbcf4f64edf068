// The unique id of a job: where its store listens, the job's random magic and secret, the
// TLS mode, and the job id that names its shared-memory objects. 136 bytes with the layout
// of aclshmem's id (int32 version, int my_pe, int n_pes, 124 opaque bytes), so it can be
// sent as plain bytes (MPI_Bcast, a file) or as text (an environment variable).
//
// Creating an id starts the store in this process (its own thread): the process that made
// the id is PE 0 of the job and hosts the store. The server is kept aside until that
// process's init adopts it (adopt_hosted_store), keyed by the id's magic.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "bootstrap/tcp_store.hpp"
#include "bootstrap/tls_channel.hpp"
#include "common/status.hpp"

namespace symmem {

inline constexpr size_t kUniqueIdSize = 136;
inline constexpr int32_t kUniqueIdVersion = (1 << 16) + static_cast<int32_t>(kUniqueIdSize);

struct UniqueIdInfo {
  StoreAddress store;  // numeric address
  StoreSecurity security;  // magic, secret, mode (certificate paths are not carried)
  std::string job_id;      // [a-z0-9]{12}
};

void encode_unique_id(const UniqueIdInfo& info, uint8_t out[kUniqueIdSize]);
// Checks the version and the layout; a damaged or foreign id is kInvalidArgument.
Result<UniqueIdInfo> decode_unique_id(const uint8_t in[kUniqueIdSize]);
// "symmem-uid1:" + 272 hex digits, and back.
std::string unique_id_to_text(const uint8_t id[kUniqueIdSize]);
Status unique_id_from_text(const std::string& text, uint8_t out[kUniqueIdSize]);

// Where a store created here listens: `spec` is "" (SYMMEM_BOOTSTRAP_ADDR / IFNAME rules:
// the first non-loopback interface that is up, else 127.0.0.1), "host", "host:port",
// "[v6]:port", "tcp://host:port" or "tcp6://[v6]:port"; `ifname` is "eth0", "eth0:inet4"
// or "eth0:inet6". The result is numeric.
Result<StoreAddress> choose_store_address(const std::string& spec, const std::string& ifname);

// Makes a new job: fresh magic, secret and job id, the store started on `where` (port 0
// = any) with `security` (mode and certificate paths; magic and secret are filled in) and
// registered for adoption. `security.mode` is recorded in the id.
Result<UniqueIdInfo> create_unique_id(const StoreAddress& where, StoreSecurity security);

// The store started by create_unique_id for `magic` in this process, or null.
std::unique_ptr<TcpStoreServer> adopt_hosted_store(uint64_t magic);

// 64-bit FNV-1a, for names and magics derived from a launcher's job identifiers.
uint64_t hash64(const std::string& text);

}  // namespace symmem
