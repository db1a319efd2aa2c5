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
# # 00b — Triton from zero: a first kernel, a scan, a chunked scan
#
# * **You will learn:** Triton's programs, masks, loads and stores. How `tl.associative_scan`
#   applies its combine. A loop over chunks, joined by a carry, for rows of any length.
# * **Time:** 3–6 h for the reading and the three checked exercises, over two sittings: sections
#   1 and 2, then section 3. Expect the high end if Triton is new to you.
# * **Needs:** notebook 00. No GPU: Triton's interpreter runs every kernel on a CPU.
# * **Minimum path:** all three sections and their checked exercises. There are no open questions.
#
# Here you write notebook 00's reverse scan as a GPU kernel, on rows without episode ends yet.
# New words are in [`GLOSSARY.md`](GLOSSARY.md). What differs on a GPU is in the
# [GPU notes](#GPU-notes) at the end.
#
# The exercises work as [notebook 00's box](00_associative_scan.ipynb#How-the-exercises-work)
# says. Every kernel you write follows the [Triton rules](#Triton-rules), the card at the end: come
# back to it when a kernel misbehaves.

# %% [markdown]
# ### Three rules for section 1
#
# Section 1's kernel needs only these three. The others come up where you first need them, and
# the whole card, [Triton rules](#Triton-rules), is at the end.
#
# 1. Mask every load and store that can run past a tensor's end.
# 2. On blocks, use `&`, `|`, `~`, `tl.minimum`, `tl.maximum` and `tl.where`, never Python's `and`,
#    `or`, `not`, `min`, `max` or `if`.
# 3. Select with `tl.where`; never multiply by 0 to drop a value, because `0 * NaN` is NaN.

# %%
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: kernels run on the CPU

import inspect

import numpy as np
import triton
import triton.language as tl

import rltriton_lite as rl  # import it before any kernel runs (GPU note 3)
from rltriton_lite import exercises, reference

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# the Triton kernels: compiled on a GPU, in the interpreter on a CPU (backend="auto" takes the PyTorch path on a CPU)
KERNEL = "triton"
print("device:", DEVICE, "(Triton interpreter)" if os.environ.get("TRITON_INTERPRET") == "1" else "")

# %% [markdown]
# ## 1. A first kernel
#
# **Programs and blocks.** A Triton kernel runs as many copies at once, and each copy is a
# **program**. Each program works on its own **block**, a short vector of elements handled
# together.
#
# * The programs of one launch form a *grid*. `kernel[(n_programs,)](args...)` launches a grid of
#   `n_programs`. Inside, `tl.program_id(0)` says which program this is: 0, 1, 2, ...
# * `tl.arange(0, BLOCK)` is the vector $0, 1, \dots, \text{BLOCK}-1$. BLOCK must be a power of
#   two and a `tl.constexpr`, a value fixed at compile time, so each new value compiles a new
#   kernel.
# * So a program owns the indices `offs = pid * BLOCK + tl.arange(0, BLOCK)`. With `BLOCK = 64`,
#   program 1 owns 64–127.
#
# **Loads and stores.** A tensor arrives as a pointer to its first element. Adding $k$ to a pointer
# moves it $k$ elements on. `tl.load(X + offs)` reads a block, and `tl.store(Y + offs, y)` writes
# one. Element `(row, t)` of a contiguous `(B, T)` tensor is at `X + row * T + t`.
#
# **Masks.** With 100 elements, program 1 owns indices 64–127, but only 64–99 exist. A *lane* is
# one position of a block. (In CUDA a lane is one thread of a warp; in this course it always means
# one element of a block.) A **mask** is a bool block that says which lanes hold real elements,
# here `offs < 100`. `tl.load(X + offs, mask=offs < n, other=0.0)` reads 0 where the mask is off,
# and a masked store writes nothing there. Without a mask, the kernel reads and writes memory that
# is not yours.
#
# This kernel multiplies each reward $r_t$ by $\gamma^t$, computed as $e^{t \log\gamma}$ (so
# $\gamma > 0$):

