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
# * **You will learn:** a kernel's memory floor (sections 1–2); the two clocks, wall time and GPU
#   time (section 3); what a CUDA graph removes (section 4); what a CPU can measure (section 5).
#
# * **Time:** 1.25–2 h for the reading and the two checked exercises; 2.5–3.5 h with the open
#   questions.
#
# * **Needs:** any of notebooks 01–07. No GPU; with one, the profiler times the kernels live.
#
# * **Minimum path:** sections 1–5 and the checked exercises `vtrace_floor_bytes` and
#   `lean_gae_loop`.
#
# **One model runs through the notebook:** bytes set a kernel's floor, GPU time is a fixed cost plus
# that floor, and wall time is the larger of host time and GPU time.
#
# **Skip the "Checks" cells** (folded, starting `# Checks`): CI runs them against the data files.
#
# **Numbers you need: the running example's card.** The running example is GAE's forward call at
# 4096×128, in float32. Every figure on its card comes from one session on one H200 (2026-12-06).
# The cell after the imports prints the card with each figure's file; the prose refers back to it.
#
# | the card: GAE's forward at 4096×128 | figure | file |
# | --- | --- | --- |
# | wall time per call, the median of 15 rounds | 28.4 µs | wall probe |
# | GPU time per call | 3.3 µs | run |
# | host time: the call's wall time at 16×128, the median of 15 rounds | 30.6 µs | wall probe |
# | memory floor: its bytes at copy speed | 2.1 µs | run |
# | in a CUDA graph of 100 calls: wall time per call | 3.2 µs: 89 % of the 28.4 µs removed | replay probe |
#
# One more figure, for comparing two calls: the noise rule's 2.3× (section 3).
#
# <details><summary>Sources: the three files, their tags, the sections that read them</summary>
#
# Each printout starts with its file's tag. The three files are one session on one H200: the wall
# probe ran beside the run, in the same script, and the replay probe on the same card that day.
#
# | tag | what it times | sections |
# | --- | --- | --- |
# | `[H200 run]` | every call, forward and with its backward: wall and GPU time, each call timed once | 1–5 |
# | `[H200 wall probe]` | our calls again: wall time, the median of 15 rounds | 1, 3 and 4 |
# | `[H200 replay probe]` | GAE's forward, eager and in CUDA graphs: wall time, the median of 9 rounds | 4 |
#
# `[this machine]` marks what section 5 counts or times where the notebook runs.
#
# The run also times the card's call once: a single timing. The card takes the wall probe's median
# instead, steadier than one timing. Notebook 14 compares the files that time one call
# ([section 10](14_appendix_data.ipynb#10.-Reconciling-notebooks-08-and-09-across-files-and-cards)).
#
# </details>

# %%
import json
import math
import os
import re
import textwrap

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import matplotlib.pyplot as plt

import rltriton_lite as rl
from rltriton_lite import exercises, profile
from rltriton_lite.profile import down, up  # how the course writes a range (notebook 14, section 7)

DEVICE = profile.default_device()
# the Triton kernels: compiled on a GPU, in the interpreter on a CPU (backend="auto" takes the PyTorch path on a CPU)
KERNEL = "triton"
LIVE = ("live, this GPU" if DEVICE == "cuda" else
        "this CPU, one thread: real wall-clock times of PyTorch code; the Triton kernels checked, not timed")
print(f"device: {DEVICE}; times measured here: {LIVE}")

# %%
import triton  # noqa: E402

SRC = profile.sources()  # the committed files: their paths, the run and the wall probe loaded, their tags
RES, probe, path, SOURCE = SRC.run, SRC.probe, SRC.path, SRC.tags  # H200-2026-12-06.json; SOURCE: the printouts' tags
FILES = SRC.files  # each file's name in benchmarks/results/, by key
BW = RES["copy_bandwidth_Bps"]  # bytes read + written per second, device-to-device copy
ALGORITHMS = list(profile.ops()) + ["linear_scan"]  # our 8 calls
print(f"{RES['gpu']}, {RES['date']}, torch {RES['versions']['torch']}, triton {RES['versions']['triton']}: "
      f"copy bandwidth {BW / 1e12:.3f} TB/s, {len(RES['rows'])} rows")
print(f"installed here: torch {torch.__version__}, triton {triton.__version__}")


def row(res, algorithm, B, T, impl="rltriton_lite", dtype="float32", pass_="fwd"):
    """The one result row of this case."""
    (r,) = [r for r in res["rows"] if (r["algorithm"], r["impl"], r["B"], r["T"], r["dtype"], r["pass"])
            == (algorithm, impl, B, T, dtype, pass_)]
    return r


def against(prediction, measured, what, model=None, how="measured"):
    """Your prediction (None: not made) beside the figure (`how` it was found), and the model's figure where given."""
    print(f"{what}: {how} {measured:.3g}" + ("" if model is None else f", the model gives {model:.3g}")
          + ("" if prediction is None else f", you predicted {prediction:.3g}"))


# the replay probe, as it printed its table: (B, T) -> [eager, a graph of 1 call, a graph of 100 calls], wall µs per call
replay_text = open(path("replay"), encoding="utf-8").read()
REPLAY = {(int(m[0]), int(m[1])): [float(x) for x in m[2:]]
          for m in re.findall(r"^\s*(\d+)x\s*(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", replay_text, re.M)}

# %%
# the running example's card: GAE's forward at 4096×128, float32, each figure from its file
card_row = row(RES, "gae", 4096, 128)
replay_eager, replay_one, replay_hundred = REPLAY[4096, 128]  # wall µs per call: eager, a graph of 1, of 100
CARD = [("wall µs per call, median of 15 rounds", probe[4096, 128]["fwd", "gae"], "wall"),
        ("GPU µs per call", 1e3 * card_row["kernel_ms"], "run"),
        ("host µs: its wall time at 16×128, median of 15", probe[16, 128]["fwd", "gae"], "wall"),
        ("memory floor µs: its bytes at copy speed", 1e3 * card_row["floor_ms"], "run"),
        ("graph of 100 calls: wall µs per call", replay_hundred, "replay")]
print("The card: GAE's forward at 4096×128, float32")
for what, value, key in CARD:
    print(f"  {what:<48} {value:5.1f}   [{SOURCE[key]}] {FILES[key]}")
print(f"  a graph of 100 calls removes 1 - {replay_hundred} / {CARD[0][1]} = {100 * (1 - replay_hundred / CARD[0][1]):.0f} % "
      f"of the wall time per call")

# %% jupyter={"source_hidden": true}
# Checks: the card and the table of files at the top, on the files themselves (CI runs them; skip when reading)
RESULTS = SRC.folder  # benchmarks/results/ beside the package
assert {k: SOURCE[k] for k in ("run", "wall", "replay", "here")} == {
    "run": "H200 run", "wall": "H200 wall probe", "replay": "H200 replay probe", "here": "this machine"}
assert RES["gpu"].startswith("NVIDIA H200") and [open(path(k), encoding="utf-8").readline()[:13] for k in
                                                 ("wall", "replay")] == ["# NVIDIA H200", "# NVIDIA H200"]
