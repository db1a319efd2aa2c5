"""Solution: soft_lambda_targets (notebook 06). The continuation G_{t+1} - alpha log pi_{t+1} splits
into a_t G_{t+1} and a term of b_t that reads log_probs one step ahead."""
import torch


def soft_lambda_targets(rewards, next_q1, next_q2, next_log_probs, log_probs, terminated, gamma, alpha, lam):
    v_soft = torch.minimum(next_q1, next_q2) - alpha * next_log_probs
    cont = lam * (~terminated).to(rewards.dtype)
    cont[..., -1] = 0.0  # the window's last step bootstraps fully
    lp_next = torch.cat([log_probs[..., 1:], torch.zeros_like(log_probs[..., :1])], -1)
    boot = gamma * (~terminated).to(rewards.dtype)
    b = rewards + boot * ((1 - cont) * v_soft - cont * alpha * lp_next)
    return gamma * cont, b


solution = soft_lambda_targets
