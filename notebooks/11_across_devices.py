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
# * **You will learn:** one scan with its steps on several processes. A segment is one affine map;
#   the maps are exchanged and the carries composed. Then the package's `time_group=` on two
#   processes.
# * **Time:** 1.75–2.25 h with the open questions; 1–1.25 h for the reading and the checked
#   exercises.
# * **Needs:** notebooks 00, 01b's section 2 (it names `transposed_scan`) and 02 (section 5 is
#   GAE); the basics of `torch.distributed`. No GPU: the two processes run on the CPU, where each
#   takes the package's PyTorch path, not the kernel (the same arithmetic, checked alike).
# * **Minimum path:** sections 1–5 and the checked exercises `segment_carries` (it needs sections
#   1–3) and `gae_segment_map` (section 5). Sections 6 (the backward, and its exercise `segment_grad_carries`), 7 (the cost) and the open questions can wait. The backward's
#   details and what crosses the wire are in
#   [notebook 13c, section 7](13c_inside_the_package.ipynb#7.-Across-devices:-the-backward,-and-what-crosses-the-wire),
#   for maintainers.
#
# **What it shows:** a scan whose steps are split across processes can be computed in pieces, one
# per process, that together equal the one-process call, gradients included;
# [section 7](#7.-What-it-costs) measures what that costs and says when to gather the rows instead.
# Gathering usually wins; the split is worth learning because a batch too big to gather needs it,
# and because its carry trick is the one the package uses inside one GPU to split long rows
# ([notebook 13, section 3](13_appendix_performance.ipynb#3.-Enough-programs:-why-a-few-long-rows-leave-the-GPU-idle)).
#
# A language model's response of 128K tokens is an episode, and its GAE runs along all of it.
#
# In a context- or sequence-parallel stack, each GPU holds a stretch of the sequence: rank 0 the
# first steps, rank 1 the next, and so on. The model is split that way because its activations do
# not fit on one GPU. So the rewards and values it produces arrive split the same way: each rank
# holds those of its own steps. The policy loss, which reads the advantages, is computed on each
# rank's own steps as well. A batch holds several such sequences, and we call each one a *row*.
#
# This notebook computes GAE on data that is already sharded, and leaves the result sharded. Each
# rank computes the advantages of its own steps. The pieces, put side by side, equal the
# one-device call to rounding. GAE run on each rank's steps alone would not: it would end every
# episode that crosses a rank's boundary there.
#
# The simple alternative is to gather the rows onto every rank and make one local call. It is
# cheap because GAE's inputs are small. The values and rewards alone, two float32 numbers per
# token, are 1 MiB for a row of 128K tokens; the done flags add one byte per token.
#
# The recurrence $y_t = b_t + a_t\,y_{t+1}$ looks as if it needed the whole sequence in order, rank
# after rank. Notebook 00 showed why it does not. Affine maps compose associatively. So any stretch
# of steps is *one* map, $y_{\text{first}} = B + A\,y_{\text{after}}$, and maps can be composed in
# any grouping.

# %%
import inspect
import os
import re
import subprocess
import sys
import tempfile
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import torch

import rltriton_lite as rl
from rltriton_lite import distributed, exercises, profile

_ = torch.manual_seed(0)

# %% [markdown]
# ## 1. A stretch of steps is one affine map
#
# Take 4 rows of 24 steps. Cut them into three segments, as three ranks would hold them.
#
# The value that enters a segment from the steps after it is its *carry*: the $y$ of the first
# step past the segment's end, which is the next segment's first value. Given its carry $c$, a
# segment's first value is $B + A\,c$, one affine map per row:
#
# * $A$ is the product of the segment's $a_t$.
# * $B$ is what the segment gives with a carry of 0.
#
# Both come from the segment's own steps.

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
# The last segment's carry is the scan's `initial` (0 here). Each earlier segment's carry is the
# map of the segments after it, applied to that:
#
# $$c_2 = 0, \qquad c_1 = B_2 + A_2 c_2, \qquad c_0 = B_1 + A_1 c_1.$$
#
# This composes a few numbers per row: the composition rereads no step. Once the carries are
# known, each segment is scanned on its own, and the pieces put side by side are the one-process
# scan.

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
# ## 3. An episode end at the boundary, by hand
#
# **In short:** a segment that holds an episode end ignores its carry: its map is "$B$, whatever
# the carry". The package writes that as a select, never as $A = 0$, so a NaN on the next rank
# cannot cross the boundary.
#
# An episode end makes a step a *reset*: $y_t = b_t$, whatever comes after. So nothing of a
# segment's carry reaches its first value once the segment contains a reset: its map is "$B$,
# whatever the carry".
#
# The package writes that map as a select, not as $A = 0$. A product would let a NaN in a later
# episode leak backwards, since $0 \cdot \text{NaN} = \text{NaN}$; a select drops it. For that
# reason, the package's maps are triples $(A, B, \text{reset})$.
#
# `rl.linear_scan` reads an input $a_t = 0$ as a reset flag and selects, so passing 0 to it is
# safe; multiplying by 0 in your own code is not.
#
# The hardest place for a reset is a rank's last step. The example is one row of 12 steps on two
# ranks (steps 0–5 and 6–11):
#
# * The episode ends at step 5, exactly at the boundary.
# * The reward at step 8, in the next episode, is NaN (a failed environment step, say).
#
# For the discounted return, step $t$ is the triple
# $(a_t, b_t, \kappa_t) = (\gamma, \text{reward}_t, \text{done}_t)$, where $\kappa_t$ says whether
# the step resets. A segment's triple composes its steps one at a time, from its last step back to
# its first. The rule is that of notebook 00c's `reset_scan`: a step that resets ignores the steps
# after it.
#
# Written out: let $(A, B, K)$ be the triple of the steps after a step (the later run),
# $(a, b, \kappa)$ the step's own, and $c$ the carry that enters after the later run. Then
#
# $$y_{\text{first}} = b + a\,(B + A\,c) = (b + aB) + (aA)\,c, \qquad \text{or } y_{\text{first}} = b
# \text{ where the step resets } (\kappa).$$
#
# So the composed triple is $(aA,\ b + aB,\ K)$, or $(a, b, \text{True})$ at a reset, its $a$ never read.
# In `compose` below, `after` is $(A, B, K)$ and `step` is $(a, b, \kappa)$.

# %%
gamma = 0.9
reward = torch.randn(12, dtype=torch.float64)
reward[8] = float("nan")  # the row's second episode, rank 1's first
done = torch.zeros(12, dtype=torch.bool)
done[5] = True  # rank 0's last step: the episode ends exactly at the boundary


def compose(after, step):
    """The triple of (one step, then the steps after it): a reset selects the step alone."""
    (A, B, K), (a, b, k) = after, step  # after: the later run's (A, B, K); step: the step before it, (a, b, κ)
    # y_first = b + a * (B + A * c), c the carry after the later run: so (a * A, b + a * B), or b alone at a reset
    return (a, b, True) if k else (a * A, b + a * B, K)


def segment_triple(lo, hi):
    triple = (1.0, 0.0, False)  # the identity: no steps
    for t in reversed(range(lo, hi)):
        triple = compose(triple, (gamma, float(reward[t]), bool(done[t])))
    return triple


triples = [segment_triple(0, 6), segment_triple(6, 12)]
for rank, (A, B, R) in enumerate(triples):
    shown_A = "— (not read: a reset)" if R else f"{A:.4f}"  # a reset's A is selected away, never used
    print(f"rank {rank}: A = {shown_A}, B = {B:.4f}, reset = {R}")

