/* Init and the query routines: my_pe / n_pes ranges and uniqueness, the library's version
 * and name, and which PEs are accessible. */
#include "capi_check.h"

int main(void) {
  shmem_init();
  const int me = shmem_my_pe();
  const int n = shmem_n_pes();
  CHECK(n >= 1, "shmem_n_pes() = %d", n);
  CHECK(me >= 0 && me < n, "shmem_my_pe() = %d with n_pes = %d", me, n);
  CHECK(shmem_my_pe() == me && shmem_n_pes() == n, "my_pe / n_pes changed between calls");

  /* Every PE writes its number into slot [me] on every PE: all slots filled means the
   * PE numbers are distinct and cover 0..n-1. */
  int *ids = capi_zalloc((size_t)n, sizeof(int));
  if (!ids) FATAL("allocation of %d ints failed", n);
  for (int pe = 0; pe < n; ++pe) shmem_int_p(&ids[me], me + 1, pe);
  shmem_barrier_all();
  for (int pe = 0; pe < n; ++pe)
    CHECK(ids[pe] == pe + 1, "no PE reported number %d (slot holds %d)", pe, ids[pe] - 1);

  int major = -1, minor = -1;
  shmem_info_get_version(&major, &minor);
  CHECK(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION,
        "shmem_info_get_version gives %d.%d, shmem.h says %d.%d", major, minor,
        SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION);
#ifdef CAPI_EXPECT_VERSION_MINOR /* set by our build: symmem implements exactly 1.5 */
  CHECK(major == 1 && minor == CAPI_EXPECT_VERSION_MINOR, "version %d.%d, expected 1.%d", major,
        minor, CAPI_EXPECT_VERSION_MINOR);
#else
  CHECK(major == 1 && minor >= 4, "version %d.%d, expected 1.4 or later", major, minor);
#endif

  char name[SHMEM_MAX_NAME_LEN];
  memset(name, 'x', sizeof name);
  shmem_info_get_name(name);
  const size_t len = strnlen(name, sizeof name);
  CHECK(len < sizeof name, "shmem_info_get_name: no NUL within SHMEM_MAX_NAME_LEN (%d)",
        (int)SHMEM_MAX_NAME_LEN);
  CHECK(len > 0, "shmem_info_get_name gave an empty name");
  CHECK(len == sizeof name || strcmp(name, SHMEM_VENDOR_STRING) == 0,
        "shmem_info_get_name gave \"%s\", SHMEM_VENDOR_STRING is \"%s\"", name,
        SHMEM_VENDOR_STRING);

  for (int pe = 0; pe < n; ++pe)
    CHECK(shmem_pe_accessible(pe) == 1, "shmem_pe_accessible(%d) = %d, expected 1", pe,
          shmem_pe_accessible(pe));
  CHECK(shmem_pe_accessible(-1) == 0, "shmem_pe_accessible(-1) = %d", shmem_pe_accessible(-1));
  CHECK(shmem_pe_accessible(n) == 0, "shmem_pe_accessible(n_pes = %d) = %d", n,
        shmem_pe_accessible(n));

  shmem_free(ids);
  return capi_finish();
}
