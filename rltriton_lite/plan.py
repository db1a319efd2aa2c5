"""The planner: the tile, warps and time split of a scan launch (a pure function of the problem's
shape, the outputs' element size, the device and the ``Config``, cached), and the launch itself."""
from __future__ import annotations

import functools

import torch

from . import _checks
from ._triton import HAS_TRITON, INTERPRET, Launcher, tl
from .config import Config, current
from .scan import _scan_kernel, _segments_epilogue, _segments_prologue


def _tile(n_rows: int, T: int, time_contiguous: bool, itemsize: int, cfg: Config):
    """(rows per program, time steps per chunk, warps, pipeline stages, steps per vector) for
    (n_rows, T) and the outputs' element size in bytes.

    One warp per program, 256 steps per chunk (2 vectors per thread) and the next chunk's loads in
    flight (2 stages); many rows take 2 × 128. The chunk depends on (n_rows, T) only, never on the
    layout, so both layouts are scanned in the same chunks (the same carries between them). A
    vector is 16 bytes. A 2-byte tile of one row is not pipelined (Triton 3.6 replicates it into
    every thread). Time-major tiles span more rows, unpipelined, bounded by their registers.
    The measurements behind each choice: docs/DESIGN.md, "The scan's tile".
    """
    if cfg.tile is not None:
        rows, block, warps, *rest = cfg.tile
        return rows, block, warps, rest[0] if rest else 1, _vector(itemsize, block, rest[1] if rest[1:] else cfg.vector)
    block = min(max(_checks.next_power_of_2(T), 16), 128 if n_rows >= 4096 else 256, cfg.max_block_t)
    vec = _vector(itemsize, block, cfg.vector)
    if not time_contiguous:
        most_rows, elements, warps = cfg.time_major_tile
        elements = elements * 4 // max(itemsize, 4)
        rows = max(1, min(most_rows, elements // block, _checks.next_power_of_2(n_rows)))
        return rows, block, warps, 1, vec
    rows = max(1, min(256 // block, _checks.next_power_of_2(n_rows))) if n_rows >= 1024 else 1
    return rows, block, 1, 2 if T > block and not (itemsize < 4 and rows == 1) else 1, vec


def _vector(itemsize: int, block: int, vector: int | None) -> int:
    """Steps per vector: ``vector``, else 16 bytes (8 steps of a 2-byte dtype, 4 otherwise)."""
    vec = vector or (8 if itemsize < 4 else 4)
    if vec not in (4, 8) or vec > block:
        raise ValueError(f"steps per vector must be 4 or 8 and at most the chunk ({block}), got {vec}")
    return vec


@functools.lru_cache(maxsize=None)
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def _segments(n_programs: int, n_chunks: int, device: torch.device, min_programs):
    """(segments, chunks per segment) for ``n_programs`` row tiles walking ``n_chunks`` chunks.

    Time is split when fewer than ``min_programs`` programs would run (None: two per SM on CUDA,
    never elsewhere); then into segments for four times that many (a program walks its chunks one
    after the other: short segments keep each launch of the split to about one chunk's latency)."""
    want = min_programs
    if want is None:
        want = 2 * _sm_count(device.index if device.index is not None else torch.cuda.current_device()) \
            if device.type == "cuda" else 0
    if n_programs >= want or n_chunks < 2:
        return 1, n_chunks
    seg = _checks.cdiv(n_chunks, min(n_chunks, _checks.cdiv(4 * want, n_programs)))
    return _checks.cdiv(n_chunks, seg), seg


@functools.lru_cache(maxsize=1024)
def _plan(n_rows: int, T: int, time_contiguous: bool, itemsize: int, device: torch.device, cfg: Config):
    """Tile, warps, stages, vector, grid and time split of a launch: a pure function of its
    arguments, cached."""
    rows, block, num_warps, stages, vec = _tile(n_rows, T, time_contiguous, itemsize, cfg)
    # where time is split depends on the problem, not on the layout's tile (same chunks, same carries)
    n_seg, seg = _segments(_checks.cdiv(n_rows, _tile(n_rows, T, True, itemsize, cfg)[0]), _checks.cdiv(T, block),
                           device, cfg.min_programs)
    return rows, block, num_warps, stages, vec, _checks.cdiv(n_rows, rows), n_seg, seg


def unzip(items):
    """``(tensor, strides)`` pairs (or None) as a tuple of tensors and one of strides ((0, 0)
    for an absent input, never read: the kernels test the pointer first)."""
    ptrs, strides = [], []
    for x in items:
        ptrs.append(None if x is None else x[0])
        strides.append((0, 0) if x is None else x[1])
    return tuple(ptrs), tuple(strides)


def launch(prologue, epilogue, inputs, params, outputs, n_rows, T, *, reverse, acc_dtype,
           initial=None, time_contiguous=True):
    """Run the scan kernel over ``n_rows`` rows of ``T`` steps.

    ``inputs``/``outputs`` are sequences of ``None`` or ``(tensor, (row_stride, time_stride))``;
    ``params`` a tuple of Python scalars; ``initial`` a contiguous per-row tensor or None.

    Few long rows leave the GPU idle, so time is then split across programs: a first launch writes
    each segment's composed map (the prologue alone), a second scans the segments again, each
    from its carry, with the epilogue. Up to ``Config.compose`` segments each program of the
    second launch composes the maps before its segment itself; beyond, a launch between them
    scans the maps into carries (the same recurrence, one step per segment). Deterministic: no
    atomics, a fixed order.
    """
    if n_rows == 0 or T == 0:
        return
    cfg = current()
    X, SX = unzip(inputs)
    O, SO = unzip(outputs)
    device = next(x for x in X + O if x is not None).device
    out = next((o for o in O if o is not None), None)
    rows, block, num_warps, stages, vec, n_programs, n_seg, seg = _plan(
        n_rows, T, time_contiguous, 4 if out is None else out.element_size(), device, cfg)
    acc = tl.float64 if acc_dtype == torch.float64 else tl.float32
    P = tuple(params)
    grid = (n_programs, n_seg)
    # PROLOGUE, EPILOGUE, REVERSE, ACC, ROWS, BLOCK, V, STAGES, BLOCK_S, COMPOSE
    meta = (prologue, epilogue, reverse, acc, rows, block, vec, stages,
            min(_checks.next_power_of_2(n_seg), cfg.compose_block), False)
    if n_seg > 1:
        summary = torch.empty(n_rows, n_seg, 3, dtype=acc_dtype, device=device)
        _launch_scan(grid, (X, SX, P, O, SO, None, summary, n_rows, T, seg), meta, num_warps)
        if n_seg <= cfg.compose:  # two launches: each segment composes its own carry
            _launch_scan(grid, (X, SX, P, O, SO, initial, summary, n_rows, T, seg), meta[:-1] + (True,), num_warps)
            return
        carries = torch.empty(n_rows, n_seg, dtype=acc_dtype, device=device)
        seg_inputs = [(summary[..., k], (3 * n_seg, 3)) for k in range(3)]
        launch(_segments_prologue, _segments_epilogue, seg_inputs, (), [(carries, (n_seg, 1))], n_rows, n_seg,
               reverse=False, acc_dtype=acc_dtype, initial=initial)
        initial = carries
    _launch_scan(grid, (X, SX, P, O, SO, initial, None, n_rows, T, seg), meta, num_warps)


# The scan kernel's launches, through the compiled-kernel cache (_triton.Launcher); the letters
# name its runtime arguments: X T, SX S, P P, O T, SO S, Y0 t, SUMMARY t, n_rows i, T i, SEG i.
_launch_scan = Launcher(_scan_kernel, "TSPTSttiii")


def use_triton(backend: str, device: torch.device) -> bool:
    """Resolve ``backend`` ("auto" | "triton" | "torch") for tensors on ``device``."""
    if backend == "torch":
        return False
    runs = HAS_TRITON and (device.type == "cuda" or (device.type == "cpu" and INTERPRET))
    if backend == "triton" and not runs:
        if not HAS_TRITON:
            raise ValueError("backend='triton' needs the triton package, which is not installed")
        raise ValueError(
            "backend='triton' on CPU tensors needs the Triton interpreter: set TRITON_INTERPRET=1 "
            "in the environment before importing rltriton_lite"
        )
    return runs
