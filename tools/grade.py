#!/usr/bin/env python
"""Grade students' notebooks with the exercises' own checkers (``rltriton_lite.exercises``).

    python tools/grade.py [--seed S | --fixed] [--keys FILE] [--out grades.csv] [--compiled] STUDENT_NOTEBOOK_OR_FOLDER...
    python tools/grade.py --record-keys FILE --seed S [--exercises NAME,...]

**On unseen cases, by default**: each run draws a fresh seed (an int from 0 to 999999) and checks
every exercise with ``exercises.check(name, fn, seed=S)``, cases of the same structure as the
notebooks' but with other values, sizes and positions, which the students never saw; the seed is
written into the CSV (its ``seed`` column) and printed, and ``--seed S`` grades the same cases again
(to reproduce a verdict, or to grade a second batch like the first). ``--fixed`` grades on the
fixed cases the notebooks show instead (the students' own checks: practice, not grading; the
``seed`` column then reads ``fixed``). Unseen cases need the teacher's keys (the references that
the students' wheel leaves out, ``exercises._KEYS_FILE``), found beside the package when it is
installed from the repository (``pip install -e .``); without them grade.py stops with a usage
error, and ``--fixed`` still grades.

**The keys stay out of the graded processes.** Before any notebook runs, a process of its own
(``grade.py --record-keys``) records the keys' values on the seed's cases (their hints' slips and
the replay's second draw included) into a temporary file; the grader's processes load those values
and never the keys (``exercises._use_recorded``), so no function that computes an answer is in the
memory of a notebook's process. That process's code may not reach the solutions' folder by a path
either (an audit hook: open, link, copy, move, list, or a command that names it). A program can
still hide a path from the hook; for students you do not trust, record the values where the keys
are, ``--record-keys FILE --seed S``, and grade with ``--keys FILE`` where the solutions are not (a
container that does not mount ``notebooks/solutions``: docs/TEACHING.md, section 1).

**In the Triton interpreter, by default**, on a GPU machine too: grade.py sets
``TRITON_INTERPRET=1`` before torch, Triton or the package is imported, and the notebooks' processes
inherit it (a notebook's ``os.environ.setdefault("TRITON_INTERPRET", ...)`` leaves it as set). Some
of the checkers' verdicts are the interpreter's alone: the width of a ``tl.associative_scan`` in the
chunked exercises, the Python ``min``/``and``/``if`` on blocks that compiled Triton takes silently
elementwise, the bounds of every load and store, the atomics counted, and which elements a kernel's
``tl.store`` wrote. So a verdict does not depend on the machine, and a kernel that is only right on
a GPU is not graded correct. ``--compiled`` grades with compiled kernels instead (it needs a CUDA
GPU): faster, but those checks are then skipped or done from the kernels' code. Students on a GPU
should run their checks under ``TRITON_INTERPRET=1`` before they hand in.

Writes one CSV row per (student, notebook, exercise) into ``--out`` (its folder made if missing):
``student, notebook, exercise, status, message, source, seed``, the status one of ``correct``,
``wrong`` (the checker's verdict: a wrong value, what the task requires not done, such as no Triton
kernel of the student's launched, or a package answer called), ``not attempted`` (the starter is
untouched: it raises ``NotImplementedError``, is still ``None``, or the notebook does not define the
name), ``error`` (the function raised, did not compile, or its cell did not run) or ``timeout``, the
message the first line of what the checker said, source the file that keeps the graded code for
review (below), seed the cases' seed (``fixed`` with ``--fixed``), and ``checks_passed`` of
``checks``: partial credit, ``exercises.score``'s count of the checker's cases each checked on its
own (and its last probe where the exercise has one), all of them for ``correct``, some for a
``wrong`` answer right on part of the cases, 0 otherwise (and for an answer wrong on a key case:
the bug the exercise is about; or that broke a rule of the task, its label marked so: no kernel of
its own, a copy, a scan's result dropped, a package answer, a loop over time), and ``checks_failed``, a ``wrong`` answer's failing checks by their
labels (``exercises.checks``: each case's description, "the probe"), joined by `` | ``, so a
reader sees which cases an answer misses without running it, and ``hint``, the checker's hint for
it (the "Hint:" line under the message: where the error starts, the slip it recognises), by
which the teacher's list of common wrong answers is ordered, ``commit``, the course's commit the
checkers and keys came from (``course_commit``): a regrade with the same seed and commit gives the same
verdicts, and ``flags``, what in the notebook's code cells reaches around the checker (``SUSPECT``:
a command, links or copies of files, code loaded by hand, the checker's internals, names built from
strings, threads) where the course's own notebook of that name does not: where a review starts. Beside it, ``<csv stem>-students.csv`` has
a row per student: the exercises of each status, the checks passed, and ``points``, 1 per correct
exercise plus each other one's checks passed over its checks. ``--roster FILE`` (one student name
per line, ``#`` comments) lists the course there in its order: a student without a notebook gets 0
points and the note ``no notebook``, one graded but not on it ``not on the roster``. Prints a
summary per student and per exercise. The exit code is 0 whatever the students scored; 2 on a usage
error (no such file, no notebook found, a bad option, ``--seed`` with ``--fixed``, an ``--out``
folder that cannot be made).

**Students.** A notebook given as a file is one student, named by the file's name without
``.ipynb``. A folder is searched recursively for ``*.ipynb`` (hidden folders and
``.ipynb_checkpoints`` left out): each subfolder directly in it is one student, named by the
subfolder, with every notebook below it; each notebook directly in the folder is a student of
its own, named by the file. So ``grade.py submissions/`` grades ``submissions/alice/*.ipynb`` as
alice and ``submissions/bob.ipynb`` as bob. Every notebook is graded on its own (two copies of one
notebook give two sets of rows, told apart by the ``notebook`` column).

**Which exercises.** Those whose name a code cell binds at its top level (``def gae_pairs(...)``,
``q_lambda = None``, ``@triton.jit def q_lambda(...)``, an import ``as`` the name) or passes to
``exercises.attempt``/``exercises.check``, and those of the course notebook that the file's name
starts with (``02_gae-alice.ipynb``: notebook 02's), so a deleted starter counts as not attempted.
Notebooks with none (09, 10) are not graded; their answers are still collected (below).
``--exercises NAME,...`` grades those alone (the "Graded or practice" section of docs/TEACHING.md
lists the ones that are evidence for a summative grade), and the per-student points then count
them only; one that a student handed in no notebook for is named in the per-student note
(``missing: ...``, 0 points).

**Answers without a checker.** Each question a notebook asks without a checker has an answer cell
(tagged ``answer-N``, under the numbered questions): the student types the answer into it and
adds code cells under it if needed. ``--collect-answers`` writes ``<csv stem>-answers/<notebook>.md``
for every notebook found that asks such questions (its name starts with a course notebook's that
does, or it has answer cells), whether or not it has checked exercises: each question (from the
course's copy in notebooks/), then every student's answer cell and the cells under it, up to the
next answer cell or a heading (code fenced, with its saved outputs: text, plots counted, an error
marked "This cell raised"), "(not answered)" where the placeholder is left, or a
note where the student's notebook has no cell tagged for the question. A cell added above the
first answer cell is not collected. They are for the teacher to read: nothing in them is graded.

**Which cells run.** In a fresh Python process per notebook (forked from this one, which has
imported torch, Triton and the package once; a fresh interpreter where fork is not available or a
GPU is present: a forked child cannot use CUDA once its parent has even counted the devices), with
the notebook's folder as the working directory, an IPython shell runs the notebook's code cells in
order, from the first up to and including the last cell that binds one of its exercises' names (the
last binding is the one a top-to-bottom run of the notebook would check), except the cells of an
optional profiling section (under a markdown heading that says "optional" and "profil...", up to the
next heading of the same or a higher level) unless such a cell binds an exercise's name. While these
cells run, ``exercises.attempt`` and ``exercises.check`` do nothing (the grader checks once,
afterwards, with its seed), shell commands (``!cmd``, ``%pip``) are not run, and an error in a cell
is recorded and the next cell runs (as ``jupyter nbconvert --allow-errors``): a broken exploratory
cell costs only what depends on it. An exercise whose defining cell raised and left the name
undefined or the starter in place is an ``error`` with the cell's exception. A cell that rebinds a
name of the checker's modules (``rltriton_lite.exercises``, ``rltriton_lite.reference``) or of what
their comparisons call (``numpy``, ``numpy.testing``, ``torch``, ``torch.testing``, ``math``,
``builtins``), or changes one of their functions (``exercises._compare = ...``, ``np.isclose =
...``), makes every exercise of the notebook an ``error`` that names the cell and what it changed
(the grader puts it back after each cell). Torch's own wrapping of ``torch.manual_seed``, when a
cell's ``torch.compile`` imports ``torch._dynamo``, is not such a change: the grader imports it
before the cells run. Then each exercise is checked in turn with ``exercises.check(name, fn,
seed=S)``.

**Time limits.** ``--timeout`` (default 120 s) per exercise's check, ``--setup-timeout`` (default
300 s) for the cells. A check past its limit is a ``timeout``: the process is killed (with any
processes it started) and a fresh one runs the cells again and checks the remaining exercises; cells
past theirs make every exercise of the notebook a ``timeout``. A process that dies (a crash, out of
memory) makes the exercise being checked an ``error``, and the rest are checked in a fresh one.
``--seed S`` (an int >= 0) checks with cases drawn from S; without it, from a seed drawn for the run
(above); ``--fixed``, the fixed cases that the notebooks show. ``--jobs N`` grades N notebooks at a time.
``--log-dir DIR`` keeps what each notebook printed (``DIR/<student>__<notebook>.log``).

**Sources, for review.** Next to the CSV, the folder ``<csv stem>-sources/`` (replaced on each
run) gets ``<student>/<exercise>.py`` for every exercise whose function the notebook defines (a
starter left untouched excepted): the source of the graded function and of the student's code it
reaches (their functions, classes and ``@triton.jit`` kernels, as the checker reads them), or the
defining cell where that cannot be read. The CSV's ``source`` column names the file. A second
notebook of one student with the same exercise gets ``<exercise>-<notebook stem>.py`` (then
``-2``, ``-3`` ...).

**What a verdict means.** ``correct``: the values are right on every case (unseen ones unless
``--fixed``) and the checker's requirements hold (a kernel exercise launched a ``@triton.jit``
kernel of the student's own and returned what that kernel wrote, and its launches, run again on a
second draw of the case written into the inputs, recomputed the answer; a scan ran
``tl.associative_scan``, a hook is a ``@triton.jit`` function, the package's own answers were not
called: ``rltriton_lite.exercises``' doc lists them). It does not prove the student wrote the code:
a checker runs in the student's process and code written to defeat it can (read the checker's
frames, unpatch it); the sources are there to spot-check.

**Trust.** The students' code runs with your permissions, in the process that checks it: the
grader survives accidents (an infinite loop, a crash, a broken cell), not a notebook written to
tamper with the checker or the machine (a verdict of ``correct`` included). Grade work you do not
trust in a container, and look at the sources.
"""
from __future__ import annotations

