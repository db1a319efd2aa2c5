"""The PyTorch path: the same recurrences with plain tensor ops, differentiable by autograd.

Used for ``backend="torch"`` and for CPU tensors when the Triton interpreter is off. The scan
is Hillis–Steele: ⌈log2 T⌉ rounds, each composing every step with the one ``k`` before it in
scan order, so it runs at tensor speed (no Python loop over T) and autograd differentiates it.
Arithmetic is float32 (float64 for float64 inputs), as in the kernels.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from . import _checks


def scan(a, b, reset, valid, initial=None, reverse=True):
    """y_t = b_t + a_t y_{t±1} along the last dim, with resets (selects) and padded identities.

    ``a``, ``b``: float (..., T); ``reset``, ``valid``: bool (..., T); ``initial``: (...) or None.
    """
    a = torch.where(valid, a, torch.ones_like(a))
    b = torch.where(valid, b, torch.zeros_like(b))
    r = reset & valid
    if reverse:
        a, b, r = a.flip(-1), b.flip(-1), r.flip(-1)
    T, k = a.shape[-1], 1
    while k < T:
        a_l = F.pad(a[..., :-k], (k, 0), value=1.0)
        b_l = F.pad(b[..., :-k], (k, 0), value=0.0)
        r_l = F.pad(r[..., :-k], (k, 0), value=False)
        a, b, r = torch.where(r, a, a * a_l), torch.where(r, b, b + a * b_l), r | r_l
        k *= 2
    y = b if initial is None else torch.where(r, b, b + a * initial.unsqueeze(-1))
    y = torch.where(valid.flip(-1) if reverse else valid, y, torch.zeros_like(y))
    return y.flip(-1) if reverse else y


def _last_dim(x, time_dim, dtype=None):
    if x is None:
        return None
    x = x.movedim(time_dim, -1)
    return x if dtype is None else x.to(dtype)


def linear_scan(a, b, initial, mask, time_dim, reverse, acc):
    a_, b_ = _last_dim(a, time_dim, acc), _last_dim(b, time_dim, acc)
    valid = torch.ones_like(b_, dtype=torch.bool) if mask is None else _last_dim(mask, time_dim) != 0
    init = None if initial is None else initial.to(acc)
    y = scan(a_, b_, a_ == 0, valid, init, reverse)  # a = 0: a boundary (reset)
    return y.movedim(-1, time_dim).to(b.dtype)


def _flags(p, shape_like):
    """valid, terminated, done as bool (..., T) tensors (time last)."""
    valid = torch.ones_like(shape_like, dtype=torch.bool) if p.mask is None else _last_dim(p.mask, p.time_dim) != 0
    false = torch.zeros_like(valid)
    term = false if p.terminated is None else _last_dim(p.terminated, p.time_dim) != 0
    trunc = false if p.truncated is None else _last_dim(p.truncated, p.time_dim) != 0
    last = false.clone()
    last[..., -1] = True  # the end of the window acts as a truncation
    return valid, term, term | trunc | last


def _coef(tensor, number, time_dim, acc):
    return number if tensor is None else _last_dim(tensor, time_dim, acc)


def returns(p):
    """discounted_returns / gae / td_lambda on the torch path (``p`` is returns._Problem)."""
    dtype = _checks.result_dtype(p.rewards, p.values, p.next_values)
    acc = _checks.acc_dtype(dtype)
    r = _last_dim(p.rewards, p.time_dim, acc)
    zero = torch.zeros_like(r)
    valid, term, done = _flags(p, r)
    gamma = _coef(p.gamma, p.params[0], p.time_dim, acc)
    lam = _coef(p.lambda_, p.params[1], p.time_dim, acc)
    v = None if p.values is None else _last_dim(p.values, p.time_dim, acc)
    if p.next_values is not None:
        v_next = _last_dim(p.next_values, p.time_dim, acc)
    else:
        boot = zero[..., -1] if p.bootstrap_value is None else p.bootstrap_value.to(acc)
        after = zero[..., 1:] if v is None else v[..., 1:]
        v_next = torch.cat([after, boot.unsqueeze(-1)], -1)
    if p.kind == "discounted_return":
        b = r + torch.where(done & ~term, gamma * v_next, zero)
    elif p.kind == "gae":
        b = r + torch.where(term, zero, gamma * v_next) - v
    else:  # td_lambda: inside an episode V' carries weight 1 - lambda, at its end 1
        w = torch.where(done, torch.ones_like(r), 1.0 - lam + zero)
        b = r + torch.where(term, zero, gamma * w * v_next)
    y = scan(gamma * lam + zero, b, done, valid)
    out = lambda x: x.movedim(-1, p.time_dim).to(dtype)  # noqa: E731
    if p.kind == "gae":
        return out(y), out(torch.where(valid, y + v, zero))
    return out(y)
