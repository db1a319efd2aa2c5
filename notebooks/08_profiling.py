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
#   what CUDA graphs and `torch.compile(mode="reduce-overhead")` remove; how to read the committed
#   H200 table and the profiler.
#
# * **Time:** 1.25–2 h for the reading and the two checked exercises; 2.5–3.5 h with the open
#   questions.
#
# * **Needs:** any of notebooks 01–07. No GPU: the GPU figures are the committed H200 results.
#   With a GPU, the profiler times the kernels live.
#
# * **Minimum path:** sections 1–5, then the checked exercises `vtrace_floor_bytes` and
#   `lean_gae_loop` (under "Exercises", at the end). Section 5 and `lean_gae_loop` are the ones a
#   CPU measures. These can wait: section 6, the two optional sections, and the open questions.

# %% [markdown]
# **The lesson to keep: two clocks.**
#
# * **Wall time** per call: what a training loop waits for, host included.
# * **GPU time**: the kernel alone, timed by replaying a CUDA graph.
#
# These kernels do a few flops per byte: they are memory-bound. Their **floor** is the time to move
# the fewest bytes they must move. Section 1 prices the floor and builds one small cost model from
# it. Sections 2–4 each ask you to **predict with the model first**, then read the measured figure:
# how close the H200 gets to the floor, where a call's time goes at RL shapes, and what is left
# when the host's share is taken out.
#
# > **About this data.** The figures come from one H200 device session on 2026-12-06, with the
# > package at commit c3288b4 (its kernels and call path are the ones you installed): the committed run of `python -m rltriton_lite.bench`
# > (`RES` below), then on the same code the wall-time probe (section 3) and the CUDA-graph replay
# > probe (section 4). That GPU box ran torch 2.11 and Triton 3.6; `requirements.txt` pins torch
# > 2.13 and Triton 3.9 for a CPU machine (a cell below prints the run's versions and yours). Host
# > times drift on a shared host, even within that session: read them as ranges (section 3).
# > Notebooks 13 and 14, appendices, hold the data's sources and the kernels' lore: optional.
#
# On a CPU, Triton runs only in its interpreter, whose time means nothing: the kernels are
# checked, not timed.
#
# **Skip the "Checks" cells** (folded, starting `# Checks`): CI runs them against the data files.

# %%
import math
import os
import re

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import ipywidgets as w
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


# %% [markdown]
# ## 1. The floor model, by hand
#
# **Question: how fast could a memory-bound kernel possibly be?** Count the bytes GAE and PPO's
# loss must move: every timing below is measured against the time they take.
#
# Per (row, step), GAE **reads** the reward, the value $V(s_t)$ and the episode-end flag, and
# **writes** the advantage $\hat A_t$ and the return $\hat A_t + V(s_t)$. Not counted: $V(s_{t+1})$
# (the next element of the values tensor, read once anyway), the carry (it stays in the kernel) and
# the bootstrap $V(s_T)$ (one number per row). float32 is 4 bytes, a bool 1. PPO's clipped loss
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
# **The floor.** The harness times a large device-to-device copy, counting reads and writes: that
# is the usable memory bandwidth. For GAE on 16384 rollouts × 1024 steps,
# $t_\text{floor} = B \cdot T \cdot \text{bytes per step} \,/\, \text{copy bandwidth}$:

# %%
B, T = 16384, 1024
gae_floor_ms = B * T * gae_bytes / BW * 1e3
print(f"{B} × {T} × {gae_bytes} B = {B * T * gae_bytes / 1e6:.1f} MB;  ÷ {BW / 1e12:.4f} TB/s = "
      f"{gae_floor_ms * 1e3:.1f} µs")
ppo_floor_ms = B * T * ppo_bytes / BW * 1e3
print(f"PPO: {B * T * ppo_bytes / 1e6:.1f} MB → {ppo_floor_ms * 1e3:.1f} µs")

# %% [markdown]
# **Finding:** at best as fast as its floor (bytes replayed from the L2 cache can beat it: notebook
# 14, section 8). GAE must move 17 B per step in float32, and
# PPO's loss 12 B. The floor is $B \cdot T$ times those bytes, divided by the copy bandwidth.
#
# **One model for the rest of this notebook.** A call has the host's work (Python, argument checks,
# the Triton launcher, the allocator) and the GPU's. Launches are asynchronous, so the two overlap:
#
# $$\text{wall} \approx \max(\text{host},\ \text{GPU}), \qquad \text{GPU} \approx t_0 + t_\text{floor}.$$
#
# * $t_\text{floor}$ is the floor above.
# * $t_0 \approx 2$ µs is a kernel's fixed cost on the GPU: what the smallest shape takes.
# * host $\approx 23$ µs is the lightest call's Python side (the wall probe's, section 3); the
#   estimators' own checks add more.
#
# Three constants and a byte count: sections 2–4 test this model against the H200's figures, and
# find where it breaks.

# %%
T0_US, HOST_US = 2.0, 23.0  # the model's constants (the Checks cell below reads them off the committed data)


def model_us(B, T, bytes_per_step, host_us=HOST_US):
    """The model's (wall, GPU) µs per call: GPU = t0 + floor, wall = max(host, GPU)."""
    gpu = T0_US + 1e6 * B * T * bytes_per_step / BW
    return max(host_us, gpu), gpu


for b, t in [(16, 128), (4096, 128), (16384, 1024)]:
    wall, gpu = model_us(b, t, gae_bytes)
    print(f"model, GAE {b}×{t}: GPU {gpu:.1f} µs, wall {wall:.1f} µs per call")


def against(prediction, measured, what):
    """Your prediction (None: not made) beside the measured figure."""
    print(f"{what}: measured {measured:.3g}" + ("" if prediction is None else f", you predicted {prediction:.3g}"))

# %% jupyter={"source_hidden": true}
# Checks: the claims above, on the committed run (CI runs them; skip when reading)
# "About this data": the GPU box's versions, and requirements.txt's pins (beside benchmarks/, here and in the handout)
assert (RES["versions"]["torch"].split(".")[:2], RES["versions"]["triton"].split(".")[:2]) == (["2", "11"], ["3", "6"])
_pins = os.path.join(os.path.dirname(os.path.dirname(RESULTS)), "requirements.txt")
if os.path.exists(_pins):
    _pins = open(_pins, encoding="utf-8").read()
    assert re.search(r"^torch==2\.13\.", _pins, re.M) and re.search(r"^triton==3\.9\.", _pins, re.M)
smallest = [row(RES, a, 16, 128) for a in list(profile.ops()) + ["linear_scan"]]
assert 1 < min(1e3 * r["kernel_ms"] for r in smallest) < T0_US < max(1e3 * r["kernel_ms"] for r in smallest) < 4
_probe = profile.wall_probe_us(os.path.join(RESULTS, profile.COMMITTED_WALL))  # the wall probe (section 3)
lightest = min(_probe[s]["fwd", a] for a in list(profile.ops()) + ["linear_scan"] for s in [(16, 128), (4096, 128)])
assert round(lightest) == HOST_US and max(r["full_call_us"] for r in smallest) > 2 * HOST_US  # "host ≈ 23 µs"
r_gae, r_ppo = row(RES, "gae", B, T), row(RES, "ppo", B, T)
assert r_gae["bytes"] == B * T * gae_bytes and r_ppo["bytes"] == B * T * ppo_bytes
# within 0.01 %: each row was priced with the bandwidth measured beside it; BW is their mean
assert math.isclose(gae_floor_ms, r_gae["floor_ms"], rel_tol=1e-4)
assert math.isclose(ppo_floor_ms, r_ppo["floor_ms"], rel_tol=1e-4)

