"""linear_scan, the primitive: against the reference loop, forwards and backwards in time,
with initial carries, padding, layouts and gradients."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import rltriton_lite as rl
from rltriton_lite import reference as ref
from rltriton_lite.config import Config, using

from cases import LAYOUTS, Rollout
from conftest import DEVICE, DTYPES, SPLIT, SPLIT3, assert_close


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


@pytest.mark.parametrize("vector", [4, 8])
@pytest.mark.parametrize("reverse", [True, False], ids=["reverse", "forward"])
def test_vector_widths(vector, reverse):
    """The kernel's in-register level (``Config.vector`` steps per thread: 8 is what 2-byte dtypes
    take, which the CPU does not run) gives the loops' values and the torch path's gradients,
    with padding, an initial carry and several chunks."""
    rng = np.random.default_rng(vector + 10 * reverse)
    ro, (a, np_a), (b, np_b), (init, np_init) = _scan_case(rng, (3,), 3 * 16 + 5, -1, torch.float64)
    with using(Config(max_block_t=16, vector=vector)):
        y = rl.linear_scan(a, b, reverse=reverse, initial=init, mask=ro.flag("mask"), backend="triton")
        assert_close(y, ref.linear_scan(np_a, np_b, reverse=reverse, initial=np_init, mask=ro.np_mask), torch.float64)
        a, b = (x.detach().clone().requires_grad_() for x in (a, b))
        w = torch.as_tensor(rng.standard_normal(b.shape), device=DEVICE)
        g_k, g_t = (torch.autograd.grad((rl.linear_scan(a, b, reverse=reverse, initial=init, mask=ro.flag("mask"),
                                                        backend=be) * w).sum(), (a, b)) for be in ("triton", "torch"))
    for g, e in zip(g_k, g_t):
        torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("tile", [(2, 16, 1, 2), (4, 32, 4), (1, 64, 2, 3)], ids=str)
def test_fixed_tiles(tile):
    """A tile sweep's config (``Config.tile``: rows, block, warps, stages) still gives the loops'
    values, rows past the tile and steps past the chunk included."""
    rng = np.random.default_rng(sum(tile))
    ro, (a, np_a), (b, np_b), (init, np_init) = _scan_case(rng, (5,), 3 * tile[1] + 7, -1, torch.float64)
    with using(Config(tile=tile)):
        y = rl.linear_scan(a, b, initial=init, mask=ro.flag("mask"), backend="triton")
    assert_close(y, ref.linear_scan(np_a, np_b, initial=np_init, mask=ro.np_mask), torch.float64)


@pytest.mark.parametrize("itemsize,vector,stages", [(4, 4, 2), (8, 4, 2), (2, 8, 1)])
def test_config_by_element_size(itemsize, vector, stages):
    """Vectors are 16 bytes (8 steps of bf16, 4 of float32 or float64); a one-row tile of a 2-byte
    dtype is not pipelined (Triton 3.6 replicates its layout), a two-row one is; time-major tiles
    hold half the rows for 8-byte elements. The chunk length depends on (rows, T) only, never on
    the layout. A vector other than 4 or 8 steps, or longer than the chunk, is refused."""
    from rltriton_lite import plan

    cfg = Config()
    assert plan._tile(64, 4096, True, itemsize, cfg) == (1, 256, 1, stages, vector)
    assert plan._tile(16384, 1024, True, itemsize, cfg) == (2, 128, 1, 2, vector)
    assert plan._tile(64, 100, True, itemsize, cfg) == (1, 128, 1, 1, vector)
    tm_rows = 16 * 4 // max(itemsize, 4)
    assert plan._tile(16384, 1024, False, itemsize, cfg) == (tm_rows, 128, 4, 1, vector)
    assert plan._tile(64, 4096, True, itemsize, Config(vector=8))[4] == 8
    for bad in (Config(vector=1), Config(tile=(1, 16, 1, 1, 16))):
        with pytest.raises(ValueError, match="steps per vector"):
            plan._tile(64, 4096, True, itemsize, bad)


def test_interpreted_programs_take_more_rows():
    """Interpreted on a CPU, a program walks up to 4096 elements of rows (the interpreter's cost
    is its operations, not their width); the chunk and the time split are a GPU's, so the
    carries are the same. A GPU's plan, and a fixed tile, keep a program per row."""
    from rltriton_lite import _triton, plan

    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    interpreted = _triton.INTERPRET
    assert plan._plan(3, 21, True, 4, cpu, Config()) == ((4, 32, 1, 1, 4, 1, 1, 1) if interpreted else
                                                         (1, 32, 1, 1, 4, 3, 1, 1))  # (rows, ..., programs, ...)
    assert plan._plan(40, 300, True, 4, cpu, Config())[:2] == ((16 if interpreted else 1), 256)
    assert plan._plan(40, 300, True, 4, cuda, Config(min_programs=0))[0] == 1
    assert plan._plan(40, 300, True, 4, cpu, Config(tile=(2, 64, 1)))[0] == 2
    split = Config(min_programs=64, split_min_chunks=2)  # 8 rows of 16 chunks: split in time everywhere
    assert plan._plan(8, 4096, True, 4, cpu, split)[6:] == plan._plan(8, 4096, True, 4, cuda, split)[6:] == (16, 1)


