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
# # 03 — TD(λ) returns
#
# > **In short**
# >
# > * The λ-return mixes short and long returns: λ = 0 is the one-step TD target, λ = 1 the full return.
# > * It is one reverse scan, like the return and GAE, with its own per-step pairs.
# > * Section 5 measures how λ trades the critic's bias for the rewards' noise.
# > * You write Watkins's Q(λ), which stops following the rollout where an action was not greedy,
# >   and Retrace, which weighs that rollout by π/μ instead.
#
# * **Time:** 3–4 h with the open questions; 1.5–2 h for the reading, `q_lambda` and `retrace`.
# * **Needs:** notebooks 01, 01b (the harness) and 02; the bias and variance of an estimator;
#   importance sampling (for `retrace`). No GPU.
# * **Conventions:** the glossary's [card for every exercise](GLOSSARY.md#conventions-for-every-exercise).
# * **Minimum path:** sections 1–4, the worked prologue, `q_lambda` and `retrace`. Section 5 (bias and
#   variance), 6 and the open questions can wait.
#
# The λ-return mixes all $n$-step returns with weights $(1-\lambda)\lambda^{n-1}$. Dreamer and
# many actor-critics use it as the critic's target.
#
# <details><summary>Details: sources, and where else the λ-return appears (optional)</summary>
#
# * Sources: Sutton, *Learning to predict by the methods of temporal differences*, Machine
#   Learning 1988; Sutton & Barto 2nd ed., §12.1.
# * Watkins's Q(λ) cuts its trace, and Retrace reweights it (this notebook's exercises). CRR uses
#   λ = 0.
#
# </details>
#
# Its backward form, as in rlax's `lambda_returns`, with $V'_t = V(s_{t+1})$:
#
# $$G_t = r_t + \gamma_t (1-\text{term}_t)\Big[(1-\lambda_t) V'_t + \lambda_t
#   \begin{cases} G_{t+1} & \text{not done}_t \\ V'_t & \text{done}_t \end{cases}\Big]$$
#
# * $\lambda = 0$ is the one-step TD target $r_t + \gamma V'_t$.
# * $\lambda = 1$ is the discounted return of 01, bootstrapped at truncations and at the end of the
#   window.

# %%
import inspect
import os

import numpy as np
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # Triton kernels on the CPU

import matplotlib.pyplot as plt

import triton
import triton.language as tl

import rltriton_lite as rl
from rltriton_lite import exercises, profile, reference, returns

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# the Triton kernels: compiled on a GPU, in the interpreter on a CPU (backend="auto" takes the PyTorch path on a CPU)
KERNEL = "triton"
rng = np.random.default_rng(3)
to_numpy = lambda x: x.cpu().numpy()  # noqa: E731

# %% [markdown]
# ## 1. The loop
#
# The float64 ground truth loops over time. Its `carry` holds $G_{t+1}$.

# %%
print(inspect.getsource(reference.td_lambda))

# %% [markdown]
# By hand: three steps, $\gamma = 1$, $\lambda = 0.5$, next values 10, 20, 30, rewards 0.
# The window ends at step 2, so $G_2 = 30$. Then $G_1 = 0.5·20 + 0.5·30 = 25$ and
# $G_0 = 0.5·10 + 0.5·25 = 17.5$.

# %%
G = reference.td_lambda([0.0, 0.0, 0.0], [10.0, 20.0, 30.0], gamma=1.0, lambda_=0.5)
np.testing.assert_allclose(G, [17.5, 25.0, 30.0])
print(G)

# %% [markdown]
# ## 2. Prologue, scan, epilogue
#
# The loop mixes $V'_t$ and $G_{t+1}$, but only $G_{t+1}$ is carried from step to step. So the
# [prologue](GLOSSARY.md#prologue) takes what multiplies $G_{t+1}$ as $a_t$, and the rest, the
# bootstrap from $V'_t$ included, as $b_t$:
#
# * $a_t = \gamma_t\lambda_t$, with the [reset flag](GLOSSARY.md#reset) set where done$_t$;
# * $b_t = r_t + [\lnot\text{term}_t]\,\gamma_t w_t V'_t$. The bootstrap's weight $w_t$ is
#   $1-\lambda_t$ inside an episode. Where done$_t$ it is 1, as there is no $G_{t+1}$ to mix in.
#
# So [$b_t$ at a reset](GLOSSARY.md#cut-step) puts the critic's $V'_t$ where $G_{t+1}$ would be:
#
# $$r_t + \gamma_t(1-\lambda_t)V'_t + \gamma_t\lambda_t V'_t = r_t + \gamma_t V'_t,$$
#
# the bootstrap. The window's last step needs it too: the ordinary $b_2$ would give
# $G_2 = 0.5 \cdot 30 = 15$ in section 1's example, not 30.
# [Notebook 04's table](04_vtrace.ipynb#One-table-for-every-estimator) gives $b_t$ at a reset
# for every estimator of 01–04. The [epilogue](GLOSSARY.md#epilogue) stores $y_t = G_t$.
#
# In NumPy, against the loop:

# %%
def td_lambda_as_scan(r, nv, gamma, lam, terminated, truncated):
    done = terminated | truncated
    done[..., -1] = True
    w = np.where(done, 1.0, 1.0 - lam)
    b = r + np.where(terminated, 0.0, gamma * w * nv)
    a = np.where(done, 0.0, gamma * lam)  # a = 0 is the reset flag
    y, carry = np.zeros_like(r), np.zeros(r.shape[:-1])
    for t in reversed(range(r.shape[-1])):
        carry = np.where(a[..., t] == 0, b[..., t], b[..., t] + a[..., t] * carry)  # a select, not a product
        y[..., t] = carry
    return y


R, NV = rng.normal(size=(3, 40)), rng.normal(size=(3, 40))
TERM = rng.random((3, 40)) < 0.1
TRUNC = (rng.random((3, 40)) < 0.1) & ~TERM
np.testing.assert_allclose(td_lambda_as_scan(R, NV, 0.95, 0.8, TERM, TRUNC),
                           reference.td_lambda(R, NV, gamma=0.95, lambda_=0.8, terminated=TERM, truncated=TRUNC),
                           rtol=1e-12)
print("prologue + scan + epilogue == the loop")

