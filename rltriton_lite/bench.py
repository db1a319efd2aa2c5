"""``python -m rltriton_lite.bench``: time the kernels against the memory floor and peers.

Method (DESIGN.md §6): the kernels are memory-bound, so for each op count the fewest bytes it
must move (every input read once, every output written once); the floor is those bytes over the
copy bandwidth measured in the same process. Each op is checked against the float64 NumPy loop
before it is timed. Reported per row: ``triton.testing.do_bench`` median (ms), floor (ms),
% of floor, the full-call wall time (host launch included, many back-to-back calls) and the
max relative error.

This first version sweeps the return estimators; ``--configs`` also times tile variants of
the scan kernel (rows per program, time block, warps), which is how the defaults are chosen.
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
import time

import numpy as np
import torch

SHAPES = [(16, 128), (4096, 128), (1024, 1024), (16384, 1024), (64, 16384), (8, 131072)]


def copy_bandwidth(do_bench, nbytes=2 << 30) -> float:
    """Device-to-device copy, bytes read + written per second."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    ms = do_bench(lambda: dst.copy_(src))
    del src, dst
    return 2 * nbytes / (ms * 1e-3)


def full_call_us(fn, n=2000) -> float:
    """Wall time per call of ``n`` back-to-back calls, host work included."""
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def torch_loop_gae(r, v, boot, term, gamma, lam):
    """CleanRL's loop: one Python iteration per time step."""
    adv = torch.empty_like(r)
    last = torch.zeros_like(r[:, 0])
    not_term = 1.0 - term.float()
    v_next = torch.cat([v[:, 1:], boot[:, None]], 1)
    for t in reversed(range(r.shape[1])):
        delta = r[:, t] + gamma * v_next[:, t] * not_term[:, t] - v[:, t]
        last = delta + gamma * lam * not_term[:, t] * last
        adv[:, t] = last
    return adv, adv + v


