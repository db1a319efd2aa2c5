r"""Critic Regularized Regression's policy loss (Wang et al., 2020): weighted behaviour cloning.

The recurrence, its resets and its gradients are derived in docs/ALGORITHMS.md,
"CRR".
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

__all__ = ["crr_loss", "CRROutput"]

MODES = ("exp", "binary")
BASELINE_REDUCES = ("mean", "max")


class CRROutput(NamedTuple):
    loss: torch.Tensor
    weights: torch.Tensor
    advantages: torch.Tensor


# Inputs X
LOG_PROBS = tl.constexpr(0)
Q_VALUES = tl.constexpr(1)
BASELINE = tl.constexpr(2)  # (rows, T, K) with strides (row, time, k)
MASK = tl.constexpr(3)
COEFS = tl.constexpr(4)  # (beta, max_weight) as float64 (float64 problems), else None: P's numbers
WEIGHTS = tl.constexpr(5)  # backward: the forward's weights; None: computed again from Q and the baseline
UPSTREAM = tl.constexpr(6)  # backward: the upstream gradient (_reduce.upstream)
# Params P
P_BETA = tl.constexpr(0)
P_MAX_WEIGHT = tl.constexpr(1)
P_K = tl.constexpr(2)  # sampled actions in the baseline
P_BINARY = tl.constexpr(3)  # 1: w = 1[A > 0], 0: w = min(exp(A / beta), max_weight)
P_MAX_BASELINE = tl.constexpr(4)  # 1: the baseline is the max over K, 0: the mean
# Outputs O: forward (weights, advantages), or (None, None); backward (d log_probs,)
OUT_WEIGHTS = tl.constexpr(0)
OUT_ADVANTAGES = tl.constexpr(1)
D_LOG_PROBS = tl.constexpr(0)


@jit
def _weights(X, SX, P, row, t, m_valid, ACC: tl.constexpr):
    """(w, A) where ``m_valid``, from Q and the baseline."""
    # the baseline: V(s_t) (K = 1), or the mean or max of the K sampled Q(s_t, a_j)
    s_k = SX[BASELINE][2]
    b_sum = load(X[BASELINE], SX[BASELINE], row, t, m_valid, 0.0, ACC)
    b_max = b_sum
    for k in range(1, P[P_K]):
        b_k = load(X[BASELINE] + k * s_k, SX[BASELINE], row, t, m_valid, 0.0, ACC)
        b_sum += b_k
        b_max = tl.maximum(b_max, b_k, propagate_nan=tl.PropagateNan.ALL)
    if P[P_MAX_BASELINE] != 0:
        b_base = b_max
    else:
        b_base = b_sum / P[P_K]
    b_adv = load(X[Q_VALUES], SX[Q_VALUES], row, t, m_valid, 0.0, ACC) - b_base
    if P[P_BINARY] != 0:
        b_w = (b_adv > 0).to(ACC)
    else:
        beta = param(X[COEFS], 0, P[P_BETA], ACC)
        max_weight = param(X[COEFS], 1, P[P_MAX_WEIGHT], ACC)
        b_w = tl.minimum(tl.exp(b_adv / beta), max_weight, propagate_nan=tl.PropagateNan.ALL)
    return b_w, b_adv


@jit
def _crr_forward(X, SX, P, O, SO, row, t, m, ACC: tl.constexpr):
    """Stats (sum of w * log_probs, count); stores the weights and advantages (0 where masked)
    if it is given them."""
    m_valid = load_mask(X[MASK], SX[MASK], row, t, m)
    b_w, b_adv = _weights(X, SX, P, row, t, m_valid, ACC)
    b_w = tl.where(m_valid, b_w, 0.0)
    if O[OUT_WEIGHTS] is not None:
        store(O[OUT_WEIGHTS], SO[OUT_WEIGHTS], row, t, m, b_w)
        store(O[OUT_ADVANTAGES], SO[OUT_ADVANTAGES], row, t, m, tl.where(m_valid, b_adv, 0.0))
    b_logp = load(X[LOG_PROBS], SX[LOG_PROBS], row, t, m_valid, 0.0, ACC)
    return tl.where(m_valid, -(b_w * b_logp), 0.0), m_valid.to(ACC)  # the loss is -mean(w logπ)


@jit
def _crr_backward(X, SX, P, O, SO, row, t, m, ACC: tl.constexpr):
    """d log_probs = g * (-w), with the weights the forward stored, or computed again."""
    m_valid = load_mask(X[MASK], SX[MASK], row, t, m)
    if X[WEIGHTS] is not None:
        b_w = load(X[WEIGHTS], SX[WEIGHTS], row, t, m_valid, 0.0, ACC)
    else:
        b_w = _weights(X, SX, P, row, t, m_valid, ACC)[0]
    store_grad(X[UPSTREAM], SX[UPSTREAM], O[D_LOG_PROBS], SO[D_LOG_PROBS], row, t, m, m_valid, -b_w, ACC)


class _Problem(NamedTuple):
    """Validated inputs of one call."""

    log_probs: torch.Tensor
    q_values: torch.Tensor
    baseline: torch.Tensor  # with a trailing dim of K samples (K = 1 for V(s))
    mask: torch.Tensor | None
    beta: float
    max_weight: float
    binary: bool
    use_max: bool
    need_weights: bool  # False: no weights and advantages written
    plan: object = None  # the call's plan.Plan

    @property
    def dtype(self):  # of the loss
        return _checks.result_dtype(self.log_probs, self.q_values, self.baseline)

    @property
    def params(self):
        return (self.beta, self.max_weight, self.baseline.shape[-1], int(self.binary), int(self.use_max))

    @property
    def layout(self) -> Layout:
        return Layout.of(self.log_probs) if self.plan is None else self.plan.layout[0]


def _inputs(p: _Problem, layout: Layout):
    X = [layout.rows(p.log_probs), layout.rows(p.q_values), layout.rows_k(p.baseline), layout.rows(p.mask)]
    return X + [vector((p.beta, p.max_weight), _checks.acc_dtype(p.dtype), p.log_probs.device)]


def _forward(p: _Problem):
    """((loss, weights, advantages), (1/N,)): one fused pass and the deterministic sum; weights
    and advantages None unless ``p.need_weights`` (the pass then only reads, as PPO's)."""
    layout, device, dtype = p.layout, p.log_probs.device, p.dtype
    acc = _checks.acc_dtype(dtype)
    weights = advantages = None
    if p.need_weights:
        out_dtype = _checks.result_dtype(p.q_values, p.baseline)
        weights, advantages = layout.new(out_dtype, p.q_values), layout.new(out_dtype, p.q_values)

    def first():
        X, O = _inputs(p, layout), (layout.rows(weights), layout.rows(advantages))
        means, summed = reduce(_crr_forward, 2, X, p.params, O, layout.n_rows, layout.T, acc, device, count=1)
        return X, O, summed, means

    # the mean of -w logπ over the unmasked elements, and 1/N (for the backward)
    means = planned(p.plan, "forward", (p.log_probs, p.q_values, p.baseline, p.mask, None), p.params,
                    (weights, advantages), first)
    loss, inv_n = means.unbind()
    return (loss.to(dtype), weights, advantages), (inv_n,)


def _backward(p: _Problem, saved, grads, need):
    """d log_probs = -g w / N, one elementwise kernel reading the weights the forward wrote, or,
    without them, computing them again from Q and the baseline."""
    grad = grads[0]
    if grad is None:  # no gradient reached the loss (gradcheck asks for the other outputs' rows)
        return {}
    _, weights, _, inv_n = saved
    weights = weights if p.need_weights else None
    layout = p.layout
    d_log_probs = layout.new(p.log_probs.dtype, p.log_probs)
    g = upstream(grad, "mean", inv_n, layout)
    again = (None, None) if weights is not None else (p.q_values, p.baseline)

    def first():
        X = [None, None, None, layout.rows(p.mask), None] if weights is not None else [None] + _inputs(p, layout)[1:]
        X += [layout.rows(weights), g]
        O = (layout.rows(d_log_probs),)
        return X, O, launch_map(_crr_backward, X, p.params, O, layout.n_rows, layout.T, inv_n.dtype), None

    planned(p.plan, "backward", (None, *again, p.mask, None, weights, g[0]), p.params, (d_log_probs,), first,
            sign=(grad, weights, inv_n))
    return {"log_probs": d_log_probs}


# the backward reads the weights the forward wrote (saved with the outputs)
KERNELS = Kernels("crr_loss", _Problem, _forward, _backward, wrt=("log_probs",), differentiable=1, saves_outputs=True)


def _baseline(baseline, q_values):
    """The baseline with a trailing dim of samples: V(s) gets K = 1."""
    baseline = _checks.float_tensor("baseline", baseline, like=q_values)
    shape = tuple(q_values.shape)
    if tuple(baseline.shape) == shape:
        return baseline.unsqueeze(-1)
    if baseline.dim() == q_values.dim() + 1 and tuple(baseline.shape[:-1]) == shape:
        if baseline.shape[-1] == 0:
            raise ValueError("baseline needs at least one sampled Q(s, a_j) in its last dim, got 0")
        return baseline
    raise ValueError(
        f"baseline must have the shape of q_values {_checks._shape(shape)} (V(s)) or that shape "
        f"plus a trailing dim of K sampled Q(s, a_j) {_checks._shape(shape + ('K',))}, "
        f"got {_checks._shape(baseline.shape)}"
    )


@_checks.numpy_io
def crr_loss(log_probs, q_values, baseline, *, beta=1.0, mode="exp", max_weight=20.0,
             baseline_reduce="mean", mask=None, need_weights=True, backend="auto", group=None) -> CRROutput:
    r"""CRR's advantage-weighted policy loss (Wang et al., 2020).

    .. math::

        A = Q - \text{baseline}, \qquad
        w = \min(e^{A/\beta}, w_{\max}) \;\text{("exp")} \;\text{or}\; [A > 0] \;\text{("binary")},
        \qquad \text{loss} = -\frac{1}{N}\sum_t w_t \log\pi(a_t|s_t)

    over the N unmasked elements, w a constant.

    Args:
        log_probs: log π(a_t|s_t) of the dataset's actions, float tensor of any shape.
        q_values: Q(s_t, a_t), shape of ``log_probs``; a constant.
        baseline: V(s_t), shape of ``q_values``; or Q(s_t, a_j) for K actions sampled from the
            policy, shape of ``q_values`` plus a trailing dim K; a constant.
        beta: temperature of the exponential weights, ``> 0``.
        mode: "exp" (CRR-exp) or "binary" (CRR-binary: the indicator of A > 0).
        max_weight: the clip of the exponential weights, ``> 0`` (20 in the paper).
        baseline_reduce: how K sampled values become the baseline: "mean" (the paper's V
            estimate) or "max"; ignored for a V(s) baseline.
        mask: optional, shape of ``log_probs``; 0 marks padding, which takes no part.
        need_weights: False: neither weights nor advantages are written (they come back as
            None). The kernel then only reads (12 bytes an element in float32, not 20), and
            the backward computes the weights again from ``q_values`` and ``baseline``: for a
            training step that logs neither (as ``need_weights`` of
            ``torch.nn.MultiheadAttention``).
        backend: "auto", "triton" or "torch".
        group: a ``torch.distributed`` process group: the loss is the mean over every rank's
            unmasked elements, as :func:`~rltriton_lite.sac.sac_actor_loss` says (under DDP,
            backpropagate ``loss * world_size``); the weights and advantages stay this rank's.

    Returns:
        ``CRROutput(loss, weights, advantages)``: the 0-d loss, differentiable in ``log_probs``
        only; and, detached, the weights w and the advantages A (shape of ``q_values``, 0 where
        masked; None with ``need_weights=False``). With no unmasked element the loss and its
        gradient are 0.
    """
    if group is not None:  # the mean over every rank's elements (distributed.py)
        out = crr_loss(log_probs, q_values, baseline, beta=beta, mode=mode, max_weight=max_weight,
                       baseline_reduce=baseline_reduce, mask=mask, need_weights=need_weights, backend=backend)
        return out._replace(loss=distributed.mean_loss("crr_loss", out.loss, log_probs, mask, group))
    key = call_key(("crr", log_probs, q_values, baseline, mask, mode, baseline_reduce, need_weights, backend))
    plan = _PLANS.get(key)
    if plan is None:
        log_probs = _checks.float_tensor("log_probs", log_probs)
        q_values = _checks.same_shape("q_values", q_values, log_probs, "log_probs")
        _baseline(baseline, q_values)
        given_mask, mask = mask, _checks.flag("mask", mask, log_probs, "log_probs", exact=True)
        _checks.choice("mode", mode, MODES)
        _checks.choice("baseline_reduce", baseline_reduce, BASELINE_REDUCES)
        _checks.flag_arg("need_weights", need_weights)
        kernel = use_triton(_checks.backend(backend), log_probs.device) and log_probs.numel() > 0
        # the layout, and whether the baseline is V(s) (it gets a trailing dim of K = 1)
        compiling = key is None and torch.compiler.is_compiling()  # (the custom op finds its layout)
        plan = Plan(kernel, (None if compiling else Layout.of(log_probs), baseline.dim() == q_values.dim()))
        if key is not None and mask is given_mask:  # (a mask the check replaced: validated every call)
            bounded(_PLANS, key, lambda: plan)
    beta = _checks.real("beta", beta, positive=True)  # every call: its numbers
    max_weight = _checks.real("max_weight", max_weight, positive=True)
    p = _Problem(log_probs, q_values, baseline.unsqueeze(-1) if plan.layout[1] else baseline, mask, beta,
                 max_weight, mode == "binary", baseline_reduce == "max", bool(need_weights), plan)
    out = KERNELS(p, plan.use_kernel, lambda: _torch_path.crr_loss(
        log_probs, q_values, p.baseline, mask, beta, max_weight, p.binary, p.use_max, p.dtype,
        _checks.result_dtype(q_values, baseline)))
    return CRROutput(*out) if need_weights else CRROutput(out[0], None, None)


_PLANS = {}  # crr_loss's plan.Plan by signature
