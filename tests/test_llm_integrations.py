"""The LLM-RL drop-ins (integrations.verl, integrations.openrlhf) against loops written in this
project from each stack's semantics, on token-level batches: right-padded responses, multi-turn
masks (spans of tool tokens masked inside a response), an outcome reward at EOS plus per-token
KL rewards; every output at every position, masked ones included.

The loops are float64 NumPy transcriptions of verl 0.9.1's ``compute_gae_advantage_return``,
``compute_reinforce_plus_plus_outcome_advantage`` and ``masked_whiten`` and of OpenRLHF's
``get_advantages_and_returns`` / ``get_cumulative_returns`` (OpenRLHF's module imports vLLM and
Ray, so its loop is checked here as written from its semantics).

verl's own functions are checked too: ``pip install --no-deps verl==0.9.1`` (CI does; importing
``verl`` itself pulls in Ray, and ``core_algos`` Ray, transformers and more through modules these
functions never use), then the functions' source is read from the installed package and run in
a namespace of torch alone: verl's code, none of its imports. Without verl installed those tests
skip, except where ``RLT_VERL_TEST=required`` (CI), where they fail.
"""
from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import os
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from rltriton_lite.integrations import openrlhf, verl

from conftest import DEVICE


def _batch(B, T, seed=0, holes=True, dtype=torch.float64):
    """(rewards, values, mask): right-padded responses of random lengths, tool spans masked inside
    some, per-token KL rewards plus an outcome reward at each response's last token."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, T + 1, size=B)
    mask = np.arange(T)[None, :] < lengths[:, None]
    if holes:
        for b in range(B):
            if lengths[b] > 6 and rng.random() < 0.7:  # a tool call's output inside the response
                lo = rng.integers(1, lengths[b] - 3)
                mask[b, lo:lo + rng.integers(1, 4)] = False
    kl = -0.05 * np.abs(rng.normal(size=(B, T)))
    rewards = np.where(mask, kl, 0.0)
    last = np.array([np.flatnonzero(m)[-1] for m in mask])
    rewards[np.arange(B), last] += rng.normal(size=B)  # the outcome reward, at EOS
    values = rng.normal(size=(B, T))
    t = lambda x, dt=dtype: torch.tensor(x, dtype=dt, device=DEVICE)  # noqa: E731
    return t(rewards), t(values), t(mask.astype(np.int64), torch.int64)


def _whiten(x, m):
    """verl_F.masked_whiten in torch, as verl writes it: an integer mask's sum plus 1e-8, and the
    Bessel factor of two integers, are float32 (torch's default dtype), which rounds."""
    x, m = torch.tensor(x), torch.tensor(m, dtype=torch.int64)

    def masked_mean(v):
        return (torch.where(m.bool(), v, 0.0) * m).sum() / (m.sum() + 1e-8)

    mean = masked_mean(x)
    var = masked_mean((x - mean) ** 2) * (m.sum() / (m.sum() - 1))
    return ((x - mean) * torch.rsqrt(var + 1e-8)).numpy()


def _verl_gae(r, v, m, gamma, lam):
    B, T = r.shape
    adv, nextv, last = np.zeros((B, T)), np.zeros(B), np.zeros(B)
    for t in reversed(range(T)):
        delta = r[:, t] + gamma * nextv - v[:, t]
        new = delta + gamma * lam * last
        nextv = np.where(m[:, t], v[:, t], nextv)
        last = np.where(m[:, t], new, last)
        adv[:, t] = last
    return _whiten(adv, m), adv + v


def _verl_reinforce(r, m, gamma):
    B, T = r.shape
    ret, run = np.zeros((B, T)), np.zeros(B)
    for t in reversed(range(T)):
        new = r[:, t] + gamma * run
        ret[:, t] = np.where(m[:, t], new, 0.0)
        run = np.where(m[:, t], new, run)
    return _whiten(ret, m) * m, ret


def _openrlhf_gae(v, r, m, gamma, lam):
    v, r = v * m, r * m
    B, T = r.shape
    adv, last = np.zeros((B, T)), np.zeros(B)
    for t in reversed(range(T)):
        nextv = v[:, t + 1] if t < T - 1 else 0.0
        last = r[:, t] + gamma * nextv - v[:, t] + gamma * lam * last
        adv[:, t] = last
    return adv, adv + v


def _openrlhf_returns(r, m, gamma):
    r = r * m
    out, run = np.zeros_like(r), np.zeros(r.shape[0])
    for t in reversed(range(r.shape[1])):
        run = r[:, t] + gamma * run
        out[:, t] = run
    return out


def _np(*xs):
    return [x.detach().double().cpu().numpy() for x in xs]


SHAPES = [(1, 1), (3, 7), (16, 97), (4, 1000)]


@pytest.mark.parametrize("holes", [False, True], ids=["right padding", "multi-turn holes"])
@pytest.mark.parametrize("B,T", SHAPES, ids=[f"{b}x{t}" for b, t in SHAPES])
def test_verl_gae_is_verls(B, T, holes):
    r, v, m = _batch(B, T, seed=B * T, holes=holes)
    if int(m.sum()) < 2:  # verl's whitening refuses one element
        with pytest.raises(ValueError, match="mask is one"):
            verl.compute_gae_advantage_return(r, v, m, 0.99, 0.95)
        return
    adv, ret = verl.compute_gae_advantage_return(r, v, m, 0.99, 0.95)
    want_adv, want_ret = _verl_gae(*_np(r, v, m), 0.99, 0.95)
    np.testing.assert_allclose(_np(adv)[0], want_adv, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(ret)[0], want_ret, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("holes", [False, True], ids=["right padding", "multi-turn holes"])
def test_verl_reinforce_plus_plus_is_verls(holes):
    r, _, m = _batch(8, 300, seed=3, holes=holes)

    class Config:
        gamma = 0.97

    adv, ret = verl.compute_reinforce_plus_plus_outcome_advantage(r, m, config=Config())
    want_adv, want_ret = _verl_reinforce(*_np(r, m), 0.97)
    np.testing.assert_allclose(_np(ret)[0], want_ret, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(adv)[0], want_adv, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("holes", [False, True], ids=["right padding", "multi-turn holes"])
def test_openrlhf_is_openrlhfs(holes):
    r, v, m = _batch(8, 300, seed=5, holes=holes)
    adv, ret = openrlhf.get_advantages_and_returns(v, r, m, 0.99, 0.95)
    want_adv, want_ret = _openrlhf_gae(*_np(v, r, m), 0.99, 0.95)
    np.testing.assert_allclose(_np(adv)[0], want_adv, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(ret)[0], want_ret, rtol=1e-12, atol=1e-12)
    got = openrlhf.get_cumulative_returns(r, m, 0.97)
    np.testing.assert_allclose(_np(got)[0], _openrlhf_returns(*_np(r, m), 0.97), rtol=1e-12, atol=1e-12)


def test_verl_and_openrlhf_agree_on_right_padding_and_differ_on_holes():
    """The README's advice: on right padding the two stacks' GAE advantages are the same numbers
    at the response tokens (before verl's whitening); on holes they are not."""
    for holes, same in ((False, True), (True, False)):
        r, v, m = _batch(8, 200, seed=7, holes=holes)
        a_verl = _verl_gae(*_np(r, v, m), 0.99, 0.95)[1] - _np(v)[0]  # verl's advantages before whitening
        a_orl, _ = openrlhf.get_advantages_and_returns(v, r, m, 0.99, 0.95)
        resp = _np(m)[0] != 0
        close = np.allclose(a_verl[resp], _np(a_orl)[0][resp], rtol=1e-10, atol=1e-10)
        assert close == same, (holes, np.abs(a_verl[resp] - _np(a_orl)[0][resp]).max())


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.bfloat16, 1e-5)], ids=["float32", "bfloat16"])
def test_verl_gae_in_low_precision_values(dtype, tol):
    """float32 rewards with float32 or bfloat16 values, against the loop on the same rounded values."""
    r, v, m = _batch(16, 257, seed=11)
    r, v = r.float(), v.to(dtype)
    adv, ret = verl.compute_gae_advantage_return(r, v, m, 0.99, 0.95)
    want_adv, want_ret = _verl_gae(*_np(r, v, m), 0.99, 0.95)
    assert adv.dtype == torch.float32 and ret.dtype == torch.float32
    np.testing.assert_allclose(_np(adv)[0], want_adv, rtol=tol, atol=tol * np.abs(want_adv).max())
    np.testing.assert_allclose(_np(ret)[0], want_ret, rtol=tol, atol=tol * np.abs(want_ret).max())


