"""The losses over every rank of a ``torch.distributed`` group: the ``group`` keyword of
``ppo_clip_loss``, ``crr_loss`` and ``sac_actor_loss``.

Data-parallel RL gives each rank its own rollouts, but a mean over padded elements, PPO's
advantage normalisation and its statistics are only right over all of them: a mean of the ranks'
means weighs a rank with few unmasked elements as much as one with many. So each rank computes its
local sums with the one-process kernels, the ranks add them with one small collective (two with
normalisation: its mean and variance first), and each rank's loss is the global mean whose
gradient is that of its own elements, (local sum + the others' sums, constant) / global count.
No transport of our own: NCCL on GPUs, gloo on CPUs, as the group has them.

Ranks must agree on the call: each rank sends its dtype code and its call's kind with the first
collective, and every rank raises the same ValueError when they differ (no rank is left waiting).
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import torch

KINDS = ("ppo_clip_loss", "crr_loss", "sac_actor_loss")
_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _dist():
    import torch.distributed as dist  # (imported when a group is given: not every torch build has it)

    return dist


def _device(group, like: torch.Tensor) -> torch.device:
    """Where the group's collectives run: the tensors' GPU for NCCL, else the CPU (gloo)."""
    return like.device if _dist().get_backend(group) == "nccl" else torch.device("cpu")


def _gathered(group, kind: str, like: torch.Tensor, values) -> torch.Tensor:
    """[world, 2 + len(values)]: each rank's (kind, dtype code, values...), float64, all gathered:
    one collective, which also checks that the ranks agree (a ValueError on every rank if not)."""
    dist = _dist()
    dev = _device(group, like)
    head = torch.tensor([KINDS.index(kind), _DTYPES.index(like.dtype)], dtype=torch.float64, device=dev)
    mine = torch.cat([head, torch.stack([torch.as_tensor(v, dtype=torch.float64).reshape(()) for v in values]).to(dev)])
    out = [torch.empty_like(mine) for _ in range(dist.get_world_size(group))]
    dist.all_gather(out, mine, group=group)
    table = torch.stack(out)
    heads = table[:, :2].cpu()  # (a sync: the ranks' agreement is read on the host)
    if not bool((heads == heads[0]).all()):
        kinds = [KINDS[int(k)] for k in heads[:, 0]]
        dtypes = [str(_DTYPES[int(d)]).replace("torch.", "") for d in heads[:, 1]]
        raise ValueError(f"group: the ranks disagree on the call: {kind} on this rank; calls {kinds}, dtypes {dtypes} "
                         f"across ranks (every rank must call the same loss on the same dtype)")
    return table[:, 2:].to(like.device)


def _count(mask, like: torch.Tensor) -> torch.Tensor:
    return torch.tensor(float(like.numel()), dtype=torch.float64, device=like.device) if mask is None \
        else (mask != 0).sum().to(torch.float64)


def _global_mean(local_mean, local_count, totals_sum, totals_count):
    """The global mean as the value, the gradient of this rank's own elements' sum / global count."""
    local_sum = local_mean.to(torch.float64) * local_count
    n = totals_count.clamp(min=1)
    return ((local_sum + (totals_sum - local_sum).detach()) / n).to(local_mean.dtype)


def ppo_clip_loss(call, log_probs, old_log_probs, advantages, mask, normalize, reduction, group):
    """``call(advantages, normalize, reduction)``: the one-process ``ppo_clip_loss`` on this rank's
    elements; here with the normalisation, the mean and the statistics over every rank's."""
    n = _count(mask, log_probs)
    if normalize:  # the mean and the unbiased std over every rank's unmasked advantages
        a = advantages.detach().to(torch.float64)
        a_valid = a if mask is None else torch.where(mask != 0, a, 0.0)
        stats = _gathered(group, "ppo_clip_loss", log_probs, (n, a_valid.sum(), a_valid.square().sum())).sum(0)
        total, s, q = stats[0], stats[1], stats[2]
        mu = s / total.clamp(min=1)
        var = ((q - total * mu * mu) / (total - 1).clamp(min=1)).clamp(min=0)
        std = torch.where(total > 1, var.sqrt(), 0.0)
        advantages = ((a - mu) / (std + 1e-8)).to(advantages.dtype)
    local = call(advantages, False, "sum" if reduction == "mean" else reduction)
    if reduction == "none":
        stats = _gathered(group, "ppo_clip_loss", log_probs, (n, local.clip_fraction * n, local.approx_kl * n)).sum(0)
        n_all = stats[0].clamp(min=1)
        return local._replace(clip_fraction=(stats[1] / n_all).to(local.clip_fraction.dtype),
                              approx_kl=(stats[2] / n_all).to(local.approx_kl.dtype))
    sums = _gathered(group, "ppo_clip_loss", log_probs, (n, local.loss.detach(), local.clip_fraction * n,
                                                          local.approx_kl * n)).sum(0)
    n_all = sums[0].clamp(min=1)
    total = local.loss.to(torch.float64) + (sums[1] - local.loss.detach())  # every rank's sum, this rank's gradient
    loss = (total / n_all if reduction == "mean" else total).to(local.loss.dtype)
    return local._replace(loss=loss, clip_fraction=(sums[2] / n_all).to(local.clip_fraction.dtype),
                          approx_kl=(sums[3] / n_all).to(local.approx_kl.dtype))


