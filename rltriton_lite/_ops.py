"""The kernels as ``torch.library`` custom ops, for ``torch.compile`` (and CUDA graphs through it).

Eager calls never come here: each public function validates its arguments and launches its
kernels directly (a custom op's dispatch costs host time). While ``torch.compile`` traces
(``torch.compiler.is_compiling()``), the public functions validate the same way (the checks
read only shapes, dtypes and devices, so they trace without a graph break) and then call the
wrappers below, which call the ``rltriton_lite::`` ops. Each op has

* a real implementation: the module's own launcher (``returns._forward``, ``returns._backward``,
  ...), the very code the eager path and its ``autograd.Function`` run, so results and
  gradients are the same bits;
* a fake implementation: empty outputs with the real ones' shapes, dtypes and strides
  (``_checks.new_output`` / ``Layout.new``, as the launchers allocate them);
* for the differentiable ones, autograd (``register_autograd``) whose backward calls the
  ``*_backward`` op, so the backward graph traces too.

Checks that read a tensor's values (a per-step gamma or lambda tensor in [0, 1]; SAC's λ > 0
needing log_probs; a tensor α finite and >= 0) would break the graph; while compiling the public
functions skip them and the forward ops run them at run time (not during CUDA-graph capture,
where a read cannot sync). A tensor α stays a tensor (``sac._alpha_arg``), read by the kernels.
Bool flags reach the ops as bool (inductor cannot lower ``_checks.flag``'s uint8 view), and the
ops take the view (``_u8``).

Inputs that get no gradient (flags, masks, coefficient tensors, log_rhos, PPO's old log-probs
and advantages, CRR's critic values) are detached before the op, as the eager path keeps them out
of its ``autograd.Function``: the outputs then require grad exactly when the eager ones do.
Gradients an op does not compute come back from the backward ops as empty tensors (a custom
op returns tensors), which the autograd formulas turn back into None.
"""
from __future__ import annotations

import importlib

import torch

from . import _checks
from . import crr as _crr, episode as _episode, ppo as _ppo, returns as _returns, sac as _sac, scan as _scan
from ._reduce import Layout

_vtrace = importlib.import_module(".vtrace", __package__)  # the package's `vtrace` is the function

NS = "rltriton_lite"

# the tensor inputs of episode.Problem, in the kernels' X order, and the ops' schema for them
_RETURNS_TENSORS = "Tensor rewards, Tensor? values, Tensor? next_values, Tensor? bootstrap_value, " \
                   "Tensor? terminated, Tensor? truncated, Tensor? mask, Tensor? gamma, Tensor? lambda_"


def _const(x):
    """An input that gets no gradient, detached (None passes)."""
    return None if x is None else x.detach()


def _none(x, keep: bool):
    return x if keep else None


def _u8(flag):
    """A bool flag or mask viewed as uint8, as the kernels read it (``_checks.flag`` does this
    eagerly; while compiling it leaves bool tensors alone: inductor can't lower that view)."""
    return flag.view(torch.uint8) if flag is not None and flag.dtype == torch.bool else flag


def _unaliased(*outs):
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


def _empty(like: torch.Tensor) -> torch.Tensor:
    """Stands for a gradient not computed (a custom op returns tensors, not None)."""
    return like.new_empty(0)


def _check_coefficients(gamma, lambda_) -> None:
    """The values checks the public functions skip while compiling (see ``_checks.can_read``)."""
    for name, x in (("gamma", gamma), ("lambda_", lambda_)):
        if x is not None and _checks.can_read(x):
            _checks.in_unit_interval(name, x)


def _layout(order, shape) -> Layout:
    """``Layout.of`` of a tensor of ``shape`` whose dims ``Layout.of`` ordered as ``order``."""
    return Layout.make(tuple(order), shape)


