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
# # 00 — Credit assignment is an associative scan
#
# * **You will learn:** why a loop that runs backwards in time can run in parallel. How episode
#   ends, padding and long rows fit in. Why the gradient is a scan too.
# * **Time:** 1.5–2 h for the reading and the three checked exercises; 3–4 h with the open
#   questions. Plan one sitting for 00 (1.5–2 h), two for 00b (3–6 h in all), and two for
#   00c (2.5–4.5 h in all).
# * **Needs:** Python, NumPy and PyTorch tensors. No GPU.
#
# <details><summary>The minimum path</summary>
#
# * **In this notebook:** sections 1–7 and their checked exercises. Section 8 can wait until
#   notebook 01.
# * **Across 00–00d:** the path above, all of 00b, and 00c without its open question: about
#   7–12.5 h in all, by the notebooks' own estimates. Notebook 00d is optional.
#
# </details>
#
# Every return and advantage in this course, from GAE to V-trace, is a loop that runs **backwards
# in time**:
#
# $$y_t = b_t + a_t \, y_{t+1}, \qquad t = T-1, \dots, 0.$$
#
# Here $y_t$ is the value at step $t$, $b_t$ is what step $t$ adds (a reward, say), and $a_t$
# scales the next value (a discount, say).
#
# A GPU is fast only with thousands of independent pieces of work. Yet this loop can run in
# parallel, because each step is an *affine map*, $y \mapsto a\,y + b$. Composing such maps is
# *associative*: the steps may be grouped in any way that keeps their order. New words are in
# [`GLOSSARY.md`](GLOSSARY.md).
#
# <details><summary>The symbols of this notebook</summary>
#
# | symbol | means |
# | --- | --- |
# | $y_t$ | the scan's output at step $t$: $y_t = b_t + a_t\,y_{t+1}$ |
# | $a_t$, $b_t$ | step $t$'s affine map $y \mapsto b_t + a_t\,y$: $a_t$ scales the value after, $b_t$ is what step $t$ adds |
# | $(a_1, b_1)$, $(a_2, b_2)$ | a combine's first and second operands ([the order rule, §3](#3.-The-backward-recurrence-as-a-reverse-scan)), never time steps. Section 8 writes step 2's multiplier as $a[2]$ |
# | $\kappa_t$ (`k` in code) | step $t$'s reset flag. Where it is set, the step ignores the value after it (section 4) |
# | $A_t$, $B_t$, $K_t$ (`a_s`, `b_s`, `k_s`) | the composed map of steps $t$ to the chunk's end, and its reset flag (section 6) |
# | $g[t]$ | the total gradient with respect to $y_t$ (section 8, which writes time steps in brackets) |
#
# </details>
#
# Without a GPU, the next cell runs the kernels on the CPU, in Triton's *interpreter*. Import
# `rltriton_lite` before any scan runs there (notebook 00b explains).

# %%
import os
from functools import reduce

import numpy as np
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # Triton kernels as NumPy, on the CPU

import matplotlib.pyplot as plt

import rltriton_lite as rl
from rltriton_lite import exercises, reference

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# the Triton kernels: compiled on a GPU, in the interpreter on a CPU (backend="auto" takes the PyTorch path on a CPU)
KERNEL = "triton"
rng = np.random.default_rng(0)
print("kernels run", "compiled on " + torch.cuda.get_device_name() if DEVICE == "cuda" else "in the Triton interpreter")

# %% [markdown]
# ## 1. What a scan is
#
# A *scan* of $x_0, \dots, x_{n-1}$ under an operator $\oplus$ returns every
# prefix: $x_0,\; x_0 \oplus x_1,\; \dots,\; x_0 \oplus \dots \oplus x_{n-1}$. Under $+$, the
# scan of $(3, 1, 4, 1)$ is $(3, 4, 8, 9)$. This is the *inclusive* scan: prefix $i$ includes $x_i$.
# The operator's *identity* is the element that changes nothing, $0$ for $+$.
#
# A loop takes $n - 1$ rounds, one after another. The *Hillis–Steele* scan takes only
# $\lceil \log_2 n \rceil$ rounds: 4 for the 13 numbers below. In round $k = 1, 2, 4, \dots$,
# every element combines with the one $k$ places before it, all at once. On $(3, 1, 4, 1)$, round 1
# gives $(3, 4, 5, 5)$ and round 2 gives $(3, 4, 8, 9)$.
#
# This regroups the operations: $(x_0 \oplus x_1) \oplus (x_2 \oplus x_3)$ instead of
# $((x_0 \oplus x_1) \oplus x_2) \oplus x_3$. The result is the same when $\oplus$ is
# **associative**, $(x \oplus y) \oplus z = x \oplus (y \oplus z)$: the brackets may move, but the
# operands keep their order. The next cell checks both scans on sums:

# %%
def scan_sequential(x, op):
    out, acc = [x[0]], x[0]
    for v in x[1:]:
        acc = op(acc, v)
        out.append(acc)
    return out


def scan_hillis_steele(x, op):
    """ceil(log2(n)) rounds; in the round of offset k (1, 2, 4, ...) every element combines with the one k before it."""
    x, k = list(x), 1
    while k < len(x):
        x = [x[i] if i < k else op(x[i - k], x[i]) for i in range(len(x))]
        k *= 2
    return x


x = rng.integers(0, 10, 13).tolist()
add = lambda u, v: u + v  # noqa: E731
assert scan_hillis_steele([3, 1, 4, 1], add) == [3, 4, 8, 9]  # the example above
assert [k for k in (1, 2, 4, 8, 16) if k < len(x)] == [1, 2, 4, 8]  # 13 numbers: 4 rounds, ceil(log2 13)
assert scan_sequential(x, add) == scan_hillis_steele(x, add) == np.cumsum(x).tolist()
print(x, "->", scan_sequential(x, add))

# %% [markdown]
# Sums *commute*: $u + v = v + u$. So a test on sums cannot catch swapped operands. Joining strings
# is associative but does not commute, since `"ab"` is not `"ba"`. A scan that swaps operands gives
# wrong prefixes on strings. (Blelloch's scan, a third, is in the appendix, for question 2.)

# %%
letters = list("abcdefghijklm")
join = lambda u, v: u + v  # noqa: E731
prefixes = ["".join(letters[:i + 1]) for i in range(len(letters))]
assert scan_sequential(letters, join) == scan_hillis_steele(letters, join) == prefixes
print(prefixes[-1])

# %% [markdown]
# ## 2. One step of the loop is an affine map
#
# Step $t$ turns $y_{t+1}$ into $y_t$ by the *affine map* $f_t(y) = a_t\,y + b_t$. Applying step
# $t+1$, then step $t$, gives another affine map:
#
# $$f_t(f_{t+1}(y)) = a_t(a_{t+1} y + b_{t+1}) + b_t = (a_t a_{t+1})\,y + (b_t + a_t b_{t+1}).$$
#
# So a map is a pair $(a, b)$. `combine(first, second)` returns the map that applies `first`, then
# `second`. In the loop, `first` is step $t+1$ and `second` is step $t$:
#
# $$(a_1, b_1) \oplus (a_2, b_2) = (a_2 a_1,\; b_2 + a_2 b_1), \qquad \text{the map } y \mapsto a_2(a_1 y + b_1) + b_2.$$
#
# The subscripts 1 and 2 name the operands, not time steps. The identity is $(1, 0)$. The operator
# does not commute, but it is associative, and that is all a scan needs. Why: a pair *is* the map
# $y \mapsto a y + b$, $\oplus$ composes maps, and composing functions is always associative.

# %%
def combine(first, second):  # the first operand is the map applied first (the order rule, section 3)
    """first ⊕ second: the first operand applied first, then the second."""
    (a1, b1), (a2, b2) = first, second
    return (a2 * a1, b2 + a2 * b1)


