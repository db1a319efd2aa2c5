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
# # 01b — Your own prologues, and the backward
#
# > **In short**
# >
# > * A small test kernel, `exercises.scan_hook`, runs a Triton prologue of yours inside a chunked scan; 03, 04 and 06 use it too.
# > * The return's gradient is a second scan, run forwards in time.
# > * You write that backward scan, and the return with its gradient in a `torch.autograd.Function`.
#
# * **Time:** 1.5–2 h, the reading and two checked exercises (no open questions).
# * **Needs:** notebook 01 (its episode-end table) and 00c (the harness runs the same scan as your `reset_scan`), and
#   writing a `torch.autograd.Function`. No GPU.
# * **Minimum path:** all of it. Section 1's harness runs the Triton exercises of notebooks 03–07,
#   and 02's appendix compares the package's hooks with it.
#
# Notebook 01 wrote the return $G_t = b_t + a_t G_{t+1}$ as a prologue, a scan and an epilogue. Here
# you write such prologues yourself, in Triton, and the scan that gives the return's gradient.

# %%
import inspect
import os

import numpy as np
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # Triton kernels on the CPU

import triton
import triton.language as tl

import rltriton_lite as rl
from rltriton_lite import exercises

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# the Triton kernels: compiled on a GPU, in the interpreter on a CPU (backend="auto" takes the PyTorch path on a CPU)
KERNEL = "triton"

# %% [markdown]
# ## 1. The harness for Triton prologues
#
# The hook exercises here and in notebooks 03–07 hand your `@triton.jit` function to a small
# [**harness**](GLOSSARY.md#harness), described here.
#
# `exercises.scan_hook(prologue, inputs, params, chunk=64, reverse=True, epilogue=None)` runs a
# prologue inside a chunked scan with reset flags, the same scan as your `reset_scan` of 00c. It runs one
# program per row and returns the scanned `y`. The [**hooks**](GLOSSARY.md#hook) you write take their
# arguments in this order:
#
# * `prologue(X, P, offs, t, m, T) -> (a, b, reset)`, with `reset` a bool per step.
# * `epilogue(X, P, offs, t, m, T, y, y_in) -> out`, stored in place of `y` (reverse scans only).
#   `y` is the scanned value at step $t$, and [`y_in`](GLOSSARY.md#y-in) the value that entered the
#   step: $y_{t+1}$ in a reverse scan.
#
# | argument | what it is |
# | --- | --- |
# | `X` | the tuple of your `inputs`, as pointers: `tl.load(X[0] + offs, mask=m, other=0.0)` loads a chunk of the first |
# | `P` | the tuple of your `params`: `P[0]` is γ if you pass `(gamma,)` |
# | `offs` | the flat offsets of the chunk's steps in each (B, T) input, `row * T + t` |
# | `t` | each step's time index |
# | `m` | the in-bounds mask |
# | `T` | the row length |
#
# Three rules, all visible in the kernel printed below:
#
# * `t` is the global time index, from 0 to T-1, not the index inside the chunk.
# * A **lane** is one position of the chunk's block, one step. Lanes past the end
#   (`m` false) become the **identity** (1, 0), with the reset flag off.
# * The scan starts from $y_T = 0$ ($y_{-1} = 0$ with `reverse=False`).
#
# Reset flags, bootstraps and NaNs follow the [conventions card](GLOSSARY.md#conventions-for-every-exercise).

# %%
print(inspect.getsource(getattr(exercises._scan_hook_kernel, "fn", exercises._scan_hook_kernel)))

# %% [markdown]
# A worked prologue: the plain discounted sum $y_t = r_t + \gamma y_{t+1}$, with no episode ends.
# Its triple is $a_t = \gamma$, $b_t = r_t$, and a reset only at the window's last step. The
# harness also takes a scalar multiplier, such as a bare `P[0]`, and broadcasts it over the chunk.
# Through `scan_hook`, `discounted_sum` matches `rl.linear_scan` on the same pairs:

# %%
@triton.jit
def discounted_sum(X, P, offs, t, m, T):
    r = tl.load(X[0] + offs, mask=m, other=0.0)  # X[0] is the rewards
    return tl.zeros_like(r) + P[0], r, t == T - 1  # a_t = gamma (P[0]), b_t = r_t; the window's last step resets


