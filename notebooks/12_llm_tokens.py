# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 12 — Credit assignment over tokens: GAE for language models
#
# * **You will learn:** credit assignment over a language model's response tokens: the token-level
#   MDP, what each mask means, verl's loop against one masked scan, OpenRLHF's semantics on holes,
#   and the H200 timings.
# * **Time:** 3–3.5 h with the open questions; 1–1.5 h for the reading and the checked exercise.
# * **Needs:** notebooks 01 and 02. No GPU.
# * **Minimum path:** sections 1–4 and the checked exercise `token_gae_pairs` (it builds on 2–4).
#   Sections 5 (OpenRLHF on holes), 6, 7 (the H200 timings) and the open questions can wait.
#
# When PPO trains a language model (RLHF, or RL from verifiable rewards), the policy is the model,
# each sampled response is an episode, and its steps are its tokens. Stacks that train these
# models, verl and OpenRLHF among them, compute the advantages with a Python loop over the tokens.
# Each step launches about a dozen small GPU kernels, so a response of a few thousand tokens means
# tens of thousands of launches.
#
# **The question of this notebook:** can one masked scan replace that loop, with the same numbers,
# and what does it save? **The answer:** yes. One masked scan gives verl's numbers at every
# $\gamma$ and $\lambda$ (section 4). On an H200 it was far faster than a line-for-line copy of
# verl's loop. At every shape timed it was also faster than a cumulative sum, a few PyTorch ops
# that compute only verl's default $\gamma = \lambda = 1$.
#
# The verl drop-in adds verl's whitening, which makes it slower than the cumulative sum at most
# shapes, though still far faster than the loop. Section 7 has the figures.

# %%
import inspect
import json
import os

import numpy as np
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # Triton kernels on the CPU

import matplotlib.pyplot as plt
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

import rltriton_lite as rl
from rltriton_lite import bench, exercises, profile
from rltriton_lite.integrations import openrlhf, verl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# the Triton kernels: compiled on a GPU, in the interpreter on a CPU (backend="auto" takes the PyTorch path on a CPU)
KERNEL = "triton"
GAMMA, LAM = 0.99, 0.95

# %% [markdown]
# ## 1. A response is an episode
#
# **In short:** the state is the prompt and the tokens so far, the action is the next token, and
# the reward is a KL penalty per token plus the outcome score at the last one. GAE runs backwards
# along the response.
#
# What are the state, the action and the reward of a language model's episode? Write the prompt as
# $x$ and the response as tokens $y_0, y_1, \dots, y_{T-1}$; the last is the end-of-sequence token
# (EOS).
#
# * **state** $s_t = (x, y_0, \dots, y_{t-1})$: the prompt and the tokens generated so far.
#
# * **action** $u_t = y_t$: the next token, sampled from $\pi_\theta(\cdot \mid s_t)$. As in
#   notebooks 03 to 07, $u$ is an action, because $a_t$ is the scan's multiplier (the exercise
#   uses it).
#
# * **transition**: the token is appended. Between two policy tokens this is deterministic. In a
#   multi-turn response, a tool's output is appended too: that part of the transition comes from
#   the environment (section 2). The episode ends after EOS. A response cut at the maximum length
#   has no EOS: it is *truncated*, not ended. This notebook, like verl's loop (section 3), treats
#   it as ended, so GAE below starts from $V = 0$ after it; question 2 bootstraps it correctly.
#
# * **reward**: at every token, a KL penalty that keeps the policy near a frozen reference model,
#   $r_t = -\beta\,\big(\log \pi_\theta(y_t \mid s_t) - \log \pi_{\text{ref}}(y_t \mid s_t)\big)$,
#   where $\log \pi_\theta$ is the sampling policy's log-probability, held fixed (no gradient flows
#   through the reward).
#   At the last token only, add the outcome score of the whole response (a reward model's score, or
#   a verifier's 1 for a correct answer).
#
# * **value**: the critic $V(s_t)$, one number per token (a value head on a copy of the model).
#
# GAE (notebook 02) runs backwards along the response, from $V = 0$ after the last token:
#
# $$\delta_t = r_t + \gamma V(s_{t+1}) - V(s_t), \qquad \hat A_t = \delta_t + \gamma\lambda \hat A_{t+1},
#   \qquad \text{returns}_t = \hat A_t + V(s_t).$$
#
# **Why $\gamma = \lambda = 1$ is common.** A response ends (or is cut at the length limit), and
# the outcome score should reach the first token undiminished. Then the recurrence telescopes to
# $\hat A_t = \sum_{k \ge t} r_k - V(s_t)$: a reversed cumulative sum, a few PyTorch ops (section 6).
#
# **Why people want $\gamma, \lambda < 1$.** With $\lambda = 1$, an early token's advantage carries
# the noise of every later token and of the outcome: unbiased, high variance. With $\lambda < 1$ the
# critic stands in for that noisy tail (notebook 03's bias–variance trade-off). With $\gamma < 1$, a
# reward reached in fewer tokens is worth more. As soon as $\gamma\lambda \ne 1$, the cumulative
# sum no longer applies.
#
# **What verl runs.** verl's default configuration (0.9.1) sets $\gamma = \lambda = 1$. Yet its
# function (section 3) has no cumulative-sum branch: it runs the per-token loop at every $\gamma$
# and $\lambda$, its defaults included. In this notebook the cumulative sum is only a yardstick for
# $\gamma = \lambda = 1$ (sections 6 and 7).
#
# <details><summary>Details: the KL term, and the critic at γ = λ = 1</summary>
#
# Some stacks put the KL term in the loss instead; their reward is the outcome alone. PPO pays for
# a value head either way: at $\gamma = \lambda = 1$ the critic is still the baseline subtracted in
# $\hat A_t = \sum_{k \ge t} r_k - V(s_t)$, and with $\lambda < 1$ the advantage also bootstraps
# from it. And $\gamma < 1$ pushes against padding a response with reasoning that does not help.
#
# </details>

# %% [markdown]
# ## 2. What the masks mean
#
# A batch of responses is a rectangle, `(batch, response_length)`. Which of its positions are
# actions of the policy? Three kinds of position are not:
#
# * **The prompt.** It is the first state $s_0$, not an action.
#
# * **Padding after EOS.** The episode is over; these positions exist only because other responses
#   are longer. Their rewards are 0, and whatever the critic wrote there must never be read.
#
# * **Tool output inside a multi-turn response.** The model writes a tool call, the environment
#   appends the tool's output, and the model continues. The policy did not choose those tokens: they
#   are part of the transition from the state before them to the state after them. The loss skips
#   them, and so must credit assignment.
#
# The response mask (verl's `response_mask`, OpenRLHF's `action_mask`) is 1 at the policy's tokens
# and 0 at the padding and the tool output. Below, a small batch is drawn, one prompt and its
# response per row.
#
# <details><summary>Details: where the prompt lives in verl and OpenRLHF</summary>
#
# verl keeps prompts and responses in separate tensors: prompts padded on the left, responses on
# the right. It computes the advantages on the response tensor alone, so the prompt is not in it at
# all. OpenRLHF's `action_mask` likewise covers only the generated part. Tool output is typically a
# search result or a program's output; the policy token before it leads, through the environment,
# to the state at the next policy token.
#
# </details>

# %%
POLICY, TOOL, PAD = 0, 1, 2  # what a position of the response tensor holds


