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
# # 08 — Profiling: bytes, floors, and wall time versus GPU time
#
# * **You will learn:** to count the memory floor by hand; how GPU time differs from wall time;
#   what a CUDA graph removes from a call, and that the package's calls trace into the one graph
#   that `torch.compile(mode="reduce-overhead")` needs; what a CPU can measure, with an op counter
#   and `torch.profiler`.
#
# * **Time:** 1.25–2 h for the reading and the two checked exercises; 2.5–3.5 h with the open
#   questions.
#
# * **Needs:** any of notebooks 01–07. No GPU; with one, the profiler times the kernels live.
#
# * **Minimum path:** sections 1–5 and the checked exercises `vtrace_floor_bytes` and
#   `lean_gae_loop`; the optional profiler and the open questions can wait. Section 4 ends with
#   the columns of the "profile it" tables of notebooks 01–07.

# %% [markdown]
# **Four ideas to keep.**
#
# 1. **The memory floor** (sections 1–2). These kernels do a few flops per byte: they are
#    memory-bound. Their floor is the time a plain GPU copy takes to move their bytes.
# 2. **Two clocks** (section 3). **Wall time** per call is what a training loop waits for, host
#    included. **GPU time** is the kernel alone. At RL shapes the first is many times the second.
# 3. **Paired comparison** (end of section 3). The host's load drifts, so two calls are compared
#    by timing them in the same rounds and dividing within each round.
# 4. **CUDA graphs** (section 4). A recorded launch that skips the host, leaving a call only its
#    GPU time. `torch.compile(mode="reduce-overhead")` records one for you.
#
# Section 1 builds a small cost model by hand. Each later section asks a question, has you
# **predict** with the model, shows the measured figures in a table or a chart, and ends with a
# **finding**. The GPU figures are committed results (the box "Sources and caveats" at the end
# lists the files). On a CPU, Triton runs only in its interpreter, whose time means nothing, so
# section 5 times PyTorch code on your CPU instead.
#
# **Skip the "Checks" cells** (folded, starting `# Checks`): CI runs them against the data files.

# %%
import math
import os
import re

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import matplotlib.pyplot as plt

import rltriton_lite as rl
from rltriton_lite import exercises, profile

DEVICE = profile.default_device()
# the Triton kernels: compiled on a GPU, in the interpreter on a CPU (backend="auto" takes the PyTorch path on a CPU)
KERNEL = "triton"
LIVE = ("live, this GPU" if DEVICE == "cuda" else
        "this CPU, one thread: real wall-clock times of PyTorch code; the Triton kernels checked, not timed")
print(f"device: {DEVICE}; times measured here: {LIVE}")

# %%
import triton  # noqa: E402

RESULTS = profile.results_folder()  # benchmarks/results/ beside the package
RES = profile.committed_results(RESULTS)[1]  # H200-2026-12-06.json (profile.COMMITTED_RUN)
FULL = profile.committed_results(RESULTS, profile.COMMITTED_SWEEP)[1]  # H200-2026-11-30d.json
BW = RES["copy_bandwidth_Bps"]  # bytes read + written per second, device-to-device copy
print(f"{RES['gpu']}, {RES['date']}, torch {RES['versions']['torch']}, triton {RES['versions']['triton']}: "
      f"copy bandwidth {BW / 1e12:.3f} TB/s, {len(RES['rows'])} rows")
print(f"installed here: torch {torch.__version__}, triton {triton.__version__}")


def row(res, algorithm, B, T, impl="rltriton_lite", dtype="float32", pass_="fwd"):
    """The one result row of this case."""
    (r,) = [r for r in res["rows"] if (r["algorithm"], r["impl"], r["B"], r["T"], r["dtype"], r["pass"])
            == (algorithm, impl, B, T, dtype, pass_)]
    return r


# how the course writes a range of ratios (notebook 09, section 2): low end rounded down, high end up
def down(x, digits=1):
    """x rounded down to `digits` decimals: a range's low end, or an "at least" figure."""
    return math.floor(round(x * 10**digits, 9)) / 10**digits


def up(x, digits=1):
    """x rounded up to `digits` decimals: a range's high end, or an "up to" figure."""
    return math.ceil(round(x * 10**digits, 9)) / 10**digits


def ratio_span(values):
    """The lowest and the highest of some ratios, as text: two significant digits (whole from 10 up), the
    lowest rounded down and the highest up, so that the text holds every ratio."""
    def decimals(x):
        return 0 if x >= 10 else 1 - math.floor(math.log10(x))

    lo, hi = down(min(values), decimals(min(values))), up(max(values), decimals(max(values)))
    return f"{lo:.{decimals(lo)}f}–{hi:.{decimals(hi)}f}×"


# %% [markdown]
# ## 1. The floor model, by hand
#
# **Question: how fast could a memory-bound kernel possibly be?** Count the bytes GAE and PPO's
# loss must move: every timing below is measured against the time they take.
#
# Per (row, step), GAE **reads** the reward, the value $V(s_t)$ and the episode-end flag, and
# **writes** the advantage $\hat A_t$ and the return $\hat A_t + V(s_t)$. Not counted: $V(s_{t+1})$,
# the next element of the values tensor, read once anyway; the carry, which stays in the kernel;
# the bootstrap $V(s_T)$, one number per row. float32 is 4 bytes, a bool 1. PPO's clipped loss
# reads three tensors per step and writes one scalar per batch: nothing per step.

# %%
GAE_TRAFFIC = [dict(tensor=n, access=a, bytes=b) for n, a, b in [
    ("rewards r_t", "read", 4), ("values V(s_t)", "read", 4), ("terminated (bool)", "read", 1),
    ("advantages Â_t", "write", 4), ("returns Â_t + V(s_t)", "write", 4)]]
gae_bytes = sum(t["bytes"] for t in GAE_TRAFFIC)
print(profile.table(GAE_TRAFFIC))
print(f"GAE moves {gae_bytes} B per (row, step) in float32")
assert gae_bytes == profile.op("gae").bytes_per_step(4) == 17

PPO_TRAFFIC = [dict(tensor=n, access=a, bytes=b) for n, a, b in [
    ("log_probs (new policy)", "read", 4), ("old_log_probs", "read", 4), ("advantages", "read", 4),
    ("loss (one scalar)", "write", 0)]]
ppo_bytes = sum(t["bytes"] for t in PPO_TRAFFIC)
print(profile.table(PPO_TRAFFIC))
print(f"PPO's loss moves {ppo_bytes} B per (row, step) in float32")
assert ppo_bytes == profile.op("ppo").bytes_per_step(4) == 12

# %% [markdown]
# In bfloat16 the floats halve, but the flag stays 1 byte: GAE moves 2+2+1+2+2 = 9 B, not 8.5.
#
# **The floor.** The benchmark run times a large device-to-device copy, counting reads and
# writes: that is the usable memory bandwidth. For GAE on 16384 rollouts × 1024 steps,
# $t_\text{floor} = B \cdot T \cdot \text{bytes per step} \,/\, \text{copy bandwidth}$:

# %%
B, T = 16384, 1024
gae_floor_ms = B * T * gae_bytes / BW * 1e3
print(f"{B} × {T} × {gae_bytes} B = {B * T * gae_bytes / 1e6:.1f} MB;  ÷ {BW / 1e12:.4f} TB/s = "
      f"{gae_floor_ms * 1e3:.1f} µs")
ppo_floor_ms = B * T * ppo_bytes / BW * 1e3
print(f"PPO: {B * T * ppo_bytes / 1e6:.1f} MB → {ppo_floor_ms * 1e3:.1f} µs")

# %% [markdown]
# **Finding:** a kernel is at best as fast as its floor, its bytes at the copy's speed.
#
# <details><summary>Details: the one exception</summary>
#
# Bytes read again from the GPU's L2 cache, a small on-chip memory, can beat the floor:
# [notebook 14](14_appendix_data.ipynb) reads such a case.
#
# </details>
#
# **One model for the rest of this notebook.** A call has the host's work (Python, argument checks,
# the Triton launcher, the allocator) and the GPU's. Launches are asynchronous, so the two overlap:
#
# $$\text{wall} \approx \max(\text{host},\ \text{GPU}), \qquad \text{GPU} \approx t_0 + t_\text{floor}.$$
#
# * $t_\text{floor}$ is the floor above.
# * $t_0 \approx 2$ µs is a kernel's fixed cost on the GPU: what the smallest shape takes.
# * host $\approx 23$ µs is the wall time of the lightest forward call at 16×128 and 4096×128,
#   where the kernel hides behind the host. Most calls take more.
#
# Sections 2–4 test this model against the H200's figures.

