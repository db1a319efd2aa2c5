r"""Soft Actor-Critic: soft λ-return critic targets on the one scan, and the actor and
temperature losses on the deterministic reduction.

The recurrence, its resets and its gradients are derived in docs/ALGORITHMS.md,
"SAC".
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch

from . import _checks, _torch_path, distributed, episode, masks
from ._ops import Kernels, check_coefficients
from ._reduce import Layout, launch_map, load_upstream, param, reduce, store_grad, upstream, vector
from ._triton import jit, tl
from .episode import (BOOTSTRAP_VALUE, D_BOOTSTRAP_VALUE, D_NEXT_VALUES, D_OUT, D_REWARDS, D_VALUES, GAMMA, MASK,
                      NEXT_VALUES, P_GAMMA, REWARDS, TERMINATED, VALUES, bwd_prologue, step, store_carry_grad)
from .plan import Plan, bounded, call_key, launch, planned, summarize, use_triton
from .tile import coef, load, load_flag, load_mask, store

__all__ = ["sac_targets", "sac_actor_loss", "sac_temperature_loss", "MAX_CRITICS"]

# Critics a call may take: each is one more pointer in the kernels' input tuple (a new
# specialisation per count). 16 covers REDQ-style ensembles of 10.
MAX_CRITICS = 16


# ---- Critics: min over the ensemble, and its gradient on the critic that is the min ----------------
@jit
def _critic_min(Q, SQ, row, t, m, ACC: tl.constexpr):
    """(min_k Q_k, k*) at (row, t): ``Q`` a tuple of pointers, ``SQ`` their strides.

    k* is the first critic attaining the min (strict ``<``); a NaN is the min, so it propagates.
    """
    q_min = load(Q[0], SQ[0], row, t, m, 0.0, ACC)
    k_min = tl.zeros(q_min.shape, tl.int32)
    for k in tl.static_range(1, len(Q)):
        q = load(Q[k], SQ[k], row, t, m, 0.0, ACC)
        take = (q < q_min) | ((q != q) & (q_min == q_min))
        q_min = tl.where(take, q, q_min)
        k_min = tl.where(take, k, k_min)
    return q_min, k_min


@jit
def _store_critic_grads(Q, SQ, DQ, SDQ, row, t, m_read, m, dv, ACC: tl.constexpr):
    """dQ_k = dv on the critic that is the min (read where ``m_read``), 0 elsewhere; ``dv`` is
    already 0 outside ``m_read``. Stores every in-bounds element (``m``)."""
    if len(Q) == 1:  # the only critic is the min: nothing to read
        if DQ[0] is not None:
            store(DQ[0], SDQ[0], row, t, m, dv)
    else:
        _, k_min = _critic_min(Q, SQ, row, t, m_read, ACC)
        for k in tl.static_range(len(Q)):
            if DQ[k] is not None:
                store(DQ[k], SDQ[k], row, t, m, tl.where(k_min == k, dv, 0.0))


# ---- Targets: hooks of the shared scan -------------------------------------------------------------
# Inputs X: the episode layout (episode.py), so its step() and bwd_prologue() serve unchanged,
# with three of its slots holding SAC's inputs, and the critics after it
LOG_PROBS = VALUES  # log π(a_t|s_t) of the taken actions
NEXT_LOG_PROBS = NEXT_VALUES  # log π(a'|s_{t+1})
ALPHA = BOOTSTRAP_VALUE  # α as a float64 tensor (float64 problems: _reduce.vector), else None: P[P_ALPHA]
NEXT_Q = tl.constexpr(11)  # a tuple of the critics' Q(s_{t+1}, a') pointers
P_ALPHA = tl.constexpr(3)  # after episode.py's gamma, lambda and open
# Outputs O: forward (G,); backward (d_rewards, d_log_probs, d_next_log_probs, (d_next_q_k, ...))
TARGETS = tl.constexpr(0)
D_LOG_PROBS = D_VALUES
D_NEXT_LOG_PROBS = D_NEXT_VALUES
D_NEXT_Q = D_BOOTSTRAP_VALUE


@jit
def _sac_prologue(X, SX, P, row, t, m, T, ACC: tl.constexpr, ahead=None):
    gamma, lam, term, done, valid = step(X, SX, P, row, t, m, T, ACC, ahead)
    alpha = param(X[ALPHA], 0, P[P_ALPHA], ACC)
    r = load(X[REWARDS], SX[REWARDS], row, t, valid, 0.0, ACC)
    # V^soft'_t, read at every valid step and used only where it bootstraps (not behind a
    # terminal step): a mask from the flags would make the loads scalar
    q_min, _ = _critic_min(X[NEXT_Q], SX[NEXT_Q], row, t, valid, ACC)
    v_soft = q_min - alpha * load(X[NEXT_LOG_PROBS], SX[NEXT_LOG_PROBS], row, t, valid, 0.0, ACC)
    w = tl.where(done, 1.0, 1.0 - lam)  # an episode end bootstraps fully
    b_g = r + tl.where(term, 0.0, gamma * w * v_soft)  # G_t without the λ-continuation
    a = gamma * lam
    log_pi = load(X[LOG_PROBS], SX[LOG_PROBS], row, t, valid, 0.0, ACC)
    # the scan carries H_t = G_t - α log π_t; the epilogue rebuilds G_t from H_{t+1}
    return a, b_g - alpha * log_pi, done, valid, (b_g, a, done)


@jit
def _sac_epilogue(X, SX, P, O, SO, row, t, m, T, ACC: tl.constexpr, valid, h, h_next, keep):
    b_g, a, done = keep
    g = tl.where(done, b_g, b_g + a * h_next)  # a select: nothing crosses an episode end
    store(O[TARGETS], SO[TARGETS], row, t, m, tl.where(valid, g, 0.0))


@jit
def _sac_bwd_prologue(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    """returns' transposed scan (pair (a_{t-1}, dL/dG_t), reset where done_{t-1}); it also
    keeps a_{t-1} and the reset, for the part of g_t carried from earlier steps."""
    a_prev, dg, reset, m_scan, keep = bwd_prologue(X, SX, P, row, t, m, T, ACC)
    return a_prev, dg, reset, m_scan, (a_prev, reset)


@jit
def _sac_bwd_epilogue(X, SX, P, O, SO, row, t, m, T, ACC: tl.constexpr, m_scan, g, g_in, keep):
    a_prev, reset = keep
    gamma, lam, term, done, valid = step(X, SX, P, row, t, m, T, ACC)
    alpha = param(X[ALPHA], 0, P[P_ALPHA], ACC)
    store_carry_grad(X, SX, P, O, SO, row, t, m, T, tl.where(valid, tl.where(done, 0.0, gamma * lam), 1.0) * g)
    if O[D_REWARDS] is not None:  # r_t enters b^G_t (G_t) and b^H_t (H_t): dL/dr_t = g_t
        store(O[D_REWARDS], SO[D_REWARDS], row, t, m, tl.where(valid, g, 0.0))
    if O[D_LOG_PROBS] is not None:  # log π_t enters H_t only: -α dL/dH_t, the carried part of g_t
        dh = tl.where(reset, 0.0, a_prev * g_in)
        store(O[D_LOG_PROBS], SO[D_LOG_PROBS], row, t, m, tl.where(valid, -alpha * dh, 0.0))
    w = tl.where(done, 1.0, 1.0 - lam)
    boot = valid & ~term
    dv = tl.where(boot, gamma * w * g, 0.0)  # dL/dV^soft'_t
    if O[D_NEXT_LOG_PROBS] is not None:
        store(O[D_NEXT_LOG_PROBS], SO[D_NEXT_LOG_PROBS], row, t, m, -alpha * dv)
    _store_critic_grads(X[NEXT_Q], SX[NEXT_Q], O[D_NEXT_Q], SO[D_NEXT_Q], row, t, valid, m, dv, ACC)


# --------------------------------------------------------------------------------------------
# λ = 0 (a number): the one-step target r_t + γ_t(1-term_t)V^soft'_t has no recurrence, so it
# runs elementwise (launch_map, any tile, no time split) instead of through the scan. The same
# arithmetic as the scan's hooks at λ = 0 (w = 1, the carry multiplied by γλ = 0), so the same
# bits for finite inputs; a non-finite target then stays on its step (0 · NaN is not carried).
# --------------------------------------------------------------------------------------------
@jit
def _one_step(X, SX, P, row, t, m, ACC: tl.constexpr):
    """(γ_t, bootstrapped_t, valid_t, α): V^soft'_t enters where the step is valid and not terminal.

    Every load here and in the hooks below is masked by bounds only and the steps are chosen by
    selects (a mask from loaded flags makes loads scalar: docs/DESIGN.md, "Loads"); a value behind
    a terminal step or in padding is read but never selected, so a NaN there reaches no output."""
    valid = load_mask(X[MASK], SX[MASK], row, t, m)
    term = load_flag(X[TERMINATED], SX[TERMINATED], row, t, m)
    gamma = coef(X[GAMMA], SX[GAMMA], P[P_GAMMA], row, t, m, ACC)
    return gamma, valid & ~term, valid, param(X[ALPHA], 0, P[P_ALPHA], ACC)


@jit
def _one_step_target(X, SX, P, O, SO, row, t, m, ACC: tl.constexpr):
    gamma, boot, valid, alpha = _one_step(X, SX, P, row, t, m, ACC)
    r = load(X[REWARDS], SX[REWARDS], row, t, m, 0.0, ACC)
    q_min, _ = _critic_min(X[NEXT_Q], SX[NEXT_Q], row, t, m, ACC)
    v_soft = q_min - alpha * load(X[NEXT_LOG_PROBS], SX[NEXT_LOG_PROBS], row, t, m, 0.0, ACC)
    store(O[TARGETS], SO[TARGETS], row, t, m, tl.where(valid, r + tl.where(boot, gamma * v_soft, 0.0), 0.0))


@jit
def _one_step_target_bwd(X, SX, P, O, SO, row, t, m, ACC: tl.constexpr):
    gamma, boot, valid, alpha = _one_step(X, SX, P, row, t, m, ACC)
    g = tl.where(valid, load(X[D_OUT], SX[D_OUT], row, t, m, 0.0, ACC), 0.0)  # dL/dG_t
    if O[D_REWARDS] is not None:
        store(O[D_REWARDS], SO[D_REWARDS], row, t, m, g)
    if O[D_LOG_PROBS] is not None:  # log π_t enters G only through λ
        store(O[D_LOG_PROBS], SO[D_LOG_PROBS], row, t, m, tl.zeros(g.shape, ACC))
    dv = tl.where(boot, gamma * g, 0.0)  # dL/dV^soft'_t
    if O[D_NEXT_LOG_PROBS] is not None:
        store(O[D_NEXT_LOG_PROBS], SO[D_NEXT_LOG_PROBS], row, t, m, -alpha * dv)
    _store_critic_grads(X[NEXT_Q], SX[NEXT_Q], O[D_NEXT_Q], SO[D_NEXT_Q], row, t, m, m, dv, ACC)


# ---- Losses: elementwise hooks of _reduce's reduction, and of launch_map for the backward ----------
# Inputs X of the losses
LOSS_LOG_PROBS = tl.constexpr(0)
LOSS_MASK = tl.constexpr(1)
LOSS_COEF = tl.constexpr(2)  # α or the target entropy as float64 (float64 problems: _reduce.vector)
LOSS_UPSTREAM = tl.constexpr(3)  # backward: the upstream gradient (_reduce.upstream)
LOSS_Q = tl.constexpr(4)  # the critics' tuple
P_COEF = tl.constexpr(0)  # the coefficient as a number
# Outputs O of the losses' backward: (d_log_probs, (d_q_k, ...))
D_LOSS_LOG_PROBS = tl.constexpr(0)
D_LOSS_Q = tl.constexpr(1)


@jit
def _actor_elementwise(X, SX, P, O, SO, row, t, m, ACC: tl.constexpr):
    """(α log π - min_k Q_k, 1) on unmasked elements: the loss is their ratio of sums."""
    valid = load_mask(X[LOSS_MASK], SX[LOSS_MASK], row, t, m)
    alpha = param(X[LOSS_COEF], 0, P[P_COEF], ACC)
    q_min, _ = _critic_min(X[LOSS_Q], SX[LOSS_Q], row, t, valid, ACC)
    x = alpha * load(X[LOSS_LOG_PROBS], SX[LOSS_LOG_PROBS], row, t, valid, 0.0, ACC) - q_min
    return tl.where(valid, x, 0.0), valid.to(ACC)


@jit
def _actor_bwd_elementwise(X, SX, P, O, SO, row, t, m, ACC: tl.constexpr):
    """d log π = α g/N; dQ_k = -g/N on the critic that is the min; 0 where masked."""
    valid = load_mask(X[LOSS_MASK], SX[LOSS_MASK], row, t, m)
    if O[D_LOSS_LOG_PROBS] is not None:
        store_grad(X[LOSS_UPSTREAM], SX[LOSS_UPSTREAM], O[D_LOSS_LOG_PROBS], SO[D_LOSS_LOG_PROBS], row, t, m, valid, param(X[LOSS_COEF], 0, P[P_COEF], ACC), ACC)
    g_n = load_upstream(X[LOSS_UPSTREAM], SX[LOSS_UPSTREAM], row, t, valid, ACC)  # the upstream gradient over N
    _store_critic_grads(X[LOSS_Q], SX[LOSS_Q], O[D_LOSS_Q], SO[D_LOSS_Q], row, t, valid, m, tl.where(valid, -g_n, 0.0), ACC)


@jit
def _temperature_elementwise(X, SX, P, O, SO, row, t, m, ACC: tl.constexpr):
    """(log π + target entropy, 1) on unmasked elements: their mean is -dJ/d log α."""
    valid = load_mask(X[LOSS_MASK], SX[LOSS_MASK], row, t, m)
    target = param(X[LOSS_COEF], 0, P[P_COEF], ACC)
    x = load(X[LOSS_LOG_PROBS], SX[LOSS_LOG_PROBS], row, t, valid, 0.0, ACC) + target
    return tl.where(valid, x, 0.0), valid.to(ACC)


# ---- Validation ------------------------------------------------------------------------------------
def _critics(name: str, q, like: torch.Tensor, like_name: str) -> tuple:
    """One critic's tensor or a sequence of 1..MAX_CRITICS of them, each shaped like ``like``."""
    if isinstance(q, torch.Tensor):
        qs = (q,)
    elif isinstance(q, (list, tuple)):
        qs = tuple(q)
    else:
        raise TypeError(f"{name} must be a tensor or a list/tuple of critics' tensors, got {type(q).__name__}")
    if not 1 <= len(qs) <= MAX_CRITICS:
        raise ValueError(f"{name} must hold 1 to {MAX_CRITICS} critics' tensors, got {len(qs)}")
    name_k = (lambda k: name) if len(qs) == 1 and isinstance(q, torch.Tensor) else (lambda k: f"{name}[{k}]")
    return tuple(_checks.same_shape(name_k(k), x, like, like_name) for k, x in enumerate(qs))


