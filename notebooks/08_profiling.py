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
# * **You will learn:** the memory floor counted by hand; GPU time against wall time; what CUDA
#   graphs and `torch.compile(mode="reduce-overhead")` remove; how to read the committed H200
#   table and the profiler.
# * **Time:** 2–3 h with the open questions; 45–75 min for the reading and the checked exercise.
# * **Needs:** any of notebooks 01–07. No GPU: the GPU's figures are the committed H200 results;
#   with one, the profiler times the kernels live.
# * **Minimum path:** sections 1–4 and the checked exercise `vtrace_floor_bytes`; sections 5, 6,
#   "Sweep", "All algorithms side by side" and the open questions can wait.

# %% [markdown]
# **Four questions.** Three a practitioner asks of a kernel, and one this notebook adds:
#
# 1. **How fast could it be?** These kernels do a handful of flops per byte, so they are
#    memory-bound: the fastest possible run moves the fewest bytes the algorithm needs (each input
#    read once, each output written once) at the device's copy bandwidth. We count those bytes by
#    hand and get the **floor**.
# 2. **How fast is it?** The data are the committed H200 results of the benchmark harness
#    (`python -m rltriton_lite.bench`), in `benchmarks/results/`. This notebook does not need a GPU
#    to read them.

# %% [markdown]
# **The last two questions** are about the time a call really costs, and what this machine can time.
#
# 3. **What does a training step pay per call?** At the sizes RL code uses, far more than the
#    kernel's GPU time: the **wall time** of a call from Python is mostly host work. We put both
#    side by side, and say what a CUDA graph and `torch.compile(mode="reduce-overhead")` change.
# 4. **Live, on this machine:** on a GPU, the profiler and a sweep time the Triton kernels
#    themselves. On a CPU a Triton kernel runs only in the Triton interpreter, which executes the
#    GPU program in Python, so its time means nothing; there every live figure is a real
#    measurement of what a CPU runs, this package's PyTorch path against the PyTorch code it
#    replaces (CleanRL's Python loop over time, the eager loss formulas), and the kernels are
#    run in the interpreter only to check their outputs, untimed.

# %%
import math
import os

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

# %% [markdown]
# **Where these numbers come from.** Three files in `benchmarks/results/`, all measured on one
# NVIDIA H200 with **torch 2.11 and Triton 3.6**: `H200-2026-12-01c.json`, the main run (float32,
# the shapes below); `H200-2026-11-30d.json`, an earlier and wider sweep (bfloat16 too); and
# `H200-2026-12-01d-wall.txt`, a wall-time probe (section 3). `requirements.txt` pins newer
# versions (torch 2.13, Triton 3.9), so a GPU of yours with them may give other figures: compare
# ratios (% of the floor, wall ÷ GPU time) rather than microseconds. The
# notebook reads the two JSON files by name (`profile.COMMITTED_RUN`, `profile.COMMITTED_SWEEP`),
# so a results file of another GPU in the same folder changes nothing here. Each row is one
# (algorithm, implementation, shape, dtype, pass) with these fields, among others:
#
# | field | what it is |
# |---|---|
# | `bytes` | the fewest bytes the call must move (the floor model below) |
# | `floor_ms` | `bytes` ÷ the copy bandwidth measured in the same run |
# | `kernel_ms` | **GPU time**: the median of CUDA-graph replays, the kernels alone, no host |
# | `full_call_us` | **wall time** per call: back-to-back eager calls, one sync at the end, host included |
# | `ms`, `pct_floor` | the `triton.testing.do_bench` median (L2 flushed between calls), and `floor_ms ÷ ms` |

# %%
import triton  # noqa: E402

RESULTS = profile.results_folder()  # benchmarks/results/ beside the package
RES = profile.committed_results(RESULTS)[1]  # H200-2026-12-01c.json (profile.COMMITTED_RUN)
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
# GAE, per (row, step): read the reward $r_t$, the value $V(s_t)$ and the episode-end flag;
# write the advantage $A_t$ and the return $A_t + V(s_t)$. The next value $V(s_{t+1})$ is the
# neighbouring element of the same values tensor, so a kernel that reads each element once gets
# it for free; the running carry never leaves the kernel; the bootstrap value $V(s_T)$ is one number
# per row, 1/T of a step's traffic, so it is not counted. float32 is 4 bytes, a bool flag 1 byte.

# %%
GAE_TRAFFIC = [
    dict(tensor="rewards r_t", access="read", bytes=4),
    dict(tensor="values V(s_t)", access="read", bytes=4),
    dict(tensor="terminated (bool)", access="read", bytes=1),
    dict(tensor="advantages A_t", access="write", bytes=4),
    dict(tensor="returns A_t + V(s_t)", access="write", bytes=4),
]
gae_bytes = sum(t["bytes"] for t in GAE_TRAFFIC)
print(profile.table(GAE_TRAFFIC))
print(f"GAE moves {gae_bytes} B per (row, step) in float32")
assert gae_bytes == profile.op("gae").bytes_per_step(4) == 17

# %% [markdown]
# PPO's clipped loss reads three tensors per step (new and old log-probabilities, advantages)
# and writes one number for the whole batch: nothing per step.

# %%
PPO_TRAFFIC = [
    dict(tensor="log_probs (new policy)", access="read", bytes=4),
    dict(tensor="old_log_probs", access="read", bytes=4),
    dict(tensor="advantages", access="read", bytes=4),
    dict(tensor="loss (one scalar)", access="write", bytes=0),
]
ppo_bytes = sum(t["bytes"] for t in PPO_TRAFFIC)
print(profile.table(PPO_TRAFFIC))
print(f"PPO's loss moves {ppo_bytes} B per (row, step) in float32")
assert ppo_bytes == profile.op("ppo").bytes_per_step(4) == 12

