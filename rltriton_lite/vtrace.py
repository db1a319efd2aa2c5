r"""V-trace (Espeholt et al., 2018, IMPALA): off-policy value targets and policy-gradient
advantages, both from one pass of the shared scan.

The recurrence, its resets and its gradients are derived in docs/ALGORITHMS.md,
"V-trace".
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from . import _checks, _torch_path
from ._ops import Kernels, check_coefficients
from .episode import (D_REWARDS, D_VALUES, D_NEXT_VALUES, MASK, NEXT_VALUES, REWARDS, WRT, Problem,
                      ahead_hook, before, grad_buffers, grad_outputs, gradients, inputs, prepare, raw, step, step_before,
                      store_bootstrap_grad, store_carry_grad, values_now_and_next, window_carry)
from ._reduce import vector
from .plan import launch, planned, summarize
from .tile import coef, load, load_mask, store
from ._triton import jit, tl

__all__ = ["vtrace", "VTraceOutput"]


class VTraceOutput(NamedTuple):
    vs: torch.Tensor
    pg_advantages: torch.Tensor


# Inputs X: the episode layout (episode.py), then V-trace's own slots
LOG_RHOS = tl.constexpr(9)
RHO_BAR = tl.constexpr(10)  # the clips as float64 tensors (float64 problems), else None: P's numbers
C_BAR = tl.constexpr(11)
PG_RHO_BAR = tl.constexpr(12)
D_VS = tl.constexpr(13)  # backward: dL/dvs, None where that output got no gradient
D_PG = tl.constexpr(14)  # backward: dL/dpg_advantages
# Params P: gamma, lambda (episode.py), then the clips as numbers
P_RHO_BAR = tl.constexpr(3)  # after episode.py's gamma, lambda and open
P_C_BAR = tl.constexpr(4)
P_PG_RHO_BAR = tl.constexpr(5)
# Outputs O: forward (vs, pg_advantages); backward, the episode layout's input gradients
VS = tl.constexpr(0)
PG_ADVANTAGES = tl.constexpr(1)


@jit
def _weights(lam, log_rho, rho_bar, c_bar, pg_rho_bar):
    """The three clipped importance weights (rho, c = lambda min(c_bar, ratio), rho_pg)."""
    ratio = tl.exp(log_rho)  # pi / mu
    rho = tl.minimum(rho_bar, ratio, propagate_nan=tl.PropagateNan.ALL)
    c = lam * tl.minimum(c_bar, ratio, propagate_nan=tl.PropagateNan.ALL)
    rho_pg = tl.minimum(pg_rho_bar, ratio, propagate_nan=tl.PropagateNan.ALL)
    return rho, c, rho_pg


@jit
def _step(X, SX, P, row, t, m, T, ACC: tl.constexpr, ahead=None):
    """(gamma, lambda, term, done, valid, rho, c, rho_pg) of step t: the episode's coefficients
    and flags, and the three clipped importance weights (``ahead``: as ``episode.step``'s)."""
    gamma, lam, term, done, valid = step(X, SX, P, row, t, m, T, ACC, ahead)
    rho, c, rho_pg = _weights(lam, load(X[LOG_RHOS], SX[LOG_RHOS], row, t, valid, 0.0, ACC),
                              coef(X[RHO_BAR], SX[RHO_BAR], P[P_RHO_BAR], row, t, valid, ACC),
                              coef(X[C_BAR], SX[C_BAR], P[P_C_BAR], row, t, valid, ACC),
                              coef(X[PG_RHO_BAR], SX[PG_RHO_BAR], P[P_PG_RHO_BAR], row, t, valid, ACC))
    return gamma, lam, term, done, valid, rho, c, rho_pg


@jit
def _step_before(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    """``_step`` of step t - 1 at every step t (``m``: in bounds), from aligned loads shifted by
    one step (``episode.step_before``); callers select by the step's validity."""
    gamma, lam, term, done, valid = step_before(X, SX, P, row, t, m, T, ACC)
    rho, c, rho_pg = _weights(lam, before(X[LOG_RHOS], SX[LOG_RHOS], 0.0, row, t, m, T, ACC),
                              before(X[RHO_BAR], SX[RHO_BAR], P[P_RHO_BAR], row, t, m, T, ACC),
                              before(X[C_BAR], SX[C_BAR], P[P_C_BAR], row, t, m, T, ACC),
                              before(X[PG_RHO_BAR], SX[PG_RHO_BAR], P[P_PG_RHO_BAR], row, t, m, T, ACC))
    return gamma, lam, term, done, valid, rho, c, rho_pg


# ---- forward --------------------------------------------------------------------------------
@jit
def _vtrace_prologue(X, SX, P, row, t, m, T, ACC: tl.constexpr, ahead=None):
    """a_t = gamma_t c_t, b_t = V_t + rho_t delta_t - [not done_t] gamma_t c_t V'_t, reset at done_t."""
    step = _step(X, SX, P, row, t, m, T, ACC, ahead)
    gamma, lam, term, done, valid, rho, c, rho_pg = step
    r = load(X[REWARDS], SX[REWARDS], row, t, valid, 0.0, ACC)
    v, v_next = values_now_and_next(X, SX, row, t, m, T, ACC, ahead)  # V' never used after a terminal step
    delta = r + tl.where(term, 0.0, gamma * v_next) - v
    b = v + rho * delta - tl.where(done, 0.0, gamma * c * v_next)
    return gamma * c, b, done, valid, (step, r, v, v_next)


@jit
def _vtrace_epilogue(X, SX, P, O, SO, row, t, m, T, ACC: tl.constexpr, valid, y, y_in, keep):
    """vs_t = y; the advantage reads vs_{t+1} as carried (y_in), or V'_t at an episode end."""
    step, r, v, v_next = keep
    gamma, lam, term, done, _, _, _, rho_pg = step
    store(O[VS], SO[VS], row, t, m, tl.where(valid, y, 0.0))
    vs_next = tl.where(done, v_next, y_in)  # vs'_{t+1}
    target = r + tl.where(term, 0.0, gamma * (lam * vs_next + (1.0 - lam) * v_next))
    store(O[PG_ADVANTAGES], SO[PG_ADVANTAGES], row, t, m, tl.where(valid, rho_pg * (target - v), 0.0))


# ---- backward -------------------------------------------------------------------------------
@jit
def _vtrace_bwd_prologue(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    """Transposed scan, forwards in time: the pair at t is (a_{t-1}, dL/dvs_t + what A^pg_{t-1}
    sends to vs_t), reset where done_{t-1}."""
    step_p = _step_before(X, SX, P, row, t, m, T, ACC)
    gamma_p, lam_p, term_p, done_p, valid_p, rho_p, c_p, rho_pg_p = step_p
    a = tl.where(valid_p, gamma_p * c_p, 1.0)  # a padded step t-1 (or t = 0: the initial carry) passes g through
    reset = valid_p & done_p  # nothing flows back across an episode end
    h_p = before(X[D_PG], SX[D_PG], 0.0, row, t, m, T, ACC)  # dL/dA^pg_{t-1}, used where step t-1 is valid
    valid = load_mask(X[MASK], SX[MASK], row, t, m)
    dy = load(X[D_VS], SX[D_VS], row, t, valid, 0.0, ACC)
    # A^pg_{t-1} read vs_t as carried, which passes through padding: t itself may be padded
    dy += tl.where(valid_p & ~done_p, rho_pg_p * gamma_p * lam_p * h_p, 0.0)
    return a, dy, reset, m, (step_p, h_p)


@jit
def _d_next_value(step, g, h):
    """dL/dV'_t of one step from g_t = dL/db_t and h_t = dL/dA^pg_t (0 for a padded step)."""
    gamma, lam, term, done, valid, rho, c, rho_pg = step
    w = tl.where(done, 1.0, 1.0 - lam)  # A^pg weighs V'_t by 1 - lambda, or 1 at an episode end
    d = tl.where(term, 0.0, gamma * (rho * g + rho_pg * w * h)) - tl.where(done, 0.0, gamma * c * g)
    return tl.where(valid, d, 0.0)


@jit
def _vtrace_bwd_epilogue(X, SX, P, O, SO, row, t, m, T, ACC: tl.constexpr, valid_m, g, g_in, keep):
    step_p, h_p = keep
    step = _step(X, SX, P, row, t, m, T, ACC)
    gamma, lam, done, valid, rho, c, rho_pg = step[0], step[1], step[3], step[4], step[5], step[6], step[7]
    h = load(X[D_PG], SX[D_PG], row, t, valid, 0.0, ACC)  # dL/dA^pg_t
    # an open window's carry is vs after its last step: read by vs_t and A^pg_t (padding passes g)
    store_carry_grad(X, SX, P, O, SO, row, t, m, T,
                     tl.where(valid, tl.where(done, 0.0, gamma * (c * g + rho_pg * lam * h)), g))
    g = tl.where(valid, g, 0.0)  # dL/db_t
    if O[D_REWARDS] is not None:
        store(O[D_REWARDS], SO[D_REWARDS], row, t, m, rho * g + rho_pg * h)
    dv_next = _d_next_value(step, g, h)
    if O[D_VALUES] is not None:
        dv = tl.where(valid, (1.0 - rho) * g - rho_pg * h, 0.0)
        if X[NEXT_VALUES] is None:  # values[t] is V'_{t-1}, read by step t-1 even when step t is padding
            dv += _d_next_value(step_p, g_in, h_p)
        store(O[D_VALUES], SO[D_VALUES], row, t, m, dv)
    if O[D_NEXT_VALUES] is not None:
        store(O[D_NEXT_VALUES], SO[D_NEXT_VALUES], row, t, m, dv_next)
    store_bootstrap_grad(X, SX, P, O, SO, row, t, m, T, dv_next)


# ---- Launcher --------------------------------------------------------------------------------------
def _vtrace_inputs(p: Problem, acc: torch.dtype):
    """X up to PG_RHO_BAR. For float64 the clip thresholds travel as tensors (Triton passes Python floats
    as float32), like gamma and lambda in episode.inputs."""
    X = inputs(p, acc)
    X.append(_checks.rows(p.log_rhos, p.rewards.shape, p.time_dim))
    X += [vector((bar,), acc, p.rewards.device) for bar in p.params[3:]]
    return X


def _dtype(p: Problem) -> torch.dtype:
    return _checks.result_dtype(p.rewards, p.values, p.next_values, p.log_rhos)


def _forward(p: Problem):
    """One kernel launch: every input read once, both outputs written once (an open window's
    outputs end with the value entering its first step)."""
    dtype = _dtype(p)
    outs = tuple(_checks.new_output(p.rewards, p.time_dim, dtype) for _ in range(2))
    initial, end = window_carry(p, dtype)

    def first():
        shape, T, n_rows = _checks.problem(p.rewards, p.time_dim)
        acc = _checks.acc_dtype(dtype)
        X, O = _vtrace_inputs(p, acc), [_checks.rows(o, shape, p.time_dim) for o in outs]
        return X, O, launch(_vtrace_prologue, _vtrace_epilogue, X, p.params, O, n_rows, T, reverse=True,
                            acc_dtype=acc, time_contiguous=X[REWARDS][1][1] == 1, initial=initial, end=end,
                            ahead=ahead_hook if p.look_ahead else None), None

    planned(p.plan, ("forward", p.look_ahead), raw(p) + (p.log_rhos, None, None, None), p.params, outs, first)
    return outs + (() if end is None else (end,)), ()


def _summary(p: Problem):
    """(A, B, reset), each [rows]: each row's composed map (distributed.py)."""
    shape, T, n_rows = _checks.problem(p.rewards, p.time_dim)
    acc = _checks.acc_dtype(_dtype(p))
    X = _vtrace_inputs(p, acc)
    return summarize(_vtrace_prologue, _vtrace_epilogue, X, p.params, n_rows, T, reverse=True, acc_dtype=acc,
                     device=p.rewards.device, time_contiguous=X[REWARDS][1][1] == 1).unbind(-1)


def _backward(p: Problem, saved, grads, need):
    """The fused backward scan: the gradients of the fields in ``need`` (``_ops.Kernels``)."""
    outs = grad_buffers(p, need)
    d_vs, d_pg = grads[:2]
    d_end = grads[2] if len(grads) > 2 else None  # what flows into an open window's first step (_forward)

    def first():
        shape, T, n_rows = _checks.problem(p.rewards, p.time_dim)
        acc = _checks.acc_dtype(_dtype(p))
        X = _vtrace_inputs(p, acc)
        X += [None if d is None else _checks.rows(d.expand(shape), shape, p.time_dim) for d in (d_vs, d_pg)]
        O = grad_outputs(p, outs)
        return X, O, launch(_vtrace_bwd_prologue, _vtrace_bwd_epilogue, X, p.params, O, n_rows, T, reverse=False,
                            acc_dtype=acc, time_contiguous=X[REWARDS][1][1] == 1,
                            initial=None if d_end is None else d_end.reshape(-1).contiguous()), None

    planned(p.plan, ("backward", tuple(o is not None for o in outs)), raw(p) + (p.log_rhos, None, None, None, d_vs, d_pg),
            p.params, outs, first, sign=(d_vs, d_pg))
    return gradients(p, outs)


KERNELS = Kernels("vtrace", Problem, _forward, _backward, wrt=WRT,
                  check=lambda p: check_coefficients(p.gamma, p.lambda_), torch_path=_torch_path.vtrace)


@_checks.numpy_io
def vtrace(log_rhos, rewards, values, *, gamma=0.99, lambda_=1.0, rho_bar=1.0, c_bar=1.0,
           pg_rho_bar=1.0, terminated=None, truncated=None, bootstrap_value=None, next_values=None,
           mask=None, time_dim=-1, backend="auto", time_group=None):
    r"""V-trace targets and policy-gradient advantages (IMPALA), in one fused pass.

    .. math::

        v_t = V_t + \rho_t \delta_t + \gamma_t (1-\text{done}_t)\, c_t (v_{t+1} - V'_t), \qquad
        A^{pg}_t = \rho^{pg}_t\big(r_t + \gamma_t (1-\text{term}_t)
                   [\lambda_t v'_{t+1} + (1-\lambda_t) V'_t] - V_t\big)

    with :math:`\delta_t = r_t + \gamma_t(1-\text{term}_t)V'_t - V_t`,
    :math:`\rho_t = \min(\bar\rho, e^{\log\rho_t})`, :math:`c_t = \lambda_t\min(\bar c,
    e^{\log\rho_t})`, :math:`\rho^{pg}_t = \min(\bar\rho_{pg}, e^{\log\rho_t})`, and
    :math:`v'_{t+1}` = :math:`v_{t+1}` inside an episode, :math:`V'_t` at its end (a truncation
    or the end of the window). On-policy (``log_rhos = 0``, clips ≥ 1) ``vs`` are the λ-returns
    of :func:`~rltriton_lite.td_lambda` and ``pg_advantages = vs - values``.

    Args:
        log_rhos: log π(a_t|s_t) − log μ(a_t|s_t), float tensor shaped like ``rewards``.
            Treated as a constant: no gradient flows to it (as in IMPALA).
        rewards: float tensor; ``time_dim`` is time, every other dim is batch.
        values: V(s_t) under the learner's critic, shape of ``rewards``.
        gamma: discount, a float or a tensor broadcastable to ``rewards``.
        lambda_: the trace coefficient λ in [0, 1] (IMPALA's λ; 1 = the paper's default),
            a float or a tensor broadcastable to ``rewards``.
        rho_bar: truncation ρ̄ of the importance weight in the TD term (> 0; ``inf``: none).
        c_bar: truncation c̄ of the trace-cutting weights (> 0).
        pg_rho_bar: truncation of the importance weight of the advantages (> 0).
        terminated, truncated, bootstrap_value, next_values, mask, time_dim, backend, time_group:
            as in :func:`~rltriton_lite.gae`; ``truncated`` needs ``next_values``.

    Returns:
        ``VTraceOutput(vs, pg_advantages)``, both written by one kernel, in the dtype of the
        inputs; 0 at padded steps. Differentiable in ``rewards``, ``values``, ``next_values``
        and ``bootstrap_value`` (a fused backward scan), not in ``log_rhos``.
    """
    if values is None:
        raise TypeError("vtrace() needs values, the critic's V(s_t) (a tensor shaped like rewards)")
    if time_group is not None:
        return VTraceOutput(*_sharded(time_group, dict(
            log_rhos=log_rhos, rewards=rewards, values=values, next_values=next_values,
            bootstrap_value=bootstrap_value, gamma=gamma, lambda_=lambda_, terminated=terminated, truncated=truncated,
            mask=mask), (rho_bar, c_bar, pg_rho_bar), time_dim, backend))
    p, use_kernel = _prepare(log_rhos, rewards, values, next_values, bootstrap_value, gamma, lambda_, terminated,
                             truncated, mask, (rho_bar, c_bar, pg_rho_bar), time_dim, backend)
    if p.rewards.numel() == 0:
        return VTraceOutput(*(torch.empty(p.rewards.shape, dtype=_dtype(p), device=p.rewards.device) for _ in range(2)))
    return VTraceOutput(*KERNELS(p, use_kernel, lambda: _torch_path.vtrace(p)))


def _prepare(log_rhos, rewards, values, next_values, bootstrap_value, gamma, lambda_, terminated, truncated, mask,
             bars, time_dim, backend, window=None):
    """The validated problem (``window``: distributed.py's, else None) and whether a kernel runs it."""
    p, use_kernel = prepare("vtrace", rewards, values, next_values, bootstrap_value, gamma, lambda_,
                            terminated, truncated, mask, time_dim, backend, (log_rhos, *bars), window)
    log_rhos = _checks.same_shape("log_rhos", log_rhos, p.rewards, "rewards")
    bars = tuple(_checks.real(n, x, positive=True) for n, x in zip(("rho_bar", "c_bar", "pg_rho_bar"), bars))
    return p._replace(log_rhos=log_rhos, params=p.params + bars), use_kernel


def _sharded(group, inputs, bars, time_dim, backend):
    """vtrace over rows whose steps the ranks of ``group`` hold in rank order (distributed.py)."""
    from . import distributed

    rewards = _checks.float_tensor("rewards", inputs["rewards"])
    time_dim = _checks.time_dim(time_dim, rewards)

    def prepare_(x, window, boundary):
        return _prepare(x["log_rhos"], x["rewards"], x["values"], x["next_values"], boundary, x["gamma"], x["lambda_"],
                        x["terminated"], x["truncated"], x["mask"], bars, time_dim, backend, window)

    def summary(p, use_kernel):
        return _summary(p) if use_kernel else _torch_path.vtrace(p, summary=True)

    def run(p, use_kernel, carry):
        p = p._replace(carry=carry)
        return KERNELS(p, use_kernel, lambda: _torch_path.vtrace(p))

    def empty():
        dtype = _checks.result_dtype(rewards, inputs["values"], inputs["next_values"], inputs["log_rhos"])
        return tuple(torch.empty(rewards.shape, dtype=dtype, device=rewards.device) for _ in range(2))

    w = distributed.Window("vtrace", dict(inputs, rewards=rewards), time_dim, rewards, prepare_, summary, run, empty,
                           boundary="bootstrap_value" if inputs["next_values"] is None else None)
    return distributed.time_sharded(w, group)
