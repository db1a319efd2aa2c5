# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 09 — Benchmarks on a GPU
#
# `python -m rltriton_lite.bench` measures every kernel on a GPU against the memory floor and
# against the peers it finds in the same process (a PyTorch loop, torchrl, JAX, torch.compile,
# rl-triton and others), and writes `benchmarks/results/<gpu>-<date>.json`. This notebook reads
# the newest committed result and answers three questions, one chart each: how close each kernel
# comes to the memory floor, how much faster it is than each peer, and how a call's wall time
# compares with its GPU time. With a GPU present it also re-runs a small part live.
#
# The method ([docs/DESIGN.md, "Benchmark method"](../docs/DESIGN.md#benchmark-method)):
# **floor** = the fewest bytes an op must move ÷ the copy bandwidth measured in the same run;
# **GPU time** (`kernel_ms`) = the median of CUDA-graph replays, the kernels without the host;
# **`ms`** = the `triton.testing.do_bench` median (L2 flushed; at small shapes it mostly measures
# the host's launch path); **wall time per call** (`full_call_us`) = back-to-back eager calls, one
# synchronisation at the end, host included: what a training loop without CUDA graphs pays.

# %%
import glob
import json
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter

# %% [markdown]
# The committed results, one line each:

# %%
ROOT = os.path.abspath(os.path.join(os.getcwd(), "..")) if os.path.basename(os.getcwd()) == "notebooks" else os.getcwd()
files = sorted(glob.glob(os.path.join(ROOT, "benchmarks", "results", "*.json")))
assert files, "no committed benchmark results"
results = [json.load(open(f)) for f in files]
for f, res in zip(files, results):
    print(f"{os.path.basename(f)}: {res['gpu']}, {res['date']}, copy bandwidth {res['copy_bandwidth_Bps'] / 1e12:.2f} TB/s")
    print(f"   {res['command']}  ({len(res['rows'])} rows)")

# %% [markdown]
# The newest is the one this notebook plots; every row's % floor is checked against its definition:

# %%
newest = max(range(len(files)), key=lambda i: (results[i]["date"], files[i]))
res, RUN = results[newest], os.path.basename(files[newest])[:-len(".json")]
rows = res["rows"]
for r in rows:  # the harness's % floor is floor / do_bench ms, for every row
    assert r["floor_ms"] > 0 and r["ms"] > 0 and abs(r["pct_floor"] - 100 * r["floor_ms"] / r["ms"]) < 1e-6, r

# %% [markdown]
# What the three charts share: the dtype, the passes and shapes in the run, one colour per shape,
# and our rows indexed by case:

# %%
DTYPE = "float32"
PASSES = [p for p in ("fwd", "fwd+bwd") if any(r["pass"] == p for r in rows)]
OURS = [r for r in rows if r["impl"] == "rltriton_lite" and r["dtype"] == DTYPE]
assert OURS and PASSES, f"{RUN} has no rltriton_lite {DTYPE} rows"
ALGS = list(dict.fromkeys(r["algorithm"] for r in OURS))  # the harness's order
SHAPES = sorted({(r["B"], r["T"]) for r in OURS}, key=lambda s: (s[0] * s[1], s))
shape_name = lambda s: f"{s[0]}×{s[1]}"
fmt_x = lambda x: f"{x:.3g}×" if x < 1000 else f"{x:,.0f}×"  # a speed-up
SHAPE_COLOR = dict(zip(SHAPES, plt.cm.viridis(np.linspace(0.1, 0.85, len(SHAPES)))))
key = lambda r: (r["algorithm"], r["B"], r["T"], r["dtype"], r["pass"])
ours_by = {key(r): r for r in OURS}
figures = {}  # question -> figure, checked at the end

# %%
print(f"\nplotting {RUN}: {len(rows)} rows, dtypes {sorted({r['dtype'] for r in rows})}, passes {PASSES}, "
      f"shapes {[shape_name(s) for s in SHAPES]}")
missing = [s for s in res.get("command", "").replace(",", " ").split() if "x" in s and s.replace("x", "").isdigit()
           and tuple(map(int, s.split("x"))) not in SHAPES]
if missing:
    print(f"shapes in the command with no rows in the file (not plotted): {missing}")

# %% [markdown]
# Every figure is checked before it is shown (at most 1,200 px wide; every axis names the dtype,
# the pass and its units, and has a legend); `finish_figure` titles, checks and shows it:

