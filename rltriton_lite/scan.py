r"""The one primitive: a chunked scan over affine maps, shared by every algorithm.

Every estimator in this package is the backward recurrence

.. math::

    y_t = b_t + a_t \, y_{t+1}, \qquad y_T = y_{\text{init}}, \qquad t = T-1, \dots, 0

where a step :math:`f_t(y) = a_t y + b_t` is an affine map. Affine maps compose associatively,

.. math::

    (a_1, b_1) \circ (a_2, b_2) = (a_1 a_2,\; b_1 + a_1 b_2), \qquad \text{identity } (1, 0),

so the recurrence is an associative scan. Two more kinds of step complete it:

* a **reset** (an episode end) ignores the carry: :math:`y_t = b_t`. It is a select, not a
  multiplication by zero, so a NaN or Inf after the reset cannot leak into the episode before it;
* a **masked** step (padding) is the identity: the carry passes through and the output is 0.

The kernel walks the time axis in chunks of ``BLOCK`` steps, in scan order (backwards in time
for the forward pass, forwards for the backward pass), scans each chunk in two levels (each
thread composes its own vector of steps in registers; ``tl.associative_scan`` composes the
vectors across threads) and hands the last value of a chunk to the next one as its carry.
An algorithm plugs in as two ``triton.jit`` hooks:

``PROLOGUE(X, SX, P, row, t, m, T, ACC) -> (a, b, reset, valid, keep)``
    loads the algorithm's inputs at time ``t`` and returns the affine step; ``keep`` is a tuple
    of values the epilogue wants (so nothing is read twice).
``EPILOGUE(X, SX, P, O, SO, row, t, m, T, ACC, valid, y, y_prev, keep)``
    writes the outputs from the scanned value ``y`` and ``y_prev``, the value of the step before
    in scan order (``y_{t+1}`` for a reverse scan, ``y_{t-1}`` for a forward one).

The backward pass of :math:`y = \operatorname{scan}(a, b)` is the same scan run the other way:
:math:`g_t = \partial L/\partial y_t + a_{t-1} g_{t-1}`, then :math:`\partial L/\partial b_t = g_t`
and :math:`\partial L/\partial a_t = g_t\, y_{t+1}`. It uses the same kernel with
``REVERSE=False`` and a second pair of hooks.
"""
from __future__ import annotations

import functools

import torch

from . import _checks
from . import _ops, _torch_path
from ._ops import constant, empty, grad_or_none, route, u8
from ._triton import HAS_TRITON, INTERPRET, Launcher, jit, tl
from .config import Config, current

# For the kernels: whether they run under the interpreter (a compile-time constant)
_INTERPRETED = tl.constexpr(INTERPRET) if HAS_TRITON else INTERPRET

__all__ = ["linear_scan"]

# --------------------------------------------------------------------------------------------
# Kernel building blocks
# --------------------------------------------------------------------------------------------
@jit
def combine(a_l, b_l, r_l, a_r, b_r, r_r):
    """Compose two affine steps in scan order.

    ``(a_l, b_l)`` is the map of the steps scanned so far (the later ones, in a reverse scan),
    ``(a_r, b_r)`` the step being added in front of them; ``r`` marks a reset. The composition
    is ``y = b_r + a_r * (b_l + a_l * carry)``, unless the new step resets, in which case the
    steps behind it are ignored (selected away, never multiplied by zero).
    """
    a = tl.where(r_r, a_r, a_r * a_l)
    b = tl.where(r_r, b_r, b_r + a_r * b_l)
    return a, b, r_l | r_r


@jit
def _next_combine(f_l, s_l, n_l, f_r, s_r, n_r):
    """The first two values of a run of steps in scan order: (first, second, has a second).

    Scanned over a chunk's vectors it hands each vector the value at the end of the vector before
    it in scan order: the carry entering the vector.
    """
    return f_r, tl.where(n_r, s_r, f_l), n_r | True


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
def _unpack(x, ROWS: tl.constexpr, NV: tl.constexpr, V: tl.constexpr, REVERSE: tl.constexpr):
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
def _pack(x, ROWS: tl.constexpr, NV: tl.constexpr, V: tl.constexpr, REVERSE: tl.constexpr):
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
def _chain(a, b, r, V: tl.constexpr):
    """Inclusive composition of ``V`` steps given in scan order (tuples of [ROWS, NV] tensors):
    a thread's sequential scan of its vector."""
    a1, b1, r1 = combine(a[0], b[0], r[0], a[1], b[1], r[1])
    a2, b2, r2 = combine(a1, b1, r1, a[2], b[2], r[2])
    a3, b3, r3 = combine(a2, b2, r2, a[3], b[3], r[3])
    if V == 4:
        return (a[0], a1, a2, a3), (b[0], b1, b2, b3), (r[0], r1, r2, r3)
    else:
        a4, b4, r4 = combine(a3, b3, r3, a[4], b[4], r[4])
        a5, b5, r5 = combine(a4, b4, r4, a[5], b[5], r[5])
        a6, b6, r6 = combine(a5, b5, r5, a[6], b[6], r[6])
        a7, b7, r7 = combine(a6, b6, r6, a[7], b[7], r[7])
        return ((a[0], a1, a2, a3, a4, a5, a6, a7), (b[0], b1, b2, b3, b4, b5, b6, b7),
                (r[0], r1, r2, r3, r4, r5, r6, r7))


