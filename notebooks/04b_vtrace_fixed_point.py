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
# # 04b — Where V-trace converges (optional)
#
# > **In short**
# >
# > * V-trace clips its importance weights at $\bar\rho$. Which value does the critic then learn?
# > * Training stops where the mean one-step correction is 0 (section 1, on a one-state example).
# > * The traces $c_t$ change how far a correction travels, not where training stops.
# > * You write that fixed point for any finite MDP, in NumPy.
# > * An optional appendix compares notebook 04's policy-gradient advantage with the IMPALA paper's.
#
# * **Time:** 45 min–1 h, the reading and the checked exercise; the appendix, about 15 min more.
# * **Needs:** notebook 04, sections 1 and 2 (for the appendix, 4 too). No GPU and no Triton: this notebook is about the algorithm.
# * **Optional:** notebook 04's kernels and exercises do not need it. Notebook 06 reuses its
#   one-state problem, and explains it again.
#
# Notebook 04 wrote V-trace's target with two truncated importance weights of the action taken,
#
# $$\rho_t = \min(\bar\rho, \tfrac{\pi}{\mu}), \qquad c_t = \lambda_t \min(\bar c, \tfrac{\pi}{\mu}),
#   \qquad v_t = V_t + \rho_t\delta_t + \gamma_t (1-\text{done}_t)\, c_t\, (v_{t+1} - V'_t).$$
#
# Here π is the learner's (target) policy and μ the behaviour policy that collected the data
# ([symbols](GLOSSARY.md#symbols)). $V'_t$ is the value of the next state, and $\delta_t = r_t + \gamma_t (1-\text{term}_t) V'_t - V_t$
# is the TD error. The critic $V$ is trained towards `vs` $= v_t$. Where does that training stop?
# With $\bar\rho = \infty$, it stops at $V^\pi$, the value of π (where $\mu > 0$ wherever $\pi > 0$).
# With a finite $\bar\rho$, as in IMPALA, it can stop elsewhere.

# %%
import numpy as np
import torch

import rltriton_lite as rl
from rltriton_lite import exercises

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
rng = np.random.default_rng(41)

# %% [markdown]
# ## 1. Which value the target converges to
#
# With a tabular critic (one free value per state), training stops where the mean correction
# `vs` − V is 0 in every state. That happens where, and only where, the mean *one-step* correction
# is 0 in every state:
#
# $$E_\mu[\rho_t\,\delta_t \mid s_t = s] = 0 \quad \text{for every state } s.$$
#
# The traces $c_t$ do not appear in it. This section shows why, then solves the condition.
#
# **The example.** One state, two actions, $\gamma = 0.9$ and $\bar c = \lambda = 1$:
#
# | | action 0 | action 1 |
# | --- | --- | --- |
# | reward | 1 | 0 |
# | behaviour policy μ | 0.2 | 0.8 |
# | target policy π | 0.8 | 0.2 |
# | $\pi/\mu$ | 4 | 1/4 |
# | trace $c_t = \min(1, \pi/\mu)$ | 1 | 1/4 |
#
# So $E_\mu[c_t] = 0.2 \cdot 1 + 0.8 \cdot \tfrac14 = 0.4$.
#
# **Why that condition, in one state.** The correction `vs` − V is a sum of terms. The first is
# $\rho_t\delta_t$. Write $d = E_\mu[\rho_t\delta_t]$ for its mean. The term from one step later
# is $\gamma c_t\,\rho_{t+1}\delta_{t+1}$, with mean $\gamma E_\mu[c_t]\,d = 0.36\,d$. Each later
# term is the one before times that same 0.36, so the whole mean correction is
#
# $$d\,(1 + 0.36 + 0.36^2 + \dots) = \frac{d}{1 - 0.36}.$$
#
# It is 0 exactly where $d$ is.
#
# **In any finite MDP.** Now $d$ is a vector, $d_s = E_\mu[\rho_t\delta_t \mid s_t = s]$, one
# entry per state. The number $E_\mu[c_t]$ becomes the traces' matrix
# $C_{ss'} = E_\mu[c_t\,\mathbb{1}(s_{t+1} = s') \mid s_t = s]$. It weighs the next state's
# correction by the trace and by how likely that state follows $s$. Its rows sum to at most 1.
#
# <details><summary>Details: why its rows sum to at most 1 (optional)</summary>
#
# The min in $c_t = \lambda\min(\bar c, \pi/\mu)$ bounds $c_t$ by $\lambda\,\pi/\mu$, and
# $\lambda \le 1$ keeps that at most $\pi/\mu$. So a row's sum, $E_\mu[c_t]$, is at most
# $E_\mu[\pi/\mu] = \sum_u \pi(u) \le 1$.
#
# </details>
#
# State by state, the whole mean correction is
# $(I + \gamma C + (\gamma C)^2 + \dots)\,d = (I - \gamma C)^{-1} d$. The fold below derives this
# series term by term. With $\gamma < 1$, the matrix $I - \gamma C$ is invertible. So the whole
# correction is 0 in every state exactly where $d$ is. The condition only has to hold in the
# states that μ visits, since the critic never trains on or reads the others.
#
# <details><summary>Details: the series term by term (optional)</summary>
#
# Let $s_j$ be the state at step $j$. The correction that step $j$ gets from $k$ steps later is
# $D_k(j) = \gamma^k c_j \cdots c_{j+k-1}\,\rho_{j+k}\delta_{j+k}$, and `vs` − V at step $j$ is the
# sum of these over $k$. Write $m_k$ for the vector of their means, $(m_k)_s = E[D_k(j) \mid s_j = s]$.
#
# * For $k = 0$, $D_0(j) = \rho_j\delta_j$, so $m_0 = d$.
# * For $k \ge 1$, $D_k(j) = \gamma\,c_j\,D_{k-1}(j+1)$. Given $s_{j+1}$, what follows does not
#   depend on the action at step $j$ (the Markov property), so
#   $E[D_k(j) \mid s_j] = \gamma\,E\big[c_j\,E[D_{k-1}(j+1) \mid s_{j+1}] \mid s_j\big]$, which is
#   $m_k = \gamma\,C\,m_{k-1}$.
#
# By induction on $k$, $m_k = (\gamma C)^k d$, and the sum over $k$ is the series above. So the
# traces $c$ only scale how far a correction travels. They do not move the point where $d = 0$.
#
# </details>
#
# **In training's windows** of $T$ steps the series is cut short, yet the fixed point is the same.
# Averaged over a window's positions, term $k$ counts with the weight $(T-k)/T$, if the rollout
# starts from μ's stationary distribution. So the correction is $\frac{1}{T} M d$ with $M = \sum_{k<T}(T-k)\,(\gamma C)^k$. This matrix $M$ is invertible, so
# the average is 0 only where $d$ is.
#
# [The appendix](#Appendix:-the-window's-weights,-and-why-M-is-invertible) derives the weights and
# proves that $M$ is invertible.

