"""The benchmark harness's logic that needs no GPU: row schema and floors, byte counts, the
error check, the anchors (their kernels under the Triton interpreter on a CPU), the peers'
adapters (the ones that run on a CPU; torchrl, JAX and accelerated-scan only where installed,
rl-triton where tools/fetch_peers.sh exported it), a small sweep on the CPU, and the report
(markdown and plots) from a result JSON."""
import importlib.abc
import importlib.machinery
import json
import math
import sys
import traceback
from pathlib import Path

import pytest
import torch

import rltriton_lite as rl
from rltriton_lite import bench, profile, reference

ROOT = Path(__file__).resolve().parent.parent
ROW_KEYS = {"algorithm", "impl", "B", "T", "dtype", "pass", "ms", "floor_ms", "pct_floor", "full_call_us", "kernel_ms",
            "max_rel_err", "tol", "checked_against", "timer", "bytes"}


def inputs(name, B=3, T=40, device="cpu"):
    op = bench._op(name)
    return op.make(B, T, torch.float32, device, torch.Generator().manual_seed(0)), op.defaults


def peer(impl):
    return next(p for p in bench.PEERS if p.impl == impl)


# ------------------------------------------------------------------------------------------
# Rows, floors, byte counts, errors
# ------------------------------------------------------------------------------------------
def test_row_schema_and_floor():
    row = bench.make_row("gae", "rltriton_lite", 4, 8, torch.bfloat16, "fwd", 0.5, 10**9, 4e12, full_call_us=12.0,
                         kernel=0.25, err=1e-3, checked_against="reference")
    assert set(row) == ROW_KEYS
    assert row["dtype"] == "bfloat16" and row["tol"] == bench.TOLERANCE["bfloat16"]
    assert row["floor_ms"] == pytest.approx(10**9 / 4e12 * 1e3)  # bytes / bandwidth, in ms
    assert row["pct_floor"] == pytest.approx(100 * row["floor_ms"] / 0.5)
    json.dumps(row)  # serialisable as is


def test_byte_counts():
    """Forward bytes come from profile.ops(); forward + backward adds the backward's own reads
    and writes (benchmarks/README.md: GAE fwd+bwd is 34 bytes per element in fp32)."""
    assert set(bench.BACKWARD) == set(bench.ALGORITHMS) == set(profile.ops()) | {"linear_scan"}
    per_elem = {name: bench.BACKWARD[name][1](4) for name in bench.ALGORITHMS}
    assert per_elem == {"discounted_return": 18, "gae": 34, "td_lambda": 26, "vtrace": 42, "sac": 50, "ppo": 28,
                        "crr": 24, "linear_scan": 32}
    assert bench._op("linear_scan").bytes_per_step(4) == 12  # a, b → y
    for name in ("discounted_return", "gae", "td_lambda", "crr"):  # their backward mirrors the forward
        assert bench.BACKWARD[name][1](4) == 2 * profile.op(name).bytes_per_step(4)
    for name, (leaves, _) in bench.BACKWARD.items():
        assert set(leaves) <= set(inputs(name, 2, 4)[0])


def test_max_rel_err():
    e = torch.tensor([0.5, -4.0])
    assert bench.max_rel_err([e + 0.04], [e]) == pytest.approx(0.01)  # relative to max |expected| = 4
    assert bench.max_rel_err([torch.tensor([0.1])], [torch.tensor([0.0])]) == pytest.approx(0.1)  # to at least 1
    assert bench.max_rel_err([None], [e]) == pytest.approx(1.0)  # an unused gradient counts as zeros
    assert math.isnan(bench.max_rel_err([e, torch.tensor([math.nan])], [e, torch.tensor([1.0])]))


def test_flags_and_console_lines():
    ok = bench.make_row("gae", "jax", 2, 8, torch.float32, "fwd", 1.0, 64, 1e9, err=1e-6, checked_against="rltriton_lite")
    bad = dict(ok, max_rel_err=4.5e-4)
    nan = dict(ok, max_rel_err=math.nan)
    unchecked = dict(nan, checked_against=None)
    assert [bench._flagged(r) for r in (ok, bad, nan, unchecked)] == [False, True, True, False]
    assert bench.format_row(bad).endswith("!") and "—" in bench.format_row(unchecked)
    assert "skipped: why" in bench.format_skip(dict(ok, reason="why"))


