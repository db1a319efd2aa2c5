"""Drop-ins for the RL libraries that call GAE and its kin in a Python loop.

Each submodule imports its library only when it is imported itself:

* ``rltriton_lite.integrations.cleanrl``: ``gae`` with CleanRL ppo.py's names, shapes and done
  convention;
* ``rltriton_lite.integrations.sb3``: ``RolloutBuffer`` for ``PPO(..., rollout_buffer_class=...)``;
* ``rltriton_lite.integrations.torchrl``: torchrl's value functionals (GAE, TD(λ), V-trace),
  same signatures and results;
* ``rltriton_lite.integrations.verl``: verl's token-level GAE and REINFORCE++ (``install``
  routes a verl run through them);
* ``rltriton_lite.integrations.openrlhf``: OpenRLHF's (trlx's) token-level GAE and returns.
"""
