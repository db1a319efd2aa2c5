"""Notebook 13b's GPU lab, run on the course's own answers: the solution of ``reset_scan``
(notebooks/solutions/reset_scan.py) and 13b's step-by-step baseline (``step_by_step_kernel``, read
from notebooks/13b_gpu_lab.py, section 1), timed the way 13b's section 2 times a student's kernel
(``rltriton_lite.lab``'s inputs and ``measure_call``: ``bench.measure`` for the wall time,
``bench.kernel_ms`` for the GPU time; % floor at 9 bytes per step over this GPU's copy bandwidth),
at the lab's shapes and over its knobs: the chunk,
``num_warps`` and a pipelined chunk loop (``tl.range(..., num_stages=2)``). The teacher's reference
for the lab's target and rubric (13b, section 3, reads it; the output's labels, "notebook 13's lab"
and "step_by_step (13's baseline)", are kept as the committed file has them, from before the lab
moved to 13b):

    PYTHONPATH=$PWD python tools/lab_probe.py > $OUT/lab.txt
"""
import importlib.util
import re
import tempfile
from pathlib import Path

import torch
import triton
import triton.language as tl

import rltriton_lite as rl
from rltriton_lite import bench, lab, profile

ROOT = Path(__file__).resolve().parent.parent


def _module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _baseline():
    """13b's ``step_by_step_kernel`` and ``step_by_step``, executed from the notebook's own cell."""
    text = (ROOT / "notebooks" / "13b_gpu_lab.py").read_text()
    cell = re.search(r"^@triton\.jit\ndef step_by_step_kernel.*?^    return out$", text, re.S | re.M).group(0)
    path = Path(tempfile.mkdtemp()) / "lab_baseline.py"  # @triton.jit reads its source from a file
    path.write_text("import torch\nimport triton\nimport triton.language as tl\n\n" + cell + "\n")
    return _module("lab_baseline", path)


SOL = _module("reset_scan_solution", ROOT / "notebooks" / "solutions" / "reset_scan.py")


@triton.jit
def _pipelined(R, D, G, gamma, T, CHUNK: tl.constexpr, STAGES: tl.constexpr):
    # the solution's kernel, its chunk loop a tl.range: the next chunk's loads issued during this one's scan
    row = tl.program_id(0)
    carry = 0.0
    n_chunks = tl.cdiv(T, CHUNK)
    for i in tl.range(0, n_chunks, num_stages=STAGES):
        c = n_chunks - 1 - i
        t = c * CHUNK + tl.arange(0, CHUNK)
        m = t < T
        r = tl.load(R + row * T + t, mask=m, other=0.0)
        term = (tl.load(D + row * T + t, mask=m, other=0) != 0) & m
        a = tl.where(m, gamma, 1.0)
        a_s, b_s, k_s = tl.associative_scan((a, r, term), 0, SOL._reset_combine, reverse=True)
        g = tl.where(k_s, b_s, b_s + a_s * carry)
        tl.store(G + row * T + t, g, mask=m)
        carry = tl.sum(tl.where(t == c * CHUNK, g, 0.0), 0)


COMPILED = {}  # variant -> the compiled kernel of its last launch (its registers and shared memory)


def variant(chunk, warps=None, stages=None):
    def run(rewards, terminated, gamma):
        out = torch.empty_like(rewards)
        B, T = rewards.shape
        opts = {} if warps is None else {"num_warps": warps}
        if stages is None:
            k = SOL._reset_scan[(B,)](rewards, terminated, out, gamma, T, CHUNK=chunk, **opts)
        else:
            k = _pipelined[(B,)](rewards, terminated, out, gamma, T, CHUNK=chunk, STAGES=stages, **opts)
        COMPILED[(chunk, warps, stages)] = k
        return out
    return run


def resources(chunk, warps=None, stages=None):
    """Registers per thread, spills and shared-memory bytes of a variant's compiled kernel."""
    k = COMPILED.get((chunk, warps, stages))
    if k is None:
        return ""
    return (f"  regs {getattr(k, 'n_regs', '?')}, spills {getattr(k, 'n_spills', '?')}, "
            f"smem {getattr(k.metadata, 'shared', '?')} B, warps {getattr(k.metadata, 'num_warps', '?')}")


def main():
    base = _baseline()
    bandwidth = profile.copy_bandwidth("cuda")
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}: "
          f"copy bandwidth {bandwidth / 1e12:.3f} TB/s; notebook 13's lab, float32, gamma 0.99, 2 % episode ends")
    print(f"{'kernel':<50} {'B x T':>11} {'wall us':>9} {'GPU us':>9} {'floor us':>9} {'% floor':>8}")
    calls = {lab.PACKAGE: lambda r, d: rl.discounted_returns(r, gamma=0.99, terminated=d),
             "step_by_step (13's baseline)": lambda r, d: base.step_by_step(r, d, 0.99, 0)}
    def label(chunk, warps, stages):
        return ", ".join([f"reset_scan{' solution' if warps is None and stages is None else ''}", f"chunk {chunk}"]
                         + ([f"num_warps {warps}"] if warps else []) + ([f"tl.range stages {stages}"] if stages else []))

    keys = {label(*k): k for k in [(c, None, None) for c in (64, 128, 256, 512, 1024, 2048)]
            + [(c, w, None) for c, w in ((256, 1), (256, 2), (256, 8), (512, 1), (1024, 1), (1024, 2), (2048, 1),
                                         (2048, 2))]
            + [(c, w, s) for c, w, s in ((256, None, 2), (256, None, 3), (512, None, 2), (1024, None, 2), (256, 1, 2),
                                         (1024, 1, 2))]}
    for name, key in keys.items():
        calls[name] = (lambda k: lambda r, d: variant(*k)(r, d, 0.99))(key)
    for B, T in lab.LAB_SHAPES:
        r, d = lab.lab_inputs(B, T)
        floor = bench.floor_ms(B * T * lab.STEP_BYTES, bandwidth)
        expected = calls[lab.PACKAGE](r, d)
        for name, fn in calls.items():
            call = (lambda f: lambda: f(r, d))(fn)
            wall_us, gpu_ms = lab.measure_call(call, expected)  # assert_close, then timed as 13b's time_lab times
            pct = f"{100 * floor / gpu_ms:8.1f}" if gpu_ms else f"{'n/a':>8}"
            gpu = f"{1e3 * gpu_ms:9.1f}" if gpu_ms else f"{'n/a':>9}"
            print(f"{name:<50} {f'{B}x{T}':>11} {wall_us:9.1f} {gpu} {1e3 * floor:9.1f} {pct}"
                  + (f"  #{resources(*keys[name])}" if name in keys else ""), flush=True)


if __name__ == "__main__":
    main()
