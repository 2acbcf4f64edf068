"""Contexts (symmem.Ctx over symmem::Ctx), run under symmem-run -n 2 / -n 4 and across two
emulated nodes (UCX): PE numbers are the context's team's, ctx.quiet() completes what was
issued on the context and releases its nbi buffers (not the runtime's), a destroyed context
or one of a finalized runtime raises StateError."""
import numpy as np

import symmem as sm

sm.init(timeout=60)
me, n = sm.my_pe(), sm.n_pes()
W = sm.TEAM_WORLD


def check(cond, what):
    if not cond:
        raise AssertionError("PE %d: %s" % (me, what))


rows = sm.zeros((n, 4096), np.int64)     # row p: what PE p put here
flag = sm.zeros(n, np.int64)
other = sm.zeros(n, np.int64)
sm.barrier_all()
rev = W.split_strided(n - 1, -1, n)      # team PE k is world PE n-1-k
with sm.Ctx(sm.CTX.PRIVATE, team=rev) as ctx:
    check(ctx.n_pes == n and ctx.options == sm.CTX.PRIVATE, "ctx properties")
    target_team = 0                      # team PE 0: world PE n-1
    sm.put_nbi(other[me:me + 1], np.array([-1]), (me + 1) % n)   # one nbi on the runtime
    ctx.put_nbi(rows[me], np.arange(4096, dtype=np.int64) + 10000 * me, target_team)  # a temporary source
    check(ctx.n_pending == 2, "the ctx keeps its nbi buffers (%d)" % ctx.n_pending)
    ctx.p(rows, 7, target_team, index=(me, 4095))
    ctx.quiet()
    check(ctx.n_pending == 0 and sm.current()._c.n_pending == 2, "ctx.quiet releases its own buffers only")
    # Completed by the ctx's quiet: the target may read it once it sees the flag.
    ctx.atomic_add(flag, 1, target_team, index=me)
    try:
        ctx.put(rows[me], np.zeros(4096, np.int64), n)
    except sm.PEError:
        pass
    else:
        raise AssertionError("PE %d: a PE outside the context's team was accepted" % me)
    check(ctx.atomic_fetch(flag, target_team, index=me) == 1, "ctx atomic_fetch")
    check(ctx.g(rows, target_team, index=(me, 4095)) == 7, "ctx p/g")
if me == n - 1:
    for p in range(n):
        sm.wait_until(flag, "==", 1, index=p, timeout=30)
        ref = np.arange(4096, dtype=np.int64) + 10000 * p
        ref[4095] = 7
        check(np.array_equal(rows[p], ref), "row of PE %d, put on the ctx, complete at its quiet" % p)
sm.quiet()
sm.barrier_all()
try:
    ctx.put(rows[me], np.zeros(4096, np.int64), 0)
except sm.StateError:
    pass
else:
    raise AssertionError("PE %d: a destroyed context was used" % me)
# A world context, left to finalize.
wc = sm.Ctx()
wc.put(flag[me:me + 1], np.array([5], np.int64), (me + 1) % n)
wc.quiet()
sm.barrier_all()
check(flag[(me - 1) % n] == 5, "world ctx put")
rev.destroy()
sm.free(other)
sm.free(flag)
sm.free(rows)
sm.finalize()
try:
    wc.quiet()
except sm.StateError:
    pass
else:
    raise AssertionError("PE %d: a context of a finalized runtime was used" % me)
print("contexts ok PE", me)
