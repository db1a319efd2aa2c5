"""``rltriton_lite.lab``, notebook 13b's tools: the check accepts a right kernel function and refuses a
wrong one (in the Triton interpreter on a CPU), nothing is timed or profiled on a CPU, the target's
verdicts on made-up rows, the committed files read back (the lab's H100 reference, the H200 run), and a
kernel compiled for an H100 without a GPU."""
from __future__ import annotations

import re

import pytest
import torch
import triton
import triton.language as tl

import rltriton_lite as rl
from rltriton_lite import exercises, lab

from conftest import DEVICE

CPU_ONLY = pytest.mark.skipif(DEVICE == "cuda", reason="what the tools do without a GPU")


def package(rewards, terminated, gamma, chunk):
    """A right kernel function: the package's Triton kernel, with the lab's arguments (chunk unused)."""
    return rl.discounted_returns(rewards, gamma=gamma, terminated=terminated, backend="triton")


def ignores_terminated(rewards, terminated, gamma, chunk):
    """A wrong one: a return that runs on past every episode's end."""
    return rl.discounted_returns(rewards, gamma=gamma, backend="triton")


def test_check_small_accepts_a_right_kernel_at_both_chunks():
    chunks = []

    def recorded(rewards, terminated, gamma, chunk):
        chunks.append(chunk)
        assert rewards.shape == terminated.shape == (3, 300) and rewards.device.type == DEVICE
        return package(rewards, terminated, gamma, chunk)

    lab.check_small(recorded)
    lab.check_small(recorded, chunk=512)
    assert chunks == [lab.LAB_CHUNK, 16, 512, 16]


def test_check_small_refuses_a_kernel_that_ignores_terminated():
    with pytest.raises(AssertionError):
        lab.check_small(ignores_terminated)


def test_check_small_refuses_a_kernel_wrong_only_at_a_small_chunk():
    def wrong_at_16(rewards, terminated, gamma, chunk):  # a carry lost between chunks shows at chunk 16 only
        out = package(rewards, terminated, gamma, chunk)
        return out if chunk != 16 else out + 1

    with pytest.raises(AssertionError):
        lab.check_small(wrong_at_16)


def test_check_small_names_the_case_and_the_first_wrong_step():
    def wrong_at_16(rewards, terminated, gamma, chunk):
        out = package(rewards, terminated, gamma, chunk)
        return out if chunk != 16 else out + 1

    with pytest.raises(AssertionError) as wrong:
        lab.check_small(ignores_terminated)
    said = str(wrong.value)  # the case, then the row and step where the error starts, expected against got
    assert said.startswith("check_small at chunk 256: row 0, step ") and "expected " in said and ", got " in said
    assert "Mismatched elements" not in said and "elements wrong)" in said
    with pytest.raises(AssertionError, match=r"^check_small at chunk 16, where the carry crosses chunks: row 0, step 299 "
                                             r".*expected (-?[\d.]+), got .*\(900 of 900 elements wrong\)$"):
        lab.check_small(wrong_at_16)
    with pytest.raises(AssertionError, match=r"expected a torch.float32 tensor of shape \(3, 300\), got a torch.float32 "
                                             r"tensor of shape \(3, 10\)"):
        lab.check_small(lambda rewards, terminated, gamma, chunk: rewards[:, :10])


def test_check_small_says_where_a_chunk_s_carry_enters():
    """A round-56 review: a carry lost between chunks was told as "step 43" (300 - 256 - 1, chunks counted from the
    row's end) with nothing about the chunk: where the latest wrong step ends a chunk, the message says so."""
    def no_carry(rewards, terminated, gamma, chunk):  # each chunk scanned alone, from 0 at its end
        return torch.cat([package(rewards[:, s:s + chunk], terminated[:, s:s + chunk], gamma, chunk)
                          for s in range(0, rewards.shape[-1], chunk)], -1)

    with pytest.raises(AssertionError) as wrong:
        lab.check_small(no_carry)
    said = str(wrong.value)
    assert said.startswith("check_small at chunk 256: row 0, step 255 "), said
    assert said.endswith("Step 255 is the last step of a chunk of 256 (chunks counted from the row's start): the carry "
                         "from the chunk after enters there. Is it applied, selected away only where step t terminates, "
                         "and is it the return at the next chunk's first step?"), said
    with pytest.raises(AssertionError) as wrong:  # a step that ends no chunk: no such sentence (298 on the CPU,
        lab.check_small(ignores_terminated)        # 297 on a GPU, whose generator draws other rollouts)
    said = str(wrong.value)
    step = int(re.search(r", step (\d+) ", said).group(1))
    ends_a_chunk = (step + 1) % 256 == 0 or (300 - step - 1) % 256 == 0
    assert not ends_a_chunk and "the carry from the chunk after enters there" not in said, said


