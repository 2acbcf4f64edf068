#!/usr/bin/env bash
# compare.sh: symmem side by side with Open MPI's OSHMEM, MPI and the machine's limits, in
# one invocation, and the performance page made from that run.
#
#   bench/compare.sh            full run (three rounds, ~20 min on 2 cores): writes docs/performance.md,
#                               docs/performance.csv and docs/perf_*.png
#   bench/compare.sh --quick    a fast run of the whole pipeline (few sizes, 2 and 4 PEs);
#                               writes into build/bench/quick/ and leaves docs/ alone
#   bench/compare.sh --python   the Python module against the same calls from C, same run
#                               (bench/python_calls.py, a few seconds at 2 PEs); prints the table
#   bench/compare.sh --ucx      the across-nodes section instead (docs/multinode.md): symmem
#                               on 2 emulated nodes over UCX/TCP on lo, OSHMEM forced onto
#                               UCX/TCP, MPI over TCP, and ucx_perftest over lo; writes
#                               ucx.csv and ucx.md into --out (default build/bench/ucx)
#
# Options: --npes "2 4 8"  --out DIR  --build DIR  --timeout S (per run)  --args "..." (to
# every benchmark program, e.g. --args "--sizes 8,1M")  --wait-quiet MIN (first wait up to
# MIN minutes for the 1-minute load average to fall to the number of cores + 0.5)
# --rounds N (repeat the whole sequence N times, each figure the median of its rounds;
# default 3, 1 with --quick)  --repeat2 K (at 2 PEs, where the targets are, every group
# runs K times per round, the libraries alternating: each 2-PE figure is the median of
# rounds x K runs; default 5, 1 with --quick; with --ucx every group at every PE count,
# default 3).
#
# What it does: builds symmem and the benchmarks with CMake (target bench_all; the OSHMEM
# programs with oshcc, the MPI ones with mpicc), measures the limits (bench_limits), then
# for each PE count runs the point-to-point and the collective benchmarks group by group
# (--only), symmem, OSHMEM and MPI in turn on each group, each run under a time limit, and
# measures the limits again at the end. symmem's collectives run twice: through the team API (default) and
# through the 1.4 active-set routines (bench_coll_as), the calls OSHMEM 4.1 makes.
# Peers run in their defaults and in their best configuration:
#   OSHMEM  env OMPI_MCA_osc=^rdma (without it OSHMEM 4.1 crashes inside shmem_finalize)
#           collectives: default, and --mca scoll basic
#   MPI     point-to-point: default, and --mca osc sm (the default osc/rdma crashes in
#           MPI_Compare_and_swap in Open MPI 4.1.4); collectives: default
# A run's status is ok, crash-after-results (the "# done" line came, then a non-zero exit:
# the results stand, marked), crash, timeout, or wrong (a result failed validation).
# Nothing a peer did not finish counts in symmem's favour: a missing value has no ratio.
# Exits non-zero if any symmem run was not ok.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$root"

quick=0
python_only=0
ucx=0
npes_list="2 4 8"
build=build
out=""
run_timeout=""
extra_args=""
wait_quiet=0
rounds=""
repeat2=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --python) python_only=1 ;;
    --ucx) ucx=1 ;;
    --npes) npes_list=$2; shift ;;
    --out) out=$2; shift ;;
    --build) build=$2; shift ;;
    --timeout) run_timeout=$2; shift ;;
    --args) extra_args=$2; shift ;;
    --wait-quiet) wait_quiet=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --repeat2) repeat2=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ $python_only = 1 ]; then
  cmake --build "$build" -j2 --target _symmem bench_py_calls symmem-run >/dev/null
  echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(uptime | sed 's/.*load average/load average/')"
  exec /usr/bin/python3 "$here/python_calls.py" --build "$build"
fi
if [ $ucx = 1 ]; then
  : "${out:=$build/bench/ucx}"
  : "${run_timeout:=120}"
  : "${rounds:=1}"
  : "${repeat2:=3}"
  [ "$npes_list" = "2 4 8" ] && npes_list="2 4"
  bench_args="--sizes 8,64K,1M --samples 5 --target-ms 20 $extra_args"
elif [ $quick = 1 ]; then
  : "${out:=$build/bench/quick}"
  : "${run_timeout:=60}"
  : "${rounds:=1}"
  : "${repeat2:=1}"
  [ "$npes_list" = "2 4 8" ] && npes_list="2 4"
  bench_args="--sizes 8,4K,1M --samples 3 --target-ms 2 $extra_args"