assert RES == json.load(open(path("run"), encoding="utf-8"))  # the run, read from its file
assert probe == profile.wall_probe_us(path("wall"))  # the wall probe, read from its file
_keys = [(r["algorithm"], r["impl"], r["B"], r["T"], r["dtype"], r["pass"]) for r in RES["rows"]]
assert len(set(_keys)) == len(_keys) and {r["pass"] for r in RES["rows"]} == {"fwd", "fwd+bwd"}  # the run: each call once
assert all(r["full_call_us"] for r in RES["rows"]) and any(r["kernel_ms"] for r in RES["rows"])  # "wall and GPU time"
_wall_text = open(path("wall"), encoding="utf-8").read(400)
assert "beside results" in _wall_text and "interleaved in 15 rounds" in _wall_text  # "the same session", "15 rounds"
# "one session on one H200": the probe's first line names the run it ran beside, in the run's script, on the run's card
assert f"in `tools/committed_run.sh` beside results {profile.COMMITTED_RUN}." in _wall_text.splitlines()[0]
assert _wall_text.startswith(f"# {RES['gpu']}, {RES['date']},")  # the same card, the same day
_script = open(os.path.join(os.path.dirname(os.path.dirname(RESULTS)), "tools", "committed_run.sh"), encoding="utf-8").read()
assert _script.index("rltriton_lite.bench") < _script.index("tools/wall_probe.py")  # the run, then the probe: one script
assert all(("fwd", a) in probe[s] for s in probe for a in ALGORITHMS)  # "our calls again"
# the replay probe: "on the same card that day"; GAE's forward, eager and in CUDA graphs, 9 rounds
assert FILES["replay"] == f"checks/{RES['gpu'].split()[1]}-{RES['date']}-graph-replay.txt"
assert "rl.gae forward" in replay_text[:300] and "median of 9 interleaved rounds" in replay_text[:300]
assert "eager  graph of 1  graph of 100" in replay_text[:300] and "wall µs per call" in replay_text[:300]
assert [FILES[k] for k in ("run", "wall", "replay")] == [
    "H200-2026-12-06.json", "H200-2026-12-06-wall.txt", "checks/H200-2026-12-06-graph-replay.txt"]  # the card's files
# question 2: "the run times float32 only; an earlier H200 sweep, H200-2026-11-30d.json, has bfloat16 too"
assert {r["dtype"] for r in RES["rows"]} == {"float32"} and FILES["sweep"] == "H200-2026-11-30d.json"
_sweep_head = open(path("sweep"), encoding="utf-8").read(2000)
assert '"gpu": "NVIDIA H200"' in _sweep_head and '"date": "2026-11-30"' in _sweep_head and '"bfloat16"' in open(
    path("sweep"), encoding="utf-8").read()
# the card, as the table at the top writes it: 28.4, 3.3, 30.6, 2.1, 3.2; "89 % of the 28.4 µs removed"
assert [round(v, 1) for _, v, _ in CARD] == [28.4, 3.3, 30.6, 2.1, 3.2]
assert round(100 * (1 - replay_hundred / CARD[0][1])) == 89
# the Sources fold: "a single timing", not the card's figure (notebook 14, section 10's Checks, reads 08 for it)
assert round(card_row["full_call_us"], 1) != CARD[0][1]

# %% [markdown]
# ## 1. The floor model, by hand
#
# **Question: how fast could a memory-bound kernel possibly be?** A **memory-bound** kernel, as
# every kernel of the package is, does a few operations per byte it moves, so its bytes set its
# time. Per (row, step), GAE **reads** the reward, the value $V(s_t)$ and the episode-end flag, and
# **writes** the advantage and the return. $V(s_{t+1})$ is the next element of the values tensor,
# read anyway.
#
# **Predict first:** GAE's bytes per (row, step) in float32, at 4 bytes a float and 1 a bool.

# %%
my_gae_bytes = None  # your prediction: GAE's bytes per (row, step), float32

# %%
# the reveal: run it once your prediction is set above
GAE_TRAFFIC = [dict(tensor=n, access=a, bytes=b) for n, a, b in [
    ("rewards r_t", "read", 4), ("values V(s_t)", "read", 4), ("terminated (bool)", "read", 1),
    ("advantages Â_t", "write", 4), ("returns Â_t + V(s_t)", "write", 4)]]
gae_bytes = sum(t["bytes"] for t in GAE_TRAFFIC)
print("[counted by hand] GAE, float32, per (row, step)")
print(profile.table(GAE_TRAFFIC))
against(my_gae_bytes, gae_bytes, "GAE's bytes per (row, step), float32", how="counted")
assert gae_bytes == profile.op("gae").bytes_per_step(4) == 17
assert profile.op("gae").bytes_per_step(2) == 9  # the fold: "in bfloat16 ... 9 B, not 8.5"

PPO_TRAFFIC = [dict(tensor=n, access=a, bytes=b) for n, a, b in [
    ("log_probs (new policy)", "read", 4), ("old_log_probs", "read", 4), ("advantages", "read", 4),
    ("loss (one scalar)", "write", 0)]]
ppo_bytes = sum(t["bytes"] for t in PPO_TRAFFIC)
print("\n[counted by hand] PPO's loss, float32, per (row, step)")
print(profile.table(PPO_TRAFFIC))
print(f"PPO's loss moves {ppo_bytes} B per (row, step) in float32")
assert ppo_bytes == profile.op("ppo").bytes_per_step(4) == 12

# %% [markdown]
# **The floor** is the time these bytes take at
# the speed of a large device-to-device copy:
# $t_\text{floor} = B \cdot T \cdot \text{bytes per step} \,/\, \text{copy bandwidth}$.

# %%
B, T = 16384, 1024
gae_floor_ms = B * T * gae_bytes / BW * 1e3
print(f"{B} × {T} × {gae_bytes} B = {B * T * gae_bytes / 1e6:.1f} MB;  ÷ {BW / 1e12:.4f} TB/s = "
      f"{gae_floor_ms * 1e3:.1f} µs")
ppo_floor_ms = B * T * ppo_bytes / BW * 1e3
print(f"PPO: {B * T * ppo_bytes / 1e6:.1f} MB → {ppo_floor_ms * 1e3:.1f} µs")

# %% [markdown]
# **Finding:** at 16384×1024, GAE's bytes take at least 67 µs.
#
# **The model.** Launches are asynchronous, so a call's host work (Python, checks, the launcher)
# overlaps its GPU work:
#
# $$\text{wall} \approx \max(\text{host},\ \text{GPU}), \qquad \text{GPU} \approx t_0 + t_\text{floor}.$$
#
# * $t_0 \approx 2$ µs is a kernel's fixed GPU cost: its GPU time at 16×128.
# * **host** is each call's own cost, fitted at 16×128: its wall time there, where its GPU time is
#   negligible. It runs from 23 to 60 µs over our 8 calls.
# * A **wall time** is the time per call of calls run back to back, with one synchronisation at
#   the end, so the host prepares the next call while the GPU runs this one.

# %%
T0_US = 2.0  # the model's fixed GPU cost per kernel (the Checks cell below reads it off the committed run)
HOST_US = {a: probe[16, 128]["fwd", a] for a in ALGORITHMS}  # each call's host time: its wall time at 16×128


def model_us(B, T, bytes_per_step, host_us):
    """The model's (wall, GPU) µs per call: GPU = t0 + floor, wall = max(host, GPU)."""
    gpu = T0_US + 1e6 * B * T * bytes_per_step / BW
    return max(host_us, gpu), gpu


model_table = []
for a in ALGORITHMS:
    model_wall, model_gpu = model_us(4096, 128, row(RES, a, 4096, 128)["bytes"] / (4096 * 128), HOST_US[a])
    measured = probe[4096, 128]["fwd", a]
    model_table.append({"call": a, "host µs (16×128)": HOST_US[a],
                        "model GPU µs": "(exercise)" if a == "vtrace" else model_gpu,  # V-trace's bytes: an exercise
                        "model wall µs": model_wall, "measured wall µs": measured, "measured ÷ model": measured / model_wall})
print(f"[{SOURCE['wall']}] 4096×128, forward: the model's wall time, max(host, GPU), beside the measured one")
print(profile.table(model_table, digits=3))

