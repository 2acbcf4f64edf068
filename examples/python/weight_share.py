"""The seed article's weight sharing: one copy of a model's weights in node memory for all
workers. PE 0 loads the weights (a .npy file, or random ones) and scatters the layers over
the PEs' symmetric heaps (layer l on PE l % n: the node holds one copy in all, not one per
worker); every PE then reads every layer it runs with shmem_getmem, prefetching layer l+1
on a thread while it "runs" layer l. Checked: each PE's per-layer checksum equals PE 0's.
(The article allocated model_size/n per PE and then put the whole model into PE 0's part,
past its end; here each PE holds its share.)

    symmem-run -n 4 /usr/bin/python3 examples/python/weight_share.py --layers 32 --layer-kb 4096
"""
import argparse
import threading

import numpy as np

import symmem.compat as shmem

ap = argparse.ArgumentParser()
ap.add_argument("--layers", type=int, default=32)
ap.add_argument("--layer-kb", type=int, default=1024, help="size of one layer's weights (KiB)")
ap.add_argument("--weights", help="a .npy file of float16 weights (layers x layer size); default random")
args = ap.parse_args()

shmem.init()
rank, size = shmem.my_pe(), shmem.n_pes()
layer_size = args.layer_kb * 1024
per_rank_layers = (args.layers + size - 1) // size
shared_weights = shmem.shmem_malloc(per_rank_layers * layer_size)  # this PE's share


def where(layer):
    return layer % size, shared_weights + (layer // size) * layer_size  # (PE, symmetric address)


if rank == 0:
    if args.weights:
        weights = np.load(args.weights).astype(np.float16).reshape(args.layers, -1).view(np.uint8)
    else:
        weights = np.random.default_rng(7).standard_normal((args.layers, layer_size // 2)).astype(np.float16)
        weights = weights.view(np.uint8)
    for layer in range(args.layers):
        pe, addr = where(layer)
        shmem.shmem_putmem(addr, weights[layer].ctypes.data, layer_size, pe)
shmem.shmem_barrier_all()

buffers = [np.empty(layer_size, np.uint8), np.empty(layer_size, np.uint8)]


def prefetch(layer, buf):
    pe, addr = where(layer)
    shmem.shmem_getmem(dest=buf, source=addr, size=layer_size, pe=pe)


def run_layer(buf):
    return float(buf.view(np.float16).astype(np.float32).sum())


sums = []
prefetch(0, buffers[0])
for layer in range(args.layers):
    t = None
    if layer + 1 < args.layers:
        t = threading.Thread(target=prefetch, args=(layer + 1, buffers[(layer + 1) % 2]))
        t.start()
    sums.append(run_layer(buffers[layer % 2]))
    if t:
        t.join()

# PE 0 still has the weights it loaded: compare every PE's checksums with its own.
ref = shmem.malloc(8 * args.layers)
ref_v = np.frombuffer(ref, dtype=np.float64)
if rank == 0:
    ref_v[:] = [float(weights[i].view(np.float16).astype(np.float32).sum()) for i in range(args.layers)]
shmem.barrier()
mine = np.empty(args.layers)
shmem.get(dest=mine, source=0, source_idx=0, nelems=args.layers, window=ref, dtype="float64")
ok = np.allclose(mine, sums)
print("PE %d: read %d layers of %d KiB from %d PEs' shares (node total %d KiB, one copy): %s"
      % (rank, args.layers, args.layer_kb, size, args.layers * args.layer_kb, "verified" if ok else "MISMATCH"),
      flush=True)
shmem.barrier()
del ref_v
shmem.free(ref)
shmem.shmem_free(shared_weights)
shmem.finalize()
if not ok:
    raise SystemExit(1)
