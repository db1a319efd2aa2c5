"""Where a backward's wall time goes, on a GPU: one loss call with its backward, against the forward
alone and against the minimal autograd.Function (bench.minimal_ppo_loss), as tools/wall_probe.py
--losses times them; then the host's time in one backward by Python function (cProfile) and by
ATen op (torch.profiler). Notebook 09, sections 3 and 4, reads its summary lines:

    PYTHONPATH=$PWD python tools/backward_profile.py > $OUT/backward_profile.txt
"""
import cProfile
import datetime
import io
import pstats
import statistics

import torch
from torch.profiler import ProfilerActivity, profile

import rltriton_lite as rl
from rltriton_lite.bench import minimal_ppo_loss, wall_ms

dev = "cuda"
B, T, N = 16, 128, 200


def per_call(fn, n=N, reps=9):
    """µs per call: the median of ``reps`` rounds of ``n`` back-to-back calls, one sync each (bench.wall_ms)."""
    for _ in range(20):
        fn()
    return statistics.median(1e3 * wall_ms(fn, lambda _: torch.cuda.synchronize(), n) for _ in range(reps))


g = torch.Generator(device=dev).manual_seed(0)
lp, old, adv, q, base = (torch.randn(B, T, device=dev, generator=g) for _ in range(5))
lpg = lp.clone().requires_grad_()
one = torch.ones((), device=dev)
grad = torch.autograd.grad
calls = {
    "ppo fwd": lambda: rl.ppo_clip_loss(lp, old, adv).loss,
    "ppo fwd, input requiring grad": lambda: rl.ppo_clip_loss(lpg, old, adv).loss,
    "ppo fwd+bwd": lambda: grad(rl.ppo_clip_loss(lpg, old, adv).loss, (lpg,), one),
    "ppo fwd+bwd, .backward()": lambda: rl.ppo_clip_loss(lpg, old, adv).loss.backward(),
    "minimal_fn fwd": lambda: minimal_ppo_loss(lp, old, adv),
    "minimal_fn fwd+bwd": lambda: grad(minimal_ppo_loss(lpg, old, adv), (lpg,), one),
    "eager ppo fwd+bwd": lambda: grad(-torch.minimum(torch.exp(lpg - old) * adv,
                                                    torch.clamp(torch.exp(lpg - old), 0.8, 1.2) * adv).mean(),
                                      (lpg,), one),
    "torch.mul fwd+bwd": lambda: grad((lpg * 2.0).sum(), (lpg,), one),
}
print(f"# backward_profile: {torch.cuda.get_device_name()}, torch {torch.__version__}, {B}x{T}, µs per call "
      f"(median of 9 rounds of {N} back-to-back calls); {datetime.date.today().isoformat()}, "
      "PYTHONPATH=$PWD python tools/backward_profile.py")
for name, fn in calls.items():
    print(f"call {name:32s} {per_call(fn):8.1f} µs")

# the host's time by Python function: cProfile over N calls of PPO's fwd+bwd (cumulative, top 25)
fn = calls["ppo fwd+bwd"]
torch.cuda.synchronize()
pr = cProfile.Profile()
pr.enable()
for _ in range(N):
    fn()
torch.cuda.synchronize()
pr.disable()
s = io.StringIO()
pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(25)
print(f"## cProfile, {N} calls of ppo fwd+bwd, by cumulative time")
print(s.getvalue())

# the same by ATen op and CUDA runtime call: torch.profiler, CPU and CUDA, self CPU time (top 25)
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
print("## torch.profiler, 50 calls of ppo fwd+bwd, by self CPU time")
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))
