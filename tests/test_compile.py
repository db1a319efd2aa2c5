"""torch.compile, CUDA graphs and no-grad modes: the ``rltriton_lite::`` custom ops (each registered
beside its algorithm's autograd.Function; helpers in _ops.py).

While torch.compile traces, every public function routes its kernel path through a registered
custom op (fake implementation for shapes and strides, autograd through a backward op), so a
function calling it compiles with ``fullgraph=True``; eager calls keep their direct launch.

CPU (CI): ``backend="aot_eager"`` (no C++ code generation), the kernels under the Triton
interpreter: compiled outputs and gradients equal the eager ones bitwise, the torch path
compiles too, ``torch.library.opcheck`` passes on every op, and no-grad modes save nothing.
GPU (``-m gpu``, the H200): inductor with ``fullgraph=True`` (forward, forward + backward),
``mode="reduce-overhead"`` (CUDA graphs), and explicit CUDA-graph capture of eager calls
replayed on new inputs, all bitwise against eager.
"""
from __future__ import annotations

from unittest.mock import patch

import pytest
import torch
import torch._dynamo

import rltriton_lite as rl
from rltriton_lite import _ops

from conftest import DEVICE

OPS = torch.ops.rltriton_lite  # registered when rltriton_lite is imported


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


# --------------------------------------------------------------------------------------------
# Cases: a small function per public function, calling it between other torch ops
# --------------------------------------------------------------------------------------------
# Each case builds (fn, inputs, grad_of): fn(*inputs) returns (loss, *outputs) with loss a
# scalar; grad_of indexes the inputs to differentiate (made to require grad).
def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _randn(g, *shape):
    return torch.randn(*shape, generator=g).to(DEVICE)


def _flags(g, *shape, p=0.2):
    return (torch.rand(*shape, generator=g) < p).to(DEVICE)


def _linear_scan(backend):
    g = _gen(0)
    a = (torch.rand(2, 7, generator=g) * 0.5 + 0.5).to(DEVICE)
    b, init = _randn(g, 2, 7), _randn(g, 2)
    mask = ~_flags(g, 2, 7)

    def fn(a, b, init, mask):
        y = rl.linear_scan(a * 1.0, b, initial=init, mask=mask, backend=backend)
        z = rl.linear_scan(a, y, reverse=False, backend=backend)
        return (z * z).sum(), y, z
    return fn, (a, b, init, mask), (0, 1, 2)


def _discounted_returns(backend):
    g = _gen(1)
    r, nv = _randn(g, 2, 7), _randn(g, 2, 7)
    term, trunc, mask = _flags(g, 2, 7), _flags(g, 2, 7), ~_flags(g, 2, 7, p=0.1)
    gamma = (torch.rand(2, 7, generator=g) * 0.2 + 0.8).to(DEVICE)  # a per-step discount tensor

    def fn(r, nv, term, trunc, mask, gamma):
        out = rl.discounted_returns(r + 1.0, gamma=gamma, terminated=term, truncated=trunc, next_values=nv,
                                    mask=mask, backend=backend)
        return (out * out).sum(), out
    return fn, (r, nv, term, trunc, mask, gamma), (0, 1)


def _gae(backend):
    g = _gen(2)
    r, v, boot = _randn(g, 7, 3), _randn(g, 7, 3), _randn(g, 3)  # time-major
    term, mask = _flags(g, 7, 3), ~_flags(g, 7, 3, p=0.1)

    def fn(r, v, boot, term, mask):
        adv, ret = rl.gae(r, v, gamma=0.9, lambda_=0.8, terminated=term, bootstrap_value=boot, mask=mask,
                          time_dim=0, backend=backend)
        return (adv * adv).sum() + (ret * v).sum(), adv, ret
    return fn, (r, v, boot, term, mask), (0, 1, 2)


