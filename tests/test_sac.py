"""sac_targets, sac_actor_loss and sac_temperature_loss against the float64 reference, on every
backend, length, layout and dtype; gradients; determinism; NaN containment; bad input."""
from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch

from rltriton_lite import reference as ref
from rltriton_lite.config import using
from rltriton_lite.sac import MAX_CRITICS, sac_actor_loss, sac_targets, sac_temperature_loss

from cases import LAYOUTS, Rollout, assert_nan_contained
from conftest import DEVICE, DTYPES, SPLIT, TOLERANCES, assert_close

# option sets for the targets
OPTIONS = {
    "one_step": dict(critics=1, terminated=True, truncated=True),
    "one_step_twin": dict(critics=2, terminated=True, truncated=True, mask=True, gamma="step"),
    "lambda": dict(critics=2, lambda_=0.8, terminated=True, truncated=True),
    "lambda_padded_per_step": dict(critics=2, lambda_="step", gamma="step", terminated=True,
                                   truncated=True, mask=True),
    "lambda_window": dict(critics=1, lambda_=0.9),
}
LOSS_TOL = {torch.float64: 1e-12, torch.float32: 1e-6, torch.bfloat16: 1e-2, torch.float16: 1e-2}


def targets(ro, opts, backend, alpha=0.2):
    """sac_targets and the reference on the same rollout: (output, expected)."""
    kw, ref_kw = dict(time_dim=ro.time_dim, backend=backend, alpha=alpha), dict(alpha=alpha)
    for flag in ("terminated", "truncated", "mask"):
        if opts.get(flag):
            kw[flag], ref_kw[flag] = ro.flag(flag), getattr(ro, "np_" + flag)
    for name, value in (("gamma", 0.97), ("lambda_", opts.get("lambda_", 0.0))):
        if opts.get(name) == "step":
            kw[name], ref_kw[name] = ro.floats(name, low=0.5)
        else:
            kw[name] = ref_kw[name] = opts.get(name, value)
    if opts.get("lambda_") or opts.get("log_probs"):
        kw["log_probs"], ref_kw["log_probs"] = ro.floats("log_probs")
    qs = [ro.floats(f"q{k}") for k in range(opts["critics"])]
    q = [x[0] for x in qs] if opts["critics"] > 1 else qs[0][0]
    np_q = [x[1] for x in qs] if opts["critics"] > 1 else qs[0][1]
    (r, np_r), (nlp, np_nlp) = ro.floats("rewards"), ro.floats("next_log_probs")
    return sac_targets(r, q, nlp, **kw), ref.sac_targets(np_r, np_q, np_nlp, **ref_kw)


def check(ro, opts, backend):
    out, expected = targets(ro, opts, backend)
    assert out.shape == ro.floats("rewards")[0].shape and out.dtype == ro.dtype and out.device.type == DEVICE
    assert_close(ro.to_numpy(out), expected, ro.dtype, str(opts))


# ---- targets: values ------------------------------------------------------------------------
LENGTH_OPTIONS = ["one_step", "one_step_twin", "lambda", "lambda_padded_per_step"]


@pytest.mark.parametrize("opts", LENGTH_OPTIONS)
@pytest.mark.parametrize("T", ["1", "2", "63", "100", "block+1", "3block+5"])
def test_lengths(opts, T, impl):
    backend, block = impl
    T = {"block+1": block + 1, "3block+5": 3 * block + 5}.get(T) or int(T)
    rng = np.random.default_rng(zlib.crc32(f"sac{opts}{T}{block}".encode()))
    check(Rollout(rng, (3,), T, device=DEVICE), OPTIONS[opts], backend)


@pytest.mark.parametrize("layout", list(LAYOUTS) + ["strided"])
def test_layouts(layout, backend, small_blocks):
    batch, time_dim = LAYOUTS.get(layout, ((3,), -1))
    rng = np.random.default_rng(7)
    ro = Rollout(rng, batch, 3 * small_blocks + 5, time_dim=time_dim, device=DEVICE, strided=layout == "strided")
    check(ro, OPTIONS["lambda_padded_per_step"], backend)
    check(ro, OPTIONS["one_step_twin"], backend)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_dtypes(dtype, backend):
    ro = Rollout(np.random.default_rng(11), (4,), 100, dtype=dtype, device=DEVICE)
    check(ro, OPTIONS["lambda_padded_per_step"], backend)
    check(ro, OPTIONS["one_step"], backend)


def test_critics_of_mixed_dtypes_promote(backend):
    rng = np.random.default_rng(12)
    ro = Rollout(rng, (2,), 40, device=DEVICE)
    (r, np_r), (nlp, np_nlp), (q0, np_q0) = ro.floats("rewards"), ro.floats("next_log_probs"), ro.floats("q0")
    q1 = torch.as_tensor(rng.standard_normal((2, 40)), device=DEVICE)
    out = sac_targets(r, [q0, q1], nlp, gamma=0.9, backend=backend)
    assert out.dtype == torch.float64
    assert_close(out, ref.sac_targets(np_r, [np_q0, q1.cpu().numpy()], np_nlp, gamma=0.9), torch.float32)


