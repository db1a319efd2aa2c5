"""rltriton_lite.profile's plain-text helpers (``table``, ``read_wall_probe``) on the committed H200
results, and a CPU's rows and labels: no bandwidth, the interpreter's times labelled (notebook 08
prints these outside the widget, so a static render shows them). tests/test_profile_committed.py
covers ``committed`` and ``cpu_rows``."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rltriton_lite import profile

from conftest import DEVICE

RESULTS = Path(__file__).parent.parent / "benchmarks" / "results"


def _rows(algorithms, B, T):
    res = json.loads((RESULTS / "H200-2026-12-01c.json").read_text())
    return [r for r in res["rows"] if r["impl"] == "rltriton_lite" and (r["B"], r["T"]) == (B, T)
            and r["algorithm"] in algorithms]


def test_table_of_committed_rows():
    """Headers from a dict, numbers right-aligned to 4 significant digits, text left-aligned."""
    rows = _rows(("gae", "ppo"), 16384, 1024)
    text = profile.table(rows, {"algorithm": "algorithm", "pass": "pass", "bytes": "bytes", "floor_ms": "floor ms",
                                "kernel_ms": "GPU ms", "full_call_us": "wall µs"})
    assert text == "\n".join([
        "algorithm  pass         bytes  floor ms   GPU ms  wall µs",
        "---------  -------  ---------  --------  -------  -------",
        "gae        fwd      285212672   0.06715  0.08038    84.37",
        "gae        fwd+bwd  570425344    0.1343   0.1604    349.2",
        "ppo        fwd      201326592   0.04740  0.05129    57.58",
        "ppo        fwd+bwd  469762048    0.1106   0.1160    225.0",
    ])


def test_table_columns_digits_and_missing_values():
    rows = [dict(impl="loop", ms=12123.4, floor_ms=4.339050462931482e-06), dict(impl="triton", ms=0.0)]
    assert profile.table(rows, digits=3) == "\n".join([
        "impl       ms  floor_ms",
        "------  -----  --------",
        "loop    12123  4.34e-06",
        "triton      0       n/a",
    ])
    assert profile.table(rows, ["ms"]).splitlines()[2:] == ["12123", "    0"]
    assert profile.table([]) == ""


def test_read_wall_probe():
    """The committed probe's one-shape sections, in file order; the split sections left out; a
    name timed twice in a section (beside each anchor) keeps its first row."""
    sections = profile.read_wall_probe(RESULTS / profile.COMMITTED_WALL)
    assert [(s["B"], s["T"]) for s in sections] == [(16, 128), (4096, 128), (1024, 1024), (64, 16384)]
    rows = {(r["pass"], r["name"]): r for r in sections[1]["rows"]}
    assert rows["fwd", "gae"] == {"pass": "fwd", "name": "gae", "us": 28.4, "ratio": 0.407, "anchor": "bare_launch"}
    assert rows["fwd", "noop kernel[grid]"]["us"] == 13.0
    assert rows["fwd", "rl_triton discounted_return"]["us"] == 43.9
    assert rows["fwd+bwd", "ppo"] == {"pass": "fwd+bwd", "name": "ppo", "us": 384.4, "ratio": 0.905,
                                      "anchor": "minimal_fn"}
    assert len(rows) == len(sections[1]["rows"]) == 24
    assert sections[3]["rows"][2] == {"pass": "fwd", "name": "torch.add", "us": 11.0, "ratio": 0.013,
                                      "anchor": "bare_launch"}
    assert not any("unsplit" in r["name"] for s in sections for r in s["rows"])
    # by shape and call, read from the committed probe by default
    assert profile.wall_probe_us() == {(s["B"], s["T"]): {(r["pass"], r["name"]): r["us"] for r in s["rows"]}
                                       for s in sections}
    assert profile.wall_probe_us()[4096, 128]["fwd", "gae"] == 28.4


def test_sources_loads_the_committed_files_and_tags_them_by_card():
    """``sources()``: notebooks 08 and 09's set-up in one call: each file's path, the run and the wall
    probe as their readers give them, and each timing file's card and printout tag."""
    src = profile.sources()
    assert Path(src.folder).resolve() == RESULTS.resolve()
    assert all(Path(src.path(k)).is_file() for k in src.files)
    assert src.files["run"] == f"{profile.COMMITTED_RUN}.json" and src.files["loss"] == profile.COMMITTED_LOSS_WALL
    assert (src.run_name, src.run) == profile.committed_results()
    assert src.probe == profile.wall_probe_us()
    assert src.cards == {"run": "H200", "wall": "H200", "loss": "H100", "replay": "H200", "backward": "H100"}
    assert src.tags == {"run": "H200 run", "wall": "H200 wall probe", "loss": "H100 loss probe",
                        "replay": "H200 replay probe", "backward": "H100 backward profile", "here": "this machine"}
    assert profile.sources(str(RESULTS)).path("wall") == str(RESULTS / profile.COMMITTED_WALL)


