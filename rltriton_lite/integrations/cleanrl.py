"""CleanRL's GAE (ppo.py and its variants) as one call.

CleanRL stores ``dones[t]`` = "the episode ended before step t" (the ``next_done`` of the step
before) and keeps ``next_done`` and ``next_value`` for the step after the rollout. Its loop cuts
the trace and the bootstrap at step t where ``dones[t + 1]`` (or ``next_done`` at the last step)
is set: that is ``terminated`` shifted by one step. Passing ``dones`` unshifted as ``terminated``
would be silently wrong, which is what this wrapper is for::

    from rltriton_lite.integrations import cleanrl
    advantages, returns = cleanrl.gae(rewards, values, dones, next_value, next_done,
                                      gamma=args.gamma, gae_lambda=args.gae_lambda)
"""
from __future__ import annotations

import torch

from ..returns import gae as _gae

__all__ = ["gae", "loop"]


def gae(rewards, values, dones, next_value, next_done, *, gamma=0.99, gae_lambda=0.95):
    """CleanRL's advantages and returns (``returns = advantages + values``).

    Args:
        rewards, values, dones: ``(num_steps, num_envs)`` tensors, CleanRL's rollout buffers
            (``dones`` float or bool: the episode ended before step t).
        next_value: V of the observation after the rollout, ``(1, num_envs)`` as CleanRL makes
            it (``agent.get_value(next_obs).reshape(1, -1)``) or ``(num_envs,)``.
        next_done: whether the episode ended at the rollout's last step, ``(num_envs,)``.
        gamma, gae_lambda: as CleanRL's ``args``.

    Returns:
        ``(advantages, returns)``, each ``(num_steps, num_envs)``.
    """
    if not isinstance(dones, torch.Tensor) or not isinstance(next_done, torch.Tensor):
        raise TypeError("dones and next_done must be torch tensors, as CleanRL keeps them")
    if dones.dim() != 2 or next_done.numel() != dones.shape[1]:
        raise ValueError(f"dones must be (num_steps, num_envs) and next_done (num_envs,), got {tuple(dones.shape)} "
                         f"and {tuple(next_done.shape)}")
    terminated = torch.cat([dones[1:], next_done.reshape(1, -1).to(dones.dtype)])  # ended after step t
    out = _gae(rewards, values, gamma=gamma, lambda_=gae_lambda, terminated=terminated,
               bootstrap_value=next_value, time_dim=0)
    return out.advantages, out.returns


def loop(rewards, values, dones, next_value, next_done, gamma=0.99, gae_lambda=0.95):
    """CleanRL ppo.py's own advantage loop, verbatim in substance: what :func:`gae` replaces, kept
    as the oracle of its tests and the timings (one Python iteration of 15 small ATen ops per step with
    next_value of shape (1, N), as notebook 08, section 5, counts them)."""
    num_steps = rewards.shape[0]
    advantages = torch.zeros_like(rewards)
    lastgaelam = 0
    for t in reversed(range(num_steps)):
        if t == num_steps - 1:
            nextnonterminal = 1.0 - next_done
            nextvalues = next_value
        else:
            nextnonterminal = 1.0 - dones[t + 1]
            nextvalues = values[t + 1]
        delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
        advantages[t] = lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam
    return advantages, advantages + values
