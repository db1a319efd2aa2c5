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
# # 00d — Two more scans (optional): time-major rollouts, and a scan that is not a sum
#
# * **You will learn:**
#   * to run 00c's `reset_scan` on rollouts stored time-major, read in place through their
#     strides;
#   * that a scan needs only an associative combine: you scan a max, not a sum, with its own
#     identity.
# * **Time:** 1–1.5 h for the two checked exercises.
# * **Needs:** notebook 00c, sections 1 to 3, and your `reset_scan`. No GPU.
# * **Optional:** no later notebook needs these two exercises. They are practice for writing a
#   kernel with less help: the second starts without a skeleton.
#
# The exercises work as [notebook 00's box](00_associative_scan.ipynb#How-the-exercises-work) says. What
# differs on a GPU is in [00b's GPU notes](00b_triton_from_zero.ipynb#GPU-notes).

# %% [markdown]
# <a id="Rules-in-force"></a>
#
# Both kernels here follow [00b's Triton rules](00b_triton_from_zero.ipynb#Triton-rules), the
# course's one card, and
# [00c's two rules for hooks](00c_episodes_and_hooks.ipynb#Before-the-package:-a-hook-as-an-argument,-tuples-of-pointers,-loops-unrolled).

# %%
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # Triton kernels on the CPU

import triton
import triton.language as tl

from rltriton_lite import exercises  # before any scan runs (00b's GPU note 3)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
print("device:", DEVICE, "(Triton interpreter)" if os.environ.get("TRITON_INTERPRET") == "1" else "")

# %% [markdown]
# ## Exercises
#
# **Exercise `strided_scan`.** `reset_scan` for rollouts stored time-major, as CleanRL and SB3
# keep them. Such a rollout has shape `(T, B)`, one column per environment.
#
# A tensor's *stride* along a dimension is how many elements apart two neighbours along it are.
# A contiguous `(T, B)` tensor has strides `(B, 1)`: step $t + 1$ of a column lies $B$ elements
# after step $t$. A transposed view of a `(B, T)` buffer has strides `(1, T)` over the same memory.
#
# * **Inputs:** `rewards` (float32) and `terminated` (bool) of shape `(T, B)`, with any strides.
#   Then `gamma` and `chunk`.
# * **Returns:** the returns in a new `(T, B)` tensor.
# * **Edge cases:** a contiguous `(T, B)` tensor, a transposed `(B, T)` buffer, and every other
#   column of a wider tensor. Read each in place. The checker refuses a copy, such as
#   `.contiguous()` makes.
# * **Addresses:** element `(t, b)` of a tensor `x` is at `X + t * x.stride(0) + b * x.stride(1)`.
#   One program per column `b`.
#
# <details><summary>Hint 1: where to start</summary>
#
# It is `reset_scan` with new addresses, nothing more. A row is now a column `b`, and its steps
# are `stride(0)` elements apart, not 1. The loop, the combine and the carry do not change.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * `T, B = rewards.shape`; launch `B` programs, with `b = tl.program_id(0)`.
# * Pass each tensor's strides to the kernel as integers, as `*rewards.stride()` and
#   `*terminated.stride()`. The two inputs may have different strides.
# * Make the output with `torch.empty(T, B, ...)`, a fresh contiguous tensor, and pass its
#   strides too. `torch.empty_like(rewards)` works as well if you pass its strides: it may keep
#   the input's layout.
# * Build every load and store address from its own tensor's strides.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Take two columns of three steps, $\gamma = 0.5$, `chunk = 2`. `rewards` is a transposed view,
# with strides (1, 3). `terminated` is contiguous, with strides (2, 1). Column 0 has
# $r = (1, 2, 3)$ and an end at $t = 1$, so $G = (1 + 0.5 \cdot 2,\ 2,\ 3) = (2, 2, 3)$. Column 1
# has $r = (4, 0, 8)$ and no end, so $G_2 = 8$, $G_1 = 0 + 0.5 \cdot 8 = 4$,
# $G_0 = 4 + 0.5 \cdot 4 = 6$. As a `(T, B)` tensor, that is $((2, 6), (2, 4), (3, 8))$. If you get
# `[[2.5, 6.0], [3.0, 8.0], [0.0, 8.0]]`, you read `rewards` as if it were contiguous.
#
# The transposed view happens to suit `reset_scan`'s address `R + b * T + t`. So also run the same
# rewards as a contiguous `(T, B)` tensor, with strides (2, 1). It must print the same. If it
# prints `[[3.0, 3.5], [4.0, 7.0], [2.0, 8.0]]`, you kept `reset_scan`'s address for `rewards`.
#
# ```python
# r = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 8.0]], device=DEVICE).T  # (T, B) = (3, 2), a view
# term = torch.tensor([[False, False], [True, False], [False, False]], device=DEVICE)
# print(exercises.guarded(strided_scan, r, term, 0.5, 2).tolist())  # must print [[2.0, 6.0], [2.0, 4.0], [3.0, 8.0]]
# r_contiguous = r.contiguous()  # the same values, strides (2, 1)
# print(exercises.guarded(strided_scan, r_contiguous, term, 0.5, 2).tolist())  # must print [[2.0, 6.0], [2.0, 4.0], [3.0, 8.0]]
# ```
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# r = tl.load(R + ___, mask=m, other=0.0)  # ___: element (t, b), from rs_t, rs_b = rewards.stride()
# term = (tl.load(D + ___, mask=m, other=0) != 0) & m  # the same, with terminated's own strides
# tl.store(G + ___, g, mask=m)             # and with out's strides, gs_t, gs_b
# # the launch: kernel[(B,)](rewards, terminated, out, gamma, T, *rewards.stride(), *terminated.stride(),
# #                          *out.stride(), CHUNK=chunk)
# ```
#
# </details>

