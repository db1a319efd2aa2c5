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
# # 02 — Generalized advantage estimation as one scan
#
# > **In short**
# >
# > * Generalized advantage estimation (GAE) says how much better each action did than the critic expected.
# > * It is a discounted sum of TD errors, so it is one reverse scan, like notebook 01's return.
# > * You write its per-step pairs $(a_t, b_t)$ in PyTorch, and check the package's kernel against a plain loop.
# > * An optional appendix reads the package's own Triton prologue, and has you write one.
#
# * **Time:** 2–3 h with the open questions; 1–1.5 h for the reading and the checked exercises.
# * **Needs:** notebook 01; for the appendix's exercise, 01b (writing Triton prologues). No GPU.
# * **Conventions:** the glossary's [card for every exercise](GLOSSARY.md#conventions-for-every-exercise).
# * **Minimum path:** sections 1–3 and the checked exercise `gae_pairs`. Sections 4–5, the open
#   questions and the optional appendix (with its exercise `gae_prologue`) can wait.
#
# PPO, A2C and most actor-critic methods weight each action by an **advantage**. It says how much
# better the return after the action was than the critic expected. Generalized advantage estimation
# (GAE) averages the $n$-step advantages with weights $(1-\lambda)\lambda^{n-1}$. The average is
# $\hat A_t = \sum_k (\gamma\lambda)^k\delta_{t+k}$, a discounted return of the TD errors
# $\delta$ with discount $\gamma\lambda$, so it is one reverse scan. With episode ends, over a
# window of $T$ steps (what one call sees):
#
# $$\delta_t = r_t + \gamma_t (1-\text{term}_t) V'_t - V_t, \qquad
#   \hat A_t = \delta_t + \gamma_t\lambda_t (1-\text{done}_t) \hat A_{t+1}, \qquad \text{returns}_t = \hat A_t + V_t .$$
#
# * $\gamma_t$ and $\lambda_t$ may vary per step: `rl.gae` takes each as a number or a (B, T)
#   tensor. Where they are one number, as in `gae_pairs`, the subscripts are dropped.
# * $V_t = V(s_t)$ is `values[t]`. $V'_t = V(s_{t+1})$, never read at a termination, comes from
#   one of two inputs:
#
#   | the call passes | $V'_t$ inside the window | $V'_{T-1}$, the window's last step |
#   |---|---|---|
#   | `next_values` (as `gae_pairs` does) | `next_values[t]`, truncations included | `next_values[T-1]` |
#   | `values` and `bootstrap_value` only | `values[t+1]` | `bootstrap_value` |
#
#   At a truncation `values[t+1]` belongs to the next episode, so a call that passes `truncated`
#   without `next_values` raises a ValueError.
#
# <details><summary>Details: why the average is a scan, and the source (optional)</summary>
#
# Inside one episode (no ends, an endless rollout), the $n$-step advantage is a sum of TD errors,
# because the values in between cancel: $\hat A^{(n)}_t = \sum_{k<n}\gamma^k r_{t+k} + \gamma^n V_{t+n} - V_t =
# \sum_{k<n}\gamma^k\delta_{t+k}$. In the average, $\delta_{t+k}$ appears in every $\hat A^{(n)}$
# with $n > k$, each time with the factor $\gamma^k$. Its weights add up to
# $\sum_{n>k}(1-\lambda)\lambda^{n-1} = \lambda^k$, so its total weight is $(\gamma\lambda)^k$, and the
# average is $\hat A_t = \sum_k (\gamma\lambda)^k\delta_{t+k}$.
#
# GAE: Schulman, Moritz, Levine, Jordan, Abbeel, *High-Dimensional Continuous Control Using
# Generalized Advantage Estimation*, ICLR 2016.
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
from rltriton_lite import episode, exercises, profile, reference, returns

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# the Triton kernels: compiled on a GPU, in the interpreter on a CPU (backend="auto" takes the PyTorch path on a CPU)
KERNEL = "triton"
rng = np.random.default_rng(0)
to_numpy = lambda x: x.cpu().numpy()  # noqa: E731

# %% [markdown]
# ## 1. The loop
#
# As in notebook 01, a float64 NumPy loop is the ground truth: one time step per iteration, the
# batch by broadcasting.

# %%
print(inspect.getsource(reference.gae))