pairs = rng.normal(size=(1000, 3, 2))
for x_, y_, z_ in pairs:
    left = combine(combine(x_, y_), z_)
    right = combine(x_, combine(y_, z_))
    np.testing.assert_allclose(left, right, rtol=1e-12)
identity = (1.0, 0.0)
for p in pairs[:, 0]:
    np.testing.assert_allclose(combine(identity, p), p)
    np.testing.assert_allclose(combine(p, identity), p)
print("associative on 1000 random triples; (1, 0) is the identity")

# %% [markdown]
# ## 3. The backward recurrence as a reverse scan
#
# **For returns: `combine(later, earlier)`.** This section shows why.
#
# The loop starts from $y_T$, the value after the last step, and applies the maps from the end:
# $y_t = f_t(f_{t+1}(\cdots f_{T-1}(y_T)))$. So it is a **reverse scan**: its **scan order**, the
# order in which it takes the steps, runs from $t = T-1$ down to 0. To run it, reverse the pairs,
# scan them with the same `combine`, and reverse the result: step $t$ then holds the map from $y_T$
# to $y_t$.
#
# A tree scan combines *runs* of consecutive steps, each already composed into one pair. Which run
# is the first operand?
#
# > **The order rule.** In `combine(first, second)`, `first` `(a1, b1)` is the operand applied
# > first, and `second` `(a2, b2)` is applied to its output.
# >
# > In a reverse scan, `first` is the later run, because $y_8$ enters step 7 first.
# >
# > The drawing shows a reverse scan's last combine on 8 steps, so read it right to left: `first`
# > is steps 4–7.
# >
# > ```text
# >   time t:   0     1     2     3     4     5     6     7     → y_8, the value after the row
# >             └ second operand ─┘     └─ first operand ─┘
# >                  (a2, b2)                (a1, b1)
# >
# >   combine(first, second) = (a2·a1, b2 + a2·b1), the map y ↦ b2 + a2·(b1 + a1·y):
# >       the first operand acts on y_8, then the second
# > ```
#
# The next cell makes the rule visible. It runs a reverse tree scan on four steps labelled
# `'s0'` to `'s3'`, with a combine that joins labels, and prints every call. `'s3 s2'` means step 3,
# then step 2. In every call, `first` is the later run:

# %%
def tree_reverse_scan(xs, combine):
    """A reverse Hillis–Steele scan: in round k, element t becomes combine(element t + k, element t)."""
    xs, k = list(xs), 1
    while k < len(xs):
        for t in range(len(xs) - k):
            print(f"round k={k}: combine(first={xs[t + k]!r}, second={xs[t]!r})")
        xs = [combine(xs[t + k], xs[t]) if t + k < len(xs) else xs[t] for t in range(len(xs))]
        k *= 2
    return xs


runs = tree_reverse_scan(["s0", "s1", "s2", "s3"], lambda first, second: first + " " + second)
print("result:", runs)
assert runs == ["s3 s2 s1 s0", "s3 s2 s1", "s3 s2", "s3"]  # step t: the steps from the end down to t, the last first

# %% [markdown]
# The next cell checks the reverse scan and the drawing's combine against the loop, on numbers:

# %%
T = 8  # the drawing's 8 steps
a, b, y_end = rng.uniform(0.5, 1.0, T), rng.normal(size=T), 0.7
steps = list(zip(a, b))  # the pairs (a_t, b_t) in time order, t = 0, ..., 7

loop = np.zeros(T)
y = y_end
for t in reversed(range(T)):
    y = b[t] + a[t] * y
    loop[t] = y

# reverse the pairs, scan, and reverse the composed maps back into time
composed = scan_hillis_steele(steps[::-1], combine)[::-1]
from_scan = np.array([a_s * y_end + b_s for a_s, b_s in composed])  # (a_s, b_s): a scanned map
np.testing.assert_allclose(from_scan, loop, rtol=1e-12)
np.testing.assert_allclose(reference.linear_scan(a, b, initial=y_end), loop, rtol=1e-12)
# the drawing's last combine: each run composed from its end (in scan order), then combine(first, second) gives y_0
first = reduce(combine, steps[4:][::-1])  # the first operand: steps 7, 6, 5, 4
second = reduce(combine, steps[:4][::-1])  # the second operand: steps 3, 2, 1, 0
a_s, b_s = combine(first, second)
np.testing.assert_allclose(a_s * y_end + b_s, loop[0], rtol=1e-12)
print(np.round(loop, 3))

# %% [markdown]
# ### How the exercises work
#
# Checked exercises work alike in every notebook:
#
# * Write your function in the starter's cell, then run the `exercises.attempt` cell below it. It
#   prints `correct on every case` once your function passes.
# * A wrong answer prints `WRONG.`, the failing case and the first wrong step in the scan's order
#   (the latest time step, for a reverse scan), often with a hint. `print(exercises.fix(name))`
#   shows the fix.
# * Four folded hints follow each task. Open them in order, only when you are stuck. Hint 4 is
#   nearly the solution.
#
# <details><summary>Details: errors, the task's text, the solutions (optional)</summary>
#
# * While the starter is untouched, `attempt` prints `not attempted yet`. The
#   [questions at the end](#Exercises) have no checker.
# * A wrong answer does not stop Run All, and neither does an error raised in your function. For
#   an error, `attempt` prints `ERROR.`, the error, the case and your line that raised it.
#   `exercises.check(name, fn)` raises it with its whole traceback.
# * A longer task lists its **Inputs**, what it **Returns** and the **Edge cases** the checker
#   tries. `print(exercises.task(name))` restates a task. The solution is in
#   `notebooks/solutions/<name>.py` (`%load solutions/<name>.py` in the starter's cell loads it).
# * Kernel exercises, from notebook 00b on, also follow the
#   [Triton rules](00b_triton_from_zero.ipynb#Triton-rules), the card at the end of 00b.
#
# </details>

# %% [markdown]
# ### Exercise: `matrix_compose`
#
# Write `combine` for maps $y \mapsto A\,y + b$, where $A$ is a matrix and $b$ a vector.
# `matrix_compose(p, q)` returns the map that applies `p` first, then `q`. Matrices do not commute,
# so keep the order of the products.
#
# <details><summary>Hint 1: where to start</summary>
#
# Section 2 built `combine` by applying one map to the other's output. Do the same here. Write
# what `p` does to $y$. Then apply `q` to that.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * `matrix_compose(p, q)` is `combine(first, second)` with matrices: `p` is the first operand.
# * Write $z = p(y)$ with $A_1$ and $b_1$.
# * Then `q` acts on $z$, not on $y$. Write $q(z)$ and put your $z$ in.
# * Expand it. The term that multiplies $y$ is the matrix part. What is left is the vector part.
# * In a product $M N y$, which matrix touches $y$ first? Keep that order in your matrix part.
# * In NumPy, `@` is the matrix product. `*` multiplies element by element.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Take $A_1 = \begin{pmatrix} 0 & 1 \\ 1 & 0 \end{pmatrix}$ (it swaps the two entries),
# $b_1 = (1, 0)$, and $A_2 = \begin{pmatrix} 2 & 0 \\ 0 & 1 \end{pmatrix}$ (it doubles the first),
# $b_2 = (0, 3)$. By hand, apply `p` first, then `q`. The point $(0, 0)$ goes
# $(0, 0) \to (1, 0) \to (2, 3)$, so $b = (2, 3)$. Likewise $(1, 0) \to (1, 1) \to (2, 4)$ and
# $(0, 1) \to (2, 0) \to (4, 3)$. Subtract $b$, and the columns of $A$ are $(0, 1)$ and $(2, 0)$.
# If you get `[[0.0, 1.0], [2.0, 0.0]] [4.0, 0.0]`, you applied `q` first. That is
# `matrix_compose(q, p)`.
#
# ```python
# p = (np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([1.0, 0.0]))
# q = (np.array([[2.0, 0.0], [0.0, 1.0]]), np.array([0.0, 3.0]))
# A, b = matrix_compose(p, q)
# print(A.tolist(), b.tolist())  # must print [[0.0, 2.0], [1.0, 0.0]] [2.0, 3.0]
# ```
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# # q(p(y)) = A2 @ (___) + b2, where ___ is p(y) written out
# A = ___ @ ___  # which of A1, A2 acts on y first, and on which side must it stand?
# b = ___        # what does q do to p's vector part b1?
# return A, b
# ```
#
# </details>

