"""OpenRLHF's token-level estimators (``ExperienceMaker.get_advantages_and_returns`` and
``get_cumulative_returns``) as one scan each.

OpenRLHF (like trlx, DeepSpeed-Chat and TRL before it) multiplies values and rewards by the
action mask and then runs plain GAE over every position: V(s_{t+1}) is the value at position
t + 1, whatever the mask says there, and 0 after the last position. On right padding that is
verl's answer (the padding's values and rewards are 0); on a hole in the middle of a response
(tool output in a multi-turn response) it is not: the token before the hole bootstraps from the
hole's zeroed value and its advantage decays through the hole. ``integrations.verl`` treats a
hole as deleted. Pick the one your trainer's other code expects::

    from rltriton_lite.integrations import openrlhf
    advantages, returns = openrlhf.get_advantages_and_returns(values, rewards, action_mask, gamma, lambd)

OpenRLHF's module imports vLLM and Ray, so the tests check these against a loop written in this
project from that semantics (``tests/test_llm_integrations.py``).
"""
from __future__ import annotations

import torch

from ..returns import discounted_returns, gae

__all__ = ["get_advantages_and_returns", "get_cumulative_returns"]


def get_advantages_and_returns(values, rewards, action_mask, gamma, lambd):
    """OpenRLHF's GAE: ``(advantages, returns)``, each ``(batch, response_length)``; values and
    rewards multiplied by ``action_mask`` (if given), ``returns = advantages + values`` (masked).
    A list of packed samples is taken one sample at a time, as OpenRLHF does."""
    if isinstance(rewards, list):
        out = [get_advantages_and_returns(v.unsqueeze(0), r.unsqueeze(0), action_mask, gamma, lambd)
               for v, r in zip(values, rewards)]
        return [a.squeeze(0) for a, _ in out], [r.squeeze(0) for _, r in out]
    with torch.no_grad():
        if action_mask is not None:
            values, rewards = action_mask * values, action_mask * rewards
        adv, ret = gae(rewards, values, gamma=float(gamma), lambda_=float(lambd))
        return adv, ret


def get_cumulative_returns(rewards, action_mask, gamma):
    """OpenRLHF's REINFORCE returns: the discounted sum of ``rewards * action_mask`` over every
    later position."""
    if isinstance(rewards, list):
        return [get_cumulative_returns(r.unsqueeze(0), action_mask, gamma).squeeze(0) for r in rewards]
    with torch.no_grad():
        if action_mask is not None:
            rewards = action_mask * rewards
        return discounted_returns(rewards, gamma=float(gamma))
