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
# # 01 — The discounted return
#
# > **In short**
# >
# > * The discounted return $G_t$ is computed from the last step back to the first: it is a reverse scan.
# > * An episode ends by a termination (nothing follows) or a truncation (the return then adds the next state's value).
# > * A kernel splits the work in three: a per-step setup, the shared scan, and a per-step store.
# > * You write one exercise, the $n$-step return, in PyTorch.
#
# * **Time:** 1.5–2 h with the open questions; 30 min–1 h for the reading and the checked exercise.
# * **Needs:** notebooks 00, 00b and 00c. No GPU.
# * **Reference:** the glossary's [Names and signatures](GLOSSARY.md#names-and-signatures).
# * **Minimum path:** sections 1–4 and the checked exercise `n_step_returns`. Section 5 and the
#   open questions can wait.
# * **Next:** notebook 01b, where you write Triton prologues of your own and the return's backward.
#
# Policy-gradient methods weight the log-probability of each action by the return $G_t$. The course
# writes an action $u$ ($u_t$ at step $t$) throughout, since $a_t$ is the scan's multiplier.
# Here you compute $G_t$ as one scan, with episode ends and a rollout window that cuts episodes:
#
# $$G_t = r_t + \gamma_t (1-\text{term}_t)
#   \begin{cases} G_{t+1} & \text{if not done}_t \\ V'_t & \text{if done}_t \end{cases}$$
#
# $r_t$ is the reward and $\gamma_t$ the discount at step $t$. Flags mark the episode ends:
#
# * $\text{term}_t$ marks a [**termination**](GLOSSARY.md#termination-and-truncation). Nothing follows it.
# * $\text{trunc}_t$ marks a [**truncation**](GLOSSARY.md#termination-and-truncation): a time limit cuts the episode. The end of the rollout
#   window cuts it in the same way. The return then [**bootstraps**](GLOSSARY.md#bootstrap): it adds
#   $\gamma_t V'_t$, with $V'_t = V(s_{t+1})$ the value of the real next state, in place of the
#   rewards that follow.
# * $\text{done}_t$ is new. It marks any episode end: $\text{done}_t = \text{term}_t \lor
#   \text{trunc}_t$, or the window's last step.
#
# Only a termination drops the bootstrap, through $(1-\text{term}_t)$. Section 2 gathers these
# cases in [the episode-end table](#The-episode-end-table).
#
# <details><summary>Details: sources, and the flag of 00b and 00c (optional)</summary>
#
# REINFORCE: Williams, *Simple statistical gradient-following algorithms for connectionist
# reinforcement learning*, Machine Learning 1992; Sutton & Barto, *Reinforcement Learning: An
# Introduction*, 2nd ed., §3.3.
#
# In 00b and 00c the one flag was `terminated`, a termination (nothing after it). It keeps that
# meaning. The glossary repeats the episode-end table.
#
# </details>

# %%
import inspect
import os

import numpy as np
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # Triton kernels on the CPU

import matplotlib.pyplot as plt

import rltriton_lite as rl
from rltriton_lite import exercises, profile, reference

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# the Triton kernels: compiled on a GPU, in the interpreter on a CPU (backend="auto" takes the PyTorch path on a CPU)
KERNEL = "triton"
rng = np.random.default_rng(1)
to_numpy = lambda x: x.cpu().numpy()  # noqa: E731

# %% [markdown]
# ## 1. The loop
#
# The plainest form is a loop from the last step to the first, carrying $G_{t+1}$. Every version
# below is checked against this float64 loop.

# %%
print(inspect.getsource(reference.discounted_returns))

# %% [markdown]
# By hand: rewards 1, 2, 3, 4 with $\gamma = 0.5$. The episode terminates after step 1. The
# window ends after step 3, bootstrapping from $V(s_4) = 6$.

# %%
G = reference.discounted_returns([1.0, 2.0, 3.0, 4.0], gamma=0.5, terminated=[0, 1, 0, 0], bootstrap_value=6.0)
# t=3: 4 + 0.5·6 = 7 (the bootstrap).  t=2: 3 + 0.5·7 = 6.5 (G_3).  t=1: terminal, 2.  t=0: 1 + 0.5·2 = 2.
np.testing.assert_allclose(G, [2.0, 2.0, 6.5, 7.0])
print(G)

