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
# # 00b — Triton from zero: from a first kernel to the package's scan
#
# * **You will learn:** to write Triton kernels from zero: programs, masks, loads and stores;
#   `tl.associative_scan`; a chunk loop with a carry; episode ends as selects; hooks passed as
#   `tl.constexpr` arguments; then to read the package's kernel.
# * **Time:** 5–10 h for a Triton newcomer, in two or three sessions (sections 1–3; then 4–6
#   and `strided_scan`); its one open question, on a GPU, another 30–45 min.
# * **Needs:** notebook 00. No GPU: Triton's interpreter runs every kernel on a CPU (the open
#   question needs one).
#
# Notebook 00 showed that every algorithm in this course is a reverse scan over affine maps.
# Here you write that scan as a GPU kernel, in five steps, each one an exercise that checks
# itself:
#
# 1. a first kernel: programs, blocks of indices, masks, loads and stores;
# 2. a scan of one block with `tl.associative_scan`;
# 3. rows longer than a block: a loop over chunks with a carry;
# 4. episode ends as a select: the reset flag, so a NaN never crosses an episode end;
# 5. hooks: the algorithm's prologue and epilogue as functions the kernel calls, then passed to
#    it as arguments.
#
# Then you read the package's own kernel, which is these five steps plus the engineering that
# makes them fast (that part is optional: notebook 13, the appendix). Words you meet here for the
# first time (program, block, mask, carry, hook, warp, ...) are in the glossary,
# [`GLOSSARY.md`](GLOSSARY.md).
#
# **No GPU needed**: Triton's interpreter runs every kernel on the CPU (`TRITON_INTERPRET=1`,
# set before `triton` is imported: the next cell does it). What the interpreter cannot show you
# is in notebook 13, section 6.
#
# **How the exercises work** (here and in every later notebook):
#
# * Write the function in the starter's cell, then run the `exercises.attempt` cell after it.
# * A failure names the case, the element where the error starts, and a hint.
# * Your kernel must write the answer itself. Numbers computed or patched up in PyTorch are refused.
# * `print(exercises.task(name))` restates a task. Solutions are in `notebooks/solutions/<name>.py`.
# * Each task lists its **Inputs**, what it **Returns**, the **Edge cases** the checker tries,
#   and a **Hint**.

# %%
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import inspect

import numpy as np
import triton
import triton.language as tl

import rltriton_lite as rl
from rltriton_lite import exercises, reference

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# the Triton kernels: compiled on a GPU, in the interpreter on a CPU (backend="auto" takes the PyTorch path on a CPU)
KERNEL = "triton"
print("device:", DEVICE, "(Triton interpreter)" if os.environ.get("TRITON_INTERPRET") == "1" else "")

# %% [markdown]
# ## 1. A first kernel
#
# A Triton kernel is a function that many **programs** run at once, each on its own **block** of
# data. You launch it on a grid, `kernel[(n_programs,)](args...)`; inside, `tl.program_id(0)`
# says which program this is. A program works on whole blocks: `tl.arange(0, BLOCK)` is the
# vector $0, 1, \dots, \text{BLOCK}-1$ (BLOCK a power of two, a `tl.constexpr`: fixed when the
# kernel is compiled), so `offs = pid * BLOCK + tl.arange(0, BLOCK)` are the indices this
# program owns. Tensors arrive as pointers to their first element, and pointer arithmetic counts
# elements, not bytes: `tl.load(X + offs)` reads the block, `tl.store(Y + offs, y)` writes it,
# and element `(row, t)` of a contiguous `(B, T)` tensor is at `X + row * T + t`.
#
# The last block usually runs past the end of the tensor. A **mask** says which lanes are real:
# `tl.load(X + offs, mask=offs < n, other=0.0)` reads 0 where the mask is off, and a masked
# store writes nothing there. Forgetting the mask reads and writes memory that is not yours.
#
# Here is a complete kernel: discount each reward by $\gamma^t$.

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
    discount_kernel[(triton.cdiv(n, BLOCK),)](rewards, out, gamma, n, BLOCK=BLOCK)
    return out