# %% [markdown]
# ## 2. The committed H200 results: GPU time against the floor
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
    gpu_table.append({"algorithm": name, "B/step": "(exercise)" if hidden else r["bytes"] // (B * T),
                      "floor µs": "(exercise)" if hidden else 1e3 * r["floor_ms"], "GPU µs": 1e3 * r["kernel_ms"],
                      "% floor": "(exercise)" if hidden else 100 * r["floor_ms"] / r["kernel_ms"],
                      "wall µs/call": r["full_call_us"]})
print(f"H200, committed results {RES['date']}, {B}×{T} float32, forward")
print(profile.table(gpu_table))
against(my_pct_floor, 100 * row(RES, "gae", B, T)["floor_ms"] / row(RES, "gae", B, T)["kernel_ms"],
        "GAE's % floor at 16384×1024")

# %% [markdown]
# **Finding:** close to the floor. Forward, at 16384×1024, every kernel reaches 79.0–99.0 % of
# copy speed. GAE was slower than the model said: 83 % of the floor, not 97 % (80 µs, not 69). At
# this big shape the kernel is most of a call: the scans' and SAC's wall time is at most 1.11×
# their GPU time, PPO's and CRR's 1.8× (section 3 names these cases).
#
# <details><summary>Details: the model against the H200, wall time</summary>
#
# The host prepares the next call while the kernel runs, so wall ≈ max(host, GPU). PPO's and CRR's
# losses likely have more host work than their 50 µs kernels: their calls cost 78.5–94.1 µs at the
# smaller shapes 4096×128 and 64×16384, which is nearly all host; this run did not measure the
# host's share at 16384×1024 itself. SAC comes closest to 100 % because it mostly reads, and the
# floor prices a copy's read + write mix (notebook 14, section 8).
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the claims above, on the committed run (CI runs them; skip when reading)
for name in ALGORITHMS:
    r = row(RES, name, B, T)
    if name in profile.ops():
        assert r["bytes"] == B * T * profile.op(name).bytes_per_step(4)  # the harness counts as we did
pct = {name: 100 * row(RES, name, B, T)["floor_ms"] / row(RES, name, B, T)["kernel_ms"] for name in ALGORITHMS}
assert [round(min(pct.values()), 1), round(max(pct.values()), 1)] == [79.0, 99.0]  # "79.0–99.0 %", V-trace's too
assert min(pct, key=pct.get) == "discounted_return" and max(pct, key=pct.get) == "sac"  # the lowest, the highest
assert all(t["wall µs/call"] < 2 * t["GPU µs"] for t in gpu_table)  # big: no call host-bound (section 3)
_big = {t["algorithm"]: t["wall µs/call"] / t["GPU µs"] for t in gpu_table}
assert round(max(v for a, v in _big.items() if a not in ("ppo", "crr")), 2) == 1.11  # "at most 1.11×"
assert [round(_big[a], 1) for a in ("ppo", "crr")] == [1.8, 1.8]  # "1.8×"
_host = [row(RES, a, *s)["full_call_us"] for a in ("ppo", "crr") for s in [(4096, 128), (64, 16384)]]
assert [round(min(_host), 1), round(max(_host), 1)] == [78.5, 94.1]  # "78.5–94.1 µs a call"
assert all(50 <= round(t["GPU µs"]) <= 52 for t in gpu_table if t["algorithm"] in ("ppo", "crr"))  # "50 µs kernels"
gae_model_gpu = model_us(B, T, gae_bytes)[1]
assert round(100 * gae_floor_ms * 1e3 / gae_model_gpu) == 97 and round(pct["gae"]) == 83  # "97 %", "83 %"
assert round(gae_model_gpu) == 69 and round(1e3 * row(RES, "gae", B, T)["kernel_ms"]) == 80  # "67 + 2", "80 µs"

# %% [markdown]
# ## 3. Wall time versus GPU time at the shapes RL code uses
#
# **Question: at the shapes RL code uses, where does a call's time go?** RL shapes are small: 4096
# environments × 128 steps, 16 × 128, or a few long rollouts (64 × 16384). There the kernel takes a
# few µs, but a Python call also pays **host** work: argument checks, the Triton launcher, the
# allocator, the CUDA launch. Launches are asynchronous, so back-to-back calls cost about
# max(host time, GPU time) each: the model's wall time.
#
# **How the course reads a wall time.** On a shared host the same call moves by about 2× from run
# to run: the harness and the wall probe, minutes apart in one session, timed the same calls up to
# 2.2× apart. So a wall-time gap under 2× counts as a finding only where a second measurement
# agrees (the wall probe, `profile.COMMITTED_WALL`, 15 interleaved rounds); otherwise the course
# calls it noise. GPU times are steadier, but small inputs sit in the L2 cache, which can make
# them beat the floor (section 4).
#
# **Three labels**, one definition for the whole course. Divide a call's wall time by its GPU time:
#
# | wall ÷ GPU time | label | what it says |
# | --- | --- | --- |
# | more than 2× | **host-bound** | the host sets the call's time |
# | in between | **mixed** | both matter; one run cannot say by how much |
# | at most 1.2× | **GPU-bound** | the kernel is the call |
#
# The labels are a convention, not a law. Why 2×: a wall time drifts by about 2× from run to run
# (above), so a gap well above 2× survives a second run. A ratio near a boundary can change label
# between runs: V-trace at 64×16384 is 2.4× in the committed run and 1.8× in the wall probe. Why
# 1.2×: in the committed run no call falls between 1.11× and 1.37×, so this bound, read off the
# data, splits the calls cleanly; at 1.11× or less the host adds almost nothing. `bound` (next
# cell) applies the labels.
#
# **Predict first**, with `model_us`: GAE's wall and GPU time per call at 4096×128 (its floor is
# 2 µs), and at 64×16384 (floor 4 µs). Which of the two is the bigger share of a call at each
# shape? Put your numbers in the next cell, then run it, and the chart that sets the model beside it.

# %%
my_wall_us, my_gpu_us = None, None  # your prediction: GAE at 4096×128, µs per call
HOST_X, GPU_X = 2.0, 1.2  # wall ÷ GPU time: above 2×, host-bound; at most 1.2×, GPU-bound; mixed in between


def bound(wall_us, gpu_us):
    """The course's label of a call, from its wall time and its GPU time."""
    x = wall_us / gpu_us
    return "host-bound" if x > HOST_X else "GPU-bound" if x <= GPU_X else "mixed"


SHAPES = [(16, 128), (4096, 128), (64, 16384), (16384, 1024)]
wall_gpu = []
for name in ALGORITHMS:
    line = {"algorithm": name}
    for b, t in SHAPES:
        r = row(RES, name, b, t)
        line[f"{b}×{t} wall"], line[f"{b}×{t} GPU"] = r["full_call_us"], 1e3 * r["kernel_ms"]
    wall_gpu.append(line)
