"""Hostile input, for every public function: a ``TypeError`` or ``ValueError`` whose message names
the argument and says what was expected (docs/DESIGN.md, "Errors"), never a crash deep inside, a
silent coercion or a kernel launch.

One table, built per function from a description of its arguments (which are per-step floats,
per-row floats, flags, coefficients in [0, 1], non-negative or positive numbers, choices, ...):
every argument gets every kind of wrong value that applies to it. Hand-written cases follow for
what is specific to one function (truncation without next values, the SAC critics, the CRR
baseline, ``credit_assignment``'s names). Inputs that are not tensors (lists, NumPy arrays) are
refused (docs/DESIGN.md, "Errors").

The former table of ``tests/test_errors.py`` lives on here, case by case (old id -> id here):
rewards_list, rewards_int -> discounted_returns-rewards-{list,int}; values_shape, values_int,
values_device, values_missing -> gae-values-{shape_time,int,device,missing}; next_values_missing,
next_values_shape -> td_lambda-next_values-{missing,shape_transposed}; gamma_high, gamma_negative,
gamma_nan, gamma_str, gamma_tensor_range, gamma_tensor_shape, gamma_tensor_int ->
gae-gamma-{1.5,negative,nan,str,tensor_above_one,tensor_shape,tensor_int}; lambda_high,
lambda_negative -> gae-lambda_-above_one, td_lambda-lambda_-negative;
truncated_without_next_values, bootstrap_and_next_values -> gae-<same>; terminated_shape,
terminated_list, terminated_complex -> gae-terminated-{shape_longer,list,complex}; mask_shape ->
gae-mask-shape_row; bootstrap_shape -> gae-bootstrap_value-shape_batch; time_dim_range,
time_dim_float, time_dim_bool -> gae-time_dim-{out_of_range,float,bool}; scalar_rewards ->
discounted_returns-rewards-0d; backend_name -> gae-backend-unknown; scan_b_int, scan_a_shape,
scan_initial_shape, scan_mask_shape -> linear_scan-{b-int,a-shape_time,initial-shape_batch,
mask-shape_row}.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import pytest
import torch

import rltriton_lite as rl
from rltriton_lite.sac import MAX_CRITICS

from conftest import DEVICE

# "Another device": CPU tensors against CUDA ones on a GPU; without one, the meta device (tensors
# without data), which every check must refuse just the same.
OTHER = "cpu" if DEVICE == "cuda" else "meta"
B, T = 3, 5
NAN, INF = float("nan"), float("inf")

# A message says what was expected: one of these phrases (with the argument's name, checked apart).
EXPECTED = ("must", "needs", "expected", "one of", "out of range", "other inputs are on", "not both",
            "valid:", "does not broadcast", "does not apply")


def _x(*shape, dtype=torch.float32, seed=0, low=None):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(shape, generator=g) * 0.5 + low if low is not None else torch.randn(shape, generator=g)
    return x.to(dtype=dtype, device=DEVICE)


def _flag(seed, p=0.3):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(B, T, generator=g) < p).to(DEVICE)


# --------------------------------------------------------------------------------------------
# What every function takes
# --------------------------------------------------------------------------------------------
@dataclass
class Spec:
    """A public function, a valid call of it (``build``) and its arguments by kind."""

    name: str
    fn: Callable
    positional: tuple  # names passed positionally, in order
    build: Callable  # () -> dict of every argument of a valid call
    ref: str  # the argument whose shape and device the others must match
    per_step: tuple = ()  # float tensors shaped like ``ref`` ("next_q[1]": an element of a list)
    per_row: dict = field(default_factory=dict)  # per-sequence float -> arguments to drop with it
    flags: tuple = ()
    unit: tuple = ()  # coefficients in [0, 1]: float or tensor broadcastable to ``ref``
    nonneg: tuple = ()  # numbers >= 0
    positive: tuple = ()  # numbers > 0
    choices: tuple = ()  # strings out of a list
    bools: tuple = ()  # Python bools
    time_dim: bool = True
    required: tuple = ()  # positional tensors that cannot be None

    def call(self, kw):
        kw = dict(kw)
        args = [kw.pop(n) for n in self.positional]
        return self.fn(*args, **kw)


def _returns_base(**extra):
    def build():
        return dict(rewards=_x(B, T, seed=1), values=_x(B, T, seed=2), next_values=_x(B, T, seed=3),
                    terminated=_flag(4, 0.2), truncated=_flag(5, 0.2) & ~_flag(4, 0.2), mask=~_flag(6, 0.2),
                    gamma=0.9, lambda_=0.8, time_dim=-1, backend="auto", **extra)
    return build


def _without(build, *names):
    def b():
        kw = build()
        for n in names:
            kw.pop(n)
        return kw
    return b


_vtrace_build = _returns_base()
SPECS = [
    Spec("linear_scan", rl.linear_scan, ("a", "b"),
         lambda: dict(a=_x(B, T, seed=1, low=0.4), b=_x(B, T, seed=2), initial=_x(B, seed=3), mask=~_flag(4),
                      reverse=True, time_dim=-1, backend="auto"),
         ref="b", per_step=("a",), per_row={"initial": ()}, flags=("mask",), bools=("reverse",),
         required=("a", "b")),
    Spec("discounted_returns", rl.discounted_returns, ("rewards",),
         _without(_returns_base(), "values", "lambda_"), ref="rewards", per_step=("next_values",),
         per_row={"bootstrap_value": ("next_values", "truncated")}, flags=("terminated", "truncated", "mask"),
         unit=("gamma",), required=("rewards",)),
    Spec("gae", rl.gae, ("rewards", "values"), _returns_base(), ref="rewards",
         per_step=("values", "next_values"), per_row={"bootstrap_value": ("next_values", "truncated")},
         flags=("terminated", "truncated", "mask"), unit=("gamma", "lambda_"), required=("rewards", "values")),
    Spec("td_lambda", rl.td_lambda, ("rewards", "next_values"), _without(_returns_base(), "values"),
         ref="rewards", per_step=("next_values",), flags=("terminated", "truncated", "mask"),
         unit=("gamma", "lambda_"), required=("rewards", "next_values")),
    Spec("vtrace", rl.vtrace, ("log_rhos", "rewards", "values"),
         lambda: dict(_vtrace_build(), log_rhos=_x(B, T, seed=7) * 0.3, rho_bar=1.0, c_bar=1.0, pg_rho_bar=1.0),
         ref="rewards", per_step=("log_rhos", "values", "next_values"),
         per_row={"bootstrap_value": ("next_values", "truncated")}, flags=("terminated", "truncated", "mask"),
         unit=("gamma", "lambda_"), positive=("rho_bar", "c_bar", "pg_rho_bar"),
         required=("log_rhos", "rewards", "values")),
    Spec("ppo_clip_loss", rl.ppo_clip_loss, ("log_probs", "old_log_probs", "advantages"),
         lambda: dict(log_probs=_x(B, T, seed=1) * 0.1, old_log_probs=_x(B, T, seed=2) * 0.1,
                      advantages=_x(B, T, seed=3), mask=~_flag(4), epsilon=0.2, normalize_advantages=True,
                      reduction="mean", backend="auto"),
         ref="log_probs", per_step=("old_log_probs", "advantages"), flags=("mask",), nonneg=("epsilon",),
         choices=("reduction",), bools=("normalize_advantages",), time_dim=False,
         required=("log_probs", "old_log_probs", "advantages")),
    Spec("sac_targets", rl.sac_targets, ("rewards", "next_q", "next_log_probs"),
         lambda: dict(rewards=_x(B, T, seed=1), next_q=[_x(B, T, seed=2), _x(B, T, seed=3)],
                      next_log_probs=_x(B, T, seed=4), log_probs=_x(B, T, seed=5), gamma=0.9, alpha=0.2,
                      lambda_=0.5, terminated=_flag(6, 0.2), truncated=_flag(7, 0.2) & ~_flag(6, 0.2),
                      mask=~_flag(8, 0.2), time_dim=-1, backend="auto"),
         ref="rewards", per_step=("next_q", "next_q[1]", "next_log_probs", "log_probs"),
         flags=("terminated", "truncated", "mask"), unit=("gamma", "lambda_"), nonneg=("alpha",),
         required=("rewards", "next_q", "next_log_probs")),
    Spec("sac_actor_loss", rl.sac_actor_loss, ("log_probs", "q"),
         lambda: dict(log_probs=_x(B, T, seed=1), q=[_x(B, T, seed=2), _x(B, T, seed=3)], alpha=0.2,
                      mask=~_flag(4), backend="auto"),
         ref="log_probs", per_step=("q", "q[0]"), flags=("mask",), nonneg=("alpha",), time_dim=False,
         required=("log_probs", "q")),
    Spec("sac_temperature_loss", rl.sac_temperature_loss, ("log_alpha", "log_probs", "target_entropy"),
         lambda: dict(log_alpha=_x(1, seed=1), log_probs=_x(B, T, seed=2), target_entropy=-1.0, mask=~_flag(3),
                      backend="auto"),
         ref="log_probs", flags=("mask",), time_dim=False, required=("log_alpha", "log_probs")),
    Spec("crr_loss", rl.crr_loss, ("log_probs", "q_values", "baseline"),
         lambda: dict(log_probs=_x(B, T, seed=1), q_values=_x(B, T, seed=2), baseline=_x(B, T, seed=3),
                      beta=1.0, mode="exp", max_weight=20.0, baseline_reduce="mean", mask=~_flag(4),
                      need_weights=True, backend="auto"),
         ref="log_probs", per_step=("q_values", "baseline"), flags=("mask",), positive=("beta", "max_weight"),
         choices=("mode", "baseline_reduce"), bools=("need_weights",), time_dim=False,
         required=("log_probs", "q_values", "baseline")),
]


# --------------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------------
@dataclass
class Case:
    id: str
    spec: Spec
    mutate: Callable  # (kwargs) -> None, in place
    exc: type
    arg: str  # the name the message must contain


def _get(kw, name):
    """An argument's valid value; of a list of critics (replaced as a whole), the first."""
    m = re.fullmatch(r"(\w+)\[(\d+)\]", name)
    x = kw[m[1]][int(m[2])] if m else kw[name]
    return x[0] if isinstance(x, list) else x