@pytest.mark.parametrize("critics", [1, 2, 5])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_lambda_zero_is_sac_one_step_target(critics, dtype, backend):
    """λ = 0 is r + γ(1-term)(min_k Q_k - α log π') computed in torch, bitwise (the compiled
    kernel fuses multiply-adds on a GPU: there, to a few ulps of the inputs)."""
    rng = np.random.default_rng(29 + critics)
    mk = lambda: torch.as_tensor(rng.standard_normal((3, 33)), dtype=dtype, device=DEVICE)  # noqa: E731
    r, nlp, lp = mk(), mk(), mk()
    qs = [mk() for _ in range(critics)]
    term = torch.as_tensor(rng.random((3, 33)) < 0.2, device=DEVICE)
    trunc = torch.as_tensor(rng.random((3, 33)) < 0.2, device=DEVICE)
    gamma = torch.as_tensor(rng.uniform(0.5, 1.0, (3, 33)), dtype=dtype, device=DEVICE)
    q_min = qs[0]
    for q in qs[1:]:
        q_min = torch.minimum(q_min, q)
    for g in (0.99, gamma):
        expected = r + g * (1 - term.to(dtype)) * (q_min - 0.2 * nlp)
        for extra in (dict(), dict(log_probs=lp), dict(truncated=trunc)):
            out = sac_targets(r, qs if critics > 1 else qs[0], nlp, gamma=g, alpha=0.2, lambda_=0.0,
                              terminated=term, backend=backend, **extra)
            if DEVICE == "cpu":
                assert torch.equal(out, expected)
            else:
                eps = torch.finfo(dtype).eps
                torch.testing.assert_close(out, expected, rtol=8 * eps, atol=64 * eps)


def test_lambda_one_without_entropy_is_discounted_return(backend):
    """α = 0, λ = 1: the soft λ-return is the discounted return bootstrapped from min Q."""
    rng = np.random.default_rng(23)
    ro = Rollout(rng, (3,), 50, dtype=torch.float64, device=DEVICE, p_pad=0.0)
    (r, np_r), (q, np_q), (nlp, _), (lp, _) = (ro.floats(k) for k in ("rewards", "q0", "next_log_probs", "log_probs"))
    kw = dict(terminated=ro.flag("terminated"), truncated=ro.flag("truncated"))
    out = sac_targets(r, q, nlp, gamma=0.9, alpha=0.0, lambda_=1.0, log_probs=lp, backend=backend, **kw)
    expected = ref.discounted_returns(np_r, gamma=0.9, next_values=np_q, terminated=ro.np_terminated,
                                      truncated=ro.np_truncated)
    assert_close(out, expected, torch.float64)


def test_padding_is_skipped(backend):
    """With padding, the step after t is the next unpadded one: the same targets as the
    rollout with the padded steps removed."""
    rng = np.random.default_rng(41)
    T = 40
    ro = Rollout(rng, (1,), T, dtype=torch.float64, device=DEVICE, p_pad=0.3)
    ro.np_mask[0, -1] = True  # the window's last step stays (it ends the window either way)
    names = ("rewards", "q0", "q1", "next_log_probs", "log_probs")
    t = {k: ro.floats(k)[0] for k in names}
    keep = torch.as_tensor(ro.np_mask[0], device=DEVICE)
    kw = dict(gamma=0.9, alpha=0.3, lambda_=0.7)
    full = sac_targets(t["rewards"], [t["q0"], t["q1"]], t["next_log_probs"], log_probs=t["log_probs"],
                       terminated=ro.flag("terminated"), mask=ro.flag("mask"), backend=backend, **kw)
    c = {k: v[:, keep] for k, v in t.items()}
    compact = sac_targets(c["rewards"], [c["q0"], c["q1"]], c["next_log_probs"], log_probs=c["log_probs"],
                          terminated=ro.flag("terminated")[:, keep], backend=backend, **kw)
    torch.testing.assert_close(full[:, keep], compact, rtol=1e-12, atol=1e-12)
    assert (full[:, ~keep] == 0).all()


# ---- targets: special values ----------------------------------------------------------------
def test_empty_and_single_step(backend):
    for shape, td in [((0, 5), -1), ((3, 0), -1), ((0,), 0), ((4, 0, 2), 1)]:
        z = torch.zeros(shape, device=DEVICE)
        assert sac_targets(z, [z, z], z, lambda_=0.5, log_probs=z, time_dim=td, backend=backend).shape == shape
    r = torch.tensor([[1.5], [-2.0]], device=DEVICE)
    q = [torch.tensor([[10.0], [4.0]], device=DEVICE), torch.tensor([[12.0], [3.0]], device=DEVICE)]
    nlp = torch.tensor([[-5.0], [10.0]], device=DEVICE)
    out = sac_targets(r, q, nlp, gamma=0.5, alpha=0.2, lambda_=0.9, log_probs=nlp, backend=backend)
    torch.testing.assert_close(out, torch.tensor([[1.5 + 0.5 * 11.0], [-2.0 + 0.5 * 1.0]], device=DEVICE))


