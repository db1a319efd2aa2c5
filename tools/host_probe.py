"""The host's share of a call, on any machine: every kernel launch stubbed out.

Runs each algorithm's public function on CPU tensors under the Triton interpreter with the scan
and reduction launchers replaced by stubs that only count launches, so the time per call is the
Python around the kernels (validation, views, output allocation, the plan, autograd's
bookkeeping) without the interpreter's execution. A lower bound of the host part of a CUDA call,
which adds the launcher (key and C launch, a few µs each) and the CUDA allocator.

    python tools/host_probe.py                  # 4096x128 (HOST_PROBE_SHAPE=16x128 for another)
    python tools/host_probe.py --split          # 64x16384 with the time split forced
    python tools/host_probe.py --prof gae       # and a cProfile of GAE
    python tools/host_probe.py --backward       # forward + backward
    python tools/host_probe.py --mask           # and GAE with a mask, looked ahead as on CUDA
"""
from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"

import argparse  # noqa: E402
import cProfile  # noqa: E402
import pstats  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

import rltriton_lite as rl  # noqa: E402
from rltriton_lite import _triton, profile  # noqa: E402
from rltriton_lite.config import Config, using  # noqa: E402

launches = []


def stub(launch, *args):
    """Stands in for ``_triton.Launch.__call__``: records the launch, runs nothing."""
    launches.append(launch.kernel)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", action="store_true", help="64x16384 with the time split forced")
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--prof", default=None, help="an algorithm to cProfile")
    ap.add_argument("--backward", action="store_true", help="forward + backward (autograd.grad)")
    ap.add_argument("--mask", action="store_true", help="also GAE with a bool mask (Config(look_ahead=True))")
    a = ap.parse_args()
    _triton.Launch.__call__ = stub
    # (look_ahead: a masked call looks ahead in its kernel, as on CUDA; the interpreter derives by default)
    with using(Config(min_programs=1 << 20, split_min_chunks=2, look_ahead=True) if a.split else Config(look_ahead=True)):
        run(a)


def run(a):
    B, T = (64, 16384) if a.split else tuple(int(x) for x in os.environ.get("HOST_PROBE_SHAPE", "4096x128").split("x"))
    print(f"host time per call, kernels stubbed, {B}x{T} float32, torch {torch.__version__}")
    for name in profile.ops() if not a.mask else [*profile.ops(), "gae, masked"]:
        op = profile.op(name.split(",")[0])
        params = op.defaults
        x = op.make(B, T, torch.float32, "cpu", torch.Generator().manual_seed(0))
        if name == "gae, masked":  # a bool mask: a float one is checked (and copied) on every CPU call
            x["mask"] = torch.rand(B, T, generator=torch.Generator().manual_seed(1)) < 0.9
        leaf = "log_probs" if "log_probs" in x and name in ("ppo", "crr") else "rewards"
        if a.backward:
            x = dict(x, **{leaf: x[leaf].clone().requires_grad_()})

        def fn():
            if "mask" in x:
                return rl.gae(x["rewards"], x["values"], terminated=x["terminated"], mask=x["mask"], backend="triton")
            out = op.run(x, "triton", params)
            if a.backward:
                out = out[0] if isinstance(out, tuple) else out
                torch.autograd.grad(out, x[leaf], torch.ones_like(out))
            return out

        for _ in range(200):
            fn()
        t0 = time.perf_counter()
        for _ in range(a.calls):
            fn()
        us = (time.perf_counter() - t0) / a.calls * 1e6
        launches.clear()
        fn()
        print(f"{name:18s} {us:6.1f} us/call  {len(launches)} launches", flush=True)
        if a.prof == name:
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(a.calls):
                fn()
            pr.disable()
            pstats.Stats(pr).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
