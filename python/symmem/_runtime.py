"""symmem.Runtime: one job instance seen from Python (allocation, lifetime rules, teams,
value-style collectives, locks, contexts). The per-call work is in the native layer
(_symmem._Runtime); the hot methods are bound straight onto each Runtime object and the
module functions of `symmem` are those of the default Runtime."""
import atexit
import contextlib
import os
import sys
import warnings
import weakref

import numpy as np

from . import _symmem
from . import _device
from ._errors import NotSymmetricError, StateError, InvalidArgument, DTypeError, DeviceNotSupported

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))

# Methods of the native runtime that are bound as they are (no Python wrapper per call).
FAST = ("my_pe", "n_pes", "put", "get", "put_nbi", "get_nbi", "iput", "iget", "p", "g", "fence", "quiet",
        "barrier_all", "sync_all", "ptr", "is_symmetric", "put_signal", "put_signal_nbi", "signal_fetch",
        "signal_add", "signal_set", "signal_wait_until", "wait_until", "test", "heap_stats",
        "atomic_fetch", "atomic_set", "atomic_swap", "atomic_compare_swap", "atomic_fetch_add", "atomic_add",
        "atomic_fetch_inc", "atomic_inc", "atomic_fetch_and", "atomic_and", "atomic_fetch_or", "atomic_or",
        "atomic_fetch_xor", "atomic_xor",
        "wait_until_all", "wait_until_any", "wait_until_some", "wait_until_all_vector", "wait_until_any_vector",
        "wait_until_some_vector", "test_all", "test_any", "test_some", "test_all_vector", "test_any_vector",
        "test_some_vector")


def _caller_site():
    f = sys._getframe(1)
    while f is not None and os.path.dirname(os.path.abspath(f.f_code.co_filename)).startswith(_PKG_DIR):
        f = f.f_back
    if f is None:
        return "?"
    return "%s:%d" % (os.path.basename(f.f_code.co_filename), f.f_lineno)


def _parse_size(s):
    if s is None:
        return 0
    if isinstance(s, (int, np.integer)):
        return int(s)
    t = str(s).strip().upper().rstrip("B").rstrip("I")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    if t and t[-1] in mult:
        return int(float(t[:-1]) * mult[t[-1]])
    return int(t)


def _timeout(t):
    """A timeout argument: None (the runtime's default) or seconds > 0."""
    if t is None:
        return None
    t = float(t)
    if not t > 0:
        raise InvalidArgument("timeout must be a positive number of seconds (None: the runtime's default)")
    return t


def _env_timeout():
    v = os.environ.get("SYMMEM_TIMEOUT")
    return float(v) if v else 0.0


class UniqueId:
    """A job's unique id (136 bytes; holds the job's secret: give it only to the job's PEs).
    bytes(uid), UniqueId(b) / UniqueId.from_bytes(b), str(uid) / UniqueId.from_string(s); picklable."""
    __slots__ = ("_b",)

    def __init__(self, b):
        b = bytes(b)
        if len(b) != _symmem.UID_SIZE:
            raise InvalidArgument("a unique id has %d bytes, not %d" % (_symmem.UID_SIZE, len(b)))
        self._b = b

    @classmethod
    def from_bytes(cls, b):
        return cls(b)

    @classmethod
    def from_string(cls, s):
        return cls(_symmem.uid_from_string(s))

    def __bytes__(self):
        return self._b

    def __str__(self):
        return _symmem.uid_to_string(self._b)

    def __repr__(self):
        return "<symmem.UniqueId %s...>" % str(self)[:24]

    def __eq__(self, o):
        return isinstance(o, UniqueId) and o._b == self._b

    def __hash__(self):
        return hash(self._b)

    def __reduce__(self):
        return (UniqueId, (self._b,))


def get_unique_id(tls=""):
    """Make a new job id and start its store in this process (PE 0 of the job to be)."""
    return UniqueId(_symmem.get_unique_id(tls))


class _Record:
    __slots__ = ("seq", "addr", "nbytes", "site", "what", "fin", "block")

    def __init__(self, seq, addr, nbytes, site, what):
        self.seq, self.addr, self.nbytes, self.site, self.what = seq, addr, nbytes, site, what
        self.fin = None
        self.block = None  # device arrays: a weak reference to the Block (free() finds it by address)

    def __repr__(self):
        return "%s (%d bytes) made at %s" % (self.what, self.nbytes, self.site)