def _set(kw, name, value):
    m = re.fullmatch(r"(\w+)\[(\d+)\]", name)
    if m:
        kw[m[1]] = list(kw[m[1]])
        kw[m[1]][int(m[2])] = value
    else:
        kw[name] = value


def _replace(name, fn, drop=(), default=None):
    """A mutation: argument ``name`` becomes ``fn(its valid value)`` (``default()`` where the valid
    call omits it); ``drop``: arguments removed first."""
    def mutate(kw):
        for d in drop:
            kw.pop(d, None)
        _set(kw, name, fn(_get(kw, name) if default is None else kw.get(name, default())))
    return mutate


def _const(value):
    return lambda _: value() if callable(value) else value


def _with_nan(x):
    x = x.clone()
    x.view(-1)[0] = NAN
    return x


# wrong values of a float tensor (per-step: shaped like ``ref``)
TENSOR_TYPES = [
    ("int", lambda x: x.long(), TypeError),
    ("bool", lambda x: x > 0, TypeError),
    ("complex", lambda x: x.to(torch.complex64), TypeError),
    ("list", lambda x: x.tolist(), TypeError),
    ("float", lambda x: 0.5, TypeError),
]
DEVICE_CASE = ("device", lambda x: x.to(OTHER), ValueError)
PER_STEP_SHAPES = [
    ("shape_time", lambda x: x[..., :-1], ValueError),
    ("shape_longer", lambda x: torch.cat([x, x[..., :1]], -1), ValueError),
    ("shape_batch", lambda x: x[:-1], ValueError),
    ("shape_transposed", lambda x: x.t(), ValueError),
    ("shape_row", lambda x: x[0], ValueError),  # broadcastable, but a per-step input is not broadcast
]
PER_ROW_SHAPES = [
    ("shape_batch", lambda x: torch.zeros(B + 2, device=DEVICE), ValueError),
    ("shape_per_step", lambda x: torch.zeros(B, T, device=DEVICE), ValueError),
]
FLAG_CASES = [c for c in PER_STEP_SHAPES if c[0] != "shape_row"] + [  # (a flag broadcasts, as gamma does)
    ("complex", lambda x: x.to(torch.complex64), TypeError),
    ("list", lambda x: x.tolist(), TypeError),
    ("python_bool", lambda x: True, TypeError),
    DEVICE_CASE,
] + ([("float_half", lambda x: torch.full(x.shape, 0.5), ValueError),  # read where it costs no sync
      ("float_nan", lambda x: torch.full(x.shape, NAN), ValueError)] if DEVICE == "cpu" else [])
