"""notebooks/ANSWERS.md, the teacher's key to the exercises without a checker.

Every numbered question without a checker, in every notebook, has exactly one answer heading
(``## NN, question k``), and no heading answers a question that does not exist: adding,
removing or renumbering a question fails here until the key follows. And every ```python block
of the key runs, each in a fresh namespace (on CPU tensors: ``backend="auto"`` takes the PyTorch
path; ``conftest.py`` sets ``TRITON_INTERPRET`` on a machine without a GPU), with its asserts
holding. Blocks fenced ```python no-run (training runs, GPU scripts) are only compiled.

The questions come from the notebooks' py:percent twins (``notebooks/NN_*.py``; a test keeps
them in sync with the ``.ipynb``): the top-level numbered items (``# 1. ...``) of the markdown
cells of the ``## Exercises`` section that follow its "Without a checker:" line, or, in a section
without that line and without a checked exercise, all of its numbered items.
"""
from __future__ import annotations

import collections
import re
from pathlib import Path

import pytest
import torch
from test_readme import fenced_blocks

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
ANSWERS = NOTEBOOKS / "ANSWERS.md"

HEADING = re.compile(r"^## (?P<nb>\w+), question (?P<q>\d+)[ \t]*$")
CELL = re.compile(r"^# %%(?P<rest>.*)$")
SECTION = re.compile(r"^# ##(?!#)\s*(?P<title>.*?)\s*$")  # a level-2 heading in a markdown cell
NO_CHECKER = re.compile(r"^#\s*without a checker\s*:?\s*$", re.I)
ITEM = re.compile(r"^# (?P<n>\d+)\.\s+\S")  # a top-level numbered item
INDENTED_ITEM = re.compile(r"^#\s{2,}\d+\.\s")


def notebook_id(path: Path) -> str:
    return path.name.split("_", 1)[0]


def exercise_section(path: Path) -> list[tuple[bool, str]]:
    """(is markdown, line) for the lines of the notebook's ``## Exercises`` section, up to the
    next level-2 heading or the end."""
    lines, markdown, inside = [], False, False
    for line in path.read_text(encoding="utf-8").splitlines():
        cell = CELL.match(line)
        if cell:
            markdown = "[markdown]" in cell.group("rest")
            continue
        heading = SECTION.match(line) if markdown else None
        if heading:
            if inside:
                break
            inside = heading.group("title").lower() == "exercises"
            continue
        if inside:
            lines.append((markdown, line))
    return lines


def unchecked_questions(path: Path) -> list[int]:
    """The numbers of the questions without a checker in the notebook's exercise section, in order."""
    section = exercise_section(path)
    name = path.name
    assert section, f"{name}: no '## Exercises' section (every notebook of the course ends with one)"
    markers = [i for i, (md, line) in enumerate(section) if md and NO_CHECKER.match(line)]
    checked = any("exercises.attempt(" in line for md, line in section if not md)
    if markers:
        start = markers[-1] + 1
    else:
        items = [line for md, line in section if md and ITEM.match(line)]
        assert not (checked and items), (
            f"{name}: the exercise section has checked exercises and numbered items but no "
            f"'Without a checker:' line, so which items are questions without a checker is unclear")
        start = 0
    numbers, stray = [], []
    for md, line in section[start:]:
        if not md:
            continue
        m = ITEM.match(line)
        if m:
            numbers.append(int(m.group("n")))
        elif INDENTED_ITEM.match(line):
            stray.append(line)
    assert not stray, f"{name}: numbered items indented as sub-items, not read as questions: {stray}"
    assert numbers == list(range(1, len(numbers) + 1)), (
        f"{name}: the questions without a checker are numbered {numbers}, not 1..{len(numbers)}")
    if markers:
        assert numbers, f"{name}: 'Without a checker:' is followed by no numbered question"
    return numbers


def questions() -> dict[tuple[str, int], str]:
    """(notebook id, question number) -> the notebook's file name, for every notebook."""
    found = {}
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]*_*.py")):
        for n in unchecked_questions(path):
            found[notebook_id(path), n] = path.name
    return found