# %% [markdown]
# Rank 1's $B$ is NaN, and rightly so. Its first value depends on the NaN reward, since both lie in
# its first episode. That NaN is the carry rank 0 receives.
#
# Rank 0's triple has reset = True. So its first value is $B_0$ alone: the carry is selected away.
# Every step of rank 0 is in the episode that ended at step 5, so the same select holds at each of
# them.
#
# Written as a product instead, with $A_0 = 0$ standing for the reset, the NaN crosses the
# boundary: $0 \cdot \text{NaN} = \text{NaN}$. The cell below computes both.

# %%
(A0, B0, R0), (A1, B1, R1) = triples
carry = B1 if R1 else B1 + A1 * 0.0  # into rank 0: rank 1's first value (initial = 0 after it)
first_select = B0 if R0 else B0 + A0 * carry
first_product = B0 + 0.0 * carry  # the reset as A = 0, multiplied
one_process = rl.discounted_returns(reward[None], gamma=gamma, terminated=done[None])[0]
print(f"carry into rank 0: {carry}; rank 0's first value: select {first_select:.6f}, "
      f"product {first_product}, one process {float(one_process[0]):.6f}")
assert np.isnan(carry) and np.isnan(first_product)
assert np.isclose(first_select, float(one_process[0]))
assert torch.isfinite(one_process[:6]).all() and torch.isnan(one_process[6:9]).all()  # the NaN stays on rank 1

# %% jupyter={"source_hidden": true}
# Checks: "passing 0 to rl.linear_scan is safe; multiplying by 0 is not" (CI runs them; skip when reading)
_y = rl.linear_scan(torch.tensor([[0.5, 0.0, 0.5]], dtype=torch.float64),
                    torch.tensor([[1.0, 2.0, float("nan")]], dtype=torch.float64))
assert _y[0, :2].tolist() == [2.0, 2.0] and torch.isnan(_y[0, 2])  # a_1 = 0 selects y_1 = b_1: the NaN stays put
assert np.isnan(2.0 + 0.0 * float("nan"))  # the same step written as a product lets it through
# compose's comment: y_first = b + a * (B + A * c); a reset keeps b alone, and the later run's reset flag otherwise
_A, _B, _K = compose((0.5, 2.0, False), (0.9, 1.0, False))
assert np.isclose(_B + _A * 3.0, 1.0 + 0.9 * (2.0 + 0.5 * 3.0)) and not _K
assert compose((0.5, 2.0, False), (0.9, 1.0, True))[1:] == (1.0, True) and compose((0.5, 2.0, True), (0.9, 1.0, False))[2]

# %% [markdown]
# ## 4. The exchange, drawn
#
# The drawing below shows three steps:
#
# 1. Each rank computes its segment's map: one read of its steps.
# 2. The ranks swap their maps in one `all_gather`. Per row, each rank sends the triple
#    $(A, B, \text{reset})$ of section 3: a few numbers, whatever the length.
# 3. Each rank composes the maps of the ranks after it into its carry. Then it scans its own steps
#    from that carry.

# %%
colors = ["tab:blue", "tab:orange", "tab:green"]


def draw_ranks(sent, gathered, across, title):
    """Three ranks' segments; each sends sent(r) up to one all_gather (gathered: its label); at each
    boundary an arrow labelled across(r), pointing back in time."""
    fig, ax = plt.subplots(figsize=(10, 3.4))
    for r, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
        ax.add_patch(plt.Rectangle((lo, 0), hi - lo - 0.3, 1, color=colors[r], alpha=0.35))
        ax.text((lo + hi) / 2, 0.5, f"rank {r}\nsteps {lo}..{hi - 1}", ha="center", va="center")
        ax.annotate("", xy=((lo + hi) / 2, 2.2), xytext=((lo + hi) / 2, 1.05),
                    arrowprops=dict(arrowstyle="->", color=colors[r]))
        ax.text((lo + hi) / 2 + 0.3, 1.6, sent(r), color=colors[r])
    ax.add_patch(plt.Rectangle((0, 2.2), T - 0.3, 0.6, color="0.85"))
    ax.text(T / 2, 2.5, gathered, ha="center", va="center")
    for r in (1, 2):  # the boundary before rank r
        ax.annotate("", xy=(bounds[r] - 0.5, -0.15), xytext=(bounds[r] + 1.5, -0.15),
                    arrowprops=dict(arrowstyle="->", color="k"))
        ax.text(bounds[r] - 1.2, -0.55, across(r), fontsize=9)
    ax.set_xlim(-0.5, T + 0.5)
    ax.set_ylim(-0.8, 3.0)
    ax.set_xlabel("time step")
    ax.set_yticks([])
    ax.set_title(title)
    plt.tight_layout()
    plt.show()


draw_ranks(lambda r: f"$(A_{r}, B_{r}, \\mathrm{{reset}}_{r})$",
           "all_gather: every rank gets every map (a few numbers per row per rank)",
           lambda r: f"carry $c_{r - 1}$ composed from ranks > {r - 1}",
           title="A reverse scan across three ranks: the maps gathered, each carry composed on its rank")

# %% [markdown]
# ## 5. Two processes, started from this notebook
#
# **In short:** two real processes each call `rl.gae(..., time_group=)` on their own steps. Put
# side by side, their pieces match the one-process call: advantages, returns and gradients. GAE
# needs one thing a bare scan does not: each rank's first value.
#
# `torchrun --nproc-per-node 2 train.py` starts two processes and tells each its rank through
# environment variables. Here the notebook does the same by hand, so that it runs anywhere. It
# writes a small worker script, starts it twice (ranks 0 and 1, on the CPU with gloo), and waits.
#
# Each worker calls `rl.gae(..., time_group=...)` on its own steps. Then it backpropagates a
# weighted sum of its advantages. It also runs section 7's alternative, *gather + one call*, in its
# last lines. The ranks hold 17 and 23 steps, and `dist.all_gather` needs tensors of one shape. So
# each rank pads its steps to the longest segment, gathers, and trims each piece back to its
# length. Then it makes one plain `rl.gae` call on the whole row and keeps its own slice.
#
# Every worker passes `bootstrap_value`, the value after the row's end, because all ranks run the
# same line; only the last rank's copy is read.
#
# This is GAE, not a bare scan. At a rank's last step, $\delta_t$ reads $V(s_{t+1})$: the *next*
# rank's first value. The package exchanges that too.

# %%
folder = tempfile.mkdtemp()
steps = 40
rollout = {"rewards": torch.randn(3, steps, dtype=torch.float64), "values": torch.randn(3, steps, dtype=torch.float64),
           "terminated": torch.rand(3, steps) < 0.05, "bootstrap": torch.randn(3, dtype=torch.float64),
           "weights": torch.randn(3, steps, dtype=torch.float64), "bounds": [0, 17, steps]}
rollout["terminated"][0, 16] = True  # an episode ends exactly at the boundary
torch.save(rollout, os.path.join(folder, "rollout.pt"))

