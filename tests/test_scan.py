"""linear_scan, the primitive: against the reference loop, forwards and backwards in time,
with initial carries, padding, layouts and gradients."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import rltriton_lite as rl
from rltriton_lite import reference as ref

from cases import LAYOUTS, Rollout
from conftest import DEVICE, DTYPES, assert_close


def _scan_case(rng, batch, T, time_dim, dtype, strided=False):
    ro = Rollout(rng, batch, T, time_dim=time_dim, dtype=dtype, device=DEVICE, strided=strided)
    a, np_a = ro.floats("a", low=0.0)  # multipliers in [0, 1): a decaying recurrence
    b, np_b = ro.floats("b")
    init, np_init = ro.per_row("initial")
    return ro, (a, np_a), (b, np_b), (init, np_init)


@pytest.mark.parametrize("T", ["1", "2", "63", "100", "block+1", "3block+5"])
@pytest.mark.parametrize("reverse", [True, False], ids=["reverse", "forward"])
def test_linear_scan_lengths(T, reverse, impl):
    backend, block = impl
    T = {"block+1": block + 1, "3block+5": 3 * block + 5}.get(T) or int(T)
    rng = np.random.default_rng(T + 1000 * reverse)
    ro, (a, np_a), (b, np_b), (init, np_init) = _scan_case(rng, (3,), T, -1, torch.float32)
    y = rl.linear_scan(a, b, reverse=reverse, backend=backend)
    assert_close(y, ref.linear_scan(np_a, np_b, reverse=reverse), torch.float32)
    y = rl.linear_scan(a, b, reverse=reverse, initial=init, mask=ro.flag("mask"), backend=backend)
    assert_close(y, ref.linear_scan(np_a, np_b, reverse=reverse, initial=np_init, mask=ro.np_mask), torch.float32)


@pytest.mark.parametrize("layout", list(LAYOUTS) + ["strided"])
def test_linear_scan_layouts(layout, backend, small_blocks):
    batch, time_dim = LAYOUTS.get(layout, ((3,), -1))
    rng = np.random.default_rng(len(layout))
    ro, (a, np_a), (b, np_b), (init, np_init) = _scan_case(rng, batch, 53, time_dim, torch.float32,
                                                           strided=layout == "strided")
    y = rl.linear_scan(a, b, initial=init, mask=ro.flag("mask"), time_dim=time_dim, backend=backend)
    assert y.shape == b.shape
    assert_close(ro.to_numpy(y), ref.linear_scan(np_a, np_b, initial=np_init, mask=ro.np_mask), torch.float32)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_linear_scan_dtypes(dtype, backend):
    rng = np.random.default_rng(2)
    ro, (a, np_a), (b, np_b), _ = _scan_case(rng, (4,), 100, -1, dtype)
    y = rl.linear_scan(a, b, backend=backend)
    assert y.dtype == dtype
    assert_close(y, ref.linear_scan(np_a, np_b), dtype)


def test_linear_scan_broadcast_a(backend):
    """A scalar-per-row (or per-step) multiplier broadcasts: discounting by a constant."""
    b = torch.randn(2, 30, device=DEVICE, dtype=torch.float64)
    y = rl.linear_scan(torch.tensor(0.9, dtype=torch.float64, device=DEVICE), b, backend=backend)
    assert_close(y, ref.linear_scan(0.9, b.cpu().numpy()), torch.float64)


@pytest.mark.parametrize("reverse", [True, False], ids=["reverse", "forward"])
def test_linear_scan_gradients(reverse, backend, small_blocks):
    rng = np.random.default_rng(4)
    B, T = 2, 37
    mk = lambda *s: torch.as_tensor(rng.uniform(-1, 1, s), device=DEVICE).requires_grad_()  # noqa: E731
    a, b, init = mk(B, T), mk(B, T), mk(B)
    mask = torch.as_tensor(rng.random((B, T)) < 0.8, device=DEVICE)
    w = torch.as_tensor(rng.standard_normal((B, T)), device=DEVICE)

    def grads(backend):
        y = rl.linear_scan(a, b, initial=init, mask=mask, reverse=reverse, backend=backend)
        return torch.autograd.grad((y * w).sum(), (a, b, init))

    if backend == "triton":  # the kernel's transposed scan against autograd of the torch path
        for g, e in zip(grads("triton"), grads("torch")):
            torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-10)
    # finite differences on a short piece
    small = [x.detach()[:, :7].clone().requires_grad_() for x in (a, b)]
    m7 = mask[:, :7]
    assert torch.autograd.gradcheck(
        lambda a, b, i: rl.linear_scan(a, b, initial=i, mask=m7, reverse=reverse, backend=backend),
        (*small, init.detach().clone().requires_grad_()), eps=1e-6, atol=1e-8)


@pytest.mark.parametrize("vector", [1, 4, 8])
@pytest.mark.parametrize("reverse", [True, False], ids=["reverse", "forward"])
def test_vector_widths(vector, reverse, monkeypatch, small_blocks):
    """The kernel's in-register level (``scan.VECTOR`` steps per thread; 1 = none) gives the loops'
    values and the torch path's gradients, with padding, an initial carry and several chunks."""
    from rltriton_lite import scan

    monkeypatch.setattr(scan, "VECTOR", vector)
    rng = np.random.default_rng(vector + 10 * reverse)
    ro, (a, np_a), (b, np_b), (init, np_init) = _scan_case(rng, (3,), 3 * small_blocks + 5, -1, torch.float64)
    y = rl.linear_scan(a, b, reverse=reverse, initial=init, mask=ro.flag("mask"), backend="triton")
    assert_close(y, ref.linear_scan(np_a, np_b, reverse=reverse, initial=np_init, mask=ro.np_mask), torch.float64)
    a, b = (x.detach().clone().requires_grad_() for x in (a, b))
    w = torch.as_tensor(rng.standard_normal(b.shape), device=DEVICE)
    g_k, g_t = (torch.autograd.grad((rl.linear_scan(a, b, reverse=reverse, initial=init, mask=ro.flag("mask"),
                                                    backend=be) * w).sum(), (a, b)) for be in ("triton", "torch"))
    for g, e in zip(g_k, g_t):
        torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("tile", [(2, 16, 1, 2), (4, 32, 4), (1, 64, 2, 3)], ids=str)
