r"""Discounted returns, GAE and TD(λ): three prologues and epilogues on the one scan.

The recurrence, its resets and its gradients are derived in docs/ALGORITHMS.md,
"Discounted returns, GAE and TD(λ)".
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from . import _checks, _torch_path
from ._ops import Kernels, check_coefficients
from ._triton import jit, tl
from .episode import (D_REWARDS, REWARDS, WRT, Problem, ahead_hook, bwd_prologue, grad_buffers, grad_outputs, gradients, inputs,
                      prepare, raw, replayed, set_replay, step, store_bootstrap_grad, store_carry_grad, store_values_grad,
                      values_now_and_next, window_carry)
from .plan import launch, planned, summarize
from .tile import load, store

__all__ = ["discounted_returns", "gae", "td_lambda", "GAEOutput"]


class GAEOutput(NamedTuple):
    advantages: torch.Tensor
    returns: torch.Tensor


# The inputs are the episode layout (episode.py). Outputs of the forward pass:
OUT = tl.constexpr(0)  # the returns, GAE's advantages, or the λ-returns
RETURNS = tl.constexpr(1)  # GAE's returns (advantages + values)


# ---- forward prologues: (a, b, reset, valid, keep) ------------------------------------------
@jit
def _returns_prologue(X, SX, P, row, t, m, T, ACC: tl.constexpr, ahead=None):
    gamma, lam, term, done, valid = step(X, SX, P, row, t, m, T, ACC, ahead)
    r = load(X[REWARDS], SX[REWARDS], row, t, valid, 0.0, ACC)
    _, v_next = values_now_and_next(X, SX, row, t, m, T, ACC, ahead)  # read at every step, used where it bootstraps
    b = r + tl.where(done & ~term, gamma * v_next, 0.0)
    return gamma * lam, b, done, valid, ()


@jit
def _gae_prologue(X, SX, P, row, t, m, T, ACC: tl.constexpr, ahead=None):
    gamma, lam, term, done, valid = step(X, SX, P, row, t, m, T, ACC, ahead)
    r = load(X[REWARDS], SX[REWARDS], row, t, valid, 0.0, ACC)
    v, v_next = values_now_and_next(X, SX, row, t, m, T, ACC, ahead)
    delta = r + tl.where(term, 0.0, gamma * v_next) - v
    return gamma * lam, delta, done, valid, (v,)


@jit
def _td_lambda_prologue(X, SX, P, row, t, m, T, ACC: tl.constexpr, ahead=None):
    gamma, lam, term, done, valid = step(X, SX, P, row, t, m, T, ACC, ahead)
    r = load(X[REWARDS], SX[REWARDS], row, t, valid, 0.0, ACC)
    _, v_next = values_now_and_next(X, SX, row, t, m, T, ACC, ahead)
    w = tl.where(done, 1.0, 1.0 - lam)  # an episode end bootstraps fully
    b = r + tl.where(term, 0.0, gamma * w * v_next)
    return gamma * lam, b, done, valid, ()


# ---- forward epilogues ----------------------------------------------------------------------
@jit
def _one_output_epilogue(X, SX, P, O, SO, row, t, m, T, ACC: tl.constexpr, valid, y, y_in, keep):
    store(O[OUT], SO[OUT], row, t, m, tl.where(valid, y, 0.0))


@jit
def _gae_epilogue(X, SX, P, O, SO, row, t, m, T, ACC: tl.constexpr, valid, y, y_in, keep):
    store(O[OUT], SO[OUT], row, t, m, tl.where(valid, y, 0.0))
    store(O[RETURNS], SO[RETURNS], row, t, m, tl.where(valid, y + keep[0], 0.0))


# ---- backward -------------------------------------------------------------------------------
@jit
def _returns_bwd_epilogue(X, SX, P, O, SO, row, t, m, T, ACC: tl.constexpr, valid_m, g, g_in, keep):
    gamma, lam, term, done, valid = step(X, SX, P, row, t, m, T, ACC)
    if O[D_REWARDS] is not None:
        store(O[D_REWARDS], SO[D_REWARDS], row, t, m, tl.where(valid, g, 0.0))
    dv_next = tl.where(valid & done & ~term, gamma * g, 0.0)
    store_values_grad(X, SX, P, O, SO, row, t, m, T, valid, 0.0, dv_next, g_in, keep)
    store_bootstrap_grad(X, SX, P, O, SO, row, t, m, T, dv_next)
    store_carry_grad(X, SX, P, O, SO, row, t, m, T, tl.where(valid, tl.where(done, 0.0, gamma * lam), 1.0) * g)


@jit
def _gae_bwd_epilogue(X, SX, P, O, SO, row, t, m, T, ACC: tl.constexpr, valid_m, g, g_in, keep):
    gamma, lam, term, done, valid = step(X, SX, P, row, t, m, T, ACC)
    if O[D_REWARDS] is not None:
        store(O[D_REWARDS], SO[D_REWARDS], row, t, m, tl.where(valid, g, 0.0))
    d_ret = keep[3]
    dv_next = tl.where(valid & ~term, gamma * g, 0.0)
    store_values_grad(X, SX, P, O, SO, row, t, m, T, valid, d_ret - g, dv_next, g_in, keep)
    store_bootstrap_grad(X, SX, P, O, SO, row, t, m, T, dv_next)
    store_carry_grad(X, SX, P, O, SO, row, t, m, T, tl.where(valid, tl.where(done, 0.0, gamma * lam), 1.0) * g)


@jit
def _td_lambda_bwd_epilogue(X, SX, P, O, SO, row, t, m, T, ACC: tl.constexpr, valid_m, g, g_in, keep):
    gamma, lam, term, done, valid = step(X, SX, P, row, t, m, T, ACC)
    if O[D_REWARDS] is not None:
        store(O[D_REWARDS], SO[D_REWARDS], row, t, m, tl.where(valid, g, 0.0))
    w = tl.where(done, 1.0, 1.0 - lam)
    dv_next = tl.where(valid & ~term, gamma * w * g, 0.0)
    store_values_grad(X, SX, P, O, SO, row, t, m, T, valid, 0.0, dv_next, g_in, keep)
    store_carry_grad(X, SX, P, O, SO, row, t, m, T, tl.where(valid, tl.where(done, 0.0, gamma * lam), 1.0) * g)


_KERNELS = {
    # name: (forward prologue, forward epilogue, backward epilogue, number of outputs)
    "discounted_return": (_returns_prologue, _one_output_epilogue, _returns_bwd_epilogue, 1),
    "gae": (_gae_prologue, _gae_epilogue, _gae_bwd_epilogue, 2),
    "td_lambda": (_td_lambda_prologue, _one_output_epilogue, _td_lambda_bwd_epilogue, 1),
}


# ---- Launchers -------------------------------------------------------------------------------------
def _forward(p: Problem):
    """One kernel launch: every input read once, every output written once (an open window's
    outputs end with the value entering its first step)."""
    prologue, epilogue, _, n_out = _KERNELS[p.kind]
    dtype = _checks.result_dtype(p.rewards, p.values, p.next_values)
    outs = tuple(_checks.new_output(p.rewards, p.time_dim, dtype) for _ in range(n_out))
    initial, end = window_carry(p, dtype)

    def first():
        shape, T, n_rows = _checks.problem(p.rewards, p.time_dim)
        acc = _checks.acc_dtype(dtype)
        X, O = inputs(p, acc), [_checks.rows(o, shape, p.time_dim) for o in outs]
        return X, O, launch(prologue, epilogue, X, p.params, O, n_rows, T, reverse=True, acc_dtype=acc,
                            time_contiguous=X[REWARDS][1][1] == 1, initial=initial, end=end,
                            ahead=ahead_hook if p.look_ahead else None), None

    planned(p.plan, ("forward", p.look_ahead), raw(p), p.params, outs, first)
    set_replay(p, ("forward", p.look_ahead), n_out, dtype)
    return outs + (() if end is None else (end,)), ()


def _summary(p: Problem):
    """[rows, 3]: each row's composed map (distributed.py)."""
    prologue, epilogue, _, _ = _KERNELS[p.kind]
    shape, T, n_rows = _checks.problem(p.rewards, p.time_dim)
    acc = _checks.acc_dtype(_checks.result_dtype(p.rewards, p.values, p.next_values))
    X = inputs(p, acc)
    return summarize(prologue, epilogue, X, p.params, n_rows, T, reverse=True, acc_dtype=acc,
                     device=p.rewards.device, time_contiguous=X[REWARDS][1][1] == 1)


