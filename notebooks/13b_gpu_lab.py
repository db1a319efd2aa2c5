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
# # 13b — Appendix lab: time your own kernel on a GPU (optional)
#
# * **You will learn:** how to time a Triton kernel as the course's benchmarks do, how to set your
#   figures beside the package's, which launch knobs move a scan kernel towards the memory floor,
#   and how to read one `torch.profiler` pass.
#
# * **Time:** 30–45 min to read it and run it on a CPU; 1.5–2.5 h with the lab on a GPU. Optional.
#
# * **Needs, before you start:** your `reset_scan`, the chunked kernel of notebook 00c's exercise
#   (or the course's solution, from your teacher), and notebook 13, sections 1–4 (the three rules; the
#   tile). This notebook does not give a chunked kernel.
#
# **Two paths.** Every cell runs on a CPU too, in the Triton interpreter; only a GPU times.
#
# * **No GPU:** (A) section 1's check on your `reset_scan`; (B) the exercise `resident_programs`,
#   and question 2's Steps 1 to 4 with `compile_for_h100`.
# * **On a GPU:** steps A and B, then (C) time your kernel and its variants (sections 2 and 3,
#   questions 1 and 2), and (D) profile your best variant (section 4, question 3).
#
# **What you do:** take `reset_scan`, the chunked Triton kernel you wrote in notebook 00c; time it
# beside the package; turn one launch knob at a time; and explain what moved, in notebook
# 13's three rules. Sections 1 to 4 each explain one tool and show it on a baseline kernel: a check
# (1), a timing beside the package (2), the target (3) and one `torch.profiler` pass (4). The tools
# live in the package, so this notebook only calls them: their code is in `rltriton_lite/lab.py`,
# about 300 lines, if you want to read how it times. The exercises at the end say what to hand
# in, with a GPU or without one. New words are in the glossary, [`GLOSSARY.md`](GLOSSARY.md).
#
# The cells that time a kernel measure your GPU when you run them. This lab uses the **H100** and
# **Triton 3.6**, the card and compiler of its reference file
# ([notebook 14, section 1](14_appendix_data.ipynb) describes it); other cards and versions are in folds.

# %%
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton
import triton.language as tl

import rltriton_lite as rl
from rltriton_lite import exercises, lab, profile  # lab: this notebook's tools (rltriton_lite/lab.py)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
GPU = DEVICE == "cuda"
RUN, RES = profile.committed_results()  # the committed run (profile.COMMITTED_RUN), read by name as notebook 08 reads it
# the lab's reference, benchmarks/results/checks/H100-2026-12-06-lab.txt (in the student handout), written by the
# teacher's tools/lab_probe.py (not in it)
LAB_REFERENCE = lab.reference_path()

# %% jupyter={"source_hidden": true}
# Checks: the committed run's GPU and the size of rltriton_lite/lab.py (CI runs them)
assert "H200" in RES["gpu"] and RUN == "H200-2026-12-06"
with open(lab.__file__, encoding="utf-8") as f:
    assert round(len(f.read().splitlines()), -2) == 300  # the tools' code: "rltriton_lite/lab.py, about 300 lines"

# %% [markdown]
# ## 1. A baseline kernel, and a check
#
# **The question:** what do you time, before your own kernel is ready? **The answer:** the simplest
# correct kernel for discounted returns, which takes the same arguments as your `reset_scan`.
#
# The kernel below has one program per row, which walks its row one step at a time, with no scan:
# each step asks for its few bytes and waits for them. It is not notebook 13's **naive-kernel
# anchor** (notebook 13, section 2), which walks the same way but computes GAE; this one computes returns, so
# that its function, `step_by_step`, takes the arguments of your `reset_scan` from notebook 00c:
# `(rewards, terminated, gamma, chunk)`.
#
# <details><summary>Note: its name in the reference file</summary>
#
# The lab's reference file (section 3) labels this kernel's rows "step_by_step (13's baseline)":
# they are this kernel's, timed on an H100.
#
# </details>
#
# Each section's tool takes a kernel's function `fn`: `lab.check_small(fn)` here, `lab.time_lab(fn)`
# in section 2, `lab.target_verdict(rows)` in section 3 and `lab.profile_once(fn)` in section 4. You
# do not edit these cells: your `reset_scan` goes under **Answer 1**, where each question's lines
# call the same tools on it.

# %%
@triton.jit
def step_by_step_kernel(R, D, G, gamma, T):
    """Discounted returns of one row per program, walking its steps from the last one, one at a time."""
    base = tl.program_id(0).to(tl.int64) * T
    g = 0.0
    for i in range(0, T):
        t = base + T - 1 - i
        term = tl.load(D + t) != 0
        g = tl.load(R + t) + tl.where(term, 0.0, gamma * g)
        tl.store(G + t, g)


def step_by_step(rewards, terminated, gamma, chunk):
    """G_t = r_t + gamma (1 - term_t) G_{t+1}, G_T = 0, for contiguous (B, T) float32 rewards and
    bool terminated: the arguments of 00c's reset_scan (this kernel has no chunks: it ignores
    chunk)."""
    out = torch.empty_like(rewards)
    step_by_step_kernel[(rewards.shape[0],)](rewards, terminated, out, gamma, rewards.shape[1])
    return out

# %% [markdown]
# First the kernel must be right. `lab.check_small(fn)` compares `fn` with `rl.discounted_returns`
# on 3 rows of 300 steps, at the lab's chunk of 256 steps (`lab.LAB_CHUNK`, or yours) and at a
# chunk of 16, so that a carry crosses several chunks. A difference raises an `AssertionError` that
# names the chunk, the row and the step where the error starts, with the expected value and yours.
# On a CPU it runs the kernel in the Triton interpreter.

# %%
lab.check_small(step_by_step)
print("step_by_step == rl.discounted_returns on 3 × 300:", "compiled" if GPU else "in the interpreter, checked, not timed")

# %% [markdown]
# ## 2. Timing a call: wall time, GPU time and % of the floor
#
# > **No GPU?** This section and the next time nothing on a CPU. Skim them for what the figures
# > mean, then go to the exercises, and then to question 2's part without a GPU.
#
# **The question:** how fast is a call, and how fast could it be? **The answer:** time it as the
# benchmark harness does, and divide the memory floor by its GPU time.
#
# `lab.time_lab(fn)` first runs `lab.check_small(fn)`. On a GPU it then times `fn` beside
# `rl.discounted_returns` at two shapes: at 4096×128 (many short rows) a call is mostly host time,
# and at 16384×1024 the GPU time is the call. It returns one row per call and shape, for
# `profile.table`; on a CPU, an empty list. Each row has three figures, measured by
# `rltriton_lite/bench.py`:
#
# * **Wall time** per call: calls run back to back, with one synchronisation at the end, so the
#   host's work is included.
# * **GPU time**: the median of CUDA-graph replays, the kernels alone. A call that cannot be
#   captured in a CUDA graph, such as one that synchronises with the host, shows `n/a`.
# * **% floor**: the floor ÷ the GPU time. The floor is the fewest bytes, 9 per step (the reward and
#   the flag read, the return written), over the copy bandwidth of *your* GPU.
#
# Its other arguments serve question 2's variants: `chunk` is passed on to `fn`, `name` labels
# `fn`'s rows, and `shapes` narrows the timing, to `[(16384, 1024)]` for instance.

# %%
baseline = lab.time_lab(step_by_step, name="step_by_step (no chunks)")
print(profile.table(baseline, digits=3))
if not GPU:
    print("What the lab's H100 measured is in the lab's reference file: the next cell shows the rows to compare with.")

