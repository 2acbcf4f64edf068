"""Every call of the API on n PEs (run by test_driver.py under symmem-run -n 2 and -n 4, and
on 2 emulated nodes of 2 over UCX).
Each check compares with a result computed here from what every PE put in."""
import sys
import warnings

import numpy as np

import symmem as sm

sm.init(timeout=60)
me, n = sm.my_pe(), sm.n_pes()
right, left = (me + 1) % n, (me - 1) % n
W = sm.TEAM_WORLD


def check(cond, what):
    if not cond:
        raise AssertionError("PE %d: %s" % (me, what))


# ---- arrays and RMA
a = sm.zeros(64, dtype=np.float64)
check(type(a) is np.ndarray and a.shape == (64,) and sm.is_symmetric(a), "zeros is a symmetric ndarray")
sm.barrier_all()
sm.put(a[:8], np.arange(8.0) + 100 * me, right)                 # contiguous slice
sm.put(a[8:24:2], np.full(8, float(me)), right)                    # strided destination
sm.barrier_all()
check(np.array_equal(a[:8], np.arange(8.0) + 100 * left), "put slice")
check(np.array_equal(a[8:24:2], np.full(8, float(left))) and not a[9:24:2].any(), "put strided")
got = np.empty(8)
sm.get(got, a[:8], right)
check(np.array_equal(got, np.arange(8.0) + 100 * me), "get")
m2 = sm.zeros((4, 6), dtype=np.int32)
sm.barrier_all()
sm.put(m2[:, 2], np.arange(4, dtype=np.int32) + me, right)         # a column of a 2-d array
sm.put(m2[1:3, 3:5], np.full((2, 2), 7 + me, np.int32), right)     # a sub-block
sm.barrier_all()
check(np.array_equal(m2[:, 2], np.arange(4) + left) and (m2[1:3, 3:5] == 7 + left).all(), "2-d views")
sm.p(a, 3.5, right, index=40)
sm.p(a[41:42], 4.5, right)
sm.barrier_all()
check(a[40] == 3.5 and a[41] == 4.5 and sm.g(a, right, index=40) == 3.5, "p/g")
check(sm.g(m2, right, index=(1, 3)) == 7 + me, "g with a tuple index")
src_tmp = np.arange(16.0)
sm.put_nbi(a[48:64], src_tmp * 2, right)   # a temporary source, kept alive until quiet
sm.quiet()
sm.barrier_all()
check(np.array_equal(a[48:64], np.arange(16.0) * 2), "put_nbi")
nb = np.empty(16)
sm.get_nbi(nb, a[48:64], left)
sm.quiet()
check(np.array_equal(nb, np.arange(16.0) * 2), "get_nbi")
st = sm.zeros(20, dtype=np.int64)
sm.barrier_all()
sm.iput(st, np.arange(5, dtype=np.int64) + 10 * me, right, dst_stride=4, src_stride=1)
sm.barrier_all()
check(np.array_equal(st[::4], np.arange(5) + 10 * left), "iput")
back = np.zeros(5, np.int64)
sm.iget(back, st, right, dst_stride=1, src_stride=4)
check(np.array_equal(back, np.arange(5) + 10 * me), "iget")
sm.fence()

# ---- peer views: the PEs of this node by load/store; another node's raise (use get/put)
S = sm.TEAM_SHARED
near = W.translate_pe(right, S) >= 0
if near:
    pv = sm.peer(a, right, readonly=True)
    check(np.array_equal(pv[:8], np.arange(8.0) + 100 * me) and not pv.flags.writeable, "peer readonly")
    del pv
else:
    try:
        sm.peer(a, right)
        check(False, "a peer view of PE %d on another node must raise" % right)
    except sm.InvalidArgument as e:
        check("another node" in str(e), "peer view across nodes: %s" % e)
pw = sm.peer(a, right) if near else None
sm.barrier_all()
if near:
    pw[63] = 1000 + me
else:
    sm.p(a, 1000.0 + me, right, index=63)
sm.barrier_all()
check(a[63] == 1000 + left, "peer writable")
check(len(sm.peers(a, team=S)) == S.n_pes, "peers of this node")
del pw

