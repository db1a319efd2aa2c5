"""The committed H200 results that notebooks 08 and 09 read, checked as files: they exist, they hold
every row and field the notebooks look up, and their headers (GPU, date, stack, bandwidth) are the
ones the notebooks' text names. These bookkeeping checks were asserts in the notebooks; the
notebooks now assert only what their text claims about the numbers.

Pinned counts and values: a results file that loses a row or a field, or is replaced by another
run under the same name, fails here. Only JSON and text are read: no GPU, no kernel runs."""
from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest

from rltriton_lite import profile

RESULTS = Path(__file__).parent.parent / "benchmarks" / "results"
PROBE = RESULTS / profile.COMMITTED_WALL  # notebook 08, section 3

FIELDS = {"algorithm", "impl", "B", "T", "dtype", "pass", "ms", "floor_ms", "pct_floor", "full_call_us",
          "kernel_ms", "max_rel_err", "tol", "checked_against", "timer", "bytes"}
ALGORITHMS = {"discounted_return", "gae", "td_lambda", "vtrace", "ppo", "sac", "crr"}

# What each file must hold: its header, and how many rows of each kind (a lost row changes a count).
EXPECTED = {
    profile.COMMITTED_RUN: dict(
        date="2026-12-06", bandwidth=4273327122340.466, rows=195,
        by_dtype_pass={("float32", "fwd"): 121, ("float32", "fwd+bwd"): 74},
        shapes={(16, 128), (4096, 128), (64, 16384), (16384, 1024)},
        by_impl={"rltriton_lite": 64, "accelerated_scan": 24, "pytorch_loop": 20, "pytorch_eager": 18,
                 "torch_compile": 18, "jax": 12, "rl_triton": 12, "minimal_autograd_fn": 8, "bare_triton_launch": 4,
                 "torchrl_reward2go": 3, "torchrl_gae": 3, "torchrl_vec_gae": 3, "torchrl_vec_td_lambda": 3,
                 "torchrl_vtrace": 3},
        by_algorithm={"gae": 35, "discounted_return": 28, "td_lambda": 28, "vtrace": 28, "ppo": 28, "sac": 20,
                      "crr": 20, "linear_scan": 8}),
    profile.COMMITTED_SWEEP: dict(
        date="2026-11-30", bandwidth=4274041398132.001, rows=444,
        by_dtype_pass={("float32", "fwd"): 198, ("float32", "fwd+bwd"): 135, ("bfloat16", "fwd"): 72,
                       ("bfloat16", "fwd+bwd"): 39},
        shapes={(1, 1048576), (8, 131072), (16, 128), (64, 16384), (1024, 1024), (4096, 128), (16384, 1024)},
        by_impl={"rltriton_lite": 140, "accelerated_scan": 68, "pytorch_eager": 60, "torch_compile": 60, "jax": 40,
                 "pytorch_loop": 36, "torchrl_reward2go": 10, "torchrl_vec_gae": 10, "torchrl_vec_td_lambda": 10,
                 "torchrl_gae": 5, "torchrl_vtrace": 5},
        by_algorithm={"gae": 71, "discounted_return": 66, "td_lambda": 66, "vtrace": 61, "sac": 60, "ppo": 60,
                      "crr": 60}),
}
RUNS = sorted(EXPECTED)

# The rows notebooks 08 and 09 look up one by one: (run, algorithm, impl, B, T, dtype, pass).
LOOKED_UP = [
    *[(profile.COMMITTED_RUN, a, profile.OURS_IMPL, b, t, "float32", "fwd")
      for a in sorted(ALGORITHMS | {"linear_scan"}) for b, t in [(16, 128), (4096, 128), (64, 16384), (16384, 1024)]],
    (profile.COMMITTED_RUN, "gae", profile.OURS_IMPL, 16384, 1024, "float32", "fwd+bwd"),
    (profile.COMMITTED_RUN, "gae", "bare_triton_launch", 16, 128, "float32", "fwd"),
    (profile.COMMITTED_RUN, "gae", "pytorch_loop", 4096, 128, "float32", "fwd"),
    (profile.COMMITTED_RUN, "sac", "pytorch_eager", 4096, 128, "float32", "fwd"),
    (profile.COMMITTED_RUN, "sac", "torch_compile", 4096, 128, "float32", "fwd"),
    (profile.COMMITTED_SWEEP, "gae", profile.OURS_IMPL, 16384, 1024, "bfloat16", "fwd"),
]


