r"""The ground truth: one plain float64 NumPy loop per algorithm, written to be read next to
its formula.

Every function takes NumPy arrays (or anything ``np.asarray`` accepts) with **time on the last
axis** and any batch axes in front, and loops ``for t in reversed(range(T))`` over time, with
the batch handled by NumPy broadcasting. Flags (``terminated``, ``truncated``) and ``mask`` may
be bool, integer or float; ``gamma``/``lambda_`` a number or an array broadcastable to the
rewards. The conventions are those of ``DESIGN.md`` §2:

* ``terminated[t]``: s_{t+1} is terminal, nothing is bootstrapped after step t;
* ``truncated[t]``: the episode was cut after step t, the return bootstraps from
  ``next_values[t]`` = V(s_{t+1});
* the last step of the window acts as a truncation;
* ``mask[t] == 0``: padding, the step is skipped (the carry passes through) and outputs 0.

"Multiply by (1 - terminated)" is written as a select (``np.where``), as the kernels do, so a
NaN behind an episode end stays there.
"""
from __future__ import annotations

import numpy as np


def _prepare(rewards, gamma, terminated, truncated, mask):
    r = np.asarray(rewards, dtype=np.float64)
    T = r.shape[-1]
    gamma = np.broadcast_to(np.asarray(gamma, dtype=np.float64), r.shape)
    flag = lambda x: np.zeros(r.shape, bool) if x is None else np.asarray(x) != 0  # noqa: E731
    term, trunc = flag(terminated), flag(truncated)
    valid = np.ones(r.shape, bool) if mask is None else np.asarray(mask) != 0
    done = term | trunc
    done[..., T - 1] = True  # the end of the window is a truncation
    return r, T, gamma, term, done, valid


def _next_values(r, values, next_values, bootstrap_value):
    """V(s_{t+1}): next_values, else values[t+1] with bootstrap_value after the last step."""
    if next_values is not None:
        return np.asarray(next_values, dtype=np.float64)
    boot = np.zeros(r.shape[:-1]) if bootstrap_value is None else np.asarray(bootstrap_value, np.float64)
    after = np.zeros_like(r) if values is None else np.asarray(values, np.float64)
    v_next = np.empty_like(r)
    v_next[..., :-1] = after[..., 1:]
    v_next[..., -1] = np.broadcast_to(boot, r.shape[:-1])
    return v_next


def discounted_returns(rewards, *, gamma=0.99, terminated=None, truncated=None,
                       bootstrap_value=None, next_values=None, mask=None):
    r"""G_t = r_t + γ_t (1-term_t) · (G_{t+1} if not done_t else V'_t)."""
    r, T, gamma, term, done, valid = _prepare(rewards, gamma, terminated, truncated, mask)
    v_next = _next_values(r, None, next_values, bootstrap_value)
    G = np.zeros_like(r)
    carry = np.zeros(r.shape[:-1])  # G_{t+1}
    for t in reversed(range(T)):
        follow = np.where(done[..., t], v_next[..., t], carry)
        g = r[..., t] + np.where(term[..., t], 0.0, gamma[..., t] * follow)
        carry = np.where(valid[..., t], g, carry)  # a padded step passes the carry through
        G[..., t] = np.where(valid[..., t], g, 0.0)
    return G


def gae(rewards, values, *, gamma=0.99, lambda_=0.95, terminated=None, truncated=None,
        bootstrap_value=None, next_values=None, mask=None):
    r"""δ_t = r_t + γ_t(1-term_t)V'_t - V_t;  A_t = δ_t + γ_tλ_t(1-done_t)A_{t+1};  R = A + V.

    Returns ``(advantages, returns)``.
    """
    r, T, gamma, term, done, valid = _prepare(rewards, gamma, terminated, truncated, mask)
    lam = np.broadcast_to(np.asarray(lambda_, dtype=np.float64), r.shape)
    v = np.asarray(values, dtype=np.float64)
    v_next = _next_values(r, v, next_values, bootstrap_value)
    adv = np.zeros_like(r)
    carry = np.zeros(r.shape[:-1])  # A_{t+1}
    for t in reversed(range(T)):
        delta = r[..., t] + np.where(term[..., t], 0.0, gamma[..., t] * v_next[..., t]) - v[..., t]
        a = delta + np.where(done[..., t], 0.0, gamma[..., t] * lam[..., t] * carry)
        carry = np.where(valid[..., t], a, carry)
        adv[..., t] = np.where(valid[..., t], a, 0.0)
    return adv, np.where(valid, adv + v, 0.0)


def td_lambda(rewards, next_values, *, gamma=0.99, lambda_=0.95, terminated=None,
              truncated=None, mask=None):
    r"""G_t = r_t + γ_t(1-term_t)[(1-λ_t)V'_t + λ_t·(G_{t+1} if not done_t else V'_t)]."""
    r, T, gamma, term, done, valid = _prepare(rewards, gamma, terminated, truncated, mask)
    lam = np.broadcast_to(np.asarray(lambda_, dtype=np.float64), r.shape)
    v_next = np.asarray(next_values, dtype=np.float64)
    G = np.zeros_like(r)
    carry = np.zeros(r.shape[:-1])  # G_{t+1}
    for t in reversed(range(T)):
        follow = np.where(done[..., t], v_next[..., t], carry)
        mix = (1 - lam[..., t]) * v_next[..., t] + lam[..., t] * follow
        g = r[..., t] + np.where(term[..., t], 0.0, gamma[..., t] * mix)
        carry = np.where(valid[..., t], g, carry)
        G[..., t] = np.where(valid[..., t], g, 0.0)
    return G


def linear_scan(a, b, *, reverse=True, initial=None, mask=None):
    r"""y_t = b_t + a_t y_{t+1} (reverse) or y_t = b_t + a_t y_{t-1} (forward); a_t = 0 is a
    boundary, so y_t = b_t there even if what follows is NaN."""
    b = np.asarray(b, dtype=np.float64)
    a = np.broadcast_to(np.asarray(a, dtype=np.float64), b.shape)
    valid = np.ones(b.shape, bool) if mask is None else np.asarray(mask) != 0
    T = b.shape[-1]
    y = np.zeros_like(b)
    carry = np.zeros(b.shape[:-1]) if initial is None else np.broadcast_to(np.asarray(initial, np.float64), b.shape[:-1])
    for t in (reversed(range(T)) if reverse else range(T)):
        value = np.where(a[..., t] == 0, b[..., t], b[..., t] + a[..., t] * carry)  # a = 0: boundary
        carry = np.where(valid[..., t], value, carry)
        y[..., t] = np.where(valid[..., t], value, 0.0)
    return y
