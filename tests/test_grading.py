"""The teachers' tools: tools/grade.py (grades students' notebooks with the exercises' checkers,
one process per notebook, with time limits) and tools/student_build.py (the notebooks without
their solutions). Cheap exercises only (numpy, hook, concept kinds): the whole file takes seconds."""
from __future__ import annotations

import collections
import csv
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from rltriton_lite import exercises
from solution_files import solution

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


def _tool(name):
    # imported by its own name from tools/ (on sys.path, which multiprocessing hands to a spawned
    # child: with CUDA initialised the grader spawns rather than forks, and the child imports it)
    if str(ROOT / "tools") not in sys.path:
        sys.path.insert(0, str(ROOT / "tools"))
    return importlib.import_module(name)


grade = _tool("grade")
student_build = _tool("student_build")
# one worker, the file's tests in a row: its module fixtures (the graded submissions, the student
# build) are made once, not again after another module's tests
pytestmark = pytest.mark.xdist_group("grading")

HEADER = ("import os\n\nimport torch\n\nif not torch.cuda.is_available():\n"
          "    os.environ.setdefault(\"TRITON_INTERPRET\", \"1\")\n\n"
          "import triton\nimport triton.language as tl\n\nfrom rltriton_lite import exercises")
STARTER = {
    "matrix_compose": "def matrix_compose(p, q):\n    (A1, b1), (A2, b2) = p, q\n"
                      "    # YOUR CODE: return the pair (A, b) of \"p first, then q\"\n    raise NotImplementedError\n",
    "gae_pairs": "def gae_pairs(rewards, values, next_values, terminated, truncated, gamma, lam):\n"
                 "    # YOUR CODE: return (a, b), tensors shaped like rewards\n    raise NotImplementedError\n",
    "vtrace_floor_bytes": "def vtrace_floor_bytes(B, T, elem_bytes):\n    # YOUR CODE\n    raise NotImplementedError\n",
    "q_lambda": "# YOUR CODE: replace the next line by your @triton.jit def q_lambda(X, P, offs, t, m, T)\n"
                "q_lambda = None\n",
}
CORRECT = {name: (NOTEBOOKS / "solutions" / f"{name}.py").read_text() for name in STARTER}
WRONG_GAE_PAIRS = ("def gae_pairs(rewards, values, next_values, terminated, truncated, gamma, lam):\n"
                   "    delta = rewards + gamma * (~terminated) * next_values - values\n"
                   "    # the trace runs on past a truncation\n"
                   "    a = gamma * lam * (~terminated).to(rewards.dtype)\n"
                   "    a[..., -1] = 0.0  # the window's last step resets\n"
                   "    return a, delta\n")
LOOPS = "def matrix_compose(p, q):\n    while True:\n        pass\n"
RAISES = "def vtrace_floor_bytes(B, T, elem_bytes):\n    return B * T // 0\n"
NO_COLON = "@triton.jit\ndef q_lambda(X, P, offs, t, m, T)\n    return 0.0, 0.0\n"


