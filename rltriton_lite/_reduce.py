r"""The losses' half of the primitive: a fused elementwise map and a deterministic sum.

A sum is an associative scan whose last element is the answer; PPO's clipped surrogate, the
SAC actor loss and CRR are an elementwise prologue followed by such a sum. The reduction runs in
two stages with a fixed order, so the result is bitwise reproducible (no float atomics):

1. ``_partials_kernel``: each program maps a tile of rows × steps through ``ELEMENTWISE``
   (which may also store per-element outputs, such as CRR's weights) and writes the tile's sums
   of the ``N_STATS`` statistics it returns to ``partials[program, k]``;
2. ``_finish_kernel``: one program adds the partials in program order.

``ELEMENTWISE(X, SX, P, O, SO, row, t, m, ACC) -> tuple of N_STATS tensors`` sees the same
rows × time view as the scan's hooks (``scan.load``/``scan.store`` and friends work), with
``m`` the in-bounds mask; statistics must be 0 where ``m`` is False.
"""
from __future__ import annotations

import torch

from . import _checks
from ._triton import jit, tl


@jit
def _partials_kernel(
    X, SX,  # input pointers (None when absent) and their (row, time) strides
    P,  # scalar parameters for the hook
    O, SO,  # per-element outputs (None when absent) and their strides
    PART,  # float32/float64 [n_programs, N_STATS]: this program's sums
    n_rows, T,  # the rows × time problem
    ELEMENTWISE: tl.constexpr,  # jit fn: -> tuple of N_STATS per-element statistics
    N_STATS: tl.constexpr,
    ACC: tl.constexpr,  # accumulation dtype
    ROWS: tl.constexpr, BLOCK: tl.constexpr,  # tile: rows × time steps
):
    pid_r = tl.program_id(0)
    pid_t = tl.program_id(1)
    o_r = pid_r * ROWS + tl.arange(0, ROWS)
    row = o_r.to(tl.int64)[:, None]
    t = (pid_t * BLOCK + tl.arange(0, BLOCK)).to(tl.int64)[None, :]
    m = (o_r[:, None] < n_rows) & (t < T)
    stats = ELEMENTWISE(X, SX, P, O, SO, row, t, m, ACC)
    pid = pid_r * tl.num_programs(1) + pid_t
    for k in tl.static_range(N_STATS):
        tl.store(PART + pid * N_STATS + k, tl.sum(tl.sum(stats[k].to(ACC), axis=1), axis=0))


@jit
def _finish_kernel(
    PART,  # [n_parts, N_STATS] partial sums
    OUT,  # [N_STATS] totals
    n_parts,
    N_STATS: tl.constexpr,
    BLOCK: tl.constexpr,  # partials added per step (a power of two >= N_STATS)
):
    o_k = tl.arange(0, BLOCK)[None, :]
    o_p = tl.arange(0, BLOCK)[:, None]
    total = tl.zeros([BLOCK], PART.dtype.element_ty)
    for start in range(0, n_parts, BLOCK):
        m = (start + o_p < n_parts) & (o_k < N_STATS)
        total += tl.sum(tl.load(PART + (start + o_p) * N_STATS + o_k, mask=m, other=0.0), axis=0)
    tl.store(OUT + tl.arange(0, BLOCK), total, mask=tl.arange(0, BLOCK) < N_STATS)


def _tile(n_rows: int, T: int):
    block = min(max(_checks.next_power_of_2(T), 16), 1024)
    rows = max(1, min(4096 // block, _checks.next_power_of_2(n_rows)))
    return rows, block


def reduce(elementwise, n_stats, inputs, params, outputs, n_rows, T, acc_dtype, device):
    """Run ``elementwise`` over the (n_rows, T) problem and return the ``n_stats`` sums.

    ``inputs``/``outputs``: sequences of None or ``(tensor, (row_stride, time_stride))`` as for
    :func:`rltriton_lite.scan.launch`. Returns a tensor of shape ``[n_stats]`` in ``acc_dtype``.
    """
    X = tuple(None if x is None else x[0] for x in inputs)
    SX = tuple((0, 0) if x is None else x[1] for x in inputs)
    O = tuple(None if o is None else o[0] for o in outputs)
    SO = tuple((0, 0) if o is None else o[1] for o in outputs)
    acc = tl.float64 if acc_dtype == torch.float64 else tl.float32
    totals = torch.zeros(n_stats, dtype=acc_dtype, device=device)
    if n_rows == 0 or T == 0:
        return totals
    rows, block = _tile(n_rows, T)
    grid = (_checks.cdiv(n_rows, rows), _checks.cdiv(T, block))
    partials = torch.empty(grid[0] * grid[1], n_stats, dtype=acc_dtype, device=device)
    _partials_kernel[grid](X, SX, tuple(params), O, SO, partials, n_rows, T, ELEMENTWISE=elementwise,
                           N_STATS=n_stats, ACC=acc, ROWS=rows, BLOCK=block,
                           num_warps=4 if rows * block <= 2048 else 8)
    _finish_kernel[(1,)](partials, totals, partials.shape[0], N_STATS=n_stats,
                         BLOCK=max(_checks.next_power_of_2(n_stats), 16))
    return totals
