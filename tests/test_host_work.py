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

from conftest import DEVICE

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