# %% [markdown]
# In bfloat16 the floats halve and the flag stays one byte: GAE moves 2+2+1+2+2 = 9 B, not 8.5.
# The previous full sweep ran bfloat16, and its rows count exactly that. (The harness's
# forward + backward rows add the backward's bytes: GAE's backward reads the two output
# gradients and the flag and writes two input gradients, 17 B again.)

# %%
gae_bytes_bf16 = 2 + 2 + 1 + 2 + 2
assert gae_bytes_bf16 == profile.op("gae").bytes_per_step(2)
assert row(FULL, "gae", 16384, 1024, dtype="bfloat16")["bytes"] == 16384 * 1024 * gae_bytes_bf16
assert row(RES, "gae", 16384, 1024, pass_="fwd+bwd")["bytes"] == 16384 * 1024 * 2 * gae_bytes
for name, o in profile.ops().items():
    print(f"{name:>18}: {o.bytes_per_step(4):3d} B/step in float32, {o.bytes_per_step(2):3d} in bfloat16")

# %% [markdown]
# **The floor.** A copy of $N$ bytes reads $N$ and writes $N$; the harness times a large
# device-to-device copy and counts both, which gives the H200's usable memory bandwidth. The
# floor of a call is then
#
# $$t_\text{floor} = \frac{B \cdot T \cdot \text{bytes per step}}{\text{copy bandwidth}}.$$
#
# For GAE on 16384 rollouts × 1024 steps:

# %%
B, T = 16384, 1024
gae_floor_ms = B * T * gae_bytes / BW * 1e3
print(f"{B} × {T} × {gae_bytes} B = {B * T * gae_bytes / 1e6:.1f} MB;  ÷ {BW / 1e12:.4f} TB/s = "
      f"{gae_floor_ms * 1e3:.1f} µs")
ppo_floor_ms = B * T * ppo_bytes / BW * 1e3
print(f"PPO: {B * T * ppo_bytes / 1e6:.1f} MB → {ppo_floor_ms * 1e3:.1f} µs")

r_gae, r_ppo = row(RES, "gae", B, T), row(RES, "ppo", B, T)
assert r_gae["bytes"] == B * T * gae_bytes and r_ppo["bytes"] == B * T * ppo_bytes
# within 0.01 %: the file's headline bandwidth is the mean of its bandwidth measurements, and
# each row was priced with the one measured beside it
assert math.isclose(gae_floor_ms, r_gae["floor_ms"], rel_tol=1e-4)
assert math.isclose(ppo_floor_ms, r_ppo["floor_ms"], rel_tol=1e-4)

# %% [markdown]
# ## 2. The committed H200 results: GPU time against the floor
#
# Every algorithm at 16384×1024, float32, forward. **% floor** is the floor ÷ the GPU time
# (CUDA-graph replays); 100 % would be a kernel that
# moves its bytes as fast as a plain copy. The last column is the wall time per eager call.

# %%
ALGORITHMS = list(profile.ops()) + ["linear_scan"]
gpu_table = []
for name in ALGORITHMS:
    r = row(RES, name, B, T)
    if name in profile.ops():
        assert r["bytes"] == B * T * profile.op(name).bytes_per_step(4)  # the harness counts as we did
    gpu_table.append({"algorithm": name, "B/step": r["bytes"] // (B * T), "floor µs": 1e3 * r["floor_ms"],
                      "GPU µs": 1e3 * r["kernel_ms"], "% floor": 100 * r["floor_ms"] / r["kernel_ms"],
                      "wall µs/call": r["full_call_us"]})
print(f"H200, committed results {RES['date']}, {B}×{T} float32, forward")
print(profile.table(gpu_table))

# %%
pct = {t["algorithm"]: t["% floor"] for t in gpu_table}
assert all(80 < p < 101 for p in pct.values())  # every kernel at 80-100 % of copy speed
assert all(t["wall µs/call"] < 1.25 * t["GPU µs"] for t in gpu_table)  # big: the GPU time is the call

# %% [markdown]
# Every kernel moves its bytes at 80–100 % of copy speed. SAC passes 100 %: it mostly reads,
# but its floor is priced at a copy's read + write mix. At this size the wall time per call is
# within 25 % of the GPU time: the host's work for the next call overlaps the current kernel.

# %% [markdown]
# ## 3. Wall time versus GPU time at the shapes RL code uses
#
# A PPO update over 4096 environments × 128 steps is 0.5 M elements; 16 environments × 128 steps
# is 2 K; a few long rollouts are 64 × 16384. At those sizes the kernel takes a few µs, but a
# call from Python also pays its **host** work: argument checks, the Triton launcher, the
# allocator for the outputs, the CUDA launch. Launches are asynchronous (the host queues a kernel
# and moves on), so back-to-back calls cost about max(host time, GPU time) each. The same
# results file has both figures for every call:

# %%
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

# %%
ratio = {(t["algorithm"], s): t[f"{s[0]}×{s[1]} wall"] / t[f"{s[0]}×{s[1]} GPU"] for t in wall_gpu for s in SHAPES}
small = [ratio[a, s] for a in ALGORITHMS for s in [(16, 128), (4096, 128)]]
assert 6.5 < min(small) and max(small) < 35  # host-bound: wall 7-34x the GPU time
assert all(ratio[a, (16384, 1024)] < 1.25 for a in ALGORITHMS)  # GPU-bound
scans = ["discounted_return", "gae", "td_lambda", "vtrace", "linear_scan"]
assert all(ratio[a, (64, 16384)] < 1.5 for a in scans)  # few long rows: the scan's latency is the call
assert all(ratio[a, (64, 16384)] > 4 for a in ["sac", "ppo", "crr"])  # elementwise: host-bound again