worker = textwrap.dedent('''
    import datetime, os, sys
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
    # section 7's alternative, gather + one call (no gradient). all_gather needs equal shapes, so
    # each rank sends its length, pads its steps to the longest, and every rank trims what it receives.
    lengths = [torch.zeros(1, dtype=torch.long) for _ in range(world)]
    dist.all_gather(lengths, torch.tensor([hi - lo]))
    longest = max(int(n) for n in lengths)
    whole = []
    for k in ("rewards", "values", "terminated"):
        mine = x[k].new_zeros(x[k].shape[0], longest)
        mine[:, :hi - lo] = x[k][:, lo:hi]
        pieces = [torch.empty_like(mine) for _ in range(world)]
        dist.all_gather(pieces, mine)
        whole.append(torch.cat([piece[:, :int(n)] for piece, n in zip(pieces, lengths)], -1))
    gathered, _ = rl.gae(*whole[:2], gamma=0.99, lambda_=0.95, terminated=whole[2], bootstrap_value=x["bootstrap"])
    torch.save({"adv": adv, "ret": ret, "d_values": values.grad, "gathered": gathered[:, lo:hi]},
               f"{folder}/rank{rank}.pt")
    dist.barrier()  # both ranks saved; then exit without gloo's teardown, which once aborted a rank here
    os._exit(0)
''')
with open(os.path.join(folder, "worker.py"), "w") as f:
    f.write(worker)

procs = [subprocess.Popen([sys.executable, os.path.join(folder, "worker.py"), str(r), "2", folder])
         for r in range(2)]
codes = [p.wait(timeout=120) for p in procs]  # (a collective that hung would raise here, not wait forever)
assert codes == [0, 0], codes
shares = [torch.load(os.path.join(folder, f"rank{r}.pt")) for r in range(2)]
print("rank 0 holds", shares[0]["adv"].shape[-1], "steps, rank 1 holds", shares[1]["adv"].shape[-1])

# %% jupyter={"source_hidden": true}
# Checks: "only the last rank's copy of bootstrap_value is read" (CI runs them; skip when reading)
assert "``bootstrap_value`` is read on the last rank" in " ".join(rl.discounted_returns.__doc__.split())
assert "torch.where(open_rows, after, table[-1, 2])" in inspect.getsource(distributed._TimeSharded.forward)
assert worker.count("bootstrap_value=x[\"bootstrap\"]") == 2  # the same value on every rank, both calls

# %% [markdown]
# The reference is the same call in one process, on all 40 steps. Put side by side, the ranks'
# pieces must match it: advantages, returns, and the gradient with respect to every value.

# %%
values = rollout["values"].clone().requires_grad_()
adv, ret = rl.gae(rollout["rewards"], values, gamma=0.99, lambda_=0.95, terminated=rollout["terminated"],
                  bootstrap_value=rollout["bootstrap"])
(adv * rollout["weights"]).sum().backward()
for key, expected in (("adv", adv), ("ret", ret), ("d_values", values.grad)):
    got = torch.cat([s[key] for s in shares], -1)
    assert torch.allclose(got, expected, rtol=1e-12, atol=1e-12), key
    print(f"{key:9s} max difference {(got - expected).detach().abs().max().item():.1e}")
gathered = torch.cat([s["gathered"] for s in shares], -1)  # section 7's alternative: gather + one call
assert torch.allclose(gathered, adv.detach(), rtol=1e-12, atol=1e-12)
print(f"gather + one call: max difference {(gathered - adv).detach().abs().max().item():.1e}")

# %% [markdown]
# GAE needs one thing a bare scan does not. Rank 0's last step is $t = 16$. Its TD error is
# $\delta_{16} = r_{16} + \gamma V(s_{17}) - V(s_{16})$, and $V(s_{17})$ is rank 1's first value.
# So the package also gathers each rank's first value.
#
# The cell below does it by hand:
#
# 1. $\delta_{16}$, from rank 1's first value.
# 2. $\hat A_{16} = \delta_{16} + \gamma\lambda \hat A_{17}$, with $\hat A_{17}$ the carry (rank 1's
#    first advantage). The hat marks the advantage, to keep it apart from a map's multiplier $A$.
#
# In row 0 the carry is selected away, because its episode ends at step 16.
#
# Without the first values, rank 0 would take $V(s_{17})$ as 0, and every row whose episode goes on
# past step 16 would be wrong. Row 0 would still be right: its episode ends at step 16, so it reads
# neither $V(s_{17})$ nor the carry.

# %%
r_, v_, term_ = rollout["rewards"], rollout["values"], rollout["terminated"]
t = rollout["bounds"][1] - 1  # rank 0's last step
first_values = v_[:, t + 1]  # what rank 1 sends: V at its first step
delta = r_[:, t] + torch.where(term_[:, t], 0.0, 0.99 * first_values) - v_[:, t]
carry_adv = shares[1]["adv"][:, 0].detach()  # the advantage at rank 1's first step
by_hand = torch.where(term_[:, t], delta, delta + 0.99 * 0.95 * carry_adv)
without = torch.where(term_[:, t], delta, r_[:, t] - v_[:, t] + 0.99 * 0.95 * carry_adv)  # V(s_17) taken as 0
one = adv[:, t].detach()
print("advantage at step 16, by hand:", by_hand.numpy().round(4), " one process:", one.numpy().round(4))
print("without the first values:", without.numpy().round(4))
assert torch.allclose(by_hand, one) and torch.allclose(by_hand, shares[0]["adv"][:, -1].detach())
live = ~term_[:, t]  # rows whose episode goes on past step 16
assert (without[~live] == by_hand[~live]).all() and not torch.isclose(without[live], by_hand[live]).any()

# %% [markdown]
# ## 6. The backward: the same exchange, the other way
#
# **In short:** the gradient of a scan runs forwards in time, so it crosses ranks the other way:
# each rank's gradient enters from the ranks before it. That takes two exchanges of one number per
# row per rank. PPO, which computes its advantages without gradients, needs none of it.
#
# A gradient crosses ranks when a loss backpropagates through the advantages or returns, into the
# values, $\gamma$ or $\lambda$. Section 5's workers did: each backpropagated a weighted sum of its
# advantages into its values.
#
# The one result to know: the backward of a scan is the transposed scan (notebook 01b's
# `transposed_scan`). With $dy_t$ the upstream gradient, the gradient $g_t = \partial L/\partial b_t$
# is $g_t = dy_t + a_{t-1}\,g_{t-1}$. It runs *forwards* in time.
#
# **By hand: two ranks of two steps**, with $a_t = 0.5$ and $dy_t = 1$ at every step. Rank 0 holds
# steps 0 and 1, rank 1 steps 2 and 3. As in section 2, rank 0's carry $c_0$ is the value that
# enters its steps from the steps after them: here $c_0 = y_2$.
#
# 1. **One process** gives $g = 1,\ 1.5,\ 1.75,\ 1.875$.
# 2. **Rank 1 alone** gets $1,\ 1.5$: too small. It misses what comes from rank 0's steps.
# 3. **Why:** rank 1's first output, $y_2$, is rank 0's carry $c_0$. Rank 0 reads it,
#    through $y_1 = b_1 + a_1\,y_2$. Call rank 1's first output $f_1$: $f_1 = c_0 = y_2$.
# 4. **Rank 0 computes the missing part alone.** Call it $\sigma_0$: the gradient that rank 0's own
#    steps send into its carry $c_0$. It is $a_1\,g_1 = 0.5 \cdot 1.5 = 0.75$. Rank 0 sends this
#    one number to rank 1.
# 5. **Rank 1 adds it to $dy_2$.** Call what arrives $x_1$, the gradient that enters rank 1 from the
#    rank before it, through $f_1$: $x_1 = \sigma_0 = 0.75$. So $g_2 = 1 + 0.75 = 1.75$, then
#    $g_3 = 1 + 0.5 \cdot 1.75 = 1.875$. These are the one-process gradients.

# %%
a6, dy6 = torch.full((1, 6), 0.5, dtype=torch.float64), torch.ones(1, 6, dtype=torch.float64)  # a_t = 0.5, dy_t = 1