# %% jupyter={"source_hidden": true}
# Checks: the lab's chunk and shapes, 9 bytes per step, and the baseline's table: two rows per shape on a GPU,
# none on a CPU (CI runs them; skip when reading)
assert lab.LAB_CHUNK == 256 and lab.LAB_SHAPES == [(4096, 128), (16384, 1024)]  # "chunk of 256", "4096×128", ...
assert lab.STEP_BYTES == 9
if GPU:
    assert len(baseline) == 2 * len(lab.LAB_SHAPES) and all(r["wall µs/call"] > 0 for r in baseline)
    assert all(r["GPU µs"] is None or r["GPU µs"] > 0 for r in baseline)
else:
    assert baseline == []

# %% [markdown]
# Here is what the lab's H100 measured at the same shapes, by the same method: the package's
# `rl.discounted_returns` and this notebook's `step_by_step`. Compare `% floor`: the share of the
# GPU's copy speed that each kernel reaches.

# %%
with open(LAB_REFERENCE, encoding="utf-8") as f:
    lab_header = f.readline()  # the reference's first line: its GPU, torch and Triton
reference = lab.read_reference(LAB_REFERENCE)  # (variant, shape) -> its row, shapes written "16384x1024"
h100 = []
for B_, T_ in lab.LAB_SHAPES:
    for what in ["rl.discounted_returns", "step_by_step (13's baseline)"]:
        r = reference[(what, f"{B_}x{T_}")]
        h100.append({"kernel": what, "B × T": f"{B_}×{T_}", "wall µs/call": r["wall µs"], "GPU µs": r["GPU µs"],
                     "floor µs": r["floor µs"], "% floor": r["% floor"]})
print(f"{lab_header[2:].split(':')[0]}; the lab's reference, {os.path.basename(LAB_REFERENCE)}: "
      "measured there, not on this machine")
print(profile.table(h100, digits=3))
big = {t["kernel"]: t for t in h100 if t["B × T"] == "16384×1024"}
# the same shapes on the other card, the committed H200 run, for the fold "On the other card" (not printed)
h200 = []
for B_, T_ in lab.LAB_SHAPES:
    for what, r in [("rl.discounted_returns", lab.committed("discounted_return", B_, T_)),
                    ("naive-kernel anchor (GAE)", lab.committed("gae", B_, T_, impl="bare_triton_launch"))]:
        h200.append({"kernel": what, "B × T": f"{B_}×{T_}", "wall µs/call": r["full_call_us"],
                     "GPU µs": 1e3 * r["kernel_ms"], "floor µs": 1e3 * r["floor_ms"],
                     "% floor": 100 * r["floor_ms"] / r["kernel_ms"]})
big_h200 = {t["kernel"]: t for t in h200 if t["B × T"] == "16384×1024"}

# %% jupyter={"source_hidden": true}
# Checks: the figures the next paragraph and its fold read (CI runs them; skip when reading)
assert "H100" in lab_header and "triton 3.6" in lab_header  # the introduction's "H100 and Triton 3.6"
assert big["rl.discounted_returns"]["% floor"] == 90.3 and round(big["rl.discounted_returns"]["% floor"], -1) == 90
assert round(big["step_by_step (13's baseline)"]["% floor"]) == 3  # "about 3 %" (3.1)
assert h100[0]["B × T"] == "4096×128" and h100[0]["kernel"] == "rl.discounted_returns"
assert [h100[0]["wall µs/call"], h100[0]["GPU µs"]] == [37.3, 3.2]  # "37.3 against 3.2 µs"
assert round(h100[0]["wall µs/call"] / h100[0]["GPU µs"]) == 12  # "about twelve times": host-bound (over 2×)
# the fold "On the other card": the committed H200 run
assert round(big_h200["rl.discounted_returns"]["% floor"], -1) == 80  # "about 80 %" (79.0)
assert round(big_h200["naive-kernel anchor (GAE)"]["% floor"]) == 3
assert h200[0]["B × T"] == "4096×128" and h200[0]["kernel"] == "rl.discounted_returns"
assert [round(h200[0]["wall µs/call"], 1), round(h200[0]["GPU µs"], 2)] == [22.5, 3.37]  # "22.5 against 3.37 µs"
assert round(h200[0]["wall µs/call"] / h200[0]["GPU µs"]) == 7  # "about seven times": host-bound (over 2×)
assert {r["algorithm"] for r in RES["rows"] if r["impl"] == "bare_triton_launch"} == {"gae"}  # "timed no returns walk"

# %% [markdown]
# At 16384×1024 the package moves its bytes at about 90 % of the H100's copy speed. `step_by_step`
# manages about 3 %, because it has too few bytes in flight (notebook 13, section 2). At 4096×128
# the package's wall time is about twelve times its GPU time, 37.3 against 3.2 µs: the call is
# host-bound, which means the host's work is most of it (notebook 08, section 3).
#
# <details><summary>On the other card: the H200 of the committed run</summary>
#
# The committed run (`benchmarks/results/`; notebooks 08 and 09 chart it) timed no returns walk, so
# its slow kernel is notebook 13's naive-kernel anchor, the GAE twin of `step_by_step`. At
# 16384×1024 the package reaches about 80 % of the H200's floor and the anchor about 3 %. At
# 4096×128 the package's wall time is about seven times its GPU time, 22.5 against 3.37 µs:
# host-bound there too.
#
# </details>
#
# Where does your `reset_scan` land? Each pass of its loop loads a whole chunk, coalesced, so it
# keeps far more bytes in flight than a walk. But it does not load the next chunk while it scans
# this one, as the package does (pipelining, notebook 13, section 2). Time it and see.

# %% [markdown]
# ## 3. The target on your GPU
#
# **The question:** what is the target on your GPU? **The answer:** a ratio of your kernel's GPU
# time to the package's, so that it means the same on any GPU:
#
# > **The lab's target: at 16384×1024, your kernel's GPU time is at most 1.8 times the package's,
# > timed beside it on the same GPU.**
#
# The same rule reads in % floor too. Two kernels timed on one GPU share its floor, so their GPU
# times are in the inverse ratio of their % floors: $t_\text{yours} / t_\text{package} =
# \%_\text{package} / \%_\text{yours}$. At most 1.8 times the package's time is at least 1/1.8,
# about 55 %, of its % floor.
#
# It is a ratio because % floor does not carry over from one GPU to another: the package's own
# returns reach about 90 % of the H100's floor, and less on the course's other card (the fold "On
# the other card", under the table).
#
# Versions drift too. The reference was made with torch 2.11 and Triton 3.6 (its first line names
# them). The course pins torch 2.13 and Triton 3.9 (`requirements.txt`), and on a GPU
# you get the Triton that your CUDA torch brings. So the register counts and the effect of
# `tl.range` pipelining, both in question 2, may differ from the reference's on your machine. The next cell
# reads the rest of the lab's reference without printing it: the course's kernel and its variants
# wait for "Reading the reference", after the questions, so that you predict before you see them.

# %%
# Run this cell: it takes the variants' figures from the reference (read in section 2 by lab.read_reference), and
# the same kernels' counts as Triton 3.9 compiles them; it prints nothing, so that you predict before you see them
reference_lab = {k: r["% floor"] for k, r in reference.items()}  # (variant, shape) -> % floor
reference_us = {k: r["GPU µs"] for k, r in reference.items()}  # (variant, shape) -> GPU µs
resources = {k: r["resources"] for k, r in reference.items()}  # -> the compiled kernel's registers, smem, warps
# the reference's kernels compiled for sm_90 by Triton 3.9 on a CPU, not run (in the student handout)
COUNTS_39 = os.path.join(os.path.dirname(LAB_REFERENCE), "cpu-triton-3.9.0-lab-compile.txt")
with open(COUNTS_39, encoding="utf-8") as f:
    counts_header, _command, _columns, *count_lines = f.read().splitlines()