# %%
def matrix_compose(p, q):
    (A1, b1), (A2, b2) = p, q
    # YOUR CODE: return the pair (A, b) of "p first, then q"
    raise NotImplementedError

# %%
exercises.attempt("matrix_compose", matrix_compose)

# %% [markdown]
# ## 4. Episode ends are resets
#
# At an episode's last step nothing flows back from the next episode, so $y_t = b_t$. Computing
# that as a **product**, $b_t + 0 \cdot y_{t+1}$ with $a_t = 0$, is not safe:
# $0 \cdot \text{NaN} = \text{NaN}$, so one bad reward would poison every earlier episode. A
# **select** is safe: it outputs $b_t$, as `np.where` does. The other value, $b_t + a_t y_{t+1}$, may
# be computed, NaN and all, but it never reaches the output.
#
# So what matters is how an episode end is *used*. It may be **tested**: a select asks whether
# the end is here, by a flag or by $a_t = 0$ (section 5's bare scan does the latter). It must
# never be **multiplied** in, as $0 \cdot y_{t+1}$.
# The kernels test a *reset flag* $\kappa$ (kappa) that each step carries. With the flag, $a_t$ at
# an episode end never affects an output: a step may keep its ordinary multiplier there.
#
# A step with a reset ignores its input: its map is $y \mapsto b_t$. So when the second operand
# resets, the combine returns it alone. A run resets if any of its steps does: the combined flag is
# the OR of the two. Here is section 3's drawing with an episode end at $t = 2$:
#
# ```text
#   time t:   0     1     2     3     4     5     6     7     → y_8, the value after the row
#             └ second operand ─┘     └─ first operand ─┘
#               the earlier run          the later run
#                         ▲
#                         a reset: the second operand's flag is set
#
#   combine(first, second) = second: the later run never reaches y_0
#   (the next episode is steps 3-7; step 3 was already dropped inside the second operand)
# ```
#
# The next cell runs `combine_np`, this combine on triples $(a, b, \kappa)$, on the drawing, with
# $a_t = 0.5$ and a NaN at $t = 5$.
#
# The appendix works out [the two operands' triples](#triples-in-detail) by hand.

# %%
def combine_np(first, second):  # the first operand is the map applied first (section 3)
    """The package's combine on numbers: triples (a, b, κ); a reset in the second operand wins."""
    (a1, b1, k1), (a2, b2, k2) = first, second
    return (a2 if k2 else a2 * a1, b2 if k2 else b2 + a2 * b1, k1 or k2)


b8 = [1.0, 2.0, 4.0, 3.0, 5.0, np.nan, 6.0, 7.0]
steps8 = [(0.5, b8[t], t == 2) for t in range(8)]  # the episode ends at t = 2
first = reduce(combine_np, steps8[4:][::-1])  # the first operand: steps 7, 6, 5, 4
second = reduce(combine_np, steps8[:4][::-1])  # the second operand: steps 3, 2, 1, 0
y0_product = second[1] + 0.0 * first[1]  # the reset as a product: a_2 = 0 makes second's A 0, and B2 + 0 * B1
print("first (steps 4-7):", first, "  second (steps 0-3):", second, "\ncombine(first, second):",
      combine_np(first, second), "  y_0 with the reset as a product by 0:", y0_product)
assert first[0] == 0.0625 and np.isnan(first[1]) and not first[2]
assert second == combine_np(first, second) == (0.125, 3.0, True)
assert np.isnan(y0_product)  # 3 + 0 * NaN is NaN

# %% [markdown]
# The select drops the later run, NaN included, so $y_0 = 3$; the product gives NaN. The combine is
# still associative, because a triple is still a map: $y \mapsto b$ if $\kappa$ is set, else
# $y \mapsto a y + b$. The appendix checks this in [three cases](#three-cases).

# %% [markdown]
# ### Exercise: `combine_arrays`
#
# Write section 4's combine for whole arrays of steps, as a kernel's combine sees them.
# `combine_arrays(first, second)` takes two triples `(a, b, k)` of NumPy arrays of one shape, with
# `k` bool, and returns the combined triple, element by element. Select with `np.where`, because
# `b1` may hold a NaN where the second operand resets.
#
# <details><summary>Hint 1: where to start</summary>
#
# Start from `combine_np` above: it is this combine on one step. Your arrays hold many steps side
# by side. Element `i` of the result reads only element `i` of each input. So rewrite each of
# `combine_np`'s three results for arrays. An `if ... else` on a flag becomes an `np.where`. An `or`
# on bools becomes `|`.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Unpack as `combine_np` does: `(a1, b1, k1), (a2, b2, k2) = first, second`. The first operand
#   is applied first ([the order rule](#3.-The-backward-recurrence-as-a-reverse-scan)).
# * Where `k2` is set, the second map ignores its input, so the result is the second alone:
#   `(a2, b2)`.
# * Where `k2` is clear, the result is section 2's affine combine, `(a2 * a1, b2 + a2 * b1)`.
#   `k1` changes only the flag: the second map still acts on the first's output.
# * `np.where(cond, x, y)` takes `x` where `cond` is true and `y` elsewhere. Both arrays are
#   computed, NaN included, but only the chosen one is copied. So nothing of `y` reaches an element
#   where `cond` is true. A product such as `(1 - k2) * a2 * b1` does reach it: `0 * NaN` is NaN.
# * The combined flag is set where either operand's flag is.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Take three elements side by side, all with $a = 0.5$. In element 0 neither map resets, so
# $a = 0.25$ and $b = 4 + 0.5 \cdot 1 = 4.5$. In element 1 the second map resets: the result is
# the second alone, $b = 3$, and the NaN in `b1` is dropped. In element 2 only the first map
# resets: the run resets, and the second map still acts on the first's output,
# $b = 4 + 0.5 \cdot 2 = 5$. Only element 0 has a clear flag, so only its $a$ is printed.
#
# ```python
# first = (np.array([0.5, 0.5, 0.5]), np.array([1.0, np.nan, 2.0]), np.array([False, False, True]))
# second = (np.array([0.5, 0.5, 0.5]), np.array([4.0, 3.0, 4.0]), np.array([False, True, False]))
# a, b, k = combine_arrays(first, second)
# print(a[~k].tolist(), b.tolist(), k.tolist())  # must print [0.25] [4.5, 3.0, 5.0] [False, True, True]
# ```
#
# If `b` prints `[4.5, nan, 5.0]`, the reset was a product, and `0 * nan` is `nan`. If it prints
# `[4.5, nan, 4.0]`, you selected on `k1`: the first operand's reset won. If it prints
# `[3.0, nan, 2.0]`, the operands are swapped, the second map applied first. If `k` prints
# `[False, True, False]`, the flag is the second operand's alone.
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# (a1, b1, k1), (a2, b2, k2) = first, second  # first: the map applied first
# a = np.where(___, a2, a2 * a1)  # ___: whose reset makes the result the second map alone?
# b = np.where(___, b2, ___)      # the second ___: section 2's b of "first, then second"
# return a, b, ___                # a run resets where either of its steps does
# ```
#
# </details>

# %%
def combine_arrays(first, second):
    (a1, b1, k1), (a2, b2, k2) = first, second
    # YOUR CODE: return the triple (a, b, k) of "first, then second", element by element
    raise NotImplementedError