@jit
def _last(a, b, r, is_last):
    """The composed map (a, b, reset) at the position ``is_last`` marks along axis 1 of a scan's
    result: the whole run's map."""
    return (tl.sum(tl.where(is_last, a, 0.0), axis=1), tl.sum(tl.where(is_last, b, 0.0), axis=1),
            tl.max(tl.where(is_last & r, 1, 0), axis=1) != 0)


@jit
def _value(a, b, r, c_in):
    """The value after the steps composed as (a, b, r), from the carry entering them."""
    return tl.where(r, b, b + a * c_in)


@jit
def _values(a, b, r, c_in, V: tl.constexpr):
    """(y, y_prev) of each step of a vector (tuples, scan order) from the carry entering it."""
    y0 = _value(a[0], b[0], r[0], c_in)
    y1 = _value(a[1], b[1], r[1], c_in)
    y2 = _value(a[2], b[2], r[2], c_in)
    y3 = _value(a[3], b[3], r[3], c_in)
    if V == 4:
        return (y0, y1, y2, y3), (c_in, y0, y1, y2)
    else:
        y4 = _value(a[4], b[4], r[4], c_in)
        y5 = _value(a[5], b[5], r[5], c_in)
        y6 = _value(a[6], b[6], r[6], c_in)
        y7 = _value(a[7], b[7], r[7], c_in)
        return (y0, y1, y2, y3, y4, y5, y6, y7), (c_in, y0, y1, y2, y3, y4, y5, y6)


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
        xs = _unpack(x, ROWS, NV, V, False)  # the vector's steps, ascending in time
        if STEP == 1:
            shifted = xs[1:] + (edge,)
        else:
            shifted = (edge,) + xs[:V - 1]
        return x, _pack(shifted, ROWS, NV, V, False)


@jit
def load_flag(p, s, row, t, m):
    """Load a flag (bool viewed as uint8, integer or float) as int1; False where absent."""
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


@jit
def _walk(X, SX, P, O, SO, row, m_r, carry, k_start, k_end, n_chunks, T,
          PROLOGUE: tl.constexpr, EPILOGUE: tl.constexpr, REVERSE: tl.constexpr, ACC: tl.constexpr,
          ROWS: tl.constexpr, BLOCK: tl.constexpr, V: tl.constexpr, STAGES: tl.constexpr,
          SUMMARIZE: tl.constexpr):
    """Scan chunks ``k_start`` ... ``k_end - 1`` (in scan order) of the rows ``row``, from ``carry``.

    SUMMARIZE: return the chunks' composed map (a, b, reset) and write nothing (the prologue
    alone); else write the outputs through the epilogue and return the carry after the last chunk.
    """
    # A chunk is a [ROWS, NV, V] tile: NV vectors of V steps, the vectors in scan order along axis
    # 1 and the steps of a vector ascending in time along axis 2, aligned to the row's start (one
    # vectorised load per vector). Two levels: each thread composes its vectors' steps in
    # registers (_unpack, _chain), then `tl.associative_scan` composes the vectors across lanes,
    # always forwards (a reverse lane scan costs shuffles: docs/DESIGN.md, "The scan's tile").
    NV: tl.constexpr = BLOCK // V
    o_j = tl.arange(0, NV)[None, :, None]  # the vector, in scan order
    o_v = tl.arange(0, V)[None, None, :]  # the step inside its vector, ascending time
    o_t = ((NV - 1 - o_j) if REVERSE else o_j) * V + o_v  # time inside the chunk
    j_last = tl.arange(0, NV)[None, :] == NV - 1  # the chunk's last vector
    alone_j = tl.zeros([ROWS, NV], tl.int1)  # for _next_combine: no second value yet
    if SUMMARIZE:  # the segment's composed map, starting from the identity
        s_a = tl.full([ROWS], 1.0, ACC)
        s_b = tl.zeros([ROWS], ACC)
        s_r = m_r & False
    for k in tl.range(k_start, k_end, num_stages=STAGES):
        if REVERSE:
            c = n_chunks - 1 - k
        else:
            c = k
        t = (c * BLOCK + o_t).to(tl.int64)
        m = m_r[:, None, None] & (t < T)

        a, b, reset, valid, keep = PROLOGUE(X, SX, P, row, t, m, T, ACC)
        # A padded (or out-of-bounds) step is the identity: the carry passes through it. The
        # pair is cast to ACC: a hook may hand back a constant (an absent gradient is 0.0, a
        # float32 literal), and the scan's operands must all have the accumulator's type.
        a = tl.where(valid, a, 1.0).to(ACC)
        b = tl.where(valid, b, 0.0).to(ACC)
        reset = reset & valid

        # each vector's steps composed in order by its thread, up to the vector's whole map
        p_a, p_b, p_r = _chain(_unpack(a, ROWS, NV, V, REVERSE), _unpack(b, ROWS, NV, V, REVERSE),
                               _unpack(reset, ROWS, NV, V, REVERSE), V)
        g_a, g_b, g_r = p_a[V - 1], p_b[V - 1], p_r[V - 1]
        # the vectors composed across lanes, forwards in scan order: the map from the chunk's carry
        # to the value at each vector's last step
        j_a, j_b, j_r = tl.associative_scan((g_a, g_b, g_r), 1, combine)
        if SUMMARIZE:
            # the chunk's composed map is its last vector's: fold it into the segment's
            c_a, c_b, c_r = _last(j_a, j_b, j_r, j_last)
            s_a, s_b, s_r = combine(s_a, s_b, s_r, c_a, c_b, c_r)
        else:
            z = _value(j_a, j_b, j_r, carry[:, None])  # the value at each vector's last step
            # the carry entering each vector: the previous vector's value (the chunk's carry for
            # the first), handed on by a scan that gives each element its predecessor
            _, z_prev, has_prev = tl.associative_scan((z, z, alone_j), 1, _next_combine)
            c_in = tl.where(has_prev, z_prev, carry[:, None])
            y, y_prev = _values(p_a, p_b, p_r, c_in, V)
            EPILOGUE(X, SX, P, O, SO, row, t, m, T, ACC, valid, _pack(y, ROWS, NV, V, REVERSE),
                     _pack(y_prev, ROWS, NV, V, REVERSE), keep)
            carry = tl.sum(tl.where(j_last, z, 0.0), axis=1)
    if SUMMARIZE:
        return s_a, s_b, s_r
    else:
        return carry


