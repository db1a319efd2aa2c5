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
# # 07 — CRR: a one-step target for the critic, a weighted sum for the policy
#
# * **You will learn:** critic-regularized regression (CRR): its advantage weights, its sampled
#   baselines, its loss as an associative reduction; AWR's weights as a Triton hook and AWAC's
#   batch-normalised weights as a Triton kernel.
# * **Time:** 3.5–4 h with the open questions; 1.25–2 h for the reading and the two checked
#   exercises.
# * **Needs:** notebook 05 (and 03 for section 2's `td_lambda`); 00b (grids, masked
#   loads, a chunk loop) for the kernel exercise `awac_weights`. No GPU.
# * **Conventions:** the course's flags, values and hook signatures:
#   [Names and signatures](GLOSSARY.md#names-and-signatures) in the glossary.
# * **Minimum path:** sections 1–5, and the checked exercises `awr_weights` (notebook 05's
#   harness) and `awac_weights` (a kernel of your own). The rest can wait.
# * **Checks cells** (folded, starting `# Checks`): skip reading their code; where the text says a
#   folded cell prints a table, read its output.
#
# Critic Regularized Regression (CRR) learns a policy from a fixed dataset. It avoids two
# failures:
#
# * Plain behaviour cloning copies every action in the data, good or bad.
# * Off-policy actor-critic methods follow the critic's gradient towards actions the data never
#   tried, where the critic is often wrong. CRR asks the critic about such actions but never
#   follows its gradient.
#
# CRR clones the dataset's actions, **weighted by how much better the critic thinks they are**
# than what the current policy would do,
#
# $$\hat A_t = Q(s_t, u_t) - \hat V_t, \qquad
#   w_t = \begin{cases} \min\big(e^{\hat A_t/\beta},\ w_{\max}\big) & \text{CRR-exp} \\
#                       [\hat A_t > 0] & \text{CRR-binary} \end{cases}, \qquad
#   \text{loss} = -\frac{1}{N}\sum_{t\ \text{unmasked}} w_t \log\pi(u_t|s_t),$$
#
# Here $u_t$ is the dataset's action at step $t$, $\beta$ is a temperature, and $[\hat A_t > 0]$
# is 1 where the advantage is positive, 0 elsewhere. The baseline $\hat V_t \approx V(s_t)$ is
# the mean, or the stricter max, of the critic's values of $K$ actions sampled from the policy.
# The clip $w_{\max} = 20$ keeps one lucky critic error from dominating a batch.
#
# Two parts of it are what the course is about:
#
# * The critic's target is `td_lambda` with $\lambda = 0$, a scan that carries nothing (section 2).
# * The policy loss is a **sum**, an associative reduction. `rl.crr_loss` fuses it with the
#   weights.
#
# <details><summary>Details (optional): the paper, where the exponential and the clip come from, and why u</summary>
#
# Wang, Novikov, Żołna, Springenberg, Reed, Shahriari, Siegel, Merel, Gulcehre, Heess, de
# Freitas: *Critic Regularized Regression*, NeurIPS 2020, arXiv 2006.15134. The exponential form
# is the closed-form solution of KL-regularised policy improvement (as in AWR and MPO). The clip
# $w_{\max} = 20$ comes from AWR, advantage-weighted regression (Peng et al., 2019). In the
# paper's main form the baseline is the mean, $\frac{1}{K}\sum_j Q(s_t, u_j)$; it also tries the max
# (the package's `baseline_reduce="max"`).
#
# As in notebooks 03 and 04, an action is written $u$, because $a_t$ names the scan's multiplier.
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

import triton
import triton.language as tl

import rltriton_lite as rl
from rltriton_lite import crr, exercises, profile, reference

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# Random inputs are drawn on the CPU with a fixed seed and then moved to DEVICE, so a GPU sees the same numbers.
# the Triton kernels: compiled on a GPU, in the interpreter on a CPU (backend="auto" takes the PyTorch path on a CPU)
KERNEL = "triton"
rng = np.random.default_rng(7)
n = lambda x: x.detach().cpu().numpy()  # noqa: E731

# %% [markdown]
# ## 1. The loop
#
# The ground truth is a float64 NumPy function:

# %%
print(inspect.getsource(reference.crr_loss))

# %% [markdown]
# Four dataset steps, with $V(s_t) = 1$, $\beta = 1$ and $Q(s_t, u_t) = 1,\ 1+\ln 2,\ 1-\ln 2,\ 6$,
# have the advantages $0, \ln 2, -\ln 2, 5$. Their actions' log-likelihoods are $-1, -2, -1, -0.5$:
#
# | t | $\hat A$ | exp weight $\min(e^{\hat A}, 20)$ | binary weight $[\hat A>0]$ | $\log\pi$ |
# |---|---|---|---|---|
# | 0 | 0 | 1 | 0 | −1 |
# | 1 | ln 2 | 2 | 1 | −2 |
# | 2 | −ln 2 | 0.5 | 0 | −1 |
# | 3 | 5 | $e^5 \approx 148$ → 20 | 1 | −0.5 |