# %%
fig, ax = plt.subplots(figsize=(8, 3.4))
labels = [f"{b}×{t}" for b, t in SHAPES]
for name, color in [("gae", "tab:green"), ("ppo", "tab:purple"), ("sac", "tab:orange")]:
    (t,) = [t for t in wall_gpu if t["algorithm"] == name]
    ax.plot(labels, [t[f"{s} wall"] for s in labels], "o-", color=color, label=f"{name}: wall per call")
    ax.plot(labels, [t[f"{s} GPU"] for s in labels], "s--", color=color, label=f"{name}: GPU time")
ax.set_yscale("log")
ax.set_ylabel("µs per forward call (log)")
ax.set_xlabel("B × T (shape of the rollout)")
ax.set_title(f"H200, committed results {RES['date']}: the gap is host time")
ax.legend(fontsize=7, ncol=3)
plt.tight_layout()
plt.show()

# %% [markdown]
# Read it as a practitioner: at 16×128 and 4096×128 every call costs about 20–55 µs of wall
# time for 1–5 µs of GPU work, 7–34× more. At 64×16384 the scans' GPU time (39–60 µs, far above
# their 2–6 µs floors: few long rows give the GPU little parallel work) hides the host, while
# the elementwise losses stay host-bound. Only at 16384×1024 is every call GPU-bound.
#
# How much of that host time is just *a launch from Python*? The interleaved wall-time probe
# (`tools/wall_probe.py`, its output committed as `benchmarks/results/H200-2026-12-01d-wall.txt`)
# times our calls in 15 interleaved rounds, all shapes in one run, beside three yardsticks:
#
# * `noop kernel[grid]`: an **empty** Triton kernel, one program per row: the launch alone;
# * `torch.add`: one PyTorch op, PyTorch's own launch path;
# * `bare_launch`: the committed tables' **"anchor: bare Triton launch"**, which is *not* empty: a
#   naive GAE kernel (`bench.bare_gae`), one program per row walking its steps one at a time,
#   launched plainly (`kernel[(B,)](...)`, the output from `torch.empty_like`). It is what a
#   plain Triton call of the same algorithm costs, its own GPU work included.
#
# The probe ran a later package whose scans walk few long rows in wider chunks, so at 64×16384
# its wall times fall below the results file's GPU times; subtract the two only at 16×128 and
# 4096×128, where the difference is the host's share.

# %%
PROBE = "H200-2026-12-01d-wall.txt"
with open(os.path.join(RESULTS, PROBE), encoding="utf-8") as f:
    print(f.readline().strip("# \n"))  # its first line: the GPU, the date and the stack (the JSON files')
probe = {(sec["B"], sec["T"]): {r["name"]: r["us"] for r in sec["rows"] if r["pass"] == "fwd"}
         for sec in profile.read_wall_probe(os.path.join(RESULTS, PROBE))}
probe_table = [{"shape": f"{b}×{t}", "noop kernel[grid]": probe[b, t]["noop kernel[grid]"],
                "torch.add": probe[b, t]["torch.add"], "bare_launch": probe[b, t]["bare_launch"],
                "gae": probe[b, t]["gae"], "ppo": probe[b, t]["ppo"], "crr": probe[b, t]["crr"],
                "gae GPU (results JSON)": 1e3 * row(RES, "gae", b, t)["kernel_ms"]}
               for b, t in [(16, 128), (4096, 128), (64, 16384)]]
print(f"H200 wall-time probe, µs per forward call (host included), {PROBE}")
print(profile.table(probe_table, digits=3))
crr_two_runs = probe[16, 128]["crr"] / row(RES, "crr", 16, 128)["full_call_us"]  # the same call, two runs
assert 1.5 < crr_two_runs <= 2  # a busy host: up to 2x apart (the caveat below)
assert all(probe[s]["noop kernel[grid]"] > 3 * 1e3 * row(RES, "gae", *s)["kernel_ms"] for s in [(16, 128), (4096, 128)])
assert all(probe[s]["bare_launch"] > probe[s]["noop kernel[grid]"] for s in probe)  # the anchor is not empty
assert all(probe[s]["gae"] < probe[s]["bare_launch"] for s in [(4096, 128), (64, 16384)])
# 64×16384: the later package's wall time below the results file's GPU time, every scan
assert all(probe[64, 16384][a] < 1e3 * row(RES, a, 64, 16384)["kernel_ms"] for a in scans)

# %% [markdown]
# Read the three yardsticks apart. An *empty* Triton kernel costs 16–19 µs of wall time per
# launch, a `torch.add` 10–11 µs: more than GAE's whole GPU time at 4096×128 (3.3 µs). The bare
# launch costs more than the empty kernel at every shape, because it does GAE's work: at 16×128
# about 10 µs more, its naive kernel's own GPU time (8 µs in the results file, below); at 4096×128
# and beyond, its one-program-per-row walk is slow on the GPU and dominates its call, so our GAE
# call costs about half of it at 4096×128 and a twentieth at 64×16384. That is why the harness
# divides our wall time by this anchor ("÷ anchor" in the results' tables): below 1, our call
# costs less than the plain Triton one of the same algorithm.

# %%
bare = row(RES, "gae", 16, 128, impl="bare_triton_launch")
print(f"anchor: bare Triton launch, GAE 16×128, results file: wall {bare['full_call_us']:.1f} µs, "
      f"GPU {1e3 * bare['kernel_ms']:.1f} µs")
assert 5 < 1e3 * bare["kernel_ms"] < bare["full_call_us"]  # a real kernel: GPU time of its own

