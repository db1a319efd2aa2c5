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
from rltriton_lite.config import Config, using  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


# (dtype, relative tolerance against the float64 reference), as in docs/DESIGN.md, "Tolerances"
TOLERANCES = {torch.float64: 1e-10, torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 1e-2}
DTYPES = [torch.float32, torch.float64] + ([torch.bfloat16, torch.float16] if DEVICE == "cuda" else [])


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device")
    # pytest-xdist's (tools/gpu_check.sh): tests of one group run in one worker, e.g. the ones
    # that each take tens of GiB of GPU memory
    config.addinivalue_line("markers", "xdist_group(name): run in the same pytest-xdist worker")


def pytest_collection_modifyitems(config, items):
    if DEVICE == "cuda":
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (on a GPU machine: python -m pytest -m gpu)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def device():
    return DEVICE


@pytest.fixture(params=["triton", "torch"])
def backend(request):
    return request.param


# Configs the kernel tests run under (besides the default): several chunks per row at test sizes;
# time split across programs (two launches, as shipped up to Config.compose segments); three launches.
SMALL_CHUNKS = Config(max_block_t=16)
SPLIT = Config(max_block_t=16, min_programs=1 << 20, split_min_chunks=2)
SPLIT3 = Config(max_block_t=16, min_programs=1 << 20, split_min_chunks=2, compose=0)
# The losses' tiles at test sizes: 16 steps × 4 rows, two programs' worth of tiles in a reducing
# program's loop, tiles crossing rows, a last program past the end, the finish adding 16 at a time.
SMALL_TILES = Config(finish_block=16, tile_elements=64, reduce_tile_elements=64, partial_programs=2)


@pytest.fixture(params=["triton", "triton-tiles", "torch"])
def loss_backend(request):
    """The losses' backends; "triton-tiles" runs the kernel under ``SMALL_TILES``."""
    if request.param == "triton-tiles":
        with using(SMALL_TILES):
            yield "triton"
    else:
        yield request.param


@pytest.fixture(params=[("triton", Config()), ("triton", SPLIT), ("torch", Config())],
                ids=["triton", "triton-split", "torch"])
def impl(request):
    """A backend and, for the kernel, a config: the default (several chunks per row from
    T > 256); time split across programs in 16-step chunks (segment maps, then each segment from
    the carry it composes). Small chunks without the split have their own tests (``small_blocks``).
    Yields (backend, steps per chunk of a long row at test sizes)."""
    backend, cfg = request.param
    with using(cfg):
        yield backend, min(cfg.max_block_t, 256)  # plan._tile: 256-step chunks for fewer than 4096 rows


@pytest.fixture
def small_blocks():
    with using(SMALL_CHUNKS):
        yield 16


def assert_close(actual, expected, dtype, what=""):
    """Relative error against the reference, scaled by the reference's magnitude."""
    actual = actual.detach().double().cpu().numpy() if isinstance(actual, torch.Tensor) else actual
    tol = TOLERANCES[dtype]
    scale = max(1.0, float(np.nanmax(np.abs(expected))) if expected.size else 1.0)
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol * scale, err_msg=what)
