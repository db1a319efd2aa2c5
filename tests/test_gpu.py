"""Sizes only a GPU runs in reasonable time: long sequences, large batches, bf16/fp16.

Marked ``gpu``: skipped (with the reason shown) without CUDA; run on the H200 with
``python -m pytest -m gpu`` before an issue is resolved.
"""
from __future__ import annotations

import pytest
import torch

import rltriton_lite as rl
from rltriton_lite import reference as ref
from rltriton_lite.config import Config, using

from conftest import TOLERANCES, assert_close

pytestmark = pytest.mark.gpu


def _rollout(B, T, dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    r = torch.randn(B, T, device="cuda", generator=g).to(dtype)
    v = torch.randn(B, T, device="cuda", generator=g).to(dtype)
    nv = torch.randn(B, T, device="cuda", generator=g).to(dtype)
    term = torch.rand(B, T, device="cuda", generator=g) < 1e-3
    trunc = (torch.rand(B, T, device="cuda", generator=g) < 1e-3) & ~term
    mask = torch.rand(B, T, device="cuda", generator=g) > 0.05
    np_ = {k: x.double().cpu().numpy() for k, x in dict(r=r, v=v, nv=nv, term=term, trunc=trunc, mask=mask).items()}
    return (r, v, nv, term, trunc, mask), np_


@pytest.mark.parametrize("B,T", [(4, 100_000), (3, 3 * 1024 + 5)], ids=["T100k", "T3077"])
def test_long_sequences(B, T):
    (r, v, nv, term, trunc, mask), n = _rollout(B, T, torch.float32, 0)
    kw = dict(gamma=0.999, terminated=term, mask=mask)
    nkw = dict(gamma=0.999, terminated=n["term"], mask=n["mask"])
    assert_close(rl.discounted_returns(r, truncated=trunc, next_values=nv, **kw),
                 ref.discounted_returns(n["r"], truncated=n["trunc"], next_values=n["nv"], **nkw), torch.float32)
    adv, ret = rl.gae(r, v, lambda_=0.97, **kw)
    e_adv, e_ret = ref.gae(n["r"], n["v"], lambda_=0.97, **nkw)
    assert_close(adv, e_adv, torch.float32)
    assert_close(ret, e_ret, torch.float32)
    assert_close(rl.td_lambda(r, nv, lambda_=0.97, truncated=trunc, **kw),
                 ref.td_lambda(n["r"], n["nv"], lambda_=0.97, truncated=n["trunc"], **nkw), torch.float32)
    a = torch.rand_like(r) * 0.1 + 0.9
    assert_close(rl.linear_scan(a, r), ref.linear_scan(a.double().cpu().numpy(), n["r"]), torch.float32)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=str)
def test_large_batch(dtype):
    (r, v, nv, term, trunc, mask), n = _rollout(16384, 1024, dtype, 1)
    adv, ret = rl.gae(r, v, terminated=term, truncated=trunc, next_values=nv, mask=mask)
    assert adv.dtype == dtype
    e_adv, e_ret = ref.gae(n["r"], n["v"], terminated=n["term"], truncated=n["trunc"], next_values=n["nv"], mask=n["mask"])
    assert_close(adv, e_adv, dtype)
    assert_close(ret, e_ret, dtype)
    # time-major buffer of the same data
    adv0, _ = rl.gae(r.t().contiguous(), v.t().contiguous(), terminated=term.t().contiguous(),
                     truncated=trunc.t().contiguous(), next_values=nv.t().contiguous(), mask=mask.t().contiguous(),
                     time_dim=0)
    assert_close(adv0.t(), e_adv, dtype)


@pytest.mark.parametrize("T", [100_000, 1024])
def test_long_gradients_match_torch_path(T):
    (r, v, nv, term, trunc, mask), _ = _rollout(4, T, torch.float64, 2)
    leaves = [x.clone().requires_grad_() for x in (r, v, nv)]
    w = torch.randn_like(r)

    def grads(backend):
        rr, vv, nn = leaves
        adv, ret = rl.gae(rr, vv, terminated=term, truncated=trunc, next_values=nn, mask=mask, backend=backend)
        g = rl.td_lambda(rr, nn, terminated=term, truncated=trunc, mask=mask, backend=backend)
        return torch.autograd.grad(((adv + 0.5 * ret + g) * w).sum(), leaves)

    for gk, gt in zip(grads("triton"), grads("torch")):
        torch.testing.assert_close(gk, gt, rtol=1e-9, atol=1e-9)