def _td_lambda(backend):
    g = _gen(3)
    r, nv = _randn(g, 2, 7, 3), _randn(g, 2, 7, 3)  # time in the middle
    trunc = _flags(g, 2, 7, 3)
    lam = (torch.rand(7, 1, generator=g) * 0.5 + 0.5).to(DEVICE)  # broadcast per step

    def fn(r, nv, trunc, lam):
        out = rl.td_lambda(r, nv, gamma=0.95, lambda_=lam, truncated=trunc, time_dim=1, backend=backend)
        return (out.sin()).sum(), out
    return fn, (r, nv, trunc, lam), (0, 1)


def _vtrace(backend):
    g = _gen(4)
    log_rhos, r, v, nv = (_randn(g, 2, 7) for _ in range(4))
    term, trunc, mask = _flags(g, 2, 7), _flags(g, 2, 7), ~_flags(g, 2, 7, p=0.1)

    def fn(log_rhos, r, v, nv, term, trunc, mask):
        vs, pg = rl.vtrace(log_rhos, r, v, gamma=0.9, lambda_=0.9, rho_bar=1.5, terminated=term, truncated=trunc,
                           next_values=nv, mask=mask, backend=backend)
        return (vs * vs).sum() + (pg * r).sum(), vs, pg
    return fn, (log_rhos, r, v, nv, term, trunc, mask), (1, 2, 3)


def _ppo(backend, reduction="mean"):
    g = _gen(5)
    lp, old, adv = _randn(g, 3, 5) * 0.3, _randn(g, 3, 5) * 0.3, _randn(g, 3, 5)
    mask = ~_flags(g, 3, 5, p=0.1)

    def fn(lp, old, adv, mask):
        loss, clip_fraction, approx_kl = rl.ppo_clip_loss(lp, old, adv, epsilon=(0.2, 0.28), normalize_advantages=True,
                                                          mask=mask, reduction=reduction, backend=backend)
        return loss.sum() * 2, loss, clip_fraction, approx_kl
    return fn, (lp, old, adv, mask), (0,)


def _sac_targets(backend):
    g = _gen(6)
    r, q1, q2, nlp, lp = (_randn(g, 2, 7) for _ in range(5))
    term, mask = _flags(g, 2, 7), ~_flags(g, 2, 7, p=0.1)
    alpha = torch.tensor([0.3], device=DEVICE)  # a tensor α (SB3's): the kernel reads it, no .item()

    def fn(r, q1, q2, nlp, lp, term, mask, alpha):
        out = rl.sac_targets(r, [q1, q2], nlp, gamma=0.9, alpha=alpha, lambda_=0.5, log_probs=lp, terminated=term,
                             mask=mask, backend=backend)
        return (out * out).sum(), out
    return fn, (r, q1, q2, nlp, lp, term, mask, alpha), (0, 1, 2, 3, 4)


def _sac_actor_loss(backend):
    g = _gen(7)
    lp, q1, q2 = (_randn(g, 4, 3) for _ in range(3))
    mask = ~_flags(g, 4, 3)

    def fn(lp, q1, q2, mask):
        loss = rl.sac_actor_loss(lp, (q1, q2), alpha=0.2, mask=mask, backend=backend)
        return loss * 3, loss
    return fn, (lp, q1, q2, mask), (0, 1, 2)


def _sac_temperature_loss(backend):
    g = _gen(8)
    log_alpha, lp = _randn(g, 1), _randn(g, 4, 3)
    mask = ~_flags(g, 4, 3)

    def fn(log_alpha, lp, mask):
        loss = rl.sac_temperature_loss(log_alpha, lp, -2.0, mask=mask, backend=backend)
        return loss * 3, loss
    return fn, (log_alpha, lp, mask), (0,)


