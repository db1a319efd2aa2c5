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
# # 00c — Episodes and hooks: from a chunked scan to the package's kernel
#
# * **You will learn:**
#   * to end an episode with a select, so that a NaN or `inf` stays inside its episode (section 1);
#   * to pass an algorithm to the scan as hooks (section 2);
#   * to read the package's kernel and its strided loads (section 3).
# * **Time:** 2.5–4.5 h for the reading and the three checked exercises, over two sessions. The
#   high end is for a Triton newcomer. The open question takes another 30–45 min.
# * **Needs:** notebook 00b: a first kernel, `tl.associative_scan`, a chunk loop with a carry.
#   No GPU: Triton's interpreter runs every kernel on a CPU.
# * **Minimum path:** all but the open question: `reset_scan` and `gae_kernel` in the first
#   session, `hooked_scan` in the second.
#   [Notebook 00d](00d_more_scans.ipynb) has two optional exercises.
#
# New words are in [`GLOSSARY.md`](GLOSSARY.md). What differs on a GPU is in
# [00b's GPU notes](00b_triton_from_zero.ipynb#GPU-notes). The exercises work as
# [notebook 00's box](00_associative_scan.ipynb#How-the-exercises-work) says.

# %% [markdown]
# Every kernel here follows [00b's Triton rules](00b_triton_from_zero.ipynb#Triton-rules), the
# course's one card. Section 2 adds two rules for hooks.

# %%
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import inspect

import numpy as np
import triton
import triton.language as tl

import rltriton_lite as rl  # before any scan runs (00b's GPU note 3)
from rltriton_lite import exercises, reference

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# the Triton kernels: compiled on a GPU, in the interpreter on a CPU (backend="auto" takes the PyTorch path on a CPU)
KERNEL = "triton"
print("device:", DEVICE, "(Triton interpreter)" if os.environ.get("TRITON_INTERPRET") == "1" else "")

# %% [markdown]
# ## Where 00b ended: a chunked scan
#
# Here is 00b's `chunked_scan`, written out so that nothing below depends on your own. It computes
# the discounted return $G_t = r_t + \gamma\,G_{t+1}$ from $G_T = 0$, with no episode ends yet. It
# follows the reverse column of notebook 00's direction card, at the end of
# [section 6](00_associative_scan.ipynb#6.-Chunks-and-a-carry).
#
# One program per row walks its row in `tl.cdiv(T, CHUNK)` chunks, from the last chunk in time.
# `tl.cdiv` divides and rounds up, so a last, partial chunk counts too. In each chunk:
#
# * A reverse `tl.associative_scan` with `affine_combine` composes the pairs
#   $(a_t, b_t) = (\gamma, r_t)$. Step $t$ gets $(A_t, B_t)$, the map from $t$ to the chunk's end.
# * $G_t = B_t + A_t \cdot \text{carry}$. The [carry](GLOSSARY.md#carry) is $G$ at the first step
#   of the next chunk in time, or 0 in the row's last chunk.

# %%
@triton.jit
def affine_combine(a1, b1, a2, b2):  # (a1, b1): the first operand, applied first (00's order rule)
    return a2 * a1, b2 + a2 * b1


@triton.jit
def chunked_returns_kernel(R, G, gamma, T, CHUNK: tl.constexpr):
    row = tl.program_id(0)  # one program per row
    carry = 0.0  # G after the row's last step
    n_chunks = tl.cdiv(T, CHUNK)  # ceiling division: cdiv(n, k) = (n + k - 1) // k
    for i in range(0, n_chunks):
        c = n_chunks - 1 - i  # the chunks from the last one down
        t = c * CHUNK + tl.arange(0, CHUNK)
        m = t < T
        r = tl.load(R + row * T + t, mask=m, other=0.0)
        a = tl.where(m, gamma, 1.0)  # padding: the identity (1, 0)
        a_s, b_s = tl.associative_scan((a, r), 0, affine_combine, reverse=True)
        g = b_s + a_s * carry
        tl.store(G + row * T + t, g, mask=m)
        carry = tl.sum(tl.where(t == c * CHUNK, g, 0.0), 0)  # G at the chunk's first step


def chunked_returns(rewards, gamma, chunk):
    """00b's chunked_scan: contiguous (n_rows, T) float32 rewards -> the returns G_t."""
    out = torch.empty_like(rewards)
    chunked_returns_kernel[(rewards.shape[0],)](rewards, out, gamma, rewards.shape[1], CHUNK=chunk)
    return out


r_np = np.random.default_rng(1).normal(size=(3, 300))  # 300 steps: 5 chunks of 64
assert triton.cdiv(300, 64) == (300 + 64 - 1) // 64 == 5  # 4 full chunks and a partial one of 44 steps
G = chunked_returns(torch.tensor(r_np, dtype=torch.float32, device=DEVICE), 0.9, 64)
np.testing.assert_allclose(G.cpu().numpy(), reference.discounted_returns(r_np, gamma=0.9), rtol=1e-4, atol=1e-5)
print("chunked_returns: 3 rows x 300 steps in chunks of 64 == the loop")

# %% [markdown]
# ## 1. Episode ends as a select: the reset
#
# Now an episode may end inside a row. Where it ends at step $t$, $\text{term}_t$ is true, and
# nothing after step $t$ may reach $G_t$, so $G_t = r_t$. The obvious pair sets
# $a_t = \gamma(1 - \text{term}_t)$, which is 0 at the end: the end multiplied in, which
# [00 §4](00_associative_scan.ipynb#4.-Episode-ends-are-resets) warns against. Here it is on four
# steps, an end at $t = 1$, and a NaN in the second episode:

# %%
r_bad, term_bad = torch.tensor([1.0, 2.0, float("nan"), 4.0]), torch.tensor([False, True, False, False])
G_next, by_product = torch.tensor(0.0), []
for t in reversed(range(4)):
    G_next = r_bad[t] + 0.5 * (~term_bad[t]) * G_next  # a_t = gamma (1 - term_t): 0 at the end
    by_product.insert(0, G_next.item())