UNIT_CASES = [
    ("above_one", 1.01, ValueError),
    ("1.5", 1.5, ValueError),
    ("negative", -0.1, ValueError),
    ("nan", NAN, ValueError),
    ("inf", INF, ValueError),
    ("-inf", -INF, ValueError),
    ("str", "0.9", TypeError),
    ("bool", True, TypeError),
    ("none", None, TypeError),
    ("complex", 0.5 + 0j, TypeError),
    ("list", [0.9] * T, TypeError),
    ("tensor_above_one", lambda: torch.full((B, T), 1.2, device=DEVICE), ValueError),
    ("tensor_negative", lambda: torch.full((T,), -0.5, device=DEVICE), ValueError),
    ("tensor_nan", lambda: _with_nan(torch.full((B, T), 0.9, device=DEVICE)), ValueError),
    ("tensor_0d_nan", lambda: torch.tensor(NAN, device=DEVICE), ValueError),
    ("tensor_int", lambda: torch.ones(B, T, dtype=torch.long, device=DEVICE), TypeError),
    ("tensor_bool", lambda: torch.ones(B, T, dtype=torch.bool, device=DEVICE), TypeError),
    ("tensor_complex", lambda: torch.full((B, T), 0.9, dtype=torch.complex64, device=DEVICE), TypeError),
    ("tensor_shape", lambda: torch.full((B + 1, T), 0.9, device=DEVICE), ValueError),
    ("tensor_device", lambda: torch.full((B, T), 0.9, device=OTHER), ValueError),
]
NUMBER_CASES = [  # every number argument
    ("nan", NAN, ValueError),
    ("-inf", -INF, ValueError),
    ("str", "1", TypeError),
    ("bool", True, TypeError),
    ("none", None, TypeError),
    ("complex", 1 + 0j, TypeError),
    ("numpy", lambda: torch.ones(2).numpy(), TypeError),
]
NONNEG_CASES = NUMBER_CASES + [("negative", -0.1, ValueError)]
POSITIVE_CASES = NUMBER_CASES + [("zero", 0.0, ValueError), ("negative", -1.0, ValueError)]
CHOICE_CASES = [("unknown", "bogus", ValueError), ("upper", "MEAN", ValueError), ("none", None, ValueError),
                ("int", 1, ValueError)]
