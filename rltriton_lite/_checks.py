"""Argument validation, broadcasting and the (rows, time) view every kernel works on.

Every public function validates with these helpers, so a wrong argument gets the same kind of
message everywhere: a ``TypeError`` or ``ValueError`` that names the argument and says what was
expected. Nothing here copies an input unless its layout cannot be viewed as rows × time.
"""
from __future__ import annotations

import functools
import math
import numbers

import numpy as np
import torch

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
FLAG_DTYPES = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64) + FLOAT_DTYPES
BACKENDS = ("auto", "triton", "torch")


def numpy_io(fn):
    """Let a public function take NumPy arrays (SB3 keeps its buffers as arrays): they become CPU
    tensors without a copy, and tensors in the result come back as arrays."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        for a in (*args, *kwargs.values()):
            if type(a) is np.ndarray or (type(a) in (list, tuple) and any(type(x) is np.ndarray for x in a)):
                break
        else:  # no array: the common case, one loop over the arguments
            return fn(*args, **kwargs)
        return _to_numpy(fn(*_from_numpy(args), **dict(zip(kwargs, _from_numpy(kwargs.values())))))
    return call


def _from_numpy(values):
    return [torch.from_numpy(v) if type(v) is np.ndarray else
            type(v)(_from_numpy(v)) if type(v) in (list, tuple) else v for v in values]


def _to_numpy(out):
    if isinstance(out, torch.Tensor):
        return out.detach().numpy()
    if isinstance(out, tuple):  # the NamedTuple outputs
        return type(out)(*map(_to_numpy, out)) if hasattr(out, "_fields") else tuple(map(_to_numpy, out))
    return out


def _shape(shape) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def float_tensor(name: str, x, *, like: torch.Tensor | None = None) -> torch.Tensor:
    """``x`` must be a floating-point tensor, on ``like``'s device if given."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in FLOAT_DTYPES:
        raise TypeError(
            f"{name} must be a floating-point tensor (float16, bfloat16, float32 or float64), "
            f"got {x.dtype}"
        )
    if like is not None:
        same_device(name, x, like)
    return x


def same_device(name: str, x: torch.Tensor, like: torch.Tensor) -> None:
    if x.device != like.device:
        raise ValueError(f"{name} is on {x.device} but the other inputs are on {like.device}")


def time_dim(time_dim, x: torch.Tensor, name: str = "rewards") -> int:
    """Normalise ``time_dim`` for ``x`` (the argument ``name``); the time axis must exist."""
    if type(time_dim) is not int and (isinstance(time_dim, bool) or not isinstance(time_dim, numbers.Integral)):
        raise TypeError(f"time_dim must be an int, got {type(time_dim).__name__}")
    if x.dim() == 0:
        raise ValueError(f"{name} needs a time dimension (time_dim={time_dim}): got a 0-d tensor")
    if not -x.dim() <= time_dim < x.dim():
        raise ValueError(f"time_dim={time_dim} is out of range for a {x.dim()}-d input of shape {_shape(x.shape)}")
    return int(time_dim) % x.dim()


def same_shape(name: str, x, like: torch.Tensor, like_name: str) -> torch.Tensor:
    """A per-step float input: same shape and device as ``like``."""
    x = float_tensor(name, x, like=like)
    if x.shape != like.shape:
        raise ValueError(f"{name} must have the shape of {like_name} {_shape(like.shape)}, got {_shape(x.shape)}")
    return x


def flag(name: str, x, like: torch.Tensor, like_name: str = "rewards", exact: bool = False):
    """A per-step flag or mask (bool, integer or float) broadcastable to ``like`` (of its shape if
    ``exact``: the losses' masks); None passes. A float flag must hold 0 or 1, checked where that costs no
    device sync (CPU tensors): then a bool copy is returned."""
    if x is None:
        return None
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of bool, uint8 or float, got {type(x).__name__}")
    if x.dtype not in FLAG_DTYPES:
        raise TypeError(f"{name} must be bool, integer or float, got {x.dtype}")
    same_device(name, x, like)
    if x.shape != like.shape:
        if exact:
            raise ValueError(f"{name} must have the shape of {like_name} {_shape(like.shape)}, got {_shape(x.shape)}")
        x = broadcast(name, x, like.shape)
    if x.is_floating_point() and x.device.type == "cpu" and can_read(x):
        if not bool(((x == 0) | (x == 1)).all()):
            raise ValueError(f"{name} must hold 0 or 1 (a float flag); it has other values (NaN, 0.5, ...)")
        return x != 0  # a new tensor: the call is not planned, so every call checks its values
    return x  # bool included: Triton loads a bool pointer as bytes