# --------------------------------------------------------------------------------------------
# linear_scan
# --------------------------------------------------------------------------------------------
@torch.library.custom_op(f"{NS}::linear_scan", mutates_args=(), schema=(
    "(Tensor a, Tensor b, Tensor? initial, Tensor? mask, int time_dim, bool reverse, bool keep_carried) "
    "-> (Tensor, Tensor)"))
def _linear_scan_op(a, b, initial, mask, time_dim, reverse, keep_carried):
    """(y, y as carried: a separate buffer if kept (padding hides it from y), else empty)."""
    y, carried = _scan._ls_forward(a, b, initial, _u8(mask), time_dim, reverse, keep_carried)
    return y, (_empty(y) if carried is y else carried)


@_linear_scan_op.register_fake
def _(a, b, initial, mask, time_dim, reverse, keep_carried):
    y = _checks.new_output(b.shape, time_dim, b.dtype, b.device)
    keep = mask is not None and keep_carried
    return y, (_checks.new_output(b.shape, time_dim, b.dtype, b.device) if keep else _empty(y))


@torch.library.custom_op(f"{NS}::linear_scan_backward", mutates_args=(), schema=(
    "(Tensor dy, Tensor a, Tensor y, Tensor? initial, Tensor? mask, int time_dim, bool reverse, "
    "bool need_initial) -> (Tensor, Tensor, Tensor)"))
def _linear_scan_backward_op(dy, a, y, initial, mask, time_dim, reverse, need_initial):
    da, db, d_init = _scan._ls_backward(dy, a, y, initial, _u8(mask), time_dim, reverse, need_initial)
    return da, db, (_empty(y) if d_init is None else d_init)


@_linear_scan_backward_op.register_fake
def _(dy, a, y, initial, mask, time_dim, reverse, need_initial):
    da = _checks.new_output(y.shape, time_dim, a.dtype, a.device)
    db = _checks.new_output(y.shape, time_dim, y.dtype, y.device)
    need = initial is not None and need_initial
    return da, db, (initial.new_empty(initial.shape) if need else _empty(y))


def _linear_scan_setup(ctx, inputs, output):
    a, b, initial, mask, time_dim, reverse, keep_carried = inputs
    y, carried = output
    ctx.mark_non_differentiable(carried)
    ctx.save_for_backward(a, carried if mask is not None and keep_carried else y, initial, mask)
    ctx.time_dim, ctx.reverse = time_dim, reverse


def _linear_scan_backward(ctx, dy, _d_carried):
    a, y, initial, mask = ctx.saved_tensors
    need = ctx.needs_input_grad
    da, db, d_init = _linear_scan_backward_op(dy, a, y, initial, mask, ctx.time_dim, ctx.reverse, need[2])
    return _none(da, need[0]), _none(db, need[1]), _none(d_init, need[2] and initial is not None), \
        None, None, None, None


_linear_scan_op.register_autograd(_linear_scan_backward, setup_context=_linear_scan_setup)


def linear_scan(a, b, initial, mask, time_dim: int, reverse: bool):
    """scan.linear_scan's kernel path as the custom op (arguments validated)."""
    keep = mask is not None and torch.is_grad_enabled() and a.requires_grad
    return _linear_scan_op(a, b, initial, _const(mask), time_dim, reverse, keep)[0]


# --------------------------------------------------------------------------------------------
# discounted_returns, gae, td_lambda
# --------------------------------------------------------------------------------------------
def _returns_problem(kind, tensors, gamma_f, lambda_f, time_dim):
    tensors = (*tensors[:4], *(_u8(x) for x in tensors[4:7]), *tensors[7:])  # terminated, truncated, mask
    return _episode.Problem(kind, *tensors, (gamma_f, lambda_f), time_dim)


def _grad_fakes(tensors, shape, time_dim, need):
    """Fake gradients of (rewards, values, next_values, bootstrap_value) as returns._backward
    allocates them (``episode.grad_buffers``); empty where not computed."""
    rewards, boot = tensors[0], tensors[3]
    outs = [_checks.new_output(shape, time_dim, x.dtype, x.device) if n and x is not None else _empty(rewards)
            for n, x in zip(need[:3], tensors[:3])]
    outs.append(boot.new_empty(boot.shape) if need[3] and boot is not None else _empty(rewards))
    return tuple(outs)