# %% jupyter={"source_hidden": true}
# Checks: the window's last step, on section 1's example (CI runs them; skip when reading)
r3 = torch.zeros(1, 3, device=DEVICE)
b_end = r3 + torch.tensor([[0.5 * 10.0, 0.5 * 20.0, 30.0]], device=DEVICE)  # w = (0.5, 0.5, 1): b_2 at a reset
b_ordinary = r3 + torch.tensor([[0.5 * 10.0, 0.5 * 20.0, 0.5 * 30.0]], device=DEVICE)  # b_2 in the ordinary form
a_cut = torch.tensor([[0.5, 0.5, 0.0]], device=DEVICE)  # gamma lambda, and a_2 = 0: a reset in tensor code
target = torch.tensor([[17.5, 25.0, 30.0]], device=DEVICE)  # section 1's G
torch.testing.assert_close(rl.linear_scan(a_cut, b_end, backend=KERNEL), target)
assert rl.linear_scan(a_cut, b_ordinary, backend=KERNEL)[0, 2] == 15.0  # "the ordinary b_2 would give G_2 = 15"

# %% [markdown]
# ## 3. The kernel's prologue
#
# The kernel is the shared scan with TD(λ)'s own prologue [hook](GLOSSARY.md#hook).

# %%
print(inspect.getsource(getattr(returns._td_lambda_prologue, "fn", returns._td_lambda_prologue)))

# %% [markdown]
# `w` is section 2's $w_t$, chosen by a [select](GLOSSARY.md#select) (`tl.where`): 1 at a reset.
# `b` is section 2's $b_t$. Unlike GAE's prologue
# ([02's appendix](02_gae.ipynb#Appendix:-the-package's-hook-form)), it needs no $V_t$: it drops
# the first value that `values_now_and_next` returns (`_`), its `b` has no $-V_t$, and its `keep`
# is empty.

# %% jupyter={"source_hidden": true}
# Checks: what differs from GAE's prologue, as the text above says (CI runs them; skip when reading)
_src = {name: inspect.getsource(getattr(fn, "fn", fn)) for name, fn in
        (("td", returns._td_lambda_prologue), ("gae", returns._gae_prologue))}
assert "_, v_next = values_now_and_next(" in _src["td"] and "v, v_next = values_now_and_next(" in _src["gae"]
assert "w = tl.where(done, 1.0, 1.0 - lam)" in _src["td"] and "w = " not in _src["gae"]
assert "b = r + tl.where(term, 0.0, gamma * w * v_next)\n" in _src["td"]  # no -V_t
assert _src["td"].rstrip().endswith("return gamma * lam, b, done, valid, ()")  # keep is empty
assert _src["gae"].rstrip().endswith("return gamma * lam, delta, done, valid, (v,)")

# %% [markdown]
# ## 4. Kernel against the loop
#
# The kernel must match the loop on terminations, truncations, a mask, per-step γ and λ, and a
# time-major buffer. λ = 0 must give the one-step TD target, and λ = 1 notebook 01's return:

# %%
B, T = 4, 45
r, nv = torch.randn(B, T, device=DEVICE), torch.randn(B, T, device=DEVICE)
term = torch.rand(B, T, device=DEVICE) < 0.1
trunc = (torch.rand(B, T, device=DEVICE) < 0.1) & ~term
mask = torch.rand(B, T, device=DEVICE) > 0.1
lam = torch.rand(B, T, device=DEVICE)  # a per-step lambda
gamma = torch.rand(B, T, device=DEVICE) * 0.2 + 0.8
G = rl.td_lambda(r, nv, gamma=gamma, lambda_=lam, terminated=term, truncated=trunc, mask=mask, backend=KERNEL)
expected = reference.td_lambda(to_numpy(r), to_numpy(nv), gamma=to_numpy(gamma), lambda_=to_numpy(lam),
                               terminated=to_numpy(term), truncated=to_numpy(trunc), mask=to_numpy(mask))
np.testing.assert_allclose(to_numpy(G), expected, rtol=1e-5, atol=1e-5)
G_tm = rl.td_lambda(r.t().contiguous(), nv.t().contiguous(), gamma=gamma.t().contiguous(), lambda_=lam.t().contiguous(),
                    terminated=term.t().contiguous(), truncated=trunc.t().contiguous(), mask=mask.t().contiguous(),
                    time_dim=0, backend=KERNEL)
np.testing.assert_allclose(to_numpy(G_tm).T, expected, rtol=1e-5, atol=1e-5)

# the two ends of the family
one_step = rl.td_lambda(r, nv, gamma=0.9, lambda_=0.0, terminated=term, backend=KERNEL)
torch.testing.assert_close(one_step, r + 0.9 * torch.where(term, 0.0, nv))
full = rl.td_lambda(r, nv, gamma=0.9, lambda_=1.0, terminated=term, truncated=trunc, backend=KERNEL)
torch.testing.assert_close(full, rl.discounted_returns(r, gamma=0.9, terminated=term, truncated=trunc, next_values=nv,
                                                      backend=KERNEL))
print("kernel == loop; λ=0 is one-step TD, λ=1 the discounted return")

# %%
assert profile.rollout_error("td_lambda", 3, 1000, DEVICE) < 1e-5  # 3 × 1,000 steps: four chunks of 256 per row, the carry between them (notebook 01)

# %% [markdown]
# ## 5. How λ trades bias for variance
#
# Which λ should one use? $G_t$ estimates the true value $v(s_t)$, with
# $\mathrm{MSE} = \mathrm{bias}^2 + \mathrm{variance}$. We measure both where $v$ is known:
#
# * a chain that never ends, with rewards $r_t \sim \mathcal N(m_r, \sigma_r^2)$. Every state's
#   true value is $v = m_r/(1-\gamma)$.
# * a critic that overestimates by $\eta$ and is noisy, $V'_t = v + \eta + \sigma_c\,\xi_t$, with
#   $\xi_t$ standard normal and independent of everything else.
# * windows of $T$ steps, bootstrapped at the end.
#
# **Where λ puts the weight.** $G_0 = \sum_t \alpha_t r_t + \sum_t \beta_t V'_t$, with
# $\alpha_t = (\gamma\lambda)^t$ and $\beta_t = \gamma(1-\lambda)(\gamma\lambda)^t$ for $t < T-1$;
# the window's last step bootstraps fully, $\beta_{T-1} = \gamma(\gamma\lambda)^{T-1}$. The critic's
# weights for four λ, with $\gamma = 0.8$ and $T = 20$ (log scale):