def test_fixed_tiles(tile, monkeypatch):
    """A tile sweep's stand-in config (``scan.fixed_config``: rows, block, warps, stages) still
    gives the loops' values, rows past the tile and steps past the chunk included."""
    from rltriton_lite import scan

    monkeypatch.setattr(scan, "_config", scan.fixed_config(*tile))
    rng = np.random.default_rng(sum(tile))
    ro, (a, np_a), (b, np_b), (init, np_init) = _scan_case(rng, (5,), 3 * tile[1] + 7, -1, torch.float64)
    y = rl.linear_scan(a, b, initial=init, mask=ro.flag("mask"), backend="triton")
    assert_close(y, ref.linear_scan(np_a, np_b, initial=np_init, mask=ro.np_mask), torch.float64)


@pytest.mark.parametrize("itemsize,vector,stages", [(4, 4, 2), (8, 4, 2), (2, 8, 1)])
def test_config_by_element_size(itemsize, vector, stages, monkeypatch):
    """Vectors are 16 bytes (8 steps of bf16, 4 of float32 or float64); a one-row tile of a 2-byte
    dtype is not pipelined (Triton 3.6 replicates its layout, benchmarks/NOTES.md v5), a two-row
    one is; time-major tiles hold half the rows for 8-byte elements. The chunk length depends on
    (rows, T) only, never on the layout."""
    from rltriton_lite import scan

    monkeypatch.setattr(scan, "VECTOR", None)
    assert scan._config(64, 4096, True, itemsize) == (1, 256, 1, stages, vector)
    assert scan._config(16384, 1024, True, itemsize) == (2, 128, 1, 2, vector)
    assert scan._config(64, 100, True, itemsize) == (1, 128, 1, 1, vector)
    tm_rows = 16 * 4 // max(itemsize, 4)
    assert scan._config(16384, 1024, False, itemsize) == (tm_rows, 128, 4, 1, vector)
    monkeypatch.setattr(scan, "VECTOR", 1)
    assert scan._config(64, 4096, True, itemsize)[4] == 1


