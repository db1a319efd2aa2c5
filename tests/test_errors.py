"""Bad input is refused with a TypeError/ValueError that names the argument.

The table of bad calls (every public function, every argument) is ``tests/test_hostile.py``,
which took over this file's former table case by case. What stays here needs the environment.
"""
from __future__ import annotations

import pytest
import torch

import rltriton_lite as rl

from conftest import DEVICE


def test_triton_backend_without_a_way_to_run_it(monkeypatch):
    """backend='triton' on CPU without the interpreter says how to enable it."""
    from rltriton_lite import _triton

    monkeypatch.setattr(_triton, "INTERPRET", False)
    r = torch.randn(2, 4)
    with pytest.raises(ValueError, match="TRITON_INTERPRET"):
        rl.discounted_returns(r, backend="triton")
    # "auto" falls back to the torch path instead
    torch.testing.assert_close(rl.discounted_returns(r), rl.discounted_returns(r, backend="torch"))


SECOND_ORDER = {  # a call differentiable in x, on the kernel path
    "linear_scan": lambda x: rl.linear_scan(torch.full_like(x, 0.9), x, backend="triton"),
    "discounted_returns": lambda x: rl.discounted_returns(x, backend="triton"),
    "gae": lambda x: rl.gae(x, x.detach(), backend="triton").advantages,
    "td_lambda": lambda x: rl.td_lambda(x, x.detach(), backend="triton"),
    "vtrace": lambda x: rl.vtrace(torch.zeros_like(x), x, x.detach(), backend="triton").vs,
    "sac_targets": lambda x: rl.sac_targets(x, x.detach(), x.detach(), backend="triton"),
    "sac_actor_loss": lambda x: rl.sac_actor_loss(x, x.detach(), backend="triton"),
    "ppo_clip_loss": lambda x: rl.ppo_clip_loss(x, x.detach(), torch.ones_like(x), backend="triton").loss,
    "crr_loss": lambda x: rl.crr_loss(x, x.detach(), x.detach() - 1, backend="triton").loss,
}


@pytest.mark.parametrize("name", list(SECOND_ORDER))
def test_second_order_gradients_raise(name):
    """The backward passes are kernels, not differentiable: a second backward raises (README,
    Guarantees) instead of returning a gradient without its second-order part."""
    x = torch.randn(2, 5, dtype=torch.float64, device=DEVICE, requires_grad=True)
    y = SECOND_ORDER[name](x)
    g, = torch.autograd.grad((y * y).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="differentiate twice"):
        g.sum().backward()
