"""crr_loss against the float64 reference on both backends: modes, V(s) and sampled baselines
(mean, max), masks, any shape and layout; weights and advantages; gradients."""
from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch

from rltriton_lite import reference as ref
from rltriton_lite.crr import CRROutput, crr_loss

from conftest import DEVICE, DTYPES, assert_close
from test_ppo import LAYOUTS, LOSS_TOL, SIZES, as_layout, numpy, same


class Batch:
    """Log-probabilities of dataset actions, Q of those actions, and a baseline: V(s), or K
    sampled Q(s, a_j) in a trailing dim (stored K-major in memory for non-contiguous layouts).
    Advantages spread wide enough that max_weight clips; padding holds NaN."""

    def __init__(self, seed, shape, *, K=None, layout="contiguous", dtype=torch.float32, masked=True):
        rng = np.random.default_rng(seed)
        logp = -np.abs(rng.standard_normal(shape)) - 0.1
        q = rng.standard_normal(shape) * 2.0
        base = rng.standard_normal(shape if K is None else shape + (K,)) * 1.5
        self.np_mask = np.asarray(rng.random(shape) > 0.2) if masked else None
        if masked:
            logp, q = (np.where(self.np_mask, x, np.nan) for x in (logp, q))
            base = np.where(self.np_mask if K is None else self.np_mask[..., None], base, np.nan)
        self.log_probs, self.q_values = (as_layout(x, layout, dtype) for x in (logp, q))
        if K is None:
            self.baseline = as_layout(base, layout, dtype)
        elif layout == "contiguous" or not shape:
            self.baseline = as_layout(base, "contiguous", dtype)
        else:  # the samples outermost in memory: (K, *shape) seen as (*shape, K)
            self.baseline = as_layout(np.moveaxis(base, -1, 0), layout, dtype).movedim(0, -1)
        self.mask = None if self.np_mask is None else as_layout(self.np_mask, layout, torch.bool)
        self.np = [numpy(t) for t in (self.log_probs, self.q_values, self.baseline)]

    def call(self, backend, *, log_probs=None, **kw):
        lp = self.log_probs if log_probs is None else log_probs
        return crr_loss(lp, self.q_values, self.baseline, mask=self.mask, backend=backend, **kw)

    def reference(self, **kw):
        return ref.crr_loss(*self.np, mask=self.np_mask, **kw)


OPTIONS = {
    "exp_v": dict(masked=False),
    "exp_v_masked": dict(beta=0.5, max_weight=3.0),
    "exp_mean_k": dict(K=4, beta=2.0),
    "exp_max_k": dict(K=5, baseline_reduce="max", beta=0.5, max_weight=4.0),
    "binary_v": dict(mode="binary"),
    "binary_max_k": dict(K=3, mode="binary", baseline_reduce="max", masked=False),
}


def split(opts):
    opts = dict(opts)
    return dict(K=opts.pop("K", None), masked=opts.pop("masked", True)), opts


def check(batch, out, expected, kw, dtype):
    assert isinstance(out, CRROutput)
    assert out.loss.shape == () and out.loss.dtype == dtype and not out.weights.requires_grad
    assert abs(out.loss.item() - expected[0]) <= LOSS_TOL[dtype] * max(1.0, abs(expected[0])), kw
    for o, e in zip(out[1:], expected[1:]):
        assert o.shape == batch.q_values.shape and o.dtype == dtype and not o.requires_grad
        assert_close(o, e, dtype, str(kw))


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("opts", list(OPTIONS))
def test_matches_reference(size, opts, loss_backend):
    data, kw = split(OPTIONS[opts])
    batch = Batch(zlib.crc32(f"{size}{opts}".encode()), SIZES[size], **data)
    out = batch.call(loss_backend, **kw)
    expected = batch.reference(**kw)
    check(batch, out, expected, kw, torch.float32)
    if opts == "exp_v_masked" and size > 100:
        clipped = expected[1] == 3.0
        assert clipped.any() and (batch.np_mask & ~clipped).any()  # max_weight binds, and not always


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("K", [None, 3])
def test_layouts(layout, K, loss_backend):
    """Transposed, strided and permuted views of every input (the samples' dim too), 0-d."""
    shape = () if layout == "scalar" else (3, 4, 37)
    batch = Batch(5, shape, K=K, layout="contiguous" if layout == "scalar" else layout)
    for kw in (dict(beta=0.7), dict(mode="binary", baseline_reduce="max")):
        check(batch, batch.call(loss_backend, **kw), batch.reference(**kw), kw, torch.float32)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_dtypes(dtype, loss_backend):
    batch = Batch(7, (6, 50), K=4, dtype=dtype)
    for kw in (dict(beta=0.5, max_weight=5.0), dict(mode="binary", baseline_reduce="max")):
        check(batch, batch.call(loss_backend, **kw), batch.reference(**kw), kw, dtype)