def rank_backward(lo, hi, x_in):
    """One rank's backward on steps [lo, hi), x_in added at its first step: (d b, d carry)."""
    b_r = torch.zeros(1, hi - lo, dtype=torch.float64, requires_grad=True)
    carry_r = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    d_out = dy6[:, lo:hi].clone()
    d_out[:, 0] += x_in
    return torch.autograd.grad(rl.linear_scan(a6[:, lo:hi], b_r, initial=carry_r), [b_r, carry_r], d_out)


b4 = torch.zeros(1, 4, dtype=torch.float64, requires_grad=True)
(rl.linear_scan(a6[:, :4], b4) * dy6[:, :4]).sum().backward()  # one process, steps 0 to 3: g
g_rank0, sent_0 = rank_backward(0, 2, 0.0)  # rank 0 alone: its g, and σ_0 (what its steps send into c_0)
alone_rank1, _ = rank_backward(2, 4, 0.0)  # rank 1 alone: too small
g_rank1, _ = rank_backward(2, 4, sent_0)  # rank 1 with x_1 = 0.75 added at its first step
print("one process:  ", b4.grad[0].tolist())
print("rank 1 alone: ", alone_rank1[0].tolist(), "  rank 0 sends", sent_0.item())
print("rank 0, rank 1 with x_1 added:", g_rank0[0].tolist(), g_rank1[0].tolist())
assert torch.equal(torch.cat([g_rank0, g_rank1], -1), b4.grad)

# %% [markdown]
# **The names, for any rank $r$.** They generalise the example's $f_1$, $c_0$, $\sigma_0$ and $x_1$.
# The boundary before rank $r$ carries two numbers per row: rank $r$'s first output back in time, and
# its gradient forwards. Both take the index $r$:
#
# | symbol | meaning | lives on rank |
# | --- | --- | --- |
# | $f_r$ | rank $r$'s first output; rank $r - 1$ reads it as its carry, so $f_r = c_{r-1}$ | made on $r$, read on $r - 1$ |
# | $c_r$ | the carry that enters rank $r$ (section 2): $c_r = f_{r+1}$, or `initial` on the last rank | read on $r$ |
# | $\sigma_r$ | the gradient that rank $r$'s own steps send into its carry $c_r$ | computed on $r$, alone |
# | $x_r$ | the gradient that enters rank $r$ from the ranks before it: $x_r = \partial L_{<r}/\partial f_r$, and $x_0 = 0$ | composed on $r$ |
#
# Here $L_{<r}$ is the loss on the steps of ranks $0$ to $r - 1$. Those ranks see rank $r$ only
# through $f_r$, so $x_r$ is all that rank $r$ needs from them. Nothing enters rank 0: $x_0 = 0$.
#
# **The picture, with a third rank** (steps 4 and 5). At each boundary, $f_r$ crosses backwards in
# time and $x_r$ forwards. The arrow $x_r$ lands on rank $r$'s first step, whose output is $f_r$:
#
# ```text
#              rank 0: steps 0 1          rank 1: steps 2 3          rank 2: steps 4 5
# forward:               ◀── f_1 = y_2 ───          ◀── f_2 = y_4 ───
# backward:    g_0 → g_1 ───── x_1 ─────▶ g_2 → g_3 ───── x_2 ─────▶ g_4 → g_5
#
# the boundary before rank r: f_r goes back (rank r−1's carry c_{r−1}), x_r = ∂L_<r/∂f_r comes forward:
#              x_1 = ∂L_<1/∂f_1 (rank 0's loss),    x_2 = ∂L_<2/∂f_2 (ranks 0 and 1's loss)
# ```
#
# **The rule, for any number of ranks.** What rank $r$ passes on is
# $x_{r+1} = \partial L_{<r+1}/\partial f_{r+1}$, and $f_{r+1} = c_r$ is rank $r$'s own carry. It has
# two parts:
#
# * $\sigma_r$, from rank $r$'s own $dy_t$, as rank 0 computed above ($\sigma_0 = 0.75$).
# * $A_r\,x_r$, from the ranks before it: $x_r$ lands on rank $r$'s first output,
#   $f_r = B_r + A_r\,c_r$ (section 1's map), so it reaches $c_r$ times $A_r$.
#
# So $x_{r+1} = \sigma_r + A_r\,x_r$. With two ranks, $x_1 = \sigma_0 = 0.75$, since $x_0 = 0$.
#
# After a reset in rank $r$, its first output ignores $c_r$ (section 3), so $x_r$ does not reach
# $c_r$: $x_{r+1} = \sigma_r$ alone. The package selects it, as in section 3, and never multiplies
# $x_r$ by $A_r = 0$.
# The checked exercise `segment_grad_carries`, in the [Exercises](#Exercises), writes this rule for
# any number of ranks.
#
# **Three ranks:** one process gives $g_4 = 1.9375$ and $g_5 = 1.96875$. Every rank alone gets
# $1,\ 1.5$, so every $\sigma_r = 0.75$. Then
# $x_2 = \sigma_1 + A_1 x_1 = 0.75 + 0.25 \cdot 0.75 = 0.9375$, with $A_1 = a_2 a_3 = 0.25$. Rank 2
# gets $1 + 0.9375 = 1.9375$, then $1.96875$: the one-process gradients. Without the term $A_1 x_1$,
# rank 2 would start at $1.75$.
#
# The package does it in two passes through each segment:
#
# 1. **Pass 1:** each rank runs its backward alone and gets its $\sigma_r$.
# 2. **Exchange 1:** the ranks gather every $\sigma_r$, one number per row. Each rank composes its
#    $x_r$ from those of the ranks before it.
# 3. **Pass 2:** each rank reruns its backward with $x_r$ added at its first step.
#
# **Exchange 2** is GAE's. Rank 0's last $\delta_{16}$ read $V(s_{17})$, rank 1's first value, so
# part of that value's gradient is computed on rank 0 and sent to rank 1. (A bare scan makes this
# exchange too, and sends zeros.) That is why section 5's `d_values` matched the one-process
# gradient. The derivation and the package's code are in
# [notebook 13c, section 7](13c_inside_the_package.ipynb#7.-Across-devices:-the-backward,-and-what-crosses-the-wire).

# %%
b6 = torch.zeros(1, 6, dtype=torch.float64, requires_grad=True)
(rl.linear_scan(a6, b6) * dy6).sum().backward()  # one process: g
ranks = [(0, 2), (2, 4), (4, 6)]  # the steps [lo, hi) of ranks 0, 1 and 2
pass1 = [rank_backward(lo, hi, 0.0) for lo, hi in ranks]  # pass 1: each rank alone
sent = [d_carry for _, d_carry in pass1]  # σ_r: the gradient into each rank's carry
A_fwd = [a6[:, lo:hi].prod(-1) for lo, hi in ranks]  # each rank's forward map's A
x = [torch.zeros(1, dtype=torch.float64)]  # x_0: nothing enters rank 0
for r in (0, 1):  # exchange 1, composed
    x.append(sent[r] + A_fwd[r] * x[r])  # x_{r+1} = σ_r + A_r x_r
grads = [pass1[0][0]] + [rank_backward(*ranks[r], x[r])[0] for r in (1, 2)]  # pass 2 (nothing enters rank 0)
print("one process:  ", b6.grad[0].tolist())
print("pass 1, alone:", [g[0].tolist() for g, _ in pass1], " σ_r =", [v.item() for v in sent])
print(f"x_1 = σ_0 = {x[1].item()};  x_2 = σ_1 + A_1 x_1 = {sent[1].item()} + {A_fwd[1].item()} · {x[1].item()}"
      f" = {x[2].item()}")