def test_alpha_tensor_is_a_constant(backend):
    r = torch.randn(2, 9, device=DEVICE)
    a = sac_targets(r, r, r, alpha=torch.tensor(0.5, requires_grad=True), backend=backend)
    torch.testing.assert_close(a, sac_targets(r, r, r, alpha=0.5, backend=backend))
    assert a.grad_fn is None


def test_nan_stays_in_its_episode(impl):
    """A NaN reward poisons only the earlier steps of its own episode (and row), with λ > 0."""
    backend, block = impl
    rng = np.random.default_rng(13)
    B, T = 3, 3 * block + 5
    ro = Rollout(rng, (B,), T, device=DEVICE, p_trunc=0.0, p_pad=0.0, p_term=0.08)
    ro.np_terminated[:, T // 2] = True
    r, np_r = ro.floats("rewards")
    row, j = 1, T // 2 + 3
    r = r.clone()
    r[row, j] = float("nan")
    opts = dict(critics=2, lambda_=0.9, terminated=True)
    ro._floats["rewards"] = (r, np_r)
    out, _ = targets(ro, opts, backend)
    np_clean = np_r.copy()
    np_clean[row, j] = 0.0
    ro._floats["rewards"] = (r, np_clean)
    _, expected = targets(ro, opts, "torch")
    assert_nan_contained([out], [expected], ro.np_terminated, row, j)


def test_nan_behind_terminal_or_padding_is_never_read(backend):
    """Q and log π' after a terminal step, and log π of padded steps, are selected away."""
    nan = float("nan")
    r = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]], device=DEVICE)
    q = torch.tensor([[0.5, nan, 0.5, 0.5, 0.5]], device=DEVICE)
    nlp = torch.tensor([[0.1, float("inf"), 0.1, 0.1, 0.1]], device=DEVICE)
    lp = torch.tensor([[0.1, 0.1, 0.1, nan, 0.1]], device=DEVICE)
    term = torch.tensor([[False, True, False, False, False]], device=DEVICE)
    mask = torch.tensor([[True, True, True, False, True]], device=DEVICE)
    for leaves in ((r, q, nlp, lp), tuple(x.clone().requires_grad_() for x in (r, q, nlp, lp))):
        out = sac_targets(leaves[0], [leaves[1], torch.ones_like(q)], leaves[2], lambda_=0.9, log_probs=leaves[3],
                          terminated=term, mask=mask, backend=backend)
        assert torch.isfinite(out).all()
    out.sum().backward()
    for x in leaves:
        assert torch.isfinite(x.grad).all()


def test_inputs_are_not_modified(backend):
    ro = Rollout(np.random.default_rng(17), (3,), 50, device=DEVICE)
    opts = OPTIONS["lambda_padded_per_step"]
    targets(ro, opts, backend)
    before = {k: v[0].clone() for k, v in ro._floats.items()}
    flags = {k: ro.flag(k) for k in ("terminated", "truncated", "mask")}
    targets(ro, opts, backend)
    lp, q0, q1 = (ro.floats(k)[0] for k in ("log_probs", "q0", "q1"))
    sac_actor_loss(lp, [q0, q1], mask=ro.flag("mask"), backend=backend)
    sac_temperature_loss(torch.zeros((), device=DEVICE), lp, -1.0, mask=ro.flag("mask"), backend=backend)
    for k, v in ro._floats.items():
        assert torch.equal(v[0], before[k]), k
    for k, f in flags.items():
        assert torch.equal(ro.flag(k), f)


# ---- losses: values -------------------------------------------------------------------------
def _loss_inputs(rng, shape, critics, dtype, layout="contiguous"):
    """log_probs, critics and a mask of ``shape`` in a layout, with their NumPy twins."""
    def make(x):
        t = torch.as_tensor(x).to(dtype=dtype, device=DEVICE)
        if layout == "transposed":  # a (..., b, a) buffer seen as (..., a, b)
            t = t.transpose(-1, -2).contiguous().transpose(-1, -2)
        elif layout == "strided":
            big = torch.zeros(t.shape[:-1] + (2 * t.shape[-1],), dtype=dtype, device=DEVICE)
            big[..., ::2] = t
            t = big[..., ::2]
        return t, t.double().cpu().numpy()
    lp = make(rng.standard_normal(shape))
    qs = [make(rng.standard_normal(shape) * 3) for _ in range(critics)]
    mask = (rng.random(shape) > 0.3) | (len(shape) == 0)  # a 0-d mask is all or nothing: keep it
    return lp, qs, (torch.as_tensor(mask, device=DEVICE), mask)


