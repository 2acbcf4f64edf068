"""One-PE tests in the pytest process (no launcher: a 1-PE job): argument checks and error
classes, arrays, DLPack/torch, unique ids, lifetime rules. Multi-PE behaviour is in
test_driver.py."""
import pickle
import sys
import warnings

import numpy as np
import pytest

import symmem as sm


@pytest.fixture(scope="module", autouse=True)
def job():
    sm.init(heap_size="256M", timeout=30)
    yield
    sm.finalize()


def test_not_initialized_is_a_state_error():
    rt = sm.Runtime(_defer=True)
    with pytest.raises(sm.StateError, match="not initialized"):
        rt.put(np.zeros(1), np.zeros(1), 0)


def test_one_pe_job_and_info():
    assert sm.my_pe() == 0 and sm.n_pes() == 1
    i = sm.info()
    assert i["n_pes"] == 1 and i["heap"]["size"] == 256 << 20 and i["spec"] == "OpenSHMEM 1.5"
    assert sm.init() is sm.current()  # idempotent


def test_arrays_are_plain_ndarrays_in_the_heap():
    for make in (lambda: sm.empty((3, 4), np.int16), lambda: sm.zeros(5), lambda: sm.ones(5, np.int8),
                 lambda: sm.full((2, 2), 7.5), lambda: sm.array([[1, 2], [3, 4]]),
                 lambda: sm.empty_like(np.zeros((2, 3))), lambda: sm.zeros_like(np.ones(4, np.uint32))):
        a = make()
        assert type(a) is np.ndarray and sm.is_symmetric(a) and sm.is_symmetric(a[1:])
        assert a.ctypes.data % 64 == 0
        sm.free(a)


def test_dlpack_is_zero_copy():
    a = sm.zeros(16, np.float32)
    b = np.from_dlpack(a)
    assert b.ctypes.data == a.ctypes.data
    torch = pytest.importorskip("torch")
    t = torch.from_dlpack(a)
    t[3] = 5
    assert a[3] == 5 and t.data_ptr() == a.ctypes.data
    sm.put(t[:2], torch.ones(2), 0)  # a tensor destination and source
    assert (a[:2] == 1).all()
    del t, b
    sm.free(a)


def test_arrays_and_tensors_outlive_their_runtime():
    from symmem import _symmem
    torch = pytest.importorskip("torch")
    kept = _symmem._kept_pages()
    rt = sm.Runtime(heap_size="32M")
    a = rt.zeros(3000, np.float32)
    a[:] = 2
    t = torch.from_dlpack(a[100:])        # a tensor of a view
    d = np.from_dlpack(a)
    blk = rt._c._alloc(64, 64, "here", None)   # a raw block (compat malloc's), through the buffer protocol
    tb = torch.frombuffer(blk, dtype=torch.uint8)
    tb[:] = 9
    rt.finalize()                          # (it lists the array never freed)
    assert _symmem._kept_pages() > kept
    t[0] = 5                               # still valid memory, now private to this process
    assert a[100] == 5 and d[100] == 5 and float(t.sum()) == 5 + 2 * 2899
    assert bytes(memoryview(blk)) == b"\x09" * 64 and blk.detached
    with pytest.raises(sm.StateError, match="finalized"):
        rt.put(t[:2], torch.zeros(2), 0)
    with pytest.raises(sm.StateError, match="finalized"):
        sm.put(t[:2], torch.zeros(2), 0)   # another (live) runtime: not its memory either
    with pytest.raises(sm.StateError, match="finalized"):
        rt.free(a)
    del a, t, d, blk, tb
    import gc
    gc.collect()
    assert _symmem._kept_pages() == kept


def test_wrong_dtype_is_a_type_error():
    a = sm.zeros(4)
    with pytest.raises(TypeError, match="dtypes differ"):
        sm.put(a, np.zeros(4, np.float32), 0)
    with pytest.raises(sm.DTypeError):
        sm.atomic_fetch_add(a, 1, 0, index=0)  # float64 is not a standard AMO type
    with pytest.raises(TypeError):
        sm.TEAM_WORLD.reduce(a, a, op="xor")  # bitwise op on floats
    i = sm.zeros(1, np.int32)
    with pytest.raises(TypeError):
        sm.p(i, 1.5, 0)  # a float into an int array
    sm.free(a)
    sm.free(i)


