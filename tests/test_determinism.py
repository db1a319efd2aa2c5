"""Robustness of every public function: inputs are never written, a NaN or Inf stays where it
belongs, and the same call gives the same bits.

* Inputs untouched: on rollouts with episode ends, truncations and padding, in batch-major,
  time-major, time-in-the-middle and strided (non-contiguous) layouts, forward and backward leave
  every input tensor bitwise unchanged with the same ``_version`` (and the gaps of a strided
  buffer unwritten).
* NaN/Inf containment: a NaN or Inf in one input element of a scan-based estimator changes no
  output outside the earlier steps of its own episode and row, and no gradient outside its own
  episode (and the steps on either side of it) and row: everything else is exactly what the clean
  input gives (only the sign of a zero gradient may differ). What padding (mask = 0) holds is
  never read: outputs are bitwise the clean ones and gradients the same values, for the
  estimators and the losses (a select, not a multiplication by 0: 0 * NaN = NaN, also in autograd).
* Determinism: two identical calls give bitwise-identical outputs and gradients, on every tiling
  of the kernels (the ``impl`` fixture, the forced time split included) and on the torch path;
  the ``gpu`` tests repeat this at sizes only a GPU runs (4096 × 1024, 8 × 131072, 1 × 10^6).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import rltriton_lite as rl
from rltriton_lite.config import current, using

from cases import LAYOUTS, Rollout, episode_ids
from conftest import DEVICE, SMALL_CHUNKS, SPLIT, SPLIT3

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # NaN arithmetic
# in the interpreter (NumPy), on purpose

ESTIMATORS = ("linear_scan", "discounted_returns", "gae", "td_lambda", "vtrace", "sac_targets")
LOSSES = ("ppo_clip_loss", "sac_actor_loss", "sac_temperature_loss", "crr_loss")
ALL = ESTIMATORS + LOSSES


# --------------------------------------------------------------------------------------------
# One call of every public function on a rollout
# --------------------------------------------------------------------------------------------
class Problem:
    """A public function's call on a rollout.

    ``leaves``: the float inputs it is differentiable in; ``consts``: every other tensor it reads
    (flags, per-step discounts, the losses' constants); ``n_diff``: how many leading outputs are
    differentiable; ``call(leaves, backend)`` runs it and returns its outputs as a tuple.
    """

    def __init__(self, name, ro, *, implicit_next=False):
        self.name, self.ro = name, ro
        td = ro.time_dim
        F = lambda k, scale=1.0, low=None: ro.floats(k, scale, low)[0]  # noqa: E731
        term = ro.flag("terminated")
        trunc = ro.flag("truncated", torch.uint8)
        mask = ro.flag("mask", torch.float32)
        gamma = F("gamma", low=0.5)
        flags = dict(terminated=term, truncated=trunc, mask=mask)
        self.n_diff = None
        if name == "linear_scan":
            np_a = ro.rng.uniform(0.5, 1.0, ro.batch + (ro.T,)) * ~ro.np_terminated  # a = 0: boundaries
            self.np_boundaries = ro.np_terminated
            self.leaves = dict(a=ro.to_torch(np_a, ro.dtype), b=F("b"), initial=ro.per_row("initial")[0])
            self.consts = dict(mask=mask)
            self.fn = lambda x, be: (rl.linear_scan(x["a"], x["b"], initial=x["initial"], mask=mask, time_dim=td,
                                                    backend=be),)
        elif name in ("discounted_returns", "gae", "td_lambda"):
            self.leaves = dict(rewards=F("rewards"), next_values=F("next_values"))
            if name == "gae":
                self.leaves["values"] = F("values")
            self.consts = dict(gamma=gamma, **flags)
            kw = dict(gamma=gamma, time_dim=td, **flags)
            if name == "discounted_returns":
                self.fn = lambda x, be: (rl.discounted_returns(x["rewards"], next_values=x["next_values"], backend=be,
                                                               **kw),)
            elif name == "gae":
                self.fn = lambda x, be: tuple(rl.gae(x["rewards"], x["values"], next_values=x["next_values"],
                                                     lambda_=0.9, backend=be, **kw))
            else:
                self.fn = lambda x, be: (rl.td_lambda(x["rewards"], x["next_values"], lambda_=0.8, backend=be, **kw),)
        elif name == "vtrace":
            # V(s_{t+1}) = values[t+1] and a bootstrap value: the implicit form (no truncation)
            self.leaves = dict(rewards=F("rewards"), values=F("values"), bootstrap_value=ro.per_row("bootstrap")[0])
            log_rhos = F("log_rhos", 0.5)
            self.consts = dict(log_rhos=log_rhos, gamma=gamma, terminated=term, mask=mask)
            self.fn = lambda x, be: tuple(rl.vtrace(log_rhos, x["rewards"], x["values"], lambda_=0.9, rho_bar=1.2,
                                                    c_bar=0.9, gamma=gamma, terminated=term, mask=mask,
                                                    bootstrap_value=x["bootstrap_value"], time_dim=td, backend=be))
        elif name == "sac_targets":
            self.leaves = dict(rewards=F("rewards"), q0=F("q0"), q1=F("q1"), next_log_probs=F("nlp", 0.3),
                               log_probs=F("lp", 0.3))
            self.consts = dict(gamma=gamma, **flags)
            self.fn = lambda x, be: (rl.sac_targets(x["rewards"], [x["q0"], x["q1"]], x["next_log_probs"],
                                                    log_probs=x["log_probs"], lambda_=0.7, alpha=0.2, gamma=gamma,
                                                    time_dim=td, backend=be, **flags),)
        elif name == "ppo_clip_loss":
            self.leaves = dict(log_probs=F("lp", 0.3))
            old, adv = F("old", 0.3), F("adv")
            self.consts = dict(old_log_probs=old, advantages=adv, mask=mask)
            self.fn = lambda x, be: tuple(rl.ppo_clip_loss(x["log_probs"], old, adv, epsilon=(0.2, 0.28),
                                                           normalize_advantages=True, mask=mask, backend=be))
            self.n_diff = 1
        elif name == "sac_actor_loss":
            self.leaves = dict(log_probs=F("lp", 0.3), q0=F("q0"), q1=F("q1"))
            self.consts = dict(mask=mask)
            self.fn = lambda x, be: (rl.sac_actor_loss(x["log_probs"], [x["q0"], x["q1"]], alpha=0.3, mask=mask,
                                                       backend=be),)
        elif name == "sac_temperature_loss":
            self.leaves = dict(log_alpha=torch.tensor([-1.3], dtype=ro.dtype, device=ro.device))
            lp = F("lp", 0.3)
            self.consts = dict(log_probs=lp, mask=mask)
            self.fn = lambda x, be: (rl.sac_temperature_loss(x["log_alpha"], lp, -2.0, mask=mask, backend=be),)
        elif name == "crr_loss":
            self.leaves = dict(log_probs=F("lp", 0.3))
            q, base = F("q"), F("baseline")
            self.consts = dict(q_values=q, baseline=base, mask=mask)
            self.fn = lambda x, be: tuple(rl.crr_loss(x["log_probs"], q, base, beta=0.7, max_weight=5.0, mask=mask,
                                                      backend=be))
            self.n_diff = 1
        else:
            raise KeyError(name)

    def tensors(self):
        return {**self.leaves, **self.consts}

    def run(self, backend, leaves=None):
        """Outputs and the gradients of a fixed random weighting of the differentiable ones."""
        leaves = {k: x.detach().requires_grad_() for k, x in (leaves or self.leaves).items()}
        outs = self.fn(leaves, backend)
        diff = outs[:self.n_diff] if self.n_diff else outs
        g = torch.Generator().manual_seed(7)
        total = sum((o.double() * torch.randn(o.shape, generator=g, dtype=torch.float64).to(o.device)).sum()
                    for o in diff)
        grads = torch.autograd.grad(total, list(leaves.values()))
        return tuple(o.detach() for o in outs), dict(zip(leaves, grads))


def _bits(x):
    """``x`` as integers of the same width: a bitwise comparison (NaN, -0.0 and all)."""
    x = x.detach()
    if x.is_floating_point():
        return x.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()])
    return x


def assert_bitwise_equal(a, b, what=""):
    assert a.shape == b.shape and a.dtype == b.dtype, what
    assert torch.equal(_bits(a), _bits(b)), what


def assert_same_values(a, b, what=""):
    """Equal values, NaN where NaN (-0.0 and 0.0 are the same gradient: which critic of two equal
    NaN ones gets a zero gradient is no concern)."""
    assert a.shape == b.shape and a.dtype == b.dtype, what
    assert torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(), b.nan_to_num()), what


# --------------------------------------------------------------------------------------------
# Inputs are never written
# --------------------------------------------------------------------------------------------
UNTOUCHED_LAYOUTS = [("batch_major", True), ("time_major", False), ("time_middle", True)]


@pytest.mark.parametrize("layout,strided", UNTOUCHED_LAYOUTS,
                         ids=[f"{n}{'-strided' if s else ''}" for n, s in UNTOUCHED_LAYOUTS])
@pytest.mark.parametrize("name", ALL)
def test_inputs_are_never_written(name, layout, strided, backend):
    batch, td = LAYOUTS[layout]
    ro = Rollout(np.random.default_rng(5), batch, 19, time_dim=td, device=DEVICE, strided=strided)
    p = Problem(name, ro)
    for x in p.leaves.values():
        x.requires_grad_()  # the caller's leaves themselves (requires_grad_ is not a write)
    inputs = p.tensors()
    if strided and name != "sac_temperature_loss":
        assert any(not x.is_contiguous() for x in inputs.values())
    watched = dict(inputs)
    watched.update({k + "._base": x._base for k, x in inputs.items() if x._base is not None})  # strided gaps
    before = {k: (_bits(x).clone(), x._version) for k, x in watched.items()}

    def check(stage):
        for k, x in watched.items():
            assert torch.equal(_bits(x), before[k][0]), f"{k} was written in the {stage}"
            assert x._version == before[k][1], f"{k}._version changed in the {stage}"

    outs = p.fn(p.leaves, backend)
    check("forward")
    diff = outs[:p.n_diff] if p.n_diff else outs
    sum(o.double().sum() for o in diff).backward()
    check("backward")
    assert all(x.grad is not None for x in p.leaves.values())


# --------------------------------------------------------------------------------------------
# NaN / Inf containment in the scan-based estimators
# --------------------------------------------------------------------------------------------
# (function, input, step): the step of row ROW that gets the poison
POISONED_INPUTS = [
    ("linear_scan", "b", 0), ("linear_scan", "a", 0),
    # discounted returns read next_values only where an episode is cut: at its truncation
    ("discounted_returns", "rewards", 0), ("discounted_returns", "next_values", 3),
    ("gae", "rewards", 0), ("gae", "values", 0), ("gae", "next_values", 0),
    ("td_lambda", "rewards", 0), ("td_lambda", "next_values", 0),
    ("vtrace", "rewards", 0), ("vtrace", "values", 0), ("vtrace", "log_rhos", 0),
    ("sac_targets", "rewards", 0), ("sac_targets", "q0", 0), ("sac_targets", "next_log_probs", 0),
    ("sac_targets", "log_probs", 0),
]
# In row ROW one episode spans J-3 ... J+3, across the boundary of two 16-step chunks (the
# ``impl`` fixture's small tiles, and its time split); the poison goes to step J + offset.
ROW, J, T_CONTAINED = 1, 14, 21


def _rollout_with_one_episode_around(name):
    """Random episode ends and padding, and in row ROW an episode J-3 ... J+3, its steps J and
    J+3 unpadded; it ends with a truncation where the function takes one, else a termination."""
    ro = Rollout(np.random.default_rng(11), (3,), T_CONTAINED, device=DEVICE, p_term=0.1, p_trunc=0.1, p_pad=0.15)
    ro.np_terminated[ROW, J - 3:J + 4] = False
    ro.np_truncated[ROW, J - 3:J + 4] = False
    ro.np_terminated[ROW, J - 4] = True
    (ro.np_terminated if name in ("linear_scan", "vtrace") else ro.np_truncated)[ROW, J + 3] = True
    ro.np_mask[ROW, [J - 4, J, J + 3]] = True
    return ro


def _allowed(p, ro, j):
    """Where a poison at (ROW, j) may show: (outputs, gradients) as bool arrays (rows, T)."""
    if p.name == "linear_scan":
        done = ro.np_terminated.copy()  # a = 0 there
    elif p.name == "vtrace":
        done = ro.np_terminated.copy()  # no truncation passed
    else:
        done = ro.np_terminated | ro.np_truncated
    done &= ro.np_mask  # a padded step ends nothing: it is skipped
    done[..., -1] = True
    ep = episode_ids(done)
    same = np.zeros(done.shape, bool)
    same[ROW] = ep[ROW] == ep[ROW, j]
    assert same[ROW].sum() == 7  # J-3 ... J+3: the rollout set it up so
    outputs = same & (np.arange(ro.T) <= j)
    # gradients flow forwards in time through the episode; an input at t is also read at t±1
    # (V(s_{t+1}) = values[t+1], dL/da_t = g_t y_{t+1})
    grads = same.copy()
    grads[:, 1:] |= same[:, :-1]
    grads[:, :-1] |= same[:, 1:]
    return outputs, grads


@pytest.mark.parametrize("poison", [float("nan"), -float("inf")], ids=["nan", "-inf"])
@pytest.mark.parametrize("name,arg,offset", POISONED_INPUTS, ids=[f"{n}-{a}" for n, a, _ in POISONED_INPUTS])
def test_poison_stays_in_its_episode_and_row(name, arg, offset, poison, backend):
    """One NaN or -Inf (which turns into NaN through inf - inf or 0 * inf) in any input: outputs
    and gradients outside its episode (and row) are the clean ones."""
    _check_contained(name, arg, J + offset, poison, backend)


@pytest.fixture(params=[SMALL_CHUNKS, SPLIT, SPLIT3], ids=["block16", "split", "split3"])
def small_tiles(request):
    """The kernel on 16-step chunks, or with time split across programs, in two launches or three
    (the tilings other than the default, which the test above runs)."""
    with using(request.param):
        yield request.param


# one input per way into the scan: b (rewards-like), a (linear_scan's a, vtrace's c), and the
# inputs read at a step other than their own (values[t+1] as V(s_t'))
TILED = [("linear_scan", "b", 0), ("linear_scan", "a", 0), ("discounted_returns", "next_values", 3),
         ("gae", "values", 0), ("td_lambda", "rewards", 0), ("vtrace", "values", 0), ("sac_targets", "q0", 0),
         ("sac_targets", "log_probs", 0)]


@pytest.mark.parametrize("name,arg,offset", TILED, ids=[f"{n}-{a}" for n, a, _ in TILED])
def test_nan_stays_in_its_episode_across_tiles(name, arg, offset, small_tiles):
    """The episode J-3 ... J+3 straddles two chunks: the carry between chunks, and between
    segments of the time split, keeps the NaN in it."""
    _check_contained(name, arg, J + offset, float("nan"), "triton")


_CLEAN = {}


def _clean_run(name, backend):
    """The unpoisoned run of ``name`` on its rollout, once per tiling."""
    key = (name, backend, current())
    if key not in _CLEAN:
        _CLEAN[key] = Problem(name, _rollout_with_one_episode_around(name)).run(backend)
    return _CLEAN[key]


def _check_contained(name, arg, j, poison, backend):
    ro = _rollout_with_one_episode_around(name)
    p = Problem(name, ro)
    clean_outs, clean_grads = _clean_run(name, backend)
    x = p.tensors()[arg].detach().clone()
    x[ROW, j] = poison
    if arg in p.leaves:
        outs, grads = p.run(backend, {**p.leaves, arg: x})
    else:  # a constant (vtrace's log_rhos): the same call around the poisoned tensor
        p.fn = _with_const(p, name, arg, x)
        outs, grads = p.run(backend)
    out_ok, grad_ok = _allowed(p, ro, j)
    if poison != poison and (name, arg) != ("vtrace", "log_rhos"):  # (an Inf may be clipped away)
        assert any(not torch.isfinite(o).all() for o in outs), "the NaN was never read"
    for k, (o, c) in enumerate(zip(outs, clean_outs)):
        keep = torch.as_tensor(~out_ok, device=o.device)
        assert_same_values(o[keep], c[keep], f"output {k} outside the poisoned episode")
    for k, g in grads.items():
        if g.dim() < 2:  # a per-row input (initial, bootstrap_value): only its own row
            keep = torch.arange(g.shape[0], device=g.device) != ROW
        else:
            keep = torch.as_tensor(~grad_ok, device=g.device)
        assert_same_values(g[keep], clean_grads[k][keep], f"d{k} outside the poisoned episode")


def test_vtrace_nan_log_rho_is_not_swallowed(backend):
    """A NaN importance ratio is no number: vs and the advantage at its step are NaN (on both
    backends alike), not the clipped weight."""
    lr = torch.tensor([[0.1, float("nan"), -0.2]], device=DEVICE)
    r = torch.tensor([[1.0, 2.0, 3.0]], device=DEVICE)
    vs, pg = rl.vtrace(lr, r, torch.zeros_like(r), backend=backend)
    assert torch.isnan(vs[0, :2]).all() and torch.isnan(pg[0, 1])


def _with_const(p, name, arg, x):
    """``p``'s call with the constant ``arg`` replaced by ``x`` (only vtrace's log_rhos here)."""
    assert (name, arg) == ("vtrace", "log_rhos")
    c = p.consts
    td = p.ro.time_dim
    return lambda lv, be: tuple(rl.vtrace(x, lv["rewards"], lv["values"], lambda_=0.9, rho_bar=1.2, c_bar=0.9,
                                          gamma=c["gamma"], terminated=c["terminated"], mask=c["mask"],
                                          bootstrap_value=lv["bootstrap_value"], time_dim=td, backend=be))


# --------------------------------------------------------------------------------------------
# Padding is never read
# --------------------------------------------------------------------------------------------
def _poison_padding(x, pad, value):
    x = x.detach().clone()
    x[pad.expand_as(x) if pad.dim() < x.dim() else pad] = value
    return x


@pytest.mark.parametrize("poison", [float("nan"), -float("inf")], ids=["nan", "-inf"])
@pytest.mark.parametrize("name", ESTIMATORS)
def test_padding_is_never_read_by_the_estimators(name, poison, backend):
    """NaN/±Inf in every float input at every padded step: outputs and gradients bitwise the clean
    ones (0 at the padding). vtrace's values[t] is V(s_{t-1}') too, read by step t-1 even when t is
    padding, so values keep their numbers there."""
    ro = Rollout(np.random.default_rng(3), (3,), 21, device=DEVICE, p_pad=0.3)
    p = Problem(name, ro)
    pad = torch.as_tensor(~ro.np_mask, device=DEVICE)
    clean_outs, clean_grads = p.run(backend)
    leaves = {k: x if x.dim() < 2 or (name, k) == ("vtrace", "values") else _poison_padding(x, pad, poison)
              for k, x in p.leaves.items()}
    if name == "vtrace":
        x = _poison_padding(p.consts["log_rhos"], pad, poison)
        p.fn = _with_const(p, name, "log_rhos", x)
    outs, grads = p.run(backend, leaves)
    for k, (o, c) in enumerate(zip(outs, clean_outs)):
        assert_bitwise_equal(o, c, f"output {k}")
    for k, g in grads.items():
        assert_bitwise_equal(g, clean_grads[k], f"d{k}")


def _loss_calls(mask):
    """Every loss configuration: (id, tensors by name, call(tensors, backend) -> (loss, *outputs))."""
    g = torch.Generator().manual_seed(2)
    shape = mask.shape
    x = lambda scale=1.0: (torch.randn(shape, generator=g) * scale).to(DEVICE)  # noqa: E731
    base_k = torch.randn(shape + (3,), generator=g).to(DEVICE)
    lp, old, adv, q0, q1, v = x(0.3), x(0.3), x(), x(), x(), x()
    calls = []
    for red in ("mean", "sum", "none"):
        for norm in (False, True):
            calls.append((f"ppo-{red}-{'norm' if norm else 'raw'}", dict(log_probs=lp, old_log_probs=old, advantages=adv),
                          lambda t, be, red=red, norm=norm: tuple(rl.ppo_clip_loss(
                              t["log_probs"], t["old_log_probs"], t["advantages"], mask=mask, reduction=red,
                              normalize_advantages=norm, epsilon=0.2, backend=be))))
    calls.append(("sac_actor", dict(log_probs=lp, q0=q0, q1=q1),
                  lambda t, be: (rl.sac_actor_loss(t["log_probs"], [t["q0"], t["q1"]], alpha=0.2, mask=mask,
                                                   backend=be),)))
    calls.append(("sac_temperature", dict(log_probs=lp),
                  lambda t, be: (rl.sac_temperature_loss(t["log_alpha"], t["log_probs"], -1.0, mask=mask, backend=be),)))
    for mode in ("exp", "binary"):
        for red, base in (("mean", v), ("mean", base_k), ("max", base_k)):
            calls.append((f"crr-{mode}-{red}-K{1 if base.dim() == 2 else 3}",
                          dict(log_probs=lp, q_values=q0, baseline=base),
                          lambda t, be, mode=mode, red=red: tuple(rl.crr_loss(
                              t["log_probs"], t["q_values"], t["baseline"], mask=mask, mode=mode, beta=0.5,
                              baseline_reduce=red, backend=be))))
    return calls


@pytest.mark.parametrize("poison", [float("nan"), float("inf"), -float("inf")], ids=["nan", "inf", "-inf"])
def test_masked_elements_never_reach_the_losses(poison, backend):
    """NaN/±Inf in every input of every masked-out element (padding tokens hold anything, -inf
    log-probs included): loss, statistics, per-element outputs and gradients are the clean
    ones — a select, not a multiplication by 0 (0 * NaN = NaN)."""
    mask = torch.rand(3, 17, generator=torch.Generator().manual_seed(4)) > 0.3
    mask = mask.to(DEVICE)
    pad = ~mask
    for cid, tensors, call in _loss_calls(mask):
        def run(ts):
            ts = dict(ts, log_alpha=torch.tensor([0.3], device=DEVICE))
            names = {"sac_actor": ("log_probs", "q0", "q1"), "sac_temperature": ("log_alpha",)}.get(
                cid, ("log_probs",))
            leaves = {k: ts[k].detach().requires_grad_() for k in names}
            ts.update(leaves)
            outs = call(ts, backend)
            loss = outs[0] if outs[0].dim() == 0 else outs[0].sum()
            return outs, torch.autograd.grad(loss, list(leaves.values()))

        clean_outs, clean_grads = run(tensors)
        poisoned = {k: t.detach().clone() for k, t in tensors.items()}
        for k, t in poisoned.items():
            t[pad[..., None].expand_as(t) if t.dim() > pad.dim() else pad] = poison
        outs, grads = run(poisoned)
        for k, (o, c) in enumerate(zip(outs, clean_outs)):
            assert_bitwise_equal(o, c, f"{cid}: output {k}")
        for k, (gr, c) in enumerate(zip(grads, clean_grads)):
            assert_same_values(gr, c, f"{cid}: gradient {k}")


# --------------------------------------------------------------------------------------------
# Determinism
# --------------------------------------------------------------------------------------------
def _assert_same_run(a, b):
    (outs_a, grads_a), (outs_b, grads_b) = a, b
    for k, (x, y) in enumerate(zip(outs_a, outs_b)):
        assert_bitwise_equal(x, y, f"output {k}")
    for k in grads_a:
        assert_bitwise_equal(grads_a[k], grads_b[k], f"d{k}")


@pytest.mark.parametrize("name", ALL)
def test_same_call_same_bits(name, impl):
    """Two identical calls: bitwise-identical outputs and gradients, on every tiling."""
    ro = Rollout(np.random.default_rng(29), (3,), 21, device=DEVICE)
    p = Problem(name, ro)
    _assert_same_run(p.run(impl[0]), p.run(impl[0]))


@pytest.mark.parametrize("name", ALL)
def test_same_call_same_bits_time_major_strided(name, backend):
    ro = Rollout(np.random.default_rng(29), (2, 3), 21, time_dim=0, device=DEVICE, strided=True)
    p = Problem(name, ro)
    _assert_same_run(p.run(backend), p.run(backend))


# ---- GPU sizes ------------------------------------------------------------------------------
GPU_SHAPES = [(4096, 1024), (8, 131072), (1, 1_000_000)]


@pytest.mark.gpu
@pytest.mark.parametrize("backend_", ["triton", "torch"])
@pytest.mark.parametrize("shape", GPU_SHAPES, ids=[f"{b}x{t}" for b, t in GPU_SHAPES])
@pytest.mark.parametrize("name", ALL)
def test_same_call_same_bits_gpu(name, shape, backend_):
    """Bitwise run-to-run determinism on CUDA at sizes with many programs, many chunks per row,
    and (1 × 10^6) the time split across programs: outputs and gradients."""
    B, T = shape
    ro = Rollout(np.random.default_rng(31), (B,), T, device="cuda", p_term=0.01, p_trunc=0.01, p_pad=0.05)
    p = Problem(name, ro)
    first = p.run(backend_)
    torch.cuda.synchronize()
    _assert_same_run(first, p.run(backend_))