import argparse
import ast
import collections
import csv
import functools
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

STATUSES = ("correct", "wrong", "not attempted", "error", "timeout")
SEEDS = 1_000_000  # a run's own seed is drawn from 0 .. SEEDS - 1 (short enough to type back as --seed)
ROOT = Path(__file__).resolve().parent.parent
MESSAGE_CHARS = 500
# nbformat's jsonschema would import its optional IRI checker, which compiles grammars for 1.6 s; a
# notebook's schema has no IRI field, so the grader (one import per run) goes without it
sys.modules.setdefault("rfc3987_syntax", None)


class UsageError(Exception):
    pass


def course_commit(root: Path) -> str:
    """The commit of the course checkout at ``root`` (the checkers' code and keys), with " (with changes not
    committed)" where it has them, or "unknown" outside a git checkout: the teacher's guide, section 7."""
    try:
        git = ["git", "-C", str(root)]
        commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30,
                                check=True).stdout.strip()
        dirty = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True, timeout=30,
                               check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit + (" (with changes not committed)" if dirty else "")


# --------------------------------------------------------------------------- students and notebooks

def _notebooks_under(folder: Path) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))  # .ipynb_checkpoints, .git, ...
        found += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(".ipynb") and not f.startswith(".")]
    return found


def collect(paths) -> list[tuple[str, Path]]:
    """(student, notebook) for every notebook the arguments name (the rule in the module's doc)."""
    out = []
    for arg in paths:
        p = Path(arg)
        if p.is_file():
            if p.suffix != ".ipynb":
                raise UsageError(f"{arg}: not a notebook (.ipynb)")
            out.append((p.stem, p))
        elif p.is_dir():
            found = [(nb.relative_to(p).parts[0] if len(nb.relative_to(p).parts) > 1 else nb.stem, nb)
                     for nb in _notebooks_under(p)]
            if not found:
                raise UsageError(f"{arg}: no .ipynb notebook in this folder")
            out += found
        else:
            raise UsageError(f"{arg}: no such file or folder")
    return out


# --------------------------------------------------------------------------- what to run (no torch)

@dataclass
class Plan:
    exercises: list[str]                    # in course order
    cells: list[tuple[int, str]]            # (cell number, 1-based over all cells; source) to run
    defined_in: dict[str, int]              # exercise -> the last cell that binds it
    skipped: list[int] = field(default_factory=list)  # optional profiling cells left out


_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*)$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_MENTION = re.compile(r"exercises\s*\.\s*(?:attempt|check)\s*\(\s*(?:name\s*=\s*)?[\"'](\w+)[\"']")
_DEF_LINE = re.compile(r"^(?:async\s+def|def|class)\s+(\w+)|^(\w+)\s*(?::[^=\n]*)?=(?!=)", re.M)


def _headings(markdown: str):
    """(level, text) of the markdown's headings, fenced code blocks left out."""
    fenced = False
    for line in markdown.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (m := _HEADING.match(line)):
            yield len(m.group(1)), m.group(2)


def _is_optional_profiling(text: str) -> bool:
    text = text.lower()
    return "optional" in text and "profil" in text


def _python(source: str) -> str:
    """The cell as Python: IPython's transformation of magics and shell escapes."""
    from IPython.core.inputtransformer2 import TransformerManager
    return TransformerManager().transform_cell(source)


def _targets(node) -> set[str]:
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, (ast.Tuple, ast.List)):
        return set().union(*(_targets(e) for e in node.elts)) if node.elts else set()
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    return set()


def _bound(statements) -> set[str]:
    """The names that these statements bind at module level (not inside functions or classes)."""
    names = set()
    for s in statements:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(s.name)
        elif isinstance(s, ast.Assign):
            for t in s.targets:
                names |= _targets(t)
        elif isinstance(s, (ast.AnnAssign, ast.AugAssign)):
            names |= _targets(s.target)
        elif isinstance(s, (ast.Import, ast.ImportFrom)):
            names |= {a.asname or a.name.split(".")[0] for a in s.names}
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            names |= _targets(s.target) | _bound(s.body) | _bound(s.orelse)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            names |= set().union(*(_targets(i.optional_vars) for i in s.items if i.optional_vars)) | _bound(s.body)
        elif isinstance(s, (ast.If, ast.While)):
            names |= _bound(s.body) | _bound(s.orelse)
        elif isinstance(s, ast.Try) or type(s).__name__ == "TryStar":
            names |= _bound(s.body) | _bound(s.orelse) | _bound(s.finalbody)
            for h in s.handlers:
                names |= _bound(h.body)
    return names


