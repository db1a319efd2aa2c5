"""Timing helpers and the interactive profiler used by the notebooks.

``ops()`` maps an algorithm name to how to make random inputs for it, how to call it, the
PyTorch code it replaces (a CleanRL-style loop over time, or the eager formula for a loss and for
SAC's one-step target), its reference (``rltriton_lite.reference``), and how many bytes it must
move at the least. ``measure`` times the kernel, the torch path and the code it replaces (labelled
"loop" for the scans, "eager" for the formulas: ``replaced_impl``); ``profiler`` wraps that in
ipywidgets controls and a plot; ``sweep`` runs it over sizes with a progress bar.

On a GPU times are ``triton.testing.do_bench`` medians and the plot shows achieved GB/s against
the measured copy bandwidth (the memory floor). On a CPU the kernels run under the Triton
interpreter, whose times say nothing about GPU speed: there the profiler times what a CPU can
time for real (``cpu_rows``: the package's PyTorch path against the code it replaces, wall clock,
at the shapes RL code uses) and runs the kernel once in the interpreter as a correctness check,
untimed; ``committed`` shows what a GPU measured, from the committed H200 results file
``COMMITTED_RUN`` in benchmarks/results/, read by name (a table and ``committed_chart``). ``table`` prints rows as plain text (for a
normal cell output, which a static render of a notebook shows: the widget's does not), and
``read_wall_probe`` reads the committed wall-time probe (``tools/wall_probe.py``'s output).
The charts of notebook 09 come last: ``floor_chart``, ``peers_chart`` and ``wall_gpu_chart``,
with the data behind each, then one algorithm's: ``committed_rows``, ``committed_table`` and
``committed_chart``.
"""
from __future__ import annotations

import contextlib
import functools
import math
import time
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np
import torch


INTERPRETER_LABEL = "Triton interpreter — not performance"


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def time_ms(fn: Callable, device: str, rep: int = 5) -> float:
    """Median milliseconds per call (do_bench on CUDA; a few wall-clock runs on CPU)."""
    if device == "cuda":
        import triton

        return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")
    return 1e3 * float(np.median(_cpu_seconds(fn, rep)))


def _timed_ms(fn: Callable, device: str, rep: int) -> tuple[float, object]:
    """``time_ms`` of ``fn`` and what its last call returned: checked afterwards without another call
    (on a CPU a call of the replaced loop takes up to a second)."""
    out = {}

    def call():
        out["last"] = fn()

    return time_ms(call, device, rep=rep), out["last"]


def fastest_ms(fn: Callable, calls: int = 5) -> float:
    """The fastest of ``calls`` wall-clock calls after one warm-up call, in ms: on a busy CPU a
    pause only ever adds time, so the fastest call is the steadiest figure."""
    return 1e3 * min(_cpu_seconds(fn, calls))


def _cpu_seconds(fn: Callable, calls: int) -> list:
    fn()  # the first call pays one-off costs: allocations, caches, compilation
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


@functools.lru_cache(maxsize=None)
def copy_bandwidth(device: str = "cuda") -> float | None:
    """Device-to-device copy bandwidth in bytes/s (read + written); None on CPU."""
    if device != "cuda":
        return None
    src = torch.empty(256 << 20, dtype=torch.float32, device=device).uniform_()
    dst = torch.empty_like(src)
    ms = time_ms(lambda: dst.copy_(src), device)
    return 2 * src.numel() * 4 / (ms * 1e-3)


# --------------------------------------------------------------------------------------------
# The algorithms: inputs, call, the PyTorch loop they replace, bytes moved
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Op:
    name: str
    make: Callable  # (B, T, dtype, device, generator) -> dict of tensors
    run: Callable  # (inputs, backend, params) -> output(s)
    loop: Callable  # (inputs, params) -> output(s): the PyTorch code it replaces (a loop over T)
    reference: Callable  # (inputs as float64 NumPy, params) -> the first output, from reference.py
    bytes_per_step: Callable  # (element size in bytes) -> bytes moved per (row, step) at the least
    params: dict  # name -> (low, high, default) of the float parameters

    @property
    def defaults(self) -> dict:
        """The parameters' default values, by name."""
        return {k: v[2] for k, v in self.params.items()}


def _rollout(B, T, dtype, device, g):
    x = lambda scale=1.0: (torch.randn(B, T, generator=g) * scale).to(dtype=dtype, device=device)  # noqa: E731
    r, v = x(), x()
    term = (torch.rand(B, T, generator=g) < 0.02).to(device)
    boot = torch.randn(B, generator=g).to(dtype=dtype, device=device)
    nv = torch.cat([v[:, 1:], boot[:, None]], 1)
    return dict(rewards=r, values=v, terminated=term, bootstrap_value=boot, next_values=nv,
                log_rhos=x(0.5), log_probs=x(0.5) - 1.0, old_log_probs=x(0.5) - 1.0, next_log_probs=x(0.5) - 1.0,
                q1=x(), q2=x())


def as_numpy(x: dict) -> dict:
    """An op's inputs as float64 NumPy arrays, for its reference."""
    return {k: v.double().cpu().numpy() for k, v in x.items()}


def rel_err(out: torch.Tensor, expected) -> float:
    """Max absolute error against ``expected``, relative to its magnitude (at least 1)."""
    out = out.detach().double().cpu().numpy()
    return float(np.max(np.abs(out - expected)) / max(1.0, np.max(np.abs(expected))))


def error(op_: Op, x: dict, backend: str, params: dict, expected=None) -> float:
    """``rel_err`` of ``op_``'s first output on ``x`` against its reference (``expected``, if
    already computed)."""
    out = op_.run(x, backend, params)
    if expected is None:
        expected = op_.reference(as_numpy(x), params)
    return rel_err(out[0] if isinstance(out, tuple) else out, expected)


def rollout_error(name: str, B: int, T: int, device, backend="triton", seed=1, chunk=256) -> float:
    """``error`` of the algorithm ``name`` on the profiler's float32 rollout of B rows × T steps
    (episode ends included), with its default parameters; the scans walk chunks of at most
    ``chunk`` steps, so that a long row crosses chunks on any device."""
    from .config import Config, using

    op_ = op(name)
    params = op_.defaults
    with using(Config(max_block_t=chunk)):
        return error(op_, op_.make(B, T, torch.float32, device, torch.Generator().manual_seed(seed)), backend, params)


def _loop_returns(x, p):
    r, nv, term = x["rewards"].float(), x["next_values"].float(), x["terminated"].float()
    out, carry = torch.empty_like(r), torch.zeros_like(r[:, 0])
    for t in reversed(range(r.shape[1])):
        follow = nv[:, t] if t == r.shape[1] - 1 else carry
        carry = r[:, t] + p["gamma"] * (1 - term[:, t]) * follow
        out[:, t] = carry
    return out


def _loop_gae(x, p):
    r, v, nv = (x[k].float() for k in ("rewards", "values", "next_values"))
    term = x["terminated"].float()
    adv, last = torch.empty_like(r), torch.zeros_like(r[:, 0])
    for t in reversed(range(r.shape[1])):
        delta = r[:, t] + p["gamma"] * nv[:, t] * (1 - term[:, t]) - v[:, t]
        last = delta + p["gamma"] * p["lambda_"] * (1 - term[:, t]) * last
        adv[:, t] = last
    return adv, adv + v


def _loop_td_lambda(x, p):
    r, nv, term = x["rewards"].float(), x["next_values"].float(), x["terminated"].float()
    g, lam = p["gamma"], p["lambda_"]
    out, carry = torch.empty_like(r), torch.zeros_like(r[:, 0])
    for t in reversed(range(r.shape[1])):
        follow = nv[:, t] if t == r.shape[1] - 1 else carry
        carry = r[:, t] + g * (1 - term[:, t]) * ((1 - lam) * nv[:, t] + lam * follow)
        out[:, t] = carry
    return out


def _loop_vtrace(x, p):
    """IMPALA's loop (as in scalable_agent / torchrl): vs - V accumulated backwards."""
    lr, r, v, nv, term = (x[k].float() for k in ("log_rhos", "rewards", "values", "next_values", "terminated"))
    rho = torch.clamp(lr.exp(), max=1.0)
    c = p["lambda_"] * torch.clamp(lr.exp(), max=1.0)
    disc = p["gamma"] * (1 - term)
    deltas = rho * (r + disc * nv - v)
    acc, out = torch.zeros_like(r[:, 0]), torch.empty_like(r)
    for t in reversed(range(r.shape[1])):
        acc = deltas[:, t] + disc[:, t] * c[:, t] * acc
        out[:, t] = acc
    return out + v


def _loop_sac(x, p):
    r, q1, q2, nlp, term = (x[k].float() for k in ("rewards", "q1", "q2", "next_log_probs", "terminated"))
    return r + p["gamma"] * (1 - term) * (torch.minimum(q1, q2) - p["alpha"] * nlp)  # CleanRL's target


def _eager_ppo(x, p):
    """CleanRL's PPO loss, eager PyTorch."""
    ratio = (x["log_probs"].float() - x["old_log_probs"].float()).exp()
    adv = x["values"].float()
    pg = torch.max(-adv * ratio, -adv * torch.clamp(ratio, 1 - p["epsilon"], 1 + p["epsilon"]))
    return pg.mean()


def _eager_crr(x, p):
    adv = x["q1"].float() - x["values"].float()
    w = torch.clamp(torch.exp(adv / p["beta"]), max=20.0)
    return -(w * x["log_probs"].float()).mean()


SCANS = ("discounted_return", "gae", "td_lambda", "vtrace")  # a loop over time is what they replace