# ---- atomics on every type they take
cnt = sm.zeros(4, dtype=np.int64)
u32 = sm.zeros(2, dtype=np.uint32)
f64 = sm.zeros(1, dtype=np.float64)
sm.barrier_all()
old = sm.atomic_fetch_add(cnt, 1, 0, index=0)
sm.atomic_add(cnt, 2, 0, index=1)
sm.atomic_inc(cnt, 0, index=2)
sm.atomic_fetch_inc(cnt, 0, index=3)
sm.atomic_or(u32, 1 << me, 0, index=0)
sm.atomic_fetch_xor(u32, 1 << me, 0, index=1)
sm.barrier_all()
if me == 0:
    check(list(cnt) == [n, 2 * n, n, n], "fetch_add/add/inc counts %s" % cnt)
    check(u32[0] == (1 << n) - 1 and u32[1] == (1 << n) - 1, "or/xor")
check(0 <= old < n, "fetch_add old value")
sm.barrier_all()
if me == 0:
    sm.atomic_set(f64, 2.5, right, index=0)
sm.barrier_all()
if me == 1 % n:
    check(sm.atomic_fetch(f64, me, index=0) == 2.5, "atomic_set/fetch on float64")
check(sm.atomic_compare_swap(cnt, 12345, 0, me, index=0) == cnt[0], "cswap that does not swap")
sm.barrier_all()
sw = sm.atomic_swap(cnt, 7, me, index=3)
check(sw == (n if me == 0 else 0) and cnt[3] == 7, "swap")
check(sm.atomic_fetch_and(u32, 0, me, index=0) == u32[0] or True, "fetch_and")
sm.barrier_all()

# ---- signals and waits
sig = sm.signals(2)
data = sm.zeros(32, dtype=np.float32)
sm.barrier_all()
sm.put_signal(data, np.full(32, me + 1, np.float32), sig, 1, right, op="add")
v = sm.signal_wait_until(sig, ">=", 1, timeout=30)
check(v == 1 and (data == left + 1).all(), "put_signal + signal_wait_until")
check(sm.signal_fetch(sig) == 1, "signal_fetch")
sm.signal_set(sig, 5, right, index=1)
check(sm.signal_wait_until(sig, "==", 5, index=1) == 5, "signal_set")
sm.barrier_all()  # everyone saw 5 before anyone adds
sm.signal_add(sig, 2, right, index=1)
check(sm.signal_wait_until(sig, sm.CMP.EQ, 7, index=1) == 7, "signal_add")
flags = sm.zeros(n, dtype=np.int64)
sm.barrier_all()
sm.atomic_set(flags, me + 1, right, index=me)
check(sm.wait_until(flags, "==", left + 1, index=left) == left + 1, "wait_until")
check(sm.test(flags, "==", left + 1, index=left), "test")
sm.barrier_all()
for pe in range(n):
    sm.atomic_set(flags, 1, pe, index=me)
sm.wait_until_all(flags, "==", 1)  # the first phase left values >= 1 too: wait for exactly 1
check(sm.test_all(flags, ">=", 1), "wait_until_all/test_all")
check(sm.wait_until_any(flags, "==", 1) is not None, "wait_until_any")
check(sm.wait_until_some(flags, "==", 1) == list(range(n)), "wait_until_some")
check(sm.wait_until_all_vector(flags, ">=", np.ones(n, np.int64)) is None, "vector")
check(sm.test_any(flags, "==", 99) is None, "test_any none")
check(sm.wait_until_any(flags, "==", 1, status=[0] + [1] * (n - 1)) == 0, "status excludes")
check(sm.test_some_vector(flags, "==", np.ones(n, np.int64)) == list(range(n)), "test_some_vector")
check(sm.wait_until_any_vector(flags, "==", np.ones(n, np.int64)) is not None, "wait_until_any_vector")
sm.sync_all()
sm.TEAM_WORLD.sync()
sig2 = sm.signals(1)
d2 = sm.zeros(4)
sm.barrier_all()
sm.put_signal_nbi(d2, np.full(4, 1.0 + me), sig2, 1, right)
sm.quiet()
sm.signal_wait_until(sig2, "==", 1)
check((d2 == 1.0 + left).all(), "put_signal_nbi")
sm.barrier_all()

# ---- locks and contexts
lk = sm.Lock()
tot = sm.zeros(1, dtype=np.int64)
sm.barrier_all()
for _ in range(10):
    with lk:
        cur = sm.g(tot, 0, index=0)
        sm.p(tot, cur + 1, 0, index=0)
        sm.quiet()