# ---- sac_targets -----------------------------------------------------------------------------------
class _Problem(NamedTuple):
    """Validated inputs of one sac_targets call (field names as episode.Problem where shared,
    so the torch path's helpers serve both)."""

    rewards: torch.Tensor
    log_probs: torch.Tensor | None
    next_log_probs: torch.Tensor
    next_q: tuple
    terminated: torch.Tensor | None
    truncated: torch.Tensor | None
    mask: torch.Tensor | None
    gamma: torch.Tensor | None
    lambda_: torch.Tensor | None
    carry: torch.Tensor | None  # [rows]: H after an open window (episode.P_OPEN), else None
    params: tuple  # (gamma, lambda, open, alpha): floats, episode.P_OPEN, alpha may be a tensor (see _number_arg)
    time_dim: int
    look_ahead: bool = False  # a mask read by the forward kernel's look-ahead (episode.without_masked_steps)
    plan: object = None  # the call's plan.Plan, when it has one


def _dtype(p: _Problem) -> torch.dtype:
    return _checks.result_dtype(p.rewards, p.log_probs, p.next_log_probs, *p.next_q)


def _inputs(p: _Problem, acc: torch.dtype, dg=None):
    """The X tuple as (rows view, strides) pairs: the episode layout's, whose VALUES, NEXT_VALUES
    and BOOTSTRAP_VALUE slots carry log_probs, next_log_probs and α; then dL/dG and the critics."""
    shape, td = p.rewards.shape, p.time_dim
    X = episode.inputs(episode.Problem("sac", p.rewards, p.log_probs, p.next_log_probs, None, p.terminated,
                                       p.truncated, p.mask, p.gamma, p.lambda_, None, None, p.params[:3], td), acc)
    X[ALPHA] = _alpha_input(p.params[3], acc, p.rewards.device)
    X += [None if dg is None else _checks.rows(dg.expand(shape), shape, td), None,
          _tuple_entry([_checks.rows(q, shape, td) for q in p.next_q])]
    return X


