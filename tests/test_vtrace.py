"""vtrace against the float64 reference loop on every backend, length, layout and dtype;
gradients (kernel vs torch-path autograd, and finite differences); NaN containment; the
on-policy reductions to TD(λ) and GAE; bad input."""
from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch

import rltriton_lite as rl
from rltriton_lite import reference as ref
from rltriton_lite.vtrace import VTraceOutput, vtrace

from cases import LAYOUTS, Rollout, assert_nan_contained
from conftest import DEVICE, DTYPES, assert_close

# option sets; without next_values the steps bootstrap from values[t+1] (bootstrap_value at the end)
OPTIONS = {
    "episodes": dict(terminated=True, truncated=True, next_values=True),
    "implicit_next": dict(terminated=True, bootstrap=True, lambda_=0.9),
    "padded_per_step": dict(terminated=True, truncated=True, next_values=True, mask=True,
                            gamma="step", lambda_="step"),
    "per_row_gamma": dict(terminated=True, mask=True, bootstrap=True, gamma="row"),
}
# truncation levels: below and above 1, so every clip binds on some steps and not on others
CLIPS = dict(rho_bar=1.3, c_bar=0.8, pg_rho_bar=1.1)


def _coefficient(ro, kind, name, value):
    """A scalar, a per-step tensor or a per-row tensor (time dim of size 1), and its NumPy twin."""
    if kind == "scalar" or isinstance(kind, float):
        value = kind if isinstance(kind, float) else value
        return value, value
    if kind == "step":
        return ro.floats(name, low=0.5)
    key = "row-coefficient:" + name  # drawn once per rollout, so repeated runs see the same one
    if key not in ro._floats:
        x = ro.rng.uniform(0.5, 1.0, list(ro.batch) + [1])
        t = torch.as_tensor(np.moveaxis(x, -1, ro.time_dim)).to(ro.dtype).to(ro.device)
        ro._floats[key] = (t, np.moveaxis(t.double().cpu().numpy(), ro.time_dim, -1))
    return ro._floats[key]


def run(ro, opts, backend, clips=CLIPS):
    """vtrace and its reference on the same rollout: (outputs, expected)."""
    kw, ref_kw = dict(time_dim=ro.time_dim, backend=backend, **clips), dict(clips)
    for flag in ("terminated", "truncated", "mask"):
        if opts.get(flag):
            kw[flag], ref_kw[flag] = ro.flag(flag), getattr(ro, "np_" + flag)
    kw["gamma"], ref_kw["gamma"] = _coefficient(ro, opts.get("gamma", "scalar"), "gamma", 0.97)
    kw["lambda_"], ref_kw["lambda_"] = _coefficient(ro, opts.get("lambda_", "scalar"), "lambda", 1.0)
    if opts.get("next_values"):
        kw["next_values"], ref_kw["next_values"] = ro.floats("next_values")
    elif opts.get("bootstrap"):
        kw["bootstrap_value"], ref_kw["bootstrap_value"] = ro.per_row("bootstrap")
    (lr, np_lr), (r, np_r), (v, np_v) = (ro.floats(k) for k in ("log_rhos", "rewards", "values"))
    out = vtrace(lr, r, v, **kw)
    assert isinstance(out, VTraceOutput)
    return tuple(out), ref.vtrace(np_lr, np_r, np_v, **ref_kw)


def check(ro, opts, backend):
    outs, expected = run(ro, opts, backend)
    for o, e, name in zip(outs, expected, VTraceOutput._fields):
        assert o.shape == ro.floats("rewards")[0].shape and o.dtype == ro.dtype and o.device.type == DEVICE
        assert_close(ro.to_numpy(o), e, ro.dtype, f"{name} {opts}")


@pytest.mark.parametrize("opts", list(OPTIONS), ids=list(OPTIONS))
@pytest.mark.parametrize("T", ["1", "2", "63", "100", "block+1", "3block+5"])
def test_lengths(opts, T, impl):
    backend, block = impl
    T = {"block+1": block + 1, "3block+5": 3 * block + 5}.get(T) or int(T)
    rng = np.random.default_rng(zlib.crc32(f"vtrace{opts}{T}{block}".encode()))
    check(Rollout(rng, (3,), T, device=DEVICE), OPTIONS[opts], backend)