# %% [markdown]
# **Finding:** at 4096×128 every call's host time exceeds its GPU time: the host sets the wall time.
#
# The model's host term is a measurement at another shape: each call's wall time at 16×128. So the
# model matches 16×128 by construction, and the test is that the wall time stays flat from 16×128 to
# 4096×128. It does, within 10 % either way, for 7 of the 8 calls: GAE's, on the card, runs a little
# under its host term.
#
# **Within 10 % is as good as this data can show.** The same call timed twice differs by up to about
# 2×: this session's run and its wall probe each timed our calls, and their two timings of one call
# lie up to about 2× apart. That is noise between runs; section 3's noise rule rests on it. Within
# one probe the medians are steadier: each is the median of 15 interleaved rounds, and the calls
# whose cost does not change with the shape (an empty kernel, `torch.add`) repeat within 5 % from
# 16×128 to 4096×128. So matching within 10 % is as good as this data can show, and GAE's 28.4 µs
# under its 30.6 µs host term is no failure of the model.
#
# <details><summary>Details: the bytes, and PPO's rise</summary>
#
# * PPO's wall time rises 24 % from 16×128 to 4096×128. The model misses it, and no committed file
#   tests why.
# * GAE moves 17 B per (row, step): 285 MB at 16384×1024. In bfloat16 the flag stays 1 byte: 9 B,
#   not 8.5.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the claims above, on the committed run and the wall probe (CI runs them; skip when reading)
import inspect  # noqa: E402
from rltriton_lite import bench  # noqa: E402  "back to back, with one synchronisation at the end"
assert "for _ in range(n):\n        out = fn()\n    sync(out)\n" in inspect.getsource(bench.wall_ms)  # the run's
assert "back-to-back calls, one sync per round" in open(path("wall"), encoding="utf-8").read(400)  # the wall probe's
smallest = [row(RES, a, 16, 128) for a in ALGORITHMS]
assert 1 < min(1e3 * r["kernel_ms"] for r in smallest) < T0_US < max(1e3 * r["kernel_ms"] for r in smallest) < 4  # "t0 ≈ 2 µs"
assert max(1e3 * r["kernel_ms"] for r in smallest) < min(HOST_US.values()) / 5  # "its GPU time is negligible"
assert [down(min(HOST_US.values()), 0), up(max(HOST_US.values()), 0)] == [23, 60]  # "from 23 to 60 µs"
_off = {t["call"]: t["measured ÷ model"] for t in model_table}
assert sum(abs(x - 1) < 0.1 for x in _off.values()) == 7 and abs(_off["ppo"] - 1) > 0.1  # "within 10 % for 7 of the 8"
assert round(100 * (_off["ppo"] - 1)) == 24  # "PPO's rises 24 %" from 16×128 to 4096×128
assert _off["gae"] < 1 and [probe[4096, 128]["fwd", "gae"], HOST_US["gae"]] == [28.4, 30.6]  # "a little under its host term"
_twice = profile.timed_twice(RES, probe)  # our calls, each timed by the run and by the wall probe
assert {a for a, _, _ in _twice} == set(ALGORITHMS) and {s for _, s, _ in _twice} <= set(probe)  # "each timed our calls"
assert round(max(max(w) / min(w) for w in _twice.values())) == 2  # "up to about 2×" (2.24: section 3's noise rule)
_flat = [probe[4096, 128]["fwd", n] / probe[16, 128]["fwd", n] for n in ("noop kernel[grid]", "torch.add")]
assert all(abs(x - 1) < 0.05 for x in _flat)  # "an empty kernel, torch.add ... repeat within 5 %"
assert round(100 * (probe[4096, 128]["fwd", "ppo"] / probe[16, 128]["fwd", "ppo"] - 1)) == 24  # (the same, read directly)
assert all(HOST_US[a] > model_us(4096, 128, row(RES, a, 4096, 128)["bytes"] / (4096 * 128), 0)[1]
           for a in ALGORITHMS)  # "every call's host time exceeds its GPU time" (the model's)
assert all(HOST_US[a] > 1e3 * row(RES, a, 4096, 128)["kernel_ms"] for a in ALGORITHMS)  # and the run's
assert (gae_bytes, ppo_bytes) == (17, 12) and round(B * T * gae_bytes / 1e6) == 285  # "17 B ... 12", "285 MB"
assert all(t["model wall µs"] == HOST_US[t["call"]] for t in model_table)  # "the model's wall time here is the host time"
assert round(gae_floor_ms * 1e3) == 67  # "at least 67 µs"
r_gae, r_ppo = row(RES, "gae", B, T), row(RES, "ppo", B, T)
assert r_gae["bytes"] == B * T * gae_bytes and r_ppo["bytes"] == B * T * ppo_bytes
# within 0.01 %: each row was priced with the bandwidth measured beside it; BW is their mean
assert math.isclose(gae_floor_ms, r_gae["floor_ms"], rel_tol=1e-4)
assert math.isclose(ppo_floor_ms, r_ppo["floor_ms"], rel_tol=1e-4)

# %% [markdown]
# ## 2. GPU time against the floor, on a large batch
#
# **Question: how close to the floor do the kernels get on a large batch?** **% floor** = floor ÷
# GPU time: at 100 %, the kernel moves its bytes as fast as a plain copy. The table gives each
# kernel's % floor at 16384×1024 beside `model_us`'s GPU time; V-trace's row hides its bytes, an
# exercise.

# %%
gpu_table = []
for name in ALGORITHMS:
    r = row(RES, name, B, T)
    hidden = name == "vtrace"  # V-trace's bytes are the exercise: its floor (and so its % floor) would tell them
    model_gpu = model_us(B, T, r["bytes"] / (B * T), HOST_US[name])[1]  # the model's GPU time: t0 + floor
    gpu_table.append({"algorithm": name, "B/step": "(exercise)" if hidden else r["bytes"] // (B * T),
                      "floor µs": "(exercise)" if hidden else 1e3 * r["floor_ms"],
                      "model GPU µs": "(exercise)" if hidden else model_gpu, "GPU µs": 1e3 * r["kernel_ms"],
                      "GPU ÷ model": "(exercise)" if hidden else 1e3 * r["kernel_ms"] / model_gpu,
                      "% floor": "(exercise)" if hidden else 100 * r["floor_ms"] / r["kernel_ms"]})
print(f"[{SOURCE['run']}] {B}×{T}, float32, forward")
print(profile.table(gpu_table, digits=3))
model_pct_gae = 100 * gae_floor_ms * 1e3 / model_us(B, T, gae_bytes, HOST_US["gae"])[1]  # floor ÷ (t0 + floor)
against(None, 100 * row(RES, "gae", B, T)["floor_ms"] / row(RES, "gae", B, T)["kernel_ms"],
        "GAE's % floor at 16384×1024", model=model_pct_gae)

# %% [markdown]
# **Finding:** close to the floor, not at it: GAE reaches 83 % of its floor.
#
# <details><summary>Details: the other kernels, and SAC</summary>
#
# * Every kernel's GPU time lies within about 20 % of the model's, mostly above it (`GPU ÷ model`):
#   these kernels move bytes a little more slowly than a copy.
# * SAC, which mostly reads, comes closest to its floor. Its row is the λ = 0 target, an
#   elementwise kernel, not notebook 06's λ-return scan.
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
assert "lambda_" not in profile.op("sac").params  # the benchmark passes no λ: "the λ = 0 target" (notebook 06, section 7)
_vs_model = {name: 1e3 * row(RES, name, B, T)["kernel_ms"]
             / model_us(B, T, row(RES, name, B, T)["bytes"] / (B * T), HOST_US[name])[1] for name in ALGORITHMS}  # V-trace's too
assert all(0.8 < x < 1.2 for x in _vs_model.values())  # "within about 20 % of the model's"
assert sum(x > 1 for x in _vs_model.values()) > len(_vs_model) / 2  # "mostly above it"
assert all(t["GPU ÷ model"] in ("(exercise)", _vs_model[t["algorithm"]]) for t in gpu_table)  # the table's column
assert [round(model_pct_gae), round(pct["gae"])] == [97, 83]  # "the model gives 97 % ... GAE measures 83 %"
assert round(gae_floor_ms * 1e3) == 67 and T0_US < gae_floor_ms * 1e3 / 30  # "2 µs, small beside the floor's 67 µs"

