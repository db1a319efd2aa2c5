"""What a mask costs a call on a GPU: ``gae`` with and without a right-padding mask (the host
gathers V of the next unmasked step and marks the last one: docs/DESIGN.md, "The primitive"), wall
time per call (back-to-back calls, one sync, host included) and GPU time (CUDA-graph replay),
at token-level RLHF shapes:

    PYTHONPATH=$PWD python tools/mask_cost.py > $OUT/mask_cost.txt
"""
import statistics
import time

import torch

import rltriton_lite as rl

SHAPES = [(256, 1024), (256, 4096), (64, 32768), (8, 131072), (4096, 128)]


def wall_us(fn, n=50, rounds=9):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(out)


def gpu_us(fn, n=20):
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    g.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(n):
        g.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / n * 1e3


print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; gae float32, µs per call")
print(f"{'B x T':>12} {'wall, no mask':>14} {'wall, mask':>11} {'GPU, no mask':>13} {'GPU, mask':>10}")
for B, T in SHAPES:
    g = torch.Generator(device="cuda").manual_seed(0)
    r, v = (torch.randn(B, T, device="cuda", generator=g) for _ in range(2))
    lengths = torch.randint(T // 2, T + 1, (B, 1), device="cuda", generator=g)
    mask = torch.arange(T, device="cuda") < lengths  # right padding, as a batch of responses
    plain = lambda: rl.gae(r, v, gamma=0.99, lambda_=0.95)  # noqa: E731
    masked = lambda: rl.gae(r, v, gamma=0.99, lambda_=0.95, mask=mask)  # noqa: E731
    print(f"{B:>5} x {T:<6} {wall_us(plain):>14.1f} {wall_us(masked):>11.1f} {gpu_us(plain):>13.1f} "
          f"{gpu_us(masked):>10.1f}")