print("pass 2:       ", [g[0].tolist() for g in grads])
assert torch.equal(torch.cat(grads, -1), b6.grad)

# %% jupyter={"source_hidden": true}
# Checks: section 6's worked examples, and its "two exchanges" on the package's backward (CI runs them; skip when reading)
assert b4.grad[0].tolist() == [1.0, 1.5, 1.75, 1.875] == b6.grad[0, :4].tolist()  # two ranks: one process
assert alone_rank1[0].tolist() == [1.0, 1.5] and g_rank0[0].tolist() == [1.0, 1.5]  # "rank 1 alone gets 1, 1.5"
assert sent_0.item() == a6[0, 1].item() * b4.grad[0, 1].item() == 0.5 * 1.5 == 0.75  # "a_1 g_1 = 0.5 · 1.5 = 0.75"
assert g_rank1[0].tolist() == [1.75, 1.875] and 1 + 0.5 * 1.75 == 1.875  # "1 + 0.75 = 1.75, then 1.875"
assert b6.grad[0].tolist() == [1.0, 1.5, 1.75, 1.875, 1.9375, 1.96875]  # three ranks: one process
assert all(g[0].tolist() == [1.0, 1.5] for g, _ in pass1) and [v.item() for v in sent] == [0.75] * 3  # pass 1
assert sent[0].item() == sent_0.item()  # σ_0 is what rank 0 sent in the two-rank example
assert A_fwd[1].item() == 0.5 * 0.5 == 0.25 and (x[1].item(), x[2].item()) == (0.75, 0.9375)  # exchange 1
assert [g[0].tolist() for g in grads] == [[1.0, 1.5], [1.75, 1.875], [1.9375, 1.96875]]  # pass 2
assert rank_backward(4, 6, sent[1])[0][0, 0].item() == 1.75 != b6.grad[0, 4].item()  # "without A_1 x_1 ... 1.75"
_b6 = torch.arange(1.0, 7.0, dtype=torch.float64)[None]
_y6 = rl.linear_scan(a6, _b6)  # the drawing's forward: f_1 = c_0 is y_2, f_2 = c_1 is y_4
assert torch.allclose(rl.linear_scan(a6[:, :2], _b6[:, :2], initial=_y6[:, 2]), _y6[:, :2])
assert torch.allclose(rl.linear_scan(a6[:, 2:4], _b6[:, 2:4], initial=_y6[:, 4]), _y6[:, 2:4])
# "x_r = ∂L_<r/∂f_r", L_<r the loss on ranks 0..r−1 (the drawing's "x_2 = ∂L_<2/∂f_2 (ranks 0 and 1's loss)"):
# L_<2 = the sum of y_0..y_3 (dy_t = 1); f_2 = c_1 enters rank 1; d L_<2 / d f_2 = x_2, rank 2's own dy_4 left out
_f2 = torch.zeros(1, dtype=torch.float64, requires_grad=True)
_y_r1 = rl.linear_scan(a6[:, 2:4], torch.zeros(1, 2, dtype=torch.float64), initial=_f2)
_y_r0 = rl.linear_scan(a6[:, :2], torch.zeros(1, 2, dtype=torch.float64), initial=_y_r1[:, 0])
assert torch.autograd.grad(_y_r0.sum() + _y_r1.sum(), [_f2])[0].item() == x[2].item() == 0.9375
_f1 = torch.zeros(1, dtype=torch.float64, requires_grad=True)  # the drawing's "x_1 = ∂L_<1/∂f_1 (rank 0's loss)"
_y_f1 = rl.linear_scan(a6[:, :2], torch.zeros(1, 2, dtype=torch.float64), initial=_f1)
assert torch.autograd.grad(_y_f1.sum(), [_f1])[0].item() == x[1].item() == 0.75
# the table: "f_r = B_r + A_r c_r" (section 1's map), rank 1's first output on the drawing's forward
assert torch.allclose(_y6[:, 2], rl.linear_scan(a6[:, 2:4], _b6[:, 2:4])[:, 0] + a6[:, 2:4].prod(-1) * _y6[:, 4])
bwd_src = inspect.getsource(distributed._TimeSharded.backward)
assert bwd_src.count(" = gather(") == 2  # two exchanges (13c, section 7, checks what each one carries)
assert "(g,) = torch.autograd.grad(outs, [carry], d_outs" in bwd_src  # pass 1: one number per row, the carry's
assert "torch.autograd.grad(list(outs) + [end], wanted + extra" in bwd_src  # pass 2
assert "routed = gather(zeros if d_boundary is None else" in bwd_src  # exchange 2, zeros where no boundary value is read
# "after a reset in rank r ... x_{r+1} = σ_r alone. The package selects it"
assert "x = torch.where(ctx.maps[k, 2] != 0, sent[k], sent[k] + ctx.maps[k, 0] * x)" in bwd_src


# %% [markdown]
# ## 7. What it costs
#
# **The verdict:** the split this notebook teaches is usually not the one to use. Gather + one call
# is the default, with or without gradients:
#
# | case | use |
# | --- | --- |
# | the advantages computed without gradients (PPO-style training) | gather + one call (section 5's last lines), unless the link is slower than about 8 GB/s at 2 ranks or 50–80 GB/s at 8 ranks |
# | a loss backpropagated through the advantages (section 6) | gather + one call, through an autograd-aware gather (`torch.distributed.nn.functional.all_gather`, whose backward returns each rank its gradient slice), unless the link is slower than about 5 GB/s at 2 ranks; at 8 ranks the estimate spans 40–270 GB/s, so across nodes the split may win |
# | a batch too big to gather | `time_group=` |
#
# So `time_group=` is for rows so long that the batch cannot be gathered onto each rank, or for a
# slow link. Gradients flow through the advantages in meta-gradient RL, which tunes $\gamma$ or
# $\lambda$ by gradient (Xu, van Hasselt and Silver, 2018, "Meta-Gradient Reinforcement Learning"),
# and in a value loss on $\lambda$-return targets left without a stop-gradient. There the gather's
# backward crosses the link too, so on a slow link the split's cost is weighed against both.
#
# **The evidence:** on one H100, for GAE on a row of 1,048,576 steps per rank, the split took 17
# times the plain call's wall time and gather + one call 1.5 times. With the backward too, the
# split took 3.30 ms and gather + one call 0.74 ms, about 4.5 times less (`linear_scan`: 2.68
# against 0.63 ms). The split's time is mostly host work, not arithmetic: of its 1,307 µs of wall
# time, 74.7 µs is GPU time. The two ranks ran in one process, the other rank's numbers a local copy of its
# own, so no link was crossed. The gathered call's backward went through a concatenation, the
# local equivalent of the autograd-aware gather.
#
# **With gradients, the link.** The 50–80 GB/s is the forward call's break-even at 8 ranks (7.9
# GB/s at 2): the link speed at which the gather's time on the wire uses up its lead. With gradients, the gather's backward also
# sends each rank its gradient slice: 4 bytes per token (the values' gradient, float32), on top of
# the 9 gathered. Worked the same way, at 2 ranks, where nothing is scaled, the break-even is about
# 5.3 GB/s, against 7.9 for the forward alone. At 8 ranks it depends on how the gathered call's time
# grows with 4 times the steps: about 40 GB/s if only its GPU time does, about 270 if all of its
# wall time does. These are estimates, not measurements.
#
# The cell below reads the file. How the 50–80 GB/s is estimated, and the file's other lines, are in
# [notebook 13c, section 7.2](13c_inside_the_package.ipynb#7.2-The-cost-of-the-split,-case-by-case).