def make_batch(B, T, seed=0, holes=True, dtype=torch.float64):
    """A batch of responses, right-padded to T: ``kind`` (B, T) (POLICY, TOOL or PAD), and the
    rewards, values and mask (True at the policy's tokens) as tensors. A response is T/3 to T
    tokens; with ``holes``, most of them hold a span of tool output."""
    rng = np.random.default_rng(seed)
    kind = np.full((B, T), PAD)
    for b in range(B):
        n = T if b == 0 else int(rng.integers(T // 3, T + 1))  # the first response fills the window
        kind[b, :n] = POLICY
        if holes and n > 12 and rng.random() < 0.7:
            start = int(rng.integers(2, n - 8))
            kind[b, start:start + int(rng.integers(2, 7))] = TOOL  # ends before the response's last token
    mask = kind == POLICY
    last = np.array([np.flatnonzero(m)[-1] for m in mask])  # the EOS token of each response
    rewards = np.where(mask, -0.05 * np.abs(rng.normal(size=(B, T))), 0.0)  # the KL penalty, per token
    rewards[np.arange(B), last] += rng.normal(size=B)  # the outcome score, at EOS
    values = rng.normal(size=(B, T))  # the critic's output at every position: read at the policy's tokens only
    as_tensor = lambda x, dt=dtype: torch.tensor(x, dtype=dt, device=DEVICE)  # noqa: E731
    return kind, as_tensor(rewards), as_tensor(values), as_tensor(mask, torch.bool)


# %%
PROMPT_LEN = 10  # the prompt tensor's width: prompts are left-padded to it
kind, _, _, small_mask = make_batch(6, 40, seed=3)
rng = np.random.default_rng(3)
prompt = np.where(np.arange(PROMPT_LEN)[None, :] >= PROMPT_LEN - rng.integers(3, PROMPT_LEN + 1, size=(6, 1)), 3, 4)
picture = np.concatenate([prompt, kind], 1)  # 0 policy, 1 tool, 2 padding after EOS, 3 prompt, 4 prompt padding
colors = ["tab:blue", "tab:orange", "0.9", "tab:green", "0.75"]
names = ["policy token (an action)", "tool output (the environment's)", "padding after EOS", "prompt (the first state)",
         "prompt padding"]
fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 4.6), dpi=100, layout="constrained")
top.imshow(picture, cmap=ListedColormap(colors), vmin=-0.5, vmax=4.5, aspect="auto", interpolation="nearest")
top.set_title("One batch: prompts (left-padded) and responses (right-padded); the response tensor starts at the line")
top.set_xlabel("position in the sequence (tokens)")
bottom.imshow(small_mask.cpu().numpy(), cmap=ListedColormap(["white", "black"]), aspect="auto", interpolation="nearest",
              extent=(PROMPT_LEN - 0.5, PROMPT_LEN + 39.5, 5.5, -0.5))
bottom.text(PROMPT_LEN / 2 - 0.5, 2.5, "not in the\nresponse tensor", ha="center", va="center", fontsize=9)
bottom.set_title("The response mask (black = 1): what verl's response_mask and OpenRLHF's action_mask hold")
bottom.set_xticks(PROMPT_LEN + np.arange(0, 40, 5), [f"{t}" for t in range(0, 40, 5)])
bottom.set_xlabel("position t in the response")
for ax in (top, bottom):
    ax.axvline(PROMPT_LEN - 0.5, color="k", lw=2)
    ax.set_xlim(-0.5, PROMPT_LEN + 39.5)
    ax.set_ylabel("response")
top.legend(handles=[Patch(color=c, label=n) for c, n in zip(colors, names)], loc="upper left",
           bbox_to_anchor=(1.01, 1.0), fontsize=9)
plt.show()

# %% [markdown]
# The same batch as numbers. The mask is 1 exactly at the policy's tokens. Tool output sits inside
# a response, with a policy token after it, and every response ends with a policy token.

# %%
print("tokens per response:", (kind != PAD).sum(1), " of which tool output:", (kind == TOOL).sum(1))

# %% jupyter={"source_hidden": true}
# Checks: the sentences above, on this batch (CI runs them; skip when reading)
assert torch.equal(small_mask.cpu(), torch.tensor(kind == POLICY))  # the mask is 1 exactly at the policy's tokens
tool_rows = [b for b in range(6) if (kind[b] == TOOL).any()]  # tool output has a policy token after it
assert tool_rows and all((kind[b, np.flatnonzero(kind[b] == TOOL).max() + 1:] == POLICY).any() for b in tool_rows)

# %% [markdown]
# ## 3. The loop: verl's GAE
#
# **In short:** verl's GAE is a Python loop over the tokens. Two masked lines skip the masked tokens, as if they were deleted from the
# response.
#
# Below is verl 0.9.1's `compute_gae_advantage_return`, from the file
# `verl/trainer/ppo/core_algos.py`, line for line, minus its whitening (section 4). Version 0.9.1 is
# the one CI installs: `tests/test_llm_integrations.py` runs that release's own function against
# `integrations.verl`.
#
# Two masked lines are the whole treatment. At a masked token, `nextvalues` and `lastgaelam` pass
# through unchanged. That holds only while the inputs there are finite: the loop multiplies by the
# mask, so a NaN at a masked token would poison its row (0 · NaN = NaN). verl's loop is not NaN-safe;
# yours must be, so select instead of multiplying. The policy token just before a span of tool output
# bootstraps from the value at the first policy token after it, and continues from that token's
# advantage. The masked tokens are skipped as if deleted from the response.

# %%
def verl_gae_loop(token_level_rewards, values, response_mask, gamma, lam):
    """verl 0.9.1's compute_gae_advantage_return before its whitening: (advantages, returns)."""
    nextvalues = 0
    lastgaelam = 0
    advantages_reversed = []
    for t in reversed(range(token_level_rewards.shape[-1])):
        delta = token_level_rewards[:, t] + gamma * nextvalues - values[:, t]
        lastgaelam_ = delta + gamma * lam * lastgaelam
        # skip values and TD-error on observation tokens
        nextvalues = values[:, t] * response_mask[:, t] + (1 - response_mask[:, t]) * nextvalues
        lastgaelam = lastgaelam_ * response_mask[:, t] + (1 - response_mask[:, t]) * lastgaelam
        advantages_reversed.append(lastgaelam)
    advantages = torch.stack(advantages_reversed[::-1], dim=1)
    return advantages, advantages + values


# %% [markdown]
# A batch to check against: 8 responses of up to 200 tokens, in float64, with right padding and
# tool output inside most of them. verl's masks are 0/1 numbers (`keep` below); ours are booleans.

# %%
B, T = 8, 200
kind, rewards, values, mask = make_batch(B, T, seed=0)
keep = mask.to(torch.float64)
adv_loop, ret_loop = verl_gae_loop(rewards, values, keep, GAMMA, LAM)
print(f"{B} responses of {T} positions: {int(mask.sum())} policy tokens, {int((kind == TOOL).sum())} tool tokens "
      f"in {int((kind == TOOL).any(1).sum())} responses, {int((kind == PAD).sum())} padding")

