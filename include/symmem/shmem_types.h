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

#endif
