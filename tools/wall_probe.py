"""Wall time per call on a GPU, host included, in one process: an empty Triton kernel through
``kernel[grid]``, ``torch.add``, ``torch.empty_like`` and our calls (min and median of 5 loops of
back-to-back calls, one sync each), then a cProfile of GAE and of CRR forward + backward, and a
torch.profiler table of the latter. A maintainer's probe for the launch path:

    PYTHONPATH=$PWD python tools/wall_probe.py > $OUT/wall_probe.txt
"""
import cProfile, io, pstats, time
import torch, triton, triton.language as tl
import rltriton_lite as rl

dev = "cuda"
def wall(fn, n=2000, reps=5):
    for _ in range(50): fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(n): fn()
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t) / n * 1e6)
    return min(out), sorted(out)[len(out)//2]

@triton.jit
def _noop(x_ptr, n, BLOCK: tl.constexpr):
    pass

for B, T in [(4096, 128), (64, 16384), (16384, 1024)]:
    g = torch.Generator(device=dev).manual_seed(0)
    r, v = (torch.randn(B, T, device=dev, generator=g) for _ in range(2))
    d = torch.rand(B, T, device=dev, generator=g) < 0.02
    print(f"== {B}x{T}")
    print("empty_like            min/med us %.1f %.1f" % wall(lambda: torch.empty_like(r)))
    print("torch.add             min/med us %.1f %.1f" % wall(lambda: torch.add(r, v)))
    print("noop kernel[grid]     min/med us %.1f %.1f" % wall(lambda: _noop[(B,)](r, B, BLOCK=16)))
    for name, fn in [("discounted", lambda: rl.discounted_returns(r, terminated=d)),
                     ("gae", lambda: rl.gae(r, v, terminated=d)),
                     ("linear_scan", lambda: rl.linear_scan(v, r))]:
        print(f"{name:20s}  min/med us %.1f %.1f" % wall(fn))
    lp = torch.randn(B, T, device=dev, requires_grad=True)
    old, adv, q, base = (torch.randn(B, T, device=dev) for _ in range(4))
    def crr_fb():
        rl.crr_loss(lp, q, base).loss.backward()
    def ppo_fb():
        rl.ppo_clip_loss(lp, old, adv).loss.backward()
    def crr_f():
        return rl.crr_loss(lp.detach(), q, base)
    print("crr fwd               min/med us %.1f %.1f" % wall(crr_f, 1000))
    print("crr fwd+bwd           min/med us %.1f %.1f" % wall(crr_fb, 500))
    print("ppo fwd+bwd           min/med us %.1f %.1f" % wall(ppo_fb, 500))
    if (B, T) in [(4096, 128), (16384, 1024)]:
        for name, fn in [("gae", lambda: rl.gae(r, v, terminated=d)), ("crr fwd+bwd", crr_fb)]:
            pr = cProfile.Profile(); pr.enable()
            for _ in range(500): fn()
            torch.cuda.synchronize(); pr.disable()
            s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(22)
            print(f"-- cProfile {name} {B}x{T} (500 calls)"); print(s.getvalue()[-5200:])
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(20): crr_fb()
            torch.cuda.synchronize()
        print(f"-- torch.profiler crr fwd+bwd {B}x{T} (20 calls)")
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=18))
