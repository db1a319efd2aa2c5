"""Timing helpers and the interactive profiler used by the notebooks.

``ops()`` maps an algorithm name to how to make random inputs for it, how to call it, the
PyTorch code it replaces (a CleanRL-style loop over time, or the eager formula for a loss), its
reference (``rltriton_lite.reference``), and how many bytes it must move at the least. ``measure`` times the kernel, the torch path and the loop; ``profiler``
wraps that in ipywidgets controls and a plot; ``sweep`` runs it over sizes with a progress bar.

On a GPU times are ``triton.testing.do_bench`` medians and the plot shows achieved GB/s against
the measured copy bandwidth (the memory floor). On a CPU the kernels run under the Triton
interpreter, whose times say nothing about GPU speed: the profiler then times small sizes, shows
no bandwidth, and labels every time ``INTERPRETER_LABEL``. ``table`` prints rows as plain text
(for a normal cell output, which a static render of a notebook shows: the widget's does not), and
``read_wall_probe`` reads the committed wall-time probe (``tools/wall_probe.py``'s output).
The last section draws the charts of the committed benchmark results (notebook 09):
``floor_chart``, ``peers_chart`` and ``wall_gpu_chart``, with the data behind each.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Callable

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
    fn()
    times = []
    for _ in range(rep):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


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


def measure(name: str, B: int, T: int, dtype=torch.float32, device: str | None = None,
            impls=("triton", "torch", "loop"), seed: int = 0, **params):
    """Time each implementation once on the same random inputs. Returns a list of dicts with
    impl, B, T, ms, and on a GPU gbps (bytes moved at the least / time), floor_ms and pct_floor.
    On a CPU (the Triton interpreter) there is no bandwidth to report: the rows have no gbps."""
    device = device or default_device()
    o = op(name)
    p = o.defaults | params
    x = o.make(B, T, dtype, device, torch.Generator().manual_seed(seed))
    es = torch.finfo(dtype).bits // 8
    nbytes = B * T * o.bytes_per_step(es)
    bw = copy_bandwidth(device)
    rows = []
    for impl in impls:
        fn = (lambda: o.loop(x, p)) if impl == "loop" else (lambda impl=impl: o.run(x, impl, p))
        ms = time_ms(fn, device, rep=3 if device == "cpu" else 5)
        row = dict(impl=impl, B=B, T=T, ms=ms)
        if bw is not None:
            row["gbps"] = nbytes / (ms * 1e-3) / 1e9
            row["floor_ms"] = nbytes / bw * 1e3
            row["pct_floor"] = 100 * row["floor_ms"] / ms
        rows.append(row)
    return rows


def plot(rows, ax_time, ax_bw, title=""):
    """Bar chart of times and of achieved GB/s (with the copy bandwidth as the ceiling). On a CPU
    the times are labelled ``INTERPRETER_LABEL`` and the bandwidth panel says n/a."""
    names = [r["impl"] for r in rows]
    colors = [{"triton": "tab:green", "torch": "tab:blue", "loop": "tab:red"}.get(n, "gray") for n in names]
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


def profiler(name: str, B: int | None = None, T: int | None = None):
    """ipywidgets controls (B, T, dtype and the algorithm's parameters) driving ``measure`` and
    ``plot``. The callback runs once with the defaults, so headless execution covers it.
    Returns ``(widget, last_rows)``; ``last_rows`` is a list updated on every run."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    device = default_device()
    o = op(name)
    B = B or (4096 if device == "cuda" else 4)
    T = T or (1024 if device == "cuda" else 32)
    sizes_B = [4, 16, 256, 4096, 16384] if device == "cuda" else [2, 4, 8]
    sizes_T = [16, 128, 1024, 4096] if device == "cuda" else [16, 32, 64]
    controls = dict(
        B=w.Dropdown(options=sorted(set(sizes_B + [B])), value=B, description="rows B"),
        T=w.Dropdown(options=sorted(set(sizes_T + [T])), value=T, description="steps T"),
        dtype=w.Dropdown(options=["float32", "bfloat16"] if device == "cuda" else ["float32"], value="float32",
                         description="dtype"),
    )
    for k, (lo, hi, default) in o.params.items():
        controls[k] = w.FloatSlider(min=lo, max=hi, step=0.01, value=default, description=k)
    out = w.Output()
    last_rows: list = []

    def run(**kw):
        dtype = getattr(torch, kw.pop("dtype"))
        B_, T_ = kw.pop("B"), kw.pop("T")
        rows = measure(name, B_, T_, dtype, device, **kw)
        last_rows[:] = rows
        with out:
            out.clear_output(wait=True)
            fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.2))
            plot(rows, a1, a2, f"{name}: {B_}×{T_} {dtype}".replace("torch.", ""))
            plt.tight_layout()
            plt.show()
            print(table(rows, _PROFILER_COLUMNS if device == "cuda" else _PROFILER_COLUMNS_CPU))
            if device == "cpu":
                print(f"({INTERPRETER_LABEL}: these times check the kernels, they say nothing about a GPU)")

    ui = w.interactive(run, {"manual": True, "manual_name": "run"}, **controls)
    run(**{k: c.value for k, c in controls.items()})
    return w.VBox([ui, out]), last_rows


