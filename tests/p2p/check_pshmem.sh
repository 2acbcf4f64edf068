#!/bin/sh
# check_pshmem.sh <libsymmem.so> <pshmem.h>
# The profiling interface is complete: libsymmem.so exports pshmem_X for every shmem_X it
# exports and nothing else under pshmem_, and every routine pshmem.h declares (that is,
# every shmem_ routine of shmem.h / shmemx.h) is defined in the library.
set -u
lib=$1 hdr=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' >"$tmp/all"
grep '^shmem_' "$tmp/all" | sort -u >"$tmp/shmem"
grep '^pshmem_' "$tmp/all" | sed 's/^p//' | sort -u >"$tmp/pshmem"
grep -oE 'pshmem_[A-Za-z0-9_]+ *\(' "$hdr" | sed 's/ *($//; s/^p//' | sort -u >"$tmp/declared"
fail=0
report() {  # report <file> <message>
  if [ -s "$1" ]; then
    echo "check_pshmem: $2 ($(wc -l <"$1")):"
    head -20 "$1" | sed 's/^/  /'
    fail=1
  fi
}
comm -23 "$tmp/shmem" "$tmp/pshmem" | sed 's/^/p/' >"$tmp/no_twin"
comm -13 "$tmp/shmem" "$tmp/pshmem" | sed 's/^/p/' >"$tmp/no_base"
comm -23 "$tmp/declared" "$tmp/shmem" >"$tmp/undefined"
comm -13 "$tmp/declared" "$tmp/shmem" >"$tmp/undeclared"
report "$tmp/no_twin" "exported shmem_ routines without a pshmem_ twin; missing"
report "$tmp/no_base" "pshmem_ symbols without a shmem_ routine"
report "$tmp/undefined" "routines declared in shmem.h / shmemx.h but not defined in $lib"
report "$tmp/undeclared" "shmem_ routines exported by $lib but declared in no public header"
echo "check_pshmem: $(wc -l <"$tmp/shmem") shmem_ routines, $(wc -l <"$tmp/pshmem") pshmem_ twins, $(wc -l <"$tmp/declared") declared in pshmem.h"
exit $fail