def _number_arg(name: str, value, nonnegative: bool):
    """A finite float (>= 0 if asked); a 1-element tensor is read once (``.item()``). Where it
    may not be read (``_checks.can_read``: while torch.compile traces, or a CUDA graph is
    captured) a tensor stays one, detached: the kernels read it, and under torch.compile the
    custom op checks its value at run time (``_ops.py``)."""
    if isinstance(value, torch.Tensor) and not _checks.can_read(value):
        if value.numel() != 1 or value.dtype not in _checks.FLOAT_DTYPES:
            _checks.finite(name, value)  # the TypeError
        return value.detach().reshape(())
    value = _checks.finite(name, value)
    return _checks.real(name, value) if nonnegative else value


def _alpha_arg(alpha):
    """α: a finite float >= 0, or (see :func:`_number_arg`) a tensor the kernels read."""
    return _number_arg("alpha", alpha, nonnegative=True)


def _alpha_input(alpha, acc: torch.dtype, device):
    """α (or another coefficient, such as the target entropy) as a kernel input: a float64
    vector for float64 problems (``_reduce.vector``), the tensor itself when it is one (see
    ``_number_arg``), else None (the kernels read ``P``)."""
    if isinstance(alpha, torch.Tensor):
        return alpha.reshape(1).to(device=device, dtype=acc), (0, 0)
    return vector((alpha,), acc, device)