def test_map_and_reduce_tiles_fill_the_gpu():
    """The elementwise kernel's tile: up to 4096 elements, a row's steps contiguous, and fewer
    rows per tile until the grid has ``Config.map_min_programs`` programs. The partial sums keep
    the full tile; a hook that only reduces takes smaller tiles, several per program beyond
    ``Config.partial_programs`` tiles."""
    from rltriton_lite import _reduce, _triton

    cfg, cuda = Config(), torch.device("cuda")
    mp, el = cfg.map_min_programs, cfg.tile_elements
    assert _reduce._tile(16384, 1024, el, mp) == (4, 1024)
    assert _reduce._tile(8, 131072, el, mp) == (1, 1024)
    assert _reduce._tile(4096, 128, el, mp) == (4, 128)
    assert _reduce._tile(3, 5, el, mp) == (1, 16)
    assert _reduce._tile(8, 131072, el) == (4, 1024)
    assert _reduce._tile(4096, 128, el) == (32, 128)
    # (rows, steps, warps, tiles per program, stages): a storing hook keeps one tile per program
    assert _reduce._partials_config(16384, 1024, True, cfg, cuda) == (4, 1024, 8, 1, 1)
    assert _reduce._partials_config(16384, 1024, False, cfg, cuda) == (4, 512, 4, 16, 2)
    assert _reduce._partials_config(4096, 128, False, cfg, cuda) == (16, 128, 4, 1, 1)
    assert _reduce._partials_config(3, 5, False, cfg, cuda) == (4, 16, 4, 1, 1)
    # interpreted on a CPU a program costs its operations: a map's tiles do not shrink for more programs
    cpu_rows = _reduce._partials_config(8, 131072, True, cfg, torch.device("cpu"))[0]
    assert cpu_rows == (4 if _triton.INTERPRET else 1)
    small = Config(reduce_tile_elements=64, partial_programs=2)
    assert _reduce._partials_config(17, 181, False, small, cuda)[:4] == (4, 16, 4, 30)
    assert _reduce._partials_config(17, 181, True, small, cuda)[:4] == (1, 256, 4, 1)  # as a map's tile


