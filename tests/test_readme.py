"""The README's examples run as pasted, and its getting-started commands are the ones CI runs.

Every ```python block of README.md is self-contained (its own imports, its own made-up tensors)
and runs here on its own, in a fresh namespace, on CPU tensors, where ``backend="auto"`` runs the
PyTorch path (a block that passes ``backend="triton"`` runs the kernels in the interpreter, which
``conftest.py`` switches on: keep the README's sizes small, 16×128 is fine).
"""
from __future__ import annotations

import re
import socket
import textwrap
from pathlib import Path

import pytest
import torch

README = Path(__file__).resolve().parent.parent / "README.md"
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)[ \t]*(?P<info>[^`]*?)[ \t]*$")


def fenced_blocks(text: str):
    """(info string, first line of the code, code) for each fenced block, in order; the info
    string's first word is the language (notebooks/ANSWERS.md adds "no-run" after it)."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, start, body = m.group("fence"), i + 2, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        assert i < len(lines), f"README.md:{start - 1}: unclosed code fence"
        blocks.append((m.group("info").lower(), start, textwrap.dedent("\n".join(body)) + "\n"))
        i += 1
    return blocks


def section(text: str, heading: str) -> str:
    """The text of the level-2 section ``## heading``, up to the next level-2 heading."""
    m = re.search(rf"^## {re.escape(heading)}[ \t]*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert m, f"README.md has no '## {heading}' section"
    return m.group(1)


TEXT = README.read_text(encoding="utf-8")
# a block fenced "python no-run" needs a package the tests do not install (verl): it is compiled only
PYTHON_BLOCKS = [(line, code) for info, line, code in fenced_blocks(TEXT)
                 if info.split()[:1] in (["python"], ["py"]) and "no-run" not in info.split()]
NO_RUN = [(line, code) for info, line, code in fenced_blocks(TEXT) if info.split()[:2] == ["python", "no-run"]]


def test_there_are_python_examples():
    assert len(PYTHON_BLOCKS) >= 10


@pytest.mark.parametrize("line,code", PYTHON_BLOCKS, ids=[f"line{line}" for line, _ in PYTHON_BLOCKS])
def test_python_block_runs_as_pasted(line, code, tmp_path, monkeypatch):
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path))  # SB3's logger folder: else a new /tmp/SB3-<time> per model
    with socket.socket() as s:  # the distributed blocks setdefault MASTER_PORT: a free one, not their fixed 29511,
        s.bind(("127.0.0.1", 0))  # which another test run on the same host may hold
        monkeypatch.setenv("MASTER_PORT", str(s.getsockname()[1]))
    torch.manual_seed(0)
    namespace = {"__name__": "__readme__"}
    exec(compile(code, f"README.md:{line}", "exec"), namespace)  # raises on any failure


@pytest.mark.parametrize("line,code", NO_RUN, ids=[f"line{line}" for line, _ in NO_RUN])
def test_a_block_not_run_compiles(line, code):
    compile(code, f"README.md:{line}", "exec")


def test_getting_started_commands():
    """The getting-started block installs the requirements, then runs the demo and the tests, with
    exactly the commands CI runs."""
    bash = [code for lang, _, code in fenced_blocks(section(TEXT, "Getting started"))
            if lang in ("bash", "sh", "shell", "console")]
    assert bash, "no bash block under '## Getting started'"
    commands = [ln.split("#", 1)[0].strip() for ln in bash[0].splitlines()]
    commands = [c for c in commands if c]
    assert [c for c in commands if c.startswith("python")] == ["python -m rltriton_lite", "python -m pytest"]
    assert "pip install -r requirements.txt" in commands
    assert commands.index("pip install -r requirements.txt") < commands.index("python -m rltriton_lite")


def test_links_stay_inside_the_repository():
    root = README.parent
    for target in re.findall(r"\]\(([^)\s]+)\)", TEXT):
        assert "://" not in target, f"README.md links outside the repository: {target}"
        path = target.split("#", 1)[0]
        if path:
            assert (root / path).exists(), f"README.md links to a missing file: {target}"


def test_demo_prints_every_algorithm_checked(capsys):
    """The getting-started demo (``python -m rltriton_lite``), at an odd small size: one row per
    algorithm and backend, each error within tolerance, and the OK line."""
    from rltriton_lite import profile
    from rltriton_lite._triton import HAS_TRITON

    assert profile.demo(["--batch", "3", "--steps", "37"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.split()[:1] and line.split()[0] in profile.ops()]
    backends = ["triton", "torch"] if HAS_TRITON else ["torch"]
    assert [(r[0], r[1]) for r in rows] == [(name, be) for name in profile.ops() for be in backends]
    assert all(float(r[2]) < 1e-5 for r in rows)
    assert "OK: worst relative error" in out


def test_the_core_s_hours_are_the_table_s_sums():
    """"The core is 00, 00b, 00c and 01 to 05 ... about A–B hours checked": the order table's
    sums over those rows (01b and 04c, split from 01 and 04, included; 04b, optional, not), each end
    rounded to the hour (as tests/test_grading.py checks the totals)."""
    from test_grading import _hours, _table

    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    text = " ".join(readme.split())
    core = re.search(r"The core is 00, 00b, 00c and 01 to 05: .*?, about (\d+)–(\d+) hours checked", text)
    rows = _table(readme, "| notebook | what it teaches |")
    names = [nb for nb in rows if nb.split("_")[0] in ("00", "00b", "00c", "01", "01b", "02", "03", "04", "04c", "05")]
    assert len(names) == 10, names
    sums = [round(sum(_hours(rows[nb][1])[end] for nb in names)) for end in (0, 1)]
    assert core is not None and [int(core.group(1)), int(core.group(2))] == sums, sums


def test_the_notebooks_counted_are_the_notebooks():
    """The README's "the twenty-one notebooks" names as many as notebooks/ holds."""
    root = Path(__file__).parent.parent
    words = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen " \
            "sixteen seventeen eighteen nineteen twenty twenty-one twenty-two twenty-three twenty-four".split()
    said = re.search(r"the ([\w-]+) notebooks", (root / "README.md").read_text(encoding="utf-8")).group(1)
    assert words.index(said) == len(list((root / "notebooks").glob("*.ipynb"))), said
