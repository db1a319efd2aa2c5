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
# * **You will learn:** critic-regularized regression (CRR): its advantage weights, its baselines
#   from sampled actions, and its loss as an associative reduction. You also write AWR's weights as
#   a Triton hook, and AWAC's weights, normalised over the batch, as a Triton kernel with a
#   reduction.
# * **Time:** 3–3.5 h with the open questions; 1.25–2 h for the reading and the two checked
#   exercises.
# * **Needs:** notebook 05 (and 04's Retrace for the second open question). No GPU.
# * **Conventions:** the course's flags, values and hook signatures:
#   [Names and signatures](GLOSSARY.md#Names-and-signatures) in the glossary.
# * **Minimum path:** sections 1, 2 and 4, and the checked exercises `awr_weights`, which uses
#   notebook 05's harness, and `awac_weights`, a kernel of your own. Section 3, which reuses
#   notebook 05's reduction, sections 5 and 6 and the open questions can wait.
#
# Critic Regularized Regression (CRR) learns a policy from a fixed dataset, without new
# interaction. It avoids two failures:
#
# * Plain behaviour cloning copies every action in the data, good or bad.
# * Off-policy actor-critic methods follow the critic's gradient towards actions the data never
#   tried, where the critic has seen no data and is often wrong. CRR still asks the critic about
#   such actions, in its baseline and in its critic's target, but it never follows the critic's
#   gradient towards them.
#
# CRR clones the dataset's actions, **weighted by how much better the critic thinks they are**
# than what the current policy would do,
#
# $$\hat A_t = Q(s_t, u_t) - \hat V_t, \qquad
#   w_t = \begin{cases} \min\big(e^{\hat A_t/\beta},\ w_{\max}\big) & \text{CRR-exp} \\
#                       [\hat A_t > 0] & \text{CRR-binary} \end{cases}, \qquad
#   \text{loss} = -\frac{1}{N}\sum_{t\ \text{unmasked}} w_t \log\pi(u_t|s_t),$$
#
# Here $u_t$ is the dataset's action at step $t$. As in notebooks 03 and 04, $u$ is an action,
# because $a_t$ is the scan's multiplier (section 2 uses it). $\beta$ is a temperature, and
# $[\hat A_t > 0]$ is 1 where the advantage is positive and 0 elsewhere. The baseline is
# $\hat V_t \approx V(s_t)$. The paper estimates it from $K$ actions sampled from the policy, as
# $\frac{1}{K}\sum_j Q(s_t, u_j)$. A max over the samples instead is a stricter filter. The
# weights are constants, so the gradient reaches only $\log\pi$.
#
# The clip $w_{\max} = 20$ keeps one lucky critic error from dominating a batch. It comes from AWR,
# advantage-weighted regression (Peng et al., 2019), which clips its weights $e^{\hat A/\beta}$ at
# 20. The critic is trained by
# its own TD loss towards the one-step target $r_t + \gamma\,\mathbb{E}_{u'\sim\pi} Q'(s_{t+1}, u')$.
#
# Two parts of this computation are what the course is about:
#
# * The critic's target is `td_lambda` with $\lambda = 0$, a scan that carries nothing (section 2).
# * The policy loss is a **sum**, an associative reduction. `rl.crr_loss` fuses it with the
#   weights.
#
# <details><summary>Details: the paper, and where the exponential comes from</summary>
#
# Wang, Novikov, Żołna, Springenberg, Reed, Shahriari, Siegel, Merel, Gulcehre, Heess, de
# Freitas: *Critic Regularized Regression*, NeurIPS 2020, arXiv 2006.15134. The exponential form
# is the closed-form solution of KL-regularised policy improvement (as in AWR and MPO).
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
# the Triton kernels: compiled on a GPU, in the interpreter on a CPU (backend="auto" takes the PyTorch path on a CPU)
KERNEL = "triton"
rng = np.random.default_rng(7)
n = lambda x: x.detach().cpu().numpy()  # noqa: E731

# %% [markdown]
# ## 1. The loop
#
# The ground truth is a float64 NumPy function. Two small cases by hand follow it:

# %%
print(inspect.getsource(reference.crr_loss))