# %%
exercises.attempt("combine_arrays", combine_arrays)

# %% [markdown]
# ## 5. Padding is the identity, and rl.linear_scan
#
# A *padded* step, such as a prompt token in RLHF, has `mask[t] = 0`. It is not a reset: the scan
# uses the identity $(1, 0)$ there, so the value from later steps passes through. The kernel
# outputs 0 there.
#
# ### Reset conventions
#
# `rl.linear_scan` is the package's bare scan. It has no reset-flag input: you mark an episode end
# with $a_t = 0$, its *reset form*. So the course marks an episode end in one of two ways, and
# computes it in one way only, a select:
#
# | the form | where | how it is computed |
# | --- | --- | --- |
# | a reset flag $\kappa_t$ | section 4's combine, your exercises, the package's kernels | selected, in the combine and on the carry; $a_t$ there never affects an output |
# | $a_t = 0$ | `rl.linear_scan`, and the transposed scan of section 8 | $a_t = 0$ *is* the flag, and is tested |
#
# Either way the end is tested, never multiplied in ([section 4](#4.-Episode-ends-are-resets)).
#
# The next cell runs one row through the kernel: step 1 ends an episode, step 3's $b$ is a NaN,
# and step 4 is padding. The NaN stays in its own episode, steps 2 to 5, so $y_1 = 2$ and
# $y_0 = 1 + 0.9 \cdot 2 = 2.8$ are clean. The padded step outputs 0 and passes $y_5 = 6$ back to
# step 3. The loop agrees:

# %%
b = torch.tensor([[1.0, 2.0, 3.0, float("nan"), 5.0, 6.0]], device=DEVICE)
a = torch.tensor([[0.9, 0.0, 0.9, 0.9, 0.9, 0.9]], device=DEVICE)  # a = 0 at step 1: a reset, the episode ends there
mask = torch.tensor([[1, 1, 1, 1, 0, 1]], device=DEVICE)          # step 4 is padding
y = rl.linear_scan(a, b, mask=mask, backend=KERNEL)  # KERNEL: the Triton kernel, on a CPU too
expected = reference.linear_scan(a.cpu().numpy(), b.cpu().numpy(), mask=mask.cpu().numpy())
print("the kernel:", np.round(y[0].cpu().numpy(), 4))
print("the loop:  ", np.round(expected[0], 4))
np.testing.assert_allclose(y.cpu().numpy(), expected, rtol=1e-6)  # (NaN where the loop has NaN)
assert torch.isnan(y[0, 2:4]).all()  # the NaN's own episode, t = 2-5
assert y[0, 1] == 2.0 and torch.isnan(2.0 + 0.0 * y[0, 2])  # selected at a = 0; the product would be NaN
np.testing.assert_allclose(y[0, :2].cpu().numpy(), [2.8, 2.0], rtol=1e-6)  # the episode before it
assert y[0, 4] == 0 and y[0, 5] == 6.0  # the padded step, and the step after it

# %% [markdown]
# ## 6. Chunks and a carry
#
# A GPU runs a kernel as many copies at once, called *programs*, and each holds only a few thousand
# values at a time. So a program cuts a row into *chunks* of `CHUNK` steps and walks them from the
# last in time. Inside a chunk it scans in parallel: step $t$ gets the map $(A_t, B_t)$ of the steps
# from $t$ to the chunk's end. The value from the chunk after is the **carry**, and
# $y_t = B_t + A_t \cdot \text{carry}$.
#
# For example, 10 steps in chunks of 4 are walked as steps 8–9, then 4–7, then 0–3. The first carry
# is 0. After that, each chunk's first value, `y[8]` and then `y[4]`, is the next chunk's carry.

# %%
def chunked(a, b, chunk):
    y, carry = np.zeros_like(b), 0.0
    for start in reversed(range(0, len(b), chunk)):  # chunks from the end of time
        end = min(start + chunk, len(b))
        pairs = list(zip(a[start:end], b[start:end]))[::-1]
        comp = scan_hillis_steele(pairs, combine)[::-1]
        y[start:end] = [a_s * carry + b_s for a_s, b_s in comp]
        carry = y[start]
    return y


a, b = rng.uniform(0.5, 1.0, 50), rng.normal(size=50)
for chunk in (1, 4, 16, 64):
    np.testing.assert_allclose(chunked(a, b, chunk), reference.linear_scan(a, b), rtol=1e-12)
print("chunked scans agree for chunks of 1, 4, 16, 64 steps")

# %%
# two pictures: the Hillis–Steele rounds on eight steps, and chunks handing back their carry
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 3.5))
n = 8
for level, k in enumerate([1, 2, 4]):
    for i in range(n):
        ax1.scatter(i, -level, color="k", s=20)
        if i >= k:
            ax1.annotate("", xy=(i, -level - 1), xytext=(i - k, -level), arrowprops=dict(arrowstyle="->", color="tab:blue", alpha=0.6))
        ax1.annotate("", xy=(i, -level - 1), xytext=(i, -level), arrowprops=dict(arrowstyle="->", color="gray", alpha=0.4))
ax1.scatter(range(n), [-3] * n, color="tab:green", s=20)
ax1.set_title("Hillis–Steele: 3 rounds for 8 steps (scan order)")
ax1.set_yticks([0, -1, -2, -3], ["input", "k=1", "k=2", "k=4 (done)"])
ax1.set_xlabel("position in scan order")
T, chunk = 40, 10
for c, start in enumerate(range(0, T, chunk)):
    ax2.axvspan(start, start + chunk, color=f"C{c}", alpha=0.25)
    if start > 0:
        ax2.annotate("carry", xy=(start - 1, 0.5), xytext=(start + 1, 0.5), arrowprops=dict(arrowstyle="->"))
ax2.plot(np.arange(T), reference.linear_scan(rng.uniform(0.8, 1, T), rng.normal(size=T)) / 5 + 0.5, "k.-", ms=3)
ax2.set_title("chunks of CHUNK steps, processed from the end; a carry flows back")
ax2.set_xlabel("time step t")
ax2.set_yticks([])
plt.tight_layout()
plt.show()

# %% [markdown]
# <details><summary>The direction card: what changes between a forward and a reverse scan</summary>
#
# | | forward scan (`reverse=False`) | reverse scan (`reverse=True`: returns) |
# | --- | --- | --- |
# | the recurrence | $y_t = a_t y_{t-1} + b_t$ | $y_t = a_t y_{t+1} + b_t$ |
# | scan order | $t = 0, 1, \dots, T-1$ | $t = T-1, \dots, 1, 0$ |
# | [a reset drops](#4.-Episode-ends-are-resets) | the steps before it | the steps after it: the next episode |
# | the chunks are walked | first to last | last to first |
# | a chunk's carry out is $y$ at | its last step, for the next chunk | its first step, for the chunk before it |
# | the first carry | $y_{-1} = 0$ | $y_T = 0$ (or the value after the row) |
#
# In both directions, padding past the row's end ($t \ge T$) is the identity $(1, 0)$, with no reset.
#
# </details>

