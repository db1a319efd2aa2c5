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
# # 11 — Across devices: one scan, its steps on several processes
#
# A language model's response of 128K tokens is an episode, and its GAE runs along all of it. In a
# context- or sequence-parallel stack each GPU holds a stretch of the sequence (its activations are
# what does not fit on one GPU): rank 0 the first steps, rank 1 the next, and so on. Gathering every
# rank's rewards and values onto each GPU would move O(steps) per rank; the scan across ranks moves
# O(rows × ranks). The recurrence
# $y_t = b_t + a_t\,y_{t+1}$ looks as if it needed the whole sequence in order, rank after rank.
#
# Notebook 00 showed why it does not: affine maps compose associatively, so any stretch of steps
# is *one* map, $y_{\text{first}} = B + A\,y_{\text{after}}$, and maps can be composed in any
# grouping. This notebook splits a scan across processes by hand, then runs the package's
# `time_group=` on two real processes started from here, and checks both against the
# one-process call.

# %%
import os
import subprocess
import sys
import tempfile
import textwrap

import matplotlib.pyplot as plt
import torch

import rltriton_lite as rl

torch.manual_seed(0)

# %% [markdown]
# ## 1. A stretch of steps is one affine map
#
# Take 4 rows of 24 steps and cut them into three segments, as three ranks would hold them. For
# each segment, its map from the value after it ($y$ at its end, the *carry*) to the value at its
# first step: $A$ is the product of its $a_t$, and $B$ is what the segment gives with a carry
# of 0. Both come from the scan itself.

# %%
rows, T = 4, 24
a = torch.rand(rows, T, dtype=torch.float64) * 0.5 + 0.5
b = torch.randn(rows, T, dtype=torch.float64)
bounds = [0, 7, 15, 24]  # rank r holds the steps [bounds[r], bounds[r + 1])
segments = [(a[:, lo:hi], b[:, lo:hi]) for lo, hi in zip(bounds, bounds[1:])]


def segment_map(a_seg, b_seg):
    """(A, B) per row: y at the segment's first step is B + A * carry."""
    B = rl.linear_scan(a_seg, b_seg)[:, 0]  # the carry 0
    A = a_seg.prod(-1)  # no step resets here (no a_t = 0)
    return A, B


maps = [segment_map(*s) for s in segments]
carry = torch.randn(rows, dtype=torch.float64)
for (a_seg, b_seg), (A, B) in zip(segments, maps):
    y = rl.linear_scan(a_seg, b_seg, initial=carry)
    assert torch.allclose(y[:, 0], B + A * carry)
print("each segment's first value is B + A * carry, for any carry")

# %% [markdown]
# ## 2. Composing the maps gives every segment its carry
#
# The last segment's carry is the scan's `initial` (0 here). Each segment's carry is then the map
# of the segments after it applied to that: $c_2 = 0$, $c_1 = B_2 + A_2 c_2$, $c_0 = B_1 + A_1
# c_1$. A composition of a few numbers per row — no step is read twice. With the carries known,
# each segment is scanned on its own, and the pieces are the one-process scan.

# %%
carries = [None] * 3
c = torch.zeros(rows, dtype=torch.float64)
for r in (2, 1, 0):
    carries[r] = c
    A, B = maps[r]
    c = B + A * c

pieces = [rl.linear_scan(a_seg, b_seg, initial=cr) for (a_seg, b_seg), cr in zip(segments, carries)]
whole = rl.linear_scan(a, b)
assert torch.allclose(torch.cat(pieces, -1), whole)
print("three segments scanned from their composed carries = the one-process scan")

# %% [markdown]
# An episode end makes a step a *reset*: $y_t = b_t$, whatever comes after. A segment with a reset
# hands on nothing from its carry, so its map is "$B$, whatever the carry" — a select, not
# $A = 0$, so that a NaN in a later episode cannot leak backwards through $0 \cdot \text{NaN}$.
# The package's maps are triples $(A, B, \text{reset})$ for that reason.
#
# ## 3. The exchange, drawn
#
# Each rank computes its segment's map (one read of its steps), the ranks swap their maps (an
# `all_gather` of three numbers per row per rank, whatever the length), and each composes the
# maps of the ranks after it into its carry, then scans its own steps from it. (The package's
# gather carries a fourth number per row, a flag that lets every rank raise the same error when
# one rank's arguments were refused.)

# %%
fig, ax = plt.subplots(figsize=(10, 3.4))
colors = ["tab:blue", "tab:orange", "tab:green"]
for r, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
    ax.add_patch(plt.Rectangle((lo, 0), hi - lo - 0.3, 1, color=colors[r], alpha=0.35))
    ax.text((lo + hi) / 2, 0.5, f"rank {r}\nsteps {lo}..{hi - 1}", ha="center", va="center")
    ax.annotate("", xy=((lo + hi) / 2, 2.2), xytext=((lo + hi) / 2, 1.05),
                arrowprops=dict(arrowstyle="->", color=colors[r]))
    ax.text((lo + hi) / 2 + 0.3, 1.6, f"$(A_{r}, B_{r})$", color=colors[r])
