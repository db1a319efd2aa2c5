"""Helpers for the kernels as ``torch.library`` custom ops (torch.compile, and CUDA graphs
through it), and ``route``, the one place that decides how a validated call runs. Each
algorithm module registers its ops beside its ``autograd.Function``; the conventions (fakes,
autograd, run-time value checks) are in docs/DESIGN.md, "Custom ops".
"""
from __future__ import annotations

import torch

from . import _checks

NS = "rltriton_lite"


def route(use_kernel: bool, leaves, *, torch_path, custom_op, function, kernel):
    """The one place that decides how a validated call runs: the PyTorch path without a kernel;
    the custom op while torch.compile traces; the autograd Function when a leaf needs a
    gradient; else the kernels alone, with no autograd bookkeeping. Each is a thunk."""
    if not use_kernel:
        return torch_path()
    if torch.compiler.is_compiling():
        return custom_op()
    if function is not None and torch.is_grad_enabled():
        for x in leaves:
            if x is not None and x.requires_grad:
                return function()
    return kernel()


def constant(x):
    """An input that gets no gradient, detached (None passes)."""
    return None if x is None else x.detach()


def grad_or_none(x, keep: bool):
    return x if keep else None


def unaliased(*outs):
    """A custom op's outputs may not share storage, and must match their fake's layout: a copy of
    each output that views part of another tensor or whose storage an earlier one uses (the
    losses' means and 1/N come back as views of one small vector)."""
    seen, res = set(), []
    for o in outs:
        ptr = o.untyped_storage().data_ptr()
        if o.numel() and (ptr in seen or o.storage_offset() or o.untyped_storage().nbytes() > o.nbytes):
            o = o.clone()
        seen.add(ptr)
        res.append(o)
    return tuple(res)


def empty(like: torch.Tensor) -> torch.Tensor:
    """Stands for a gradient not computed (a custom op returns tensors, not None)."""
    return like.new_empty(0)


def check_coefficients(gamma, lambda_) -> None:
    """The values checks the public functions skip while compiling (see ``_checks.can_read``)."""
    for name, x in (("gamma", gamma), ("lambda_", lambda_)):
        if x is not None and _checks.can_read(x):
            _checks.in_unit_interval(name, x)