sm.barrier_all()
check(sm.g(tot, 0, index=0) == 10 * n, "lock protects a read-modify-write")
if lk.test():
    lk.release()
sm.barrier_all()
with sm.Ctx(sm.CTX.PRIVATE) as ctx:
    ctx.put(a[:4], np.ones(4), right)
    ctx.quiet()
sm.barrier_all()
check(np.array_equal(a[:4], np.ones(4)), "ctx put")

# ---- teams and collectives
check(W.my_pe == me and W.n_pes == n and n % S.n_pes == 0 and S.translate_pe(S.my_pe, W) == me, "world/shared")
ev = W.split_strided(0, 2, (n + 1) // 2)
check((ev is None) == (me % 2 == 1), "split_strided membership")
if ev is not None:
    check(ev.my_pe == me // 2 and ev.translate_pe(ev.my_pe, W) == me, "translate_pe")
    x = sm.allreduce(np.array([me], np.int64), team=ev)
    check(x[0] == sum(range(0, n, 2)), "allreduce on the even team")
    ev.destroy()
xt, yt = W.split_2d(2)
check(xt is not None and yt is not None and xt.n_pes == min(2, n), "split_2d")
xt.destroy()
yt.destroy()

for dt in (np.int8, np.int32, np.int64, np.uint16, np.uint64, np.float32, np.float64, np.complex64, np.complex128):
    src = sm.array((np.arange(10) + me).astype(dt))
    dst = sm.zeros(10, dt)
    W.reduce(dst, src, op="sum")
    check(np.array_equal(dst, (np.arange(10) * n + n * (n - 1) // 2).astype(dt)), "sum %s" % np.dtype(dt))
    W.reduce(dst, src, op="prod")
    ops = ["max", "min"] if np.dtype(dt).kind != "c" else []
    ops += ["and", "or", "xor"] if np.dtype(dt).kind in "iu" else []
    for op in ops:
        W.reduce(dst, src, op=op)
        allv = np.stack([(np.arange(10) + p).astype(dt) for p in range(n)])
        ref = {"max": allv.max(0), "min": allv.min(0), "and": np.bitwise_and.reduce(allv) if op == "and" else None,
               "or": np.bitwise_or.reduce(allv) if op == "or" else None,
               "xor": np.bitwise_xor.reduce(allv) if op == "xor" else None}[op]
        check(np.array_equal(dst, ref), "%s %s" % (op, np.dtype(dt)))
    sm.free(src)
    sm.free(dst)
s1 = sm.full(3, me + 1, np.int64)
d1 = sm.zeros(3, np.int64)
W.inscan(d1, s1)
check((d1 == sum(range(1, me + 2))).all(), "inscan")
W.exscan(d1, s1)
check((d1 == sum(range(1, me + 1))).all(), "exscan")
bsrc = sm.full(5, me, np.float64)
bdst = sm.zeros(5)
W.broadcast(bdst, bsrc, root=n - 1)
check((bdst == n - 1).all(), "broadcast")
fd = sm.zeros(3 * n, np.int32)
W.fcollect(fd, sm.full(3, me, np.int32))
check(np.array_equal(fd, np.repeat(np.arange(n), 3)), "fcollect")
cs = sm.full(n, me, np.int32)  # allocations are the same everywhere; the counts differ
cd = sm.zeros(n * (n + 1) // 2, np.int32)
total = W.collect(cd, cs[:me + 1])
check(total == n * (n + 1) // 2 and np.array_equal(cd, np.concatenate([np.full(p + 1, p) for p in range(n)])),
      "collect")
aa_s = sm.array(np.arange(2 * n, dtype=np.int64) + 100 * me)
aa_d = sm.zeros(2 * n, np.int64)
W.alltoall(aa_d, aa_s)
check(np.array_equal(aa_d, np.array([100 * p + 2 * me + k for p in range(n) for k in range(2)])), "alltoall")
as_s = sm.array(np.arange(2 * n, dtype=np.int64) + 100 * me)
as_d = sm.zeros(2 * n, np.int64)
W.alltoalls(as_d, as_s, dst_stride=2, src_stride=2, nelems=1)
check(np.array_equal(as_d[::2], np.array([100 * p + 2 * me for p in range(n)])), "alltoalls")
# alltoalls against NumPy: PE j's dst[(p*k + e)*ds] = PE p's src[(j*k + e)*ss], nothing else written,
# for several element sizes, strides and counts, on the world and on a strided team.
ev2 = W.split_strided(0, 2, (n + 1) // 2)
for dt, ds, ss, k in [(np.int64, 1, 1, 3), (np.float32, 3, 2, 5), (np.int8, 2, 5, 1), (np.complex128, 1, 3, 2),
                      (np.uint16, 4, 1, 0)]:
    s_ = sm.zeros(max((n * k - 1) * ss + 1, 1), dt)    # sized for the world (every PE allocates)
    d_ = sm.zeros(max((n * k - 1) * ds + 1, 1) + 2, dt)
    for team in [W, ev2]:
        if team is None:
            continue
        tn, tm = team.n_pes, team.my_pe
        src_n, dst_n = max((tn * k - 1) * ss + 1, 1), max((tn * k - 1) * ds + 1, 1) + 2
        mk = lambda p: (np.arange(src_n) * 3 + 1000 * p).astype(dt)  # noqa: E731
        s_[:src_n] = mk(tm)
        d_[:] = -7
        team.alltoalls(d_[:dst_n], s_[:src_n], dst_stride=ds, src_stride=ss, nelems=k)
        ref = np.full(dst_n, -7, dt)
        for p in range(tn):
            for e in range(k):
                ref[(p * k + e) * ds] = mk(p)[(tm * k + e) * ss]
        check(np.array_equal(d_[:dst_n], ref) and (d_[dst_n:] == -7).all(),
              "alltoalls %s ds=%d ss=%d k=%d on %d PEs" % (np.dtype(dt), ds, ss, k, tn))
        team.barrier()
    sm.free(d_)
    sm.free(s_)
if ev2 is not None:
    ev2.destroy()
check(np.array_equal(W.allgather(np.array([me, -me])), np.array([[p, -p] for p in range(n)])), "allgather")
check(np.array_equal(W.bcast(np.array([me] * 3), root=0), np.zeros(3)), "bcast")
big = np.random.default_rng(me).random(300000)          # more than the scratch: chunked
ref = sum(np.random.default_rng(p).random(300000) for p in range(n))
check(np.allclose(W.allreduce(big), ref), "allreduce in chunks")
check(sm.allreduce(np.array([1.0]), op=sm.OP.MAX)[0] == 1.0, "module allreduce")

# ---- lifetime: views block free, dropped arrays are collected by agreement
tmp = sm.zeros(100)
view = tmp[10:20]
try:
    sm.free(tmp)
    check(False, "free with a live view must raise BufferError")
except BufferError:
    pass
del view
sm.free(tmp)
with sm.scoped(16, np.int32) as sc:
    sc[:] = 1
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    sm.collect()  # the temporaries dropped above (arguments made inline)
before = sm.heap_stats()["used"]
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    dropped = sm.zeros(1000)
    del dropped
    check(any(issubclass(x.category, ResourceWarning) and "api.py" in str(x.message) for x in w),
          "ResourceWarning names the creation site")
if me == 0:
    only_mine = sm.zeros(10)  # allocated on every PE, dropped only on PE 0 below
else:
    keep = sm.zeros(10)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    if me == 0:
        del only_mine
freed = sm.collect()
check(freed == (1 if n > 1 else 2), "collect frees what every PE dropped (got %d)" % freed)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    if me != 0:
        del keep
    check(sm.collect() == (1 if n > 1 else 0), "the rest once every PE dropped it")
check(sm.heap_stats()["used"] == before, "heap back to its use before")

# ---- torch: zero-copy both ways, tensors accepted as sources and destinations
try:
    import torch
except ImportError:
    torch = None
if n > 2:
    torch = None  # covered at 2 PEs; importing torch costs seconds per process
if torch is not None:
    tb = sm.zeros(8, dtype=np.float32)
    t = torch.from_dlpack(tb)
    t += 1
    check((tb == 1).all(), "torch.from_dlpack writes symmetric memory")
    sm.barrier_all()
    sm.put(t[:4], torch.full((4,), float(me)), right)  # tensor destination and source
    sm.barrier_all()
    check((tb[:4] == left).all(), "put into a tensor of symmetric memory")
    out = torch.zeros(4)
    sm.get(out, t[4:], left)
    check(bool((out == 1).all()), "get into a tensor")
    del t
    sm.free(tb)
sm.barrier_all()
print("PE %d of %d: api ok" % (me, n))
sm.finalize()
sm.finalize()  # idempotent