def _register_returns(kind: str, name: str, n_out: int):
    out_schema = "Tensor" if n_out == 1 else "(" + ", ".join(["Tensor"] * n_out) + ")"
    scalars = "float gamma_f, float lambda_f, int time_dim"

    @torch.library.custom_op(f"{NS}::{name}", mutates_args=(), schema=f"({_RETURNS_TENSORS}, {scalars}) -> {out_schema}")
    def op(rewards, values, next_values, bootstrap_value, terminated, truncated, mask, gamma, lambda_,
           gamma_f, lambda_f, time_dim):
        _check_coefficients(gamma, lambda_)
        tensors = (rewards, values, next_values, bootstrap_value, terminated, truncated, mask, gamma, lambda_)
        return _returns._forward(_returns_problem(kind, tensors, gamma_f, lambda_f, time_dim))

    @op.register_fake
    def _(rewards, values, next_values, bootstrap_value, terminated, truncated, mask, gamma, lambda_,
          gamma_f, lambda_f, time_dim):
        dtype = _checks.result_dtype(rewards, values, next_values)
        outs = tuple(_checks.new_output(rewards.shape, time_dim, dtype, rewards.device) for _ in range(n_out))
        return outs if n_out > 1 else outs[0]

    grads = ", ".join(f"Tensor grad{i}" for i in range(n_out))

    @torch.library.custom_op(f"{NS}::{name}_backward", mutates_args=(), schema=(
        f"({grads}, {_RETURNS_TENSORS}, {scalars}, bool[] need) -> (Tensor, Tensor, Tensor, Tensor)"))
    def backward_op(*args):
        grads, tensors, (gamma_f, lambda_f, time_dim, need) = args[:n_out], args[n_out:n_out + 9], args[n_out + 9:]
        outs = _returns._backward(_returns_problem(kind, tensors, gamma_f, lambda_f, time_dim), grads, need)
        return tuple(_empty(tensors[0]) if o is None else o for o in outs)

    @backward_op.register_fake
    def _(*args):
        tensors, time_dim, need = args[n_out:n_out + 9], args[-2], args[-1]
        return _grad_fakes(tensors, tensors[0].shape, time_dim, need)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs[:9])
        ctx.scalars = inputs[9:]

    def backward(ctx, *grads):
        tensors = ctx.saved_tensors
        need = list(ctx.needs_input_grad[:4])
        outs = backward_op(*grads, *tensors, *ctx.scalars, need)
        return tuple(_none(o, n and x is not None) for o, n, x in zip(outs, need, tensors)) + (None,) * 8

    op.register_autograd(backward, setup_context=setup_context)
    return op


_discounted_returns_op = _register_returns("discounted_return", "discounted_returns", 1)
_gae_op = _register_returns("gae", "gae", 2)
_td_lambda_op = _register_returns("td_lambda", "td_lambda", 1)
_RETURNS_OPS = {"discounted_return": _discounted_returns_op, "gae": _gae_op, "td_lambda": _td_lambda_op}


def _returns_args(p):
    """episode.Problem as the ops' tensor arguments (the non-differentiable ones detached)."""
    return (p.rewards, p.values, p.next_values, p.bootstrap_value, _const(p.terminated), _const(p.truncated),
            _const(p.mask), _const(p.gamma), _const(p.lambda_))


def returns(p):
    """returns._run's kernel path as the custom op of ``p.kind``."""
    return _RETURNS_OPS[p.kind](*_returns_args(p), p.params[0], p.params[1], p.time_dim)


# --------------------------------------------------------------------------------------------
# vtrace
# --------------------------------------------------------------------------------------------
_VTRACE_SCALARS = "float gamma_f, float lambda_f, float rho_bar, float c_bar, float pg_rho_bar, int time_dim"