def test_bf16_gradients():
    (r, v, nv, term, trunc, mask), _ = _rollout(64, 3000, torch.bfloat16, 3)
    leaves = [x.clone().requires_grad_() for x in (r, v)]
    w = torch.randn(r.shape, device="cuda")

    def grads(backend):
        adv, ret = rl.gae(*leaves, terminated=term, mask=mask, backend=backend)
        return torch.autograd.grad(((adv.float() + ret.float()) * w).sum(), leaves)

    # A masked call's d values is the sum of two bf16 gradients (the estimator's and the mask's
    # look-ahead's), each rounded at terms up to twice the result's largest magnitude: the backends
    # may differ by an ulp of those terms, 2^-8 * 2 * scale, from either side (2^-6 * scale).
    for gk, gt in zip(grads("triton"), grads("torch")):
        scale = gt.float().abs().max().item()
        torch.testing.assert_close(gk.float(), gt.float(), rtol=TOLERANCES[torch.bfloat16], atol=2**-6 * scale)


@pytest.mark.xdist_group("gpu_memory")  # tens of GiB: one at a time (pytest -n 8 --dist loadgroup)
def test_int64_offsets_many_rows():
    """Rows x stride past 2**31 bytes of offset: a (2**21, 1100) float32 time-major tensor."""
    B, T = 2**21, 1100  # 2.3e9 elements: offsets beyond int32
    if torch.cuda.get_device_properties(0).total_memory < 40 * 2**30:
        pytest.skip("needs 40 GiB of GPU memory")
    r = torch.empty(T, B, device="cuda").uniform_(-1, 1)
    out = rl.discounted_returns(r, gamma=0.9, time_dim=0)
    rows = torch.tensor([0, 1, B // 2, B - 1], device="cuda")
    expected = ref.discounted_returns(r[:, rows].t().double().cpu().numpy(), gamma=0.9)
    assert_close(out[:, rows].t(), expected, torch.float32)
    del r, out


def test_devices_mix_is_refused():
    r = torch.randn(2, 5, device="cuda")
    with pytest.raises(ValueError, match="values"):
        rl.gae(r, r.cpu())
    with pytest.raises(ValueError, match="gamma"):
        rl.gae(r, r, gamma=torch.full((2, 5), 0.9))


@pytest.mark.parametrize("launches", [3, 2], ids=["three-launch", "compose"])
@pytest.mark.parametrize("B,T", [(8, 131072), (1, 1_000_003), (64, 16384)], ids=["8x131072", "1x1000003", "64x16384"])
def test_time_split_gpu(B, T, launches):
    """The time split at the sizes it is for, both ways (three launches; two, the carries
    composed by the last): values against the loops, the same bits over repeated calls (a race
    would show here), gradients against the torch path."""
    with using(Config(compose=1 << 20 if launches == 2 else 0, split_min_chunks=2)):  # (64x16384 too)
        _check_time_split(B, T)


def _check_time_split(B, T):
    (r, v, nv, term, trunc, mask), n = _rollout(B, T, torch.float32, 4)
    adv, ret = rl.gae(r, v, lambda_=0.97, terminated=term, truncated=trunc, next_values=nv, mask=mask)
    e_adv, e_ret = ref.gae(n["r"], n["v"], lambda_=0.97, terminated=n["term"], truncated=n["trunc"],
                           next_values=n["nv"], mask=n["mask"])
    assert_close(adv, e_adv, torch.float32)
    assert_close(ret, e_ret, torch.float32)
    for _ in range(5):
        again, _ = rl.gae(r, v, lambda_=0.97, terminated=term, truncated=trunc, next_values=nv, mask=mask)
        assert torch.equal(again, adv)
    leaves = [x.double().requires_grad_() for x in (r, v)]
    w = torch.randn(r.shape, device="cuda", dtype=torch.float64)

    def grads(backend):
        a, rt = rl.gae(*leaves, lambda_=0.97, terminated=term, truncated=trunc, next_values=nv.double(), mask=mask,
                       backend=backend)
        return torch.autograd.grad(((a + rt) * w).sum(), leaves)

    for gk, gt in zip(grads("triton"), grads("torch")):
        torch.testing.assert_close(gk, gt, rtol=1e-9, atol=1e-9)