# ------------------------------------------------------------------------------------------
# Anchors: their kernels (interpreted on a CPU) against the reference and ppo_clip_loss
# ------------------------------------------------------------------------------------------
def test_bare_launch_anchor_matches_the_reference(device):
    """The naive GAE kernel (one program per row, a loop over time) at a tiny size, with
    terminations at 15 %, bool and float flags."""
    g = torch.Generator().manual_seed(3)
    B, T = 3, 40
    r, v, boot = (torch.randn(*shape, generator=g) for shape in ((B, T), (B, T), (B,)))
    term = torch.rand(B, T, generator=g) < 0.15
    term[0, T - 1] = term[1, 0] = True  # at the window's end (no bootstrap) and at its start
    expected, _ = reference.gae(r.double().numpy(), v.double().numpy(), gamma=0.99, lambda_=0.95,
                                terminated=term.numpy(), bootstrap_value=boot.double().numpy())
    for flags in (term, term.float()):
        adv = bench.bare_gae(*(t.to(device) for t in (r, v, flags, boot)), 0.99, 0.95)
        assert adv.shape == r.shape and adv.dtype == torch.float32
        assert profile.rel_err(adv, expected) < 1e-5


def test_minimal_autograd_anchor_matches_ppo_clip_loss(device):
    """Loss and gradient of the autograd.Function anchor against rltriton_lite.ppo_clip_loss
    (torch backend), with ratios on both sides of the clip range and advantages of both signs."""
    g = torch.Generator().manual_seed(4)
    log_probs, old, adv = (torch.randn(5, 37, generator=g).to(device) for _ in range(3))
    for eps in (0.2, 0.05):
        mine = log_probs.clone().requires_grad_()
        loss = bench.minimal_ppo_loss(mine, old, adv, eps)
        theirs = log_probs.clone().requires_grad_()
        expected = rl.ppo_clip_loss(theirs, old, adv, epsilon=eps, backend="torch").loss
        assert loss.shape == () and loss.item() == pytest.approx(expected.item(), rel=1e-6, abs=1e-7)
        (grad,), (expected_grad,) = torch.autograd.grad(loss, mine), torch.autograd.grad(expected, theirs)
        assert (expected_grad == 0).any() and (expected_grad != 0).any()  # both branches taken
        torch.testing.assert_close(grad, expected_grad, rtol=1e-5, atol=1e-8)


def test_anchors_as_rows():
    """They run beside ours whatever --peers says, each for one algorithm; the launch anchor
    forwards only, up to T = 16384."""
    bare, auto = bench.ANCHORS
    assert (bare.impl, auto.impl) == (bench.BARE_LAUNCH, bench.MINIMAL_AUTOGRAD) == ("bare_triton_launch",
                                                                                     "minimal_autograd_fn")
    assert list(bare.algorithms) == ["gae"] and list(auto.algorithms) == ["ppo"]
    assert bare.skip_reason("gae", 64, 16384, "float32", "fwd") is None
    assert "16384" in bare.skip_reason("gae", 8, 131072, "float32", "fwd")
    assert bare.skip_reason("gae", 64, 128, "float32", "fwd+bwd") == "forward only"
    assert auto.skip_reason("ppo", 1, 1048576, "float32", "fwd+bwd") is None
    assert {p.impl for p in bench.PEERS}.isdisjoint({bare.impl, auto.impl})


# ------------------------------------------------------------------------------------------
# Peers' adapters
# ------------------------------------------------------------------------------------------
def _reverse_scan(a, b):
    y, out = torch.zeros_like(b[:, 0]), torch.empty_like(b)
    for t in reversed(range(b.shape[1])):
        y = b[:, t] + a[:, t] * y
        out[:, t] = y
    return out


