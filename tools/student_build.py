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
  ``benchmarks/results/`` next to the source folder;
* the other files of the repository that the notebooks link to or name, at the same relative
  paths: ``docs/DESIGN.md`` (13 cites it, 09 links it), ``benchmarks/README.md``, and every
  ``docs/…``, ``tools/…`` or ``benchmarks/…`` file a notebook or a copied markdown file names
  (``tools/wall_probe.py``, say), but the teacher's tools (``TEACHERS_ONLY``: the grader and
  this build);
* ``OUT_DIR/STUDENTS.md``: the README's "For students" section (getting started, prerequisites,
  the order and hours, how the exercises are checked, handing in), the students' instructions,
  ending with the commit the handout was built from (``git rev-parse HEAD``);
* ``OUT_DIR/requirements.txt``: what the notebooks need beside the package (torch, triton, numpy,
  matplotlib, ipywidgets, jupyterlab, tqdm, gymnasium), pinned as the repository's
  ``requirements.txt`` pins them, without its test, lint and integration tools.

Left out: ``solutions/`` (the exercises' solutions), ``ANSWERS.md`` (the answer key and its
rubrics), ``WRONG_ANSWERS.md`` (the TAs' list of common wrong answers and the checkers' messages
for them), the py:percent twins (``<name>.py`` beside ``<name>.ipynb``: the maintainers' reviewable
form, with the same pointers), hidden files and folders (``.ipynb_checkpoints``) and
``__pycache__``. The students still need the package itself: give them its wheel, ``python -m pip
wheel . --no-deps -w OUT_DIR`` in the repository (the package's modules only, no notebook, no
solution, and of the teacher's keys, ``notebooks/solutions/_keys.py``, only their values on the
fixed cases), and have them ``pip install rltriton_lite-*.whl -r requirements.txt`` (README, "Using
this in a course"), not ``pip install`` of the repository, which would hand them its
``notebooks/solutions/`` and ``ANSWERS.md``.

**Pointers.** In markdown, a clause that sends the reader to the solutions' files ("the solution is
in `notebooks/solutions/<name>.py` (`%load solutions/<name>.py` ...)", "Solutions:
`notebooks/solutions/<name>.py` (...)", "solutions in `notebooks/solutions/`") becomes "ask your
teacher for the solutions", and "(or its solution)" becomes "(or the solution your teacher gives
you)"; in code, a comment line that names ``solutions/`` becomes ``# (ask your teacher for the
solutions)``; no other code is touched. Then every text of the build is searched for
``solutions/`` and ``ANSWERS.md``: if one is left (a new wording), nothing is written and the build
fails (exit code 1) naming the notebook, the cell and the line, to add its wording here.

