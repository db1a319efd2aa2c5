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
# * **You will learn:** what makes a memory-bound kernel fast, and how the package's kernel does it.
#
# * **Time:** 1–1.5 h for the reading and the two checked exercises, `warp_sectors` and
#   `tiled_scan`; 2.5–3.5 h with the open questions. Optional: nothing in notebooks 01–09 needs it.
#
# * **Needs:** notebooks 00c, 00d (its `strided_scan`, in section 0.1) and 08. A GPU only for
#   open questions 1 and 3.
#
# * **Minimum path:** Part 1, the primer (section 0), and its exercise, `warp_sectors`. You can stop
#   there. The GPU lab, 13b, needs Part 1 and section 4.
#
# **The question of this appendix:** your kernels from notebooks 00b and 00c compute the same
# numbers as the package's kernel, so why is the package's faster? **The answer:** it keeps enough
# bytes on their way from memory at every moment, and wastes none of the bytes it fetches. On an
# H200, at 16384×1024, its scans run at about 79–93 % of the memory floor (notebook 08, section 2).
#
# The argument has three steps:
#
# 1. **Three rules** (Part 1, section 0), for any memory-bound kernel: use every byte of a sector,
#    keep enough bytes in flight, launch enough programs.
# 2. **The package's tile** (Part 2): how the package's kernel follows the rules, one chunk
#    (sections 1–3), one program's tile (section 4), long rows split in time (section 5), and what
#    the interpreter cannot show (section 6). It ends in your own tile, the exercise `tiled_scan`.
# 3. **Your kernel** (notebook 13b, the GPU lab): the rules tried on your own `reset_scan`.
#
# These kernels do a few flops per byte they move, so they are **memory-bound**: memory, not
# arithmetic, sets their time. Their *floor* (notebook 08) is the time to read each input once and
# write each output once at the GPU's copy bandwidth. Exact figures and where they come from are in
# folded **Sources** boxes, and the package's internals (the planner's exact rules, the kernel's
# arguments, its chunk loop) in folded boxes and cells marked **For maintainers**: the argument
# reads without opening any of them. New words are in the glossary, [`GLOSSARY.md`](GLOSSARY.md).
#
# <details><summary>Sources</summary>
#
# Every GPU figure here was measured on an H200 with torch 2.11 and Triton 3.6 (newer versions are
# pinned now). Most come from the committed run,
# `benchmarks/results/H200-2026-12-06.json` (`profile.COMMITTED_RUN`). The rest come from
# `docs/DESIGN.md`, "Decisions", each measured on the code of its day: compare it only with the
# figures of the same entry. The folded `# Checks` cells compare each figure with its file.
#
# </details>

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
from rltriton_lite import exercises, plan, profile, reference, scan
from rltriton_lite.config import Config

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# the Triton kernels: compiled on a GPU, in the interpreter on a CPU (backend="auto" takes the PyTorch path on a CPU)
KERNEL = "triton"
rng = np.random.default_rng(0)
RESULTS = profile.results_folder()  # benchmarks/results/: what an H200 measured (notebooks 08 and 09)
RUN, RES = profile.committed_results()  # the committed run (profile.COMMITTED_RUN), read by name as notebook 08 reads it

# %% jupyter={"source_hidden": true}
# Checks: the introduction's figures and versions, on the committed run (CI runs them; skip when reading)
assert RES["versions"]["torch"].startswith("2.11") and RES["versions"]["triton"].startswith("3.6")  # as the text says
# the introduction's figures: % of the floor by GPU time, ours, 16384×1024, float32, forward
BIG_PCT = {r["algorithm"]: 100 * r["floor_ms"] / r["kernel_ms"] for r in RES["rows"]
           if (r["impl"], r["B"], r["T"], r["dtype"], r["pass"]) == ("rltriton_lite", 16384, 1024, "float32", "fwd")}
SCAN_PCT = [BIG_PCT[a] for a in ("discounted_return", "gae", "td_lambda", "vtrace", "linear_scan")]
assert [round(min(SCAN_PCT)), round(max(SCAN_PCT))] == [79, 93]  # "about 79–93 %": the scans
print(f"committed GPU figures: {RES['gpu']}, torch {RES['versions']['torch']}, triton {RES['versions']['triton']}; "
      f"installed here: torch {torch.__version__}, triton {triton.__version__}")
ROOT = os.path.dirname(os.path.dirname(RESULTS))  # the checkout: benchmarks/results/ is two levels down
with open(os.path.join(ROOT, "docs", "DESIGN.md"), encoding="utf-8") as f:
    design = " ".join(f.read().split())  # one line: the figures as the design document states them, checked below