@pytest.mark.parametrize("name", bench.SCANS)
def test_scan_terms_match_the_reference(name):
    """The (a, b, finish) form that accelerated-scan and the JAX adapter run, against the float64
    reference loops (all outputs: V-trace's advantages too)."""
    x, p = inputs(name)
    a, b, finish = bench.scan_terms(name, x, p)
    outs = finish(_reverse_scan(a, b))
    expected = profile.op(name).reference(profile.as_numpy(x), p)
    assert profile.rel_err(outs[0], expected) < 1e-5
    if name == "vtrace":
        import rltriton_lite as rl

        pg = rl.vtrace(x["log_rhos"], x["rewards"], x["values"], gamma=p["gamma"], lambda_=p["lambda_"],
                       terminated=x["terminated"], next_values=x["next_values"], backend="torch").pg_advantages
        assert bench.max_rel_err(outs[1:], [pg]) < 1e-5


def test_tied_next_values():
    x, _ = inputs("gae", 2, 5)
    tied = bench.tie_next_values("gae", x)
    torch.testing.assert_close(tied["next_values"], x["next_values"])  # the rollout's V' is V shifted
    assert bench.tie_next_values("td_lambda", x) is x


@pytest.mark.parametrize("name", bench.ALGORITHMS)
def test_pytorch_peers_agree_with_the_reference(name):
    """The loop (with V-trace's advantages added) and the eager formulas return the outputs in
    rltriton_lite's order."""
    x, p = inputs(name)
    impl = "pytorch_loop" if name in bench.SCANS else "pytorch_eager"
    outs = peer(impl).build(name, x, p)(x)
    assert len(outs) == {"gae": 2, "vtrace": 2}.get(name, 1)
    assert profile.rel_err(outs[0], bench._op(name).reference(profile.as_numpy(x), p)) < 1e-5  # linear_scan: its loop


def test_torch_compile_peer(monkeypatch):
    """Same tracing as on the GPU, without code generation (backend "eager")."""
    monkeypatch.setattr(bench, "COMPILE_BACKEND", "eager")
    x, p = inputs("ppo")
    fn = peer("torch_compile").build("ppo", x, p)
    assert fn is peer("torch_compile").build("ppo", x, p)  # compiled once, reused across shapes
    assert profile.rel_err(fn(x)[0], profile.op("ppo").reference(profile.as_numpy(x), p)) < 1e-6


def test_peer_limits():
    loop = peer("pytorch_loop")
    assert loop.skip_reason("gae", 8, 128, "float32", "fwd") is None
    assert "float32 only" in loop.skip_reason("gae", 8, 128, "bfloat16", "fwd")
    assert "16384" in loop.skip_reason("gae", 8, 131072, "float32", "fwd")
    assert "1024" in loop.skip_reason("gae", 64, 16384, "float32", "fwd+bwd")
    assert peer("jax").skip_reason("gae", 8, 128, "float32", "fwd+bwd") == "forward only"
    warp = peer("accelerated_scan_warp")
    assert warp.skip_reason("gae", 8, 1024, "float32", "fwd") is None
    assert "power of two" in warp.skip_reason("gae", 8, 131072, "float32", "fwd")
    assert "power of two" in warp.skip_reason("gae", 8, 100, "float32", "fwd")


def test_find_peers_reports_each(device):
    found, status = bench.find_peers(None, device)
    default = [p.impl for p in bench.PEERS if p.default]
    assert list(status) == default and "accelerated_scan_warp" not in status
    assert {p.impl for p in found} >= {"pytorch_loop", "pytorch_eager", "torch_compile"}
    for impl in set(default) - {p.impl for p in found}:
        assert "not found" in status[impl] or f"not on {device}" in status[impl]
    assert bench.find_peers([], "cpu") == ([], {})
    with pytest.raises(ValueError, match="unknown peers"):
        bench.find_peers(["numba"], "cpu")


def _check_optional(impl, module, device):
    pytest.importorskip(module, reason=f"{module} is an optional peer, not installed here")
    found, status = bench.find_peers([impl], device)
    assert found, status
    p = found[0]
    for name, builder_name in p.algorithms.items():
        x, params = inputs(name, 3, 50, device)
        run = p.build(builder_name, x, params)
        if p.jax:
            import jax

            outs = [torch.from_dlpack(o) for o in run({k: jax.dlpack.from_dlpack(v) for k, v in x.items()})]
        else:
            outs = run(x)
        expected = profile.op(name).reference(profile.as_numpy(x), params)
        assert profile.rel_err(outs[0], expected) < 1e-5, (impl, name)