def test_read_time_group_cost():
    """The committed time_group= file (notebooks 11 and 13c): every shape and call with its four (wall, GPU)
    pairs, the first line the card's."""
    lines, cost = profile.read_time_group_cost(RESULTS / "checks" / "H100-2026-12-07-time-group-cost.txt")
    assert lines[0].startswith("NVIDIA H100") and len(cost) == 8 and all(len(r) == 4 for r in cost.values())
    assert all(w > 0 and g > 0 for r in cost.values() for w, g in r)
    assert ("1 x 1048576", "gae forwards") in cost


def test_read_loss_wall():
    """The committed --losses probe: every loss, shape, pass and call it timed, ours at ratio 1 in every
    round, and the values of one line as the file writes them."""
    got = profile.read_loss_wall()
    assert len(got) == 3 * 3 * 2 * 3 + 3 * 2  # 3 losses, 3 shapes, 2 passes, 3 calls; PPO's anchor too
    assert got["ppo", (4096, 128), "fwd+bwd", "pytorch_eager"] == (922.8, 1.588, 1.093, 1.956)
    assert all(v[1:] == (1.0, 1.0, 1.0) for k, v in got.items() if k[3] == "rltriton_lite")


def test_read_loss_gpu(tmp_path):
    """The committed --losses probe's GPU times, measured on the same card as its wall times: one per key
    of read_loss_wall, ours' all positive, the values of one line as the file writes them, and "n/a" as None."""
    wall, gpu = profile.read_loss_wall(), profile.read_loss_gpu()
    assert set(gpu) == set(wall)  # every key of read_loss_wall, and no other
    assert all(gpu[k] is not None and gpu[k] > 0 for k in gpu if k[3] == profile.OURS_IMPL)
    assert gpu["ppo", (4096, 128), "fwd+bwd", "pytorch_eager"] == 62.5
    assert gpu["ppo", (4096, 128), "fwd+bwd", profile.OURS_IMPL] == 8.1
    probe = tmp_path / "loss-wall.txt"
    probe.write_text("# a header\nloss crr 16x128 fwd rltriton_lite 37.7 us ratio 1.000 1.000 1.000 gpu n/a us\n",
                     encoding="utf-8")
    assert profile.read_loss_gpu(probe) == {("crr", (16, 128), "fwd", "rltriton_lite"): None}  # no graph captured it
    assert profile.read_loss_wall(probe) == {("crr", (16, 128), "fwd", "rltriton_lite"): (37.7, 1.0, 1.0, 1.0)}


