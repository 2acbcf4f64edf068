#!/bin/bash
# What the DFX hooks cost when every tool is off, and what each tool costs when on
# (docs/dfx.md): the same benchmarks from a build with the hooks compiled out
# (-DSYMMEM_DFX=OFF) and from the normal build, alternating, so both see the same machine.
#   bench/dfx_cost.sh [BUILD_ON] [BUILD_OFF] [ROUNDS]   (defaults: build build-dfxoff 9)
# Extra variants of the normal build: DFX_VARIANTS="SYMMEM_CHECK=1 SYMMEM_STATS=1 ..."; a
# subset of the benchmarks: DFX_ONLY="barrier reduce_sum" (put_lat get_lat fadd_lat barrier
# reduce_sum).
# Prints one CSV row per (benchmark, variant): the median over the rounds, its ratio to the
# hooks-compiled-out build's median, and the median of the per-round ratios (each round's
# runs are back to back, so a machine whose speed drifts between rounds moves both).
set -euo pipefail
on=$(realpath "${1:-build}")
off=$(realpath "${2:-build-dfxoff}")
rounds=${3:-9}
variants=(${DFX_VARIANTS:-})
# The jobs run in a directory of their own (SYMMEM_STATS=1 writes its JSON there), removed after.
work=$(mktemp -d "${TMPDIR:-/tmp}/dfx-cost.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
run() {  # build env... -- program args
  local b=$1
  shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("-x" "$1"); shift; done
  shift
  timeout 120 "$b/tools/symmem-run/symmem-run" "${envs[@]}" -n 2 "$b/bench/$@" 2>/dev/null |
    awk -F, '$1 !~ /^#/ && $2 ~ /^[0-9]+$/ && $1 !~ /__/ {print $1 "/" $2 "," $3}'
}
declare -A samples
for ((i = 0; i < rounds; ++i)); do
  for v in off on "${variants[@]}"; do
    case $v in
      off) b=$off; e=() ;;
      on) b=$on; e=() ;;
      *) b=$on; e=("$v") ;;
    esac
    for prog in "bench_p2p --only put_lat --sizes 8" "bench_p2p --only get_lat --sizes 8" \
                "bench_p2p --only fadd_lat" "bench_coll --only barrier" \
                "bench_coll --only reduce_sum --sizes 8"; do
      name=${prog#* --only }
      [ -z "${DFX_ONLY:-}" ] || [[ " $DFX_ONLY " == *" ${name%% *} "* ]] || continue
      while IFS=, read -r key val; do samples["$key|$v"]+="$val "; done < <(run "$b" "${e[@]}" -- $prog)
    done
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
# The per-round ratios of one variant against the compiled-out build (same round, same index).
paired() { awk -v a="$1" -v b="$2" 'BEGIN {n = split(a, x, " "); split(b, y, " "); for (i = 1; i <= n; ++i) if (x[i] > 0 && y[i] != "") print y[i] / x[i]}'; }
echo "bench,variant,median_us,ratio_to_hooks_compiled_out,median_paired_ratio  # $(uptime | sed 's/.*load/load/')"
for key in $(printf '%s\n' "${!samples[@]}" | cut -d'|' -f1 | sort -u); do
  base=$(echo "${samples[$key|off]:-}" | median)
  for v in off on "${variants[@]}"; do
    m=$(echo "${samples[$key|$v]:-}" | median)
    pr=$(paired "${samples[$key|off]:-}" "${samples[$key|$v]:-}" | median)
    awk -v k="$key" -v v="$v" -v m="$m" -v b="$base" -v pr="$pr" 'BEGIN {printf "%s,%s,%.4f,%.3f,%.3f\n", k, v, m, m / b, pr}'
  done
done