def mean_loss(kind, loss, count_like, mask, group):
    """A loss that is a mean over this rank's unmasked elements, as the mean over every rank's."""
    n = _count(mask, count_like)
    sums = _gathered(group, kind, count_like, (n, loss.detach().to(torch.float64) * n)).sum(0)
    return _global_mean(loss, n, sums[1], sums[0])


# ---- Scans sharded in time: the ``time_group`` keyword --------------------------------------------
SCANS = ("linear_scan", "discounted_return", "gae", "td_lambda", "vtrace", "sac_targets")


class Window(NamedTuple):
    """One rank's share of a call sharded in time, as the algorithm's module hands it over.

    ``inputs``: the call's arguments by name (tensors, numbers, None); ``time_dim`` its time axis
    and ``like`` a tensor of its full shape. ``prepare(inputs, window, boundary)`` -> (problem,
    use_kernel): the rank's steps as a window of longer rows, ``window`` = (open: the rows go on
    after it, open_rows: a per-row bool of the rows that do where they differ, else None),
    ``boundary`` the per-row value after the window that V(s_{t+1}) reads there (None where
    nothing does). ``summary(problem, use_kernel)`` -> (A, B, reset), each [rows]: the window's
    composed map. ``run(problem, use_kernel, carry)`` -> the outputs, then the value entering the
    first step [rows], from ``carry`` [rows], the value after the window: differentiable in the
    inputs and the carry. ``empty()``: the outputs of a rank without steps. ``boundary`` and
    ``initial``: the names of the inputs whose last rank's value is the value after every window
    (bootstrap_value; linear_scan's initial). ``reverse``: the scan runs backwards in time (the
    carry comes from the ranks after); else forwards (from the ranks before: rank order reversed).
    """

    kind: str
    inputs: dict
    time_dim: int
    like: torch.Tensor
    prepare: object
    summary: object
    run: object
    empty: object
    boundary: str | None = None
    initial: str | None = None
    reverse: bool = True