# %%
COST_FILE = os.path.join(profile.results_folder(), "checks", "H100-2026-12-07-time-group-cost.txt")
# (shape, call) -> [plain call, split local copy, split NCCL 1 rank, gather + one call], each (wall µs, GPU µs)
cost_lines, cost = profile.read_time_group_cost(COST_FILE)
(one_wall, one_gpu), (local_wall, local_gpu), _, (joined_wall, joined_gpu) = cost["1 x 1048576", "gae forwards"]
cost_rows = [{"call": "plain call", "wall µs": one_wall, "GPU µs": one_gpu},
             {"call": "split", "wall µs": local_wall, "GPU µs": local_gpu},
             {"call": "gather + one call", "wall µs": joined_wall, "GPU µs": joined_gpu}]
print(profile.table(cost_rows, digits=3))  # GAE forwards on the long row; the file's other lines: 13c, section 7.2

# %% jupyter={"source_hidden": true}
# Checks: section 7's table and its one sentence, from the committed file (CI runs them; skip when reading)
# (the break-even's arithmetic, the other lines, NCCL and 2 ranks: notebook 13c, section 7.2, checks them)
assert cost_lines[0].startswith("NVIDIA H100") and len(cost) == 8 and all(len(r) == 4 for r in cost.values())
assert ("1 x 1048576", "gae forwards") in cost and 1 << 20 == 1_048_576  # "GAE on a row of 1,048,576 steps per rank"
assert round(local_wall / one_wall) == 17 and round(joined_wall / one_wall, 1) == 1.5  # "17 times", "1.5 times"
# the table printed: the long row's three calls, wall and GPU µs, in the file's columns 1, 2 and 4
assert [(r_["wall µs"], r_["GPU µs"]) for r_ in cost_rows] == [(77.5, 13.6), (1307.0, 74.7), (114.2, 33.5)]
assert local_wall > 10 * local_gpu  # "mostly host work, not arithmetic: of its 1,307 µs of wall time, 74.7 µs is GPU time"
# "the two ranks ran in one process, the other rank's numbers a local copy of its own, so no link was crossed"
_doc = " ".join(open(os.path.join(os.path.dirname(os.path.dirname(profile.results_folder())), "tools",
                                  "time_group_cost.py"), encoding="utf-8").read().split('"""')[1].split())
assert "plays rank 0 of two ranks that hold the same steps" in _doc and "a stack of this rank's rows twice" in _doc
assert "Only the wire is missing." in _doc
# "a link slower than about 50–80 GB/s": 13c, section 7.2's break-evens at 8 ranks, the gather's 7 × 9 MiB against
# the split's wall time less the gathered call's at 8 ranks (all of it 4 times; its GPU time only; the split 40 % slower)
_B8 = lambda t_s, t_8: 7 * 9 * 2**20 / ((t_s - t_8) * 1e-6) / 1e9  # noqa: E731  (GB/s, the times in µs)
_w8 = [_B8(local_wall, 4 * joined_wall), _B8(local_wall, joined_wall + 3 * joined_gpu), _B8(1.4 * local_wall, 4 * joined_wall)]
assert [round(x_) for x_ in _w8] == [78, 60, 48]  # "about 50–80"
assert 128 * 1024 * 2 * 4 == 2**20  # the introduction's "1 MiB for a row of 128K tokens": 2 float32 per token
# "With the backward too, the split took 3.30 ms and gather + one call 0.74 ms, about 4.5 times less"
(_, _), (fb_split, _), _, (fb_joined, fb_joined_gpu) = cost["1 x 1048576", "gae forwards + backwards"]
assert (round(fb_split / 1e3, 2), round(fb_joined / 1e3, 2), round(fb_split / fb_joined, 1)) == (3.30, 0.74, 4.5)
_ls = cost["1 x 1048576", "linear_scan forwards + backwards"]  # "linear_scan: 2.68 against 0.63 ms"
assert (round(_ls[1][0] / 1e3, 2), round(_ls[3][0] / 1e3, 2)) == (2.68, 0.63)
assert all(r_[3][0] < r_[1][0] / 4 for k_, r_ in cost.items() if "backwards" in k_[1])  # the gather wins with gradients
# "the gathered call's backward went through a concatenation": the tool's gradient is the values' alone, float32
_tool = open(os.path.join(os.path.dirname(os.path.dirname(profile.results_folder())), "tools", "time_group_cost.py"),
             encoding="utf-8").read()
assert "torch.cat([x] * ranks, dim=1)" in _tool and "rl.gae(row(r), row(vg)" in _tool
assert "return torch.autograd.grad(ret[:, :T], vg, dy)" in _tool and "float32" in cost_lines[0]
# the table's autograd-aware gather: its backward gives each rank its slice of the summed gradients
import torch.distributed.nn.functional as dist_nn  # noqa: E402
assert callable(dist_nn.all_gather) and "_Reduce_Scatter.apply" in inspect.getsource(dist_nn._AllGather.backward)
# "with gradients ... 4 bytes per token on top of the 9": 2 ranks "about 5.3 GB/s, against 7.9 for the forward alone"
_fb_bytes = (9 + 4) * 2**20
assert round(_fb_bytes / ((fb_split - fb_joined) * 1e-6) / 1e9, 1) == 5.3
assert round(9 * 2**20 / ((local_wall - joined_wall) * 1e-6) / 1e9, 1) == 7.9
# 8 ranks, 7 ranks' 13 MiB: "about 40 GB/s if only its GPU time does, about 270 if all of its wall time does"
assert round(7 * _fb_bytes / ((fb_split - fb_joined - 3 * fb_joined_gpu) * 1e-6) / 1e9) == 40
assert round(7 * _fb_bytes / ((fb_split - 4 * fb_joined) * 1e-6) / 1e9, -1) == 270
# the introduction's "the done flags add one byte per token": section 5's gather also sends the flags, as booleans
assert '("rewards", "values", "terminated")' in worker and rollout["terminated"].element_size() == 1