@CPU_ONLY
def test_nothing_is_timed_or_profiled_on_a_cpu(capsys):
    assert lab.time_lab(package) == []
    assert "package, chunk 256: checked in the Triton interpreter; not timed" in capsys.readouterr().out
    assert lab.time_lab(lambda r, d, gamma, chunk: package(r, d, gamma, chunk), chunk=64) == []
    assert capsys.readouterr().out.startswith("yours, chunk 64: checked")
    assert lab.profile_once(package) == []
    assert "not profiled, because torch.profiler needs a GPU" in capsys.readouterr().out
    with pytest.raises(AssertionError):  # the check runs first, on a CPU too
        lab.time_lab(ignores_terminated)
    with pytest.raises(AssertionError):
        lab.profile_once(ignores_terminated)


def test_target_verdict_on_made_up_rows():
    share = lab.target_share()
    pkg = 90.3  # the package's % floor in the reference: the target is then 50 % of the floor
    rows = [{"kernel": k, "B × T": "16384×1024", "% floor": p}
            for k, p in [("a", 50.5), ("b", 49.5), ("c", None), ("rl.discounted_returns", pkg)]]
    rows.append({"kernel": "a", "B × T": "4096×128", "% floor": 1.0})  # another shape: not judged
    lines = lab.target_verdict(rows).splitlines()
    assert lines == [f"a at 16384×1024: a GPU time {pkg / 50.5:.2f}× the package's; the target, at most 1.8×: met",
                     f"b at 16384×1024: a GPU time {pkg / 49.5:.2f}× the package's; the target, at most 1.8×: not yet",
                     "c at 16384×1024: no GPU time (the call could not be captured); the target, at most 1.8×: not yet"]
    assert round(share, 3) == 0.554 and lab.target_verdict(rows, share=share) == "\n".join(lines)
    assert lab.target_verdict(rows, share=0.6).splitlines()[0].endswith("not yet")  # a stricter share
    # several package rows (tables joined with +): their median
    assert lab.target_verdict(rows[:1] + [dict(rows[3], **{"% floor": p}) for p in (80.0, 90.3, 200.0)]).endswith("met")
    assert lab.target_verdict(rows[:1]).endswith("this table has no package row at that shape")
    assert lab.target_verdict([]) == ("the target (a GPU time at most 1.8× the package's at 16384×1024, on the same GPU) "
                                      "is measured on a GPU, by time_lab at 16384×1024: nothing was timed here")


def test_read_reference_parses_the_committed_file():
    ref = lab.read_reference()
    assert ref == lab.read_reference(lab.reference_path())
    package_row = ref[("rl.discounted_returns", "16384x1024")]
    assert package_row == {"wall µs": 58.0, "GPU µs": 55.4, "floor µs": 50.0, "% floor": 90.3, "resources": {}}
    assert lab.target_share() == lab.TARGET_PCT / 90.3
    # a variant's name has spaces and commas; its compiled kernel's resources after "#"
    solution = ref[("reset_scan solution, chunk 256", "16384x1024")]
    assert (solution["GPU µs"], solution["% floor"]) == (112.2, 44.6)
    assert solution["resources"] == {"regs": 31, "spills": 0, "smem": 36, "warps": 4}
    assert ref[("reset_scan, chunk 256, num_warps 1, tl.range stages 2", "4096x128")]["resources"]["regs"] == 54
    assert {shape for _, shape in ref} == {"4096x128", "16384x1024"} and len(ref) == 2 * 22


def test_committed_reads_the_h200_run():
    row = lab.committed("discounted_return", 16384, 1024)
    assert (row["impl"], row["dtype"], row["pass"]) == ("rltriton_lite", "float32", "fwd")
    assert round(100 * row["floor_ms"] / row["kernel_ms"], 1) == 79.0  # 13b, section 2's fold "On the other card"
    anchor = lab.committed("gae", 4096, 128, impl="bare_triton_launch")
    assert anchor["algorithm"] == "gae" and anchor["impl"] == "bare_triton_launch"
    with pytest.raises(ValueError):  # no such row: an unpacking error, not a wrong row
        lab.committed("discounted_return", 3, 5)


