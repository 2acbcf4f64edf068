"""The seed article's AllReduce, run as written through `import symmem.compat as shmem`.
Changes from the article: torch.frombuffer (the real name of torch.from_buffer), no .npu()
/ torch.npu.synchronize() (host memory), and the race fixed: each PE puts its tensor at
dest_idx=rank*n of every peer's buffer (the article put every PE's data at offset 0) and
reads the slots back with get(source=rank, source_idx=pe*n).

    symmem-run -n 4 /usr/bin/python3 examples/python/seed_allreduce.py
"""
import argparse
import time

import torch

import symmem.compat as shmem

ap = argparse.ArgumentParser()
ap.add_argument("--sizes", default="1024,10240,102400,1024000,10240000")
ap.add_argument("--iters", type=int, default=20)
args = ap.parse_args()

# ========== 1: init ==========
rank = shmem.my_pe()   # as in the article: before init() (it joins the job)
n_pes = shmem.n_pes()
shmem.init()


def allreduce_shmem(tensor, op="sum"):
    n = tensor.numel()
    # 1: every PE's data into its own slot of every PE's buffer
    for pe in range(n_pes):
        shmem.put(dest=pe, dest_idx=rank * n, source=tensor.data_ptr(), nelems=n)
    # 2: wait until every put is complete
    shmem.barrier()
    # 3: read the slots of our buffer and sum them
    temp_buffer = torch.empty_like(tensor)
    result = torch.zeros_like(tensor)
    for pe in range(n_pes):
        shmem.get(dest=temp_buffer.data_ptr(), source=rank, source_idx=pe * n, nelems=n)
        result += temp_buffer
    shmem.barrier()
    return result


for size in [int(s) for s in args.sizes.split(",")]:
    # ========== 2: the symmetric buffer (one slot per PE) ==========
    local_buffer = shmem.malloc(n_pes * size * 4)
    local_tensor = torch.frombuffer(local_buffer, dtype=torch.float32, count=n_pes * size)
    data = torch.randn(size, generator=torch.Generator().manual_seed(rank))
    for _ in range(3):
        out = allreduce_shmem(data.clone())
    ref = sum(torch.randn(size, generator=torch.Generator().manual_seed(p)) for p in range(n_pes))
    ok = torch.allclose(out, ref, rtol=1e-4, atol=1e-4)
    t0 = time.time()
    for _ in range(args.iters):
        allreduce_shmem(data.clone())
    elapsed = (time.time() - t0) / args.iters * 1000  # ms
    bandwidth = size * 4 / (elapsed / 1000) / 1e9
    print(f"PE {rank}: Size: {size * 4 / 1e6:.3f}MB, Time: {elapsed:.3f}ms, BW: {bandwidth:.2f}GB/s, "
          f"{'verified' if ok else 'WRONG RESULT'}", flush=True)
    if not ok:
        raise SystemExit(1)
    del local_tensor
    shmem.free(local_buffer)

shmem.finalize()