def _load(run):
    return json.loads((RESULTS / f"{run}.json").read_text(encoding="utf-8"))


def _key(r):
    return r["algorithm"], r["impl"], r["B"], r["T"], r["dtype"], r["pass"]


@pytest.fixture(scope="module", params=RUNS)
def run(request):
    return request.param, _load(request.param)


def test_the_files_the_notebooks_read_are_committed():
    for run in RUNS:
        assert (RESULTS / f"{run}.json").is_file(), run
        assert (RESULTS / f"{run}.md").is_file(), run  # the tables the harness wrote beside it
    assert PROBE.is_file()
    assert profile.COMMITTED_RUN == "H200-2026-12-06" and profile.COMMITTED_SWEEP == "H200-2026-11-30d"


def test_header_names_the_gpu_date_stack_and_bandwidth(run):
    """Notebook 14, section 1 ("Every source"): one H200, torch 2.11 and Triton 3.6 (not the
    versions requirements.txt pins), the date in the file's name, the copy bandwidth it priced with."""
    name, res = run
    want = EXPECTED[name]
    assert res["gpu"] == "NVIDIA H200"
    assert res["date"] == want["date"] and name.startswith(f"H200-{want['date']}")
    assert res["versions"]["torch"] == "2.11.0+cu130" and res["versions"]["triton"] == "3.6.0"
    assert res["copy_bandwidth_Bps"] == pytest.approx(want["bandwidth"], rel=1e-12)
    assert 4.0e12 < res["copy_bandwidth_Bps"] < 4.5e12  # an H200's usable bandwidth, read + written
    assert profile.committed_results(RESULTS, name) == (name, res)  # what the notebooks call


def test_no_row_is_lost(run):
    name, res = run
    want, rows = EXPECTED[name], res["rows"]
    assert len(rows) == want["rows"]
    assert Counter((r["dtype"], r["pass"]) for r in rows) == want["by_dtype_pass"]
    assert Counter(r["impl"] for r in rows) == want["by_impl"]
    assert Counter(r["algorithm"] for r in rows) == want["by_algorithm"]
    assert {(r["B"], r["T"]) for r in rows} == want["shapes"]
    assert len({_key(r) for r in rows}) == len(rows)  # one row per case


def test_every_row_has_every_field_with_sane_values(run):
    name, res = run
    for r in res["rows"]:
        assert set(r) == FIELDS, (name, _key(r))
        assert isinstance(r["B"], int) and isinstance(r["T"], int) and r["B"] > 0 and r["T"] > 0
        assert r["dtype"] in ("float32", "bfloat16") and r["pass"] in ("fwd", "fwd+bwd")
        assert isinstance(r["bytes"], int) and r["bytes"] > 0
        for k in ("ms", "floor_ms", "full_call_us", "tol"):
            assert isinstance(r[k], float) and math.isfinite(r[k]) and r[k] > 0, (k, _key(r))
        # a row's outputs were checked (forward rows all are), or its error is NaN: unchecked
        assert r["checked_against"] in (profile.OURS_IMPL, "reference", "torch_f64", None), _key(r)
        assert (r["checked_against"] is None) == math.isnan(r["max_rel_err"]), _key(r)
        assert r["pass"] == "fwd+bwd" or r["checked_against"] is not None, _key(r)
        assert r["kernel_ms"] is None or (math.isfinite(r["kernel_ms"]) and r["kernel_ms"] > 0)
        assert r["timer"] in ("do_bench", "wall")
        # the harness's % floor is floor ÷ do_bench ms, in every row
        assert r["pct_floor"] == pytest.approx(100 * r["floor_ms"] / r["ms"], rel=1e-9), _key(r)
        # the floor is the bytes ÷ the copy bandwidth measured beside the row (the headline
        # bandwidth is their mean: within 1 %)
        assert r["floor_ms"] == pytest.approx(1e3 * r["bytes"] / res["copy_bandwidth_Bps"], rel=1e-2), _key(r)


def test_bytes_are_the_floor_models(run):
    """Every forward row counts the bytes of notebook 08's section 1 (``bytes_per_step``), and
    every implementation of one case is priced with the same bytes as ours."""
    name, res = run
    ours = {(r["algorithm"], *_key(r)[2:]): r for r in res["rows"] if r["impl"] == profile.OURS_IMPL}
    for r in res["rows"]:
        if r["pass"] == "fwd" and r["algorithm"] in ALGORITHMS:
            elem = {"float32": 4, "bfloat16": 2}[r["dtype"]]
            assert r["bytes"] == r["B"] * r["T"] * profile.op(r["algorithm"]).bytes_per_step(elem), _key(r)
        assert r["bytes"] == ours[r["algorithm"], r["B"], r["T"], r["dtype"], r["pass"]]["bytes"], _key(r)