def bound_names(source: str) -> set[str]:
    """Names a code cell binds at its top level; for a cell that does not parse (the student's
    syntax error), the names that a line at column 0 defines or assigns."""
    try:
        return _bound(ast.parse(_python(source)).body)
    except (SyntaxError, ValueError):
        return {a or b for a, b in _DEF_LINE.findall(source)}


def plan_notebook(nb, exercise_names, course_notebooks: dict[str, list[str]], filename: str = "") -> Plan:
    """What to check and which cells to run (the rules in the module's doc). ``nb``: an nbformat
    notebook; ``exercise_names``: every exercise, in course order; ``course_notebooks``: notebook
    stem -> its exercises."""
    known = set(exercise_names)
    stem = Path(filename).stem
    wanted = {n for nb_stem, ns in course_notebooks.items() if nb_stem and stem.startswith(nb_stem) for n in ns}
    defined_in, optional, level = {}, set(), None  # level: the optional section's heading level, if in one
    for number, cell in enumerate(nb.cells, 1):
        source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        if cell.cell_type == "markdown":
            for lvl, text in _headings(source):
                if level is not None and lvl <= level:
                    level = None
                if level is None and _is_optional_profiling(text):
                    level = lvl
        elif cell.cell_type == "code":
            if level is not None:
                optional.add(number)
            for name in bound_names(source) & known:
                defined_in[name] = number
            wanted |= set(_MENTION.findall(source)) & known
    wanted |= set(defined_in)
    exercises = [n for n in exercise_names if n in wanted]
    cells, skipped = [], []
    last = max((defined_in[n] for n in exercises if n in defined_in), default=0)
    defining = set(defined_in.values())
    for number, cell in enumerate(nb.cells[:last], 1):
        if cell.cell_type != "code":
            continue
        if number in optional and number not in defining:
            skipped.append(number)
            continue
        cells.append((number, cell.source if isinstance(cell.source, str) else "".join(cell.source)))
    return Plan(exercises, cells, {n: defined_in[n] for n in exercises if n in defined_in}, skipped)


# --------------------------------------------------------------------------- the worker process

def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= MESSAGE_CHARS else line[:MESSAGE_CHARS - 3] + "..."


def _hint_of(text: str) -> str:
    """The checker's hint in its message: the line that starts with "Hint:", without the word."""
    hint = next((ln.strip() for ln in str(text).splitlines() if ln.strip().startswith("Hint:")), "")
    return hint[len("Hint:"):].strip()


def _describe(exc: BaseException) -> str:
    return _first_line(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)


def _quiet(*args, **kwargs):
    return None


def _shell():
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    cfg = Config()
    cfg.HistoryManager.enabled = False  # no sqlite file, no history thread
    if InteractiveShell.initialized():
        InteractiveShell.clear_instance()
    shell = InteractiveShell.instance(config=cfg)

    def no_shell_command(cmd, *args, **kwargs):
        print(f"[grade.py] shell command not run: {cmd}")
        return ""
    shell.system = no_shell_command  # !cmd, %pip, %conda
    shell.system_piped = shell.system_raw = shell.getoutput = no_shell_command
    return shell


def grade_function(name, fn, check, seed, cell_error=None, checks=None, credit=None
                   ) -> tuple[str, str, int | None, dict]:
    """(status, message, checks passed, details) of one exercise's function, the checks passed None
    for a correct one (all of them), details a wrong answer's ``failed`` checks (their labels) and
    the checker's ``hint``. ``cell_error``: what its defining cell raised
    ("cell 14 raised SyntaxError: ..."), the verdict where the name is missing or still the
    starter. ``checks`` and ``credit``: ``exercises.checks`` and ``exercises.credit``, which check a
    wrong answer's cases one by one and count its checks passed (else 0, and no check named)."""
    def starter(why):
        return ("error", cell_error, 0, {}) if cell_error else ("not attempted", why, 0, {})
    if fn is _MISSING:
        return starter(f"the notebook does not define {name}")
    if fn is None:
        return starter(f"{name} is still None (the starter)")
    try:
        check(name, fn, seed=seed)
    except NotImplementedError:
        return starter("the starter is untouched (it raises NotImplementedError)")
    except AssertionError as e:
        right, failed = 0, []
        if checks:
            try:  # partial credit: the cases it gets right, each checked on its own
                results = checks(name, fn, seed=seed)
                right, failed = credit(name, results)[0], [label for label, ok in results if not ok]
            except BaseException:  # noqa: BLE001 -- a case the check never reached raised
                pass
        return "wrong", _first_line(e) or "AssertionError", right, dict(failed=failed, hint=_hint_of(e))
    except BaseException as e:  # noqa: BLE001 -- anything the student's code raises, SystemExit included
        return "error", _describe(e), 0, {}
    return "correct", "", None, {}


_MISSING = object()


def graded_source(fn, cell_number=None, cell_source=None) -> str:
    """What a teacher reviews: the source of ``fn`` and of the student's code it reaches (their
    functions, classes and @triton.jit kernels, as the checker reads them: ``exercises._Code``);
    where none can be read, the cell that defines it."""
    from rltriton_lite import exercises as ex

    try:
        text = ex._Code(fn).sources()
    except Exception:  # noqa: BLE001 -- whatever the student bound to the name
        text = ""
    if not text.strip():
        text = (f"# (no source could be read from the function: the cell that defines it, cell {cell_number})\n"
                + (cell_source or "")) if cell_source else f"# (no source could be read: {fn!r})\n"
    return text


_START_S = 120.0  # what a notebook's process may take to start, before the setup's time limit


def _checker_state(modules) -> dict:
    """What a notebook's cells must leave as it is in the checker's modules (the checks and the
    references they compare with): each name's object, and each function's code and defaults."""
    return {(m, k): (v, getattr(v, "__code__", None), getattr(v, "__defaults__", None),
                     getattr(v, "__kwdefaults__", None)) for m in modules for k, v in vars(m).items()}


def _changed_and_put_back(state) -> list[str]:
    """The names of ``state`` that the cells rebound or whose function they changed (its code or
    defaults), each put back as it was."""
    changed = []
    for (module, name), (obj, code, defaults, kwdefaults) in state.items():
        now = vars(module).get(name, _MISSING)
        if now is obj and getattr(obj, "__code__", None) is code and getattr(obj, "__defaults__", None) is defaults \
                and getattr(obj, "__kwdefaults__", None) is kwdefaults:
            continue
        changed.append(f"{module.__name__}.{name}")
        setattr(module, name, obj)
        if code is not None:
            obj.__code__, obj.__defaults__, obj.__kwdefaults__ = code, defaults, kwdefaults
    return changed


def _import_dynamo():
    """Import torch._dynamo, as a notebook's first ``torch.compile`` does (08's): the import wraps
    ``torch.manual_seed`` in place, which the checks of the checker's state would take for a cell
    that changed the checker. Imported once in the grader's process, a forked child has it already."""
    try:
        import torch._dynamo  # noqa: F401
    except ImportError:  # a torch without it: no notebook can compile either
        pass