# %% jupyter={"source_hidden": true}
# Checks: the windows' matrix, on random traces' matrices (CI runs them; skip when reading)
def window_matrix(X, T):
    """sum_k (T - k) X^k, k < T: the k-th term reaches the T - k positions at least k steps before the end."""
    return sum((T - k) * np.linalg.matrix_power(X, k) for k in range(T))


rng_w = np.random.default_rng(0)  # its own generator: the rollouts below draw from rng
for S, T_w, g_w in ((1, 100, 0.9), (3, 3, 0.5), (5, 100, 0.99), (8, 20, 0.9)):
    C_w = rng_w.random((S, S)) * rng_w.random((S, 1))
    C_w /= C_w.sum(1, keepdims=True) / rng_w.uniform(0.5, 1.0, (S, 1))  # non-negative rows, each summing to 0.5..1
    X_w, I_w = g_w * C_w, np.eye(S)
    M_w = window_matrix(X_w, T_w)
    N_w = sum(np.linalg.matrix_power(X_w, j) for j in range(1, T_w + 1))
    np.testing.assert_allclose(M_w, (T_w * I_w - N_w) @ np.linalg.inv(I_w - X_w), rtol=1e-9, atol=1e-9)  # the identity
    assert N_w.sum(1).max() <= sum(g_w ** j for j in range(1, T_w + 1)) + 1e-9 < T_w  # rows of N: at most γ + ... + γ^T < T
    assert np.linalg.svd(M_w, compute_uv=False).min() > 1e-6  # invertible: M d = 0 only at d = 0
    d_w = rng_w.normal(size=S)
    np.testing.assert_allclose(np.linalg.solve(M_w, M_w @ d_w), d_w, rtol=1e-6, atol=1e-9)

