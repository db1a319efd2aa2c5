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
# # 09 — Benchmarks on a GPU
#
# `python -m rltriton_lite.bench` measures every kernel on a GPU against the memory floor and
# against the peers it finds in the same process (a PyTorch loop, and others as they are added),
# and writes `benchmarks/results/<gpu>-<date>.json`. This notebook reads the committed results
# and plots them; with a GPU present it also re-runs a small part live.
#
# The method (docs/DESIGN.md, "Benchmark method"): floor = the fewest bytes an op must move ÷
# the copy bandwidth measured in the same run; time = `triton.testing.do_bench` median.

# %%
import glob
import json
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import matplotlib.pyplot as plt

ROOT = os.path.abspath(os.path.join(os.getcwd(), "..")) if os.path.basename(os.getcwd()) == "notebooks" else os.getcwd()
files = sorted(glob.glob(os.path.join(ROOT, "benchmarks", "results", "*.json")))
assert files, "no committed benchmark results"
results = [json.load(open(f)) for f in files]
for f, res in zip(files, results):
    print(f"{os.path.basename(f)}: {res['gpu']}, {res['date']}, copy bandwidth {res['copy_bandwidth_Bps'] / 1e12:.2f} TB/s")
    print(f"   {res['command']}  ({len(res['rows'])} rows)")

# %% [markdown]
# ## % of the memory floor, per algorithm and shape
#
# Each bar is one (algorithm, shape) row of the newest result, forward pass, float32.

# %%
res = results[-1]
rows = [r for r in res["rows"] if r["impl"] == "rltriton_lite" and r["dtype"] == "float32"]
for r in rows:
    assert r["floor_ms"] > 0 and r["ms"] > 0 and abs(r["pct_floor"] - 100 * r["floor_ms"] / r["ms"]) < 1e-6
fwd = [r for r in rows if r["pass"] == "fwd"]
labels = [f"{r['algorithm']}\n{r['B']}×{r['T']}" for r in fwd]
fig, ax = plt.subplots(figsize=(max(8, len(fwd) * 0.6), 3.5))
ax.bar(range(len(fwd)), [r["pct_floor"] for r in fwd], color="tab:green")
ax.set_xticks(range(len(fwd)), labels, rotation=90, fontsize=7)
ax.axhline(100, color="k", ls="--", lw=1)
ax.set_ylabel("% of memory floor")
ax.set_title(f"{res['gpu']}, {res['date']}")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Speed-up over the peers measured in the same run

# %%
peers = sorted({r["impl"] for r in res["rows"] if not r["impl"].startswith("rltriton_lite")})
print("peers in this result:", peers)
speedups = []
for p in peers:
    for r in [r for r in res["rows"] if r["impl"] == p]:
        ours = [o for o in res["rows"] if o["impl"] == "rltriton_lite" and all(o[k] == r[k] for k in ("algorithm", "B", "T", "dtype", "pass"))]
        if ours:
            speedups.append((p, r["algorithm"], r["B"], r["T"], r["ms"] / ours[0]["ms"], r["dtype"], r["pass"]))
print(f"{len(speedups)} (peer, case) pairs; the first few:")
for s in speedups[:8]:
    print(f"{s[1]:>18} {s[2]:>6}×{s[3]:<7} vs {s[0]:<14} {s[4]:10.1f}×")
assert all(s[4] > 0 for s in speedups)

# %% [markdown]
# One panel per peer: the speed-up against the problem's size (rows × steps), one line per
# algorithm (float32, forward). Above the dotted line ours is faster. These are `ms` ratios (do_bench: the host's
# launch cost included), so at small sizes they compare Python launchers as much as kernels.

# %%
if speedups:
    fig, axes = plt.subplots(1, len(peers), figsize=(2.6 * len(peers), 2.6), sharey=True, squeeze=False)
    for ax, p in zip(axes[0], peers):
        for alg in sorted({s[1] for s in speedups if s[0] == p}):
            pts = sorted((s[2] * s[3], s[4]) for s in speedups
                         if s[0] == p and s[1] == alg and s[5:] == ("float32", "fwd"))
            ax.plot([x for x, _ in pts], [y for _, y in pts], "o-", ms=3, label=alg)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.axhline(1, color="k", ls=":", lw=1)
        ax.set_title(p, fontsize=8)
        ax.set_xlabel("rows × steps", fontsize=7)
    axes[0][0].set_ylabel("speed-up (×)")
    axes[0][-1].legend(fontsize=6)
    plt.tight_layout()
    plt.show()

# %% [markdown]
# ## Live, when a GPU is here
#
# A small slice of the benchmark (every algorithm at one shape, forward, against the PyTorch
# code it replaces) re-runs in this process and writes to a temporary folder; on a CPU this cell
# says so and checks nothing more.

# %%
if torch.cuda.is_available():
    import tempfile

    from rltriton_lite import bench

    live = bench.main(["--shapes", "4096x128", "--dtypes", "float32", "--passes", "fwd",
                       "--peers", "pytorch_loop,pytorch_eager", "--out", tempfile.mkdtemp()])
    assert live == 0
else:
    print("no GPU: showing the committed results only")