def record_keys_file(path, seed, only=None):
    """The keys' values on ``seed``'s cases (of ``only``'s exercises, or all) into ``path``, recorded by a
    process of their own (``grade.py --record-keys``): the caller never loads the keys."""
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--record-keys", str(path), "--seed", str(seed)]
                          + (["--exercises", ",".join(sorted(only))] if only else []), capture_output=True, text=True,
                          timeout=600)
    if done.returncode != 0:
        raise UsageError(f"recording the keys' values failed:\n{done.stderr}")
    return str(path)


def _solutions_closed(folder: Path, *files):
    """An audit hook: a notebook's code may not reach the teacher's solutions ``folder`` (its
    solutions and keys), nor ``files`` (the keys' values), by a path: not open a file there, link,
    copy or move one, or start a command that names the folder. A command can still be written to
    hide the name: grade students you do not trust where the folder is not (docs/TEACHING.md,
    section 1)."""
    folder = os.path.realpath(folder)
    files = {os.path.realpath(f) for f in files if f}
    paths = {"open", "os.link", "os.symlink", "os.rename", "os.truncate", "shutil.copyfile", "shutil.copytree",
             "shutil.move", "os.listdir", "os.scandir"}
    commands = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "pty.spawn"}

    def strings(args):
        for a in args:
            if isinstance(a, (str, bytes, os.PathLike)):
                yield os.fsdecode(a)
            elif isinstance(a, (list, tuple)):
                yield from strings(a)

    def hook(event, args):
        if event in paths:
            for a in strings(args):
                path = os.path.realpath(a)
                if path == folder or path.startswith(folder + os.sep) or path in files:
                    raise PermissionError(f"the grader lets no notebook read the teacher's solutions ({path})")
        elif event in commands:
            named = [a for a in strings(args) if folder in a or os.path.basename(folder) in a]
            if named:
                raise PermissionError(f"the grader lets no notebook read the teacher's solutions ({named[0]})")
    return hook


def _worker(conn, notebook, cells, exercises, defined_in, seed, log_path, ipython_dir, keys=None):
    """The child: run the cells, then check each exercise, reporting on ``conn``."""
    try:
        os.setsid()  # its own process group: killed with whatever it starts
    except OSError:
        pass
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1), os.dup2(log, 2)  # what the notebook prints, its subprocesses' too, goes to the log
    sys.stdout = sys.stderr = open(log, "w", buffering=1, errors="replace", closefd=False)
    os.environ["MPLBACKEND"] = "Agg"
    os.environ["IPYTHONDIR"] = ipython_dir  # the shell's profile folder: the grader's, removed afterwards
    os.chdir(Path(notebook).resolve().parent)
    from rltriton_lite import exercises as ex
    from rltriton_lite import reference

    check, attempt, checks, credit = ex.check, ex.attempt, ex.checks, ex.credit
    ex.check = ex.attempt = _quiet  # the notebook's own checks do nothing while its cells run
    import builtins
    import math

    import numpy
    import numpy.testing
    import torch.testing
    _import_dynamo()  # before the snapshot: its import rebinds torch.manual_seed, which is no tampering
    # the checker's modules, and what its comparisons call (np.isclose = ... would pass anything)
    ex._use_recorded()  # the keys' values, never the keys: nothing in this process computes an answer
    checker = _checker_state((ex, reference, numpy, numpy.testing, torch, torch.testing, math, builtins))
    values = ex._load_recorded(keys) if keys else {}  # the seed's: given to the checker after the cells ran
    sys.addaudithook(_solutions_closed(ex._KEYS_FILE.parent, keys))
    shell = _shell()
    conn.send(("ready",))  # imports done: the setup's time limit starts now
    errors, tampered = {}, None
    for number, source in cells:
        conn.send(("cell", number))
        print(f"\n[grade.py] cell {number}", flush=True)
        result = shell.run_cell(source, silent=True, store_history=False)
        err = result.error_before_exec or result.error_in_exec
        if err is not None:
            errors[number] = _describe(err)
        changed = _changed_and_put_back(checker)
        if changed and tampered is None:
            tampered = (f"cell {number} changed the checker ({', '.join(changed)}): a notebook may call the checks, "
                        "not change them; nothing of this notebook is graded")
        sys.stdout.flush(), sys.stderr.flush()
    ex.check, ex.attempt = check, attempt
    ex._use_recorded(values)  # the checks need them; the cells, which could have looked them up, are done
    del values
    conn.send(("setup", errors))
    cell_sources = dict(cells)
    for name in exercises:
        conn.send(("start", name))
        print(f"\n[grade.py] checking {name}", flush=True)
        fn = shell.user_ns.get(name, _MISSING)
        if fn is not _MISSING and fn is not None:
            conn.send(("source", name, graded_source(fn, defined_in.get(name), cell_sources.get(defined_in.get(name)))))
        cell_error = errors.get(defined_in.get(name))
        status, message, right, details = ("error", tampered, 0, {}) if tampered else grade_function(
            name, fn, check, seed, f"cell {defined_in[name]} raised {cell_error}" if cell_error else None, checks,
            credit)
        sys.stdout.flush(), sys.stderr.flush()
        conn.send(("result", name, status, message, right, details))
    conn.send(("done",))
    conn.close()


# --------------------------------------------------------------------------- the grader

@dataclass
class Job:
    student: str
    notebook: Path
    plan: Plan | None
    results: dict = field(default_factory=dict)     # exercise -> (status, message, checks passed or None: all)
    sources: dict = field(default_factory=dict)     # exercise -> the graded code's source (graded_source)
    details: dict = field(default_factory=dict)     # exercise -> a wrong answer's checks failed and hint
    cell_errors: dict = field(default_factory=dict)  # cell number -> "Type: message", as the cells ran
    pending: list = field(default_factory=list)
    log_path: str = ""
    proc: object = None
    conn: object = None
    phase: str = ""            # "cells" or "check"
    cell: int = 0              # the cell running
    current: str | None = None
    deadline: float = 0.0