r_w = torch.randn(2, 150, generator=torch.Generator().manual_seed(3)).to(DEVICE)  # 150 steps: 3 chunks
y_w = exercises.scan_hook(discounted_sum, (r_w,), (0.9,))
torch.testing.assert_close(y_w, rl.linear_scan(torch.full_like(r_w, 0.9), r_w, backend=KERNEL), rtol=1e-5, atol=1e-5)
print("discounted_sum through scan_hook == rl.linear_scan")


# %% jupyter={"source_hidden": true}
# Checks: a scalar multiplier broadcasts (CI runs them; skip when reading)
@triton.jit
def _discounted_sum_scalar(X, P, offs, t, m, T):
    return P[0], tl.load(X[0] + offs, mask=m, other=0.0), t == T - 1  # a_t: the bare scalar P[0]


torch.testing.assert_close(exercises.scan_hook(_discounted_sum_scalar, (r_w,), (0.9,)), y_w, rtol=1e-5, atol=1e-5)

# %% [markdown]
# ## 2. The backward
#
# The scan $y_t = b_t + a_t y_{t+1}$ runs backwards in time. Autograd hands its backward pass
# $dy_t$, the gradient that reaches $y_t$ directly from the loss $L$. But $y_t$ also reaches $L$
# through $y_{t-1} = b_{t-1} + a_{t-1} y_t$. The total gradient $g_t = \partial L / \partial b_t$
# adds that second path:
#
# $$g_t = dy_t + a_{t-1}\, g_{t-1}, \qquad g_0 = dy_0 .$$
#
# $g_t$ is also the total $\partial L / \partial y_t$, by both paths, which is what you may expect:
# $y_t = b_t + a_t y_{t+1}$ gives $\partial y_t / \partial b_t = 1$, so all that reaches $y_t$ reaches $b_t$.
#
# This is the [**transposed scan**](GLOSSARY.md#transposed-scan) of notebook 00, section 8: a scan
# run *forwards* in time. Step $t$ takes the multiplier of the step before, so where step $t-1$
# reset, nothing carries into step $t$. Step 0 resets, with nothing before it.
# For the return, 01's section 2 set $a_t = 0$ wherever done$_t$, truncations included, so
# $g_t = dG_t + \gamma_{t-1}(1-\text{done}_{t-1})\,g_{t-1}$: the reset moves one step later. The exercise
# `returns_autograd` has terminations only, and there done$_{t-1}$ is term$_{t-1}$.
#
# | the forward stored the reset as | the backward reads |
# | --- | --- |
# | $a = 0$ in the multiplier (`transposed_scan`) | the step before's multiplier $a_{t-1}$: a 0 there stops $g_{t-1}$ |
# | a flag beside $\gamma$ (`returns_autograd`) | the step before's flag term$_{t-1}$, and resets there |
#
# A 0 stored in $a_{t-1}$ already cuts the carry into step $t$. A reset kept as a flag must be
# moved to step $t$.
#
# The other gradient is one product per step: $\partial L / \partial a_t = g_t\, y_{t+1}$.
#
# By hand: $a = (0.5, 0.5, 0)$ and $L = \sum_t y_t$, so every $dy_t = 1$. Then $g_0 = 1$,
# $g_1 = 1 + 0.5 \cdot 1 = 1.5$ and $g_2 = 1 + 0.5 \cdot 1.5 = 1.75$. The window's reset $a_2 = 0$
# is never read. Autograd agrees, and a loop that keeps each $y_t$ as its own tensor shows
# $\partial L / \partial y_t = g_t$:

# %%
a_bw = torch.tensor([[0.5, 0.5, 0.0]], dtype=torch.float64)
b_bw = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64, requires_grad=True)
rl.linear_scan(a_bw, b_bw, backend="torch").sum().backward()  # L = sum of y_t: every dy_t = 1
g = [1.0]  # g_0 = dy_0
for t in (1, 2):
    g.append(1.0 + a_bw[0, t - 1].item() * g[-1])  # g_t = dy_t + a_(t-1) g_(t-1), forwards in time
assert g == [1.0, 1.5, 1.75] and b_bw.grad.tolist() == [g]
y_loop = [None, None, b_bw[0, 2].detach()]  # y_2 = b_2: the window's reset
y_loop[1] = b_bw[0, 1].detach() + a_bw[0, 1] * y_loop[2].requires_grad_()  # y_1 = b_1 + a_1 y_2
y_loop[1].retain_grad()
y_loop[0] = b_bw[0, 0].detach() + a_bw[0, 0] * y_loop[1]  # y_0 = b_0 + a_0 y_1
y_loop[0].retain_grad()
sum(y_loop).backward()  # the same L = y_0 + y_1 + y_2
assert [y_t.grad.item() for y_t in y_loop] == g  # "g_t is also the total dL/dy_t"
print("transposed scan == autograd == dL/dy_t:", g)

