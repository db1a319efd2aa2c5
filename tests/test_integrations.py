"""The drop-ins against the libraries they replace, on random rollouts with episode ends: CleanRL's
GAE loop (written out here as ppo.py has it) and Stable-Baselines3's own RolloutBuffer."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from rltriton_lite import reference
from rltriton_lite.integrations import cleanrl

from conftest import DEVICE


cleanrl_gae = cleanrl.loop  # CleanRL's own loop, the oracle


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 2e-5), (torch.float64, 1e-12)])
@pytest.mark.parametrize("num_steps,num_envs", [(1, 1), (128, 4), (37, 3)])
def test_cleanrl_gae(dtype, tol, num_steps, num_envs):
    g = torch.Generator().manual_seed(num_steps)
    rewards, values = (torch.randn(num_steps, num_envs, generator=g, dtype=dtype).to(DEVICE) for _ in range(2))
    dones = (torch.rand(num_steps, num_envs, generator=g) < 0.1).to(DEVICE, dtype)
    next_value = torch.randn(1, num_envs, generator=g, dtype=dtype).to(DEVICE)
    next_done = (torch.rand(num_envs, generator=g) < 0.3).to(DEVICE, dtype)
    want = cleanrl_gae(rewards, values, dones, next_value, next_done, 0.99, 0.95)
    for backend_value in (next_value, next_value.reshape(-1)):
        got = cleanrl.gae(rewards, values, dones, backend_value, next_done, gamma=0.99, gae_lambda=0.95)
        for g_, w_ in zip(got, want):
            torch.testing.assert_close(g_, w_.reshape(g_.shape), rtol=tol, atol=tol)


def test_cleanrl_gae_refuses_what_cleanrl_does_not_make():
    r = torch.randn(5, 2)
    with pytest.raises(TypeError, match="dones and next_done must be torch tensors"):
        cleanrl.gae(r, r, np.zeros((5, 2)), torch.zeros(1, 2), torch.zeros(2))
    with pytest.raises(ValueError, match="next_done"):
        cleanrl.gae(r, r, torch.zeros(5, 2), torch.zeros(1, 2), torch.zeros(3))


def _buffers(n_steps, n_envs, seed):
    import gymnasium as gym
    from stable_baselines3.common.buffers import RolloutBuffer as SB3Buffer

    from rltriton_lite.integrations.sb3 import RolloutBuffer

    rng = np.random.default_rng(seed)
    obs, act = gym.spaces.Box(-1, 1, (3,)), gym.spaces.Discrete(2)
    made = [cls(n_steps, obs, act, gae_lambda=0.9, gamma=0.97, n_envs=n_envs) for cls in (SB3Buffer, RolloutBuffer)]
    rewards, values = rng.normal(size=(2, n_steps, n_envs)).astype(np.float32)
    starts = (rng.random((n_steps, n_envs)) < 0.1).astype(np.float32)
    for b in made:
        b.rewards[:], b.values[:], b.episode_starts[:] = rewards, values, starts
    return made, torch.from_numpy(rng.normal(size=(n_envs, 1)).astype(np.float32)), rng.random(n_envs) < 0.5


@pytest.mark.parametrize("n_steps,n_envs", [(1, 1), (64, 4), (2048, 1)])
def test_sb3_rollout_buffer_matches_sb3(n_steps, n_envs):
    (theirs, ours), last_values, dones = _buffers(n_steps, n_envs, n_steps)
    rewards = ours.rewards.copy()
    theirs.compute_returns_and_advantage(last_values.clone(), dones.copy())
    ours.compute_returns_and_advantage(last_values.clone(), dones.copy())
    np.testing.assert_allclose(ours.advantages, theirs.advantages, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours.returns, theirs.returns, rtol=1e-5, atol=1e-5)
    assert ours.advantages.dtype == theirs.advantages.dtype == np.float32
    np.testing.assert_array_equal(ours.rewards, rewards)  # inputs untouched


def test_sb3_ppo_learns_the_same_with_either_buffer(tmp_path, monkeypatch):
    """Two PPO updates on CartPole from one seed: the same policy, either buffer class."""
    from stable_baselines3 import PPO

    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path))  # SB3's logger folder: else a new /tmp/SB3-<time> per model

    from rltriton_lite.integrations.sb3 import RolloutBuffer

    params = []
    for cls in (None, RolloutBuffer):
        kw = {} if cls is None else {"rollout_buffer_class": cls}
        model = PPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=64, n_epochs=1, seed=3, device="cpu", **kw)
        model.learn(total_timesteps=128)
        params.append(torch.nn.utils.parameters_to_vector(model.policy.parameters()).detach())
    torch.testing.assert_close(params[1], params[0], rtol=1e-4, atol=1e-5)


# ---- torchrl's functionals ---------------------------------------------------------------------
from torchrl.objectives.value import functional as trl  # noqa: E402

from rltriton_lite.integrations import torchrl as rlt  # noqa: E402


def _torchrl_rollout(B, T, dtype, seed, one_network=True):
    """[B, T, 1] tensors as torchrl keeps them; ``done`` true at terminations and truncations."""
    g = torch.Generator().manual_seed(seed)
    value = torch.randn(B, T + 1, 1, generator=g, dtype=dtype)
    reward = torch.randn(B, T, 1, generator=g, dtype=dtype)
    terminated = torch.rand(B, T, 1, generator=g) < 0.1
    done = terminated | (torch.rand(B, T, 1, generator=g) < 0.1)
    next_value = value[:, 1:].clone()
    # at an episode end the next state is the episode's last, not the next row entry
    next_value = torch.where(done, torch.randn(B, T, 1, generator=g, dtype=dtype), next_value)
    if not one_network:
        next_value = next_value + 0.1 * torch.randn(B, T, 1, generator=g, dtype=dtype)
    return [x.to(DEVICE) for x in (value[:, :-1].contiguous(), next_value, reward, done, terminated)]


# torchrl's float64 results carry float32 roundings (its discounts become float32 tensors): 1e-7
# off the float64 loop, where ours is 1e-15 off (checked below against reference.py)
@pytest.mark.parametrize("dtype,tol", [(torch.float32, 2e-5), (torch.float64, 2e-6)])
def test_torchrl_gae_and_td_lambda(dtype, tol):
    value, next_value, reward, done, terminated = _torchrl_rollout(3, 37, dtype, 1)
    leaves = [x.requires_grad_() for x in (value, next_value, reward)]
    ours = rlt.generalized_advantage_estimate(0.97, 0.9, value, next_value, reward, done, terminated)
    theirs = trl.vec_generalized_advantage_estimate(0.97, 0.9, value, next_value, reward, done, terminated)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, rtol=tol, atol=tol)
    if dtype == torch.float64:
        n = lambda x: x.detach()[..., 0].cpu().numpy()  # noqa: E731
        want, _ = reference.gae(n(reward), n(value), next_values=n(next_value), terminated=n(terminated),
                                truncated=n(done & ~terminated), gamma=0.97, lambda_=0.9)
        np.testing.assert_allclose(n(ours[0]), want, rtol=1e-12, atol=1e-12)
    w = torch.randn_like(reward)
    g_ours = torch.autograd.grad((ours[1] * w).sum(), leaves)
    g_theirs = torch.autograd.grad((theirs[1] * w).sum(), leaves)
    for a, b in zip(g_ours, g_theirs):
        torch.testing.assert_close(a, b, rtol=tol, atol=tol)
    ours = rlt.td_lambda_return_estimate(0.97, 0.9, next_value, reward, done, terminated)
    theirs = trl.vec_td_lambda_return_estimate(0.97, 0.9, next_value, reward, done, terminated)
    torch.testing.assert_close(ours, theirs, rtol=tol, atol=tol)
    g_ours = torch.autograd.grad((ours * w).sum(), leaves[1:])
    g_theirs = torch.autograd.grad((theirs * w).sum(), leaves[1:])
    for a, b in zip(g_ours, g_theirs):
        torch.testing.assert_close(a, b, rtol=tol, atol=tol)


def test_torchrl_vtrace_with_one_network():
    """Equal to torchrl's when next values are the values one step on, within episodes."""
    value, next_value, reward, done, terminated = _torchrl_rollout(3, 37, torch.float64, 2)
    g = torch.Generator().manual_seed(3)
    log_pi, log_mu = (0.5 * torch.randn(3, 37, 1, generator=g, dtype=torch.float64).to(DEVICE) for _ in range(2))
    ours = rlt.vtrace_advantage_estimate(0.97, log_pi, log_mu, value, next_value, reward, done, terminated,
                                         rho_thresh=1.0, c_thresh=0.9)
    theirs = trl.vtrace_advantage_estimate(0.97, log_pi, log_mu, value, next_value, reward, done, terminated,
                                           rho_thresh=1.0, c_thresh=0.9)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, rtol=2e-6, atol=2e-6)