def _vtrace_problem(tensors, scalars):
    return _returns_problem("vtrace", tensors, 0.0, 0.0, scalars[5])._replace(params=tuple(scalars[:5]))


@torch.library.custom_op(f"{NS}::vtrace", mutates_args=(), schema=(
    f"(Tensor log_rhos, {_RETURNS_TENSORS}, {_VTRACE_SCALARS}) -> (Tensor, Tensor)"))
def _vtrace_op(log_rhos, *args):
    tensors, scalars = args[:9], args[9:]
    _check_coefficients(tensors[7], tensors[8])
    return _vtrace._forward(_vtrace_problem(tensors, scalars), log_rhos)


@_vtrace_op.register_fake
def _(log_rhos, *args):
    tensors, time_dim = args[:9], args[-1]
    dtype = _checks.result_dtype(tensors[0], tensors[1], tensors[2], log_rhos)
    return tuple(_checks.new_output(log_rhos.shape, time_dim, dtype, log_rhos.device) for _ in range(2))


@torch.library.custom_op(f"{NS}::vtrace_backward", mutates_args=(), schema=(
    f"(Tensor d_vs, Tensor d_pg, Tensor log_rhos, {_RETURNS_TENSORS}, {_VTRACE_SCALARS}, bool[] need) "
    "-> (Tensor, Tensor, Tensor, Tensor)"))
def _vtrace_backward_op(d_vs, d_pg, log_rhos, *args):
    tensors, scalars, need = args[:9], args[9:15], args[15]
    outs = _vtrace._backward(_vtrace_problem(tensors, scalars), log_rhos, d_vs, d_pg, need)
    return tuple(_empty(log_rhos) if o is None else o for o in outs)


@_vtrace_backward_op.register_fake
def _(d_vs, d_pg, log_rhos, *args):
    tensors, time_dim, need = args[:9], args[14], args[15]
    return _grad_fakes(tensors, log_rhos.shape, time_dim, need)


def _vtrace_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs[:10])
    ctx.scalars = inputs[10:]


def _vtrace_backward(ctx, d_vs, d_pg):
    log_rhos, *tensors = ctx.saved_tensors
    need = list(ctx.needs_input_grad[1:5])
    outs = _vtrace_backward_op(d_vs, d_pg, log_rhos, *tensors, *ctx.scalars, need)
    return (None,) + tuple(_none(o, n and x is not None) for o, n, x in zip(outs, need, tensors)) + (None,) * 11


_vtrace_op.register_autograd(_vtrace_backward, setup_context=_vtrace_setup)


def vtrace(p, log_rhos):
    """vtrace's kernel path as the custom op (``p.params`` = (γ, λ, ρ̄, c̄, ρ̄_pg))."""
    return _vtrace_op(log_rhos.detach(), *_returns_args(p), *p.params, p.time_dim)


# --------------------------------------------------------------------------------------------
# ppo_clip_loss
# --------------------------------------------------------------------------------------------
def _ppo_problem(log_probs, old_log_probs, advantages, mask, low, high, normalize, reduction):
    return _ppo._Problem(log_probs, old_log_probs, advantages, _u8(mask), (low, high), normalize, reduction,
                        _checks.result_dtype(log_probs, old_log_probs, advantages))


@torch.library.custom_op(f"{NS}::ppo_clip_loss", mutates_args=(), schema=(
    "(Tensor log_probs, Tensor old_log_probs, Tensor advantages, Tensor? mask, float low, float high, "
    "bool normalize, str reduction) -> (Tensor, Tensor, Tensor, Tensor)"))
def _ppo_op(log_probs, old_log_probs, advantages, mask, low, high, normalize, reduction):
    """(loss, (clip_fraction, approx_kl), normalisation (empty without), 1/N)."""
    p = _ppo_problem(log_probs, old_log_probs, advantages, mask, low, high, normalize, reduction)
    loss, fractions, norm, inv_n = _ppo._forward(p, Layout.of(log_probs))
    return _unaliased(loss, fractions, (_empty(inv_n) if norm is None else norm), inv_n)


