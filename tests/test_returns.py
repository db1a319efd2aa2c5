"""discounted_returns, gae and td_lambda against the float64 reference loops, on every backend,
length, layout and dtype; gradients; NaN containment."""
from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch

import rltriton_lite as rl
from rltriton_lite import reference as ref
from rltriton_lite.config import Config, using

from cases import LAYOUTS, Rollout, assert_nan_contained
from conftest import DEVICE, DTYPES, assert_close

ESTIMATORS = ["discounted_return", "gae", "td_lambda"]

# option sets; td_lambda always has next_values, the others bootstrap from values[t+1] or 0
OPTIONS = {
    "window_only": dict(),
    "episodes": dict(terminated=True, truncated=True, next_values=True),
    "implicit_next": dict(terminated=True, bootstrap=True),
    "padded_per_step": dict(terminated=True, truncated=True, next_values=True, mask=True,
                            gamma="step", lambda_="step"),
    "per_row_gamma": dict(terminated=True, mask=True, bootstrap=True, gamma="row"),
}


def _coefficient(ro, kind, name, value):
    """A scalar, a per-step tensor or a per-row tensor (time dim of size 1), and its NumPy twin."""
    if kind == "scalar":
        return value, value
    if kind == "step":
        return ro.floats(name, low=0.5)
    shape = list(ro.batch) + [1]
    x = ro.rng.uniform(0.5, 1.0, shape)
    t = torch.as_tensor(np.moveaxis(x, -1, ro.time_dim)).to(ro.dtype).to(ro.device)
    return t, np.moveaxis(t.double().cpu().numpy(), ro.time_dim, -1)


def run(name, ro, opts, backend):
    """Call the estimator and its reference on the same rollout; return (outputs, expected)."""
    kw, ref_kw = dict(time_dim=ro.time_dim, backend=backend), {}
    for flag in ("terminated", "truncated", "mask"):
        if opts.get(flag):
            kw[flag], ref_kw[flag] = ro.flag(flag), getattr(ro, "np_" + flag)
    kw["gamma"], ref_kw["gamma"] = _coefficient(ro, opts.get("gamma", "scalar"), "gamma", 0.97)
    if name != "discounted_return":
        kw["lambda_"], ref_kw["lambda_"] = _coefficient(ro, opts.get("lambda_", "scalar"), "lambda", 0.9)
    if opts.get("next_values") or name == "td_lambda":
        kw["next_values"], ref_kw["next_values"] = ro.floats("next_values")
    elif opts.get("bootstrap"):
        kw["bootstrap_value"], ref_kw["bootstrap_value"] = ro.per_row("bootstrap")
    r, np_r = ro.floats("rewards")
    if name == "discounted_return":
        return (rl.discounted_returns(r, **kw),), (ref.discounted_returns(np_r, **ref_kw),)
    if name == "td_lambda":
        nv = kw.pop("next_values")
        ref_kw.pop("next_values")
        return (rl.td_lambda(r, nv, **kw),), (ref.td_lambda(np_r, ro.floats("next_values")[1], **ref_kw),)
    v, np_v = ro.floats("values")
    out = rl.gae(r, v, **kw)
    assert isinstance(out, rl.GAEOutput)
    return tuple(out), ref.gae(np_r, np_v, **ref_kw)


def check(name, ro, opts, backend):
    outs, expected = run(name, ro, opts, backend)
    for o, e in zip(outs, expected):
        assert o.shape == ro.floats("rewards")[0].shape and o.dtype == ro.dtype and o.device.type == DEVICE
        assert_close(ro.to_numpy(o), e, ro.dtype, f"{name} {opts}")


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("opts", list(OPTIONS), ids=list(OPTIONS))
@pytest.mark.parametrize("T", ["1", "2", "100", "block+1", "3block+5"])  # 100: one chunk, or 7 segments split
def test_lengths(name, opts, T, impl):
    backend, block = impl
    T = {"block+1": block + 1, "3block+5": 3 * block + 5}.get(T) or int(T)
    rng = np.random.default_rng(zlib.crc32(f"{name}{opts}{T}{block}".encode()))
    check(name, Rollout(rng, (3,), T, device=DEVICE), OPTIONS[opts], backend)


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("layout", list(LAYOUTS) + ["strided"])
def test_layouts(name, layout, backend, small_blocks):
    block = small_blocks
    batch, time_dim = LAYOUTS.get(layout, ((3,), -1))
    rng = np.random.default_rng(7)
    ro = Rollout(rng, batch, 3 * block + 5, time_dim=time_dim, device=DEVICE, strided=layout == "strided")
    check(name, ro, OPTIONS["padded_per_step"], backend)
    check(name, ro, OPTIONS["per_row_gamma"] if name != "td_lambda" else OPTIONS["episodes"], backend)


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_dtypes(name, dtype, backend):
    rng = np.random.default_rng(11)
    ro = Rollout(rng, (4,), 100, dtype=dtype, device=DEVICE)
    check(name, ro, OPTIONS["padded_per_step"], backend)
    check(name, ro, OPTIONS["implicit_next" if name != "td_lambda" else "episodes"], backend)


