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
# # 04 — V-trace: off-policy targets as one scan
#
# > **In short**
# >
# > * V-trace (IMPALA) builds a critic target from data that an older policy collected, with clipped importance weights.
# > * Written backwards in time, it is one reverse scan, like the estimators of notebooks 01–03.
# > * Section 2 ends with one table: what each estimator of 01–04 puts in $b_t$ where its trace is cut.
# > * You write V-trace's policy-gradient advantage as a Triton epilogue; [04c](04c_vtrace_kernel.ipynb), the whole kernel.
#
# * **Time:** 2–3 h with the open questions; 1–1.5 h for the minimum path.
# * **Needs:** notebooks 01–03; importance sampling. No GPU.
# * **Conventions:** the glossary's [card for every exercise](GLOSSARY.md#conventions-for-every-exercise).
# * **Minimum path:** sections 1 and 2 (the loop, the split, the table), then the exercise `vtrace_pg`, then 04c.
#   Sections 3–5 (the package's kernel), the open questions, the appendices and
#   [notebook 04b](04b_vtrace_fixed_point.ipynb) can wait.
# * **Map:** 1 the loop · 2 prologue, scan, epilogue, one table for every estimator · 3 the kernel ·
#   4 kernel against the loop · 5 how fast it is · exercise `vtrace_pg` · open questions.
# * Appendices: IMPALA's code, the table checked, Retrace, gradients: optional.
#
# In IMPALA, actors act with a behaviour policy $\mu$ that lags behind the learner's policy
# $\pi$. V-trace corrects the $n$-step return with two importance weights of the action taken
# $u_t$, each *truncated* (clipped at a ceiling):
#
# * $\rho_t$ decides which value the target converges to: once clipped, not always $V^\pi$.
# * $c_t$ decides how far back a TD error travels. With a constant $\gamma$, the TD error
#   $\delta_{t+k}$, $k$ steps later, reaches step $t$ with the weight
#   $\gamma^k c_t c_{t+1} \cdots c_{t+k-1}\,\rho_{t+k}$. The product of $c$'s is the trace.
#
# <details><summary>Details: the paper, and where the trace shrinks (optional)</summary>
#
# V-trace is from Espeholt, Soyer, Munos, Simonyan, Mnih, Ward, Doron, Firoiu, Harley, Dunning,
# Legg, Kavukcuoglu: *IMPALA: Scalable Distributed Deep-RL with Importance Weighted Actor-Learner
# Architectures*, ICML 2018.
#
# The trace shrinks wherever $c_t = \lambda_t \min(\bar c, \pi/\mu) < 1$. With
# $\lambda = \bar c = 1$, that is wherever $\pi$ is less likely than $\mu$ to take the action
# taken. With $\bar c < 1$, it is every step. The trace is cut (nothing later reaches step $t$) at
# four kinds of step, or at every step if $\bar c = 0$:
#
# * where the [reset flag](GLOSSARY.md#reset) is set: an episode end or the window's last step, as in
#   [notebook 01's table](01_discounted_return.ipynb#The-episode-end-table), whatever $c_t$ is;
# * where $\pi(u_t \mid s_t) = 0$, so $c_t = 0$;
# * where $\lambda_t = 0$, so $c_t = 0$;
# * where $\gamma_t = 0$, so $a_t = 0$ although $c_t$ is not.
#
# </details>
#
# Written backwards, with $V'_t = V(s_{t+1})$, V-trace is a first-order recurrence:
#
# $$\rho_t = \min(\bar\rho, \tfrac{\pi}{\mu}), \quad c_t = \lambda_t \min(\bar c, \tfrac{\pi}{\mu}), \quad
#   \delta_t = r_t + \gamma_t (1-\text{term}_t) V'_t - V_t,$$
#
# $$v_t = V_t + \rho_t\delta_t + \gamma_t (1-\text{done}_t)\, c_t\, (v_{t+1} - V'_t).$$
#
# `vs` $= v_t$ is the critic's target. The ratio comes in as
# `log_rhos` $= \log\pi(u_t|s_t) - \log\mu(u_t|s_t)$, the clips as `rho_bar` and `c_bar`. The
# second output, the policy-gradient advantage, is read off $v$ (section 2).

# %%
import importlib
import inspect
import os

import numpy as np
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # Triton kernels on the CPU

import triton
import triton.language as tl

import rltriton_lite as rl
from rltriton_lite import exercises, profile, reference

vtrace = importlib.import_module("rltriton_lite.vtrace")  # the module: `rl.vtrace` is the function
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# the Triton kernels: compiled on a GPU, in the interpreter on a CPU (backend="auto" takes the PyTorch path on a CPU)
KERNEL = "triton"
rng = np.random.default_rng(4)
torch.manual_seed(4)  # the printed figures repeat from run to run
to_numpy = lambda x: x.cpu().numpy()  # noqa: E731

# %% jupyter={"source_hidden": true}
# Checks: the introduction's weight of a TD error, from the formulas above (CI runs them; skip when reading)
_T, _g, _lam = 6, 0.9, 0.8
_lr, _r, _v = np.random.default_rng(40).normal(size=(3, _T))  # its own generator: rng's draws below stay as they were
_vs, _ = reference.vtrace(_lr, _r, _v, gamma=_g, lambda_=_lam, rho_bar=1.2, c_bar=0.9, bootstrap_value=0.7)
_rho, _c = np.minimum(1.2, np.exp(_lr)), _lam * np.minimum(0.9, np.exp(_lr))
_delta = _r + _g * np.append(_v[1:], 0.7) - _v  # δ_t = r_t + γ V'_t − V_t, no episode end
for _t in range(_T):  # v_t − V_t = Σ_k γ^k c_t⋯c_{t+k−1} ρ_{t+k} δ_{t+k}
    _w = [_g**k * np.prod(_c[_t:_t + k]) * _rho[_t + k] for k in range(_T - _t)]
    np.testing.assert_allclose(_vs[_t] - _v[_t], np.dot(_w, _delta[_t:]), rtol=1e-12, atol=1e-12)

# %% [markdown]
# ## 1. The loop
#
# The float64 ground truth loops over time. Its `carry` holds $v_{t+1}$.

# %%
print(inspect.getsource(reference.vtrace))

# %% [markdown]
# By hand: three steps, $\gamma = 0.5$, $\lambda = 1$, the default clips
# $\bar\rho = \bar c = \bar\rho_{pg} = 1$ ($\bar\rho_{pg}$ clips section 2's advantage), rewards
# and values 1, and a bootstrap value of 2 after the window.
# Compared with μ, π likes:
#
# * the first action twice as much ($\pi/\mu = 2$, clipped to 1);
# * the second half as much ($\pi/\mu = 0.5$: it halves the trace);
# * the third as much.

# %%
vs, pg = reference.vtrace(np.log([2.0, 0.5, 1.0]), [1.0, 1.0, 1.0], [1.0, 1.0, 1.0], gamma=0.5, bootstrap_value=2.0)
print("vs           ", vs, "\npg_advantages", pg)
# V' = [1, 1, 2], ρ = c = ρ_pg = [1, 0.5, 1],  δ = r + γV' − V = [0.5, 0.5, 1].
# t=2 (window end): vs = 1 + 1·1 = 2;                          pg = 1·(1 + 0.5·V'_2 − 1) = 1.
# t=1:              vs = 1 + 0.5·0.5 + 0.5·0.5·(2 − 1) = 1.5;   pg = 0.5·(1 + 0.5·vs_2 − 1) = 0.5.
# t=0:              vs = 1 + 1·0.5 + 0.5·1·(1.5 − 1) = 1.75;    pg = 1·(1 + 0.5·vs_1 − 1) = 0.75.
np.testing.assert_allclose(vs, [1.75, 1.5, 2.0])
np.testing.assert_allclose(pg, [0.75, 0.5, 1.0])

