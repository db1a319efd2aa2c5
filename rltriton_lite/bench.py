"""``python -m rltriton_lite.bench``: time the kernels against the memory floor and peers.

Method (DESIGN.md §6): the kernels are memory-bound, so for each op count the fewest bytes it
must move (every input read once, every output written once); the floor is those bytes over the
copy bandwidth measured in the same process. Each op is checked against the float64 NumPy loop
before it is timed. Reported per row: ``triton.testing.do_bench`` median (ms), floor (ms),
% of floor, the full-call wall time (host launch included, many back-to-back calls) and the
max relative error.

Every algorithm of ``rltriton_lite.profile.ops()`` runs against the PyTorch code it replaces
(a CleanRL-style loop over time, or the eager formula of a loss), measured in the same process;
``--configs`` also times tile variants of the scan kernel (rows per program, time block, warps),
which is how the defaults are chosen.
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
import time

import torch

SHAPES = [(16, 128), (4096, 128), (1024, 1024), (16384, 1024), (64, 16384), (8, 131072)]


def copy_bandwidth(do_bench, nbytes=2 << 30) -> float:
    """Device-to-device copy, bytes read + written per second."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    ms = do_bench(lambda: dst.copy_(src))
    return 2 * nbytes / (ms * 1e-3)


def full_call_us(fn, n=2000) -> float:
    """Wall time per call of ``n`` back-to-back calls, host work included."""
    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    for _ in range(10):
        fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    sync()
    return (time.perf_counter() - t0) / n * 1e6


def kernel_ms(fn):
    """GPU time alone: the median of CUDA-graph replays (no host launch cost); None if the call
    cannot be captured."""
    try:
        import triton

        return triton.testing.do_bench_cudagraph(fn, rep=100, return_mode="median")
    except Exception:  # noqa: BLE001 - capture is best effort: the row keeps its other figures
        return None


def _row(algorithm, impl, B, T, dtype, pass_, ms, nbytes, bw, full_call=None, err=float("nan")):
    floor = nbytes / bw * 1e3
    return dict(algorithm=algorithm, impl=impl, B=B, T=T, dtype=str(dtype).replace("torch.", ""), **{"pass": pass_},
                ms=ms, floor_ms=floor, pct_floor=100 * floor / ms, full_call_us=full_call, max_rel_err=err)


def bench_ops(do_bench, bw, shapes, dtypes, rows, algorithms, configs=None, device="cuda"):
    """Every algorithm of ``profile.ops()``: the kernel (checked against the reference first),
    and the PyTorch code it replaces (a loop over time, or the eager formula) as a peer."""
    from rltriton_lite import profile, scan

    default_config = scan._config
    for (B, T) in shapes:
        for dtype in dtypes:
            es = torch.finfo(dtype).bits // 8
            for name in algorithms:
                op = profile.op(name)
                params = {k: v[2] for k, v in op.params.items()}
                x = op.make(B, T, dtype, device, torch.Generator().manual_seed(0))
                fn = lambda: op.run(x, "triton", params)  # noqa: E731
                nbytes = B * T * op.bytes_per_step(es)
                out = fn()
                out = out[0] if isinstance(out, tuple) else out
                err = float("nan")
                if B * T <= 2**24 and T <= 131072:
                    err = profile.rel_err(out, op.reference(profile.as_numpy(x), params))
                rows.append(_row(name, "rltriton_lite", B, T, dtype, "fwd", do_bench(fn), nbytes, bw,
                                 full_call_us(fn, 200 if B * T > 2**22 else 2000), err))
                rows[-1]["kernel_ms"] = kernel_ms(fn)
                _print(rows[-1])
                for cfg in (configs or []) if name == "gae" and dtype == torch.float32 else []:
                    scan._config = lambda *a, c=cfg: c
                    try:
                        rows.append(_row(name, f"rltriton_lite[rows{cfg[0]}-block{cfg[1]}-w{cfg[2]}]", B, T, dtype,
                                         "fwd", do_bench(fn), nbytes, bw))
                    finally:
                        scan._config = default_config
                    _print(rows[-1])
                if T <= 16384 and dtype == torch.float32:
                    peer = lambda: op.loop(x, params)  # noqa: E731
                    p_out = peer()
                    p_out = p_out[0] if isinstance(p_out, tuple) else p_out
                    p_err = float("nan") if p_out.dim() == 0 and out.dim() != 0 else profile.rel_err(p_out, out.double().cpu().numpy())
                    rows.append(_row(name, "pytorch_" + ("loop" if name in SCANS else "eager"), B, T, dtype, "fwd",
                                     do_bench(peer), nbytes, bw, err=p_err))
                    _print(rows[-1])
            # forward + backward of GAE
            import rltriton_lite as rl

            g = torch.Generator(device=device).manual_seed(1)
            r = torch.randn(B, T, device=device, generator=g).to(dtype).requires_grad_()
            v = torch.randn(B, T, device=device, generator=g).to(dtype).requires_grad_()
            term = torch.rand(B, T, device=device, generator=g) < 0.01
            boot = torch.randn(B, device=device, generator=g).to(dtype)
            w1, w2 = torch.randn_like(r), torch.randn_like(r)

            def fwd_bwd():
                a, ret = rl.gae(r, v, terminated=term, bootstrap_value=boot)
                torch.autograd.backward((a, ret), (w1, w2), inputs=[r, v])

            nbytes = B * T * (4 * es + 1) + B * T * (4 * es + 1)  # fwd; bwd reads dA, dR, flags, writes dr, dv
            rows.append(_row("gae", "rltriton_lite", B, T, dtype, "fwd+bwd", do_bench(fwd_bwd, grad_to_none=[r, v]),
                             nbytes, bw))
            _print(rows[-1])


SCANS = ("discounted_return", "gae", "td_lambda", "vtrace")  # their peer is a loop over time


def _print(row):
    full = f"{row['full_call_us']:9.1f}" if row.get("full_call_us") else f"{'':9}"
    if row.get("kernel_ms"):
        full += f" graph {row['kernel_ms']:8.4f} ms {100 * row['floor_ms'] / row['kernel_ms']:5.1f}%"
    print(f"{row['algorithm']:<18} {row['impl']:<34} {row['B']:>6}x{row['T']:<7} {row['dtype']:<8} {row['pass']:<7} "
          f"{row['ms']:9.4f} {row['floor_ms']:9.4f} {row['pct_floor']:6.1f}% {full} {row['max_rel_err']:9.1e}",
          flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m rltriton_lite.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default=None, help="e.g. 16384x1024,64x16384 (default: the sweep)")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--configs", default="", help="tile variants rows:block:warps;... timed for GAE fp32")
    parser.add_argument("--algorithms", default="discounted_return,gae,td_lambda,vtrace,sac,ppo,crr")
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
    result = dict(gpu=gpu, copy_bandwidth_Bps=bw, date=datetime.date.today().isoformat(),
                  versions=dict(torch=torch.__version__, triton=triton.__version__, rltriton_lite=rltriton_lite.__version__,
                                python=platform.python_version()),
                  command="python -m rltriton_lite.bench " + " ".join(argv if argv is not None else sys.argv[1:]),
                  rows=rows)
    for shape in shapes:  # the JSON is rewritten after each shape: an interrupted run keeps its rows
        bench_ops(do_bench, bw, [shape], dtypes, rows, args.algorithms.split(","), configs)
        if args.out:
            with open(args.out, "w") as f:
                json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