def test_clips_bind():
    """The rollouts above have ratios on both sides of every truncation level."""
    ratio = np.exp(Rollout(np.random.default_rng(0), (3,), 100).floats("log_rhos")[1])
    for bar in CLIPS.values():
        assert 0.2 < (ratio > bar).mean() < 0.8


@pytest.mark.parametrize("layout", list(LAYOUTS) + ["strided"])
def test_layouts(layout, backend, small_blocks):
    batch, time_dim = LAYOUTS.get(layout, ((3,), -1))
    ro = Rollout(np.random.default_rng(7), batch, 3 * small_blocks + 5, time_dim=time_dim, device=DEVICE,
                 strided=layout == "strided")
    check(ro, OPTIONS["padded_per_step"], backend)
    check(ro, OPTIONS["per_row_gamma"], backend)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_dtypes(dtype, backend):
    ro = Rollout(np.random.default_rng(11), (4,), 100, dtype=dtype, device=DEVICE)
    check(ro, OPTIONS["padded_per_step"], backend)
    check(ro, OPTIONS["implicit_next"], backend)


def test_defaults_on_both_backends(small_blocks):
    """Default arguments (gamma=0.99, lambda_=1, every clip at 1) on the kernel and the torch path."""
    rng = np.random.default_rng(5)
    lr, r, v = (torch.as_tensor(rng.standard_normal((2, 40)), device=DEVICE) for _ in range(3))
    outs = {be: vtrace(lr, r, v, backend=be) for be in ("triton", "torch")}
    for a, b in zip(outs["triton"], outs["torch"]):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    expected = ref.vtrace(lr.cpu().numpy(), r.cpu().numpy(), v.cpu().numpy(), gamma=0.99, lambda_=1.0)
    for o, e in zip(outs["triton"], expected):
        assert_close(o, e, torch.float64)


# ---- properties -----------------------------------------------------------------------------
def test_matches_the_impala_sum(backend):
    """The definition in the IMPALA paper (eq. 1), summed term by term, with terminations as
    zero discounts (rlax's convention), and rlax's policy-gradient advantage."""
    rng = np.random.default_rng(3)
    T, lam, clips = 30, 0.9, dict(rho_bar=1.2, c_bar=0.9, pg_rho_bar=1.1)
    lr, r, v, gamma = rng.standard_normal(T), rng.standard_normal(T), rng.standard_normal(T), rng.uniform(0.8, 1, T)
    term = rng.random(T) < 0.15
    boot = 0.7
    disc = np.where(term, 0.0, gamma)
    v_next = np.append(v[1:], boot)
    ratio = np.exp(lr)
    rho, c = np.minimum(clips["rho_bar"], ratio), lam * np.minimum(clips["c_bar"], ratio)
    delta = rho * (r + disc * v_next - v)
    vs = np.array([v[t] + sum(np.prod(disc[t:s] * c[t:s]) * delta[s] for s in range(t, T)) for t in range(T)])
    q = r + disc * np.append(lam * vs[1:] + (1 - lam) * v[1:], boot)
    pg = np.minimum(clips["pg_rho_bar"], ratio) * (q - v)
    tt = lambda x: torch.as_tensor(x, device=DEVICE)  # noqa: E731
    out = vtrace(tt(lr), tt(r), tt(v), gamma=tt(gamma), lambda_=lam, terminated=tt(term),
                 bootstrap_value=tt(boot), backend=backend, **clips)
    expected = ref.vtrace(lr, r, v, gamma=gamma, lambda_=lam, terminated=term, bootstrap_value=boot, **clips)
    for o, e, x in zip(out, expected, (vs, pg)):
        assert_close(o, x, torch.float64)
        assert_close(e, x, torch.float64)


