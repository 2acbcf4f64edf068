"""Nothing a peer writes right after an allocation returns is lost (issue 34 part 1).

Every initialising constructor (zeros, ones, full, array, zeros_like, signals, the compat
layer's aclshmem_calloc) must fill this PE's copy before the allocation's closing barrier:
a peer may put or signal as soon as its own call returns. Each case first dirties the
block it will get (empty, fill with 0x5A, free: the allocator hands the same offset back),
then every peer puts and signals into the new array at once, a barrier completes those,
and each PE checks its copy. Sizes from one element to megabytes, many rounds.

    symmem-run -n 4 /usr/bin/python3 alloc_race.py [--rounds R] [--max-bytes B]
"""
import argparse

import numpy as np

import symmem as sm
import symmem.compat.aclshmem as acl

ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=6)
ap.add_argument("--max-bytes", type=int, default=4 << 20)
args = ap.parse_args()

sm.init(timeout=100)
me, n = sm.my_pe(), sm.n_pes()
lost = []
reused = [0, 0]


def writers(count):
    """{pe: element index} of the peers that write into PE me's copy: every other PE at the
    last element of its slice when there are enough elements, else the left neighbour at
    the last element (late in the fill, where a racing fill would still be running)."""
    if count >= n:
        return {p: (p + 1) * count // n - 1 for p in range(n) if p != me}
    return {(me - 1) % n: count - 1} if n > 1 else {}


def targets(count):
    """[(pe, element index)] this PE writes into, the mirror of writers()."""
    out = []
    for t in range(n):
        if t == me:
            continue
        if count >= n:
            out.append((t, (me + 1) * count // n - 1))
        elif (t - 1) % n == me:
            out.append((t, count - 1))
    return out


def dirty(nbytes):
    """Leave non-zero bytes where the next allocation of nbytes will be; its address."""
    d = sm.empty(max(nbytes, 1), np.uint8)
    d[...] = 0x5A
    addr = d.__array_interface__["data"][0]
    sm.free(d)
    return addr


def check(case, rnd, flat, init, marks):
    """flat: this PE's copy; init: the constructor's values (flat); marks: {index: value}."""
    want = init.copy()
    for i, v in marks.items():
        want[i] = v
    bad = np.flatnonzero(flat != want)
    if bad.size:
        i = int(bad[0])
        lost.append("PE %d %s round %d count %d: %d element(s) wrong, first [%d] got %r want %r%s"
                    % (me, case, rnd, flat.size, bad.size, i, flat[i], want[i],
                       " (a peer's write)" if i in marks else ""))


def run_case(case, rnd, count, dtype, make, init_of):
    """make(): the collective constructor; the peers write marks at once, then a barrier."""
    dtype = np.dtype(dtype)
    addr = dirty(count * dtype.itemsize)
    a = make()
    flat = a.reshape(-1)
    for t, i in targets(count):  # as soon as the allocation returns
        sm.p(flat, dtype.type(1000 + me), t, index=i)
    sm.barrier_all()  # completes every put
    reused[0] += addr == a.__array_interface__["data"][0]
    reused[1] += 1
    check(case, rnd, flat, init_of(count, dtype), {i: dtype.type(1000 + p) for p, i in writers(count).items()})
    del flat
    sm.free(a)


def run_signals(rnd, count):
    addr = dirty(count * 8)
    sig = sm.signals(count)
    data = sm.zeros(count, np.int64)
    for t, i in targets(count):
        sm.signal_add(sig, me + 1, t, index=i)
        sm.put_signal(data[i:i + 1], np.array([7 + me], np.int64), sig[i:i + 1], 100, t, op="add")
    sm.barrier_all()
    reused[0] += addr == sig.__array_interface__["data"][0]
    reused[1] += 1
    w = writers(count)
    check("signals", rnd, sig, np.zeros(count, np.uint64), {i: np.uint64(p + 1 + 100) for p, i in w.items()})
    check("signals' data", rnd, data, np.zeros(count, np.int64), {i: 7 + p for p, i in w.items()})
    # A lost signal is a hang: wait for what must be there, with a deadline.
    for p, i in w.items():
        sm.signal_wait_until(sig, sm.CMP.GE, p + 1 + 100, index=i, timeout=30)
    sm.barrier_all()
    sm.free(data)
    sm.free(sig)


def run_calloc(rnd, count):
    addr = dirty(count)
    ptr = acl.aclshmem_calloc(count, 1)
    src = np.array([0xC0 + me], np.uint8)
    for t, i in targets(count):
        acl.aclshmem_putmem(ptr + i, src, 1, t)
    sm.barrier_all()
    reused[0] += addr == ptr
    reused[1] += 1
    view = np.frombuffer(acl._block_at(ptr), np.uint8, count=count)
    check("aclshmem_calloc", rnd, view, np.zeros(count, np.uint8), {i: 0xC0 + p for p, i in writers(count).items()})
    del view
    acl.aclshmem_free(ptr)


counts = [1, 3, 64, 4096]
c = 1 << 15
while c * 8 <= args.max_bytes:  # 256 KiB .. max_bytes of float64
    counts.append(c)
    c <<= 2
seq = lambda k, dt: (np.arange(k) % 251 + 1).astype(dt)  # noqa: E731
cases = [
    ("zeros", np.float64, lambda k, dt: sm.zeros(k, dt), lambda k, dt: np.zeros(k, dt)),
    ("zeros 2-d", np.int32, lambda k, dt: sm.zeros((1, k), dt), lambda k, dt: np.zeros(k, dt)),
    ("ones", np.float32, lambda k, dt: sm.ones(k, dt), lambda k, dt: np.ones(k, dt)),
    ("full", np.int64, lambda k, dt: sm.full(k, -3, dt), lambda k, dt: np.full(k, -3, dt)),
    ("full F-order", np.int16, lambda k, dt: sm.full((k, 1), 5, dt, order="F"), lambda k, dt: np.full(k, 5, dt)),
    ("array", np.float64, lambda k, dt: sm.array(seq(k, dt)), seq),
    ("zeros_like", np.uint16, lambda k, dt: sm.zeros_like(np.empty(k, dt)), lambda k, dt: np.zeros(k, dt)),
]
for rnd in range(args.rounds):
    for count in counts:
        for name, dt, make, init_of in cases:
            run_case(name, rnd, count, dt, lambda: make(count, dt), init_of)
        run_signals(rnd, count)
        run_calloc(rnd, count)

nlost = int(sm.allreduce(np.array([len(lost)], np.int64))[0])
for line in lost[:10]:
    print(line, flush=True)
# The test means something only if blocks came back dirty at the same place.
if reused[0] * 2 < reused[1]:
    print("PE %d: only %d of %d allocations reused the dirtied block" % (me, reused[0], reused[1]), flush=True)
    nlost += 1
sm.finalize()
print("alloc race %s: %d lost write(s) over all PEs, %d rounds, counts %s, blocks reused %d/%d"
      % ("ok" if nlost == 0 else "FAILED", nlost, args.rounds, counts, reused[0], reused[1]), flush=True)
raise SystemExit(0 if nlost == 0 else 1)