# %% [markdown]
# Four dataset steps with $V(s_t) = 1$, $\beta = 1$ and $Q(s_t, u_t) = 1,\ 1+\ln 2,\ 1-\ln 2,\ 6$.
# So the advantages are $0, \ln 2, -\ln 2, 5$. The actions' log-likelihoods are $-1, -2, -1, -0.5$:
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
# Now a sampled baseline. The dataset action has $Q(s, u) = 1.5$. The critic's values of three
# actions sampled from the policy are 0, 1, 2.
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
# The plot shows how the two filters weigh an advantage: the exponential for several
# temperatures β, and the binary step. The curves are the weights that the kernel returns
# (`crr_loss(...).weights`), with $Q = \hat A$ and $V = 0$:

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
for ax in axes:
    ax.plot(n(A_grid), n(w_b), "k", lw=2, drawstyle="steps-post", label="binary")
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
# Small β makes the exponential nearly a step. Every advantage above $\beta \ln w_{\max}$ gets the
# clip $w_{\max}$, and only those below $\beta \ln w_{\max}$ are still ranked. Large β
# flattens it towards plain behaviour cloning ($w \equiv 1$). The binary filter ignores how much
# better an action is.
#
# ## 2. The credit assignment: the critic's target is a (degenerate) scan
#
# Here you compute the critic's target, a scan that carries nothing, and then the policy loss.
#
# The critic learns $Q(s_t, u_t)$ by TD towards
# $G_t = r_t + \gamma(1-\text{term}_t)\,\mathbb{E}_{u'\sim\pi} Q'(s_{t+1}, u')$. The expectation
# is estimated from $K$ actions sampled at the next state. $Q'$ is a target network, a slowly
# updated copy of the critic.
#
# That is `td_lambda` with $\lambda = 0$ (notebook 03). The scan's coefficient
# $a_t = \gamma\lambda$ is 0, so no step carries into the one before it. Every step is its own
# one-step target. The dataset is stored as trajectories (rows B × steps T), right-padded to a
# common length:

# %%
B, T, K = 4, 24, 5
rewards = torch.randn(B, T, device=DEVICE)
term = torch.rand(B, T, device=DEVICE) < 0.05
mask = torch.ones(B, T, dtype=torch.bool, device=DEVICE)
mask[1, -7:] = False  # a shorter trajectory, right-padded
next_q_samples = torch.randn(B, T, K, device=DEVICE)   # Q'(s_{t+1}, u'_j), u'_j ~ π(·|s_{t+1})
next_values = next_q_samples.mean(-1)

target = rl.td_lambda(rewards, next_values, gamma=0.99, lambda_=0.0, terminated=term, mask=mask, backend=KERNEL)
expected = reference.td_lambda(n(rewards), n(next_values), gamma=0.99, lambda_=0.0, terminated=n(term), mask=n(mask))
np.testing.assert_allclose(n(target), expected, rtol=1e-5, atol=1e-5)
one_step = torch.where(mask, rewards + 0.99 * torch.where(term, 0.0, next_values), 0.0)
torch.testing.assert_close(target, one_step)
print("td_lambda(λ=0) == reference == r + γ(1-term)·E Q'(s', u')")

# %% [markdown]
# The same call with $\lambda > 0$ is a real scan, which gives a multi-step target. The paper
# stays at one step, because the dataset's later actions come from the behaviour policy that
# collected the data, not from $\pi$ (open question 2 explores this).

# %%
target_05 = rl.td_lambda(rewards, next_values, gamma=0.99, lambda_=0.5, terminated=term, mask=mask,
                         backend=KERNEL)
np.testing.assert_allclose(n(target_05), reference.td_lambda(n(rewards), n(next_values), gamma=0.99, lambda_=0.5,
                                                             terminated=n(term), mask=n(mask)), rtol=1e-5, atol=1e-5)
q_sa = torch.randn(B, T, device=DEVICE, requires_grad=True)  # the critic's Q(s_t, u_t)
critic_loss = ((q_sa - target) ** 2)[mask].mean()          # the paper uses a distributional critic
print("critic TD loss", critic_loss.item())