def _notebook(path: Path, *cells):
    """A student's notebook: markdown for strings starting with '## ', code for the others; each
    exercise's cell followed by its exercises.attempt cell, as in the course."""
    nb = new_notebook()
    nb.cells.append(new_code_cell(HEADER))
    for cell in cells:
        if cell.startswith("## "):
            nb.cells.append(new_markdown_cell(cell))
            continue
        nb.cells.append(new_code_cell(cell, execution_count=3, outputs=[new_output("stream", text="hi\n")]))
        for name in STARTER:
            if f"def {name}(" in cell or f"{name} = None" in cell:
                nb.cells.append(new_code_cell(f"exercises.attempt({name!r}, {name})"))
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Four students, one process per notebook, 2 at a time, 3 s per check, 8 s for the cells (a loaded CI
    machine took more than 4)."""
    sub = tmp_path_factory.mktemp("submissions")
    _notebook(sub / "alice" / "week1" / "course.ipynb",
              "## Exercises", CORRECT["matrix_compose"], "1 / 0  # an exploratory cell that fails",
              "## 6. Optional: profile it", "import time\ntime.sleep(60)  # skipped, or alice's cells time out",
              "## 7. Exercises, continued",
              WRONG_GAE_PAIRS, STARTER["vtrace_floor_bytes"], STARTER["q_lambda"],
              "while True:  # after the last exercise: never run\n    pass")
    _notebook(sub / "bob.ipynb", LOOPS, CORRECT["gae_pairs"], RAISES, NO_COLON)
    _notebook(sub / "carol" / "course.ipynb", "import time\ntime.sleep(3600)  # the cells never finish (idle: no CPU)",
              CORRECT["matrix_compose"], CORRECT["gae_pairs"])
    _notebook(sub / "carol" / ".ipynb_checkpoints" / "course-checkpoint.ipynb", CORRECT["matrix_compose"])
    dave = sub / "dave" / "00_associative_scan-dave.ipynb"  # the course notebook, the starter deleted
    _notebook(dave, "x = 1")
    out = sub / "grades.csv"
    roster = sub.parent / "roster.txt"  # (outside the submissions)
    roster.write_text("# the course\nalice\nbob\ncarol\ndave\nerin\n")
    code = _grade_script("--out", str(out), "--timeout", "3", "--setup-timeout", "8", "--jobs", "2", "-q",
                         "--roster", str(roster), str(sub)).returncode
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    return code, {(r["student"], r["exercise"]): (r["status"], r["message"]) for r in rows}, rows, out


def test_grades(graded):
    code, g, rows, _ = graded
    assert code == 0  # a grader: students failing is no error
    status = {k: v[0] for k, v in g.items()}
    assert status == {
        ("alice", "matrix_compose"): "correct",
        ("alice", "gae_pairs"): "wrong",
        ("alice", "vtrace_floor_bytes"): "not attempted",  # the starter raises NotImplementedError
        ("alice", "q_lambda"): "not attempted",            # the starter is None
        ("bob", "matrix_compose"): "timeout",              # an infinite loop: killed, the rest in a new process
        ("bob", "gae_pairs"): "correct",
        ("bob", "vtrace_floor_bytes"): "error",
        ("bob", "q_lambda"): "error",                      # its cell does not compile
        ("carol", "matrix_compose"): "timeout",            # the cells never finish
        ("carol", "gae_pairs"): "timeout",
        ("dave", "matrix_compose"): "not attempted",       # named by the file: notebook 00's exercises
        ("dave", "combine_arrays"): "not attempted",
        ("dave", "chunked_reset_scan"): "not attempted",
    }, rows
    assert len(rows) == len(g)  # the checkpoint copy is not a notebook of its own
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert {r["commit"] for r in rows} == {grade.course_commit(ROOT)} and rows[0]["commit"].startswith(head)
    seeds = {r["seed"] for r in rows}  # no --seed, no --fixed: one seed drawn for the run, in every row
    assert len(seeds) == 1 and seeds.pop().isdigit(), rows
    assert g["alice", "gae_pairs"][1].startswith("gae_pairs, ")  # the checker's message: the case that failed
    assert f"(seed={rows[0]['seed']})" in g["alice", "gae_pairs"][1]  # on the unseen cases of that seed
    assert "NotImplementedError" in g["alice", "vtrace_floor_bytes"][1]
    assert "still None" in g["alice", "q_lambda"][1]
    assert "within 3 s" in g["bob", "matrix_compose"][1]
    assert g["bob", "vtrace_floor_bytes"][1].startswith("ZeroDivisionError")
    assert "SyntaxError" in g["bob", "q_lambda"][1] and "cell 8" in g["bob", "q_lambda"][1]
    assert "cells did not finish within 8 s (stuck in cell 2)" in g["carol", "matrix_compose"][1]
    assert "does not define matrix_compose" in g["dave", "matrix_compose"][1]
    assert all("\n" not in m for _, m in g.values())
    assert {Path(r["notebook"]).relative_to(Path(r["notebook"]).parents[2]).as_posix()
            for r in rows if r["student"] == "alice"} == {"alice/week1/course.ipynb"}


def test_partial_credit_and_a_row_per_student(graded):
    """Each grade counts the checks passed (the cases, each on its own, and a last probe where the
    exercise has one): all for a correct answer, none for alice's wrong gae_pairs (it multiplies a
    NaN next value by 0: wrong on the key case, exercises.score), none for a timeout. Beside the CSV, <stem>-students.csv: a row per
    student of the roster, in its order, points 1 per correct exercise plus a wrong one's share of
    checks; erin, on the roster without a notebook, 0 and "no notebook"."""
    _, _, rows, out = graded
    r = {(row["student"], row["exercise"]): row for row in rows}
    checks = int(r["alice", "gae_pairs"]["checks"])
    assert checks >= 2 and r["alice", "gae_pairs"]["checks_passed"] == "0", r["alice", "gae_pairs"]
    assert r["alice", "matrix_compose"]["checks_passed"] == r["alice", "matrix_compose"]["checks"] != "0"
    assert r["bob", "matrix_compose"]["checks_passed"] == "0"  # a timeout
    # which checks a wrong answer misses, by their labels: here the cases with a NaN behind a termination
    # (the labels without their "(seed=...)": the seed column has it) and the checker's hint
    failed = r["alice", "gae_pairs"]["checks_failed"].split(" | ")
    seed = int(r["alice", "gae_pairs"]["seed"])
    assert failed and failed == [c[0].removesuffix(f" (seed={seed})") for c in exercises.cases("gae_pairs", seed)
                                 if "NaN" in c[0]], failed
    assert r["alice", "gae_pairs"]["hint"].startswith("that step is ")  # the line under the message, "Hint:" dropped
    assert r["alice", "matrix_compose"]["checks_failed"] == r["bob", "matrix_compose"]["checks_failed"] == ""
    assert r["alice", "matrix_compose"]["hint"] == r["bob", "matrix_compose"]["hint"] == ""
    assert {row["flags"] for row in rows} == {""}  # nothing that reaches around the checker
    with open(out.parent / "grades-students.csv", newline="") as f:
        students = {row["student"]: row for row in csv.DictReader(f)}
    assert list(students) == ["alice", "bob", "carol", "dave", "erin"]
    alice = students["alice"]
    share = int(r["alice", "gae_pairs"]["checks_passed"]) / checks
    assert alice["correct"] == "1" and alice["wrong"] == "1" and alice["not attempted"] == "2", alice
    assert float(alice["points"]) == pytest.approx(1 + share, abs=0.005), alice
    assert students["bob"]["points"] == "1.00" and students["dave"]["points"] == "0.00"
    assert students["erin"]["note"] == "no notebook" and students["erin"]["points"] == "0.00"
    assert all(row["note"] == "" for name, row in students.items() if name != "erin")


def test_the_graded_sources_are_kept_for_review(graded):
    """Beside the CSV, <csv stem>-sources/<student>/<exercise>.py: the graded function's source
    (and the student's code it reaches), for every exercise whose function the notebook defines
    but an untouched starter; the CSV's source column names the file."""
    _, g, rows, out = graded
    folder = out.parent / "grades-sources"
    source = {(r["student"], r["exercise"]): r["source"] for r in rows}
    written = {p.relative_to(folder).as_posix() for p in folder.rglob("*.py")}
    assert written == {"alice/matrix_compose.py", "alice/gae_pairs.py",  # not alice's two starters
                       "bob/matrix_compose.py", "bob/gae_pairs.py", "bob/vtrace_floor_bytes.py"}, written
    # (bob's q_lambda cell does not compile: no function; carol's cells never finish: nothing to read)
    for (student, exercise), path in source.items():
        assert path == (f"grades-sources/{student}/{exercise}.py"
                        if f"{student}/{exercise}.py" in written else ""), (student, exercise, path)
    wrong = (folder / "alice" / "gae_pairs.py").read_text()
    assert "# verdict: wrong (gae_pairs, " in wrong and "# exercise: gae_pairs" in wrong
    assert WRONG_GAE_PAIRS.strip() in wrong  # the student's code, as written
    assert CORRECT["matrix_compose"].split("solution =")[0].strip().splitlines()[-1] in \
        (folder / "alice" / "matrix_compose.py").read_text()
    assert LOOPS.strip() in (folder / "bob" / "matrix_compose.py").read_text()  # a timeout's code too
    assert "# verdict: timeout" in (folder / "bob" / "matrix_compose.py").read_text()


def test_graded_source_reaches_the_student_s_helpers_and_kernels():
    ns = {}
    exec(compile("def f(x):\n    return x + 1\n", "<cell 7>", "exec"), ns)
    text = grade.graded_source(ns["f"], 7, "the cell's text")
    assert "the cell's text" in text and "cell 7" in text  # <cell 7> is no file: the defining cell instead
    assert "(from " not in text  # a notebook's own code: no file named
    text = grade.graded_source(solution("returns_autograd"))
    for part in ("def returns_autograd(", "class Returns(", "def forward(ctx", "def backward(ctx",
                 "def _returns_prologue(", "def _transposed_prologue("):
        assert text.count(part) == 1, (part, text)
    # code imported from a file says which: here the teacher's solution, as a student's import of it would
    assert text.startswith(f"# (from {NOTEBOOKS / 'solutions' / 'returns_autograd.py'})\n"), text


@pytest.fixture(scope="module")
def seed_5_graded(tmp_path_factory):
    """One run on seed 5 (one grader start) for the two tests below: mallory's and oscar's routes to the
    teacher's solutions and to the seed's expected values."""
    sub = tmp_path_factory.mktemp("seed5")
    aside = tmp_path_factory.mktemp("aside")
    load = ("import importlib.util\nfrom rltriton_lite import exercises as ex\n"
            "spec = importlib.util.spec_from_file_location('s', ex._KEYS_FILE.parent / 'matrix_compose.py')\n"
            "mod = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(mod)\n"
            "matrix_compose = mod.solution")
    read = ("from rltriton_lite import exercises as ex\nns = {}\n"
            "exec((ex._KEYS_FILE.parent / 'n_step_returns.py').read_text(), ns)\nn_step_returns = ns['solution']")
    link = ("import os, sys, importlib\nfrom rltriton_lite import exercises as ex\n"
            f"os.link(ex._KEYS_FILE.parent / 'q_lambda.py', {str(aside / 'my_q_lambda.py')!r})\n"
            f"sys.path.insert(0, {str(aside)!r})\nq_lambda = importlib.import_module('my_q_lambda').q_lambda")
    dig = ("import inspect\nfrom rltriton_lite import exercises as ex\n"
           "def warp_sectors(addresses, nbytes):\n"
           "    guarded = ex._keys().warp_sectors\n"
           "    key = [c.cell_contents for c in guarded.__closure__ if inspect.isfunction(c.cell_contents)][0]\n"
           "    return key(addresses, nbytes)")
    _notebook(sub / "mallory" / "00_associative_scan.ipynb", load, read, link, dig)
    table = ("from rltriton_lite import exercises\n"
             "_TABLE = [c[3] for c in exercises.cases('matrix_compose', seed=5)]\n"
             "def matrix_compose(p, q):\n    return _TABLE[0]")
    lookup = ("import numpy as np\nfrom rltriton_lite import exercises\n"
              "def n_step_returns(rewards, next_values, terminated, gamma, n):\n"
              "    for v in exercises._recorded().values():\n"
              "        if np.shape(v) == tuple(rewards.shape):\n            return v\n")
    _notebook(sub / "oscar" / "00_associative_scan.ipynb", table, lookup)
    out = sub.parent / "seed5.csv"
    done = _grade_script("--out", str(out), "-q", "--seed", "5", "--exercises",
                         "matrix_compose,n_step_returns,q_lambda,warp_sectors", str(sub))
    assert done.returncode == 0, done.stderr
    by = collections.defaultdict(dict)
    with open(out, newline="") as f:
        for r in csv.DictReader(f):
            by[r["student"]][r["exercise"]] = r
    return by, aside


def test_a_notebook_cannot_read_the_solutions(seed_5_graded):
    """The teacher's solutions and keys sit beside the package where the grader runs. The graded
    notebook's process never loads the keys (it holds their values on the seed's cases, recorded by
    a process of their own), and its code may not reach the solutions' folder by a path (an audit
    hook): a cell that loads a solution, reads its text, or links it elsewhere fails, and so does a
    function that digs the keys out of the checker. (The eighth teacher review's routes.)"""
    by, aside = seed_5_graded
    rows = by["mallory"]
    assert {e: r["status"] for e, r in rows.items()} == dict.fromkeys(
        ("matrix_compose", "n_step_returns", "q_lambda", "warp_sectors"), "error"), rows
    for e in ("matrix_compose", "n_step_returns", "q_lambda"):
        assert "PermissionError: the grader lets no notebook read the teacher's solutions" in rows[e]["message"], rows
    assert "'NoneType' object has no attribute 'warp_sectors'" in rows["warp_sectors"]["message"], rows
    # the flags column: what the cells do that the course's notebook 00 does not, for a spot review
    assert {r["flags"] for r in rows.values()} == {"links or copies of files, code loaded by hand, the checker's "
                                                   "internals"}, rows
    assert not (aside / "my_q_lambda.py").exists()


def test_a_notebook_cannot_look_up_the_seed_s_expected_values(seed_5_graded):
    """The seed's expected values reach the graded process only after its cells have run, so a cell
    cannot tabulate them (exercises.cases on the seed fails there), and while a check runs the
    checker's table of them refuses the student's function (the ninth teacher review's routes)."""
    rows = seed_5_graded[0]["oscar"]
    assert rows["matrix_compose"]["status"] == "error", rows
    assert "cases drawn from a seed are checked with the teacher's keys" in rows["matrix_compose"]["message"], rows
    assert rows["n_step_returns"]["status"] == "wrong" and rows["n_step_returns"]["checks_passed"] == "0", rows
    assert "rltriton_lite.exercises._recorded" in rows["n_step_returns"]["message"], rows


def test_the_keys_values_recorded_where_the_keys_are_grade_where_they_are_not(tmp_path, monkeypatch, capsys):
    """--record-keys FILE --seed S (the teacher's step, no student code) writes the keys' values on
    the seed's cases; --keys FILE grades on them (the seed is the file's), as in a container
    without the solutions; another --seed is a usage error."""
    keys = tmp_path / "keys-5.npz"
    done = _grade_script("--record-keys", str(keys), "--seed", "5", "--exercises", "matrix_compose")
    assert done.returncode == 0 and keys.is_file(), done.stderr
    nb = _notebook(tmp_path / "ida.ipynb", CORRECT["matrix_compose"])
    out = tmp_path / "g.csv"
    done = _grade_script("--keys", str(keys), "--out", str(out), "-q", str(nb))
    assert done.returncode == 0, done.stderr
    with open(out, newline="") as f:
        assert [(r["exercise"], r["status"], r["seed"]) for r in csv.DictReader(f)] == [("matrix_compose", "correct",
                                                                                         "5")]
    assert "holds the cases of seed 5, not of --seed 6" in _usage_error(
        monkeypatch, capsys, "--keys", str(keys), "--seed", "6", "--out", str(out), "-q", str(nb))
    assert "--record-keys takes --seed S" in _usage_error(monkeypatch, capsys, "--record-keys", str(keys), str(nb))


def test_summary_counts(graded):
    _, _, rows, _ = graded
    table = grade.summary([(r["student"], r["notebook"], r["exercise"], r["status"], r["message"]) for r in rows])
    lines = {line.split()[0]: line.split()[1:] for line in table.splitlines() if line and line[0].isalpha()}
    assert lines["alice"] == ["1", "1", "2", "0", "0"]  # correct, wrong, not attempted, error, timeout
    assert lines["bob"] == ["1", "0", "0", "2", "1"]
    assert lines["matrix_compose"] == ["1", "0", "1", "0", "2"]


def _grade_script(*argv, env=None):
    """``python tools/grade.py ARGV``: as a teacher runs it, so that it sets the kernels' mode before
    anything imports Triton (this process has imported the package already, compiled on a GPU, and
    keeps its environment). The finished process, its output captured."""
    return subprocess.run([sys.executable, str(ROOT / "tools" / "grade.py"), *argv], env=env, timeout=600,
                          capture_output=True, text=True)


def _usage_error(monkeypatch, capsys, *argv):
    """What grade.main prints for a usage error (exit code 2), run in this process: a usage error
    stops it before any notebook runs. With --compiled where this process's kernels are compiled
    (grade.main refuses a package imported in the other mode); TRITON_INTERPRET restored after."""
    monkeypatch.setenv("TRITON_INTERPRET", os.environ.get("TRITON_INTERPRET", "1"))
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        grade.main([*argv, *([] if exercises.INTERPRET else ["--compiled"])])
    assert e.value.code == 2, argv
    return capsys.readouterr().err


def test_usage_errors(tmp_path, capsys):
    for argv in ([], [str(tmp_path / "missing.ipynb")], [str(tmp_path)], ["--seed", "-1", str(tmp_path)],
                 [str(Path(__file__))], ["--seed", "3", "--fixed", str(tmp_path)]):
        with pytest.raises(SystemExit) as e:
            grade.main(argv)
        assert e.value.code == 2, argv
    capsys.readouterr()


def test_unseen_cases_need_the_teacher_s_keys(tmp_path, monkeypatch, capsys):
    """An install without the keys (a student's wheel) cannot grade on a seed: a usage error that
    says so, before any notebook runs."""
    nb = tmp_path / "01_discounted_return.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("x = 1")]), str(nb))
    monkeypatch.setenv("TRITON_INTERPRET", os.environ.get("TRITON_INTERPRET", "1"))
    monkeypatch.setattr(exercises, "_KEYS_FILE", tmp_path / "no_keys.py")
    with pytest.raises(SystemExit) as e:
        grade.main(["--seed", "3", "--out", str(tmp_path / "g.csv"), "-q", str(nb)]
                   + ([] if exercises.INTERPRET else ["--compiled"]))  # (as this process imported the package)
    assert e.value.code == 2 and "grading on unseen cases needs the teacher's keys" in capsys.readouterr().err
    assert not (tmp_path / "g.csv").exists()


WRONG_COMPOSE = "def matrix_compose(p, q):\n    (A1, b1), (A2, b2) = p, q\n    return A1 @ A2, b1 + A1 @ b2\n"  # q first


def test_unseen_cases_by_default_from_a_seed_in_the_csv(tmp_path):
    """Without --seed, a run draws its own seed: the CSV's seed column and the printed line say which,
    and the failing case's name carries it; --seed S grades those cases again; --fixed grades on the
    notebooks' own cases (seed column "fixed": test_a_notebook_that_calls_torch_compile_is_graded's
    run). --help says so."""
    nb = _notebook(tmp_path / "frank.ipynb", WRONG_COMPOSE)

    def run(*argv):
        out = tmp_path / "g.csv"
        done = _grade_script("--out", str(out), "-q", *argv, str(nb))
        assert done.returncode == 0, done.stderr
        with open(out, newline="") as f:
            (row,) = list(csv.DictReader(f))
        return row, done.stdout

    row, printed = run()
    seed = row["seed"]
    assert seed.isdigit() and 0 <= int(seed) < grade.SEEDS and row["status"] == "wrong", row
    assert f"(seed={seed})" in row["message"], row
    assert f"cases drawn from seed {seed} (drawn for this run: --seed {seed} grades the same cases again)" in printed
    again, printed = run("--seed", seed)
    assert again["seed"] == seed and again["message"] == row["message"], (row, again)
    assert "drawn for this run" not in printed
    assert len({grade.draw_seed() for _ in range(4)}) > 1  # a fresh seed each run
    help_text = " ".join(grade._parser().format_help().split())
    assert "--fixed" in help_text and "default: a seed drawn for this run" in help_text, help_text
    assert "On unseen cases, by default" in grade.__doc__


FORGE = ("import gc as _g, os as _o\n"
         "_c = [x for x in getattr(_g, 'get_' + 'objects')() if type(x).__name__ == 'Connection' "
         "and not x.closed and x.writable][0]\n"
         "_c.send(('setup', {}))\n_c.send(('start', 'matrix_compose'))\n"
         "_c.send(('result', 'matrix_compose', 'correct', '', None, {}))\n_c.send(('done',))\n"
         "getattr(_o, '_ex' + 'it')(0)")
TAMPER = ("from rltriton_lite import exercises, reference\n"
          "exercises._compare = lambda *args, **kwargs: None\n"
          "reference.gae.__code__ = (lambda *args, **kwargs: None).__code__\n"
          "import numpy as np\n"
          "np.isclose = lambda a, b, **kwargs: np.ones(np.broadcast(a, b).shape, dtype=bool)")
COMPILES = ("import torch\nstep = torch.compile(lambda x: x * 2 + 1, backend='eager')\n"
            "print(step(torch.ones(3)))")


@pytest.fixture(scope="module")
def fixed_graded(tmp_path_factory):
    """One --fixed run (one grader start, not five) for the five tests below: pat forges a verdict,
    mel changes the checker, hana calls torch.compile, gina is right; hal, on the roster, handed
    nothing in; --out is in a folder not made yet."""
    sub = tmp_path_factory.mktemp("fixed")
    _notebook(sub / "pat" / "00_associative_scan.ipynb", FORGE, "def matrix_compose(p, q):\n    return p")
    _notebook(sub / "mel.ipynb", TAMPER, WRONG_COMPOSE)
    _notebook(sub / "hana.ipynb", COMPILES, CORRECT["matrix_compose"],
              "def vtrace_floor_bytes(B, T, elem_bytes):\n    return 0\n")
    gina = _notebook(sub / "gina.ipynb", CORRECT["matrix_compose"])
    roster = sub.parent / "fixed-roster.txt"
    roster.write_text("gina\nhal\nhana\nmel\npat\n")
    out = sub.parent / "runs" / "2024-06" / "grades.csv"
    done = _grade_script("--out", str(out), "-q", "--fixed", "--roster", str(roster), str(sub))
    assert done.returncode == 0, done.stderr
    by = collections.defaultdict(list)
    with open(out, newline="") as f:
        for r in csv.DictReader(f):
            by[r["student"]].append(r)
    return done, by, out, gina


def test_a_verdict_forged_on_the_grader_s_pipe_is_an_error_and_flagged(fixed_graded):
    """A cell that finds the worker's pipe and sends "correct" for an exercise it never defined (the
    tenth teacher review): the grader takes no verdict for code it did not read, and the flags name
    the cell's tricks."""
    row, *others = fixed_graded[1]["pat"]  # notebook 00's three exercises: the later two never checked
    assert (row["exercise"], row["status"]) == ("matrix_compose", "error"), row
    assert "a verdict for code it never read" in row["message"] and row["flags"], row
    assert [(o["exercise"], o["status"]) for o in others] == [("combine_arrays", "error"),
                                                              ("chunked_reset_scan", "error")], others
    for other in others:
        assert "no verdict for it before the notebook's process said done" in other["message"], other


def test_the_printed_summary_names_the_roster_s_students_without_a_notebook(fixed_graded):
    """A student on the roster who handed nothing in has a 0-point row in <stem>-students.csv; the
    printed summary, which counts graded notebooks, names them too (the ninth teacher review)."""
    done = fixed_graded[0]
    assert "on the roster, no notebook graded (0 points in grades-students.csv): hal" in done.stdout, done.stdout


def test_a_notebook_that_changes_the_checker_is_not_graded(fixed_graded):
    """A cell that swaps a check of the checker's module, a reference's code and NumPy's isclose for
    ones that pass everything: every exercise of the notebook is an error naming the cell and what
    it changed, not a pass."""
    (row,) = fixed_graded[1]["mel"]
    assert row["exercise"] == "matrix_compose" and row["status"] == "error", row
    assert row["message"].startswith("cell ") and "changed the checker (rltriton_lite.exercises._compare, " \
        "rltriton_lite.reference.gae, numpy.isclose)" in row["message"], row


def test_a_notebook_that_calls_torch_compile_is_graded(fixed_graded):
    """torch.compile's first call imports torch._dynamo, which wraps torch.manual_seed in place (08
    does it in section 4): that is torch's doing, not a cell that changes the checker."""
    done, by = fixed_graded[:2]
    rows = by["hana"]
    assert [(r["exercise"], r["status"], r["message"]) for r in rows][:1] == [("matrix_compose", "correct", "")]
    # --fixed: the notebooks' own cases, seed column "fixed", no seed in a failure's message
    assert all(r["seed"] == "fixed" for r in rows) and "fixed cases" in done.stdout, (rows, done.stdout)
    assert rows[1]["exercise"] == "vtrace_floor_bytes" and rows[1]["status"] == "wrong" and "(seed=" not in rows[1]["message"]


def test_out_makes_its_folder(fixed_graded, tmp_path, monkeypatch, capsys):
    """--out in a folder that does not exist yet: the folder is made, with the CSVs and the sources
    beside each other in it; a file in the way is a usage error."""
    _, by, out, gina = fixed_graded
    assert [(r["exercise"], r["status"]) for r in by["gina"]] == [("matrix_compose", "correct")]
    assert (out.parent / "grades-students.csv").exists()
    assert (out.parent / "grades-sources" / "gina" / "matrix_compose.py").exists()
    (tmp_path / "a_file").write_text("")
    assert "cannot make the folder" in _usage_error(monkeypatch, capsys, "--out", str(tmp_path / "a_file" / "grades.csv"),
                                                    "-q", str(gina))


def test_grading_is_in_the_interpreter_unless_compiled(tmp_path, monkeypatch, capsys):
    """The graded notebook's process runs with TRITON_INTERPRET=1 (set by grade.py before anything
    imports Triton, over what the teacher's shell says), so the verdict is the same on every machine;
    --compiled asks for compiled kernels, which need a GPU, and --help says which is the default."""
    nb = _notebook(tmp_path / "erin.ipynb", "import os\nprint('in the notebook: TRITON_INTERPRET =', "
                   "os.environ.get('TRITON_INTERPRET'), exercises.INTERPRET)", CORRECT["matrix_compose"])
    logs = tmp_path / "logs"
    env = dict(os.environ, TRITON_INTERPRET="0")  # a GPU machine's shell: overridden
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "grade.py"), "--out", str(tmp_path / "g.csv"), "--fixed",
                          "--log-dir", str(logs), str(nb)], env=env, timeout=600, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "in the notebook: TRITON_INTERPRET = 1 True" in (logs / "erin__erin.log").read_text()
    with open(tmp_path / "g.csv", newline="") as f:
        assert [r["status"] for r in csv.DictReader(f)] == ["correct"]
    assert "in the Triton interpreter" in run.stdout
    help_text = " ".join(grade._parser().format_help().split())
    assert "--compiled" in help_text and "Default: the Triton interpreter (TRITON_INTERPRET=1" in help_text
    assert "In the Triton interpreter, by default" in grade.__doc__
    import torch
    if not torch.cuda.is_available():
        # (in this process: grade.main sets TRITON_INTERPRET, which Triton reads at every launch)
        monkeypatch.setenv("TRITON_INTERPRET", os.environ.get("TRITON_INTERPRET", "1"))
        with pytest.raises(SystemExit) as e:
            grade.main(["--compiled", "--out", str(tmp_path / "g.csv"), "-q", str(nb)])
        assert e.value.code == 2 and "it needs a CUDA GPU" in capsys.readouterr().err