# %% jupyter={"source_hidden": true}
# Checks: the batch as the text describes it (tool output inside most responses, right padding),
# section 7 times bench.token_gae_loop, this same loop, and the loop has no other branch
# (CI runs them; skip when reading)
assert (kind == TOOL).any(1).sum() >= 3 and mask[0, -1] and (kind == PAD).any()
adv_bench, _ = bench.token_gae_loop(rewards, values, keep, GAMMA, LAM)
assert torch.allclose(adv_bench, adv_loop, rtol=0, atol=1e-12)
_nan = float("nan")  # section 3's "a NaN at a masked token would poison its row": verl multiplies by the mask
_poisoned, _ = verl_gae_loop(torch.tensor([[1.0, _nan, 3.0, _nan]]), torch.tensor([[4.0, _nan, 2.0, _nan]]),
                             torch.tensor([[1.0, 0.0, 1.0, 0.0]]), 0.5, 0.5)
assert torch.isnan(_poisoned).all()
_loop_src = inspect.getsource(verl_gae_loop)  # "no cumulative-sum branch" (section 1): one loop, no if, no cumsum
assert _loop_src.count("for t in reversed(range(") == 1 and " if " not in _loop_src and "cumsum" not in _loop_src
_adv11, _ = verl_gae_loop(rewards, values, keep, 1.0, 1.0)  # at γ = λ = 1 the loop runs, with the sum's numbers
assert torch.allclose(_adv11[mask], bench.token_cumsum(rewards, values, keep)[0][mask], rtol=0, atol=1e-12)
# the original's file and function, as the drop-in names them: verl/trainer/ppo/core_algos.py
assert "``verl.trainer.ppo.core_algos``, verl 0.9.1" in verl.__doc__
assert "core_algos.compute_gae_advantage_return = compute_gae_advantage_return" in inspect.getsource(verl.install)

# %% [markdown]
# "As if deleted" holds literally. Cut each response down to its policy tokens, run plain GAE on
# the shorter row (no mask), and put the advantages back where the tokens came from. At the policy
# tokens, the loop's advantages are exactly those.

# %%
deleted = torch.zeros_like(rewards)
for b in range(B):
    idx = mask[b].nonzero()[:, 0]
    short = rl.gae(rewards[b, idx][None], values[b, idx][None], gamma=GAMMA, lambda_=LAM)
    deleted[b, idx] = short.advantages[0]
err = (deleted - adv_loop)[mask].abs().max().item()
print(f"max |deleted-and-compacted GAE − verl's loop| at the policy tokens: {err:.1e}")
assert err < 1e-12

# %% [markdown]
# ## 4. The scan beside the loop
#
# **In short:** one call, `rl.gae(..., mask=)`, gives the loop's numbers. `integrations.verl` adds
# the two things verl's function does beyond that, and matches it element for element.
#
# The package's `mask=` means exactly "as if deleted": a masked step is removed, and the step
# before it bootstraps from the next unmasked step. So verl's loop is one call:
#
# ```python
# rl.gae(rewards, values, gamma=gamma, lambda_=lam, mask=mask)
# ```
#
# Inside, the call is a reverse scan of the affine maps $\hat A \mapsto \delta_t + \gamma\lambda \hat A$
# over the policy tokens, where a masked token is the identity map. One more piece is needed:
# $\delta_t$ reads $V(s_{t+1})$ at the next *unmasked* token, which may lie across a hole. Finding
# that value is a reverse scan of the values, **the value look-ahead**. `rl.gae(mask=)` runs it for
# you, inside the call. The exercise `token_gae_pairs` builds it with an `rl.linear_scan` of its own.
#
# Where the value look-ahead runs on a GPU is for maintainers:
# [notebook 13c, section 5.2](13c_inside_the_package.ipynb#5.2-The-look-ahead's-launches).
#
# The cell runs both backends, `"auto"` (the PyTorch path on a CPU) and `"triton"` (the kernel),
# and checks every policy token against the loop to 1e-12 in float64.

# %%
for backend in ("auto", KERNEL):
    out = rl.gae(rewards, values, gamma=GAMMA, lambda_=LAM, mask=mask, backend=backend)
    err_adv = (out.advantages - adv_loop)[mask].abs().max().item()
    err_ret = (out.returns - ret_loop)[mask].abs().max().item()
    print(f"backend={backend!r}: max |scan − loop| at the policy tokens: advantages {err_adv:.1e}, "
          f"returns {err_ret:.1e}; at masked tokens the scan writes {out.advantages[~mask].abs().max().item():g}")
    assert err_adv < 1e-12 and err_ret < 1e-12
    assert torch.all(out.advantages[~mask] == 0)  # a deleted step has no output

# %% [markdown]
# They agree. (Nothing is timed here: the interpreter's times say nothing about a GPU. Section 7
# has the GPU's numbers.)
#
# **Left padding and packed rows.** Left padding is masked, so it is as if deleted, like the prompt.
# A row that packs several responses one after another needs one thing more: a reset at each
# response's last token. Without it the scan carries the next response's value and advantage back
# across the boundary. `rl.gae` takes the reset as `terminated=`, True at each response's last
# token: there $\delta_t = r_t - V_t$, and the advantage starts afresh. Below, one row packs two
# responses, each after its masked prompt, then padding (the first prompt, at the row's front, is
# masked as left padding would be). With the flags it matches two separate calls on the responses
# alone; without them, it does not.

# %%
packed_mask = torch.tensor([[0, 0, 1, 1, 1, 0, 0, 1, 1, 0]], dtype=torch.bool)  # prompt, response, prompt, response, pad
ends = torch.zeros_like(packed_mask)
ends[0, 4] = ends[0, 8] = True  # each response's last token
gen = torch.Generator().manual_seed(1)
r_pk, v_pk = (torch.randn(1, 10, generator=gen, dtype=torch.float64) for _ in range(2))
alone = torch.zeros_like(r_pk)  # each response alone: its policy tokens only, no mask
for lo, hi in [(2, 5), (7, 9)]:
    alone[:, lo:hi] = rl.gae(r_pk[:, lo:hi], v_pk[:, lo:hi], gamma=GAMMA, lambda_=LAM).advantages
for flags in (ends, None):
    packed = rl.gae(r_pk, v_pk, gamma=GAMMA, lambda_=LAM, mask=packed_mask, terminated=flags).advantages
    gap = (packed - alone)[packed_mask].abs().max().item()
    print(f"{'with' if flags is not None else 'without'} the reset flags: max |packed − alone| = {gap:.2g}")
    assert gap < 1e-12 if flags is not None else gap > 0.1

# %% [markdown]
# **The drop-in.** verl's function does two things more than the masked scan:
#
# * **At the masked tokens it does not write 0.** It leaves the advantage it carries, that of the
#   next policy token (0 after the last), and `returns = advantages + values` there too.
# * **It whitens the advantages over the mask:** mean 0 and variance 1 over the policy tokens.
#
# `integrations.verl.compute_gae_advantage_return` gives all of it, element for element, in three
# steps:
#
# 1. the masked `gae` call;
# 2. **the advantage hand-off**: one `linear_scan` that hands each masked token the next policy
#    token's advantage. Its $b$ is the advantage (0 at masked tokens); its $a$ is 0 at every policy
#    token and 1 at the masked ones. A policy token resets to its own advantage, and a masked token,
#    $y_t = 0 + 1 \cdot y_{t+1}$, copies the output one step later. (It has the value look-ahead's
#    form, run on the advantages after the `gae` call, not on the values inside it.)
#    `rl.linear_scan` reads an input $a_t = 0$ as a reset flag and selects $y_t = b_t$, so a NaN
#    after it never leaks back;
# 3. verl's whitening.
#
# The advantage hand-off on five tokens, two of them policy tokens (1 in the mask):
#
# | token | 0 | 1 | 2 | 3 | 4 |
# |---|---|---|---|---|---|
# | mask | 1 | 0 | 0 | 1 | 0 |
# | $b$: the advantage, 0 where masked | 0.5 | 0 | 0 | −1.5 | 0 |
# | $a$: 0 at a policy token, 1 at a masked one | 0 | 1 | 1 | 0 | 1 |
# | the scan's output $y$ | 0.5 | −1.5 | −1.5 | −1.5 | 0 |
#
# Tokens 1 and 2 get token 3's advantage. Token 4 has no policy token after it, so it gets 0.

