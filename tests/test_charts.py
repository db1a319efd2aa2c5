"""The charts of the committed results (``rltriton_lite.profile``'s floor_chart, peers_chart and
wall_gpu_chart, drawn in notebook 09), with matplotlib's Agg backend: the newest results file's
figures, laid out, are at most 1,200 px wide, every panel names the dtype and the pass, labels its
value axis with units and has a legend; every results file in benchmarks/results/ at every dtype it
holds has every data point drawn. No GPU needed."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from rltriton_lite import profile  # noqa: E402

RESULTS = Path(__file__).parent.parent / "benchmarks" / "results"
FILES = sorted(RESULTS.glob("*.json"))
CASES = [(f, dtype) for f in FILES
         for dtype in sorted({r["dtype"] for r in json.loads(f.read_text())["rows"] if r["impl"] == profile.OURS_IMPL})]
CHARTS = {"floor": (profile.floor_chart, "memory floor", "%"),
          "peers": (profile.peers_chart, "faster than each peer", "×"),
          "wall": (profile.wall_gpu_chart, "Wall versus GPU", "µs")}


def _load(path):
    return json.loads(path.read_text())


@pytest.fixture
def close_figures():
    yield
    plt.close("all")


def test_there_are_committed_results():
    assert FILES and CASES


@pytest.mark.parametrize("chart", list(CHARTS))
@pytest.mark.parametrize("path,dtype", [c for c in CASES if c[0] == FILES[-1]],  # (the older files' bars: below)
                         ids=lambda c: c.stem if isinstance(c, Path) else c)
def test_chart_is_narrow_labelled_and_has_legends(path, dtype, chart, close_figures):
    res = _load(path)
    make, question, unit = CHARTS[chart]
    fig = make(res, dtype)
    fig.canvas.draw()  # the constrained layout runs: a figure that cannot be laid out fails here
    width_px, height_px = fig.get_size_inches() * fig.dpi
    assert width_px <= profile.CHART_MAX_WIDTH_PX, width_px
    assert height_px <= 2000, height_px
    title = fig.get_suptitle()
    assert question in title and dtype in title and res["gpu"] in title and res["date"] in title, title
    passes = profile.result_passes(res)
    for ax in fig.axes:
        text = " ".join([title, ax.get_title(), ax.get_xlabel(), ax.get_ylabel()])
        assert dtype in text and any(p in ax.get_title() for p in passes), text
        # the value axis (x for the peers' horizontal bars, else y; a shared y axis is labelled once per row)
        if chart == "peers":
            value_label = ax.get_xlabel()
        else:
            value_label = " ".join(a.get_ylabel() for a in ax.get_shared_y_axes().get_siblings(ax))
        assert re.search(rf"\([^)]*{re.escape(unit)}[^)]*\)", value_label), f"no ({unit}) in {value_label!r}"
        assert ax.get_xlabel() and ax.get_title(), "an unlabelled panel"
        assert ax.get_legend() is not None or fig.legends, "no legend"


@pytest.mark.parametrize("path,dtype", CASES, ids=lambda c: c.stem if isinstance(c, Path) else c)
def test_every_case_is_drawn(path, dtype, close_figures):
    """One bar per data point: every % floor, every (peer, case) speed-up, and two bars (wall,
    GPU) per case of the wall chart; all positive and finite."""
    res = _load(path)
    n_bars = lambda fig: sum(len(c) for ax in fig.axes for c in ax.containers)  # noqa: E731
    pct = profile.floor_pct(res, dtype)
    assert pct and all(0 < v < float("inf") for v in pct.values())
    assert n_bars(profile.floor_chart(res, dtype)) == len(pct)
    speedups = profile.peer_speedups(res, dtype)
    assert speedups and all(0 < s["x"] < float("inf") for s in speedups)
    assert n_bars(profile.peers_chart(res, dtype)) == len(speedups)
    wall_gpu = profile.wall_vs_gpu(res, dtype)
    assert wall_gpu and all(w > 0 and g > 0 for w, g in wall_gpu.values())
    anchors = profile.anchor_rows(res, dtype)
    n_anchor = sum(1 for (_, b, t, _), r in anchors.items() if (b, t) in profile.RL_SHAPES and r["kernel_ms"])
    assert n_bars(profile.wall_gpu_chart(res, dtype)) == 2 * (len(wall_gpu) + n_anchor)


def test_newest_results_is_the_latest_date():
    name, res = profile.newest_results(RESULTS)
    assert res["date"] == max(_load(f)["date"] for f in FILES)
    assert (RESULTS / f"{name}.json").exists()
    with pytest.raises(FileNotFoundError):
        profile.newest_results(RESULTS / "no such folder")


def test_chart_text_helpers():
    assert profile.shape_name((4096, 128)) == "4096×128"
    assert [profile.speedup_text(x) for x in (0.751, 12.14, 17322.4)] == ["0.751×", "12.1×", "17,322×"]
    with pytest.raises(ValueError, match="no rltriton_lite float16 rows"):
        profile.our_rows(_load(FILES[-1]), "float16")