def test_ours_is_complete_and_correct_in_the_run():
    """Notebook 09 plots every algorithm at every shape and pass: ours has each, with a GPU time,
    and its outputs agreed with the reference (none flagged)."""
    res = _load(profile.COMMITTED_RUN)
    ours = {_key(r): r for r in res["rows"] if r["impl"] == profile.OURS_IMPL}
    grid = {(a, profile.OURS_IMPL, b, t, "float32", p) for a in ALGORITHMS | {"linear_scan"}
            for b, t in EXPECTED[profile.COMMITTED_RUN]["shapes"] for p in ("fwd", "fwd+bwd")}
    assert set(ours) == grid
    assert all(r["kernel_ms"] is not None for r in ours.values())
    assert all(r["max_rel_err"] <= r["tol"] for r in ours.values() if r["checked_against"] is not None)
    assert all(r["checked_against"] is not None for r in ours.values() if r["pass"] == "fwd")


@pytest.mark.parametrize("case", LOOKED_UP, ids=lambda c: "-".join(map(str, c)))
def test_each_row_the_notebooks_look_up_is_there_once(case):
    run, *key = case
    found = [r for r in _load(run)["rows"] if list(_key(r)) == key]
    assert len(found) == 1, case
    assert found[0]["full_call_us"] > 0  # the wall time: every lookup reads it
    if key[1] != "pytorch_loop":  # a Python loop cannot be captured in a CUDA graph: no GPU time
        assert found[0]["kernel_ms"] > 0


def test_spot_values_of_the_run():
    """A few figures the notebooks print, read back exactly: GAE at 16384×1024 forward (the floor of
    section 1), ours and the loop at 4096×128 (section 5)."""
    row = {_key(r): r for r in _load(profile.COMMITTED_RUN)["rows"]}
    gae = row["gae", profile.OURS_IMPL, 16384, 1024, "float32", "fwd"]
    assert gae["bytes"] == 16384 * 1024 * 17
    assert round(1e3 * gae["floor_ms"], 1) == 66.7 and round(1e3 * gae["kernel_ms"], 1) == 80.2
    assert round(row["gae", profile.OURS_IMPL, 4096, 128, "float32", "fwd"]["full_call_us"], 2) == 28.13
    assert round(row["gae", "pytorch_loop", 4096, 128, "float32", "fwd"]["full_call_us"]) == 12152
    sweep = {_key(r): r for r in _load(profile.COMMITTED_SWEEP)["rows"]}
    assert sweep["gae", profile.OURS_IMPL, 16384, 1024, "bfloat16", "fwd"]["bytes"] == 16384 * 1024 * 9


def test_the_wall_probe_file():
    """Notebook 08's section 3 reads this probe: its first line names the GPU, the date and the
    stack of the JSON files; it has a section per shape with every row the notebook reads."""
    first = PROBE.read_text(encoding="utf-8").splitlines()[0]
    assert "NVIDIA H200, 2026-12-06" in first and "torch 2.11, Triton 3.6" in first
    sections = profile.read_wall_probe(PROBE)
    assert [(s["B"], s["T"]) for s in sections] == [(16, 128), (4096, 128), (1024, 1024), (64, 16384)]
    assert all(len(s["rows"]) == 24 for s in sections)
    fwd = {(s["B"], s["T"]): {r["name"]: r["us"] for r in s["rows"] if r["pass"] == "fwd"} for s in sections}
    names = {"noop kernel[grid]", "torch.add", "bare_launch", "discounted_return", "gae", "td_lambda", "vtrace",
             "sac", "ppo", "crr", "linear_scan"}
    assert all(names <= set(v) for v in fwd.values())
    assert all(us > 0 for v in fwd.values() for us in v.values())
    assert fwd[16, 128]["noop kernel[grid]"] == 12.5 and fwd[16, 128]["torch.add"] == 8.2
    assert fwd[16, 128]["bare_launch"] == 20.6 and fwd[4096, 128]["bare_launch"] == 69.5
    assert fwd[16, 128]["crr"] == 59.7 and fwd[4096, 128]["gae"] == 28.4
