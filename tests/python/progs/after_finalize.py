"""Arrays, views, peer views and torch tensors that outlive finalize() (run under
symmem-run -n 2): they keep their memory (a private copy, with the values they had) and
never crash; symmem calls on them raise StateError, also after a new init(); their pages
go when the last of them does."""
import gc
import sys

import numpy as np

import symmem as sm
from symmem import _symmem

torch = None
if "--torch" in sys.argv:  # test_local.py covers tensors in its process (torch takes seconds to import)
    import torch

sm.init(timeout=60)
me, n = sm.my_pe(), sm.n_pes()
right = (me + 1) % n


def check(cond, what):
    if not cond:
        raise AssertionError("PE %d: %s" % (me, what))


def raises(exc, f, what, match=None):
    try:
        f()
    except exc as e:
        check(match is None or match in str(e), "%s: message %r" % (what, str(e)))
        return
    raise AssertionError("PE %d: %s did not raise %s" % (me, what, exc.__name__))


a = sm.zeros(5000, np.float64)          # 40 KB: several pages
a[:] = me
small = sm.full(3, 7, np.int32)         # shares a page with its neighbours
sm.barrier_all()
view = a[10:20]
strided = a[::7]
elem = a[5:6]
grid = a.reshape(50, 100)
pv = sm.peer(a, right)                   # the right PE's copy
pv_ro = sm.peer(a[100:200], right, readonly=True)
dl = np.from_dlpack(a)
t = torch.from_dlpack(a) if torch is not None else None
sm.barrier_all()
check(sm.heap_offset(view) == 80, "heap_offset before")
sm.finalize()

check(_symmem._kept_pages() > 0, "pages kept after finalize")
# Every alias still reads what the array held, and can be written (private memory now).
check((a == me).all() and (pv == right).all() and (pv_ro == right).all() and (small == 7).all(), "values kept")
view[:] = 3
check((a[10:20] == 3).all() and (dl[10:20] == 3).all(), "a view writes into the array")
strided[1] = -1
grid[49, 99] = 9
elem[0] = 11
check(a[7] == -1 and a[4999] == 9 and a[5] == 11, "strided / reshaped / element views")
pv[0] = 123.0
check(pv[0] == 123.0 and not pv_ro.flags.writeable, "peer views stay usable")
if t is not None:
    t[1] = 5
    check(a[1] == 5 and float(t.sum()) == float(a.sum()), "torch tensor via DLPack")
# symmem calls on them: a clear error, never a crash.
for what, f in [("put", lambda: sm.put(view, np.zeros(10), right)), ("get", lambda: sm.get(np.zeros(10), view, 0)),
                ("p", lambda: sm.p(a, 1.0, 0, index=0)), ("free", lambda: sm.free(a)),
                ("atomic", lambda: sm.atomic_fetch_add(small, 1, 0, index=0)),
                ("peer", lambda: sm.peer(a, 0))]:
    raises(sm.StateError, f, what + " after finalize", "finalized")
if t is not None:
    raises(sm.StateError, lambda: sm.put(t[:2], torch.zeros(2, dtype=torch.float64), 0), "put of a tensor", "finalized")

# A new job in the same process: the old arrays are not its memory.
sm.init(timeout=60)
b = sm.zeros(8)
sm.barrier_all()
raises(sm.StateError, lambda: sm.put(view, np.zeros(10), right), "put to an old array in a new job", "finalized")
raises(sm.StateError, lambda: sm.free(a), "free of an old array in a new job", "finalized")
sm.put(b, np.full(8, float(me)), right)   # the new job works
sm.barrier_all()
check((b == (me - 1) % n).all(), "the new job's put")
sm.free(b)
sm.finalize()
check((a[10:20] == 3).all(), "still there after the second finalize")

# The pages go when the last alias does.
del a, small, view, strided, elem, grid, pv, pv_ro, dl, t, b
gc.collect()
check(_symmem._kept_pages() == 0, "kept pages released (%d left)" % _symmem._kept_pages())
print("after finalize ok PE", me)
sys.stdout.flush()
