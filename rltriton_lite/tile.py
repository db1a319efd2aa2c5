"""Loading and storing a tile of steps: what the scan's hooks (and the losses') touch memory with.

A hook sees a tile of time steps: ``row`` ([ROWS, 1, 1] or [ROWS, 1]), ``t`` (the steps) and ``m``
(in bounds). Every per-step input is a pointer and a (row stride, time stride) pair; a time stride
of None marks a per-row input, one value per row. ``pack``/``unpack`` move between a [ROWS, NV, V]
tile and the V steps of each thread's vector, in registers.
"""
from __future__ import annotations

from ._triton import HAS_TRITON, INTERPRET, jit, tl

# For the kernels: whether they run under the interpreter (a compile-time constant)
_INTERPRETED = tl.constexpr(INTERPRET) if HAS_TRITON else INTERPRET


@jit
def _split4(x, ROWS: tl.constexpr, NV: tl.constexpr):
    """The 4 elements of each vector of a [ROWS, NV, 4] tile, in order: step 2q + r sits at (q, r)
    of [..., 2, 2]."""
    e, o = tl.split(tl.reshape(x, [ROWS, NV, 2, 2]))
    x0, x2 = tl.split(e)
    x1, x3 = tl.split(o)
    return x0, x1, x2, x3


@jit
def _join4(x0, x1, x2, x3, ROWS: tl.constexpr, NV: tl.constexpr):
    """The inverse of ``_split4``."""
    return tl.reshape(tl.join(tl.join(x0, x2), tl.join(x1, x3)), [ROWS, NV, 4])


@jit
def unpack(x, ROWS: tl.constexpr, NV: tl.constexpr, V: tl.constexpr, REVERSE: tl.constexpr):
    """The ``V`` steps of each vector of a [ROWS, NV, V] tile as ``V`` [ROWS, NV] tensors, in scan
    order (the last step first in a reverse scan). A vector is in one thread's registers, so this
    moves no data (``tl.split`` of a dim of size 2 that a thread holds)."""
    if V == 4:
        x0, x1, x2, x3 = _split4(x, ROWS, NV)
        if REVERSE:
            return x3, x2, x1, x0
        else:
            return x0, x1, x2, x3
    else:  # V == 8: the even steps and the odd ones, each a vector of 4
        e, o = tl.split(tl.reshape(x, [ROWS, NV, 4, 2]))
        x0, x2, x4, x6 = _split4(e, ROWS, NV)
        x1, x3, x5, x7 = _split4(o, ROWS, NV)
        if REVERSE:
            return x7, x6, x5, x4, x3, x2, x1, x0
        else:
            return x0, x1, x2, x3, x4, x5, x6, x7


@jit
def pack(x, ROWS: tl.constexpr, NV: tl.constexpr, V: tl.constexpr, REVERSE: tl.constexpr):
    """The inverse of ``_unpack``."""
    if V == 4:
        if REVERSE:
            x = (x[3], x[2], x[1], x[0])
        return _join4(x[0], x[1], x[2], x[3], ROWS, NV)
    else:
        if REVERSE:
            x = (x[7], x[6], x[5], x[4], x[3], x[2], x[1], x[0])
        e = _join4(x[0], x[2], x[4], x[6], ROWS, NV)
        o = _join4(x[1], x[3], x[5], x[7], ROWS, NV)
        return tl.reshape(tl.join(e, o), [ROWS, NV, 8])


@jit
def load(p, s, row, t, m, other, ACC: tl.constexpr):
    """Load a per-step input at (row, t) as ``ACC``; ``other`` where ``p`` is None or masked.

    ``s`` is the pair (row stride, time stride); a broadcast input has stride 0. A per-row input
    (one value per row, e.g. bootstrap_value) has time stride None: it is loaded once per row
    and broadcast along time, which keeps the tile's layout (a [rows, time] pointer tensor with
    stride 0 in time would look contiguous across rows and force a layout conversion).
    """
    if p is None:
        return other
    elif s[1] is None:
        return tl.where(m, tl.load(p + row * s[0]).to(ACC), other)
    else:
        return tl.load(p + row * s[0] + t * s[1], mask=m, other=other).to(ACC)