LOSS_SHAPES = {"scalar": ((), "contiguous"), "vector": ((300,), "contiguous"), "column": ((77, 1), "contiguous"),
               "batch3d": ((3, 4, 50), "contiguous"), "transposed": ((20, 33), "transposed"),
               "strided": ((5, 70), "strided"), "large": ((9, 700), "contiguous")}  # large: several tiles


@pytest.mark.parametrize("shape", list(LOSS_SHAPES))
@pytest.mark.parametrize("critics", [1, 2, 3])
@pytest.mark.parametrize("masked", [False, True], ids=["all", "masked"])
def test_actor_loss(shape, critics, masked, loss_backend):
    shape, layout = LOSS_SHAPES[shape]
    rng = np.random.default_rng(zlib.crc32(f"actor{shape}{critics}{masked}".encode()))
    (lp, np_lp), qs, (mask, np_mask) = _loss_inputs(rng, shape, critics, torch.float32, layout)
    q, np_q = ([x[0] for x in qs], [x[1] for x in qs]) if critics > 1 else qs[0]
    kw = dict(mask=mask) if masked else {}
    loss = sac_actor_loss(lp, q, alpha=0.3, backend=loss_backend, **kw)
    expected = ref.sac_actor_loss(np_lp, np_q, alpha=0.3, mask=np_mask if masked else None)
    assert loss.shape == () and loss.dtype == torch.float32
    assert abs(loss.item() - expected) <= LOSS_TOL[torch.float32]


@pytest.mark.parametrize("shape", ["scalar", "column", "batch3d", "strided", "large"])
@pytest.mark.parametrize("masked", [False, True], ids=["all", "masked"])
def test_temperature_loss(shape, masked, loss_backend):
    shape, layout = LOSS_SHAPES[shape]
    rng = np.random.default_rng(zlib.crc32(f"temp{shape}{masked}".encode()))
    (lp, np_lp), _, (mask, np_mask) = _loss_inputs(rng, shape, 0, torch.float32, layout)
    log_alpha = torch.tensor([-1.3], device=DEVICE)
    kw = dict(mask=mask) if masked else {}
    loss = sac_temperature_loss(log_alpha, lp, -6.0, backend=loss_backend, **kw)
    expected = ref.sac_temperature_loss(-1.3, np_lp, -6.0, mask=np_mask if masked else None)
    assert loss.shape == () and loss.dtype == torch.float32
    assert abs(loss.item() - expected) <= LOSS_TOL[torch.float32] * max(1.0, abs(expected))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_loss_dtypes(dtype, backend):
    rng = np.random.default_rng(43)
    (lp, np_lp), qs, (mask, np_mask) = _loss_inputs(rng, (6, 130), 2, dtype)
    loss = sac_actor_loss(lp, [x[0] for x in qs], alpha=0.1, mask=mask, backend=backend)
    assert loss.dtype == dtype
    expected = ref.sac_actor_loss(np_lp, [x[1] for x in qs], alpha=0.1, mask=np_mask)
    assert abs(loss.item() - expected) <= LOSS_TOL[dtype] * max(1.0, abs(expected))
    log_alpha = torch.tensor(0.7, dtype=dtype, device=DEVICE)
    loss = sac_temperature_loss(log_alpha, lp, -3.0, mask=mask, backend=backend)
    expected = ref.sac_temperature_loss(log_alpha.double().item(), np_lp, -3.0, mask=np_mask)
    assert loss.dtype == dtype and abs(loss.item() - expected) <= LOSS_TOL[dtype] * max(1.0, abs(expected))


def test_no_unmasked_element_gives_zero_loss_and_gradients(backend):
    """All masked, or empty: the losses are 0 with zero gradients (not NaN), as ppo_clip_loss
    and crr_loss; what the masked elements hold (NaN here) is never read."""
    x = torch.randn(4, 5, device=DEVICE)
    x[0, 0] = float("nan")
    mask = torch.zeros(4, 5, dtype=torch.bool, device=DEVICE)
    for lp_, mask_ in ((x, mask), (x[:, :0], None), (x[:, :0], mask[:, :0])):
        lp, q0, q1 = (t.clone().requires_grad_() for t in (lp_, lp_ + 1, lp_ - 1))
        loss = sac_actor_loss(lp, [q0, q1], alpha=0.3, mask=mask_, backend=backend)
        assert loss.shape == () and loss.item() == 0.0
        loss.backward()
        for leaf in (lp, q0, q1):
            assert leaf.grad.shape == leaf.shape and (leaf.grad == 0).all()
        assert ref.sac_actor_loss(lp_.cpu().numpy(), [q0.detach().cpu().numpy()], alpha=0.3,
                                  mask=None if mask_ is None else mask_.cpu().numpy()) == 0.0
        log_alpha = torch.tensor([0.4], device=DEVICE, requires_grad=True)
        loss = sac_temperature_loss(log_alpha, lp_, -1.0, mask=mask_, backend=backend)
        assert loss.shape == () and loss.item() == 0.0
        loss.backward()
        assert (log_alpha.grad == 0).all()
        assert ref.sac_temperature_loss(0.4, lp_.cpu().numpy(), -1.0,
                                        mask=None if mask_ is None else mask_.cpu().numpy()) == 0.0


