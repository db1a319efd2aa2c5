"""verl's token-level estimators (``verl.trainer.ppo.core_algos``, verl 0.9.1) as one scan each.

verl walks ``for t in reversed(range(response_length))`` over a response, a few small kernels per
token. Its ``response_mask`` is 0 at tokens the policy did not produce (padding after EOS, tool
output inside a multi-turn response), and its loops carry the running values *through* them:
the masked tokens are as if deleted, the response's last token bootstraps from 0. That is this
package's mask (``mask=``: masked steps as if deleted), so each estimator is one masked scan plus
verl's own whitening::

    from verl.trainer.ppo import core_algos
    from rltriton_lite.integrations import verl as rlt_verl
    rlt_verl.install(core_algos)   # verl's GAE and REINFORCE++ now run as one scan each

The outputs are verl's, element for element, masked tokens included: verl leaves there the
advantage carried from the next response token (0 after the last), ``returns = advantages +
values`` there too, and whitens the advantages over the mask. Masks are 0/1, as verl makes them.
"""
from __future__ import annotations

import torch

from ..primitive import linear_scan
from ..returns import discounted_returns, gae

__all__ = ["compute_gae_advantage_return", "compute_reinforce_plus_plus_outcome_advantage", "masked_whiten",
           "install"]


def masked_whiten(values, mask):
    """verl's ``verl_F.masked_whiten``: (values - mean) / sqrt(var + 1e-8) with the mean and the
    unbiased variance over the mask (the same operations, so the same bits)."""
    m, valid = mask, mask.bool()  # (the mask's own dtype: verl's sums and Bessel factor round as these)
    n = m.sum()
    mean = (torch.where(valid, values, 0.0) * m).sum() / (n + 1e-8)
    centred = values - mean
    var = (torch.where(valid, centred**2, 0.0) * m).sum() / (n + 1e-8)
    count = n.item()  # the host reads the count once (verl's reads it twice): its errors need it
    if count == 0:
        raise ValueError("At least one element in the mask has to be 1.")
    if count == 1:
        raise ValueError("The sum of the mask is one, which can cause a division by zero.")
    var = var * (n / (n - 1))
    return centred * torch.rsqrt(var + 1e-8)


def compute_gae_advantage_return(token_level_rewards, values, response_mask, gamma, lam):
    """verl's GAE: ``(advantages, returns)``, each ``(batch, response_length)``.

    One masked ``gae`` call (masked tokens deleted, a zero bootstrap after the last), the
    advantage carried backwards over the masked tokens as verl's loop leaves it (one
    ``linear_scan``: a reset at every response token), ``returns = advantages + values``, then
    the advantages whitened over the mask.
    """
    with torch.no_grad():
        valid = response_mask.bool()
        adv = gae(token_level_rewards, values, gamma=float(gamma), lambda_=float(lam), mask=valid).advantages
        # a response token resets (a = 0) to its own advantage; a masked one hands the next one's on
        adv = linear_scan((~valid).to(adv.dtype), adv)
        returns = adv + values
        return masked_whiten(adv, response_mask), returns


def compute_reinforce_plus_plus_outcome_advantage(token_level_rewards, response_mask, config=None, **kwargs):
    """verl's REINFORCE++: ``(advantages, returns)``: the discounted returns over the response
    tokens (masked tokens deleted, 0 there), whitened over the mask and masked."""
    if config is None:
        raise ValueError("config is required: verl's AlgoConfig (its gamma is the discount)")
    with torch.no_grad():
        returns = discounted_returns(token_level_rewards, gamma=float(config.gamma), mask=response_mask.bool())
        advantages = masked_whiten(returns, response_mask) * response_mask
        return advantages, returns


def install(core_algos) -> None:
    """Route verl's GAE and REINFORCE++ through these: ``core_algos`` is verl's
    ``verl.trainer.ppo.core_algos`` module (its trainer calls ``core_algos.compute_gae_advantage_return``
    and looks REINFORCE++ up in ``ADV_ESTIMATOR_REGISTRY``)."""
    core_algos.compute_gae_advantage_return = compute_gae_advantage_return
    registry = core_algos.ADV_ESTIMATOR_REGISTRY
    registry["gae"] = compute_gae_advantage_return
    registry["reinforce_plus_plus"] = compute_reinforce_plus_plus_outcome_advantage
