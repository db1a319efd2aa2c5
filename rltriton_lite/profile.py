"""Timing helpers and the interactive profiler used by the notebooks.

``OPS`` maps an algorithm name to how to make random inputs for it, how to call it, what a
plain PyTorch loop over time (the CleanRL way) computes in its place, and how many bytes it must
move at the least. ``measure`` times the kernel, the torch path and the loop; ``profiler``
wraps that in ipywidgets controls and a plot; ``sweep`` runs it over sizes with a progress bar.

On a GPU times are ``triton.testing.do_bench`` medians and the plot shows achieved GB/s against
the measured copy bandwidth (the memory floor). On a CPU the kernels run under the Triton
interpreter, whose times say nothing about GPU speed: the profiler then times small sizes and
says so.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch


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
    loop: Callable  # (inputs, params) -> output(s): one Python iteration per time step
    bytes_per_step: Callable  # (element size in bytes) -> bytes moved per (row, step) at the least
    params: dict  # name -> (low, high, default) of the float parameters


def _rollout(B, T, dtype, device, g):
    r = torch.randn(B, T, generator=g).to(dtype=dtype, device=device)
    v = torch.randn(B, T, generator=g).to(dtype=dtype, device=device)
    term = (torch.rand(B, T, generator=g) < 0.02).to(device)
    boot = torch.randn(B, generator=g).to(dtype=dtype, device=device)
    nv = torch.cat([v[:, 1:], boot[:, None]], 1)
    return dict(rewards=r, values=v, terminated=term, bootstrap_value=boot, next_values=nv)


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


def _ops():
    import rltriton_lite as rl

    return {
        "discounted_return": Op(
            "discounted_return", _rollout,
            lambda x, be, p: rl.discounted_returns(x["rewards"], gamma=p["gamma"], terminated=x["terminated"],
                                                   bootstrap_value=x["bootstrap_value"], backend=be),
            _loop_returns, lambda es: 2 * es + 1, dict(gamma=(0.0, 1.0, 0.99))),
        "gae": Op(
            "gae", _rollout,
            lambda x, be, p: rl.gae(x["rewards"], x["values"], gamma=p["gamma"], lambda_=p["lambda_"],
                                    terminated=x["terminated"], bootstrap_value=x["bootstrap_value"], backend=be),
            _loop_gae, lambda es: 4 * es + 1, dict(gamma=(0.0, 1.0, 0.99), lambda_=(0.0, 1.0, 0.95))),
        "td_lambda": Op(
            "td_lambda", _rollout,
            lambda x, be, p: rl.td_lambda(x["rewards"], x["next_values"], gamma=p["gamma"], lambda_=p["lambda_"],
                                          terminated=x["terminated"], backend=be),
            _loop_td_lambda, lambda es: 3 * es + 1, dict(gamma=(0.0, 1.0, 0.99), lambda_=(0.0, 1.0, 0.95))),
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
    impl, ms, and on a GPU gbps (bytes moved at the least / time) and pct_floor."""
    device = device or default_device()
    o = op(name)
    p = {k: v[2] for k, v in o.params.items()} | params
    x = o.make(B, T, dtype, device, torch.Generator().manual_seed(seed))
    es = torch.finfo(dtype).bits // 8
    nbytes = B * T * o.bytes_per_step(es)
    bw = copy_bandwidth(device)
    rows = []
    for impl in impls:
        fn = (lambda: o.loop(x, p)) if impl == "loop" else (lambda impl=impl: o.run(x, impl, p))
        ms = time_ms(fn, device, rep=3 if device == "cpu" else 5)
        row = dict(impl=impl, B=B, T=T, ms=ms, gbps=nbytes / (ms * 1e-3) / 1e9)
        if bw is not None:
            row["floor_ms"] = nbytes / bw * 1e3
            row["pct_floor"] = 100 * row["floor_ms"] / ms
        rows.append(row)
    return rows


def plot(rows, ax_time, ax_bw, title=""):
    """Bar chart of times and of achieved GB/s (with the copy bandwidth as the ceiling)."""
    names = [r["impl"] for r in rows]
    colors = [{"triton": "tab:green", "torch": "tab:blue", "loop": "tab:red"}.get(n, "gray") for n in names]
    ax_time.clear()
    ax_bw.clear()
    ax_time.bar(names, [r["ms"] for r in rows], color=colors)
    ax_time.set_yscale("log")
    ax_time.set_ylabel("ms per call (log)")
    ax_time.set_title(title)
    ax_bw.bar(names, [r["gbps"] for r in rows], color=colors)
    ax_bw.set_ylabel("GB/s moved (at the least)")
    bw = copy_bandwidth(default_device())
    if bw is not None:
        ax_bw.axhline(bw / 1e9, color="k", ls="--", lw=1)
        ax_bw.text(0, bw / 1e9, " copy bandwidth: the floor", va="bottom")
        ax_bw.set_title("achieved bandwidth")
    else:
        ax_bw.set_title("CPU: interpreter timings, not GPU speed")


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
            for r in rows:
                extra = f", {r['pct_floor']:.0f}% of floor" if "pct_floor" in r else ""
                print(f"{r['impl']:>7}: {r['ms']:9.3f} ms, {r['gbps']:8.2f} GB/s{extra}")
            if device == "cpu":
                print("(CPU: the kernel runs in the Triton interpreter; these times are not GPU times)")

    ui = w.interactive(run, {"manual": True, "manual_name": "run"}, **controls)
    run(**{k: c.value for k, c in controls.items()})
    return w.VBox([ui, out]), last_rows


def sweep(name: str, sizes, dtype=torch.float32, impls=("triton", "torch"), **params):
    """``measure`` over ``sizes`` [(B, T), ...] with a tqdm progress bar; a list of rows."""
    from tqdm.auto import tqdm

    rows = []
    for B, T in tqdm(sizes, desc=name):
        rows += measure(name, B, T, dtype, impls=impls, **params)
    return rows
