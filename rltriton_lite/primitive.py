"""``linear_scan``, the primitive itself: y_t = b_t + a_t · y_{t+1} (or y_{t-1}) as hooks of the
scan kernel, its transposed scan for gradients, the autograd Function, the public function and its
custom op."""
from __future__ import annotations

import torch

from . import _checks, _ops, _torch_path
from ._ops import constant, empty, grad_or_none, route
from ._triton import jit, tl
from .plan import Plan, bounded, call_key, launch, planned, use_triton
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


def _ls_forward(a, b, initial, mask, time_dim, reverse, keep_carried, plan=None):
    """``(y, carried)``: the forward scan; ``carried`` is y as the scan carries it (for dL/da),
    a separate buffer when padding hides it from y (``keep_carried`` and a mask), else ``y``.
    ``plan``: the call's ``plan.Plan``, whose forward launch takes the tensors as they come."""
    y = _checks.new_output(b, time_dim, b.dtype)
    carried = y
    if mask is not None and keep_carried:
        carried = _checks.new_output(b, time_dim, b.dtype)
    O = (y, None if carried is y else carried)

    def first():
        shape, T, n_rows = _checks.problem(b, time_dim)
        acc = _checks.acc_dtype(_checks.result_dtype(a, b, initial))
        X = [_checks.rows(x, shape, time_dim) for x in (a, b, mask)]
        init = _checks.row_vector(initial, shape, time_dim)
        pairs = [None if o is None else _checks.rows(o, shape, time_dim) for o in O]
        return X, pairs, launch(_ls_prologue, _ls_epilogue, X, (1 if reverse else -1,), pairs, n_rows, T,
                                reverse=reverse, acc_dtype=acc, initial=None if init is None else init[0],
                                time_contiguous=X[LS_B][1][1] == 1), None

    # (a scan from an initial carry plans every call: the plan's launch takes none)
    planned(plan if initial is None else None, "forward", (a, b, mask), (1 if reverse else -1,), O, first)
    return y, carried


def _ls_backward(dy, a, y, initial, mask, time_dim, reverse, need_initial, plan=None):
    """``(da, db, d_initial)``: the transposed scan; ``y`` is the forward's carried output;
    ``d_initial`` is None unless ``need_initial`` (and an ``initial`` was given). ``plan``: the
    call's ``plan.Plan``, as for ``_ls_forward``."""
    da = _checks.new_output(y, time_dim, a.dtype)
    db = _checks.new_output(y, time_dim, y.dtype)
    d_init = None
    if initial is not None and need_initial:
        d_init = y.new_empty(initial.numel(), dtype=initial.dtype)

    def first():
        shape, T, n_rows = _checks.problem(y, time_dim)
        acc = _checks.acc_dtype(_checks.result_dtype(a, y, initial))
        X = [_checks.rows(x, shape, time_dim) for x in (a, None, mask, y, dy)]
        X.append(_checks.row_vector(initial, shape, time_dim))
        O = [_checks.rows(da, shape, time_dim), _checks.rows(db, shape, time_dim),
             None if d_init is None else (d_init, (1, None))]
        return X, O, launch(_ls_bwd_prologue, _ls_bwd_epilogue, X, (1 if reverse else -1,), O, n_rows, T,
                            reverse=not reverse, acc_dtype=acc, time_contiguous=X[LS_CARRIED][1][1] == 1), None

    planned(plan if initial is None else None, ("backward", _checks.signature((dy, y))), (a, None, mask, y, dy, None),
            (1 if reverse else -1,), (da, db, None), first)
    if d_init is not None:
        d_init = d_init.reshape(initial.shape)
    return da, db, d_init


