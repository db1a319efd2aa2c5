"""Gradients agree on every backend: ``gradcheck`` in float64 on the Triton kernel, the torch path
and the custom op (torch.compile, aot_eager), for ``linear_scan`` with exact zeros in ``a`` and
for the coefficients ``gamma`` and ``lambda_`` of every estimator, with rows across chunk and
split boundaries; and a meta-gradient step on gamma against finite differences."""
from __future__ import annotations

import pytest
import torch
import torch._dynamo

import rltriton_lite as rl
from rltriton_lite.config import using

from conftest import DEVICE, SPLIT

F64 = dict(dtype=torch.float64, device=DEVICE)
BACKENDS = ["triton", "torch", "custom op"]


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _on(backend, fn):
    """``fn(backend_name, *inputs)`` bound to ``backend``: the custom op is the kernel path as
    torch.compile traces it."""
    if backend == "custom op":
        return torch.compile(lambda *x: fn("triton", *x), backend="aot_eager", fullgraph=True)
    return lambda *x: fn(backend, *x)


def test_the_issue_s_example():
    """a_1 = 0 (an episode end written as a = gamma * (1 - done)): dL/da_1 = (1 + a_0) y_2 = 8.7."""
    b = torch.tensor([[1.0, 2.0, 3.0, 4.0]], **F64)
    for backend in BACKENDS:
        a = torch.tensor([[0.5, 0.0, 0.7, 0.8]], **F64, requires_grad=True)
        y = _on(backend, lambda be, a, b: rl.linear_scan(a, b, backend=be))(a, b)
        (g,) = torch.autograd.grad(y.sum(), a)
        torch.testing.assert_close(g, torch.tensor([[2.0, 8.7, 4.0, 0.0]], **F64), msg=backend)


@pytest.mark.parametrize("reverse", [True, False])
@pytest.mark.parametrize("backend", BACKENDS)
def test_linear_scan_gradcheck_with_zeros_in_a(backend, reverse):
    g = torch.Generator().manual_seed(3)
    T = 37  # three chunks of 16, and a split
    a = torch.rand(3, T, generator=g, dtype=torch.float64)
    a[a < 0.25] = 0.0  # boundaries, at chunk edges too
    a[:, [15, 16, 31]] = 0.0
    a = a.to(DEVICE).requires_grad_()
    b = torch.randn(3, T, generator=g, dtype=torch.float64).to(DEVICE).requires_grad_()
    init = torch.randn(3, generator=g, dtype=torch.float64).to(DEVICE).requires_grad_()
    mask = (torch.rand(3, T, generator=g) > 0.2).to(DEVICE)
    fn = _on(backend, lambda be, a, b, i: rl.linear_scan(a, b, initial=i, mask=mask, reverse=reverse, backend=be))
    with using(SPLIT):
        assert torch.autograd.gradcheck(fn, (a, b, init), fast_mode=True)


def _coefficient_cases():
    g = torch.Generator().manual_seed(5)
    r, v, nv, lr = (torch.randn(2, 20, generator=g, dtype=torch.float64).to(DEVICE) for _ in range(4))
    term = (torch.rand(2, 20, generator=g) < 0.1).to(DEVICE)
    trunc = (torch.rand(2, 20, generator=g) < 0.1).to(DEVICE) & ~term
    mask = (torch.rand(2, 20, generator=g) > 0.15).to(DEVICE)
    kw = dict(terminated=term, mask=mask)
    return {
        "discounted_returns": lambda be, gm, lm: rl.discounted_returns(r, gamma=gm, truncated=trunc, next_values=nv,
                                                                       backend=be, **kw),
        "gae": lambda be, gm, lm: rl.gae(r, v, gamma=gm, lambda_=lm, backend=be, **kw),
        "td_lambda": lambda be, gm, lm: rl.td_lambda(r, nv, gamma=gm, lambda_=lm, truncated=trunc, backend=be, **kw),
        "vtrace": lambda be, gm, lm: rl.vtrace(0.5 * lr, r, v, gamma=gm, lambda_=lm, c_bar=0.9, backend=be, **kw),
        "sac_targets": lambda be, gm, lm: rl.sac_targets(r, [v, nv], lr, log_probs=0.5 * lr, gamma=gm, lambda_=lm,
                                                         backend=be, **kw),
    }


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(_coefficient_cases()))
def test_gamma_and_lambda_get_gradients(name, backend):
    """A per-row gamma and a per-step lambda that require grad: gradcheck on every backend, and
    the same gradient from each."""
    call = _coefficient_cases()[name]
    gamma = torch.tensor([[0.9], [0.95]], **F64, requires_grad=True)
    lam = torch.linspace(0.5, 0.95, 40, **F64).reshape(2, 20).requires_grad_()
    fn = _on(backend, lambda be, gm, lm: call(be, gm, lm))
    with using(SPLIT):
        assert torch.autograd.gradcheck(fn, (gamma, lam), fast_mode=True)
        out = fn(gamma, lam)
    outs = out if isinstance(out, tuple) else (out,)
    assert all(o.requires_grad for o in outs)  # the kernel's outputs no longer drop gamma's graph
    got = torch.autograd.grad(sum((o * (k + 1)).sum() for k, o in enumerate(outs)), (gamma, lam), allow_unused=True)
    ref = call("torch", gamma, lam)
    refs = ref if isinstance(ref, tuple) else (ref,)
    want = torch.autograd.grad(sum((o * (k + 1)).sum() for k, o in enumerate(refs)), (gamma, lam), allow_unused=True)
    for x, y in zip(got, want):
        if y is None:
            assert x is None or not x.any()
        else:
            torch.testing.assert_close(x, y, rtol=1e-10, atol=1e-10)