# %% [markdown]
# A rollout to follow by hand: four steps, $\gamma = 0.5$, $\lambda = 0.5$. The episode terminates
# after step 1, so $s_2$ starts a new one. The window ends after step 3, with a bootstrap value of 10.

# %%
r = np.array([1.0, 1.0, 1.0, 1.0])
v = np.array([2.0, 2.0, 2.0, 2.0])
term = np.array([False, True, False, False])
adv, ret = reference.gae(r, v, gamma=0.5, lambda_=0.5, terminated=term, bootstrap_value=10.0)
print("advantages", adv, "\nreturns   ", ret)
# by hand: t=3: δ = 1 + 0.5·10 − 2 = 4, A = 4 (window end).  t=2: δ = 1 + 0.5·2 − 2 = 0, A = 0 + 0.25·4 = 1.
#          t=1: terminal, δ = 1 − 2 = −1, A = −1.            t=0: δ = 1 + 0.5·2 − 2 = 0, A = 0 + 0.25·(−1) = −0.25.
np.testing.assert_allclose(adv, [-0.25, -1.0, 1.0, 4.0])
np.testing.assert_allclose(ret, adv + v)

# %% [markdown]
# ## 2. Prologue, scan, epilogue
#
# The split of notebook 01, with $\hat A_t = b_t + a_t \hat A_{t+1}$:
#
# * **[prologue](GLOSSARY.md#prologue)**, per step before the scan: $b_t = \delta_t$ and
#   $a_t = \gamma_t\lambda_t$, with the [reset flag](GLOSSARY.md#reset) set where done$_t$. The episode ends
#   live here, and you write it next;
# * **scan**: the reverse scan, whose output $y_t$ is $\hat A_t$;
# * **[epilogue](GLOSSARY.md#epilogue)**, per step after the scan: advantages $= y_t$, returns
#   $= y_t + V_t$, 0 where padded.
#
# In NumPy, against the loop:

# %%
def gae_as_scan(r, v, gamma, lam, terminated, bootstrap_value):
    T = r.shape[-1]
    v_next = np.concatenate([v[..., 1:], np.asarray(bootstrap_value)[..., None]], -1)
    done = terminated.copy()
    done[..., -1] = True
    b = r + np.where(terminated, 0.0, gamma * v_next) - v      # prologue
    a = np.where(done, 0.0, gamma * lam)                         # a = 0 is the reset flag
    y, carry = np.zeros_like(b), np.zeros(b.shape[:-1])
    for t in reversed(range(T)):                                 # scan (sequential here)
        carry = np.where(a[..., t] == 0, b[..., t], b[..., t] + a[..., t] * carry)  # a select, not a product
        y[..., t] = carry
    return y, y + v                                              # epilogue


R, V = rng.normal(size=(3, 40)), rng.normal(size=(3, 40))
TERM, BOOT = rng.random((3, 40)) < 0.1, rng.normal(size=3)
for got, want in zip(gae_as_scan(R, V, 0.97, 0.9, TERM, BOOT),
                     reference.gae(R, V, gamma=0.97, lambda_=0.9, terminated=TERM, bootstrap_value=BOOT)):
    np.testing.assert_allclose(got, want, rtol=1e-12)
print("prologue + scan + epilogue == the loop")