def _ops():
    import rltriton_lite as rl
    from rltriton_lite import reference as ref

    gamma, lam = dict(gamma=(0.0, 1.0, 0.99)), dict(lambda_=(0.0, 1.0, 0.95))
    return {
        "discounted_return": Op(
            "discounted_return", _rollout,
            lambda x, be, p: rl.discounted_returns(x["rewards"], gamma=p["gamma"], terminated=x["terminated"],
                                                   bootstrap_value=x["bootstrap_value"], backend=be),
            _loop_returns,
            lambda n, p: ref.discounted_returns(n["rewards"], gamma=p["gamma"], terminated=n["terminated"],
                                                bootstrap_value=n["bootstrap_value"]),
            lambda es: 2 * es + 1, gamma),
        "gae": Op(
            "gae", _rollout,
            lambda x, be, p: rl.gae(x["rewards"], x["values"], gamma=p["gamma"], lambda_=p["lambda_"],
                                    terminated=x["terminated"], bootstrap_value=x["bootstrap_value"], backend=be),
            _loop_gae,
            lambda n, p: ref.gae(n["rewards"], n["values"], gamma=p["gamma"], lambda_=p["lambda_"],
                                 terminated=n["terminated"], bootstrap_value=n["bootstrap_value"])[0],
            lambda es: 4 * es + 1, gamma | lam),
        "td_lambda": Op(
            "td_lambda", _rollout,
            lambda x, be, p: rl.td_lambda(x["rewards"], x["next_values"], gamma=p["gamma"], lambda_=p["lambda_"],
                                          terminated=x["terminated"], backend=be),
            _loop_td_lambda,
            lambda n, p: ref.td_lambda(n["rewards"], n["next_values"], gamma=p["gamma"], lambda_=p["lambda_"],
                                       terminated=n["terminated"]),
            lambda es: 3 * es + 1, gamma | lam),
        "vtrace": Op(
            "vtrace", _rollout,
            lambda x, be, p: rl.vtrace(x["log_rhos"], x["rewards"], x["values"], gamma=p["gamma"], lambda_=p["lambda_"],
                                       terminated=x["terminated"], next_values=x["next_values"], backend=be),
            _loop_vtrace,
            lambda n, p: ref.vtrace(n["log_rhos"], n["rewards"], n["values"], gamma=p["gamma"], lambda_=p["lambda_"],
                                    terminated=n["terminated"], next_values=n["next_values"])[0],
            lambda es: 6 * es + 1, gamma | dict(lambda_=(0.0, 1.0, 1.0))),
        "sac": Op(
            "sac", _rollout,
            lambda x, be, p: rl.sac_targets(x["rewards"], (x["q1"], x["q2"]), x["next_log_probs"], gamma=p["gamma"],
                                            alpha=p["alpha"], terminated=x["terminated"], backend=be),
            _loop_sac,
            lambda n, p: ref.sac_targets(n["rewards"], [n["q1"], n["q2"]], n["next_log_probs"], gamma=p["gamma"],
                                         alpha=p["alpha"], terminated=n["terminated"]),
            lambda es: 5 * es + 1, gamma | dict(alpha=(0.0, 1.0, 0.2))),
        "ppo": Op(
            "ppo", _rollout,
            lambda x, be, p: rl.ppo_clip_loss(x["log_probs"], x["old_log_probs"], x["values"], epsilon=p["epsilon"],
                                              backend=be).loss,
            _eager_ppo,
            lambda n, p: ref.ppo_clip_loss(n["log_probs"], n["old_log_probs"], n["values"], epsilon=p["epsilon"])[0],
            lambda es: 3 * es, dict(epsilon=(0.0, 0.5, 0.2))),
        "crr": Op(
            "crr", _rollout,
            # the loss alone, as the eager formula: need_weights=False (reads log π, Q, V; writes nothing
            # per element)
            lambda x, be, p: rl.crr_loss(x["log_probs"], x["q1"], x["values"], beta=p["beta"], need_weights=False,
                                         backend=be).loss,
            _eager_crr,
            lambda n, p: ref.crr_loss(n["log_probs"], n["q1"], n["values"], beta=p["beta"])[0],
            lambda es: 3 * es, dict(beta=(0.1, 5.0, 1.0))),
    }


OPS: dict[str, Op] = {}


def ops() -> dict[str, Op]:
    """Every profiled algorithm, by name."""
    if not OPS:
        OPS.update(_ops())
    return OPS


def op(name: str) -> Op:
    if name not in ops():
        raise ValueError(f"unknown algorithm {name!r}; profiled ones: {', '.join(OPS)}")
    return OPS[name]


# The PyTorch code a kernel replaces, as an impl: "loop" (a Python loop over time, the scans') or
# "eager" (an eager formula: PPO's and CRR's losses, SAC's one-step target); either name runs it.
REPLACED = ("loop", "eager")


def replaced_impl(name: str) -> str:
    """The impl label of the code that the algorithm ``name``'s kernel replaces: "loop" for the
    scans (a Python loop over time), "eager" for the others (an eager formula, no loop)."""
    return "loop" if name in SCANS else "eager"


def _call(o: Op, x: dict, impl: str, p: dict):
    """One call of ``impl`` ("triton", "torch", or "loop"/"eager": the PyTorch code it replaces)."""
    return o.loop(x, p) if impl in REPLACED else o.run(x, impl, p)


def _first(out):
    return out[0] if isinstance(out, tuple) else out


def measure(name: str, B: int, T: int, dtype=torch.float32, device: str | None = None,
            impls=("triton", "torch", "loop"), seed: int = 0, check: bool = False, **params):
    """Time each implementation once on the same random inputs ("loop" or "eager": the code the
    kernel replaces, whose rows carry ``replaced_impl(name)``). Returns a list of dicts with
    impl, B, T, ms, and on a GPU gbps (bytes moved at the least / time), floor_ms and pct_floor;
    with ``check``, also rel_err: the first output's ``rel_err`` against the float64 reference.
    On a CPU there is no bandwidth to report (the rows have no gbps, and say how they were timed
    in timing: one PyTorch thread, see ``cpu_threads``), and "triton" times the Triton
    interpreter, which says nothing about speed: ``cpu_rows`` times the PyTorch code instead and
    only checks the kernel."""
    device = device or default_device()
    o = op(name)
    p = o.defaults | params
    x = o.make(B, T, dtype, device, torch.Generator().manual_seed(seed))
    es = torch.finfo(dtype).bits // 8
    nbytes = B * T * o.bytes_per_step(es)
    bw = copy_bandwidth(device)
    expected = o.reference(as_numpy(x), p) if check else None
    rows = []
    for impl in impls:
        with cpu_threads(1 if device == "cpu" else None):
            ms, last = _timed_ms(lambda impl=impl: _call(o, x, impl, p), device, rep=3 if device == "cpu" else 5)
        row = dict(impl=replaced_impl(name) if impl in REPLACED else impl, B=B, T=T, ms=ms)
        if device == "cpu":
            row["timing"] = INTERPRETER_LABEL if impl == "triton" else cpu_timing(1, 3)
        if bw is not None:
            row["gbps"] = nbytes / (ms * 1e-3) / 1e9
            row["floor_ms"] = nbytes / bw * 1e3
            row["pct_floor"] = 100 * row["floor_ms"] / ms
        if check:
            row["rel_err"] = rel_err(_first(last), expected)
        rows.append(row)
    return rows


# --------------------------------------------------------------------------------------------
# On a CPU: real timings of the PyTorch code, and the kernel checked (not timed) in the interpreter
# --------------------------------------------------------------------------------------------
# The shapes RL code uses: a few short rollouts and many short ones (as in the committed results),
# and a few long ones (2048 steps, SB3's default; the results' 64×16384 is offered in the
# profiler, where the Python loop takes about a second per call).
CPU_SHAPES = ((16, 128), (4096, 128), (64, 2048))
CPU_REP = 5  # timed calls per median on a CPU (after one warm-up)
# The kernel's correctness run in the interpreter: 4 rows × 64 steps in 16-step chunks, so that
# each row crosses three chunk boundaries (the carry between chunks is checked too).
CHECK_SHAPE, CHECK_CHUNK = (4, 64), 16
CHECK_LABEL = "not timed: a correctness run of the Triton interpreter (its times are not performance)"
IMPL_ROLES = {"loop": "the Python loop over time it replaces", "eager": "the eager PyTorch formula it replaces",
              "torch": "rltriton_lite's PyTorch path", "triton": "rltriton_lite's Triton kernel"}


def cpu_timing(threads: int, rep: int = CPU_REP) -> str:
    """How a CPU's times were taken, in words."""
    return (f"wall clock on this CPU, {threads} PyTorch thread{'s' if threads > 1 else ''}, median of {rep} "
            f"call{'s' if rep > 1 else ''} after a warm-up: real timing")


def impl_role(name: str, impl: str) -> str:
    """What ``impl`` is for the algorithm ``name``, in words ("loop" or "eager": the code the kernel
    replaces, named as ``replaced_impl(name)`` says it is)."""
    if impl not in REPLACED:
        return IMPL_ROLES[impl]
    if name in SCANS:
        return "the Python loop over time it replaces (CleanRL-style)"
    if name == "sac":
        return "the eager formula it replaces (CleanRL's one-line target)"
    return "the eager PyTorch formula it replaces"


@contextlib.contextmanager
def cpu_threads(n: int | None):
    """Run the block with ``n`` PyTorch CPU threads (None: as set), then restore the setting. On a
    shared or busy machine, one thread gives steady times: a multi-threaded op waits for its
    slowest thread, and a thread the OS pauses can make one call 100× slower than the next."""
    before = torch.get_num_threads()
    if n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def cpu_rows(name: str, shapes=CPU_SHAPES, seed: int = 0, threads: int | None = 1, rep: int = CPU_REP,
             check: bool = True, **params) -> list[dict]:
    """What a CPU can say about ``name``: at each of ``shapes``, the wall time per call of the
    PyTorch code the kernel replaces (impl ``replaced_impl(name)``: "loop", the Python loop over
    time, for the scans; "eager", the eager formula, for PPO, SAC and CRR) and of the package's
    PyTorch path ("torch"), on the same float32 inputs, each checked against the float64
    reference (rel_err); then one "triton" row, the kernel run once in the Triton interpreter at
    ``CHECK_SHAPE`` and checked, with no time (ms None): the interpreter runs each GPU program in
    Python, so its times say nothing about a GPU. Every row has impl, role, B, T, ms, replaced_x
    (the replaced code's time ÷ this row's), rel_err and timing (how it was measured, in words). Times are medians of ``rep`` calls with ``threads`` PyTorch threads
    (default one: steady on a busy machine, see ``cpu_threads``; None: as set). ``check=False``
    leaves the kernel's row out (its first run in the interpreter takes a second or two)."""
    from .config import Config, using

    o = op(name)
    p = o.defaults | params
    rows = []
    for B, T in shapes:
        x = o.make(B, T, torch.float32, "cpu", torch.Generator().manual_seed(seed))
        expected = o.reference(as_numpy(x), p)
        pair = []
        for impl in (replaced_impl(name), "torch"):
            with cpu_threads(threads):
                ms, last = _timed_ms(lambda impl=impl: _call(o, x, impl, p), "cpu", rep=rep)
            pair.append(dict(impl=impl, role=impl_role(name, impl), B=B, T=T, ms=ms,
                             rel_err=rel_err(_first(last), expected),
                             timing=cpu_timing(threads or torch.get_num_threads(), rep)))
        for row in pair:
            row["replaced_x"] = pair[0]["ms"] / row["ms"]
        rows += pair
    if not check:
        return rows
    B, T = CHECK_SHAPE
    x = o.make(B, T, torch.float32, "cpu", torch.Generator().manual_seed(seed))
    with using(Config(max_block_t=CHECK_CHUNK)):
        err = error(o, x, "triton", p)
    rows.append(dict(impl="triton", role=impl_role(name, "triton"), B=B, T=T, ms=None, replaced_x=None, rel_err=err,
                     timing=CHECK_LABEL))
    return rows