# %%
T0_US, HOST_US = 2.0, 23.0  # the model's constants (the Checks cell below reads them off the committed data)


def model_us(B, T, bytes_per_step, host_us=HOST_US):
    """The model's (wall, GPU) µs per call: GPU = t0 + floor, wall = max(host, GPU)."""
    gpu = T0_US + 1e6 * B * T * bytes_per_step / BW
    return max(host_us, gpu), gpu


for b, t in [(16, 128), (4096, 128), (16384, 1024)]:
    wall, gpu = model_us(b, t, gae_bytes)
    print(f"model, GAE {b}×{t}: GPU {gpu:.1f} µs, wall {wall:.1f} µs per call")


def against(prediction, measured, what, model=None):
    """Your prediction (None: not made) beside the measured figure, and the model's figure where given."""
    print(f"{what}: measured {measured:.3g}" + ("" if model is None else f", the model gives {model:.3g}")
          + ("" if prediction is None else f", you predicted {prediction:.3g}"))

# %% jupyter={"source_hidden": true}
# Checks: the claims above, on the committed run (CI runs them; skip when reading)
ALGS = list(profile.ops()) + ["linear_scan"]
smallest = [row(RES, a, 16, 128) for a in ALGS]
assert 1 < min(1e3 * r["kernel_ms"] for r in smallest) < T0_US < max(1e3 * r["kernel_ms"] for r in smallest) < 4
_light = min(row(RES, a, *s)["full_call_us"] for a in ALGS for s in [(16, 128), (4096, 128)])  # the lightest call
assert round(_light, 1) == 22.5 and abs(_light - HOST_US) < 1  # "host ≈ 23 µs ... 22.5 µs in the benchmark run"
assert round(max(r["full_call_us"] for r in smallest)) == 78 > 2 * HOST_US  # "up to 78 µs"
r_gae, r_ppo = row(RES, "gae", B, T), row(RES, "ppo", B, T)
assert r_gae["bytes"] == B * T * gae_bytes and r_ppo["bytes"] == B * T * ppo_bytes
# within 0.01 %: each row was priced with the bandwidth measured beside it; BW is their mean
assert math.isclose(gae_floor_ms, r_gae["floor_ms"], rel_tol=1e-4)
assert math.isclose(ppo_floor_ms, r_ppo["floor_ms"], rel_tol=1e-4)

# %% [markdown]
# ## 2. GPU time against the floor, on a large batch
#
# **Question: how close to the floor do the kernels get on a large batch?** **% floor** = floor ÷
# GPU time: at 100 %, the kernel moves its bytes as fast as a plain copy.
#
# **Predict first.** GAE at 16384×1024: the model printed its GPU time above. What % floor does
# that make? Put your number in the next cell, then run it: every algorithm at that shape,
# float32, forward.

# %%
my_pct_floor = None  # your prediction: GAE's % floor at 16384×1024
ALGORITHMS = list(profile.ops()) + ["linear_scan"]
gpu_table = []
for name in ALGORITHMS:
    r = row(RES, name, B, T)
    hidden = name == "vtrace"  # V-trace's bytes are the exercise: its floor (and so its % floor) would tell them
    model_gpu = model_us(B, T, r["bytes"] / (B * T))[1]  # the model's GPU time: t0 + floor
    gpu_table.append({"algorithm": name, "B/step": "(exercise)" if hidden else r["bytes"] // (B * T),
                      "floor µs": "(exercise)" if hidden else 1e3 * r["floor_ms"],
                      "model GPU µs": "(exercise)" if hidden else model_gpu, "GPU µs": 1e3 * r["kernel_ms"],
                      "GPU ÷ model": "(exercise)" if hidden else 1e3 * r["kernel_ms"] / model_gpu,
                      "% floor": "(exercise)" if hidden else 100 * r["floor_ms"] / r["kernel_ms"]})
print(f"H200, committed results {RES['date']}, {B}×{T} float32, forward")
print(profile.table(gpu_table, digits=3))
model_pct_gae = 100 * gae_floor_ms * 1e3 / model_us(B, T, gae_bytes)[1]  # the model: floor ÷ (t0 + floor)
against(my_pct_floor, 100 * row(RES, "gae", B, T)["floor_ms"] / row(RES, "gae", B, T)["kernel_ms"],
        "GAE's % floor at 16384×1024", model=model_pct_gae)

# %% [markdown]
# **Finding:** close to the floor, but not at it: GAE reaches 83 % of its floor. At this shape the
# fixed cost $t_0$ is small beside the floor, so the miss is not the fixed cost. GAE's kernel moves
# its bytes more slowly than a plain copy, and the model, which prices them at a copy's speed, is a
# little optimistic. The other kernels sit about as close to the model (the table's "GPU ÷ model").
#
# <details><summary>Details: the model's figure, the other kernels, and SAC</summary>
#
# * The model gives GAE 97 % of the floor at this shape: its fixed cost, 2 µs, is small beside its
#   floor's 67 µs.
# * Every kernel's GPU time lies within about 20 % of the model's, mostly above it.
# * SAC, which mostly reads, comes closest to its floor. [Notebook 14](14_appendix_data.ipynb) says
#   why reads can go a little faster than a copy.
# * The benchmark's SAC row is the λ = 0 target, an elementwise kernel, not the λ-return scan that
#   notebook 06 writes (notebook 06, section 5).
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the claims above, on the committed run (CI runs them; skip when reading)
for name in ALGORITHMS:
    r = row(RES, name, B, T)
    if name in profile.ops():
        assert r["bytes"] == B * T * profile.op(name).bytes_per_step(4)  # the harness counts as we did
pct = {name: 100 * row(RES, name, B, T)["floor_ms"] / row(RES, name, B, T)["kernel_ms"] for name in ALGORITHMS}
assert max(pct, key=pct.get) == "sac" and max(pct.values()) < 100  # "SAC comes closest"; "no kernel quite" 100 %
assert "lambda_" not in profile.op("sac").params  # the benchmark passes no λ: "the λ = 0 target" (notebook 06, section 5)
_vs_model = {name: 1e3 * row(RES, name, B, T)["kernel_ms"] / model_us(B, T, row(RES, name, B, T)["bytes"] / (B * T))[1]
             for name in ALGORITHMS}  # V-trace's too
assert all(0.8 < x < 1.2 for x in _vs_model.values())  # "within about 20 % of the model's"
assert sum(x > 1 for x in _vs_model.values()) > len(_vs_model) / 2  # "mostly above it"
assert all(t["GPU ÷ model"] in ("(exercise)", _vs_model[t["algorithm"]]) for t in gpu_table)  # the table's column
assert [round(model_pct_gae), round(pct["gae"])] == [97, 83]  # "the model gives 97 % ... GAE measures 83 %"
assert round(gae_floor_ms * 1e3) == 67 and T0_US < gae_floor_ms * 1e3 / 30  # "2 µs, small beside the floor's 67 µs"

# %% [markdown]
# ## 3. Two clocks: wall time versus GPU time at the shapes RL code uses
#
# **Question: at the shapes RL code uses, where does a call's time go?** RL shapes are small:
# 16 × 128, 4096 environments × 128 steps, or a few long rollouts (64 × 16384). There the kernel
# takes a few µs, but a Python call also pays the host's work: argument checks, the Triton
# launcher, the allocator, the CUDA launch.
#
# **Three labels**, used by the whole course, divide a call's wall time by its GPU time:
#
# | wall ÷ GPU time | label | what it says |
# | --- | --- | --- |
# | more than 2× | **host-bound** | the host sets the call's time |
# | in between | **mixed** | both matter |
# | at most 1.2× | **GPU-bound** | the kernel is the call |
#
# The GPU time is timed by replaying a CUDA graph (section 4), with no host in it. The wall time
# includes the host, whose load drifts, so a label near 2× can change from run to run.
#
# **Predict first**, with `model_us`: GAE's wall ÷ GPU time per call at 4096×128, and so its
# label. Put your number in the next cell. It prints the model's figures beside the H200's, then
# charts every algorithm's ratio at the four shapes, with the labels as bands.