def test_short_destination_is_a_value_error():
    a = sm.zeros(4)
    with pytest.raises(ValueError, match="shapes differ"):
        sm.put(a[:3], np.zeros(4), 0)  # never a silent min of the two
    with pytest.raises(sm.ShapeError):
        sm.get(np.zeros(2), a, 0)
    with pytest.raises(ValueError):
        sm.TEAM_WORLD.fcollect(a[:0], a[:1])
    sm.free(a)


def test_non_symmetric_destination():
    local = np.zeros(4)
    with pytest.raises(sm.NotSymmetricError) as e:
        sm.put(local, np.ones(4), 0)
    assert isinstance(e.value, ValueError)
    with pytest.raises(sm.NotSymmetricError):
        sm.atomic_add(np.zeros(1, np.int64), 1, 0, index=0)
    with pytest.raises(ValueError):
        sm.free(local)


def test_bad_pe_is_an_index_error():
    a = sm.zeros(4)
    for pe in (1, -1, 10**6):
        with pytest.raises(IndexError, match="out of range"):
            sm.put(a, np.zeros(4), pe)
    with pytest.raises(sm.PEError):
        sm.g(a, 2, index=0)
    with pytest.raises(IndexError):
        sm.g(a, 0, index=4)  # a bad element index too
    with pytest.raises(IndexError):
        sm.TEAM_WORLD.broadcast(a, a, root=3)
    sm.free(a)


def test_heap_exhausted_is_a_memory_error():
    with pytest.raises(MemoryError) as e:
        sm.zeros(1 << 30, np.uint8)  # 1 GiB from a 256 MiB heap
    msg = str(e.value)
    assert isinstance(e.value, sm.HeapExhausted) and "asked 1073741824" in msg and "SHMEM_SYMMETRIC_SIZE" in msg
    assert "heap 268435456" in msg and "test_local.py" in msg
    a = sm.zeros(10)  # the heap still works
    sm.free(a)


def test_timeouts_and_bad_values():
    flag = sm.zeros(1, np.int64)
    with pytest.raises(TimeoutError) as e:
        sm.wait_until(flag, "==", 1, index=0, timeout=0.2)
    assert isinstance(e.value, sm.Timeout)
    with pytest.raises(ValueError):
        sm.wait_until(flag, "~~", 1, index=0)
    with pytest.raises(ValueError):
        sm.wait_until(flag, "==", 1, timeout=-1)
    sm.free(flag)


def test_free_with_live_views_raises_buffer_error():
    a = sm.zeros(10)
    v = a[2:5]
    with pytest.raises(BufferError):
        sm.free(a)
    del v
    sm.free(a)
    with pytest.raises(sm.StateError):
        sm.free(a)  # twice


def test_dropped_array_warns_and_collect_frees_it():
    used = sm.heap_stats()["used"]
    with pytest.warns(ResourceWarning, match=r"test_local.py:\d+"):
        x = sm.zeros(1000)
        del x
    assert any(o for *_, o in sm.allocations())
    assert sm.heap_stats()["used"] > used
    assert sm.collect() == 1
    assert sm.heap_stats()["used"] == used


def test_scoped_frees_on_exit_even_on_error():
    used = sm.heap_stats()["used"]
    with pytest.raises(RuntimeError):
        with sm.scoped(100, np.int32) as a:
            a[:] = 1
            raise RuntimeError("boom")
    assert sm.heap_stats()["used"] == used


def test_nbi_keeps_its_buffers_alive_until_quiet():
    import weakref
    dst = sm.zeros(1000)
    src = np.arange(1000.0)
    r = weakref.ref(src)
    sm.put_nbi(dst, src, 0)
    del src
    assert r() is not None
    sm.quiet()
    assert r() is None and dst[999] == 999
    sm.free(dst)


def test_peer_view_and_readonly():
    a = sm.zeros(4)
    v = sm.peer(a, 0, readonly=True)
    assert v.ctypes.data == a.ctypes.data and not v.flags.writeable
    with pytest.raises(ValueError):
        v[0] = 1
    del v
    sm.free(a)


def test_unique_id_bytes_pickle_and_text():
    uid = sm.get_unique_id()
    b = bytes(uid)
    assert len(b) == 136
    assert pickle.loads(pickle.dumps(uid)) == uid
    assert sm.UniqueId.from_bytes(b) == uid == sm.UniqueId.from_string(str(uid))
    with pytest.raises(ValueError):
        sm.UniqueId(b"short")


