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
# The λ-return mixes all $n$-step returns with weights $(1-\lambda)\lambda^{n-1}$ (Sutton,
# *Learning to predict by the methods of temporal differences*, Machine Learning 1988; Sutton &
# Barto 2nd ed., §12.1). It is the usual critic target (DQN variants, Dreamer, CRR with λ=0) and
# has a backward form, as in rlax's `lambda_returns`:
#
# $$G_t = r_t + \gamma_t (1-\text{term}_t)\Big[(1-\lambda_t) V'_t + \lambda_t
#   \begin{cases} G_{t+1} & \text{not done}_t \\ V'_t & \text{done}_t \end{cases}\Big]$$
#
# $\lambda = 0$ is the one-step TD target $r_t + \gamma V'_t$; $\lambda = 1$ the discounted return
# bootstrapped at episode ends.

# %%
import inspect
import os

import numpy as np
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # Triton kernels on the CPU

import matplotlib.pyplot as plt

import rltriton_lite as rl
from rltriton_lite import profile, reference, returns

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
rng = np.random.default_rng(3)
n = lambda x: x.cpu().numpy()  # noqa: E731

# %% [markdown]
# ## 1. The loop

# %%
print(inspect.getsource(reference.td_lambda))

# %% [markdown]
# By hand, three steps, $\gamma = 1$, $\lambda = 0.5$, next values 10, 20, 30, rewards 0:
# $G_2 = 30$ (window end); $G_1 = 0.5·20 + 0.5·30 = 25$; $G_0 = 0.5·10 + 0.5·25 = 17.5$.

# %%
G = reference.td_lambda([0.0, 0.0, 0.0], [10.0, 20.0, 30.0], gamma=1.0, lambda_=0.5)
np.testing.assert_allclose(G, [17.5, 25.0, 30.0])
print(G)

# %% [markdown]
# ## 2. Prologue, scan, epilogue
#
# $a_t = \gamma_t\lambda_t$, reset at done$_t$, and
# $b_t = r_t + [\lnot\text{term}_t]\,\gamma_t w_t V'_t$ with $w_t = 1$ at an episode end and
# $1-\lambda_t$ inside one. In NumPy, against the loop:

# %%
def td_lambda_as_scan(r, nv, gamma, lam, terminated, truncated):
    done = terminated | truncated
    done[..., -1] = True
    w = np.where(done, 1.0, 1.0 - lam)
    b = r + np.where(terminated, 0.0, gamma * w * nv)
    y, carry = np.zeros_like(r), np.zeros(r.shape[:-1])
    for t in reversed(range(r.shape[-1])):
        carry = np.where(done[..., t], b[..., t], b[..., t] + gamma * lam * carry)
        y[..., t] = carry
    return y


R, NV = rng.normal(size=(3, 40)), rng.normal(size=(3, 40))
TERM = rng.random((3, 40)) < 0.1
TRUNC = (rng.random((3, 40)) < 0.1) & ~TERM
np.testing.assert_allclose(td_lambda_as_scan(R, NV, 0.95, 0.8, TERM, TRUNC),
                           reference.td_lambda(R, NV, gamma=0.95, lambda_=0.8, terminated=TERM, truncated=TRUNC),
                           rtol=1e-12)
print("prologue + scan + epilogue == the loop")

# %% [markdown]
# ## 3. The kernel's prologue

# %%
print(inspect.getsource(getattr(returns._td_lambda_prologue, "fn", returns._td_lambda_prologue)))

# %% [markdown]
# `w = tl.where(done, 1.0, 1.0 - lam)` is the only difference from GAE's prologue besides
# $-V_t$: the three estimators share `episode.step`, `episode.values_now_and_next`, the
# backward prologue and the whole scan.
#
# ## 4. Kernel against the loop

