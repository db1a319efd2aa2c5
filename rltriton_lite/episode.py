r"""The episode layout shared by the scan-based estimators: its named slots, the step's flags
and coefficients, V(s_t) and V(s_{t+1}), the shared backward hooks, and the validated problem.

Every estimator on this layout (discounted returns, GAE, TD(λ), V-trace, SAC's soft targets) reads
its inputs from the same slots of ``X``, so the helpers below serve them all; an estimator with
more inputs appends its own slots after ``D_OUT2``. A slot an estimator does not use holds None.
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from . import _checks, masks
from ._triton import jit, tl
from .config import current
from .plan import Plan, bounded, call_key, looks_ahead_in_the_scan, use_triton
from .tile import coef, load, load_and_step, load_flag, load_mask, store

# Slots of the inputs X (and of their strides SX)
REWARDS = tl.constexpr(0)
VALUES = tl.constexpr(1)  # V(s_t)
NEXT_VALUES = tl.constexpr(2)  # V(s_{t+1}) per step; None: values[t+1], then BOOTSTRAP_VALUE
BOOTSTRAP_VALUE = tl.constexpr(3)  # per row: V of the state after the window
TERMINATED = tl.constexpr(4)
TRUNCATED = tl.constexpr(5)
MASK = tl.constexpr(6)
GAMMA = tl.constexpr(7)  # a tensor of discounts; None: the number P[P_GAMMA]
LAMBDA = tl.constexpr(8)  # a tensor of λ; None: the number P[P_LAMBDA]
D_OUT = tl.constexpr(9)  # backward: dL/d(first output)
D_OUT2 = tl.constexpr(10)  # backward: dL/d(second output), e.g. GAE's returns; None: 0
# Slots of the scalar parameters P
P_GAMMA = tl.constexpr(0)
P_LAMBDA = tl.constexpr(1)
P_OPEN = tl.constexpr(2)  # 1: the window is part of a longer row (distributed.py): its last step ends nothing,
                          # the scan's initial carry is the value after it; 0: the window's last step ends it
# Slots of the backward's outputs O (and SO): the inputs' gradients
D_REWARDS = tl.constexpr(0)
D_VALUES = tl.constexpr(1)
D_NEXT_VALUES = tl.constexpr(2)
D_BOOTSTRAP_VALUE = tl.constexpr(3)  # per row
D_CARRY = tl.constexpr(4)  # per row: an open window's initial carry


@jit
def ahead_hook(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    """A masked call's look-ahead (scan._look_ahead): an unmasked step is present and hands the
    steps before it V(s_t), where the call reads values[t+1] for V(s_{t+1})."""
    present = load_mask(X[MASK], SX[MASK], row, t, m)
    if X[NEXT_VALUES] is None:
        return present, load(X[VALUES], SX[VALUES], row, t, present, 0.0, ACC)
    else:
        return present, tl.zeros(present.shape, ACC)


@jit
def step(X, SX, P, row, t, m, T, ACC: tl.constexpr, ahead=None):
    """(gamma_t, lambda_t, terminated_t, done_t, valid_t): the step's coefficients and flags.
    ``ahead``: the look-ahead's (value, found) of a masked call, else None."""
    valid = load_mask(X[MASK], SX[MASK], row, t, m)
    term = load_flag(X[TERMINATED], SX[TERMINATED], row, t, valid)
    # the window's (last unmasked) step is a truncation, unless the row goes on after it
    last = (t == T - 1) if ahead is None else ~ahead[1]
    done = term | load_flag(X[TRUNCATED], SX[TRUNCATED], row, t, valid) | (last & (P[P_OPEN] == 0))
    gamma = coef(X[GAMMA], SX[GAMMA], P[P_GAMMA], row, t, valid, ACC)
    lam = coef(X[LAMBDA], SX[LAMBDA], P[P_LAMBDA], row, t, valid, ACC)
    return gamma, lam, term, done, valid