# %% [markdown]
# **`gae_pairs`** (tensor ops; checked exercises work as in
# [notebook 00](00_associative_scan.ipynb#Exercises)).
#
# **You write:** `gae_pairs(rewards, values, next_values, terminated, truncated, gamma, lam)`, GAE's
# prologue in tensor code.
#
# **It returns:** the pairs `(a, b)`, each shaped like `rewards`, whose scan `rl.linear_scan(a, b)`
# gives the advantages $\hat A_t$.
#
# **Inputs:** all (B, T); `gamma`, `lam` numbers. The reset ($a_t = 0$ here), NaN next values and
# the rest: the [conventions card](GLOSSARY.md#conventions-for-every-exercise).
#
# * **The scan:** $\hat A_t = \delta_t + \gamma\lambda\,(1-\text{done}_t)\,\hat A_{t+1}$,
#   $\delta_t = r_t + \gamma(1-\text{term}_t)V'_t - V_t$. At a reset $b_t$ is $\delta_t$ itself: it already holds the bootstrap.
# * **The checker** scans your pairs from $y_T = 100$, a stand-in for what lies past the window: only
#   a reset at the window's last step keeps it out.
#
# <details><summary>Hint 1: where to start</summary>
#
# Section 2's `gae_as_scan` builds these pairs in NumPy; yours adds truncations. Which factor multiplies $\hat A_{t+1}$, and at which
# kinds of step is it cut?
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Give each kind of step of
#   [01's episode-end table](01_discounted_return.ipynb#The-episode-end-table) its pair $(a_t, b_t)$.
# * The kinds differ only where a flag is set: each difference is one select.
# * $b_t = \delta_t$, and $a_t = \gamma\lambda$ where the trace is not cut.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Four steps, $\gamma = \lambda = 0.5$, rewards 1, values 2. Step 1 terminates (its `next_values`
# is NaN). Step 2 is truncated, with a real next value 8. The window's last step bootstraps from 10.
#
# * $b = \delta = (1 + 0.5 \cdot 2 - 2,\ 1 - 2,\ 1 + 0.5 \cdot 8 - 2,\ 1 + 0.5 \cdot 10 - 2) = (0, -1, 3, 4)$:
#   the truncation keeps its bootstrap.
# * $a_0 = 0.25$, and $a_1 = a_2 = a_3 = 0$: both kinds of end cut the trace, and so does the
#   window's last step.
# * The scan: $\hat A = (0 + 0.25 \cdot (-1),\ -1,\ 3,\ 4) = (-0.25, -1, 3, 4)$.
#
# ```python
# a4, b4 = gae_pairs(torch.ones(1, 4, device=DEVICE), torch.full((1, 4), 2.0, device=DEVICE),
#                    torch.tensor([[2.0, float("nan"), 8.0, 10.0]], device=DEVICE),
#                    torch.tensor([[False, True, False, False]], device=DEVICE),
#                    torch.tensor([[False, False, True, False]], device=DEVICE), 0.5, 0.5)
# print(b4.tolist(), rl.linear_scan(a4, b4).tolist())  # must print [[0.0, -1.0, 3.0, 4.0]] [[-0.25, -1.0, 3.0, 4.0]]
# print(rl.linear_scan(a4, b4, initial=torch.tensor([5.0], device=DEVICE)).tolist())  # must print [[-0.25, -1.0, 3.0, 4.0]]
# ```
#
# Run the checker before you open Hint 4.
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# At a termination $\delta_t = r_t - V_t$, with no bootstrap.
#
# ```python
# delta = rewards + torch.where(terminated, ___, ___) - values  # ___: what does a terminated step bootstrap from?
# last = torch.zeros_like(terminated)
# last[..., -1] = True  # the window's last step
# ends = ___  # a bool: which steps cut the trace?
# a = torch.where(ends, ___, ___)  # ___: a select: 0 (a reset) where ends, gamma * lam elsewhere
# return a, delta
# ```
#
# </details>

# %%
def gae_pairs(rewards, values, next_values, terminated, truncated, gamma, lam):
    # YOUR CODE: return (a, b), tensors shaped like rewards
    raise NotImplementedError

# %%
exercises.attempt("gae_pairs", gae_pairs)

# %% jupyter={"source_hidden": true}
# Checks: "the checker scans your pairs from y_T = 100" (CI runs them; skip when reading)
assert "starts from y_T = 100" in " ".join(exercises.task("gae_pairs").split()) and exercises.PAST_WINDOW == 100.0

# %% [markdown]
# ## 3. The kernel
#
# `rl.gae` runs section 2's three pieces as one Triton kernel: the shared scan of notebooks 00c and
# 01, with GAE's prologue and epilogue as [hooks](GLOSSARY.md#hook). The prologue computes your
# `gae_pairs` step. The optional [appendix](#Appendix:-the-package's-hook-form) reads the hooks.
#
# A call takes the rewards and the values, then the keywords. On section 1's rollout it gives the
# advantages worked out there by hand:

# %%
adv1, ret1 = rl.gae(torch.ones(1, 4, device=DEVICE), torch.full((1, 4), 2.0, device=DEVICE), gamma=0.5, lambda_=0.5,
                    terminated=torch.tensor([[False, True, False, False]], device=DEVICE),
                    bootstrap_value=torch.tensor([10.0], device=DEVICE), backend=KERNEL)