def _numbers(params: tuple) -> tuple:
    """The kernels' P: the parameters with a tensor α (read from X instead) as 0."""
    return tuple(0.0 if isinstance(x, torch.Tensor) else x for x in params)


def _tuple_entry(views):
    """Several (view, strides) pairs (or None) as one X/O entry: (views, strides) tuples."""
    return (tuple(None if v is None else v[0] for v in views),
            tuple((0, 0) if v is None else v[1] for v in views))


def _one_step_only(p: _Problem) -> bool:
    """λ = 0 given as a number: the target is SAC's one-step target, elementwise."""
    return p.lambda_ is None and p.params[1] == 0.0 and p.carry is None


def _raw(p: _Problem, dg=None):
    """The X tuple's tensors as the call passed them (see plan.planned)."""
    return (p.rewards, p.log_probs, p.next_log_probs, None, p.terminated, p.truncated, p.mask, p.gamma, p.lambda_,
            dg, None, p.next_q)


def _targets_forward(p: _Problem):
    """One kernel launch: every input read once, the targets written once (an open window's
    outputs end with the value entering its first step)."""
    out = _checks.new_output(p.rewards, p.time_dim, _dtype(p))
    initial, end = episode.window_carry(p, _dtype(p))

    def first():
        shape, T, n_rows = _checks.problem(p.rewards, p.time_dim)
        acc = _checks.acc_dtype(_dtype(p))
        X, O = _inputs(p, acc), [_checks.rows(out, shape, p.time_dim)]
        tc = X[REWARDS][1][1] == 1  # time is the contiguous axis
        if _one_step_only(p):
            return X, O, launch_map(_one_step_target, X, _numbers(p.params), O, n_rows, T, acc, time_contiguous=tc), None
        return X, O, launch(_sac_prologue, _sac_epilogue, X, _numbers(p.params), O, n_rows, T, reverse=True,
                            acc_dtype=acc, time_contiguous=tc, initial=initial, end=end,
                            ahead=episode.ahead_hook if p.look_ahead else None), None

    planned(p.plan, ("forward", p.look_ahead), _raw(p), _numbers(p.params), (out,), first)
    return (out,) + (() if end is None else (end,)), ()


def _targets_summary(p: _Problem):
    """(A, B, reset), each [rows]: each row's composed map of H (distributed.py)."""
    shape, T, n_rows = _checks.problem(p.rewards, p.time_dim)
    acc = _checks.acc_dtype(_dtype(p))
    X = _inputs(p, acc)
    return summarize(_sac_prologue, _sac_epilogue, X, _numbers(p.params), n_rows, T, reverse=True, acc_dtype=acc,
                     device=p.rewards.device, time_contiguous=X[REWARDS][1][1] == 1).unbind(-1)


