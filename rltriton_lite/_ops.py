"""Helpers for the kernels as ``torch.library`` custom ops (torch.compile, and CUDA graphs
through it). Each algorithm module registers its own ops beside its ``autograd.Function``.

Eager calls never go through an op: each public function validates its arguments and launches
its kernels directly (a custom op's dispatch costs host time). While ``torch.compile`` traces
(``torch.compiler.is_compiling()``), the public functions validate the same way (the checks read
only shapes, dtypes and devices, so they trace without a graph break) and call their module's
ops. Each op has

* a real implementation: the module's own launcher (``returns._forward``, ``returns._backward``,
  ...), the very code the eager path and its ``autograd.Function`` run, so results and gradients
  are the same bits;
* a fake implementation: empty outputs with the real ones' shapes, dtypes and strides;
* for the differentiable ones, autograd (``register_autograd``) whose backward calls the
  ``*_backward`` op, so the backward graph traces too.

Checks that read a tensor's values (a per-step gamma or lambda in [0, 1]; SAC's λ > 0 needing
log_probs; a tensor α finite and >= 0) would break the graph: while compiling, the public
functions skip them and the forward ops run them at run time (not during CUDA-graph capture, where
a read cannot sync). Inputs that get no gradient are detached before
the op (``constant``), so the outputs require grad exactly when the eager ones do. Gradients an op
does not compute come back as empty tensors (a custom op returns tensors), which the autograd
formulas turn back into None (``grad_or_none``).
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