else
  : "${out:=docs}"
  : "${run_timeout:=150}"
  : "${rounds:=3}"
  : "${repeat2:=5}"
  bench_args="$extra_args"
fi

# ---- build ----
if ! command -v oshcc >/dev/null || ! command -v mpicc >/dev/null || ! command -v cmake >/dev/null ||
   ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  bash "$root/scripts/install-deps.sh"  # Debian packages: Open MPI, matplotlib, toolchain
fi
echo "compare.sh: building (cmake --build $build --target bench_all)"
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" -j2 --target bench_all >/dev/null
b="$build/bench"
symmem_run="$build/tools/symmem-run/symmem-run"
have_oshmem=0; [ -x "$b/oshmem_p2p" ] && [ -x "$b/oshmem_coll" ] && command -v oshrun >/dev/null && have_oshmem=1
have_mpi=0; [ -x "$b/mpi_p2p" ] && [ -x "$b/mpi_coll" ] && command -v mpirun >/dev/null && have_mpi=1

if [ "$wait_quiet" != 0 ]; then
  quiet_deadline=$(( $(date +%s) + wait_quiet * 60 ))
  while awk -v c="$(nproc)" '{ exit !($1 > c + 0.5) }' /proc/loadavg &&
        [ "$(date +%s)" -lt $quiet_deadline ]; do
    echo "compare.sh: waiting for a quiet machine (load $(cut -d' ' -f1-3 /proc/loadavg))"
    sleep 20
  done
fi

stamp=$(date -u +%Y%m%dT%H%M%SZ)
runs="$b/runs/$stamp"
mkdir -p "$runs" "$out"
csv="$runs/results.csv"
runlog="$runs/runs.csv"
meta="$runs/meta.txt"
echo "lib,config,npes,bench,size,value,unit,status,round" >"$csv"
echo "lib,config,kind,npes,round,benchmarks,status,rc,seconds,why" >"$runlog"
: >"$runs/notes.txt"

# ---- the machine, the versions, the load ----
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
{
  echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "mode=$([ $quick = 1 ] && echo quick || echo full)"
  lsc() { lscpu | sed -n "s/^$1: *//p" | head -1; }
  echo "cpu=$(lsc 'Model name') (family $(lsc 'CPU family'), model $(lsc Model))$(
    h=$(lsc 'Hypervisor vendor'); [ -n "$h" ] && echo ", virtual machine ($h)")"
  echo "caches=L1d $(lsc 'L1d cache'), L2 $(lsc 'L2 cache'), L3 $(lsc 'L3 cache')"
  echo "cores=$(nproc) online ($(lscpu | sed -n 's/^Thread(s) per core: *//p') thread(s) per core)"
  echo "memory=$(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
  echo "kernel=$(uname -r)"
  echo "symmem=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include bench 2>/dev/null || echo '+local changes')"
  echo "compiler=$(cc --version | head -1)"
  echo "openmpi=$( (ompi_info --version 2>/dev/null || echo 'not installed') | head -1)"
  echo "python=$(/usr/bin/python3 -c 'import matplotlib, sys; print("Python", sys.version.split()[0] + ", matplotlib", matplotlib.__version__)' 2>/dev/null || echo none)"
  echo "npes=$npes_list"
  echo "timeout=$run_timeout"
  echo "args=$bench_args"
  echo "rounds=$rounds"
  echo "repeat2=$repeat2"
  echo "load_start=$(loadavg)"
} >"$meta"

symmem_failed=0

