r"""PPO's clipped surrogate loss: an elementwise prologue and the deterministic sum of ``_reduce``.

The recurrence, its resets and its gradients are derived in docs/ALGORITHMS.md,
"PPO's clipped surrogate".
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from . import _checks, _torch_path, distributed
from ._ops import Kernels
from ._reduce import Layout, launch_map, param, reduce, store_grad, upstream, vector
from ._triton import jit, tl
from .plan import Plan, bounded, call_key, planned, use_triton
from .tile import load, load_mask, store

__all__ = ["ppo_clip_loss", "PPOOutput"]

REDUCTIONS = ("mean", "sum", "none")


class PPOOutput(NamedTuple):
    loss: torch.Tensor
    clip_fraction: torch.Tensor
    approx_kl: torch.Tensor


# ---- PPO: hooks ------------------------------------------------------------------------------------
# Inputs X
LOG_PROBS = tl.constexpr(0)
OLD_LOG_PROBS = tl.constexpr(1)
ADVANTAGES = tl.constexpr(2)
MASK = tl.constexpr(3)
NORM = tl.constexpr(4)  # the normalisation (mu, scale) as a 2-vector; None without normalisation
BOUNDS = tl.constexpr(5)  # (low, high) as float64 (float64 problems), else None: P's numbers
UPSTREAM = tl.constexpr(6)  # backward: the upstream gradient (_reduce.upstream)
# Params P: (low, high) = (1 - eps_low, 1 + eps_high) as numbers
P_LOW = tl.constexpr(0)
P_HIGH = tl.constexpr(1)
# Outputs O: forward (the per-element loss for reduction="none", else None); backward (d log_probs,)
OUT_LOSS = tl.constexpr(0)
D_LOG_PROBS = tl.constexpr(0)


@jit
def _scale(N, ACC: tl.constexpr):
    """The normalisation's 1/(std + 1e-8); 1 without normalisation."""
    if N is None:
        return 1.0
    else:
        return tl.load(N + 1).to(ACC)


@jit
def _ppo_terms(X, SX, P, row, t, m, ACC: tl.constexpr):
    """(valid, ratio, log ratio, low, high, centred advantage, the two surrogate terms).

    The advantage is A - mu with normalisation (the scale is applied by the caller), else A.
    """
    m_valid = load_mask(X[MASK], SX[MASK], row, t, m)
    b_log_ratio = load(X[LOG_PROBS], SX[LOG_PROBS], row, t, m_valid, 0.0, ACC) - load(X[OLD_LOG_PROBS], SX[OLD_LOG_PROBS], row, t, m_valid, 0.0, ACC)
    b_ratio = tl.exp(b_log_ratio)
    low = param(X[BOUNDS], 0, P[P_LOW], ACC)
    high = param(X[BOUNDS], 1, P[P_HIGH], ACC)
    b_adv = load(X[ADVANTAGES], SX[ADVANTAGES], row, t, m_valid, 0.0, ACC)
    if X[NORM] is not None:
        b_adv = tl.where(m_valid, b_adv - tl.load(X[NORM]).to(ACC), 0.0)
    b_unclipped = b_ratio * b_adv
    b_clipped = tl.clamp(b_ratio, low, high, propagate_nan=tl.PropagateNan.ALL) * b_adv
    return m_valid, b_ratio, b_log_ratio, low, high, b_adv, b_unclipped, b_clipped


@jit
def _adv_moments(X, SX, P, O, SO, row, t, m, ACC: tl.constexpr):
    """(count, sum, sum of squares) of the unmasked advantages, centred on X[NORM][0] if given."""
    m_valid = load_mask(X[MASK], SX[MASK], row, t, m)
    b_adv = load(X[ADVANTAGES], SX[ADVANTAGES], row, t, m_valid, 0.0, ACC)
    if X[NORM] is not None:
        b_adv = tl.where(m_valid, b_adv - tl.load(X[NORM]).to(ACC), 0.0)
    return m_valid.to(ACC), b_adv, b_adv * b_adv


