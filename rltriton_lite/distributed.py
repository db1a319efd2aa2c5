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