# %% [markdown]
# A caveat about every wall time here: it is mostly the host CPU's work, and the same call varied
# by up to 2× between runs on the shared host. That is why the probe interleaves its candidates and
# reports ratios to anchors timed in the same rounds (`bare_launch` forward, `minimal_fn`,
# the "anchor: minimal autograd.Function", forward + backward); quote wall times as "tens of
# µs", GPU times to a few per cent.
#
# ## 4. Taking the host out: CUDA graphs and `torch.compile(mode="reduce-overhead")`
#
# **A CUDA graph** records the kernels a region launches (each kernel, its grid, its argument
# pointers) once, with `torch.cuda.graph(g)`; `g.replay()` then submits the whole recorded
# sequence with one driver call. No Python, no argument checks, no allocator, no per-kernel
# launch: each kernel costs its GPU time. That is exactly how the harness measured the GPU column
# (`triton.testing.do_bench_cudagraph`), so the "GPU" figures above *are* what a captured step
# pays per kernel: 2.6–5.2 µs at 4096×128 instead of 20–50 µs per eager call. The price: shapes
# and addresses are frozen (copy new data into the captured input tensors, `static.copy_(fresh)`),
# outputs are overwritten by the next replay, and nothing inside may synchronise with the host
# (`.item()`, printing a tensor) or take a data-dependent Python branch. Every public function of
# this package can be captured; the repository's GPU tests (`tests/test_compile.py`) check replays
# against eager calls on a GPU.

# %%
saving = [{"algorithm": t["algorithm"], "eager wall µs": t["4096×128 wall"],
           "graph replay (GPU) µs": t["4096×128 GPU"],
           "host time removed %": 100 * (1 - t["4096×128 GPU"] / t["4096×128 wall"])} for t in wall_gpu]
print("H200, committed results, 4096×128 forward: what capturing the call in a CUDA graph removes")
print(profile.table(saving, digits=3))
assert all(s["host time removed %"] > 85 for s in saving)

# %% [markdown]
# One caution about small-shape GPU times: the graph timing replays the call back to back without
# flushing the L2 cache (60 MiB on the H200), and at these sizes the inputs fit in it. SAC at
# 64×16384 even "beats" its DRAM floor (4.4 µs against 5.2 µs). Small-shape GPU times are best
# cases; only the big shape's % floor is a statement about memory bandwidth.

# %%
sac_long = row(RES, "sac", 64, 16384)
print(f"SAC 64×16384: {sac_long['bytes'] / 1e6:.0f} MB, floor {1e3 * sac_long['floor_ms']:.1f} µs, "
      f"GPU {1e3 * sac_long['kernel_ms']:.1f} µs")
assert sac_long["bytes"] < 60e6 and sac_long["kernel_ms"] < sac_long["floor_ms"]

# %% [markdown]
# **`torch.compile(mode="reduce-overhead")`** does the capture for you: it compiles the region
# with Inductor (fusing the torch ops around our kernels), records the compiled code as CUDA
# graphs, and on later calls with the same shapes replays them. Inside a compiled training step
# the per-call host cost of everything in the region disappears; what is left per step is the
# guards' check and the replay. For that the region must trace into one graph: this package's
# functions are registered as `torch.library` custom ops (`torch.ops.rltriton_lite.gae`, …), so
# `torch.compile(fullgraph=True)` goes through them without a graph break.
#
# **Not measured here:** the repository has no timing of reduce-overhead mode (its GPU test
# checks only that the graphs replay correctly and none is skipped). What the harness did measure
# is `torch.compile` in its default mode (with `dynamic=True`) of the eager loss formulas, and it
# shows why the mode matters: compiling fuses the kernels, but the host cost stays per call.

# %%
sac_small = [{"SAC target, 4096×128": impl, "wall µs/call": r["full_call_us"], "GPU µs": 1e3 * r["kernel_ms"]}
             for impl in ["pytorch_eager", "torch_compile", "rltriton_lite"]
             for r in [row(RES, "sac", 4096, 128, impl=impl)]]
print(f"H200, committed results {RES['date']}, forward")
print(profile.table(sac_small, digits=3))
eager, compiled = sac_small[0], sac_small[1]
assert compiled["GPU µs"] < eager["GPU µs"] / 3 and compiled["wall µs/call"] > eager["wall µs/call"]

# %% [markdown]
# Compiling SAC's formula cut its GPU time about 4× (fused kernels) and made its wall time per
# call *longer* (the compiled wrapper and its guards run on every call). Reduce-overhead mode
# attacks the other term: it replays the graph instead of re-entering the wrapper kernel by
# kernel.
#
# On any machine we can check the precondition, that a step calling GAE and then PPO's loss
# traces into a single graph made of the package's custom ops. The backend below only records
# the graph and runs it eagerly (here under the interpreter): a tracing check, not performance.

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

# %% [markdown]
# With a GPU, the next cell captures that step in a CUDA graph and times eager calls against
# replays (live); on a CPU there is nothing to capture and it says so.

# %%
if DEVICE == "cuda":
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
# ## 5. A real measurement on this CPU: one call against CleanRL's loop over time
#
# A real measurement on any machine: plain wall-clock time of two pieces of PyTorch code that
# compute the same advantages on this machine's CPU. The
# first is the loop from CleanRL's `ppo.py`, one Python iteration per step. The second is this
# package's PyTorch path, which `rl.gae` runs on CPU tensors (`backend="auto"` never picks the
# interpreter): it replaces the loop over T with ⌈log₂ T⌉ rounds of
# whole-tensor ops, a scan (notebook 00). The inputs are time-major, `(T, N)`, as CleanRL and SB3
# store their rollouts.

# %%
import inspect  # noqa: E402

from rltriton_lite.integrations import cleanrl  # noqa: E402

# CleanRL's loop as `ppo.py` has it (kept verbatim in the package, the oracle of its tests):
cleanrl_gae = cleanrl.loop
print(inspect.getsource(cleanrl_gae))

