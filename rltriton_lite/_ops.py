"""How a validated call runs: ``Kernels`` makes, from an algorithm's one forward and one
backward, the three ways its kernel path runs, and ``Kernels.__call__`` is the one place that
picks: the kernels alone when no gradient is needed, an ``autograd.Function`` when one is, and a
``torch.library`` custom op while torch.compile traces. docs/DESIGN.md, "Custom ops", has the
conventions.

A problem is an algorithm's validated call: a NamedTuple whose fields are tensors (or None),
tuples of tensors (SAC's critics) or of numbers, and numbers or strings, and whose last field
is its ``plan.Plan``.
"""
from __future__ import annotations

import ast
import math

import torch

from . import _checks, _triton

NS = "rltriton_lite"
COEFFICIENTS = ("gamma", "lambda_")  # a problem's coefficient fields: gradients from the torch path


class Kernels:
    """An algorithm's kernel path, registered as the custom ops ``rltriton_lite::name`` (and
    ``name_backward``) when made.

    - ``forward(p) -> (outputs, saved)``: the outputs (None where not computed), the first
      ``differentiable`` of them differentiable (default: all), and the tensors the backward
      needs beside ``p``;
    - ``backward(p, saved, grads, need) -> {field: gradient}``: ``saved`` the forward's (after
      its outputs with ``saves_outputs``), ``grads`` one per differentiable output (None: zero),
      ``need`` {field: bool, or a tuple of them} for the fields in ``wrt``, the only ones with
      gradients (every other tensor is a constant);
    - ``check(p)``: the values checks the validation skips while compiling, run by the op;
    - ``torch_path(p) -> outputs``: the algorithm on the PyTorch path. A coefficient tensor
      (``gamma``, ``lambda_``) that requires grad gets its gradient from that path's adjoint,
      recomputed in the backward only then (docs/DESIGN.md, "Gradients of the coefficients").
    """

    def __init__(self, name, problem, forward, backward=None, *, wrt=(), differentiable=None, saves_outputs=False,
                 check=None, torch_path=None):
        self.problem, self.forward, self.backward, self.wrt = problem, forward, backward, frozenset(wrt)
        self.torch_path = torch_path
        self.coefficients = frozenset(COEFFICIENTS if torch_path is not None else ()) & set(problem._fields)
        self.grad_fields = self.wrt | self.coefficients
        self._wrt = [i for i, f in enumerate(problem._fields) if f in self.grad_fields]  # (for _needs_grad)
        self.differentiable, self.saves_outputs, self.check = differentiable, saves_outputs, check
        self.op = torch.library.custom_op(f"{NS}::{name}", self._op, mutates_args=(),
                                          schema="(Tensor[] tensors, str static) -> (Tensor[], Tensor[])")
        self.op.register_fake(self._fake)
        if backward is not None:
            self.backward_op = torch.library.custom_op(
                f"{NS}::{name}_backward", self._backward_op, mutates_args=(),
                schema="(Tensor?[] grads, Tensor[] tensors, Tensor[] saved, str static, bool[] need) -> Tensor[]")
            self.backward_op.register_fake(self._fake_backward)
            self.op.register_autograd(self._op_autograd, setup_context=self._op_setup)

    def __call__(self, p, use_kernel: bool, torch_path):
        """The call's outputs: ``torch_path()`` without a kernel; else the op while torch.compile
        traces, the Function when an input in ``wrt`` needs a gradient, else the kernels alone."""
        if not use_kernel:
            return torch_path()
        if torch.compiler.is_compiling():
            tensors, static = self.split(p)
            return tuple(self.op(tensors, static)[0])
        if self.backward is not None and torch.is_grad_enabled() and self._needs_grad(p):
            return _Function.apply(self, p, *(x for _, _, x in _leaves(p, self.grad_fields)))
        return self.forward(p)[0]

    def _needs_grad(self, p) -> bool:
        for i in self._wrt:
            x = p[i]
            if x is not None and (any(q.requires_grad for q in x) if type(x) is tuple else x.requires_grad):
                return True
        return False

    # ---- the problem as the ops' arguments: its tensors, and the rest as a literal ------------
    def split(self, p):
        """(tensors, static): ``p``'s tensors in field order (the constants detached), and its
        other fields as a Python literal (``ast.literal_eval``), a tensor written ``{'t': index}``
        (a literal of our own: torch.compile traces neither json nor pickle)."""
        tensors, fields = [], []
        for name, value in zip(p._fields[:-1], p[:-1]):
            def entry(x):
                if isinstance(x, torch.Tensor):
                    tensors.append(x if name in self.grad_fields else x.detach())
                    return "{'t': %d}" % (len(tensors) - 1)
                if type(x) is float and not math.isfinite(x):
                    return "1e999" if x > 0 else "-1e999"  # (inf is no literal; NaN is refused before)
                return repr(x)
            fields.append("(" + "".join(entry(x) + ", " for x in value) + ")" if type(value) is tuple else entry(value))
        return tensors, "[" + ", ".join(fields) + "]"

    def join(self, tensors, static):
        """The problem ``split`` took apart (without a plan)."""
        entry = lambda x: tensors[x["t"]] if isinstance(x, dict) else x  # noqa: E731
        return self.problem(*(tuple(map(entry, f)) if type(f) is tuple else entry(f)
                              for f in ast.literal_eval(static)))

    # ---- the forward op ---------------------------------------------------------------------
    def _op(self, tensors, static):
        p = self.join(tensors, static)
        if self.check is not None and not _triton.is_faking():
            self.check(p)
        outs, saved = self.forward(p)
        return _unaliased([tensors[0].new_empty(0) if o is None else o for o in outs] + list(saved), len(outs))

    def _fake(self, tensors, static):
        with _triton.faking():  # the same code, its launches skipped: the same shapes and strides
            return self._op(tensors, static)

    def _op_setup(self, ctx, inputs, output):
        tensors, static = inputs
        outs, saved = output
        n = len(outs) if self.differentiable is None else self.differentiable
        ctx.set_materialize_grads(False)  # an unused output's gradient stays None (read as 0)
        ctx.mark_non_differentiable(*outs[n:], *saved)
        ctx.save_for_backward(*tensors, *(outs if self.saves_outputs else ()), *saved)
        ctx.static, ctx.n_tensors, ctx.n_outputs = static, len(tensors), n

    def _op_autograd(self, ctx, d_outs, _d_saved):
        saved = ctx.saved_tensors
        tensors, rest = list(saved[:ctx.n_tensors]), list(saved[ctx.n_tensors:])
        need = list(ctx.needs_input_grad[0])
        grads = self.backward_op(list(d_outs[:ctx.n_outputs]), tensors, rest, ctx.static, need)
        return [g if n else None for g, n in zip(grads, need)], None

    # ---- the backward op --------------------------------------------------------------------
    def _backward_op(self, grads, tensors, saved, static, need):
        p = self.join(tensors, static)
        leaves = _leaves(p)
        need = _need(leaves, [n and name in self.grad_fields for n, (name, _, _) in zip(need, leaves)])
        out = self.gradients(p, tuple(saved), tuple(grads), need)
        # (an op returns tensors: an empty one for a gradient not computed)
        return _unaliased([_pick(out.get(name), i, tensors[0]) for name, i, _ in leaves], 0)

    def _fake_backward(self, grads, tensors, saved, static, need):
        with _triton.faking():
            return self._backward_op(grads, tensors, saved, static, need)

    # ---- gradients: the kernels' backward, and the coefficients' from the torch path -------------
    def gradients(self, p, saved, grads, need) -> dict:
        out = self.backward(p, saved, grads, need) if any(_any(need.get(f)) for f in self.wrt) else {}
        wanted = [name for name in self.coefficients if need.get(name)]
        if wanted:
            out = dict(out, **self._coefficient_gradients(p, grads, wanted))
        return out

    def _coefficient_gradients(self, p, grads, names) -> dict:
        """d(loss)/d(gamma, lambda_) through the torch path's adjoint: the same scan run backwards,
        which carries ∂L/∂a_t = ḡ_t·y_{t+1} into the coefficients through the prologue."""
        if _triton.is_faking():
            return {name: torch.empty_like(getattr(p, name)) for name in names}
        base = {f: (x.detach() if isinstance(x, torch.Tensor) else x) for f, x in zip(p._fields, p)}

        def outputs(*coefficients):
            return tuple(self.torch_path(self.problem(**dict(base, **dict(zip(names, coefficients))))))

        # torch.func, not autograd.grad: a custom op's backward runs below autograd, where
        # autograd records nothing
        outs, pullback = torch.func.vjp(outputs, *(base[name] for name in names))
        return dict(zip(names, pullback(tuple(torch.zeros_like(o) if g is None else g
                                              for o, g in zip(outs, tuple(grads) + (None,) * len(outs))))))


