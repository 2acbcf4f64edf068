// The contract between a launcher and the PEs it starts: environment variables.
//
//   SYMMEM_RANK         this PE's number, 0 .. n-1
//   SYMMEM_NPES         number of PEs in the job
//   SYMMEM_STORE        store address, tcp://host:port
//   SYMMEM_STORE_MAGIC  the job's magic, 16 hex digits
//   SYMMEM_STORE_SECRET the job's secret, 64 hex digits: the TLS pre-shared key is derived
//                       from it. Required unless TLS is off. Environment only, never argv.
//   SYMMEM_STORE_TLS    psk (default), cert (with SYMMEM_TLS_CA/_CERT/_KEY/_CRL) or off
//   SYMMEM_JOB_ID       short [a-z0-9] id; every shared-memory object of the job is named
//                       /dev/shm/symmem-<job id>-..., so the launcher can remove them all.
//
// Without SYMMEM_RANK the program is a 1-PE job with no store.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "bootstrap/tcp_store.hpp"
#include "common/status.hpp"

namespace symmem {

inline constexpr const char* kEnvRank = "SYMMEM_RANK";
inline constexpr const char* kEnvNpes = "SYMMEM_NPES";
inline constexpr const char* kEnvStore = "SYMMEM_STORE";
inline constexpr const char* kEnvMagic = "SYMMEM_STORE_MAGIC";
inline constexpr const char* kEnvJobId = "SYMMEM_JOB_ID";
inline constexpr const char* kEnvSecret = "SYMMEM_STORE_SECRET";
inline constexpr const char* kEnvTls = "SYMMEM_STORE_TLS";
inline constexpr const char* kShmPrefix = "symmem-";
// Store key a PE sets ("<status> <rank>") to end the whole job (shmem_global_exit); the
// launcher watches it and ends every PE with that status.
inline constexpr const char* kGlobalExitKey = "job/global_exit";
// Bytes of shared memory the job's PEs have committed (each PE adds its own), read by
// symmem-run to say how much the job held when a PE was killed from outside.
inline constexpr const char* kCommittedKey = "job/shm_committed";

struct LaunchEnv {
  int rank = 0;
  int npes = 1;
  std::optional<StoreAddress> store;  // empty for a 1-PE job without launcher
  uint64_t magic = 0;
  StoreSecurity security;  // magic, secret and TLS mode for TcpStoreClient::connect
  std::string job_id;
  bool from_launcher = false;
  // Reads the variables above; inconsistent values are an error that says which.
  static Result<LaunchEnv> from_env();
};

std::string random_job_id();
// The TLS mode asked for by SYMMEM_STORE_TLS (psk when unset), with the certificate paths
// of SYMMEM_TLS_* for the cert mode.
Result<StoreSecurity> security_from_env();
uint64_t random_u64();

}  // namespace symmem
