"""device="cuda" where no PE has a usable GPU (run with CUDA_VISIBLE_DEVICES= so that a GPU
machine takes this path too): every constructor raises DeviceUnavailable on every PE with
the library's reason, twice, and the job goes on (host arrays, a put, a barrier). A PE
asking for device memory while another asks for host memory gets SymmetryError."""
import numpy as np

import symmem as sm

sm.init(timeout=60)
me, n = sm.my_pe(), sm.n_pes()
makers = [("zeros", lambda: sm.zeros((4, 5), np.float32, device="cuda")),
          ("empty", lambda: sm.empty(100, np.int64, device="cuda")),
          ("ones", lambda: sm.ones(7, device="cuda:0")),
          ("full", lambda: sm.full((2, 3), 2.5, device="cuda")),
          ("full complex", lambda: sm.full(3, 1 + 2j, np.complex64, order="F", device="cuda")),
          ("array", lambda: sm.array([[True, False]], device="cuda")),
          ("zeros_like", lambda: sm.zeros_like(np.ones(3), device="cuda"))]
for name, make in makers:
    try:
        make()
        raise SystemExit("PE %d: %s(device='cuda') returned without a GPU" % (me, name))
    except sm.DeviceUnavailable as e:
        msg = str(e)
        assert isinstance(e, RuntimeError) and "failed on every PE: no usable CUDA device" in msg, msg
        if name == "zeros":
            print("PE %d: DeviceUnavailable: %s" % (me, msg), flush=True)

# A bad device= is refused here, before anything collective.
try:
    sm.zeros(3, device="gpu")
    raise SystemExit("PE %d: device='gpu' accepted" % me)
except sm.InvalidArgument as e:
    assert "cuda:N" in str(e), str(e)

# The job goes on.
a = sm.zeros(n, np.int64)
sm.put(a[me:me + 1], np.array([me + 100]), (me + 1) % n)
sm.barrier_all()
assert a[(me - 1) % n] == (me - 1) % n + 100, a
sm.free(a)

# device on PE 0, host on the others: a mismatch, reported on every PE.
if n > 1:
    try:
        x = sm.zeros(16, device="cuda") if me == 0 else sm.zeros(16)
        raise SystemExit("PE %d: no error from a device/host mismatch" % me)
    except sm.SymmetryError as e:
        print("PE %d: SymmetryError: %s" % (me, e), flush=True)
sm.finalize()
print("device no-gpu ok", flush=True)
