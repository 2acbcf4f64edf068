"""symmem: OpenSHMEM-style symmetric memory for Python. NumPy arrays in the symmetric heap,
zero-copy to torch; one-sided put/get, atomics, signals, waits, teams and collectives.

    import numpy as np, symmem as sm
    sm.init()
    a = sm.zeros(1024)                          # collective; a plain numpy.ndarray
    sm.put(a[:8], np.arange(8.0), (sm.my_pe() + 1) % sm.n_pes())
    sm.barrier_all()
    sm.free(a); sm.finalize()

Nothing runs at import: init() joins the job (symmem-run, mpirun, srun, torchrun, or a
unique id). See docs/python.md.
"""
__version__ = "0.1.0"

from ._errors import (Error, InitError, StateError, HeapExhausted, InvalidArgument, NotSymmetricError,  # noqa: F401
                      ShapeError, DTypeError, PEError, Timeout, SymmetryError, DeviceUnavailable,
                      DeviceNotSupported)
from . import _symmem
from ._runtime import Runtime, UniqueId, get_unique_id, Lock, Ctx, CTX, FAST as _FAST, _timeout  # noqa: F401
from ._symmem import Block, Team  # noqa: F401
from ._device import DeviceArray  # noqa: F401

_default = Runtime(_defer=True)


def _default_runtime():
    return _default


class CMP:
    EQ, NE, GT, GE, LT, LE = 0, 1, 2, 3, 4, 5


class OP:
    SUM, PROD, MIN, MAX, AND, OR, XOR = "sum", "prod", "min", "max", "and", "or", "xor"


SIGNAL_SET, SIGNAL_ADD = "set", "add"

# The hot calls: the default runtime's native methods themselves.
for _n in _FAST:
    globals()[_n] = getattr(_default, _n)
del _n


def init(uid=None, pe=None, n_pes=None, *, heap_size=None, timeout=None, tls=""):
    """Join the job (collective). No arguments: the launcher's environment (symmem-run,
    mpirun, srun, torchrun; else a 1-PE job). uid=, pe=, n_pes=: a unique id made by
    get_unique_id() on PE 0 and handed to every PE. heap_size: bytes or "64M". timeout:
    default seconds of every blocking call (None: SYMMEM_TIMEOUT, else no limit).
    Idempotent; returns the default Runtime."""
    return _default._init(uid, pe, n_pes, heap_size, timeout, tls, 0)


def init_torch(group=None, **kw):
    """init() for a torch.distributed job (torchrun): PE 0 makes the unique id, torch
    broadcasts it (gloo is started from torchrun's environment if no group exists yet)."""
    import torch.distributed as dist
    if not dist.is_initialized():
        dist.init_process_group("gloo")
    rank, size = dist.get_rank(group), dist.get_world_size(group)
    obj = [bytes(get_unique_id()) if rank == 0 else None]
    src = 0 if group is None else dist.get_global_rank(group, 0)
    dist.broadcast_object_list(obj, src=src, group=group)
    return init(uid=UniqueId(obj[0]), pe=rank, n_pes=size, **kw)


def init_mpi(comm=None, **kw):
    """init() for an MPI job (mpirun + mpi4py): rank 0 makes the unique id, MPI broadcasts it."""
    from mpi4py import MPI
    comm = comm or MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    b = comm.bcast(bytes(get_unique_id()) if rank == 0 else None, root=0)
    return init(uid=UniqueId(b), pe=rank, n_pes=size, **kw)


def finalize(timeout=60.0):
    """Leave the job (collective, bounded by timeout; also run at exit). Idempotent."""
    _default.finalize(timeout)


def initialized():
    return _default.initialized


def current():
    """The default Runtime."""
    return _default


def info():
    return _default.info()


# Allocation, lifetime and collectives of the default runtime.
def empty(shape, dtype=float, order="C", **kw):
    return _default.empty(shape, dtype, order, **kw)


def zeros(shape, dtype=float, order="C", **kw):
    return _default.zeros(shape, dtype, order, **kw)


