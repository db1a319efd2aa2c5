"""The notebooks are committed without outputs and in sync with their py:percent twins
(``notebooks/*.py``, the reviewable form; `jupytext --sync notebooks/*.ipynb` refreshes them).
Executing them is nbmake's job: ``python -m pytest`` collects ``notebooks/*.ipynb`` too."""
from __future__ import annotations

import json
import re
from pathlib import Path

import jupytext
import pytest

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 4


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_saved_without_outputs(path):
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [] and cell.get("execution_count") is None, (
                f"{path.name} is saved with outputs: clear them (jupyter nbconvert --clear-output --inplace)")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_control_characters(path):
    """A backslash read as an escape ("\\rho" written in a plain string) leaves a control
    character where LaTeX was, and the formula does not render."""
    for cell in jupytext.read(path).cells:
        bad = sorted({hex(ord(c)) for c in cell.source if ord(c) < 0x20 and c not in "\n"})
        assert not bad, f"{path.name}: control characters {bad} in a cell starting {cell.source[:60]!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_in_sync_with_percent_script(path):
    script = path.with_suffix(".py")
    assert script.exists(), f"{script.name} missing: jupytext --set-formats ipynb,py:percent {path}"
    a = [(c.cell_type, c.source.strip()) for c in jupytext.read(path).cells]
    b = [(c.cell_type, c.source.strip()) for c in jupytext.read(script).cells]
    assert a == b, f"{path.name} and {script.name} differ: jupytext --sync {path}"


ROOT = Path(__file__).parent.parent
# where the course's text points into notebooks split from one another (00b, 00c and 00d; 01 and
# 01b; 04, 04b and 04c; 13, 13b and 13c): a reference left pointing at the wrong part is easy to miss
SPLIT = {"00b": "00b_triton_from_zero", "00c": "00c_episodes_and_hooks", "00d": "00d_more_scans",
         "01": "01_discounted_return", "01b": "01b_prologues_and_backward",
         "04": "04_vtrace", "04b": "04b_vtrace_fixed_point", "04c": "04c_vtrace_kernel",
         "13": "13_appendix_performance", "13b": "13b_gpu_lab", "13c": "13c_inside_the_package"}
_NB = r"\b(00[bcd]|01b?|04[bc]?|13[bc]?)"
SECTION_REF = re.compile(_NB + r"\)?,?\s+\(?sections?\s+(\d+)(?:,?\s+and\s+(\d+))?")  # "00c, sections 2 and 3"
QUESTION_REF = re.compile(_NB + r"(?:'s)?,?\s+question\s+(\d+)")                      # "00c's question 1"
EXERCISE_REFS = (re.compile(_NB + r"'s\s+`?(\w+)"),                                  # "00c's `reset_scan`"
                 re.compile(r"`(\w+)`\s+\(" + _NB + r"\)"),                          # "`reset_scan` (00c)"
                 re.compile(r"`?(\w+)`?\s+(?:from|in)\s+(?:notebook\s+)?" + _NB + r"\b"))  # "`strided_scan` in 00c"


def _course_texts():
    for pattern in ("README.md", "docs/*.md", "notebooks/*.md", "notebooks/*.py", "notebooks/solutions/*.py",
                    "rltriton_lite/*.py", "tools/*.py", "tests/*.py"):
        for path in sorted(ROOT.glob(pattern)):
            if path != Path(__file__):  # its examples are stale on purpose
                yield path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")


def stale_references(texts, sections, questions, notebook_of):
    """``(file, what)`` for each reference to a section or a question that notebook 00b or 00c does
    not have, or to an exercise as the other one's. ``sections`` and ``questions``: "00b" -> its
    numbered sections, its questions without a checker; ``notebook_of``: exercise name -> the id
    of its notebook."""
    bad = []
    for name, text in texts:
        for m in SECTION_REF.finditer(text):
            nb, numbers = m.group(1), [int(n) for n in m.groups()[1:] if n]
            if not set(numbers) <= sections[nb]:
                bad.append((name, m.group(0)))
        for m in QUESTION_REF.finditer(text):
            if int(m.group(2)) not in questions[m.group(1)]:
                bad.append((name, m.group(0)))
        for i, pattern in enumerate(EXERCISE_REFS):
            for m in pattern.finditer(text):
                nb, exercise = (m.group(1), m.group(2)) if i == 0 else (m.group(2), m.group(1))
                if exercise in notebook_of and notebook_of[exercise] != nb:
                    bad.append((name, m.group(0)))
    return bad


def test_references_into_split_notebooks_point_at_the_right_notebook():
    """"00b, section 4" after 00b kept sections 1-3, "00b's question 1" after the question moved to
    00c, or "00b's `reset_scan`" after reset_scan moved there, fails here: every reference names a
    section or a question the notebook has, and the exercise's own notebook."""
    from test_answers import unchecked_questions

    from rltriton_lite import exercises

    sections = {nb: {int(n) for n in re.findall(r"^# ## (\d+)\. ", (ROOT / "notebooks" / f"{stem}.py").read_text(),
                                                 re.M)}
                for nb, stem in SPLIT.items()}
    assert sections == {"00b": {1, 2, 3}, "00c": {1, 2, 3}, "00d": set(), "01": {1, 2, 3, 4, 5}, "01b": {1, 2},
                        "04": {1, 2, 3, 4, 5}, "04b": {1},
                        "04c": set(), "13": {1, 2, 3, 4}, "13b": {1, 2, 3, 4}, "13c": {1, 2, 3, 4, 5, 6, 7}}, sections
    questions = {nb: set(unchecked_questions(ROOT / "notebooks" / f"{stem}.py")) for nb, stem in SPLIT.items()}
    notebook_of = {name: nb.split("_")[0] for name, nb, _ in exercises.catalog()}
    example = "(00b, section 4), 00b's question 1 and 00b's\n`reset_scan`"
    assert stale_references([("an example", example)], sections, questions, notebook_of) == [
        ("an example", "00b, section 4"), ("an example", "00b's question 1"), ("an example", "00b's\n`reset_scan")]
    assert stale_references(_course_texts(), sections, questions, notebook_of) == []