right = reference.discounted_returns(r_bad.numpy(), gamma=0.5, terminated=term_bad.numpy())
print("the product:", by_product, "  the loop's answer:", right.tolist(), "  0 * nan =", 0 * float("nan"))
assert np.isnan(by_product[:2]).all() and right[:2].tolist() == [2.0, 2.0]  # the first episode got the NaN

# %% [markdown]
# The fix is notebook 00's triple, from the same section. Each step carries a
# [reset](GLOSSARY.md#reset) flag $\kappa_t = \text{term}_t$ beside the pair $(\gamma, r_t)$. The
# combine then **selects** instead of multiplying. Where its second operand resets, it returns that
# operand alone, and the first never enters. So $a_t$ stays $\gamma$ at a reset. In Triton,
# `combine_arrays`'s `np.where` becomes `tl.where`, which passes on only the chosen branch, so a NaN
# in the other branch never gets through:

# %%
@triton.jit
def reset_combine(a1, b1, k1, a2, b2, k2):  # (a1, b1, k1): the first operand, applied first
    return tl.where(k2, a2, a2 * a1), tl.where(k2, b2, b2 + a2 * b1), k1 | k2


# %% [markdown]
# The scan gives each step $t$ its composed triple $(A_t, B_t, K_t)$, from $t$ to the chunk's end.
# $K_t$ is set when an episode ends at step $t$ or later in the chunk, and then nothing from later
# chunks may reach step $t$. So two more things change in the chunk loop:
#
# * The carry is selected too: $G_t = B_t$ where $K_t$ is set, else $B_t + A_t \cdot \text{carry}$.
#   A right combine does not make this select unneeded: the carry enters from outside the chunk,
#   after the scan, so only this `tl.where(k_s, ...)` keeps a later episode's value out.
# * Padding past the row's end is the [identity](GLOSSARY.md#identity) triple $(1, 0, \text{false})$.
#
# **Exercise `reset_scan`.** `chunked_returns` with episode ends, as resets.
#
# * **Inputs:** `rewards` (float32) and `terminated` (bool), contiguous, of shape `(n_rows, T)`;
#   then `gamma` and `chunk`.
# * **Returns:** the returns, an `(n_rows, T)` tensor: $G_t = r_t$ where $\text{term}_t$, else
#   $r_t + \gamma\,G_{t+1}$, from $G_T = 0$.
# * **Edge cases:** a `NaN` or `inf` reward must stay inside its own episode, whether the episode
#   end is in the same chunk or the bad value arrives through the carry from a later chunk.
# * **The combine:** `reset_combine` above. The checker also tests that your kernel's combine
#   gives the same result however the steps are grouped.
#
# <details><summary>Hint 1: where to start</summary>
#
# Start from `chunked_returns` above, or your own `chunked_scan` from 00b. Three things change:
# the step becomes a triple, the scan takes `reset_combine`, and the carry is selected.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Load `terminated` as in 00b's `td_target_kernel`, with `!= 0`. Then `& m`, so that a padding
#   lane never resets. Here a padding reset would be harmless, since the carry into the last chunk
#   is $G_T = 0$. It matters once a value after the row enters, as `hooked_scan`'s `initial` does.
# * Step $t$ is the triple $(\gamma, r_t, \text{term}_t)$. Padding past $T$ is $(1, 0, \text{false})$.
# * Scan the three blocks with `reset_combine` and `reverse=True`.
# * Select on the carry, as above. The new carry is still $G$ at the chunk's first step.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# The four steps above: $\gamma = 0.5$, $r = (1, 2, \text{NaN}, 4)$, the first episode ending at
# $t = 1$. The second episode gives $G_3 = 4$ and $G_2 = \text{NaN}$, which the first never sees:
# $G_1 = 2$ and $G_0 = 1 + 0.5 \cdot 2 = 2$. With `chunk = 2`, the NaN reaches chunk $\{0, 1\}$
# through the carry. With `chunk = 4`, it is in the same chunk. Also put any number in place of
# the NaN: $G_0$ and $G_1$ must not move.
#
# ```python
# r = torch.tensor([[1.0, 2.0, float("nan"), 4.0]], device=DEVICE)
# term = torch.tensor([[False, True, False, False]], device=DEVICE)
# for chunk in (2, 4):
#     print(exercises.guarded(reset_scan, r, term, 0.5, chunk).tolist())  # must print [[2.0, 2.0, nan, 4.0]], twice
# ```
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# term = (tl.load(D + row * T + t, mask=m, other=0) != 0) & m
# a = tl.where(m, ___, 1.0)  # ___: a real step's a_t, reset or not: where the flag is set, a never affects an output
# a_s, b_s, k_s = tl.associative_scan((a, r, term), 0, reset_combine, reverse=True)
# g = tl.where(k_s, ___, ___)  # which branch lets the carry in, and which keeps it out?
# ```
#
# </details>

# %%
def reset_scan(rewards, terminated, gamma, chunk):
    # YOUR CODE
    raise NotImplementedError

# %%
exercises.attempt("reset_scan", reset_scan)

# %% [markdown]
# ## 2. Hooks: the algorithm around the scan
#
# Every algorithm of the course runs the same chunk loop, and only the arithmetic before and after
# the scan differs. Call the scanned value $y_t = b_t + a_t\,y_{t+1}$. For the discounted return, the
# steps are $(\gamma, r_t)$ and $y_t$ is the output. For GAE, the steps are
# $(\gamma\lambda, \delta_t)$, and $\delta_t$ must first be computed from the rewards and values.
#
# So here you write GAE as that loop plus two small `@triton.jit` functions that the loop calls,
# its **hooks**. The **prologue** runs before the scan. It loads a chunk of inputs and returns each
# step's triple $(a_t, b_t, \kappa_t)$. The **epilogue** runs after the scan and stores the
# outputs. Here is one chunk's trip through the kernel, with GAE's names:
#
# ```
#  r, V, V', term ──prologue──▶ (a_t, b_t, κ_t) = (γλ, δ_t, term_t)
#       ──tl.associative_scan(reset_combine)──▶ (A_t, B_t, K_t): each step's map to the chunk's end
#       ──select on the carry──▶ y_t = B_t if K_t, else B_t + A_t · carry
#       ──epilogue──▶ stores Â_t = y_t;   carry ← y at the chunk's first step, for the chunk before
# ```