def _targets_backward(p: _Problem, saved, grads, need):
    """The transposed scan: the gradients of the fields in ``need`` (``_ops.Kernels``)."""
    dg = grads[0]
    d_end = grads[1] if len(grads) > 1 else None  # what flows into an open window's first step (_targets_forward)
    new = lambda x: _checks.new_output(p.rewards, p.time_dim, x.dtype)  # noqa: E731
    d_r, d_lp, d_nlp = (new(x) if need.get(f) else None for f, x in zip(TARGETS_WRT, (p.rewards, p.log_probs,
                                                                                       p.next_log_probs)))
    d_q = tuple(new(x) if n else None for n, x in zip(need.get("next_q", ()), p.next_q))
    d_c = p.rewards.new_empty(p.carry.numel(), dtype=p.carry.dtype) if need.get("carry") else None

    def first():
        shape, T, n_rows = _checks.problem(p.rewards, p.time_dim)
        acc = _checks.acc_dtype(_dtype(p))
        X = _inputs(p, acc, dg)
        O = [_checks.rows(o, shape, p.time_dim) for o in (d_r, d_lp, d_nlp)]
        O.append(_tuple_entry([_checks.rows(o, shape, p.time_dim) for o in d_q]))
        O.append(None if d_c is None else (d_c, (1, None)))  # episode.D_CARRY
        tc = X[REWARDS][1][1] == 1
        if _one_step_only(p):
            return X, O, launch_map(_one_step_target_bwd, X, _numbers(p.params), O, n_rows, T, acc,
                                    time_contiguous=tc), None
        return X, O, launch(_sac_bwd_prologue, _sac_bwd_epilogue, X, _numbers(p.params), O, n_rows, T,
                            reverse=False, acc_dtype=acc, time_contiguous=tc,
                            initial=None if d_end is None else d_end.reshape(-1).contiguous()), None

    planned(p.plan, ("backward", tuple(o is not None for o in (d_r, d_lp, d_nlp, *d_q))), _raw(p, dg),
            _numbers(p.params), (d_r, d_lp, d_nlp, d_q, d_c), first, sign=(dg,))
    return {"rewards": d_r, "log_probs": d_lp, "next_log_probs": d_nlp, "next_q": d_q, "carry": d_c}


def _check_alpha(alpha) -> None:
    """The values check of a tensor α (or target entropy), which _number_arg skips while compiling."""
    if isinstance(alpha, torch.Tensor) and _checks.can_read(alpha):
        _checks.real("alpha", _checks.finite("alpha", alpha))


def _check_targets(p: _Problem) -> None:
    check_coefficients(p.gamma, p.lambda_)
    _check_alpha(p.params[3])
    if p.lambda_ is not None and _checks.can_read(p.lambda_):
        _check_log_probs(p.log_probs, p.lambda_, p.params[1])


TARGETS_WRT = ("rewards", "log_probs", "next_log_probs", "next_q", "carry")
TARGET_KERNELS = Kernels("sac_targets", _Problem, _targets_forward, _targets_backward, wrt=TARGETS_WRT,
                         check=_check_targets, torch_path=_torch_path.sac_targets)


def _check_log_probs(log_probs, lambda_t, lambda_f: float) -> None:
    """λ > 0 needs log_probs (reads a λ tensor: a device sync)."""
    if log_probs is None and (lambda_f > 0 or (lambda_t is not None and bool((lambda_t > 0).any()))):
        raise ValueError(
            "lambda_ > 0 needs log_probs, log π(a_t|s_t) of the actions taken: the λ-continuation "
            "is G_{t+1} - alpha * log_probs[t+1]"
        )


