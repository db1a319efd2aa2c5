"""Solution: n_step_returns (notebook 01). S_t, the discounted sum to the episode's end (a
termination adds nothing, the window's end bootstraps), is one scan; the n-step return keeps the
first n terms of S_t and bootstraps where they stop: G_t = S_t - gamma^n (S_{t+n} - V(s_{t+n}))
when the episode runs on past t+n-1, else S_t."""
import torch

import rltriton_lite as rl


def n_step_returns(rewards, next_values, terminated, gamma, n):
    B, T = rewards.shape
    last = torch.zeros_like(rewards, dtype=torch.bool)
    last[:, -1] = True
    # S_t = r_t + gamma (1 - term_t) S_{t+1}, and at the window's last step r + gamma V(s_T) (a select:
    # V behind a termination may be anything)
    b = rewards + torch.where(last & ~terminated, gamma * next_values, 0.0)
    # a = 0 at every reset, the window's last step included
    S = rl.linear_scan(gamma * (~(terminated | last)).to(rewards.dtype), b)
    # an episode that terminates in [t, t+n) ends the sum: count terminations in each window
    ends = torch.cumsum(torch.cat([torch.zeros(B, 1, device=rewards.device), terminated.to(rewards.dtype)], 1), 1)
    t = torch.arange(T, device=rewards.device)
    stop = torch.clamp(t + n, max=T)
    runs_on = (ends[:, stop] - ends[:, t] == 0) & (t + n < T)  # the window has more than n steps
    S_n = torch.where(runs_on, S[:, torch.clamp(t + n, max=T - 1)], torch.zeros_like(S))
    V_n = torch.where(runs_on, next_values[:, torch.clamp(t + n - 1, max=T - 1)], torch.zeros_like(S))
    return S - gamma ** n * (S_n - V_n)


solution = n_step_returns