class Grader:
    def __init__(self, seed=None, timeout=120.0, setup_timeout=300.0, jobs=1, log_dir=None, progress=None,
                 only=None, keys=None):
        self.seed, self.timeout, self.setup_timeout, self.jobs = seed, timeout, setup_timeout, jobs
        self.keys = keys  # the keys' values on the seed's cases (--record-keys' file): the notebooks never hold the keys
        self.only = None if only is None else frozenset(only)  # the exercises graded (None: all)
        self.log_dir = log_dir
        self.progress = progress or (lambda line: None)
        self.ctx = None
        self._logs = set()  # the log files' names, told apart

    def _context(self):
        import multiprocessing as mp
        if self.ctx is None:
            import torch
            # (torch.cuda.is_initialized() is not enough: torch.cuda.is_available() alone poisons a fork)
            fork = "fork" in mp.get_all_start_methods() and not torch.cuda.is_available()
            self.ctx = mp.get_context("fork" if fork else "spawn")
            if fork:
                _import_dynamo()  # once here, not in every child (seconds each)
        return self.ctx

    def grade(self, students: list[tuple[str, Path]]) -> list[tuple[str, str, str, str, str, int]]:
        import nbformat
        from rltriton_lite import exercises as ex

        names = [n for n in ex.names() if self.only is None or n in self.only]
        course = collections.defaultdict(list)
        for name, nb_stem, _kind in ex.catalog():
            if name in names:
                course[nb_stem].append(name)
        self._tmp = tmp = tempfile.mkdtemp(prefix="grade-")
        # Triton's cache for the checks' compiles: the run's own folder (a container's user may have no home)
        cache = None if "TRITON_CACHE_DIR" in os.environ else os.environ.setdefault("TRITON_CACHE_DIR",
                                                                                    os.path.join(tmp, "triton"))
        if self.seed is not None and self.keys is None:  # the keys' values, for processes that never hold the keys
            self.keys = record_keys_file(os.path.join(tmp, "keys.npz"), self.seed, self.only)
        self.graded = jobs = []  # kept for a look afterwards (cell_errors)
        try:
            for i, (student, path) in enumerate(students):
                job = Job(student, path, None)
                try:
                    job.plan = plan_notebook(nbformat.read(str(path), as_version=4), names, course, path.name)
                except Exception as e:  # noqa: BLE001 -- not JSON, not a notebook
                    stem_exercises = [n for s, ns in course.items() if path.stem.startswith(s) for n in ns]
                    for name in stem_exercises or [""]:
                        job.results[name] = ("error", f"cannot read the notebook: {_describe(e)}", 0)
                    self.progress(f"{student} {path.name}: cannot read the notebook: {_describe(e)}")
                    jobs.append(job)
                    continue
                if job.plan.exercises:
                    job.pending = list(job.plan.exercises)
                    job.log_path = self._log_path(tmp, i, student, path)
                    jobs.append(job)
            self._run(jobs)
        finally:
            if cache is not None:
                os.environ.pop("TRITON_CACHE_DIR", None)
            shutil.rmtree(tmp, ignore_errors=True)
        rows = []
        for job in jobs:
            order = job.plan.exercises if job.plan else list(job.results)
            for name in order:
                status, message, right = job.results[name]
                rows.append((job.student, str(job.notebook), name, status, message, right))
        return rows

    def _log_path(self, tmp, i, student, path):
        if self.log_dir is None:
            return os.path.join(tmp, f"{i}.log")
        os.makedirs(self.log_dir, exist_ok=True)
        safe = re.sub(r"[^\w.-]+", "_", f"{student}__{path.stem}")
        name, k = safe, 1
        while name in self._logs:
            k += 1
            name = f"{safe}-{k}"
        self._logs.add(name)
        log = os.path.join(self.log_dir, f"{name}.log")
        if os.path.exists(log):
            os.remove(log)  # this run's output only
        return log

    # the event loop: at most self.jobs children at a time, one per notebook
    def _run(self, jobs):
        from multiprocessing.connection import wait

        queue = collections.deque(j for j in jobs if j.pending)
        running = []
        try:
            while queue or running:
                while queue and len(running) < self.jobs:
                    job = queue.popleft()
                    self._start(job)
                    running.append(job)
                now = time.monotonic()
                ready = wait([j.conn for j in running], timeout=max(0.0, min(j.deadline for j in running) - now))
                for job in running:
                    if job.conn in ready:
                        self._receive(job)
                for job in running:
                    if job.proc is not None and time.monotonic() > job.deadline:
                        self._receive(job)  # what arrived meanwhile first
                        if job.proc is not None and time.monotonic() > job.deadline:
                            self._timed_out(job)
                for job in [j for j in running if j.proc is None]:
                    running.remove(job)
                    if job.pending:
                        queue.appendleft(job)  # a fresh process for the rest
        finally:  # an interrupt (Ctrl-C): no process left behind
            for job in running:
                self._stop(job)

    def _start(self, job):
        ctx = self._context()
        receive, send = ctx.Pipe(duplex=False)
        p = job.plan
        job.proc = ctx.Process(target=_worker, daemon=True,
                               args=(send, str(job.notebook), p.cells, job.pending, p.defined_in, self.seed,
                                     job.log_path, os.path.join(self._tmp, "ipython"), self.keys))
        job.proc.start()
        send.close()
        job.conn, job.phase, job.current, job.cell = receive, "cells", None, 0
        # a spawned process imports torch, Triton and the package first (seconds, more on a busy machine)
        job.deadline = time.monotonic() + self.setup_timeout + _START_S

    def _receive(self, job):
        try:
            while job.conn.poll():
                msg = job.conn.recv()
                kind = msg[0]
                if kind == "ready":
                    job.deadline = time.monotonic() + self.setup_timeout
                elif kind == "cell":
                    job.cell = msg[1]
                elif kind == "setup":
                    job.phase = "check"
                    job.cell_errors = msg[1]
                    job.deadline = time.monotonic() + self.timeout
                elif kind == "start":
                    job.current = msg[1]
                    job.deadline = time.monotonic() + self.timeout
                elif kind == "source":
                    job.sources[msg[1]] = msg[2]
                elif kind == "result":
                    _, name, status, message, right, details = msg
                    if status == "correct" and (name != job.current or name not in job.sources):
                        # (the worker sends the graded code before a verdict, for the exercise it started)
                        status, message, right = "error", ("the grader got a verdict for code it never read: the "
                                                           "notebook wrote to the grader's pipe"), 0
                    job.details[name] = details
                    self._record(job, name, status, message, right)
                    job.current = None
                    job.deadline = time.monotonic() + self.timeout  # until the next "start"
                elif kind == "done":
                    for name in list(job.pending):  # a worker checks every exercise before "done": a forged one
                        self._record(job, name, "error", "the grader got no verdict for it before the notebook's "
                                                         "process said done: the notebook wrote to the grader's pipe")
                    self._stop(job)  # (a fresh process for the rest would run the same cells, and loop)
                    return
        except (EOFError, OSError):
            self._died(job)

    def _record(self, job, name, status, message, right=0):
        job.results[name] = (status, message, right)
        if name in job.pending:
            job.pending.remove(name)
        self.progress(f"{job.student} {job.notebook.name} {name}: {status}" + (f" ({message})" if message else ""))

    def _exit(self, job) -> str:
        job.proc.join(2)
        code = job.proc.exitcode
        if code is None:
            return "did not exit"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit code {code}"

    def _tail(self, job) -> str:
        try:
            with open(job.log_path, errors="replace") as f:
                lines = [ln.strip() for ln in f.read()[-4000:].splitlines() if ln.strip()]
            return f"; it printed last: {lines[-1][:200]}" if lines else ""
        except OSError:
            return ""

    def _died(self, job):
        how = self._exit(job) if job.proc is not None else "died"
        tail = self._tail(job)
        if job.phase == "cells":
            for name in list(job.pending):
                self._record(job, name, "error", f"the Python process running the notebook's cells died in cell "
                                                 f"{job.cell} ({how}){tail}")
        elif job.current is not None:
            self._record(job, job.current, "error", f"the Python process died while checking {job.current} ({how})"
                                                   f"{tail}")
        elif job.pending:  # between two checks: should not happen; do not loop on it
            self._record(job, job.pending[0], "error", f"the Python process died ({how}){tail}")
        self._stop(job)

    def _timed_out(self, job):
        if job.phase == "cells":
            for name in list(job.pending):
                self._record(job, name, "timeout", f"the notebook's cells did not finish within "
                                                   f"{self.setup_timeout:g} s (stuck in cell {job.cell})")
        else:
            name = job.current or job.pending[0]
            self._record(job, name, "timeout", f"the check of {name} did not finish within {self.timeout:g} s")
        self._stop(job)

    def _stop(self, job):
        if job.proc is not None:
            if job.proc.is_alive():
                try:
                    os.killpg(job.proc.pid, signal.SIGKILL)  # the child and whatever it started
                except (ProcessLookupError, PermissionError):
                    pass
                job.proc.kill()
            job.proc.join(5)
            if job.proc.exitcode is not None:
                job.proc.close()  # its pipe's file descriptor
        if job.conn is not None:
            job.conn.close()
        job.proc = job.conn = None


# --------------------------------------------------------------------------- the sources, for review

def _safe(name: str) -> str:
    return re.sub(r"[^\w.-]+", "_", name).lstrip(".") or "_"


