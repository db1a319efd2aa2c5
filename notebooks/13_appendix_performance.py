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
# * **You will learn:** three rules that make a memory-bound kernel fast, and how the package's
#   kernel follows them.
#
# * **Time:** 2.5–3.5 h for the reading and the two checked exercises, `warp_sectors` and
#   `tiled_scan` (a first 2-D Triton tile kernel).
#
# * **Needs:** notebooks 00c, 00d (its `strided_scan`, in section 1) and 08. No GPU.
#
# * **Minimum path:** sections 1 to 3 and the exercise `warp_sectors`. The GPU lab, 13b, needs
#   all of sections 1–4.
#
# **The question of this appendix:** your kernels from notebooks 00b and 00c compute the same
# numbers as the package's kernel, so why is the package's faster? **The answer:** it keeps enough
# bytes on their way from memory at every moment, and wastes none of the bytes it fetches. On an
# H200, at 16384×1024, its scans run at about 79–93 % of the memory floor (measured: the committed
# run, notebook 08, section 2).
#
# These kernels do under one flop per byte moved, so they are **memory-bound**: their *floor*
# (notebook 08) is the time to read each input once and write each output once at the GPU's copy
# bandwidth. Section 4 sums up in one page how the package's kernel follows the rules.
# [Notebook 13c](13c_inside_the_package.ipynb), an appendix for maintainers, shows the package's
# code; [its section 4.1](13c_inside_the_package.ipynb#4.1-A-model-of-the-speed,-against-three-measurements)
# tests a model built from these rules against three measured cases. New words are in
# [`GLOSSARY.md`](GLOSSARY.md).
#
# <details><summary>Sources: where the GPU figures come from</summary>
#
# | source | what it measured | card | read in |
# |---|---|---|---|
# | `benchmarks/results/H200-2026-12-06.json`, the committed run (`profile.COMMITTED_RUN`) | the copy bandwidth; GPU time, time per call and % of the floor of the scans at 16384×1024, of the naive-kernel anchor, and of GAE at 64×16384 (the package and the peer `rl_triton`) | an H200, 2026-12-06, torch 2.11, Triton 3.6 | the introduction, sections 2 and 4 |
# | `docs/DESIGN.md` | the time split's gain (GAE at 8×131072); split against walked (GAE at 64×32768 and 64×16384); the sweep of the segment size; two tiles at 16384×1024 | an H200, on older code (2026-11-29 to 12-01): compare the two figures of a pair only | section 4; notebook 13c, section 5 |
#
# Section 2 assumes two numbers: the load latency, 600 ns, and 2 chunks in flight per
# program. The H200's 132 SMs and the 32 resident programs an SM can hold are the hardware's
# specification. The rest is derived from these. The table at the end of section 4 gives each
# number's kind.
#
# </details>

# %%
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import numpy as np
import triton
import triton.language as tl

from rltriton_lite import exercises, plan, profile
from rltriton_lite.config import Config

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
RESULTS = profile.results_folder()  # benchmarks/results/: what an H200 measured (notebooks 08 and 09)
RUN, RES = profile.committed_results()  # the committed run (profile.COMMITTED_RUN), read by name as notebook 08 reads it

# %% jupyter={"source_hidden": true}
# Checks: the introduction's figures and versions, on the committed run (CI runs them; skip when reading)
assert RES["versions"]["torch"].startswith("2.11") and RES["versions"]["triton"].startswith("3.6")  # as the text says
assert "H200" in RES["gpu"] and RES["date"] == "2026-12-06" and RUN == profile.COMMITTED_RUN  # the Sources table
# the introduction's figures: % of the floor by GPU time, ours, 16384×1024, float32, forward
BIG_PCT = {r["algorithm"]: 100 * r["floor_ms"] / r["kernel_ms"] for r in RES["rows"]
           if (r["impl"], r["B"], r["T"], r["dtype"], r["pass"]) == ("rltriton_lite", 16384, 1024, "float32", "fwd")}
SCAN_PCT = [BIG_PCT[a] for a in ("discounted_return", "gae", "td_lambda", "vtrace", "linear_scan")]
assert [round(min(SCAN_PCT)), round(max(SCAN_PCT))] == [79, 93]  # "about 79–93 %": the scans
# "under one flop per byte moved": GAE's step (notebook 02's δ and Â, then R), against its 17 bytes in float32
_step = ("δ = r + γ·V' − V", "Â = δ + γ·λ·Â'", "R = Â + V")  # episode ends are selects, not arithmetic
_flops = sum(f.count(op) for f in _step for op in "+−·")
assert _flops == 7 and _flops < profile.op("gae").bytes_per_step(4) == 17
print(f"committed GPU figures: {RES['gpu']}, torch {RES['versions']['torch']}, triton {RES['versions']['triton']}; "
      f"installed here: torch {torch.__version__}, triton {triton.__version__}")
ROOT = os.path.dirname(os.path.dirname(RESULTS))  # the checkout: benchmarks/results/ is two levels down
with open(os.path.join(ROOT, "docs", "DESIGN.md"), encoding="utf-8") as f:
    design = " ".join(f.read().split())  # one line: the figures as the design document states them, checked below
# the Sources table's docs/DESIGN.md: an H200's probes, dated before the committed run ("older code")
assert all(f"H200-{d}" in design for d in ("2026-11-29-v4-tiles.log", "2026-11-29-first.json",
                                             "2026-11-30-segments.json", "2026-12-01g-token-probe.txt"))
assert max("2026-11-29", "2026-11-30", "2026-12-01") < RES["date"]

