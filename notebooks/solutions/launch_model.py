"""Solution: launch_model (notebook 09). Our float32 rows of the algorithm and pass; the GPU time in
µs (kernel_ms is in ms) against the bytes; a least-squares line: its intercept is t0, its slope the
µs per byte, whose inverse is the bandwidth."""
import numpy as np


def launch_model(rows, algorithm, pass_):
    mine = [r for r in rows if (r["impl"], r["dtype"], r["algorithm"], r["pass"])
            == ("rltriton_lite", "float32", algorithm, pass_)]
    n_bytes = np.array([r["bytes"] for r in mine], dtype=np.float64)
    gpu_us = np.array([1e3 * r["kernel_ms"] for r in mine])
    slope, t0 = np.polyfit(n_bytes, gpu_us, 1)  # µs per byte, µs
    return t0, 1e6 / slope / 1e9  # bytes per µs -> bytes per s -> GB/s


solution = launch_model