def _sac_temperature_loss_tensor_target(backend):
    """The target entropy as a tensor (e.g. -prod(action shape) kept on the device): it stays
    a tensor the kernel reads, no .item() and no graph break."""
    g = _gen(9)
    log_alpha, lp = _randn(g, 1), _randn(g, 4, 3)
    target = torch.tensor(-2.0, device=DEVICE)

    def fn(log_alpha, lp):
        return (rl.sac_temperature_loss(log_alpha, lp, target, backend=backend),)
    return fn, (log_alpha, lp), (0,)


def _crr(backend):
    g = _gen(9)
    lp, q, base = _randn(g, 3, 4), _randn(g, 3, 4), _randn(g, 3, 4, 5)  # K = 5 sampled actions
    mask = ~_flags(g, 3, 4)

    def fn(lp, q, base, mask):
        loss, w, adv = rl.crr_loss(lp, q, base, beta=0.8, max_weight=5.0, baseline_reduce="max", mask=mask,
                                   backend=backend)
        return loss * 2, loss, w, adv
    return fn, (lp, q, base, mask), (0,)


CASES = {
    "linear_scan": _linear_scan, "discounted_returns": _discounted_returns, "gae": _gae,
    "td_lambda": _td_lambda, "vtrace": _vtrace, "ppo_clip_loss": _ppo,
    "ppo_clip_loss_none": lambda backend: _ppo(backend, "none"), "sac_targets": _sac_targets,
    "sac_actor_loss": _sac_actor_loss, "sac_temperature_loss": _sac_temperature_loss,
    "sac_temperature_loss_tensor_target": _sac_temperature_loss_tensor_target, "crr_loss": _crr,
}


def _prepare(case, backend="triton"):
    fn, inputs, grad_of = CASES[case](backend)
    inputs = tuple(x.detach().clone().requires_grad_(i in grad_of) for i, x in enumerate(inputs))
    return fn, inputs, [inputs[i] for i in grad_of]


def _run(fn, inputs, wrt, backward=True):
    outs = fn(*inputs)
    grads = torch.autograd.grad(outs[0], wrt) if backward else ()
    return outs, grads


def _assert_same(actual, expected, exact=True):
    for x, y in zip(actual, expected):
        assert x.shape == y.shape and x.dtype == y.dtype
        assert x.requires_grad == y.requires_grad
        if exact:
            assert torch.equal(x, y), (x, y)
        else:
            torch.testing.assert_close(x, y, rtol=1e-6, atol=1e-6)


def _perturbed(inputs, seed):
    """New values of the same kind: floats shrunk by up to 10% (ranges such as gamma's kept),
    flags as they were."""
    g = torch.Generator().manual_seed(seed)
    return tuple((x.detach() * (1 - 0.1 * torch.rand(x.shape, generator=g).to(x.device))).requires_grad_(x.requires_grad)
                 if x.is_floating_point() else x for x in inputs)


def _check_compiled(case, backend="triton", compile_backend="aot_eager", exact=True, backward=True, **options):
    fn, inputs, wrt = _prepare(case, backend)
    compiled = torch.compile(fn, fullgraph=True, backend=compile_backend, **options)
    calls = 4 if options.get("mode") == "reduce-overhead" else 2  # (warm-up, record,) replays
    for call in range(calls):
        if call:
            inputs = _perturbed(inputs, call)
            wrt = [x for x in inputs if x.requires_grad]
        expected, expected_grads = _run(fn, inputs, wrt, backward)
        with torch._dynamo.config.patch(error_on_recompile=call > 0):  # new values: no recompilation
            outs, grads = _run(compiled, inputs, wrt, backward)
        _assert_same(outs, expected, exact)
        _assert_same(grads, expected_grads, exact)
        for x, y in zip(outs, expected):  # the fake implementations' strides are the real ones
            assert x.stride() == y.stride() or x.numel() <= 1


# --------------------------------------------------------------------------------------------
# CPU: aot_eager, fullgraph
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", list(CASES))
def test_compiled_matches_eager(case):
    """fullgraph=True (no graph break), outputs and gradients bitwise equal to eager; new
    values do not recompile."""
    _check_compiled(case)