def test_compat_int_addresses_are_range_checked():
    import symmem.compat as shmem
    addr = shmem.shmem_malloc(64)
    src = np.arange(16, dtype=np.float32)
    shmem.shmem_putmem(addr + 0, src, 64, 0)
    out = np.zeros(16, np.float32)
    shmem.shmem_getmem(out, addr, 64, 0)
    assert np.array_equal(out, src)
    with pytest.raises(sm.NotSymmetricError):
        shmem.shmem_putmem(12345, src, 64, 0)  # an int outside the heap: an exception, not a segfault
    with pytest.raises(ValueError):
        shmem.shmem_putmem(addr, 8, 64, 0)  # an unmapped source address
    with pytest.raises(ValueError):
        shmem.shmem_getmem(16, addr, 64, 0)  # an unmapped destination address
    buf = shmem.malloc(32)
    v = np.frombuffer(buf, dtype=np.float32)
    shmem.put(dest=0, dest_idx=2, source=src.ctypes.data, nelems=4)
    assert np.array_equal(v[2:6], src[:4])
    with pytest.raises(ValueError):
        shmem.put(dest=0, dest_idx=6, source=src, nelems=4)  # past the window
    torch = pytest.importorskip("torch")
    t = torch.frombuffer(buf, dtype=torch.float32)
    assert t.data_ptr() == buf.addr
    got = torch.zeros(4)
    shmem.get(dest=got.data_ptr(), source=0, source_idx=2, nelems=4)
    assert got.tolist() == src[:4].tolist()
    del v, t
    shmem.free(buf)
    shmem.shmem_free(addr)


def test_aclshmem_names():
    import symmem.compat.aclshmem as acl
    assert acl.my_pe() == 0 and acl.pe_count() == 1
    p = acl.aclshmem_malloc(128)
    src = np.arange(32, dtype=np.int32)
    assert acl.aclshmem_putmem(p, src, 128, 0) == 0
    assert acl.aclshmem_ptr(p, 0) == p
    with pytest.raises(sm.NotSymmetricError):
        acl.aclshmem_ptr(64, 0)
    acl.aclshmem_free(p)
    assert acl.shmem_finialize is acl.aclshmem_finialize is acl.aclshmem_finalize


def test_error_family():
    for cls, base in ((sm.HeapExhausted, MemoryError), (sm.NotSymmetricError, ValueError), (sm.DTypeError, TypeError),
                      (sm.PEError, IndexError), (sm.Timeout, TimeoutError), (sm.SymmetryError, ValueError)):
        assert issubclass(cls, sm.Error) and issubclass(cls, base)


def test_bad_input_does_not_crash():
    a = sm.zeros(4)
    for bad in (None, "x", object(), [1, "a"]):
        with pytest.raises((TypeError, ValueError)):
            sm.put(a, bad, 0)
    with pytest.raises(TypeError):
        sm.put(a, np.array(["a"] * 4), 0)
    with pytest.raises(TypeError):
        sm.p(a, "x", 0, index=0)
    sm.free(a)


# ---- device arrays (device="cuda"): what can be checked without a GPU. The objects carry a
# pointer and never touch the memory, so a fake device address is enough here.
FAKE = 0x7f0000200000


def test_device_argument():
    from symmem._device import parse_device
    assert parse_device(None) is None and parse_device("cpu") is None
    assert parse_device("cuda") == -1 and parse_device("CUDA:3") == 3
    for bad in ("gpu", "cuda:", "cuda:x", "cuda:-1"):
        with pytest.raises(sm.InvalidArgument, match="cuda:N"):
            parse_device(bad)
    with pytest.raises(sm.InvalidArgument, match="cuda:N"):
        sm.zeros(3, device="gpu")  # refused before anything collective


