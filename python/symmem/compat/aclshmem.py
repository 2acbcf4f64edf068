"""The names of Ascend's Python binding: `import symmem.compat.aclshmem as shmem`.

Current names (aclshmem_*) and the pre-rename ones (shmem_*, including the
`shmem_finialize` / `aclshmem_finialize` spellings), with int addresses checked against the
symmetric heap. Host memory only: `stream=` and engine types are accepted and ignored.
"""
import numpy as np

import symmem as _sm
from symmem import compat as _c

__all__ = ["InitAttr", "OpEngineType", "aclshmem_init", "aclshmem_get_unique_id", "aclshmem_init_using_unique_id",
           "aclshmem_finalize", "aclshmem_finialize", "aclshmem_malloc", "aclshmem_calloc", "aclshmem_align",
           "aclshmem_free", "aclshmem_ptr", "aclshmem_putmem", "aclshmem_getmem", "aclshmem_putmem_nbi",
           "aclshmem_getmem_nbi", "aclshmemx_putmem_signal", "aclshmem_signal_wait_until", "aclshmem_barrier_all",
           "aclshmem_quiet", "my_pe", "pe_count", "n_pes", "team_my_pe", "team_n_pes", "shmem_init",
           "shmem_finialize", "shmem_finalize", "shmem_malloc", "shmem_calloc", "shmem_align", "shmem_free",
           "shmem_ptr", "shmem_putmem", "shmem_getmem", "shmem_putmem_signal", "get_unique_id", "buffer", "Buffer"]


class OpEngineType:
    MTE = 0
    SDMA = 1
    ROCE = 2


class InitAttr:
    """aclshmem's init attributes: my_rank, n_ranks, ip_port (tcp://host:port of PE 0's
    store, ignored: symmem uses the launcher or a unique id), local_mem_size (heap bytes)."""

    def __init__(self, my_rank=-1, n_ranks=-1, ip_port="", local_mem_size=0, option_attr=None):
        self.my_rank, self.n_ranks, self.ip_port = my_rank, n_ranks, ip_port
        self.local_mem_size, self.option_attr = local_mem_size, option_attr


def aclshmem_init(attr=None):
    if attr is None:
        _sm.init()
    else:
        _sm.init(pe=None if attr.my_rank < 0 else attr.my_rank, n_pes=None if attr.n_ranks < 0 else attr.n_ranks,
                 heap_size=attr.local_mem_size or None)
    return 0


def aclshmem_get_unique_id():
    return bytes(_sm.get_unique_id())


get_unique_id = aclshmem_get_unique_id


def aclshmem_init_using_unique_id(rank, world_size, mem_size, uid):
    _sm.init(uid=_sm.UniqueId(bytes(uid)), pe=rank, n_pes=world_size, heap_size=mem_size or None)
    return 0


def aclshmem_finalize():
    _c.finalize()
    return 0


aclshmem_finialize = aclshmem_finalize


def my_pe():
    return _c.my_pe()


def pe_count():
    return _c.n_pes()


n_pes = pe_count


def team_my_pe(team=None):
    return (team or _sm.TEAM_WORLD).my_pe


def team_n_pes(team=None):
    return (team or _sm.TEAM_WORLD).n_pes


def aclshmem_malloc(size, mem_type=None):
    return _c.shmem_malloc(size)


def aclshmem_calloc(count, size):
    # zeroed inside the allocation, as shmem_calloc: one barrier, and no peer's put is lost
    return _c._malloc(int(count) * int(size), "aclshmem_calloc(%d, %d)" % (count, size), fill=b"\0").addr


def aclshmem_align(alignment, size):
    rt = _c._rt()
    b = rt._alloc(int(size), int(alignment), "aclshmem_align(%d, %d)" % (alignment, size))
    _c._state["blocks"][b.addr] = b
    return b.addr


def aclshmem_free(ptr):
    _c.free(ptr)


def aclshmem_ptr(ptr, pe):
    """Local address of PE pe's copy of the symmetric address ptr, or 0 (not reachable)."""
    rt = _c._rt()
    if not rt._c._is_symmetric_addr(int(ptr), 1):
        raise _sm.NotSymmetricError("aclshmem_ptr: %#x is not a symmetric address" % int(ptr))
    blk = _block_at(int(ptr))
    a = np.frombuffer(blk, dtype=np.uint8)[int(ptr) - blk.addr:]
    p = rt.ptr(a, int(pe))
    return 0 if p is None else int(p)


def _block_at(addr):
    for b in _c._state["blocks"].values():
        if b.addr <= addr < b.addr + b.nbytes:
            return b
    raise _sm.NotSymmetricError("%#x is not inside a block of aclshmem_malloc" % addr)


def aclshmem_putmem(dst, src, elem_size, pe):
    _c.shmem_putmem(dst, src, elem_size, pe)
    return 0


def aclshmem_getmem(dst, src, elem_size, pe):
    _c.shmem_getmem(dst, src, elem_size, pe)
    return 0


aclshmem_putmem_nbi = aclshmem_putmem  # complete on return (host memory)
aclshmem_getmem_nbi = aclshmem_getmem


def aclshmemx_putmem_signal(dst, src, elem_size, sig, signal, sig_op, pe):
    """Copy, then set (sig_op 0) or add (1) `signal` to PE pe's uint64 at the symmetric address sig."""
    _c.shmem_putmem(dst, src, elem_size, pe)
    blk = _block_at(int(sig))
    word = np.frombuffer(blk, dtype=np.uint64, count=1, offset=int(sig) - blk.addr)
    rt = _c._rt()
    rt.quiet()
    if int(sig_op) == 1:
        rt.signal_add(word, int(signal), int(pe))
    else:
        rt.signal_set(word, int(signal), int(pe))
    return 0


def aclshmem_signal_wait_until(sig_addr, cmp, cmp_val):
    blk = _block_at(int(sig_addr))
    word = np.frombuffer(blk, dtype=np.uint64, count=1, offset=int(sig_addr) - blk.addr)
    return _c._rt().signal_wait_until(word, int(cmp), int(cmp_val))


def aclshmem_barrier_all():
    _c.barrier()


def aclshmem_quiet(stream=None):
    _c.quiet()


# The pre-rename names
shmem_init = aclshmem_init
shmem_finialize = aclshmem_finalize
shmem_finalize = aclshmem_finalize
shmem_malloc = aclshmem_malloc
shmem_calloc = aclshmem_calloc
shmem_align = aclshmem_align
shmem_free = aclshmem_free
shmem_ptr = aclshmem_ptr
shmem_putmem = aclshmem_putmem
shmem_getmem = aclshmem_getmem
shmem_putmem_signal = aclshmemx_putmem_signal


class Buffer:
    """shmem.core's Buffer(addr, length)."""
    __slots__ = ("addr", "length")

    def __init__(self, addr, length):
        self.addr, self.length = addr, length


def buffer(size):
    return Buffer(aclshmem_malloc(size), int(size))