# %% [markdown]
# The same loop on 20 steps, drawn. The reward is 0 except at step 9, where the first episode
# reaches its goal (reward 1) and terminates. The second episode is cut by the window's end, which
# bootstraps from $V(s_{20}) = 1$. Read the plot from the right, as the scan does: each episode's
# value flows back from its end, shrinking by $\gamma = 0.8$ per step, and the termination cuts it.

# %%
r20 = np.zeros(20)
r20[9] = 1.0  # the goal's reward, at the termination
term20 = np.arange(20) == 9
G20 = reference.discounted_returns(r20, gamma=0.8, terminated=term20, bootstrap_value=1.0)
fig, ax = plt.subplots(figsize=(6, 2.4))
ax.plot(G20, "o-", ms=3)
ax.axvline(9.5, color="k", lw=1)  # the termination, between steps 9 and 10
ax.set_xlabel("step t  (line: the termination after step 9)")
ax.set_ylabel("return $G_t$")
plt.show()
np.testing.assert_allclose(G20[:10], 0.8 ** (9 - np.arange(10)))  # the goal's 1, discounted back: G_9 = 1
np.testing.assert_allclose(G20[10:], 0.8 ** (20 - np.arange(10, 20)))  # the bootstrap 1, discounted back from s_20
assert G20[9] == r20[9] == 1.0 and G20[10] > 0  # the termination cuts: G_9 is its reward alone, G_10 not in it

# %% [markdown]
# ## 2. Prologue, scan, epilogue
#
# A kernel splits section 1's loop into three pieces:
#
# * a **prologue** builds each step's pair $(a_t, b_t)$ from that step's inputs alone;
# * the scan combines the pairs;
# * an **epilogue** turns the scan's output into what is stored.
#
# The return is $G_t = b_t + a_t G_{t+1}$, with $a_t = \gamma_t$ and $b_t = r_t$ at an ordinary step.
#
# **[Reset](GLOSSARY.md#reset).** A reset at step $t$ means $y_t = b_t$: nothing from later steps reaches $t$.
# Tensor code (`rl.linear_scan`) writes it as $a_t = 0$. `rl.linear_scan` treats that 0 as a reset:
# it selects $y_t = b_t$ and does not multiply, so a NaN after it stays out (checked below the NumPy
# code). Triton hooks set the reset flag.
#
# **Where a step resets.** In this notebook, wherever done$_t$ holds: at a termination, a
# truncation or the window's last step. The package's hooks get the flag as `done`.
#
# **An episode end is not the only cause.** In Q(λ) and Retrace
# ([notebook 03](03_td_lambda.ipynb#Exercises)) an action the target policy would not take also
# resets, with no episode end.
#
# **$b_t$ at a reset** must hold the step's whole target, everything that $G_t$ sums from step $t$
# onward, because nothing comes in from step $t+1$. For the return that is $r_t$ plus the bootstrap:
# $b_t = r_t + [\text{done}_t \land \lnot\text{term}_t]\,\gamma_t V'_t$. The bracket is 1 where an
# episode ends without a termination.
#
# The epilogue writes $y_t = G_t$ (0 where padded). In NumPy:

# %%
def returns_as_scan(r, gamma, terminated, truncated, next_values):
    done = terminated | truncated
    done[..., -1] = True
    a = np.where(done, 0.0, gamma)                                      # prologue: a = 0 is the reset flag
    b = r + np.where(done & ~terminated, gamma * next_values, 0.0)
    y, carry = np.zeros_like(r), np.zeros(r.shape[:-1])
    for t in reversed(range(r.shape[-1])):                              # scan (sequential here)
        carry = np.where(a[..., t] == 0, b[..., t], b[..., t] + a[..., t] * carry)  # a select, not a product
        y[..., t] = carry                                               # epilogue: y_t = G_t
    return y


R, NV = rng.normal(size=(3, 40)), rng.normal(size=(3, 40))
TERM = rng.random((3, 40)) < 0.1
TRUNC = (rng.random((3, 40)) < 0.1) & ~TERM
np.testing.assert_allclose(returns_as_scan(R, 0.9, TERM, TRUNC, NV),
                           reference.discounted_returns(R, gamma=0.9, terminated=TERM, truncated=TRUNC, next_values=NV),
                           rtol=1e-12)