print(f"H200, committed results {RES['date']}: µs per forward call, wall (host included) and GPU (graph replay)")
print(profile.table(wall_gpu, digits=3))
against(my_wall_us, row(RES, "gae", 4096, 128)["full_call_us"], "GAE 4096×128, wall µs per call")
against(my_gpu_us, 1e3 * row(RES, "gae", 4096, 128)["kernel_ms"], "GAE 4096×128, GPU µs per call")

# %%
fig, ax = plt.subplots(figsize=(8, 3.4))
labels = [f"{b}×{t}" for b, t in SHAPES]
for name, color in [("gae", "tab:green"), ("ppo", "tab:purple"), ("sac", "tab:orange")]:
    (t,) = [t for t in wall_gpu if t["algorithm"] == name]
    ax.plot(labels, [t[f"{s} wall"] for s in labels], "o-", color=color, label=f"{name}: wall per call")
    ax.plot(labels, [t[f"{s} GPU"] for s in labels], "s--", color=color, label=f"{name}: GPU time")
ax.plot(labels, [model_us(b, t, gae_bytes)[1] for b, t in SHAPES], "k:", marker="x", label="model, gae: GPU time")
ax.set(yscale="log", ylabel="µs per forward call (log)", xlabel="B × T (shape of the rollout)",
       title=f"H200, committed results {RES['date']}: the gap is host time")
ax.legend(fontsize=7, ncol=3)
plt.tight_layout()
plt.show()

# %% [markdown]
# Each call's label, from the table above:

# %%
labels = [{"algorithm": t["algorithm"], **{f"{b}×{T_}": bound(t[f"{b}×{T_} wall"], t[f"{b}×{T_} GPU"])
                                           for b, T_ in SHAPES}} for t in wall_gpu]
print(f"H200, committed results {RES['date']}, forward: host-bound (wall > {HOST_X:g}× GPU), "
      f"GPU-bound (wall ≤ {GPU_X:g}× GPU) or mixed")
print(profile.table(labels))

# %% [markdown]
# **Finding:** mostly to the host. At 16×128 and 4096×128, every call is host-bound: its wall time
# is 7–46× its GPU time. The model got that right: the host is the call. So a faster kernel barely
# changes what the training loop waits for.
#
# <details><summary>Details: host times as ranges, where the model breaks</summary>
#
# Read one run's wall times as ranges: they drift by about 2× on a shared host, while the GPU
# times, graph replays, are steadier. The model breaks at 64×16384: it says about 6 µs of GPU time
# for GAE, but the scans take 27–34 µs there. A scan's steps depend on each other through the
# carry, and 64 rows give few programs for the H200's 132 multiprocessors, so the time follows the
# chain of chunks, not the bytes: a latency term the model lacks.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the claims above, on the committed run (CI runs them; skip when reading)
ratio = {(t["algorithm"], s): t[f"{s[0]}×{s[1]} wall"] / t[f"{s[0]}×{s[1]} GPU"] for t in wall_gpu for s in SHAPES}
small = [ratio[a, s] for a in ALGORITHMS for s in [(16, 128), (4096, 128)]]
assert min(small) > 2 and [round(min(small)), round(max(small))] == [7, 46]  # host-bound: wall 7-46x the GPU time
assert all(ratio[a, (16384, 1024)] <= 2 for a in ALGORITHMS)  # no call host-bound at 16384×1024
assert all(any(ratio[a, s] > 2 for a in ALGORITHMS) for s in [(16, 128), (4096, 128), (64, 16384)])  # "only 16384×1024"
scans = ["discounted_return", "gae", "td_lambda", "vtrace", "linear_scan"]
_label = {(t["algorithm"], s): t[s] for t in labels for s in t if s != "algorithm"}
assert {a: _label[a, "16384×1024"] for a in ALGORITHMS} == {a: "mixed" if a in ("ppo", "crr") else "GPU-bound"
                                                          for a in ALGORITHMS}  # "the scans and SAC GPU-bound, PPO and CRR mixed"
assert all(_label[a, s] == "host-bound" for a in ALGORITHMS for s in ["16×128", "4096×128"])  # "every call is host-bound"
assert {a: _label[a, "64×16384"] for a in scans} == {"discounted_return": "GPU-bound", "gae": "mixed", "td_lambda": "mixed",
                                                    "linear_scan": "mixed", "vtrace": "host-bound"}
assert round(ratio["discounted_return", (64, 16384)], 2) == 1.08  # "GPU-bound there (1.08×)"
_mixed = [ratio[a, (64, 16384)] for a in ("gae", "td_lambda", "linear_scan")]
assert [round(min(_mixed), 2), round(max(_mixed), 2)] == [1.37, 1.74]  # "mixed (1.37–1.74×)"
assert [round(t["64×16384 wall"], 1) for t in wall_gpu if t["algorithm"] == "gae"] == [52.4]  # "52.4 µs of wall time"
assert [round(t["64×16384 GPU"], 1) for t in wall_gpu if t["algorithm"] == "gae"] == [32.3]  # "for 32.3 µs of GPU time"
assert round(ratio["vtrace", (64, 16384)], 1) == 2.4  # V-trace host-bound in this run, "2.4×"
_vt_probe = _probe[64, 16384]["fwd", "vtrace"]
assert round(_vt_probe) == 60 and round(_vt_probe / (1e3 * row(RES, "vtrace", 64, 16384)["kernel_ms"]), 1) == 1.8
assert bound(_vt_probe, 1e3 * row(RES, "vtrace", 64, 16384)["kernel_ms"]) == "mixed"  # "but mixed in the wall probe"
_others = [_probe[64, 16384]["fwd", a] / (1e3 * row(RES, a, 64, 16384)["kernel_ms"]) for a in scans if a != "vtrace"]
assert [round(min(_others), 1), round(max(_others), 1)] == [1.1, 1.2]  # "the other four at 1.1–1.2×"
# the bounds: 2× is the host's drift (the 2.2× below); no call of the run, either pass, between 1.11× and 1.37×
_all = [r["full_call_us"] / (1e3 * r["kernel_ms"]) for r in RES["rows"] if (r["impl"], r["dtype"]) == ("rltriton_lite", "float32")]
assert [round(max(x for x in _all if x <= GPU_X), 2), round(min(x for x in _all if x > GPU_X), 2)] == [1.11, 1.37]
assert max(scans, key=lambda a: _probe[16, 128]["fwd", a]) == "vtrace"  # "the scan with the most host work"
assert all(_label[a, "64×16384"] == "host-bound" for a in ["sac", "ppo", "crr"])  # elementwise: host-bound again
long_gpu = [t["64×16384 GPU"] for t in wall_gpu if t["algorithm"] in scans]
long_floor = [1e3 * row(RES, a, 64, 16384)["floor_ms"] for a in scans]
assert round(model_us(64, 16384, gae_bytes)[1]) == 6  # "about 6 µs of GPU time for GAE there"
_gae_wall = [row(RES, "gae", b, t)["full_call_us"] for b, t in [(16, 128), (4096, 128)]]
assert [round(x, 1) for x in _gae_wall] == [50.1, 28.1] and round(_gae_wall[0] / _gae_wall[1], 1) == 1.8
assert [_probe[s]["fwd", "gae"] for s in [(16, 128), (4096, 128)]] == [30.6, 28.4]  # "30.6 against 28.4 µs"
assert round(_probe[16, 128]["fwd", "gae"] / _probe[4096, 128]["fwd", "gae"], 2) == 1.08  # "1.08×"
_pairs = [max(h, q) / min(h, q) for s in [(16, 128), (4096, 128), (64, 16384)] for a in ALGORITHMS
          for p in ("fwd", "fwd+bwd") for h, q in [(row(RES, a, *s, pass_=p)["full_call_us"], _probe[s][p, a])]]
