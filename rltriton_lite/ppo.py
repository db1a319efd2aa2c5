r"""PPO's clipped surrogate loss: an elementwise prologue and the deterministic sum of ``_reduce``.

The recurrence, its resets and its gradients are derived in docs/ALGORITHMS.md,
"PPO's clipped surrogate".
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from . import _checks
from . import _ops, _torch_path
from ._ops import constant, empty, route, unaliased
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


# --------------------------------------------------------------------------------------------
# PPO: hooks
# --------------------------------------------------------------------------------------------
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


# --------------------------------------------------------------------------------------------
# PPO: launchers
# --------------------------------------------------------------------------------------------
class _Problem(NamedTuple):
    """Validated inputs of one call."""

    log_probs: torch.Tensor
    old_log_probs: torch.Tensor
    advantages: torch.Tensor
    mask: torch.Tensor | None
    bounds: tuple  # (1 - eps_low, 1 + eps_high)
    normalize: bool
    reduction: str
    dtype: torch.dtype  # of the outputs
    plan: object = None  # the call's plan.Plan

    @property
    def acc(self):
        return _checks.acc_dtype(self.dtype)


def _inputs(p: _Problem, layout: Layout):
    """The X tuple (without the normalisation and the upstream gradient)."""
    X = [layout.rows(x) for x in (p.log_probs, p.old_log_probs, p.advantages, p.mask)]
    return X + [None, vector(p.bounds, p.acc, p.log_probs.device)]


def _normalisation(mu, sum_sq, count):
    """(mu, 1/(std + 1e-8)) as a 2-vector; std unbiased, and 0 with fewer than 2 elements."""
    std = torch.sqrt(sum_sq / (count - 1).clamp(min=1))
    return torch.stack([mu, 1.0 / (std + 1e-8)])


def _forward(p: _Problem, layout: Layout):
    """Returns (loss, (clip_fraction, approx_kl), normalisation or None, 1/N)."""
    device = p.log_probs.device
    X = None if p.plan is not None and "forward" in p.plan.launches else _inputs(p, layout)

    def run(hook, n_stats, outputs=(None,)):
        return reduce(hook, n_stats, X, p.bounds, outputs, layout.n_rows, layout.T, p.acc, device)[0]

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
    out = layout.new(p.dtype, device) if p.reduction == "none" else None

    def first():  # means over the unmasked elements, and 1/N at [1]: the default call needs no host arithmetic
        O = (layout.rows(out),)
        means, summed = reduce(_ppo_forward, 5, X, p.bounds, O, layout.n_rows, layout.T, p.acc, device, count=1)
        return X, O, summed, means

    means = planned(None if p.normalize else p.plan, "forward",
                    (p.log_probs, p.old_log_probs, p.advantages, p.mask, None, None), p.bounds, (out,), first)
    loss, inv_n, clip_fraction, approx_kl, sq = means.unbind()  # one op for the five (views cost host time)
    fractions = (clip_fraction.to(p.dtype), approx_kl.to(p.dtype))
    if p.reduction == "none":
        return out, fractions, norm, inv_n
    if p.normalize:
        norm = _normalisation(mu, sq / inv_n, 1.0 / inv_n)
        loss = loss * norm[1]
    if p.reduction == "sum":
        loss = loss / inv_n
    return loss.to(p.dtype), fractions, norm, inv_n


class _PPOLoss(torch.autograd.Function):
    @staticmethod
    def forward(ctx, p: _Problem, log_probs):
        layout = p.plan.layout
        loss, (clip_fraction, approx_kl), norm, inv_n = _forward(p, layout)
        ctx.mark_non_differentiable(clip_fraction, approx_kl)
        ctx.set_materialize_grads(False)  # no zeros for their gradients: a launch each
        ctx.problem, ctx.layout = p, layout
        ctx.save_for_backward(log_probs, p.old_log_probs, p.advantages, p.mask, norm, inv_n)
        return loss, clip_fraction, approx_kl

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad, _grad_clip_fraction, _grad_approx_kl):
        if grad is None:  # no gradient reached the loss (gradcheck asks for the other outputs' rows)
            return None, None
        log_probs, old, adv, mask, norm, inv_n = ctx.saved_tensors
        p = ctx.problem._replace(log_probs=log_probs, old_log_probs=old, advantages=adv, mask=mask)
        return None, _backward(p, ctx.layout, grad, norm, inv_n)


def _backward(p: _Problem, layout: Layout, grad, norm, inv_n):
    """d log_probs: one fused elementwise kernel; ``norm`` and ``inv_n`` as ``_forward`` gave."""
    d_log_probs = layout.new(p.log_probs.dtype, p.log_probs.device)
    g = upstream(grad, p.reduction, inv_n, layout)

    def first():
        X = _inputs(p, layout)
        X[NORM] = None if norm is None else (norm, (0, 0))
        X.append(g)
        O = (layout.rows(d_log_probs),)
        return X, O, launch_map(_ppo_backward, X, p.bounds, O, layout.n_rows, layout.T, p.acc), None

    planned(p.plan, ("backward", _checks.signature((grad, norm, inv_n))),
            (p.log_probs, p.old_log_probs, p.advantages, p.mask, norm, None, g[0]), p.bounds, (d_log_probs,), first)
    return d_log_probs


def _epsilon(epsilon):
    """(eps_low, eps_high) from a number or a pair."""
    if isinstance(epsilon, (tuple, list)):
        if len(epsilon) != 2:
            raise ValueError(f"epsilon must be a float or a pair (low, high), got {len(epsilon)} values")
        return tuple(_checks.real("epsilon", e) for e in epsilon)
    e = _checks.real("epsilon", epsilon)
    return e, e


def ppo_clip_loss(log_probs, old_log_probs, advantages, *, epsilon=0.2, normalize_advantages=False,
                  mask=None, reduction="mean", backend="auto") -> PPOOutput:
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

    Returns:
        ``PPOOutput(loss, clip_fraction, approx_kl)``: the loss (0-d, or per element for
        ``reduction="none"``), differentiable in ``log_probs`` only; and CleanRL's statistics
        over the unmasked elements, detached 0-d tensors: the fraction of ratios outside
        ``[1-eps_low, 1+eps_high]`` and ``mean((ratio - 1) - log ratio)``. With no unmasked
        element the loss, both statistics and the gradient are 0 (not NaN).
    """
    key = call_key(("ppo", log_probs, old_log_probs, advantages, mask, normalize_advantages, reduction, backend))
    plan = _PLANS.get(key)
    if plan is None:
        log_probs = _checks.float_tensor("log_probs", log_probs)
        old_log_probs = _checks.same_shape("old_log_probs", old_log_probs, log_probs, "log_probs")
        advantages = _checks.same_shape("advantages", advantages, log_probs, "log_probs")
        mask = _checks.flag("mask", mask, log_probs, "log_probs")
        _checks.flag_arg("normalize_advantages", normalize_advantages)
        _checks.choice("reduction", reduction, REDUCTIONS)
        kernel = use_triton(_checks.backend(backend), log_probs.device) and log_probs.numel() > 0
        plan = Plan(kernel, None if key is None and torch.compiler.is_compiling() else Layout.of(log_probs))
        if key is not None:
            bounded(_PLANS, key, lambda: plan)
    eps_low, eps_high = _epsilon(epsilon)  # every call: its numbers
    p = _Problem(log_probs, old_log_probs, advantages, mask, (1.0 - eps_low, 1.0 + eps_high),
                 bool(normalize_advantages), reduction, _checks.result_dtype(log_probs, old_log_probs, advantages),
                 plan)

    def forward():
        loss, fractions, _, _ = _forward(p, plan.layout)
        return loss, *fractions

    return PPOOutput(*route(plan.use_kernel, (log_probs,), custom_op=lambda: _ppo_custom_op(p),
                            torch_path=lambda: _torch_path.ppo_clip_loss(log_probs, old_log_probs, advantages, mask,
                                                                         *p.bounds, p.normalize, reduction, p.dtype,
                                                                         p.acc),
                            function=lambda: _PPOLoss.apply(p, log_probs), kernel=forward))