def test_torchrl_vtrace_with_a_target_network_differs_by_design():
    """With next values from another network the c-correction reads V'_t here, V_{t+1} there."""
    value, next_value, reward, done, terminated = _torchrl_rollout(2, 20, torch.float64, 4, one_network=False)
    zero = torch.zeros_like(reward)
    ours = rlt.vtrace_advantage_estimate(0.97, zero, zero, value, next_value, reward, done, terminated)
    theirs = trl.vtrace_advantage_estimate(0.97, zero, zero, value, next_value, reward, done, terminated)
    assert not torch.allclose(ours[1], theirs[1])
    # on-policy with lambda = 1 ours is the TD(1) return on next_value: what the docstring says
    torch.testing.assert_close(ours[1], rlt.td_lambda_return_estimate(0.97, 1.0, next_value, reward, done, terminated))


def _tensordict_rollout(B=4, T=50, seed=5):
    """A rollout as a torchrl collector leaves it: ``("next", "obs")[t]`` is ``obs[t + 1]`` within
    an episode and the episode's last observation at its end."""
    from tensordict import TensorDict

    g = torch.Generator().manual_seed(seed)
    terminated = torch.rand(B, T, 1, generator=g) < 0.05
    done = terminated | (torch.rand(B, T, 1, generator=g) < 0.05)
    obs = torch.randn(B, T + 1, 3, generator=g)
    next_obs = torch.where(done, torch.randn(B, T, 3, generator=g), obs[:, 1:])
    return TensorDict({"obs": obs[:, :-1], "action_log_prob": 0.3 * torch.randn(B, T, 1, generator=g) - 1.4,
                       "action": torch.nn.functional.one_hot(torch.randint(0, 4, (B, T), generator=g), 4),
                       "next": {"obs": next_obs, "reward": torch.randn(B, T, 1, generator=g),
                                "done": done, "terminated": terminated}}, [B, T])


