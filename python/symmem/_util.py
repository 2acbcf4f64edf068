"""Conversions the native layer calls for arguments that are not NumPy arrays."""
import numpy as np

from ._errors import DeviceNotSupported


def _on_device(obj, where):
    raise DeviceNotSupported("this call takes host memory only: the argument is on %s (put, get, p, g, atomics, "
                             "signals, wait_until/test on one element and the collectives take CUDA tensors; "
                             "vector waits, locks, strided iput/iget, collect, alltoalls, scans do not; "
                             "docs/python.md)" % where)


def as_view(obj):
    """as_array(obj), or for a device object (CUDA tensor, __cuda_array_interface__) its
    geometry (ptr, shape, byte strides, kind, itemsize) without touching its memory."""
    if isinstance(obj, np.ndarray):
        return obj
    from . import _device
    if _device.is_device_object(obj):
        return _device.geometry(obj)
    return as_array(obj)


def as_array(obj):
    """A NumPy view of obj without copying when it has memory (torch tensor, buffer); a new
    array for Python scalars and lists (sources only: they cannot be destinations)."""
    if isinstance(obj, np.ndarray):
        return obj
    mod = type(obj).__module__
    if mod.startswith("torch"):
        if obj.device.type != "cpu":
            _on_device(obj, obj.device)
        return obj.detach().numpy()
    if hasattr(obj, "__cuda_array_interface__"):
        _on_device(obj, "a GPU (__cuda_array_interface__)")
    if hasattr(obj, "__array_interface__") or hasattr(obj, "__array__"):
        return np.asarray(obj)
    try:
        m = memoryview(obj)
    except TypeError:
        return np.asarray(obj)
    return np.frombuffer(m, dtype=np.uint8) if m.format in ("B", "b", "c") and m.ndim <= 1 else np.asarray(m)