@pytest.mark.parametrize("compose_block,reverse", [(4, True), (256, False)], ids=["blocks_of_4", "one_block"])
def test_composed_carries_split(compose_block, reverse):
    """The time split in two launches, each segment composing its own carry from the segments'
    maps: 11 segments of one 16-step chunk, their maps composed 4 at a time (3 blocks, the last one
    short) or all at once; values against the loops, gradients against the torch path, the same
    bits on a second run, and the three-launch split's values to rounding."""
    rng = np.random.default_rng(compose_block + reverse)
    ro, (a, np_a), (b, np_b), (init, np_init) = _scan_case(rng, (2,), 11 * 16 - 5, -1, torch.float64)
    mask = ro.flag("mask")
    run = lambda: rl.linear_scan(a, b, reverse=reverse, initial=init, mask=mask, backend="triton")  # noqa: E731
    split = dataclasses.replace(SPLIT, compose_block=compose_block)
    with using(split):
        y = run()
        assert_close(y, ref.linear_scan(np_a, np_b, reverse=reverse, initial=np_init, mask=ro.np_mask),
                     torch.float64)
        assert torch.equal(run(), y)
    with using(SPLIT3):
        torch.testing.assert_close(run(), y, rtol=1e-12, atol=1e-12)
    a, b = (x.detach().clone().requires_grad_() for x in (a, b))
    w = torch.as_tensor(rng.standard_normal(b.shape), device=DEVICE)
    with using(split):
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


def test_a_zero_coefficient_and_nan():
    """GAE with λ = 0 (every a_t = γλ = 0) and a NaN reward at t = 3. The loops give
    δ_t + 0·NaN = NaN at every step before it in the episode; the kernel does the same (a zero
    coefficient is a product, not a reset). Outside NaN and Inf the two agree."""
    r = torch.tensor([[1.0, 2.0, 3.0, float("nan"), 5.0, 6.0]], device=DEVICE)
    v = torch.tensor([[0.5, 0.25, 0.0, 1.0, 2.0, 0.5]], device=DEVICE)
    kw = dict(gamma=0.9, lambda_=0.0, bootstrap_value=torch.zeros(1, device=DEVICE), backend="triton")
    adv, _ = rl.gae(r, v, **kw)
    expected = ref.gae(r.cpu().numpy(), v.cpu().numpy(), gamma=0.9, lambda_=0.0, bootstrap_value=np.zeros(1))[0]
    assert np.isnan(expected[0, :4]).all() and np.isfinite(expected[0, 4:]).all()  # the loops
    nan = torch.isnan(adv[0]).cpu().numpy()
    assert list(nan) == [True] * 4 + [False] * 2
    np.testing.assert_allclose(adv[0].cpu().numpy()[~nan], expected[0, ~nan], rtol=1e-6)
    r[0, 3] = 4.0  # without the NaN the kernel equals the loops
    adv, _ = rl.gae(r, v, **kw)
    expected = ref.gae(r.cpu().numpy(), v.cpu().numpy(), gamma=0.9, lambda_=0.0, bootstrap_value=np.zeros(1))[0]
    np.testing.assert_allclose(adv.cpu().numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("cfg", [Config(), SPLIT, SPLIT3], ids=["one segment", "split", "split, three launches"])
@pytest.mark.parametrize("reverse", [True, False], ids=["reverse", "forward"])
def test_a_rows_map_is_its_steps_composed(cfg, reverse):
    """plan.summarize (a time split's segments composed by one more summary) against the torch
    path's composition: the map (A, B, reset) that distributed.py's windows exchange."""
    from rltriton_lite import _torch_path, primitive

    g = torch.Generator().manual_seed(3)
    a = torch.rand(3, 200, generator=g, dtype=torch.float64, device="cpu").to(DEVICE) * 0.2 + 0.85
    b = torch.randn(3, 200, generator=g, dtype=torch.float64).to(DEVICE)
    a[1, 150 if reverse else 40] = 0.0  # a reset in row 1
    p = primitive._Problem(a, b, None, None, 1, reverse, False, True)
    with using(cfg):
        got = primitive._summary(p)
    want = _torch_path.compose(a, b, a == 0, reverse=reverse)
    torch.testing.assert_close(got[0][[0, 2]], want[0][[0, 2]], rtol=1e-10, atol=1e-300)  # A (row 1's: unused)
    torch.testing.assert_close(got[1], want[1], rtol=1e-12, atol=1e-12)
    assert got[2].tolist() == [0.0, 1.0, 0.0] and want[2].tolist() == [False, True, False]
