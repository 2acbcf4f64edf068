"""The Python device path on a GPU, with torch (run by tests/device/gpu_check.sh):

    symmem-run -n 2 python3 tests/python/gpu_torch_check.py

Checks zeros(device="cuda") readback, put/get between PEs with CUDA tensors (device and host
local sides), p/g, a peer() view's writes, and the device all-reduce, broadcast and
all-gather (fcollect) on torch's current stream against references computed by torch.
Prints "gpu torch check ok" on every PE.

The compiled module (symmem/_symmem*.so) is built for the interpreter of the build machine
(Python 3.11 on the development machines); a GPU machine with another Python (3.12) cannot
import it: rebuild there (scripts/build.sh) or run with the build's interpreter.
gpu_check.sh skips this step, with that reason, when `import symmem` fails.
"""
import numpy as np
import torch

import symmem as sm

sm.init(timeout=120)
me, n = sm.my_pe(), sm.n_pes()
nxt, prv = (me + 1) % n, (me - 1) % n
dev = torch.device("cuda", torch.cuda.current_device())


def check(cond, what):
    if not cond:
        raise SystemExit("PE %d: FAILED: %s" % (me, what))


# zeros / full readback
z = sm.zeros((4, 1000), np.float32, device="cuda")
check(isinstance(z, torch.Tensor) and z.is_cuda and z.shape == (4, 1000), "zeros gives a CUDA tensor")
check(int(torch.count_nonzero(z)) == 0, "zeros reads back as zeros")
f = sm.full(100, 7, np.int64, device="cuda")
check(bool((f == 7).all()), "full reads back")

# put/get between PEs: the symmetric side in the device heap, the local side device or host
N = 1 << 16
src = sm.zeros(N, np.float32, device="cuda")
dst = sm.zeros(N, np.float32, device="cuda")
src.copy_(torch.arange(N, dtype=torch.float32, device=dev) + 1000 * me)
torch.cuda.synchronize()
sm.put(dst, src, nxt)                       # device -> peer's device
sm.barrier_all()
check(torch.equal(dst, torch.arange(N, dtype=torch.float32, device=dev) + 1000 * prv), "put device->device")
host = np.zeros(N, np.float32)
sm.get(host, src, nxt)                      # peer's device -> host
check(np.array_equal(host, np.arange(N, dtype=np.float32) + 1000 * nxt), "get device->host")
local = torch.zeros(N, dtype=torch.float32, device=dev)
sm.get(local, src, nxt)                     # peer's device -> an ordinary CUDA tensor
check(torch.equal(local.cpu(), torch.from_numpy(host)), "get device->device")
sm.barrier_all()
sm.put(dst[:8], np.full(8, 3.5 + me, np.float32), nxt)  # host -> peer's device
sm.p(dst, 42.0 + me, nxt, index=100)
sm.barrier_all()
check(bool((dst[:8] == 3.5 + prv).all()) and float(dst[100]) == 42.0 + prv, "put host->device, p")
check(sm.g(dst, nxt, index=100) == 42.0 + me, "g")

# peer(): a tensor over the next PE's copy, written by a kernel
w = sm.zeros(256, np.int32, device="cuda")
pv = sm.peer(w, nxt)
pv.fill_(me + 1)
torch.cuda.synchronize()
sm.barrier_all()
check(bool((w == prv + 1).all()), "peer view writes")
del pv

# collectives on torch's current stream
x = sm.zeros(1 << 20, np.float32, device="cuda")
x.copy_(torch.randn(1 << 20, generator=torch.Generator().manual_seed(me)).to(dev))
ref = sum(torch.randn(1 << 20, generator=torch.Generator().manual_seed(p)) for p in range(n)).to(dev)
out = sm.zeros(1 << 20, np.float32, device="cuda")
sm.reduce(out, x)                           # queued on the current stream
check(torch.allclose(out, ref, rtol=1e-4, atol=1e-4), "all-reduce float32 sum")
xi = sm.full(4096, me + 1, np.int64, device="cuda")
sm.allreduce(xi, op="max")                  # in place
check(bool((xi == n).all()), "all-reduce int64 max in place")
h = sm.zeros(1000, np.float16, device="cuda")
h.fill_(me + 1)
sm.reduce(h, h)
check(bool((h == n * (n + 1) // 2).all()), "all-reduce float16 sum")
bf = sm.zeros(1000, np.float16, device="cuda").view(torch.bfloat16)
bf.fill_(2.0)
sm.reduce(bf, bf, "sum")
check(bool((bf == 2.0 * n).all()), "all-reduce bfloat16 sum")
b = sm.zeros(5000, np.int32, device="cuda")
if me == 1 % n:
    b.copy_(torch.arange(5000, dtype=torch.int32, device=dev))
sm.bcast(b, root=1 % n)
check(torch.equal(b, torch.arange(5000, dtype=torch.int32, device=dev)), "broadcast")
g_src = sm.full(3000, me, np.int32, device="cuda")
g_dst = sm.zeros((n, 3000), np.int32, device="cuda")
sm.fcollect(g_dst, g_src)
check(torch.equal(g_dst, torch.arange(n, dtype=torch.int32, device=dev)[:, None].expand(n, 3000)), "all-gather")
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    x2 = sm.full(1000, me + 1, np.int32, device="cuda")
    sm.reduce(x2, x2, "prod", stream=s)
s.synchronize()
check(bool((x2 == int(np.prod(np.arange(1, n + 1)))).all()), "all-reduce int32 prod on a side stream")
torch.cuda.synchronize()
sm.barrier_all()
for t in (z, f, src, dst, w, x, out, xi, h, bf, b, g_src, g_dst, x2):
    sm.free(t, force=True)
sm.finalize()
print("gpu torch check ok", flush=True)
