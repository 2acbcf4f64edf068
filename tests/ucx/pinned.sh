#!/usr/bin/env bash
# pinned.sh NCPUS REGEX program [args...]: runs the program on the first NCPUS CPUs this
# process may use (taskset), and passes when it exits 0 and its output matches REGEX
# (grep -E). Exit 77 (skipped) with fewer CPUs than that.
set -u
n=$1 regex=$2
shift 2
cpus=()
for part in $(taskset -pc $$ | sed 's/.*: //' | tr ',' ' '); do
  if [[ $part == *-* ]]; then
    for ((c = ${part%-*}; c <= ${part#*-}; ++c)); do cpus+=("$c"); done
  else
    cpus+=("$part")
  fi
done
((${#cpus[@]} >= n)) || { echo "pinned: $n CPUs wanted, ${#cpus[@]} allowed; skipped"; exit 77; }
list=$(IFS=,; echo "${cpus[*]:0:n}")
out=$(taskset -c "$list" "$@" 2>&1)
rc=$?
echo "$out"
[ $rc = 0 ] || { echo "pinned: exit status $rc"; exit 1; }
grep -Eq "$regex" <<<"$out" || { echo "pinned: no line matches: $regex"; exit 1; }