# %% [markdown]
# More generally, at $\pi/\mu \ge 1$ both weights clip to 1 and `vs` is the on-policy λ-return. As the
# ratio falls, $\rho_t$ shrinks each correction and $c_t$ the trace, until at ratio 0 `vs` is the
# critic's $V_t$ itself.

# %% jupyter={"source_hidden": true}
# Checks: the two ends of the ratio, on one row with a constant ratio (CI runs them; skip when reading)
_r1, _v1 = torch.ones(1, 60, device=DEVICE), torch.randn(1, 60, device=DEVICE)  # rewards 1, an imperfect critic
_vs_at = {ratio: rl.vtrace(torch.full((1, 60), float(np.log(ratio)) if ratio > 0 else -30.0, device=DEVICE), _r1, _v1,
                           gamma=0.95, lambda_=0.9, backend=KERNEL).vs for ratio in (2.0, 1.0, 0.6, 0.0)}
torch.testing.assert_close(_vs_at[2.0], _vs_at[1.0])  # a ratio above 1 is clipped
_nv1 = torch.cat([_v1[:, 1:], torch.zeros(1, 1, device=DEVICE)], 1)  # V'_t = V_{t+1}, bootstrap 0
torch.testing.assert_close(_vs_at[1.0], rl.td_lambda(_r1, _nv1, gamma=0.95, lambda_=0.9, backend=KERNEL))  # "the on-policy λ-return"
torch.testing.assert_close(_vs_at[0.0], _v1, atol=1e-5, rtol=0)  # "at ratio 0 vs is the critic's V_t"
assert ((_vs_at[0.6] - _v1).abs() < (_vs_at[1.0] - _v1).abs()).float().mean() > 0.5  # shrinking toward V_t

# %% [markdown]
# ## 2. Prologue, scan, epilogue
#
# Expand the bracket $(v_{t+1} - V'_t)$: what multiplies $v_{t+1}$ is $a_t$, and the rest is $b_t$.
# V-trace is then notebook 00's reverse scan:
#
# $$v_t = \underbrace{V_t + \rho_t\delta_t - [\lnot\text{done}_t]\,\gamma_t c_t V'_t}_{b_t}
#   + \underbrace{\gamma_t c_t}_{a_t}\, v_{t+1}, \qquad \text{reset flag where done}_t .$$
#
# * **[prologue](GLOSSARY.md#prologue)**, per step before the scan: the clipped weights, then $a_t$,
#   $b_t$ and the [reset flag](GLOSSARY.md#reset), set where done$_t$;
# * **scan**: its output $y_t$ is $v_t$ itself;
# * **[epilogue](GLOSSARY.md#epilogue)**, per step after the scan: `vs` $= y_t$, and the advantage,
#   from $v_{t+1}$, the value the scan carried *into* step $t$.
#
# **The advantage.** `pg_advantages` $= A^{pg}_t$ multiplies $\nabla\log\pi(u_t|s_t)$ in the
# policy loss. Its λ-mix follows rlax:
#
# $$A^{pg}_t = \rho^{pg}_t\big(r_t + \gamma_t(1-\text{term}_t)
#   [\lambda_t\,\text{follow}_t + (1-\lambda_t) V'_t] - V_t\big), \qquad
#   \text{follow}_t = \begin{cases} v_{t+1} & \text{not done}_t \\ V'_t & \text{done}_t \end{cases}$$
#
# $\rho^{pg}_t = \min(\bar\rho_{pg}, \pi/\mu)$ is the advantage's own clipped weight (`pg_rho_bar`).
#
# **The advantage on three steps.** Take section 1's example (λ = 1) and make step 1 terminate,
# with a NaN as its next value. Then $\rho^{pg} = (1, 0.5, 1)$ and $v = (1.5, 1, 2)$:
#
# | step | what it is | $\text{follow}_t$ | $A^{pg}_t$ |
# | --- | --- | --- | --- |
# | $t = 2$ | the window's last step | $V'_2 = 2$ | $1 \cdot (1 + 0.5 \cdot 2 - 1) = 1$ |
# | $t = 1$ | a termination | not read: $(1-\text{term}_1)$ is a [select](GLOSSARY.md#select), so the NaN never enters | $0.5 \cdot (1 - 1) = 0$ |
# | $t = 0$ | inside the episode | $v_1 = 1$, the next step's target | $1 \cdot (1 + 0.5 \cdot 1 - 1) = 0.5$ |

# %%
vs3, pg3 = reference.vtrace(np.log([2.0, 0.5, 1.0]), [1.0, 1.0, 1.0], [1.0, 1.0, 1.0], gamma=0.5,
                            terminated=[False, True, False], next_values=[1.0, np.nan, 2.0])
print("vs", vs3, " pg_advantages", pg3)
np.testing.assert_allclose(vs3, [1.5, 1.0, 2.0])
np.testing.assert_allclose(pg3, [0.5, 0.0, 1.0])

# %% [markdown]
# **The window's last step** resets, so it needs [$b_t$ at a reset](GLOSSARY.md#cut-step).
# There is no $v_T$ for $-\gamma_t c_t V'_t$ to pair with, so $[\lnot\text{done}_t]$ drops it:
# $v_{T-1} = V_{T-1} + \rho_{T-1}\delta_{T-1}$. In section 1's example the ordinary step's $b$
# would give $v_2 = 2 - 0.5 \cdot 1 \cdot 2 = 1$, not 2. [The table below](#One-table-for-every-estimator)
# does the same for every estimator.
#
# In NumPy:

# %%
def vtrace_as_scan(log_rhos, r, v, nv, gamma, lam, terminated, truncated, rho_bar, c_bar, pg_rho_bar):
    done = terminated | truncated
    done[..., -1] = True
    ratio = np.exp(log_rhos)                                             # prologue
    rho, c, rho_pg = np.minimum(rho_bar, ratio), lam * np.minimum(c_bar, ratio), np.minimum(pg_rho_bar, ratio)
    delta = r + np.where(terminated, 0.0, gamma * nv) - v
    a = gamma * c
    b = v + rho * delta - np.where(done, 0.0, a * nv)                  # b at a reset: no -gamma c V'
    vs, vs_next = np.zeros_like(r), np.zeros_like(r)
    carry = np.zeros(r.shape[:-1])
    for t in reversed(range(r.shape[-1])):                               # scan (sequential here)
        vs_next[..., t] = carry                                          # y_in: v_{t+1} as carried
        carry = np.where(done[..., t], b[..., t], b[..., t] + a[..., t] * carry)  # the reset flag: done
        vs[..., t] = carry
    follow = np.where(done, nv, vs_next)                                 # epilogue
    pg = rho_pg * (r + np.where(terminated, 0.0, gamma * (lam * follow + (1 - lam) * nv)) - v)
    return vs, pg

# %% [markdown]
# Against the loop, with terminations, truncations and all three clips:

# %%
LR, R, V, NV = (rng.normal(size=(3, 40)) for _ in range(4))
TERM = rng.random((3, 40)) < 0.1
TRUNC = (rng.random((3, 40)) < 0.1) & ~TERM
bars = dict(rho_bar=1.2, c_bar=0.9, pg_rho_bar=1.5)
for got, want in zip(vtrace_as_scan(LR, R, V, NV, 0.97, 0.9, TERM, TRUNC, **bars),
                     reference.vtrace(LR, R, V, gamma=0.97, lambda_=0.9, terminated=TERM, truncated=TRUNC,
                                      next_values=NV, **bars)):
    np.testing.assert_allclose(got, want, rtol=1e-12)
print("prologue + scan + epilogue == the loop")