def _backward(p: Problem, saved, grads, need):
    """The transposed scan: the gradients of the fields in ``need`` (``_ops.Kernels``)."""
    _, _, bwd_epilogue, n_out = _KERNELS[p.kind]
    outs = grad_buffers(p, need)
    # what flows into an open window's first step: the gradient of the value entering it (_forward)
    d_end = grads[n_out] if p.carry is not None and len(grads) > n_out else None
    # an output without a gradient reads as zeros in the kernel (no B × T buffer of them)
    grads = tuple(grads[:n_out]) + (None,) * (2 - n_out)  # D_OUT, D_OUT2

    def first():
        shape, T, n_rows = _checks.problem(p.rewards, p.time_dim)
        acc = _checks.acc_dtype(_checks.result_dtype(p.rewards, p.values, p.next_values))
        X = inputs(p, acc) + [None if g is None else _checks.rows(g.expand(shape), shape, p.time_dim) for g in grads]
        O = grad_outputs(p, outs)
        return X, O, launch(bwd_prologue, bwd_epilogue, X, p.params, O, n_rows, T, reverse=False, acc_dtype=acc,
                            time_contiguous=X[REWARDS][1][1] == 1,
                            initial=None if d_end is None else d_end.reshape(-1).contiguous()), None

    planned(p.plan, ("backward", tuple(o is not None for o in outs)), raw(p) + grads, p.params, outs, first,
            sign=grads)
    return gradients(p, outs)


