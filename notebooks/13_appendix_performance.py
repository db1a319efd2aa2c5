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
# # 13 — Appendix: what makes the scan fast (optional)
#
# The kernel you wrote in notebook 00b computes the right numbers. The package's kernel
# computes the same numbers, the scans at 80–95 % of the memory floor on an H200 for large batches
# (notebook 09). This appendix is for readers who want to know what separates the two; nothing
# in notebooks 01–09 depends on it. Each section states the idea, checks it in NumPy, and cites
# the measurement that decided it (`docs/DESIGN.md`, "Decisions", where every figure comes
# from).
#
# The one constraint behind all of it: these kernels do a few flops per byte, so they are
# **memory-bound**. The fastest possible run reads each input once and writes each output once
# at the copy bandwidth of the GPU (the *floor*, notebook 08). Everything below is about keeping
# enough bytes in flight and not wasting any.

# %%
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import inspect

import numpy as np

import rltriton_lite as rl
from rltriton_lite import reference, scan
from rltriton_lite.config import Config

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# the Triton kernels: compiled on a GPU, in the interpreter on a CPU (backend="auto" takes the PyTorch path on a CPU)
KERNEL = "triton"
rng = np.random.default_rng(0)

# %% [markdown]
# ## 1. Two levels inside a chunk: registers, then threads
#
# Your `block_scan` handed every step to `tl.associative_scan`, which composes elements across
# threads (a warp's 32 lanes trade values with *shuffles*, about $\log_2 32 = 5$ rounds). The
# package gives each thread a **vector** of consecutive steps instead (one 16-byte load: 4
# float32 or 8 bfloat16 steps). The thread composes its own vector sequentially, in registers,
# one `combine` after another; only the vectors' composed maps travel between threads, in one
# `tl.associative_scan`. Each vector then needs the value entering it: the end value of the
# vector before it in scan order. The same two levels in NumPy, on one chunk:

# %%
def two_level(a, b, carry, V=4):
    """Reverse scan of one chunk (len(a) a multiple of V): vectors composed in registers, then
    across vectors, then the carry entering each vector applied to its steps."""
    n = len(a) // V
    A, B = a.reshape(n, V)[::-1, ::-1], b.reshape(n, V)[::-1, ::-1]  # scan order: the end first
    pa, pb = A.copy(), B.copy()
    for k in range(1, V):  # level 1: each vector alone, inside one thread
        pa[:, k], pb[:, k] = pa[:, k - 1] * A[:, k], B[:, k] + A[:, k] * pb[:, k - 1]
    z, ends = carry, []
    for j in range(n):  # level 2: the vectors' maps (the kernel: one associative scan)
        ends.append(z)  # the value entering vector j
        z = pb[j, -1] + pa[j, -1] * z
    y = pb + pa * np.array(ends)[:, None]
    return y[::-1, ::-1].reshape(-1), z


a_c, b_c = rng.uniform(0.8, 1, 32), rng.normal(size=32)
y_c, last = two_level(a_c, b_c, carry=0.5)
expected = reference.linear_scan(a_c[None], b_c[None], initial=np.array([0.5]))[0]
np.testing.assert_allclose(y_c, expected, rtol=1e-12)
assert np.isclose(last, expected[0])  # the chunk's carry for the chunk before it
print("two levels = the loop:", np.round(y_c[:4], 4), "...")

# %% [markdown]
# The kernel's thread-level composition is `scan._chain`, written out step by step so that the
# compiler keeps everything in registers:

# %%
print(inspect.getsource(getattr(scan._chain, "fn", scan._chain)))

# %% [markdown]
# ## 2. A reverse scan that runs forwards
#
# `tl.associative_scan(..., reverse=True)` is correct, but Triton 3.6 implements it by reversing
# the lanes of every operand before and after a forward scan, and each reversal is a round of
# shuffles. The package lays a reverse scan's vectors out from the last one down, so the scan
# across threads always runs forwards: in the compiled code of GAE's chunk (8 steps per vector)
# this took the shuffles from 263 to 53, although the time alone barely moved (`docs/DESIGN.md`,
# "The scan's tile": fewer instructions, the same memory traffic). In NumPy the layout is just an
# index map from (vector in scan order, step in vector) to time:

# %%
BLOCK, V = 16, 4
NV = BLOCK // V
o_j, o_v = np.arange(NV)[:, None], np.arange(V)[None, :]
time_of = (NV - 1 - o_j) * V + o_v  # REVERSE: vector j holds the (NV-1-j)-th group of V steps
print(time_of)
assert sorted(time_of.ravel()) == list(range(BLOCK))  # every step once
assert (np.diff(time_of, axis=1) == 1).all()  # steps inside a vector ascend: one aligned load

