"""What a call runs besides its kernels.

A backward through one output of several (a loss without its diagnostics, GAE's advantages
without the returns) must not make autograd fill the other outputs' gradients with zeros: on
the H200 those fills took about as long as CRR's whole backward kernel (docs/DESIGN.md,
"Reductions"). The torch operators a backward dispatches are recorded and none may write zeros.
"""
from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import rltriton_lite as rl

from conftest import DEVICE, Config, using

ZEROING = ("zeros", "zero_", "fill", "full")


class _Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def _inputs(seed, shape=(3, 37)):
    g = torch.Generator().manual_seed(seed)
    x = [torch.randn(shape, generator=g).to(DEVICE) for _ in range(4)]
    return x, (torch.rand(shape, generator=g) < 0.1).to(DEVICE)


def _crr(x, d):
    return rl.crr_loss(x[0], x[1], x[2], backend="triton").loss


def _ppo(x, d):
    return rl.ppo_clip_loss(x[0], x[1], x[2], backend="triton").loss


def _gae_advantages(x, d):
    return rl.gae(x[1], x[0], terminated=d, next_values=x[2], backend="triton").advantages


def _vtrace_vs(x, d):
    return rl.vtrace(x[3], x[1], x[0], terminated=d, next_values=x[2], backend="triton").vs


@pytest.mark.parametrize("call", [_crr, _ppo, _gae_advantages, _vtrace_vs], ids=lambda f: f.__name__[1:])
def test_unused_outputs_get_no_zero_gradients(call):
    x, d = _inputs(0)
    x[0].requires_grad_()  # log_probs of the losses, the values of the scans
    out = call(x, d)
    with _Recorder() as rec:
        (grad,) = torch.autograd.grad(out, x[0], torch.ones_like(out))
    assert torch.isfinite(grad).all() and grad.abs().sum() > 0
    zeroing = [op for op in rec.ops if any(z in op.split(".")[1] for z in ZEROING)]
    assert zeroing == [], f"the backward wrote zeros: {zeroing}"


# ---- a planned call replays its launch (episode.replayed) --------------------------------------------
_SCANS = {
    "discounted_returns": lambda x, **k: (rl.discounted_returns(x[0], gamma=0.9, **k),),
    "gae": lambda x, **k: tuple(rl.gae(x[0], x[1], gamma=0.9, lambda_=0.8, **k)),
    "td_lambda": lambda x, **k: (rl.td_lambda(x[0], x[1], gamma=0.9, lambda_=0.8, **k),),
}
# (time in the middle copies its inputs into rows, so its launch is never kept: it does not replay)
_LAYOUTS = {"time last": ((3, 37), -1), "time first": ((37, 3), 0), "3-d, time last": ((2, 3, 37), -1)}


def _call_inputs(seed, shape, time_dim, dtype=torch.float32):  # (float64 is never planned: γ and λ travel as tensors)
    g = torch.Generator().manual_seed(seed)
    x = [torch.randn(shape, generator=g, dtype=dtype).to(DEVICE) for _ in range(2)]
    flags = [(torch.rand(shape, generator=g) < p).to(DEVICE) for p in (0.1, 0.8)]
    return x, flags[0], flags[1]


@pytest.mark.parametrize("masked", [False, True], ids=["no mask", "mask"])
@pytest.mark.parametrize("layout", list(_LAYOUTS))
@pytest.mark.parametrize("name", list(_SCANS))
def test_a_planned_call_replays_its_launch_with_the_same_outputs(name, layout, masked, monkeypatch):
    """The second call of a signature (no gradient needed) is its plan's launch and two allocations:
    nothing is validated, prepared or dispatched (those raise here), and its outputs equal, bit for
    bit, those of the same inputs through a fresh plan. A masked call replays where its kernel
    looks ahead (Config(look_ahead=True); else masks.py derives tensors on every call)."""
    from rltriton_lite import episode, returns

    shape, td = _LAYOUTS[layout]
    with using(Config(look_ahead=True, max_block_t=16)):
        def call(x, d, m):
            return _SCANS[name](x, terminated=d, mask=m if masked else None, time_dim=td, backend="triton")

        episode._PLANS.clear()
        call(*_call_inputs(0, shape, td))  # plans the signature and its replay
        x, d, m = _call_inputs(1, shape, td)
        before = [t.clone() for t in (*x, d, m)]
        with monkeypatch.context() as mp:
            for module, fn in ((episode, "validate"), (returns, "prepare"), (returns, "_run")):
                mp.setattr(module, fn, lambda *a, fn=fn, **k: pytest.fail(f"a planned call reached {fn}"))
            replayed = call(x, d, m)
        episode._PLANS.clear()
        fresh = call(x, d, m)
    assert all(torch.equal(a, b) for a, b in zip((*x, d, m), before)), "an input was modified"
    assert len(replayed) == len(fresh)
    for a, b in zip(replayed, fresh):
        assert a.shape == b.shape == shape and a.dtype == b.dtype == torch.float32 and a.stride() == b.stride()
        assert torch.equal(a, b), f"{name}, {layout}: the replayed outputs differ by {(a - b).abs().max().item()}"


def test_a_replayed_signature_still_checks_its_numbers_and_takes_gradients():
    """A replay skips the tensors' checks only: γ and λ are checked on every call, and a call whose
    input needs a gradient goes through autograd (its gradients those of the torch path)."""
    from rltriton_lite import episode

    x, d, _ = _call_inputs(2, (3, 37), -1)
    episode._PLANS.clear()
    for _ in range(2):
        rl.gae(x[0], x[1], gamma=0.9, lambda_=0.8, terminated=d, backend="triton")
    assert any(p.replay is not None for p in episode._PLANS.values())
    for kwargs, name in ((dict(gamma=1.5), "gamma"), (dict(lambda_=float("nan")), "lambda_"),
                         (dict(gamma=-0.1), "gamma")):
        with pytest.raises(ValueError, match=name):
            rl.gae(x[0], x[1], **{"gamma": 0.9, "lambda_": 0.8, **kwargs}, terminated=d, backend="triton")
    grads = []
    for backend in ("triton", "torch"):
        v = x[1].clone().requires_grad_()
        out = rl.gae(x[0], v, gamma=0.9, lambda_=0.8, terminated=d, backend=backend).advantages
        assert out.grad_fn is not None, backend
        grads.append(torch.autograd.grad(out, v, torch.ones_like(out))[0])
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-5, atol=1e-6)