def test_device_array_cuda_array_interface():
    d = sm.DeviceArray(FAKE, (3, 4), np.float32, 1, None)
    cai = d.__cuda_array_interface__
    assert cai["version"] == 3 and cai["data"] == (FAKE, False) and cai["shape"] == (3, 4)
    assert cai["typestr"] == "<f4" and cai["strides"] is None  # C-contiguous
    assert d.strides == (16, 4) and d.nbytes == 48 and d.device == "cuda:1" and d.__dlpack_device__() == (2, 1)
    f = sm.DeviceArray(FAKE, (3, 4), np.int16, 0, None, strides=(2, 6))  # Fortran order
    assert f.__cuda_array_interface__["strides"] == (2, 6) and f.__cuda_array_interface__["typestr"] == "<i2"
    with pytest.raises(sm.InvalidArgument):
        sm.DeviceArray(FAKE, (3,), np.float64, 0, None, strides=(3,))  # not a multiple of the item size
    with pytest.raises(sm.DTypeError):
        sm.DeviceArray(FAKE, (3,), ">f4", 0, None)
    with pytest.raises(sm.DTypeError):
        sm.DeviceArray(FAKE, (3,), object, 0, None)


def test_device_array_dlpack_capsule():
    import weakref

    class Owner:
        pass

    owner = Owner()
    alive = weakref.ref(owner)
    d = sm.DeviceArray(FAKE, (2, 3, 5), np.complex64, 2, owner, strides=(8, 16, 48))
    cap = d.__dlpack__(stream=7)
    f = sm._symmem._dlpack_fields(cap)
    assert f["data"] == FAKE and f["device"] == (2, 2) and f["dtype"] == (5, 64, 1) and f["byte_offset"] == 0
    assert f["shape"] == [2, 3, 5] and f["strides"] == [1, 2, 6] and f["has_deleter"]
    for dt, code in ((np.int64, (0, 64, 1)), (np.uint8, (1, 8, 1)), (np.float16, (2, 16, 1)), (np.bool_, (6, 8, 1))):
        assert sm._symmem._dlpack_fields(sm.DeviceArray(FAKE, (1,), dt, 0, None).__dlpack__())["dtype"] == code
    with pytest.raises(BufferError):
        d.__dlpack__(dl_device=(1, 0))
    # The capsule keeps the DeviceArray, and so what it holds, alive until it is released.
    del d, owner
    assert alive() is not None
    del cap
    assert alive() is None