@jit
def _composed_carry(SUMMARY, o_r, m_r, pid_s, n_seg, carry, ACC: tl.constexpr, BLOCK_S: tl.constexpr):
    """The carry entering segment ``pid_s``: ``carry`` (the row's initial value) taken through the
    composed maps that the first launch wrote for the segments before it (in scan order).

    Deterministic: the maps are composed in a fixed order (blocks of BLOCK_S, each a forward
    ``tl.associative_scan``); a block's missing tail is the identity, which composes exactly.
    """
    o_s = tl.arange(0, BLOCK_S)
    s_last = o_s[None, :] == BLOCK_S - 1
    for base in range(0, pid_s, BLOCK_S):
        m_s = base + o_s < pid_s
        at = SUMMARY + (o_r.to(tl.int64)[:, None] * n_seg + base + o_s[None, :]) * 3
        m = m_r[:, None] & m_s[None, :]
        a = tl.load(at, mask=m, other=1.0).to(ACC)
        b = tl.load(at + 1, mask=m, other=0.0).to(ACC)
        r = tl.load(at + 2, mask=m, other=0.0) != 0
        j_a, j_b, j_r = tl.associative_scan((a, b, r), 1, combine)
        b_a, b_b, b_r = _last(j_a, j_b, j_r, s_last)
        carry = _value(b_a, b_b, b_r, carry)
    return carry


