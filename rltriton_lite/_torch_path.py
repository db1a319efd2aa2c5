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


def _prepared(a, b, reset, valid, reverse):
    """The steps in scan order, a padded step as the identity."""
    a = torch.where(valid, a, torch.ones_like(a))
    b = torch.where(valid, b, torch.zeros_like(b))
    r = reset & valid
    return (a.flip(-1), b.flip(-1), r.flip(-1)) if reverse else (a, b, r)


def _inclusive(a, b, r):
    """Hillis–Steele: the composed map (a, b, reset) of every prefix of the last dim, in scan order."""
    T, k = a.shape[-1], 1
    while k < T:
        a_l = F.pad(a[..., :-k], (k, 0), value=1.0)
        b_l = F.pad(b[..., :-k], (k, 0), value=0.0)
        r_l = torch.cat([torch.zeros_like(r[..., :k]), r[..., :-k]], -1)  # (F.pad of a bool: inductor's CPU C++ fails)
        # behind a reset the steps before are selected away *before* the product: a NaN or Inf
        # there must not reach the gradient either (autograd's 0 * NaN through the unused branch)
        a_l, b_l = torch.where(r, 1.0, a_l), torch.where(r, 0.0, b_l)
        a, b, r = torch.where(r, a, a * a_l), torch.where(r, b, b + a * b_l), r | r_l
        k *= 2
    return a, b, r


def scan(a, b, reset, valid, initial=None, reverse=True, with_end=False):
    """y_t = b_t + a_t y_{t±1} along the last dim, with resets (selects) and padded identities.

    ``a``, ``b``: float (..., T); ``reset``, ``valid``: bool (..., T); ``initial``: (...) or None.
    ``with_end``: also the value after the last step in scan order, as carried (the kernel's ``end``).
    """
    a, b, r = _inclusive(*_prepared(a, b, reset, valid, reverse))
    y = b if initial is None else torch.where(r, b, b + a * initial.unsqueeze(-1))
    end = y[..., -1]
    y = torch.where(valid.flip(-1) if reverse else valid, y, torch.zeros_like(y))
    y = y.flip(-1) if reverse else y
    return (y, end) if with_end else y


def compose(a, b, reset, valid=None, reverse=True):
    """(A, B, reset): the whole last dim's composed map, as ``plan.summarize``'s."""
    valid = torch.ones_like(reset) if valid is None else valid
    a, b, r = _inclusive(*_prepared(a, b, reset, valid, reverse))
    return a[..., -1], b[..., -1], r[..., -1]


def entering(maps, carry):
    """The value a composed map (A, B, reset) hands on from ``carry`` (a select at a reset)."""
    a, b, r = maps
    return torch.where(r, b, b + a * carry)


def carried(y, valid, initial=None, reverse=True):
    """The value entering each step of a scan: ``y`` of the next valid step in scan order (a
    padded step passes it on), ``initial`` (or 0) past the end."""
    z = scan(torch.ones_like(y), torch.where(valid, y, 0.0), valid, torch.ones_like(valid), initial, reverse)
    end = torch.zeros_like(y[..., :1]) if initial is None else initial.unsqueeze(-1).to(y.dtype)
    return torch.cat([z[..., 1:], end], -1) if reverse else torch.cat([end, z[..., :-1]], -1)


class _AtBoundary(torch.autograd.Function):
    """0, whose gradient in ``a`` is ``grad * y_next``: added to b_t at a boundary (a_t = 0),
    where y_t = b_t is a select that hides dy_t/da_t = y_{t+1}, it gives a_t the kernel's
    ḡ_t·y_{t+1} (ḡ_t = dL/db_t, every later use of y_t included); no NaN enters the value."""

    @staticmethod
    def forward(ctx, a, y_next):
        ctx.save_for_backward(y_next)
        return torch.zeros_like(a)

    @staticmethod
    def backward(ctx, grad):
        (y_next,) = ctx.saved_tensors
        return grad * y_next, None