def test_dlpack_capsule_is_read_by_a_real_consumer():
    # The same capsule code, on host memory (kDLCPU), read back by NumPy's DLPack importer.
    src = np.arange(12, dtype=np.float64).reshape(3, 4)[:, ::2]  # strided: (32, 16) bytes

    class Cpu:
        def __dlpack__(self, stream=None, **kw):
            return sm._symmem._dlpack_capsule(src, src.ctypes.data, list(src.shape),
                                              [s // 8 for s in src.strides], 2, 64, 1, 0)

        def __dlpack_device__(self):
            return (1, 0)

    out = np.from_dlpack(Cpu())
    assert out.shape == (3, 2) and out.strides == (32, 16) and (out == src).all()
    assert out.ctypes.data == src.ctypes.data  # no copy


def test_host_calls_on_device_memory_reach_the_core_without_touching_it():
    # A fake device address, in no device heap (there is none here): each call must end in
    # a clear error from the core's device route or from the binding, never in a host
    # memcpy or a load through the pointer (which would crash the test).
    d = sm.DeviceArray(0x10, (4,), np.float64, 0, None)
    host = sm.zeros(4)
    buf = np.zeros(4)
    # The symmetric side on the device: the core's device route reports the address.
    for call in (lambda: sm.put(d, buf, 0), lambda: sm.get(buf, d, 0), lambda: sm.put_nbi(d, host, 0),
                 lambda: sm.p(d, 1.0, 0, index=0), lambda: sm.g(d, 0, index=3)):
        with pytest.raises(sm.InvalidArgument, match=r"put_device|get_device") as e:
            call()
        assert "is not in the device heap" in str(e.value), e.value
    # Device memory on the local side, host memory on the symmetric side: refused before the core.
    for call in (lambda: sm.put(host, d, 0), lambda: sm.get(d, host, 0)):
        with pytest.raises(sm.DeviceNotSupported, match="symmetric side must be in the device heap") as e:
            call()
        assert isinstance(e.value, NotImplementedError)
    # Atomics and waits: the symmetric check, which reads no memory either.
    u = sm.DeviceArray(0x40, (2,), np.uint64, 0, None)
    for call in (lambda: sm.atomic_add(u, 1, 0, index=0), lambda: sm.atomic_fetch(u, 0, index=1),
                 lambda: sm.test(u, "==", 0, index=0), lambda: sm.signal_fetch(u, index=0)):
        with pytest.raises(sm.NotSymmetricError):
            call()
    # What the core does not take on device memory: refused here, before any call.
    for call in (lambda: sm.array(d), lambda: sm.wait_until_all(u, "==", 0), lambda: sm.iput(d, buf, 0),
                 lambda: sm.alltoalls(d, d), lambda: sm.inscan(d, d), lambda: sm.allgather(d)):
        with pytest.raises(sm.DeviceNotSupported):
            call()
    with pytest.raises(sm.NotSymmetricError):
        sm.free(d)
    sm.free(host)


def test_collectives_on_device_memory_take_the_stream_forms():
    # Without a device heap the core's stream-ordered forms say so (they were reached, with
    # the arguments checked here first); no kernel is launched and nothing is read.
    d = sm.DeviceArray(FAKE, (8,), np.float32, 0, None)
    s = sm.DeviceArray(FAKE + 4096, (8,), np.float32, 0, None)
    for call in (lambda: sm.reduce(d, s), lambda: sm.reduce(d, s, "max", stream=5), lambda: sm.allreduce(d),
                 lambda: sm.broadcast(d, s, 0), lambda: sm.bcast(d), lambda: sm.fcollect(d, s),
                 lambda: sm.alltoall(d, s), lambda: sm.reduce_scatter(d, s),
                 lambda: sm.barrier(stream=0), lambda: sm.TEAM_WORLD.sync(stream=0),
                 lambda: sm.TEAM_WORLD.reduce(d, s, op="min", stream=0)):
        with pytest.raises(sm.StateError, match="no device heap: make one with shmem_malloc_with_hints"):
            call()
    # Checked here, before the core: mixed memories, dtypes and ops the device kernels lack.
    host = sm.zeros(8, np.float32)
    with pytest.raises(sm.DeviceNotSupported, match="host memory"):
        sm.reduce(host, s)
    with pytest.raises(sm.DeviceNotSupported, match="host memory"):
        sm.broadcast(d, host, 0)
    with pytest.raises(sm.DTypeError, match="float32, float16, bfloat16, int32, int64"):
        sm.reduce(sm.DeviceArray(FAKE, (8,), np.float64, 0, None), sm.DeviceArray(FAKE, (8,), np.float64, 0, None))
    with pytest.raises(sm.DTypeError, match="prod"):
        sm.reduce(d, s, "prod")  # prod: integers only on the device
    with pytest.raises(sm.DTypeError, match="'and'"):
        sm.reduce(d, s, "and")
    with pytest.raises(sm.ShapeError):
        sm.reduce_scatter(d, sm.DeviceArray(FAKE, (7,), np.float32, 0, None))  # src: n_pes blocks of 8
    with pytest.raises(sm.InvalidArgument, match="reduce_scatter: takes CUDA tensors"):
        sm.reduce_scatter(host, host)
    # The host barrier is unchanged without stream=.
    sm.barrier()
    sm.free(host)


def test_stream_of_a_device_collective():
    from symmem._device import stream_for

    class TorchStream:
        cuda_stream = 0x1234

    class CupyStream:
        ptr = 0x5678

    d = sm.DeviceArray(FAKE, (1,), np.int32, 0, None)
    assert stream_for(d) == 0 and stream_for(d, 7) == 7
    assert stream_for(d, TorchStream()) == 0x1234 and stream_for(d, CupyStream()) == 0x5678


def test_cpu_tensors_are_not_device_objects():
    # torch.Tensor defines __cuda_array_interface__ on the class for every tensor (CPU ones
    # raise); a CPU tensor must stay a host argument. Stand-ins with torch's shape:
    from types import SimpleNamespace
    from symmem._device import is_device_object

    class Tensor:
        __module__ = "torch"

        def __init__(self, kind):
            self.device = SimpleNamespace(type=kind)

        @property
        def __cuda_array_interface__(self):
            raise AttributeError("Can't get __cuda_array_interface__ on non-CUDA tensor")

    assert not is_device_object(Tensor("cpu")) and is_device_object(Tensor("cuda"))
    assert not is_device_object(np.zeros(2)) and is_device_object(sm.DeviceArray(FAKE, (1,), np.uint8, 0, None))
