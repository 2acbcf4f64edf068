"""A second Runtime beside the default one: its own unique id (made on PE 0 and broadcast
over the default runtime), its own heap; both work side by side."""
import numpy as np

import symmem as sm

sm.init()
me, n = sm.my_pe(), sm.n_pes()
uid = sm.get_unique_id() if me == 0 else None
b = sm.bcast(np.frombuffer(bytes(uid), np.uint8) if me == 0 else np.zeros(136, np.uint8), root=0)
with sm.Runtime(uid=sm.UniqueId(b.tobytes()), pe=me, n_pes=n, heap_size="32M") as rt:
    assert rt.my_pe() == me and rt.n_pes() == n
    assert rt.info()["heap"]["size"] == 32 << 20
    x = rt.zeros(8, np.int64)
    y = sm.zeros(8, np.int64)
    assert not sm.is_symmetric(x) and not rt.is_symmetric(y)  # different heaps
    rt.barrier_all()
    rt.put(x, np.full(8, me, np.int64), (me + 1) % n)
    sm.put(y, np.full(8, 10 + me, np.int64), (me + 1) % n)
    rt.barrier_all()
    sm.barrier_all()
    left = (me - 1) % n
    assert (x == left).all() and (y == 10 + left).all()
    assert (rt.allreduce(np.array([me])) == n * (n - 1) // 2).all()
    rt.free(x)
    sm.free(y)
print("PE %d: two runtimes ok" % me, flush=True)
sm.finalize()