def _gather(group, x: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """[world, *x.shape]: every rank's ``x`` (as float64 over the group's device), in rank order."""
    dist = _dist()
    x = x.detach().to(torch.float64).to(_device(group, like))
    out = [torch.empty_like(x) for _ in range(dist.get_world_size(group))]
    dist.all_gather(out, x, group=group)
    return torch.stack(out).to(like.device)


def _per_row(x, w: Window, rows: int):
    """A per-row input (broadcastable to the batch shape) as [rows], float64; zeros for None."""
    if x is None:
        return torch.zeros(rows, dtype=torch.float64, device=w.like.device)
    batch = w.like.movedim(w.time_dim, -1).shape[:-1]
    return x.to(torch.float64).expand(batch).reshape(rows)


def _rows(x, w: Window):
    """A per-step input as [rows, steps] (time last)."""
    return x.movedim(w.time_dim, -1).reshape(-1, w.like.shape[w.time_dim])


def _owners(has, world: int) -> torch.Tensor:
    """[world, rows]: the rank after k with the row's next unmasked step, whose first value is the
    value after k's window; -1 where no rank after k has one (the last rank's tail value)."""
    owner = torch.full_like(has[0], -1, dtype=torch.long)
    out = [owner]
    for k in range(world - 1, 0, -1):
        owner = torch.where(has[k], k, owner)
        out.append(owner)
    return torch.stack(out[::-1])


def time_sharded(w: Window, group):
    """The outputs of ``w``'s call over the rows of every rank's steps in rank order: this rank's
    share, differentiable as the one-process call (docs/DESIGN.md, "Across processes")."""
    return _eager()(w, group)


def _time_sharded(w: Window, group):
    names = [k for k, v in w.inputs.items() if isinstance(v, torch.Tensor)]
    return _TimeSharded.apply(w, group, names, *(w.inputs[k] for k in names))


@functools.cache
def _eager():
    # collectives and their host-side composition run eagerly inside a compiled graph; made at the
    # first call, since torch.compiler.disable imports torch._dynamo (a second; calls without a group never pay it)
    return torch.compiler.disable(_time_sharded)


class _TimeSharded(torch.autograd.Function):
    """Forwards: the ranks agree on the call (a header); exchange what a window's end reads
    (which rows have an unmasked step, its first value, the last rank's tail values); summarize
    their windows as maps and exchange them; scan each window from the carry composed from the
    ranks after it. Backwards, the mirror: each window's gradient into the carry after it,
    exchanged and composed over the ranks before; each window from what flows in; then the
    boundary values' gradients back to the ranks that hold them. Five small all_gathers."""

    @staticmethod
    def forward(ctx, w, group, names, *tensors):
        dist = _dist()
        world = dist.get_world_size(group)
        # positions in scan order: rank order for a reverse scan, reversed for a forward one
        rank = dist.get_rank(group) if w.reverse else world - 1 - dist.get_rank(group)
        gather = (lambda x: _gather(group, x, w.like)) if w.reverse else (lambda x: _gather(group, x, w.like).flip(0))
        steps = w.like.shape[w.time_dim]
        rows = math.prod(w.like.movedim(w.time_dim, -1).shape[:-1])
        values, mask = w.inputs.get("values"), w.inputs.get("mask")
        # 1. the header: every rank the same call (else the same error on every rank, before any row data)
        coef_grad = any(isinstance(w.inputs.get(k), torch.Tensor) and w.inputs[k].requires_grad
                        for k in ("gamma", "lambda_"))
        head = torch.tensor([SCANS.index(w.kind), _DTYPES.index(w.like.dtype), rows, values is not None,
                             w.boundary is not None, coef_grad, steps], dtype=torch.float64)
        heads = gather(head).cpu()
        if not bool((heads[:, :6] == heads[0, :6]).all()):
            calls = [f"{SCANS[int(h[0])]}({str(_DTYPES[int(h[1])]).replace('torch.', '')}, {int(h[2])} rows, "
                     f"{'with' if h[3] else 'without'} values, {'without' if h[4] else 'with'} next_values)"
                     for h in heads]
            raise ValueError(f"time_group: the ranks disagree on the call: {', '.join(calls)}; every rank must "
                             f"call the same function on the same rows and dtype, with its own steps")
        if coef_grad:
            raise ValueError("time_group: gamma and lambda_ tensors that require grad are not supported across "
                             "ranks (their gradients would need the windows' maps differentiated)")
        later = bool((heads[rank + 1:, 6] > 0).any())
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_(t.requires_grad) for t in tensors]
            inputs = dict(w.inputs, **dict(zip(names, leaves)))
            # 2. what the windows' ends read: which rows have an unmasked step, the first one's value
            has = torch.zeros(rows, dtype=torch.bool, device=w.like.device)
            first = torch.zeros(rows, dtype=torch.long, device=w.like.device)
            if steps and mask is None:
                has = torch.ones(rows, dtype=torch.bool, device=w.like.device)
            elif steps:
                unmasked = _rows(mask, w) != 0
                has, first = unmasked.any(-1), unmasked.to(torch.int8).argmax(-1)
            v_first = torch.zeros(rows, dtype=torch.float64, device=w.like.device)
            if values is not None and steps:
                v = _rows(inputs["values"], w).gather(-1, first[:, None])[:, 0]
                v_first = torch.where(has, v.to(torch.float64), 0.0)
            tails = [_per_row(inputs.get(name) if name else None, w, rows) for name in (w.boundary, w.initial)]
            table = gather(torch.stack([has.to(torch.float64), v_first, *tails]))
            owners = _owners(table[:, 0] != 0, world)
            open_rows = owners[rank] >= 0
            boundary = None
            if w.boundary is not None:
                after = table[owners[rank].clamp(min=0), 1, torch.arange(rows, device=w.like.device)]
                boundary = torch.where(open_rows, after, table[-1, 2]).to(w.like.dtype).requires_grad_()
            window = (later, None if mask is None and bool((open_rows == later).all()) else open_rows)
            if window[1] is not None and mask is None:  # (rows end here in other ranks' masks: derived ends)
                inputs["mask"] = torch.ones((), dtype=torch.bool, device=w.like.device).expand(w.like.shape)
            # 3. each window's map (an error in one rank's window raised on every rank), exchanged; the
            # carry entering this window composed from the ranks after it
            failed = None
            maps = torch.tensor([[1.0], [0.0], [0.0], [0.0]], dtype=torch.float64,
                                device=w.like.device).expand(4, rows)  # the identity, no error
            if steps:
                try:
                    p, use_kernel = w.prepare(inputs, window, boundary)
                    maps = torch.stack([m.reshape(rows).to(torch.float64) for m in w.summary(p, use_kernel)]
                                       + [torch.zeros(rows, dtype=torch.float64, device=w.like.device)])
                except (TypeError, ValueError) as e:
                    failed, maps = e, maps.clone()
                    maps[3] = 1.0
            maps = gather(maps)
            bad = [k for k in range(world) if bool(maps[k, 3].any())]
            if failed is not None:
                raise failed
            if bad:
                raise ValueError(f"time_group: rank {bad[0]} of the group refused its arguments (its error says why)")
            carry = table[-1, 3]
            for k in range(world - 1, rank, -1):
                carry = torch.where(maps[k, 2] != 0, maps[k, 1], maps[k, 1] + maps[k, 0] * carry)
            carry = carry.to(w.like.dtype).requires_grad_()
            outs, end = ((), None)
            if steps:
                *outs, end = w.run(p, use_kernel, carry)
        ctx.w, ctx.gather, ctx.rank, ctx.world, ctx.rows = w, gather, rank, world, rows
        ctx.graph = (tuple(outs), end, leaves, boundary, carry, v_first, tails)
        ctx.maps, ctx.owners = maps, owners
        return tuple(o.detach() for o in outs) if steps else w.empty()

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, *d_outs):
        w, gather, rank, world, rows = ctx.w, ctx.gather, ctx.rank, ctx.world, ctx.rows
        outs, end, leaves, boundary, carry, v_first, tails = ctx.graph
        zeros = torch.zeros(rows, dtype=torch.float64, device=w.like.device)
        d_outs = [torch.zeros_like(o) if d is None else d for o, d in zip(outs, d_outs)]
        # 1. what this window sends into the carry after it, with nothing flowing in before it
        sent = zeros
        if outs:
            (g,) = torch.autograd.grad(outs, [carry], d_outs, retain_graph=True, allow_unused=True)
            sent = zeros if g is None else g.to(torch.float64)
        sent = gather(sent)
        # 2. what flows in before it, composed over the ranks before this one in their order
        x = zeros
        for k in range(rank):
            x = torch.where(ctx.maps[k, 2] != 0, sent[k], sent[k] + ctx.maps[k, 0] * x)
        wanted = [t for t in leaves if t.requires_grad]
        extra = [t for t in (boundary, carry) if t is not None]
        grads = [None] * (len(wanted) + len(extra))
        if outs:
            grads = list(torch.autograd.grad(list(outs) + [end], wanted + extra, d_outs + [x.to(end.dtype)],
                                             retain_graph=True, allow_unused=True))
        d_carry = grads.pop() if outs else x  # (a window without steps passes the carry through)
        d_boundary = grads.pop() if boundary is not None else None
        # 3. the boundary values' gradients back to the ranks whose values they are
        routed = gather(zeros if d_boundary is None else d_boundary.to(torch.float64))
        mine = torch.where(ctx.owners == rank, routed, 0.0).sum(0)
        last = rank == world - 1
        tail = torch.where(ctx.owners < 0, routed, 0.0).sum(0) if last else zeros
        heads = [(v_first, mine), (tails[0], tail)]
        if last and d_carry is not None:
            heads.append((tails[1], d_carry.to(torch.float64)))
        heads = [(y, g) for y, g in heads if y.requires_grad]
        more = [None] * len(wanted)
        if heads and wanted:
            more = torch.autograd.grad([y for y, _ in heads], wanted, [g for _, g in heads], allow_unused=True)
        got = iter(a if b is None else b if a is None else a + b for a, b in zip(grads, more))
        return (None, None, None, *(next(got) if t.requires_grad else None for t in leaves))