# What reaches around the checker, looked for in a notebook's code cells (the grader's `flags` column):
# each kind flagged where the notebook has a text of it that the course's own notebook of that name has not
SUSPECT = {
    "a command": r"\bsubprocess\b|\bos\.(?:system|popen|exec\w*|spawn\w*|posix_spawn)\b|\bpty\b",
    "links or copies of files": r"\bos\.(?:link|symlink|rename|replace)\b|\bshutil\.",
    "code loaded by hand": r"(?<![.\w])(?:exec|eval|compile|__import__)\s*\(|\bimportlib\b",  # (not torch.compile)
    "the checker's internals": r"\bexercises\._\w+|\b_keys\b|_KEYS_FILE|\b_recorded\w*|\b_digest\b|__closure__|"
                               r"cell_contents|\blinecache\b|sys\._getframe|currentframe|\.f_(?:back|locals|globals)\b|"
                               r"\bgc\b|\bctypes\b|settrace|\bConnection\b|\.send\(|\b_exit\b",
    "names built from strings": r"getattr\s*\([^)]*[\"']\s*\+|__dict__\s*\[|\bvars\s*\(",
    "threads or processes": r"\bthreading\b|\bmultiprocessing\b|\bconcurrent\.futures\b",
}


@functools.cache
def _course_code(stem: str) -> str:
    """The code cells of the course's notebook that a student's notebook ``stem`` is a copy of, or ""."""
    import nbformat
    for path in sorted((ROOT / "notebooks").glob("*.ipynb"), key=lambda p: -len(p.stem)):
        if stem.startswith(path.stem):
            return "\n".join(c.source for c in nbformat.read(str(path), as_version=4).cells if c.cell_type == "code")
    return ""


def flags(cells, stem: str) -> list[str]:
    """What in the notebook's code cells ``cells`` ((number, source)) reaches around the checker and
    the course's own notebook does not have: a spot review's first stop (``SUSPECT``)."""
    code, course = "\n".join(src for _, src in cells), _course_code(stem)
    found = {what: {m.group(0) for m in re.finditer(pattern, code)} for what, pattern in SUSPECT.items()}
    return [what for what, pattern in SUSPECT.items()
            if found[what] - {m.group(0) for m in re.finditer(pattern, course)}]


def write_sources(folder: Path, jobs, flagged=None) -> dict:
    """Write ``folder/<student>/<exercise>.py`` for each graded function (the rule in the module's
    doc; the folder replaced), headed by its notebook's ``flagged`` ({notebook: flags}); returns
    ``{(student, notebook, exercise): path}``."""
    if folder.is_dir():
        shutil.rmtree(folder)
    paths, taken = {}, set()
    for job in jobs:
        for name, text in job.sources.items():
            status, message, _ = job.results.get(name, ("", "", 0))
            if status == "not attempted":
                continue
            student, stem = _safe(job.student), _safe(job.notebook.stem)
            path, k = folder / student / f"{name}.py", 1
            while path in taken:  # another notebook of the student's with this exercise
                k += 1
                path = folder / student / (f"{name}-{stem}.py" if k == 2 else f"{name}-{stem}-{k}.py")
            taken.add(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            said = (flagged or {}).get(str(job.notebook))
            head = (f"# student: {job.student}\n# notebook: {job.notebook}\n# exercise: {name}\n"
                    f"# verdict: {status}" + (f" ({message})" if message else "") + "\n"
                    + (f"# flags (the notebook's cells): {said}\n" if said else "")
                    + "# What the grader checked: the function bound to the exercise's name and the student's code it "
                      "reaches.\n\n")
            path.write_text(head + text)
            paths[job.student, str(job.notebook), name] = path
    return paths


# --------------------------------------------------------------------------- the command line

def _table(title, rows_by, key_order):
    width = max([len(title)] + [len(k) for k in key_order])
    head = f"{title:<{width}}  " + "  ".join(f"{s:>{max(len(s), 7)}}" for s in STATUSES)
    lines = [head, "-" * len(head)]
    for key in key_order:
        c = rows_by[key]
        lines.append(f"{key:<{width}}  " + "  ".join(f"{c[s]:>{max(len(s), 7)}}" for s in STATUSES))
    return "\n".join(lines)


def summary(rows) -> str:
    by_student, by_exercise = collections.defaultdict(collections.Counter), collections.defaultdict(collections.Counter)
    for student, _nb, exercise, status, *_ in rows:
        by_student[student][status] += 1
        by_exercise[exercise or "(unreadable)"][status] += 1
    return (_table("student", by_student, list(dict.fromkeys(r[0] for r in rows))) + "\n\n"
            + _table("exercise", by_exercise, list(dict.fromkeys(r[2] or "(unreadable)" for r in rows))))


def read_roster(path) -> list[str]:
    """The students of a course, one name per line (as grade.py names them: a subfolder's name or
    a notebook's stem); blank lines and lines starting with # left out."""
    names = [ln.strip() for ln in Path(path).read_text().splitlines()]
    return list(dict.fromkeys(n for n in names if n and not n.startswith("#")))


def write_students(path: Path, rows, n_checks: dict, roster=None, expected=None, handed_in=None) -> None:
    """One row per student: how many exercises of each status, the checks passed of those graded,
    and ``points``: 1 per correct exercise, and for any other its checks passed over its checks
    (partial credit; 0 where not attempted), out of ``max_points`` (the exercises ``expected``, or
    those graded). With a ``roster``, its students in its order, one
    without a notebook with 0 points and the note "no notebook", and those graded but not on it
    after them, noted "not on the roster". With ``expected`` (``--exercises``' names), those a
    student handed in no notebook for are noted "missing: ..." (0 points each), also where the
    student's notebooks (``handed_in``: the students with one) hold none of them."""
    by = collections.defaultdict(list)
    for student, _nb, exercise, status, _msg, right in rows:
        by[student].append((exercise, status, right))
    order = list(dict.fromkeys((roster or []) + list(by) + sorted(handed_in or ())))
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["student", "exercises", *STATUSES, "checks_passed", "checks", "points", "max_points", "note"])
        for student in order:
            graded = by.get(student, [])
            counts = collections.Counter(status for _, status, _ in graded)
            passed = sum(right for _, _, right in graded)
            total = sum(n_checks.get(ex, 0) for ex, _, _ in graded)
            points = sum(1.0 if status == "correct" else right / n_checks[ex] if n_checks.get(ex) else 0.0
                         for ex, status, right in graded)
            handed = student in by or student in (handed_in or ())
            note = ("no notebook" if not handed else
                    "not on the roster" if roster is not None and student not in roster else "")
            missing = [ex for ex in expected or () if ex not in {e for e, _, _ in graded}]
            if missing and handed:
                note = "; ".join(filter(None, (note, "missing: " + ", ".join(missing))))
            most = len(expected) if expected else len(graded)  # out of: the exercises set, else those graded
            w.writerow([student, len(graded), *(counts[s] for s in STATUSES), passed, total, f"{points:.2f}", most,
                        note])


_ANSWER_TAG = re.compile(r"answer-(\d+)")  # a notebook's cell for its question N without a checker
_QUESTION = re.compile(r"^(\d+)\. ", re.M)


def answers(nb) -> dict[int, list]:
    """A notebook's answers to its questions without a checker: question number -> its answer cell
    (tagged ``answer-N``) and the cells under it, up to the next answer cell or a heading."""
    found, current = {}, None
    for cell in nb.cells:
        tag = next((m for t in cell.get("metadata", {}).get("tags", []) if (m := _ANSWER_TAG.fullmatch(t))), None)
        if tag is not None:
            current = int(tag.group(1))
            found[current] = [cell]
        elif cell.cell_type == "markdown" and cell.source.lstrip().startswith("#"):
            current = None
        elif current is not None:
            found[current].append(cell)
    return found