def test_map_and_reduce_tiles_fill_the_gpu(monkeypatch):
    """The elementwise kernel's tile: up to 4096 elements, a row's steps contiguous, and fewer
    rows per tile until the grid has ``_reduce.MIN_PROGRAMS`` programs. The partial sums keep
    the full tile; a hook that only reduces takes smaller tiles, several per program beyond
    ``_reduce.PARTIAL_PROGRAMS`` tiles."""
    from rltriton_lite import _reduce

    mp = _reduce.MIN_PROGRAMS
    assert _reduce._tile(16384, 1024, mp) == (4, 1024)
    assert _reduce._tile(8, 131072, mp) == (1, 1024)
    assert _reduce._tile(4096, 128, mp) == (4, 128)
    assert _reduce._tile(3, 5, mp) == (1, 16)
    assert _reduce._tile(8, 131072) == (4, 1024)
    assert _reduce._tile(4096, 128) == (32, 128)
    # (rows, steps, warps, tiles per program, stages): a storing hook keeps one tile per program
    assert _reduce._partials_config(16384, 1024, True) == (4, 1024, 8, 1, 1)
    assert _reduce._partials_config(16384, 1024, False) == (4, 512, 4, 16, 2)
    assert _reduce._partials_config(4096, 128, False) == (16, 128, 4, 1, 1)
    assert _reduce._partials_config(3, 5, False) == (4, 16, 4, 1, 1)
    monkeypatch.setattr(_reduce, "REDUCE_TILE_ELEMENTS", 64)
    monkeypatch.setattr(_reduce, "PARTIAL_PROGRAMS", 2)
    assert _reduce._partials_config(17, 181, False)[:4] == (4, 16, 4, 30)
    assert _reduce._partials_config(17, 181, True)[:4] == (1, 256, 4, 1)  # as a map's tile


@pytest.mark.parametrize("mode", ["lookback", "compose"])
@pytest.mark.parametrize("look_block,reverse", [(4, True), (256, False)], ids=["blocks_of_4", "one_block"])
def test_composed_carries_split(look_block, reverse, mode, monkeypatch):
    """The time split that composes each segment's carry from the segments' maps, in one launch
    (``scan.LOOKBACK``) or two (``scan.COMPOSE``): 21 segments of one 16-step chunk, their maps
    composed 4 at a time (6 blocks, the last one short) or all at once; values against the
    loops, gradients against the torch path, the same bits on a second run, and the three-launch
    split's values to rounding."""
    from rltriton_lite import scan

    on, off = {"lookback": (("LOOKBACK", True), ("LOOKBACK", False)),
               "compose": (("COMPOSE", 1 << 20), ("COMPOSE", 0))}[mode]
    monkeypatch.setattr(scan, "MAX_BLOCK_T", 16)
    monkeypatch.setattr(scan, "MIN_PROGRAMS", 1 << 20)
    monkeypatch.setattr(scan, "COMPOSE", 0)  # the other split: three launches
    monkeypatch.setattr(scan, *on)
    monkeypatch.setattr(scan, "LOOKBACK_BLOCK", look_block)
    rng = np.random.default_rng(look_block + reverse)
    ro, (a, np_a), (b, np_b), (init, np_init) = _scan_case(rng, (2,), 21 * 16 - 5, -1, torch.float64)
    mask = ro.flag("mask")
    run = lambda: rl.linear_scan(a, b, reverse=reverse, initial=init, mask=mask, backend="triton")  # noqa: E731
    y = run()
    assert_close(y, ref.linear_scan(np_a, np_b, reverse=reverse, initial=np_init, mask=ro.np_mask), torch.float64)
    assert torch.equal(run(), y)
    monkeypatch.setattr(scan, *off)
    torch.testing.assert_close(run(), y, rtol=1e-12, atol=1e-12)
    monkeypatch.setattr(scan, *on)
    a, b = (x.detach().clone().requires_grad_() for x in (a, b))
    w = torch.as_tensor(rng.standard_normal(b.shape), device=DEVICE)
    g_k, g_t = (torch.autograd.grad((rl.linear_scan(a, b, reverse=reverse, initial=init, mask=mask,
                                                    backend=be) * w).sum(), (a, b)) for be in ("triton", "torch"))
    for g, e in zip(g_k, g_t):
        torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-10)


