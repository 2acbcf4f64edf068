#!/usr/bin/env bash
# netns.sh <program> [args...]: runs 4 PEs of <program> as 2 nodes in 2 network namespaces
# this script creates (a veth pair 10.77.<k>.1 <-> 10.77.<k>.2 between them, no route to
# anything else) and removes, so that the UCX traffic really crosses an interface: PEs 0-1
# in namespace A, 2-3 in B, UCX_NET_DEVICES pinned to each side's veth, the store on A's
# address. Started the way Slurm starts PEs (SLURM_PROCID / SLURM_NTASKS, SYMMEM_STORE and a
# shared SYMMEM_STORE_SECRET). Exit 77 (skipped) where namespaces cannot be made (not root,
# no CAP_NET_ADMIN, no ip).
# NETNS_B_DEVICES: UCX_NET_DEVICES for B's PEs instead of its veth; NETNS_BLACKHOLE=1: B's
# PEs publish the address of a second interface of B's (10.78.<k>.2) that A routes to over
# the veth but to a MAC address nobody has, so A's packets to it vanish (an address that
# routes but never answers); NETNS_EXPECT: a regex the output must match, the job then
# having to fail (and leave nothing in /dev/shm).
set -u
prog=("$@")
command -v ip >/dev/null || { echo "netns: no ip command; skipped"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "netns: needs root; skipped"; exit 77; }
tag=sym$$
a=$tag-a; b=$tag-b
k=$(( $$ % 200 + 20 ))
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  ip netns del "$a" 2>/dev/null
  ip netns del "$b" 2>/dev/null
}
trap cleanup EXIT
if ! ip netns add "$a" 2>/dev/null || ! ip netns add "$b" 2>/dev/null; then
  echo "netns: cannot create network namespaces here; skipped"
  exit 77
fi
ip link add "v$tag-a" type veth peer name "v$tag-b" 2>/dev/null || { echo "netns: no veth; skipped"; exit 77; }
ip link set "v$tag-a" netns "$a" && ip link set "v$tag-b" netns "$b" || exit 1
ip -n "$a" addr add "10.77.$k.1/24" dev "v$tag-a" && ip -n "$b" addr add "10.77.$k.2/24" dev "v$tag-b" || exit 1
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set "v$tag-a" up && ip -n "$b" link set "v$tag-b" up || exit 1
if [ "${NETNS_BLACKHOLE:-0}" = 1 ]; then
  # B's UCX interface: one end of a veth pair whose both ends stay in B (up, so it has a
  # carrier); A sends to its address out of its own veth, to a made-up neighbour.
  ip -n "$b" link add "h$tag-b" type veth peer name "h$tag-c" || exit 1
  ip -n "$b" addr add "10.78.$k.2/24" dev "h$tag-b" && ip -n "$b" link set "h$tag-b" up &&
    ip -n "$b" link set "h$tag-c" up || exit 1
  ip -n "$a" route add "10.78.$k.0/24" dev "v$tag-a" &&
    ip -n "$a" neigh add "10.78.$k.2" lladdr 02:00:00:00:07:78 dev "v$tag-a" nud permanent || exit 1
  NETNS_B_DEVICES="h$tag-b"
fi

port=$(( 20000 + $$ % 20000 ))
secret=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
out=$(mktemp)
for r in 0 1 2 3; do
  if [ $r -lt 2 ]; then ns=$a dev=v$tag-a node=A; else ns=$b dev=${NETNS_B_DEVICES:-v$tag-b} node=B; fi
  ip netns exec "$ns" env SLURM_PROCID=$r SLURM_NTASKS=4 SLURM_JOB_ID="$tag" SLURM_STEP_ID=0 SLURM_NNODES=2 \
    SYMMEM_STORE="tcp://10.77.$k.1:$port" SYMMEM_STORE_SECRET="$secret" SYMMEM_NODE_ID="$node" \
    UCX_TLS=tcp UCX_NET_DEVICES="$dev" SYMMEM_OP_TIMEOUT=60 SYMMEM_INIT_TIMEOUT="${NETNS_INIT_TIMEOUT:-60}" \
    SYMMEM_LOG_LEVEL=warn \
    timeout 120 "${prog[@]}" >>"$out" 2>&1 &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
pids=()
cat "$out"
if [ -n "${NETNS_EXPECT:-}" ]; then
  matched=0; grep -Eq -- "$NETNS_EXPECT" "$out" && matched=1
  rm -f "$out"
  left=$(ls /dev/shm | grep -c -- "$tag")
  if [ $rc = 0 ]; then  # what the namespaces looked like, for the next reader
    echo "netns: expected the job to fail (k=$k port=$port)"
    ip -n "$a" -br addr; ip -n "$a" route; ip -n "$a" neigh; ip -n "$b" -br addr
    exit 1
  fi
  [ $matched = 1 ] || { echo "netns: output does not match /$NETNS_EXPECT/"; exit 1; }
  [ "$left" = 0 ] || { echo "netns: $left file(s) of the job left in /dev/shm"; exit 1; }
  echo "netns: failed as expected"
  exit 0
fi
rm -f "$out"
[ $rc = 0 ] || { echo "netns: a PE failed"; exit 1; }
# A's and B's PEs reach each other only through the veth pair (UCX_NET_DEVICES, and the
# namespaces have nothing else), so the job finishing is the proof; the counter for the log.
bytes=$(ip -n "$a" -s link show "v$tag-a" | awk '/RX:/ { getline; print $1; exit }')
echo "netns: ok, $bytes bytes received on A's veth"
exit 0