# %% [markdown]
# **Exercise `gae_kernel`.** Write GAE as your `reset_scan`, in chunks of `chunk` steps, with the
# diagram's two hooks. The prologue computes
# $\delta_t = r_t + \gamma(1-\text{term}_t)V(s_{t+1}) - V(s_t)$ and returns the triple
# $(a_t, b_t, \kappa_t) = (\gamma\lambda, \delta_t, \text{term}_t)$. The epilogue stores the
# advantage $\hat A_t$, which is not the scan's composed $A_t$. The reset is `term` alone, not 00b's
# `term | trunc`: truncation, which bootstraps but cuts the trace, comes in notebook 02.
#
# * **Inputs:** `rewards`, `values`, `next_values` (float32) and `terminated` (bool), contiguous,
#   of shape `(n_rows, T)`. Then `gamma`, `lam` and `chunk`.
# * **Returns:** the advantages $\hat A_t$, an `(n_rows, T)` tensor.
# * **Edge cases:** rows of 7, 600 and 300 steps with episode ends. A NaN reward in a later
#   episode. NaN in `next_values` at terminations, where the terminal state has no value.
# * **Select, don't multiply** in $\gamma(1-\text{term}_t)V(s_{t+1})$, so those NaNs are never used.
#
# <details><summary>Hint 1: where to start</summary>
#
# This is your `reset_scan` with other inputs. Only what goes in (the triple) and what comes out
# (the store) change. The skeleton below puts each in its own hook.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * The prologue loads $r_t$, $V_t$, $V'_t$ and $\text{term}_t$ at `offs = row * T + t`, under `m`.
# * $\delta_t = r_t + \gamma V'_t - V_t$, with 0 in place of $\gamma V'_t$ where $\text{term}_t$.
# * It returns the triple $(\gamma\lambda, \delta_t, \text{term}_t)$, and $(1, 0, \text{false})$
#   past $T$.
# * The kernel's loop is `reset_scan`'s. The scanned $y_t$ is $\hat A_t$, which the epilogue
#   stores.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Take one row, $\gamma = \lambda = 0.5$ (so $\gamma\lambda = 0.25$), with $r = (1, 2, 3)$,
# $V = (1, 1, 2)$, $V' = (1, \text{NaN}, 4)$ and a termination at $t = 1$. Then
# $\delta_0 = 1 + 0.5 \cdot 1 - 1 = 0.5$, $\delta_1 = 2 - 1 = 1$ (the NaN is never used) and
# $\delta_2 = 3 + 0.5 \cdot 4 - 2 = 3$. Backwards: $\hat A_2 = 3$. $\hat A_1 = 1$, because step 1
# terminates. $\hat A_0 = 0.5 + 0.25 \cdot 1 = 0.75$. With `chunk = 2`, $t = 1$ is a chunk's last
# step. With $\lambda = 0$, $\hat A_t = \delta_t$: `[[0.5, 1.0, 3.0]]`.
#
# ```python
# r, v = torch.tensor([[1.0, 2.0, 3.0]], device=DEVICE), torch.tensor([[1.0, 1.0, 2.0]], device=DEVICE)
# nv = torch.tensor([[1.0, float("nan"), 4.0]], device=DEVICE)
# term = torch.tensor([[False, True, False]], device=DEVICE)
# print(exercises.guarded(gae_kernel, r, v, nv, term, 0.5, 0.5, 2).tolist())  # must print [[0.75, 1.0, 3.0]]
# ```
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# In the prologue, and where the kernel calls it:
#
# ```python
# delta = r + tl.where(term, ___, ___) - v  # ___: which branch may hold a NaN nv, never to be read?
# return tl.where(m, ___, 1.0), tl.where(m, delta, ___), term & m  # a real step's a; padding's b
# # in the kernel's loop:
# a, b, reset = gae_prologue(R, V, NV, D, ___, m, gamma, lam)  # ___: this chunk's offsets in row `row`
# ```
#
# </details>

# %%
# A skeleton, if you want one:
#
# @triton.jit
# def gae_prologue(R, V, NV, D, offs, m, gamma, lam):   # a chunk of inputs -> its triples
#     ...                                                 # loads (masked), delta, padding as (1, 0, False)
#     return a, b, reset
#
# @triton.jit
# def gae_epilogue(OUT, offs, m, y):                     # the scanned values -> stored advantages
#     tl.store(OUT + offs, y, mask=m)
#
# @triton.jit
# def gae_chunked(R, V, NV, D, OUT, gamma, lam, T, CHUNK: tl.constexpr):
#     ...                                                 # reset_scan's loop, calling the two hooks
def gae_kernel(rewards, values, next_values, terminated, gamma, lam, chunk):
    # YOUR CODE
    raise NotImplementedError

# %%
exercises.attempt("gae_kernel", gae_kernel)

# %% [markdown]
# **A good place to stop for the first session.** The second covers hooks as arguments,
# `hooked_scan` and the package's kernel (section 3).