@_checks.numpy_io
def sac_targets(rewards, next_q, next_log_probs, *, gamma=0.99, alpha=0.2, lambda_=0.0,
                log_probs=None, terminated=None, truncated=None, mask=None, time_dim=-1,
                backend="auto", time_group=None):
    r"""Soft λ-returns: SAC critic targets, one-step (λ = 0) or multi-step, in one fused pass.

    .. math::

        V^{\text{soft}\prime}_t = \min_k Q_k(s_{t+1}, a'_{t+1}) - \alpha\log\pi(a'_{t+1}|s_{t+1})

        G_t = r_t + \gamma_t (1-\text{term}_t)\Big[(1-\lambda_t) V^{\text{soft}\prime}_t + \lambda_t
              \begin{cases} G_{t+1} - \alpha\log\pi(a_{t+1}|s_{t+1}) & \text{not done}_t \\
              V^{\text{soft}\prime}_t & \text{done}_t \end{cases}\Big]

    λ = 0 gives SAC's target :math:`r + \gamma(1-\text{term})(\min_k Q_k - \alpha\log\pi')`
    exactly. The min over the critics is taken in the kernel.

    Args:
        rewards: float tensor; ``time_dim`` is time, every other dim is batch.
        next_q: Q_k(s_{t+1}, a'_{t+1}) with a' ~ π(·|s_{t+1}): one tensor shaped like
            ``rewards``, or a list/tuple of up to ``MAX_CRITICS`` of them (one per critic).
        next_log_probs: log π(a'_{t+1}|s_{t+1}), shaped like ``rewards``.
        gamma, lambda_: floats in [0, 1] or tensors broadcastable to ``rewards``.
        alpha: the entropy temperature, a finite float >= 0 (a 1-element tensor is read as a
            constant; under torch.compile or CUDA-graph capture the kernel reads it instead).
        log_probs: log π(a_t|s_t) of the actions taken, shaped like ``rewards``; needed when
            λ > 0 (the λ-continuation subtracts α log π of the next step taken).
        terminated, truncated: flags as in :func:`rltriton_lite.td_lambda`; at a truncation
            (and at the window's last step) the target bootstraps from V^soft'_t.
        mask: 0 removes the step, as if deleted (padding, or a hole): nothing of it is read, the
            next step of step t is the next unmasked one, the last unmasked step ends the window,
            and its output and gradients are 0.
        time_dim: the time axis (0 for time-major buffers, -1 for batch-major).
        backend: "auto", "triton" or "torch".
        time_group: a ``torch.distributed`` process group whose ranks hold the rows' steps in
            rank order, as in :func:`rltriton_lite.gae`. None: one process.

    Returns:
        The targets, shape of ``rewards``, dtype promoted over the float inputs. Differentiable
        in ``rewards``, ``next_q`` (the critic that is the min, the first on ties),
        ``next_log_probs`` and ``log_probs``.
    """
    if time_group is not None:
        return _sharded_targets(time_group, dict(
            rewards=rewards, next_q=next_q, next_log_probs=next_log_probs, log_probs=log_probs, terminated=terminated,
            truncated=truncated, mask=mask, gamma=gamma, lambda_=lambda_), alpha, time_dim, backend)
    args = (rewards, next_q, next_log_probs, log_probs, terminated, truncated, mask)
    plannable = type(alpha) is float  # (a tensor α is read, or kept as a tensor: checked every call)
    # (λ = 0 as a number runs another kernel: part of the key)
    key = call_key(("sac", *args, gamma, lambda_, alpha, time_dim, backend, type(lambda_) is float and lambda_ == 0.0))
    plan = _PLANS.get(key)
    if plan is not None and episode.coefficients_ok(gamma, lambda_) and 0.0 <= alpha < math.inf \
            and (lambda_ == 0.0 or log_probs is not None):  # a known signature: its numbers checked
        p = _Problem(rewards, log_probs, next_log_probs, (next_q,) if isinstance(next_q, torch.Tensor) else tuple(next_q),
                     terminated, truncated, mask, None, None, None, (float(gamma), float(lambda_), 0, float(alpha)),
                     plan.layout, plan=plan)
        return _run_targets(_without_masked_steps(p, plan.use_kernel), plan.use_kernel)
    p, use_kernel = _prepare_targets(rewards, next_q, next_log_probs, log_probs, terminated, truncated, mask, gamma,
                                     lambda_, alpha, time_dim, backend)
    if key is not None and p.gamma is None and p.lambda_ is None and plannable and \
            all(a is b for a, b in zip((p.terminated, p.truncated, p.mask), args[4:])):  # (no flag replaced)
        p = p._replace(plan=bounded(_PLANS, key, lambda: Plan(use_kernel, p.time_dim)))
    return _run_targets(p, use_kernel)


def _prepare_targets(rewards, next_q, next_log_probs, log_probs, terminated, truncated, mask, gamma, lambda_, alpha,
                     time_dim, backend, window=None):
    """The arguments checked (a TypeError or ValueError naming the argument), as a _Problem, and
    whether the Triton kernel runs them; ``window``: distributed.py's, else None."""
    rewards = _checks.float_tensor("rewards", rewards)
    time_dim = _checks.time_dim(time_dim, rewards)
    next_q = _critics("next_q", next_q, rewards, "rewards")
    next_log_probs = _checks.same_shape("next_log_probs", next_log_probs, rewards, "rewards")
    if log_probs is not None:
        log_probs = _checks.same_shape("log_probs", log_probs, rewards, "rewards")
    terminated = _checks.flag("terminated", terminated, rewards)
    truncated = _checks.flag("truncated", truncated, rewards)
    mask = _checks.flag("mask", mask, rewards)
    use_kernel = use_triton(_checks.backend(backend), rewards.device)
    gamma_t, gamma_f = _checks.unit_interval("gamma", gamma, rewards)
    lambda_t, lambda_f = _checks.unit_interval("lambda_", lambda_, rewards)
    alpha = _alpha_arg(alpha)
    if lambda_t is None or _checks.can_read(lambda_t):  # else the custom op checks (_ops.py)
        _check_log_probs(log_probs, lambda_t, lambda_f)
    p = _Problem(rewards, log_probs, next_log_probs, next_q, terminated, truncated, mask,
                 gamma_t, lambda_t, None, (gamma_f, lambda_f, int(window is not None and window[0]), alpha), time_dim)
    return _without_masked_steps(p, use_kernel, window), use_kernel


def _without_masked_steps(p: _Problem, use_kernel: bool, window=None) -> _Problem:
    """Masked steps as if deleted (episode.without_masked_steps): the forward kernel looks ahead
    itself, or masks.py derives the window's ends (the next values are given per step)."""
    if p.mask is None:
        return p
    if window is None and episode.looks_ahead(use_kernel, p.rewards, p.time_dim, _dtype(p).itemsize, (
            p.rewards, p.log_probs, p.next_log_probs, *p.next_q, p.gamma, p.lambda_, p.carry), p.plan):
        return p._replace(look_ahead=True)
    truncated, _ = masks.without_masked_steps(p.mask, p.truncated, p.time_dim, use_kernel,
                                              open_rows=None if window is None else window[1])
    return p._replace(truncated=truncated)