assert round(max(_pairs), 1) == 2.2  # "the same calls up to 2.2× apart"
_add = [sec["fwd", "torch.add"] for sec in _probe.values()]
_noop = [sec["fwd", "noop kernel[grid]"] for sec in _probe.values()]
assert [min(_add), max(_add)] == [8.2, 11.0] and [min(_noop), max(_noop)] == [12.5, 17.8]  # "8.2–11.0", "12.5–17.8 µs"
assert all(abs(t[f"{s[0]}×{s[1]} GPU"] - model_us(*s, profile.op(t["algorithm"]).bytes_per_step(4))[1]) < 4
           for t in wall_gpu for s in [(16, 128), (4096, 128)] if t["algorithm"] in profile.ops())  # the model fits
assert all(t["64×16384 GPU"] < 2 * model_us(64, 16384, profile.op(a).bytes_per_step(4))[1]
           for t in wall_gpu for a in ["sac", "ppo", "crr"] if t["algorithm"] == a)  # the losses fit it there too
assert [math.floor(min(long_gpu)), round(max(long_gpu))] == [27, 34]  # "the scans take 27–34 µs"
_over = [g / f for g, f in zip(long_gpu, long_floor)]
assert 2 <= min(long_floor) and max(long_floor) < 6.5 and 5 < min(_over) and max(_over) < 13.5  # "5–13× their 2–6 µs floors"
small_wall = [t[f"{s} wall"] for t in wall_gpu for s in ["16×128", "4096×128"]]
small_gpu = [t[f"{s} GPU"] for t in wall_gpu for s in ["16×128", "4096×128"]]
assert [round(min(small_wall), 1), round(max(small_wall), 1)] == [22.5, 90.8]  # "22.5–90.8 µs of wall time"
assert [round(min(small_gpu), 1), round(max(small_gpu), 1)] == [1.3, 5.2]  # "for 1.3-5.2 µs of GPU work"

# %% [markdown]
# ## 4. Taking the host out: CUDA graphs and `torch.compile(mode="reduce-overhead")`
#
# **Question: how do you take the host's share out of a call, and what does that cost?**
#
# **A CUDA graph** records the kernels a region launches, once (`torch.cuda.graph(g)`). Then
# `g.replay()` resubmits them all with one driver call: no Python, no checks, no allocator. That
# call is still one launch from the host. A graph that holds a whole update step pays it once for
# all its kernels; a graph of a single call pays it every call. The harness's GPU times replay a
# graph of many calls, so each kernel costs its GPU time alone.
#
# The price: shapes and addresses are frozen (copy new data in: `static.copy_(fresh)`); each replay
# overwrites the outputs; nothing inside may sync with the host (`.item()`) or branch on data.
# Every public function of this package can be captured.
#
# **Predict first.** A replay leaves only the model's GPU term, $t_0 + t_\text{floor}$. For GAE at
# 4096×128, what share of section 3's wall time per call would capturing remove?

# %%
my_removed_pct = None  # your prediction: the % of GAE's 4096×128 call a CUDA graph removes
saving = [{"algorithm": t["algorithm"], "eager wall µs": t["4096×128 wall"],
           "graph replay (GPU) µs": t["4096×128 GPU"],
           "host time removed %": 100 * (1 - t["4096×128 GPU"] / t["4096×128 wall"])} for t in wall_gpu]
print("H200, committed results, 4096×128 forward: what capturing the call in a CUDA graph removes")
print(profile.table(saving, digits=3))
against(my_removed_pct, next(x["host time removed %"] for x in saving if x["algorithm"] == "gae"),
        "GAE 4096×128, % of the call a graph removes")

# %% [markdown]
# <details><summary>Details: Caution: small shapes sit in L2</summary>
#
# Replays run back to back without flushing the L2 cache: 60 MiB on the committed runs' H200
# (`torch.cuda.get_device_properties(0).L2_cache_size` read there: 62,914,560 bytes). Small inputs
# fit in it. So small shapes' GPU times are best cases; only the big shape's % floor measures memory
# bandwidth. SAC at 64×16384 even "beats" its DRAM floor (the next cell).
#
# </details>

# %%
sac_long = row(RES, "sac", 64, 16384)
print(f"SAC 64×16384: {sac_long['bytes'] / 1e6:.0f} MB, floor {1e3 * sac_long['floor_ms']:.1f} µs, "
      f"GPU {1e3 * sac_long['kernel_ms']:.1f} µs")

# %% [markdown]
# **`torch.compile(mode="reduce-overhead")`** captures for you: Inductor fuses the torch ops around
# our kernels, records CUDA graphs, and replays them for the same shapes. The region must trace
# into one graph. This package's functions are `torch.library` custom ops
# (`torch.ops.rltriton_lite.gae`, …), so `fullgraph=True` passes.
#
# Any machine can check that: a step calling GAE then PPO's loss traces into one graph of custom
# ops. The backend below only records that graph and runs it eagerly.

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

# %%
if DEVICE == "cuda":  # capture that step in a CUDA graph; time eager calls against replays
    g = torch.Generator(device="cuda").manual_seed(0)
    static = [torch.randn(4096, 128, device="cuda", generator=g) for _ in range(4)]
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm up (compile and plan the kernels) outside the capture
        for _ in range(3):
            step(*static)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_loss = step(*static)
    fresh = [torch.randn_like(x) for x in static]
    for s, f in zip(static, fresh):
        s.copy_(f)
    graph.replay()
    assert torch.equal(static_loss, step(*fresh))
    eager_us = 1e3 * profile.time_ms(lambda: step(*static), DEVICE)
    replay_us = 1e3 * profile.time_ms(graph.replay, DEVICE)
    print(f"GAE + PPO loss, 4096×128 ({LIVE}): eager {eager_us:.1f} µs per step, graph replay {replay_us:.1f} µs "
          "(do_bench medians)")
else:
    print("no GPU: nothing to capture here; the committed H200 figures above are the data")

# %% [markdown]
# **Finding:** capture the calls in a CUDA graph. In the committed H200 table above, that removes
# 88 % of GAE's call at 4096×128, and over 85 % for every algorithm.
#
# What a graph removes is the host's share. The table's GPU times replay one graph of many calls.
# A graph of one call still pays one replay launch per call, so it removes less. A probe on the same
# H200, in the same session (`tools/graph_replay_probe.py`; its output, `profile.COMMITTED_REPLAY`:
# `benchmarks/results/checks/H200-2026-12-06-graph-replay.txt`) timed GAE at 4096×128 three ways:
#
# | H200 probe, GAE 4096×128 | µs per call | removed |
# | --- | --- | --- |
# | eager | 25.9 | none |
# | a graph of that one call | 4.5 | about 83 % |
# | a graph of 100 calls | 3.2 | about 88 % |
#
# The price is frozen shapes and addresses. `torch.compile(mode="reduce-overhead")` captures for
# you.
#
# <details><summary>Details: the model's figures, and compiling without replays</summary>
#
# * **The model against the H200's call.** The model's GPU time for GAE, 4 µs, is 15 % of the
#   28 µs call the H200 measured. So the model predicts 85 % removed; the H200 table measured 88 %.
# * **Compiling without replays** can even add host work (notebook 14, section 6).
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the claims above, on the committed run (CI runs them; skip when reading)
assert all(s["host time removed %"] > 85 for s in saving)
assert round(next(s["host time removed %"] for s in saving if s["algorithm"] == "gae")) == 88  # "88 % of GAE's call"
_replay = open(os.path.join(RESULTS, profile.COMMITTED_REPLAY), encoding="utf-8").read()
assert _replay.startswith("# NVIDIA H200")  # "a probe on the same H200"
_replay = {(int(m[0]), int(m[1])): [float(x) for x in m[2:]]  # "  4096x128  25.9  4.5  3.2", as the probe printed it
           for m in re.findall(r"^\s*(\d+)x\s*(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", _replay, re.M)}