print("prologue + scan + epilogue == the loop")
for be in (KERNEL, "torch"):  # a_1 = 0 is a reset, selected: the NaN at step 2 does not reach steps 0 and 1
    y_sel = rl.linear_scan(torch.tensor([[0.5, 0.0, 0.5]], device=DEVICE),
                           torch.tensor([[1.0, 2.0, float("nan")]], device=DEVICE), backend=be)
    assert y_sel[0, :2].tolist() == [2.0, 2.0] and torch.isnan(y_sel[0, 2])

# %% [markdown]
# ### The episode-end table
#
# > **What the exercises need**
# >
# > 1. **Reset where done$_t$:** at a termination, a truncation and the window's last step.
# > 2. **Select, never multiply:** drop a value with a `where`, since $0 \times \text{NaN}$ is NaN.
# > 3. **Put that step's whole target in $b_t$ at a reset:** for the return, $b_t = r_t + \gamma_t V'_t$, or $r_t$ at a termination.
# >    Its form per estimator is in 04's [table](04_vtrace.ipynb#One-table-for-every-estimator).
#
# The rest of the table is reference, for every estimator of the course.
#
# | the step is | reset? | the return's $b_t$ | $a_t$ in `rl.linear_scan` (tensor code) | $a_t$ and reset flag in Triton |
# | --- | --- | --- | --- | --- |
# | an ordinary step | no | $r_t$: $y_{t+1}$ comes in through $a_t$ | $\gamma_t$ | $\gamma_t$; flag false |
# | a termination | yes | $r_t$: no state follows, so no bootstrap | 0 | —; flag true |
# | a truncation | yes | $r_t + \gamma_t V(s_{t+1})$, the bootstrap through a select | 0 | —; flag true |
# | the window's last step | yes | as a truncation, with $V(s_T)$ (no bootstrap if it also terminates) | 0 | —; flag true |
#
# A dash: the reset ignores $a_t$, so Triton code may leave any value there.
#
# * **Why selects.** NaNs are real inputs: a failed environment step gives one, and so may the
#   next value $V'_t$ of a terminated step, which has no next state. So a factor
#   $(1-\text{term}_t)$ in a formula is a **select** in the code (`np.where`, `torch.where`,
#   `tl.where`). The reset cuts the **carry** from step $t+1$, so a later NaN stays out; a NaN in
#   the step's own $b_t$ needs a select that you write.
# * **Other estimators:** [notebook 04's table](04_vtrace.ipynb#One-table-for-every-estimator) gives
#   each one's $b_t$ at a reset.
#
# **The window's last step resets too.** Its bootstrap in $b_{T-1}$ already stands for every step
# after the window. From $y_T = 0$ the reset changes nothing. But start the scan from a value,
# `initial` in `rl.linear_scan`, and without the reset the steps after the window count twice:
# [the appendix's](#Appendix:-two-windows-of-one-rollout) $G_1$ becomes 7.25 in place of 6.

# %% jupyter={"source_hidden": true}
# Checks: the reset flag as a = 0 (tensor code) and as a flag (Triton), in each scan exercise's task (CI runs them; skip when reading)
tasks = {name: " ".join(exercises.task(name).split()) for name in (
    "n_step_returns", "gae_pairs", "transposed_scan", "returns_autograd", "gae_prologue", "q_lambda", "retrace",
    "vtrace_kernel")}
assert all("takes a_t = 0 as a reset" in tasks[n] for n in ("n_step_returns", "gae_pairs"))  # tensor code
assert all("Triples (a, b, reset)" in tasks[n] for n in ("transposed_scan", "returns_autograd", "q_lambda", "retrace"))
assert "-> (a, b, reset, valid, keep)" in tasks["gae_prologue"] and "Your reset_scan" in tasks["vtrace_kernel"]
from rltriton_lite import episode  # noqa: E402 -- "the package's hooks call it done": they get it from episode.step
assert inspect.getsource(getattr(episode.step, "fn", episode.step)).rstrip().endswith("return gamma, lam, term, done, valid")

# %% [markdown]
# ## 3. The kernel
#
# `rl.discounted_returns` runs section 2's three pieces as one Triton kernel. Its scan is the
# package's shared scan kernel, which you read at the end of 00c. It works
# chunk by chunk and cuts the carry at every episode end. Only the prologue and the
# epilogue are the return's own.
#
# The cell below runs it on 4 rows of 45 steps, with terminations, truncations, a per-step
# $\gamma$ and a `mask`. A step with mask 0 (padding, say) acts as if
# deleted from the row: nothing of it is read, and its outputs are 0. The row's last step with
# mask 1 is the window's last step.