# %%
def strided_scan(rewards, terminated, gamma, chunk):
    # YOUR CODE
    raise NotImplementedError

# %%
exercises.attempt("strided_scan", strided_scan)

# %% [markdown]
# **Exercise `discounted_max`: a scan that is not a sum.** Everything so far scanned affine
# maps, $y \mapsto b + a\,y$. But a scan needs only an associative combine. Here you scan the
# largest discounted reward still ahead in the episode, $h_t = \max_k \gamma^k r_{t+k}$, where $k$
# runs over the episode's remaining steps. Take a goal reward, 1 at a goal and 0 elsewhere, and
# $\gamma < 1$. Then $h_t = \gamma^k$ says that the next goal is $k$ steps ahead, and $h_t = 0$
# that the episode or the row ends first. Unlike the return, $h_t$ gains nothing from a second
# goal. As a recurrence:
#
# $$h_t = \max(r_t,\ \gamma\, h_{t+1}),$$
#
# with $h_t = r_t$ where the episode ends and at the row's last step.
#
# * **Inputs:** `rewards` (float32, of either sign) and `terminated` (bool), contiguous, of shape
#   `(B, T)`, any `T`. Then `gamma` ($0 < \gamma \le 1$) and `chunk`.
# * **Returns:** $h$, a new `(B, T)` tensor. Compute it with your own chunked scan: one program
#   per row, one `tl.associative_scan` per chunk of `chunk` steps, from the last, and a carry.
# * **Edge cases:** rewards mostly below 0, a length not a multiple of `chunk`, random episode
#   ends over several chunks, and $\gamma = 0.01$ (the guards, below). A grader draws others.
# * **Work it out on paper first.** A step is the map $y \mapsto \max(c, g\,y)$, with
#   $c = r_t$ and $g = \gamma \ge 0$ (this $g$ is the run's discount, not the gradient $g$ of
#   notebook 00, section 8). Check that two steps compose to a map of the same form.
#   Then find the identity, the pair that changes no $y$. The padding lanes load it. Its $c$ is
#   also the first carry, since nothing after the row may change $h$. Last, add the reset flag as
#   in 00c, section 1 ([reset conventions](00_associative_scan.ipynb#Reset-conventions)).
# * **Name your combine in the kernel itself** ([the rules](#Rules-in-force)).
#
# **The guards.** A long run's $g$, a power of $\gamma$, underflows to 0 in float32 when
# $\gamma = 0.01$. Once you have the identity, check what that 0 times the identity's $c$ gives. The
# checker tests two products that can meet it; guard each with a `tl.where`:
#
# * in the combine, where $c_1$ is the identity's $c$, the composed $c$ is $c_2$;
# * after the scan, where the carry is the identity's $c$, $h_t$ is the scanned map's $c$.
#
# <a id="tl.maximum-and-a-NaN"></a>**`tl.maximum` and a NaN (a GPU note).** Triton promises nothing
# here. Your own run will not show this NaN: the interpreter's maximum dropped it, and so did an
# H100's with Triton 3.6. The checker forces it: it tests the worst case, a NaN that wins. So a
# kernel without the guards can pass your hand check and still fail the checker.
#
# <details><summary>The two guards, with the identity's value (open once you have found the identity)</summary>
#
# The identity's $c$ is $-\infty$, and $0 \cdot (-\infty)$ is NaN in any arithmetic. So the
# combine's guard is `tl.where(c1 == float("-inf"), c2, ...)`, and the carry's is
# `tl.where(carry == float("-inf"), c_s, ...)`.
#
# </details>
#
# <details><summary>Hint 1: where to start</summary>
#
# Reuse `reset_scan` whole: its loop, its carry and its select. Only the step changes. Compose
# two max-maps on paper, as notebook 00, section 2, composed affine maps. Then ask which pair
# leaves every $y$ as it is.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Step $t$ is the pair $(g_t, c_t) = (\gamma, r_t)$: the map $y \mapsto \max(c_t, g_t\,y)$.
# * Write out the composition: the first operand $(g_1, c_1)$ first, then the second $(g_2, c_2)$.
# * Two facts bring it back to the form $\max(c, g\,y)$: as $g_2 \ge 0$,
#   $g_2 \max(u, v) = \max(g_2 u, g_2 v)$, and a max of maxes is one max of all their terms.
#   Using both, the factor of $y$ is your new $g$, and the terms without $y$ give your new $c$.
# * The identity $(g, c)$ must give $\max(c, g\,y) = y$ for every $y$, and $y$ may be below 0,
#   as rewards may. Which $c$ never wins a max? Is 0 enough?
# * Padding lanes load the identity's $c$. The carry into a row's last chunk must change nothing
#   too: $h_t = r_t$ at the row's last step.
# * A reset $\kappa_2$ keeps $(g_2, c_2)$ alone and drops the first operand, as the combine of
#   00c's `reset_scan` does.
# * After the scan, select as in `reset_scan`. Where the scanned flag is set, the carry never
#   enters. Elsewhere, apply the scanned map to the carry.
# * In Triton, use `tl.maximum`, not Python's `max`.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Take one row, $\gamma = 0.5$, $r = (-3, -4, 4, -2)$, an episode end at $t = 1$, `chunk = 2`.
# From the end: $h_3 = -2$, at the row's last step. $h_2 = \max(4,\ 0.5 \cdot (-2)) = 4$.
# $h_1 = -4$, because the episode ends there and the carry 4 stays out.
# $h_0 = \max(-3,\ 0.5 \cdot (-4)) = -2$. Without the episode end, $h_1 = \max(-4, 2) = 2$ and
# $h_0 = \max(-3, 1) = 1$. The answer must not depend on `chunk`: 2, 4 and 8 (which pads four
# lanes) print the same. If you get `[[-2.0, -4.0, 4.0, 0.0]]`, a 0 got in after the row's last
# step, through the carry or a padding lane.
#
# ```python
# r = torch.tensor([[-3.0, -4.0, 4.0, -2.0]], device=DEVICE)
# term = torch.tensor([[False, True, False, False]], device=DEVICE)
# print(exercises.guarded(discounted_max, r, term, 0.5, 2).tolist())  # must print [[-2.0, -4.0, 4.0, -2.0]]
# ```
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# First the identity: what $(g, c)$ leaves every max-map unchanged, for every $y$, below 0 too?
# If you try a $c$ of 0, the checker says why it fails. Below, `IDENTITY_C` stands for its $c$:
# write the value itself.
#
# ```python
# @triton.jit
# def max_combine(g1, c1, k1, g2, c2, k2):  # (g1, c1, k1): the first operand, applied first
#     c = tl.where(c1 == IDENTITY_C, c2, ___)  # ___: your composed c; the select is the combine's guard
#     return tl.where(k2, g2, ___), tl.where(k2, c2, c), k1 | k2  # ___: your composed g
# # in the loop: r loaded with other=IDENTITY_C; carry = ___ before the last chunk
# h = tl.where(k_s, c_s, tl.where(carry == IDENTITY_C, c_s, ___))  # ___: the scanned map (g_s, c_s) applied to the carry
# ```
#
# </details>