# %% [markdown]
# With $\rho = \min(\bar\rho, \pi/\mu)$ the condition, in each state, is
#
# $$\sum_u \mu(u)\min(\bar\rho, \tfrac{\pi(u)}{\mu(u)})
# \,\delta(u) = \sum_u \min(\bar\rho\,\mu(u), \pi(u))\,\delta(u) = 0.$$
#
# Here $\delta(u)$ is the mean TD error of a step that takes action $u$. Up to a positive factor,
# the sum is the expected TD error under the policy
# $\pi_{\bar\rho}(u) \propto \min(\bar\rho\,\mu(u), \pi(u))$. A policy's expected TD error is 0 in
# every state only at that policy's own value. So V-trace learns $V^{\pi_{\bar\rho}}$.
#
# <details><summary>Details: IMPALA's Theorem 1, and the paper's ρ̄ (optional)</summary>
#
# IMPALA's Theorem 1 states the general result. Assume $\bar c \le \bar\rho$, and that
# $E_\mu[\rho_t]$ stays above a positive constant in every state. Then the V-trace operator is a
# contraction, and its unique fixed point is $V^{\pi_{\bar\rho}}$. This notebook does not prove
# that the operator contracts, which is the hard part. It only shows where the fixed point lies.
# The paper's experiments use $\bar\rho = 1$, so $\pi_{\bar\rho} \propto \min(\mu, \pi)$.
#
# </details>
#
# So V-trace learns $V^\pi$ when $\pi_{\bar\rho} = \pi$. In each state, that happens in one of two
# ways, and different states may take different ways:
#
# * No weight is clipped, because $\bar\rho \ge \max_u \pi(u)/\mu(u)$. Then
#   $\min(\bar\rho\,\mu, \pi) = \pi$.
# * Every action of $\pi$ is clipped alike: $\pi/\mu$ is the same constant $k$ wherever $\pi > 0$,
#   and $\bar\rho < k$. Then $\min(\bar\rho\,\mu, \pi) = \bar\rho\,\mu = (\bar\rho/k)\,\pi$ wherever
#   $\pi > 0$. An example is on-policy ($\mu = \pi$) with $\bar\rho < 1$. Every weight is clipped
#   to $\bar\rho$, and $\min(\bar\rho\,\pi, \pi) = \bar\rho\,\pi$ normalises back to $\pi$.
#
# Clipping some actions more than others can move the fixed point. In this section's example with
# $\bar\rho = 1$, action 0's weight is clipped from 4 to 1, and action 1's stays at 1/4. The one
# state returns to itself, so the value of any policy $\nu$ is $V^\nu = E_\nu[r] / (1 - \gamma)$:
#
# | | action 0 | action 1 | value $E_\nu[r]/(1-\gamma)$ |
# | --- | --- | --- | --- |
# | π | 0.8 | 0.2 | $V^\pi = 0.8/0.1 = 8$ |
# | weights $\min(\bar\rho\,\mu, \pi)$, $\bar\rho = 1$ | 0.2 | 0.2 | |
# | $\pi_{\bar\rho}$, the weights normalised | 0.5 | 0.5 | $V^{\pi_{\bar\rho}} = 0.5/0.1 = 5$ |
#
# So the fixed point moves from 8 to 5.
#
# <details><summary>Details: uneven clipping need not move the value (optional)</summary>
#
# Where every action has the same $Q^\pi$, each action's mean TD error at $V^\pi$ is 0, so any
# weights average them to 0. Then $V^{\pi_{\bar\rho}} = V^\pi$, although $\pi_{\bar\rho} \ne \pi$.
#
# </details>
#
# The cells below check, on μ's rollouts, that the mean of `vs` − V is 0 at the fixed point and
# points towards it elsewhere.
#
# <details><summary>Details: why the PyTorch path here (optional)</summary>
#
# The cells call `rl.vtrace` with `backend="torch"`. This section is about the algorithm, and the
# interpreter would take seconds per call.
#
# </details>

# %%
g1, r_a = 0.9, np.array([1.0, 0.0])
mu, pi = np.array([0.2, 0.8]), np.array([0.8, 0.2])
value_of = lambda nu: float(nu @ r_a) / (1 - g1)  # noqa: E731


def pi_clipped(rho_bar):
    w = np.minimum(rho_bar * mu, pi)
    return w / w.sum()


assert np.allclose(pi / mu, [4, 0.25]) and np.allclose(np.minimum(1.0, pi / mu), [1, 0.25])  # the example's table
assert np.isclose(mu @ np.minimum(1.0, pi / mu), 0.2 * 1 + 0.8 / 4) and np.isclose(g1 * 0.4, 0.36)  # E_mu[c] = 0.4
assert np.allclose(np.minimum(1.0 * mu, pi), [0.2, 0.2]) and np.allclose(pi_clipped(1.0), [0.5, 0.5])  # rho_bar = 1
r_same = np.array([1.0, 1.0])  # every action has the same Q^pi: pi_rho_bar != pi, yet the same value
assert not np.allclose(pi_clipped(1.0), pi) and np.isclose(float(pi_clipped(1.0) @ r_same), float(pi @ r_same))

# %% [markdown]
# The cell below draws 16,384 of μ's rollouts of 100 steps: the folded measurement at the end of
# this section needs that many. Then it defines the correction `vs` − V for a critic whose value
# is V at every step, and its mean:

# %%
actions = rng.random((16384, 100)) < mu[1]  # μ's actions: True is action 1
r_mu = torch.tensor(r_a[actions.astype(int)], dtype=torch.float32, device=DEVICE)  # float32, as in training
log_rhos_mu = torch.tensor(np.log(pi / mu)[actions.astype(int)], dtype=torch.float32, device=DEVICE)


def corrections(V, rho_bar):
    """vs − V at every step of every row, when the critic says V everywhere (one state: V' = V too)."""
    v = torch.full_like(r_mu, V)
    vs = rl.vtrace(log_rhos_mu, r_mu, v, next_values=v, gamma=g1, rho_bar=rho_bar, backend="torch").vs
    return vs - v


def mean_correction(V, rho_bar):
    """The mean of vs − V over the whole batch."""
    return float(corrections(V, rho_bar).mean())

