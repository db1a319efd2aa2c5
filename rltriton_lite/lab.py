"""Notebook 13b's GPU lab: the tools that check, time and profile a student's kernel beside the
package, the lab's target, and the two committed files the lab compares with.

Each tool takes a kernel's function ``fn(rewards, terminated, gamma, chunk)``, the arguments of
00c's ``reset_scan``: ``check_small`` checks it against ``rl.discounted_returns``, ``time_lab``
times it beside the package (wall time, GPU time, % of the memory floor), ``target_verdict``
applies the lab's target to ``time_lab``'s rows, and ``profile_once`` profiles one call with
``torch.profiler``. ``compile_for_h100`` compiles its kernels for an H100, with no GPU needed,
and reports their registers and shared memory. ``read_reference`` reads the lab's reference, the
course's own answer timed on an H100 by the teacher's ``tools/lab_probe.py``, and ``committed``
one row of the committed H200 run.

The device is picked at each call, not at import: CUDA if ``torch.cuda.is_available()``, else the
CPU, where a Triton kernel runs in the interpreter (``TRITON_INTERPRET=1``, which must be set
before ``triton`` is first imported: notebook 13b sets it) and nothing is timed.
"""
from __future__ import annotations

import os
import re
import statistics

import torch

# exercises: imported with lab, before any kernel runs, so that compile_for_h100 finds triton.language as imported
from . import bench, exercises, profile
from .returns import discounted_returns

LAB_CHUNK = 256  # the chunk the lab passes to fn unless told otherwise: one of the variants of the lab
LAB_SHAPES = [(4096, 128), (16384, 1024)]  # many short rows (host-bound), then a call that is GPU time
STEP_BYTES = profile.op("discounted_return").bytes_per_step(4)  # 4 + 1 read, 4 written
TARGET_PCT = 50  # the H100's % floor that fixed the target's 1.8 (13b, section 3)
PACKAGE = "rl.discounted_returns"  # the package's rows, in time_lab's tables and in the reference
REFERENCE_FILE = "H100-2026-12-06-lab.txt"  # in benchmarks/results/checks/, written by tools/lab_probe.py


def check_small(fn, chunk=LAB_CHUNK):
    """Asserts that fn(rewards, terminated, gamma, chunk) equals rl.discounted_returns on 3 rows of 300 steps,
    at ``chunk`` and at 16 (a carry across several chunks): compiled on a GPU, in the Triton interpreter on a CPU.
    A difference raises an AssertionError naming the case and the wrong step where the error starts."""
    device = _device()
    g = torch.Generator(device=device).manual_seed(0)
    r = torch.randn(3, 300, device=device, generator=g)
    d = torch.rand(3, 300, device=device, generator=g) < 0.1
    # the package's Triton kernels: compiled on a GPU, in the interpreter on a CPU ("auto" would take PyTorch there)
    expected = discounted_returns(r, gamma=0.99, terminated=d, backend="triton")
    for c in (chunk, 16):
        got = fn(r, d, 0.99, c)
        try:
            torch.testing.assert_close(got, expected)
        except AssertionError as e:
            case = f"check_small at chunk {c}" + (", where the carry crosses chunks" if c == 16 else "")
            raise AssertionError(_first_wrong(case, got, expected, d, e, c)) from None