# %%
# The package's side is the CleanRL drop-in, `integrations.cleanrl.gae`: the same arguments, and
# one call of `rl.gae` inside (CPU tensors: the PyTorch path). It shifts CleanRL's `dones`
# ("the episode ended before step t") into `terminated` ("it ended at step t").
package_gae = cleanrl.gae

# %% [markdown]
# Three rollout sizes: CleanRL's default (128 steps × 4 environments), SB3's (2048 steps × 1
# environment), and SB3's steps with 64 environments. Each time is the median of 5 calls after
# one warm-up (`profile.time_ms`), and both functions get the same random rollout. PyTorch gets
# one thread (`profile.cpu_threads(1)`): on a busy or shared machine a multi-threaded op waits for
# its slowest thread, and one paused thread can make a call 100× slower than the next.

# %%
CPU_SIZES = [(128, 4, "CleanRL default"), (2048, 1, "SB3 default"), (2048, 64, "SB3 steps, 64 envs")]
cpu_rows, rollouts = [], {}
for T_, N_, who in CPU_SIZES:
    g = torch.Generator().manual_seed(0)
    rollout = (torch.randn(T_, N_, generator=g), torch.randn(T_, N_, generator=g),  # rewards, values
               (torch.rand(T_, N_, generator=g) < 0.02).float(), torch.randn(N_, generator=g),  # dones, next_value
               (torch.rand(N_, generator=g) < 0.02).float())  # next_done
    rollouts[T_, N_] = rollout  # kept: the op counts below use the same rollouts
    with profile.cpu_threads(1):
        loop_ms = profile.time_ms(lambda: cleanrl_gae(*rollout), "cpu", rep=5)
        torch_ms = profile.time_ms(lambda: package_gae(*rollout), "cpu", rep=5)
    err = profile.rel_err(package_gae(*rollout)[0], cleanrl_gae(*rollout)[0].double().numpy())
    cpu_rows.append({"T × N": f"{T_}×{N_}", "who": who, "loop ms": loop_ms, "torch path ms": torch_ms,
                     "loop µs/step": 1e3 * loop_ms / T_, "loop ÷ torch path": loop_ms / torch_ms, "rel. error": err})
print("GAE, float32, wall time per call on this CPU (one thread), median of 5: real timing")
print(profile.table(cpu_rows, digits=3))

# %% [markdown]
# Both compute the same advantages; that holds on any machine, so it is asserted. The times are
# wall clock, so they are printed, not asserted: on a busy laptop one median can come out slow.
# What to expect: SB3's default has 16 times the steps of CleanRL's, so the loop should take
# about 16 times longer there; on a busy machine the ratio can come out well off that.

# %%
assert all(r["rel. error"] < 1e-5 for r in cpu_rows)  # the same advantages
growth = cpu_rows[1]["loop ms"] / cpu_rows[0]["loop ms"]
print(f"the loop at 2048×1 ÷ at 128×4: {growth:.3g}× the time, for 16× the steps (expected: about 16×)")

# %%
fig, ax = plt.subplots(figsize=(7, 3.2), dpi=100)
x = range(len(cpu_rows))
for dx, key, color, label in [(-0.2, "loop ms", "tab:red", "CleanRL's loop over time"),
                              (0.2, "torch path ms", "tab:blue", 'cleanrl.gae (one rl.gae call)')]:
    bars = ax.bar([i + dx for i in x], [r[key] for r in cpu_rows], 0.4, color=color, label=label)
    ax.bar_label(bars, fmt="%.3g", fontsize=8, padding=2)
ax.set_yscale("log")
ax.set_ylim(top=10 * max(r["loop ms"] for r in cpu_rows))  # room for the labels and the legend
ax.set_xticks(list(x), [f"{r['T × N']}\n({r['who']})" for r in cpu_rows])
ax.set_xlabel("rollout (steps T × environments N)")
ax.set_ylabel("ms per call (log scale)")
ax.set_title("GAE on this CPU (one thread): wall time per call, median of 5 (real timing)", fontsize=10)
ax.legend(fontsize=8, loc="upper left")
plt.tight_layout()
plt.show()

# %% [markdown]
# **Why the loop costs what it does.** Every tensor op pays PyTorch's fixed cost of a
# microsecond or two, however few numbers it touches. So what sets a call's time is how many ops
# it runs, and that count is the same on every machine. PyTorch can count them: a
# `TorchDispatchMode` sees each op (`aten.mul`, `aten.add`, ...) that runs inside its `with` block.

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

# %% [markdown]
# The loop's ops, per step, at CleanRL's size:

# %%
loop_ops = ops_of(cleanrl_gae, rollouts[128, 4])
print({name: round(n / 128, 2) for name, n in loop_ops.items()})

# %% [markdown]
# Each step runs the same short list: five indexings (`select`, a view that computes nothing),
# four multiplications, two additions, two subtractions and one write (`copy_`); the one
# `zeros_like` is for the whole call. The count at every size, for both functions:

# %%
op_rows = [{"T × N": f"{T_}×{N_}", "loop ops": sum(ops_of(cleanrl_gae, rollouts[T_, N_]).values()),
            "torch path ops": sum(ops_of(package_gae, rollouts[T_, N_]).values())} for T_, N_, _ in CPU_SIZES]
for r, (T_, _, _) in zip(op_rows, CPU_SIZES):
    r["loop ops per step"] = r["loop ops"] / T_
print("GAE: ATen ops per call (the same on every machine)")
print(profile.table(op_rows, digits=3))

# %%
per_step = [r["loop ops per step"] for r in op_rows]
assert 10 <= min(per_step) and max(per_step) <= 20  # a dozen or so ops per step
assert max(per_step) < 1.01 * min(per_step)  # the same at every size: T times a constant, whatever N
counts = [r["torch path ops"] for r in op_rows]
assert counts[1] == counts[2]  # the scan's count does not depend on N either
assert counts[1] < 2 * counts[0]  # 16× the steps: 4 more rounds, not 16× the ops
assert all(r["torch path ops"] < r["loop ops"] / 5 for r in op_rows)

