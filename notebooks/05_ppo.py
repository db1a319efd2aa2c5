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
# # 05 — PPO: a scan for the advantages, a reduction for the loss
#
# * **You will learn:** PPO's clipped surrogate loss and its advantages from GAE's scan; a sum in
#   two stages and a fixed order, the same bits on every call; dual-clip PPO and the clip's gradient
#   as Triton hooks.
# * **Time:** 3.5–5 h with the open questions; 1.25–2 h for the reading and the checked
#   exercises.
# * **Needs:** notebook 02; 00b (grids and masked loads) for the kernel exercise `two_stage_mean`.
#   No GPU.
# * **Conventions:** the course's flags, values and hook signatures:
#   [Names and signatures](GLOSSARY.md#names-and-signatures) in the glossary.
# * **Minimum path:** sections 1–4, the harness and the checked exercises `dual_clip`,
#   `ppo_clip_grad` and `two_stage_mean` (which builds on section 3). The rest can wait.
# * **Checks cells** (folded, starting `# Checks`): skip reading their code; where the text says a
#   folded cell prints a table, read its output.
#
# Proximal Policy Optimization (PPO) improves the policy that collected a rollout, with several
# epochs of minibatch steps on the same data.
#
# Its starting point is the importance-sampled surrogate $\mathbb{E}_t[\rho_t \hat A_t]$. Here
# $\hat A_t$ is the advantage estimate of step $t$, and
# $\rho_t = \pi(u_t|s_t) / \pi_{\text{old}}(u_t|s_t) = e^{\log\pi_t - \log\pi^{\text{old}}_t}$ is
# the probability ratio of the action $u_t$ taken there. Maximised freely, the surrogate moves the
# policy too far from the data. So PPO clips the ratio to $[1-\epsilon, 1+\epsilon]$ and takes
# the smaller of the clipped and unclipped terms:
#
# $$L^{\text{CLIP}} = \mathbb{E}_t\Big[\min\big(\rho_t \hat A_t,\;
#   \operatorname{clip}(\rho_t, 1-\epsilon, 1+\epsilon)\, \hat A_t\big)\Big], \qquad
#   \text{loss} = -\frac{1}{N}\sum_{t\ \text{unmasked}}
#   \min\big(\rho_t \hat A_t,\; \operatorname{clip}(\rho_t, 1-\epsilon, 1+\epsilon)\, \hat A_t\big).$$
#
# $N$ counts the unmasked elements, those that are not padding.
#
# Two parts of this computation are what the course is about:
#
# * The advantages $\hat A_t$ come from GAE, a reverse scan (notebook 02).
# * The loss is a **sum**, and a sum is an associative scan too (section 3).
#
# `rl.ppo_clip_loss` also returns CleanRL's two diagnostics: `clip_fraction`, the share of ratios
# outside the clip range, and `approx_kl`, an estimate of how far the policy has moved.
#
# <details><summary>Details (optional): the paper, where the surrogate comes from, and why an action is written u</summary>
#
# Schulman, Wolski, Dhariwal, Radford, Klimov: *Proximal Policy Optimization Algorithms*, arXiv
# 1707.06347, 2017. The importance-sampled surrogate is the starting point of conservative policy
# iteration and TRPO. PPO's clip replaces TRPO's KL constraint.
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
from rltriton_lite import _reduce, exercises, ppo, profile, reference

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# Random inputs are drawn on the CPU with a fixed seed and then moved to DEVICE, so a GPU sees the same numbers.
# the Triton kernels: compiled on a GPU, in the interpreter on a CPU (backend="auto" takes the PyTorch path on a CPU)
KERNEL = "triton"
rng = np.random.default_rng(5)
n = lambda x: x.detach().cpu().numpy()  # noqa: E731

# %% [markdown]
# ## 1. The loop
#
# A loss has no loop over time, because every element is independent. The ground truth is a
# float64 NumPy function. In its docstring, ε_low and ε_high are the clip's two sides: equal in
# PPO (both are ε), set apart by [section 5](#5.-Kernel-against-the-loop)'s DAPO.

# %%
print(inspect.getsource(reference.ppo_clip_loss))

# %% [markdown]
# Four steps with $\epsilon = 0.2$. The old policy gave every action probability 0.5, the new one
# 0.55, 0.75, 0.45 and 0.25, so the ratios are 1.1, 1.5, 0.9 and 0.5. The advantages are
# $+1, +1, -1, -1$:
#
# | t | $\hat A$ | $\rho$ | $\rho \hat A$ | $\operatorname{clip}(\rho) \hat A$ | min | which term |
# |---|---|---|---|---|---|---|
# | 0 | +1 | 1.1 (inside) | 1.1 | 1.1 | 1.1 | both (a tie) |
# | 1 | +1 | 1.5 (above) | 1.5 | 1.2 | 1.2 | clipped |
# | 2 | −1 | 0.9 (inside) | −0.9 | −0.9 | −0.9 | both (a tie) |
# | 3 | −1 | 0.5 (below) | −0.5 | −0.8 | −0.8 | clipped |

# %%
old_logp = np.log([0.5, 0.5, 0.5, 0.5])
logp = np.log([0.55, 0.75, 0.45, 0.25])
A = np.array([1.0, 1.0, -1.0, -1.0])
loss, clip_fraction, approx_kl = reference.ppo_clip_loss(logp, old_logp, A, epsilon=0.2)
print(f"loss {loss:.6f}  clip_fraction {clip_fraction}  approx_kl {approx_kl:.6f}")
# by hand: the mean of the minima is (1.1 + 1.2 − 0.9 − 0.8)/4 = 0.6/4 = 0.15, and the loss is its negative.
#          two of the four ratios are outside [0.8, 1.2]: clip_fraction = 0.5.
#          approx_kl = mean((ρ−1) − log ρ) = (0.00469 + 0.09453 + 0.00536 + 0.19315)/4 ≈ 0.07443.
np.testing.assert_allclose(loss, -0.15)
assert clip_fraction == 0.5
np.testing.assert_allclose(approx_kl, 0.07443, atol=1e-5)

# %% jupyter={"source_hidden": true}
# Checks: the table covers four of the clip's six cases (CI runs them; skip when reading)
_region = lambda r: "below" if r < 0.8 else "above" if r > 1.2 else "inside"  # noqa: E731  ρ's region, ε = 0.2
_cases = {(_region(r), a) for r, a in zip(np.exp(logp - old_logp), A)}
assert len(_cases) == 4  # the next cells' "the two that the table lacks": six cases less these four

# %% [markdown]
# An element whose clipped term is strictly the smaller one contributes a constant, so its
# gradient is zero. (A tie keeps its gradient: section 4.) That is the whole mechanism:
#
# * Step 1's action is already 1.5 times more likely than under the old policy, and $\hat A > 0$.
#   PPO stops pushing it up.
# * Step 3's action is already half as likely, and $\hat A < 0$. PPO stops pushing it down.
#
# The plot shows the objective (minus the kernel's per-element loss) against the ratio. The
# shading marks where the kernel's gradient is exactly 0:

# %%
rho = torch.linspace(0.05, 2.0, 196, dtype=torch.float64, device=DEVICE)
fig, axes = plt.subplots(1, 2, figsize=(10, 3.2), sharey=True)
for ax, sign in zip(axes, (+1.0, -1.0)):
    log_rho = rho.log().requires_grad_()
    per_step = rl.ppo_clip_loss(log_rho, torch.zeros_like(rho), torch.full_like(rho, sign), epsilon=0.2,
                                reduction="none", backend=KERNEL).loss
    (grad,) = torch.autograd.grad(per_step.sum(), log_rho)
    np.testing.assert_allclose(-n(per_step), np.minimum(n(rho) * sign, np.clip(n(rho), 0.8, 1.2) * sign))
    ax.plot(n(rho), n(rho) * sign, "--", color="gray", lw=1, label=r"$\rho A$")
    ax.plot(n(rho), np.clip(n(rho), 0.8, 1.2) * sign, ":", color="gray", lw=1, label=r"clip$(\rho) A$")
    ax.plot(n(rho), -n(per_step), "k", lw=2, label=r"$\min(\rho A, \mathrm{clip}(\rho) A)$")
    ax.fill_between(n(rho), -2.2, 2.2, where=n(grad) == 0, color="tab:orange", alpha=0.2, label="zero gradient")
    for edge in (0.8, 1.2):
        ax.axvline(edge, color="k", lw=0.5)
    ax.set_title(f"A = {sign:+.0f}")
    ax.set_xlabel(r"ratio $\rho$")
    ax.set_ylim(-2.2, 2.2)
