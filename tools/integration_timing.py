"""Wall time of the drop-ins against the code they replace, at the libraries' default sizes:
CleanRL ppo.py's GAE loop (num_steps 128 × num_envs 4, and Atari's 128 × 8) against
``integrations.cleanrl.gae``, on the CPU and on CUDA when there is one; SB3's
``RolloutBuffer.compute_returns_and_advantage`` (PPO's n_steps 2048 × 1 env, and 2048 × 8)
against ``integrations.sb3.RolloutBuffer``'s (NumPy, so on the CPU anywhere). Median of
rounds of back-to-back calls, one sync per round.

    PYTHONPATH=$PWD python tools/integration_timing.py
"""
import statistics
import time

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.buffers import RolloutBuffer as SB3Buffer

from rltriton_lite.integrations import cleanrl
from rltriton_lite.integrations.sb3 import RolloutBuffer

cleanrl_gae = cleanrl.loop  # CleanRL's own loop


def per_call_us(fn, device, n=50, rounds=7):
    for _ in range(5):
        fn()
    times = []
    for _ in range(rounds):
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(times)


def row(what, loop_us, ours_us):
    print(f"{what:<44} {loop_us:10.1f} {ours_us:10.1f} {loop_us / ours_us:8.1f}x")


print(f"torch {torch.__version__}, {torch.cuda.get_device_name() if torch.cuda.is_available() else 'CPU only'}")
print(f"{'µs per call':<44} {'loop':>10} {'ours':>10} {'speed-up':>9}")
for device in ["cpu"] + (["cuda"] if torch.cuda.is_available() else []):
    for T, N in ((128, 4), (128, 8)):
        g = torch.Generator().manual_seed(0)
        r, v = (torch.randn(T, N, generator=g).to(device) for _ in range(2))
        d = (torch.rand(T, N, generator=g) < 0.05).float().to(device)
        nv, nd = torch.randn(1, N, generator=g).to(device), torch.zeros(N, device=device)
        row(f"CleanRL GAE {T}x{N} ({device})", per_call_us(lambda: cleanrl_gae(r, v, d, nv, nd, 0.99, 0.95), device),
            per_call_us(lambda: cleanrl.gae(r, v, d, nv, nd, gamma=0.99, gae_lambda=0.95), device))
for T, N in ((2048, 1), (2048, 8)):
    obs, act = gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2)
    bufs = [cls(T, obs, act, gae_lambda=0.95, gamma=0.99, n_envs=N, device="cpu") for cls in (SB3Buffer, RolloutBuffer)]
    rng = np.random.default_rng(0)
    for b in bufs:
        b.rewards[:], b.values[:] = rng.normal(size=(2, T, N)).astype(np.float32)
        b.episode_starts[:] = (rng.random((T, N)) < 0.02).astype(np.float32)
    last, dones = torch.randn(N, 1), np.zeros(N, bool)
    row(f"SB3 compute_returns_and_advantage {T}x{N} (cpu)",
        *(per_call_us(lambda b=b: b.compute_returns_and_advantage(last, dones), "cpu", n=10) for b in bufs))