# ---- gradients ------------------------------------------------------------------------------
def _check_target_gradients(ro, opts, rng, tol):
    """Gradients of every input (log_probs given, at λ = 0 too: their gradient is then 0) on
    the kernel against the torch path, through a random weighting of the targets."""
    opts = dict(opts, log_probs=True)
    names = ("rewards", "next_log_probs", "log_probs") + tuple(f"q{k}" for k in range(opts["critics"]))
    leaves = [ro.floats(k)[0].requires_grad_() for k in names]
    w = torch.as_tensor(rng.standard_normal(leaves[0].shape), device=DEVICE)
    grads = {}
    for backend in ("triton", "torch"):
        out, _ = targets(ro, opts, backend)
        grads[backend] = torch.autograd.grad((out * w).sum(), leaves)
    for name, gk, gt in zip(names, grads["triton"], grads["torch"]):
        torch.testing.assert_close(gk, gt, rtol=tol, atol=tol, msg=name)
        assert gk.abs().sum() > 0 or (name == "log_probs" and not opts.get("lambda_")), name


@pytest.mark.parametrize("opts", ["one_step_twin", "lambda", "lambda_padded_per_step", "lambda_window"])
def test_target_gradients_match_torch_path(opts, small_blocks):
    rng = np.random.default_rng(31)
    ro = Rollout(rng, (3,), 3 * small_blocks + 5, dtype=torch.float64, device=DEVICE)
    _check_target_gradients(ro, OPTIONS[opts], rng, 1e-10)


@pytest.mark.parametrize("layout", list(LAYOUTS) + ["strided"])
def test_one_step_gradients_match_torch_path(layout):
    """λ = 0 runs elementwise (no scan), forwards and backwards: gradients in every layout,
    padding and per-step γ included."""
    batch, time_dim = LAYOUTS.get(layout, ((3,), -1))
    rng = np.random.default_rng(41)
    ro = Rollout(rng, batch, 37, time_dim=time_dim, dtype=torch.float64, device=DEVICE, strided=layout == "strided")
    _check_target_gradients(ro, OPTIONS["one_step_twin"], rng, 1e-12)


def test_one_step_target_takes_no_scan(monkeypatch):
    """λ = 0 (a number) is one elementwise launch forwards and one backwards, whatever the
    length (no time split); λ > 0 or a λ tensor runs the scan."""
    from rltriton_lite import _triton

    launches = []
    real = _triton.Launch.__call__
    monkeypatch.setattr(_triton.Launch, "__call__", lambda self, *a: (launches.append(self.kernel.fn.__name__),
                                                                      real(self, *a))[1])
    with using(SPLIT):  # the scan would split time
        _check_one_step_launches(launches)


def _check_one_step_launches(launches):
    rng = np.random.default_rng(43)
    ro = Rollout(rng, (2,), 70, device=DEVICE)
    (r, _), (nlp, _), (q, _), (lp, _) = (ro.floats(k) for k in ("rewards", "next_log_probs", "q0", "log_probs"))
    r.requires_grad_()
    out = sac_targets(r, q, nlp, terminated=ro.flag("terminated"), backend="triton")
    assert launches == ["_map_kernel"]
    out.sum().backward()
    assert launches == ["_map_kernel"] * 2
    launches.clear()
    sac_targets(r.detach(), q, nlp, lambda_=0.5, log_probs=lp, backend="triton")
    assert launches == ["_scan_kernel"] * 2  # the time split: segment maps, the segments from composed carries
    launches.clear()
    sac_targets(r.detach(), q, nlp, lambda_=torch.zeros_like(r), log_probs=lp, backend="triton")
    assert launches == ["_scan_kernel"] * 2


def test_target_gradcheck(backend):
    """Finite differences in float64 on both backends (the kernel under the interpreter)."""
    rng = np.random.default_rng(37)
    B, T = 2, 9
    flags = lambda p: torch.as_tensor(rng.random((B, T)) < p, device=DEVICE)  # noqa: E731
    term, trunc, mask = flags(0.2), flags(0.2), ~flags(0.2)
    gamma = torch.as_tensor(rng.uniform(0.5, 1, (B, T)), device=DEVICE)
    mk = lambda: torch.as_tensor(rng.standard_normal((B, T)), device=DEVICE).requires_grad_()  # noqa: E731
    args = (mk(), mk(), mk() + 0.5, mk(), mk())

    def fn(r, q0, q1, nlp, lp):
        return sac_targets(r, [q0, q1], nlp, gamma=gamma, alpha=0.3, lambda_=0.7, log_probs=lp, terminated=term,
                           truncated=trunc, mask=mask, backend=backend)

    fast = backend == "triton"  # every column is a kernel call under the interpreter
    assert torch.autograd.gradcheck(fn, args, eps=1e-6, atol=1e-8, fast_mode=fast)
    assert torch.autograd.gradcheck(lambda r, q, nlp: sac_targets(r, q, nlp, terminated=term, backend=backend),
                                    args[:2] + args[3:4], eps=1e-6, atol=1e-8, fast_mode=fast)