@jit
def before(p, s, scalar, row, t, m, T, ACC: tl.constexpr):
    """An input at step t - 1 (aligned loads shifted by a step), or ``scalar`` where ``p`` is None."""
    if p is None:
        return scalar
    else:
        return load_and_step(p, s, row, t, m, T, 0.0, ACC, -1)[1]


@jit
def step_before(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    """``step`` of step t - 1 at every step t of the tile (``m``: in bounds), as the
    backward's transposed scan needs it, from aligned loads shifted by one step: a load at t - 1
    would be one scalar load per step (docs/DESIGN.md, "Loads"). Where step t - 1 is not valid
    its coefficients are read rather than zeroed: callers select by its validity."""
    valid = m & (t >= 1)
    if X[MASK] is not None:
        valid = valid & (before(X[MASK], SX[MASK], 0.0, row, t, m, T, ACC) != 0)
    term = valid & (before(X[TERMINATED], SX[TERMINATED], 0.0, row, t, m, T, ACC) != 0)
    done = term | (valid & (before(X[TRUNCATED], SX[TRUNCATED], 0.0, row, t, m, T, ACC) != 0)) | (t - 1 == T - 1)
    gamma = before(X[GAMMA], SX[GAMMA], P[P_GAMMA], row, t, m, T, ACC)
    lam = before(X[LAMBDA], SX[LAMBDA], P[P_LAMBDA], row, t, m, T, ACC)
    return gamma, lam, term, done, valid


@jit
def values_now_and_next(X, SX, row, t, m, T, ACC: tl.constexpr, ahead=None):
    """(V(s_t), V(s_{t+1})) at every step of ``m``: values[t], and next_values[t], else values[t+1]
    (the aligned values shifted by one step; with ``ahead``, a masked call's look-ahead, the next
    unmasked step's) and bootstrap_value after the last step.

    Callers pass the steps in bounds as ``m`` and select by validity and the terminal flag
    afterwards: a mask computed from loaded data would make every load of it scalar (no 16-byte
    vectors; docs/DESIGN.md, "Loads")."""
    if X[NEXT_VALUES] is not None:
        v_next = load(X[NEXT_VALUES], SX[NEXT_VALUES], row, t, m, 0.0, ACC)
        return load(X[VALUES], SX[VALUES], row, t, m, 0.0, ACC), v_next
    elif ahead is not None:
        found = ahead[1]
        boot = load(X[BOOTSTRAP_VALUE], SX[BOOTSTRAP_VALUE], row, t, m & ~found, 0.0, ACC)
        return load(X[VALUES], SX[VALUES], row, t, m, 0.0, ACC), tl.where(found, ahead[0], boot)
    else:  # (returns without values: both 0, only the bootstrap value is read)
        v, v_after = load_and_step(X[VALUES], SX[VALUES], row, t, m, T, 0.0, ACC, 1)
        last = t == T - 1
        return v, tl.where(last, load(X[BOOTSTRAP_VALUE], SX[BOOTSTRAP_VALUE], row, t, m & last, 0.0, ACC), v_after)


@jit
def bwd_prologue(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    """Transposed scan, forwards in time: the pair at t is (a_{t-1}, dL/dy_t)."""
    gamma_p, lam_p, term_p, done_p, valid_p = step_before(X, SX, P, row, t, m, T, ACC)
    # a padded step t-1 passes g through, and so does t = 0: the scan's initial carry (0, or what
    # enters an open window from before it) is the gradient flowing in
    a = tl.where(valid_p, gamma_p * lam_p, 1.0)
    reset = valid_p & done_p  # nothing flows back across an episode end
    valid = load_mask(X[MASK], SX[MASK], row, t, m)
    dy = load(X[D_OUT], SX[D_OUT], row, t, valid, 0.0, ACC)
    d_second = load(X[D_OUT2], SX[D_OUT2], row, t, valid, 0.0, ACC)  # GAE: y feeds returns too
    return a, dy + d_second, reset, m, (gamma_p, term_p, valid_p, d_second)


@jit
def store_bootstrap_grad(X, SX, P, O, SO, row, t, m, T, dv_next):
    """Without next_values, V'_t is values[t+1], and bootstrap_value after the last step."""
    if O[D_BOOTSTRAP_VALUE] is not None:
        store(O[D_BOOTSTRAP_VALUE], SO[D_BOOTSTRAP_VALUE], row, t, m & (t == T - 1), dv_next)


@jit
def store_carry_grad(X, SX, P, O, SO, row, t, m, T, d_carry):
    """An open window's carry enters its last step (P_OPEN): dL/dcarry, stored per row there."""
    if O[D_CARRY] is not None:
        store(O[D_CARRY], SO[D_CARRY], row, t, m & (t == T - 1), d_carry)


@jit
def store_values_grad(X, SX, P, O, SO, row, t, m, T, valid, dv, dv_next, g_in, keep):
    """d values_t: the direct term ``dv``, plus (without next_values) what b_{t-1} read."""
    gamma_p, term_p, valid_p, _ = keep
    if O[D_VALUES] is not None:
        dv = tl.where(valid, dv, 0.0)
        if X[NEXT_VALUES] is None:  # values[t] is V'_{t-1}, read by step t-1 even when step t is padding
            dv += tl.where(valid_p & ~term_p, gamma_p * g_in, 0.0)
        store(O[D_VALUES], SO[D_VALUES], row, t, m, dv)
    if O[D_NEXT_VALUES] is not None:
        store(O[D_NEXT_VALUES], SO[D_NEXT_VALUES], row, t, m, dv_next)


# ---- The validated problem, its X tuple and its gradient buffers -----------------------------------
class Problem(NamedTuple):
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
    log_rhos: torch.Tensor | None  # V-trace's
    carry: torch.Tensor | None  # [rows]: the value after an open window (P_OPEN), else None
    params: tuple
    time_dim: int
    look_ahead: bool = False  # a mask read by the forward kernel's look-ahead (``ahead_hook``), nothing derived
    plan: object = None  # the Plan of the call's signature, when it has one (see prepare)


WRT = ("rewards", "values", "next_values", "bootstrap_value", "carry")  # the inputs with gradients


_PLANS = {}


def coefficients_ok(gamma, lambda_) -> bool:
    """γ and λ in [0, 1] (NaN is not): all a planned call checks of its numbers; outside, the
    call validates from scratch, whose checks name the argument."""
    return 0.0 <= gamma <= 1.0 and 0.0 <= lambda_ <= 1.0


def replayed(kind, tensors, gamma, lambda_, time_dim, backend):
    """``(outputs, key)``: a planned call's outputs from its plan's ``replay`` (its numbers checked,
    nothing else: the wall time of a small call is this host path), or None where the
    signature has no replay yet or an input needs a gradient; ``key`` goes on to ``prepare``.
    ``tensors``: rewards, values, next_values, bootstrap_value, terminated, truncated, mask."""
    key = call_key((kind, *tensors, gamma, lambda_, time_dim, backend))
    plan = _PLANS.get(key)
    if plan is None or plan.replay is None or not coefficients_ok(gamma, lambda_) or (
            torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors[:4])):
        return None, key
    return plan.replay(tensors, (float(gamma), float(lambda_), 0)), key


def set_replay(p: Problem, key, n_out: int, dtype):
    """Let later calls of ``p``'s signature replay its forward launch ``key`` (``Plan.replay``)
    where the launch read the call's own tensors: no window, and a mask only when looked ahead."""
    kept = p.plan.launches.get(key) if p.plan is not None and p.plan.replay is None and p.carry is None and (
        p.mask is None or p.look_ahead) else None
    if kept is None:
        return
    SX, SO, run = kept
    time_dim = p.time_dim

    def replay(tensors, params):
        outs = tuple(_checks.new_output(tensors[0], time_dim, dtype) for _ in range(n_out))
        run(tensors + (None, None), SX, params, outs, SO)
        return outs
    p.plan.replay = replay


_UNSET = object()


def prepare(kind, rewards, values, next_values, bootstrap_value, gamma, lambda_, terminated, truncated, mask,
            time_dim, backend, extra=(), window=None, key=_UNSET):
    """``validate``, once per signature (``_checks.signature``; ``extra``: the caller's other
    inputs, which its forward launch reads; ``key``: ``replayed``'s, if it was asked): a known
    signature checks only its numbers. Calls whose tensors the checks would replace (broadcast,
    expanded or per-step coefficients), calls while torch.compile traces, and windows of a longer
    row (``window``: distributed.py) are validated every time. A mask's flags and next values are
    derived on every call (``without_masked_steps``), after the checks."""
    tensors = (rewards, values, next_values, bootstrap_value, terminated, truncated, mask)
    if window is not None:
        p, use_kernel = validate(kind, *tensors[:4], gamma, lambda_, *tensors[4:], time_dim, backend, window)
        return without_masked_steps(p, use_kernel, window[1], look_ahead=False), use_kernel
    if key is _UNSET:
        key = call_key((kind, *tensors, gamma, lambda_, time_dim, backend, *extra))
    plan = _PLANS.get(key)
    if plan is not None and coefficients_ok(gamma, lambda_):
        p = Problem(kind, *tensors, None, None, None, None, (float(gamma), float(lambda_), 0), plan.layout, plan=plan)
        return without_masked_steps(p, plan.use_kernel), plan.use_kernel
    p, use_kernel = validate(kind, rewards, values, next_values, bootstrap_value, gamma, lambda_, terminated,
                             truncated, mask, time_dim, backend)
    if key is not None and p.gamma is None and p.lambda_ is None and all(a is b for a, b in zip(p[1:8], tensors)):
        p = p._replace(plan=bounded(_PLANS, key, lambda: Plan(use_kernel, p.time_dim)))
    return without_masked_steps(p, use_kernel), use_kernel


def looks_ahead(use_kernel: bool, x: torch.Tensor, time_dim: int, itemsize: int, tensors, plan=None) -> bool:
    """Whether a masked call's forward kernel looks ahead itself (``ahead_hook``): it runs alone (no
    input in ``tensors`` needs a gradient, so no backward reads the ends; no torch.compile trace)
    and its scan can (``plan.looks_ahead_in_the_scan``: whole rows, or a time split of two launches), on
    CUDA unless ``Config.look_ahead`` says otherwise; else masks.py derives the look-ahead as
    tensors. ``x``: an input of the problem's shape. What the call's signature decides is kept
    in its ``plan`` (a host-side cost of every call otherwise)."""
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors):
        return False
    if plan is not None and plan.ahead is not None:
        return plan.ahead
    ahead = _kernel_looks_ahead(use_kernel, x, time_dim, itemsize)
    if plan is not None:
        plan.ahead = ahead
    return ahead