# %% jupyter={"source_hidden": true}
# Checks: the advantage hand-off's row, by rl.linear_scan (CI runs them; skip when reading)
_mask = torch.tensor([[True, False, False, True, False]])
_b = torch.where(_mask, torch.tensor([[0.5, 9.0, 9.0, -1.5, 9.0]]), 0.0)  # the advantage, 0 where masked
_a = (~_mask).float()  # 0 at a policy token, 1 at a masked one
assert _b.tolist() == [[0.5, 0.0, 0.0, -1.5, 0.0]] and _a.tolist() == [[0.0, 1.0, 1.0, 0.0, 1.0]]
assert rl.linear_scan(_a, _b).tolist() == [[0.5, -1.5, -1.5, -1.5, 0.0]]  # the table's last row
# a = 0 selects y_t = b_t, so the NaN after it does not leak back; a = 1 copies the next value
_handoff = rl.linear_scan(torch.tensor([[0.0, 1.0, 0.0, 0.0]]), torch.tensor([[2.0, 0.0, 5.0, float("nan")]]))
assert _handoff[0, :3].tolist() == [2.0, 5.0, 5.0] and torch.isnan(_handoff[0, 3])

# %%
print(inspect.getsource(verl.compute_gae_advantage_return))

# %% [markdown]
# Below, the drop-in is checked against the loop followed by verl's `masked_whiten`, at every
# position, masked ones included.
#
# <details><summary>Details: the whitening, and integer masks</summary>
#
# The whitening is written out with verl's $10^{-8}$ terms and the unbiased variance. verl's masks
# can be integers; then its whitening rounds the token count through float32, and the drop-in
# rounds the same way. The repository's `tests/test_llm_integrations.py` checks that, and checks
# the drop-in against verl's own function. Your folder does not have that test file.
#
# </details>

# %%
def whiten(x, m):
    """verl's masked_whiten: (x - mean) / sqrt(var + 1e-8), mean and unbiased variance over the mask."""
    n = m.sum()
    mean = (x * m).sum() / (n + 1e-8)
    var = ((x - mean) ** 2 * m).sum() / (n + 1e-8) * (n / (n - 1))
    return (x - mean) * torch.rsqrt(var + 1e-8)


adv_drop, ret_drop = verl.compute_gae_advantage_return(rewards, values, keep, GAMMA, LAM)
want = whiten(adv_loop, keep)
err_adv, err_ret = (adv_drop - want).abs().max().item(), (ret_drop - ret_loop).abs().max().item()
print(f"integrations.verl against verl's loop + whitening, every position: advantages {err_adv:.1e}, "
      f"returns {err_ret:.1e}")
assert err_adv < 1e-12 and err_ret < 1e-12

# %% jupyter={"source_hidden": true}
# Checks: the whitening, mean 0 and variance 1 over the policy tokens (CI runs them; skip when reading)
assert abs(adv_drop[mask].mean().item()) < 1e-9 and abs(adv_drop[mask].std().item() - 1) < 1e-6

# %% [markdown]
# ## 5. OpenRLHF's semantics: the same on right padding, not on holes
#
# **In short:** OpenRLHF agrees with verl on right padding. On a hole of tool output inside a
# response it does not: every token before the hole gets a different advantage.
#
# OpenRLHF multiplies the values and rewards by the mask, then runs plain GAE over every position,
# as trlx, DeepSpeed-Chat and TRL did before it. So it reads $V(s_{t+1})$ at position $t + 1$,
# whatever the mask says there. `integrations.openrlhf.get_advantages_and_returns` is that
# computation, as one scan.
#
# * **On right padding** it gives verl's answer at every policy token: the last token's next value
#   is 0 either way, and the reverse scan carries nothing from the padding's zeros.
# * **On a hole inside a response** it does not.

# %%
def advantages_both(holes, gamma=GAMMA, lam=LAM, seed=0):
    """verl's and OpenRLHF's advantages (before verl's whitening) on one batch, and its mask."""
    _, r, v, m = make_batch(8, 200, seed=seed, holes=holes)
    a_verl = rl.gae(r, v, gamma=gamma, lambda_=lam, mask=m).advantages
    a_orl, _ = openrlhf.get_advantages_and_returns(v, r, m.to(r.dtype), gamma, lam)
    return a_verl, a_orl, m


for holes in (False, True):
    a_verl, a_orl, m = advantages_both(holes)
    gap = (a_verl - a_orl)[m].abs().max().item()
    print(f"{'tool output inside responses' if holes else 'right padding only':>30}: "
          f"max |verl − OpenRLHF| at the policy tokens {gap:.2e}")
    assert (gap < 1e-12) if not holes else (gap > 1e-2)

# %% [markdown]
# Where a hole makes the difference: one response of 60 tokens with a correct answer (outcome
# score 1) and a fair critic (the discounted return to come, shrunk a little, plus noise). Left
# without a hole, right with 10 tokens of tool output at positions 20–29.

# %%
T1 = 60
rng = np.random.default_rng(5)
r1 = -0.01 * np.abs(rng.normal(size=T1))  # the KL penalty
r1[-1] += 1.0  # the outcome score
to_come = rl.discounted_returns(torch.tensor(r1)[None], gamma=GAMMA)[0].numpy()
v1 = 0.8 * to_come + 0.05 * rng.normal(size=T1)
r1, v1 = torch.tensor(r1)[None], torch.tensor(v1)[None]
m_full = torch.ones(1, T1, dtype=torch.bool)
m_hole = m_full.clone()
m_hole[0, 20:30] = False  # the tool's output
curves = {}
for label, m in (("no hole", m_full), ("a hole at 20–29", m_hole)):
    a_v = rl.gae(r1, v1, gamma=GAMMA, lambda_=LAM, mask=m).advantages
    a_o, _ = openrlhf.get_advantages_and_returns(v1, r1, m.double(), GAMMA, LAM)
    curves[label] = (m[0], a_v[0], a_o[0])

fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), dpi=100, sharey=True, layout="constrained")
for ax, (label, (m, a_v, a_o)) in zip(axes, curves.items()):
    t = np.arange(T1)
    # NaN inside the hole breaks each line there: no value is drawn where there is no policy token
    ax.plot(t, np.where(m.numpy(), a_v.numpy(), np.nan), "o-", ms=3, label="verl (the hole deleted)", color="tab:blue")
    ax.plot(t, np.where(m.numpy(), a_o.numpy(), np.nan), "x--", ms=4, color="tab:red",
            label="OpenRLHF (values × mask, V read at t + 1)")
    if not m.all():
        ax.axvspan(19.5, 29.5, color="tab:orange", alpha=0.2, label="tool output (masked)")
    ax.set_title(f"one response, {label}; γ = {GAMMA}, λ = {LAM}")
    ax.set_xlabel("position t in the response")
    ax.legend(fontsize=8, loc="lower right")