# %%
def discounted_max(rewards, terminated, gamma, chunk):
    # YOUR CODE
    raise NotImplementedError

# %%
exercises.attempt("discounted_max", discounted_max)

# %% [markdown]
# ## What you now know
#
# * Element $(t, b)$ of a tensor is at `X + t * stride0 + b * stride1`. A kernel that builds its
#   addresses from the strides reads a time-major, transposed or sliced buffer in place.
# * A scan needs only an associative combine. Steps $y \mapsto \max(r, \gamma y)$ compose too,
#   with their own identity, and the reset flag selects as it does for affine maps.

# %% jupyter={"source_hidden": true}
# Checks: Hint 2's layouts (strided_scan); the identity Hint 4 asks for (discounted_max); the guards; the note on tl.maximum and a NaN (CI runs them; skip when reading)
import numpy as np

_r_view = torch.zeros(2, 3).T  # strided_scan's Hint 3: a transposed view, strides (1, 3)
assert torch.empty_like(_r_view).stride() == _r_view.stride() == (1, 3)  # empty_like may keep an input's layout
assert torch.empty(3, 2).stride() == (2, 1)  # torch.empty: a fresh contiguous tensor

ys_ = np.array([-5.0, -0.5, 0.0, 3.0])
assert (np.maximum(-np.inf, 1.0 * ys_) == ys_).all()  # (1, -inf) changes no y
assert (np.maximum(0.0, 1.0 * ys_) != ys_).any()  # a c of 0 wins over a y below 0