@pytest.mark.parametrize("critics", [1, 2, 3])
@pytest.mark.parametrize("shape", ["column", "batch3d", "strided"])
def test_actor_loss_gradients_match_torch_path(critics, shape):
    shape, layout = LOSS_SHAPES[shape]
    rng = np.random.default_rng(53)
    (lp, _), qs, (mask, _) = _loss_inputs(rng, shape, critics, torch.float64, layout)
    leaves = [lp.requires_grad_()] + [x[0].requires_grad_() for x in qs]
    grads = {}
    for backend in ("triton", "torch"):
        loss = sac_actor_loss(leaves[0], leaves[1:], alpha=0.4, mask=mask, backend=backend)
        grads[backend] = torch.autograd.grad(2.5 * loss, leaves)
    for gk, gt in zip(grads["triton"], grads["torch"]):
        assert gk.shape == gt.shape
        torch.testing.assert_close(gk, gt, rtol=1e-12, atol=1e-14)
    n = mask.sum().item()
    torch.testing.assert_close(grads["triton"][0], torch.where(mask, 2.5 * 0.4 / n, 0.0).double())
    total = sum(grads["triton"][1:])
    torch.testing.assert_close(total, torch.where(mask, -2.5 / n, 0.0).double())


def test_actor_loss_tie_goes_to_the_first_critic(backend):
    q = torch.randn(3, 8, dtype=torch.float64, device=DEVICE)
    q0, q1, q2 = (x.clone().requires_grad_() for x in (q + 1, q, q))
    sac_actor_loss(torch.zeros_like(q), [q0, q1, q2], backend=backend).backward()
    assert (q0.grad == 0).all() and (q2.grad == 0).all()
    torch.testing.assert_close(q1.grad, torch.full_like(q, -1 / 24))


def test_loss_gradcheck(backend):
    rng = np.random.default_rng(59)
    mk = lambda *s: torch.as_tensor(rng.standard_normal(s), device=DEVICE).requires_grad_()  # noqa: E731
    mask = torch.as_tensor(rng.random((3, 5)) > 0.3, device=DEVICE)
    lp, q0, q1 = mk(3, 5), mk(3, 5), mk(3, 5)
    assert torch.autograd.gradcheck(
        lambda lp, q0, q1: sac_actor_loss(lp, [q0, q1], alpha=0.3, mask=mask, backend=backend), (lp, q0, q1))
    log_alpha = mk(1)
    assert torch.autograd.gradcheck(
        lambda la: sac_temperature_loss(la, lp, -2.0, mask=mask, backend=backend), (log_alpha,))


def test_temperature_gradient_ignores_log_probs(backend):
    lp = torch.randn(4, 30, dtype=torch.float64, device=DEVICE, requires_grad=True)
    log_alpha = torch.tensor([0.2], dtype=torch.float64, device=DEVICE, requires_grad=True)
    loss = sac_temperature_loss(log_alpha, lp, -2.0, backend=backend)
    loss.backward()
    assert lp.grad is None
    torch.testing.assert_close(log_alpha.grad, -(lp.detach() - 2.0).mean().reshape(1))
    # SB3's formula
    torch.testing.assert_close(loss, -(log_alpha * (lp + -2.0).detach()).mean())


# ---- determinism ----------------------------------------------------------------------------
def test_same_call_is_bitwise_reproducible(backend):
    rng = np.random.default_rng(61)
    (lp, _), qs, (mask, _) = _loss_inputs(rng, (16, 700), 2, torch.float32)
    ro = Rollout(rng, (4,), 300, device=DEVICE)
    leaves = [lp.requires_grad_(), *(x[0].requires_grad_() for x in qs)]
    r_leaves = [ro.floats(k)[0].requires_grad_() for k in ("rewards", "q0", "q1", "next_log_probs", "log_probs")]
    log_alpha = torch.tensor(0.1, device=DEVICE, requires_grad=True)

    def call():
        loss = sac_actor_loss(leaves[0], leaves[1:], mask=mask, backend=backend)
        t_loss = sac_temperature_loss(log_alpha, lp, -2.0, mask=mask, backend=backend)
        out, _ = targets(ro, OPTIONS["lambda_padded_per_step"], backend)
        return (loss, t_loss, out, *torch.autograd.grad(loss + t_loss + out.square().mean(),
                                                           [*leaves, log_alpha, *r_leaves]))

    for a, b in zip(call(), call()):
        assert torch.equal(a, b)