@_ppo_op.register_fake
def _(log_probs, old_log_probs, advantages, mask, low, high, normalize, reduction):
    dtype = _checks.result_dtype(log_probs, old_log_probs, advantages)
    acc = _checks.acc_dtype(dtype)
    new = log_probs.new_empty
    loss = Layout.of(log_probs).new(dtype, log_probs.device) if reduction == "none" else new((), dtype=dtype)
    return loss, new((2,), dtype=dtype), new((2 if normalize else 0,), dtype=acc), new((), dtype=acc)


@torch.library.custom_op(f"{NS}::ppo_clip_loss_backward", mutates_args=(), schema=(
    "(Tensor grad, Tensor log_probs, Tensor old_log_probs, Tensor advantages, Tensor? mask, Tensor norm, "
    "Tensor inv_n, float low, float high, bool normalize, str reduction) -> Tensor"))
def _ppo_backward_op(grad, log_probs, old_log_probs, advantages, mask, norm, inv_n, low, high, normalize,
                     reduction):
    p = _ppo_problem(log_probs, old_log_probs, advantages, mask, low, high, normalize, reduction)
    return _ppo._backward(p, Layout.of(log_probs), grad, norm if normalize else None, inv_n)


@_ppo_backward_op.register_fake
def _(grad, log_probs, *args):
    return Layout.of(log_probs).new(log_probs.dtype, log_probs.device)


def _ppo_setup(ctx, inputs, output):
    log_probs, old_log_probs, advantages, mask = inputs[:4]
    _, fractions, norm, inv_n = output
    ctx.mark_non_differentiable(fractions, norm, inv_n)
    ctx.save_for_backward(log_probs, old_log_probs, advantages, mask, norm, inv_n)
    ctx.scalars = inputs[4:]


def _ppo_backward(ctx, grad, *_):
    d_log_probs = _ppo_backward_op(grad, *ctx.saved_tensors, *ctx.scalars)
    return (d_log_probs,) + (None,) * 7


_ppo_op.register_autograd(_ppo_backward, setup_context=_ppo_setup)


def ppo_clip_loss(p):
    """ppo_clip_loss's kernel path as the custom op: (loss, clip_fraction, approx_kl)."""
    loss, fractions, _, _ = _ppo_op(p.log_probs, _const(p.old_log_probs), _const(p.advantages), _const(p.mask),
                                    *p.bounds, p.normalize, p.reduction)
    return (loss, *fractions.unbind())


# --------------------------------------------------------------------------------------------
# sac_targets
# --------------------------------------------------------------------------------------------
_SAC_TENSORS = "Tensor rewards, Tensor[] next_q, Tensor next_log_probs, Tensor? log_probs, Tensor? terminated, " \
               "Tensor? truncated, Tensor? mask, Tensor? gamma, Tensor? lambda_, Tensor? alpha_t"
_SAC_SCALARS = "float gamma_f, float lambda_f, float alpha, int time_dim"


def _alpha_args(alpha):
    """α as the ops take it: (tensor or None, number): a tensor α (see sac._alpha_arg) travels
    as a tensor, read by the kernels."""
    return (alpha, 0.0) if isinstance(alpha, torch.Tensor) else (None, alpha)


def _check_alpha(alpha_t) -> None:
    """The values check of a tensor α, which sac._alpha_arg skips while compiling."""
    if alpha_t is not None and _checks.can_read(alpha_t):
        _checks.real("alpha", _checks.finite("alpha", alpha_t))


def _sac_problem(rewards, next_q, next_log_probs, log_probs, terminated, truncated, mask, gamma, lambda_, alpha_t,
                 gamma_f, lambda_f, alpha, time_dim):
    return _sac._Problem(rewards, tuple(next_q), next_log_probs, log_probs, _u8(terminated), _u8(truncated), _u8(mask),
                         gamma, lambda_, (gamma_f, lambda_f, alpha if alpha_t is None else alpha_t), time_dim)


