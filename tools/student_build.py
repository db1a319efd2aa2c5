#!/usr/bin/env python
"""Build the students' copy of the course: the notebooks without their solutions.

    python tools/student_build.py OUT_DIR [--src notebooks] [--force]

Writes

* ``OUT_DIR/notebooks/``: every notebook of ``notebooks/`` with its outputs cleared (outputs,
  execution counts, the cells' ``execution``/``collapsed``/``scrolled`` metadata, the saved widget
  state) and its jupytext pairing dropped, the pointers to the solutions replaced (below), every
  code cell otherwise as it is, so the notebooks run as the course's do, starters in place;
  other files of ``notebooks/`` as they are;
* ``OUT_DIR/benchmarks/results/``: the committed benchmark results that notebooks 08 and 09 read
  (they look for ``../benchmarks/results`` when run from a folder named ``notebooks``), copied from
  ``benchmarks/results/`` next to the source folder.

Left out: ``solutions/`` (the exercises' solutions), ``ANSWERS.md`` (the answer key), the
py:percent twins (``<name>.py`` beside ``<name>.ipynb``: the maintainers' reviewable form, with the
same pointers), hidden files and folders (``.ipynb_checkpoints``) and ``__pycache__``. The students
still need the package itself (``pip install`` the repository or its wheel): it holds no solution.

**Pointers.** In markdown, a clause that sends the reader to the solutions' files ("the solution is
in `notebooks/solutions/<name>.py` (`%load solutions/<name>.py` ...)", "Solutions:
`notebooks/solutions/<name>.py` (...)", "solutions in `notebooks/solutions/`") becomes "ask your
teacher for the solutions", and "(or its solution)" becomes "(or the solution your teacher gives
you)"; in code, a comment line that names ``solutions/`` becomes ``# (ask your teacher for the
solutions)``; no other code is touched. Then every text of the build is searched for
``solutions/`` and ``ANSWERS.md``: if one is left (a new wording), nothing is written and the build
fails (exit code 1) naming the notebook, the cell and the line, to add its wording here.

Exit codes: 0 built; 1 a pointer left; 2 a usage error (OUT_DIR not empty without ``--force``, which
replaces ``OUT_DIR/notebooks`` and ``OUT_DIR/benchmarks/results`` and nothing else).
"""
from __future__ import annotations

import argparse
import copy
import re
import shutil
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
ASK = "ask your teacher for the solutions"
LEFT_OUT_NAMES = {"solutions", "ANSWERS.md", "__pycache__"}
CLEARED_CELL_METADATA = ("execution", "collapsed", "scrolled")

# "; the solution is in `notebooks/solutions/<name>.py` (`%load solutions/<name>.py` in ...)",
# ". Solutions: `notebooks/solutions/<name>.py` (in Jupyter, `%load ...`)", "; solutions in `notebooks/solutions/`"
_CLAUSE = re.compile(
    r"(?P<lead>[;.:,]\s+|\(\s*|^)"
    r"(?:the\s+)?solutions?(?:\s+(?:is|are))?\s*(?:\bin\b|:)\s*"
    r"`[^`]*solutions/[^`]*`"
    r"(?:\s*\([^()]*%load\b[^()]*\))?",
    re.I | re.M)
_ITS_SOLUTION = re.compile(r"\(or its solution\)")
_COMMENT_LINE = re.compile(r"^(?P<indent>[ \t]*)#.*solutions/.*$", re.M)
LEAKS = re.compile(r"solutions/|solutions\\|ANSWERS\.md")


class Leak(Exception):
    pass


def _ask(match: re.Match) -> str:
    lead = match.group("lead")
    before = match.string[:match.start()].rstrip()
    capital = lead.strip() in (".", ":") or (lead == "" and (not before or before[-1] in ".:!?"))
    return lead + (ASK[0].upper() + ASK[1:] if capital else ASK)


def markdown(source: str) -> str:
    """A markdown cell with its pointers to the solutions replaced."""
    return _ITS_SOLUTION.sub("(or the solution your teacher gives you)", _CLAUSE.sub(_ask, source))


def code(source: str) -> str:
    """A code cell with its comment lines naming ``solutions/`` replaced; the code itself unchanged."""
    return _COMMENT_LINE.sub(lambda m: m.group("indent") + f"# ({ASK})", source)