def test_plan_of_the_course_notebooks():
    """On the course's own notebooks: every exercise of the catalog is found, bound by its starter
    cell, and the "How fast is it" sections of 01-07 hold a takeaway and one Checks cell on the committed
    files (their tables are in 09, sections 2.1-2.4 and 4): nothing slow, so they run, as 09's four tables do."""
    course = collections.defaultdict(list)
    for name, stem, _ in exercises.catalog():
        course[stem].append(name)
    profiled = 0
    for stem, names in course.items():
        nb = nbformat.read(str(NOTEBOOKS / f"{stem}.ipynb"), as_version=4)
        plan = grade.plan_notebook(nb, exercises.names(), course, f"{stem}.ipynb")
        assert plan.exercises == names
        missing = set(names) - set(plan.defined_in)
        assert not missing, f"{stem}: no starter cell binds {missing}"
        for name, number in plan.defined_in.items():
            source = nb.cells[number - 1].source
            assert "NotImplementedError" in source or f"{name} = None" in source, (stem, name, source)
        ran = {n for n, _ in plan.cells}
        assert set(plan.defined_in.values()) <= ran and not ran & set(plan.skipped)
        section, in_profile = "", []  # the last heading of level 1 or 2; the code cells under "How fast is it"
        for n, c in enumerate(nb.cells, 1):
            if c.cell_type == "markdown":
                section = next((t for lvl, t in reversed(list(grade._headings(c.source))) if lvl <= 2), section)
            elif c.cell_type == "code" and "How fast is it" in section:
                in_profile.append(n)
        assert all(nb.cells[n - 1].source.startswith("# Checks") for n in in_profile), (stem, in_profile)
        assert len(in_profile) <= 1 and set(in_profile) <= ran, stem  # before the exercises: run, as nothing slow
        profiled += bool(in_profile)
        if stem == "09_benchmarks":  # 09 runs its sections 2.1-2.3: the return's, GAE's and V-trace's tables
            tables = [n for n, c in enumerate(nb.cells, 1) if c.cell_type == "code" and "= probe_rows(" in c.source]
            assert len(tables) == 3 and set(tables) <= ran, tables
    assert profiled == 7  # 01-07: "How fast is it", each with its Checks cell