@pytest.mark.parametrize("lam", [1.0, 0.8])
def test_on_policy_is_td_lambda_and_gae(lam, backend):
    """log_rhos = 0 with clips ≥ 1: vs are the λ-returns and pg_advantages = vs - V; with
    next values values[t+1], GAE(λ) gives the same returns and advantages (λ = 1: the
    discounted returns)."""
    rng = np.random.default_rng(23)
    B, T = 3, 60
    r, v, nv = (torch.as_tensor(rng.standard_normal((B, T)), device=DEVICE) for _ in range(3))
    term = torch.as_tensor(rng.random((B, T)) < 0.1, device=DEVICE)
    trunc = torch.as_tensor(rng.random((B, T)) < 0.1, device=DEVICE) & ~term
    mask = torch.as_tensor(rng.random((B, T)) < 0.9, device=DEVICE)
    zero, boot = torch.zeros_like(r), torch.randn(B, dtype=r.dtype, device=DEVICE)
    kw = dict(gamma=0.9, terminated=term, backend=backend)
    huge = dict(rho_bar=1e30, c_bar=float("inf"), pg_rho_bar=1e30)

    vs, pg = vtrace(zero, r, v, lambda_=lam, next_values=nv, truncated=trunc, mask=mask, **kw, **huge)
    torch.testing.assert_close(vs, rl.td_lambda(r, nv, lambda_=lam, truncated=trunc, mask=mask, **kw))
    torch.testing.assert_close(pg, torch.where(mask, vs - v, 0.0))

    # (no padding here: GAE reads values[t+1] of a padded step as V'_t but A of the next kept one)
    vs, pg = vtrace(zero, r, v, lambda_=lam, bootstrap_value=boot, **kw, **huge)
    adv, ret = rl.gae(r, v, lambda_=lam, bootstrap_value=boot, **kw)
    torch.testing.assert_close(vs, ret)
    torch.testing.assert_close(pg, adv)
    if lam == 1.0:
        nv = torch.cat([v[:, 1:], boot[:, None]], 1)
        torch.testing.assert_close(vs, rl.discounted_returns(r, next_values=nv, **kw))


def test_clip_levels_one_is_on_policy_with_log_rhos_zero(backend):
    """The default clips (1) do not touch ratios of 1."""
    rng = np.random.default_rng(29)
    r, v = (torch.as_tensor(rng.standard_normal((2, 33)), device=DEVICE) for _ in range(2))
    a = vtrace(torch.zeros_like(r), r, v, backend=backend)
    b = vtrace(torch.zeros_like(r), r, v, rho_bar=50.0, c_bar=50.0, pg_rho_bar=50.0, backend=backend)
    for x, y in zip(a, b):
        torch.testing.assert_close(x, y, rtol=0, atol=0)


# ---- special values -------------------------------------------------------------------------
def test_empty_and_single_step(backend):
    for shape, td in [((0, 5), -1), ((3, 0), -1), ((0,), 0), ((4, 0, 2), 1)]:
        x = torch.zeros(shape, device=DEVICE)
        vs, pg = vtrace(x, x, x, time_dim=td, backend=backend)
        assert vs.shape == pg.shape == shape
    # one step: vs = V + rho (r + gamma boot - V), pg = rho_pg (r + gamma boot - V)
    lr = torch.tensor([[2.0], [0.5]], device=DEVICE).log()
    r = torch.tensor([[1.5], [-2.0]], device=DEVICE)
    v = torch.tensor([[1.0], [3.0]], device=DEVICE)
    boot = torch.tensor([10.0, 20.0], device=DEVICE)
    vs, pg = vtrace(lr, r, v, gamma=0.5, bootstrap_value=boot, rho_bar=1.5, pg_rho_bar=1.0, backend=backend)
    torch.testing.assert_close(vs, torch.tensor([[1.0 + 1.5 * 5.5], [3.0 + 0.5 * 5.0]], device=DEVICE))
    torch.testing.assert_close(pg, torch.tensor([[5.5], [0.5 * 5.0]], device=DEVICE))


