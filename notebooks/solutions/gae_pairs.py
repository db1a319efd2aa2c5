"""Solution: gae_pairs (notebook 02). delta_t bootstraps unless terminated; the trace stops at
any episode end (terminated or truncated)."""


def gae_pairs(rewards, values, next_values, terminated, truncated, gamma, lam):
    delta = rewards + gamma * (~terminated) * next_values - values
    a = gamma * lam * (~(terminated | truncated)).to(rewards.dtype)
    return a, delta


solution = gae_pairs