def test_bound_names():
    assert grade.bound_names("@triton.jit\ndef q_lambda(X):\n    return X\n") == {"q_lambda"}
    cell = "q_lambda = None\nfrom x import y as gae_pairs\n%matplotlib inline\na, (b, *c) = 1, (2, 3)"
    assert grade.bound_names(cell) >= {"q_lambda", "gae_pairs", "a", "b", "c"}
    assert grade.bound_names("def f():\n    q_lambda = 1\n") == {"f"}
    assert grade.bound_names("def q_lambda(X)\n    pass\nretrace = 3") == {"q_lambda", "retrace"}  # no colon


# --------------------------------------------------------------------------- student_build.py

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("students")
    assert student_build.main([str(out), "--force"]) == 0
    return out


def _code_cells(path):
    return [c.source for c in nbformat.read(str(path), as_version=4).cells if c.cell_type == "code"]


def test_student_build_leaves_out_the_solutions(built):
    nbs = built / "notebooks"
    assert not (nbs / "solutions").exists() and not (nbs / "ANSWERS.md").exists()
    assert not (nbs / "WRONG_ANSWERS.md").exists()  # the TAs' list of wrong answers
    # the notebooks, and the glossary they link to
    expected = [p.name for p in NOTEBOOKS.glob("*.ipynb")] + ["GLOSSARY.md"]
    assert sorted(p.name for p in nbs.iterdir()) == sorted(expected)
    for path in nbs.rglob("*"):
        text = path.read_text()
        assert "solutions/" not in text and "%load" not in text and "ANSWERS" not in text, path.name
    assert (built / "benchmarks" / "results").is_dir()  # what notebooks 08 and 09 read
    # the repository's files that the notebooks link to or name, and what they need beside the package
    for extra in ("docs/DESIGN.md", "benchmarks/README.md", "tools/wall_probe.py", "tools/time_group_cost.py",
                  "tools/compile_sm90.py", "requirements.txt"):
        assert (built / extra).is_file(), extra
    assert not (built / "tools" / "grade.py").exists()  # named in the notebooks, but the teacher's
    requirements = (built / "requirements.txt").read_text()
    assert "torch==" in requirements and "gymnasium==" in requirements
    assert "pytest" not in requirements and "-e ." not in requirements and "ANSWERS" not in requirements
    # no notebook opens a file of a folder the students' copy lacks (13c read rltriton_lite/tile.py once: Run All
    # stopped there; the installed package's source is inspect.getsource's)
    missing = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")} - \
        {p.name for p in built.iterdir()}
    assert {"rltriton_lite", "tests"} <= missing, missing
    for path in nbs.glob("*.ipynb"):
        for cell in _code_cells(path):
            for args in re.findall(r"os\.path\.join\(([^)]*)\)", cell):
                assert not set(re.findall(r"[\"']([^\"']+)[\"']", args)) & missing, (path.name, args)