def questions(nb) -> dict[int, str]:
    """The questions without a checker of a notebook (the numbered list after "Without a checker")."""
    cell = next((c for c in nb.cells if c.cell_type == "markdown" and "Without a checker" in c.source), None)
    if cell is None:
        return {}
    parts = _QUESTION.split(cell.source)  # [before, "1", text, "2", text, ...]
    return {int(n): " ".join(text.split()) for n, text in zip(parts[1::2], parts[2::2])}


OUTPUT_CHARS = 2000  # of each text output an answer shows; the notebook has the rest


def _outputs_text(cell) -> str:
    """A code cell's saved outputs as markdown: its text (fenced, cut at OUTPUT_CHARS), its plots
    counted, and an error it raised, marked."""
    parts, images = [], 0
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            parts.append(f"**This cell raised** `{out.get('ename', '?')}: {out.get('evalue', '')}`")
            continue
        data = out.get("data", {})
        if any(k.startswith("image/") for k in data):  # (its text/plain is only "<Figure ...>")
            images += 1
            continue
        text = out.get("text", "") if out.get("output_type") == "stream" else data.get("text/plain", "")
        text = ("".join(text) if isinstance(text, list) else text).strip()
        if text:
            if len(text) > OUTPUT_CHARS:
                text = text[:OUTPUT_CHARS] + "\n... (cut: the rest is in the notebook)"
            parts.append(f"```text\n{text}\n```")
    if images:
        parts.append(f"*({images} plot{'s' if images > 1 else ''}: open the notebook to see "
                     f"{'them' if images > 1 else 'it'})*")
    return "\n\n".join(parts)


def _answer_text(cells) -> str | None:
    """An answer as markdown (code cells fenced, with their saved outputs), or None where the
    student left the placeholder."""
    first, rest = cells[0], [c for c in cells[1:] if c.source.strip()]
    if "*Your answer here" in first.source and not rest:
        return None
    shown = []
    for c in cells:
        if c.cell_type == "code":
            shown.append(f"```python\n{c.source.strip()}\n```")
            outputs = _outputs_text(c)
            if outputs:
                shown.append(outputs)
        else:
            shown.append(c.source.strip())
    return "\n\n".join(shown)


def write_answers(folder: Path, students: list[tuple[str, Path]]) -> list[Path]:
    """``--collect-answers``: per course notebook that asks questions without a checker (checked
    exercises or not), ``<folder>/<notebook>.md`` with each question (from the course's copy in
    notebooks/) and every student's answer to it, "(not answered)" where the placeholder is left;
    an answer's code cells come with their saved outputs (text, plots counted, an error marked).
    Returns the files written."""
    import nbformat

    course = sorted((p.stem for p in (ROOT / "notebooks").glob("*.ipynb")), key=len, reverse=True)
    asked = {}  # course notebook -> its questions without a checker, read once

    def asked_in(stem):
        if stem not in asked:
            source = ROOT / "notebooks" / f"{stem}.ipynb"
            asked[stem] = questions(nbformat.read(str(source), as_version=4)) if source.exists() else {}
        return asked[stem]

    by_notebook = collections.defaultdict(list)
    for student, path in students:
        try:
            nb = nbformat.read(str(path), as_version=4)
        except Exception:  # noqa: BLE001 -- not a notebook: grading reports it
            continue
        got = answers(nb)
        stem = next((c for c in course if path.stem.startswith(c)), path.stem)
        # every notebook that asks such questions, with checked exercises or without (09, 10)
        if got or asked_in(stem):
            by_notebook[stem].append((student, got))
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, got in sorted(by_notebook.items()):
        lines = [f"# {stem}: the answers to the questions without a checker", ""]
        for q in sorted(set(asked_in(stem)) | {q for _, a in got for q in a}):
            lines += [f"## {q}. {asked_in(stem).get(q, '')}".rstrip(), ""]
            for student, a in got:
                text = (_answer_text(a[q]) if q in a else
                        f"(no answer cell tagged answer-{q} in this notebook: read the notebook itself)")
                lines += [f"### {student}", "", text if text is not None else "(not answered)", ""]
        path = folder / f"{stem}.md"
        path.write_text("\n".join(lines), encoding="utf-8")
        written.append(path)
    return written


def draw_seed() -> int:
    """A seed for one run: the grading's cases, unseen by the students (the module's doc)."""
    return secrets.randbelow(SEEDS)