# %%
gamma_, T_mc, m_r, sigma_r, eta, sigma_c, N_mc = 0.8, 20, 1.0, 2.0, 3.0, 0.25, 20_000
v_true = m_r / (1 - gamma_)


def weights(lam_grid, k=np.arange(T_mc)):
    """The weights α_t of the rewards and β_t of the next values in G_0, one row per λ."""
    alpha = (gamma_ * lam_grid[:, None]) ** k
    beta = gamma_ * (1 - lam_grid[:, None]) * alpha
    beta[:, -1] = gamma_ * alpha[:, -1]  # the window's last step bootstraps fully
    return alpha, beta


lam_show = np.array([0.0, 0.5, 0.9, 1.0])
_, beta_show = weights(lam_show)
fig, ax = plt.subplots(figsize=(7, 3))
for lam_, beta_row in zip(lam_show, beta_show):
    ax.plot(np.where(beta_row > 0, beta_row, np.nan), "o-", ms=4, label=f"λ = {lam_:g}")
ax.set_yscale("log")
ax.set_xlabel("t")
ax.set_ylabel(r"$\beta_t$, the weight on $V'_t$")
ax.legend(fontsize=8)
plt.show()
assert np.count_nonzero(beta_show[0]) == np.count_nonzero(beta_show[-1]) == 1  # the ends: one value each
assert beta_show[0, 0] == gamma_ and np.isclose(beta_show[-1, -1], gamma_**T_mc)  # β_0 = γ; β_{T-1} = γ^T

# %% [markdown]
# λ moves the error between two sources:
#
# * **The critic**, through the $\beta_t$. Its bias enters $G_0$ as $\eta\sum_t\beta_t$, from
#   $\gamma\eta$ at λ = 0 down to $\gamma^T\eta$ at λ = 1. Its noise adds
#   $\sigma_c^2\sum_t\beta_t^2$ to the variance. Until λ nears 1, a larger λ shrinks
#   $\sum_t\beta_t^2$ in two ways: the total weight $\sum_t\beta_t$ falls, and the weight is spread
#   over more states ($k$ equal weights that sum to $s$ have squares that sum to $s^2/k$). The
#   critic's errors are independent, so nothing cancels: the spread alone shrinks the sum.
#   At λ = 1 the whole weight $\gamma^T$ sits on one value.
# * **The rewards**, through the $\alpha_t$. Their noise adds $\sigma_r^2\sum_t\alpha_t^2$, which
#   grows with λ: at λ = 1, $G_0$ sums every reward's noise.
#
# We draw 20,000 rollouts, each with its own critic errors, and compute $G_0$ for 21 values of λ.

# %%
lams = np.linspace(0.0, 1.0, 21)
mc = np.random.default_rng(0)  # its own generator: the result does not depend on the cells above
r_mc = m_r + sigma_r * mc.standard_normal((N_mc, T_mc))           # one rollout per row
nv_mc = v_true + eta + sigma_c * mc.standard_normal((N_mc, T_mc))  # a biased, noisy critic
G0 = np.stack([reference.td_lambda(r_mc, nv_mc, gamma=gamma_, lambda_=lam_)[:, 0] for lam_ in lams])  # (λ, rows)
bias2, var, mse = (G0.mean(1) - v_true) ** 2, G0.var(1), ((G0 - v_true) ** 2).mean(1)
best = int(mse.argmin())

fig, ax = plt.subplots(figsize=(7, 3.5))
ax.plot(lams, bias2, "o-", ms=3, label="bias²")
ax.plot(lams, var, "o-", ms=3, label="variance")
ax.plot(lams, mse, "ko-", ms=3, lw=2, label="MSE = bias² + variance")
ax.axvline(lams[best], color="gray", ls="--", lw=1)
ax.set_xlabel("λ")
ax.set_title(f"$G_0$ against the true value, {N_mc:,} rollouts")
ax.legend(fontsize=8)
plt.show()
print(f"MSE: λ=0 {mse[0]:.2f}, best on the grid λ={lams[best]:.2f} {mse[best]:.2f}, λ=1 {mse[-1]:.2f}")

# %% [markdown]
# As λ grows, the bias falls at every point of the grid, and the variance more than doubles. Their
# sum is lowest inside the range, not at either end.
#
# **Exact values.** The bias is $\eta\sum_t\beta_t$, and the variance is
# $\sigma_r^2\sum_t\alpha_t^2 + \sigma_c^2\sum_t\beta_t^2$.
#
# <details><summary>Details: the two ends of λ, and two side remarks (optional; handy for question 3)</summary>
#
# | | bias | variance |
# |---|---|---|
# | λ = 0 | $\gamma \eta$ | $\sigma_r^2 + \gamma^2\sigma_c^2$ |
# | λ = 1 | $\gamma^T \eta$ | $\sigma_r^2(1-\gamma^{2T})/(1-\gamma^2) + \gamma^{2T}\sigma_c^2$ |
#
# * With $\eta = 0$ and no noise, the λ-return of the true values is $v$ exactly.
# * Correlated critic errors would add cross terms to the variance.
#
# </details>
#
# The exact MSE on a fine grid of λ, against the rollouts:

# %%
def exact_terms(lam_grid):
    """bias², the rewards' variance term and the critic's, from the weights α_t and β_t."""
    alpha, beta = weights(lam_grid)
    return (eta * beta.sum(1)) ** 2, sigma_r**2 * (alpha**2).sum(1), sigma_c**2 * (beta**2).sum(1)


b2_grid, vr_grid, vc_grid = exact_terms(lams)
np.testing.assert_allclose(mse, b2_grid + vr_grid + vc_grid, rtol=0.05)  # the rollouts agree with the formulas
fine = np.linspace(0.0, 1.0, 1001)
b2_f, vr_f, vc_f = exact_terms(fine)
mse_f = b2_f + vr_f + vc_f

fig, ax = plt.subplots(figsize=(7, 3.5))
ax.plot(lams, mse, "ko", ms=3, label="MSE, 20,000 rollouts")
ax.plot(fine, mse_f, "k-", lw=1, label="MSE, exact")
ax.axvline(fine[mse_f.argmin()], color="gray", ls="--", lw=1)
ax.set_xlabel("λ")
ax.legend(fontsize=8)
plt.show()
print(f"the exact curve's minimum: λ = {fine[mse_f.argmin()]:.2f}, MSE {mse_f.min():.2f}, "
      f"bias {b2_f[mse_f.argmin()] ** 0.5:.2f} (λ=0: {b2_f[0] ** 0.5:.2f})")

