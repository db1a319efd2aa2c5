"""The planner: the tile, warps and time split of a scan launch (a pure function of the problem's
shape, the outputs' element size, the device and the ``Config``, cached), and the launch itself."""
from __future__ import annotations

import functools

import torch

from . import _checks
from ._triton import HAS_TRITON, Launch, interpreted_on, is_faking, tl
from .config import Config, current
from .scan import SUMMARY_WIDTH, _scan_kernel, _segments_epilogue, _segments_prologue


def _tile(n_rows: int, T: int, time_contiguous: bool, itemsize: int, cfg: Config, wide: bool = False):
    """(rows per program, time steps per chunk, warps, pipeline stages, steps per vector) for
    (n_rows, T) and the outputs' element size in bytes.

    One warp per program, 256 steps per chunk (2 vectors per thread) and the next chunk's loads in
    flight (2 stages); many rows take 2 × 128; ``wide`` (few long rows, see ``_plan``) chunks of
    up to ``cfg.wide_block`` steps, a warp per 256. The chunk depends on the problem only, never on
    the layout, so both layouts are scanned in the same chunks (the same carries between them). A
    vector is 16 bytes. A 2-byte tile of one row is not pipelined (Triton 3.6 replicates it into
    every thread). Time-major tiles span more rows, unpipelined, bounded by their registers.
    The measurements behind each choice: docs/DESIGN.md, "The scan's tile".
    """
    if cfg.tile is not None:
        rows, block, warps, *rest = cfg.tile
        return rows, block, warps, rest[0] if rest else 1, _vector(itemsize, block, rest[1] if rest[1:] else cfg.vector)
    most = cfg.wide_block if wide else 128 if n_rows >= 4096 else 256
    block = min(max(_checks.next_power_of_2(T), 16), most, cfg.max_block_t)
    vec = _vector(itemsize, block, cfg.vector)
    if not time_contiguous:
        most_rows, elements, warps = cfg.time_major_tile
        elements = elements * 4 // max(itemsize, 4)
        rows = max(1, min(most_rows, elements // block, _checks.next_power_of_2(n_rows)))
        return rows, block, warps, 1, vec
    rows = max(1, min(256 // block, _checks.next_power_of_2(n_rows))) if n_rows >= 1024 and not wide else 1
    return rows, block, max(1, block // 256), 2 if T > block and not (itemsize < 4 and rows == 1) else 1, vec


def _vector(itemsize: int, block: int, vector: int | None) -> int:
    """Steps per vector: ``vector``, else 16 bytes (8 steps of a 2-byte dtype, 4 otherwise)."""
    vec = vector or (8 if itemsize < 4 else 4)
    if vec not in (4, 8) or vec > block:
        raise ValueError(f"steps per vector must be 4 or 8 and at most the chunk ({block}), got {vec}")
    return vec


@functools.lru_cache(maxsize=None)
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


@functools.lru_cache(maxsize=4096)
def _plan(n_rows: int, T: int, time_contiguous: bool, itemsize: int, device: torch.device, cfg: Config):
    """Tile, warps, stages, vector, grid and time split of a launch: a pure function of its
    arguments (``_Scan`` keeps it).

    Fewer programs than ``cfg.min_programs`` (None: two per SM on CUDA, never elsewhere) leave
    the GPU idle while each walks its row. Rows of fewer than ``cfg.split_min_chunks`` wide
    chunks are then walked in wide chunks (``_tile``); longer ones are split in time: segments
    for four times that many programs, a launch writing each segment's composed map and one
    scanning each segment from its carry (short segments keep each launch to about one chunk's
    latency). Both choices by wall time per call: docs/DESIGN.md, "The time split". Interpreted on
    a CPU, a program takes more rows (docs/DESIGN.md, "The scan's tile")."""
    want = cfg.min_programs
    if want is None:
        want = 2 * _sm_count(device.index if device.index is not None else torch.cuda.current_device()) \
            if device.type == "cuda" else 0
    # (decided on the problem, not on the layout's tile: the same chunks, the same carries)
    n_programs = _checks.cdiv(n_rows, _tile(n_rows, T, True, itemsize, cfg)[0])
    few = n_programs < want
    wide = few and _checks.cdiv(T, min(cfg.wide_block, cfg.max_block_t)) < cfg.split_min_chunks
    rows, block, num_warps, stages, vec = _tile(n_rows, T, time_contiguous, itemsize, cfg, wide)
    if interpreted_on(device) and time_contiguous and cfg.tile is None:
        # interpreted, a program costs its operations whatever its lanes: fewer programs, of more rows
        rows = max(rows, min(4096 // block, _checks.next_power_of_2(n_rows)))
    n_chunks = _checks.cdiv(T, block)
    n_seg, seg = 1, n_chunks
    if few and not wide and n_chunks >= 2:
        seg = _checks.cdiv(n_chunks, min(n_chunks, _checks.cdiv(4 * want, n_programs)))
        n_seg = _checks.cdiv(n_chunks, seg)
    return rows, block, num_warps, stages, vec, _checks.cdiv(n_rows, rows), n_seg, seg


def looks_ahead_in_the_scan(n_rows: int, T: int, itemsize: int, device: torch.device) -> bool:
    """Whether a scan of ``n_rows`` rows of ``T`` steps (outputs of ``itemsize`` bytes) can look
    ahead itself (``launch``'s ``ahead``): whole rows, or a time split of two launches (the plan
    depends on the problem, never on the layout)."""
    cfg = current()
    plan = _plan(n_rows, T, True, itemsize, device, cfg)
    return ahead_fits(plan[6], plan[7] * plan[1], cfg)


def ahead_fits(n_seg: int, seg_steps: int, cfg: Config) -> bool:
    """A look-ahead inside a time split: the second launch puts back each segment's last present
    step (scan._composed_carry), which a middle launch would not; its offset in the segment is
    kept exactly in a float32 summary."""
    return n_seg == 1 or (n_seg <= cfg.compose and seg_steps <= 1 << 24)


def unzip(items):
    """``(tensor, strides)`` pairs (or None) as a tuple of tensors, one of strides ((0, 0) for an
    absent input, never read: the kernels test the pointer first) and the tensors' signature
    (``_checks.signature``: what Triton specialises on among the rest)."""
    ptrs = tuple(None if x is None else x[0] for x in items)
    return ptrs, strides(items), _checks.signature(ptrs)


def strides(items):
    """The strides of ``(tensor, strides)`` pairs, (0, 0) for None (as ``unzip``)."""
    return tuple((0, 0) if x is None else x[1] for x in items)


class Plan:
    """What a call's signature decides, made once: that its checks pass, the backend, the layout
    (the scans' time axis, the losses' ``_reduce.Layout``), whether a masked call's kernel may
    look ahead itself (``episode.looks_ahead``; None until asked), and, from the first call that
    launches, its launches (``planned``) and, where the call is one launch on its own tensors,
    ``replay``: ``replay(tensors, params)`` allocates the outputs and runs that launch (a later
    call without gradients goes straight there: ``episode.replayed``)."""

    __slots__ = ("use_kernel", "layout", "ahead", "launches", "replay")

    def __init__(self, use_kernel, layout):
        self.use_kernel, self.layout, self.ahead, self.launches, self.replay = use_kernel, layout, None, {}, None


def planned(plan, key, raw_x, P, raw_o, first, sign=()):
    """Launch ``plan``'s launch ``key`` (e.g. "forward", or a backward's) on the tensors ``raw_x``
    and ``raw_o`` as they come, with parameters ``P``; the signature of the tensors ``sign``
    (a backward's gradients) joins the key.

    Not known yet (or no plan): ``first()`` builds the (view, strides) pairs ``X`` and ``O``,
    launches through ``launch``, ``_reduce.reduce`` or ``_reduce.launch_map`` and returns
    ``(X, O, run, result)``; ``run`` (a ``_Scan``, ``_reduce._Reduction`` or ``_reduce._Map``)
    is kept with the strides when each pair starts where its raw tensor does (no copy: the
    kernels read a pointer and strides). Returns the launch's result (a reduction's totals)."""
    if plan is None:
        return first()[3]
    if sign:
        key = (key, _checks.signature(sign))
    kept = plan.launches.get(key)
    if kept is not None:
        SX, SO, run = kept
        return run(raw_x, SX, P, raw_o, SO)
    X, O, run, result = first()
    if run is not None and len(X) == len(raw_x) and all(map(_starts_at, X, raw_x)) \
            and all(map(_starts_at, O, raw_o)):
        plan.launches[key] = (strides(X), strides(O), run)
    return result


def _starts_at(x, r) -> bool:
    """Whether the (view, strides) pair ``x`` (or a pair of tuples: SAC's critics) starts at ``r``."""
    if x is None or r is None:
        return x is None and r is None
    if type(r) is tuple:
        return len(r) == len(x[0]) and all(_starts_at((v, None), t) for v, t in zip(x[0], r))
    return x[0].data_ptr() == r.data_ptr()


def call_key(args):
    """The key of a call's plan: its arguments' signature (``_checks.signature``) and the config;
    None (no plan: validate and plan from scratch) while torch.compile traces, or for arguments
    without a signature."""
    if torch.compiler.is_compiling():
        return None
    sig = _checks.signature(args)
    return None if sig is None else (sig, current())


def bounded(cache: dict, key, make):
    """``cache[key]``, made by ``make()`` if missing; a cache of more than 4096 plans (a caller
    whose shapes change with every call) starts again."""
    value = cache.get(key)
    if value is None:
        if len(cache) >= 4096:
            cache.clear()
        value = cache[key] = make()
    return value


def param_key(params):
    """What Triton specialises on in scalar parameters: an int's value, a float's type only."""
    return tuple(None if type(p) is float else p for p in params)


def launch(prologue, epilogue, inputs, params, outputs, n_rows, T, *, reverse, acc_dtype,
           initial=None, time_contiguous=True, end=None, ahead=None):
    """Run the scan kernel over ``n_rows`` rows of ``T`` steps.

    ``inputs``/``outputs`` are sequences of ``None`` or ``(tensor, (row_stride, time_stride))``;
    ``params`` a tuple of Python scalars; ``initial`` a contiguous per-row tensor or None;
    ``end`` a contiguous per-row tensor that gets the carry after each row's last step in scan
    order (a window of a longer row hands it on: distributed.py), or None; ``ahead`` a hook whose
    look-ahead the prologue reads (``scan._look_ahead``: masks as if deleted, in one launch), or None.

    Returns the launches' plan (``_Scan``), which runs the same problem on other tensors of the
    same signature (``scan(X, SX, P, O, SO, initial)``, tensors alone: no pairs to build).

    Few long rows leave the GPU idle, so time is then split across programs: a first launch writes
    each segment's composed map (the prologue alone), a second scans the segments again, each
    from its carry, with the epilogue. Up to ``Config.compose`` segments each program of the
    second launch composes the maps before its segment itself; beyond, a launch between them
    scans the maps into carries (the same recurrence, one step per segment). Deterministic: no
    atomics, a fixed order.
    """
    if n_rows == 0 or T == 0 or is_faking():
        return None
    X, SX, sx = unzip(inputs)
    O, SO, so = unzip(outputs)
    P = tuple(params)
    device = next(o for o in O if o is not None).device
    scan = _scan_of(prologue, epilogue, reverse, acc_dtype, n_rows, T, time_contiguous, SX, sx, O, SO, so, P, initial,
                    device, ahead)
    scan(X, SX, P, O, SO, initial, end)
    return scan


def _scan_of(prologue, epilogue, reverse, acc_dtype, n_rows, T, time_contiguous, SX, sx, O, SO, so, P, initial, device,
             ahead=None):
    """The ``_Scan`` of a problem, planned once for everything that decides it (``_SCANS``)."""
    cfg = current()
    key = (prologue, epilogue, reverse, acc_dtype, n_rows, T, time_contiguous, SX, SO, sx, so, param_key(P),
           _checks.signature((initial,)), device, cfg, ahead)
    return bounded(_SCANS, key, lambda: _Scan(prologue, epilogue, reverse, acc_dtype, n_rows, T, time_contiguous,
                                              O, device, cfg, ahead))


def summarize(prologue, epilogue, inputs, params, n_rows, T, *, reverse, acc_dtype, device, time_contiguous=True):
    """Each row's composed map: [n_rows, 3] of (A, B, reset) in ``acc_dtype``, the value entering
    the row's first step in scan order being B where reset, else B + A·carry. The prologue alone
    runs (``epilogue`` only names the launch); a time split's segment maps are composed here."""
    X, SX, sx = unzip(inputs)
    P = tuple(params)
    scan = _scan_of(prologue, epilogue, reverse, acc_dtype, n_rows, T, time_contiguous, SX, sx, (), (), None, P, None,
                    device)
    W = SUMMARY_WIDTH.value
    maps = torch.empty(n_rows, scan.n_seg, W, dtype=acc_dtype, device=device)
    if n_rows and T and not is_faking():
        scan.summarize(X, SX, P, (), (), None, maps, None, n_rows, T, scan.seg)
    else:
        maps[..., :3].copy_(torch.tensor([1.0, 0.0, 0.0], dtype=acc_dtype))  # the identity
    if scan.n_seg == 1:
        return maps[:, 0, :3]
    n_seg = scan.n_seg  # the segments' maps, in scan order: their map is one more summary
    seg_inputs = [(maps[..., k], (W * n_seg, W)) for k in range(3)]
    return summarize(_segments_prologue, _segments_epilogue, seg_inputs, (), n_rows, n_seg, reverse=False,
                     acc_dtype=acc_dtype, device=device)


_SCANS = {}  # launch()'s plans, by everything that decides them


class _Scan:
    """The launches of one scan problem (tile, grid, time split), planned once."""

    def __init__(self, prologue, epilogue, reverse, acc_dtype, n_rows, T, time_contiguous, O, device, cfg, ahead=None):
        out = next((o for o in O if o is not None), None)
        rows, block, num_warps, stages, vec, n_programs, self.n_seg, self.seg = _plan(
            n_rows, T, time_contiguous, 4 if out is None else out.element_size(), device, cfg)
        acc = tl.float64 if acc_dtype == torch.float64 else tl.float32
        # PROLOGUE, EPILOGUE, REVERSE, ACC, ROWS, BLOCK, V, STAGES, BLOCK_S, COMPOSE, AHEAD
        meta = (prologue, epilogue, reverse, acc, rows, block, vec, stages,
                min(_checks.next_power_of_2(self.n_seg), cfg.compose_block))
        grid = (n_programs, self.n_seg)
        # the scan kernel writes O (argument 3) and SUMMARY (6)
        self.final = Launch(_scan_kernel, grid, meta + (False, ahead), num_warps, (3, 7))
        self.summarize = Launch(_scan_kernel, grid, meta + (False, ahead), num_warps, (6,))
        self.compose = Launch(_scan_kernel, grid, meta + (True, ahead), num_warps, (3, 7))
        self.n_rows, self.T, self.acc_dtype, self.compose_max, self.device = n_rows, T, acc_dtype, cfg.compose, device
        if ahead is not None and not ahead_fits(self.n_seg, self.seg * block, cfg):
            raise ValueError("a look-ahead splits time in two launches only: episode.looks_ahead derives it first")

    def __call__(self, X, SX, P, O, SO, initial=None, end=None):
        """Launch the scan over the tensors ``X`` (strides ``SX``) into ``O`` (``SO``)."""
        n_rows, T, n_seg = self.n_rows, self.T, self.n_seg
        if n_seg == 1:
            self.final(X, SX, P, O, SO, initial, None, end, n_rows, T, self.seg)
            return
        W = SUMMARY_WIDTH.value
        summary = torch.empty(n_rows, n_seg, W, dtype=self.acc_dtype, device=self.device)
        self.summarize(X, SX, P, O, SO, None, summary, None, n_rows, T, self.seg)
        if n_seg <= self.compose_max:  # two launches: each segment composes its own carry
            self.compose(X, SX, P, O, SO, initial, summary, end, n_rows, T, self.seg)
            return
        carries = torch.empty(n_rows, n_seg, dtype=self.acc_dtype, device=self.device)
        seg_inputs = [(summary[..., k], (W * n_seg, W)) for k in range(3)]
        launch(_segments_prologue, _segments_epilogue, seg_inputs, (), [(carries, (n_seg, 1))], n_rows, n_seg,
               reverse=False, acc_dtype=self.acc_dtype, initial=initial)
        self.final(X, SX, P, O, SO, carries, None, end, n_rows, T, self.seg)


def use_triton(backend: str, device: torch.device) -> bool:
    """Resolve ``backend`` ("auto" | "triton" | "torch") for tensors on ``device``."""
    if backend == "torch":
        return False
    if backend == "auto":  # the interpreter is never the fast path: on a CPU, the torch path is
        return HAS_TRITON and device.type == "cuda"
    runs = HAS_TRITON and (device.type == "cuda" or interpreted_on(device))
    if not runs:
        if device.type not in ("cpu", "cuda"):
            raise ValueError(f"backend='triton' runs on CUDA tensors (or CPU ones under TRITON_INTERPRET=1), "
                             f"got {device.type} tensors; backend='torch' or 'auto' runs them on the PyTorch path")
        if not HAS_TRITON:
            raise ValueError("backend='triton' needs the triton package, which is not installed")
        raise ValueError(
            "backend='triton' on CPU tensors needs the Triton interpreter: set TRITON_INTERPRET=1 "
            "in the environment before importing rltriton_lite"
        )
    return runs