# %% [markdown]
# ## 3. Two clocks: wall time versus GPU time at the shapes RL code uses
#
# **Question: at the shapes RL code uses (16×128, 4096×128, 64×16384), where does a call's time
# go?** The **GPU time** is timed by replaying a **CUDA graph**, which records a sequence of kernel
# launches once and replays them with one host call (section 4), so it holds no host work. The
# **wall time** is what a Python loop waits for. Their ratio labels a call:
#
# | wall ÷ GPU time | label |
# | --- | --- |
# | more than 2× | **host-bound**: the host sets the call's time |
# | 1.2× to 2× | **mixed**: neither sets it alone |
# | at most 1.2× | **GPU-bound**: the kernel is the call |
#
# **Predict first**, with `model_us`: GAE's wall ÷ GPU time at 4096×128, and so its label. Use the
# model's figures: the card's host time, 30.6 µs, as the wall time, and $t_0$ + the card's floor,
# 2 + 2.1 µs, as the GPU time. The reveal compares your ratio with the measured one, which divides the
# card's wall time by its measured GPU time, 3.3 µs.

# %%
my_wall_over_gpu = None  # your prediction: GAE at 4096×128, wall ÷ GPU time per call

# %%
# the reveal: run it once your prediction is set above
HOST_X, GPU_X = 2.0, 1.2  # wall ÷ GPU time: above 2×, host-bound; at most 1.2×, GPU-bound; mixed in between


def bound(wall_us, gpu_us):
    """The course's label of a call, from its wall time and its GPU time."""
    x = wall_us / gpu_us
    return "host-bound" if x > HOST_X else "GPU-bound" if x <= GPU_X else "mixed"


SHAPES = [(16, 128), (4096, 128), (64, 16384), (16384, 1024)]
# wall time: the wall probe's median where it timed the shape; at 16384×1024 (not probed) the run's single timing
wall_us = {(a, s): probe[s]["fwd", a] if s in probe else row(RES, a, *s)["full_call_us"] for a in ALGORITHMS for s in SHAPES}
gpu_us = {(a, s): 1e3 * row(RES, a, *s)["kernel_ms"] for a in ALGORITHMS for s in SHAPES}
ratio = {k: wall_us[k] / gpu_us[k] for k in wall_us}
model_wall_gae, model_gpu_gae = model_us(4096, 128, gae_bytes, HOST_US["gae"])  # section 1's host time
print(f"[{SOURCE['wall']}: wall; {SOURCE['run']}: GPU] GAE 4096×128, forward: the card's figures beside the model's")
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
ax.plot(names, [model_us(*s, gae_bytes, HOST_US["gae"])[0] / model_us(*s, gae_bytes, HOST_US["gae"])[1]
               for s in SHAPES], "kx:", lw=2, label="model, gae")
for y, text in [(3.5, "host-bound"), (1.55, "mixed"), (1.0, "GPU-bound")]:
    ax.text(-0.3, y, text, fontsize=8, va="center")
ax.set(yscale="log", xlim=(-0.35, 3.2), ylim=(0.8, 100), ylabel="wall ÷ GPU time per call (log)",
       xlabel="B × T (shape of the rollout)",
       title=f"forward: where a call's time goes\nGPU: {SOURCE['run']}; wall: {SOURCE['wall']} "
             f"(16384×1024, not probed: the run's)")
ax.legend(fontsize=7, ncol=3, loc="upper right")
plt.tight_layout()
plt.show()

# %% [markdown]
# **Finding:** mostly to the host. GAE's call at 4096×128 takes 8.5× its GPU time (the card's wall
# time over its GPU time): host-bound, as the model predicted. So at these shapes a faster kernel
# barely changes what a training loop waits for.
#
# <details><summary>Details: the model's ratio, warm-cache GPU times, the largest shape, where the model breaks</summary>
#
# * The model's 7.5× divides the card's host time by the model's GPU time, 4.1 µs. Both ratios say
#   host-bound.
# * GAE's GPU time at 4096×128 is below the model's. The GPU time comes from CUDA-graph replays,
#   which run the call back to back with no cache flush between replays, so some of its 8.9 MB may
#   be read from the **L2 cache**, a fast memory on the GPU chip, rather than from main memory
#   (notebook 14, section 4).
# * The wall probe did not time 16384×1024: the chart's points there are the run's single timings.
#   By them every call is GPU-bound, except PPO's and CRR's losses, which are mixed: their wall time
#   is 1.81× and 1.75× their GPU time.
# * The scans at 64×16384 take several times the GPU time the model gives GAE: 64 rows give the GPU
#   few programs, each walking its row's chunks one after another.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the claims above, on the committed run and the wall probe (CI runs them; skip when reading)
label = {k: bound(wall_us[k], gpu_us[k]) for k in wall_us}
assert all(label[a, s] == "host-bound" for a in ALGORITHMS for s in [(16, 128), (4096, 128)])  # "every call"
assert {a: label[a, (16384, 1024)] for a in ALGORITHMS} == {a: "mixed" if a in ("ppo", "crr") else "GPU-bound"
                                                          for a in ALGORITHMS}  # "GPU-bound, or mixed for PPO's and CRR's"
_mixed = {a: (HOST_US[a], gpu_us[a, (16384, 1024)], wall_us[a, (16384, 1024)])  # host, GPU, wall: one session
          for a in ("ppo", "crr")}
assert all(w > max(h, g) for h, g, w in _mixed.values())  # their wall times exceed the model's max(host, GPU)
assert [round(ratio[a, (16384, 1024)], 2) for a in ("ppo", "crr")] == [1.81, 1.75]  # "1.81× and 1.75×"
assert all(abs(wall_us[a, (16384, 1024)] / max(HOST_US[a], gpu_us[a, (16384, 1024)]) - 1) < 0.12
           for a in ALGORITHMS if a not in _mixed)  # the GPU-bound: wall ≈ max(host, GPU), "instead of" adding up
assert all(bound(*model_us(*s, gae_bytes, HOST_US["gae"])) == "host-bound"
           for s in [(16, 128), (4096, 128)])  # "as the model predicted"
# the reveal's debrief: GAE at 4096×128, the model's figures beside the run's; the host time, section 1's
_g = row(RES, "gae", 4096, 128)
assert HOST_US["gae"] == 30.6 and model_wall_gae == HOST_US["gae"]  # "30.6 µs, the wall probe's median at 16×128"
assert round(ratio["gae", (4096, 128)], 1) == 8.5 and round(model_wall_gae / model_gpu_gae, 1) == 7.5  # "8.5×", "7.5×"
assert [wall_us["gae", (4096, 128)], gpu_us["gae", (4096, 128)]] == [CARD[0][1], CARD[1][1]]  # "the card's wall ... GPU time"
assert [model_wall_gae, round(model_gpu_gae, 1)] == [CARD[2][1], 4.1]  # "the card's host time by ... 4.1 µs"
assert math.isclose(model_gpu_gae, T0_US + CARD[3][1], rel_tol=1e-4)  # the model's GPU time: t0 + the card's floor
assert [T0_US, round(CARD[3][1], 1), round(CARD[1][1], 1)] == [2, 2.1, 3.3]  # Predict first: "2 + 2.1 µs", "measured ... 3.3 µs"
assert (16384, 1024) not in probe and all(wall_us[a, (16384, 1024)] == row(RES, a, 16384, 1024)["full_call_us"]
                                          for a in ALGORITHMS)  # "the run's single timings" there
assert label["gae", (4096, 128)] == bound(model_wall_gae, model_gpu_gae) == "host-bound"  # "as the model predicted"
assert round(_g["bytes"] / 1e6, 1) == 8.9  # "some of its 8.9 MB"
import inspect  # noqa: E402
from rltriton_lite import bench  # noqa: E402  the GPU time: "comes from CUDA-graph replays"
assert "do_bench_cudagraph(" in inspect.getsource(bench.kernel_ms)
assert 1e3 * _g["kernel_ms"] < model_gpu_gae  # its GPU time "below the model's"
# the model: close at the small shapes, broken for the scans at 64×16384
assert all(abs(gpu_us[a, s] - model_us(*s, profile.op(a).bytes_per_step(4), 0)[1]) < 4
           for a in profile.ops() for s in [(16, 128), (4096, 128)])  # the model fits there