@jit
def _ppo_forward(X, SX, P, O, SO, row, t, m, ACC: tl.constexpr):
    """Stats (loss unscaled, count, clipped, kl, (A - mu)^2); stores the per-element loss if asked."""
    m_valid, b_ratio, b_log_ratio, low, high, b_adv, b_unclipped, b_clipped = _ppo_terms(X, SX, P, row, t, m, ACC)
    b_loss = tl.where(m_valid, -tl.minimum(b_unclipped, b_clipped, propagate_nan=tl.PropagateNan.ALL), 0.0)
    if O[OUT_LOSS] is not None:
        store(O[OUT_LOSS], SO[OUT_LOSS], row, t, m, b_loss * _scale(X[NORM], ACC))
    m_clip = m_valid & ((b_ratio < low) | (b_ratio > high))
    b_kl = tl.where(m_valid, (b_ratio - 1.0) - b_log_ratio, 0.0)
    return b_loss, m_valid.to(ACC), m_clip.to(ACC), b_kl, b_adv * b_adv


@jit
def _ppo_backward(X, SX, P, O, SO, row, t, m, ACC: tl.constexpr):
    """d log_probs = g * (-A_hat * ratio) where the unclipped term is the min (ties included)."""
    m_valid, b_ratio, b_log_ratio, low, high, b_adv, b_unclipped, b_clipped = _ppo_terms(X, SX, P, row, t, m, ACC)
    b_d = tl.where(b_clipped < b_unclipped, 0.0, -b_adv * _scale(X[NORM], ACC) * b_ratio)
    store_grad(X[UPSTREAM], SX[UPSTREAM], O[D_LOG_PROBS], SO[D_LOG_PROBS], row, t, m, m_valid, b_d, ACC)


# ---- PPO: launchers --------------------------------------------------------------------------------
class _Problem(NamedTuple):
    """Validated inputs of one call."""

    log_probs: torch.Tensor
    old_log_probs: torch.Tensor
    advantages: torch.Tensor
    mask: torch.Tensor | None
    bounds: tuple  # (1 - eps_low, 1 + eps_high)
    normalize: bool
    reduction: str
    plan: object = None  # the call's plan.Plan

    @property
    def dtype(self):  # of the outputs
        return _checks.result_dtype(self.log_probs, self.old_log_probs, self.advantages)

    @property
    def layout(self) -> Layout:
        return Layout.of(self.log_probs) if self.plan is None else self.plan.layout


def _inputs(p: _Problem, layout: Layout):
    """The X tuple (without the normalisation and the upstream gradient)."""
    X = [layout.rows(x) for x in (p.log_probs, p.old_log_probs, p.advantages, p.mask)]
    return X + [None, vector(p.bounds, _checks.acc_dtype(p.dtype), p.log_probs.device)]


def _normalisation(mu, sum_sq, count):
    """(mu, 1/(std + 1e-8)) as a 2-vector; std unbiased, and 0 with fewer than 2 elements."""
    std = torch.sqrt(sum_sq / (count - 1).clamp(min=1))
    return torch.stack([mu, 1.0 / (std + 1e-8)])


