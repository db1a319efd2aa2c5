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
# # 06 — Soft Actor-Critic: soft λ-returns as one scan
#
# * **You will learn:** soft λ-returns with a min over critics, SAC's actor and temperature
#   losses, soft λ-targets as a Triton prologue, and the bias of multi-step targets on replayed
#   data.
# * **Time:** 2.5–3 h with the open questions; 1–1.5 h for the reading and the checked exercise.
# * **Needs:** notebook 03 (the exercise starts from its `td_lambda_prologue`, copied here). No GPU.
# * **Conventions:** the course's flags, values and hook signatures:
#   [Names and signatures](GLOSSARY.md#names-and-signatures) in the glossary.
# * **Minimum path:** sections 1–5 and the checked exercise `soft_lambda_targets`. The rest can wait.
# * **Checks cells** (folded, starting `# Checks`): skip reading their code; where the text says a
#   folded cell prints a table, read its output.
#
# Soft Actor-Critic (SAC) maximises reward plus $\alpha$ times the policy's entropy; $\alpha$ is
# called the temperature. SAC learns from a *replay buffer* of transitions collected by earlier
# versions of the policy. Its critic regresses on a one-step *soft* target, which CleanRL's
# `sac_continuous_action.py` computes in two lines (here in this notebook's names):
#
# ```python
# min_qf_next_target = torch.min(q1, q2) - alpha * next_lp
# G = r + (1 - term) * gamma * min_qf_next_target  # CleanRL's next_q_value
# ```
#
# * `q1`, `q2` are two target critics, $\bar Q_1$ and $\bar Q_2$, at the next state $s_{t+1}$ and
#   an action $\tilde u_{t+1} \sim \pi$ sampled fresh there (the tilde sets it apart from the
#   buffer's action $u_{t+1}$). Their min counters overestimation ("clipped double Q").
# * `next_lp` is $\log\pi(\tilde u_{t+1}|s_{t+1})$: $-\alpha$ times it is the entropy bonus.
# * `term` is 1 where step $t$ ends its episode by a termination.
#
# In symbols, $G_t = r_t + \gamma(1-\text{term}_t)V'_t$, with the soft next value
# $V'_t = \min_k \bar Q_k(s_{t+1}, \tilde u_{t+1}) - \alpha\log\pi(\tilde u_{t+1}|s_{t+1})$.
#
# **Add λ.** As TD(λ) does (notebook 03), the soft λ-return mixes that bootstrap with the next
# step's target $G_{t+1}$:
#
# $$G_t = r_t + \gamma(1-\text{term}_t)\Big[(1-\lambda)V'_t + \lambda\big(G_{t+1} - \alpha\log\pi(u_{t+1}|s_{t+1})\big)\Big].$$
#
# Its parts, one at a time:
#
# * $V'_t$, the bootstrap, estimates the soft value of the next state,
#   $V(s_{t+1}) = \mathbb{E}_{u\sim\pi}\big[Q(s_{t+1}, u) - \alpha\log\pi(u|s_{t+1})\big]$, from the fresh action $\tilde u_{t+1}$.
# * $G_{t+1}$, the next step's target, estimates $Q(s_{t+1}, u_{t+1})$ at the buffer's action
#   $u_{t+1}$. A soft $Q(s, u)$ counts the entropy bonuses of the actions after $u$, not of $u$ itself.
# * $-\alpha\log\pi(u_{t+1}|s_{t+1})$ adds that missing bonus of $u_{t+1}$. The sum is a second,
#   one-sample estimate of $V(s_{t+1})$, unbiased only when $u_{t+1} \sim \pi$; replay breaks this (section 5).
# * λ weighs the two estimates.
#
# At λ = 0 it is CleanRL's target. The trace stops where an episode ends and at the window's last
# step: [section 2's table](#Where-the-trace-stops) says what such a step computes.
#
# <details><summary>Details (optional): the papers, the inputs and the target critics</summary>
#
# * **Actions are written $u$,** as in notebooks 03 and 04, because $a_t$ names the scan's multiplier.
# * **The papers.** SAC: Haarnoja, Zhou, Abbeel, Levine, *Soft Actor-Critic: Off-Policy Maximum
#   Entropy Deep Reinforcement Learning with a Stochastic Actor*, ICML 2018. Clipped double Q:
#   Fujimoto et al., ICML 2018. The learned $\alpha$: Haarnoja et al., *Soft Actor-Critic
#   Algorithms and Applications*, arXiv 1812.05905.
# * **`log_probs` is the current policy's.** It is not the behaviour policy's value, which a
#   buffer may store beside the action.
# * **A truncation needs no `next_values`,** because `next_q` already values the real next state.
# * **The target critics** $\bar Q_k$ are averaged after every update,
#   $\bar\theta_k \leftarrow \tau\theta_k + (1-\tau)\bar\theta_k$ ($\tau = 0.005$ in the paper).
#   They keep the target from moving with every step of the critic it trains. The package never
#   sees a network.
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
from rltriton_lite import exercises, profile, reference, sac

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# Random inputs are drawn on the CPU with a fixed seed and then moved to DEVICE, so a GPU sees the same numbers.
# the Triton kernels: compiled on a GPU, in the interpreter on a CPU (backend="auto" takes the PyTorch path on a CPU)
KERNEL = "triton"
rng = np.random.default_rng(6)
n = lambda x: x.detach().cpu().numpy()  # noqa: E731

# %% [markdown]
# At λ = 0 the package's `rl.sac_targets(r, (q1, q2), next_lp, ...)` gives CleanRL's target. For
# λ > 0 it also takes `log_probs`, the current policy's log-probabilities of the buffer's actions.

# %%
torch.manual_seed(5)
r, q1, q2, next_lp = (torch.randn(4, 50).to(DEVICE) for _ in range(4))
term = torch.rand(4, 50).to(DEVICE) < 0.1
cleanrl = r + (1 - term.float()) * 0.99 * (torch.min(q1, q2) - 0.2 * next_lp)  # safe: Q is finite after terminations
G0 = rl.sac_targets(r, (q1, q2), next_lp, gamma=0.99, alpha=0.2, terminated=term, backend=KERNEL)
torch.testing.assert_close(G0, cleanrl)
print("λ = 0: r + γ(1 − term)(min Q̄ − α log π')")

# %% [markdown]
# ## 1. The loop
#
# The ground truth is a float64 loop. Its variable `carry` holds $G_{t+1} - \alpha\log\pi_{t+1}$,
# the soft value of the step that follows:

# %%
print(inspect.getsource(reference.sac_targets))

# %% [markdown]
# A case by hand: three steps, $\gamma = 0.5$, $\alpha = 0.5$, rewards 1, two critics, and the
# episode terminates after step 1. The comments compute the soft next values first, then the
# targets for $\lambda = 0$, $0.5$ and $1$.

# %%
r = [1.0, 1.0, 1.0]
next_q = [[2.0, 4.0, 6.0], [3.0, 3.0, 8.0]]
next_lp, lp, term = [-2.0, 0.0, -2.0], [-1.0, -2.0, -2.0], [0, 1, 0]
G = {lam: reference.sac_targets(r, next_q, next_lp, gamma=0.5, alpha=0.5, lambda_=lam, log_probs=lp, terminated=term)
     for lam in (0.0, 0.5, 1.0)}
print(G)
# V' = min(Q1, Q2) − 0.5·next_lp = [2 + 1, 3 − 0, 6 + 1] = [3, 3, 7].
# λ=0, CleanRL's target: G = r + 0.5·(1−term)·V' = [1 + 1.5, 1 (terminal), 1 + 3.5] = [2.5, 1, 4.5].
# λ>0: G_2 = 4.5 (window end: bootstrap), G_1 = 1 (terminal); the carry into t=0 is G_1 − 0.5·lp_1 = 1 + 1 = 2.
#   λ=0.5: G_0 = 1 + 0.5·(0.5·3 + 0.5·2) = 2.25.    λ=1: G_0 = 1 + 0.5·2 = 2.
np.testing.assert_allclose(G[0.0], [2.5, 1.0, 4.5])
np.testing.assert_allclose(G[0.5], [2.25, 1.0, 4.5])
np.testing.assert_allclose(G[1.0], [2.0, 1.0, 4.5])