STUDENT_CHECKS = """
import sys
from pathlib import Path
from rltriton_lite import exercises
assert Path(exercises.__file__).is_relative_to(Path(sys.argv[1])), exercises.__file__  # the wheel's copy
assert exercises._keys() is None
space = {}
exec(Path(sys.argv[2]).read_text(), space)
exercises.check("n_step_returns", space["solution"])  # the fixed cases, from the recorded values
try:
    exercises.check("n_step_returns", space["solution"], seed=7)
except ValueError as e:
    assert "teacher's keys" in str(e), e
else:
    raise AssertionError("a seed was checked without the keys")
print("checked")
"""


@pytest.mark.xdist_group("wheel")
def test_the_students_wheel_holds_the_fixed_cases_values_not_the_keys(tmp_path):
    """The wheel the guide builds for students has no reference the package does not otherwise hold:
    installed alone, it checks the fixed cases from their recorded values and refuses a seed."""
    import shutil
    src = tmp_path / "src"  # what the wheel is built from, copied: a clean tree (pip builds in it)
    shutil.copytree(ROOT / "rltriton_lite", src / "rltriton_lite", ignore=shutil.ignore_patterns("__pycache__"))
    for f in ("pyproject.toml", "README.md", "LICENSE.txt"):
        shutil.copy(ROOT / f, src / f)
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path)], check=True, timeout=300, capture_output=True)
    (wheel,) = tmp_path.glob("rltriton_lite-*.whl")
    import zipfile
    with zipfile.ZipFile(wheel) as z:
        files = z.namelist()
        assert "rltriton_lite/_keys.npz" in files and not [f for f in files if "_keys.py" in f or "solutions" in f]
        code = b"".join(z.read(f) for f in files if f.endswith(".py"))
        keys = (NOTEBOOKS / "solutions" / "_keys.py").read_text()
        for fn in re.findall(r"^def (\w+)", keys, re.M):
            assert f"def {fn}(".encode() not in code, fn
        (metadata,) = [z.read(f).decode() for f in files if f.endswith(".dist-info/METADATA")]
        assert "For teachers" not in metadata and "ANSWERS.md" not in metadata  # the README is not its description
        z.extractall(tmp_path / "site")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site"), "TRITON_INTERPRET": "1"}
    run = subprocess.run([sys.executable, "-c", STUDENT_CHECKS, str(tmp_path / "site"),
                          str(NOTEBOOKS / "solutions" / "n_step_returns.py")],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "checked", run.stderr[-3000:]


def test_student_build_gives_the_students_their_instructions(built, capsys):
    """STUDENTS.md is the README's "For students" section (install, order and hours, the exercises,
    handing in); its links reach files of the build."""
    page = (built / "STUDENTS.md").read_text(encoding="utf-8")
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    for phrase in ("**Getting started.**", "**Order and time.**", "**Handing in.**", "| `00b_triton_from_zero` |"):
        assert phrase in page and phrase in readme, phrase
    assert " ".join(page.split()[12:60]) in readme  # the section's own words
    assert "For teachers" not in page and "ANSWERS" not in page and "solutions/" not in page
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert page.rstrip().splitlines()[-1].startswith(f"*This handout was built from the course's commit {head}")
    for target in student_build.LINK.findall(student_build.CODE_SPAN.sub("", page)):
        assert (built / target.split("#")[0]).exists(), target
    assert student_build.main([str(built), "--force"]) == 0
    assert f"-w {built}" in capsys.readouterr().out  # the wheel goes beside it, as the guide's command puts it


def test_student_build_code_cells_unchanged_outputs_empty(built):
    replaced = 0
    for original in sorted(NOTEBOOKS.glob("*.ipynb")):
        copy = built / "notebooks" / original.name
        assert _code_cells(copy) == _code_cells(original), original.name
        nb, src = (nbformat.read(str(p), as_version=4) for p in (copy, original))
        nbformat.validate(nb)
        assert len(nb.cells) == len(src.cells)
        for c, s in zip(nb.cells, src.cells):
            assert c.cell_type == s.cell_type and c.get("id") == s.get("id")
            if c.cell_type == "code":
                assert c.outputs == [] and c.execution_count is None
            elif c.source != s.source:
                replaced += 1
                assert "solutions/" in s.source or "its solution" in s.source
                assert "your teacher" in c.source
    assert replaced >= 8  # the notebooks with checked exercises say where the solutions are


def test_student_build_clears_outputs_and_refuses_leaks(tmp_path):
    src = tmp_path / "course" / "notebooks"
    nb = new_notebook(metadata={"widgets": {"state": {}}, "jupytext": {"formats": "ipynb,py:percent"}})
    nb.cells = [new_markdown_cell("Write it (`print(exercises.task(name))` restates the task; solutions in "
                                  "`notebooks/solutions/`).\nSolutions: `notebooks/solutions/<name>.py` "
                                  "(in Jupyter, `%load solutions/<name>.py` in the starter's cell). Or its "
                                  "answer (or its solution)."),
                new_code_cell("# see solutions/gae_pairs.py\nx = 1", execution_count=4,
                              outputs=[new_output("execute_result", data={"text/plain": "1"}, execution_count=4)],
                              metadata={"collapsed": True, "scrolled": True, "tags": ["keep"]})]
    src.mkdir(parents=True)
    nbformat.write(nb, str(src / "a.ipynb"))
    (src / "a.py").write_text("# solutions/ twin\n")
    (src / "ANSWERS.md").write_text("key")
    (src / "solutions").mkdir()
    (src / "solutions" / "x.py").write_text("solution = 1")
    (src / "data.txt").write_text("kept")
    out = tmp_path / "out"
    assert student_build.main([str(out), "--src", str(src)]) == 0
    assert sorted(p.name for p in (out / "notebooks").iterdir()) == ["a.ipynb", "data.txt"]
    built_nb = json.loads((out / "notebooks" / "a.ipynb").read_text())
    md, code = built_nb["cells"]
    assert "".join(md["source"]) == (
        "Write it (`print(exercises.task(name))` restates the task; ask your teacher for the solutions).\n"
        "Ask your teacher for the solutions. Or its answer (or the solution your teacher gives you).")
    assert code["outputs"] == [] and code["execution_count"] is None and code["metadata"] == {"tags": ["keep"]}
    assert "".join(code["source"]) == "# (ask your teacher for the solutions)\nx = 1"
    assert "widgets" not in built_nb["metadata"] and "jupytext" not in built_nb["metadata"]

    with pytest.raises(SystemExit) as e:  # not empty: --force needed
        student_build.main([str(out), "--src", str(src)])
    assert e.value.code == 2
    nb.cells.append(new_code_cell("%load solutions/gae_pairs.py"))  # code a pointer would change: refused
    nbformat.write(nb, str(src / "a.ipynb"))
    (out / "notebooks" / "a.ipynb").unlink()
    assert student_build.main([str(out), "--src", str(src), "--force"]) == 1
    assert not (out / "notebooks" / "a.ipynb").exists()  # nothing written
    nb.cells.pop()
    nbformat.write(nb, str(src / "a.ipynb"))
    readme = src.parent / "README.md"  # the students' page, from the README: its links are checked too
    readme.write_text("#### For students\n\nSee [the guide](docs/TEACHING.md).\n\n#### For teachers\n")
    assert student_build.main([str(out), "--src", str(src), "--force"]) == 1
    readme.write_text("#### For students\n\nRead [a](notebooks/a.ipynb).\n\n#### For teachers\n")
    assert student_build.main([str(out), "--src", str(src), "--force"]) == 0
    assert (out / "STUDENTS.md").read_text().endswith(  # (a source outside git: its commit unknown, and said so)
        "Read [a](notebooks/a.ipynb).\n\n*This handout was built outside a git checkout: its commit is not known.*\n")


def _grade_built_00(built):
    """Notebook 00 of the students' build, its starters replaced by the solutions, graded: (rows, grader)."""
    nb = nbformat.read(str(built / "notebooks" / "00_associative_scan.ipynb"), as_version=4)
    for name in ("matrix_compose", "combine_arrays", "chunked_reset_scan"):
        starters = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith(f"def {name}")]
        assert len(starters) == 1
        starters[0].source = (NOTEBOOKS / "solutions" / f"{name}.py").read_text()
    student = built / "notebooks" / "00_associative_scan-erin.ipynb"  # where the students run it
    nbformat.write(nb, str(student))
    try:
        g = grade.Grader(seed=5, timeout=60, setup_timeout=120)
        return g.grade([("erin", student)]), g
    finally:
        student.unlink()


