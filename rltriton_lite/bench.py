"""``python -m rltriton_lite.bench``: time the kernels against the memory floor and their peers.

Method (docs/DESIGN.md, "Benchmark method"; benchmarks/README.md has the long form): the kernels
are memory-bound, so for each op count the fewest bytes it must move (every input read once,
every output written once); the floor is those bytes over the copy bandwidth measured in the same
process. Each row reports the ``triton.testing.do_bench`` median, the floor and % of floor, the
full-call wall time (many back-to-back calls, host work included), the GPU time alone (CUDA-graph
replays) where the call can be captured, and the max relative error of the outputs.

Every algorithm of ``rltriton_lite.profile.ops()``, and ``linear_scan`` itself, runs forward,
and forward + backward (gradients of fixed random weightings of its outputs), at every shape and
dtype of the sweep. Two anchors run beside them, timed the same way: ``bare_triton_launch``, a
naive one-program-per-row GAE kernel launched as ``kernel[(B,)](...)`` (what a plain Triton call
costs, host included), and ``minimal_autograd_fn``, PPO's clipped loss as an autograd.Function of
one naive kernel each way (what a plain differentiable Triton op costs). Peers run on the same
inputs in the same process, each one only if it imports: the PyTorch code a kernel replaces (a
CleanRL-style loop over time, or the eager formula), torch.compile of the eager formulas,
torchrl's functional estimators, accelerated-scan's Triton scan, ``jax.lax.associative_scan``
and rl-triton (from ``--peer-path``). Before a row is timed its outputs are checked: ours against
the float64 reference, each anchor's and peer's against ours; one that disagrees is still timed
and reported, flagged.

The JSON (``benchmarks/results/<gpu>-<date>.json`` by default) is rewritten after each shape,
so a run that is cut short keeps its rows; the markdown table and the plots are written at the
end, and ``--report FILE.json`` rewrites them from any result file, without a GPU. The markdown
leads with the wall time per call at 4096×128 and 64×16384 (ours, the anchors, ours ÷ anchor, each
peer), then the GPU time at 16384×1024.
"""
from __future__ import annotations

import argparse
import datetime
import functools
import importlib
import importlib.metadata
import json
import math
import os
import platform
import re
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import torch

from ._triton import jit, tl, triton

# In the order they run: with --budget, the ones left out at the end are the least telling.
SHAPES = [(16384, 1024), (4096, 128), (64, 16384), (8, 131072), (1, 1048576), (1024, 1024), (16, 128)]
QUICK_SHAPES = [(4096, 128), (16384, 1024), (64, 16384), (1, 1048576)]
ALGORITHMS = ("discounted_return", "gae", "td_lambda", "vtrace", "sac", "ppo", "crr", "linear_scan")
SCANS = ALGORITHMS[:4]  # a reverse scan over time; sac (λ = 0), ppo and crr are elementwise (+ a mean)
PASSES = ("fwd", "fwd+bwd")
OURS = "rltriton_lite"
# The anchors (rows beside ours, timed the same way): a plain Triton launch, and a plain autograd.Function
BARE_LAUNCH, MINIMAL_AUTOGRAD = "bare_triton_launch", "minimal_autograd_fn"
ANCHOR_OF_PASS = {"fwd": BARE_LAUNCH, "fwd+bwd": MINIMAL_AUTOGRAD}  # what "ours ÷ anchor" divides by
# The report leads with the wall time per call at these shapes, then the GPU time at this one
LEAD_WALL_SHAPES = ((4096, 128), (64, 16384))
LEAD_GPU_SHAPE = (16384, 1024)

# Max relative error (to max(1, |expected|)) beyond which a row's outputs are flagged: ours against
# the float64 reference, a peer's against ours. bf16 outputs round at 2^-9 relative.
TOLERANCE = {"float32": 1e-4, "bfloat16": 2e-2, "float16": 2e-2}

# Forward + backward: the inputs that get gradients (the others are constants), and the bytes the
# two passes must move per (row, step) at the least for element size es (flags are 1 byte):
# the forward's, then the backward's (it reads the output gradients and the few inputs its
# coefficients need, and writes one gradient per differentiated input).
BACKWARD = {
    # fwd r, term → G; bwd dG, term → dr
    "discounted_return": (("rewards",), lambda es: (2 * es + 1) + (2 * es + 1)),
    # fwd r, V, term → A, R; bwd dA, dR, term → dr, dV
    "gae": (("rewards", "values"), lambda es: (4 * es + 1) + (4 * es + 1)),
    # fwd r, V', term → G; bwd dG, term → dr, dV'
    "td_lambda": (("rewards", "next_values"), lambda es: (3 * es + 1) + (3 * es + 1)),
    # fwd log ρ, r, V, term → vs, A_pg; bwd log ρ, dvs, dA_pg, term → dr, dV
    "vtrace": (("rewards", "values"), lambda es: (5 * es + 1) + (5 * es + 1)),
    # fwd r, Q1, Q2, log π', term → G; bwd dG, Q1, Q2 (which is the min), term → dr, dQ1, dQ2, d log π'
    "sac": (("rewards", "q1", "q2", "next_log_probs"), lambda es: (5 * es + 1) + (7 * es + 1)),
    # fwd log π, log π_old, A → loss; bwd log π, log π_old, A → d log π
    "ppo": (("log_probs",), lambda es: 3 * es + 4 * es),
    # the loss alone (need_weights=False, as its peers): fwd log π, Q, V → loss; bwd Q, V → d log π
    "crr": (("log_probs",), lambda es: 3 * es + 3 * es),
    # fwd a, b → y; bwd dy, a, y → da, db
    "linear_scan": (("a", "b"), lambda es: 3 * es + 5 * es),
}
# For these, fwd+bwd ties the next values to the values (V'_t = V_{t+1}, bootstrap_value at the
# window's end) so that every implementation differentiates the same function of (r, V): ours
# shifts in the kernel (bootstrap_value), a peer gets next_values = cat(V[:, 1:], bootstrap).
TIED = ("gae", "vtrace")


def _linear_scan_inputs(B, T, dtype, device, g):
    """linear_scan's inputs: a = γλ(1 - term), terminations at 2 % as in profile's rollout; b random."""
    term = torch.rand(B, T, generator=g) < 0.02
    b = torch.randn(B, T, generator=g)
    return dict(a=(0.99 * 0.95 * (~term).float()).to(dtype=dtype, device=device), b=b.to(dtype=dtype, device=device))


def _linear_scan_loop(x, p):
    a, b = x["a"].float(), x["b"].float()
    y, out = torch.zeros_like(b[:, 0]), torch.empty_like(b)
    for t in reversed(range(b.shape[1])):
        y = b[:, t] + a[:, t] * y
        out[:, t] = y
    return out


@functools.cache
def _linear_scan_op():
    import rltriton_lite as rl
    from rltriton_lite import profile, reference

    return profile.Op("linear_scan", _linear_scan_inputs, lambda x, be, p: rl.linear_scan(x["a"], x["b"], backend=be),
                      _linear_scan_loop, lambda n, p: reference.linear_scan(n["a"], n["b"]), lambda es: 3 * es, {})


def _op(name):
    """An algorithm of the sweep: ``profile.op(name)``, or ``linear_scan``, the primitive itself
    (y_t = b_t + a_t·y_{t+1}; reads a, b, writes y)."""
    if name == "linear_scan":
        return _linear_scan_op()
    from rltriton_lite import profile

    return profile.op(name)


# --------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Timing:
    warmup_ms: float = 10  # do_bench's warm-up and timed durations (≥ 50 calls up to 1 ms a call)
    rep_ms: float = 50
    graph_rep_ms: float = 10  # do_bench_cudagraph: each of its 10 replays runs about this long
    call_s: float = 0.03  # full-call time: about this long of back-to-back calls (at least 3)
    slow_ms: float = 50  # a call slower than this is timed by 3 wall-clock runs, not do_bench


QUICK = Timing(warmup_ms=5, rep_ms=20, graph_rep_ms=5, call_s=0.01, slow_ms=20)