def test_lab_constants_and_inputs():
    assert lab.LAB_CHUNK == 256 and lab.LAB_SHAPES == [(4096, 128), (16384, 1024)] and lab.STEP_BYTES == 9
    r, d = lab.lab_inputs(8, 64, device="cpu")
    r2, d2 = lab.lab_inputs(8, 64, device="cpu")
    assert r.dtype == torch.float32 and d.dtype == torch.bool and r.shape == d.shape == (8, 64)
    assert torch.equal(r, r2) and torch.equal(d, d2)  # seed 0: the same inputs every call


@pytest.mark.gpu
def test_time_lab_and_profile_once_on_a_gpu():
    rows = lab.time_lab(package, shapes=[(4096, 128)])
    assert [r["kernel"] for r in rows] == ["package, chunk 256", "rl.discounted_returns"]
    assert all(r["B × T"] == "4096×128" and r["wall µs/call"] > 0 and r["floor µs"] > 0 for r in rows)
    assert all(r["GPU µs"] is None or r["% floor"] == pytest.approx(100 * r["floor µs"] / r["GPU µs"]) for r in rows)
    assert lab.profile_once(package)  # at least one CUDA kernel recorded


def test_every_module_attribute_the_package_names_exists():
    """lab.measure_call called profile._torch_sync, which lives in bench: only a GPU ran that line, so only the GPU
    check saw the AttributeError. Every `module.name` the package's modules read from a sibling module they import
    (`from . import bench, profile`, ...) names something that module has, GPU-only paths included."""
    import ast
    import importlib
    from pathlib import Path

    package = Path(lab.__file__).parent
    checked = 0
    for path in sorted(package.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        siblings = {alias.asname or alias.name: alias.name for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None
                    for alias in node.names}
        rebound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} | {
            a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}  # (a local `returns` is no module)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in siblings \
                    and node.value.id not in rebound:
                module = importlib.import_module(f"rltriton_lite.{siblings[node.value.id]}")
                assert hasattr(module, node.attr), f"{path.name}:{node.lineno}: {node.value.id}.{node.attr} does not exist"
                checked += 1
    assert checked > 20  # (the walk found the package's cross-module reads: lab's bench.* and profile.* among them)


@triton.jit
def _walk_kernel(R, D, G, gamma, T):
    """13b's step_by_step: one row per program, walked from its last step."""
    base = tl.program_id(0).to(tl.int64) * T
    g = 0.0
    for i in range(0, T):
        t = base + T - 1 - i
        g = tl.load(R + t) + tl.where(tl.load(D + t) != 0, 0.0, gamma * g)
        tl.store(G + t, g)


def _walk(rewards, terminated, gamma, chunk):
    out = torch.empty_like(rewards)
    _walk_kernel[(rewards.shape[0],)](rewards, terminated, out, gamma, rewards.shape[1])
    return out


def _starter(regs, num_warps, shared_bytes):
    """13b's resident_programs as a notebook has it before it is solved."""
    raise NotImplementedError


def test_compile_for_h100_counts_a_right_kernel_without_a_gpu():
    lab.check_small(_walk)  # a right kernel function
    rows = lab.compile_for_h100(_walk, num_warps=1, resident_programs=exercises._resident_reference)
    if not rows:
        pytest.skip("this Triton cannot compile for NVIDIA GPUs here")
    (row,) = rows
    assert (row["kernel"], row["chunk"], row["num_warps"], row["shared bytes"]) == ("_walk_kernel", lab.LAB_CHUNK, 1, 0)
    assert 0 < row["registers"] <= 255 and row["resident programs"] == exercises._resident_reference(row["registers"], 1, 0)
    # the starter's resident_programs, or none: n/a (None), as in 13b before the exercise is solved
    (starter,) = lab.compile_for_h100(_walk, chunk=16, resident_programs=_starter)
    assert starter["resident programs"] is None and starter["chunk"] == 16 and starter["num_warps"] == 4
    assert lab.compile_for_h100(_walk)[0]["resident programs"] is None
