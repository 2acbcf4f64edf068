#!/bin/sh
# gen_pshmem_defsym.sh <nm> <output> <archive>...
# Writes a linker response file with one -Wl,--defsym=pshmem_X=shmem_X for every shmem_X
# function defined in the archives, so that libsymmem.so exports each routine under both
# names (the profiling interface) whoever adds it and wherever.
set -e
nm=$1 out=$2
shift 2
"$nm" --defined-only -g "$@" 2>/dev/null |
  awk '$2 == "T" && $3 ~ /^shmem_/ { print "-Wl,--defsym=p" $3 "=" $3 }' | sort -u >"$out.tmp"
mv "$out.tmp" "$out"