counts_39 = {}  # variant -> {"regs", "spills", "smem", "warps", "resident"}, as Triton 3.9 compiled it
for line in count_lines:
    *name, regs, spills, smem, warps, resident = line.split()
    counts_39[" ".join(name)] = dict(zip(["regs", "spills", "smem", "warps", "resident"],
                                         map(int, [regs, spills, smem, warps, resident])))

# %% [markdown]
# The table gives the target on the lab's H100: the package's % floor, the % floor your kernel must
# reach, and the GPU time it must stay under, at 16384×1024.

# %%
package_h100 = reference_lab[("rl.discounted_returns", "16384x1024")]  # the package, on the lab's H100
package_h200 = big_h200["rl.discounted_returns"]["% floor"]  # the package, in the committed H200 run (section 2's fold)
TARGET_SHARE = lab.TARGET_PCT / package_h100  # the target as a share of the package's % floor, on any GPU
targets = [{"GPU": gpu_name, "package: % floor": pkg_pct, "target: % floor at least": TARGET_SHARE * pkg_pct,
            "target: GPU µs at most": us / TARGET_SHARE}
           for gpu_name, us, pkg_pct in [("H100 (the lab's reference)", reference_us[("rl.discounted_returns", "16384x1024")],
                                          package_h100),
                                         ("H200 (the committed run)", big_h200["rl.discounted_returns"]["GPU µs"], package_h200)]]
print(f"the target: a GPU time at most {1 / TARGET_SHARE:.1f}× the package's, at 16384×1024")
print(profile.table(targets[:1], digits=3))  # the H100's row; the H200's is in the fold "On the other card"

# %% [markdown]
# <details><summary>Details: where the 1.8 comes from</summary>
#
# The target, 50 % of the floor, was set on the H100, where the package ran at 90.3 %. In one
# `time_lab` table your kernel and the package share a GPU and a floor, so their GPU times are in
# the inverse ratio of their % floors: 90.3/50 = 1.806.
# The course writes 1.8; `lab.target_verdict` uses the exact figure, as a % floor: your kernel's must
# reach 50/90.3, about 55 %, of the package's. The table applies that ratio.
#
# </details>
#
# <details><summary>On the other card: the target on the H200</summary>
#
# On the H200 of the committed run the package reached 79.0 % of the floor (section 2's fold). The
# same ratio asks your kernel there for at least 44 % of the H200's floor, and a GPU time at most
# 80.8 µs at 16384×1024, where the package took 44.7 µs.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the rule and the table, as the text states them (CI runs them; skip when reading)
assert round(package_h100, 1) == 90.3 and round(package_h200, 1) == 79.0
# "torch 2.11 and Triton 3.6" in both files; "the course pins torch 2.13 and Triton 3.9"
assert RES["versions"]["torch"].startswith("2.11") and RES["versions"]["triton"].startswith("3.6")
assert "torch 2.11" in lab_header and "triton 3.6" in lab_header
_pins = open(os.path.join("..", "requirements.txt"), encoding="utf-8").read()  # the course's pins, beside notebooks/
assert "torch==2.13" in _pins and "triton==3.9" in _pins
assert round(package_h100, -1) == 90 and round(package_h200, -1) == 80  # "about 90 % ... about 80 %"
assert round(100 * TARGET_SHARE) == 55 and round(1 / TARGET_SHARE, 1) == 1.8  # "55 %", "1.8 times"
assert lab.TARGET_PCT == 50 and TARGET_SHARE == lab.target_share()  # "The target, 50 % of the floor"; the share target_verdict uses
assert "H100" in lab_header  # "set on the H100": the lab's reference file, which gives the package's 90.3 %
assert round(TARGET_SHARE, 3) == 0.554 and round(lab.TARGET_PCT / 90.3, 3) == 0.554  # "50/90.3, about 55 %"
assert round(1 / TARGET_SHARE, 3) == round(90.3 / lab.TARGET_PCT, 3) == 1.806  # "90.3/50 = 1.806"
assert round(2 / TARGET_SHARE, 1) == 3.6  # question 1: half the target is "at most 3.6 times the package's" GPU time
assert round(TARGET_SHARE * package_h100) == lab.TARGET_PCT and round(TARGET_SHARE * package_h200) == 44  # the H200's target: 44 %
assert [(round(t["package: % floor"], 1), round(t["target: % floor at least"])) for t in targets] == [(90.3, 50), (79.0, 44)]
assert round(targets[0]["target: GPU µs at most"]) == 100  # "100 µs" on the H100
assert targets[1]["target: GPU µs at most"] == big_h200["rl.discounted_returns"]["GPU µs"] / TARGET_SHARE  # the H200's row
assert round(targets[1]["target: GPU µs at most"], 1) == 80.8 and round(big_h200["rl.discounted_returns"]["GPU µs"], 1) == 44.7
assert package_h200 < package_h100  # "less on the course's other card"
# the two forms agree on every row of the reference: % floor >= 55 % of the package's <=> GPU µs <= 1.8 × its
for (name, shape), p_ in reference_lab.items():
    if shape == "16384x1024" and abs(p_ - lab.TARGET_PCT) > 0.5:  # (away from the line, where the file's rounding decides)
        assert (p_ >= TARGET_SHARE * package_h100) == (reference_us[(name, shape)] <= targets[0]["target: GPU µs at most"])

# %% [markdown]
# `lab.target_verdict(rows)` applies the target to `rows`, a table from `lab.time_lab`: one line
# per kernel other than the package, ending in "met" or "not yet" (on a CPU, one line saying that
# nothing was timed). Question 1 judges it on the best variant you report, so a knob of question 2
# that closes the gap counts. The cell judges the baseline.

# %%
verdict = lab.target_verdict(baseline)
print(verdict)

# %% jupyter={"source_hidden": true}
# Checks: the baseline's verdict, and target_verdict's two verdicts on made-up rows (CI runs them; skip when reading)
assert verdict.endswith("not yet") if GPU else verdict.endswith("nothing was timed here")
made_up = [{"kernel": k, "B × T": "16384×1024", "% floor": p}
           for k, p in [("a", 50.5), ("b", 49.5), ("c", None), ("rl.discounted_returns", package_h100)]]
assert [line.rsplit(": ", 1)[1] for line in lab.target_verdict(made_up).splitlines()] == ["met", "not yet", "not yet"]
assert lab.target_verdict(made_up[:1]).endswith("no package row at that shape")

# %% [markdown]
# ## 4. One `torch.profiler` pass
#
# **The question:** which kernels does one call launch, and how long does each take on the GPU?
# **The answer:** the profiler records each kernel's name and its CUDA time, without the host's
# share.
#
# `lab.profile_once(fn)` runs `lab.check_small(fn)`, then profiles one call of `fn` at 16384×1024
# and returns one row per CUDA kernel, with its CUDA µs. With `summary=True` it also prints the
# profiler's own summary. On a CPU there is no CUDA kernel to record: it returns an empty list.

# %%
kernels = lab.profile_once(step_by_step, summary=True)
print(profile.table(kernels, digits=3))

# %% jupyter={"source_hidden": true}
# Checks: the profiler recorded the baseline's kernel on a GPU, nothing on a CPU (CI runs them; skip when reading)
if GPU:
    assert kernels, "the profiler recorded no CUDA kernel"
else:
    assert kernels == []