r = torch.randn(100, device=DEVICE)  # 100 is not a multiple of 64: the second block is masked
np.testing.assert_allclose(discount(r, 0.9).cpu(), r.cpu() * 0.9 ** np.arange(100), rtol=1e-5)
print("discount: 2 programs of 64 lanes, 28 of them masked off, matches NumPy")

# %% [markdown]
# **Python operators on blocks: the traps.** Inside a kernel, a value like `r` is a block, not a
# number. Python's `and`, `or`, `not`, `min`, `max` and `if` act on one truth value. Compiled for
# a GPU, Triton turns `min`, `max`, `and` and `or` on blocks into the elementwise forms (with a
# deprecation warning) and refuses `if` on a block; the interpreter runs Python's own operators,
# so `min(x, y)` returns one of the two blocks whole and `(x > 0) and (y > 0)` returns `y > 0`,
# without a word: code that is right on a GPU is silently wrong on the CPU. Use the elementwise
# forms, which are right on both:
#
# | not this | but this |
# | --- | --- |
# | `a and b`, `a or b`, `not a` | `a & b`, `a \| b`, `~a` (on bool blocks, e.g. `flag != 0`) |
# | `min(x, y)`, `max(x, y)` | `tl.minimum(x, y)`, `tl.maximum(x, y)` (`tl.clamp(x, lo, hi)`) |
# | `if cond: x else: y` | `tl.where(cond, x, y)` |
# | integer arithmetic on a loaded bool tensor (an `int1` block: `d + d` is 0 where `d` is true) | `tl.where(d, x, y)`, or `d.to(tl.float32)` first |
# | a loop's carry started as an integer, `carry = 0`, then made a float in the loop | `carry = 0.0`: a GPU compile refuses a loop variable whose type changes (int32 to fp32); the interpreter runs it (the checks compile your kernel for a GPU too, and say so) |
#
# To see inside a kernel under the interpreter, `print(x)` prints a block as NumPy (on a GPU,
# `tl.device_print("x", x)`). And test on a case small enough to check by hand first: one row of
# five steps.

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
# **Exercise `td_target_kernel`.** Write a kernel for the one-step TD target
# $y_t = r_t + \gamma\,(1 - d_t)\,V(s_{t+1})$.
#
# * **Inputs:** `rewards` and `next_values` (float32) and `dones` (bool), 1-D tensors of any
#   length, and `gamma`, a float.
# * **Returns:** the targets $y_t$, a new tensor of the same length, written by your kernel.
# * **Edge cases:** the checker tries 8, 1 and 1000 elements. Then 16, with NaN in `next_values`
#   behind the episode ends, where no next value exists.
# * **Hint:** `dones` is a bool tensor. Load it and compare with 0. Select, don't multiply:
#   `tl.where(done, 0.0, gamma * v_next)`, because $0 \cdot \text{NaN} = \text{NaN}$.

# %%
print(exercises.task("td_target_kernel"))


# %%
def td_target_kernel(rewards, next_values, dones, gamma):
    # YOUR CODE: a @triton.jit kernel above this function, launched here on a 1-D grid
    raise NotImplementedError

# %%
exercises.attempt("td_target_kernel", td_target_kernel)

