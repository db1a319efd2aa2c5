"""Shared fixtures. Kernels run compiled on a CUDA device, else under the Triton interpreter.

``TRITON_INTERPRET`` must be set before ``triton.jit`` decorates the kernels, i.e. before
``rltriton_lite`` is imported, so it is set here, at collection, when there is no GPU.
"""
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import rltriton_lite  # noqa: E402,F401
from rltriton_lite import _reduce, scan  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

# (dtype, relative tolerance against the float64 reference), as in DESIGN.md §5
TOLERANCES = {torch.float64: 1e-10, torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 1e-2}
DTYPES = [torch.float32, torch.float64] + ([torch.bfloat16, torch.float16] if DEVICE == "cuda" else [])


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device (run on the H200 before resolving)")
    # pytest-xdist's: tests of one group run in one worker (with --dist loadgroup), e.g. the
    # ones that each take tens of GiB of GPU memory
    config.addinivalue_line("markers", "xdist_group(name): run in the same pytest-xdist worker")


def pytest_collection_modifyitems(config, items):
    if DEVICE == "cuda":
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; run on the H200 with `python -m pytest -m gpu`")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def device():
    return DEVICE


@pytest.fixture(params=["triton", "torch"])
def backend(request):
    return request.param


@pytest.fixture(params=["triton", "triton-tiles", "torch"])
def loss_backend(request, monkeypatch):
    """The losses' backends; "triton-tiles" makes every tile small (16 steps × 4 rows) and gives
    each program of a reduction many of them (two programs' worth: the loop of a large batch, at
    test sizes), tiles crossing rows and a last program running past the problem's end; the
    finishing program adds the partials 16 at a time (several steps, the last one partial)."""
    if request.param == "triton-tiles":
        monkeypatch.setattr(_reduce, "FINISH_BLOCK", 16)
        monkeypatch.setattr(_reduce, "TILE_ELEMENTS", 64)
        monkeypatch.setattr(_reduce, "REDUCE_TILE_ELEMENTS", 64)
        monkeypatch.setattr(_reduce, "PARTIAL_PROGRAMS", 2)
        return "triton"
    return request.param


@pytest.fixture(params=[("triton", 16, False, False), ("triton", None, False, False), ("triton", 16, True, False),
                        ("triton", 16, True, True), ("triton", 16, "compose", False), ("torch", None, False, False)],
                ids=["triton-block16", "triton", "triton-split", "triton-folded-split", "triton-compose", "torch"])
def impl(request, monkeypatch):
    """A backend and, for the kernel, a tiling: small chunks exercise the carry between chunks on
    short sequences; "split" cuts time across programs (the long-sequence path: segment
    summaries, a scan of their carries, a fix-up pass); "compose" is that split in two launches
    (``scan.COMPOSE``, the default up to 256 segments); "folded" scans resets as a = 0
    (``scan.FOLD_RESETS``). The one-launch split (``scan.LOOKBACK``, off: measured slower) has
    its own tests (test_scan's composed-carries split, the NaN tilings, the GPU split test).
    Yields (backend, block)."""
    backend, block, split, fold = request.param
    if block is not None:
        monkeypatch.setattr(scan, "MAX_BLOCK_T", block)
    if split:
        monkeypatch.setattr(scan, "MIN_PROGRAMS", 1 << 20)
        monkeypatch.setattr(scan, "COMPOSE", 1 << 20 if split == "compose" else 0)
    monkeypatch.setattr(scan, "FOLD_RESETS", fold)
    return backend, scan.MAX_BLOCK_T


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(scan, "MAX_BLOCK_T", 16)
    return 16


def assert_close(actual, expected, dtype, what=""):
    """Relative error against the reference, scaled by the reference's magnitude."""
    actual = actual.detach().double().cpu().numpy() if isinstance(actual, torch.Tensor) else actual
    tol = TOLERANCES[dtype]
    scale = max(1.0, float(np.nanmax(np.abs(expected))) if expected.size else 1.0)
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol * scale, err_msg=what)
