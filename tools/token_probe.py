"""Wide chunks or the time split for few long rows, with and without a mask: GAE's wall time per
call (back-to-back calls, one sync, configs interleaved in rounds) and GPU time (CUDA-graph
replay) at LLM-token shapes, beside the γ = λ = 1 cumsum shortcut (bench.token_cumsum).

    PYTHONPATH=$PWD python tools/token_probe.py [--configs default,...] [--old DIR] [BxT ...] > $OUT/token_probe.txt

--old DIR (repeatable) adds the default config of another version of the package, kept in DIR under
another name, rltriton_<label> (its imports are relative), e.g. an earlier commit's:
    git archive <commit> rltriton_lite | tar -x -C DIR && mv DIR/rltriton_lite DIR/rltriton_old
"""
import argparse
import importlib
import statistics
import sys
from pathlib import Path

import torch

import rltriton_lite as rl
from rltriton_lite.bench import QUICK, kernel_ms, token_cumsum, token_inputs, wall_ms
from rltriton_lite.config import Config, using

SHAPES = [(256, 1024), (256, 4096), (128, 8192), (64, 16384), (64, 32768), (32, 32768), (16, 65536), (8, 131072),
          (4, 1048576)]
CONFIGS = {"default": Config(), "split": Config(split_min_chunks=2), "wide": Config(split_min_chunks=1 << 30),
           "derived": Config(look_ahead=False)}  # (derived: a mask's look-ahead by masks.py's launch first)


def wall_us(fn, n):
    """µs per call of ``n`` back-to-back calls, one sync (bench.wall_ms, from an idle GPU)."""
    torch.cuda.synchronize()
    return 1e3 * wall_ms(fn, lambda _: torch.cuda.synchronize(), n)


def under(cfg, fn):
    def run():
        with using(cfg):
            return fn()
    return run


parser = argparse.ArgumentParser()
parser.add_argument("shapes", nargs="*")
parser.add_argument("--configs", default=",".join(CONFIGS))
parser.add_argument("--old", action="append", default=[])
args = parser.parse_args()
configs = {k: CONFIGS[k] for k in args.configs.split(",")}
others = {}
for folder in args.old:
    sys.path.insert(0, folder)
    name = next(p.name for p in Path(folder).iterdir() if p.name.startswith("rltriton_"))
    others[name.removeprefix("rltriton_")] = importlib.import_module(name)
print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; gae float32 γ=0.99 λ=0.95, µs per call "
      "(wall: median of 9 interleaved rounds; GPU: CUDA-graph replay)")
for B, T in [tuple(map(int, a.split("x"))) for a in args.shapes] or SHAPES:
    r, v, m = token_inputs(B, T, "cuda")
    cands = {"cumsum": lambda: token_cumsum(r, v, m)}
    for name, cfg in configs.items():
        cands[f"{name}"] = under(cfg, lambda: rl.gae(r, v, gamma=0.99, lambda_=0.95))
        cands[f"{name}+mask"] = under(cfg, lambda: rl.gae(r, v, gamma=0.99, lambda_=0.95, mask=m))
    for label, pkg in others.items():
        cands[label] = lambda pkg=pkg: pkg.gae(r, v, gamma=0.99, lambda_=0.95)
        cands[f"{label}+mask"] = lambda pkg=pkg: pkg.gae(r, v, gamma=0.99, lambda_=0.95, mask=m)
    want = rl.gae(r, v, gamma=0.99, lambda_=0.95, mask=m).advantages
    for name, fn in cands.items():
        fn()
        if name.endswith("mask"):
            torch.testing.assert_close(fn().advantages, want, rtol=1e-5, atol=1e-5, msg=name)  # every plan agrees
    n = {k: max(5, min(500, int(2e4 / max(wall_us(f, 3), 1.0)))) for k, f in cands.items()}
    rounds = {k: [] for k in cands}
    for _ in range(9):
        for k, f in cands.items():
            rounds[k].append(wall_us(f, n[k]))
    print(f"== {B}x{T}")
    for k, f in cands.items():
        g = kernel_ms(f, QUICK)
        print(f"   {k:<14} wall {statistics.median(rounds[k]):8.1f}   GPU {'—' if g is None else f'{1e3 * g:8.1f}'}")