# ---- bad input ------------------------------------------------------------------------------
B, T = 3, 8


def _data():
    g = torch.Generator().manual_seed(0)
    return torch.randn(B, T, generator=g).to(DEVICE), torch.randn(B, T, generator=g).to(DEVICE)


BAD_CALLS = [
    ("alpha_negative", lambda r, q: sac_targets(r, q, q, alpha=-0.1), ValueError, "alpha"),
    ("alpha_nan", lambda r, q: sac_targets(r, q, q, alpha=float("nan")), ValueError, "alpha"),
    ("alpha_inf", lambda r, q: sac_actor_loss(r, q, alpha=float("inf")), ValueError, "alpha"),
    ("alpha_str", lambda r, q: sac_targets(r, q, q, alpha="0.2"), TypeError, "alpha"),
    ("alpha_tensor_shape", lambda r, q: sac_targets(r, q, q, alpha=torch.ones(2)), TypeError, "alpha"),
    ("actor_alpha_negative", lambda r, q: sac_actor_loss(r, q, alpha=-1.0), ValueError, "alpha"),
    ("lambda_without_log_probs", lambda r, q: sac_targets(r, q, q, lambda_=0.5), ValueError, "log_probs"),
    ("lambda_tensor_without_log_probs", lambda r, q: sac_targets(r, q, q, lambda_=torch.full((B, T), 0.5, device=DEVICE)),
     ValueError, "log_probs"),
    ("lambda_high", lambda r, q: sac_targets(r, q, q, lambda_=1.5, log_probs=q), ValueError, "lambda_"),
    ("gamma_high", lambda r, q: sac_targets(r, q, q, gamma=1.5), ValueError, "gamma"),
    ("critics_shapes", lambda r, q: sac_targets(r, [q, q[:, :-1]], q), ValueError, "next_q"),
    ("critic_shape", lambda r, q: sac_targets(r, q.t(), q), ValueError, "next_q"),
    ("critics_none", lambda r, q: sac_targets(r, None, q), TypeError, "next_q"),
    ("critics_empty", lambda r, q: sac_targets(r, [], q), ValueError, "next_q"),
    ("critics_too_many", lambda r, q: sac_targets(r, [q] * (MAX_CRITICS + 1), q), ValueError, "next_q"),
    ("critic_int", lambda r, q: sac_targets(r, [q, q.long()], q), TypeError, "next_q"),
    ("critic_device", lambda r, q: sac_targets(r, [q, q.to("meta")], q), ValueError, "next_q"),
    ("next_log_probs_shape", lambda r, q: sac_targets(r, q, q[:, :3]), ValueError, "next_log_probs"),
    ("next_log_probs_missing", lambda r, q: sac_targets(r, q, None), TypeError, "next_log_probs"),
    ("log_probs_shape", lambda r, q: sac_targets(r, q, q, lambda_=0.5, log_probs=q[:1]), ValueError, "log_probs"),
    ("log_probs_dtype", lambda r, q: sac_targets(r, q, q, lambda_=0.5, log_probs=q.int()), TypeError, "log_probs"),
    ("rewards_int", lambda r, q: sac_targets(r.long(), q, q), TypeError, "rewards"),
    ("terminated_shape", lambda r, q: sac_targets(r, q, q, terminated=torch.zeros(B, T + 1, dtype=torch.bool, device=DEVICE)),
     ValueError, "terminated"),
    ("mask_dtype", lambda r, q: sac_targets(r, q, q, mask=torch.zeros(B, T, dtype=torch.complex64, device=DEVICE)),
     TypeError, "mask"),
    ("time_dim_range", lambda r, q: sac_targets(r, q, q, time_dim=2), ValueError, "time_dim"),
    ("time_dim_float", lambda r, q: sac_targets(r, q, q, time_dim=1.0), TypeError, "time_dim"),
    ("backend_name", lambda r, q: sac_targets(r, q, q, backend="cuda"), ValueError, "backend"),
    ("actor_q_shape", lambda r, q: sac_actor_loss(r, [q, q[0]]), ValueError, "q"),
    ("actor_log_probs_list", lambda r, q: sac_actor_loss([0.0], q), TypeError, "log_probs"),
    ("actor_mask_shape", lambda r, q: sac_actor_loss(r, q, mask=torch.ones(T + 1, device=DEVICE)), ValueError, "mask"),
    ("actor_q_device", lambda r, q: sac_actor_loss(r, q.to("meta")), ValueError, "q"),
    ("temperature_log_alpha_shape", lambda r, q: sac_temperature_loss(torch.zeros(2, device=DEVICE), r, -1.0),
     ValueError, "log_alpha"),
    ("temperature_log_alpha_float", lambda r, q: sac_temperature_loss(0.5, r, -1.0), TypeError, "log_alpha"),
    ("temperature_target_str", lambda r, q: sac_temperature_loss(torch.zeros(1, device=DEVICE), r, "-1"),
     TypeError, "target_entropy"),
    ("temperature_target_nan", lambda r, q: sac_temperature_loss(torch.zeros(1, device=DEVICE), r, float("nan")),
     ValueError, "target_entropy"),
    ("temperature_mask_shape", lambda r, q: sac_temperature_loss(torch.zeros(1, device=DEVICE), r, -1.0, mask=q[0]),
     ValueError, "mask"),
]


