"""Wall time per call on a GPU, host included, in one process: the bare-launch anchor (a naive
GAE kernel through ``kernel[grid]`` and ``torch.empty_like``), an empty kernel, ``torch.add``,
every public function forwards and forwards + backwards beside the minimal autograd.Function, then
a cProfile of the calls. A maintainer's probe for the launch path:

    PYTHONPATH=$PWD python tools/wall_probe.py > $OUT/wall_probe.txt
"""
import cProfile
import io
import pstats
import statistics
import time

import torch
import triton
import triton.language as tl

import rltriton_lite as rl
from rltriton_lite.bench import bare_gae, minimal_ppo_loss

dev = "cuda"


def wall(fn, n=300, reps=7):
    """Median over ``reps`` loops of ``n`` back-to-back calls (one sync each) of µs per call."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(out)


@triton.jit
def _noop(x_ptr, n, BLOCK: tl.constexpr):
    pass


def cases(B, T):
    g = torch.Generator(device=dev).manual_seed(0)
    r, v, nv, lr, lp, old, adv, q, base, nlp = (torch.randn(B, T, device=dev, generator=g) for _ in range(10))
    d = torch.rand(B, T, device=dev, generator=g) < 0.02
    boot = torch.randn(B, device=dev, generator=g)
    a = torch.rand(B, T, device=dev, generator=g)
    fwd = {
        "bare_launch": lambda: bare_gae(r, v, d, boot, 0.99, 0.95),
        "noop kernel[grid]": lambda: _noop[(B,)](r, B, BLOCK=16),
        "torch.add": lambda: torch.add(r, v),
        "discounted_return": lambda: rl.discounted_returns(r, terminated=d, bootstrap_value=boot),
        "gae": lambda: rl.gae(r, v, terminated=d, bootstrap_value=boot),
        "td_lambda": lambda: rl.td_lambda(r, nv, terminated=d),
        "vtrace": lambda: rl.vtrace(lr, r, v, terminated=d, bootstrap_value=boot),
        "sac": lambda: rl.sac_targets(r, (q, nv), nlp, terminated=d),
        "ppo": lambda: rl.ppo_clip_loss(lp, old, adv),
        "crr": lambda: rl.crr_loss(lp, q, base),
        "linear_scan": lambda: rl.linear_scan(a, r),
        "minimal_fn fwd": lambda: minimal_ppo_loss(lp, old, adv),
    }
    rg, lpg = r.clone().requires_grad_(), lp.clone().requires_grad_()
    w = torch.randn(B, T, device=dev, generator=g)
    one = torch.ones((), device=dev)
    bwd = {
        "minimal_fn": lambda: torch.autograd.grad(minimal_ppo_loss(lpg, old, adv), (lpg,), one),
        "ppo": lambda: torch.autograd.grad(rl.ppo_clip_loss(lpg, old, adv).loss, (lpg,), one),
        "crr": lambda: torch.autograd.grad(rl.crr_loss(lpg, q, base).loss, (lpg,), one),
        "sac_actor": lambda: torch.autograd.grad(rl.sac_actor_loss(lpg, q), (lpg,), one),
        "discounted_return": lambda: torch.autograd.grad(rl.discounted_returns(rg, terminated=d), (rg,), w),
        "gae": lambda: torch.autograd.grad(rl.gae(rg, v, terminated=d).advantages, (rg,), w),
        "linear_scan": lambda: torch.autograd.grad(rl.linear_scan(a, rg), (rg,), w),
    }
    return fwd, bwd


for B, T in [(16, 128), (4096, 128), (64, 16384)]:
    fwd, bwd = cases(B, T)
    print(f"== {B}x{T}: µs per call (median of 7 loops of 300)")
    for name, fn in fwd.items():
        print(f"fwd      {name:20s} {wall(fn):8.1f}")
    for name, fn in bwd.items():
        print(f"fwd+bwd  {name:20s} {wall(fn, 100):8.1f}")
    if (B, T) == (16, 128):
        for name, fn in [("gae fwd", fwd["gae"]), ("ppo fwd", fwd["ppo"]), ("ppo fwd+bwd", bwd["ppo"])]:
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(500):
                fn()
            torch.cuda.synchronize()
            pr.disable()
            s = io.StringIO()
            pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(25)
            print(f"-- cProfile {name} {B}x{T} (500 calls)")
            print(s.getvalue()[-6000:])
