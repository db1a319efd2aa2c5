"""What a plain device copy reaches at small sizes: the ceiling under the "% of floor" column.

The floor of a row is its bytes over the copy bandwidth of a 4 GiB copy (bench.copy_bandwidth).
A copy of a few MB does not reach that bandwidth either: the launch, the ramp-up of the first
wave and the tail of the last take microseconds that the bytes do not. This times, for each total
byte count (CUDA-graph replays, GPU time alone, as the harness's GPU column), and prints each one's
own "% of floor":

- ``dst.copy_(src)``, PyTorch's copy (what the floor's bandwidth is measured with, at 2 GiB);
- a Triton kernel that copies (4 bytes read, 4 written per element);
- a Triton kernel with SAC's byte mix (four float32 and a one-byte flag read, one float32 written:
  21 bytes per element, 17 of them read), the kernel's arithmetic left out.

    python tools/copy_probe.py [--mb 1,2,4,...] [--out probe.json]
"""
import argparse
import json
import sys
import time

import torch
import triton
import triton.language as tl

from rltriton_lite import bench


@triton.jit
def _copy(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(Y + offs, tl.load(X + offs, mask=m), mask=m)


@triton.jit
def _read_four_write_one(A, B, C, D, F, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    s = tl.load(A + offs, mask=m) + tl.load(B + offs, mask=m) + tl.load(C + offs, mask=m) + tl.load(D + offs, mask=m)
    tl.store(Y + offs, tl.where(tl.load(F + offs, mask=m) != 0, 0.0, s), mask=m)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", default="0.5,1,2,4,9.5,13.7,18,26.4,32,64,128,256,1024",
                    help="bytes read + written, MB (1e6), comma-separated")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    bw = bench.copy_bandwidth(lambda f: triton.testing.do_bench(f, return_mode="median"))
    rows = []
    for mb in (float(x) for x in a.mb.split(",")):
        n = max(1, int(mb * 1e6 / 8))  # float32 elements: 4 bytes read + 4 written each
        src = torch.randn(n, device="cuda")
        dst = torch.empty_like(src)
        k = max(1, int(mb * 1e6 / 21))  # SAC's mix: 4 float32 + 1 flag byte read, 1 float32 written
        flag = (torch.rand(k, device="cuda") < 0.02).to(torch.uint8)
        ins = [torch.randn(k, device="cuda") for _ in range(4)] + [flag]
        out = torch.empty(k, device="cuda")
        grid = lambda count: (triton.cdiv(count, 1024),)  # noqa: E731
        timed = {"copy_": (8 * n, lambda: dst.copy_(src)),
                 "triton copy": (8 * n, lambda: _copy[grid(n)](src, dst, n, BLOCK=1024)),
                 "triton 4 reads + flag, 1 write": (21 * k, lambda: _read_four_write_one[grid(k)](*ins, out, k,
                                                                                                  BLOCK=1024))}
        for what, (nbytes, fn) in timed.items():
            fn()
            ms = triton.testing.do_bench_cudagraph(fn, rep=20, return_mode="median")
            floor_ms = nbytes / bw * 1e3
            rows.append(dict(mb=mb, what=what, bytes=nbytes, gpu_us=ms * 1e3, floor_us=floor_ms * 1e3,
                             pct_floor=100 * floor_ms / ms))
            print(f"{what:>32} {nbytes / 1e6:8.1f} MB  {ms * 1e3:8.2f} us  floor {floor_ms * 1e3:8.2f} us  "
                  f"{rows[-1]['pct_floor']:5.1f} % of floor")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(dict(bw=bw, gpu=torch.cuda.get_device_name(), date=time.strftime("%Y-%m-%d"),
                           versions=dict(torch=torch.__version__, triton=triton.__version__),
                           command="python tools/copy_probe.py " + " ".join(sys.argv[1:]), rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
