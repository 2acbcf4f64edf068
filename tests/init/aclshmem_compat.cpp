// A program written for Ascend aclshmem's host API, compiled unchanged against
// symmem/aclshmem.h (only the include line differs from an aclshmem program) and run
// under mpirun. Usage: aclshmem_compat uid|default|tls-off. Exit code 0 = every check held.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <vector>

#include "symmem/aclshmem.h"

static int g_failures = 0;
#define EXPECT(cond)                                                                 \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      ++g_failures;                                                                  \
      std::fprintf(stderr, "aclshmem_compat: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                                \
  } while (0)

int main(int argc, char* argv[]) {
  MPI_Init(&argc, &argv);
  int my_pe, n_pes;
  MPI_Comm_rank(MPI_COMM_WORLD, &my_pe);
  MPI_Comm_size(MPI_COMM_WORLD, &n_pes);
  const char* mode = argc > 1 ? argv[1] : "uid";
  uint64_t local_mem_size = 256UL * 1024UL * 1024UL;

  int status;
  if (std::strcmp(mode, "default") == 0) {
    // As in the articles: attributes with the MPI rank and size, the launcher's environment.
    aclshmemx_init_attr_t attributes = {my_pe, n_pes, "", local_mem_size, {0, ACLSHMEM_DATA_OP_MTE, 120, 120, 120}};
    status = aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &attributes);
  } else {
    if (std::strcmp(mode, "tls-off") == 0) EXPECT(aclshmemx_set_conf_store_tls(false, NULL, 0) == ACLSHMEM_SUCCESS);
    aclshmemx_uniqueid_t uid = ACLSHMEM_UNIQUEID_INITIALIZER;
    if (my_pe == 0) EXPECT(aclshmemx_get_uniqueid(&uid) == ACLSHMEM_SUCCESS);
    MPI_Bcast(&uid, sizeof(uid), MPI_BYTE, 0, MPI_COMM_WORLD);
    aclshmemx_init_attr_t attributes;
    EXPECT(aclshmemx_set_attr_uniqueid_args(my_pe, n_pes, local_mem_size, &uid, &attributes) == ACLSHMEM_SUCCESS);
    status = aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_UNIQUEID, &attributes);
  }
  if (status != ACLSHMEM_SUCCESS) {
    std::cerr << "SHMEM init failed on PE " << my_pe << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  EXPECT(aclshmemx_init_status() == ACLSHMEM_STATUS_IS_INITIALIZED);
  EXPECT(aclshmem_my_pe() == my_pe);
  EXPECT(aclshmem_n_pes() == n_pes);

  // Symmetric memory, typed and untyped puts and gets.
  constexpr uint32_t TRANS_SIZE = 16;
  int32_t* buf = static_cast<int32_t*>(aclshmem_malloc(TRANS_SIZE * n_pes * sizeof(int32_t)));
  EXPECT(buf != nullptr);
  std::vector<int32_t> input(TRANS_SIZE, my_pe + 10);
  int right = (my_pe + 1) % n_pes, left = (my_pe + n_pes - 1) % n_pes;
  aclshmem_int32_put(buf + my_pe * TRANS_SIZE, input.data(), TRANS_SIZE, right);
  aclshmem_barrier_all();
  for (uint32_t i = 0; i < TRANS_SIZE; ++i) EXPECT(buf[left * TRANS_SIZE + i] == left + 10);
  std::vector<int32_t> back(TRANS_SIZE, 0);
  aclshmem_getmem(back.data(), buf + my_pe * TRANS_SIZE, TRANS_SIZE * sizeof(int32_t), right);
  for (uint32_t i = 0; i < TRANS_SIZE; ++i) EXPECT(back[i] == my_pe + 10);
  double* d = static_cast<double*>(aclshmem_calloc(4, sizeof(double)));
  aclshmem_double_p(d, 2.5 * my_pe, right);
  aclshmem_barrier_all();
  EXPECT(*d == 2.5 * left);
  EXPECT(aclshmem_double_g(d, right) == 2.5 * my_pe);
  uint64_t word = 0x1122334455667788ull + my_pe;
  uint64_t* w = static_cast<uint64_t*>(aclshmem_align(64, sizeof(uint64_t)));
  aclshmem_put64(w, &word, 1, right);
  aclshmem_barrier_all();
  EXPECT(*w == 0x1122334455667788ull + left);
  EXPECT(aclshmem_ptr(w, my_pe) == w);

  // Teams: the even PEs, as in the articles' split_strided example.
  aclshmem_team_t evens = ACLSHMEM_TEAM_INVALID;
  EXPECT(aclshmem_team_split_strided(ACLSHMEM_TEAM_WORLD, 0, 2, (n_pes + 1) / 2, &evens) == ACLSHMEM_SUCCESS);
  if (my_pe % 2 == 0) {
    EXPECT(evens != ACLSHMEM_TEAM_INVALID);
    EXPECT(aclshmem_team_my_pe(evens) == my_pe / 2);
    EXPECT(aclshmem_team_n_pes(evens) == (n_pes + 1) / 2);
    EXPECT(aclshmem_team_translate_pe(evens, aclshmem_team_my_pe(evens), ACLSHMEM_TEAM_WORLD) == my_pe);
    aclshmem_barrier(evens);
    aclshmem_team_destroy(evens);
  } else {
    EXPECT(evens == ACLSHMEM_TEAM_INVALID);
  }
  EXPECT(aclshmem_team_my_pe(ACLSHMEM_TEAM_WORLD) == my_pe);

  aclshmem_free(w);
  aclshmem_free(d);
  aclshmem_free(buf);
  EXPECT(aclshmem_finalize() == ACLSHMEM_SUCCESS);
  EXPECT(aclshmemx_init_status() == ACLSHMEM_STATUS_NOT_INITIALIZED);
  int ok = g_failures == 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (my_pe == 0) std::printf("aclshmem_compat %s: %s on %d PEs\n", mode, all ? "ok" : "FAILED", n_pes);
  MPI_Finalize();
  return all ? 0 : 1;
}
