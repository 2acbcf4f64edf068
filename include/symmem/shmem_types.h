/* symmem/shmem_types.h — the one type table of the OpenSHMEM C API.
 *
 * Each list is written once, as an X-macro, and stamped into the C prototypes, the C11
 * _Generic selectors, the C++ overloads and the implementations. An entry is
 * X(TYPE, TYPENAME). Lists follow the OpenSHMEM 1.5 tables. */
#ifndef SYMMEM_SHMEM_TYPES_H
#define SYMMEM_SHMEM_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* Table 5: standard RMA types. */
#define SHMEM_RMA_TYPES(X)                                                           \
  X(float, float) X(double, double) X(long double, longdouble) X(char, char)         \
  X(signed char, schar) X(short, short) X(int, int) X(long, long)                    \
  X(long long, longlong) X(unsigned char, uchar) X(unsigned short, ushort)           \
  X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)     \
  X(int8_t, int8) X(int16_t, int16) X(int32_t, int32) X(int64_t, int64)              \
  X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64)      \
  X(size_t, size) X(ptrdiff_t, ptrdiff)

/* The RMA types a C11 _Generic can tell apart (the fixed-width and size_t / ptrdiff_t
 * names are typedefs of the basic types, so they select the same function). */
#define SHMEM_RMA_GENERIC_TYPES(X)                                                   \
  X(float, float) X(double, double) X(long double, longdouble) X(char, char)         \
  X(signed char, schar) X(short, short) X(int, int) X(long, long)                    \
  X(long long, longlong) X(unsigned char, uchar) X(unsigned short, ushort)           \
  X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)

/* Sized RMA: X(bits, bytes). */
#define SHMEM_RMA_SIZES(X) X(8, 1) X(16, 2) X(32, 4) X(64, 8) X(128, 16)

/* ---- Reductions and scans (OpenSHMEM 1.5 tables 10 and 11) ----
 * Entries are X(TYPE, TYPENAME, OP): each list takes the operation name so that one
 * table expands into every TYPENAME_OP function. */

/* Team-based reductions (shmem_TYPENAME_OP_reduce), table 10. */
#define SHMEM_REDUCE_BITWISE_TYPES(X, OP)                                                 \
  X(unsigned char, uchar, OP) X(unsigned short, ushort, OP) X(unsigned int, uint, OP)     \
  X(unsigned long, ulong, OP) X(unsigned long long, ulonglong, OP) X(int8_t, int8, OP)    \
  X(int16_t, int16, OP) X(int32_t, int32, OP) X(int64_t, int64, OP) X(uint8_t, uint8, OP) \
  X(uint16_t, uint16, OP) X(uint32_t, uint32, OP) X(uint64_t, uint64, OP) X(size_t, size, OP)
#define SHMEM_REDUCE_MINMAX_TYPES(X, OP)                                                  \
  X(char, char, OP) X(signed char, schar, OP) X(short, short, OP) X(int, int, OP)         \
  X(long, long, OP) X(long long, longlong, OP) X(ptrdiff_t, ptrdiff, OP)                  \
  SHMEM_REDUCE_BITWISE_TYPES(X, OP)                                                       \
  X(float, float, OP) X(double, double, OP) X(long double, longdouble, OP)
#if !defined(__STDC_NO_COMPLEX__)
#define SHMEM_REDUCE_COMPLEX_TYPES(X, OP) \
  X(double _Complex, complexd, OP) X(float _Complex, complexf, OP)
#else
#define SHMEM_REDUCE_COMPLEX_TYPES(X, OP)
#endif
#define SHMEM_REDUCE_ARITH_TYPES(X, OP) SHMEM_REDUCE_MINMAX_TYPES(X, OP) SHMEM_REDUCE_COMPLEX_TYPES(X, OP)

/* Every team-based reduction: X(TYPE, TYPENAME, OP) for OP in and, or, xor, max, min,
 * sum, prod. The scans (shmem_TYPENAME_sum_inscan / _exscan) use the sum list. */
#define SHMEM_REDUCE_TABLE(X)                                                            \
  SHMEM_REDUCE_BITWISE_TYPES(X, and) SHMEM_REDUCE_BITWISE_TYPES(X, or)                   \
  SHMEM_REDUCE_BITWISE_TYPES(X, xor) SHMEM_REDUCE_MINMAX_TYPES(X, max)                   \
  SHMEM_REDUCE_MINMAX_TYPES(X, min) SHMEM_REDUCE_ARITH_TYPES(X, sum)                     \
  SHMEM_REDUCE_ARITH_TYPES(X, prod)

/* Active-set reductions (shmem_TYPENAME_OP_to_all), table 11. */
#define SHMEM_TO_ALL_BITWISE_TYPES(X, OP) \
  X(short, short, OP) X(int, int, OP) X(long, long, OP) X(long long, longlong, OP)
#define SHMEM_TO_ALL_MINMAX_TYPES(X, OP) \
  SHMEM_TO_ALL_BITWISE_TYPES(X, OP) X(float, float, OP) X(double, double, OP) X(long double, longdouble, OP)