_PROFILER_COLUMNS = dict(impl="impl", B="B", T="T", ms="ms", gbps="GB/s", floor_ms="floor ms", pct_floor="% floor")
_PROFILER_COLUMNS_CPU = dict(impl="impl", B="B", T="T", ms=f"ms ({INTERPRETER_LABEL})")


def _cell(v, digits: int) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        if v == 0 or not np.isfinite(v):
            return "0" if v == 0 else str(v)
        mag = int(np.floor(np.log10(abs(v))))
        if -3 <= mag < 6:  # plain decimals: 0.08038, 27.68, 12123
            return f"{v:.{max(0, digits - 1 - mag)}f}"
        return f"{v:.{digits - 1}e}"
    return str(v)


def table(rows, columns=None, digits: int = 4) -> str:
    """``rows`` (dicts) as a plain-text table: a header, a rule, one line per row. ``columns``:
    the keys to show, in order, as a list, or a dict of key -> header (default: every key of the
    rows, first seen first). Floats get ``digits`` significant digits, a missing key or None
    shows as n/a; numbers are right-aligned, text left-aligned. Print it in a notebook cell of
    its own: a widget's output does not survive a static render."""
    if columns is None:
        columns = list(dict.fromkeys(k for r in rows for k in r))
    if not columns:
        return ""
    headers = dict(columns) if isinstance(columns, dict) else {c: str(c) for c in columns}
    keys = list(headers)
    cells = [[_cell(r.get(k), digits) for k in keys] for r in rows]
    numeric = [all(isinstance(r.get(k), (int, float, type(None))) and not isinstance(r.get(k), bool) for r in rows)
               for k in keys]
    widths = [max([len(headers[k])] + [len(c[i]) for c in cells]) for i, k in enumerate(keys)]

    def line(values):
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)).rstrip()

    return "\n".join([line([headers[k] for k in keys]), "  ".join("-" * w for w in widths)] + [line(c) for c in cells])


def read_wall_probe(path) -> list[dict]:
    """The sections of a committed wall-time probe (``tools/wall_probe.py``'s output, e.g.
    ``benchmarks/results/H200-2026-12-01d-wall.txt``) that time one shape: a list of dicts with
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
OURS_IMPL = "rltriton_lite"
# the harness's anchors: baselines for wall time, not peers
ANCHORS = {"bare_triton_launch": "bare Triton launch", "minimal_autograd_fn": "minimal autograd.Function"}
# the anchor each pass's wall time is held against
HEAD_ANCHOR = {"fwd": "bare_triton_launch", "fwd+bwd": "minimal_autograd_fn"}
RL_SHAPES = ((4096, 128), (64, 16384))  # the shapes RL code uses: many short rollouts, a few long ones


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
                        fontsize=7, padding=1)
        ax.axhline(100, color="k", ls="--", lw=1, label="the floor (100 %)")
        _log_axis(ax, "y", " %")
        ax.set_ylim(min(pct.values()) / 3, max(200, *pct.values()) * 3)
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
    height = 1.2 + 0.27 * sum(len(v) for v in pairs.values()) + 1.2 * len(passes)  # inches: 0.27 a pair
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
                        horizontal=True, fontsize=6, padding=2)
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
