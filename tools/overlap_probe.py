"""Why do the loss calls' host and GPU work add up at 16384×1024 where the scans' overlap? (notebook 08,
section 3's open question). On a GPU, for each call at one shape: the host's time per call (calls issued
without a sync, timed until the last returns), the wall time per call (back to back, one sync: bench.wall_ms),
the GPU time of one call (CUDA events, and a CUDA graph's replay), the kernels one call launches, and the
GPU's idle time between them; then torch.profiler's CUDA runtime calls by self CPU time:

    PYTHONPATH=$PWD python tools/overlap_probe.py > $OUT/overlap_probe.txt

With ``--all``: every profiled algorithm at the RL shapes and 16384×1024, one session on one card, the
summary lines only (notebooks 08 and 09 read host, wall and GPU time per call from that file).
"""
import datetime
import statistics
import sys
import time

import torch
import triton
from torch.profiler import ProfilerActivity, profile

from rltriton_lite import bench
from rltriton_lite import profile as rlprofile

dev = "cuda"
ALL = sys.argv[1:] == ["--all"]
if ALL:
    SHAPES, NAMES = [*rlprofile.RL_SHAPES, (16384, 1024)], tuple(rlprofile.ops())
else:
    SHAPES = [(16384, 1024), (4096, 128)] if len(sys.argv) < 2 else [tuple(map(int, s.split("x"))) for s in sys.argv[1:]]
    NAMES = ("gae", "ppo", "crr", "sac")


def host_us(fn, n=20):
    """µs per call until the n-th call returns, without a sync (fewer calls than the launch queue holds)."""
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    host = (time.perf_counter() - t) / n * 1e6
    torch.cuda.synchronize()
    return host


def event_us(fn, reps=50):
    """GPU µs of one call between two CUDA events (host launches inside: the GPU waits for them)."""
    out = []
    for _ in range(reps):
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) * 1e3)
    return statistics.median(out)


def kernels_and_gaps(fn, calls=10):
    """(kernels per call, GPU busy µs per call, GPU idle µs per call between the first and last kernel,
    {kernel name: count}) over ``calls`` back-to-back calls, from torch.profiler's device events."""
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    ev = sorted((e for e in prof.events() if e.device_type.name == "CUDA"), key=lambda e: e.time_range.start)
    busy = sum(e.time_range.end - e.time_range.start for e in ev)
    span = ev[-1].time_range.end - ev[0].time_range.start if ev else 0
    names = {}
    for e in ev:
        names[e.name[:60]] = names.get(e.name[:60], 0) + 1
    return len(ev) / calls, busy / calls, (span - busy) / calls, names, prof


print(f"# overlap_probe: {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}; "
      f"{datetime.date.today().isoformat()}, PYTHONPATH=$PWD python tools/overlap_probe.py {' '.join(sys.argv[1:])}")
print("# µs per call: host (20 calls, no sync), wall (back to back, one sync; median of 5 loops of 200), "
      "events (one call between CUDA events, median of 50), graph (CUDA-graph replay), then from torch.profiler "
      "over 10 back-to-back calls: kernels per call, GPU busy and GPU idle µs per call")
g = torch.Generator().manual_seed(0)
for B, T in SHAPES:
    for name in NAMES:
        op = rlprofile.op(name)
        x = op.make(B, T, torch.float32, dev, g)
        fn = lambda: op.run(x, "triton", op.defaults)  # noqa: E731
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        host = statistics.median(host_us(fn) for _ in range(5))
        wall = 1e3 * statistics.median(bench.wall_ms(fn, lambda _: torch.cuda.synchronize(), 200) for _ in range(5))
        events = event_us(fn)
        graph = 1e3 * triton.testing.do_bench_cudagraph(fn, rep=20, return_mode="median")
        k, busy, idle, names, prof = kernels_and_gaps(fn)
        print(f"{name:5s} {B}x{T}: host {host:7.1f}  wall {wall:7.1f}  events {events:7.1f}  graph {graph:7.1f}  "
              f"kernels {k:4.1f}  busy {busy:7.1f}  idle {idle:7.1f}  max(host, graph) {max(host, graph):7.1f}  "
              f"host + graph {host + graph:7.1f}")
        print(f"      kernels: {names}")
        if (B, T) == SHAPES[0] and name in ("ppo", "gae") and not ALL:
            print(f"## torch.profiler, 10 calls of {name} {B}x{T}, by self CPU time")
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))
