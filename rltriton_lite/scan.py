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
``EPILOGUE(X, SX, P, O, SO, row, t, m, T, ACC, valid, y, y_in, keep)``
    writes the outputs from the scanned value ``y`` and ``y_in``, the value of the step before
    in scan order (``y_{t+1}`` for a reverse scan, ``y_{t-1}`` for a forward one).

The backward pass of :math:`y = \operatorname{scan}(a, b)` is the same scan run the other way:
:math:`g_t = \partial L/\partial y_t + a_{t-1} g_{t-1}`, then :math:`\partial L/\partial b_t = g_t`
and :math:`\partial L/\partial a_t = g_t\, y_{t+1}`. It uses the same kernel with
``REVERSE=False`` and a second pair of hooks.
"""
from __future__ import annotations

from ._triton import jit, tl
from .tile import load, load_flag, pack, store, unpack


# ---- Composing affine steps ------------------------------------------------------------------------
@jit
def combine(a1, b1, k1, a2, b2, k2):
    """Compose two affine steps in scan order.

    ``(a1, b1)`` is the map of a run of steps applied first (the later ones, in a reverse
    scan), ``(a2, b2)`` the map of the run applied after it, one step or several in a tree
    scan; ``k`` marks a reset inside a run. The composition is
    ``y = b2 + a2 * (b1 + a1 * carry)``, unless the second run resets, in which case what lies
    behind its reset is ignored (selected away, never multiplied by zero).
    """
    a = tl.where(k2, a2, a2 * a1)
    b = tl.where(k2, b2, b2 + a2 * b1)
    return a, b, k1 | k2


@jit
def _next_combine(f1, s1, n1, f2, s2, n2):
    """The first two values of a run of steps in scan order: (first, second, has a second).

    Scanned over a chunk's vectors it hands each vector the value at the end of the vector before
    it in scan order: the carry entering the vector.
    """
    return f2, tl.where(n2, s2, f1), n2 | True


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
    """(y, y_in) of each step of a vector (tuples, scan order) from the carry entering it."""
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


# ---- The kernel ------------------------------------------------------------------------------------
# What the first launch of a time split writes per (row, segment): the segment's composed map
# (A, B, R) and, with a look-ahead, its last present step and first present value (``_walk``)
SUMMARY_WIDTH = tl.constexpr(5)


@jit
def _scan_chunk(a, b, r, carry, ROWS: tl.constexpr, NV: tl.constexpr, V: tl.constexpr, REVERSE: tl.constexpr):
    """One chunk's steps ([ROWS, NV, V] tiles) scanned from ``carry`` ([ROWS]): (y, y_in, the
    carry after the chunk, the chunk's composed map (a, b, reset)).

    Two levels: each thread composes its vectors' steps in registers (``unpack``, ``_chain``), then
    ``tl.associative_scan`` composes the vectors across lanes, always forwards (a reverse lane
    scan costs shuffles: docs/DESIGN.md, "The scan's tile"). What a caller leaves unused is not
    computed (the compiler drops it)."""
    p_a, p_b, p_r = _chain(unpack(a, ROWS, NV, V, REVERSE), unpack(b, ROWS, NV, V, REVERSE),
                           unpack(r, ROWS, NV, V, REVERSE), V)
    # the vectors composed across lanes, forwards in scan order: the map from the chunk's carry
    # to the value at each vector's last step
    j_a, j_b, j_r = tl.associative_scan((p_a[V - 1], p_b[V - 1], p_r[V - 1]), 1, combine)
    j_last = tl.arange(0, NV)[None, :] == NV - 1  # the chunk's last vector
    z = _value(j_a, j_b, j_r, carry[:, None])  # the value at each vector's last step
    # the carry entering each vector: the previous vector's value (the chunk's carry for the
    # first), handed on by a scan that gives each element its predecessor
    _, z_prev, has_prev = tl.associative_scan((z, z, tl.zeros([ROWS, NV], tl.int1)), 1, _next_combine)
    y, y_in = _values(p_a, p_b, p_r, tl.where(has_prev, z_prev, carry[:, None]), V)
    c_a, c_b, c_r = _last(j_a, j_b, j_r, j_last)
    return (pack(y, ROWS, NV, V, REVERSE), pack(y_in, ROWS, NV, V, REVERSE), tl.sum(tl.where(j_last, z, 0.0), axis=1),
            c_a, c_b, c_r)


@jit
def _latest(v1, f1, v2, f2):
    """The value of the newest present step in scan order, and whether there is one: (value, found),
    where 2 is the newer of the two runs."""
    return tl.where(f2, v2, v1), f1 | f2


@jit
def _look_ahead(X, SX, P, row, t, m, m_r, T, v_seen, f_seen, AHEAD: tl.constexpr, ACC: tl.constexpr,
                ROWS: tl.constexpr, NV: tl.constexpr, V: tl.constexpr):
    """Masked steps as if deleted, inside the scan (docs/DESIGN.md, "The primitive"): at each step of a
    (reverse) chunk, the value ``AHEAD`` gives at the nearest present step after it in time, and
    whether there is one; (``v_seen``, ``f_seen``): the same for the steps after the chunk. "The
    last present value seen" is itself a scan, of the pair (1, value) with a reset where present,
    in two levels like ``_scan_chunk``'s. Returns (value, found) per step and (v_seen, f_seen)
    after the chunk."""
    present, value = AHEAD(X, SX, P, row, t, m, T, ACC)
    present = present & m
    value = tl.where(present, value, 0.0).to(ACC)
    p_a, p_b, p_r = _chain(unpack(tl.full(value.shape, 1.0, ACC), ROWS, NV, V, True), unpack(value, ROWS, NV, V, True),
                           unpack(present, ROWS, NV, V, True), V)
    # across the vectors: the value each one hands on (its first present step's, else what entered
    # it), and, handed on by one more scan, the value entering each vector
    z_v, z_f = tl.associative_scan((p_b[V - 1], p_r[V - 1]), 1, _latest)
    z_v = tl.where(z_f, z_v, v_seen[:, None])
    _, c_v, has_prev = tl.associative_scan((z_v, z_v, tl.zeros(z_v.shape, tl.int1)), 1, _next_combine)
    y, y_in = _values(p_a, p_b, p_r, tl.where(has_prev, c_v, v_seen[:, None]), V)
    # found: a present step later in the vector, or in the vectors after it (a count: no second scan)
    n_p = tl.sum(present.to(tl.int32), axis=2)
    c_f = (tl.cumsum(n_p, axis=1) - n_p > 0) | f_seen[:, None]
    o_v = tl.arange(0, V)[None, None, :]  # the step inside its vector, ascending time
    found = c_f[:, :, None] | (o_v < tl.max(tl.where(present, o_v, -1), axis=2, keep_dims=True))
    # after the chunk: the value after its first step in time (the last vector's last in scan order)
    v_seen = tl.sum(tl.where(tl.arange(0, NV)[None, :] == NV - 1, y[V - 1], 0.0), axis=1)
    f_seen = f_seen | (tl.max(tl.max(present.to(tl.int32), axis=2), axis=1) != 0)
    return pack(y_in, ROWS, NV, V, True), found, v_seen, f_seen


@jit
def _walk(X, SX, P, O, SO, row, m_r, carry, v_seen, f_seen, k_start, k_end, n_chunks, T,
          PROLOGUE: tl.constexpr, EPILOGUE: tl.constexpr, REVERSE: tl.constexpr, ACC: tl.constexpr,
          ROWS: tl.constexpr, BLOCK: tl.constexpr, V: tl.constexpr, STAGES: tl.constexpr,
          SUMMARIZE: tl.constexpr, AHEAD: tl.constexpr):
    """Scan chunks ``k_start`` ... ``k_end - 1`` (in scan order) of the rows ``row``, from ``carry``.

    SUMMARIZE: return the chunks' composed map (a, b, reset) and write nothing (the prologue
    alone); else write the outputs through the epilogue and return the carry after the last chunk.
    AHEAD (a hook, or None; reverse scans): the prologue also gets ``_look_ahead``'s (value, found)
    per step, from (``v_seen``, ``f_seen``), the look-ahead after the chunks. Summarized, these
    start as "none" and the map leaves out the one step that reads past them, the segment's last
    present one: the map returned is that of the steps before it, with its time (-1: none) and
    the look-ahead the segment hands on (``_composed_carry`` puts the step back).
    """
    # A chunk is a [ROWS, NV, V] tile: NV vectors of V steps, the vectors in scan order along axis
    # 1 and the steps of a vector ascending in time along axis 2, aligned to the row's start (one
    # vectorised load per vector).
    NV: tl.constexpr = BLOCK // V
    o_j = tl.arange(0, NV)[None, :, None]  # the vector, in scan order
    o_v = tl.arange(0, V)[None, None, :]  # the step inside its vector, ascending time
    o_t = ((NV - 1 - o_j) if REVERSE else o_j) * V + o_v  # time inside the chunk
    if SUMMARIZE:  # the segment's composed map, starting from the identity
        s_a = tl.full([ROWS], 1.0, ACC)
        s_b = tl.zeros([ROWS], ACC)
        s_r = m_r & False
        s_p = tl.full([ROWS], -1, tl.int64)
    if AHEAD is not None:
        tl.static_assert(REVERSE, "a look-ahead runs in reverse scans")
    for k in tl.range(k_start, k_end, num_stages=STAGES):
        if REVERSE:
            c = n_chunks - 1 - k
        else:
            c = k
        t = (c * BLOCK + o_t).to(tl.int64)
        m = m_r[:, None, None] & (t < T)

        if AHEAD is None:
            a, b, reset, valid, keep = PROLOGUE(X, SX, P, row, t, m, T, ACC)
        else:
            v_next, found, v_seen, f_seen = _look_ahead(X, SX, P, row, t, m, m_r, T, v_seen, f_seen, AHEAD, ACC, ROWS,
                                                        NV, V)
            a, b, reset, valid, keep = PROLOGUE(X, SX, P, row, t, m, T, ACC, (v_next, found))
        # A padded (or out-of-bounds) step is the identity: the carry passes through it. The
        # pair is cast to ACC: a hook may hand back a constant (an absent gradient is 0.0, a
        # float32 literal), and the scan's operands must all have the accumulator's type.
        if SUMMARIZE and AHEAD is not None:  # the segment's last present step: left for the compose launch
            lone = valid & ~found
            s_p = tl.maximum(s_p, tl.max(tl.max(tl.where(lone, t, -1), axis=2), axis=1))
            valid = valid & ~lone
        a = tl.where(valid, a, 1.0).to(ACC)
        b = tl.where(valid, b, 0.0).to(ACC)
        reset = reset & valid
        y, y_in, after, c_a, c_b, c_r = _scan_chunk(a, b, reset, carry, ROWS, NV, V, REVERSE)
        if SUMMARIZE:  # fold the chunk's composed map into the segment's
            s_a, s_b, s_r = combine(s_a, s_b, s_r, c_a, c_b, c_r)
        else:
            EPILOGUE(X, SX, P, O, SO, row, t, m, T, ACC, valid, y, y_in, keep)
            carry = after
    if SUMMARIZE:
        return s_a, s_b, s_r, s_p, v_seen, f_seen
    else:
        return carry


@jit
def _composed_carry(SUMMARY, X, SX, P, row, o_r, m_r, pid_s, n_seg, carry, n_chunks, T, SEG,
                    PROLOGUE: tl.constexpr, AHEAD: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr,
                    BLOCK_S: tl.constexpr):
    """The carry entering segment ``pid_s``: ``carry`` (the row's initial value) taken through the
    composed maps that the first launch wrote for the segments before it (in scan order), and the
    look-ahead (value, found) entering it (none without ``AHEAD``).

    With ``AHEAD`` a segment's map leaves out its last present step, the one that reads past the
    segment (``_walk``): walking from the row's end, the look-ahead entering each segment is the
    first present value of the nearest segment after it in time, and the prologue runs again at
    that one step with it. Deterministic: the maps are composed in a fixed order (blocks of
    BLOCK_S, each a forward ``tl.associative_scan``); a block's missing tail is the identity,
    which composes exactly.
    """
    W: tl.constexpr = SUMMARY_WIDTH
    o_s = tl.arange(0, BLOCK_S)
    s_last = o_s[None, :] == BLOCK_S - 1
    v_seen = tl.zeros(carry.shape, ACC)
    f_seen = m_r & False
    for base in range(0, pid_s, BLOCK_S):
        j = base + o_s[None, :]  # the segments, in scan order
        m = m_r[:, None] & (j < pid_s)
        at = SUMMARY + (o_r.to(tl.int64)[:, None] * n_seg + j) * W
        a = tl.load(at, mask=m, other=1.0).to(ACC)
        b = tl.load(at + 1, mask=m, other=0.0).to(ACC)
        r = tl.load(at + 2, mask=m, other=0.0) != 0
        if AHEAD is not None:
            p_off = tl.load(at + 3, mask=m, other=-1.0).to(ACC)
            has = p_off >= 0
            # the look-ahead after each segment (its first present value, else the one after it) ...
            z_v, z_f = tl.associative_scan((tl.load(at + 4, mask=m, other=0.0).to(ACC), has), 1, _latest)
            z_v = tl.where(z_f, z_v, v_seen[:, None])
            z_f = z_f | f_seen[:, None]
            # ... and entering it: the segment's predecessor's in scan order (found: a count, as in _look_ahead)
            _, in_v, has_prev = tl.associative_scan((z_v, z_v, tl.zeros(a.shape, tl.int1)), 1, _next_combine)
            in_v = tl.where(has_prev, in_v, v_seen[:, None])
            n_has = has.to(tl.int32)
            in_f = (tl.cumsum(n_has, axis=1) - n_has > 0) | f_seen[:, None]
            # the segment's last present step, with its look-ahead; then the steps before it
            c_lo = n_chunks - tl.minimum((j + 1) * SEG, n_chunks)  # the segment's first chunk in time
            t = (c_lo.to(tl.int64) * BLOCK + p_off.to(tl.int64))[:, :, None]
            m_p = (m & has)[:, :, None]
            p_a, p_b, p_r, p_valid, _ = PROLOGUE(X, SX, P, row, t, m_p, T, ACC, (in_v[:, :, None], in_f[:, :, None]))
            p_a = tl.sum(tl.where(p_valid, p_a, 1.0).to(ACC), axis=2)
            p_b = tl.sum(tl.where(p_valid, p_b, 0.0).to(ACC), axis=2)
            p_r = tl.max((p_r & p_valid).to(tl.int32), axis=2) != 0
            a, b, r = combine(p_a, p_b, p_r, a, b, r)
            v_seen = tl.sum(tl.where(s_last, z_v, 0.0), axis=1)
            f_seen = tl.max((s_last & z_f).to(tl.int32), axis=1) != 0
        j_a, j_b, j_r = tl.associative_scan((a, b, r), 1, combine)
        b_a, b_b, b_r = _last(j_a, j_b, j_r, s_last)
        carry = _value(b_a, b_b, b_r, carry)
    return carry, v_seen, f_seen


@jit
def _scan_kernel(
    X,  # tuple of input pointers (None for an absent input), read by the hooks
    SX,  # tuple of (row stride, time stride) pairs, one per input
    P,  # tuple of scalar parameters (gamma, lambda, ...), read by the hooks
    O,  # tuple of output pointers, written by the epilogue
    SO,  # tuple of (row stride, time stride) pairs, one per output
    Y0,  # the carry entering each segment [n_rows, n_segments] (per row [n_rows] with COMPOSE); None: 0
    SUMMARY,  # [n_rows, n_segments, SUMMARY_WIDTH]: each segment's composed map (A, B, R), written (the
              # first launch of a time split) or read (COMPOSE); None: no split. With AHEAD two more: see _walk
    Y_END,  # [n_rows]: the carry after the row's last step in scan order, written; None: not kept
    n_rows,  # number of independent sequences (every dim but time, flattened)
    T,  # sequence length
    SEG,  # chunks per segment; program (i, s) scans segment s of its rows
    PROLOGUE: tl.constexpr,  # jit fn: inputs at t -> (a, b, reset, valid, keep)
    EPILOGUE: tl.constexpr,  # jit fn: (y, y_in, keep) -> outputs stored
    REVERSE: tl.constexpr,  # True: scan from t = T-1 down to 0 (the forward pass)
    ACC: tl.constexpr,  # accumulation dtype: tl.float32, or tl.float64 for float64 inputs
    ROWS: tl.constexpr,  # rows per program
    BLOCK: tl.constexpr,  # time steps per chunk
    V: tl.constexpr,  # time steps per vector: a chunk is BLOCK // V vectors of V ascending steps
    STAGES: tl.constexpr,  # software pipelining of the chunk loop (1: none)
    BLOCK_S: tl.constexpr,  # segments' maps composed at once (COMPOSE)
    COMPOSE: tl.constexpr,  # the second launch of a two-launch split: compose the maps SUMMARY holds
                            # for the segments before this one, then scan with the epilogue
    AHEAD: tl.constexpr = None,  # jit fn: inputs at t -> (present, value), the prologue's look-ahead (a split
                                 # of it composes in two launches); the prologue's valid steps are its present ones
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
    v_seen = tl.zeros([ROWS], ACC)  # the look-ahead after the segment (AHEAD): none
    f_seen = m_r & False
    if SUMMARY is None:
        carry = _walk(X, SX, P, O, SO, row, m_r, carry, v_seen, f_seen, k_start, k_end, n_chunks, T, PROLOGUE, EPILOGUE,
                      REVERSE, ACC, ROWS, BLOCK, V, STAGES, False, AHEAD)
        if Y_END is not None:  # (the last segment's program holds the row's end)
            tl.store(Y_END + o_r, carry, mask=m_r & (o_r * 0 + pid_s == n_seg - 1))
    elif COMPOSE:
        carry, v_seen, f_seen = _composed_carry(SUMMARY, X, SX, P, row, o_r, m_r, pid_s, n_seg, carry, n_chunks, T, SEG,
                                                PROLOGUE, AHEAD, ACC, BLOCK, BLOCK_S)
        carry = _walk(X, SX, P, O, SO, row, m_r, carry, v_seen, f_seen, k_start, k_end, n_chunks, T, PROLOGUE, EPILOGUE,
                      REVERSE, ACC, ROWS, BLOCK, V, STAGES, False, AHEAD)
        if Y_END is not None:
            tl.store(Y_END + o_r, carry, mask=m_r & (o_r * 0 + pid_s == n_seg - 1))
    else:
        s_a, s_b, s_r, s_p, v_seen, f_seen = _walk(X, SX, P, O, SO, row, m_r, carry, v_seen, f_seen, k_start, k_end,
                                                   n_chunks, T, PROLOGUE, EPILOGUE, REVERSE, ACC, ROWS, BLOCK, V,
                                                   STAGES, True, AHEAD)
        W: tl.constexpr = SUMMARY_WIDTH
        tl.store(SUMMARY + o_seg * W, s_a, mask=m_r)
        tl.store(SUMMARY + o_seg * W + 1, s_b, mask=m_r)
        tl.store(SUMMARY + o_seg * W + 2, s_r.to(ACC), mask=m_r)
        if AHEAD is not None:  # the last present step's offset in the segment (-1: none), the first present value
            tl.store(SUMMARY + o_seg * W + 3, tl.where(s_p >= 0, s_p - (n_chunks - k_end) * BLOCK, -1).to(ACC), mask=m_r)
            tl.store(SUMMARY + o_seg * W + 4, v_seen, mask=m_r)


# The carries of a time-split scan: a scan over the segments' composed maps, in scan order.
SEG_A, SEG_B, SEG_RESET = tl.constexpr(0), tl.constexpr(1), tl.constexpr(2)  # X: views of the summary
SEG_CARRY = tl.constexpr(0)  # O: the carry entering each segment


@jit
def _segments_prologue(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    a = load(X[SEG_A], SX[SEG_A], row, t, m, 1.0, ACC)
    b = load(X[SEG_B], SX[SEG_B], row, t, m, 0.0, ACC)
    return a, b, load_flag(X[SEG_RESET], SX[SEG_RESET], row, t, m), m, ()


@jit
def _segments_epilogue(X, SX, P, O, SO, row, t, m, T, ACC: tl.constexpr, valid, y, y_in, keep):
    store(O[SEG_CARRY], SO[SEG_CARRY], row, t, m, y_in)