# %%
my_wall_over_gpu = None  # your prediction: GAE at 4096×128, wall ÷ GPU time per call
HOST_X, GPU_X = 2.0, 1.2  # wall ÷ GPU time: above 2×, host-bound; at most 1.2×, GPU-bound; mixed in between


def bound(wall_us, gpu_us):
    """The course's label of a call, from its wall time and its GPU time."""
    x = wall_us / gpu_us
    return "host-bound" if x > HOST_X else "GPU-bound" if x <= GPU_X else "mixed"


SHAPES = [(16, 128), (4096, 128), (64, 16384), (16384, 1024)]
wall_us = {(a, s): row(RES, a, *s)["full_call_us"] for a in ALGORITHMS for s in SHAPES}
gpu_us = {(a, s): 1e3 * row(RES, a, *s)["kernel_ms"] for a in ALGORITHMS for s in SHAPES}
ratio = {k: wall_us[k] / gpu_us[k] for k in wall_us}
model_wall_gae, model_gpu_gae = model_us(4096, 128, gae_bytes)
against(None, wall_us["gae", (4096, 128)], "GAE 4096×128, wall µs per call", model=model_wall_gae)
against(None, gpu_us["gae", (4096, 128)], "GAE 4096×128, GPU µs per call", model=model_gpu_gae)
against(my_wall_over_gpu, ratio["gae", (4096, 128)], "GAE 4096×128, wall ÷ GPU time",
        model=model_wall_gae / model_gpu_gae)

fig, ax = plt.subplots(figsize=(8, 3.8))
names = [f"{b}×{t}" for b, t in SHAPES]
ax.axhspan(HOST_X, 100, color="tab:red", alpha=0.08)
ax.axhspan(0.8, GPU_X, color="tab:green", alpha=0.12)
for name in ALGORITHMS:
    ax.plot(names, [ratio[name, s] for s in SHAPES], "o-", lw=1, ms=4, label=name)
ax.plot(names, [model_us(*s, gae_bytes)[0] / model_us(*s, gae_bytes)[1] for s in SHAPES], "kx:", lw=2,
        label="model, gae")
for y, text in [(3.5, "host-bound"), (1.55, "mixed"), (1.0, "GPU-bound")]:
    ax.text(-0.3, y, text, fontsize=8, va="center")
ax.set(yscale="log", xlim=(-0.35, 3.2), ylim=(0.8, 100), ylabel="wall ÷ GPU time per call (log)",
       xlabel="B × T (shape of the rollout)", title=f"H200, committed results {RES['date']}, forward: where a call's time goes")
ax.legend(fontsize=7, ncol=3, loc="upper right")
plt.tight_layout()
plt.show()

# %%
scans = ["discounted_return", "gae", "td_lambda", "vtrace", "linear_scan"]
shape_table = []
for s in SHAPES:
    labels = [bound(wall_us[a, s], gpu_us[a, s]) for a in ALGORITHMS]
    model_wall, model_gpu = model_us(*s, gae_bytes)
    shape_table.append({"B × T": f"{s[0]}×{s[1]}",
                        "wall ÷ GPU": ratio_span([ratio[a, s] for a in ALGORITHMS]),
                        "labels": ", ".join(f"{labels.count(k)} {k}" for k in ("host-bound", "mixed", "GPU-bound")
                                            if k in labels),
                        "model's wall ÷ GPU, GAE": model_wall / model_gpu, "model's GPU µs, GAE": model_gpu,
                        "the scans' GPU µs": f"{min(gpu_us[a, s] for a in scans):.3g}–{max(gpu_us[a, s] for a in scans):.3g}"})
print("H200, benchmark run, forward, our calls: wall ÷ GPU time over the algorithms, and the model's figures")
print(profile.table(shape_table, digits=3))

# %% [markdown]
# **Finding:** mostly to the host. At 16×128 and 4096×128 every call is host-bound, as the model
# predicted. So at those shapes a faster kernel barely changes what the training loop waits for;
# section 4 takes the host out instead. Even one plain `torch.add` on GPU tensors costs the host
# 8.2 µs per call at its fastest.
#
# <details><summary>Details: the largest shape</summary>
#
# At 16384×1024 the kernel is the call: every call is GPU-bound there, except PPO's and CRR's
# losses, which are mixed.
#
# </details>
#
# **Your prediction, debriefed.** GAE at 4096×128 reads 8.4×: host-bound, as the model said. The
# model's own ratio is lower, because both of its terms are off (the fold).
#
# <details><summary>Details: the model's ratio and its two terms</summary>
#
# * The model gives 23 µs of wall time for 4.1 µs of GPU time: 5.6×.
# * The run's wall time is 28.1 µs, because GAE's call does more host work than the lightest call
#   the model's 23 µs stands for.
# * The run's GPU time is 3.3 µs, below the model's, because GAE's 8.9 MB fit in the GPU's L2
#   cache. The L2 is a 60 MiB memory on the GPU chip itself, faster to read than the card's main
#   memory, and back-to-back replays do not flush it, so each replay finds its inputs already there.
#
# </details>
#
# The model breaks for the scans at 64×16384, which take several times the GPU time it gives GAE
# (the table's last two columns). 64 rows give the GPU few programs, and each walks its row's
# chunks one after another, the carry passing between them: a latency the model lacks.

# %% jupyter={"source_hidden": true}
# Checks: the claims above, on the committed run (CI runs them; skip when reading)
label = {k: bound(wall_us[k], gpu_us[k]) for k in wall_us}
assert all(label[a, s] == "host-bound" for a in ALGORITHMS for s in [(16, 128), (4096, 128)])  # "every call"
assert {a: label[a, (16384, 1024)] for a in ALGORITHMS} == {a: "mixed" if a in ("ppo", "crr") else "GPU-bound"
                                                          for a in ALGORITHMS}  # "GPU-bound, or mixed for PPO's and CRR's"
assert all(bound(*model_us(*s, gae_bytes)) == "host-bound" for s in [(16, 128), (4096, 128)])  # "as the model predicted"
# the reveal's debrief: GAE at 4096×128, the model's figures beside the run's
_g = row(RES, "gae", 4096, 128)
assert [round(model_wall_gae), round(model_gpu_gae, 1), round(model_wall_gae / model_gpu_gae, 1)] == [23, 4.1, 5.6]
assert [round(_g["full_call_us"], 1), round(1e3 * _g["kernel_ms"], 1), round(ratio["gae", (4096, 128)], 1)] == [28.1, 3.3, 8.4]
assert label["gae", (4096, 128)] == bound(model_wall_gae, model_gpu_gae) == "host-bound"  # "agrees on the label"
assert round(_g["bytes"] / 1e6, 1) == 8.9 and _g["bytes"] < 60 * 2**20  # "8.9 MB fit in the GPU's L2 cache ... 60 MiB"
assert 1e3 * _g["kernel_ms"] < model_gpu_gae  # "3.3 µs, below the model's"
# the model: close at the small shapes, broken for the scans at 64×16384
assert all(abs(gpu_us[a, s] - model_us(*s, profile.op(a).bytes_per_step(4))[1]) < 4
           for a in profile.ops() for s in [(16, 128), (4096, 128)])  # the model fits there
_long = [gpu_us[a, (64, 16384)] for a in scans]
assert min(_long) > 3 * model_us(64, 16384, gae_bytes)[1]  # "several times the GPU time it gives GAE"
probe = profile.wall_probe_us(os.path.join(RESULTS, profile.COMMITTED_WALL))  # the wall probe: {(B, T): {(pass, name): µs}}
assert min(sec["fwd", "torch.add"] for sec in probe.values()) == 8.2  # "`torch.add` ... 8.2 µs per call at its fastest"

# %% [markdown]
# ### Comparing two calls: the paired ratio
#
# **Question: when is one call faster than another on the wall clock?** Two calls timed minutes
# apart may differ only because the host was busier for one. So a **paired** probe times both in
# the same rounds: a batch of calls of one, then a batch of the other, the order reversed every
# other round. The host's load slows both calls of a round alike, so it cancels in their ratio,
# the **paired ratio**. **If one call is faster in every round, the host's drift cannot explain
# the difference.**
#
# One case, timed in 15 rounds on an H100: PPO's loss with its backward at 4096×128, ours against
# the eager PyTorch formula that notebook 05 writes out. Notebook 09, section 4 reads the others.