# %% [markdown]
# ### Exercise: `chunked_reset_scan`
#
# The kernel's plan in NumPy, before any Triton: sections 4 and 6 together.
#
# * **Inputs:** `a` and `b`, float64 arrays of $T$ steps; `reset`, a bool array; `chunk`, the
#   chunk's length.
# * **Returns:** `y` and `carry_in`, float64 arrays of $T$ steps. `y` is the reverse scan
#   $y_t = b_t + a_t y_{t+1}$ from $y_T = 0$, with $y_t = b_t$ where `reset[t]`. `carry_in[t]` is
#   the carry that entered step $t$'s chunk, 0 for the last chunk.
# * **How:** `chunked`'s walk, with each chunk composed by `combine_np` into $(A_t, B_t, K_t)$. Then
#   $y_t = B_t$ where $K_t$ is set, else $B_t + A_t \cdot \text{carry}$.
# * **Edge cases:** a NaN or `inf` in `b` behind a reset, inside a chunk and across a chunk's
#   boundary; a reset at a chunk's last step.
#
# <details><summary>Hint 1: where to start</summary>
#
# Section 6's `chunked` is this scan without resets. Add the flag as section 4 does:
# `combine_np` composes triples $(a, b, \kappa)$. Inside a chunk, a plain loop is fine. The kernel
# uses a tree there, with the same combine.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * `for start in reversed(range(0, T, chunk))`, with `end = min(start + chunk, T)`.
# * Start each chunk from the identity, `(1.0, 0.0, False)`.
# * Go from `t = end - 1` down to `start`. By the order rule (section 3), step $t$ is the second
#   operand.
# * $y_t$ is a select on $K_t$ (`k_s`), never a product.
# * `carry_in[t]` is the carry you used for step $t$.
# * After the chunk, the carry is `y` at the chunk's first step in time.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Take $T = 5$, `chunk = 2`, $a_t = 0.5$, $b = (1, 2, 3, 4, \text{NaN})$ and a reset at $t = 3$.
# The chunks are $\{4\}$, $\{2, 3\}$ and $\{0, 1\}$, walked in that order.
#
# * Chunk $\{4\}$, carry 0: $y_4 = \text{NaN}$. The next carry is NaN.
# * Chunk $\{2, 3\}$: step 3 resets, so $y_3 = 4$. The NaN carry stays out. Step 2 composes to
#   $(0.25,\ 3 + 0.5 \cdot 4,\ \text{set}) = (0.25, 5, \text{set})$, so $y_2 = 5$. The next carry is 5.
# * Chunk $\{0, 1\}$: $y_1 = 2 + 0.5 \cdot 5 = 4.5$, and step 0 composes to $(0.25, 2)$, so
#   $y_0 = 2 + 0.25 \cdot 5 = 3.25$.
#
# If $y_3$ is NaN, the NaN carry got in through a product. If `carry_in[0]` is 4, you read the
# carry at the chunk's last step.
#
# ```python
# y, carry_in = chunked_reset_scan(np.full(5, 0.5), np.array([1.0, 2.0, 3.0, 4.0, np.nan]),
#                                  np.array([False, False, False, True, False]), 2)
# print(y.tolist(), carry_in.tolist())  # must print [3.25, 4.5, 5.0, 4.0, nan] [5.0, 5.0, nan, nan, 0.0]
# ```
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# for start in reversed(range(0, T, chunk)):
#     end = min(start + chunk, T)
#     run = (1.0, 0.0, False)  # the identity
#     for t in reversed(range(start, end)):
#         run = combine_np(___, ___)  # which is the first operand: the run of steps t+1 to end-1, or step t?
#         a_s, b_s, k_s = run
#         y[t] = ___  # a select on k_s
#         carry_in[t] = carry
#     carry = ___  # y at which step of this chunk?
# ```
#
# </details>

# %%
def chunked_reset_scan(a, b, reset, chunk):
    # YOUR CODE: return (y, carry_in), two float64 arrays of len(a)
    raise NotImplementedError

# %%
exercises.attempt("chunked_reset_scan", chunked_reset_scan)

# %% [markdown]
# ## 7. The kernel
#
# `rltriton_lite/scan.py` holds the one kernel that every algorithm of the course uses. It walks
# each row's chunks as `chunked` does. Notebook 00c shows how an algorithm plugs into it.
#
# `rl.linear_scan` runs that kernel. The next cell checks it against the loop in both directions,
# with padding (`mask`) and a value after the row (`initial`: $y_T$, or $y_{-1}$ going forward):

# %%
n_rows, T = 3, 70
a = torch.rand(n_rows, T, device=DEVICE)
b = torch.randn(n_rows, T, device=DEVICE)
init = torch.randn(n_rows, device=DEVICE)
mask = torch.rand(n_rows, T, device=DEVICE) > 0.2
for reverse in (True, False):
    y = rl.linear_scan(a, b, initial=init, mask=mask, reverse=reverse, backend=KERNEL)
    expected = reference.linear_scan(a.cpu().numpy(), b.cpu().numpy(), initial=init.cpu().numpy(),
                                     mask=mask.cpu().numpy(), reverse=reverse)
    np.testing.assert_allclose(y.cpu().numpy(), expected, rtol=1e-5, atol=1e-5)
print("linear_scan matches the loop, reverse and forward")

# %% [markdown]
# ## 8. Gradients are a scan too
#
# This section writes a time step in brackets, as in code: $a[t]$ is step $t$'s multiplier, and
# $a[2]$ is step 2's. Subscripts would clash here: since section 2, $a_1$ and $a_2$ name a combine's
# two operands, not steps 1 and 2.
#
# Take a loss $L$ of all the $y[t]$. The backward pass hands you the **upstream gradient** `dy`:
# $dy[t]$ is the direct effect of $y[t]$ on $L$. But $y[t]$ also feeds $y[t-1]$, and so reaches $L$
# through it too. Write $g[t]$ for the *total* gradient with respect to $y[t]$. The chain rule
# gives:
#
# * $g[t] = dy[t] + a[t-1]\,g[t-1]$: the direct path, plus the path through $y[t-1]$. No step
#   comes before step 0, so $g[0] = dy[0]$.
# * $\partial L/\partial b[t] = g[t]$, since $b[t]$ enters only $y[t]$, with coefficient 1.
# * $\partial L/\partial a[t] = g[t]\,y[t+1]$, since $a[t]$ enters only $y[t]$, as the factor of
#   $y[t+1]$.
#
# So the gradient is a forward scan of the pairs $(a[t-1], dy[t])$, the **transposed scan**. The
# package runs it with the same kernel and `reverse=False`. At $t = 0$ the pair needs $a[-1]$: here that
# means the multiplier of the step before step 0, which does not exist (not NumPy's last element).
# The code below puts $a[-1] = 0$. That is section 5's reset form, so $g[0] = dy[0]$.
#
# The next cell checks, with autograd on the plain loop, a case of $T = 3$ steps, worked by hand
# in the fold below.
#
# <details><summary>Details: the transposed scan by hand, T = 3 (optional)</summary>
#
# Take $a = (0.5, 2, 3)$, $b = (1, 1, 1)$, $y[3] = 1$ and $L = y[0] + y[1] + y[2]$, so every
# $dy[t] = 1$:
#
# * The loop runs from the end: $y[2] = 1 + 3 = 4$, $y[1] = 1 + 2 \cdot 4 = 9$,
#   $y[0] = 1 + 0.5 \cdot 9 = 5.5$.
# * The transposed scan runs from the start: $g[0] = 1$, $g[1] = 1 + 0.5 \cdot 1 = 1.5$,
#   $g[2] = 1 + 2 \cdot 1.5 = 4$. So $\partial L/\partial b = (1, 1.5, 4)$.
# * $\partial L/\partial a = (g[0]\,y[1],\ g[1]\,y[2],\ g[2]\,y[3]) = (9,\ 6,\ 4)$.
#
# The last multiplier, $a[2]$, never enters $g$, because no step comes after it.
#
# In symbols, unroll the loop and read off the coefficients:
#
# $$y[2] = b[2] + a[2]\,y[3], \qquad y[1] = b[1] + a[1]\,b[2] + a[1]\,a[2]\,y[3],$$
#
# $$y[0] = b[0] + a[0]\,b[1] + a[0]\,a[1]\,b[2] + a[0]\,a[1]\,a[2]\,y[3].$$
#
# With every $dy[t] = 1$, $\partial L/\partial b[2] = 1 + a[1] + a[0]\,a[1] = dy[2] + a[1]\,g[1]$,
# where $g[1] = 1 + a[0]$, as the recurrence says.
#
# </details>