# %% [markdown]
# ## Exercises
#
# Checked, as in notebook 00b: write the starter's function and run the cell after it.
# `print(exercises.task(name))` restates a task. The solution is in
# `notebooks/solutions/`.
#
# **`segment_carries`.** The composition of section 2, for any number of segments, with resets as
# in section 3.
#
# * **Given:** each segment's map as arrays `A`, `B`, `reset` of shape (rows, S), in time order.
#   And `initial` (rows,), the value after the last segment.
# * **Return:** the carry entering each segment, shape (rows, S). For the last segment it is
#   `initial`. For segment s, it is the map of segment s + 1 applied to the carry entering s + 1,
#   or `B` alone where that segment resets.
#
# Select, do not multiply: the checker puts a NaN and an inf in later episodes.
#
# <details><summary>Hint 1: where to start</summary>
#
# Section 2's loop does this for three segments. Generalise it to `S` segments, every row at once.
# Section 3 adds the reset: the carry is selected away. In which order must you visit the
# segments?
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Start with the carry $c$ = `initial`. It enters the last segment.
# * Visit the segments from the last, $s = S - 1$, back to $s = 0$.
# * At each one, store $c$ first: it is the carry entering segment $s$.
# * Then move $c$ through segment $s$'s map: $c \leftarrow B_s + A_s\,c$.
# * Where `reset[:, s]`, the map is $B_s$ alone. Pick it with `np.where`, never with $A_s = 0$.
# * Index whole columns, `[:, s]`: one step handles every row.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Take two rows of three segments, every $A = 0.5$, and $B = 1, 2, 3$ in both rows.
#
# * Row 0: no reset, `initial` $= 4$. Segment 2 gets 4. Then $3 + 0.5 \cdot 4 = 5$ enters segment 1,
#   and $2 + 0.5 \cdot 5 = 4.5$ enters segment 0: the carries are $4.5, 5, 4$.
# * Row 1: segment 2 resets, and `initial` is NaN. Segment 2 still gets the NaN: it is what enters it.
#   Its map is $B = 3$ alone, so 3 enters segment 1, then $2 + 0.5 \cdot 3 = 3.5$: $3.5, 3, \text{NaN}$.
# * A NaN anywhere else in row 1: your reset was $A = 0$ ($0 \cdot \text{NaN} = \text{NaN}$), not a select.
#
# ```python
# print(segment_carries(np.full((2, 3), 0.5), np.array([[1.0, 2.0, 3.0]] * 2),
#                       np.array([[False] * 3, [False, False, True]]), np.array([4.0, np.nan])))
# # must print [[4.5 5.  4. ]
# #             [3.5 3.  nan]]
# ```
#
# </details>
#
# Hint 4 is the solution's skeleton: try Hints 1-3 first.
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# carries, c = np.empty_like(B), np.asarray(initial, dtype=B.dtype)
# for s in ___:  # ___: which order? c enters segment s from segment s + 1
#     carries[:, s] = c  # what enters segment s
#     c = np.where(reset[:, s], ___, ___)  # ___: segment s's map on c, with a reset and without
# return carries
# ```
#
# </details>

# %%
def segment_carries(A, B, reset, initial):
    # YOUR CODE: return carries, a NumPy array of shape (rows, S)
    raise NotImplementedError

# %%
exercises.attempt("segment_carries", segment_carries)

# %% [markdown]
# **`segment_grad_carries`.** Section 6's exchange 1, for any number of ranks, with resets: the
# backward twin of `segment_carries`.
#
# * **Given:** for each rank $r$, as arrays of shape (rows, R) in time order: `A`, its map's $A_r$;
#   `sigma`, its $\sigma_r$ from pass 1; `reset`, True where an episode ends inside rank $r$.
# * **Return:** `x`, shape (rows, R): `x[:, r]` is $x_r$, the gradient that enters rank $r$ from the
#   ranks before it. Nothing enters rank 0, so $x_0 = 0$. Then
#   $x_{r+1} = \sigma_r + A_r\,x_r$, or $\sigma_r$ alone where rank $r$ resets. The last rank
#   passes nothing on: its `sigma`, `A` and `reset` are not read.
#
# Select, do not multiply: the checker puts a NaN and an inf in `A` at ranks that reset.
#
# <details><summary>Hint 1: where to start</summary>
#
# Section 6's last code cell does this for three ranks, in the loop
# `x.append(sent[r] + A_fwd[r] * x[r])`. Generalise it to `R` ranks, every row at once, and add
# the reset: after a reset in rank $r$, $x_{r+1} = \sigma_r$ alone. In which order must you visit
# the ranks?
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Start with $x_0 = 0$: nothing enters rank 0.
# * Visit the ranks from the first, $r = 0$, up to $r = R - 2$: the gradient flows forwards in time.
# * At each one, compute what rank $r$ passes on, $x_{r+1} = \sigma_r + A_r\,x_r$, and store it in
#   column $r + 1$.
# * Where `reset[:, r]`, it is $\sigma_r$ alone. Pick it with `np.where`, never with $A_r = 0$.
# * Index whole columns, `[:, r]`: one step handles every row.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Take section 6's three ranks: $A_r = 0.25$ and $\sigma_r = 0.75$ for every rank, in two rows.
#
# * Row 0: no reset. $x_0 = 0$, $x_1 = \sigma_0 = 0.75$, $x_2 = 0.75 + 0.25 \cdot 0.75 = 0.9375$, as in
#   section 6.
# * Row 1: rank 1 resets, and its $A$ is NaN. $x_1 = 0.75$ still, and $x_2 = \sigma_1 = 0.75$ alone.
# * A NaN in row 1: your reset was $A = 0$ ($0 \cdot \text{NaN} = \text{NaN}$), not a select.
#
# ```python
# print(segment_grad_carries(np.array([[0.25, 0.25, 0.25], [0.25, np.nan, 0.25]]), np.full((2, 3), 0.75),
#                            np.array([[False] * 3, [False, True, False]])))
# # must print [[0.     0.75   0.9375]
# #             [0.     0.75   0.75  ]]
# ```
#
# </details>
#
# Hint 4 is the solution's skeleton: try Hints 1-3 first.
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# x = np.zeros_like(sigma)  # x[:, 0] = 0: nothing enters rank 0
# for r in ___:  # ___: which ranks pass something on, in which order?
#     x[:, r + 1] = np.where(reset[:, r], ___, ___)  # ___: what rank r passes on, with a reset and without
# return x
# ```
#
# </details>

# %%
def segment_grad_carries(A, sigma, reset):
    # YOUR CODE: return x, a NumPy array of shape (rows, R)
    raise NotImplementedError

# %%
exercises.attempt("segment_grad_carries", segment_grad_carries)

# %% [markdown]
# **`gae_segment_map`.** One rank's map for GAE (section 5): what the rank computes from its own
# steps, before the maps are exchanged.
#
# * **You write:** `gae_segment_map(rewards, values, terminated, next_first_value, gamma, lam)`.
# * **It returns:** `(A, B, reset)`, one number per row each: the map from the carry $c$ (the
#   advantage at the next rank's first step) to the advantage at this rank's first step,
#   $B + A\,c$, or $B$ alone where `reset`.
# * **Given:** the rank's `rewards`, `values` (rows, n) float64 and `terminated` (rows, n) bool, and
#   `next_first_value` (rows,): $V$ at the next rank's first step, what the "ends" exchange
#   brings (on the last rank, the bootstrap value).
# * **The formulas:** $\delta_t = r_t + \gamma V(s_{t+1}) - V(s_t)$, the $\gamma V(s_{t+1})$ left
#   out where `terminated[t]`; $\hat A_t = \delta_t + \gamma\lambda \hat A_{t+1}$, cut to $\delta_t$ at a
#   termination. $B$ is the rank's first $\hat A$ computed with a carry of 0; $A = (\gamma\lambda)^n$;
#   `reset` is True where any of the $n$ steps terminates ($A$ is then not read, nor graded).
#
# Select, do not multiply: the checker puts a NaN in `next_first_value` behind a termination.
#
# <details><summary>Hint 1: where to start</summary>
#
# Section 5's hand cell computes $\delta$ at rank 0's last step from rank 1's first value. Do that
# for every step of the segment: the next values are `values[:, 1:]`, then `next_first_value`.
# Then run GAE's loop backwards over the segment, starting from 0.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Build the next values: `values[:, 1:]` with `next_first_value` appended as the last column.
# * $\delta$ with a select at a termination (`np.where`), every step at once.
# * $B$: start from 0 at the end; walk $t = n - 1$ down to 0; at a termination keep $\delta_t$ alone.
# * $A$: the carry crosses all $n$ steps, each multiplying it by $\gamma\lambda$.
# * `reset`: does any step of the row terminate?
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# One row of two steps, rewards 1, values 0, $\gamma = 0.5$, $\lambda = 1$, `next_first_value` 4, no
# termination: $\delta = (1, 1 + 0.5 \cdot 4) = (1, 3)$, so $B = 1 + 0.5 \cdot 3 = 2.5$, and
# $A = 0.5^2 = 0.25$. With a termination at the last step, $\delta_1 = 1$ and $B = 1.5$; `reset` is
# True.
#
# * $B = 1.5$ without the termination: your $\delta_1$ took $V(s_2)$ as 0.
# * $A = 0.5$: one factor short; the carry also crosses the last step.
#
# ```python
# one = lambda *x: np.array([x])  # noqa: E731 -- one row
# print(gae_segment_map(one(1.0, 1.0), one(0.0, 0.0), one(False, False), np.array([4.0]), 0.5, 1.0))
# print(gae_segment_map(one(1.0, 1.0), one(0.0, 0.0), one(False, True), np.array([4.0]), 0.5, 1.0))
# # must print (array([0.25]), array([2.5]), array([False])), then (array([0.25]), array([1.5]), array([ True]))
# ```
#
# </details>
#
# Hint 4 is the solution's skeleton: try Hints 1-3 first.
#
# <details><summary>Hint 4: the key lines</summary>
#
# * **The next values:** `values[:, 1:]`, then `next_first_value` made a column (`[:, None]`),
#   joined along the steps with `np.concatenate`.
# * **$\delta$:** the reward minus the value, plus $\gamma$ times the next value. `np.where` on
#   `terminated` adds 0 instead where the step terminates.
# * **$B$:** start from one 0 per row. Loop over the steps from the last to the first. At each,
#   `np.where` on that step's column of `terminated` picks $\delta_t$ alone, or
#   $\delta_t + \gamma\lambda B$.
# * **$A$ and `reset`:** $(\gamma\lambda)^n$ for every row; `reset` asks `any` along the steps.
#
# If a check still fails, `print(exercises.fix("gae_segment_map"))` shows what to change.
#
# </details>