assert _replay[4096, 128] == [25.9, 4.5, 3.2]  # "25.9 µs eager, 4.5 µs as a graph of one call, 3.2 µs in one of 100"
_eager, _one, _hundred = _replay[4096, 128]
assert [round(100 * (1 - _one / _eager)), round(100 * (1 - _hundred / _eager))] == [83, 88]  # the probe's "removed"
gae_4096 = row(RES, "gae", 4096, 128)
assert round(model_us(4096, 128, gae_bytes)[1]) == 4 and round(gae_4096["full_call_us"]) == 28
assert round(100 * (1 - model_us(4096, 128, gae_bytes)[1] / gae_4096["full_call_us"])) == 85
assert round(100 * model_us(4096, 128, gae_bytes)[1] / gae_4096["full_call_us"]) == 15  # "15 % of the 28 µs call"
assert sac_long["bytes"] < 60e6 and sac_long["kernel_ms"] < sac_long["floor_ms"]

# %% [markdown]
# ## 5. A real measurement on this CPU: one call against CleanRL's loop over time
#
# **Question: on this CPU, what does CleanRL's loop over time cost against one call, and why?**
# Two PyTorch codes give the same advantages: CleanRL's `ppo.py` loop, one Python iteration per
# step; and the package's PyTorch path, `rl.gae` on CPU tensors, ⌈log₂ T⌉ rounds of whole-tensor
# ops (a scan, notebook 00). Inputs are time-major, `(T, N)`, as CleanRL and SB3 store rollouts.

# %%
import inspect  # noqa: E402

from rltriton_lite.integrations import cleanrl  # noqa: E402

cleanrl_gae = cleanrl.loop  # CleanRL's loop as `ppo.py` has it, kept verbatim (its tests' oracle)
# the CleanRL drop-in: the same arguments, one `rl.gae` call inside (the PyTorch path on CPU tensors);
# it shifts CleanRL's `dones` ("ended before step t") into `terminated` ("ended at step t")
package_gae = cleanrl.gae
print(inspect.getsource(cleanrl_gae))

# %% [markdown]
# Three rollouts: CleanRL's default (128 steps × 4 envs), SB3's default (2048 × 1) and SB3's steps
# with 64 envs. The advantages must agree (asserted); the times are printed, not asserted. SB3's
# default has 16× the steps, so the loop should take about 16× as long on an idle machine: a
# step's few small ops cost about the same with 1 env as with 4. On a busy machine the ratio comes
# out higher, because the fastest of 5 calls favours the short call: it more easily finds a quiet
# moment. Timings on a shared CPU move, either way, from run to run:
# the op counts further down are the steady result, and the times only illustrate them.
#
# <details><summary>Details: how the CPU times are taken, and why they move</summary>
#
# Each time is the fastest of 5 calls, after one warm-up call, on one thread
# (`profile.cpu_threads(1)`). On a shared machine, one paused thread can make a multi-threaded call
# 100× slower. A pause only ever adds time, so the fastest call is the steadiest figure.
#
# A ratio far from what the text expects most likely means other processes, or this one's Python,
# took the CPU during some calls. A figure that moves between runs is noise; the op counts below
# are the same on every run.
#
# </details>

# %%
def fastest_ms(fn, calls=5):
    """profile.fastest_ms on one thread: the fastest of `calls` calls, in ms, after one warm-up call."""
    with profile.cpu_threads(1):
        return profile.fastest_ms(fn, calls)


CPU_SIZES = [(128, 4, "CleanRL default"), (2048, 1, "SB3 default"), (2048, 64, "SB3 steps, 64 envs")]
cpu_rows, rollouts = [], {}
for T_, N_, who in CPU_SIZES:
    g = torch.Generator().manual_seed(0)
    rollout = (torch.randn(T_, N_, generator=g), torch.randn(T_, N_, generator=g),  # rewards, values
               (torch.rand(T_, N_, generator=g) < 0.02).float(), torch.randn(N_, generator=g),  # dones, next_value
               (torch.rand(N_, generator=g) < 0.02).float())  # next_done
    rollouts[T_, N_] = rollout  # kept: the op counts below use the same rollouts
    loop_ms = fastest_ms(lambda: cleanrl_gae(*rollout))
    torch_ms = fastest_ms(lambda: package_gae(*rollout))
    err = profile.rel_err(package_gae(*rollout)[0], cleanrl_gae(*rollout)[0].double().numpy())
    cpu_rows.append({"T × N": f"{T_}×{N_}", "who": who, "loop ms": loop_ms, "torch path ms": torch_ms,
                     "loop µs/step": 1e3 * loop_ms / T_, "loop ÷ torch path": loop_ms / torch_ms, "rel. error": err})
print("GAE, float32, wall time per call on this CPU (one thread), fastest of 5: real timing")
print(profile.table(cpu_rows, digits=3))
assert all(r["rel. error"] < 1e-5 for r in cpu_rows)  # the same advantages
growth = cpu_rows[1]["loop ms"] / cpu_rows[0]["loop ms"]
print(f"the loop at 2048×1 ÷ at 128×4: {growth:.3g}× the time, for 16× the steps (16× if idle; more if busy)")
LOOP_OPS_PER_STEP = 14  # the ATen ops of one step of the loop: counted below
print(f"the loop's µs per op (µs per step ÷ {LOOP_OPS_PER_STEP} ops per step): "
      + ", ".join(f"{r['T × N']}: {r['loop µs/step'] / LOOP_OPS_PER_STEP:.3g}" for r in cpu_rows))

# %%
fig, ax = plt.subplots(figsize=(7, 3.2), dpi=100)
x = range(len(cpu_rows))
for dx, key, color, label in [(-0.2, "loop ms", "tab:red", "CleanRL's loop over time"),
                              (0.2, "torch path ms", "tab:blue", 'cleanrl.gae (one rl.gae call)')]:
    bars = ax.bar([i + dx for i in x], [r[key] for r in cpu_rows], 0.4, color=color, label=label)
    ax.bar_label(bars, fmt="%.3g", fontsize=8, padding=2)
ax.set(yscale="log", xlabel="rollout (steps T × environments N)", ylabel="ms per call (log scale)")
ax.set_ylim(top=10 * max(r["loop ms"] for r in cpu_rows))  # room for the labels and the legend
ax.set_xticks(list(x), [f"{r['T × N']}\n({r['who']})" for r in cpu_rows])
ax.set_title("GAE on this CPU (one thread): wall time per call, fastest of 5 (real timing)", fontsize=10)
ax.legend(fontsize=8, loc="upper left")
plt.tight_layout()
plt.show()