# %%
def check_figure(fig, *needles):
    """≤ 1,200 px wide, and every axis states the dtype and the pass, units and a legend."""
    width_px = fig.get_size_inches()[0] * fig.dpi
    assert width_px <= 1200, width_px
    for ax in fig.axes:
        text = " ".join([fig.get_suptitle(), ax.get_title(), ax.get_xlabel(), ax.get_ylabel()])
        assert DTYPE in text and any(p in text for p in PASSES), text
        assert "(" in ax.get_xlabel() + ax.get_ylabel(), "an axis label without units"
        assert ax.get_legend() is not None or fig.legends, "no legend"
    for n in needles:
        assert n in fig.get_suptitle(), n
    print(f"figure: {width_px:.0f} × {fig.get_size_inches()[1] * fig.dpi:.0f} px")


def finish_figure(fig, name, title, needle):
    """Title the figure, keep it for the final check, check it and show it."""
    fig.suptitle(title)
    figures[name] = fig
    check_figure(fig, needle, DTYPE)
    plt.show()

# %% [markdown]
# The styling the charts repeat: bars grouped by shape, a log axis labelled in % or ×, and a
# panel's title, axis labels and legend.

# %%
def shape_bars(ax, slots, values, j, shapes, labels, horizontal=False, **label_kw):
    """Bar j of len(shapes) in each slot's group, coloured and named by shape j, each labelled."""
    size = 0.8 / len(shapes)
    pos = [i + (j - (len(shapes) - 1) / 2) * size for i in slots]
    draw = ax.barh if horizontal else ax.bar
    bars = draw(pos, values, size, color=SHAPE_COLOR[shapes[j]], label=shape_name(shapes[j]))
    ax.bar_label(bars, labels=labels, **label_kw)


def log_axis(ax, which, unit):
    """A log scale whose ticks read 100 %, 10×, ..."""
    getattr(ax, f"set_{which}scale")("log")
    getattr(ax, f"{which}axis").set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}{unit}"))


def label_panel(ax, title, xlabel, ylabel, legend=None):
    """A panel's title and axis labels, and its legend when `legend` holds its options."""
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if legend is not None:
        ax.legend(**legend)

# %% [markdown]
# ## 1. How close to the memory floor?
#
# One group per algorithm, one bar per shape (rows × steps), one panel per pass. A bar is the
# headline % of the floor: floor ÷ GPU time (CUDA-graph replay), so 100 % means the kernel moved
# its bytes as fast as a device-to-device copy. The y-axis is logarithmic because small shapes sit
# far below the floor; the dashed line is 100 %.

# %%
pct = {}  # (algorithm, shape, pass) -> % floor by GPU time
for p in PASSES:
    for s in SHAPES:
        for a in ALGS:
            r = ours_by.get((a, *s, DTYPE, p))
            if r is not None and r["kernel_ms"]:
                pct[a, s, p] = 100 * r["floor_ms"] / r["kernel_ms"]

# %% [markdown]
# Drawn from `pct`, one panel per pass:

# %%
fig, axes = plt.subplots(len(PASSES), 1, figsize=(11, 3.6 * len(PASSES)), dpi=100, squeeze=False,
                         layout="constrained")
for ax, p in zip(axes[:, 0], PASSES):
    for j, s in enumerate(SHAPES):
        slots = [i for i, a in enumerate(ALGS) if (a, s, p) in pct]
        ys = [pct[ALGS[i], s, p] for i in slots]
        shape_bars(ax, slots, ys, j, SHAPES, [f"{v:.0f}" if v >= 10 else f"{v:.2g}" for v in ys], fontsize=7, padding=1)
    ax.axhline(100, color="k", ls="--", lw=1, label="the floor (100 %)")
    log_axis(ax, "y", " %")
    ax.set_ylim(min(pct.values()) / 3, max(200, *pct.values()) * 3)
    ax.set_xticks(range(len(ALGS)), ALGS)
    label_panel(ax, f"{DTYPE}, {p}", "algorithm (shape = rows × steps)", "% of memory floor (floor ÷ GPU time, %)")
fig.legend(*axes[0, 0].get_legend_handles_labels(), title="shape (rows × steps)", fontsize=8,
           ncols=len(SHAPES) + 1, loc="outside lower center")