# %% [markdown]
# So the loop's time is set by T (its µs per step barely moves with N). The scan pays its fixed
# costs per round instead of per step (7 rounds at T = 128, 11 at T = 2048), but does log₂ T times
# more arithmetic per element, so its lead narrows as N grows. On a GPU every op that computes is
# also a kernel launch with several µs of host time: the loop costs about 9 × T launches per call
# (the indexings are views and launch nothing) whatever the GPU's speed, where the fused kernel
# costs one. The committed H200 results at 4096×128:

# %%
loop_h200, ours_h200 = row(RES, "gae", 4096, 128, impl="pytorch_loop"), row(RES, "gae", 4096, 128)
print(f"H200, committed results {RES['date']}, GAE 4096×128 forward, wall µs per call: "
      f"PyTorch loop over time {loop_h200['full_call_us']:,.0f}, rltriton_lite {ours_h200['full_call_us']:.1f}")
assert loop_h200["full_call_us"] > 100 * ours_h200["full_call_us"]

# %% [markdown]
# ## 6. The "profile it" sections of notebooks 01–07, read once
#
# Each of notebooks 01–07 ends its lesson with an optional "profile it" cell that shows its
# algorithm's committed H200 table and chart and points here. This section explains that table
# once, on GAE, then checks what the tables say of each of the seven algorithms, then runs the
# profiler on this machine (`profile.profiler(name)` takes any of the seven).

# %% [markdown]
# **The committed H200 table.** `profile.committed(name)` reads the committed H200 results file
# in `benchmarks/results/` by its name, `profile.COMMITTED_RUN` (a GPU measured it; nothing is
# re-measured here, and a results file of another GPU in that folder is not read), and prints one
# line per implementation, for each shape (rows B × steps T) and pass (`fwd`: the call; `fwd+bwd`: the
# call and its backward), then draws the same numbers as a chart. The implementations, in order:
# ours (the Triton kernel); the PyTorch code it replaces (the CleanRL-style "PyTorch loop over
# time" for the four scans, the "eager PyTorch formula" for PPO, SAC and CRR); `torch.compile`
# of the formula; the peers by name (torchrl, accelerated-scan, JAX, rl-triton); the anchors.

# %% [markdown]
# **The table's columns**, and where this notebook explains each:
#
# | column | what it is | explained in |
# |---|---|---|
# | `floor µs` | the fewest bytes the call must move ÷ the copy bandwidth | section 1 |
# | `wall µs/call` | back-to-back eager calls, host included: what a training step without CUDA graphs pays | section 3 |
# | `GPU µs` | CUDA-graph replays, the kernels alone; `n/a` where the call cannot be captured (JAX, torchrl, the Python loops) | section 4 |
# | `% floor` | floor ÷ GPU time: 100 % moves the bytes at copy speed | section 2, and section 4's caution about small shapes |
# | `wall ÷ ours` | the row's wall time ÷ ours in the same case: above 1, ours is faster | |
# | `!` after a name | its outputs disagreed with ours | |

# %% [markdown]
# **The anchors** are yardsticks, not peers, and neither is an empty kernel: "anchor: bare Triton
# launch" (in GAE's rows) is section 3's `bare_launch`, a naive GAE kernel launched plainly;
# "anchor: minimal autograd.Function" (in PPO's rows) is PPO's clipped loss as a plain
# `torch.autograd.Function`, one naive Triton kernel each way. The legend under each table says
# which it shows.

# %%
gae_rows = profile.committed("gae")

# %% [markdown]
# Every figure is the results file's own. One line checked by hand against the JSON, ours and
# the loop at 4096×128, forward:

# %%
RUN, COMMITTED = profile.committed_results(RESULTS)  # by name: H200-2026-12-01c
by_case = {(r["impl"], r["B"], r["T"], r["pass"]): r for r in gae_rows}
ours_line, loop_line = by_case["rltriton_lite", 4096, 128, "fwd"], by_case["pytorch_loop", 4096, 128, "fwd"]
j = row(COMMITTED, "gae", 4096, 128)
assert ours_line["wall_us"] == j["full_call_us"] and ours_line["gpu_us"] == 1e3 * j["kernel_ms"]
assert ours_line["pct_floor"] == 100 * j["floor_ms"] / j["kernel_ms"] and ours_line["floor_us"] == 1e3 * j["floor_ms"]
assert loop_line["gpu_us"] is None and loop_line["vs_ours"] == loop_line["wall_us"] / ours_line["wall_us"]
print(f"{RUN}: GAE 4096×128 fwd, ours {ours_line['wall_us']:.1f} µs wall, {ours_line['gpu_us']:.2f} µs GPU; "
      f"the loop {loop_line['wall_us']:,.0f} µs wall, no GPU time (a loop cannot be captured)")

# %% [markdown]
# **What each notebook asserts.** `profile.committed_facts(rows)` reduces a table to four numbers,
# and each of notebooks 01–07 asserts bounds on them for its algorithm:
#
# * `ours`: how many of our lines have both times;
# * `replaced_x`: the smallest, over the cases, of the replaced code's time ÷ ours. Wall time
#   for a loop over time (it has no GPU time); GPU time for an eager formula, because at the
#   shapes RL code uses both calls are mostly host time (section 3), and the GPU time is what a
#   captured step pays (section 4);
# * `host_x`: the smallest wall ÷ GPU time of ours at 4096×128: above 1, the host is part of the call;
# * `floor_pct`: the smallest % floor of ours at the largest shape, whose data are several times
#   the L2 cache (section 4's caution): the one % floor that measures DRAM bandwidth.