def _last_dim(x, time_dim, dtype=None):
    if x is None:
        return None
    x = x.movedim(time_dim, -1)
    return x if dtype is None else x.to(dtype)


def linear_scan(a, b, initial, mask, time_dim, reverse, window=False, summary=False):
    """``window``: also the value entering the first step in scan order, per row (the kernel's
    ``end``); ``summary``: each row's composed map instead (plan.summarize's)."""
    acc = _checks.acc_dtype(_checks.result_dtype(a, b, initial))
    a_, b_ = _last_dim(a, time_dim, acc), _last_dim(b, time_dim, acc)
    valid = torch.ones_like(b_, dtype=torch.bool) if mask is None else _last_dim(mask, time_dim) != 0
    init = None if initial is None else initial.to(acc)
    boundary = a_ == 0  # a boundary (reset): y_t = b_t, selected, so NaN cannot cross it
    if summary:
        return compose(a_, b_, boundary, valid, reverse)
    if a.requires_grad and torch.is_grad_enabled():  # dy_t/da_t = y_{t+1} there too: enter it through b
        with torch.no_grad():
            y_next = carried(scan(a_, b_, boundary, valid, init, reverse), valid, init, reverse)
        b_ = b_ + torch.where(valid & boundary, _AtBoundary.apply(a_, y_next), 0.0)
    y, end = scan(a_, b_, boundary, valid, init, reverse, with_end=True)
    y = y.movedim(-1, time_dim).to(b.dtype)
    return (y, end.reshape(-1).to(b.dtype)) if window else y


def _flags(p, shape_like):
    """valid, terminated, done as bool (..., T) tensors (time last)."""
    valid = torch.ones_like(shape_like, dtype=torch.bool) if p.mask is None else _last_dim(p.mask, p.time_dim) != 0
    false = torch.zeros_like(valid)
    term = false if p.terminated is None else _last_dim(p.terminated, p.time_dim) != 0
    trunc = false if p.truncated is None else _last_dim(p.truncated, p.time_dim) != 0
    last = false.clone()
    last[..., -1] = p.params[2] == 0  # the end of the window acts as a truncation, unless the row goes on (P_OPEN)
    return valid, term, term | trunc | last


def _window(p, acc, shape):
    """An open window's carry in the shape of a row's batch dims (the scan's initial value), else None."""
    return None if p.carry is None else p.carry.to(acc).reshape(shape)


def _ended(p, outs, end):
    """The outputs, and an open window's value entering its first step (per row, as the kernels')."""
    return outs if p.carry is None else outs + (end.reshape(-1),)


def _coef(tensor, number, time_dim, acc):
    return number if tensor is None else _last_dim(tensor, time_dim, acc)


def _episodes(p, *float_inputs):
    """What every scan-based estimator starts from: output dtype, arithmetic dtype, rewards
    (time last), zeros, the valid/terminated/done flags, gamma and lambda."""
    dtype = _checks.result_dtype(*float_inputs)
    acc = _checks.acc_dtype(dtype)
    r = _last_dim(p.rewards, p.time_dim, acc)
    valid, term, done = _flags(p, r)
    gamma = _coef(p.gamma, p.params[0], p.time_dim, acc)
    lam = _coef(p.lambda_, p.params[1], p.time_dim, acc)
    return dtype, acc, r, torch.zeros_like(r), valid, term, done, gamma, lam


def returns(p, summary=False):
    """discounted_returns / gae / td_lambda on the torch path (``p`` is episode.Problem);
    ``summary``: each row's composed map instead (plan.summarize's)."""
    dtype, acc, r, zero, valid, term, done, gamma, lam = _episodes(p, p.rewards, p.values, p.next_values)
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
    if summary:
        return compose(gamma * lam + zero, b, done, valid)
    y, end = scan(gamma * lam + zero, b, done, valid, _window(p, acc, r.shape[:-1]), with_end=True)
    out = lambda x: x.movedim(-1, p.time_dim).to(dtype)  # noqa: E731
    if p.kind == "gae":
        return _ended(p, (out(y), out(torch.where(valid, y + v, zero))), end.to(dtype))
    return _ended(p, (out(y),), end.to(dtype))