def test_by_hand(backend):
    """w = min(exp(A/β), max_weight), or 1[A > 0] (A = 0 gives 0); loss = -mean(w·logπ)."""
    lp = torch.tensor([-1.0, -2.0, -0.5, -3.0], dtype=torch.float64, device=DEVICE)
    q = torch.tensor([1.0, 0.0, 5.0, 2.0], dtype=torch.float64, device=DEVICE)
    base = torch.tensor([[0.0, 0.0], [1.0, -1.0], [0.0, 2.0], [4.0, 0.0]], dtype=torch.float64, device=DEVICE)
    out = crr_loss(lp, q, base, beta=2.0, max_weight=4.0, backend=backend)  # mean: A = 1, 0, 4, 0
    w = torch.tensor([np.exp(0.5), 1.0, 4.0, 1.0], dtype=torch.float64, device=DEVICE)
    torch.testing.assert_close(out.advantages, torch.tensor([1.0, 0.0, 4.0, 0.0], dtype=torch.float64, device=DEVICE))
    torch.testing.assert_close(out.weights, w)
    torch.testing.assert_close(out.loss, -(w * lp).mean())
    out = crr_loss(lp, q, base, mode="binary", baseline_reduce="max", backend=backend)  # max: A = 1, -1, 3, -2
    torch.testing.assert_close(out.weights, torch.tensor([1.0, 0.0, 1.0, 0.0], dtype=torch.float64, device=DEVICE))
    torch.testing.assert_close(out.loss, -(lp[0] + lp[2]) / 4)
    out = crr_loss(lp, q, q, mode="binary", backend=backend)  # A = 0 everywhere: no weight
    assert out.loss.item() == 0.0 and (out.weights == 0).all()


# ---- gradients ------------------------------------------------------------------------------
def _loss_and_grad(batch, backend, kw):
    lp = batch.log_probs.detach().clone().requires_grad_()
    out = batch.call(backend, log_probs=lp, **kw)
    (grad,) = torch.autograd.grad(out.loss, lp)
    return out, grad