# %% [markdown]
# # Part 1: the primer
#
# ## 0. A primer: what makes a memory-bound kernel fast
#
# **The question:** your kernels in notebooks 00b and 00c are correct, but are they fast? **The
# answer:** only if they follow three rules: every load uses the bytes it fetches (0.1), enough
# bytes are on their way at every moment (0.2), and enough programs keep every processor busy (0.3).
#
# * A GPU is made of **streaming multiprocessors** (SMs), its processors. An H200 has 132.
# * Each program of a launch runs on one SM, as one or more **warps**. A warp is 32 threads, its
#   **lanes**, that run each instruction together.
# * When a warp runs a load instruction, each lane asks for a few bytes at its own address.
#
# ### 0.1 Coalescing: a warp reads memory in 32-byte sectors
#
# **The question:** what does one load of a warp cost? **The answer:** it costs the 32-byte
# sectors it touches, so adjacent lanes should read adjacent addresses.
#
# The hardware fetches the **sectors** that hold the lanes' addresses: aligned 32-byte pieces of
# memory, each fetched once however many lanes read from it. When adjacent lanes read adjacent
# addresses, the load is **coalesced**: 32 lanes × 4 bytes fill 4 sectors, every byte used.
#
# Now scan a **time-major** rollout, `(T, B)`, with one program per environment, as your
# `strided_scan` in 00d does. The lanes then hold steps of one environment, `B` elements apart, so
# once `B` ≥ 8 each lane lands in a sector of its own: 32 sectors fetched for 128 bytes used. The
# count in NumPy: a float32 never crosses a sector, so a lane's sector is its byte address `// 32`.