def _kernel_looks_ahead(use_kernel: bool, x: torch.Tensor, time_dim: int, itemsize: int) -> bool:
    if not use_kernel or torch.compiler.is_compiling():
        return False
    look = current().look_ahead
    if not (x.device.type == "cuda" if look is None else look):
        return False
    _, T, n_rows = _checks.problem(x, time_dim)
    return looks_ahead_in_the_scan(n_rows, T, itemsize, x.device)


def without_masked_steps(p: Problem, use_kernel: bool, open_rows=None, look_ahead=True) -> Problem:
    """Masked steps as if deleted: the forward kernel looks ahead itself (``ahead_hook``) where
    ``looks_ahead`` says so (and ``look_ahead``); else, derived by masks.py, the window's ends as
    truncations and, where the call reads values[t+1], the next unmasked step's value as
    next_values (``open_rows``: the rows a window of distributed.py hands on after its end),
    which the backward reads too."""
    if p.mask is None:
        return p
    if look_ahead and looks_ahead(use_kernel, p.rewards, p.time_dim, _checks.result_dtype(
            p.rewards, p.values, p.next_values).itemsize, (p.rewards, p.values, p.next_values, p.bootstrap_value,
                                                          p.gamma, p.lambda_, p.log_rhos, p.carry), p.plan):
        return p._replace(look_ahead=True)
    derive = p.next_values is None and p.kind != "td_lambda"  # (td_lambda takes V(s_{t+1}) per step)
    truncated, derived = masks.without_masked_steps(
        p.mask, p.truncated, p.time_dim, use_kernel, _checks.result_dtype(p.rewards, p.values) if derive else None,
        p.values, p.bootstrap_value, open_rows, p.plan)
    p = p._replace(truncated=truncated)
    return p._replace(next_values=derived, bootstrap_value=None) if derive else p