def _parser():
    p = argparse.ArgumentParser(prog="grade.py", description=__doc__.split("\n\n")[0] + " By default on unseen "
                                "cases, drawn from a seed of the run's own (written into the CSV; --seed S to "
                                "reproduce, --fixed for the notebooks' own cases).",
                                epilog="The rules (unseen cases and the interpreter by default, students, exercises, "
                                       "cells, time limits, the sources kept for review, what a verdict means): the "
                                       "module's docstring.")
    p.add_argument("paths", nargs="*", metavar="STUDENT_NOTEBOOK_OR_FOLDER")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--seed", type=int, default=None,
                       help="draw the unseen cases from this int >= 0 (default: a seed drawn for this run, from 0 to "
                            "999999, written into the CSV's seed column and printed: --seed with it grades the same "
                            "cases again)")
    which.add_argument("--fixed", action="store_true",
                       help="grade on the fixed cases the notebooks show (the students' own checks) instead of unseen "
                            "ones; the CSV's seed column reads 'fixed'")
    p.add_argument("--out", default="grades.csv", help="the CSV to write (default grades.csv; its folder is made "
                                                          "if missing); each graded "
                                                          "function's source goes to the folder <csv stem>-sources/ "
                                                          "beside it (<student>/<exercise>.py), for review")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per exercise's check (default 120)")
    p.add_argument("--setup-timeout", type=float, default=300.0,
                   help="seconds for a notebook's cells (default 300)")
    p.add_argument("--jobs", "-j", type=int, default=1, help="notebooks graded at a time (default 1)")
    p.add_argument("--log-dir", default=None, help="keep what each notebook printed here")
    p.add_argument("--roster", default=None, help="a file of the course's students, one name per line: the "
                                                  "per-student CSV lists each (0 points and 'no notebook' for one "
                                                  "without) and notes the graded ones not on it")
    p.add_argument("--exercises", default=None, metavar="NAME,...",
                   help="grade only these exercises (comma-separated), e.g. the ones docs/TEACHING.md lists as safe "
                        "to grade for a summative grade: the points then count those alone")
    p.add_argument("--collect-answers", action="store_true",
                   help="also write the students' answers to the questions without a checker (their answer "
                        "cells, tagged answer-N, and the cells under them), one file per notebook in "
                        "<csv stem>-answers/")
    p.add_argument("--record-keys", default=None, metavar="FILE",
                   help="record the teacher's keys' values on the cases of --seed S (of --exercises, if given) into "
                        "FILE, grade nobody and stop: grade then with --keys FILE --seed S where the solutions are "
                        "not (docs/TEACHING.md, section 1)")
    p.add_argument("--keys", default=None, metavar="FILE",
                   help="the keys' values that --record-keys wrote (its seed is the grading's): grade without the "
                        "teacher's keys in this checkout")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    p.add_argument("--compiled", action="store_true",
                   help="grade with compiled Triton kernels (needs a CUDA GPU). Default: the Triton interpreter "
                        "(TRITON_INTERPRET=1, set for the graded notebooks' processes), on a GPU machine too, because "
                        "some checks are the interpreter's only (a chunked scan's width, Python min/and on blocks, "
                        "out-of-bounds accesses, atomics, which elements a kernel stored): the same verdict on every "
                        "machine")
    return p


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.seed is not None and args.seed < 0:
        parser.error("--seed must be an int >= 0")
    if args.timeout <= 0 or args.setup_timeout <= 0 or args.jobs < 1:
        parser.error("--timeout and --setup-timeout must be > 0, --jobs >= 1")
    if args.record_keys is not None and (args.seed is None or args.paths or args.keys):
        parser.error("--record-keys takes --seed S (and --exercises), no notebooks and no --keys")
    if args.record_keys is None and not args.paths:
        parser.error("give the students' notebooks or folders")
    if args.keys is not None and args.fixed:
        parser.error("--keys holds the values of a seed's cases: not with --fixed")
    try:
        students = collect(args.paths) if args.paths else []
    except UsageError as e:
        parser.error(str(e))
    out_dir = Path(args.out).resolve().parent
    try:
        out_dir.mkdir(parents=True, exist_ok=True)  # a fresh folder per run: --out results/2024-06/grades.csv
    except OSError as e:
        parser.error(f"--out {args.out}: cannot make the folder {out_dir}: {e}")
    try:
        roster = read_roster(args.roster) if args.roster else None
    except (OSError, UnicodeDecodeError) as e:
        parser.error(f"--roster {args.roster}: {e}")

    # Before torch, Triton and the package are imported (the children inherit all three and the
    # environment): CUDA left uninitialised in this process, and the Triton interpreter unless
    # --compiled (the module's doc says why).
    if args.compiled:
        os.environ.pop("TRITON_INTERPRET", None)
    else:
        os.environ["TRITON_INTERPRET"] = "1"
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    import torch
    if args.compiled and not torch.cuda.is_available():
        parser.error("--compiled grades with compiled Triton kernels: it needs a CUDA GPU (without it, leave it "
                     "out: the interpreter grades on a CPU)")
    try:
        import rltriton_lite  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(ROOT))
    import rltriton_lite.exercises
    if rltriton_lite.exercises.INTERPRET == args.compiled:  # imported before main() could set it
        parser.error("rltriton_lite was imported " + ("with" if args.compiled else "without")
                     + " TRITON_INTERPRET=1 before grade.py could set it: run grade.py as a script")
    only = None
    if args.exercises is not None:
        only = [n.strip() for n in args.exercises.split(",") if n.strip()]
        unknown = sorted(set(only) - set(rltriton_lite.exercises.names()))
        if unknown or not only:
            parser.error(f"--exercises: no exercise named {', '.join(unknown) or 'in it'} "
                         f"(rltriton_lite.exercises.names() lists them)")
    ex = rltriton_lite.exercises
    if args.record_keys is not None:  # the teacher's step, where the keys are: no student's code runs here
        if not ex._KEYS_FILE.is_file():
            parser.error(f"--record-keys needs the teacher's keys, {ex._KEYS_FILE}")
        Path(args.record_keys).resolve().parent.mkdir(parents=True, exist_ok=True)
        ex._record_keys(args.record_keys, seed=args.seed, only=only)
        print(f"the keys' values on the cases of seed {args.seed} -> {args.record_keys}: grade with "
              f"--keys {args.record_keys} --seed {args.seed}")
        return 0
    import nbformat  # noqa: F401  (a grading run's: not the keys' step, which reads no notebook)
    from IPython.core.interactiveshell import InteractiveShell  # noqa: F401
    keys = args.keys
    if keys is not None:
        try:
            recorded = ex._recorded_seed(keys)
        except (OSError, ValueError, KeyError) as e:
            parser.error(f"--keys {keys}: not a file that --record-keys wrote ({e})")
        if args.seed is not None and args.seed != recorded:
            parser.error(f"--keys {keys} holds the cases of seed {recorded}, not of --seed {args.seed}")
    elif not args.fixed and not ex._KEYS_FILE.is_file():
        parser.error(f"grading on unseen cases needs the teacher's keys, {ex._KEYS_FILE}: install the package from "
                     "the repository (pip install -e .), as the README says, grade with --keys FILE that "
                     "--record-keys wrote there, or grade the notebooks' own cases with --fixed")
    seed = None if args.fixed else recorded if keys is not None and args.seed is None else \
        args.seed if args.seed is not None else draw_seed()
    tmp = None
    if seed is not None and keys is None:
        tmp = tempfile.mkdtemp(prefix="grade-keys-")
        try:
            keys = record_keys_file(os.path.join(tmp, "keys.npz"), seed, only)
        except UsageError as e:
            parser.error(str(e))
    ex._use_recorded()  # here too: never the keys; nor, until the notebooks have run, the seed's values
    progress = (lambda line: None) if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    grader = Grader(seed=seed, timeout=args.timeout, setup_timeout=args.setup_timeout, jobs=args.jobs,
                    log_dir=args.log_dir, progress=progress, only=only, keys=keys)
    t0 = time.monotonic()
    try:
        rows = grader.grade(students)
        ex._use_recorded(ex._load_recorded(keys) if keys else None)  # what the checks counted (n_checks)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    out = Path(args.out).resolve()
    flagged = {str(job.notebook): ", ".join(flags(job.plan.cells, job.notebook.stem)) if job.plan else ""
               for job in grader.graded}
    sources = write_sources(out.parent / f"{out.stem}-sources", grader.graded, flagged)
    n_checks = {name: rltriton_lite.exercises._n_checks(name, seed) for name in {r[2] for r in rows} if name}
    rows = [(*row, n_checks[row[2]] if right is None else right) for *row, right in rows]  # correct: every check
    commit = course_commit(Path(rltriton_lite.__file__).resolve().parent.parent)  # the checkers' code and keys
    with open(args.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["student", "notebook", "exercise", "status", "message", "source", "seed", "checks_passed",
                    "checks", "checks_failed", "hint", "commit", "flags"])
        details = {(job.student, str(job.notebook), name): d
                   for job in grader.graded for name, d in job.details.items()}
        for *row, right in rows:
            path = sources.get((row[0], row[1], row[2]))
            d = details.get((row[0], row[1], row[2]), {})
            # (the labels without their "(seed=...)": the seed column says it)
            failed = [re.sub(r" \(seed=\d+\)", "", label) for label in d.get("failed", [])]
            w.writerow([*row, path.relative_to(out.parent).as_posix() if path else "",
                        "fixed" if seed is None else seed, right, n_checks.get(row[2], ""), " | ".join(failed),
                        d.get("hint", ""), commit, flagged.get(row[1], "")])
    per_student = out.parent / f"{out.stem}-students.csv"
    write_students(per_student, rows, n_checks, roster, only, {student for student, _ in students})
    if args.collect_answers:
        for path in write_answers(out.parent / f"{out.stem}-answers", students):
            print(f"answers -> {path}")
    notebooks = len({r[1] for r in rows})
    print(f"{len({r[0] for r in rows})} students, {notebooks} notebooks with exercises "
          f"(of {len(students)} found), {len(rows)} grades, "
          + ("the notebooks' fixed cases (--fixed)" if seed is None else f"cases drawn from seed {seed}"
             + (f" (drawn for this run: --seed {seed} grades the same cases again)" if args.seed is None else ""))
          + (", compiled kernels" if args.compiled else ", in the Triton interpreter")
          + f", {time.monotonic() - t0:.0f} s -> {args.out}, per student {per_student.name}\n")
    if rows:
        print(summary(rows))
    absent = [name for name in (roster or []) if name not in {r[0] for r in rows}]
    if absent:
        print(f"on the roster, no notebook graded (0 points in {per_student.name}): {', '.join(absent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