def test_a_built_notebook_runs_and_grades(built, tmp_path):
    """Notebook 00 from the students' build, its starter replaced by the solution: its cells run
    in the grader's process without an error, and the exercises are correct on unseen cases."""
    rows, g = _grade_built_00(built)
    assert [r[2:4] for r in rows] == [("matrix_compose", "correct"), ("combine_arrays", "correct"),
                                            ("chunked_reset_scan", "correct")], rows
    assert g.graded[0].cell_errors == {}


def test_on_a_machine_with_a_gpu_a_notebook_runs_in_a_fresh_interpreter(built, monkeypatch):
    """Where a GPU is present the grader spawns rather than forks: a forked child cannot use CUDA
    once its parent has looked for it (torch.cuda.is_available() is enough; the H200 showed it)."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    rows, g = _grade_built_00(built)
    assert g.ctx.get_start_method() == "spawn"
    assert [r[2:4] for r in rows] == [("matrix_compose", "correct"), ("combine_arrays", "correct"),
                                            ("chunked_reset_scan", "correct")], rows
    assert g.graded[0].cell_errors == {}


def test_every_question_without_a_checker_has_an_answer_cell():
    """Each course notebook's questions without a checker (the numbered list) have one answer cell
    each, tagged answer-N, holding the placeholder that --collect-answers reads as not answered."""
    asking = 0
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        asked, cells = grade.questions(nb), grade.answers(nb)
        assert sorted(asked) == sorted(cells), path.name
        assert all(grade._answer_text(cells[q]) is None for q in cells), path.name  # nothing answered
        asking += bool(asked)
    assert asking >= 13


def test_answers_without_a_checker_are_collected(tmp_path):
    """--collect-answers: per notebook, each question without a checker and every student's answer
    (the answer cell and the cells under it, up to the next answer cell or a heading, code fenced),
    "(not answered)" where the placeholder is left."""
    import copy

    course = nbformat.read(str(NOTEBOOKS / "03_td_lambda.ipynb"), as_version=4)
    asked = next(c for c in course.cells if "Without a checker" in c.source)
    answer_cells = [c for c in course.cells if any(t.startswith("answer-") for t in c.metadata.get("tags", []))]
    assert len(answer_cells) == 3

    def student(name, cells):
        nb = new_notebook(cells=[copy.deepcopy(asked)] + cells)
        (tmp_path / "sub" / name).mkdir(parents=True)
        nbformat.write(nb, str(tmp_path / "sub" / name / "03_td_lambda.ipynb"))

    alice = copy.deepcopy(answer_cells)
    alice[0].source = "**Answer 1.** The same recursion: G_t = A_t + V_t inside episodes."
    alice[2].source = "**Answer 3.** λ = 1 wins once the critic is unbiased."
    printed = new_code_cell("print(td - gae_returns)  # 0 inside episodes",
                            outputs=[new_output("stream", name="stdout", text="tensor([0., 0.])\n")])
    raised = new_code_cell("plot(lams)", outputs=[
        new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}),
        new_output("error", ename="NameError", evalue="name 'lams' is not defined", traceback=[])])
    student("alice", [alice[0], printed, alice[1], alice[2], raised,
                      new_markdown_cell("## Notes to self"), new_markdown_cell("not an answer")])
    student("bob", copy.deepcopy(answer_cells))
    done = _grade_script("--out", str(tmp_path / "g.csv"), "--fixed", "-q", "--collect-answers", str(tmp_path / "sub"))
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "g-answers" / "03_td_lambda.md").read_text(encoding="utf-8")
    q1, q2, q3 = text.split("\n## ")[1:]
    assert q1.startswith("1. Show numerically that `td_lambda(r, values[t+1], λ)`, with `bootstrap_value` as the "
                         "last next value, equals"), q1
    assert q2.startswith("2. Dreamer") and q3.startswith("3. In section 5"), text
    assert ("### alice\n\n**Answer 1.** The same recursion: G_t = A_t + V_t inside episodes.\n\n"
            "```python\nprint(td - gae_returns)  # 0 inside episodes\n```\n\n```text\ntensor([0., 0.])\n```") in q1, q1
    # the saved outputs: a plot counted (not its text), an error marked
    assert ("```python\nplot(lams)\n```\n\n**This cell raised** `NameError: name 'lams' is not defined`\n\n"
            "*(1 plot: open the notebook to see it)*") in q3, q3
    assert "<Figure>" not in text
    assert "### alice\n\n(not answered)" in q2 and "### alice\n\n**Answer 3.** λ = 1 wins" in q3, text
    assert all("### bob\n\n(not answered)" in q for q in (q1, q2, q3)), text
    assert "not an answer" not in text and "Notes to self" not in text


def test_answers_are_collected_from_a_notebook_without_checked_exercises(tmp_path):
    """Notebook 10 graded for another notebook's exercise only (--exercises): nothing of it is
    graded, but --collect-answers still files its answers; a copy without the tagged answer cells
    (an older handout) is listed with a note, not left out."""
    import copy

    course = nbformat.read(str(NOTEBOOKS / "10_train_ppo.ipynb"), as_version=4)
    mine = copy.deepcopy(course)
    first = next(c for c in mine.cells if "answer-1" in c.metadata.get("tags", []))
    first.source = "**Answer 1.** They never differ: the same seed gives the same episodes."
    mine.cells.insert(mine.cells.index(first) + 1, new_code_cell("print(first_difference)  # None"))
    (tmp_path / "sub" / "alice").mkdir(parents=True)
    nbformat.write(mine, str(tmp_path / "sub" / "alice" / "10_train_ppo.ipynb"))
    old = copy.deepcopy(course)
    old.cells = [c for c in old.cells if not c.metadata.get("tags")]
    nbformat.write(old, str(tmp_path / "sub" / "10_train_ppo-bob.ipynb"))
    done = _grade_script("--out", str(tmp_path / "g.csv"), "--fixed", "-q", "--exercises", "matrix_compose",
                         "--collect-answers", str(tmp_path / "sub"))
    assert done.returncode == 0, done.stderr
    assert "0 notebooks with exercises (of 2 found), 0 grades" in done.stdout, done.stdout
    text = (tmp_path / "g-answers" / "10_train_ppo.md").read_text(encoding="utf-8")
    q1, q2 = text.split("\n## ")[1:]
    assert q1.startswith("1. Make the run longer (`total_timesteps=50_000`)") and q2.startswith("2. Compute the value loss's returns"), text
    assert ("### alice\n\n**Answer 1.** They never differ: the same seed gives the same episodes.\n\n"
            "```python\nprint(first_difference)  # None\n```") in q1, q1
    assert "### alice\n\n(not answered)" in q2, q2
    assert "### 10_train_ppo-bob\n\n(no answer cell tagged answer-1 in this notebook" in q1, q1
    assert "### 10_train_ppo-bob\n\n(no answer cell tagged answer-2 in this notebook" in q2, q2


def test_only_the_exercises_named_are_graded(tmp_path, monkeypatch, capsys):
    """--exercises: the rows (and the per-student points) are those exercises' alone; a name that
    is no exercise is a usage error."""
    nb = _notebook(tmp_path / "gina.ipynb", CORRECT["matrix_compose"], WRONG_GAE_PAIRS)
    out = tmp_path / "g.csv"
    done = _grade_script("--out", str(out), "--fixed", "-q", "--exercises", "matrix_compose", str(nb))
    assert done.returncode == 0, done.stderr
    with open(out, newline="") as f:
        rows = [(r["exercise"], r["status"]) for r in csv.DictReader(f)]
    assert rows == [("matrix_compose", "correct")], rows
    with open(tmp_path / "g-students.csv", newline="") as f:
        (student,) = list(csv.DictReader(f))
    assert (student["exercises"], student["points"]) == ("1", "1.00"), student
    assert "no exercise named no_such" in _usage_error(monkeypatch, capsys, "--out", str(out), "-q", "--exercises",
                                                       "matrix_compose,no_such", str(nb))


def test_an_exercise_named_but_not_handed_in_is_noted_missing(tmp_path):
    """With --exercises, an exercise a student handed in no notebook for is named in the per-student
    note (its 0 points would otherwise be silent: a teacher dividing by "exercises" would inflate)."""
    nb = _notebook(tmp_path / "gina.ipynb", CORRECT["matrix_compose"])
    out = tmp_path / "g.csv"
    done = _grade_script("--out", str(out), "--fixed", "-q", "--exercises", "matrix_compose,reset_scan,gae_pairs",
                         str(nb))
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "g-students.csv", newline="") as f:
        (student,) = list(csv.DictReader(f))
    assert (student["exercises"], student["points"], student["note"]) == (
        "1", "1.00", "missing: reset_scan, gae_pairs"), student
    # a notebook that holds none of the exercises named: the student handed in, and misses them all
    done = _grade_script("--out", str(out), "--fixed", "-q", "--exercises", "reset_scan,gae_pairs", str(nb))
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "g-students.csv", newline="") as f:
        (student,) = list(csv.DictReader(f))
    assert (student["exercises"], student["points"], student["max_points"], student["note"]) == (
        "0", "0.00", "2", "missing: reset_scan, gae_pairs"), student


TEACHING = ROOT / "docs" / "TEACHING.md"


def test_the_guide_s_summative_command_grades_the_exercises_it_calls_safe():
    """The teacher's guide's --exercises list is the exercises its table marks graded, no more,
    no fewer."""
    text = TEACHING.read_text(encoding="utf-8")
    table = _table(text, "| exercise | notebook | for a grade? |")
    assert list(table) == exercises.names()  # every exercise, in course order
    assert all(cells[1].startswith(("graded", "practice")) for cells in table.values()), table
    named = {n for n, cells in table.items() if cells[1].startswith("graded")}
    assert named == graded_in_the_guide() and len(named) == 9, (named, graded_in_the_guide())


def graded_in_the_guide() -> set[str]:
    """The exercises of the guide's summative command, ``tools/grade.py --exercises ...``."""
    (listed,) = set(re.findall(r"--exercises ([\w,]+)", TEACHING.read_text(encoding="utf-8")))
    return set(listed.split(","))


