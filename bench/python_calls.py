"""Cost per call of the Python module against the same calls from C (bench/py_calls.c),
in the same run: p, put (8 B, 64 KiB, 1 MiB), get, atomic_fetch_add, barrier_all, allreduce of
8 B and 1 MiB, at 2 PEs (PE 0 targets PE 1). Each figure is the best of 5 loops in each
of --runs runs per side, C and Python alternating; the last column is the median over the
runs of C / Python within each adjacent pair (C run, Python run), which a machine whose
speed drifts from run to run moves less than the ratio of the two bests.

    bench/python_calls.py [--build build] [--scale 1.0]     # runs both under symmem-run -n 2
    symmem-run -n 2 /usr/bin/python3 bench/python_calls.py --pe  # the Python side alone
"""
import argparse
import os
import subprocess
import sys
import time

REPS = 5


def python_side(scale):
    import numpy as np
    import symmem as sm
    sm.init()
    me = sm.my_pe()
    small, mid, big = int(20000 * scale), int(2000 * scale), int(200 * scale) + 1
    a = sm.zeros(1)
    b = sm.zeros(65536, np.uint8)
    c = sm.zeros(1, np.int64)
    rs = sm.zeros(131072)
    rd = sm.zeros(131072)
    one = np.ones(1)
    raw = np.ones((1 << 20) + 4096, np.uint8)  # page-aligned and touched, as py_calls.c's: a copy's speed depends on both
    src = raw[(-raw.ctypes.data) % 4096:][:65536]
    src1m = raw[(-raw.ctypes.data) % 4096:][:1 << 20].view(np.float64)
    g = np.empty(1)
    a1, rs1, rd1 = a[:1], rs[:1], rd[:1]
    put, get, p, fadd, barrier = sm.put, sm.get, sm.p, sm.atomic_fetch_add, sm.barrier_all
    W = sm.TEAM_WORLD
    reduce = W.reduce

    def best(name, n, both, fn):
        t_best = 1e30
        for _ in range(REPS):
            barrier()
            if both or me == 0:
                t0 = time.perf_counter()
                fn(n)
                t = (time.perf_counter() - t0) / n
                t_best = min(t_best, t)
        barrier()
        if me == 0:
            print("%s %.4f" % (name, t_best * 1e6), flush=True)

    def loop_p(n):
        for _ in range(n):
            p(a, 1.0, 1, index=0)

    def loop_put8(n):
        for _ in range(n):
            put(a1, one, 1)

    def loop_put64(n):
        for _ in range(n):
            put(b, src, 1)

    def loop_put1m(n):
        for _ in range(n):
            put(rd, src1m, 1)

    def loop_get8(n):
        for _ in range(n):
            get(g, a1, 1)

    def loop_fadd(n):
        for _ in range(n):
            fadd(c, 1, 1, index=0)

    def loop_barrier(n):
        for _ in range(n):
            barrier()

    def loop_red8(n):
        for _ in range(n):
            reduce(rd1, rs1, "sum")

    def loop_red1m(n):
        for _ in range(n):
            reduce(rd, rs, "sum")

    def loop_value8(n):
        x = np.ones(1)
        for _ in range(n):
            W.allreduce(x)

    best("p", small, False, loop_p)
    best("put_8B", small, False, loop_put8)
    best("put_64KiB", mid, False, loop_put64)
    best("put_1MiB", big, False, loop_put1m)
    best("get_8B", small, False, loop_get8)
    best("atomic_fetch_add", small, False, loop_fadd)
    best("barrier_all", mid, True, loop_barrier)
    best("allreduce_8B", mid, True, loop_red8)
    best("allreduce_1MiB", big, True, loop_red1m)
    best("allreduce_8B_value_style", mid, True, loop_value8)
    del a1, rs1, rd1
    for x in (a, b, c, rs, rd):
        sm.free(x)
    sm.finalize()


def parse(out):
    r = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                r[parts[0]] = float(parts[1])
            except ValueError:
                pass
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pe", action="store_true", help="run as a PE (under symmem-run)")
    ap.add_argument("--build", default="build")
    ap.add_argument("--scale", type=float, default=1.0, help="iterations x scale")
    ap.add_argument("--runs", type=int, default=9, help="runs of each side, alternating C, Python, C, ...")
    args = ap.parse_args()
    if args.pe:
        return python_side(args.scale)
    run = os.path.join(args.build, "tools", "symmem-run", "symmem-run")
    cprog = os.path.join(args.build, "bench", "bench_py_calls")
    env = dict(os.environ, PYTHONPATH=os.path.join(args.build, "python"), SHMEM_SYMMETRIC_SIZE="64M")
    ccmd = [cprog, str(args.scale)]
    pycmd = ["/usr/bin/python3", os.path.abspath(__file__), "--pe", "--scale", str(args.scale)]
    best = {"c": {}, "py": {}}  # each side's best over its runs, the runs alternating
    pairs = {}  # call -> C / Python of each adjacent pair of runs
    for _ in range(args.runs):
        this = {}
        for name, cmd in (("c", ccmd), ("py", pycmd)):
            p = subprocess.run([run, "-n", "2", "--timeout", "300"] + cmd, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, env=env, timeout=360)
            if p.returncode != 0:
                sys.stderr.write(p.stdout.decode(errors="replace"))
                return 1
            this[name] = parse(p.stdout.decode())
            for k, v in this[name].items():
                best[name][k] = min(v, best[name].get(k, 1e30))
        for k, v in this["py"].items():
            ck = this["c"].get(k if k != "allreduce_8B_value_style" else "allreduce_8B")
            if ck is not None and v > 0:
                pairs.setdefault(k, []).append(ck / v)
    c, py = best["c"], best["py"]
    load = os.getloadavg()[0]
    print("# Python vs C per call, 2 PEs, load average %.2f (each: best of %d runs, alternating)" % (load, args.runs))
    print("| call | C (us) | Python (us) | Python - C (us) | C / Python | median of pairs (range) |")
    print("|---|---:|---:|---:|---:|---:|")
    for k in ("p", "put_8B", "put_64KiB", "put_1MiB", "get_8B", "atomic_fetch_add", "barrier_all", "allreduce_8B",
              "allreduce_1MiB", "allreduce_8B_value_style"):
        ck = c.get(k if k != "allreduce_8B_value_style" else "allreduce_8B")
        pk = py.get(k)
        if ck is None or pk is None:
            continue
        r = sorted(pairs.get(k, []))
        med = r[len(r) // 2] if len(r) % 2 else (r[len(r) // 2 - 1] + r[len(r) // 2]) / 2
        print("| %s | %.3f | %.3f | %+.3f | %.2f | %.2f (%.2f-%.2f) |" %
              (k.replace("_", " "), ck, pk, pk - ck, ck / pk, med, r[0], r[-1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
