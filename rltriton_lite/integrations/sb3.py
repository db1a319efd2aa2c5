"""Stable-Baselines3's ``RolloutBuffer`` with its GAE loop replaced by one call::

    from stable_baselines3 import PPO
    from rltriton_lite.integrations.sb3 import RolloutBuffer
    model = PPO("MlpPolicy", "CartPole-v1", rollout_buffer_class=RolloutBuffer)

SB3 keeps the buffer as float32 NumPy arrays, time-major ``(buffer_size, n_envs)``, and marks
``episode_starts[t]`` = "the episode ended before step t": the step before it is ``terminated``
(SB3 has already added γ V(terminal observation) to the reward of a truncated step, so a
truncation is a termination here, as in SB3's own loop). The results agree with SB3's loop to
float32 rounding (``tests/test_integrations.py``).
"""
from __future__ import annotations

import numpy as np
import torch
from stable_baselines3.common.buffers import RolloutBuffer as _RolloutBuffer

from ..returns import gae

__all__ = ["RolloutBuffer"]


class RolloutBuffer(_RolloutBuffer):
    """SB3's ``RolloutBuffer``; ``compute_returns_and_advantage`` runs ``rltriton_lite.gae``."""

    def compute_returns_and_advantage(self, last_values: torch.Tensor, dones: np.ndarray) -> None:
        terminated = np.concatenate([self.episode_starts[1:], np.asarray(dones, np.float32)[None]])
        out = gae(self.rewards, self.values, gamma=self.gamma, lambda_=self.gae_lambda, terminated=terminated,
                  bootstrap_value=last_values.detach().cpu().numpy().reshape(-1), time_dim=0)
        self.advantages[:] = out.advantages
        self.returns = self.advantages + self.values