def broadcast(name: str, x: torch.Tensor, shape, what=lambda: "") -> torch.Tensor:
    """``x`` expanded (a view, no copy) to ``shape``; ``what()`` says what that shape is, in the error
    (a function: built only on error, since torch.compile cannot trace str() of a symbolic size)."""
    try:
        return x.expand(shape) if x.shape != shape else x
    except RuntimeError:
        raise ValueError(f"{name} of shape {_shape(x.shape)} does not broadcast to {_shape(shape)}{what()}") from None


def unit_interval(name: str, value, like: torch.Tensor):
    """A coefficient in [0, 1]: a number, or a tensor broadcastable to ``like``.

    Returns ``(tensor or None, float)``: the tensor (expanded to ``like``'s shape) when the
    coefficient varies, else None and the number.
    """
    if type(value) is float and 0.0 <= value <= 1.0:  # the common case, first
        return None, value
    if isinstance(value, torch.Tensor):
        if value.dtype not in FLOAT_DTYPES:
            raise TypeError(f"{name} must be a float or a floating-point tensor, got {value.dtype}")
        same_device(name, value, like)
        value = broadcast(name, value, like.shape)
        if can_read(value):  # else the custom op checks at run time (_ops.py)
            in_unit_interval(name, value)
        return value, 0.0
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a float or a tensor, got {type(value).__name__}")
    value = float(value)
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        raise ValueError(f"{name} must lie in [0, 1], got {value}")
    return None, value


def in_unit_interval(name: str, value: torch.Tensor) -> None:
    """The values check of :func:`unit_interval` (it reads the tensor: a device sync)."""
    if value.numel() and not bool(((value >= 0) & (value <= 1)).all()):
        raise ValueError(f"{name} must lie in [0, 1]; the tensor has values outside it")


def can_read(x: torch.Tensor) -> bool:
    """Whether a check may read ``x``'s values now. Not while torch.compile traces (a read would
    break the graph: the custom ops of ``_ops.py`` check at run time instead), nor while a CUDA
    graph is captured (a read synchronises, which capture forbids: the check is skipped)."""
    if torch.compiler.is_compiling():
        return False
    return not (x.is_cuda and torch.cuda.is_current_stream_capturing())


def batch_shape(x: torch.Tensor, time_dim: int):
    return x.shape[:time_dim] + x.shape[time_dim + 1:]


def per_row(name: str, x, like: torch.Tensor, time_dim: int) -> torch.Tensor | None:
    """A per-sequence input such as ``bootstrap_value``: broadcastable to the batch shape, or the
    batch shape with size-1 dims added (SB3's (N, 1), CleanRL's (1, N))."""
    if x is None:
        return None
    x = float_tensor(name, x, like=like)
    batch = batch_shape(like, time_dim)
    if x.shape != batch and x.numel() == math.prod(batch) and [n for n in x.shape if n != 1] == \
            [n for n in batch if n != 1]:
        return x.reshape(batch)
    # (the batch is the input's shape less time_dim's: a wrong time_dim shows here first)
    return broadcast(name, x, batch,
                     lambda: f", the batch shape of a {_shape(like.shape)} input with time along dim {time_dim}")


def backend(name: str) -> str:
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(repr(b) for b in BACKENDS)}, got {name!r}")
    return name


def result_dtype(*xs: torch.Tensor | None) -> torch.dtype:
    """The output dtype: the promoted dtype of the float inputs given."""
    dtype = None
    for x in xs:
        if x is not None:
            dtype = x.dtype if dtype is None else torch.promote_types(dtype, x.dtype)
    return dtype


def acc_dtype(dtype: torch.dtype) -> torch.dtype:
    """Arithmetic runs in float32, or float64 for float64 inputs."""
    return torch.float64 if dtype == torch.float64 else torch.float32


# ---- The rows × time view --------------------------------------------------------------------------
def problem(x: torch.Tensor, time_dim: int):
    """``(shape, T, n_rows)`` of the problem whose output has ``x``'s shape."""
    shape = x.shape
    T = shape[time_dim]
    return shape, T, x.numel() // T if T else math.prod(batch_shape(x, time_dim))