print("advantages", adv1.tolist(), "\nreturns   ", ret1.tolist())
e_adv1, _ = reference.gae(np.ones(4), np.full(4, 2.0), gamma=0.5, lambda_=0.5, terminated=[False, True, False, False],
                         bootstrap_value=10.0)  # the loop of section 1
np.testing.assert_allclose(to_numpy(adv1)[0], e_adv1, rtol=1e-6)
assert adv1.tolist() == [[-0.25, -1.0, 1.0, 4.0]]  # section 1's by-hand values
torch.testing.assert_close(ret1, adv1 + 2.0)

# %% [markdown]
# ## 4. Kernel against the loop
#
# The kernel must match the loop on terminations, truncations, left and right padding, a per-step
# discount, and a time-major buffer:

# %%
B, T = 4, 50
r = torch.randn(B, T, device=DEVICE)
v = torch.randn(B, T, device=DEVICE)
term = torch.rand(B, T, device=DEVICE) < 0.1
trunc = (torch.rand(B, T, device=DEVICE) < 0.1) & ~term
nv = torch.where(trunc, torch.randn(B, T, device=DEVICE), torch.cat([v[:, 1:], torch.randn(B, 1, device=DEVICE)], 1))
mask = torch.ones(B, T, dtype=torch.bool, device=DEVICE)
mask[0, :7] = False   # left padding (a prompt)
mask[1, -5:] = False  # right padding
gamma = torch.rand(B, T, device=DEVICE) * 0.1 + 0.9  # a per-step discount

adv, ret = rl.gae(r, v, gamma=gamma, lambda_=0.95, terminated=term, truncated=trunc, next_values=nv, mask=mask,
                  backend=KERNEL)
e_adv, e_ret = reference.gae(to_numpy(r), to_numpy(v), gamma=to_numpy(gamma), lambda_=0.95,
                             terminated=to_numpy(term), truncated=to_numpy(trunc), next_values=to_numpy(nv),
                             mask=to_numpy(mask))
np.testing.assert_allclose(to_numpy(adv), e_adv, rtol=1e-5, atol=1e-5)
np.testing.assert_allclose(to_numpy(ret), e_ret, rtol=1e-5, atol=1e-5)
assert (adv[~mask] == 0).all()

# the same data as a time-major (T, B) buffer, as CleanRL and SB3 store it: read through strides
adv_tm, _ = rl.gae(r.t().contiguous(), v.t().contiguous(), gamma=gamma.t().contiguous(), lambda_=0.95,
                   terminated=term.t().contiguous(), truncated=trunc.t().contiguous(),
                   next_values=nv.t().contiguous(), mask=mask.t().contiguous(), time_dim=0, backend=KERNEL)
np.testing.assert_allclose(to_numpy(adv_tm).T, e_adv, rtol=1e-5, atol=1e-5)
print("kernel == loop: episodes, truncations, padding, per-step gamma, time-major")

# %% [markdown]
# The advantages along one row. Each episode end resets the sum.

# %%
row = 2
fig, ax = plt.subplots(figsize=(10, 2.8))
ax.plot(to_numpy(adv)[row], ".-", label=r"advantage $\hat A_t$")
ax.plot(to_numpy(r)[row], ".", alpha=0.5, label="reward $r_t$")
for t in np.flatnonzero(to_numpy(term)[row]):
    ax.axvline(t + 0.5, color="k", lw=1)
for t in np.flatnonzero(to_numpy(trunc)[row]):
    ax.axvline(t + 0.5, color="k", ls=":", lw=1)
ax.set_xlabel("t  (solid: termination, dotted: truncation)")
ax.legend()
plt.show()

# %% [markdown]
# The backward kernel, [notebook 01b's transposed scan](01b_prologues_and_backward.ipynb#2.-The-backward),
# against autograd of the PyTorch path. A next value behind a termination is never read, so its
# gradient is 0:

# %%
r64, v64, nv64 = (torch.randn(2, 30, dtype=torch.float64, device=DEVICE, requires_grad=True) for _ in range(3))
w = torch.randn(2, 30, dtype=torch.float64, device=DEVICE)
t2 = torch.rand(2, 30, device=DEVICE) < 0.1
grads = {be: torch.autograd.grad((rl.gae(r64, v64, terminated=t2, next_values=nv64, backend=be).advantages * w).sum(),
                                 (r64, v64, nv64))
         for be in ("triton", "torch")}
