/* Single-element put/get: shmem_long_p/g, shmem_int_p/g, shmem_double_p/g, including
 * extreme values, to and from every PE. */
#include <float.h>
#include <limits.h>
#include <stdint.h>

#include "capi_check.h"

enum { kValues = 6 };

static long long_value(int pe, int k) {
  const long v[kValues] = {0, -1, LONG_MIN, LONG_MAX, 0x0123456789abcdefL, -42};
  return v[k] ^ (long)pe;
}
static int int_value(int pe, int k) {
  const int v[kValues] = {0, -1, INT_MIN, INT_MAX, 0x01234567, 77};
  return v[k] ^ pe;
}
static double double_value(int pe, int k) {
  switch (k) {
    case 0: return (double)pe + 0.25;
    case 1: return pe % 2 ? -0.0 : 0.0;
    case 2: return pe % 2 ? -DBL_MAX : DBL_MAX;
    case 3: return DBL_MIN / 4 * (pe + 1); /* subnormal */
    case 4: return -1.5e-300 * (pe + 1);
    default: return -(pe + 3.25);
  }
}
static int same_double(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();

  /* Slots [pe * kValues + k] are written by PE pe. (Not named I: shmem.h includes
   * <complex.h>, which defines I.) */
  long *Lv = shmem_malloc(sizeof(long) * (size_t)n * kValues);
  int *Iv = shmem_malloc(sizeof(int) * (size_t)n * kValues);
  double *Dv = shmem_malloc(sizeof(double) * (size_t)n * kValues);
  if (!Lv || !Iv || !Dv) FATAL("shmem_malloc failed");

  /* p: I write my values into my slots on every PE. */
  for (int pe = 0; pe < n; ++pe) {
    for (int k = 0; k < kValues; ++k) {
      shmem_long_p(&Lv[me * kValues + k], long_value(me, k), pe);
      shmem_int_p(&Iv[me * kValues + k], int_value(me, k), pe);
      shmem_double_p(&Dv[me * kValues + k], double_value(me, k), pe);
    }
  }
  shmem_barrier_all();
  for (int pe = 0; pe < n; ++pe) {
    for (int k = 0; k < kValues; ++k) {
      const int s = pe * kValues + k;
      CHECK(Lv[s] == long_value(pe, k), "shmem_long_p from PE %d: value %d is %ld, expected %ld",
            pe, k, Lv[s], long_value(pe, k));
      CHECK(Iv[s] == int_value(pe, k), "shmem_int_p from PE %d: value %d is %d, expected %d", pe,
            k, Iv[s], int_value(pe, k));
      CHECK(same_double(Dv[s], double_value(pe, k)),
            "shmem_double_p from PE %d: value %d is %a, expected %a", pe, k, Dv[s],
            double_value(pe, k));
    }
  }
  shmem_barrier_all();

  /* g: every PE holds its own values in slot row 0; I read them from every PE. */
  for (int k = 0; k < kValues; ++k) {
    Lv[k] = long_value(me, k) ^ 0x5a5a;
    Iv[k] = int_value(me, k) ^ 0x5a5a;
    Dv[k] = -double_value(me, k);
  }
  shmem_barrier_all();
  for (int pe = 0; pe < n; ++pe) {
    for (int k = 0; k < kValues; ++k) {
      const long l = shmem_long_g(&Lv[k], pe);
      const int i = shmem_int_g(&Iv[k], pe);
      const double d = shmem_double_g(&Dv[k], pe);
      CHECK(l == (long_value(pe, k) ^ 0x5a5a), "shmem_long_g from PE %d: value %d is %ld", pe, k, l);
      CHECK(i == (int_value(pe, k) ^ 0x5a5a), "shmem_int_g from PE %d: value %d is %d", pe, k, i);
      CHECK(same_double(d, -double_value(pe, k)), "shmem_double_g from PE %d: value %d is %a",
            pe, k, d);
    }
  }
  shmem_barrier_all();

  /* Neighbouring elements: a 4-byte int put must not touch the int next to it. */
  for (int k = 0; k < n * kValues; ++k) Iv[k] = -7;
  shmem_barrier_all();
  shmem_int_p(&Iv[2 * me + 1], me, (me + 1) % n);
  shmem_barrier_all();
  const int from = (me + n - 1) % n;
  for (int k = 0; k < n * kValues; ++k) {
    const int want = k == 2 * from + 1 ? from : -7;
    CHECK(Iv[k] == want, "after one shmem_int_p from PE %d, Iv[%d] = %d, expected %d", from, k, Iv[k],
          want);
  }

  shmem_free(Dv);
  shmem_free(Iv);
  shmem_free(Lv);
  return capi_finish();
}