def cpu_why(name: str) -> str:
    """Why the replaced code's time ÷ the PyTorch path's (the loop's, or the eager formula's) is
    what it is on a CPU, for ``name``, in words."""
    if name in SCANS:
        return ("Why: the loop runs T Python iterations of a dozen or so small tensor ops (notebook 08 counts 15 for "
                "GAE), each with a fixed cost of a "
                "few µs; the PyTorch path runs ⌈log₂ T⌉ rounds of a dozen or more whole-tensor ops (a scan; 18 a round for GAE), so it pays "
                "the fixed costs far less often but passes over all B×T elements ⌈log₂ T⌉ times. Few rows and "
                "many steps: the fixed costs dominate and the PyTorch path wins; many rows and few steps: memory "
                "passes dominate and the loop can win. A CPU has no launch to save: on a GPU each small op is "
                "also a kernel launch, and the fused kernel passes over memory once.")
    if name == "sac":
        what = ("CleanRL's target is one expression (a few whole-tensor ops, no loop over time); the PyTorch path "
                "is the general soft λ-return, which runs the scan (⌈log₂ T⌉ rounds) even at λ = 0")
    else:
        extra = {"ppo": "two diagnostics (the clip fraction and the approximate KL)",
                 "crr": "the weights and advantages it can return"}.get(name, "what it returns besides the loss")
        what = ("both are a few whole-tensor ops (no loop over time), but the PyTorch path also selects masked "
                f"steps away and computes {extra}")
    return (f"Why: {what}: more passes over memory, and at small shapes the package function's fixed cost per "
            "call (argument checks, the custom op's dispatch) shows too, so on a CPU it is the slower one. On a "
            "GPU each of those ops is also a kernel launch and a pass over memory, which the fused kernel "
            "replaces with one: see the GPU figures.")


def plot(rows, ax_time, ax_bw, title=""):
    """Bar chart of times and of achieved GB/s (with the copy bandwidth as the ceiling): the GPU
    profiler's plot. Rows without bandwidth (a CPU's) get no bandwidth panel, and their times
    are labelled ``INTERPRETER_LABEL``: use ``cpu_plot`` for ``cpu_rows``."""
    names = [r["impl"] for r in rows]
    colors = [IMPL_COLORS.get(n, "gray") for n in names]
    ax_time.clear()
    ax_bw.clear()
    ax_time.bar(names, [r["ms"] for r in rows], color=colors)
    ax_time.set_yscale("log")
    ax_time.set_ylabel("ms per call (log)")
    bw = copy_bandwidth(default_device())
    if bw is not None and all("gbps" in r for r in rows):
        ax_time.set_title(title)
        ax_bw.bar(names, [r["gbps"] for r in rows], color=colors)
        ax_bw.set_ylabel("GB/s moved (at the least)")
        ax_bw.axhline(bw / 1e9, color="k", ls="--", lw=1)
        ax_bw.text(0, bw / 1e9, " copy bandwidth: the floor", va="bottom")
        ax_bw.set_title("achieved bandwidth")
    else:
        ax_time.set_title(f"{title}\n{INTERPRETER_LABEL}".strip())
        ax_bw.set_axis_off()
        ax_bw.text(0.5, 0.5, f"bandwidth: n/a on a CPU\n({INTERPRETER_LABEL})", ha="center", va="center",
                   transform=ax_bw.transAxes)


IMPL_COLORS = {"triton": "tab:green", "torch": "tab:blue", "loop": "tab:red", "eager": "tab:red"}


def _ms_text(v: float) -> str:
    return f"{v:,.0f}" if v >= 1000 else f"{v:.3g}"


def cpu_plot(rows, name: str):
    """``cpu_rows``' timings as a figure at most ``CHART_MAX_WIDTH_PX`` wide: per shape, the
    replaced code's ("loop" or "eager") and the PyTorch path's ms per call on a log axis, each bar
    labelled, and the replaced ÷ PyTorch path ratio under each shape ("loop ÷ torch path", or
    "eager formula ÷ torch path"). The kernel's check (no time) is in the title."""
    import textwrap

    import matplotlib.pyplot as plt

    timed = [r for r in rows if r["ms"] is not None]
    shapes = list(dict.fromkeys((r["B"], r["T"]) for r in timed))
    width = min(CHART_MAX_WIDTH_PX / 100 - 0.5, max(7.0, 1.9 * len(shapes) + 3))  # inches at 100 dpi
    fig, ax = plt.subplots(figsize=(width, 3.8), dpi=100, layout="constrained")
    replaced = next((r["impl"] for r in timed if r["impl"] in REPLACED), replaced_impl(name))
    for dx, impl in [(-0.2, replaced), (0.2, "torch")]:
        sel = {(r["B"], r["T"]): r for r in timed if r["impl"] == impl}
        xs = [i for i, s in enumerate(shapes) if s in sel]
        if not xs:
            continue
        vals = [sel[shapes[i]]["ms"] for i in xs]
        bars = ax.bar([i + dx for i in xs], vals, 0.4, color=IMPL_COLORS[impl],
                      label=f"{impl}: {sel[shapes[xs[0]]]['role']}")
        ax.bar_label(bars, labels=[_ms_text(v) for v in vals], fontsize=8, padding=2)
    ratio = {(r["B"], r["T"]): r["replaced_x"] for r in timed if r["impl"] == "torch"}
    what = RATIO_WORDS[replaced]
    ax.set_xticks(range(len(shapes)), [shape_name(s) + (f"\n{what} ÷ torch path: {ratio[s]:.2g}×" if s in ratio else "")
                                       for s in shapes])
    ax.set_yscale("log")
    lo, hi = min(r["ms"] for r in timed), max(r["ms"] for r in timed)
    ax.set_ylim(lo / 3, hi * 40)  # room for the labels and the legend
    ax.set_xlabel("shape (rows B × steps T), float32")
    ax.set_ylabel("ms per call (log scale)")
    ax.legend(fontsize=8, loc="upper left")
    checks = [r for r in rows if r["ms"] is None]
    note = "".join(f"\n{r['impl']} kernel: rel. error {r['rel_err']:.1e} at {shape_name((r['B'], r['T']))}, "
                   "a correctness run of the Triton interpreter, not timed (not performance)" for r in checks)
    chars = int(width * 100 / 6.4)  # characters of 9-point text that fit the figure's width
    title = "\n".join(textwrap.fill(line, chars) for line in f"{name}: {timed[0]['timing']}{note}".split("\n"))
    ax.set_title(title, fontsize=9)
    return fig


def profiler(name: str, B: int | None = None, T: int | None = None):
    """Live profiling of ``name`` on this machine, as ipywidgets controls and a plot; the
    callback runs once with the defaults, so headless execution covers it. Returns
    ``(widget, last_rows)``; ``last_rows`` is a list updated on every run, each row with a
    rel_err against the float64 reference.

    On a GPU: controls for B, T, dtype and the algorithm's parameters drive ``measure`` (the
    Triton kernel, the PyTorch path and the PyTorch code it replaces, timed with do_bench) and
    ``plot`` (time and achieved bandwidth against the copy bandwidth). On a CPU: ``cpu_rows`` at
    the shapes picked (``CPU_SHAPES``, or B×T if given) and ``cpu_plot``: the PyTorch path against
    the code it replaces, in real wall-clock time, and the kernel checked, not timed, in the
    Triton interpreter. For the GPU's figures on a CPU, see ``committed``."""
    import textwrap

    import ipywidgets as w
    import matplotlib.pyplot as plt

    device = default_device()
    o = op(name)
    controls = {}
    if device == "cuda":
        B = B or 4096
        T = T or 1024
        controls.update(
            B=w.Dropdown(options=sorted({4, 16, 256, 4096, 16384, B}), value=B, description="rows B"),
            T=w.Dropdown(options=sorted({16, 128, 1024, 4096, T}), value=T, description="steps T"),
            dtype=w.Dropdown(options=["float32", "bfloat16"], value="float32", description="dtype"),
        )
    else:
        picked = [(B or 4096, T or 128)] if B or T else list(CPU_SHAPES)
        options = list(dict.fromkeys(list(CPU_SHAPES) + [(256, 1024), (64, 16384)] + picked))
        controls["shapes"] = w.SelectMultiple(options=[(shape_name(s), s) for s in options], value=picked,
                                              description="B × T", rows=len(options))
    for k, (lo, hi, default) in o.params.items():
        controls[k] = w.FloatSlider(min=lo, max=hi, step=0.01, value=default, description=k)
    out = w.Output()
    last_rows: list = []

    def run(**kw):
        if device == "cuda":
            dtype = getattr(torch, kw.pop("dtype"))
            B_, T_ = kw.pop("B"), kw.pop("T")
            rows = measure(name, B_, T_, dtype, device, check=True, **kw)
        else:
            rows = cpu_rows(name, list(kw.pop("shapes")) or [CPU_SHAPES[0]], **kw)
        last_rows[:] = rows
        with out:
            out.clear_output(wait=True)
            if device == "cuda":
                fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.2))
                plot(rows, a1, a2, f"{name}: {B_}×{T_} {dtype}".replace("torch.", ""))
                plt.tight_layout()
                plt.show()
                print(live_table(rows))
            else:
                cpu_plot(rows, name)
                plt.show()
                print(live_table(rows))
                print(textwrap.fill(cpu_why(name), 110))

    ui = w.interactive(run, {"manual": True, "manual_name": "run"}, **controls)
    run(**{k: c.value for k, c in controls.items()})
    return w.VBox([ui, out]), last_rows


_PROFILER_COLUMNS = dict(impl="impl", B="B", T="T", ms="ms", gbps="GB/s", floor_ms="floor ms", pct_floor="% floor",
                         rel_err="rel. error")
# the replaced code in a ratio's words: the loop over time, or the eager formula
RATIO_WORDS = {"loop": "loop", "eager": "eager formula"}
# ``cpu_rows``' columns for ``table``, whatever the algorithms (the ratio: the replaced code's time ÷ this row's)
CPU_COLUMNS = dict(impl="impl", B="B", T="T", ms="ms per call", replaced_x="replaced ÷ this", rel_err="rel. error")


def cpu_columns(name: str | None = None) -> dict:
    """``cpu_rows``' columns for ``table``, the ratio's header naming what the algorithm ``name``
    replaces ("loop ÷ this" for the scans, "eager ÷ this" for PPO, SAC and CRR); without a name,
    ``CPU_COLUMNS`` ("replaced ÷ this", for rows of several algorithms)."""
    if name is None:
        return dict(CPU_COLUMNS)
    return CPU_COLUMNS | dict(replaced_x=f"{replaced_impl(name)} ÷ this")