def _inputs(B, T, dtype, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    r = torch.randn(B, T, device="cuda", generator=g).to(dtype)
    v = torch.randn(B, T, device="cuda", generator=g).to(dtype)
    nv = torch.randn(B, T, device="cuda", generator=g).to(dtype)
    boot = torch.randn(B, device="cuda", generator=g).to(dtype)
    term = torch.rand(B, T, device="cuda", generator=g) < 0.01
    return r, v, nv, boot, term


def _rel_err(out, expected):
    out = out.detach().double().cpu().numpy()
    return float(np.max(np.abs(out - expected)) / max(1.0, np.max(np.abs(expected))))


def bench_returns(do_bench, bw, shapes, dtypes, rows, configs=None):
    import rltriton_lite as rl
    from rltriton_lite import reference as ref
    from rltriton_lite import scan

    gamma, lam = 0.99, 0.95
    default_config = scan._config
    for (B, T) in shapes:
        for dtype in dtypes:
            r, v, nv, boot, term = _inputs(B, T, dtype)
            es = torch.finfo(dtype).bits // 8
            n = B * T
            np_r, np_v, np_nv, np_b, np_t = (x.double().cpu().numpy() for x in (r, v, nv, boot, term))
            check = n <= 2**25 and T <= 131072
            ops = {
                # name: (fn, bytes, reference)
                "gae": (lambda: rl.gae(r, v, gamma=gamma, lambda_=lam, terminated=term, bootstrap_value=boot),
                        n * (4 * es + 1),  # r, v, terminated in; advantages, returns out
                        lambda: ref.gae(np_r, np_v, gamma=gamma, lambda_=lam, terminated=np_t, bootstrap_value=np_b)[0]),
                "discounted_return": (lambda: rl.discounted_returns(r, gamma=gamma, terminated=term, bootstrap_value=boot),
                                      n * (2 * es + 1),
                                      lambda: ref.discounted_returns(np_r, gamma=gamma, terminated=np_t, bootstrap_value=np_b)),
                "td_lambda": (lambda: rl.td_lambda(r, nv, gamma=gamma, lambda_=lam, terminated=term),
                              n * (3 * es + 1),
                              lambda: ref.td_lambda(np_r, np_nv, gamma=gamma, lambda_=lam, terminated=np_t)),
            }
            for name, (fn, nbytes, expected) in ops.items():
                out = fn()
                out = out[0] if isinstance(out, tuple) else out
                err = _rel_err(out, expected()) if check else float("nan")
                variants = [("default", None)] + ([(f"rows{c[0]}-block{c[1]}-w{c[2]}", c) for c in configs]
                                                  if configs and name == "gae" and dtype == torch.float32 else [])
                for label, cfg in variants:
                    scan._config = default_config if cfg is None else (lambda *a, c=cfg: c)
                    try:
                        ms = do_bench(fn)
                    finally:
                        scan._config = default_config
                    floor = nbytes / bw * 1e3
                    row = dict(algorithm=name, impl="rltriton_lite" if cfg is None else f"rltriton_lite[{label}]",
                               B=B, T=T, dtype=str(dtype).replace("torch.", ""), **{"pass": "fwd"},
                               ms=ms, floor_ms=floor, pct_floor=100 * floor / ms,
                               full_call_us=full_call_us(fn, 200 if n > 2**22 else 2000) if cfg is None else None,
                               max_rel_err=err)
                    rows.append(row)
                    _print(row)
            # forward + backward for GAE
            rg, vg = r.clone().requires_grad_(), v.clone().requires_grad_()
            w1, w2 = torch.randn_like(r), torch.randn_like(r)

            def fwd_bwd():
                a, ret = rl.gae(rg, vg, gamma=gamma, lambda_=lam, terminated=term, bootstrap_value=boot)
                torch.autograd.backward((a, ret), (w1, w2), inputs=[rg, vg])

            ms = do_bench(fwd_bwd, grad_to_none=[rg, vg])
            nbytes = n * (4 * es + 1) + n * (4 * es + 4 * es + 1)  # fwd; bwd reads dA, dR, term, writes dr, dv
            floor = nbytes / bw * 1e3
            row = dict(algorithm="gae", impl="rltriton_lite", B=B, T=T, dtype=str(dtype).replace("torch.", ""),
                       **{"pass": "fwd+bwd"}, ms=ms, floor_ms=floor, pct_floor=100 * floor / ms,
                       full_call_us=None, max_rel_err=float("nan"))
            rows.append(row)
            _print(row)
            if dtype == torch.float32 and T <= 16384:
                loop = lambda: torch_loop_gae(r, v, boot, term, gamma, lam)  # noqa: E731
                err = _rel_err(loop()[0], ops["gae"][2]()) if check else float("nan")
                ms = do_bench(loop)
                floor = ops["gae"][1] / bw * 1e3
                row = dict(algorithm="gae", impl="torch_loop", B=B, T=T, dtype="float32", **{"pass": "fwd"},
                           ms=ms, floor_ms=floor, pct_floor=100 * floor / ms, full_call_us=None, max_rel_err=err)
                rows.append(row)
                _print(row)


def _print(row):
    full = f"{row['full_call_us']:9.1f}" if row.get("full_call_us") else f"{'':9}"
    print(f"{row['algorithm']:<18} {row['impl']:<34} {row['B']:>6}x{row['T']:<7} {row['dtype']:<8} {row['pass']:<7} "
          f"{row['ms']:9.4f} {row['floor_ms']:9.4f} {row['pct_floor']:6.1f}% {full} {row['max_rel_err']:9.1e}",
          flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m rltriton_lite.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default=None, help="e.g. 16384x1024,64x16384 (default: the sweep)")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--configs", default="", help="tile variants rows:block:warps;... timed for GAE fp32")
    parser.add_argument("--out", default=None, help="JSON file to write")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("bench: needs a CUDA GPU (timings of the interpreter would mean nothing)", file=sys.stderr)
        return 2
    import triton

    import rltriton_lite

    def do_bench(fn, grad_to_none=None):
        return triton.testing.do_bench(fn, warmup=25, rep=200, grad_to_none=grad_to_none, return_mode="median")

    shapes = SHAPES if not args.shapes else [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    dtypes = [getattr(torch, d) for d in args.dtypes.split(",")]
    configs = [tuple(int(x) for x in c.split(":")) for c in args.configs.split(";") if c]
    bw = copy_bandwidth(do_bench)
    gpu = torch.cuda.get_device_name()
    print(f"{gpu}; copy bandwidth {bw / 1e12:.2f} TB/s (read + write); torch {torch.__version__}, triton {triton.__version__}")
    print(f"{'algorithm':<18} {'impl':<34} {'shape':<14} {'dtype':<8} {'pass':<7} {'ms':>9} {'floor ms':>9} "
          f"{'floor%':>7} {'call us':>9} {'rel err':>9}")
    rows = []
    bench_returns(do_bench, bw, shapes, dtypes, rows, configs)
    result = dict(gpu=gpu, copy_bandwidth_Bps=bw, date=datetime.date.today().isoformat(),
                  versions=dict(torch=torch.__version__, triton=triton.__version__, rltriton_lite=rltriton_lite.__version__,
                                python=platform.python_version()),
                  command="python -m rltriton_lite.bench " + " ".join(argv if argv is not None else sys.argv[1:]),
                  rows=rows)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