**Links.** Every relative link of a notebook's markdown (``[notebook 08](08_profiling.ipynb)``,
``[DESIGN](../docs/DESIGN.md#…)``) and of a copied markdown file must reach a file of the build,
and every ``docs/``, ``tools/`` or ``benchmarks/`` file a notebook names must exist in the
repository: otherwise nothing is written and the build fails (exit code 1), naming the link.

Exit codes: 0 built; 1 a pointer left, or a link or a named file missing; 2 a usage error (OUT_DIR
not empty without ``--force``, which replaces ``OUT_DIR/notebooks``, ``OUT_DIR/benchmarks/results``,
the copied files and ``OUT_DIR/requirements.txt``, and nothing else).
"""
from __future__ import annotations

import argparse
import copy
import os
import re
import shutil
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
ASK = "ask your teacher for the solutions"
LEFT_OUT_NAMES = {"solutions", "ANSWERS.md", "WRONG_ANSWERS.md", "__pycache__"}
CLEARED_CELL_METADATA = ("execution", "collapsed", "scrolled")
# files of the repository copied into every build (when the repository has them), beside those named
ALWAYS = ("docs/DESIGN.md", "benchmarks/README.md")
# the teacher's tools, named in the notebooks ("`tools/grade.py --collect-answers` gathers the answers") but
# not copied: the grader's doc says how it checks, which a student needs no more than its code
TEACHERS_ONLY = {"tools/grade.py", "tools/student_build.py", "tools/lab_probe.py"}
# a file of the repository named in a notebook's text: `tools/wall_probe.py`, docs/DESIGN.md, ...
NAMED = re.compile(r"(?<![\w./~-])((?:docs|tools|benchmarks)/[\w./-]*\w\.(?:md|py|sh|txt|json))\b")
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")  # a markdown link's target
CODE_SPAN = re.compile(r"```.*?```|`[^`\n]*`", re.S)  # code, where "](" is not a link
# what the notebooks import beside the package: the students' requirements.txt keeps these lines
STUDENT_PACKAGES = ("torch", "triton", "numpy", "matplotlib", "ipywidgets", "jupyterlab", "tqdm", "gymnasium")
REQUIREMENTS_HEADER = """\
# What the course's notebooks need beside rltriton_lite, pinned as the course was tested.
# Install:  pip install rltriton_lite-*.whl -r requirements.txt   (the wheel your teacher gives you)
# Without a GPU, first: pip install torch==<the pin below> --index-url https://download.pytorch.org/whl/cpu
# With a GPU, first a CUDA build of torch (it brings its own triton), then this file without the
# torch and triton lines.
"""

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


def leaking_lines(where: str, text: str) -> list[str]:
    """The lines of ``text`` that point to the solutions or the answer key: 'where, line K: text'."""
    return [f"{where}, line {k}: {line.strip()[:120]}" for k, line in enumerate(text.splitlines(), 1)
            if LEAKS.search(line)]


def leaks(nb, name: str) -> list[str]:
    """Where a notebook still points to the solutions or the answer key: 'name, cell N, line K: text'."""
    return [found for number, cell in enumerate(nb.cells, 1)
            for found in leaking_lines(f"{name}, cell {number} ({cell.cell_type})", cell.source)]


def _left_out(path: Path, src: Path) -> bool:
    rel = path.relative_to(src)
    if any(part.startswith(".") or part in LEFT_OUT_NAMES for part in rel.parts):
        return True
    return path.suffix == ".py" and path.with_suffix(".ipynb").exists()  # a notebook's py:percent twin


def _texts(what) -> list[tuple[str, str]]:
    """(kind, text) of a planned notebook's cells, of a text file (kind "markdown" for .md), or of
    a markdown string."""
    if isinstance(what, str):
        return [("markdown", what)]
    if isinstance(what, Path):
        try:
            text = what.read_text()
        except (UnicodeDecodeError, OSError):
            return []
        return [("markdown" if what.suffix == ".md" else "text", text)]
    return [(cell.cell_type, cell.source) for cell in what.cells]


def named_files(files: dict, root: Path) -> tuple[list[str], list[str]]:
    """The repository files (relative to ``root``) that the planned notebooks and markdown files
    name, outside ``benchmarks/results/`` (copied whole), plus ``ALWAYS``; and the problems: a
    named file the repository does not have."""
    named, problems = {p for p in ALWAYS if (root / p).is_file()}, []
    for rel, what in files.items():
        for _, text in _texts(what):
            for name in NAMED.findall(text):
                if name.startswith("benchmarks/results/"):
                    continue
                if (root / name).is_file():
                    named.add(name) if name not in TEACHERS_ONLY else None
                else:
                    problems.append(f"{rel}: names {name}, which {root} does not have")
    return sorted(named), problems


def dangling_links(files: dict, extras: list[str], results: list[str], root: Path, pages=None) -> list[str]:
    """The relative links, in the notebooks' markdown, the copied markdown files and ``pages``
    ({path in OUT_DIR: markdown}, the build's own), that reach no file of the build (paths
    relative to OUT_DIR: notebooks/..., the extras, the results)."""
    built = {f"notebooks/{rel.as_posix()}" for rel in files} | set(extras) | set(results)
    folders = {str(Path(b).parent.as_posix()) for b in built}
    texts = [(f"notebooks/{rel.as_posix()}", what) for rel, what in files.items()]
    texts += [(extra, root / extra) for extra in extras if extra.endswith(".md")]
    problems = []
    for where, what in texts + list((pages or {}).items()):
        for kind, text in _texts(what):
            if kind != "markdown":
                continue
            for target in LINK.findall(CODE_SPAN.sub("", text)):
                if re.match(r"^[a-z][a-z0-9+.-]*:|^#", target, re.I):
                    continue  # a URL, a mail address, an anchor in the same file
                path = target.split("#", 1)[0]
                resolved = os.path.normpath(os.path.join(os.path.dirname(where), path)).replace(os.sep, "/")
                if resolved not in built and resolved.rstrip("/") not in folders:
                    problems.append(f"{where}: a link to {target}, which the build does not have")
    return problems


def students_page(readme: Path) -> str:
    """STUDENTS.md: the README's "For students" section, up to the next heading of its level or
    above, under a title of its own (its links are relative to OUT_DIR, as the README's are to
    the repository)."""
    text = readme.read_text(encoding="utf-8")
    start = text.index("#### For students\n") + len("#### For students\n")
    end = re.search(r"^#{1,4} ", text[start:], re.M)
    body = text[start:start + end.start() if end else len(text)].strip()
    return ("# The course: for students\n\n(From the course's README.)\n\n" + body + "\n\n"
            + built_from(readme.parent))


def built_from(root: Path) -> str:
    """The last line of STUDENTS.md: the commit the handout was built from (the teacher's guide,
    section 7: build and grade from one commit all term), or that it is not known."""
    from grade import course_commit  # (tools/grade.py, beside this file)
    commit = course_commit(root)
    if commit == "unknown":
        return "*This handout was built outside a git checkout: its commit is not known.*\n"
    return f"*This handout was built from the course's commit {commit}.*\n"


def student_requirements(requirements: Path) -> str:
    """The students' requirements.txt: ``REQUIREMENTS_HEADER``, then the lines of the repository's
    ``requirements.txt`` that pin ``STUDENT_PACKAGES``."""
    keep = []
    for line in requirements.read_text().splitlines():
        name = re.match(r"\s*([A-Za-z0-9_.-]+)", line)
        if name and not line.lstrip().startswith(("#", "-")) and name.group(1).lower() in STUDENT_PACKAGES:
            keep.append(line.split("#", 1)[0].rstrip())
    return REQUIREMENTS_HEADER + "\n".join(keep) + "\n"


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
            problems += leaking_lines(str(rel), text)
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
        raise ValueError(f"{out_dir} is not empty (--force replaces its notebooks/, benchmarks/results/, the "
                         "copied files and requirements.txt)")
    root = src.parent
    files = plan(src)  # before anything is written
    results = root / "benchmarks" / "results"
    result_files = ([p.relative_to(root).as_posix() for p in results.rglob("*") if p.is_file()]
                    if results.is_dir() else [])
    readme = root / "README.md"
    students = students_page(readme) if readme.is_file() else None
    pages = {} if students is None else {"STUDENTS.md": students}
    extras, problems = named_files(files, root)
    problems += leaks_in_files([root / e for e in extras], root)
    problems += leaking_lines("STUDENTS.md", students or "")
    problems += dangling_links(files, extras, result_files, root, pages)
    if problems:
        raise Leak("the build would not stand alone (a pointer to the solutions, a link or a named file "
                   "missing):\n  " + "\n  ".join(problems))
    requirements = root / "requirements.txt"
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
    for extra in extras:
        (out_dir / extra).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / extra, out_dir / extra)
    if requirements.is_file():
        (out_dir / "requirements.txt").write_text(student_requirements(requirements))
    if students is not None:
        (out_dir / "STUDENTS.md").write_text(students, encoding="utf-8")
    return {"notebooks": sorted(str(r) for r, w in files.items() if not isinstance(w, Path)),
            "files": sorted(str(r) for r, w in files.items() if isinstance(w, Path)),
            "results": results.is_dir(), "extras": extras, "requirements": requirements.is_file(),
            "students": students is not None}


def leaks_in_files(paths, root: Path) -> list[str]:
    """Lines of the copied repository files that point to the solutions or the answer key."""
    return [found for path in paths for found in leaking_lines(str(path.relative_to(root)), path.read_text())]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="student_build.py", description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir", metavar="OUT_DIR")
    p.add_argument("--src", default=None, help="the course's notebooks folder (default: this repository's)")
    p.add_argument("--force", action="store_true", help="replace OUT_DIR/notebooks, OUT_DIR/benchmarks/results, "
                   "the copied files and OUT_DIR/requirements.txt")
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
          f"replaced; solutions/, ANSWERS.md, WRONG_ANSWERS.md and the .py twins left out)"
          + (f", {len(done['files'])} other files" if done["files"] else "")
          + (f"; benchmark results -> {out / 'benchmarks' / 'results'}" if done["results"] else "")
          + (f"; the files they name: {', '.join(done['extras'])}" if done["extras"] else "")
          + ("; requirements.txt" if done["requirements"] else "")
          + ("; STUDENTS.md, their instructions" if done["students"] else ""))
    print(f"Give the students this folder and the package's wheel: python -m pip wheel . --no-deps -w {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
