r"""The ground truth: one plain float64 NumPy loop per algorithm, written to be read next to
its formula.

Every function takes NumPy arrays (or anything ``np.asarray`` accepts) with **time on the last
axis** and any batch axes in front, and loops ``for t in reversed(range(T))`` over time, with
the batch handled by NumPy broadcasting. Flags (``terminated``, ``truncated``) and ``mask`` may
be bool, integer or float; ``gamma``/``lambda_`` a number or an array broadcastable to the
rewards. The conventions are those of ``docs/DESIGN.md``, "Conventions":

* ``terminated[t]``: s_{t+1} is terminal, nothing is bootstrapped after step t;
* ``truncated[t]``: the episode was cut after step t, the return bootstraps from
  ``next_values[t]`` = V(s_{t+1});
* the last step of the window acts as a truncation;
* ``mask[t] == 0``: the step is removed from the sequence, as if deleted: nothing of it is read,
  the carry passes through it, the step before it bootstraps from the next unmasked step
  (``values`` of that step; ``bootstrap_value`` after the last unmasked step, which ends the
  window), and its outputs are 0. ``next_values``, when given, is V(s_{t+1}) of each step as
  passed (by position).

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
    valid = np.broadcast_to(True if mask is None else np.asarray(mask) != 0, r.shape)
    done = term | trunc
    later = np.zeros(r.shape[:-1], bool)  # an unmasked step after t
    for t in reversed(range(T)):
        done[..., t] |= valid[..., t] & ~later  # the last unmasked step ends the window: a truncation
        later |= valid[..., t]
    return r, T, gamma, term, done, valid


def _next_values(r, values, next_values, bootstrap_value, valid):
    """V(s_{t+1}): next_values, else values of the next unmasked step, bootstrap_value after the
    last one."""
    if next_values is not None:
        return np.asarray(next_values, dtype=np.float64)
    boot = np.zeros(r.shape[:-1]) if bootstrap_value is None else np.asarray(bootstrap_value, np.float64)
    after = np.zeros_like(r) if values is None else np.asarray(values, np.float64)
    v_next = np.empty_like(r)
    following = np.broadcast_to(boot, r.shape[:-1])  # V of the next unmasked step
    for t in reversed(range(r.shape[-1])):
        v_next[..., t] = following
        following = np.where(valid[..., t], after[..., t], following)
    return v_next


def discounted_returns(rewards, *, gamma=0.99, terminated=None, truncated=None,
                       bootstrap_value=None, next_values=None, mask=None):
    r"""G_t = r_t + γ_t (1-term_t) · (G_{t+1} if not done_t else V'_t)."""
    r, T, gamma, term, done, valid = _prepare(rewards, gamma, terminated, truncated, mask)
    v_next = _next_values(r, None, next_values, bootstrap_value, valid)
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
    v_next = _next_values(r, v, next_values, bootstrap_value, valid)
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


def vtrace(log_rhos, rewards, values, *, gamma=0.99, lambda_=1.0, rho_bar=1.0, c_bar=1.0,
           pg_rho_bar=1.0, terminated=None, truncated=None, bootstrap_value=None, next_values=None,
           mask=None):
    r"""V-trace (IMPALA). ρ_t = min(ρ̄, e^{log ρ_t}), c_t = λ_t min(c̄, e^{log ρ_t});
    vs_t = V_t + ρ_t δ_t + γ_t(1-done_t) c_t (vs_{t+1} - V'_t),  δ_t = r_t + γ_t(1-term_t)V'_t - V_t;
    pg_t = min(ρ̄_pg, e^{log ρ_t}) (r_t + γ_t(1-term_t)[λ_t vs'_{t+1} + (1-λ_t)V'_t] - V_t),
    vs'_{t+1} = vs_{t+1} if not done_t else V'_t.

    Returns ``(vs, pg_advantages)``.
    """
    r, T, gamma, term, done, valid = _prepare(rewards, gamma, terminated, truncated, mask)
    lam = np.broadcast_to(np.asarray(lambda_, dtype=np.float64), r.shape)
    ratio = np.exp(np.asarray(log_rhos, dtype=np.float64))  # π / μ
    v = np.asarray(values, dtype=np.float64)
    v_next = _next_values(r, v, next_values, bootstrap_value, valid)
    vs, pg = np.zeros_like(r), np.zeros_like(r)
    carry = np.zeros(r.shape[:-1])  # vs_{t+1}
    for t in reversed(range(T)):
        rho = np.minimum(rho_bar, ratio[..., t])
        c = lam[..., t] * np.minimum(c_bar, ratio[..., t])
        rho_pg = np.minimum(pg_rho_bar, ratio[..., t])
        g_t, v_t, vn_t = gamma[..., t], v[..., t], v_next[..., t]
        delta = r[..., t] + np.where(term[..., t], 0.0, g_t * vn_t) - v_t
        x = v_t + rho * delta + np.where(done[..., t], 0.0, g_t * c * (carry - vn_t))
        follow = np.where(done[..., t], vn_t, carry)  # vs'_{t+1}
        mix = lam[..., t] * follow + (1 - lam[..., t]) * vn_t
        a = rho_pg * (r[..., t] + np.where(term[..., t], 0.0, g_t * mix) - v_t)
        carry = np.where(valid[..., t], x, carry)  # a padded step passes the carry through
        vs[..., t] = np.where(valid[..., t], x, 0.0)
        pg[..., t] = np.where(valid[..., t], a, 0.0)
    return vs, pg


def sac_targets(rewards, next_q, next_log_probs, *, gamma=0.99, alpha=0.2, lambda_=0.0,
                log_probs=None, terminated=None, truncated=None, mask=None):
    r"""Soft λ-returns. V_t = min_k next_q[k]_t - α next_log_probs_t;
    G_t = r_t + γ_t(1-term_t)[(1-λ_t)V_t + λ_t·(G_{t'} - α log_probs_{t'} if not done_t else V_t)],
    t' the next unpadded step after t (t+1 without padding)."""
    r, T, gamma, term, done, valid = _prepare(rewards, gamma, terminated, truncated, mask)
    lam = np.broadcast_to(np.asarray(lambda_, dtype=np.float64), r.shape)
    critics = next_q if isinstance(next_q, (list, tuple)) else [next_q]
    q_min = np.min([np.asarray(q, dtype=np.float64) for q in critics], axis=0)
    v_soft = q_min - alpha * np.asarray(next_log_probs, dtype=np.float64)
    log_pi = np.zeros_like(r) if log_probs is None else np.asarray(log_probs, dtype=np.float64)
    G = np.zeros_like(r)
    carry = np.zeros(r.shape[:-1])  # G_{t'} - α log π_{t'} of the next unpadded step t'
    for t in reversed(range(T)):
        follow = np.where(done[..., t], v_soft[..., t], carry)
        mix = (1 - lam[..., t]) * v_soft[..., t] + lam[..., t] * follow
        g = r[..., t] + np.where(term[..., t], 0.0, gamma[..., t] * mix)
        carry = np.where(valid[..., t], g - alpha * log_pi[..., t], carry)
        G[..., t] = np.where(valid[..., t], g, 0.0)
    return G


def _sac_masked_mean(x, mask):
    """The mean over the unmasked elements; 0 over none (as ppo_clip_loss and crr_loss)."""
    valid = np.ones(x.shape, bool) if mask is None else np.asarray(mask) != 0
    return np.sum(np.where(valid, x, 0.0)) / max(int(valid.sum()), 1)


def sac_actor_loss(log_probs, q, *, alpha=0.2, mask=None):
    r"""mean over unmasked elements of α log π - min_k Q_k (q one array or a list); 0 over none."""
    critics = q if isinstance(q, (list, tuple)) else [q]
    q_min = np.min([np.asarray(x, dtype=np.float64) for x in critics], axis=0)
    return _sac_masked_mean(alpha * np.asarray(log_probs, dtype=np.float64) - q_min, mask)


def sac_temperature_loss(log_alpha, log_probs, target_entropy, *, mask=None):
    r"""-mean(log α (log π + H̄)) over unmasked elements; 0 over none."""
    return -float(np.asarray(log_alpha, dtype=np.float64).reshape(())) * _sac_masked_mean(
        np.asarray(log_probs, dtype=np.float64) + target_entropy, mask)


# --------------------------------------------------------------------------------------------
# Losses. No time axis: inputs of any shape, every element independent.
# --------------------------------------------------------------------------------------------
def ppo_clip_loss(log_probs, old_log_probs, advantages, *, epsilon=0.2, normalize_advantages=False,
                  mask=None, reduction="mean"):
    r"""ratio = e^{logp - logp_old};  loss = -mean(min(ratio·A, clip(ratio, 1-ε_low, 1+ε_high)·A)).

    Over the unmasked elements (N of them; a mean over none is 0). Returns ``(loss,
    clip_fraction, approx_kl)`` as floats, or the per-element loss for ``reduction="none"``.
    """
    eps_low, eps_high = epsilon if isinstance(epsilon, (tuple, list)) else (epsilon, epsilon)
    low, high = 1.0 - eps_low, 1.0 + eps_high
    logp = np.asarray(log_probs, dtype=np.float64)
    old = np.asarray(old_log_probs, dtype=np.float64)
    A = np.asarray(advantages, dtype=np.float64)
    valid = np.ones(logp.shape, bool) if mask is None else np.asarray(mask) != 0
    N = int(valid.sum())
    if normalize_advantages:  # (A - mean) / (std + 1e-8), std unbiased; 0 for fewer than 2
        mean = A[valid].mean() if N > 0 else 0.0
        std = A[valid].std(ddof=1) if N > 1 else 0.0
        A = (A - mean) / (std + 1e-8)
    with np.errstate(all="ignore"):  # padding may hold anything
        ratio = np.exp(logp - old)
        surrogate = np.minimum(ratio * A, np.clip(ratio, low, high) * A)
        loss = np.where(valid, -surrogate, 0.0)
        kl = (ratio - 1.0) - (logp - old)
    if reduction == "none":
        return loss
    clipped = (ratio < low) | (ratio > high)
    clip_fraction = clipped[valid].sum() / max(N, 1)
    approx_kl = kl[valid].sum() / max(N, 1)
    total = loss.sum() / max(N, 1) if reduction == "mean" else loss.sum()
    return float(total), float(clip_fraction), float(approx_kl)


def crr_loss(log_probs, q_values, baseline, *, beta=1.0, mode="exp", max_weight=20.0,
             baseline_reduce="mean", mask=None):
    r"""A = Q - baseline;  w = min(e^{A/β}, max_weight) ("exp") or [A > 0] ("binary");
    loss = -mean(w · logπ) over the unmasked elements (0 over none).

    ``baseline`` is V(s) (shape of ``q_values``) or K sampled Q(s, a_j) in one more trailing dim,
    reduced by ``baseline_reduce`` ("mean" or "max"). Returns ``(loss, weights, advantages)``,
    the last two 0 where masked.
    """
    logp = np.asarray(log_probs, dtype=np.float64)
    Q = np.asarray(q_values, dtype=np.float64)
    b = np.asarray(baseline, dtype=np.float64)
    if b.ndim == Q.ndim + 1:
        b = b.mean(-1) if baseline_reduce == "mean" else b.max(-1)
    valid = np.ones(Q.shape, bool) if mask is None else np.asarray(mask) != 0
    with np.errstate(all="ignore"):
        A = Q - b
        w = np.minimum(np.exp(A / beta), max_weight) if mode == "exp" else (A > 0).astype(np.float64)
        w = np.where(valid, w, 0.0)
        loss = -np.where(valid, w * logp, 0.0).sum() / max(int(valid.sum()), 1)
    return float(loss), w, np.where(valid, A, 0.0)