# %% [markdown]
# ## 2. The soft λ-return as one scan
#
# A reverse scan computes $y_t = b_t + a_t\,y_{t+1}$, from the last step back to the first
# (notebook 00). This section writes $G_t$ in that form; the exercise builds this very scan.
# Write $\log\pi_{t+1}$ for $\log\pi(u_{t+1}|s_{t+1})$, of the buffer's next action (`log_probs` at
# step $t + 1$), and let γ and λ vary per step.
#
# A step is *done* where it terminates, is truncated, or is the window's last step: it takes
# nothing from step $t + 1$. At a done step the prologue sets $\text{reset}_t$, and the scan
# selects $y_t = b_t$ in place of $b_t + a_t\,y_{t+1}$. The step's effective λ,
# $\lambda^{\text{eff}}_t$, is $\lambda_t$, but 0 at a done step. $[\lnot\text{term}_t]$ is 0 at a
# termination and 1 elsewhere. Put $\lambda^{\text{eff}}_t$ for λ in the introduction's bracket,
# multiply it out, and sort its terms. The factor of $G_{t+1}$ is $a_t$; the rest is $b_t$:
#
# $$a_t = \gamma_t\lambda^{\text{eff}}_t, \qquad
#   b_t = r_t + [\lnot\text{term}_t]\,\gamma_t\big[(1-\lambda^{\text{eff}}_t)V'_t -
#   \lambda^{\text{eff}}_t\,\alpha\log\pi_{t+1}\big].$$
#
# **Section 1's example, traced.** Take $\lambda = 0.5$, with $\gamma = \alpha = 0.5$,
# $V' = [3, 3, 7]$ and $\log\pi = [-1, -2, -2]$. Step 1 terminates and step 2 is the window's
# last, so both are done. The prologue fills the columns up to $\text{reset}_t$. The scan fills
# $G_t$ from the bottom row up.
#
# | $t$ | $\lambda^{\text{eff}}_t$ | $a_t = \gamma\lambda^{\text{eff}}_t$ | $b_t$ | $\text{reset}_t$ | $G_t$ (scan) |
# | --- | --- | --- | --- | --- | --- |
# | 0 | 0.5 | 0.25 | $1 + 0.5\,[0.5 \cdot 3 - 0.5 \cdot 0.5 \cdot (-2)] = 2$ | no | $2 + 0.25 \cdot 1 = 2.25$ |
# | 1 | 0 (terminated) | 0 | 1 (no bootstrap) | yes | 1 |
# | 2 | 0 (window end) | 0 | $1 + 0.5 \cdot 7 = 4.5$ | yes | 4.5 |
#
# The last column is section 1's λ = 0.5 target, $[2.25, 1, 4.5]$. Step 0's $b_0$ reads
# $\log\pi_1 = -2$, one step ahead.

# %% jupyter={"source_hidden": true}
# Checks: the traced example against section 1's loop (CI runs them; skip when reading)
_lp, _term = np.array(lp), np.array(term, bool)
_done = _term.copy()
_done[-1] = True
_lam_eff = np.where(_done, 0.0, 0.5)
_v = np.min(next_q, axis=0) - 0.5 * np.array(next_lp)
_lp_next = np.append(_lp[1:], 0.0)  # log π_{t+1}; none after the window's last step
_a = 0.5 * _lam_eff
_b = 1.0 + np.where(_term, 0.0, 0.5 * ((1 - _lam_eff) * _v - _lam_eff * 0.5 * _lp_next))
_G = np.zeros(3)
for _t in (2, 1, 0):
    _G[_t] = _b[_t] if _done[_t] else _b[_t] + _a[_t] * _G[_t + 1]
np.testing.assert_allclose(_v, [3, 3, 7])
assert list(_done) == [False, True, True] and _lp_next[0] == -2  # "both are done"; "reads log π_1 = -2"
np.testing.assert_allclose(_lam_eff, [0.5, 0, 0])
np.testing.assert_allclose(_a, [0.25, 0, 0])
np.testing.assert_allclose(_b, [2, 1, 4.5])
np.testing.assert_allclose(_G, [2.25, 1, 4.5])
np.testing.assert_allclose(_G, G[0.5])  # the loop of section 1

# %% [markdown]
# ### Where the trace stops
#
# Each kind of step computes:
#
# | step $t$ | $\lambda^{\text{eff}}_t$ | $\text{reset}_t$ | $b_t$ |
# | --- | --- | --- | --- |
# | ordinary | $\lambda_t$ | no | $r_t + \gamma_t\big[(1-\lambda_t)V'_t - \lambda_t\alpha\log\pi_{t+1}\big]$ |
# | termination | 0 | yes | $r_t$ (no bootstrap) |
# | truncation | 0 | yes | $r_t + \gamma_t V'_t$ |
# | the window's last step | 0 | yes | $r_t + \gamma_t V'_t$ ($r_t$ if it terminates) |
#
# Three guards act at a done step:
#
# 1. $\lambda^{\text{eff}}_t = 0$ in place of $\lambda_t$. It sets $a_t = 0$ and reshapes $b_t$.
# 2. $[\lnot\text{term}_t]$, a select (not a product): it drops the bracket at a termination.
# 3. $\text{reset}_t$: the scan takes $y_t = b_t$, and never reads $y_{t+1}$.
#
# The next two cells drop each guard in turn on four steps, with $\gamma = \lambda = \alpha = 0.5$.
# Step 0 is ordinary, step 1 is truncated (step 2 starts a new episode), step 2 terminates, and
# step 3, the first step of the next episode, is the window's last. Every reward and $\log\pi$ is
# finite, as in a real buffer. Only $V'_2$, behind the termination, is NaN. The scan starts from
# $y_4$, the value past the window. Here it is NaN, a stand-in for whatever follows the window (the
# exercise's checker uses 100).
#
# * **All three guards:** the scan gives section 1's loop on all four steps.
# * **Without guard 1:** the targets are finite but wrong, and nothing warns. $V'_t$ keeps the
#   weight $1-\lambda_t$ at the done steps, and the truncation at step 1 reads the next episode's
#   $\log\pi_2$.
# * **Without guard 2:** the termination bootstraps from $V'_2$, the value of a terminal state. The
#   buffer need not hold a real one there; here it is NaN, and so is the termination's target.
# * **Without guard 3:** $y_t = b_t + 0 \cdot y_{t+1}$, and $0 \cdot \text{NaN}$ is NaN. Every target
#   is NaN: step 3 computes $b_3 + 0 \cdot \text{NaN}$, and the NaN is then the $y_{t+1}$ after done
#   steps 2 and 1, and it reaches step 0.
# * **Without guard 3, from $y_4 = 0$:** the right targets. On finite data, guards 1 and 2 suffice;
#   guard 3 protects against a non-finite $y_{t+1}$, carried in from after a done step or from past
#   the window.
# * **All three, with the plain $a_t = \gamma\lambda$:** nothing changes, because a reset never reads $a_t$.

# %%
r4, v4 = np.array([1.0, 1.0, 1.0, 1.0]), np.array([3.0, 4.0, np.nan, 2.0])  # V'_t: NaN behind the termination only
lp4 = np.array([-1.0, -2.0, -4.0, -3.0])  # log π_t; step 2's is the next episode's
term4, trunc4 = np.array([False, False, True, False]), np.array([False, True, False, False])
done4 = term4 | trunc4 | (np.arange(4) == 3)  # step 3: the window's last
lp_next4 = np.append(lp4[1:], 0.0)  # log π_{t+1}; 0 past the window


def prologue4(guard1=True, guard2=True, guard3=True):
    """Section 2's (a_t, b_t, reset_t) with γ = λ = α = 0.5, each guard on or off."""
    lam = np.where(done4, 0.0, 0.5) if guard1 else np.full(4, 0.5)  # λ^eff_t, or the plain λ_t
    bracket = 0.5 * ((1 - lam) * v4 - lam * 0.5 * lp_next4)  # γ[(1 − λ)V'_t − λα log π_{t+1}]
    b = r4 + (np.where(term4, 0.0, bracket) if guard2 else bracket)  # [¬term_t], a select
    return 0.5 * lam, b, (done4 if guard3 else np.zeros(4, bool))


a4, b4, reset4 = prologue4()  # all three guards: the table's rows
assert b4[1] == r4[1] + 0.5 * v4[1] == 3 and b4[2] == r4[2] == 1  # truncation: r_t + γ_t V'_t; termination: r_t
assert b4[3] == r4[3] + 0.5 * v4[3] == 2 and list(reset4) == [False, True, True, True]  # the window's last step
assert (prologue4(True, False, False)[0][done4] == 0).all()  # guard 1 alone "sets a_t = 0" at every done step
assert np.isnan(prologue4(True, False, False)[1][2])  # without guard 2 the termination's b_t reads V'_2 = NaN
assert np.isfinite(r4).all() and np.isfinite(lp4).all() and list(np.isnan(v4)) == [False, False, True, False]  # "Only V'_2"