#define SHMEM_TO_ALL_ARITH_TYPES(X, OP) SHMEM_TO_ALL_MINMAX_TYPES(X, OP) SHMEM_REDUCE_COMPLEX_TYPES(X, OP)
#define SHMEM_TO_ALL_TABLE(X)                                                            \
  SHMEM_TO_ALL_BITWISE_TYPES(X, and) SHMEM_TO_ALL_BITWISE_TYPES(X, or)                   \
  SHMEM_TO_ALL_BITWISE_TYPES(X, xor) SHMEM_TO_ALL_MINMAX_TYPES(X, max)                   \
  SHMEM_TO_ALL_MINMAX_TYPES(X, min) SHMEM_TO_ALL_ARITH_TYPES(X, sum)                     \
  SHMEM_TO_ALL_ARITH_TYPES(X, prod)

/* The reduction types a C11 _Generic / C++ overload can tell apart (fixed-width names are
 * typedefs of basic types on LP64 Linux: int8_t..int64_t are signed char, short, int,
 * long; the unsigned ones and size_t alias the unsigned basic types). */
#define SHMEM_REDUCE_GENERIC_BITWISE_TYPES(X, OP)                                         \
  X(unsigned char, uchar, OP) X(unsigned short, ushort, OP) X(unsigned int, uint, OP)     \
  X(unsigned long, ulong, OP) X(unsigned long long, ulonglong, OP) X(int8_t, int8, OP)    \
  X(int16_t, int16, OP) X(int32_t, int32, OP) X(int64_t, int64, OP)
#define SHMEM_REDUCE_GENERIC_MINMAX_TYPES(X, OP)                                          \
  X(char, char, OP) X(signed char, schar, OP) X(short, short, OP) X(int, int, OP)         \
  X(long, long, OP) X(long long, longlong, OP) X(unsigned char, uchar, OP)                \
  X(unsigned short, ushort, OP) X(unsigned int, uint, OP) X(unsigned long, ulong, OP)     \
  X(unsigned long long, ulonglong, OP) X(float, float, OP) X(double, double, OP)          \
  X(long double, longdouble, OP)
#define SHMEM_REDUCE_GENERIC_ARITH_TYPES(X, OP) \
  SHMEM_REDUCE_GENERIC_MINMAX_TYPES(X, OP) SHMEM_REDUCE_COMPLEX_TYPES(X, OP)

/* Table 6: standard AMO types (inc, add, compare_swap, ... ). */
#define SHMEM_AMO_STD_TYPES(X)                                                       \
  X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint)             \
  X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int32_t, int32)         \
  X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)          \
  X(ptrdiff_t, ptrdiff)

/* Table 7: extended AMO types (fetch, set, swap): the standard ones and float, double. */
#define SHMEM_AMO_EXT_TYPES(X) X(float, float) X(double, double) SHMEM_AMO_STD_TYPES(X)

/* Table 8: bitwise AMO types (and, or, xor). */
#define SHMEM_AMO_BITWISE_TYPES(X)                                                   \
  X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)     \
  X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64)

/* Table 12: point-to-point synchronization types (wait_until, test): the standard AMO
 * types and the deprecated short / unsigned short. */
#define SHMEM_P2P_SYNC_TYPES(X) X(short, short) X(unsigned short, ushort) SHMEM_AMO_STD_TYPES(X)

/* The multi-variable waits and tests (shmem_TYPENAME_wait_until_all / _any / _some, their
 * _vector forms and the test_ ones). The standard lists only the AMO types (Table 6)
 * there; short and unsigned short are an extension, as in Sandia OpenSHMEM, so that
 * programs that wait on arrays of them compile unchanged. */
#define SHMEM_P2P_SYNC_SET_TYPES(X) SHMEM_P2P_SYNC_TYPES(X)

/* The deprecated pre-1.4 typed atomics (shmem_long_finc, shmem_int_cswap, ...) exist for
 * int, long and long long; fetch / set / swap also for float and double. The deprecated
 * shmem_TYPENAME_wait exists for short, int, long and long long. */
#define SHMEM_AMO_DEPR_TYPES(X) X(int, int) X(long, long) X(long long, longlong)
#define SHMEM_AMO_DEPR_EXT_TYPES(X) X(float, float) X(double, double) SHMEM_AMO_DEPR_TYPES(X)
#define SHMEM_WAIT_DEPR_TYPES(X) X(short, short) SHMEM_AMO_DEPR_TYPES(X)

/* The distinct C types of each AMO / sync list, for C11 _Generic and C++ overloads (on
 * LP64 the fixed-width, size_t and ptrdiff_t names are typedefs of these). int32_t and
 * int64_t stand for the signed bitwise types, which have no basic-type name in Table 8. */
#define SHMEM_AMO_STD_GENERIC_TYPES(X)                                               \
  X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint)             \
  X(unsigned long, ulong) X(unsigned long long, ulonglong)
#define SHMEM_AMO_EXT_GENERIC_TYPES(X) X(float, float) X(double, double) SHMEM_AMO_STD_GENERIC_TYPES(X)
#define SHMEM_AMO_BITWISE_GENERIC_TYPES(X)                                           \
  X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)     \
  X(int32_t, int32) X(int64_t, int64)
#define SHMEM_P2P_SYNC_GENERIC_TYPES(X) X(short, short) X(unsigned short, ushort) SHMEM_AMO_STD_GENERIC_TYPES(X)
#define SHMEM_P2P_SYNC_SET_GENERIC_TYPES(X) SHMEM_P2P_SYNC_GENERIC_TYPES(X)

#endif