def test_a_meta_gradient_step_on_gamma():
    """Meta-gradient RL (Xu, van Hasselt and Silver, 2018) adapts gamma by d(loss)/d(gamma): the
    kernel's gradient equals the central finite difference, and a step along it lowers the loss."""
    g = torch.Generator().manual_seed(9)
    r = torch.randn(4, 50, generator=g, dtype=torch.float64).to(DEVICE)
    v = torch.randn(4, 50, generator=g, dtype=torch.float64).to(DEVICE)
    target = torch.randn(4, 50, generator=g, dtype=torch.float64).to(DEVICE)

    def loss(gamma):
        adv = rl.gae(r, v, gamma=gamma, lambda_=0.9, backend="triton").advantages
        return ((adv - target) ** 2).mean()

    gamma = torch.tensor(0.9, **F64, requires_grad=True)
    (dg,) = torch.autograd.grad(loss(gamma), gamma)
    eps = 1e-6
    with torch.no_grad():
        fd = (loss(torch.tensor(0.9 + eps, **F64)) - loss(torch.tensor(0.9 - eps, **F64))) / (2 * eps)
        assert abs(dg.item() - fd.item()) < 1e-6 * max(1.0, abs(fd.item()))
        stepped = torch.clamp(gamma - 1e-3 * dg, 0.0, 1.0)
        assert loss(stepped) < loss(gamma)


def _data_cases():
    g = torch.Generator().manual_seed(6)
    mk = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64).to(DEVICE).requires_grad_()  # noqa: E731
    r, v, nv, boot, lr = mk(2, 20), mk(2, 20), mk(2, 20), mk(2), torch.randn(2, 20, generator=g, dtype=torch.float64)
    term = (torch.rand(2, 20, generator=g) < 0.1).to(DEVICE)
    trunc = (torch.rand(2, 20, generator=g) < 0.1).to(DEVICE) & ~term
    mask = (torch.rand(2, 20, generator=g) > 0.15).to(DEVICE)
    kw = dict(terminated=term, mask=mask)
    return {
        "discounted_returns": (lambda be, r, b: rl.discounted_returns(r, gamma=0.9, bootstrap_value=b, backend=be, **kw),
                               (r, boot)),
        "gae": (lambda be, r, v, b: rl.gae(r, v, gamma=0.9, lambda_=0.8, bootstrap_value=b, backend=be, **kw),
                (r, v, boot)),
        "td_lambda": (lambda be, r, n: rl.td_lambda(r, n, gamma=0.9, lambda_=0.8, truncated=trunc, backend=be, **kw),
                      (r, nv)),
        "vtrace": (lambda be, r, v, b: rl.vtrace(0.5 * lr.to(DEVICE), r, v, gamma=0.9, lambda_=0.9, bootstrap_value=b,
                                                 backend=be, **kw), (r, v, boot)),
        "sac_targets": (lambda be, r, q, n: rl.sac_targets(r, [q, n], 0.1 * lr.to(DEVICE), log_probs=0.2 * lr.to(DEVICE),
                                                           gamma=0.9, lambda_=0.8, backend=be, **kw), (r, v, nv)),
    }


@pytest.mark.parametrize("name", list(_data_cases()))
def test_every_data_input_gradcheck_on_the_custom_op(name):
    """The data inputs through the custom op, with a mask and rows across chunks and a split (the
    kernel's and the torch path's gradchecks of them are in test_returns, test_vtrace, test_sac)."""
    call, args = _data_cases()[name]
    with using(SPLIT):
        assert torch.autograd.gradcheck(_on("custom op", call), args, fast_mode=True)