# %%
def scan4(a, b, reset, y_past=np.nan):  # y_t = b_t at a reset, b_t + a_t y_{t+1} elsewhere
    y, G4 = y_past, np.zeros(4)  # y_4: past the window
    for t in (3, 2, 1, 0):
        y = G4[t] = b[t] if reset[t] else b[t] + a[t] * y
    return G4


_, b4, reset4 = prologue4()
runs4 = {"all three guards": scan4(*prologue4()), "no guard 1 (λ^eff)": scan4(*prologue4(guard1=False)),
         "no guard 2 ([¬term])": scan4(*prologue4(guard2=False)), "no guard 3 (reset)": scan4(*prologue4(guard3=False)),
         "no guard 3, y_4 = 0": scan4(*prologue4(guard3=False), y_past=0.0),
         "all three, a_t = γλ": scan4(np.full(4, 0.5 * 0.5), b4, reset4)}
for name, G4 in runs4.items():
    print(f"{name:22s} G_0, G_1, G_2, G_3 = {G4[0]}, {G4[1]}, {G4[2]}, {G4[3]}")
loop4 = reference.sac_targets(r4, [v4], np.zeros(4), gamma=0.5, alpha=0.5, lambda_=0.5, log_probs=lp4,
                              terminated=term4, truncated=trunc4)  # section 1's loop; V' = v4 (one critic, next_lp 0)
np.testing.assert_allclose(runs4["all three guards"], loop4)  # "on all four steps"
np.testing.assert_allclose(loop4, [2.75, 3.0, 1.0, 2.0])  # 2 + 0.25 · 3; r_1 + γV'_1; r_2; r_3 + γV'_3
np.testing.assert_allclose(runs4["no guard 1 (λ^eff)"], [2.625, 2.5, 1.0, 1.5])  # finite but wrong
assert runs4["no guard 1 (λ^eff)"][1] == r4[1] + 0.5 * ((1 - 0.5) * v4[1] - 0.5 * 0.5 * lp4[2])  # reads log π_2
assert np.isnan(runs4["no guard 2 ([¬term])"][2]) and list(runs4["no guard 2 ([¬term])"][[0, 1, 3]]) == [2.75, 3.0, 2.0]
assert np.isnan(runs4["no guard 3 (reset)"]).all()  # 0 · NaN is NaN, from y_4 back to step 0
assert (runs4["no guard 3, y_4 = 0"] == runs4["all three guards"]).all()  # on finite data guards 1 and 2 suffice
assert (runs4["all three, a_t = γλ"] == runs4["all three guards"]).all()  # a reset never reads a_t

# %% [markdown]
# The same prologue and scan in NumPy, against the loop, on random rows with terminations and
# truncations:

# %%
def sac_as_scan(r, next_q, next_lp, lp, gamma, alpha, lam, terminated, truncated):
    """G_t by section 2's scan: the prologue's (a_t, b_t, reset_t), then the reverse scan."""
    done = terminated | truncated
    done[..., -1] = True                                                  # the window's last step
    lam_eff = np.where(done, 0.0, lam)                                    # λ^eff_t: λ where the trace goes on
    v_soft = np.min(next_q, axis=0) - alpha * next_lp                     # V'_t
    lp_next = np.concatenate([lp[..., 1:], np.zeros_like(lp[..., :1])], axis=-1)  # log π_{t+1}; 0 past the end
    a = gamma * lam_eff
    b = r + np.where(terminated, 0.0, gamma * ((1 - lam_eff) * v_soft - lam_eff * alpha * lp_next))
    G, y = np.zeros_like(r), np.zeros(r.shape[:-1])                      # y: the value carried in, 0 at first
    for t in reversed(range(r.shape[-1])):                                # the scan (sequential here)
        y = G[..., t] = np.where(done[..., t], b[..., t], b[..., t] + a[..., t] * y)  # reset_t = done_t
    return G


R, NLP, LP = rng.normal(size=(3, 40)), rng.normal(size=(3, 40)) - 1, rng.normal(size=(3, 40)) - 1
Q = rng.normal(size=(2, 3, 40))  # two critics
TERM = rng.random((3, 40)) < 0.1
TRUNC = (rng.random((3, 40)) < 0.1) & ~TERM
G_loop = reference.sac_targets(R, list(Q), NLP, gamma=0.97, alpha=0.2, lambda_=0.8, log_probs=LP, terminated=TERM,
                               truncated=TRUNC)
np.testing.assert_allclose(sac_as_scan(R, Q, NLP, LP, 0.97, 0.2, 0.8, TERM, TRUNC), G_loop, rtol=1e-12, atol=1e-12)
print("the scan of G == the loop, with terminations and truncations")

# %% jupyter={"source_hidden": true}
# Checks: section 2's claims about λ^eff_t, terminations and truncations (CI runs them; skip when reading)
_done = TERM | TRUNC
_done[:, -1] = True
_lam_eff = np.where(_done, 0.0, 0.8)
assert (_lam_eff[TERM] == 0).all()  # a terminated step is done, so λ^eff_t = 0: a_t needs no [¬term_t]
assert TRUNC.any() and not (TRUNC & TERM).any()  # truncated steps are done but not terminated ...
_v = Q.min(0) - 0.2 * NLP
_lp_next = np.concatenate([LP[:, 1:], np.zeros((3, 1))], axis=1)
_bracket = 0.97 * ((1 - _lam_eff) * _v - _lam_eff * 0.2 * _lp_next)
assert (_bracket[TRUNC] == 0.97 * _v[TRUNC]).all()  # ... so they bootstrap from V'_t alone
_bracket_plain = 0.97 * ((1 - 0.8) * _v - 0.8 * 0.2 * _lp_next)  # the plain λ in b_t
assert (_bracket_plain[TRUNC] != _bracket[TRUNC]).all()  # "λ^eff_t = 0 ... bootstraps from V'_t alone" ...
assert (_bracket_plain[:, -1] != _bracket[:, -1]).all()  # ... at a truncation or the window's last step
_removed = -0.97 * 0.8 * (_v + 0.2 * _lp_next)  # without guard 1: V'_t keeps weight 1 − λ, and log π_{t+1} stays
np.testing.assert_allclose((_bracket_plain - _bracket)[_done & ~TERM], _removed[_done & ~TERM], rtol=1e-12)
assert (_lp_next[:, -1] == 0).all() and (_lp_next[:, :-1] == LP[:, 1:]).all()  # last step: 0; a truncated one: step t + 1's

# %% jupyter={"source_hidden": true}
# Checks: section 2's guards and a_t at a done step, on the random rows (CI runs them; skip when reading)
_done = TERM | TRUNC
_done[:, -1] = True
_lam_eff = np.where(_done, 0.0, 0.8)
_v = Q.min(0) - 0.2 * NLP
_lp_next = np.concatenate([LP[:, 1:], np.zeros((3, 1))], axis=1)
_bracket = 0.97 * ((1 - _lam_eff) * _v - _lam_eff * 0.2 * _lp_next)
assert (R + _bracket != R)[TERM].all()  # at a termination λ^eff_t = 0 alone leaves γV'_t: [¬term_t] removes it


def _scan(a, b, reset):  # y_t = b_t where reset_t, b_t + a_t y_{t+1} elsewhere
    y, carry = np.zeros_like(b), np.zeros(b.shape[:-1])
    for t in reversed(range(b.shape[-1])):
        carry = y[..., t] = np.where(reset[..., t], b[..., t], b[..., t] + a[..., t] * carry)
    return y


_b_nan = np.where(np.roll(_done, 1, axis=1), np.nan, 1.0)  # NaN at every step behind a done one
_own = _done & ~np.isnan(_b_nan)  # done steps whose own b is finite ...
_own[:, -1] = False  # ... and a NaN behind them (after the row's last step, y_in is 0)
assert _own.any() and (0.97 * _lam_eff[_own] == 0).all()  # a_t = 0 there already ...
assert np.isfinite(_scan(0.97 * _lam_eff, _b_nan, _done)[_own]).all()  # ... and the select keeps the NaN out ...
assert np.isnan(_scan(0.97 * _lam_eff, _b_nan, np.zeros_like(_done))[_own]).all()  # ... where b_t + 0 · NaN does not
_b = R + np.where(TERM, 0.0, _bracket)
for _a in (0.97 * _lam_eff, np.full_like(R, 0.97 * 0.8)):  # a_t = γλ^eff_t or the plain γλ: a reset never reads it
    np.testing.assert_allclose(_scan(_a, _b, _done), G_loop, rtol=1e-12, atol=1e-12)