def test_a_long_response():
    """One response of 10^5 tokens with tool spans: the scan against verl's loop."""
    r, v, m = _batch(1, 100_000, seed=13)
    adv, ret = verl.compute_gae_advantage_return(r, v, m, 0.999, 0.95)
    want_adv, want_ret = _verl_gae(*_np(r, v, m), 0.999, 0.95)
    np.testing.assert_allclose(_np(ret)[0], want_ret, rtol=1e-12, atol=1e-11)
    np.testing.assert_allclose(_np(adv)[0], want_adv, rtol=1e-12, atol=1e-11)


def _verl():
    """verl 0.9.1's compute_gae_advantage_return, compute_reinforce_plus_plus_outcome_advantage and
    the masked_* helpers they call, from the installed package's source (see the module docstring)."""
    spec = importlib.util.find_spec("verl")
    if spec is None or importlib.metadata.version("verl") != "0.9.1":
        why = "verl 0.9.1 is not installed: pip install --no-deps verl==0.9.1"
        if os.environ.get("RLT_VERL_TEST") == "required":
            pytest.fail(why)
        pytest.skip(why)
    root = Path(spec.submodule_search_locations[0])

    def functions(path, names, namespace):
        for node in ast.parse((root / path).read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name in names:
                node.decorator_list = []  # (verl's estimator registry)
                exec(compile(ast.Module([node], []), str(root / path), "exec"), namespace)
        missing = [n for n in names if n not in namespace]
        assert not missing, f"verl 0.9.1's {path} has no {missing}"
        return namespace

    verl_F = types.SimpleNamespace(**{k: v for k, v in functions(
        "utils/torch_functional.py", ("masked_sum", "masked_mean", "masked_var", "masked_whiten"),
        {"torch": torch}).items() if k.startswith("masked_")})
    return types.SimpleNamespace(**{k: v for k, v in functions(
        "trainer/ppo/core_algos.py", ("compute_gae_advantage_return", "compute_reinforce_plus_plus_outcome_advantage"),
        {"torch": torch, "verl_F": verl_F, "Optional": __import__("typing").Optional, "AlgoConfig": object}).items()
        if k.startswith("compute_")})


@pytest.mark.parametrize("holes", [False, True], ids=["right padding", "multi-turn holes"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
def test_equal_to_verls_own_functions(holes, dtype):
    real = _verl()
    for B, T in ((1, 1), (5, 33), (16, 1000)):
        r, v, m = _batch(B, T, seed=B + T, holes=holes)
        r, v = r.to(dtype), v.to(dtype)
        tol = dict(rtol=1e-12, atol=1e-12) if dtype == torch.float64 else dict(rtol=1e-5, atol=1e-5)
        if int(m.sum()) < 2:
            continue  # (verl's whitening refuses fewer than two elements: so does ours, tested above)
        got, want = verl.compute_gae_advantage_return(r, v, m, 0.99, 0.95), \
            real.compute_gae_advantage_return(r, v, m, 0.99, 0.95)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            torch.testing.assert_close(g, w, **tol)

        class Config:
            gamma = 0.97

        got = verl.compute_reinforce_plus_plus_outcome_advantage(r, m, config=Config())
        want = real.compute_reinforce_plus_plus_outcome_advantage(r, m, config=Config())
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, **tol)


def test_the_harness_loop_and_shortcut():
    """``python -m rltriton_lite.bench --tokens`` times bench.token_gae_loop as the per-token loop
    and bench.token_cumsum as the γ = λ = 1 shortcut: the loop is verl's (its returns equal verl's
    own function's), the shortcut is GAE with γ = λ = 1 at the response tokens, and the harness's
    inputs have padding and holes."""
    from rltriton_lite import bench, gae

    r, v, m = bench.token_inputs(6, 64, DEVICE)
    assert (m[1::2].diff(dim=-1) > 0).any() and not m.all(), "every other row has a hole, rows are padded"
    r, v = r.double(), v.double()
    adv, ret = bench.token_gae_loop(r, v, m, 0.99, 0.95)
    torch.testing.assert_close(ret, _verl().compute_gae_advantage_return(r, v, m, 0.99, 0.95)[1], rtol=1e-12, atol=1e-12)
    ours = gae(r, v, gamma=0.99, lambda_=0.95, mask=m)
    torch.testing.assert_close(ours.advantages * m, adv * m, rtol=1e-12, atol=1e-12)
    cum_adv, cum_ret = bench.token_cumsum(r, v, m)
    one = gae(r, v, gamma=1.0, lambda_=1.0, mask=m)
    torch.testing.assert_close(cum_ret * m, one.returns, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(cum_adv * m, one.advantages, rtol=1e-12, atol=1e-12)
