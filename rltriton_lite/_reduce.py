r"""The losses' half of the primitive: a fused elementwise map and a deterministic sum.

A sum is an associative scan whose last element is the answer; PPO's clipped surrogate, the
SAC actor loss and CRR are an elementwise prologue followed by such a sum. The reduction runs in
two stages with a fixed order, so the result is bitwise reproducible (no float atomics):

1. ``_partials_kernel``: each program maps a tile of rows × steps through ``ELEMENTWISE``
   (which may also store per-element outputs, such as CRR's weights) and writes the tile's sums
   of the ``N_STATS`` statistics it returns to ``partials[program, k]``;
2. ``_finish_kernel``: one program adds the partials, up to ``Config.finish_block`` at a time, in a fixed
   order. A problem of one tile-program (a small loss) skips it: that program finishes itself.

``ELEMENTWISE(X, SX, P, O, SO, row, t, m, ACC) -> tuple of N_STATS tensors`` sees the same
rows × time view as the scan's hooks (``tile.load``/``tile.store`` and friends work), with
``m`` the in-bounds mask; statistics must be 0 where ``m`` is False.
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from . import _checks
from ._triton import Launch, _tensors, interpreted_on, is_faking, jit, tl
from .config import Config, current
from .plan import bounded, param_key, unzip
from .tile import load, store


@jit
def _tile_index(tile_r, tile_t, n_rows, T, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """Tile (tile_r, tile_t) of the rows × T problem: (row, t, in-bounds mask), int64 indices.
    A tile past the last row is all masked."""
    o_r = tile_r.to(tl.int64) * ROWS + tl.arange(0, ROWS)
    t = (tile_t.to(tl.int64) * BLOCK + tl.arange(0, BLOCK))[None, :]
    return o_r[:, None], t, (o_r[:, None] < n_rows) & (t < T)


@jit
def _partials_kernel(
    X, SX,  # input pointers (None when absent) and their (row, time) strides
    P,  # scalar parameters for the hook
    O, SO,  # per-element outputs (None when absent) and their strides
    PART,  # float32/float64 [n_programs, N_STATS]: this program's sums
    n_rows, T,  # the rows × time problem
    tiles,  # consecutive tiles per program (numbered row-major over the problem); a runtime
            # number, so that a new batch size compiles nothing
    ELEMENTWISE: tl.constexpr,  # jit fn: -> tuple of N_STATS per-element statistics
    N_STATS: tl.constexpr,
    ACC: tl.constexpr,  # accumulation dtype
    ROWS: tl.constexpr, BLOCK: tl.constexpr,  # tile: rows × time steps
    STAGES: tl.constexpr,  # tiles whose loads are in flight at once
    COUNT: tl.constexpr,  # as _finish_kernel's, for FINISH
    FINISH: tl.constexpr,  # one program: it writes the totals (or means) itself, no finishing launch
):
    # Statistics add up element by element over the program's tiles and are summed across the
    # tile once at the end: one tree reduction per statistic per program, not per tile
    n_t = tl.cdiv(T, BLOCK)
    first = tl.program_id(0) * tiles
    row, t, m = _tile_index(first // n_t, first % n_t, n_rows, T, ROWS, BLOCK)
    acc = ELEMENTWISE(X, SX, P, O, SO, row, t, m, ACC)
    for i in tl.range(first + 1, first + tiles, num_stages=STAGES):
        row, t, m = _tile_index(i // n_t, i % n_t, n_rows, T, ROWS, BLOCK)
        acc = _add_stats(acc, ELEMENTWISE(X, SX, P, O, SO, row, t, m, ACC), N_STATS)
    if FINISH and COUNT >= 0:  # as _finish_kernel does
        inv_n = 1.0 / tl.maximum(tl.sum(tl.sum(acc[COUNT].to(ACC), axis=1), axis=0), 1.0)
    for k in tl.static_range(N_STATS):
        total = tl.sum(tl.sum(acc[k].to(ACC), axis=1), axis=0)
        if FINISH and COUNT >= 0:
            if k == COUNT:
                total = inv_n
            else:
                total = total * inv_n
        tl.store(PART + tl.program_id(0) * N_STATS + k, total)


@jit
def _add_stats(a, b, N_STATS: tl.constexpr):
    """The statistics ``a + b``, one by one (a tuple of N_STATS tensors)."""
    out = ()
    for k in tl.static_range(N_STATS):
        out = out + (a[k] + b[k],)
    return out


@jit
def _finish_kernel(
    PART,  # [n_parts, N_STATS] partial sums
    OUT,  # [N_STATS] totals, or means (see COUNT)
    n_parts,
    N_STATS: tl.constexpr,
    COUNT: tl.constexpr,  # -1: totals; else the statistic counting a mean's elements: every other
                          # total is divided by max(count, 1), and the count becomes 1/max(count, 1)
    BLOCK_P: tl.constexpr,  # partials added per step: a tile of BLOCK_P × BLOCK_K, summed as a tree
    BLOCK_K: tl.constexpr,  # statistics, padded to a power of two
):
    o_p = tl.arange(0, BLOCK_P)[:, None]
    o_k = tl.arange(0, BLOCK_K)
    total = tl.zeros([BLOCK_K], PART.dtype.element_ty)
    for start in range(0, n_parts, BLOCK_P):  # few steps: BLOCK_P is up to Config.finish_block partials
        m = (start + o_p < n_parts) & (o_k[None, :] < N_STATS)
        total += tl.sum(tl.load(PART + (start + o_p) * N_STATS + o_k[None, :], mask=m, other=0.0), axis=0)
    if COUNT >= 0:
        inv_n = 1.0 / tl.maximum(tl.sum(tl.where(o_k == COUNT, total, 0.0), axis=0), 1.0)
        total = tl.where(o_k == COUNT, inv_n, total * inv_n)
    tl.store(OUT + o_k, total, mask=o_k < N_STATS)


def _tile(n_rows: int, T: int, elements: int, min_programs: int = 0):
    """(rows, steps) of a tile: up to ``elements`` elements, a row's steps contiguous (at most a
    quarter of them); fewer rows until the grid has ``min_programs`` tiles."""
    block = min(max(_checks.next_power_of_2(T), 16), max(elements // 4, 16))
    rows = max(1, min(elements // block, _checks.next_power_of_2(n_rows)))
    while rows > 1 and _checks.cdiv(n_rows, rows) * _checks.cdiv(T, block) < min_programs:
        rows //= 2
    return rows, block


def _min_programs(cfg: Config, device: torch.device) -> int:
    """Programs a map's tiles shrink for: none where an interpreted program costs its operations
    whatever its width (a CPU)."""
    return 0 if interpreted_on(device) else cfg.map_min_programs


def _partials_config(n_rows: int, T: int, stores: bool, cfg: Config, device: torch.device):
    """(rows, steps, warps, tiles per program, stages) of the partial-sum launch; ``stores``:
    the hook also writes per-element outputs (then one tile per program, as a map's: a loop made
    CRR slower; docs/DESIGN.md, "Reductions")."""
    if stores:
        rows, block = _tile(n_rows, T, cfg.tile_elements, _min_programs(cfg, device))
    else:
        rows, block = _tile(n_rows, T, cfg.reduce_tile_elements)
    n_tiles = _checks.cdiv(n_rows, rows) * _checks.cdiv(T, block)
    tiles = 1 if stores else max(1, n_tiles // max(cfg.partial_programs, 1))
    return rows, block, 4 if rows * block <= 2048 else 8, tiles, cfg.partial_stages if tiles > 1 else 1


def reduce(elementwise, n_stats, inputs, params, outputs, n_rows, T, acc_dtype, device, count=None):
    """Run ``elementwise`` over the (n_rows, T) problem and return the ``n_stats`` sums.

    ``inputs``/``outputs``: sequences of None or ``(tensor, (row_stride, time_stride))`` as for
    :func:`rltriton_lite.plan.launch`. Returns a tensor of shape ``[n_stats]`` in ``acc_dtype``,
    and the launches' plan (``_Reduction``, called with tensors as ``plan._Scan`` is).
    With ``count`` (the index of the statistic counting the elements of a mean) the sums come
    back as means instead, each divided by max(count, 1) in the finishing kernel, and at
    ``count`` the factor 1/max(count, 1) itself (a mean over no element is 0): a loss then needs
    no further arithmetic on the host's side.
    """
    if is_faking():
        return torch.empty(n_stats, dtype=acc_dtype, device=device), None
    X, SX, sx = unzip(inputs)
    O, SO, so = unzip(outputs)
    if n_rows == 0 or T == 0:
        totals = torch.zeros(n_stats, dtype=acc_dtype, device=device)
        if count is not None:
            totals[count] = 1.0
        return totals, None
    P = tuple(params)
    cfg = current()
    key = (elementwise, n_stats, acc_dtype, n_rows, T, SX, SO, sx, so, param_key(P), device, count, cfg)
    run = bounded(_REDUCTIONS, key, lambda: _Reduction(elementwise, n_stats, n_rows, T, acc_dtype, O, device, count,
                                                       cfg))
    return run(X, SX, P, O, SO), run


_REDUCTIONS = {}  # reduce()'s plans, by everything that decides them


class _Reduction:
    """The two launches of one reduction (one if a single program takes every tile), planned once."""

    def __init__(self, elementwise, n_stats, n_rows, T, acc_dtype, O, device, count, cfg):
        rows, block, warps, self.tiles, stages = _partials_config(n_rows, T, any(o is not None for o in O), cfg,
                                                                  device)
        self.n_parts = _checks.cdiv(_checks.cdiv(n_rows, rows) * _checks.cdiv(T, block), self.tiles)
        acc = tl.float64 if acc_dtype == torch.float64 else tl.float32
        count = -1 if count is None else count
        # ELEMENTWISE, N_STATS, ACC, ROWS, BLOCK, STAGES, COUNT, FINISH; writes O (3) and PART (5)
        self.partials = Launch(_partials_kernel, (self.n_parts,), (elementwise, n_stats, acc, rows, block, stages,
                                                                   count, self.n_parts == 1), warps, (3, 5))
        # N_STATS, COUNT, BLOCK_P, BLOCK_K; writes OUT (1)
        block_p = min(max(_checks.next_power_of_2(self.n_parts), 16), cfg.finish_block)
        self.finish = Launch(_finish_kernel, (1,), (n_stats, count, block_p, max(_checks.next_power_of_2(n_stats), 2)),
                             4 if block_p <= 1024 else 8, (1,))
        self.n_rows, self.T, self.n_stats = n_rows, T, n_stats
        self.like = torch.empty(0, dtype=acc_dtype, device=device)  # new_empty: cheaper than dtype and device

    def __call__(self, X, SX, P, O, SO):
        """The sums (or means) of the statistics over the tensors ``X`` (strides ``SX``)."""
        totals = self.like.new_empty((self.n_stats,))
        if self.n_parts == 1:  # the one program finishes (small losses: a launch less of host time)
            self.partials(X, SX, P, O, SO, totals, self.n_rows, self.T, self.tiles)
            return totals
        partials = self.like.new_empty((self.n_parts, self.n_stats))
        self.partials(X, SX, P, O, SO, partials, self.n_rows, self.T, self.tiles)
        self.finish(partials, totals, self.n_parts)
        return totals


# ---- Shared by the losses: the rows × T view of any shape, float64-safe scalars, the backward map ----
class Layout(NamedTuple):
    """How an input of any shape is seen as the kernels' rows × T problem.

    The losses have no time axis: every element is independent. The dims are ordered from the
    largest stride to the smallest (size-1 dims first), so the last one, the "time" axis of the
    view, is the contiguous one when there is one: a time-major buffer or a transposed tensor is
    read along its memory order, and outputs are laid out the same way.
    """

    order: tuple  # dims, outermost first
    shape: torch.Size
    n_rows: int
    T: int
    natural: bool = False  # ``order`` keeps the dims of ``shape`` that have more than one element in
                           # their order: a contiguous tensor is then its own (rows, T) view

    @staticmethod
    def of(x: torch.Tensor) -> "Layout":
        # bool(): a plain bool also for symbolic sizes (torch.compile's dynamic shapes)
        order = tuple(sorted(range(x.dim()), key=lambda d: (bool(x.shape[d] > 1), -x.stride(d), d)))
        return Layout.make(order, x.shape)

    @staticmethod
    def make(order: tuple, shape) -> "Layout":
        """The layout of a tensor of ``shape`` whose dims :meth:`of` ordered as ``order``."""
        T = shape[order[-1]] if order else 1
        n = 1
        for s in shape:
            n = n * s
        dims = [d for d in order if bool(shape[d] > 1)]
        return Layout(order, torch.Size(shape), n // max(T, 1), T, dims == sorted(dims))

    def rows(self, x: torch.Tensor | None):
        """``x`` (of ``shape``) as a (rows, T) view, or a copy if its layout differs, and its
        strides. A contiguous ``x`` in a natural layout goes as it is (the kernels read a pointer
        and strides), with no torch call."""
        if x is None:
            return None
        if self.natural and x.is_contiguous():
            return x, (self.T, 1)
        v = x.permute(self.order).reshape(self.n_rows, self.T)
        return v, (v.stride(0), v.stride(1))

    def rows_k(self, x: torch.Tensor):
        """``x`` with one more trailing dim K as (rows, T, K) and its three strides."""
        if self.natural and x.is_contiguous():
            K = x.shape[-1]
            return x, (self.T * K, K, 1)
        v = x.permute(self.order + (len(self.order),)).reshape(self.n_rows, self.T, x.shape[-1])
        return v, (v.stride(0), v.stride(1), v.stride(2))

    def new(self, dtype, like: torch.Tensor) -> torch.Tensor:
        """An output of ``shape`` (``like``'s, on its device) whose (rows, T) view needs no copy."""
        if self.natural:  # (empty_like: half the host time of torch.empty with a shape)
            return torch.empty_like(like, dtype=dtype, memory_format=torch.contiguous_format)
        buf = torch.empty([self.shape[d] for d in self.order], dtype=dtype, device=like.device)
        inverse = sorted(range(len(self.order)), key=lambda i: self.order[i])
        return buf.permute(inverse)


def vector(values, acc: torch.dtype, device):
    """Scalar parameters as a float64 vector for float64 problems (Triton passes Python floats
    as float32), else None: the kernels then read the numbers in ``P``."""
    if acc != torch.float64:
        return None
    return _checks.scalars(values, acc, device), (0, 0)


def upstream(grad: torch.Tensor, reduction: str, inv_n: torch.Tensor, layout: Layout):
    """The gradient flowing into a loss as a kernel input, a pair (gradient, factor): per element
    for ``reduction="none"``, else one number, and 1/N for a mean (multiplied in the kernel: no
    torch op). One number goes as a per-row input of row stride 0 (strides (0, None): ``tile.load``
    reads it once per row of a tile); strides (0, 0) would read it once per element, in scalar
    loads: the addresses are not known to repeat."""
    if reduction == "none":
        g, s = layout.rows(grad)
        return (g, None), (s, (0, 0))
    return (grad, inv_n if reduction == "mean" else None), ((0, None), (0, None))


@jit
def param(p, i, value, ACC: tl.constexpr):
    """Scalar parameter ``i``: read from the float64 vector ``p`` if given, else the number."""
    if p is None:
        return value
    else:
        return tl.load(p + i).to(ACC)


@jit
def load_upstream(G, SG, row, t, m, ACC: tl.constexpr):
    """The upstream gradient ``upstream`` passes (a pair: the gradient, and 1/N or None)."""
    g = load(G[0], SG[0], row, t, m, 0.0, ACC)
    if G[1] is not None:
        g = g * load(G[1], SG[1], row, t, m, 0.0, ACC)
    return g


@jit
def store_grad(G, SG, p_out, s_out, row, t, m, m_valid, d, ACC: tl.constexpr):
    """Store the input gradient ``g * d``: ``d`` is the per-element derivative of the loss, ``g``
    the upstream gradient (``load_upstream``); 0 where not valid."""
    store(p_out, s_out, row, t, m, tl.where(m_valid, load_upstream(G, SG, row, t, m_valid, ACC) * d, 0.0))


@jit
def _map_kernel(
    X, SX,  # input pointers (None when absent) and their (row, time) strides
    P,  # scalar parameters for the hook
    O, SO,  # output pointers and their strides, written by the hook
    n_rows, T,  # the rows × time problem
    ELEMENTWISE: tl.constexpr,  # jit fn (X, SX, P, O, SO, row, t, m, ACC): stores its outputs
    ACC: tl.constexpr,  # arithmetic dtype
    ROWS: tl.constexpr, BLOCK: tl.constexpr,  # tile: rows × time steps
):
    row, t, m = _tile_index(tl.program_id(0), tl.program_id(1), n_rows, T, ROWS, BLOCK)
    ELEMENTWISE(X, SX, P, O, SO, row, t, m, ACC)


def launch_map(elementwise, inputs, params, outputs, n_rows: int, T: int, acc_dtype, time_contiguous=True):
    """Run ``elementwise`` over every element of the (n_rows, T) problem once (the losses'
    backward passes, SAC's one-step target: no reduction, no recurrence).

    ``inputs``/``outputs`` as for :func:`rltriton_lite._reduce.reduce`. ``time_contiguous``
    False (rows are the contiguous axis, a time-major buffer): the tile is many rows by few
    steps, so that a warp's loads stay contiguous. Returns the launch's plan (``_Map``).
    """
    if is_faking():
        return None
    X, SX, sx = unzip(inputs)
    O, SO, so = unzip(outputs)
    P = tuple(params)
    cfg = current()
    device = _tensors(O)[0].device
    key = (elementwise, acc_dtype, n_rows, T, time_contiguous, SX, SO, sx, so, param_key(P), device, cfg)
    run = bounded(_MAPS, key, lambda: _Map(elementwise, n_rows, T, acc_dtype, time_contiguous, cfg, device))
    run(X, SX, P, O, SO)
    return run


_MAPS = {}  # launch_map()'s plans


class _Map:
    """The launch of one map problem, planned once; called with tensors as ``plan._Scan`` is."""

    def __init__(self, elementwise, n_rows, T, acc_dtype, time_contiguous, cfg, device):
        if time_contiguous:
            rows, block = _tile(n_rows, T, cfg.tile_elements, _min_programs(cfg, device))
        else:
            block, rows = _tile(T, n_rows, cfg.tile_elements, _min_programs(cfg, device))
        grid = (_checks.cdiv(n_rows, rows), _checks.cdiv(T, block))
        # ELEMENTWISE, ACC, ROWS, BLOCK; writes O (3)
        self.launch = Launch(_map_kernel, grid, (elementwise, tl.float64 if acc_dtype == torch.float64 else tl.float32,
                                                 rows, block), 4 if rows * block <= 2048 else 8, (3,))
        self.n_rows, self.T = n_rows, T

    def __call__(self, X, SX, P, O, SO):
        self.launch(X, SX, P, O, SO, self.n_rows, self.T)