# %% [markdown]
# ## 3. The kernel
#
# `rl.sac_targets` runs section 2's scan as one Triton kernel:
#
# * **The min over critics happens in the kernel.** Each critic is read once. The backward sends
#   the gradient only to the smallest critic (on ties, the first one).
# * **`log_probs` is read once**, at its own step. Padding is never read.
# * **λ = 0 is the usual SAC target:** $a_t = 0$ at every step, and `log_probs` is not needed.
#   Given as a number, λ = 0 runs an elementwise kernel instead of the scan.
# * **Left to the caller:** pass the *target* critics' outputs as `next_q`, computed under
#   `torch.no_grad()`.
#
# How the package's kernel differs from section 2's scan (the exercise does not need it):
# [notebook 13c, the scan of H](13c_inside_the_package.ipynb#The-scan-of-H).

# %% [markdown]
# ## 4. The actor and temperature losses
#
# SAC's actor and temperature losses are reductions, not scans. The actor's loss reads the min
# over critics, and the package takes that min inside the kernel, as in section 3:
#
# $$J_\pi = \operatorname{mean}\big(\alpha\log\pi(u|s) - \min_k Q_k(s, u)\big), \qquad
#   J(\log\alpha) = -\operatorname{mean}\big(\log\alpha\,(\log\pi(u|s) + \bar{\mathcal H})\big),$$
#
# Here $u \sim \pi(\cdot|s)$ is sampled with the reparameterisation trick, so that gradients flow
# through the sample to the policy, and $\log\pi$ is a constant in $J(\log\alpha)$. Each mean is
# over the $N$ unmasked elements. The gradients are simple enough to assert exactly:
#
# * $\partial J_\pi/\partial\log\pi = \alpha/N$;
# * $\partial J_\pi/\partial Q_k = -1/N$ on the critic that is the min;
# * $\partial J/\partial\log\alpha = -\operatorname{mean}(\log\pi + \bar{\mathcal H})$.
#
# Implementations learn $\log\alpha$, so that α stays positive. With SB3's loss, which the package
# follows, α rises while the policy's entropy $-\operatorname{mean}\log\pi$ is below the target
# $\bar{\mathcal H}$, and falls while it is above.
#
# <details><summary>Details (optional): why log α, and the paper's, softlearning's and CleanRL's forms</summary>
#
# With SB3's loss the gradient in $\log\alpha$ does not depend on α. So a step changes α by the
# same *factor* whether α is 1 or $10^{-3}$, and one learning rate serves every scale.
#
# The paper's temperature objective is in α,
# $J(\alpha) = \mathbb{E}\big[-\alpha\log\pi(u|s) - \alpha\bar{\mathcal H}\big]$, with gradient
# $\partial J/\partial\alpha = -\operatorname{mean}(\log\pi + \bar{\mathcal H})$. SB3's loss,
# $J(\log\alpha)$ above, is the paper's $J$ with $\log\alpha$ in place of α, so its gradient in
# $\log\alpha$ is exactly the paper's $\partial J/\partial\alpha$.
#
# The authors' first softlearning code (for TensorFlow 1) writes the same loss as SB3. CleanRL,
# and softlearning's later TensorFlow 2 code, write $J(e^{\log\alpha})$ instead. Its gradient in $\log\alpha$ is $\alpha$ times SB3's (the chain rule,
# $d\alpha/d\log\alpha = \alpha$). As $\alpha > 0$, the sign is the same either way, and so is
# the direction α moves.
#
# </details>

# %%
B, T = 4, 50  # a small batch: 4 rows of 50 steps
lp_a = (torch.randn(B, T, device=DEVICE) - 1.0).requires_grad_()
q_a = [torch.randn(B, T, device=DEVICE, requires_grad=True) for _ in range(2)]
m_a = torch.rand(B, T, device=DEVICE) > 0.2
N = int(m_a.sum())

actor = rl.sac_actor_loss(lp_a, q_a, alpha=0.2, mask=m_a, backend=KERNEL)
np.testing.assert_allclose(actor.item(), reference.sac_actor_loss(n(lp_a.detach()), [n(q.detach()) for q in q_a],
                                                                  alpha=0.2, mask=n(m_a)), rtol=1e-5)
d_lp, d_q1, d_q2 = torch.autograd.grad(actor, (lp_a, *q_a))
torch.testing.assert_close(d_lp, torch.where(m_a, 0.2 / N, 0.0))
first_is_min = q_a[0] <= q_a[1]
torch.testing.assert_close(d_q1, torch.where(m_a & first_is_min, -1.0 / N, 0.0))
torch.testing.assert_close(d_q2, torch.where(m_a & ~first_is_min, -1.0 / N, 0.0))

log_alpha = torch.tensor([0.2], device=DEVICE).log().requires_grad_()
target_entropy = -6.0  # -dim(A), e.g. HalfCheetah
temp = rl.sac_temperature_loss(log_alpha, lp_a, target_entropy, mask=m_a, backend=KERNEL)
expected = reference.sac_temperature_loss(n(log_alpha.detach()), n(lp_a.detach()), target_entropy, mask=n(m_a))
np.testing.assert_allclose(temp.item(), expected, rtol=1e-5)
(d_log_alpha,) = torch.autograd.grad(temp, log_alpha)
torch.testing.assert_close(d_log_alpha, -(lp_a.detach()[m_a] + target_entropy).mean().reshape(1))
tiny = torch.tensor([1e-3], device=DEVICE).log().requires_grad_()  # α = 0.001: the same gradient, scale-free
d_tiny = rl.sac_temperature_loss(tiny, lp_a, target_entropy, mask=m_a, backend=KERNEL)
torch.testing.assert_close(torch.autograd.grad(d_tiny, tiny)[0], d_log_alpha)
# CleanRL's form, J(e^{log α}): the same sign, α times the step
cleanrl_temp = (-log_alpha.exp() * (lp_a.detach()[m_a] + target_entropy)).mean()
(d_cleanrl,) = torch.autograd.grad(cleanrl_temp, log_alpha)
torch.testing.assert_close(d_cleanrl, log_alpha.detach().exp() * d_log_alpha)
assert torch.sign(d_cleanrl) == torch.sign(d_log_alpha)
print("actor and temperature losses == the loop, gradients as derived")

# %% [markdown]
# ## 5. What λ > 0 and the min of critics cost
#
# Two biases of SAC's target, each measured on a small problem: λ > 0 on a replay buffer, and the
# min over noisy critics.
#
# **λ > 0 follows the buffer's actions, not π's.** In a one-state problem, two actions pay 1 and
# 0; $\pi = (0.8, 0.2)$, but an older $\mu = (0.2, 0.8)$ filled the buffer, and the critic is exact.
# Write $D_t = \mathbb{E}[G_t - Q^\pi(u_t)]$, with $u_t \sim \mu$, for the target's bias. Adding and
# subtracting $Q^\pi(u_{t+1})$ in one step of the λ-return gives a recursion:
#
# $$D_t = \gamma\lambda\,(\Delta + D_{t+1}), \qquad D_{T-1} = 0.$$
#
# Here $\Delta = \mathbb{E}_\mu[r - \alpha\log\pi] - \mathbb{E}_\pi[r - \alpha\log\pi] < 0$, the gap per step
# between the soft rewards (both scored with π's log-probabilities) of μ's and π's actions; it does not
# depend on λ. So the bias $D$ is 0 at λ = 0 and grows more negative as λ grows. The next cell
# measures it over 4,000 replayed windows of 60 steps. So use `lambda_ > 0` on replayed data only
# when the data is recent, or with a correction such as Retrace
# ([notebook 03's `retrace` exercise](03_td_lambda.ipynb#Exercises)).
#
# <details><summary>Details (optional): why the bias arises, the setup in full, and the recursion derived</summary>
#
# A multi-step target follows the buffer's actions $u_{t+1}, u_{t+2}, \dots$, taken by older
# policies, and nothing reweights them (notebook 04's V-trace does). The bias grows as λ grows and
# the data ages. λ = 0 has no off-policy bias, because its only action, $\tilde u_{t+1}$, is
# sampled from the current $\pi$.
#
# The key step: add and subtract $Q^\pi(u_{t+1})$ in the carried term of $G_t - Q^\pi(u_t)$. One
# part then has mean $D_{t+1}$ and the other has mean Δ. In full:
#
# The one state is one that every action leads back to. The exact critic gives the soft
# $Q^\pi(u) = r(u) + \gamma V^\pi$, with $V^\pi = \mathbb{E}_\pi[r - \alpha\log\pi]/(1-\gamma)$.
# The gap is $\Delta = \mathbb{E}_\mu[r - \alpha\log\pi] - \mathbb{E}_\pi[r - \alpha\log\pi]$,
# negative here: $\mu$ mostly takes the action that pays 0. The window's last step bootstraps
# from $V'$ alone, so $D_{T-1} = 0$.
#
# In this one-state problem, every step's expected soft reward under $\pi$ is the same. So $V^\pi$
# is that reward times $1 + \gamma + \gamma^2 + \dots = 1/(1-\gamma)$:
#
# $$(1-\gamma)V^\pi = \mathbb{E}_\pi[r - \alpha\log\pi].$$
#
# One step of the λ-return and the exact critic are
#
# $$G_t = r(u_t) + \gamma\big[(1-\lambda)V'_t + \lambda\,(G_{t+1} - \alpha\log\pi(u_{t+1}))\big],
#   \qquad Q^\pi(u_t) = r(u_t) + \gamma V^\pi ,$$
#
# where $V'_t = Q^\pi(\tilde u) - \alpha\log\pi(\tilde u)$ is the soft bootstrap at a fresh
# $\tilde u \sim \pi$. Subtract the two. The reward cancels, and two terms are left:
#
# $$G_t - Q^\pi(u_t) = \gamma(1-\lambda)\big(V'_t - V^\pi\big)
#   + \gamma\lambda\big(G_{t+1} - \alpha\log\pi(u_{t+1}) - V^\pi\big).$$
#
# * **The bootstrap term, $\gamma(1-\lambda)(V'_t - V^\pi)$, has mean 0.** Its action is drawn
#   from $\pi$ and the critic is exact, so $\mathbb{E}[V'_t] = V^\pi$. This part adds no bias.
# * **The carried term, $\gamma\lambda\,(G_{t+1} - \alpha\log\pi(u_{t+1}) - V^\pi)$.** Add and
#   subtract $Q^\pi(u_{t+1})$. The part $G_{t+1} - Q^\pi(u_{t+1})$ has mean $D_{t+1}$. The rest,
#   $Q^\pi(u_{t+1}) - \alpha\log\pi(u_{t+1}) - V^\pi$, equals
#   $(r - \alpha\log\pi)(u_{t+1}) - \mathbb{E}_\pi[r - \alpha\log\pi]$, by the identity above.
#   Its mean over $u_{t+1} \sim \mu$ is $\Delta$.
#
# Together, $D_t = \gamma\lambda\,(\Delta + D_{t+1})$. Unrolled,
# $D_0 = \Delta\sum_{k=1}^{T-1}(\gamma\lambda)^k$. As $T \to \infty$ it tends to
# $\gamma\lambda\Delta/(1-\gamma\lambda)$, and at λ = 0 it is 0.
#
# </details>

