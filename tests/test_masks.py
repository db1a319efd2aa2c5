"""Masked steps are transparent in every algorithm: a call with a mask equals, at its unmasked
steps, the same call on each row with the masked steps deleted, and gives 0 at masked steps, with
garbage (NaN, ±Inf, 1e30) in every masked element and random flags there; gradients likewise
(0, and finite, at masked steps). On the Triton kernel and the torch path."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import rltriton_lite as rl
from rltriton_lite import config, reference
from rltriton_lite import masks as masks_module
from rltriton_lite.masks import without_masked_steps
from rltriton_lite.config import Config

from conftest import DEVICE

GARBAGE = (float("nan"), float("inf"), -float("inf"), 1e30)
PATTERNS = ("right padding", "left padding", "holes", "all masked", "none masked")


def _mask(pattern, T, rng):
    m = np.ones(T, bool)
    if pattern == "right padding":
        m[rng.integers(1, T):] = False
    elif pattern == "left padding":
        m[:rng.integers(1, T)] = False
    elif pattern == "holes":
        m[rng.random(T) < 0.35] = False
        m[T // 2] = False  # a hole for sure, at a step with steps on both sides
    elif pattern == "all masked":
        m[:] = False
    return m


# name -> (call(inputs, **kw), float per-step inputs, per-row inputs, differentiable inputs)
def _sac(x, **kw):
    return rl.sac_targets(x["rewards"], [x["q1"], x["q2"]], x["next_log_probs"], log_probs=x["log_probs"],
                          gamma=0.9, alpha=0.3, lambda_=0.8, **kw)


ALGORITHMS = {
    "discounted_returns": (lambda x, **kw: rl.discounted_returns(x["rewards"], gamma=0.9,
                                                                  bootstrap_value=x["bootstrap_value"], **kw),
                           ("rewards",), ("bootstrap_value",), ("rewards", "bootstrap_value")),
    "gae": (lambda x, **kw: rl.gae(x["rewards"], x["values"], gamma=0.9, lambda_=0.8,
                                   bootstrap_value=x["bootstrap_value"], **kw),
            ("rewards", "values"), ("bootstrap_value",), ("rewards", "values", "bootstrap_value")),
    "gae, next_values given": (lambda x, **kw: rl.gae(x["rewards"], x["values"], next_values=x["next_values"],
                                                      gamma=0.9, lambda_=0.8, truncated=x["truncated"], **kw),
                               ("rewards", "values", "next_values"), (), ("rewards", "values", "next_values")),
    "td_lambda": (lambda x, **kw: rl.td_lambda(x["rewards"], x["next_values"], gamma=0.9, lambda_=0.8,
                                               truncated=x["truncated"], **kw),
                  ("rewards", "next_values"), (), ("rewards", "next_values")),
    "vtrace": (lambda x, **kw: rl.vtrace(x["log_rhos"], x["rewards"], x["values"], gamma=0.9, lambda_=0.9,
                                         bootstrap_value=x["bootstrap_value"], **kw),
               ("log_rhos", "rewards", "values"), ("bootstrap_value",), ("rewards", "values", "bootstrap_value")),
    "sac_targets": (_sac, ("rewards", "q1", "q2", "next_log_probs", "log_probs"), (),
                    ("rewards", "q1", "q2", "next_log_probs")),
}


def _inputs(name, rng, B, T, masks):
    _, per_step, per_row, _ = ALGORITHMS[name]
    x = {k: rng.normal(size=(B, T)) for k in per_step}
    if "log_rhos" in x:
        x["log_rhos"] *= 0.5
    x.update({k: rng.normal(size=B) for k in per_row})
    x["terminated"] = rng.random((B, T)) < 0.15
    x["truncated"] = (rng.random((B, T)) < 0.15) & ~x["terminated"]
    for k in per_step:  # garbage in every masked element
        x[k] = np.where(masks, x[k], rng.choice(GARBAGE, size=(B, T)))
    return x


def _tensors(x, keys_with_grad):
    out = {}
    for k, v in x.items():
        t = torch.tensor(v, device=DEVICE)
        if t.is_floating_point():
            t = t.to(torch.float64).requires_grad_(k in keys_with_grad)
        out[k] = t
    return out


def _outputs(out):
    return tuple(out) if isinstance(out, tuple) else (out,)


def _weights(B, T):
    """Each output's weight in the loss, per (row, step): so a deleted row keeps the weights its
    steps had in the full call."""
    return np.linspace(0.5, 1.5, B * T).reshape(B, T)


def _run(name, x, mask, backend, w):
    """Outputs, and the gradients of sum(k + 1) * w * output_k for the differentiable inputs."""
    call, _, _, diff = ALGORITHMS[name]
    t = _tensors(x, diff)
    kw = dict(terminated=t["terminated"], backend=backend)
    if mask is not None:
        kw["mask"] = torch.tensor(mask, device=DEVICE)
    outs = _outputs(call(t, **kw))
    w = torch.tensor(w, device=DEVICE)
    loss = sum(((k + 1) * w * o).sum() for k, o in enumerate(outs))
    grads = torch.autograd.grad(loss, [t[k] for k in diff])
    return [o.detach().cpu().numpy() for o in outs], {k: g.cpu().numpy() for k, g in zip(diff, grads)}


@pytest.mark.parametrize("backend", ["triton", "torch"])
@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_a_masked_step_is_as_if_deleted(name, backend):
    rng = np.random.default_rng(sum(map(ord, name)))
    B, T = len(PATTERNS), 23
    masks = np.stack([_mask(p, T, rng) for p in PATTERNS])
    x = _inputs(name, rng, B, T, masks)
    w = _weights(B, T)
    outs, grads = _run(name, x, masks, backend, w)
    _, per_step, _, _ = ALGORITHMS[name]
    for i, pattern in enumerate(PATTERNS):
        keep = masks[i]
        for o in outs:
            assert (o[i][~keep] == 0).all(), (name, pattern, "a masked step's output is not 0")
        for k, g in grads.items():
            assert np.isfinite(g[i]).all(), (name, pattern, k, g[i])
            if k in per_step:
                assert (g[i][~keep] == 0).all(), (name, pattern, k, g[i])
        if not keep.any():
            continue
        row = {k: (v[i][keep][None] if np.ndim(v) == 2 else v[i:i + 1]) for k, v in x.items()}
        row_outs, row_grads = _run(name, row, None, backend, w[i][keep][None])
        for o, e in zip(outs, row_outs):
            np.testing.assert_allclose(o[i][keep], e[0], rtol=1e-10, atol=1e-10, err_msg=f"{name}, {pattern}")
        for k, g in grads.items():
            got = g[i][keep] if k in per_step else g[i]
            np.testing.assert_allclose(got, row_grads[k][0], rtol=1e-10, atol=1e-10,
                                       err_msg=f"{name}, {pattern}, d/d{k}")


@pytest.mark.parametrize("name", [n for n in ALGORITHMS if n != "sac_targets"])
def test_the_reference_deletes_masked_steps_too(name):
    """The float64 loops, the oracle of every other test, by the same property."""
    fn = {"discounted_returns": lambda x, **kw: reference.discounted_returns(
              x["rewards"], gamma=0.9, bootstrap_value=x["bootstrap_value"], **kw),
          "gae": lambda x, **kw: reference.gae(x["rewards"], x["values"], gamma=0.9, lambda_=0.8,
                                               bootstrap_value=x["bootstrap_value"], **kw),
          "gae, next_values given": lambda x, **kw: reference.gae(
              x["rewards"], x["values"], next_values=x["next_values"], gamma=0.9, lambda_=0.8,
              truncated=x["truncated"], **kw),
          "td_lambda": lambda x, **kw: reference.td_lambda(x["rewards"], x["next_values"], gamma=0.9, lambda_=0.8,
                                                           truncated=x["truncated"], **kw),
          "vtrace": lambda x, **kw: reference.vtrace(x["log_rhos"], x["rewards"], x["values"], gamma=0.9,
                                                     lambda_=0.9, bootstrap_value=x["bootstrap_value"], **kw)}[name]
    rng = np.random.default_rng(7)
    B, T = len(PATTERNS), 23
    masks = np.stack([_mask(p, T, rng) for p in PATTERNS])
    x = _inputs(name, rng, B, T, masks)
    with np.errstate(all="ignore"):
        outs = _outputs(fn(x, terminated=x["terminated"], mask=masks))
        for i in range(B):
            keep = masks[i]
            row = {k: (v[i][keep][None] if np.ndim(v) == 2 else v[i:i + 1]) for k, v in x.items()}
            row_outs = _outputs(fn(row, terminated=row["terminated"]))
            for o, e in zip(outs, row_outs):
                assert (o[i][~keep] == 0).all()
                np.testing.assert_allclose(o[i][keep], e[0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("bad", [0.5, float("nan")])
def test_a_float_mask_must_be_0_or_1_on_cpu(bad):
    """A weight of 0.5 is not a mask: refused where reading it costs no device sync."""
    r = torch.randn(2, 9)
    mask = torch.ones(2, 9)
    mask[1, 3] = bad
    for call in (lambda: rl.gae(r, r, mask=mask), lambda: rl.discounted_returns(r, mask=mask),
                 lambda: rl.linear_scan(r, r, mask=mask), lambda: rl.ppo_clip_loss(r, r, r, mask=mask)):
        with pytest.raises(ValueError, match="mask must hold 0 or 1"):
            call()


def test_a_meta_tensor_on_the_triton_backend_names_the_device():
    r = torch.empty(2, 9, device="meta")
    with pytest.raises(ValueError, match="got meta tensors"):
        rl.gae(r, r, backend="triton")
    assert rl.gae(r, r).advantages.device.type == "meta"  # the PyTorch path runs them (shapes only)


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-10), (torch.float32, 1e-5)], ids=["float64", "float32"])
@pytest.mark.parametrize("name", ["discounted_returns", "gae"])
def test_a_call_of_a_known_signature_reads_its_own_mask(name, dtype, tol):
    """The look-ahead launch is planned once per signature (masks._ahead through plan.planned):
    later calls with other masks, values and bootstrap values get their own results, each equal to
    the call on the row with its masked steps deleted (in float32 the estimator's launch is kept
    too; float64 passes its coefficients as tensors made per call)."""
    g = torch.Generator().manual_seed(8)
    for _ in range(3):  # the first call plans, the others reuse the plan
        r, v = (torch.randn(4, 40, generator=g, dtype=torch.float64) for _ in range(2))
        boot = torch.randn(4, generator=g, dtype=torch.float64)
        mask = torch.rand(4, 40, generator=g) > 0.3
        kw = dict(gamma=0.9, bootstrap_value=boot.to(DEVICE, dtype), mask=mask.to(DEVICE), backend="triton")
        out = (rl.discounted_returns(r.to(DEVICE, dtype), **kw) if name == "discounted_returns"
               else rl.gae(r.to(DEVICE, dtype), v.to(DEVICE, dtype), lambda_=0.8, **kw).advantages).double().cpu()
        for i in range(4):
            keep = mask[i]
            want = (reference.discounted_returns(r[i][keep][None].numpy(), gamma=0.9, bootstrap_value=boot[i:i + 1].numpy())
                    if name == "discounted_returns" else
                    reference.gae(r[i][keep][None].numpy(), v[i][keep][None].numpy(), gamma=0.9, lambda_=0.8,
                                  bootstrap_value=boot[i:i + 1].numpy())[0])
            np.testing.assert_allclose(out[i][keep].numpy(), want[0], rtol=tol, atol=tol * max(1, np.abs(want).max()))
            assert (out[i][~keep] == 0).all()


LOOK_AHEAD_PLANS = {  # chunks of 16 steps: rows of several chunks, walked whole (in chunks of 16 or wide ones) or split
    "whole rows": (Config(max_block_t=16, look_ahead=True), True),
    "wide chunks": (Config(max_block_t=32, wide_block=32, min_programs=1 << 20, look_ahead=True), True),
    "time split": (Config(max_block_t=16, wide_block=16, min_programs=1 << 20, split_min_chunks=2, look_ahead=True),
                   True),
    # six segments of 8 steps, their maps composed two at a time
    "time split, maps in blocks": (Config(max_block_t=8, wide_block=8, min_programs=1 << 20, split_min_chunks=2,
                                          compose_block=2, look_ahead=True), True),
    "time split of three launches": (Config(max_block_t=8, wide_block=8, min_programs=1 << 20, split_min_chunks=2,
                                            compose=2, look_ahead=True), False),
    "look_ahead=False": (Config(max_block_t=16, look_ahead=False), False),
    "look_ahead=None": (Config(max_block_t=16), DEVICE == "cuda"),  # (the interpreter derives: its arithmetic costs)
}


@pytest.mark.parametrize("name,plan", [(n, p) for n in ALGORITHMS for p in ("whole rows", "time split, maps in blocks")]
                         + [("gae", p) for p in LOOK_AHEAD_PLANS if p not in ("whole rows", "time split, maps in blocks")])
def test_without_gradients_the_kernel_looks_ahead_itself(name, plan, monkeypatch):
    """With no gradient to compute, one launch: the estimator's kernel finds each step's next
    unmasked step itself (``scan._look_ahead``, across chunks), and masks.py derives nothing; a
    time split (or ``Config(look_ahead=False)``) derives first. The outputs equal those of the
    call with gradients, which derives (and equals the rows with their masked steps deleted:
    test_a_masked_step_is_as_if_deleted)."""
    cfg, looks = LOOK_AHEAD_PLANS[plan]
    rng = np.random.default_rng(sum(map(ord, name + plan)))
    B, T = len(PATTERNS) + 3, 41
    span = (np.arange(T) < 5) | (np.arange(T) > 30)  # whole segments masked between present steps
    masks = np.stack([_mask(p, T, rng) for p in PATTERNS] + [np.arange(T) < 3, np.arange(T) >= T - 2, span])
    x = _inputs(name, rng, B, T, masks)
    derived_calls = []

    def derive(*args, **kwargs):
        derived_calls.append(1)
        return without_masked_steps(*args, **kwargs)

    with config.using(cfg):
        derived, _ = _run(name, x, masks, "triton", _weights(B, T))
        t = _tensors(x, ())
        with monkeypatch.context() as m:
            m.setattr(masks_module, "without_masked_steps", derive)
            got = _outputs(ALGORITHMS[name][0](t, terminated=t["terminated"], backend="triton",
                                               mask=torch.tensor(masks, device=DEVICE)))
    assert bool(derived_calls) != looks, f"{plan}: the look-ahead {'derived' if looks else 'was not derived'}"
    assert len(got) == len(derived)
    for o, e in zip(got, derived):
        o = o.cpu().numpy()
        np.testing.assert_allclose(o, e, rtol=1e-12, atol=1e-12, err_msg=f"{name}: look-ahead vs derived")
        assert (o[~masks] == 0).all(), (name, "a masked step's output is not 0")