# %%
facts = profile.committed_facts(gae_rows)
print(f"gae: ours {facts.ours} lines; replaced_x {facts.replaced_x:.3g}× (the loop's wall time ÷ ours, smallest); "
      f"host_x {facts.host_x:.3g}×; floor_pct {facts.floor_pct:.3g} %")
assert facts.ours == sum(r["impl"] == "rltriton_lite" for r in gae_rows)
assert facts.replaced_x == min(r["vs_ours"] for r in gae_rows if r["impl"] == "pytorch_loop") > 100
assert facts.host_x > 5 and facts.floor_pct > 75

# %% [markdown]
# **The seven algorithms.** What each table shows beyond the shared two facts (the host is most
# of a call at 4096×128; over 75 % of the floor at the largest shape):
#
# | notebook | algorithm | the code it replaces | what is particular |
# | --- | --- | --- | --- |
# | 01 | `discounted_return` | a CleanRL-style loop over time, a few small kernels per step: over 50× our wall time at every shape | the lightest scan, 9 B per step in float32 (the reward and the flag in, the return out) |
# | 02 | `gae` | CleanRL's loop: over 100× | two outputs, 17 B per step; the returns $A_t + V_t$ add the $V_t$ the prologue kept (the `keep` slot), so `values` is read once |
# | 03 | `td_lambda` | the loop: over 100× | 13 B per step, the same for every λ: moving along 03's bias–variance trade-off costs nothing |
# | 04 | `vtrace` | IMPALA's loop: over 50× | the clipped weights are computed in the prologue, in registers, never written (the bytes: this notebook's exercise) |
# | 05 | `ppo` | CleanRL's eager formula, not a loop: its GPU time over 2× ours | a reduction, one number written: 12 B per step, reads only |
# | 06 | `sac` | CleanRL's one-line target, an eager formula: GPU time over 2× ours | given λ = 0 as a number the kernel runs elementwise, and passes 100 % of its floor at some shapes (09 says why); the PyTorch path runs the scan whatever λ is, so on a CPU the one line is faster ("All algorithms side by side") |
# | 07 | `crr` | the eager formula: GPU time over 2× ours | with the backward, the formula's *wall* time is below ours at every shape: both calls are mostly host work, and ours pays the package's fixed cost per call (argument checks, the custom op's dispatch) |

# %%
replaced_bound = {"discounted_return": 50, "gae": 100, "td_lambda": 100, "vtrace": 50, "ppo": 2, "sac": 2, "crr": 2}
for name, bound in replaced_bound.items():
    rows_ = profile.committed_rows(RES, name)
    f = profile.committed_facts(rows_)
    print(f"{name:<18} replaced_x {f.replaced_x:7.3g}×  host_x {f.host_x:5.3g}×  floor_pct {f.floor_pct:5.3g} %")
    assert f.ours >= 4 and f.replaced_x > bound and f.host_x > 5 and f.floor_pct > 75, (name, f)
sac_rows = profile.committed_rows(RES, "sac")
assert any(r["pct_floor"] > 100 for r in sac_rows if r["impl"] == "rltriton_lite")  # over 100 % somewhere
crr_wall = {(r["impl"], r["B"], r["T"]): r["wall_us"] for r in profile.committed_rows(RES, "crr") if r["pass"] == "fwd+bwd"}
assert all(crr_wall[i, b, t] < crr_wall["rltriton_lite", b, t] for i, b, t in crr_wall if i == "pytorch_eager")

# %% [markdown]
# **On this machine: the profiler.** `profile.profiler(name)` builds controls and runs once with
# the defaults. On a GPU it times the Triton kernel, the package's PyTorch path
# (`backend="torch"`) and the code the kernel replaces with `do_bench` (shape, dtype and the
# algorithm's parameters as controls), and plots the bandwidth achieved against the copy
# bandwidth.

# %% [markdown]
# **On a CPU, the Triton row is a correctness run.** A Triton kernel runs only in the **Triton interpreter**, which runs each program of
# the grid one after another, in Python, with NumPy: its time measures Python, not a GPU. So the
# profiler does not time it. It runs the kernel once (4 rows × 64 steps in 16-step chunks, so
# that the carry between chunks is exercised) and checks it against the float64 reference: the
# `triton` row, a **correctness run**, its time `n/a`. What a CPU times for real is PyTorch code:
# the package's PyTorch path against the code the kernel replaces, labelled `loop` for the four
# scans (a Python loop over time) and `eager` for PPO, SAC and CRR (an eager formula, no loop),
# wall clock, one thread, at the shapes RL code uses; the `loop ÷ this` (or `eager ÷ this`)
# column is that code's time over each row's.

# %% [markdown]
# **Why none of this predicts a GPU:** a CPU has no kernel launches to save and no HBM. Its fixed cost
# per op is a microsecond or two of PyTorch dispatch, so it measures the trade of section 5, T
# Python iterations against ⌈log₂ T⌉ whole-tensor rounds. On a GPU every small op is also a kernel
# launch of several µs of host time and a pass over memory, and the fused kernel is one launch
# that reads each byte once. The CPU figures answer "is the PyTorch path a good CPU fallback?";
# the committed table answers "how fast is the kernel?".

# %% [markdown]
# **Printed, not only drawn.** The profiler's plot and table go into the widget's output, which a static render of the
# notebook (GitHub, nbviewer) does not show, so the next cell prints the rows it returns with
# `profile.live_table`.

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
# ## Sweep
#
# `profile.sweep` times each implementation over a list of shapes with a progress bar. The
# dashboard re-runs it for the algorithm, dtype and implementations you pick; it runs once with
# the defaults so that a headless run exercises it. On a GPU it sweeps the Triton kernel and the
# PyTorch path and also plots the achieved bandwidth and % of the floor. On a CPU it offers only
# what a CPU can time for real, the PyTorch path and the code it replaces ("loop": the scans'
# loop over time; its rows read "eager" for PPO, SAC and CRR, whose code is an eager formula; the
# interpreter's time would say nothing), over RL shapes: for GAE, watch the loop's time follow
# the number of steps T, and the PyTorch path's the number of elements B × T.