finish_figure(fig, "floor", f"How close to the memory floor? rltriton_lite, {DTYPE}, {' and '.join(PASSES)} "
              f"({res['gpu']}, {res['date']}, copy {res['copy_bandwidth_Bps'] / 1e12:.2f} TB/s)", "floor")

# %%
assert pct and all(v > 0 for v in pct.values())
for p in PASSES:
    for s in SHAPES:
        v = {a: pct[a, s, p] for a in ALGS if (a, s, p) in pct}
        db = [ours_by[(a, *s, DTYPE, p)]["pct_floor"] for a in v]
        print(f"{p:>7} {shape_name(s):>10}: {min(v.values()):7.3g}–{max(v.values()):<7.3g}% of the floor by GPU time "
              f"(lowest {min(v, key=v.get)}); by do_bench ms, host included: {min(db):.3g}–{max(db):.3g} %")

# %% [markdown]
# Read the lines above shape by shape: small problems cannot reach the floor, copies included (a
# plain copy of 9.5 MB reaches 60 % of its floor, per the method section), and a read-heavy kernel
# such as SAC's can pass 100 %, because the floor prices reads like writes.

# %% [markdown]
# ## 2. How much faster than each peer?
#
# Speed-up = the peer's wall time per call ÷ ours, at the same algorithm, shape, dtype and pass,
# for every (algorithm, peer) pair in the run. Wall time per call is the one timing every peer
# has: JAX, torchrl and the Python loops cannot be captured in a CUDA graph, so they have no GPU
# time. Right of the line at 1× ours is faster; the x-axis is logarithmic because the Python loops
# are thousands of times slower. The bare launch and the minimal autograd.Function are anchors,
# not peers: they are in chart 3.

# %%
ANCHORS = {"bare_triton_launch": "bare Triton launch", "minimal_autograd_fn": "minimal autograd.Function"}
peers = sorted({r["impl"] for r in rows} - {"rltriton_lite"} - set(ANCHORS))
print("peers in this result:", peers)
speedups, unmatched = [], 0
for r in rows:
    if r["impl"] in peers and r["dtype"] == DTYPE:
        o = ours_by.get(key(r))
        if o is None:
            unmatched += 1
            continue
        speedups.append(dict(peer=r["impl"], algorithm=r["algorithm"], shape=(r["B"], r["T"]), pass_=r["pass"],
                             x=r["full_call_us"] / o["full_call_us"]))
no_gpu = sorted({r["impl"] for r in rows if r["impl"] in peers and r["kernel_ms"] is None})
print(f"{len(speedups)} (peer, case) pairs, {unmatched} peer rows without a matching rltriton_lite row; "
      f"peers with no GPU time in some rows: {no_gpu}")
assert speedups and all(np.isfinite(s["x"]) and s["x"] > 0 for s in speedups)

# %% [markdown]
# One row per (algorithm, peer) pair with a case in the pass, and in each row one bar per shape
# that has a speed-up:

# %%
pairs = {p: [(a, q) for a in ALGS for q in peers if any(s["algorithm"] == a and s["peer"] == q and s["pass_"] == p
                                                         for s in speedups)] for p in PASSES}
PEER_SHAPES = [s for s in SHAPES if any(x["shape"] == s for x in speedups)]
peer_bars = {}  # (pass, shape) -> (the rows of pairs[pass] with a speed-up at that shape, the speed-ups)
for p in PASSES:
    for s in PEER_SHAPES:
        hits = [(i, [x["x"] for x in speedups if (x["algorithm"], x["peer"], x["shape"], x["pass_"]) == (a, q, s, p)])
                for i, (a, q) in enumerate(pairs[p])]
        peer_bars[p, s] = ([i for i, hit in hits if hit], [hit[0] for _, hit in hits if hit])

# %%
fig, axes = plt.subplots(len(PASSES), 1, figsize=(11, 1.2 + 0.27 * sum(len(v) for v in pairs.values()) + 1.2 * len(PASSES)),
                         dpi=100, squeeze=False, layout="constrained",
                         gridspec_kw=dict(height_ratios=[max(len(pairs[p]), 1) + 3 for p in PASSES]))
