"""The compiled-kernel cache in front of Triton's launch path (``_triton.Launcher``).

On CPU a stand-in kernel and driver check the cache's logic: a new specialisation (dtype,
16-byte alignment, integer class, strides, parameter types, constexprs, warps, device) goes
through ``kernel[grid]``, a known one straight to the compiled kernel's launcher with the
arguments Triton would pass. On a GPU (marked) the two paths give the same bits.
"""
from __future__ import annotations

import pytest
import torch

import rltriton_lite as rl
from rltriton_lite import _triton
from rltriton_lite import reference as ref

from conftest import assert_close


class _Compiled:
    function, packed_metadata = "fn", "meta"

    def __init__(self, log):
        self.log = log

    def run(self, *args):
        self.log.append(("fast", args))


class _Kernel:
    """Stands in for a triton.jit function: ``kernel[grid](...)`` compiles (logged) and launches."""

    def __init__(self):
        self.log = []

    def __getitem__(self, grid):
        def launch(*args, num_warps):
            self.log.append(("triton", grid, args, num_warps))
            return _Compiled(self.log)
        return launch


class _Driver:
    device = 0

    def get_current_device(self):
        return self.device

    def get_current_stream(self, device):
        return 1000 + device


@pytest.fixture
def launcher(monkeypatch):
    monkeypatch.setattr(_triton, "FAST_LAUNCH", True)
    monkeypatch.setattr(_triton, "_hooks_installed", lambda: False)
    driver = _Driver()
    monkeypatch.setattr(_triton, "_driver", lambda: driver)
    kernel = _Kernel()
    return _triton.Launcher(kernel, "TSPti"), kernel, driver


def test_a_known_specialisation_skips_triton(launcher):
    launch, kernel, driver = launcher
    x, y = torch.zeros(64), torch.zeros(64, dtype=torch.float64)
    args = ((x, None), ((64, 1), (0, 0)), (0.9, 1), y, 4096)
    launch((3, 2), args, ("HOOK", 128), 1)
    assert [e[0] for e in kernel.log] == ["triton"]
    launch((5,), ((torch.zeros(64), None), ((64, 1), (0, 0)), (0.5, 1), y, 8192), ("HOOK", 128), 1)
    assert kernel.log[-1][0] == "fast"
    # grid padded to 3 dims, the device's stream, the compiled function, no hooks, then every argument
    assert kernel.log[-1][1][:9] == (5, 1, 1, 1000, "fn", "meta", None, None, None)
    assert kernel.log[-1][1][9:] == ((kernel.log[-1][1][9][0], None), ((64, 1), (0, 0)), (0.5, 1), y, 8192,
                                     "HOOK", 128)
    assert len(launch.cache) == 1


@pytest.mark.parametrize("change", ["dtype", "misaligned", "one", "not_div16", "int64", "stride", "param_int",
                                    "param_type", "constexpr", "warps", "device", "none"])
def test_a_new_specialisation_goes_through_triton(launcher, change):
    launch, kernel, driver = launcher
    x = torch.zeros(64)
    base = dict(X=(x, None), S=((64, 1), (0, 0)), P=(0.9, 1), t=x, i=4096, c=("HOOK", 128), w=1)
    launch((1,), tuple(base[k] for k in "XSPti"), base["c"], base["w"])
    new = dict(base)
    if change == "dtype":
        new["X"] = (x.double(), None)
    elif change == "misaligned":
        new["t"] = x[1:]  # 4 bytes past a 16-byte boundary
    elif change == "one":
        new["i"] = 1
    elif change == "not_div16":
        new["i"] = 4097
    elif change == "int64":
        new["i"] = 2 ** 31 + 4096
    elif change == "stride":
        new["S"] = ((65, 1), (0, 0))
    elif change == "param_int":
        new["P"] = (0.9, -1)
    elif change == "param_type":
        new["P"] = (1, 1)  # an int is specialised, a float is not
    elif change == "constexpr":
        new["c"] = ("HOOK", 256)
    elif change == "warps":
        new["w"] = 4
    elif change == "device":
        driver.device = 1
    else:
        new["X"] = (None, None)
    launch((1,), tuple(new[k] for k in "XSPti"), new["c"], new["w"])
    assert [e[0] for e in kernel.log] == ["triton", "triton"]
    assert len(launch.cache) == 2


def test_grouped_tensors_are_keyed_each(launcher):
    """An X entry may group tensors (SAC's Q heads): each member's dtype and alignment count."""
    launch, kernel, driver = launcher
    x = torch.zeros(64)
    for group in [(x, x), (x, torch.zeros(64)), (x, x.double()), (x, x[1:]), (x, None)]:
        launch((1,), ((group, None), ((64, 1),), (), None, 64), (), 1)
    assert [e[0] for e in kernel.log] == ["triton", "fast", "triton", "triton", "triton"]


def test_hooks_and_switch_take_triton_path(launcher, monkeypatch):
    launch, kernel, driver = launcher
    args = ((torch.zeros(4),), ((4, 1),), (0.5,), None, 4)
    launch((1,), args, (), 1)
    monkeypatch.setattr(_triton, "_hooks_installed", lambda: True)
    launch((1,), args, (), 1)
    monkeypatch.setattr(_triton, "_hooks_installed", lambda: False)
    monkeypatch.setattr(_triton, "FAST_LAUNCH", False)
    launch((1,), args, (), 1)
    assert [e[0] for e in kernel.log] == ["triton"] * 3


def test_wrong_number_of_arguments_is_refused(launcher):
    launch, kernel, driver = launcher
    with pytest.raises(TypeError, match="kinds"):
        launch((1,), ((), (), ()), (), 1)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_fast_and_triton_paths_agree_on_gpu(dtype, monkeypatch):
    """Aligned and misaligned views, several shapes, both paths: the same bits; and the cache is
    used (a second call of a shape adds no entry)."""
    from rltriton_lite import plan

    assert _triton.FAST_LAUNCH
    g = torch.Generator(device="cuda").manual_seed(0)
    base = torch.randn(9, 3001, device="cuda", generator=g).to(dtype)
    done = torch.rand(9, 3001, device="cuda", generator=g) < 0.02
    for B, T, off in [(8, 3000, 0), (8, 3000, 1), (3, 17, 0), (3, 17, 2)]:
        r, v = base[:B, off:off + T], base[1:B + 1, off:off + T]
        d = done[:B, off:off + T]
        monkeypatch.setattr(_triton, "FAST_LAUNCH", True)
        outs = [rl.gae(r, v, terminated=d, bootstrap_value=v[:, 0])]
        n = len(plan._launch_scan.cache)
        outs.append(rl.gae(r, v, terminated=d, bootstrap_value=v[:, 0]))  # found in the cache
        assert len(plan._launch_scan.cache) == n
        monkeypatch.setattr(_triton, "FAST_LAUNCH", False)
        outs.append(rl.gae(r, v, terminated=d, bootstrap_value=v[:, 0]))
        for out in outs[1:]:
            for a, b in zip(outs[0], out):
                assert torch.equal(a, b)
        e_adv, _ = ref.gae(r.double().cpu().numpy(), v.double().cpu().numpy(), terminated=d.cpu().numpy(),
                           bootstrap_value=v[:, 0].double().cpu().numpy())
        assert_close(outs[0][0], e_adv, dtype)