def test_nan_stays_in_its_episode(impl):
    """A NaN reward poisons only the earlier steps of its own episode (and row), in both outputs."""
    backend, block = impl
    B, T = 3, 3 * block + 5
    ro = Rollout(np.random.default_rng(13), (B,), T, device=DEVICE, p_trunc=0.0, p_pad=0.0, p_term=0.08)
    ro.np_terminated[:, T // 2] = True
    r, np_r = ro.floats("rewards")
    row, j = 1, T // 2 + 3
    r[row, j] = float("nan")
    opts = dict(terminated=True, next_values=True, lambda_=0.9)
    outs, _ = run(ro, opts, backend)
    np_r_clean = np_r.copy()
    np_r_clean[row, j] = 0.0
    ro._floats["rewards"] = (r, np_r_clean)
    _, expected = run(ro, opts, "torch")
    assert_nan_contained(outs, expected, ro.np_terminated, row, j)


def test_nan_value_after_termination_is_never_read(backend):
    """V(s_{t+1}) of a terminal next state is a select away, even when it is NaN or Inf."""
    lr = torch.tensor([[0.3, -0.2, 0.1, 0.0]], device=DEVICE)
    r = torch.tensor([[1.0, 2.0, 3.0, 4.0]], device=DEVICE)
    v = torch.tensor([[0.5, 0.5, 0.5, 0.5]], device=DEVICE)
    term = torch.tensor([[False, True, False, False]], device=DEVICE)
    nv = torch.tensor([[0.5, float("inf"), 0.5, 0.5]], device=DEVICE)
    for out in (vtrace(lr, r, v, terminated=term, next_values=nv, backend=backend),
                vtrace(lr[:, :2], r[:, :2], torch.tensor([[0.5, 0.5]], device=DEVICE), terminated=term[:, :2],
                       bootstrap_value=torch.tensor([float("nan")], device=DEVICE), backend=backend)):
        assert all(torch.isfinite(o).all() for o in out)


def test_inputs_are_not_modified(backend):
    ro = Rollout(np.random.default_rng(17), (3,), 50, device=DEVICE)
    opts = OPTIONS["padded_per_step"]
    run(ro, opts, backend)
    before = {k: v[0].clone() for k, v in ro._floats.items()}
    flags = {k: ro.flag(k) for k in ("terminated", "truncated", "mask")}
    run(ro, opts, backend)
    run(ro, OPTIONS["implicit_next"], backend)
    for k, v in ro._floats.items():
        assert torch.equal(v[0], before.get(k, v[0])), k
    for k, f in flags.items():
        assert torch.equal(ro.flag(k), f)


# ---- gradients ------------------------------------------------------------------------------
@pytest.mark.parametrize("opts", ["episodes", "implicit_next", "padded_per_step", "per_row_gamma"])
@pytest.mark.parametrize("outputs", ["both", "vs", "pg"])
def test_kernel_gradients_match_torch_path(opts, outputs, small_blocks):
    rng = np.random.default_rng(31)
    ro = Rollout(rng, (3,), 3 * small_blocks + 5, dtype=torch.float64, device=DEVICE)
    leaves = {k: ro.floats(k)[0].requires_grad_() for k in ("rewards", "values", "next_values")}
    boot = ro.per_row("bootstrap")[0].requires_grad_()
    ro.floats("log_rhos")[0].requires_grad_()  # a constant all the same: no gradient reaches it
    weights = [torch.as_tensor(rng.standard_normal(leaves["rewards"].shape), device=DEVICE) for _ in range(2)]
    used = {"both": (True, True), "vs": (True, False), "pg": (False, True)}[outputs]
    grads = {}
    for backend in ("triton", "torch"):
        outs, _ = run(ro, OPTIONS[opts], backend)
        loss = sum((o * w).sum() for o, w, u in zip(outs, weights, used) if u)  # one output: the other gets None
        grads[backend] = torch.autograd.grad(loss, [*leaves.values(), boot, ro.floats("log_rhos")[0]],
                                             allow_unused=True)
    for gk, gt in zip(grads["triton"], grads["torch"]):
        assert (gk is None) == (gt is None)
        if gk is not None:
            torch.testing.assert_close(gk, gt, rtol=1e-10, atol=1e-10)
    assert grads["triton"][-1] is None  # log_rhos
    assert grads["triton"][0].abs().sum() > 0


@pytest.mark.parametrize("which", ["next_values", "bootstrap"])
def test_gradcheck(which, backend):
    """Finite differences in float64, on both backends (the kernel under the interpreter)."""
    rng = np.random.default_rng(37)
    B, T = 2, 9
    term = torch.as_tensor(rng.random((B, T)) < 0.2, device=DEVICE)
    trunc = torch.as_tensor(rng.random((B, T)) < 0.2, device=DEVICE) & ~term
    mask = torch.as_tensor(rng.random((B, T)) < 0.8, device=DEVICE)
    gamma = torch.as_tensor(rng.uniform(0.5, 1, (B, T)), device=DEVICE)
    lr = torch.as_tensor(rng.standard_normal((B, T)), device=DEVICE)
    mk = lambda *s: torch.as_tensor(rng.standard_normal(s), device=DEVICE).requires_grad_()  # noqa: E731
    r, v, nv, boot = mk(B, T), mk(B, T), mk(B, T), mk(B)
    kw = dict(gamma=gamma, lambda_=0.8, terminated=term, mask=mask, backend=backend, **CLIPS)
    if which == "next_values":
        fn, args = lambda r, v, nv: tuple(vtrace(lr, r, v, truncated=trunc, next_values=nv, **kw)), (r, v, nv)
    else:
        fn, args = lambda r, v, b: tuple(vtrace(lr, r, v, bootstrap_value=b, **kw)), (r, v, boot)
    # the kernel under the interpreter is slow: fast mode (random projections of the Jacobian)
    # there; its full Jacobian is compared with the torch path's above
    assert torch.autograd.gradcheck(fn, args, eps=1e-6, atol=1e-8, fast_mode=backend == "triton")


def test_no_grad_needed_no_graph(backend):
    r = torch.randn(2, 20, device=DEVICE)
    lr = torch.randn(2, 20, device=DEVICE, requires_grad=True)  # a constant: no graph through it
    out = vtrace(lr, r, r, backend=backend)
    assert all(o.grad_fn is None and not o.requires_grad for o in out)
    with torch.no_grad():
        out = vtrace(lr, r.requires_grad_(), r.detach(), backend=backend)
    assert all(o.grad_fn is None for o in out)


# ---- bad input ------------------------------------------------------------------------------
def _data():
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(3, 8, generator=g).to(DEVICE) for _ in range(3))