def inputs(p: Problem, acc: torch.dtype):
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
    X[BOOTSTRAP_VALUE] = _checks.row_vector(p.bootstrap_value, shape, td)
    return X


def raw(p: Problem):
    """The X tuple's tensors as the call passed them (a Plan's forward launch takes them so)."""
    return p.rewards, p.values, p.next_values, p.bootstrap_value, p.terminated, p.truncated, p.mask, p.gamma, p.lambda_


def grad_buffers(p: Problem, need: dict):
    """Gradient buffers for the fields of ``WRT``, None where ``need`` (``_ops.Kernels``'s) says
    no or the input is absent; bootstrap_value's per row."""
    outs = tuple(_checks.new_output(p.rewards, p.time_dim, x.dtype) if need.get(f) else None
                 for f, x in zip(WRT[:3], (p.rewards, p.values, p.next_values)))
    per_row = tuple(p.rewards.new_empty(x.numel(), dtype=x.dtype) if need.get(f) else None
                    for f, x in zip(WRT[3:], (p.bootstrap_value, p.carry)))
    return outs + per_row


def gradients(p: Problem, outs) -> dict:
    """``grad_buffers``' buffers by field, the per-row ones in their fields' shapes."""
    per_row = tuple(None if g is None else g.reshape(x.shape) for g, x in zip(outs[3:], (p.bootstrap_value, p.carry)))
    return dict(zip(WRT, outs[:3] + per_row))


