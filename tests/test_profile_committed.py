"""What notebook 09's sections 2.1-2.4 show and the notebooks' "How fast is it" checks read:
``profile.committed`` (one algorithm's figures from the committed H200 results file, read by name:
a table and a chart, every value read back from the JSON, labelled with the GPU, the file and its date) and, on a CPU, ``profile.cpu_rows`` (the
PyTorch path against the code it replaces, timed for real; the kernel checked, not timed, in the
interpreter) with ``cpu_plot`` and ``live_table``. Charts use matplotlib's Agg backend."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from rltriton_lite import profile  # noqa: E402

from conftest import DEVICE  # noqa: E402

RESULTS = Path(__file__).parent.parent / "benchmarks" / "results"
FILES = sorted(RESULTS.glob("*.json"))
# every algorithm's chart of the newest results, and one per dtype of the older (the same code draws them)
CASES = [(f, dtype, name) for f in FILES
         for dtype, name in sorted({(r["dtype"], r["algorithm"]) for r in json.loads(f.read_text())["rows"]
                                    if r["impl"] == profile.OURS_IMPL})
         if f == FILES[-1] or name == "gae"]
COMMITTED = profile.committed_results(RESULTS)  # the H200 run the notebooks read, by name


@pytest.fixture
def close_figures():
    yield
    plt.close("all")


def _ids(c):
    return c.stem if isinstance(c, Path) else c


def test_results_folder_is_the_committed_one():
    assert Path(profile.results_folder()).resolve() == RESULTS.resolve()


@pytest.mark.parametrize("name", sorted(profile.ops()))
def test_every_profiled_algorithm_has_committed_rows(name):
    """The notebooks call ``committed(name)`` for each: the committed H200 file has our rows for it at both
    passes, and rows of the code it replaces."""
    rows = profile.committed_rows(COMMITTED[1], name)
    assert {r["pass"] for r in rows if r["impl"] == profile.OURS_IMPL} == {"fwd", "fwd+bwd"}
    replaced = "pytorch_loop" if name in profile.SCANS else "pytorch_eager"
    assert any(r["impl"] == replaced for r in rows)


@pytest.mark.parametrize("path,dtype,name", CASES, ids=_ids)
def test_committed_rows_read_back_the_json(path, dtype, name):
    """One row per JSON row of the algorithm and dtype, each value the JSON's (µs from ms, % floor =
    floor ÷ GPU time, wall ÷ ours at the same case), in order: pass, shape, then ours first."""
    res = json.loads(path.read_text())
    src = {(r["impl"], r["B"], r["T"], r["pass"]): r for r in res["rows"]
           if r["algorithm"] == name and r["dtype"] == dtype}
    rows = profile.committed_rows(res, name, dtype)
    assert len(rows) == len(src)
    for r in rows:
        j = src[r["impl"], r["B"], r["T"], r["pass"]]
        ours = src[profile.OURS_IMPL, r["B"], r["T"], r["pass"]]
        assert r["wall_us"] == j["full_call_us"] > 0
        assert r["floor_us"] == pytest.approx(1e3 * j["floor_ms"], rel=1e-12)
        if j["kernel_ms"]:
            assert r["gpu_us"] == pytest.approx(1e3 * j["kernel_ms"], rel=1e-12) and r["gpu_us"] > 0
            assert r["pct_floor"] == pytest.approx(100 * j["floor_ms"] / j["kernel_ms"], rel=1e-12)
        else:
            assert r["gpu_us"] is None and r["pct_floor"] is None
        assert r["vs_ours"] == pytest.approx(j["full_call_us"] / ours["full_call_us"], rel=1e-12)
        assert r["flagged"] == (j["max_rel_err"] is not None and j["max_rel_err"] > j["tol"])
        assert r["name"] == profile.impl_name(r["impl"])
    keys = [(("fwd", "fwd+bwd").index(r["pass"]), r["B"] * r["T"], r["B"]) for r in rows]
    assert keys == sorted(keys)
    firsts = {}
    for r in rows:
        firsts.setdefault((r["B"], r["T"], r["pass"]), r["impl"])
    assert set(firsts.values()) == {profile.OURS_IMPL}


def test_committed_rows_spot_values():
    """GAE at 4096×128, forward, in the committed results (its .md's table): ours 28.13 µs per call,
    the Python loop 12,152 µs; and torchrl_vec_gae's outputs flagged there (its '!')."""
    res = json.loads((RESULTS / f"{profile.COMMITTED_RUN}.json").read_text())
    rows = {(r["impl"], r["B"], r["T"], r["pass"]): r for r in profile.committed_rows(res, "gae")}
    ours, loop = rows["rltriton_lite", 4096, 128, "fwd"], rows["pytorch_loop", 4096, 128, "fwd"]
    assert round(ours["wall_us"], 2) == 28.13 and round(loop["wall_us"]) == 12152
    assert round(ours["gpu_us"], 2) == 3.33 and 60 < ours["pct_floor"] < 65 and loop["gpu_us"] is None
    assert round(loop["vs_ours"]) == 432
    assert rows["torchrl_vec_gae", 4096, 128, "fwd"]["flagged"] and not ours["flagged"]
    with pytest.raises(ValueError, match="no float32 rows of 'nope'"):
        profile.committed_rows(res, "nope")


def test_committed_table_shows_every_row():
    """A header, a rule, one line per row: the case (shape, pass, floor) written on its first
    line only, the impl's name ('!' where flagged) and its numbers as profile.table formats them."""
    res = json.loads((RESULTS / f"{profile.COMMITTED_RUN}.json").read_text())
    rows = profile.committed_rows(res, "gae")
    lines = profile.committed_table(rows).splitlines()
    assert lines[0].split("  ")[0] == "shape" and all(h in lines[0] for h in profile.COMMITTED_COLUMNS.values())
    assert set(lines[1]) <= {"-", " "} and len(lines) == 2 + len(rows)
    for line, r in zip(lines[2:], rows):
        assert (r["name"] + (" !" if r["flagged"] else "")) in line
        assert profile._cell(r["wall_us"], 3) in line
    first = lines[2]
    assert first.startswith("16×128") and "fwd" in first and "rltriton_lite (Triton kernel)" in first
    assert lines[3].startswith(" ") and "PyTorch loop over time" in lines[3]  # same case: no shape repeated
    assert sum("torchrl_vec_gae !" in line for line in lines) == 2  # flagged at 16×128 and 4096×128


@pytest.mark.parametrize("path,dtype,name", CASES, ids=_ids)
def test_committed_chart_is_narrow_labelled_and_complete(path, dtype, name, close_figures):
    """At most 1,200 px wide; the title names the algorithm, dtype, GPU, date and file; each panel
    names the dtype, the pass and what it times, and labels its value axis in µs; a legend names
    every implementation and the floor; one bar per value in the rows (wall and GPU), one floor
    mark per case."""
    res = json.loads(path.read_text())
    fig = profile.committed_chart(res, name, dtype, path.name)
    fig.canvas.draw()
    width_px, height_px = fig.get_size_inches() * fig.dpi
    assert width_px <= profile.CHART_MAX_WIDTH_PX and height_px <= 1200, (width_px, height_px)
    title = fig.get_suptitle()
    for text in (name, dtype, res["gpu"], res["date"], path.name, "not on this machine"):
        assert text in title, (text, title)
    rows = profile.committed_rows(res, name, dtype)
    passes = list(dict.fromkeys(r["pass"] for r in rows))
    assert len(fig.axes) == 2 * len(passes)
    for ax in fig.axes:
        assert dtype in ax.get_title() and any(f", {p}:" in ax.get_title() for p in passes)
        assert "(log scale)" in ax.get_ylabel() and "µs" in ax.get_ylabel() and ax.get_xlabel()
    (legend,) = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert {profile.impl_name(r["impl"]) for r in rows} <= set(labels) and any("floor" in x for x in labels)
    n_bars = sum(len(c) for ax in fig.axes for c in ax.containers)
    assert n_bars == sum(1 for r in rows for k in ("wall_us", "gpu_us") if r[k])
    n_floors = sum(len(c.get_segments()) for ax in fig.axes[1::2] for c in ax.collections)
    assert n_floors == len({(r["B"], r["T"], r["pass"]) for r in rows})


def test_committed_prints_the_source_and_returns_the_rows(capsys, close_figures):
    run, res = COMMITTED
    rows = profile.committed("gae", show=False)
    out = capsys.readouterr().out
    assert f"{run}.json" in out and res["gpu"] in out and res["date"] in out and "not on this machine" in out
    assert profile.committed_table(rows) in out and profile.committed_legend(rows) in out
    assert rows == profile.committed_rows(res, "gae")
    assert not plt.get_fignums()  # show=False closes the figure


def test_committed_reads_the_h200_file_by_name_not_the_newest(tmp_path, capsys, close_figures):
    """A TA who benchmarks their own GPU into the results folder (bench's default --out) adds a
    newer file: ``newest_results`` finds it, but ``committed`` and ``committed_results``, which the
    notebooks use, still read the committed H200 run by name; another run is read by its name."""
    import shutil

    for run in (profile.COMMITTED_RUN, profile.COMMITTED_SWEEP):
        shutil.copy(RESULTS / f"{run}.json", tmp_path)
    mine = json.loads((RESULTS / f"{profile.COMMITTED_RUN}.json").read_text())
    mine.update(gpu="NVIDIA GeForce RTX 4090", date="2099-01-01")
    (tmp_path / "RTX-4090-2099-01-01.json").write_text(json.dumps(mine))
    assert profile.newest_results(tmp_path)[0] == "RTX-4090-2099-01-01"
    run, res = profile.committed_results(tmp_path)
    assert run == profile.COMMITTED_RUN and "H200" in res["gpu"] and res == COMMITTED[1]
    assert profile.committed_results(tmp_path, "RTX-4090-2099-01-01")[1]["gpu"] == "NVIDIA GeForce RTX 4090"
    profile.committed("gae", folder=tmp_path, show=False)
    out = capsys.readouterr().out
    assert f"{profile.COMMITTED_RUN}.json" in out and "H200" in out and "4090" not in out
    with pytest.raises(FileNotFoundError, match="no results file nope.json"):
        profile.committed_results(tmp_path, "nope")


def test_committed_figures_the_readme_quotes():
    """Regression checks on the committed H200 files: the README's Performance tables quote these
    exact figures, each from one file (the probe's interleaved wall times, not the harness's single
    run of each). The notebooks assert their own figures in their Checks cells."""
    res = json.loads((RESULTS / f"{profile.COMMITTED_RUN}.json").read_text())
    row = {(r["algorithm"], r["impl"], r["B"], r["T"], r["dtype"], r["pass"]): r for r in res["rows"]}
    gae = row["gae", profile.OURS_IMPL, 16384, 1024, "float32", "fwd"]
    assert round(100 * gae["floor_ms"] / gae["kernel_ms"], 1) == 83.3  # GPU time: GAE's % floor
    assert round(1e3 * row["sac", profile.OURS_IMPL, 16384, 1024, "float32", "fwd"]["kernel_ms"], 1) == 83.3
    probe = {(sec["B"], sec["T"]): {r["name"]: r["us"] for r in sec["rows"] if r["pass"] == "fwd"}
             for sec in profile.read_wall_probe(RESULTS / profile.COMMITTED_WALL)}
    assert probe[4096, 128]["gae"] == 28.4  # the README's wall-time table
    assert probe[16, 128]["crr"] == 59.7 and probe[16, 128]["gae"] == 30.6
    sweep = json.loads((RESULTS / f"{profile.COMMITTED_SWEEP}.json").read_text())
    slow = [s["x"] for s in profile.peer_speedups(sweep) if (s["shape"], s["pass_"]) == ((16384, 1024), "fwd")
            and (s["peer"] == "pytorch_loop" or s["peer"].startswith("torchrl"))]
    assert [round(min(slow)), round(max(slow))] == [288, 1333]  # the README's "288–1,333×", wall ÷ wall


@pytest.mark.parametrize("name", sorted(profile.ops()))
def test_committed_legend_explains_the_columns_and_the_anchors_shown(name):
    """Every column in words; each anchor in the rows explained (what bench.py runs: the bare
    launch a naive GAE kernel, the autograd anchor PPO's loss), and no anchor that is not."""
    rows = profile.committed_rows(COMMITTED[1], name)
    legend = profile.committed_legend(rows)
    assert all(len(line) <= 110 for line in legend.splitlines())
    flat = " ".join(legend.split())
    for words in ("wall µs/call:", "GPU µs:", "floor µs:", "% floor:", "wall ÷ ours:"):
        assert words in flat
    shown = {r["impl"] for r in rows} & set(profile.ANCHORS)
    for impl in profile.ANCHORS:
        assert (f"{profile.impl_name(impl)}:" in flat) == (impl in shown)
    assert ("yardsticks" in flat) == bool(shown)
    if "bare_triton_launch" in shown:
        assert "naive GAE kernel, one program per row" in flat and "launched plainly" in flat
    if "minimal_autograd_fn" in shown:
        assert "PPO's clipped loss as a plain torch.autograd.Function" in flat


def test_anchor_notes_say_what_the_harness_runs():
    """The notes name what bench.py's anchors are: the launch anchor is GAE's naive kernel (not an
    empty one), the autograd anchor PPO's loss; the committed rows file them under those algorithms."""
    from rltriton_lite import bench

    assert set(profile.ANCHOR_NOTES) == set(profile.ANCHORS) == {bench.BARE_LAUNCH, bench.MINIMAL_AUTOGRAD}
    algorithms = {a.impl: set(a.algorithms) for a in bench.ANCHORS}
    assert algorithms == {bench.BARE_LAUNCH: {"gae"}, bench.MINIMAL_AUTOGRAD: {"ppo"}}
    assert "GAE" in profile.ANCHOR_NOTES[bench.BARE_LAUNCH] and "PPO" in profile.ANCHOR_NOTES[bench.MINIMAL_AUTOGRAD]
    in_results = {(r["impl"], r["algorithm"]) for r in COMMITTED[1]["rows"] if r["impl"] in profile.ANCHORS}
    assert in_results == {(bench.BARE_LAUNCH, "gae"), (bench.MINIMAL_AUTOGRAD, "ppo")}


def test_table_blank_cells_and_millions():
    """'' is a blank that keeps a numeric column right-aligned; a float from a million up is whole,
    thousands separated (the Python loop's µs per call), from a billion up in e-notation."""
    assert profile.table([dict(us=1629910.5), dict(us=2.5e9)], digits=3).split("\n")[2:] == ["1,629,910",
                                                                                            " 2.50e+09"]
    text = profile.table([dict(a="x", n=1.5), dict(a="", n=""), dict(a="y", n=12.25)], ["a", "n"], digits=3)
    assert text.split("\n") == ["a     n", "-  ----", "x  1.50", "", "y  12.2"]


def test_cpu_threads_restores_the_setting():
    before = torch.get_num_threads()
    with profile.cpu_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with profile.cpu_threads(None):
        assert torch.get_num_threads() == before


@pytest.mark.parametrize("name", sorted(profile.ops()))
def test_cpu_words(name):
    """Every algorithm's roles and its 'why' name what they compare, in words: a loop over time for
    the scans, an eager formula for PPO, SAC and CRR (labelled "eager", never "loop")."""
    replaced = profile.replaced_impl(name)
    assert replaced == ("loop" if name in profile.SCANS else "eager")
    role = profile.impl_role(name, replaced)
    assert "replaces" in role and ("loop over time" in role) == (name in profile.SCANS)
    assert ("eager" in role) == (name not in profile.SCANS)
    assert profile.cpu_columns(name)["replaced_x"] == f"{replaced} ÷ this"
    assert profile.cpu_columns()["replaced_x"] == profile.CPU_COLUMNS["replaced_x"] == "replaced ÷ this"
    why = profile.cpu_why(name)
    assert why.startswith("Why:") and "GPU" in why
    assert ("log₂ T" in why) == (name in profile.SCANS or name == "sac")


@pytest.mark.skipif(DEVICE == "cuda", reason="a CPU's rows")
@pytest.mark.parametrize("name,replaced", [("gae", "loop"), ("ppo", "eager"), ("sac", "eager")])
def test_cpu_rows_time_the_pytorch_code_and_check_the_kernel(name, replaced, close_figures):
    shapes = [(4, 32), (16, 64)]
    rows = profile.cpu_rows(name, shapes)
    timed = [r for r in rows if r["ms"] is not None]
    assert [(r["impl"], r["B"], r["T"]) for r in timed] == [(i, *s) for s in shapes for i in (replaced, "torch")]
    assert all(r["ms"] > 0 and math.isfinite(r["ms"]) and "real timing" in r["timing"] for r in timed)
    for old, torch_row in zip(timed[::2], timed[1::2]):
        assert torch_row["replaced_x"] == pytest.approx(old["ms"] / torch_row["ms"]) and old["replaced_x"] == 1
    (check,) = [r for r in rows if r["ms"] is None]
    assert (check["impl"], check["B"], check["T"]) == ("triton", *profile.CHECK_SHAPE)
    assert "not performance" in check["timing"] and "correctness" in check["timing"]
    assert all(r["rel_err"] < 1e-5 for r in rows)
    text = profile.live_table(rows)
    assert "real timing" in text and "correctness run of the Triton interpreter" in text and "GB/s" not in text
    assert text.splitlines()[0].split()[:4] == ["impl", "B", "T", "ms"]
    assert f"{replaced} ÷ this" in text.splitlines()[0]
    if replaced == "eager":  # PPO's and SAC's comparison is an eager formula: no row or header says "loop"
        assert "loop" not in text.split("\n\n")[0] and not any(line.startswith("loop") for line in text.splitlines())
    unchecked = profile.cpu_rows(name, shapes[:1], rep=1, check=False)
    assert [r["impl"] for r in unchecked] == [replaced, "torch"] and "median of 1 call after" in unchecked[0]["timing"]
    fig = profile.cpu_plot(rows, name)
    fig.canvas.draw()
    (ax,) = fig.axes
    assert fig.get_size_inches()[0] * fig.dpi <= profile.CHART_MAX_WIDTH_PX
    title = " ".join(ax.get_title().split())  # wrapped to the figure's width
    assert name in title and "real timing" in title and "not performance" in title
    assert all(len(line) <= fig.get_size_inches()[0] * 100 / 6.4 for line in ax.get_title().splitlines())
    assert "ms" in ax.get_ylabel() and "float32" in ax.get_xlabel() and ax.get_legend() is not None
    assert sum(len(c) for c in ax.containers) == len(timed)
    ticks = [t.get_text().split("\n") for t in ax.get_xticklabels()]
    assert [t[0] for t in ticks] == [profile.shape_name(s) for s in shapes]
    what = "loop" if replaced == "loop" else "eager formula"
    assert all(t[1].startswith(f"{what} ÷ torch path:") for t in ticks)
    assert ax.get_legend().get_texts()[0].get_text().startswith(f"{replaced}: ")


def test_cpu_plot_stays_narrow_with_every_shape(close_figures):
    """The profiler offers five shapes on a CPU; picked together, the figure stays ≤ 1,200 px."""
    shapes = [(16, 128), (4096, 128), (64, 2048), (256, 1024), (64, 16384)]
    rows = [dict(impl=impl, role=profile.impl_role("gae", impl), B=b, T=t, ms=ms, replaced_x=2.0 / ms, rel_err=1e-7,
                 timing=profile.cpu_timing(1)) for b, t in shapes for impl, ms in (("loop", 2.0), ("torch", 1.0))]
    fig = profile.cpu_plot(rows, "gae")
    fig.canvas.draw()
    assert fig.get_size_inches()[0] * fig.dpi <= profile.CHART_MAX_WIDTH_PX
    assert sum(len(c) for c in fig.axes[0].containers) == 2 * len(shapes)


@pytest.mark.parametrize("name,replaced", [("gae", 100), ("ppo", 2)])
def test_committed_facts_are_read_from_the_rows(name, replaced):
    rows = profile.committed_rows(profile.committed_results()[1], name)
    facts = profile.committed_facts(rows)
    ours = [r for r in rows if r["impl"] == profile.OURS_IMPL]
    assert facts.ours == len(ours) >= 4 and facts.replaced_x > replaced
    at_rl = [r["wall_us"] / r["gpu_us"] for r in ours if (r["B"], r["T"]) == (4096, 128)]
    assert facts.host_x == min(at_rl) > 5
    biggest = max(r["B"] * r["T"] for r in ours)
    assert facts.floor_pct == min(r["pct_floor"] for r in ours if r["B"] * r["T"] == biggest) > 75


def test_committed_says_where_the_results_are_when_they_are_missing(tmp_path, capsys):
    """An optional profile cell run outside the course's folder (missing_ok=True) says where the results
    live and returns []; without missing_ok the FileNotFoundError stands."""
    assert profile.committed("gae", folder=tmp_path, show=False, missing_ok=True) == []
    assert "benchmarks/results/ of the course's folder" in capsys.readouterr().out
    with pytest.raises(FileNotFoundError, match="no results file"):
        profile.committed("gae", folder=tmp_path, show=False)


def test_eager_against_ours_reads_both_clocks_of_the_paired_loss_probe():
    """notebooks 05-07 ("How fast is it") and 09 (section 4) read each loss against its eager formula from one helper."""
    wall, gpu = profile.read_loss_wall(), profile.read_loss_gpu()
    for loss in ("ppo", "sac", "crr"):
        vs = profile.eager_against_ours(loss)
        assert set(vs) == {(16, 128), (4096, 128), (64, 16384)}
        for shape, v in vs.items():
            ours, eager = (loss, shape, "fwd+bwd", profile.OURS_IMPL), (loss, shape, "fwd+bwd", "pytorch_eager")
            assert (v["ours_wall_us"], v["eager_wall_us"]) == (wall[ours][0], wall[eager][0])
            assert (v["ours_gpu_us"], v["eager_gpu_us"]) == (gpu[ours], gpu[eager])
            assert v["gpu_ratio"] == gpu[eager] / gpu[ours] and v["wall_ratio"] == wall[eager][1]
    assert profile.outward([1.234, 5.678], 1) == (1.2, 5.7) and profile.outward([0.73, 0.84], 2) == (0.73, 0.84)