# %% jupyter={"source_hidden": true}
# Checks: the window's last step, on section 1's example (CI runs them; skip when reading)
a1 = torch.tensor([[0.5, 0.25, 0.5]], device=DEVICE)  # gamma c: c = (1, 0.5, 1)
b_end = torch.tensor([[1.0, 1.0, 2.0]], device=DEVICE)  # V + rho delta - gamma c V', and b_2 at a reset
b_ordinary = torch.tensor([[1.0, 1.0, 2.0 - 0.5 * 1.0 * 2.0]], device=DEVICE)  # b_2 keeping -gamma c V'
a_cut = a1 * torch.tensor([[1.0, 1.0, 0.0]], device=DEVICE)  # a_2 = 0: the cut, as linear_scan takes it
target = torch.tensor([[1.75, 1.5, 2.0]], device=DEVICE)  # section 1's vs
torch.testing.assert_close(rl.linear_scan(a_cut, b_end, backend=KERNEL), target)
assert rl.linear_scan(a_cut, b_ordinary, backend=KERNEL)[0, 2] == 1.0  # "the ordinary step's b would give v_2 = 1"

# %% [markdown]
# ### One table for every estimator
#
# **The rule:** $b_t$ at a reset $= b^{ord}_t + a_t\,\hat y_{t+1}$, with $b^{ord}_t$ the ordinary step's $b_t$ and
# $\hat y_{t+1}$ the critic's estimate of the value cut off; at a termination (no next state) a select drops the bootstrap instead.
#
# At a reset the scan takes nothing from step $t+1$, so $b_t$ adds back what $a_t y_{t+1}$
# would have brought. The table applies the rule to every estimator of notebooks 01–04, with a
# number in the last column ($M_t = \max_u Q(s_{t+1}, u)$ is from 03's `q_lambda`;
# $Q_{t+1} = Q(s_{t+1}, u_{t+1})$ and $\mathbb E_\pi Q_{t+1}$ from 03's `retrace`).
# [The appendix](#Appendix:-the-table-across-estimators,-checked) checks every row.
#
# | estimator | $a_t$ | ordinary $b_t$ | $\hat y_{t+1}$ | $b_t$ at a reset | resets at | shown with a number |
# | --- | --- | --- | --- | --- | --- | --- |
# | return | $\gamma_t$ | $r_t$ | $V'_t$ | $r_t + \gamma_t V'_t$ | done$_t$ | [01, section 1](01_discounted_return.ipynb#1.-The-loop): $G_3 = 4 + 0.5 \cdot 6 = 7$ |
# | GAE | $\gamma_t\lambda_t$ | $\delta_t = r_t + \gamma_t V'_t - V_t$ | 0: the critic expects no advantage | $\delta_t$, unchanged | done$_t$ | [02, section 1](02_gae.ipynb#1.-The-loop): $\hat A_3 = \delta_3 = 1 + 0.5 \cdot 10 - 2 = 4$ |
# | TD(λ) | $\gamma_t\lambda_t$ | $r_t + \gamma_t(1-\lambda_t)V'_t$ | $V'_t$ | $r_t + \gamma_t V'_t$ ($w_t = 1$) | done$_t$ | [03, section 2](03_td_lambda.ipynb#2.-Prologue,-scan,-epilogue): $G_2 = 30$, not 15 |
# | Q(λ) | $\gamma\lambda$ | $r_t + \gamma(1-\lambda)M_t$ | $M_t$ | $r_t + \gamma M_t$ ($\lambda^{\text{eff}}_t = 0$) | term$_t$, $t = T-1$, or $u_{t+1}$ not greedy | [03, `q_lambda`'s Hint 3](03_td_lambda.ipynb#Exercises): $G_3 = 1 + 0.5 \cdot 6 = 4$ |
# | V-trace | $\gamma_t c_t$ | $V_t + \rho_t\delta_t - \gamma_t c_t V'_t$ | $V'_t$ | $V_t + \rho_t\delta_t$ | done$_t$ | above: $v_2 = 2$, not 1 |
# | Retrace | $\gamma c_{t+1}$ | $r_t + \gamma(\mathbb E_\pi Q_{t+1} - c_{t+1} Q_{t+1})$ | $Q_{t+1}$ | $r_t + \gamma\,\mathbb E_\pi Q_{t+1}$ ($c = 0$) | term$_t$ or $t = T-1$ | [03, `retrace`'s Hint 3](03_td_lambda.ipynb#Exercises): $G_3 = 1 + 0.5 \cdot 6 = 4$ |
#
# <details><summary>Details: what entry t holds, estimator by estimator (optional)</summary>
#
# In the prologues and epilogues of 01–04, step $t$ loads entry $t$ of each input, unshifted in
# time. What that entry holds differs:
#
# * **return:** `rewards[t]` is $r_t$; `next_values[t]` is $V(s_{t+1})$, the value after step $t$.
# * **GAE:** `values[t]` is $V(s_t)$; `next_values[t]` as for the return.
# * **TD(λ):** `next_values[t]` as for the return.
# * **Q(λ):** `next_q[t]` is $Q(s_{t+1}, \cdot)$ and `next_action[t]` is $u_{t+1}$: step $t+1$'s, stored at $t$.
# * **V-trace:** `log_rhos[t]` is step $t$'s own ratio, of $u_t$; `next_values[t]` as for the return.
# * **Retrace:** `next_log_ratio[t]`, `next_q[t]` and `next_expected_q[t]` are step $t+1$'s, stored at $t$
#   ([why its ratio is one step later than V-trace's](#Appendix:-V-trace-against-Retrace)).
#
# Only a backward shifts a load: [01b's transposed scan](01b_prologues_and_backward.ipynb#2.-The-backward)
# reads $a_{t-1}$ at `offs - 1`.
#
# </details>
#
# **On the minimum path,** go on to [the exercise](#Exercises) now. Sections 3–5 show the package's
# kernel, checked against the loop and timed.

# %% [markdown]
# ## 3. The kernel
#
# The kernel is section 2's split, as three [hooks](GLOSSARY.md#hook) in `rltriton_lite/vtrace.py`.
# The printout is optional.

# %% jupyter={"outputs_hidden": true}
for fn in (vtrace._step, vtrace._vtrace_prologue, vtrace._vtrace_epilogue):
    print(inspect.getsource(getattr(fn, "fn", fn)))

# %% [markdown]
# Points worth noticing (IMPALA's own code, which scans $v_t - V_t$, is compared in
# [an appendix](#Appendix:-IMPALA's-reference-code)):
#
# * **The advantage reads `y_in`,** the value that entered step $t$ in the scan: $v_{t+1}$. At an
#   episode end, `tl.where(done, v_next, y_in)` reads $V'_t$ instead: section 2's $\text{follow}_t$.
# * **Gradients** flow from `vs` to the rewards and the values, not to `log_rhos`. So **detach `vs`
#   when you use it as a critic target** ([appendix](#Appendix:-gradients)).
#
# <details><summary>Details: padding, and the backward kernel (optional)</summary>
#
# * After padding, `y_in` is the next unpadded step's value.
# * The backward kernel (`_vtrace_bwd_prologue`/`_vtrace_bwd_epilogue`) is the transposed scan,
#   forwards in time.
#
# </details>

# %% [markdown]
# ## 4. Kernel against the loop
#
# The kernel must match the loop, and reduce to TD(λ) and GAE on-policy. The rollout has clipped
# ratios, episode ends, padding, a per-step γ and λ, and a time-major copy.