def ones(shape, dtype=float, order="C", **kw):
    return _default.ones(shape, dtype, order, **kw)


def full(shape, fill_value, dtype=None, order="C", **kw):
    return _default.full(shape, fill_value, dtype, order, **kw)


def array(obj, dtype=None, **kw):
    return _default.array(obj, dtype, **kw)


def empty_like(x, dtype=None, **kw):
    return _default.empty_like(x, dtype, **kw)


def zeros_like(x, dtype=None, **kw):
    return _default.zeros_like(x, dtype, **kw)


def signals(n=1, **kw):
    return _default.signals(n, **kw)


def free(a, *, force=False, timeout=None):
    _default.free(a, force=force, timeout=timeout)


def scoped(shape, dtype=float, **kw):
    return _default.scoped(shape, dtype, **kw)


def collect(*, timeout=None):
    return _default.collect(timeout=timeout)


def allocations():
    return _default.allocations()


def heap_offset(a):
    return _default.heap_offset(a)


def peer(a, pe, *, readonly=False):
    return _default.peer(a, pe, readonly=readonly)


def peers(a, team=None, readonly=False):
    return _default.peers(a, team, readonly)


# Collectives on CUDA tensors (device="cuda"): queued on `stream` (None: torch's current
# stream, or the default stream), returning at once (docs/python.md, "CUDA tensors").
def broadcast(dst, src, root, *, team=None, timeout=None, stream=None):
    _default.broadcast(dst, src, root, team=team, timeout=timeout, stream=stream)


def fcollect(dst, src, *, team=None, timeout=None, stream=None):
    _default.fcollect(dst, src, team=team, timeout=timeout, stream=stream)


def collect_into(dst, src, *, team=None, timeout=None):
    """shmem_collect: every member's src (sizes may differ) into dst; returns the total count."""
    return _default.collect_(dst, src, team=team, timeout=timeout)


def alltoall(dst, src, *, team=None, timeout=None, stream=None):
    _default.alltoall(dst, src, team=team, timeout=timeout, stream=stream)


def alltoalls(dst, src, *, dst_stride=1, src_stride=1, nelems=-1, team=None, timeout=None):
    _default.alltoalls(dst, src, dst_stride=dst_stride, src_stride=src_stride, nelems=nelems, team=team,
                       timeout=timeout)


def reduce(dst, src, op="sum", *, team=None, timeout=None, stream=None):
    _default.reduce(dst, src, op, team=team, timeout=timeout, stream=stream)


def reduce_scatter(dst, src, op="sum", *, team=None, stream=None):
    """CUDA tensors only: member i gets the reduction of block i of src (n_pes blocks of dst's size)."""
    _default.reduce_scatter(dst, src, op, team=team, stream=stream)


def barrier(*, team=None, timeout=None, stream=None):
    """The team's barrier (TEAM_WORLD by default); with stream= the stream-ordered device barrier."""
    _default.barrier(team=team, timeout=timeout, stream=stream)


def inscan(dst, src, *, team=None, timeout=None):
    _default.inscan(dst, src, team=team, timeout=timeout)


def exscan(dst, src, *, team=None, timeout=None):
    _default.exscan(dst, src, team=team, timeout=timeout)


def allreduce(x, op="sum", *, team=None, timeout=None, stream=None):
    """A new array of the reduction; a CUDA tensor is reduced in place (returned), on the stream."""
    return _default.allreduce(x, op, team=team, timeout=timeout, stream=stream)


def allgather(x, *, team=None, timeout=None):
    return _default.allgather(x, team=team, timeout=timeout)


def bcast(x, root=0, *, team=None, timeout=None, stream=None):
    return _default.bcast(x, root, team=team, timeout=timeout, stream=stream)


def __getattr__(name):
    if name == "TEAM_WORLD":
        t = _default.team_world
    elif name == "TEAM_SHARED":
        t = _default.team_shared
    else:
        raise AttributeError("module 'symmem' has no attribute %r" % name)
    if t is None:
        raise StateError("symmem.%s: call symmem.init() first" % name)
    return t
