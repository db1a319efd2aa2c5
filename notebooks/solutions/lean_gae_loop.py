"""Solution: lean_gae_loop (notebook 08). CleanRL's loop with everything that does not depend on the
carry computed for all steps at once: "not done after step t" (dones shifted one step on, next_done
last), the next values, delta_t and the decay gamma * lambda where the episode goes on. The loop keeps
the recurrence alone: two indexings, a multiply and an add, and a write (an indexing and a copy), 6
ops per step."""
import torch


def lean_gae_loop(rewards, values, dones, next_value, next_done, gamma, gae_lambda):
    goes_on = torch.cat([dones[1:], next_done.reshape(1, -1)]) == 0  # the episode goes on after step t
    next_values = torch.cat([values[1:], next_value.reshape(1, -1)])
    delta = rewards + torch.where(goes_on, gamma * next_values, 0.0) - values
    decay = torch.where(goes_on, gamma * gae_lambda, 0.0)
    advantages = torch.zeros_like(rewards)
    lastgaelam = torch.zeros_like(rewards[0])
    for t in reversed(range(rewards.shape[0])):
        lastgaelam = delta[t] + decay[t] * lastgaelam
        advantages[t] = lastgaelam
    return advantages, advantages + values


solution = lean_gae_loop