# %%
paired = profile.read_loss_wall()  # the paired loss probe: (loss, shape, pass, impl) -> (µs, ratio's median, lowest, highest)
eager_paired_us, median_x, lowest_x, highest_x = paired["ppo", (4096, 128), "fwd+bwd", "pytorch_eager"]
ours_paired_us = paired["ppo", (4096, 128), "fwd+bwd", "rltriton_lite"][0]
print(f"the paired loss probe, PPO's loss with its backward at 4096×128, 15 paired rounds: ours {ours_paired_us:.0f} µs, "
      f"the eager formula {eager_paired_us:.0f} µs per call (the medians)")
print(f"the eager formula's time ÷ ours within a round: median {median_x:.2f}, lowest {down(lowest_x, 2):.2f}, "
      f"highest {up(highest_x, 2):.2f}")

# %% [markdown]
# **Finding:** ours was faster in every round: the eager formula took 1.58× to 2.3× our wall time.
# Ratios' ranges are rounded outwards: the low end down, the high end up.
#
# The two medians of µs above divide to 366 ÷ 196 = 1.87, not the median ratio 1.71: they can come
# from different rounds. The paired ratio divides within each round first, so it is the figure to
# trust (notebook 09, section 4 works an example).
#
# **Where no paired rounds exist: the noise rule.** Two timings that were not paired count as
# different only when more than 2.3× apart (notebook 14, section 6). A smaller gap is **within the
# noise**: it says neither which call is faster nor that the two are equally fast.

# %% jupyter={"source_hidden": true}
# Checks: the paired ratio, on the paired loss probe (CI runs them; skip when reading)
_loss_text = open(os.path.join(RESULTS, profile.COMMITTED_LOSS_WALL), encoding="utf-8").read()
assert _loss_text.startswith("# NVIDIA H100") and "the order reversed every other round" in _loss_text.splitlines()[0]  # "alternates"
assert "15 interleaved rounds" in _loss_text[:400]  # "15 rounds in all"
assert [down(lowest_x, 2), up(highest_x, 1)] == [1.58, 2.3]  # "1.58× to 2.3× our wall time", rounded outwards
assert [round(lowest_x, 3), round(highest_x, 3)] == [1.584, 2.292]  # the box's example: "1.584 ... 2.292"
assert [round(eager_paired_us), round(ours_paired_us), round(median_x, 2)] == [366, 196, 1.71]  # "366 ÷ 196 ... not 1.71"
assert round(eager_paired_us / ours_paired_us, 2) == 1.87  # "is 1.87"
assert lowest_x > 1  # "ours was faster in every round"
# the noise rule's 2.3× ("more than 2.3× apart"): the most one call's two wall timings of the session differ (the
# benchmark run, the wall probe), rounded up as an "up to" figure is (the box derives it; its Checks cell asserts the pair)
NOISE_X = 2.3
_twice = profile.timed_twice(RES, probe)
_drift = max(max(w) / min(w) for w in _twice.values())
assert len(_twice) == 48 and round(_drift, 2) == 2.24 and up(_drift) == NOISE_X  # the box: "2.24×", "rounded up ... 2.3×"
assert down(_drift) == 2.2 < _drift  # the box: "rounding down to 2.2× would call a gap of 2.21–2.24× real"
with open(os.path.join(os.path.dirname(os.path.dirname(RESULTS)), "docs", "DESIGN.md"), encoding="utf-8") as f:
    assert "read 1.2–2.9× apart between runs" in " ".join(f.read().split())  # the box's "up to 2.9×" between runs

# %% [markdown]
# ## 4. Taking the host out: CUDA graphs and `torch.compile(mode="reduce-overhead")`
#
# **Question: how do you take the host's share out of a call, and what does that cost?**
#
# **A CUDA graph** records the kernels a region launches, once (`torch.cuda.graph(g)`). Then
# `g.replay()` resubmits them all with one driver call: no Python, no checks, no allocator. Every
# GPU time in this notebook replays a graph of many of the package's calls, so each kernel costs
# its GPU time alone. The price: shapes and addresses are frozen (copy new data in:
# `static.copy_(fresh)`); each replay overwrites the outputs; nothing inside may sync with the host
# (`.item()`) or branch on data.
#
# **Predict first.** A replay leaves only the model's GPU term, $t_0 + t_\text{floor}$. For GAE at
# 4096×128, what share of section 3's wall time per call would capturing remove?

# %%
my_removed_pct = None  # your prediction: the % of GAE's 4096×128 call a CUDA graph removes
removed = {}  # call -> % of its wall time per call that a replay removes
saving = []
for a in ALGORITHMS:
    wall, gpu = wall_us[a, (4096, 128)], gpu_us[a, (4096, 128)]  # the benchmark run's
    removed[a] = 100 * (1 - gpu / wall)
    saving.append({"call": a, "source": "benchmark run", "wall µs": wall, "replayed µs": gpu, "removed %": removed[a]})
# the graph-replay probe: GAE 4096×128, eager, then a graph of one call, then a graph of 100 calls (µs per call)
replay_text = open(os.path.join(RESULTS, profile.COMMITTED_REPLAY), encoding="utf-8").read()
replay = {(int(m[0]), int(m[1])): [float(x) for x in m[2:]]  # "  4096x128  25.9  4.5  3.2", as the probe printed it
          for m in re.findall(r"^\s*(\d+)x\s*(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", replay_text, re.M)}
replay_eager, replay_one, replay_hundred = replay[4096, 128]
for what, us in [("gae, graph of 1 call", replay_one), ("gae, graph of 100 calls", replay_hundred)]:
    removed[what] = 100 * (1 - us / replay_eager)
    saving.append({"call": what, "source": "replay probe", "wall µs": replay_eager, "replayed µs": us,
                   "removed %": removed[what]})
print("4096×128 forward: what capturing the call in a CUDA graph removes (the last two rows: GAE again, each")
print("replay against the replay probe's own eager call)")
print(profile.table(saving, digits=3))
model_wall, model_gpu = model_us(4096, 128, gae_bytes)
model_removed = 100 * (1 - model_gpu / wall_us["gae", (4096, 128)])
print(f"the model, GAE: a replay leaves its {model_gpu:.2g} µs of GPU time, so it removes {model_removed:.2g} % "
      f"of the measured call ({100 * (1 - model_gpu / model_wall):.2g} % of the model's own wall time)")
against(my_removed_pct, removed["gae"], "GAE 4096×128, % of the call a graph removes", model=model_removed)

# %% [markdown]
# **Finding:** a CUDA graph removes nearly all of a small call: over 85 % for every algorithm, about
# what the model predicted (the line under the table).
#
# The table's last two rows put GAE's call alone in a graph, then in a graph of 100 calls. The
# first removes less, because each replay is still a launch: capture a whole update step, not a
# single call.
#
# <details><summary>Details: GAE's figures against the model's</summary>
#
# * The model removes 85 % of GAE's measured call; the replay removed 88 %.
# * The model leaves its 4.1 µs of GPU time; the replay left 3.3 µs. At this shape the replayed
#   kernel is faster than $t_0$ + floor, for the reason section 3's debrief gave.
#
# </details>
#
# **`torch.compile(mode="reduce-overhead")`** captures for you: it fuses the torch ops around our
# kernels, records CUDA graphs and replays them for the same shapes. The region must trace into
# one graph, and the package's functions, `torch.library` custom ops, do (`fullgraph=True`
# passes). Below, a step calling GAE then PPO's loss traces into one graph; the backend only
# records it.

# %%
graphs = []


def recording_backend(gm, example_inputs):
    graphs.append(gm)
    return gm.forward


def step(rewards, values, log_probs, old_log_probs):
    adv, _ = rl.gae(rewards, values, gamma=0.99, lambda_=0.95, backend=KERNEL)
    return rl.ppo_clip_loss(log_probs, old_log_probs, adv, backend=KERNEL).loss