_live = weakref.WeakSet()
_instances = [0]


class Runtime:
    """One symmem job instance. `with symmem.Runtime(uid=..., pe=..., n_pes=...) as rt:`;
    every module function of symmem is also a method here (rt.zeros, rt.put, ...)."""

    def __init__(self, uid=None, pe=None, n_pes=None, *, heap_size=None, timeout=None, tls="", instance=None,
                 _defer=False):
        self._c = _symmem._Runtime()
        self._records = {}
        self._orphans = {}
        self._by_addr = {}
        self._seq = 0
        self.team_world = None
        self.team_shared = None
        for name in FAST:
            setattr(self, name, getattr(self._c, name))
        for name, fn in self._c._fast().items():  # vectorcall forms of put/get/p/g/atomics
            setattr(self, name, fn)
        if not _defer:
            if instance is None:
                _instances[0] += 1
                instance = _instances[0]
            self._init(uid, pe, n_pes, heap_size, timeout, tls, instance)

    # ---- lifecycle
    def _init(self, uid=None, pe=None, n_pes=None, heap_size=None, timeout=None, tls="", instance=0):
        if self._c.initialized:
            return self
        to = float(timeout) if timeout is not None else _env_timeout()
        self._c.init(None if uid is None else bytes(uid), -1 if pe is None else int(pe),
                     -1 if n_pes is None else int(n_pes), _parse_size(heap_size), int(instance), to, tls or "")
        self.team_world = self._c.team(0)
        self.team_shared = self._c.team(1)
        nbytes = _parse_size(os.environ.get("SYMMEM_PY_SCRATCH", "1M"))
        blk = self._c._alloc(max(nbytes, 4096), 64, "symmem scratch", None)
        self._c.scratch = np.frombuffer(blk, dtype=np.uint8)
        _live.add(self)
        return self

    @property
    def initialized(self):
        return self._c.initialized

    def finalize(self, timeout=60.0, *, _keep=True):
        """Leave the job (collective, bounded by timeout); idempotent. Lists what was never freed."""
        if not self._c.initialized:
            return
        left = list(self._records.values()) + list(self._orphans.values())
        if left:
            me = self._c.my_pe()
            sys.stderr.write("[pe %d] symmem.finalize: %d symmetric array(s) never freed: %s\n"
                             % (me, len(left), "; ".join(repr(r) for r in left[:8]) + (" ..." if len(left) > 8 else "")))
        for r in list(self._records.values()):
            if r.fin is not None:
                r.fin.detach()
        self._records.clear()
        self._orphans.clear()
        self._by_addr.clear()
        self._c.scratch = None
        try:
            self._c.finalize(float(timeout) if timeout else 0.0, _keep)
        finally:
            self.team_world = self.team_shared = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.finalize()
        return False

    def info(self):
        """Version, job size, heap use and settings of this runtime."""
        from . import __version__
        d = {"version": __version__, "spec": "OpenSHMEM 1.5", "initialized": self._c.initialized,
             "python": sys.version.split()[0], "numpy": np.__version__}
        if self._c.initialized:
            d.update(my_pe=self._c.my_pe(), n_pes=self._c.n_pes(), heap=self._c.heap_stats(),
                     timeout=self._c.default_timeout or None, scratch_bytes=self._c.scratch.nbytes,
                     transports=["shm"], arrays=len(self._records), orphans=len(self._orphans))
        return d

    # ---- arrays
    def _alloc(self, nbytes, align, what, timeout=None, fill=None, device=False):
        """fill: None, or a buffer whose bytes repeat over the block, written before the
        allocation's closing barrier (a peer's put right after it returns is never lost).
        device: in the device heap (the fill written through the CUDA driver)."""
        site = _caller_site()
        if device:
            blk = self._c._alloc_device(max(int(nbytes), 1), int(align), site, _timeout(timeout),
                                        None if fill is None else np.ascontiguousarray(fill).tobytes())
        else:
            blk = self._c._alloc(max(int(nbytes), 1), int(align), site, _timeout(timeout), fill)
        self._seq += 1
        rec = _Record(self._seq, blk.addr, int(nbytes), site, what)
        self._records[rec.seq] = rec
        self._by_addr[blk.addr] = rec.seq
        rec.fin = weakref.finalize(blk, self._dropped, rec.seq)
        if device:
            rec.block = weakref.ref(blk)
        return blk

    def _dropped(self, seq):
        rec = self._records.pop(seq, None)
        if rec is None or not self._c.initialized:
            return
        self._orphans[seq] = rec
        warnings.warn("symmem: %r was dropped without symmem.free(); it stays allocated until symmem.collect() "
                      "(collective) or finalize()" % rec, ResourceWarning, stacklevel=2)

    def _new(self, shape, dtype, order, fill, align=64, timeout=None, device=None):
        """An array in the symmetric heap; fill (see _alloc) is in its memory order.
        device: "cpu" (None) or "cuda" / "cuda:N": see empty()."""
        dtype = np.dtype(dtype)
        if dtype.hasobject:
            raise DTypeError("symmetric arrays hold plain data, not Python objects (dtype %s)" % dtype)
        shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)
        count = int(np.prod(shape, dtype=np.int64))
        gpu = _device.parse_device(device)
        if gpu is not None:
            return self._new_device(shape, dtype, order, fill, align, timeout, gpu, count)
        what = "array %s %s" % (shape, dtype)
        blk = self._alloc(count * dtype.itemsize, align, what, timeout, fill)
        a = np.frombuffer(blk, dtype=dtype, count=count)
        return a.reshape(shape, order=order)

    def _new_device(self, shape, dtype, order, fill, align, timeout, gpu, count):
        _device.dlpack_dtype(dtype)
        if order not in ("C", "F"):
            raise InvalidArgument("order=%r: device arrays are made in order \"C\" or \"F\"" % (order,))
        what = "device array %s %s" % (shape, dtype)
        blk = self._alloc(count * dtype.itemsize, align, what, timeout, fill, device=True)
        ordinal = self._c._device_ordinal()
        if gpu >= 0 and gpu != ordinal:
            # Allocated on every PE already: kept for collect() / finalize(), not returned.
            seq = self._by_addr.pop(blk.addr)
            rec = self._records.pop(seq)
            rec.fin.detach()
            self._orphans[seq] = rec
            raise InvalidArgument("device=\"cuda:%d\": this PE is bound to GPU %d (SYMMEM_DEVICE, symmem-run --gpus); "
                                  "say device=\"cuda\" (the allocation is left to symmem.collect())" % (gpu, ordinal))
        strides = None
        if order == "F":
            strides, step = [], dtype.itemsize
            for s in shape:
                strides.append(step)
                step *= max(s, 1)
        return _device.wrap(_device.DeviceArray(blk.addr, shape, dtype, ordinal, blk, strides))

    def empty(self, shape, dtype=float, order="C", *, align=64, timeout=None, device=None):
        """A numpy.ndarray in the symmetric heap, uninitialised (collective, as shmem_malloc).
        device="cuda" (or "cuda:N", N this PE's GPU): in the device heap, on the GPU this PE
        is bound to; returns a torch CUDA tensor when torch is importable, else a
        symmem.DeviceArray (__cuda_array_interface__, __dlpack__) for CuPy and others.
        Raises DeviceUnavailable on every PE, with the reason, when some PE has no usable GPU."""
        return self._new(shape, dtype, order, None, align, timeout, device)

    # The initialising constructors fill this PE's copy inside the allocation, before its
    # closing barrier (as shmem_calloc): a peer may write into it as soon as its call returns.
    def zeros(self, shape, dtype=float, order="C", **kw):
        return self._new(shape, dtype, order, b"\0", **kw)

    def ones(self, shape, dtype=float, order="C", **kw):
        return self.full(shape, 1, np.dtype(dtype), order, **kw)

    def full(self, shape, fill_value, dtype=None, order="C", **kw):
        if dtype is None:
            dtype = np.asarray(fill_value).dtype
        dtype = np.dtype(dtype)
        if np.ndim(fill_value) == 0:
            v = np.empty((), dtype)  # one element, repeated; converted as a[...] = fill_value would
        else:
            shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)
            v = np.empty(shape, dtype, order=order if order in ("C", "F") else "C")
        v[...] = fill_value
        return self._new(shape, dtype, order, v.ravel(order="K"), **kw)

    def array(self, obj, dtype=None, **kw):
        if _device.is_device_object(obj):
            raise DeviceNotSupported("array(): copying from device memory is not implemented yet; make the "
                                     "array with zeros/empty(..., device=\"cuda\") and copy on the GPU")
        src = np.asarray(obj, dtype=dtype)
        return self._new(src.shape, src.dtype, "C", np.ascontiguousarray(src), **kw)

    @staticmethod
    def _like(x, dtype, kw):
        """(shape, dtype) of x; a device object's device is the default of device=."""
        if _device.is_device_object(x):
            _, shape, _, xdtype = _device.describe(x)
            kw.setdefault("device", "cuda")
            return shape, dtype or xdtype
        x = np.asarray(x)
        return x.shape, dtype or x.dtype

    def empty_like(self, x, dtype=None, **kw):
        shape, dtype = self._like(x, dtype, kw)
        return self.empty(shape, dtype, **kw)

    def zeros_like(self, x, dtype=None, **kw):
        shape, dtype = self._like(x, dtype, kw)
        return self.zeros(shape, dtype, **kw)

    def signals(self, n=1, **kw):
        """n signal words (uint64, zeroed) for put_signal / signal_wait_until."""
        return self.zeros(n, np.uint64, **kw)

    def _device_block(self, a):
        """The Block of a device array made here (a tensor or DeviceArray at its start)."""
        ptr = _device.describe(a)[0]
        seq = self._by_addr.get(ptr)
        if seq is None:
            raise NotSymmetricError("free: not the start of a device array made by symmem (device=\"cuda\")")
        blk = getattr(self._records[seq], "block", None)
        blk = blk() if blk is not None else None
        if blk is None:
            raise StateError("free: the device array's block is gone")
        return blk

    def _owner_of(self, a):
        """(the object the arrays' .base points to, the Block) of a view of a symmetric array."""
        if isinstance(a, _symmem.Block):
            return a, a
        if _device.is_device_object(a):
            # Tensors that view it (slices, peers' views of it) are not counted: freeing is
            # collective and the caller's promise, as cudaFree's.
            b = self._device_block(a)
            return b, b
        x = a
        if not isinstance(x, np.ndarray):
            from ._util import as_array
            x = as_array(x)
        # Every array symmem returns is a view of one 1-d array over the block (np.frombuffer,
        # whose base is a memoryview of the Block); NumPy points every view's base at it.
        while isinstance(x.base, np.ndarray):
            x = x.base
        owner = x
        b = x.base
        if isinstance(b, memoryview):
            b = b.obj
        if not isinstance(b, _symmem.Block):
            raise NotSymmetricError("not an array made by symmem (symmem.zeros/empty/array/...)")
        if b.detached:
            raise StateError("the array's symmem runtime is finalized: it is plain local memory now")
        if b.peer:
            raise NotSymmetricError("a peer view (symmem.peer): free the array it views, on its own PE")
        if b.addr not in self._by_addr:
            if b.freed:
                raise StateError("the array's symmetric block is already freed")
            raise NotSymmetricError("the array belongs to another symmem Runtime")
        return owner, b

    def free(self, a, *, force=False, timeout=None):
        """Free a symmetric array (collective). BufferError if other views of it are alive."""
        owner, blk = self._owner_of(a)
        if not force and owner is not blk:
            # References to owner: our local, getrefcount's argument, and one per live array
            # view (`a` is one of them, or a itself when it is that array).
            views = sys.getrefcount(owner) - 2 - (owner is a)
            if views > 1:
                raise BufferError("free: %d other view(s) of this symmetric array are alive (slices, peer views, "
                                  "tensors); drop them first, or free(a, force=True)" % (views - 1))
        seq = self._by_addr[blk.addr]
        self._c._free(blk, _timeout(timeout))
        rec = self._records.pop(seq)
        del self._by_addr[blk.addr]
        rec.fin.detach()

    @contextlib.contextmanager
    def scoped(self, shape, dtype=float, *, fill=None, **kw):
        """with rt.scoped(shape, dtype) as a: ... -- freed (collectively) on exit."""
        a = self.empty(shape, dtype, **kw) if fill is None else self.full(shape, fill, dtype, **kw)
        try:
            yield a
        finally:
            self.free(a, force=True)

    def collect(self, *, timeout=None):
        """Collective: free the arrays every PE has dropped without free(); returns how many."""
        mine = sorted(self._orphans)
        w = self.team_world
        m = int(w.allreduce(np.array([len(mine)], np.int64), op="max", timeout=timeout)[0])
        if m == 0:
            return 0
        buf = np.full(m, -1, np.int64)
        buf[:len(mine)] = mine
        rows = w.allgather(buf, timeout=timeout).reshape(-1, m)
        common = set(mine)
        for row in rows:
            common &= set(int(v) for v in row)
        for seq in sorted(common):
            rec = self._orphans.pop(seq)
            self._c._free_addr(rec.addr, _timeout(timeout))
            self._by_addr.pop(rec.addr, None)
        return len(common)

    def allocations(self):
        """Live symmetric arrays and orphans of this runtime: list of (what, nbytes, site, orphaned)."""
        out = [(r.what, r.nbytes, r.site, False) for r in self._records.values()]
        out += [(r.what, r.nbytes, r.site, True) for r in self._orphans.values()]
        return out

    def heap_offset(self, a):
        """Offset of a view's first element in its allocation."""
        _, blk = self._owner_of(a)
        x = a if isinstance(a, np.ndarray) else np.asarray(a)
        return x.__array_interface__["data"][0] - blk.addr

    def peers(self, a, team=None, readonly=False):
        team = team or self.team_world
        return [self.peer(a, team.translate_pe(i, self.team_world), readonly=readonly) for i in range(team.n_pes)]

    # ---- teams (module-level conveniences on the world team)
    def peer(self, a, pe, *, readonly=False):
        """PE pe's copy of the symmetric array a, as an array of the same kind that loads and
        stores into it (node peers only). A device array (device="cuda"): a torch tensor (or
        DeviceArray) on the GPU over the peer's copy, at ptr + (pe - me) * device heap size."""
        if type(a) is np.ndarray or not _device.is_device_object(a):
            return self._c.peer(a, pe, readonly=readonly)
        if readonly:
            raise InvalidArgument("peer(readonly=True): device views cannot be made read-only")
        ptr, shape, strides, dtype = _device.describe(a)
        lo, hi = _device.extent(shape, strides, dtype.itemsize)
        remote = self._c._device_peer(ptr + lo, hi - lo, int(pe))
        if remote is None:
            raise InvalidArgument("peer: PE %d is not reachable by load/store from this PE (another node)" % pe)
        view = _device.DeviceArray(remote - lo, shape, dtype, self._c._device_ordinal(), a, strides)
        return _device.wrap(view)

    def _team(self, team):
        return team if team is not None else self.team_world

    # On CUDA tensors / device arrays (device="cuda") broadcast, fcollect, alltoall, reduce,
    # reduce_scatter and barrier(stream=) queue the core's stream-ordered forms on `stream`
    # (None: torch's current stream for a torch tensor, else the default stream) and return
    # at once; timeout does not apply (SYMMEM_DEVICE_WAIT_TIMEOUT bounds the device's waits).
    def broadcast(self, dst, src, root, *, team=None, timeout=None, stream=None):
        self._team(team).broadcast(dst, src, root, timeout=_timeout(timeout), stream=stream)

    def fcollect(self, dst, src, *, team=None, timeout=None, stream=None):
        self._team(team).fcollect(dst, src, timeout=_timeout(timeout), stream=stream)

    def collect_(self, dst, src, *, team=None, timeout=None):
        return self._team(team).collect(dst, src, timeout=_timeout(timeout))

    def alltoall(self, dst, src, *, team=None, timeout=None, stream=None):
        self._team(team).alltoall(dst, src, timeout=_timeout(timeout), stream=stream)

    def alltoalls(self, dst, src, *, dst_stride=1, src_stride=1, nelems=-1, team=None, timeout=None):
        self._team(team).alltoalls(dst, src, dst_stride=dst_stride, src_stride=src_stride, nelems=nelems,
                                   timeout=_timeout(timeout))

    def reduce(self, dst, src, op="sum", *, team=None, timeout=None, stream=None):
        self._team(team).reduce(dst, src, op, timeout=_timeout(timeout), stream=stream)

    def reduce_scatter(self, dst, src, op="sum", *, team=None, stream=None):
        """Device memory only: member i's dst = the reduction of block i of every member's
        src (src holds n_pes blocks of dst's size); queued on the stream."""
        self._team(team).reduce_scatter(dst, src, op, stream=stream)

    def inscan(self, dst, src, *, team=None, timeout=None):
        self._team(team).inscan(dst, src, timeout=_timeout(timeout))

    def exscan(self, dst, src, *, team=None, timeout=None):
        self._team(team).exscan(dst, src, timeout=_timeout(timeout))

    def allreduce(self, x, op="sum", *, team=None, timeout=None, stream=None):
        return self._team(team).allreduce(x, op, timeout=timeout, stream=stream)

    def allgather(self, x, *, team=None, timeout=None):
        return self._team(team).allgather(x, timeout=timeout)

    def bcast(self, x, root=0, *, team=None, timeout=None, stream=None):
        return self._team(team).bcast(x, root, timeout=timeout, stream=stream)

    def barrier(self, *, team=None, timeout=None, stream=None):
        self._team(team).barrier(timeout=_timeout(timeout), stream=stream)

    def __repr__(self):
        if not self._c.initialized:
            return "<symmem.Runtime (not initialized)>"
        return "<symmem.Runtime PE %d of %d>" % (self._c.my_pe(), self._c.n_pes())