def live_table(rows) -> str:
    """The profiler's rows (``measure``'s or ``cpu_rows``') as a plain-text table, with a line
    under it saying what each impl is and how it was timed."""
    import textwrap

    roles = "; ".join(f"{r['impl']}: {r.get('role', IMPL_ROLES.get(r['impl'], r['impl']))}"
                      for r in {r["impl"]: r for r in rows}.values())
    if any("timing" in r for r in rows):  # a CPU's rows
        timings: dict = {}
        for r in rows:
            where = "" if r["ms"] is not None else f" at {shape_name((r['B'], r['T']))}"
            timings.setdefault(r["timing"], []).append(r["impl"] + where)
        notes = [roles + "."] + [f"{', '.join(dict.fromkeys(v))}: {k}." for k, v in timings.items()]
        replaced = {r["impl"] for r in rows if r["impl"] in REPLACED}
        columns = CPU_COLUMNS | (dict(replaced_x=f"{replaced.pop()} ÷ this") if len(replaced) == 1 else {})
        text = table(rows, {k: v for k, v in columns.items() if any(k in r for r in rows)}, digits=3)
    else:
        gpu = "gbps" in rows[0] if rows else False
        how = ("live on this GPU: do_bench medians; GB/s and % floor count the fewest bytes the call must move" if gpu
               else f"{INTERPRETER_LABEL}: these times check the kernels, they say nothing about a GPU")
        notes = [roles + ".", f"ms: {how}."]
        text = table(rows, {k: v for k, v in _PROFILER_COLUMNS.items() if any(k in r for r in rows)})
    return "\n".join([text] + [textwrap.fill(n, 110) for n in notes])


def _cell(v, digits: int) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    if isinstance(v, float):
        if v == 0 or not np.isfinite(v):
            return "0" if v == 0 else str(v)
        mag = int(np.floor(np.log10(abs(v))))
        if -3 <= mag < 6:  # plain decimals: 0.08038, 27.68, 12123
            return f"{v:.{max(0, digits - 1 - mag)}f}"
        if 6 <= mag < 9:  # whole numbers, thousands separated: 1,629,911
            return f"{v:,.0f}"
        return f"{v:.{digits - 1}e}"
    return str(v)


def table(rows, columns=None, digits: int = 4) -> str:
    """``rows`` (dicts) as a plain-text table: a header, a rule, one line per row. ``columns``:
    the keys to show, in order, as a list, or a dict of key -> header (default: every key of the
    rows, first seen first). Floats get ``digits`` significant digits (from a million up to a
    billion: whole, thousands separated), a missing key or None shows as n/a, "" as a blank;
    numbers are right-aligned, text left-aligned. Print it in a notebook cell of
    its own: a widget's output does not survive a static render."""
    if columns is None:
        columns = list(dict.fromkeys(k for r in rows for k in r))
    if not columns:
        return ""
    headers = dict(columns) if isinstance(columns, dict) else {c: str(c) for c in columns}
    keys = list(headers)
    cells = [[_cell(r.get(k), digits) for k in keys] for r in rows]
    numeric = [all((isinstance(r.get(k), (int, float, type(None))) and not isinstance(r.get(k), bool))
                   or r.get(k) == "" for r in rows) for k in keys]
    widths = [max([len(headers[k])] + [len(c[i]) for c in cells]) for i, k in enumerate(keys)]

    def line(values):
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)).rstrip()

    return "\n".join([line([headers[k] for k in keys]), "  ".join("-" * w for w in widths)] + [line(c) for c in cells])


def wall_probe_us(path=None) -> dict:
    """A wall-time probe's µs per call by shape and call: {(B, T): {(pass, name): us}}, from
    ``read_wall_probe(path)`` (default: ``COMMITTED_WALL`` in ``results_folder()``)."""
    import os

    path = path or os.path.join(results_folder(), COMMITTED_WALL)
    return {(sec["B"], sec["T"]): {(r["pass"], r["name"]): r["us"] for r in sec["rows"]} for sec in read_wall_probe(path)}


def result_row(res, algorithm, B, T, impl="rltriton_lite", dtype="float32", pass_="fwd") -> dict:
    """The one row of a committed run for this case."""
    (r,) = [r for r in res["rows"] if (r["algorithm"], r["impl"], r["B"], r["T"], r["dtype"], r["pass"])
            == (algorithm, impl, B, T, dtype, pass_)]
    return r


def wall_range(res, probe_us, probe_names, impl, algorithm, shape, pass_, dtype="float32") -> tuple:
    """A call's (lowest, highest) wall µs per call over the two sources that timed it: the run ``res``
    and the wall probe's ``probe_us`` (wall_probe_us), where ``probe_names`` names ``impl`` there."""
    us = [result_row(res, algorithm, *shape, impl=impl, dtype=dtype, pass_=pass_)["full_call_us"]]
    name = probe_names[impl].format(algorithm) if impl in probe_names else None
    if (pass_, name) in probe_us.get(tuple(shape), {}):
        us.append(probe_us[tuple(shape)][pass_, name])
    return min(us), max(us)


WALL_PROBE_SHAPES = ((16, 128), (4096, 128), (64, 16384))  # the shapes tools/wall_probe.py times


def timed_twice(res, probe_us, dtype="float32") -> dict:
    """{(algorithm, (B, T), pass): (the run's wall µs, the wall probe's)} for each of our calls that both
    sources of one session timed: the pairs the course's drift bound (2.2×) is read from."""
    return {(a, s, p): (result_row(res, a, *s, dtype=dtype, pass_=p)["full_call_us"], probe_us[s][p, a])
            for a in [*ops(), "linear_scan"] for s in WALL_PROBE_SHAPES for p in ("fwd", "fwd+bwd")}


def noise_verdict(ours, other, x) -> str:
    """The noise rule (notebook 14, section 6) on two wall ranges (lowest µs, highest µs): one call is
    faster only where the ranges' nearest ends are more than ``x`` apart."""
    return "ours faster" if other[0] > x * ours[1] else "peer faster" if ours[0] > x * other[1] else "within the noise"


def _loss_lines(path):
    """(key, the line's words) for each timed call in ``tools/wall_probe.py --losses``'s output (default:
    ``COMMITTED_LOSS_WALL`` in ``results_folder()``), key = (loss, (B, T), pass, impl)."""
    import os

    with open(path or os.path.join(results_folder(), COMMITTED_LOSS_WALL), encoding="utf-8") as f:
        for line in f:
            if line.startswith("loss "):
                words = line.split()
                _, loss, shape, pass_, impl = words[:5]
                yield (loss, tuple(map(int, shape.split("x"))), pass_, impl), words


def read_backward_profile(path=None) -> dict:
    """``tools/backward_profile.py``'s output (default: ``COMMITTED_BACKWARD`` in ``results_folder()``):
    ``{"head": its first line, "calls": {call: µs per call}, "ops": {torch.profiler row: (self CPU µs, CPU
    time avg µs, CUDA time avg µs, number of calls)}, "host_us": the profiled host time, the profiler's own
    start ("Activity Buffer Request") left out}``."""
    import os
    import re

    with open(path or os.path.join(results_folder(), COMMITTED_BACKWARD), encoding="utf-8") as f:
        lines = f.read().splitlines()

    def us(field):  # a torch.profiler time ("6.172ms", "778.082us") in µs
        return float(field[:-2]) * (1e3 if field.endswith("ms") else 1.0)
    calls = {ln[5:].rsplit(None, 2)[0].strip(): float(ln.split()[-2]) for ln in lines if ln.startswith("call ")}
    rows = [re.split(r"\s{2,}", ln.strip()) for ln in lines if re.search(r"\s[\d.]+%\s", ln)]
    ops = {c[0]: (us(c[2]), us(c[5]), us(c[9]), int(c[10])) for c in rows}
    total = us(next(ln for ln in lines if ln.startswith("Self CPU time total:")).split()[-1])
    return {"head": lines[0], "calls": calls, "ops": ops, "host_us": total - ops["Activity Buffer Request"][0]}


def read_loss_wall(path=None) -> dict:
    """``tools/wall_probe.py --losses``'s output (default: ``COMMITTED_LOSS_WALL`` in ``results_folder()``):
    ``{(loss, (B, T), pass, impl): (µs per call, ratio's median, lowest, highest)}``, each ratio that
    impl's wall time ÷ ours within one round of the interleaved rounds."""
    out = {}
    for key, words in _loss_lines(path):
        us, _us, _ratio, med, lo, hi = words[5:11]  # (then "gpu X us")
        out[key] = (float(us), float(med), float(lo), float(hi))
    return out


def read_time_group_cost(path) -> tuple[list[str], dict]:
    """``tools/time_group_cost.py``'s output: (its lines, ``{(shape, call): [(wall µs, GPU µs) of the plain
    call, the split with a local gather, the split over NCCL on 1 rank, the gather + one call]}``), shape as
    "1 x 1048576" and call as "gae forwards"."""
    import re

    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    cost = {}
    for line in lines:
        m = re.match(r"\s*(\d+ x \d+)\s+(\D+?)\s+([\d.]+ \|.*)$", line)
        if m:
            numbers = [float(x) for x in re.findall(r"[\d.]+", m.group(3))]
            cost[m.group(1), m.group(2)] = list(zip(numbers[0::2], numbers[1::2]))
    return lines, cost


def read_loss_gpu(path=None) -> dict:
    """The GPU time of each call in ``tools/wall_probe.py --losses``'s output (default:
    ``COMMITTED_LOSS_WALL`` in ``results_folder()``), measured in the same process on the same card as
    its wall time: ``{(loss, (B, T), pass, impl): GPU µs per call, or None}``, the keys of
    ``read_loss_wall``. Each figure is the line's trailing ``gpu X us`` field (``bench.kernel_ms``, the
    median of CUDA-graph replays); ``gpu n/a us`` (no graph captured the call) reads None."""
    out = {}
    for key, words in _loss_lines(path):
        gpu = words[words.index("gpu") + 1]
        out[key] = None if gpu == "n/a" else float(gpu)
    return out


def eager_against_ours(loss: str, path=None) -> dict:
    """A fused loss against its eager formula, with the backward, in the paired loss probe (``read_loss_wall``
    and ``read_loss_gpu``; notebooks 05-07, "How fast is it"): ``{(B, T): {"ours_wall_us", "eager_wall_us",
    "ours_gpu_us", "eager_gpu_us", "gpu_ratio", "wall_ratio"}}`` at each shape the probe timed both, the
    ratios eager ÷ ours (the wall one the median of the interleaved rounds)."""
    wall, gpu = read_loss_wall(path), read_loss_gpu(path)
    out = {}
    for name, shape, pass_, impl in wall:
        eager = (name, shape, pass_, "pytorch_eager")
        if (name, pass_, impl) == (loss, "fwd+bwd", OURS_IMPL) and eager in wall:
            ours = (name, shape, pass_, impl)
            out[shape] = {"ours_wall_us": wall[ours][0], "eager_wall_us": wall[eager][0], "ours_gpu_us": gpu[ours],
                          "eager_gpu_us": gpu[eager], "gpu_ratio": gpu[eager] / gpu[ours], "wall_ratio": wall[eager][1]}
    return out