# %% [markdown]
# For $\bar\rho = 1$ and $\bar\rho = 4$, the cell prints where the correction vanishes, and its
# value at $V^\pi$:

# %%
print(f"V^pi = {value_of(pi):.2f}, V^mu = {value_of(mu):.2f}")
for rho_bar in (1.0, 4.0):
    target = value_of(pi_clipped(rho_bar))
    at_target, at_v_pi = mean_correction(target, rho_bar), mean_correction(value_of(pi), rho_bar)
    print(f"rho_bar = {rho_bar}: V^pi_rho_bar = {target:.2f}; mean(vs - V) there {at_target:+.4f}, "
          f"at V^pi {at_v_pi:+.4f}")
    assert abs(at_target) < 0.03  # the fixed point
    if rho_bar == 1.0:
        assert target < value_of(pi) - 2 and at_v_pi < -0.1  # V^pi is not it: vs pulls the critic below
        assert (round(value_of(pi), 9), round(target, 9)) == (8.0, 5.0)  # "moves from V^pi = 8 to 5"
    else:
        assert abs(target - value_of(pi)) < 1e-12  # rho_bar >= max pi/mu: nothing clipped, V^pi
w_on = np.minimum(0.5 * pi, pi)  # on-policy (mu = pi), rho_bar = 0.5: every weight clipped to 0.5
assert np.allclose(w_on / w_on.sum(), pi)  # ... and still pi_rho_bar = pi: the fixed point is V^pi

# %% [markdown]
# At $V^\pi$, with $\bar\rho = 1$, the correction is not 0. Its mean, in three forms:
#
# | the mean at $V^\pi$ of | value |
# | --- | --- |
# | the one-step term, $d = E_\mu[\rho_t\delta_t]$ | −0.12 |
# | all terms, $d\,/\,(1 - 0.36)$ | −0.1875 |
# | `vs` − V over the batch, as the cell above prints it | −0.1865 |
#
# The batch's mean is −0.1865, 0.001 smaller in size than −0.1875: the window of 100 steps cuts
# the series short (see the fold below). The cell below computes all three, and checks that the
# window's last step, a reset, carries the one-step term alone:

# %%
v_pi, T_mu = value_of(pi), r_mu.shape[1]
one_step = float(np.minimum(mu, pi) @ (r_a + g1 * v_pi - v_pi))  # E_mu[rho delta] at V^pi, rho_bar = 1
trace = g1 * float(mu @ np.minimum(1.0, pi / mu))  # gamma E_mu[c], c_bar = 1
all_terms = one_step / (1 - trace)
corr_v_pi = corrections(v_pi, 1.0)  # vs - V at every step, at V^pi
print(f"at V^pi: one step {one_step:+.4f}, gamma E[c] {trace:.2f}, all terms {all_terms:+.4f}; "
      f"the batch's mean {float(corr_v_pi.mean()):+.4f}")
assert abs(one_step + 0.12) < 1e-12 and abs(trace - 0.36) < 1e-12 and abs(all_terms + 0.1875) < 1e-12
assert f"{float(corr_v_pi.mean()):+.4f}" == "-0.1865"  # "the cell above prints −0.1865" (its at_v_pi, same format)
assert round(float(corr_v_pi.mean()) - all_terms, 3) == 0.001  # "0.001 smaller in size than −0.1875"
rho_mu = torch.clamp(log_rhos_mu.exp(), max=1.0)  # the clipped rho of each step, rho_bar = 1
torch.testing.assert_close(corr_v_pi[:, -1], (rho_mu * (r_mu + g1 * v_pi - v_pi))[:, -1])  # last step: rho delta

# %% [markdown]
# <details><summary>Details: the window of 100 steps, measured (optional)</summary>
#
# Section 1's average over a window's positions gives the window's own mean exactly: −0.18645.
# It is smaller in size than −0.1875, by about 0.001, because the window's last steps have fewer
# later terms. The batch's −0.1865 measures it.
# The rows are independent rollouts, so the spread of their means gives the measurement's standard
# error. It is about 0.00014 with 16,384 rows. The window's value and the all-terms value then lie more
# than seven standard errors apart. The folded cell below shows that the measurement agrees with the
# window's value, not with the all-terms one.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the window of 100 steps, in the fold above (CI runs them; skip when reading)
in_window = one_step * np.mean((1 - trace ** (T_mu - np.arange(T_mu))) / (1 - trace))  # step t sees T - t terms
assert abs(in_window - one_step * window_matrix(np.array([[trace]]), T_mu)[0, 0] / T_mu) < 1e-12  # section 1's average
row_means = corr_v_pi.mean(1)  # one mean per row
measured, se = float(row_means.mean()), float(row_means.std()) / len(row_means) ** 0.5
print(f"all terms {all_terms:+.4f}, in a window of {T_mu} steps {in_window:+.5f}; "
      f"measured {measured:+.4f}, standard error {se:.5f}")