# %%
B, T = 4, 50
lr_ = 0.5 * torch.randn(B, T, device=DEVICE)  # log π/μ: ratios from ~0.2 to ~5
r = torch.randn(B, T, device=DEVICE)
v = torch.randn(B, T, device=DEVICE)
term = torch.rand(B, T, device=DEVICE) < 0.1
trunc = (torch.rand(B, T, device=DEVICE) < 0.1) & ~term
nv = torch.where(trunc, torch.randn(B, T, device=DEVICE), torch.cat([v[:, 1:], torch.randn(B, 1, device=DEVICE)], 1))
mask = torch.ones(B, T, dtype=torch.bool, device=DEVICE)
mask[0, :7] = False   # left padding
mask[1, -5:] = False  # right padding
gamma = torch.rand(B, T, device=DEVICE) * 0.1 + 0.9  # a per-step discount
lam = torch.rand(B, T, device=DEVICE) * 0.5 + 0.5    # a per-step λ
kw = dict(rho_bar=1.2, c_bar=0.9, pg_rho_bar=1.5)

# %% [markdown]
# Against the loop; padded steps must be 0:

# %%
vs, pg = rl.vtrace(lr_, r, v, gamma=gamma, lambda_=lam, terminated=term, truncated=trunc, next_values=nv,
                   mask=mask, backend=KERNEL, **kw)
e_vs, e_pg = reference.vtrace(to_numpy(lr_), to_numpy(r), to_numpy(v), gamma=to_numpy(gamma), lambda_=to_numpy(lam),
                              terminated=to_numpy(term), truncated=to_numpy(trunc), next_values=to_numpy(nv),
                              mask=to_numpy(mask), **kw)
np.testing.assert_allclose(to_numpy(vs), e_vs, rtol=1e-5, atol=1e-5)
np.testing.assert_allclose(to_numpy(pg), e_pg, rtol=1e-5, atol=1e-5)
assert (vs[~mask] == 0).all() and (pg[~mask] == 0).all()

# %% [markdown]
# The same data time-major, (T, B), read through strides:

# %%
tm = lambda x: x.t().contiguous()  # noqa: E731
vs_tm, pg_tm = rl.vtrace(tm(lr_), tm(r), tm(v), gamma=tm(gamma), lambda_=tm(lam), terminated=tm(term),
                         truncated=tm(trunc), next_values=tm(nv), mask=tm(mask), time_dim=0, backend=KERNEL,
                         **kw)
np.testing.assert_allclose(to_numpy(vs_tm).T, e_vs, rtol=1e-5, atol=1e-5)
np.testing.assert_allclose(to_numpy(pg_tm).T, e_pg, rtol=1e-5, atol=1e-5)

# %% [markdown]
# Without `next_values`, $V'_t$ is `values[t+1]`, and `bootstrap_value` follows the last step:

# %%
boot = torch.randn(B, device=DEVICE)
vs_b, pg_b = rl.vtrace(lr_, r, v, gamma=0.95, terminated=term, bootstrap_value=boot, backend=KERNEL)
e_vs_b, e_pg_b = reference.vtrace(to_numpy(lr_), to_numpy(r), to_numpy(v), gamma=0.95, terminated=to_numpy(term),
                                  bootstrap_value=to_numpy(boot))
np.testing.assert_allclose(to_numpy(vs_b), e_vs_b, rtol=1e-5, atol=1e-5)
np.testing.assert_allclose(to_numpy(pg_b), e_pg_b, rtol=1e-5, atol=1e-5)
print("kernel == loop: clipping, episodes, truncations, padding, per-step γ and λ, time-major")

# %% [markdown]
# **On-policy, V-trace is TD(λ).** With $\pi = \mu$ (`log_rhos = 0`) and clips $\ge 1$, every
# weight is 1 and $c_t = \lambda_t$, so $v_t = r_t + \gamma_t[(1-\lambda_t)V'_t + \lambda_t v_{t+1}]$,
# notebook 03's λ-return. With $V'_t = V_{t+1}$ it is GAE's `returns`, and `pg_advantages` GAE's
# advantages.

# %%
zero = torch.zeros(B, T, device=DEVICE)
vs0, pg0 = rl.vtrace(zero, r, v, gamma=gamma, lambda_=0.9, terminated=term, truncated=trunc, next_values=nv,
                     backend=KERNEL)
torch.testing.assert_close(vs0, rl.td_lambda(r, nv, gamma=gamma, lambda_=0.9, terminated=term, truncated=trunc,
                                             backend=KERNEL))
torch.testing.assert_close(pg0, vs0 - v)

adv, ret = rl.gae(r, v, gamma=gamma, lambda_=0.9, terminated=term, bootstrap_value=boot, backend=KERNEL)
vs0, pg0 = rl.vtrace(zero, r, v, gamma=gamma, lambda_=0.9, terminated=term, bootstrap_value=boot, backend=KERNEL)
torch.testing.assert_close(vs0, ret)
torch.testing.assert_close(pg0, adv)
print("on-policy V-trace == TD(λ) == GAE")

# %%
assert profile.rollout_error("vtrace", 3, 1000, DEVICE) < 1e-5  # 3 × 1,000 steps: four chunks of 256 per row, the carry between them (notebook 01)

# %% [markdown]
# ## 5. How fast is it (H200, measured)
#
# Every implementation agrees with ours; one [peer](GLOSSARY.md#peer), rl_triton, is a little faster by the wall probe's medians at the three RL shapes, within the noise: [notebook 09, section 2.3](09_benchmarks.ipynb#2.3-V-trace:-a-peer-within-the-noise).

# %% jupyter={"source_hidden": true}
# Checks: the claims above, on the committed H200 run (CI runs them; skip when reading)
# every row of V-trace, as a table and a chart: profile.committed("vtrace") (notebook 09, section 2.3)
RUN, RES, h200 = profile.committed_or_empty("vtrace")
assert not any(r["flagged"] for r in h200)  # "every implementation agrees with ours"
if h200:
    _probe_us = profile.wall_probe_us()
    _faster = [("rl_triton", *s, "fwd") for s in profile.WALL_PROBE_SHAPES]  # "a little faster ... at the three RL shapes"
    assert all(_probe_us[s]["fwd", "rl_triton vtrace"] < _probe_us[s]["fwd", "vtrace"] for s in profile.WALL_PROBE_SHAPES)
    for _impl, _B, _T, _pass in _faster:  # "within the noise": notebook 14's noise rule, 2.3×
        _ours_wall = profile.wall_range(RES, _probe_us, {profile.OURS_IMPL: "{}"}, profile.OURS_IMPL, "vtrace", (_B, _T), _pass)
        _peer_wall = profile.wall_range(RES, _probe_us, {}, _impl, "vtrace", (_B, _T), _pass)
        assert profile.noise_verdict(_ours_wall, _peer_wall, 2.3) == "within the noise", (_B, _T, _ours_wall, _peer_wall)
assert not h200 or RES["gpu"] == "NVIDIA H200"  # "the committed H200 run"

# %% [markdown]
# ## Exercises
#
# Checked exercises work as in [notebook 00](00_associative_scan.ipynb#Exercises), under the
# [conventions card](GLOSSARY.md#conventions-for-every-exercise). New here: an epilogue,
# `(X, P, offs, t, m, T, y, y_in)`, where [`y_in`](GLOSSARY.md#y-in) is $y_{t+1}$, the value carried
# into step $t$ (0 after the row).