axes[0].set_ylabel(r"advantage $\hat A_t$ at the policy tokens")
plt.show()

# %% [markdown]
# Left, the two lines are one. Right, they separate at the token before the hole, and every earlier
# token keeps a difference, because GAE carries it backwards.
#
# Why, at token 19? Write $V_t$ for $V(s_t)$ and $\hat A_{30}$ for the advantage at token 30, the same
# in both. OpenRLHF zeroes the hole's values and rewards. So token 19 bootstraps from $V = 0$,
# positions 20–28 have $\delta_t = 0$, and position 29 has $\delta_{29} = \gamma V_{30}$, which
# reaches token 19 discounted by $(\gamma\lambda)^{10}$. verl deletes the hole, so token 19
# bootstraps from $V_{30}$:
#
# $$\text{verl: } \hat A_{19} = r_{19} - V_{19} + \gamma\,(V_{30} + \lambda\hat A_{30}), \qquad
# \text{OpenRLHF: } \hat A_{19} = r_{19} - V_{19} + (\gamma\lambda)^{10}\,\gamma\,(V_{30} + \lambda\hat A_{30}).$$
#
# Their difference is $\gamma\,(1 - (\gamma\lambda)^{10})\,(V_{30} + \lambda\hat A_{30})$. Since
# $\gamma\lambda < 1$, its sign is that of $V_{30} + \lambda\hat A_{30}$, not of the value alone.
# Here that is above 0, so OpenRLHF's advantages before the hole are lower; where it is below 0,
# they are higher.
#
# For a state in the middle of an episode, $V = 0$ is simply wrong. Here the answer was correct, yet
# every token before the tool call gets a lower advantage than it earned, as if calling the tool had
# cost something.
#
# Which to use? verl's treats the tool output as part of the transition, as section 2's MDP says.
# But if your trainer's other code (its loss, its value targets) was written for OpenRLHF's, keep
# the two consistent.

# %% jupyter={"source_hidden": true}
# Checks: the claims above, after and before the hole (CI runs them; skip when reading)
m, a_v, a_o = curves["a hole at 20–29"]
assert torch.allclose(a_v[30:], a_o[30:], rtol=0, atol=1e-12)  # after the hole: the same
assert (a_v[:20] - a_o[:20]).min() > 1e-3  # before it: every token lower in OpenRLHF's
gl = GAMMA * LAM  # the gap at token 19, as the text's formula says
assert torch.isclose(a_v[19] - a_o[19], GAMMA * (1 - gl ** 10) * (v1[0, 30] + LAM * a_v[30]), rtol=1e-9, atol=0)
_tail = GAMMA * (v1[0, 30] + LAM * a_v[30])  # γ (V_30 + λ Â_30), Â_30 the same in both
assert torch.isclose(a_v[19], r1[0, 19] - v1[0, 19] + _tail, rtol=1e-9, atol=0)  # verl's line
assert torch.isclose(a_o[19], r1[0, 19] - v1[0, 19] + gl ** 10 * _tail, rtol=1e-9, atol=0)  # OpenRLHF's line
_zeroed = openrlhf.get_advantages_and_returns(v1, r1, m.double(), GAMMA, LAM)[0][0]  # δ_29 = γ V_30: Â_29 = γ V_30 + γλ Â_30
assert torch.isclose(_zeroed[29], _tail, rtol=1e-9, atol=0) and gl < 1
assert v1[0, 30] + LAM * a_v[30] > 0  # "here that is above 0": OpenRLHF's lower
m0, a_v0, a_o0 = curves["no hole"]
assert torch.allclose(a_v0, a_o0, rtol=0, atol=1e-12)

# %% [markdown]
# ## 6. The shortcut: $\gamma = \lambda = 1$ as a cumulative sum
#
# What would $\gamma = \lambda = 1$ buy? GAE's returns become the rewards summed from each token
# to the end: a reversed cumulative sum, a few PyTorch ops (a flip, a cumsum, a flip back). On an
# H200 the scan still beat it at every shape (section 7's table).
#
# The advantages are the returns minus the values. The masks cost one product: `rewards * mask`
# zeroes the masked rewards, and a sum does not care where its zeros sit. That product is section
# 3's pattern: a NaN reward at a masked token would poison every earlier token of its row
# (0 · NaN = NaN). Like verl's loop, the shortcut is not NaN-safe. The harness calls it the "cumsum shortcut":

# %%
print(inspect.getsource(bench.token_cumsum))
adv_cum, ret_cum = bench.token_cumsum(rewards, values, keep)
one = rl.gae(rewards, values, gamma=1.0, lambda_=1.0, mask=mask)
err = max((adv_cum - one.advantages)[mask].abs().max().item(), (ret_cum - one.returns)[mask].abs().max().item())
print(f"cumsum shortcut against rl.gae(gamma=1, lambda_=1, mask=) at the policy tokens: {err:.1e}")
assert err < 1e-12

# %% jupyter={"source_hidden": true}
# Checks: "it computes something else whenever γλ ≠ 1", and "not NaN-safe" (CI runs them; skip when reading)
assert (adv_cum - adv_loop)[mask].abs().max() > 0.1  # not GAE with λ = 0.95
_adv_nan, _ = bench.token_cumsum(torch.tensor([[1.0, 2.0, float("nan"), 3.0]]), torch.zeros(1, 4),
                                 torch.tensor([[1.0, 1.0, 0.0, 1.0]]))  # a NaN reward at a masked token
assert torch.isnan(_adv_nan[0, :3]).all() and _adv_nan[0, 3] == 3.0  # every earlier token poisoned

# %% [markdown]
# ## 7. On an H200: the loop, the shortcut and the scan
#
# **In short:** `rl.gae(mask=)` was the fastest of the four implementations at every shape timed,
# and over 4,000 times faster than verl's per-token loop (one H200; committed results, not
# measured here).
#
# The four are the per-token loop, the cumulative sum, `rl.gae(mask=)` and the drop-in
# `integrations.verl`, timed from 256 responses of 1,024 tokens to 4 of a million. The table gives
# the wall time per call, and the GPU time where a CUDA graph could capture the call.
#
# <details><summary>Details: the four implementations, and the timing file</summary>
#
# | implementation | what it is |
# |---|---|
# | **per-token loop** | section 3's loop (`bench.token_gae_loop`), on the GPU |
# | **cumsum shortcut (γ = λ = 1)** | section 6's; it computes something else whenever $\gamma\lambda \ne 1$ |
# | **rl.gae(mask=)** | section 4's one call, the value look-ahead inside it |
# | **integrations.verl** | the drop-in: `rl.gae(mask=)`, then the advantage hand-off and verl's whitening |
#
# | file | what it measured | card | read in |
# |---|---|---|---|
# | `benchmarks/results/tokens/H200-2026-12-03.json` | the four implementations above at five shapes, float32, γ = 0.99, λ = 0.95 (the cumsum computes γ = λ = 1): wall time per call, and GPU time by CUDA-graph replay (none for the loop, nor for the drop-in, whose host sync cannot be captured) | one H200, 2026-12-03, torch 2.11, Triton 3.6 | section 7: its printout and its table |
#
# [Notebook 14, section 1](14_appendix_data.ipynb) says how the file was timed.
#
# </details>

