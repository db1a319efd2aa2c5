r"""Discounted returns, GAE and TD(λ): three prologues and epilogues on the one scan.

All three are the backward recurrence :math:`y_t = b_t + a_t y_{t+1}` with
:math:`a_t = \gamma_t \lambda_t` (λ = 1 for plain returns) and a reset at every episode end
:math:`\text{done}_t = \text{terminated}_t \lor \text{truncated}_t \lor (t = T-1)`; only
:math:`b_t` differs. With :math:`V'_t = V(s_{t+1})`:

.. math::

    \text{returns:}\quad & b_t = r_t + [\text{done}_t \land \lnot\text{term}_t]\,\gamma_t V'_t \\
    \text{GAE:}\quad & b_t = \delta_t = r_t + [\lnot\text{term}_t]\,\gamma_t V'_t - V_t,
        \qquad \text{returns} = A + V \\
    \text{TD}(\lambda)\text{:}\quad & b_t = r_t + [\lnot\text{term}_t]\,\gamma_t
        \big([\text{done}_t] + [\lnot\text{done}_t](1-\lambda_t)\big) V'_t

Bracketed flags are selects, so a NaN value behind a terminal step is never read into a sum.
The backward pass is the transposed scan :math:`g_t = \partial L/\partial y_t + a_{t-1} g_{t-1}`
(reset where :math:`\text{done}_{t-1}`), after which every input's gradient is a multiple of
:math:`g_t`: :math:`\partial L/\partial r_t = g_t`, and so on.
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from . import _checks
from .scan import launch, load, load_and_step, load_flag, load_mask, coef, store, use_triton
from ._triton import jit, tl

__all__ = ["discounted_returns", "gae", "td_lambda", "GAEOutput"]


class GAEOutput(NamedTuple):
    advantages: torch.Tensor
    returns: torch.Tensor


# Inputs X, shared by the three estimators (None where an estimator has no such input):
#   0 rewards  1 values  2 next_values  3 bootstrap_value (per row)  4 terminated  5 truncated
#   6 mask  7 gamma (tensor)  8 lambda (tensor)  9, 10 output gradients (backward)
# Params P: (gamma, lambda) as numbers, used where X[7], X[8] are None.
# Outputs O: forward (out,) or (advantages, returns);
#            backward (d_rewards, d_values, d_next_values, d_bootstrap_value).


@jit
def _episode(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    """(gamma_t, lambda_t, terminated_t, done_t, valid_t): the step's coefficients and flags."""
    valid = load_mask(X[6], SX[6], row, t, m)
    term = load_flag(X[4], SX[4], row, t, valid)
    done = term | load_flag(X[5], SX[5], row, t, valid) | (t == T - 1)  # the window ends: truncation
    gamma = coef(X[7], SX[7], P[0], row, t, valid, ACC)
    lam = coef(X[8], SX[8], P[1], row, t, valid, ACC)
    return gamma, lam, term, done, valid


@jit
def _before(p, s, scalar, row, t, m, T, ACC: tl.constexpr):
    """An input at step t - 1 (aligned loads shifted by a step), or ``scalar`` where ``p`` is None."""
    if p is None:
        return scalar
    else:
        return load_and_step(p, s, row, t, m, T, 0.0, ACC, -1)[1]