# %%
g_, alpha_ = 0.9, 0.2
r_of, pi_, mu_ = np.array([1.0, 0.0]), np.array([0.8, 0.2]), np.array([0.2, 0.8])
soft = lambda nu: float(nu @ (r_of - alpha_ * np.log(pi_)))  # noqa: E731  E_ν[r − α log π]
Q_pi = r_of + g_ * soft(pi_) / (1 - g_)                       # the exact soft Q^π of each action
delta = soft(mu_) - soft(pi_)
mc = np.random.default_rng(1)
acts = (mc.random((4000, 60)) < mu_[1]).astype(int)  # replayed actions u_t ~ μ
nxt = (mc.random((4000, 60)) < pi_[1]).astype(int)   # ũ_{t+1} ~ π, sampled fresh by the learner
Ds = []  # D_0 at each λ
for lam_ in (0.0, 0.5, 1.0):
    G_mc = reference.sac_targets(r_of[acts], [Q_pi[nxt]], np.log(pi_)[nxt], gamma=g_, alpha=alpha_, lambda_=lam_,
                                 log_probs=np.log(pi_)[acts])
    bias = (G_mc[:, 0] - Q_pi[acts[:, 0]]).mean()
    exact = delta * sum((g_ * lam_) ** k for k in range(1, 60)) + 0.0  # D_0, unrolled
    D = 0.0  # D_{T-1}: the window's last step bootstraps, unbiased
    for _ in range(59):  # back to D_0
        D = g_ * lam_ * (delta + D)
    assert abs(D - exact) < 1e-12  # the recursion gives the unrolled sum
    Ds.append(D)
    print(f"λ = {lam_}: mean(G_0 − Q^π(u_0)) = {bias:+.3f}   (the recursion's D_0 {D + 0.0:+.3f})")  # (+ 0.0: no −0 at λ = 0)
    assert abs(bias - exact) < 0.05
    assert abs(bias) < 0.05 if lam_ == 0.0 else bias < -0.3  # unbiased at λ = 0, biased (towards μ) above
assert round(D, 3) == -3.895  # λ = 1: D_0 = Δ (0.9 + 0.9² + ... + 0.9⁵⁹)
assert delta < 0 and Ds[0] == 0 > Ds[1] > Ds[2]  # "Δ < 0"; "D is 0 at λ = 0 and grows more negative as λ grows"

# %% [markdown]
# On one row with noisy critics: α shifts the targets up by the entropy bonus $-\alpha\log\pi$, and
# λ replaces the one-step bootstrap by the rewards and bonuses collected, smoothing the noise.

# %%
torch.manual_seed(6)  # the noisy critics below
T1 = 60
r1 = torch.ones(1, T1, device=DEVICE)
true_q = (1 - 0.9 ** torch.arange(T1, 0, -1, device=DEVICE, dtype=torch.float32)) / (1 - 0.9)
next_true = torch.cat([true_q[1:], torch.zeros(1, device=DEVICE)])[None]
q_noisy = [next_true + 2 * torch.randn(1, T1).to(DEVICE) for _ in range(2)]
lp1 = -1.0 + 0.3 * torch.randn(1, T1).to(DEVICE)
next_lp1 = -1.0 + 0.3 * torch.randn(1, T1).to(DEVICE)
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3), sharey=True)
for alpha_ in (0.0, 0.2, 0.5, 1.0):
    ax1.plot(n(rl.sac_targets(r1, q_noisy, next_lp1, gamma=0.9, alpha=alpha_, backend=KERNEL))[0], label=f"α={alpha_}")
ax1.set_title("λ = 0, several α")
for lam_ in (0.0, 0.5, 0.9, 1.0):
    ax2.plot(n(rl.sac_targets(r1, q_noisy, next_lp1, gamma=0.9, alpha=0.2, lambda_=lam_, log_probs=lp1,
                              backend=KERNEL))[0],
             label=f"λ={lam_}")
ax2.set_title("α = 0.2, several λ")
for ax in (ax1, ax2):
    ax.plot(n(true_q), "k--", label="reward-only value")
    ax.set_xlabel("t")
    ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# At α = 0 and λ = 0 the targets sit below the dashed line on average. The min of two noisy
# critics underestimates: the price clipped double Q pays against overestimation. The next cell
# measures it.
#
# <details><summary>Details (optional): the plot's numbers, and the min's bias against the theory</summary>
#
# * **At λ = 0,** α shifts every target up by one step's entropy bonus, $\gamma\alpha(-\log\pi')$,
#   about $0.9\alpha$ here. It is only one step's bonus, because the critics passed in are
#   reward-only and hold no bonus of their own. In training the critics learn the soft value, and
#   the bonuses compound.
# * **At λ = 1,** far from the window's end, there is one bonus per step after the first, each
#   about $0.2$ ($-\log\pi \approx 1$ here, α = 0.2). They add up to about
#   $\sum_{k \ge 1} 0.9^k \cdot 0.2 = 1.8$ above the reward-only value.
# * **At α = 1,** the bonus of about 0.9 nearly cancels the min's bias of about −1.
#
# The min of two independent $\mathcal N(0, 2^2)$ errors has mean $-2/\sqrt\pi \approx -1.13$, so
# the target's expected error is $0.9 \cdot (-1.13) \approx -1.02$. The cell measures
# −1.20 ± 0.18 over 60 steps (the ± is the mean's standard error), about one standard error from it.
#
# </details>

# %%
one_step = rl.sac_targets(r1, q_noisy, next_lp1, gamma=0.9, alpha=0.0, backend=KERNEL)
errors = one_step - (r1 + 0.9 * next_true)  # 60 samples, one per step
bias = errors.mean().item()
std_err = (errors.std() / errors.numel() ** 0.5).item()  # the mean's standard error, from the samples
expected = -0.9 * 2 / np.pi ** 0.5  # 0.9 · E[min of two N(0, 2²)] = -1.02
print(f"mean error of the one-step target: {bias:.2f} ± {std_err:.2f} (expected about {expected:.2f})")
assert bias < -0.4  # 60 steps: the mean's standard error is about 0.19 in theory