# %%
a3 = torch.tensor([0.5, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
b3 = torch.tensor([1.0, 1.0, 1.0], dtype=torch.float64, requires_grad=True)
y_next, ys = torch.tensor(1.0, dtype=torch.float64), [None] * 3  # y[3] = 1
for t in reversed(range(3)):
    y_next = b3[t] + a3[t] * y_next
    ys[t] = y_next
L = ys[0] + ys[1] + ys[2]
dL_da, dL_db = torch.autograd.grad(L, (a3, b3))
assert [y.item() for y in ys] == [5.5, 9.0, 4.0]
assert dL_db.tolist() == [1.0, 1.5, 4.0]
assert dL_da.tolist() == [9.0, 6.0, 4.0]
print("dL/db =", dL_db.tolist(), " dL/da =", dL_da.tolist())

# %% [markdown]
# On a random row, with $L = \sum_t dy[t]\,y[t]$, the forward scan of $(a[t-1], dy[t])$ matches
# autograd too:

# %%
T = 8
a_row = torch.rand(T, dtype=torch.float64, requires_grad=True)
b_row = torch.randn(T, dtype=torch.float64, requires_grad=True)
dy = torch.randn(T, dtype=torch.float64)  # the upstream gradient: L = sum_t dy[t] * y[t]
y_row = rl.linear_scan(a_row, b_row, backend="torch")
grad_a, grad_b = torch.autograd.grad((y_row * dy).sum(), (a_row, b_row))

a_prev = np.concatenate([[0.0], a_row.detach().numpy()[:-1]])  # a[t-1]; a[-1] = 0 before step 0 is a reset: g[0] = dy[0]
g = reference.linear_scan(a_prev, dy.numpy(), reverse=False)  # g[t] = dy[t] + a[t-1] g[t-1]
y_after = np.concatenate([y_row.detach().numpy()[1:], [0.0]])  # y[t+1], and y[T] = 0
np.testing.assert_allclose(grad_b.numpy(), g, rtol=1e-12)
assert g[0] == dy[0].item()  # the reset at t = 0
np.testing.assert_allclose(grad_a.numpy(), g * y_after, rtol=1e-12)
print("dL/db is the forward scan of (a[t-1], dy[t]); dL/da[t] = dL/db[t] * y[t+1]")

# %% [markdown]
# ## Exercises
#
# Without a checker:
#
# 1. Is `matrix_compose` still associative? What does the identity become? Why does the order
#    of the operands now matter even for the $A$ part?
# 2. Count the combines of `scan_hillis_steele` and `scan_blelloch` (in the appendix) for
#    $n = 1024$. With the affine operator, each combine costs two multiplications. Which scan would
#    you choose for a GPU warp (32 threads that run in lockstep)? Which for $10^6$ elements?
# 3. How accurate is `chunked` in float32 when all $a_t$ are close to 1 and the rows are long?
#    Make float64 arrays `a` and `b` of up to $10^5$ steps, and run `chunked` on their float32
#    copies in chunks of at most 64. Measure its error against `right`, a float64 loop on the same
#    float32 inputs, as `max |y − right| / max |right|`:
#
#    ```python
#    a32, b32 = a.astype(np.float32), b.astype(np.float32)  # both inputs in float32
#    y = chunked(a32, b32, 64)
#    assert y.dtype == np.float32  # (with a float64 b, chunked would compute in float64)
#    right = reference.linear_scan(a32.astype(np.float64), b32.astype(np.float64))
#    ```
#
#    How does the error change with the chunk size, and with $1/(1-a)$? Why does `right` take the
#    float32 inputs?
#
#    <details><summary>What you should observe</summary>
#
#    Take $a_t = 1 - 1/H$ at every step, $b$ drawn from a normal distribution, and $T = 10^5$. At
#    $H = 1/(1-a) = 10^4$, the error jumps about tenfold between chunks 4 and 16: about
#    $4 \cdot 10^{-6}$ at chunk 1, $1.2 \cdot 10^{-6}$ at chunk 4, and about $1.2 \cdot 10^{-5}$
#    at chunks 16 and 64. At $H = 10^2$, it stays near $5 \cdot 10^{-7}$ at every chunk size.
#
#    </details>
#
#    <details><summary>Why: a model of the error (open after you have tried)</summary>
#
#    The same rounding in every chunk adds up over the $H/k$ chunks of a horizon. For chunks of
#    $k > 1$ steps, each chunk's product $A_t = a^k$ is rounded in float32; the cell below prints
#    that relative rounding error. Because $a$ is constant, every chunk rounds $a^k$ the same way,
#    so the errors do not cancel. At chunks 16 and 64, this rounding is almost all the error: giving
#    `chunked` a float64 $b$, which leaves only $A_t$ rounded, barely changes it. A chunk of 1 is
#    the float32 loop, whose error is the rounding of $y_t$ at every step. At chunk 4, $a^4$ rounds
#    almost exactly (below $10^{-9}$), so other, smaller roundings set the error there.
#
#    So the error grows with the horizon $1/(1-a)$, over whose $H/k$ chunks the rounding of $a^k$
#    adds up. At a long horizon it also grows with the chunk size, about tenfold from chunk 4 to
#    16, once the rounding of $a^k$ dominates. At a short horizon, the chunk size barely matters.
#
#    </details>

# %%
# Question 3's model: eps(a^k), the relative rounding error of a^k in float32, at H = 1e4
a_h4 = np.float32(1 - 1 / 1e4)
q3_power = {k: abs(float(scan_hillis_steele([(a_h4, np.float32(0))] * k, combine)[-1][0]) / float(a_h4) ** k - 1)
            for k in (4, 16, 64)}  # a^k composed as chunked composes it
print({f"eps(a^{k})": f"{e:.1e}" for k, e in q3_power.items()})

# %% jupyter={"source_hidden": true}
# Checks: question 3's fold, on one draw of b (CI runs them; skip when reading)
b_q3 = np.random.default_rng(0).normal(size=10**5).astype(np.float32)
q3_error = {}  # (H, chunk) -> max |y - right| / max |right|
for horizon in (1e2, 1e4):  # H = 1 / (1 - a)
    a_q3 = np.full(10**5, 1 - 1 / horizon).astype(np.float32)
    right_q3 = reference.linear_scan(a_q3.astype(np.float64), b_q3.astype(np.float64))
    for size in (1, 4, 16, 64):
        q3_error[horizon, size] = np.abs(chunked(a_q3, b_q3, size) - right_q3).max() / np.abs(right_q3).max()
assert 3e-6 < q3_error[1e4, 1] < 5e-6 and 1e-6 < q3_error[1e4, 4] < 1.5e-6  # H = 1e4: about 4e-6 at chunk 1, 1.2e-6 at 4,
assert all(1e-5 < q3_error[1e4, size] < 1.5e-5 for size in (16, 64))  # about 1.2e-5 at chunks 16 and 64
assert 8 < q3_error[1e4, 16] / q3_error[1e4, 4] < 12  # the jump between chunks 4 and 16: about tenfold
assert all(3e-7 < q3_error[1e2, size] < 1e-6 for size in (1, 4, 16, 64))  # H = 1e2: near 5e-7 at every size
# "Why", at H = 1e4 (the loop's last a_q3 and right_q3). With a float64 b, chunked rounds only the products A_t.
q3_only_a = {size: np.abs(chunked(a_q3, b_q3.astype(np.float64), size) - right_q3).max() / np.abs(right_q3).max()
             for size in (4, 16, 64)}
assert a_q3[0] == a_h4  # the a of the cell above
assert all(0.9 < q3_only_a[k] / q3_error[1e4, k] < 1.1 for k in (16, 64))  # rounding A_t: almost all the error
# the same rounding adds up over H/k chunks: the error from A_t alone is of the order of (H/k)·eps(a^k)
assert all(0.1 < q3_only_a[k] / (1e4 / k * q3_power[k]) < 1 for k in (4, 16, 64))
assert q3_power[4] < 1e-9 and 4e-8 < q3_power[16] < 6e-8  # the printed eps(a^k): a^4 rounds to 4e-10, a^16 to 5e-8
assert q3_error[1e4, 4] / (1e4 / 4 * q3_power[4]) > 1  # at chunk 4, other roundings are larger
assert all(q3_error[1e4, size] > q3_error[1e2, size] for size in (1, 4, 16, 64))  # "grows with the horizon"

# %% [markdown] tags=["answer-1"]
# **Answer 1.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-2"]
# **Answer 2.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-3"]
# **Answer 3.** *Your answer here (code for it: in cells under this one).*

# %% [markdown]
# ## What you now know
#
# * The steps are affine maps. They compose associatively but not commutatively: a tree scan may
#   regroup them but must keep their order. A return is a reverse scan.
# * An episode end is a select, on a reset flag or on $a_t = 0$, never a product with $a_t = 0$.
#   Padding is the identity $(1, 0)$.
# * Chunks are scanned in parallel inside and joined by a carry: $y_t = B_t + A_t \cdot \text{carry}$.
# * The gradient is the transposed scan, a forward scan of $(a_{t-1}, dy_t)$.

# %% [markdown]
# ## Appendix: behind the scenes
#
# Nothing here is needed for the exercises. Each part names the section it goes with.
#
# ### Blelloch's scan (section 1, question 2)
#
# An *exclusive* scan leaves $x_i$ out of prefix $i$ and starts from the identity: under $+$,
# $(3, 1, 4, 1)$ gives $(0, 3, 4, 8)$. Blelloch's scan computes it, and a last pass makes it
# inclusive. *Work* counts all the operations. *Depth* counts the rounds, where a round's operations
# all run at once. With enough processors, the depth sets the time.
#
# | algorithm | work (operations) | depth (parallel steps) |
# |---|---|---|
# | sequential loop | $n - 1$ | $n - 1$ |
# | Hillis–Steele (1986) | about $n \log_2 n$ | $\lceil \log_2 n \rceil$ |
# | Blelloch (1990): up-sweep, down-sweep | about $2n$, plus $n$ for a last pass that makes it inclusive | $2 \log_2 n$, plus 1 |
#
# The next cell prints Blelloch's tree after each round, on the letters `"abcd"` joined as
# strings. The *up-sweep* leaves partial joins in the odd positions. Then the root, the last
# position, is cleared to the identity `''`. The *down-sweep* pushes the prefixes back down. In each
# of its rounds, a left child takes its parent's value, the join of everything before it. The right
# child takes the parent's value joined with the left child's old one. The result is the exclusive
# scan. The function's last line joins it with `x` to make it inclusive. The cell also checks the
# scan on sums, on section 1's strings, and on section 3's reversed affine pairs, where the order of
# the operands matters.

# %%
def scan_blelloch(x, op, identity, trace=None):
    """Up-sweep builds a tree of partial sums; down-sweep pushes prefixes back down.
    That gives the exclusive scan; the last line combines it with x and returns the inclusive scan.
    A list passed as `trace` receives the tree after each round."""
    n = 1 << (len(x) - 1).bit_length()
    t = list(x) + [identity] * (n - len(x))
    d = 1
    while d < n:  # up-sweep
        for i in range(2 * d - 1, n, 2 * d):
            t[i] = op(t[i - d], t[i])
        if trace is not None:
            trace.append((f"up-sweep, d={d}", list(t)))
        d *= 2
    t[n - 1] = identity
    if trace is not None:
        trace.append(("root cleared", list(t)))
    while d > 1:  # down-sweep: the left child gets the prefix, the right one prefix ⊕ left
        d //= 2
        for i in range(2 * d - 1, n, 2 * d):
            t[i - d], t[i] = t[i], op(t[i], t[i - d])
        if trace is not None:
            trace.append((f"down-sweep, d={d}", list(t)))
    return [op(e, v) for e, v in zip(t, x)]


trace = []
result = scan_blelloch(list("abcd"), lambda u, v: u + v, "", trace=trace)
for phase, tree in trace:
    print(f"{phase:<17} {tree}")
print("inclusive        ", result)
assert [tree for _, tree in trace] == [["a", "ab", "c", "cd"], ["a", "ab", "c", "abcd"], ["a", "ab", "c", ""],
                                       ["a", "", "c", "ab"], ["", "a", "ab", "abc"]]
assert result == ["a", "ab", "abc", "abcd"]
sums_trace = []
assert scan_blelloch([3, 1, 4, 1], add, 0, trace=sums_trace) == [3, 4, 8, 9]
assert sums_trace[-1][1] == [0, 3, 4, 8]  # the exclusive scan, before the last pass
sums = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9]  # 13 numbers: padded to 16
assert scan_blelloch(sums, add, 0) == np.cumsum(sums).tolist()
assert scan_blelloch(letters, join, "") == prefixes  # section 1's strings: no operand swapped
a_bl, b_bl = rng.uniform(0.5, 1.0, 8), rng.normal(size=8)  # section 3's reverse scan, on 8 steps
blelloch = scan_blelloch(list(zip(a_bl, b_bl))[::-1], combine, (1.0, 0.0))[::-1]
np.testing.assert_allclose([a_s * 0.7 + b_s for a_s, b_s in blelloch], reference.linear_scan(a_bl, b_bl, initial=0.7),
                           rtol=1e-12)

# %% [markdown]
# ### Two lines of algebra (section 2)
#
# Take three pairs $(a_1, b_1)$, $(a_2, b_2)$, $(a_3, b_3)$, applied in that order. Both
# groupings give the same pair:
#
# $$\big((a_1, b_1) \oplus (a_2, b_2)\big) \oplus (a_3, b_3) = (a_2 a_1,\; b_2 + a_2 b_1) \oplus (a_3, b_3)
#   = (a_3 a_2 a_1,\; b_3 + a_3 b_2 + a_3 a_2 b_1),$$
#
# $$(a_1, b_1) \oplus \big((a_2, b_2) \oplus (a_3, b_3)\big) = (a_1, b_1) \oplus (a_3 a_2,\; b_3 + a_3 b_2)
#   = (a_3 a_2 a_1,\; b_3 + a_3 b_2 + a_3 a_2 b_1).$$
#
# ### Whole triples, not only maps (section 4)
#
# In section 4's cell, the second operand's $A$ is 0.125 though it resets, and that is harmless.
# Once the flag is set, the composed map is $y \mapsto B$, so its $A$ holds whatever the products
# left and never affects an output. So your `combine_arrays` may leave any value there.
#
# <a id="triples-in-detail"></a>
#
# <details><summary>Details: the two operands' triples (optional)</summary>
#
# Take $a_t = 0.5$, $b = (1, 2, 4, 3, 5, \text{NaN}, 6, 7)$ and an episode end at $t = 2$. The
# first operand, steps 4–7, composes to $(0.0625, \text{NaN}, \text{clear})$. The second operand,
# steps 0–3, composes to $(0.125, 3, \text{set})$. Its $b$ is $1 + 0.5 \cdot (2 + 0.5 \cdot 4) = 3$,
# because step 2's reset already dropped step 3. The second operand's reset wins, so the combine
# returns the second operand, and $y_0 = 3$.
#
# </details>
#
# <a id="three-cases"></a>
#
# <details><summary>Details: a triple is still a map, the three cases (optional)</summary>
#
# Write $\mathrm{sel}(\kappa, u, v)$ for $u$ if $\kappa$ is set, else $v$, as `tl.where` does.
# Write $x_i$ for the triple $(a_i, b_i, \kappa_i)$. The first operand $x_1$ combined with the
# second, $x_2$, gives $\kappa = \kappa_1 \lor \kappa_2$, $a = \mathrm{sel}(\kappa_2, a_2, a_2 a_1)$
# and $b = \mathrm{sel}(\kappa_2, b_2, b_2 + a_2 b_1)$. The $\kappa$ part is an OR, which is
# associative. For $a$ and $b$, take three triples $x_1$, $x_2$, $x_3$, applied in that order. There
# are three cases. In each, both groupings, $(x_1 \oplus x_2) \oplus x_3$ and
# $x_1 \oplus (x_2 \oplus x_3)$, give the pair in the table:
#
# | case | $a$ | $b$ |
# | --- | --- | --- |
# | $\kappa_3$ set | $a_3$ | $b_3$ |
# | $\kappa_3$ clear, $\kappa_2$ set | $a_3 a_2$ | $b_3 + a_3 b_2$ |
# | neither set ($\kappa_1$ does not matter) | $a_3 a_2 a_1$ | $b_3 + a_3 b_2 + a_3 a_2 b_1$ |
#
# The reset applied last wins. The last row, without a reset, is section 2's affine combine. So
# both groupings give the same triple, not only the same map. The checkers test this stronger
# property.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: section 4's claims (CI runs them; skip when reading)
# once the flag is set, A never affects an output: section 4's second operand, steps 0-3, with any A
second = reduce(combine_np, steps8[:4][::-1])
for other in [(0.5, 2.0, False), (0.5, 2.0, True)]:
    for a_run in (0.125, -7.0, np.nan):  # any A in the reset run
        r = (a_run, second[1], second[2])
        assert combine_np(r, other)[1:] == combine_np(second, other)[1:]  # the run as first operand
        assert combine_np(other, r)[1:] == combine_np(other, second)[1:]  # the run as second operand
# the direction card's forward column (section 6): combine(steps 0-3, steps 4-7), and a reset in the second operand wins
fwd = [(0.5, float(t), t == 5) for t in range(8)]  # a reset at t = 5, in the second operand, steps 4-7
assert combine_np(reduce(combine_np, fwd[:4]), reduce(combine_np, fwd[4:])) == reduce(combine_np, fwd[4:])
# the note above: where the flag is set, a reaches no output (y_t = B_t, selected), so any value passes
row3 = [(0.5, 1.0, False), (0.5, 2.0, True), (0.5, 3.0, False)]  # t = 0, 1, 2: step 1 resets
row3_nan_a = [row3[0], (np.nan, 2.0, True), row3[2]]  # the same row, step 1's a a NaN
outputs = lambda row, carry=10.0: [B if K else B + A * carry  # noqa: E731
                                   for A, B, K in (reduce(combine_np, row[t:][::-1]) for t in range(len(row)))]
assert np.isnan(reduce(combine_np, row3_nan_a[::-1])[0])  # the combine did compute with it: A at t = 0 is NaN
assert outputs(row3_nan_a) == outputs(row3) == [2.0, 2.0, 8.0]

# %% jupyter={"source_hidden": true}
# Checks: the three cases of section 4 (CI runs them; skip when reading)
# the table of three cases, both groupings giving the row's (a, b) whatever the other flags
table_row = lambda p, q, w: ((w[0], w[1]) if w[2] else (w[0] * q[0], w[1] + w[0] * q[1]) if q[2]  # noqa: E731
                             else (w[0] * q[0] * p[0], w[1] + w[0] * q[1] + w[0] * q[0] * p[1]))
for kp, kq, kw in [(kp, kq, kw) for kp in (False, True) for kq in (False, True) for kw in (False, True)]:
    p3, q3, w3 = (0.5, 2.0, kp), (0.25, 3.0, kq), (0.125, 5.0, kw)
    assert combine_np(combine_np(p3, q3), w3)[:2] == combine_np(p3, combine_np(q3, w3))[:2] == table_row(p3, q3, w3)
# the combine with resets is associative (its own generator: the reading's rng stream is left as it was)
rng_k = np.random.default_rng(4)
triples = [(a_, b_, bool(k_)) for a_, b_, k_ in
           zip(rng_k.normal(size=600), rng_k.normal(size=600), rng_k.random(600) < 0.3)]
for s1, s2, s3 in zip(triples[0::3], triples[1::3], triples[2::3]):
    np.testing.assert_allclose(combine_np(combine_np(s1, s2), s3)[:2], combine_np(s1, combine_np(s2, s3))[:2],
                               rtol=1e-12)
    assert combine_np(combine_np(s1, s2), s3)[2] == combine_np(s1, combine_np(s2, s3))[2]

# %% [markdown]
# ### The select and the product (section 5)
#
# At $a_t = 0$ the map is already $y \mapsto b_t$, so on finite numbers the select gives what the
# product would. Only $0 \cdot \text{NaN}$ and $0 \cdot (\pm\infty)$ differ, and the select keeps them
# out. `rl.linear_scan` takes no reset flag as an input. The package's other kernels take one, and
# there $a_t$ never affects an output.

# %% jupyter={"source_hidden": true}
# Checks: rl.linear_scan takes no reset flag as an input (CI runs them; skip when reading)
import inspect  # noqa: E402

_inputs = list(inspect.signature(rl.linear_scan).parameters)
assert _inputs[:2] == ["a", "b"] and not [n for n in _inputs if any(w in n for w in ("reset", "done", "term", "flag"))]

# %% [markdown]
# ### What carry_in tells apart (section 6)
#
# A chunk's `y` follows from its own steps and the carry that entered it. So where `y[t]` is wrong
# and `carry_in[t]` is right, the error is in the scan inside the chunk, not in the carry.

# %% jupyter={"source_hidden": true}
# Checks: what carry_in tells apart, on the checker's own cases (CI runs them; skip when reading)
# each case: its arguments, and the two arrays the checker compares, y and carry_in
for _case, (_a, _b, _reset, _chunk), _, (_y, _carry_in), _ in exercises.cases("chunked_reset_scan"):
    for _start in range(0, len(_a), _chunk):
        _end = min(_start + _chunk, len(_a))
        np.testing.assert_array_equal(_carry_in[_start:_end], _carry_in[_start])  # one carry enters each chunk
        # a chunk's y: its own steps (a reset as a = 0, the bare scan's reset form) and that carry, nothing else
        with np.errstate(invalid="ignore"):
            _alone = reference.linear_scan(np.where(_reset, 0.0, _a)[_start:_end], _b[_start:_end],
                                           initial=_carry_in[_start])
        np.testing.assert_allclose(_alone, _y[_start:_end], rtol=1e-12)  # (NaN where y has NaN)
    assert _carry_in[-1] == 0.0  # the last chunk's carry

# %% [markdown]
# ### The package's kernel and resets in the gradient (sections 7 and 8)
#
# These need the hooks of notebook 00c, so they are in
# [00c's appendix](00c_episodes_and_hooks.ipynb#Notebook-00's-gradient-on-the-package's-kernel).

# %% [markdown]
# ## Appendix: a combine that is not associative, run
#
# [Notebook 00b, section 2](00b_triton_from_zero.ipynb#loop-or-tree) runs the mean,
# $(u + v) / 2$, which is not associative, as a Triton scan, under stock Triton's loop and after
# `import rltriton_lite`. The loop gives `scan_sequential`'s $(8, 4, 2, 1)$ on $(8, 0, 0, 0)$, and
# the tree gives `scan_hillis_steele`'s $(8, 4, 4, 2)$.

# %% jupyter={"source_hidden": true}
# Checks: the numbers above, the loop's and the tree's, for 00b's mean scan (CI runs them; skip when reading)
mean_np = lambda u, v: (u + v) / 2  # noqa: E731
assert scan_sequential([8.0, 0.0, 0.0, 0.0], mean_np) == [8.0, 4.0, 2.0, 1.0]  # the loop
assert scan_hillis_steele([8.0, 0.0, 0.0, 0.0], mean_np) == [8.0, 4.0, 4.0, 2.0]  # the tree