def _check(p: Problem):
    check_coefficients(p.gamma, p.lambda_)


# one op per algorithm, so that a compiled graph names it
KERNELS = {kind: Kernels(name, Problem, _forward, _backward, wrt=WRT, check=_check, torch_path=_torch_path.returns)
           for kind, name in (("discounted_return", "discounted_returns"), ("gae", "gae"), ("td_lambda", "td_lambda"))}


def _sharded(kind, group, inputs):
    """The call over rows whose steps the ranks of ``group`` hold in rank order (distributed.py)."""
    from . import distributed

    rewards = _checks.float_tensor("rewards", inputs["rewards"])
    time_dim = _checks.time_dim(inputs["time_dim"], rewards)
    n_out = _KERNELS[kind][3]

    def prepare_(x, window, boundary):
        return prepare(kind, x["rewards"], x.get("values"), x["next_values"], boundary, x["gamma"], x["lambda_"],
                       x["terminated"], x["truncated"], x["mask"], time_dim, x["backend"], window=window)

    def summary(p, use_kernel):
        return _summary(p).unbind(-1) if use_kernel else _torch_path.returns(p, summary=True)

    def empty():
        dtype = _checks.result_dtype(rewards, inputs.get("values"), inputs["next_values"])
        return tuple(torch.empty(rewards.shape, dtype=dtype, device=rewards.device) for _ in range(n_out))

    w = distributed.Window(kind, dict(inputs, rewards=rewards), time_dim, rewards, prepare_, summary,
                           lambda p, use_kernel, carry: _run(p._replace(carry=carry), use_kernel), empty,
                           boundary="bootstrap_value" if inputs["next_values"] is None else None)
    return distributed.time_sharded(w, group)


def _call(kind, rewards, values, next_values, bootstrap_value, gamma, lambda_, terminated, truncated, mask, time_dim,
          backend):
    """A call's outputs: replayed from its plan (``episode.replayed``), else prepared and run."""
    tensors = (rewards, values, next_values, bootstrap_value, terminated, truncated, mask)
    outs, key = replayed(kind, tensors, gamma, lambda_, time_dim, backend)
    if outs is not None:
        return outs
    return _run(*prepare(kind, *tensors[:4], gamma, lambda_, *tensors[4:], time_dim, backend, key=key))


def _run(p: Problem, use_kernel: bool):
    if p.rewards.numel() == 0:
        dtype = _checks.result_dtype(p.rewards, p.values, p.next_values)
        return tuple(torch.empty(p.rewards.shape, dtype=dtype, device=p.rewards.device)
                     for _ in range(_KERNELS[p.kind][3]))
    return KERNELS[p.kind](p, use_kernel, lambda: _torch_path.returns(p))