n_bars = 0
for ax, p in zip(axes[:, 0], PASSES):
    for j, s in enumerate(PEER_SHAPES):
        ys, xs = peer_bars[p, s]
        shape_bars(ax, ys, xs, j, PEER_SHAPES, [fmt_x(x) for x in xs], horizontal=True, fontsize=6, padding=2)
        n_bars += len(xs)
    for i in range(1, len(pairs[p])):  # a rule between algorithms
        if pairs[p][i][0] != pairs[p][i - 1][0]:
            ax.axhline(i - 0.5, color="0.8", lw=0.8)
    ax.axvline(1, color="k", ls="--", lw=1, label="1× (as fast)")
    log_axis(ax, "x", "×")
    ax.set_xlim(0.3, 8 * max(x["x"] for x in speedups if x["pass_"] == p))
    ax.set_yticks(range(len(pairs[p])), [f"{a} vs {q}" for a, q in pairs[p]], fontsize=8)
    ax.set_ylim(len(pairs[p]) - 0.5, -0.5)
    label_panel(ax, f"{DTYPE}, {p}", "speed-up = peer's wall time per call ÷ ours (×, log scale)",
                "algorithm vs peer", legend=dict(title="shape", fontsize=8, loc="lower right"))
assert n_bars == sum(1 for s in speedups if s["shape"] in PEER_SHAPES)  # every pair drawn, nothing else
finish_figure(fig, "peers", f"How much faster than each peer? Wall time per call, host included, {DTYPE} "
              f"({res['gpu']}, {res['date']})", "faster")

# %%
for p in PASSES:
    for q in peers:
        xs = [s["x"] for s in speedups if s["peer"] == q and s["pass_"] == p]
        if xs:
            print(f"{p:>7} vs {q:<22} {fmt_x(min(xs)):>7} to {fmt_x(max(xs)):>8} over {len(xs):2} cases")
slower = sorted((s["x"], s["algorithm"], s["peer"], shape_name(s["shape"]), s["pass_"]) for s in speedups if s["x"] < 1)
print(f"\n{len(slower)} of {len(speedups)} cases where the peer's call was faster:")
for x, a, q, s, p in slower:
    print(f"   {a} {p} {s} vs {q}: {x:.2f}×")

# %% [markdown]
# These ratios come from one run of the harness on a shared host, where the same call's wall time
# can move 1.2–2.9× between runs; the README's rl-triton ratios come from
# `benchmarks/results/H200-2026-12-01d-wall.txt`, which times the candidates in interleaved rounds
# and is the steadier source for close calls (ratios near 1×).

# %% [markdown]
# ## 3. Wall versus GPU time
#
# At the shapes RL code uses, a call's wall time (back-to-back eager calls, host included) beside
# its GPU time (CUDA-graph replay, the kernels alone), both in µs on a log scale. The hatched bars
# are the harness's anchors at the same shape: a bare Triton launch (a naive one-program-per-row
# GAE kernel) for the forward pass and a minimal `torch.autograd.Function` (PPO's loss) for both;
# the dashed line is the anchor's wall time the harness divides by (bare launch for fwd, minimal
# Function for fwd+bwd). A wall bar far above its GPU bar means the call is host time.

# %%
RL_SHAPES = [s for s in [(4096, 128), (64, 16384)] if s in SHAPES]
assert RL_SHAPES, "the result has none of the RL shapes"
anchor_rows = {(r["impl"], r["B"], r["T"], r["pass"]): r for r in rows if r["impl"] in ANCHORS and r["dtype"] == DTYPE}
HEAD_ANCHOR = {"fwd": "bare_triton_launch", "fwd+bwd": "minimal_autograd_fn"}
panels = {}  # (pass, shape) -> the panel's (label, row)s: our algorithms, then the anchors
wall_gpu = {}  # (algorithm, shape, pass) -> (wall µs, GPU µs)
for p in PASSES:
    for s in RL_SHAPES:
        cases = [(a, ours_by[(a, *s, DTYPE, p)]) for a in ALGS if (a, *s, DTYPE, p) in ours_by]
        cases += [(f"{ANCHORS[i]}\n({anchor_rows[(i, *s, p)]['algorithm']})", anchor_rows[(i, *s, p)])
                  for i in ANCHORS if (i, *s, p) in anchor_rows]
        panels[p, s] = cases
        for a, r in cases:
            if a in ALGS:
                wall_gpu[a, s, p] = (r["full_call_us"], 1e3 * r["kernel_ms"])