@jit
def _scan_kernel(
    X,  # tuple of input pointers (None for an absent input), read by the hooks
    SX,  # tuple of (row stride, time stride) pairs, one per input
    P,  # tuple of scalar parameters (gamma, lambda, ...), read by the hooks
    O,  # tuple of output pointers, written by the epilogue
    SO,  # tuple of (row stride, time stride) pairs, one per output
    Y0,  # the carry entering each segment [n_rows, n_segments] (per row [n_rows] with COMPOSE); None: 0
    SUMMARY,  # [n_rows, n_segments, 3]: each segment's composed map (A, B, R), written (the first
              # launch of a time split) or read (COMPOSE); None: no split
    n_rows,  # number of independent sequences (every dim but time, flattened)
    T,  # sequence length
    SEG,  # chunks per segment; program (i, s) scans segment s of its rows
    PROLOGUE: tl.constexpr,  # jit fn: inputs at t -> (a, b, reset, valid, keep)
    EPILOGUE: tl.constexpr,  # jit fn: (y, y_prev, keep) -> outputs stored
    REVERSE: tl.constexpr,  # True: scan from t = T-1 down to 0 (the forward pass)
    ACC: tl.constexpr,  # accumulation dtype: tl.float32, or tl.float64 for float64 inputs
    ROWS: tl.constexpr,  # rows per program
    BLOCK: tl.constexpr,  # time steps per chunk
    V: tl.constexpr,  # time steps per vector: a chunk is BLOCK // V vectors of V ascending steps
    STAGES: tl.constexpr,  # software pipelining of the chunk loop (1: none)
    BLOCK_S: tl.constexpr,  # segments' maps composed at once (COMPOSE)
    COMPOSE: tl.constexpr,  # the second launch of a two-launch split: compose the maps SUMMARY holds
                            # for the segments before this one, then scan with the epilogue
):
    n_seg = tl.num_programs(1)
    pid = tl.program_id(0)
    pid_s = tl.program_id(1)  # the segment of time this program scans
    o_r = pid * ROWS + tl.arange(0, ROWS)  # the rows of this program
    m_r = o_r < n_rows
    # int64: row * stride may pass 2**31. Rows past the end are clamped to the last one: every
    # per-step access is masked by m, and per-row loads then stay in bounds without a mask.
    row = tl.minimum(o_r, n_rows - 1).to(tl.int64)[:, None, None]
    o_seg = o_r.to(tl.int64) * n_seg + pid_s  # this program's (row, segment) entries
    if Y0 is None:
        carry = tl.zeros([ROWS], ACC)
    elif COMPOSE:  # the row's initial value, composed below
        carry = tl.load(Y0 + o_r, mask=m_r, other=0.0).to(ACC)
    else:  # o_seg is o_r when time is not split
        carry = tl.load(Y0 + o_seg, mask=m_r, other=0.0).to(ACC)
    n_chunks = tl.cdiv(T, BLOCK)
    k_start = pid_s * SEG
    k_end = tl.minimum((pid_s + 1) * SEG, n_chunks)
    if SUMMARY is None:
        _walk(X, SX, P, O, SO, row, m_r, carry, k_start, k_end, n_chunks, T, PROLOGUE, EPILOGUE, REVERSE, ACC, ROWS,
              BLOCK, V, STAGES, False)
    elif COMPOSE:
        carry = _composed_carry(SUMMARY, o_r, m_r, pid_s, n_seg, carry, ACC, BLOCK_S)
        _walk(X, SX, P, O, SO, row, m_r, carry, k_start, k_end, n_chunks, T, PROLOGUE, EPILOGUE, REVERSE, ACC, ROWS,
              BLOCK, V, STAGES, False)
    else:
        s_a, s_b, s_r = _walk(X, SX, P, O, SO, row, m_r, carry, k_start, k_end, n_chunks, T, PROLOGUE, EPILOGUE,
                              REVERSE, ACC, ROWS, BLOCK, V, STAGES, True)
        tl.store(SUMMARY + o_seg * 3, s_a, mask=m_r)
        tl.store(SUMMARY + o_seg * 3 + 1, s_b, mask=m_r)
        tl.store(SUMMARY + o_seg * 3 + 2, s_r.to(ACC), mask=m_r)


# The carries of a time-split scan: a scan over the segments' composed maps, in scan order.
SEG_A, SEG_B, SEG_RESET = tl.constexpr(0), tl.constexpr(1), tl.constexpr(2)  # X: views of the summary
SEG_CARRY = tl.constexpr(0)  # O: the carry entering each segment