# %% jupyter={"source_hidden": true}
# Checks: the measured bias against the theory, as the text says (CI runs them; skip when reading)
assert (round(bias, 2), round(std_err, 2), round(expected, 2)) == (-1.20, 0.18, -1.02)  # the numbers in the text
assert round(abs(bias - expected), 2) == 0.18  # −1.20 is 0.18 from −1.02 ...
assert abs(bias - expected) < 1.5 * std_err  # ... 1.05 standard errors here: "about one"

# %% [markdown]
# ## 6. Kernel against the loop
#
# *Optional.* The kernel against the loop: three critics, terminations, truncations, padding, a
# per-step γ, λ = 0.8 and a time-major buffer.

# %%
torch.manual_seed(5)
B, T = 4, 50
r = torch.randn(B, T).to(DEVICE)
qs = [torch.randn(B, T).to(DEVICE) for _ in range(3)]
next_lp = torch.randn(B, T).to(DEVICE) - 1.0
lp = torch.randn(B, T).to(DEVICE) - 1.0
term = torch.rand(B, T).to(DEVICE) < 0.1
trunc = (torch.rand(B, T).to(DEVICE) < 0.1) & ~term
mask = torch.ones(B, T, dtype=torch.bool, device=DEVICE)
mask[0, :7] = False   # left padding
mask[1, -5:] = False  # right padding
gamma = torch.rand(B, T).to(DEVICE) * 0.1 + 0.9  # a per-step discount
kw = dict(alpha=0.3, lambda_=0.8)

G = rl.sac_targets(r, qs, next_lp, gamma=gamma, log_probs=lp, terminated=term, truncated=trunc, mask=mask,
                   backend=KERNEL, **kw)
expected = reference.sac_targets(n(r), [n(q) for q in qs], n(next_lp), gamma=n(gamma), log_probs=n(lp),
                                 terminated=n(term), truncated=n(trunc), mask=n(mask), **kw)
np.testing.assert_allclose(n(G), expected, rtol=1e-5, atol=1e-5)
assert (G[~mask] == 0).all()

# the same data as a time-major (T, B) buffer: read through strides
tm = lambda x: x.t().contiguous()  # noqa: E731
G_tm = rl.sac_targets(tm(r), [tm(q) for q in qs], tm(next_lp), gamma=tm(gamma), log_probs=tm(lp),
                      terminated=tm(term), truncated=tm(trunc), mask=tm(mask), time_dim=0, backend=KERNEL, **kw)
np.testing.assert_allclose(n(G_tm).T, expected, rtol=1e-5, atol=1e-5)
print("kernel == loop: critics, episodes, truncations, padding, per-step γ, time-major")

# %% [markdown]
# The gradients match autograd of the PyTorch path in float64:

# %%
torch.manual_seed(7)
r64, nlp64, lp64, qa64, qb64 = (torch.randn(2, 30, dtype=torch.float64).to(DEVICE).requires_grad_() for _ in range(5))
w = torch.randn(2, 30, dtype=torch.float64).to(DEVICE)
t2 = torch.rand(2, 30).to(DEVICE) < 0.1
tr2 = (torch.rand(2, 30).to(DEVICE) < 0.1) & ~t2
inputs = (r64, nlp64, lp64, qa64, qb64)
grads = {}
for be in ("triton", "torch"):
    G64 = rl.sac_targets(r64, [qa64, qb64], nlp64, gamma=0.95, alpha=0.3, lambda_=0.8, log_probs=lp64,
                         terminated=t2, truncated=tr2, backend=be)
    grads[be] = torch.autograd.grad((G64 * w).sum(), inputs)
for gk, gt in zip(grads["triton"], grads["torch"]):
    torch.testing.assert_close(gk, gt)
print("gradients match")

# %%
assert profile.rollout_error("sac", 3, 1000, DEVICE) < 1e-5  # 3 × 1,000 steps: four chunks of 256 per row, the carry between them (notebook 01)

# %% [markdown]
# ## 7. How fast is it (H100, measured; the λ = 0 elementwise path only)
#
# At λ = 0, with the backward, **`rl.sac_targets` is faster by both clocks**: the eager formula takes
# 4.6–9.2× its GPU time and 1.08–1.26× its wall time. The wall-clock gain is the smaller one because
# both calls are mostly host time. The folded cell below prints the committed H100 table for the three shapes
# ([notebook 09, section 4](09_benchmarks.ipynb#4.-Fused-losses-against-their-eager-formulas) compares the three losses).

# %% jupyter={"source_hidden": true}
# Checks: the text and the heading above, on the H100's paired loss probe (CI runs them; the printed table is for reading)
vs = profile.eager_against_ours("sac")  # with the backward: {(B, T): both calls' wall and GPU µs, eager ÷ ours}
print(profile.table(profile.eager_rows(vs), digits=3))  # the three shapes, in the text's order
print("* the median of the probe's interleaved rounds, not the quotient of the two wall columns")
x_gpu, x_wall = [v["gpu_ratio"] for v in vs.values()], [v["wall_ratio"] for v in vs.values()]  # eager ÷ ours
assert profile.outward(x_gpu, 1) == (4.6, 9.2)  # "4.6–9.2×", rounded outwards
assert profile.outward(x_wall, 2) == (1.08, 1.26)  # "1.08–1.26×", rounded outwards
assert min(x_wall) > 1 and max(x_wall) < 1.3 < min(x_gpu)  # "faster by both clocks"; "the wall-clock gain is the smaller one"
assert all(v[f"{c}_gpu_us"] < 0.5 * v[f"{c}_wall_us"] for c in ("ours", "eager") for v in vs.values())  # "mostly host time"
# "the λ = 0 elementwise path only": tools/wall_probe.py --losses calls each loss as bench.py's sweep does
from rltriton_lite import bench  # noqa: E402

_probe_src = open(os.path.join(os.path.dirname(os.path.dirname(profile.results_folder())), "tools", "wall_probe.py"),
                  encoding="utf-8").read()
assert "tools/wall_probe.py --losses" in profile.read_loss_wall.__doc__  # the committed file is that mode's output
_losses = _probe_src[_probe_src.index("def loss_calls("):_probe_src.index('if MODE == "--losses":')]
assert "op = bench._op(name)" in _losses and "p = op.defaults" in _losses  # the sweep's op and its default numbers
assert "bench._ours(name, xg, p, pass_)" in _losses  # with the backward: our call, as bench runs it ...
assert "return profile.op(name)" in inspect.getsource(bench._op)  # ... profile.op("sac") ...
assert 'return lambda: _as_tuple(op.run(x, "triton", p))' in inspect.getsource(bench._ours)  # ... and its run
assert "lambda_" not in profile.op("sac").defaults and "lambda_" not in inspect.getsource(profile.op("sac").run)
assert repr(inspect.signature(rl.sac_targets).parameters["lambda_"].default) == "0.0"  # no λ passed: λ = 0, a number
assert "launch_map(_one_step_target," in inspect.getsource(sac._targets_forward)  # ... which runs "the elementwise kernel"
_ran, _map, _launch = [], sac.launch_map, sac.launch  # that call, run here: which kernels it launches
sac.launch_map = lambda hook, *a, **k: _ran.append(hook.__name__) or _map(hook, *a, **k)
sac.launch = lambda *a, **k: _ran.append("the scan") or _launch(*a, **k)
try:
    _x = profile.op("sac").make(3, 11, torch.float32, DEVICE, torch.Generator().manual_seed(0))
    _x["rewards"].requires_grad_()
    profile.op("sac").run(_x, KERNEL, profile.op("sac").defaults).sum().backward()
finally:
    sac.launch_map, sac.launch = _map, _launch
assert _ran == ["_one_step_target", "_one_step_target_bwd"], _ran  # forward and backward elementwise, "not the scan"
assert "rl.sac_targets(rg, (qg, nvg), nlpg, terminated=d)" in _probe_src  # (the probe's default mode passes no λ either)
_head = open(os.path.join(profile.results_folder(), profile.COMMITTED_LOSS_WALL), encoding="utf-8").readline()
assert "H100" in _head and "H200" not in _head  # "(H100, measured)": named in the file's first line
SHAPES_TIMED = [(16, 128), (4096, 128), (64, 16384)]  # "the three shapes": where the probe timed SAC against its eager formula
assert {k[1] for k in profile.read_loss_wall() if k[0] == "sac"} == set(vs) == set(SHAPES_TIMED)
assert "lambda_" not in profile.op("sac").params  # bench.py runs profile.op("sac"): it passes no λ ...
assert inspect.signature(rl.sac_targets).parameters["lambda_"].default == 0  # ... so λ = 0