# %% [markdown]
# `wall_and_gpu_bars` draws one panel: a wall-time and a GPU-time bar per case, the anchors hatched,
# and the dashed line at the anchor's wall time.

# %%
def wall_and_gpu_bars(ax, cases, head, head_name):
    n_ours = sum(1 for a, _ in cases if a in ALGS)
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

# %%
fig, axes = plt.subplots(len(PASSES), len(RL_SHAPES), figsize=(11, 3.9 * len(PASSES)), dpi=100, squeeze=False,
                         sharey=True, layout="constrained")
for row, p in enumerate(PASSES):
    for col, s in enumerate(RL_SHAPES):
        ax, head = axes[row, col], anchor_rows.get((HEAD_ANCHOR.get(p), *s, p))
        wall_and_gpu_bars(ax, panels[p, s], head, ANCHORS.get(HEAD_ANCHOR.get(p)))
        label_panel(ax, f"{shape_name(s)}, {DTYPE}, {p}", "algorithm (hatched: anchors)",
                    "time per call (µs, log scale)" if col == 0 else "", legend=dict(fontsize=7, loc="upper left"))
top = max(v for ax in axes.flat for c in ax.containers for v in c.datavalues)
axes[0, 0].set_ylim(top=top * 12)  # room for the legends
finish_figure(fig, "wall", f"Wall versus GPU time per call, rltriton_lite, {DTYPE}, {' and '.join(PASSES)} "
              f"({res['gpu']}, {res['date']})", "Wall versus GPU")

# %%
assert wall_gpu and all(w > 0 and g > 0 for w, g in wall_gpu.values())
for p in PASSES:
    for s in RL_SHAPES:
        v = {a: w / g for (a, s2, p2), (w, g) in wall_gpu.items() if (s2, p2) == (s, p)}
        head = anchor_rows.get((HEAD_ANCHOR.get(p), *s, p))
        below = [a for (a, s2, p2), (w, _) in wall_gpu.items() if (s2, p2) == (s, p) and head and w < head["full_call_us"]]
        print(f"{p:>7} {shape_name(s):>9}: wall ÷ GPU time {min(v.values()):.3g}–{max(v.values()):.3g}× "
              f"(median {np.median(list(v.values())):.3g}×); "
              + (f"{len(below)} of {len(v)} calls cost less wall time than the {ANCHORS[HEAD_ANCHOR[p]]}" if head else "no anchor"))

# %% [markdown]
# Where wall ÷ GPU time is large, a call pays mostly for the host: launching, argument checks and
# autograd bookkeeping. Replaying the training step as a CUDA graph (`torch.compile(mode=
# "reduce-overhead")`, see the README) removes that part and leaves the blue bars.

# %%
for name, f in figures.items():
    w, h = f.get_size_inches() * f.dpi
    print(f"{name:>6}: {w:.0f} × {h:.0f} px")
assert len(figures) == 3 and all(f.get_size_inches()[0] * f.dpi <= 1200 for f in figures.values())

# %% [markdown]
# ## Live, when a GPU is here
#
# A small slice of the benchmark (every algorithm at one shape, forward, against the PyTorch
# code it replaces) re-runs in this process and writes to a temporary folder; on a CPU this cell
# says that it skipped and checks nothing more.

# %%
if torch.cuda.is_available():
    import tempfile

    from rltriton_lite import bench

    live = bench.main(["--shapes", "4096x128", "--dtypes", "float32", "--passes", "fwd",
                       "--peers", "pytorch_loop,pytorch_eager", "--out", tempfile.mkdtemp()])
    assert live == 0
else:
    print("no GPU: the live run is skipped; the charts above show the committed results only")

# %% [markdown]
# ## Exercises
#
# 1. From the committed JSON, find for each algorithm the largest shape at which its wall time
#    per call is still more than twice its GPU time (the ratio falls as the shape grows). At and
#    below that size, what would you optimise first in a training loop that calls it once per
#    update?
# 2. The floor chart can pass 100 % (SAC at small shapes). Which assumption of the floor model
#    (notebook 08) fails there? Hint: how large is the L2 cache of an H200, and how many bytes
#    does SAC move at 64×16384?
# 3. Pick one peer from chart 2 that is within 1.5× of this library somewhere. Read its
#    implementation (the harness's peer list is in `rltriton_lite/bench.py`) and say where the
#    difference comes from: the kernel, or the host.