assert f"{in_window:+.5f}" == "-0.18645"  # "the window's own mean exactly: −0.18645", as printed
assert abs((in_window - all_terms) - 0.001) < 0.0001  # "smaller in size ..., by about 0.001"
assert abs(se - 0.00014) < 0.00002  # "about 0.00014"
assert abs(in_window - all_terms) > 7 * se  # "more than seven standard errors apart"
assert abs(measured - in_window) < 2 * se < abs(measured - all_terms) / 3  # "agrees with the window's value"

# %% [markdown]
# ## Exercises
#
# Checked exercises work as in [notebook 00](00_associative_scan.ipynb#Exercises).
#
# **`vtrace_fixed_point`**, in NumPy. Section 1's condition holds state by state, so it applies to
# any finite MDP.
#
# **You write:** `vtrace_fixed_point(P_trans, R, pi, mu, gamma, rho_bar)`, in NumPy on the MDP's
# tables.
#
# **It returns:** `V`, shape (S,), the value that V-trace's critic converges to when it learns
# from μ's data: the $V$ at which $E_\mu[\rho_t\delta_t \mid s_t = s] = 0$ in every state.
#
# **Inputs:** tables, float64, with no time axis: `P_trans[s, u, s2]`, (S, A, S), the probability of `s2`
# after action `u` in state `s`; `R`, (S, A), the mean reward; `pi`, `mu`, (S, A), rows summing to 1,
# `mu > 0`, `pi` may be 0; `gamma < 1`; `rho_bar > 0` (`float("inf")` for no clip). Every input is
# finite, and `mu > 0` keeps $\pi/\mu$ finite: nothing needs a select.
#
# Then, for self-study (not graded): as $\bar\rho$ grows, where does `V` go? And as
# $\bar\rho \to 0$? Mind the actions where $\pi = 0$.
#
# (How it is checked: the [appendix](#Appendix:-details-of-the-exercises).)
#
# <details><summary>Hint 1: where to start</summary>
#
# Section 1 wrote the condition for one state as a sum over actions with weights
# $\min(\bar\rho\,\mu(u), \pi(u))$. Write the same sum in state $s$, with $V(s')$ for the next
# state's value. What equation in $V$ do the S conditions make together?
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Each action's weight in state $s$ is $\mu(u|s)\min(\bar\rho, \pi/\mu) = \min(\bar\rho\,\mu, \pi)$.
#   The second form needs no division.
# * The condition is a weighted sum of TD errors. Dividing by the weights' sum in each state does
#   not change where it is 0, and it makes the weights a policy $\nu$.
# * The condition is then the Bellman equation of $\nu$: $V(s) = \sum_u \nu(u|s)\big(R(s,u) + \gamma\sum_{s'} P(s,u,s')V(s')\big)$.
# * That is a linear system in $V$: one call to `np.linalg.solve`.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Section 1's one state first: $\pi = (0.8, 0.2)$, $\mu = (0.2, 0.8)$, rewards $(1, 0)$,
# $\gamma = 0.9$, $\bar\rho = 1$. The weights $\min(\bar\rho\,\mu, \pi)$ are $(0.2, 0.2)$, so
# $\nu = (0.5, 0.5)$ and $V = 0.5 / (1 - 0.9) = 5$. Then two states, $\gamma = 0.5$,
# $\bar\rho = 1$. In state 0, action 0 pays 1 and moves to state 1, action 1 pays 0 and stays;
# $\mu = (0.25, 0.75)$ and $\pi = (0.75, 0.25)$, so $\nu = (0.5, 0.5)$. In state 1 both actions pay
# 2 and go back to state 0. So $V_1 = 2 + 0.5\,V_0$ and $V_0 = 0.5\,(1 + 0.5\,V_1) + 0.5 \cdot 0.5\,V_0$:
# $V = (1.6, 2.8)$.
#
# ```python
# print(vtrace_fixed_point(np.ones((1, 2, 1)), np.array([[1.0, 0.0]]), np.array([[0.8, 0.2]]),
#                          np.array([[0.2, 0.8]]), 0.9, 1.0))  # must print [5.]
# P_trans2 = np.zeros((2, 2, 2)); P_trans2[0, 0, 1] = P_trans2[0, 1, 0] = P_trans2[1, :, 0] = 1.0  # noqa: E702
# R2 = np.array([[1.0, 0.0], [2.0, 2.0]])
# pi2, mu2 = np.array([[0.75, 0.25], [0.5, 0.5]]), np.array([[0.25, 0.75], [0.5, 0.5]])
# print(vtrace_fixed_point(P_trans2, R2, pi2, mu2, 0.5, 1.0))  # must print [1.6 2.8]
# ```
#
# Run the checker before you open Hint 4.
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# w = ___  # ___: each action's weight, mu times the clipped ratio, with no division
# nu = w / ___  # ___: normalised in each state (which axis?)
# P_nu = np.einsum("sa,sat->st", nu, P_trans)  # the chain under nu
# r_nu = ___  # ___: the mean reward under nu, one per state
# return np.linalg.solve(___, r_nu)  # ___: V = r_nu + gamma P_nu V, rearranged
# ```
#
# </details>

