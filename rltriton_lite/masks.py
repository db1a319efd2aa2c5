"""Masked steps as if deleted (docs/DESIGN.md, "The primitive"), derived as tensors by one scan.

A forward kernel that runs alone looks ahead itself (``scan._look_ahead``); this module serves the
calls that keep their inputs for a backward pass, are traced, or are windows of ``time_group=``.

A masked step is removed from its row: the last unmasked step ends the window (a truncation), and
V(s_{t+1}) is V of the next unmasked step, ``bootstrap_value`` after the last one. Both need to
look ahead in time, which is what a reverse scan does: y_t = t at an unmasked step (a reset),
carried through the masked ones, so the value entering step t is the next unmasked step (T past
the last). One launch of the scan kernel with these hooks writes the flags (``truncated`` or the
window's end) and, where the call derives them, the next values; the estimator's kernel then
reads nothing of a masked step but its flag. The gradient of the derived next values is the same
scan run forwards: values[s] is next_values[p] of the previous unmasked step p.

The PyTorch path (and a torch.compile trace) does the same with tensor ops (``torch_ahead``).
"""
from __future__ import annotations

import torch

from . import _checks
from ._triton import jit, tl
from .plan import launch, planned
from .tile import load, load_flag, load_mask, store

# Inputs X
M_MASK, M_VALUES, M_BOOT, M_TRUNC, M_D_NEXT = (tl.constexpr(i) for i in range(5))
M_OPEN = tl.constexpr(5)  # per row: the row goes on after the window (distributed.py); None: no row does
# Outputs O: forward (the window's ends, the next values); backward (d values, d bootstrap_value)
M_ENDS, M_NEXT = tl.constexpr(0), tl.constexpr(1)
M_D_VALUES, M_D_BOOT = tl.constexpr(0), tl.constexpr(1)