@_checks.numpy_io
def discounted_returns(rewards, *, gamma=0.99, terminated=None, truncated=None,
                       bootstrap_value=None, next_values=None, mask=None, time_dim=-1,
                       backend="auto", time_group=None):
    r"""Discounted returns with episode ends, truncation bootstraps and padding.

    .. math::

        G_t = r_t + \gamma_t (1-\text{term}_t)
              \begin{cases} G_{t+1} & \text{not done}_t \\ V'_t & \text{done}_t \end{cases}

    Args:
        rewards: float tensor; ``time_dim`` is time, every other dim is batch.
        gamma: discount, a float or a tensor broadcastable to ``rewards`` (per-step discounts).
        terminated: flags (bool, uint8 or float): s_{t+1} is terminal, nothing is bootstrapped.
        truncated: flags: the episode was cut after step t; the return bootstraps from
            ``next_values[t]``, which must then be given.
        bootstrap_value: V of the state after the window, shape = batch shape (default 0);
            it stands for ``next_values`` at the last step, so passing both is a ValueError.
        next_values: V(s_{t+1}) for every step, shape of ``rewards``: read at truncations and
            at the window's last step.
        mask: 0 removes the step, as if deleted (padding, or a hole): nothing of it is read, the
            step before it bootstraps from the next unmasked step (``next_values``, if given, by
            position), and its output and gradients are 0.
        time_dim: the time axis (0 for time-major buffers, -1 for batch-major).
        backend: "auto", "triton" or "torch".
        time_group: a ``torch.distributed`` process group whose ranks hold the rows' steps in
            rank order, this rank its own (any number, 0 included): the call returns this rank's
            share of the one-process result (README, "Across processes"). ``bootstrap_value``
            is read on the last rank. None: one process.

    Returns:
        The returns, shape and dtype of ``rewards``. Differentiable in ``rewards``,
        ``next_values`` and ``bootstrap_value``.
    """
    if time_group is not None:
        return _sharded("discounted_return", time_group, dict(
            rewards=rewards, next_values=next_values, bootstrap_value=bootstrap_value, gamma=gamma, lambda_=1.0,
            terminated=terminated, truncated=truncated, mask=mask, time_dim=time_dim, backend=backend))[0]
    return _call("discounted_return", rewards, None, next_values, bootstrap_value, gamma, 1.0, terminated, truncated,
                 mask, time_dim, backend)[0]


@_checks.numpy_io
def gae(rewards, values, *, gamma=0.99, lambda_=0.95, terminated=None, truncated=None,
        bootstrap_value=None, next_values=None, mask=None, time_dim=-1, backend="auto", time_group=None):
    r"""Generalized advantage estimation (Schulman et al., 2016) in one fused pass.

    .. math::

        \delta_t = r_t + \gamma_t (1-\text{term}_t) V'_t - V_t, \qquad
        A_t = \delta_t + \gamma_t \lambda_t (1-\text{done}_t) A_{t+1}, \qquad
        \text{returns}_t = A_t + V_t

    ``V'_t`` is ``next_values[t]`` if given, else ``values[t+1]`` (and ``bootstrap_value`` after
    the last step). Arguments as in :func:`discounted_returns` (``time_group`` too); ``values``
    has the shape of ``rewards``.

    Returns:
        ``GAEOutput(advantages, returns)``, both written by one kernel. Differentiable in
        ``rewards``, ``values``, ``next_values`` and ``bootstrap_value``.
    """
    if values is None:
        raise TypeError("gae() needs values, the critic's V(s_t) (a tensor shaped like rewards)")
    if time_group is not None:
        return GAEOutput(*_sharded("gae", time_group, dict(
            rewards=rewards, values=values, next_values=next_values, bootstrap_value=bootstrap_value, gamma=gamma,
            lambda_=lambda_, terminated=terminated, truncated=truncated, mask=mask, time_dim=time_dim,
            backend=backend)))
    return GAEOutput(*_call("gae", rewards, values, next_values, bootstrap_value, gamma, lambda_, terminated, truncated,
                            mask, time_dim, backend))


@_checks.numpy_io
def td_lambda(rewards, next_values, *, gamma=0.99, lambda_=0.95, terminated=None, truncated=None,
              mask=None, time_dim=-1, backend="auto", time_group=None):
    r"""λ-returns (rlax ``lambda_returns`` semantics), e.g. critic targets.

    .. math::

        G_t = r_t + \gamma_t (1-\text{term}_t)\Big[(1-\lambda_t) V'_t + \lambda_t
              \begin{cases} G_{t+1} & \text{not done}_t \\ V'_t & \text{done}_t \end{cases}\Big]

    ``next_values[t]`` = V(s_{t+1}) is required. λ = 0 gives one-step TD targets, λ = 1
    discounted returns bootstrapped at episode ends. Arguments as in :func:`discounted_returns`
    (``time_group`` too).

    Returns:
        The λ-returns, shape of ``rewards``. Differentiable in ``rewards`` and ``next_values``.
    """
    if next_values is None:
        raise TypeError("td_lambda() needs next_values, V(s_{t+1}) for every step")
    if time_group is not None:
        return _sharded("td_lambda", time_group, dict(
            rewards=rewards, next_values=next_values, gamma=gamma, lambda_=lambda_, terminated=terminated,
            truncated=truncated, mask=mask, time_dim=time_dim, backend=backend))[0]
    return _call("td_lambda", rewards, None, next_values, None, gamma, lambda_, terminated, truncated, mask, time_dim,
                 backend)[0]