# %% [markdown]
# ## Exercises
#
# **Without a GPU, in this order** (6 of the lab's 10 points; the [rubric](#Rubric-for-the-lab) is
# at the end of the notebook):
#
# 1. Solve the checked exercise `resident_programs`, just below.
# 2. Run the baseline's `compile_for_h100` cell, after it.
# 3. Under Answer 1, paste your `reset_scan` and run question 1's lines. In the interpreter they
#    check your kernel and skip the timing.
# 4. Under Answer 2, write your prediction first. Then follow question 2's four steps "Without a
#    GPU".
# 5. Leave Answer 3 empty: the profiler needs a GPU.
# 6. Then open the folds of "Reading the reference", after the answer cells. Its printed table, with
#    no timings, you may read at any time.
#
# **With a GPU,** do the same, with each question's "With a GPU" lines, and answer question 3 too.
#
# **`resident_programs`** (checked; no GPU). Question 2 asks you to predict, among other things,
# how a knob changes the number of **resident programs**: the programs an SM holds at once
# (notebook 13, section 2). Write that count for any kernel, from what each program uses.
#
# * **Inputs:** `regs`, the registers each thread uses; `num_warps`, the warps of one program (32
#   threads each); `shared_bytes`, the shared memory one program uses (0: none).
# * **Returns:** an int, how many programs one SM of an H100 or H200 holds at once.
# * **The SM's limits:** 65,536 registers, 64 warps, 32 programs and 233,472 bytes (228 KiB) of
#   shared memory. A program is resident whole or not at all. The model ignores the GPU's rounding
#   to allocation units, and the 1 KiB of shared memory sm_90 reserves for each program.
#
# <details><summary>Hint 1: where to start</summary>
#
# Each limit on its own allows some number of programs. Which limit binds depends on the kernel, so
# compute all four and take the smallest.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Registers: one program holds `regs` registers in each of its `32 * num_warps` threads. How many
#   such programs fit in 65,536 registers?
# * Warps: how many programs of `num_warps` warps fit in 64 warps?
# * Programs: never more than 32.
# * Shared memory: how many programs of `shared_bytes` fit in 233,472 bytes? None needed where
#   `shared_bytes` is 0.
# * A program that does not fit whole does not count: divide with `//`.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# * 48 registers, 4 warps: 48 × 128 = 6,144 registers a program, 65,536 // 6,144 = 10.
# * 32 registers, 1 warp: registers allow 64 and warps 64, but an SM holds at most 32 programs.
# * 32 registers, 4 warps, 40,000 bytes of shared memory: 233,472 // 40,000 = 5.
#
# ```python
# print(resident_programs(48, 4, 0), resident_programs(32, 1, 0), resident_programs(32, 4, 40000))  # must print 10 32 5
# ```
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# by_registers = 65536 // (___)  # ___: the registers of one program
# by_shared = 233472 // shared_bytes if shared_bytes else 32
# return min(32, 64 // num_warps, by_registers, by_shared)
# ```
#
# </details>

# %%
def resident_programs(regs, num_warps, shared_bytes):
    # YOUR CODE
    raise NotImplementedError

# %%
exercises.attempt("resident_programs", resident_programs)

# %% [markdown]
# **Without a GPU: your kernel compiled for an H100** (optional; under a minute on a CPU). The
# interpreter runs your kernel as NumPy, so it cannot say how many registers each thread would use
# on a GPU. Triton's compiler can, with no GPU present. It compiles a kernel for an H100 or H200,
# whose architecture NVIDIA calls `sm_90`, down to the GPU's assembly. Then `ptxas`, NVIDIA's
# assembler, which ships inside the Triton wheel, reports the registers each thread uses, and the
# compiled kernel records its shared memory. The handout's `tools/compile_sm90.py` does this for
# every kernel of the package; `lab.compile_for_h100` does it for yours.
#
# `lab.compile_for_h100(fn, chunk, num_warps, resident_programs)` calls `fn(rewards, terminated,
# gamma, chunk)` once on a small CPU input and compiles each kernel that the call launches, instead of
# running it. It returns one row per kernel: its warps, registers a thread, shared bytes, and the
# resident programs that your `resident_programs` makes of them (`n/a` until you solve it).
# `num_warps`, if given, replaces the launch's own, so you need no copy of your function for each warp
# count. Where Triton has no compiler for NVIDIA GPUs, it says so and returns an empty list.
#
# `lab.compile_for_h100` lives in `rltriton_lite/lab.py` with the other tools. It reaches into
# Triton's internals, and it was tried with Triton 3.9 only, the version `requirements.txt` pins.
# On another version it warns; if it then fails, install that one (`pip install "triton==3.9.*"`)
# and run its cell again.
#
# The cell below names it `compile_for_h100`, with your `resident_programs` passed in, and compiles
# the baseline at Triton's default of 4 warps and at one warp (its chunk is only a label:
# `step_by_step` ignores it).

# %%
def compile_for_h100(fn, **knobs):  # lab's, with your resident_programs (as it is at each call) for the last column
    return lab.compile_for_h100(fn, resident_programs=resident_programs, **knobs)


walk_compiled = compile_for_h100(step_by_step) + compile_for_h100(step_by_step, num_warps=1)
print(profile.table(walk_compiled))
if any(r["resident programs"] is None for r in walk_compiled):
    print("resident programs: n/a; solve resident_programs first, then run this cell again")