# %% [markdown]
# The best λ is about 0.73, the exact curve's minimum. There the critic's bias in $G_0$ is 1.55,
# down from $\gamma\eta = 2.4$ at λ = 0. The optimum moves with the critic's error relative to the
# rewards' noise (open question 3).
#
# **Bias is not needed for a trade-off.** Take an unbiased but noisy critic, $\eta = 0$ and
# $\sigma_c = 3$. The MSE is then the variance alone:

# %%
noise_r = vr_f  # the rewards' term, as before (σ_r = 2)
noise_c = 3.0**2 * (vc_f / sigma_c**2)  # the critic's term, now with σ_c = 3
mse_unbiased = noise_r + noise_c  # bias 0: MSE = variance
best_unbiased = fine[mse_unbiased.argmin()]

fig, ax = plt.subplots(figsize=(7, 3.5))
ax.plot(fine, noise_r, label=r"the rewards' term $\sigma_r^2\sum_t\alpha_t^2$")
ax.plot(fine, noise_c, label=r"the critic's term $\sigma_c^2\sum_t\beta_t^2$, $\sigma_c = 3$")
ax.plot(fine, mse_unbiased, "k-", lw=2, label="MSE = variance")
ax.axvline(best_unbiased, color="gray", ls="--", lw=1)
ax.set_xlabel("λ")
ax.legend(fontsize=8)
plt.show()
print(f"unbiased critic, σ_c = 3: best λ = {best_unbiased:.2f}, MSE {mse_unbiased.min():.2f} "
      f"(λ=0 {mse_unbiased[0]:.2f}, λ=1 {mse_unbiased[-1]:.2f})")

# %% [markdown]
# Its best λ is near 0.58, where the critic's term falls as fast as the rewards' term rises. The
# critic's term falls up to λ ≈ 0.999; the rewards' term rises all the way.

# %% jupyter={"source_hidden": true}
# Checks: the claims above (CI runs them; skip when reading)
np.testing.assert_allclose(mse, bias2 + var)  # MSE = bias² + variance, exact for the sample moments too
np.testing.assert_allclose(var, vr_grid + vc_grid, rtol=0.05)  # the rollouts' variance agrees with the formula
np.testing.assert_allclose(b2_grid[[0, -1]], [(gamma_ * eta) ** 2, (gamma_**T_mc * eta) ** 2])  # the ends' table
assert var[-1] > 2 * var[0] and np.all(np.diff(bias2) < 0)  # "the bias falls ..., the variance more than doubles"
assert 0 < best < len(lams) - 1 and mse[best] < 0.95 * min(mse[0], mse[-1])  # "lowest inside the range"
assert abs(fine[mse_f.argmin()] - 0.73) < 0.01  # "about 0.73"
assert round(b2_f[mse_f.argmin()] ** 0.5, 2) == 1.55 and round(b2_f[0] ** 0.5, 9) == round(gamma_ * eta, 9) == 2.4
assert np.all(np.diff(b2_f) < 0)  # the exact bias shrinks as λ grows, on the fine grid too: Σβ falls
assert abs(best_unbiased - 0.58) < 0.01  # "near 0.58"
assert mse_unbiased.min() < 0.7 * min(mse_unbiased[0], mse_unbiased[-1])  # a real trade-off: both ends worse
assert abs(fine[noise_c.argmin()] - 0.999) < 1e-9 and noise_c[-1] > noise_c.min()  # "falls up to λ ≈ 0.999"
assert np.all(np.diff(noise_c[:1000]) < 0)  # ... at every point of the fine grid up to there
assert np.all(np.diff(noise_r) > 0)  # "the rewards' term rises"

# %% [markdown]
# ## 6. How fast is it (H200, measured)
#
# TD(λ) at 16×128 is [host-bound](GLOSSARY.md#host-bound), 1.8 µs on the GPU but 23 µs of wall time (the wall probe's median): [notebook 09, section 2.1](09_benchmarks.ipynb#2.1-Discounted-return:-host-bound).

# %% jupyter={"source_hidden": true}
# Checks: the claim above, on the committed H200 run (CI runs them; skip when reading)
# every row of TD(λ), as a table and a chart: profile.committed("td_lambda") (notebook 09, section 2.1)
RUN, RES, h200 = profile.committed_or_empty("td_lambda")
_fw16 = [r for r in h200 if (r["impl"], r["B"], r["T"], r["pass"]) == (profile.OURS_IMPL, 16, 128, "fwd")]
assert not h200 or [round(r["gpu_us"], 1) for r in _fw16] == [1.8]  # "1.8 µs on the GPU"
_wall16 = profile.wall_probe_us()[16, 128]["fwd", "td_lambda"]  # the wall probe's median, the clock notebook 09 quotes
assert not h200 or round(_wall16) == 23  # "23 µs of wall time"
assert not h200 or _wall16 > 2 * _fw16[0]["gpu_us"]  # "host-bound" (notebook 08, section 3's 2×)
assert not h200 or RES["gpu"] == "NVIDIA H200"  # "the committed H200 run"

# %% [markdown]
# ## Exercises
#
# Checked exercises work as in [notebook 00](00_associative_scan.ipynb#Exercises), under the
# [conventions card](GLOSSARY.md#conventions-for-every-exercise). New here: no truncation input, and
# entry $t$ of every `next_*` input belongs to step $t+1$, loaded at `offs`, unshifted.
#
# A worked prologue first: TD(λ) with terminations, for
# [notebook 01b's harness](01b_prologues_and_backward.ipynb#1.-The-harness-for-Triton-prologues)
# (`exercises.scan_hook`). It returns the triple $(a_t, b_t, \text{reset}_t)$, and it sets
# $\lambda_t = 0$ at the window's last step, so that $b_t$ there holds the whole bootstrap:

# %%
@triton.jit
def td_lambda_prologue(X, P, offs, t, m, T):
    gamma, lam = P[0], P[1]
    r = tl.load(X[0] + offs, mask=m, other=0.0)  # rewards
    v_next = tl.load(X[1] + offs, mask=m, other=0.0)  # V(s_{t+1})
    term = tl.load(X[2] + offs, mask=m, other=0) != 0  # a bool flag
    lam_t = tl.where(t < T - 1, lam, 0.0)  # the window's last step bootstraps fully: b at a reset
    b = r + tl.where(term, 0.0, gamma * (1.0 - lam_t) * v_next)  # select: v_next may be NaN there
    return gamma * lam, b, term | (t == T - 1)  # the reset flag: a termination, the window's last step


g_h = torch.Generator().manual_seed(5)
r_h, v_h = (torch.randn(2, 150, generator=g_h).to(DEVICE) for _ in range(2))
term_h = (torch.rand(2, 150, generator=g_h) < 0.05).to(DEVICE)
G_hook = exercises.scan_hook(td_lambda_prologue, (r_h, v_h, term_h), (0.9, 0.8))  # 150 steps: 3 chunks
torch.testing.assert_close(G_hook, rl.td_lambda(r_h, v_h, gamma=0.9, lambda_=0.8, terminated=term_h, backend=KERNEL),
                           rtol=1e-5, atol=1e-5)
print("a 9-line Triton prologue == rl.td_lambda")

# %% [markdown]
# **`q_lambda`** (a Triton prologue). Watkins's Q(λ) learns the greedy policy's $Q$ from exploring
# data. Its λ-return follows the rollout only while the rollout acts greedily:
#
# $$G_t = r_t + \gamma(1-\text{term}_t)\Big[(1-\lambda^{\text{eff}}_t)\max_u Q(s_{t+1}, u) + \lambda^{\text{eff}}_t G_{t+1}\Big],
# \qquad \lambda^{\text{eff}}_t = \begin{cases} \lambda & u_{t+1} \text{ greedy} \\ 0 & \text{otherwise, or } t = T-1 \end{cases}$$
#
# Here $u$ is an action ($a_t$ stays the scan's multiplier), and $u_{t+1}$ the action taken at
# $s_{t+1}$. Where it is exploratory, the rest of the rollout is not the greedy policy's, so the
# trace is cut and $G_t$ bootstraps from $\max_u Q(s_{t+1}, u)$ alone. What is new against the
# worked prologue: the max, and whether $u_{t+1}$ is greedy. (Sources: the
# [appendix](#Appendix:-details-of-the-exercises).)
#
# **You write:** `q_lambda(X, P, offs, t, m, T)`, a Triton prologue for
# [the harness](01b_prologues_and_backward.ipynb#1.-The-harness-for-Triton-prologues).
#
# **It returns:** each step's triple $(a_t, b_t, \text{reset}_t)$, whose reverse scan is the $G_t$
# above.
#
# **Inputs:** `X = (rewards, next_q, next_action, terminated)`. `next_q[t]` $= Q(s_{t+1}, \cdot)$,
# (B, T, n_actions) float32, contiguous; `next_action[t]` $= u_{t+1}$, (B, T) int64; the bool flag.
# `P = (γ, λ, n_actions)`, `n_actions` an int. The rest is on the
# [conventions card](GLOSSARY.md#conventions-for-every-exercise).
#
# * **Reset** wherever $\lambda^{\text{eff}}_t = 0$, and at a termination. A multiplier $a_t = 0$ there
#   passes the checker too.
# * **Greedy** means $Q(s_{t+1}, u_{t+1}) = M_t = \max_u Q(s_{t+1}, u)$, so **a tie for the max counts as
#   greedy**: an argmax that picks the first tied action is wrong.
#
# <details><summary>Hint 1: where to start</summary>
#
# Start from `td_lambda_prologue` above: the factor of $G_{t+1}$ is $a_t$, the rest is $b_t$. Put
# $M_t$ where it has $V(s_{t+1})$, and $\lambda^{\text{eff}}_t$ where it has `lam_t`. One loop over the
# actions gives the max and whether $u_{t+1}$ is greedy.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * The kinds of step are those of [01's episode-end table](01_discounted_return.ipynb#The-episode-end-table), plus one: $u_{t+1}$ not greedy,
#   which cuts the trace too.
# * One loop over the actions, one load each, keeps two running values: the max $M_t$, and the Q
#   of the action taken next. After it, $u_{t+1}$ is greedy where the two are equal, so a tie
#   counts as greedy.
# * $\lambda^{\text{eff}}_t$ is λ where greedy and not at the window's last step, else 0. Every step
#   but a termination then has one formula, $b_t = r_t + \gamma(1-\lambda^{\text{eff}}_t)M_t$.
# * The step resets wherever $\lambda^{\text{eff}}_t = 0$, and at a termination. $a_t = \gamma\lambda$ at
#   every step: a reset ignores it.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Four steps, two actions, $\gamma = \lambda = 0.5$, rewards 1. `next_q` is $(2, 2)$ with next
# action 1 (a tie: greedy); $(4, 0)$ with action 1 (not greedy); NaN (step 2 terminates); $(6, 2)$.
#
# * $G_3 = 1 + 0.5 \cdot 6 = 4$: $\lambda^{\text{eff}}_3 = 0$ at the window's end. $G_2 = 1$: terminal, and a select keeps the NaN out.
# * $G_1 = 1 + 0.5 \cdot 4 = 3$: not greedy, so $\lambda^{\text{eff}}_1 = 0$ and the trace is cut.
# * $G_0 = 1 + 0.5\,(0.5 \cdot 2 + 0.5\,G_1) = 2.25$: the tie is greedy, so $\lambda^{\text{eff}}_0 = \lambda$.
#
# ```python
# q4 = torch.tensor([[[2.0, 2.0], [4.0, 0.0], [float("nan")] * 2, [6.0, 2.0]]], device=DEVICE)
# X4 = (torch.ones(1, 4, device=DEVICE), q4, torch.tensor([[1, 1, 0, 0]], device=DEVICE),
#       torch.tensor([[False, False, True, False]], device=DEVICE))
# print(exercises.guarded(exercises.scan_hook, q_lambda, X4, (0.5, 0.5, 2)).tolist())  # must print [[2.25, 3.0, 1.0, 4.0]]
# ```
#
# Run the checker before you open Hint 4.
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# for k in range(1, n_actions):  # k: an action; action 0 is the template's max_q, q_taken's start
#     q_k = tl.load(X[1] + offs * n_actions + k, mask=m, other=0.0)  # action k's Q
#     max_q = ___  # ___: the running max, with q_k
#     q_taken = tl.where(___, q_k, q_taken)  # ___: when is action k the one taken next?
# lam_t = tl.where(___, lam, 0.0)  # ___: greedy (a tie counts), and not the window's last step
# ```
#
# </details>
#
# A template:
#
# ```python
# @triton.jit
# def q_lambda(X, P, offs, t, m, T):
#     gamma, lam, n_actions = P[0], P[1], P[2]
#     r = tl.load(X[0] + offs, mask=m, other=0.0)                 # rewards
#     next_action = tl.load(X[2] + offs, mask=m, other=0)         # u_{t+1}, an int
#     term = tl.load(X[3] + offs, mask=m, other=0) != 0           # a bool flag
#     max_q = tl.load(X[1] + offs * n_actions, mask=m, other=0.0) # Q(s_{t+1}, 0)
#     q_taken = max_q                                             # Q(s_{t+1}, u_{t+1}) so far
#     for k in range(1, n_actions):  # k: an action
#         ...
#     return a_t, b_t, reset
# ```