# %% [markdown]
# ### Before the package: a hook as an argument, tuples of pointers, loops unrolled
#
# Your `gae_kernel` calls its hooks by name, so each algorithm would need its own copy of the
# loop. The package's kernel takes the hook *as an argument* instead, so one loop's source serves
# every algorithm. The [harness](GLOSSARY.md#harness) `exercises.scan_hook`, which runs the
# prologues you write in notebooks 01b, 03, 04 and 06, does the same. Four pieces of Triton make
# this work:
#
# * **A `@triton.jit` function passed as a `tl.constexpr` argument**, as `HOOK=square` below. Like
#   `BLOCK`, it is fixed at compile time. Triton compiles one kernel per hook, with the hook's body
#   pasted in where it is called. A scan's combine is the exception: name it in the kernel
#   (rule 1 below).
# * **`if FLAG:` on a `tl.constexpr`**, such as `if EPILOGUE is not None:`. It is decided at
#   compile time, so the branch not taken is not compiled in at all.
# * **A tuple of tensors as one argument**, such as `X = (x0, x1, x2)`. In the kernel, `X[i]`
#   points to the `i`-th tensor's first element, as in `tl.load(X[i] + offs)`. In a tuple of
#   numbers, `P[i]` is a number. The index `i` must be known at compile time (rule 2 below).
# * **`tl.static_range(n)`**, a loop *unrolled* at compile time. The compiler writes one copy of
#   the body for each `i`, so `i` is a constant in each copy. `n` must be known at compile time,
#   as `len(X)` is.
#
# <a id="Two-Triton-rules-for-hooks"></a>**Two Triton rules for hooks** join
# [00b's card](00b_triton_from_zero.ipynb#Triton-rules). Both are GPU notes: the interpreter runs
# Python and accepts either slip, while a GPU compile, and the checker's compile for sm_90,
# refuse it.
#
# | rule | why |
# | --- | --- |
# | 1. Name the scan's combine in the kernel; never pass it as a `tl.constexpr` argument. | a gap in Triton: [the appendix](#Why-a-combine-cannot-be-an-argument) |
# | 2. Index a tuple only with a compile-time constant: a literal, or a `tl.static_range` variable. | a compile needs to know which tensor `X[i]` is: a plain `range` loop's `i` is refused |
#
# Here is a ten-line kernel that uses the four pieces. It passes each input through the hook,
# weights it by its number in `P`, sums the results, and caps the sum at 1 when `CAP` is set.

# %%
@triton.jit
def square(x):
    return x * x


@triton.jit
def absolute(x):
    return tl.abs(x)