def _sharded_targets(group, inputs, alpha, time_dim, backend):
    """sac_targets over rows whose steps the ranks of ``group`` hold in rank order (distributed.py):
    the windows hand on H = G - α log π."""
    rewards = _checks.float_tensor("rewards", inputs["rewards"])
    time_dim = _checks.time_dim(time_dim, rewards)
    q = inputs.pop("next_q")
    q = (q,) if isinstance(q, torch.Tensor) else tuple(q)
    inputs.update({f"next_q{k}": x for k, x in enumerate(q)})

    def prepare_(x, window, boundary):
        return _prepare_targets(x["rewards"], [x[f"next_q{k}"] for k in range(len(q))], x["next_log_probs"],
                                x["log_probs"], x["terminated"], x["truncated"], x["mask"], x["gamma"], x["lambda_"],
                                alpha, time_dim, backend, window)

    def summary(p, use_kernel):
        return _targets_summary(p) if use_kernel else _torch_path.sac_targets(p, summary=True)

    def run(p, use_kernel, carry):
        p = p._replace(carry=carry)
        return TARGET_KERNELS(p, use_kernel, lambda: _torch_path.sac_targets(p))

    w = distributed.Window("sac_targets", dict(inputs, rewards=rewards), time_dim, rewards, prepare_, summary, run,
                           lambda: (torch.empty(rewards.shape, dtype=_checks.result_dtype(rewards, *q),
                                                device=rewards.device),))
    return distributed.time_sharded(w, group)[0]


_PLANS = {}  # sac_targets' plan.Plan by signature


def _run_targets(p: _Problem, use_kernel: bool):
    if p.rewards.numel() == 0:
        return torch.empty(p.rewards.shape, dtype=_dtype(p), device=p.rewards.device)
    return TARGET_KERNELS(p, use_kernel, lambda: _torch_path.sac_targets(p))[0]


# ---- Losses ----------------------------------------------------------------------------------------
class _Loss(NamedTuple):
    """Validated inputs of sac_actor_loss (``q``: the critics) or of sac_temperature_loss's
    mean (``q`` empty; ``coef``: the target entropy)."""

    log_probs: torch.Tensor
    q: tuple
    mask: torch.Tensor | None
    coef: object  # α, or the target entropy: a float, or a 0-d tensor (see _number_arg)
    plan: object = None


def _actor_forward(p: _Loss):
    """((loss,), (1/N,)): the fused elementwise map and the deterministic sum."""
    layout, device = Layout.of(p.log_probs), p.log_probs.device
    acc = _checks.acc_dtype(_checks.result_dtype(p.log_probs, *p.q))
    X = [layout.rows(p.log_probs), layout.rows(p.mask), _alpha_input(p.coef, acc, device), None,
         _tuple_entry([layout.rows(x) for x in p.q])]
    # the mean and 1/N (no unmasked element: a mean of 0, and zero gradients)
    (mean, inv_n), _ = reduce(_actor_elementwise, 2, X, _numbers((p.coef,)), (), layout.n_rows, layout.T, acc, device,
                              count=1)
    return (mean.to(_checks.result_dtype(p.log_probs, *p.q)),), (inv_n,)


def _actor_backward(p: _Loss, saved, grads, need):
    """(d_log_probs, (d_q_k, ...)), one elementwise kernel."""
    (inv_n,), (grad,) = saved, grads
    layout, acc, device = Layout.of(p.log_probs), inv_n.dtype, p.log_probs.device
    d_lp = layout.new(p.log_probs.dtype, p.log_probs) if need.get("log_probs") else None
    d_q = tuple(layout.new(x.dtype, p.log_probs) if n else None for n, x in zip(need.get("q", ()), p.q))
    X = [None, layout.rows(p.mask), _alpha_input(p.coef, acc, device), upstream(grad, "mean", inv_n, layout),
         _tuple_entry([layout.rows(x) for x in p.q])]
    O = [layout.rows(d_lp), _tuple_entry([layout.rows(x) for x in d_q])]
    launch_map(_actor_bwd_elementwise, X, _numbers((p.coef,)), O, layout.n_rows, layout.T, acc)
    return {"log_probs": d_lp, "q": d_q}


ACTOR_KERNELS = Kernels("sac_actor_loss", _Loss, _actor_forward, _actor_backward, wrt=("log_probs", "q"),
                check=lambda p: _check_alpha(p.coef))


def _use_kernel(backend: str, like: torch.Tensor) -> bool:
    """The kernel path, for a non-empty problem (an empty one has nothing to launch)."""
    return use_triton(_checks.backend(backend), like.device) and like.numel() > 0