# run LIB CONFIG KIND NPES CMD...: runs one benchmark program, records its rows and status.
run() {
  local lib=$1 config=$2 kind=$3 n=$4; shift 4
  local group=${group_name:-all}
  local name="$lib-$config-$kind-np$n-r$round-${group//,/+}${rep:+-k$rep}"
  local t0 rc=0 status
  t0=$(date +%s%N)
  echo "compare.sh: $name (load $(loadavg))"
  # symmem-run gets 5 s less, so that its own timeout (exit 124, cleanup) fires first
  timeout -k 5 "$run_timeout" "$@" >"$runs/$name.out" 2>"$runs/$name.err" </dev/null || rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  if [ $rc = 124 ] || [ $rc = 137 ]; then status=timeout
  elif grep -q '^# done: all results validated' "$runs/$name.out"; then
    if [ $rc = 0 ]; then status=ok; else status=crash-after-results; fi
  elif grep -q '^# done: .*WRONG' "$runs/$name.out" || grep -q ',WRONG$' "$runs/$name.out"; then
    status=wrong
  else status=crash
  fi
  local why=""
  if [ "$status" != ok ]; then  # what went wrong, and after which result, for the page
    why=$( (grep -h -m1 -E 'Signal:|cannot|wrong data|timed out|no flag' "$runs/$name.err" "$runs/$name.out" ||
            grep -h -m1 -E 'rror|Abort|signal' "$runs/$name.err" "$runs/$name.out" || true) | head -1 |
          sed 's/^\[[^]]*\] *//' | cut -c1-120 | tr ',|' ';/')
    [ "$status" = timeout ] && why="no exit after ${run_timeout} s"
    local last
    last=$(grep -E '^[a-z_0-9]+,[0-9]+,' "$runs/$name.out" | grep -v '^bench,' | tail -1 | cut -d, -f1,2 | tr , ' ')
    why="$why (last result: ${last:-none})"
  fi
  printf '%s,%s,%s,%s,%s,%s,%s,%s,%d.%d,%s\n' "$lib" "$config" "$kind" "$n" "$round" "${group//,/ }" "$status" "$rc" \
    $((ms / 1000)) $((ms % 1000 / 100)) "$why" >>"$runlog"
  grep -E '^[a-z_0-9]+,[0-9]+,[^,]+,[^,]+$' "$runs/$name.out" | grep -v '^bench,' |
    awk -F, -v OFS=, -v lib="$lib" -v cfg="$config" -v n="$n" -v r="$round${rep:+.$rep}" \
      '{ st = ($4 == "WRONG") ? "wrong" : "ok"; print lib, cfg, n, $1, $2, $3, $4, st, r }' >>"$csv" || true
  sed -n "s/^# \(note\|skipped\|api\) /$lib,$config,$kind,$n,\1,/p" "$runs/$name.out" >>"$runs/notes.txt"
  if [ "$status" != ok ]; then
    echo "compare.sh:   -> $status (rc $rc); see $runs/$name.err"
    [ "$lib" = symmem ] && symmem_failed=1
  fi
  return 0
}

osh=(env OMPI_MCA_osc=^rdma SHMEM_SYMMETRIC_SIZE=1G SHMEM_SYMMETRIC_HEAP_SIZE=1G oshrun --allow-run-as-root --oversubscribe)
mpi=(mpirun --allow-run-as-root --oversubscribe)

# The benchmarks run group by group, every library on one group before the next group:
# the libraries' figures for a row are measured seconds apart, not minutes (this VM's
# speed drifts within a minute). Each program run is one --only group; a run's start costs
# 0.2-0.5 s.
groups_p2p="put_lat,get_lat,put_pingpong signal_pingpong fadd_lat,cswap_lat add_rate,put_mr put_bw get_bw"
groups_coll="barrier bcast fcollect alltoall reduce_sum"

# configs KIND NPES: the library configurations of one kind, one per line, as
# "lib config program" (the program's path under $b).
configs() {
  local kind=$1
  echo "symmem default bench_$kind"
  [ "$kind" = coll ] && echo "symmem active-set bench_coll_as"  # the 1.4 active-set routines, the calls OSHMEM 4.1 makes
  if [ $have_oshmem = 1 ]; then
    echo "oshmem default oshmem_$kind"
    [ "$kind" = coll ] && echo "oshmem scoll-basic oshmem_$kind"
  fi
  if [ $have_mpi = 1 ]; then
    echo "mpi default mpi_$kind"
    [ "$kind" = p2p ] && echo "mpi osc-sm mpi_$kind"
  fi
  return 0
}

# run_config LIB CONFIG PROGRAM KIND NPES ARGS...: one program run of one configuration.
run_config() {
  local lib=$1 config=$2 prog=$3 kind=$4 n=$5; shift 5
  local cmd
  case "$lib-$config" in
    symmem-*) cmd=("$symmem_run" -n "$n" --timeout $((run_timeout - 5))) ;;
    oshmem-scoll-basic) cmd=("${osh[@]}" -np "$n" --mca scoll basic) ;;
    oshmem-*) cmd=("${osh[@]}" -np "$n") ;;
    mpi-osc-sm) cmd=("${mpi[@]}" -np "$n" --mca osc sm) ;;
    mpi-*) cmd=("${mpi[@]}" -np "$n") ;;
  esac
  run "$lib" "$config" "$kind" "$n" "${cmd[@]}" "$b/$prog" "$@"
}