# %%
B, T = 4, 45
r, nv = torch.randn(B, T, device=DEVICE), torch.randn(B, T, device=DEVICE)
term = torch.rand(B, T, device=DEVICE) < 0.1
trunc = (torch.rand(B, T, device=DEVICE) < 0.1) & ~term
mask = torch.rand(B, T, device=DEVICE) > 0.1
lam = torch.rand(B, T, device=DEVICE)  # a per-step lambda
gamma = torch.rand(B, T, device=DEVICE) * 0.2 + 0.8
G = rl.td_lambda(r, nv, gamma=gamma, lambda_=lam, terminated=term, truncated=trunc, mask=mask)
expected = reference.td_lambda(n(r), n(nv), gamma=n(gamma), lambda_=n(lam), terminated=n(term), truncated=n(trunc),
                               mask=n(mask))
np.testing.assert_allclose(n(G), expected, rtol=1e-5, atol=1e-5)
G_tm = rl.td_lambda(r.t().contiguous(), nv.t().contiguous(), gamma=gamma.t().contiguous(), lambda_=lam.t().contiguous(),
                    terminated=term.t().contiguous(), truncated=trunc.t().contiguous(), mask=mask.t().contiguous(),
                    time_dim=0)
np.testing.assert_allclose(n(G_tm).T, expected, rtol=1e-5, atol=1e-5)

# the two ends of the family
one_step = rl.td_lambda(r, nv, gamma=0.9, lambda_=0.0, terminated=term)
torch.testing.assert_close(one_step, r + 0.9 * torch.where(term, 0.0, nv))
full = rl.td_lambda(r, nv, gamma=0.9, lambda_=1.0, terminated=term, truncated=trunc)
torch.testing.assert_close(full, rl.discounted_returns(r, gamma=0.9, terminated=term, truncated=trunc, next_values=nv))
print("kernel == loop; λ=0 is one-step TD, λ=1 the discounted return")

# %% [markdown]
# How λ trades bias for variance, on one row with a noisy critic: the λ-returns for several λ.

# %%
T1 = 60
r1 = torch.ones(1, T1, device=DEVICE)
true_v = (1 - 0.9 ** torch.arange(T1, 0, -1, device=DEVICE, dtype=torch.float32)) / (1 - 0.9)
noisy_next = torch.cat([true_v[1:], torch.zeros(1, device=DEVICE)])[None] + 2 * torch.randn(1, T1, device=DEVICE)
fig, ax = plt.subplots(figsize=(9, 3))
for lam_ in (0.0, 0.5, 0.9, 1.0):
    ax.plot(n(rl.td_lambda(r1, noisy_next, gamma=0.9, lambda_=lam_))[0], label=f"λ={lam_}")
ax.plot(n(true_v), "k--", label="true value")
ax.set_xlabel("t")
ax.legend()
plt.show()

# %% [markdown]
# The rows above fit in one chunk of the kernel (256 steps). A row of 1,000 steps spans four,
# so the carry handed from chunk to chunk is checked too, on the profiler's rollout (episode
# ends included):

# %%
long_err = profile.rollout_error("td_lambda", 3, 1000, DEVICE)
assert long_err < 1e-5, long_err
print(f"3 x 1000: relative error {long_err:.1e}")

# %% [markdown]
# ## 5. Profile it

# %%
ui, rows = profile.profiler("td_lambda")
ui

# %%
assert {row["impl"] for row in rows} == {"triton", "torch", "loop"} and all(row["ms"] > 0 for row in rows)

# %% [markdown]
# ## Exercises
#
# 1. Show numerically that `td_lambda(r, values[t+1], λ)` equals `gae(r, values, λ).returns`
#    inside episodes. Which of the two would you use as a critic target, and why are they the
#    same thing?
# 2. Dreamer uses λ-returns of imagined rollouts with a learned, per-step `discount`
#    (continuation probability). Pass it as `gamma` and check the result against the loop.
# 3. Measure the variance of $G_0$ over 1000 noisy critics for λ ∈ {0, 0.5, 0.9, 1}.