def _forward(p: _Problem):
    """((loss, clip_fraction, approx_kl), (1/N, and the normalisation if any))."""
    layout, device, dtype = p.layout, p.log_probs.device, p.dtype
    acc = _checks.acc_dtype(dtype)
    X = None if p.plan is not None and "forward" in p.plan.launches else _inputs(p, layout)

    def run(hook, n_stats, outputs=(None,)):
        return reduce(hook, n_stats, X, p.bounds, outputs, layout.n_rows, layout.T, acc, device)[0]

    norm = None
    if p.normalize:
        moments = run(_adv_moments, 3)
        count = moments[0]
        mu = moments[1] / count.clamp(min=1)
        norm = torch.stack([mu, torch.ones_like(mu)])  # centre only: the scale comes after
        if p.reduction == "none":  # every element needs the scale: one more (centred) pass
            X[NORM] = (norm, (0, 0))
            norm = _normalisation(mu, run(_adv_moments, 3)[2], count)
        X[NORM] = (norm, (0, 0))
    out = layout.new(dtype, p.log_probs) if p.reduction == "none" else None

    def first():  # means over the unmasked elements, and 1/N at [1]: the default call needs no host arithmetic
        O = (layout.rows(out),)
        means, summed = reduce(_ppo_forward, 5, X, p.bounds, O, layout.n_rows, layout.T, acc, device, count=1)
        return X, O, summed, means

    means = planned(None if p.normalize else p.plan, "forward",
                    (p.log_probs, p.old_log_probs, p.advantages, p.mask, None, None), p.bounds, (out,), first)
    loss, inv_n, clip_fraction, approx_kl, sq = means.unbind()  # one op for the five (views cost host time)
    if p.reduction != "none":
        if p.normalize:
            norm = _normalisation(mu, sq / inv_n, 1.0 / inv_n)
            loss = loss * norm[1]
        loss = (loss if p.reduction == "mean" else loss / inv_n).to(dtype)
    else:
        loss = out
    return (loss, clip_fraction.to(dtype), approx_kl.to(dtype)), (inv_n,) if norm is None else (inv_n, norm)


def _backward(p: _Problem, saved, grads, need):
    """d log_probs: one fused elementwise kernel, with 1/N and the normalisation ``_forward`` saved."""
    grad = grads[0]
    if grad is None:  # no gradient reached the loss (gradcheck asks for the other outputs' rows)
        return {}
    inv_n, norm = saved[0], saved[1] if len(saved) > 1 else None
    layout = p.layout
    d_log_probs = layout.new(p.log_probs.dtype, p.log_probs)
    g = upstream(grad, p.reduction, inv_n, layout)

    def first():
        X = _inputs(p, layout)
        X[NORM] = None if norm is None else (norm, (0, 0))
        X.append(g)
        O = (layout.rows(d_log_probs),)
        return X, O, launch_map(_ppo_backward, X, p.bounds, O, layout.n_rows, layout.T, inv_n.dtype), None

    planned(p.plan, "backward", (p.log_probs, p.old_log_probs, p.advantages, p.mask, norm, None, g[0]), p.bounds,
            (d_log_probs,), first, sign=(grad, norm, inv_n))
    return {"log_probs": d_log_probs}


KERNELS = Kernels("ppo_clip_loss", _Problem, _forward, _backward, wrt=("log_probs",), differentiable=1)


def _epsilon(epsilon):
    """(eps_low, eps_high) from a number or a pair."""
    if isinstance(epsilon, (tuple, list)):
        if len(epsilon) != 2:
            raise ValueError(f"epsilon must be a float or a pair (low, high), got {len(epsilon)} values")
        return tuple(_checks.real("epsilon", e) for e in epsilon)
    e = _checks.real("epsilon", epsilon)
    return e, e