@_checks.numpy_io
def sac_actor_loss(log_probs, q, *, alpha=0.2, mask=None, backend="auto", group=None):
    r"""The SAC policy loss, a mean over unmasked elements.

    .. math::

        J_\pi = \frac{1}{N}\sum_{i:\,\text{mask}_i} \big(\alpha \log\pi(a_i|s_i) - \min_k Q_k(s_i, a_i)\big),
        \qquad a_i \sim \pi(\cdot|s_i) \text{ (reparameterised)}

    Args:
        log_probs: log π(a|s) of the sampled actions, a float tensor of any shape.
        q: Q_k(s, a) at the same actions: one tensor shaped like ``log_probs`` or a list/tuple
            of up to ``MAX_CRITICS`` of them; the min is taken in the kernel.
        alpha: the entropy temperature, a finite float >= 0 (a 1-element tensor is read as a
            constant; under torch.compile or CUDA-graph capture the kernel reads it instead).
        mask: optional, shape of ``log_probs``; 0 leaves an element out of the mean.
        backend: "auto", "triton" or "torch".
        group: a ``torch.distributed`` process group (e.g. ``dist.group.WORLD``): the mean over
            the unmasked elements of every rank, each rank passing its own. Every rank gets the
            global value; its gradient is the global loss's for its own elements. Under DDP,
            which averages gradients over ranks, backpropagate ``loss * world_size`` so that the
            average is the global loss's gradient. One small collective per call; ranks that
            disagree on the call (loss, dtype) all raise the same ValueError.

    Returns:
        A 0-d tensor, bitwise reproducible. Differentiable in ``log_probs`` (α/N) and ``q``
        (-1/N on the critic that is the min, the first on ties). With no unmasked element (all
        masked, or empty inputs) the loss is 0 and so are its gradients (not NaN), as for
        :func:`~rltriton_lite.ppo.ppo_clip_loss` and :func:`~rltriton_lite.crr.crr_loss`.
    """
    log_probs = _checks.float_tensor("log_probs", log_probs)
    q = _critics("q", q, log_probs, "log_probs")
    mask = _checks.flag("mask", mask, log_probs, "log_probs", exact=True)
    alpha = _alpha_arg(alpha)
    acc = _checks.acc_dtype(_checks.result_dtype(log_probs, *q))
    loss = ACTOR_KERNELS(_Loss(log_probs, q, mask, alpha), _use_kernel(backend, log_probs), lambda: (
        _torch_path.sac_actor_loss(log_probs, q, alpha, mask, acc).to(_checks.result_dtype(log_probs, *q)),))[0]
    return loss if group is None else distributed.mean_loss("sac_actor_loss", loss, log_probs, mask, group)


def _temperature_forward(p: _Loss):
    """mean(log π + H̄) over the unmasked elements (0 over none), in log_probs' arithmetic dtype."""
    layout, device, acc = Layout.of(p.log_probs), p.log_probs.device, _checks.acc_dtype(p.log_probs.dtype)
    X = [layout.rows(p.log_probs), layout.rows(p.mask), _alpha_input(p.coef, acc, device)]
    return (reduce(_temperature_elementwise, 2, X, _numbers((p.coef,)), (), layout.n_rows, layout.T, acc, device,
                   count=1)[0][0],), ()


def _check_target(p: _Loss) -> None:
    if isinstance(p.coef, torch.Tensor) and _checks.can_read(p.coef):
        _checks.finite("target_entropy", p.coef)


TEMPERATURE_KERNELS = Kernels("sac_temperature_mean", _Loss, _temperature_forward, check=_check_target)


@_checks.numpy_io
def sac_temperature_loss(log_alpha, log_probs, target_entropy, *, mask=None, backend="auto"):
    r"""The SAC temperature loss, linear in log α as in SB3 (the paper's J(α) = -α(log π + H̄) with
    α replaced by log α: its gradient in log α is the paper's dJ/dα, and α = e^{log α} stays > 0).

    .. math::

        J(\log\alpha) = -\frac{1}{N}\sum_{i:\,\text{mask}_i} \log\alpha\,\big(\log\pi(a_i|s_i)
        + \bar{\mathcal H}\big)

    ``log_probs`` is a constant here (no gradient flows to the policy).

    Args:
        log_alpha: the learnt log-temperature, a 1-element float tensor (usually requiring grad).
        log_probs: log π(a|s) of actions sampled from the current policy, any shape.
        target_entropy: the entropy target H̄, a finite float (commonly -dim(A)), or a
            1-element tensor (read once; under torch.compile it stays a tensor the kernel reads).
        mask: optional, shape of ``log_probs``; 0 leaves an element out of the mean.
        backend: "auto", "triton" or "torch" (the mean over ``log_probs``).

    Returns:
        A 0-d tensor, differentiable in ``log_alpha``:
        dJ/d log α = -mean(log π + H̄). With no unmasked element (all masked, or empty
        ``log_probs``) the mean is 0: the loss and its gradient are 0 (not NaN), as for
        :func:`~rltriton_lite.ppo.ppo_clip_loss` and :func:`~rltriton_lite.crr.crr_loss`.
    """
    log_probs = _checks.float_tensor("log_probs", log_probs)
    log_alpha = _checks.float_tensor("log_alpha", log_alpha, like=log_probs)
    if log_alpha.numel() != 1:
        raise ValueError(f"log_alpha must hold one value, got shape {_checks._shape(log_alpha.shape)}")
    target_entropy = _number_arg("target_entropy", target_entropy, nonnegative=False)
    mask = _checks.flag("mask", mask, log_probs, "log_probs", exact=True)
    dtype = _checks.result_dtype(log_alpha, log_probs)
    acc = _checks.acc_dtype(log_probs.dtype)
    log_probs = log_probs.detach()  # a constant here
    mean = TEMPERATURE_KERNELS(_Loss(log_probs, (), mask, target_entropy), _use_kernel(backend, log_probs), lambda: (
        _torch_path.sac_masked_mean(log_probs.to(acc) + target_entropy, mask),))[0]
    return -(log_alpha.reshape(()).to(dtype) * mean.to(dtype))