# %% [markdown]
# **Why the loop costs what it does.** Every tensor op, however small, pays a fixed cost of µs to
# tens of µs (the cell above printed this run's µs per op). So a call's time follows its op count, which is
# the same on every machine. A `TorchDispatchMode` counts the ops run inside its `with` block:

# %%
import collections  # noqa: E402

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402


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


loop_ops = ops_of(cleanrl_gae, rollouts[128, 4])  # the loop's ops per step, at CleanRL's size
print({name: round(n / 128, 2) for name, n in loop_ops.items()})

# %% [markdown]
# Per step: five indexings (`select`, a view: no compute), four multiplications, two additions, two
# subtractions and one write (`copy_`). Both functions at every size:

# %%
op_rows = [{"T × N": f"{T_}×{N_}", "loop ops": sum(ops_of(cleanrl_gae, rollouts[T_, N_]).values()),
            "torch path ops": sum(ops_of(package_gae, rollouts[T_, N_]).values())} for T_, N_, _ in CPU_SIZES]
for r, (T_, _, _) in zip(op_rows, CPU_SIZES):
    r["loop ops per step"] = r["loop ops"] / T_
print("GAE: ATen ops per call (the same on every machine)")
print(profile.table(op_rows, digits=3))
per_step = [r["loop ops per step"] for r in op_rows]
assert 10 <= min(per_step) and max(per_step) <= 20  # a dozen or so ops per step
assert round(per_step[0]) == 14  # the fourteen listed above, as cleanrl.loop's docstring says
assert max(per_step) < 1.01 * min(per_step)  # the same at every size: T times a constant, whatever N
counts = [r["torch path ops"] for r in op_rows]
assert counts[1] == counts[2]  # the scan's count does not depend on N either
assert counts[1] < 2 * counts[0]  # 16× the steps: 4 more rounds, not 16× the ops
assert all(r["torch path ops"] < r["loop ops"] / 5 for r in op_rows)

# %% [markdown]
# So T sets the loop's time. The scan pays its fixed costs per round (7 at T = 128, 11 at
# T = 2048), not per step; but it does log₂ T times the arithmetic, so its lead narrows as N grows.
# On a GPU each computing op is also a launch: the loop costs about 9 × T launches per call, the
# fused kernel one. On the H200, at 4096×128:

# %%
loop_h200, ours_h200 = row(RES, "gae", 4096, 128, impl="pytorch_loop"), row(RES, "gae", 4096, 128)
print(f"H200, committed results {RES['date']}, GAE 4096×128 forward, wall µs per call: "
      f"PyTorch loop over time {loop_h200['full_call_us']:,.0f}, rltriton_lite {ours_h200['full_call_us']:.1f}")

# %% [markdown]
# **Finding:** the loop pays a fixed cost for every op of every step. On the H200 at 4096×128, it
# costs over 100× our call. So the loop's time grows with T. The scan pays that cost per round. A
# fused GPU kernel pays it once.

# %% jupyter={"source_hidden": true}
# Checks: the claims above, on the committed run (CI runs them; skip when reading)
assert loop_h200["full_call_us"] > 100 * ours_h200["full_call_us"]

# %% [markdown]
# **End of the minimum path.** Go to the exercises `vtrace_floor_bytes` and `lean_gae_loop` under
# [Exercises](#Exercises); section 6 and the two optional sections are for a second pass.

# %% [markdown]
# ## 6. The "profile it" sections of notebooks 01–07, read once
#
# **Question: what do the "profile it" cells of notebooks 01–07 show, and how do you read them?**
# Each shows its algorithm's committed H200 table and chart, read by `profile.committed(name)`;
# nothing is re-measured. One line per implementation, shape and pass (`fwd`, or `fwd+bwd` with the
# backward):
#
# * **Ours:** the Triton kernel.
# * **The code it replaces:** a "PyTorch loop over time" for the scans, an "eager PyTorch formula"
#   for PPO, SAC and CRR, and `torch.compile` of that formula.
# * **The peers:** torchrl, accelerated-scan, JAX, rl-triton.
# * **The anchors:** yardsticks, not peers.
#
# <details><summary>Details: the two anchors</summary>
#
# For GAE's rows, a naive GAE kernel (one program per row, one step at a time) launched bare: not
# an empty launch, but a kernel that does the work (notebook 14, section 5). For
# PPO's rows, PPO's loss as a plain `torch.autograd.Function`, one naive Triton kernel each way.
#
# Their column "wall ÷ ours" is this row's wall time ÷ rltriton_lite's wall time at the same shape.
# So an anchor's row below 1 means the anchor costs less.
#
# </details>
#
# The columns:
#
# | column | where it is explained |
# |---|---|
# | `floor µs` | section 1 |
# | `% floor` | section 2 (and section 4's caution) |
# | `wall µs/call` | section 3 |
# | `GPU µs` | section 4; `n/a` where a call cannot be captured: JAX, torchrl, the loops |
# | `wall ÷ ours` | above 1, ours is faster |
#
# A `!` after a name means its outputs disagreed with ours by more than the harness's tolerance.
#
# <details><summary>Details: the one "!" in the tables</summary>
#
# It is torchrl's vectorised GAE at T = 128: up to 5.9e-4 relative, against a tolerance of 1e-4. At
# 64×16384 it agrees to 9e-7. Why the short rows differ more is not measured here; rounding
# usually grows with T, so it is not the obvious float32 rounding. Its times still compare the same
# work.
#
# </details>

# %%
gae_rows = profile.committed("gae")

# %% [markdown]
# **The seven algorithms** share two facts: at 4096×128 they are host-bound; at the largest shape
# they reach 77.5–94.5 % of the floor with the backward (forward alone, section 2's range).
#
# <details><summary>Details: each algorithm against the code it replaces</summary>
#
# The scans beat their loops on wall time, by over 100× for GAE; the three losses beat their
# eager formulas on GPU time, by over 2×. The exceptions are small: at 16×128 `torch.compile` of
# PPO's and CRR's formulas often has the lower GPU time, and with the backward CRR's eager formula
# has the lower wall time, by gaps too small or too unsteady to count (notebook 07). Each
# notebook's "profile it" section gives its own figures.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the claims above, on the committed run (CI runs them; skip when reading)
_at = {(r["algorithm"], r["impl"], r["pass"]): r for r in RES["rows"]
       if (r["B"], r["T"], r["dtype"]) == (16, 128, "float32")}
for _alg, _p in [("ppo", "fwd"), ("ppo", "fwd+bwd"), ("crr", "fwd+bwd")]:
    _c, _o = _at[_alg, "torch_compile", _p], _at[_alg, "rltriton_lite", _p]
    assert _c["kernel_ms"] < _o["kernel_ms"], (_alg, _p)
_c, _o = _at["crr", "torch_compile", "fwd"], _at["crr", "rltriton_lite", "fwd"]
assert [round(1e3 * _c["kernel_ms"], 2), round(1e3 * _o["kernel_ms"], 2)] == [1.98, 1.97]  # "a tie"
assert {(a, p): [round(1e3 * _at[a, i, p]["kernel_ms"], 2) for i in ("torch_compile", "rltriton_lite")]
        for a in ("ppo", "crr") for p in ("fwd", "fwd+bwd")} == {
    ("ppo", "fwd"): [2.01, 2.39], ("ppo", "fwd+bwd"): [3.46, 3.76],
    ("crr", "fwd"): [1.98, 1.97], ("crr", "fwd+bwd"): [3.39, 3.72]}  # the torch.compile table, row by row