@pytest.mark.parametrize("case", ["linear_scan", "td_lambda", "ppo_clip_loss_none", "sac_targets", "crr_loss"])
def test_compiled_dynamic_shapes(case):
    """Symbolic sizes (dynamic=True): the fake implementations and Layout work on SymInts."""
    _check_compiled(case, dynamic=True)


@pytest.mark.parametrize("case", ["gae", "ppo_clip_loss", "sac_targets", "crr_loss"])
def test_torch_path_compiles(case):
    """backend="torch" is plain torch: dynamo traces it whole."""
    _check_compiled(case, backend="torch", exact=False)


def test_one_graph_per_function():
    """The custom ops are in the graph (no graph break, no fallback to eager)."""
    fn, inputs, wrt = _prepare("gae")
    explanation = torch._dynamo.explain(fn)(*inputs)
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1
    graph = explanation.graphs[0]
    assert any("rltriton_lite.gae" in str(node.target) for node in graph.graph.nodes)


def test_tensor_gamma_checked_at_run_time():
    """The range check of a gamma tensor reads values: while compiling it moves into the op (the
    kernel path; on a CPU "auto" would trace the torch path, which has no op)."""
    def fn(r, gamma):
        return rl.discounted_returns(r, gamma=gamma, backend="triton")
    compiled = torch.compile(fn, fullgraph=True, backend="aot_eager")
    r = torch.randn(2, 5, device=DEVICE)
    gamma = torch.full((2, 5), 0.9, device=DEVICE)
    assert torch.equal(compiled(r, gamma), fn(r, gamma))
    with pytest.raises(ValueError, match=r"gamma must lie in \[0, 1\]"):
        compiled(r, gamma + 0.5)


@pytest.mark.parametrize("fn", ["sac_targets", "sac_actor_loss"])
def test_tensor_alpha_checked_at_run_time(fn):
    """A tensor α is read by the kernel (no .item(), no graph break); its check runs in the op."""
    call = {"sac_targets": lambda x, alpha: rl.sac_targets(x, x, x, alpha=alpha, backend="triton"),
            "sac_actor_loss": lambda x, alpha: rl.sac_actor_loss(x, x, alpha=alpha, backend="triton")}[fn]
    compiled = torch.compile(call, fullgraph=True, backend="aot_eager")
    x = torch.randn(2, 5, device=DEVICE)
    alpha = torch.tensor(0.25, device=DEVICE)
    assert torch.equal(compiled(x, alpha), call(x, 0.25))
    with pytest.raises(ValueError, match="alpha must be >= 0"):
        compiled(x, -alpha)
    with pytest.raises(ValueError, match="alpha must be finite"):
        compiled(x, alpha / 0)


def test_sac_lambda_tensor_needs_log_probs_at_run_time():
    def fn(r, q, nlp, lam):
        return rl.sac_targets(r, q, nlp, lambda_=lam, backend="triton")
    compiled = torch.compile(fn, fullgraph=True, backend="aot_eager")
    r, q, nlp = (torch.randn(2, 5, device=DEVICE) for _ in range(3))
    zero = torch.zeros(2, 5, device=DEVICE)
    assert torch.equal(compiled(r, q, nlp, zero), fn(r, q, nlp, zero))
    with pytest.raises(ValueError, match="lambda_ > 0 needs log_probs"):
        compiled(r, q, nlp, zero + 0.5)