@pytest.mark.parametrize("impl", ["torchrl_gae", "torchrl_vec_gae", "torchrl_vec_td_lambda", "torchrl_vtrace",
                                  "torchrl_reward2go"])
def test_torchrl_peers(impl, device):
    _check_optional(impl, "torchrl", device)


def test_jax_peer(device):
    _check_optional("jax", "jax", device)


def test_accelerated_scan_peer(device):
    _check_optional("accelerated_scan", "accelerated_scan", device)


# rl-triton, from the folder that tools/fetch_peers.sh exports (git-ignored), as --peer-path loads it
RL_TRITON_SRC = ROOT / ".peers" / "rl-triton" / "src"
TRITON_DIR = Path(bench.triton.__file__).parent if bench.triton else None


class _WithoutAsserts(importlib.machinery.SourceFileLoader):
    """rl-triton's modules compiled as under ``python -O``: their always-on ``assert t.is_cuda``
    checks go, so that its ops reach their kernels on a CPU (the Triton interpreter). Nothing
    else of its code changes; on a GPU it is imported as it is."""

    def get_code(self, fullname):
        path = self.get_filename(fullname)
        return compile(self.get_data(path), path, "exec", dont_inherit=True, optimize=1)


class _RLTritonWithoutAsserts(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] != "rl_triton":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path or [str(RL_TRITON_SRC)])
        if spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = _WithoutAsserts(spec.name, spec.origin)
        return spec


@pytest.fixture
def rl_triton_peer(monkeypatch, device):
    """(the rl_triton peer, its status line), imported from RL_TRITON_SRC through
    ``bench.add_peer_path``; skipped where the sources are not exported or do not import."""
    if not RL_TRITON_SRC.is_dir():
        pytest.skip("rl-triton is not exported here: run `bash tools/fetch_peers.sh` (.peers/rl-triton/src)")
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(bench, "PEER_PATHS", [])
    if device == "cpu":
        monkeypatch.setattr(sys, "meta_path", [_RLTritonWithoutAsserts(), *sys.meta_path])
    loaded = lambda: [m for m in sys.modules if m.partition(".")[0] == "rl_triton"]  # noqa: E731
    for name in loaded():
        monkeypatch.delitem(sys.modules, name)
    bench.add_peer_path(RL_TRITON_SRC)
    try:
        found, status = bench.find_peers(["rl_triton"], device)
        if not found:  # an import error of rl-triton's own
            pytest.skip(f"rl-triton does not import here: {status['rl_triton']}")
        yield found[0], status["rl_triton"]
    finally:
        for name in loaded():
            sys.modules.pop(name)


def _outside_our_code(e, device):
    """Where the Triton interpreter itself cannot run a kernel of rl-triton's: the reason, else None."""
    frames = traceback.extract_tb(e.__traceback__)
    if device != "cpu" or not frames or TRITON_DIR is None or TRITON_DIR not in Path(frames[-1].filename).parents:
        return None
    return (f"rl-triton's kernels do not run under the Triton interpreter: {type(e).__name__}: {e} "
            f"({frames[-1].filename}:{frames[-1].lineno})").splitlines()[0]