@pytest.mark.skipif(DEVICE == "cuda", reason="the interpreter's rows")
def test_interpreter_rows_have_no_bandwidth(capsys):
    """On a CPU, ``measure``: times only, each saying how it was taken (the kernel's: the
    interpreter, not performance). The profiler times the PyTorch code for real and only checks
    the kernel: its printout says so, and shows no bandwidth."""
    rows = profile.measure("gae", 2, 16, impls=("triton", "torch"))
    assert [r["impl"] for r in rows] == ["triton", "torch"]
    assert all(set(r) == {"impl", "B", "T", "ms", "timing"} and r["ms"] > 0 for r in rows)
    assert rows[0]["timing"] == profile.INTERPRETER_LABEL and "real timing" in rows[1]["timing"]
    text = profile.live_table(rows)
    assert profile.INTERPRETER_LABEL in text and "GB/s" not in text
    _, last = profile.profiler("ppo", B=2, T=16)
    printed = capsys.readouterr().out
    assert "correctness run of the Triton interpreter" in printed and "real timing" in printed
    assert "GB/s" not in printed and "Why:" in printed
    assert [(r["impl"], r["B"], r["T"]) for r in last] == [("eager", 2, 16), ("torch", 2, 16),  # PPO: a formula
                                                           ("triton", *profile.CHECK_SHAPE)]
    assert all(r["rel_err"] < 1e-5 for r in last) and last[2]["ms"] is None
    assert profile.table(last, profile.CPU_COLUMNS).splitlines()[0].split()[:4] == ["impl", "B", "T", "ms"]
    assert "eager ÷ this" in printed and "loop ÷ this" not in printed


def test_the_readme_states_the_loss_probe_as_it_reads():
    """README's "losses against their eager formulas, by wall time" line, from the committed --losses
    probe: each span of medians (one digit, rounded outwards: 14, section 7), and where every round agrees."""
    got = profile.read_loss_wall()
    shapes = [(16, 128), (4096, 128), (64, 16384)]

    def span(loss, pass_, k=1, invert=False):
        v = [got[loss, s, pass_, "pytorch_eager"][k] for s in shapes]
        v = [1 / x for x in v] if invert else v
        return f"{math.floor(10 * min(v)) / 10:.1f}–{math.ceil(10 * max(v)) / 10:.1f}×"

    readme = " ".join((RESULTS.parent.parent / "README.md").read_text(encoding="utf-8").split())
    line = readme[readme.index("The losses against their eager formulas, by wall time"):]
    line = line[:line.index("Notebook 09, section 4 reads the file")]  # the paragraph, to its last sentence
    for text in (f"PPO's fused call is faster in every round, {span('ppo', 'fwd')} forward and {span('ppo', 'fwd+bwd')} "
                 "with the backward", f"SAC's one-step target {span('sac', 'fwd')} forward in every round, "
                 f"{span('sac', 'fwd+bwd')} with the backward (in every round only at 16×128)", f"CRR's {span('crr', 'fwd')} "
                 f"forward (not in every round at 4096×128)", f"ours taking {span('crr', 'fwd+bwd', invert=True)} its time"):
        assert text in line, (text, line)
    every = {(a, p): min(got[a, s, p, "pytorch_eager"][2] for s in shapes) > 1
             for a in ("ppo", "sac", "crr") for p in ("fwd", "fwd+bwd")}
    assert [got["sac", s, "fwd+bwd", "pytorch_eager"][2] > 1 for s in shapes] == [True, False, False]  # "only at 16×128"
    assert [got["crr", s, "fwd", "pytorch_eager"][2] > 1 for s in shapes] == [True, False, True]  # "not ... at 4096×128"
    # "our fused call takes 270–640 µs ..., at most what the minimal `autograd.Function` takes (620–720 µs) and more
    # than autograd spends on CRR's few eager ops (220–260 µs)": µs to 10, rounded outwards, with the backward
    us = {name: [got[loss, s, "fwd+bwd", impl][0] for loss in losses for s in shapes] for name, losses, impl in
          (("ours", ("ppo", "sac", "crr"), "rltriton_lite"), ("anchor", ("ppo",), "minimal_autograd_fn"),
           ("crr eager", ("crr",), "pytorch_eager"))}
    tens = {k: f"{10 * math.floor(min(v) / 10)}–{10 * math.ceil(max(v) / 10)} µs" for k, v in us.items()}
    for text in (f"fused call takes {tens['ours']} on that host", f"`autograd.Function` takes ({tens['anchor']})",
                 f"CRR's few eager ops ({tens['crr eager']})"):
        assert text in line, (text, line)
    assert all(got[a, s, "fwd+bwd", "rltriton_lite"][0] <= got["ppo", s, "fwd+bwd", "minimal_autograd_fn"][0]
               for a in ("ppo", "sac", "crr") for s in shapes)  # "at most what ... takes", shape by shape
    assert max(us["crr eager"]) < min(us["ours"])  # "more than autograd spends on CRR's few eager ops"
    assert every == {("ppo", "fwd"): True, ("ppo", "fwd+bwd"): True, ("sac", "fwd"): True, ("sac", "fwd+bwd"): False,
                     ("crr", "fwd"): False, ("crr", "fwd+bwd"): False}