# %% [markdown]
# So the return's backward reads done$_{t-1}$, truncations included. With a truncation at step 3,
# reading term$_{t-1}$ alone goes wrong at step 4:

# %%
r_g = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]], dtype=torch.float64, requires_grad=True)
term_g = torch.tensor([[False, True, False, False, False, False]])  # a termination at step 1
trunc_g = torch.tensor([[False, False, False, True, False, False]])  # a truncation at step 3
dG = torch.tensor([[0.3, -1.0, 2.0, 0.5, 1.5, -0.7]], dtype=torch.float64)
G_g = rl.discounted_returns(r_g, gamma=0.5, terminated=term_g, truncated=trunc_g,
                            next_values=torch.arange(6.0, dtype=torch.float64)[None], backend="torch")
(G_g * dG).sum().backward()  # L = sum of dG_t G_t: the upstream gradient is dG
done_g = (term_g | trunc_g)[0].tolist()
g_done, g_term = [dG[0, 0].item()], [dG[0, 0].item()]
for t in range(1, 6):
    g_done.append(dG[0, t].item() + 0.5 * (1 - done_g[t - 1]) * g_done[-1])  # done_(t-1): the formula above
    g_term.append(dG[0, t].item() + 0.5 * (1 - term_g[0, t - 1].item()) * g_term[-1])  # term_(t-1) alone
np.testing.assert_allclose(r_g.grad[0].tolist(), g_done, rtol=1e-12)
assert abs(g_term[4] - g_done[4]) > 0.1  # term alone is wrong after the truncation
print(f"g_4: {g_done[4]:.3f} from done_3 (autograd agrees), {g_term[4]:.3f} from term_3 alone")

# %% [markdown]
# ## Exercises
#
# Both are Triton prologues for [section 1's harness](#1.-The-harness-for-Triton-prologues), under the
# [conventions card](GLOSSARY.md#conventions-for-every-exercise). New here: at `offs - 1` a load reads
# step $t-1$'s entry, and the step where a scan starts resets (step 0 in a forward scan). So that a
# missing reset shows up, one checker case of each starts the carry at ∞ (`transposed_scan`) or at
# 100 (`returns_autograd`, both scans) instead of 0. More on the checkers: the
# [appendix](#Appendix:-details-of-the-exercises).

# %% jupyter={"source_hidden": true}
# Checks: the checkers' 100 past the window, and ∞ before it (CI runs them; skip when reading)
said = {name: " ".join(exercises.task(name).split()) for name in ("gae_pairs", "returns_autograd", "transposed_scan")}
assert "starts from y_T = 100" in said["gae_pairs"] and "starts both scans from 100" in said["returns_autograd"]
assert "the checker's scan starts from inf" in said["transposed_scan"]  # "starts the carry at ∞ (`transposed_scan`)"
assert any("before the window: the scan starts from inf" in case[0] for case in exercises.cases("transposed_scan"))
assert exercises.PAST_WINDOW == 100.0  # "or at 100 (`returns_autograd`, both scans) instead of 0"