@pytest.mark.parametrize("path", ["flat", "chunked"])
@pytest.mark.parametrize("name", bench.SCANS)
def test_rl_triton_peer_matches_ours(name, path, rl_triton_peer, monkeypatch, device):
    """Its four estimators mapped onto ours (every output) on tiny inputs, through its one-program
    kernels and through its chunked path (taken from T > 131072; here from T > 16)."""
    peer, status = rl_triton_peer
    commit = (RL_TRITON_SRC.parent / "COMMIT").read_text().strip()
    assert status.startswith("rl_triton ") and f"(from {RL_TRITON_SRC} @ {commit[:12]})" in status
    scans = []  # the chunked path's calls of rl-triton's generic scan
    for module in (sys.modules[f"rl_triton.ops.{m}"] for m in ("gae", "returns", "vtrace")):
        run_scan = module._run_scan
        monkeypatch.setattr(module, "_run_scan", lambda *a, _run=run_scan, **k: scans.append(1) or _run(*a, **k))
        if path == "chunked":
            monkeypatch.setattr(module, "_FLAT_MAX_SEQ_LEN", 16)
    x, p = inputs(name, 3, 40, device)
    x["terminated"][0, -1] = x["terminated"][1, 7] = True  # a termination at the window's end and inside
    expected = bench._ours(name, x, p, "fwd")()
    assert profile.rel_err(expected[0], bench._op(name).reference(profile.as_numpy(x), p)) < 1e-5
    try:
        got = peer.build(peer.algorithms[name], x, p)(x)
    except Exception as e:  # noqa: BLE001 - skipped only where the interpreter fails in rl-triton's kernels
        reason = _outside_our_code(e, device)
        if reason is None:
            raise
        pytest.skip(reason)
    assert len(scans) == (path == "chunked") and len(got) == len(expected)
    assert bench.max_rel_err(got, expected) < 1e-5


def test_rl_triton_limits():
    rl_triton = peer("rl_triton")
    assert set(rl_triton.algorithms) == set(bench.SCANS)
    assert rl_triton.skip_reason("gae", 8, 128, "float32", "fwd") is None
    assert "float32" in rl_triton.skip_reason("gae", 8, 128, "bfloat16", "fwd")
    assert rl_triton.skip_reason("gae", 8, 128, "float32", "fwd+bwd") == "forward only"
    with pytest.raises(ValueError, match="λ = 1"):
        x, p = inputs("vtrace", 2, 4)
        rl_triton.build("vtrace", x, dict(p, lambda_=0.9))


