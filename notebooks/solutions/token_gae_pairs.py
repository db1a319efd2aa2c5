"""Solution: token_gae_pairs (notebook 12). A masked token is the identity (1, 0); a response
token is GAE's pair (gamma * lam, delta_t), delta_t reading V at the next response token: a
reverse scan of the values that carries each response token's value back through the masked
tokens before it (a = 1 there), shifted by one."""
import torch

import rltriton_lite as rl


def token_gae_pairs(rewards, values, mask, gamma, lam):
    v = torch.where(mask, values, 0.0)  # (a masked token's value is never read: selected away)
    # at t: V at the first response token at or after t (0 when none is left)
    v_from_here = rl.linear_scan((~mask).to(values.dtype), v)
    v_next = torch.cat([v_from_here[..., 1:], torch.zeros_like(v_from_here[..., :1])], -1)
    delta = rewards + gamma * v_next - values
    a = torch.where(mask, gamma * lam, 1.0).to(values.dtype)
    b = torch.where(mask, delta, 0.0)
    return a, b


solution = token_gae_pairs