# %%
q = np.array([1.0, 1.0 + np.log(2), 1.0 - np.log(2), 6.0])
v = np.ones(4)
logp = np.array([-1.0, -2.0, -1.0, -0.5])
loss_exp, w_exp, adv = reference.crr_loss(logp, q, v, beta=1.0, mode="exp")
loss_bin, w_bin, _ = reference.crr_loss(logp, q, v, mode="binary")
print("exp   ", loss_exp, w_exp, "\nbinary", loss_bin, w_bin)
# by hand: exp:    −(1·(−1) + 2·(−2) + 0.5·(−1) + 20·(−0.5))/4 = 15.5/4 = 3.875
#          binary: −(0 + 1·(−2) + 0 + 1·(−0.5))/4 = 2.5/4 = 0.625   (A = 0 is not "better": weight 0)
np.testing.assert_allclose(adv, [0.0, np.log(2), -np.log(2), 5.0])
np.testing.assert_allclose(w_exp, [1.0, 2.0, 0.5, 20.0])
np.testing.assert_allclose(w_bin, [0.0, 1.0, 0.0, 1.0])
np.testing.assert_allclose([loss_exp, loss_bin], [3.875, 0.625])

# %% [markdown]
# Now a sampled baseline. The dataset action has $Q(s, u) = 1.5$, and the critic values three
# actions sampled from the policy at 0, 1, 2.
#
# * Their mean is 1, so $\hat A = 0.5$, and the action is kept.
# * Their max is 2, so $\hat A = -0.5$, and CRR-binary drops the action.
#
# The action is better than the policy on average, but not better than its best sample.

# %%
samples = np.array([[0.0, 1.0, 2.0]])  # one state, K = 3 trailing
for reduce_, expected_adv, expected_w in (("mean", 0.5, 1.0), ("max", -0.5, 0.0)):
    _, w_, a_ = reference.crr_loss([-1.0], [1.5], samples, mode="binary", baseline_reduce=reduce_)
    np.testing.assert_allclose([a_[0], w_[0]], [expected_adv, expected_w])

# %% [markdown]
# The plot shows the kernel's weights against the advantage: the exponential at several
# temperatures β, and the binary step (on the log scale, only where it is 1):

# %%
A_grid = torch.linspace(-3, 3, 121, device=DEVICE)
zeros = torch.zeros_like(A_grid)
fig, axes = plt.subplots(1, 2, figsize=(10, 3.2))
for beta in (0.25, 0.5, 1.0, 2.0):
    w_k = rl.crr_loss(zeros, A_grid, zeros, beta=beta, backend=KERNEL).weights
    np.testing.assert_allclose(n(w_k), np.minimum(np.exp(n(A_grid) / beta), 20.0), rtol=1e-6)
    for ax in axes:
        ax.plot(n(A_grid), n(w_k), label=f"exp, β={beta}")
w_b = rl.crr_loss(zeros, A_grid, zeros, mode="binary", backend=KERNEL).weights
assert torch.equal(w_b, (A_grid > 0).float())
axes[0].plot(n(A_grid), n(w_b), "k", lw=2, drawstyle="steps-pre", label="binary")  # 0 up to A = 0, then 1
kept = n(A_grid) > 0  # a log axis has no 0: draw the binary weight only where it is 1
axes[1].plot(np.r_[0.0, n(A_grid)[kept]], np.r_[1.0, n(w_b)[kept]], "k", lw=2, label="binary (its 0s not drawn)")
axes[1].plot([0.0], [1.0], "ko", mfc="white")  # open circle: at A = 0 itself the weight is 0
for ax in axes:
    ax.axhline(20, color="gray", ls=":", lw=1)
    ax.set_xlabel("advantage A")
axes[0].set_ylabel("weight w")
axes[0].set_ylim(0, 21)
axes[1].set_yscale("log")
axes[1].set_title("log scale: the clip at $w_{max}$ = 20")
axes[0].legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# Small β makes the exponential nearly a step: every advantage above $\beta \ln w_{\max}$ gets
# $w_{\max}$, and only those below are still ranked. Large β flattens it towards plain behaviour
# cloning ($w \equiv 1$). The binary filter ignores how much better an action is.
#
# ## 2. The credit assignment: the critic's target is a (degenerate) scan
#
# The critic learns $Q(s_t, u_t)$ by TD towards
# $G_t = r_t + \gamma(1-\text{term}_t)\,\mathbb{E}_{u'\sim\pi} \bar Q(s_{t+1}, u')$, with the
# expectation estimated from $K$ actions sampled at the next state. $\bar Q$ is a target network
# ([glossary](GLOSSARY.md#symbols)), a slowly updated copy of the critic.
#
# That is `td_lambda` with $\lambda = 0$ (notebook 03): the scan's $a_t = \gamma\lambda$ is 0, so
# every step is its own one-step target. The dataset is stored as trajectories (rows B × steps T),
# right-padded to a common length:

# %%
torch.manual_seed(2)
B, T, K = 4, 24, 5
rewards = torch.randn(B, T).to(DEVICE)
term = torch.rand(B, T).to(DEVICE) < 0.05
mask = torch.ones(B, T, dtype=torch.bool, device=DEVICE)
mask[1, -7:] = False  # a shorter trajectory, right-padded
next_q_samples = torch.randn(B, T, K).to(DEVICE)   # Q̄(s_{t+1}, u'_j), u'_j ~ π(·|s_{t+1})
next_values = next_q_samples.mean(-1)

target = rl.td_lambda(rewards, next_values, gamma=0.99, lambda_=0.0, terminated=term, mask=mask, backend=KERNEL)
expected = reference.td_lambda(n(rewards), n(next_values), gamma=0.99, lambda_=0.0, terminated=n(term), mask=n(mask))
np.testing.assert_allclose(n(target), expected, rtol=1e-5, atol=1e-5)
one_step = torch.where(mask, rewards + 0.99 * torch.where(term, 0.0, next_values), 0.0)
torch.testing.assert_close(target, one_step)
print("td_lambda(λ=0) == reference == r + γ(1-term)·E Q̄(s', u')")