# %% [markdown]
# Then the policy loss, checked against the reference. It uses the critic's $Q(s_t, u_t)$. Its
# baseline is the critic's values of $K$ actions sampled from the policy at $s_t$:

# %%
log_probs = -2.0 * torch.rand(B, T, device=DEVICE) - 0.1  # log π(u_t|s_t) of the dataset's actions
q_samples = torch.randn(B, T, K, device=DEVICE)            # Q(s_t, u_j), u_j ~ π(·|s_t)
out = rl.crr_loss(log_probs, q_sa.detach(), q_samples, beta=1.0, mask=mask, backend=KERNEL)
e_loss, e_w, e_adv = reference.crr_loss(n(log_probs), n(q_sa), n(q_samples), beta=1.0, mask=n(mask))
np.testing.assert_allclose(out.loss.item(), e_loss, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(n(out.weights), e_w, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(n(out.advantages), e_adv, rtol=1e-5, atol=1e-6)
print(f"policy loss {out.loss.item():.4f}; kept by the binary filter: {(n(out.advantages) > 0)[n(mask)].mean():.0%}")

# %% [markdown]
# ## 3. The loss is an associative reduction
#
# CRR's loss uses PPO's deterministic two-stage sum (`_reduce`). Only what is summed differs.
# There are two statistics, $w_t\log\pi_t$ (0 where masked) and the count $N$ of unmasked steps.
# The loss is $-\sum_t w_t\log\pi_t / N$.
#
# The cell checks the loss against the plain sum. It also checks that the loss, the weights, the
# advantages and the gradient are bitwise identical from call to call:
#
# <details><summary>Details: where the sum is explained</summary>
#
# Notebook 05, section 3 explains why a sum is a scan, why the partials are added in a fixed
# order rather than by float atomics, and how the tiles are cut.
#
# </details>

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
# One pass reads $\log\pi$, $Q$ and the $K$ baseline samples, and writes the weights and
# advantages. It returns the two statistics that the reduction sums, $w\log\pi$ and the count of
# unmasked steps.
#
# * **The weights are constants**, so $\partial\,\text{loss}/\partial\log\pi_t = -w_t/N$, and the
#   backward needs $w$ alone. It reads $w$, or computes it again from $Q$ and the baseline.
# * **The baseline is reduced in the kernel.** A $V(s)$ baseline is passed as $K = 1$. $K$
#   sampled values sit in a trailing dimension, and the kernel folds them into a running sum and
#   a running max as it loads them. The mean or max is never written to memory.
# * **Outputs nobody reads cost bytes.** A training step that logs neither the weights nor the
#   advantages passes `need_weights=False`. The forward then writes nothing per element, and the
#   backward reads $Q$ and the baseline instead of $w$.
# * **The binary filter is strict.** A zero advantage is not "better than the policy", so it gets
#   weight 0.
# * **NaN fails loudly in exp mode.** A NaN from a broken critic gives a NaN weight and a NaN
#   loss, not a plausible $w_{\max}$. Binary mode drops it silently (`NaN > 0` is false), as the
#   reference does.
# * **Padding is never read**, so it may hold anything.
#
# <details><summary>Details: the names in the printout</summary>
#
# The backward reads the weights the forward wrote. When the forward wrote none
# (`need_weights=False`, below), it computes them again with the forward's own helper.
#
# In the printout, `P[P_K]` is $K$, `s_k` is the stride between the $K$ samples, and `P[P_BINARY]`
# and `P[P_MAX_BASELINE]` are the two modes' switches. The helpers (`load_mask`, `load`, `param`,
# `store`, `store_grad`) are in the glossary's table of them. The binary weight tests
# `b_adv > 0`.
#
# </details>
#
# The next cell prints the three functions. Its printout is folded and optional.

# %% jupyter={"outputs_hidden": true}
for fn in (crr._weights, crr._crr_forward, crr._crr_backward):
    print(inspect.getsource(getattr(fn, "fn", fn)))

# %% [markdown]
# <details><summary>Details: strides, compile-time branches, the gradient, NaN propagation</summary>
#
# * The samples are read with their own stride `SX[BASELINE][2]`. `K` is a runtime loop bound
#   (`P[P_K]`), not a `tl.constexpr`.
# * `need_weights=False` removes two of the forward's five streams of memory traffic. The tests
#   `if O[OUT_WEIGHTS] is not None` and `if X[WEIGHTS] is not None` are decided when the kernel
#   is compiled.
# * The gradient has no term through $e^{\hat A/\beta}$. The critic is trained by its own loss,
#   and its values enter the policy update only as weights.
# * The NaN comes through because of `propagate_nan=tl.PropagateNan.ALL` in the max and the clip.
#
# </details>
#
# ## 5. Kernel against the loop
#
# Here the kernel meets the reference on random batches. They have padding that holds NaN, both
# modes, and a small `max_weight` so that the clip binds. Both baseline shapes are used: $V(s)$,
# and $K$ sampled Q's reduced by mean or max. The samples come from a sampler that stores them
# $K$-major, as $(K, B, T)$. The kernel reads the permuted view through its strides:

# %%
shape = (5, 29)
lp = torch.randn(shape, device=DEVICE) - 1.0
q = torch.randn(shape, device=DEVICE)
v = torch.randn(shape, device=DEVICE)
samples = torch.randn((K,) + shape, device=DEVICE).permute(1, 2, 0)  # (B, T, K), not contiguous
mask = torch.rand(shape, device=DEVICE) > 0.2
mask[0, :6] = False  # left padding
lp_p, q_p, v_p = (torch.where(mask, x, torch.nan) for x in (lp, q, v))

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

# %% [markdown]
# With a $V(s)$ baseline, `baseline_reduce` has nothing to reduce: with $K = 1$, mean and max
# agree. With samples, the max is never below the mean, so it keeps no more actions:

# %%
by_reduce = {r: rl.crr_loss(lp, q, samples, mode="binary", baseline_reduce=r, backend=KERNEL).weights
             for r in ("mean", "max")}
assert (by_reduce["max"] <= by_reduce["mean"]).all()
print({r: f"{w.mean().item():.0%} kept" for r, w in by_reduce.items()})

# %% [markdown]
# Gradients in float64 against autograd of the PyTorch path (which detaches the weights), and
# the rule $-w/N$ itself:

# %%
lp64 = lp.double().requires_grad_()
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
# With `need_weights=False` no weights are written. The loss is the same, and so is the
# gradient, from the weights computed again:

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
# ## 6. Optional: profile it
#
# **Takeaway.** On the benchmark's GPU, the eager PyTorch formula with its backward keeps the GPU
# busy at least 2.8 times as long as the fused loss does.
# [Notebook 09, section 4](09_benchmarks.ipynb#4.-Fused-losses-against-their-eager-formulas) has the measurements, and shows why CRR's
# short eager formula is still the quicker Python call; the folded cell below prints the committed
# rows.

# %% jupyter={"outputs_hidden": true, "source_hidden": true}
RUN, RES, h200 = profile.committed_or_empty("crr")  # every row of CRR's loss in the committed H200 run
timed = {(r["B"], r["T"]) for r in h200 if r["impl"] == "pytorch_eager"}  # where the eager formula was timed
quoted = [r for r in h200 if r["impl"] in ("rltriton_lite", "pytorch_eager") and (r["B"], r["T"]) in timed
          and r["pass"] == "fwd+bwd"]
if quoted:
    print(f"CRR's loss with its backward, {RES['gpu']}, {RUN}.json: measured there, not here")
    print(profile.committed_table(quoted, leave_out=("wall_us", "vs_ours")))  # no single-timing wall figures: see 09
# every row, and a chart of them: profile.committed("crr")

# %% jupyter={"source_hidden": true}
# Checks: the claims above, on the committed rows (CI runs them; skip when reading)
fused = profile.fused_against_eager("crr") if h200 else {}  # at the shapes where the eager formula was timed
assert not h200 or len(fused) == 3 and len(quoted) == 6  # the six rows printed
x_gpu = [f["eager_gpu_us"] / f["ours_gpu_us"] for f in fused.values()]
assert not h200 or int(10 * min(x_gpu)) / 10 == 2.8  # "busy at least 2.8 times as long as the fused loss"
# notebook 09's paired rounds: the eager formula's wall time ÷ ours, with the backward, the median of its rounds
paired = {s: profile.read_loss_wall()["crr", s, "fwd+bwd", "pytorch_eager"][1] for s in timed} if h200 else {}
assert not h200 or set(paired) == set(fused) and max(paired.values()) < 1  # "still the quicker Python call"
assert not h200 or RES["gpu"] == "NVIDIA H200"  # "the benchmark's GPU": the committed run's card

# %% [markdown]
# ## Exercises
#
# Checked exercises work as in notebooks 00 and 00b. Write the starter's function, then run the cell
# after it, which checks it. `print(exercises.task(name))` restates the task. Solutions are in
# `notebooks/solutions/`.
#
# **`awr_weights`** (a Triton elementwise hook). Write the hook for AWR's weights (Peng et al.,
# 2019). CRR's weights come from AWR's. The hook runs as
# `exercises.map_hook(awr_weights, (advantages,), (beta, max_weight))`, like notebook 05's
# `dual_clip`.
#
# The harness is described in
# [notebook 05, "The harness for Triton elementwise hooks"](05_ppo.ipynb#The-harness-for-Triton-elementwise-hooks).
# Its hook's arguments are described in
# [notebook 01, section 5, "The harness for Triton prologues"](01_discounted_return.ipynb#5.-The-harness-for-Triton-prologues).
#
# * **Inputs:** `X = (advantages,)`; `P = (beta, max_weight)`.
# * **Returns:** the weight $\exp(\hat A/\beta)$ of each element, clipped at `max_weight` (20 in both
#   papers).
# * **Edge cases:** every advantage above $\beta \ln w_{\max}$ ($w_{\max}$ = `max_weight`) gives
#   `max_weight` (to rounding), even where $\exp(\hat A/\beta)$ overflows to infinity in float32.
#   On a CPU the interpreter may then print NumPy's "overflow encountered in exp" warning. The
#   warning comes from the expected inf, which the clip turns into `max_weight`.
#
# <details><summary>Hint 1: where to start</summary>
#
# It is one line of arithmetic after one load, like `ppo_clip_hook` in notebook 05.
# Ask what an elementwise min does with `inf`.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Load the advantages at `offs` with the mask `m`.
# * Compute $\exp(\hat A/\beta)$ with `tl.exp`. In float32 it can be `inf`.
# * Clip it from above at `max_weight`. Pick an operation that maps `inf` to `max_weight` by itself.
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
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# adv = tl.load(X[0] + offs, mask=m, other=0.0)
# w = tl.exp(adv / beta)  # inf once adv / beta > 88.7 in float32: must you catch it?
# weight = ___  # ___: w, but never above max_weight (an inf gives max_weight)
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
# **`awac_weights`** (a Triton kernel of your own, with a reduction). AWR and CRR clip each weight
# at 20. AWAC's implementation (Nair et al., 2020) normalises them over the batch instead:
#
# $$w_i = N\cdot\operatorname{softmax}(\hat A/\beta)_i = N\,\frac{e^{\hat A_i/\beta}}{\sum_j e^{\hat A_j/\beta}},$$
#
# so the weights sum to $N$ and average 1. Every weight depends on the whole batch, so the kernel
# must reduce before it writes. Write `awac_weights(advantages, beta)`.
#
# * **Inputs:** `advantages`, a 1-D float32 tensor of $N$ advantages; `beta`, a float.
# * **Returns:** the weights, a tensor your `@triton.jit` kernel wrote, shaped like `advantages`.
# * One program is enough. It walks the tensor in blocks of `BLOCK` elements (1024, say) three
#   times: the max of $\hat A/\beta$, then the sum of $e^{\hat A/\beta - \max}$, then the weights.
# * **Edge cases:** $\hat A/\beta$ far above 88.7, where `exp` overflows float32 to `inf`, and far
#   below 0, where it underflows to 0 for every element. Lanes past $N$ must change neither the
#   max nor the sum. A correct kernel whose store pass loads those lanes with `other=0.0` may make
#   the interpreter print NumPy's "overflow encountered in exp" (with advantages near −1000, such a
#   lane computes $e^{0 - \max} = $ `inf`). As with `awr_weights`, the warning is harmless: the
#   store's mask drops those lanes.
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
# *(Answer each in its cell below: your teacher's grader collects the answers from them.)*
#
# 1. CRR's clip at 20 comes from AWR (Peng et al., 2019), which clips its weights $e^{\hat A/\beta}$
#    at a maximum of 20. AWAC's implementation (Nair et al., 2020) normalises them over the batch
#    instead and clips nothing: your `awac_weights`. Compute them from `crr_loss(...).advantages`
#    (with your kernel, or a torch softmax), and compare them with CRR-exp's for a batch with one
#    huge advantage. What does `max_weight` protect against that the softmax does not?
# 2. Off-policy multi-step targets, in three parts (one answer cell).
#    * (a) Use the $\lambda = 0.5$ target of section 2 on an offline dataset whose actions come
#      from a behaviour policy $\mu \ne \pi$. Which expectation does $G_t$ then estimate? Why is
#      the one-step target unbiased for $Q^\pi$ (given $Q'$), while the multi-step one is not?
#    * (b) Correcting a multi-step *Q* target is Retrace's job. Retrace(λ) cuts the trace with
#      the truncated importance weights $c_s = \lambda\min\big(1, \pi(u_s|s_s)/\mu(u_s|s_s)\big)$,
#      and notebook 04's exercise `retrace` writes its target as a reverse scan. With it, check on
#      a small example (noisy rewards) that with an exact $Q' = Q^\pi$ its mean is $Q^\pi$
#      although $\mu \ne \pi$, while the uncorrected λ = 0.5 target's mean is not.
#    * (c) Set $c_s = \lambda$ (no importance weight; this is Harutyunyan et al.'s
#      $Q^\pi(\lambda)$, not section 2's λ-return, which has no $-Q(s_{t+1}, u_{t+1})$ correction):
#      is the mean still $Q^\pi$? Then make $Q'$ inexact (add a bias): what do the weights buy?
# 3. With i.i.d. critic values, what fraction of dataset actions does CRR-binary keep with a max
#    baseline over $K$ samples? Measure it for $K = 1, 2, 4, \dots, 64$ and compare with
#    $1/(K+1)$.
#
# <details><summary>Details: Retrace and V-trace</summary>
#
# Retrace: Munos, Stepleton, Harutyunyan, Bellemare, NeurIPS 2016. V-trace (notebook 04) corrects
# *state-value* targets the same way.
#
# </details>

# %% [markdown] tags=["answer-1"]
# **Answer 1.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-2"]
# **Answer 2.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-3"]
# **Answer 3.** *Your answer here (code for it: in cells under this one).*

# %% [markdown]
# ## What you now know
#
# * CRR clones the dataset's actions weighted by $\hat A_t = Q(s_t, u_t) - \hat V_t$: $\min(e^{\hat A_t/\beta},
#   w_{\max})$ or $[\hat A_t > 0]$, with loss $-\frac{1}{N}\sum_t w_t \log\pi(u_t|s_t)$.
# * Small β makes the exponential nearly a step: every advantage above $\beta \ln w_{\max}$ gets
#   $w_{\max}$. Large β tends to plain behaviour cloning. The clip keeps one lucky critic error
#   from dominating a batch.
# * The baseline is $V(s_t)$ or the critic's values of $K$ actions sampled from the policy,
#   reduced by mean or max. The max never keeps more actions than the mean. CRR-binary drops a
#   zero advantage.
# * The weights are constants, so the gradient is $-w_t/N$, on $\log\pi$ alone. That is why
#   `need_weights=False` gives the same loss and gradient without writing the weights.
# * The critic's target is `rl.td_lambda` with λ = 0, a scan that carries nothing. λ > 0 on a
#   dataset would follow the behaviour policy's actions.
# * In exp mode a NaN critic value gives a NaN loss, so it fails loudly. Binary mode drops it.
# * AWAC normalises the weights over the batch instead of clipping them, $N\cdot\operatorname{softmax}(\hat A/\beta)$:
#   a kernel that reduces (the max, then the sum) before it writes. Subtracting the max first keeps
#   `exp` from overflowing and makes the sum at least 1, although single terms may still underflow to 0.