# %%
# YOUR CODE: replace the next line by your @triton.jit def q_lambda(X, P, offs, t, m, T)
q_lambda = None

# %%
exercises.attempt("q_lambda", q_lambda)

# %% [markdown]
# **`retrace`** (a Triton prologue). Retrace(λ) learns the $Q$ of a target policy π from data that
# a behaviour policy μ collected. It is Q(λ) with a soft cut: where `q_lambda`'s trace weight is λ
# or 0, Retrace's is $c_{t+1} = \lambda\min(1, \pi/\mu)$ of the next action, anywhere from 0 to λ:
#
# $$G_t = r_t + \gamma(1-\text{term}_t)\big[\mathbb E_\pi Q(s_{t+1}, \cdot) + c_{t+1}\big(G_{t+1}
#   - Q(s_{t+1}, u_{t+1})\big)\big], \qquad c_{t+1} = \lambda \min(1, \pi/\mu) \text{ at step } t+1.$$
#
# With a greedy π, $\mathbb E_\pi Q$ is $\max_u Q$, and $\min(1, \pi/\mu)$ is 1 at a greedy $u_{t+1}$
# and 0 elsewhere: Retrace is then Watkins's Q(λ), when no two actions tie for the max.
#
# **Why step $t$ holds the ratio of $u_{t+1}$.** `next_log_ratio[t]` is $\log\pi/\mu$ of the *next*
# action, because $G_t$ estimates $Q(s_t, u_t)$: it is given $u_t$, and the first action it averages
# over under π is $u_{t+1}$. Unrolled inside an episode, with the TD error
# $\delta^Q_t = r_t + \gamma\,\mathbb E_\pi Q(s_{t+1}, \cdot) - Q(s_t, u_t)$, the target is
#
# $$G_t = Q(s_t, u_t) + \delta^Q_t + \gamma\,c_{t+1}\,\delta^Q_{t+1} + \dots$$
#
# So a ratio sits where the target averages over its action (why, worked: the
# [appendix](#Appendix:-details-of-the-exercises)).

# %% jupyter={"source_hidden": true}
# Checks: Retrace with a greedy π is Q(λ); the unrolled step (CI runs them; skip when reading)
g_w, lam_w = np.random.default_rng(12), 0.8
r_w, mu_w = g_w.normal(size=40), g_w.uniform(0.1, 1.0, size=40)  # mu_w: μ(u_{t+1} | s_{t+1})
q_w, u_w, term_w = g_w.normal(size=(40, 4)), g_w.integers(0, 4, size=40), g_w.random(40) < 0.1  # Q(s_{t+1}, .), u_{t+1}
M_w, q_taken_w = q_w.max(1), q_w[np.arange(40), u_w]
greedy_w = q_taken_w == M_w
ratio_w = np.where(greedy_w, 1.0, 0.0) / mu_w  # a greedy π: π(u_{t+1}) is 1 or 0
G_ql, G_re, want_ql, want_re = 0.0, 0.0, np.zeros(40), np.zeros(40)
for t_w in reversed(range(40)):  # the two formulas above, with λ^eff_t = c = 0 at the window's last step
    ell, c = (lam_w * greedy_w[t_w], lam_w * min(1.0, ratio_w[t_w])) if t_w < 39 else (0.0, 0.0)
    G_ql = r_w[t_w] + (0.0 if term_w[t_w] else 0.9 * ((1 - ell) * M_w[t_w] + ell * G_ql))
    G_re = r_w[t_w] + (0.0 if term_w[t_w] else 0.9 * (M_w[t_w] + c * (G_re - q_taken_w[t_w])))
    want_ql[t_w], want_re[t_w] = G_ql, G_re
np.testing.assert_allclose(want_re, want_ql, rtol=1e-12)  # "Retrace is then Watkins's Q(λ)"
assert greedy_w.any() and (~greedy_w).any() and term_w.any()
assert (np.sort(q_w, 1)[:, -1] > np.sort(q_w, 1)[:, -2]).all()  # "when no two actions tie for the max"
g_u, gam_u = torch.Generator().manual_seed(11), 0.9
_, r_u, _ = (torch.randn(2, generator=g_u, dtype=torch.float64).numpy() for _ in range(3))
eq_u, q_u, c1_u = np.array([0.4, -1.2]), np.array([0.3, 1.1]), 0.6  # E_pi Q(s_{j+1}, .) and Q(s_j, u_j), j = 0, 1
G1_u = r_u[1] + gam_u * eq_u[1]  # Retrace's last step: c = 0
G0_u = r_u[0] + gam_u * (eq_u[0] + c1_u * (G1_u - q_u[1]))
dq_u = r_u + gam_u * eq_u - q_u  # delta^Q_0, delta^Q_1
np.testing.assert_allclose(G0_u, q_u[0] + dq_u[0] + gam_u * c1_u * dq_u[1], rtol=1e-12)  # c_{t+1} alone