scans = ["discounted_return", "gae", "td_lambda", "vtrace", "linear_scan"]
_long = [gpu_us[a, (64, 16384)] for a in scans]
assert min(_long) > 3 * model_us(64, 16384, gae_bytes, 0)[1]  # "several times the GPU time it gives GAE"

# %% [markdown]
# ### Comparing two calls: the paired ratio
#
# **Question: when is one call faster than another on the wall clock?** Two calls timed minutes
# apart may differ only because the host was busier for one. The wall probe times calls in
# **rounds**: each round times every call in turn, 100 calls back to back each. Dividing two calls'
# times within each round gives one ratio per round; their median is the **paired ratio**. The
# host's load slows both calls of a round alike, so it cancels in the ratio.
#
# Each line of the probe ends with such a ratio, against `bare_launch`: a naive GAE kernel launched
# plainly (`kernel[grid](...)`, its output from `torch.empty_like`), what a bare Triton call costs.
# One case, 15 rounds: our GAE call against it at 16×128, where both calls are host-bound.

# %%
probe_lines = {(s["B"], s["T"]): {(r["pass"], r["name"]): r for r in s["rows"]}  # (B, T) -> (pass, name) -> a line
               for s in profile.read_wall_probe(path("wall"))}
print(f"[{SOURCE['wall']}] 16×128, forward, 15 rounds: wall µs per call (each call's median), "
      f"then the median of the rounds' ratios")
for name in ("bare_launch", "gae"):
    r = probe_lines[16, 128]["fwd", name]
    print(f"  {name:<12} {r['us']:5.1f} µs   {r['ratio']:.3f}x {r['anchor']}")
paired_x = probe_lines[16, 128]["fwd", "gae"]["ratio"]
against(None, paired_x, "our GAE call ÷ bare_launch within a round, the median")

# %% [markdown]
# **Finding:** in the median round our GAE call took about 1.5× the bare launch's wall time. Both are
# host-bound here, so the gap is host work: our call does about 10 µs more of it than a bare launch.
#
# **Without paired rounds, use the noise rule.** Most tables time each call once: the run, and so
# notebook 09's table of peers. The **noise rule**: in such a table, a peer's lead over our call
# counts only if our wall time is more than 2.3× the peer's. Where our call was timed twice (the
# run and the wall probe), use the faster of its two timings. An example, with made-up numbers: our
# call timed 40 µs once and 30 µs another time, and a peer 12 µs once. Our faster timing, 30 µs, is
# 2.5× the peer's, so the peer's lead counts; with the peer at 15 µs (only 2×) it would be **within
# the noise**.
#
# The rule is a rule of thumb. Its 2.3× is the widest gap seen between two timings of one of our
# calls in this session, the run's against the wall probe's, not a limit that noise cannot pass.
# Notebook 14 works the rule through on real cases
# ([section 6](14_appendix_data.ipynb#6.-The-noise-rule:-two-timings-that-were-not-paired)).

# %% jupyter={"source_hidden": true}
# Checks: the paired ratio and the noise rule, on the wall probe and the run (CI runs them; skip when reading)
assert "interleaved in 15 rounds" in _wall_text and "ratio: median of the rounds' ratios" in open(
    path("wall"), encoding="utf-8").read()  # "15 rounds", "their median is the paired ratio"
_probe_src = open(os.path.join(os.path.dirname(os.path.dirname(RESULTS)), "tools", "wall_probe.py"), encoding="utf-8").read()
assert "times = rounds(fwd, 100)" in _probe_src and 'report("fwd", times, "bare_launch")' in _probe_src  # "100 calls"
assert "bare_launch\": lambda: bare_gae(" in _probe_src and profile.ANCHOR_NOTES["bare_triton_launch"].startswith(
    "a naive GAE kernel")  # "a naive GAE kernel launched plainly"
_ours16, _bare16 = probe_lines[16, 128]["fwd", "gae"], probe_lines[16, 128]["fwd", "bare_launch"]
assert (_ours16["anchor"], _bare16["ratio"]) == ("bare_launch", 1.0) and round(paired_x, 1) == 1.5  # "about 1.5×"
assert [_ours16["us"], _bare16["us"]] == [30.6, 20.6] and round(_ours16["us"] - _bare16["us"]) == 10  # "about 10 µs more"
_bare_run = row(RES, "gae", 16, 128, impl="bare_triton_launch")  # "both are host-bound here"
assert _bare16["us"] > HOST_X * 1e3 * _bare_run["kernel_ms"] and _ours16["us"] > HOST_X * gpu_us["gae", (16, 128)]
# the noise rule: 2.3×, one of our calls' two timings (the run, the wall probe) at their farthest apart, rounded up
NOISE_X = 2.3
_drift = max(max(w) / min(w) for w in profile.timed_twice(RES, probe).values())
assert round(_drift, 2) == 2.24 and up(_drift) == NOISE_X  # "the widest gap seen ... 2.3×"
# the worked example, made up: ours 30 and 40 µs, the peer once at 12 µs (2.5×: counts) or 15 µs (2×: within the noise)
assert [profile.noise_verdict((30.0, 40.0), (p, p), NOISE_X) for p in (12.0, 15.0)] == ["peer faster", "within the noise"]
assert [30 / 12, 30 / 15] == [2.5, 2.0]  # "2.5×", "only 2×"
assert [profile.noise_verdict((lo, 30.0), (4.0, 4.0), NOISE_X) for lo in (9.3, 9.1)] == ["peer faster", "within the noise"]
# "our wall time", one timing: the rule on a single timing of ours is the same test
assert [profile.noise_verdict((t, t), (4.0, 4.0), NOISE_X) for t in (9.3, 9.1)] == ["peer faster", "within the noise"]

# %% [markdown]
# ## 4. Taking the host out: CUDA graphs and `torch.compile(mode="reduce-overhead")`
#
# **Question: how do you take the host's share out of a call, and what does that cost?** **A CUDA
# graph** records the kernels a region launches, once (`torch.cuda.graph(g)`); `g.replay()`
# resubmits them all with one driver call, with no Python, checks or allocator. The price: shapes
# and addresses are frozen (copy new data in: `static.copy_(fresh)`), and nothing inside may sync
# with the host (`.item()`) or branch on data.
#
# **Predict first.** In a graph of many calls, a replay leaves about the GPU term alone per call,
# $t_0 + t_\text{floor}$. What share of GAE's 4096×128 call would capturing it in such a graph remove?

# %%
my_removed_pct = None  # your prediction: the % of GAE's 4096×128 call a CUDA graph of many calls removes

# %%
# the reveal: run it once your prediction is set above
model_wall, model_gpu = model_us(4096, 128, gae_bytes, HOST_US["gae"])
model_removed = 100 * (1 - model_gpu / model_wall)  # the model: all but its GPU time goes
print(f"[{SOURCE['wall']}] GAE 4096×128 forward, eager (the card): {CARD[0][1]} µs per call")
print(f"[{SOURCE['replay']}] the same call in a CUDA graph, the median of 9 rounds: "
      f"{replay_one} µs per call in a graph of 1 call, {replay_hundred} in a graph of 100 calls")
against(my_removed_pct, 100 * (1 - replay_hundred / CARD[0][1]),
        "GAE 4096×128, % of the call a graph of 100 calls removes", model=model_removed)