_PLANS = {}  # ppo_clip_loss's plan.Plan by signature

# --------------------------------------------------------------------------------------------
# The custom ops (torch.compile)
# --------------------------------------------------------------------------------------------
def _ppo_problem(log_probs, old_log_probs, advantages, mask, low, high, normalize, reduction):
    return _Problem(log_probs, old_log_probs, advantages, mask, (low, high), normalize, reduction,
                        _checks.result_dtype(log_probs, old_log_probs, advantages))


@torch.library.custom_op(f"{_ops.NS}::ppo_clip_loss", mutates_args=(), schema=(
    "(Tensor log_probs, Tensor old_log_probs, Tensor advantages, Tensor? mask, float low, float high, "
    "bool normalize, str reduction) -> (Tensor, Tensor, Tensor, Tensor)"))
def _ppo_op(log_probs, old_log_probs, advantages, mask, low, high, normalize, reduction):
    """(loss, (clip_fraction, approx_kl), normalisation (empty without), 1/N)."""
    p = _ppo_problem(log_probs, old_log_probs, advantages, mask, low, high, normalize, reduction)
    loss, fractions, norm, inv_n = _forward(p, Layout.of(log_probs))
    return unaliased(loss, torch.stack(fractions), (empty(inv_n) if norm is None else norm), inv_n)