BAD_CALLS = [
    # (id, call, exception, words the message must contain)
    ("log_rhos_list", lambda lr, r, v: vtrace([0.0] * 8, r, v), TypeError, "log_rhos"),
    ("log_rhos_int", lambda lr, r, v: vtrace(lr.long(), r, v), TypeError, "log_rhos"),
    ("log_rhos_shape", lambda lr, r, v: vtrace(lr[:, :-1], r, v), ValueError, "log_rhos"),
    ("log_rhos_device", lambda lr, r, v: vtrace(lr.to("meta"), r, v), ValueError, "log_rhos"),
    ("rewards_int", lambda lr, r, v: vtrace(lr, r.long(), v), TypeError, "rewards"),
    ("values_missing", lambda lr, r, v: vtrace(lr, r, None), TypeError, "values"),
    ("values_shape", lambda lr, r, v: vtrace(lr, r, v.t()), ValueError, "values"),
    ("rho_bar_zero", lambda lr, r, v: vtrace(lr, r, v, rho_bar=0.0), ValueError, "rho_bar"),
    ("rho_bar_nan", lambda lr, r, v: vtrace(lr, r, v, rho_bar=float("nan")), ValueError, "rho_bar"),
    ("rho_bar_str", lambda lr, r, v: vtrace(lr, r, v, rho_bar="1"), TypeError, "rho_bar"),
    ("c_bar_negative", lambda lr, r, v: vtrace(lr, r, v, c_bar=-1.0), ValueError, "c_bar"),
    ("c_bar_tensor", lambda lr, r, v: vtrace(lr, r, v, c_bar=torch.ones(3, 8)), TypeError, "c_bar"),
    ("pg_rho_bar_zero", lambda lr, r, v: vtrace(lr, r, v, pg_rho_bar=0), ValueError, "pg_rho_bar"),
    ("pg_rho_bar_bool", lambda lr, r, v: vtrace(lr, r, v, pg_rho_bar=True), TypeError, "pg_rho_bar"),
    ("gamma_high", lambda lr, r, v: vtrace(lr, r, v, gamma=1.5), ValueError, "gamma"),
    ("lambda_negative", lambda lr, r, v: vtrace(lr, r, v, lambda_=-0.1), ValueError, "lambda_"),
    ("truncated_without_next_values",
     lambda lr, r, v: vtrace(lr, r, v, truncated=torch.zeros(3, 8, dtype=torch.bool, device=DEVICE)),
     ValueError, "next_values"),
    ("bootstrap_and_next_values",
     lambda lr, r, v: vtrace(lr, r, v, next_values=v, bootstrap_value=torch.zeros(3, device=DEVICE)),
     ValueError, "bootstrap_value"),
    ("mask_shape", lambda lr, r, v: vtrace(lr, r, v, mask=torch.ones(9, device=DEVICE)), ValueError, "mask"),
    ("time_dim_range", lambda lr, r, v: vtrace(lr, r, v, time_dim=2), ValueError, "time_dim"),
    ("backend_name", lambda lr, r, v: vtrace(lr, r, v, backend="cuda"), ValueError, "backend"),
]


