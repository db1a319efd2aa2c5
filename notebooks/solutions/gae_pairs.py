"""Solution: gae_pairs (notebook 02). delta_t bootstraps unless terminated; the trace stops at
any episode end (terminated or truncated)."""
import torch


def gae_pairs(rewards, values, next_values, terminated, truncated, gamma, lam):
    # a select, not a multiplication by ~terminated: next_values behind a termination may be NaN
    delta = rewards + torch.where(terminated, 0.0, gamma * next_values) - values
    a = torch.where(terminated | truncated, 0.0, gamma * lam).to(rewards.dtype)  # the reset as a select
    return a, delta


solution = gae_pairs