def test_time_major_matches_batch_major(backend):
    """The same data as a (T, B) time-major buffer and as a (B, T) one."""
    rng = np.random.default_rng(3)
    r = torch.as_tensor(rng.standard_normal((5, 77)), dtype=torch.float32, device=DEVICE)
    v = torch.as_tensor(rng.standard_normal((5, 77)), dtype=torch.float32, device=DEVICE)
    d = torch.as_tensor(rng.random((5, 77)) < 0.1, device=DEVICE)
    a1, _ = rl.gae(r, v, terminated=d, backend=backend)
    a0, _ = rl.gae(r.t().contiguous(), v.t().contiguous(), terminated=d.t().contiguous(), time_dim=0, backend=backend)
    assert a0.is_contiguous() and a0.shape == (77, 5)
    torch.testing.assert_close(a1, a0.t(), rtol=1e-6, atol=1e-6)


def test_layouts_are_scanned_in_the_same_order():
    """The kernel groups a time-major and a batch-major buffer into the same chunks and vectors of
    steps, so the same additions happen in the same order: on the interpreter the two agree
    bitwise (compiled, Triton's order across lanes follows the register layout: to rounding)."""
    rng = np.random.default_rng(4)
    r, v = (torch.as_tensor(rng.standard_normal((6, 300)), dtype=torch.float32, device=DEVICE) for _ in range(2))
    d = torch.as_tensor(rng.random((6, 300)) < 0.05, device=DEVICE)
    with using(Config(max_block_t=64)):
        a1, _ = rl.gae(r, v, terminated=d, backend="triton")
        a0, _ = rl.gae(r.t().contiguous(), v.t().contiguous(), terminated=d.t().contiguous(), time_dim=0,
                       backend="triton")
    if DEVICE == "cpu":
        assert torch.equal(a1, a0.t())
    else:
        torch.testing.assert_close(a1, a0.t(), rtol=1e-6, atol=1e-6)


def test_backends_agree_on_defaults(small_blocks):
    """Default arguments (gamma=0.99, lambda_=0.95) on the kernel and the torch path."""
    rng = np.random.default_rng(5)
    r = torch.as_tensor(rng.standard_normal((2, 40)), dtype=torch.float64, device=DEVICE)
    v = torch.as_tensor(rng.standard_normal((2, 40)), dtype=torch.float64, device=DEVICE)
    for fn in (lambda be: rl.gae(r, v, backend=be).advantages, lambda be: rl.discounted_returns(r, backend=be),
               lambda be: rl.td_lambda(r, v, backend=be)):
        torch.testing.assert_close(fn("triton"), fn("torch"), rtol=1e-12, atol=1e-12)
    e_adv, _ = ref.gae(r.cpu().numpy(), v.cpu().numpy(), gamma=0.99, lambda_=0.95)
    assert_close(rl.gae(r, v).advantages, e_adv, torch.float64)


# ---- special values -------------------------------------------------------------------------
def test_empty_and_single_step(backend):
    for shape, td in [((0, 5), -1), ((3, 0), -1), ((0,), 0), ((4, 0, 2), 1)]:
        r = torch.zeros(shape, device=DEVICE)
        assert rl.discounted_returns(r, time_dim=td, backend=backend).shape == shape
        adv, ret = rl.gae(r, r, time_dim=td, backend=backend)
        assert adv.shape == ret.shape == shape
        assert rl.td_lambda(r, r, time_dim=td, backend=backend).shape == shape
    r = torch.tensor([[1.5], [-2.0]], device=DEVICE)
    boot = torch.tensor([10.0, 20.0], device=DEVICE)
    out = rl.discounted_returns(r, gamma=0.5, bootstrap_value=boot, backend=backend)
    torch.testing.assert_close(out, torch.tensor([[6.5], [8.0]], device=DEVICE))