@_checks.numpy_io
def ppo_clip_loss(log_probs, old_log_probs, advantages, *, epsilon=0.2, normalize_advantages=False,
                  mask=None, reduction="mean", backend="auto", group=None) -> PPOOutput:
    r"""PPO's clipped surrogate objective (Schulman et al., 2017), as a loss to minimise.

    .. math::

        \rho_t = e^{\log\pi_t - \log\pi^{\text{old}}_t}, \qquad
        \text{loss} = -\frac{1}{N}\sum_t \min\big(\rho_t A_t,\;
            \operatorname{clip}(\rho_t, 1-\epsilon_{\text{low}}, 1+\epsilon_{\text{high}}) A_t\big)

    over the N unmasked elements. Elementwise and reduction run in one kernel, followed by a
    deterministic (fixed-order) sum; the backward is one fused elementwise kernel.

    Args:
        log_probs: log π(a_t|s_t) under the current policy, float tensor of any shape.
        old_log_probs: log π_old(a_t|s_t) from the rollout, shape of ``log_probs``; a constant.
        advantages: A_t, shape of ``log_probs`` (e.g. from :func:`gae`); a constant.
        epsilon: the clip range: a float, or a pair ``(low, high)`` (asymmetric clipping, as in
            DAPO's clip-higher); each ``>= 0``.
        normalize_advantages: replace A by (A - mean)/(std + 1e-8) over the unmasked elements
            (std unbiased, as CleanRL); with fewer than two elements std is taken as 0.
        mask: optional, shape of ``log_probs`` (bool, integer or float); 0 marks padding, which
            takes no part in the loss, the statistics or the normalisation.
        reduction: "mean" over unmasked elements, "sum", or "none" (per-element loss, 0 where
            masked).
        backend: "auto", "triton" or "torch".
        group: a ``torch.distributed`` process group (e.g. ``dist.group.WORLD``): the loss, the
            advantage normalisation, clip_fraction and approx_kl over the unmasked elements of
            every rank, each rank passing its own. Every rank gets the global value; its gradient
            is the global loss's for its own elements. Under DDP, which averages gradients over
            ranks, backpropagate ``loss * world_size`` so that the average is the global loss's
            gradient. One small collective per call (two with normalisation: its mean and
            variance first); ranks that disagree on the call (loss, dtype) all raise the same
            ValueError.

    Returns:
        ``PPOOutput(loss, clip_fraction, approx_kl)``: the loss (0-d, or per element for
        ``reduction="none"``), differentiable in ``log_probs`` only; and CleanRL's statistics
        over the unmasked elements, detached 0-d tensors: the fraction of ratios outside
        ``[1-eps_low, 1+eps_high]`` and ``mean((ratio - 1) - log ratio)``. With no unmasked
        element the loss, both statistics and the gradient are 0 (not NaN).
    """
    if group is not None:  # the statistics over every rank's elements (distributed.py)
        log_probs = _checks.float_tensor("log_probs", log_probs)
        advantages = _checks.same_shape("advantages", advantages, log_probs, "log_probs")
        mask = _checks.flag("mask", mask, log_probs, "log_probs", exact=True)
        return distributed.ppo_clip_loss(
            lambda adv, norm, red: ppo_clip_loss(log_probs, old_log_probs, adv, epsilon=epsilon, normalize_advantages=norm,
                                                 mask=mask, reduction=red, backend=backend),
            log_probs, old_log_probs, advantages, mask, normalize_advantages, reduction, group)
    key = call_key(("ppo", log_probs, old_log_probs, advantages, mask, normalize_advantages, reduction, backend))
    plan = _PLANS.get(key)
    if plan is None:
        given_mask = mask
        log_probs = _checks.float_tensor("log_probs", log_probs)
        old_log_probs = _checks.same_shape("old_log_probs", old_log_probs, log_probs, "log_probs")
        advantages = _checks.same_shape("advantages", advantages, log_probs, "log_probs")
        mask = _checks.flag("mask", mask, log_probs, "log_probs", exact=True)
        _checks.flag_arg("normalize_advantages", normalize_advantages)
        _checks.choice("reduction", reduction, REDUCTIONS)
        kernel = use_triton(_checks.backend(backend), log_probs.device) and log_probs.numel() > 0
        plan = Plan(kernel, None if key is None and torch.compiler.is_compiling() else Layout.of(log_probs))
        if key is not None and mask is given_mask:  # (a mask the check replaced: validated every call)
            bounded(_PLANS, key, lambda: plan)
    eps_low, eps_high = _epsilon(epsilon)  # every call: its numbers
    p = _Problem(log_probs, old_log_probs, advantages, mask, (1.0 - eps_low, 1.0 + eps_high),
                 bool(normalize_advantages), reduction, plan)
    return PPOOutput(*KERNELS(p, plan.use_kernel, lambda: _torch_path.ppo_clip_loss(
        log_probs, old_log_probs, advantages, mask, *p.bounds, p.normalize, reduction, p.dtype,
        _checks.acc_dtype(p.dtype))))


_PLANS = {}  # ppo_clip_loss's plan.Plan by signature