@jit
def load_and_step(p, s, row, t, m, T, other, ACC: tl.constexpr, STEP: tl.constexpr):
    """(x_t, x_{t+STEP}), STEP = 1 or -1: a per-step input at (row, t) and one step later or
    earlier; ``other`` where masked (``m``), outside 0 ... T - 1, or where ``p`` is None.

    ``t`` is the hooks' tile of vectors of V consecutive steps ([ROWS or 1, NV, V]). A load at
    t ± 1 would be misaligned, V scalar loads per vector where an aligned vector is one 16-byte
    load (docs/DESIGN.md, "Loads"); here each vector is loaded once, aligned, and shifted by one
    step in its thread's registers, and only the step just past each vector is read on its own.
    The neighbour of an in-bounds step is read whatever ``m`` says of it: callers select. Only
    a time-contiguous input is shifted; in a time-major buffer the neighbouring step is a strided
    load like any other, and the shift would cost registers (the backward's tile spilled)."""
    if p is None:
        return other, other
    else:  # (compiled, statements after a `return` inside a constexpr `if` are still compiled)
        return _load_and_step(p, s, row, t, m, T, other, ACC, STEP)


@jit
def _load_and_step(p, s, row, t, m, T, other, ACC: tl.constexpr, STEP: tl.constexpr):
    if _INTERPRETED:  # strides are values here, not specialised
        contiguous = s[1] == 1
    elif isinstance(s[1], tl.tensor):  # a stride known at run time only
        contiguous = False
    else:  # Triton specialises an integer argument equal to 1 as a constant
        contiguous = s[1] == 1
    if not contiguous:  # time-major: the neighbouring step is a strided load like any other
        if STEP == 1:
            m_step = m & (t + 1 < T)
        else:
            m_step = m & (t >= 1)
        return load(p, s, row, t, m, other, ACC), load(p, s, row, t + STEP, m_step, other, ACC)
    else:
        x = load(p, s, row, t, m, other, ACC)
        ROWS: tl.constexpr = x.shape[0]  # t may have one row, broadcast over the tile's rows
        NV: tl.constexpr = x.shape[1]
        V: tl.constexpr = x.shape[2]
        any_m = tl.max(m.to(tl.int32), axis=2, keep_dims=True) != 0
        if STEP == 1:
            t_edge = tl.max(t, axis=2, keep_dims=True) + 1  # the step after each vector
            m_edge = any_m & (t_edge < T)
        else:
            t_edge = tl.min(t, axis=2, keep_dims=True) - 1  # the step before each vector
            m_edge = any_m & (t_edge >= 0)
        edge = load(p, s, row, t_edge, m_edge, other, ACC)
        edge = tl.sum(edge, axis=2)  # [ROWS, NV] as the vectors' steps are (a reshape would move data)
        xs = unpack(x, ROWS, NV, V, False)  # the vector's steps, ascending in time
        if STEP == 1:
            shifted = xs[1:] + (edge,)
        else:
            shifted = (edge,) + xs[:V - 1]
        return x, pack(shifted, ROWS, NV, V, False)


@jit
def load_flag(p, s, row, t, m):
    """Load a flag (bool, integer or float) as int1; False where absent."""
    if p is None:
        return m & False
    else:
        return tl.load(p + row * s[0] + t * s[1], mask=m, other=0) != 0


@jit
def load_mask(p, s, row, t, m):
    """The steps that take part: in bounds and, if a mask is given, not padding."""
    if p is None:
        return m
    else:
        return m & (tl.load(p + row * s[0] + t * s[1], mask=m, other=0) != 0)


@jit
def coef(p, s, scalar, row, t, m, ACC: tl.constexpr):
    """A coefficient such as gamma: a tensor when ``p`` is given, else the scalar ``scalar``."""
    if p is None:
        return scalar
    else:
        return tl.load(p + row * s[0] + t * s[1], mask=m, other=0.0).to(ACC)


@jit
def store(p, s, row, t, m, value):
    """Store ``value`` at (row, t), cast to the output's dtype. For a per-row output (time stride
    None) ``m`` selects at most one step per row, whose value is stored."""
    if s[1] is None:
        v = tl.sum(tl.sum(tl.where(m, value, 0.0), axis=2, keep_dims=True), axis=1, keep_dims=True)
        any_m = tl.max(tl.max(m.to(tl.int32), axis=2, keep_dims=True), axis=1, keep_dims=True) != 0
        tl.store(p + row * s[0], v.to(p.dtype.element_ty), mask=any_m)
    else:
        tl.store(p + row * s[0] + t * s[1], value.to(p.dtype.element_ty), mask=m)
