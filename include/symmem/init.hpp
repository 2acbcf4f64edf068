// symmem/init.hpp — how a Runtime joins its job (included by symmem.hpp).
//
// Three ways in, as in aclshmem / NVSHMEM:
//  - InitMode::kDefault: the launcher's environment. symmem-run's variables; else Open MPI
//    (mpirun), PMI / Slurm (srun) or torchrun (RANK, WORLD_SIZE, MASTER_ADDR/PORT), where
//    PE 0 hosts the store; else a 1-PE job. my_pe / n_pes / store_url given here take the
//    place of the launcher's.
//  - InitMode::kUniqueId: PE 0 calls UniqueId::create() (which starts the job's store in
//    that process), hands the id to the others by any means (MPI_Bcast, a file, an
//    environment variable: to_string()), and every PE constructs its Runtime with the id,
//    its my_pe and n_pes.
//  - InitMode::kMpi: ranks from an MPI communicator (MPI_COMM_WORLD by default); the id is
//    created on rank 0 and broadcast with MPI. Needs libsymmem_mpi (built where MPI is).
//
// The store is TLS 1.3 by default, authenticated by the id's secret (docs/init.md);
// tls = "off" switches it off (a warning says so), "cert" uses certificates.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "symmem/error.hpp"

namespace symmem {

enum class InitMode { kDefault, kUniqueId, kMpi };

// A job's unique id: 136 opaque bytes (same size and header as aclshmem's), safe to copy
// and send as bytes. It holds the job's secret: hand it only to the job's PEs.
struct SYMMEM_API UniqueId {
  static constexpr size_t kSize = 136;
  std::array<uint8_t, kSize> bytes{};

  // Creates a new job hosted here: picks the store's address (SYMMEM_BOOTSTRAP_ADDR,
  // SYMMEM_BOOTSTRAP_IFNAME, else the first non-loopback interface), starts the store with
  // the TLS mode `tls` ("" = SYMMEM_STORE_TLS, default psk). Throws Error.
  static UniqueId create(const std::string& tls = "");
  // Text form for environment variables and files: "symmem-uid1:" + hex. Throws Error
  // (kInvalidArgument) on anything else.
  std::string to_string() const;
  static UniqueId from_string(const std::string& text);
  // Where the job's store listens (tcp://host:port or tcp6://[addr]:port).
  std::string store_url() const;
  bool empty() const;
};

struct InitAttr {
  InitMode mode = InitMode::kDefault;
  int my_pe = -1;          // kUniqueId: required. kDefault: overrides the launcher's
  int n_pes = -1;          // kUniqueId: required. kDefault: overrides the launcher's
  // kDefault: the store to use (PE 0 hosts it there). kUniqueId: where the PEs other than
  // PE 0 connect instead of the id's address (a relay, a forwarded port).
  std::string store_url;
  uint64_t heap_size = 0;        // 0: SHMEM_SYMMETRIC_SIZE or the 16 GiB default
  double init_timeout_s = 0;     // 0: SYMMEM_INIT_TIMEOUT
  double op_timeout_s = 0;       // 0: SYMMEM_OP_TIMEOUT
  std::string transport;         // "" or "auto", "shm" (one node), "ucx" (every peer through UCX)
  uint64_t instance_id = 0;      // runtimes of one process with different ids are independent
  // The device heap (docs/device.md), made at the first device allocation.
  uint64_t device_heap_size = 0; // bytes per PE; 0: SYMMEM_DEVICE_HEAP_SIZE or the 1 GiB default
  int device = -1;               // GPU ordinal; -1: SYMMEM_DEVICE, else the node index mod visible GPUs
  UniqueId uid;                  // kUniqueId
  void* mpi_comm = nullptr;      // kMpi: an MPI_Comm*, null = MPI_COMM_WORLD
  // Store security: "" (SYMMEM_STORE_TLS, default psk), "psk", "cert" or "off".
  std::string tls;
  std::string tls_ca_file, tls_ca_path, tls_cert, tls_key, tls_crl;  // cert mode
};

}  // namespace symmem
