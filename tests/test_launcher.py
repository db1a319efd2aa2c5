"""The launch path (``_triton.Launch``) and the plans that key it.

On CPU a stand-in kernel and driver check the logic: the first call of a plan goes through
``kernel[grid]``, then the compiled kernel it returned is launched directly once and what it
wrote compared with Triton's; later calls launch it directly only if the two agreed. The plans
(``plan._SCANS``) are keyed by everything Triton specialises on. On a GPU (marked) the two paths
give the same bits.
"""
from __future__ import annotations

import pytest
import torch

import rltriton_lite as rl
from rltriton_lite import _triton, plan
from rltriton_lite import reference as ref
from rltriton_lite._triton import jit, tl

from conftest import DEVICE, assert_close


class _Compiled:
    function, packed_metadata = "fn", "meta"

    def __init__(self, log, write):
        self.log, self.write = log, write

    def run(self, *args):
        self.log.append(("fast", args))
        self.write(args[9:])


class _Kernel:
    """Stands in for a triton.jit function whose launch writes ``value`` into its first argument;
    its compiled kernel writes ``fast_value`` (or raises, if that is an exception)."""

    def __init__(self, value=1.0, fast_value=1.0):
        self.log, self.value, self.fast_value = [], value, fast_value

    def _write_fast(self, args):
        if isinstance(self.fast_value, Exception):
            raise self.fast_value
        args[0].fill_(self.fast_value)

    def __getitem__(self, grid):
        def launch(*args, num_warps):
            self.log.append(("triton", grid, args, num_warps))
            args[0].fill_(self.value)
            return _Compiled(self.log, self._write_fast)
        return launch


class _Driver:
    device = 0

    def get_current_device(self):
        return self.device

    def get_current_stream(self, device):
        return 1000 + device


@pytest.fixture
def driver(monkeypatch):
    monkeypatch.setattr(_triton, "FAST_LAUNCH", True)
    monkeypatch.setattr(_triton, "_hooks_installed", lambda: False)
    monkeypatch.setattr(_triton, "_capturing", lambda: False)
    d = _Driver()
    monkeypatch.setattr(_triton, "_driver", lambda: d)
    return d


def _kinds(kernel):
    return [e[0] for e in kernel.log]


def test_a_checked_launch_skips_triton(driver):
    kernel = _Kernel()
    launch = _triton.Launch(kernel, (5,), ("HOOK", 128), 1, (0,))
    out = torch.zeros(4)
    launch(out, (0.5, 1), 64)
    assert _kinds(kernel) == ["triton", "fast"]  # Triton's launch, then the check
    launch(out, (0.25, 1), 64)
    assert _kinds(kernel) == ["triton", "fast", "fast"]
    # the grid padded to 3 dims, the device's stream, the compiled function, no hooks, every argument
    assert kernel.log[-1][1] == (5, 1, 1, 1000, "fn", "meta", None, None, None, out, (0.25, 1), 64, "HOOK", 128)


@pytest.mark.parametrize("fast_value", [2.0, RuntimeError("another convention")], ids=["differs", "raises"])
def test_a_launch_that_disagrees_keeps_triton_path(driver, fast_value):
    kernel = _Kernel(1.0, fast_value)
    launch = _triton.Launch(kernel, (1,), (), 1, (0,))
    out = torch.zeros(3)
    for _ in range(3):
        launch(out)
    assert _kinds(kernel) == ["triton", "fast", "triton", "triton"]
    assert launch.compiled is False


def test_nan_outputs_agree(driver):
    kernel = _Kernel(float("nan"), float("nan"))
    launch = _triton.Launch(kernel, (1,), (), 1, (0,))
    launch(torch.zeros(3))
    launch(torch.zeros(3))
    assert _kinds(kernel) == ["triton", "fast", "fast"]


def test_hooks_capture_device_and_switch_take_triton_path(driver, monkeypatch):
    kernel = _Kernel()
    launch = _triton.Launch(kernel, (1,), (), 1, (0,))
    out = torch.zeros(2)
    launch(out)
    monkeypatch.setattr(_triton, "_hooks_installed", lambda: True)
    launch(out)
    monkeypatch.setattr(_triton, "_hooks_installed", lambda: False)
    driver.device = 1  # compiled for device 0
    launch(out)
    assert _kinds(kernel) == ["triton", "fast", "triton", "triton"]
    for patch in ("_capturing", "FAST_LAUNCH"):  # a new plan: no check during capture, none when off
        kernel = _Kernel()
        monkeypatch.setattr(_triton, patch, True if patch == "_capturing" else False)
        if patch == "_capturing":
            monkeypatch.setattr(_triton, patch, lambda: True)
        launch = _triton.Launch(kernel, (1,), (), 1, (0,))
        launch(out)
        launch(out)
        assert _kinds(kernel) == ["triton", "triton"]
        monkeypatch.setattr(_triton, "_capturing", lambda: False)