def _table(text, header):
    """The rows of the markdown table whose header row starts with ``header``: first cell -> cells."""
    lines = text[text.index(header):].splitlines()
    rows = {}
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = cells[1:]
    return rows


def test_the_guide_s_table_agrees_with_the_readme_and_the_notebooks():
    """docs/TEACHING.md's order table: every course notebook, with the README's hours, the
    exercises that rltriton_lite.exercises checks in it, and its number of questions without a
    checker (the ones tests/test_answers.py counts)."""
    from test_answers import unchecked_questions

    guide = _table(TEACHING.read_text(encoding="utf-8"), "| notebook | needs | checked | all |")
    readme = _table((ROOT / "README.md").read_text(encoding="utf-8"), "| notebook | what it teaches |")
    course = sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))
    assert sorted(guide) == sorted(readme) == course, (sorted(guide), sorted(readme))
    checked = collections.defaultdict(list)
    for name, notebook, _kind in exercises.catalog():
        checked[notebook].append(name)
    for nb, (_needs, hours, all_hours, names, asked) in guide.items():
        assert [hours.split(",")[0], all_hours] == [readme[nb][1].split(",")[0], readme[nb][2]], nb
        listed = [] if names == "none" else re.findall(r"`(\w+)`", names)
        assert listed == checked[nb], (nb, listed)
        assert int(asked.split()[0]) == len(unchecked_questions(NOTEBOOKS / f"{nb}.py")), nb