# %%
def gae_segment_map(rewards, values, terminated, next_first_value, gamma, lam):
    # YOUR CODE: return (A, B, reset), each of shape (rows,)
    raise NotImplementedError

# %%
exercises.attempt("gae_segment_map", gae_segment_map)

# %% [markdown]
# **The two exercises together:** your maps for section 5's two ranks, your carries from them, and
# each rank's scan from its carry must give section 5's one-process `adv`.

# %%
# Stand-ins from the package, used only while your functions are still the starters
def map_by_package(rewards, values, terminated, next_first_value, gamma, lam):
    """B is rl.gae's first advantage with a carry of 0; A and reset as the exercise defines them."""
    B = rl.gae(rewards, values, gamma=gamma, lambda_=lam, terminated=terminated, bootstrap_value=next_first_value)[0][:, 0]
    return np.full(len(B), (gamma * lam) ** rewards.shape[1]), B, terminated.any(axis=1)


def carries_by_package(A, B, reset, initial):
    """The maps composed by rl.linear_scan, a reset as a = 0 (which it selects): y at each segment's first step."""
    y = rl.linear_scan(np.where(reset, 0.0, A), B, initial=initial)
    return np.concatenate([y[:, 1:], initial[:, None]], axis=1)  # segment s's carry: y at segment s + 1's first step


def yours_or_package(name, yours, package, calls):
    """Your function on each call's arguments; the package's stand-in while yours is still the starter."""
    try:
        if yours is None:
            raise NotImplementedError
        return [yours(*args) for args in calls]
    except NotImplementedError:
        print(f"(your {name} is not done yet: using {package.__name__}, from the package)")
        return [package(*args) for args in calls]

# %%
R, V, TERM = (rollout[k].numpy() for k in ("rewards", "values", "terminated"))
spans = list(zip(rollout["bounds"], rollout["bounds"][1:]))  # each rank's steps [lo, hi)
nexts = [V[:, hi] if hi < steps else rollout["bootstrap"].numpy() for _, hi in spans]  # what the "ends" exchange brings
maps_ = yours_or_package("gae_segment_map", gae_segment_map, map_by_package,
                         [(R[:, lo:hi], V[:, lo:hi], TERM[:, lo:hi], n, 0.99, 0.95) for (lo, hi), n in zip(spans, nexts)])
A_s, B_s, reset_s = (np.stack(column, axis=1) for column in zip(*maps_))  # each (rows, ranks)
no_carry = np.zeros(len(B_s))  # after the row's last step: bootstrap_value entered its delta, not the carry
(carries_s,) = yours_or_package("segment_carries", segment_carries, carries_by_package, [(A_s, B_s, reset_s, no_carry)])
own_scans = []
for (lo, hi), n, c in zip(spans, nexts, carries_s.T):  # each rank scans its own steps from its carry
    v_next = np.concatenate([V[:, lo + 1:hi], n[:, None]], axis=1)
    delta = R[:, lo:hi] + np.where(TERM[:, lo:hi], 0.0, 0.99 * v_next) - V[:, lo:hi]
    own_scans.append(rl.linear_scan(np.where(TERM[:, lo:hi], 0.0, 0.99 * 0.95), delta, initial=np.ascontiguousarray(c)))
assert np.allclose(np.concatenate(own_scans, axis=1), adv.detach().numpy(), rtol=1e-12, atol=1e-12)
print("the maps, composed into carries, then each rank's scan from its carry = section 5's one-process adv")

# %% [markdown]
# Without a checker:
#
# *(Answer each in its cell below: your teacher's grader collects the answers from
# them.)*
#
# 1. After the maps' `all_gather`, each rank holds a table of every rank's map, its own included.
#    For 4096 rows on 8 ranks, how many bytes is that table? Count three float64 numbers per row
#    per rank, the map's $(A, B, \text{reset})$. Leave out the package's error flag, a fourth number
#    per row that tells every rank that one rank's arguments were refused.
#    Compare with one input tensor of the rank's own steps, 4096 rows of 16,384 steps in float32.
#
# 2. With `reverse=False` (a forward scan, $y_t = b_t + a_t y_{t-1}$), which ranks' maps does a
#    rank compose, and where does `initial` enter?
#
# 3. Why not send each rank's *first output* to the rank before it instead of its map? For 8
#    ranks, count the passes over a segment's steps (a map or a scan) that run one after another,
#    for each method.

# %% [markdown] tags=["answer-1"]
# **Answer 1.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-2"]
# **Answer 2.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-3"]
# **Answer 3.** *Your answer here (code for it: in cells under this one).*

# %% [markdown]
# ## What you now know
#
# * A stretch of steps is one affine map, $y_{\text{first}} = B + A\,y_{\text{after}}$. $A$ is the
#   product of its $a_t$; $B$ is its scan from a carry of 0.
#
# * Across ranks, each rank computes its map, and the maps are gathered (a few numbers per row per
#   rank). Each rank composes those after it into its carry, then scans from it.
#
# * A reset makes a segment's map "$B$, whatever the carry". It is a select, not $A = 0$, or a NaN
#   on the next rank crosses the boundary through $0 \cdot \text{NaN}$.
#
# * GAE needs one thing a bare scan does not: a rank's last $\delta_t$ reads $V(s_{t+1})$, the next
#   rank's first value. `rl.gae(..., time_group=)` exchanges it with the maps and matches the
#   one-process call.
#
# * The backward is the transposed scan, forwards in time: each rank's gradient enters from the
#   ranks before it, in two exchanges of one number per row per rank. PPO, which computes its
#   advantages without gradients, needs none of it.
#
# * Which to use, the gather or `time_group=`: see section 7's table.
