#!/usr/bin/env bash
# netns.sh <program> [args...]: runs 4 PEs of <program> as 2 nodes in 2 network namespaces
# this script creates (a veth pair 10.77.<k>.1 <-> 10.77.<k>.2 between them, no route to
# anything else) and removes, so that the UCX traffic really crosses an interface: PEs 0-1
# in namespace A, 2-3 in B, UCX_NET_DEVICES pinned to each side's veth, the store on A's
# address. Started the way Slurm starts PEs (SLURM_PROCID / SLURM_NTASKS, SYMMEM_STORE and a
# shared SYMMEM_STORE_SECRET). Exit 77 (skipped) where namespaces cannot be made (not root,
# no CAP_NET_ADMIN, no ip).
# NETNS_B_DEVICES: UCX_NET_DEVICES for B's PEs instead of its veth; NETNS_BLACKHOLE=1: the
# veth routes but never answers: each side sends to the other's address on it to a MAC
# address nobody has (a permanent neighbour entry), so every packet on it vanishes, both
# ways; the store then travels on a second veth pair (10.79.<k>.1 <-> 10.79.<k>.2) that UCX
# does not use. NETNS_EXPECT: a regex the output must match, the job then having to fail
# (and leave nothing in /dev/shm).
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
store_ip=10.77.$k.1
if [ "${NETNS_BLACKHOLE:-0}" = 1 ]; then
  # Both directions: an earlier form blackholed only A -> B, and B's connections to A, sent
  # from B's veth address, were answered; UCX could then wire A's endpoints up over them,
  # and the job got past init now and then (twice in ~10 suite runs), failing later.
  # IPv4 only: IPv6 link-local addresses on the veth would still find each other.
  for ns in "$a" "$b"; do ip netns exec "$ns" sh -c 'echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6' || exit 1; done
  ip -n "$a" neigh add "10.77.$k.2" lladdr 02:00:00:00:07:78 dev "v$tag-a" nud permanent &&
    ip -n "$b" neigh add "10.77.$k.1" lladdr 02:00:00:00:07:79 dev "v$tag-b" nud permanent || exit 1
  ip link add "s$tag-a" type veth peer name "s$tag-b" 2>/dev/null || exit 1
  ip link set "s$tag-a" netns "$a" && ip link set "s$tag-b" netns "$b" || exit 1
  ip -n "$a" addr add "10.79.$k.1/24" dev "s$tag-a" && ip -n "$b" addr add "10.79.$k.2/24" dev "s$tag-b" || exit 1
  ip -n "$a" link set "s$tag-a" up && ip -n "$b" link set "s$tag-b" up || exit 1
  store_ip=10.79.$k.1
fi

port=$(( 20000 + $$ % 20000 ))
secret=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
out=$(mktemp)
for r in 0 1 2 3; do
  if [ $r -lt 2 ]; then ns=$a dev=v$tag-a node=A; else ns=$b dev=${NETNS_B_DEVICES:-v$tag-b} node=B; fi
  ip netns exec "$ns" env SLURM_PROCID=$r SLURM_NTASKS=4 SLURM_JOB_ID="$tag" SLURM_STEP_ID=0 SLURM_NNODES=2 \
    SYMMEM_STORE="tcp://$store_ip:$port" SYMMEM_STORE_SECRET="$secret" SYMMEM_NODE_ID="$node" \
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
