"""Solution: gae_pairs (notebook 02). delta_t bootstraps unless terminated; the trace stops at
any episode end (terminated or truncated) and at the window's last step."""
import torch


def gae_pairs(rewards, values, next_values, terminated, truncated, gamma, lam):
    # a select, not a multiplication by ~terminated: next_values behind a termination may be NaN
    delta = rewards + torch.where(terminated, 0.0, gamma * next_values) - values
    last = torch.zeros_like(terminated)
    last[..., -1] = True  # the window's last step resets too
    a = torch.where(terminated | truncated | last, 0.0, gamma * lam).to(rewards.dtype)  # the reset as a select
    return a, delta


solution = gae_pairs