def copy_bandwidth(do_bench, nbytes=2 << 30) -> float:
    """Device-to-device copy, bytes read + written per second."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    ms = do_bench(lambda: dst.copy_(src))
    return 2 * nbytes / (ms * 1e-3)


def wall_ms(fn, sync, n=1) -> float:
    """Wall-clock ms per call of ``n`` back-to-back calls, synchronised once at the end."""
    t0 = time.perf_counter()
    for _ in range(n):
        out = fn()
    sync(out)
    return (time.perf_counter() - t0) * 1e3 / n


def measure(fn, sync, timing: Timing, use_do_bench: bool):
    """(ms, full_call_us, timer) of a warmed-up call. ms is the do_bench median where
    ``use_do_bench`` (PyTorch work on a GPU), else the median of three wall-clock batches of
    back-to-back calls (JAX, CPU); full_call_us is the wall time per call of back-to-back calls,
    the median of five loops.
    A call slower than ``timing.slow_ms`` is timed by three single wall-clock runs instead."""
    first = wall_ms(fn, sync)
    if first > timing.slow_ms:
        runs = [first, wall_ms(fn, sync), wall_ms(fn, sync)]
        return statistics.median(runs), 1e3 * statistics.fmean(runs), "wall"
    n = max(3, min(2000, int(timing.call_s * 1e3 / max(first, 1e-3))))
    full_us = 1e3 * statistics.median(wall_ms(fn, sync, n) for _ in range(5))  # a shared host is noisy
    if use_do_bench:
        import triton

        ms = triton.testing.do_bench(fn, warmup=timing.warmup_ms, rep=timing.rep_ms, return_mode="median")
        return ms, full_us, "do_bench"
    return statistics.median(wall_ms(fn, sync, n) for _ in range(3)), full_us, "wall"


def kernel_ms(fn, timing: Timing):
    """GPU time alone: the median of CUDA-graph replays (no host launch cost); None if the call
    cannot be captured."""
    try:
        import triton

        return triton.testing.do_bench_cudagraph(fn, rep=timing.graph_rep_ms, return_mode="median")
    except Exception:  # noqa: BLE001 - capture is best effort: the row keeps its other figures
        return None


# --------------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------------
def max_rel_err(outs, expected) -> float:
    """Max |out - expected| over paired outputs, each relative to max(1, max |expected|), as
    ``profile.rel_err`` (NaN if any output has a NaN). A gradient that a peer leaves unused
    (None) counts as zeros."""
    errs = []
    for o, e in zip(outs, expected):
        e = e.detach().double()
        o = torch.zeros_like(e) if o is None else torch.as_tensor(o).detach().to(e.device, torch.float64)
        scale = max(1.0, e.abs().max().item()) if e.numel() else 1.0
        errs.append((o - e).abs().max().item() / scale if e.numel() else 0.0)
    return float(torch.tensor(errs, dtype=torch.float64).max()) if errs else float("nan")


def dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def floor_ms(nbytes: int, bandwidth: float) -> float:
    return nbytes / bandwidth * 1e3


def make_row(algorithm, impl, B, T, dtype, pass_, ms, nbytes, bandwidth, *, full_call_us=None, kernel=None,
             err=float("nan"), checked_against=None, timer="do_bench"):
    """One result row (the JSON's schema); dtype as its name, e.g. "float32"."""
    floor = floor_ms(nbytes, bandwidth)
    dtype = dtype_name(dtype)
    return {"algorithm": algorithm, "impl": impl, "B": B, "T": T, "dtype": dtype, "pass": pass_, "ms": ms,
            "floor_ms": floor, "pct_floor": 100 * floor / ms, "full_call_us": full_call_us, "kernel_ms": kernel,
            "max_rel_err": err, "tol": TOLERANCE.get(dtype), "checked_against": checked_against, "timer": timer,
            "bytes": nbytes}


# --------------------------------------------------------------------------------------------
# Anchors: what a plain Triton op costs, the yardsticks of the wall time per call. Each is the
# naive way to write the op, launched the plain way (``kernel[grid](...)``, the output from
# ``torch.empty_like`` inside the call): what rl-triton and every Triton peer pay per call.
# --------------------------------------------------------------------------------------------
@jit
def _bare_gae_kernel(rewards, values, terminated, bootstrap_value, advantages, T, gamma, lambda_):
    """GAE, one program per row walking time backwards one step at a time (V' = V shifted,
    bootstrap_value after the last step; A_T = 0)."""
    row = tl.program_id(0)
    base = row.to(tl.int64) * T
    next_value = tl.load(bootstrap_value + row).to(tl.float32)
    adv = next_value * 0.0
    for i in range(T):
        t = base + T - 1 - i
        r = tl.load(rewards + t).to(tl.float32)
        v = tl.load(values + t).to(tl.float32)
        cont = gamma * (1.0 - tl.load(terminated + t).to(tl.float32))  # γ(1 - term_t)
        adv = r + cont * next_value - v + lambda_ * cont * adv
        tl.store(advantages + t, adv.to(advantages.dtype.element_ty))
        next_value = v


def bare_gae(rewards, values, terminated, bootstrap_value, gamma, lambda_):
    """The launch anchor's call: GAE's advantages ([B, T] contiguous inputs, ``terminated`` bool
    or float) from one plain launch of ``_bare_gae_kernel``."""
    advantages = torch.empty_like(rewards)
    _bare_gae_kernel[(rewards.shape[0],)](rewards, values, terminated, bootstrap_value, advantages, rewards.shape[1],
                                          gamma, lambda_)
    return advantages


_ANCHOR_BLOCK = 1024  # elements per program of the loss anchor's kernels


@jit
def _ppo_terms(log_probs, old_log_probs, advantages, offs, m, epsilon):
    log_ratio = tl.load(log_probs + offs, mask=m).to(tl.float32) - tl.load(old_log_probs + offs, mask=m).to(tl.float32)
    ratio = tl.exp(log_ratio)
    a = tl.load(advantages + offs, mask=m).to(tl.float32)
    return -a * ratio, -a * tl.minimum(tl.maximum(ratio, 1.0 - epsilon), 1.0 + epsilon)


@jit
def _ppo_anchor_forward(log_probs, old_log_probs, advantages, loss, n, epsilon, BLOCK: tl.constexpr):
    """Per element: max(-A ρ, -A clip(ρ, 1 - ε, 1 + ε)), in float32."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    unclipped, clipped = _ppo_terms(log_probs, old_log_probs, advantages, offs, m, epsilon)
    tl.store(loss + offs, tl.maximum(unclipped, clipped), mask=m)


@jit
def _ppo_anchor_backward(log_probs, old_log_probs, advantages, grad_loss, grad_log_probs, n, epsilon,
                         BLOCK: tl.constexpr):
    """d loss_i / d log π_i = -A ρ where the unclipped term is the max, else 0 (the clip is flat)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    unclipped, clipped = _ppo_terms(log_probs, old_log_probs, advantages, offs, m, epsilon)
    g = tl.load(grad_loss + offs, mask=m).to(tl.float32)
    grad = tl.where(unclipped >= clipped, unclipped * g, 0.0)
    tl.store(grad_log_probs + offs, grad.to(grad_log_probs.dtype.element_ty), mask=m)


class MinimalPPOLoss(torch.autograd.Function):
    """The autograd anchor: PPO's per-element clipped surrogate as an autograd.Function of one
    naive elementwise kernel forwards and one backwards (contiguous inputs); the mean is PyTorch's."""

    @staticmethod
    def forward(ctx, log_probs, old_log_probs, advantages, epsilon):
        loss = torch.empty(log_probs.shape, dtype=torch.float32, device=log_probs.device)
        n = loss.numel()
        _ppo_anchor_forward[(triton.cdiv(n, _ANCHOR_BLOCK),)](log_probs, old_log_probs, advantages, loss, n, epsilon,
                                                              BLOCK=_ANCHOR_BLOCK)
        ctx.save_for_backward(log_probs, old_log_probs, advantages)
        ctx.epsilon = epsilon
        return loss

    @staticmethod
    def backward(ctx, grad_loss):
        log_probs, old_log_probs, advantages = ctx.saved_tensors
        grad = torch.empty_like(log_probs)
        n = grad.numel()
        _ppo_anchor_backward[(triton.cdiv(n, _ANCHOR_BLOCK),)](log_probs, old_log_probs, advantages,
                                                               grad_loss.contiguous(), grad, n, ctx.epsilon,
                                                               BLOCK=_ANCHOR_BLOCK)
        return grad, None, None, None


def minimal_ppo_loss(log_probs, old_log_probs, advantages, epsilon=0.2):
    """The autograd anchor's call: mean over elements of ``MinimalPPOLoss``."""
    return MinimalPPOLoss.apply(log_probs, old_log_probs, advantages, epsilon).mean()


def _bare_launch(name, x, p):
    return lambda x: (bare_gae(x["rewards"], x["values"], x["terminated"], x["bootstrap_value"], p["gamma"],
                               p["lambda_"]),)


def _minimal_autograd(name, x, p):
    return lambda x: (minimal_ppo_loss(x["log_probs"], x["old_log_probs"], x["values"], p["epsilon"]),)


def _bare_launch_limit(name, B, T, dtype, pass_):
    if T > 16384:
        return ("one program per row walks the T > 16384 steps one at a time (the anchor of a call's cost, "
                "not of long rows)")
    return None


# --------------------------------------------------------------------------------------------
# Peers: adapters from the bench's inputs (profile.ops()'s dict, [B, T] tensors) to each peer's
# conventions; each returns the outputs in rltriton_lite's order
# --------------------------------------------------------------------------------------------
def _as_tuple(out):
    return tuple(out) if isinstance(out, tuple) else (out,)


def tie_next_values(name, x):
    """``x`` with next_values = values shifted by one step, bootstrap_value at the end (for the
    TIED algorithms; other inputs unchanged)."""
    if name not in TIED:
        return x
    return dict(x, next_values=torch.cat([x["values"][:, 1:], x["bootstrap_value"][:, None]], 1))


def vtrace_pg(vs, x, p):
    """V-trace's policy-gradient advantages from vs (rltriton_lite's and torchrl's definition;
    clips at 1, no truncation in the bench): ρ̄_t (r_t + γ(1-term_t)[λ vs_{t+1} + (1-λ) V'_t] - V_t),
    with vs_T = V'_{T-1}; in float32 or wider."""
    r, v, nv = x["rewards"], x["values"], x["next_values"]
    cont = p["gamma"] * (~x["terminated"]).float()
    vs_next = torch.cat([vs[:, 1:], nv[:, -1:]], 1)
    lam = p["lambda_"]
    return x["log_rhos"].float().exp().clamp(max=1.0) * (r + cont * (lam * vs_next + (1 - lam) * nv) - v)


def scan_terms(name, x, p):
    """A scan algorithm as the reverse recurrence y_t = b_t + a_t·y_{t+1}, y_T = 0, in eager
    PyTorch, for the peers that only scan: (a, b, finish), finish(y) giving the outputs. As in
    rltriton_lite, the arithmetic is float32 (type promotion from the float32 γ(1-term), no extra
    pass) and the outputs come back in the inputs' dtype. The window's last step bootstraps from
    next_values[T-1] (= bootstrap_value) through b."""
    r, lam, dtype = x["rewards"], p.get("lambda_"), x["rewards"].dtype
    cont = p["gamma"] * (~x["terminated"]).float()  # γ(1 - term)
    if name == "discounted_return":
        b = torch.cat([r[:, :-1], (r[:, -1] + cont[:, -1] * x["bootstrap_value"])[:, None]], 1)
        return cont, b, lambda y: (y.to(dtype),)
    if name == "gae":
        v = x["values"]
        return lam * cont, r + cont * x["next_values"] - v, lambda y: (y.to(dtype), (y + v).to(dtype))
    if name == "td_lambda":
        w = torch.full(r.shape[1:], 1 - lam, device=r.device)
        w[-1] = 1.0  # the window's end bootstraps from V'_{T-1} in full
        return lam * cont, r + cont * w * x["next_values"], lambda y: (y.to(dtype),)
    if name == "vtrace":  # IMPALA's form, as torchrl and the loop: y = vs - V, clips at 1
        v, rho = x["values"], x["log_rhos"].float().exp().clamp(max=1.0)
        finish = lambda y: ((y + v).to(dtype), vtrace_pg(y + v, x, p).to(dtype))  # noqa: E731
        return cont * lam * rho, rho * (r + cont * x["next_values"] - v), finish
    raise ValueError(f"{name} is not a scan")


def _pytorch(name, x, p):
    """The PyTorch code each kernel replaces (profile's loop over time, or eager formula)."""
    loop = _op(name).loop
    if name != "vtrace":
        return lambda x: _as_tuple(loop(x, p))

    def vtrace(x):  # the loop returns vs; add the advantages, as ours and torchrl return both
        vs = loop(x, p)
        return vs, vtrace_pg(vs, x, p)
    return vtrace


COMPILE_BACKEND = "inductor"  # tests use "eager": the same tracing, no code generation
_compiled: dict = {}


def _torch_compile(name, x, p):
    """torch.compile of the eager formula (elementwise, and a mean) with dynamic shapes: one
    compilation per algorithm, dtype and pass, reused across the sweep's shapes (plus one for
    B = 1: PyTorch specialises sizes 0 and 1)."""
    key = (name, COMPILE_BACKEND)
    if key not in _compiled:
        import torch._dynamo

        cfg = torch._dynamo.config  # never fall back to eager silently after many recompilations
        setattr(cfg, "recompile_limit" if hasattr(cfg, "recompile_limit") else "cache_size_limit", 64)
        _compiled[key] = torch.compile(_pytorch(name, x, p), dynamic=True, backend=COMPILE_BACKEND)
    return _compiled[key]


def _torchrl(name, x, p):
    """torchrl.objectives.value.functional: tensors [B, T, 1] with time at dim -2; done =
    terminated (the bench has no truncation; the window's end bootstraps from next_values)."""
    F = importlib.import_module("torchrl.objectives.value.functional")
    col = lambda t: t.unsqueeze(-1)  # noqa: E731
    out = lambda *ts: tuple(t.squeeze(-1) for t in ts)  # noqa: E731
    g, lam = p["gamma"], p.get("lambda_")
    if name == "gae":
        return lambda x: out(*F.generalized_advantage_estimate(
            g, lam, col(x["values"]), col(x["next_values"]), col(x["rewards"]), col(x["terminated"]),
            col(x["terminated"])))
    if name == "vec_gae":
        return lambda x: out(*F.vec_generalized_advantage_estimate(
            g, lam, col(x["values"]), col(x["next_values"]), col(x["rewards"]), col(x["terminated"]),
            col(x["terminated"])))
    if name == "vec_td_lambda":
        return lambda x: out(F.vec_td_lambda_return_estimate(
            g, lam, col(x["next_values"]), col(x["rewards"]), col(x["terminated"]), col(x["terminated"])))
    if name == "vtrace":
        if lam != 1.0:
            raise ValueError("torchrl's V-trace has no λ (c_t = min(c̄, ρ_t)): it matches λ = 1 only")
        log_mu = torch.zeros_like(x["log_rhos"])  # log_pi - log_mu = log ρ

        def vtrace(x):
            adv, vs = F.vtrace_advantage_estimate(g, col(x["log_rhos"]), col(log_mu), col(x["values"]),
                                                  col(x["next_values"]), col(x["rewards"]), col(x["terminated"]),
                                                  col(x["terminated"]))
            return out(vs, adv)
        return vtrace
    if name == "reward2go":  # no bootstrap: fold γ(1-term)·bootstrap_value into the last reward
        def reward2go(x):
            r, cont = x["rewards"], g * (~x["terminated"][:, -1]).to(x["rewards"].dtype)
            r = torch.cat([r[:, :-1], (r[:, -1] + cont * x["bootstrap_value"])[:, None]], 1)
            return out(F.reward2go(col(r), col(x["terminated"]), g))
        return reward2go
    raise ValueError(name)


def _accelerated_scan(module):
    """accelerated-scan: x_t = a_t·x_{t-1} + b_t over (B, C, T) contiguous tensors, forward in
    time only, so the reverse recurrence is flip → scan → flip (the flips are timed with it)."""
    def build(name, x, p):
        scan = importlib.import_module(module).scan

        def fn(x):
            a, b, finish = scan_terms(name, x, p)
            B, T = b.shape
            return finish(scan(a.flip(1).view(B, 1, T), b.flip(1).view(B, 1, T)).view(B, T).flip(1))
        return fn
    return build


def _jax(name, x, p):
    """jax.lax.associative_scan over the affine maps y ↦ a·y + b, reverse=True along time, in one
    jitted function (prologue, scan, epilogue; float32 arithmetic, outputs in the inputs' dtype,
    as rltriton_lite). Inputs arrive through DLPack (no copy)."""
    import jax
    import jax.numpy as jnp

    def compose(later, earlier):  # reverse=True: the first argument holds the later steps
        return later[0] * earlier[0], earlier[0] * later[1] + earlier[1]

    def rscan(a, b):
        return jax.lax.associative_scan(compose, (a, b), reverse=True, axis=1)[1]

    g, lam = p["gamma"], p.get("lambda_")

    def outputs(x):
        r, v, nv = x["rewards"], x["values"], x["next_values"]
        cont = g * (1 - x["terminated"].astype(r.dtype))
        if name == "discounted_return":
            return (rscan(cont, r.at[:, -1].add(cont[:, -1] * x["bootstrap_value"])),)
        if name == "gae":
            adv = rscan(lam * cont, r + cont * nv - v)
            return adv, adv + v
        if name == "td_lambda":
            w = jnp.full(r.shape[1:], 1 - lam, r.dtype).at[-1].set(1)
            return (rscan(lam * cont, r + cont * w * nv),)
        rho = jnp.minimum(jnp.exp(x["log_rhos"]), 1)  # vtrace
        vs = v + rscan(cont * lam * rho, rho * (r + cont * nv - v))
        vs_next = jnp.concatenate([vs[:, 1:], nv[:, -1:]], 1)
        return vs, rho * (r + cont * (lam * vs_next + (1 - lam) * nv) - v)

    def fn(x):
        dtype = x["rewards"].dtype
        x32 = {k: v.astype(jnp.float32) if jnp.issubdtype(v.dtype, jnp.floating) else v for k, v in x.items()}
        return tuple(o.astype(dtype) for o in outputs(x32))
    return jax.jit(fn)


def _rl_triton(name, x, p):
    """rl-triton (github simonsays1980/rl-triton, imported from ``--peer-path``): its public ops
    with ``truncateds=None`` (``terminateds`` gates the bootstrap and the trace, as the bench's
    ``terminated``). Its flags are float32 (1.0 = terminated) and its discounted and λ-returns
    take the window's bootstrap as the last column of a [B, T] ``bootstrap_values`` (zero
    elsewhere): both made before timing, as a caller of rl-triton keeps them. GAE and V-trace
    read V(s_{t+1}) as values[t+1] and ``last_value`` after the window: the bench's V' (V
    shifted, bootstrap_value at the end). GAE returns the advantages: the returns A + V are added
    in the timed call, as ours return both. V-trace has no λ (c_t = min(c̄, ρ_t)): λ = 1 only;
    its behaviour log-probabilities are 0 (made before timing), so log π - log μ = log ρ."""
    if name == "vtrace" and p["lambda_"] != 1.0:
        raise ValueError("rl-triton's V-trace has no λ (c_t = min(c̄, ρ_t)): it matches λ = 1 only")
    rl_triton = importlib.import_module("rl_triton")
    g, lam, flags = p["gamma"], p.get("lambda_"), x["terminated"].float()
    done = lambda x_: flags if x_["terminated"] is x["terminated"] else x_["terminated"].float()  # noqa: E731

    def window_end(v):
        out = torch.zeros_like(x["rewards"])
        out[:, -1] = v
        return out

    if name == "gae":
        def gae(x):
            adv = rl_triton.compute_gae(x["rewards"], x["values"], done(x), gamma=g, lambda_=lam,
                                        last_value=x["bootstrap_value"])
            return adv, adv + x["values"]
        return gae
    if name == "discounted_returns":
        boot = window_end(x["bootstrap_value"])
        return lambda x: (rl_triton.compute_discounted_returns(x["rewards"], done(x), gamma=g, bootstrap_values=boot),)
    if name == "lambda_returns":  # the window's end bootstraps from V'_{T-1} in full, as ours
        boot = window_end(x["next_values"][:, -1])
        return lambda x: (rl_triton.compute_lambda_returns(x["rewards"], x["next_values"], done(x), gamma=g,
                                                           lambda_=lam, bootstrap_values=boot),)
    if name == "vtrace":
        log_mu = torch.zeros_like(x["log_rhos"])
        return lambda x: tuple(rl_triton.compute_vtrace(x["log_rhos"], log_mu, x["values"], x["rewards"], done(x),
                                                        gamma=g, rho_bar=1.0, c_bar=1.0,
                                                        last_value=x["bootstrap_value"]))
    raise ValueError(name)


def _loop_limit(name, B, T, dtype, pass_):
    """Python loops over time: float32 only (they upcast, so bf16 times the same loop), and
    lengths that keep the sweep within minutes."""
    if dtype != "float32":
        return "a loop over time runs in float32 only (bf16 would time the same loop)"
    if T > 16384:
        return "a Python loop over more than 16384 steps (seconds a call)"
    if pass_ == "fwd+bwd" and T > 1024:
        return "autograd through a Python loop over more than 1024 steps (seconds a call)"
    return None


def _scalar_limit(name, B, T, dtype, pass_):
    if pass_ == "fwd+bwd" and dtype in ("bfloat16", "float16"):
        # seen on the H200 (2026-11-29): its bf16 backward at 16384x1024 hit an illegal memory
        # access, which leaves the CUDA context unusable for the rest of the process (compare
        # proger/accelerated-scan#12, half-precision crashes of its warp kernel)
        return "accelerated_scan's half-precision backward crashed the process (illegal memory access)"
    return None


def _rl_triton_limit(name, B, T, dtype, pass_):
    if dtype != "float32":
        return "rl-triton takes float32 inputs only (it asserts dtype == float32)"
    return None


def _warp_limit(name, B, T, dtype, pass_):
    if T < 32 or T > 65536 or T & (T - 1):
        return "accelerated_scan.warp needs T a power of two in [32, 65536]"
    return None


@dataclass(frozen=True)
class Peer:
    impl: str  # the rows' impl
    requires: str | None  # the module that must import for the peer to run (None: PyTorch)
    algorithms: dict  # bench algorithm -> the name the builder takes
    build: Callable  # (name, x, params) -> fn(inputs) -> outputs in rltriton_lite's order
    backward: bool = False  # also fwd+bwd (autograd through it)
    graph: bool = False  # capturable in a CUDA graph: also GPU time
    jax: bool = False  # JAX arrays: inputs through DLPack, timed with block_until_ready
    limit: Callable | None = None  # (algorithm, B, T, dtype, pass) -> why a case is skipped, or None
    default: bool = True  # run unless --peers names the peers to run

    def skip_reason(self, algorithm, B, T, dtype, pass_):
        if pass_ == "fwd+bwd" and not self.backward:
            return "forward only"
        return self.limit(algorithm, B, T, dtype, pass_) if self.limit else None


_same = lambda names: {n: n for n in names}  # noqa: E731
PEERS = [
    Peer("pytorch_loop", None, _same(SCANS), _pytorch, backward=True, limit=_loop_limit),
    Peer("pytorch_eager", None, _same(("sac", "ppo", "crr")), _pytorch, backward=True, graph=True),
    Peer("torch_compile", None, _same(("sac", "ppo", "crr")), _torch_compile, backward=True, graph=True),
    Peer("torchrl_gae", "torchrl", {"gae": "gae"}, _torchrl, limit=_loop_limit),
    Peer("torchrl_vec_gae", "torchrl", {"gae": "vec_gae"}, _torchrl),
    Peer("torchrl_vec_td_lambda", "torchrl", {"td_lambda": "vec_td_lambda"}, _torchrl),
    Peer("torchrl_vtrace", "torchrl", {"vtrace": "vtrace"}, _torchrl, limit=_loop_limit),
    Peer("torchrl_reward2go", "torchrl", {"discounted_return": "reward2go"}, _torchrl),
    Peer("accelerated_scan", "accelerated_scan.scalar", _same(SCANS), _accelerated_scan("accelerated_scan.scalar"),
         backward=True, graph=True, limit=_scalar_limit),
    # CUDA C++ built by torch.utils.cpp_extension at import (nvcc, minutes): only when named
    Peer("accelerated_scan_warp", "accelerated_scan.warp", _same(SCANS), _accelerated_scan("accelerated_scan.warp"),
         backward=True, graph=True, limit=_warp_limit, default=False),
    Peer("jax", "jax", _same(SCANS), _jax, jax=True),
    # from --peer-path (tools/fetch_peers.sh exports its src/); no autograd: forward only
    Peer("rl_triton", "rl_triton", {"gae": "gae", "discounted_return": "discounted_returns",
                                    "td_lambda": "lambda_returns", "vtrace": "vtrace"}, _rl_triton, graph=True,
         limit=_rl_triton_limit),
]
# Run with ours whatever --peers says (their rows are checked against ours like a peer's)
ANCHORS = [
    Peer(BARE_LAUNCH, "triton", {"gae": "gae"}, _bare_launch, graph=True, limit=_bare_launch_limit),
    Peer(MINIMAL_AUTOGRAD, "triton", {"ppo": "ppo"}, _minimal_autograd, backward=True, graph=True),
]
PEER_DISTRIBUTIONS = ("torchrl", "tensordict", "accelerated-scan", "jax", "jaxlib")


def find_peers(names, device):
    """The peers to run (``names``: impls, or None for the default ones) and a status line for
    each asked-for peer: what was found, or why it cannot run."""
    wanted = [p for p in PEERS if (p.default if names is None else p.impl in names)]
    unknown = set(names or ()) - {p.impl for p in PEERS}
    if unknown:
        raise ValueError(f"unknown peers {sorted(unknown)}; known: {', '.join(p.impl for p in PEERS)}")
    found, status = [], {}
    for peer in wanted:
        if peer.requires is None:
            found.append(peer)
            status[peer.impl] = f"torch {torch.__version__}"
            continue
        if peer.jax:  # JAX must not take most of the GPU's memory at import
            os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        try:
            module = importlib.import_module(peer.requires)
        except Exception as e:  # noqa: BLE001 - a peer that does not import is reported, not fatal
            status[peer.impl] = f"not found ({type(e).__name__}: {e})".splitlines()[0]
            continue
        root = module.__name__.split(".")[0]
        version = getattr(importlib.import_module(root), "__version__", "?")
        if peer.jax and (module.default_backend() == "cpu") != (device == "cpu"):
            status[peer.impl] = f"{root} {version} runs on {module.default_backend()}, not on {device}: skipped"
            continue
        found.append(peer)
        status[peer.impl] = f"{root} {version}" + _origin(module)
    return found, status


PEER_PATHS: list = []  # --peer-path, in order: (the folder resolved, what the result records of it)


def add_peer_path(path) -> dict:
    """Put a folder of peer sources (``--peer-path``) ahead of sys.path; returns what the result
    records of it: the path and the commit that tools/fetch_peers.sh wrote beside it (or None)."""
    folder = Path(path).resolve()
    if not folder.is_dir():
        raise SystemExit(f"bench: --peer-path {path}: no such folder (run tools/fetch_peers.sh first)")
    commit = folder.parent / "COMMIT"
    record = {"path": str(path), "commit": commit.read_text().strip() if commit.is_file() else None}
    sys.path.insert(0, str(folder))
    PEER_PATHS.append((folder, record))
    return record


def _origin(module) -> str:
    """" (from PATH @ COMMIT)" for a module imported from a --peer-path folder, else ""."""
    file = Path(getattr(module, "__file__", None) or ".").resolve()
    for folder, record in PEER_PATHS:
        if folder in file.parents:
            return f" (from {record['path']}" + (f" @ {record['commit'][:12]}" if record["commit"] else "") + ")"
    return ""


def versions() -> dict:
    import rltriton_lite

    out = {"python": platform.python_version(), "torch": torch.__version__, "rltriton_lite": rltriton_lite.__version__}
    for dist in ("triton", *PEER_DISTRIBUTIONS):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


# --------------------------------------------------------------------------------------------
# The sweep
# --------------------------------------------------------------------------------------------
def _torch_sync(device):
    return (lambda _out: torch.cuda.synchronize()) if device == "cuda" else (lambda _out: None)


def _ours(name, x, p, pass_):
    """Our call: profile's, except that V-trace's fwd+bwd takes bootstrap_value (V' tied to V)."""
    if pass_ == "fwd+bwd" and name == "vtrace":
        import rltriton_lite as rl

        return lambda: rl.vtrace(x["log_rhos"], x["rewards"], x["values"], gamma=p["gamma"], lambda_=p["lambda_"],
                                 terminated=x["terminated"], bootstrap_value=x["bootstrap_value"], backend="triton")
    op = _op(name)
    return lambda: _as_tuple(op.run(x, "triton", p))


def _check_ours(name, x, p, outs, B, T, cache):
    """Ours against the float64 NumPy reference loops where they are quick (T ≤ 16384, at most
    2^24 elements), else against the float64 PyTorch path (Hillis–Steele, on the device).
    Returns (max rel err of the first output, what it was checked against)."""
    from rltriton_lite import profile

    op = _op(name)
    if B * T <= 2**24 and T <= 16384:
        key = ("numpy", id(x))  # x: the inputs of this maker, alive while the cache is
        if key not in cache:
            cache[key] = profile.as_numpy(x)
        return profile.rel_err(outs[0], op.reference(cache[key], p)), "reference"
    x64 = {k: v.double() if v.is_floating_point() else v for k, v in x.items()}
    return max_rel_err(outs[:1], _as_tuple(op.run(x64, "torch", p))[:1]), "torch_f64"


def _grad_call(fwd, leaves, weights):
    """fwd, then the gradients of sum_k <weights_k, out_k> with respect to the leaves."""
    return lambda: torch.autograd.grad(fwd(), leaves, weights, allow_unused=True)


def _failure(e: Exception) -> str:
    return f"failed: {type(e).__name__}: {e}".splitlines()[0][:300]


def _cotangents(outs, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(o.shape, generator=g).to(o.device, o.dtype) if o.dim() else torch.ones_like(o) for o in outs]


class Sweep:
    """Runs the cases and appends to ``result["rows"]`` and ``result["skipped"]``. ``anchors``
    (``ANCHORS`` in a run of the harness) run as peers do, before them."""

    def __init__(self, result, peers, *, anchors=(), device="cuda", timing=Timing(), configs=(), emit=print):
        self.result, self.peers, self.device, self.timing = result, [*anchors, *peers], device, timing
        self.configs, self.emit = configs, emit
        self.bw = result["copy_bandwidth_Bps"]
        self.sync = _torch_sync(device)

    def skip(self, algorithm, impl, B, T, dtype, pass_, reason):
        entry = {"algorithm": algorithm, "impl": impl, "B": B, "T": T, "dtype": dtype_name(dtype),
                 "pass": pass_, "reason": reason}
        self.result["skipped"].append(entry)
        self.emit(format_skip(entry))

    def add(self, row):
        self.result["rows"].append(row)
        self.emit(format_row(row))

    def timed_row(self, algorithm, impl, B, T, dtype, pass_, fn, nbytes, *, err, against, graph, jax=False):
        """Time fn (already called once, so compiled and checked) into a row."""
        sync = importlib.import_module("jax").block_until_ready if jax else self.sync
        ms, full_us, timer = measure(fn, sync, self.timing, use_do_bench=self.device == "cuda" and not jax)
        kernel = kernel_ms(fn, self.timing) if graph and self.device == "cuda" and timer == "do_bench" else None
        self.add(make_row(algorithm, impl, B, T, dtype, pass_, ms, nbytes, self.bw, full_call_us=full_us, kernel=kernel,
                          err=err, checked_against=against, timer=timer))

    def case(self, name, pass_, x, B, T, dtype, cache):
        """One algorithm, one pass: ours, its tile variants, then every anchor and peer that can run it."""
        op = _op(name)
        p = op.defaults
        es = torch.finfo(dtype).bits // 8
        nbytes = B * T * (op.bytes_per_step(es) if pass_ == "fwd" else BACKWARD[name][1](es))
        xg, leaves, weights = None, [], None
        try:
            if pass_ == "fwd":
                fn = _ours(name, x, p, pass_)
                expected = fn()
                err, against = _check_ours(name, x, p, expected, B, T, cache)
            else:  # the peers' yardstick is our gradients; the test suite checks those
                xg = dict(x, **{k: x[k].detach().clone().requires_grad_() for k in BACKWARD[name][0]})
                leaves = [xg[k] for k in BACKWARD[name][0]]
                fwd = _ours(name, xg, p, pass_)
                weights = _cotangents(fwd())
                fn = _grad_call(fwd, leaves, weights)
                expected = fn()
                err, against = float("nan"), None
            self.timed_row(name, OURS, B, T, dtype, pass_, fn, nbytes, err=err, against=against, graph=True)
        except Exception as e:  # noqa: BLE001 - e.g. a kernel being reworked: keep the rest of the sweep
            self.skip(name, OURS, B, T, dtype, pass_, _failure(e) + "; its peers skipped too (nothing to check against)")
            return
        if pass_ == "fwd" and name == "gae" and dtype == torch.float32:
            self.tile_variants(name, B, T, dtype, fn, nbytes)
        for peer in self.peers:
            if name in peer.algorithms:
                self.peer_case(peer, name, pass_, x, p, B, T, dtype, nbytes, expected, xg, leaves, weights)

    def tile_variants(self, name, B, T, dtype, fn, nbytes):
        """--configs: GAE fp32 forward with other tiles (rows per program, time block, warps and
        optionally pipeline stages, default 1)."""
        from rltriton_lite.config import Config, using

        for cfg in self.configs:
            with using(Config(tile=cfg)):
                fn()  # compile this tile before timing it
                ms, full_us, timer = measure(fn, self.sync, self.timing, use_do_bench=self.device == "cuda")
            tile = f"rows{cfg[0]}-block{cfg[1]}-w{cfg[2]}" + (f"-s{cfg[3]}" if len(cfg) > 3 else "")
            self.add(make_row(name, f"{OURS}[{tile}]", B, T, dtype, "fwd", ms, nbytes, self.bw,
                              full_call_us=full_us, timer=timer))

    def peer_case(self, peer, name, pass_, x, p, B, T, dtype, nbytes, expected, xg, leaves, weights):
        """Build, check against ours (outputs, or gradients for fwd+bwd), then time; a peer that
        cannot run this case is listed in "skipped" with the reason."""
        reason = peer.skip_reason(name, B, T, dtype_name(dtype), pass_)
        if reason:
            self.skip(name, peer.impl, B, T, dtype, pass_, reason)
            return
        try:
            run = peer.build(peer.algorithms[name], x, p)
            if peer.jax:
                import jax

                self.sync(None)  # the inputs are written before JAX reads them (no copy)
                xj = {k: jax.dlpack.from_dlpack(v) for k, v in x.items()}
                fn = lambda: run(xj)  # noqa: E731
                got = [torch.from_dlpack(o) for o in jax.block_until_ready(fn())]
            elif pass_ == "fwd":
                fn = lambda: run(x)  # noqa: E731
                got = fn()
            else:
                fwd = lambda: run(tie_next_values(name, xg))  # noqa: E731
                fn = _grad_call(fwd, leaves, [w.to(o.dtype) for w, o in zip(weights, fwd())])
                got = fn()
            err = max_rel_err(got, expected)
            self.timed_row(name, peer.impl, B, T, dtype, pass_, fn, nbytes, err=err, against=OURS, graph=peer.graph,
                           jax=peer.jax)
        except Exception as e:  # noqa: BLE001 - a failing peer is reported; the sweep goes on
            self.skip(name, peer.impl, B, T, dtype, pass_, _failure(e))
            if self.device == "cuda":
                torch.cuda.empty_cache()

    def shape(self, B, T, dtypes, algorithms, passes, progress):
        """Every algorithm × pass at one shape, for each dtype, on shared inputs."""
        for dtype in dtypes:
            inputs, cache = {}, {}  # inputs per maker (profile's rollout; linear_scan has its own)
            for name in algorithms:
                make = _op(name).make
                if make not in inputs:
                    inputs[make] = make(B, T, dtype, self.device, torch.Generator().manual_seed(0))
                for pass_ in passes:
                    self.case(name, pass_, inputs[make], B, T, dtype, cache)
                    progress(f"{B}x{T} {dtype_name(dtype)} {name} {pass_}")
            del inputs, cache
            if self.device == "cuda":
                torch.cuda.empty_cache()


# --------------------------------------------------------------------------------------------
# Console lines
# --------------------------------------------------------------------------------------------
HEADER = (f"{'algorithm':<18} {'impl':<24} {'shape':<15} {'dtype':<8} {'pass':<7} {'ms':>9} {'floor ms':>9} "
          f"{'floor%':>7} {'call µs':>9} {'graph ms':>9} {'rel err':>9}")


def _num(v, fmt):
    return format(v, fmt) if isinstance(v, (int, float)) and not math.isnan(v) else "—"


def _sig(v, suffix=""):
    """4 significant digits (whole numbers from 1000 up), with a unit; "—" for none."""
    if not isinstance(v, (int, float)) or math.isnan(v):
        return "—"
    return (f"{v:.0f}" if abs(v) >= 1000 else f"{v:.4g}") + suffix


def _flagged(row) -> bool:
    """The row's outputs disagree with what they were checked against (NaN counts)."""
    err, tol = row.get("max_rel_err"), row.get("tol") or TOLERANCE.get(row["dtype"])
    if not isinstance(err, float) or tol is None:
        return False
    return bool(row.get("checked_against")) if math.isnan(err) else err > tol


def format_row(row) -> str:
    err = _num(row.get("max_rel_err"), "9.1e") + (" !" if _flagged(row) else "")
    return (f"{row['algorithm']:<18} {row['impl']:<24} {row['B']:>6}x{row['T']:<8} {row['dtype']:<8} {row['pass']:<7} "
            f"{row['ms']:9.4f} {row['floor_ms']:9.4f} {row['pct_floor']:6.1f}% {_num(row.get('full_call_us'), '9.1f')} "
            f"{_num(row.get('kernel_ms'), '9.4f')} {err:>9}")


def format_skip(entry) -> str:
    return (f"{entry['algorithm']:<18} {entry['impl']:<24} {entry['B']:>6}x{entry['T']:<8} {entry['dtype']:<8} "
            f"{entry['pass']:<7} skipped: {entry['reason']}")


# --------------------------------------------------------------------------------------------
# Report: markdown table and plots from a result JSON
# --------------------------------------------------------------------------------------------
def _shape_key(shape):
    return shape[0] * shape[1], shape[1]


def _algorithm_key(algorithm):
    return (ALGORITHMS.index(algorithm) if algorithm in ALGORITHMS else len(ALGORITHMS)), algorithm


def _dtype_key(dtype):
    return ("float32", "bfloat16", "float16").index(dtype) if dtype in ("float32", "bfloat16", "float16") else 9, dtype


def _row_key(r):
    return r["pass"], _dtype_key(r["dtype"]), _shape_key((r["B"], r["T"])), _algorithm_key(r["algorithm"]), r["impl"]


def _case(r):
    return r["algorithm"], r["B"], r["T"], r["dtype"], r["pass"]


def _us(row):
    return _sig(row.get("full_call_us")) if row else "—"


def lead(res) -> list[str]:
    """The headline view, as markdown lines (none where the result has none of its shapes): at
    each of LEAD_WALL_SHAPES, the wall time per call of ours, ours ÷ the anchor of the pass
    (``ANCHOR_OF_PASS``) and each peer's; then the GPU time (CUDA-graph replays) at
    LEAD_GPU_SHAPE. One table per shape and dtype."""
    rows = sorted(res["rows"], key=_row_key)
    anchors = set(ANCHOR_OF_PASS.values())

    def tables(B, T, heading, columns, cells):
        out = []
        for dtype in sorted({r["dtype"] for r in rows if (r["B"], r["T"]) == (B, T)}, key=_dtype_key):
            sel = [r for r in rows if (r["B"], r["T"], r["dtype"]) == (B, T, dtype)]
            out += [f"### {heading} {B}×{T}, {dtype}", ""]
            if any(r["impl"] in anchors for r in sel):
                out += ["Anchors: " + "; ".join(f"`{r['impl']}` ({r['algorithm']}) {r['pass']} {_us(r)} µs"
                                                + (f", GPU {_sig(r.get('kernel_ms'))} ms" if r.get("kernel_ms") else "")
                                                for r in sel if r["impl"] in anchors) + ".", ""]
            out += ["| algorithm | pass | " + " | ".join(columns) + " |", "|---|---|" + "---|" * len(columns)]
            for r in sel:
                if r["impl"] == OURS:
                    others = [q for q in sel if _case(q) == _case(r) and q["impl"] not in anchors | {OURS}]
                    out.append(f"| {r['algorithm']} | {r['pass']} | " + " | ".join(cells(r, sel, others)) + " |")
            out.append("")
        return out

    def wall(r, sel, others):
        anchor = next((a for a in sel if a["impl"] == ANCHOR_OF_PASS[r["pass"]] and a["pass"] == r["pass"]), None)
        ratio = r["full_call_us"] / anchor["full_call_us"] if anchor and anchor.get("full_call_us") and \
            r.get("full_call_us") else None
        peers = ", ".join(f"{q['impl']} {_us(q)}" + (" !" if _flagged(q) else "") for q in others)
        return [_us(r) + (" !" if _flagged(r) else ""), _sig(ratio), peers or "—"]

    def gpu(r, sel, others):
        graph = r.get("kernel_ms")
        peers = ", ".join(f"{q['impl']} {_sig(q['kernel_ms'])}" for q in others if q.get("kernel_ms"))
        return [_sig(graph), _sig(100 * r["floor_ms"] / graph if graph else None, " %"), peers or "—"]

    out = []
    for B, T in LEAD_WALL_SHAPES:
        out += tables(B, T, "Wall time per call,", ["rltriton_lite µs", "÷ anchor", "peers µs"], wall)
    if out:
        out = ["## Wall time per call", "",
               "µs: wall time per call of back-to-back calls with one synchronisation at the end (`full_call_us`), "
               f"host included. ÷ anchor: ours over `{BARE_LAUNCH}` (a naive GAE kernel, one program per row, "
               f"launched plainly) for fwd, over `{MINIMAL_AUTOGRAD}` (PPO's loss as a plain autograd.Function) for "
               "fwd+bwd, at the same shape and dtype; below 1, our call costs less than the plain Triton one. "
               "! marks outputs that disagree with ours.", "", *out]
    gpu_tables = tables(*LEAD_GPU_SHAPE, "GPU time,", ["rltriton_lite GPU ms", "% floor (graph)", "peers GPU ms"], gpu)
    if gpu_tables:
        out += ["## GPU time", "", "GPU ms: median of CUDA-graph replays, the kernels without the host (peers that "
                "cannot be captured have none).", "", *gpu_tables]
    return out


def markdown(res, images=()) -> str:
    """The result as markdown: a header (GPU, command, bandwidth, versions, peers), the headline
    view (``lead``), our rows, the anchors' and peers' rows with speed-ups, what was skipped and
    why, and the plots."""
    rows = sorted(res["rows"], key=_row_key)
    ours = {_case(r): r for r in rows if r["impl"] == OURS}
    bw = res["copy_bandwidth_Bps"]
    out = [f"# {res['gpu']}, {res['date']}", "", f"Command: `{res['command']}`", "",
           f"Copy bandwidth {bw / 1e12:.2f} TB/s (bytes read + written). "
           + ", ".join(f"{k} {v}" for k, v in res.get("versions", {}).items()) + "."]
    if res.get("peers"):
        out += ["", "Peers: " + "; ".join(f"{k}: {v}" for k, v in res["peers"].items()) + "."]
    for path in res.get("peer_paths", ()):
        commit = f" (commit {path['commit']})" if path.get("commit") else ""
        out += ["", f"Peer path: `{path['path']}`{commit}."]
    if len(res.get("parts", ())) > 1:
        out += ["", f"Merged from {len(res['parts'])} runs (`--merge`), copy bandwidth of each: "
                + ", ".join(f"{p['copy_bandwidth_Bps'] / 1e12:.2f}" for p in res["parts"]) + " TB/s."]
    if res.get("timing"):
        out += ["", "Timing: " + ", ".join(f"{k} {v}" for k, v in res["timing"].items())
                + (f"; the run took {res['elapsed_s']:.0f} s." if res.get("elapsed_s") else ".")]
    out += ["", "ms: `triton.testing.do_bench` median (L2 flushed between calls), or the wall-clock median "
            "where `timer` says wall; GPU ms: CUDA-graph replays, the kernels without the host; floor: the fewest "
            "bytes / copy bandwidth; full call: wall time per call of back-to-back calls. "
            "! marks an error above the tolerance (rltriton_lite: against the float64 reference; peers: against "
            "rltriton_lite's outputs, or its gradients for fwd+bwd).", "", *lead(res),
            f"## {OURS}", "",
            "| algorithm | shape | dtype | pass | ms | GPU ms (graph) | floor ms | % floor | % floor (graph) "
            "| full call µs | max rel err |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in ours.values():
        graph = r.get("kernel_ms")
        out.append(f"| {r['algorithm']} | {r['B']}×{r['T']} | {r['dtype']} | {r['pass']} | {_sig(r['ms'])} "
                   f"| {_sig(graph)} | {_sig(r['floor_ms'])} | {_sig(r['pct_floor'], ' %')} "
                   f"| {_sig(100 * r['floor_ms'] / graph if graph else None, ' %')} "
                   f"| {_sig(r.get('full_call_us'))} | {_err_cell(r)} |")
    peers = [r for r in rows if r["impl"] != OURS]
    if peers:
        out += ["", "## Anchors and peers", "",
                f"Speed-up: the anchor's or peer's ms / {OURS}'s ms for the same case (> 1: ours is faster).",
                "", "| algorithm | shape | dtype | pass | impl | ms | GPU ms (graph) | % floor | full call µs "
                "| speed-up | max rel err |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in peers:
            mine = ours.get(_case(r))
            speedup = r["ms"] / mine["ms"] if mine else None
            out.append(f"| {r['algorithm']} | {r['B']}×{r['T']} | {r['dtype']} | {r['pass']} | {r['impl']} "
                       f"| {_sig(r['ms'])} | {_sig(r.get('kernel_ms'))} | {_sig(r['pct_floor'], ' %')} "
                       f"| {_sig(r.get('full_call_us'))} | {_sig(speedup, '×')} | {_err_cell(r)} |")
    if res.get("skipped"):
        out += ["", "## Skipped", ""]
        groups: dict = {}
        for s in res["skipped"]:
            groups.setdefault((s["impl"], s["reason"]), []).append(
                f"{s['algorithm']} {s['B']}×{s['T']} {s['dtype']} {s['pass']}")
        out += [f"- {impl}: {reason} ({len(cases)}: {', '.join(cases)})" for (impl, reason), cases in groups.items()]
    if images:
        out += ["", "## Plots", ""] + [f"![{Path(i).stem}]({Path(i).name})" for i in images]
    return "\n".join(out) + "\n"


def _err_cell(r):
    return _num(r.get("max_rel_err"), ".1e") + (" !" if _flagged(r) else "")


def plots(res, stem) -> list[Path]:
    """PNGs next to the JSON: for each (dtype, pass), time per call against shape, one panel per
    algorithm and one line per implementation; and our % of the floor (GPU time and do_bench)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = res["rows"]
    shapes = sorted({(r["B"], r["T"]) for r in rows}, key=_shape_key)
    labels = [f"{B}×{T}" for B, T in shapes]
    impls = sorted({r["impl"] for r in rows}, key=lambda i: (i != OURS, i))
    colors = {impl: "black" if impl == OURS else plt.cm.tab20(k % 20) for k, impl in enumerate(impls)}
    algorithms = sorted({r["algorithm"] for r in rows}, key=_algorithm_key)
    combos = sorted({(r["pass"], r["dtype"]) for r in rows}, key=lambda c: (c[0], _dtype_key(c[1])))

    def series(sel, value):
        """value(row) at each shape of the x axis, NaN where there is no row (the line breaks)."""
        ys = [float("nan")] * len(shapes)
        for r in sel:
            ys[shapes.index((r["B"], r["T"]))] = value(r)
        return ys

    def x_axis(ax, ylabel):
        ax.set_xticks(range(len(shapes)), labels, rotation=40, ha="right", fontsize=7)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.grid(True, alpha=0.3)

    files = []
    for pass_, dtype in combos:
        sel = [r for r in rows if r["dtype"] == dtype and r["pass"] == pass_]
        n_cols = min(4, len(algorithms))
        n_rows = math.ceil(len(algorithms) / n_cols)
        fig, axes = plt.subplots(n_rows, n_cols, figsize=(4.6 * n_cols + 2.5, 3.6 * n_rows), squeeze=False)
        for ax, algorithm in zip(axes.flat, algorithms):
            for impl in impls:
                mine = [r for r in sel if r["algorithm"] == algorithm and r["impl"] == impl]
                if mine:
                    ax.plot(series(mine, lambda r: r["ms"]), marker="o", ms=3, lw=2.5 if impl == OURS else 1.2,
                            color=colors[impl], label=impl)
            ax.set_yscale("log")
            ax.set_title(algorithm, fontsize=10)
            x_axis(ax, "ms per call (log)")
        for ax in list(axes.flat)[len(algorithms):]:
            ax.axis("off")
        handles = {h.get_label(): h for ax in axes.flat for h in ax.get_lines()}
        fig.legend(handles.values(), handles.keys(), loc="upper right", fontsize=8)
        fig.suptitle(f"{res['gpu']} {res['date']}: time per call, {dtype}, {pass_}")
        fig.tight_layout(rect=(0, 0, 0.85, 1))  # the legend on the right
        files.append(Path(f"{stem}-time-{dtype}-{pass_.replace('+', '_')}.png"))
        fig.savefig(files[-1], dpi=80)
        plt.close(fig)

    n_cols = min(2, len(combos))
    n_rows = math.ceil(len(combos) / n_cols)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(6.5 * n_cols, 3.8 * n_rows), squeeze=False)
    for ax, (pass_, dtype) in zip(axes.flat, combos):
        for k, algorithm in enumerate(algorithms):
            mine = [r for r in rows if r["impl"] == OURS and r["algorithm"] == algorithm and r["dtype"] == dtype
                    and r["pass"] == pass_]
            color = plt.cm.tab10(k % 10)
            ax.plot(series(mine, lambda r: 100 * r["floor_ms"] / r["kernel_ms"] if r.get("kernel_ms") else math.nan),
                    "-o", ms=3, color=color, label=algorithm)
            ax.plot(series(mine, lambda r: r["pct_floor"]), "--", color=color, alpha=0.6)
        ax.axhline(100, color="k", lw=1, ls=":")
        ax.set_title(f"{dtype}, {pass_}", fontsize=10)
        x_axis(ax, "% of the memory floor")
    for ax in list(axes.flat)[len(combos):]:
        ax.axis("off")
    handles = {h.get_label(): h for h in axes.flat[0].get_lines() if not h.get_label().startswith("_")}
    fig.legend(handles.values(), handles.keys(), loc="upper right", fontsize=7,
               title="solid: GPU time (graph)\ndashed: do_bench median", title_fontsize=7)
    fig.suptitle(f"{OURS} on {res['gpu']} {res['date']}: (fewest bytes / copy bandwidth) / time")
    fig.tight_layout(rect=(0, 0, 0.86, 1))
    files.append(Path(f"{stem}-floor.png"))
    fig.savefig(files[-1], dpi=80)
    plt.close(fig)
    return files


def merge(paths, out) -> Path:
    """One result from several runs of one GPU (e.g. one process per shape, so that a peer that
    breaks the CUDA context loses its own shape only): rows and skips concatenated, each run's
    command, bandwidth and duration kept under "parts"; the header's bandwidth is their median."""
    parts = [json.loads(Path(p).read_text()) for p in paths]
    if not parts:
        raise SystemExit("bench --merge: no result files given")
    gpus = sorted({p["gpu"] for p in parts})
    if len(gpus) > 1:
        raise SystemExit(f"bench --merge: results of different GPUs ({', '.join(gpus)}) do not make one table")
    res = dict(parts[0], rows=[r for p in parts for r in p["rows"]], skipped=[s for p in parts for s in p["skipped"]])
    res["copy_bandwidth_Bps"] = statistics.median(p["copy_bandwidth_Bps"] for p in parts)
    res["elapsed_s"] = sum(p.get("elapsed_s", 0.0) for p in parts)
    res["command"] = " ; ".join(dict.fromkeys(p["command"] for p in parts))
    res["parts"] = [dict(command=p["command"], copy_bandwidth_Bps=p["copy_bandwidth_Bps"],
                         elapsed_s=p.get("elapsed_s")) for p in parts]
    res["peers"] = {k: v for p in parts for k, v in p.get("peers", {}).items()}
    out = output_path(out, res["gpu"], res["date"])
    out.write_text(json.dumps(res, indent=1))
    return out


def report(json_path) -> list[Path]:
    """Write <stem>.md and the plots next to a result JSON; returns the paths written."""
    json_path = Path(json_path)
    res = json.loads(json_path.read_text())
    stem = json_path.with_suffix("")
    images = plots(res, stem) if res["rows"] else []
    md = stem.with_suffix(".md")
    md.write_text(markdown(res, images))
    return [md, *images]


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------
# --------------------------------------------------------------------------------------------
# Token-level GAE (--tokens): LLM RL's shapes, the per-token loop its stacks run, and the
# γ = λ = 1 shortcut some of them take instead
# --------------------------------------------------------------------------------------------
TOKEN_SHAPES = ((256, 1024), (256, 4096), (64, 32768), (8, 131072), (4, 1048576))
TOKEN_IMPLS = ("per-token loop", "cumsum shortcut (γ = λ = 1)", "rl.gae(mask=)", "integrations.verl")


def token_gae_loop(rewards, values, mask, gamma, lam):
    """GAE over response tokens as verl's ``compute_gae_advantage_return`` computes it (0.9.1,
    written here from its semantics, its whitening left out): one reverse step per token, the
    values and advantages carried through masked tokens. ``(advantages, returns)``."""
    nextvalues = lastgaelam = torch.zeros_like(values[:, 0])
    advantages = []
    for t in reversed(range(rewards.shape[-1])):
        m = mask[:, t]
        delta = rewards[:, t] + gamma * nextvalues - values[:, t]
        nextvalues = values[:, t] * m + (1 - m) * nextvalues
        lastgaelam = (delta + gamma * lam * lastgaelam) * m + (1 - m) * lastgaelam
        advantages.append(lastgaelam)
    advantages = torch.stack(advantages[::-1], dim=1)
    return advantages, advantages + values


def token_cumsum(rewards, values, mask):
    """The γ = λ = 1 shortcut: returns are a reversed cumulative sum, advantages returns - V."""
    returns = (rewards * mask).flip(-1).cumsum(-1).flip(-1)
    return returns - values, returns


def token_inputs(B, T, device, seed=0):
    """Responses right-padded to T (lengths T/2 to T), a span of tool output masked inside every
    other one; an outcome reward at each response's last token plus a per-token KL penalty."""
    g = torch.Generator(device=device).manual_seed(seed)
    pos = torch.arange(T, device=device)
    lengths = torch.randint(T // 2, T + 1, (B, 1), device=device, generator=g)
    mask = pos < lengths
    start = torch.randint(0, T // 4 + 1, (B, 1), device=device, generator=g)
    tool = (pos >= start) & (pos < start + T // 8) & (torch.arange(B, device=device)[:, None] % 2 == 1)
    mask = (mask & ~tool).float()
    rewards = -0.01 * torch.rand(B, T, device=device, generator=g) * mask  # the KL penalty per token
    rewards = rewards + (pos == lengths - 1) * torch.randn(B, 1, device=device, generator=g)  # the outcome
    values = torch.randn(B, T, device=device, generator=g) * mask
    return rewards, values, mask


def tokens(out: Path, shapes=TOKEN_SHAPES, gamma=0.99, lam=0.95, rounds=7) -> dict:
    """Wall time per call (back-to-back calls, one sync, interleaved rounds) of TOKEN_IMPLS at
    ``shapes``, and GPU time (CUDA-graph replay) but for the loop; ours checked against the loop."""
    from . import gae
    from .integrations import verl

    sync = lambda _: torch.cuda.synchronize()  # noqa: E731
    result = dict(gpu=torch.cuda.get_device_name(), date=datetime.date.today().isoformat(), versions=versions(),
                  gamma=gamma, lam=lam, command="python -m rltriton_lite.bench --tokens", rows=[])
    print(f"{'B x T':>14} {'impl':<28} {'wall µs':>12} {'GPU µs':>9} {'÷ ours':>9}  max |A - loop's|")
    for B, T in shapes:
        r, v, m = token_inputs(B, T, "cuda")
        fns = {TOKEN_IMPLS[0]: lambda: token_gae_loop(r, v, m, gamma, lam),
               TOKEN_IMPLS[1]: lambda: token_cumsum(r, v, m),
               TOKEN_IMPLS[2]: lambda: gae(r, v, gamma=gamma, lambda_=lam, mask=m),
               TOKEN_IMPLS[3]: lambda: verl.compute_gae_advantage_return(r, v, m, gamma, lam)}
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        want = fns[TOKEN_IMPLS[0]]()[0]  # (a loop of seconds is timed by this one call: torch ops need no warm-up)
        torch.cuda.synchronize()
        loop_s = [time.perf_counter() - t0]
        if loop_s[0] < 1.0:
            loop_s = [wall_ms(fns[TOKEN_IMPLS[0]], sync) / 1e3 for _ in range(3)]
        err = (fns[TOKEN_IMPLS[2]]().advantages - want).abs().mul(m).max().item()
        fast = TOKEN_IMPLS[1:]
        per = {k: [] for k in fast}
        for k in fast:
            fns[k]()
        n = {k: max(3, min(1000, int(0.02 / max(wall_ms(fns[k], sync) / 1e3, 1e-6)))) for k in fast}
        for _ in range(rounds):
            for k in fast:
                per[k].append(wall_ms(fns[k], sync, n[k]) * 1e3)
        wall = {TOKEN_IMPLS[0]: 1e6 * statistics.median(loop_s), **{k: statistics.median(per[k]) for k in fast}}
        for k in TOKEN_IMPLS:
            gpu = None if k == TOKEN_IMPLS[0] else kernel_ms(fns[k], QUICK)
            row = dict(B=B, T=T, impl=k, wall_us=wall[k], gpu_us=None if gpu is None else 1e3 * gpu,
                       max_abs_err_vs_loop=err if k == TOKEN_IMPLS[2] else None)
            result["rows"].append(row)
            print(f"{B:>5} x {T:<7} {k:<28} {wall[k]:>12.1f} {_num(row['gpu_us'], '.1f'):>9} "
                  f"{wall[k] / wall[TOKEN_IMPLS[2]]:>8.1f}x  {'' if row['max_abs_err_vs_loop'] is None else f'{err:.1e}'}")
        out.write_text(json.dumps(result, indent=1))  # after each shape: a run cut short keeps its rows
        del r, v, m, want
    return result


def parse_shapes(text):
    return [tuple(int(n) for n in s.split("x")) for s in text.split(",") if s]


def output_path(out, gpu, date) -> Path:
    """--out: a .json file, or a folder for <gpu>-<date>.json (with -2, -3… rather than
    overwriting an earlier result)."""
    path = Path(out)
    if path.suffix == ".json":
        path.parent.mkdir(parents=True, exist_ok=True)
        return path
    tag = re.sub(r"[^A-Za-z0-9]+", "-", gpu.replace("NVIDIA", "")).strip("-") or "gpu"
    path.mkdir(parents=True, exist_ok=True)
    candidate, k = path / f"{tag}-{date}.json", 1
    while candidate.exists():
        k += 1
        candidate = path / f"{tag}-{date}-{k}.json"
    return candidate


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m rltriton_lite.bench", description=__doc__.split("\n\n")[0].replace("``", ""),
                                     epilog="Method, columns and how to re-run: benchmarks/README.md.")
    parser.add_argument("--shapes", default=None, help="BxT,... (default: the sweep, %s)"
                        % ",".join(f"{b}x{t}" for b, t in SHAPES))
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS))
    parser.add_argument("--passes", default=",".join(PASSES), help="fwd, fwd+bwd or both")
    parser.add_argument("--peers", default=None, help="comma-separated impls to compare with (default: every "
                        "default peer that imports; 'none' for none; accelerated_scan_warp only when named): "
                        + ", ".join(p.impl for p in PEERS) + f"; the anchors ({', '.join(a.impl for a in ANCHORS)}) "
                        "run whatever it says")
    parser.add_argument("--peer-path", metavar="PATH", action="append", default=[], help="a folder of peer sources "
                        "put ahead of sys.path, e.g. .peers/rl-triton/src from tools/fetch_peers.sh (rl_triton); "
                        "may be repeated")
    parser.add_argument("--quick", action="store_true", help=f"shapes {','.join(f'{b}x{t}' for b, t in QUICK_SHAPES)} "
                        "(unless --shapes) and shorter timing")
    parser.add_argument("--budget", type=float, default=None, help="seconds: start no new shape after this; "
                        "the shapes left are listed as skipped")
    parser.add_argument("--configs", default="", help="tile variants rows:block:warps[:stages];... timed for GAE fp32 fwd")
    parser.add_argument("--out", default="benchmarks/results", help="result JSON, or a folder for <gpu>-<date>.json "
                        "(default: benchmarks/results); the .md and .png files go next to it")
    parser.add_argument("--merge", metavar="JSON", nargs="+", default=None, help="combine result files of one GPU "
                        "(say, one run per shape) into --out, then write its markdown and plots (no GPU needed)")
    parser.add_argument("--tokens", action="store_true", help="instead of the sweep: GAE over LLM response tokens, "
                        "the per-token loop, the γ = λ = 1 cumsum shortcut, rl.gae(mask=) and integrations.verl at "
                        + ", ".join(f"{b}x{t}" for b, t in TOKEN_SHAPES) + " (or --shapes); wall and GPU time")
    parser.add_argument("--report", metavar="JSON", default=None, help="only rewrite the markdown and plots of an "
                        "existing result (no GPU needed)")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.merge:
        out = merge(args.merge, args.out)
        for path in [out, *report(out)]:
            print(path)
        return 0
    if args.report:
        for path in report(args.report):
            print(path)
        return 0
    if not torch.cuda.is_available():
        print("bench: needs a CUDA GPU (timings of the interpreter would mean nothing); "
              "--report works anywhere", file=sys.stderr)
        return 2
    if args.tokens:
        gpu, date = torch.cuda.get_device_name(), datetime.date.today().isoformat()
        # (a folder of their own: the notebooks read the sweep's results from benchmarks/results/)
        out = output_path(args.out if args.out.endswith(".json") else str(Path(args.out) / "tokens"), gpu, date)
        print(f"{gpu}; torch {torch.__version__}; writing {out}")
        tokens(out, parse_shapes(args.shapes) if args.shapes else TOKEN_SHAPES)
        print(out)
        return 0
    import triton
    from tqdm.auto import tqdm

    started = time.perf_counter()
    timing = QUICK if args.quick else Timing()
    shapes = parse_shapes(args.shapes) if args.shapes else (QUICK_SHAPES if args.quick else SHAPES)
    dtypes = [getattr(torch, d) for d in args.dtypes.split(",")]
    algorithms = args.algorithms.split(",")
    for name in algorithms:
        _op(name)  # unknown names fail here, before any measurement
    passes = args.passes.split(",")
    if set(passes) - set(PASSES):
        raise SystemExit(f"bench: --passes takes {', '.join(PASSES)}")
    configs = [tuple(int(n) for n in c.split(":")) for c in args.configs.split(";") if c]
    names = None if args.peers is None else [n for n in args.peers.split(",") if n and n != "none"]
    peer_paths = [add_peer_path(path) for path in args.peer_path]
    peers, status = find_peers(names, "cuda")

    bw = copy_bandwidth(lambda fn: triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median"))
    gpu = torch.cuda.get_device_name()
    date = datetime.date.today().isoformat()
    out = output_path(args.out, gpu, date)
    print(f"{gpu}; copy bandwidth {bw / 1e12:.2f} TB/s (read + write); torch {torch.__version__}, "
          f"triton {triton.__version__}; writing {out}")
    for anchor in ANCHORS:
        print(f"  anchor {anchor.impl:<22} {', '.join(anchor.algorithms)}")
    for impl, line in status.items():
        print(f"  peer {impl:<24} {line}")
    result = dict(gpu=gpu, copy_bandwidth_Bps=bw, date=date, versions=versions(), peers=status,
                  timing=asdict(timing),
                  command="python -m rltriton_lite.bench " + " ".join(argv if argv is not None else sys.argv[1:]),
                  rows=[], skipped=[])
    if peer_paths:
        result["peer_paths"] = peer_paths
    print(HEADER)
    bar = tqdm(total=len(shapes) * len(dtypes) * len(algorithms) * len(passes), unit="case", file=sys.stderr,
               mininterval=1 if sys.stderr.isatty() else 15)
    sweep = Sweep(result, peers, anchors=ANCHORS, device="cuda", timing=timing, configs=configs, emit=tqdm.write)

    def progress(what):
        bar.set_postfix_str(what, refresh=False)
        bar.update()

    for B, T in shapes:
        if args.budget is not None and time.perf_counter() - started > args.budget:
            sweep.skip("*", "*", B, T, "*", "*", f"--budget {args.budget:.0f} s spent")
            continue
        sweep.shape(B, T, dtypes, algorithms, passes, progress)
        result["elapsed_s"] = time.perf_counter() - started
        tqdm.write(f"-- {B}x{T} done, {result['elapsed_s']:.0f} s so far")
        out.write_text(json.dumps(result, indent=1))  # after each shape: a run cut short keeps its rows
    bar.close()
    result["elapsed_s"] = time.perf_counter() - started
    out.write_text(json.dumps(result, indent=1))
    print("\n".join(lead(result)))  # the device call's output ends with the headline tables
    for path in [out, *report(out)]:
        print(path)
    print(f"bench: {len(result['rows'])} rows, {len(result['skipped'])} skipped, {result['elapsed_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
