# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 08 — Profiling dashboard
#
# Pick an algorithm, sweep sizes, and compare the Triton kernel with the PyTorch path: time per
# call, achieved bandwidth, and — on a GPU — the fraction of the **memory floor** reached.
#
# These kernels do a handful of flops per byte, so they are memory-bound: the fastest possible
# run moves the fewest bytes the algorithm needs (each input read once, each output written once)
# at the copy bandwidth of the device. `rltriton_lite.profile` counts those bytes per algorithm;
# the floor is bytes ÷ measured copy bandwidth. On a CPU the kernels run in the Triton
# interpreter: the sweep then uses tiny sizes and its times say nothing about a GPU.

# %%
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import ipywidgets as w
import matplotlib.pyplot as plt
import numpy as np

from rltriton_lite import profile

DEVICE = profile.default_device()
bw = profile.copy_bandwidth(DEVICE)
print(f"device: {DEVICE}" + (f", copy bandwidth {bw / 1e12:.2f} TB/s" if bw else " (Triton interpreter)"))
names = list(profile.ops())
print("algorithms:", names)

# %% [markdown]
# ## The bytes each algorithm must move
#
# Per (row, step), with element size $e$ bytes (4 for float32, 2 for bfloat16) and 1-byte flags:

# %%
for name in names:
    o = profile.op(name)
    print(f"{name:>18}: {o.bytes_per_step(4):3d} B/step in float32, {o.bytes_per_step(2):3d} in bfloat16")

# %% [markdown]
# ## Sweep
#
# `profile.sweep` times each implementation over a list of shapes with a progress bar. The
# dashboard below re-runs it for the algorithm, dtype and implementations you pick; it runs once
# with the defaults so that a headless run exercises it.

# %%
SIZES = ([(16, 128), (4096, 128), (1024, 1024), (16384, 1024), (64, 16384)] if DEVICE == "cuda"
         else [(2, 16), (4, 32), (8, 64)])


def show(rows, title):
    fig, axes = plt.subplots(1, 3 if bw else 2, figsize=(14 if bw else 10, 3.2))
    for impl in sorted({r["impl"] for r in rows}):
        sel = [r for r in rows if r["impl"] == impl]
        x = [r["B"] * r["T"] for r in sel]
        axes[0].loglog(x, [r["ms"] for r in sel], "o-", label=impl)
        axes[1].semilogx(x, [r["gbps"] for r in sel], "o-", label=impl)
        if bw:
            axes[2].semilogx(x, [r["pct_floor"] for r in sel], "o-", label=impl)
    axes[0].set_ylabel("ms per call")
    axes[1].set_ylabel("GB/s")
    if bw:
        axes[1].axhline(bw / 1e9, color="k", ls="--", lw=1)
        axes[2].set_ylabel("% of memory floor")
        axes[2].axhline(100, color="k", ls="--", lw=1)
    for ax in axes:
        ax.set_xlabel("elements (B × T)")
        ax.legend()
    fig.suptitle(title)
    plt.tight_layout()
    plt.show()


out = w.Output()
last = {}


def run(algorithm, dtype, impls):
    rows = profile.sweep(algorithm, SIZES, getattr(torch, dtype), impls=impls)
    last["rows"] = rows
    with out:
        out.clear_output(wait=True)
        show(rows, f"{algorithm}, {dtype}, {DEVICE}")


controls = dict(
    algorithm=w.Dropdown(options=names, value="gae"),
    dtype=w.Dropdown(options=["float32", "bfloat16"] if DEVICE == "cuda" else ["float32"], value="float32"),
    impls=w.SelectMultiple(options=["triton", "torch", "loop"], value=("triton", "torch")),
)
ui = w.interactive(run, {"manual": True, "manual_name": "sweep"}, **controls)
run("gae", "float32", ("triton", "torch"))
w.VBox([ui, out])

# %%
rows = last["rows"]
assert len(rows) == 2 * len(SIZES) and all(r["ms"] > 0 and np.isfinite(r["gbps"]) for r in rows)

# %% [markdown]
# ## All algorithms at one size
#
# One shape for every algorithm, kernel against the PyTorch path (and on a GPU, the floor):

# %%
B, T = (16384, 1024) if DEVICE == "cuda" else (4, 32)
table = [dict(algorithm=name, **r) for name in names for r in profile.measure(name, B, T, impls=("triton", "torch"))]
for r in table:
    extra = f"  {r['pct_floor']:5.1f}% of floor" if "pct_floor" in r else ""
    print(f"{r['algorithm']:>18} {r['impl']:>7} {r['ms']:10.3f} ms {r['gbps']:9.2f} GB/s{extra}")
assert {r["algorithm"] for r in table} == set(names)

# %% [markdown]
# ## Exercises
#
# 1. On a GPU, find the smallest $B \times T$ at which the kernel reaches half of its floor.
#    What limits it below that size (look at the full-call time in `python -m rltriton_lite.bench`)?
# 2. Compare float32 and bfloat16: by how much should bfloat16 be faster if the kernel is at
#    the floor? Is it?