@triton.jit
def weighted_sum_kernel(X, P, OUT, n, HOOK: tl.constexpr, CAP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in tl.static_range(len(X)):  # unrolled: one copy of the body per input, i a constant
        total += P[i] * HOOK(tl.load(X[i] + offs, mask=m, other=0.0))  # X[i]: the i-th input's pointer
    if CAP:  # decided at compile time: with CAP=False this line is not in the kernel
        total = tl.minimum(total, 1.0)
    tl.store(OUT + offs, total, mask=m)

# %% [markdown]
# The same source, launched twice and checked against PyTorch. Each launch has its own hook, `CAP`
# and tuple length, so each compiles its own kernel:

# %%
xs = tuple(torch.randn(100, device=DEVICE) for _ in range(3))
out = torch.empty(100, device=DEVICE)
weighted_sum_kernel[(2,)](xs, (0.5, 2.0, -1.0), out, 100, HOOK=square, CAP=False, BLOCK=64)
torch.testing.assert_close(out, 0.5 * xs[0] ** 2 + 2.0 * xs[1] ** 2 - xs[2] ** 2)
weighted_sum_kernel[(2,)](xs[:2], (1.0, 1.0), out, 100, HOOK=absolute, CAP=True, BLOCK=64)
torch.testing.assert_close(out, (xs[0].abs() + xs[1].abs()).clamp(max=1.0))
assert out.max() <= 1.0 and (out == 1.0).any()  # the cap was compiled in, and it bit
print("one source, two compiled kernels: 0.5 x0² + 2 x1² − x2², and min(|x0| + |x1|, 1)")

# %% [markdown]
# **The prologue's signature.** Your `gae_prologue` names each of its inputs. To serve any
# algorithm, the prologue that `hooked_scan` calls takes its tensors as one tuple `X` and its
# numbers as one tuple `P`, as the harness's prologues in notebooks 01–06 do. The glossary's
# [table of hooks](GLOSSARY.md#hooks-signatures) lists every signature, the package's included.
#
# Here is the discounted return's prologue in that form. Its `X` is `(rewards, terminated)`, and
# its `P` is `(gamma,)`. The harness `exercises.scan_hook` runs it through a chunk loop, and the
# cell checks the result against the loop:

# %%
@triton.jit
def returns_prologue(X, P, offs, t, m, T):  # X = (rewards, terminated), P = (gamma,)
    r = tl.load(X[0] + offs, mask=m, other=0.0)  # offs = row * T + t, under the mask m = t < T
    done = tl.load(X[1] + offs, mask=m, other=0) != 0
    return tl.zeros_like(r) + P[0], r, done  # (a_t, b_t, reset_t) = (gamma, r_t, terminated_t), each a block


r_hook = np.random.default_rng(2).normal(size=(2, 100))  # 100 steps: two chunks of 64, the second padded
d_hook = np.random.default_rng(3).random((2, 100)) < 0.05  # episode ends
inputs_hook = (torch.tensor(r_hook, dtype=torch.float32, device=DEVICE), torch.tensor(d_hook, device=DEVICE))
y_hook = exercises.scan_hook(returns_prologue, inputs_hook, (0.9,), chunk=64)
np.testing.assert_allclose(y_hook.cpu().numpy(), reference.discounted_returns(r_hook, gamma=0.9, terminated=d_hook),
                           rtol=1e-4, atol=1e-5)
print("returns_prologue, run by exercises.scan_hook on 2 x 100 steps with episode ends == the loop")

# %% [markdown]
# **Exercise `hooked_scan`.** Write the loop once, with the prologue passed in.
# `hooked_scan(prologue, inputs, params, chunk, initial=0.0)` launches one kernel, say
# `hooked_kernel(X, P, Y, T, START, PROLOGUE: tl.constexpr, CHUNK: tl.constexpr)`. On each chunk of a
# row, the kernel calls `a, b, reset = PROLOGUE(X, P, offs, t, m, T)`.
#
# * **Inputs:** `prologue` is a `@triton.jit` function that the checker passes: the discounted
#   return's, then GAE's. `inputs`, the kernel's `X`, is a tuple of contiguous `(n_rows, T)`
#   tensors. `params`, the kernel's `P`, is a tuple of floats. Then come `chunk` and `initial`,
#   the value $y_T$ after the row, the kernel's `START` (0 by default).
# * **The prologue's side:** it loads its inputs at `offs = row * T + t` under the mask
#   `m = t < T`, and returns $(a_t, b_t, \text{reset}_t)$. Past $T$, its triples are junk (the
#   checker's set the flag there). Your loop must replace them by $(1, 0, \text{false})$.
# * **The flag:** select on it exactly as in `reset_scan`.
# * **Returns:** $y$, an `(n_rows, T)` float32 tensor: $y_t = b_t + a_t y_{t+1}$ from
#   $y_T$ = `initial`. The carry starts there: `carry = START`.
# * **Edge cases:** a row shorter than a chunk (padding lanes), GAE over several chunks with
#   terminations, NaN rewards in later episodes, and `initial = 10`, on whole chunks and then with padding lanes.
#
# <details><summary>Hint 1: where to start</summary>
#
# Start from your `reset_scan` kernel. Replace its loads and its triple by the prologue's call,
# made as in `weighted_sum_kernel`. Try your loop with `returns_prologue` above (Hint 3).
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Launch `n_rows` programs. Pass `X = tuple(x.contiguous() for x in inputs)`,
#   `P = tuple(params)` and `PROLOGUE=prologue`. Triton takes a tuple of tensors, not a list.
# * The output: `torch.empty(n_rows, T, dtype=torch.float32, device=...)`, passed as `Y`.
# * In each chunk: `offs = row * T + t`, then `a, b, reset = PROLOGUE(X, P, offs, t, m, T)`.
# * Outside `m`, overwrite the triple with the identity $(1, 0, \text{false})$: `tl.where` for `a`
#   and `b`, and `reset & m` for the flag.
# * A flag left set past $T$ keeps `initial` out of the last chunk. The checker's last case
#   passes `initial = 10`. With $\gamma = 0.5$ and a last reward of 3,
#   $y_{T-1} = 3 + 0.5 \cdot 10 = 8$, and the stray reset makes it 3.
# * Scan the triple $(a, b, \text{reset})$ with `reset_combine`.
# * The rest is `reset_scan`: select on the carry, store $y$, update the carry.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Take `returns_prologue` from above. On one row, with $\gamma = 0.5$, $r = (1, 2, 3)$ and an
# episode end at $t = 1$, it gives $y_2 = 3$, $y_1 = 2$ and $y_0 = 1 + 0.5 \cdot 2 = 2$. With
# `chunk = 4`, the fourth lane is past $T$. Run it again with `initial = 10`: then
# $y_2 = 3 + 0.5 \cdot 10 = 8$. If you get 3 there, `initial` never entered. If you get 5.5, the
# lane past $T$ was not the identity: it applied $\gamma$ once more. Also put a NaN in $r_2$: $y_0$
# and $y_1$ must stay 2 and 2.
#
# ```python
# import triton
# import triton.language as tl
#
#
# @triton.jit
# def returns_prologue(X, P, offs, t, m, T):  # the prologue above, again, so that this block runs on its own
#     r = tl.load(X[0] + offs, mask=m, other=0.0)
#     done = tl.load(X[1] + offs, mask=m, other=0) != 0
#     return tl.zeros_like(r) + P[0], r, done
#
#
# hint_r = torch.tensor([[1.0, 2.0, 3.0]], device=DEVICE)
# hint_term = torch.tensor([[False, True, False]], device=DEVICE)
# print(exercises.guarded(hooked_scan, returns_prologue, (hint_r, hint_term), (0.5,), 4).tolist())  # must print [[2.0, 2.0, 3.0]]
# print(exercises.guarded(hooked_scan, returns_prologue, (hint_r, hint_term), (0.5,), 4, initial=10.0).tolist())  # must print [[2.0, 2.0, 8.0]]
# ```
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# a, b, reset = PROLOGUE(X, P, offs, t, m, T)
# a = tl.where(m, a, ___)  # ___, ___, ___: the triple that changes nothing, in the lanes past T
# b = tl.where(m, b, ___)
# reset = reset & ___
# a_s, b_s, k_s = tl.associative_scan((a, b, reset), 0, reset_combine, reverse=True)
# # the launch: hooked_kernel[(n_rows,)](X, P, y, T, initial, PROLOGUE=prologue, CHUNK=chunk)
# ```
#
# </details>

# %%
def hooked_scan(prologue, inputs, params, chunk, initial=0.0):
    # YOUR CODE
    raise NotImplementedError

# %%
exercises.attempt("hooked_scan", hooked_scan)

# %% [markdown]
# ## 3. The package's kernel: where your parts went
#
# The package's kernel, in `rltriton_lite/scan.py`, is your `gae_kernel` grown up. Its hooks are
# passed in, as in your `hooked_scan`. Its chunk loop is the function `scan._walk`. Its combine,
# `scan.combine`, is your `reset_combine`. Each part of your `hooked_scan` has its line in `_walk`,
# in this order:
#
# | your part | its line in `scan._walk` |
# | --- | --- |
# | the prologue's call | `PROLOGUE(...)` returns your `a, b, reset` |
# | the padding | your three lines |
# | the scan and the select | `_scan_chunk(...)` does both |
# | the store | `EPILOGUE(...)` |
# | the carry | `carry = after` |
#
# The next cell prints those lines of `_walk`, each beside its part.

# %%
import inspect

from rltriton_lite import scan

PARTS = [("PROLOGUE(", "the prologue's call"), ("tl.where(valid, a", "the padding"),
         ("tl.where(valid, b", "the padding"), ("reset & valid", "the padding"),
         ("_scan_chunk(", "the scan and the select"), ("EPILOGUE(", "the store"), ("carry = after", "the carry")]
walk_src = [line.strip() for line in inspect.getsource(getattr(scan._walk, "fn", scan._walk)).splitlines()]
shown = [(line, part) for line in walk_src for key, part in PARTS if key in line]
for line, part in shown:
    print(f"{part:24s} | {line}")
assert [part for _, part in shown] == ["the prologue's call"] * 2 + ["the padding"] * 3 + [
    "the scan and the select", "the store", "the carry"]  # the table's order

# %% [markdown]
# `PROLOGUE` is called twice, on the two sides of an `if`. The second call also passes a
# look-ahead, `(v_next, found)`, for scans with a mask (notebook 12): skip it here.
# The printout has a few names your kernel did not need, such as `valid`, which plays your `m`;
# [notebook 13c, section 6.1](13c_inside_the_package.ipynb#6.1-Your-kernel's-lines-in-the-package's-chunk-loop)
# explains each.
#
# One part of yours is not in the table: the address `R + row * T + t`. A tensor's *stride*
# along a dimension is the distance, in elements, between neighbours along it. The package's
# prologues read their inputs with `load`, from `rltriton_lite.tile`, which builds each address
# from the tensor's strides. So `load` reads time-major and batch-major buffers alike, without a
# copy. Notebook 02's appendix reads one such prologue line by line.
#
# **`rl.gae`** computes what your `gae_kernel` computes. The cell below checks it on rows of 600
# steps with episode ends:

# %%
rng = np.random.default_rng(0)
r_, v_, nv_ = rng.normal(size=(3, 2, 600))
d_ = rng.random((2, 600)) < 0.05
as_t = lambda x: torch.tensor(x, dtype=torch.float32, device=DEVICE)  # noqa: E731
adv = rl.gae(as_t(r_), as_t(v_), next_values=as_t(nv_), terminated=torch.tensor(d_, device=DEVICE),
             gamma=0.9, lambda_=0.8, backend=KERNEL).advantages
expected, _ = reference.gae(r_, v_, next_values=nv_, terminated=d_, gamma=0.9, lambda_=0.8)
np.testing.assert_allclose(adv.cpu().numpy(), expected, rtol=1e-4, atol=1e-5)
print("rl.gae == the loop on 2 x 600")

# %% [markdown]
# **Try it.** CleanRL and SB3 store a rollout time-major, as `(T, B)`, and `load` reads it in
# place. Call `rl.gae` with `time_dim=0` on the transposed views `as_t(r_).T`, and so on, of shape
# `(600, 2)`. Set `adv_tm` to its advantages, and the cell checks them against the loop.
# Hint: copy the call in the cell above, add `.T` to each of its four tensors, and add `time_dim=0`.

# %%
adv_tm = None  # your call: rl.gae(..., time_dim=0, backend=KERNEL).advantages

if adv_tm is None:
    print("not attempted yet")
elif tuple(adv_tm.shape) != (600, 2):
    print(f"WRONG: advantages of shape {tuple(adv_tm.shape)}: expected (T, B) = (600, 2)")
elif not np.allclose(adv_tm.T.cpu().numpy(), expected, rtol=1e-4, atol=1e-5):
    batch_major = rl.gae(as_t(r_).T, as_t(v_).T, next_values=as_t(nv_).T, terminated=torch.tensor(d_, device=DEVICE).T,
                         gamma=0.9, lambda_=0.8, backend=KERNEL).advantages  # the views read as 600 rows of 2 steps
    if np.allclose(adv_tm.cpu().numpy(), batch_major.cpu().numpy(), rtol=1e-4, atol=1e-5):
        print("WRONG: these are the advantages of 600 rows of 2 steps each: the scan ran along the axis of "
              "length 2, the batch, not along time")
    else:
        print(f"WRONG: right shape, but up to {np.abs(adv_tm.T.cpu().numpy() - expected).max():.3g} away from the loop")
else:
    print("correct: time-major rl.gae == the loop")

# %% [markdown]
# ## Exercises
#
# The checked exercises of this notebook are in sections 1 and 2.
#
# Without a checker:
#
# *(Answer each in its cell below.)*
#
# 1. Time your `reset_scan` with `CHUNK` 16 and 1024 on a GPU, at 4096 rows × 128 steps and at
#    8 rows × 100,000 steps. Why do the best chunk sizes differ? Start from the number of
#    programs at each shape, and whether it depends on `CHUNK`: an H200 has 132 streaming
#    multiprocessors, each running a few programs at once. *Without a GPU:* for each shape and
#    each `CHUNK`, count the programs, the chunks each program walks one after another, and the
#    padding lanes of its last chunk. Predict the faster `CHUNK` at each shape, and say why.

# %% [markdown] tags=["answer-1"]
# **Answer 1.** *Your answer here (code for it: in cells under this one).*

# %% [markdown]
# ## What you now know
#
# * An episode end is a reset flag, selected with `tl.where` in the combine and on the carry.
#   Never multiply by 0: a select keeps a NaN or `inf` in its own episode.
# * Hooks, a prologue and an epilogue, are `@triton.jit` functions passed to one chunk loop as
#   `tl.constexpr` arguments. Tuples of pointers and `tl.static_range` let one loop take any
#   number of inputs.
# * The package's `load` builds every address from a tensor's strides. So it reads a time-major,
#   transposed or sliced buffer in place.
# * `scan.py` is this kernel plus speed: `scan._walk` is the chunk loop and `scan.combine` is your
#   `reset_combine`.

# %% [markdown]
# ## Appendix: behind the scenes
#
# Nothing here is needed for the exercises. It covers the fine print of section 2's Triton, the
# harness's source, and notebook 00's gradient on the package's kernel.
#
# ### The fine print of section 2's four pieces
#
# * `if FLAG:` is not the trap of notebook 00b, section 1, where `if` tests a *block* of run-time
#   values ([GPU note 1](00b_triton_from_zero.ipynb#GPU-notes)). A constexpr is one value, known before the kernel runs.
# * `len(X)` is known at compile time because the tuple's length is part of what the kernel is
#   compiled for.
#
# ### Why a combine cannot be an argument
#
# Rule 1 of section 2 is a gap in Triton, in the versions the course runs on, not a rule of the
# language. A call such as `HOOK(x)` unwraps a `tl.constexpr` argument into its function. But
# `tl.associative_scan` passes its combine on still wrapped, so the compile fails with
# `'constexpr' object has no attribute 'signature'`. The interpreter compiles nothing, so only a
# GPU, or the checker's compile for sm_90, shows it. The folded cell below compiles both.

# %% jupyter={"source_hidden": true}
# Checks: the appendix's gap (rule 1), a hook may be a tl.constexpr argument and a combine may not (CI runs them; skip when reading)
@triton.jit
def _double(x):  # a hook
    return 2 * x


@triton.jit
def _add(u, v):  # a combine
    return u + v


@triton.jit
def _hook_as_argument(X, Y, HOOK: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(Y + i, HOOK(tl.load(X + i)))


@triton.jit
def _combine_as_argument(X, Y, COMBINE: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(Y + i, tl.associative_scan(tl.load(X + i), 0, COMBINE))


if os.environ.get("TRITON_INTERPRET") == "1":  # the checker's compile for sm_90, which needs no GPU
    _, _compile_sm90 = exercises._frontend_jit()
    _xy = (torch.ones(4), torch.empty(4))
    _compile_sm90(_hook_as_argument, (*_xy, _double, 4), {})  # compiles
    try:
        _compile_sm90(_combine_as_argument, (*_xy, _add, 4), {})
        _refused = None  # compiled: the text's claim would be wrong
    except Exception as e:  # noqa: BLE001 - the compiler's error, raised from the scan's still-wrapped combine
        _refused = e.__cause__ or e
    assert "'constexpr' object has no attribute 'signature'" in str(_refused), _refused

# %% jupyter={"source_hidden": true}
# Checks: section 3's table, in the package's source (CI runs them; skip when reading)
from rltriton_lite import scan, tile  # noqa: E402

source_of = lambda f: inspect.getsource(getattr(f, "fn", f))  # noqa: E731
walk_code = [line.strip() for line in source_of(scan._walk).splitlines()]
# the hooks are passed in, as tl.constexpr arguments of _walk
assert "PROLOGUE: tl.constexpr" in source_of(scan._walk) and "EPILOGUE: tl.constexpr" in source_of(scan._walk)
# the table's five parts, each a line of _walk, in this order
parts = ["a, b, reset, valid, keep = PROLOGUE(", "a = tl.where(valid, a, 1.0)", "b = tl.where(valid, b, 0.0)",
         "reset = reset & valid", "= _scan_chunk(", "EPILOGUE(", "carry = after"]
at = [next(i for i, line in enumerate(walk_code) if part in line) for part in parts]
assert at == sorted(at) and len(set(at)) == len(parts)
# _scan_chunk's first value is y, and its third, after, the next carry
(scan_line,) = [line for line in walk_code if "= _scan_chunk(" in line]
returned = [name.strip() for name in scan_line.split(" = ")[0].split(",")]
assert returned[0] == "y" and returned[2] == "after"
# the prologue's call, twice: the second also passes the look-ahead (notebook 12's)
calls = [line for line in walk_code if "= PROLOGUE(" in line]
assert len(calls) == 2 and calls[1].endswith(", (v_next, found))") and "_look_ahead(" in source_of(scan._walk)
# scan.combine is reset_combine: a reset in the second operand selects it alone
assert all(part in source_of(scan.combine) for part in ("tl.where(k2, a2, a2 * a1)", "tl.where(k2, b2, b2 + a2 * b1)",
                                                        "k1 | k2"))
# the package's prologues return the triple plus valid and keep; valid: m narrowed by a mask; keep: for the epilogue
assert "-> (a, b, reset, valid, keep)" in scan.__doc__ and "``keep`` is a tuple" in scan.__doc__
assert source_of(rl.returns._gae_prologue).endswith("return gamma * lam, delta, done, valid, (v,)\n")  # GAE keeps V ...
assert "y + keep[0]" in source_of(rl.returns._gae_epilogue)  # ... for its returns, advantages + V
assert "valid = load_mask(X[MASK], SX[MASK], row, t, m)" in source_of(rl.episode.step)
assert "if a mask is given, not padding" in source_of(tile.load_mask)
# the strides, below: tile.load builds each address from the row and time strides
assert "p + row * s[0] + t * s[1]" in source_of(tile.load)
# the names under the printout (13c, section 6.1): the prologue's arguments; ACC, the type the scan computes in; the padding tests valid
assert "PROLOGUE(X, SX, P, row, t, m, T, ACC)" in source_of(scan._walk)
assert "a = tl.where(valid, a, 1.0).to(ACC)" in source_of(scan._walk) and "_scan_chunk(a, b, reset, carry" in source_of(scan._walk)
assert "load(X[REWARDS], SX[REWARDS], row, t, valid, 0.0, ACC)" in source_of(rl.returns._gae_prologue)

# %% [markdown]
# ### The harness's source
#
# The cell below prints `exercises._scan_hook_kernel`, the kernel behind `exercises.scan_hook`,
# to compare with your `hooked_scan`. It answers `reset_scan` and `hooked_scan`, so it prints
# nothing until you set `SHOW_HARNESS = True`. What to look for in it:
#
# * It is your `hooked_scan` plus `if REVERSE:`, the chunk order, and `if EPILOGUE is not None:`,
#   an epilogue compiled in only when one is passed.
# * Its helper `_scan_steps` does what your loop does. It makes the lanes outside `m` the
#   identity, and it selects in the combine and on the carry.
# * Its epilogue also gets `y_in`, the value that entered each step: $y_{t+1}$ in a return.
#   Notebook 04 uses it.

# %%
SHOW_HARNESS = False  # set True after you have solved reset_scan and hooked_scan: the source answers both
if SHOW_HARNESS:
    print(inspect.getsource(getattr(exercises._scan_hook_kernel, "fn", exercises._scan_hook_kernel)))
    print(inspect.getsource(getattr(exercises._scan_steps, "fn", exercises._scan_steps)))
else:
    print("the harness's source is hidden: set SHOW_HARNESS = True once reset_scan and hooked_scan pass")

# %% jupyter={"source_hidden": true}
# Checks: the bullets above, in the harness's source; hooked_scan's Hint 2 (CI runs them; skip when reading)
harness = source_of(exercises._scan_hook_kernel)
assert "if REVERSE:" in harness and "if EPILOGUE is not None:" in harness and "EPILOGUE: tl.constexpr" in harness
assert "out = EPILOGUE(X, P, offs, t, m, T, y, y_in)" in harness  # the epilogue gets y_in
steps_src = source_of(exercises._scan_steps)
assert "a = tl.where(m, step[0], 1.0)" in steps_src and "k = m & (step[2] != 0)" in steps_src
assert "tl.where(m, step[1], 0.0), k)" in steps_src
assert "_combine, reverse=REVERSE)" in steps_src and "tl.where(k_s, b_s, b_s + a_s * carry)" in steps_src
assert "tl.where(k2, a2, a2 * a1), tl.where(k2, b2, b2 + a2 * b1), k1 | k2" in source_of(exercises._combine)
# hooked_scan's Hint 2: a reset left set past T drops a value y_T = 10 after the row (a padding lane (1, 0) with
# a reset is, in rl.linear_scan's pairs, the step (0, 0))
assert reference.linear_scan([0.5], [3.0], initial=10.0).tolist() == [8.0]
assert reference.linear_scan([0.5, 0.0], [3.0, 0.0], initial=10.0)[0] == 3.0
assert "reset | ~m" in source_of(exercises._undefined_outside)  # the contract: the checker's prologues set the flag past T

# %% [markdown]
# ### Notebook 00's gradient on the package's kernel
#
# `rl.linear_scan` is the package's kernel with a prologue that only loads `a` and `b`. Its
# gradient, the transposed scan of notebook 00's section 8, runs on the same kernel. On a batch, it
# matches autograd through the PyTorch path (`backend="torch"`):

# %%
a64 = torch.rand(2, 30, dtype=torch.float64, device=DEVICE, requires_grad=True)
b64 = torch.randn(2, 30, dtype=torch.float64, device=DEVICE, requires_grad=True)
w = torch.randn(2, 30, dtype=torch.float64, device=DEVICE)
g_kernel = torch.autograd.grad((rl.linear_scan(a64, b64, backend=KERNEL) * w).sum(), (a64, b64))
g_torch = torch.autograd.grad((rl.linear_scan(a64, b64, backend="torch") * w).sum(), (a64, b64))
for gk, gt in zip(g_kernel, g_torch):
    torch.testing.assert_close(gk, gt)
print("kernel gradients match autograd")

# %% [markdown]
# ### Resets in the gradient (notebook 00, section 8)
#
# Reading the next episode's $y_{t+1}$ in the gradient is harmless when $a$ is a constant such as
# $\gamma$, and a hazard only when $a$ is learned. Here is why.
#
# The transposed scan's step $t$ is the pair $(a_{t-1}, dy_t)$. It is a reset where $a_{t-1} = 0$.
# There $y_t$ does not reach $y_{t-1}$, so $g_t = dy_t$ exactly. The kernel selects there, so an
# `inf` or NaN in $g_{t-1}$ stays out of $g_t$. The folded check below tries this.
#
# One gradient still reads across an episode end: $\partial L/\partial a_t = g_t\,y_{t+1}$ reads
# the next episode's $y_{t+1}$. So a NaN there makes that one gradient NaN, while the earlier
# episode's $y$ and $\partial L/\partial b$ stay clean. A constant $a$ needs no gradient, so nothing
# reads that NaN. When $a$ is learned, build the scan's input with a select,
# `torch.where(done, 0.0, a)`, whose backward drops that NaN.

# %% jupyter={"source_hidden": true}
# Checks: the transposed scan selects at a reset (CI runs them; skip when reading)
a_r = torch.tensor([[0.5, 0.0, 0.5, 0.5]], dtype=torch.float64, device=DEVICE, requires_grad=True)  # step 1 resets
b_r = torch.ones(1, 4, dtype=torch.float64, device=DEVICE, requires_grad=True)
dy_r = torch.tensor([[float("inf"), float("nan"), 1.0, 1.0]], dtype=torch.float64, device=DEVICE)  # g[0] = inf, g[1] = NaN
_, g_r = torch.autograd.grad((rl.linear_scan(a_r, b_r, backend=KERNEL) * dy_r).sum(), (a_r, b_r))
assert torch.isinf(g_r[0, 0]) and torch.isnan(g_r[0, 1])
assert g_r[0, 2].item() == 1.0 == dy_r[0, 2].item()  # g[2] = dy[2]: the pair (a[1], dy[2]) = (0, 1) is a reset, not 1 + 0 * NaN
assert g_r[0, 3].item() == 1.0 + 0.5 * 1.0  # after it, the ordinary step g[3] = dy[3] + a[2] g[2]
# dL/da at the episode end reads the next episode's y: NaN there; a learned a put in by a select stays clean
a_learned = torch.tensor([[0.5, 0.7, 0.5, 0.5]], dtype=torch.float64, device=DEVICE, requires_grad=True)
done_r = torch.tensor([[False, True, False, False]], device=DEVICE)  # step 1 ends the first episode
b_nan = torch.tensor([[1.0, 1.0, float("nan"), 1.0]], dtype=torch.float64, device=DEVICE)  # a NaN in the next one
L_first = lambda a_in: rl.linear_scan(a_in, b_nan, backend=KERNEL)[:, :2].sum()  # noqa: E731  (the first episode's y)
(ga_product,) = torch.autograd.grad(L_first(a_learned * ~done_r), a_learned)  # the reset as a product
(ga_select,) = torch.autograd.grad(L_first(torch.where(done_r, 0.0, a_learned)), a_learned)  # as a select
assert torch.isnan(ga_product[0, 1]) and ga_select[0].tolist() == [1.0, 0.0, 0.0, 0.0]
