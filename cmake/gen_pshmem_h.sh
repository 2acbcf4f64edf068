#!/bin/sh
# gen_pshmem_h.sh <C compiler> <include dir> <output>
# Writes pshmem.h: the profiling name pshmem_X of every routine shmem_X that shmem.h and
# shmemx.h declare. The C preprocessor expands the headers (and every X-macro of the type
# tables);
# each declaration of a shmem_ function is kept and renamed. Nothing here lists routines,
# so routines added to shmem.h later get their profiling names with no change here.
set -e
cc=$1 inc=$2 out=$3
mkdir -p "$(dirname "$out")"
{
  cat <<'EOF'
/* pshmem.h: generated at build time from shmem.h by cmake/gen_pshmem_h.sh. Do not edit.
 *
 * The OpenSHMEM profiling interface: every routine shmem_X of shmem.h also exists as
 * pshmem_X, with the same signature and behaviour. A tool defines shmem_X itself (its
 * definition takes precedence over the library's) and calls pshmem_X to do the work. */
#ifndef PSHMEM_H
#define PSHMEM_H

#include <shmem.h>
#include <shmemx.h>

#ifdef __cplusplus
extern "C" {
#endif

EOF
  printf '#include <shmem.h>\n#include <shmemx.h>\n' | "$cc" -E -P -x c -std=c11 -I"$inc" - |
    tr '\n' ' ' | tr ';' '\n' |
    grep -E '^ *[A-Za-z_][A-Za-z0-9_ *]*[ *]shmem_[A-Za-z0-9_]+ *\(' |
    sed -E 's/^ +//; s/ +/ /g; s/(^|[ *])shmem_([A-Za-z0-9_]+) *\(/\1pshmem_\2(/; s/ *$/;/'
  cat <<'EOF'

#ifdef __cplusplus
}
#endif

#endif /* PSHMEM_H */
EOF
} >"$out.tmp"
n=$(grep -c 'pshmem_' "$out.tmp" || true)
if [ "$n" -lt 10 ]; then
  echo "gen_pshmem_h.sh: found only $n declarations in shmem.h" >&2
  exit 1
fi
mv "$out.tmp" "$out"
