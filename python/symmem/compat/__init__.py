"""The seed programs' vocabulary: `import symmem.compat as shmem`.

    shmem.init(); shmem.my_pe(); shmem.n_pes()     # my_pe/n_pes before init() join the job
    buf = shmem.malloc(nbytes)          # a symmetric Block: buffer protocol + int address
    t = torch.frombuffer(buf, dtype=torch.float32)  # zero-copy (np.frombuffer too)
    shmem.put(dest=pe, dest_idx=i, source=x, nelems=n)     # PE `dest`'s copy of the window
    shmem.get(dest=y, source=pe, source_idx=i, nelems=n)   # from PE `source`'s copy
    shmem.barrier(); shmem.finalize()
    addr = shmem.shmem_malloc(nbytes)   # an int: addr + offset works
    shmem.shmem_putmem(dest=addr + off, source=x, size=nbytes, pe=0); shmem.shmem_getmem(...)
    shmem.shmem_barrier_all()

Meanings. put/get move `nelems` elements of `dtype` (float32 unless dtype= says) between a
local buffer and the *window*: the most recent malloc() block, or window=. `dest` (put)
and `source` (get) are PEs, as in the seed; `dest_idx` / `source_idx` are element offsets
into the window. The local side (source of put, dest of get) is an int address
(tensor.data_ptr(), arr.ctypes.data) or any buffer (array, tensor, Block). Every range is
checked: outside the window, outside the symmetric heap, or an unmapped int address is an
exception, not a crash.
"""
import numpy as np

import symmem as _sm
from symmem._errors import NotSymmetricError, ShapeError, StateError

__all__ = ["init", "finalize", "my_pe", "n_pes", "malloc", "free", "put", "get", "barrier", "barrier_all", "quiet",
           "shmem_init", "shmem_finalize", "shmem_my_pe", "shmem_n_pes", "shmem_malloc", "shmem_free", "shmem_putmem",
           "shmem_getmem", "shmem_barrier_all", "shmem_quiet"]

_state = {"window": None, "blocks": {}}


def init(*args, **kw):
    """Join the job (as symmem.init); idempotent."""
    _sm.init(*args, **kw)


def _rt():
    if not _sm.initialized():
        _sm.init()
    return _sm.current()


def my_pe():
    return _rt().my_pe()


def n_pes():
    return _rt().n_pes()


def finalize():
    _state["window"] = None
    _state["blocks"].clear()
    _sm.finalize()


def barrier():
    _rt().barrier_all()


barrier_all = barrier


def quiet():
    _rt().quiet()


def malloc(nbytes):
    """Collective: a symmetric block of nbytes (64-byte aligned). It exports the buffer
    protocol (np.frombuffer / torch.frombuffer over it are zero-copy), int(b) and b.addr are
    its address, b.nbytes its size. It becomes the window of put/get."""
    return _malloc(nbytes, "compat malloc(%d)" % int(nbytes))


def _malloc(nbytes, what, fill=None):
    """malloc(); fill (bytes repeated over the block) is written before the allocation's barrier."""
    b = _rt()._alloc(int(nbytes), 64, what, fill=fill)
    _state["blocks"][b.addr] = b
    _state["window"] = b
    return b


def free(b):
    """Collective: free a block from malloc() (or its int address)."""
    addr = int(b)
    blk = _state["blocks"].pop(addr, None)
    if blk is None:
        raise NotSymmetricError("free: %#x is not a block from malloc()/shmem_malloc()" % addr)
    if _state["window"] is blk:
        _state["window"] = None
    _rt().free(blk, force=True)


def _local(obj, nbytes, what, writable):
    """(address, keep-alive object) of a local buffer: an int address or a buffer object."""
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, bool):
        return int(obj), None
    a = _sm._util.as_array(obj) if not isinstance(obj, np.ndarray) else obj
    if not a.flags.c_contiguous:
        raise ShapeError("%s must be contiguous" % what)
    if a.nbytes < nbytes:
        raise ShapeError("%s has %d bytes, the call moves %d" % (what, a.nbytes, nbytes))
    if writable and not a.flags.writeable:
        raise ShapeError("%s is read-only" % what)
    return a.__array_interface__["data"][0], a


def _window(window):
    w = window if window is not None else _state["window"]
    if w is None:
        raise StateError("no window: call malloc() first or pass window=")
    return w


def put(dest, dest_idx, source, nelems, *, window=None, dtype="float32"):
    """Write nelems elements (dtype, default float32) from the local `source` (int address or
    buffer) to PE `dest`'s copy of the window, at element offset dest_idx."""
    rt = _rt()
    w = _window(window)
    es = np.dtype(dtype).itemsize
    off, n = int(dest_idx) * es, int(nelems) * es
    if dest_idx < 0 or nelems < 0 or off + n > w.nbytes:
        raise ShapeError("put: elements [%d, %d) of %s run past the window of %d bytes"
                         % (dest_idx, dest_idx + nelems, np.dtype(dtype), w.nbytes))
    src, keep = _local(source, n, "put source", False)
    rt._c._putmem_addr(w.addr + off, src, n, int(dest))
    del keep


def get(dest, source, source_idx, nelems, *, window=None, dtype="float32"):
    """Read nelems elements (dtype, default float32) from PE `source`'s copy of the window at
    element offset source_idx into the local `dest` (int address or buffer)."""
    rt = _rt()
    w = _window(window)
    es = np.dtype(dtype).itemsize
    off, n = int(source_idx) * es, int(nelems) * es
    if source_idx < 0 or nelems < 0 or off + n > w.nbytes:
        raise ShapeError("get: elements [%d, %d) of %s run past the window of %d bytes"
                         % (source_idx, source_idx + nelems, np.dtype(dtype), w.nbytes))
    dst, keep = _local(dest, n, "get dest", True)
    rt._c._getmem_addr(dst, w.addr + off, n, int(source))
    del keep


# ---- the C names

shmem_init = init
shmem_finalize = finalize
shmem_my_pe = my_pe
shmem_n_pes = n_pes
shmem_barrier_all = barrier
shmem_quiet = quiet


def shmem_malloc(nbytes):
    """Collective: a symmetric block; returns its int address (addr + offset works)."""
    return malloc(nbytes).addr


def shmem_free(addr):
    free(addr)


def _sym(obj, nbytes, what, writable):
    """Address of a symmetric range: an int address, or a view of a symmetric array/block."""
    addr, keep = _local(obj, nbytes, what, writable)
    if not _rt()._c._is_symmetric_addr(addr, max(nbytes, 1)):
        raise NotSymmetricError("%s: [%#x, +%d) is not in the symmetric heap (use an address from shmem_malloc "
                                "plus an offset inside the block)" % (what, addr, nbytes))
    return addr, keep


def shmem_putmem(dest, source, size, pe):
    """Copy size bytes from the local `source` (int address or buffer) to PE pe's copy of the
    symmetric `dest` (int address or symmetric buffer)."""
    d, k1 = _sym(dest, int(size), "shmem_putmem dest", False)
    s, k2 = _local(source, int(size), "shmem_putmem source", False)
    _rt()._c._putmem_addr(d, s, int(size), int(pe))
    del k1, k2


def shmem_getmem(dest, source, size, pe):
    """Copy size bytes from PE pe's copy of the symmetric `source` to the local `dest`."""
    s, k1 = _sym(source, int(size), "shmem_getmem source", False)
    d, k2 = _local(dest, int(size), "shmem_getmem dest", True)
    _rt()._c._getmem_addr(d, s, int(size), int(pe))
    del k1, k2