def eager_rows(against: dict) -> list[dict]:
    """``eager_against_ours``' shapes as ``table`` rows, smallest first: the table 05-07 print in "How fast is it"
    (its wall ratio is the rounds' median, not the quotient of the two wall columns)."""
    return [{"B×T": f"{b}×{t}", "ours wall µs": v["ours_wall_us"], "eager wall µs": v["eager_wall_us"],
             "ours GPU µs": v["ours_gpu_us"], "eager GPU µs": v["eager_gpu_us"], "eager ÷ ours, wall*": v["wall_ratio"],
             "eager ÷ ours, GPU": v["gpu_ratio"]} for (b, t), v in sorted(against.items(), key=lambda kv: kv[0][0] * kv[0][1])]


def down(x: float, digits: int = 1) -> float:
    """``x`` rounded down to ``digits`` decimals: how the course writes a range's low end, or an "at least"
    figure (notebook 14, section 7). A value a hair off a boundary by float arithmetic stays on it."""
    return math.floor(round(x * 10**digits, 9)) / 10**digits


def up(x: float, digits: int = 1) -> float:
    """``x`` rounded up to ``digits`` decimals: how the course writes a range's high end, or an "up to" figure."""
    return math.ceil(round(x * 10**digits, 9)) / 10**digits


def outward(values, digits: int) -> tuple:
    """(lowest, highest) of ``values`` rounded outwards to ``digits`` decimals, the course's rule for a range
    (a value a hair off a boundary by float arithmetic stays on it): ``down`` the lowest, ``up`` the highest."""
    return down(min(values), digits), up(max(values), digits)


def two_figures(x: float, rounding=round) -> str:
    """``x`` to two significant figures as text, rounded by ``rounding`` (``down``, ``up`` or ``round``):
    0.384 -> "0.38" rounded down, 41,023 -> "42,000" rounded up."""
    digits = 1 - math.floor(math.log10(x))
    v = rounding(x, digits)
    return f"{v:,.0f}" if v >= 10 else f"{v:.{digits}f}"


def two_figure_range(values) -> str:
    """The lowest to the highest of ``values`` to two significant figures, rounded outwards: "0.69–9.8".
    One value: that value, rounded to nearest. No value: ""."""
    values = list(values)
    if len(values) < 2:
        return two_figures(values[0]) if values else ""
    return f"{two_figures(min(values), down)}–{two_figures(max(values), up)}"


def spread(values) -> str:
    """The lowest to the highest of ``values`` as text, rounded outwards: whole from 10 up, else two
    significant figures; one figure alone when both ends read the same: "1.9–15", or "2.0" for [2.0, 2.0]."""
    values = list(values)

    def decimals(x):
        return 0 if x >= 10 else 1 - math.floor(math.log10(x))

    lo, hi = down(min(values), decimals(min(values))), up(max(values), decimals(max(values)))
    lo, hi = (f"{x:.{decimals(x)}f}" for x in (lo, hi))
    return lo if lo == hi else f"{lo}–{hi}"


def read_wall_probe(path) -> list[dict]:
    """The sections of a committed wall-time probe (``tools/wall_probe.py``'s output, e.g.
    ``benchmarks/results/`` + ``COMMITTED_WALL``) that time one shape: a list of dicts with
    B, T, the section's header and its rows, each a dict of pass, name, us (wall time per call of
    back-to-back calls, host included), ratio and anchor (what the ratio divides by: the median
    of the interleaved rounds' ratios). A name timed twice in a section keeps its first row. The
    split sections (one call against its unsplit twin) and the comment lines are left out."""
    import re

    head = re.compile(r"^== (\d+)x(\d+): (.*)$")
    row = re.compile(r"^(fwd\+bwd|fwd)\s+(.+?)\s+([\d.]+) µs\s+([\d.]+)x (.+)$")
    sections: list[dict] = []
    current = None
    with open(path, encoding="utf-8") as f:
        for text in f:
            text = text.rstrip("\n")
            if text.startswith("=="):
                m = head.match(text)
                current = dict(B=int(m[1]), T=int(m[2]), header=m[3], rows=[]) if m else None
                if current is not None:
                    sections.append(current)
            elif current is not None and (m := row.match(text)):
                if not any(r["pass"] == m[1] and r["name"] == m[2] for r in current["rows"]):
                    current["rows"].append({"pass": m[1], "name": m[2], "us": float(m[3]), "ratio": float(m[4]),
                                            "anchor": m[5]})
            elif text.startswith("#"):
                current = None
    return sections


def sweep(name: str, sizes, dtype=torch.float32, impls=("triton", "torch"), **params):
    """``measure`` over ``sizes`` [(B, T), ...] with a tqdm progress bar; a list of rows."""
    from tqdm.auto import tqdm

    rows = []
    for B, T in tqdm(sizes, desc=name):
        rows += measure(name, B, T, dtype, impls=impls, **params)
    return rows


def demo(argv=None) -> int:
    """``python -m rltriton_lite``: every algorithm on random rollouts with episode ends, checked
    against the NumPy reference loop, as a table; on a GPU beside the PyTorch code it replaces."""
    import argparse

    import rltriton_lite as rl
    from rltriton_lite._triton import HAS_TRITON, INTERPRET

    device = default_device()
    parser = argparse.ArgumentParser(prog="python -m rltriton_lite", description=demo.__doc__.split(":", 1)[1].strip())
    parser.add_argument("--batch", type=int, default=4096 if device == "cuda" else 8)
    parser.add_argument("--steps", type=int, default=1024 if device == "cuda" else 128)
    args = parser.parse_args(argv)
    B, T = args.batch, args.steps

    backends = (["triton"] if HAS_TRITON and (device == "cuda" or INTERPRET) else []) + ["torch"]
    where = torch.cuda.get_device_name() if device == "cuda" else "CPU" + (" (Triton interpreter)" if INTERPRET else "")
    print(f"rltriton_lite {rl.__version__} on {where}: {B} rollouts x {T} steps, float32, ~2% episode ends; "
          "each output checked against the float64 NumPy loop (rltriton_lite.reference)\n")
    header = f"{'algorithm':<18} {'backend':<7} {'max rel err':>11} {'time ms':>9}"
    if device == "cuda":
        header += f" {'PyTorch code ms':>16} {'speed-up':>9}"
    print(header)
    print("-" * len(header))
    worst = 0.0
    for name, op_ in ops().items():
        params = op_.defaults
        x = op_.make(B, T, torch.float32, device, torch.Generator().manual_seed(0))
        expected = op_.reference(as_numpy(x), params)
        peer_ms = time_ms(lambda: op_.loop(x, params), device) if device == "cuda" else None
        for be in backends:
            err = error(op_, x, be, params, expected)
            worst = max(worst, err)
            ms = time_ms(lambda: op_.run(x, be, params), device, rep=3)
            line = f"{name:<18} {be:<7} {err:>11.2e} {ms:>9.3f}"
            if peer_ms is not None:
                line += f" {peer_ms:>16.3f} {peer_ms / ms:>8.1f}x"
            print(line)
    if device == "cuda":
        print("\nPyTorch code: what the kernel replaces, timed on the same inputs (a CleanRL-style Python "
              "loop over time for the returns, the eager formula for SAC's one-step target and the losses).")
    else:
        print("\nInterpreter times say nothing about GPU speed: they check the kernels, not their performance.")
    ok = worst < 1e-5
    print(f"\n{'OK' if ok else 'FAILED'}: worst relative error {worst:.2e} against the float64 NumPy loops "
          "(tolerance 1e-5)")
    return 0 if ok else 1


# --------------------------------------------------------------------------------------------
# Charts of the committed results (notebook 09; tests/test_charts.py checks every figure)
# --------------------------------------------------------------------------------------------
# A results file is what ``python -m rltriton_lite.bench`` writes to benchmarks/results/: a dict
# with "gpu", "date", "copy_bandwidth_Bps" and "rows", one row per (algorithm, impl, B, T, dtype,
# pass) with floor_ms, kernel_ms (GPU time: CUDA-graph replays; None where a peer has none) and
# full_call_us (wall time per back-to-back eager call). The helpers below read one dtype of it:
# the data behind each chart (``floor_pct``, ``peer_speedups``, ``wall_vs_gpu``) and the three
# charts (``floor_chart``, ``peers_chart``, ``wall_gpu_chart``), each a matplotlib figure at most
# ``CHART_MAX_WIDTH_PX`` wide whose axes name the dtype, the pass and their units.

CHART_MAX_WIDTH_PX = 1200
CHART_MAX_HEIGHT_IN = 19.5  # the tallest chart, in inches: 1,950 px at the charts' 100 dpi
OURS_IMPL = "rltriton_lite"
# the harness's anchors: baselines for wall time, not peers
ANCHORS = {"bare_triton_launch": "naive GAE kernel, launched bare", "minimal_autograd_fn": "minimal autograd.Function"}
# the anchor each pass's wall time is held against
HEAD_ANCHOR = {"fwd": "bare_triton_launch", "fwd+bwd": "minimal_autograd_fn"}
RL_SHAPES = ((4096, 128), (64, 16384))  # the shapes RL code uses: many short rollouts, a few long ones


# The H200 runs committed with the course, by name. The notebooks read these files, never "the
# newest": a results file that a TA writes into the same folder for their own GPU (``python -m
# rltriton_lite.bench --out benchmarks/results/mygpu.json``) is listed by notebook 09, and changes
# nothing that the notebooks show or assert.
COMMITTED_RUN = "H200-2026-12-06"     # float32 at the shapes RL code uses: notebooks 01-09 and 13
COMMITTED_SWEEP = "H200-2026-11-30d"  # the previous full sweep, bfloat16 too: notebooks 08, 09, 14
COMMITTED_WALL = "H200-2026-12-06-wall.txt"  # tools/wall_probe.py's output (read_wall_probe): notebooks 08, 09, 14
COMMITTED_REPLAY = "checks/H200-2026-12-06-graph-replay.txt"  # tools/graph_replay_probe.py's output: notebook 08
COMMITTED_LOSS_WALL = "checks/H100-2026-12-07-loss-wall.txt"  # wall_probe.py --losses (read_loss_wall, read_loss_gpu): 07-10, 14
COMMITTED_BACKWARD = "checks/H100-2026-12-07-backward-profile.txt"  # tools/backward_profile.py (read_backward_profile): 09, 14


def committed_results(folder=None, run: str = COMMITTED_RUN) -> tuple[str, dict]:
    """The results file ``run`` (its name without ``.json``; default ``COMMITTED_RUN``, the H200 run
    the notebooks assert facts of) in ``folder`` (default ``results_folder()``): its name and its
    contents. Pass another name to read your own GPU's run."""
    import json
    import os

    path = os.path.join(folder or results_folder(), f"{run}.json")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no results file {run}.json in {folder or results_folder()}")
    with open(path, encoding="utf-8") as f:
        return run, json.load(f)