for gk, gt in zip(grads["triton"], grads["torch"]):
    torch.testing.assert_close(gk, gt)
d_nv = grads["triton"][2]
assert (d_nv[t2] == 0).all() and (d_nv[~t2] != 0).all()  # behind a termination: never read
print("gradients match, next values included")

# %%
assert profile.rollout_error("gae", 3, 1000, DEVICE) < 1e-5  # 3 × 1,000 steps: four chunks of 256 per row, the carry between them (notebook 01)

# %% [markdown]
# ## 5. How fast is it (H200, measured)
#
# At 16×128 a naive GAE kernel and our call are both [host-bound](GLOSSARY.md#host-bound): [notebook 09, section 2.2](09_benchmarks.ipynb#2.2-GAE:-a-naive-kernel-against-ours).

# %% jupyter={"source_hidden": true}
# Checks: the claim above, and notebook 09, section 2.2's figures, on the committed H200 run (CI runs them; skip when reading)
# every row of GAE, as a table and a chart: profile.committed("gae") (notebook 09, section 2.2)
RUN, RES, h200 = profile.committed_or_empty("gae")
_fwd16 = {r["impl"]: r for r in h200 if (r["B"], r["T"], r["pass"]) == (16, 128, "fwd")}
if h200:
    _ours16, _bare16 = _fwd16[profile.OURS_IMPL], _fwd16["bare_triton_launch"]
    assert _bare16["gpu_us"] > 4 * _ours16["gpu_us"]  # "the naive kernel's GPU time is over 4× ours"
    assert round(_ours16["wall_us"] / _bare16["wall_us"], 1) == 1.7  # "our wall time reads 1.7× the naive kernel's"
    assert all(r["wall_us"] > 2 * r["gpu_us"] for r in (_ours16, _bare16))  # "both calls are host-bound" (08's 2×)
    _probe = profile.wall_probe_us()
    assert profile.noise_verdict(  # "within the noise", "within 2.3×": notebook 09's rule, our two timings against the anchor's one
        profile.wall_range(RES, _probe, {profile.OURS_IMPL: "{}"}, profile.OURS_IMPL, "gae", (16, 128), "fwd"),
        profile.wall_range(RES, _probe, {}, "bare_triton_launch", "gae", (16, 128), "fwd"), 2.3) == "within the noise"
assert not h200 or RES["gpu"] == "NVIDIA H200"  # "the committed H200 run"
# "it checks its inputs and plans its launch in Python" (notebook 09, section 2.2, says the same):
assert "prepare(" in inspect.getsource(returns._call) and "validate(" in inspect.getsource(episode.prepare)

# %% [markdown]
# ## Exercises
#
# The checked exercise `gae_pairs` is at the end of section 2, and the optional `gae_prologue` in
# the appendix. Solutions are in `notebooks/solutions/`. What `gae_prologue`'s checker runs: the
# [last appendix](#Appendix:-details-of-the-exercises).
#
# Without a checker:
#
# *(Answer each in its cell below.)*
#
# 1. Set $\lambda = 1$. Show that `returns` equals `rl.discounted_returns` when `next_values`
#    is `values[t+1]` inside episodes. Why does the equality fail for arbitrary `next_values`?
#
#    <details><summary>Check yourself</summary>
#
#    The two agree to float64 precision. With arbitrary `next_values` the gap $e = R - G$ obeys
#    $e_t = \gamma(1-\text{done}_t)(V'_t - V_{t+1} + e_{t+1})$: it vanishes only where $V'_t = V_{t+1}$ inside episodes.
#
#    </details>
# 2. Set $\lambda = 0$. What is the advantage then? Check it against $\delta_t$.
#
#    <details><summary>Check yourself</summary>
#
#    The advantage is exactly $\delta_t$, and `returns` is the one-step TD target $r_t + \gamma(1-\text{term}_t)V'_t$.
#
#    </details>
# 3. Take γ = 0.99 and λ = 0.95, and pass `lambda_` as a per-step tensor that is 0 on the first
#    step of every episode (and 0.95 elsewhere). What does that do to the bias of the advantage at
#    that step? Compare the total weight that step's advantage puts on the critic's values at the
#    states after it: in a long episode, and when the window holds only the episode's first $N$ = 2,
#    5 or 20 steps (so the bootstrap is $V(s_{t_0+N})$).
#
#    <details><summary>Check yourself</summary>
#
#    Only each episode's first advantage changes: it becomes $\delta_{t_0}$. An error in $V(s_{t_0})$
#    enters both advantages with weight −1, so the bias changes only through the critic's errors at
#    the states after $s_{t_0}$. $\delta_{t_0}$ puts weight γ = 0.99 on the error at $s_{t_0+1}$ alone.
#    GAE(0.95) spreads a total weight of about 0.83 over the later states in a long episode: more just
#    before a bootstrap (0.98, 0.96 and 0.88 when the bootstrap is $V(s_{t_0+N})$ with N = 2, 5 and
#    20), less before a termination. So where the critic's errors share a sign, the weight on them
#    rises from about 0.83 to 0.99 and the advantage's bias grows. Errors of mixed sign partly cancel
#    in GAE's sum, and then the bias may grow or shrink.
#
#    </details>

