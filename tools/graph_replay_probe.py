"""What a CUDA graph saves of one call, host included: the wall time per GAE call (float32, forward),
eager against the replay of a graph that holds one call and of one that holds 100, each a loop of
replays with one sync at the end. Graphs of many calls spread a replay's own launch over them, as
a benchmark's GPU time does; a graph of one call pays it every call. Timed in interleaved rounds
(a shared host drifts), medians printed:

    PYTHONPATH=$PWD python tools/graph_replay_probe.py > $OUT/graph_replay.txt
"""
import statistics
import time

import torch

import rltriton_lite as rl

SHAPES = [(16, 128), (4096, 128), (64, 16384)]
ROUNDS, CALLS = 9, 300


def wall_us(fn, per_fn=1):
    """Wall µs per call of ``fn`` (which makes ``per_fn`` calls): a loop, one sync at the end."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(CALLS):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / (CALLS * per_fn) * 1e6


def graph_of(call, n):
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # compile and plan outside the capture
        for _ in range(3):
            call()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(n):
            out = call()
    return graph, out


def main():
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}: rl.gae forward, float32; "
          f"wall µs per call, median of {ROUNDS} interleaved rounds of {CALLS} loops")
    print(f"{'shape':>10} {'eager':>8} {'graph of 1':>11} {'graph of 100':>13}")
    for B, T in SHAPES:
        g = torch.Generator(device="cuda").manual_seed(0)
        r, v, nv = (torch.randn(B, T, device="cuda", generator=g) for _ in range(3))
        call = lambda: rl.gae(r, v, next_values=nv, gamma=0.99, lambda_=0.95)  # noqa: E731
        (one, out_one), (hundred, out_hundred) = graph_of(call, 1), graph_of(call, 100)
        one.replay()
        hundred.replay()
        for out in (out_one, out_hundred):  # a replay computes what the eager call does
            torch.testing.assert_close(out.advantages, call().advantages)
        times = {"eager": [], "one": [], "hundred": []}
        for _ in range(ROUNDS):
            times["eager"].append(wall_us(call))
            times["one"].append(wall_us(one.replay))
            times["hundred"].append(wall_us(hundred.replay, per_fn=100))
        med = {k: statistics.median(x) for k, x in times.items()}
        print(f"{f'{B}x{T}':>10} {med['eager']:8.1f} {med['one']:11.1f} {med['hundred']:13.1f}")


if __name__ == "__main__":
    main()