def test_linear_scan_zero_multiplier_is_a_boundary(backend):
    """a_t = 0 cuts the sequence: what comes after t does not reach t."""
    b = torch.tensor([[1.0, 2.0, 3.0, 4.0]], device=DEVICE)
    a = torch.tensor([[0.5, 0.0, 0.5, 0.5]], device=DEVICE)
    y = rl.linear_scan(a, b, backend=backend)
    torch.testing.assert_close(y, torch.tensor([[2.0, 2.0, 5.0, 4.0]], device=DEVICE))


def test_linear_scan_nan_stops_at_a_boundary(backend):
    """a_t = 0 is computed as a reset: a NaN after it reaches neither y nor the gradients before it."""
    b = torch.tensor([[1.0, 2.0, 3.0, float("nan"), 5.0]], device=DEVICE, requires_grad=True)
    a = torch.tensor([[0.5, 0.0, 0.5, 0.5, 0.5]], device=DEVICE)
    y = rl.linear_scan(a, b, backend=backend)
    torch.testing.assert_close(y[:, :2], torch.tensor([[2.0, 2.0]], device=DEVICE))
    assert torch.isnan(y[:, 2:4]).all() and y[0, 4] == 5.0
    (g,) = torch.autograd.grad(y[:, :2].sum(), b)
    torch.testing.assert_close(g, torch.tensor([[1.0, 1.5, 0.0, 0.0, 0.0]], device=DEVICE))


@pytest.mark.parametrize("fold", [False, True], ids=["three-operands", "folded"])
def test_a_zero_coefficient_and_nan(fold, monkeypatch):
    """GAE with λ = 0 (every a_t = γλ = 0) and a NaN reward at t = 3. The loops give
    δ_t + 0·NaN = NaN at every step before it in the episode; the default kernel does the same.
    With ``scan.FOLD_RESETS`` a zero coefficient is a boundary (a select): only t = 3 is NaN.
    Outside NaN and Inf the two agree."""
    from rltriton_lite import scan

    monkeypatch.setattr(scan, "FOLD_RESETS", fold)
    r = torch.tensor([[1.0, 2.0, 3.0, float("nan"), 5.0, 6.0]], device=DEVICE)
    v = torch.tensor([[0.5, 0.25, 0.0, 1.0, 2.0, 0.5]], device=DEVICE)
    kw = dict(gamma=0.9, lambda_=0.0, bootstrap_value=torch.zeros(1, device=DEVICE), backend="triton")
    adv, _ = rl.gae(r, v, **kw)
    expected = ref.gae(r.cpu().numpy(), v.cpu().numpy(), gamma=0.9, lambda_=0.0, bootstrap_value=np.zeros(1))[0]
    assert np.isnan(expected[0, :4]).all() and np.isfinite(expected[0, 4:]).all()  # the loops
    nan = torch.isnan(adv[0]).cpu().numpy()
    assert list(nan) == ([True] * 4 + [False] * 2 if not fold else [False] * 3 + [True] + [False] * 2)
    finite = ~nan & np.isfinite(expected[0])
    np.testing.assert_allclose(adv[0].cpu().numpy()[finite], expected[0, finite], rtol=1e-6)
    if fold:  # the steps before the NaN: δ_t alone
        delta = (r[0, :3] + 0.9 * v[0, 1:4] - v[0, :3]).cpu().numpy()
        np.testing.assert_allclose(adv[0, :3].cpu().numpy(), delta, rtol=1e-6)
    r[0, 3] = 4.0  # without the NaN both modes equal the loops
    adv, _ = rl.gae(r, v, **kw)
    expected = ref.gae(r.cpu().numpy(), v.cpu().numpy(), gamma=0.9, lambda_=0.0, bootstrap_value=np.zeros(1))[0]
    np.testing.assert_allclose(adv.cpu().numpy(), expected, rtol=1e-6)
