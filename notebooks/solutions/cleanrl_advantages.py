"""Solution: cleanrl_advantages (notebook 10). CleanRL's dones[t] says the episode ended before step
t; rl.gae's terminated[t] says it ended after step t: shift dones one step on, with next_done last."""
import torch

import rltriton_lite as rl


def cleanrl_advantages(rewards, values, dones, next_value, next_done, gamma, gae_lambda):
    terminated = torch.cat([dones[1:], next_done.reshape(1, -1)]).bool()
    out = rl.gae(rewards, values, gamma=gamma, lambda_=gae_lambda, terminated=terminated,
                 bootstrap_value=next_value.reshape(-1), time_dim=0)
    return out.advantages, out.returns


solution = cleanrl_advantages