# %%
# YOUR CODE: replace the next line by your def vtrace_fixed_point(P_trans, R, pi, mu, gamma, rho_bar)
vtrace_fixed_point = None

# %%
exercises.attempt("vtrace_fixed_point", vtrace_fixed_point)

# %% [markdown]
# ## Appendix: which policy-gradient advantage
#
# This appendix is optional, and it has nothing to do with the fixed point above. It belongs to
# notebook 04's second output, `pg_advantages`. The package computes it as rlax does, not as the
# IMPALA paper does, so that λ is one knob for both outputs. The fold derives how the two
# advantages differ, and the cells check it.
#
# <details><summary>Details: the paper's advantage against rlax's, and why the package follows rlax (optional)</summary>
#
# This fold keeps the paper's letters: its step $s$ is this notebook's $t$, its state $x_s$ our
# $s_t$, and its $V(x_s)$ our $V_t$. The IMPALA paper weighs $\nabla\log\pi(u_s|x_s)$ by
# $\rho_s\big(r_s + \gamma v_{s+1} - V(x_s)\big)$, with $v_{s+1}$ the V-trace target at $s+1$ and
# no λ in it. It clips this $\rho_s$ with the same $\bar\rho$; like rlax, the package gives it
# its own $\bar\rho_{pg}$.
#
# rlax (`vtrace_td_error_and_advantage`) mixes the next target with the critic's next value, by
# the same λ that cuts the traces: $r_t + \gamma_t[\lambda_t v_{t+1} + (1-\lambda_t)V'_t] - V_t$
# inside an episode. At an episode's end, both formulas read $V'_t$. So:
#
# * at **λ = 1** the two are the same formula;
# * at **λ < 1**, from the same `vs`, the package's advantage differs from the paper's by
#   $\rho^{pg}_t\gamma_t(1-\lambda_t)(V'_t - v_{t+1})$ at every step that does not end an episode.
#
# **Why the package follows rlax.** On-policy, `pg_advantages` $=$ `vs` $- V$, and where
# $V'_t = V_{t+1}$ that is GAE(λ) (notebook 04, section 4): the advantage that matches the critic's
# λ-return target, with notebook 03's bias–variance trade-off.
#
# The paper's formula at λ < 1 pairs a full step with the λ-return that follows it. At λ = 0,
# on-policy, it is the two-step advantage $r_t + \gamma r_{t+1} + \gamma^2 V'_{t+1} - V_t$, while
# the critic's target is one step.
#
# </details>
#
# The rollout, as in notebook 04, section 4: clipped ratios, terminations, truncations and a
# per-step γ. As in section 1, the cells call the PyTorch path.

# %%
gen = torch.Generator().manual_seed(4)
randn = lambda *shape: torch.randn(*shape, generator=gen, dtype=torch.float64).to(DEVICE)  # noqa: E731
rand = lambda *shape: torch.rand(*shape, generator=gen, dtype=torch.float64).to(DEVICE)  # noqa: E731
B, T = 4, 50
lr_ = 0.5 * randn(B, T)  # log π/μ: ratios from ~0.2 to ~5
r, v = randn(B, T), randn(B, T)
term = rand(B, T) < 0.1
trunc = (rand(B, T) < 0.1) & ~term
nv = torch.where(trunc, randn(B, T), torch.cat([v[:, 1:], randn(B, 1)], 1))  # V(s_(t+1)): values[t+1] but at a truncation
gamma = rand(B, T) * 0.1 + 0.9  # a per-step discount
kw = dict(rho_bar=1.2, c_bar=0.9, pg_rho_bar=1.5)

# %% [markdown]
# The paper's advantage, with `vs` from the same call:

# %%
def paper_pg(vs, log_rhos, r, v, nv, gamma, term, trunc, pg_rho_bar):
    """IMPALA's advantage ρ_pg (r_t + γ v_{t+1} − V_t), v_{t+1} from `vs` (V'_t at an episode end)."""
    done = term | trunc
    done[:, -1] = True
    vs_next = torch.where(done, nv, torch.roll(vs, -1, dims=1))
    rho_pg = torch.clamp(log_rhos.exp(), max=pg_rho_bar)
    return rho_pg * (r + gamma * torch.where(term, 0.0, vs_next) - v), rho_pg, vs_next, done

# %% [markdown]
# At λ = 1 and λ = 0.5, the package's advantage minus the paper's, against the predicted gap:

# %% jupyter={"outputs_hidden": true}
zero = torch.zeros_like(r)
for lam_ in (1.0, 0.5):
    vs_l, pg_l = rl.vtrace(lr_, r, v, gamma=gamma, lambda_=lam_, terminated=term, truncated=trunc, next_values=nv,
                           backend="torch", **kw)
    paper, rho_pg, vs_next, done = paper_pg(vs_l, lr_, r, v, nv, gamma, term, trunc, kw["pg_rho_bar"])
    gap = torch.where(done, 0.0, rho_pg * gamma * (1 - lam_) * (nv - vs_next))
    torch.testing.assert_close(pg_l - paper, gap, rtol=1e-5, atol=1e-5)
    print(f"λ = {lam_}: largest |package − paper| = {(pg_l - paper).abs().max().item():.3f}")
    if lam_ == 1.0:
        torch.testing.assert_close(pg_l, paper, rtol=1e-5, atol=1e-5)  # the same advantage
    else:
        assert gap.abs().max() > 0.1  # a real difference, exactly the (1 − λ) term

# %% [markdown]
# On-policy at λ = 0 (the fold's last paragraph): one step against two.

# %% jupyter={"outputs_hidden": true}
on = rl.vtrace(zero, r, v, gamma=0.9, lambda_=0.0, next_values=nv, backend="torch")  # no episode ends but the window's
one_step_adv = r + 0.9 * nv - v
two_step_adv = torch.cat([r[:, :-1] + 0.9 * r[:, 1:] + 0.81 * nv[:, 1:] - v[:, :-1], one_step_adv[:, -1:]], 1)
torch.testing.assert_close(on.pg_advantages, one_step_adv)
no_end = torch.zeros_like(term)
torch.testing.assert_close(paper_pg(on.vs, zero, r, v, nv, 0.9, no_end, no_end, 1.0)[0], two_step_adv)
print("λ = 0 on-policy: the package's advantage is one step, the paper's two")

