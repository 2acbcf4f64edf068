"""Device (GPU) arrays: what symmem.zeros(..., device="cuda") returns.

A DeviceArray describes memory in symmem's device heap (pointer, shape, byte strides, dtype,
GPU ordinal) and hands it to GPU libraries without copying: __cuda_array_interface__
(version 3, for CuPy and Numba) and __dlpack__ / __dlpack_device__ (for torch, CuPy, JAX).
When torch is importable the constructors return torch.from_dlpack(DeviceArray) instead: a
torch CUDA tensor whose storage keeps the DeviceArray, and so the symmetric block, alive.

Nothing here reads or writes device memory from the CPU: the objects only carry the
pointer. Initial contents are written by the library through the CUDA driver.
"""
import numpy as np

from . import _symmem
from ._errors import DTypeError, InvalidArgument

KDL_CPU, KDL_CUDA = 1, 2
# DLPack type codes of NumPy kinds: kDLInt, kDLUInt, kDLFloat, kDLComplex, kDLBool.
_DL_CODE = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}


def parse_device(device):
    """device= of a constructor: None/"cpu" -> None; "cuda" -> -1; "cuda:N" -> N (a torch.device too)."""
    if device is None:
        return None
    text = str(device).strip().lower()
    if text == "cpu":
        return None
    if text == "cuda":
        return -1
    if text.startswith("cuda:") and text[5:].isdigit():
        return int(text[5:])
    raise InvalidArgument("device=%r: use \"cpu\" (the default), \"cuda\" or \"cuda:N\" (N: this PE's GPU)" % (device,))


def dlpack_dtype(dtype):
    """(DLPack type code, bits) of a NumPy dtype."""
    dtype = np.dtype(dtype)
    code = _DL_CODE.get(dtype.kind)
    if code is None or dtype.byteorder == ">" or dtype.fields is not None:
        raise DTypeError("device arrays hold plain numbers (bool, int, uint, float, complex), not %s" % dtype)
    return code, dtype.itemsize * 8


class DeviceArray:
    """An array in device memory: `ptr` (an int), `shape`, `strides` (bytes), `dtype`,
    `device_id` (the GPU ordinal). `owner` keeps the memory alive (the symmetric Block, or
    the array a peer view was made from). It never touches the memory itself."""
    __slots__ = ("ptr", "shape", "strides", "dtype", "device_id", "owner", "__weakref__")

    def __init__(self, ptr, shape, dtype, device_id, owner, strides=None):
        self.dtype = np.dtype(dtype)
        dlpack_dtype(self.dtype)  # checks the dtype
        self.ptr = int(ptr)
        self.shape = tuple(int(s) for s in shape)
        if strides is None:  # C order
            strides, step = [], self.dtype.itemsize
            for s in reversed(self.shape):
                strides.append(step)
                step *= max(s, 1)
            strides = strides[::-1]
        self.strides = tuple(int(s) for s in strides)
        if len(self.strides) != len(self.shape) or any(s % self.dtype.itemsize for s in self.strides):
            raise InvalidArgument("strides %r do not fit shape %r of %s" % (self.strides, self.shape, self.dtype))
        self.device_id = int(device_id)
        self.owner = owner

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def device(self):
        return "cuda:%d" % self.device_id

    def _c_contiguous(self):
        return self.strides == DeviceArray(0, self.shape, self.dtype, 0, None).strides

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "descr": [("", self.dtype.str)],
                "data": (self.ptr, False), "version": 3,
                "strides": None if self._c_contiguous() else self.strides}

    def __dlpack_device__(self):
        return (KDL_CUDA, self.device_id)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        # The memory was written (and synchronized) before the allocation returned: no stream
        # has work on it that a consumer's stream must wait for.
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError("a symmem device array lives on %s; dl_device=%r asks for a copy" % (self.device, dl_device))
        if copy:
            raise BufferError("symmem device arrays are exported without copying (copy=True is not supported)")
        code, bits = dlpack_dtype(self.dtype)
        item = self.dtype.itemsize
        return _symmem._dlpack_capsule(self, self.ptr, list(self.shape), [s // item for s in self.strides], code, bits,
                                       KDL_CUDA, self.device_id)

    def __repr__(self):
        return "<symmem.DeviceArray %s %s on %s at 0x%x>" % (self.shape, self.dtype, self.device, self.ptr)


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def wrap(d):
    """What a constructor returns: a torch CUDA tensor when torch is importable, else d."""
    torch = _torch()
    if torch is None:
        return d
    return torch.from_dlpack(d)


def is_device_object(x):
    """A torch tensor on a GPU, or anything with __cuda_array_interface__ (CuPy, DeviceArray)."""
    if isinstance(x, DeviceArray):
        return True
    if type(x).__module__.startswith("torch"):
        # torch.Tensor has the property on every tensor; it answers only for CUDA ones.
        return getattr(getattr(x, "device", None), "type", "cpu") != "cpu"
    try:
        return hasattr(x, "__cuda_array_interface__")
    except Exception:  # a property that raises something other than AttributeError
        return False


def describe(x):
    """(ptr, shape, byte strides, numpy dtype) of a device object."""
    if isinstance(x, DeviceArray):
        return x.ptr, x.shape, x.strides, x.dtype
    if type(x).__module__.startswith("torch"):
        dtype = np.dtype(str(x.dtype).replace("torch.", ""))
        return x.data_ptr(), tuple(x.shape), tuple(s * dtype.itemsize for s in x.stride()), dtype
    cai = x.__cuda_array_interface__
    dtype = np.dtype(cai["typestr"])
    shape = tuple(cai["shape"])
    strides = cai.get("strides") or DeviceArray(0, shape, dtype, 0, None).strides
    return cai["data"][0], shape, tuple(strides), dtype


def geometry(x):
    """(ptr, shape, byte strides, kind, itemsize) of a device object, as the native layer
    takes it: kind is NumPy's ('f', 'i', 'u', 'c'; bool as 'u') or 'B' for bfloat16, which
    NumPy has not. Reads no device memory."""
    if type(x).__module__.startswith("torch") and str(x.dtype) == "torch.bfloat16":
        return x.data_ptr(), tuple(x.shape), tuple(s * 2 for s in x.stride()), "B", 2
    ptr, shape, strides, dtype = describe(x)
    kind = "u" if dtype.kind == "b" else dtype.kind
    if kind not in "fiuc" or dtype.byteorder == ">":
        raise DTypeError("device arrays of dtype %s cannot be moved between PEs" % dtype)
    return int(ptr), tuple(int(s) for s in shape), tuple(int(s) for s in strides), kind, dtype.itemsize


def stream_for(x, stream=None):
    """The CUstream (an int; 0: the default stream) of a collective on device memory:
    `stream` when given (an int, a torch.cuda.Stream, a CuPy stream), else torch's current
    stream on x's device when x is a torch tensor, else 0."""
    if stream is not None:
        for attr in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
            if hasattr(stream, attr):
                return int(getattr(stream, attr))
        return int(stream)
    if type(x).__module__.startswith("torch"):
        torch = _torch()
        if torch is not None:
            return int(torch.cuda.current_stream(x.device).cuda_stream)
    return 0


def extent(shape, strides, itemsize):
    """(lowest, one past the highest) byte offset a strided array touches."""
    if any(s == 0 for s in shape):
        return 0, 0
    lo = hi = 0
    for n, st in zip(shape, strides):
        e = (n - 1) * st
        if e < 0:
            lo += e
        else:
            hi += e
    return lo, hi + itemsize
