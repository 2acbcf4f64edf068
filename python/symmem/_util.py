"""Conversions the native layer calls for arguments that are not NumPy arrays."""
import numpy as np


def as_array(obj):
    """A NumPy view of obj without copying when it has memory (torch tensor, buffer); a new
    array for Python scalars and lists (sources only: they cannot be destinations)."""
    if isinstance(obj, np.ndarray):
        return obj
    mod = type(obj).__module__
    if mod.startswith("torch"):
        if obj.device.type != "cpu":
            raise TypeError("symmem takes CPU tensors (this one is on %s)" % obj.device)
        return obj.detach().numpy()
    if hasattr(obj, "__array_interface__") or hasattr(obj, "__array__"):
        return np.asarray(obj)
    try:
        m = memoryview(obj)
    except TypeError:
        return np.asarray(obj)
    return np.frombuffer(m, dtype=np.uint8) if m.format in ("B", "b", "c") and m.ndim <= 1 else np.asarray(m)