def sources(folder=None):
    """The committed files notebooks 08 and 09 read, loaded once, so their set-up cell stays short.

    Returns a ``types.SimpleNamespace`` with:

    * ``folder``: ``folder``, or ``results_folder()`` by default;
    * ``files``: {key: the file's name in ``folder``} for "run", "wall", "loss", "replay", "sweep", "env",
      "backward" and "percall";
    * ``path``: a function, key -> the file's full path;
    * ``run_name`` and ``run``: the committed run's name and contents, as ``committed_results`` gives them;
    * ``probe``: the wall probe, as ``wall_probe_us`` gives it;
    * ``cards``: {key: "H200" or "H100"}, the card each timing file names: the run's "gpu" field, else
      its first line;
    * ``tags``: {key: the tag that starts a printout of that file, e.g. "H200 run"}, and "here":
      "this machine" for what a notebook counts or times where it runs."""
    import os
    import re
    from types import SimpleNamespace

    folder = folder or results_folder()
    files = {"run": f"{COMMITTED_RUN}.json", "wall": COMMITTED_WALL, "loss": COMMITTED_LOSS_WALL,
             "replay": COMMITTED_REPLAY, "sweep": f"{COMMITTED_SWEEP}.json", "env": "checks/H100-2026-12-07-env.txt",
             "backward": COMMITTED_BACKWARD, "percall": "checks/H100-2026-12-07-per-call.txt"}

    def path(key):
        return os.path.join(folder, files[key])

    run_name, run = committed_results(folder)
    names = {"run": "run", "wall": "wall probe", "loss": "loss probe", "replay": "replay probe",
             "backward": "backward profile"}
    cards = {}
    for key in names:
        if key == "run":
            text = run["gpu"]
        else:
            with open(path(key), encoding="utf-8") as f:
                text = f.readline()
        cards[key] = re.search(r"H\d00", text)[0]
    tags = {key: f"{cards[key]} {name}" for key, name in names.items()} | {"here": "this machine"}
    return SimpleNamespace(folder=folder, files=files, path=path, run_name=run_name, run=run,
                           probe=wall_probe_us(path("wall")), cards=cards, tags=tags)


def newest_results(folder) -> tuple[str, dict]:
    """The newest results file in ``folder`` (latest "date", then file name): its name without
    ``.json``, and its contents."""
    import glob
    import json
    import os

    files = sorted(glob.glob(os.path.join(folder, "*.json")))
    if not files:
        raise FileNotFoundError(f"no benchmark results (*.json) in {folder}")
    loaded = [(json.load(open(f, encoding="utf-8")), f) for f in files]
    res, path = max(loaded, key=lambda rf: (rf[0]["date"], rf[1]))
    return os.path.basename(path)[:-len(".json")], res


def shape_name(shape) -> str:
    """(4096, 128) -> '4096×128' (rows × steps)."""
    return f"{shape[0]}×{shape[1]}"


def speedup_text(x: float) -> str:
    """A speed-up as text: 3 significant digits, thousands separated: 1.52×, 12.1×, 1,630×."""
    return f"{x:.3g}×" if x < 1000 else f"{x:,.0f}×"


def _case(r) -> tuple:
    return r["algorithm"], r["B"], r["T"], r["dtype"], r["pass"]


def result_passes(res) -> list[str]:
    """The passes in the results, forward first."""
    return [p for p in ("fwd", "fwd+bwd") if any(r["pass"] == p for r in res["rows"])]


def our_rows(res, dtype="float32") -> dict:
    """This library's rows of ``dtype``, by (algorithm, B, T, dtype, pass)."""
    ours = {_case(r): r for r in res["rows"] if r["impl"] == OURS_IMPL and r["dtype"] == dtype}
    if not ours:
        raise ValueError(f"no {OURS_IMPL} {dtype} rows in the results")
    return ours


def result_algorithms(res, dtype="float32") -> list[str]:
    """Our algorithms, in the harness's order."""
    return list(dict.fromkeys(k[0] for k in our_rows(res, dtype)))


def result_shapes(res, dtype="float32") -> list[tuple]:
    """Our shapes (B, T), smallest first."""
    return sorted({k[1:3] for k in our_rows(res, dtype)}, key=lambda s: (s[0] * s[1], s))


def result_peers(res) -> list[str]:
    """The peers in the results: every impl but ours and the anchors."""
    return sorted({r["impl"] for r in res["rows"]} - {OURS_IMPL} - set(ANCHORS))


def floor_pct(res, dtype="float32") -> dict:
    """(algorithm, (B, T), pass) -> % of the memory floor by GPU time: 100 × floor ÷ GPU time."""
    return {(k[0], k[1:3], k[4]): 100 * r["floor_ms"] / r["kernel_ms"]
            for k, r in our_rows(res, dtype).items() if r["kernel_ms"]}


def peer_speedups(res, dtype="float32") -> list[dict]:
    """One dict per peer row of ``dtype`` with a matching row of ours: peer, algorithm, shape,
    pass_ and x = the peer's wall time per call ÷ ours (wall time: the one timing every peer
    has; JAX, torchrl and the Python loops have no CUDA-graph GPU time)."""
    ours, peers = our_rows(res, dtype), set(result_peers(res))
    return [dict(peer=r["impl"], algorithm=r["algorithm"], shape=(r["B"], r["T"]), pass_=r["pass"],
                 x=r["full_call_us"] / ours[_case(r)]["full_call_us"])
            for r in res["rows"] if r["impl"] in peers and r["dtype"] == dtype and _case(r) in ours]


def anchor_rows(res, dtype="float32") -> dict:
    """The anchors' rows of ``dtype``, by (impl, B, T, pass)."""
    return {(r["impl"], r["B"], r["T"], r["pass"]): r for r in res["rows"]
            if r["impl"] in ANCHORS and r["dtype"] == dtype}


def wall_vs_gpu(res, dtype="float32", shapes=RL_SHAPES) -> dict:
    """(algorithm, (B, T), pass) -> (wall µs per call, GPU µs per call) of ours at ``shapes``."""
    return {(k[0], k[1:3], k[4]): (r["full_call_us"], 1e3 * r["kernel_ms"])
            for k, r in our_rows(res, dtype).items() if k[1:3] in set(shapes) and r["kernel_ms"]}


def _shape_colors(shapes) -> dict:
    import matplotlib.pyplot as plt

    return dict(zip(shapes, plt.cm.viridis(np.linspace(0.1, 0.85, len(shapes)))))


def _shape_bars(ax, slots, values, j, shapes, colors, labels, horizontal=False, **label_kw):
    """Bar j of len(shapes) in each slot's group, coloured and named by shape j, each labelled."""
    size = 0.8 / len(shapes)
    pos = [i + (j - (len(shapes) - 1) / 2) * size for i in slots]
    draw = ax.barh if horizontal else ax.bar
    bars = draw(pos, values, size, color=colors[shapes[j]], label=shape_name(shapes[j]))
    ax.bar_label(bars, labels=labels, **label_kw)


# a bar label's backing: legible where it crosses a reference line or a neighbouring bar
_LABEL_BOX = dict(boxstyle="square,pad=0.05", facecolor="white", edgecolor="none", alpha=0.8)


def _log_axis(ax, which, unit):
    """A log scale whose ticks read 100 %, 10×, ..."""
    from matplotlib.ticker import FuncFormatter

    getattr(ax, f"set_{which}scale")("log")
    getattr(ax, f"{which}axis").set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}{unit}"))


def _label_panel(ax, title, xlabel, ylabel, legend=None):
    """A panel's title and axis labels, and its legend when ``legend`` holds its options."""
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if legend is not None:
        ax.legend(**legend)


def floor_chart(res, dtype="float32"):
    """How close to the memory floor? One panel per pass, one group per algorithm, one bar per
    shape: % of the floor by GPU time on a log axis, with a dashed line at 100 %."""
    import matplotlib.pyplot as plt

    pct, passes = floor_pct(res, dtype), result_passes(res)
    algs, shapes = result_algorithms(res, dtype), result_shapes(res, dtype)
    colors = _shape_colors(shapes)
    fig, axes = plt.subplots(len(passes), 1, figsize=(11, 3.6 * len(passes)), dpi=100, squeeze=False,
                             layout="constrained")
    for ax, p in zip(axes[:, 0], passes):
        for j, s in enumerate(shapes):
            slots = [i for i, a in enumerate(algs) if (a, s, p) in pct]
            ys = [pct[algs[i], s, p] for i in slots]
            _shape_bars(ax, slots, ys, j, shapes, colors, [f"{v:.0f}" if v >= 10 else f"{v:.2g}" for v in ys],
                        fontsize=7, padding=1, bbox=_LABEL_BOX)
        ax.axhline(100, color="k", ls="--", lw=1, label="the floor (100 %)")
        _log_axis(ax, "y", " %")
        # whole decades, with a decade of headroom above the tallest bar for its label
        ax.set_ylim(10 ** math.floor(math.log10(min(pct.values()) / 1.5)),
                    10 ** math.ceil(math.log10(max(200, *pct.values()) * 3)))
        ax.set_xticks(range(len(algs)), algs)
        _label_panel(ax, f"{dtype}, {p}", "algorithm (shape = rows × steps)",
                     "% of memory floor (floor ÷ GPU time, %)")
    fig.legend(*axes[0, 0].get_legend_handles_labels(), title="shape (rows × steps)", fontsize=8,
               ncols=len(shapes) + 1, loc="outside lower center")
    fig.suptitle(f"How close to the memory floor? {OURS_IMPL}, {dtype}, {' and '.join(passes)} "
                 f"({res['gpu']}, {res['date']}, copy {res['copy_bandwidth_Bps'] / 1e12:.2f} TB/s)")
    return fig