@pytest.mark.parametrize("name", ["GAE", "TDLambdaEstimator", "VTrace"])
def test_torchrl_estimators_replace_torchrl_s(name, monkeypatch):
    """Same constructor arguments and keys, the same advantage and value target, in the module
    a torchrl PPO or IMPALA loop calls, computed by the drop-in; torchrl's own module is untouched
    after."""
    from tensordict.nn import TensorDictModule
    from torchrl.modules import ProbabilisticActor
    from torchrl.objectives import value as trv

    calls = []
    for key, fn in list(rlt._DROP_INS.items()):
        monkeypatch.setitem(rlt._DROP_INS, key, lambda *a, _fn=fn, **k: calls.append(1) or _fn(*a, **k))

    torch.manual_seed(0)
    critic = TensorDictModule(torch.nn.Linear(3, 1), in_keys=["obs"], out_keys=["state_value"])
    if name == "VTrace":
        logits = TensorDictModule(torch.nn.Linear(3, 4), in_keys=["obs"], out_keys=["logits"])
        actor = ProbabilisticActor(logits, in_keys=["logits"], out_keys=["action"], return_log_prob=True,
                                   distribution_class=torch.distributions.OneHotCategorical)
        kw = dict(gamma=0.98, value_network=critic, actor_network=actor, c_thresh=0.9)
    else:
        kw = dict(gamma=0.98, lmbda=0.94, value_network=critic)
    data = _tensordict_rollout()
    ours, theirs = getattr(rlt, name)(**kw)(data.clone()), getattr(trv, name)(**kw)(data.clone())
    keys = ["value_target"] if name == "TDLambdaEstimator" else ["advantage", "value_target"]
    for k in keys:
        torch.testing.assert_close(ours[k], theirs[k], rtol=2e-5, atol=2e-5)
    assert len(calls) == 1  # the drop-in computed ours
    assert trl.vec_generalized_advantage_estimate.__module__.startswith("torchrl")
    from torchrl.objectives.value import advantages
    assert advantages.vec_generalized_advantage_estimate is trl.vec_generalized_advantage_estimate
