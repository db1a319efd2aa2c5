"""Wall time per call on a GPU, host included, in one process: every public function forwards,
and forwards + backwards, against the bare-launch anchor (a naive GAE kernel through
``kernel[grid]`` and ``torch.empty_like``) and the minimal autograd.Function. The host of a
shared machine drifts by tens of percent within a minute, so the candidates are timed in
interleaved rounds, and each ratio is the median of the ratios within a round:

    PYTHONPATH=$PWD python tools/wall_probe.py > $OUT/wall_probe.txt
    PYTHONPATH=$PWD python tools/wall_probe.py --split    # the time split alone
    PYTHONPATH=$PWD python tools/wall_probe.py --tiles    # wider tiles for few long rows
    PYTHONPATH=$PWD python tools/wall_probe.py --losses   # the fused losses against their eager formulas
"""
import os
import statistics
import sys
import time

import torch
import triton
import triton.language as tl

import rltriton_lite as rl
from rltriton_lite import bench
from rltriton_lite.bench import bare_gae, minimal_ppo_loss

dev = "cuda"


try:  # the peer, from tools/fetch_peers.sh
    sys.path.insert(0, os.environ.get("RL_TRITON_SRC", ".peers/rl-triton/src"))
    import rl_triton
except ImportError:
    rl_triton = None


def rounds(fns, n, reps=15):
    """{name: [µs per call in each round]}: ``reps`` rounds, each timing ``n`` back-to-back calls
    (one sync) of every function in turn, the order reversed every other round (a call's place in
    the round, first or after another's, cancels in the median of the ratios)."""
    for fn in fns.values():
        for _ in range(10):
            fn()
    torch.cuda.synchronize()
    out = {name: [] for name in fns}
    for i in range(reps):
        for name, fn in (list(fns.items()) if i % 2 == 0 else list(fns.items())[::-1]):
            t = time.perf_counter()
            for _ in range(n):
                fn()
            torch.cuda.synchronize()
            out[name].append((time.perf_counter() - t) / n * 1e6)
    return out


def report(label, times, anchor):
    for name, us in times.items():
        ratio = statistics.median(u / a for u, a in zip(us, times[anchor]))
        print(f"{label:8s} {name:20s} {statistics.median(us):8.1f} µs  {ratio:6.3f}x {anchor}")


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
    if rl_triton is not None:  # as bench._rl_triton calls it: float flags and bootstraps made before
        f, zero = d.float(), torch.zeros_like(lr)
        end = torch.zeros_like(r)
        end[:, -1] = boot
        fwd["rl_triton discounted_return"] = lambda: rl_triton.compute_discounted_returns(r, f, gamma=0.99,
                                                                                          bootstrap_values=end)
        fwd["rl_triton gae"] = lambda: rl_triton.compute_gae(r, v, f, gamma=0.99, lambda_=0.95, last_value=boot)
        fwd["rl_triton vtrace"] = lambda: rl_triton.compute_vtrace(lr, zero, v, r, f, gamma=0.99, rho_bar=1.0,
                                                                   c_bar=1.0, last_value=boot)
    rg, vg, nvg, lpg = (x.clone().requires_grad_() for x in (r, v, nv, lp))
    qg, nlpg = q.clone().requires_grad_(), nlp.clone().requires_grad_()
    w = torch.randn(B, T, device=dev, generator=g)
    one = torch.ones((), device=dev)
    grad = torch.autograd.grad
    bwd = {  # the harness's leaves (bench.BACKWARD)
        "minimal_fn": lambda: grad(minimal_ppo_loss(lpg, old, adv), (lpg,), one),
        "discounted_return": lambda: grad(rl.discounted_returns(rg, terminated=d), (rg,), w),
        "gae": lambda: grad(rl.gae(rg, vg, terminated=d, bootstrap_value=boot).advantages, (rg, vg), w),
        "td_lambda": lambda: grad(rl.td_lambda(rg, nvg, terminated=d), (rg, nvg), w),
        "vtrace": lambda: grad(rl.vtrace(lr, rg, vg, terminated=d, bootstrap_value=boot).vs, (rg, vg), w),
        "sac": lambda: grad(rl.sac_targets(rg, (qg, nvg), nlpg, terminated=d), (rg, qg, nvg, nlpg), w),
        "ppo": lambda: grad(rl.ppo_clip_loss(lpg, old, adv).loss, (lpg,), one),
        "crr": lambda: grad(rl.crr_loss(lpg, q, base, need_weights=False).loss, (lpg,), one),
        "linear_scan": lambda: grad(rl.linear_scan(a, rg), (rg,), w),
    }
    return fwd, bwd