assert all(bound(row(RES, a, 4096, 128, pass_=p)["full_call_us"], 1e3 * row(RES, a, 4096, 128, pass_=p)["kernel_ms"])
           == "host-bound" for a in profile.ops() for p in ("fwd", "fwd+bwd"))  # "at 4096×128 they are host-bound"
_pct = [100 * r["floor_ms"] / r["kernel_ms"] for a in profile.ops() for r in [row(RES, a, B, T, pass_="fwd+bwd")]]
assert [round(min(_pct), 1), round(max(_pct), 1)] == [77.5, 94.5]  # "77.5–94.5 %"
_loop = {}  # the scans' loop ÷ ours, wall time, over the shapes and passes the loop was timed at
for r in RES["rows"]:
    if r["impl"] == "pytorch_loop" and r["dtype"] == "float32":
        _ours = row(RES, r["algorithm"], r["B"], r["T"], pass_=r["pass"])
        _loop[r["algorithm"]] = min(_loop.get(r["algorithm"], math.inf), r["full_call_us"] / _ours["full_call_us"])
assert _loop["discounted_return"] > 50 and _loop["gae"] > 100 and _loop["td_lambda"] > 90 and _loop["vtrace"] > 45
_eager = {a: [(row(RES, a, B, T, impl="pytorch_eager", pass_=p), row(RES, a, B, T, pass_=p))
              for B, T in [(16, 128), (4096, 128), (64, 16384)] for p in ("fwd", "fwd+bwd")] for a in ("ppo", "sac", "crr")}
assert all(e["kernel_ms"] > 2 * o["kernel_ms"] for a in _eager for e, o in _eager[a])  # "over 2× (GPU time)"
_lead = [e["full_call_us"] / o["full_call_us"] for a in ("ppo", "sac") for e, o in _eager[a] if e["pass"] == "fwd+bwd"]
assert [round(min(_lead), 1), round(max(_lead), 1)] == [1.3, 3.3]  # "PPO's and SAC's still lead, by 1.3–3.3×"
_crr = {(o["B"], o["T"]): o["full_call_us"] / e["full_call_us"] for e, o in _eager["crr"] if e["pass"] == "fwd+bwd"}
assert [round(_crr[s], 2) for s in [(4096, 128), (16, 128)]] == [1.03, 1.14] and round(_crr[64, 16384], 1) == 2.6
assert round(_probe[64, 16384]["fwd+bwd", "crr"]) == 331 and round(row(RES, "crr", 64, 16384, pass_="fwd+bwd")["full_call_us"]) == 741
_sac = [e["full_call_us"] / o["full_call_us"] for e, o in _eager["sac"] if (e["B"], e["pass"]) == (4096, "fwd+bwd")]
assert 0.5 < _sac[0] < 2  # "within that noise"

# %% [markdown]
# **On this machine: the profiler.** `profile.profiler(name)` builds controls and runs once. On a
# GPU it times the kernel, the PyTorch path and the replaced code, and plots bandwidth. On a CPU the
# Triton row is a **correctness run**, checked against the float64 reference, its time `n/a`; the
# timed rows are the PyTorch path and the replaced code (`loop` for the scans, `eager` for PPO, SAC
# and CRR). A CPU has no launches to save and no HBM, so it answers "is the PyTorch path a good CPU
# fallback?", never "how fast is the kernel?".
#
# <details><summary>Details: the profiler's rows</summary>
#
# * On a GPU, the times are `do_bench` medians.
# * The correctness run is one interpreted run: 4 rows × 64 steps in 16-step chunks, to exercise
#   the carry.
# * `loop ÷ this` is the replaced code's time over each row's.
# * The cell after the widget prints its rows, which a static render of the widget does not show.
#
# </details>

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

# %% [markdown]
# **Finding:** all seven "profile it" cells show the same two facts. A call is host-bound at
# 4096×128, and near the floor on a large batch. Each cell is this notebook's measurements for one
# algorithm, read from the committed run.

# %% [markdown]
# ## Optional: sweep
#
# *Optional: a live tool, not a lesson.*
#
# **Question: on this machine, how does each implementation's time grow with the shape?**
#
# `profile.sweep` times implementations over a list of shapes. The dashboard runs it once with the
# defaults; press "sweep" to re-run it with your picks. On a CPU it offers what a CPU can time: the
# PyTorch path and the replaced code.

# %%
GPU = DEVICE == "cuda"
SIZES = ([(16, 128), (4096, 128), (1024, 1024), (16384, 1024), (64, 16384)] if GPU
         else [(16, 128), (256, 128), (4096, 128), (64, 2048), (256, 1024)])
IMPLS = ("triton", "torch", "loop") if GPU else ("torch", "loop")  # "loop": the replaced code

# %%
def show(rows, title):
    """Time per call at each shape, in the order swept; on a GPU also the bandwidth and the % of the floor."""
    fig, axes = plt.subplots(1, 3 if GPU else 1, figsize=(12 if GPU else 7, 3.4), dpi=100, squeeze=False)
    axes = axes[0]
    shapes = list(dict.fromkeys((r["B"], r["T"]) for r in rows))
    for impl in dict.fromkeys(r["impl"] for r in rows):  # "loop" or "eager": the code replaced
        sel = {(r["B"], r["T"]): r for r in rows if r["impl"] == impl}
        x = [i for i, s in enumerate(shapes) if s in sel]
        style = dict(marker="o", color=profile.IMPL_COLORS[impl], label=f"{impl}: {profile.IMPL_ROLES[impl]}")
        axes[0].plot(x, [sel[shapes[i]]["ms"] for i in x], **style)
        if GPU:
            axes[1].plot(x, [sel[shapes[i]]["gbps"] for i in x], **style)
            axes[2].plot(x, [sel[shapes[i]]["pct_floor"] for i in x], **style)
    axes[0].set(yscale="log", ylabel="ms per call (log scale)")
    if GPU:
        axes[1].set_ylabel("GB/s moved (at the least)")
        axes[1].axhline(profile.copy_bandwidth(DEVICE) / 1e9, color="k", ls="--", lw=1, label="copy bandwidth")
        axes[2].set_ylabel("% of memory floor")
        axes[2].axhline(100, color="k", ls="--", lw=1, label="the floor")
    for ax in axes:
        ax.set_xticks(range(len(shapes)), [profile.shape_name(s) for s in shapes])
        ax.set_xlabel("shape (rows B × steps T)")
        ax.legend(fontsize=7)
    fig.suptitle(f"{title}: {LIVE}", fontsize=9)
    plt.tight_layout()
    plt.show()

# %%
out = w.Output()
last = {}


def run(algorithm, dtype, impls):
    """Sweep and redraw into one output area, keeping the rows timed in `last`."""
    rows = profile.sweep(algorithm, SIZES, getattr(torch, dtype), impls=impls)
    last["rows"] = rows
    with out:
        out.clear_output(wait=True)
        show(rows, f"{algorithm}, {dtype}, {DEVICE}")


