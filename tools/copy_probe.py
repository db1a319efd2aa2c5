"""What a plain device copy reaches at small sizes: the ceiling under the "% of floor" column.

The floor of a row is its bytes over the copy bandwidth of a 4 GiB copy (bench.copy_bandwidth).
A copy of a few MB does not reach that bandwidth either: the launch, the ramp-up of the first
wave and the tail of the last take microseconds that the bytes do not. This times
``dst.copy_(src)`` (CUDA-graph replays, GPU time alone, as the harness's GPU column) for each
total byte count, and prints the copy's own "% of floor".

    python tools/copy_probe.py [--mb 1,2,4,...] [--out probe.json]
"""
import argparse
import json

import torch
import triton

from rltriton_lite import bench


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
        ms = triton.testing.do_bench_cudagraph(lambda: dst.copy_(src), rep=20, return_mode="median")
        floor_ms = 8 * n / bw * 1e3
        rows.append(dict(mb=mb, gpu_us=ms * 1e3, floor_us=floor_ms * 1e3, pct_floor=100 * floor_ms / ms))
        print(f"copy {mb:8.1f} MB  {ms * 1e3:8.2f} us  floor {floor_ms * 1e3:8.2f} us  {rows[-1]['pct_floor']:5.1f} % of floor")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(dict(bw=bw, gpu=torch.cuda.get_device_name(), rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
