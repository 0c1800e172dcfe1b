"""gizml: exact neural-network ops, the same bits on the CPU and on an NVIDIA GPU.

The C++ API under its own names (one spelling): ``gizml.Tensor``, ``gizml.Key``, ``gizml.DType``,
``gizml.Device``, ``gizml.Gpu``, ``gizml.lazyMatmul(a, w).bias(b).gelu().store()``,
``gizml.netops.layerNorm(x, w, b, eps)``, ... Every precondition fails with ``gizml.Error`` and
the C++ message. ``gizml.from_dlpack`` / ``torch.from_dlpack`` / ``numpy.from_dlpack`` exchange
memory with no copy; ``gizml.torch`` has autograd functions and ``nn.Module`` s over the ops.
"""

import sys as _sys

from . import _gizml
from ._gizml import *  # noqa: F401,F403  (Tensor, Key, DType, Device, Gpu, Lazy, Error, ...)
from ._gizml import Error, Tensor, from_dlpack, netops

# `import gizml.netops` and `from gizml.netops import layerNorm` find the extension's submodule.
_sys.modules[__name__ + ".netops"] = netops

__all__ = [name for name in dir(_gizml) if not name.startswith("_")] + ["from_dlpack", "netops"]


def numpy(tensor: Tensor):
    """A NumPy array over the tensor's host memory (no copy): ``numpy.from_dlpack(tensor)``."""
    import numpy as np

    return np.from_dlpack(tensor)
