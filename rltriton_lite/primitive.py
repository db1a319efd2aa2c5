"""``linear_scan``, the primitive itself: y_t = b_t + a_t · y_{t+1} (or y_{t-1}) as hooks of the
scan kernel, its transposed scan for gradients, the autograd Function, the public function and its
custom op."""
from __future__ import annotations

from typing import NamedTuple

import torch

from . import _checks, _torch_path
from ._ops import Kernels
from ._triton import jit, tl
from .plan import Plan, bounded, call_key, launch, planned, summarize, use_triton
from .tile import load, load_mask, store

__all__ = ["linear_scan"]


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
def _ls_epilogue(X, SX, P, O, SO, row, t, m, T, ACC: tl.constexpr, valid, y, y_in, keep):
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
    # a = 0 is a boundary: a reset; the first step of the recurrence (a_prev = 1) takes the scan's
    # initial carry: 0, or what flows into a window of a longer row (distributed.py)
    return a_prev, dy, valid_prev & (a_prev == 0.0), m, (valid,)


@jit
def _ls_bwd_epilogue(X, SX, P, O, SO, row, t, m, T, ACC: tl.constexpr, valid, g, g_in, keep):
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


class _Problem(NamedTuple):
    """Validated inputs of one call."""

    a: torch.Tensor
    b: torch.Tensor
    initial: torch.Tensor | None
    mask: torch.Tensor | None
    time_dim: int
    reverse: bool
    keep_carried: bool  # a gradient for ``a`` will be asked for (see _forward)
    window: bool = False  # a window of a longer row: the outputs end with the value entering its first step
    plan: object = None  # the call's plan.Plan