# %% [markdown]
# **`vtrace_pg`** (a Triton epilogue).
#
# **You write:** `vtrace_pg(X, P, offs, t, m, T, y, y_in)`, an epilogue run after the given
# prologue `exercises.vtrace_prologue` (λ = 1, printed below), which sets the reset flag.
#
# **It returns:** each step's policy-gradient advantage,
# $\rho^{pg}_t\big(r_t + \gamma(1-\text{term}_t)\,v_{t+1} - V_t\big)$ with
# $\rho^{pg}_t = \min(\bar\rho, \pi_t/\mu_t)$: the prologue's own clip $\bar\rho$
# ([why one clip](#Appendix:-details-of-the-exercises)).
#
# **Inputs:** `X = (log_rhos, rewards, values, next_values, terminated)`, (B, T) each: $\log\pi_t/\mu_t$,
# $r_t$, $V_t$, $V(s_{t+1})$, the bool flag. `y` is $v_t$, `y_in` is $v_{t+1}$. `P = (γ, ρ̄, c̄)`, `P[2]`
# only for the prologue. The rest is on the [conventions card](GLOSSARY.md#conventions-for-every-exercise).
#
# * **At the window's last step** `y_in` is 0 (the harness scans from $y_T = 0$): $v_{t+1}$ is `next_values` there.
# * **At a termination** `y_in` is the next episode's value: select it away, with `next_values` (NaN there).
#
# The given prologue:

# %%
print(inspect.getsource(getattr(exercises.vtrace_prologue, "fn", exercises.vtrace_prologue)))

# %% [markdown]
# (How the harness finds `y_in`: the [appendix](#Appendix:-details-of-the-exercises).)
#
# <details><summary>Hint 1: where to start</summary>
#
# Section 3's `_vtrace_epilogue` makes the same switch, in this line of `rltriton_lite/vtrace.py`:
#
# ```python
# vs_next = tl.where(done, v_next, y_in)  # vs'_{t+1}
# ```
#
# There `v_next` is the step's `next_values`, and `done` marks any episode end, the window's last
# step included. Here a termination is handled apart, by the select that $(1-\text{term}_t)$
# stands for, so only the window's last step switches: `t == T - 1` in place of `done`.
# The epilogue is elementwise, so load what you need at `offs`, as a prologue does. Since `y_in`
# already holds $v_{t+1}$, what is left is the formula.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Take each kind of step of [01's episode-end table](01_discounted_return.ipynb#The-episode-end-table):
#   which $v_{t+1}$ does it read?
# * $\rho^{pg}_t$ is the ratio $\pi_t/\mu_t$, clipped at ρ̄ (`P[1]`).
# * Two selects: one picks $v_{t+1}$ at the window's last step, one drops $\gamma v_{t+1}$ at a termination.
# * `y` ($v_t$) is not needed.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Section 2's three steps: $\pi/\mu = (2, 0.5, 1)$, rewards and values 1, $\gamma = 0.5$,
# $\bar\rho = \bar c = 1$. First with no termination, `next_values` $(1, 1, 2)$: the given
# prologue's `vs` is $(1.75, 1.5, 2)$, and the advantage is $(0.75, 0.5, 1)$ (section 1's numbers).
# Then with the termination at step 1, `next_values` $(1, \text{NaN}, 2)$: `vs` is $(1.5, 1, 2)$, and
# section 2's table works out the advantage, $(0.5, 0, 1)$.
# At $t = 2$, the window's last step, `y_in` is 0 and $v_3$ is `next_values`.
#
# ```python
# lr_r_v = (torch.log(torch.tensor([[2.0, 0.5, 1.0]], device=DEVICE)), torch.ones(1, 3, device=DEVICE),
#           torch.ones(1, 3, device=DEVICE))
# for nv3, term3 in (([[1.0, 1.0, 2.0]], [[False, False, False]]), ([[1.0, float("nan"), 2.0]], [[False, True, False]])):
#     X3 = (*lr_r_v, torch.tensor(nv3, device=DEVICE), torch.tensor(term3, device=DEVICE))
#     print(exercises.guarded(exercises.scan_hook, exercises.vtrace_prologue, X3, (0.5, 1.0, 1.0),
#                             epilogue=vtrace_pg).tolist())
# # must print [[0.75, 0.5, 1.0]], then [[0.5, 0.0, 1.0]]
# ```
#
# Run the checker before you open Hint 4.
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# A termination returns $\rho^{pg}_t(r_t - V_t)$, also on the window's last step: `tl.where(term, 0.0, ...)`
# reads neither $v_{t+1}$.
#
# ```python
# next_values = tl.load(X[3] + offs, mask=m, other=0.0)
# v_next = tl.where(___, next_values, y_in)  # ___: at which step does y_in hold no v_{t+1}?
# rho = ___  # ___: pi/mu from log_rhos, clipped at rho_bar (P[1])
# return rho * (r + tl.where(term, ___, ___) - v)  # ___: what does a terminated step bootstrap from?
# ```
#
# </details>

# %%
# YOUR CODE: replace the next line by your @triton.jit def vtrace_pg(X, P, offs, t, m, T, y, y_in)
vtrace_pg = None

# %%
exercises.attempt("vtrace_pg", vtrace_pg)

# %% [markdown]
# *A good place to stop.* The capstone, `vtrace_kernel`, has its own notebook,
# [04c](04c_vtrace_kernel.ipynb): V-trace as whole kernels of your own, from section 2's step.

# %% [markdown]
# Without a checker:
#
# *(Answer each in its cell below, for your teacher's grader.)*
#
# 1. Set `rho_bar = c_bar = float("inf")`: `vs` becomes the importance-sampled λ-return. Its mean
#    is π's λ-return built on the current critic, with no clipping bias. Take 1000 rows of $T = 20$
#    steps, γ = 0.9, λ = 1, every reward 1, a critic $V = 0$ everywhere and a bootstrap value of 0.
#    The expected `vs[:, 0]` is then $\sum_{k<20} 0.9^k \approx 8.78$, not the 10 of endless
#    rewards of 1: the bootstrap of 0 drops every reward from step 20 on. Draw each step's `log_rhos`
#    independently from $\mathcal N(-\tfrac12, 1)$, so that $E[\rho] = 1$ as for a real ratio π/μ.
#    Compare the variance of `vs[:, 0]` with and without the clips. Then compute the unclipped
#    variance exactly ($E[\rho^2] = e$ makes it a short double sum) and rerun with a few seeds:
#    what does a sample of 1000 rows miss, and why? What does $\bar\rho$ trade away?
#
#    <details><summary>Check yourself</summary>
#
#    Clipped, every `vs[:, 0]` lies between 0 and 8.78, and the variance is about 1. Unclipped, the exact
#    variance is $3.9\cdot10^7$; a sample of 1000 rows shows orders of magnitude less, since a few huge products dominate it.
#    $\bar\rho$ trades the fixed point: the critic learns the value of a policy between μ and π ([04b, section 1](04b_vtrace_fixed_point.ipynb#1.-Which-value-the-target-converges-to)).
#
#    </details>
# 2. Build a rollout with one truncation and no termination, with `next_values[t]` $=$ `values[t+1]`
#    everywhere (the bootstrap value after the window). Run `impala_vs`, the small IMPALA-style
#    loop defined after these questions, next to `rl.vtrace` given `truncated` and those `next_values`. `impala_vs`
#    accumulates $v_t - V_t$ backwards, as [the appendix](#Appendix:-IMPALA's-reference-code)
#    describes, and it takes no `truncated`. Which steps differ? Is that the $v - V$ rewrite's
#    fault, or the missing `truncated` flag's?
#
#    <details><summary>Check yourself</summary>
#
#    Steps after the truncation agree. The truncation step $k$ differs by $\gamma c_k(v_{k+1} - V_{k+1})$:
#    `impala_vs` carries the next episode's $v_{k+1} - V_{k+1}$ across the truncation, where `rl.vtrace` cuts the trace.
#    The episode's earlier steps inherit that gap through the trace. `next_values` is not in it: the truncation alone
#    makes the difference. The missing `truncated` flag is at fault, not the rewrite.
#
#    </details>
# 3. Lower `pg_rho_bar` to 0.5, keeping `rho_bar = 1`. Which output changes, and which does not?
#    Why would IMPALA want separate clips for the critic's target and the policy gradient?
#
#    <details><summary>Check yourself</summary>
#
#    `vs` does not change at all. `pg_advantages` is multiplied by $\min(0.5, \pi/\mu)/\min(1, \pi/\mu)$: halved
#    where $\pi/\mu \ge 1$, unchanged where $\pi/\mu \le 0.5$. $\bar\rho$ sets which value the critic learns, `pg_rho_bar` the policy step's size.
#
#    </details>