@torch.library.custom_op(f"{NS}::sac_targets", mutates_args=(), schema=(
    f"({_SAC_TENSORS}, {_SAC_SCALARS}) -> Tensor"))
def _sac_targets_op(*args):
    p = _sac_problem(*args)
    _check_coefficients(p.gamma, p.lambda_)
    _check_alpha(args[9])
    if p.lambda_ is not None and _checks.can_read(p.lambda_):
        _sac._check_log_probs(p.log_probs, p.lambda_, p.params[1])
    return _sac._targets_forward(p)


@_sac_targets_op.register_fake
def _(*args):
    p = _sac_problem(*args)
    return _checks.new_output(p.rewards.shape, p.time_dim, _sac._dtype(p), p.rewards.device)


@torch.library.custom_op(f"{NS}::sac_targets_backward", mutates_args=(), schema=(
    f"(Tensor grad, {_SAC_TENSORS}, {_SAC_SCALARS}, bool[] need) -> (Tensor, Tensor, Tensor, Tensor[])"))
def _sac_targets_backward_op(grad, *args):
    p = _sac_problem(*args[:-1])
    d_r, d_lp, d_nlp, d_q = _sac._targets_backward(p, grad, args[-1])
    empty = lambda x: _empty(p.rewards) if x is None else x  # noqa: E731
    return empty(d_r), empty(d_lp), empty(d_nlp), [empty(x) for x in d_q]


@_sac_targets_backward_op.register_fake
def _(grad, *args):
    p, need = _sac_problem(*args[:-1]), args[-1]
    grad = lambda n, x: (_checks.new_output(p.rewards.shape, p.time_dim, x.dtype, x.device)  # noqa: E731
                         if n and x is not None else _empty(p.rewards))
    d_r, d_lp, d_nlp = (grad(n, x) for n, x in zip(need[:3], (p.rewards, p.log_probs, p.next_log_probs)))
    return d_r, d_lp, d_nlp, [grad(n, x) for n, x in zip(need[3:], p.next_q)]


def _sac_targets_setup(ctx, inputs, output):
    rewards, next_q, *tensors = inputs[:10]
    ctx.n_q = len(next_q)
    ctx.save_for_backward(rewards, *next_q, *tensors)
    ctx.scalars = inputs[10:]


def _sac_targets_backward(ctx, grad):
    saved = ctx.saved_tensors
    rewards, next_q, (next_log_probs, log_probs, *tensors) = saved[0], saved[1:1 + ctx.n_q], saved[1 + ctx.n_q:]
    n = ctx.needs_input_grad
    need = [n[0], n[3], n[2], *n[1]]  # (rewards, log_probs, next_log_probs, critics), as sac._targets_backward
    d_r, d_lp, d_nlp, d_q = _sac_targets_backward_op(grad, rewards, list(next_q), next_log_probs, log_probs,
                                                     *tensors, *ctx.scalars, need)
    return (_none(d_r, n[0]), [_none(d, k) for d, k in zip(d_q, n[1])], _none(d_nlp, n[2]),
            _none(d_lp, n[3] and log_probs is not None)) + (None,) * 10


_sac_targets_op.register_autograd(_sac_targets_backward, setup_context=_sac_targets_setup)


def sac_targets(p):
    """sac_targets's kernel path as the custom op."""
    alpha_t, alpha = _alpha_args(p.params[2])
    return _sac_targets_op(p.rewards, list(p.next_q), p.next_log_probs, p.log_probs, _const(p.terminated),
                           _const(p.truncated), _const(p.mask), _const(p.gamma), _const(p.lambda_), alpha_t,
                           p.params[0], p.params[1], alpha, p.time_dim)


# --------------------------------------------------------------------------------------------
# sac_actor_loss, sac_temperature_loss
# --------------------------------------------------------------------------------------------
@torch.library.custom_op(f"{NS}::sac_actor_loss", mutates_args=(), schema=(
    "(Tensor log_probs, Tensor[] q, Tensor? mask, float alpha, Tensor? alpha_t) -> (Tensor, Tensor)"))