def _any(flag) -> bool:
    return any(flag) if type(flag) is tuple else bool(flag)


def _pick(grad, i, like=None):
    """Entry ``i`` of a field's gradient (the field's own if None); None, or with ``like`` an
    empty tensor, where there is none."""
    g = grad if i is None or grad is None else grad[i]
    return like.new_empty(0) if g is None and like is not None else g


def _leaves(p, fields=None):
    """(field, index in the field's tuple or None, tensor) for each tensor of the problem ``p``
    (of its ``fields`` if given)."""
    out = []
    for name, value in zip(p._fields[:-1], p[:-1]):
        if fields is not None and name not in fields:
            continue
        if isinstance(value, torch.Tensor):
            out.append((name, None, value))
        elif type(value) is tuple:
            out.extend((name, i, x) for i, x in enumerate(value) if isinstance(x, torch.Tensor))
    return out


def _need(leaves, flags) -> dict:
    """``flags`` (one per leaf) as {field: bool, or a tuple of bools for a tuple field}."""
    need = {}
    for (name, i, _), flag in zip(leaves, flags):
        need[name] = flag if i is None else need.get(name, ()) + (flag,)
    return need


def _unaliased(tensors, n_outputs):
    """The op's outputs, each in storage of its own (a custom op's outputs may not alias each
    other or an input): a copy of a tensor seen before and of one that is part of a larger
    storage (the losses' means come back as views of one vector). The first ``n_outputs``
    form the first list."""
    seen, res = set(), []
    for x in tensors:
        if id(x) in seen or x.storage_offset() or x.untyped_storage().nbytes() > x.numel() * x.element_size():
            x = x.clone()
        seen.add(id(x))
        res.append(x)
    return (res[:n_outputs], res[n_outputs:]) if n_outputs else res


