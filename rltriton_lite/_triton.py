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


class Launcher:
    """``kernel[grid](*args, *constexprs, num_warps=...)``, with the compiled kernel cached per
    specialisation and its launcher called directly on later calls.

    Triton's own path binds and specialises every leaf argument in Python on each launch (about
    45 leaves here; docs/DESIGN.md, "Launch path"). This keys its cache on what Triton
    specialises on, or finer: each tensor's dtype and address mod 16, each integer's value mod 16
    and whether it is 1 or fits 32 bits, strides as they are, parameters by type (a float is never
    specialised, an int is), constexprs and warps as they are, and the current device. A first
    call of a key goes through Triton (compiling if needed) and stores the compiled kernel.

    ``kinds`` names each runtime argument: ``T`` a tuple of tensors, None or tuples of them,
    ``S`` a tuple of stride pairs, ``P`` a tuple of Python scalars, ``t`` a tensor or None, ``i``
    an int. Off under the interpreter, with a launch hook installed (a profiler), or with a Triton
    whose compiled kernels do not look as expected: then every launch takes Triton's path.
    """

    MAX_ENTRIES = 4096  # a bound for callers whose strides change with every call

    def __init__(self, kernel, kinds: str):
        self.kernel = kernel
        self.kinds = kinds
        self.cache = {}

    def _key(self, args, constexprs, num_warps):
        key = [constexprs, num_warps, _driver().get_current_device()]
        for kind, a in zip(self.kinds, args):
            if kind == "T":
                key.append(tuple(None if x is None else _tensors_key(x) for x in a))
            elif kind == "t":
                key.append(None if a is None else (a.dtype, a.data_ptr() & 15))
            elif kind == "P":
                key.append(tuple(float if type(p) is float else (type(p), p) for p in a))
            elif kind == "i":
                key.append((a == 1, a & 15, -0x80000000 <= a < 0x80000000))
            else:  # "S"
                key.append(a)
        return tuple(key)

    def __call__(self, grid, args, constexprs, num_warps):
        if not FAST_LAUNCH or _hooks_installed():
            return self.kernel[grid](*args, *constexprs, num_warps=num_warps)
        key = self._key(args, constexprs, num_warps)
        compiled = self.cache.get(key)
        if compiled is None:
            if len(args) != len(self.kinds):
                raise TypeError(f"{len(args)} runtime arguments for {len(self.kinds)} kinds {self.kinds!r}")
            compiled = self.kernel[grid](*args, *constexprs, num_warps=num_warps)
            if len(self.cache) >= self.MAX_ENTRIES:
                self.cache.clear()
            self.cache[key] = compiled
            return compiled
        driver = _driver()
        compiled.run(grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1,
                     driver.get_current_stream(key[2]), compiled.function, compiled.packed_metadata,
                     None, None, None, *args, *constexprs)
        return compiled


def _tensors_key(x):
    """(dtype, address mod 16) of a tensor; the same for each member of a tuple of them (an
    entry of X may group several tensors, e.g. SAC's ensemble of Q heads)."""
    if type(x) is tuple:
        return tuple(None if y is None else _tensors_key(y) for y in x)
    return x.dtype, x.data_ptr() & 15


def _driver():
    return triton.runtime.driver.active


def _hooks_installed() -> bool:
    """A launch hook (a profiler such as proton) wants Triton's own path. Triton 3.6 keeps the
    hooks in a chain, empty unless one is added; older versions use None."""
    rt = triton.knobs.runtime
    return any(h is not None and getattr(h, "calls", True) for h in (rt.launch_enter_hook, rt.launch_exit_hook))


def _fast_launch_supported() -> bool:
    """Triton 3.4 to 3.9 (checked: 3.6 and 3.9) launch a compiled kernel as
    ``run(grid, stream, function, packed_metadata, launch_metadata, hooks, *args)``."""
    if not HAS_TRITON or INTERPRET:
        return False
    try:
        from triton.compiler.compiler import CompiledKernel

        return hasattr(triton, "knobs") and all(hasattr(CompiledKernel, a) for a in ("run", "launch_metadata")) \
            and tuple(int(v) for v in triton.__version__.split(".")[:2]) >= (3, 4)
    except Exception:  # noqa: BLE001 - any surprise: take Triton's own path
        return False


# Set to False to send every launch through Triton's own path.
FAST_LAUNCH = _fast_launch_supported()