def vtrace(p, summary=False):
    """V-trace on the torch path (``p`` is episode.Problem with params (γ, λ, open, ρ̄, c̄, ρ̄_pg));
    ``summary``: each row's composed map instead (plan.summarize's).

    ``log_rhos`` is detached: the importance weights are constants, as in the kernel.
    """
    dtype = _checks.result_dtype(p.rewards, p.values, p.next_values, p.log_rhos)
    acc = _checks.acc_dtype(dtype)
    r = _last_dim(p.rewards, p.time_dim, acc)
    v = _last_dim(p.values, p.time_dim, acc)
    zero = torch.zeros_like(r)
    valid, term, done = _flags(p, r)
    gamma = _coef(p.gamma, p.params[0], p.time_dim, acc) + zero
    lam = _coef(p.lambda_, p.params[1], p.time_dim, acc) + zero
    rho_bar, c_bar, pg_rho_bar = p.params[3:]
    if p.next_values is not None:
        v_next = _last_dim(p.next_values, p.time_dim, acc)
    else:
        boot = zero[..., -1] if p.bootstrap_value is None else p.bootstrap_value.to(acc)
        v_next = torch.cat([v[..., 1:], boot.unsqueeze(-1)], -1)
    # padding's log-ratios are never read (selected away before any arithmetic, as the kernel's
    # masked loads): NaN there must not reach the gradients through 0 * NaN
    ratio = torch.where(valid, _last_dim(p.log_rhos.detach(), p.time_dim, acc), 0.0).exp()
    rho, rho_pg = ratio.clamp(max=rho_bar), ratio.clamp(max=pg_rho_bar)
    c = lam * ratio.clamp(max=c_bar)
    delta = r + torch.where(term, zero, gamma * v_next) - v
    b = v + rho * delta - torch.where(done, zero, gamma * c * v_next)
    if summary:
        return compose(gamma * c, b, done, valid)
    carry = _window(p, acc, r.shape[:-1])
    vs, end = scan(gamma * c, b, done, valid, carry, with_end=True)
    # vs_{t+1}: the next unpadded step's (past the end: 0, or an open window's carry)
    vs_next = torch.where(done, v_next, carried(vs, valid, carry))
    target = r + torch.where(term, zero, gamma * (lam * vs_next + (1.0 - lam) * v_next))
    pg = torch.where(valid, rho_pg * (target - v), zero)
    out = lambda x: x.movedim(-1, p.time_dim).to(dtype)  # noqa: E731
    return _ended(p, (out(vs), out(pg)), end.to(dtype))


# ---- SAC -------------------------------------------------------------------------------------------
def sac_targets(p, summary=False):
    """Soft λ-returns on the torch path (``p`` is sac._Problem): the scan carries
    H_t = G_t - α log π_t through padding; G_t is rebuilt from H_{t+1} as in the kernel.
    ``summary``: each row's composed map of H instead (plan.summarize's)."""
    dtype, acc, r, zero, valid, term, done, gamma, lam = _episodes(p, p.rewards, p.log_probs, p.next_log_probs,
                                                                   *p.next_q)
    alpha = p.params[3]
    q_min = torch.stack([_last_dim(q, p.time_dim, acc) for q in p.next_q]).min(0).values
    v_soft = q_min - alpha * _last_dim(p.next_log_probs, p.time_dim, acc)
    w = torch.where(done, torch.ones_like(r), 1.0 - lam + zero)  # an episode end bootstraps fully
    b_g = r + torch.where(term, zero, gamma * w * v_soft)
    log_pi = zero if p.log_probs is None else _last_dim(p.log_probs, p.time_dim, acc)
    a = gamma * lam + zero
    # padded steps as explicit identities, so that H is kept (carried) there too
    pairs = (torch.where(valid, a, 1.0), torch.where(valid, b_g - alpha * log_pi, zero), done & valid,
             torch.ones_like(valid))
    if summary:
        return compose(*pairs)
    carry = _window(p, acc, r.shape[:-1])
    h, end = scan(*pairs, carry, with_end=True)
    h_next = torch.cat([h[..., 1:], (zero[..., :1] if carry is None else carry.unsqueeze(-1))], -1)
    g = torch.where(done, b_g, b_g + a * h_next)
    return _ended(p, (torch.where(valid, g, zero).movedim(-1, p.time_dim).to(dtype),), end.to(dtype))


