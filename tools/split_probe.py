"""Per-kernel GPU time of the time-split scan (few long rows), by torch.profiler, with the
compiled kernels' registers and spills; variants of tile, vector width and split.

    python tools/split_probe.py > $OUT/split.log
"""
from __future__ import annotations

import sys

import torch
import triton

from rltriton_lite import _triton, profile, scan

_triton.FAST_LAUNCH = False  # every launch through the recorder below

real = scan._scan_kernel
seen = []


class Recorder:
    """Stands in for scan._scan_kernel: records each launch's compiled kernel and grid."""

    def __getitem__(self, grid):
        def launch(*args, **kw):
            ck = real[grid](*args, **kw)
            named = dict(zip(real.arg_names, args), **kw)
            seen.append((grid, ck, named["ROWS"], named["BLOCK"], named["V"], named["STAGES"], named["SUMMARY"] is not None))
            return ck
        return launch


def kernels_of(fn):
    fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
    out = []
    for e in prof.key_averages():
        if e.device_type == torch.autograd.DeviceType.CUDA or getattr(e, "device_time_total", 0):
            out.append(f"{e.key[:60]:60s} n={e.count} avg_us={e.device_time_total / max(e.count, 1):.1f}")
    return out


def main():
    shapes = [(8, 131072), (64, 16384), (1, 1048576)]
    for (B, T) in shapes:
        for dt in ("float32", "bfloat16"):
            dtype = getattr(torch, dt)
            for name in ("gae", "vtrace", "discounted_return"):
                op = profile.op(name)
                params = {k: v[2] for k, v in op.params.items()}
                x = op.make(B, T, dtype, "cuda", torch.Generator().manual_seed(0))
                fn = lambda: op.run(x, "triton", params)  # noqa: E731
                variants = [("default", None), ("V8", lambda: setattr(scan, "VECTOR", 8)),
                            ("1x256x1x1", lambda: setattr(scan, "_config", scan.fixed_config(1, 256, 1, 1))),
                            ("nosplit", lambda: setattr(scan, "MIN_PROGRAMS", 0))]
                if (B, T) != (8, 131072) or name == "discounted_return":
                    variants = variants[:1]
                for vname, setup in variants:
                    saved = (scan.VECTOR, scan._config, scan.MIN_PROGRAMS)
                    if setup:
                        setup()
                    try:
                        scan._launch_scan.kernel = Recorder()
                        seen.clear()
                        fn()
                        torch.cuda.synchronize()
                        info = [f"grid={g} rows={r} block={b} V={v} stages={s} summary={sm} regs={ck.n_regs} "
                                f"spills={ck.n_spills} warps={ck.metadata.num_warps}"
                                for g, ck, r, b, v, s, sm in seen]
                        scan._launch_scan.kernel = real
                        ms = triton.testing.do_bench_cudagraph(fn, rep=50, return_mode="median")
                        print(f"== {name} {B}x{T} {dt} {vname}: {ms * 1e3:.1f} us", flush=True)
                        for line in info:
                            print("   ", line)
                        if vname == "default":
                            for line in kernels_of(fn):
                                print("   ", line)
                    except Exception as e:  # noqa: BLE001
                        print(f"== {name} {B}x{T} {dt} {vname}: failed {e!r}"[:300], flush=True)
                    finally:
                        scan._launch_scan.kernel = real
                        scan.VECTOR, scan._config, scan.MIN_PROGRAMS = saved


if __name__ == "__main__":
    sys.exit(main())
