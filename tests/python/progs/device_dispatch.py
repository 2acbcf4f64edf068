"""Host calls and collectives on device arguments where there is no device heap (run with
CUDA_VISIBLE_DEVICES=): each PE's put/get to a peer through a fake device array ends in the
core's "is not in the device heap", a collective in its "no device heap", on every PE, and
the job goes on (a host put and barrier after them). Nothing dereferences the fake pointer:
the process would crash if anything did."""
import numpy as np

import symmem as sm

sm.init(timeout=60)
me, n = sm.my_pe(), sm.n_pes()
peer = (me + 1) % n
fake = sm.DeviceArray(0x7f0000400000, (16,), np.float32, 0, None)
gathered = sm.DeviceArray(0x7f0000500000, (16 * n,), np.float32, 0, None)
buf = np.zeros(16, np.float32)
for name, call in (("put", lambda: sm.put(fake, buf, peer)), ("get", lambda: sm.get(buf, fake, peer)),
                   ("p", lambda: sm.p(fake, 1.5, peer, index=2))):
    try:
        call()
        raise SystemExit("PE %d: %s to a fake device address returned" % (me, name))
    except sm.InvalidArgument as e:
        assert "is not in the device heap" in str(e) and "target PE %d" % peer in str(e), str(e)
        if name == "put":
            print("PE %d: put: %s" % (me, e), flush=True)
for name, call in (("reduce", lambda: sm.reduce(fake, fake)), ("fcollect", lambda: sm.fcollect(gathered, fake)),
                   ("barrier", lambda: sm.barrier(stream=0))):
    try:
        call()
        raise SystemExit("PE %d: %s on a fake device array returned" % (me, name))
    except sm.StateError as e:
        assert "no device heap" in str(e), str(e)
# The job goes on.
a = sm.zeros(n, np.int64)
sm.put(a[me:me + 1], np.array([me + 100]), peer)
sm.barrier_all()
assert a[(me - 1) % n] == (me - 1) % n + 100, a
sm.free(a)
sm.finalize()
print("device dispatch ok", flush=True)
