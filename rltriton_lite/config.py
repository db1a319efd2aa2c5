"""The kernels' tunables, in one frozen object the planners take as an argument.

The defaults are what ships (docs/DESIGN.md says which measurement chose each). A test or a tile
sweep runs under another config with :func:`using`; nothing else changes a tunable::

    with config.using(Config(max_block_t=16)):   # several chunks per row at test sizes
        rl.gae(rewards, values)
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses


@dataclasses.dataclass(frozen=True)
class Config:
    # the scan (plan.py)
    max_block_t: int = 1024  # most time steps per chunk
    vector: int | None = None  # steps per thread's vector: None is 16 bytes (8 of a 2-byte dtype, else 4)
    min_programs: int | None = None  # fewer programs leave the GPU idle (None: 2 per SM on CUDA, never on CPU)
    wide_block: int = 1024  # ... then a row walks chunks of up to this many steps, a warp per 256
    split_min_chunks: int = 32  # ... unless it has this many of them: then time is split (plan._plan)
    compose: int = 256  # a time split of at most this many segments runs in two launches, else three
    compose_block: int = 256  # segments' maps a program composes at once (more: several blocks in turn)
    time_major_tile: tuple = (64, 2048, 4)  # a time-major tile's most rows, most 4-byte elements, warps
    tile: tuple | None = None  # (rows, block, warps[, stages[, vector]]) for every scan: tile sweeps
    look_ahead: bool | None = None  # a masked call's kernel looks ahead itself (False: masks.py's launch first;
                                    # None: on CUDA, where launches cost; interpreted, the arithmetic does)
    # the maps and reductions (_reduce.py)
    map_min_programs: int = 1024  # a map launch takes tiles of fewer rows until it has this many programs
    tile_elements: int = 4096  # elements of a map tile (and of a reduction whose hook also stores)
    reduce_tile_elements: int = 2048  # elements of a tile of a reduction that only reduces
    partial_programs: int = 512  # beyond this many tiles, a reducing program adds several in a loop
    partial_stages: int = 2  # tiles' loads in flight in that loop
    finish_block: int = 4096  # partials the finishing program adds at once


_CURRENT = contextvars.ContextVar("rltriton_lite_config", default=Config())


def current() -> Config:
    """The config the next launch plans with."""
    return _CURRENT.get()


@contextlib.contextmanager
def using(config: Config):
    """Plan every launch inside the ``with`` block with ``config``."""
    if not isinstance(config, Config):
        raise TypeError(f"config must be a rltriton_lite.config.Config, got {type(config).__name__}")
    token = _CURRENT.set(config)
    try:
        yield config
    finally:
        _CURRENT.reset(token)