ax.add_patch(plt.Rectangle((0, 2.2), T - 0.3, 0.6, color="0.85"))
ax.text(T / 2, 2.5, "all_gather: every rank gets every map (3 numbers per row per rank)", ha="center", va="center")
for r in (0, 1):
    ax.annotate("", xy=(bounds[r + 1] - 0.5, -0.15), xytext=(bounds[r + 1] + 1.5, -0.15),
                arrowprops=dict(arrowstyle="->", color="k"))
    ax.text(bounds[r + 1] - 1.2, -0.55, f"carry $c_{r}$ composed from ranks > {r}", fontsize=9)
ax.set_xlim(-0.5, T + 0.5)
ax.set_ylim(-0.8, 3.0)
ax.set_xlabel("time step")
ax.set_yticks([])
ax.set_title("A reverse scan across three ranks: maps up, carries back (no rank waits for another's scan)")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 4. Two processes, started from this notebook
#
# `torchrun --nproc-per-node 2 train.py` starts two processes and tells each its rank through
# environment variables. Here the notebook does the same by hand, so that it runs anywhere: it
# writes a small worker script, starts it twice (ranks 0 and 1, on the CPU with gloo), and waits.
# Each worker calls `rl.gae(..., time_group=...)` on its own steps — GAE, not a bare scan: at its
# last step $\delta_t$ reads $V(s_{t+1})$, the *next* rank's first value, which the package
# exchanges too — and backpropagates a weighted sum of its advantages.

# %%
folder = tempfile.mkdtemp()
steps = 40
rollout = {"rewards": torch.randn(3, steps, dtype=torch.float64), "values": torch.randn(3, steps, dtype=torch.float64),
           "terminated": torch.rand(3, steps) < 0.05, "bootstrap": torch.randn(3, dtype=torch.float64),
           "weights": torch.randn(3, steps, dtype=torch.float64), "bounds": [0, 17, steps]}
rollout["terminated"][0, 16] = True  # an episode ends exactly at the boundary
torch.save(rollout, os.path.join(folder, "rollout.pt"))

worker = textwrap.dedent('''
    import datetime, sys
    import torch
    import torch.distributed as dist
    import rltriton_lite as rl

    rank, world, folder = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    dist.init_process_group("gloo", init_method=f"file://{folder}/rendezvous", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    x = torch.load(f"{folder}/rollout.pt")
    lo, hi = x["bounds"][rank], x["bounds"][rank + 1]  # this rank's steps
    values = x["values"][:, lo:hi].clone().requires_grad_()
    adv, ret = rl.gae(x["rewards"][:, lo:hi], values, gamma=0.99, lambda_=0.95,
                      terminated=x["terminated"][:, lo:hi], bootstrap_value=x["bootstrap"],
                      time_group=dist.group.WORLD)
    (adv * x["weights"][:, lo:hi]).sum().backward()
    torch.save({"adv": adv, "ret": ret, "d_values": values.grad}, f"{folder}/rank{rank}.pt")
    dist.destroy_process_group()
''')
with open(os.path.join(folder, "worker.py"), "w") as f:
    f.write(worker)

procs = [subprocess.Popen([sys.executable, os.path.join(folder, "worker.py"), str(r), "2", folder])
         for r in range(2)]
codes = [p.wait(timeout=120) for p in procs]  # (a collective that hung would raise here, not wait forever)
assert codes == [0, 0], codes
shares = [torch.load(os.path.join(folder, f"rank{r}.pt")) for r in range(2)]
print("rank 0 holds", shares[0]["adv"].shape[-1], "steps, rank 1 holds", shares[1]["adv"].shape[-1])

# %% [markdown]
# The same call in one process, on all 40 steps, is the reference: the ranks' pieces, put side by
# side, must be it — advantages, returns, and the gradient with respect to every value.

# %%
values = rollout["values"].clone().requires_grad_()
adv, ret = rl.gae(rollout["rewards"], values, gamma=0.99, lambda_=0.95, terminated=rollout["terminated"],
                  bootstrap_value=rollout["bootstrap"])
(adv * rollout["weights"]).sum().backward()
for key, expected in (("adv", adv), ("ret", ret), ("d_values", values.grad)):
    got = torch.cat([s[key] for s in shares], -1)
    assert torch.allclose(got, expected, rtol=1e-12, atol=1e-12), key
    print(f"{key:9s} max difference {float((got - expected).abs().max()):.1e}")

# %% [markdown]
# The gradient crosses the boundary the other way: $V$ at rank 1's first step was read by rank 0's
# last $\delta$, so part of its gradient is computed on rank 0 and sent back. The backward pass
# is the mirror of the forward: maps of the gradients composed over the ranks *before* each one.
#
# ## 5. What it costs
#
# Per call, forwards, each rank reads its steps twice (the map, then the scan from its carry) and
# the ranks exchange O(rows × ranks) numbers three times (a header so that ranks that disagree all
# raise the same error, the first values, the maps); backwards, two passes and two exchanges. The
# length of the sequence never crosses the wire. `tools/time_group_cost.py` measures a rank's
# share of that on a GPU; `benchmarks/results/checks/` has the figures.
#
# ## Exercises
#
# 1. How many bytes does the maps' `all_gather` move into each rank for 4096 rows on 8 ranks
#    (three float64 numbers per row per rank)? Compare with one input tensor of the rank's own
#    steps, 4096 rows of 16,384 steps in float32.
# 2. With `reverse=False` (a forward scan, $y_t = b_t + a_t y_{t-1}$), which ranks' maps does a
#    rank compose, and where does `initial` enter?
# 3. Why not send each rank's *first output* to the rank before it instead of its map? Count the
#    rounds of messages each way for 8 ranks.