g = torch.Generator().manual_seed(0)
inputs = [torch.randn(4, 32, generator=g).to(DEVICE) for _ in range(4)]
torch._dynamo.reset()
compiled_step = torch.compile(step, fullgraph=True, backend=recording_backend)  # fullgraph: a break would raise
loss = compiled_step(*inputs)
ops_in_graph = [str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"]
print(f"{len(graphs)} graph; its custom ops:", [o for o in ops_in_graph if "rltriton_lite" in o])
assert len(graphs) == 1 and torch.equal(loss, step(*inputs))
assert {"rltriton_lite.gae.default", "rltriton_lite.ppo_clip_loss.default"} <= set(ops_in_graph)

# %% jupyter={"source_hidden": true}
# Checks: the claims above, on the committed run (CI runs them; skip when reading)
assert all(removed[a] > 85 for a in ALGORITHMS)  # "over 85 % for every algorithm"
assert abs(model_removed - removed["gae"]) < 5  # "about what the model predicted"
assert [round(model_removed), round(removed["gae"])] == [85, 88] and model_removed < removed["gae"]  # "a little more than the model"
assert replay[4096, 128] == [25.9, 4.5, 3.2]  # the probe's own printout: eager, a graph of one call, one of 100
assert replay_hundred < replay_one < replay_eager  # "a graph of one call removes less": each replay is a launch

# %% [markdown]
# ### Reading the profile tables of notebooks 01 to 07
#
# Notebooks 01–07 each end with an optional "profile it" section: the committed run's rows for
# their algorithm. Their columns:
#
# | column | what it is | where it comes from |
# | --- | --- | --- |
# | `floor µs` | the time the call's fewest bytes take at the copy bandwidth | section 1 |
# | `% floor` | 100 × floor ÷ GPU time: 100 % moves the bytes at a copy's speed | section 2 |
# | `wall µs/call` | the wall time: what one call costs a Python loop, host work included | section 3 |
# | `GPU µs` | the GPU time: the kernels alone, timed by replaying a CUDA graph | section 4 |
# | `wall ÷ ours` | this line's wall time ÷ ours at the same shape and pass: above 1, ours is faster | section 3 |
#
# The legend under each table explains its `!` marks.
#
# <details><summary>Details: where <code>GPU µs</code> reads <code>n/a</code></summary>
#
# Where the harness has no graph to replay: the Python loops and torchrl's functions, which it does
# not try to capture, JAX, which cannot be captured, and accelerated-scan's TD(λ), whose capture
# failed.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the `n/a` rows, on the harness's peer list and the committed run (CI runs them; skip when reading)
from rltriton_lite import bench  # noqa: E402

_not_tried = {q.impl for q in bench.PEERS if not q.graph}  # the peers the harness does not try to capture
assert {"pytorch_loop", "jax"} < _not_tried and all(q.startswith("torchrl") for q in _not_tried - {"pytorch_loop", "jax"})
_no_gpu = {(r["impl"], r["algorithm"]) for r in RES["rows"] if r["kernel_ms"] is None}
assert {i for i, _ in _no_gpu} - _not_tried == {"accelerated_scan"}  # every other n/a: a peer never captured
assert {a for i, a in _no_gpu if i == "accelerated_scan"} == {"td_lambda"}  # "the capture of accelerated-scan's TD(λ) failed"
assert all(r["kernel_ms"] is not None for r in RES["rows"] if r["impl"] == "accelerated_scan" and r["algorithm"] != "td_lambda")

# %% [markdown]
# ## 5. A real measurement on this CPU: one call against CleanRL's loop over time
#
# **Question: on this CPU, what does CleanRL's loop over time cost against one call, and why?**
# Two PyTorch codes give the same advantages: CleanRL's `ppo.py` loop, one Python iteration per
# step, and the package's PyTorch path, `rl.gae` on CPU tensors, ⌈log₂ T⌉ rounds of whole-tensor
# ops (a scan, notebook 00). Inputs are time-major, `(T, N)`, as CleanRL and SB3 store rollouts.

# %%
import collections  # noqa: E402
import inspect  # noqa: E402

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from rltriton_lite.integrations import cleanrl  # noqa: E402

cleanrl_gae = cleanrl.loop  # CleanRL's loop as `ppo.py` has it, kept verbatim (its tests' oracle)
# the CleanRL drop-in: the same arguments, one `rl.gae` call inside (the PyTorch path on CPU tensors);
# it shifts CleanRL's `dones` ("ended before step t") into `terminated` ("ended at step t")
package_gae = cleanrl.gae
print(inspect.getsource(cleanrl_gae))

# %% [markdown]
# Three rollouts: CleanRL's default (128 steps × 4 envs), SB3's default (2048 × 1) and SB3's steps
# with 64 envs. Two tools measure them.
#
# * `CountOps`, a `TorchDispatchMode`, counts the tensor ops (ATen ops) run inside its `with`
#   block. The counts are the same on every machine and every run: they are the main evidence.
# * `fastest_ms` times a call: the fastest of 15 calls after one warm-up, on one thread, because
#   a pause only ever adds time. On a busy machine the times still move, so they are printed, not
#   asserted, and the cell says when the machine was visibly busy.
#
# **Predict first.** SB3's default has 16× the steps of CleanRL's, so the loop runs 16× the
# iterations. The scan runs ⌈log₂ T⌉ rounds, 7 at T = 128 and 11 at T = 2048, plus a few ops
# before and after them. How many times as many ops should the scan run at 2048×1 as at 128×4?
# Put your number in the next cell.

# %%
def fastest_ms(fn, calls=15):
    """profile.fastest_ms on one thread: the fastest of `calls` calls, in ms, after one warm-up call."""
    with profile.cpu_threads(1):
        return profile.fastest_ms(fn, calls)


class CountOps(TorchDispatchMode):
    """Counts the ATen ops run inside the `with` block, by name."""

    def __init__(self):
        super().__init__()
        self.ops = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[str(func)] += 1
        return func(*args, **(kwargs or {}))


def ops_of(fn, rollout):
    with CountOps() as counter:
        fn(*rollout)
    return counter.ops

# %%
my_scan_ops_x = None  # your prediction: the scan's op count at 2048×1 ÷ at 128×4
CPU_SIZES = [(128, 4, "CleanRL default"), (2048, 1, "SB3 default"), (2048, 64, "SB3 steps, 64 envs")]
op_rows, cpu_rows, rollouts, errors = [], [], {}, []
for T_, N_, who in CPU_SIZES:
    g = torch.Generator().manual_seed(0)
    rollout = (torch.randn(T_, N_, generator=g), torch.randn(T_, N_, generator=g),  # rewards, values
               (torch.rand(T_, N_, generator=g) < 0.02).float(),  # dones
               torch.randn(1, N_, generator=g),  # next_value: (1, N), as CleanRL's `.reshape(1, -1)` makes it
               (torch.rand(N_, generator=g) < 0.02).float())  # next_done
    rollouts[T_, N_] = rollout  # kept: the exercise lean_gae_loop uses them
    loop_ms, torch_ms = fastest_ms(lambda: cleanrl_gae(*rollout)), fastest_ms(lambda: package_gae(*rollout))
    loop_ops, torch_ops = sum(ops_of(cleanrl_gae, rollout).values()), sum(ops_of(package_gae, rollout).values())
    errors.append(profile.rel_err(package_gae(*rollout)[0], cleanrl_gae(*rollout)[0].double().numpy()))
    op_rows.append({"T × N": f"{T_}×{N_}", "who": who, "loop ops": loop_ops, "loop ops/step": loop_ops / T_,
                    "torch path ops": torch_ops})
    cpu_rows.append({"T × N": f"{T_}×{N_}", "loop ms": loop_ms, "torch path ms": torch_ms,
                     "loop µs/op": 1e3 * loop_ms / loop_ops})
assert max(errors) < 1e-5  # the same advantages
print("GAE, float32: ATen ops per call, counted (the same on every machine)")
print(profile.table(op_rows, digits=3))
print("one step of the loop, ops by name:", {n: round(c / 128, 2) for n, c in ops_of(cleanrl_gae, rollouts[128, 4]).items()})
scan_growth = op_rows[1]["torch path ops"] / op_rows[0]["torch path ops"]
against(my_scan_ops_x, scan_growth, "the scan's ops at 2048×1 ÷ at 128×4", model=11 / 7)
print("\nthe same calls timed on this CPU, one thread: ms per call, fastest of 15 (needs a quiet machine)")
print(profile.table(cpu_rows, digits=3))
growth = cpu_rows[1]["loop ms"] / cpu_rows[0]["loop ms"]
op_growth = op_rows[1]["loop ops"] / op_rows[0]["loop ops"]
per_op = [r["loop µs/op"] for r in cpu_rows]  # about the same in every row on a quiet machine
if max(per_op) > 2 * min(per_op):
    print(f"this machine was busy while timing: the loop's µs per op moved {max(per_op) / min(per_op):.1f}× between "
          f"the rows, so these times are not the loop's own cost; the op counts above are the figure to trust "
          f"(close other notebooks' kernels and rerun this cell for cleaner times)")
else:
    print(f"the loop at 2048×1 ÷ at 128×4: {growth:.3g}× the time, for {op_growth:.3g}× the ops (16× the steps)")
for r in cpu_rows:  # with many envs the scan's arithmetic on the whole rollout can outweigh the loop's fixed costs
    if r["torch path ms"] > r["loop ms"]:
        print(f"at {r['T × N']} the PyTorch path was slower than the loop on this machine: "
              f"{r['torch path ms']:.3g} ms against {r['loop ms']:.3g} ms (the text below says why)")

# %% [markdown]
# **Why the loop costs what it does.** At 4 and at 64 envs each step of the loop runs 15
# ops (the printout names them): nine compute, the others only index or reshape. So the loop's
# count is T times a fixed number: 16× the steps at 64 envs are 16× the ops. The scan's count grows
# with its rounds, not with the steps, and not at all with N: 1.4× for 16× the steps, a little
# under the rounds' 11/7, because a few ops run once per call.
#
# <details><summary>Details: the 15 ops by name, one env, and the scan's rounds</summary>
#
# * Six ops compute nothing: five indexings (`select`) and one `view`. Nine compute: four
#   multiplications, two additions, two subtractions (one of them `1.0 - dones`, an `rsub`) and one
#   write (`copy_`).
# * The `view` comes from CleanRL's shape for `next_value`, (1, N): from the last step on, the
#   carry `lastgaelam` is (1, N) too, and writing it into row t of `advantages`, shape (N,), first
#   views it as (N,).
# * With a single env that write takes one more op that computes nothing (an `expand`): 16 per
#   step at 2048×1.
# * The scan runs 7 rounds at T = 128 and 11 at T = 2048.
#
# </details>
#
# On a CPU every tensor op, however small, pays a fixed cost (the second table's "loop µs/op"),
# about the same in every row on a quiet machine. So the loop's time follows its op count; the
# line under the tables sets the two ratios side by side, or says the machine was too busy.
#
# <details><summary>Details: where the scan loses its lead</summary>
#
# The scan pays that cost per round, but each round works on the whole (T, N) rollout, about
# log₂ T times the loop's arithmetic. So its lead shrinks as N grows: at 2048×64, the second
# table's last row, the PyTorch path can even take longer than the loop (a line under the tables
# says so when it did here).
#
# </details>
#
# On a GPU each of the nine computing ops is also a launch: the loop costs about 9 × T launches per
# call, our GAE call one kernel. On the H200 at 4096×128:

# %%
loop_h200, ours_h200 = row(RES, "gae", 4096, 128, impl="pytorch_loop"), row(RES, "gae", 4096, 128)
print(f"H200, GAE 4096×128 forward, wall µs per call: PyTorch loop over time {loop_h200['full_call_us']:,.0f}, "
      f"rltriton_lite {ours_h200['full_call_us']:.1f}: {loop_h200['full_call_us'] / ours_h200['full_call_us']:.0f}×")

# %% [markdown]
# **Finding:** the loop pays a fixed cost for every op of every step, so its time grows with T. The
# scan pays that cost per round. A fused GPU kernel pays it once: at 4096×128, the loop costs over
# 400× our call.

# %% jupyter={"source_hidden": true}
# Checks: the claims above, on this machine's op counts and the committed run (CI runs them; skip when reading)
per_step = [r["loop ops/step"] for r in op_rows]
assert [round(x) for x in per_step] == [15, 16, 15]  # "15 ops" at 4 and 64 envs, "16 per step at 2048×1"
assert all(abs(x - round(x)) < 0.01 for x in per_step)  # T times a constant (and one op before the loop)
_names = {n: round(c / 128) for n, c in ops_of(cleanrl_gae, rollouts[128, 4]).items() if c >= 128}  # per step
assert _names == {"aten.select.int": 5, "aten.view.default": 1, "aten.mul.Tensor": 4, "aten.add.Tensor": 2,
                  "aten.sub.Tensor": 1, "aten.rsub.Scalar": 1, "aten.copy_.default": 1}  # "six ... nine compute"
_one_env = {n: round(c / 2048) for n, c in ops_of(cleanrl_gae, rollouts[2048, 1]).items() if c >= 2048}
assert {n: c - _names.get(n, 0) for n, c in _one_env.items() if c != _names.get(n)} == {"aten.expand.default": 1}
assert op_rows[2]["loop ops"] == 16 * op_rows[0]["loop ops"]  # "16× the steps at 64 envs are 16× the ops"
assert round(op_growth) == 17  # "17× the ops" from 128×4 to 2048×1
counts = [r["torch path ops"] for r in op_rows]
assert counts[1] == counts[2]  # the scan's count does not depend on N either
assert counts[1] < 2 * counts[0]  # 16× the steps: 4 more rounds, not 16× the ops
assert [math.ceil(math.log2(t)) for t in (128, 2048)] == [7, 11]  # "7 at T = 128 and 11 at T = 2048"
assert scan_growth == counts[1] / counts[0] and round(scan_growth, 1) == 1.4 and 1 < scan_growth < 11 / 7  # "1.4×"
assert all(r["torch path ops"] < r["loop ops"] / 5 for r in op_rows)
assert loop_h200["full_call_us"] > 400 * ours_h200["full_call_us"]  # "over 400× our call"

# %% [markdown]
# ### The same two calls under `torch.profiler`
#
# PyTorch's general tool for what `CountOps` did is `torch.profiler`: inside its `with` block it
# records every op that runs, with its CPU time and its number of calls, and
# `prof.key_averages().table(...)` sums them by op. The next cell profiles three calls of each code
# at 128×4 and prints the eight ops with the most **self CPU time**, an op's own time without the
# ops it calls.

# %%
from torch.profiler import ProfilerActivity  # noqa: E402
from torch.profiler import profile as torch_profile  # noqa: E402

PROFILED_CALLS = 3
profiled = {}  # code -> {aten op: calls}
for who, fn in [("CleanRL's loop", cleanrl_gae), ("rl.gae (the PyTorch path)", package_gae)]:
    fn(*rollouts[128, 4])  # a warm-up call, outside the profile
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(PROFILED_CALLS):
            fn(*rollouts[128, 4])
    averages = prof.key_averages()
    profiled[who] = {e.key: e.count for e in averages if e.key.startswith("aten::")}
    print(f"{who}, {PROFILED_CALLS} calls at 128×4: {len(profiled[who])} kinds of aten op, "
          f"{sum(profiled[who].values())} calls")
    print(averages.table(sort_by="self_cpu_time_total", row_limit=8))

# %% [markdown]
# **Finding:** the profiler tells the op counts' story with times attached. The loop's table is a
# few kinds of tiny op, indexing (`select`) and arithmetic, each run hundreds of times per call.
# `rl.gae` runs more kinds of op (the scan's `where`, `cat` and padding), but less than a fifth as
# many calls. The profiler counts more calls than `CountOps` did, because it also records the ops
# that run inside other ops.

# %% jupyter={"source_hidden": true}
# Checks: the profiler's counts (CI runs them; skip when reading)
_loop_p, _scan_p = profiled["CleanRL's loop"], profiled["rl.gae (the PyTorch path)"]
assert sum(_loop_p.values()) > 5 * sum(_scan_p.values())  # "less than a fifth as many calls"
assert len(_scan_p) > len(_loop_p)  # "rl.gae runs more kinds of op"
assert {"aten::where", "aten::cat"} <= set(_scan_p) and not {"aten::where", "aten::cat"} & set(_loop_p)
assert _loop_p["aten::select"] > 4 * 128 * PROFILED_CALLS  # "hundreds of times per call": about five per step
assert sum(_loop_p.values()) > PROFILED_CALLS * op_rows[0]["loop ops"]  # "more calls than CountOps"

# %% [markdown]
# **End of the minimum path.** Go to the exercises `vtrace_floor_bytes` and `lean_gae_loop` under
# [Exercises](#Exercises); the optional profiler and the open questions are for a second pass.

# %% [markdown]
# ## Optional: the profiler on this machine
#
# *A live tool, not a lesson:* how do the kernel, the PyTorch path and the code it replaces
# compare on this machine? `profile.profiler(name)` runs once with the defaults; change its
# controls and press "run". On a GPU it times all three and plots the bandwidth. On a CPU the
# Triton row is a **correctness run**, checked against the float64 reference and not timed: a CPU
# answers "is the PyTorch path a good fallback?", never "how fast is the kernel?". Its times are
# medians (of 5 calls on a CPU), a typical call, where section 5 took the fastest. The next cell
# prints the rows, which a static render of the widget does not show.

# %%
ui, prof_rows = profile.profiler("gae")
ui

# %%
print(f"gae, profiler rows ({LIVE})")
print(profile.live_table(prof_rows))
timed = [r for r in prof_rows if r["ms"] is not None]  # on a CPU the kernel is checked, not timed
assert {r["impl"] for r in prof_rows} == {"triton", "torch", "loop"} and {r["impl"] for r in timed} >= {"torch", "loop"}
assert all(r["ms"] > 0 and math.isfinite(r["ms"]) for r in timed)  # a time, whatever the load
assert all(r["rel_err"] < 1e-5 for r in prof_rows)  # all three correct
assert all(("gbps" in r) == (DEVICE == "cuda") for r in prof_rows)  # a bandwidth only from a GPU
if DEVICE == "cpu":
    (check,) = [r for r in prof_rows if r["impl"] == "triton"]
    assert check["ms"] is None and "correctness run" in check["timing"]  # the interpreter: checked, not timed
    assert all("median of 5 calls" in r["timing"] for r in timed)  # "medians ... of 5 calls on a CPU"

# %% [markdown]
# ## Exercises
#
# Checked exercises work as in notebooks 00 and 00b: write the starter's function, then run the cell after
# it. `print(exercises.task(name))` restates the task; solutions are in `notebooks/solutions/`.
#
# **`vtrace_floor_bytes`.** Compute V-trace's floor, as section 1 did for GAE. Write
# `vtrace_floor_bytes(B, T, elem_bytes)`.
#
# * **Inputs:** a `(B, T)` rollout's `B` and `T`; `elem_bytes`, the bytes of one float element.
# * **Returns:** the fewest bytes V-trace's forward must move, as notebook 04's kernel reads and
#   writes it. It reads `log_rhos`, `rewards`, `values` and `next_values` (a tensor of its own),
#   floats of `elem_bytes` each, and one flag, `terminated`, of 1 byte; it writes `vs` and the
#   policy-gradient advantages. (You need not have done notebook 04.)
# * **Edge case:** section 1 did not count GAE's $V(s_{t+1})$. V-trace's `next_values` is a separate
#   tensor (as from a target network), so it is read.
#
# <details><summary>Hint 1: where to start</summary>
#
# Section 1 counted GAE's bytes by hand, in the table `GAE_TRAFFIC`. Do the same for V-trace.
# Count one (row, step) first. Which tensors are read? Which are written? How many bytes is each
# element? Notebook 04's `vtrace_pg` exercise lists the inputs its kernel loads.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * List every tensor of the call, with "read" or "write", as in `GAE_TRAFFIC`.
# * Each one moves exactly once per step. The carry stays in the kernel.
# * A float element is `elem_bytes` bytes. The flag `terminated` is a bool: 1 byte, always.
# * `next_values` counts here: it is not the values tensor read one step on.
# * Sum the bytes per step. The floor is $B \cdot T \cdot$ (bytes per step).
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Take one step in float32, `vtrace_floor_bytes(1, 1, 4)`. GAE moves 17 bytes there (section 1);
# V-trace must move 25. If your count differs, the checker's message says what your count left out.
#
# * `(2, 3, 4)` is 6 steps: 150 bytes. In bfloat16, `(2, 3, 2)` is 78, not 75 (half of 150): the
#   flag stays 1 byte.
#
# ```python
# print(vtrace_floor_bytes(1, 1, 4), vtrace_floor_bytes(2, 3, 4), vtrace_floor_bytes(2, 3, 2))  # must print 25 150 78
# ```
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# # GAE (section 1): reads r_t, V_t and the flag; writes Â_t and the return
# gae_per_step = 2 * elem_bytes + 1 + 2 * elem_bytes  # 17 in float32
# per_step = ___ * elem_bytes + ___ + ___ * elem_bytes  # ___: float reads, flag bytes, float writes
# return B * T * per_step
# ```
#
# Which inputs does notebook 04's V-trace kernel read that GAE's does not, and how many outputs does
# it write (its `vtrace_kernel` exercise returns them)?
#
# </details>

# %%
def vtrace_floor_bytes(B, T, elem_bytes):
    # YOUR CODE
    raise NotImplementedError

# %%
exercises.attempt("vtrace_floor_bytes", vtrace_floor_bytes)

# %% [markdown]
# **`lean_gae_loop`.** Section 5 counted 15 tensor ops in every step of CleanRL's loop, each with
# a fixed cost. Most of them do not depend on the carry `lastgaelam`: they can run once, on whole
# tensors, before the loop. Write `lean_gae_loop`, CleanRL's loop with at most 6 ops per step.
#
# * **Inputs and returns:** `cleanrl_gae`'s (section 5): `rewards`, `values`, `dones`, `(T, N)`;
#   `next_value`, `(1, N)`; `next_done`, `(N,)`; `gamma`, `gae_lambda`. It returns
#   `(advantages, returns)`, each `(T, N)`.
# * Keep a Python loop over the steps for the recurrence
#   $\hat A_t = \delta_t + \gamma\lambda\,(1 - \text{done after } t)\,\hat A_{t+1}$.
# * **The budget:** the checker counts your ops as section 5's `CountOps` does, on 16 and 64
#   steps. An indexing `x[t]` is one op; a write `advantages[t] = ...` is two.
# * **Edge case:** CleanRL's `dones[t]` says the episode ended *before* step t. "Done after step
#   t" is `dones[t + 1]`, and `next_done` after the last step.
#
# <details><summary>Hint 1: where to start</summary>
#
# Print `inspect.getsource(cleanrl_gae)` again and mark each op in the loop's body. Which of them
# read `lastgaelam`? Only those must stay in the loop.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Before the loop, for all steps at once: "done after step t" (dones shifted one step on,
#   `next_done` last), the next values (values shifted, `next_value` last), $\delta_t$, and the
#   decay $\gamma\lambda$ where the episode goes on, 0 where it ended.
# * In the loop: one multiply and one add on row $t$ of those tensors, and the write.
# * `returns` is `advantages + values`, once, after the loop.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Count your loop's body: `delta[t]` (1), `decay[t]` (1), `*` (1), `+` (1), `advantages[t] = `
# (2): 6. Then compare with CleanRL's on section 5's rollout, and count:
#
# ```python
# args = (*rollouts[128, 4], 0.99, 0.95)  # section 5's rollout (next_value (1, N), as CleanRL's), gamma, gae_lambda
# print((lean_gae_loop(*args)[0] - cleanrl_gae(*args)[0]).abs().max())  # must print about 0 (float32 rounding)
# print(sum(ops_of(lean_gae_loop, args).values()) / 128)  # must print about 6, plus a little
# ```
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# ```python
# goes_on = torch.cat([dones[1:], next_done.reshape(1, -1)]) == 0  # the episode goes on after step t
# next_values = torch.cat([values[1:], ___])
# delta = rewards + torch.where(goes_on, gamma * next_values, 0.0) - values
# decay = torch.where(goes_on, ___, 0.0)
# for t in reversed(range(rewards.shape[0])):
#     lastgaelam = ___ + ___ * lastgaelam
#     advantages[t] = lastgaelam
# ```
#
# </details>
#
# When it passes, time both with section 5's `fastest_ms` on `rollouts[2048, 1]` (`args` built as
# in Hint 3). Is the gain the ratio of the op counts, section 5's 16 per step at 2048×1 against your 6?

# %%
def lean_gae_loop(rewards, values, dones, next_value, next_done, gamma, gae_lambda):
    # YOUR CODE
    raise NotImplementedError

# %%
exercises.attempt("lean_gae_loop", lean_gae_loop)

# %% [markdown]
# Without a checker:
#
# *(Answer each in its cell below: your teacher's grader collects the answers from
# them.)*
#
# 1. From `RES["rows"]`, find for each algorithm the smallest shape at which the forward call is
#    no longer host-bound (wall time at most twice its GPU time, section 3). What is the host time
#    per call you would need for 16×128 not to be host-bound?
#
# 2. Compare float32 and bfloat16 at 16384×1024 in `FULL["rows"]`: by how much should bfloat16 be
#    faster if the kernel is at the floor (count the bytes: the flag does not shrink)? Is it?
#
# 3. A PPO update calls GAE once per rollout and the loss once per minibatch. With the 4096×128
#    figures above (the loss's forward only, as if each minibatch were that size), estimate the
#    host time per update of 4 epochs × 32 minibatches, eager, and with the loss's forward
#    captured in a CUDA graph. What changes if you count the backward too?

# %% [markdown] tags=["answer-1"]
# **Answer 1.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-2"]
# **Answer 2.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-3"]
# **Answer 3.** *Your answer here (code for it: in cells under this one).*

# %% [markdown]
# ## What you now know
#
# * **The memory floor** is $B \cdot T$ × the fewest bytes per step ÷ the copy bandwidth: 17 B per
#   step for GAE in float32, 12 for PPO's loss. On the H200 every kernel comes close to it at
#   16384×1024.
# * **One model:** wall ≈ max(host, GPU), GPU ≈ $t_0$ + floor. On a large batch the GPU time lies
#   within about 20 % of it; on few long rows a scan's chain of chunks adds a latency it lacks.
# * **Two clocks.** At 16×128 and 4096×128 every call is **host-bound**: its wall time is more than
#   2× its GPU time. At most 1.2× a call is **GPU-bound**, and **mixed** in between.
# * **Paired comparison.** A call faster in every paired round is faster, whatever the host's
#   drift. Two timings that were not paired count as different only when more than 2.3× apart.
# * **A CUDA graph** removes the host's share, over 85 % of a call at 4096×128, best when it holds
#   a whole step. `torch.compile(mode="reduce-overhead")` captures the package's calls for you.
# * **On a CPU** the kernels are checked, not timed. CleanRL's loop costs 15 ops per step, each
#   with a fixed cost, so its time grows with T; `torch.profiler` lists those ops by name.

# %% [markdown]
# > **Further reading** (the two appendix notebooks)
# >
# > * **[Notebook 14](14_appendix_data.ipynb):** every source of the committed results and how far
# >   to trust a figure; why SAC passes 100 %; the noise rule, applied to our call against a bare
# >   launch.
# > * **Notebook 13, section 4:** the wider chunks the package uses for few long rows.
# > * **Notebook 13, section 5:** the time split of long rows, and why the package splits only where
# >   the wall time gains.

# %% [markdown]
# <details><summary><b>Sources and caveats</b>: the files and their cards, the host constant, how ratios are rounded, the noise rule's 2.3×, small shapes in L2</summary>
#
# **The files.** All five sit in `benchmarks/results/`. Every figure is from the H200 except section
# 3's paired ratio, from an H100; no figure of one card enters a calculation with one of the other.
#
# | source | card | what this notebook reads from it |
# | --- | --- | --- |
# | **benchmark run** (`H200-2026-12-06.json`, `RES`) | H200 | every call at four shapes, GPU and wall time: most figures |
# | **replay probe** (`checks/H200-2026-12-06-graph-replay.txt`) | H200, same session | GAE's call eager and as a CUDA graph (section 4) |
# | **paired loss probe** (`checks/H100-2026-12-06-loss-wall.txt`) | **H100** | PPO's loss against its eager formula, in 15 paired rounds (section 3) |
# | **wall probe** (`H200-2026-12-06-wall.txt`) | H200, same session | one plain `torch.add` (section 3), and each call's second timing (below) |
# | **previous sweep** (`H200-2026-11-30d.json`, `FULL`) | H200, older code | bfloat16 (open question 2) |
#
# The replay probe's script is `tools/graph_replay_probe.py`, and the paired loss probe's is
# `tools/wall_probe.py --losses`. Where two files timed the same call, the notebook quotes one.
# [Notebook 14](14_appendix_data.ipynb) lists every file of the course, with the package's commit
# and the versions of torch and Triton on those cards.
#
# **The host constant.** The model's 23 µs rounds the lightest forward call at 16×128 and
# 4096×128, which reads 22.5 µs in the benchmark run. At 16×128 the calls take up to 78 µs.
#
# **How ratios are rounded.** A single ratio is rounded to the nearest. A range's low end, and any
# "at least" figure, are rounded down; its high end, and any "up to" figure, are rounded up, so a
# written range holds every measured figure. Section 3's paired rounds ranged from 1.584 to 2.292:
# written "1.58× to 2.3×".
#
# **Where the 2.3× comes from.** The benchmark run and the wall probe each timed our 8 calls at
# three shapes, forward and with the backward, in the same session: 48 pairs of timings of one call.
# The pair furthest apart reads 2.24×: CRR's loss with its backward at 64×16384, 741 µs in the
# benchmark run and 331 µs in the wall probe. Rounded up, as an "up to" figure is, that is the
# rule's 2.3×: rounding down to 2.2× would call a gap of 2.21–2.24× real when drift alone produced
# one. The rule is a rule of thumb from this data: another host drifts by a different amount, so
# measure your own drift before you lean on it.
# [Notebook 14, section 6](14_appendix_data.ipynb) applies the rule step by step, to calls timed
# more than once too. Between separate runs of the benchmark the same call's wall time moved up to
# 2.9×: use that bound when you set a committed wall time beside your own.
#
# **Small shapes sit in L2.** Replays run back to back without flushing the L2 cache. On the
# committed runs' card it holds 60 MiB: `torch.cuda.get_device_properties(0).L2_cache_size` read
# 62,914,560 bytes there. Small inputs fit in it, so small shapes' GPU times are best cases, and
# only the big shape's % floor measures memory bandwidth. SAC at 64×16384 even "beats" its DRAM
# floor.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the box "Sources and caveats", on the committed files (CI runs them; skip when reading)
# the five files by name, each one's card (and the sweep's date), as it says itself
assert (profile.COMMITTED_RUN, profile.COMMITTED_WALL, profile.COMMITTED_REPLAY, profile.COMMITTED_LOSS_WALL,
        profile.COMMITTED_SWEEP) == ("H200-2026-12-06", "H200-2026-12-06-wall.txt", "checks/H200-2026-12-06-graph-replay.txt",
                                     "checks/H100-2026-12-06-loss-wall.txt", "H200-2026-11-30d")
_head = {f: open(os.path.join(RESULTS, f), encoding="utf-8").read(400)  # the first lines: card, date, method
         for f in (profile.COMMITTED_WALL, profile.COMMITTED_REPLAY, profile.COMMITTED_LOSS_WALL)}
assert RES["gpu"] == FULL["gpu"] == "NVIDIA H200" and (RES["date"], FULL["date"]) == ("2026-12-06", "2026-11-30")
assert _head[profile.COMMITTED_WALL].startswith("# NVIDIA H200, 2026-12-06")
assert _head[profile.COMMITTED_REPLAY].startswith("# NVIDIA H200")
assert _head[profile.COMMITTED_LOSS_WALL].startswith("# NVIDIA H100") and "15 interleaved rounds" in _head[profile.COMMITTED_LOSS_WALL]
assert {(r["B"], r["T"]) for r in RES["rows"]} == {(16, 128), (4096, 128), (64, 16384), (16384, 1024)}  # "four shapes"
assert "bfloat16" in {r["dtype"] for r in FULL["rows"]}  # the sweep's bfloat16 rows (open question 2)
# the 2.3×: 48 pairs (our 8 calls, 3 shapes, 2 passes), the furthest apart CRR's with its backward at 64×16384
assert len(ALGS) == 8 and len(_twice) == 48
_far = max(_twice, key=lambda k: max(_twice[k]) / min(_twice[k]))
assert _far == ("crr", (64, 16384), "fwd+bwd") and round(max(_twice[_far]) / min(_twice[_far]), 2) == 2.24
assert up(max(_twice[_far]) / min(_twice[_far])) == NOISE_X > 2.24  # "rounded up ... the rule's 2.3×"
assert [round(x) for x in _twice[_far]] == [741, 331]  # "741 µs in the benchmark run and 331 µs in the wall probe"
# small shapes in L2: SAC at 64×16384 fits in 60 MiB and "beats" its floor
sac_long = row(RES, "sac", 64, 16384)
assert sac_long["bytes"] < 60 * 2**20 and sac_long["kernel_ms"] < sac_long["floor_ms"]