# %% [markdown]
# `step_by_step` uses no shared memory and few registers: the table above prints 20 a thread at 4
# warps and 18 at one warp (compiled by Triton 3.9; another Triton may print a few more or fewer).
# At 20 registers, the registers allow 65,536 // (20 × 128) = 25 of its 4-warp programs, more than
# its warps allow. So its warps set the count: an SM holds 64 / 4 = 16 of its 4-warp programs, and
# 32 of its 1-warp programs, the cap on programs.
#
# **A model to predict with: resident programs × chunk.** For your `reset_scan`, multiply the
# resident programs by its chunk (at most the row's 1024 steps). That product counts the steps an
# SM's programs *could* have in flight. A worked row: at a chunk of 256, with 16 resident programs,
# as many as `step_by_step`'s 4-warp programs, the product is 16 × 256 = 4,096 steps.
#
# **A threshold from Little's law: necessary, not sufficient.** To reach the floor, an SM needs
# at least about 1,500 steps of loads in flight on the H100 that ran the lab's reference. That is
# Little's law (notebook 13, section 2): the load bandwidth × the latency, shared among the SMs. So a product below the threshold rules the floor out; a product
# above it, such as the worked row's 4,096, does not promise it. A program has its chunk in flight
# only part of each trip round its loop: while its warps wait at a barrier or scan, it loads
# nothing. Above the threshold, the product ranks variants roughly: the
# reference's table, under "Reading the reference", shows one pair it ranks wrongly.
#
# Question 2 asks you to predict with the product and, where the reference disagrees, to say why.
#
# <details><summary>Sources: where the 1,500 steps come from (and the H200's figure), and what the product ignores</summary>
#
# * A step of returns moves 9 bytes: it loads 5 (the reward, 4, and the flag, 1) and stores 4. At
#   the floor, loads are 5/9 of the copy bandwidth. The latency, 600 ns, is assumed in notebook 13,
#   not measured.
# * **H100** (the reference's card): its copy bandwidth in the lab's reference file, 3.02 TB/s,
#   × 5/9 = 1.68 TB/s; × 600 ns = 1.01 MB in flight; ÷ 132 SMs (the H100 env file) = 7.6 KB per
#   SM; ÷ 5 bytes = about 1,500 steps.
# * The product takes every program to have its whole chunk in flight all the time. It ignores
#   the barriers between warps and the scan's own time, so it ranks some variants wrongly:
#   "Reading the reference" shows one. It needs only the compiler's table, no GPU.
# * **On the other card, the H200** (the committed run): 4.27 TB/s × 5/9 = 2.37 TB/s; × 600 ns =
#   1.42 MB; ÷ 132 SMs = 10.8 KB per SM (about 11 KB); ÷ 5 bytes = about 2,200 steps.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the baseline's compiled rows as the text reads them (CI runs them; skip when reading)
if walk_compiled:  # (empty only where Triton cannot compile for NVIDIA GPUs)
    assert [(r["num_warps"], r["shared bytes"]) for r in walk_compiled] == [(4, 0), (1, 0)]  # "no shared memory"
    assert all(r["registers"] <= 32 for r in walk_compiled)  # on any Triton: 65,536 // (regs × 32 w) >= 64 // w
    assert all(exercises.SM_REGISTERS // (r["registers"] * 32 * r["num_warps"]) >= 64 // r["num_warps"] for r in walk_compiled)
    walk_fit = {r["num_warps"]: exercises._resident_reference(r["registers"], r["num_warps"], r["shared bytes"])
                for r in walk_compiled}  # the checker's own count
    assert walk_fit == {4: 16, 1: 32}  # "16 of its 4-warp programs, and 32 of its 1-warp programs"
    assert all(r["resident programs"] in (None, walk_fit[r["num_warps"]]) for r in walk_compiled)  # yours, once solved
if walk_compiled and triton.__version__.startswith("3.9"):  # the counts the text reads, as Triton 3.9 prints them
    assert [(r["num_warps"], r["registers"]) for r in walk_compiled] == [(4, 20), (1, 18)]  # "20 ... at 4 warps and 18"
assert exercises.SM_REGISTERS // (20 * 128) == 25 > 64 // 4 == 16  # "65,536 // (20 × 128) = 25 ..., more than its warps allow"
assert lab.COMPILE_TRIED == "3.9"  # "tried with Triton 3.9 only"
# "how many are enough": Little's law for returns on the H200, from notebook 13's latency and SM count (derived)
_nb13 = open("13_appendix_performance.ipynb", encoding="utf-8").read()
assert "LATENCY_S = 600e-9" in _nb13 and "H200_SMS = 132" in _nb13  # notebook 13's assumed 600 ns, the H200's 132 SMs
RETURNS_READ = 4 + 1  # bytes loaded per float32 step of returns: the reward and the flag
assert lab.STEP_BYTES - 4 == RETURNS_READ  # "loads 5 ... and stores 4"
_load_bw = RES["copy_bandwidth_Bps"] * RETURNS_READ / lab.STEP_BYTES  # the loads at the floor: 5 of every 9 bytes
_per_sm = _load_bw * 600e-9 / 132  # bytes of loads in flight per SM at the floor (derived)
assert (round(RES["copy_bandwidth_Bps"] / 1e12, 2), round(_load_bw / 1e12, 2)) == (4.27, 2.37)  # "4.27 TB/s × 5/9 = 2.37"
assert round(_load_bw * 600e-9 / 1e6, 2) == 1.42 and round(_per_sm / 1e3, 1) == 10.8  # "1.42 MB", "10.8 KB per SM"
assert round(_per_sm / 1e3) == 11 and round(_per_sm / RETURNS_READ, -2) == 2_200  # "about 11 KB", "about 2,200 steps"
import re  # noqa: E402

# the same on the H100 that ran the reference: its copy bandwidth from the reference file's header, its SMs from the env file
_h100_bw = 1e12 * float(re.search(r"copy bandwidth ([\d.]+) TB/s", lab_header)[1])
_h100_env = open(os.path.join(profile.results_folder(), "checks", "H100-2026-12-07-env.txt"), encoding="utf-8").read()
assert "H100" in _h100_env and " SMs 132" in _h100_env  # "÷ 132 SMs (the H100 env file)"
_h100_load = _h100_bw * RETURNS_READ / lab.STEP_BYTES
H100_ENOUGH = _h100_load * 600e-9 / 132 / RETURNS_READ  # steps in flight per SM that Little's law asks for on the H100
assert (round(_h100_bw / 1e12, 2), round(_h100_load / 1e12, 2), round(_h100_load * 600e-9 / 1e6, 2)) == (3.02, 1.68, 1.01)
assert round(_h100_load * 600e-9 / 132 / 1e3, 1) == 7.6 and round(H100_ENOUGH, -2) == 1_500  # "7.6 KB", "about 1,500 steps"
assert 16 * 256 == 4_096 > max(H100_ENOUGH, _per_sm / RETURNS_READ)  # the worked row: "16 × 256 = 4,096", above both thresholds

# %% [markdown]
# **The lab** (your teacher reads your answers): three answer cells, scored out of 10 with a GPU
# and out of 6 without (your teacher rescales), by the [rubric](#Rubric-for-the-lab) at the end.
#
# * **Without a GPU:** the checklist at the top of this section says what to hand in.
# * **With a GPU** (sections 1 to 4):
#   1. Answer 1: your `reset_scan`, with `lab.time_lab`'s table and `lab.target_verdict`'s line.
#   2. Answer 2: your prediction for the three knobs; a `lab.time_lab` table of three or more
#      variants, one knob changed in each; one sentence per variant.
#   3. Answer 3: `lab.profile_once`'s table for your best variant, its CUDA time set against
#      `lab.time_lab`'s GPU µs.
#
# The grader runs the notebook from top to bottom, then collects each answer cell and the cells
# under it, up to the next answer cell or heading. So put all you hand in there, your kernel's code
# included, and check it with Restart & Run All. Each question gives the lines to put under its
# answer. Without a GPU those lines still run: they check your kernel in the Triton interpreter and
# say what they skipped.
#
# **Variants to try** (question 2). Change one knob at a time, and time each variant at the large
# shape, as in `lab.time_lab(reset_scan, chunk=512, name="chunk 512", shapes=[(16384, 1024)])`.
#
# * **Chunk size**: `chunk=` 64, 128, 256, 512, 1024. A longer chunk means more bytes per load
#   instruction and fewer trips round the loop, but more registers per thread.
# * **`num_warps`**: a launch option of your kernel, `kernel[(B,)](..., CHUNK=chunk, num_warps=w)`,
#   with w = 1, 2, 4, 8: how many warps share one chunk's loads. Write a copy of `reset_scan` that
#   takes `num_warps` as a fifth argument, say `reset_scan_w`, and time
#   `lambda r, d, gamma, chunk: reset_scan_w(r, d, gamma, chunk, 1)` with `name="num_warps 1"`.
# * **Pipelining**: loop over the chunks with `tl.range(0, n_chunks, num_stages=2)` (or 3) instead
#   of `range`, so that the next chunk's loads are issued while this one is scanned (notebook 13,
#   section 2). The carry still passes chunk to chunk.
# * Optional: several rows per program, a 2-D tile, such as your `tiled_scan` from notebook 13's
#   exercises. Time `lambda r, d, gamma, chunk: tiled_scan(r, d, gamma, chunk, 4)` for 4 rows a
#   program, with `shapes=[(4096, 128)]`, and compare `rows` 1, 2, 4 and 8.
#
# The lists that `lab.time_lab` returns join with `+` into one table of all your variants:
# `variants = lab.time_lab(...) + lab.time_lab(...)`, then `print(profile.table(variants, digits=3))`
# and `print(lab.target_verdict(variants))`. Give each lambda a `name`: without one, its rows read
# "yours". Do not name a variable `lab`: it would hide the tools.
#
# Without a checker:
#
# *(Answer each in its cell below: your teacher's grader collects the answers from
# them.)*
#
# 1. **Your kernel, timed.** In the cells under Answer 1, paste your `reset_scan` from notebook 00c,
#    its kernel and its function. Under them, add a cell with `yours = lab.time_lab(reset_scan)`,
#    `print(profile.table(yours, digits=3))` and `print(lab.target_verdict(yours))`. Give your kernel's GPU
#    time at 16384×1024 as a multiple of the package's, against the target. The target is judged on
#    the best variant you report, your kernel as written or one of question 2's: name that variant
#    here, and come back to this answer after question 2 if a knob helped.
# 2. **The variants.** First, before you time any variant or open a fold of "Reading the reference",
#    write your prediction under Answer 2: for each of the three knobs above (chunk size, `num_warps`,
#    pipelining), which way it should move the GPU time at 16384×1024, from a chunk of 256 on
#    Triton's default 4 warps, and why, in the terms of notebook 13's three rules: sectors,
#    bytes in flight, resident programs, registers, barriers between warps. This part needs no GPU.
#
#    **With a GPU:** a table of at least three variants, one knob changed in each, with the GPU µs
#    and % floor at 16384×1024. For each, one sentence: did the time move as you predicted, and
#    why, in the same terms?
#
#    **Without a GPU:**
#
#    * **Step 1.** Compile your kernel under Answer 2 in at least three variants, one knob changed
#      in each: `mine = compile_for_h100(reset_scan) + compile_for_h100(reset_scan, num_warps=1) +
#      compile_for_h100(reset_scan, chunk=1024)`, then `print(profile.table(mine))`.
#    * **Step 2.** Write your prediction: which variant keeps more programs resident and, from its
#      steps in flight per SM, what that predicts for its GPU time.
#    * **Step 3.** Under "Reading the reference", a printed table gives each reference variant's
#      registers, shared memory and resident programs, as Triton 3.6 compiled the kernel the H100
#      ran. It holds no timings. Set your kernel's counts beside the table's.
#    * **Step 4.** Open the fold "Step 4" under the reference's table. It sets the H100's % floor
#      beside those counts, with a worked row. Write one sentence per variant: did the H100's %
#      floor move as that count predicted, and if not, why not?
# 3. **The profiler.** Profile your best variant in a cell under Answer 3:
#    `kernels = lab.profile_once(best, chunk=c)`, then `print(profile.table(kernels, digits=3))`, where
#    `best` is its function (a lambda will do) and `c` its chunk. Name your kernel and give its
#    CUDA time. Does it agree with `time_lab`'s GPU µs for that variant? If not, why not?

# %% [markdown] tags=["answer-1"]
# **Answer 1.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-2"]
# **Answer 2.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-3"]
# **Answer 3.** *Your answer here (code for it: in cells under this one).*

# %% [markdown]
# ### Reading the reference
#
# **The question:** why did the knobs move the course's own `reset_scan` as they did?
#
# **One rule for this part.** The table printed below holds no timings: read it at any time (Step 3
# uses it). The folds hold the reference's timings: open them only after you have written your
# prediction for question 2.
#
# <details><summary>The short answer (open it after writing your prediction)</summary>
#
# Each knob that helped put more of this row's bytes in flight for more of the time. The one that
# did not, pipelining, most likely added work through shared memory that this kernel did not need
# (a reading of the numbers, not profiled: see "Pipelining" in the fold further down).
#
# </details>
#
# The course's own answer was timed on an H100 (section 3's file). Its figures are in the folds
# below. That file, `benchmarks/results/checks/H100-2026-12-06-lab.txt`, is in your handout with
# every variant's timings: like the folds, it waits until your prediction is written.
#
# <details><summary>The reference's baseline (open it after writing your prediction)</summary>
#
# At 16384×1024, the course's answer to `reset_scan` at the lab's chunk of 256 ran at 45 % of the
# H100's floor, and `step_by_step` at 3 %. It took 112.2 µs against the H100's target of 100 µs:
# not yet. Two of the lab's knobs, each changed alone, took it past the target: fewer warps, and a
# longer chunk.
#
# </details>

# %% [markdown]
# The cell below prints the reference's rows at 16384×1024 (no timings). Each row gives the variant's
# compiled kernel: its registers per thread, shared memory and resident programs per SM, counted as
# your `resident_programs` counts them (by the checker's own count, `exercises._resident_reference`).
#
# Its counts are Triton 3.6's, the kernel the H100 ran: set your own counts beside them (Step 3).
# Each variant's H100 % floor is in the fold under the table (Step 4).
#
# <details><summary>On the other Triton version: 3.9, the one your own compile uses</summary>
#
# `compile_for_h100` counts with the Triton you have: 3.9, if you installed `requirements.txt`.
# Triton 3.9 gives the same resident programs as 3.6 in 8 of the 9 rows, all but the chunk of 512:
# there it uses 32 registers a thread, as at the chunk of 256, and so gives 16 resident programs
# instead of 12 (`benchmarks/results/checks/cpu-triton-3.9.0-lab-compile.txt`, compiled without a
# GPU, never run). Compare your kernel's resident programs with the table's, more than its registers.
#
# </details>
#
# The file labels the course's own answer to `reset_scan` "reset_scan solution, chunk N": a chunk
# of N steps, on Triton's default 4 warps. A label that goes on after the chunk, such as
# "reset_scan, chunk 256, num_warps 1", is that answer with the knob it names changed.

# %%
BIG = "16384x1024"
solution_pct = reference_lab[("reset_scan solution, chunk 256", BIG)]  # the baseline fold's figures, for its Checks
walk_pct = reference_lab[("step_by_step (13's baseline)", BIG)]  # this notebook's step_by_step
solution_us = reference_us[("reset_scan solution, chunk 256", BIG)]
rows, reference_resident = [], {}  # the table's rows; variant -> its resident programs per SM (Triton 3.6's kernel)
for name in ["reset_scan solution, chunk 256", "reset_scan, chunk 256, num_warps 2", "reset_scan, chunk 256, num_warps 1",
             "reset_scan, chunk 256, num_warps 8", "reset_scan solution, chunk 512", "reset_scan solution, chunk 1024",
             "reset_scan solution, chunk 2048", "reset_scan, chunk 256, tl.range stages 2",
             "reset_scan, chunk 256, num_warps 1, tl.range stages 2"]:
    r, r39 = resources[(name, BIG)], counts_39[name]  # Triton 3.6's kernel (the H100 ran it), Triton 3.9's
    resident = reference_resident[name] = exercises._resident_reference(r["regs"], r["warps"], r["smem"])  # the checker's
    rows.append({"variant": name, "H100 % floor": reference_lab[(name, BIG)], "warps": r["warps"],
                 "3.6 regs": r["regs"], "3.6 smem": r["smem"], "3.6 resident": resident,
                 "3.9 regs": r39["regs"], "3.9 smem": r39["smem"], "3.9 resident": r39["resident"]})
columns = {"variant": "variant, at 16384×1024", "warps": "warps",
           "3.6 regs": "Triton 3.6: regs", "3.6 smem": "smem B", "3.6 resident": "resident"}  # the kernel the H100 ran
print(f"your Triton: {triton.__version__}; set your counts beside these Triton 3.6 columns (Step 3)")
print(profile.table(rows, columns, digits=3))

# %% [markdown]
# <details><summary>Step 4: the H100's % floor beside the kernel it ran (Triton 3.6's counts), and a worked row (open it after your prediction)</summary>
#
# The table above, with each variant's H100 % floor:
#
# | variant, at 16384×1024 | warps | Triton 3.6: regs | smem B | resident | H100 % floor |
# | --- | --- | --- | --- | --- | --- |
# | reset_scan solution, chunk 256 | 4 | 31 | 36 | 16 | 44.6 |
# | reset_scan, chunk 256, num_warps 2 | 2 | 32 | 18 | 32 | 57.9 |
# | reset_scan, chunk 256, num_warps 1 | 1 | 52 | 0 | 32 | 68.2 |
# | reset_scan, chunk 256, num_warps 8 | 8 | 32 | 72 | 8 | 26.5 |
# | reset_scan solution, chunk 512 | 4 | 40 | 36 | 12 | 58.5 |
# | reset_scan solution, chunk 1024 | 4 | 48 | 4096 | 10 | 63.8 |
# | reset_scan solution, chunk 2048 | 4 | 72 | 2048 | 7 | 35.7 |
# | reset_scan, chunk 256, tl.range stages 2 | 4 | 31 | 1060 | 16 | 41.0 |
# | reset_scan, chunk 256, num_warps 1, tl.range stages 2 | 1 | 54 | 1280 | 32 | 43.2 |
#
# **What the product marks, and what it does not.** Every row's product passes the H100's threshold
# of 1,500 steps per SM, from 8 × 256 = 2,048 up, yet reaches only 26.5–68.2 % of the floor. The
# threshold is necessary, not sufficient: no row has its chunks in flight all the time, because
# barriers and the scan take part of every trip. Above the threshold, the product ranks rows only
# roughly: "Where resident programs × chunk misleads", in the next fold, shows one pair it ranks wrongly.
#
# **A worked row: the chunk of 512.** Triton 3.6 gave it 40 registers a thread and 12 resident
# programs, against 16 at the chunk of 256. The product ranks it higher, 12 × 512 = 6,144 against
# 16 × 256 = 4,096. The H100's % floor rose from 44.6 % to 58.5 %, as ranked.
#
# </details>
#
# <details><summary>The reference's reading of each knob (open it after writing your prediction)</summary>
#
# **Fewer warps per program.** With 4 warps, a chunk of 256 steps gives each of 128 threads 2
# steps, and the scan crosses warps: they exchange partial results through shared memory and wait
# for each other at a barrier (notebook 13, section 4), as the carry's `tl.sum` does. In plain
# terms: the 32 threads of one warp can hand values to each other directly (a **shuffle**), but
# threads in different warps cannot, so they write to shared memory and all wait until every warp
# has written. While a program waits there, none of its loads are in flight. With one warp, each
# lane holds 8 steps, the scan runs in registers and shuffles, and the kernel uses no shared memory. An SM also holds twice
# as many one-warp programs at once, within its 32 **resident programs** and 64 warps (notebook 13,
# section 2). Both effects raise the bytes in flight.
#
# **Longer chunks.** Each trip round the loop pays the scan's fixed cost (the barrier, the carry's
# sum) once, whatever the chunk's size. A chunk of 1024 steps loads four times the bytes of a chunk
# of 256 for about the same cost, so more of the time has loads in flight.
#
# **Why the chunk of 2048 falls back, a hypothesis.** A chunk of 2048 steps is twice the row, so
# half of it is padding, which loads nothing but is still worked on. Like the pipelining reading
# below, this fits the numbers but was not profiled.
#
# * **Occupancy.** Each thread holds 16 steps instead of 8 and needs 72 registers instead of 48, so
#   an SM's 65,536 registers hold 7 of these 4-warp programs at once instead of 10.
# * **Little's law.** The product, 7 × 1024 = 7,168, is above 1,500, but the loads actually in
#   flight are fewer: the chunk of 1024 reaches only 64 %. While they are too few, throughput is
#   proportional to the resident programs (notebook 13, section 2). Fewer programs alone would take
#   the % floor from about 64 % to about 45 % (× 7/10). Yet it fell to about 36 %.
# * **Doubled scan work.** The scan runs over all 2048 positions, twice the work of the chunk of
#   1024, with none of the program's loads in flight meanwhile. That could account for the rest.
#
# **Where resident programs × chunk misleads.** The model ranks the chunk of 1024 on 4 warps, 10
# programs × 1024 = 10,240 steps in flight per SM, above one warp at a chunk of 256, 32 × 256 =
# 8,192. The reference ran the other way: 63.8 % of the floor against one warp's 68.2 %. The count
# leaves out what the 4 warps still pay on every trip: they meet at a barrier, and scan, with none
# of their loads in flight.
#
# **Pipelining.** All six pipelined variants timed, with `tl.range(..., num_stages=2)` or 3, were
# slower than the same variant unstaged, though the package pipelines its own loop. The staged loads go through shared memory, which costs instructions and a
# wait of their own, and here the other programs on the SM already supply the overlap that staging
# would add. This fits the numbers but was not profiled: a hypothesis you could test with
# `profile_once` (section 4). The package's kernel differs from yours in its vector loads and its
# tile (notebook 13, section 4), one reason the same knob can help one and not the other.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the reference's figures and the reading of each knob above, and "What you now know"
# (placed after the reveal, so that no assert shows the knobs' order early; CI runs them, skip when reading)
# the reference's baseline, as its fold reads it
assert round(solution_pct) == 45 and round(walk_pct) == 3
assert solution_us == 112.2 and solution_us > targets[0]["target: GPU µs at most"]  # "112.2 µs": not yet
# one knob changed alone passes the target (the variants: chunk, num_warps, tl.range's stages)
one_knob = {name: pct for (name, shape), pct in reference_lab.items() if shape == "16384x1024" and (
    name.startswith("reset_scan solution, chunk ") or (name.startswith("reset_scan, chunk 256, ") and name.count(",") == 2))}
assert max(one_knob.values()) >= lab.TARGET_PCT
# the reference's reading of each knob, on its rows
pct = {name: p for (name, shape), p in reference_lab.items() if shape == BIG}
# fewer warps per program: better, down to one warp, which needs no shared memory at all
assert pct["reset_scan, chunk 256, num_warps 8"] < pct["reset_scan solution, chunk 256"] \
    < pct["reset_scan, chunk 256, num_warps 2"] < pct["reset_scan, chunk 256, num_warps 1"]
assert resources[("reset_scan, chunk 256, num_warps 1", BIG)]["smem"] == 0
# longer chunks: better up to 1024 steps, then worse, as the registers a thread needs grow
assert pct["reset_scan solution, chunk 256"] < pct["reset_scan solution, chunk 512"] < pct["reset_scan solution, chunk 1024"]
assert pct["reset_scan solution, chunk 2048"] < pct["reset_scan solution, chunk 512"]
assert resources[("reset_scan solution, chunk 2048", BIG)]["regs"] == 72 and resources[
    ("reset_scan solution, chunk 1024", BIG)]["regs"] == 48  # the whole chunk's registers, half of it masked at T = 1024
REGISTERS_PER_SM = 65_536  # 32-bit registers per SM of an H100 or H200
assert exercises.SM_REGISTERS == REGISTERS_PER_SM  # "an SM's 65,536 registers"
fit = {}  # chunk -> its 4-warp programs that an SM holds at once (its registers bind: 32 programs and 16 warps allow more)
for c in (1024, 2048):
    r = resources[(f"reset_scan solution, chunk {c}", BIG)]
    fit[c] = exercises._resident_reference(r["regs"], r["warps"], r["smem"])
    assert fit[c] == REGISTERS_PER_SM // (r["regs"] * 32 * r["warps"])  # the registers bind
assert fit == {1024: 10, 2048: 7} and max(fit.values()) <= min(32, 64 // 4)  # "7 at once instead of 10", under the caps
assert pct["reset_scan solution, chunk 1024"] == 63.8  # "from about 64 %"
in_proportion = pct["reset_scan solution, chunk 1024"] * fit[2048] / fit[1024]  # "about 45 %, yet it fell to about 36 %"
assert round(in_proportion) == 45 and pct["reset_scan solution, chunk 2048"] == 35.7 < in_proportion - 5
# "what the product marks": every reference row's resident programs × chunk (at most the row's 1024) exceeds the H100's
# threshold, from 8 × 256 = 2,048 up, yet reaches only 26.5–68.2 % of the floor; 7 × 1024 = 7,168 for the chunk of 2048
_product = {name: reference_resident[name] * min(int(re.search(r"chunk (\d+)", name)[1]), 1024) for name in reference_resident}
assert min(_product.values()) == _product["reset_scan, chunk 256, num_warps 8"] == 8 * 256 == 2_048 > H100_ENOUGH
assert (min(pct[n] for n in _product), max(pct[n] for n in _product)) == (26.5, 68.2)  # "26.5–68.2 %"
assert _product["reset_scan solution, chunk 2048"] == 7 * 1024 == 7_168 and _product["reset_scan solution, chunk 512"] == 6_144
assert _product["reset_scan solution, chunk 256"] == 4_096  # the worked row: "6,144 against 4,096"
# pipelining never helped this kernel: every staged variant is below its unstaged twin
assert len([n for n in pct if "tl.range stages" in n]) == 6  # "all six pipelined variants timed"
for name in [n for n in pct if "tl.range stages" in n]:
    twin = name.split(", tl.range")[0]  # the same variant unstaged: the solution's own row at 4 warps
    twin = twin if twin in pct else twin.replace("reset_scan,", "reset_scan solution,")
    assert pct[name] < pct[twin], (name, twin)
# "where resident programs × chunk misleads": the chunk of 1024 has more steps in flight than one warp, yet is slower
_one_warp = resources[("reset_scan, chunk 256, num_warps 1", BIG)]
_in_flight = {name: exercises._resident_reference(r["regs"], r["warps"], r["smem"]) * min(chunk, 1024)
              for name, chunk, r in [("reset_scan solution, chunk 1024", 1024, resources[("reset_scan solution, chunk 1024", BIG)]),
                                     ("reset_scan, chunk 256, num_warps 1", 256, _one_warp)]}
assert _one_warp["smem"] == 0 and resources[("reset_scan solution, chunk 1024", BIG)]["smem"] * 32 < 233_472  # smem binds neither
# the printed columns: each reference row's resident programs, from its registers, shared memory and warps
assert list(columns)[2:] == [f"3.6 {c}" for c in ("regs", "smem", "resident")] and len(columns) == 5  # "Triton 3.6's"
# the fold's table of Triton 3.6's counts (the kernel the H100 ran), as written in this notebook
_nb = open("13b_gpu_lab.ipynb", encoding="utf-8").read()
for r in rows:
    assert (f"| {r['variant']} | {r['warps']} | {r['3.6 regs']} | {r['3.6 smem']} | {r['3.6 resident']} | "
            f"{r['H100 % floor']} |") in _nb, r["variant"]
assert [r["3.6 resident"] for r in rows] == list(reference_resident.values())
# the Triton 3.9 columns, against the committed file read line by line: its header, its variants (every reference
# row with resources), and each row's counts, with the checker's own count of its resident programs
assert "triton 3.9" in counts_header and "torch 2.13" in counts_header and "without a GPU" in counts_header
assert _command.startswith("# command: python ") and "lab_compile_counts.py" in _command  # the script that wrote it
assert set(counts_39) == {name for (name, _), r in reference.items() if r["resources"]}
_lines = open(COUNTS_39, encoding="utf-8").read().splitlines()
for r in rows:
    (_line,) = [x for x in _lines if x.startswith(r["variant"] + "  ")]
    regs_, spills_, smem_, warps_, resident_ = map(int, _line[len(r["variant"]):].split())
    assert (r["3.9 regs"], r["3.9 smem"], r["3.9 resident"], r["warps"]) == (regs_, smem_, resident_, warps_), _line
    assert resident_ == exercises._resident_reference(regs_, warps_, smem_) and spills_ == 0
# the worked row: "Triton 3.6 gave it 40 registers a thread and 12 resident programs"; Triton 3.9's sentence:
# "the same resident programs in 8 of the 9 rows, all but the chunk of 512, where it gives 16 instead of 12"
assert sum(r["3.6 resident"] == r["3.9 resident"] for r in rows) == 8 and len(rows) == 9  # "in 8 of the 9 rows"
assert [r["variant"] for r in rows if r["3.6 resident"] != r["3.9 resident"]] == ["reset_scan solution, chunk 512"]
_c512 = [r for r in rows if r["variant"] == "reset_scan solution, chunk 512"][0]
assert (_c512["3.6 regs"], _c512["3.6 resident"], _c512["3.9 regs"], _c512["3.9 resident"]) == (40, 12, 32, 16)
# the worked row: the chunk of 512 against the chunk of 256, on each Triton's columns and the H100's % floor
_c256 = [r for r in rows if r["variant"] == "reset_scan solution, chunk 256"][0]
assert (_c256["3.9 regs"], _c256["3.9 resident"], _c256["3.6 resident"]) == (32, 16, 16)  # "the same as the chunk of 256"
assert (_c512["3.6 resident"] * 512, _c256["3.6 resident"] * 256) == (6_144, 4_096)  # "6,144 against 4,096"
assert (_c256["H100 % floor"], _c512["H100 % floor"]) == (44.6, 58.5)  # "rose from 44.6 % to 58.5 %"
assert reference_resident == {"reset_scan solution, chunk 256": 16, "reset_scan, chunk 256, num_warps 2": 32,
                              "reset_scan, chunk 256, num_warps 1": 32, "reset_scan, chunk 256, num_warps 8": 8,
                              "reset_scan solution, chunk 512": 12, "reset_scan solution, chunk 1024": 10,
                              "reset_scan solution, chunk 2048": 7, "reset_scan, chunk 256, tl.range stages 2": 16,
                              "reset_scan, chunk 256, num_warps 1, tl.range stages 2": 32}
assert all(name in pct for name in reference_resident) and len(rows) == 9  # "the reference's rows at 16384×1024"
assert _in_flight == {"reset_scan solution, chunk 1024": 10_240, "reset_scan, chunk 256, num_warps 1": 8_192}
assert (pct["reset_scan solution, chunk 1024"], pct["reset_scan, chunk 256, num_warps 1"]) == (63.8, 68.2)
# "What you now know"
assert all(one_knob[name] >= lab.TARGET_PCT for name in ["reset_scan, chunk 256, num_warps 1", "reset_scan, chunk 256, num_warps 2",
                                                     "reset_scan solution, chunk 512", "reset_scan solution, chunk 1024"])

# %% [markdown]
# ## What you now know
#
# * **Three figures per call.** Wall time includes the host's work; GPU time is the kernels alone,
#   from CUDA-graph replays; % floor is the floor ÷ the GPU time, on your GPU's copy bandwidth. At
#   4096×128 the package's call is host-bound.
#
# * **% floor differs between GPUs,** so the lab's target is a ratio: your kernel's GPU time against
#   the package's, timed on the same GPU.
#
# * **The package against a walk.** On the H100 the package's returns run at about 90 % of the
#   floor, `step_by_step` at about 3 %: one step at a time keeps too few bytes in flight.
#
# * **The knobs, on the course's own `reset_scan`** (an H100): "Reading the reference" says which
#   moved it and why.
#
#   <details><summary>In short (open it after writing your prediction)</summary>
#
#   At a chunk of 256 on 4 warps it ran at 45 % of the floor. Fewer warps per program (2 or 1) or a
#   longer chunk (512 or 1024 steps), each changed alone, met the target. Pipelining with
#   `tl.range` lowered all six variants timed with it.
#
#   </details>
#
# * **The profiler** names each kernel that one call launches and gives its CUDA time, without the
#   host's share.

# %% [markdown]
# ## Rubric for the lab
#
# Your teacher scores the three answer cells of the exercises by this table, one column per path.
#
# | | points | with a GPU | without a GPU |
# | --- | --- | --- | --- |
# | Q1, correct | 2 | your kernel passes its check in notebook 00c, and every variant you report passes `lab.check_small`, which `time_lab` runs first: its output equals `rl.discounted_returns` (section 1) | the same, in the interpreter |
# | Q1, the target | 2 | the best variant you report meets section 3's target: 2; half of it (a GPU time at most 3.6 times the package's): 1 | — |
# | Q2, the prediction | 2 | written before any timing, graded on its reasons, not on whether the GPU agreed | the same |
# | Q2, the table | 1 | `time_lab`'s table of at least three variants, one knob changed in each | `compile_for_h100`'s table of at least three variants, one knob changed in each |
# | Q2, the sentences | 1 | one per variant: did its GPU time move as predicted, and why? | one per variant: did the H100's reference row move as its resident programs predicted? |
# | Q3, the profiler | 2 | your kernel's CUDA time, set against `time_lab`'s GPU µs | — |
# | **total** | | **10** | **6** |