# %% [markdown]
# **You write:** `retrace(X, P, offs, t, m, T)`, a Triton prologue for
# [the harness](01b_prologues_and_backward.ipynb#1.-The-harness-for-Triton-prologues), as for
# `q_lambda`.
#
# **It returns:** each step's triple $(a_t, b_t, \text{reset}_t)$, whose reverse scan is Retrace's
# $G_t$ above.
#
# **Inputs:** `X = (rewards, next_expected_q, next_q, next_log_ratio, terminated)`, (B, T) each:
# $r_t$; $\mathbb E_\pi Q_{t+1} = \mathbb E_\pi Q(s_{t+1}, \cdot)$; $Q_{t+1} = Q(s_{t+1}, u_{t+1})$ (not
# `q_lambda`'s (B, T, A)); $\log \pi/\mu$ of $u_{t+1}$; the bool flag. `P = (γ, λ)`. The rest is on the
# [conventions card](GLOSSARY.md#conventions-for-every-exercise).
#
# * **New against `q_lambda`:** the multiplier holds a per-step trace weight $c_{t+1}$, and $b_t$
#   subtracts $\gamma c_{t+1} Q_{t+1}$.
# * **At the window's last step,** $c = 0$ turns the ordinary $b_t$ into [$b_t$ at a reset](GLOSSARY.md#cut-step), as `lam_t = 0` does in the worked prologue.
#
# <details><summary>Hint 1: where to start</summary>
#
# The shape of `td_lambda_prologue` or your `q_lambda`: the factor of $G_{t+1}$ is $a_t$, the rest $b_t$.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Give each kind of step of [01's episode-end table](01_discounted_return.ipynb#The-episode-end-table) its triple, with
#   $a_t = \gamma c_{t+1}$ at every step: a reset ignores it. There is no truncation input.
# * $\pi/\mu$ is `exp(next_log_ratio)`, loaded at `offs`: entry $t$ is already step $t+1$'s.
# * $c_{t+1} = \lambda\min(1, \pi/\mu)$, and $c = 0$ where `t == T - 1`.
# * With that $c$, the ordinary step and the window's last step share one formula for $b_t$. Mind
#   the sign of the term with $Q_{t+1}$.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Four steps, $\gamma = 0.5$, $\lambda = 1$, rewards 1; step 2 terminates (its `next_*` are NaN).
# `next_expected_q` is $(2, 4, \cdot, 6)$, `next_q` $(1.5, 2, \cdot, 8)$, the next ratio $\pi/\mu$
# $(0.5, 2, \cdot, 1)$.
#
# * $G_3 = 1 + 0.5 \cdot 6 = 4$: $c = 0$ at the window's end, so its `next_q` of 8 is not used.
# * $G_2 = 1$ (terminal).
# * $G_1 = 1 + 0.5\,(4 + 1 \cdot (G_2 - 2)) = 2.5$: the ratio 2 is clipped to $c = 1$.
# * $G_0 = 1 + 0.5\,(2 + 0.5\,(G_1 - 1.5)) = 2.25$.
#
# ```python
# one_row = lambda *x: torch.tensor([x], device=DEVICE)  # noqa: E731 -- a (1, 4) tensor
# X4 = (one_row(1.0, 1.0, 1.0, 1.0), one_row(2.0, 4.0, float("nan"), 6.0), one_row(1.5, 2.0, float("nan"), 8.0),
#       torch.log(one_row(0.5, 2.0, float("nan"), 1.0)), one_row(False, False, True, False))
# print(exercises.guarded(exercises.scan_hook, retrace, X4, (0.5, 1.0)).tolist())  # must print [[2.25, 2.5, 1.0, 4.0]]
# ```
#
# Run the checker before you open Hint 4.
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# The ordinary step's $b_t$ is $r_t + \gamma(\mathbb E_\pi Q_{t+1} - c_{t+1} Q_{t+1})$.
#
# ```python
# log_ratio = tl.load(X[3] + offs, mask=m, other=0.0)  # step t+1's log pi/mu: no shift
# c = tl.where(t < T - 1, ___, 0.0)  # ___: c_{t+1}, lambda times the ratio clipped at 1
# b = r + tl.where(term, 0.0, ___)  # ___: the bracket's terms without G_{t+1}, times gamma
# return ___, b, ___  # ___: what multiplies G_{t+1}? and where is the trace cut?
# ```
#
# </details>
#
# A template:
#
# ```python
# @triton.jit
# def retrace(X, P, offs, t, m, T):
#     gamma, lam = P[0], P[1]
#     r = tl.load(X[0] + offs, mask=m, other=0.0)
#     ...
#     return a, b, reset
# ```

# %%
# YOUR CODE: replace the next line by your @triton.jit def retrace(X, P, offs, t, m, T)
retrace = None

# %%
exercises.attempt("retrace", retrace)

# %% [markdown]
# Without a checker:
#
# *(Answer each in its cell below, for your teacher's grader.)*
#
# 1. Show numerically that `td_lambda(r, values[t+1], λ)`, with `bootstrap_value` as the last next
#    value, equals `gae(r, values, λ).returns` inside episodes. Which of the two would you use as a
#    critic target? Why are they the same thing?
#
#    <details><summary>Check yourself</summary>
#
#    The two agree to float64 precision, because GAE's advantage is the λ-return minus the baseline:
#    $A_t = G^\lambda_t - V(s_t)$. Use `gae` when you need the advantages too, and `td_lambda` when you need only the target.
#
#    </details>
# 2. Dreamer uses λ-returns of imagined rollouts with a learned, per-step `discount`
#    (continuation probability). Pass it as `gamma` and check the result against the loop.
#
#    <details><summary>Check yourself</summary>
#
#    Pass `gamma` $= \gamma_t = \gamma \cdot$ `discount` and `next_values` $= v(s_{t+1})$, with no `terminated`. The result
#    equals the loop $V^\lambda_t = r_t + \gamma_t[(1-\lambda)v(s_{t+1}) + \lambda V^\lambda_{t+1}]$, from $V^\lambda_H = v(s_H)$, to float64 precision.
#
#    </details>
# 3. In section 5's setting, make the critic unbiased: $\eta = 0$. Keep $\sigma_c = 0.25$ and
#    $\sigma_r = 2$ (not the $\sigma_c = 3$ of the section's last check). Which λ minimises the
#    MSE now: is it exactly 0? Answer with the exact formulas on a grid finer than the rollouts',
#    and say why. Then make the rewards deterministic ($\sigma_r = 0$): what is left of the
#    trade-off? Last, keep $\eta = \sigma_r = 0$ and $T = 20$, but set $\gamma = 0.99$ (so
#    $\gamma^T \approx 0.82$) and $\sigma_c = 1$. Where is the best λ now, and why?
#
#    <details><summary>Check yourself: the first part</summary>
#
#    Not exactly 0. At λ = 0 the rewards' term is flat, and the critic's falls:
#    $d\mathrm{Var}/d\lambda = -2\gamma^2\sigma_c^2 = -0.08$ there. So the best λ is just above 0, about 0.015.
#
#    </details>
#
#    <details><summary>Check yourself: σ_r = 0</summary>
#
#    Only the critic's term $\sigma_c^2\sum_t\beta_t^2$ is left. It falls from $\gamma^2\sigma_c^2 = 0.04$ at
#    λ = 0 to $\gamma^{2T}\sigma_c^2 = 8.3\cdot10^{-6}$ at λ = 1, so λ ≈ 1 for practical purposes. Exactly, the
#    minimum is just below 1, at λ ≈ 0.9986. At λ = 1 the whole weight $\gamma^T$ sits on one value.
#    Just below 1, a sliver of it moves to earlier values: that sliver, $\propto 1-\lambda$, enters the
#    sum squared, while the last value's weight falls in proportion to $1-\lambda$.
#
#    </details>
#
#    <details><summary>Check yourself: γ = 0.99</summary>
#
#    The best λ is about 0.90, with MSE 0.059, against 0.98 at λ = 0 and 0.67 at λ = 1. Now
#    $\gamma^T \approx 0.82$ is large: λ = 1 leaves that weight on one noisy value, and λ = 0 puts
#    weight $\gamma$ on $V'_0$ alone. A λ in between spreads the weight over many independent values.
#    Deterministic rewards favour λ ≈ 1 only when $\gamma^T$ is small.
#
#    </details>

