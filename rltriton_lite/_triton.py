"""Import Triton when it is there, and say how kernels will run.

Triton has no wheels for macOS or Windows; there the package still imports and every function
runs its PyTorch path. ``INTERPRET`` is read once, at import, because ``triton.jit`` decides
at decoration time whether a kernel is compiled or interpreted.
"""
import os

INTERPRET = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")

try:
    import triton
    import triton.language as tl

    HAS_TRITON = True
    jit = triton.jit
except ImportError:  # pragma: no cover - exercised on machines without a Triton wheel
    triton = None
    HAS_TRITON = False

    class _NoTriton:
        """Just enough of ``triton.language`` for the kernel modules to be defined."""

        constexpr = None
        float32 = "float32"
        float64 = "float64"

    tl = _NoTriton()

    def jit(fn):
        return fn