controls = dict(
    algorithm=w.Dropdown(options=list(profile.ops()), value="gae"),
    dtype=w.Dropdown(options=["float32", "bfloat16"] if GPU else ["float32"], value="float32"),
    impls=w.SelectMultiple(options=list(IMPLS), value=IMPLS[:2]),
)
ui = w.interactive(run, {"manual": True, "manual_name": "sweep"}, **controls)
run("gae", "float32", IMPLS[:2])
default_rows = last["rows"]  # the cell below reads these, whatever you sweep next
w.VBox([ui, out])

# %%
rows = default_rows
print(f"gae sweep, float32, the defaults ({LIVE})")
print(profile.live_table(rows))
assert sorted((r["impl"], r["B"], r["T"]) for r in rows) == sorted((i, *s) for i in IMPLS[:2] for s in SIZES)
assert all(r["ms"] > 0 and math.isfinite(r["ms"]) for r in rows)  # a time, not a verdict: load can move it
if not GPU:  # the loop's time follows T: printed, not asserted (section 5 counts its ops instead)
    gae_op = profile.op("gae")
    inputs_at = {s: gae_op.make(*s, torch.float32, "cpu", torch.Generator().manual_seed(0)) for s in [(16, 128), (64, 2048)]}
    # re-timed as section 5 times: the fastest of 5 calls, steadier than the sweep's median of 3
    loop_ms = {s: fastest_ms(lambda x=x: gae_op.loop(x, gae_op.defaults)) for s, x in inputs_at.items()}
    grew = loop_ms[64, 2048] / loop_ms[16, 128]
    print(f"the loop at 64×2048 ÷ at 16×128: {grew:.3g}× the time, for 16× the steps (expected: about 16×"
          + ("" if 10 < grew < 25 else "; far from it: the CPU was busy, section 5") + ")")

# %% [markdown]
# **Finding:** for GAE on a CPU, the loop's time follows T while B is small. Each step runs 14 ops
# (section 5), and at small B each op's fixed cost dominates. The PyTorch path's time follows
# B × T. At B = 4096 the loop's ops do real work on every element, so B shows too.

# %% [markdown]
# ## Optional: all algorithms side by side
#
# *Optional, like the sweep.*
#
# **Question: algorithm by algorithm, which implementation is faster on this machine?**
#
# * **On a GPU:** the kernel against the PyTorch path at 16384×1024.
# * **On a CPU:** the PyTorch path against the replaced code at 4096×128 and 64×2048
#   (`profile.cpu_rows`). Notebooks 01–07 check the kernels.

# %%
if GPU:
    B_live, T_live = 16384, 1024
    live = [dict(algorithm=name, **r) for name in profile.ops()
            for r in profile.measure(name, B_live, T_live, impls=("triton", "torch"), check=True)]
    print(f"every algorithm at {B_live}×{T_live} ({LIVE})")
    print(profile.table(live))
else:
    live = [dict(algorithm=name, **r) for name in profile.ops()  # the kernels: checked in notebooks 01-07
            for r in profile.cpu_rows(name, [(4096, 128), (64, 2048)], rep=3, check=False)]
    print(f"every algorithm at 4096×128 and 64×2048 ({LIVE})")
    print(profile.table(live, dict(algorithm="algorithm", **profile.CPU_COLUMNS), digits=3))
    print(f"ms: {profile.cpu_timing(1, 3)}.")
assert {r["algorithm"] for r in live} == set(profile.ops())
assert all(r["rel_err"] < 1e-5 for r in live)
assert all(r["ms"] > 0 and math.isfinite(r["ms"]) for r in live if r["ms"] is not None)

# %% [markdown]
# On a CPU, read "replaced ÷ this" in the torch rows: above 1, the PyTorch path is faster.
#
# **Finding:** on a CPU, expect the PyTorch path to win only for the scans at 64×2048, V-trace
# perhaps not (its replaced loop is already several times faster than GAE's, so a ratio near 1 can
# fall either side). For the scans it loses at 4096×128. For PPO, SAC and CRR it loses at both shapes. On a GPU, the fused
# kernel wins (sections 2 and 6).
#
# <details><summary>Details: why, and a ratio near 1</summary>
#
# * **The scans:** ⌈log₂ T⌉ rounds for T iterations pays with few rows and many steps.
# * **PPO, SAC and CRR:** their replaced code has no loop; the package's path does more.
#
# These are medians of 3 calls on a shared CPU. A ratio near 1 can land on either side of it from
# one run to the next; run the cell again before you trust a surprise (section 5 says why).
#
# </details>

# %% [markdown]
# ## Exercises
#
# Checked exercises work as in notebook 00b: write the starter's function, then run the cell after
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
# **`lean_gae_loop`.** Section 5 counted 14 tensor ops in every step of CleanRL's loop. Each has a
# fixed cost of about a microsecond or more on a CPU (section 5 printed this machine's figure).
# Most of them do not depend on the carry `lastgaelam`: they can run once, on whole tensors, before
# the loop. Write `lean_gae_loop`, CleanRL's loop with at
# most 6 ops per step.
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
# r, v, d, nv, nd = rollouts[128, 4]  # section 5's rollout (its next_value is (N,): CleanRL's is (1, N))
# args = (r, v, d, nv.reshape(1, -1), nd, 0.99, 0.95)  # then gamma and gae_lambda
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
# When it passes, time both with section 5's `fastest_ms` at SB3's 2048 × 1, `args` built as in
# Hint 3 from `rollouts[2048, 1]`: `fastest_ms(lambda: cleanrl_gae(*args))`, then yours. On the
# 2-core machine this course was written on, one thread, the solution ran 4.1× faster than
# CleanRL's loop there (3.5× at 128 × 4), more than the ratio of the op counts, 14 / 6: ops
# differ in cost.

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
# * **One model:** wall ≈ max(host, GPU), GPU ≈ $t_0$ + floor. It fits every shape but few long
#   rows, where a scan's chain of chunks adds a latency the bytes do not show.
# * **Wall time is not GPU time.** At 16×128 and 4096×128 a call costs many times its GPU time
#   (section 3's range), and an eager call at least about 8 µs.
# * **Three labels**, from wall ÷ GPU time: host-bound above 2× (the host's drift), GPU-bound at
#   most 1.2×, mixed in between.
# * **A CUDA graph** removes the host's share (on the H200, over 85 % at 4096×128), but freezes
#   shapes and addresses. `torch.compile(mode="reduce-overhead")` captures for you.
# * **The floor** is $B \cdot T$ × the fewest bytes per step ÷ the copy bandwidth. GAE moves 17 B
#   per step in float32, PPO's loss 12.
# * **On the H200** every kernel comes close to the floor at 16384×1024 (section 2's range); SAC,
#   which mostly reads, closest to 100 %. A small shape's % floor is a best case: its data fit
#   in L2.
# * **On a CPU** the kernels are checked, not timed. The real timing is the PyTorch path against
#   CleanRL's loop, whose cost grows with T.

# %% [markdown]
# > **Further reading** (the two appendix notebooks)
# >
# > * **Notebook 14, section 5:** our call's own host work against a bare launch, and why one run's
# >   wall times are read as ranges (section 3's 50.1 against 28.1 µs).
# > * **Notebook 13, section 4:** the wider chunks the package uses for few long rows (the committed
# >   run's 64×16384 rows).
# > * **Notebook 13, section 5:** the time split of long rows, and why the package splits only where
# >   the wall time gains.
# > * **Notebook 14:** every source of the committed results, their fields and how far to trust a
# >   figure (sections 1–3); `torch.compile` without replays (section 6).
