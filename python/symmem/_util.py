"""Conversions the native layer calls for arguments that are not NumPy arrays."""
import numpy as np

from ._errors import DeviceNotSupported


def _on_device(obj, where):
    raise DeviceNotSupported("symmem's host calls (put, get, atomics, collectives) do not take device memory yet: "
                             "this argument is on %s (use the tensor in kernels, or peer() for a node peer's copy; "
                             "docs/device.md)" % where)


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
