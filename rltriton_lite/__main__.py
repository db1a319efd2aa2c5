"""``python -m rltriton_lite``: run every algorithm on random rollouts with episode ends,
check it against the NumPy reference loop and print a table.

On a GPU the kernels run compiled and the table adds the PyTorch code each one replaces (a
CleanRL-style loop over time, or the eager formula) for the speed-up; without one they run under the Triton interpreter (the process re-executes itself
with ``TRITON_INTERPRET=1``, which must be set before the kernels are defined) beside the
PyTorch path.
"""
from __future__ import annotations

import argparse
import os
import sys

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


def main(argv=None) -> int:
    _ensure_kernels_can_run()
    import rltriton_lite as rl
    from rltriton_lite import profile
    from rltriton_lite._triton import HAS_TRITON, INTERPRET

    device = "cuda" if torch.cuda.is_available() else "cpu"
    parser = argparse.ArgumentParser(prog="python -m rltriton_lite", description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=4096 if device == "cuda" else 8)
    parser.add_argument("--steps", type=int, default=1024 if device == "cuda" else 128)
    args = parser.parse_args(argv)
    B, T = args.batch, args.steps

    backends = (["triton"] if HAS_TRITON and (device == "cuda" or INTERPRET) else []) + ["torch"]
    where = torch.cuda.get_device_name() if device == "cuda" else "CPU" + (" (Triton interpreter)" if INTERPRET else "")
    print(f"rltriton_lite {rl.__version__} on {where}: {B} rollouts x {T} steps, float32, ~2% episode ends; "
          "each output checked against the float64 NumPy loop (rltriton_lite.reference)\n")
    header = f"{'algorithm':<18} {'backend':<7} {'max rel err':>11} {'time ms':>9}"
    if device == "cuda":
        header += f" {'PyTorch code ms':>16} {'speed-up':>9}"
    print(header)
    print("-" * len(header))
    worst = 0.0
    for name, op in profile.ops().items():
        params = {k: v[2] for k, v in op.params.items()}
        x = op.make(B, T, torch.float32, device, torch.Generator().manual_seed(0))
        expected = op.reference(profile.as_numpy(x), params)
        peer_ms = profile.time_ms(lambda: op.loop(x, params), device) if device == "cuda" else None
        for be in backends:
            err = profile.error(op, x, be, params, expected)
            worst = max(worst, err)
            ms = profile.time_ms(lambda: op.run(x, be, params), device, rep=3)
            line = f"{name:<18} {be:<7} {err:>11.2e} {ms:>9.3f}"
            if peer_ms is not None:
                line += f" {peer_ms:>16.3f} {peer_ms / ms:>8.1f}x"
            print(line)
    if device == "cuda":
        print("\nPyTorch code: what the kernel replaces, timed on the same inputs (a CleanRL-style Python "
              "loop over time for the returns, the eager formula for SAC's one-step target and the losses).")
    ok = worst < 1e-5
    print(f"\n{'OK' if ok else 'FAILED'}: worst relative error {worst:.2e} against the float64 NumPy loops "
          "(tolerance 1e-5)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