MODE = sys.argv[1] if len(sys.argv) > 1 else None  # None: the calls and the split; --split, --tiles, --losses
SHAPES = os.environ.get("WALL_PROBE_SHAPES", "16x128,4096x128,1024x1024,64x16384")
for B, T in [] if MODE else [tuple(map(int, s.split("x"))) for s in SHAPES.split(",")]:
    fwd, bwd = cases(B, T)
    print(f"== {B}x{T}: median over 15 interleaved rounds; ratio: median of the rounds' ratios")
    times = rounds(fwd, 100)
    report("fwd", times, "bare_launch")
    for name in ("discounted_return", "gae", "vtrace"):
        if f"rl_triton {name}" in times:
            report("fwd", {name: times[name], f"rl_triton {name}": times[f"rl_triton {name}"]}, f"rl_triton {name}")
    report("fwd+bwd", rounds(bwd, 50), "minimal_fn")

# The time split by wall time: few long rows, the default plan (split when fewer than two programs
# per SM run) against one launch walking every chunk (Config(min_programs=0)); alone with --split.
from rltriton_lite.config import Config, using  # noqa: E402

NO_SPLIT = Config(min_programs=0)


def under(cfg, fn):
    """``fn`` run under ``cfg`` (every variant timed this way pays the same ``using``)."""
    def run():
        with using(cfg):
            return fn()
    return run

for B, T in [(256, 4096), (128, 8192), (64, 16384), (32, 32768), (16, 65536), (8, 131072)] if MODE in (None, "--split") \
        else []:
    g = torch.Generator(device=dev).manual_seed(0)
    r, v = (torch.randn(B, T, device=dev, generator=g) for _ in range(2))
    d = torch.rand(B, T, device=dev, generator=g) < 0.02
    fns = {"gae": lambda: rl.gae(r, v, terminated=d), "discounted_return": lambda: rl.discounted_returns(r, terminated=d)}
    fns.update({f"{k} unsplit": under(NO_SPLIT, f) for k, f in list(fns.items())})
    print(f"== split {B}x{T}")
    times = rounds(fns, 50, reps=9)
    for name in ("gae", "discounted_return"):
        report("fwd", {name: times[name], f"{name} unsplit": times[f"{name} unsplit"]}, name)

# Few long rows: one program of more warps and longer chunks per row (Config.tile), against the
# default plan, each under its own config (the same cost of using() for all); alone with --tiles.
TILES = {"default": Config(), "1x512 w2": Config(tile=(1, 512, 2, 2)), "1x1024 w4": Config(tile=(1, 1024, 4, 2)),
         "1x2048 w8": Config(tile=(1, 2048, 8, 2)), "1x4096 w8": Config(tile=(1, 4096, 8, 2))}
for B, T in [(256, 4096), (128, 8192), (64, 16384), (32, 32768), (16, 65536)] if MODE == "--tiles" else []:
    g = torch.Generator(device=dev).manual_seed(0)
    r, v, lr = (torch.randn(B, T, device=dev, generator=g) for _ in range(3))
    d = torch.rand(B, T, device=dev, generator=g) < 0.02
    base = {"gae": lambda: rl.gae(r, v, terminated=d), "vtrace": lambda: rl.vtrace(lr, r, v, terminated=d)}
    fns = {f"{k} {t}": under(cfg, f) for k, f in base.items() for t, cfg in TILES.items()}
    for name, fn in fns.items():  # the same values under every tile
        for k in base:
            if name.startswith(k):
                torch.testing.assert_close(fn()[0], base[k]()[0], rtol=1e-5, atol=1e-5)
    print(f"== tiles {B}x{T}")
    times = rounds(fns, 50, reps=9)
    for k in base:
        report("fwd", {n: t for n, t in times.items() if n.startswith(k)}, f"{k} default")