def _first_wrong(case, got, expected, terminated, error, chunk):
    """check_small's message: the first wrong row, and in it the latest wrong step (a return is a reverse
    scan: an error there reaches every earlier step of its episode), expected against got; where that step
    ends a chunk (chunks counted from the row's start or from its end), that the carry enters there."""
    if not isinstance(got, torch.Tensor) or got.shape != expected.shape or got.dtype != expected.dtype:
        return f"{case}: expected a {expected.dtype} tensor of shape {tuple(expected.shape)}, got " + (
            f"a {got.dtype} tensor of shape {tuple(got.shape)}" if isinstance(got, torch.Tensor) else type(got).__name__)
    bad = ~torch.isclose(got, expected.to(got.device), rtol=1.3e-6, atol=1e-5)  # assert_close's float32 tolerances
    if not bad.any():
        return f"{case}: {str(error).splitlines()[0]}"
    row = int(bad.any(1).nonzero()[0])
    t = int(bad[row].nonzero()[-1])
    T = got.shape[-1]
    # (a round-56 review: "step 43" said nothing of the chunk of 256 whose carry enters there, 300 - 256 - 1)
    boundary = t < T - 1 and ((t + 1) % chunk == 0 or (T - t - 1) % chunk == 0)
    return (f"{case}: row {row}, step {t} (the latest wrong step of the first wrong row: the error starts there) "
            f"expected {float(expected[row, t]):.6g}, got {float(got[row, t]):.6g}; terminated there: "
            f"{bool(terminated[row, t])} ({int(bad.sum())} of {bad.numel()} elements wrong)" + (
                f". Step {t} is the last step of a chunk of {chunk} (chunks counted from the row's "
                f"{'start' if (t + 1) % chunk == 0 else 'end'}): the carry from the chunk after enters there. Is it "
                "applied, selected away only where step t terminates, and is it the return at the next chunk's "
                "first step?" if boundary else ""))


def time_lab(fn, chunk=LAB_CHUNK, name=None, shapes=LAB_SHAPES):
    """Rows of wall µs, GPU µs, floor µs and % floor for fn(rewards, terminated, gamma, chunk) and for
    rl.discounted_returns at each shape, measured on this GPU after check_small(fn, chunk); [] on a CPU."""
    if name is None:  # the function's name, or "yours" for a lambda, and the chunk
        name = f"{'yours' if fn.__name__ == '<lambda>' else fn.__name__}, chunk {chunk}"
    check_small(fn, chunk)
    if _device() != "cuda":
        print(f"{name}: checked in the Triton interpreter; not timed, because the interpreter's times say "
              "nothing about a GPU")
        return []
    bandwidth = profile.copy_bandwidth("cuda")  # bytes read + written per second by a device-to-device copy
    print(f"{torch.cuda.get_device_name()}, copy bandwidth {bandwidth / 1e12:.2f} TB/s: measured now, on this GPU")
    rows = []
    for B_, T_ in shapes:
        r_, d_ = lab_inputs(B_, T_)
        floor_ms = bench.floor_ms(B_ * T_ * STEP_BYTES, bandwidth)
        calls = {name: lambda: fn(r_, d_, 0.99, chunk),
                 PACKAGE: lambda: discounted_returns(r_, gamma=0.99, terminated=d_)}
        expected = calls[PACKAGE]()
        for what, call in calls.items():
            wall_us, gpu_ms = measure_call(call, expected)
            rows.append({"kernel": what, "B × T": f"{B_}×{T_}", "wall µs/call": wall_us,
                         "GPU µs": 1e3 * gpu_ms if gpu_ms else None, "floor µs": 1e3 * floor_ms,
                         "% floor": 100 * floor_ms / gpu_ms if gpu_ms else None})  # None shows as n/a
    return rows


def target_verdict(table, share=None):
    """One line per kernel of a time_lab table, the package's left out: its % floor at 16384×1024 against
    share × the package's % floor in the same table (their median, if the table joins several). share
    defaults to target_share(), from the committed reference; the lines are the same on any device."""
    share = target_share() if share is None else share
    rows = [r for r in table if r["B × T"] == "16384×1024"]
    package = [r["% floor"] for r in rows if r["kernel"] == PACKAGE]
    if not package:
        return (f"the target (a GPU time at most {1 / share:.1f}× the package's at 16384×1024, on the same GPU) "
                "is measured on a GPU, by time_lab at 16384×1024: "
                + ("nothing was timed here" if not table else "this table has no package row at that shape"))
    package_pct = statistics.median(package)
    target = share * package_pct
    lines = []
    for r in rows:
        if r["kernel"] != PACKAGE:
            got = r["% floor"]  # the same floor as the package's: GPU time ÷ the package's = package_pct ÷ got
            lines.append(f"{r['kernel']} at 16384×1024: "
                         + ("no GPU time (the call could not be captured)" if got is None
                            else f"a GPU time {package_pct / got:.2f}× the package's")
                         + f"; the target, at most {1 / share:.1f}×: "
                         + ("met" if got is not None and got >= target else "not yet"))
    return "\n".join(lines)


