// Start-up under launchers other than symmem-run: the rank and size their environment
// gives, a key that is the same for every process of one job (for the magic, the job id
// and the rendezvous file), and whether the job is on one node.
//
//   Open MPI (mpirun)  OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_SIZE, OMPI_MCA_ess_base_jobid,
//                      OMPI_MCA_orte_num_nodes
//   PMI (Hydra, ...)   PMI_RANK / PMI_SIZE
//   Slurm (srun)       SLURM_PROCID / SLURM_NTASKS, SLURM_JOB_ID, SLURM_STEP_ID,
//                      SLURM_STEP_NUM_NODES (or SLURM_NNODES)
//   torchrun           RANK / WORLD_SIZE / LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
//                      TORCHELASTIC_RUN_ID
//
// Every family present must agree on rank and size; a rank out of range, or more
// processes on this node than in the whole job ("every process believes it is PE 0 of
// 1"), is an error that names the variables.
#pragma once

#include <optional>
#include <string>

#include "bootstrap/tcp_store.hpp"
#include "common/status.hpp"

namespace symmem {

struct LauncherEnv {
  std::string name;  // "Open MPI", "PMI", "Slurm", "torchrun"
  std::string vars;  // the variables rank and size came from, for messages
  int rank = 0;
  int size = 1;
  std::string job_key;        // same on every process of the job
  bool single_node = false;   // known to be one node: a rendezvous file can carry the secret
  std::optional<StoreAddress> store;  // torchrun: MASTER_ADDR, MASTER_PORT + 1
  std::string rendezvous_dir;  // a directory private to the job's user, for the rendezvous file
};

// Empty when no known launcher's variables are present.
Result<std::optional<LauncherEnv>> detect_launcher_env();

}  // namespace symmem