# %% [markdown]
# **Finding:** a CUDA graph removes most of a small call: in a graph of 100 calls, GAE's call at
# 4096×128 lost 89 % of its wall time per call, 3.2 µs against the card's 28.4 µs.
#
# <details><summary>Details: a graph of one call, the probe's own eager calls, the other algorithms</summary>
#
# * Replayed alone, in a graph of one call, GAE's call lost 84 %. Each replay is still one launch,
#   so a graph of many calls removes more per call.
# * The replay probe also timed the eager calls, in its own rounds: 3.2 µs against 25.9 µs, 88 %
#   removed. The same conclusion: two timings of one call differ (section 1).
# * By the run's GPU times and the wall probe's medians, every algorithm's call at 4096×128 would
#   lose over 85 % in a graph of many calls.
#
# </details>
#
# **`torch.compile(mode="reduce-overhead")`** records the CUDA graphs for you: one graph per region
# between two graph breaks, the code at a break run eagerly. The package's functions are
# `torch.library` custom ops, which cause no break.
#
# The cell below traces a step that calls GAE, then PPO's loss; `fullgraph=True` would raise at a
# break. CUDA graphs need a GPU, so its backend only records the traced graph, to count it.

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
# Checks: the claims above, on the replay probe and the committed run (CI runs them; skip when reading)
# the graph-replay probe: GAE 4096×128, eager, then a graph of one call, then a graph of 100 calls (wall µs per call)
assert "graph of 1 " in replay_text and "graph of 100" in replay_text and "wall µs per call" in replay_text
assert len(REPLAY[4096, 128]) == 3  # eager, a graph of 1, a graph of 100 (their µs: notebook 14, section 10's Checks)
assert "median of 9 interleaved rounds" in replay_text[:300]  # the probe's eager calls: "in its own rounds"
assert replay_eager != probe[4096, 128]["fwd", "gae"]  # its eager figure is not the card's
assert round(100 * (1 - replay_hundred / CARD[0][1])) == 89  # "in a graph of 100 calls ... lost 89 %", against the card
assert [replay_hundred, replay_eager, round(100 * (1 - replay_hundred / replay_eager))] == [3.2, 25.9, 88]  # the fold's
assert model_gpu == model_gpu_gae and model_wall == HOST_US["gae"]  # host-bound; the host time, the wall probe's
assert round(model_removed) == 87  # "the model gives 87 %"
assert round(100 * (1 - replay_one / CARD[0][1])) == 84  # "replayed alone ... lost 84 %", against the card
assert replay_one > gpu_us["gae", (4096, 128)]  # a graph of one call leaves more than the GPU time: its one launch
assert replay_hundred < replay_one < replay_eager  # "a graph of many calls removes more per call"
removed = {a: 100 * (1 - gpu_us[a, (4096, 128)] / probe[4096, 128]["fwd", a]) for a in ALGORITHMS}  # GPU: run; wall: probe
assert all(x > 85 for x in removed.values())  # "every algorithm's call ... would lose over 85 %"

# %% [markdown]
# ## 5. A real measurement on this CPU: one call against CleanRL's loop over time
#
# **Question: how many tensor ops does CleanRL's loop over time run, against one call?** Each op
# pays at least a fixed host cost (on a GPU, a kernel launch too), so the count sets a floor. CleanRL's
# `ppo.py` loop runs one Python iteration per step; `rl.gae` on CPU tensors runs ⌈log₂ T⌉ rounds of
# whole-tensor ops (a scan, notebook 00). Both take time-major `(T, N)` inputs.

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
# with 64 envs. `CountOps` counts the tensor ops (ATen ops) run inside its `with` block, the same on
# every machine. (`fastest_ms` times a call, for the optional timing below.)
#
# **Predict first.** The scan runs ⌈log₂ T⌉ rounds, plus a few ops. How many times as many ops
# should it run at 2048×1 as at 128×4?

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

# %%
# the reveal: run it once your prediction is set above
CPU_SIZES = [(128, 4, "CleanRL default"), (2048, 1, "SB3 default"), (2048, 64, "SB3 steps, 64 envs")]
op_rows, rollouts, errors = [], {}, []
for T_, N_, who in CPU_SIZES:
    g = torch.Generator().manual_seed(0)
    rollout = (torch.randn(T_, N_, generator=g), torch.randn(T_, N_, generator=g),  # rewards, values
               (torch.rand(T_, N_, generator=g) < 0.02).float(),  # dones
               torch.randn(1, N_, generator=g),  # next_value: (1, N), as CleanRL's `.reshape(1, -1)` makes it
               (torch.rand(N_, generator=g) < 0.02).float())  # next_done
    rollouts[T_, N_] = rollout  # kept: the exercise lean_gae_loop uses them
    loop_ops, torch_ops = sum(ops_of(cleanrl_gae, rollout).values()), sum(ops_of(package_gae, rollout).values())
    errors.append(profile.rel_err(package_gae(*rollout)[0], cleanrl_gae(*rollout)[0].double().numpy()))
    op_rows.append({"T × N": f"{T_}×{N_}", "who": who, "loop ops": loop_ops, "loop ops/step": loop_ops / T_,
                    "torch path ops": torch_ops})
assert max(errors) < 1e-5  # the same advantages
print(f"[{SOURCE['here']}] GAE, float32: ATen ops per call, counted (the same on every machine with this torch version)")
print(profile.table(op_rows, digits=3))
print("one step of the loop, ops by name:", {n: round(c / 128, 2) for n, c in ops_of(cleanrl_gae, rollouts[128, 4]).items()})
scan_growth = op_rows[1]["torch path ops"] / op_rows[0]["torch path ops"]
op_growth = op_rows[1]["loop ops"] / op_rows[0]["loop ops"]
against(my_scan_ops_x, scan_growth, "the scan's ops at 2048×1 ÷ at 128×4", model=11 / 7)

# %% [markdown]
# **Why.** Each step of the loop runs 15 ops (the printout names them), so its count is T times a
# constant. The scan's count grows only with its rounds, ⌈log₂ T⌉, and not with N.
#
# <details><summary>Details: the scan's growth, the ops by name, and one env</summary>
#
# * The scan runs 7 rounds at T = 128 and 11 at T = 2048: its count grew 1.4× for 16× the steps,
#   not 11/7 = 1.57×, because some ops run once per call, not once per round: 175 ops are 49 + 7 × 18,
#   and 247 are 49 + 11 × 18.
# * Six ops compute nothing: five indexings (`select`) and one `view`. Nine compute: four
#   multiplications, two additions, two subtractions (one an `rsub`, `1.0 - dones`) and one write
#   (`copy_`).
# * The `view` reshapes the carry, (1, N) as CleanRL's `next_value` makes it, to write row t. With
#   a single env the write takes one more op, an `expand`: 16 per step at 2048×1.
#
# </details>
#
# **Optional: the same calls timed here,** an illustration, not the lesson. On a CPU an op also
# pays for each element it touches, and other programs slow every time, so the times need not follow
# the counts.

# %%
cpu_rows = []
for T_, N_, _ in CPU_SIZES:
    rollout = rollouts[T_, N_]
    loop_ms, torch_ms = fastest_ms(lambda: cleanrl_gae(*rollout)), fastest_ms(lambda: package_gae(*rollout))
    cpu_rows.append({"T × N": f"{T_}×{N_}", "loop ms": loop_ms, "torch path ms": torch_ms,
                     "loop µs/op": 1e3 * loop_ms / sum(ops_of(cleanrl_gae, rollout).values())})
print(f"[{SOURCE['here']}, one CPU thread] GAE, float32: ms per call, fastest of 15")
print(profile.table(cpu_rows, digits=3))
growth = cpu_rows[1]["loop ms"] / cpu_rows[0]["loop ms"]
per_op = [r["loop µs/op"] for r in cpu_rows]  # about the same in every row on a quiet machine
if max(per_op) > 2 * min(per_op):
    print(f"this machine was busy while timing: the loop's µs per op moved {max(per_op) / min(per_op):.1f}× between "
          f"the rows, so these times are not the loop's own cost; the op counts above are the figure to trust "
          f"(close other notebooks' kernels and rerun this cell for cleaner times)")