@_ppo_op.register_fake
def _(log_probs, old_log_probs, advantages, mask, low, high, normalize, reduction):
    dtype = _checks.result_dtype(log_probs, old_log_probs, advantages)
    acc = _checks.acc_dtype(dtype)
    new = log_probs.new_empty
    loss = Layout.of(log_probs).new(dtype, log_probs.device) if reduction == "none" else new((), dtype=dtype)
    return loss, new((2,), dtype=dtype), new((2 if normalize else 0,), dtype=acc), new((), dtype=acc)


@torch.library.custom_op(f"{_ops.NS}::ppo_clip_loss_backward", mutates_args=(), schema=(
    "(Tensor grad, Tensor log_probs, Tensor old_log_probs, Tensor advantages, Tensor? mask, Tensor norm, "
    "Tensor inv_n, float low, float high, bool normalize, str reduction) -> Tensor"))
def _ppo_backward_op(grad, log_probs, old_log_probs, advantages, mask, norm, inv_n, low, high, normalize,
                     reduction):
    p = _ppo_problem(log_probs, old_log_probs, advantages, mask, low, high, normalize, reduction)
    return _backward(p, Layout.of(log_probs), grad, norm if normalize else None, inv_n)


@_ppo_backward_op.register_fake
def _(grad, log_probs, *args):
    return Layout.of(log_probs).new(log_probs.dtype, log_probs.device)


def _ppo_op_setup(ctx, inputs, output):
    log_probs, old_log_probs, advantages, mask = inputs[:4]
    _, fractions, norm, inv_n = output
    ctx.mark_non_differentiable(fractions, norm, inv_n)
    ctx.save_for_backward(log_probs, old_log_probs, advantages, mask, norm, inv_n)
    ctx.scalars = inputs[4:]


def _ppo_op_backward(ctx, grad, *_):
    d_log_probs = _ppo_backward_op(grad, *ctx.saved_tensors, *ctx.scalars)
    return (d_log_probs,) + (None,) * 7


_ppo_op.register_autograd(_ppo_op_backward, setup_context=_ppo_op_setup)


def _ppo_custom_op(p):
    """ppo_clip_loss's kernel path as the custom op: (loss, clip_fraction, approx_kl)."""
    loss, fractions, _, _ = _ppo_op(p.log_probs, constant(p.old_log_probs), constant(p.advantages), constant(p.mask),
                                    *p.bounds, p.normalize, p.reduction)
    return (loss, *fractions.unbind())
