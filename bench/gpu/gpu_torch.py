#!/usr/bin/env python3
"""gpu_torch.py — torch's side of the GPU benchmark, the anchor (bench/gpu/README.md).

P processes on the one GPU, started by any launcher that gives each its rank and the count
(SYMMEM_RANK / SYMMEM_NPES as symmem-run sets them, else RANK / WORLD_SIZE):

    symmem-run -n P python3 bench/gpu/gpu_torch.py --store PATH [--ops all|allreduce,barrier]

A gloo process group (NCCL refuses two ranks on one GPU) through a FileStore at PATH (a
file that does not exist yet), TORCH_SYMM_MEM_ALLOW_OVERLAPPING_DEVICES=1, then
torch.distributed._symmetric_memory: empty + rendezvous, and
  allreduce  torch.ops.symm_mem.one_shot_all_reduce(buf[:n], "sum", group), fp32,
             1 KiB .. 4 MiB per rank, us per call (CUDA events, median of 5 runs of 200)
  barrier    the rendezvous handle's barrier(), us per barrier (median of 5 runs of 1000)
Rank 0 prints `torch,OP,SIZE,VALUE,UNIT`. Every sum is checked exactly, and every barrier
is checked with stamps written into the peers' buffers before it; a wrong result is an
error (exit 1), never a figure. A hang ends after --deadline seconds with every thread's
stack (faulthandler) and exit 1.
"""
import argparse
import datetime
import faulthandler
import os
import statistics
import sys

REPS = 5


def env_int(names, default):
    for n in names:
        if n in os.environ:
            return int(os.environ[n])
    return default


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True, help="FileStore path (must not exist yet)")
    ap.add_argument("--ops", default="all")
    ap.add_argument("--max-reduce", type=int, default=4 << 20)
    ap.add_argument("--deadline", type=float, default=150.0)
    args = ap.parse_args()
    faulthandler.dump_traceback_later(args.deadline, exit=True)
    rank = env_int(("SYMMEM_RANK", "RANK"), -1)
    world = env_int(("SYMMEM_NPES", "WORLD_SIZE"), -1)
    if rank < 0 or world < 2:
        print("gpu_torch: needs a rank and a size of 2 or more (SYMMEM_RANK/SYMMEM_NPES)", file=sys.stderr)
        return 2
    os.environ["TORCH_SYMM_MEM_ALLOW_OVERLAPPING_DEVICES"] = "1"  # every rank on cuda:0
    ops = set(args.ops.split(",")) if args.ops != "all" else {"allreduce", "barrier"}

    import torch
    import torch.distributed as dist
    import torch.distributed._symmetric_memory as symm_mem

    if not torch.cuda.is_available():
        print("gpu_torch: skipped: no GPU here")
        return 77
    torch.cuda.set_device(0)
    if hasattr(symm_mem, "set_backend"):  # 2.9+: CUDA is the default; say so, NVSHMEM/NCCL need one GPU per rank
        try:
            symm_mem.set_backend("CUDA")
        except Exception as e:  # noqa: BLE001 - older builds: the default is CUDA anyway
            note(rank, f"set_backend('CUDA'): {e}")
    dist.init_process_group("gloo", init_method="file://" + args.store, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    group = dist.group.WORLD.group_name
    if hasattr(symm_mem, "enable_symm_mem_for_group"):  # needed before 2.8, a no-op after
        try:
            symm_mem.enable_symm_mem_for_group(group)
        except Exception as e:  # noqa: BLE001
            note(rank, f"enable_symm_mem_for_group: {e}")
    if rank == 0:
        note(rank, f"torch {torch.__version__}, {world} ranks, {torch.cuda.get_device_name(0)}")

    failed = False
    s = torch.cuda.current_stream()

    def all_ok(mine):
        """Collective over gloo (CPU): True when no rank's check failed."""
        t = torch.tensor([0 if mine else 1], dtype=torch.int32)
        dist.all_reduce(t)
        return int(t.item()) == 0

    def timed_us(fn, iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(s)
        for _ in range(iters):
            fn()
        b.record(s)
        b.synchronize()
        return a.elapsed_time(b) * 1e3 / iters

    if "allreduce" in ops:
        max_n = args.max_reduce // 4
        buf = symm_mem.empty(max_n, dtype=torch.float32, device="cuda")
        symm_mem.rendezvous(buf, group)
        size = 1024
        while size <= args.max_reduce:
            n = size // 4
            idx = torch.arange(n, device="cuda", dtype=torch.int64)
            buf[:n].copy_(((idx % 7) + 1).to(torch.float32) * (rank + 1))
            want = ((idx % 7) + 1).to(torch.float32) * (world * (world + 1) // 2)
            torch.cuda.synchronize()
            dist.barrier()
            inp = buf[:n]
            out = torch.ops.symm_mem.one_shot_all_reduce(inp, "sum", group)
            ok = bool(torch.equal(out, want))
            for _ in range(10):
                out = torch.ops.symm_mem.one_shot_all_reduce(inp, "sum", group)
            us = [timed_us(lambda: torch.ops.symm_mem.one_shot_all_reduce(inp, "sum", group), 200) for _ in range(REPS)]
            out = torch.ops.symm_mem.one_shot_all_reduce(inp, "sum", group)
            ok = ok and bool(torch.equal(out, want))
            if not ok:
                print(f"gpu_torch: rank {rank}: one_shot_all_reduce of {size} bytes: wrong sums", file=sys.stderr)
                failed = True
            if all_ok(ok) and rank == 0:
                csv("allreduce", size, statistics.median(us), "us")
            size *= 4

    if "barrier" in ops:
        stamps = symm_mem.empty(world, dtype=torch.int32, device="cuda")
        stamps.zero_()
        hdl = symm_mem.rendezvous(stamps, group)
        torch.cuda.synchronize()
        dist.barrier()
        ok = True
        bad = torch.zeros(1, dtype=torch.int64, device="cuda")
        for rnd in range(1, 21):
            for p in range(world):  # my slot in every rank's buffer
                hdl.get_buffer(p, (world,), torch.int32)[rank].fill_(rnd)
            hdl.barrier(channel=0, timeout_ms=10000)
            bad += (stamps != rnd).sum()
            hdl.barrier(channel=0, timeout_ms=10000)
        torch.cuda.synchronize()
        if int(bad.item()) != 0:
            print(f"gpu_torch: rank {rank}: barrier: {int(bad.item())} stamps not seen after it", file=sys.stderr)
            ok = False
            failed = True
        for _ in range(20):
            hdl.barrier(channel=0, timeout_ms=10000)
        us = [timed_us(lambda: hdl.barrier(channel=0, timeout_ms=10000), 1000) for _ in range(REPS)]
        if all_ok(ok) and rank == 0:
            csv("barrier", 0, statistics.median(us), "us")

    torch.cuda.synchronize()
    dist.barrier()
    dist.destroy_process_group()
    faulthandler.cancel_dump_traceback_later()
    return 1 if failed else 0


def csv(op, size, value, unit):
    print(f"torch,{op},{size},{value:.6g},{unit}", flush=True)


def note(rank, text):
    if rank == 0:
        print(f"# torch: {text}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