# %% jupyter={"source_hidden": true}
# Checks: question 3's weights on the critic's later values (CI runs them; skip when reading)
def _later_weight(N, lam_0=0.95, terminates=False):
    """The first advantage's total weight on V(s_1) .. V(s_N) (the bootstrap V(s_N), unread if step N - 1
    terminates): how much it moves when all of them rise by 1, gamma = 0.99, lambda = 0.95 (lam_0 at step 0)."""
    lam, term = np.full(N, 0.95), np.arange(N) == N - 1 if terminates else np.zeros(N, bool)
    lam[0] = lam_0
    def first_advantage(v, boot):
        return reference.gae(np.zeros(N), v, gamma=0.99, lambda_=lam, terminated=term, bootstrap_value=boot)[0][0]
    return first_advantage(np.r_[0.0, np.ones(N - 1)], 1.0) - first_advantage(np.zeros(N), 0.0)


_endless = (1 - 0.95) * 0.99 / (1 - 0.99 * 0.95)  # a long episode: (1 - lambda) gamma / (1 - gamma lambda)
np.testing.assert_allclose(_later_weight(3000), _endless, rtol=1e-8)
assert round(_endless, 2) == 0.83  # "about 0.83 in a long episode"
assert [round(_later_weight(N), 2) for N in (2, 5, 20)] == [0.98, 0.96, 0.88]  # "0.98, 0.96 and 0.88"
assert all(_later_weight(N) > _endless > _later_weight(N, terminates=True) for N in (1, 2, 5, 20, 100))  # more, less
assert all(round(_later_weight(N, lam_0=0.0), 10) == 0.99 for N in (2, 20, 3000))  # delta_(t0): gamma = 0.99 on s_(t0+1)
for _lam_0 in (0.0, 0.95):  # "an error in V(s_t0) enters both advantages with weight -1"
    _own = reference.gae(np.zeros(20), np.r_[1.0, np.zeros(19)], gamma=0.99, lambda_=np.r_[_lam_0, np.full(19, 0.95)],
                         bootstrap_value=0.0)[0][0]
    assert _own == -1.0, _own

# %% [markdown] tags=["answer-1"]
# **Answer 1.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-2"]
# **Answer 2.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-3"]
# **Answer 3.** *Your answer here (code for it: in cells under this one).*

# %% [markdown]
# ## What you now know
#
# * GAE is one reverse scan: $a_t = \gamma\lambda$, $b_t = \delta_t$, and at a reset $b_t$
#   is $\delta_t$ unchanged. The returns are $\hat A_t + V_t$, from the same pass.
# * In the package, GAE's prologue and epilogue are hooks around one shared scan kernel, so every
#   estimator is a short prologue and epilogue.
# * Every estimator's $a_t$, $b_t$ and reset, side by side: 04's [One table for every estimator](04_vtrace.ipynb#One-table-for-every-estimator).