# The fused losses against the PyTorch they replace, alone with --losses: ours, the eager formula,
# torch.compile of it and (PPO) the minimal autograd.Function, each call checked against ours, then
# timed in the same interleaved rounds, and each call's GPU time (bench.kernel_ms) on the same card. A ratio's median and its lowest and highest over the rounds
# are of the within-round ratios, so the host's drift between rounds cancels: a ratio above 1 in
# every round is a wall-time saving the host's noise cannot explain.
LOSS_SHAPES = [(16, 128), (4096, 128), (64, 16384)]  # where the benchmark times the eager formulas


def loss_calls(name, B, T, pass_):
    """{impl: call} for one loss and pass, as bench.Sweep builds them (fwd+bwd: the gradients of the
    harness's leaves, against the same cotangents), each checked against ours."""
    op = bench._op(name)
    p = op.defaults
    x = op.make(B, T, torch.float32, dev, torch.Generator().manual_seed(0))
    peers = {"pytorch_eager": bench._pytorch(name, x, p), "torch_compile": bench._torch_compile(name, x, p)}
    if name == "ppo":
        peers["minimal_autograd_fn"] = bench._minimal_autograd(name, x, p)
    if pass_ == "fwd":
        calls = {"rltriton_lite": bench._ours(name, x, p, pass_)}
        calls.update({k: (lambda run=run: run(x)) for k, run in peers.items()})
    else:
        xg = dict(x, **{k: x[k].detach().clone().requires_grad_() for k in bench.BACKWARD[name][0]})
        leaves = [xg[k] for k in bench.BACKWARD[name][0]]
        fwd = bench._ours(name, xg, p, pass_)
        weights = bench._cotangents(fwd())
        calls = {"rltriton_lite": bench._grad_call(fwd, leaves, weights)}
        for k, run in peers.items():
            peer_fwd = lambda run=run: run(bench.tie_next_values(name, xg))  # noqa: E731
            calls[k] = bench._grad_call(peer_fwd, leaves, [w.to(o.dtype) for w, o in zip(weights, peer_fwd())])
    expected = calls["rltriton_lite"]()
    for k in ("pytorch_eager", "torch_compile"):  # (the anchor computes PPO's loss of other inputs)
        err = bench.max_rel_err(list(calls[k]()), list(expected))
        assert err < 1e-4, f"{name} {pass_} {k}: {err:.2e} from ours"
    return calls


if MODE == "--losses":
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}: "
          "µs per call (median of 15 interleaved rounds of back-to-back calls, one sync each, the order "
          "reversed every other round); "
          "ratio = impl ÷ rltriton_lite within a round: median, lowest, highest over the rounds")
    for name in ("ppo", "sac", "crr"):
        for B, T in LOSS_SHAPES:
            for pass_ in ("fwd", "fwd+bwd"):
                calls = loss_calls(name, B, T, pass_)
                times = rounds(calls, 100 if pass_ == "fwd" else 50)
                for impl, us in times.items():
                    r = [u / o for u, o in zip(us, times["rltriton_lite"])]
                    ms = bench.kernel_ms(calls[impl], bench.Timing())  # the GPU time alone, on the same card
                    print(f"loss {name} {B}x{T} {pass_} {impl} {statistics.median(us):.1f} us "
                          f"ratio {statistics.median(r):.3f} {min(r):.3f} {max(r):.3f} "
                          f"gpu {'n/a' if ms is None else f'{1e3 * ms:.1f}'} us")