# %%
GPU = DEVICE == "cuda"
SIZES = ([(16, 128), (4096, 128), (1024, 1024), (16384, 1024), (64, 16384)] if GPU
         else [(16, 128), (256, 128), (4096, 128), (64, 2048), (256, 1024)])
IMPLS = ("triton", "torch", "loop") if GPU else ("torch", "loop")  # "loop": the replaced code

# %% [markdown]
# `show` plots one sweep: time per call at each shape (in the order swept), and on a GPU the
# achieved bandwidth and the % of the floor beside it:

# %%
def show(rows, title):
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
    axes[0].set_yscale("log")
    axes[0].set_ylabel("ms per call (log scale)")
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

# %% [markdown]
# `run` sweeps and redraws into one output area, keeping the rows it timed in `last`:

# %%
out = w.Output()
last = {}


def run(algorithm, dtype, impls):
    rows = profile.sweep(algorithm, SIZES, getattr(torch, dtype), impls=impls)
    last["rows"] = rows
    with out:
        out.clear_output(wait=True)
        show(rows, f"{algorithm}, {dtype}, {DEVICE}")

# %% [markdown]
# The dashboard: pick an algorithm, a dtype and the implementations, then press "sweep". It runs
# once with the defaults:

# %%
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
    loop_ms = {(r["B"], r["T"]): r["ms"] for r in rows if r["impl"] == "loop"}
    print(f"the loop at 64×2048 ÷ at 16×128: {loop_ms[64, 2048] / loop_ms[16, 128]:.3g}× the time, "
          "for 16× the steps (expected: about 16×)")

# %% [markdown]
# ## All algorithms side by side
#
# On a GPU: the kernel against the PyTorch path, with the floor, at 16384×1024. On a CPU: the
# PyTorch path against the code it replaces at two shapes, many short rollouts (4096×128) and a
# few long ones (64×2048), timed for real (`profile.cpu_rows`, without the kernels' interpreter
# check: each of notebooks 01–07 checks its kernel against the loop); the committed H200 figures
# for every algorithm are in section 2.

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
# On a CPU, read the "replaced ÷ this" column of the torch rows: the replaced code's time (the
# `loop` rows of the scans, the `eager` rows of the others) over the PyTorch path's; above 1, the
# PyTorch path is the faster one. Expect the scans' PyTorch path to lose at 4096×128 and win at 64×2048: it replaces
# T Python iterations of small ops by ⌈log₂ T⌉ rounds of whole-tensor ops, which pays off when
# the per-op fixed cost (T of them) outweighs the extra passes over memory (⌈log₂ T⌉ of them), so
# with few rows and many steps. Expect the losses' and SAC's PyTorch path to lose at both: the
# code they replace has no loop over time, and the package's path does more (masks, diagnostics;
# for SAC the general λ-return's scan). None of this carries over to a GPU, where every small op
# is also a kernel launch: there the fused kernel wins (the end of section 5: on the H200 the
# loop's call costs over a hundred times ours at 4096×128).

# %% [markdown]
# ## Exercises
#
# Checked exercises work as in notebook 00b: write the starter's function, run the cell after it
# (`print(exercises.task(name))` restates the task; solutions in `notebooks/solutions/`).
#
# **`vtrace_floor_bytes`.** Work out V-trace's floor as section 1 did for GAE: the fewest bytes
# its forward must move for a `(B, T)` rollout as the profiler calls it (inputs `log_rhos`,
# `rewards`, `values`, `next_values` and the `terminated` flags; outputs `vs` and the policy-gradient
# advantages), for elements of `elem_bytes` bytes. Unlike GAE in section 1, the profiler passes
# V-trace a separate `next_values` tensor (as a target network would give it), so it is read, not
# taken from the neighbouring element of `values`.

# %%
def vtrace_floor_bytes(B, T, elem_bytes):
    # YOUR CODE
    raise NotImplementedError

# %%
exercises.attempt("vtrace_floor_bytes", vtrace_floor_bytes)

# %% [markdown]
# Without a checker:
#
# *(Answer each in its cell below: `tools/grade.py --collect-answers` gathers the answers for your
# teacher.)*
#
# 1. From `RES["rows"]`, find for each algorithm the smallest shape at which the forward call's
#    wall time is within 1.5× of its GPU time. What is the host time per call you would need for
#    16×128 to be GPU-bound?
# 2. Compare float32 and bfloat16 at 16384×1024 in `FULL["rows"]`: by how much should bfloat16 be
#    faster if the kernel is at the floor (count the bytes: the flag does not shrink)? Is it?
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
# * The floor is $B \cdot T$ times the fewest bytes per step (GAE 17 in float32, PPO's loss 12)
#   over the copy bandwidth: the time a memory-bound kernel aims at.
# * Wall time (an eager call, host included) is not GPU time (graph replays): at 16×128 and
#   4096×128 a call costs 7–34× its GPU time; only at 16384×1024 is it GPU-bound.
# * On the H200 every kernel moves its bytes at 80–100 % of copy speed at 16384×1024; a small
#   shape's % floor is a best case, since its data fit in the L2 cache.
# * A CUDA graph removes the host's share (over 85 % of a call at 4096×128) but freezes shapes
#   and addresses; `torch.compile(mode="reduce-overhead")` captures for you.
# * On a CPU the Triton interpreter's time means nothing: there the kernels are only checked,
#   and the real timing is the PyTorch path against CleanRL's loop, whose cost grows with T.