# %% [markdown]
# ## Appendix: the package's hook form
#
# Optional: for the exercise `gae_prologue`. No later exercise uses this form.
#
# ### The package's prologue
#
# ```
# the harness (exercises.scan_hook):  (X, P, offs, t, m, T)          -> (a, b, reset)
# the package (scan.py):              (X, SX, P, row, t, m, T, ACC)  -> (a, b, reset, valid, keep)
# ```
#
# The package's prologue reads any memory layout, so it takes more arguments than
# [notebook 01b's harness](01b_prologues_and_backward.ipynb#1.-The-harness-for-Triton-prologues). For the
# exercise, two things are new:
#
# * The template loads the inputs for you, with three helpers. `SX` (the strides), `row` and `ACC`
#   (the dtype to compute in) only pass through to them.
# * Two outputs follow the triple: `valid`, false on padding, and `keep`, a tuple handed on to the
#   epilogue.
#
# The helper to read is `step`. Below are its signature and its `return` line; the lines between
# are cut. The `return` line gives the step's γ and λ, then three flags: `term`, `done` (any
# episode end, the window's last step included) and `valid`.
# [13c, section 3.1](13c_inside_the_package.ipynb#3.1-Reading-the-hooks'-source) explains the lines cut.
# `step` and `_returns_prologue` end with `ahead=None`, for masked calls only: leave it out of your prologue.

# %%
step_src = inspect.getsource(getattr(episode.step, "fn", episode.step)).splitlines()
head = step_src[:next(i for i, line in enumerate(step_src) if line.startswith("def step(")) + 1]
assert step_src[-1].strip() == "return gamma, lam, term, done, valid"  # the return line the text reads
_rp = getattr(returns._returns_prologue, "fn", returns._returns_prologue)
assert head[-1].endswith("ahead=None):") and "ahead=None" in str(inspect.signature(_rp))  # "end with `ahead=None`"
cut = len(step_src) - len(head) - 1
print(*head, f"    ...  # {cut} lines cut: the docstring, and the lines that load or compute these five", step_src[-1],
      sep="\n")

# %% [markdown]
# Notebook 01's discounted return in this form, the model for the exercise. Read two lines:
#
# * the `b` line, which adds the bootstrap only where `done & ~term`;
# * the `return` line: `gamma * lam` as $a$, then $b$, the reset flag `done`, `valid` and an empty
#   `keep`.
#
# <details><summary>Details: why it has a λ, and where the hooks live (optional)</summary>
#
# The returns' prologue has GAE's shape, so `step` hands it a λ too: $\lambda = 1$, and
# `gamma * lam` is then exactly γ (multiplying by 1.0 changes no bit). Its $b_t$ is the reward
# plus its bootstrap, not GAE's δ.
#
# The prologue and epilogue live in `rltriton_lite/returns.py`, and the shared scan kernel
# (`scan._scan_kernel`, notebook 00c, section 3) calls them for each chunk of steps. `load` comes
# from `rltriton_lite.tile`, and `step` and `values_now_and_next` from `rltriton_lite.episode`.
#
# </details>

# %%
print(inspect.getsource(getattr(returns._returns_prologue, "fn", returns._returns_prologue)))