def _sac_actor_op(log_probs, q, mask, alpha, alpha_t):
    """(loss, 1/N)."""
    _check_alpha(alpha_t)
    return _unaliased(*_sac._actor_forward(alpha if alpha_t is None else alpha_t, _u8(mask), log_probs, tuple(q)))


@_sac_actor_op.register_fake
def _(log_probs, q, mask, alpha, alpha_t):
    dtype = _checks.result_dtype(log_probs, *q)
    return log_probs.new_empty((), dtype=dtype), log_probs.new_empty((), dtype=_checks.acc_dtype(dtype))


@torch.library.custom_op(f"{NS}::sac_actor_loss_backward", mutates_args=(), schema=(
    "(Tensor grad, Tensor[] q, Tensor? mask, Tensor inv_n, float alpha, Tensor? alpha_t, int[] order, "
    "ScalarType lp_dtype, bool[] need) -> (Tensor, Tensor[])"))
def _sac_actor_backward_op(grad, q, mask, inv_n, alpha, alpha_t, order, lp_dtype, need):
    alpha = alpha if alpha_t is None else alpha_t
    d_lp, d_q = _sac._actor_backward(grad, alpha, _u8(mask), inv_n, tuple(q), _layout(order, q[0].shape), lp_dtype,
                                     need)
    empty = lambda x: _empty(inv_n) if x is None else x  # noqa: E731
    return empty(d_lp), [empty(x) for x in d_q]


@_sac_actor_backward_op.register_fake
def _(grad, q, mask, inv_n, alpha, alpha_t, order, lp_dtype, need):
    layout = _layout(order, q[0].shape)
    d_lp = layout.new(lp_dtype, inv_n.device) if need[0] else _empty(inv_n)
    return d_lp, [layout.new(x.dtype, x.device) if n else _empty(inv_n) for n, x in zip(need[1:], q)]


def _sac_actor_setup(ctx, inputs, output):
    log_probs, q, mask, alpha, alpha_t = inputs
    ctx.mark_non_differentiable(output[1])
    ctx.save_for_backward(mask, alpha_t, output[1], *q)
    ctx.alpha, ctx.order, ctx.lp_dtype = alpha, list(Layout.of(log_probs).order), log_probs.dtype


def _sac_actor_backward(ctx, grad, _d_inv_n):
    mask, alpha_t, inv_n, *q = ctx.saved_tensors
    n = ctx.needs_input_grad
    need = [n[0], *n[1]]
    d_lp, d_q = _sac_actor_backward_op(grad, q, mask, inv_n, ctx.alpha, alpha_t, ctx.order, ctx.lp_dtype, need)
    return _none(d_lp, n[0]), [_none(d, k) for d, k in zip(d_q, n[1])], None, None, None


_sac_actor_op.register_autograd(_sac_actor_backward, setup_context=_sac_actor_setup)


def sac_actor_loss(alpha: float, mask, log_probs, q):
    """sac_actor_loss's kernel path as the custom op."""
    alpha_t, alpha = _alpha_args(alpha)
    return _sac_actor_op(log_probs, list(q), _const(mask), alpha, alpha_t)[0]


@torch.library.custom_op(f"{NS}::sac_temperature_mean", mutates_args=(), schema=(
    "(Tensor log_probs, Tensor? mask, float target_entropy, Tensor? target_t) -> Tensor"))
def _sac_temperature_op(log_probs, mask, target_entropy, target_t):
    """mean(log π + H̄) over the unmasked elements: no gradient (log π is a constant). H̄ is
    ``target_t`` when given (a tensor, checked here at run time), else the number."""
    if target_t is not None and _checks.can_read(target_t):
        _checks.finite("target_entropy", target_t)
    return _sac._temperature_mean(log_probs, _u8(mask), target_entropy if target_t is None else target_t)


