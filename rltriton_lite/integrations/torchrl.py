"""torchrl's value functionals, same signatures and results, each one call::

    from rltriton_lite.integrations import torchrl as rlt
    advantage, value_target = rlt.generalized_advantage_estimate(gamma, lmbda, value, next_value,
                                                                 reward, done, terminated)

torchrl's conventions: tensors are ``[*B, T, *F]`` with time at ``time_dim`` (-2); ``done`` and
``terminated`` are the *next* step's flags (the episode ended after step t), ``done`` also true
at a truncation, where the target bootstraps from ``next_state_value``. Those are this package's
``truncated = done & ~terminated`` and ``terminated``.

V-trace: torchrl has no λ and clips the policy-gradient weights at ``rho_thresh``; the importance
weights get no gradient here (IMPALA's stop-gradient; torchrl's functional differentiates them).
Inside an episode this package's V-trace uses V(s_{t+1}) = ``next_state_value[t]`` in the
c-correction too, so the two agree when ``next_state_value[t] == state_value[t + 1]`` within
episodes (values from one network), and differ by design with a target network's next values
(docs/ALGORITHMS.md, "V-trace").
"""
from __future__ import annotations

import torch

from ..returns import gae, td_lambda
from ..vtrace import vtrace

__all__ = ["generalized_advantage_estimate", "vec_generalized_advantage_estimate", "td_lambda_return_estimate",
           "vec_td_lambda_return_estimate", "vtrace_advantage_estimate"]


def _flags(done, terminated):
    terminated = done if terminated is None else terminated
    return terminated, done & ~terminated


def generalized_advantage_estimate(gamma, lmbda, state_value, next_state_value, reward, done, terminated=None, *,
                                   time_dim=-2):
    """``(advantage, value_target)`` as torchrl's; ``gamma``, ``lmbda`` floats or tensors
    broadcastable to ``reward``."""
    term, trunc = _flags(done, terminated)
    out = gae(reward, state_value, next_values=next_state_value, terminated=term, truncated=trunc,
              gamma=gamma, lambda_=lmbda, time_dim=time_dim)
    return out.advantages, out.returns


vec_generalized_advantage_estimate = generalized_advantage_estimate


def td_lambda_return_estimate(gamma, lmbda, next_state_value, reward, done, terminated=None, rolling_gamma=None, *,
                              time_dim=-2):
    """The λ-return as torchrl's; a per-step ``gamma`` is each step's own (``rolling_gamma`` None or
    True; False, torchrl's other reading of a gamma tensor, is not supported)."""
    if rolling_gamma is False:
        raise ValueError("rolling_gamma=False is not supported: a gamma tensor is each step's own discount")
    term, trunc = _flags(done, terminated)
    return td_lambda(reward, next_state_value, gamma=gamma, lambda_=lmbda, terminated=term, truncated=trunc,
                     time_dim=time_dim)


vec_td_lambda_return_estimate = td_lambda_return_estimate


def vtrace_advantage_estimate(gamma, log_pi, log_mu, state_value, next_state_value, reward, done, terminated=None,
                              rho_thresh=1.0, c_thresh=1.0, time_dim=-2):
    """``(advantages, vs)`` as torchrl's (λ = 1; the policy-gradient weights clipped at
    ``rho_thresh``)."""
    term, trunc = _flags(done, terminated)
    rho_bar, c_bar = (float(x) if isinstance(x, torch.Tensor) else x for x in (rho_thresh, c_thresh))
    out = vtrace((log_pi - log_mu).detach(), reward, state_value, next_values=next_state_value, terminated=term,
                 truncated=trunc, gamma=gamma, lambda_=1.0, rho_bar=rho_bar, c_bar=c_bar, pg_rho_bar=rho_bar,
                 time_dim=time_dim)
    return out.pg_advantages, out.vs
