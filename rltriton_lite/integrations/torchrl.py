"""torchrl's value functionals, same signatures and results, each one call, and its GAE and TD(λ)
estimator modules with their recursions replaced by those calls::

    from rltriton_lite.integrations import torchrl as rlt
    advantage, value_target = rlt.generalized_advantage_estimate(gamma, lmbda, value, next_value,
                                                                 reward, done, terminated)
    advantage_module = rlt.GAE(gamma=0.99, lmbda=0.95, value_network=critic)  # torchrl's arguments
    advantage_module(tensordict_data)                                        # torchrl's keys

``VTrace`` likewise takes torchrl's ``VTrace`` arguments (``actor_network`` and all).

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

import contextlib
import threading

import torch
from torchrl.objectives.value import advantages as _advantages

from ..returns import gae, td_lambda
from ..vtrace import vtrace

__all__ = ["generalized_advantage_estimate", "vec_generalized_advantage_estimate", "td_lambda_return_estimate",
           "vec_td_lambda_return_estimate", "vtrace_advantage_estimate", "GAE", "TDLambdaEstimator", "VTrace"]


def _flags(done, terminated):
    terminated = done if terminated is None else terminated
    return terminated, done & ~terminated


def _number(x):
    """torchrl keeps gamma and lambda as one-element tensors: read once, as numbers."""
    return float(x) if isinstance(x, torch.Tensor) and x.numel() == 1 else x


def generalized_advantage_estimate(gamma, lmbda, state_value, next_state_value, reward, done, terminated=None, *,
                                   time_dim=-2):
    """``(advantage, value_target)`` as torchrl's; ``gamma``, ``lmbda`` floats or tensors
    broadcastable to ``reward``."""
    term, trunc = _flags(done, terminated)
    out = gae(reward, state_value, next_values=next_state_value, terminated=term, truncated=trunc,
              gamma=_number(gamma), lambda_=_number(lmbda), time_dim=time_dim)
    return out.advantages, out.returns


vec_generalized_advantage_estimate = generalized_advantage_estimate


def td_lambda_return_estimate(gamma, lmbda, next_state_value, reward, done, terminated=None, rolling_gamma=None, *,
                              time_dim=-2):
    """The λ-return as torchrl's; a per-step ``gamma`` is each step's own (``rolling_gamma`` None or
    True; False, torchrl's other reading of a gamma tensor, is not supported)."""
    if rolling_gamma is False:
        raise ValueError("rolling_gamma=False is not supported: a gamma tensor is each step's own discount")
    term, trunc = _flags(done, terminated)
    return td_lambda(reward, next_state_value, gamma=_number(gamma), lambda_=_number(lmbda), terminated=term,
                     truncated=trunc, time_dim=time_dim)


vec_td_lambda_return_estimate = td_lambda_return_estimate


def vtrace_advantage_estimate(gamma, log_pi, log_mu, state_value, next_state_value, reward, done, terminated=None,
                              rho_thresh=1.0, c_thresh=1.0, time_dim=-2):
    """``(advantages, vs)`` as torchrl's (λ = 1; the policy-gradient weights clipped at
    ``rho_thresh``)."""
    term, trunc = _flags(done, terminated)
    rho_bar, c_bar = (float(x) if isinstance(x, torch.Tensor) else x for x in (rho_thresh, c_thresh))
    out = vtrace((log_pi - log_mu).detach(), reward, state_value, next_values=next_state_value, terminated=term,
                 truncated=trunc, gamma=_number(gamma), lambda_=1.0, rho_bar=rho_bar, c_bar=c_bar, pg_rho_bar=rho_bar,
                 time_dim=time_dim)
    return out.pg_advantages, out.vs


# torchrl's estimators call its functionals by their module-level names: while one of these
# modules runs, the names point at the drop-ins above (whose results are torchrl's).
_DROP_INS = {"generalized_advantage_estimate": generalized_advantage_estimate,
             "vec_generalized_advantage_estimate": generalized_advantage_estimate,
             "td_lambda_return_estimate": td_lambda_return_estimate,
             "vec_td_lambda_return_estimate": td_lambda_return_estimate,
             "vtrace_advantage_estimate": vtrace_advantage_estimate}
_LOCK = threading.RLock()


@contextlib.contextmanager
def _drop_ins():
    with _LOCK:
        saved = {name: getattr(_advantages, name) for name in _DROP_INS}
        for name, fn in _DROP_INS.items():
            setattr(_advantages, name, fn)
        try:
            yield
        finally:
            for name, fn in saved.items():
                setattr(_advantages, name, fn)


class GAE(_advantages.GAE):
    """torchrl's ``GAE`` (same constructor, keys and options), its recursion one call of
    :func:`rltriton_lite.gae`."""

    def forward(self, *args, **kwargs):
        with _drop_ins():
            return super().forward(*args, **kwargs)

    def value_estimate(self, *args, **kwargs):
        with _drop_ins():
            return super().value_estimate(*args, **kwargs)


class TDLambdaEstimator(_advantages.TDLambdaEstimator):
    """torchrl's ``TDLambdaEstimator``, its recursion one call of :func:`rltriton_lite.td_lambda`."""

    def value_estimate(self, *args, **kwargs):
        with _drop_ins():
            return super().value_estimate(*args, **kwargs)


class VTrace(_advantages.VTrace):
    """torchrl's ``VTrace``, its recursion one call of :func:`rltriton_lite.vtrace` (equal to
    torchrl's with one value network; see the module's note for a target network)."""

    def forward(self, *args, **kwargs):
        with _drop_ins():
            return super().forward(*args, **kwargs)