# %% jupyter={"source_hidden": true}
# Checks: question 1's expected results; with every ρ = 1 the setup gives the mean exactly (CI runs them; skip when reading)
_q1 = torch.zeros(3, 20, dtype=torch.float64)
_q1_vs, _ = rl.vtrace(_q1, _q1 + 1, _q1, gamma=0.9, lambda_=1.0, rho_bar=float("inf"), c_bar=float("inf"),
                      bootstrap_value=torch.zeros(3, dtype=torch.float64), backend="torch")
assert torch.allclose(_q1_vs[:, 0], torch.tensor(sum(0.9**k for k in range(20)), dtype=torch.float64))
assert round(sum(0.9**k for k in range(20)), 2) == 8.78  # "≈ 8.78, not the 10"
_t1 = np.arange(20)  # the exact unclipped variance of v_0 = sum_t 0.9^t prod_{i<=t} rho_i: E[rho] = 1, E[rho^2] = e
_tt, _uu = np.meshgrid(_t1, _t1, indexing="ij")
_var1 = (0.9 ** (_tt + _uu) * np.e ** (np.minimum(_tt, _uu) + 1)).sum() - sum(0.9**k for k in range(20)) ** 2
assert f"{_var1:.1e}" == "3.9e+07"  # "the exact variance is 3.9·10^7"
_lr1 = -0.5 + torch.randn(1000, 20, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
_kw1 = dict(gamma=0.9, bootstrap_value=torch.zeros(1000, dtype=torch.float64), backend="torch")
_ones1, _zeros1 = torch.ones(1000, 20, dtype=torch.float64), torch.zeros(1000, 20, dtype=torch.float64)
_clip1 = rl.vtrace(_lr1, _ones1, _zeros1, **_kw1).vs[:, 0]
_free1 = rl.vtrace(_lr1, _ones1, _zeros1, rho_bar=float("inf"), c_bar=float("inf"), **_kw1).vs[:, 0]
assert _clip1.min() >= 0 and _clip1.max() <= 8.79 and 0.5 < _clip1.var() < 1.5  # "between 0 and 8.78, about 1"
assert _free1.var() * 1000 < _var1  # "a sample of 1000 rows shows orders of magnitude less"

# %%
def impala_vs(log_rhos, rewards, values, next_values, terminated, gamma, lambda_=1.0):
    """Question 2's loop, IMPALA-style: v_t - V_t accumulated backwards (rho_bar = c_bar = 1, no truncated)."""
    rho = log_rhos.exp().clamp(max=1.0)
    c = lambda_ * rho
    discounts = gamma * (~terminated).to(rewards.dtype)  # 0 at a termination: it cuts the trace and the bootstrap
    deltas = rho * (rewards + torch.where(terminated, 0.0, gamma * next_values) - values)
    acc, vs_minus_v = torch.zeros_like(rewards[:, 0]), torch.empty_like(rewards)
    for t in reversed(range(rewards.shape[1])):  # backwards, from 0 after the window
        acc = deltas[:, t] + discounts[:, t] * c[:, t] * acc
        vs_minus_v[:, t] = acc
    return vs_minus_v + values


# %% jupyter={"source_hidden": true}
# Checks: question 2's loop gives rl.vtrace's vs where V'_t = values[t+1] and no truncation (CI runs them; skip when reading)
g_q2 = torch.Generator().manual_seed(2)
lr_q2, r_q2, v_q2 = (torch.randn(2, 12, generator=g_q2, dtype=torch.float64) for _ in range(3))
boot_q2, term_q2 = torch.randn(2, generator=g_q2, dtype=torch.float64), torch.rand(2, 12, generator=g_q2) < 0.15
nv_q2 = torch.cat([v_q2[:, 1:], boot_q2[:, None]], 1)  # V'_t = values[t+1], the bootstrap value after the window
for lam_q2 in (1.0, 0.8):
    torch.testing.assert_close(impala_vs(lr_q2, r_q2, v_q2, nv_q2, term_q2, 0.9, lam_q2),
                               rl.vtrace(lr_q2, r_q2, v_q2, gamma=0.9, lambda_=lam_q2, terminated=term_q2,
                                         bootstrap_value=boot_q2, backend="torch").vs)
x_q2 = dict(log_rhos=lr_q2, rewards=r_q2, values=v_q2, next_values=nv_q2, terminated=term_q2)
loop_q2 = profile.op("vtrace").loop(x_q2, {"gamma": 0.9, "lambda_": 1.0}).double()  # the profiler's loop, the same loop in float32
torch.testing.assert_close(impala_vs(lr_q2, r_q2, v_q2, nv_q2, term_q2, 0.9), loop_q2, rtol=1e-5, atol=1e-5)
assert term_q2.any()
# question 2 itself: V'_t = values[t+1] everywhere, one truncation at step 5, no termination
no_term_q2, trunc_q2 = torch.zeros(2, 12, dtype=torch.bool), torch.zeros(2, 12, dtype=torch.bool)
trunc_q2[:, 5] = True
ours_q2 = rl.vtrace(lr_q2, r_q2, v_q2, gamma=0.9, truncated=trunc_q2, next_values=nv_q2, backend="torch").vs
theirs_q2 = impala_vs(lr_q2, r_q2, v_q2, nv_q2, no_term_q2, 0.9)
torch.testing.assert_close(theirs_q2[:, 6:], ours_q2[:, 6:])  # "steps after the truncation agree"
assert ((theirs_q2 - ours_q2)[:, :6].abs() > 1e-6).all()  # steps 0-5 differ, with next_values == values[t+1]
c5_q2 = lr_q2[:, 5].exp().clamp(max=1.0)
torch.testing.assert_close(theirs_q2[:, 5] - ours_q2[:, 5], 0.9 * c5_q2 * (ours_q2[:, 6] - v_q2[:, 6]))  # the gap

# %% [markdown] tags=["answer-1"]
# **Answer 1.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-2"]
# **Answer 2.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-3"]
# **Answer 3.** *Your answer here (code for it: in cells under this one).*

# %% [markdown]
# ## What you now know
#
# * V-trace is one reverse scan of $v_t$ itself: $a_t = \gamma_t c_t$, $b_t = V_t +
#   \rho_t\delta_t - [\lnot\text{done}_t]\,\gamma_t c_t V'_t$, with the reset flag set where done$_t$.
# * $\rho_t = \min(\bar\rho, \pi/\mu)$ sets which value `vs` converges to, and
#   $c_t = \lambda_t\min(\bar c, \pi/\mu)$ how far a TD error travels.
# * `pg_advantages` come from the same pass, as in rlax: the IMPALA paper's advantage at λ = 1.
#   [Notebook 04b's appendix](04b_vtrace_fixed_point.ipynb#Appendix:-which-policy-gradient-advantage)
#   compares the two at λ < 1.
# * On-policy V-trace is TD(λ), and with $V'_t = V_{t+1}$ it is GAE.
# * [Section 2's table](#One-table-for-every-estimator) gives $b_t$ at a reset for all six
#   estimators.
#
# Next, the capstone: [notebook 04c](04c_vtrace_kernel.ipynb) has you write V-trace as whole
# kernels of your own, with no harness.

# %% [markdown]
# ## Appendix: IMPALA's reference code
#
# Optional. The package scans $v_t$. IMPALA's reference code (`vtrace.py` in DeepMind's
# scalable_agent) scans $v_t - V_t$ instead, backwards from 0:
#
# `vs_minus_v_xs[t] = deltas[t] + discounts[t] * cs[t] * vs_minus_v_xs[t + 1]`,
#
# with `deltas[t]` $= \rho_t(r_t + \text{discounts}_t V_{t+1} - V_t)$ and `discounts[t]` $= \gamma_t$,
# or 0 at an episode end. Then `vs = vs_minus_v_xs + values`. Reusing it has two limits:
#
# * Its $V_{t+1}$ is the next entry, `values[t+1]`, of its one `values` input. Only at the last
#   step, where no next entry exists, does it read a separate bootstrap value. That forces
#   $V'_t = V_{t+1}$, false wherever the next values are not `values[t+1]`. It takes no padding
#   input either: a padded batch is beyond what it was written for, not a fault in it.
# * It ends an episode by setting the discount to 0. At a truncation that 0 drops the bootstrap
#   $\gamma V_{t+1}$ along with the trace, where a time limit should keep it.

# %% jupyter={"source_hidden": true}
# Checks: IMPALA's recurrence above gives our vs where V'_t = values[t+1] (CI runs them; skip when reading)
g_i = torch.Generator().manual_seed(7)
lr_i, r_i, v_i = (torch.randn(3, 20, generator=g_i, dtype=torch.float64) for _ in range(3))
boot_i, term_i = torch.randn(3, generator=g_i, dtype=torch.float64), torch.rand(3, 20, generator=g_i) < 0.15
cs_i = rho_i = torch.clamp(lr_i.exp(), max=1.0)  # rho_bar = c_bar = 1, lambda = 1
discounts_i = 0.9 * (~term_i).double()  # gamma, or 0 at an episode end
deltas_i = rho_i * (r_i + discounts_i * torch.cat([v_i[:, 1:], boot_i[:, None]], 1) - v_i)  # V_(t+1) from values
acc_i, vs_minus_v_xs = torch.zeros(3, dtype=torch.float64), torch.zeros_like(r_i)
for t in reversed(range(20)):  # backwards from 0
    acc_i = deltas_i[:, t] + discounts_i[:, t] * cs_i[:, t] * acc_i
    vs_minus_v_xs[:, t] = acc_i
torch.testing.assert_close(vs_minus_v_xs + v_i, rl.vtrace(lr_i, r_i, v_i, gamma=0.9, terminated=term_i,
                                                          bootstrap_value=boot_i, backend="torch").vs)
assert term_i.any()

# %% [markdown]
# ## Appendix: the table across estimators, checked
#
# Optional. The check below takes each row of [section 2's table](#One-table-for-every-estimator),
# scans its triples from 100 past the window, and compares the result with the estimator's loop.
# It also checks the rule $b_t = b^{ord}_t + a_t\,\hat y_{t+1}$ at every reset but a termination.

# %% jupyter={"source_hidden": true}
# Checks: the table across estimators, row by row: each row's triples, scanned from 100, against the loop (CI runs them; skip when reading)
g4, l4, last4 = 0.5, 0.5, np.arange(4) == 3
r4, v4 = np.array([1.0, 2.0, -1.0, 3.0]), np.array([2.0, 0.5, 1.0, -1.0])
nv4 = np.array([0.5, np.nan, 4.0, 10.0])  # NaN behind the termination; after the truncation, not values[3]
term4, trunc4 = np.array([False, True, False, False]), np.array([False, False, True, False])
done4 = term4 | trunc4 | last4
gV = np.where(term4, 0.0, g4 * nv4)  # the bootstrap gamma V'_t, selected away at a termination
ratio4 = np.array([2.0, 0.5, 1.0, 0.8])  # pi/mu
rho4, c4 = np.minimum(1.0, ratio4), l4 * np.minimum(1.0, ratio4)
delta4 = r4 + gV - v4
# Q(lambda) and Retrace: their Hint 3's rollouts in 03 (gamma = 0.5, rewards 1, step 2 terminates)
term_h = np.array([False, False, True, False])
q_h = np.array([[2.0, 2.0], [4.0, 0.0], [np.nan, np.nan], [6.0, 2.0]])
M_h = q_h.max(1)
greedy_h = q_h[np.arange(4), [1, 1, 0, 0]] == M_h  # a tie is greedy
ell_h = np.where(greedy_h & ~last4, 0.5, 0.0)
eq_h, qn_h, c_h = np.array([2.0, 4.0, np.nan, 6.0]), np.array([1.5, 2.0, np.nan, 8.0]), np.minimum(1.0, [0.5, 2.0, np.nan, 1.0])
G_q, G_r, want_q, want_r = 100.0, 100.0, np.zeros(4), np.zeros(4)  # the loops of 03's two formulas
for t in reversed(range(4)):
    G_q = 1.0 + (0.0 if term_h[t] else 0.5 * ((1 - ell_h[t]) * M_h[t] + ell_h[t] * G_q))
    G_r = 1.0 + (0.0 if term_h[t] else 0.5 * (eq_h[t] + (0.0 if last4[t] else c_h[t]) * (G_r - qn_h[t])))
    want_q[t], want_r[t] = G_q, G_r
np.testing.assert_allclose(want_q, [2.25, 3.0, 1.0, 4.0])  # q_lambda's Hint 3
np.testing.assert_allclose(want_r, [2.25, 2.5, 1.0, 4.0])  # retrace's Hint 3
table_rows = {  # estimator: (a_t, ordinary b_t, b_t at a reset, resets at, the critic's estimate of y_{t+1}, termination, the loop)
    "return": (g4, r4, r4 + gV, done4, nv4, term4,
               reference.discounted_returns(r4, gamma=g4, terminated=term4, truncated=trunc4, next_values=nv4)),
    "GAE": (g4 * l4, delta4, delta4, done4, 0.0, term4,
            reference.gae(r4, v4, gamma=g4, lambda_=l4, terminated=term4, truncated=trunc4, next_values=nv4)[0]),
    "TD(λ)": (g4 * l4, r4 + (1 - l4) * gV, r4 + gV, done4, nv4, term4,
              reference.td_lambda(r4, nv4, gamma=g4, lambda_=l4, terminated=term4, truncated=trunc4)),
    "Q(λ)": (0.5 * 0.5, 1.0 + np.where(term_h, 0.0, 0.5 * 0.5 * M_h), 1.0 + np.where(term_h, 0.0, 0.5 * M_h),
             term_h | last4 | ~greedy_h, M_h, term_h, want_q),
    "V-trace": (g4 * c4, v4 + rho4 * delta4 - g4 * c4 * nv4, v4 + rho4 * delta4, done4, nv4, term4,
                reference.vtrace(np.log(ratio4), r4, v4, gamma=g4, lambda_=l4, terminated=term4, truncated=trunc4,
                                 next_values=nv4)[0]),
    "Retrace": (0.5 * c_h, 1.0 + np.where(term_h, 0.0, 0.5 * (eq_h - c_h * qn_h)), 1.0 + np.where(term_h, 0.0, 0.5 * eq_h),
                term_h | last4, qn_h, term_h, want_r),
}
a_table = np.stack([np.where(row[3], 0.0, row[0]) for row in table_rows.values()])  # the reset flag as a = 0
b_table = np.stack([np.where(row[3], row[2], row[1]) for row in table_rows.values()])  # b_t at a reset where the flag is set
y_table = rl.linear_scan(torch.tensor(a_table, dtype=torch.float32, device=DEVICE),
                         torch.tensor(b_table, dtype=torch.float32, device=DEVICE),
                         initial=torch.full((6,), 100.0, device=DEVICE), backend=KERNEL)  # 100 past the window: the reset flag keeps it out
np.testing.assert_allclose(to_numpy(y_table), np.stack([row[6] for row in table_rows.values()]), rtol=1e-6)
for name, (a_, b_ord, b_cut, reset_, y_hat, term_, _) in table_rows.items():  # "one rule gives b_t at every reset"
    ends = reset_ & ~term_
    np.testing.assert_allclose(b_cut[ends], (b_ord + a_ * np.asarray(y_hat))[ends], err_msg=name)
assert done4.sum() == 3 and (~greedy_h & ~term_h).sum() == 1  # a termination, a truncation, the window's end; a non-greedy step
# the last column's numbers
assert reference.discounted_returns([1.0, 2.0, 3.0, 4.0], gamma=0.5, terminated=[0, 1, 0, 0], bootstrap_value=6.0)[3] == 7.0
assert reference.gae(np.ones(4), np.full(4, 2.0), gamma=0.5, lambda_=0.5, terminated=[False, True, False, False],
                     bootstrap_value=10.0)[0][3] == 4.0
assert reference.td_lambda([0.0] * 3, [10.0, 20.0, 30.0], gamma=1.0, lambda_=0.5)[2] == 30.0 == 2 * 15.0
assert reference.vtrace(np.log([2.0, 0.5, 1.0]), [1.0] * 3, [1.0] * 3, gamma=0.5, bootstrap_value=2.0)[0][2] == 2.0
assert want_q[3] == want_r[3] == 1 + 0.5 * 6 == 4.0

# %% [markdown]
# ## Appendix: V-trace against Retrace
#
# Optional. The last two rows of [section 2's table](#One-table-for-every-estimator) differ in one
# index: V-trace's multiplier is $\gamma_t c_t$, Retrace's $\gamma c_{t+1}$
# ([03's exercise](03_td_lambda.ipynb#Exercises)). Entry $t$ of `log_rhos` is step
# $t$'s own ratio; Retrace's `next_log_ratio[t]` was step $t+1$'s. $V^\pi(s_t)$ averages over
# $u_t$, so V-trace weighs step $t$'s TD error by $\rho_t$; $Q(s_t, u_t)$ is given $u_t$, so
# Retrace weighs it by 1. Their TD errors (the introduction's $\delta_t$, Retrace's $\delta^Q_t$)
# inside an episode:
#
# | | V-trace's $v_t$ | Retrace's $G_t$ |
# | --- | --- | --- |
# | step $t$'s TD error | $\rho_t$ | 1 |
# | step $t+1$'s TD error | $\gamma\,c_t\,\rho_{t+1}$ | $\gamma\,c_{t+1}$ |
# | the link from step $t+1$ back to step $t$ | $\gamma\,c_t$ | $\gamma\,c_{t+1}$ |

# %% jupyter={"source_hidden": true}
# Checks: the V-trace/Retrace table above, its TD-error rows, on two steps inside an episode (CI runs them;
# skip when reading)
g_u = torch.Generator().manual_seed(11)
lr_u, r_u, v_u = (torch.randn(2, generator=g_u, dtype=torch.float64).numpy() for _ in range(3))
boot_u, gam_u = 0.7, 0.9
rho_u = c_u = np.minimum(1.0, np.exp(lr_u))  # rho_bar = c_bar = 1, lambda = 1
d_u = r_u + gam_u * np.array([v_u[1], boot_u]) - v_u  # V'_0 = V_1
vs_u = reference.vtrace(lr_u, r_u, v_u, gamma=gam_u, bootstrap_value=boot_u)[0]
np.testing.assert_allclose(vs_u[0], v_u[0] + rho_u[0] * d_u[0] + gam_u * c_u[0] * rho_u[1] * d_u[1], rtol=1e-12)  # c_t rho_{t+1}
eq_u, q_u, c1_u = np.array([0.4, -1.2]), np.array([0.3, 1.1]), 0.6  # E_pi Q(s_{j+1}, .) and Q(s_j, u_j), j = 0, 1
G1_u = r_u[1] + gam_u * eq_u[1]  # Retrace's last step: c = 0
G0_u = r_u[0] + gam_u * (eq_u[0] + c1_u * (G1_u - q_u[1]))
dq_u = r_u + gam_u * eq_u - q_u  # delta^Q_0, delta^Q_1
np.testing.assert_allclose(G0_u, q_u[0] + dq_u[0] + gam_u * c1_u * dq_u[1], rtol=1e-12)  # c_{t+1} alone

# %% [markdown]
# ## Appendix: gradients
#
# Optional. IMPALA's code stops gradients through the whole target, `vs` and the advantage alike.
# The package does not, as section 3 says, so detach `vs` as notebook 10 does with its GAE targets.
# The first cell checks which inputs get gradients. The second checks the backward kernel against
# autograd of the PyTorch path, with a loss on both outputs.

# %%
lr_grad = torch.zeros(2, 8, device=DEVICE, requires_grad=True)
out = rl.vtrace(lr_grad, torch.randn(2, 8, device=DEVICE), torch.randn(2, 8, device=DEVICE), backend=KERNEL)
assert not out.vs.requires_grad and not out.pg_advantages.requires_grad  # log_rhos gets no gradient
r_grad, v_grad = (torch.randn(2, 8, device=DEVICE, requires_grad=True) for _ in range(2))
out = rl.vtrace(lr_grad, r_grad, v_grad, lambda_=0.9, backend=KERNEL)  # (at λ = 1 and π = μ, vs is the return)
d_lr, d_r, d_v = torch.autograd.grad(out.vs.sum(), (lr_grad, r_grad, v_grad), allow_unused=True)
assert d_lr is None and d_r.abs().sum() > 0 and d_v.abs().sum() > 0  # vs depends on r and V: detach it as a target
assert not out.vs.detach().requires_grad
print("importance weights are constants; rewards and values get gradients")

# %%
r64, v64, nv64 = (torch.randn(2, 30, dtype=torch.float64, device=DEVICE, requires_grad=True) for _ in range(3))
lr64 = 0.5 * torch.randn(2, 30, dtype=torch.float64, device=DEVICE)
w1, w2 = (torch.randn(2, 30, dtype=torch.float64, device=DEVICE) for _ in range(2))
t2 = torch.rand(2, 30, device=DEVICE) < 0.1
tr2 = (torch.rand(2, 30, device=DEVICE) < 0.1) & ~t2
grads = {}
for be in ("triton", "torch"):
    o = rl.vtrace(lr64, r64, v64, lambda_=0.9, terminated=t2, truncated=tr2, next_values=nv64, backend=be)
    grads[be] = torch.autograd.grad((o.vs * w1 + o.pg_advantages * w2).sum(), (r64, v64, nv64))
for gk, gt in zip(grads["triton"], grads["torch"]):
    torch.testing.assert_close(gk, gt)
print("gradients match")

# %% [markdown]
# ## Appendix: details of the exercises
#
# **One clip** (`vtrace_pg`). Here $\bar\rho$ (`P[1]`) clips both $\rho_t$ and $\rho^{pg}_t$. Section 2
# has a separate clip for the advantage, $\bar\rho_{pg}$ (`pg_rho_bar`). One clip for both is what the
# IMPALA paper does, and the package's defaults agree: $\bar\rho_{pg} = \bar\rho = 1$.
#
# **How the harness finds `y_in`** (`vtrace_pg`). Where an epilogue is passed, the harness reruns
# the scan shifted one step (from `offs + 1`), so each step also gets $y_{t+1}$. The package's own
# kernel takes `y_in` from the first scan instead; the harness keeps it simple.

# %% jupyter={"source_hidden": true}
# Checks: "One clip" above (CI runs them; skip when reading)
_vtrace_args = inspect.signature(rl.vtrace).parameters
assert _vtrace_args["rho_bar"].default == _vtrace_args["pg_rho_bar"].default == 1.0  # "the package's defaults"