def answer_headings(text: str) -> list[tuple[str, int]]:
    """The (notebook id, question number) of every level-2 heading of the key; any other level-2
    heading is an error (a typo in the format would otherwise hide an answer)."""
    found = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.startswith("## "):
            m = HEADING.match(line)
            assert m, f"ANSWERS.md:{lineno}: a level-2 heading not of the form '## NN, question k': {line!r}"
            found.append((m.group("nb"), int(m.group("q"))))
    return found


def blocks_under_headings(text: str):
    """(info string, first line of the code, the answer heading above it, code) for each fenced block."""
    lines = text.splitlines()
    out = []
    for info, start, code in fenced_blocks(text):
        heading = next((ln[3:].strip() for ln in reversed(lines[:start - 1]) if ln.startswith("## ")), None)
        out.append((info, start, heading, code))
    return out


TEXT = ANSWERS.read_text(encoding="utf-8")
BLOCKS = [b for b in blocks_under_headings(TEXT) if b[0].split()[:1] == ["python"]]
RUN = [b for b in BLOCKS if "no-run" not in b[0].split()]
NO_RUN = [b for b in BLOCKS if "no-run" in b[0].split()]


def block_id(block) -> str:
    _, line, heading, _ = block
    return f"{heading.replace(', question ', '-q')}-line{line}" if heading else f"line{line}"


def test_the_questions_are_found():
    """The parse finds questions in the notebooks at all (a changed convention would find none)."""
    found = questions()
    per_notebook = collections.Counter(nb for nb, _ in found)
    assert len(found) >= 30 and len(per_notebook) >= 10, per_notebook


def test_every_question_has_exactly_one_answer():
    found = questions()
    headings = answer_headings(TEXT)
    counts = collections.Counter(headings)
    duplicated = sorted(h for h, c in counts.items() if c > 1)
    missing = sorted(q for q in found if q not in counts)
    unknown = sorted(h for h in counts if h not in found)
    assert not duplicated, f"answered more than once in ANSWERS.md: {duplicated}"
    assert not missing, ("questions without an answer in ANSWERS.md: "
                         + ", ".join(f"{nb}, question {q} ({found[nb, q]})" for nb, q in missing))
    assert not unknown, f"answers to questions that no notebook asks (renumbered or removed?): {unknown}"


def test_answers_follow_the_notebooks_order():
    assert answer_headings(TEXT) == sorted(questions()), "keep ANSWERS.md in notebook order, then question order"


def test_blocks_sit_under_answer_headings():
    assert RUN, "ANSWERS.md has no runnable python block"
    assert all(b[2] is not None and HEADING.match(f"## {b[2]}") for b in BLOCKS), \
        "a python block before the first answer heading"


@pytest.mark.parametrize("block", RUN, ids=[block_id(b) for b in RUN])
def test_python_block_runs(block):
    _, line, heading, code = block
    torch.manual_seed(0)
    namespace = {"__name__": "__answers__"}
    exec(compile(code, f"ANSWERS.md:{line} ({heading})", "exec"), namespace)  # raises on a failed assert


@pytest.mark.parametrize("block", NO_RUN, ids=[block_id(b) for b in NO_RUN])
def test_no_run_block_compiles(block):
    _, line, heading, code = block
    compile(code, f"ANSWERS.md:{line} ({heading})", "exec")


def test_the_rubrics_total_is_the_sum_of_the_rubrics():
    """The key's introduction states the points of all its rubrics and their range: a question added
    or a rubric changed fails here until that sentence follows (it had drifted from 157 to 170)."""
    text = ANSWERS.read_text(encoding="utf-8")
    points = [int(p) for p in re.findall(r"^\*\*Rubric \((\d+) points", text, re.M)]
    assert len(points) == len(re.findall(r"^## \w+, question \d+", text, re.M))  # one rubric per answer
    total, low, high = map(int, re.search(r"its points \((\d+) in all, (\d+) to (\d+) a question", text).groups())
    assert (total, low, high) == (sum(points), min(points), max(points))