# %% [markdown]
# ### Triton prologues: the reset flag beside the pair
#
# **`transposed_scan`** (a Triton prologue).
#
# **You write:** `transposed_scan(X, P, offs, t, m, T)`, [section 2](#2.-The-backward)'s transposed
# scan as a prologue for `exercises.scan_hook(transposed_scan, (a, dy), (), reverse=False)`
# ([section 1](#1.-The-harness-for-Triton-prologues) has the arguments).
#
# **It returns:** each step's triple $(a, b, \text{reset})$, whose forward scan is the gradient
# $g_t = dy_t + a_{t-1}\, g_{t-1}$.
#
# **Inputs:** `X[0][t]` $= a_t$ and `X[1][t]` $= dy_t$, (B, T) float32. Read $a_{t-1}$ at `offs - 1`.
#
# <details><summary>Hint 1: where to start</summary>
#
# Section 2 wrote this scan as a loop. Here the shift is an address: step $t$ reads $a$ at step
# $t-1$. Which factor multiplies $g_{t-1}$, the value carried in? Which step has none carried in?
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * $dy_t$ is at `offs`, as in the skeleton below. $a_{t-1}$ is one element back, at `offs - 1`.
# * At $t = 0$, `offs - 1` is the previous row's last step, or before the tensor: mask that load off.
# * Only the step with nothing before it resets.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# One row of three steps, $a = (0.5, 0, 0.5)$ and $dy = (1, 2, 3)$: $g_0 = dy_0 = 1$,
# $g_1 = dy_1 + a_0 g_0 = 2 + 0.5 \cdot 1 = 2.5$ and $g_2 = dy_2 + a_1 g_1 = 3 + 0 \cdot 2.5 = 3$.
# (From $y$: $y_0 = b_0 + 0.5\,b_1$ and $y_1 = b_1$, so $b_1$ enters $L = \sum_t dy_t\,y_t$ with
# weight $0.5 \cdot 1 + 2 = 2.5$.)
#
# ```python
# a3, dy3 = torch.tensor([[0.5, 0.0, 0.5]], device=DEVICE), torch.tensor([[1.0, 2.0, 3.0]], device=DEVICE)
# print(exercises.guarded(exercises.scan_hook, transposed_scan, (a3, dy3), (), reverse=False).tolist())  # must print [[1.0, 2.5, 3.0]]
# ```
#
# Run the checker before you open Hint 4.
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# | step | multiplier | $b_t$ | reset? |
# | --- | --- | --- | --- |
# | $t \ge 1$ | $a_{t-1}$, the step before's | $dy_t$ | no |
# | $t = 0$, where the forward scan starts | — | $dy_0$ | yes: nothing comes before it |
#
# A dash: the reset ignores the multiplier, so any value will do.
#
# ```python
# a_prev = tl.load(X[0] + ___, mask=___, other=1.0)  # a_(t-1): at which offset? where is there none?
# return a_prev, dy, ___  # ___: the reset, a bool: which step has no step before it? (the reset ignores its 1.0)
# ```
#
# </details>
#
# ```python
# @triton.jit
# def transposed_scan(X, P, offs, t, m, T):
#     dy = tl.load(X[1] + offs, mask=m, other=0.0)
#     ...
#     return a_prev, dy, reset
# ```

# %%
# YOUR CODE: replace the next line by your @triton.jit def transposed_scan(X, P, offs, t, m, T)
transposed_scan = None

# %%
exercises.attempt("transposed_scan", transposed_scan)

