"""``python -m rltriton_lite``: run every algorithm on random rollouts with episode ends,
check it against the NumPy reference loop and print a table.

On a GPU the kernels run compiled and the table adds a PyTorch loop (CleanRL style) for the
speed-up; without one they run under the Triton interpreter (the process re-executes itself
with ``TRITON_INTERPRET=1``, which must be set before the kernels are defined) beside the
PyTorch path.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import torch


def _ensure_kernels_can_run() -> None:
    if torch.cuda.is_available() or "TRITON_INTERPRET" in os.environ:
        return
    try:
        import triton  # noqa: F401
    except ImportError:
        return  # no Triton on this machine: the torch path alone
    env = dict(os.environ, TRITON_INTERPRET="1")
    os.execve(sys.executable, [sys.executable, "-m", "rltriton_lite", *sys.argv[1:]], env)


def _time_ms(fn, device) -> float:
    if device == "cuda":
        import triton

        return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")
    fn()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def _rel_err(out, expected) -> float:
    out = out.detach().double().cpu().numpy()
    return float(np.max(np.abs(out - expected)) / max(1.0, np.max(np.abs(expected))))


def _torch_loop_gae(r, v, nv, term, trunc, gamma, lam):
    """The loop most training code runs (CleanRL's, with truncation): one step per iteration."""
    adv = torch.zeros_like(r)
    last = torch.zeros_like(r[:, 0])
    for t in reversed(range(r.shape[1])):
        not_term, not_done = 1.0 - term[:, t], 1.0 - torch.maximum(term[:, t], trunc[:, t])
        delta = r[:, t] + gamma * nv[:, t] * not_term - v[:, t]
        last = delta + gamma * lam * not_done * last
        adv[:, t] = last
    return adv


def main(argv=None) -> int:
    _ensure_kernels_can_run()
    import rltriton_lite as rl
    from rltriton_lite import reference as ref
    from rltriton_lite._triton import HAS_TRITON, INTERPRET

    device = "cuda" if torch.cuda.is_available() else "cpu"
    parser = argparse.ArgumentParser(prog="python -m rltriton_lite", description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=4096 if device == "cuda" else 8)
    parser.add_argument("--steps", type=int, default=1024 if device == "cuda" else 200)
    args = parser.parse_args(argv)
    B, T = args.batch, args.steps

    g = torch.Generator().manual_seed(0)
    r = torch.randn(B, T, generator=g)
    v = torch.randn(B, T, generator=g)
    term = torch.rand(B, T, generator=g) < 0.02
    trunc = (torch.rand(B, T, generator=g) < 0.01) & ~term
    nv = torch.cat([v[:, 1:], torch.randn(B, 1, generator=g)], 1)
    nv = torch.where(trunc, torch.randn(B, T, generator=g), nv)  # the real next state at a cut
    gamma, lam = 0.99, 0.95
    np_ = {k: x.double().numpy() for k, x in dict(r=r, v=v, nv=nv, term=term, trunc=trunc).items()}
    r, v, nv, term, trunc = (x.to(device) for x in (r, v, nv, term, trunc))

    algorithms = {
        "discounted_return": (
            lambda be: rl.discounted_returns(r, gamma=gamma, terminated=term, truncated=trunc, next_values=nv, backend=be),
            lambda: ref.discounted_returns(np_["r"], gamma=gamma, terminated=np_["term"], truncated=np_["trunc"], next_values=np_["nv"])),
        "gae": (
            lambda be: rl.gae(r, v, gamma=gamma, lambda_=lam, terminated=term, truncated=trunc, next_values=nv, backend=be).advantages,
            lambda: ref.gae(np_["r"], np_["v"], gamma=gamma, lambda_=lam, terminated=np_["term"], truncated=np_["trunc"], next_values=np_["nv"])[0]),
        "td_lambda": (
            lambda be: rl.td_lambda(r, nv, gamma=gamma, lambda_=lam, terminated=term, truncated=trunc, backend=be),
            lambda: ref.td_lambda(np_["r"], np_["nv"], gamma=gamma, lambda_=lam, terminated=np_["term"], truncated=np_["trunc"])),
    }
    backends = (["triton"] if HAS_TRITON and (device == "cuda" or INTERPRET) else []) + ["torch"]
    where = torch.cuda.get_device_name() if device == "cuda" else "CPU" + (" (Triton interpreter)" if INTERPRET else "")
    print(f"rltriton_lite {rl.__version__} on {where}: {B} rollouts x {T} steps, float32, "
          f"gamma={gamma}, lambda={lam}, ~2% terminations, ~1% truncations\n")
    header = f"{'algorithm':<18} {'backend':<7} {'max rel err':>11} {'time ms':>9}"
    loop_ms = None
    if device == "cuda":
        loop_ms = _time_ms(lambda: _torch_loop_gae(r, v, nv, term.float(), trunc.float(), gamma, lam), device)
        header += f" {'speed-up vs PyTorch loop':>25}"
    print(header)
    print("-" * len(header))
    worst = 0.0
    for name, (run, expected) in algorithms.items():
        e = expected()
        for be in backends:
            err = _rel_err(run(be), e)
            worst = max(worst, err)
            ms = _time_ms(lambda: run(be), device)
            line = f"{name:<18} {be:<7} {err:>11.2e} {ms:>9.3f}"
            if loop_ms is not None:
                line += f" {loop_ms / ms:>24.1f}x"
            print(line)
    if loop_ms is not None:
        print(f"\nPyTorch loop (CleanRL-style GAE, one Python iteration per step): {loop_ms:.3f} ms; "
              "the speed-up column compares each row with it.")
    ok = worst < 1e-5
    print(f"\n{'OK' if ok else 'FAILED'}: worst relative error {worst:.2e} against the float64 NumPy loops "
          "(tolerance 1e-5)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