def test_peer_path(tmp_path, monkeypatch):
    """--peer-path: the folder goes ahead of sys.path; the result records it with the commit that
    tools/fetch_peers.sh wrote beside it; a missing folder stops the run before any timing."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(bench, "PEER_PATHS", [])
    (tmp_path / "src").mkdir()
    (tmp_path / "COMMIT").write_text("0123456789abcdef0123\n")
    assert bench.add_peer_path(tmp_path / "src") == {"path": str(tmp_path / "src"), "commit": "0123456789abcdef0123"}
    assert sys.path[0] == str((tmp_path / "src").resolve())
    with pytest.raises(SystemExit, match="fetch_peers"):
        bench.add_peer_path(tmp_path / "nowhere")
    args = bench.build_parser().parse_args(["--peer-path", "a", "--peer-path", "b"])
    assert args.peer_path == ["a", "b"]


# ------------------------------------------------------------------------------------------
# A small sweep (on a CPU the kernels run under the Triton interpreter), wall-clock timing only
# ------------------------------------------------------------------------------------------
def test_small_sweep(monkeypatch, device):
    monkeypatch.setattr(bench, "COMPILE_BACKEND", "eager")
    peers, _ = bench.find_peers(["pytorch_loop", "pytorch_eager", "torch_compile"], device)
    result = dict(gpu="test", copy_bandwidth_Bps=1e10, date="2026-01-01", command="test", rows=[], skipped=[])
    lines, done = [], []
    sweep = bench.Sweep(result, peers, anchors=bench.ANCHORS, device=device, timing=bench.Timing(slow_ms=0),
                        emit=lines.append)
    sweep.shape(2, 16, [torch.float32], ["gae", "ppo", "linear_scan"], bench.PASSES, done.append)
    assert done == [f"2x16 float32 {a} {p}" for a in ("gae", "ppo", "linear_scan") for p in bench.PASSES]
    got = {(r["algorithm"], r["impl"], r["pass"]): r for r in result["rows"]}
    assert set(got) == {(a, i, p) for p in bench.PASSES for a, i in
                        [("gae", "rltriton_lite"), ("gae", "pytorch_loop"), ("ppo", "rltriton_lite"),
                         ("ppo", "minimal_autograd_fn"), ("ppo", "pytorch_eager"), ("ppo", "torch_compile"),
                         ("linear_scan", "rltriton_lite")]} | {("gae", "bare_triton_launch", "fwd")}
    assert [(s["impl"], s["pass"], s["reason"]) for s in result["skipped"]] == [
        ("bare_triton_launch", "fwd+bwd", "forward only")]
    assert len(lines) == len(result["rows"]) + 1
    for r in result["rows"]:  # every row: wall time per call beside the other figures
        assert set(r) == ROW_KEYS and r["timer"] == "wall" and r["kernel_ms"] is None and r["ms"] > 0
        assert r["full_call_us"] > 0
        assert r["bytes"] == 2 * 16 * (bench._op(r["algorithm"]).bytes_per_step(4) if r["pass"] == "fwd"
                                       else bench.BACKWARD[r["algorithm"]][1](4))
        if r["impl"] == "rltriton_lite" and r["pass"] == "fwd+bwd":
            assert math.isnan(r["max_rel_err"]) and r["checked_against"] is None  # the peers' yardstick
        else:  # outputs, or gradients (GAE's next values tied to the values), agree
            assert r["max_rel_err"] < 1e-5, r
    assert got[("gae", "rltriton_lite", "fwd")]["checked_against"] == "reference"
    assert got[("linear_scan", "rltriton_lite", "fwd")]["checked_against"] == "reference"
    assert got[("gae", "pytorch_loop", "fwd+bwd")]["checked_against"] == "rltriton_lite"
    assert got[("gae", "bare_triton_launch", "fwd")]["checked_against"] == "rltriton_lite"
    assert got[("ppo", "minimal_autograd_fn", "fwd+bwd")]["checked_against"] == "rltriton_lite"  # its gradient
    json.dumps(result)


def test_failures_are_listed_not_fatal(monkeypatch, device):
    broken = bench.Peer("broken", None, {"ppo": "ppo"}, lambda name, x, p: (lambda x: 1 / 0))
    result = dict(copy_bandwidth_Bps=1e10, rows=[], skipped=[])
    sweep = bench.Sweep(result, [broken], device=device, timing=bench.Timing(slow_ms=0), emit=lambda s: None)
    sweep.shape(2, 8, [torch.float32], ["ppo"], ["fwd"], lambda w: None)
    assert [r["impl"] for r in result["rows"]] == ["rltriton_lite"]
    assert result["skipped"][0]["impl"] == "broken" and "ZeroDivisionError" in result["skipped"][0]["reason"]
    monkeypatch.setattr(bench, "_ours", lambda *a: (lambda: 1 / 0))  # ours failing: its peers have no yardstick
    sweep.shape(2, 8, [torch.float32], ["ppo"], ["fwd"], lambda w: None)
    assert len(result["rows"]) == 1 and result["skipped"][1]["impl"] == "rltriton_lite"
    assert "ZeroDivisionError" in result["skipped"][1]["reason"] and len(result["skipped"]) == 2


# ------------------------------------------------------------------------------------------
# Report and command line
# ------------------------------------------------------------------------------------------
def _synthetic_result():
    row = lambda impl, algorithm, B, T, pass_, ms, **kw: bench.make_row(  # noqa: E731
        algorithm, impl, B, T, torch.float32, pass_, ms, B * T * 17, 4e12, full_call_us=ms * 1e3 + 20, **kw)
    rows = [row("rltriton_lite", "gae", 4096, 128, "fwd", 0.01, kernel=0.005, err=1e-7, checked_against="reference"),
            row("rltriton_lite", "gae", 16384, 1024, "fwd", 0.2, kernel=0.19, err=2e-7, checked_against="reference"),
            row("pytorch_loop", "gae", 4096, 128, "fwd", 20.0, err=3e-7, checked_against="rltriton_lite"),
            row("torchrl_vec_gae", "gae", 16384, 1024, "fwd", 2.0, err=4.5e-4, checked_against="rltriton_lite"),
            row("rltriton_lite", "ppo", 4096, 128, "fwd+bwd", 0.05, kernel=0.02),
            row("bare_triton_launch", "gae", 4096, 128, "fwd", 0.005, kernel=0.004, err=1e-7,
                checked_against="rltriton_lite"),
            row("minimal_autograd_fn", "ppo", 4096, 128, "fwd+bwd", 0.04, kernel=0.01, err=0.0,
                checked_against="rltriton_lite"),
            row("rl_triton", "gae", 4096, 128, "fwd", 0.008, kernel=0.006, err=2e-7, checked_against="rltriton_lite")]
    skipped = [dict(algorithm="gae", impl="pytorch_loop", B=16384, T=1024, dtype="float32", **{"pass": "fwd+bwd"},
                    reason="autograd through a Python loop over more than 1024 steps (seconds a call)")]
    return dict(gpu="NVIDIA Test", copy_bandwidth_Bps=4e12, date="2026-01-01", versions={"torch": "x"},
                peers={"jax": "not found (ModuleNotFoundError: No module named 'jax')"},
                timing={"rep_ms": 50}, command="python -m rltriton_lite.bench --quick", rows=rows, skipped=skipped)


def test_report_from_a_result_json(tmp_path, capsys):
    path = tmp_path / "Test-2026-01-01.json"
    path.write_text(json.dumps(_synthetic_result()))
    assert bench.main(["--report", str(path)]) == 0
    written = [Path(line) for line in capsys.readouterr().out.split()]
    assert written[0] == path.with_suffix(".md")
    assert {p.name for p in written[1:]} == {"Test-2026-01-01-time-float32-fwd.png",
                                            "Test-2026-01-01-time-float32-fwd_bwd.png", "Test-2026-01-01-floor.png"}
    for png in written[1:]:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = written[0].read_text()
    assert "# NVIDIA Test, 2026-01-01" in md and "`python -m rltriton_lite.bench --quick`" in md
    assert "jax: not found" in md
    assert "| gae | 4096×128 | float32 | fwd | pytorch_loop | 20 |" in md and "| 2000× |" in md  # 20 / 0.01
    assert "| 10× | 4.5e-04 ! |" in md  # torchrl's error is above the float32 tolerance: flagged
    assert "| 3.0e-07 |" in md
    assert "pytorch_loop: autograd through a Python loop" in md and "gae 16384×1024 float32 fwd+bwd" in md
    assert "![Test-2026-01-01-floor](Test-2026-01-01-floor.png)" in md


def test_report_leads_with_wall_time_per_call():
    """Wall time per call at 4096×128 (and 64×16384, absent here) first: ours, ours ÷ the pass's
    anchor, each peer; then the GPU time at 16384×1024; then the full tables."""
    md = bench.markdown(_synthetic_result())
    assert md.index("## Wall time per call") < md.index("## GPU time") < md.index("## rltriton_lite")
    assert "### Wall time per call, 4096×128, float32" in md and "64×16384" not in md
    assert ("Anchors: `bare_triton_launch` (gae) fwd 25 µs, GPU 0.004 ms; `minimal_autograd_fn` (ppo) fwd+bwd 60 µs, "
            "GPU 0.01 ms.") in md
    assert "| algorithm | pass | rltriton_lite µs | ÷ anchor | peers µs |" in md
    assert "| gae | fwd | 30 | 1.2 | pytorch_loop 20020, rl_triton 28 |" in md  # full call µs = 1000 ms + 20
    assert "| ppo | fwd+bwd | 70 | 1.167 | — |" in md  # ÷ minimal_autograd_fn
    assert "### GPU time, 16384×1024, float32" in md
    assert "| gae | fwd | 0.19 | 37.53 % | — |" in md  # torchrl has no GPU time (not captured)
    assert bench.lead(dict(_synthetic_result(), rows=[])) == []


def test_markdown_of_the_committed_result():
    """The committed result (benchmarks/results/, the newest file) makes its tables: the headline
    view of its shapes first, then a header and a line a row for rltriton_lite and for the peers."""
    committed = sorted((ROOT / "benchmarks" / "results").glob("*.json"))
    assert committed
    res = json.loads(committed[-1].read_text())
    md = bench.markdown(res)
    head, full = md.split("\n## rltriton_lite\n")
    n_ours = sum(r["impl"] == "rltriton_lite" for r in res["rows"])
    n_peers = len(res["rows"]) - n_ours
    assert full.count("\n| ") == (1 + n_ours) + (1 + n_peers if n_peers else 0)  # a header, then a line a row
    for (B, T), what in [*((s, "Wall time per call,") for s in bench.LEAD_WALL_SHAPES), (bench.LEAD_GPU_SHAPE,
                                                                                         "GPU time,")]:
        if any((r["B"], r["T"], r["dtype"]) == (B, T, "float32") for r in res["rows"]):
            assert f"### {what} {B}×{T}, float32" in head


def test_output_path(tmp_path):
    first = bench.output_path(tmp_path / "results", "NVIDIA H200", "2026-01-01")
    assert first == tmp_path / "results" / "H200-2026-01-01.json"
    first.write_text("{}")
    assert bench.output_path(tmp_path / "results", "NVIDIA H200", "2026-01-01").name == "H200-2026-01-01-2.json"
    assert bench.output_path(tmp_path / "x" / "run.json", "any", "d") == tmp_path / "x" / "run.json"


def test_command_line(capsys):
    with pytest.raises(SystemExit) as exit_:
        bench.main(["--help"])
    assert exit_.value.code == 0 and "--report" in capsys.readouterr().out
    assert bench.parse_shapes("16x128,1x1048576") == [(16, 128), (1, 1048576)]


@pytest.mark.skipif(torch.cuda.is_available(), reason="with a GPU, main() would run the sweep")
def test_sweep_needs_a_gpu(capsys):
    assert bench.main(["--quick"]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


def test_report_of_a_result_without_rows(tmp_path):
    """A run cut short before its first shape has a JSON with no rows: the report says what it can."""
    path = tmp_path / "r.json"
    path.write_text(json.dumps(dict(_synthetic_result(), rows=[])))
    assert bench.report(path) == [path.with_suffix(".md")]
    assert path.with_suffix(".md").read_text().startswith("# NVIDIA Test, 2026-01-01")


def test_merge_of_runs_per_shape(tmp_path, capsys):
    """Runs of one GPU (one process per shape) merge into one result: every row and skip kept,
    each run's command and bandwidth listed, the median bandwidth in the header; two GPUs refuse."""
    full = _synthetic_result()
    small = dict(full, rows=full["rows"][:1], skipped=[], copy_bandwidth_Bps=4.1e12, elapsed_s=10.0,
                 command="python -m rltriton_lite.bench --shapes 4096x128")
    large = dict(full, rows=full["rows"][1:], copy_bandwidth_Bps=4.3e12, elapsed_s=20.0,
                 command="python -m rltriton_lite.bench --shapes 16384x1024")
    paths = []
    for name, part in (("a", small), ("b", large)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(part))
    out = tmp_path / "merged.json"
    assert bench.main(["--merge", *map(str, paths), "--out", str(out)]) == 0
    assert Path(capsys.readouterr().out.split()[0]) == out
    merged = json.loads(out.read_text())
    assert json.dumps(merged["rows"]) == json.dumps(full["rows"]) and merged["skipped"] == full["skipped"]  # NaN too
    assert merged["copy_bandwidth_Bps"] == pytest.approx(4.2e12) and merged["elapsed_s"] == 30.0
    assert [p["command"] for p in merged["parts"]] == [small["command"], large["command"]]
    md = out.with_suffix(".md").read_text()
    assert "Merged from 2 runs" in md and "4.10, 4.30 TB/s" in md and "Copy bandwidth 4.20 TB/s" in md
    assert f"`{small['command']} ; {large['command']}`" in md
    paths[1].write_text(json.dumps(dict(large, gpu="NVIDIA Other")))
    with pytest.raises(SystemExit, match="different GPUs"):
        bench.main(["--merge", *map(str, paths), "--out", str(out)])


def test_accelerated_scan_half_precision_backward_is_skipped():
    """Its bf16 backward broke the CUDA context on the H200: the harness never starts it."""
    peer = next(p for p in bench.PEERS if p.impl == "accelerated_scan")
    assert "illegal memory access" in peer.skip_reason("gae", 16384, 1024, "bfloat16", "fwd+bwd")
    assert peer.skip_reason("gae", 16384, 1024, "bfloat16", "fwd") is None
    assert peer.skip_reason("gae", 16384, 1024, "float32", "fwd+bwd") is None