@_sac_temperature_op.register_fake
def _(log_probs, mask, target_entropy, target_t):
    return log_probs.new_empty((), dtype=_checks.acc_dtype(log_probs.dtype))


def sac_temperature_mean(log_probs, mask, target_entropy):
    """sac_temperature_loss's kernel path (the mean) as the custom op; ``target_entropy`` a
    float or a 0-d tensor."""
    target_t, target = _alpha_args(target_entropy)
    return _sac_temperature_op(log_probs.detach(), _const(mask), target, target_t)


# --------------------------------------------------------------------------------------------
# crr_loss
# --------------------------------------------------------------------------------------------
_CRR_SCALARS = "float beta, float max_weight, bool binary, bool use_max"


def _crr_problem(log_probs, q_values, baseline, mask, beta, max_weight, binary, use_max):
    return _crr._Problem(log_probs, q_values, baseline, _u8(mask), beta, max_weight, binary, use_max,
                        _checks.result_dtype(log_probs, q_values, baseline), _checks.result_dtype(q_values, baseline))


@torch.library.custom_op(f"{NS}::crr_loss", mutates_args=(), schema=(
    f"(Tensor log_probs, Tensor q_values, Tensor baseline, Tensor? mask, {_CRR_SCALARS}) "
    "-> (Tensor, Tensor, Tensor, Tensor)"))
def _crr_op(log_probs, *args):
    """(loss, weights, advantages, 1/N); ``baseline`` has the trailing dim of K samples."""
    return _unaliased(*_crr._forward(_crr_problem(log_probs, *args), Layout.of(log_probs)))


@_crr_op.register_fake
def _(log_probs, *args):
    p = _crr_problem(log_probs, *args)
    layout, device = Layout.of(log_probs), log_probs.device
    return (log_probs.new_empty((), dtype=p.dtype), layout.new(p.out_dtype, device), layout.new(p.out_dtype, device),
            log_probs.new_empty((), dtype=p.acc))


@torch.library.custom_op(f"{NS}::crr_loss_backward", mutates_args=(), schema=(
    "(Tensor grad, Tensor weights, Tensor? mask, Tensor inv_n, int[] order, ScalarType lp_dtype, "
    f"{_CRR_SCALARS}, int k) -> Tensor"))
def _crr_backward_op(grad, weights, mask, inv_n, order, lp_dtype, beta, max_weight, binary, use_max, k):
    params = (beta, max_weight, k, int(binary), int(use_max))  # crr._Problem.params
    return _crr._backward(grad, weights, _u8(mask), inv_n, _layout(order, weights.shape), lp_dtype, params)


@_crr_backward_op.register_fake
def _(grad, weights, mask, inv_n, order, lp_dtype, *args):
    return _layout(order, weights.shape).new(lp_dtype, weights.device)


def _crr_setup(ctx, inputs, output):
    log_probs, q_values, baseline, mask = inputs[:4]
    _, weights, advantages, inv_n = output
    ctx.mark_non_differentiable(weights, advantages, inv_n)
    ctx.save_for_backward(weights, mask, inv_n)
    ctx.order, ctx.lp_dtype = list(Layout.of(log_probs).order), log_probs.dtype
    ctx.scalars = (*inputs[4:], baseline.shape[-1])


def _crr_backward(ctx, grad, *_):
    weights, mask, inv_n = ctx.saved_tensors
    d_log_probs = _crr_backward_op(grad, weights, mask, inv_n, ctx.order, ctx.lp_dtype, *ctx.scalars)
    return (d_log_probs,) + (None,) * 7


_crr_op.register_autograd(_crr_backward, setup_context=_crr_setup)


def crr_loss(p):
    """crr_loss's kernel path as the custom op: (loss, weights, advantages)."""
    return _crr_op(p.log_probs, _const(p.q_values), _const(p.baseline), _const(p.mask), p.beta, p.max_weight,
                   p.binary, p.use_max)[:3]