BOOL_CASES = [("str", "yes", TypeError), ("none", None, TypeError), ("int", 1, TypeError),
              ("tensor", lambda: torch.tensor(True), TypeError)]
TIME_DIM_CASES = [("out_of_range", 2, ValueError), ("out_of_range_negative", -3, ValueError),
                  ("float", 1.0, TypeError), ("bool", True, TypeError), ("none", None, TypeError),
                  ("str", "0", TypeError), ("tensor", lambda: torch.tensor(0), TypeError)]
BACKEND_CASES = [("unknown", "cuda", ValueError), ("none", None, ValueError), ("upper", "TRITON", ValueError)]


def _generated():
    cases = []

    def add(spec, arg, kind, mutate, exc, name=None):
        cases.append(Case(f"{spec.name}-{arg}-{kind}", spec, mutate, exc, name or re.sub(r"\[\d+\]$", "", arg)))

    for s in SPECS:
        # the reference input: not a float tensor, or (scan functions) without a time axis
        for kind, fn, exc in TENSOR_TYPES:
            add(s, s.ref, kind, _replace(s.ref, fn), exc)
        if s.time_dim:
            add(s, s.ref, "0d", _replace(s.ref, lambda x: x[0, 0]), ValueError)
        for arg in s.required:
            add(s, arg, "missing", _replace(arg, _const(None)), TypeError)
        for arg in s.per_step:
            for kind, fn, exc in TENSOR_TYPES + [DEVICE_CASE] + PER_STEP_SHAPES:
                if arg == "a" and kind in ("float", "shape_row"):
                    continue  # linear_scan's a is a tensor broadcastable to b: a row of it is fine
                add(s, arg, kind, _replace(arg, fn), exc,
                    name=arg if "[" in arg else None)  # the message names the critic: next_q[1]
        for arg, drop in s.per_row.items():
            for kind, fn, exc in TENSOR_TYPES + [DEVICE_CASE] + PER_ROW_SHAPES:
                add(s, arg, kind, _replace(arg, fn, drop, default=lambda: _x(B, seed=9)), exc)
        for arg in s.flags:
            for kind, fn, exc in FLAG_CASES:
                add(s, arg, kind, _replace(arg, fn), exc)
        # scalar arguments: each bad value of its kind in place of the good one
        scalar_args = [(s.unit, UNIT_CASES), (s.nonneg, NONNEG_CASES), (s.positive, POSITIVE_CASES),
                       (s.choices, CHOICE_CASES), (s.bools, BOOL_CASES),
                       (["time_dim"] if s.time_dim else [], TIME_DIM_CASES), (["backend"], BACKEND_CASES)]
        for args, bad in scalar_args:
            for arg in args:
                for kind, value, exc in bad:
                    add(s, arg, kind, _replace(arg, _const(value)), exc)
    return cases