def target_share(path=None):
    """TARGET_PCT over the package's % floor at 16384×1024 in the lab's reference (about 0.554): the share
    of the package's % floor that a kernel must reach, on any GPU. Read from the committed file, on any device."""
    return TARGET_PCT / read_reference(path)[(PACKAGE, "16384x1024")]["% floor"]


def profile_once(fn, chunk=LAB_CHUNK, summary=False):
    """The CUDA kernels that one call of fn(rewards, terminated, gamma, chunk) launches at 16384×1024,
    with their CUDA µs, after check_small(fn, chunk); [] on a CPU."""
    check_small(fn, chunk)
    if _device() != "cuda":
        print("checked in the Triton interpreter; not profiled, because torch.profiler needs a GPU: on a CPU "
              "the kernel launches no CUDA kernel to record")
        return []
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    B_, T_ = 16384, 1024
    r_, d_ = lab_inputs(B_, T_)
    fn(r_, d_, 0.99, chunk)  # compile and warm up outside the recording
    torch.cuda.synchronize()
    with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn(r_, d_, 0.99, chunk)
        torch.cuda.synchronize()
    print(f"torch.profiler, one call at {B_}×{T_}, chunk {chunk}, {torch.cuda.get_device_name()}: measured now")
    if summary:
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=8))  # the profiler's own summary
    return [{"CUDA kernel": e.name, "CUDA µs": e.device_time_total} for e in prof.events()
            if e.device_type == torch.autograd.DeviceType.CUDA]


def read_reference(path=None):
    """The lab's reference file (default reference_path()) as a dict: (variant, shape) -> {"wall µs",
    "GPU µs", "floor µs", "% floor" (floats), "resources" (the compiled kernel's regs, spills, smem,
    warps as ints; {} for a row that has none)}. Shapes as the file writes them, "16384x1024". No device."""
    with open(path or reference_path(), encoding="utf-8") as f:
        lines = f.read().splitlines()[2:]  # after the header (GPU, versions) and the column names
    reference = {}
    for line in lines:
        timing, _, compiled = line.partition("#")  # after "#": "regs 31, spills 0, smem 36 B, warps 4"
        *name, shape, wall_us, gpu_us, floor_us, pct = timing.split()  # a variant's name has spaces
        reference[(" ".join(name), shape)] = {
            "wall µs": float(wall_us), "GPU µs": float(gpu_us), "floor µs": float(floor_us), "% floor": float(pct),
            "resources": {k: int(v) for k, v in re.findall(r"(\w+) (\d+)", compiled)}}
    return reference


def reference_path():
    """benchmarks/results/checks/H100-2026-12-06-lab.txt, the lab's reference, in the course's results folder."""
    return os.path.join(profile.results_folder(), "checks", REFERENCE_FILE)


def committed(algorithm, B, T, impl="rltriton_lite", results=None):
    """The committed H200 row of this case (float32, forward), as in notebook 13: from ``results`` (a
    results file's contents), default profile.committed_results()'s. No device."""
    results = profile.committed_results()[1] if results is None else results
    (r,) = [r for r in results["rows"] if (r["algorithm"], r["impl"], r["B"], r["T"], r["dtype"], r["pass"])
            == (algorithm, impl, B, T, "float32", "fwd")]
    return r


def lab_inputs(B, T, device="cuda"):
    """The lab's timing inputs on ``device``: float32 rewards and bool terminated (2 % episode ends) of B
    rows × T steps, from seed 0."""
    g = torch.Generator(device=device).manual_seed(0)
    r = torch.randn(B, T, device=device, generator=g)
    d = torch.rand(B, T, device=device, generator=g) < 0.02
    return r, d


def measure_call(call, expected):
    """(wall µs per call, GPU ms) of call() on CUDA, after asserting that it returns ``expected``: the wall time
    of back-to-back calls, host work included, and the median of CUDA-graph replays (None if the call cannot
    be captured in a CUDA graph)."""
    torch.testing.assert_close(call(), expected, rtol=1e-4, atol=1e-4)  # right before it is timed
    _, wall_us, _ = bench.measure(call, bench._torch_sync("cuda"), bench.QUICK, use_do_bench=True)
    return wall_us, bench.kernel_ms(call, bench.QUICK)