else:
    print(f"the loop at 2048×1 ÷ at 128×4: {growth:.3g}× the time, for {op_growth:.3g}× the ops (16× the steps)")
    if 2 / 3 <= growth / op_growth <= 1.5:
        print("so here the loop's time grew roughly with its op count")
    else:
        print(f"so here the loop's time grew {'less' if growth < op_growth else 'more'} than its op count: its µs per "
              f"op moved {max(per_op) / min(per_op):.2g}× between the rows (ops differ in cost, and load moves times)")
for r in cpu_rows:  # with many envs the scan's arithmetic on the whole rollout can outweigh the loop's fixed costs
    if r["torch path ms"] > r["loop ms"]:
        print(f"at {r['T × N']} the PyTorch path was slower than the loop on this machine: "
              f"{r['torch path ms']:.3g} ms against {r['loop ms']:.3g} ms (the text above says why)")

# %% [markdown]
# **Back to the counts, on a GPU.** There each computing op is a kernel launch. The benchmark's loop
# row is the harness's own loop, `profile.op("gae").loop`, not CleanRL's; the cell below counts its
# launches per step. Our GAE call launches one. In the benchmark run at 4096×128:

# %%
harness = profile.op("gae")  # the benchmark's `pytorch_loop` row of GAE times this op's loop
small = harness.make(4, 128, torch.float32, "cpu", torch.Generator().manual_seed(0))
harness_step = {n: round(c / 128) for n, c in ops_of(lambda: harness.loop(small, harness.defaults), ()).items()
                if c >= 128}  # ops run once per step (the few run once per call left out)
HOST_ONLY = {"aten.select.int", "aten.view.default", "aten.expand.default"}  # ops that launch no kernel
harness_launches = sum(c for n, c in harness_step.items() if n not in HOST_ONLY)
print(f"[{SOURCE['here']}] The harness's loop, one step at 4×128, ops by name: {harness_step}; "
      f"{harness_launches} launch a kernel")
loop_h200 = row(RES, "gae", 4096, 128, impl="pytorch_loop")["full_call_us"]  # the run's single timing: no probe timed the loop
loop_x = loop_h200 / CARD[0][1]  # against the card's wall time, the wall probe's median
print(f"[{SOURCE['run']}] GAE 4096×128 forward: the PyTorch loop over time, {loop_h200:,.0f} µs per call (a single timing)")
print(f"[{SOURCE['wall']}] rltriton_lite, the card: {CARD[0][1]} µs per call; the loop takes {loop_x:.0f}× that")

# %% [markdown]
# **Finding:** the loop pays a fixed cost for every op of every step, so its host time grows with T;
# the scan pays it once per round. A fused GPU kernel pays it once per call: at 4096×128, the loop
# costs over 400× our call (its time is the run's single timing: no probe timed the loop).
#
# <details><summary>Details: the harness's loop</summary>
#
# The harness's loop launches 10 kernels per step, one more than CleanRL's 9 computing ops: it
# computes `1 - terminated` twice.
#
# </details>

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
assert counts[:2] == [49 + 7 * 18, 49 + 11 * 18]  # "175 ops are 49 + 7 × 18, and 247 are 49 + 11 × 18"
assert scan_growth == counts[1] / counts[0] and round(scan_growth, 1) == 1.4 and 1 < scan_growth < 11 / 7  # "1.4×"
assert all(r["torch path ops"] < r["loop ops"] / 5 for r in op_rows)
assert 400 < loop_x < loop_h200 / row(RES, "gae", 4096, 128)["full_call_us"]  # "over 400×" (09's 432×: the run's ours)
# the harness's loop: "10 kernels per step", one op more than CleanRL's 9 computing ops ("computes 1 - terminated twice")
assert harness_step == {"aten.select.int": 6, "aten.mul.Tensor": 4, "aten.rsub.Scalar": 2, "aten.add.Tensor": 2,
                        "aten.sub.Tensor": 1, "aten.copy_.default": 1} and harness_launches == 10
assert harness_launches == sum(c for n, c in _names.items() if n not in HOST_ONLY) + 1
assert inspect.getsource(harness.loop).count("(1 - term[:, t])") == 2
from rltriton_lite import bench  # noqa: E402  the harness: its pytorch_loop peer runs profile's loop
assert [q.build for q in bench.PEERS if q.impl == "pytorch_loop"] == [bench._pytorch]
assert "loop = _op(name).loop" in inspect.getsource(bench._pytorch)

# %% [markdown]
# ### The same two calls under `torch.profiler`
#
# **Question: does PyTorch's own profiler tell the same story?** The next cell profiles three calls
# of each code at 128×4 and prints the eight ops called most often (`# of Calls`). Its time columns
# move from run to run on a busy CPU; the counts do not.

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
    print(f"[{SOURCE['here']}] {who}, {PROFILED_CALLS} calls at 128×4: {len(profiled[who])} kinds of aten op, "
          f"{sum(profiled[who].values())} calls")
    print(averages.table(sort_by="count", row_limit=8))  # by calls: the same on every run

# %% [markdown]
# **Finding:** the same story, in the profiler's own counts. The loop's table is a few kinds of tiny op,
# indexing (`select`), copies and arithmetic, each run hundreds of times per call. `rl.gae` runs more kinds
# of op (`where`, `cat`) but less than a fifth as many calls.
#
# <details><summary>Details: why the profiler counts more</summary>
#
# The profiler also counts ops run inside other ops, so it counts more than `CountOps`.
#
# </details>

# %% jupyter={"source_hidden": true}
# Checks: the profiler's counts (CI runs them; skip when reading)
_loop_p, _scan_p = profiled["CleanRL's loop"], profiled["rl.gae (the PyTorch path)"]
assert sum(_loop_p.values()) > 5 * sum(_scan_p.values())  # "less than a fifth as many calls"
assert len(_scan_p) > len(_loop_p)  # "rl.gae runs more kinds of op"
assert {"aten::where", "aten::cat"} <= set(_scan_p) and not {"aten::where", "aten::cat"} & set(_loop_p)
assert _loop_p["aten::select"] > 4 * 128 * PROFILED_CALLS  # "hundreds of times per call": about five per step
_loop_top = sorted(_loop_p, key=_loop_p.get)[-8:]  # the loop's printed table: its eight ops called most often
assert min(_loop_p[k] for k in _loop_top) > 100 * PROFILED_CALLS  # "each run hundreds of times per call"
assert {"aten::select", "aten::copy_", "aten::mul", "aten::add"} <= set(_loop_top)  # "indexing, copies and arithmetic"
assert sum(_loop_p.values()) > PROFILED_CALLS * op_rows[0]["loop ops"]  # "more calls than CountOps"
assert "aten::_to_copy" in _loop_p  # lean_gae_loop's question: "the aten::_to_copy calls that torch.profiler lists"
assert not any("_to_copy" in k for k in ops_of(cleanrl_gae, rollouts[128, 4]))  # "... not in its count"

# %% [markdown]
# **End of the minimum path.** Next, the checked [Exercises](#Exercises). The optional profiler
# and the open questions can wait. Each scan's full table, peers included, is in
# [notebook 09, section 2](09_benchmarks.ipynb#2.-How-much-faster-than-each-peer?).

# %% [markdown]
# ## Optional: the profiler on this machine
#
# *A live tool, not a lesson.* `profile.profiler(name)` times the kernel, the PyTorch path and the
# code it replaces here; on a CPU the Triton row is a **correctness run**, checked and not timed.
# Its `loop` row is the harness's batch-major loop, not section 5's CleanRL loop.
# Pick shapes and press **run**: the widget plots them and prints their table. Its first run, at the
# defaults, is printed under it.
#
# **On a CPU its times can reverse section 5's story.** A CPU has no launch to save: the PyTorch
# path's ⌈log₂ T⌉ rounds each pass over all B×T elements, so with many rows the loop can be faster,
# and a busy machine moves every time. The Triton kernel runs in the interpreter, which executes it
# in Python, so it is checked, not timed. Section 5's op counts are the figure that holds everywhere.

