/* Global and static variables are symmetric data objects (OpenSHMEM 1.5, section 3.3):
 * puts and gets to them reach the same variable on the other PE, and
 * shmem_addr_accessible says yes for them. */
#include "capi_check.h"

long g_long[16];
int g_int = -1;
static double s_double[4];

static long *function_static(void) {
  static long counter;
  return &counter;
}

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;

  shmem_barrier_all();
  long vals[16];
  for (int i = 0; i < 16; ++i) vals[i] = me * 100 + i;
  shmem_putmem(g_long, vals, sizeof vals, next);
  shmem_int_p(&g_int, me, next);
  shmem_double_p(&s_double[3], me + 0.5, next);
  shmem_long_p(function_static(), me + 7, next);
  shmem_barrier_all();

  for (int i = 0; i < 16; ++i)
    CHECK(g_long[i] == prev * 100 + i, "global long array [%d] = %ld after put from PE %d", i,
          g_long[i], prev);
  CHECK(g_int == prev, "global int = %d after put from PE %d", g_int, prev);
  CHECK(s_double[3] == prev + 0.5 && s_double[0] == 0.0, "static double array wrong");
  CHECK(*function_static() == prev + 7, "function-local static = %ld", *function_static());

  CHECK(shmem_int_g(&g_int, next) == me, "shmem_int_g of a global from PE %d", next);
  for (int pe = 0; pe < n; ++pe) {
    CHECK(shmem_addr_accessible(g_long, pe) == 1, "shmem_addr_accessible(global, %d) = 0", pe);
    CHECK(shmem_addr_accessible(&s_double[1], pe) == 1, "shmem_addr_accessible(static, %d) = 0",
          pe);
  }
  shmem_barrier_all();
  return capi_finish();
}
