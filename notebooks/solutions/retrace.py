"""Solution: retrace (notebook 04). a_t = gamma (1 - term_t) c_{t+1}, b_t = r_t + gamma (1 - term_t)
(E_pi Q_{t+1} - c_{t+1} Q_{t+1})."""
import torch


def retrace(rewards, next_expected_q, next_q, next_log_ratio, terminated, gamma, lam):
    c = lam * torch.clamp(next_log_ratio.exp(), max=1.0)
    c[..., -1] = 0.0
    boot = gamma * (~terminated).to(rewards.dtype)
    return boot * c, rewards + boot * (next_expected_q - c * next_q)


solution = retrace