def test_plans_are_keyed_by_what_triton_specialises_on():
    """A new dtype, alignment, stride, shape, parameter type or config is a new plan; the same
    signature with new tensors and numbers is the same plan."""
    from rltriton_lite.config import Config, using

    base = torch.randn(3, 40, device=DEVICE)
    r = base[:, :32]

    def plans(*args, **kw):
        n = len(plan._SCANS)
        rl.discounted_returns(*args, backend="triton", **kw)
        return len(plan._SCANS) - n

    plans(r, gamma=0.9)
    assert plans(torch.randn(3, 40, device=DEVICE)[:, :32], gamma=0.5) == 0  # new tensors and gamma: the same plan
    assert plans(r.double()) == 1
    assert plans(base[:, 1:33]) == 1  # 4 bytes past a 16-byte boundary
    assert plans(base[:, :31]) == 1  # another T
    assert plans(r.t().contiguous().t()) == 1  # time-major
    assert plans(r, terminated=r > 0) == 1
    with using(Config(max_block_t=16)):
        assert plans(r) == 1


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_fast_and_triton_paths_agree_on_gpu(dtype, monkeypatch):
    """Aligned and misaligned views, several shapes, both paths: the same bits, and the plans
    checked (each launch of a second call is direct)."""
    assert _triton.FAST_LAUNCH
    g = torch.Generator(device="cuda").manual_seed(0)
    base = torch.randn(9, 3001, device="cuda", generator=g).to(dtype)
    done = torch.rand(9, 3001, device="cuda", generator=g) < 0.02
    for B, T, off in [(8, 3000, 0), (8, 3000, 1), (3, 17, 0), (3, 17, 2)]:
        r, v = base[:B, off:off + T], base[1:B + 1, off:off + T]
        d = done[:B, off:off + T]
        monkeypatch.setattr(_triton, "FAST_LAUNCH", True)
        monkeypatch.setattr(plan, "_SCANS", {})
        outs = [rl.gae(r, v, terminated=d, bootstrap_value=v[:, 0])]
        outs.append(rl.gae(r, v, terminated=d, bootstrap_value=v[:, 0]))  # a known plan
        launched = [run for s in plan._SCANS.values() for run in (s.final, s.summarize, s.compose)
                    if run.compiled is not None]
        assert launched and all(run.compiled for run in launched)
        monkeypatch.setattr(_triton, "FAST_LAUNCH", False)
        outs.append(rl.gae(r, v, terminated=d, bootstrap_value=v[:, 0]))
        for out in outs[1:]:
            for a, b in zip(outs[0], out):
                assert torch.equal(a, b)
        e_adv, _ = ref.gae(r.double().cpu().numpy(), v.double().cpu().numpy(), terminated=d.cpu().numpy(),
                           bootstrap_value=v[:, 0].double().cpu().numpy())
        assert_close(outs[0][0], e_adv, dtype)


# ---- the interpreter's tl.associative_scan on whole arrays (_triton._scan_whole_arrays) ---------------
COMBINE_CALLS = []


@jit
def _compose(a1, b1, a2, b2):
    COMBINE_CALLS.append(1)  # (interpreted, the combine is plain Python)
    return a1 * a2, b1 * a2 + b2  # apply (a1, b1) first: not commutative


@jit
def _max_by_branch(x, y):
    COMBINE_CALLS.append(1)
    if x > y:  # Python control flow on the values: scalars only
        return x
    return y


@jit
def _scan_rows(A, B, OUT_A, OUT_B, N: tl.constexpr, REVERSE: tl.constexpr, BRANCH: tl.constexpr):
    offs = tl.arange(0, 2)[:, None] * N + tl.arange(0, N)[None, :]
    a, b = tl.load(A + offs), tl.load(B + offs)
    if BRANCH:
        tl.store(OUT_B + offs, tl.associative_scan(b, 1, _max_by_branch, reverse=REVERSE))
    else:
        sa, sb = tl.associative_scan((a, b), 1, _compose, reverse=REVERSE)
        tl.store(OUT_A + offs, sa)
        tl.store(OUT_B + offs, sb)


@pytest.mark.skipif(not _triton.INTERPRET, reason="the interpreter's scan (compiled kernels scan on the GPU)")
@pytest.mark.parametrize("reverse", [False, True])
def test_interpreted_scan_takes_whole_arrays(reverse):
    """An associative combine runs on whole arrays, log2(n) calls for n lanes (the interpreter's
    own loop: one per element), and gives the sequential loop's values, in order (the combine
    does not commute); a combine that branches on its values gets the interpreter's loop."""
    import numpy as np

    rng = np.random.default_rng(3)
    a, b = (torch.as_tensor(rng.uniform(0.5, 1.5, (2, 64))) for _ in range(2))
    out_a, out_b = torch.zeros_like(a), torch.zeros_like(b)
    COMBINE_CALLS.clear()
    _scan_rows[(1,)](a, b, out_a, out_b, 64, reverse, False)
    assert len(COMBINE_CALLS) == 6
    want_a, want_b = a.clone(), b.clone()
    steps = range(62, -1, -1) if reverse else range(1, 64)
    for t in steps:  # the sequential loop: element t after its predecessor in scan order
        p = t + 1 if reverse else t - 1
        want_a[:, t], want_b[:, t] = want_a[:, p] * a[:, t], want_b[:, p] * a[:, t] + b[:, t]
    torch.testing.assert_close(out_a, want_a, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(out_b, want_b, rtol=1e-12, atol=1e-12)
    COMBINE_CALLS.clear()
    _scan_rows[(1,)](a, b, out_a, out_b, 64, reverse, True)
    assert len(COMBINE_CALLS) > 64  # the whole-array try, then one call per element
    flip = (lambda x: x.flip(1)) if reverse else (lambda x: x)
    torch.testing.assert_close(out_b, flip(torch.cummax(flip(b), 1).values))