# %%
TOKENS_FILE = os.path.join(profile.results_folder(), "tokens", "H200-2026-12-03.json")  # read by its name
res = json.load(open(TOKENS_FILE, encoding="utf-8"))
LOOP, CUMSUM, OURS, DROP_IN = bench.TOKEN_IMPLS
rows = res["rows"]
wall = {(r["B"], r["T"], r["impl"]): r["wall_us"] for r in rows}
gpu = {(r["B"], r["T"], r["impl"]): r["gpu_us"] for r in rows}
shapes = sorted({(r["B"], r["T"]) for r in rows}, key=lambda s: (s[0] * s[1], s[1]))


def about(x):
    """A ratio to 2 significant figures, as text: 0.78×, 16×, 2,000,000×."""
    x = float(f"{x:.2g}")
    return f"{x:,.0f}×" if x >= 10 else f"{x:g}×"


times = [{"B × T": profile.shape_name(s), "tokens": s[0] * s[1], "loop µs": wall[(*s, LOOP)],
          "cumsum µs": wall[(*s, CUMSUM)], "cumsum GPU µs": gpu[(*s, CUMSUM)],
          "rl.gae µs": wall[(*s, OURS)], "rl.gae GPU µs": gpu[(*s, OURS)],
          "verl drop-in µs": wall[(*s, DROP_IN)]} for s in shapes]
print(f"{res['gpu']}, {res['date']} ({os.path.basename(TOKENS_FILE)}, not measured here): wall time per call "
      f"(GPU time: CUDA-graph replay), γ = {res['gamma']}, λ = {res['lam']}, float32\n")
print(profile.table(times, digits=3))

# %% [markdown]
# What else the table shows:
#
# * **The loop** pays per step of $T$, whatever the batch.
# * **The cumulative sum** ($\gamma = \lambda = 1$ only) was 1.3 to 16 times slower than
#   `rl.gae(mask=)`, furthest behind on the few very long responses.
# * **The drop-in** was 8.6 to 13.6 times slower than `rl.gae(mask=)` (380 µs against 28 at
#   256×1024), and slower than the cumulative sum at 4 of the 5 shapes. To `rl.gae(mask=)` it adds
#   the advantage hand-off (one `linear_scan`) and verl's whitening, about twenty small PyTorch
#   ops. The whitening also calls `n.item()` (`n`, the mask's sum, is a GPU tensor) to read the
#   token count on the host, which waits for the GPU to finish all the work queued before it (and
#   is why the drop-in cannot be captured in a CUDA graph). How the extra time splits among these
#   was not measured.
# * **Not timed:** verl's own function, and a loop captured in a CUDA graph or fused into one kernel.
#
# [Notebook 14, section 11](14_appendix_data.ipynb#11.-Notebook-12's-token-level-timings,-in-detail) gives the other figures and why each implementation is slower.

# %% jupyter={"source_hidden": true}
# Checks: the claims above, on the committed figures (CI runs them; skip when reading)
assert all(k.endswith("µs") for k in times[0] if k not in ("B × T", "tokens"))  # the printed table: one unit, µs
assert {r["impl"] for r in rows} == set(bench.TOKEN_IMPLS)  # the four implementations of the table
# the Sources table: one H200, 2026-12-03, torch 2.11, Triton 3.6, five shapes, float32; no GPU time for the drop-in
assert (res["gpu"], res["date"]) == ("NVIDIA H200", "2026-12-03") and res["date"] in os.path.basename(TOKENS_FILE)
assert res["versions"]["torch"].startswith("2.11") and res["versions"]["triton"].startswith("3.6") and len(shapes) == 5
assert all(r["gpu_us"] is None for r in rows if r["impl"] in (LOOP, DROP_IN))
assert all(r["gpu_us"] is not None for r in rows if r["impl"] in (CUMSUM, OURS))  # "GPU time where ... capture"
assert bench.token_inputs(2, 8, "cpu")[0].dtype == torch.float32  # the harness's inputs
assert (res["gamma"], res["lam"]) == (0.99, 0.95)  # the Sources table's "γ = 0.99, λ = 0.95"
assert list(inspect.signature(bench.token_cumsum).parameters) == ["rewards", "values", "mask"]  # "(the cumsum computes γ = λ = 1)": it takes no γ, λ
assert all((B_, T_, k) in wall for B_, T_ in shapes for k in bench.TOKEN_IMPLS), "a shape with an impl missing"
per_token = [wall[(*s, LOOP)] / s[1] for s in shapes]
assert max(per_token) < 2 * min(per_token)  # the loop's time per step of T, whatever the batch
assert [round(min(per_token)), round(max(per_token))] == [131, 177]  # question 3: "131 to 177 µs per step"
for s in shapes:
    assert wall[(*s, LOOP)] > 4000 * wall[(*s, OURS)], s  # "over 4,000 times faster than the loop" at every shape
    assert wall[(*s, OURS)] < wall[(*s, CUMSUM)], s  # and faster than the shortcut, in this run
    assert wall[(*s, OURS)] == min(wall[(*s, k)] for k in bench.TOKEN_IMPLS), s  # "the fastest of the four"
    assert wall[(*s, DROP_IN)] > wall[(*s, OURS)] and gpu[(*s, DROP_IN)] is None, s  # the whitening's host sync
vs_sum = {s: wall[(*s, CUMSUM)] / wall[(*s, OURS)] for s in shapes}  # the cumulative sum's wall time ÷ rl.gae's
assert min(vs_sum.values()) > 1  # the sum "slower than rl.gae(mask=)" at every shape
assert max(vs_sum, key=vs_sum.get) == (4, 1048576)  # "furthest behind on the few very long responses"
assert (about(min(vs_sum.values())), about(max(vs_sum.values()))) == ("1.3×", "16×")  # "1.3 to 16 times"
drop_in_x = {s: wall[(*s, DROP_IN)] / wall[(*s, OURS)] for s in shapes}  # the drop-in's wall time ÷ rl.gae's
assert [round(min(drop_in_x.values()), 1), round(max(drop_in_x.values()), 1)] == [8.6, 13.6]  # "8.6 to 13.6 times"
_drop_in = inspect.getsource(verl.compute_gae_advantage_return)  # "the advantage hand-off ... and verl's whitening"
assert _drop_in.count("linear_scan(") == 1 and "masked_whiten(adv, response_mask)" in _drop_in
assert _drop_in.count("gae(") == 1 and "mask=valid" in _drop_in  # the drop-in starts from rl.gae(mask=)
assert round(wall[(256, 1024, DROP_IN)]) == 380 and round(wall[(256, 1024, OURS)]) == 28  # "380 µs against 28"
# "about twenty small PyTorch ops", and "calls `n.item()` ... waits for the GPU": the whitening's code
_whiten = inspect.getsource(verl.masked_whiten).split('"""')[-1]  # its body, after the docstring
assert _whiten.count("n.item()") == 1 and "count = n.item()" in _whiten
assert "n = m.sum()" in _whiten  # "`n`, the mask's sum"
_ops = sum(_whiten.count(o) for o in (".sum()", "torch.where(", " * ", " / ", " - ", " + ", "**2", "rsqrt("))
assert 17 <= _ops <= 23, _ops  # counted on the code's operators: 19
# the drop-in against the cumulative sum ("most shapes" in the introduction and in "What you now know")
_slower = [s for s in shapes if wall[(*s, DROP_IN)] > wall[(*s, CUMSUM)]]
assert len(shapes) == 5 and _slower == [s for s in shapes if s != (4, 1048576)]  # slower than the sum at 4 of the 5