COMPILE_TRIED = "3.9"  # the only Triton version compile_for_h100 was tried with (it reaches into Triton's internals)


def compile_for_h100(fn, chunk=LAB_CHUNK, num_warps=None, resident_programs=None):
    """Rows of warps, registers a thread, shared bytes and resident programs of each kernel that one call
    of fn(rewards, terminated, gamma, chunk) launches, compiled for an H100/H200 (sm_90), not run: it
    needs no GPU. num_warps, if given, replaces the launch's own. resident_programs(registers, warps, shared
    bytes), 13b's exercise, counts the last column: None there without it or while it raises NotImplementedError
    (the starter). [] where Triton cannot compile for NVIDIA GPUs. Tried with Triton COMPILE_TRIED only: on
    another it warns."""
    import triton
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    if not triton.__version__.startswith(COMPILE_TRIED + "."):
        print(f"note: compile_for_h100 was tried with Triton {COMPILE_TRIED} only, and this is Triton "
              f"{triton.__version__}; if it fails, pip install \"triton=={COMPILE_TRIED}.*\" and run its cell again")
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton's default (fusion on), set to silence its warning
    ptxas = _ptxas()
    if not os.path.exists(ptxas):
        print(f"skipped: this Triton cannot compile for NVIDIA GPUs here (no {ptxas})")
        return []
    launches = []  # 1. one call of fn on a small CPU input, each launch recorded instead of run
    saved = InterpretedFunction.run, JITFunction.run
    InterpretedFunction.run = JITFunction.run = lambda k, *args, grid, warmup, **kw: launches.append((k, args, kw))
    try:
        fn(torch.zeros(1, 1024), torch.zeros(1, 1024, dtype=torch.bool), 0.99, chunk)
    finally:
        InterpretedFunction.run, JITFunction.run = saved
    as_jit = exercises._sm90_jit()
    rows = []
    for kernel, args, kw in launches:  # 2. each launch compiled for sm_90 against a stand-in driver
        kw = kw if num_warps is None else {**kw, "num_warps": num_warps}
        with exercises._compiling_for_sm90(as_jit):
            # (fresh: a GPU's own JITFunction keeps its cache for its own device)
            kernel_sm90 = as_jit.fresh(kernel).warmup(*as_jit(tuple(args)), grid=(1,), **kw)
        regs, _ = _usage(kernel_sm90, ptxas)  # 3. ptxas -v on its PTX: the registers a thread
        warps, shared = kernel_sm90.metadata.num_warps, kernel_sm90.metadata.shared
        try:
            resident = None if resident_programs is None else resident_programs(regs, warps, shared)
        except NotImplementedError:  # the starter, not solved yet
            resident = None
        rows.append({"kernel": kernel.fn.__name__, "chunk": chunk, "num_warps": warps, "registers": regs,
                     "shared bytes": shared, "resident programs": resident})
    return rows


def _ptxas():
    """The ptxas Triton itself compiles sm_90 with: a newer Triton writes a PTX version that only its newer
    ptxas reads (Triton 3.9: ptxas-blackwell), an older one ships one ptxas. tools/compile_sm90.py uses it too."""
    import triton

    try:
        from triton.backends.nvidia.compiler import get_ptxas
        return get_ptxas(90).path
    except (ImportError, TypeError, AttributeError):  # an older Triton ships one ptxas
        return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")


def _usage(kernel, ptxas=None):
    """(registers a thread, bytes spilled) of a compiled kernel, from ptxas -v on its PTX (-1 where ptxas
    does not say). tools/compile_sm90.py and tools/lab_compile_counts.py use it too."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(kernel.asm["ptx"])
        res = subprocess.run([ptxas or _ptxas(), "-v", f"-arch=sm_{kernel.metadata.target.arch}a", src,
                              "-o", os.path.join(d, "k.o")], capture_output=True, text=True)
    out = res.stdout + res.stderr
    regs = re.search(r"Used (\d+) registers", out)
    spill = re.search(r"(\d+) bytes spill stores", out)
    return (int(regs.group(1)) if regs else -1), (int(spill.group(1)) if spill else -1)


def _device():
    return "cuda" if torch.cuda.is_available() else "cpu"  # at call time: importing this module picks nothing