def grad_outputs(p: Problem, outs):
    """``grad_buffers``' buffers as the backward kernels' O: (view, strides) pairs."""
    shape = p.rewards.shape
    return [_checks.rows(o, shape, p.time_dim) for o in outs[:3]] + [None if g is None else (g, (1, None))
                                                                      for g in outs[3:]]


def window_carry(p, dtype):
    """An open window's (initial, end): its carry as the scan's initial value, and the buffer
    that gets the value entering its first step (distributed.py); (None, None) otherwise."""
    if p.carry is None:
        return None, None
    return p.carry.reshape(-1).contiguous(), p.rewards.new_empty(p.carry.numel(), dtype=dtype)


def validate(kind, rewards, values, next_values, bootstrap_value, gamma, lambda_, terminated,
             truncated, mask, time_dim, backend, window=None):
    """The arguments checked once (a TypeError or ValueError naming the argument), as a Problem,
    and whether the Triton kernel runs them (a mask's consequences not derived yet: ``prepare``).
    ``window``: (open, open_rows) of a window of a longer row (distributed.py), else None."""
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
    use_kernel = use_triton(_checks.backend(backend), rewards.device)
    gamma_t, gamma_f = _checks.unit_interval("gamma", gamma, rewards)
    lambda_t, lambda_f = _checks.unit_interval("lambda_", lambda_, rewards)
    p = Problem(kind, rewards, values, next_values, bootstrap_value, terminated, truncated, mask,
                gamma_t, lambda_t, None, None, (gamma_f, lambda_f, int(window is not None and window[0])), time_dim)
    return p, use_kernel