# %% [markdown]
# ## Exercises
#
# Checked exercises work as in [notebook 00](00_associative_scan.ipynb#How-the-exercises-work);
# `print(exercises.task(name))` restates a task.
#
# **`soft_lambda_targets`** (a Triton prologue). Write section 2's prologue for
# `exercises.scan_hook`, as notebook 03's worked `td_lambda_prologue` (copied below) does for TD(λ). The task
# has one γ, one λ, two critics and no truncations. With the introduction's soft next value $V'_t$,
# the target is
#
# $$G_t = r_t + \gamma(1-\text{term}_t)\big[(1-\lambda)V'_t + \lambda\big(G_{t+1} - \alpha\log\pi(u_{t+1}|s_{t+1})\big)\big].$$
#
# At the window's last step the bracket is $V'_t$ alone, and $\log\pi(u_{t+1}|s_{t+1})$ is
# `log_probs` at step $t + 1$.
#
# **Recap: the harness and the triple** (in full: [notebook 01b, section 1](01b_prologues_and_backward.ipynb#1.-The-harness-for-Triton-prologues)).
#
# * **Call:** `exercises.scan_hook(soft_lambda_targets, X, (gamma, alpha, lam))` runs your
#   `soft_lambda_targets(X, P, offs, t, m, T)` on each chunk of steps of each row. Then it scans
#   $y_t = b_t + a_t\,y_{t+1}$ in reverse ($y_t = b_t$ where `reset`) and returns $y$.
# * **`X`:** `(rewards, next_q1, next_q2, next_log_probs, log_probs, terminated)`, as pointers.
#   `tl.load(X[0] + offs, mask=m, other=0.0)` loads a chunk of rewards; the flag is
#   `tl.load(X[5] + offs, mask=m, other=0) != 0`.
# * **`P`:** the numbers: `P[0]` is γ, `P[1]` is α, `P[2]` is λ.
# * **`offs`, `t`, `m`, `T`:** the chunk's flat offsets, `row * T + t`; each step's time index, from
#   0 to T − 1; the in-bounds mask; the row length. Step $t + 1$ is at `offs + 1`, masked with `m & (t + 1 < T)`.
# * **Returns:** [section 2](#2.-The-soft-λ-return-as-one-scan)'s triple `(a, b, reset)`, with
#   $a_t = \gamma\lambda^{\text{eff}}_t$ and `reset` a bool per step, set at each done step. Its
#   scan is $G_t$. Hint 2 writes the formulas out for this task.
#
# **Edge cases:** at a terminated step, `next_q1`, `next_q2` and `next_log_probs` may be NaN:
# select them away with `tl.where`. In some cases the checker's scan starts from $y_T = 100$, a value
# past the window, not 0. Your triple must keep it out, as a reset at the last step does.
#
# Why each guard is needed: section 2's [four-step example](#Where-the-trace-stops).
#
# <details><summary>Details (optional): the "past the window" cases, and other forms the checker accepts</summary>
#
# * **Past the window.** The cases marked "past the window" start the scan from $y_T = 100$, a
#   stand-in for whatever follows the window. A reset at the last step keeps it out.
# * **Other forms the checker accepts:** the copied prologue's plain $a_t = \gamma\lambda$, and a
#   last step that stops the trace with $a_t = 0$ alone ($0 \cdot 100 = 0$). The first passes
#   for the reason section 2's four-step example shows in its last run.
# * **In the $-\lambda\alpha\log\pi_{t+1}$ term, $\lambda^{\text{eff}}_t$ is right:** at a done step
#   the next step belongs to another episode, or lies past the window, so its $\log\pi$ must not
#   enter. Plain λ there also passes this checker, for three reasons. The task has no
#   truncations, the select drops the whole bracket at a termination, and the masked load gives
#   $\log\pi_{t+1} = 0$ at step $T-1$. With a truncation it would read the next episode's
#   $\log\pi$, as section 2's run without guard 1 shows.
#
# </details>

# %% [markdown]
# The prologue to start from, notebook 03's worked `td_lambda_prologue`, copied here:

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

# %% jupyter={"source_hidden": true}
# Checks: the copy above is notebook 03's prologue, read from 03 beside this notebook (CI runs them; skip when reading)
import glob  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402


def notebook_03(folder):
    """Notebook 03 in `folder`: by the course's name, else a renamed copy (03_td_lambda-yourname.ipynb)."""
    found = glob.glob(os.path.join(folder, "03_*.ipynb"))
    assert found, f"no 03_*.ipynb in {folder}: this check compares the copy above with notebook 03's prologue"
    return min(found, key=lambda p: (os.path.basename(p) != "03_td_lambda.ipynb", p))


def function_in(path, name):
    """The code of function `name` in the notebook at `path`: the code cell defining it, up to its first blank line."""
    with open(path, encoding="utf-8") as f:
        (cell,) = ["".join(c["source"]) for c in json.load(f)["cells"]
                   if c["cell_type"] == "code" and f"def {name}(" in "".join(c["source"])]
    return cell[:cell.index("\n\n")]


td_lambda_source = inspect.getsource(getattr(td_lambda_prologue, "fn", td_lambda_prologue)).rstrip("\n")
assert td_lambda_source == function_in(notebook_03(os.getcwd()), "td_lambda_prologue")  # a notebook runs in its folder
assert td_lambda_source.startswith("@triton.jit\ndef td_lambda_prologue(X, P, offs, t, m, T):")
assert "    return " in td_lambda_source  # the whole function, its triple included
assert "    return gamma * lam, b," in td_lambda_source  # the recap: "the copied prologue's plain a_t = γλ"
with tempfile.TemporaryDirectory() as _d:  # a renamed copy is found too
    open(os.path.join(_d, "03_td_lambda-yourname.ipynb"), "w").close()
    assert notebook_03(_d).endswith("03_td_lambda-yourname.ipynb")

# %% [markdown]
# <details><summary>Hint 1: where to start</summary>
#
# Start from notebook 03's worked `td_lambda_prologue`: TD(λ) with terminations.
# Here $V'_t$, the soft value, takes the place of $V(s_{t+1})$.
# The new part is the continuation, $G_{t+1} - \alpha\log\pi_{t+1}$.
# Only $G_{t+1}$ comes from the scan. The other part is a number you can load.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * $V'_t = \min(Q_1, Q_2) - \alpha\,$`next_log_probs`, all loaded at `offs`.
# * $\log\pi_{t+1}$ is `log_probs` at `offs + 1`, masked with `m & (t + 1 < T)`, as in the template.
# * The trace goes on where `t + 1 < T` and the step is not terminated. Elsewhere the step resets.
# * Let $\lambda^{\text{eff}}_t = \lambda$ where the trace goes on, else 0. With $\lambda^{\text{eff}}_t$ in place
#   of $\lambda$, the window's last step needs no case of its own.
# * Section 2's formulas, for this task's one γ:
#   $a_t = \gamma\lambda^{\text{eff}}_t$ and
#   $b_t = r_t + [\lnot\text{term}_t]\,\gamma\big[(1-\lambda^{\text{eff}}_t)V'_t -
#   \lambda^{\text{eff}}_t\,\alpha\log\pi_{t+1}\big]$.
# * $-\lambda^{\text{eff}}_t\alpha\log\pi_{t+1}$ sits next to $G_{t+1}$ but does not multiply it, so it
#   belongs to $b_t$.
# * `reset` is set where the trace stops: a termination or the window's last step.
# * At a termination, select the whole bracket away with `tl.where`: $b_t = r_t$. The flag is a
#   bool tensor, `X[5]`: `term = tl.load(X[5] + offs, mask=m, other=0) != 0`.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Take $\gamma = 0.5$, $\alpha = 1$, $\lambda = 0.5$ and three steps: $r = 1, 2, 3$; $Q_1 = 4, 4, 4$ and
# $Q_2 = 6, 2, 8$, so $\min(Q_1, Q_2) = 4, 2, 4$; `next_log_probs` $= 0, 0, 2$, so $V' = 4, 2, 2$;
# `log_probs` $= 9, 2, 4$. (The 9 is never read, because the continuation reads $\log\pi$ at $t + 1$.)
#
# * $t = 2$, the window's last step, $V'$ alone: $G_2 = 3 + 0.5 \cdot 2 = 4$.
# * $t = 1$: $G_1 = 2 + 0.5\,[0.5 \cdot 2 + 0.5\,(4 - 1 \cdot 4)] = 2.5$.
# * $t = 0$: $G_0 = 1 + 0.5\,[0.5 \cdot 4 + 0.5\,(2.5 - 1 \cdot 2)] = 2.125$.
# * A second row, the same but terminated at $t = 1$, with NaN in `next_q1` and `next_log_probs`
#   there: $G_1 = r_1 = 2$, $G_0 = 1 + 0.5\,[0.5 \cdot 4 + 0.5\,(2 - 2)] = 2$, and $G_2 = 4$ as before.
#
# ```python
# nan = float("nan")  # X = (rewards, next_q1, next_q2, next_log_probs, log_probs, terminated), two rows each
# case = [torch.tensor(x, device=DEVICE) for x in (
#     [[1.0, 2.0, 3.0]] * 2, [[4.0, 4.0, 4.0], [4.0, nan, 4.0]], [[6.0, 2.0, 8.0]] * 2,
#     [[0.0, 0.0, 2.0], [0.0, nan, 2.0]], [[9.0, 2.0, 4.0]] * 2, [[False] * 3, [False, True, False]])]
# print(exercises.guarded(exercises.scan_hook, soft_lambda_targets, case, (0.5, 1.0, 0.5)).cpu())
# # must print tensor([[2.1250, 2.5000, 4.0000],
# #                    [2.0000, 2.0000, 4.0000]])
# ```
#
# </details>
#
# Hint 4 is the solution's skeleton: try Hints 1–3 first.
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# going_on = m & (t + 1 < T) & ~term  # the trace runs on to t + 1
# lam_t = tl.where(going_on, lam, 0.0)  # λ^eff_t, the step's effective λ
# a = gamma * lam_t  # a_t = γλ^eff_t, the factor of G_{t+1}
# b = r + tl.where(term, 0.0, ___)  # ___: γ times the bracket's terms without G_{t+1}, with lam_t for λ
# return a, b, ___  # ___: where the trace stops
# ```
#
# </details>
#
# A template:
#
# ```python
# @triton.jit
# def soft_lambda_targets(X, P, offs, t, m, T):
#     gamma, alpha, lam = P[0], P[1], P[2]
#     log_pi_next = tl.load(X[4] + offs + 1, mask=m & (t + 1 < T), other=0.0)
#     ...
#     return a, b, reset
# ```