@pytest.mark.parametrize("name", ESTIMATORS)
def test_nan_stays_in_its_episode(name, impl):
    """A NaN reward poisons only the earlier steps of its own episode (and row)."""
    backend, block = impl
    rng = np.random.default_rng(13)
    B, T = 3, 3 * block + 5
    ro = Rollout(rng, (B,), T, device=DEVICE, p_trunc=0.0, p_pad=0.0, p_term=0.08)
    ro.np_terminated[:, T // 2] = True
    r, np_r = ro.floats("rewards")
    row, j = 1, T // 2 + 3
    r[row, j] = float("nan")
    opts = dict(terminated=True, next_values=True)
    outs, _ = run(name, ro, opts, backend)
    np_r_clean = np_r.copy()
    np_r_clean[row, j] = 0.0
    ro._floats["rewards"] = (r, np_r_clean)
    _, expected = run(name, ro, opts, "torch")
    assert_nan_contained(outs, expected, ro.np_terminated, row, j)


def test_nan_value_after_termination_is_never_read(backend):
    """V(s_{t+1}) of a terminal next state is a select away, even when it is NaN or Inf."""
    r = torch.tensor([[1.0, 2.0, 3.0, 4.0]], device=DEVICE)
    v = torch.tensor([[0.5, 0.5, float("nan"), 0.5]], device=DEVICE)  # V(s_2): s_2 is terminal
    nv = torch.tensor([[0.5, float("inf"), 0.5, 0.5]], device=DEVICE)
    term = torch.tensor([[False, True, False, False]], device=DEVICE)
    adv, _ = rl.gae(r[:, :2], v[:, :2], terminated=term[:, :2],
                    next_values=torch.tensor([[0.5, float("nan")]], device=DEVICE), backend=backend)
    assert torch.isfinite(adv).all()
    g = rl.td_lambda(r, nv, terminated=term, backend=backend)
    assert torch.isfinite(g).all()
    g2 = rl.discounted_returns(r, next_values=nv, terminated=term, backend=backend)
    assert torch.isfinite(g2).all()


def test_inputs_are_not_modified(backend):
    rng = np.random.default_rng(17)
    ro = Rollout(rng, (3,), 50, device=DEVICE)
    opts = OPTIONS["padded_per_step"]
    _ = run("gae", ro, opts, backend)
    before = {k: v[0].clone() for k, v in ro._floats.items()}
    flags = {k: ro.flag(k) for k in ("terminated", "truncated", "mask")}
    for name in ESTIMATORS:
        run(name, ro, opts, backend)
    for k, v in ro._floats.items():
        assert torch.equal(v[0], before[k]), k
    for k, f in flags.items():
        assert torch.equal(ro.flag(k), f)


def test_flag_dtypes_agree(backend):
    rng = np.random.default_rng(19)
    r = torch.as_tensor(rng.standard_normal((2, 30)), dtype=torch.float32, device=DEVICE)
    d = torch.as_tensor(rng.random((2, 30)) < 0.2, device=DEVICE)
    outs = [rl.discounted_returns(r, terminated=d.to(dt), mask=(~d).to(dt), backend=backend)
            for dt in (torch.bool, torch.uint8, torch.float32, torch.int64)]
    for o in outs[1:]:
        assert torch.equal(o, outs[0])


def test_lambda_one_gae_plus_values_is_discounted_return(backend):
    """With V'_t = V_{t+1} inside episodes, GAE(λ=1) + V telescopes to the discounted return."""
    rng = np.random.default_rng(23)
    B, T = 3, 60
    r = torch.as_tensor(rng.standard_normal((B, T)), dtype=torch.float64, device=DEVICE)
    v = torch.as_tensor(rng.standard_normal((B, T)), dtype=torch.float64, device=DEVICE)
    term = torch.as_tensor(rng.random((B, T)) < 0.1, device=DEVICE)
    trunc = torch.as_tensor(rng.random((B, T)) < 0.1, device=DEVICE) & ~term
    nv = torch.cat([v[:, 1:], torch.randn(B, 1, dtype=v.dtype, device=DEVICE)], 1)
    nv = torch.where(trunc, torch.randn_like(nv), nv)  # the real next state at truncations
    kw = dict(gamma=0.9, terminated=term, truncated=trunc, backend=backend)
    _, ret = rl.gae(r, v, lambda_=1.0, next_values=nv, **kw)
    torch.testing.assert_close(ret, rl.discounted_returns(r, next_values=nv, **kw))
    torch.testing.assert_close(ret, rl.td_lambda(r, nv, lambda_=1.0, **kw))


def test_td_lambda_zero_is_one_step_target(backend):
    rng = np.random.default_rng(29)
    r = torch.as_tensor(rng.standard_normal((2, 33)), dtype=torch.float64, device=DEVICE)
    nv = torch.as_tensor(rng.standard_normal((2, 33)), dtype=torch.float64, device=DEVICE)
    term = torch.as_tensor(rng.random((2, 33)) < 0.2, device=DEVICE)
    out = rl.td_lambda(r, nv, gamma=0.9, lambda_=0.0, terminated=term, backend=backend)
    torch.testing.assert_close(out, r + 0.9 * torch.where(term, 0.0, nv))


# ---- gradients ------------------------------------------------------------------------------
GRAD_OPTIONS = ["episodes", "implicit_next", "padded_per_step"]


def _grad_call(name, ro, opts, backend, weights):
    outs, _ = run(name, ro, opts, backend)
    return sum((o * w).sum() for o, w in zip(outs, weights))


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("opts", GRAD_OPTIONS)
def test_kernel_gradients_match_torch_path(name, opts, small_blocks):
    block = small_blocks
    if name == "td_lambda" and opts == "implicit_next":
        opts = "episodes"
    rng = np.random.default_rng(31)
    ro = Rollout(rng, (3,), 3 * block + 5, dtype=torch.float64, device=DEVICE)
    leaves = {k: ro.floats(k)[0].requires_grad_() for k in ("rewards", "values", "next_values")}
    boot = ro.per_row("bootstrap")[0].requires_grad_()
    weights = [torch.as_tensor(rng.standard_normal(leaves["rewards"].shape), device=DEVICE) for _ in range(2)]
    grads = {}
    for backend in ("triton", "torch"):
        loss = _grad_call(name, ro, OPTIONS[opts], backend, weights)
        grads[backend] = torch.autograd.grad(loss, [*leaves.values(), boot], allow_unused=True)
    for gk, gt in zip(grads["triton"], grads["torch"]):
        assert (gk is None) == (gt is None)
        if gk is not None:
            torch.testing.assert_close(gk, gt, rtol=1e-10, atol=1e-10)
    assert any(g is not None and g.abs().sum() > 0 for g in grads["triton"])


@pytest.mark.parametrize("used", [(True, False), (False, True)], ids=["advantages", "returns"])
def test_gae_gradient_through_one_output(used, small_blocks):
    """Only one of GAE's outputs in the loss: the other's gradient is None, read as zeros by
    the backward kernel (no buffer of zeros); equal to the torch path."""
    rng = np.random.default_rng(41)
    ro = Rollout(rng, (3,), 2 * small_blocks + 3, dtype=torch.float64, device=DEVICE)
    leaves = [ro.floats(k)[0].requires_grad_() for k in ("rewards", "values")]
    w = torch.as_tensor(rng.standard_normal(leaves[0].shape), device=DEVICE)
    grads = {}
    for backend in ("triton", "torch"):
        outs = rl.gae(*leaves, terminated=ro.flag("terminated"), mask=ro.flag("mask"), backend=backend)
        loss = sum((o * w).sum() for o, u in zip(outs, used) if u)
        grads[backend] = torch.autograd.grad(loss, leaves)
    for gk, gt in zip(grads["triton"], grads["torch"]):
        torch.testing.assert_close(gk, gt, rtol=1e-10, atol=1e-10)
        assert gk.abs().sum() > 0


@pytest.mark.parametrize("name", ESTIMATORS)
def test_gradcheck(name, backend):
    """Finite differences in float64, on both backends (the kernel under the interpreter)."""
    rng = np.random.default_rng(37)
    B, T = 2, 9
    term = torch.as_tensor(rng.random((B, T)) < 0.2, device=DEVICE)
    trunc = torch.as_tensor(rng.random((B, T)) < 0.2, device=DEVICE) & ~term
    mask = torch.as_tensor(rng.random((B, T)) < 0.8, device=DEVICE)
    gamma = torch.as_tensor(rng.uniform(0.5, 1, (B, T)), device=DEVICE)
    mk = lambda *s: torch.as_tensor(rng.standard_normal(s), device=DEVICE).requires_grad_()  # noqa: E731
    r, v, nv, boot = mk(B, T), mk(B, T), mk(B, T), mk(B)
    kw = dict(gamma=gamma, terminated=term, mask=mask, backend=backend)
    if name == "discounted_return":
        fns = [(lambda r, nv: rl.discounted_returns(r, truncated=trunc, next_values=nv, **kw), (r, nv)),
               (lambda r, b: rl.discounted_returns(r, bootstrap_value=b, **kw), (r, boot))]
    elif name == "gae":
        fns = [(lambda r, v, nv: rl.gae(r, v, lambda_=0.8, truncated=trunc, next_values=nv, **kw), (r, v, nv)),
               (lambda r, v, b: rl.gae(r, v, lambda_=0.8, bootstrap_value=b, **kw), (r, v, boot))]
    else:
        fns = [(lambda r, nv: rl.td_lambda(r, nv, lambda_=0.7, truncated=trunc, **kw), (r, nv))]
    for fn, args in fns:
        assert torch.autograd.gradcheck(fn, args, eps=1e-6, atol=1e-8, fast_mode=backend == "triton")


def test_no_grad_needed_no_graph(backend):
    r = torch.randn(2, 20, device=DEVICE)
    out = rl.discounted_returns(r, backend=backend)
    assert out.grad_fn is None and not out.requires_grad
    with torch.no_grad():
        out = rl.gae(r.requires_grad_(), r.detach(), backend=backend).advantages
    assert out.grad_fn is None
