#!/usr/bin/env python3
"""check_stats.py <symmem-run> <stats_traffic> <case>: runs the known traffic pattern of
stats_traffic.c on 4 PEs with SYMMEM_STATS and checks the printed table and the JSON file
against it, exactly (counts, bytes, matrix, PE 2's late arrivals)."""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

run, prog, case = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
N = 4
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)


with tempfile.TemporaryDirectory(prefix="symmem-stats-") as tmp:
    env = dict(os.environ)
    launcher = [run, "--timeout", "90"]
    if case in ("level1", "ucx"):
        path = os.path.join(tmp, "out.json")
        env["SYMMEM_STATS"] = "1,file=" + path
        if case == "ucx":  # 2 emulated nodes of 2 PEs: PEs 0-1 and 2-3 talk over UCX
            launcher += ["--emulate-nodes", "2"]
            env.update(UCX_TLS="tcp", UCX_NET_DEVICES="lo")
    else:  # level 2, default file name in the working directory, every op sampled
        env["SYMMEM_STATS"] = "2"
        env["SYMMEM_STATS_SAMPLE"] = "1"
        path = None
    p = subprocess.run(launcher + ["-n", str(N), prog], env=env, cwd=tmp,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    out = p.stdout
    print(out)
    check(p.returncode == 0, "exit code %d" % p.returncode)
    if path is None:
        found = glob.glob(os.path.join(tmp, "symmem-stats-*.json"))
        check(len(found) == 1, "one symmem-stats-<job>.json in the working directory, found %s" % found)
        path = found[0] if found else os.path.join(tmp, "missing")
    try:
        with open(path) as f:
            j = json.load(f)
    except (OSError, ValueError) as e:
        print("check_stats: no readable JSON: %s" % e)
        sys.exit(1)

# ---- the JSON ----
check(j["schema"] == "symmem-stats/1", "schema")
check(j["n_pes"] == N and len(j["per_pe"]) == N, "n_pes")
check(len(j["hosts"]) == 1, "hosts")
if case != "level2":
    check(os.path.basename(path) == "out.json", "file=")
else:
    check(os.path.basename(path) == "symmem-stats-%s.json" % j["job"], "default file name has the job id")
for pe in range(N):
    right, left = (pe + 1) % N, (pe - 1) % N
    row = j["per_pe"][pe]
    ops = {(o["op"], o["route"]): (o["calls"], o["bytes"]) for o in row["ops"]}
    def route(t):
        return "ucx" if case == "ucx" and t // 2 != pe // 2 else "shm"
    want = {}
    def add(op, t, calls, nbytes):
        c, b = want.get((op, route(t)), (0, 0))
        want[(op, route(t))] = (c + calls, b + nbytes)
    add("put", right, 10, 10000)
    add("get", left, 3, 1500)
    add("atomic_fetch" if route(0) == "shm" else "atomic", 0, 5, 40)  # atomic_inc: posted off the node
    add("atomic_fetch", right, 2, 16)
    add("put_signal", right, 2, 200)
    add("signal", left, 1, 8)
    if pe in (0, 3):  # the go and its answer
        add("put", 3 - pe, 1, 8)
    check(ops == want, "PE %d ops %s, want %s" % (pe, ops, want))
    m = j["matrix"]
    puts = {right: (12, 10200)}
    if pe in (0, 3):
        c, b = puts.get(3 - pe, (0, 0))
        puts[3 - pe] = (c + 1, b + 8)
    for kind, cells in (("put", puts), ("get", {left: (3, 1500)}),
                        ("amo", {0: (5, 40)} if right != 0 else {0: (7, 56)}),
                        ("signal", {right: (2, 16), left: (1, 8)})):
        if kind == "amo" and right != 0:
            cells[right] = (2, 16)
        for t in range(N):
            got = (m[kind]["calls"][pe][t], m[kind]["bytes"][pe][t])
            check(got == cells.get(t, (0, 0)), "matrix %s[%d][%d] = %s, want %s" % (kind, pe, t, got,
                                                                                   cells.get(t, (0, 0))))
    check(row["heap"]["allocations"] == 3, "PE %d allocations %d" % (pe, row["heap"]["allocations"]))
    check(row["heap"]["high_water"] >= 4096 + 16 + 16, "PE %d heap high-water" % pe)
    check(row["blocked_count"]["barrier"] >= 8, "PE %d barrier blocked count" % pe)
    check(row["blocked_s"]["total"] > 0, "PE %d blocked total" % pe)
    if pe == 0:
        check(row["blocked_count"]["wait"] >= 1, "PE 0 waited for PE 3's answer: wait count %s" % row["blocked_count"])
    if case == "level2":
        lat = row.get("latency_log2_ns", {})
        for (op, _), (calls, _) in want.items():
            check(sum(lat.get(op, [])) == calls, "PE %d %s: %s samples, want %d" % (pe, op, lat.get(op), calls))

colls = {(c["team"], c["op"]): c for c in j["collectives"]}
bar = colls.get(("world", "barrier"))
check(bar is not None, "world barrier entry")
if bar:
    check(bar["calls"] == [8] * N, "barrier calls %s" % bar["calls"])
    check(bar["team_size"] == N, "barrier team size")
    # across nodes too: 300 ms late is far outside the bounds on the nodes' clock offset
    check(bar["last"] == [0, 0, 8, 0], "barrier last arrivals %s, want PE 2 8 times" % bar["last"])
    check(bar["judged"] == [8] * N, "barrier judged %s" % bar["judged"])
for op, calls in (("malloc", 3), ):
    c = colls.get(("world", op))
    check(c is not None and c["calls"] == [calls] * N, "world %s calls %s" % (op, c and c["calls"]))
check(j["per_pe"][2]["last_arrivals"] >= 8, "PE 2 last_arrivals")

# ---- the table ----
check(re.search(r"\[pe 0 [^]]*\] symmem info: stats \(4 PEs, [0-9.]+ s\)  put 50 ops 39\.9 KiB  get 12 ops 5\.9 KiB"
                r"  amo 28 ops 224 B  signal 12 ops 96 B.*  barrier 8", out), "table: totals line")
check(re.search(r"  blocked time: .*PE", out), "table: blocked time line")
check(re.search(r"  late arrivals: PE 2 last to arrive 8/8 barrier", out), "table: late arrivals of PE 2")
check(re.search(r"  heaviest pairs: (\d->\d 10\.0 KiB, ){3}\d->\d 10\.0 KiB \.\.\.   heap high-water .*, 3 allocations"
                r"   full matrix: \S+\.json", out), "table: heaviest pairs")

for f in fails:
    print("check_stats: FAIL: " + f)
sys.exit(1 if fails else 0)