# %% [markdown]
# ## 2. A scan of one block
#
# `tl.associative_scan(x, axis, combine_fn)` computes all prefixes of a block under an
# associative operator, in about $\log_2(\text{BLOCK})$ parallel steps (notebook 00, section 1).
# `combine_fn` is itself a `@triton.jit` function of two elements; for a tuple of blocks it
# takes two tuples' worth of arguments, `combine(a1, b1, a2, b2)`, and returns a tuple.
#
# **The order of the arguments matters**, because the affine operator is not commutative. The
# scan works on a tree, so both arguments are composed runs of consecutive elements; what is
# fixed is their order. In a forward scan `(a1, b1)` is the run that comes first in the block and
# `(a2, b2)` the run right after it. With `reverse=True` the scan runs from the end: `(a1, b1)`
# is the run that comes *later* in the block (already composed) and `(a2, b2)` the run just
# before it — exactly the order of a return, where step $t$ is applied to the value that comes
# after it. In both cases `combine` applies `(a1, b1)` first. On a block of 8 steps, at the last
# level of the tree:
#
# ```text
# forward scan (reverse=False): y_t = a_t·y_{t-1} + b_t; the carry moves left to right →
#
#   step:  0     1     2     3     4     5     6     7
#          └────(a1, b1)─────┘     └────(a2, b2)─────┘
#          earlier run:            later run:
#          applied first           applied second
#   the result at t: the map of steps 0..t,   y_t = B_t + A_t·(the carry before step 0)
#
# reverse scan (reverse=True): y_t = a_t·y_{t+1} + b_t; the carry moves right to left ←
#
#   step:  0     1     2     3     4     5     6     7
#          └────(a2, b2)─────┘     └────(a1, b1)─────┘
#          earlier run:            later run, already composed:
#          applied second          applied first
#   the result at t: the map of steps t..end, y_t = B_t + A_t·(the carry after the end)
#
# in both: combine(a1, b1, a2, b2) = (a2·a1, b2 + a2·b1), the map y ↦ a2·(a1·y + b1) + b2,
#          which is notebook 00's combine((a1, b1), (a2, b2))
# ```
#
# The combine is the same function in both directions. It composes two affine maps, so the code
# calls it `affine_combine`: the name says what it does, not which way the scan runs. A forward
# example first: the running state of $y_t = a_t y_{t-1} + b_t$ (an exponential moving average
# with $a_t = 0.5$, $b_t = 0.5 x_t$):

# %%
@triton.jit
def affine_combine(a1, b1, a2, b2):
    # (a1, b1): the run applied first (in a forward scan the steps before, in a reverse scan
    # the steps after); then (a2, b2): y -> a2 * y + b2
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
np.testing.assert_allclose(y.cpu(), expected, rtol=1e-5, atol=1e-6)
print("EMA by one forward associative scan == the loop")

# %% [markdown]
# Swap the two halves of `affine_combine` (`a1 * a2, b1 + a1 * b2`) and run the cell again.
# The check fails, because the composition is applied in the wrong order.
#
# `affine_combine` is notebook 00's `combine` with the pairs unpacked: `affine_combine(*p, *q)`
# is `combine(p, q)`, `p` applied first, the same order.
#
# Now the same `affine_combine` with `reverse=True`. To see what a reverse scan hands back, take
# four steps with $a_t = 0.5$. Each step gets its map composed from itself to the block's end,
# $(A_t, B_t)$. The hand computation below matches it: $A_t = 0.5^{4-t}$ and
# $B_t = b_t + 0.5\,B_{t+1}$.

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
A_s, B_s = torch.empty_like(b_in), torch.empty_like(b_in)
reverse_maps_kernel[(1,)](b_in, A_s, B_s, 4, BLOCK=4)
B_hand = [0.0] * 5
for t in reversed(range(4)):
    B_hand[t] = b_in[t].item() + 0.5 * B_hand[t + 1]
assert A_s.tolist() == [0.5 ** (4 - t) for t in range(4)] and np.allclose(B_s.cpu(), B_hand[:4])
print("A_t:", A_s.tolist(), " B_t:", B_s.tolist())

# %% [markdown]
# **Exercise `block_scan`.** The discounted return of one row,
# $G_t = r_t + \gamma(1 - d_t)\,G_{t+1}$, in one program.
#
# * **Inputs:** `rewards` (float32) and `dones` (bool), 1-D tensors of $T \le 1024$ steps,
#   `gamma`, and `last_value`, a float: $G_T$, the value after the row's last step.
# * **Returns:** the returns $G_t$, a tensor of length $T$.
# * **Edge cases:** rows of 1, 5, 64 and 1000 steps. The two longer rows have episode ends, one
#   of them at the row's last step. $T$ need not be a power of two, but the block size must be:
#   `triton.next_power_of_2(T)`, the lanes past $T$ padded with the identity $(1, 0)$.
# * **Hint:** build the pairs $(a_t, b_t) = (\gamma(1-d_t), r_t)$ and scan them with
#   `reverse=True` and `affine_combine` itself (it applies `(a1, b1)` first in both directions).
#   The scan gives each step its composed map $(A_t, B_t)$ from $t$ to the end, so
#   $G_t = B_t + A_t \cdot$ `last_value`.