class _Function(torch.autograd.Function):
    """The eager autograd path of a ``Kernels``: its forward, and its backward once (the kernels
    are not differentiable themselves)."""

    @staticmethod
    def forward(ctx, kernels, p, *leaves):
        outs, saved = kernels.forward(p)
        n = len(outs) if kernels.differentiable is None else kernels.differentiable
        ctx.set_materialize_grads(False)  # an unused output's gradient stays None (read as 0)
        ctx.mark_non_differentiable(*(o for o in outs[n:] if o is not None))
        ctx.save_for_backward(*(outs if kernels.saves_outputs else ()), *saved)
        ctx.kernels, ctx.p, ctx.n_outputs = kernels, p, n
        return outs

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, *d_outs):
        k, p = ctx.kernels, ctx.p
        leaves = _leaves(p, k.grad_fields)
        need = _need(leaves, ctx.needs_input_grad[2:])
        grads = k.gradients(p, ctx.saved_tensors, d_outs[:ctx.n_outputs], need)
        return (None, None, *(_pick(grads.get(name), i) for name, i, _ in leaves))


def check_coefficients(gamma, lambda_) -> None:
    """The values checks the public functions skip while compiling (see ``_checks.can_read``)."""
    for name, x in (("gamma", gamma), ("lambda_", lambda_)):
        if x is not None and _checks.can_read(x):
            _checks.in_unit_interval(name, x)
