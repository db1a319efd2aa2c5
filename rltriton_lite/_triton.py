"""Import Triton when it is there, and launch kernels: the one module that touches Triton's
internal launch API.

Triton has no wheels for macOS or Windows; there the package still imports and every function
runs its PyTorch path. ``INTERPRET`` is read once, at import, because ``triton.jit`` decides
at decoration time whether a kernel is compiled or interpreted.
"""
import contextlib
import contextvars
import os

import torch

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


def _patch_language_once_per_launch():
    """Triton's interpreter patches ``triton.language`` (an ``inspect.getmembers`` over its
    modules) at a kernel's launch, and again at every call of a ``@triton.jit`` helper inside it,
    though the launch's patch is in force until the launch ends: about 40 % of an interpreted
    kernel here. Skip a helper's patch when the modules it sees are patched already; a helper that
    sees others (Triton's own, which see ``triton.language.core``) patches them, and the launch's
    end restores those too (Triton's helper call never does: the modules stayed patched after the
    launch, and a compile of the kernel then read the interpreter's operations: exercises'
    compile check). Interpreted runs (tests, notebooks, the demo) only."""
    import inspect

    import triton.language as tl
    from triton.runtime import interpreter

    patch = getattr(interpreter, "_patch_lang", None)
    if patch is None or getattr(patch, "once_per_launch", False):
        return

    class _InForce:
        def restore(self):
            pass

    patched = set()  # the language modules patched in the current launch
    helpers = []  # the scopes of the helpers' patches in it, restored at its end
    seen = {}  # a helper's language modules (its module's imports), by helper

    def once(fn):
        langs = seen.get(fn)
        if langs is None:
            langs = seen[fn] = {id(v) for v in fn.__globals__.values() if inspect.ismodule(v) and v in (tl, tl.core)}
        if patched and langs <= patched:
            return _InForce()
        scope = patch(fn)
        # a program id is a 1-element array: Triton 3.6 reads one as a range's bound with int(),
        # which refuses it (3.9 squeezes it first, as here)
        scope.set_attr(tl.core.tensor, "__index__", _index)
        if not patched:  # the launch's own patch: the launch restores it
            restore = scope.restore

            def restore_and_clear():
                patched.clear()
                while helpers:
                    helpers.pop().restore()
                restore()

            scope.restore = restore_and_clear
        else:
            helpers.append(scope)
        patched.update(langs)
        return scope

    once.once_per_launch = True
    interpreter._patch_lang = once


def _index(self):
    return int(self.handle.data.squeeze())


def _scan_whole_arrays():
    """The interpreter runs a ``tl.associative_scan`` whose combine is not a sum or a product one
    element at a time, a Python call of the combine per element: half of an interpreted scan
    kernel's time here. Run it as a Hillis-Steele scan instead: log2(n) calls of the combine on
    whole arrays (element i takes combine(element i - k, element i) for k = 1, 2, 4, ...), the
    same result for an associative combine up to rounding, as a GPU's scan (a tree too). A
    combine that cannot take arrays (Python control flow on its values, where the interpreter
    reads an array as True) gets the element loop."""
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    class _Branches(Exception):
        pass

    def scalar_bool(x):
        if x.handle.data.size != 1:
            raise _Branches
        return bool(x.handle.data)

    scans = getattr(interpreter, "ScanOps", None)
    one_by_one = getattr(scans, "generic_scan", None)
    if one_by_one is None or getattr(one_by_one, "whole_arrays", False):
        return

    def generic_scan(self, input):
        data = [np.array(x.handle.data) for x in input]
        n, axis = data[0].shape[self.axis], self.axis

        def part(lo, hi):
            return (slice(None),) * axis + (slice(lo, hi),)

        read_as_bool = tl.core.tensor.__bool__
        tl.core.tensor.__bool__ = scalar_bool
        try:
            k = 1
            while k < n:
                # whole blocks (a block's length is a power of 2): element i's earlier one is i - k; the
                # first k combine with themselves, and are dropped
                earlier = [self.to_tensor(np.concatenate((d[part(0, k)], d[part(0, n - k)]), axis), x.dtype)
                           for d, x in zip(data, input)]
                out = self.combine_fn.fn(*earlier, *(self.to_tensor(d, x.dtype) for d, x in zip(data, input)))
                for d, o in zip(data, out if isinstance(out, tuple) else (out,)):
                    d[part(k, n)] = o.handle.data[part(k, n)]  # (new arrays: no aliasing)
                k *= 2
        except Exception:  # noqa: BLE001 - a combine for scalars only
            data = None
        finally:
            tl.core.tensor.__bool__ = read_as_bool
        if data is None:  # the interpreter's own loop
            return one_by_one(self, input)
        return [self.to_tensor(d, x.dtype) for d, x in zip(data, input)]

    generic_scan.whole_arrays = True
    generic_scan.one_by_one = one_by_one  # stock Triton's loop: 00b, section 2 runs both
    scans.generic_scan = generic_scan