def _forward(p: _Problem):
    """``((y,), saved)``: the forward scan. dL/da needs y as the scan carries it, which passes
    through padded steps where y is 0: with a mask and ``keep_carried``, a second buffer saved."""
    a, b, initial, mask, time_dim = p.a, p.b, p.initial, p.mask, p.time_dim
    y = _checks.new_output(b, time_dim, b.dtype)
    carried = _checks.new_output(b, time_dim, b.dtype) if mask is not None and p.keep_carried else None
    end = b.new_empty(b.numel() // b.shape[time_dim], dtype=b.dtype) if p.window else None
    D = (1 if p.reverse else -1,)

    def first():
        shape, T, n_rows = _checks.problem(b, time_dim)
        acc = _checks.acc_dtype(_checks.result_dtype(a, b, initial))
        X = [_checks.rows(x, shape, time_dim) for x in (a, b, mask)]
        init = _checks.row_vector(initial, shape, time_dim)
        pairs = [None if o is None else _checks.rows(o, shape, time_dim) for o in (y, carried)]
        return X, pairs, launch(_ls_prologue, _ls_epilogue, X, D, pairs, n_rows, T, reverse=p.reverse,
                                acc_dtype=acc, initial=None if init is None else init[0],
                                time_contiguous=X[LS_B][1][1] == 1, end=end), None

    # (a scan from an initial carry plans every call: the plan's launch takes none)
    planned(p.plan if initial is None else None, "forward", (a, b, mask), D, (y, carried), first)
    return (y,) + (() if end is None else (end,)), () if carried is None else (carried,)


def _summary(p: _Problem):
    """(A, B, reset), each [rows]: each row's composed map (distributed.py)."""
    shape, T, n_rows = _checks.problem(p.b, p.time_dim)
    acc = _checks.acc_dtype(_checks.result_dtype(p.a, p.b))
    X = [_checks.rows(x, shape, p.time_dim) for x in (p.a, p.b, p.mask)]
    return summarize(_ls_prologue, _ls_epilogue, X, (1 if p.reverse else -1,), n_rows, T, reverse=p.reverse,
                     acc_dtype=acc, device=p.b.device, time_contiguous=X[LS_B][1][1] == 1).unbind(-1)


def _backward(p: _Problem, saved, grads, need):
    """(da, db, d_initial): the transposed scan, over y as the forward carried it."""
    a, initial, mask, time_dim, dy = p.a, p.initial, p.mask, p.time_dim, grads[0]
    d_end = grads[1] if p.window else None  # what flows into a window's first step (_forward's end)
    y = saved[-1] if len(saved) > 1 + p.window else saved[0]  # (the outputs, then the carried buffer if kept)
    da = _checks.new_output(y, time_dim, a.dtype)
    db = _checks.new_output(y, time_dim, y.dtype)
    d_init = y.new_empty(initial.numel(), dtype=initial.dtype) if need.get("initial") else None
    D = (1 if p.reverse else -1,)

    def first():
        shape, T, n_rows = _checks.problem(y, time_dim)
        acc = _checks.acc_dtype(_checks.result_dtype(a, y, initial))
        X = [_checks.rows(x, shape, time_dim) for x in (a, None, mask, y, dy)]
        X.append(_checks.row_vector(initial, shape, time_dim))
        O = [_checks.rows(da, shape, time_dim), _checks.rows(db, shape, time_dim),
             None if d_init is None else (d_init, (1, None))]
        return X, O, launch(_ls_bwd_prologue, _ls_bwd_epilogue, X, D, O, n_rows, T, reverse=not p.reverse,
                            acc_dtype=acc, time_contiguous=X[LS_CARRIED][1][1] == 1,
                            initial=None if d_end is None else d_end.contiguous()), None

    planned(p.plan if initial is None and d_end is None else None, "backward", (a, None, mask, y, dy, None), D, (da, db, None), first,
            sign=(dy, y))
    return {"a": da, "b": db, "initial": None if d_init is None else d_init.reshape(initial.shape)}


KERNELS = Kernels("linear_scan", _Problem, _forward, _backward, wrt=("a", "b", "initial"), saves_outputs=True)


@_checks.numpy_io
def linear_scan(a, b, *, reverse=True, initial=None, mask=None, time_dim=-1, backend="auto", time_group=None):
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
        backend: "auto" (Triton on CUDA, PyTorch on CPU), "triton" (on CPU: the interpreter,
            under ``TRITON_INTERPRET=1``) or "torch".
        time_group: a ``torch.distributed`` process group whose ranks hold the rows' steps in
            rank order, this rank its own (any number, 0 included): the call returns this rank's
            share of the one-process result (README, "Across processes"). ``initial`` is read
            on the rank where the scan starts (the last rank for a reverse scan, the first for a
            forward one). None: one process.

    Returns:
        ``y`` with the shape and dtype of ``b``; differentiable in ``a``, ``b`` and ``initial``.
    """
    if time_group is not None:
        return _sharded(a, b, reverse, initial, mask, time_dim, backend, time_group)
    key = call_key(("linear_scan", a, b, reverse, initial, mask, time_dim, backend))
    plan = _PLANS.get(key)
    if plan is None:
        args = (a, initial, mask)
        b = _checks.float_tensor("b", b)
        time_dim = _checks.time_dim(time_dim, b, "b")
        a = _checks.float_tensor("a", a, like=b)
        a = _checks.broadcast("a", a, b.shape)
        mask = _checks.flag("mask", mask, b, "b")
        initial = _checks.per_row("initial", initial, b, time_dim)
        reverse = _checks.flag_arg("reverse", reverse)
        plan = Plan(use_triton(_checks.backend(backend), b.device), time_dim)
        if key is not None and a is args[0] and initial is args[1] and mask is args[2]:
            bounded(_PLANS, key, lambda: plan)  # (else a plan for this call alone)
    if b.numel() == 0:
        return torch.empty_like(b)
    keep = mask is not None and torch.is_grad_enabled() and a.requires_grad
    p = _Problem(a, b, initial, mask, plan.layout, bool(reverse), keep, False, plan)
    return KERNELS(p, plan.use_kernel,
                   lambda: (_torch_path.linear_scan(a, b, initial, mask, plan.layout, reverse),))[0]


_PLANS = {}  # linear_scan's plan.Plan by signature


def _sharded(a, b, reverse, initial, mask, time_dim, backend, group):
    """linear_scan over rows whose steps the ranks of ``group`` hold in rank order (distributed.py)."""
    from . import distributed

    b = _checks.float_tensor("b", b)
    time_dim = _checks.time_dim(time_dim, b, "b")
    reverse = bool(_checks.flag_arg("reverse", reverse))

    def prepare(x, window, boundary):  # (no window ends, no boundary value: padding is the identity)
        bb = x["b"]
        aa = _checks.broadcast("a", _checks.float_tensor("a", x["a"], like=bb), bb.shape)
        m = _checks.flag("mask", x["mask"], bb, "b")
        p = _Problem(aa, bb, None, m, time_dim, reverse, m is not None and aa.requires_grad, True)
        return p, use_triton(_checks.backend(backend), bb.device)

    def summary(p, use_kernel):
        return _summary(p) if use_kernel else _torch_path.linear_scan(p.a, p.b, None, p.mask, p.time_dim, p.reverse,
                                                                     summary=True)

    def run(p, use_kernel, carry):
        p = p._replace(initial=carry.reshape(p.b.movedim(p.time_dim, -1).shape[:-1]))
        return KERNELS(p, use_kernel, lambda: _torch_path.linear_scan(p.a, p.b, p.initial, p.mask, p.time_dim,
                                                                      p.reverse, window=True))

    w = distributed.Window("linear_scan", dict(a=a, b=b, mask=mask, initial=initial), time_dim, b, prepare, summary,
                           run, lambda: (torch.empty_like(b),), initial="initial", reverse=reverse)
    return distributed.time_sharded(w, group)[0]