# %% [markdown]
# The same wall times, drawn against the tokens per batch (left) and the response length $T$ (right).

# %%
styles = {LOOP: ("tab:red", "o"), CUMSUM: ("tab:gray", "s"), OURS: ("tab:blue", "^"), DROP_IN: ("tab:cyan", "v")}
fig, axes = plt.subplots(1, 2, figsize=(11.5, 4.4), dpi=100, layout="constrained")
for ax, (x_of, xlabel) in zip(axes, ((lambda s: s[0] * s[1], "tokens per batch (B × T)"),
                                      (lambda s: s[1], "response length T (tokens)"))):
    for k in bench.TOKEN_IMPLS:
        pts = sorted((x_of(s), wall[(*s, k)], s) for s in shapes)
        color, marker = styles[k]
        line = "none" if ax is axes[0] else "-" if k != CUMSUM else "--"  # left: points only (two shapes share 1M)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=marker, color=color, label=k, ls=line)
    for s in shapes:  # name each shape at the loop's point
        ax.annotate(profile.shape_name(s), (x_of(s), wall[(*s, LOOP)]), textcoords="offset points", xytext=(4, 4),
                    fontsize=7, color="tab:red")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ticks = sorted({x_of(s) for s in shapes})
    ax.set_xticks(ticks, [f"{x >> 20}M" if x >= 1 << 20 else f"{x >> 10}K" for x in ticks])
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.set_xlabel(xlabel + ", K = 1,024, M = 1,024²")
    ax.set_ylabel("wall time per call (µs, log scale)")
    ax.grid(True, which="major", alpha=0.3)
    ax.margins(x=0.1)
axes[0].legend(fontsize=8, loc="center right")
fig.suptitle(f"Token-level GAE on an {res['gpu']}: committed results ({os.path.basename(TOKENS_FILE)}), "
             f"not measured here; γ = {res['gamma']}, λ = {res['lam']}", fontsize=10)
plt.show()

# %% jupyter={"source_hidden": true}
# Checks: the drawing's note (CI runs them; skip when reading)
_tokens = [b * t for b, t in shapes]
assert [s_ for s_ in shapes if _tokens.count(s_[0] * s_[1]) > 1] == [(256, 4096), (8, 131072)]  # "two shapes ..."
assert 256 * 4096 == 8 * 131072 == 1 << 20  # "... a million tokens each" (1M on the axis)
assert len({t for _, t in shapes}) == len(shapes)  # the right panel: one point per T, so its lines never go vertical

# %% [markdown]
# ## Exercises
#
# Checked, as in notebook 00b: write the starter's function and run the cell after it.
# `print(exercises.task("token_gae_pairs"))` restates the task. The solution is in
# `notebooks/solutions/`.
#
# **`token_gae_pairs`.** Write verl's GAE as the pairs $(a_t, b_t)$ of one reverse scan,
# $y_t = b_t + a_t y_{t+1}$. The checker runs the scan (`rl.linear_scan`). The mask is a boolean
# tensor. $y$ must be verl's advantages before its whitening, at every position, masked tokens
# included. What you need:
#
# * A masked token is as if deleted: the identity, $(a, b) = (1, 0)$.
# * At a policy token, $a = \gamma\lambda$ and $b = \delta_t$. Its $V(s_{t+1})$ is the value at the
#   next policy token, across any hole.
# * You may call `rl.linear_scan` yourself, inside the function.
# * The checker fills the masked positions of `rewards` and `values` with numbers that must not be
#   read.
#
# <details><summary>Hint 1: where to start</summary>
#
# Section 3's loop shows the pairs. At a masked token, it passes everything through unchanged. At
# a policy token, it takes notebook 02's GAE step. The hard part is $V(s_{t+1})$ across a hole:
# section 4's value look-ahead, a reverse scan of the values. The drop-in's advantage hand-off
# (section 4) is the same trick on the advantages.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Zero the values at masked tokens with `torch.where`. They must never be read.
# * Reverse-scan those values: $a = 0$ (a reset) at policy tokens, $a = 1$ at masked ones.
#   `rl.linear_scan` treats $a = 0$ as a reset and selects $y_t = b_t$, never multiplies, so a NaN
#   later in the row never leaks back.
# * Its output at $t$ is $V$ at the first policy token at or after $t$.
# * Shift it one step left, with 0 after the last position. That is $V(s_{t+1})$.
# * Then $\delta_t = r_t + \gamma V(s_{t+1}) - V(s_t)$.
# * $a = \gamma\lambda$ at policy tokens, 1 elsewhere. $b = \delta_t$ at policy tokens, 0 elsewhere.
# * Build $b$ with `torch.where` too: $\delta_t$ at a masked token may be NaN.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# Take one response of four tokens, $\gamma = \lambda = 0.5$: a policy token, a tool token, a policy
# token, padding (`mask` $=$ True, False, True, False). Rewards $1, \text{NaN}, 3, \text{NaN}$ and
# values $4, \text{NaN}, 2, \text{NaN}$: the NaNs sit where nothing may be read.
#
# * $t = 0$: the next policy token is $t = 2$, across the hole: $\delta_0 = 1 + 0.5 \cdot 2 - 4 = -2$.
# * $t = 2$: no policy token after it, so $V = 0$ there: $\delta_2 = 3 + 0.5 \cdot 0 - 2 = 1$.
# * So $a = 0.25, 1, 0.25, 1$ and $b = -2, 0, 1, 0$, with no NaN anywhere.
# * The scan, from the end: $y_3 = 0$, $y_2 = 1$, $y_1 = 0 + 1 \cdot 1 = 1$, $y_0 = -2 + 0.25 \cdot 1 = -1.75$.
#
# ```python
# nan = float("nan")
# a_c, b_c = token_gae_pairs(torch.tensor([[1.0, nan, 3.0, nan]], device=DEVICE), torch.tensor([[4.0, nan, 2.0, nan]], device=DEVICE),
#                            torch.tensor([[True, False, True, False]], device=DEVICE), 0.5, 0.5)
# print(a_c.cpu(), b_c.cpu(), rl.linear_scan(a_c, b_c).cpu())
# # must print tensor([[0.2500, 1.0000, 0.2500, 1.0000]]) tensor([[-2.,  0.,  1.,  0.]]) tensor([[-1.7500,  1.0000,  1.0000,  0.0000]])
# ```
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# * **The values, zeroed:** `torch.where` keeps a value where `mask` is True and puts 0 elsewhere.
# * **$V$ from here:** one `rl.linear_scan` of those values. Its $a$ is the mask negated, in the
#   values' dtype: 0 (a reset) at a policy token, 1 at a masked one.
# * **$V(s_{t+1})$:** that output without its first column, with a column of zeros appended at the
#   end (`torch.cat` along the last axis).
# * **$\delta_t$:** $r_t + \gamma V(s_{t+1}) - V(s_t)$, at every position at once. The masked
#   positions may hold NaN: the pair below drops them.
# * **The pair:** `torch.where` on the mask, twice. $a$ is $\gamma\lambda$ or 1; $b$ is
#   $\delta_t$ or 0.
#
# If a check still fails, `print(exercises.fix("token_gae_pairs"))` shows what to change.
#
# </details>