# %% [markdown]
# ### Exercise `gae_prologue`
#
# **`gae_prologue`** (optional, a Triton hook).
#
# **You write:** `gae_prologue(X, SX, P, row, t, m, T, ACC)`, your `gae_pairs` again in the
# package's form. `rl.gae` runs it in place of its own.
#
# **It returns:** the 5-tuple `(a, b, reset, valid, keep)`: `gae_pairs`'s pair, the reset flag
# (`step`'s `done`, not $a_t = 0$), `step`'s `valid`, and `keep = (v,)`: $V_t$, which the epilogue
# adds to $y_t$ without reading `values` again.
#
# **Inputs:** the template's helper calls: `step` gives `gamma, lam, term, done, valid`, `load`
# gives `r`, and `values_now_and_next` gives `v` $= V_t$ and `v_next` $= V(s_{t+1})$, already shifted.
#
# * **Edge cases:** as for `gae_pairs`. The helpers handle the layouts and the padding.
#
# <details><summary>Hint 1: where to start</summary>
#
# `_returns_prologue` above has the same shape: read its `b` and `return` lines. The template makes
# the three helper calls; what is left is $\delta_t$ and the five values to return.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * The triples are `gae_pairs`'s pairs, with the reset flag of
#   [01's episode-end table](01_discounted_return.ipynb#The-episode-end-table).
# * $b_t = \delta_t = r_t + \gamma_t V'_t - V_t$, with no bootstrap where `term`.
# * $a_t$ is `gamma * lam`, both from `step`, and the reset flag is `step`'s `done`, as it stands: $a_t$
#   needs no zero of its own.
# * `valid` is `step`'s, passed on unchanged.
# * `keep` holds $V_t$: the epilogue adds it to $y_t$ for the returns.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# `gae_pairs`'s rollout again, now through `rl.gae`: four steps, $\gamma = \lambda = 0.5$, rewards
# 1, values 2. Step 1 terminates (NaN behind it), step 2 is truncated with a next value of 8, and
# the window ends on 10. The advantages are $(-0.25, -1, 3, 4)$, as there. The returns
# $\hat A_t + V_t$ are $(1.75, 1, 5, 6)$: the epilogue adds the $V_t$ of your `keep`.
#
# ```python
# nv4 = torch.tensor([[2.0, float("nan"), 8.0, 10.0]], device=DEVICE)
# term4, trunc4 = (torch.tensor([f], device=DEVICE) for f in ([False, True, False, False], [False, False, True, False]))
# with exercises.package_prologue("gae", gae_prologue):
#     out4 = rl.gae(torch.ones(1, 4, device=DEVICE), torch.full((1, 4), 2.0, device=DEVICE), gamma=0.5, lambda_=0.5,
#                   terminated=term4, truncated=trunc4, next_values=nv4, backend=KERNEL)
# print(out4.advantages.tolist(), out4.returns.tolist())  # must print [[-0.25, -1.0, 3.0, 4.0]] [[1.75, 1.0, 5.0, 6.0]]
# ```
#
# Run the checker before you open Hint 4.
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# gamma, lam, term, done, valid = step(X, SX, P, row, t, m, T, ACC)  # the template's, as given
# delta = r + tl.where(___, ___, ___) - v  # ___: where is there no bootstrap, and what is it there?
# return ___, delta, ___, valid, (v,)  # ___: the multiplier a_t, and the flag that resets
# ```
#
# </details>

# %%
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from rltriton_lite.episode import REWARDS, step, values_now_and_next  # noqa: E402
from rltriton_lite.tile import load  # noqa: E402

# your @triton.jit function gae_prologue(X, SX, P, row, t, m, T, ACC: tl.constexpr) replaces this.
# A template: the three helper calls are the package's; the lines with ... are yours.
#
# @triton.jit
# def gae_prologue(X, SX, P, row, t, m, T, ACC: tl.constexpr):
#     gamma, lam, term, done, valid = step(X, SX, P, row, t, m, T, ACC)  # the step's coefficients and flags
#     r = load(X[REWARDS], SX[REWARDS], row, t, valid, 0.0, ACC)         # the rewards, as ACC
#     v, v_next = values_now_and_next(X, SX, row, t, m, T, ACC)           # V(s_t) and V(s_{t+1})
#     delta = ...                                                          # section 2's delta_t
#     return ...                                                           # (a, b, reset, valid, keep)
gae_prologue = None

# %%
exercises.attempt("gae_prologue", gae_prologue)

# %% [markdown]
# ### The epilogue
#
# [Chunks](GLOSSARY.md#chunk), [carries](GLOSSARY.md#carry) and threads are the shared kernel's
# job, which is why every estimator is about 20 lines. GAE's epilogue, below, stores two outputs:
# the advantages $y_t$, and the returns $y_t + V_t$, with $V_t$ taken from `keep`.
#
# <details><summary>Details: the epilogue's arguments (optional)</summary>
#
# An epilogue takes the prologue's arguments plus six more. `O` and `SO` are the output tensors and
# their strides. `valid` is the prologue's. `y` is the scanned value at $t$. `y_in` is the value
# that entered step $t$: $y_t = b_t + a_t\,y_{in}$, so in a reverse scan `y_in` is $y_{t+1}$.
# `keep` is what the prologue handed on.
#
# </details>

# %%
print(inspect.getsource(getattr(returns._gae_epilogue, "fn", returns._gae_epilogue)))

# %% [markdown]
# ## Appendix: details of the exercises
#
# **`gae_prologue`: what the checker runs.** It runs `rl.gae` with your prologue in place of the
# package's (`exercises.package_prologue`), on rollouts with terminations, truncations, padding,
# time-major inputs and a per-step γ. It calls your prologue with the eight arguments of
# `(X, SX, P, row, t, m, T, ACC)`.