# %% [markdown]
# ## Appendix: the window's weights, and why M is invertible
#
# This appendix is optional. It derives section 1's weights $(T-k)/T$ for training's windows, and it
# proves that their matrix $M$ is invertible.
#
# <details><summary>Details: the window's weights, and the proof (optional)</summary>
#
# A window's last step [resets](GLOSSARY.md#reset), so its $b$ is
# [$b_t$ at a reset](GLOSSARY.md#cut-step): $v_{T-1} = V_{T-1} + \rho_{T-1}\delta_{T-1}$
# ([notebook 04, section 2](04_vtrace.ipynb#2.-Prologue,-scan,-epilogue)). So a position $j$ steps
# before the end gets only the first $j + 1$ terms. A window of $T = 3$ steps:
#
# | position | steps before the end | term 0, mean $d$ | term 1, mean $\gamma C d$ | term 2, mean $(\gamma C)^2 d$ |
# | --- | --- | --- | --- | --- |
# | 0 | 2 | yes | yes | yes |
# | 1 | 1 | yes | yes | no |
# | 2, the last | 0 | yes | no | no |
# | positions it reaches | | 3 | 2 | 1 |
#
# Training stops where each state's correction, summed over all its visits, is 0. From the
# rollout to the weights, in four steps:
#
# 1. **Each visit adds its correction.** Training moves $V(s)$ by the correction of every visit to
#    $s$, at whatever position of a window the visit falls.
# 2. **The position decides which terms a visit gets.** A visit at position $j$ gets terms 0 to
#    $T-1-j$: the table's row $j$.
# 3. **A term's mean does not depend on the position.** Given the state, term $k$'s mean is
#    $(\gamma C)^k d$ wherever it appears (section 1's fold on the series term by term, with the Markov property).
# 4. **A rollout that starts from μ's stationary distribution $d_\mu$ puts each state at every position equally often.**
#    Every position of a window then holds state $s$ with the same probability, $d_\mu(s)$.
#    So summing over $s$'s visits is, up to a factor, averaging over the $T$ positions. Term $k$
#    reaches $T-k$ of them (its column of the table), so the average counts it with the weight $(T-k)/T$:
#
# $$\frac{1}{T}\sum_{k=0}^{T-1} (T-k)\,(\gamma C)^k\, d,$$
#
# which for $T = 3$ is $\tfrac13\big(3d + 2\gamma C d + (\gamma C)^2 d\big)$.
#
# **Why $M$ is invertible**, in four steps. Write $X = \gamma C$, so $M = \sum_{k<T}(T-k)X^k$.
#
# 1. **Count by row, not by column.** Write each term by its matrix: term $k$ is $X^k d$. In the
#    table above, the last position receives term 0 alone, so its row adds up to $I$.
#    The position before it receives terms 0 and 1, which add up to $I + X$. The first position
#    receives all three: $I + X + X^2$. The three rows add up to $3I + 2X + X^2$, the same sum as
#    the columns. For any
#    $T$, the rows receive $1, 2, \dots, T$ terms, and the row with $j$ terms adds up to
#    $I + X + \dots + X^{j-1}$. So
#    $\sum_{k<T}(T-k)X^k = \sum_{j=1}^{T}(I + X + \dots + X^{j-1})$.
# 2. **Sum each row as a geometric series.** $(I + X + \dots + X^{j-1})(I - X) = I - X^j$, since
#    the middle terms cancel. $I - X$ is invertible, as section 1 says, so
#    $I + X + \dots + X^{j-1} = (I - X^j)(I - X)^{-1}$.
# 3. **Add the rows.** $\sum_{j=1}^{T}(I - X^j)(I - X)^{-1} = (T\,I - N)(I - X)^{-1}$, with
#    $N = \sum_{j=1}^{T} X^j$. So the matrix is invertible if $T\,I - N$ is.
# 4. **$T\,I - N$ is invertible.** The entries of $C$ are non-negative and its rows sum to at most 1,
#    so every row of $X^j$ sums to at most $\gamma^j$, and every row of $N$ to at most
#    $\gamma + \dots + \gamma^T$, which is less than $T$. Suppose $(T\,I - N)x = 0$. Then $T\,x = N x$.
#    Let $x_s$ be the entry of $x$ largest in size. Row $s$ of $Nx$ is a sum of entries of $x$ with
#    non-negative weights that add up to less than $T$, so $T|x_s| = |(Nx)_s| < T|x_s|$ unless
#    $x_s = 0$. So $x_s = 0$, and then every entry of $x$ is 0.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the appendix's table and proof steps, on the last random matrix of section 1's checks (CI runs them; skip when reading)
# The T = 3 picture: position t receives term k where k <= T - 1 - t, so term k reaches T - k positions
receives = [[k <= 2 - t for k in range(3)] for t in range(3)]
assert receives == [[True, True, True], [True, True, False], [True, False, False]]  # the table's rows
assert [sum(row[k] for row in receives) for k in range(3)] == [3, 2, 1]  # "3, 2 and 1 of them"
per_position = [sum(np.linalg.matrix_power(X_w, k) for k in range(3) if receives[t][k]) for t in range(3)]
I_3 = np.eye(len(X_w))
np.testing.assert_allclose(per_position[2], I_3)  # step 1: "the last position ... adds up to I"
np.testing.assert_allclose(per_position[1], I_3 + X_w)  # "I + X"
np.testing.assert_allclose(per_position[0], I_3 + X_w + X_w @ X_w)  # "I + X + X^2"
np.testing.assert_allclose(sum(per_position), 3 * I_3 + 2 * X_w + X_w @ X_w, rtol=1e-12)  # "3I + 2X + X^2"
np.testing.assert_allclose(sum(per_position) / 3, window_matrix(X_w, 3) / 3, rtol=1e-12)  # the average, T = 3
# ... and on one window of rl.vtrace itself: vs - V at position t is the sum of the terms it receives
g_3, ratio_3 = 0.9, np.exp(rng_w.normal(size=3))
r_3, v_3, boot_3 = rng_w.normal(size=3), rng_w.normal(size=3), rng_w.normal()
nv_3 = np.append(v_3[1:], boot_3)  # V'_t = V_(t+1) inside the window, a bootstrap value after it
rho_3, c_3 = np.minimum(1.0, ratio_3), np.minimum(1.0, ratio_3)
rho_delta_3 = rho_3 * (r_3 + g_3 * nv_3 - v_3)
term_3 = lambda t, k: g_3 ** k * np.prod(c_3[t:t + k]) * rho_delta_3[t + k]  # noqa: E731 -- term k at position t
vs_3 = rl.vtrace(*(torch.tensor(x[None]) for x in (np.log(ratio_3), r_3, v_3)), next_values=torch.tensor(nv_3[None]),
                 gamma=g_3, rho_bar=1.0, c_bar=1.0, backend="torch").vs[0].numpy()
expected_3 = [sum(term_3(t, k) for k in range(3) if receives[t][k]) for t in range(3)]
np.testing.assert_allclose(vs_3 - v_3, expected_3, rtol=1e-9, atol=1e-12)  # the table, row by row

# %% [markdown]
# ## Appendix: details of the exercises
#
# **How `vtrace_fixed_point` is checked.** The checker holds no answer. It computes the mean
# correction at your `V`: only one $V$ makes it vanish everywhere. Where it does not, the message
# gives its sign, the way a one-step update would move `V`.

# %% [markdown]
# ## What you now know
#
# * V-trace's critic stops where the mean correction $E_\mu[\rho_t\delta_t]$ vanishes in every
#   state.
# * That is the value $V^{\pi_{\bar\rho}}$ of the policy $\pi_{\bar\rho} \propto
#   \min(\bar\rho\,\mu, \pi)$, found by one linear solve in a finite MDP.
# * $\pi_{\bar\rho} = \pi$ exactly when, in each state, no weight is clipped or all are clipped
#   alike. Then the fixed point is $V^\pi$. Clipping some actions more than others can move it.
# * The traces $c_t$ change how far a correction travels, not where it stops.
# * From the appendix: `pg_advantages` follow rlax. They are the IMPALA paper's advantage at λ = 1,
#   and differ from it by $\rho^{pg}_t\gamma_t(1-\lambda_t)(V'_t - v_{t+1})$ at λ < 1.