# %% [markdown]
# ## Three rules for a memory-bound kernel
#
# Three rules make a memory-bound kernel fast. For each, one number tells whether a kernel follows
# it, and one knob of the package's kernel serves it:
#
# | rule | the number that matters | the knob |
# |---|---|---|
# | 1: every load uses the bytes it fetches | sectors per warp load: 4 for 32 adjacent float32, 32 read along time | `vector`: one aligned 16-byte load per lane |
# | 2: enough bytes are on their way at every moment | about 10 KB of loads in flight per SM, for GAE on an H200 (section 2) | `stages` = 2: the next chunk loaded ahead |
# | 3: enough programs keep every processor busy | programs per launch, against 2 × SMs: 264 on an H200 | the time split of long rows |
#
# The words of the box:
#
# * A GPU is made of **streaming multiprocessors** (SMs), its processors. An H200 has 132 (its
#   specification).
# * Each program of a launch runs on one SM, as one or more **warps**. A warp is 32 threads, its
#   **lanes**, that run each instruction together.
# * When a warp runs a load instruction, each lane asks for a few bytes at its own address.
#
# ## 1. Coalescing: a warp reads memory in 32-byte sectors
#
# **The question:** what does one load of a warp cost? **The answer:** it costs the 32-byte
# sectors it touches, so adjacent lanes should read adjacent addresses.
#
# The hardware fetches the **sectors** that hold the lanes' addresses: aligned 32-byte pieces of
# memory, each fetched once however many lanes read from it. When adjacent lanes read adjacent
# addresses, the load is **coalesced**: 32 lanes × 4 bytes fill 4 sectors, every byte used.
#
# Now scan a **time-major** rollout, `(T, B)`, with one program per environment, as your
# `strided_scan` in 00d does. Its lanes hold steps of one environment, `B` elements apart, so once
# `B` ≥ 8 each lane lands in a sector of its own: 32 sectors fetched for 128 bytes used. In NumPy, a
# lane's sector is its byte address `// 32` (a float32 never crosses a sector):

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
assert Config().time_major_tile[0] == 64  # "the package's tile for a time-major buffer covers up to 64 environments"
assert 64 * 4 == 8 * SECTOR and SECTOR // 4 == 8  # "8 neighbouring ones fill a sector ... 64, eight whole sectors"
assert "bounded by their registers" in plan._tile.__doc__  # "its registers hold at most 2,048 steps"
# "at most 2,048 steps"; 64 environments "only with chunks of 32 steps", "with chunks of 256 it covers 8"
assert Config().time_major_tile[1] == 2048 and plan._tile(B_ENVS, 32, False, 4, Config())[:2] == (64, 32)
assert plan._tile(B_ENVS, 1000, False, 4, Config())[:2] == (8, 256)
# the fold: the 8 neighbouring environments' programs, one load each, touch the same 32 sectors and use every byte
_env_sectors = [set((4 * e + 4 * B_ENVS * lane) // SECTOR) for e in range(8)]
assert all(s_ == _env_sectors[0] for s_ in _env_sectors) and len(_env_sectors[0]) == 32
assert 8 * 4 * 32 == SECTOR * 32  # 8 programs × 128 bytes used = the 32 sectors' 1024 bytes

# %% [markdown]
# Read along time, each load instruction of the warp fetches 8 times the bytes it uses. So the
# package's tile for a time-major buffer reads environments side by side instead, as in the
# table's last row: at each step its lanes read neighbouring environments, and 8 of them fill a
# sector.
#
# <details><summary>Details: how many environments the package's time-major tile covers</summary>
#
# The tile covers up to 64 environments, eight whole sectors, but only with chunks of 32 steps: its
# registers hold at most 2,048 steps (`Config.time_major_tile`), so with chunks of 256 it covers 8.
# (In a `(T, B)` buffer each row of memory is one step, so these 64 environments are 64
# neighbouring columns.)
#
# </details>
#
# <details><summary>Details: 8 times per load, not always 8 times the DRAM traffic</summary>
#
# The other 28 bytes of each sector are the same step of the 7 neighbouring environments. Their
# programs load the same 32 sectors, and may find them still in the L1 or L2 cache, so the bytes
# read from DRAM can be fewer than 8 times those used. Nothing keeps a sector in the cache until
# its neighbours read it, though.
#
# </details>
#
# A lane can also load 16 bytes in one instruction, a **vector**, but only from an address that is
# a multiple of 16: an *aligned* one. Counting sectors for any load, aligned or not, is the first
# checked exercise, `warp_sectors`. (The sector rule is from NVIDIA's *CUDA C++ Best Practices
# Guide*.)
#
# ## 2. Bytes in flight: Little's law, and occupancy
#
# **The question:** how many bytes must be on their way to keep the memory busy? **The answer:**
# the bandwidth × the latency: for GAE on an H200, about 10 KB of loads per SM, if a load takes
# 600 ns. The package's knob is `stages` = 2: each program loads its next chunk ahead.
#
# > **The 600 ns latency is assumed, not measured.** Every figure this appendix derives from it is
# > an illustration of the rule, not a measurement.
#
# A load takes a long time to come back: its **latency**. Bytes asked for and not yet delivered are
# **in flight**, and the memory delivers its full bandwidth only if enough are in flight at every
# moment. Little's law, from queueing theory, says how many:
#
# $$\text{bytes in flight} = \text{bandwidth} \times \text{latency}.$$
#
# A toy memory checks it: each cycle it accepts requests up to a peak number of bytes, and answers
# each `latency` cycles later, while the program keeps `in_flight` bytes asked for and unanswered:

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
# The toy reaches its peak only with peak × latency bytes in flight. For GAE on an H200, mind
# which bytes count:
#
# * **The floor** counts every byte read *and* written, 17 per float32 step (9 read, 8 written;
#   from GAE's inputs and outputs), at the copy bandwidth.
# * **Bytes in flight** count only the **loads**, 9 of those 17 (the reward and the value, 4 bytes
#   each, and a 1-byte flag).
#
# A load's answer is needed; a store has none. A load does not stop the program when it is
# issued: the program waits only at the first instruction that uses the loaded value, and only if
# the value has not come back yet. So a program can ask for more loads before it uses the first,
# and their latencies overlap (that is the pipelining below). A store sends its bytes, and the
# program goes on at once:
#
# ```text
# load:   asked; the program goes on (more loads, other work) ... first use: waits here until answered
# store:  sent: the program goes on at once, and the bytes reach memory behind it
# ```
#
# So only the loads must be kept in flight. Stores still use bandwidth, so the floor counts them.
# The copy bandwidth, 4.27 TB/s, counts bytes read plus bytes written. Little's law needs only the
# loads, 9 of every 17 bytes, so at the floor the loads arrive at 4.27 TB/s × 9/17 = 2.26 TB/s.

# %%
BW = RES["copy_bandwidth_Bps"]  # bytes/s, read + written: the H200's (committed run)
H200_SMS = 132  # the H200's; docs/DESIGN.md: min_programs is "two per SM on CUDA, 264 on the H200"
LATENCY_S = 600e-9  # a load's latency, 600 ns: assumed (the note above)
GAE_READ = 4 + 4 + 1  # bytes read per float32 step: reward, value, flag
load_bw = BW * GAE_READ / 17  # GAE's loads at the floor: 9 of every 17 bytes moved
in_flight_gpu = load_bw * LATENCY_S  # Little's law: loads in flight on the whole GPU
per_sm = in_flight_gpu / H200_SMS
print(f"GAE's loads at the floor: 9/17 × {BW / 1e12:.2f} TB/s = {load_bw / 1e12:.2f} TB/s; "
      f"× {LATENCY_S * 1e9:.0f} ns = {in_flight_gpu / 1e6:.2f} MB in flight, {per_sm / 1e3:.1f} KB per SM")

# %% jupyter={"source_hidden": true}
# Checks: GAE's bytes per step and the figures above (CI runs them; skip when reading)
assert profile.op("gae").bytes_per_step(4) == GAE_READ + 2 * 4 == 17  # "17 moved": two floats written
assert (round(BW / 1e12, 2), round(load_bw / 1e12, 2)) == (4.27, 2.26)  # "4.27 TB/s × 9/17 = 2.26 TB/s"
assert round(in_flight_gpu / 1e6, 2) == 1.36  # the printout's "1.36 MB"
assert round(per_sm / 1e3, 1) == 10.3  # "about 10 KB of loads per SM"
assert "two per SM on CUDA, 264 on the H200" in design and 2 * H200_SMS == 264  # the 132 SMs, in docs/DESIGN.md
import inspect  # noqa: E402

from rltriton_lite import bench  # noqa: E402  (the copy bandwidth's definition)
assert "return 2 * nbytes / (ms * 1e-3)" in inspect.getsource(bench.copy_bandwidth)  # "counts ... read plus ... written"

# %% [markdown]
# A kernel reaches those 10.3 KB per SM in two ways.
#
# * **More warps at once on each SM.** Each program's registers and shared memory come out of a
#   fixed budget per SM, so a kernel whose programs need more of them fits fewer programs, and so
#   fewer warps, at once. The warps an SM holds, against the most it could hold, are its
#   **occupancy**.
# * **More bytes per warp:** 16-byte vector loads, and the next chunk's loads issued before this
#   chunk is scanned, **pipelining** (the chunk loaded ahead waits in shared memory).
#
# The package takes the second way, **more bytes per warp**. A package program for GAE at
# 16384×1024 loads a tile of 2 rows × 128 steps per chunk (the planner's choice, section 4), and
# the next chunk before it scans this one. More bytes in flight per program means fewer resident
# programs are needed per SM:
#
# | chunks in flight per program | KB in flight per program | programs per SM |
# |---|---|---|
# | 2, this chunk and the next (the most) | 2 rows × 128 steps × 9 B × 2 = 4.6 | 10.3 ÷ 4.6 = 2.2 |
# | 1 | 2 rows × 128 steps × 9 B = 2.3 | 10.3 ÷ 2.3 = 4.5 |
#
# A program is whole, so both counts are rounded up: each SM needs 3 to 5 programs *resident*, held
# by the SM at the same moment, and an SM can hold at most 32.
#
# The **naive-kernel anchor** would need more than a thousand: 10.3 KB ÷ 9 B. That anchor
# is notebook 09's yardstick ([glossary](GLOSSARY.md#anchor)), a naive GAE kernel: one program per
# row walks the row one step at a time, asking for one step's 9 bytes and waiting.

# %%
CHUNKS_IN_FLIGHT = 2  # assumed, an upper bound: the next chunk's loads and this chunk's
package_program = 2 * 128 * GAE_READ * CHUNKS_IN_FLIGHT  # up to two chunks of 2 rows x 128 steps in flight
step_program = GAE_READ  # one step in flight
print(f"in flight per program: the package's up to {package_program / 1e3:.1f} KB, the anchor's {step_program} B; "
      f"resident programs per SM for {per_sm / 1e3:.1f} KB: the package's {per_sm / package_program:.1f} to "
      f"{CHUNKS_IN_FLIGHT * per_sm / package_program:.1f}, the anchor's {per_sm / step_program:,.0f}")

# %% jupyter={"source_hidden": true}
# Checks: the two programs' figures as the text reads them (CI runs them; skip when reading)
assert round(package_program / 1e3, 1) == 4.6 and round(per_sm / package_program, 1) == 2.2  # "up to 4.6 KB", "about 2.2"
assert round(package_program / 2 / 1e3, 1) == 2.3 and round(2 * per_sm / package_program, 1) == 4.5  # one chunk: "4.5"
import math  # noqa: E402
assert (math.ceil(per_sm / package_program), math.ceil(2 * per_sm / package_program)) == (3, 5)  # a minimum: "3 to 5"
assert 1000 < per_sm / step_program < 2000  # "more than a thousand"

# %% [markdown]
# No SM holds a thousand resident programs (the most is 32), whatever the latency. The committed
# run shows the outcome: the anchor reaches 3.3 % of the floor, the package 83 %.
#
# <details><summary>Details: why the anchor reaches 3.3 %</summary>
#
# The anchor's programs have Triton's default 4 warps, so an SM holds at most 64 ÷ 4 = 16 of them.
# 16 × 9 B = 144 B in flight per SM predicts about 1.4 % of the floor. The committed run measured
# 3.3 %. The 600 ns is a trip to memory, but the anchor reads each row one float at a time and 8
# floats share a 32-byte sector, so most of its loads probably find their sector already in the
# cache and come back sooner
# ([notebook 13c, section 4.1](13c_inside_the_package.ipynb#4.1-A-model-of-the-speed,-against-three-measurements)).
#
# </details>

# %%
def committed(algorithm, B, T, impl="rltriton_lite"):
    """The committed H200 row of this case (float32, forward)."""
    (r,) = [r for r in RES["rows"] if (r["algorithm"], r["impl"], r["B"], r["T"], r["dtype"], r["pass"])
            == (algorithm, impl, B, T, "float32", "fwd")]
    return r


walk, ours = committed("gae", 16384, 1024, impl="bare_triton_launch"), committed("gae", 16384, 1024)
for what, r in [("naive-kernel anchor", walk), ("rltriton_lite", ours)]:
    pct = 100 * r["floor_ms"] / r["kernel_ms"]
    print(f"GAE 16384×1024, {what}: GPU {1e3 * r['kernel_ms']:7.1f} µs, {pct:4.1f} % of the floor")

# %% jupyter={"source_hidden": true}
# Checks: the anchor's 3.3 % of the floor (under 5 %: "What you now know"), the package's 83 % (CI runs them; skip when reading)
assert 100 * walk["floor_ms"] / walk["kernel_ms"] < 5 and 100 * ours["floor_ms"] / ours["kernel_ms"] > 80
assert (round(100 * walk["floor_ms"] / walk["kernel_ms"], 1), round(100 * ours["floor_ms"] / ours["kernel_ms"])) == (3.3, 83)
# why 3.3 %: 4 warps a program (Triton's default; the anchor's launch names none) cap an SM's 64 warps at 16 programs
assert triton.Config({}).num_warps == 4 and "num_warps" not in inspect.getsource(bench.bare_gae)
assert 64 // 4 == 16 and 16 * GAE_READ == 144 and round(100 * 144 / per_sm, 1) == 1.4  # "144 B", "about 1.4 %"

# %% [markdown]
# **A question to try** (no checker). Little's law also runs backwards. Given the bytes an SM can
# keep in flight, it says how long a load may take before the floor is out of reach. Fill each SM
# with as many programs as it can hold: 32 of the package's, up to 4.6 KB in flight each, or 16 of
# the anchor's, 9 B each. Up to what load latency could each kernel still keep GAE's loads at the
# floor's 2.26 TB/s? Compare both with 600 ns.
#
# <details><summary>Check yourself</summary>
#
# The latency is the bytes in flight per SM × 132 SMs ÷ 2.26 TB/s.
#
# * **The package:** 32 × 4.6 KB = 147 KB per SM, so up to about 8.6 µs, 14 times 600 ns.
# * **The anchor:** 16 × 9 B = 144 B per SM, so up to about 8.4 ns, 71 times less than 600 ns.
#
# The two limits differ by 32 × 4,608 B ÷ 144 B = 1024 exactly. Whatever the true latency, within
# a factor of ten of 600 ns, the package's tile can keep enough bytes in flight and the anchor
# cannot. (The package's limit is an upper bound: 32 is the most an SM can hold, and how many of
# the package's programs an SM really holds was not measured.)
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the question's "Check yourself" (CI runs them; skip when reading)
_pkg_sm, _anchor_sm = 32 * package_program, 16 * step_program  # bytes in flight per SM, each SM full
assert (package_program, round(_pkg_sm / 1e3), _anchor_sm) == (4608, 147, 144)  # "4.6 KB", "147 KB", "144 B"
_lat_pkg, _lat_anchor = _pkg_sm * H200_SMS / load_bw, _anchor_sm * H200_SMS / load_bw  # Little's law, backwards
assert (round(_lat_pkg * 1e6, 1), round(_lat_anchor * 1e9, 1)) == (8.6, 8.4)  # "about 8.6 µs", "about 8.4 ns"
assert (round(_lat_pkg / LATENCY_S), round(LATENCY_S / _lat_anchor)) == (14, 71)  # "14 times", "71 times less"
assert _pkg_sm / _anchor_sm == 1024 and _lat_pkg / _lat_anchor == 1024  # "1024 exactly"
assert _lat_pkg > 10 * LATENCY_S and _lat_anchor < LATENCY_S / 10  # "within a factor of ten of 600 ns"

# %% [markdown]
# ## 3. Enough programs: why a few long rows leave the GPU idle
#
# **The question:** how many programs does a launch need? **The answer:** the planner acts only
# below 2 per SM (264 on an H200), not below section 2's 3 to 5. Two programs of up to 4.6 KB in
# flight already hold up to 9.2 KB per SM, most of the 10.3 KB, and a split costs a second launch
# and more work on the host (`docs/DESIGN.md`, "The time split"). The 2 per SM is the package's
# default: `docs/DESIGN.md` measures the split's gain at 8 programs, not this threshold
# ([notebook 13c, section 5](13c_inside_the_package.ipynb#5.-Long-rows:-the-time-split)). A launch
# of a few long rows falls far below it, so the planner cuts its rows in time.
#
# One program per row gives 16384 programs at 16384 rows (the planner puts 2 rows in a program:
# 8192), but 8 at 8 rows of 131,072 steps: 8 of the 132 SMs have work, each walking its whole row
# in series.
#
# A launch of P programs keeps at most P SMs busy, so the planner's **time split** cuts a few long
# rows into segments, one program each, when **programs < 2 × SMs and ceil(T / 1024) ≥ 32**; the
# table below applies this rule to three shapes.
#
# <details><summary>Details: the rule's numbers, and where they come from</summary>
#
# The split needs both conditions. On an H200, 2 × SMs is 264 programs:
#
# | shape | programs before any split | fewer than 264? | wide chunks per row | at least 32? | time split |
# |---|---|---|---|---|---|
# | 16384×1024 | 8192 | no | 1 | no | no |
# | 8×131072 | 8 | yes | 128 | yes | yes: 1024 programs |
# | 64×16384 | 64 | yes | 16 | no | no |
#
# A launch of few programs walks an unsplit row in **wide chunks** of 1024 steps, ceil(T / 1024) of
# them. A split costs a second launch, so the package's **planner**, which picks each launch's
# layout, splits only when both halves of the rule hold.
#
# Each split program's tile is one row of 256 steps per chunk: the same 256 steps as section 2's 2 rows
# × 128. So each has section 2's 4.6 KB in flight (1 row × 256 steps × 9 B × 2 chunks), and the 8 per SM
# cover the 3 to 5 that section 2 asks for.
#
# By this rule 64×16384, 16 wide chunks a row, is not split, though its 64 programs leave 68 of the
# 132 SMs idle. How the split's sizes and the threshold of 32 were chosen is in
# [notebook 13c, section 5](13c_inside_the_package.ipynb#5.-Long-rows:-the-time-split).
#
# `tile_plan(B, T)` returns the planner's choices by name. The table gives, for three shapes, the
# programs before any split and the wide chunks per row, beside the threshold of 32 and the
# planner's decision.
#
# </details>

# %%
ON_H200 = Config(min_programs=2 * H200_SMS)  # split below 2 × 132 programs, as on an H200
PLAN_FIELDS = ("rows", "block", "warps", "stages", "vector", "row_programs", "segments", "seg")


def tile_plan(B, T, itemsize=4):
    """The planner's launch for a contiguous (B, T) scan on an H200, its fields by name (segments: of
    the time split; seg: chunks per segment)."""
    return dict(zip(PLAN_FIELDS, plan._plan(B, T, True, itemsize, torch.device("cuda"), ON_H200)))


WIDE = Config().wide_block  # 1024 steps
plans = []
for B_, T_ in [(16384, 1024), (8, 131072), (64, 16384)]:
    p_ = tile_plan(B_, T_)
    plans.append({"B × T": f"{B_}×{T_}", "programs before any split": p_["row_programs"],
                  "wide chunks per row (1024 steps each)": -(-T_ // WIDE),  # rounded up
                  "threshold (wide chunks)": Config().split_min_chunks, "time split": p_["segments"] > 1})
print(profile.table(plans, digits=3))

# %% jupyter={"source_hidden": true}
# Checks: the planner's three decisions as the text reads them (CI runs them; skip when reading)
by_shape = {p["B × T"]: p for p in plans}
# the fold's table: both conditions, and the split only where both hold
assert [p["programs before any split"] for p in plans] == [8192, 8, 64]
assert [p["programs before any split"] < ON_H200.min_programs for p in plans] == [False, True, True]  # "fewer than 264?"
assert [p["wide chunks per row (1024 steps each)"] >= Config().split_min_chunks for p in plans] == [False, True, False]
assert [p["wide chunks per row (1024 steps each)"] for p in plans] == [1, 128, 16]  # the table's one unit
assert [p["threshold (wide chunks)"] for p in plans] == [32] * 3 and [p["time split"] for p in plans] == [False, True, False]
assert not by_shape["16384×1024"]["time split"]  # many rows: enough programs already
assert by_shape["16384×1024"]["programs before any split"] == 8192 >= ON_H200.min_programs
assert tile_plan(16384, 1024)["rows"] == 2 and 16384 // 2 == 8192  # "the planner puts 2 rows in a program: 8192"
long = tile_plan(8, 131072)  # the sentence under the table, split: 8 rows × 128 segments of 4 chunks of 256 steps
assert (long["row_programs"], long["block"], long["segments"], long["seg"]) == (8, 256, 128, 4)
assert long["row_programs"] * long["segments"] == 1024 and 128 * 4 * 256 == 131072  # "1024 programs"
# the answer: "up to 9.2 KB per SM, most of the 10.3 KB" at 2 programs per SM; the split's cost, as DESIGN.md states it
assert round(2 * package_program / 1e3, 1) == 9.2 and per_sm / 2 < 2 * package_program < per_sm
assert "a split call costs two launches and an allocation of host time" in design
_when = design[design.index("- **When**: when fewer than"):design.index("- **Only for rows of 32")]
assert "(None: two per SM on CUDA, 264 on the H200)" in _when  # the default, 2 per SM
assert "GAE at 8×131072 ran 8 programs for 1.86 ms; with it, 0.033 ms." in _when and _when.count(" ms") == 2  # its one measurement
# unsplit (the same planner, its split turned off): 8 programs, each walking 128 wide chunks of 1024 steps
_unsplit = dict(zip(PLAN_FIELDS, plan._plan(8, 131072, True, 4, torch.device("cuda"),
                                              Config(min_programs=2 * H200_SMS, split_min_chunks=1 << 30))))
assert (_unsplit["row_programs"], _unsplit["segments"], _unsplit["block"], _unsplit["seg"]) == (8, 1, WIDE, 128)
assert not by_shape["64×16384"]["time split"] and tile_plan(64, 16384)["block"] == 1024
# the two conditions: 64 programs are too few, but a row of 16384 steps has only 16 wide chunks, fewer than 32
assert 64 < ON_H200.min_programs == 264 and 16384 // Config().wide_block == 16 < Config().split_min_chunks == 32
assert 31 * Config().wide_block == 31_744  # the boundary: 31,744 steps are 31 wide chunks of 1024
assert min(Config().wide_block, Config().max_block_t) == 1024  # "wide chunks of 1024 steps"
assert tile_plan(64, 16384)["block"] == 1024 and tile_plan(8, 31_744)["block"] == 1024  # unsplit rows walk them
assert WIDE == 1024 and "256 steps per chunk" in plan._tile.__doc__  # the split's "chunks of 256 steps": the default
# "ceil(T / 1024) ≥ 32": 8 rows of 31,744 steps (31 chunks) are walked whole, one step more (32 chunks) is split
assert (-(-31_744 // WIDE), -(-31_745 // WIDE)) == (31, 32)
assert tile_plan(8, 31_744)["segments"] == 1 and tile_plan(8, 31_745)["segments"] > 1
assert all(tile_plan(8, T_)["segments"] > 1 for T_ in (32_768, 131_072))  # longer rows are split too
assert H200_SMS - by_shape["64×16384"]["programs before any split"] == 68  # "leave 68 of the 132 SMs idle"
# the trigger and the split's size: "four times as many programs, 4 × 264 = 1056, 8 per SM"
assert "want = 2 * _sm_count(" in inspect.getsource(plan._plan) and "4 * want" in inspect.getsource(plan._plan)
assert "segments for four times that many programs" in " ".join(plan._plan.__doc__.split())
assert "time is cut into segments for four times that many programs" in design and 4 * 264 == 1056
assert 1056 / H200_SMS == 8 and round(1024 / H200_SMS, 1) == 7.8  # "1056, 8 per SM"; "1024 programs, 7.8 per SM"
for B_, T_ in [(8, 131072), (32, 32768), (1, 1 << 20)]:  # a split launches 1024 programs here, under the 1056 aimed at
    p_ = tile_plan(B_, T_)
    assert p_["segments"] > 1 and p_["row_programs"] * p_["segments"] == 1024 <= 4 * ON_H200.min_programs
    # "each has section 2's 4.6 KB in flight (1 row × 256 steps × 9 B × 2 chunks)": the same 256 steps a chunk as 2 × 128
    assert (p_["rows"], p_["block"], p_["stages"]) == (1, 256, 2) and 1 * 256 * GAE_READ * 2 == package_program
    assert 1 * 256 == 2 * 128 and round(1 * 256 * GAE_READ * 2 / 1e3, 1) == 4.6
assert 1024 // H200_SMS == 7 > math.ceil(2 * per_sm / package_program) == 5  # 7 or 8 per SM "cover the 3 to 5"

# %% [markdown]
# <details><summary>Details: 8×131072 unsplit and split</summary>
#
# Unsplit, 8×131072 would run 8 programs, each walking its row's 128 wide chunks of 1024 steps in
# series. Split, the planner cuts each row into 128 segments of 4 chunks of 256 steps: 1024
# programs, 7.8 per SM, at the price of a second pass and a second launch. Why 1024 and not the
# 1056 aimed at is in [notebook 13c, section 5](13c_inside_the_package.ipynb#5.-Long-rows:-the-time-split).
#
# </details>

# %% [markdown]
# ## 4. The package's kernel in one page
#
# A program of the package owns a **tile**: `ROWS` rows × `BLOCK` steps per chunk, 2 × 128 at
# 16384×1024 in float32. It walks the tile chunk after chunk, with one carry per row, as your
# `reset_scan` walks one row. The planner picks the tile and three more knobs for each launch:
#
# | rule (sections 1 to 3) | the knob that serves it | GAE, float32, on an H200 |
# |---|---|---|
# | 1, sectors: adjacent, aligned loads | `vector`: one lane's 16-byte piece | 4 steps per load at 16384×1024 |
# | 2, bytes in flight | `stages` = 2 (the next chunk loaded ahead), `warps` = 1 | 2 stages, 1 warp at 16384×1024 |
# | 3, enough programs | the time split (section 3) | 8×131072: 1.86 ms unsplit, 0.033 ms split |
# | 3, where the planner does not split | wide chunks of 1024 steps, 4 warps | 64×16384: 12.9 % of the floor, the peer `rl_triton` 19.9 % |
#
# Each knob serves one of sections 1 to 3's three rules: the time split made GAE at 8×131072 about 56
# times faster (1.86 ÷ 0.033), and where the planner does not split, a serial chain of chunks keeps
# the package slow.
#
# <details><summary>Details: each rule in full</summary>
#
# **The question:** how does the package's kernel follow the three rules? **The answer:** each of
# its knobs serves one rule.
#
# * **Rule 1, sectors: adjacent, aligned loads.** Adjacent lanes read adjacent pieces of a row,
#   as in section 1's coalesced load. `vector` is the steps of one lane's piece. A vector is 16 bytes
#   (4 float32 or 8 bfloat16).
#
#   Each piece is one aligned load only where Triton can prove it aligned: when the row stride,
#   T, is a multiple of 16 steps ([notebook 13c, section 3](13c_inside_the_package.ipynb#3.-One-load-per-input,-aligned)
#   gives the case T = 1000). `values[t+1]` is the loaded tile shifted by one step, not a second
#   load.
# * **Rule 2, bytes in flight: 16-byte loads, one warp, the next chunk loaded ahead.** A 16-byte
#   load puts four floats in flight where a plain load puts one (section 2's "more bytes per warp"). With
#   `stages` = 2 the next chunk's loads are issued before this chunk is scanned. With `warps` = 1
#   the program's one warp never waits at a barrier for another warp. With several warps, a warp
#   that reaches a barrier first stops there, and issues no new loads of its own until the others
#   arrive.
# * **Rule 3, enough programs: the time split** (section 3). A first launch composes each segment's map;
#   a second rescans each segment from the carry these give. At 64×16384 the planner does not
#   split: a row has 16 wide chunks, under its 32 (section 3). So each of the 64 programs walks 16 chunks
#   of 1024 steps in series, and the package stays slow: 12.9 % of the floor by GPU time, where the
#   peer `rl_triton` reaches 19.9 %. The committed run's file times each call with three clocks:
#
#   | clock | what it times | package | peer |
#   |---|---|---|---|
#   | `kernel_ms` | GPU time, by CUDA-graph replays: the % of the floor above | 12.9 % | 19.9 % |
#   | `ms` | Triton's `do_bench`, the file's own `pct_floor` column | 42.5 µs, 9.8 % | 36.1 µs, 11.5 % |
#   | `full_call_us` | wall time per call, the host's work included | 52 µs | 68 µs |
#
#   Use `kernel_ms` for % of the floor, as the course's notebooks do: `ms` starts each call with a
#   cold cache and can catch host time, and `full_call_us` includes the host's work
#   ([notebook 14, section 2](14_appendix_data.ipynb#2.-The-fields-of-a-row,-and-the-three-clocks)).
#
#   The peer wins on the two GPU clocks, the package on the wall clock. The
#   serial chain of chunks limits it. The programs run 4 warps, not Rule 2's one, because with so
#   few programs the planner walks wide chunks of 1024 steps, a warp per 256: a shorter chain. Why that choice
#   was measured faster is in
#   [notebook 13c, section 5.1](13c_inside_the_package.ipynb#5.1-Where-notebook-13's-split-figures-come-from),
#   for maintainers. Which link of the chain costs most (the loads, the scan on 4 warps that meet at
#   barriers, or the carry handed on) was not profiled
#   ([notebook 13c, section 4.1](13c_inside_the_package.ipynb#4.1-A-model-of-the-speed,-against-three-measurements)).
#
# How the scan runs inside one warp, its lanes trading values by shuffles and its reverse scan laid
# out so that it needs no flip of the lanes, is [notebook 13c](13c_inside_the_package.ipynb)'s
# (sections 1, 2 and 4). So is what the interpreter hides (section 6 there): it runs programs one at
# a time, so a race between programs passes there, and it does not guard memory.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: section 4's figures, from the planner, docs/DESIGN.md and the committed run (CI runs them; skip when reading)
big_tile = tile_plan(16384, 1024)
assert [big_tile[k] for k in ("rows", "block", "vector", "warps", "stages")] == [2, 128, 4, 1, 2]  # the tile above
assert tile_plan(16384, 1024, itemsize=2)["vector"] == 8  # 8 bfloat16 steps in 16 bytes
# section 2's program: 2 rows × 128 steps, the next chunk's loads issued ahead (2 stages)
assert big_tile["rows"] * big_tile["block"] * GAE_READ * big_tile["stages"] == package_program
assert "Chunks are aligned to the row start with ascending addresses" in design
# Rule 1: "a multiple of 16 steps" (the case T = 1000 and its checks: notebook 13c, section 3)
assert 1000 % 16 != 0 and 1024 % 16 == 0
assert "A load at t ± 1 is misaligned and becomes scalar" in design  # what a misaligned load compiles to
assert "values[t+1] is the aligned values tile shifted by one step" in design
assert "Before the split, GAE at 8×131072 ran 8 programs for 1.86 ms; with it, 0.033 ms." in design
assert round(1.86 / 0.033) == 56  # "about 56 times faster"
assert tile_plan(16384, 1024)["row_programs"] == 8192  # the table: "not needed" at 16384×1024 (section 3's 8192 programs)
wide = tile_plan(64, 16384)  # too few programs, and rows of only 16 wide chunks: no split
assert (wide["row_programs"], wide["segments"], wide["block"], 16384 // wide["block"]) == (64, 1, 1024, 16)
assert 16384 // wide["block"] < Config().split_min_chunks == 32  # "16 wide chunks, under its 32"
assert wide["warps"] == wide["block"] // 256 == 4  # "4 warps, one per 256 steps" (plan._tile: "a warp per 256")
assert "a warp per 256" in " ".join(plan._tile.__doc__.split())
slow = committed("gae", 64, 16384)
assert round(100 * slow["floor_ms"] / slow["kernel_ms"]) == 13  # "about 13 % of the floor"
peer = committed("gae", 64, 16384, impl="rl_triton")  # Rule 3's peer, by GPU time and per call
assert [round(100 * r["floor_ms"] / r["kernel_ms"], 1) for r in (slow, peer)] == [12.9, 19.9]  # "12.9 % ... 19.9 %"
assert [round(r["full_call_us"]) for r in (slow, peer)] == [52, 68]  # the clocks' table: "52 µs", "68 µs"
# the clocks' table's `ms` row: "Triton's `do_bench`, the file's own `pct_floor` column", 42.5 µs, 9.8 % and 36.1 µs, 11.5 %
assert all(r["timer"] == "do_bench" for r in (slow, peer))
assert all(abs(r["pct_floor"] - 100 * r["floor_ms"] / r["ms"]) < 1e-9 for r in (slow, peer))
assert [round(r["pct_floor"], 1) for r in (slow, peer)] == [9.8, 11.5]
assert [round(1e3 * r["ms"], 1) for r in (slow, peer)] == [42.5, 36.1]
assert slow["kernel_ms"] > peer["kernel_ms"] and slow["ms"] > peer["ms"]  # "the peer wins on the two GPU clocks"
assert slow["full_call_us"] < peer["full_call_us"]  # "the package on the wall clock"
# "use kernel_ms": graph replays, no host work; full_call_us: back-to-back eager calls, the host's work included
assert "do_bench_cudagraph(" in inspect.getsource(bench.kernel_ms) and "perf_counter" in inspect.getsource(bench.wall_ms)
assert "full_us = 1e3 * statistics.median(wall_ms(fn, sync, n)" in inspect.getsource(bench.measure)
assert all(r["kernel_ms"] <= r["ms"] and 1e3 * r["kernel_ms"] < r["full_call_us"] for r in (slow, peer))
# the three rules' box: each rule's number and knob
assert [t["sectors"] for t in sector_table[:2]] == [4, 32] and round(per_sm / 1e3) == 10  # "4 ... 32", "about 10 KB"
assert ON_H200.min_programs == 2 * H200_SMS == 264 and (big_tile["vector"] * 4, big_tile["stages"]) == (16, 2)
assert long["segments"] > 1  # "the time split of long rows"


# %% [markdown]
# <details><summary>Details: which numbers of sections 2 to 4 are measured, assumed or derived</summary>
#
# * **Measured** (the committed H200 run): the copy bandwidth, 4.27 TB/s; % of the floor, the
#   anchor 3.3, the package 83 at 16384×1024 and 12.9 at 64×16384, the peer `rl_triton` 19.9 there.
#   GAE at 8×131072 before and after the split, 1.86 and 0.033 ms, is an older H200 run's (notebook
#   13c, section 5.1, gives its source).
# * **Assumed:** the load latency, 600 ns; 2 chunks in flight per package program, an upper bound
#   (`stages` = 2; with 1, the bytes halve and the programs needed double: section 2's 2.2 to 4.5).
# * **Given:** an H200's 132 SMs and at most 32 resident programs per SM (the specification); the
#   split's trigger, 264 programs, two per SM (`docs/DESIGN.md`), and its aim, 4 × 264 = 1056, 8 per
#   SM (`plan._plan`; how it was chosen: notebook 13c, section 5).
# * **Derived:** GAE's 17 bytes moved and 9 loaded per step (`profile.op("gae")`); its loads at the
#   floor, 4.27 TB/s × 9/17 = 2.26 TB/s; × 600 ns ÷ 132 SMs = 10.3 KB in flight per SM; 4.6 KB per
#   package program (2 rows × 128 steps × 9 B × 2 chunks), 9 B per anchor program; so 3 to 5
#   resident programs per SM (10.3 KB ÷ 4.6 KB or 2.3 KB, rounded up), over a thousand for the
#   anchor; the anchor's predicted 1.4 % (16 programs × 9 B ÷ 10.3 KB).
#
# [Notebook 13c](13c_inside_the_package.ipynb) gives section 4's figures with their sources, and
# the earlier tiles' times at 16384×1024 in its
# [section 4](13c_inside_the_package.ipynb#4.-The-tile:-how-many-rows-and-steps-a-program-owns).
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the fold's values, each from where it says (CI runs them; skip when reading)
assert round(BW / 1e12, 2) == 4.27 and RUN == profile.COMMITTED_RUN  # measured: the committed run
assert (profile.op("gae").bytes_per_step(4), GAE_READ) == (17, 9)
assert LATENCY_S == 600e-9 and CHUNKS_IN_FLIGHT == 2 == big_tile["stages"]  # the two assumptions
assert round(BW * 9 / 17 * LATENCY_S / H200_SMS / 1e3, 1) == 10.3 and H200_SMS == 132
assert package_program == 2 * 128 * 9 * 2 and round(package_program / 1e3, 1) == 4.6 and step_program == 9
_pct = lambda r: 100 * r["floor_ms"] / r["kernel_ms"]  # noqa: E731
assert round(_pct(walk), 1) == 3.3 and round(_pct(ours)) == 83 and round(_pct(slow), 1) == 12.9  # "3.3, 83, 12.9 %"
assert round(_pct(peer), 1) == 19.9 and round(load_bw / 1e12, 2) == 2.26  # the peer's "19.9 %"; "2.26 TB/s"
assert (math.ceil(per_sm / package_program), math.ceil(2 * per_sm / package_program)) == (3, 5)  # "3 to 5"
assert 1000 < per_sm / step_program and round(100 * 16 * step_program / per_sm, 1) == 1.4  # "over a thousand"; "1.4 %"
assert "1.86 ms; with it, 0.033 ms. (2026-11-29" in design and "2026-11-29" < RES["date"]  # "an older H200 run's"
assert ON_H200.min_programs == 264 and 4 * 264 == 1056 == 8 * H200_SMS  # "264 programs", "1056, 8 per SM"


# %% [markdown]
# ## Exercises
#
# Checked exercises work as in notebooks 00 and 00b. Write the starter's function, then run the cell after
# it. `print(exercises.task(name))` restates the task; the solutions are in `notebooks/solutions/`.
#
# **`warp_sectors`** (section 1). Count the 32-byte sectors that one load instruction of a warp
# touches, as section 1 did, but for any load.
#
# * `addresses` holds the byte address where each active lane's load starts. Masked-off lanes are
#   left out.
# * Every lane loads `nbytes` bytes.
#
# Section 1's count assumed that each lane's bytes sit inside one sector. Here a load may cross a
# sector boundary (a misaligned 16-byte load is compiled as smaller loads, which touch the same sectors),
# and lanes may share a sector, or an address.
#
# <details><summary>Hint 1: where to start</summary>
#
# Section 1 counted sectors with `np.unique(addresses // SECTOR).size`.
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
# **`tiled_scan`** (section 4, a kernel). Give each program a **tile**, as the package does: your
# `reset_scan` from 00c, with `rows` rows per program. Notebook 13b's lab can time it.
#
# * **Inputs:** `rewards` (float32) and `terminated` (bool), contiguous, of shape `(B, T)`; then
#   `gamma`, `chunk` and `rows` (both powers of 2). `B` need not be a multiple of `rows`.
# * **Returns:** the returns, a `(B, T)` tensor, as `reset_scan` returns them.
# * **The tile:** launch `triton.cdiv(B, rows)` programs. Program `p` owns rows `p * ROWS` to
#   `p * ROWS + ROWS - 1`. Each chunk is a `(ROWS, CHUNK)` block, scanned by one
#   `tl.associative_scan` along axis 1. The carry is one value per row: a block of `ROWS` values.
# * **The combine:** 00c's `reset_combine(a1, b1, k1, a2, b2, k2)`, already in the starter. In the
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
# Your `reset_scan`'s lines, each made 2-D:
#
# * **The rows:** the program's id times `ROWS`, plus `tl.arange(0, ROWS)`.
# * **The offsets:** the rows as a column, `[:, None]`, times `T`, plus the steps as a row,
#   `[None, :]`. The result has shape `(ROWS, CHUNK)`.
# * **The mask:** each 1-D block compared with its own bound, broadcast the same way, joined by `&`.
# * **The scan:** the same call on the triple, with the axis argument set to the tile's time axis.
# * **The select:** the carry is `(ROWS,)` and the tile `(ROWS, CHUNK)`. Make the carry a column
#   before multiplying.
# * **The new carry:** keep `g` where the step is the chunk's first, 0 elsewhere, and sum along
#   time: one number per row.
#
# If a check still fails, `print(exercises.fix("tiled_scan"))` shows what to change.
#
# </details>

# %%
@triton.jit
def reset_combine(a1, b1, k1, a2, b2, k2):  # 00c's combine, unchanged: (a1, b1, k1), the first operand, applied first
    return tl.where(k2, a2, a2 * a1), tl.where(k2, b2, b2 + a2 * b1), k1 | k2


def tiled_scan(rewards, terminated, gamma, chunk, rows):
    # YOUR CODE: a @triton.jit kernel above this function, launched on triton.cdiv(B, rows) programs
    raise NotImplementedError

# %%
exercises.attempt("tiled_scan", tiled_scan)

# %% [markdown]
# ## What you now know
#
# * **Sectors:** a warp's load costs the 32-byte sectors it touches.
# * **Little's law:** bytes in flight = bandwidth × latency; the naive-kernel anchor, one step at a
#   time, gets under 5 % of the floor.
# * **Enough programs:** a launch of fewer than 2 programs per SM, on rows of at least 32 wide
#   chunks, is split in time into about 8 programs per SM.
# * **The package's kernel:** 16-byte loads and the next chunk loaded ahead, on a tile the planner
#   picks per shape: 2 rows × 128 steps on one warp at 16384×1024, and chunks of 1024 steps on 4
#   warps for a few long rows that are not split (64×16384).
#
# **Next:** notebook 13b, the GPU lab, times your own `reset_scan` and turns the tile's knobs on it.