# %%
B, T = 4, 45
r = torch.randn(B, T, device=DEVICE)
nv = torch.randn(B, T, device=DEVICE)
term = torch.rand(B, T, device=DEVICE) < 0.1
trunc = (torch.rand(B, T, device=DEVICE) < 0.1) & ~term
mask = torch.rand(B, T, device=DEVICE) > 0.1
gamma = torch.rand(B, T, device=DEVICE) * 0.2 + 0.8
G = rl.discounted_returns(r, gamma=gamma, terminated=term, truncated=trunc, next_values=nv, mask=mask,
                          backend=KERNEL)

# %% [markdown]
# ## 4. Kernel against the loop
#
# The kernel must match section 1's loop batch-major, time-major (`time_dim=0`), and with one
# `bootstrap_value` per row in place of `next_values`. The masked steps must act as deleted.

# %%
expected = reference.discounted_returns(to_numpy(r), gamma=to_numpy(gamma), terminated=to_numpy(term),
                                        truncated=to_numpy(trunc), next_values=to_numpy(nv), mask=to_numpy(mask))
np.testing.assert_allclose(to_numpy(G), expected, rtol=1e-5, atol=1e-5)
assert (G[~mask] == 0).all()  # a masked step's output is 0
G_holes = rl.discounted_returns(torch.where(mask, r, float("nan")), gamma=gamma, terminated=term, truncated=trunc,
                                next_values=torch.where(mask, nv, float("nan")), mask=mask, backend=KERNEL)
torch.testing.assert_close(G_holes, G)  # NaN in the masked steps: nothing of them is read
kept = mask[0]  # row 0 with its masked steps deleted gives the same returns at the other steps
G_del = rl.discounted_returns(r[:1, kept], gamma=gamma[:1, kept], terminated=term[:1, kept],
                              truncated=trunc[:1, kept], next_values=nv[:1, kept], backend=KERNEL)
torch.testing.assert_close(G_del[0], G[0, kept])

G_tm = rl.discounted_returns(r.t().contiguous(), gamma=gamma.t().contiguous(), terminated=term.t().contiguous(),
                             truncated=trunc.t().contiguous(), next_values=nv.t().contiguous(),
                             mask=mask.t().contiguous(), time_dim=0, backend=KERNEL)
np.testing.assert_allclose(to_numpy(G_tm).T, expected, rtol=1e-5, atol=1e-5)

# without next_values: the window's last step bootstraps from bootstrap_value, terminations only
boot = torch.randn(B, device=DEVICE)
G2 = rl.discounted_returns(r, gamma=0.99, terminated=term, bootstrap_value=boot, backend=KERNEL)
expected2 = reference.discounted_returns(to_numpy(r), gamma=0.99, terminated=to_numpy(term),
                                         bootstrap_value=to_numpy(boot))
np.testing.assert_allclose(to_numpy(G2), expected2, rtol=1e-5, atol=1e-5)
print("kernel == loop")

# %% [markdown]
# A NaN reward stays inside its episode: the step holding it and the steps before it in that
# episode become NaN, and nothing else does.

# %%
r_nan = torch.ones(1, 10, device=DEVICE)
r_nan[0, 6] = float("nan")
t_nan = torch.zeros(1, 10, dtype=torch.bool, device=DEVICE)
t_nan[0, 3] = True  # the episode of steps 4..9 holds the NaN
G_nan = rl.discounted_returns(r_nan, gamma=0.9, terminated=t_nan, backend=KERNEL)
print(G_nan)
assert torch.isfinite(G_nan[0, :4]).all() and torch.isnan(G_nan[0, 4:7]).all() and torch.isfinite(G_nan[0, 7:]).all()

# %% [markdown]
# The rows above fit in one chunk. `profile.rollout_error` runs the kernel in chunks of 256 steps
# and returns its relative error against the float64 reference. A row of 1,000 steps spans four
# chunks, so this checks the carry between chunks:


# %%
long_err = profile.rollout_error("discounted_return", 3, 1000, DEVICE)
assert long_err < 1e-5, long_err
print(f"3 x 1000: relative error {long_err:.1e}")