# ---- the across-nodes section (--ucx) ----
# Every peer as if each node were another host: symmem with 1 PE per emulated node at 2 PEs
# and 2 nodes x 2 PEs at 4; OSHMEM on UCX's TCP transport with its MPI layer on TCP too;
# MPI on TCP; ucx_perftest (UCX's own limit) over lo.
if [ $ucx = 1 ]; then
  round=1
  tcp_env=(UCX_TLS=tcp,self UCX_NET_DEVICES=lo)
  ompi_tcp=(OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_osc=^rdma)
  ucx_run() {  # ucx_run LIB CONFIG PROGRAM KIND NPES ARGS...
    local lib=$1 config=$2 prog=$3 kind=$4 n=$5; shift 5
    local cmd
    case "$lib" in
      symmem) cmd=(env UCX_TLS=tcp UCX_NET_DEVICES=lo "$symmem_run" --emulate-nodes $(( n < 4 ? n : 2 )) -n "$n"
                   --timeout $((run_timeout - 5))) ;;
      oshmem) cmd=(env "${tcp_env[@]}" "${ompi_tcp[@]}" SHMEM_SYMMETRIC_SIZE=1G oshrun --allow-run-as-root
                   --oversubscribe -np "$n") ;;
      mpi) cmd=(env "${ompi_tcp[@]}" mpirun --allow-run-as-root --oversubscribe -np "$n") ;;
    esac
    run "$lib" "$config" "$kind" "$n" "${cmd[@]}" "$b/$prog" "$@"
  }
  # ucx_perftest over lo: latency (typical, us) and bandwidth (MB/s) of UCP put and get.
  perf() {  # perf TEST SIZE ITERS
    local port=$((20000 + RANDOM % 20000)) line
    env "${tcp_env[@]}" timeout 60 ucx_perftest -t "$1" -s "$2" -n "$3" -p $port >/dev/null 2>&1 &
    sleep 0.5
    line=$(env "${tcp_env[@]}" timeout 60 ucx_perftest 127.0.0.1 -t "$1" -s "$2" -n "$3" -p $port 2>/dev/null |
           grep '^Final:' || true)
    wait || true
    # A run that printed no result (a port taken, a timeout) is left out, not fatal.
    if [ -n "$line" ]; then
      echo "$line" | awk -v t="$1" -v s="$2" -v r="$round${rep:+.$rep}" \
        '{ print "ucx_perftest,lo," 2 "," t "_lat," s "," $3 ",us,ok," r; print "ucx_perftest,lo," 2 "," t "_bw," s "," $6 ",MB/s,ok," r }' >>"$csv"
    fi
  }
  have_perf=0; command -v ucx_perftest >/dev/null && have_perf=1
  # The libraries of a group in turn, in reverse order every other repetition: a run right
  # after a peer's (OSHMEM's 1 GiB heap just freed) was sometimes several times slower
  # here, so no library always follows the same one.
  turns() {  # turns REP LIB...
    local rep=$1 i
    shift
    if ((rep % 2)); then printf '%s\n' "$@"; else for ((i = $#; i >= 1; --i)); do echo "${!i}"; done; fi
  }
  group_run() {  # group_run LIB KIND(p2p|coll) NPES GROUP: one library's run of a group
    local lib=$1 kind=$2 n=$3 group=$4 prog config=ucx-tcp
    case $lib in
      symmem) prog=bench_$kind ;;
      oshmem) [ $have_oshmem = 1 ] || return 0; prog=oshmem_$kind ;;
      mpi) [ $have_mpi = 1 ] || return 0; prog=mpi_$kind config=tcp ;;
    esac
    # shellcheck disable=SC2086
    group_name=$group ucx_run "$lib" "$config" "$prog" "$kind" "$n" $bench_args --only "$group"
  }
  # Every group runs --repeat2 times (default 3), the libraries alternating run by run, so
  # that each figure is the median of runs seconds apart from its peers' (this machine's
  # speed drifts by several times within a minute when others build).
  for n in $npes_list; do
    for rep in $(seq 1 "$repeat2"); do
      # shellcheck disable=SC2086
      for group in put_lat,get_lat,put_pingpong fadd_lat put_bw get_bw; do
        [ "$n" = 2 ] || continue
        for lib in $(turns "$rep" symmem oshmem); do group_run "$lib" p2p "$n" "$group"; done
        if [ $have_perf = 1 ]; then
          case $group in
            put_lat,get_lat,put_pingpong) perf ucp_put_lat 8 2000; perf ucp_get 8 2000 ;;
            fadd_lat) perf ucp_fadd 8 2000 ;;  # a round trip on a polling target's memory
            put_bw) perf ucp_put_bw 1048576 100 ;;
            get_bw) perf ucp_get 1048576 100 ;;
          esac
        fi
      done
      # shellcheck disable=SC2086
      for group in barrier reduce_sum bcast fcollect alltoall; do
        for lib in $(turns "$rep" symmem oshmem mpi); do group_run "$lib" coll "$n" "$group"; done
      done
    done
  done
  rep=""
  cp "$csv" "$out/ucx.csv"
  {
    echo "# Across nodes (UCX over TCP on lo), $(date -u '+%Y-%m-%d %H:%M UTC'), load $(loadavg) (start: $(sed -n 's/^load_start=//p' "$meta"))"
    echo
    echo "Each figure: the median of $repeat2 runs, the libraries alternating run by run (every run in the last column)."
    echo
    echo "| lib | config | PEs | benchmark | size | median | unit | runs |"
    echo "|---|---|---|---|---|---|---|---|"
    tail -n +2 "$csv" | /usr/bin/python3 -c '
import sys, statistics, collections
rows = collections.OrderedDict()
for line in sys.stdin:
    f = line.rstrip("\n").split(",")
    if len(f) < 9 or f[7] != "ok":
        continue
    rows.setdefault(tuple(f[0:5] + [f[6]]), []).append(float(f[5]))
for (lib, cfg, n, bench, size, unit), vs in rows.items():
    g = lambda v: "%.3g" % v
    print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (lib, cfg, n, bench, size, g(statistics.median(vs)), unit,
                                                   ", ".join(g(v) for v in vs)))'
  } >"$out/ucx.md"
  echo "compare.sh: wrote $out/ucx.md and $out/ucx.csv (raw output in $runs)"
  exit $symmem_failed
