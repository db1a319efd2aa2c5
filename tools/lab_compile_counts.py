"""Notebook 13b's lab kernels compiled for an H100/H200 (sm_90) with the installed Triton, on a machine
without a GPU: the registers, spills, shared memory and warps of each variant that the lab's reference
(benchmarks/results/checks/H100-2026-12-06-lab.txt, compiled by Triton 3.6 on the H100) gives them for,
and the resident programs per SM that these make (the checker's count, ``exercises._resident_reference``).
Register counts differ between Triton versions: a student compares their kernel's counts with the file
of the Triton they have. Writes benchmarks/results/checks/cpu-triton-<triton version>-lab-compile.txt:

    .venv/bin/python tools/lab_compile_counts.py

The kernels are ``tools/lab_probe.py``'s (the solution of ``reset_scan`` and its pipelined twin: a
teacher's tool, it reads the solutions), launched on CPU tensors while a stand-in CUDA driver makes
Triton compile instead of launching (as ``tools/compile_sm90.py`` does); the registers are ``ptxas -v``'s
on the compiled PTX (compile_sm90's ``_usage``), as 13b's ``compile_for_h100`` counts them.
Nothing runs, so the file holds no timing. Relies on Triton internals (tried with 3.9 and 3.6). Checked
on 2026-12-07: run with Triton 3.6.0 (torch 2.13), it gave every variant the registers, spills, shared memory
and warps that the reference's H100 reported, so the Triton 3.9 file's differences are the version's.
"""
from __future__ import annotations

import datetime
import os
import re
import sys
from pathlib import Path

os.environ.pop("TRITON_INTERPRET", None)  # compiled, not interpreted
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton's default, set to silence its warning
ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tools")]

import torch  # noqa: E402
import triton  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

# importing it sets an H100/H200 to compile for (nothing can run); _usage: ptxas -v on a kernel's PTX
from compile_sm90 import _usage  # noqa: E402
from rltriton_lite import exercises, lab  # noqa: E402
import lab_probe  # noqa: E402  (the lab's kernels, as the reference timed them)

CHECKS = ROOT / "benchmarks" / "results" / "checks"
OUT = CHECKS / f"cpu-triton-{triton.__version__}-lab-compile.txt"
COMMAND = "python tools/lab_compile_counts.py"


def knobs(label: str) -> tuple:
    """(chunk, num_warps or None, stages or None) of a reference label: "reset_scan, chunk 256, num_warps 1"."""
    found = {k: int(v) for k, v in re.findall(r"(chunk|num_warps|stages) (\d+)", label)}
    return found["chunk"], found.get("num_warps"), found.get("stages")


def main():
    reference = lab.read_reference()
    labels = list(dict.fromkeys(name for (name, _), r in reference.items() if r["resources"]))  # the file's order
    _run = JITFunction.run
    JITFunction.run = lambda self, *a, grid, warmup, **kw: _run(self, *a, grid=grid, warmup=True, **kw)  # compile only
    try:
        for name in labels:  # one launch each: T = 1024, as every lab shape, a multiple of 16 (one specialisation)
            lab_probe.variant(*knobs(name))(torch.zeros(1, 1024), torch.zeros(1, 1024, dtype=torch.bool), 0.99)
    finally:
        JITFunction.run = _run
    lines = [f"# sm_90 (H100/H200) counts of notebook 13b's lab kernels, compiled without a GPU (not run): "
             f"triton {triton.__version__}, torch {torch.__version__}, {datetime.date.today().isoformat()}",
             f"# command: {COMMAND} (registers: ptxas -v on the PTX, as 13b's compile_for_h100; the variants of "
             f"{lab.REFERENCE_FILE} that give resources; resident programs: exercises._resident_reference)",
             f"{'kernel':<54} {'regs':>5} {'spills':>7} {'smem B':>7} {'warps':>6} {'resident':>9}"]
    for name in labels:
        kernel = lab_probe.COMPILED[knobs(name)]
        regs, spills = _usage(kernel)
        warps, smem = kernel.metadata.num_warps, kernel.metadata.shared
        resident = exercises._resident_reference(regs, warps, smem)
        lines.append(f"{name:<54} {regs:5d} {spills:7d} {smem:7d} {warps:6d} {resident:9d}")
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines) + f"\nwritten: {os.path.relpath(OUT, ROOT)}")


if __name__ == "__main__":
    main()