# %% [markdown]
# ## 5. How fast is it (H200, measured)
#
# At 16×128 the call is [host-bound](GLOSSARY.md#host-bound), its wall time over 20× its GPU time: [notebook 09, section 2.1](09_benchmarks.ipynb#2.1-Discounted-return:-host-bound).

# %% jupyter={"source_hidden": true}
# Checks: the claim above, on the committed H200 run (CI runs them; skip when reading)
# every row of the return, as a table and a chart: profile.committed("discounted_return") (notebook 09, section 2.1)
RUN, RES, h200 = profile.committed_or_empty("discounted_return")
_fw16 = [r for r in h200 if (r["impl"], r["B"], r["T"], r["pass"]) == (profile.OURS_IMPL, 16, 128, "fwd")]
assert not h200 or len(_fw16) == 1 and _fw16[0]["wall_us"] > 20 * _fw16[0]["gpu_us"]  # "more than 20 times"
assert not h200 or RES["gpu"] == "NVIDIA H200"  # "the committed H200 run"

# %% [markdown]
# ## Exercises
#
# Every exercise of 01 to 04c follows one [conventions card](GLOSSARY.md#conventions-for-every-exercise).
# Checked exercises work as in [notebook 00](00_associative_scan.ipynb#Exercises);
# `print(exercises.task(name))` restates a task. This notebook has one, in tensor code. How its
# checker spots a loop: the [appendix](#Appendix:-details-of-the-exercises).

# %% [markdown]
# ### Tensor code: the reset flag is $a_t = 0$
#
# **`n_step_returns`.** The $n$-step return is not one scan, but it is the difference of two
# values of one scan.
#
# Let $S_t$ be the discounted sum of rewards up to the episode's end, with the bootstrap at the
# window's end. It is section 2's return with terminations only: one `rl.linear_scan`, with
# $a_t = 0$ at its resets (`S_of` below). Then there are two cases:
#
# * The episode runs on past the $n$ steps ($t + n < T$, no termination in $[t, t+n)$). The first
#   $n$ terms of $S_t$ are then $S_t - \gamma^n S_{t+n}$, so
#   $G^{(n)}_t = S_t - \gamma^n S_{t+n} + \gamma^n V(s_{t+n})$.
# * Elsewhere the sum stops by itself, and $G^{(n)}_t = S_t$.
#
# $V(s_{t+n})$ is `next_values[t + n - 1]`, since `next_values[t]` is $V(s_{t+1})$. Both cases, on
# one row:

# %%
r1, v1, n_ = torch.randn(1, 12, device=DEVICE), torch.randn(1, 12, device=DEVICE), 3  # v1: next_values
term1 = torch.zeros(1, 12, dtype=torch.bool, device=DEVICE)
term1[0, 9] = True  # an episode ends after step 9


def S_of(r, v, term, gamma):
    """S_t: a reverse scan; the bootstrap only at the window's last step, and only if it does not terminate."""
    last = torch.zeros_like(term)
    last[..., -1] = True  # the window's last step, for any (B, T)
    boot = torch.where(last & ~term, gamma * v, 0.0)  # a select: a terminated step's NaN next value is not read
    return rl.linear_scan(gamma * (~(term | last)).float(), r + boot, backend=KERNEL)  # a = 0: the resets


S = S_of(r1, v1, term1, 0.9)  # S_t, with gamma = 0.9
t0 = 4  # the episode runs on past t0 + n: the difference of two values of S
by_hand = sum(0.9 ** k * r1[0, t0 + k] for k in range(n_)) + 0.9 ** n_ * v1[0, t0 + n_ - 1]  # V(s_{t+n})
from_scan = S[0, t0] - 0.9 ** n_ * S[0, t0 + n_] + 0.9 ** n_ * v1[0, t0 + n_ - 1]
assert torch.isclose(by_hand, from_scan, atol=1e-5)
t1 = 8  # step 9 terminates inside [8, 11): the sum stops there, no bootstrap
assert torch.isclose(S[0, t1], r1[0, 8] + 0.9 * r1[0, 9], atol=1e-5)
print(f"G^(3)_4 = {by_hand.item():.4f} by hand, {from_scan.item():.4f} from the scan; G^(3)_8 = S_8")
term_end, v_nan = term1.clone(), v1.clone()
term_end[0, -1], v_nan[0, -1] = True, float("nan")  # the last step terminates; the value behind it is NaN
S_end = S_of(r1, v_nan, term_end, 0.9)
assert torch.isfinite(S_end).all() and torch.isclose(S_end[0, -1], r1[0, -1])  # no bootstrap, no NaN

