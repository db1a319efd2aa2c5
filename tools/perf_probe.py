"""GPU time of every kernel at the benchmark's shapes, tile variants, and a host-side profile.

A development probe for the device (the user-facing harness is ``python -m rltriton_lite.bench``):
one process measures the copy bandwidth, then for each algorithm and shape the GPU time
(median of CUDA-graph replays, so the host's launch cost is excluded), its floor, and the
full-call wall time; ``--tiles`` times tile variants of the scan kernel; ``--profile`` writes a
cProfile of back-to-back full calls (where host time goes).

    python tools/perf_probe.py --out $OUT/probe.json --tiles --profile $OUT/host_profile.txt
    python tools/perf_probe.py --out $OUT/kernels.json --kernels --bwd --shapes 16384x1024,8x131072
"""
from __future__ import annotations

import argparse
import cProfile
import dataclasses
import io
import json
import pstats
import sys
import time

import torch
import triton

from rltriton_lite import profile
from rltriton_lite.config import Config, using

SHAPES = [(16384, 1024), (4096, 128), (1024, 1024), (64, 16384), (8, 131072), (1, 1048576), (16, 128)]
TILES = [(4, 256, 4), (8, 128, 4), (2, 512, 4), (8, 256, 8), (4, 256, 1), (4, 256, 2), (2, 256, 1), (8, 128, 1),
         (8, 128, 2), (4, 128, 1), (16, 64, 1), (2, 512, 2), (1, 1024, 2), (8, 256, 2), (16, 128, 2), (16, 128, 4)]


def gpu_ms(fn):
    try:
        return triton.testing.do_bench_cudagraph(fn, rep=100, return_mode="median")
    except Exception as e:  # noqa: BLE001
        print("graph capture failed:", repr(e)[:200])
        return None


def call_us(fn, n):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def fwd_bwd(op, x, params):
    """forward + backward through every float input that takes a gradient."""
    leaves = {k: v.detach().requires_grad_() for k, v in x.items()
              if v.is_floating_point() and k in ("rewards", "values", "next_values", "log_probs", "q1", "q2")}
    xx = dict(x, **leaves)

    def f():
        out = op.run(xx, "triton", params)
        outs = [o for o in (out if isinstance(out, tuple) else (out,)) if o.requires_grad]
        return torch.autograd.grad(outs, list(leaves.values()), [torch.ones_like(o) for o in outs], allow_unused=True)
    return f, list(leaves.values())


def kernel_times(fn, n=20):
    """{kernel name: GPU µs per call} of ``fn``, from torch.profiler over ``n`` calls."""
    from torch.profiler import ProfilerActivity, profile as torch_profile

    fn()
    torch.cuda.synchronize()
    with torch_profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
    times = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            times[e.name] = times.get(e.name, 0.0) + e.device_time / n
    return times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--shapes", default=None)
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--algorithms", default=",".join(profile.ops()))
    ap.add_argument("--tiles", action="store_true")
    ap.add_argument("--tile-list", default=None,
                    help="tiles to time instead of TILES: ROWSxBLOCKxWARPS[xSTAGES],... (implies --tiles)")
    ap.add_argument("--bwd", action="store_true")
    ap.add_argument("--profile", default=None)
    ap.add_argument("--kernels", action="store_true",
                    help="each call's kernels and their GPU time (torch.profiler, 20 calls; rows tile='k-<kernel>')")
    ap.add_argument("--layouts", action="store_true", help="bitwise check: time-major vs batch-major")
    ap.add_argument("--vector", type=int, default=None, help="Config.vector for the whole run (4 or 8)")
    ap.add_argument("--time-major", action="store_true", help="GAE: also time time-major buffers (tile='tm-...')")
    ap.add_argument("--compose", type=int, default=None,
                    help="Config.compose for the whole run: the most segments split in two launches (0: three)")
    ap.add_argument("--min-programs", type=int, default=None,
                    help="Config.min_programs for the whole run (split time when fewer programs; segments for 4x that)")
    ap.add_argument("--map-programs", type=int, default=None,
                    help="Config.map_min_programs for the whole run (0: the elementwise/partial-sum tile alone)")
    ap.add_argument("--partials", default=None,
                    help="partial-sum variants to time for PPO and CRR (forward): ELEMENTSxPROGRAMSxSTAGES,... "
                         "(Config.reduce_tile_elements, partial_programs, partial_stages; rows tile='p-...')")
    a = ap.parse_args()
    tiles = TILES
    given = dict(vector=a.vector, compose=a.compose, min_programs=a.min_programs, map_min_programs=a.map_programs)
    base = Config(**{k: v for k, v in given.items() if v is not None})
    with using(base):
        run(a, tiles, base)


