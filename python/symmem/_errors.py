"""The exceptions of symmem: one family (symmem.Error), each also the builtin a Python
program would catch (MemoryError, ValueError, TypeError, IndexError, TimeoutError)."""

__all__ = ["Error", "InitError", "StateError", "HeapExhausted", "InvalidArgument", "NotSymmetricError",
           "ShapeError", "DTypeError", "PEError", "Timeout", "SymmetryError", "DeviceUnavailable",
           "DeviceNotSupported"]


class Error(RuntimeError):
    """Base class of every symmem error."""


class InitError(Error):
    """The job could not be joined (store unreachable, wrong secret, bad launcher environment)."""


class StateError(Error):
    """The call is not valid now: before init(), after finalize(), on a destroyed team or freed block."""


class HeapExhausted(Error, MemoryError):
    """The symmetric heap cannot hold the allocation (message: heap size, used, asked, what to raise)."""


class InvalidArgument(Error, ValueError):
    """A bad value (read-only destination, bad stride, bad op name, ...)."""


class NotSymmetricError(InvalidArgument):
    """An array or address that must be in symmetric memory is not."""


class ShapeError(InvalidArgument):
    """Shapes or element counts do not fit (never truncated silently)."""


class DTypeError(Error, TypeError):
    """Wrong or unsupported dtype for the operation."""


class PEError(Error, IndexError):
    """A PE number (or team member, root) out of range."""


class Timeout(Error, TimeoutError):
    """A blocking call passed its timeout; the message names the PEs that never arrived."""


class SymmetryError(Error, ValueError):
    """PEs disagree: a collective allocation differs across PEs (message: both call sites)."""


class DeviceUnavailable(Error):
    """device="cuda" failed on every PE: some PE has no usable GPU (no driver, no device, a
    build without the CUDA route, a job spanning nodes) or the device heap is full; the
    message is the library's reason. The job goes on."""


class DeviceNotSupported(Error, NotImplementedError):
    """A call that would touch device (GPU) memory from the CPU: host put/get, atomics and
    collectives on CUDA tensors are not implemented yet (docs/device.md)."""