@jit
def _ahead_prologue(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    unmasked = load_mask(X[M_MASK], SX[M_MASK], row, t, m)
    # y_t = t where unmasked, else y_{t+1}; T after the last step (no initial carry to allocate)
    reset = unmasked | (t == T - 1)
    return 1.0, tl.where(unmasked, t, tl.where(reset, T, 0)).to(ACC), reset, m, (unmasked,)


@jit
def _ahead_epilogue(X, SX, P, O, SO, row, t, m, T, ACC: tl.constexpr, valid, y, y_in, keep):
    unmasked = keep[0]
    after = tl.where(t == T - 1, T, y_in.to(tl.int64))  # the next unmasked step after t; T past the last one
    last = unmasked & (after >= T)
    if X[M_OPEN] is not None:  # the row's next unmasked step is after the window
        last = last & (load(X[M_OPEN], (1, None), row, t, m, 0.0, ACC) == 0.0)
    ends = load_flag(X[M_TRUNC], SX[M_TRUNC], row, t, unmasked) | last
    store(O[M_ENDS], SO[M_ENDS], row, t, m, ends)
    if O[M_NEXT] is not None:
        v = load(X[M_VALUES], SX[M_VALUES], row, after, m & (after < T), 0.0, ACC)
        boot = load(X[M_BOOT], SX[M_BOOT], row, t, m & (after >= T), 0.0, ACC)
        store(O[M_NEXT], SO[M_NEXT], row, t, m, tl.where(after < T, v, boot))


@jit
def _behind_prologue(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    unmasked = load_mask(X[M_MASK], SX[M_MASK], row, t, m)
    g = load(X[M_D_NEXT], SX[M_D_NEXT], row, t, unmasked, 0.0, ACC)
    return 1.0, g, unmasked, m, (unmasked,)  # dL/dnext_values[p] carried forward to the next unmasked step


@jit
def _behind_epilogue(X, SX, P, O, SO, row, t, m, T, ACC: tl.constexpr, valid, y, y_in, keep):
    if O[M_D_VALUES] is not None:
        store(O[M_D_VALUES], SO[M_D_VALUES], row, t, m, tl.where(keep[0], y_in, 0.0))
    if O[M_D_BOOT] is not None:  # after the last step: the last unmasked step's, which bootstraps
        store(O[M_D_BOOT], SO[M_D_BOOT], row, t, m & (t == T - 1), y)


def _acc(T, dtype):
    """Step indices travel as floats: float64 past 2**24 steps, or for float64 values."""
    return torch.float64 if T >= 1 << 24 or dtype == torch.float64 else torch.float32


def _ahead(mask, truncated, values, boot, time_dim, next_dtype, open_rows, plan=None):
    """(ends, next_values) by one launch (the call's ``plan`` keeps it: plan.planned)."""
    shape, T, n_rows = _checks.problem(mask, time_dim)
    ends = _checks.new_output(mask, time_dim, torch.bool)
    nxt = None if next_dtype is None else _checks.new_output(mask, time_dim, next_dtype)

    def first():
        acc = _acc(T, next_dtype)
        X = [_checks.rows(x, shape, time_dim) for x in (mask, values)] + \
            [_checks.row_vector(boot, shape, time_dim), _checks.rows(truncated, shape, time_dim), None,
             None if open_rows is None else (open_rows.reshape(-1).to(acc).contiguous(), (1, None))]
        O = [_checks.rows(ends, shape, time_dim), None if nxt is None else _checks.rows(nxt, shape, time_dim)]
        return X, O, launch(_ahead_prologue, _ahead_epilogue, X, (), O, n_rows, T, reverse=True, acc_dtype=acc,
                            time_contiguous=X[M_MASK][1][1] == 1), None

    planned(plan, ("ahead", next_dtype), (mask, values, boot, truncated, None, open_rows), (), (ends, nxt), first)
    return ends, nxt


class _Ahead(torch.autograd.Function):
    """``_ahead``, differentiable in values and bootstrap_value (the next values' gradient)."""

    @staticmethod
    def forward(ctx, mask, truncated, values, boot, time_dim, next_dtype, open_rows, plan):
        ends, nxt = _ahead(mask, truncated, values, boot, time_dim, next_dtype, open_rows, plan)
        ctx.save_for_backward(mask)
        ctx.time_dim, ctx.boot_shape = time_dim, None if boot is None else boot.shape
        ctx.mark_non_differentiable(ends)
        ctx.set_materialize_grads(False)
        return ends, nxt

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, _d_ends, d_next):
        (mask,) = ctx.saved_tensors
        if d_next is None:
            return None, None, None, None, None, None, None, None
        td = ctx.time_dim
        shape, T, n_rows = _checks.problem(mask, td)
        d_values = None if not ctx.needs_input_grad[2] else _checks.new_output(mask, td, d_next.dtype)
        d_boot = None if ctx.boot_shape is None else d_next.new_zeros(n_rows)
        X = [_checks.rows(mask, shape, td), None, None, None, _checks.rows(d_next, shape, td)]
        O = [None if d_values is None else _checks.rows(d_values, shape, td),
             None if d_boot is None else (d_boot, (1, None))]
        if all(o is None for o in O):
            return None, None, None, None, None, None, None, None
        launch(_behind_prologue, _behind_epilogue, X, (), O, n_rows, T, reverse=False, acc_dtype=_acc(0, d_next.dtype),
               time_contiguous=X[M_MASK][1][1] == 1)
        return None, None, d_values, None if d_boot is None else d_boot.reshape(ctx.boot_shape), None, None, None, None


def torch_ahead(mask, truncated, time_dim, next_dtype=None, values=None, bootstrap_value=None, open_rows=None):
    """``_Ahead`` with tensor ops (the PyTorch path, and torch.compile's trace): the next unmasked
    step is a running minimum of unmasked positions from the end, and next values a gather, so
    that no masked element is read."""
    valid = mask.movedim(time_dim, -1) != 0
    T = valid.shape[-1]
    pos = torch.arange(T, device=valid.device)
    after = torch.where(valid, pos, T).flip(-1).cummin(-1).values.flip(-1)
    after = torch.cat([after[..., 1:], torch.full_like(after[..., :1], T)], -1)
    ends = valid & (after == T)
    if open_rows is not None:  # the row goes on after the window: its last unmasked step ends nothing
        ends = ends & ~open_rows.reshape(valid.shape[:-1]).unsqueeze(-1)
    if truncated is not None:
        ends = ends | (truncated.movedim(time_dim, -1) != 0)
    nxt = None
    if next_dtype is not None:
        v = torch.zeros(valid.shape, dtype=next_dtype, device=valid.device) if values is None \
            else values.movedim(time_dim, -1)
        boot = torch.zeros_like(v[..., 0]) if bootstrap_value is None else bootstrap_value.to(v.dtype).expand(v.shape[:-1])
        nxt = torch.cat([v, boot.unsqueeze(-1)], -1).gather(-1, after).movedim(-1, time_dim)
    return ends.movedim(-1, time_dim), nxt


def without_masked_steps(mask, truncated, time_dim, use_kernel, next_dtype=None, values=None, bootstrap_value=None,
                         open_rows=None, plan=None):
    """``(ends, next_values)``: the flags that end an episode's window (``truncated`` and each
    row's last unmasked step, but in the rows ``open_rows`` (bool, per row) marks as going on
    after the window), and, with ``next_dtype``, V(s_{t+1}) of the next unmasked step (of
    ``values``, 0 without; ``bootstrap_value`` after the last) in that dtype, else None."""
    if use_kernel and mask.numel() and not torch.compiler.is_compiling():
        if next_dtype is not None and torch.is_grad_enabled() and any(
                x is not None and x.requires_grad for x in (values, bootstrap_value)):
            return _Ahead.apply(mask, truncated, values, bootstrap_value, time_dim, next_dtype, open_rows, plan)
        return _ahead(mask, truncated, values, bootstrap_value, time_dim, next_dtype, open_rows, plan)
    return torch_ahead(mask, truncated, time_dim, next_dtype, values, bootstrap_value, open_rows)
