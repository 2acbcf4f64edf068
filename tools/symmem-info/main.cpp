// symmem-info: what this build of symmem is and every setting it reads.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <openssl/crypto.h>

#include "common/config.hpp"
#include "shmem.h"
#include "transport/ucx/ucx_transport.hpp"

int main(int argc, char** argv) {
  if (argc > 1 && (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0)) {
    std::printf("usage: symmem-info [--ucx]\nPrints the build, the transports and every tunable with its current value;\n--ucx also the UCX devices and transports it would use.\n");
    return 0;
  }
  auto cfg = symmem::Config::from_env();
  std::printf("%s (OpenSHMEM %d.%d)\n", SHMEM_VENDOR_STRING, SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION);
  std::printf("transports: shm (on-node load/store into mapped peer heaps), ucx (PEs of other nodes: %s)\n",
              symmem::UcxTransport::describe().c_str());
  std::printf("launcher variables: SYMMEM_RANK SYMMEM_NPES SYMMEM_STORE SYMMEM_STORE_MAGIC SYMMEM_STORE_SECRET "
              "SYMMEM_STORE_TLS SYMMEM_JOB_ID\n");
  std::printf("bootstrap: store over TCP, TLS 1.3 (%s) with a PSK from the job secret by default; init modes "
              "DEFAULT (symmem-run, Open MPI, PMI, Slurm, torchrun), UNIQUEID, MPI (libsymmem_mpi)\n",
              OpenSSL_version(OPENSSL_VERSION));
  std::printf("other launchers read: OMPI_COMM_WORLD_RANK/SIZE/LOCAL_SIZE, PMI_RANK/SIZE, SLURM_PROCID/NTASKS/"
              "JOB_ID/STEP_ID, RANK/WORLD_SIZE/LOCAL_WORLD_SIZE/MASTER_ADDR/MASTER_PORT\n\n");
  if (!cfg.ok()) {
    std::fprintf(stderr, "symmem-info: %s\n", cfg.status().message().c_str());
    cfg = symmem::Config();
  }
  std::printf("%-26s %-8s %-10s %-10s %s\n", "variable", "kind", "value", "default", "meaning");
  for (const auto& e : cfg->describe()) {
    bool set = std::getenv(e.env.c_str()) != nullptr;
    std::printf("%-26s %-8s %-10s %-10s %s%s\n", e.env.c_str(), e.kind.c_str(), e.value.c_str(),
                e.default_value.c_str(), e.help.c_str(), set ? " [set]" : "");
  }
  if (argc > 1 && std::strcmp(argv[1], "--ucx") == 0) {
    std::printf("\nUCX resources with this environment (pin UCX_NET_DEVICES across nodes):\n");
    std::fflush(stdout);
    if (!symmem::UcxTransport::print_resources(stdout)) std::printf("UCX cannot start here\n");
  } else {
    std::printf("\n(symmem-info --ucx also lists the UCX devices and transports it would use)\n");
  }
  return 0;
}
