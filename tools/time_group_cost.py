"""What ``time_group=`` costs a rank on one GPU (docs/DESIGN.md, "Across processes"): ``gae`` and
``linear_scan`` on one segment per rank, beside the plain one-device call on the same steps.

The exchange is replaced by its local equivalent: the process plays rank 0 of two ranks that hold
the same steps (``all_gather`` becomes a stack of this rank's rows twice), so the window is open
at its end and everything a rank runs is timed: the header, the first values, the map
(``plan.summarize``), the carry composed, the scan from it, and backwards the two passes and the
boundary's routing. Only the wire is missing. A second row uses a real NCCL group of one rank.
The last column is the alternative to the split: gather the whole row (here, the rank's steps
concatenated twice, the gather's local equivalent), make one plain call, keep the rank's slice.

Wall time per call: back-to-back calls, one sync, host included. GPU time: the kernels' time per
call by torch.profiler (the sharded path syncs to read the header, so it cannot be graph-captured).

    PYTHONPATH=$PWD python tools/time_group_cost.py > $OUT/time_group_cost.txt
"""
import os
import statistics
import types

import torch
import torch.distributed as dist

import rltriton_lite as rl
from rltriton_lite import bench, distributed

SHAPES = [(1, 1 << 20), (4096, 128)]


def wall_us(fn, n=30, rounds=7):
    for _ in range(3):
        fn()
    sync = lambda _: torch.cuda.synchronize()  # noqa: E731
    return 1e3 * statistics.median(bench.wall_ms(fn, sync, n) for _ in range(rounds))


def gpu_us(fn, n=10):
    """The kernels' device time per call (torch.profiler's CUDA events, summed)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
    total = sum(e.device_time_total for e in prof.key_averages() if e.device_time_total > 0
                and not e.key.startswith("ProfilerStep"))
    return total / n


class _TwoRanks:
    """rank 0 of 2, whose all_gather is a local stack: the exchange's local equivalent."""

    def __enter__(self):
        self.saved = distributed._dist, distributed._gather
        shim = types.SimpleNamespace(get_rank=lambda g=None: 0, get_world_size=lambda g=None: 2,
                                     get_backend=lambda g=None: "nccl")
        distributed._dist = lambda: shim
        distributed._gather = lambda group, x, like: torch.stack([x.detach().to(torch.float64)] * 2)
        return self

    def __exit__(self, *exc):
        distributed._dist, distributed._gather = self.saved


def calls(B, T, ranks=1):
    """The four calls on a rank's (B, T) steps. ``ranks=2``: gather, then one call: each input
    concatenated twice along time (two ranks' segments), one plain call, the rank's slice kept."""
    g = torch.Generator(device="cuda").manual_seed(0)
    r, v, a, b = (torch.randn(B, T, device="cuda", generator=g) for _ in range(4))
    a = a.sigmoid()
    vg, bg = v.clone().requires_grad_(), b.clone().requires_grad_()
    dy = torch.randn(B, T, device="cuda", generator=g)
    row = (lambda x: x) if ranks == 1 else (lambda x: torch.cat([x] * ranks, dim=1))

    def gae(**kw):
        adv, ret = rl.gae(row(r), row(v), gamma=0.99, lambda_=0.95, **kw)
        return adv[:, :T], ret[:, :T]

    def gae_bwd(**kw):
        adv, ret = rl.gae(row(r), row(vg), gamma=0.99, lambda_=0.95, **kw)
        return torch.autograd.grad(ret[:, :T], vg, dy)

    def scan(**kw):
        return rl.linear_scan(row(a), row(b), **kw)[:, :T]

    def scan_bwd(**kw):
        return torch.autograd.grad(rl.linear_scan(row(a), row(bg), **kw)[:, :T], bg, dy)

    return {"gae forwards": gae, "gae forwards + backwards": gae_bwd, "linear_scan forwards": scan,
            "linear_scan forwards + backwards": scan_bwd}


def main():
    for k, v in dict(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533", RANK="0", WORLD_SIZE="1").items():
        os.environ.setdefault(k, v)
    dist.init_process_group("nccl", device_id=torch.device("cuda", 0))
    group = dist.group.WORLD
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; float32, µs per call (wall | GPU)")
    head = (f"{'shape':>14} {'call':<34} {'one device':>19} {'2 ranks, local gather':>23} "
            f"{'NCCL, 1 rank':>19} {'gather, one call':>19}")
    print(head)
    for B, T in SHAPES:
        for (name, fn), gathered in zip(calls(B, T).items(), calls(B, T, ranks=2).values()):
            # one rank of a real group: the one-device call's values (a window that ends the rows)
            torch.testing.assert_close(fn(time_group=group), fn(), rtol=1e-5, atol=1e-5)
            plain = (wall_us(fn), gpu_us(fn))
            with _TwoRanks():
                local = (wall_us(lambda: fn(time_group=group)), gpu_us(lambda: fn(time_group=group)))
            nccl = (wall_us(lambda: fn(time_group=group)), gpu_us(lambda: fn(time_group=group)))
            joined = (wall_us(gathered), gpu_us(gathered))
            cells = [f"{w:>9.1f} | {g:>7.1f}" for w, g in (plain, local, nccl, joined)]
            print(f"{B:>5} x {T:<7} {name:<34} {cells[0]:>19} {cells[1]:>23} {cells[2]:>19} {cells[3]:>19}",
                  flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