# %%
# YOUR CODE: replace the next line by your @triton.jit def soft_lambda_targets(X, P, offs, t, m, T)
soft_lambda_targets = None

# %%
exercises.attempt("soft_lambda_targets", soft_lambda_targets)

# %% [markdown]
# Without a checker:
#
# *(Optional: not on the minimum path. Answer each in its cell below: your teacher's grader
# collects the answers from them.)*
#
# 1. With `alpha=0` and one critic, show that `rl.sac_targets(r, q, nlp, lambda_=λ, alpha=0.0,
#    log_probs=lp)` equals `rl.td_lambda(r, q, lambda_=λ)`, to float32 rounding, for any finite `nlp` and `lp`. Which of
#    notebook 03's statements then carry over to SAC?
#
#    *Check yourself:* on standard-normal `r` and `q` the two agree to within $10^{-5}$, also
#    with `nlp` and `lp` multiplied by 1000.
# 2. REDQ (Chen et al., ICLR 2021) keeps 10 critics and takes the min over a random pair each
#    update. Pass 10 noisy critics of the same true value. Compare the mean target with a
#    random pair, with all 10, and with one critic. How biased is each?
#
#    *Check yourself:* with α = 0, γ = 0.99 and critic noise $\mathcal N(0, 1)$, the biases are
#    about 0 (one critic), −0.56 (a random pair) and −1.52 (all 10).
# 3. Automatic temperature. Take log-probabilities of a fixed Gaussian policy in 6 dimensions
#    with σ = 1, and set `target_entropy = -6`. Run a few hundred steps of SGD on
#    `rl.sac_temperature_loss`. Which way does α move, and why does it never stop?
#
#    *Check yourself:* the policy's entropy is $3(1 + \log 2\pi) \approx 8.51$ nats, and every
#    step moves $\log\alpha$ by about 14.5 times the learning rate, whatever α is.

# %% jupyter={"source_hidden": true}
# Checks: the three "Check yourself" targets, verified (CI runs them; skip when reading)
import math  # noqa: E402

_g = torch.Generator().manual_seed(6)  # 1: α = 0, one critic, float32
_x = lambda: torch.randn(3, 50, generator=_g).to(DEVICE)  # noqa: E731
_r, _q = _x(), _x()
_gaps = []
for _lam in (0.0, 0.5, 0.9, 1.0):
    _want = rl.td_lambda(_r, _q, lambda_=_lam, backend=KERNEL)
    for _scale in (1.0, 1000.0):  # "also with nlp and lp multiplied by 1000"
        _got = rl.sac_targets(_r, _q, _scale * _x(), lambda_=_lam, alpha=0.0, log_probs=_scale * _x(), backend=KERNEL)
        _gaps.append((_got - _want).abs().max().item())
assert max(_gaps) < 1e-5  # "to within 10⁻⁵"
_xs = np.linspace(-12.0, 12.0, 240_001)  # 2: E[min of k standard normals], by quadrature ...
_pdf = np.exp(-_xs ** 2 / 2) / math.sqrt(2 * math.pi)
_cdf = 0.5 * (1 + torch.erf(torch.from_numpy(_xs / math.sqrt(2))).numpy())
_e_min = {k: np.trapezoid(_xs * k * _pdf * (1 - _cdf) ** (k - 1), _xs) for k in (1, 2, 10)}
assert [round(0.99 * _e_min[k], 2) for k in (1, 2, 10)] == [0.0, -0.56, -1.52]  # "about 0, −0.56 and −1.52"
_g = torch.Generator().manual_seed(6)  # ... and measured: 2,000 updates of 64 targets, 10 critics of true value 5
_r = torch.randn(2000, 64, generator=_g, dtype=torch.float64)
_qs = 5.0 + torch.randn(10, 2000, 64, generator=_g, dtype=torch.float64)
_pair = torch.rand(2000, 10, generator=_g).argsort(1)[:, :2]  # a random pair per update
_rows = torch.arange(2000)
for _critics, _k in (([_qs[0]], 1), ([_qs[_pair[:, 0], _rows], _qs[_pair[:, 1], _rows]], 2), (list(_qs), 10)):
    _G = rl.sac_targets(_r, _critics, torch.zeros_like(_r), gamma=0.99, alpha=0.0, backend="torch")  # fast path
    assert abs((_G - (_r + 0.99 * 5.0)).mean().item() - 0.99 * _e_min[_k]) < 0.02  # standard error about 0.004
_entropy = 3 * (1 + math.log(2 * math.pi))  # 3: a fixed N(0, I₆) policy
assert round(_entropy, 2) == 8.51  # "≈ 8.51 nats"
_u = torch.randn(256, 6, generator=torch.Generator().manual_seed(7), dtype=torch.float64).to(DEVICE)
_lp6 = (-0.5 * _u ** 2 - 0.5 * math.log(2 * math.pi)).sum(-1)  # log π of its sampled actions
_steps = []
for _alpha in (1.0, 0.01):
    _log_alpha = torch.tensor([math.log(_alpha)], dtype=torch.float64, device=DEVICE, requires_grad=True)
    _steps.append(torch.autograd.grad(rl.sac_temperature_loss(_log_alpha, _lp6, -6.0, backend=KERNEL), _log_alpha)[0])
assert _steps[0] == _steps[1] and abs(_steps[0].item() - 14.5) < 0.5  # "about 14.5 times the learning rate, whatever α"
assert round(_entropy + 6.0, 1) == 14.5  # its mean: the entropy minus the target

# %% [markdown] tags=["answer-1"]
# **Answer 1.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-2"]
# **Answer 2.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-3"]
# **Answer 3.** *Your answer here (code for it: in cells under this one).*

# %% [markdown]
# ## What you now know
#
# * SAC's soft next value is $V'_t = \min_k \bar Q_k(s_{t+1}, \tilde u_{t+1}) - \alpha\log\pi(\tilde u_{t+1}|s_{t+1})$.
#   At λ = 0 the target is CleanRL's, $r_t + \gamma(1-\text{term}_t)\,V'_t$.
# * The soft λ-return is one reverse scan of $G_t$, with $a_t = \gamma_t\lambda^{\text{eff}}_t$ and a reset
#   at each done step.
# * λ > 0 on replayed data follows the buffer's actions, unweighted: the target is biased for
#   $Q^\pi$, more so as λ grows. The min of noisy critics underestimates.
# * SB3's loss in $\log\alpha$ has a gradient that does not depend on α: α rises while the entropy
#   is below the target.

# %% [markdown]
# For maintainers: how the package implements this notebook's kernels is in [notebook 13c, Inside SAC](13c_inside_the_package.ipynb#Inside-SAC).