def run(a, tiles, base):
    if a.tile_list:
        a.tiles = True
        tiles = [tuple(int(v) for v in t.split("x")) for t in a.tile_list.split(",")]
    shapes = SHAPES if not a.shapes else [tuple(int(v) for v in s.split("x")) for s in a.shapes.split(",")]
    bw = profile.copy_bandwidth("cuda")
    print(f"{torch.cuda.get_device_name()} copy {bw / 1e12:.2f} TB/s torch {torch.__version__} triton {triton.__version__} "
          f"{base}")
    rows = []

    def emit(**r):
        r["pct_floor"] = 100 * r["floor_ms"] / r["gpu_ms"] if r.get("gpu_ms") and r.get("floor_ms") else None
        rows.append(r)
        print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()), flush=True)
        with open(a.out, "w") as f:
            json.dump(dict(bw=bw, rows=rows), f, indent=1)

    if a.layouts:
        import rltriton_lite as rl
        for (B, T) in [(4096, 1024), (16, 128), (8, 131072), (1, 1048576), (64, 16384)]:
            g = torch.Generator(device="cuda").manual_seed(0)
            r, v, nv = (torch.randn(B, T, device="cuda", generator=g) for _ in range(3))
            d = torch.rand(B, T, device="cuda", generator=g) < 0.01
            x1 = [t.requires_grad_() for t in (r.clone(), v.clone())]
            x0 = [t.t().contiguous().requires_grad_() for t in (r, v)]
            a1, r1 = rl.gae(x1[0], x1[1], terminated=d, next_values=nv)
            a0, r0 = rl.gae(x0[0], x0[1], terminated=d.t().contiguous(), next_values=nv.t().contiguous(), time_dim=0)
            w = torch.randn_like(r)
            g1 = torch.autograd.grad((a1, r1), x1, (w, w))
            g0 = torch.autograd.grad((a0, r0), x0, (w.t(), w.t()))
            same = [torch.equal(p, q.t()) for p, q in zip((a1, r1) + g1, (a0, r0) + g0)]
            diff = max(float((p - q.t()).detach().abs().max()) for p, q in zip((a1, r1) + g1, (a0, r0) + g0))
            print(f"layouts gae {B}x{T}: bitwise (adv, ret, dr, dv) {same}, max diff {diff:.3g}", flush=True)
            rows.append(dict(layout_check=f"{B}x{T}", bitwise=same, max_diff=diff))
    if a.profile:
        s = io.StringIO()
        for name in ("gae", "gae+bwd", "ppo", "vtrace"):
            op = profile.op(name.split("+")[0])
            params = op.defaults
            x = op.make(4096, 128, torch.float32, "cuda", torch.Generator().manual_seed(0))
            fn = lambda: op.run(x, "triton", params)  # noqa: E731
            if name.endswith("+bwd"):
                fn = fwd_bwd(op, x, params)[0]
            s.write(f"== {name} 4096x128: {call_us(fn, 2000):.1f} us/call\n")
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(2000):
                fn()
            torch.cuda.synchronize()
            pr.disable()
            pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(30)
        open(a.profile, "w").write(s.getvalue())
        print(s.getvalue()[:6000])

    for (B, T) in shapes:
        for dt in a.dtypes.split(","):
            dtype = getattr(torch, dt)
            es = torch.finfo(dtype).bits // 8
            for name in a.algorithms.split(","):
                op = profile.op(name)
                params = op.defaults
                x = op.make(B, T, dtype, "cuda", torch.Generator().manual_seed(0))
                fn = lambda: op.run(x, "triton", params)  # noqa: E731

                def err_of_call():
                    """Run ``fn`` once; its first output's error against the loops (small shapes)."""
                    out = fn()
                    out = out[0] if isinstance(out, tuple) else out
                    return profile.rel_err(out, op.reference(profile.as_numpy(x), params)) if B * T <= 1 << 22 else None

                err = err_of_call()
                floor = B * T * op.bytes_per_step(es) / bw * 1e3
                emit(alg=name, B=B, T=T, dtype=dt, pass_="fwd", tile="default", gpu_ms=gpu_ms(fn), floor_ms=floor,
                     call_us=call_us(fn, 300 if B * T > 1 << 22 else 2000), err=err)
                if a.bwd and name not in ("sac",):
                    f, leaves = fwd_bwd(op, x, params)
                    f()
                    emit(alg=name, B=B, T=T, dtype=dt, pass_="fwd+bwd", tile="default",
                         gpu_ms=gpu_ms(f), floor_ms=None, call_us=call_us(f, 300), err=None)
                if a.kernels:
                    for pass_, g in (("fwd", fn),) + ((("fwd+bwd", f),) if a.bwd and name != "sac" else ()):
                        for k, us in kernel_times(g).items():
                            emit(alg=name, B=B, T=T, dtype=dt, pass_=pass_, tile="k-" + k[:60], gpu_ms=us / 1e3,
                                 floor_ms=None, call_us=None, err=None)
                if a.partials and name in ("ppo", "crr"):
                    for cfg in a.partials.split(","):
                        elements, programs, stages = map(int, cfg.split("x"))
                        with using(dataclasses.replace(base, reduce_tile_elements=elements, partial_programs=programs,
                                                       partial_stages=stages)):
                            emit(alg=name, B=B, T=T, dtype=dt, pass_="fwd", tile="p-" + cfg, gpu_ms=gpu_ms(fn),
                                 floor_ms=floor, call_us=None, err=err_of_call())
                fn_tm = None
                if a.time_major and name == "gae":
                    import rltriton_lite as rl
                    xt = {k: v.t().contiguous() if v.dim() == 2 else v for k, v in x.items()}
                    fn_tm = lambda: rl.gae(xt["rewards"], xt["values"], terminated=xt["terminated"],  # noqa: E731
                                           next_values=xt["next_values"], time_dim=0, **params)
                    emit(alg=name, B=B, T=T, dtype=dt, pass_="fwd", tile="tm-default", gpu_ms=gpu_ms(fn_tm),
                         floor_ms=floor, call_us=None, err=None)
                if a.tiles and B * T >= 1 << 19 and dt == "float32" and name in ("gae", "vtrace", "sac", "discounted_return"):
                    for cfg in tiles:
                        with using(dataclasses.replace(base, tile=cfg)):
                            emit(alg=name, B=B, T=T, dtype=dt, pass_="fwd", tile="x".join(map(str, cfg)),
                                 gpu_ms=gpu_ms(fn), floor_ms=floor, call_us=None, err=None)
                            if fn_tm is not None:
                                emit(alg=name, B=B, T=T, dtype=dt, pass_="fwd", tile="tm-" + "x".join(map(str, cfg)),
                                     gpu_ms=gpu_ms(fn_tm), floor_ms=floor, call_us=None, err=None)
                            if a.bwd and name == "gae":
                                f, leaves = fwd_bwd(op, x, params)
                                emit(alg=name, B=B, T=T, dtype=dt, pass_="fwd+bwd", tile="x".join(map(str, cfg)),
                                     gpu_ms=gpu_ms(f), floor_ms=None, call_us=None, err=None)


if __name__ == "__main__":
    sys.exit(main())