def heading_anchor(text: str, github: bool) -> str:
    """The anchor a heading's rendered text gets: Jupyter joins the words with '-' (08_profiling.ipynb#3.-Two-clocks);
    GitHub, for a .md file, lowercases and drops punctuation too (README.md#notebooks-a-course)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link reads as its text
    text = re.sub(r"<[^>]+>|`|\*\*|\$", "", text).strip()
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-") if github else text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Where a link may land in a notebook or a markdown file: its headings and its <a id>s (code fences left out)."""
    if path.suffix == ".ipynb":
        texts = ["".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
                 if c["cell_type"] == "markdown"]
    else:
        texts = [re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)]
    found = set()
    for text in texts:
        found |= set(re.findall(r"<a (?:id|name)=\"([^\"]+)\"", text))
        found |= {heading_anchor(h, path.suffix == ".md") for h in re.findall(r"^#{1,6}\s+(.*)$", text, re.M)}
    return found


def broken_links(paths) -> list[tuple[str, str]]:
    """(file, link) for each markdown link with an anchor (X.ipynb#Heading, GLOSSARY.md#id, #local) that lands
    on no heading and no <a id> of its target."""
    bad, cache = [], {}
    for path in paths:
        for m in re.finditer(r"\]\(([^)\s#]*)#([^)\s]+)\)", path.read_text(encoding="utf-8")):
            target = (path.parent / m.group(1)).resolve() if m.group(1) else path
            if target.suffix not in (".ipynb", ".md"):
                continue
            if target not in cache:
                cache[target] = anchors(target) if target.exists() else set()
            if m.group(2) not in cache[target]:
                bad.append((path.name, m.group(0)))
    return bad


def test_every_link_lands_on_a_heading(tmp_path):
    """A renamed heading leaves its links dangling (00's "Reset conventions", linked from 00c and 00d, once)."""
    example = tmp_path / "a.md"
    example.write_text("# Top\n## Step 2: the `scan`\n<a id=\"x\"></a>\n[ok](#step-2-the-scan) [ok](#x) [gone](#nowhere)\n")
    assert broken_links([example]) == [("a.md", "](#nowhere)")]
    paths = [*NOTEBOOKS, *ROOT.glob("benchmarks/*.ipynb"), *ROOT.glob("notebooks/*.md"), ROOT / "README.md",
             *ROOT.glob("docs/*.md")]
    assert broken_links(paths) == []


TIERS = ("Hint 1: where to start", "Hint 2: the plan", "Hint 3: check it by hand", "Hint 4: the key lines")


def hint_tiers(nb, name: str) -> list[str]:
    """The tiers of hints (each a ``<details>`` block's summary) in the markdown between the
    exercise's previous ``exercises.attempt`` cell and its own."""
    tiers, found = [], False
    for cell in nb.cells:
        if cell.cell_type == "code" and re.search(r"exercises\s*\.\s*attempt\s*\(", cell.source):
            if re.search(rf"exercises\s*\.\s*attempt\s*\(\s*[\"']{name}[\"']", cell.source):
                found = True
                break
            tiers = []
        elif cell.cell_type == "markdown":
            tiers += re.findall(r"<details>\s*<summary>(Hint .*?)</summary>", cell.source)  # (not a "Details:" fold)
            assert cell.source.count("<details>") == cell.source.count("</details>"), cell.source[:80]
    return tiers if found else None


def test_hint_tiers_fail_where_one_is_missing():
    nb = jupytext.reads("# %% [markdown]\n# <details><summary>Hint 1: where to start</summary>\n#\n# x\n#\n"
                        "# </details>\n\n# %%\nexercises.attempt('a', a)\n\n# %% [markdown]\n"
                        "# <details><summary>Hint 2: the plan</summary>\n# </details>\n\n# %%\n"
                        "exercises.attempt('b', b)\n", fmt="py:percent")
    assert hint_tiers(nb, "a") == [TIERS[0]] and hint_tiers(nb, "b") == [TIERS[1]] and hint_tiers(nb, "c") is None
    aside = jupytext.reads("# %% [markdown]\n# <details><summary>Details: why</summary>\n#\n# x\n#\n# </details>\n\n"
                           "# %%\nexercises.attempt('a', a)\n", fmt="py:percent")
    assert hint_tiers(aside, "a") == []  # a fold of the reading's details is no hint


def _exercises():
    from rltriton_lite import exercises
    return [(name, nb) for name, nb, kind in exercises.catalog()]


@pytest.mark.parametrize("name, notebook", _exercises(), ids=[n for n, _ in _exercises()])
def test_every_exercise_has_four_tiers_of_hints(name, notebook):
    """A student who wants to try alone sees no hint; one who is stuck opens them one at a time:
    where to start, the plan, a small case to check by hand, the key lines (each a collapsed
    ``<details>`` block)."""
    nb = jupytext.read(ROOT / "notebooks" / f"{notebook}.py")
    assert hint_tiers(nb, name) == list(TIERS), f"{notebook}: {name}'s hints are {hint_tiers(nb, name)}"