@pytest.mark.parametrize("call,exc,words", [c[1:] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS])
def test_bad_input_is_refused(call, exc, words):
    r, q = _data()
    with pytest.raises(exc, match=words):
        call(r, q)


# ---- GPU sizes ------------------------------------------------------------------------------
@pytest.mark.gpu
def test_gpu_long_sequences_and_gradients():
    g = torch.Generator(device="cuda").manual_seed(0)
    B, T = 4, 100_000
    mk = lambda: torch.randn(B, T, device="cuda", generator=g, dtype=torch.float64)  # noqa: E731
    r, q0, q1, nlp, lp = (mk() for _ in range(5))
    term = torch.rand(B, T, device="cuda", generator=g) < 1e-3
    trunc = (torch.rand(B, T, device="cuda", generator=g) < 1e-3) & ~term
    mask = torch.rand(B, T, device="cuda", generator=g) > 0.05
    kw = dict(gamma=0.999, alpha=0.1, lambda_=0.95, terminated=term, truncated=trunc, mask=mask)
    n = lambda x: x.double().cpu().numpy()  # noqa: E731
    expected = ref.sac_targets(n(r), [n(q0), n(q1)], n(nlp), log_probs=n(lp), **{k: n(v) if torch.is_tensor(v) else v
                                                                                   for k, v in kw.items()})
    out32 = sac_targets(r.float(), [q0.float(), q1.float()], nlp.float(), log_probs=lp.float(), **kw)
    assert_close(out32, expected, torch.float32)
    leaves = [x.clone().requires_grad_() for x in (r, q0, q1, nlp, lp)]
    w = torch.randn_like(r)

    def grads(backend):
        out = sac_targets(leaves[0], leaves[1:3], leaves[3], log_probs=leaves[4], backend=backend, **kw)
        return torch.autograd.grad((out * w).sum(), leaves)

    for gk, gt in zip(grads("triton"), grads("torch")):
        torch.testing.assert_close(gk, gt, rtol=1e-9, atol=1e-9)


@pytest.mark.gpu
def test_gpu_bf16_large_batch():
    g = torch.Generator(device="cuda").manual_seed(1)
    B, T = 16384, 1024
    mk = lambda: torch.randn(B, T, device="cuda", generator=g).to(torch.bfloat16)  # noqa: E731
    r, q0, q1, nlp, lp = (mk() for _ in range(5))
    term = torch.rand(B, T, device="cuda", generator=g) < 1e-3
    mask = torch.rand(B, T, device="cuda", generator=g) > 0.05
    out = sac_targets(r, [q0, q1], nlp, lambda_=0.9, log_probs=lp, terminated=term, mask=mask)
    assert out.dtype == torch.bfloat16
    rows = torch.tensor([0, 1, B // 2, B - 1], device="cuda")
    n = lambda x: x[rows].double().cpu().numpy()  # noqa: E731
    expected = ref.sac_targets(n(r), [n(q0), n(q1)], n(nlp), lambda_=0.9, log_probs=n(lp), terminated=n(term),
                               mask=n(mask))
    assert_close(out[rows], expected, torch.bfloat16)
    # time-major buffers of the same data
    out0 = sac_targets(r.t().contiguous(), [q0.t().contiguous(), q1.t().contiguous()], nlp.t().contiguous(),
                       lambda_=0.9, log_probs=lp.t().contiguous(), terminated=term.t().contiguous(),
                       mask=mask.t().contiguous(), time_dim=0)
    assert_close(out0.t()[rows], expected, torch.bfloat16)
    lp_leaf = lp.clone().requires_grad_()
    loss = sac_actor_loss(lp_leaf, [q0, q1], alpha=0.2, mask=mask)
    expected_loss = ref.sac_actor_loss(lp.double().cpu().numpy(), [q0.double().cpu().numpy(), q1.double().cpu().numpy()],
                                       alpha=0.2, mask=mask.cpu().numpy())
    assert abs(loss.item() - expected_loss) <= TOLERANCES[torch.bfloat16] * max(1.0, abs(expected_loss))
    loss.backward()
    n_valid = mask.sum().item()
    torch.testing.assert_close(lp_leaf.grad.float(), torch.where(mask, 0.2 / n_valid, 0.0),
                               rtol=1e-2, atol=1e-2 * 0.2 / n_valid)