# %% [markdown]
# **You write:** `n_step_returns(rewards, next_values, terminated, gamma, n)`, for every $t$ at
# once, with tensor ops (`rl.linear_scan` or any others) and no Python loop over time.
#
# **It returns:** the $n$-step return $G^{(n)}_t$ of every step, (B, T).
#
# **Inputs:** all (B, T); `n` $\ge 1$ may exceed `T`. NaN next values and the rest: the
# [conventions card](GLOSSARY.md#conventions-for-every-exercise).
#
# * **The formula:** $G^{(n)}_t = \sum_{k<n_t} \gamma^k r_{t+k} + \mathbb{1}[\text{no termination in }
#   t..t+n_t-1]\,\gamma^{n_t} V(s_{t+n_t})$: $n_t = n$ unless a termination (no bootstrap) or the
#   window's end (bootstrap from its last step's `next_values`) comes first.
#
# <details><summary>Hint 1: where to start</summary>
#
# $S_t$ by one reverse scan, then the two cases above. For each step $t$, which case holds, and
# which values of $S$ and `next_values` does it need? Build index tensors over $t$, not a loop.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * $S$ is `S_of(rewards, next_values, terminated, gamma)` above.
# * Step $t$ "runs on" if $t + n < T$ and no termination lies in $[t, t+n)$. Count the
#   terminations of every window at once, from one running count over the row.
# * Where it runs on, subtract the tail $\gamma^n (S_{t+n} - V(s_{t+n}))$ from $S_t$. Elsewhere keep $S_t$.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Rewards 1, 2, 3, 4, `next_values` 10, 20, 30, 40, $\gamma = 0.5$, $n = 2$; step 2 terminates.
#
# * $t = 0$ runs on: $1 + 0.5 \cdot 2 + 0.25\,V(s_2) = 2 + 0.25 \cdot 20 = 7$ ($V(s_2)$ is `next_values[1]`).
# * $t = 1$: step 2 terminates inside its two steps, so $2 + 0.5 \cdot 3 = 3.5$, with no bootstrap.
# * $t = 2$ is terminal: 3. $t = 3$ is the window's end: $4 + 0.5 \cdot 40 = 24$.
# * With $n = 1$ each step is its one-step target $r_t + \gamma V'_t$ (none at the termination): 6, 12, 3, 24.
#
# ```python
# r4, nv4 = torch.tensor([[1.0, 2.0, 3.0, 4.0]], device=DEVICE), torch.tensor([[10.0, 20.0, 30.0, 40.0]], device=DEVICE)
# term4 = torch.tensor([[False, False, True, False]], device=DEVICE)
# print(n_step_returns(r4, nv4, term4, 0.5, 2).tolist(), n_step_returns(r4, nv4, term4, 0.5, 1).tolist())
# # must print [[7.0, 3.5, 3.0, 24.0]] [[6.0, 12.0, 3.0, 24.0]]
# ```
#
# Run the checker before you open Hint 4.
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# With `t = torch.arange(T, device=rewards.device)` and
# `ends = torch.cumsum(torch.nn.functional.pad(terminated.float(), (1, 0)), 1)`:
#
# ```python
# runs_on = (___ == 0) & (t + n < T)  # no termination in [t, t + n): a difference of `ends`
# i = torch.clamp(t + n, max=T - 1)  # S_(t+n) at i; at which index is V(s_(t+n))?
# # (the clamp only keeps an index inside the row: where runs_on is False, the value read is not used;
# #  `ends` has T + 1 entries: clamp its index t + n at T, or reuse `i`. Either works, since runs_on needs t + n < T)
# G = S - gamma ** n * torch.where(runs_on, ___, 0.0)
# ```
#
# </details>

# %%
def n_step_returns(rewards, next_values, terminated, gamma, n):
    # YOUR CODE
    raise NotImplementedError

# %%
exercises.attempt("n_step_returns", n_step_returns)