axes[0].legend(loc="upper left", fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# The clip has six cases: three regions of $\rho$ times two signs of $\hat A$. In the two that the
# table lacks, $\hat A > 0$ with $\rho < 1-\epsilon$ and $\hat A < 0$ with $\rho > 1+\epsilon$,
# the unclipped term is the minimum, so the gradient stays. So `clip_fraction` is not the share of
# elements without a gradient:

# %%
lp = torch.log(torch.tensor([0.5, 1.5], dtype=torch.float64, device=DEVICE)).requires_grad_()
out = rl.ppo_clip_loss(lp, torch.zeros_like(lp), torch.tensor([1.0, -1.0], dtype=torch.float64, device=DEVICE),
                       backend=KERNEL)
(g,) = torch.autograd.grad(out.loss, lp)
assert out.clip_fraction == 1.0 and (g != 0).all()
print("both ratios outside the range, both gradients non-zero:", g)

# %% jupyter={"source_hidden": true}
# Checks: this cell's two cases are "the two that the table lacks" (CI runs them; skip when reading)
_more = {(_region(r), a) for r, a in zip(n(lp.exp()), [1.0, -1.0])}  # this cell's two cases: (below, +), (above, −)
assert len(_cases | _more) == 6  # with the four steps above, "six cases: three regions of ρ times two signs"

# %% [markdown]
# ## 2. The credit assignment: advantages from the scan
#
# PPO's loop has three steps, and only GAE runs along time:
#
# 1. Collect a rollout with $\pi_{\text{old}}$ and record $\log\pi_{\text{old}}(u_t|s_t)$.
# 2. Compute advantages (and value targets) with GAE, the reverse scan of notebook 02.
# 3. For a few epochs, recompute $\log\pi(u_t|s_t)$ with the current parameters and minimise the
#    clipped loss.

# %%
torch.manual_seed(2)
B, T = 4, 32
rewards = torch.randn(B, T).to(DEVICE)
values = torch.randn(B, T).to(DEVICE)
term = torch.rand(B, T).to(DEVICE) < 0.05
boot = torch.randn(B).to(DEVICE)
old_log_probs = -2.0 * torch.rand(B, T).to(DEVICE) - 0.1         # recorded during the rollout
log_probs = old_log_probs + 0.2 * torch.randn(B, T).to(DEVICE)   # the policy a few minibatch steps later

adv, ret = rl.gae(rewards, values, gamma=0.99, lambda_=0.95, terminated=term, bootstrap_value=boot,
                  backend=KERNEL)                                                  # the scan
out = rl.ppo_clip_loss(log_probs, old_log_probs, adv, epsilon=0.2, normalize_advantages=True,
                       backend=KERNEL)                                             # the reduction
print(out)

# %% [markdown]
# `ret` is the critic's target: it feeds the value loss, and the entropy bonus is a separate term.
# Both sit beside this loss in [notebook 10's loop](10_train_ppo.ipynb#2.-The-training-loop,-with-the-two-pieces-as-parameters).
# The same pipeline in float64 NumPy must agree:

# %%
e_adv, e_ret = reference.gae(n(rewards), n(values), gamma=0.99, lambda_=0.95, terminated=n(term),
                             bootstrap_value=n(boot))
e_loss, e_clip, e_kl = reference.ppo_clip_loss(n(log_probs), n(old_log_probs), e_adv, epsilon=0.2,
                                               normalize_advantages=True)
np.testing.assert_allclose(n(adv), e_adv, rtol=1e-5, atol=1e-5)
np.testing.assert_allclose(n(ret), e_ret, rtol=1e-5, atol=1e-5)  # the critic's target, for the value loss
np.testing.assert_allclose(out.loss.item(), e_loss, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(out.clip_fraction.item(), e_clip, atol=1e-7)
np.testing.assert_allclose(out.approx_kl.item(), e_kl, rtol=1e-5, atol=1e-7)
print("rollout → gae → ppo_clip_loss == reference.gae → reference.ppo_clip_loss")

# %% [markdown]
# ## 3. The loss is an associative reduction
#
# A sum is a scan too. Take notebook 00's reverse scan, $y_t = b_t + a_t\,y_{t+1}$, with every
# $a_t = 1$. Then $y_t$ is the sum of $b$ from step $t$ to the end, and $y_0$ is the whole sum.

# %%
x = rng.normal(size=50)
reverse_scan = np.cumsum(x[::-1])[::-1]  # y_t = x_t + y_{t+1}: the sum from step t to the end
assert np.isclose(reverse_scan[0], x.sum())  # y_0 is the whole sum
y = rl.linear_scan(torch.ones(1, 50, dtype=torch.float64, device=DEVICE), torch.tensor(x[None], device=DEVICE),
                   backend=KERNEL)
np.testing.assert_allclose(n(y)[0], reverse_scan, rtol=1e-12)  # every y_t, y_0 the sum
print("a sum is a scan: y_0 =", n(y)[0, 0], "=", x.sum())

# %% [markdown]
# The package does not sum by scanning, though. A reduction needs only the total, no per-step
# outputs: a scan would write all $n$ values $y_t$, while a two-stage sum reads the input once and
# writes one number per block.
#
# Associativity lets the sum be split into pieces. The package sums in two stages, one kernel each:
#
# * **The first kernel** runs many programs. Each program sums its own block of elements and
#   writes one *partial sum*, at its own index.
# * **The second kernel** is a single program. It adds the partials in a fixed order.

# %% [markdown]
# The same two stages in NumPy, checked against the plain sum:

# %%
def two_stage_sum(x, block):
    partials = np.array([x[i:i + block].sum() for i in range(0, len(x), block)])  # stage 1: one per program
    total = partials.dtype.type(0)
    for p in partials:                                                          # stage 2: a fixed order
        total += p
    return total, partials


x = rng.normal(size=4096)
total, partials = two_stage_sum(x, 256)
print(len(partials), "partials")
np.testing.assert_allclose(total, x.sum(), rtol=1e-12)

# %% [markdown]
# Why not let every program add its partial sum straight into one number, with `tl.atomic_add`?
# Then the additions happen in whatever order the programs finish. Floating-point addition is not
# associative, so the loss would change in its last bits from run to run. The same 16 float32
# partials, added in 20 random orders:

# %%
def add_in_order(partials, order):  # what atomics do: whichever program finishes first adds first
    total = partials.dtype.type(0)
    for i in order:
        total += partials[i]
    return total


x32 = (rng.normal(size=4096) * np.exp(rng.normal(size=4096) * 3)).astype(np.float32)
_, partials32 = two_stage_sum(x32, 256)
orders = {float(add_in_order(partials32, rng.permutation(len(partials32)))) for _ in range(20)}
print(f"{len(orders)} different totals from 20 orders:", sorted(orders)[:4], "...")
assert len(orders) > 1

# %% [markdown]
# On a GPU the programs run at the same time, so the order really does change. On an H100, 100
# calls on the same float32 input gave 12 different results from a `tl.atomic_add` sum, and one
# each from `torch.sum` and `rl.ppo_clip_loss`.
#
# <details><summary>Details (optional): the probe, and how to run it on your GPU</summary>
#
# The counts come from `tools/atomics_probe.py`, committed as
# `benchmarks/results/checks/H100-2026-12-07-atomics-probe.txt`. If you have a GPU, run the probe
# yourself from the repository's root, and it prints the same counts for your card:
# `PYTHONPATH=$PWD python tools/atomics_probe.py > atomics_probe.txt`.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the H100 run above (CI runs them; skip when reading)
ATOMICS_PROBE = os.path.join(profile.results_folder(), "checks", "H100-2026-12-07-atomics-probe.txt")
_probe = open(ATOMICS_PROBE, encoding="utf-8").read().splitlines()
assert _probe[0].startswith("# atomics_probe: NVIDIA H100") and "H200" not in _probe[0]  # "on an H100"
assert _probe[0].endswith("python tools/atomics_probe.py")  # the tool that wrote it
assert _probe[1].startswith("# 100 calls each on the same float32 input")  # "100 calls on the same float32 input"
_counts = {k: int(v) for k, v in (line.split(": distinct results ") for line in _probe[2:])}
assert _counts == {"tl.atomic_add of 512 tile sums": 12, "torch.sum": 1,  # "12"; "one each"
                   "rl.ppo_clip_loss (loss, clip_fraction, approx_kl, gradient)": 1}

# %% [markdown]
# The kernel's order depends only on the shape, never on timing. So on one device its loss, its
# statistics and its gradient are bitwise identical from call to call. On a CPU the next cell
# proves nothing, though: the interpreter runs the programs one after another, so `tl.atomic_add`
# would pass it too. The claim rests on the H100 run.

# %%
lp = log_probs.clone().requires_grad_()
runs = []
for _ in range(3):
    o = rl.ppo_clip_loss(lp, old_log_probs, adv, normalize_advantages=True, backend=KERNEL)
    (g,) = torch.autograd.grad(o.loss, lp)
    runs.append((o.loss, o.clip_fraction, o.approx_kl, g))
for run in runs[1:]:
    assert all(torch.equal(a, b) for a, b in zip(run, runs[0]))
print("identical here (this device runs programs in order)" if DEVICE == "cpu" else "bitwise identical across calls")

# %% [markdown]
# **Further:** the exercise `two_stage_mean` asks for these two kernels. The package's own two,
# trimmed, are in notebook 13c:
# [the two reduction kernels](13c_inside_the_package.ipynb#The-two-reduction-kernels).

# %% [markdown]
# ## 4. The kernel's elementwise hook
#
# The kernel fuses the loss with section 3's reduction: one elementwise pass adds each element's
# loss, `clip_fraction` and `approx_kl` terms to its block's partial sums, with no tensor of terms
# in between. The backward is one more elementwise pass. Two facts matter for training:
#
# * **The gradient rule.** The per-element loss $\ell_t$ has the gradient
#   $\partial\ell_t/\partial\log\pi_t = -\hat A_t \rho_t$ where the unclipped term is the minimum,
#   and 0 elsewhere. At a tie, the kernel takes the unclipped term's gradient. The exercise
#   `ppo_clip_grad` has you write this rule.
# * **Padding is never read**, so padding may hold NaN.
#
# <details><summary>Details (optional): why ties are the common case</summary>
#
# A tie is the common case, not a corner. Inside the clip range both terms are equal. On the
# first minibatch of an update's first epoch,
# $\log\pi = \log\pi_{\text{old}}$ (up to the last bits, when the log-probabilities are
# recomputed in other batch sizes). So $\rho = 1$ nearly everywhere.
#
# At a tie, `torch.min`'s autograd gives half of the gradient to each term. The clamp passes its
# half on inside the range, where $\text{clip}(\rho) = \rho$. At the edges $\rho = 1 \pm \epsilon$ it
# passes it on too: `torch.clamp`'s backward is inclusive, so its gradient at a bound is 1. Each
# term's derivative in $\log\pi$ is then $\rho\hat A$ (the objective's; the loss's is minus it,
# $-\hat A\rho$, the rule above). So the total is $\tfrac12\rho\hat A + \tfrac12\rho\hat A = \rho\hat A$,
# the same as the unclipped term's. The kernel gets there with one select.
#
# </details>
#
# The gradient of section 1's four-step example, by hand, is $-\hat A\rho/N$ at the ties and 0
# where clipped. That gives $(-1.1/4,\ 0,\ 0.9/4,\ 0)$. On a fresh batch, where every $\rho = 1$,
# the gradient is the vanilla policy gradient $-\hat A/N$:

# %%
lp = torch.tensor(logp, device=DEVICE, requires_grad=True)
loss = rl.ppo_clip_loss(lp, torch.tensor(old_logp, device=DEVICE), torch.tensor(A, device=DEVICE), backend=KERNEL).loss
(g,) = torch.autograd.grad(loss, lp)
np.testing.assert_allclose(n(g), [-0.275, 0.0, 0.225, 0.0])
_rho = np.exp(logp - old_logp)
_strict = np.clip(_rho, 0.8, 1.2) * A < _rho * A  # the clipped term strictly the minimum: steps 1 and 3
assert ((n(g) == 0) == _strict).all() and list(_strict) == [False, True, False, True]  # the ties (0, 2) keep theirs

A64 = torch.randn(B, T, dtype=torch.float64, device=DEVICE)
lp = old_log_probs.double().clone().requires_grad_()
for backend in ("triton", "torch"):
    (g,) = torch.autograd.grad(rl.ppo_clip_loss(lp, old_log_probs.double(), A64, backend=backend).loss, lp)
    torch.testing.assert_close(g, -A64 / A64.numel())
print("ρ = 1: the gradient is the policy gradient -A/N, on both backends")

# %% jupyter={"source_hidden": true}
# Checks: the Details above, on torch's autograd (CI runs them; skip when reading)
_a, _b = (torch.tensor(1.0, dtype=torch.float64, requires_grad=True) for _ in range(2))  # two equal terms: a tie
assert [g.item() for g in torch.autograd.grad(torch.minimum(_a, _b), (_a, _b))] == [0.5, 0.5]  # "half ... to each term"
_r = torch.tensor([0.8, 0.9, 1.2], dtype=torch.float64, requires_grad=True)  # ρ at the edge 1 − ε, inside, at 1 + ε
assert torch.autograd.grad(_r.clamp(0.8, 1.2).sum(), _r)[0].tolist() == [1.0, 1.0, 1.0]  # "its gradient at a bound is 1"
for _adv in (1.0, -1.0):  # both signs of Â: the halves add to the unclipped term's at the edges and inside
    _obj = lambda: torch.minimum(_r * _adv, _r.clamp(0.8, 1.2) * _adv)  # noqa: E731 -- the objective
    (_g_rho,) = torch.autograd.grad(_obj().sum(), _r)
    assert torch.equal(_r * _g_rho, _r.detach() * _adv)  # "the total is ρÂ" in log π (∂ρ/∂log π = ρ)
    (_g_loss,) = torch.autograd.grad(-_obj().sum(), _r)
    assert torch.equal(_r * _g_loss, -_adv * _r.detach())  # "the loss's is minus it, −Âρ"

# %% [markdown]
# ## 5. Kernel against the loop
#
# *Optional.* The kernel against the reference (NaN padding, asymmetric clipping, normalisation,
# three reductions), then CleanRL's `ppo.py`, then autograd.
#
# <details><summary>Details (optional): DAPO's "clip-higher"</summary>
#
# DAPO, a PPO variant for LLM reasoning (Yu et al. 2025), clips asymmetrically, with
# $\epsilon_{\text{high}} > \epsilon_{\text{low}}$, so that unlikely tokens can gain more
# probability.
#
# </details>

# %%
torch.manual_seed(5)
shape = (6, 37)
old = torch.randn(shape).to(DEVICE) - 1.0
lp = old + 0.3 * torch.randn(shape).to(DEVICE)
advs = 2.0 * torch.randn(shape).to(DEVICE) + 0.5
mask = torch.rand(shape).to(DEVICE) > 0.2
mask[0, :9] = False   # left padding (a prompt)
mask[1, -6:] = False  # right padding
old_p, lp_p, advs_p = (torch.where(mask, x, torch.nan) for x in (old, lp, advs))

# %%
# five settings against the reference; under reduction="none", also 0 on padding and a sum equal to "sum"'s
for kw in (dict(), dict(epsilon=(0.2, 0.28)), dict(normalize_advantages=True),
           dict(reduction="sum", epsilon=0.1), dict(reduction="none", normalize_advantages=True, epsilon=(0.1, 0.3))):
    got = rl.ppo_clip_loss(lp_p, old_p, advs_p, mask=mask, backend=KERNEL, **kw)
    want = reference.ppo_clip_loss(n(lp_p), n(old_p), n(advs_p), mask=n(mask), **kw)
    if kw.get("reduction") == "none":
        np.testing.assert_allclose(n(got.loss), want, rtol=1e-5, atol=1e-5)
        assert (got.loss[~mask] == 0).all()
        total = rl.ppo_clip_loss(lp_p, old_p, advs_p, mask=mask, backend=KERNEL, **(kw | dict(reduction="sum"))).loss
        torch.testing.assert_close(got.loss.sum(), total)  # "none" sums to "sum"
    else:
        np.testing.assert_allclose(got.loss.item(), want[0], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got.clip_fraction.item(), want[1], atol=1e-6)
        np.testing.assert_allclose(got.approx_kl.item(), want[2], rtol=1e-5, atol=1e-6)
    print("ok", kw)

# %%
# CleanRL's ppo.py, written out. It has no mask: the call below selects the valid elements first.
def cleanrl_ppo(newlogprob, b_logprobs, mb_advantages, clip_coef):
    logratio = newlogprob - b_logprobs
    ratio = logratio.exp()
    with torch.no_grad():
        approx_kl = ((ratio - 1) - logratio).mean()
        clipfrac = ((ratio - 1.0).abs() > clip_coef).float().mean()
    mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)
    pg_loss1 = -mb_advantages * ratio
    pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
    return torch.max(pg_loss1, pg_loss2).mean(), clipfrac, approx_kl


got = rl.ppo_clip_loss(lp_p, old_p, advs_p, mask=mask, epsilon=0.2, normalize_advantages=True, backend=KERNEL)
want = cleanrl_ppo(lp[mask], old[mask], advs[mask], 0.2)
for a, b in zip(got, want):
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
print("loss, clip_fraction, approx_kl == CleanRL's")

# %%
lp64 = lp.double().requires_grad_()  # the gradients in float64, against autograd of the PyTorch path
w = torch.randn(shape, dtype=torch.float64).to(DEVICE)  # random weights for the per-element losses of "none"
for kw in (dict(normalize_advantages=True), dict(reduction="sum", epsilon=(0.1, 0.3)),
           dict(reduction="none", normalize_advantages=True)):
    grads = []
    for backend in ("triton", "torch"):
        loss = rl.ppo_clip_loss(lp64, old_p.double(), advs_p.double(), mask=mask, backend=backend, **kw).loss
        grads.append(torch.autograd.grad((loss * w).sum() if loss.dim() else loss, lp64)[0])
    torch.testing.assert_close(grads[0], grads[1])
    assert (grads[0][~mask] == 0).all()
print("gradients match")

# %%
long_err = profile.rollout_error("ppo", 3, 1000, DEVICE)  # 3 × 1,000: several tiles, their partial sums added by a second stage
assert long_err < 1e-5, long_err
print(f"3 x 1000: relative error {long_err:.1e}")

# %% [markdown]
# ## 6. How fast is it (H100, measured)
#
# With the backward, **the fused loss is faster by both clocks**: the eager formula takes 7.7–9.2×
# its GPU time and 1.56–1.59× its wall time. The wall-clock gain is the smaller one because both
# calls are mostly host time
# ([notebook 09, section 4](09_benchmarks.ipynb#4.-Fused-losses-against-their-eager-formulas)).
# The folded cell below prints the committed H100 numbers for the three shapes.
#
# <details><summary>Details (optional): what notebook 09 does not show</summary>
#
# * Each range runs over three shapes (16×128, 4096×128, 64×16384), from `tools/wall_probe.py --losses`.
# * How much of each call's wall time is GPU time: compare the GPU and wall columns of the folded
#   cell's table below.
# * A plain `torch.autograd.Function` around two naive Triton kernels takes 0.97–1.16× the fused
#   loss's wall time.
# * On the committed H200 run, eager ÷ fused GPU time is 7.5 to 9.8.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the table and the fold above, on the H100's paired loss probe (CI runs them; the printed table is for reading)
vs = profile.eager_against_ours("ppo")  # with the backward: {(B, T): both calls' wall and GPU µs, eager ÷ ours}
print(profile.table(profile.eager_rows(vs), digits=3))  # the three shapes, in the text's order
print("* the median of the probe's interleaved rounds, not the quotient of the two wall columns")
x_gpu, x_wall = [v["gpu_ratio"] for v in vs.values()], [v["wall_ratio"] for v in vs.values()]  # eager ÷ ours
assert profile.outward(x_gpu, 1) == (7.7, 9.2)  # "7.7–9.2×", rounded outwards
assert profile.outward(x_wall, 2) == (1.56, 1.59)  # "1.56–1.59×", rounded outwards
assert min(x_wall) > 1 and min(x_gpu) > 1  # "faster by both clocks", at every shape
assert max(x_wall) < min(x_gpu) / 4  # "the wall-clock gain is the smaller one"
assert all(v[f"{c}_gpu_us"] < 0.5 * v[f"{c}_wall_us"] for c in ("ours", "eager") for v in vs.values())  # "mostly host time"
_head = open(os.path.join(profile.results_folder(), profile.COMMITTED_LOSS_WALL), encoding="utf-8").readline()
assert "H100" in _head and "H200" not in _head  # "(H100, measured)"; "one card, an H100": named in the file's first line
SHAPES_TIMED = [(16, 128), (4096, 128), (64, 16384)]  # "three shapes": where the probe timed PPO against its eager formula
assert {k[1] for k in profile.read_loss_wall() if k[0] == "ppo"} == set(vs) == set(SHAPES_TIMED)
assert "tools/wall_probe.py --losses" in profile.read_loss_wall.__doc__  # the committed file is that probe's output
_share = {k: (v["ours_gpu_us"] / v["ours_wall_us"], v["eager_gpu_us"] / v["eager_wall_us"]) for k, v in vs.items()}
assert all(o < 1 / 30 < e < 1 / 7 for o, e in _share.values())  # the table's GPU ÷ wall: "mostly host time", ours more so
_wall = profile.read_loss_wall()  # {(loss, (B, T), pass, impl): (µs, the ratio's median, lowest, highest)}
x_fn = [_wall["ppo", _s, "fwd+bwd", "minimal_autograd_fn"][1] for _s in SHAPES_TIMED]  # its wall time ÷ ours
assert profile.outward(x_fn, 2) == (0.97, 1.16)  # "0.97–1.16×", rounded outwards: "about as fast"
assert "torch.autograd.Function, one naive elementwise Triton kernel forwards and one backwards" in \
    profile.ANCHOR_NOTES["minimal_autograd_fn"]  # "a plain torch.autograd.Function around two naive Triton kernels"
# the H200 figure in the fold, on the committed H200 run:
# every row of PPO's loss, as a table and a chart: profile.committed("ppo")
RUN, RES, h200 = profile.committed_or_empty("ppo")
fused = profile.fused_against_eager("ppo") if h200 else {}  # with the backward, where the eager formula was timed
x_gpu_h200 = [f["eager_gpu_us"] / f["ours_gpu_us"] for f in fused.values()]
assert not h200 or len(fused) == 3 and int(10 * min(x_gpu_h200)) / 10 == 7.5  # "7.5 to ...", 3 shapes, rounded down
assert not h200 or np.ceil(10 * max(x_gpu_h200)) / 10 == 9.8  # "... to 9.8 times as long", rounded up
assert not h200 or RES["gpu"] == "NVIDIA H200"  # "the committed H200 run"

# %% [markdown]
# ## Exercises
#
# Checked exercises work as in [notebook 00](00_associative_scan.ipynb#How-the-exercises-work);
# `print(exercises.task(name))` restates a task.
#
# ### The harness for Triton elementwise hooks
#
# `exercises.map_hook(hook, inputs, params)` calls your `@triton.jit` function `hook(X, P, offs, m)`
# on blocks of elements and stores the one value per element that it returns: there is no scan.
# The arguments are those of `scan_hook`'s prologue without `t` and `T`
# ([notebook 01b, section 1](01b_prologues_and_backward.ipynb#1.-The-harness-for-Triton-prologues)).
# Notebook 07 uses this harness too.
#
# A worked hook computes PPO's own loss per element (`tl.minimum` and `tl.maximum` are Triton's
# elementwise min and max):

# %%
@triton.jit
def ppo_clip_hook(X, P, offs, m):
    eps = P[0]
    ratio = tl.load(X[0] + offs, mask=m, other=1.0)
    adv = tl.load(X[1] + offs, mask=m, other=0.0)
    clipped = tl.minimum(tl.maximum(ratio, 1.0 - eps), 1.0 + eps)
    return -tl.minimum(ratio * adv, clipped * adv)


g_h = torch.Generator().manual_seed(5)
lp_h, adv_h = (torch.randn(300, generator=g_h).to(DEVICE) for _ in range(2))
per_element = exercises.map_hook(ppo_clip_hook, (lp_h.exp(), adv_h), (0.2,))
torch.testing.assert_close(per_element, rl.ppo_clip_loss(lp_h, torch.zeros_like(lp_h), adv_h, epsilon=0.2,
                                                         reduction="none", backend=KERNEL).loss, rtol=1e-5, atol=1e-6)
print("a 6-line Triton hook == ppo_clip_loss(reduction='none')")

# %% [markdown]
# **`dual_clip`** (a Triton elementwise hook). Dual-clip PPO (Ye et al., 2020) bounds the loss
# where the advantage is negative and the ratio is large. Write its per-element loss as a hook like
# `ppo_clip_hook`.
#
# **Recap: the harness and the formula.**
#
# * **Call:** `exercises.map_hook(dual_clip, (ratio, advantages), (epsilon, c))` runs your
#   `dual_clip(X, P, offs, m)` on each block of elements and stores what it returns.
# * **`X`:** the inputs as pointers, `X[0]` the ratios $\rho$ and `X[1]` the advantages $\hat A$.
#   `tl.load(X[1] + offs, mask=m, other=0.0)` loads a block of advantages.
# * **`P`:** the numbers: `P[0]` is $\epsilon$, `P[1]` is $c > 1$ (e.g. 3).
# * **`offs`, `m`:** the block's flat offsets into each input; the in-bounds mask, False past the end.
# * **Returns:** the per-element loss, minus the objective:
#   $-\max\big(\min(\rho \hat A, \operatorname{clip}(\rho, 1-\epsilon, 1+\epsilon) \hat A),
#   c\hat A\big)$ where $\hat A < 0$, and PPO's $-\min(\rho \hat A, \operatorname{clip}(\rho) \hat A)$
#   where $\hat A \ge 0$.
#
# **Edge cases:** the max with $c\hat A$ applies only where $\hat A < 0$. Elsewhere it would
# replace PPO's objective wherever $c\hat A$ is larger.
#
# <details><summary>Hint 1: where to start</summary>
#
# `ppo_clip_hook` above is most of it. It computes PPO's objective per element.
# Dual clip changes only the elements with $\hat A < 0$.
# A Python `if` cannot choose per element inside a block. What can?
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Compute PPO's objective as `ppo_clip_hook` does:
#   $\min(\rho \hat A, \operatorname{clip}(\rho, 1-\epsilon, 1+\epsilon) \hat A)$.
# * Where $\hat A < 0$, take the max of it and $c\hat A$ (`tl.maximum`).
# * Where $\hat A \ge 0$, keep PPO's objective as it is.
# * `tl.where(adv < 0, ..., ...)` picks the branch per element.
# * Return minus the objective: the loss.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Take $\epsilon = 0.2$, $c = 3$ and three elements:
#
# * $\rho = 5$, $\hat A = -1$: PPO's objective is $\min(-5, 1.2 \cdot (-1)) = -5$. Its max with
#   $c\hat A = -3$ is $-3$, so the loss is 3.
# * $\rho = 5$, $\hat A = 1$: PPO's $\min(5, 1.2) = 1.2$ stays, because $\hat A \ge 0$. The loss is
#   $-1.2$ (not $-3$, although $c\hat A = 3$ is larger).
# * $\rho = 0.5$, $\hat A = -1$: $\min(-0.5, 0.8 \cdot (-1)) = -0.8$. That is already above
#   $c\hat A = -3$, so the loss is 0.8, PPO's.
#
# ```python
# ratio_c, adv_c = torch.tensor([5.0, 5.0, 0.5], device=DEVICE), torch.tensor([-1.0, 1.0, -1.0], device=DEVICE)
# print(exercises.guarded(exercises.map_hook, dual_clip, (ratio_c, adv_c), (0.2, 3.0)).cpu())  # must print tensor([ 3.0000, -1.2000,  0.8000])
# ```
#
# A property: on advantages $\ge 0$, your hook must return exactly what `ppo_clip_hook` returns.
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# adv = ___  # the advantages, loaded as ppo_clip_hook loads them
# clipped = ___  # the clipped ratio, as in ppo_clip_hook
# obj = ___  # PPO's objective, as in ppo_clip_hook
# obj = ___  # one tl.where: the elements Hint 2 names change, the others keep obj
# return ___  # the loss
# ```
#
# </details>
#
# A template:
#
# ```python
# @triton.jit
# def dual_clip(X, P, offs, m):
#     epsilon, c = P[0], P[1]
#     ratio = tl.load(X[0] + offs, mask=m, other=1.0)
#     ...
#     return loss
# ```

# %%
# YOUR CODE: replace the next line by your @triton.jit def dual_clip(X, P, offs, m)
dual_clip = None

# %%
exercises.attempt("dual_clip", dual_clip)

# %% [markdown]
# <details><summary>Details (optional): another right hook, a cap on ρ</summary>
#
# Cap $\rho$ at $c$, `tl.minimum(ratio, c)`, then compute PPO's loss. Whenever
# $c > 1 + \epsilon$, this gives the same loss on every element, and the same gradient wherever
# $\rho \ne c$.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: capping ρ at c before PPO's min is the dual clip when c > 1 + ε (CI runs them; skip when reading)
def _ppo(rho, adv, eps):  # PPO's objective
    return torch.minimum(rho * adv, rho.clamp(1 - eps, 1 + eps) * adv)


def _dual(rho, adv, eps, c):  # the dual clip's objective, as the recap writes it
    return torch.where(adv < 0, torch.maximum(_ppo(rho, adv, eps), c * adv), _ppo(rho, adv, eps))


def _capped(rho, adv, eps, c):  # PPO's objective at min(ρ, c)
    return _ppo(rho.clamp(max=c), adv, eps)


_g = torch.Generator().manual_seed(0)
_adv = torch.randn(4000, generator=_g, dtype=torch.float64)
for _eps, _c in ((0.2, 3.0), (0.2, 1.25), (0.1, 1.5)):  # c > 1 + ε in each
    _rho = (6 * torch.rand(4000, generator=_g, dtype=torch.float64)).requires_grad_()  # ρ from 0 to 6, none equal to c
    assert (_rho != _c).all() and ((_rho > _c) & (_adv < 0)).any() and ((_rho > _c) & (_adv > 0)).any()
    _vals = [f(_rho, _adv, _eps, _c) for f in (_dual, _capped)]
    assert torch.equal(_vals[0], _vals[1])  # the same loss on every element
    _grads = [torch.autograd.grad(v.sum(), _rho)[0] for v in _vals]
    assert torch.equal(_grads[0], _grads[1])  # the same gradient
_rho = torch.tensor([1.15], dtype=torch.float64)  # c = 1.1 ≤ 1 + ε: the cap binds inside the clip range, not the same
assert _dual(_rho, torch.ones(1, dtype=torch.float64), 0.2, 1.1) != _capped(_rho, torch.ones(1, dtype=torch.float64), 0.2, 1.1)

# %% [markdown]
# **`ppo_clip_grad`** (a Triton elementwise hook). Section 4 states the gradient rule; here you
# write it. Your hook returns, per element, the gradient of PPO's per-element loss
# $\ell = -\min\big(\rho \hat A, \operatorname{clip}(\rho, 1-\epsilon, 1+\epsilon) \hat A\big)$ with
# respect to $\log\pi$. That is what the kernel's backward pass computes, and it decides where PPO's
# credit flows.
#
# > * **Inputs:** `X[0]` the ratios $\rho$, `X[1]` the advantages $\hat A$, `P[0]` $= \epsilon$: one value per element.
# > * **Select away:** nothing: every input is finite. One `tl.where` picks, per element, the gradient or 0.
#
# * **Call:** `exercises.map_hook(ppo_clip_grad, (ratio, advantages), (epsilon,))`, the harness
#   that `dual_clip` uses.
# * **Formula:** $\rho = e^{\log\pi - \log\pi_{\text{old}}}$, so $\partial\rho/\partial\log\pi = \rho$, and
#
#   $$\frac{\partial \ell}{\partial \log\pi} = \begin{cases} -\hat A \rho & \text{where } \rho \hat A \le
#   \operatorname{clip}(\rho) \hat A \text{ (the unclipped term is the minimum, ties included)},\\
#   0 & \text{where } \operatorname{clip}(\rho) \hat A < \rho \hat A \text{ (the clipped term is strictly smaller).}
#   \end{cases}$$
#
# * **Convention:** the gradient of one element of `rl.ppo_clip_loss(..., reduction="none")`, which
#   its autograd gives. The default `reduction="mean"` divides it by $N$.
#
# **Edge cases:**
#
# * **Ties.** Inside the clip range, and at its edges $\rho = 1 \pm \epsilon$, the two terms are
#   equal. There the gradient is the unclipped term's, $-\hat A\rho$ (section 4's Details say why).
# * **Outside the range.** The gradient still flows on one side for each sign of $\hat A$: the two
#   regions that section 1's table lacks.
#
# <details><summary>Hint 1: where to start</summary>
#
# `ppo_clip_hook` above computes both terms. Your hook returns, per element, the derivative of the
# term that is the minimum. Which term is it, and what is the derivative of $-\rho\hat A$ with respect
# to $\log\pi$?
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Load $\rho$ and $\hat A$. Compute the clipped ratio as `ppo_clip_hook` does.
# * Where `clipped * adv < ratio * adv`, the clipped term is strictly the smaller. The loss is a
#   constant there, so the gradient is 0.
# * Everywhere else, ties included, the gradient is the unclipped term's: $-\hat A\rho$.
# * `tl.where` picks the branch per element.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Take $\epsilon = 0.2$ and four elements:
#
# * $\rho = 0.5$, $\hat A = 1$: $\rho\hat A = 0.5$ is below $0.8 \cdot 1$, so the unclipped term is
#   the minimum. The gradient is $-0.5$.
# * $\rho = 1.5$, $\hat A = 1$: $1.2 \cdot 1$ is below $1.5$, so the clipped term is strictly
#   smaller. The gradient is 0.
# * $\rho = 1.2$, $\hat A = -1$: both terms are $-1.2$, a tie. The gradient is $1.2$.
# * $\rho = 2$, $\hat A = -0.5$: $\rho\hat A = -1$ is below $1.2 \cdot (-0.5) = -0.6$. The gradient
#   is $1.0$.
#
# ```python
# ratio_g, adv_g = torch.tensor([0.5, 1.5, 1.2, 2.0], device=DEVICE), torch.tensor([1.0, 1.0, -1.0, -0.5], device=DEVICE)
# print(exercises.guarded(exercises.map_hook, ppo_clip_grad, (ratio_g, adv_g), (0.2,)).cpu())  # must print tensor([-0.5000,  0.0000,  1.2000,  1.0000])
# ```
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# clipped = ___  # the clipped ratio, as in ppo_clip_hook
# flat = ___  # True where the clipped term is strictly the smaller: the loss is a constant there
# return tl.where(flat, ___, ___)  # 0 there; elsewhere, ties included, the unclipped term's gradient
# ```
#
# </details>
#
# A template:
#
# ```python
# @triton.jit
# def ppo_clip_grad(X, P, offs, m):
#     epsilon = P[0]
#     ratio = tl.load(X[0] + offs, mask=m, other=1.0)
#     ...
#     return grad
# ```

# %%
# YOUR CODE: replace the next line by your @triton.jit def ppo_clip_grad(X, P, offs, m)
ppo_clip_grad = None

# %%
exercises.attempt("ppo_clip_grad", ppo_clip_grad)

# %% jupyter={"source_hidden": true}
# Checks: the task's rule is the autograd of rl.ppo_clip_loss, ties included (CI runs them; skip when reading)
_r = np.array([0.5, 1.5, 1.2, 2.0, 0.8, 1.0, 1.2, 0.8, 1.0])  # Hint 3's four, then ties at 1 ± ε and 1
_a = np.array([1.0, 1.0, -1.0, -0.5, -1.0, -1.0, 1.0, 1.0, 1.0])
_lr = np.log(_r)
for _ in range(4):  # nudge log ρ until exp gives the edge exactly: an exact tie
    _lr = np.where(np.exp(_lr) < _r, np.nextafter(_lr, np.inf),
                   np.where(np.exp(_lr) > _r, np.nextafter(_lr, -np.inf), _lr))
assert (np.exp(_lr) == _r).all()
_rule = np.where(np.clip(_r, 0.8, 1.2) * _a < _r * _a, 0.0, -_a * _r)  # the task's formula
np.testing.assert_allclose(_rule[:4], [-0.5, 0.0, 1.2, 1.0])  # Hint 3's "must print"
for _backend in ("triton", "torch"):
    for _reduction, _times in (("none", 1), ("mean", len(_r))):  # "the mean divides it by N"
        _lp = torch.tensor(_lr, device=DEVICE, requires_grad=True)
        _loss = rl.ppo_clip_loss(_lp, torch.zeros_like(_lp), torch.tensor(_a, device=DEVICE), epsilon=0.2,
                                 reduction=_reduction, backend=_backend).loss
        (_g,) = torch.autograd.grad(_loss.sum(), _lp)
        np.testing.assert_allclose(n(_g) * _times, _rule, rtol=1e-12)
assert (_rule[4:] != 0).all()  # the ties at ρ = 1 ± ε (0.8 with Â < 0, 1.2 with Â > 0) and 1 keep their gradient

# %% [markdown]
# **`two_stage_mean`** (a Triton kernel and its launcher). Write section 3's reduction yourself,
# in two launches.
#
# **Recap: the call and the formula.**
#
# * **Call:** the checker calls `two_stage_mean(x)`, twice on each input, and compares the bits as
#   well as the value, which the fixed order makes equal.
# * **`x`:** a 1-D float32 tensor of `n` elements.
# * **Returns:** the mean, a 0-d tensor that your second kernel wrote.
# * **Formula:** $\bar x = \frac{1}{n}\sum_{p=0}^{P-1} S_p$, with $S_p$ the sum of block $p$'s
#   `BLOCK` elements and $P = \lceil n / \text{BLOCK}\rceil$. The first launch has one program per
#   block, which stores its $S_p$. The second, one program, adds them in the order $p = 0, 1, \dots$
#   and divides by `n`.
#
# **Edge cases:** the last block may run past the end of `x`: mask it, so those lanes add 0.
#
# <details><summary>Hint 1: where to start</summary>
#
# Write two `@triton.jit` kernels and launch each once, in this shape:
#
# ```text
# launch 1, one program per block of x:
#     load the block with a mask (other=0.0), sum it, store that one partial at the program's index
# launch 2, one program:
#     total = 0; add the partials in the order 0, 1, 2, ...; store total / n
# ```
#
# Use no atomics: an atomic add runs in the order the programs finish, so its bits vary.
# Think about how many partials there are. There may be more than one block of them.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Pick `BLOCK` (1024, say). Then `n_partials = triton.cdiv(n, BLOCK)`.
# * Allocate the partials, `torch.empty(n_partials, device=x.device)`, and a 0-d output, `torch.empty((), device=x.device)`.
# * First kernel, grid `(n_partials,)`: load its block masked (`other=0.0`), sum it, store one number.
# * `tl.sum(block, 0)` sums a block. Program `pid` stores at `S + pid`.
# * Second kernel, grid `(1,)`: walk the partials a block at a time, in order.
# * A loop `for start in range(0, n_partials, BLOCK)` covers any number of partials.
# * Add each block's `tl.sum` to a running total. Divide by `n`, store.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Take `x` $= 0, 1, \dots, 2499$ ($n = 2500$) and `BLOCK = 1024`: three programs.
#
# * Their partial sums are $0 + \dots + 1023 = 523776$, $1024 + \dots + 2047 = 1572352$ and
#   $2048 + \dots + 2499 = 1027622$. The last block has 452 real elements, and its other 572
#   lanes add 0.
# * Added in block order, they give $3123750 = 2499 \cdot 2500 / 2$. Divided by $n$, the mean is
#   1249.5. (Every one of these sums is exact in float32.)
# * `torch.ones(1025)` has a last block of one real element. Its mean is exactly 1.0. Dividing by
#   the lanes of two blocks (2048) instead of by $n$ gives 0.50048828125.
# * A first grid of `n // BLOCK` programs rounds down and leaves the partial block out. If the
#   second stage counts the partials the same way, the means are about 838.4512 and 0.9990244.
#   (These are the two full blocks of `arange`, 2096128, over 2500, and 1024 ones over 1025.)
# * A second failure keeps the short grid but lets the second stage count `triton.cdiv(n, BLOCK)`
#   partials, allocated with `torch.empty`. The last partial is then never stored, so the mean
#   reads whatever that memory held, and it may change from call to call.
#
# ```python
# print(exercises.guarded(two_stage_mean, torch.arange(2500.0, device=DEVICE)).item(),
#       exercises.guarded(two_stage_mean, torch.ones(1025, device=DEVICE)).item())  # must print 1249.5 1.0
# ```
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # stage 1: this program's block
# tl.store(S + tl.program_id(0), tl.sum(tl.load(X + offs, mask=___, other=0.0), 0))  # ___: which lanes are real?
# acc = 0.0  # stage 2's running sum (a float: a GPU compile refuses a carry that changes type)
# for start in range(0, n_partials, BLOCK):  # stage 2, one program: the same order every call
#     offs = start + tl.arange(0, BLOCK)
#     acc += tl.sum(tl.load(S + offs, mask=___, other=0.0), 0)  # ___: how many partials are there?
# _partials[(___,)](x, partials, n, BLOCK=BLOCK)  # the first launch. ___: one program per what?
# ```
#
# </details>
#
# Its checks include an input of 1,100,000 elements: a few seconds under the interpreter with
# `BLOCK = 1024` (`BLOCK = 256` takes about 20 s).

# %%
def two_stage_mean(x):
    # YOUR CODE: two @triton.jit kernels above this function and their two launches here
    raise NotImplementedError

# %%
exercises.attempt("two_stage_mean", two_stage_mean)

# %% [markdown]
# Without a checker:
#
# *(Optional: not on the minimum path. Answer each in its cell below: your teacher's grader
# collects the answers from them.)*
#
# 1. Compute dual-clip PPO (c = 3) from `reduction="none"` on section 5's inputs. Spread the new
#    log-probabilities wider, as `old + torch.randn(...)`: with section 5's spread of 0.3, a
#    ratio above 3 is rare. Where does dual-clip differ from PPO? Which way does the gradient
#    change there?
#
#    *Check yourself:* where $\rho > c$ and $\hat A < 0$, the dual-clip gradient is exactly 0;
#    everywhere else it equals PPO's.
# 2. Token-level RL for language models averages over tokens (`mask` over a (B, T) batch). GRPO,
#    a PPO without a critic, averages each sequence first, then the sequences. Take $G$ answers
#    (the rows), $|o_i|$ the number of answer $i$'s unmasked tokens and $\ell_{i,t}$ the
#    `reduction="none"` loss of its token $t$:
#
#    $$\text{GRPO: } \frac1G\sum_{i=1}^{G}\frac{1}{|o_i|}\sum_t \ell_{i,t}, \qquad
#      \text{token-level: } \frac{1}{\sum_i |o_i|}\sum_{i=1}^{G}\sum_t \ell_{i,t}.$$
#
#    Build GRPO's loss from `reduction="none"` and the mask. Find a batch where the two losses
#    differ in sign. Does a loss's sign say whether a policy step helped? Compare instead how much
#    of the gradient each answer gets under each averaging.
#
#    *Check yourself:* a one-token answer with loss $-3$ and a four-token answer with losses
#    $1, 1, 1, 1$ give GRPO $-1$ and token-level $+0.2$. The one-token answer weighs 1/2 in GRPO's
#    loss and 1/5 in the token-level one.
# 3. Simulate several epochs on one rollout. Start from $\log\pi = \log\pi_{\text{old}}$, take
#    gradient steps on `log_probs` directly and plot `clip_fraction` and `approx_kl` per step.
#    Why does the loss stop decreasing although `log_probs` is unconstrained?
#
#    *Check yourself:* the loss settles at
#    $L^* = -\operatorname{mean}\big(\hat A\,(1 + \epsilon\operatorname{sign}\hat A)\big)$ and never
#    goes below it, while `clip_fraction` rises towards 1 ($\hat A$ normalised, if you normalise).
#
# <details><summary>Details (optional): GRPO</summary>
#
# GRPO (Shao et al. 2024) takes the advantage of a sampled answer relative to the other answers
# to the same prompt.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the three "Check yourself" targets, verified (CI runs them; skip when reading)
_g = torch.Generator().manual_seed(5)  # 1: section 5's shape, the wider spread, c = 3
_old = (torch.randn(6, 37, generator=_g, dtype=torch.float64) - 1.0).to(DEVICE)
_lp = (_old + torch.randn(6, 37, generator=_g, dtype=torch.float64).to(DEVICE)).requires_grad_()
_adv = (2.0 * torch.randn(6, 37, generator=_g, dtype=torch.float64) + 0.5).to(DEVICE)
_ppo = rl.ppo_clip_loss(_lp, _old, _adv, epsilon=0.2, reduction="none", backend=KERNEL).loss
_dual = torch.where(_adv < 0, torch.minimum(_ppo, -3.0 * _adv), _ppo)  # −max(PPO's objective, cÂ) where Â < 0
_where = (_adv < 0) & ((_lp - _old).exp() > 3.0)
(_g_ppo,) = torch.autograd.grad(_ppo.sum(), _lp, retain_graph=True)
(_g_dual,) = torch.autograd.grad(_dual.sum(), _lp)
assert _where.any() and (_g_dual[_where] == 0).all() and (_g_ppo[_where] > 0).all()  # "exactly 0" (PPO's is not)
torch.testing.assert_close(_g_dual[~_where], _g_ppo[~_where])  # "everywhere else it equals PPO's"
_l = torch.tensor([[-3.0, 0, 0, 0], [1.0, 1, 1, 1]], dtype=torch.float64, requires_grad=True)  # 2: the two answers
_m = torch.tensor([[True, False, False, False], [True] * 4])
_grpo, _token = ((_l * _m).sum(1) / _m.sum(1)).mean(), (_l * _m).sum() / _m.sum()
assert _grpo.item() == -1.0 and abs(_token.item() - 0.2) < 1e-15  # "GRPO −1 and token-level +0.2"
_weight = [torch.autograd.grad(_f, _l)[0][0].sum().item() for _f in (_grpo, _token)]  # the one-token answer's
assert _weight[0] == 0.5 and abs(_weight[1] - 0.2) < 1e-15  # "1/2 in GRPO's loss and 1/5 in the token-level one"
_g = torch.Generator().manual_seed(0)  # 3: 200 SGD steps on log π itself
_A = torch.randn(256, generator=_g, dtype=torch.float64)
_old = -1.0 - torch.rand(256, generator=_g, dtype=torch.float64)
_L_star = -(_A * (1 + 0.2 * _A.sign())).mean().item()
_lp = _old.clone().requires_grad_()
_opt = torch.optim.SGD([_lp], lr=0.05 * 256)
_hist = []
for _ in range(200):
    _out = rl.ppo_clip_loss(_lp, _old, _A, epsilon=0.2, backend="torch")  # the PyTorch path: 200 steps, fast
    _hist.append((_out.loss.item(), _out.clip_fraction.item()))
    _opt.zero_grad()
    _out.loss.backward()
    _opt.step()
_loss, _clip = (np.array(_h) for _h in zip(*_hist))
assert (_loss >= _L_star - 1e-12).all() and _loss[-1] - _L_star < 1e-4  # "settles at L* and never goes below it"
assert (np.diff(_clip) >= 0).all() and _clip[-1] > 0.95  # "clip_fraction rises towards 1"

# %% [markdown] tags=["answer-1"]
# **Answer 1.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-2"]
# **Answer 2.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-3"]
# **Answer 3.** *Your answer here (code for it: in cells under this one).*

# %% [markdown]
# ## What you now know
#
# * PPO's loss is $-\operatorname{mean}\min(\rho_t \hat A_t, \operatorname{clip}(\rho_t, 1-\epsilon,
#   1+\epsilon) \hat A_t)$, with $\rho_t = \pi/\pi_{\text{old}}$ and GAE's scan for $\hat A_t$.
# * Where the clipped term is strictly the minimum, the gradient is 0. A tie keeps its gradient:
#   at $\rho = 1$ it is the policy gradient $-\hat A_t/N$.
# * A sum is an associative reduction. Partial sums added in a fixed order give the same bits on
#   every call; atomics add in whatever order the programs finish.
# * `rl.ppo_clip_loss` fuses the loss with that sum, never reads padding, and also returns
#   `clip_fraction` and `approx_kl`.

# %% [markdown]
# For maintainers: how the package implements this notebook's kernels is in [notebook 13c, Inside PPO](13c_inside_the_package.ipynb#Inside-PPO).