def peers_chart(res, dtype="float32"):
    """How much faster than each peer? One panel per pass, one row per (algorithm, peer) pair, one
    bar per shape: the peer's wall time per call ÷ ours on a log axis, with a dashed line at 1×."""
    import matplotlib.pyplot as plt

    speedups, passes, algs = peer_speedups(res, dtype), result_passes(res), result_algorithms(res, dtype)
    if not speedups:
        raise ValueError(f"no peer rows of {dtype} with a matching {OURS_IMPL} row")
    peers = result_peers(res)
    pairs = {p: [(a, q) for a in algs for q in peers
                 if any((s["algorithm"], s["peer"], s["pass_"]) == (a, q, p) for s in speedups)] for p in passes}
    shapes = [s for s in result_shapes(res, dtype) if any(x["shape"] == s for x in speedups)]
    colors = _shape_colors(result_shapes(res, dtype))  # the floor chart's colours
    # inches per pair: room for one 7-point label per bar, within CHART_MAX_HEIGHT_IN for the whole figure
    n_pairs = sum(len(v) for v in pairs.values())
    per_pair = min(0.13 * len(shapes), (CHART_MAX_HEIGHT_IN - 1.2 - 1.2 * len(passes)) / n_pairs)
    height = 1.2 + per_pair * n_pairs + 1.2 * len(passes)
    fig, axes = plt.subplots(len(passes), 1, figsize=(11, height),
                             dpi=100, squeeze=False, layout="constrained",
                             gridspec_kw=dict(height_ratios=[max(len(pairs[p]), 1) + 3 for p in passes]))
    for ax, p in zip(axes[:, 0], passes):
        for j, s in enumerate(shapes):
            hits = [(i, [x["x"] for x in speedups
                         if (x["algorithm"], x["peer"], x["shape"], x["pass_"]) == (a, q, s, p)])
                    for i, (a, q) in enumerate(pairs[p])]
            xs = [hit[0] for _, hit in hits if hit]
            _shape_bars(ax, [i for i, hit in hits if hit], xs, j, shapes, colors, [speedup_text(x) for x in xs],
                        horizontal=True, fontsize=7, padding=2, bbox=_LABEL_BOX)
        for i in range(1, len(pairs[p])):  # a rule between algorithms
            if pairs[p][i][0] != pairs[p][i - 1][0]:
                ax.axhline(i - 0.5, color="0.8", lw=0.8)
        ax.axvline(1, color="k", ls="--", lw=1, label="1× (as fast)")
        _log_axis(ax, "x", "×")
        ax.set_xlim(0.3, 8 * max((x["x"] for x in speedups if x["pass_"] == p), default=1))
        ax.set_yticks(range(len(pairs[p])), [f"{a} vs {q}" for a, q in pairs[p]], fontsize=8)
        ax.set_ylim(len(pairs[p]) - 0.5, -0.5)
        _label_panel(ax, f"{dtype}, {p}", "speed-up = peer's wall time per call ÷ ours (×, log scale)",
                     "algorithm vs peer", legend=dict(title="shape", fontsize=8, loc="lower right"))
    fig.suptitle(f"How much faster than each peer? Wall time per call, host included, {dtype} "
                 f"({res['gpu']}, {res['date']})")
    return fig


def _wall_and_gpu_bars(ax, cases, algs, head, head_name):
    """One panel: a wall-time and a GPU-time bar per (label, row) case, the anchors hatched, and a
    dashed line at the ``head`` anchor's wall time."""
    n_ours = sum(1 for a, _ in cases if a in algs)
    x = np.arange(len(cases))
    wall = [r["full_call_us"] for _, r in cases]
    gpu = [1e3 * r["kernel_ms"] for _, r in cases]
    hatch = [None] * n_ours + ["//"] * (len(cases) - n_ours)
    for dx, vals, color, label in [(-0.2, wall, "tab:orange", "wall time per call (host included)"),
                                   (0.2, gpu, "tab:blue", "GPU time (CUDA-graph replay)")]:
        bars = ax.bar(x + dx, vals, 0.4, color=color, label=label, hatch=hatch, edgecolor="white")
        ax.bar_label(bars, fmt="%.3g", fontsize=7, padding=2, rotation=90)
    if head is not None:
        ax.axhline(head["full_call_us"], color="k", ls="--", lw=1,
                   label=f"{head_name}, wall ({head['full_call_us']:.3g} µs)")
    ax.set_yscale("log")
    ax.set_xticks(x, [a for a, _ in cases], rotation=35, ha="right", fontsize=7)


def wall_gpu_chart(res, dtype="float32", shapes=RL_SHAPES):
    """Wall versus GPU time: one panel per (pass, shape), our algorithms then the anchors (hatched),
    each a wall-time and a GPU-time bar in µs on a log axis; the dashed line is the pass's anchor's
    wall time (bare launch for fwd, minimal autograd.Function for fwd+bwd)."""
    import matplotlib.pyplot as plt

    ours, anchors = our_rows(res, dtype), anchor_rows(res, dtype)
    passes, algs = result_passes(res), result_algorithms(res, dtype)
    shapes = [s for s in shapes if s in result_shapes(res, dtype)]
    if not shapes:
        raise ValueError("the results have none of the shapes asked for")
    fig, axes = plt.subplots(len(passes), len(shapes), figsize=(11, 3.9 * len(passes)), dpi=100, squeeze=False,
                             sharey=True, layout="constrained")
    for i, p in enumerate(passes):
        for j, s in enumerate(shapes):
            cases = [(a, ours[(a, *s, dtype, p)]) for a in algs if (a, *s, dtype, p) in ours]
            cases += [(f"{ANCHORS[k]}\n({anchors[(k, *s, p)]['algorithm']})", anchors[(k, *s, p)])
                      for k in ANCHORS if (k, *s, p) in anchors]
            cases = [(a, r) for a, r in cases if r["kernel_ms"]]
            head = anchors.get((HEAD_ANCHOR.get(p), *s, p))
            _wall_and_gpu_bars(axes[i, j], cases, algs, head, ANCHORS.get(HEAD_ANCHOR.get(p)))
            _label_panel(axes[i, j], f"{shape_name(s)}, {dtype}, {p}", "algorithm (hatched: anchors)",
                         "time per call (µs, log scale)" if j == 0 else "", legend=dict(fontsize=7, loc="upper left"))
    top = max(v for ax in axes.flat for c in ax.containers for v in c.datavalues)
    axes[0, 0].set_ylim(top=top * 12)  # room for the legends
    fig.suptitle(f"Wall versus GPU time per call, {OURS_IMPL}, {dtype}, {' and '.join(passes)} "
                 f"({res['gpu']}, {res['date']})")
    return fig


# --------------------------------------------------------------------------------------------
# One algorithm's committed results (notebook 09's sections 2.1-2.4, the four scans' tables, and the
# checks of the notebooks' "How fast is it" sections; on a CPU, the GPU's figures come from here: a
# CPU cannot time a GPU kernel)
# --------------------------------------------------------------------------------------------
# Every figure below is read from a results file: nothing is estimated. Implementations in the
# order shown: ours, the PyTorch code it replaces, torch.compile of it, the peers, the anchors.
IMPL_NAMES = {OURS_IMPL: "rltriton_lite (Triton kernel)", "pytorch_loop": "PyTorch loop over time",
              "pytorch_eager": "eager PyTorch formula", "torch_compile": "torch.compile (eager formula)"}
IMPL_NAMES.update({k: f"anchor: {v}" for k, v in ANCHORS.items()})
# What each anchor is (rltriton_lite/bench.py, "Anchors"): a yardstick of what a plain Triton op
# costs per call, timed beside ours, not a peer. Neither is an empty kernel.
ANCHOR_NOTES = {
    "bare_triton_launch": "a naive GAE kernel, one program per row walking its steps one at a time, launched "
                          "plainly (kernel[(B,)](...), its output from torch.empty_like): what a plain Triton call "
                          "costs, host included; at large shapes its naive kernel's GPU time dominates",
    "minimal_autograd_fn": "PPO's clipped loss as a plain torch.autograd.Function, one naive elementwise Triton "
                           "kernel forwards and one backwards, the mean taken by PyTorch: what a plain "
                           "differentiable Triton op costs",
}
_PEER_COLORS = ["tab:blue", "tab:purple", "tab:brown", "tab:pink", "tab:cyan", "tab:olive", "gold", "navy"]
COMMITTED_COLUMNS = {"shape": "shape", "pass": "pass", "floor": "floor µs", "name": "implementation",
                     "wall_us": "wall µs/call", "gpu_us": "GPU µs", "pct_floor": "% floor", "vs_ours": "wall ÷ ours"}


def results_folder() -> str:
    """benchmarks/results/ of this checkout (beside the package), else under the working
    directory or its parent (a notebook runs in notebooks/)."""
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    for root in (os.path.dirname(here), os.getcwd(), os.path.dirname(os.getcwd())):
        folder = os.path.join(root, "benchmarks", "results")
        if os.path.isdir(folder):
            return folder
    raise FileNotFoundError("no benchmarks/results/ beside the package, in the working directory or in its parent: "
                            "run from the course's folder or its notebooks/ folder")


def impl_name(impl: str) -> str:
    """A results row's impl in words ("pytorch_loop" -> "PyTorch loop over time"); peers by name."""
    return IMPL_NAMES.get(impl, impl)


def _impl_key(impl: str):
    order = list(IMPL_NAMES)
    return (order.index(impl) if impl in order[:4] else 4 if impl not in ANCHORS else 5, impl)


def flagged(row) -> bool:
    """The row's outputs disagreed with what the harness checked them against (NaN counts), as
    the results' .md marks with "!"."""
    err, tol = row.get("max_rel_err"), row.get("tol")
    if not isinstance(err, float) or tol is None:
        return False
    return bool(row.get("checked_against")) if err != err else err > tol


def backward_added(rows: list[dict]) -> dict:
    """What the backward adds to our call, per shape, from ``committed_rows``' rows of one algorithm
    (notebook 09, sections 2.1-2.4: the four scans' tables): ``{(B, T): (wall µs added, GPU µs added,
    wall ratio, GPU ratio)}``, each ratio fwd+bwd ÷ fwd."""
    ours = {(r["B"], r["T"], r["pass"]): r for r in rows if r["impl"] == OURS_IMPL}
    out = {}
    for (B, T, pass_), fw in ours.items():
        if pass_ == "fwd":
            bw = ours[B, T, "fwd+bwd"]
            out[B, T] = (bw["wall_us"] - fw["wall_us"], bw["gpu_us"] - fw["gpu_us"], bw["wall_us"] / fw["wall_us"],
                         bw["gpu_us"] / fw["gpu_us"])
    return out


def fused_against_eager(name: str) -> dict:
    """A loss's fused call against its eager formula, with the backward, float32, in the committed run
    and the wall probe (notebooks 05-07's "How fast is it"): ``{(B, T): {"ours_gpu_us", "eager_gpu_us",
    "ours_wall_us"}}`` at the shapes where the eager formula was timed, ``ours_wall_us`` the lower of
    the two sources' wall times for our call."""
    res = committed_results()[1]
    probe = wall_probe_us()
    both = {(r["impl"], r["B"], r["T"]): r for r in committed_rows(res, name) if r["pass"] == "fwd+bwd"}
    return {(B, T): {"ours_gpu_us": both[OURS_IMPL, B, T]["gpu_us"], "eager_gpu_us": r["gpu_us"],
                     "ours_wall_us": min(both[OURS_IMPL, B, T]["wall_us"], probe[B, T]["fwd+bwd", name])}
            for (impl, B, T), r in both.items() if impl == "pytorch_eager"}