@pytest.mark.parametrize("call,exc,words", [c[1:] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS])
def test_bad_input_is_refused(call, exc, words):
    with pytest.raises(exc, match=words):
        call(*_data())


# ---- GPU sizes ------------------------------------------------------------------------------
def _gpu_rollout(B, T, dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = {k: torch.randn(B, T, device="cuda", generator=g).to(dtype) for k in ("lr", "r", "v", "nv")}
    x["term"] = torch.rand(B, T, device="cuda", generator=g) < 1e-3
    x["trunc"] = (torch.rand(B, T, device="cuda", generator=g) < 1e-3) & ~x["term"]
    x["mask"] = torch.rand(B, T, device="cuda", generator=g) > 0.05
    return x, {k: t.double().cpu().numpy() if t.is_floating_point() else t.cpu().numpy() for k, t in x.items()}


@pytest.mark.gpu
def test_gpu_long_sequence_with_gradients():
    x, n = _gpu_rollout(4, 100_000, torch.float32, 0)
    kw = dict(gamma=0.999, lambda_=0.95, terminated=x["term"], truncated=x["trunc"], mask=x["mask"], **CLIPS)
    nkw = dict(gamma=0.999, lambda_=0.95, terminated=n["term"], truncated=n["trunc"], mask=n["mask"], **CLIPS)
    out = vtrace(x["lr"], x["r"], x["v"], next_values=x["nv"], **kw)
    for o, e in zip(out, ref.vtrace(n["lr"], n["r"], n["v"], next_values=n["nv"], **nkw)):
        assert_close(o, e, torch.float32)
    leaves = [x[k].double().requires_grad_() for k in ("r", "v", "nv")]
    w = torch.randn(2, *x["r"].shape, dtype=torch.float64, device="cuda")

    def grads(backend):
        vs, pg = vtrace(x["lr"].double(), *leaves[:2], next_values=leaves[2], backend=backend, **kw)
        return torch.autograd.grad((vs * w[0] + pg * w[1]).sum(), leaves)

    for gk, gt in zip(grads("triton"), grads("torch")):
        torch.testing.assert_close(gk, gt, rtol=1e-9, atol=1e-9)


@pytest.mark.gpu
def test_gpu_large_batch_bf16():
    x, n = _gpu_rollout(16384, 1024, torch.bfloat16, 1)
    kw = dict(terminated=x["term"], mask=x["mask"], **CLIPS)
    out = vtrace(x["lr"], x["r"], x["v"], bootstrap_value=x["nv"][:, 0], **kw)
    assert out.vs.dtype == torch.bfloat16
    expected = ref.vtrace(n["lr"], n["r"], n["v"], gamma=0.99, lambda_=1.0, terminated=n["term"], mask=n["mask"],
                          bootstrap_value=n["nv"][:, 0], **CLIPS)
    for o, e in zip(out, expected):
        assert_close(o, e, torch.bfloat16)
    t = lambda a: a.t().contiguous()  # noqa: E731  the same data, time-major
    out0 = vtrace(t(x["lr"]), t(x["r"]), t(x["v"]), bootstrap_value=x["nv"][:, 0], terminated=t(x["term"]),
                  mask=t(x["mask"]), time_dim=0, **CLIPS)
    for o, e in zip(out0, expected):
        assert_close(o.t(), e, torch.bfloat16)