def _hours(cell):
    """A table cell's range of hours ("1–1.5 h", "45 min–1 h", "20–30 min") as (low, high)."""
    low, lu, high, hu = re.match(r"([\d.]+)\s*(min|h)?\s*–\s*([\d.]+)\s*(min|h)", cell).groups()
    hours = lambda x, unit: float(x) / 60 if unit == "min" else float(x)  # noqa: E731
    return hours(low, lu or hu), hours(high, hu)


def test_the_total_hours_are_the_table_s_sums():
    """The README's and the guide's "00 to 12 take about A–B hours checked and C–D hours with every
    question" are the order table's sums (the appendices, 13 and 14, are optional), each end rounded
    to the hour."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = {nb: cells for nb, cells in _table(readme, "| notebook | what it teaches |").items() if int(nb[:2]) <= 12}
    sums = [[round(sum(_hours(cells[k])[end] for cells in rows.values())) for end in (0, 1)] for k in (1, 2)]
    want = "take about {}–{} hours checked and {}–{} hours with every question".format(*sums[0], *sums[1])
    for text in (readme, TEACHING.read_text(encoding="utf-8")):
        assert want in " ".join(text.split()), want


def test_the_guide_s_code_runs_and_its_links_stay_in_the_repository():
    """docs/TEACHING.md's python blocks run as pasted; its links reach files of the repository."""
    from test_readme import fenced_blocks

    text = TEACHING.read_text(encoding="utf-8")
    blocks = [code for lang, _line, code in fenced_blocks(text) if lang == "python"]
    assert blocks
    for code in blocks:
        exec(compile(code, str(TEACHING), "exec"), {})
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    assert targets
    for target in targets:
        assert "://" not in target, target
        assert (TEACHING.parent / target.split("#")[0]).exists(), target
