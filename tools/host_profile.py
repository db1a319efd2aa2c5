"""Where a GPU call's host time goes: wall time per call of back-to-back calls of GAE with and
without a mask, of its pieces (an allocation, an empty Triton launch), of the masked call's
stages (its signature, ``episode.prepare``, the launch from a prepared problem), whether each planned
launch takes the direct path (``_triton.Launch.compiled``), and a cProfile of the masked call.

    PYTHONPATH=$PWD python tools/host_profile.py 256x1024 64x32768 > $OUT/host_profile.txt
"""
import cProfile
import pstats
import sys

import torch

import rltriton_lite as rl
from rltriton_lite import episode, plan, returns
from rltriton_lite._triton import jit
from rltriton_lite.bench import token_cumsum, token_inputs, wall_ms


@jit
def _noop(x):
    pass


def per_call_us(fn, n=2000):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    return 1e3 * wall_ms(fn, lambda _: torch.cuda.synchronize(), n)


for shape in sys.argv[1:] or ["256x1024"]:
    B, T = map(int, shape.split("x"))
    r, v, m = token_inputs(B, T, "cuda")
    mb = m.bool()
    print(f"== {B}x{T}: µs per call, back-to-back")
    for name, fn in {"torch.empty": lambda: torch.empty(B, T, device="cuda"),
                     "torch.add": lambda: r + v,
                     "noop kernel[(1,)]": lambda: _noop[(1,)](r),
                     "cumsum shortcut": lambda: token_cumsum(r, v, m),
                     "gae": lambda: rl.gae(r, v, gamma=0.99, lambda_=0.95),
                     "gae, float mask": lambda: rl.gae(r, v, gamma=0.99, lambda_=0.95, mask=m),
                     "gae, bool mask": lambda: rl.gae(r, v, gamma=0.99, lambda_=0.95, mask=mb)}.items():
        print(f"   {name:<20} {per_call_us(fn):8.1f}")
    args = ("gae", r, v, None, None, 0.99, 0.95, None, None, m, -1, "auto")
    p, use_kernel = episode.prepare(*args)
    print("   the masked call's stages:")
    for name, fn in {"call_key": lambda: plan.call_key(args),
                     "prepare": lambda: episode.prepare(*args),
                     "_run (prepared)": lambda: returns._run(p, use_kernel),
                     "2 x empty_like": lambda: (torch.empty_like(r), torch.empty_like(r))}.items():
        print(f"     {name:<18} {per_call_us(fn):8.1f}")
    for key, scan in plan._SCANS.items():
        if key[4:6] == (B, T):
            print(f"   {key[0].fn.__name__:<24} n_seg {scan.n_seg:>4}  look-ahead {key[-1] is not None!s:<5}  "
                  f"direct launch: final {bool(scan.final.compiled)}, "
                  f"summarize {bool(scan.summarize.compiled)}, compose {bool(scan.compose.compiled)}")
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(2000):
        rl.gae(r, v, gamma=0.99, lambda_=0.95, mask=m)
    torch.cuda.synchronize()
    pr.disable()
    pstats.Stats(pr, stream=sys.stdout).sort_stats("tottime").print_stats(22)