# %% [markdown]
# **`returns_autograd`** (two Triton prologues and an `autograd.Function`): both scans behind
# PyTorch's autograd, with triples of `transposed_scan`'s shape.
#
# **You write:** `returns_autograd(rewards, terminated, gamma)`, returning `Returns.apply(...)`: a
# `torch.autograd.Function` whose `forward` and `backward` each run `exercises.scan_hook` with a
# prologue of yours.
#
# **It returns:** the returns $G_t$, (B, T), differentiable in `rewards`.
#
# **Inputs:** `rewards` and `terminated`, (B, T); `gamma` a number. No truncation, no bootstrap.
#
# * **`forward`:** the reverse scan $G_t = r_t + \gamma(1 - \text{term}_t)\,G_{t+1}$.
# * **`backward`:** section 2's scan, forwards (`reverse=False`): $g_t = dG_t + \gamma(1 - \text{term}_{t-1})\,g_{t-1}$,
#   returned as `g, None, None`. Its `X` is `(grad, terminated)`: $dG$ is `X[0]` (`transposed_scan` had $dy$
#   at `X[1]`), and $\text{term}_{t-1}$ is at `offs - 1`.
#
# <details><summary>Hint 1: where to start</summary>
#
# The forward is the return as a prologue; the backward is your `transposed_scan`. In each
# recurrence, which factor multiplies the carried value, and where is it cut?
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Both prologues read $\gamma$ from `P[0]`, and keep it as the multiplier at every step.
# * `forward` keeps what the backward needs: `ctx.save_for_backward(terminated)` and
#   `ctx.gamma = gamma`. It returns `exercises.scan_hook(...)` of `(rewards, terminated)`, `(gamma,)`.
# * `backward` gets `grad`, the upstream gradient $dG$. It may be a broadcast view. `scan_hook` takes
#   any layout, because it makes its inputs contiguous, so you need no `.contiguous()`.
# * Backward prologue: step $t$ resets where step $t-1$ terminated, and at step 0, with nothing
#   before it.
# * Run it with `reverse=False`. Return `g, None, None`: one gradient per input of `forward`.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Rewards 1, 2, 3, $\gamma = 0.5$, a termination at step 1. Forward: $G_2 = 3$, $G_1 = 2$
# (terminal), $G_0 = 1 + 0.5 \cdot 2 = 2$. Backward of $L = \sum_t G_t$, so every
# $dG_t = 1$: $g_0 = 1$, $g_1 = 1 + 0.5\,(1-\text{term}_0)\,g_0 = 1.5$ and
# $g_2 = 1 + 0.5\,(1-\text{term}_1)\,g_1 = 1$. (By hand: $r_1$ is in $G_1$ and, halved, in $G_0$.
# $r_2$ is in $G_2$ only.)
#
# ```python
# r3 = torch.tensor([[1.0, 2.0, 3.0]], device=DEVICE, requires_grad=True)
# G3 = exercises.guarded(returns_autograd, r3, torch.tensor([[False, True, False]], device=DEVICE), 0.5)
# exercises.guarded(G3.sum().backward)  # the backward's kernel, checked too
# print(G3.tolist(), r3.grad.tolist())  # must print [[2.0, 2.0, 3.0]] [[1.0, 1.5, 1.0]]
# ```
#
# Run the checker before you open Hint 4.
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# The triples:
#
# | pass | step | multiplier $a_t$ | $b_t$ | reset? |
# | --- | --- | --- | --- | --- |
# | forward | ordinary | $\gamma$ | $r_t$ | no |
# | forward | termination | — | $r_t$ | yes |
# | forward | the window's last step ($t = T-1$) | — | $r_t$ | yes |
# | backward | $t \ge 1$, step $t-1$ not terminated | $\gamma$ | $dG_t$ | no |
# | backward | $t \ge 1$, step $t-1$ terminated | — | $dG_t$ | yes |
# | backward | $t = 0$: no step before it | — | $dG_0$ | yes |
#
# A dash: the reset ignores the multiplier, so the prologue may return $\gamma$ there.
#
# In the backward's prologue, with `X = (grad, terminated)` and `dy` loaded from `X[0]`:
#
# ```python
# term_before = tl.load(X[1] + offs - 1, mask=___, other=___) != 0  # ___: where is there a step before? what resets step 0?
# return ___, dy, term_before  # ___: the multiplier; step t resets where step t - 1 terminated
# ```
#
# </details>
#
# ```python
# class Returns(torch.autograd.Function):
#     @staticmethod
#     def forward(ctx, rewards, terminated, gamma):
#         ...
#     @staticmethod
#     def backward(ctx, grad):
#         ...
#         return d_rewards, None, None
# ```

# %%
def returns_autograd(rewards, terminated, gamma):
    # YOUR CODE: return Returns.apply(rewards, terminated, gamma)
    raise NotImplementedError

# %%
exercises.attempt("returns_autograd", returns_autograd)

# %% [markdown]
# ## Appendix: details of the exercises
#
# **`transposed_scan`: where $a_{t-1} = 0$, and the checker.** Where step $t-1$ reset in the
# reverse scan of $y$ ($a_{t-1} = 0$ in `rl.linear_scan`'s pairs), the multiplier 0 stops
# $g_{t-1}$, as autograd's $dy_t + 0 \cdot g_{t-1}$ does: as section 2 says, that 0 already cuts
# the carry into step $t$. So you need not set a reset there, though one would pass too.
#
# The checker compares your $g_t$ with autograd's gradient of `rl.linear_scan`. In its case marked
# "before the window" the scan starts from $\infty$. A multiplier of 0 at step 0 does not keep
# that out, since $0 \cdot \infty = \text{NaN}$: only the reset does.
#
# **`returns_autograd`: what the checker compares.** It differentiates a weighted sum of your
# returns, and compares both the returns and the gradient. In its cases marked "past the window"
# both scans start from 100, not 0.

# %% [markdown]
# ## What you now know
#
# * `exercises.scan_hook` runs your `@triton.jit` prologue, `(X, P, offs, t, m, T) -> (a, b, reset)`,
#   inside a chunked scan with reset flags. `t` is the global time index, and padding lanes take the identity.
# * The gradient is a forward scan, with the reset one step later: $g_t = dG_t +
#   \gamma_{t-1}(1-\text{done}_{t-1})\,g_{t-1}$ (term$_{t-1}$ in `returns_autograd`, which has
#   terminations only). Both scans fit in one `torch.autograd.Function`.