# %% [markdown]
# Without a checker:
#
# *(Answer each in its cell below.)*
#
# 1. Make $\gamma$ a per-step tensor that is $\gamma^{\Delta t}$ for irregular time steps
#    $\Delta t$ (semi-MDPs). Check against the loop.
#
#    <details><summary>Check yourself</summary>
#
#    Only `gamma` changes, and the result equals the loop to float64 precision. Without episode ends,
#    $G_0 = \sum_k \gamma^{\tau_k} r_k + \gamma^{\tau_T} V'$, with $\tau_k$ the clock time of decision $k$ and $\tau_0 = 0$.
#
#    </details>
# 2. Drop `truncated` but keep time limits in the data. On a rollout where every episode is
#    cut (say reward 1 at every step, γ = 0.99, a time limit of 200 steps, and a critic that knows
#    the value without the limit, $1/(1-\gamma) = 100$), how large is the bias of treating a time limit as a termination, at each
#    step of an episode?
#
#    <details><summary>Check yourself</summary>
#
#    At step $k$ of the episode ($k = 0, \dots, 199$) the bias is $-100\,\gamma^{200-k}$: about $-13$ at the
#    first step and $-99$ at the last.
#
#    </details>
# 3. Plot $G_t$ for $\gamma \in \{0.9, 0.99, 0.999\}$ on one long episode of constant reward 1
#    that terminates at its last step, 10,000 steps long. Where does each curve flatten, at what
#    value, and why?
#
#    <details><summary>Check yourself</summary>
#
#    The plateaus are $1/(1-\gamma)$ = 10, 100 and 1000. Each curve is within 1 % of its plateau from
#    44, 459 and 4,603 steps before the end, where $\gamma^{T-t}$ falls below 0.01.
#
#    </details>

# %% jupyter={"source_hidden": true}
# Checks: questions 2 and 3's expected results (CI runs them; skip when reading)
_ones, _k = np.ones(200), np.arange(200)
_as_term = reference.discounted_returns(_ones, gamma=0.99, terminated=np.r_[np.zeros(199), 1.0])
_as_trunc = reference.discounted_returns(_ones, gamma=0.99, truncated=np.r_[np.zeros(199), 1.0], next_values=np.full(200, 100.0))
np.testing.assert_allclose(_as_trunc, 100.0, rtol=1e-10)  # the critic's value without the limit
np.testing.assert_allclose(_as_term - _as_trunc, -100 * 0.99 ** (200 - _k), rtol=1e-10)
assert round(_as_term[0] - 100) == -13 and round(_as_term[-1] - 100) == -99
_end = np.r_[np.zeros(9999), 1.0]  # question 3: one episode of 10,000 steps, terminating at its last step
for _g, _plateau, _steps in ((0.9, 10, 44), (0.99, 100, 459), (0.999, 1000, 4603)):
    _G = reference.discounted_returns(np.ones(10_000), gamma=_g, terminated=_end)
    np.testing.assert_allclose(_G[0], _plateau, rtol=1e-4)  # "the plateaus are 1/(1 - gamma)"
    assert 10_000 - np.nonzero(_G >= 0.99 * _plateau)[0].max() == _steps  # "within 1 % from ... steps before the end"

# %% [markdown] tags=["answer-1"]
# **Answer 1.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-2"]
# **Answer 2.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-3"]
# **Answer 3.** *Your answer here (code for it: in cells under this one).*

# %% [markdown]
# ## What you now know
#
# * The discounted return is one reverse scan, with $a_t = \gamma_t$ and $b_t = r_t$, plus the
#   bootstrap $\gamma_t V'_t$ at a truncation or the window's end that does not terminate.
#   `rl.discounted_returns` is a prologue, the shared scan and an epilogue.
# * [The episode-end table](#The-episode-end-table): at a reset $b_t$ holds the bootstrap; for the
#   return, $r_t + \gamma_t V'_t$.
# * While the episode runs on, the $n$-step return is $S_t - \gamma^n S_{t+n} + \gamma^n V(s_{t+n})$,
#   from one scan $S$. Otherwise it is $S_t$. $V(s_{t+n})$ is `next_values[t + n - 1]`.