@jit
def _segments_prologue(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    a = load(X[SEG_A], SX[SEG_A], row, t, m, 1.0, ACC)
    b = load(X[SEG_B], SX[SEG_B], row, t, m, 0.0, ACC)
    return a, b, load_flag(X[SEG_RESET], SX[SEG_RESET], row, t, m), m, ()


@jit
def _segments_epilogue(X, SX, P, O, SO, row, t, m, T, ACC: tl.constexpr, valid, y, y_prev, keep):
    store(O[SEG_CARRY], SO[SEG_CARRY], row, t, m, y_prev)


# --------------------------------------------------------------------------------------------
# linear_scan: the primitive itself, as hooks
# --------------------------------------------------------------------------------------------
# Inputs X
LS_A, LS_B, LS_MASK = tl.constexpr(0), tl.constexpr(1), tl.constexpr(2)
LS_CARRIED = tl.constexpr(3)  # backward: y as the forward carried it
LS_DY = tl.constexpr(4)  # backward: dL/dy
LS_INITIAL = tl.constexpr(5)  # backward: the initial carry, per row
# Params P: the direction D of y_t = b_t + a_t * y_{t+D}, +1 for a reverse scan (returns), -1 forwards
LS_D = tl.constexpr(0)
# Outputs O: forward (y, y as carried: None unless padding hides it); backward (da, db, d_initial)
LS_Y, LS_Y_CARRIED = tl.constexpr(0), tl.constexpr(1)
LS_DA, LS_DB, LS_D_INITIAL = tl.constexpr(0), tl.constexpr(1), tl.constexpr(2)


@jit
def _ls_prologue(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    valid = load_mask(X[LS_MASK], SX[LS_MASK], row, t, m)
    a = load(X[LS_A], SX[LS_A], row, t, valid, 1.0, ACC)
    b = load(X[LS_B], SX[LS_B], row, t, valid, 0.0, ACC)
    return a, b, a == 0.0, valid, ()  # a = 0 is a boundary: a reset, so NaN cannot cross it


@jit
def _ls_epilogue(X, SX, P, O, SO, row, t, m, T, ACC: tl.constexpr, valid, y, y_prev, keep):
    store(O[LS_Y], SO[LS_Y], row, t, m, tl.where(valid, y, 0.0))
    if O[LS_Y_CARRIED] is not None:  # the carry itself, which passes through padded steps (for da)
        store(O[LS_Y_CARRIED], SO[LS_Y_CARRIED], row, t, m, y)


@jit
def _ls_bwd_prologue(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    # The transposed scan runs against D: g_t = dy_t + a_{t-D} g_{t-D}.
    D = P[LS_D]
    t_prev = t - D
    m_prev = m & (t_prev >= 0) & (t_prev < T)
    valid_prev = load_mask(X[LS_MASK], SX[LS_MASK], row, t_prev, m_prev)
    a_prev = load(X[LS_A], SX[LS_A], row, t_prev, valid_prev, 1.0, ACC)  # a masked step: a = 1
    valid = load_mask(X[LS_MASK], SX[LS_MASK], row, t, m)
    dy = load(X[LS_DY], SX[LS_DY], row, t, valid, 0.0, ACC)
    # the first step of the recurrence has nothing before it, and a = 0 is a boundary: resets
    return a_prev, dy, ~m_prev | (valid_prev & (a_prev == 0.0)), m, (valid,)


@jit
def _ls_bwd_epilogue(X, SX, P, O, SO, row, t, m, T, ACC: tl.constexpr, valid, g, g_prev, keep):
    D = P[LS_D]
    valid_t = keep[0]
    t_next = t + D
    at_end = (t_next < 0) | (t_next >= T)  # the last step of the recurrence reads `initial`
    y_next = load(X[LS_CARRIED], SX[LS_CARRIED], row, t_next, valid_t & ~at_end, 0.0, ACC)
    y_next = tl.where(at_end, load(X[LS_INITIAL], (1, None), row, t, valid_t & at_end, 0.0, ACC), y_next)
    store(O[LS_DA], SO[LS_DA], row, t, m, tl.where(valid_t, g * y_next, 0.0))
    store(O[LS_DB], SO[LS_DB], row, t, m, tl.where(valid_t, g, 0.0))
    if O[LS_D_INITIAL] is not None:
        # dL/dy_init = a_end g_end; a masked last step passes g through unchanged
        a_end = load(X[LS_A], SX[LS_A], row, t, valid_t, 1.0, ACC)
        store(O[LS_D_INITIAL], (1, None), row, t, m & at_end, a_end * g)


# --------------------------------------------------------------------------------------------
# Launch
# --------------------------------------------------------------------------------------------
def _tile(n_rows: int, T: int, time_contiguous: bool, itemsize: int, cfg: Config):
    """(rows per program, time steps per chunk, warps, pipeline stages, steps per vector) for
    (n_rows, T) and the outputs' element size in bytes.

    One warp per program, 256 steps per chunk (2 vectors per thread) and the next chunk's loads in
    flight (2 stages); many rows take 2 × 128. The chunk depends on (n_rows, T) only, never on the
    layout, so both layouts are scanned in the same chunks (the same carries between them). A
    vector is 16 bytes. A 2-byte tile of one row is not pipelined (Triton 3.6 replicates it into
    every thread). Time-major tiles span more rows, unpipelined, bounded by their registers.
    The measurements behind each choice: docs/DESIGN.md, "The scan's tile".
    """
    if cfg.tile is not None:
        rows, block, warps, *rest = cfg.tile
        return rows, block, warps, rest[0] if rest else 1, _vector(itemsize, block, rest[1] if rest[1:] else cfg.vector)
    block = min(max(_checks.next_power_of_2(T), 16), 128 if n_rows >= 4096 else 256, cfg.max_block_t)
    vec = _vector(itemsize, block, cfg.vector)
    if not time_contiguous:
        most_rows, elements, warps = cfg.time_major_tile
        elements = elements * 4 // max(itemsize, 4)
        rows = max(1, min(most_rows, elements // block, _checks.next_power_of_2(n_rows)))
        return rows, block, warps, 1, vec
    rows = max(1, min(256 // block, _checks.next_power_of_2(n_rows))) if n_rows >= 1024 else 1
    return rows, block, 1, 2 if T > block and not (itemsize < 4 and rows == 1) else 1, vec


def _vector(itemsize: int, block: int, vector: int | None) -> int:
    """Steps per vector: ``vector``, else 16 bytes (8 steps of a 2-byte dtype, 4 otherwise)."""
    vec = vector or (8 if itemsize < 4 else 4)
    if vec not in (4, 8) or vec > block:
        raise ValueError(f"steps per vector must be 4 or 8 and at most the chunk ({block}), got {vec}")
    return vec


@functools.lru_cache(maxsize=None)
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def _segments(n_programs: int, n_chunks: int, device: torch.device, min_programs):
    """(segments, chunks per segment) for ``n_programs`` row tiles walking ``n_chunks`` chunks.

    Time is split when fewer than ``min_programs`` programs would run (None: two per SM on CUDA,
    never elsewhere); then into segments for four times that many (a program walks its chunks one
    after the other: short segments keep each launch of the split to about one chunk's latency)."""
    want = min_programs
    if want is None:
        want = 2 * _sm_count(device.index if device.index is not None else torch.cuda.current_device()) \
            if device.type == "cuda" else 0
    if n_programs >= want or n_chunks < 2:
        return 1, n_chunks
    seg = _checks.cdiv(n_chunks, min(n_chunks, _checks.cdiv(4 * want, n_programs)))
    return _checks.cdiv(n_chunks, seg), seg


@functools.lru_cache(maxsize=1024)
def _plan(n_rows: int, T: int, time_contiguous: bool, itemsize: int, device: torch.device, cfg: Config):
    """Tile, warps, stages, vector, grid and time split of a launch: a pure function of its
    arguments, cached."""
    rows, block, num_warps, stages, vec = _tile(n_rows, T, time_contiguous, itemsize, cfg)
    # where time is split depends on the problem, not on the layout's tile (same chunks, same carries)
    n_seg, seg = _segments(_checks.cdiv(n_rows, _tile(n_rows, T, True, itemsize, cfg)[0]), _checks.cdiv(T, block),
                           device, cfg.min_programs)
    return rows, block, num_warps, stages, vec, _checks.cdiv(n_rows, rows), n_seg, seg


def _unzip(items):
    """``(tensor, strides)`` pairs (or None) as a tuple of tensors and one of strides ((0, 0)
    for an absent input, never read: the kernels test the pointer first)."""
    ptrs, strides = [], []
    for x in items:
        ptrs.append(None if x is None else x[0])
        strides.append((0, 0) if x is None else x[1])
    return tuple(ptrs), tuple(strides)


def launch(prologue, epilogue, inputs, params, outputs, n_rows, T, *, reverse, acc_dtype,
           initial=None, time_contiguous=True):
    """Run the scan kernel over ``n_rows`` rows of ``T`` steps.

    ``inputs``/``outputs`` are sequences of ``None`` or ``(tensor, (row_stride, time_stride))``;
    ``params`` a tuple of Python scalars; ``initial`` a contiguous per-row tensor or None.

    Few long rows leave the GPU idle, so time is then split across programs: a first launch writes
    each segment's composed map (the prologue alone), a second scans the segments again, each
    from its carry, with the epilogue. Up to ``Config.compose`` segments each program of the
    second launch composes the maps before its segment itself; beyond, a launch between them
    scans the maps into carries (the same recurrence, one step per segment). Deterministic: no
    atomics, a fixed order.
    """
    if n_rows == 0 or T == 0:
        return
    cfg = current()
    X, SX = _unzip(inputs)
    O, SO = _unzip(outputs)
    device = next(x for x in X + O if x is not None).device
    out = next((o for o in O if o is not None), None)
    rows, block, num_warps, stages, vec, n_programs, n_seg, seg = _plan(
        n_rows, T, time_contiguous, 4 if out is None else out.element_size(), device, cfg)
    acc = tl.float64 if acc_dtype == torch.float64 else tl.float32
    P = tuple(params)
    grid = (n_programs, n_seg)
    # PROLOGUE, EPILOGUE, REVERSE, ACC, ROWS, BLOCK, V, STAGES, BLOCK_S, COMPOSE
    meta = (prologue, epilogue, reverse, acc, rows, block, vec, stages,
            min(_checks.next_power_of_2(n_seg), cfg.compose_block), False)
    if n_seg > 1:
        summary = torch.empty(n_rows, n_seg, 3, dtype=acc_dtype, device=device)
        _launch_scan(grid, (X, SX, P, O, SO, None, summary, n_rows, T, seg), meta, num_warps)
        if n_seg <= cfg.compose:  # two launches: each segment composes its own carry
            _launch_scan(grid, (X, SX, P, O, SO, initial, summary, n_rows, T, seg), meta[:-1] + (True,), num_warps)
            return
        carries = torch.empty(n_rows, n_seg, dtype=acc_dtype, device=device)
        seg_inputs = [(summary[..., k], (3 * n_seg, 3)) for k in range(3)]
        launch(_segments_prologue, _segments_epilogue, seg_inputs, (), [(carries, (n_seg, 1))], n_rows, n_seg,
               reverse=False, acc_dtype=acc_dtype, initial=initial)
        initial = carries
    _launch_scan(grid, (X, SX, P, O, SO, initial, None, n_rows, T, seg), meta, num_warps)


# The scan kernel's launches, through the compiled-kernel cache (_triton.Launcher); the letters
# name its runtime arguments: X T, SX S, P P, O T, SO S, Y0 t, SUMMARY t, n_rows i, T i, SEG i.
_launch_scan = Launcher(_scan_kernel, "TSPTSttiii")


def use_triton(backend: str, device: torch.device) -> bool:
    """Resolve ``backend`` ("auto" | "triton" | "torch") for tensors on ``device``."""
    if backend == "torch":
        return False
    runs = HAS_TRITON and (device.type == "cuda" or (device.type == "cpu" and INTERPRET))
    if backend == "triton" and not runs:
        if not HAS_TRITON:
            raise ValueError("backend='triton' needs the triton package, which is not installed")
        raise ValueError(
            "backend='triton' on CPU tensors needs the Triton interpreter: set TRITON_INTERPRET=1 "
            "in the environment before importing rltriton_lite"
        )
    return runs


# --------------------------------------------------------------------------------------------
# linear_scan
# --------------------------------------------------------------------------------------------
def _ls_forward(a, b, initial, mask, time_dim, reverse, keep_carried):
    """``(y, carried)``: the forward scan; ``carried`` is y as the scan carries it (for dL/da),
    a separate buffer when padding hides it from y (``keep_carried`` and a mask), else ``y``."""
    shape, T, n_rows = _checks.problem(b, time_dim)
    acc = _checks.acc_dtype(_checks.result_dtype(a, b, initial))
    y = _checks.new_output(shape, time_dim, b.dtype, b.device)
    carried = y
    if mask is not None and keep_carried:
        carried = _checks.new_output(shape, time_dim, b.dtype, b.device)
    X = [_checks.rows(x, shape, time_dim) for x in (a, b, mask)]
    init = _checks.row_vector(initial, shape, time_dim)
    O = [_checks.rows(y, shape, time_dim), None if carried is y else _checks.rows(carried, shape, time_dim)]
    launch(_ls_prologue, _ls_epilogue, X, (1 if reverse else -1,), O, n_rows, T, reverse=reverse,
           acc_dtype=acc, initial=None if init is None else init[0], time_contiguous=X[LS_B][1][1] == 1)
    return y, carried


def _ls_backward(dy, a, y, initial, mask, time_dim, reverse, need_initial):
    """``(da, db, d_initial)``: the transposed scan; ``y`` is the forward's carried output;
    ``d_initial`` is None unless ``need_initial`` (and an ``initial`` was given)."""
    shape, T, n_rows = _checks.problem(y, time_dim)
    acc = _checks.acc_dtype(_checks.result_dtype(a, y, initial))
    da = _checks.new_output(shape, time_dim, a.dtype, a.device)
    db = _checks.new_output(shape, time_dim, y.dtype, y.device)
    d_init = None
    if initial is not None and need_initial:
        d_init = torch.empty(n_rows, dtype=initial.dtype, device=y.device)
    X = [_checks.rows(x, shape, time_dim) for x in (a, None, mask, y, dy)]
    X.append(_checks.row_vector(initial, shape, time_dim))
    O = [_checks.rows(da, shape, time_dim), _checks.rows(db, shape, time_dim),
         None if d_init is None else (d_init, (1, None))]
    launch(_ls_bwd_prologue, _ls_bwd_epilogue, X, (1 if reverse else -1,), O, n_rows, T,
           reverse=not reverse, acc_dtype=acc, time_contiguous=X[LS_CARRIED][1][1] == 1)
    if d_init is not None:
        d_init = d_init.reshape(initial.shape)
    return da, db, d_init


class _LinearScan(torch.autograd.Function):
    """y = scan(a, b) along ``time_dim``; the backward is the transposed scan."""

    @staticmethod
    def forward(ctx, a, b, initial, mask, time_dim, reverse):
        # dL/da_t needs y_{t+1} as carried, which padded steps hide from y: keep it apart
        y, carried = _ls_forward(a, b, initial, mask, time_dim, reverse, ctx.needs_input_grad[0])
        ctx.save_for_backward(a, carried, initial, mask)
        ctx.time_dim, ctx.reverse = time_dim, reverse
        return y

    @staticmethod
    def backward(ctx, dy):
        a, y, initial, mask = ctx.saved_tensors
        da, db, d_init = _ls_backward(dy, a, y, initial, mask, ctx.time_dim, ctx.reverse, ctx.needs_input_grad[2])
        return da, db, d_init, None, None, None


def linear_scan(a, b, *, reverse=True, initial=None, mask=None, time_dim=-1, backend="auto"):
    r"""Solve :math:`y_t = b_t + a_t\,y_{t+1}` (``reverse=True``) for every row at once.

    .. math::

        y_t = b_t + a_t \, y_{t+1}, \qquad y_T = \text{initial}

    With ``reverse=False`` the recurrence runs forwards: :math:`y_t = b_t + a_t\,y_{t-1}`,
    :math:`y_{-1} = \text{initial}`.

    A step with :math:`a_t = 0` is a boundary: it is computed as a reset (:math:`y_t = b_t`,
    selected, not multiplied), so a NaN or Inf after it cannot reach the steps before it.

    Args:
        a: per-step multipliers, a float tensor broadcastable to ``b``.
        b: per-step offsets, a float tensor; its shape is the output's.
        reverse: scan from the end of the time axis (the default, as returns are) or the start.
        initial: the carry before the first step scanned, shape ``b.shape`` without ``time_dim``
            (broadcastable); default 0.
        mask: optional, shape of ``b``; 0 marks padding: the step is the identity (the carry
            passes through it) and its output is 0.
        time_dim: the time axis of ``b`` (default -1).
        backend: "auto" (Triton on CUDA, or on CPU under ``TRITON_INTERPRET=1``; PyTorch
            otherwise), "triton" or "torch".

    Returns:
        ``y`` with the shape and dtype of ``b``; differentiable in ``a``, ``b`` and ``initial``.
    """
    b = _checks.float_tensor("b", b)
    time_dim = _checks.time_dim(time_dim, b, "b")
    a = _checks.float_tensor("a", a, like=b)
    a = _checks.broadcast("a", a, b.shape)
    mask = _checks.flag("mask", mask, b, "b")
    initial = _checks.per_row("initial", initial, b, time_dim)
    reverse = _checks.flag_arg("reverse", reverse)
    backend = _checks.backend(backend)
    if b.numel() == 0:
        return torch.empty_like(b)
    reverse = bool(reverse)
    acc = lambda: _checks.acc_dtype(_checks.result_dtype(a, b, initial))  # noqa: E731
    return route(use_triton(backend, b.device), (a, b, initial),
                 torch_path=lambda: _torch_path.linear_scan(a, b, initial, mask, time_dim, reverse, acc()),
                 custom_op=lambda: _linear_scan_custom_op(a, b, initial, mask, time_dim, reverse),
                 function=lambda: _LinearScan.apply(a, b, initial, mask, time_dim, reverse),
                 kernel=lambda: _ls_forward(a, b, initial, mask, time_dim, reverse, False)[0])

# --------------------------------------------------------------------------------------------
# linear_scan as a custom op (torch.compile)
# --------------------------------------------------------------------------------------------
@torch.library.custom_op(f"{_ops.NS}::linear_scan", mutates_args=(), schema=(
    "(Tensor a, Tensor b, Tensor? initial, Tensor? mask, int time_dim, bool reverse, bool keep_carried) "
    "-> (Tensor, Tensor)"))
def _linear_scan_op(a, b, initial, mask, time_dim, reverse, keep_carried):
    """(y, y as carried: a separate buffer if kept (padding hides it from y), else empty)."""
    y, carried = _ls_forward(a, b, initial, u8(mask), time_dim, reverse, keep_carried)
    return y, (empty(y) if carried is y else carried)


@_linear_scan_op.register_fake
def _(a, b, initial, mask, time_dim, reverse, keep_carried):
    y = _checks.new_output(b.shape, time_dim, b.dtype, b.device)
    keep = mask is not None and keep_carried
    return y, (_checks.new_output(b.shape, time_dim, b.dtype, b.device) if keep else empty(y))


@torch.library.custom_op(f"{_ops.NS}::linear_scan_backward", mutates_args=(), schema=(
    "(Tensor dy, Tensor a, Tensor y, Tensor? initial, Tensor? mask, int time_dim, bool reverse, "
    "bool need_initial) -> (Tensor, Tensor, Tensor)"))
def _linear_scan_backward_op(dy, a, y, initial, mask, time_dim, reverse, need_initial):
    da, db, d_init = _ls_backward(dy, a, y, initial, u8(mask), time_dim, reverse, need_initial)
    return da, db, (empty(y) if d_init is None else d_init)


@_linear_scan_backward_op.register_fake
def _(dy, a, y, initial, mask, time_dim, reverse, need_initial):
    da = _checks.new_output(y.shape, time_dim, a.dtype, a.device)
    db = _checks.new_output(y.shape, time_dim, y.dtype, y.device)
    need = initial is not None and need_initial
    return da, db, (initial.new_empty(initial.shape) if need else empty(y))


def _linear_scan_setup(ctx, inputs, output):
    a, b, initial, mask, time_dim, reverse, keep_carried = inputs
    y, carried = output
    ctx.mark_non_differentiable(carried)
    ctx.save_for_backward(a, carried if mask is not None and keep_carried else y, initial, mask)
    ctx.time_dim, ctx.reverse = time_dim, reverse


def _linear_scan_backward(ctx, dy, _d_carried):
    a, y, initial, mask = ctx.saved_tensors
    need = ctx.needs_input_grad
    da, db, d_init = _linear_scan_backward_op(dy, a, y, initial, mask, ctx.time_dim, ctx.reverse, need[2])
    return grad_or_none(da, need[0]), grad_or_none(db, need[1]), grad_or_none(d_init, need[2] and initial is not None), \
        None, None, None, None


_linear_scan_op.register_autograd(_linear_scan_backward, setup_context=_linear_scan_setup)


def _linear_scan_custom_op(a, b, initial, mask, time_dim: int, reverse: bool):
    """scan.linear_scan's kernel path as the custom op (arguments validated)."""
    keep = mask is not None and torch.is_grad_enabled() and a.requires_grad
    return _linear_scan_op(a, b, initial, constant(mask), time_dim, reverse, keep)[0]