# ---------------------------------------------------------------- value-style team collectives
# Inputs are ordinary arrays (same shape on every member); they travel through the runtime's
# symmetric scratch buffer (SYMMEM_PY_SCRATCH, default 1 MiB) in chunks.

def _scratch(team):
    s = team._rt.scratch
    if s is None:
        raise StateError("the runtime is finalized")
    return s


def _through_scratch(team, x, call):
    """x's elements, chunk by chunk through the team's scratch: call(dst, src) on each
    chunk (a same-shape collective), the results gathered into a new array."""
    x = np.ascontiguousarray(x)
    out = np.empty_like(x)
    fx, fo = x.reshape(-1), out.reshape(-1)
    s = _scratch(team)
    half = (s.nbytes // 2) // x.itemsize * x.itemsize
    chunk = max(half // x.itemsize, 1)
    src = s[:half].view(x.dtype)
    dst = s[half:2 * half].view(x.dtype)
    for off in range(0, fx.size, chunk):
        k = min(chunk, fx.size - off)
        src[:k] = fx[off:off + k]
        call(dst[:k], src[:k])
        fo[off:off + k] = dst[:k]
    return out




def _small(team, x):
    """(x flat, src, dst) when x fits in half the scratch (one collective), else None."""
    x = np.asarray(x)
    s = _scratch(team)
    if x.nbytes * 2 > s.nbytes or x.dtype.hasobject:
        return None
    c = team.__dict__.get("_halves")  # (scratch, {dtype: (src, dst)}): its two halves as that dtype
    if c is None or c[0] is not s:
        c = team._halves = (s, {})
    per = c[1]
    h = per.get(x.dtype)
    if h is None:
        half = (s.nbytes // 2) // x.itemsize * x.itemsize
        h = per[x.dtype] = (s[:half].view(x.dtype), s[half:2 * half].view(x.dtype))
    return x, h[0][:x.size], h[1][:x.size]


def _team_allreduce(team, x, op="sum", *, timeout=None, stream=None):
    if _device.is_device_object(x):  # a CUDA tensor in the device heap: in place, on the stream
        team.reduce(x, x, op, stream=stream)
        return x
    one = _small(team, x)
    if one is not None:  # the common small case: one reduce, no chunk loop
        x, src, dst = one
        src[...] = x.reshape(-1)
        team.reduce(dst, src, op, timeout=timeout)
        return dst.reshape(x.shape).copy()
    return _through_scratch(team, x, lambda d, s: team.reduce(d, s, op, timeout=_timeout(timeout)))


def _team_allgather(team, x, *, timeout=None):
    if _device.is_device_object(x):
        raise DeviceNotSupported("allgather(x) makes a new array; on device memory use fcollect(dst, src) with dst "
                                 "from symmem.zeros((n_pes, ...), device=\"cuda\")")
    x = np.ascontiguousarray(x)
    n = team.n_pes
    out = np.empty((n,) + x.shape, x.dtype)
    fx, fo = x.reshape(-1), out.reshape(n, -1)
    s = _scratch(team)
    chunk = max(s.nbytes // ((n + 1) * x.itemsize), 1)
    src = s[:chunk * x.itemsize].view(x.dtype)
    dst = s[chunk * x.itemsize:(n + 1) * chunk * x.itemsize].view(x.dtype)
    for off in range(0, fx.size, chunk):
        k = min(chunk, fx.size - off)
        src[:k] = fx[off:off + k]
        team.fcollect(dst[:n * k], src[:k], timeout=_timeout(timeout))
        fo[:, off:off + k] = dst[:n * k].reshape(n, k)
    return out


def _team_bcast(team, x, root=0, *, timeout=None, stream=None):
    if _device.is_device_object(x):  # in place, on the stream
        team.broadcast(x, x, root, stream=stream)
        return x
    one = _small(team, x)
    if one is not None:
        x, src, dst = one
        src[...] = x.reshape(-1)
        team.broadcast(dst, src, root, timeout=timeout)
        return dst.reshape(x.shape).copy()
    return _through_scratch(team, x, lambda d, s: team.broadcast(d, s, root, timeout=_timeout(timeout)))


def _team_enter(team):
    return team


def _team_exit(team, *exc):
    team.destroy()
    return False


_symmem.Team.allreduce = _team_allreduce
_symmem.Team.allgather = _team_allgather
_symmem.Team.bcast = _team_bcast
_symmem.Team.__enter__ = _team_enter
_symmem.Team.__exit__ = _team_exit


# ---------------------------------------------------------------- locks and contexts

class Lock:
    """A distributed lock (shmem_set_lock semantics) on a symmetric word; making one is
    collective. `with lock:` or acquire(timeout=) / test() / release(); free() (collective)."""

    def __init__(self, rt=None):
        from . import _default_runtime
        self._rt = rt or _default_runtime()
        self._word = self._rt.zeros(1, np.uint64)  # zeroed before the allocation's barrier

    def acquire(self, timeout=None):
        self._rt._c._lock_acquire(self._word, _timeout(timeout))

    def test(self):
        """Take the lock if it is free; True when taken."""
        return self._rt._c._lock_test(self._word)

    def release(self):
        self._rt._c._lock_release(self._word)

    def free(self):
        w, self._word = self._word, None
        self._rt.free(w)

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()
        return False


class CTX:
    SERIALIZED = 1
    PRIVATE = 2
    NOSTORE = 4


CTX_CALLS = ("put", "get", "put_nbi", "get_nbi", "p", "g", "put_signal", "fence", "quiet",
             "atomic_fetch", "atomic_set", "atomic_swap", "atomic_compare_swap", "atomic_fetch_add", "atomic_add",
             "atomic_fetch_inc", "atomic_inc", "atomic_fetch_and", "atomic_and", "atomic_fetch_or", "atomic_or",
             "atomic_fetch_xor", "atomic_xor")


class Ctx:
    """A communication context (symmem::Ctx, shmem_ctx_t): put/get/nbi/p/g/put_signal/atomics
    with PE numbers of its team (TEAM_WORLD unless team= names another), and its own
    fence()/quiet(): quiet() completes the operations issued on this context (and releases
    the buffers of its nbi calls). Not collective. `with Ctx(...) as ctx:` destroys it at
    the end (after a quiet); so does the runtime's finalize()."""

    def __init__(self, options=0, team=None, rt=None):
        from . import _default_runtime
        self._rt = rt or _default_runtime()
        self.team = team if team is not None else self._rt.team_world
        self.options = int(options)
        self._c = team._ctx_create(self.options) if team is not None else self._rt._c._ctx_create(self.options)
        for name in CTX_CALLS:
            setattr(self, name, getattr(self._c, name))

    @classmethod
    def create(cls, options=0, team=None):
        return cls(options, team)

    @property
    def valid(self):
        return self._c.valid

    @property
    def n_pes(self):
        return self._c.n_pes

    @property
    def n_pending(self):
        return self._c.n_pending

    def destroy(self):
        self._c.destroy()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()
        return False


_dying = [False]
_prev_excepthook = sys.excepthook


def _excepthook(t, v, tb):
    # An uncaught exception ends this PE: finalizing at exit would run a barrier that the
    # other PEs, still in the program, could pass by mistake. Leave without waiting.
    _dying[0] = True
    _prev_excepthook(t, v, tb)


sys.excepthook = _excepthook


@atexit.register
def _finalize_all():
    for rt in list(_live):
        if _dying[0]:
            rt._c._abandon()
            continue
        try:
            # At exit the arrays' pages are not copied (nothing uses them any more).
            rt.finalize(timeout=float(os.environ.get("SYMMEM_FINALIZE_TIMEOUT", "60")), _keep=False)
        except Exception as e:  # at exit: report, never hang
            sys.stderr.write("symmem: finalize at exit failed: %s\n" % e)