# %% jupyter={"source_hidden": true}
# Checks: question 3's expected result, with eta = 0 (the bias term drops out) (CI runs them; skip when reading)
_h = 1e-7
_alpha, _beta = weights(np.array([0.0, _h]))
_var = sigma_r**2 * (_alpha**2).sum(1) + sigma_c**2 * (_beta**2).sum(1)
np.testing.assert_allclose((_var[1] - _var[0]) / _h, -2 * gamma_**2 * sigma_c**2, rtol=1e-4)  # "-2 gamma^2 sigma_c^2"
assert round(-2 * gamma_**2 * sigma_c**2, 2) == -0.08 and (sigma_r, sigma_c) == (2.0, 0.25)
_alpha, _beta = weights(fine)
assert round(fine[(sigma_r**2 * (_alpha**2).sum(1) + sigma_c**2 * (_beta**2).sum(1)).argmin()], 3) == 0.015  # "about 0.015"
_finer = np.linspace(0.0, 1.0, 100_001)  # a grid fine enough for 0.9986
_alpha, _beta = weights(_finer)
_vc = sigma_c**2 * (_beta**2).sum(1)  # sigma_r = 0: the critic's term alone
assert round(_vc[0], 4) == round(gamma_**2 * sigma_c**2, 4) == 0.04  # "0.04 at λ = 0"
assert round(_vc[-1] * 1e6, 1) == round(gamma_ ** (2 * T_mc) * sigma_c**2 * 1e6, 1) == 8.3  # "8.3·10^-6 at λ = 1"
assert round(_finer[_vc.argmin()], 4) == 0.9986 and _vc.min() < _vc[-1]  # "just below 1, at λ ≈ 0.9986"
_a99 = (0.99 * _finer[:, None]) ** np.arange(T_mc)  # gamma = 0.99, sigma_c = 1, eta = sigma_r = 0
_b99 = 0.99 * (1 - _finer[:, None]) * _a99
_b99[:, -1] = 0.99 * _a99[:, -1]  # the window's last step bootstraps fully
_v99 = 1.0**2 * (_b99**2).sum(1)
assert round(_finer[_v99.argmin()], 2) == 0.90 and round(_v99.min(), 3) == 0.059  # "about 0.90, with MSE 0.059"
assert round(_v99[0], 2) == 0.98 and round(_v99[-1], 2) == 0.67 and round(0.99**T_mc, 2) == 0.82  # the two ends

# %% [markdown] tags=["answer-1"]
# **Answer 1.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-2"]
# **Answer 2.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-3"]
# **Answer 3.** *Your answer here (code for it: in cells under this one).*

# %% [markdown]
# ## What you now know
#
# * The λ-return is one reverse scan, with $a_t = \gamma_t\lambda_t$ and $b_t = r_t + \gamma_t w_t
#   V'_t$: $w_t = 1-\lambda_t$ inside an episode, 1 at its end and at the window's last step.
# * λ trades the critic's error for the rewards' noise. In section 5 the MSE is lowest near
#   λ = 0.73, and an unbiased but noisy critic has a trade-off too.
# * Watkins's Q(λ) is TD(λ) on $\max_u Q(s_{t+1}, u)$, its trace cut where the next action is not
#   greedy (a tie counts as greedy).
# * Retrace is Q(λ) with a soft cut: its trace weight is $c_{t+1} = \lambda\min(1, \pi/\mu)$ of the
#   next action, loaded at step $t$. With a greedy π and no ties for the max, it is Q(λ).
# * Every estimator's $a_t$, $b_t$ and reset, side by side: 04's [One table for every estimator](04_vtrace.ipynb#One-table-for-every-estimator).

# %% [markdown]
# ## Appendix: details of the exercises
#
# **`q_lambda`'s sources.** Watkins, *Learning from delayed rewards*, 1989; Sutton & Barto 2nd ed., §12.10.
#
# **`retrace`: its sources, and why the ratio of $u_{t+1}$, worked.** Munos, Stepleton, Harutyunyan, Bellemare, *Safe and
# efficient off-policy reinforcement learning*, NeurIPS 2016.
#
# A ratio turns an average over μ's actions into one over π's,
#
# $$\mathbb E_{u\sim\mu}\Big[\tfrac{\pi(u)}{\mu(u)}\,f(u)\Big] = \sum_u \mu(u)\,\tfrac{\pi(u)}{\mu(u)}\,f(u)
#   = \mathbb E_{u\sim\pi}[f(u)].$$
#
# That is why the ratio of an action appears where the target averages over it under π.
# In the unrolled target of the `retrace` text, step $t$'s own TD error has weight 1: $u_t$ is given, so its ratio
# never appears.