def new_output(like: torch.Tensor, time_dim: int, dtype) -> torch.Tensor:
    """An output shaped like ``like`` and laid out so that its rows × time view needs no copy.

    Time-major (``time_dim=0``) and batch-major (time last) outputs are contiguous; an output
    with time in the middle is a contiguous (batch..., time) buffer seen through ``movedim``.
    (``empty_like`` costs half of ``torch.empty`` with a shape, dtype and device.)
    """
    if time_dim == 0 or time_dim == like.dim() - 1:
        return torch.empty_like(like, dtype=dtype, memory_format=torch.contiguous_format)
    moved = torch.empty_like(like.movedim(time_dim, -1), dtype=dtype, memory_format=torch.contiguous_format)
    return moved.movedim(-1, time_dim)


def rows(x: torch.Tensor | None, shape, time_dim: int):
    """``x`` (of ``shape``, possibly expanded) as a (rows, T) view and its two strides.

    A view when the batch dims can be flattened (always for time first or last and contiguous
    or expanded-by-row inputs); otherwise ``reshape`` copies, which only inputs can take.
    """
    if x is None:
        return None
    if x.dim() <= 2:  # the common layouts: strides straight from the tensor, no view made
        if x.dim() == 1:
            return x, (0, x.stride(0))
        return x, (x.stride(1 - time_dim), x.stride(time_dim))
    T = shape[time_dim]
    v = x.movedim(time_dim, -1).reshape(-1, T)
    return v, (v.stride(0), v.stride(1))


def row_vector(x: torch.Tensor | None, shape, time_dim: int):
    """A per-row input (batch shape) as a contiguous vector and its strides (1, None): the
    kernels' ``load``/``store`` read None as "one value per row"."""
    if x is None:
        return None
    v = x if x.dim() == 1 and x.stride(0) == 1 else x.reshape(-1).contiguous()
    return v, (1, None)


def scalars(values, dtype: torch.dtype, device) -> torch.Tensor:
    """Python numbers as a 1-d tensor on ``device`` made by fill kernels, not a copy from host
    memory (which a CUDA graph could not capture): how float64 coefficients reach the kernels."""
    return torch.cat([torch.full((1,), float(v), dtype=dtype, device=device) for v in values])


def next_power_of_2(n: int) -> int:
    """Host-side twin of ``triton.next_power_of_2`` (a constexpr function there, slower to call)."""
    return 1 << (n - 1).bit_length() if n > 1 else 1


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ---- A call's signature: what its checks and its kernels' plan depend on ---------------------------
def signature(args):
    """A key of ``args`` for the plans that validation and launches make once per signature:
    each tensor's shape, strides, dtype, device and 16-byte alignment (what Triton specialises
    on); a float's type (its value is checked on every call); None, ints, bools and strings as
    they are; tuples and lists member by member. None if an argument is of another kind (the
    call then validates and plans from scratch)."""
    key = []
    for a in args:
        t = type(a)
        if a is None or t is str:
            key.append(a)
        elif t is torch.Tensor or (t is not float and isinstance(a, torch.Tensor)):
            key.append((a.shape, a.stride(), a.dtype, a.device, a.data_ptr() % 16 == 0))
        elif t is float:
            key.append(float)
        elif t is int or t is bool:  # (True == 1: the type tells them apart)
            key.append((t, a))
        elif t is tuple or t is list:
            members = signature(a)
            if members is None:
                return None
            key.append((t, members))
        else:
            return None
    return tuple(key)


# ---- Scalar arguments ------------------------------------------------------------------------------
def real(name: str, value, *, positive: bool = False) -> float:
    """A number ``>= 0`` (``> 0`` if ``positive``); NaN is refused."""
    if type(value) is float and (value > 0.0 if positive else value >= 0.0):  # the common case, first
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a float, got {type(value).__name__}")
    value = float(value)
    if not (value > 0.0 if positive else value >= 0.0):  # also refuses NaN
        raise ValueError(f"{name} must be {'> 0' if positive else '>= 0'}, got {value}")
    return value


def choice(name: str, value, choices) -> str:
    """One of the strings ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}, got {value!r}")
    return value


def flag_arg(name: str, value) -> bool:
    """A Python bool (or NumPy bool)."""
    if not isinstance(value, bool) and type(value).__name__ != "bool_":
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def finite(name: str, value) -> float:
    """A finite number (NaN and ±inf are refused). A 1-element float tensor is read once as a
    constant (``.item()``), as SB3 passes its α; combine with :func:`real` for a sign."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1 or value.dtype not in FLOAT_DTYPES:
            raise TypeError(f"{name} must be a float or a 1-element float tensor, got a {value.dtype} "
                            f"tensor of shape {_shape(value.shape)}")
        if value.is_meta:  # no value to read
            raise ValueError(f"{name} must be a float or a 1-element tensor with a value, got a meta tensor")
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a float, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value