@pytest.mark.parametrize("opts", ["exp_v_masked", "exp_max_k", "binary_v"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_kernel_gradients_match_torch_path(opts, layout):
    data, kw = split(OPTIONS[opts])
    batch = Batch(13, (4, 5, 33), layout=layout, dtype=torch.float64, **data)
    out, g_kernel = _loss_and_grad(batch, "triton", kw)
    _, g_torch = _loss_and_grad(batch, "torch", kw)
    assert g_kernel.shape == batch.log_probs.shape and g_kernel.dtype == torch.float64
    torch.testing.assert_close(g_kernel, g_torch, rtol=1e-12, atol=1e-15)
    n = batch.mask.sum() if batch.mask is not None else batch.log_probs.numel()
    torch.testing.assert_close(g_kernel, -out.weights / n, rtol=1e-12, atol=1e-15)  # -w/N, 0 where masked


@pytest.mark.parametrize("opts", ["exp_v_masked", "exp_mean_k", "binary_max_k"])
def test_gradcheck(opts, backend):
    data, kw = split(OPTIONS[opts])
    batch = Batch(19, (3, 5), dtype=torch.float64, **data)
    lp = batch.log_probs.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda x: batch.call(backend, log_probs=x, **kw).loss, (lp,), eps=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("opts", ["exp_v_masked", "exp_max_k", "binary_max_k"])
def test_without_weights(opts, dtype, loss_backend):
    """need_weights=False: no weights or advantages; the same loss, and the gradient with the
    weights computed again in the backward (-w/N from the reference's w)."""
    data, kw = split(OPTIONS[opts])
    batch = Batch(41, (5, 67), dtype=dtype, **data)
    lp = batch.log_probs.detach().clone().requires_grad_()
    out = batch.call(loss_backend, log_probs=lp, need_weights=False, **kw)
    assert isinstance(out, CRROutput) and out.weights is None and out.advantages is None
    expected = batch.reference(**kw)
    assert out.loss.dtype == dtype and abs(out.loss.item() - expected[0]) <= LOSS_TOL[dtype] * max(1.0, abs(expected[0]))
    (grad,) = torch.autograd.grad(out.loss, lp)
    n = batch.np_mask.sum() if batch.np_mask is not None else batch.log_probs.numel()
    assert_close(grad.double() * n, -np.where(np.isnan(expected[1]), 0.0, expected[1]), dtype, str(kw))
    with torch.no_grad():
        assert batch.call(loss_backend, need_weights=False, **kw).weights is None


def test_written_weights_free_the_constants(backend):
    """With the weights written, the backward needs neither Q nor the baseline: a critic update
    between the loss and its backward (in place) changes nothing."""
    batch = Batch(47, (4, 29), K=3)
    lp = batch.log_probs.detach().clone().requires_grad_()
    q, base = batch.q_values.clone(), batch.baseline.clone()
    out = crr_loss(lp, q, base, mask=batch.mask, backend=backend)
    q.add_(1.0)
    base.mul_(2.0)
    (grad,) = torch.autograd.grad(out.loss, lp)
    torch.testing.assert_close(grad, -out.weights / batch.mask.sum())


@pytest.mark.parametrize("opts", ["exp_v_masked", "binary_max_k"])
def test_gradcheck_without_weights(opts, backend):
    data, kw = split(OPTIONS[opts])
    batch = Batch(43, (3, 5), dtype=torch.float64, **data)
    lp = batch.log_probs.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda x: batch.call(backend, log_probs=x, need_weights=False, **kw).loss, (lp,),
                                    eps=1e-6, atol=1e-8)


# ---- determinism, special cases ------------------------------------------------------------
def test_deterministic(loss_backend):
    batch = Batch(23, SIZES[3077], K=4)
    results = [(*out, grad) for out, grad in (_loss_and_grad(batch, loss_backend, dict(beta=0.5)) for _ in range(2))]
    for a, b in zip(*results):
        assert torch.equal(a, b)


def test_all_masked_is_zero_not_nan(backend):
    batch = Batch(29, (4, 9), K=2)
    batch.mask = torch.zeros_like(batch.mask)
    out, grad = _loss_and_grad(batch, backend, {})
    assert out.loss.item() == 0.0
    assert torch.equal(out.weights, torch.zeros_like(out.weights))
    assert torch.equal(out.advantages, torch.zeros_like(out.advantages))
    assert torch.equal(grad, torch.zeros_like(grad))
    assert ref.crr_loss(*batch.np, mask=numpy(batch.mask))[0] == 0.0


def test_empty(backend):
    x = torch.zeros(3, 0, device=DEVICE)
    out = crr_loss(x, x, torch.zeros(3, 0, 4, device=DEVICE), backend=backend)
    assert out.loss.item() == 0.0 and out.weights.shape == (3, 0)


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_exp_overflow_is_clipped(backend):
    """A/β far beyond log(max_weight): exp overflows to inf, the clip still gives max_weight."""
    lp = torch.full((3,), -1.0, device=DEVICE)
    q = torch.tensor([1e4, -1e4, 0.0], device=DEVICE)
    out = crr_loss(lp, q, torch.zeros_like(q), beta=0.1, backend=backend)
    torch.testing.assert_close(out.weights, torch.tensor([20.0, 0.0, 1.0], device=DEVICE))
    torch.testing.assert_close(out.loss, torch.tensor(21.0 / 3, device=DEVICE))


def test_constants_get_no_gradient(backend):
    batch = Batch(31, (3, 7), K=2, masked=False)
    lp, q, b = (x.detach().clone().requires_grad_() for x in (batch.log_probs, batch.q_values, batch.baseline))
    crr_loss(lp, q, b, backend=backend).loss.backward()
    assert lp.grad is not None and q.grad is None and b.grad is None


def test_inputs_are_not_modified(backend):
    batch = Batch(37, (5, 20), K=3)
    inputs = (batch.log_probs, batch.q_values, batch.baseline, batch.mask)
    before = [x.clone() for x in inputs]
    _loss_and_grad(batch, backend, dict(baseline_reduce="max"))
    assert all(same(x, b) for x, b in zip(inputs, before))


# ---- bad input: every argument of crr_loss is in tests/test_hostile.py's table ----------


# ---- GPU sizes ------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_large_batch_gpu(dtype):
    """16384 × 1024 with 4 sampled actions per state: against the torch path in float64."""
    g = torch.Generator(device="cuda").manual_seed(0)
    shape = (16384, 1024)
    lp = (-torch.rand(shape, device="cuda", generator=g) * 3).to(dtype).requires_grad_()
    q = (torch.randn(shape, device="cuda", generator=g) * 2).to(dtype)
    base = torch.randn(shape + (4,), device="cuda", generator=g).to(dtype)
    mask = torch.rand(shape, device="cuda", generator=g) > 0.1
    kw = dict(beta=0.5, max_weight=10.0, mask=mask)
    out = crr_loss(lp, q, base, **kw)
    (grad,) = torch.autograd.grad(out.loss, lp)
    lp64 = lp.detach().double().requires_grad_()
    exp = crr_loss(lp64, q.double(), base.double(), backend="torch", **kw)
    (grad64,) = torch.autograd.grad(exp.loss, lp64)
    assert abs(out.loss.item() - exp.loss.item()) <= LOSS_TOL[dtype] * max(1.0, abs(exp.loss.item()))
    assert_close(out.weights, numpy(exp.weights), dtype)
    assert_close(out.advantages, numpy(exp.advantages), dtype)
    n = mask.sum().item()  # the gradient is O(1/N): compare N times it
    assert_close(grad.double() * n, numpy(grad64) * n, dtype)
    again = crr_loss(lp, q, base, **kw)
    assert torch.equal(again.loss, out.loss) and torch.equal(torch.autograd.grad(again.loss, lp)[0], grad)
    lean = crr_loss(lp, q, base, need_weights=False, **kw)  # the loop of partial sums, weights computed again
    assert lean.weights is None
    assert abs(lean.loss.item() - exp.loss.item()) <= LOSS_TOL[dtype] * max(1.0, abs(exp.loss.item()))
    assert_close(torch.autograd.grad(lean.loss, lp)[0].double() * n, numpy(grad64) * n, dtype)