# %%
def block_scan(rewards, dones, gamma, last_value):
    # YOUR CODE
    raise NotImplementedError

# %%
exercises.attempt("block_scan", block_scan)

# %% [markdown]
# ## 3. Rows longer than a block: chunks and a carry
#
# A block cannot hold $10^5$ steps. So a program walks its row in **chunks** of `CHUNK` steps,
# from the last chunk to the first, and hands each chunk the value that enters it from the
# right, the **carry** $G_{t_{\text{end}}+1}$ (notebook 00, section 5). After the scan of a chunk,
# each step holds its composed map $(A_t, B_t)$ from $t$ to the chunk's end, so
# $G_t = B_t + A_t \cdot \text{carry}$, and the new carry is $G$ at the chunk's first step.
#
# Two Triton points:
#
# * `for i in range(0, n_chunks)` with a run-time bound is an ordinary loop in the kernel. Count
#   up, and take chunk `n_chunks - 1 - i` to walk backwards.
# * To take one element of a block (the first step's $G$), sum the block where the index
#   matches: `tl.sum(tl.where(t == first, g, 0.0), 0)`.
#
# The first worked example runs forwards, a running sum over chunks. Its carry is the sum at a
# chunk's *last* step, and it feeds the chunk *after*:

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
# **The carry in reverse.** Returns run the other way. Take the simplest reverse case first: a
# discounted sum with a constant $\gamma$ and no episode ends, $y_t = x_t + \gamma\,y_{t+1}$, with
# $y_T = 0$. Compared with the running sum, the carry changes direction:
#
# | | running sum (above) | discounted sum (below) |
# | --- | --- | --- |
# | the chunks, in the order they are done | the first one first | the last one first |
# | the carry is read at | the chunk's last step | the chunk's **first** step |
# | it enters | the chunk after | the chunk **before** |
# | finishing step $t$ | $s_t + \text{carry}$ | $B_t + A_t \cdot \text{carry}$ |
#
# On 10 steps in chunks of 4:
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
# Inside a chunk, $B_t$ is the discounted sum up to the chunk's end, as if nothing came after
# it. $A_t$ is what the carry gets multiplied by. With a constant $\gamma$ it is a power,
# $A_t = \gamma^{n_t}$, where $n_t$ counts the steps from $t$ to the chunk's end, $t$ included.
# Here it is in plain NumPy, one chunk at a time, the way one program walks its row:

# %%
def chunked_discounted_sum(x, gamma, chunk, show=False):
    """y_t = x_t + gamma * y_{t+1}, with y_T = 0, one chunk at a time from the end."""
    T = len(x)
    y = np.zeros(T)
    carry = 0.0  # y_T: nothing comes after the row
    for c in reversed(range(-(-T // chunk))):  # the last chunk first
        start, end = c * chunk, min(c * chunk + chunk, T)
        B, acc = np.zeros(end - start), 0.0
        for k in reversed(range(end - start)):  # the chunk alone (in a kernel: one reverse scan)
            acc = x[start + k] + gamma * acc
            B[k] = acc
        A = gamma ** (end - start - np.arange(end - start))  # gamma^(steps from t to the chunk's end)
        y[start:end] = B + A * carry
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
# Your kernel does the same walk, with two changes. Episode ends make $a_t$ vary, so $A_t$ is no
# longer a power of $\gamma$. A reverse scan with `affine_combine` gives you each $(A_t, B_t)$,
# as in `block_scan`, with the carry in place of `last_value`. And `y[start]` becomes the
# `tl.sum(tl.where(...))` trick at the chunk's first step.

# %% [markdown]
# **Exercise `chunked_scan`.** Discounted returns, $G_t = r_t + \gamma(1 - d_t)\,G_{t+1}$, for a
# batch of rows of any length.
#
# * **Inputs:** `rewards` (float32) and `dones` (bool), contiguous, of shape `(B, T)`, any `T`.
#   Then `gamma`, and `chunk`, the chunk size (the checker picks 64 or 128).
# * **Returns:** the returns $G_t$, a `(B, T)` tensor, with $G_T = 0$.
# * **Edge cases:** rows shorter than a chunk (5 steps), rows of 300 steps, then rows of 700
#   steps with episode ends. So a carry that is not applied, or not reset by an episode end
#   inside the chunk, shows.
# * **Hint:** one program per row. Pass `chunk` as the `CHUNK` constexpr. Walk the chunks as
#   `chunked_discounted_sum` does, with the two changes just above.

# %%
# A skeleton, if you want one (the kernel goes above the function):
#
# @triton.jit
# def chunked_kernel(R, D, G, gamma, T, CHUNK: tl.constexpr):
#     row = tl.program_id(0)
#     carry = 0.0                          # G after the row's last step
#     n_chunks = tl.cdiv(T, CHUNK)
#     for i in range(0, n_chunks):
#         c = n_chunks - 1 - i             # the chunks from the last one down
#         t = c * CHUNK + tl.arange(0, CHUNK)
#         ...                              # load, pairs, reverse scan, G = B + A * carry, store
#         carry = ...                      # G at the chunk's first step, c * CHUNK
def chunked_scan(rewards, dones, gamma, chunk):
    # YOUR CODE
    raise NotImplementedError

# %%
exercises.attempt("chunked_scan", chunked_scan)

# %% [markdown]
# ## 4. Episode ends as a select: the reset
#
# Your scans so far end an episode by a multiplier $a_t = 0$: the step after it is multiplied
# away. That is exact for finite numbers, but not for the values a real rollout can hold: a
# reward of `inf` from a diverged environment, or a `NaN` from a value head, multiplied by 0 is
# `NaN`, so one bad number in a later episode poisons every earlier one (notebook 00, section 4):

# %%
print("0 * inf =", 0 * float("inf"), "   0 * nan =", 0 * float("nan"))


def returns_by_multiplying(r, d, gamma):
    """Your chunked_scan's arithmetic as a loop: G_t = r_t + gamma (1 - d_t) G_{t+1}."""
    G, out = torch.zeros(()), []
    for t in reversed(range(len(r))):
        G = r[t] + gamma * (~d[t]) * G
        out.append(G)
    return torch.stack(out[::-1])


r_bad = torch.tensor([1.0, 2.0, 3.0, float("nan"), 5.0])
d_bad = torch.tensor([False, True, False, False, False])  # the first episode ends at t = 1
print("multiplying by 0:", returns_by_multiplying(r_bad, d_bad, 0.9).tolist())
print("the loop's answer:", reference.discounted_returns(r_bad.numpy(), gamma=0.9, terminated=d_bad.numpy()).tolist())


# %% [markdown]
# The fix is to carry the episode end as a third element, a **reset** flag $\rho_t$, and
# *select* instead of multiply. A step's map becomes "$y = b$ if it resets, else $y = b + a\,y'$".
# Composing "the later run $(a_1, b_1, \rho_1)$ first, then step $(a_2, b_2, \rho_2)$":
#
# $$(a, b, \rho) = \begin{cases} (a_2,\ b_2,\ \text{true}) & \text{if } \rho_2 \\ (a_2 a_1,\ b_2 + a_2 b_1,\ \rho_1) & \text{otherwise} \end{cases}$$
#
# Is it still associative? Not just because it composes maps: a triple is not just a map ($a$ is
# ignored when the reset flag is set, so two different triples can be the same map), and
# composition alone does not settle it. Notebook 00, section 4, proves it on the triples
# themselves, case by case; it holds.
# In Triton the cases are `tl.where`, which picks one value and never computes $0 \cdot \infty$:
#
# ```python
# @triton.jit
# def reset_combine(a1, b1, r1, a2, b2, r2):
#     return tl.where(r2, a2, a2 * a1), tl.where(r2, b2, b2 + a2 * b1), r1 | r2
# ```
#
# After the scan each step holds its composed map $(A_t, B_t, R_t)$ to the chunk's end, and the
# carry must be selected too: $G_t = B_t$ where $R_t$ (an episode ends inside the chunk at or after $t$),
# else $B_t + A_t \cdot \text{carry}$. Padding past the row's end is $(1, 0, \text{false})$.
#
# **Exercise `reset_scan`.** `chunked_scan` with resets.
#
# * **Inputs:** the same as `chunked_scan`'s.
# * **Returns:** the same returns, a `(B, T)` tensor.
# * **Edge cases:** a `NaN` or `inf` reward must stay inside its own episode. That holds whether
#   the episode end is in the same chunk, or the bad value arrives through the carry from a
#   later chunk.
# * **Hint:** start from your `chunked_scan` (or its solution). Scan triples with
#   `reset_combine`, and select the carry as above.

# %%
def reset_scan(rewards, dones, gamma, chunk):
    # YOUR CODE
    raise NotImplementedError

# %%
exercises.attempt("reset_scan", reset_scan)

# %% [markdown]
# ## 5. Hooks: the algorithm around the scan
#
# Every algorithm of the course is the same chunk loop with different arithmetic before and
# after the scan. So the loop stays one kernel, and each algorithm supplies two small
# `@triton.jit` functions that the kernel calls (Triton inlines them at compile time):
#
# * a **prologue** loads a chunk of the algorithm's inputs and returns the pairs $(a_t, b_t)$;
# * an **epilogue** takes the scanned values and stores the outputs.
#
# **Exercise `gae_kernel`.** GAE as your `reset_scan`, in chunks of `chunk` steps, with two hooks.
# The prologue computes $\delta_t = r_t + \gamma(1-d_t)V(s_{t+1}) - V(s_t)$ and the triple
# $(a_t, b_t, \rho_t) = (\gamma\lambda, \delta_t, d_t)$. The epilogue stores $A_t$.
#
# * **Inputs:** `rewards`, `values`, `next_values` (float32) and `dones` (bool, the
#   terminations), contiguous, of shape `(B, T)`. Then `gamma`, `lam`, and `chunk`.
# * **Returns:** the advantages $A_t$, a `(B, T)` tensor.
# * **Edge cases:** rows of 7, 600 and 300 steps, with episode ends. The checker puts NaN in
#   `next_values` behind terminations, where a value is never needed (a terminal state has
#   none), and a NaN reward in a later episode.
# * **Hint:** write "$(1 - d_t)$" as a select, `tl.where(done, 0.0, gamma * v_next)`. Write the
#   two hooks as separate `@triton.jit` functions and call them from the kernel.
#
# In the package, and in the harness `exercises.scan_hook` that notebooks 01, 03, 04 and 06 use
# for their Triton exercises, the kernel takes the prologue as a `tl.constexpr` argument. So one
# loop's source serves every algorithm. The subsection after the exercise shows how.

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
def gae_kernel(rewards, values, next_values, dones, gamma, lam, chunk):
    # YOUR CODE
    raise NotImplementedError

# %%
exercises.attempt("gae_kernel", gae_kernel)

# %% [markdown]
# ### Before the package: a hook as an argument, tuples of pointers, loops unrolled
#
# Your `gae_kernel` calls its hooks by name, so a second algorithm would need a second copy of
# the loop. The package's kernel, and the harness `exercises.scan_hook` that notebook 01 uses for
# its Triton exercises, take the hook *as an argument* instead. Four pieces of Triton make that
# work:
#
# * **A `@triton.jit` function passed as a `tl.constexpr` argument** (`HOOK=square` below). Like
#   `BLOCK`, a `tl.constexpr` is fixed when the kernel is compiled: Triton compiles one kernel
#   per hook passed, the hook's body inlined where it is called, as if you had written it there.
# * **`if FLAG:` on a `tl.constexpr`** is decided at compile time: the branch not taken is not in
#   the compiled kernel at all. This is not section 1's trap: there `if` tested a *block* of
#   run-time values, which Triton refuses; a constexpr is one value, known before the kernel
#   runs. `if EPILOGUE is not None:` is the same kind of test.
# * **A tuple of tensors as one argument** (`X = (x0, x1, x2)`): inside the kernel `X[i]` is the
#   pointer to the `i`-th tensor's first element, used like any pointer (`tl.load(X[i] + offs)`).
#   A tuple of numbers works the same way: `P[i]` is a number. The index must be known when the
#   kernel is compiled: a literal such as `X[0]`, or the variable of a `tl.static_range` loop.
# * **`tl.static_range(n)`** is a loop the compiler unrolls: `n` must be known at compile time
#   (`len(X)` is: the tuple's length is part of what the kernel is compiled for), and each copy of
#   the body gets its own constant `i`. The `i` of a plain `range` loop is a run-time value, which
#   cannot index a tuple when the kernel is compiled for a GPU (the interpreter, running Python,
#   would let it pass: one more reason to write `tl.static_range`).
#
# A ten-line kernel with all four: each input passed through the hook, weighted by its number in
# `P`, summed, and capped at 1 when `CAP` is set.

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
# The same source, launched twice: three inputs squared, weighted and summed; then two inputs'
# absolute values summed and capped. Each launch compiles its own kernel (another hook, another
# `CAP`, another tuple length), and each is checked against PyTorch:

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
# Now the harness of notebook 01 reads line by line. `exercises._scan_hook_kernel(X, O, P, T,
# PROLOGUE, CHUNK, REVERSE, EPILOGUE)` is your `chunked_scan` with: `PROLOGUE` a hook passed as a
# `tl.constexpr` and called as `PROLOGUE(X, offs, t, T, m, P)`, where `X` is the tuple of the
# input tensors you pass it (your prologue loads `X[0]`, `X[1]`, ...) and `P` the tuple of your
# numbers (`P[0]` is γ if you pass `(gamma,)`); `if REVERSE:`, the chunk order chosen at compile
# time; and `if EPILOGUE is not None:`, the epilogue's lines compiled in only when you pass one.
# The package's kernel below works the same way, with more slots; SAC's hooks, for one, take the
# critics as a tuple `Q` and find their minimum in a `tl.static_range(1, len(Q))` loop
# (`sac._critic_min`). Its source (`_combine` is `affine_combine`):

# %%
print(inspect.getsource(getattr(exercises._scan_hook_kernel, "fn", exercises._scan_hook_kernel)))

# %% [markdown]
# ## 6. The package's kernel, read through its names
#
# `rltriton_lite/scan.py` is your `gae_kernel` grown up. What you wrote maps onto it one to one:
#
# | your kernel | the package |
# | --- | --- |
# | `reset_combine(a1, b1, r1, a2, b2, r2)` | `scan.combine`, the same select |
# | one program per row | `ROWS` rows per program (a 2-D tile), and very long rows split across programs |
# | the chunk loop and its carry | `scan._walk` |
# | the prologue and epilogue | `PROLOGUE` / `EPILOGUE`, `tl.constexpr` arguments of the kernel |
# | `R + row * T + t` | a strided load, `tile.load(ptr, strides, row, t, mask, other, ACC)`, so time-major and batch-major buffers both work without a copy |
#
# The hooks receive the inputs as a tuple of pointers `X` with their strides `SX`, the numbers
# `P` (γ, λ, ...) and the output pointers `O`. Named indices say what each slot holds. The
# discounted return's prologue, for one (notebook 02, section 3, reads it line by line; GAE's is an
# exercise there, TD(λ)'s is printed in notebook 03):

# %%
from rltriton_lite import returns  # noqa: E402

print(inspect.getsource(getattr(returns._returns_prologue, "fn", returns._returns_prologue)))

# %% [markdown]
# `REWARDS`, `VALUES`, `NEXT_VALUES`, ... are `tl.constexpr` indices into `X` (defined in
# `rltriton_lite/episode.py`, shared by the algorithms that read an episode), and `step(...)`
# loads γ, λ and the episode flags once for every algorithm. A package prologue returns five
# things where yours returned two: `(a, b, reset, valid, keep)`, your triple plus `valid` (the
# step is not padding: a padded step is the identity) and `keep`, values the epilogue needs
# again (GAE keeps $V_t$ to add to the advantage, so `values` is read once).
#
# The kernel's other arguments are carries in and out of a row and knobs for speed; notebook 13,
# section 6, prints its signature and explains each group.
#
# And it computes what yours does — the package's `gae` against the loop, on a batch with
# episode ends and rows that span several chunks:

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
# What the package adds beyond your kernel — several steps per thread composed in registers,
# aligned vector loads, the layout that keeps a reverse scan running forwards across threads,
# the time split of long rows across programs — changes speed, not results. It is the subject
# of the optional appendix, notebook 13.
#
# ## Exercises
#
# The five exercises above (`td_target_kernel`, `block_scan`, `chunked_scan`, `reset_scan`,
# `gae_kernel`), and one more that the package's table above calls "a strided load":
#
# **Exercise `strided_scan`.** `reset_scan` for rollouts stored time-major, as CleanRL and SB3
# keep them.
#
# * **Inputs:** `rewards` (float32) and `dones` (bool) of shape `(T, B)`, with any strides.
#   Then `gamma` and `chunk`.
# * **Returns:** the returns in a new `(T, B)` tensor.
# * **Edge cases:** a contiguous `(T, B)` tensor, a transposed `(B, T)` buffer and every other
#   column of a wider one. Each is read in place: no `.contiguous()`, which would copy (the
#   checker refuses a copy).
# * **Hint:** element `(t, b)` of a tensor `x` is at `X + t * x.stride(0) + b * x.stride(1)`.
#   Pass the strides to the kernel as integers. `torch.empty_like` keeps the input's layout, so
#   give the output's own strides too. One program per column `b`.

# %%
def strided_scan(rewards, dones, gamma, chunk):
    # YOUR CODE
    raise NotImplementedError

# %%
exercises.attempt("strided_scan", strided_scan)

# %% [markdown]
# Without a checker:
#
# *(Answer each in its cell below: `tools/grade.py --collect-answers` gathers the answers for your
# teacher.)*
#
# 1. Time your `reset_scan` with `CHUNK` 16 and 1024 on a GPU, at 4096 rows × 128 steps and at
#    8 rows × 100,000 steps. Why do the best chunk sizes differ?

# %% [markdown] tags=["answer-1"]
# **Answer 1.** *Your answer here (code for it: in cells under this one).*

# %% [markdown]
# ## What you now know
#
# * A Triton kernel: programs, each owning a block of indices (`tl.program_id`, `tl.arange`),
#   with a mask on every load and store that can run past the end.
# * `tl.associative_scan` with a combine whose first argument is applied first (`affine_combine`,
#   the same function in both directions), `reverse=True` for returns, and the identity $(1, 0)$
#   as padding.
# * Rows of any length: a loop over chunks, each finished by one multiply-add with the carry,
#   $y_t = B_t + A_t \cdot \text{carry}$. For a return the chunks go from the end, and the carry
#   is $y$ at the first step of the chunk after.
# * Episode ends as a reset flag and `tl.where`: select, never multiply by 0, so a NaN or `inf`
#   stays in its own episode.
# * Hooks passed as `tl.constexpr` arguments, with tuples of pointers and `tl.static_range`: one
#   loop for every algorithm. The package's `scan.py` is this plus speed (notebook 13).