@jit
def _episode_before(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    """``_episode`` of step t - 1 at every step t of the tile (``m``: in bounds), as the
    backward's transposed scan needs it, from aligned loads shifted by one step: a load at t - 1
    would be one scalar load per step (docs/DESIGN.md, "Loads"). Where step t - 1 is not valid
    its coefficients are read rather than zeroed: callers select by its validity."""
    valid = m & (t >= 1)
    if X[6] is not None:
        valid = valid & (_before(X[6], SX[6], 0.0, row, t, m, T, ACC) != 0)
    term = valid & (_before(X[4], SX[4], 0.0, row, t, m, T, ACC) != 0)
    done = term | (valid & (_before(X[5], SX[5], 0.0, row, t, m, T, ACC) != 0)) | (t - 1 == T - 1)
    gamma = _before(X[7], SX[7], P[0], row, t, m, T, ACC)
    lam = _before(X[8], SX[8], P[1], row, t, m, T, ACC)
    return gamma, lam, term, done, valid


@jit
def _values_now_and_next(X, SX, row, t, m, T, ACC: tl.constexpr):
    """(V(s_t), V(s_{t+1})) at every step of ``m``: values[t], and next_values[t], else values[t+1]
    (the aligned values shifted by one step) and bootstrap_value after the last step.

    Callers pass the steps in bounds as ``m`` and select by validity and the terminal flag
    afterwards: a mask computed from loaded data would make every load of it scalar (no 16-byte
    vectors; docs/DESIGN.md, "Loads")."""
    if X[2] is not None:
        return load(X[1], SX[1], row, t, m, 0.0, ACC), load(X[2], SX[2], row, t, m, 0.0, ACC)
    else:  # (returns without values: both 0, only the bootstrap value is read)
        v, v_after = load_and_step(X[1], SX[1], row, t, m, T, 0.0, ACC, 1)
        last = t == T - 1
        return v, tl.where(last, load(X[3], SX[3], row, t, m & last, 0.0, ACC), v_after)


# ---- forward prologues: (a, b, reset, valid, keep) ------------------------------------------
@jit
def _returns_prologue(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    gamma, lam, term, done, valid = _episode(X, SX, P, row, t, m, T, ACC)
    r = load(X[0], SX[0], row, t, valid, 0.0, ACC)
    _, v_next = _values_now_and_next(X, SX, row, t, m, T, ACC)  # read at every step, used where it bootstraps
    b = r + tl.where(done & ~term, gamma * v_next, 0.0)
    return gamma * lam, b, done, valid, ()


@jit
def _gae_prologue(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    gamma, lam, term, done, valid = _episode(X, SX, P, row, t, m, T, ACC)
    r = load(X[0], SX[0], row, t, valid, 0.0, ACC)
    v, v_next = _values_now_and_next(X, SX, row, t, m, T, ACC)
    delta = r + tl.where(term, 0.0, gamma * v_next) - v
    return gamma * lam, delta, done, valid, (v,)


@jit
def _td_lambda_prologue(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    gamma, lam, term, done, valid = _episode(X, SX, P, row, t, m, T, ACC)
    r = load(X[0], SX[0], row, t, valid, 0.0, ACC)
    _, v_next = _values_now_and_next(X, SX, row, t, m, T, ACC)
    w = tl.where(done, 1.0, 1.0 - lam)  # an episode end bootstraps fully
    b = r + tl.where(term, 0.0, gamma * w * v_next)
    return gamma * lam, b, done, valid, ()


# ---- forward epilogues ----------------------------------------------------------------------
@jit
def _one_output_epilogue(X, SX, P, O, SO, row, t, m, T, ACC: tl.constexpr, valid, y, y_prev, keep):
    store(O[0], SO[0], row, t, m, tl.where(valid, y, 0.0))


@jit
def _gae_epilogue(X, SX, P, O, SO, row, t, m, T, ACC: tl.constexpr, valid, y, y_prev, keep):
    store(O[0], SO[0], row, t, m, tl.where(valid, y, 0.0))
    store(O[1], SO[1], row, t, m, tl.where(valid, y + keep[0], 0.0))


# ---- backward -------------------------------------------------------------------------------
@jit
def _bwd_prologue(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    """Transposed scan, forwards in time: the pair at t is (a_{t-1}, dL/dy_t)."""
    gamma_p, lam_p, term_p, done_p, valid_p = _episode_before(X, SX, P, row, t, m, T, ACC)
    a = tl.where(valid_p, gamma_p * lam_p, 1.0)  # a padded step t-1 passes g through
    reset = (valid_p & done_p) | ~(m & (t >= 1))  # nothing flows back across an episode end (or t = 0)
    valid = load_mask(X[6], SX[6], row, t, m)
    dy = load(X[9], SX[9], row, t, valid, 0.0, ACC)
    d_second = load(X[10], SX[10], row, t, valid, 0.0, ACC)  # GAE: y feeds returns too
    return a, dy + d_second, reset, m, (gamma_p, term_p, valid_p, d_second)


@jit
def _store_bootstrap_grad(X, SX, P, O, SO, row, t, m, T, dv_next):
    """Without next_values, V'_t is values[t+1], and bootstrap_value after the last step."""
    if O[3] is not None:
        store(O[3], SO[3], row, t, m & (t == T - 1), dv_next)


@jit
def _store_values_grad(X, SX, P, O, SO, row, t, m, T, valid, dv, dv_next, g_prev, keep):
    """d values_t: the direct term ``dv``, plus (without next_values) what b_{t-1} read."""
    gamma_p, term_p, valid_p, _ = keep
    if O[1] is not None:
        dv = tl.where(valid, dv, 0.0)
        if X[2] is None:  # values[t] is V'_{t-1}, read by step t-1 even when step t is padding
            dv += tl.where(valid_p & ~term_p, gamma_p * g_prev, 0.0)
        store(O[1], SO[1], row, t, m, dv)
    if O[2] is not None:
        store(O[2], SO[2], row, t, m, dv_next)


@jit
def _returns_bwd_epilogue(X, SX, P, O, SO, row, t, m, T, ACC: tl.constexpr, valid_m, g, g_prev, keep):
    gamma, lam, term, done, valid = _episode(X, SX, P, row, t, m, T, ACC)
    if O[0] is not None:
        store(O[0], SO[0], row, t, m, tl.where(valid, g, 0.0))
    dv_next = tl.where(valid & done & ~term, gamma * g, 0.0)
    _store_values_grad(X, SX, P, O, SO, row, t, m, T, valid, 0.0, dv_next, g_prev, keep)
    _store_bootstrap_grad(X, SX, P, O, SO, row, t, m, T, dv_next)


@jit
def _gae_bwd_epilogue(X, SX, P, O, SO, row, t, m, T, ACC: tl.constexpr, valid_m, g, g_prev, keep):
    gamma, lam, term, done, valid = _episode(X, SX, P, row, t, m, T, ACC)
    if O[0] is not None:
        store(O[0], SO[0], row, t, m, tl.where(valid, g, 0.0))
    d_ret = keep[3]
    dv_next = tl.where(valid & ~term, gamma * g, 0.0)
    _store_values_grad(X, SX, P, O, SO, row, t, m, T, valid, d_ret - g, dv_next, g_prev, keep)
    _store_bootstrap_grad(X, SX, P, O, SO, row, t, m, T, dv_next)


@jit
def _td_lambda_bwd_epilogue(X, SX, P, O, SO, row, t, m, T, ACC: tl.constexpr, valid_m, g, g_prev, keep):
    gamma, lam, term, done, valid = _episode(X, SX, P, row, t, m, T, ACC)
    if O[0] is not None:
        store(O[0], SO[0], row, t, m, tl.where(valid, g, 0.0))
    w = tl.where(done, 1.0, 1.0 - lam)
    dv_next = tl.where(valid & ~term, gamma * w * g, 0.0)
    _store_values_grad(X, SX, P, O, SO, row, t, m, T, valid, 0.0, dv_next, g_prev, keep)


_KERNELS = {
    # name: (forward prologue, forward epilogue, backward epilogue, number of outputs)
    "discounted_return": (_returns_prologue, _one_output_epilogue, _returns_bwd_epilogue, 1),
    "gae": (_gae_prologue, _gae_epilogue, _gae_bwd_epilogue, 2),
    "td_lambda": (_td_lambda_prologue, _one_output_epilogue, _td_lambda_bwd_epilogue, 1),
}


# --------------------------------------------------------------------------------------------
# Launchers
# --------------------------------------------------------------------------------------------
class _Problem(NamedTuple):
    """Validated inputs of one call, in the order of the kernels' X tuple."""

    kind: str
    rewards: torch.Tensor
    values: torch.Tensor | None
    next_values: torch.Tensor | None
    bootstrap_value: torch.Tensor | None
    terminated: torch.Tensor | None
    truncated: torch.Tensor | None
    mask: torch.Tensor | None
    gamma: torch.Tensor | None
    lambda_: torch.Tensor | None
    params: tuple
    time_dim: int


def _inputs(p: _Problem, acc: torch.dtype):
    """The X tuple as (rows view, strides) pairs. For float64 the coefficients travel as
    tensors, since Triton passes Python floats as float32."""
    shape, td = p.rewards.shape, p.time_dim
    gamma, lam = p.gamma, p.lambda_
    if acc == torch.float64:
        full = lambda v: _checks.scalars((v,), acc, p.rewards.device).reshape(()).expand(shape)  # noqa: E731
        gamma = full(p.params[0]) if gamma is None else gamma
        lam = full(p.params[1]) if lam is None else lam
    X = [_checks.rows(x, shape, td) for x in
         (p.rewards, p.values, p.next_values, None, p.terminated, p.truncated, p.mask, gamma, lam)]
    X[3] = _checks.row_vector(p.bootstrap_value, shape, td)
    return X


def _forward(p: _Problem):
    """One kernel launch: every input read once, every output written once."""
    prologue, epilogue, _, n_out = _KERNELS[p.kind]
    shape, T, n_rows = _checks.problem(p.rewards, p.time_dim)
    dtype = _checks.result_dtype(p.rewards, p.values, p.next_values)
    acc = _checks.acc_dtype(dtype)
    outs = [_checks.new_output(shape, p.time_dim, dtype, p.rewards.device) for _ in range(n_out)]
    X = _inputs(p, acc)
    launch(prologue, epilogue, X, p.params, [_checks.rows(o, shape, p.time_dim) for o in outs],
           n_rows, T, reverse=True, acc_dtype=acc, time_contiguous=X[0][1][1] == 1)
    return tuple(outs) if n_out > 1 else outs[0]


def _grad_buffers(p: _Problem, need):
    """Gradient buffers for (rewards, values, next_values) and bootstrap_value, None where no
    gradient is needed, and the O tuple of the backward kernels (returns.py's layout)."""
    shape, _, n_rows = _checks.problem(p.rewards, p.time_dim)
    outs = [_checks.new_output(shape, p.time_dim, x.dtype, x.device) if n and x is not None else None
            for n, x in zip(need[:3], (p.rewards, p.values, p.next_values))]
    d_boot = None
    if need[3] and p.bootstrap_value is not None:
        d_boot = torch.empty(n_rows, dtype=p.bootstrap_value.dtype, device=p.rewards.device)
    O = [_checks.rows(o, shape, p.time_dim) for o in outs] + [None if d_boot is None else (d_boot, (1, None))]
    return outs, d_boot, O


def _backward(p: _Problem, grads, need):
    """The transposed scan: gradients of (rewards, values, next_values, bootstrap_value), None
    where ``need`` (four bools) says no or the input is absent. ``grads``: one per output."""
    _, _, bwd_epilogue, _ = _KERNELS[p.kind]
    shape, T, n_rows = _checks.problem(p.rewards, p.time_dim)
    acc = _checks.acc_dtype(_checks.result_dtype(p.rewards, p.values, p.next_values))
    outs, d_boot, O = _grad_buffers(p, need)
    X = _inputs(p, acc)
    # an output without a gradient reads as zeros in the kernel (no B × T buffer of them)
    X += [None if g is None else _checks.rows(g.expand(shape), shape, p.time_dim) for g in grads]
    if len(grads) == 1:
        X.append(None)
    launch(_bwd_prologue, bwd_epilogue, X, p.params, O, n_rows, T, reverse=False, acc_dtype=acc,
           time_contiguous=X[0][1][1] == 1)
    if d_boot is not None:
        d_boot = d_boot.reshape(p.bootstrap_value.shape)
    return (*outs, d_boot)


class _ReturnsFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, p: _Problem, rewards, values, next_values, bootstrap_value):
        ctx.problem = p
        ctx.set_materialize_grads(False)  # an unused output's gradient stays None (read as 0)
        return _forward(p)

    @staticmethod
    def backward(ctx, *grads):
        return (None, *_backward(ctx.problem, grads, ctx.needs_input_grad[1:5]))


def _validate(kind, rewards, values, next_values, bootstrap_value, gamma, lambda_, terminated,
              truncated, mask, time_dim, backend):
    rewards = _checks.float_tensor("rewards", rewards)
    time_dim = _checks.time_dim(time_dim, rewards)
    if values is not None:
        values = _checks.same_shape("values", values, rewards, "rewards")
    if next_values is not None:
        next_values = _checks.same_shape("next_values", next_values, rewards, "rewards")
        if bootstrap_value is not None:
            raise ValueError(
                "pass next_values or bootstrap_value, not both: bootstrap_value stands for "
                "next_values[T-1] when next_values is omitted"
            )
    bootstrap_value = _checks.per_row("bootstrap_value", bootstrap_value, rewards, time_dim)
    terminated = _checks.flag("terminated", terminated, rewards)
    truncated = _checks.flag("truncated", truncated, rewards)
    if truncated is not None and next_values is None:
        raise ValueError(
            "truncated needs next_values: at a truncation the return bootstraps from V(s_{t+1}) "
            "of the real next state, which values[t+1] (the next episode's first state) is not"
        )
    mask = _checks.flag("mask", mask, rewards)
    gamma_t, gamma_f = _checks.unit_interval("gamma", gamma, rewards)
    lambda_t, lambda_f = _checks.unit_interval("lambda_", lambda_, rewards)
    use_kernel = use_triton(_checks.backend(backend), rewards.device)
    p = _Problem(kind, rewards, values, next_values, bootstrap_value, terminated, truncated, mask,
                 gamma_t, lambda_t, (gamma_f, lambda_f), time_dim)
    return p, use_kernel


def _run(p: _Problem, use_kernel: bool):
    if p.rewards.numel() == 0:
        n_out = _KERNELS[p.kind][3]
        dtype = _checks.result_dtype(p.rewards, p.values, p.next_values)
        outs = tuple(torch.empty(p.rewards.shape, dtype=dtype, device=p.rewards.device) for _ in range(n_out))
        return outs if n_out > 1 else outs[0]
    if use_kernel:
        if torch.compiler.is_compiling():  # torch.compile: the registered custom op (_ops.py)
            from . import _ops

            return _ops.returns(p)
        differentiable = (p.rewards, p.values, p.next_values, p.bootstrap_value)
        if torch.is_grad_enabled() and any(x is not None and x.requires_grad for x in differentiable):
            return _ReturnsFunction.apply(p, *differentiable)
        return _forward(p)  # nothing to differentiate: skip autograd's bookkeeping
    from . import _torch_path

    return _torch_path.returns(p)


def discounted_returns(rewards, *, gamma=0.99, terminated=None, truncated=None,
                       bootstrap_value=None, next_values=None, mask=None, time_dim=-1,
                       backend="auto"):
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
            used when ``next_values`` is omitted.
        next_values: V(s_{t+1}) for every step, shape of ``rewards``: read at truncations and
            at the window's last step.
        mask: 0 marks padding: the step is skipped (the carry passes through) and its output is 0.
        time_dim: the time axis (0 for time-major buffers, -1 for batch-major).
        backend: "auto", "triton" or "torch".

    Returns:
        The returns, shape and dtype of ``rewards``. Differentiable in ``rewards``,
        ``next_values`` and ``bootstrap_value``.
    """
    p, use_kernel = _validate("discounted_return", rewards, None, next_values, bootstrap_value,
                              gamma, 1.0, terminated, truncated, mask, time_dim, backend)
    return _run(p, use_kernel)


def gae(rewards, values, *, gamma=0.99, lambda_=0.95, terminated=None, truncated=None,
        bootstrap_value=None, next_values=None, mask=None, time_dim=-1, backend="auto"):
    r"""Generalized advantage estimation (Schulman et al., 2016) in one fused pass.

    .. math::

        \delta_t = r_t + \gamma_t (1-\text{term}_t) V'_t - V_t, \qquad
        A_t = \delta_t + \gamma_t \lambda_t (1-\text{done}_t) A_{t+1}, \qquad
        \text{returns}_t = A_t + V_t

    ``V'_t`` is ``next_values[t]`` if given, else ``values[t+1]`` (and ``bootstrap_value`` after
    the last step). Arguments as in :func:`discounted_returns`; ``values`` has the shape of
    ``rewards``.

    Returns:
        ``GAEOutput(advantages, returns)``, both written by one kernel. Differentiable in
        ``rewards``, ``values``, ``next_values`` and ``bootstrap_value``.
    """
    if values is None:
        raise TypeError("gae() needs values, the critic's V(s_t) (a tensor shaped like rewards)")
    p, use_kernel = _validate("gae", rewards, values, next_values, bootstrap_value, gamma, lambda_,
                              terminated, truncated, mask, time_dim, backend)
    return GAEOutput(*_run(p, use_kernel))


def td_lambda(rewards, next_values, *, gamma=0.99, lambda_=0.95, terminated=None, truncated=None,
              mask=None, time_dim=-1, backend="auto"):
    r"""λ-returns (rlax ``lambda_returns`` semantics), e.g. critic targets.

    .. math::

        G_t = r_t + \gamma_t (1-\text{term}_t)\Big[(1-\lambda_t) V'_t + \lambda_t
              \begin{cases} G_{t+1} & \text{not done}_t \\ V'_t & \text{done}_t \end{cases}\Big]

    ``next_values[t]`` = V(s_{t+1}) is required. λ = 0 gives one-step TD targets, λ = 1
    discounted returns bootstrapped at episode ends. Arguments as in :func:`discounted_returns`.

    Returns:
        The λ-returns, shape of ``rewards``. Differentiable in ``rewards`` and ``next_values``.
    """
    if next_values is None:
        raise TypeError("td_lambda() needs next_values, V(s_{t+1}) for every step")
    p, use_kernel = _validate("td_lambda", rewards, None, next_values, None, gamma, lambda_,
                              terminated, truncated, mask, time_dim, backend)
    return _run(p, use_kernel)