# %%
@triton.jit
def discount_kernel(R, OUT, gamma, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # the indices this program owns
    m = offs < n  # lanes past the end are off
    r = tl.load(R + offs, mask=m, other=0.0)
    tl.store(OUT + offs, r * tl.exp(offs.to(tl.float32) * tl.log(gamma)), mask=m)


def discount(rewards, gamma, BLOCK=64):
    out = torch.empty_like(rewards)  # the kernel writes every element: no need to zero it
    n = rewards.numel()
    # triton.cdiv is ceiling division, (n + BLOCK - 1) // BLOCK: enough programs to cover every element
    discount_kernel[(triton.cdiv(n, BLOCK),)](rewards, out, gamma, n, BLOCK=BLOCK)
    return out


r = torch.randn(100, device=DEVICE)  # 100 is not a multiple of 64: the second block is masked
np.testing.assert_allclose(discount(r, 0.9).cpu().numpy(), r.cpu().numpy() * 0.9 ** np.arange(100),
                           rtol=1e-5)
assert triton.cdiv(100, 64) == (100 + 64 - 1) // 64 == 2  # "2 programs"
print("discount: 2 programs of 64 lanes, 28 of them masked off, matches NumPy")

# %% [markdown]
# <a id="python-operators"></a>
#
# **Python operators on blocks: the traps.** Inside a kernel, `r` is a block, not a number. Python's
# `and`, `or`, `not`, `min`, `max` and `if` are made for single values. On a block, what they do
# depends on where they run. The table gives each form, after the arrow the `tl.*` form to write
# instead, and what the Python form does in each of three places:
#
# | Python's form → write instead | in a kernel body, under the interpreter | in a combine, under the interpreter | compiled on a GPU |
# | --- | --- | --- | --- |
# | `a and b`, `a or b`, `not a` → `a & b`, `a \| b`, `~a` (on bool blocks, e.g. `flag != 0`) | wrong, with no warning | right numbers, but the scan runs as a loop, one step at a time, and a loop hides a combine that is not associative | works elementwise |
# | `min(x, y)`, `max(x, y)` → `tl.minimum(x, y)`, `tl.maximum(x, y)` (`tl.clamp(x, lo, hi)`) | wrong, with no warning: `max(x, y)` returns one of the two blocks whole | right numbers, run as a loop, as above | works elementwise |
# | `x if cond else y`, or an `if` statement on a block → `tl.where(cond, x, y)` | wrong, with no warning: an `if` **always takes its `if` branch**, for the whole block | right numbers, run as a loop, as above | refused |
#
# Why ban forms that a GPU compiles elementwise? The interpreter, where you test, gets them wrong
# in a kernel body. In a combine, the package runs the scan as a tree on whole blocks, as a GPU
# does; a Python form makes it fall back to stock Triton's loop
# ([GPU note 3](#GPU-notes)), where a wrong combine can look right, as
# [section 2's mean scan](#loop-or-tree) shows. And the checker compiles your kernel for an H100
# (sm_90), where an `if` on a block is refused. So write the `tl.*` forms everywhere, in a combine
# too. If a kernel seems to ignore an `else`, look for an `if` on a block.
#
# Two more traps, not Python operators:
#
# * `term + trunc` on two loaded bool flags (notebook 02's two episode-end flags): write
#   `term | trunc`. When both are set, 1 + 1 wraps to 0 in one bit, and the episode end vanishes
#   ([appendix](#Arithmetic-on-loaded-bool-flags)).
# * `carry = 0` before a loop that makes it a float: write `carry = 0.0`
#   ([GPU note 2](#GPU-notes)).

# %%
@triton.jit
def both_kernel(X, OUT, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n, other=0.0)
    tl.store(OUT + offs, ((x > 0) & (offs < 3)).to(tl.float32), mask=offs < n)  # elementwise "and"


x = torch.tensor([1.0, -1.0, 2.0, 3.0, -2.0], device=DEVICE)
out = torch.empty_like(x)
both_kernel[(1,)](x, out, 5, BLOCK=8)
assert out.tolist() == [1.0, 0.0, 1.0, 0.0, 0.0]
print("x > 0 and index < 3, elementwise:", out.tolist())

# %% [markdown]
# **Debugging.** Three habits for every exercise:
#
# * Under the interpreter, `print(x)` in a kernel prints a block as NumPy ([GPU note 4](#GPU-notes)).
# * Test first on a case small enough to check by hand, such as one row of five steps.
# * Run it as `exercises.guarded(your_function, *its_arguments)`. This checks each load and store
#   before it happens. Without it, a store past a tensor's end may print the right answer and then
#   kill the notebook's Python process.

# %% [markdown]
# **Exercise `td_target_kernel`.** Write a kernel for the one-step TD target
# $y_t = r_t + \gamma\,(1 - \text{term}_t)\,V(s_{t+1})$. Here $\text{term}_t$ (`terminated`) is 1
# where the episode ends at step $t$. $V(s_{t+1})$ (`next_values`) is the next state's value.
#
# * **Inputs:** `rewards` and `next_values` (float32) and `terminated` (bool), 1-D tensors of
#   any length, and `gamma`, a float.
# * **Returns:** the targets $y_t$, a new tensor of the same length, written by your kernel.
# * **Edge cases:** 8, 1 and 1000 elements, then 16 with NaN in `next_values` at the episode
#   ends, where no next value exists.
# * **Select, don't multiply:** where $\text{term}_t$ is true, select $V(s_{t+1})$ away with
#   `tl.where`.
# * **The checker requires:** your kernel writes every answer itself; numbers computed or patched
#   up in PyTorch are refused. Give the `@triton.jit` kernel its own name, such as `_td_kernel`,
#   because a launcher of the same name replaces it.
#
# <details><summary>Hint 1: where to start</summary>
#
# Start from `discount_kernel` above: program id, offsets, mask, load and store. Your kernel
# loads three inputs instead of one. Each $y_t$ needs only its own step: there is no scan here.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Pick a `BLOCK`, say 128. Launch `triton.cdiv(n, BLOCK)` programs.
# * In each program, compute `offs` and the mask `m`. Load $r_t$, $V(s_{t+1})$ and `terminated`
#   under `m`. Compare the flag with 0: `!= 0`.
# * $y_t = r_t + \gamma V(s_{t+1})$, with 0 in place of $\gamma V(s_{t+1})$ where $\text{term}_t$.
# * Store $y_t$ under `m`. In Python: `out = torch.empty_like(rewards)`, launch, return `out`.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Three steps, $\gamma = 0.5$: $r = (1, 2, 3)$, $V(s_{t+1}) = (4, \text{NaN}, 6)$, and the episode
# ends at $t = 1$. Then $y_0 = 1 + 0.5 \cdot 4 = 3$, $y_1 = 2$ (the NaN is never used) and
# $y_2 = 3 + 0.5 \cdot 6 = 6$. A `nan` at $t = 1$ means you multiplied where you had to select.
#
# ```python
# r, nv = torch.tensor([1.0, 2.0, 3.0], device=DEVICE), torch.tensor([4.0, float("nan"), 6.0], device=DEVICE)
# term = torch.tensor([False, True, False], device=DEVICE)
# print(exercises.guarded(td_target_kernel, r, nv, term, 0.5).tolist())  # must print [3.0, 2.0, 6.0]
# ```
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# term = tl.load(D + offs, mask=m, other=0) != 0  # a bool block
# y = r + tl.where(term, ___, ___)  # (cond, if true, if false): what does a terminated step add?
# tl.store(OUT + offs, y, mask=m)
# # the launch: td_kernel[(triton.cdiv(n, 128),)](rewards, next_values, terminated, out, gamma, n, BLOCK=128)
# ```
#
# </details>

# %%
print(exercises.task("td_target_kernel"))


# %%
def td_target_kernel(rewards, next_values, terminated, gamma):
    # YOUR CODE: a @triton.jit kernel above this function, launched here on a 1-D grid. Give the kernel
    # another name, such as _td_kernel: this function keeps the exercise's name.
    raise NotImplementedError

# %%
exercises.attempt("td_target_kernel", td_target_kernel)

# %% [markdown]
# ## 2. A scan of one block
#
# `tl.associative_scan(x, axis, combine_fn)` computes the inclusive scan of a block `x` in about
# $\log_2(\text{BLOCK})$ parallel steps (notebook 00, section 1). Our blocks are 1-D, so `axis`
# is 0.
#
# * `x` may be a tuple of blocks, such as `(a, b)`, whose element $i$ is the pair `(a[i], b[i])`.
#   The combine, a `@triton.jit` function, then gets two pairs as four arguments,
#   `combine(a1, b1, a2, b2)`, and returns one pair. The scan returns two blocks, `a_s, b_s`.
# * With `reverse=True`, the scan runs from the block's last lane to its first, as a return needs.
#   Under `+`, `(3, 1, 4, 1)` gives `(9, 6, 5, 1)`.
# * In a combine too, write `tl.maximum` and `tl.where` ([section 1's table](#python-operators)).
#
# `affine_combine` below is notebook 00's `combine`, which applies its first operand first
# ([the order rule, 00 §3](00_associative_scan.ipynb#3.-The-backward-recurrence-as-a-reverse-scan)).
# A forward example first: `ema_kernel` computes the moving average
# $y_t = 0.5\,y_{t-1} + 0.5\,x_t$, with pairs $(a_t, b_t) = (0.5, 0.5\,x_t)$:

# %%
@triton.jit
def affine_combine(a1, b1, a2, b2):  # (a1, b1): the first operand, applied first (00's order rule)
    return a2 * a1, b2 + a2 * b1


@triton.jit
def ema_kernel(X, Y, T, BLOCK: tl.constexpr):
    t = tl.arange(0, BLOCK)
    m = t < T
    x = tl.load(X + t, mask=m, other=0.0)
    a = tl.where(m, 0.5, 1.0)  # past the end: the identity (1, 0), harmless to the scan
    _, y = tl.associative_scan((a, 0.5 * x), 0, affine_combine)
    tl.store(Y + t, y, mask=m)


x = torch.randn(37, device=DEVICE)
y = torch.empty_like(x)
ema_kernel[(1,)](x, y, 37, BLOCK=64)
expected = reference.linear_scan(np.full((1, 37), 0.5), 0.5 * x.cpu().numpy()[None], reverse=False)[0]
np.testing.assert_allclose(y.cpu().numpy(), expected, rtol=1e-5, atol=1e-6)
print("EMA by one forward associative scan == the loop")

# %% [markdown]
# **Try it:** `swapped_combine` below applies `(a2, b2)` first, and `ema_swapped_kernel` is
# `ema_kernel` with it. Predict whether it still matches the loop before you run the cell.

# %%
@triton.jit
def swapped_combine(a1, b1, a2, b2):  # the wrong order: (a2, b2) applied first
    return a1 * a2, b1 + a1 * b2


@triton.jit
def ema_swapped_kernel(X, Y, T, BLOCK: tl.constexpr):  # ema_kernel, with swapped_combine
    t = tl.arange(0, BLOCK)
    m = t < T
    x = tl.load(X + t, mask=m, other=0.0)
    a = tl.where(m, 0.5, 1.0)
    _, y = tl.associative_scan((a, 0.5 * x), 0, swapped_combine)
    tl.store(Y + t, y, mask=m)


y_swapped = torch.empty_like(x)
ema_swapped_kernel[(1,)](x, y_swapped, 37, BLOCK=64)
error = np.abs(y_swapped.cpu().numpy() - expected).max()
print(f"swapped combine: largest error against the loop {error:.3f}")
assert error > 0.1  # the wrong order gives wrong values

# %% [markdown]
# It does not match: the maps are composed in the wrong order. Such a slip shows only on inputs
# where the order changes the result, so test a combine on random values.
#
# Now the reverse scan. With `reverse=True`, `tl.associative_scan` calls
# `combine(later run, earlier run)`, as 00's order rule says. The next cell shows it on Triton. Its
# combine `_keep_first` returns its first operand, so each lane ends up holding the step applied
# first in its run.

# %%
@triton.jit
def _keep_first(x1, x2):  # associative, not commutative: keeps the operand applied first
    return x1


@triton.jit
def _keep_first_kernel(X, OUT, REVERSE: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(OUT + i, tl.associative_scan(tl.load(X + i), 0, _keep_first, reverse=REVERSE))


steps_ = torch.tensor([0.0, 1.0, 2.0, 3.0], device=DEVICE)  # lane t holds step t
first_kept = {}
for reverse_ in (True, False):
    out_ = torch.empty_like(steps_)
    _keep_first_kernel[(1,)](steps_, out_, REVERSE=reverse_, BLOCK=4)
    first_kept[reverse_] = out_.tolist()
    print(f"reverse={reverse_}: the four lanes keep steps {[int(v) for v in out_.tolist()]}")

# %% jupyter={"source_hidden": true}
# Checks: with reverse=True, tl.associative_scan's first operand is the run later in time (CI runs them; skip when reading)
# Triton's own test_scan2d (get_first_element) expects the same of a compiled scan.
assert first_kept[True] == [3.0] * 4  # reverse: step 3, the latest, is every run's first operand
assert first_kept[False] == [0.0] * 4  # forward: step 0

# %% [markdown]
# In the reverse scan, every lane keeps step 3, the latest, so the later run is the first operand.
#
# <a id="loop-or-tree"></a>
#
# **A loop or a tree.** Stock Triton's interpreter runs `tl.associative_scan` as a loop, one step
# at a time. Once `rltriton_lite` is imported, the interpreter runs it as a tree, as a GPU does. An
# associative combine gives the same numbers both ways. A combine that is not associative does
# not, and only the tree shows it. The next cell scans $(8, 0, 0, 0)$ with the mean,
# $(u + v) / 2$, which is not associative, both ways.

# %%
@triton.jit
def mean_combine(u, v):  # not associative: mean(mean(8, 0), 0) = 2, but mean(8, mean(0, 0)) = 4
    return (u + v) / 2


@triton.jit
def mean_scan_kernel(X, Y, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(Y + i, tl.associative_scan(tl.load(X + i), 0, mean_combine))


def run_mean_scan():
    x_mean, y_mean = torch.tensor([8.0, 0.0, 0.0, 0.0], device=DEVICE), torch.empty(4, device=DEVICE)
    mean_scan_kernel[(1,)](x_mean, y_mean, BLOCK=4)
    return y_mean.tolist()


if os.environ.get("TRITON_INTERPRET") == "1":
    from triton.runtime import interpreter

    tree_scan = interpreter.ScanOps.generic_scan  # the tree, installed by `import rltriton_lite`
    interpreter.ScanOps.generic_scan = tree_scan.one_by_one  # stock Triton's loop, for this one run
    try:
        loop_out = run_mean_scan()
    finally:
        interpreter.ScanOps.generic_scan = tree_scan  # the tree again
    tree_out = run_mean_scan()
    print("stock Triton (a loop):       ", loop_out)
    print("after import rltriton_lite:  ", tree_out)
    assert loop_out == [8.0, 4.0, 2.0, 1.0]  # the loop: each lane is the mean of the one before and 0
    assert tree_out == [8.0, 4.0, 4.0, 2.0]  # the tree: lane 2 is mean(8, mean(0, 0)), lane 3 mean(4, mean(0, 0))
else:
    print("compiled for this GPU (the compiler's own tree):", run_mean_scan())

# %% [markdown]
# The loop gives $(8, 4, 2, 1)$, the numbers you might expect, so a wrong combine looks right. The
# tree groups the steps in pairs first, and lane 2 gets $\text{mean}(8, \text{mean}(0, 0)) = 4$. So
# `import rltriton_lite` before you test a scan ([GPU note 3](#GPU-notes)).
#
# The next cell replays the tree on text labels, where `'s3 s2'` means step 3, then step 2.

# %%
def replay_reverse_tree(xs, combine, show=False):
    """A reverse scan as a tree (Hillis–Steele): in round k, element t takes combine(element t + k, element t)."""
    xs, k, calls = list(xs), 1, []
    while k < len(xs):
        new = list(xs)
        for t in range(len(xs) - k):
            new[t] = combine(xs[t + k], xs[t])  # the first operand: element t + k; the second: element t
            calls.append((xs[t + k], xs[t]))
            if show:
                print(f"round k={k}: combine(first={xs[t + k]!r}, second={xs[t]!r}) -> {new[t]!r}")
        xs, k = new, 2 * k
    return xs, calls


runs, calls = replay_reverse_tree(["s0", "s1", "s2", "s3"], lambda first, second: first + " " + second, show=True)
print("result:", runs)
assert calls == [("s1", "s0"), ("s2", "s1"), ("s3", "s2"), ("s3 s2", "s1 s0"), ("s3", "s2 s1")]
assert runs == ["s3 s2 s1 s0", "s3 s2 s1", "s3 s2", "s3"]  # step t: the steps from the end down to t, the last first

# %% [markdown]
# So `affine_combine` serves returns unchanged. On four steps with $a_t = 0.5$, each step $t$
# gets $(A_t, B_t)$ (`a_s`, `b_s` in code, `s` for scanned), the map of the steps from $t$ to the
# block's end: $A_t = 0.5^{4-t}$, and $B_t = b_t + 0.5\,B_{t+1}$ with $B_4 = 0$.

# %%
@triton.jit
def reverse_maps_kernel(B_IN, A_OUT, B_OUT, T, BLOCK: tl.constexpr):
    t = tl.arange(0, BLOCK)
    m = t < T
    a = tl.where(m, 0.5, 1.0)
    b = tl.load(B_IN + t, mask=m, other=0.0)
    a_s, b_s = tl.associative_scan((a, b), 0, affine_combine, reverse=True)
    tl.store(A_OUT + t, a_s, mask=m)
    tl.store(B_OUT + t, b_s, mask=m)


b_in = torch.tensor([1.0, 2.0, 3.0, 4.0], device=DEVICE)
a_s, b_s = torch.empty_like(b_in), torch.empty_like(b_in)  # the scanned (A_t, B_t)
reverse_maps_kernel[(1,)](b_in, a_s, b_s, 4, BLOCK=4)
b_hand = [0.0] * 5
for t in reversed(range(4)):
    b_hand[t] = b_in[t].item() + 0.5 * b_hand[t + 1]
assert a_s.tolist() == [0.5 ** (4 - t) for t in range(4)] and np.allclose(b_s.cpu(), b_hand[:4])
print("A_t:", a_s.tolist(), " B_t:", b_s.tolist())

# %% jupyter={"source_hidden": true}
# Checks: the tree above gives reverse_maps_kernel's (A_t, B_t) (CI runs them; skip when reading)
# the same tree on reverse_maps_kernel's numbers, with affine_combine's own body, gives the kernel's (A_t, B_t)
maps, _ = replay_reverse_tree([(0.5, b) for b in b_in.tolist()], lambda first, second: affine_combine.fn(*first, *second))
np.testing.assert_allclose(np.array(maps), np.stack([a_s.cpu().numpy(), b_s.cpu().numpy()], 1), rtol=1e-6)

# %% [markdown]
# **Exercise `block_scan`.** Compute the discounted return of one row,
# $G_t = r_t + \gamma\,G_{t+1}$, in one program.
#
# * **Inputs:** `rewards`, a float32 1-D tensor of $T \le 1024$ steps. `gamma`, the discount.
#   `last_value`, a float: $G_T$, the value after the row's last step.
# * **Returns:** the returns $G_t$, a tensor of length $T$.
# * **Edge cases:** rows of 1, 5, 64 and 1000 steps.
# * **Block size:** a power of two no smaller than $T$, such as `triton.next_power_of_2(T)`. Pad
#   the lanes past $T$ with the identity $(1, 0)$.
# * **The checker requires:** one program and one `tl.associative_scan`, not a loop over the steps.
#
# <details><summary>Hint 1: where to start</summary>
#
# This is `reverse_maps_kernel` above, with your own pairs. Its scan gives each step the map
# $(A_t, B_t)$ from $t$ to the block's end. Ask what that map does to `last_value`, which is $G_T$.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Step $t$ is the map $y \mapsto r_t + \gamma\,y$, the pair $(a_t, b_t) = (\gamma, r_t)$.
# * Launch one program, grid `(1,)`, with `BLOCK = triton.next_power_of_2(T)`.
# * Lanes past $T$ (`m` off) get the identity: $a = 1$, and $b = 0$ (load $r$ with `other=0.0`).
# * Scan the pairs with `affine_combine` and `reverse=True`. Each step gets its composed map
#   $(A_t, B_t)$ to the end.
# * Then $G_t = B_t + A_t \cdot$ `last_value`. Store it under `m`.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Three steps, $\gamma = 0.5$, `last_value` $= 4$, $r = (1, 2, 3)$. From the end:
# $G_2 = 3 + 0.5 \cdot 4 = 5$, $G_1 = 2 + 0.5 \cdot 5 = 4.5$, $G_0 = 1 + 0.5 \cdot 4.5 = 3.25$. Your
# block has 4 lanes, and the fourth is padding. `[2.75, 3.5, 3.0]` means `last_value` was left
# out. `[3.0, 4.0, 4.0]` means the padding lane was $(\gamma, 0)$, not the identity.
#
# ```python
# r = torch.tensor([1.0, 2.0, 3.0], device=DEVICE)
# print(exercises.guarded(block_scan, r, 0.5, 4.0).tolist())  # must print [3.25, 4.5, 5.0]
# ```
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# a = tl.where(m, ___, 1.0)  # ___: a real step's a_t; past T, the identity's 1
# a_s, b_s = tl.associative_scan((a, r), 0, affine_combine, reverse=___)  # which way do returns run?
# tl.store(G + t, ___, mask=m)  # ___: what does the composed map (a_s, b_s) make of last_value?
# ```
#
# </details>

# %%
def block_scan(rewards, gamma, last_value):
    # YOUR CODE
    raise NotImplementedError

# %%
exercises.attempt("block_scan", block_scan)

# %% [markdown]
# **A good place to stop for the first sitting.** The second covers section 3: rows longer than a
# block.

# %% [markdown]
# ## 3. Rows longer than a block: chunks and a carry
#
# A block cannot hold $10^5$ steps. So a program walks its row in **chunks** of `CHUNK` steps,
# scans each chunk, and passes a **carry** from chunk to chunk, as in notebook 00, section 6. Two
# Triton pieces are new:
#
# * `for i in range(0, n_chunks)` is an ordinary loop in the kernel, even when `n_chunks` is
#   known only at run time. To walk backwards, take chunk `n_chunks - 1 - i`.
# * To read one lane of a block, such as `g[0]`, zero every other lane and sum:
#   `tl.sum(tl.where(t == first, g, 0.0), 0)`.
#
# Both appear in a forward running sum. Its carry is the sum at a chunk's last step, added to every
# step of the next chunk:

# %%
@triton.jit
def add(x, y):
    return x + y


@triton.jit
def chunked_cumsum_kernel(X, Y, T, CHUNK: tl.constexpr):
    row = tl.program_id(0)  # one program per row
    carry = 0.0
    for c in range(0, tl.cdiv(T, CHUNK)):
        t = c * CHUNK + tl.arange(0, CHUNK)
        m = t < T
        s = tl.associative_scan(tl.load(X + row * T + t, mask=m, other=0.0), 0, add) + carry
        tl.store(Y + row * T + t, s, mask=m)
        carry = tl.sum(tl.where(t == c * CHUNK + CHUNK - 1, s, 0.0), 0)  # the sum so far


x = torch.randn(3, 300, device=DEVICE)
y = torch.empty_like(x)
chunked_cumsum_kernel[(3,)](x, y, 300, CHUNK=128)
torch.testing.assert_close(y, x.cumsum(1), rtol=1e-5, atol=1e-4)
print("3 rows x 300 steps in chunks of 128 == cumsum")

# %% [markdown]
# **The carry in reverse.** For a return, the chunks go from the last in time, and the carry enters
# each chunk from later in time: it is $G$ at the first step after the chunk. The scan of a chunk
# gives each step $t$ its composed map $(A_t, B_t)$ to the chunk's end, and
# $G_t = B_t + A_t \cdot \text{carry}$. The cell below does this walk in NumPy, as one program
# does it, on the discounted sum $y_t = x_t + \gamma\,y_{t+1}$ with $y_T = 0$.
#
# <details><summary>Details: the running sum and the discounted sum side by side, and the walk drawn</summary>
#
# | | running sum (above) | discounted sum (below) |
# | --- | --- | --- |
# | the chunks are done | from the first in time | from the last in time |
# | the carry is read at | the chunk's last step | the chunk's **first** step |
# | it enters | the chunk after | the chunk **before** |
# | finishing step $t$ | $s_t + \text{carry}$ | $B_t + A_t \cdot \text{carry}$ |
#
# $B_t$ is the discounted sum over the steps from $t$ to the chunk's end, as if nothing came after
# them. $A_t = \gamma^{n_t}$, where $n_t$ counts those steps. Here is the walk drawn on 10 steps
# in chunks of 4:
#
# ```text
#   t:       0  1  2  3 │ 4  5  6  7 │ 8  9
#            chunk 0    │ chunk 1    │ chunk 2
#   order:   3rd        │ 2nd        │ 1st        ← carry 0 enters chunk 2 (nothing after the row)
#                         ▲            ▲
#                         │            └─ y_8, chunk 2's first step, is the carry into chunk 1
#                         └─ y_4, chunk 1's first step, is the carry into chunk 0
# ```
#
# </details>

# %%
def chunked_discounted_sum(x, gamma, chunk, show=False):
    """y_t = x_t + gamma * y_{t+1}, with y_T = 0, one chunk at a time from the end."""
    T = len(x)
    y = np.zeros(T)
    carry = 0.0  # y_T: nothing comes after the row
    for c in reversed(range(-(-T // chunk))):  # from the last chunk in time
        start, end = c * chunk, min(c * chunk + chunk, T)
        b_s, acc = np.zeros(end - start), 0.0  # the scanned B_t
        for k in reversed(range(end - start)):  # the chunk alone (in a kernel: one reverse scan)
            acc = x[start + k] + gamma * acc
            b_s[k] = acc
        a_s = gamma ** (end - start - np.arange(end - start))  # A_t: gamma^(steps from t to the chunk's end)
        y[start:end] = b_s + a_s * carry
        if show:
            print(f"chunk {c}: steps {start}..{end - 1}, carry in {carry:6.3f}, carry out y_{start} = {y[start]:6.3f}")
        carry = y[start]  # read at the chunk's FIRST step: it enters the chunk before
    return y


x_np = np.arange(1.0, 11.0)  # 10 steps: 1, 2, ..., 10
y_np = chunked_discounted_sum(x_np, 0.5, 4, show=True)
np.testing.assert_allclose(y_np, reference.linear_scan(np.full(10, 0.5), x_np), rtol=1e-12)
for T_, chunk_ in [(10, 1), (10, 3), (37, 8), (37, 64)]:
    x_ = np.random.default_rng(T_ + chunk_).normal(size=T_)
    np.testing.assert_allclose(chunked_discounted_sum(x_, 0.9, chunk_), reference.linear_scan(np.full(T_, 0.9), x_),
                               rtol=1e-12)
print("chunks from the end, the carry read at each chunk's first step == the loop")

# %% [markdown]
# Your kernel does the same walk: `block_scan`'s reverse scan in each chunk, the carry in place of
# `last_value`, and the `tl.sum(tl.where(...))` trick for `y[start]`.

# %% [markdown]
# **Exercise `chunked_scan`.** Discounted returns, $G_t = r_t + \gamma\,G_{t+1}$ with $G_T = 0$,
# for a batch of rows of any length.
#
# * **Inputs:** `rewards`, a contiguous float32 tensor of shape `(n_rows, T)`, for any `T`. Then
#   `gamma`, and `chunk`, the chunk size. The checker picks 64 or 128.
# * **Returns:** the returns $G_t$, an `(n_rows, T)` tensor.
# * **Edge cases:** rows shorter than a chunk (5 steps), then rows of 300 and 700 steps.
# * **The checker requires:** one program per row, and chunks of `chunk` steps with one
#   `tl.associative_scan` each. A scan wider than `chunk` is refused.
#
# <details><summary>Hint 1: where to start</summary>
#
# You have both halves already. `block_scan` scans one chunk. `chunked_discounted_sum` walks the
# chunks from the end, with a carry. Put the scan inside that walk. The skeleton below gives the
# loop.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Launch `n_rows` programs, one per row: `row = tl.program_id(0)`. Pass `CHUNK=chunk`.
# * Start with `carry = 0.0`, since $G_T = 0$. Write a float, not `0`. Walk the chunks from the
#   last one down: `c = n_chunks - 1 - i`.
# * In chunk `c`: `t = c * CHUNK + tl.arange(0, CHUNK)` and `m = t < T`. Row `row` starts at
#   `row * T`.
# * Build the pairs $(\gamma, r_t)$ and the padding as in `block_scan`. The reverse scan gives
#   $(A_t, B_t)$.
# * $G_t = B_t + A_t \cdot \text{carry}$. Store it.
# * The new carry is $G$ at the chunk's first step, where `t == c * CHUNK`.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# One row, $\gamma = 0.5$, $r = (1, 0, 2, 0, 8)$, `chunk = 2`. The chunks, in the order they
# are done: $\{4\}$ (its second lane is padding), $\{2, 3\}$, $\{0, 1\}$. Chunk $\{4\}$ gives
# $G_4 = 8$, the carry out. Chunk $\{2, 3\}$ alone has $B = (2, 0)$ and $A = (0.25, 0.5)$, so
# $G_2 = 2 + 0.25 \cdot 8 = 4$ and $G_3 = 0.5 \cdot 8 = 4$. The carry out is 4. Chunk $\{0, 1\}$
# gives $G_0 = 1 + 0.25 \cdot 4 = 2$ and $G_1 = 0.5 \cdot 4 = 2$. Chunks of 2, 4 and 64 must all
# give $(2, 2, 4, 4, 8)$.
#
# ```python
# r = torch.tensor([[1.0, 0.0, 2.0, 0.0, 8.0]], device=DEVICE)
# print(exercises.guarded(chunked_scan, r, 0.5, 2).tolist())  # must print [[2.0, 2.0, 4.0, 4.0, 8.0]]
# ```
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# r = tl.load(R + ___ + t, mask=m, other=0.0)  # ___: where does row `row` start in memory?
# g = ___                                      # G_t from the scanned (a_s, b_s) and the carry
# tl.store(G + ___ + t, g, mask=m)
# carry = tl.sum(tl.where(___, g, 0.0), 0)     # ___: which lane holds the chunk's first step?
# ```
#
# </details>

# %%
# A skeleton, if you want one (the kernel goes above the function):
#
# @triton.jit
# def chunked_kernel(R, G, gamma, T, CHUNK: tl.constexpr):
#     row = tl.program_id(0)
#     carry = 0.0                          # G after the row's last step
#     n_chunks = tl.cdiv(T, CHUNK)
#     for i in range(0, n_chunks):
#         c = n_chunks - 1 - i             # the chunks from the last one down
#         t = c * CHUNK + tl.arange(0, CHUNK)
#         ...                              # load, pairs, reverse scan, g = b_s + a_s * carry, store
#         carry = ...                      # G at the chunk's first step, c * CHUNK
def chunked_scan(rewards, gamma, chunk):
    # YOUR CODE
    raise NotImplementedError

# %%
exercises.attempt("chunked_scan", chunked_scan)

# %% [markdown]
# ## Exercises
#
# The three checked exercises are in the lesson. Notebook 00c starts from a written-out chunked
# scan, so you can go on even if yours does not pass yet.

# %% [markdown]
# ## What you now know
#
# * A kernel runs as many programs, each owning a block of indices (`tl.program_id`,
#   `tl.arange`). Every load and store that can run past the end needs a mask.
# * On blocks, use `&`, `|`, `~`, `tl.minimum`, `tl.maximum` and `tl.where`, not Python's
#   operators.
# * `tl.associative_scan` takes `affine_combine` in both directions. Returns need `reverse=True`.
#   Padding lanes hold the identity $(1, 0)$.
# * Rows of any length are cut into chunks, each finished by $y_t = B_t + A_t \cdot \text{carry}$.
#   For a return, the chunks go from the end, and the carry is $y$ at the first step of the chunk
#   after.
#
# Notebook 00c comes next. It adds episode ends, then hooks and the package's kernel.

# %% [markdown]
# ## Triton rules
#
# The rules every kernel of the course follows. The middle column says in which section you first
# need each rule. Notebook 00c adds
# [two rules for hooks](00c_episodes_and_hooks.ipynb#Before-the-package:-a-hook-as-an-argument,-tuples-of-pointers,-loops-unrolled).
#
# | rule | needed from | explained in |
# | --- | --- | --- |
# | Mask every load and store that can run past a tensor's end. | §1 | §1 |
# | `tl.arange(0, BLOCK)`: `BLOCK` is a power of two and a `tl.constexpr`. | §1 | §1 |
# | On blocks, use `&`, `\|`, `~`, `tl.minimum`, `tl.maximum`, `tl.where`, never Python's `and`, `or`, `not`, `min`, `max` or `if`. | §1 | [§1's table](#python-operators) |
# | Compare a loaded flag with 0 (`!= 0`): needed for int8 or uint8 flags, harmless on bool. Join two flags with `\|`, not `+`. | §1 | [§1](#python-operators); [the appendix](#Arithmetic-on-loaded-bool-flags) |
# | Start a float carry as `0.0`, not `0`. | §3 | [§1](#python-operators); [GPU note 2](#GPU-notes) |
# | Select with `tl.where`; never multiply by 0 to drop a value (`0 * NaN` is NaN). A reset is such a select, in the combine and on the carry. | §1 | [00 §4](00_associative_scan.ipynb#4.-Episode-ends-are-resets); [00c §1](00c_episodes_and_hooks.ipynb#1.-Episode-ends-as-a-select:-the-reset) |
# | `combine(first, second)` applies `first` first; in a reverse scan, `first` is the later run. | §2 | [00 §3](00_associative_scan.ipynb#3.-The-backward-recurrence-as-a-reverse-scan); §2 |
# | Lanes past the row's end hold the combine's identity, the step that changes nothing: $(1, 0)$ for a pair. | §2 | [00 §5](00_associative_scan.ipynb#5.-Padding-is-the-identity,-and-rl.linear_scan); §2 |
# | In a reverse scan, read the carry at the chunk's first step in time, for the chunk before it. | §3 | [00 §6](00_associative_scan.ipynb#6.-Chunks-and-a-carry); §3 |
# | Give your `@triton.jit` kernel its own name, such as `_td_kernel`: a launcher of the same name replaces it. | §1 | §1's exercise |
# | Your kernel writes the answer itself: the checker refuses numbers computed or patched up in PyTorch. | §1 | §1's exercise |
# | In a script of your own, `import rltriton_lite` before you run a kernel. | §1 | [GPU note 3](#GPU-notes) |

# %% [markdown]
# ## Appendix: behind the scenes
#
# Nothing here is needed for the exercises. It covers why arithmetic on loaded bool flags goes
# wrong.

# %% [markdown]
# ### Arithmetic on loaded bool flags
#
# Two flags end an episode, as in section 1's `term + trunc` trap: `term` (*terminated*) says the
# episode ended, and `trunc` (*truncated*) says a time limit cut it off. Loaded from bool tensors,
# they are `int1` blocks, one bit each, so arithmetic on them wraps around. Below, `d` is such a flag, and `d8` the same flag stored as
# `int8`:
#
# | expression | value on False / True | fine or not |
# | --- | --- | --- |
# | `d + d`, as in `term + trunc` | 0 / 0 | wrong: when both are set, 1 + 1 wraps to 0 in one bit and the episode end vanishes |
# | `-d` | 0 / 1 | wrong: `-True` should be −1, but a one-bit value holds only 0 and 1, so −1 wraps round to 1 |
# | `1 - d` | 1 / 0 | fine: the Python integer makes it `int32` |
# | `d \| d`, as in `term \| trunc` | 0 / 1 | fine |
# | `d.to(tl.float32) + d.to(tl.float32)` | 0 / 2 | fine: converted first |
# | `~d` | 1 / 0 | fine: a logical not, on a bool block |
# | `~d8` | −1 / −2 | wrong: on `int8`, `~` flips every bit |
# | `~(d8 != 0)` | 1 / 0 | fine: so always compare a loaded flag with 0 |

# %% jupyter={"source_hidden": true}
# Checks: the claims on bool flags above (CI runs them; skip when reading)
@triton.jit
def _bool_arith(D, D8, OUT, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    d = tl.load(D + i)  # a bool tensor: an int1 block
    d8 = tl.load(D8 + i)  # the same flags stored as int8
    tl.store(OUT + 0 * BLOCK + i, (d + d).to(tl.float32))
    tl.store(OUT + 1 * BLOCK + i, (-d).to(tl.float32))
    tl.store(OUT + 2 * BLOCK + i, (1 - d).to(tl.float32))
    tl.store(OUT + 3 * BLOCK + i, 0.5 * (1 - d))
    tl.store(OUT + 4 * BLOCK + i, (~d).to(tl.float32))
    tl.store(OUT + 5 * BLOCK + i, (~d8).to(tl.float32))
    tl.store(OUT + 6 * BLOCK + i, (~(d8 != 0)).to(tl.float32))
    tl.store(OUT + 7 * BLOCK + i, (d | d).to(tl.float32))
    tl.store(OUT + 8 * BLOCK + i, d.to(tl.float32) + d.to(tl.float32))


flags = torch.tensor([False, True], device=DEVICE)
bool_out = torch.empty(9, 2, device=DEVICE)
_bool_arith[(1,)](flags, flags.to(torch.int8), bool_out, BLOCK=2)
assert bool_out[:2].tolist() == [[0.0, 0.0], [0.0, 1.0]]  # bool + bool wraps to 0; -True is 1
assert bool_out[2:5].tolist() == [[1.0, 0.0], [0.5, 0.0], [1.0, 0.0]]  # 1 - d (times gamma too), ~d: right
assert bool_out[5:7].tolist() == [[-1.0, -2.0], [1.0, 0.0]]  # ~ on int8 flips the bits; after != 0, a not
assert bool_out[7:].tolist() == [[0.0, 1.0], [0.0, 2.0]]  # the fixes: d | d, and d + d after .to(tl.float32)
_bool_arith[(1,)](flags, flags.to(torch.uint8), bool_out, BLOCK=2)  # the rules card: uint8 flags too
assert bool_out[5:7].tolist() == [[255.0, 254.0], [1.0, 0.0]]  # ~ on uint8 flips the bits; after != 0, a not


@triton.jit
def _term_plus_trunc(TERM, TRUNC, OUT, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(OUT + i, ((tl.load(TERM + i) + tl.load(TRUNC + i)) != 0).to(tl.float32))


ends = torch.empty(4, device=DEVICE)  # does term + trunc still say "the episode ended"?
_term_plus_trunc[(1,)](
    torch.tensor([False, True, False, True], device=DEVICE),
    torch.tensor([False, False, True, True], device=DEVICE),
    ends,
    BLOCK=4,
)
assert ends.tolist() == [0.0, 1.0, 1.0, 0.0]  # right with one flag set; both set: 1 + 1 wraps to 0, the end vanishes


# %% [markdown]
# ## GPU notes
#
# What differs between Triton's interpreter, on a CPU, and a GPU, cited as "GPU note 3". Notes 1
# to 3 matter for the exercises; 4 to 6 are in the fold below. Two more come where they first
# matter: [00c's rules for hooks](00c_episodes_and_hooks.ipynb#Two-Triton-rules-for-hooks) and
# [00d's `tl.maximum` and a NaN](00d_more_scans.ipynb#tl.maximum-and-a-NaN).
#
# 1. **Use `tl.*` forms everywhere in a kernel or a combine**, never Python's `and`, `or`, `not`,
#    `min`, `max` or `if` on a block: [section 1's table](#python-operators) says what each does.
# 2. **Start a float carry as `0.0`, not `0`.** A GPU compile refuses a loop variable whose type
#    changes, from int32 to float32. The interpreter runs it; the checker's compile reports it.
# 3. **Import `rltriton_lite` before you test a scan.** Stock Triton's interpreter runs
#    `tl.associative_scan` as a loop, one step at a time, where a combine that is not associative
#    can look right. Once the package is imported, the interpreter runs the scan as a tree on whole
#    blocks, as a GPU does, so such a combine gives wrong numbers on the CPU too. A combine that
#    cannot take whole blocks, such as one that uses Python's `max` or `if` on its values, falls
#    back to stock Triton's loop. [Section 2's mean scan](#loop-or-tree) runs both.
#
# <details><summary>More GPU notes (read before running on a GPU)</summary>
#
# 4. **Printing.** On a GPU, use `tl.device_print("x", x)` instead of `print(x)`.
# 5. **Two versions of Triton.** The CPU install pins Triton 3.9.0, whose interpreter runs every
#    check. These notes' GPU halves were checked with Triton 3.6.
# 6. **The `backend` argument** (00, section 5). Its default, `"auto"`, runs PyTorch code on a
#    CPU. The notebooks pass `backend=KERNEL` (`"triton"`), so the kernel runs on both.
#
# **Why the notes hold: the interpreter and the compiler, side by side.**
#
# * **Note 2.** The interpreter runs Python, so it accepts this form, and no cell can show the
#   compiler's error. The checker's compile for sm_90 needs no GPU.
# * **Note 3.** The package and a GPU both run a tree, but not the same tree: a GPU groups the
#   steps in another order, so a combine that is not associative can give other wrong numbers
#   there, while an associative one gives the same result up to rounding. The checkers try your
#   combine grouped several ways, and say so if it is not associative.
# * **Note 5.** `requirements.txt` pins the CPU's Triton. A GPU machine keeps the Triton of its
#   CUDA build of torch (see the README).
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: section 1's table, its two interpreter columns: Python's max and if in a kernel body, max in a combine (CI runs them; skip when reading)
import contextlib
import io


@triton.jit
def _python_max(X, Y, OUT, BLOCK: tl.constexpr):  # max in a kernel body
    i = tl.arange(0, BLOCK)
    tl.store(OUT + i, max(tl.load(X + i), tl.load(Y + i)))


@triton.jit
def _python_if(X, OUT, BLOCK: tl.constexpr):  # an if on a block of run-time values
    x = tl.load(X + tl.arange(0, BLOCK))
    if x > 0:
        y = x
    else:
        y = -x
    tl.store(OUT + tl.arange(0, BLOCK), y)


@triton.jit
def _max_python(u, v):  # Python's max in a combine
    print("combine sees", u)
    return max(u, v)


@triton.jit
def _running_max(X, OUT, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(OUT + i, tl.associative_scan(tl.load(X + i), 0, _max_python))


def _run_running_max(x):  # the running max, and what the combine printed
    out, printed = torch.empty_like(x), io.StringIO()
    with contextlib.redirect_stdout(printed):
        _running_max[(1,)](x, out, BLOCK=4)
    return out.tolist(), [line.split("[")[1].split() for line in printed.getvalue().splitlines()]


x_, y_ = (torch.tensor(v, device=DEVICE) for v in ([3.0, -1.0, 5.0, 0.0], [0.0, 2.0, 1.0, 4.0]))
o_ = torch.empty_like(x_)
if os.environ.get("TRITON_INTERPRET") == "1":  # in the interpreter, max in a kernel body returns one block whole
    _python_max[(1,)](x_, y_, o_, BLOCK=4)
    assert o_.tolist() == y_.tolist() != torch.maximum(x_, y_).tolist()
    for x_if in ([3.0, -1.0, 5.0, -2.0], [-3.0, -1.0, -5.0, -2.0]):  # mixed signs, then all below 0
        o_if = torch.empty(4, device=DEVICE)
        _python_if[(1,)](torch.tensor(x_if, device=DEVICE), o_if, BLOCK=4)
        assert o_if.tolist() == x_if != [abs(v) for v in x_if]  # the if branch for the whole block, even all below 0
    # In a combine. Stock Triton's interpreter calls a scan's combine element by element. With rltriton_lite
    # imported, the interpreter first tries the combine on whole blocks. When a Python form such as max, if or
    # and asks whether a block is true, it falls back to the element-by-element loop. So Python's max in a
    # combine gives the right values on the CPU, and a print in the combine shows one block, then single
    # elements. The loop can also hide a combine that is not associative (note 3).
    from triton.runtime import interpreter

    tree = interpreter.ScanOps.generic_scan  # the package's, installed by `import rltriton_lite`
    interpreter.ScanOps.generic_scan = tree.one_by_one  # stock Triton's loop, for this one run
    try:
        stock_max, stock_seen = _run_running_max(x_)
    finally:
        interpreter.ScanOps.generic_scan = tree
    package_max, package_seen = _run_running_max(x_)
    assert stock_max == package_max == torch.cummax(x_, 0).values.tolist() == [3.0, 3.0, 5.0, 5.0]  # max is right
    assert all(len(seen) == 1 for seen in stock_seen)  # stock: single elements only
    assert len(package_seen[0]) == 4 and all(len(seen) == 1 for seen in package_seen[1:])  # one block, then elements
