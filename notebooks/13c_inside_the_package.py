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
# # 13c — Appendix for maintainers: inside the package's kernel (optional)
#
# * **Who it is for:** maintainers of the package, and students who want the details behind
#   notebook 13, section 4, which says in one page what this notebook finds. No checked exercise
#   of the course needs it.
#
# * **You will learn:** how the package's scan kernel follows the three rules of notebook 13
#   (its sections 1–3): one chunk (sections 1–3), one program's tile and the planner (section 4), a model
#   of the speed against three measurements (section 4.1), long rows split in time (section 5),
#   and the compiled code (section 6). Section 7 follows notebook 11's split across devices: its
#   backward, and what its ranks send. The package has kernels other than the scan: the losses of
#   notebooks 05–07. So the last part, "Inside the loss kernels of notebooks 05–07", holds those
#   notebooks' maintainer notes on PPO's, SAC's and CRR's kernels.
#
# * **Time:** 45 min–1 h to read, and 15 min more for section 7; 2.5–3 h with the three open questions. A GPU only for questions
#   1 and 3.
#
# * **Needs:** notebook 13, sections 1–4, and notebook 00c (your `reset_scan` and `gae_kernel`); for
#   section 7 only, notebook 11, sections 1–6.
#
# The package's internals (the planner's exact rules, the kernel's arguments, its chunk loop) are in
# folded boxes and cells marked **For maintainers**, and exact figures in folded **Sources** boxes.
#
# <details><summary>Sources</summary>
#
# Every GPU figure here was measured on an H200 with torch 2.11 and Triton 3.6 (newer versions are
# pinned now). Some come from the committed run, `benchmarks/results/H200-2026-12-06.json`
# (`profile.COMMITTED_RUN`). The rest come from `docs/DESIGN.md`, "Decisions", each measured on the
# code of its day: compare it only with the figures of the same entry. The folded `# Checks` cells
# compare each figure with its file.
#
# </details>

# %%
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import inspect
import re

import numpy as np
import triton

import rltriton_lite as rl
from rltriton_lite import distributed, exercises, plan, profile, reference, scan
from rltriton_lite.config import Config

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# the Triton kernels: compiled on a GPU, in the interpreter on a CPU (backend="auto" takes the PyTorch path on a CPU)
KERNEL = "triton"
rng = np.random.default_rng(0)
RESULTS = profile.results_folder()  # benchmarks/results/: what an H200 measured (notebooks 08 and 09)
RUN, RES = profile.committed_results()  # the committed run (profile.COMMITTED_RUN), read by name as notebook 08 reads it

# notebook 13, section 2: Little's law for GAE's loads on an H200 (the latency is ASSUMED)
H200_SMS = 132  # the H200's; docs/DESIGN.md: min_programs is "two per SM on CUDA, 264 on the H200"
LATENCY_S = 600e-9  # an assumed latency, for illustration: not measured here
GAE_READ = 4 + 4 + 1  # bytes read per float32 step: reward, value, flag
load_bw = RES["copy_bandwidth_Bps"] * GAE_READ / 17  # GAE's loads at the floor: 9 of every 17 bytes moved
in_flight_gpu = load_bw * LATENCY_S  # loads in flight that the whole GPU needs
CHUNKS_IN_FLIGHT = 2  # assumed, an upper bound: the next chunk's loads and this chunk's
package_program = 2 * 128 * GAE_READ * CHUNKS_IN_FLIGHT  # one GAE program at 16384×1024: 2 rows × 128 steps a chunk

# notebook 13, section 3: the planner's launch on an H200, by name
ON_H200 = Config(min_programs=2 * H200_SMS)  # two programs per SM over the launch, as on an H200
PLAN_FIELDS = ("rows", "block", "warps", "stages", "vector", "row_programs", "segments", "seg")


def tile_plan(B, T, itemsize=4):
    """The planner's launch for a (B, T) scan on an H200, as a dict of named fields."""
    return dict(zip(PLAN_FIELDS, plan._plan(B, T, True, itemsize, torch.device("cuda"), ON_H200)))


def committed(algorithm, B, T, impl="rltriton_lite"):
    """The committed H200 row of this case (float32, forward)."""
    (r,) = [r for r in RES["rows"] if (r["algorithm"], r["impl"], r["B"], r["T"], r["dtype"], r["pass"])
            == (algorithm, impl, B, T, "float32", "fwd")]
    return r

# %% jupyter={"source_hidden": true}
# Checks: the versions, and notebook 13's figures as this notebook recomputes them (CI runs them; skip when reading)
assert RES["versions"]["torch"].startswith("2.11") and RES["versions"]["triton"].startswith("3.6")  # as the text says
assert profile.op("gae").bytes_per_step(4) == GAE_READ + 2 * 4 == 17
assert round(in_flight_gpu / 1e6, 2) == 1.36 and round(package_program / 1e3, 1) == 4.6  # 13, section 2
ROOT = os.path.dirname(os.path.dirname(RESULTS))  # the checkout: benchmarks/results/ is two levels down
with open(os.path.join(ROOT, "docs", "DESIGN.md"), encoding="utf-8") as f:
    design = " ".join(f.read().split())  # one line: the figures as the design document states them, checked below
assert "two per SM on CUDA, 264 on the H200" in design and 2 * H200_SMS == 264  # the 132 SMs, as in notebook 13

# %% [markdown]
# ## 1. Two levels inside a chunk: registers, then threads
#
# **The question:** how does the package scan one chunk? **The answer:** in two levels, registers
# first, then threads.
#
# Your `block_scan` handed every step to `tl.associative_scan`. Triton's scan already works in two
# levels: each thread first composes the elements it holds, in registers, and then the 32 lanes of a
# warp exchange register values directly, by **shuffles**, in about $\log_2 32 = 5$ rounds. What the
# package controls is *which* steps each thread holds:
#
# 1. **In registers.** Each thread gets one or more **vectors** of consecutive steps, each one
#    16-byte load (4 float32 or 8 bfloat16 steps), and composes them one `combine` after another.
# 2. **Across threads.** Only the vectors' composed maps travel between threads, in one
#    `tl.associative_scan`. The vectors are laid out from the last one down (section 2), so that
#    this scan across lanes runs forwards.
#
# Each vector then needs the value entering it, the end value of the vector before it. The same two
# levels in NumPy, on one chunk:

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
# The kernel's first level is `scan._chain`, written out step by step so that it stays in
# registers:

# %%
print(inspect.getsource(getattr(scan._chain, "fn", scan._chain)))

# %% [markdown]
# ## 2. A reverse scan that runs forwards
#
# **The question:** how does a reverse scan avoid the cost of reversing? **The answer:** its vectors
# are laid out from the last one down, so the scan across threads runs forwards.
#
# `tl.associative_scan(..., reverse=True)` is correct, but it costs extra shuffles: it reverses the
# lanes of every operand, runs a forward scan, and reverses them back. With the package's layout,
# GAE's compiled chunk has about a fifth of the shuffles. The time alone barely moved: the layout
# removes instructions, not memory traffic.
#
# In NumPy the layout is an index map, from (vector in scan order, step in vector) to time:

# %%
BLOCK, V = 16, 4
NV = BLOCK // V
o_j, o_v = np.arange(NV)[:, None], np.arange(V)[None, :]
time_of = (NV - 1 - o_j) * V + o_v  # REVERSE: vector j holds the (NV-1-j)-th group of V steps
print(time_of)

# %% jupyter={"source_hidden": true}
# Checks: the layout, and the shuffle count above as docs/DESIGN.md states it (CI runs them; skip when reading)
assert sorted(time_of.ravel()) == list(range(BLOCK))  # every step once
assert (np.diff(time_of, axis=1) == 1).all()  # steps inside a vector ascend: one aligned load
assert "GAE's chunk 263 → 53 shuffles (PTX)" in design and "Alone it did not change the time" in design
assert round(263 / 53) == 5  # "about a fifth of the shuffles"

# %% [markdown]
# <details><summary>Sources</summary>
#
# The reversal is what Triton 3.6 compiles `reverse=True` to. `docs/DESIGN.md`, "The scan's tile",
# counts 263 shuffles before and 53 after in the PTX of GAE's float32 chunk (Triton 3.6, the code
# of its day), and records that the layout alone did not change the time.
#
# </details>

# %% [markdown]
# ## 3. One load per input, aligned
#
# **The question:** how does a kernel keep every load a vector load? **The answer:** every chunk
# starts at a 16-byte boundary, and no input is loaded a second time at an offset.
#
# Triton must prove that boundary when it compiles. It can only when the row stride, T, is a
# multiple of 16 steps (not T = 1000). Otherwise it compiles V scalar loads per vector for all
# rows, the first included, where an aligned vector is one 16-byte load. T = 1000 gets scalar loads
# although its float32 rows, 4,000 bytes, are 16-byte aligned: Triton marks an integer argument as
# divisible by 16 (or equal to 1), and 1000 is neither.
#
# A vector of 4 float32 steps is one load only if it is aligned (notebook 13, section 1), so
# chunks start at the row's start, with ascending addresses. GAE also needs $V(s_{t+1})$, that is
# `values[t+1]`. Loaded a second time, one step off the alignment, it would cost one scalar load
# per step. So the kernel shifts the `values` tile it already loaded by one step instead.
#
# <details><summary>Sources</summary>
#
# `docs/DESIGN.md`, "Loads", states these rules and two more: loads are masked by bounds only, never
# by loaded flags, and a per-row input is read once per row.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: section 3's "a multiple of 16", and rltriton_lite/tile.py's words (CI runs them; skip when reading)
# Triton marks an integer argument (the row stride, T) as a multiple of 16 (or as equal to 1): T = 1000 is 4000
# bytes, a multiple of 16, and still not proven aligned
assert 1000 * 4 == 4000 == 16 * 250 and 1000 % 16 != 0 and 1024 % 16 == 0  # "T = 1000 ... 4,000 bytes, 16-byte aligned"
assert 1000 % 16 != 0 and 1024 % 16 == 0  # "a multiple of 16 steps (not T = 1000)": 1024 is, 1000 is not
import inspect  # noqa: E402
import rltriton_lite.tile  # noqa: E402  (its source as installed: a student's copy of the course has no package folder)

assert "V scalar loads per vector where an aligned vector is one 16-byte load" in " ".join(
    inspect.getsource(rltriton_lite.tile).split())

# %% [markdown]
# ### 3.1 Reading the hooks' source
#
# [Notebook 02's appendix](02_gae.ipynb#Appendix:-the-package's-hook-form) writes GAE's prologue in
# the package's form, `(X, SX, P, row, t, m, T, ACC) -> (a, b, reset, valid, keep)`, with three
# helpers that load its inputs. The package's other hooks use a few more names.
#
# <details><summary>Details: the helpers (optional)</summary>
#
# * The input slots have names, defined in `rltriton_lite/episode.py`: `X[REWARDS]` is the rewards
#   and `SX[REWARDS]` their strides. `P` holds the numbers, such as `P[P_GAMMA]`.
# * `load(X[REWARDS], SX[REWARDS], row, t, valid, 0.0, ACC)` gives the rewards.
#   `values_now_and_next(X, SX, row, t, m, T, ACC)` gives $V(s_t)$ and $V(s_{t+1})$, from one load:
#   the `values` tile shifted by one step, as above.
# * `load_mask` loads `valid` (in bounds and not padding). `coef` loads a coefficient such as γ,
#   per step or one number.
# * The helpers load at every step in bounds, and the prologue selects afterwards. A load masked by
#   the flags or by `valid` would also be correct.
#
# </details>
#
# <details><summary>Details: two names in the source that 02's exercise skips (optional)</summary>
#
# * `ahead`, the package's ninth argument, is a masked call's look-ahead. Without a mask it is
#   `None`, and `last` is `t == T - 1`. A prologue such as 02's `gae_prologue` may leave it out:
#   `exercises.package_prologue` handles the mask before the kernel runs.
# * `P[P_OPEN]` is 0 unless the window is one piece of a longer row, split across processes
#   (notebook 11, and section 7 here). Its last step then ends nothing.
#
# </details>
#
# ## 4. The tile: how many rows and steps a program owns
#
# **The question:** what does one program of the package own, and why so little? **The answer:** a
# small tile on one warp, pipelined two chunks deep: one warp waits for no other, and two chunks
# give it enough bytes in flight.
#
# A **tile** is `ROWS` rows × `BLOCK` steps per chunk. A program walks its tile chunk after chunk,
# with one carry per row, as your `reset_scan` walks one row. For each launch the planner picks five
# numbers, the knobs that notebook 13b's GPU lab turns on your own kernel:
#
# * **`ROWS`** and **`BLOCK`**, the rows of one program and the steps of one chunk. Your
#   `tiled_scan` (notebook 13) builds such a tile.
# * **`V`**, the steps of one vector (section 1).
# * **`num_warps`**, the warps that share the tile. Where the rows are long enough, each warp gets
#   256 steps, 8 per lane.
# * **`STAGES`**, the `num_stages` of the chunk loop's `tl.range`. With 2, the next chunk's loads
#   are issued before this chunk is scanned (notebook 13, section 2); only the scan waits for the
#   carry.
#
# **Why small, pipelined tiles.** A tile that spans several warps passes values between them
# through shared memory, and every warp waits for the others at a barrier, issuing no loads. Inside
# one warp, the lanes pass values by shuffles, with no other warp to wait for. GAE's GPU time at
# 16384×1024 on an H200, for three tiles (rows × steps × warps × stages):
#
# | tile | GAE, µs |
# | --- | --- |
# | 4 × 256 × 4 × 1 (four warps, not pipelined) | 123 |
# | 1 × 256 × 1 × 2 | 85 |
# | 2 × 128 × 1 × 2 (the planner's tile, from 4096 rows up) | 81 |
#
# Going from four warps to one pipelined warp took about 30 % off the time; that step changed rows,
# warps and stages at once, so it does not say which mattered. Two rows of 128 steps in that warp
# took about 5 % more off (85 to 81 µs).

# %% jupyter={"source_hidden": true}
# Checks: the table's figures (against docs/DESIGN.md at the section's end) and the planner's tile (CI runs them; skip when reading)
TILE_MS = {(4, 256, 4, 1): 0.1226, (1, 256, 1, 2): 0.0851, (2, 128, 1, 2): 0.0814}  # GAE, H200, DESIGN.md
(four_warps_ms, one_row_ms, planned_ms) = TILE_MS.values()
assert [round(1e3 * ms) for ms in TILE_MS.values()] == [123, 85, 81]  # the table, in µs
assert round(100 * (1 - one_row_ms / four_warps_ms)) == 31  # "about 30 %" off the time
assert round(100 * (1 - 81 / 85)) == 5  # "about 5 % more off (85 to 81 µs)", from the table's µs
assert 4.3 < 100 * (1 - planned_ms / one_row_ms) < 4.4  # DESIGN.md's unrounded times give 4.3 %: "about 5 %" is the table's
planned = tile_plan(16384, 1024)
assert [planned[f] for f in ("rows", "block", "warps", "stages")] == [2, 128, 1, 2]  # the planner's tile

# %% [markdown]
# **The planner's rules, in short.** The planner picks these numbers for each launch from B, T and
# the dtype, in three steps:
#
# 1. **The chunk** is T rounded up to a power of two, at most 256 steps, or at most 128 from 4096
#    rows up.
# 2. **The rows of a program:** from 1024 rows up, as many rows as fill 256 steps (two chunks of 128,
#    for instance); below 1024 rows, one.
# 3. **Too few programs?** If that tile gives fewer than two programs per SM (264 on an H200), each
#    row gets a program of its own and is walked in **wide chunks** of up to 1024 steps, one warp
#    per 256 steps of the chunk. Rows with ceil(T / 1024) ≥ 32 wide chunks are split in time
#    instead (section 5): a split costs a second launch, so only rows this long repay it.
#
# The loop is pipelined (2 stages) wherever a row has a next chunk to load ahead. Five shapes in
# float32 show each step at work (the folded table below has eight):
#
# | B × T | chunk | rows | warps | stages | programs | why |
# | --- | --- | --- | --- | --- | --- | --- |
# | 1024×1024 | 256 | 1 | 1 | 2 | 1024 | the chunk is at its cap, 256, so one row fills it |
# | 16384×1024 | 128 | 2 | 1 | 2 | 8192 | 4096 rows or more: chunks of 128, two rows fill 256 |
# | 4096×128 | 128 | 2 | 1 | 1 | 2048 | a row is one chunk, so nothing to load ahead |
# | 64×16384 | 1024 | 1 | 4 | 2 | 64 | too few programs: wide chunks, 4 warps |
# | 8×131072 | 256 | 1 | 1 | 2 | 1024 | too few programs, 128 wide chunks a row (≥ 32): each split in 128 |
#
# At 16384×1024 the rules give the tile 2 × 128 × 1 × 2 (2 rows × 128 steps on one warp, 2
# stages): the last row of the three-tile table earlier in this section.
#
# <details><summary>For maintainers: the planner's rules as an <code>if</code> chain, and its tile at
# eight shapes (two folded cells)</summary>
#
# The first folded cell writes the planner's decision for B rows of T steps as plain Python; a
# check compares the two at 360 cases. `triton.cdiv(a, b)` is a ÷ b rounded up. Line by line:
#
# 1. **`block`:** T rounded up to a power of two, from 16 to 256 steps (128 from 4096 rows up). A
#    row of 5 steps gets a chunk of 16, 11 of them masked off.
# 2. **`rows`:** from 1024 rows up, as many rows as fill 256 steps; else 1.
# 3. **`if`:** at least two programs per SM (264 on an H200): the tile stays.
# 4. **`elif`:** too few programs, and rows shorter than 32 wide chunks: one row a program, walked
#    in **wide chunks** of up to 1024 steps.
# 5. **`else`:** too few programs, and ceil(T / 1024) ≥ 32 wide chunks: split in time (section 5).
#    A split costs a second launch, so only rows this long repay it.
# 6. **`stages`:** 2 when the row has a next chunk to load ahead, else 1; always 1 for a one-row
#    tile of a 2-byte dtype such as bfloat16.
# 7. **Warps:** one per 256 steps of the chunk, at least one.
#
# The second folded cell prints the planner's tile at eight shapes, on an H200; `split` counts the
# segments of each row (1: not split). What the table shows:
#
# * **Too few programs: one row a program.** At 1024×64 four rows a program give only 256
#   programs, fewer than 264, so the planner goes straight to the `elif`: 1024 programs of one row,
#   though two rows (512 programs) would have done. At 1056×64 four rows give 264.
# * **One stage where nothing can run ahead.** At 4096×128 each row is one chunk. At 8×131072 in
#   bfloat16 the one-row tile is not pipelined, because pipelined it spilled registers (section 6).
# * **Wide chunks and the split.** At 64×16384 each row has only 16 wide chunks, so the `elif`
#   walks it in 1024-step chunks on 4 warps, which took about 40 % off GAE's wall time per call.
#   Only 8×131072 is split in time.
#
# </details>

# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# For maintainers (folded): the planner's rules as an if chain, compared with the planner in the checks below
def planner_rules(B, T, itemsize=4, min_programs=ON_H200.min_programs):
    """(ROWS, BLOCK, warps, stages, split in time?) of a (B, T) scan, as plan._plan decides them."""
    block = min(max(triton.next_power_of_2(T), 16), 128 if B >= 4096 else 256)  # the chunk
    rows = min(256 // block, triton.next_power_of_2(B)) if B >= 1024 else 1  # rows that fill 256 steps
    if triton.cdiv(B, rows) >= min_programs:  # enough programs: keep this tile
        split = False
    elif triton.cdiv(T, 1024) < 32:  # too few programs, rows under 32 wide chunks: wide chunks
        rows, block, split = 1, min(max(triton.next_power_of_2(T), 16), 1024), False
    else:  # too few programs, longer rows: split each row in time (section 5)
        split = True
    stages = 2 if T > block and not (itemsize < 4 and rows == 1) else 1  # a next chunk to load ahead
    return rows, block, max(1, block // 256), stages, split


print("1024×64:", planner_rules(1024, 64), "  64×16384:", planner_rules(64, 16384),
      "  8×131072 bfloat16:", planner_rules(8, 131072, 2))

# %% jupyter={"source_hidden": true}
# Checks: the chain is the planner, and the lines' readings below (CI runs them; skip when reading)
for B_ in [1, 8, 64, 100, 263, 264, 512, 1000, 1023, 1024, 1056, 2048, 4095, 4096, 16384]:
    for T_ in [1, 16, 64, 100, 128, 256, 1024, 4096, 16384, 31744, 31745, 131072]:
        for size_ in (4, 2):
            p_ = tile_plan(B_, T_, size_)
            assert planner_rules(B_, T_, size_) == (p_["rows"], p_["block"], p_["warps"], p_["stages"],
                                                    p_["segments"] > 1), (B_, T_, size_)  # the chain is the planner
assert "max(_checks.next_power_of_2(T), 16)" in inspect.getsource(plan._tile)  # the code's minimum chunk: 16 steps
assert tile_plan(8, 5)["block"] == tile_plan(2048, 5)["block"] == 16  # "a row of 5 steps gets a chunk of 16"
for B_, T_, block_ in [(4095, 1024, 256), (4096, 1024, 128), (1024, 100, 128), (2048, 16, 16)]:
    assert tile_plan(B_, T_)["block"] == block_  # "a power of two, at most 256 steps, or 128 from 4096 rows up"
for B_, rows_ in [(512, 1), (1023, 1), (2048, 4)]:  # "from 1024 rows up": several rows of 64 steps
    assert tile_plan(B_, 64)["rows"] == rows_
assert tile_plan(16384, 128)["rows"] == 2  # "2 rows of 128"
defaults = Config()
assert ON_H200.min_programs == 264 and defaults.wide_block == 1024 and defaults.split_min_chunks == 32
assert defaults.max_block_t == 1024  # so a wide chunk is 1024 steps
for T_, split_ in [(16384, False), (31744, False), (31745, True), (131072, True)]:  # "ceil(T / 1024) ≥ 32"
    p_ = tile_plan(8, T_)
    assert (p_["segments"] > 1) == split_  # 31,744 steps are 31 wide chunks; one step more is 32
    assert (-(-T_ // defaults.wide_block) >= defaults.split_min_chunks) == split_  # "at least 32 wide chunks"
    assert split_ or (p_["block"], p_["warps"]) == (1024, 4)  # else 1024-step chunks on 4 warps
for (B_, T_), row_ in {(1024, 1024): (256, 1, 1, 2, 1024), (16384, 1024): (128, 2, 1, 2, 8192),  # "five shapes"
                       (4096, 128): (128, 2, 1, 1, 2048), (64, 16384): (1024, 1, 4, 2, 64),
                       (8, 131072): (256, 1, 1, 2, 1024)}.items():
    p_ = tile_plan(B_, T_)
    assert (p_["block"], p_["rows"], p_["warps"], p_["stages"], p_["row_programs"] * p_["segments"]) == row_, (B_, T_)
assert tile_plan(8, 131072)["segments"] == 128 and tile_plan(4096, 128)["seg"] == 1  # "each split in 128"; "one chunk"
assert -(-131072 // defaults.wide_block) == 128 >= defaults.split_min_chunks  # "128 wide chunks a row (≥ 32)"

# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# For maintainers (folded): the planner's tile at eight shapes, on an H200
decisions = []
for B_, T_, dtype in [(4096, 128, "float32"), (1024, 1024, "float32"), (16384, 1024, "float32"),
                      (16384, 1024, "bfloat16"), (1056, 64, "float32"), (1024, 64, "float32"),
                      (64, 16384, "float32"), (8, 131072, "bfloat16")]:
    itemsize = 2 if dtype == "bfloat16" else 4
    p_ = tile_plan(B_, T_, itemsize)
    programs = p_["row_programs"] * p_["segments"]
    decisions.append({"B × T": f"{B_}×{T_}", "dtype": dtype, "ROWS": p_["rows"], "BLOCK": p_["block"],
                      "warps": p_["warps"], "stages": p_["stages"], "V": p_["vector"], "split": p_["segments"],
                      "programs": programs, "per SM (launch)": programs / H200_SMS,
                      # GAE's loads in flight (13, section 2): STAGES chunks of ROWS × BLOCK steps, 2 × itemsize + 1 bytes each
                      "bytes in flight": p_["rows"] * p_["block"] * (2 * itemsize + 1) * p_["stages"]})
print(profile.table(decisions, ["B × T", "dtype", "ROWS", "BLOCK", "warps", "stages", "split", "programs",
                                "per SM (launch)"], digits=4))
decided = {(d["B × T"], d["dtype"]): d for d in decisions}

# %% jupyter={"source_hidden": true}
# Checks: the table's reading (CI runs them; skip when reading)
tile_of = {k: tuple(d[f] for f in ("ROWS", "BLOCK", "warps", "stages", "V")) for k, d in decided.items()}
assert tile_of["16384×1024", "float32"] == (2, 128, 1, 2, 4)  # from 4096 rows up: chunks of 128, 2 rows
assert tile_of["1024×1024", "float32"] == (1, 256, 1, 2, 4)  # below: one row of 256
assert tile_of["4096×128", "float32"] == (2, 128, 1, 1, 4)  # one chunk per row: nothing to load ahead
assert tile_of["16384×1024", "bfloat16"] == (2, 128, 1, 2, 8)  # 16 bytes: 8 bfloat16 steps
assert tile_of["8×131072", "bfloat16"] == (1, 256, 1, 1, 8) and decided["8×131072", "bfloat16"]["programs"] > 8
assert tile_of["64×16384", "float32"] == (1, 1024, 4, 2, 4) and decided["64×16384", "float32"]["programs"] == 64
assert -(-16384 // defaults.wide_block) == 16 < defaults.split_min_chunks  # "only 16 wide chunks"
big_shapes = [d for d in decisions if d["B × T"] != "1024×64"]  # (its rows of 64 steps cannot fill 256)
assert all(d["ROWS"] * d["BLOCK"] // (32 * d["warps"]) == 8 for d in big_shapes)  # 256 steps per warp, 8 per lane
for B_, rows_ in [(1024, 1), (1056, 4)]:  # 4 rows of 64 steps: 256 programs (too few) at 1024 rows, 264 at 1056
    assert tile_plan(B_, 64)["rows"] == rows_
# "one row a program at once": too few programs takes the wide plan, one row a program, though 2 rows would do
assert all(plan._tile(B_, 64, True, 4, ON_H200, wide=True)[0] == 1 for B_ in (1024, 4096, 16384))
assert 1024 // 4 < ON_H200.min_programs <= 1024 // 2  # 256 programs too few; 512 enough
assert 1056 // 4 == ON_H200.min_programs  # 1056×64: four rows make 264 programs
assert decided["1056×64", "float32"]["programs"] == 264 and decided["1024×64", "float32"]["programs"] == 1024
assert (decided["8×131072", "bfloat16"]["split"] > 1) and all(  # only the 8×131072 row is split in time
    d["split"] == 1 for k, d in decided.items() if k != ("8×131072", "bfloat16"))
big = decided["16384×1024", "float32"]  # notebook 13, section 2's program: 8192 of them, 62 per SM over the launch
assert big["bytes in flight"] == package_program and big["programs"] == 8192 and round(big["per SM (launch)"]) == 62

# %% [markdown]
# **Where the package is slow: 64×16384.** This launch has only 64 programs, one per row, each
# walking its row in 16 wide chunks of 1024 steps, so at most 64 of the 132 SMs have any work.
# Together they keep up to about 1.2 MB in flight, if two wide chunks per program are in flight
# (notebook 13, section 2's assumption), where the whole GPU needs about 1.4 MB (with the
# assumed 600 ns). So by Little's law its % floor is at most about 87, or about 43 with one chunk
# per program in flight. The cell puts this bound next to the committed run:

# %%
busy = decided["64×16384", "float32"]  # the planner's wide tile: 64 programs of 1 × 1024 steps, 2 stages
flight_busy = busy["programs"] * busy["bytes in flight"]  # every program's bytes in flight, all SMs together
bound_pct = 100 * flight_busy / in_flight_gpu  # Little's law: the most of the bandwidth those bytes can carry
slow = committed("gae", 64, 16384)
slow_pct = 100 * slow["floor_ms"] / slow["kernel_ms"]
chunks_in_row = 16384 // busy["BLOCK"]  # the chunks one program walks one after another
print(f"64 programs × up to {busy['bytes in flight'] / 1e3:.1f} KB = {flight_busy / 1e6:.2f} MB in flight, "
      f"of {in_flight_gpu / 1e6:.2f} MB needed: % floor at most {bound_pct:.0f}, or {bound_pct / 2:.0f} with one "
      "chunk in flight (600 ns assumed)")
print(f"committed H200 run, GAE 64×16384: GPU {1e3 * slow['kernel_ms']:.1f} µs, {slow_pct:.1f} % of the floor; "
      f"{chunks_in_row} chunks per row, {1e3 * slow['kernel_ms'] / chunks_in_row:.1f} µs each")
chunk_s = 1e-3 * slow["kernel_ms"] / chunks_in_row  # one chunk's time, in seconds
program_rate = busy["BLOCK"] * GAE_READ / chunk_s  # bytes per second that one program loads
print(f"one program: {busy['BLOCK']} steps × {GAE_READ} B every {1e6 * chunk_s:.1f} µs = {program_rate / 1e9:.1f} GB/s; "
      f"× 64 programs = {100 * busy['programs'] * program_rate / load_bw:.1f} % of the loads' rate at the floor; "
      f"on average {program_rate * LATENCY_S / 1e3:.1f} KB in flight per program, "
      f"{100 * program_rate * LATENCY_S / busy['bytes in flight']:.0f} % of its up to {busy['bytes in flight'] / 1e3:.1f} KB "
      "(600 ns assumed)")

# %% jupyter={"source_hidden": true}
# Checks: the figures of the paragraphs above and below (CI runs them; skip when reading)
assert round(busy["bytes in flight"] / 1e3, 1) == 18.4 and round(flight_busy / 1e6, 2) == 1.18  # "about 18 KB", "1.2 MB"
assert round(in_flight_gpu / 1e6, 2) == 1.36 and round(bound_pct) == 87  # "about 1.4 MB", "at most about 87"
assert busy["stages"] == CHUNKS_IN_FLIGHT == 2 and round(bound_pct / 2) == 43 > slow_pct  # one chunk: "about 43"
assert -(-16384 // busy["BLOCK"]) == 16 and busy["BLOCK"] == defaults.wide_block  # "16 wide chunks of 1024 steps"
assert round(slow_pct, 1) == 12.9 and round(slow_pct) == 13  # "about 13 %"
assert chunks_in_row == 16 and round(1e3 * slow["kernel_ms"] / chunks_in_row, 1) == 2.0  # "16 chunks, about 2 µs each"
assert 1e-3 * slow["kernel_ms"] / chunks_in_row > 3 * LATENCY_S and LATENCY_S == 600e-9
assert round(1e-3 * slow["kernel_ms"] / chunks_in_row / LATENCY_S, 1) == 3.4  # "about 3.4 times the assumed latency of 600 ns"
assert round(program_rate / 1e9, 1) == 4.6  # the printout: "1024 steps × 9 B every 2.0 µs, about 4.6 GB/s"
assert round(100 * busy["programs"] * program_rate / load_bw, 1) == round(slow_pct, 1)  # "64 such programs: the 13 %"
assert round(program_rate * LATENCY_S / 1e3, 1) == 2.7 and round(100 * program_rate * LATENCY_S / busy["bytes in flight"]) == 15

# %% [markdown]
# The run measured a % floor of about 13, under either bound: Little's law gives an upper bound,
# not a prediction. What limits each program is the serial chain inside its row. It walks its 16
# chunks one after another, each taking about 2 µs (derived: the measured kernel time ÷ 16) for its
# three links: the chunk's loads, its scan, and the carry handed to the next chunk. That is about
# 3.4 times the assumed latency of 600 ns.
# At that pace, taken from the measured time, each program has on average only about 15 % of the
# bytes it could have in flight (the cell's last line). Which of the three links costs the most,
# the data do not say.
#
# The planner accepts this on purpose. It chose the split threshold by the **wall time** per call,
# what a training loop pays, and a split call costs two launches. Under CUDA-graph replay, where the
# host costs nothing, the split is faster here, so a caller that replays graphs can pass
# `Config(split_min_chunks=2)`.

# %% [markdown]
# **The `Config`.** The planner's tunables are one frozen object, `rltriton_lite.config.Config`.
# Its `tile` field fixes one tile for every scan. A tile changes the speed, never the results:
# under the table's four-warp tile, GAE gives the same advantages as under the planner's.

# %%
from rltriton_lite.config import current, using  # noqa: E402

print(Config())
rew, val = torch.randn(2, 6, 700, device=DEVICE)
done = torch.rand(6, 700, device=DEVICE) < 0.02
planned_adv = rl.gae(rew, val, terminated=done, gamma=0.99, lambda_=0.95, backend=KERNEL).advantages
with using(Config(tile=(4, 256, 4, 1))):  # the four-warp tile, for every scan
    four_warp_adv = rl.gae(rew, val, terminated=done, gamma=0.99, lambda_=0.95, backend=KERNEL).advantages
torch.testing.assert_close(four_warp_adv, planned_adv, rtol=1e-5, atol=1e-5)
print("GAE under the four-warp tile == GAE under the planner's tile")

# %% jupyter={"source_hidden": true}
# Checks: Config(tile=...) fixes the planner's tile (CI runs them; skip when reading)
with using(Config(tile=(4, 256, 4, 1))):
    assert plan._plan(6, 700, True, 4, torch.device(DEVICE), current())[:4] == (4, 256, 4, 1)

# %% [markdown]
# <details><summary>Sources</summary>
#
# The planner is `plan._plan`, which calls `plan._tile`. The rest is from `docs/DESIGN.md`, each
# entry measured on the code of its day:
#
# * "The scan's tile": the three tiles' GAE times, 0.1226, 0.0851 and 0.0814 ms, from one probe.
# * "The time split": the wide chunks' 59.5 → 35.4 µs of wall time at 64×16384; the split threshold
#   chosen by wall time per call; the split's 11.5 µs of GPU time under CUDA-graph replay.
# * The bfloat16 exception: a one-row tile of a 2-byte dtype spilled registers when pipelined.
# * The thresholds (the 264 programs, the 4096 rows, the 32 wide chunks) come from the package's
#   defaults and measurements, not from a model. The 264, two programs per SM, is a default that
#   `docs/DESIGN.md` states without a measurement of its own (section 5).
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the Sources box's figures, as docs/DESIGN.md states them (CI runs them; skip when reading)
assert "GAE 0.1226 ms at the earlier 4 rows × 256 × 4 warps × 1 stage, 0.0851 ms at 1 × 256 × 1 × 2, " \
       "0.0814 ms at 2 × 128 × 1 × 2" in design  # the tile table
assert "1024 steps in 4 warps 0.59× at 64×16384 (GAE 59.5 → 35.4 µs" in design  # the wide chunks' figure
assert "A one-row tile of a 2-byte dtype is not pipelined." in design and "elements; GAE's kernel 7268 " \
    "instructions in PTX, spills" in design  # the bfloat16 exception and its reason
assert "Both chosen by wall time per call, what a training loop pays, not by GPU time: a split call costs " \
       "two launches" in design
assert "the split is faster still (GAE 64×16384: 11.5 µs of GPU time); a caller that replays graphs can pass " \
       "`Config(split_min_chunks=2)`" in design
assert round(100 * (1 - 35.4 / 59.5), -1) == 40  # the wide chunks: "about 40 % off GAE's wall time per call"

# %% [markdown]
# ### 4.1 A model of the speed, against three measurements
#
# **In one line: a model built from notebook 13's rules orders three measured cases right, but
# misses the few-programs case by almost 4×, because enough bytes in flight is necessary, not
# sufficient.**
#
# The model, from notebook 13's sections 2 and 3:
#
# * **SMs with work:** a launch of P programs keeps at most P of the 132 SMs busy.
# * **Bytes in flight per SM** = the programs resident on it × the bytes each has in flight.
# * **Bandwidth per SM:** each SM with work draws at most its share, 1/132 of the copy bandwidth
#   (assumed), scaled by its bytes in flight ÷ 10.3 KB. SMs without work draw nothing.
# * **Predicted % of the floor:** the bandwidth all the SMs draw, as a share of the copy bandwidth.
#
# It is applied to three committed cases of GAE in float32: notebook 13's naive-kernel anchor at
# 16384×1024 (one program of Triton's default 4 warps per row, one step's 9 bytes in flight), and
# the package at 16384×1024 and at 64×16384, with the planner's tiles (section 4).
#
# <details><summary>Details: resident programs, against programs per SM over the launch</summary>
#
# * **Resident programs** are those an SM holds at the same moment, their warps taking turns. An
#   SM of an H100 or H200 holds at most 32 (and 64 warps), fewer when their registers or shared
#   memory run out. Only resident programs have loads in flight together, so they are what
#   Little's law counts.
# * **Programs per SM over the launch** are the launch's programs ÷ 132, the eight shapes' "per SM
#   (launch)" above. Each SM runs them one after another, a few resident at a time: about 62 at
#   16384×1024 (derived).
#
# The model takes the resident programs per SM as the smallest of three caps: 32 programs, the
# SM's limit; 64 warps ÷ the warps of one program; and the programs per SM over the launch,
# rounded up. Registers and shared memory can lower the count further; the model leaves them out.
#
# The package at 16384×1024 runs 8192 programs of 2 rows and 1 warp each:
#
# * The SM's limit: 32 programs.
# * The warps: 64 ÷ 1 = 64 programs.
# * The launch: 8192 ÷ 132 = 62.1, so up to 63 programs on one SM.
#
# The smallest cap is 32, so the SM holds 32 resident programs, not 62: far more than the 3 to 5
# that notebook 13, section 2, found it needs (about 2.2 to 4.5, rounded up). The anchor's programs have 4 warps each, so its
# warps cap it at 64 ÷ 4 = 16.
#
# </details>

# %%
MAX_RESIDENT, MAX_WARPS = 32, 64  # per SM of an H100 or H200
per_sm = in_flight_gpu / H200_SMS  # notebook 13, section 2: the loads in flight per SM that reach the floor
walk = committed("gae", 16384, 1024, impl="bare_triton_launch")  # notebook 13's naive-kernel anchor


def model_pct(programs, warps, bytes_each):
    """The model's % of the floor for a launch of `programs` programs of `warps` warps, each with
    `bytes_each` bytes of loads in flight; and what it is built from."""
    with_work = min(programs, H200_SMS)
    resident = min(MAX_RESIDENT, MAX_WARPS // warps, -(-programs // H200_SMS))  # the last: programs per SM, rounded up
    in_flight = resident * bytes_each  # per SM with work
    return 100 * with_work / H200_SMS * min(1.0, in_flight / per_sm), with_work, resident, in_flight


ANCHOR_WARPS = triton.Config({}).num_warps  # the anchor's launch names no num_warps: Triton's default
cases = {}  # name -> (programs, warps, bytes each in flight, the committed row)
cases["naive-kernel anchor, 16384×1024"] = (16384, ANCHOR_WARPS, GAE_READ, walk)  # one step's 9 bytes in flight
for B_, T_ in [(16384, 1024), (64, 16384)]:
    p_ = tile_plan(B_, T_)
    cases[f"rltriton_lite, {B_}×{T_}"] = (p_["row_programs"] * p_["segments"], p_["warps"],
                                          p_["rows"] * p_["block"] * GAE_READ * p_["stages"], committed("gae", B_, T_))
model = []
for name, (programs, warps, bytes_each, r) in cases.items():
    pct, with_work, resident, in_flight = model_pct(programs, warps, bytes_each)
    model.append({"case (GAE, float32)": name, "programs": programs, "SMs with work": with_work,
                  "resident per SM": resident, "B in flight per program": bytes_each,
                  "KB in flight per SM": in_flight / 1e3, "predicted % of floor": pct,
                  "measured % of floor": 100 * r["floor_ms"] / r["kernel_ms"]})
print(f"the model: {LATENCY_S * 1e9:.0f} ns latency (assumed), {per_sm / 1e3:.1f} KB per SM for the floor\n")
print(profile.table(model, digits=3))

# %% [markdown]
# * **The anchor:** predicted 1.4 % of the floor (derived), measured 3.3 %: the right size, but
#   about 2× too low.
# * **The package at 16384×1024:** predicted the full floor, measured 83 %. Bytes in flight are not
#   what limits it.
# * **The package at 64×16384:** predicted 48.5 %, measured 13 %. Here the model fails: a program
#   walking a long chain of chunks does not keep its bytes in flight at every moment, and the chain
#   sets the time (section 4). Section 5's time split cuts that chain, at the price of the host
#   time that keeps 64×16384 unsplit.
#
# <details><summary>Details: each case's arithmetic, and why the model misses</summary>
#
# * **The anchor:** 16 resident programs of 9 bytes each are 144 bytes in flight per SM. The 600 ns
#   is a trip to memory. The anchor reads each row one float at a time, and 8 floats share a
#   32-byte sector, so most of its loads probably find their sector already fetched, in the cache,
#   and come back sooner.
# * **The package at 16384×1024:** 32 resident programs hold about 14 times the 10.3 KB. The model
#   says only that bytes in flight are not the limit; the last 17 % is something it does not
#   describe.
# * **The package at 64×16384:** 64 programs leave 68 SMs without work. The model assumes that each
#   program keeps its 18.4 KB in flight at every moment. A program walking its row does not: it
#   waits a whole latency for its first chunk, and between loads it scans each chunk of 1024 steps
#   on 4 warps, which wait for each other at barriers. Its 16 chunks in series took 2.0 µs each
#   (derived: the measured kernel time ÷ 16), where the model allows 0.54 µs (derived). Without
#   the cap of one share per SM, the same bytes bound it at 87 % (section 4): either way, far above
#   the 13 % measured.
#
# </details>
#
# <details><summary>Sources: the model's own numbers</summary>
#
# The model reuses notebook 13's numbers (its table at the end of section 4) and adds these:
#
# | quantity | value | kind (from what) |
# |---|---|---|
# | resident programs, warps per SM | at most 32, 64 | the H100's and H200's limits |
# | the most one SM draws | 1/132 of the bandwidth | **assumed**, the model's cap (without it, section 4 bounds 64×16384 at 87 %) |
# | the anchor's warps | 4 | Triton's default: its launch names none |
# | the model's % of the floor: anchor, package at 16384×1024, at 64×16384 | 1.4, 100, 48.5 % | derived: the model |
#
# Everything built on the assumed 600 ns latency is an illustration, not a measurement.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: section 4.1's figures, from the model and the committed run (CI runs them; skip when reading)
from rltriton_lite import bench  # noqa: E402  (the anchor's launch names no num_warps)

assert "num_warps" not in inspect.getsource(bench.bare_gae) and ANCHOR_WARPS == 4  # "Triton's default 4 warps"
an, big_m, wide_m = model
assert (an["programs"], an["resident per SM"], an["B in flight per program"]) == (16384, 16, 9)  # "16 of 9 bytes"
assert round(1e3 * an["KB in flight per SM"]) == 144  # "144 bytes in flight per SM"
assert round(an["predicted % of floor"], 1) == 1.4 and round(an["measured % of floor"], 1) == 3.3
assert round(an["measured % of floor"] / an["predicted % of floor"]) == 2  # "about 2× too low"
assert big_m["resident per SM"] == 32 and round(big_m["KB in flight per SM"] * 1e3 / per_sm) == 14  # "about 14 times"
_need = (per_sm / package_program, 2 * per_sm / package_program)  # notebook 13, section 2: 2 chunks, or 1, in flight
assert [round(x, 1) for x in _need] == [2.2, 4.5] and [-(-x // 1) for x in _need] == [3, 5]  # "about 2.2 to 4.5, rounded up"
assert big_m["resident per SM"] > max(_need)  # holds 32, "far more than the 3 to 5" needed
assert round(per_sm / 1e3, 1) == 10.3 and round(big["per SM (launch)"]) == 62  # "÷ 10.3 KB"; "about 62 at 16384×1024"
assert np.isclose(model_pct(1, 1, per_sm)[0], 100 / H200_SMS)  # one SM with enough bytes draws "1/132 of the copy bandwidth"
assert np.isclose(model_pct(1, 1, per_sm / 2)[0], 100 / H200_SMS / 2)  # "scaled by its bytes in flight ÷ 10.3 KB"
assert model_pct(1, 1, 10 * per_sm)[0] == model_pct(1, 1, per_sm)[0]  # "at most 1": the cap
# the worked count: 8192 programs of 2 rows and 1 warp; caps 32, 64 ÷ 1, 8192 ÷ 132 = 62.1 rounded up to 63
assert (big_m["programs"], planned["rows"], planned["warps"]) == (8192, 2, 1) and 16384 // 2 == 8192
assert (MAX_RESIDENT, MAX_WARPS // planned["warps"], round(8192 / H200_SMS, 1), -(-8192 // H200_SMS)) == (32, 64, 62.1, 63)
assert model_pct(8192, 1, 1)[2] == min(32, 64, 63) == 32 and MAX_WARPS // ANCHOR_WARPS == 16  # "not 62"; the anchor's 16
assert big_m["predicted % of floor"] == 100 and round(big_m["measured % of floor"]) == 83  # "the full floor", "83 %"
assert round(100 - big_m["measured % of floor"]) == 17  # "the last 17 %"
assert (wide_m["programs"], wide_m["SMs with work"], H200_SMS - wide_m["SMs with work"]) == (64, 64, 68)  # "68 SMs"
assert wide_m["resident per SM"] == 1 and round(wide_m["KB in flight per SM"], 1) == 18.4  # "its 18.4 KB"
assert round(wide_m["predicted % of floor"], 1) == 48.5 and round(wide_m["measured % of floor"]) == 13  # "48.5 %", "13 %"
assert 3.5 < wide_m["predicted % of floor"] / wide_m["measured % of floor"] < 4  # "misses ... by almost 4×" (and 13's intro)
# without the cap of one share per SM: every program's bytes against the whole GPU's need, as section 4 ("87 %")
assert round(100 * wide_m["programs"] * wide_m["B in flight per program"] / in_flight_gpu) == 87 == round(bound_pct)
wide = tile_plan(64, 16384)
assert (wide["block"], wide["warps"], wide["stages"]) == (1024, 4, 2)  # "chunks of 1024 steps on 4 warps"
chunk_us = 1e3 * slow["kernel_ms"] / 16  # derived: the measured kernel time over each program's 16 chunks in series
model_chunk_us = 1e6 * wide["block"] * GAE_READ / (load_bw / H200_SMS)  # the model: one SM's share of the loads
assert round(chunk_us, 1) == 2.0 and round(model_chunk_us, 2) == 0.54  # "2.0 µs each, where the model allows 0.54"
order = lambda key: sorted(range(3), key=lambda i: model[i][key])  # noqa: E731
assert order("predicted % of floor") == order("measured % of floor")  # "the order of the three cases right"
# the Sources box: the model's own numbers
assert (MAX_RESIDENT, MAX_WARPS, ANCHOR_WARPS) == (32, 64, 4)
assert [round(m["predicted % of floor"], 1) for m in model] == [1.4, 100.0, 48.5]  # "1.4, 100, 48.5 %"

# %% [markdown]
# ## 5. Long rows: the time split
#
# **The question:** how do a few long rows keep the whole GPU busy? **The answer:** by the
# associativity of notebook 00 once more, in three steps.
#
# At 8×131072, one program per row leaves most of an H200's 132 SMs idle (notebook 13, section
# 3). The split cuts each row into segments, one program each:
#
# 1. **Pass 1.** One program per segment composes its segment's map: a summary, with no outputs.
# 2. **Compose.** The summaries are composed from the end, to get the carry entering each segment.
# 3. **Pass 2.** Each program rescans its segment from that carry and writes the outputs.
#
# With the split, the same GAE call ran about 56 times faster. In NumPy:

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
# Each pass is a launch, which costs host time: this is why the split waits for rows of at least 32
# wide chunks, ceil(T / 1024) ≥ 32 (section 4). It changes the speed, never the results: forced on
# two short rows, it gives the same returns.

# %%
r = torch.randn(2, 700, device=DEVICE)
d = torch.rand(2, 700, device=DEVICE) < 0.02
plain = rl.discounted_returns(r, gamma=0.99, terminated=d, backend=KERNEL)
with using(Config(max_block_t=64, min_programs=1 << 20, split_min_chunks=2)):  # force a split
    split = rl.discounted_returns(r, gamma=0.99, terminated=d, backend=KERNEL)
torch.testing.assert_close(split, plain, rtol=1e-5, atol=1e-5)
print("the time split gives the same returns")

# %% [markdown]
# <details><summary>Details: how the split's trigger, aim and threshold were chosen</summary>
#
# Three numbers describe a split: its trigger, its aim and its result. Notebook 13, section 3,
# tests the trigger, together with the threshold: rows of at least 32 wide chunks of 1024 steps.
#
# * **The trigger** decides whether to split. It is the rule's 2 × SMs: a launch of fewer than 264
#   programs on an H200, 2 × 132, may be split.
# * **The aim** decides how finely. A split aims at four times the trigger: 4 × 264 = 1056
#   programs, 8 per SM. This is the planner's default.
# * **The result** is what a shape gets. 8×131072 gets 1024 programs, a little under the aim (the
#   end of this fold).
#
# How each was chosen:
#
# * **The trigger, 2 per SM,** is the package's default (`Config.min_programs`). `docs/DESIGN.md`
#   states it without a measurement of its own. What it measured is the split's gain.
# * **The segment size** was swept from 132 to 1056 programs: the default, 4 × 264, came within 6 %
#   of the best time at every long-row shape (`docs/DESIGN.md`, "The time split").
# * **Just above the trigger,** a launch is not split. 264 rows of 32,768 steps run 264 one-warp
#   programs, 2 per SM: 9.2 KB in flight per SM by notebook 13's count (4.6 KB a program, section
#   2), a little under its 10.3 KB.
#
# **Why 32?** The threshold was chosen by wall time per call, what a training loop pays, since a
# split call costs a second launch and more work on the host. On an H200 (`docs/DESIGN.md`, older
# code), GAE rows of 32 wide chunks ran faster split (64×32768: 43.3 µs split, 54.5 walked), and
# rows of 16 ran faster walked (64×16384: 49.2 µs walked, 70.0 split). Those two points fit any
# threshold from 17 to 32 wide chunks; the package takes 32.
#
# **Why 8×131072 gets 1024 programs, not the 1056 aimed at:** every segment holds the same whole
# number of chunks. The 1056 programs ask for 132 segments per row; a row's 512 chunks of 256 steps
# in 132 segments round up to 4 chunks each, and 512 chunks in fours make 128 segments:
# 8 × 128 = 1024.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the fold's figures, from docs/DESIGN.md and the planner (CI runs them; skip when reading)
# the sweep behind the aim of 4 × 264
assert "Segment size**: swept over 132–1056 programs" in design and "within 6 % of the best at every long-row shape" in design
assert "time is cut into segments for four times that many programs" in design and 4 * 264 == 1056 == 8 * H200_SMS
# just above the trigger: 264 rows are not split, one-warp programs of one row of 256 steps
_per_sm = in_flight_gpu / H200_SMS  # notebook 13's 10.3 KB per SM, from the assumed 600 ns
_above = tile_plan(264, 32768)
assert (_above["segments"], _above["row_programs"], _above["warps"], _above["rows"], _above["block"]) == (1, 264, 1, 1, 256)
assert _above["row_programs"] // H200_SMS == 2 and round(2 * package_program / 1e3, 1) == 9.2 < round(_per_sm / 1e3, 1) == 10.3
assert tile_plan(263, 32768)["segments"] > 1  # one row fewer is split
# "why 32?": docs/DESIGN.md's wall times per call, split against walked, on code older than the committed run
assert "Both chosen by wall time per call, what a training loop pays" in design and "hence 32" in design
assert "32 wide chunks now split faster than they walk (GAE 64×32768: 43.3 µs against 54.5" in design
assert "while 16 still walk faster (64×16384: 49.2 against 70.0" in design
assert "hence 32. (2026-12-01, `benchmarks/results/checks/H200-2026-12-01g-token-probe.txt`.)" in design
assert "2026-12-01" < RES["date"]  # "older code"
_split_32k, _walk_32k = map(float, re.search(r"split faster than they walk \(GAE 64×32768: ([\d.]+) µs against ([\d.]+)",
                                             design).groups())
_walk_16k, _split_16k = map(float, re.search(r"16 still walk faster \(64×16384: ([\d.]+) against ([\d.]+)", design).groups())
assert (_split_32k, _walk_32k, _walk_16k, _split_16k) == (43.3, 54.5, 49.2, 70.0)  # the fold's four times
assert _split_32k < _walk_32k and _split_16k > _walk_16k  # 32 wide chunks ran faster split, 16 faster walked
# a threshold k splits rows of n >= k wide chunks: 16 walked and 32 split fit "any threshold from 17 to 32"
assert [k for k in range(1, 65) if 16 < k and 32 >= k] == list(range(17, 33)) and 17 <= Config().split_min_chunks <= 32
# why 1024, not 1056: segments of one whole number of chunks, rounded up (plan._plan's seg = cdiv(chunks, cdiv(4 × want, programs)))
assert "seg = _checks.cdiv(n_chunks, min(n_chunks, _checks.cdiv(4 * want, n_programs)))" in inspect.getsource(plan._plan)
_long = tile_plan(8, 131072)
assert -(-1056 // 8) == 132 and 131072 // 256 == 512 and -(-512 // 132) == 4 == _long["seg"]
assert 512 // 4 == 128 == _long["segments"] and 8 * 128 == 1024 == _long["row_programs"] * _long["segments"]

# %% [markdown]
# ### 5.1 Where notebook 13's split figures come from
#
# Notebook 13, section 4, quotes two figures from `docs/DESIGN.md`, "The time split". Both were
# measured on an H200, on code older than the committed run.
#
# * **Before and after the split.** GAE at 8×131072 ran 8 programs for 1.86 ms, and 0.033 ms with
#   the split (2026-11-29): about 56 times faster.
# * **Why rows too short to split run 4 warps.** Such rows walk wide chunks of 1024 steps, a warp
#   per 256. At 64×16384 that took 0.59 times the wall time per call of one warp walking 256-step
#   chunks (GAE, 59.5 µs to 35.4 µs).

# %% jupyter={"source_hidden": true}
# Checks: section 5.1's figures, as docs/DESIGN.md states them (CI runs them; skip when reading)
assert "Before the split, GAE at 8×131072 ran 8 programs for 1.86 ms; with it, 0.033 ms." in design
assert round(1.86 / 0.033) == 56  # "about 56 times faster"
assert "0.033 ms. (2026-11-29, results" in design and "2026-11-29" < RES["date"] == "2026-12-06"  # older than the run
# why 4 warps, not one: wide chunks, measured faster per call at this shape than one warp on 256-step chunks
assert "shorter rows of few programs walk **wide chunks** (`Config.wide_block` = 1024 steps, a warp per 256)" in design
assert "First, one warp walking 256-step chunks against the split" in design
assert "1024 steps in 4 warps 0.59× at 64×16384 (GAE 59.5 → 35.4 µs" in design  # wall time per call, 0.59× of it

# %% [markdown]
# ### 5.2 The look-ahead's launches
#
# Notebook 12, section 4, needs a *look-ahead*: at a token before a masked span, $\delta_t$ reads
# $V(s_{t+1})$ at the next unmasked token. Usually the look-ahead costs no launch of its own: the
# scan's kernel computes it as it goes. One extra launch computes it first, before the scan, in two
# cases:
#
# * **A backward will read it,** because an input needs a gradient.
# * **The scan is a time split of three launches.** A split into a few segments runs in two
#   launches, and they still compute the look-ahead. A split into many runs in three, and they do
#   not.

# %% jupyter={"source_hidden": true}
# Checks: when the look-ahead runs inside the scan's launches, and when one launch computes it first (CI runs them; skip when reading)
from rltriton_lite import episode  # noqa: E402

_doc = " ".join(episode.looks_ahead.__doc__.split())
assert "no input in ``tensors`` needs a gradient, so no backward reads the ends" in _doc  # "a backward will read it"
assert "else masks.py derives the look-ahead as tensors" in _doc  # "one extra launch computes it first":
assert "derived as tensors first, by one launch of the scan kernel before the estimator's" in design
assert "a time split of two launches" in " ".join(plan.looks_ahead_in_the_scan.__doc__.split())  # "runs in two launches"
_cfg = Config()  # a split of more than Config.compose segments runs in three launches, and does not look ahead itself
assert plan.ahead_fits(1, 1 << 30, _cfg) and plan.ahead_fits(_cfg.compose, 1024, _cfg)
assert not plan.ahead_fits(_cfg.compose + 1, 1024, _cfg) and "else three" in inspect.getsource(Config)

# %% [markdown]
# ## 6. Looking at the compiled code
#
# **The question:** what can you check of the compiled kernel, and what can the interpreter not
# show? **The answer:** the compiled code shows shuffles and spills; the interpreter hides races and
# stray memory accesses.
#
# A compiled Triton kernel carries its intermediate forms, such as `compiled.asm["ptx"]` (**PTX**,
# NVIDIA's assembly). Counting `shfl.sync` in the PTX counts section 2's shuffles. A kernel
# **spills** when it needs more registers than it has: the compiler then keeps some values in
# slower `.local` memory. `tools/compile_sm90.py` compiles the package's kernels for an H100/H200
# without a GPU, and fails on spills.
#
# **What the interpreter does not show.** `TRITON_INTERPRET=1` runs programs one at a time, so
# programs that race on the same memory look fine there. Nor does it guard memory: an unmasked load
# past the end reads garbage, so the course's checkers stop a stray access and name the `tl.load` or
# `tl.store` that needs a mask. Grading runs in the interpreter: on a GPU, run your checks under
# `TRITON_INTERPRET=1` before you hand in.
#
# **The kernel and its chunk loop.** The package's scan kernel is `scan._scan_kernel`, about 70
# lines. It walks the chunks of its rows in `scan._walk`. Notebook 00c, section 3, names the line
# of `_walk` that does each part of your `hooked_scan`, and section 6.1 below copies those lines
# whole. Two folded cells below are for reading that source:
# the first lists the kernel's arguments (and prints the kernel if you set `SHOW_KERNEL = True`),
# the second prints `_walk` with its counterpart in your kernel above each line. Nothing after
# them needs them.
#
# <details><summary>For maintainers: the kernel's arguments, in three groups (the first folded cell)</summary>
#
# * **What you wrote in notebooks 00b and 00c:** `X`, `SX`, `P`, `O`, `SO`, `n_rows`, `T`,
#   `PROLOGUE`, `EPILOGUE`, `REVERSE`, `ACC` (the accumulation dtype) and `BLOCK`.
# * **Carries:** `Y0` enters each row or segment; `Y_END` receives the carry after each row's last
#   step (notebook 11).
# * **Speed:** `ROWS`, `V` and `STAGES` (sections 1 and 4); `SUMMARY`, `SEG`, `BLOCK_S` and
#   `COMPOSE` for the time split (section 5); `AHEAD`, notebook 12's look-ahead.
#
# </details>

# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# For maintainers (folded): the kernel's arguments in the details' three groups, and the kernel itself
SHOW_KERNEL = False  # True: print the whole kernel, about 70 lines
kernel_fn = getattr(scan._scan_kernel, "fn", scan._scan_kernel)
ARG_GROUPS = {"what you wrote": ["X", "SX", "P", "O", "SO", "n_rows", "T", "PROLOGUE", "EPILOGUE", "REVERSE", "ACC",
                                 "BLOCK"],
              "carries": ["Y0", "Y_END"],
              "speed": ["ROWS", "V", "STAGES", "SUMMARY", "SEG", "BLOCK_S", "COMPOSE", "AHEAD"]}  # the details' groups
args = list(inspect.signature(kernel_fn).parameters)
kernel_src = inspect.getsource(kernel_fn)
for group, names in ARG_GROUPS.items():
    print(f"{group}: {', '.join(names)}")
print(kernel_src if SHOW_KERNEL else f"_scan_kernel: {len(args)} arguments, {len(kernel_src.splitlines())} lines "
      "(set SHOW_KERNEL = True to print it)")

# %% jupyter={"source_hidden": true}
# Checks: the details' three groups hold every argument of the kernel (CI runs them; skip when reading)
assert sorted(args) == sorted(a for group in ARG_GROUPS.values() for a in group)  # every argument, in one group
assert "_walk(" in kernel_src  # the chunk loop, below

# %% [markdown]
# <details><summary>For maintainers: <code>_walk</code> beside your kernel (the second folded
# cell)</summary>
#
# The cell prints the lines of `scan._walk` that section 6.1's table sets beside your
# `hooked_scan`, each under a `# yours:` comment that names its counterpart; `...` marks lines left
# out. The other names in the printout:
#
# * `X`, `SX` and `P` go to both hooks: the input pointers, their strides, and the numbers γ, λ,
#   .... The epilogue also gets the outputs `O` and their strides `SO`.
# * `k_start` and `k_end` bound the chunks one program walks: a row, or one segment (section 5).
# * `STAGES` is section 4's pipelining. Without a look-ahead (`AHEAD`), the prologue's call is the
#   one under `if AHEAD is None:`.
# * `SUMMARIZE` is the time split's first pass (section 5): the chunk's composed map, `c_a, c_b,
#   c_r`, is folded into the segment's, and nothing is stored. Otherwise, under `else:`, the
#   epilogue stores the chunk and the carry moves on.
# * `row` holds the `ROWS` rows of section 4's tile, each as `NV` vectors of `V` steps.
# * `valid` takes the place of your mask `m`, minus the steps that a `mask` argument marks as
#   padding. `keep` holds loaded values that the epilogue needs again. `y_in` is the value that
#   entered each step, $y_{t+1}$ in a return (V-trace reads it).
# * `after` is the new carry: $y$ at the step that `_scan_chunk` reaches last. `_scan_chunk` gets
#   `REVERSE` too, so `carry = after` serves both directions; `if REVERSE:` sets the chunks' order.
#
# </details>

# %% jupyter={"source_hidden": true, "outputs_hidden": true}
# For maintainers (folded): the lines of scan._walk beside your kernel (00c, section 3)
YOURS = {  # a key of a line of _walk -> its counterpart in your kernel (00c, section 3's table)
    "for k in tl.range": "the loop over the chunks",
    "PROLOGUE(X, SX, P, row, t, m, T, ACC)": "the prologue's (a, b, reset), plus valid and keep",
    "a = tl.where(valid": "padding lanes made the identity: a = 1 ...",
    "b = tl.where(valid": "... b = 0 ...",
    "reset = reset & valid": "... and no reset",
    "_scan_chunk(": "tl.associative_scan with reset_combine, then the select on the carry",
    "EPILOGUE(X, SX, P, O, SO,": "the epilogue: the tl.store of the chunk's values",
    "carry = after": "the new carry: y at the chunk's first step",
}
IN_PLACE = {**YOURS, "if REVERSE:": "(none: your loop always runs in reverse)",
            "c = n_chunks - 1 - k": "c = n_chunks - 1 - i: from the last chunk in time"}
print(exercises.key_lines(scan._walk, IN_PLACE))

# %% jupyter={"source_hidden": true}
# Checks: the printout and the other names (CI runs them; skip when reading)
walk_src = inspect.getsource(getattr(scan._walk, "fn", scan._walk))
walk_code = [line.strip() for line in walk_src.splitlines()]
walk_table = ["for k in tl.range(k_start, k_end, num_stages=STAGES):",
              "a, b, reset, valid, keep = PROLOGUE(X, SX, P, row, t, m, T, ACC)", "a = tl.where(valid, a, 1.0).to(ACC)",
              "b = tl.where(valid, b, 0.0).to(ACC)", "reset = reset & valid",
              "y, y_in, after, c_a, c_b, c_r = _scan_chunk(a, b, reset, carry, ROWS, NV, V, REVERSE)",
              "EPILOGUE(X, SX, P, O, SO, row, t, m, T, ACC, valid, y, y_in, keep)", "carry = after"]
# YOURS picks these lines, in the order _walk runs them
assert [line for line in walk_code if any(key in line for key in YOURS)] == walk_table
shown = exercises.key_lines(scan._walk, IN_PLACE).splitlines()
printed = [line.strip() for line in shown if not line.lstrip().startswith("# yours")]
assert [line for line in printed if line in walk_table] == walk_table  # the printout holds them in that order
assert printed[printed.index("if REVERSE:") + 1] == "c = n_chunks - 1 - k"  # the chunk order
# left out: the chunk's t and m, which _walk builds
assert any(line.startswith("t = ") for line in walk_code) and any(line.startswith("m = ") for line in walk_code)
assert not any(line.startswith(("t = ", "m = ")) for line in printed) and "..." in printed
# the nesting reads as Python: a line deeper than the one before it sits under a printed header
depth = lambda line: len(line) - len(line.lstrip())  # noqa: E731
nested = [line for line in shown if not line.lstrip().startswith("# yours")]
assert all(depth(now) <= depth(before) or before.split("#")[0].rstrip().endswith(":")
           for before, now in zip(nested, nested[1:]))
# the details: k_start, k_end; STAGES; the prologue under if AHEAD is None:; SUMMARIZE and its else:
assert all(w in walk_src for w in ("k_start", "k_end", "SUMMARIZE", "AHEAD"))
assert "if AHEAD is None:" in printed and any(line.startswith("if SUMMARIZE:") for line in printed)
assert "else:" in printed
# c_a, c_b, c_r: read only in the SUMMARIZE branch, and not printed
assert [line for line in walk_code if " c_a," in line][1:] == [
    "s_a, s_b, s_r = combine(s_a, s_b, s_r, c_a, c_b, c_r)"]
assert not any("c_a, c_b, c_r)" in line for line in printed)
# after: _scan_chunk gets REVERSE, as a constexpr
chunk_src = inspect.getsource(getattr(scan._scan_chunk, "fn", scan._scan_chunk))
assert walk_table[5].endswith("REVERSE)") and "REVERSE: tl.constexpr" in chunk_src

# %% [markdown]
# <details><summary>For maintainers: PPO's normalisation slot, <code>X[NORM]</code> (notebook 05)</summary>
#
# With `normalize_advantages=True`, PPO's kernel (`ppo.py`) reads the normalisation from its input
# slot `X[NORM]`. A first reduction (`_adv_moments`) computes the advantages' mean $\mu$. The scale
# $s = 1/(\sigma + 10^{-8})$, with $\sigma$ computed with $N - 1$ in its denominator as CleanRL's
# `advantages.std()` is, then enters in one of three ways:
#
# | the call | $\sigma$ known before the main pass? | `X[NORM]` in the main pass | where $s$ is applied |
# | --- | --- | --- | --- |
# | mean or summed loss | no: the main pass sums $(\hat A - \mu)^2$ beside the loss | $(\mu, 1)$ | once, on the loss total |
# | `reduction="none"` | yes: a second reduction computes it | $(\mu, s)$ | to each element |
# | the backward | yes: the forward's, reused | $(\mu, s)$ | to each element |
#
# `_scale` reads the second number; without normalisation `X[NORM]` is `None` and `_scale` gives 1.
# Scaling the total once is allowed because a positive factor passes through a min:
# $\min(\rho x, c x)\,s = \min(\rho x s, c x s)$ for $s > 0$.
#
# </details>

# %% [markdown]
# ### 6.1 Your kernel's lines in the package's chunk loop
#
# Notebook 00c, section 3, names the line of `_walk` that does each part of your `hooked_scan`.
# Here are those lines whole, each beside yours:
#
# | your line in `hooked_scan` | the package's line in `scan._walk` |
# | --- | --- |
# | `for i in range(0, n_chunks):` | `for k in tl.range(k_start, k_end, num_stages=STAGES):` |
# | `a, b, reset = PROLOGUE(X, P, offs, t, m, T)` | `a, b, reset, valid, keep = PROLOGUE(X, SX, P, row, t, m, T, ACC)` |
# | `a = tl.where(m, a, 1.0)`<br>`b = tl.where(m, b, 0.0)`<br>`reset = reset & m` | `a = tl.where(valid, a, 1.0).to(ACC)`<br>`b = tl.where(valid, b, 0.0).to(ACC)`<br>`reset = reset & valid` |
# | `a_s, b_s, k_s = tl.associative_scan((a, b, reset), 0, reset_combine, reverse=True)`<br>`y = tl.where(k_s, b_s, b_s + a_s * carry)` | `y, y_in, after, c_a, c_b, c_r = _scan_chunk(a, b, reset, carry, ROWS, NV, V, REVERSE)` |
# | `tl.store(Y + offs, y, mask=m)` | `EPILOGUE(X, SX, P, O, SO, row, t, m, T, ACC, valid, y, y_in, keep)` |
# | `carry = tl.sum(tl.where(t == c * CHUNK, y, 0.0), 0)` | `carry = after` |
#
# The fold "`_walk` beside your kernel", above, names most of the other names. Four more:
#
# * `k` counts the chunks in the order the loop walks them. `tl.range` is Triton's `range`. A
#   reverse scan walks chunk `n_chunks - 1 - k`, from the row's end, as your loop does.
# * `PROLOGUE` and `EPILOGUE` are the hooks, `tl.constexpr` arguments as in your `hooked_scan`.
# * `.to(ACC)` casts to `ACC`, the dtype the scan computes in.
# * `_scan_chunk` does your scan with `scan.combine`, then your select on `carry`. Of the six
#   values it returns, `y` is the chunk's outputs and `after` the carry for the next chunk walked.
#
# <details><summary>The legend from notebook 00c: one line for each name that your <code>hooked_scan</code> did not have (optional)</summary>
#
# * `X`, `P`: your tuples of input tensors and of parameters. `SX`: the inputs' strides (00c, section 3).
# * `O`, `SO`: the output tensors, which the epilogue writes, and their strides.
# * `ACC`: the type the scan computes in, such as `tl.float32`.
# * `valid`: your mask `m`, as the prologue returns it. The padding uses it in place of `m`.
# * `keep`: values the prologue hands on to the epilogue, such as GAE's $V$.
# * `ROWS`, `NV`, `V`: the chunk's shape, for speed: `ROWS` rows at once, each as `NV` vectors of
#   `V` steps.
# * `y`, `y_in`, `after`: $y_t$; the value that entered step $t$, $y_{t+1}$ in a reverse scan; and
#   the next chunk's carry.
# * `c_a`, `c_b`, `c_r`: the chunk's composed map $(A, B, \kappa)$. Only a long row split between
#   programs uses it.
# * 00c's printout shows a second `PROLOGUE(...)` line: the same call with a look-ahead,
#   `(v_next, found)`, for notebook 12 only.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: section 6.1's table and its names, in the package's source (CI runs them; skip when reading)
import glob  # noqa: E402
import json  # noqa: E402

# the table, read from the markdown cells in this notebook's file (or a renamed copy's), so that it has one source;
# a cell holding several lines joins them with <br>
_found = glob.glob(os.path.join(ROOT, "notebooks", "13c_*.ipynb"))
with open(min(_found, key=lambda p: (os.path.basename(p) != "13c_inside_the_package.ipynb", p)), encoding="utf-8") as f:
    (WALK_TABLE,) = ["".join(cell["source"]) for cell in json.load(f)["cells"] if cell["cell_type"] == "markdown"
                     and "| your line in `hooked_scan` | the package's line in `scan._walk` |" in "".join(cell["source"])]
assert "### 6.1 Your kernel's lines in the package's chunk loop" in WALK_TABLE
_rows = re.findall(r"^\| (`.*`) \| (`.*`) \|$", WALK_TABLE, re.M)
assert len(_rows) == 6  # the loop, the prologue, the padding, the scan and the select, the store, the carry
# each right-hand entry is a whole line of _walk: the eight lines of the printout above, in _walk's order
assert [theirs.strip("`") for _, cell in _rows for theirs in cell.split("<br>")] == walk_table
# the chunk loop comes first, and every other line is inside it, indented deeper
_lines = walk_src.splitlines()
_at = [next(i for i, line in enumerate(_lines) if line.strip() == theirs) for theirs in walk_table]
_indent = lambda line: len(line) - len(line.lstrip())  # noqa: E731
assert all(_indent(_lines[i]) > _indent(_lines[_at[0]]) for i in _at[1:])
# k: the chunks in walking order; a reverse scan walks chunk n_chunks - 1 - k
assert "c = n_chunks - 1 - k" in walk_code and "Scan chunks ``k_start`` ... ``k_end - 1``" in walk_src
# the hooks and ACC are tl.constexpr arguments of _walk
assert all(f"{name}: tl.constexpr" in walk_src for name in ("PROLOGUE", "EPILOGUE", "ACC"))
# _scan_chunk returns six values, y first and after third; it scans with scan.combine and selects on the carry
_returned = [name.strip() for name in walk_table[5].split(" = ")[0].split(",")]
assert len(_returned) == 6 and _returned[0] == "y" and _returned[2] == "after"
assert "tl.associative_scan(" in chunk_src and ", combine)" in chunk_src
assert "tl.where(r, b, b + a * c_in)" in inspect.getsource(getattr(scan._value, "fn", scan._value))
assert "the chunk's composed map (a, b, reset)" in chunk_src  # c_a, c_b, c_r, as the fold above says

# %% [markdown]
# ## 7. Across devices: the backward, and what crosses the wire
#
# **The question:** notebook 11 splits one scan's steps across ranks. How does the gradient come
# back, and what exactly do the ranks send? **The answer:** the backward is the same split, run
# forwards in time, in two passes and two exchanges. A forward call sends 7 numbers per rank, and
# 8 per row per rank.
#
# This section is for maintainers of `distributed.py`, whose `_TimeSharded` does both. It needs
# notebook 11, sections 1–6, and reuses their example: 4 rows of 24 steps on three ranks. Each
# rank's segment has its forward map $(A_r, B_r)$, and $c_r$ is the carry that enters it. So rank
# $r$'s first output is $c_{r-1} = B_r + A_r\,c_r$ (for $r \ge 1$).
#
# [Notebook 11, section 6](11_across_devices.ipynb#6.-The-backward:-the-same-exchange,-the-other-way)
# works the backward by hand, on two ranks and then three, and names its parts: $\sigma_r$, the
# gradient that rank $r$'s own steps send into its carry $c_r$; $x_r$, the gradient that enters
# rank $r$ from the ranks before it; and the rule $x_{r+1} = \sigma_r + A_r\,x_r$, with $x_0 = 0$.
# This section adds why the gradient runs forwards, a route the package does not take, what
# crosses the wire, and the package's code, checked on random numbers.

# %%
gen = torch.Generator().manual_seed(0)
rows, T = 4, 24
a = torch.rand(rows, T, dtype=torch.float64, generator=gen) * 0.5 + 0.5
b = torch.randn(rows, T, dtype=torch.float64, generator=gen)
bounds = [0, 7, 15, 24]  # rank r holds the steps [bounds[r], bounds[r + 1])
spans = list(zip(bounds, bounds[1:]))
segments = [(a[:, lo:hi], b[:, lo:hi]) for lo, hi in spans]
maps = [(a_seg.prod(-1), rl.linear_scan(a_seg, b_seg)[:, 0]) for a_seg, b_seg in segments]  # (A_r, B_r), no reset
carries, c = [None] * 3, torch.zeros(rows, dtype=torch.float64)
for r in (2, 1, 0):  # notebook 11, section 2: c_2 = 0, c_r = B_{r+1} + A_{r+1} c_{r+1}
    carries[r] = c
    c = maps[r][1] + maps[r][0] * c
print("three ranks' forward maps and carries, as in notebook 11, section 2")

# %% [markdown]
# **Why the gradient runs forwards.** Let $y$ = `linear_scan(a, b)`, let $dy_t$ be the upstream
# gradient, and let $g_t = \partial L/\partial b_t$ be the total gradient at step $t$. Step $t$'s
# value reaches step $t - 1$ through $y_{t-1} = b_{t-1} + a_{t-1}\,y_t$, so
#
# $$g_t = dy_t + a_{t-1}\,g_{t-1}.$$
#
# That is a *forward* scan of the pairs $(a_{t-1}, dy_t)$, notebook 01b's `transposed_scan`. The
# gradient flows forwards in time, so notebook 11's split carries over with the arrows reversed.
#
# <details><summary>An alternative the package does not take: the gradient scan's own maps (P_r, Q_r)</summary>
#
# Split the gradient scan itself, as notebook 11 split the forward:
#
# * Each rank's stretch of this gradient scan is one map. Call it $(P_r, Q_r)$, to keep it apart
#   from the forward map $(A_r, B_r)$: the gradient at the rank's last step is
#   $Q_r + P_r\,g_{\text{in}}$, for $g_{\text{in}}$ the gradient $g$ at the previous rank's last
#   step (`grad_in` in the Checks cell below the package's way).
# * A rank's $g_{\text{in}}$ is composed from the ranks *before* it. Rank 0's is 0.
#
# **Why the package does not.** $P_r$ multiplies $a_{t-1}$ over rank $r$'s steps, so it starts with
# the $a$ of the *previous* rank's last step. Split this way, each rank would need that number from
# its neighbour. The package avoids it: the rank that holds that $a$ multiplies by it before it
# sends. The two ways agree: the package's $x_r = a_{t-1}\,g_{t-1}$, for $t$ rank $r$'s first step,
# where $g_{t-1}$ is this route's $g_{\text{in}}$.
#
# </details>
#
# **What the package sends.** Take rank $r$'s last step $t$. Its carry $c_r$ reaches it through
# $y_t = b_t + a_t\,c_r$. So the gradient with respect to $c_r$ contains $a_t\,g_t$, which rank $r$
# computes from its own numbers. That product is what crosses the boundary, and rank $r + 1$ adds it
# at its first output. (Likewise, $\partial L/\partial a_t = g_t\,c_r$ needs $c_r$, which the
# forward already left on rank $r$.)
#
# The package's backward, `_TimeSharded.backward`, takes two passes through each segment and two
# exchanges:
#
# 1. **Pass 1.** Each rank computes $\sigma_r$ by autograd on its own segment, with nothing entering
#    from the ranks before. **Exchange 1** gathers every rank's $\sigma_r$: one number per row.
# 2. **Compose.** Each rank composes its $x_r$ over the ranks before it, by notebook 11's rule
#    $x_{r+1} = \sigma_r + A_r\,x_r$ (a reset selects $\sigma_r$ alone, as in notebook 11, section 3).
#    This $A_r$ is the *forward* map's, all of rank $r$'s own $a$, not the fold's $P_r$.
# 3. **Pass 2.** Each rank runs its segment's backward again, with $x_r$ added to the upstream
#    gradient at its first output.
# 4. **For GAE.** The gradient of each boundary value $V(s_{t+1})$ is computed on the rank that
#    read it. **Exchange 2** gathers these, and each rank adds those of the values it owns.

# %% [markdown]
# The package's way on the three ranks, with random numbers: pass 1 gives each rank's $\sigma_r$
# from autograd on its own segment, the composition uses the forward maps' $A_r$, and pass 2 adds
# $x_r$ at the segment's first output. Autograd on one process gives the gradient to check against.

# %%
b_leaf = b.clone().requires_grad_()
dy = torch.randn(rows, T, dtype=torch.float64, generator=gen)
(rl.linear_scan(a, b_leaf) * dy).sum().backward()  # one process: the gradient to check against
local = []  # per rank: its b and carry as leaves, its outputs from the forward's carry
for (lo, hi), (a_seg, b_seg), cr in zip(spans, segments, carries):
    b_r, c_r = b_seg.clone().requires_grad_(), cr.clone().requires_grad_()
    local.append((b_r, c_r, rl.linear_scan(a_seg, b_r, initial=c_r), dy[:, lo:hi]))
sent = [torch.autograd.grad(y_r, c_r, dy_r, retain_graph=True)[0] for b_r, c_r, y_r, dy_r in local]  # pass 1: σ_r
xs, x = [], torch.zeros(rows, dtype=torch.float64)
for r, (A, _) in enumerate(maps):  # exchange 1, then the composition with the forward maps' A
    xs.append(x)
    x = sent[r] + A * x  # x_{r+1} = σ_r + A_r x_r
grads = []
for (b_r, c_r, y_r, dy_r), x_r in zip(local, xs):  # pass 2: x_r added at the segment's first output
    dy_in = dy_r.clone()
    dy_in[:, 0] += x_r
    grads.append(torch.autograd.grad(y_r, b_r, dy_in)[0])
assert torch.allclose(torch.cat(grads, -1), b_leaf.grad)
print("the package's way (carry gradients composed with the forward maps) = autograd's, max difference",
      f"{float((torch.cat(grads, -1) - b_leaf.grad).abs().max()):.1e}")

# %% jupyter={"source_hidden": true}
# Checks: the fold's alternative, the (P_r, Q_r) route, against autograd, and the two ways agreeing (CI runs them; skip when reading)
a_before = torch.cat([torch.zeros(rows, 1, dtype=torch.float64), a[:, :-1]], -1)  # a_{t-1}; none before t = 0
grad_maps = [(a_before[:, lo:hi].prod(-1), rl.linear_scan(a_before[:, lo:hi], dy[:, lo:hi], reverse=False)[:, -1])
             for lo, hi in spans]  # (P_r, Q_r)
grad_in, _g = [], torch.zeros(rows, dtype=torch.float64)
for P, Q in grad_maps:  # ranks 0, 1, 2: what enters each, composed from the ranks before
    grad_in.append(_g)
    _g = Q + P * _g
pieces = [rl.linear_scan(a_before[:, lo:hi], dy[:, lo:hi], reverse=False, initial=g_in)
          for (lo, hi), g_in in zip(spans, grad_in)]
assert torch.allclose(torch.cat(pieces, -1), b_leaf.grad)  # the gradient scan split over three ranks = autograd's
for r, (lo, _) in enumerate(spans[1:], 1):  # "the two ways agree": x_r = a_{t-1} g_{t-1}, g_{t-1} this route's g_in
    assert torch.allclose(xs[r], a[:, lo - 1] * grad_in[r])

# %% [markdown]
# ### 7.1 What crosses the wire, forwards
#
# A forward call makes three exchanges, in this order, for every scan:
#
# | exchange | numbers sent by each rank | what they are |
# | --- | --- | --- |
# | 1. the header | 7 | a description of the call, so that every rank checks that all run the same one |
# | 2. the ends | 4 per row | the row's ends on this rank (listed below) |
# | 3. the maps | 4 per row | the map's three numbers $(A, B, \text{reset})$, and an error flag |
#
# In all, 7 numbers per rank, plus 8 per row per rank, however many steps each rank holds.
#
# * **The header:** which scan; the dtype; the number of rows; whether it has values; whether it
#   has a boundary value; whether `gamma` or `lambda_` needs a gradient (one flag for either); its
#   number of steps. Every rank compares every rank's header. If they disagree, all raise the same
#   error; a rank that raised alone would leave the others waiting at the next exchange.
# * **The ends**, four numbers per row: a flag (does the row have a step on this rank that its mask
#   keeps?); the value at the first such step (notebook 11, section 5's "first value"); the value
#   after the row's last step (`bootstrap_value`); the carry that enters the row from its end
#   (`initial`). Only one rank's copy of the last two is read: that of the rank where the scan
#   starts, the last in a reverse scan. A call without `bootstrap_value` or `initial` sends 0. A
#   bare scan has no values, and sends zeros as its first values: it makes the same three exchanges
#   as GAE, in the same order.
# * **The error flag** is not part of the scan. A rank whose arguments were refused sets it to 1
#   in every row, and every rank that sees a 1 raises the same error. It is per row only because it
#   rides as a fourth row of the maps' table, so that one `all_gather` carries both.

# %% jupyter={"source_hidden": true}
# Checks: section 7's account of the package's backward and forward, on its source (CI runs them; skip when reading)
bwd_src = inspect.getsource(distributed._TimeSharded.backward)
assert bwd_src.count(" = gather(") == 2  # two exchanges
assert "(g,) = torch.autograd.grad(outs, [carry], d_outs" in bwd_src and "sent = gather(sent)" in bwd_src  # pass 1, exchange 1
assert "for k in range(rank):" in bwd_src  # composed over the ranks before, with the forward maps' A and reset
assert "x = torch.where(ctx.maps[k, 2] != 0, sent[k], sent[k] + ctx.maps[k, 0] * x)" in bwd_src
assert "torch.autograd.grad(list(outs) + [end], wanted + extra, d_outs + [x.to(end.dtype)]" in bwd_src  # pass 2
assert "routed = gather(" in bwd_src and "torch.where(ctx.owners == rank, routed, 0.0)" in bwd_src  # exchange 2
head_src = inspect.getsource(distributed._TimeSharded.forward)
head_list = re.search(r"head = torch\.tensor\(\[(.*?)\], dtype", head_src, re.S).group(1)
assert len([x for x in head_list.split(",") if x.strip()]) == 7 and "the ranks disagree on the call" in head_src
# the second exchange's four numbers per row: the flag, the first value, then bootstrap_value and initial
assert "table = gather(torch.stack([has.to(torch.float64), v_first, *tails]))" in head_src
assert "for name in (w.boundary, w.initial)]" in head_src and "table[-1, 2]" in head_src and "table[-1, 3]" in head_src
# the third exchange's four numbers per row: the map's three and the error flag (8 per row per rank in all)
assert ".expand(4, rows)  # the identity, no error" in head_src and "maps = gather(maps)" in head_src
assert head_src.count(" = gather(") == 3  # the forward's three exchanges: the header, the ends' table, the maps
assert "maps[3] = 1.0" in head_src  # a refused rank flags every row
# "for every scan ... a bare scan sends zeros as its first values" (moved from notebook 11, section 5)
assert "if values is not None and steps:" in head_src
_lines = head_src.splitlines()  # each exchange sits in the method's body or its one `with` block: no `if` skips one
assert [len(x) - len(x.lstrip()) for x in _lines if " = gather(" in x or "with torch.enable_grad():" in x] == [8, 8, 12, 12]
assert "v_first = torch.zeros(rows, dtype=torch.float64" in head_src  # without values, the first values stay 0
_order = [head_src.index(x) for x in ("heads = gather(head)", "table = gather(torch.stack([has.to(torch.float64), v_first, *tails]))",
                                      "maps = gather(maps)")]
assert _order == sorted(_order)  # in this order: the header, the ends (first values, flag, boundary, initial), the maps

# %% [markdown]
# ### 7.2 The cost of the split, case by case
#
# Notebook 11, section 7, gives the rule as a table: gather the row and make one plain call, with or
# without gradients, unless one of two cases holds. This section, for maintainers, gives the
# figures behind that rule, from the same file: `benchmarks/results/checks/H100-2026-12-07-time-group-cost.txt`.
#
# <details><summary>Details: the two cases, gradients, the break-even at 8 ranks worked, the other rows, NCCL, and 2 ranks</summary>
#
# **The two cases for `time_group=`.** Everywhere else gather + one call wins: it is faster,
# its code is simpler, and its advantages are the same. Notebook 11, section 5's worker shows it in
# its last lines: pad, `dist.all_gather`, trim, one call.
#
# * **A batch too big to gather.** The one call reads 9 bytes and writes 8 per token of the whole
#   batch, on every rank: 1,024 rows of 1,048,576 tokens are about 18 GB per rank, beside the model.
# * **Many ranks on a slow link,** below the break-even. The gather's wire grows with the ranks'
#   steps. The split's all_gather of maps grows with the ranks too, but only by a few numbers per
#   row per rank.
#
# **Gradients through the advantages** (section 7 above) are not a third case. An autograd-aware
# gather, `torch.distributed.nn.functional.all_gather`, carries them: its backward sends each rank
# its slice of the gradient, 4 bytes per token of the values' gradient against the 9 gathered
# forwards. The split sends one number per row per rank in each exchange instead. So with gradients
# it is the same trade against the link's speed. With no link crossed, the gather won on the
# gradient lines too: 736 µs against 3.30 ms on the long row (the table below).
#
# **The break-even at 8 ranks, worked.** It is notebook 11's "about 50–80 GB/s", for GAE's forward
# call alone; notebook 11, section 7, works the line with the backward the same way. On the long row,
# each rank holds 9 MiB of values, rewards and flags: 8 MiB of float32 values and rewards, 1 MiB of
# one-byte flags ($1\text{ MiB} = 2^{20}$ bytes). With 8 ranks, the gather brings the other 7
# ranks' 63 MiB, about 66 million bytes, to each rank: 66/B ms on a link of B GB/s. The split took
# $t_s = 1.31$ ms. On a faster link the gather wins; on a slower one, the split. This estimate, not
# a measurement, rests on three assumptions:
#
# * **The split stays at $t_s = 1.31$ ms.** It was measured as rank 0 of *two* ranks, and is
#   assumed not to grow with more: it sends only a few numbers per row per rank.
# * **No round trip is counted.** A forward call's three all_gathers, and the backward's two
#   (section 7.1 and above), each pay a network round trip that the one-machine measurement never
#   saw.
# * **The gather's one call reads 4 times the steps.** It reads 8 ranks' steps, 4 times the 2
#   ranks' it read when measured. Its measured wall time, $t_g = 114$ µs, is mostly the host's:
#   only 33.5 µs is GPU time. So there are two ways to scale it:
#   * **All of it, 4 times:** the call takes $4\,t_g = 0.46$ ms. This is the pessimistic case.
#   * **Only the GPU time, 4 times:** the call takes $114 + 3 \times 33.5$ µs, about 0.21 ms. The
#     host launches one call either way, so its share stays fixed; only the GPU work grows with the
#     gathered data. The measured 114 µs already holds one GPU time of 33.5 µs, so three more are
#     added, not four.
#
# The gather and the split are equal at $B = 66/(t_s - t_8)$, where $t_8$ is that call's time at 8
# ranks: $66/(1.31 - 0.46)$, about 78 GB/s, if all of its time grows; $66/(1.31 - 0.21)$, about
# 60 GB/s, if only its GPU time grows.
#
# **Which links.** NVLink inside one node carries hundreds of GB/s per GPU, so there the gather
# wins. Across nodes, a 400 Gb/s InfiniBand link per GPU carries about 50 GB/s, so there the split
# can win at 8 ranks. These link speeds are vendor specifications, not measured here. The verdict
# is fragile: if the split's 1.31 ms grew by 40 % with the ranks, the 78 would fall to
# $66/(1.83 - 0.46)$, about 48 GB/s, below InfiniBand's 50. Hence notebook 11's range, about
# 50–80 GB/s.
#
# **The fourth column.** The file also times the split through real NCCL calls, in a group of one
# rank ("NCCL, 1 rank"). It adds NCCL's own cost, and still crosses no link. The file's other
# column names: "one device" (plain call), "2 ranks, local gather" (split), "gather, one call".
#
# **The table.** Its first three rows are GAE on the long row (1,048,576 steps per rank, two
# ranks, so 2,097,152 gathered); its last two, the range over all 8 lines of the file.
#
# | per call | plain call | split, local copy | split, NCCL with 1 rank | gather + one call, local copy |
# |---|---|---|---|---|
# | wall time, GAE forwards | 77.5 µs | 1.31 ms | 1.64 ms | 114 µs |
# | GPU time, GAE forwards | 13.6 µs | 74.7 µs | 73.4 µs | 33.5 µs |
# | wall time, GAE with the backward | 459 µs | 3.30 ms | 4.47 ms | 736 µs |
# | wall time, all 8 lines | 25–620 µs | 0.86–3.30 ms | 1.18–4.47 ms | 46–736 µs |
# | GPU time, all 8 lines | 3.0–27.8 µs | 59.2–145.1 µs | 55.3–155.0 µs | 9.3–67.8 µs |
#
# * **By GPU time too,** the split took 5.5 times the plain call's, the gather 2.5 times: the
#   split 2.2 times the gather (74.7 against 33.5 µs). With the backward, by wall time, 7.2 times
#   and 1.6 times. On every line, the gather's wall time is under a quarter of the split's.
# * **The split's cost is the host's, not the wire's.** On every line, each split's GPU time is
#   under a tenth of its wall time. NCCL adds host time too: its wall time is above the local
#   copy's on every line, and its GPU time within 10 % of it (lower on 4 lines, higher on 4).
#
# **2 ranks.** Each rank's 9 MiB is about 9.4 million bytes. The gather + one call costs
# $t_g + 9.4/B$ ms, with $t_g = 0.11$ ms; the split $t_s = 1.31$ ms. They are equal
# at $B = 9.4/(t_s - t_g)$, about 7.9 GB/s: at 2 ranks the one call was measured, so nothing is
# scaled. With the NCCL column's $t_s$ (1.64 ms), the break-evens fall to about 6.2 GB/s (2 ranks)
# and 46–56 GB/s (8 ranks).
#
# **Source.** The file was written by `tools/time_group_cost.py`, on one H100 on 2026-12-07 with
# torch 2.11; no link crossed. The break-evens and the 18 GB are arithmetic on it, not
# measurements. Notebooks 08 and 09 quote an H200: compare this file's figures with each other only.
#
# **Why the split is slower.** The split path is not optimised for small calls. Where exactly the
# time goes was not profiled, but two costs stand out (a leaner split would move the break-even):
#
# * **Many small launches.** Python builds each exchange's table from many small tensor
#   operations, each a launch of its own. So the split's GPU time alone is above any plain call's.
# * **Host syncs.** The host reads exchanged numbers several times per call: the header, each
#   rank's error flag. Each read is a synchronisation: the host stops until the GPU has finished
#   all the work queued before it, so the host's work and the GPU's no longer overlap.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: section 7.2's figures, from the committed file, moved with them from notebook 11 (CI runs them; skip when reading)
COST_FILE = os.path.join(RESULTS, "checks", "H100-2026-12-07-time-group-cost.txt")
# (shape, call) -> [plain call, split local copy, split NCCL 1 rank, gather + one call], each (wall µs, GPU µs)
cost_lines, cost = profile.read_time_group_cost(COST_FILE)
(one_wall, one_gpu), (local_wall, local_gpu), _, (joined_wall, joined_gpu) = cost["1 x 1048576", "gae forwards"]
cost_rows = [{"wall µs": w, "GPU µs": g} for w, g in ((one_wall, one_gpu), (local_wall, local_gpu), (joined_wall, joined_gpu))]
# "no round trip is counted": a forward call's three all_gathers, the backward's two
assert inspect.getsource(distributed._TimeSharded.forward).count(" = gather(") == 3
assert inspect.getsource(distributed._TimeSharded.backward).count(" = gather(") == 2
assert cost_lines[0].startswith("NVIDIA H100") and len(cost) == 8 and all(len(r) == 4 for r in cost.values())
# the fold's Source: one H100, torch 2.11, 2026-12-07; gae and linear_scan, forwards and with the backward, two shapes
assert "torch 2.11" in cost_lines[0] and "2026-12-07" in os.path.basename(COST_FILE)
assert set(cost) == {(s_, f"{c_} {p_}") for s_ in ("1 x 1048576", "4096 x 128") for c_ in ("gae", "linear_scan")
                     for p_ in ("forwards", "forwards + backwards")}
assert "time_group_cost.txt" in open(os.path.join(os.path.dirname(os.path.dirname(profile.results_folder())), "tools",
                                                  "time_group_cost.py"), encoding="utf-8").read()  # "written by"
assert re.split(r"\s{2,}", cost_lines[1].strip()) == ["shape call", "one device", "2 ranks, local gather", "NCCL, 1 rank",
                                                         "gather, one call"]  # the file's four columns, in the parse's order
# the table's first two rows: GAE forwards on the long row, wall and GPU
assert (one_wall, round(local_wall / 1e3, 2), round(joined_wall)) == (77.5, 1.31, 114)  # "77.5 µs", "1.31 ms", "114 µs"
assert (one_gpu, local_gpu, joined_gpu) == (13.6, 74.7, 33.5)  # "(13.6 µs)", "(74.7 µs)", "(33.5 µs)"
assert round(cost["1 x 1048576", "gae forwards"][2][0] / 1e3, 2) == 1.64  # the NCCL column: "1.64 ms"
assert cost["1 x 1048576", "gae forwards"][2][1] == 73.4  # the NCCL column's GPU time: "73.4 µs"
# the first bullet: each time ÷ the plain call's
assert (round(joined_wall / one_wall, 1), round(local_wall / one_wall)) == (1.5, 17)  # wall time: "1.5", "17"
assert (round(joined_gpu / one_gpu, 1), round(local_gpu / one_gpu, 1)) == (2.5, 5.5)  # GPU time: "(2.5)", "(5.5)"
assert joined_wall < local_wall and joined_gpu < local_gpu  # "the gather beat the split by both clocks"
# the table's third row: GAE with the backward, on the long row; wall µs
(_b1, _), (_b2, _), _, (_b4, _) = cost["1 x 1048576", "gae forwards + backwards"]
assert (round(_b1), round(_b4), round(_b2 / 1e3, 2)) == (459, 736, 3.30)  # "459 µs", "736 µs", "3.30 ms"
assert round(cost["1 x 1048576", "gae forwards + backwards"][2][0] / 1e3, 2) == 4.47  # the NCCL column: "4.47 ms"
assert (round(_b4 / _b1, 1), round(_b2 / _b1, 1)) == (1.6, 7.2)  # "1.6 times", "7.2 times" the plain call's
assert _b4 < _b2  # "with no link crossed, the gather won on the gradient lines too: 736 µs against 3.30 ms"
assert all(r_[3][0] < r_[1][0] for k_, r_ in cost.items() if "backwards" in k_[1])  # on all four gradient lines
# the table's last two rows: all eight lines
one_walls = [row_[0][0] for row_ in cost.values()]
assert (round(min(one_walls)), round(max(one_walls), -1)) == (25, 620)  # the plain call: "25–620 µs"
assert max(row_[0][1] for row_ in cost.values()) < 30  # its GPU time "under 30 µs"
split_walls = [w for row_ in cost.values() for w, _ in row_[1:3]]  # both split columns
assert (round(min(split_walls) / 1e3, 2), round(max(split_walls) / 1e3, 1)) == (0.86, 4.5)  # "0.86 ms or more", "up to 4.5 ms"
assert round(min(w for row_ in cost.values() for w, _ in row_[1:2]) / 1e3, 2) == 0.86  # the no-wire split: "0.86 ms or more"
split_gpus = [row_[1][1] for row_ in cost.values()]  # the split's GPU time, no wire, on the file's eight lines
assert (min(split_gpus), max(split_gpus)) == (59.2, 145.1)  # "59.2–145.1 µs"
assert all(g < 0.1 * w for row_ in cost.values() for w, g in row_[1:3])  # "under a tenth of its wall time" (both splits)
assert local_gpu - one_gpu < 0.1 * (local_wall - one_wall)  # "the split's cost is the host's" (the long row's extra time)
assert min(split_gpus) > max(row_[0][1] for row_ in cost.values())  # "the split's GPU time alone is above any plain call's"
# the NCCL column: "above the local copy's on every line"; GPU "within 10 % ...: lower on 4 lines, higher on 4"
assert all(r[2][0] > r[1][0] for r in cost.values())
assert all(abs(r[2][1] / r[1][1] - 1) < 0.1 for r in cost.values())
assert sum(r[2][1] < r[1][1] for r in cost.values()) == 4 and sum(r[2][1] > r[1][1] for r in cost.values()) == 4
assert min(r[1][0] / r[3][0] for r in cost.values()) > 4  # the gather: "under a quarter of the split's" (local copy)
# the table's last two rows: each cell the range over the file's lines, wall then GPU
_rng = lambda k, i, f: (f(min(r[k][i] for r in cost.values())), f(max(r[k][i] for r in cost.values())))  # noqa: E731
assert _rng(1, 0, lambda x: round(x / 1e3, 2)) == (0.86, 3.30) and _rng(2, 0, lambda x: round(x / 1e3, 2)) == (1.18, 4.47)
assert _rng(3, 0, round) == (46, 736) and _rng(0, 1, lambda x: x) == (3.0, 27.8)  # "46–736 µs", "3.0–27.8 µs"
assert _rng(2, 1, lambda x: x) == (55.3, 155.0) and _rng(3, 1, lambda x: x) == (9.3, 67.8)
# the host reads exchanged numbers (syncs): the header, then each rank's error flag
_fwd = inspect.getsource(distributed._TimeSharded.forward)
assert "heads = gather(head).cpu()" in _fwd and "bad = [k for k in range(world) if bool(maps[k, 3].any())]" in _fwd
# the break-even: the other rank's 1,048,576 steps are 8 MiB of values and rewards and 1 MiB of flags (MiB = 2**20 bytes)
_other = 1_048_576
assert (_other * 2 * 4 / 2**20, _other * 1 / 2**20) == (8, 1)  # "8 MiB of values and rewards and 1 MiB of flags: 9 MiB"
_gather_bytes = 9 * 2**20
# the gather costs (W / 2) x its measured call plus (W - 1) x 9 MiB over the wire; equal to the split's wall time at B
_equal_B = lambda W: (W - 1) * _gather_bytes / ((local_wall - joined_wall * W / 2) * 1e-6) / 1e9  # noqa: E731
assert (round(_equal_B(2), 1), round(_equal_B(8))) == (7.9, 78)  # "about 7.9 GB/s" (2 ranks), "about 78 GB/s" (8)
_tool = open(os.path.join(os.path.dirname(os.path.dirname(profile.results_folder())), "tools", "time_group_cost.py"),
             encoding="utf-8").read()
_doc = " ".join(_tool.split('"""')[1].split())  # the tool's docstring: what each column ran
assert "plays rank 0 of two ranks that hold the same steps" in _doc and "Only the wire is missing." in _doc
assert "A second row uses a real NCCL group of one rank." in _doc  # "NCCL, 1 rank"
assert "gather the whole row (here, the rank's steps concatenated twice, the gather's local equivalent), make one " \
       "plain call, keep the rank's slice" in _doc  # "gather, one call": twice the steps, no wire either
# "4 bytes per token of the values' gradient": the tool differentiates the float32 values alone
assert "return torch.autograd.grad(ret[:, :T], vg, dy)" in _tool and "float32" in cost_lines[0]
import torch.distributed.nn.functional as dist_nn  # noqa: E402  ("its backward sends each rank its slice")
assert callable(dist_nn.all_gather) and "_Reduce_Scatter.apply" in inspect.getsource(dist_nn._AllGather.backward)
assert "SHAPES = [(1, 1 << 20), (4096, 128)]" in _tool and 2 * 2**20 == 2_097_152  # "1,048,576 ... two hold 2,097,152"
# "NCCL adds host time too": wall above on every line, GPU within 10 %
assert all(r[2][0] > r[1][0] and abs(r[2][1] / r[1][1] - 1) < 0.1 for r in cost.values())
# "a batch too big to gather": 9 bytes read and 8 written per token (GAE's 17 in float32); 1,024 rows of 2**20 tokens
assert profile.op("gae").bytes_per_step(4) == 9 + 8 == 17 and round(1024 * 2**20 * 17 / 1e9) == 18  # "about 18 GB"
# the wire, worked
assert round(_gather_bytes / 1e6, 1) == 9.4  # "about 9.4 million bytes": 9.4/B ms at B GB/s
# 2 ranks: B = 9.4 / (t_s - t_g), t_s and t_g in ms: "about 7.9 GB/s"
assert round(_gather_bytes / 1e6 / ((local_wall - joined_wall) / 1e3), 1) == round(_equal_B(2), 1) == 7.9
# W = 8: each rank receives (W - 1) x 9 MiB; the gathered call reads 8 ranks' steps, 4 times the measured 2 ranks'
_w8_bytes = (8 - 1) * _gather_bytes
assert _w8_bytes == 63 * 2**20 and round(_w8_bytes / 1e6) == 66  # "7 × 9 = 63 MiB, about 66/B ms"
_w8_call = joined_wall * 8 / 2  # "4 t_g"
assert round(_w8_bytes / ((local_wall - _w8_call) * 1e-6) / 1e9) == round(_equal_B(8)) == 78  # "about 78 GB/s"
assert round(joined_wall / 1e3, 2) == 0.11 and round(_w8_call / 1e3, 2) == 0.46  # "t_g = 0.11 ms", "4 t_g = 0.46 ms"
# the second assumption: only the GPU time grows 4 times: "114 + 3 × 33.5 µs, about 0.21 ms", "about 60 GB/s"
_w8_call_gpu = joined_wall + (8 / 2 - 1) * joined_gpu
assert (round(joined_wall), joined_gpu) == (114, 33.5) and joined_gpu < joined_wall / 2  # "mostly the host's"
assert round(_w8_call_gpu / 1e3, 2) == 0.21 and round(_w8_bytes / ((local_wall - _w8_call_gpu) * 1e-6) / 1e9) == 60
# the vendor figure: 400 Gb/s InfiniBand is 50 GB/s, below the 60-78 GB/s break-even ("the split can win")
assert 400 / 8 == 50 < round(_w8_bytes / ((local_wall - _w8_call_gpu) * 1e-6) / 1e9)
# the text's rounded arithmetic: "66/(1.31 - 0.46), about 78", "66/(1.31 - 0.21), about 60"
assert round(66 / (1.31 - 0.46)) == 78 and round(66 / (1.31 - 0.21)) == 60
# "if the split's 1.31 ms grew by 40 % ... 66/(1.83 - 0.46), about 48 GB/s, below InfiniBand's 50"
assert round(1.4 * local_wall / 1e3, 2) == 1.83 and round(66 / (1.83 - 0.46)) == 48 < 50
assert round(_w8_bytes / ((1.4 * local_wall - _w8_call) * 1e-6) / 1e9) == 48  # the same, unrounded
# "the split 2.2 times the gather: 74.7 against 33.5 µs" (GPU time)
assert round(local_gpu / joined_gpu, 1) == 2.2 and (local_gpu, joined_gpu) == (74.7, 33.5)
# the table printed: the long row's three calls, wall and GPU µs, in the file's columns 1, 2 and 4
assert [(r_["wall µs"], r_["GPU µs"]) for r_ in cost_rows] == [(77.5, 13.6), (1307.0, 74.7), (114.2, 33.5)]
# "the split's all_gather of maps grows with the ranks too, ... a few numbers per row per rank": 4 (A, B, reset, error)
assert "maps = torch.tensor([[1.0], [0.0], [0.0], [0.0]], dtype=torch.float64," in _fwd and "maps = gather(maps)" in _fwd
assert round(local_wall / one_wall) == 17 and round(joined_wall / one_wall, 1) == 1.5  # "17 times", "1.5 times"
# the same, the split taken at its NCCL figure: "about 6.2 GB/s with 2 ranks and 56 GB/s with 8"
_nccl_wall = cost["1 x 1048576", "gae forwards"][2][0]
_equal_B_nccl = lambda W: (W - 1) * _gather_bytes / ((_nccl_wall - joined_wall * W / 2) * 1e-6) / 1e9  # noqa: E731
assert (round(_equal_B_nccl(2), 1), round(_equal_B_nccl(8))) == (6.2, 56)
assert round(7 * _gather_bytes / ((_nccl_wall - joined_wall - 3 * joined_gpu) * 1e-6) / 1e9) == 46  # "46–56 GB/s"
assert (round(local_wall / 1e3, 2), round(_nccl_wall / 1e3, 2)) == (1.31, 1.64)  # "t_s = 1.31 ms"; NCCL's "1.64 ms"

# %% [markdown]
# ## Inside the loss kernels of notebooks 05–07
#
# How the package implements the losses of notebooks 05, 06 and 07: one subsection per notebook.
# They are here because this notebook is the package's inside, and the loss kernels are part of the
# package, beside the scan. None of those notebooks depends on this, and their exercises do not
# need it. The next cell rebuilds the inputs that the checks use.

# %%
from rltriton_lite import _reduce, crr, ppo, sac  # noqa: E402

n = lambda x: x.detach().cpu().numpy()  # noqa: E731
tt = lambda x: torch.as_tensor(np.asarray(x), device=DEVICE)  # noqa: E731  NumPy to torch; float64 stays float64
torch.manual_seed(2)  # notebook 05's rollout: 4 rows of 32 steps
old_log_probs = -2.0 * torch.rand(4, 32).to(DEVICE) - 0.1
log_probs = old_log_probs + 0.2 * torch.randn(4, 32).to(DEVICE)
adv = torch.randn(4, 32).to(DEVICE)
_rng6 = np.random.default_rng(6)  # notebook 06's random rows: 3 rows of 40 steps, two critics
R, NLP, LP = _rng6.normal(size=(3, 40)), _rng6.normal(size=(3, 40)) - 1, _rng6.normal(size=(3, 40)) - 1
Q = _rng6.normal(size=(2, 3, 40))
TERM = _rng6.random((3, 40)) < 0.1
TRUNC = (_rng6.random((3, 40)) < 0.1) & ~TERM
G_loop = reference.sac_targets(R, list(Q), NLP, gamma=0.97, alpha=0.2, lambda_=0.8, log_probs=LP, terminated=TERM,
                               truncated=TRUNC)


def _scan(a, b, reset):  # y_t = b_t where reset_t, b_t + a_t y_{t+1} elsewhere
    y, carry = np.zeros_like(b), np.zeros(b.shape[:-1])
    for t in reversed(range(b.shape[-1])):
        carry = y[..., t] = np.where(reset[..., t], b[..., t], b[..., t] + a[..., t] * carry)
    return y


# %% [markdown]
# ### Inside PPO
#
# This subsection comes from the end of [notebook 05](05_ppo.ipynb); "section 3" means that
# notebook's section 3. The folded cells after it check it against the package's source.
#
# #### The two reduction kernels
#
# `_reduce.reduce` runs section 3's two kernels, from `rltriton_lite/_reduce.py`. Here they are,
# trimmed to one statistic (`...` marks what was cut):
#
# ```python
# @triton.jit
# def _partials_kernel(X, ..., PART, ...):  # many programs
#     acc = ELEMENTWISE(X, ..., row, t, m, ...)  # the hook on this program's first tile
#     for i in tl.range(...):  # its other tiles, added element by element
#         acc += ELEMENTWISE(X, ..., row, t, m, ...)
#     total = tl.sum(tl.sum(acc, axis=1), axis=0)  # the program's partial sum
#     tl.store(PART + tl.program_id(0), total)  # at its own index
#
# @triton.jit
# def _finish_kernel(PART, OUT, n_parts, ...):  # one program
#     ...  # the second stage: your exercise
# ```
#
# `ELEMENTWISE` is the loss's per-element hook (for PPO, `_ppo_forward`). It is a `@triton.jit`
# function passed as a `tl.constexpr` argument, so Triton compiles it into the kernel. It gets one
# tile: its rows `row`, its steps `t` (the package lays every input out as (B, T), so even a
# reduction indexes its tiles by row and step) and its in-bounds mask `m`. It returns each
# element's statistics, 0 where `m` is False. For PPO there are five: the element's loss, 1 (for
# the count), 1 if its ratio is clipped, its `approx_kl` term and $(\hat A-\mu)^2$ (the next
# subsection explains them).
#
# * **`_partials_kernel`.** Each program runs the elementwise hook over its tiles, each a block of
#   rows × steps, and adds them into one partial sum per statistic. It stores them at its own index.
# * **`_finish_kernel`**, a single program, adds the partials **in a fixed order**.
#
# **One launch or two, and what else the kernels do.** A *pass* is one reading of the data. Each
# pass launches section 3's two kernels, or only the first when one program covers every tile and
# finishes the sum itself. With
# `normalize_advantages=True`, extra passes run before the loss pass: one for the advantages' mean,
# and under `"none"` one more for their spread (the next subsection). The
# kernels also sum several statistics at once, divide by a count, and issue loads ahead of time.
#
# #### The five statistics, and when the normalisation divides
#
# The forward's pass returns five statistics, which the reduction sums: the loss, the count of
# unmasked elements, the count of clipped ratios, the term $(\rho-1) - \log\rho$ that `approx_kl`
# averages, and $(\hat A-\mu)^2$ for the advantage normalisation, where $\mu$ is the advantages'
# mean.
#
# `clip_fraction` counts $\rho \notin [1-\epsilon_{\text{low}}, 1+\epsilon_{\text{high}}]$.
# `approx_kl`'s term is the "k3" estimator of $\mathrm{KL}(\pi_{\text{old}}\,\|\,\pi)$:
# non-negative and unbiased for samples from $\pi_{\text{old}}$.
#
# With `normalize_advantages=True` the advantage is $(\hat A - \mu)/(\sigma + 10^{-8})$, as in
# CleanRL's minibatches. $\sigma$ has $N - 1$ in its denominator, as `advantages.std()` does.
# Masked steps never enter $\mu$ or $\sigma$. $\sigma$ is known only after a pass has summed the
# squares. The forward runs these steps, each pass a reduction of section 3 (one launch, or two):
#
# 1. The pass for $\mu$: it sums the count and the advantages.
# 2. The loss pass: it sums the squares $(\hat A - \mu)^2$ and the loss, undivided, beside the
#    other statistics.
# 3. No pass over the data: from the sums, $\sigma$, then the loss divided by $\sigma + 10^{-8}$,
#    once.
#
# Dividing after the sum is exact in real arithmetic (in float32 the last bits may differ), for any
# positive divisor $s$, here $s = \sigma + 10^{-8}$: with
# $x = \hat A - \mu$, $\min(\rho x/s,\ \mathrm{clip}(\rho)\,x/s) = \min(\rho x,\ \mathrm{clip}(\rho)\,x)/s$.
#
# With `normalize_advantages=True`, each reduction runs these passes over the data:
#
# | `reduction` | its passes, in order | what $\sigma + 10^{-8}$ divides |
# | --- | --- | --- |
# | `"mean"` | $\mu$; the squares and the loss | the summed loss, after the passes (step 3) |
# | `"sum"` | $\mu$; the squares and the loss | the summed loss, after the passes (step 3) |
# | `"none"` | $\mu$; the squares; the loss | each element's loss, inside the loss pass |
#
# **Why `"none"` takes one pass more.** Under `"mean"` and `"sum"`, the loss pass sums undivided
# losses and step 3 divides the total once. Under `"none"`, every element's loss is written out and
# needs the division, so the package finds $\sigma$ first, in a squares pass of its own (the
# table's third row), rather than pay for a pass that rewrites every loss.
#
# #### The three functions and their helpers
#
# The kernel's per-element code comes in three functions:
#
# * `_ppo_terms` computes what the forward and the backward share.
# * `_ppo_forward` returns the five statistics that the reduction sums.
# * `_ppo_backward` computes the gradient in one elementwise pass.
#
# What the helpers do, in one line each (the glossary has a table of them):
#
# * `load_mask` loads which elements count.
# * `load` loads an input, masked, in the dtype the arithmetic uses.
# * `param` reads a number such as ε.
# * `store` and `store_grad` write an output and a gradient.
#
# In the code, the gradient rule is `tl.where(b_clipped < b_unclipped, 0.0, ...)`, and
# `load(..., m_valid, 0.0, ...)` reads nothing where the mask is 0. How the normalisation reaches
# the kernel, through its slot `X[NORM]`, is in the last box of [section 6](#6.-Looking-at-the-compiled-code).
#
# To read them: `inspect.getsource(ppo._ppo_forward.fn)`, and likewise for the other two.
#

# %% jupyter={"source_hidden": true}
# Checks: the trimmed listing above against the package's source (CI runs them; skip when reading)
# Each pair: the source line, and the listing's line with one statistic (the N_STATS index dropped).
for _fn, _pairs in (
        (_reduce._partials_kernel, [
            ("acc = ELEMENTWISE(X, SX, P, O, SO, row, t, m, ACC)", None),
            ("for i in tl.range(first + 1, first + tiles, num_stages=STAGES):", None),
            ("acc = _add_stats(acc, ELEMENTWISE(X, SX, P, O, SO, row, t, m, ACC), N_STATS)", None),
            ("total = tl.sum(tl.sum(acc[k].to(ACC), axis=1), axis=0)", None),
            ("tl.store(PART + tl.program_id(0) * N_STATS + k, total)",
             ("tl.store(PART + tl.program_id(0), total)", " * N_STATS + k", ""))]),
        (_reduce._finish_kernel, [
            ("for start in range(0, n_parts, BLOCK_P):", None)])):  # one program, a fixed order
    _lines = [_l.split("#")[0].strip() for _l in inspect.getsource(getattr(_fn, "fn", _fn)).splitlines()]
    for _line, _trim in _pairs:
        assert _line in _lines, (_fn, _line)  # each line the listing keeps is in the package's kernel
        if _trim is not None:
            assert _line.replace(_trim[1], _trim[2]) == _trim[0]  # ... and differs only by the second index
_src = inspect.getsource(getattr(_reduce._partials_kernel, "fn", _reduce._partials_kernel))
_fsrc = inspect.getsource(getattr(_reduce._finish_kernel, "fn", _reduce._finish_kernel))
assert "def _finish_kernel(\n    PART,  # [n_parts, N_STATS] partial sums\n    OUT,  # [N_STATS]" in _fsrc
assert "\n    n_parts,\n" in _fsrc  # the listing's signature: PART, OUT, n_parts, ...
assert "    ELEMENTWISE: tl.constexpr," in _src
assert "FINISH: tl.constexpr,  # one program: it writes the totals (or means) itself" in _src  # one launch or two
assert "row, t, m = _tile_index(" in _src and "reduce(_ppo_forward, 5, X," in inspect.getsource(ppo)  # PPO's hook
assert isinstance(ppo._ppo_forward, triton.runtime.KernelInterface)  # @triton.jit (interpreted on a CPU): ELEMENTWISE
assert "return b_loss, m_valid.to(ACC), m_clip.to(ACC), b_kl, b_adv * b_adv" in inspect.getsource(
    ppo._ppo_forward.fn)  # the five: loss, count, clipped, approx_kl's term, (A - mu)^2
assert "statistics must be 0 where ``m`` is False" in _reduce.__doc__

# %% jupyter={"source_hidden": true}
# Checks: the passes of each reduction, and σ divided out after the sum (CI runs them; skip when reading)
_src = inspect.getsource(ppo._forward)
assert "torch.ones_like(mu)])  # centre only" in _src and "loss = loss * norm[1]" in _src  # the pass centres; σ after
assert 'if p.reduction == "none":  # every element needs the scale: one more' in _src  # "one more pass"
_calls, _reduce_fn = [], ppo.reduce  # count the forward's reductions, "each pass a reduction"
ppo.reduce = lambda hook, *a, **k: _calls.append(getattr(hook, "__name__", str(hook))) or _reduce_fn(hook, *a, **k)
try:
    for _red, _passes in (("mean", ["_adv_moments", "_ppo_forward"]),  # the table: μ; the squares and the loss
                          ("sum", ["_adv_moments", "_ppo_forward"]),  # the same two passes
                          ("none", ["_adv_moments", "_adv_moments", "_ppo_forward"])):  # μ; the squares; the loss
        _calls.clear()
        rl.ppo_clip_loss(log_probs, old_log_probs, adv, normalize_advantages=True, reduction=_red, backend=KERNEL)
        assert _calls == _passes, (_red, _calls)
finally:
    ppo.reduce = _reduce_fn
assert "1.0 / (std + 1e-8)" in inspect.getsource(ppo._normalisation)  # the divisor σ + 10⁻⁸
_g = torch.Generator().manual_seed(0)
_rho, _x = 2 * torch.rand(1000, generator=_g, dtype=torch.float64), torch.randn(1000, generator=_g, dtype=torch.float64)
for _sigma in (0.37, 1.0, 8.5):  # min(ρx/σ, clip(ρ)x/σ) = min(ρx, clip(ρ)x)/σ for σ > 0, bit for bit
    assert torch.equal(torch.minimum(_rho * _x / _sigma, _rho.clamp(0.8, 1.2) * _x / _sigma),
                       torch.minimum(_rho * _x, _rho.clamp(0.8, 1.2) * _x) / _sigma)

# %% [markdown]
# ### Inside SAC
#
# This subsection comes from the end of [notebook 06](06_sac.ipynb); "section 1", "section 2" and
# "section 3" mean that notebook's sections. It covers the package's own code and section 3's scan
# of $H$. The folded cells after it run the examples and check the text.
#
# #### The scan of H
#
# Section 3's kernel scans $H_t = G_t - \alpha\log\pi_t$ instead of $G_t$, because of padding: each
# step then reads only its own $\log\pi_t$, never a next step that may be padding. The exercise
# scans $G_t$, as section 2 does.
#
# **The padding example.** Take real steps 0 and 2, padding at step 1, $\gamma = 0.5$,
# $\alpha = 1$, $\lambda = 0.5$, $r = (1, \cdot, 2)$, $V' = (4, \cdot, 2)$ and $\log\pi_2 = 2$.
# A padded step passes the carried value through unchanged.
#
# * Step 2 ends the window: $G_2 = 2 + 0.5 \cdot 2 = 3$.
# * Section 2's $b_0$ reads $\log\pi_1$, one step ahead. So a scan of $G$ reads $\log\pi$ at
#   step 1, the padding's. A masked load gives 0 there, so
#   $G_0 = 1 + 0.5\,[0.5 \cdot 4 + 0.5\,(3 - 0)] = 2.75$: a wrong target. The right one reads
#   $\log\pi_2$ and gives 2.25.
#
# **The scan of $H$.** Let $b^G_t = r_t + [\lnot\text{term}_t]\,\gamma_t(1-\lambda^{\text{eff}}_t)V'_t$, the
# part of $G_t$ that does not depend on the future. Subtract $\alpha\log\pi_t$ from both sides of
# section 2's formula for $G_t$:
#
# $$H_t = \big(b^G_t - \alpha\log\pi_t\big) + \gamma_t\lambda^{\text{eff}}_t\,H_{t+1}.$$
#
# So each step reads its own $\log\pi_t$, never the next step's, and no step reads the padding's.
# After the scan, an *epilogue* computes each target as $G_t = b^G_t + a_t H_{t+1}$, or $b^G_t$
# alone at a reset. (Why not $H_t + \alpha\log\pi_t$: [Back from H to G](#Back-from-H-to-G), below.)
#
# **On the example.** $H_2 = G_2 - \alpha\log\pi_2 = 1$: it already holds $\log\pi_2$. The padded
# step hands it on unchanged, so $H_1 = H_2 = 1$. The epilogue gives
# $G_0 = b^G_0 + a_0 H_1 = (1 + 0.5 \cdot 0.5 \cdot 4) + 0.25 \cdot 1 = 2.25$, without looking
# ahead. The first folded cell after this block runs the kernel on it.
#
# A scan of $G$ would have to find the next real step's $\log\pi$. That step may lie any number of
# padded steps later, even in a later chunk, so finding it takes a scan of its own.
#
# #### Back from H to G
#
# The epilogue computes $G_t = b^G_t + a_t H_{t+1}$, where $H_{t+1}$ is the value the
# scan carries into step $t$. The shorter $G_t = H_t + \alpha\log\pi_t$ would read every
# $\log\pi_t$. But $G$ never needs $\log\pi$ at a step that starts an episode (the row's first
# step, or the step after a done step): $G_t$ reads $\log\pi_{t+1}$ only when step $t$ is not done.
# So the shorter form would let a NaN in $\log\pi_0$ leak into $G_0$.
#
# Why would $\log\pi_0$ be NaN? $G$ never reads it, so a buffer may leave it unfilled, as NaN.
# Or the current policy may give the stored action $u_0$ probability 0, so that
# $\log\pi_0 = -\infty$. Then $H_0 + \alpha\log\pi_0$ is $\infty - \infty$, NaN, too. A folded
# cell after this block runs the kernel on random rows, drawn as in section 2, with a NaN, then $-\infty$, in
# $\log\pi_0$ of row 0.
#
# #### The epilogue, on section 1's example
#
# A reverse scan reaches step $t$ from step $t + 1$ and carries $y_{t+1}$ into it. The course
# calls that value `y_in` (0 after the row's last step). In the epilogue, `y_in` is
# $H_{t+1}$. In section 1's example, $b^G = [1.75, 1, 4.5]$ and the scan gives
# $H = [2.75, 2, 5.5]$. Each $H_t$ is $G_t - \alpha\log\pi_t$, for example $2.75 = 2.25 + 0.5$.
# The epilogue gives $G_0 = 1.75 + 0.25 \cdot 2 = 2.25$, the same target.
#
# #### The multiplier at a reset, and the exercise
#
# The package's prologue writes the plain $\gamma_t\lambda_t$, as notebook 03's does, and the
# epilogue does not read $a_t$ at a reset either. That is safe because a reset never reads $a_t$:
# [section 2's three-step example](06_sac.ipynb#Where-the-trace-stops).
#
# The exercise's harness has no padding inside a row, and its checker runs your prologue alone,
# with no `epilogue=`. So the exercise scans $G$. The scan of $H$ with an
# epilogue, passed as `exercises.scan_hook(..., epilogue=...)` as in notebook 04, would also be
# right outside the checker.
#
# #### The three hooks
#
# The package's kernel runs three hooks from `rltriton_lite/sac.py`: the min over critics, the
# prologue and the epilogue. To read them (`inspect.getsource(sac._sac_prologue.fn)`, and likewise):
#
# * **The hooks' arguments.** `step(...)` gives the step's γ, λ and episode flags, and `param`
#   reads α. (The glossary's table of helpers has both.) Where the exercise's harness passes
#   `offs`, flat offsets into contiguous inputs, the package passes `SX`, each input's (row, time)
#   strides, and `row`, the rows' indices. `ACC` is the dtype the package computes in.
# * **`ahead`** is passed only in calls with a `mask`. It finds the next unmasked step, and the
#   prologue uses it for one thing: a step with no unmasked step after it is the window's last,
#   so it is done. `ahead` reads no $\log\pi$. So the kernel still reads each $\log\pi_t$ only at
#   its own step $t$.
# * **The prologue and the epilogue.** The prologue's `w` is $1 - \lambda^{\text{eff}}_t$, the bootstrap's
#   share of the bracket. Its `a = gamma * lam` is the plain $\gamma_t\lambda_t$. The
#   epilogue's `h_next` is `y_in`, $H_{t+1}$.
#
# #### The critics and the elementwise kernel
#
# Two details of section 3's kernel:
#
# * **The critics.** `next_q` is a tuple of pointers, one per critic. `tl.static_range` unrolls
#   the loop over them at compile time. The kernel takes up to `sac.MAX_CRITICS` = 16 critics,
#   enough for the ensembles of REDQ, a SAC variant with 10 critics. It reads them one by one, so
#   it never writes the stacked tensor that `torch.min(torch.stack(...))` would build in memory.
#   A NaN counts as the minimum, so it shows up in the target instead of hiding.
# * **λ = 0.** Nothing is carried, so there is nothing to scan. When λ = 0 is passed as a number,
#   not a tensor, the package runs an elementwise kernel instead of the scan. It runs the same
#   arithmetic without chunks or a time split, and gives the same bits. The scan serves λ > 0 and
#   a λ given per step. The PyTorch path (`backend="torch"`, which `"auto"` picks on a CPU) has no
#   such shortcut: it scans at λ = 0 too, with every $a_t = 0$, in a scan's time.
#

# %% jupyter={"source_hidden": true}
tt = lambda x: torch.as_tensor(np.asarray(x), device=DEVICE)  # noqa: E731  NumPy to torch; float64 stays float64
# the padding example: steps 0 and 2 are real; step 1 is padding, and holds anything
G_pad = rl.sac_targets(tt([[1.0, 7.0, 2.0]]), [tt([[4.0, 9.0, 2.0]])], tt([[0.0, 0.0, 0.0]]), gamma=0.5, alpha=1.0,
                       lambda_=0.5, log_probs=tt([[5.0, 3.0, 2.0]]), mask=tt([[True, False, True]]), backend=KERNEL)
print("padding:", G_pad)  # G_0 = 2.25, G_2 = 3, and 0 at the padded step
torch.testing.assert_close(G_pad, tt([[2.25, 0.0, 3.0]]))

# %% jupyter={"source_hidden": true}
# Checks: the padding example's claims (CI runs them; skip when reading)
from rltriton_lite import scan  # noqa: E402

_walk = inspect.getsource(getattr(scan._walk, "fn", scan._walk))  # the scan's loop over chunks
assert "a = tl.where(valid, a, 1.0)" in _walk and "b = tl.where(valid, b, 0.0)" in _walk  # a padded step: (1, 0)
assert "reset = reset & valid" in _walk  # ... and no reset: it passes the carried value through
_look = inspect.getsource(getattr(scan._look_ahead, "fn", scan._look_ahead))  # the package's look-ahead
assert "is itself a scan" in _look and "tl.associative_scan" in _look  # "finding it takes a scan of its own"
assert "v_next, found, v_seen, f_seen = _look_ahead(" in _walk  # ... its state runs on from chunk to chunk
_G_two = reference.sac_targets(np.array([[1.0, 2.0]]), [np.array([[4.0, 2.0]])], np.zeros((1, 2)),
                               log_probs=np.array([[9.0, 2.0]]), gamma=0.5, alpha=1.0, lambda_=0.5)
assert np.allclose(_G_two, [[2.25, 3.0]])  # the same two steps without the padding: "the right one ... 2.25"
assert 3.0 - 1.0 * 2.0 == 1.0 and 1 + 0.5 * 0.5 * 4 + 0.25 * 1 == 2.25  # "H_2 = 1"; the epilogue's G_0
assert 1 + 0.5 * (0.5 * 4 + 0.5 * (3.0 - 0.0)) == 2.75  # the G-scan's wrong 2.75

# %% jupyter={"source_hidden": true}
sac_kw = dict(gamma=0.97, alpha=0.2, lambda_=0.8)
G_refs = {}
for bad in (np.nan, -np.inf):  # log π_0 of row 0: a value G never reads
    LP_BAD = LP.copy()
    LP_BAD[0, 0] = bad
    G_ref = G_refs[bad] = reference.sac_targets(R, list(Q), NLP, log_probs=LP_BAD, terminated=TERM, truncated=TRUNC,
                                                **sac_kw)
    G_bad = rl.sac_targets(tt(R), [tt(q) for q in Q], tt(NLP), log_probs=tt(LP_BAD), terminated=tt(TERM),
                           truncated=tt(TRUNC), backend=KERNEL, **sac_kw)
    assert np.isfinite(G_ref).all() and torch.isfinite(G_bad).all()
    np.testing.assert_allclose(n(G_bad), G_ref, rtol=1e-10, atol=1e-10)  # the epilogue, b^G_t + a_t H_{t+1}
    # at log π_0 = −∞, H_0 = G_0 − α log π_0 is +∞, so H_0 + α log π_0 is ∞ − ∞: NaN, the point here, unwarned
    with np.errstate(invalid="ignore"):
        H_0 = G_ref[0, 0] - 0.2 * LP_BAD[0, 0]  # the scan's H_0 = G_0 − α log π_0 holds log π_0 ...
        assert np.isnan(H_0 + 0.2 * LP_BAD[0, 0])  # ... so the shorter H_0 + α log π_0 would be NaN
    print(f"log π_0 = {bad}: the kernel's G == the loop's, all finite; H_0 + α log π_0 would be NaN")

# %% jupyter={"source_hidden": true}
# Checks: the claims above (CI runs them; skip when reading)
assert np.isinf(LP_BAD[0, 0]) and np.isfinite(LP_BAD.ravel()[1:]).all()  # one bad value, at row 0's first step
for _G in G_refs.values():  # the loop gives the same G with or without the bad value
    np.testing.assert_allclose(_G, G_loop, rtol=1e-12, atol=1e-12)
_after = np.argwhere((TERM | TRUNC)[:, :-1])  # done steps inside a row, each followed by "the first step after"
assert len(_after) > 0
for bad in (np.nan, -np.inf):  # G never needs log π "at step d + 1 after each done step d inside the row"
    _LP_after = LP.copy()
    _LP_after[_after[:, 0], _after[:, 1] + 1] = bad
    _G_after = rl.sac_targets(tt(R), [tt(q) for q in Q], tt(NLP), log_probs=tt(_LP_after), terminated=tt(TERM),
                              truncated=tt(TRUNC), backend=KERNEL, **sac_kw)
    np.testing.assert_allclose(n(_G_after), G_loop, rtol=1e-10, atol=1e-10)

# %% jupyter={"source_hidden": true}
# Checks: the scan of H and the plain γλ (CI runs them; skip when reading)
_r1, _q1, _nlp1 = [1.0, 1.0, 1.0], [[2.0, 4.0, 6.0], [3.0, 3.0, 8.0]], [-2.0, 0.0, -2.0]  # section 1's case
_lp1, _term1 = [-1.0, -2.0, -2.0], [0, 1, 0]
_G1 = reference.sac_targets(_r1, _q1, _nlp1, gamma=0.5, alpha=0.5, lambda_=0.5, log_probs=_lp1, terminated=_term1)
_done = TERM | TRUNC
_done[:, -1] = True
_lam_eff = np.where(_done, 0.0, 0.8)
_v = Q.min(0) - 0.2 * NLP
_lp_next = np.concatenate([LP[:, 1:], np.zeros((3, 1))], axis=1)
_v3 = np.min(_q1, axis=0) - 0.5 * np.array(_nlp1)  # section 1's V' = [3, 3, 7]
_b_g = 1.0 + np.where(np.array(_term1, bool), 0.0, 0.5 * (1 - np.array([0.5, 0, 0])) * _v3)  # λ^eff = [0.5, 0, 0]
_H = np.array(_G1) - 0.5 * np.array(_lp1)  # H_t = G_t − α log π_t
np.testing.assert_allclose(_b_g, [1.75, 1, 4.5])
np.testing.assert_allclose(_H, [2.75, 2, 5.5])
np.testing.assert_allclose(_b_g[0] + 0.25 * _H[1], 2.25)  # the epilogue at step 0
np.testing.assert_allclose(_G1, [2.25, 1, 4.5])
_b_g = R + np.where(TERM, 0.0, 0.97 * (1 - _lam_eff) * _v)
for _a in (0.97 * _lam_eff, np.full_like(R, 0.97 * 0.8)):  # a_t = γλ^eff_t or the plain γλ: a reset never reads it
    np.testing.assert_allclose(_scan(_a, _b_g - 0.97 * _lam_eff * 0.2 * _lp_next, _done), G_loop, rtol=1e-12, atol=1e-12)
    _H = _scan(_a, _b_g - 0.2 * LP, _done)  # the scan of H
    np.testing.assert_allclose(_H + 0.2 * LP, G_loop, rtol=1e-12, atol=1e-12)
    _y_in = np.concatenate([_H[:, 1:], np.zeros((3, 1))], axis=1)  # H_{t+1}, 0 after the row's last step
    np.testing.assert_allclose(np.where(_done, _b_g, _b_g + _a * _y_in), G_loop, rtol=1e-12, atol=1e-12)  # epilogue
_src = inspect.getsource(getattr(sac._sac_prologue, "fn", sac._sac_prologue))
assert "w = tl.where(done, 1.0, 1.0 - lam)" in _src and "a = gamma * lam" in _src  # w = 1 − λ^eff_t; the plain γλ
assert ", done, valid, (b_g, a, done)" in _src  # reset_t = done_t
assert ((_lam_eff != 0.8) <= _done).all()  # section 2: λ^eff_t is λ_t, but 0 at a done step

# %% jupyter={"source_hidden": true}
# Checks: `ahead` decides done only and never reads log π (CI runs them; skip when reading)
from rltriton_lite import episode  # noqa: E402

_src_of = lambda fn: inspect.getsource(getattr(fn, "fn", fn))  # noqa: E731
_pro, _step, _hook = _src_of(sac._sac_prologue), _src_of(episode.step), _src_of(episode.ahead_hook)
assert [ln.strip() for ln in _pro.splitlines() if "ahead" in ln] == [
    "def _sac_prologue(X, SX, P, row, t, m, T, ACC: tl.constexpr, ahead=None):",
    "gamma, lam, term, done, valid = step(X, SX, P, row, t, m, T, ACC, ahead)"]  # the prologue only hands it to step
_uses = [ln.strip() for ln in _step.split('"' * 3)[-1].splitlines() if "ahead" in ln]  # step's body
assert _uses == ["last = (t == T - 1) if ahead is None else ~ahead[1]"]  # found or not: the window's last step
_code = [ln.split("#")[0] for ln in _step.split('"' * 3)[-1].splitlines()]  # step's body, comments left out
assert [ln.strip()[:7] for ln in _code if "last" in ln] == ["last = ", "done = "]  # ... which sets done, nothing else
assert "LOG_PROBS" not in _hook  # the hook itself reads the mask, never log π
assert "ahead=episode.ahead_hook" in inspect.getsource(sac)  # the look-ahead the package passes

# %% jupyter={"source_hidden": true}
# Checks: the critics' limit (CI runs them; skip when reading)
assert sac.MAX_CRITICS == 16  # "up to sac.MAX_CRITICS = 16 critics"

# %% [markdown]
# ### Inside CRR
#
# This subsection comes from the end of [notebook 07](07_crr.ipynb). The folded cell after it
# checks it against the package's source.
#
# #### The three functions, and the memory they touch
#
# The kernel's per-element code comes in three functions from `rltriton_lite/crr.py`: `_weights`,
# `_crr_forward` and `_crr_backward` (to read them: `inspect.getsource(crr._crr_forward.fn)`, and
# likewise). What to look for:
#
# * **The baseline is reduced in the kernel.** $K$ sampled values sit in a trailing dimension
#   ($K = 1$ for a $V(s)$ baseline). They are folded into a running sum and max as they load, so
#   the mean or max is never written to memory. The samples are read with their own stride, `s_k`
#   (`SX[BASELINE][2]`). `K` (`P[P_K]`) is a runtime loop bound, not a `tl.constexpr`.
# * **The binary filter is strict:** a zero advantage gets weight 0. The binary weight tests
#   `b_adv > 0`.
# * **Five streams of memory traffic.** Without a mask, the forward reads three tensors once
#   each: $\log\pi$, $Q$ and the $K$ baseline samples. It writes two: the weights and the
#   advantages. (A mask adds a sixth stream, read.)
# * **Outputs nobody reads cost bytes.** With `need_weights=False`, for a step that logs neither
#   weights nor advantages, the forward writes neither. The backward then reads $Q$ and the
#   baseline instead of $w$, and computes the weights again with the forward's own helper. The
#   tests `if O[OUT_WEIGHTS] is not None` in the forward and `if X[WEIGHTS] is not None` in the
#   backward are decided when the kernel is compiled.
# * **The gradient has no term through $e^{\hat A/\beta}$.** The critic is trained by its own
#   loss, and its values enter the policy update only as weights.
# * **A NaN comes through** because of `propagate_nan=tl.PropagateNan.ALL` in the max and the clip.
# * **Other names.** `P[P_BINARY]` and `P[P_MAX_BASELINE]` are the two modes'
#   switches. The helpers (`load_mask`, `load`, `param`, `store`, `store_grad`) are in the
#   glossary's table of them.
#

# %% jupyter={"source_hidden": true}
# Checks: the forward's five streams, three read and two written (CI runs them; skip when reading)
import re  # noqa: E402

_fwd = "".join(inspect.getsource(getattr(f, "fn", f)) for f in (crr._weights, crr._crr_forward))
_read = [x for x in ("LOG_PROBS", "Q_VALUES", "BASELINE", "MASK") if f"(X[{x}]" in _fwd]
assert _read == ["LOG_PROBS", "Q_VALUES", "BASELINE", "MASK"]  # three, and the mask when there is one
assert re.findall(r"store\(O\[(\w+)\]", _fwd) == ["OUT_WEIGHTS", "OUT_ADVANTAGES"]  # two written ...
assert "if O[OUT_WEIGHTS] is not None:\n        store(O[OUT_WEIGHTS]" in _fwd  # ... both only with need_weights

# %% [markdown]
# ## Exercises
#
# This notebook has no checked exercise: the one on its material, `tiled_scan` (a tile of rows per
# program, as section 4 describes), is in notebook 13. Section 1's `two_level`, section 5's
# `split_scan` and the compiled kernel of section 6 leave three questions.
#
# Without a checker:
#
# *(Answer each in its cell below: your teacher's grader collects the answers from
# them.)*
#
# 1. In `two_level`, make the vector length `V` 8 and 16 (and the chunk 64). The results do not
#    change; on a GPU, what does a longer vector buy, and what does it cost in registers?
# 2. `split_scan` makes two passes over the inputs and composes the segment summaries in one
#    sequential loop. With $S$ segments of $n$ steps, count the loads of each pass. When is a
#    third pass, which scans the summaries in parallel, worth its launch?
# 3. On a GPU: compile GAE's kernel (`rl.gae` once, then look in `~/.triton/cache` for the
#    `.ptx`) and count `shfl.sync`, `ld.global.v4` and `cp.async` (a pipelined tile's loads go
#    through it). Change `Config(vector=...)` and count again. Section 2's counts were made with
#    Triton 3.6, and another version may compile the kernel differently: compare your own counts
#    with each other.

# %% [markdown] tags=["answer-1"]
# **Answer 1.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-2"]
# **Answer 2.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-3"]
# **Answer 3.** *Your answer here (code for it: in cells under this one).*

# %% [markdown]
# ## What you now know
#
# * **One chunk:** vectors composed in registers, then one scan across lanes that runs forwards
#   even in a reverse scan; one aligned load per input.
# * **One program:** a small tile on one warp, with the next chunk's loads in flight, picked by the
#   planner for each launch; a tile changes the speed, never the results.
# * **A model** from notebook 13's rules orders three measured cases right, but misses the
#   few-programs case by almost 4×: enough bytes in flight is necessary, not sufficient.
# * **Long rows:** the time split, two passes and a composition of the segments' maps.
# * **The interpreter** runs programs one at a time and does not guard memory: a race can pass
#   there and fail on a GPU.
# * **Across devices:** the backward runs forwards in time, in two passes and two exchanges of one
#   number per row per rank; a forward call sends 7 numbers per rank and 8 per row per rank.
