#!/bin/bash
# Bad input to gemm_overlap (and gemm_overlap_mpi): each case must exit non-zero, without
# a crash (no signal), printing exactly one line from the program.
#   test_bad_input.sh SYMMEM_RUN GEMM_OVERLAP [MPIRUN GEMM_OVERLAP_MPI]
set -u
run=$1 prog=$2 mpirun=${3:-} mpiprog=${4:-}
fail=0
err=$(mktemp)
trap 'rm -f "$err"' EXIT
expect() {  # expect RC-ALLOWED NAME WORD CMD...
  local allowed=$1 name=$2 word=$3
  shift 3
  timeout 60 "$@" >/dev/null 2>"$err"
  local rc=$?
  local lines
  lines=$(grep -c '^gemm_overlap' "$err")
  if [[ " $allowed " != *" $rc "* ]] || [ "$lines" != 1 ] || ! grep -q -- "$word" "$err"; then
    echo "FAIL $name: rc $rc (want one of $allowed), $lines lines from the program (want 1) mentioning '$word':"
    sed 's/^/    /' "$err"
    fail=1
  else
    echo "ok   $name: rc $rc: $(grep '^gemm_overlap' "$err")"
  fi
}
export SHMEM_SYMMETRIC_SIZE=64M
expect 2 m_not_dividing "multiple of 16" "$run" -n 2 "$prog" --op rs --m 100 --tile 8
expect 2 n_not_dividing "column shards" "$run" -n 2 "$prog" --op ag --m 64 --n 33 --tile 8
expect 2 k_not_dividing "inner dimension" "$run" -n 4 "$prog" --op ar --m 64 --k 30 --tile 8
expect 2 pipe_one_pe "at least 2 PEs" "$run" -n 1 "$prog" --op pipe --m 64 --tile 8
expect 2 bad_op "not one of ag" "$run" -n 2 "$prog" --op gemv
expect 2 bad_variant "not one of mono" "$run" -n 2 "$prog" --op rs --variant bulk,fused
expect 2 bad_number "not an integer" "$run" -n 2 "$prog" --op rs --m 12x
expect 2 missing_value "incomplete argument" "$run" -n 2 "$prog" --op rs --tile
# more memory than the symmetric heap holds: every PE fails the same allocation
SHMEM_SYMMETRIC_SIZE=8M expect 3 heap_too_small "SHMEM_SYMMETRIC_SIZE" "$run" -n 2 "$prog" --op rs --m 2048 --n 2048 --k 64
if [ -n "$mpirun" ]; then
  expect 2 mpi_m_not_dividing "multiple of 16" "$mpirun" --allow-run-as-root --oversubscribe -n 2 "$mpiprog" --op rs --m 100 --tile 8
  expect 2 mpi_pipe "no MPI baseline" "$mpirun" --allow-run-as-root --oversubscribe -n 2 "$mpiprog" --op pipe
fi
[ "$fail" = 0 ] && echo "bad input: every case gave one line and a non-zero exit"
exit $fail