def test_fused_against_eager_reads_both_sources_at_the_eager_formulas_shapes():
    """05-07's "How fast is it": the three shapes where the eager formula was timed, our wall time the lower
    of the committed run's and the wall probe's."""
    got = profile.fused_against_eager("ppo")
    assert sorted(got) == [(16, 128), (64, 16384), (4096, 128)]
    run = {(r["impl"], r["B"], r["T"]): r for r in profile.committed_rows(profile.committed_results()[1], "ppo")
           if r["pass"] == "fwd+bwd"}
    assert got[4096, 128]["ours_wall_us"] == min(run["rltriton_lite", 4096, 128]["wall_us"],
                                                 profile.wall_probe_us()[4096, 128]["fwd+bwd", "ppo"]) == 384.4
    assert got[4096, 128]["eager_gpu_us"] == run["pytorch_eager", 4096, 128]["gpu_us"]


def test_eager_rows_are_the_paired_probe_s_shapes_smallest_first():
    """05-07's "How fast is it" print eager_against_ours as these rows: the text's order of the three shapes, each
    column the probe's own figure."""
    against = profile.eager_against_ours("ppo")
    rows = profile.eager_rows(against)
    assert [r["B×T"] for r in rows] == ["16×128", "4096×128", "64×16384"]
    assert rows[1]["ours wall µs"] == against[4096, 128]["ours_wall_us"] and \
        rows[2]["eager ÷ ours, GPU"] == against[64, 16384]["gpu_ratio"] and \
        rows[0]["eager ÷ ours, wall*"] == against[16, 128]["wall_ratio"]


def test_backward_added_is_fwd_bwd_against_fwd_of_our_call():
    """09, sections 2.1-2.4 (the four scans' tables): per shape, what the backward adds to our call's wall and GPU time, and the ratios."""
    rows = profile.committed_rows(profile.committed_results()[1], "gae")
    ours = {(r["B"], r["T"], r["pass"]): r for r in rows if r["impl"] == profile.OURS_IMPL}
    got = profile.backward_added(rows)
    assert sorted(got) == sorted({(b, t) for b, t, _ in ours})
    fw, bw = ours[4096, 128, "fwd"], ours[4096, 128, "fwd+bwd"]
    assert got[4096, 128] == (bw["wall_us"] - fw["wall_us"], bw["gpu_us"] - fw["gpu_us"], bw["wall_us"] / fw["wall_us"],
                              bw["gpu_us"] / fw["gpu_us"])


def test_range_helpers_round_outwards_as_the_course_writes_ranges():
    """08 and 09 write ranges with these (notebook 14, section 7): the low end down, the high end up, a float a hair
    off a boundary kept on it; two significant figures for the peers' table, whole numbers from 10 up for spread."""
    assert (profile.down(3.39), profile.up(3.31), profile.down(0.1 + 0.2, 1), profile.up(2.24)) == (3.3, 3.4, 0.3, 2.3)
    assert (profile.down(82.7, 0), profile.up(59.2, 0), profile.down(1.0939, 2)) == (82, 60, 1.09)
    assert (profile.two_figures(0.3849, profile.down), profile.two_figures(9.71, profile.up),
            profile.two_figures(41_023, profile.up), profile.two_figures(3.14)) == ("0.38", "9.8", "42,000", "3.1")
    assert profile.two_figure_range([0.69, 3.0, 9.71]) == "0.69–9.8"
    assert (profile.two_figure_range([3.14]), profile.two_figure_range([])) == ("3.1", "")
    assert (profile.spread([1.93, 7.0, 14.2]), profile.spread([2.0, 2.0]), profile.spread([0.512, 63.2])) \
        == ("1.9–15", "2.0", "0.51–64")