# --------------------------------------------------------------------------------------------
# no_grad / inference_mode: no autograd graph, nothing saved
# --------------------------------------------------------------------------------------------
class _CountSaved:
    def __init__(self):
        self.n = 0

    def __enter__(self):
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda x: x)
        self._hooks.__enter__()
        return self

    def _pack(self, x):
        self.n += 1
        return x

    def __exit__(self, *exc):
        self._hooks.__exit__(*exc)


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
@pytest.mark.parametrize("case", list(CASES))
def test_no_grad_saves_nothing(case, mode):
    fn, inputs, wrt = _prepare(case)
    expected = fn(*inputs)
    context = torch.no_grad if mode == "no_grad" else torch.inference_mode
    with context(), _CountSaved() as saved:
        outs = fn(*inputs)
    assert saved.n == 0
    for x, y in zip(outs, expected):
        assert x.grad_fn is None and not x.requires_grad
        assert torch.equal(x, y)


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
@pytest.mark.parametrize("case", ["linear_scan", "gae", "ppo_clip_loss", "sac_actor_loss"])
def test_no_grad_compiled(case, mode):
    """Compiled under no_grad / inference_mode: an inference graph (the ops' autograd is not
    entered, nothing is saved), outputs without grad_fn."""
    fn, inputs, wrt = _prepare(case)
    expected = fn(*inputs)
    compiled = torch.compile(fn, fullgraph=True, backend="aot_eager")
    with torch.no_grad() if mode == "no_grad" else torch.inference_mode(), _CountSaved() as saved:
        outs = compiled(*inputs)
    assert saved.n == 0
    for x, y in zip(outs, expected):
        assert x.grad_fn is None
        assert torch.equal(x, y)


def test_grad_mode_saves_for_backward():
    """The saved-tensor count above is meaningful: with grad, PPO's autograd saves its inputs."""
    fn, inputs, wrt = _prepare("ppo_clip_loss")
    with _CountSaved() as saved:
        fn(*inputs)
    assert saved.n > 0


# --------------------------------------------------------------------------------------------
# opcheck: schema, fake tensors, autograd registration, AOT dispatch (static and dynamic shapes)
# --------------------------------------------------------------------------------------------
def _opcheck_calls():
    """Public calls exercising each op's optional tensors: (name, call), ``call()`` making one
    kernel call, its differentiable inputs requiring grad."""
    g = _gen(10)
    f = lambda *s: _randn(g, *s).requires_grad_()  # noqa: E731
    flag = lambda *s: _flags(g, *s).view(torch.uint8)  # noqa: E731
    r, v, nv, lr = f(2, 6), f(2, 6), f(2, 6), _randn(g, 2, 6)
    term, trunc, mask = flag(2, 6), flag(2, 6), (~_flags(g, 2, 6, p=0.1)).view(torch.uint8)
    gamma = torch.full((2, 6), 0.9, device=DEVICE)
    a = (torch.rand(2, 6, generator=g) * 0.5 + 0.5).to(DEVICE).requires_grad_()
    tm = lambda x: x.t()  # noqa: E731 (time-major)
    alpha = torch.tensor(0.3, device=DEVICE)
    yield "linear_scan", lambda: rl.linear_scan(a, r, initial=f(2), mask=mask)
    yield "gae", lambda: rl.gae(tm(r), tm(v), bootstrap_value=f(2), terminated=tm(term), mask=tm(mask), gamma=0.9,
                                lambda_=0.8, time_dim=0)
    yield "gae", lambda: rl.gae(r, v, next_values=nv, terminated=term.bool(), truncated=trunc.bool(),
                                mask=mask.bool(), gamma=gamma, lambda_=gamma)
    yield "discounted_returns", lambda: rl.discounted_returns(r, next_values=nv, terminated=term, truncated=trunc,
                                                              mask=mask, gamma=gamma)
    yield "td_lambda", lambda: rl.td_lambda(r, nv, terminated=term, truncated=trunc, lambda_=gamma, gamma=0.9)
    yield "vtrace", lambda: rl.vtrace(lr, r, v, bootstrap_value=f(2), terminated=term, mask=mask, gamma=0.9)
    yield "ppo_clip_loss", lambda: rl.ppo_clip_loss(lr * 0.1, r.detach() * 0.1, v.detach(), mask=mask,
                                                    normalize_advantages=True)
    yield "ppo_clip_loss", lambda: rl.ppo_clip_loss(f(2, 6), r.detach() * 0.1, v.detach(), reduction="none")
    yield "sac_targets", lambda: rl.sac_targets(r, [v, nv], f(2, 6), log_probs=f(2, 6), terminated=term, mask=mask,
                                                gamma=0.9, lambda_=0.5)
    yield "sac_targets", lambda: rl.sac_targets(r, [v], f(2, 6), truncated=trunc, gamma=gamma, alpha=alpha,
                                                lambda_=0.0)
    yield "sac_actor_loss", lambda: rl.sac_actor_loss(r, [v, nv], mask=mask, alpha=0.2)
    yield "sac_actor_loss", lambda: rl.sac_actor_loss(r, [v], alpha=alpha)
    log_alpha = torch.zeros(1, device=DEVICE)
    yield "sac_temperature_mean", lambda: rl.sac_temperature_loss(log_alpha, r, -1.0, mask=mask)
    yield "sac_temperature_mean", lambda: rl.sac_temperature_loss(log_alpha, r, torch.tensor(-1.5, device=DEVICE))
    yield "crr_loss", lambda: rl.crr_loss(f(2, 6), v.detach(), _randn(g, 2, 6, 3), mask=mask)
    yield "crr_loss", lambda: rl.crr_loss(f(2, 6), v.detach(), _randn(g, 2, 6), need_weights=False)