SPEC = {s.name: s for s in SPECS}


def _set_args(**changes):
    """A mutation setting (or, with value ``...``, removing) several arguments."""
    def mutate(kw):
        for k, v in changes.items():
            if v is ...:
                kw.pop(k, None)
            else:
                _set(kw, k, v() if callable(v) else v)
    return mutate


def _hand(fn_name, case, exc, arg, **changes):
    return Case(f"{fn_name}-{case}", SPEC[fn_name], _set_args(**changes), exc, arg)


_truncated = lambda: _flag(9, 0.3)  # noqa: E731
_boot = lambda: torch.zeros(B, device=DEVICE)  # noqa: E731
HAND = [
    # truncation bootstraps from V(s_{t+1}) of the real next state: needs next_values
    # (former test_errors: truncated_without_next_values)
    *(_hand(f, "truncated_without_next_values", ValueError, "truncated", next_values=..., truncated=_truncated)
      for f in ("discounted_returns", "gae", "vtrace")),
    # (former test_errors: bootstrap_and_next_values)
    *(_hand(f, "bootstrap_and_next_values", ValueError, "bootstrap_value", bootstrap_value=_boot)
      for f in ("discounted_returns", "gae", "vtrace")),
    # the SAC targets' λ-continuation reads log π of the next step taken
    _hand("sac_targets", "lambda_without_log_probs", ValueError, "log_probs", log_probs=...),
    _hand("sac_targets", "lambda_tensor_without_log_probs", ValueError, "log_probs", log_probs=...,
          lambda_=lambda: torch.full((B, T), 0.5, device=DEVICE)),
    _hand("sac_targets", "next_q-empty", ValueError, "next_q", next_q=[]),
    _hand("sac_targets", "next_q-too_many", ValueError, "next_q", next_q=lambda: [_x(B, T)] * (MAX_CRITICS + 1)),
    _hand("sac_targets", "next_q-generator", TypeError, "next_q", next_q=lambda: (x for x in [_x(B, T)])),
    _hand("sac_targets", "alpha-inf", ValueError, "alpha", alpha=INF),
    _hand("sac_targets", "alpha-tensor_negative", ValueError, "alpha", alpha=lambda: torch.tensor(-0.5)),
    _hand("sac_targets", "alpha-tensor_two_values", TypeError, "alpha", alpha=lambda: torch.ones(2)),
    _hand("sac_targets", "alpha-tensor_int", TypeError, "alpha", alpha=lambda: torch.tensor(1)),
    _hand("sac_targets", "alpha-tensor_nan", ValueError, "alpha", alpha=lambda: torch.tensor(NAN)),
    _hand("sac_targets", "alpha-tensor_meta", ValueError, "alpha", alpha=lambda: torch.tensor(0.2, device="meta")),
    _hand("sac_actor_loss", "alpha-inf", ValueError, "alpha", alpha=INF),
    _hand("sac_actor_loss", "alpha-tensor_meta", ValueError, "alpha", alpha=lambda: torch.tensor(0.2, device="meta")),
    _hand("sac_actor_loss", "q-empty", ValueError, "q", q=[]),
    _hand("sac_actor_loss", "q-too_many", ValueError, "q", q=lambda: [_x(B, T)] * (MAX_CRITICS + 1)),
    # the temperature loss: log α is one value, the target entropy a finite number
    *(_hand("sac_temperature_loss", f"log_alpha-{kind}", exc, "log_alpha", log_alpha=v) for kind, v, exc in [
        ("shape", lambda: torch.zeros(2, device=DEVICE), ValueError),
        ("empty", lambda: torch.zeros(0, device=DEVICE), ValueError),
        ("float", 0.5, TypeError),
        ("int", lambda: torch.zeros(1, dtype=torch.long, device=DEVICE), TypeError),
        ("complex", lambda: torch.zeros(1, dtype=torch.complex64, device=DEVICE), TypeError),
        ("list", [0.0], TypeError),
        ("device", lambda: torch.zeros(1, device=OTHER), ValueError),
    ]),
    *(_hand("sac_temperature_loss", f"target_entropy-{kind}", exc, "target_entropy", target_entropy=v)
      for kind, v, exc in [("nan", NAN, ValueError), ("inf", INF, ValueError), ("str", "-1", TypeError),
                           ("none", None, TypeError), ("bool", True, TypeError),
                           ("tensor_two_values", lambda: torch.ones(2), TypeError),
                           ("tensor_meta", lambda: torch.tensor(-1.0, device="meta"), ValueError)]),
    # PPO's clip range: a number or a pair (low, high), each >= 0
    _hand("ppo_clip_loss", "epsilon-pair_negative", ValueError, "epsilon", epsilon=(0.2, -0.1)),
    _hand("ppo_clip_loss", "epsilon-pair_nan", ValueError, "epsilon", epsilon=[NAN, 0.2]),
    _hand("ppo_clip_loss", "epsilon-triple", ValueError, "epsilon", epsilon=(0.1, 0.2, 0.3)),
    _hand("ppo_clip_loss", "epsilon-pair_str", TypeError, "epsilon", epsilon=("0.1", 0.2)),
    # CRR's baseline: V(s) (shape of q_values) or K > 0 sampled Q(s, a_j) in one more trailing dim
    _hand("crr_loss", "baseline-no_samples", ValueError, "baseline", baseline=lambda: _x(B, T, 0)),
    _hand("crr_loss", "baseline-two_more_dims", ValueError, "baseline", baseline=lambda: _x(B, T, 4, 1)),
    _hand("crr_loss", "baseline-samples_first", ValueError, "baseline", baseline=lambda: _x(4, B, T)),
    _hand("crr_loss", "max_weight-inf_is_fine_but_nan_is_not", ValueError, "max_weight", max_weight=NAN),
    # linear_scan's a broadcasts to b, but not the other way round
    _hand("linear_scan", "a-longer", ValueError, "a", a=lambda: _x(2, B, T)),
    _hand("linear_scan", "b-0d_with_scalar_a", ValueError, "b", a=lambda: _x(1), b=lambda: _x(1)[0]),
]