# %% [markdown]
# ## 3. One load per input, aligned
#
# A vector of 4 float32 steps is one 16-byte load only if it starts at a 16-byte boundary. So
# chunks start at the row's start (ascending addresses), and GAE's $V(s_{t+1})$ = `values[t+1]`
# is not a second load one step off the alignment — that would be one scalar load per step — but
# the loaded `values` tile shifted by one step inside the kernel. Two more rules of the same kind
# (`docs/DESIGN.md`, "Loads"): loads are masked by bounds only, never by loaded flags (a mask
# that depends on data makes every load scalar; steps are chosen afterwards with `tl.where`),
# and a per-row input such as `bootstrap_value` is read once per row, not as a time-strided
# tile with stride 0.
#
# ## 4. The tile: how many rows and steps a program owns
#
# A program owns `ROWS` rows × `BLOCK` steps per chunk and walks the chunks of its rows. Few
# small programs with the next chunk's loads already in flight keep the memory system busier
# than big programs that wait at their barriers. The planner picks the tile from the shape;
# these are its tunables, one frozen object:

# %%
print(Config())

# %% [markdown]
# ## 5. Long rows: the time split
#
# With 8 rows of 131,072 steps, one program per row leaves an H200's 132 multiprocessors almost
# idle: GAE took 1.86 ms. The fix is the associativity of notebook 00 once more: cut each row
# into segments, let one program per segment compose its segment's map (a summary: no outputs),
# compose the summaries from the end to get the carry entering each segment, then let each
# program rescan its segment from that carry and write the outputs. The same GAE took 0.033 ms.
# In NumPy:

# %%
def split_scan(a, b, segments):
    n = len(a) // segments
    maps = []
    for s in range(segments):  # pass 1, one program each: the segment's composed map
        A, B = 1.0, 0.0
        for t in reversed(range(s * n, (s + 1) * n)):
            A, B = a[t] * A, b[t] + a[t] * B
        maps.append((A, B))
    carries, z = [0.0] * segments, 0.0
    for s in reversed(range(segments)):  # compose the summaries: the carry entering each segment
        carries[s] = z
        z = maps[s][1] + maps[s][0] * z
    y = np.zeros_like(b)
    for s in range(segments):  # pass 2, one program each: rescan from its carry
        z = carries[s]
        for t in reversed(range(s * n, (s + 1) * n)):
            y[t] = z = b[t] + a[t] * z
    return y


a_l, b_l = rng.uniform(0.9, 1, 4096), rng.normal(size=4096)
np.testing.assert_allclose(split_scan(a_l, b_l, 8), reference.linear_scan(a_l[None], b_l[None])[0], rtol=1e-10)
print("8 segments, two passes == the loop")

# %% [markdown]
# Each pass is a launch, and a launch costs host time. So the split runs only for rows of at
# least `Config.split_min_chunks` wide chunks: that threshold was chosen by the **wall time** of a
# call, what a training loop pays, not by the GPU time alone (`docs/DESIGN.md`, "The time
# split"). The package's results do not depend on any of this; a configuration that forces the
# split gives the same numbers:

# %%
from rltriton_lite.config import using  # noqa: E402

r = torch.randn(2, 700, device=DEVICE)
d = torch.rand(2, 700, device=DEVICE) < 0.02
plain = rl.discounted_returns(r, gamma=0.99, terminated=d, backend=KERNEL)
with using(Config(max_block_t=64, min_programs=1 << 20, split_min_chunks=2)):  # force a split
    split = rl.discounted_returns(r, gamma=0.99, terminated=d, backend=KERNEL)
torch.testing.assert_close(split, plain, rtol=1e-5, atol=1e-5)
print("the time split gives the same returns")

# %% [markdown]
# ## 6. Looking at the compiled code
#
# On a GPU, a compiled Triton kernel carries its intermediate forms: `compiled.asm["ttgir"]`
# (Triton's GPU dialect, with the layouts), `compiled.asm["ptx"]` (NVIDIA's assembly). Counting
# `shfl.sync` in the PTX counts the shuffles of section 2; `.local` memory in the PTX means
# registers spilled. `tools/compile_sm90.py` compiles the package's kernels for an H100/H200
# without a GPU and fails on spills, so a change that spills is caught on a CPU. The kernel
# itself, for reference:

# %%
print(inspect.getsource(getattr(scan._scan_kernel, "fn", scan._scan_kernel)))

# %% [markdown]
# ## Exercises
#
# 1. In `two_level`, make the vector length `V` 8 and 16 (and the chunk 64). The results do not
#    change; on a GPU, what does a longer vector buy, and what does it cost in registers?
# 2. `split_scan` makes two passes over the inputs and composes the segment summaries in one
#    sequential loop. With $S$ segments of $n$ steps, count the loads of each pass. When is a
#    third pass, which scans the summaries in parallel, worth its launch?
# 3. On a GPU: compile GAE's kernel (`rl.gae` once, then look in `~/.triton/cache` for the
#    `.ptx`) and count `shfl.sync`, `ld.global.v4` and `cp.async` (a pipelined tile's loads go
#    through it). Change `Config(vector=...)` and count again.