def _opcheck_samples():
    """(op, args) for each op: the forward op with the call's tensors and static fields, and the
    backward op with gradients for its differentiable outputs."""
    for name, call in _opcheck_calls():
        seen = []
        run = _ops.Kernels.__call__

        def record(kernels, p, *args):
            seen.append((kernels, p))
            return run(kernels, p, *args)
        with patch.object(_ops.Kernels, "__call__", record):
            call()
        (kernels, p), = seen
        tensors, static = kernels.split(p)
        # leaves: validation may derive an input (a mask's gathered next_values) from another
        tensors = [x.detach().requires_grad_(x.requires_grad) for x in tensors]
        yield kernels.op, (tensors, static)
        if kernels.backward is not None:
            outs, saved = kernels.forward(p)
            n = len(outs) if kernels.differentiable is None else kernels.differentiable
            grads = [torch.randn_like(o) for o in outs[:n]]
            saved = list(outs if kernels.saves_outputs else ()) + list(saved)
            saved = [tensors[0].new_empty(0) if x is None else x.detach() for x in saved]  # as the op returns them
            need = [x.requires_grad for x in tensors]
            yield kernels.backward_op, (grads, [x.detach() for x in tensors], saved, static, need)


SAMPLES = list(_opcheck_samples())


@pytest.mark.parametrize("op, args", SAMPLES, ids=[f"{op._qualname.split('::')[1]}-{i}" for i, (op, _) in
                                                  enumerate(SAMPLES)])
def test_opcheck(op, args):
    torch.library.opcheck(op, args)


def test_every_op_checked():
    checked = {op._qualname for op, _ in SAMPLES}
    registered = {f"rltriton_lite::{name}" for name in dir(OPS) if not name.startswith("_") and name != "name"}
    assert checked == registered


# --------------------------------------------------------------------------------------------
# GPU: inductor, CUDA graphs
# --------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("backward", [False, True], ids=["fwd", "fwd+bwd"])
@pytest.mark.parametrize("case", list(CASES))
def test_inductor_fullgraph(case, backward):
    """Inductor compiles the surrounding ops; the kernels run as the custom ops. The ops
    between them may fuse differently from eager, hence a tolerance."""
    _check_compiled(case, compile_backend="inductor", exact=False, backward=backward)


@pytest.mark.gpu
@pytest.mark.parametrize("case", list(CASES))
def test_inductor_reduce_overhead(case):
    """mode="reduce-overhead": the compiled graphs (custom ops included) run as CUDA graphs,
    recorded and replayed, none skipped."""
    from torch._dynamo.utils import counters

    counters.clear()
    _check_compiled(case, compile_backend="inductor", exact=False, mode="reduce-overhead")
    assert counters["inductor"]["cudagraph_skips"] == 0