def _credit(algorithm, *args, **kw):
    return lambda: rl.credit_assignment(algorithm, *args, **kw)


_r, _v = (lambda: _x(B, T, seed=1)), (lambda: _x(B, T, seed=2))
CREDIT = [
    # (id, call, exception, argument named)
    ("unknown", lambda: rl.credit_assignment("bogus", _r()), ValueError, "algorithm"),
    ("case", lambda: rl.credit_assignment("GAE", _r(), _v()), ValueError, "algorithm"),
    ("plural", lambda: rl.credit_assignment("discounted_returns", _r()), ValueError, "algorithm"),
    ("none", lambda: rl.credit_assignment(None, _r()), ValueError, "algorithm"),
    ("int", lambda: rl.credit_assignment(3, _r()), ValueError, "algorithm"),
    ("epsilon_for_gae", lambda: rl.credit_assignment("gae", _r(), _v(), epsilon=0.1), TypeError, "epsilon"),
    ("alpha_for_ppo", lambda: rl.credit_assignment("ppo", _r(), _r(), _v(), alpha=0.1), TypeError, "alpha"),
    ("lambda_for_crr", lambda: rl.credit_assignment("crr", _r(), _r(), _v(), lambda_=0.5), TypeError, "lambda_"),
    ("gamma_for_ppo", lambda: rl.credit_assignment("ppo", _r(), _r(), _v(), gamma=0.9), TypeError, "gamma"),
    # the algorithm's own checks, through the entry point
    ("gae_gamma", lambda: rl.credit_assignment("gae", _r(), _v(), gamma=1.5), ValueError, "gamma"),
    ("td_lambda_lambda_nan", lambda: rl.credit_assignment("td_lambda", _r(), _v(), lambda_=NAN), ValueError, "lambda_"),
    ("vtrace_lambda", lambda: rl.credit_assignment("vtrace", _v(), _r(), _v(), lambda_=2.0), ValueError, "lambda_"),
    ("discounted_return_truncated", lambda: rl.credit_assignment("discounted_return", _r(), truncated=_truncated()),
     ValueError, "truncated"),
    ("ppo_epsilon", lambda: rl.credit_assignment("ppo", _r(), _r(), _v(), epsilon=-0.1), ValueError, "epsilon"),
    ("ppo_reduction", lambda: rl.credit_assignment("ppo", _r(), _r(), _v(), reduction="max"), ValueError, "reduction"),
    ("sac_alpha", lambda: rl.credit_assignment("sac", _r(), _v(), _v(), alpha=-1.0), ValueError, "alpha"),
    ("sac_lambda", lambda: rl.credit_assignment("sac", _r(), _v(), _v(), lambda_=0.5), ValueError, "log_probs"),
    ("crr_beta", lambda: rl.credit_assignment("crr", _r(), _r(), _v(), beta=0.0), ValueError, "beta"),
    ("crr_mode", lambda: rl.credit_assignment("crr", _r(), _r(), _v(), mode="linear"), ValueError, "mode"),
    ("rewards_int", lambda: rl.credit_assignment("gae", _r().long(), _v()), TypeError, "rewards"),
    ("time_dim", lambda: rl.credit_assignment("td_lambda", _r(), _v(), time_dim=5), ValueError, "time_dim"),
]
CASES = _generated() + HAND + [
    Case(f"credit_assignment-{i}", None, call, exc, arg) for i, call, exc, arg in CREDIT
]
assert len({c.id for c in CASES}) == len(CASES), "duplicate case ids"


def _assert_names(message: str, arg: str):
    """The message names ``arg`` as a word (a one-letter name such as linear_scan's ``a`` must
    open the message, as every _checks message does) and says what was expected."""
    if len(arg) <= 2:
        assert re.match(rf"{re.escape(arg)}\b", message), (arg, message)
    else:
        assert re.search(rf"(?<![\w.]){re.escape(arg)}(?!\w)", message), (arg, message)
    assert any(w in message for w in EXPECTED), message


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input_is_refused(case):
    if case.spec is None:  # credit_assignment: the call is the case
        call = case.mutate
    else:
        kw = case.spec.build()
        case.mutate(kw)
        call = lambda: case.spec.call(kw)  # noqa: E731
    with pytest.raises((TypeError, ValueError)) as info:
        call()
    assert type(info.value) is case.exc, f"{type(info.value).__name__}: {info.value}"
    _assert_names(str(info.value), case.arg)


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_the_valid_call_of_the_table_runs(spec):
    """Every case above changes one thing in a call that succeeds, so the error is that thing's."""
    spec.call(spec.build())