# %%
ui, prof_rows = profile.profiler("gae")  # the controls, and a first run at the defaults
ui.children[-1].clear_output()  # that run's table is printed once, below, outside the widget; "run" redraws here
ui

# %%
print(f"[{SOURCE['here']}] GAE, profiler rows; {LIVE}")
print(profile.live_table(prof_rows))
timed = [r for r in prof_rows if r["ms"] is not None]  # on a CPU the kernel is checked, not timed
assert {r["impl"] for r in prof_rows} == {"triton", "torch", "loop"} and {r["impl"] for r in timed} >= {"torch", "loop"}
assert all(r["ms"] > 0 and math.isfinite(r["ms"]) for r in timed)  # a time, whatever the load
assert all(r["rel_err"] < 1e-5 for r in prof_rows)  # all three correct
assert all(("gbps" in r) == (DEVICE == "cuda") for r in prof_rows)  # a bandwidth only from a GPU
for r in timed:  # printed only where this run measured it: the loop faster than the PyTorch path
    if DEVICE == "cpu" and r["impl"] == "torch" and r["replaced_x"] < 1:
        print(f"at {r['B']}×{r['T']} the loop was faster here (loop ÷ this {r['replaced_x']:.3g}): with many "
              f"environments the scan's rounds over the whole rollout outweigh the loop's fixed costs (see the 'Why:' note below)")
if DEVICE == "cpu":
    print(textwrap.fill(profile.cpu_why("gae"), 110))  # the widget's note under its table, kept for a static render
    assert "many rows and few steps: memory passes dominate and the loop can win" in profile.cpu_why("gae")  # "below"
    assert "passes over all B×T elements ⌈log₂ T⌉ times" in profile.cpu_why("gae")  # "each pass over all B×T elements"
    assert "A CPU has no launch to save" in profile.cpu_why("gae")  # the note before the widget
    (check,) = [r for r in prof_rows if r["impl"] == "triton"]
    assert check["ms"] is None and "correctness run" in check["timing"]  # the interpreter: checked, not timed
    assert all("median of 5 calls" in r["timing"] for r in timed)  # the widget's CPU times: medians of 5 calls

# %% jupyter={"source_hidden": true}
# Checks: the profiler's loop row, on the package's source (CI runs them; skip when reading)
# "its `loop` row is the harness's batch-major loop, profile.op("gae").loop": (B, T) inputs, indexed by column
assert "o.loop(x, p) if impl in REPLACED" in inspect.getsource(profile._call) and "o = op(name)" in inspect.getsource(profile.profiler)
assert small["rewards"].shape == (4, 128) and "r[:, t]" in inspect.getsource(harness.loop)

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
#   writes it: it reads `log_rhos`, `rewards`, `values` and `next_values` (floats) and the flag
#   `terminated` (1 byte); it writes `vs` and the policy-gradient advantages.
# * **Edge case:** unlike GAE's $V(s_{t+1})$, V-trace's `next_values` is a separate tensor (as from
#   a target network), so it is read.
#
# <details><summary>Hint 1: where to start</summary>
#
# Do for V-trace what section 1's `GAE_TRAFFIC` did for GAE, one (row, step) first: which tensors
# are read, which written, and how many bytes is each element?
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * List every tensor of the call, with "read" or "write"; each moves once per step.
# * A float element is `elem_bytes` bytes; the flag `terminated` is 1 byte, always.
# * Sum the bytes per step. The floor is $B \cdot T \cdot$ (bytes per step).
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Three checks that do not give the count away. V-trace moves more than GAE's 17 bytes a step
# (section 1). `(2, 3, 4)` is 6 steps, so 6 times `(1, 1, 4)`. In bfloat16 the floats halve but the
# flag stays 1 byte, so twice the bfloat16 step is the float32 step plus 1.
#
# ```python
# one = vtrace_floor_bytes(1, 1, 4)
# print(one > 17, vtrace_floor_bytes(2, 3, 4) == 6 * one, 2 * vtrace_floor_bytes(1, 1, 2) - one)  # must print True True 1
# ```
#
# If a check fails, the checker's message says what your count left out.
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
# it write (04c's `vtrace_kernel` exercise returns them)? Count them, then check your function on
# Hint 3's shapes by hand.
#
# </details>

# %%
def vtrace_floor_bytes(B, T, elem_bytes):
    # YOUR CODE
    raise NotImplementedError

# %%
exercises.attempt("vtrace_floor_bytes", vtrace_floor_bytes)

# %% [markdown]
# **`lean_gae_loop`.** Of the 15 ops in each step of CleanRL's loop (section 5), most do not depend
# on the carry `lastgaelam`: they can run once, on whole tensors, before the loop. Write
# `lean_gae_loop`, CleanRL's loop with at most 6 ops per step.
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
# When it passes, time both with `fastest_ms` on `rollouts[2048, 1]` (`args` as in Hint 3). Is the
# gain the ratio of the op counts, 16 per step at 2048×1 against your 6? Not necessarily: ops differ
# in cost. `CountOps` leaves out CleanRL's scalar conversions (`torch.profiler`'s `aten::_to_copy`
# calls) and Python's work between ops. An op count is a floor on the time, not a proportion.

# %%
def lean_gae_loop(rewards, values, dones, next_value, next_done, gamma, gae_lambda):
    # YOUR CODE
    raise NotImplementedError

# %%
exercises.attempt("lean_gae_loop", lean_gae_loop)

# %% [markdown]
# Without a checker:
#
# *(Answer each in its cell below: your teacher's grader collects them there.)*
#
# 1. From `RES["rows"]`, find for each algorithm the smallest shape at which the forward call is
#    no longer host-bound (wall time at most twice its GPU time, section 3). What is the host time
#    per call you would need for 16×128 not to be host-bound?
#
# 2. *On another session's file.* This notebook's run times float32 only; an earlier H200 sweep,
#    `H200-2026-11-30d.json`, has bfloat16 too. Notebook 14 loads it as `FULL`
#    ([section 1](14_appendix_data.ipynb#1.-Where-the-figures-come-from)); here,
#    `FULL = json.load(open(SRC.path("sweep"), encoding="utf-8"))`. Compare float32 and bfloat16 at
#    16384×1024 in `FULL["rows"]`: by how much should bfloat16 be faster if the kernel is at the
#    floor (count the bytes: the flag does not shrink)? Is it?
#
# 3. A PPO update calls GAE once per rollout and the loss once per minibatch. With the 4096×128
#    figures above (the loss's forward, as if each minibatch were that size), estimate the host
#    time per update of 4 epochs × 32 minibatches, eager and captured in a CUDA graph. What
#    changes if you count the backward too?

# %% [markdown] tags=["answer-1"]
# **Answer 1.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-2"]
# **Answer 2.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-3"]
# **Answer 3.** *Your answer here (code for it: in cells under this one).*

# %% [markdown]
# ## What you now know
#
# * **The floor:** $B \cdot T$ × the fewest bytes per step ÷ the copy bandwidth; every kernel comes
#   close to it at 16384×1024.
# * **One model:** wall ≈ max(host, GPU), with each call's own host time, and GPU ≈ $t_0$ + floor;
#   it misses the scans on few long rows.
# * **Two clocks:** at 16×128 and 4096×128 every call is **host-bound**. To compare two calls, time
#   them in paired rounds, where the host's load cancels; without pairing, a gap under 2.3× is
#   within the noise.
# * **A CUDA graph** removes most of a small call: 89 % per call of GAE's at 4096×128 in a graph of
#   100 calls. reduce-overhead captures one graph per break-free region.
# * **A loop over time** pays a fixed cost per op per step: CleanRL's runs 15 ops a step, the
#   benchmark's launches 10 kernels a step.

# %% [markdown]
# > **Further reading:** [notebook 09](09_benchmarks.ipynb), the same run against every peer, scan
# > by scan, and the fused losses; [notebook 14](14_appendix_data.ipynb), the data's sources,
# > rounding and noise; notebook 13c, sections 4 and 5, few long rows.