@pytest.mark.gpu
@pytest.mark.parametrize("case", list(CASES))
def test_cuda_graph_capture_eager(case):
    """Eager calls captured in a CUDA graph: replaying on new values copied into the static
    inputs gives the eager results bitwise (forward; forward + backward for gae)."""
    fn, inputs, wrt = _prepare(case)
    backward = case == "gae"
    static = tuple(x.detach().clone().requires_grad_(x.requires_grad) for x in inputs)
    static_wrt = [s for s, x in zip(static, inputs) if x.requires_grad]
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm up (kernels compiled and cached) outside the capture
        for _ in range(2):
            _run(fn, static, static_wrt, backward)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outs, grads = _run(fn, static, static_wrt, backward)
    for seed in (1, 2):
        fresh = _perturbed(inputs, seed)
        with torch.no_grad():
            for s, x in zip(static, fresh):
                s.copy_(x)
        graph.replay()
        torch.cuda.synchronize()
        expected, expected_grads = _run(fn, tuple(fresh), [x for x in fresh if x.requires_grad], backward)
        for x, y in zip(outs, expected):
            assert torch.equal(x, y)
        for x, y in zip(grads, expected_grads):
            assert torch.equal(x, y)


@pytest.mark.gpu
def test_cuda_graph_capture_float64():
    """float64 problems pass their coefficients (gamma, lambda, V-trace's clips, PPO's bounds)
    as tensors made by fill kernels, so they can be captured too: replay equals eager bitwise."""
    g = torch.Generator(device="cuda").manual_seed(0)
    B, T = 8, 300
    x = [torch.randn(B, T, device="cuda", dtype=torch.float64, generator=g) for _ in range(3)]
    term = torch.rand(B, T, device="cuda", generator=g) < 0.05

    def fn(r, v, lr):
        adv, ret = rl.gae(r, v, terminated=term)
        vs, pg = rl.vtrace(lr, r, v, terminated=term)
        return adv, ret, vs, pg, rl.ppo_clip_loss(lr, v, r).loss

    static = [t.clone() for t in x]
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn(*static)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outs = fn(*static)
    fresh = [torch.randn_like(t) for t in x]
    for s, f in zip(static, fresh):
        s.copy_(f)
    graph.replay()
    torch.cuda.synchronize()
    for o, e in zip(outs, fn(*fresh)):
        assert torch.equal(o, e)


def test_inductor_compiles_the_torch_scan_time_major():
    """The default backend (inductor; C++ on a CPU) on a time-major rollout wide enough to
    vectorize. Every scan-based function runs the torch path's one ``scan``, which once held an
    F.pad of a bool tensor that inductor's CPU code generation failed to compile (gae here, with
    every flag and a mask: one function compiles that ``scan``; with linear_scan beside it a cold
    compile took 35 s against 26; the losses have no scan). Nine steps: four rounds of the log-step
    scan, each shifting its flags (where an F.pad of a bool failed), in a graph a third smaller than forty steps'."""
    T, N = 9, 16
    g = torch.Generator().manual_seed(0)
    r, v, nv = (torch.randn(T, N, generator=g).to(DEVICE) for _ in range(3))
    term, trunc, mask = ((torch.rand(T, N, generator=g) < p).to(DEVICE) for p in (0.1, 0.1, 0.9))

    def scans(r, v, nv, term, trunc, mask):
        return (rl.gae(r, v, next_values=nv, terminated=term, truncated=trunc, mask=mask, time_dim=0).advantages,)

    torch._dynamo.reset()
    compiled = torch.compile(scans, fullgraph=True)
    for got, want in zip(compiled(r, v, nv, term, trunc, mask), scans(r, v, nv, term, trunc, mask)):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