@triton.jit
def _max_nan(X, Y, O_NONE, O_ALL):
    i = tl.arange(0, 2)
    x, y = tl.load(X + i), tl.load(Y + i)
    tl.store(O_NONE + i, tl.maximum(x, y))  # the default, propagate_nan=tl.PropagateNan.NONE
    tl.store(O_ALL + i, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL))


@triton.jit
def _guarded_c(C1, G2, C2, O):  # the exercise's guarded c, under ALL: a NaN read by the max would win it
    i = tl.arange(0, 2)
    c1, g2, c2 = tl.load(C1 + i), tl.load(G2 + i), tl.load(C2 + i)
    tl.store(O + i, tl.where(c1 == float("-inf"), c2, tl.maximum(c2, g2 * c1, propagate_nan=tl.PropagateNan.ALL)))


g_run = torch.full((30,), 0.01).prod()  # gamma = 0.01 over 30 steps underflows in float32
assert g_run == 0 and torch.isnan(g_run * float("-inf"))
assert torch.tensor(0.01).pow(64) == 0  # the checker's last case: gamma = 0.01 over a chunk of 64 steps
assert [c for c in exercises.cases("discounted_max") if c[1][2] == 0.01 and c[1][3] == 64]  # ... which it has
c1_, g2_, c2_ = (torch.tensor(v, device=DEVICE) for v in ([float("-inf"), 2.0], [0.0, 0.5], [-3.0, -3.0]))
o_guard = torch.empty_like(c1_)
with np.errstate(invalid="ignore"):  # (the interpreter's 0 * -inf, made before the select drops it)
    _guarded_c[(1,)](c1_, g2_, c2_, o_guard)
assert o_guard.tolist() == [-3.0, 1.0]  # c1 = -inf, g2 = 0: c2 itself, no NaN; elsewhere max(c2, g2 * c1)


@triton.jit
def _unguarded_c(C1, G2, C2, O):  # the note's "without the guards": tl.maximum's default drops 0 * (-inf)'s NaN
    i = tl.arange(0, 2)
    c1, g2, c2 = tl.load(C1 + i), tl.load(G2 + i), tl.load(C2 + i)
    tl.store(O + i, tl.maximum(c2, g2 * c1))


o_unguarded = torch.empty_like(c1_)
with np.errstate(invalid="ignore"):
    _unguarded_c[(1,)](c1_, g2_, c2_, o_unguarded)
assert o_unguarded.tolist() == [-3.0, 1.0]  # the same values: the NaN is dropped
o_checked = torch.empty_like(c1_)
with np.errstate(invalid="ignore"), exercises._nan_wins():  # the checker's max, under the interpreter: the NaN wins
    _unguarded_c[(1,)](c1_, g2_, c2_, o_checked)
assert torch.isnan(o_checked[0]) == exercises.INTERPRET and o_checked[1] == 1.0  # the guards are checked only under the interpreter
x_, y_ = torch.tensor([float("nan"), -3.0], device=DEVICE), torch.tensor([-3.0, float("nan")], device=DEVICE)
o_none, o_all = torch.empty_like(x_), torch.empty_like(x_)
_max_nan[(1,)](x_, y_, o_none, o_all)
assert torch.isnan(o_all).all()  # ALL: the NaN wins
assert o_none.tolist() == [-3.0, -3.0]  # NONE: the other operand, as np.fmax (the interpreter; an H100, Triton 3.6)
# the note: Triton's documentation of tl.maximum names the flag, and no result with a NaN
_nan_lines = [line for line in tl.maximum.__doc__.lower().splitlines() if "nan" in line]
assert _nan_lines and all("propagate" in line for line in _nan_lines)