class _LinearScan(torch.autograd.Function):
    """y = scan(a, b) along ``time_dim``; the backward is the transposed scan."""

    @staticmethod
    def forward(ctx, a, b, initial, mask, time_dim, reverse, plan):
        # dL/da_t needs y_{t+1} as carried, which padded steps hide from y: keep it apart
        y, carried = _ls_forward(a, b, initial, mask, time_dim, reverse, ctx.needs_input_grad[0], plan)
        ctx.save_for_backward(a, carried, initial, mask)
        ctx.time_dim, ctx.reverse, ctx.plan = time_dim, reverse, plan
        return y

    @staticmethod
    def backward(ctx, dy):
        a, y, initial, mask = ctx.saved_tensors
        da, db, d_init = _ls_backward(dy, a, y, initial, mask, ctx.time_dim, ctx.reverse, ctx.needs_input_grad[2],
                                      ctx.plan)
        return da, db, d_init, None, None, None, None


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
    key = call_key(("linear_scan", a, b, reverse, initial, mask, time_dim, backend))
    plan = _PLANS.get(key)
    if plan is not None:  # a known signature: nothing to check
        return _run(a, b, initial, mask, plan.layout, reverse, plan.use_kernel, plan)
    args = (a, initial, mask)
    b = _checks.float_tensor("b", b)
    time_dim = _checks.time_dim(time_dim, b, "b")
    a = _checks.float_tensor("a", a, like=b)
    a = _checks.broadcast("a", a, b.shape)
    mask = _checks.flag("mask", mask, b, "b")
    initial = _checks.per_row("initial", initial, b, time_dim)
    reverse = _checks.flag_arg("reverse", reverse)
    use_kernel = use_triton(_checks.backend(backend), b.device)
    plan = None
    if key is not None and a is args[0] and initial is args[1] and mask is args[2]:
        plan = bounded(_PLANS, key, lambda: Plan(use_kernel, time_dim))
    return _run(a, b, initial, mask, time_dim, reverse, use_kernel, plan)


_PLANS = {}  # linear_scan's plan.Plan by signature


def _run(a, b, initial, mask, time_dim, reverse, use_kernel, plan):
    if b.numel() == 0:
        return torch.empty_like(b)
    return route(use_kernel, (a, b, initial),
                 torch_path=lambda: _torch_path.linear_scan(a, b, initial, mask, time_dim, reverse),
                 custom_op=lambda: _linear_scan_custom_op(a, b, initial, mask, time_dim, reverse),
                 function=lambda: _LinearScan.apply(a, b, initial, mask, time_dim, reverse, plan),
                 kernel=lambda: _ls_forward(a, b, initial, mask, time_dim, reverse, False, plan)[0])

# --------------------------------------------------------------------------------------------
# linear_scan as a custom op (torch.compile)
# --------------------------------------------------------------------------------------------
@torch.library.custom_op(f"{_ops.NS}::linear_scan", mutates_args=(), schema=(
    "(Tensor a, Tensor b, Tensor? initial, Tensor? mask, int time_dim, bool reverse, bool keep_carried) "
    "-> (Tensor, Tensor)"))
def _linear_scan_op(a, b, initial, mask, time_dim, reverse, keep_carried):
    """(y, y as carried: a separate buffer if kept (padding hides it from y), else empty)."""
    y, carried = _ls_forward(a, b, initial, mask, time_dim, reverse, keep_carried)
    return y, (empty(y) if carried is y else carried)


@_linear_scan_op.register_fake
def _(a, b, initial, mask, time_dim, reverse, keep_carried):
    y = _checks.new_output(b, time_dim, b.dtype)
    keep = mask is not None and keep_carried
    return y, (_checks.new_output(b, time_dim, b.dtype) if keep else empty(y))


@torch.library.custom_op(f"{_ops.NS}::linear_scan_backward", mutates_args=(), schema=(
    "(Tensor dy, Tensor a, Tensor y, Tensor? initial, Tensor? mask, int time_dim, bool reverse, "
    "bool need_initial) -> (Tensor, Tensor, Tensor)"))
def _linear_scan_backward_op(dy, a, y, initial, mask, time_dim, reverse, need_initial):
    da, db, d_init = _ls_backward(dy, a, y, initial, mask, time_dim, reverse, need_initial)
    return da, db, (empty(y) if d_init is None else d_init)


@_linear_scan_backward_op.register_fake
def _(dy, a, y, initial, mask, time_dim, reverse, need_initial):
    da = _checks.new_output(y, time_dim, a.dtype)
    db = _checks.new_output(y, time_dim, y.dtype)
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