# %% [markdown]
# The critic's loss regresses on that target. The cell below uses a squared error. The paper's
# critic is distributional: it predicts a distribution over returns and fits it to a distributional
# target. That changes only the critic's target and loss. The policy loss reads the critic's mean,
# $Q(s, u)$, either way, so nothing below changes.
#
# <details><summary>Details (optional): λ > 0</summary>
#
# With $\lambda > 0$ the same call is a real scan, a multi-step target (the next cell computes one
# at λ = 0.5). The paper stays at one step, because the dataset's later actions come from the
# behaviour policy, not from $\pi$ (open question 2).
#
# </details>

# %%
target_05 = rl.td_lambda(rewards, next_values, gamma=0.99, lambda_=0.5, terminated=term, mask=mask,
                         backend=KERNEL)
np.testing.assert_allclose(n(target_05), reference.td_lambda(n(rewards), n(next_values), gamma=0.99, lambda_=0.5,
                                                             terminated=n(term), mask=n(mask)), rtol=1e-5, atol=1e-5)
q_sa = torch.randn(B, T).to(DEVICE).requires_grad_()  # the critic's Q(s_t, u_t)
critic_loss = ((q_sa - target) ** 2)[mask].mean()          # a squared error; the paper's critic is distributional
print("critic TD loss", critic_loss.item())

# %% [markdown]
# Then the policy loss, against the reference, with a baseline of $K$ sampled actions' values:

# %%
log_probs = -2.0 * torch.rand(B, T).to(DEVICE) - 0.1  # log π(u_t|s_t) of the dataset's actions
q_samples = torch.randn(B, T, K).to(DEVICE)            # Q(s_t, u_j), u_j ~ π(·|s_t)
out = rl.crr_loss(log_probs, q_sa.detach(), q_samples, beta=1.0, mask=mask, backend=KERNEL)
e_loss, e_w, e_adv = reference.crr_loss(n(log_probs), n(q_sa), n(q_samples), beta=1.0, mask=n(mask))
np.testing.assert_allclose(out.loss.item(), e_loss, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(n(out.weights), e_w, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(n(out.advantages), e_adv, rtol=1e-5, atol=1e-6)
print(f"policy loss {out.loss.item():.4f} (exp mode); advantage > 0: {(n(out.advantages) > 0)[n(mask)].mean():.0%} of steps")

# %% [markdown]
# ## 3. The loss is an associative reduction
#
# CRR's loss uses notebook 05's two-stage sum, in a fixed order. It sums $w_t\log\pi_t$ (0 where
# masked) and the count $N$ of unmasked steps. The cell checks the loss against the plain sum, and
# that every output and the gradient are bitwise identical from call to call:

# %%
terms = (out.weights * log_probs).double()  # w·logπ, 0 where masked
np.testing.assert_allclose(-n(terms).sum() / n(mask).sum(), e_loss, rtol=1e-6)

lp = log_probs.clone().requires_grad_()
runs = []
for _ in range(3):
    o = rl.crr_loss(lp, q_sa.detach(), q_samples, mask=mask, backend=KERNEL)
    (g,) = torch.autograd.grad(o.loss, lp)
    runs.append((o.loss, o.weights, o.advantages, g))
for run in runs[1:]:
    assert all(torch.equal(a, b) for a, b in zip(run, runs[0]))
print("loss = −Σ w·logπ / N; bitwise identical across calls")

# %% [markdown]
# ## 4. The kernel's elementwise hook
#
# One pass computes each step's weight and $w_t\log\pi_t$. The reduction of notebook 05 sums
# them, with the count $N$. For training, three facts matter:
#
# * **The weights are constants**, so $\partial\,\text{loss}/\partial\log\pi_t = -w_t/N$. No
#   gradient goes through $e^{\hat A/\beta}$ into the critic.
# * **Padding is never read**, so it may hold anything.
# * **NaN fails loudly in exp mode.** A NaN from a broken critic gives a NaN weight and a NaN
#   loss, not a plausible $w_{\max}$. Binary mode gives it the weight 0 without a warning
#   (`NaN > 0` is false), as the reference does: there, check the returned
#   `advantages.isnan().any()`.
#
# The next cell shows all three on section 1's four steps, where $N = 4$ and the exp weights are
# $1, 2, 0.5, 20$.

# %%
lp4 = torch.tensor(logp, device=DEVICE, requires_grad=True)  # section 1's four steps, in float64
q4, v4 = torch.tensor(q, device=DEVICE), torch.tensor(v, device=DEVICE)
(g4,) = torch.autograd.grad(rl.crr_loss(lp4, q4, v4, backend=KERNEL).loss, lp4)
print("d loss / d log π:", n(g4))  # −w/N = −(1, 2, 0.5, 20)/4
q_bad = q4.clone()
q_bad[3] = torch.nan  # a broken critic at step 3
last_padded = torch.tensor([True, True, True, False], device=DEVICE)
losses = {"exp": rl.crr_loss(lp4, q_bad, v4, backend=KERNEL).loss.item(),
          "binary": rl.crr_loss(lp4, q_bad, v4, mode="binary", backend=KERNEL).loss.item(),
          "exp, step 3 padded": rl.crr_loss(lp4, q_bad, v4, mask=last_padded, backend=KERNEL).loss.item()}
print(losses)
binary_bad = rl.crr_loss(lp4, q_bad, v4, mode="binary", backend=KERNEL)
print("binary: weights", n(binary_bad.weights), "advantages.isnan().any():", binary_bad.advantages.isnan().any().item())
np.testing.assert_allclose(n(g4), [-0.25, -0.5, -0.125, -5.0])
assert binary_bad.weights[3] == 0 and binary_bad.advantages.isnan().any()  # weight 0, and the NaN advantage shows it
assert np.isnan(losses["exp"])  # exp mode: NaN loss
np.testing.assert_allclose(losses["binary"], 0.5)  # binary: NaN > 0 is false, step 3 dropped: −(1·(−2))/4
np.testing.assert_allclose(losses["exp, step 3 padded"], 5.5 / 3)  # padding never read: −(−1 − 4 − 0.5)/3

# %% [markdown]
# ## 5. Mean or max baseline: how many actions each keeps
#
# CRR's baseline can reduce $K$ sampled Q's by their mean or their max. The binary mode keeps an
# action where its Q beats the baseline, so the choice sets how many actions the policy learns from.
# The data below (section 6 reuses it) has $K$ samples per step and some padding.

# %%
torch.manual_seed(5)
shape = (5, 29)
lp = torch.randn(shape).to(DEVICE) - 1.0
q = torch.randn(shape).to(DEVICE)
v = torch.randn(shape).to(DEVICE)
samples = torch.randn((K,) + shape).to(DEVICE).permute(1, 2, 0)  # (B, T, K), not contiguous
mask = torch.rand(shape).to(DEVICE) > 0.2
mask[0, :6] = False  # left padding
lp_p, q_p, v_p = (torch.where(mask, x, torch.nan) for x in (lp, q, v))

# %% [markdown]
# With samples, the max baseline is never below the mean, so it keeps no more actions:

# %%
by_reduce = {r: rl.crr_loss(lp, q, samples, mode="binary", baseline_reduce=r, backend=KERNEL).weights
             for r in ("mean", "max")}
assert (by_reduce["max"] <= by_reduce["mean"]).all()
print({r: f"{w.mean().item():.0%} kept" for r, w in by_reduce.items()})

# %% [markdown]
# With independent standard normals and $K = 5$, the max keeps an action with probability
# $1/(K+1) \approx 17\%$ (question 3 asks why); this seed prints 17 %.
#
# <details><summary>Details (optional): what another seed would print</summary>
#
# The fraction counts only $5 \times 29 = 145$ actions, so its standard error is about 3 points.
# Another seed would usually print within two standard errors of 17 %: about 10 % to 23 %.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the sample size and the spread of the max's fraction (CI runs them; skip when reading)
_p = 1 / (K + 1)
_se = (_p * (1 - _p) / by_reduce["max"].numel()) ** 0.5  # the binomial standard error of the fraction kept
assert K == 5 and samples.shape[-1] == K and round(100 * _p) == 17  # "K = 5", "1/(K+1) ≈ 17 %"
assert by_reduce["max"].numel() == 5 * 29 == 145  # "only 5 × 29 = 145 actions"
assert round(100 * _se) == 3  # "about 3 points"
assert round(100 * by_reduce["max"].mean().item()) == 17  # "with this seed the cell prints 17 %" (drawn on the CPU)
assert (round(100 * (_p - 2 * _se)), round(100 * (_p + 2 * _se))) == (10, 23)  # "about 10 % to 23 %"

# %% [markdown]
# ## 6. Kernel against the loop
#
# *Optional.* The kernel against the reference: NaN padding, both modes, a `max_weight` that
# binds, and both baselines, $V(s)$ and $K$ sampled Q's reduced by mean or max.

# %%
for baseline in (v_p, samples):
    for kw in (dict(mode="exp", beta=0.5, max_weight=3.0), dict(mode="exp", beta=2.0), dict(mode="binary"),
               dict(mode="exp", baseline_reduce="max"), dict(mode="binary", baseline_reduce="max")):
        got = rl.crr_loss(lp_p, q_p, baseline, mask=mask, backend=KERNEL, **kw)
        want = reference.crr_loss(n(lp_p), n(q_p), n(baseline), mask=n(mask), **kw)
        np.testing.assert_allclose(got.loss.item(), want[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(n(got.weights), want[1], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(n(got.advantages), want[2], rtol=1e-5, atol=1e-6)
        assert (got.weights[~mask] == 0).all() and (got.advantages[~mask] == 0).all()
    print("ok, baseline", tuple(baseline.shape))

# %%
lp64 = lp.double().requires_grad_()  # gradients in float64, against autograd of the PyTorch path, and the rule −w/N
for baseline, kw in ((v_p, dict(mode="exp", beta=0.5, max_weight=3.0)), (samples, dict(mode="binary")),
                     (samples, dict(mode="exp", baseline_reduce="max"))):
    grads = []
    for backend in ("triton", "torch"):
        o = rl.crr_loss(lp64, q_p.double(), baseline.double(), mask=mask, backend=backend, **kw)
        grads.append(torch.autograd.grad(o.loss, lp64)[0])
    torch.testing.assert_close(grads[0], grads[1])
    torch.testing.assert_close(grads[0], -o.weights / mask.sum())
print("gradients match, and equal −w/N")

# %% [markdown]
# With `need_weights=False` no weights are written, and the loss and gradient are the same:

# %%
lean = rl.crr_loss(lp64, q_p.double(), samples.double(), mask=mask, need_weights=False, mode="exp",
                   baseline_reduce="max", backend=KERNEL)
assert lean.weights is None and lean.advantages is None
torch.testing.assert_close(lean.loss, o.loss)
torch.testing.assert_close(torch.autograd.grad(lean.loss, lp64)[0], grads[0])
print("need_weights=False: same loss, same gradient")

# %%
assert profile.rollout_error("crr", 3, 1000, DEVICE) < 1e-5  # 3 × 1,000 steps: several tiles, their partial sums added by a second stage (notebook 05)

# %% [markdown]
# ## 7. How fast is it (H100, measured)
#
# With the backward, **the eager formula is faster in wall time**: `rl.crr_loss` takes 1.19–1.36× as
# long, because both calls are mostly host time. The fused loss wins on GPU time (the eager formula
# takes 3.3–4.0× as long) and on section 3's bitwise-identical calls. The folded cell below prints
# the committed H100 table for the three shapes; the ranges are rounded outwards, so they hold every
# shape ([notebook 14, section 7](14_appendix_data.ipynb#7.-How-the-course-rounds-a-figure)).
# [Notebook 09, section 4](09_benchmarks.ipynb#4.-Fused-losses-against-their-eager-formulas) compares the three losses.

# %% jupyter={"source_hidden": true}
# Checks: the text above, on the H100's paired loss probe (CI runs them; the printed table is for reading)
vs = profile.eager_against_ours("crr")  # with the backward: {(B, T): both calls' wall and GPU µs, eager ÷ ours}
print(profile.table(profile.eager_rows(vs), digits=3))  # the three shapes, in the text's order
print("* the median of the probe's interleaved rounds, not the quotient of the two wall columns")
x_gpu, x_wall = [v["gpu_ratio"] for v in vs.values()], [v["wall_ratio"] for v in vs.values()]  # eager ÷ ours
assert profile.outward(x_gpu, 1) == (3.3, 4.0)  # "3.3–4.0× as long", rounded outwards
# ours ÷ eager, "1.19–1.36× as long": 1 ÷ a median of 15 rounds (an odd count) is the median of the reciprocals
assert profile.outward([1 / x for x in x_wall], 2) == (1.19, 1.36)  # rounded outwards
assert max(x_wall) < 1 < min(x_gpu)  # "the eager formula is faster in wall time" at every shape; ours "wins on GPU time"
assert all(v[f"{c}_gpu_us"] < 0.5 * v[f"{c}_wall_us"] for c in ("ours", "eager") for v in vs.values())  # "mostly host time"
_head = open(os.path.join(profile.results_folder(), profile.COMMITTED_LOSS_WALL), encoding="utf-8").readline()
assert "H100" in _head and "H200" not in _head  # "(H100, measured)": named in the file's first line
assert "median of 15 interleaved rounds" in _head  # the odd count behind "1.19–1.36×" above
import glob  # noqa: E402

SHAPES_TIMED = [(16, 128), (4096, 128), (64, 16384)]  # "the three shapes": where the probe timed CRR against its eager formula
assert {k[1] for k in profile.read_loss_wall() if k[0] == "crr"} == set(vs) == set(SHAPES_TIMED)
assert "tools/wall_probe.py --losses" in profile.read_loss_wall.__doc__  # the committed file is that probe's output
_loss_walls = glob.glob(os.path.join(profile.results_folder(), "**", "*loss-wall*"), recursive=True)
assert [os.path.basename(f) for f in _loss_walls] == ["H100-2026-12-07-loss-wall.txt"]  # the one file of paired rounds

# %% [markdown]
# ## Exercises
#
# Checked exercises work as in [notebook 00](00_associative_scan.ipynb#How-the-exercises-work);
# `print(exercises.task(name))` restates a task.
#
# **`awr_weights`** (a Triton elementwise hook). Write the hook for AWR's weights, from which
# CRR's come, like notebook 05's `dual_clip`.
#
# **Recap: the harness and the formula** (in full: [notebook 05's harness](05_ppo.ipynb#The-harness-for-Triton-elementwise-hooks)).
#
# * **Call:** `exercises.map_hook(awr_weights, (advantages,), (beta, max_weight))` runs your
#   `awr_weights(X, P, offs, m)` on each block of elements and stores what it returns.
# * **`X`:** the inputs as pointers: `X[0]` the advantages $\hat A$.
#   `tl.load(X[0] + offs, mask=m, other=0.0)` loads a block of them.
# * **`P`:** the numbers: `P[0]` is β, `P[1]` is `max_weight`, $w_{\max}$ (20 in both papers).
# * **`offs`, `m`:** the block's flat offsets into each input; the in-bounds mask, False past the end.
# * **Returns:** each element's weight, $\min\big(e^{\hat A/\beta}, w_{\max}\big)$.
#
# **Edge cases:** every advantage above $\beta \ln w_{\max}$ gives `max_weight` (to rounding), even
# where $e^{\hat A/\beta}$ overflows to `inf` in float32. NumPy's "overflow encountered in exp",
# which the interpreter may print, is that `inf`. A NaN advantage (a broken critic) must give a NaN
# weight, as in section 4: loud, not a plausible `max_weight`. Triton's `tl.minimum` and
# `tl.maximum` drop a NaN by default (their `propagate_nan`), so a bare `tl.minimum`, as in
# notebook 05's worked hook, fails here.
#
# <details><summary>Hint 1: where to start</summary>
#
# It is one line of arithmetic after one load, like `ppo_clip_hook` in notebook 05.
# Ask what an elementwise min does with a NaN: does it return the NaN, or the other argument?
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Load the advantages at `offs` with the mask `m`.
# * Compute $\exp(\hat A/\beta)$ with `tl.exp`. In float32 it can be `inf`.
# * Clip it from above at `max_weight`. Any min maps `inf` to `max_weight`; pick one that keeps a
#   NaN a NaN. A bare `tl.minimum` turns a NaN into `max_weight` (20). Its argument
#   `propagate_nan=tl.PropagateNan.ALL` makes it return the NaN.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Take $\beta = 2$, `max_weight` $= 20$ and $\hat A = 0, 2, -2, 10, 1000$:
#
# * $e^{0/2} = 1$, $e^{2/2} = e \approx 2.7183$ and $e^{-2/2} \approx 0.3679$. A negative advantage
#   gives a weight below 1, and nothing clips it from below.
# * $e^{10/2} \approx 148.4$ is clipped to 20.
# * $e^{1000/2}$ is `inf` in float32. The weight must still be exactly 20, neither `inf` nor NaN.
# * If you get 0.0183 where 0.3679 should be, you multiplied by $\beta$ instead of dividing.
# * If you get 0.5000 where 1.0000 should be (and 3.6945 where 2.7183), you divided $e^{\hat A}$
#   by $\beta$ instead of $\hat A$.
#
# ```python
# x = torch.tensor([0.0, 2.0, -2.0, 10.0, 1000.0], device=DEVICE)
# print(exercises.guarded(exercises.map_hook, awr_weights, (x,), (2.0, 20.0)).cpu())
# # must print tensor([ 1.0000,  2.7183,  0.3679, 20.0000, 20.0000])
# ```
#
# </details>
#
# Hint 4 is the solution's skeleton: try Hints 1–3 first.
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# adv = ___  # one masked load of the advantages
# w = ___  # the exponential weight, with the temperature (inf in float32 for a large advantage)
# weight = ___  # one elementwise operation: w, never above max_weight, and a NaN stays NaN
# ```
#
# </details>
#
# A template:
#
# ```python
# @triton.jit
# def awr_weights(X, P, offs, m):
#     beta, max_weight = P[0], P[1]
#     ...
#     return weight
# ```

# %%
# YOUR CODE: replace the next line by your @triton.jit def awr_weights(X, P, offs, m)
awr_weights = None

# %%
exercises.attempt("awr_weights", awr_weights)

# %% [markdown]
# **`awac_weights`** (a Triton kernel of your own, with a reduction). Instead of clipping each
# weight at 20, AWAC's implementation (Nair et al., 2020) normalises them over the batch:
#
# $$w_i = N\cdot\operatorname{softmax}(\hat A/\beta)_i = N\,\frac{e^{\hat A_i/\beta}}{\sum_j e^{\hat A_j/\beta}},$$
#
# so the weights sum to $N$ and average 1. Every weight depends on the whole batch, so the kernel
# must reduce before it writes. Write `awac_weights(advantages, beta)`.
#
# **Recap: the call and the formula.**
#
# * **Call:** the checker calls `awac_weights(advantages, beta)`.
# * **`advantages`:** a 1-D float32 tensor of $N$ advantages. **`beta`:** a float, the temperature β.
# * **Returns:** the weights, shaped like `advantages`: a tensor your `@triton.jit` kernel wrote.
# * **Formula:** $w_i = N\,e^{\hat A_i/\beta - M} / \sum_j e^{\hat A_j/\beta - M}$ with
#   $M = \max_j \hat A_j/\beta$: the formula above, with the max subtracted so that no `exp` overflows.
# * **Plan:** one program is enough. It walks the tensor in blocks of `BLOCK` elements (1024, say)
#   three times: the max $M$, then the sum of $e^{\hat A/\beta - M}$, then the weights.
# * **One program is a simplification** that keeps this kernel short. Notebook 05's
#   `two_stage_mean` rejects a one-program sum, because one program runs on one SM (one of the
#   GPU's multiprocessors) and leaves the others idle on a large input; open question 4 (c)
#   sketches the many-program version.
#
# **Edge cases:** where $\hat A/\beta$ is above 88.7, `exp` overflows float32 to `inf`. If every
# $\hat A/\beta$ is below −104, the sum of the exponentials is 0. Lanes past $N$ must change neither
# the max nor the sum. (A store pass that loads them with `other=0.0` may print a harmless
# "overflow encountered in exp": the store's mask drops those lanes.)
#
# <details><summary>Details (optional): a GPU exp reaches 0 sooner</summary>
#
# A GPU `exp` that flushes subnormals to 0 reaches 0 near −87.3, not −104. There $e^x$ drops below
# 1.18e-38, the smallest normal float32.
#
# </details>
#
# <details><summary>Hint 1: where to start</summary>
#
# Notebook 05's `two_stage_mean` reduced a tensor with `tl.sum` over blocks, many programs each
# summing its own block (section 3 here reuses that reduction without showing its code). Here one
# program does it, with a `for start in range(0, n, BLOCK)` loop inside the kernel and a running
# total, as in 00b's chunk loop. Why the max? Softmax does not change when every $\hat A_i/\beta$
# moves by the same number. After subtracting the max, every exponent is at most 0, so no term is
# `inf`. And at least one term of the sum is 1, so the sum is never 0.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Launch one program: `kernel[(1,)](advantages, w, beta, n, BLOCK=1024)`.
# * Pass 1: `top`, the max of $\hat A/\beta$ over every block (`tl.max`, then `tl.maximum` with the
#   running max).
# * Pass 2: `total`, the sum of `tl.exp(x - top)` over every block.
# * Pass 3: store `n * tl.exp(x - top) / total`, masked.
# * Load the lanes past $N$ with `other=float("-inf")`: they never win the max, and `exp` gives them 0
#   in the sum.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# With $\beta = 1$ and $\hat A = (0, 0, \ln 2)$ the exponentials are 1, 1 and 2, their sum 4, so
# $w = 3 \cdot (1, 1, 2)/4 = (0.75, 0.75, 1.5)$. Shift every advantage by 1000, up or down: the
# weights must not move. Without the max, $+1000$ gives `nan` (`inf / inf`) and $-1000$ gives `nan`
# (`0 / 0`). If you get 0.25 and 0.5, you left out the factor $N$.
#
# ```python
# for shift in (0.0, 1000.0, -1000.0):
#     a = torch.tensor([0.0, 0.0, np.log(2.0)], dtype=torch.float32, device=DEVICE) + shift
#     print([round(w, 4) for w in exercises.guarded(awac_weights, a, 1.0).tolist()])  # must print [0.75, 0.75, 1.5], three times
# ```
#
# </details>
#
# Hint 4 is the solution's skeleton: try Hints 1–3 first.
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# offs = tl.arange(0, BLOCK)
# top = float("-inf")
# for start in range(0, n, BLOCK):
#     x = tl.load(A + start + offs, mask=start + offs < n, other=___) / beta
#     top = tl.maximum(top, tl.max(x, 0))
# total = 0.0
# # ... a second loop: total += the sum of exp(x - top) over the block
# # ... a third loop: tl.store(W + start + offs, ___, mask=start + offs < n)
# ```
#
# </details>

# %%
def awac_weights(advantages, beta):
    # YOUR CODE: launch your @triton.jit kernel; return the tensor it wrote
    raise NotImplementedError

# %%
exercises.attempt("awac_weights", awac_weights)

# %% [markdown]
# Without a checker:
#
# *(Optional: not on the minimum path. Answer each in its cell below: your teacher's grader
# collects the answers from them.)*
#
# 1. Compute AWAC's weights, which clip nothing, from `crr_loss(...).advantages` (with your
#    `awac_weights`, or a torch softmax). Compare them with CRR-exp's for a batch with one huge
#    advantage. What does `max_weight` protect against that the softmax does not?
#
#    *Check yourself:* with one advantage 1000 above all the others and β = 1, in float32, AWAC
#    gives it exactly $N$ and every other element 0. CRR-exp gives it 20 and leaves the others'
#    weights as they were.
# 2. Off-policy multi-step targets. Use the $\lambda = 0.5$ target of section 2 on an offline
#    dataset whose actions come from a behaviour policy $\mu \ne \pi$. Which expectation does $G_t$
#    then estimate? Why is the one-step target unbiased for $Q^\pi$ (given $\bar Q$), while the
#    multi-step one is not? (Two multi-step targets built for $\mu \ne \pi$, Retrace and
#    Watkins's Q(λ), are notebook 03's exercises.)
# 3. With i.i.d. critic values, CRR-binary with a max baseline over $K$ samples keeps a fraction
#    $1/(K+1)$ of the dataset's actions (section 5 checks it at $K = 5$). Derive why. Then measure
#    the fraction for $K = 1, 2, 4, \dots, 64$.
#
#    *Check yourself:* at $K = 64$ the max keeps about 1.5 % of the actions; the mean baseline
#    keeps about half at every $K$.
# 4. Your `awac_weights` runs one program that reads the advantages three times.
#    * (a) At $N = 10^6$ float32 advantages, how many bytes does it move? How many of the GPU's
#      multiprocessors does one program use? *Check yourself:* 16 MB.
#    * (b) An *online softmax* keeps a running max $m$ and a running sum $s$ of $e^{x - m}$. When a
#      block raises the max, it rescales $s$ first. Write its update, so that one pass gives both
#      the max and the sum. How many reads are left? *Check yourself:* run over the blocks, your
#      update gives the same max and sum as two separate passes, to rounding.
#    * (c) Sketch a version with many programs and a second stage, as notebook 05's
#      `two_stage_mean`: each program reduces its blocks to a pair $(m, s)$, and the second stage
#      combines the pairs. Every grouping of the pairs gives the same result in exact arithmetic:
#      why? What does a fixed grouping still buy?
#
# %% jupyter={"source_hidden": true}
# Checks: the "Check yourself" targets, verified (CI runs them; skip when reading)
import math  # noqa: E402

_q = torch.tensor([0.3, -0.5, 0.1, 1001.0, -1.2, 0.8, 0.0, -0.2], device=DEVICE)  # 1: one advantage 1000 above
with np.errstate(over="ignore"):  # e^1000 is inf in float32 (the interpreter's NumPy would warn): the clip's case
    _out = rl.crr_loss(torch.full((8,), -1.0, device=DEVICE), _q, torch.zeros(8, device=DEVICE), backend=KERNEL)
_awac = 8 * torch.softmax(_out.advantages / 1.0, 0)  # N · softmax(Â/β), float32
_others = torch.arange(8, device=DEVICE) != 3
assert (_out.advantages[3] - _out.advantages[_others] >= 1000).all()  # "1000 above all the others"
assert _awac[3] == 8.0 and (_awac[_others] == 0).all()  # AWAC: "exactly N and every other element 0"
assert _out.weights[3] == 20.0  # CRR-exp: "20" ...
torch.testing.assert_close(_out.weights[_others], _out.advantages[_others].exp())  # ... "the others as they were"
_g = torch.Generator().manual_seed(3)  # 3: 20,000 states, i.i.d. standard-normal critic values
for _K in (1, 4, 64):
    _qq = torch.randn(20_000, generator=_g, dtype=torch.float64)
    _s = torch.randn(20_000, _K, generator=_g, dtype=torch.float64)
    _kept = {red: rl.crr_loss(torch.zeros(20_000, dtype=torch.float64), _qq, _s, mode="binary",
                              baseline_reduce=red, backend="torch").weights.mean().item() for red in ("max", "mean")}
    assert abs(_kept["max"] - 1 / (_K + 1)) < 4 * (1 / (_K + 1) * _K / (_K + 1) / 20_000) ** 0.5
    assert abs(_kept["mean"] - 0.5) < 4 * (0.25 / 20_000) ** 0.5  # "about half at every K"
assert round(100 / 65, 1) == 1.5  # "at K = 64 ... about 1.5 %"
assert 3 * 4 * 10 ** 6 + 4 * 10 ** 6 == 16 * 10 ** 6  # 4 (a): three reads and a write of 4 MB: "16 MB"
_x = 40 + 3 * torch.randn(10 * 1024 + 100, generator=_g, dtype=torch.float64)  # 4 (b): blocks of 1024, a partial last
_m_run, _s_run = -math.inf, 0.0
for _start in range(0, len(_x), 1024):  # the online update: rescale the running sum when the max grows
    _blk = _x[_start:_start + 1024]
    _m_new = max(_m_run, _blk.max().item())
    _s_run = _s_run * math.exp(_m_run - _m_new) + torch.exp(_blk - _m_new).sum().item()
    _m_run = _m_new
assert _m_run == _x.max().item()  # "the same max ...
assert math.isclose(_s_run, torch.exp(_x - _x.max()).sum().item(), rel_tol=1e-12)  # ... and sum ..., to rounding"

# %% [markdown] tags=["answer-1"]
# **Answer 1.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-2"]
# **Answer 2.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-3"]
# **Answer 3.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-4"]
# **Answer 4.** *Your answer here (code for it: in cells under this one).*

# %% [markdown]
# ## What you now know
#
# * CRR clones the dataset's actions weighted by $\hat A_t = Q(s_t, u_t) - \hat V_t$: $\min(e^{\hat A_t/\beta},
#   w_{\max})$ or $[\hat A_t > 0]$, with loss $-\frac{1}{N}\sum_t w_t \log\pi(u_t|s_t)$.
# * The critic's target is `rl.td_lambda` with λ = 0, a scan that carries nothing.
# * The weights are constants, so the gradient is $-w_t/N$, on $\log\pi$ alone. In exp mode a NaN
#   critic value gives a NaN loss; binary mode drops it.
# * AWAC's weights, $N\cdot\operatorname{softmax}(\hat A/\beta)$, need a kernel that reduces (the
#   max, then the sum) before it writes; subtracting the max keeps `exp` from overflowing.

# %% [markdown]
# For maintainers: how the package implements this notebook's kernels is in [notebook 13c, Inside CRR](13c_inside_the_package.ipynb#Inside-CRR).

# %% jupyter={"source_hidden": true}
# Checks: the recap of awr_weights, tl.minimum and tl.maximum drop a NaN by default (CI runs them; skip when reading)
@triton.jit
def _defaults_min_max(X, P, offs, m):  # Triton's defaults: propagate_nan not given
    x = tl.load(X[0] + offs, mask=m, other=0.0)
    return tl.minimum(x, P[0]) + tl.maximum(x, P[1])


assert inspect.signature(tl.minimum).parameters["propagate_nan"].default == tl.PropagateNan.NONE
assert inspect.signature(tl.maximum).parameters["propagate_nan"].default == tl.PropagateNan.NONE
_out = exercises.map_hook(_defaults_min_max, (torch.tensor([float("nan"), 1.0], device=DEVICE),), (20.0, 0.0))
assert _out.tolist() == [20.0, 2.0], _out  # NaN: min gives 20 and max gives 0, no NaN; 1: min 1 + max 1

# %% jupyter={"source_hidden": true}
# Checks: awac_weights' edge cases, where float32 exp overflows and underflows (CI runs them; skip when reading)
_f32 = np.finfo(np.float32)
assert round(float(np.log(_f32.max)), 1) == 88.7  # exp overflows to inf above 88.7
assert round(float(np.log(_f32.smallest_subnormal)), 1) == -103.3  # the subnormal limit: 0 below about −104
with np.errstate(under="ignore"):
    assert np.exp(np.float32(-103.9)) > 0 and np.exp(np.float32(-104.0)) == 0
assert round(float(np.log(_f32.tiny)), 2) == -87.34 and np.isclose(_f32.tiny, 1.18e-38, rtol=1e-3)  # smallest normal