# %% [markdown]
# ## Appendix: two windows of one rollout
#
# Optional: why the window's last step resets ([the episode-end table](#The-episode-end-table)), and
# how `initial` chains windows.
#
# Every reward is 1 and $\gamma = 0.5$. Window A holds steps 0 and 1 and bootstraps from
# $V(s_2) = 10$, so $b = (1, 1 + 0.5 \cdot 10) = (1, 6)$. Window B holds steps 2 and 3 and
# bootstraps from $V(s_4) = 4$, so $b = (1, 3)$ and $G = (2.5, 3)$. Both windows have the same
# multipliers, `a_win` $= (0.5, 0)$: their last step resets. Scan window B, then pass its
# $G_2 = 2.5$ into window A as `initial`:
#
# ```python
# a_win = torch.tensor([[0.5, 0.0]])  # either window: its last step resets (a = 0)
# G_B = rl.linear_scan(a_win, torch.tensor([[1.0, 3.0]]))  # window B alone: (2.5, 3)
# rl.linear_scan(a_win, torch.tensor([[1.0, 6.0]]), initial=G_B[:, 0])  # window A: (4, 6), as alone
# ```
#
# | window A's step 1 | $G_1$ | $G_0$ |
# | --- | --- | --- |
# | resets ($a_1 = 0$) | $b_1 = 6$, whatever comes in | $1 + 0.5 \cdot 6 = 4$, as window A alone |
# | does not reset ($a_1 = 0.5$) | $6 + 0.5 \cdot 2.5 = 7.25$ | $1 + 0.5 \cdot 7.25 = 4.625$ |
#
# Without the reset, the steps after step 1 are counted twice: once as the bootstrap
# $0.5 \cdot V(s_2) = 5$, and once more as $0.5 \cdot G_2 = 1.25$.
#
# So hand a window what lies after it in one way only: as the bootstrap in its $b_{T-1}$, with a
# reset at its last step, or as `initial`, with no bootstrap and no reset. Drop window A's
# bootstrap and its reset, and the same `initial` gives the returns of one window of all four
# steps. Notebook 11 scans a row in pieces this way, one piece per GPU.

# %% jupyter={"source_hidden": true}
# Checks: the two windows above (CI runs them; skip when reading)
a_win = torch.tensor([[0.5, 0.0]], device=DEVICE)  # either window: its last step resets (a = 0)
b_A = torch.tensor([[1.0, 1.0 + 0.5 * 10.0]], device=DEVICE)  # window A: the bootstrap gamma * V(s_2) in b_1
b_B = torch.tensor([[1.0, 1.0 + 0.5 * 4.0]], device=DEVICE)  # window B, bootstrapping from V(s_4) = 4
G_B = rl.linear_scan(a_win, b_B, backend=KERNEL)  # window B alone: (2.5, 3)
G_2 = G_B[:, 0]  # the value past window A
alone = rl.linear_scan(a_win, b_A, backend=KERNEL)  # window A alone, from y_2 = 0
with_reset = rl.linear_scan(a_win, b_A, initial=G_2, backend=KERNEL)
no_reset = rl.linear_scan(torch.tensor([[0.5, 0.5]], device=DEVICE), b_A, initial=G_2, backend=KERNEL)  # a_1 = gamma
torch.testing.assert_close(with_reset, alone)  # the reset keeps G_2 out: "(4, 6), as alone"
torch.testing.assert_close(no_reset, torch.tensor([[4.625, 7.25]], device=DEVICE))  # G_1 = 6 + 0.5 * 2.5
torch.testing.assert_close(G_B, torch.tensor([[2.5, 3.0]], device=DEVICE))  # window B's G = (2.5, 3)
torch.testing.assert_close(alone, torch.tensor([[4.0, 6.0]], device=DEVICE))  # the table's first row
np.testing.assert_allclose(reference.discounted_returns([1.0, 1.0], gamma=0.5, bootstrap_value=10.0), [4.0, 6.0])
torch.testing.assert_close(rl.linear_scan(torch.tensor([[0.5, 0.5]], device=DEVICE), b_A, backend=KERNEL), alone)  # from 0: no difference
piece = rl.linear_scan(torch.full((1, 2), 0.5, device=DEVICE), torch.ones(1, 2, device=DEVICE), initial=G_2,
                       backend=KERNEL)  # window A as a piece: no bootstrap, no reset, G_2 passed in
one_window = reference.discounted_returns([1.0] * 4, gamma=0.5, bootstrap_value=4.0)  # all four steps, one window
np.testing.assert_allclose(to_numpy(piece)[0], one_window[:2])  # "the returns of one window of all four steps"
np.testing.assert_allclose(to_numpy(G_B)[0], one_window[2:])

# %% [markdown]
# ## Appendix: details of the exercises
#
# **`n_step_returns`: how the checker spots a loop over time.** The checker runs your function at
# two lengths and counts the Python lines it executes. A loop over time runs more of them on the
# longer rollout.
