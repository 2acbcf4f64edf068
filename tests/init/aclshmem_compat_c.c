/* symmem/aclshmem.h compiles as C too (aclshmem's C users): the names link and a 1-PE job
 * runs through them. Exit code 0 = ok. */
#include "symmem/aclshmem.h"

#include <stdio.h>

int main(void) {
  aclshmemx_init_attr_t attr;
  memset(&attr, 0, sizeof attr);
  attr.local_mem_size = 64UL << 20;
  attr.option_attr.data_op_engine_type = ACLSHMEM_DATA_OP_MTE;
  if (aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &attr) != ACLSHMEM_SUCCESS) return 1;
  int64_t* x = aclshmem_malloc(sizeof(int64_t));
  int64_t v = 42;
  aclshmem_int64_put(x, &v, 1, aclshmem_my_pe());
  aclshmem_barrier_all();
  int ok = *x == 42 && aclshmem_n_pes() == 1 && aclshmem_team_n_pes(ACLSHMEM_TEAM_WORLD) == 1;
  aclshmem_free(x);
  if (aclshmem_finalize() != ACLSHMEM_SUCCESS) return 1;
  printf("aclshmem C: %s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