def student_notebook(nb):
    """The students' version of a notebook (nbformat v4): outputs cleared, pointers replaced."""
    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)   # saved widget state: an output
    nb.metadata.pop("jupytext", None)  # the pairing with a py:percent twin the students do not get
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            for key in CLEARED_CELL_METADATA:
                cell.metadata.pop(key, None)
            cell.source = code(cell.source)
        elif cell.cell_type == "markdown":
            cell.source = markdown(cell.source)
    return nb


def leaks(nb, name: str) -> list[str]:
    """Where a notebook still points to the solutions or the answer key: 'name, cell N, line K: text'."""
    found = []
    for number, cell in enumerate(nb.cells, 1):
        for k, line in enumerate(cell.source.splitlines(), 1):
            if LEAKS.search(line):
                found.append(f"{name}, cell {number} ({cell.cell_type}), line {k}: {line.strip()[:120]}")
    return found


def _left_out(path: Path, src: Path) -> bool:
    rel = path.relative_to(src)
    if any(part.startswith(".") or part in LEFT_OUT_NAMES for part in rel.parts):
        return True
    return path.suffix == ".py" and path.with_suffix(".ipynb").exists()  # a notebook's py:percent twin


def plan(src: Path) -> dict[Path, object]:
    """relative path -> the students' notebook (nbformat) or the source file to copy; raises Leak."""
    out, problems = {}, []
    for path in sorted(p for p in src.rglob("*") if p.is_file() and not _left_out(p, src)):
        rel = path.relative_to(src)
        if path.suffix == ".ipynb":
            nb = student_notebook(nbformat.read(str(path), as_version=4))
            problems += leaks(nb, str(rel))
            out[rel] = nb
        else:
            try:
                text = path.read_text()
            except (UnicodeDecodeError, OSError):
                text = ""
            problems += [f"{rel}, line {k}: {line.strip()[:120]}" for k, line in enumerate(text.splitlines(), 1)
                         if LEAKS.search(line)]
            out[rel] = path
    if problems:
        raise Leak("pointers to the solutions or the answer key left (add their wording to "
                   "tools/student_build.py):\n  " + "\n  ".join(problems))
    return out


def build(out_dir, src=None, force=False) -> dict:
    """Write the students' copy into ``out_dir`` (the module's doc); returns what it wrote."""
    src = Path(src or ROOT / "notebooks").resolve()
    out_dir = Path(out_dir).resolve()
    if not src.is_dir():
        raise ValueError(f"no folder {src}")
    if out_dir == src or src.is_relative_to(out_dir) or out_dir.is_relative_to(src):
        raise ValueError(f"{out_dir}: must be outside {src}, and not a folder above it")
    if out_dir.exists() and any(out_dir.iterdir()) and not force:
        raise ValueError(f"{out_dir} is not empty (--force replaces its notebooks/ and benchmarks/results/)")
    files = plan(src)  # before anything is written
    results = src.parent / "benchmarks" / "results"
    notebooks_out, results_out = out_dir / "notebooks", out_dir / "benchmarks" / "results"
    for old in (notebooks_out, results_out):
        if old.exists():
            shutil.rmtree(old)
    for rel, what in files.items():
        target = notebooks_out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(what, Path):
            shutil.copy2(what, target)
        else:
            nbformat.write(what, str(target))
    if results.is_dir():
        shutil.copytree(results, results_out)
    return {"notebooks": sorted(str(r) for r, w in files.items() if not isinstance(w, Path)),
            "files": sorted(str(r) for r, w in files.items() if isinstance(w, Path)),
            "results": results.is_dir()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="student_build.py", description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir", metavar="OUT_DIR")
    p.add_argument("--src", default=None, help="the course's notebooks folder (default: this repository's)")
    p.add_argument("--force", action="store_true", help="replace OUT_DIR/notebooks and OUT_DIR/benchmarks/results")
    args = p.parse_args(argv)
    try:
        done = build(args.out_dir, args.src, args.force)
    except ValueError as e:
        p.error(str(e))
    except Leak as e:
        print(f"student_build.py: {e}", file=sys.stderr)
        return 1
    out = Path(args.out_dir)
    print(f"{len(done['notebooks'])} notebooks -> {out / 'notebooks'} (outputs cleared, solutions' pointers "
          f"replaced; solutions/, ANSWERS.md and the .py twins left out)"
          + (f", {len(done['files'])} other files" if done["files"] else "")
          + (f"; benchmark results -> {out / 'benchmarks' / 'results'}" if done["results"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