fi

# Every round: the limits, every group at every PE count (each library in turn, the first
# one rotating from group to group and round to round; at 2 PEs the turn goes round
# --repeat2 times), the limits again.
# shellcheck disable=SC2086  # bench_args is a word list on purpose
for round in $(seq 1 "$rounds"); do
  run limit start limits 1 "$b/bench_limits" $bench_args
  turn=$round
  for n in $npes_list; do
    for kind in p2p coll; do
      mapfile -t cfgs < <(configs $kind)
      groups=groups_$kind
      reps=1
      [ "$n" = 2 ] && reps=$repeat2
      for group in ${!groups}; do
        for k in $(seq 1 "$reps"); do
          turn=$((turn + 1))
          for i in $(seq 0 $((${#cfgs[@]} - 1))); do
            # shellcheck disable=SC2086  # "lib config program" splits into three words
            rep=$([ "$reps" -gt 1 ] && echo "$k") group_name=$group \
              run_config ${cfgs[$(( (i + turn) % ${#cfgs[@]} ))]} $kind "$n" $bench_args --only "$group"
          done
        done
      done
    done
  done
  run limit end limits 1 "$b/bench_limits" $bench_args
done
echo "load_end=$(loadavg)" >>"$meta"
[ $have_oshmem = 1 ] || echo "peers=OSHMEM not found (oshcc/oshrun): not compared" >>"$meta"
[ $have_mpi = 1 ] || echo "peers=MPI not found (mpicc/mpirun): not compared" >>"$meta"

# ---- the page ----
cp "$csv" "$out/performance.csv"
/usr/bin/python3 "$here/report.py" --csv "$csv" --runs "$runlog" --meta "$meta" \
  --notes "$runs/notes.txt" --out "$out"
echo "compare.sh: wrote $out/performance.md, $out/performance.csv and $out/perf_*.png (raw output in $runs)"
if [ $symmem_failed = 1 ]; then
  echo "compare.sh: some symmem runs did not finish cleanly (see $runlog)" >&2
  exit 1
fi