if HAS_TRITON and INTERPRET:
    _patch_language_once_per_launch()
    _scan_whole_arrays()


def interpreted_on(device) -> bool:
    """Whether kernels on ``device`` run in the interpreter, where a program costs its operations
    whatever its width (the planners then take fewer, wider programs)."""
    return INTERPRET and device.type == "cpu"


_FAKING = contextvars.ContextVar("rltriton_lite_faking", default=False)


@contextlib.contextmanager
def faking():
    """Run the launchers without launching: a custom op's fake runs its real code so (its
    outputs' shapes, dtypes and strides are then the real ones)."""
    token = _FAKING.set(True)
    try:
        yield
    finally:
        _FAKING.reset(token)


def is_faking() -> bool:
    return _FAKING.get()


class Launch:
    """One planned launch: ``kernel[grid](*args, *constexprs, num_warps=num_warps)``.

    The caller's plan fixes the grid, the constexprs and everything else Triton specialises on
    (dtypes, 16-byte alignment, integer values, strides), so the compiled kernel never changes:
    the first call goes through Triton (which binds every argument in Python, and compiles),
    then launches the compiled kernel it got once more and compares what it wrote (the
    arguments at ``writes``) by a checksum of the bits. If they agree, later calls launch it directly
    (``CompiledKernel.run``, as torch inductor's launchers do); if not, or under the
    interpreter, during CUDA-graph capture, with a launch hook (a profiler) or a Triton whose
    ``run`` differs, every call takes Triton's path.
    """

    __slots__ = ("kernel", "grid", "constexprs", "num_warps", "writes", "compiled", "device")

    def __init__(self, kernel, grid, constexprs, num_warps, writes):
        self.kernel, self.constexprs, self.num_warps, self.writes = kernel, tuple(constexprs), num_warps, writes
        self.grid = tuple(grid) + (1,) * (3 - len(grid))
        self.compiled = None  # the checked compiled kernel; None: not checked yet; False: Triton's path
        self.device = None

    def __call__(self, *args):
        c = self.compiled
        if c and not _hooks_installed():
            device = _driver().get_current_device()
            if device == self.device:
                return self._run(c, device, args)
        compiled = self.kernel[self.grid](*args, *self.constexprs, num_warps=self.num_warps)
        if c is None and FAST_LAUNCH and not _capturing():
            self.device = _driver().get_current_device()
            self.compiled = compiled if self._agrees(compiled, args) else False

    def _run(self, c, device, args):
        g = self.grid
        c.run(g[0], g[1], g[2], _driver().get_current_stream(device), c.function, c.packed_metadata, None, None,
              None, *args, *self.constexprs)

    def _agrees(self, compiled, args) -> bool:
        """Launch ``compiled`` directly after Triton did: the same bits written (by a checksum:
        a copy of the outputs would double a first call's memory)?"""
        written = [x for i in self.writes for x in _tensors(args[i])]
        expected = [_checksum(x) for x in written]
        try:
            self._run(compiled, self.device, args)
            return all(bool(_checksum(x) == e) for x, e in zip(written, expected))
        except Exception:  # noqa: BLE001 - any surprise: keep Triton's path
            return False


def _checksum(x):
    """The sum of a tensor's bit patterns, as integers of its width (wrapping: no wider copy)."""
    bits = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()]
    return x.view(bits).sum(dtype=bits)


def _tensors(x):
    """The tensors in an argument: itself, or the members of a (nested) tuple."""
    if type(x) is tuple:
        return [t for y in x for t in _tensors(y)]
    return [] if x is None else [x]


def _capturing() -> bool:
    return torch.cuda.is_current_stream_capturing()


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
            and (3, 4) <= tuple(int(v) for v in triton.__version__.split(".")[:2]) < (3, 10)
    except Exception:  # noqa: BLE001 - any surprise: take Triton's own path
        return False


# Set to False to send every launch through Triton's own path.
FAST_LAUNCH = _fast_launch_supported()