def committed_rows(res, name: str, dtype: str = "float32") -> list[dict]:
    """Every row of algorithm ``name`` and ``dtype`` in the results, as one dict each: impl, name
    (``impl_name``), B, T, pass, wall_us (wall time per call, host included), gpu_us (GPU time,
    CUDA-graph replay; None where the impl has none), floor_us (the fewest bytes at copy
    speed), pct_floor (100 × floor ÷ GPU time; None without GPU time), vs_ours (wall time ÷ ours
    at the same case; None where ours is missing) and flagged. Sorted by pass, shape (fewest
    elements first), then ours, the code it replaces, torch.compile, the peers, the anchors."""
    sel = [r for r in res["rows"] if r["algorithm"] == name and r["dtype"] == dtype]
    if not sel:
        raise ValueError(f"no {dtype} rows of {name!r} in the results")
    ours = {_case(r): r for r in sel if r["impl"] == OURS_IMPL}
    rows = []
    for r in sel:
        gpu = r["kernel_ms"]
        mine = ours.get(_case(r))
        rows.append(dict(impl=r["impl"], name=impl_name(r["impl"]), B=r["B"], T=r["T"], **{"pass": r["pass"]},
                         wall_us=r["full_call_us"], gpu_us=1e3 * gpu if gpu else None, floor_us=1e3 * r["floor_ms"],
                         pct_floor=100 * r["floor_ms"] / gpu if gpu else None,
                         vs_ours=r["full_call_us"] / mine["full_call_us"] if mine else None, flagged=flagged(r)))
    passes = ("fwd", "fwd+bwd")
    rows.sort(key=lambda r: (passes.index(r["pass"]) if r["pass"] in passes else 2, r["B"] * r["T"], r["B"],
                             _impl_key(r["impl"])))
    return rows


def committed_or_empty(name: str, dtype: str = "float32") -> tuple:
    """(run, res, ``committed_rows``) of ``COMMITTED_RUN``; if not found, a printed line and (None, None, [])."""
    try:
        run, res = committed_results()
    except FileNotFoundError as e:  # a notebook run outside the course's folder
        print(f"no committed results here ({e})")
        return None, None, []
    return run, res, committed_rows(res, name, dtype)


class Facts(NamedTuple):
    """What the notebooks assert of ``committed_rows``: ``ours``, our rows with positive wall and
    GPU times; ``replaced_x``, the smallest ratio, over the cases, of the replaced code's time to
    ours (wall time for the loop over time, GPU time for the eager formula; None without it);
    ``host_x``, the smallest wall ÷ GPU time of ours at 4096×128; ``floor_pct``, the smallest %
    of the floor of ours at the largest shape."""

    ours: int
    replaced_x: float | None
    host_x: float
    floor_pct: float


def committed_facts(rows) -> Facts:
    """``Facts`` of ``committed_rows``' rows."""
    ours = {(r["B"], r["T"], r["pass"]): r for r in rows if r["impl"] == OURS_IMPL}
    replaced = [r["vs_ours"] for r in rows if r["impl"] == "pytorch_loop"] or \
        [r["gpu_us"] / ours[r["B"], r["T"], r["pass"]]["gpu_us"] for r in rows if r["impl"] == "pytorch_eager"]
    biggest = max(b * t for b, t, _ in ours)
    return Facts(sum(r["wall_us"] > 0 and (r["gpu_us"] or 0) > 0 for r in ours.values()),
                 min(replaced) if replaced else None,
                 min(r["wall_us"] / r["gpu_us"] for (b, t, _), r in ours.items() if (b, t) == (4096, 128)),
                 min(r["pct_floor"] for (b, t, _), r in ours.items() if b * t == biggest))


def committed_table(rows, leave_out=()) -> str:
    """``committed_rows`` as a plain-text table: one line per implementation, the shape, pass
    and floor written once per case; "!" after a name whose outputs disagreed with ours.
    ``leave_out``: keys of ``COMMITTED_COLUMNS`` not to print (e.g. ``("vs_ours",)``)."""
    lines, case = [], None
    for r in rows:
        first = (r["B"], r["T"], r["pass"]) != case
        case = (r["B"], r["T"], r["pass"])
        lines.append({"shape": shape_name((r["B"], r["T"])) if first else "", "pass": r["pass"] if first else "",
                      "floor": r["floor_us"] if first else "", "name": r["name"] + (" !" if r["flagged"] else ""),
                      "wall_us": r["wall_us"], "gpu_us": r["gpu_us"], "pct_floor": r["pct_floor"],
                      "vs_ours": r["vs_ours"]})
    return table(lines, {k: v for k, v in COMMITTED_COLUMNS.items() if k not in leave_out}, digits=3)


def _impl_colors(res) -> dict:
    colors = {OURS_IMPL: "tab:green", "pytorch_loop": "tab:red", "pytorch_eager": "tab:red",
              "torch_compile": "tab:orange"}
    peers = [q for q in result_peers(res) if q not in colors]
    colors.update(zip(peers, _PEER_COLORS * (1 + len(peers) // len(_PEER_COLORS))))
    colors.update({k: "0.6" for k in ANCHORS})
    return colors


def committed_chart(res, name: str, dtype: str = "float32", source: str = ""):
    """One algorithm's committed results as a figure at most ``CHART_MAX_WIDTH_PX`` wide: a row
    of two panels per pass, wall time per call (host included) and GPU time (CUDA-graph replay),
    each a group of bars per shape, one bar per implementation, in µs on a log axis. The GPU
    panel marks each shape's memory floor and labels our bars with their % of it; our wall bars
    carry their µs. ``source``: the results file's name, for the title."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    rows = committed_rows(res, name, dtype)
    passes = list(dict.fromkeys(r["pass"] for r in rows))
    colors = _impl_colors(res)
    fig, axes = plt.subplots(len(passes), 2, figsize=(11, 1.3 + 3.3 * len(passes)), dpi=100, squeeze=False,
                             layout="constrained")
    for i, p in enumerate(passes):
        sel = [r for r in rows if r["pass"] == p]
        shapes = list(dict.fromkeys((r["B"], r["T"]) for r in sel))
        for ax, key, what in [(axes[i, 0], "wall_us", "wall time per call (host included)"),
                              (axes[i, 1], "gpu_us", "GPU time (CUDA-graph replay)")]:
            impls = sorted({r["impl"] for r in sel if r[key]}, key=_impl_key)
            size = 0.84 / max(len(impls), 1)
            for j, impl in enumerate(impls):
                hits = {(r["B"], r["T"]): r for r in sel if r["impl"] == impl and r[key]}
                xs = [k for k, s in enumerate(shapes) if s in hits]
                pos = [k + (j - (len(impls) - 1) / 2) * size for k in xs]
                bars = ax.bar(pos, [hits[shapes[k]][key] for k in xs], size, color=colors.get(impl, "gray"),
                              hatch="//" if impl in ANCHORS else None, edgecolor="white", linewidth=0.3)
                if impl == OURS_IMPL:
                    labels = ([f"{hits[shapes[k]]['pct_floor']:.2g} %" for k in xs] if key == "gpu_us"
                              else [f"{hits[shapes[k]][key]:.3g}" for k in xs])
                    ax.bar_label(bars, labels=labels, fontsize=7, padding=1, rotation=90)
            if key == "gpu_us":
                floors = {(r["B"], r["T"]): r["floor_us"] for r in sel}
                for k, s in enumerate(shapes):
                    ax.hlines(floors[s], k - 0.45, k + 0.45, color="k", ls="--", lw=1)
            ax.set_yscale("log")
            values = [r[key] for r in sel if r[key]] + ([r["floor_us"] for r in sel] if key == "gpu_us" else [])
            ax.set_ylim(min(values) / 3, max(values) * 15)  # room for the labels
            ax.set_xticks(range(len(shapes)), [shape_name(s) for s in shapes])
            _label_panel(ax, f"{dtype}, {p}: {what}", "shape (rows B × steps T)", "µs per call (log scale)")
    present = sorted({r["impl"] for r in rows}, key=_impl_key)
    handles = [Patch(facecolor=colors.get(q, "gray"), hatch="//" if q in ANCHORS else None, edgecolor="white",
                     label=impl_name(q)) for q in present]
    handles.append(Line2D([], [], color="k", ls="--", lw=1, label="memory floor: fewest bytes ÷ copy bandwidth"))
    fig.legend(handles=handles, fontsize=8, ncols=min(4, len(handles)), loc="outside lower center")
    fig.suptitle(f"{name}, {dtype}: committed benchmark results, {res['gpu']}, {res['date']}"
                 + (f" ({source})" if source else "") + "; measured there, not on this machine"
                 + "\nour bars: wall µs per call (left), % of the memory floor (right)", fontsize=10)
    return fig


def committed_legend(rows) -> str:
    """What ``committed_table``'s columns mean, and each anchor in ``rows`` (``ANCHOR_NOTES``), as
    lines of at most 110 characters."""
    import textwrap

    text = ("wall µs/call: back-to-back eager calls, host included. GPU µs: CUDA-graph replay, the kernels alone "
            "(n/a: none measured; JAX, torchrl and the Python loops are not captured in a CUDA graph). floor µs: "
            "the fewest bytes the call must move ÷ the copy bandwidth; % floor: floor ÷ GPU time. wall ÷ ours: its "
            "wall time ÷ rltriton_lite's." + (" !: its outputs disagreed with ours." if any(r["flagged"] for r in rows)
                                              else ""))
    anchors = [k for k in ANCHORS if any(r["impl"] == k for r in rows)]
    notes = [f"{impl_name(k)}: {ANCHOR_NOTES[k]}." for k in anchors]
    if anchors:
        notes.append("Anchors are yardsticks timed beside ours, not peers.")
    return "\n".join(textwrap.fill(t, width=110) for t in [text, *notes])


def committed(name: str, folder=None, dtype: str = "float32", show: bool = True,
              run: str = COMMITTED_RUN, missing_ok: bool = False) -> list[dict]:
    """What a GPU measured for ``name``, on any machine: the results file ``run`` (default
    ``COMMITTED_RUN``, the committed H200 run, read by name) in ``folder`` (default
    ``results_folder()``) printed as ``committed_table`` under a line naming the GPU, the file and
    its date, with ``committed_legend`` under it (the columns, and the anchors in the rows), then
    drawn as ``committed_chart`` (``plt.show()`` unless ``show`` is False). Returns
    ``committed_rows``. ``missing_ok``: where the results are not found (a notebook run outside the
    course's folder), say so and return [] (an optional cell), else raise FileNotFoundError."""
    import matplotlib.pyplot as plt

    try:
        run, res = committed_results(folder, run)
    except FileNotFoundError as e:
        if not missing_ok:
            raise
        print(f"The committed results were not found ({e}): they are in benchmarks/results/ of the course's "
              "folder, read when the notebook runs from its notebooks/ folder. Nothing to show here.")
        return []
    rows = committed_rows(res, name, dtype)
    print(f"{name}, {dtype}: committed benchmark results of an {res['gpu']}, {run}.json ({res['date']}), "
          "measured there, not on this machine.")
    print(committed_table(rows))
    print(committed_legend(rows))
    fig = committed_chart(res, name, dtype, f"{run}.json")
    if show:
        plt.show()
    else:
        plt.close(fig)
    return rows
