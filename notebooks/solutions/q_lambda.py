"""Solution: q_lambda (notebook 03). TD(lambda) with a per-step lambda: lam where the next action
is greedy, 0 where it is not and at the window's last step."""
import torch


def q_lambda(rewards, next_max_q, next_greedy, terminated, gamma, lam):
    lam_t = lam * next_greedy.to(rewards.dtype)
    lam_t[..., -1] = 0.0
    boot = gamma * (~terminated).to(rewards.dtype)
    return boot * lam_t, rewards + boot * (1 - lam_t) * next_max_q


solution = q_lambda