def sac_masked_mean(x, mask):
    """The mean of ``x`` over the elements where ``mask`` != 0 (all when None); 0 over none,
    with zero gradients, as ppo_clip_loss and crr_loss."""
    valid = _unmasked(mask, x)
    return torch.where(valid, x, torch.zeros_like(x)).sum() / valid.sum().clamp(min=1).to(x.dtype)


def sac_actor_loss(log_probs, q, alpha, mask, acc):
    """mean(α log π - min_k Q_k) over unmasked elements, in ``acc``."""
    q_min = torch.stack([x.to(acc) for x in q]).min(0).values
    return sac_masked_mean(alpha * log_probs.to(acc) - q_min, mask)


# ---- Losses: PPO's clipped surrogate and CRR (ppo.py, crr.py) --------------------------------------
def _unmasked(mask, like):
    """The unmasked elements, as bool."""
    return torch.ones_like(like, dtype=torch.bool) if mask is None else mask != 0


def ppo_clip_loss(log_probs, old_log_probs, advantages, mask, low, high, normalize, reduction, dtype, acc):
    """ppo.ppo_clip_loss: (loss, clip_fraction, approx_kl); differentiable in log_probs only."""
    valid = _unmasked(mask, log_probs)
    zero = torch.zeros((), dtype=acc, device=log_probs.device)
    # padding may hold anything (NaN included): it is selected away before any arithmetic
    logp = torch.where(valid, log_probs.to(acc), zero)
    old = torch.where(valid, old_log_probs.detach().to(acc), zero)
    adv = torch.where(valid, advantages.detach().to(acc), zero)
    count = valid.sum().to(acc)
    n = count.clamp(min=1)
    if normalize:  # std unbiased (CleanRL's .std()), and 0 with fewer than 2 elements
        centred = torch.where(valid, adv - adv.sum() / n, zero)
        std = torch.sqrt(centred.square().sum() / (count - 1).clamp(min=1))
        adv = centred / (std + 1e-8)
    log_ratio = logp - old
    ratio = torch.exp(log_ratio)
    surrogate = torch.min(ratio * adv, torch.clamp(ratio, low, high) * adv)
    loss = torch.where(valid, -surrogate, zero)
    with torch.no_grad():
        clip_fraction = (valid & ((ratio < low) | (ratio > high))).sum().to(acc) / n
        approx_kl = torch.where(valid, (ratio - 1) - log_ratio, zero).sum() / n
    if reduction == "mean":
        loss = loss.sum() / n
    elif reduction == "sum":
        loss = loss.sum()
    return loss.to(dtype), clip_fraction.to(dtype), approx_kl.to(dtype)


def crr_loss(log_probs, q_values, baseline, mask, beta, max_weight, binary, use_max, dtype, out_dtype):
    """crr.crr_loss: (loss, weights, advantages); ``baseline`` has a trailing dim of K samples."""
    acc = _checks.acc_dtype(dtype)
    valid = _unmasked(mask, log_probs)
    zero = torch.zeros((), dtype=acc, device=log_probs.device)
    b = baseline.detach().to(acc)
    b = b.amax(-1) if use_max else b.mean(-1)
    adv = torch.where(valid, q_values.detach().to(acc) - b, zero)
    w = (adv > 0).to(acc) if binary else torch.clamp(torch.exp(adv / beta), max=max_weight)
    w = torch.where(valid, w, zero)
    logp = torch.where(valid, log_probs.to(acc), zero)
    loss = -(w * logp).sum() / valid.sum().clamp(min=1).to(acc)
    return loss.to(dtype), w.to(out_dtype), adv.to(out_dtype)