# %%
def token_gae_pairs(rewards, values, mask, gamma, lam):
    # YOUR CODE: return (a, b), tensors shaped like rewards
    raise NotImplementedError

# %%
exercises.attempt("token_gae_pairs", token_gae_pairs)

# %% [markdown]
# Without a checker:
#
# *(Answer each in its cell below: your teacher's grader collects the answers from
# them.)*
#
# 1. Predict from the recurrence, then rerun: with $\gamma = \lambda = 1$, holes included, do
#    verl's and OpenRLHF's advantages still differ at the policy tokens? Write your prediction and
#    its reason first, then rerun section 5's comparison to check it.
#
# 2. A response cut at the maximum length has no EOS: its episode was truncated, not ended.
#    What does verl's loop bootstrap from after its last token? Write the `rl.gae` call that
#    bootstraps a truncated response from a value `v_after` and ends the others at their EOS,
#    masks included, and check it against a loop. (A pointer: with `mask=`, `bootstrap_value` is
#    read after the row's last policy token, across any trailing padding, as section 4's "as if
#    deleted" says.)
#
#    <details><summary>Check yourself</summary>
#
#    verl's loop starts from `nextvalues = 0`: it treats a truncated response as ended. The call is
#    `rl.gae(rewards, values, gamma=, lambda_=, mask=mask, bootstrap_value=torch.where(trunc, v_after, 0.0))`,
#    with `trunc` a boolean per response and `v_after` the critic's value of the state after the
#    cut. On three responses (one truncated, one cut inside a tool's output, one ended at its EOS
#    before the padding) it matches a plain loop over the policy tokens to float64 precision:
#
#    ```python
#    g, l = 0.99, 0.95
#    gen = torch.Generator().manual_seed(0)
#    r = torch.randn(3, 8, dtype=torch.float64, generator=gen)
#    v = torch.randn(3, 8, dtype=torch.float64, generator=gen)
#    m = torch.tensor([[1, 1, 0, 0, 1, 1, 1, 1],   # truncated: no EOS
#                      [1, 1, 1, 1, 1, 1, 0, 0],   # truncated inside a tool's output (masked)
#                      [1, 1, 1, 1, 1, 0, 0, 0]],  # ended at its EOS, then padding
#                     dtype=torch.bool)
#    trunc = torch.tensor([True, True, False])
#    v_after = torch.tensor([2.0, -1.5, 5.0], dtype=torch.float64)  # the third is never read
#    boot = torch.where(trunc, v_after, 0.0)
#    adv = rl.gae(r, v, gamma=g, lambda_=l, mask=m, bootstrap_value=boot).advantages
#    want = torch.zeros_like(r)
#    for b in range(3):  # plain GAE over the policy tokens, from V = boot after the last
#        next_v, A = boot[b], 0.0
#        for t in reversed(range(8)):
#            if m[b, t]:
#                A = r[b, t] + g * next_v - v[b, t] + g * l * A
#                next_v, want[b, t] = v[b, t], A
#    print((adv - want).abs().max())  # about 1e-16
#    ```
#
#    </details>
#
# 3. Count the kernels that section 3's loop, `verl_gae_loop`, launches per position of the
#    response: the tensor operations of one iteration. (Section 7 times `bench.token_gae_loop`, the
#    same loop with the same operations per position.) For $T = 4096$, how many launches is one
#    call? Take the loop's wall time per step of T from section 7's table (its loop µs ÷ T: 131 to
#    177 µs per step across the five shapes) and divide it by your count: what is each operation's
#    host overhead (dispatch and launch)?

# %% jupyter={"source_hidden": true}
# Checks: question 2's "Check yourself", its code as printed, on both backends (CI runs them; skip when reading)
assert "nextvalues = 0\n" in inspect.getsource(verl_gae_loop)  # "verl's loop starts from nextvalues = 0"
assert "bootstrap_value" in inspect.signature(rl.gae).parameters  # the argument's name
g, l = 0.99, 0.95
gen = torch.Generator().manual_seed(0)
r = torch.randn(3, 8, dtype=torch.float64, generator=gen)
v = torch.randn(3, 8, dtype=torch.float64, generator=gen)
m = torch.tensor([[1, 1, 0, 0, 1, 1, 1, 1],   # truncated: no EOS
                  [1, 1, 1, 1, 1, 1, 0, 0],   # truncated inside a tool's output (masked)
                  [1, 1, 1, 1, 1, 0, 0, 0]],  # ended at its EOS, then padding
                 dtype=torch.bool)
trunc = torch.tensor([True, True, False])
v_after = torch.tensor([2.0, -1.5, 5.0], dtype=torch.float64)  # the third is never read
boot = torch.where(trunc, v_after, 0.0)
want = torch.zeros_like(r)
for b in range(3):  # plain GAE over the policy tokens, from V = boot after the last
    next_v, A = boot[b], 0.0
    for t in reversed(range(8)):
        if m[b, t]:
            A = r[b, t] + g * next_v - v[b, t] + g * l * A
            next_v, want[b, t] = v[b, t], A
for backend in ("auto", KERNEL):
    adv = rl.gae(r.to(DEVICE), v.to(DEVICE), gamma=g, lambda_=l, mask=m.to(DEVICE), bootstrap_value=boot.to(DEVICE),
                 backend=backend).advantages.cpu()
    assert (adv - want).abs().max() < 1e-12, backend  # "to float64 precision"
# the bootstrap matters: ending the truncated responses at V = 0 instead changes their advantages
_ended = rl.gae(r, v, gamma=g, lambda_=l, mask=m).advantages
assert (_ended - want)[:2][m[:2]].abs().min() > 0 and torch.allclose(_ended[2], want[2], rtol=0, atol=1e-12)

# %% [markdown] tags=["answer-1"]
# **Answer 1.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-2"]
# **Answer 2.** *Your answer here (code for it: in cells under this one).*

# %% [markdown] tags=["answer-3"]
# **Answer 3.** *Your answer here (code for it: in cells under this one).*

# %% [markdown]
# ## What you now know
#
# * A response is an episode. The state is the prompt and the tokens so far; the action is the
#   next token. The reward is a per-token KL penalty plus the outcome score at the last token.
#
# * The response mask is 1 at the policy's tokens only. The prompt, the padding after EOS and tool
#   output are not actions. A masked token is as if deleted: the identity map.
#
# * verl's per-token loop is one call, `rl.gae(rewards, values, gamma=, lambda_=, mask=)`; the
#   value look-ahead runs inside it. `integrations.verl` adds what verl writes at masked tokens
#   (the advantage hand-off), and its whitening.
#
# * OpenRLHF agrees with verl on right padding but not on a hole inside a response. It bootstraps
#   from the hole's zeroed value, which shifts every advantage before the tool call: down where
#   $V + \lambda\hat A$ at the first token after the hole is above 0 (as in section 5's example, a
#   response with a correct answer), up where it is below.
#
# * With $\gamma = \lambda = 1$, GAE is a reversed cumulative sum, $\hat A_t = \sum_{k \ge t} r_k -
#   V(s_t)$. verl never uses it.
#
# * On the committed H200 results, the loop's time grows with the response length, whatever the
#   batch. The scan pays mostly per call. At every shape it is faster than the γ = λ = 1
#   cumulative sum, and far faster than the loop, which is bound by per-op host overhead. Those
#   are `rl.gae`'s results: the verl drop-in, with its whitening, is slower than the cumulative sum
#   at most shapes. Section 7's table has the figures.