# %%
SECTOR = 32  # bytes
lane = np.arange(32)  # the 32 lanes of a warp
B_ENVS = 1000  # environments in a time-major (T, B) float32 buffer
patterns = {
    "contiguous: lane i reads step i of a row": 4 * lane,
    "time-major, lanes along time: lane i reads step i of one environment": 4 * B_ENVS * lane,
    "time-major, lanes along environments: lane i reads environment i at one step": 4 * lane + 4 * B_ENVS * 7,
}
sector_table = []
for what, addresses in patterns.items():
    sectors = np.unique(addresses // SECTOR).size
    sector_table.append({"load of 32 float32": what, "sectors": sectors, "bytes fetched": SECTOR * sectors,
                         "bytes used": 4 * 32, "% used": 100 * 4 * 32 / (SECTOR * sectors)})
print(profile.table(sector_table, digits=3))

# %% jupyter={"source_hidden": true}
# Checks: the sector counts as the text reads them (CI runs them; skip when reading)
assert [t["sectors"] for t in sector_table] == [4, 32, 4]
assert [t["% used"] for t in sector_table] == [100, 12.5, 100]  # strided: 8 times the traffic

# %% [markdown]
# Read along time, the warp fetches 8 times the bytes it uses, and caches help only if other
# programs happen to read the rest of those sectors soon after. So the package's tile for a
# time-major buffer spans up to 64 rows: its lanes read neighbouring environments at each step, as
# in the table's last row.
#
# A lane can also load 16 bytes in one instruction, a **vector** (section 1), but only from an
# address that is a multiple of 16: an *aligned* one (section 3). Counting sectors for any load,
# aligned or not, is the first checked exercise, `warp_sectors`.
#
# <details><summary>Sources</summary>
#
# The sector rule is NVIDIA's: *CUDA C++ Best Practices Guide*, "Coalesced Access to Global Memory".
# The time-major tile is `Config.time_major_tile`.
#
# </details>
#
# ### 0.2 Bytes in flight: Little's law, and occupancy
#
# **The question:** how many bytes must be on their way to keep the memory busy? **The answer:**
# the bandwidth × the latency. For GAE on an H200 that is about 10 KB of loads per SM, if a load
# takes 600 ns (a latency we assume). A program that asks for one step at a time cannot get there.
#
# A load takes a long time to come back: its **latency**. Bytes asked for and not yet delivered are
# **in flight**, and the memory delivers its full bandwidth only if enough are in flight at every
# moment. Little's law, from queueing theory, says how many:
#
# $$\text{bytes in flight} = \text{bandwidth} \times \text{latency}.$$
#
# A toy memory checks it. Each cycle it accepts new requests up to a peak number of bytes, and it
# answers each `latency` cycles later. The program keeps `in_flight` bytes asked for and unanswered:

# %%
def delivered(in_flight, latency, peak, cycles=20_000):
    """Bytes per cycle that the toy memory delivers, once it runs steadily (the second half)."""
    answered = np.zeros(cycles + latency)  # bytes that arrive at each cycle
    waiting = 0.0  # bytes asked for, not yet answered
    for c in range(cycles):
        waiting -= answered[c]
        new = min(peak, in_flight - waiting)  # ask for more, up to the peak, keeping in_flight out
        answered[c + latency] += new
        waiting += new
    return answered[cycles // 2:cycles].mean()


LATENCY, PEAK = 500, 64  # cycles, bytes per cycle: a toy's numbers
toy = {}  # bytes in flight -> (delivered, Little's law's prediction), bytes per cycle
for in_flight in (1_000, 8_000, 32_000, 64_000):
    toy[in_flight] = (delivered(in_flight, LATENCY, PEAK), min(PEAK, in_flight / LATENCY))
    print(f"{in_flight:6d} bytes in flight: {toy[in_flight][0]:5.1f} bytes per cycle of a peak {PEAK}; "
          f"Little's law: {toy[in_flight][1]:5.1f}")

# %% jupyter={"source_hidden": true}
# Checks: the toy follows Little's law, and reaches its peak at peak × latency (CI runs them; skip when reading)
assert all(np.isclose(got, law) for got, law in toy.values())
assert PEAK * LATENCY == 32_000 and np.isclose(toy[32_000][0], PEAK)  # the fewest bytes in flight that reach the peak

# %% [markdown]
# The toy reaches its peak only with peak × latency bytes in flight. For GAE on an H200, both sides
# of the law must count the same bytes, the kernel's **loads**:
#
# * **The bandwidth of the loads.** The copy bandwidth (notebook 08) counts bytes read and written
#   together. GAE moves 17 bytes per float32 step, and 9 of them are loads: the reward and the
#   value, 4 bytes each, and a 1-byte flag. So at the floor, GAE's loads arrive at 9/17 of it.
# * **The latency.** We never measured it: **assume** 600 ns, for illustration.

# %%
BW = RES["copy_bandwidth_Bps"]  # bytes per second, read + written: measured on the H200 (committed results)
H200_SMS = 132  # docs/DESIGN.md
LATENCY_S = 600e-9  # an ASSUMED latency, for illustration: not measured here
GAE_READ = 4 + 4 + 1  # bytes read per float32 step: reward, value, flag
load_bw = BW * GAE_READ / 17  # GAE's loads at the floor: 9 of every 17 bytes moved
in_flight_gpu = load_bw * LATENCY_S  # Little's law: loads in flight on the whole GPU
per_sm = in_flight_gpu / H200_SMS
print(f"GAE's loads at the floor: 9/17 × {BW / 1e12:.2f} TB/s = {load_bw / 1e12:.2f} TB/s; "
      f"× {LATENCY_S * 1e9:.0f} ns (assumed) = {in_flight_gpu / 1e6:.2f} MB in flight, {per_sm / 1e3:.1f} KB per SM")

# %% jupyter={"source_hidden": true}
# Checks: GAE's bytes per step and the figures above (CI runs them; skip when reading)
assert profile.op("gae").bytes_per_step(4) == GAE_READ + 2 * 4 == 17  # "17 moved": two floats written
assert round(in_flight_gpu / 1e6, 2) == 1.36  # "1.36 MB" (section 4)
assert round(per_sm / 1e3, 1) == 10.3  # "about 10 KB of loads per SM"

# %% [markdown]
# A kernel can reach those 10 KB of loads per SM in two ways.
#
# * **More warps at once on each SM.** Each warp's registers and shared memory come out of a fixed
#   budget per SM, so a kernel that needs more of them fits fewer warps. The warps an SM holds,
#   against the most it could hold, are its **occupancy**.
# * **More bytes per warp.** A warp can use 16-byte vector loads, and it can issue the next chunk's
#   loads before it scans this chunk: **pipelining** (section 4). The chunk loaded ahead waits in
#   shared memory.
#
# The package leans on the second way: one of its GAE programs at 16384×1024 loads 2 rows × 128
# steps per chunk, and it issues the next chunk's loads before it scans this one (`STAGES = 2`).
# The estimates below assume, without a measurement, that two chunks' loads are in flight per
# program: the next chunk's and this chunk's. If this chunk's loads have already landed when it is
# scanned, only one chunk is in flight, so each program's bytes in flight halve and twice as many
# programs are needed. Compare the **step-by-step walk**, a naive GAE baseline: one
# program per row asks for one step's 9 bytes and waits for them.

# %%
CHUNKS_IN_FLIGHT = 2  # assumed, an upper bound: the next chunk's loads and this chunk's (1 if this chunk's have landed)
package_program = 2 * 128 * GAE_READ * CHUNKS_IN_FLIGHT  # up to two chunks of 2 rows x 128 steps in flight
step_program = GAE_READ  # one step in flight
print(f"bytes in flight per program: the package's up to {package_program / 1e3:.1f} KB "
      f"({package_program / CHUNKS_IN_FLIGHT / 1e3:.1f} KB with one chunk), a step-by-step walk {step_program} B")
print(f"resident programs per SM to keep {per_sm / 1e3:.1f} KB in flight: the package's "
      f"{per_sm / package_program:.0f} ({CHUNKS_IN_FLIGHT * per_sm / package_program:.0f} with one chunk), "
      f"a step-by-step walk {per_sm / step_program:,.0f}")

# %% jupyter={"source_hidden": true}
# Checks: the two programs' figures as the text reads them (CI runs them; skip when reading)
assert round(package_program / 1e3, 1) == 4.6 and round(per_sm / package_program) == 2  # "up to 4.6 KB", "about 2"
assert round(package_program / 2 / 1e3, 1) == 2.3 and round(2 * per_sm / package_program) == 4  # one chunk: "about 4"
assert 1000 < per_sm / step_program < 2000  # "more than a thousand"

# %% [markdown]
# So the model asks for about 2 of the package's programs at once on each SM, or about 4 if only
# one chunk is in flight. Two counts of programs come up from here on:
#
# * **Resident programs** are the programs on an SM *at once*: at most 32 on an H100 or H200 (and
#   64 warps), fewer when their registers or shared memory run out. The model's 2 to 4 are
#   resident.
# * **Programs per SM over the launch** are the launch's programs ÷ 132, which each SM runs one
#   after another: about 62 at 16384×1024.
#
# The step-by-step walk would need more than a thousand resident programs on each SM, and no SM
# holds that many, whatever the latency is. The committed run shows the outcome:

# %%
def committed(algorithm, B, T, impl="rltriton_lite"):
    """The committed H200 row of this case (float32, forward)."""
    (r,) = [r for r in RES["rows"] if (r["algorithm"], r["impl"], r["B"], r["T"], r["dtype"], r["pass"])
            == (algorithm, impl, B, T, "float32", "fwd")]
    return r


walk, ours = committed("gae", 16384, 1024, impl="bare_triton_launch"), committed("gae", 16384, 1024)
for what, r in [("step-by-step walk (anchor)", walk), ("rltriton_lite", ours)]:
    pct = 100 * r["floor_ms"] / r["kernel_ms"]
    print(f"GAE 16384×1024, {what}: GPU {1e3 * r['kernel_ms']:7.1f} µs, {pct:4.1f} % of the floor")

# %% jupyter={"source_hidden": true}
# Checks: the walk under 5 % of the floor ("What you now know"), the package over 80 % (CI runs them; skip when reading)
assert 100 * walk["floor_ms"] / walk["kernel_ms"] < 5 and 100 * ours["floor_ms"] / ours["kernel_ms"] > 80

# %% [markdown]
# <details><summary>Sources</summary>
#
# * The copy bandwidth and both GAE times are from the committed H200 run, where the step-by-step
#   walk is the `bare_triton_launch` row (notebook 14's "bare launch" anchor). The H200's 132 SMs
#   are from `docs/DESIGN.md`.
# * The 600 ns latency is assumed, and so are the two chunks in flight per program, so the 10.3 KB
#   per SM and the 2 to 4 resident programs illustrate the law; they are not measurements.
#
# </details>

# %% [markdown]
# ### 0.3 Enough programs: why a few long rows leave the GPU idle
#
# **The question:** how many programs does a launch need? **The answer:** at least a few per SM, so
# a launch of a few long rows must cut them in time.
#
# A launch of P programs keeps at most P SMs busy. One program per row is natural for a scan, and
# 16384 rows give plenty of programs. But 8 rows of 131,072 steps give 8: only 8 of the 132 SMs
# have any work, and each walks 512 chunks of 256 steps in series.
#
# The fix is the **time split** (section 5): cut each row into segments, one program each. The
# package's **planner** picks each launch's layout. It splits a row in time only when two things
# hold: the launch would have fewer than two programs per SM, and the rows are very long, more than
# about 32,000 steps. Section 4 explains why. Shorter rows are walked in wider chunks instead. The
# helper `tile_plan(B, T)` returns the planner's choices by name; here they are at three shapes:

# %%
ON_H200 = Config(min_programs=2 * H200_SMS)  # two programs per SM over the launch, as on an H200
PLAN_FIELDS = ("rows", "block", "warps", "stages", "vector", "row_programs", "segments", "seg")


def tile_plan(B, T, itemsize=4):
    """The planner's launch for a (B, T) scan on an H200, as a dict of named fields: rows and block
    (the tile), warps, stages, vector (elements per load), row_programs, segments (of the time split)
    and seg (chunks per segment)."""
    # True is time_contiguous: each row's T steps lie next to each other in memory, the (B, T) layout
    return dict(zip(PLAN_FIELDS, plan._plan(B, T, True, itemsize, torch.device("cuda"), ON_H200)))


plans = []
for B_, T_ in [(16384, 1024), (8, 131072), (64, 16384)]:
    p_ = tile_plan(B_, T_)
    split = p_["segments"] > 1
    plans.append({"B × T": f"{B_}×{T_}", "one per row: programs": B_,
                  "SMs with work %": 100 * min(B_, H200_SMS) / H200_SMS,
                  "chunks of 256 in series": T_ // 256, "planner: programs": p_["row_programs"] * p_["segments"],
                  "its chunk (steps)": p_["block"],
                  "its chunks in series": p_["seg"] if split else -(-T_ // p_["block"]),
                  "time split": split})
print(profile.table(plans, digits=3))

# %% jupyter={"source_hidden": true}
# Checks: the planner's three decisions as the text reads them (CI runs them; skip when reading)
by_shape = {p["B × T"]: p for p in plans}
assert not by_shape["16384×1024"]["time split"]  # many rows: enough programs already
long = by_shape["8×131072"]
assert long["time split"] and long["planner: programs"] == 1024 and long["its chunks in series"] == 4
assert not by_shape["64×16384"]["time split"] and by_shape["64×16384"]["its chunk (steps)"] == 1024
# the two conditions: 64 programs are too few, but a row of 16384 steps has only 16 wide chunks, fewer than 32
assert 64 < ON_H200.min_programs == 264 and 16384 // Config().wide_block == 16 < Config().split_min_chunks == 32
assert 31 * Config().wide_block == 31_744  # "more than 31,744 steps"

# %% [markdown]
# At 8×131072 the planner runs 1024 programs of 4 chunks each, instead of 8 programs of 512, at the
# price of a second pass and a second launch (section 5).
#
# <details><summary>Sources</summary>
#
# The planner is `plan._plan`; section 4 writes its rules out, with their exact thresholds.
#
# </details>

# %% [markdown]
# # Part 2: inside the package
#
# How the package's kernel follows Part 1's rules: one chunk (sections 1–3), one program's tile
# (section 4), long rows (section 5) and the compiled code (section 6). Its exercise is `tiled_scan`.
#
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
# The boundary holds where a row's length in bytes, T × itemsize, is a multiple of 16 (T a multiple
# of 4 in float32, of 8 in bfloat16). Otherwise the rows after the first start between boundaries,
# and their vectors are misaligned: a misaligned 16-byte load becomes smaller loads (the exercise
# `warp_sectors`, below).
#
# A vector of 4 float32 steps is one load only if it is aligned (0.1), so chunks start at the row's
# start, with ascending addresses. GAE also needs $V(s_{t+1})$, that is `values[t+1]`. Loaded a
# second time, one step off the alignment, it would cost one scalar load per step. So the kernel
# shifts the `values` tile it already loaded by one step instead.
#
# <details><summary>Sources</summary>
#
# `docs/DESIGN.md`, "Loads", states these rules and two more: loads are masked by bounds only, never
# by loaded flags, and a per-row input is read once per row.
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
#   `tiled_scan` builds such a tile.
# * **`V`**, the steps of one vector (section 1).
# * **`num_warps`**, the warps that share the tile. Where the rows are long enough, each warp gets
#   256 steps, 8 per lane.
# * **`STAGES`**, the `num_stages` of the chunk loop's `tl.range`. With 2, the next chunk's loads
#   are issued before this chunk is scanned (section 0.2's pipelining); only the scan waits for the
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
# took about 4 % more off.

# %% jupyter={"source_hidden": true}
# Checks: the table's figures (against docs/DESIGN.md at the section's end) and the planner's tile (CI runs them; skip when reading)
TILE_MS = {(4, 256, 4, 1): 0.1226, (1, 256, 1, 2): 0.0851, (2, 128, 1, 2): 0.0814}  # GAE, H200, DESIGN.md
(four_warps_ms, one_row_ms, planned_ms) = TILE_MS.values()
assert [round(1e3 * ms) for ms in TILE_MS.values()] == [123, 85, 81]  # the table, in µs
assert round(100 * (1 - one_row_ms / four_warps_ms)) == 31  # "about 30 %" off the time
assert round(100 * (1 - planned_ms / one_row_ms)) == 4  # "about 4 % more"
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
#    per 256 steps of the chunk. Rows longer than 31 wide chunks, 31,744 steps, are split in time
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
# | 8×131072 | 256 | 1 | 1 | 2 | 1024 | too few programs, rows over 31,744 steps: each split in 128 |
#
# At 16384×1024 the rules give the last tile of the table above, 2 × 128 steps on one warp, 2
# stages.
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
# 5. **`else`:** too few programs, and rows of more than 31 wide chunks, 31,744 steps: split in time
#    (section 5). A split costs a second launch, so only rows this long repay it.
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
for T_, split_ in [(16384, False), (31744, False), (31745, True), (131072, True)]:  # "split if T > 31,744"
    p_ = tile_plan(8, T_)
    assert (p_["segments"] > 1) == split_  # split if T > 31,744
    assert (-(-T_ // defaults.wide_block) >= defaults.split_min_chunks) == split_  # "at least 32 wide chunks"
    assert split_ or (p_["block"], p_["warps"]) == (1024, 4)  # else 1024-step chunks on 4 warps
for (B_, T_), row_ in {(1024, 1024): (256, 1, 1, 2, 1024), (16384, 1024): (128, 2, 1, 2, 8192),  # "five shapes"
                       (4096, 128): (128, 2, 1, 1, 2048), (64, 16384): (1024, 1, 4, 2, 64),
                       (8, 131072): (256, 1, 1, 2, 1024)}.items():
    p_ = tile_plan(B_, T_)
    assert (p_["block"], p_["rows"], p_["warps"], p_["stages"], p_["row_programs"] * p_["segments"]) == row_, (B_, T_)
assert tile_plan(8, 131072)["segments"] == 128 and tile_plan(4096, 128)["seg"] == 1  # "each split in 128"; "one chunk"

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
                      # GAE's loads in flight (0.2): STAGES chunks of ROWS × BLOCK steps, 2 × itemsize + 1 bytes each
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
big = decided["16384×1024", "float32"]  # section 0.2's program: 8192 of them, 62 per SM over the launch
assert big["bytes in flight"] == package_program and big["programs"] == 8192 and round(big["per SM (launch)"]) == 62
assert defaults.time_major_tile[0] == 64  # 0.1: a time-major tile spans up to 64 rows

# %% [markdown]
# **Where the package is slow: 64×16384.** This launch has only 64 programs, one per row, each
# walking its row in 16 wide chunks of 1024 steps, so at most 64 of the 132 SMs have any work.
# Together they keep up to about 1.2 MB in flight, if two wide chunks per program are in flight
# (section 0.2's assumption), where the whole GPU needs about 1.4 MB (with the assumed 600 ns). So
# by Little's law its % floor is at most about 87, or about 43 with one chunk per program in
# flight. The cell puts this bound next to the committed run:

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
assert 1e-3 * slow["kernel_ms"] / chunks_in_row > 3 * LATENCY_S  # "more than three times the assumed latency"
assert round(program_rate / 1e9, 1) == 4.6  # the printout: "1024 steps × 9 B every 2.0 µs, about 4.6 GB/s"
assert round(100 * busy["programs"] * program_rate / load_bw, 1) == round(slow_pct, 1)  # "64 such programs: the 13 %"
assert round(program_rate * LATENCY_S / 1e3, 1) == 2.7 and round(100 * program_rate * LATENCY_S / busy["bytes in flight"]) == 15

# %% [markdown]
# The run measured a % floor of about 13, under either bound: Little's law gives an upper bound,
# not a prediction. What limits each program is the serial chain inside its row. It walks its 16
# chunks one after another, each taking about 2 µs for its three links: the chunk's loads, its
# scan, and the carry handed to the next chunk. That is more than three times the assumed latency.
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
# * The thresholds (the 264 programs, the 4096 rows, the 32 wide chunks) were measured, not derived
#   from a model.
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
# ## 5. Long rows: the time split
#
# **The question:** how do a few long rows keep the whole GPU busy? **The answer:** by the
# associativity of notebook 00 once more, in three steps.
#
# At 8×131072, one program per row leaves most of an H200's 132 SMs idle (0.3). The split cuts each
# row into segments, one program each:
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
# Each pass is a launch, which costs host time: this is why the split waits for rows of more than
# about 32,000 steps (section 4). It changes the speed, never the results: forced on two short
# rows, it gives the same returns.

# %%
r = torch.randn(2, 700, device=DEVICE)
d = torch.rand(2, 700, device=DEVICE) < 0.02
plain = rl.discounted_returns(r, gamma=0.99, terminated=d, backend=KERNEL)
with using(Config(max_block_t=64, min_programs=1 << 20, split_min_chunks=2)):  # force a split
    split = rl.discounted_returns(r, gamma=0.99, terminated=d, backend=KERNEL)
torch.testing.assert_close(split, plain, rtol=1e-5, atol=1e-5)
print("the time split gives the same returns")

# %% [markdown]
# <details><summary>Sources</summary>
#
# GAE at 8×131072 took 1.86 ms before the split and 0.033 ms with it (`docs/DESIGN.md`, "The time
# split", on the code of its day).
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the Sources box's two times, as docs/DESIGN.md states them (CI runs them; skip when reading)
assert "Before the split, GAE at 8×131072 ran 8 programs for 1.86 ms; with it, 0.033 ms." in design
assert round(1.86 / 0.033) == 56  # "about 56 times faster"

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
# lines. It walks the chunks of its rows in `scan._walk`, onto which notebook 00c, section 3,
# mapped four parts of your `gae_kernel`. Two folded cells below are for reading that source:
# the first lists the kernel's arguments (and prints the kernel if you set `SHOW_KERNEL = True`),
# the second prints `_walk`'s lines beside your `gae_kernel`'s. Nothing after them needs them.
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
# <details><summary>For maintainers: <code>_walk</code> beside your <code>gae_kernel</code> (the second folded
# cell)</summary>
#
# The cell prints the lines of `scan._walk` that notebook 00c, section 3, mapped onto your
# `gae_kernel`, each under a `# yours:` comment that names its counterpart; `...` marks lines left
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
# For maintainers (folded): the lines of scan._walk beside your gae_kernel (00c, section 3)
YOURS = {  # a key of a line of _walk -> its counterpart in your gae_kernel (00c, section 3's table)
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
# ## Exercises
#
# Checked exercises work as in notebooks 00 and 00b. Write the starter's function, then run the cell after
# it. `print(exercises.task(name))` restates the task; the solutions are in `notebooks/solutions/`.
#
# **`warp_sectors`** (Part 1). Count the 32-byte sectors that one load instruction of a warp touches, as
# section 0.1 did, but for any load.
#
# * `addresses` holds the byte address where each active lane's load starts. Masked-off lanes are
#   left out.
# * Every lane loads `nbytes` bytes.
#
# Section 0.1's count assumed that each lane's bytes sit inside one sector. Here a load may cross a
# sector boundary (a misaligned 16-byte load becomes smaller loads, which touch the same sectors),
# and lanes may share a sector, or an address.
#
# <details><summary>Hint 1: where to start</summary>
#
# Section 0.1 counted sectors with `np.unique(addresses // SECTOR).size`.
# That counts only the sector of each load's first byte.
# It is right only when a lane's bytes sit inside one sector.
# Ask, for one lane: which sector holds its first byte? Which holds its last byte?
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Lane `i` reads `nbytes` bytes, starting at byte `addresses[i]`. At which byte does it end?
# * A byte's sector is its address `// 32`. Find the sector of the lane's first byte and of its last.
# * An unaligned load can cross a sector boundary: 16 bytes at byte 20 are bytes 20 to 35, in
#   sectors 0 (20 to 31) and 1 (32 to 35).
# * A lane touches every sector from its first to its last, both included.
# * Put every lane's sectors into one set, so that shared sectors count once. The answer is its size.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Work these out byte by byte:
#
# * 16 bytes at 4, 20, 36 and 52: bytes 4–19 (sector 0), 20–35 (sectors 0 and 1), 36–51 (sector 1)
#   and 52–67 (sectors 1 and 2). Three distinct sectors: 3.
# * 2 bytes at 30: bytes 30 and 31, sector 0 only: 1. At 31: bytes 31 and 32: 2.
# * 4 bytes at 0, 0 and 64: two lanes share sector 0, the third is in sector 2: 2.
# * If 2 bytes at 30 give you 2, your last byte is one past the end.
#
# ```python
# print(warp_sectors(np.array([4, 20, 36, 52]), 16), warp_sectors(np.array([30]), 2),
#       warp_sectors(np.array([31]), 2), warp_sectors(np.array([0, 0, 64]), 4))  # must print 3 1 2 2
# ```
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# first = np.asarray(addresses) // 32  # the sector of each lane's first byte
# last = (___) // 32  # ___: each lane's LAST byte; 32 bytes at byte 0 must give last == first == 0
# sectors = {int(s) for f, l in zip(first, last) for s in ___}  # ___: f to l, both ends included
# return len(sectors)
# ```
#
# </details>

# %%
def warp_sectors(addresses, nbytes):
    # YOUR CODE
    raise NotImplementedError

# %%
exercises.attempt("warp_sectors", warp_sectors)

# %% [markdown]
# **`tiled_scan`** (Part 2, a kernel). Section 4 said that the package's program owns a **tile**: `ROWS`
# rows × `BLOCK` steps. Write one: your `reset_scan` from 00c, with `rows` rows per program. On a
# GPU, notebook 13b's lab can time it.
#
# * **Inputs:** `rewards` (float32) and `terminated` (bool), contiguous, of shape `(B, T)`; then
#   `gamma`, `chunk` and `rows` (both powers of 2). `B` need not be a multiple of `rows`.
# * **Returns:** the returns, a `(B, T)` tensor, as `reset_scan` returns them.
# * **The tile:** launch `triton.cdiv(B, rows)` programs. Program `p` owns rows `p * ROWS` to
#   `p * ROWS + ROWS - 1`. Each chunk is a `(ROWS, CHUNK)` block, scanned by one
#   `tl.associative_scan` along axis 1. The carry is one value per row: a block of `ROWS` values.
# * **The combine:** your `reset_combine(a1, b1, k1, a2, b2, k2)` from 00c, unchanged. In the
#   reverse scan, `(a1, b1, k1)` is the later steps, applied first, and `(a2, b2, k2)` the earlier
#   ones, whose flag `k2` drops the later steps.
# * **Edge cases:** a last tile with rows past `B`, rows of several chunks, and NaN and inf after
#   episode ends (they must stay in their own episode, across chunks too).
#
# <details><summary>Hint 1: where to start</summary>
#
# Start from your `reset_scan`. Every 1-D block of `CHUNK` steps becomes a `(ROWS, CHUNK)` block,
# and what was one number per program (the row, the carry) becomes a block of `ROWS`. Two 1-D
# blocks make a 2-D one by broadcasting, as in NumPy: `x[:, None]` and `y[None, :]`.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * The program's rows: `p * ROWS + tl.arange(0, ROWS)`. The steps `t` of a chunk as before.
# * The offsets of the tile: row `r`, step `t` is at `r * T + t`, built from the two 1-D blocks.
# * The mask has two parts: the row is below `B`, and the step is below `T`.
# * Scan along the axis that is time. The combine is unchanged: it works elementwise.
# * The carry starts as a block of `ROWS` zeros. In the select, each row reads its own carry.
# * The new carry: each row's value at the chunk's first step, one number per row.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Take $\gamma = 0.5$, `chunk` $= 2$, `rows` $= 2$ and three rows of four steps: two programs, the
# second with one row past `B`; two chunks per row, so a carry crosses from step 2 to step 1.
#
# * Row 0, rewards $1, 1, 1, 1$: $G = 1.875, 1.75, 1.5, 1$ (the carry 1.5 enters step 1: $1 + 0.5 \cdot 1.5$).
# * Row 1, rewards $1, 2, 3, 4$, terminated at step 1: $G_3 = 4$, $G_2 = 3 + 0.5 \cdot 4 = 5$; step 1
#   ends its episode, so the carry 5 does not enter: $G_1 = 2$, then $G_0 = 1 + 0.5 \cdot 2 = 2$.
# * Row 2, rewards $2, 0, 0, 8$, alone in its program: $G_3 = 8$, $G_2 = 4$, $G_1 = 0 + 0.5 \cdot 4 = 2$,
#   $G_0 = 2 + 0.5 \cdot 2 = 3$.
# * A property: make row 1's last reward NaN. Only row 1's steps 2 and 3 may change (to NaN).
#
# ```python
# r_c = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.0], [2.0, 0.0, 0.0, 8.0]], device=DEVICE)
# d_c = torch.tensor([[False] * 4, [False, True, False, False], [False] * 4], device=DEVICE)
# print(exercises.guarded(tiled_scan, r_c, d_c, 0.5, 2, 2).cpu())
# # must print tensor([[1.8750, 1.7500, 1.5000, 1.0000],
# #                    [2.0000, 2.0000, 5.0000, 4.0000],
# #                    [3.0000, 2.0000, 4.0000, 8.0000]])
# ```
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
# offs = ___  # (ROWS, CHUNK): row r, step t at r * T + t
# m = ___     # both parts: the row below B, the step below T
# a_s, b_s, k_s = tl.associative_scan((a, r, term), ___, reset_combine, reverse=True)  # which axis is time?
# g = tl.where(k_s, b_s, b_s + a_s * ___)  # each row its own carry: a (ROWS,) block against (ROWS, CHUNK)
# carry = tl.sum(tl.where(___, g, 0.0), ___)  # each row's G at the chunk's first step
# ```
#
# </details>

# %%
# paste your reset_combine from 00c here (your kernel below calls it, unchanged)


def tiled_scan(rewards, terminated, gamma, chunk, rows):
    # YOUR CODE: a @triton.jit kernel above this function, launched on triton.cdiv(B, rows) programs
    raise NotImplementedError

# %%
exercises.attempt("tiled_scan", tiled_scan)

# %% [markdown]
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
# **Part 1, the primer:**
#
# * **Sectors.** A warp's load costs the 32-byte sectors it touches.
# * **Little's law:** bytes in flight = bandwidth × latency. The step-by-step walk, one step at a
#   time, runs at under 5 % of the floor.
# * **Enough programs.** A few long rows leave SMs idle; the time split cuts them into segments.
#
# **Part 2, the package's tile:** vectors composed in registers, aligned loads, and a small tile on
# one warp with the next chunk's loads in flight. **The interpreter** runs programs one at a time
# and does not guard memory: a race can pass there and fail on a GPU.
#
# **Next, your kernel:** notebook 13b, the GPU lab, times your own `reset_scan` against the
# package's and turns the tile's knobs on it.
