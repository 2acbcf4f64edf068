"""AllReduce from one-sided puts, the seed article's benchmark (4 KB ... 40 MB), with NumPy
arrays or (--torch) torch tensors in symmetric memory.

Each PE puts its vector into slot `my_pe` of every PE's receive buffer (the seed put every
PE's data at offset 0 of every peer: a race), one barrier, then every PE sums the n slots
locally. The result is checked against the sum computed from every PE's input; the
library's own all-reduce (TEAM_WORLD.reduce) runs beside it for comparison.

    symmem-run -n 4 /usr/bin/python3 examples/python/allreduce.py [--torch] [--sizes 1024,...]

--cuda: the same with torch CUDA tensors in the device heap (symmem.zeros(..., device="cuda")):
the puts are done by the GPU, and the library's all-reduce is the device one
(symmem.reduce on CUDA tensors: queued on torch's current stream). Without a usable GPU
(or without torch) it says why and exits 77, the examples' "skipped".
"""
import argparse
import sys
import time

import numpy as np

import symmem as sm

ap = argparse.ArgumentParser()
ap.add_argument("--torch", action="store_true", help="torch tensors over the symmetric buffers")
ap.add_argument("--cuda", action="store_true", help="torch CUDA tensors in the device heap, device all-reduce")
ap.add_argument("--sizes", default="1024,10240,102400,1024000,10240000", help="float32 elements per vector")
ap.add_argument("--iters", type=int, default=20)
args = ap.parse_args()

sm.init()
me, n = sm.my_pe(), sm.n_pes()
if args.torch:
    import torch


def skip(why):
    if me == 0:
        print("allreduce.py --cuda: skipped: %s" % why, flush=True)
    sm.finalize()
    sys.exit(77)


if args.cuda:
    try:
        probe = sm.zeros(1, np.float32, device="cuda")  # collective: fails on every PE alike
    except sm.DeviceUnavailable as e:
        skip("no usable GPU: %s" % e)
    if isinstance(probe, sm.DeviceArray):  # torch is not importable (the same on every PE)
        sm.free(probe)
        skip("needs torch with CUDA (torch is not importable here)")
    sm.free(probe)
    import torch


def inputs(pe, size):
    return np.random.default_rng(pe).standard_normal(size, dtype=np.float32)


def run_cuda(size):
    """The same program on the GPU: every buffer a CUDA tensor in the device heap."""
    recv = sm.zeros((n, size), np.float32, device="cuda")
    mine = sm.zeros(size, np.float32, device="cuda")
    out = sm.zeros(size, np.float32, device="cuda")
    mine.copy_(torch.from_numpy(inputs(me, size)))
    torch.cuda.synchronize()  # the puts below are host calls: mine must be written first

    def allreduce_put():
        for pe in range(n):
            sm.put(recv[me], mine, pe)  # the GPU copies into PE pe's device heap; complete on return
        sm.barrier_all()
        torch.sum(recv, 0, out=out)
        torch.cuda.synchronize()
        sm.barrier_all()

    ref = torch.from_numpy(np.sum([inputs(p, size) for p in range(n)], axis=0, dtype=np.float32)).cuda()
    for _ in range(3):
        allreduce_put()
    ok = torch.allclose(out, ref, rtol=1e-4, atol=1e-4)
    t0 = time.perf_counter()
    for _ in range(args.iters):
        allreduce_put()
    t_put = (time.perf_counter() - t0) / args.iters
    sm.barrier_all()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(args.iters):
        sm.reduce(out, mine, op="sum")  # queued on torch's current stream
    torch.cuda.synchronize()
    t_lib = (time.perf_counter() - t0) / args.iters
    ok = ok and torch.allclose(out, ref, rtol=1e-4, atol=1e-4)
    for x in (recv, mine, out):
        sm.free(x)
    return bool(ok), t_put, t_lib


def report(size, ok, t_put, t_lib):
    oks = sm.allreduce(np.array([int(ok)]), op="min")[0]
    if me == 0:
        nbytes = size * 4
        print("Size: %8.3f MB  put+barrier: %8.3f ms %6.2f GB/s   reduce: %8.3f ms %6.2f GB/s   %s%s"
              % (nbytes / 1e6, t_put * 1e3, nbytes / t_put / 1e9, t_lib * 1e3, nbytes / t_lib / 1e9,
                 "verified" if oks else "WRONG RESULT", " (cuda)" if args.cuda else ""), flush=True)
    if not oks:
        raise SystemExit(1)


for size in [int(s) for s in args.sizes.split(",")] if args.cuda else []:
    report(size, *run_cuda(size))

for size in [] if args.cuda else [int(s) for s in args.sizes.split(",")]:
    recv = sm.zeros((n, size), np.float32)      # slot p: PE p's vector (collective)
    mine = sm.array(inputs(me, size))            # symmetric too, for the library's reduce
    out = sm.zeros(size, np.float32)
    if args.torch:
        recv_t, mine_t, out_t = (torch.from_dlpack(x) for x in (recv, mine, out))

    def allreduce_put():
        for pe in range(n):
            if args.torch:
                sm.put(recv_t[me], mine_t, pe)
            else:
                sm.put(recv[me], mine, pe)
        sm.barrier_all()
        if args.torch:
            torch.sum(recv_t, 0, out=out_t)
        else:
            np.sum(recv, axis=0, out=out)
        sm.barrier_all()  # nobody overwrites a slot before its owner has summed it

    for _ in range(3):
        allreduce_put()
    ref = np.sum([inputs(p, size) for p in range(n)], axis=0, dtype=np.float32)
    ok = np.allclose(out, ref, rtol=1e-4, atol=1e-4)
    t0 = time.perf_counter()
    for _ in range(args.iters):
        allreduce_put()
    t_put = (time.perf_counter() - t0) / args.iters
    sm.barrier_all()
    t0 = time.perf_counter()
    for _ in range(args.iters):
        sm.TEAM_WORLD.reduce(out, mine, op="sum")
    t_lib = (time.perf_counter() - t0) / args.iters
    ok = ok and np.allclose(out, ref, rtol=1e-4, atol=1e-4)
    report(size, ok, t_put, t_lib)
    if args.torch:
        del recv_t, mine_t, out_t
    for x in (recv, mine, out):
        sm.free(x)
sm.finalize()
