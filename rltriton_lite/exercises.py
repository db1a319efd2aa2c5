"""Self-checking exercises for the notebooks.

Each exercise asks for a function; its checker runs it on a few small cases, simplest first,
against a float64 NumPy loop, and says which case failed, where, what it expected and what it
got. The solutions are in ``notebooks/solutions/<name>.py``.

The teacher's keys. Where the package holds no answer to an exercise elsewhere (``matrix_compose``,
``discounted_max``, ``n_step_returns``, ``q_lambda``, ``retrace``, ``warp_sectors``), its float64 reference lives beside
the solutions, in ``notebooks/solutions/_keys.py``, out of the students' wheel: run from the
repository (the editable install) the checker computes those cases with it; a student's install
holds its values on the fixed cases only (``_keys.npz``, recorded from it), so there a seed is
refused for those six (a ``ValueError``: the grader's unseen cases need the keys).

    from rltriton_lite import exercises
    exercises.catalog()                  # (name, notebook, kind) for every exercise
    print(exercises.task("gae_pairs"))   # what to write, and the function's signature
    exercises.check("gae_pairs", fn)     # None when right, else an AssertionError that says why
    print(exercises.fix("gae_pairs"))    # the fix a failure's hint held back, where it named one
    exercises.attempt("gae_pairs", fn)   # the notebooks' form: a starter that raises
                                         # NotImplementedError only prints that it is not done
    exercises.guarded(my_kernel, x, 0.5) # your kernel on your own inputs, each load and store checked

Kinds (``catalog()``'s third field): "kernel" (you write a ``@triton.jit`` kernel and the function
that launches it, ``kernel[grid](...)``: the seven of 00b and 00c, ``two_stage_mean``,
``awac_weights``, ``vtrace_kernel``), "hook" (you write ``@triton.jit`` functions, a prologue, an elementwise hook or
an epilogue, that a kernel you did not write runs: :func:`scan_hook`, :func:`map_hook`, or the
package's own kernel through :func:`package_prologue`; ``returns_autograd`` wraps two prologues in a
``torch.autograd.Function``), "numpy" (plain NumPy or PyTorch code, no Triton: the pairs (a, b) that
the checker scans with ``linear_scan``, or a NumPy function), "concept" (a number worked out by
hand). Each solution file defines the exercise's function under its own name (so ``%load`` in a
notebook replaces the starter) and ``solution``, the same function.

Unseen cases, for grading: ``check(name, fn, seed=s)`` (and ``attempt``) with an integer ``s >= 0``
runs cases of the same structure as the fixed ones but drawn afresh: the same edge cases (episode
ends, truncations, padding, NaN and inf behind terminations, chunk boundaries, odd lengths,
time-major layouts, per-step gamma, ties ...) with other random values and, where a case allows,
other shapes, lengths, parameters (gamma, lambda, ...) and positions of the special steps, from
small ranges that keep the interpreter fast. ``seed=None`` (the default) runs the fixed cases that
the notebooks show, the same every time. A seed gives the same cases on every machine (NumPy's
generator), so a teacher grades with a seed the students never saw; ``cases(name, seed)`` lists
them. Every exercise takes the seed, the concept one (``vtrace_floor_bytes``, a number worked by
hand) included: there it draws the rollout's size. An exercise whose reference is one of the
teacher's keys draws new cases only where the keys are there (above).

    exercises.check("gae_pairs", fn, seed=2024)   # cases the notebook never showed

What a check enforces, beyond the values:

* **Kernel exercises need a kernel.** Where the exercise asks for a kernel and its launcher (the seven
  of 00b and 00c, ``two_stage_mean``, ``vtrace_kernel``), every call must launch a ``@triton.jit``
  kernel of the student's own (one defined outside ``rltriton_lite``; launches are counted at
  ``JITFunction.run``, compiled or interpreted), and the scan exercises must run a
  ``tl.associative_scan`` (counted under the interpreter; compiled, the launched kernel's code must
  call one); under the interpreter, a chunked exercise's ``tl.associative_scan`` may be no wider
  than its chunk, and the scan's result must reach the answer (the launches run again with every
  scan's result NaN must write other values: ``_scan_reaches_the_output``). Where the exercise asks
  for a hook, prologue or epilogue (the harness's kind), the function passed must be a
  ``@triton.jit`` function (the package's own prologues refused). ``strided_scan`` must read its
  inputs in place: a launch must receive a tensor of the input view's own storage, not a copy.
  ``returns_autograd`` must call a ``torch.autograd.Function`` subclass's ``apply`` and launch
  Triton code of the student's in its forward and in its backward. ``two_stage_mean``: two launches
  and no atomics (the interpreter counts atomics; compiled, the kernels' code must not call one),
  and on 8192 elements or more not every launch one program. ``n_step_returns``: no Python loop over
  time (the student's Python lines and calls, counted with ``sys.settrace``, must not grow from a
  (2, 16) rollout to a (2, 64) one).
* **The answer is the kernel's.** Where the answer is tensors the student's kernel writes (the seven
  of 00b and 00c, ``two_stage_mean``, ``vtrace_kernel``'s two outputs, and ``returns_autograd``'s
  returns and gradient, written by ``scan_hook`` with their prologues in the forward and the
  backward), each returned value must be a tensor whose storage was passed to a launch of the
  student's kernel (a view of that buffer, ``.view()``, ``.t()``, a slice, is the same storage), and
  PyTorch must not have written it after the last such launch: its ``_version``, which in-place ops,
  ``x[...] = ...`` and ``copy_`` bump and a kernel's stores do not, must be the one recorded at that
  launch (compiled or interpreted). Under the interpreter, the kernel's ``tl.store`` (and atomic)
  writes are recorded too, and every element of the returned tensor must have been written by them:
  a PyTorch result handed to a kernel that stores nothing, or only part of it, is refused. Compiled,
  that last part is not checked. A Python number (``.item()``) or an array is refused: the kernel's
  tensor is asked for.
* **The kernel computes it.** Then every launch of the call is run again, in order, as it was (its
  own arguments and grid; the student's Python is not run again), with a second draw of the case
  written into the input tensors in place (new float values; the same shapes, flags and NaN/inf
  positions) and each returned tensor's storage replaced by a NaN-filled copy; the inputs are put
  back afterwards. The returned tensors must then hold the checker's reference on the new inputs
  (the case's tolerance): an answer worked out in PyTorch or a Python loop and copied into the
  output by a kernel of the student's (with a ``tl.associative_scan`` on zeros beside it, or the
  inputs passed to it unused) comes back stale, "your kernel's launches, run again on new inputs,
  did not recompute the answer: the values came from outside the kernel"; an element no kernel
  stores comes back NaN. A copy of an input made before the launch (``.clone()``, ``.double()``:
  a tensor of the input's shape and values) gets the new values too. For ``returns_autograd`` the
  launches are ``scan_hook``'s with the student's prologues, and the new inputs are the rewards and
  the gradient into the returns, the Function's own: what scan_hook scans must come from them.
  Compiled, every case; under the interpreter the cases of at most 256 elements (each replay
  interprets every launch again), which every such exercise has.
* **It compiles for a GPU.** The interpreter runs Python and lets through code Triton's compiler
  refuses (a loop's carry started as ``0`` and made a float). Under the interpreter each launch of
  the student's Triton code in a right case (their kernel, or the harness with their hook) is
  also compiled for an H100/H200 (sm_90) by Triton's front end, to Triton IR, which needs no GPU:
  a refusal fails the check with the compiler's message (``_compiles_for_a_gpu``; once per
  kernel, hooks and argument types). Compiled on a GPU, the launch itself compiles.
* **Write it yourself.** While ``check`` runs the function, the package's answers raise an
  AssertionError when the student's code calls them: ``rltriton_lite``'s compute functions and
  every module's public ones, ``rltriton_lite.reference``, ``rltriton_lite._torch_path``, the
  integrations' drop-ins (``integrations.cleanrl``, ``openrlhf``, ``verl``, and ``torchrl`` and
  ``sb3`` once imported), the package's prologues and epilogues, ``scan_hook``/``map_hook`` where
  the kernel itself is asked for, and the checker's own ``cases``, case builders and
  ``_*_reference`` helpers; but for what the exercise's task gives (``may_use``: ``linear_scan``
  in the tensor-op hooks, ``scan_hook`` in ``returns_autograd``). A call through a module
  attribute is refused, whichever module of the package holds it (``rl.gae``,
  ``rltriton_lite.reference.gae``, ``integrations.torchrl.generalized_advantage_estimate``), and
  the checker's own helpers refuse however they are reached; the package's own code still calls
  them. The student's code is also read (their functions, the globals, closure variables and
  defaults these read, the dicts, lists, tuples and objects among them, and the attributes they
  read of their own modules) for a package answer held by name. The expected values are computed
  after the student's function returns, from the case's seed.

Limits: the checks run in the student's Python process. Code written to defeat them can (it can
read the checker's frames and module state, call the package's private modules, or unpatch what
the check patched); what a check refuses is the plausible shortcut, not a determined attack.
``tools/grade.py`` keeps each graded function's source for a teacher's spot review.
"""
from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import hashlib
import importlib.util
import inspect
import itertools
import linecache
import math
import os
import re
import site
import sys
import sysconfig
import textwrap
import traceback
import types
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.utils._python_dispatch

from . import _torch_path, _triton, reference
from ._triton import INTERPRET, jit, tl
from .primitive import linear_scan
from .returns import gae as _harness_gae

__all__ = ["names", "catalog", "task", "check", "checks", "score", "credit", "attempt", "fix", "guarded", "cases",
           "scan_hook", "map_hook", "vtrace_prologue", "package_prologue", "key_lines"]

KINDS = ("kernel", "hook", "numpy", "concept")


@dataclass(frozen=True)
class _Exercise:
    name: str
    notebook: str
    kind: str
    task: str  # what to write: the signature and what it returns
    cases: Callable  # (Draw) -> [(case description, args, kwargs, expected[, marks])]
    run: Callable  # (fn, args, kwargs) -> what to compare with expected
    scan: str | tuple | None  # "reverse" or "forward": where an error starts (see _where); one per result
    time_dim: int  # the outputs' time axis
    stream: int  # the builder's own random stream (Draw)
    results: tuple | None = None  # what each result is, where the function returns several
    may_use: tuple = ()  # the package's functions it may call (by their name in rltriton_lite or exercises)
    window_end: str = "the window's last step (t = T - 1: what does it bootstrap from?)"  # what that step is
    # The hint for an error that starts at an ordinary step (no mark, not the scan's first step); None: the
    # default, which names a combine only where the student writes one (needs == "scan")
    ordinary: str | None = None
    select_fix: str | None = None  # the NaN hints' held-back fix in the exercise's own names (None: _SELECT_FIX)
    local: bool = False  # the student's code only maps the scan's values (an epilogue): its errors stay at their step
    # What the function must do besides the values (_require): "kernel" (launch a @triton.jit kernel of the
    # student's own on every call), "scan" (and run a tl.associative_scan), "hook" (fn is the student's own
    # @triton.jit function, run by a harness), "autograd" (an autograd.Function, Triton in forward and backward)
    needs: str | None = None
    in_place: tuple = ()  # (argument index, name): inputs a launch must receive themselves, not a copy
    probe: Callable | None = None  # (ex, fn) -> None or raises: a last check after every case is right
    # The checker's reference on the case's arguments as NumPy (float64, flags bool; the other arguments as they
    # are): what the replay on new inputs must give (_replay). Every exercise whose answer is its kernel's has one.
    recompute: Callable | None = None
    # An exercise's own hint: (the case's args, the result's index or None, bad, got, expected: the result's
    # arrays) -> a hint or None, said before the others where it is true (the "every element" and ordinary-step
    # hints left out then)
    hint: Callable | None = None
    # A hook's contract, (n, what): its @triton.jit function returns n values, ``what`` names them; the verdict
    # where the kernel that runs it cannot unpack what it returned (_returned_count)
    hook_returns: tuple | None = None
    # The words that name its key cases in their labels, what the exercise is about (a NaN behind an
    # episode end, a carry across chunks): an answer wrong on one gets no partial credit (score)
    key: str = "NaN"
    # What a step's map is, where the student writes a combine: "affine" (y -> b + a y; the combine's order is
    # read from TWO_MAPS), or another kind (discounted_max's max-plus maps), where that reading does not apply
    maps: str = "affine"
    # The task's answer is one program with one block over the whole row (block_scan): elements never stored by
    # a block narrower than the row are that block's (BLOCK >= T), not a chunk loop's (_block_short_of_the_row)
    one_block: bool = False
    # The task's plan is one program that walks the tensor block by block (awac_weights): a tail never stored may
    # be a pass that stops after its first block, not only a grid short of the tensor
    walks_blocks: bool = False
    # A one-number answer's expected value is said in its message; False where that value is what the student counts
    # (vtrace_floor_bytes: its first case, B = T = 1, would give away the count per step)
    says_expected: bool = True
    # What one element along the scan is, in the messages ("the latest wrong step", "that step is"): a segment
    # in segment_carries, whose scan walks segments (a round-50 review: "step" there read as a rank's step)
    step: str = "step"


_EXERCISES: dict[str, _Exercise] = {}


def _exercise(name, notebook, kind, task, stream, run=lambda fn, args, kw: fn(*args, **kw), scan="reverse",
              time_dim=-1, results=None, may_use=(), **more):
    def register(cases):
        cases = _checker_only(cases)  # the case builders compute expected values: not while a student's code runs
        _EXERCISES[name] = _Exercise(name, notebook, kind, task.strip(), cases, run, scan, time_dim, stream, results,
                                     tuple(may_use), **more)
        needs = _EXERCISES[name].needs  # every kind says what it needs: a kernel launched, a Triton hook run
        assert kind in KINDS and (kind == "kernel") == (needs in ("kernel", "scan")), name
        assert (kind == "hook") == (needs in ("hook", "autograd")), name
        assert (needs in ("kernel", "scan", "autograd")) == (_EXERCISES[name].recompute is not None), name
        return cases
    return register




class Draw:
    """What a case builder draws its cases from, one mechanism for every exercise.

    ``rng``: the values, a ``numpy.random.Generator``: ``default_rng(stream)`` for the fixed cases
    (``seed=None``), ``default_rng([seed, stream])`` for a seed (each exercise its own stream).
    ``int``, ``real``, ``choice``, ``pick``: a shape, a length, the position of a special step, a
    parameter: ``default`` for the fixed cases (nothing drawn, so the fixed cases' values are the
    ones they always were), else drawn from the range given (ints inclusive)."""

    def __init__(self, seed: int | None, stream: int):
        self.fixed = seed is None
        self.rng = np.random.default_rng(stream if seed is None else [seed, stream])

    def pick(self, default, draw: Callable):
        """``default`` for the fixed cases, else ``draw(rng)``."""
        return default if self.fixed else draw(self.rng)

    def int(self, default: int, lo: int, hi: int) -> int:
        return self.pick(default, lambda rng: int(rng.integers(lo, hi + 1)))

    def real(self, default: float, lo: float, hi: float) -> float:
        """Rounded to 3 decimals: the value a case's description shows is the one it uses."""
        return self.pick(default, lambda rng: round(float(rng.uniform(lo, hi)), 3))

    def choice(self, default, options):
        return self.pick(default, lambda rng: options[int(rng.integers(len(options)))])


def names() -> list[str]:
    """Every exercise, in course order."""
    return list(_EXERCISES)


def catalog() -> list[tuple[str, str, str]]:
    """(name, notebook, kind) for every exercise, in course order."""
    return [(e.name, e.notebook, e.kind) for e in _EXERCISES.values()]


def task(name: str) -> str:
    """What the exercise asks for."""
    return _get(name).task


def cases(name: str, seed: int | None = None) -> list[tuple]:
    """The cases that ``check(name, fn, seed)`` runs, in order: (description, args, kwargs,
    expected[, marks]), ``marks`` the special steps that a failure's hint names (as the hint says
    them: without the fixes it holds back)."""
    return [(*c[:4], {_FIXES.sub("", k): v for k, v in c[4].items()}) if len(c) > 4 else c
            for c in _cases(name, seed)]


def _cases(name: str, seed: int | None = None) -> list[tuple]:
    """:func:`cases` as the checker reads them, the marks' held-back fixes in place."""
    ex = _get(name)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise TypeError(f"seed must be None or an int >= 0, got {seed!r}")
    try:
        out = [_window_end_marks(ex, c) for c in ex.cases(Draw(None if seed is None else int(seed), ex.stream))]
    except _NoKey:
        if seed is None:
            raise RuntimeError(f"{name}: {_RECORDED_KEYS.name} does not hold its fixed cases' values: record "
                               "them again (notebooks/solutions/_keys.py says how)") from None
        raise ValueError(f"{name}: seed={seed}: cases drawn from a seed are checked with the teacher's keys, "
                         "which this install does not have (a student's wheel holds the fixed cases' values "
                         "only): check with seed=None, the notebook's cases") from None
    if seed is not None:
        out = [(f"{case} (seed={seed})", *rest) for case, *rest in out]
    return out


def check(name: str, fn: Callable, seed: int | None = None) -> None:
    """Run ``fn`` on every case of exercise ``name``: None when all are right, else an
    ``AssertionError`` naming the case, the step where the error starts, what was expected there
    and what came out, and what is special about that step (an episode end, the window's last
    step, a chunk boundary) as a hint.

    ``seed``: None (the default) runs the fixed cases, those the notebooks show. An int >= 0 runs
    cases drawn from it: the same edge cases, the same simplest-first order, but other random
    values and, where a case allows, other shapes, lengths, parameters and positions of the
    special steps; the same seed gives the same cases, so a teacher can grade with cases the
    students never saw (a failing case's name ends in ``(seed=...)``). The concept exercise
    (``vtrace_floor_bytes``) takes it too: it draws the sizes.

    Besides the values, a check enforces what the task asks for (the module's doc lists it): a
    kernel exercise's call must launch a ``@triton.jit`` kernel of the student's own (and run a
    ``tl.associative_scan`` where it is a scan) and return the tensor that kernel wrote (passed to
    its launch, not written by PyTorch afterwards, under the interpreter every element stored by
    it) and that its launches, run again on new inputs, recompute (``_replay``; ``returns_autograd``
    too, through its scan_hook launches), a hook exercise's function must be a
    ``@triton.jit`` function, ``strided_scan`` must read its input in place, ``returns_autograd``
    must go through a ``torch.autograd.Function`` with Triton in both passes, ``n_step_returns``
    must not loop over time in Python; under the interpreter, a combine of the student's that a
    ``tl.associative_scan`` applies must be associative (tried on the scan's own elements, both
    groupings: the bug named, whatever the values). Write it yourself: while ``fn``
    runs, the package's answers
    (its compute functions, ``reference``, ``_torch_path``, the integrations' drop-ins, its
    prologues and epilogues, ``scan_hook``/``map_hook`` where the kernel itself is asked for, and
    the checker's own cases and references) raise an AssertionError, except what the exercise's
    task allows (``rltriton_lite.linear_scan`` in the tensor-op hooks, ``scan_hook`` in
    ``returns_autograd``); a function that reads one by name, or is one, is refused the same way.
    The expected values are computed after ``fn`` returns."""
    code, ex = None, _get(name)
    _HELD[name] = None  # (an error raised by fn leaves no earlier check's fix behind)
    try:
        for code, _ in _verdicts(name, fn, seed):  # (it raises at the first wrong case)
            pass
        if ex.probe is not None:
            ex.probe(ex, fn, code)
            LAUNCHES.clear()  # (the probe's: they hold its tensors)
    except AssertionError as e:
        raise _held_back(name, e).with_traceback(e.__traceback__) from None
    _HELD[name] = ""


def _fix(text: str) -> str:
    """The part of a hint that says how to fix the mistake, not what it is: held back from the
    message (:func:`fix` shows it), so the notebook's hints stay worth reading."""
    return f"\x01{text}\x02"


_HELD: dict = {}  # exercise -> its last check: the fix held back, None (failed, none held), "" (passed)
_FIXES = re.compile("\x01(.*?)\x02", re.S)
_CODE_WORD = re.compile(r"\S*[(_\[.=]")  # a fix's first word that is code (exp(A / beta)) keeps its case


def _held_back(name: str, e: AssertionError) -> AssertionError:
    """``e`` with its fixes taken out (kept in ``_HELD`` and the error's ``fix``) and a pointer to them."""
    said = str(e)
    fixes = [f.strip().lstrip(":;, ") for f in _FIXES.findall(said)]
    fixes = [(f if _CODE_WORD.match(f) else f[:1].upper() + f[1:]) + ("" if f.endswith((".", "?", ".)", "?)")) else ".")
             for f in fixes]
    _HELD[name] = " ".join(fixes) if fixes else None  # None: failed, no fix held back
    if not fixes:
        return e
    out = type(e)(_FIXES.sub("", said).replace(" \n", "\n").rstrip()
                  + f"\n(A fix is held back: try the notebook's hints first; print(exercises.fix({name!r})) shows it.)")
    out.fix = _HELD[name]
    return out


def fix(name: str) -> str:
    """The fix that the last failed check of exercise ``name`` held back from its message, where it
    held one back: the message says what is wrong; this says what to change."""
    _get(name)
    held = _HELD.get(name, "not run")
    return {"not run": f"{name}: no fix to show: no attempt of yours has been checked yet in this session.",
            "": f"{name}: no fix to show: its last check passed.",
            None: f"{name}: no fix beyond the message above; try Hint 3 (a case by hand), then Hint 4."
            }.get(held, held)


def key_lines(fn: Callable, notes: dict[str, str]) -> str:
    """The lines of ``fn``'s source (a ``@triton.jit`` function's too) that hold a key of ``notes``,
    each under a comment ``# yours: <note>``, with the ``for``/``if``/``else`` lines of the blocks that
    hold them, and ``...`` where lines are left out: the printout of notebook 13c, section 6."""
    source = inspect.getsource(getattr(fn, "fn", fn)).splitlines()
    depth = lambda line: len(line) - len(line.lstrip())  # noqa: E731
    keys = {i: k for i, line in enumerate(source) for k in notes if k in line}
    missing = set(notes) - set(keys.values())
    if missing:
        raise ValueError(f"notes: no line of {getattr(fn, '__name__', fn)} holds {sorted(missing)}")
    top = min(depth(source[i]) for i in keys)

    def holders(i):  # the block headers above line i, up to the outermost kept line's level
        out, d = [], depth(source[i])
        for j in range(i - 1, -1, -1):
            line = source[j]
            if line.strip() and not line.lstrip().startswith("#") and top <= depth(line) < d:
                out.append(j)
                d = depth(line) + line.lstrip().startswith(("else", "elif"))  # an else: look on for its if
        return out

    shown, last = [], None
    for i in sorted(set(keys) | {j for i in keys for j in holders(i)}):
        skipped = [w for w in source[last + 1:i] if w.strip()] if last is not None else []
        if skipped:  # '...' at the outermost level of the lines left out
            shown.append(min((w[:depth(w)] for w in skipped), key=len) + "...")
        if i in keys:
            shown.append(f"{source[i][:depth(source[i])]}# yours: {notes[keys[i]]}")
        shown.append(source[i].rstrip())
        last = i
    return textwrap.dedent("\n".join(shown))


def guarded(fn: Callable, *args, **kwargs):
    """``fn(*args, **kwargs)``, for trying your kernel on inputs of your own (a hint's hand check):
    under the interpreter each load and store is checked before it happens, as :func:`check` does,
    so a stray one raises an error that says so. Unchecked, it writes past a tensor's memory: the
    call may print the right answer, then the notebook's kernel dies. Compiled on a GPU: the call."""
    with _interpreting():
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - the interpreter wraps what a kernel raises
            stray = _cause(e, _OutOfBounds)
            if stray is None:
                raise
            raise RuntimeError(f"{getattr(fn, '__name__', 'your function')}: {_FIXES.sub('', str(stray))}") from None


def checks(name: str, fn: Callable, seed: int | None = None) -> list[tuple[str, bool]]:
    """Each check of ``fn`` on exercise ``name`` on its own, in order: (its label, whether it
    passed). The checks are :func:`check`'s cases, each run whatever the others gave, and, where
    ``check`` ends with a probe of the whole function (``n_step_returns``: no Python loop over
    time), that probe, labelled "the probe". ``check`` passes exactly when all do. A hook that is
    not a ``@triton.jit`` function fails them all; an error other than the checker's (the function
    raised, did not compile) propagates, as from ``check``."""
    ex, labels = _get(name), _check_labels(name, seed)
    passed, code = [], None
    try:
        for code, wrong in _verdicts(name, fn, seed, go_on=True):
            passed.append(True if wrong is None else RULE_BROKEN if isinstance(wrong, _RuleBroken) else False)
    except AssertionError:  # before any case: not a hook
        return [(label, False) for label in labels]
    if ex.probe is not None:
        try:
            ex.probe(ex, fn, code or _Code(fn))
            passed.append(True)
        except AssertionError:
            passed.append(RULE_BROKEN)  # (the probe checks a rule: n_step_returns' no loop over time)
        finally:
            LAUNCHES.clear()
    return [(label + (RULE_BROKEN if ok == RULE_BROKEN else ""), ok is True) for label, ok in zip(labels, passed)]


RULE_BROKEN = " (a rule of the task broken)"  # a check's label where the answer broke one: no partial credit


class _RuleBroken(AssertionError):
    """Raised where right values came the wrong way: no kernel of the student's, a copy, a scan whose
    result is dropped, a package answer called, a loop over time. :func:`credit` gives such an answer 0."""


def score(name: str, fn: Callable, seed: int | None = None) -> tuple[int, int]:
    """(checks passed, checks) of ``fn`` on exercise ``name``, for partial credit (``tools/grade.py``),
    from :func:`checks`. An answer wrong on a key case (one whose label names the exercise's
    ``key``: a NaN behind an episode end, by default; the carry across chunks in the chunked ones)
    passes none: it has the bug the exercise is about."""
    return credit(name, checks(name, fn, seed))


def credit(name: str, results: list[tuple[str, bool]]) -> tuple[int, int]:
    """(checks passed, checks) from :func:`checks`'s ``results``: none where a key case failed, or
    where the answer broke a rule of the task (its label ends with ``RULE_BROKEN``)."""
    key = _get(name).key
    if any(not ok and (key in label or label.endswith(RULE_BROKEN)) for label, ok in results):
        return 0, len(results)
    return sum(ok for _, ok in results), len(results)


def _check_labels(name, seed=None) -> list[str]:
    """What :func:`score` counts as checks for ``name``, in order: its cases' labels, and its last
    probe if any."""
    return [case for case, *_ in cases(name, seed)] + (["the probe"] if _get(name).probe is not None else [])


def _n_checks(name, seed=None) -> int:
    """How many checks :func:`score` counts for ``name``."""
    return len(_check_labels(name, seed))


def _verdicts(name, fn, seed, go_on=False):
    """(what fn's code shows, None or the AssertionError) for each case of ``name`` in turn; with
    ``go_on`` every case runs, else the cases stop at the first wrong one."""
    ex = _get(name)
    if not callable(fn):
        raise TypeError(f"check({name!r}, fn): fn must be a function, got {type(fn).__name__}")
    # The inputs only: each case's expected values are drawn again after fn has returned (_expected),
    # so that while fn runs they are nowhere in the process.
    inputs = [(case, args, kwargs) for case, args, kwargs, *_ in cases(name, seed)]
    code = None  # what fn's code shows (read once, after its first run: a starter is only a starter)
    if ex.needs == "hook" and not _is_jit(fn):
        code = _Code(fn)
        _refuse(ex, inputs[0][0], code, [])
        raise AssertionError(
            f"{name}: {getattr(fn, '__name__', 'your function')} is not a @triton.jit function: this exercise asks "
            "for the Triton function that the harness runs inside its kernel: write it with tl.load and tl "
            "operations and decorate it with @triton.jit (a plain Python function, or the result computed in "
            "PyTorch, is not one)")
    for i, (case, args, kwargs) in enumerate(inputs):
        try:
            got, launched, widest, functions, code = _run(ex, case, fn, args, kwargs, code)
            if SEEN["combine_arity"]:  # (the interpreter runs such a combine, a GPU's compiler refuses it)
                raise AssertionError(f"{ex.name}, {case}: " + SEEN["combine_arity"])
            if SEEN["not_associative"]:  # the combine itself: said before the values it makes wrong (on a GPU)
                cause = _reset_dropped()  # a known slip: said alone, without the random triples' example
                said = ("your combine is not associative." + cause + " " + RUNS_MEET_RUNS) if cause else \
                    NOT_ASSOCIATIVE.format(SEEN["not_associative"] + ".")
                raise AssertionError(f"{ex.name}, {case}: " + said + code.slips())
            expected, marks = _expected(ex, seed, i)
            unstored = _unstored_of(ex, got, launched)
            try:
                _compare(ex, case, got, expected, marks, args=args, kwargs=kwargs, unstored=unstored)
            except AssertionError as e:
                said, note, rows = str(e), "", _only_row_0_stored(got, unstored)
                # elements never stored hold what the buffer held: the step's marks would point elsewhere
                if rows:
                    after = "row 1" if rows == 1 else f"everything after row 0 (rows 1 to {rows})"
                    theirs = [_programs(launch) for launch in launched
                              if launch.theirs and got.untyped_storage().data_ptr() in launch.storages]
                    one = theirs and all(n == 1 for n in theirs)  # a grid of one program, not a row offset left out
                    said = said.split("\nHint:")[0] + "\nHint: " + (ONE_PROGRAM_ROW_0 if one else ROW_0_ONLY
                                                                        ).format(after)
                elif isinstance(unstored, _Unstored) and unstored.mask.all():
                    chunks = (" (a loop over chunks: does it visit chunks 0 to n_chunks - 1?)"
                              if ex.needs == "scan" and not ex.one_block else "")
                    said = said.split("\nHint:")[0] + "\nHint: " + NONE_STORED.format(got.numel(), chunks)
                else:  # elements never stored: said first, before the step's hint (which may point elsewhere)
                    short = _block_short_of_the_row(ex, got, launched, widest, unstored)
                    if short:  # one program, its block narrower than the row: that, not the step's marks (padding)
                        said = said.split("\nHint:")[0] + "\nHint: " + BLOCK_SHORT_OF_THE_ROW.format(*short)
                    # (UNSTORED_TAIL or NONE_STORED, for one of several results: the hint says it all)
                    told = any(x in said for x in ("), nothing was stored: your kernel's tl.store",
                                                   "Hint: Your kernel's tl.store calls wrote none of the"))
                    note = "" if told else _unstored_note(ex, unstored, hinted="\nHint:" in said,
                                                          one_block=bool(short))
                head, hint_mark, hint = said.partition("\nHint:")  # and Python on a block: before any guess
                raise AssertionError(head + note + code.slips() + hint_mark + hint
                                     + _no_kernel_note(ex, launched)) from None
            del expected
            try:
                _require(ex, case, fn, args, launched, widest, functions, got)
            except AssertionError as e:
                raise _RuleBroken(str(e)) from None
            _compiles_for_a_gpu(ex, case, launched, code)
            del got, launched, unstored
        except AssertionError as e:
            if not go_on:
                raise
            yield code, e
            continue
        yield code, None


# ---- Compiled for a GPU, without one ----------------------------------------------------------------
# The interpreter runs a kernel as NumPy and takes code that Triton's compiler refuses (a loop's carry
# made a float after starting as an integer, ...). So an accepted kernel or hook is compiled too: its
# launch, by Triton's front end for an H100/H200 (sm_90) into Triton IR, which needs no GPU (a stand-in
# driver answers Triton's questions about the device). Once per kernel, hooks and argument types.
_LANG_CLASSES = ("tensor", "dtype", "condition", "tensor_descriptor_base")


def _lang_state():
    """The attributes of triton.language that the interpreter patches while a kernel runs (and, for a
    @triton.jit function called from a kernel, leaves patched: Triton 3.6 to 3.9); None if they are
    patched already."""
    if not _triton.HAS_TRITON:
        return None
    lang = _triton.triton.language
    holders = [lang, lang.core, lang.math] + [getattr(lang.core, c) for c in _LANG_CLASSES if hasattr(lang.core, c)]
    state = {id(h): (h, dict(vars(h))) for h in holders}
    patched = any(isinstance(v, (types.FunctionType, functools.partial, property))
                  and getattr(getattr(v, "func", v), "__module__", None) == "triton.runtime.interpreter"
                  for _, d in state.values() for v in d.values())
    return None if patched else state


_LANG_AT_IMPORT = _lang_state()
_FRONTEND_SEEN: dict = {}  # (what Triton compiles: _frontend_jit's key) -> None, or (the error, its hint)
_LANGUAGE_JIT: dict = {}  # triton.language's own functions as JITFunctions: made once (each reads its source)


def _sm90_driver():
    """A stand-in CUDA driver of an H100/H200 (sm_90) for Triton to compile against on a machine
    without a GPU (no libcuda is loaded: nothing can run). ``tools/compile_sm90.py`` uses it too."""
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.driver import CudaDriver

    class Sm90(CudaDriver):
        def __init__(self):
            self.target = GPUTarget("cuda", 90, 32)

        def get_current_target(self):
            return self.target

        def get_current_device(self):
            return 0

        def get_current_stream(self, device=None):
            return 0

        def get_device_interface(self):
            return torch.cuda

        def get_active_torch_device(self):
            return torch.device("cpu")

    return Sm90()


@contextlib.contextmanager
def _compiling_for_sm90(as_jit):
    """The language as imported, its @triton.jit functions (tl.max, tl.cdiv, ...) made ``as_jit``'s,
    and a stand-in CUDA driver of an sm_90 device, while the block runs; what was there is put back
    after it."""
    import triton.runtime.driver as driver

    modules = [m for name, m in list(sys.modules.items()) if name.startswith("triton.language") and m is not None]
    now = {id(h): (h, dict(vars(h))) for h in [h for h, _ in _LANG_AT_IMPORT.values()] + modules}
    saved = driver._active

    def put(state):
        for h, d in state.values():
            for k in set(vars(h)) - set(d):
                delattr(h, k)
            for k, v in d.items():
                if vars(h).get(k, d) is not v:
                    setattr(h, k, v)
    put(_LANG_AT_IMPORT)
    for m in modules:
        for k, v in list(vars(m).items()):
            if _is_jit(v):
                setattr(m, k, as_jit(v))
    driver.set_active(_sm90_driver())
    try:
        yield
    finally:
        driver._active = saved
        put(now)


def _sm90_jit():
    """as_jit: a @triton.jit function made a JITFunction that reaches the functions it calls as
    JITFunctions too (under the interpreter each is an InterpretedFunction, which Triton cannot
    compile); a JITFunction (on a GPU) stays itself. lab.compile_for_h100 compiles with it too."""
    from triton.runtime.jit import JITFunction

    made = {}

    def as_jit(v):
        if isinstance(v, tuple):
            return tuple(as_jit(x) for x in v)
        if not _is_jit(v) or isinstance(v, JITFunction):
            return v
        store = _LANGUAGE_JIT if (v.fn.__module__ or "").startswith("triton.") else made  # (None: exec'd code)
        if id(v) not in store:
            store[id(v)] = (v, Frontend(v.fn))  # (v kept: its id stays its own)
        return store[id(v)][1]

    class Scope(dict):  # a function's globals, each made a JITFunction when read (a module holds many)
        def __getitem__(self, k):
            return as_jit(dict.__getitem__(self, k))

        def get(self, k, default=None):
            return as_jit(dict.get(self, k, default))

    class Frontend(JITFunction):
        @property
        def __globals__(self):
            if self._scope is None:
                self._scope = Scope(self._raw)
            return self._scope

        @__globals__.setter
        def __globals__(self, g):
            self._raw, self._scope = g, None

        def get_capture_scope(self):
            return {k: as_jit(v) for k, v in super().get_capture_scope().items()}

    as_jit.fresh = lambda v: Frontend(v.fn)  # a new JITFunction of v's source, whose compiles stay in its own cache
    return as_jit


def _frontend_jit():
    """(key, compile_launch) for launches of @triton.jit kernels under the interpreter, each made
    ``_sm90_jit``'s JITFunction whose compile stops at Triton IR. ``key``: what Triton compiles,
    its cache key (the kernel's source and every function's it calls) and the arguments' types."""
    from triton._C.libtriton import ir
    from triton.compiler.compiler import make_backend

    as_jit = _sm90_jit()

    def to_ir(src, target, options, **_):
        backend = make_backend(target)
        opts = backend.parse_options(options)
        context = ir.context()
        ir.load_dialects(context)
        backend.load_dialects(context)
        src.make_ir(target, opts, backend.get_codegen_implementation(opts), backend.get_module_map(), context)
        return object()  # (nothing to launch)

    def types(values) -> tuple:
        """What Triton specialises a launch on, roughly: tensors' dtypes, ints' values, the rest by
        type (a @triton.jit function by its cache key)."""
        def one(v):
            if isinstance(v, torch.Tensor):
                return str(v.dtype)
            if isinstance(v, (tuple, list)):  # (a list is its own key: Triton refuses one, takes a tuple)
                return (type(v).__name__, *map(one, v))
            if _is_jit(v):
                return as_jit(v).cache_key
            return v if isinstance(v, (int, bool, str, type(None))) else type(v).__name__
        return tuple(map(one, values))

    def key(kernel, args, kwargs):
        with _compiling_for_sm90(as_jit):  # (the language's own functions made JITFunctions, to be hashed)
            return types((kernel, *args)), types(kwargs.values()), tuple(kwargs)

    def compile_launch(kernel, args, kwargs):
        k = as_jit(kernel)
        k.compile = to_ir
        with _compiling_for_sm90(as_jit), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (Triton's own, about its defaults)
            k.run(*as_jit(tuple(args)), grid=(1,), warmup=True, **{n: as_jit(v) for n, v in kwargs.items()})
    return key, compile_launch


def _compiles_for_a_gpu(ex, case, launched, code):
    """Under the interpreter: each launch of the student's Triton code (``launched``, one case's)
    compiled for sm_90 by Triton's front end; a refusal raises with the compiler's message."""
    if not (INTERPRET and _triton.HAS_TRITON):
        return
    if _LANG_AT_IMPORT is None:
        raise RuntimeError(f"{ex.name}: right under the interpreter, but not compiled for a GPU: import "
                           "rltriton_lite.exercises before the first kernel runs (the interpreter leaves "
                           "triton.language changed), then check again")
    for launch in [x for x in launched if x.theirs]:
        args, kwargs = launch.call
        kwargs = {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}
        key_of, compile_launch = _frontend_jit()
        key = key_of(launch.kernel, args, kwargs)
        if key not in _FRONTEND_SEEN:
            try:
                compile_launch(launch.kernel, args, kwargs)
                _FRONTEND_SEEN[key] = None
            except Exception as e:
                inner = _raised_from(e)
                _FRONTEND_SEEN[key] = (f"{type(inner).__name__}: {inner}", _error_hint(e, code))
        if _FRONTEND_SEEN[key] is not None:
            error, hint = _FRONTEND_SEEN[key]
            raise AssertionError(
                f"{ex.name}, {case}: right under the interpreter, but Triton's compiler refuses it for a GPU "
                f"(sm_90, an H100/H200; the interpreter runs Python and lets this through):\n{error}"
                + (f"\n{hint}" if hint else ""))


def _run(ex, case, fn, args, kwargs, code):
    """One call of the student's function, watched: (what it returned, the launches it made, the
    widest tl.associative_scan under the interpreter, the autograd.Functions it applied, _Code)."""
    LAUNCHES.clear()
    SEEN["widest_scan"], SEEN["not_associative"], SEEN["combine"], _PHASE[0] = 0, None, None, "forward"
    SEEN["combine_reset_first"], SEEN["combine_arity"], SEEN["past_leaks"], SEEN["combine_max"] = None, "", 0.0, None
    SEEN["combine_max_inf"] = None
    before = _snapshot(ex, fn, args, kwargs)  # (taken outside the watch: its copies are the checker's, not fn's)
    with _watch(), np.errstate(all="ignore"), _refusing(ex) as refused, \
            _applying_functions(ex.needs == "autograd") as functions:  # (NumPy warns at the NaN cases)
        try:
            got = ex.run(fn, args, kwargs)
        except NotImplementedError:
            raise
        except Exception as e:
            code = code or _Code(fn)
            _refuse(ex, case, code, refused, e)  # the package's answer called: that first
            if isinstance(e, (TypeError, ValueError)):
                raise _raised_by_theirs(ex, case, fn, e) from None
            if isinstance(e, AssertionError):  # the runner's own checks (launches, bits, chunks)
                raise type(e)(f"{ex.name}, {case}: {e}" + code.slips()) from None  # (a _RuleBroken stays one)
            stray = _cause(e, _OutOfBounds)  # a Triton compile or run error inside the student's code
            if stray is not None:
                raise AssertionError(f"{ex.name}, {case}: {stray}") from None
            if ex.kind not in ("kernel", "hook"):  # no Triton code of theirs: their own error as it is
                raise _raised_by_theirs(ex, case, fn, e) from None
            count = _returned_count(ex, e, fn)
            if count is not None:  # a verdict on the answer, as a wrong count of results is (_compare)
                raise AssertionError(f"{ex.name}, {case}: {count}") from None
            inner = _raised_from(e)  # compiled, the error at the hook's call wraps the one in the hook
            # without the chain: its dozens of lines are the harness's and Triton's; the student's line is named
            raise RuntimeError(f"{ex.name}, {case}: {getattr(fn, '__name__', 'your function')} failed to compile or "
                               f"run{_student_line(e, fn)}: {type(inner).__name__}: {inner}"
                               + "".join(f"\n{h}" for h in [_error_hint(e, code)] if h)) from None
        finally:
            _PHASE[0] = "forward"
    launched, widest = list(LAUNCHES), SEEN["widest_scan"]
    LAUNCHES.clear()
    code = code or _Code(fn)
    _refuse(ex, case, code, refused)
    _unchanged(ex, case, before)
    return got, launched, widest, list(functions), code


# ---- The caller's inputs stay as they were ----------------------------------------------------------
# A function that writes into an input (B *= ..., B[k] = ...) can return the right values and still
# break its caller, who reads the array again. So every case's array and tensor arguments are copied
# before fn runs and compared with what they hold after it returns (NaN against NaN is no change).
# (No runner writes into its case's arguments while fn runs, so no exercise is excluded.)
def _argument_names(ex, fn, args, kwargs):
    """A name for each positional argument: fn's own parameter names where its runner calls fn with the
    case's arguments, else the task's, else "argument i"."""
    if ex.kind != "hook":  # (a hook's case holds the harness's inputs, not the hook's own arguments)
        try:
            sig = inspect.signature(fn)
            sig.bind(*args, **kwargs)  # (raises where fn does not take the case's arguments as they are)
            names = [p.name for p in sig.parameters.values()
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][:len(args)]
            if len(names) == len(args):
                return names
        except (TypeError, ValueError):
            pass
        m = re.match(r"\s*\w+\(([^)]*)\)", ex.task)
        names = [n.strip() for n in m.group(1).split(",")] if m else []
        if len(names) >= len(args) and all(n.isidentifier() for n in names[:len(args)]):
            return names[:len(args)]
    return [f"argument {i}" for i in range(len(args))]


def _snapshot(ex, fn, args, kwargs):
    """(name, the argument, a copy of it) for each array or tensor argument, one level into tuples
    and lists (name[i])."""
    named = list(zip(_argument_names(ex, fn, args, kwargs), args)) + list(kwargs.items())
    named += [(f"{name}[{i}]", y) for name, x in named if isinstance(x, (tuple, list)) for i, y in enumerate(x)]
    return [(name, x, x.copy() if isinstance(x, np.ndarray) else x.detach().clone())
            for name, x in named if isinstance(x, (np.ndarray, torch.Tensor))]


def _unchanged(ex, case, before):
    """Raises, naming the argument and an element, if fn changed one of its inputs in place."""
    for name, now, was in before:
        if tuple(now.shape) != tuple(was.shape) or now.dtype != was.dtype:
            change = f"its shape or dtype: was {tuple(was.shape)} {was.dtype}, now {tuple(now.shape)} {now.dtype}"
        else:
            same = (now == was) | ((now != now) & (was != was))  # (NaN stays NaN: that is no change)
            same = same.cpu().numpy() if isinstance(same, torch.Tensor) else np.asarray(same)
            if same.all():
                continue
            k = int(np.flatnonzero(~same)[0])
            at = ", ".join(str(int(i)) for i in np.unravel_index(k, same.shape))

            def show(x):
                v = x.reshape(-1)[k].item()
                return str(v) if isinstance(v, bool) else f"{v:.6g}"
            change = f"element [{at}]: was {show(was)}, now {show(now)}" if same.ndim else \
                f"was {show(was)}, now {show(now)}"
        copy = name.split("[")[0] + (".clone()" if isinstance(now, torch.Tensor) else ".copy()")
        raise AssertionError(
            f"{ex.name}, {case}: your function changed its input {name} in place ({change}); the caller's "
            f"arrays must not change: work on a copy ({copy}), or build a new array")


def _raised_by_theirs(ex, case, fn, e: Exception) -> Exception:
    """The error the student's function raised, as it is (its type, its message), with a note of the
    case and the student's line, and without the checker's frames (dozens of lines in a notebook)."""
    line = _student_line(e, fn)
    e.add_note(f"({ex.name}, {case}: your function raised it{line})")
    shadowed = _kernel_shadowed(e, fn)
    if shadowed:
        e.add_note(shadowed)
    for name, kind, pattern, note in _RAISED_NOTES:
        if name in (None, ex.name) and isinstance(e, kind) and re.search(pattern, f"{e} {line}"):
            e.add_note(note)
    return e.with_traceback(None)


# (exercise or None for every one, the error's type, a pattern of its message or the student's line, what it means)
_RAISED_NOTES = [
    (None, (ValueError, RuntimeError), r"truth value of an array with more than one element is ambiguous|"
                                       r"Boolean value of Tensor with more than one \w+ is ambiguous",
     "(Python's and, or, not and if want one True or False, and an array holds many. On arrays, use |, & and ~, "
     "and np.where (torch.where, tl.where) to choose element by element.)"),
    ("segment_carries", IndexError, r"reset\[[^\]]*\+\s*1\s*\]",
     "(Your line reads reset[:, s + 1], the next segment's flag: at the last segment there is none. "
     "Segment s's map selects on its own flag, reset[:, s]: whether an episode ends inside segment s.)"),
    ("host_bound", ValueError, r"max\(\).*empty|zero-size array to reduction operation maximum",
     "(In this case no shape of the pass is host-bound: its wall time is at most twice its GPU time at every "
     "shape. The task asks for 0 then: max(..., default=0) gives it.)"),
    ("launch_model", TypeError, r"NoneType",
     "(A peer's row has kernel_ms = None: keep only the rltriton_lite rows, impl == \"rltriton_lite\".)"),
]


_LAUNCH = re.compile(r"([A-Za-z_]\w*)\s*\[[^\]]*\]\s*\(")  # name[grid](: a kernel's launch


def _kernel_shadowed(e: BaseException, fn) -> str:
    """For "'function' object is not subscriptable" raised on a launch line of the student's,
    ``name[grid](...)`` where ``name`` is a plain Python function: their @triton.jit kernel and the
    function that launches it share that name (00b's rule: give the kernel another name), so the
    second definition replaced the first. The sentence that says so, else ""."""
    code = getattr(getattr(fn, "fn", fn), "__code__", None)
    if not isinstance(e, TypeError) or "'function' object is not subscriptable" not in str(e) or code is None:
        return ""
    frames = [(frame, line) for frame, line in traceback.walk_tb(e.__traceback__)
              if frame.f_code.co_filename == code.co_filename]
    if not frames:
        return ""
    frame, lineno = frames[-1]  # the deepest of their frames: where the launch failed
    source = linecache.getline(frame.f_code.co_filename, lineno, frame.f_globals)
    for name in _LAUNCH.findall(source):
        obj = frame.f_locals[name] if name in frame.f_locals else frame.f_globals.get(name)
        if inspect.isfunction(obj) and not _is_jit(obj):
            other = f"_{name}" if name.endswith("kernel") else f"_{name}_kernel"
            return (f"(Your @triton.jit kernel and the function that launches it share the name {name}: the second "
                    f"definition replaces the first, so the launch {name}[grid] indexes the plain Python function. "
                    f"Give your @triton.jit kernel another name, such as {other}, and launch it by that name.)")
    return ""


def _expected(ex, seed, i):
    """Case ``i``'s expected values and marks, drawn again from the seed (the same every time)."""
    case = _cases(ex.name, seed)[i]
    return case[3], (case[4] if len(case) > 4 else {})


RUNS_MEET_RUNS = "(A scan combines runs of steps with runs: a combine must be right for two runs, not only for a run and one step.)"
NOT_ASSOCIATIVE = ("your combine is not associative: {} A scan groups the steps in a tree (on a GPU, and here in "
                   "the interpreter too): it combines runs of steps with runs, and the result must not depend on how "
                   "they are grouped. A combine right only where a run meets one step is not. Compose two runs on "
                   "paper, each part of the pair (or triple) included (notebook 00, section 2).")
TRITON_HINT = ("(In Triton, on blocks: &, |, ~ rather than and, or, not; tl.minimum, tl.maximum rather than "
               "min, max; tl.where rather than if; flags as tl.load(...) != 0. Under the interpreter print(x) "
               "shows a block.)")


_A_LIST = ("(A list passed to a kernel: Triton takes a tuple of tensors (or numbers), not a list. Build X and P with "
           "tuple(...).)")
_ERROR_HINTS = (  # (what the error says, where to look): the first that the error's text holds
    ("incorrect number of gradients", "(A backward returns one gradient per input of forward, in the order forward "
                                      "takes them: None for an input that needs none, such as a flag or gamma.)"),
    ("appears to not have been used in the graph", "(An autograd error, not a Triton one: an input the checker "
                                                    "differentiates never reached your output. Compute the output "
                                                    "from the tensor you were given, not a detached copy, through "
                                                    "your Function's apply.)"),
    ("does not require grad", "(An autograd error, not a Triton one: the output has no graph. Call your Function "
                              "through .apply(...), and mark the inputs that need a gradient with "
                              "requires_grad=True.)"),
    ("modified by an inplace operation", "(An autograd error, not a Triton one: a tensor saved for the backward "
                                         "was written in place after forward saved it. Save a tensor that nothing "
                                         "writes later, or a copy.)"),
    ("power of 2", "(A block's length, tl.arange(0, N)'s N, must be a power of 2: round it up with "
                   "triton.next_power_of_2 on the host and mask the lanes past the end.)"),
    ("has no attribute 'is_ptr'", _A_LIST),  # (the interpreter's words)
    ("argument of type: list", _A_LIST),  # (the compiler's)
    ("index out of range", "(An index past the end of a tuple: X, P and keep hold only the slots the task "
                                 "lists, in its order; count them.)"),
    ("is not defined", "(A name your @triton.jit code uses is not defined where it runs: a kernel reads its "
                       "arguments and module-level names (tl.constexpr ones when compiled), not a cell's local "
                       "variables.)"),
    ("loop-carried variable", lambda text: _carry_hint(text)),
    ("make_shape_compatible", "(Two blocks whose shapes do not broadcast: a (ROWS,) block against a (ROWS, CHUNK) "
                              "one, say. Give the smaller one the missing axis, x[:, None] for one value per row.)"),
    ("must have the same shape", "(The operands of one tl.associative_scan (or tl.reduce) must all have the same "
                                 "shape: on a (ROWS, CHUNK) tile, every one (ROWS, CHUNK). A mask built from t alone "
                                 "is (CHUNK,), and so is a = tl.where(m, gamma, 1.0) made with it: build m from both "
                                 "axes, rows[:, None] and t[None, :].)"),
    ("'constexpr' object has no attribute 'signature'",
     "(tl.associative_scan's combine must be a @triton.jit function that your kernel names itself, a module-level "
     "name: the compiler refuses one passed in as a tl.constexpr argument, as a hook is.)"),
    ("positional argument", "(A function of yours was called with another number of arguments than it takes. "
                            "tl.associative_scan calls its combine with 2k values for a scan of k blocks, the first "
                            "element's k, then the second's: 6 for a scan of (a, b, reset). A hook is called with "
                            "the arguments its task lists.)"),
)
# An error about operators or truth values on blocks (`and`, `if`, `~` on a float, min of blocks), in the
# interpreter's words or the compiler's: only then the operators' reminder (TRITON_HINT) fits it
_ON_OPERATORS = re.compile(r"truth value|bool|ambiguous|operand|unary|invert|bitwise|logical|not supported between")


def _returned_count(ex, e, fn) -> str | None:
    """Where ``ex`` has a hook contract (``hook_returns``) and ``e`` is the kernel unpacking what the
    student's hook returned: what it should return, and what it did where that is knowable (the
    hook's return statements, else the error's "expected n, got k", the interpreter's and the
    compiler's alike). A lone value is "not iterable": said only where the source shows it."""
    if ex.hook_returns is None:
        return None
    n, what = ex.hook_returns
    text = " ".join(str(x) for x in _chain(e))
    src = _source(getattr(fn, "fn", fn))
    returned = []
    with contextlib.suppress(SyntaxError, TypeError):
        returned = [x.value for x in ast.walk(ast.parse(src)) if isinstance(x, ast.Return) and x.value is not None]
    counts = {len(v.elts) if isinstance(v, ast.Tuple) and not any(isinstance(y, ast.Starred) for y in v.elts)
              else 1 if not isinstance(v, (ast.Tuple, ast.Name, ast.Call, ast.Subscript, ast.IfExp)) else None
              for v in returned}  # None: a name or call, whose length the source does not show
    shown = counts - {None}
    said = re.search(rf"values to unpack \(expected {n}(?:, got (\d+))?\)", text)
    short = _unpacked_short(e)
    if len(shown) == 1 and None not in counts:
        k = shown.pop()
        if k == n or not (said or short or any(w in text for w in ("values to unpack", "iterable"))):
            return None
        line = ast.unparse(returned[0])
        line = line[1:-1] if isinstance(returned[0], ast.Tuple) and line[:1] == "(" else line
        got = f"{k} value{'s' * (k != 1)}" + (f" (return {line})" if len(line) <= 80 else "")
    elif said:
        got = f"{said.group(1)} values" if said.group(1) else f"more than {n} values"
    elif short:
        got = f"fewer than {n} values"
    else:
        return None
    name = getattr(fn, "__name__", "your function")
    return f"{name} returned {got}, expected {n}: {what}"


def _unpacked_short(e) -> bool:
    """Compiled by Triton 3.6, a kernel's ``a, b, ... = HOOK(...)`` of a hook that returned fewer
    values fails as an IndexError at that line (the interpreter and later Tritons say "values to
    unpack")."""
    for x in _chain(e):
        node = getattr(x, "node", None)
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple) \
                and isinstance(node.value, ast.Call) and "index out of range" in str(getattr(x, "error_message", "")):
            return True
    return False


def _carry_hint(text: str) -> str:
    """A loop's carry whose type changed (the error's text, lowercased): its shape, or int for float."""
    types = re.search(r"initial type (.+?) but is re-assigned to (.+?) in loop", text)
    if types and re.findall(r"\[[^\]]*\]", types[1]) != re.findall(r"\[[^\]]*\]", types[2]):
        return (f"(A loop's carry changed shape: it started as {types[1]} and became {types[2]}. Check the axis of "
                "the reduction that makes it (tl.sum(x, axis)): a carry has one value per row, the shape it starts "
                "with.)")
    return "(A loop's carry changed type: started as an integer, carry = 0, then made a float; start it as 0.0.)"


def _error_hint(e: BaseException, code) -> str:
    """Where to look for an error raised by the student's Triton code: the error's own kind where
    it is known (``_ERROR_HINTS``), else Python applied to a block where their code does so, else
    the operators' reminder (``TRITON_HINT``) where the error is about operators or truth values
    (``_ON_OPERATORS``), else "" (a round-50 review: a combine called with 6 arguments where it takes 5
    was followed by the reminder of `and` and `or`)."""
    text = " ".join(f"{type(x).__name__}: {x}" for x in _chain(e)).lower()
    for said, hint in _ERROR_HINTS:
        if said in text:
            return hint(text) if callable(hint) else hint
    slips = code.slips().lstrip("\n") if code is not None else ""
    return slips or (TRITON_HINT if _ON_OPERATORS.search(text) else "")


def attempt(name: str, fn: Callable | None, seed: int | None = None) -> None:
    """:func:`check` for a notebook cell: prints the verdict and returns nothing (a notebook would
    echo a returned bool under it). "not attempted yet" while ``fn`` is a starter (it raises
    ``NotImplementedError``, or is None where a Triton function is to be written); a wrong answer's
    message is printed, not raised, so Run All goes on to the next cells; so is an error that ``fn``
    itself raised, with the case and the line of ``fn`` it came from (:func:`check` raises it, with
    its traceback). ``seed`` as in :func:`check`."""
    if fn is None:
        print(f"{name}: not attempted yet (assign your " + ("@triton.jit function" if _get(name).kind in
                                                             ("kernel", "hook") else "function") + f" to {name})")
        return
    try:
        check(name, fn, seed=seed)
    except NotImplementedError:
        _HELD.pop(name, None)  # (the starter's: no check of the student's code has run)
        print(f"{name}: not attempted yet (the starter raises NotImplementedError)")
        return
    except AssertionError as e:
        print(f"{name}: WRONG. {e}")
        return
    except Exception as e:  # noqa: BLE001 -- the student's own error: said, and Run All goes on
        notes = "".join(f"\n{n}" for n in getattr(e, "__notes__", ()))
        print(f"{name}: ERROR. {type(e).__name__}: {e}{notes}\n(exercises.check({name!r}, {getattr(fn, '__name__', 'fn')}) "
              "raises it, with its traceback.)")
        return
    print(f"{name}: correct on every case" + ("" if seed is None else f" (seed={seed})"))
    if not INTERPRET and _get(name).kind in ("kernel", "hook"):
        print(f"   (compiled: the interpreter's own checks did not run, the bounds of every load and store, the "
              f"stores, the scans' widths; the grader runs them: re-check with TRITON_INTERPRET=1 before handing in)")


def _student_line(e: BaseException, fn) -> str:
    """Where in the student's code (the file ``fn`` was written in) the error ``e`` or one it chains
    arose, the deepest such frame: " at line N of name: source", or "" where none is theirs."""
    code = getattr(getattr(fn, "fn", fn), "__code__", None)
    if code is None:
        return ""
    seen, said = set(), ""
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        for frame in traceback.extract_tb(e.__traceback__):
            if frame.filename == code.co_filename:
                said = f" at line {frame.lineno} of {frame.name}" + (f" ({frame.line.strip()})" if frame.line else "")
        e = e.__cause__ or e.__context__
    return said


def _get(name: str) -> _Exercise:
    if name not in _EXERCISES:
        raise ValueError(f"unknown exercise {name!r}; exercises.names() lists {names()}")
    return _EXERCISES[name]


def _compare(ex, case, got, expected, marks, rtol=1e-5, atol=1e-5, top=True, args=(), index=None, kwargs=None,
             unstored=None, whole=None):
    """Raises where ``got`` is not ``expected``, naming the case, the step where the error starts and a hint.
    ``unstored``: under the interpreter, for a kernel's answer, which elements no store of the student's kernel
    wrote (an _Unstored; a tuple of them, or None, for several results; None where unknown): those hold what
    the buffer held, not the student's arithmetic. ``whole``: where ``got`` is one of
    several results, all of them (an exercise's hint that takes ``whole`` sees the others too)."""
    said = "your function returned" if top else "got"
    if isinstance(expected, tuple):
        names = f" ({', '.join(ex.results)})" if ex.results else ""
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            raise AssertionError(f"{ex.name}, {case}: expected {len(expected)} results{names}, {said} {_describe(got)}")
        swapped = _swapped_results(got, expected, rtol, atol)
        if swapped and ex.results:
            i, j = swapped
            raise AssertionError(f"{ex.name}, {case}: your results {i} and {j} are swapped: result {i} holds "
                                 f"{ex.results[j]} and result {j} holds {ex.results[i]}; return ({', '.join(ex.results)})")
        for i, (g, e) in enumerate(zip(got, expected)):
            each = dataclasses.replace(ex, scan=ex.scan[i]) if isinstance(ex.scan, tuple) else ex
            label = f"result {i}" + (f" ({ex.results[i]})" if ex.results else "")
            _compare(each, f"{case}, {label}", g, e, marks, rtol, atol, top=False, args=args, index=i, kwargs=kwargs,
                     unstored=unstored[i] if isinstance(unstored, (tuple, list)) else None, whole=got)
        return
    if not isinstance(got, (torch.Tensor, np.ndarray, np.generic, int, float, list, tuple)) or isinstance(got, bool):
        want = "a number (or a 0-d tensor)" if np.ndim(expected) == 0 else \
            f"a tensor (or array) of shape {np.shape(expected)}"
        nothing = got is None and np.ndim(expected) == 0 and float(expected) == 0  # (host_bound: "or 0 when none is")
        raise AssertionError(f"{ex.name}, {case}: {said} {_describe(got)}, not {want}" + (
            " (where nothing qualifies, is the answer the number 0? A missing return gives None too)" if nothing else
            " (a missing return?)" if got is None else ""))
    if isinstance(got, (tuple, list)) and np.ndim(expected) == 0:  # (a shape's (B, T), say, for its B * T)
        pair = len(got) == 2 and all(isinstance(x, (int, float, np.generic)) and not isinstance(x, bool) for x in got)
        product = pair and float(got[0]) * float(got[1]) == float(expected) != 0
        raise AssertionError(f"{ex.name}, {case}: expected one number, {said} {_describe(got)}" + (
            ": its two numbers multiply to the answer; return their product (B * T, say), not the pair" if product
            else ""))
    if isinstance(got, torch.Tensor):
        got = got.detach().cpu().double().numpy()
    flags = np.asarray(expected).dtype == bool  # a flag's values are said as True and False, not 1 and 0
    got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if got.shape != expected.shape:
        extra = (ex.kind == "numpy" and got.ndim == expected.ndim + 1 and expected.ndim >= 1
                 and got.shape[-1] == expected.shape[-1])  # a matrix * a vector: broadcast, not multiplied
        raise AssertionError(f"{ex.name}, {case}: expected shape {expected.shape}, got {got.shape}" + (
            "\nHint: one dimension too many: * between a matrix and a vector multiplies element by element and "
            "broadcasts to a matrix; the matrix product is @." if extra else ""))
    bad = ~np.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    if bad.any():
        td = ex.time_dim % bad.ndim if bad.ndim else 0  # looked at with time last
        bad_l = np.moveaxis(bad, td, -1) if bad.ndim else bad
        marks_l = {k: np.moveaxis(np.broadcast_to(np.asarray(v), bad.shape), td, -1) for k, v in marks.items()}
        at_l, where = _where(bad_l, ex.scan, ex.step)
        at = at_l[:-1][:td] + at_l[-1:] + at_l[:-1][td:] if bad.ndim else at_l
        try:
            # (a hint with a kwargs parameter also sees the case's keyword arguments: rl.gae's flags, say)
            wants = ex.hint is not None and "kwargs" in inspect.signature(ex.hint).parameters
            # (and one with a whole parameter, every result where the function returns several)
            more = {"whole": whole} if ex.hint is not None and "whole" in inspect.signature(ex.hint).parameters \
                else {}
            own = None if ex.hint is None else ex.hint(args, index, bad, got, expected,
                                                       **({"kwargs": kwargs or {}} if wants else {}), **more)
            if SEEN.get("past_leaks"):  # (the runner saw it: the values change with what lies past the window)
                own = _Whole(_PAST_LEAKS.format(SEEN["past_leaks"], SEEN["past_leaks"]))
        except _NoKey:  # (without the keys, a hint's slip on inputs the function changed in place)
            own = None
        never = unstored.mask if isinstance(unstored, _Unstored) and unstored.mask.shape == got.shape else None
        if never is not None and (bad & never).any():  # elements never stored: what the buffer held
            if never.all():
                label = f" ({ex.results[index]})" if ex.results and index is not None else ""
                own = _Whole(NONE_STORED.format(got.size, "").replace("the tensor you returned",
                                                                       f"the tensor you returned{label}", 1))
            else:
                tail = _unstored_tail(ex, unstored, index)
                own = _Whole(tail) if tail else own
        if own is None and ex.kind == "kernel" and got.ndim == 2 and got.shape[0] > 1 and not bad[0].any() \
                and np.allclose(got[1:], expected[:1], rtol=1e-5, atol=1e-5, equal_nan=True):
            own = _Whole("Every row holds row 0's answer: each program read row 0, so a load (or every one) "
                         "ignores the row's offset. " + _fix(
                "Add the row's offset (row * T) to the loads' offsets, as to the stores'."))
        if own is None and ex.kind == "kernel" and got.ndim == 2 and got.shape[0] > 1 and not bad[0].any() \
                and bad[1:].all():  # (compiled: which elements were stored is not known, _only_row_0_stored)
            own = _Whole("Row 0 is right and every element of every other row is wrong: each program works on "
                         "row 0, or stores there, or only one program ran." + _fix(
                             " Launch one program per row, grid = (B,), and add the row's offset (row * T) to every "
                             "load's and store's offsets."))
        # row 0 right, later rows partly: a slip at a flag would show in row 0 too, where row 0 has that flag;
        # one that starts where a carry enters is the carry's (row 0's may be hidden by a reset or a small a)
        # (said only where it is so: the answer on those inputs, row 0's in every row, is what came out)
        row_0 = ex.kind == "kernel" and bad_l.ndim == 2 and bad_l.shape[0] > 1 and not bad_l[0].any() \
            and all(m[0].any() or not m[at_l] for m in marks_l.values()) \
            and not any(m[at_l] for k, m in marks_l.items() if k.startswith(_CARRY_LABELS))
        read = _row_0_inputs(ex, args, index, bad, got) if own is None and row_0 else None
        if read:
            whose = " and ".join(read)
            own = _Whole("Row 0 is right and later rows are partly wrong: row 0 is the one row where a load that "
                         "ignores the row does no harm. Every wrong element here is what the answer would be with "
                         f"row 0's {whose} in every row: a load without the row's offset reads row 0's input in "
                         "every row, and an element comes out right only where that input happens to match." + _fix(
                             " Give every load the row's offset: row * T for a (B, T) input, row for a (B,) one."))
        # the student's combine, right without flags (TWO_MAPS), on a reset in the run applied first
        plain, kept = SEEN.get("combine"), SEEN.get("combine_reset_first")
        if own is None and plain is not None and kept is not None and len(kept) >= 2 \
                and np.allclose(plain[:2], (0.125, 2.25)) and np.allclose(kept[:2], RESET_FIRST[0][:2]):
            own = _Whole("Your combine keeps the run applied first whole when its flag k1 is set: (a1, b1, k1) "
                         "with k1 set came out as it went in. A reset belongs to the run applied second: where k2 "
                         "is set, (a2, b2) alone; where only k1 is, the two compose as usual, with the flag "
                         "carried on (k1 | k2)." + _fix(" Select on k2: tl.where(k2, a2, a2 * a1) and tl.where(k2, b2, "
                                                        "b2 + a2 * b1)."))
        # any kernel's combine, seen applying the two maps in the wrong order (vtrace_kernel's, say)
        if own is None and ex.maps == "affine" and _combine_seen_swapped():
            own = _swapped_hint(resets=len(SEEN["combine"]) == 3)
        if own is None and bad.sum() > 1 and np.allclose(got[bad], -expected[bad], rtol=1e-5, atol=1e-5):
            own = _Whole("Every wrong element is the answer with its sign flipped: check the sign of the whole "
                         "expression (a loss, for one, is minus the objective it maximises).")
        hint = _hint(ex, bad_l, at_l, marks_l, got[at], expected[at], own)
        # beside a finite first error (an element never stored holds the buffer's bytes: not the student's NaN)
        nans = int((bad & ~np.isfinite(got) & np.isfinite(expected)
                    & (True if never is None else ~never)).sum())
        select = ("tl.where" if ex.kind in ("kernel", "hook") else  # (plain code: its own library's select)
                  "np.where" if any(isinstance(x, np.ndarray) for x in args) else "torch.where")
        nan_note = (f", {nans} of them NaN or inf where the answer is finite: something that a select ({select}) or "
                    "a mask should keep out got in") if nans and np.isfinite(got[at]) else ""
        show = (lambda x: str(bool(x)) if x in (0, 1) else _num(x)) if flags else _num  # noqa: E731
        told = (f"{where} {at} expected {show(expected[at])}, got {show(got[at])} ({int(bad.sum())} of {bad.size} "
                f"elements wrong{nan_note})" if bad.ndim else f"expected {_num(expected)}, {said} {_num(got)}"
                if ex.says_expected else f"{said} {_num(got)}, not the count expected")  # (one number)
        raise AssertionError(f"{ex.name}, {case}: {told}" + _inputs_there(ex, args, at, got.shape)
                             + (f"\n{hint}" if hint else ""))


@dataclass(frozen=True)
class _Unstored:
    """Under the interpreter, which elements of a kernel's returned tensor no store of the student's wrote."""
    mask: np.ndarray  # bool, in the tensor's shape
    rank: np.ndarray  # each element's place in the tensor's storage (its byte offset): the flat order


def _unstored_of(ex, got, launched):
    """_Unstored for the kernel's returned tensor (a tuple of them, or None, where it returns several), None
    where it is not known (compiled, not a kernel exercise, no launch of the student's received it)."""
    if not INTERPRET or ex.needs not in ("kernel", "scan", "autograd"):
        return None

    def one(value):
        if not isinstance(value, torch.Tensor) or value.numel() == 0:
            return None
        missing = _stores_missing(value, launched)
        return None if missing is None else _Unstored(missing, _element_offsets(value))
    if (ex.results or ex.needs == "autograd") and isinstance(got, (tuple, list)):
        return tuple(one(value) for value in got)
    return one(got)


UNSTORED_TAIL = ("From flat index {k} on (index {at}), nothing was stored: your kernel's tl.store calls wrote the "
                 "first {k} of the {n} elements of the tensor you returned{label} and none after them, so those hold "
                 "whatever the buffer held before the launch (torch.empty: anything), not your arithmetic. Does your "
                 "grid cover all {size} elements (a cdiv, not a floor division){rows}{loop}?")


def _unstored_tail(ex, unstored, index) -> str | None:
    """Where the elements never stored are a tail in flat order (the storage's: every element from one on, and
    none before it), a grid short of the tensor: the hint that says so, else None."""
    order = np.argsort(unstored.rank.ravel(), kind="stable")
    flat = unstored.mask.ravel()[order]
    k = int(np.argmax(flat))
    if k == 0 or not flat[k:].all():
        return None
    shape = unstored.mask.shape
    at = tuple(int(i) for i in np.unravel_index(order[k], shape))
    size = ("B·T = " if len(shape) == 2 else "N = " if len(shape) == 1 else "") + f"{flat.size:,}"
    td = ex.time_dim % len(shape) if shape else 0
    B = shape[1 - td] if len(shape) == 2 else 1
    return UNSTORED_TAIL.format(
        k=f"{k:,}", at=at, n=f"{flat.size:,}", size=size,
        label=f" ({ex.results[index]})" if ex.results and index is not None else "",
        # a tail from a row's first step: a grid of one program per row, one row short
        rows=f" or, one program per row, all B = {B} rows" if len(shape) == 2 and at[td] == 0 else "",
        # one row (or none): a loop over its chunks that stops short leaves a tail too
        loop=(", and, where a program loops over the chunks of its row, does the loop reach the last chunk"
              if ex.needs == "scan" and B == 1 else
              # (a round-56 review: a one-program answer whose passes had no loop was sent to the grid)
              ", or, one program walking the blocks, does every pass loop over all of them (for start in range(0, "
              "n, BLOCK))" if ex.walks_blocks else ""))


def _row_0_inputs(ex, args, index, bad, got) -> list[str] | None:
    """Where every wrong element is what the checker's reference gives with some of the case's inputs' rows all
    replaced by row 0's (a load without the row's offset): the names of those inputs, else None. The rows are
    those of the output's other axis than time; an input of the output's shape has them there, a 1-D input of
    B elements on its one axis."""
    if ex.recompute is None or got.ndim != 2:
        return None
    batch = 1 - ex.time_dim % 2
    B = got.shape[batch]
    names = re.match(r"\s*\w+\(([^)]*)\)", ex.task)
    names = [n.split("=")[0].strip() for n in names.group(1).split(",")] if names else []
    numpy_args = list(_as_numpy(tuple(args)))
    candidates = []  # (name, where in numpy_args: (i,) or (i, j), the axis of its rows)
    for i, x in enumerate(numpy_args):
        inner = [((i, j), y, f"{names[i] if i < len(names) else f'argument {i}'}[{j}]") for j, y in enumerate(x)] \
            if isinstance(x, tuple) else [((i,), x, names[i] if i < len(names) else f"argument {i}")]
        for where, y, name in inner:
            if isinstance(y, np.ndarray) and y.shape == got.shape:
                candidates.append((name, where, batch))
            elif isinstance(y, np.ndarray) and y.shape == (B,):
                candidates.append((name, where, 0))
    if not candidates or len(candidates) > 6:
        return None

    def with_row_0(chosen):
        new = [list(x) if isinstance(x, tuple) else x for x in numpy_args]
        for _, where, axis in chosen:
            x = numpy_args[where[0]] if len(where) == 1 else numpy_args[where[0]][where[1]]
            row = np.repeat(np.take(x, [0], axis=axis), x.shape[axis], axis=axis)
            if len(where) == 1:
                new[where[0]] = row
            else:
                new[where[0]][where[1]] = row
        return [tuple(x) if isinstance(x, list) else x for x in new]

    for size in range(1, len(candidates) + 1):
        for chosen in itertools.combinations(candidates, size):
            try:
                with np.errstate(all="ignore"):
                    alt = ex.recompute(*with_row_0(chosen))
                alt = np.asarray(alt[index] if isinstance(alt, tuple) else alt, dtype=np.float64)
            except Exception:  # (the keys' value on other inputs, a student's install: not known)
                return None
            if alt.shape == got.shape and np.isclose(got[bad], alt[bad], rtol=1e-5, atol=1e-5, equal_nan=True).all():
                return [name for name, _, _ in chosen]
    return None


def _inputs_there(ex, args, at, shape) -> str:
    """An elementwise hook's inputs at the wrong element, X[i] then P, for working it by hand."""
    xs = [x for x in args if isinstance(x, torch.Tensor)]
    if ex.kind != "hook" or ex.scan is not None or not shape or not xs or any(tuple(x.shape) != shape for x in xs):
        return ""
    ps = [_num(float(p)) for p in args if not isinstance(p, torch.Tensor)]
    return ("; the inputs there: " + ", ".join(f"X[{i}] = {_num(float(x[at]))}" for i, x in enumerate(xs))
            + (f", P = ({', '.join(ps)})" if ps else ""))


def _num(x) -> str:
    """A value as the message shows it: a count in full (6,815,744, not 6.81574e+06), else 6 digits."""
    return f"{int(x):,}" if np.isfinite(x) and x == int(x) and 1e4 <= abs(x) < 1e15 else f"{x:.6g}"


def _where(bad, scan, step="step"):
    """The wrong element to show: in a scan, the one an error starts from (the latest step of the
    first wrong row for a reverse scan, the earliest for a forward one): every step the scan
    reaches after it inherits the error, so the first wrong element by index may be far from it."""
    at = tuple(int(i) for i in np.argwhere(bad)[0])
    if scan is None or bad.ndim == 0:
        return at, "at index"
    steps = np.flatnonzero(bad[at[:-1]])
    at = at[:-1] + (int(steps[-1] if scan == "reverse" else steps[0]),)
    return at, f"the error starts at the {'latest' if scan == 'reverse' else 'earliest'} wrong {step}, index"


FIRST_STEP = "the first step (t = 0: the forward scan starts there, nothing before it is read)"
_ORDINARY = ("An ordinary step, and every step the scan reached before it is right: check what your code computes "
             "at that step (the terms it reads: which step's value, which discount, its pair (a_t, b_t)){combine}.")


_EVERYWHERE_IN_A_SCAN = (
    "Every element is wrong. Look first at what every step shares: {reads} (which element of which {what} "
    "each step reads), or the formula. Steps that an episode end cuts off from the rest are wrong "
    "too in that case, since no carry crosses an end. Otherwise the error is at the step where the scan starts, "
    "and the carry takes it to every step before.")


def _hint(ex, bad, at, marks, got, expected, own=None):
    """What is special about the step where the error starts, from the case's marks (each a bool
    array of the output's shape) and its position: where to look first. Each part is said only
    where it is true of that step and that output: the window's end only at the step a reverse
    scan starts from (t = 0 for a forward one), "every element" only for an output of several
    elements, the NaN hint only where the answer there is finite (and its unmasked-load part only
    for Triton code), the ordinary-step hint only for a scan, with a combine only where the
    student writes one. ``own``: the exercise's own hint (``_Exercise.hint``) where it is true: said
    after the step's marks, in place of the "every element" and ordinary-step hints (and of the NaN
    hint, where it speaks of a NaN itself)."""
    scan = ex.scan
    everywhere = bad.size > 1 and bad.all()
    # an error that stays at its step (ex.local) and is everywhere is in the formula, not at one step; a hint
    # that names what the whole answer is (_Whole) leaves the step's marks out: they would point elsewhere
    said = [] if (ex.local and everywhere) or isinstance(own, _Whole) else [
        f"{what}" for what, m in marks.items() if np.asarray(m)[at]]
    said = [what for what in said if AT_WINDOW_END.get(what) not in said]  # the window-end mark says it all
    start = bad.shape[-1] - 1 if scan == "reverse" else 0  # the step a scan starts from
    first = scan is not None and bad.ndim > 0 and at[-1] == start and not (ex.local and everywhere) \
        and not isinstance(own, _Whole)
    says_last = set(said) & {*AT_WINDOW_END.values(), _PADDING_IDENTITY, _MAX_PADDING}  # (it is the last step)
    positional = first and not says_last  # the step named for where it is alone: the scan starts there
    if positional:
        start_said = ex.window_end if scan == "reverse" else FIRST_STEP
        if everywhere and own is None:  # (every element wrong: the start's question would point at the start alone)
            start_said = re.sub(r"(\(t = [^:)]*)[:][^)]*\)", r"\1, where the scan starts)", start_said)
        said.insert(0, start_said)
    # one full stop at the end, a held-back fix (_fix) after the text's own
    # (an exercise's own diagnosis, where it has one, replaces the every-element preamble)
    reads, what = ("an index", "array") if ex.kind == "numpy" else ("a load's address or layout", "tensor")
    lead = (_EVERYWHERE_IN_A_SCAN.format(reads=reads, what=what) + f" The first wrong {ex.step} is "
            if positional and everywhere and own is None else f"that {ex.step} is ")
    if own and _FIXES.search(own):  # an exercise's own diagnosis holds its fix: the step's marks' fixes would compete
        said = [_FIXES.sub("", what) for what in said]
    hints = [lead + re.sub(r"\.(\x01[^\x02]*\x02)?$", r"\1", "; and ".join(said)) + "."] if said else []
    if own:
        hints.append(own)
    # (a whole answer says it; so does an exercise's own hint about a NaN)
    if not np.isfinite(got) and np.isfinite(expected) and not isinstance(own, _Whole) and "NaN" not in (own or ""):
        at_end = any(word in what for what in said for word in ("episode end", "termination", "resets"))
        if at_end and _resets_selected(ex):  # the scan selects at a reset: the NaN is in the step's own terms
            where = ("The scan (given) selects there, so the NaN comes from what your code computes at that step"
                     if ex.local else  # an epilogue's: the reset is the given prologue's, not the student's
                     "The scan selects where the step resets (" + ("a = 0 in linear_scan" if SCAN_RULES.strip()
                                                                    in ex.task else "your reset flag set") +
                     "), so the NaN comes from what that step computes itself (or its reset is missing)")
            hints.append("A NaN or inf where the answer is finite, at an episode end. " + where + ": most likely a "
                         "next value behind a termination was multiplied by zero (0 * NaN = NaN) or added without a "
                         "select. Select it away; do not multiply it by zero." + _fix(ex.select_fix or _SELECT_FIX))
        elif at_end:
            hints.append("A NaN or inf where the answer is finite, at an episode end: what lies behind it (a NaN "
                         "next value, a later episode) leaked in: a term that may be NaN there must be selected "
                         "away (tl.where, torch.where, np.where), not multiplied by zero (0 * NaN = NaN)."
                         + _fix(ex.select_fix or _SELECT_FIX))
        else:
            hints.append("A NaN or inf where the answer is finite: "
                         + ("an unmasked load past the end of a row, or " if ex.kind in ("kernel", "hook") else "")
                         + "a value multiplied by 0 that should have been selected away (0 * inf = NaN)."
                         + (_fix(ex.select_fix) if ex.select_fix else ""))
    inf_to_nan = bool(np.isnan(got) and np.isinf(expected)) and not isinstance(own, _Whole)
    if inf_to_nan:
        hints.append("The answer there is inf (an inf among the case's inputs reaches that step), and yours is NaN: "
                     "the inf met a 0 (0 * inf = NaN) or its own negative (inf - inf). Look for a value multiplied by "
                     "0 (0.0 * r, say) where it should pass as it is, or be selected away with "
                     + ("tl.where." if ex.kind in ("kernel", "hook") else "torch.where or np.where."))
    if own:  # the exercise's own hint says where to look: not the generic ones
        pass
    elif inf_to_nan:  # (that says where to look)
        pass
    elif everywhere and not said:
        hints.append("Every element is wrong: check the formula itself on the simplest case first.")
    elif scan is not None and bad.size > 1 and not said:
        hints.append(ex.ordinary or _ORDINARY.format(
            combine=" or, in your combine, the order in which it applies the two maps" if ex.needs == "scan" else ""))
    return "Hint: " + " ".join(hints) if hints else None


# The fix held back behind a NaN at an episode end (a round-61 review: the commonest slip showed no fix line)
_SELECT_FIX = (" Where a step ends an episode, choose instead of multiplying: where(flag, the value without the "
               "term, the value with it), e.g. where(term, r, r + gamma * v_next) (tl.where in Triton, torch.where or "
               "np.where in tensor code), never r + (1 - term) * gamma * v_next.")


def _swapped_results(got, expected, rtol, atol):
    """(i, j) where results i and j are each other's and right so (every other one already right), else None."""
    def same(g, e):
        try:
            g, e = np.asarray(_as_numpy(g), dtype=np.float64), np.asarray(e, dtype=np.float64)
            return g.shape == e.shape and np.allclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
        except (TypeError, ValueError):
            return False
    for i in range(len(expected)):
        for j in range(i + 1, len(expected)):
            if same(got[i], expected[j]) and same(got[j], expected[i]) and not same(got[i], expected[i]) and all(
                    same(got[k], expected[k]) for k in range(len(expected)) if k not in (i, j)):
                return i, j
    return None


class _Whole(str):
    """An exercise's own hint that says what the whole answer is (a known slip it equals everywhere)."""


def _resets_selected(ex) -> bool:
    """The student's steps go through linear_scan (a = 0 the reset) or scan_hook (the reset flag): both select."""
    return any(rule.strip() in ex.task for rule in (SCAN_RULES, RESET_RULE))


class _OutOfBounds(Exception):
    pass


SEEN = {"launches": 0, "atomics": 0, "widest_scan": 0, "scalar_loads": 0,  # under the interpreter, while a check runs
        "rows_scanned": False,  # per tiled call: a 2-D tl.associative_scan along axis 0 (_in_tiles)
        "not_associative": None,  # per call: None (no combine of the student's tried yet), "" or where it is not
        "combine": None,  # per call: what the student's first combine gives on TWO_MAPS (_on_two_maps)
        "combine_reset_first": None,  # per call: and on RESET_FIRST, where it takes flags
        "combine_max": None,  # per call: and on MAX_MAPS (discounted_max's maps, y -> max(c, g y))
        "combine_max_inf": None,  # per call: and on MAX_INF_MAPS (c1 = -inf meets g2 = 0: its guard, or a NaN)
        "combine_arity": "",  # per call: where the student's combine returns other than one value per block scanned
        "tallest_scan": 0,  # the most rows (elements across the axes not scanned) a tl.associative_scan took
        "past_leaks": 0.0}  # per call, compiled too: where a case's start past the window changed the values (_scan_with)


@dataclass(frozen=True, eq=False)
class _Launch:
    """One launch of a ``@triton.jit`` kernel while a student's function ran."""
    kernel: object  # the launched JITFunction (an InterpretedFunction under the interpreter)
    mine: bool  # the kernel is the student's own: defined outside rltriton_lite and the libraries
    hooks: tuple  # the student's @triton.jit functions passed to it (a harness's prologue, hook or epilogue)
    storages: frozenset  # the storage (its data_ptr) of every tensor passed to it
    phase: str  # "forward", or "backward" while the checker differentiates (returns_autograd)
    # (tensor, its _version at the launch) for every tensor passed to it: PyTorch's in-place writes bump a
    # tensor's _version (its views share the counter), a kernel's stores do not. Held until the case's checks
    # are done, so that no storage it names is freed and its address reused by another tensor meanwhile.
    tensors: tuple = ()
    # Under the interpreter, what its tl.store calls wrote: storage (data_ptr) -> [byte offsets into it]
    written: dict = dataclasses.field(default_factory=dict)
    call: tuple = ((), {})  # the launch's own (args, kwargs), grid included: to run it again (_replay)

    @property
    def theirs(self) -> bool:
        """It runs the student's Triton code: their kernel, or a harness with their function in it."""
        return self.mine or bool(self.hooks)


LAUNCHES: list = []  # the launches of the student's call that a check is watching (_run)
_RUNNING: list = []  # the launch whose kernel runs now (its stores are recorded in it, under the interpreter)
_PHASE = ["forward"]


def _the_student_s(obj) -> bool:
    """Defined by the student: not in rltriton_lite, Triton, torch or NumPy, nor in a file of the
    standard library or site-packages (a function's by its code's file; a module of theirs may
    share a name with the standard library's: their profile.py)."""
    module = getattr(obj, "__module__", None) or ""
    top = module.split(".")[0]
    if top in _LIBRARIES:
        return False
    code = getattr(obj, "__code__", None)
    if code is not None:
        filename = code.co_filename
    elif top not in sys.stdlib_module_names:
        return True  # a class or an object of theirs (a notebook's __main__ included)
    else:
        filename = getattr(sys.modules.get(module), "__file__", None)
        if not filename:
            return False  # built in
    return not (filename.startswith("<frozen") or os.path.realpath(filename).startswith(_LIBRARY_DIRS))


def _launch_of(kernel, args, kwargs) -> _Launch:
    fn = getattr(kernel, "fn", None)
    values = [*args, *kwargs.values()]
    tensors = list(_leaves(values))
    return _Launch(kernel, inspect.isfunction(fn) and _the_student_s(fn),
                   tuple(v for v in values if _is_jit(v) and _the_student_s(v.fn)),
                   frozenset(x.untyped_storage().data_ptr() for x in tensors), _PHASE[0],
                   tuple((x, _version(x)) for x in tensors), call=(tuple(args), dict(kwargs)))


def _version(x):
    """``x._version`` (None for an inference-mode tensor, which keeps no counter)."""
    try:
        return x._version
    except RuntimeError:
        return None


@contextlib.contextmanager
def _recording_launches():
    """Every launch of a ``@triton.jit`` kernel (``kernel[grid](...)``, an autotuner's too) while
    the block runs, appended to ``LAUNCHES``: ``JITFunction.run``, and the interpreter's
    ``InterpretedFunction.run``, are wrapped. Compiled or interpreted alike; the package's planned
    launches (``_triton.Launch``) take Triton's path meanwhile, as under a profiler's hook."""
    if not _triton.HAS_TRITON:
        yield
        return
    classes = [_triton.triton.runtime.jit.JITFunction]
    try:
        from triton.runtime.interpreter import InterpretedFunction
        classes.append(InterpretedFunction)
    except ImportError:  # pragma: no cover - a Triton without an interpreter
        pass
    saved = [(c, c.__dict__["run"]) for c in classes if "run" in c.__dict__]
    hooks_installed = _triton._hooks_installed

    def recording(run):
        def run_recorded(self, *args, **kwargs):
            if kwargs.get("warmup", False):
                return run(self, *args, **kwargs)
            launch = _launch_of(self, args, kwargs)
            LAUNCHES.append(launch)
            _RUNNING.append(launch)
            try:
                return run(self, *args, **kwargs)
            finally:
                _RUNNING.pop()
        return run_recorded

    for c, run in saved:
        setattr(c, "run", recording(run))
    _triton._hooks_installed = lambda: True  # as for a profiler: the package's launches go through run too
    try:
        yield
    finally:
        for c, run in saved:
            setattr(c, "run", run)
        _triton._hooks_installed = hooks_installed


@contextlib.contextmanager
def _applying_functions(watch: bool):
    """The ``torch.autograd.Function`` subclasses of the student's whose ``apply`` runs while the
    block runs (``watch`` False: none looked for)."""
    applied = []
    if not watch:
        yield applied
        return
    Function = torch.autograd.Function
    saved = Function.__dict__["apply"]

    def apply(cls, *args, **kwargs):
        if _the_student_s(cls):
            applied.append(cls)
        return saved.__func__(cls, *args, **kwargs)

    Function.apply = classmethod(apply)
    try:
        yield applied
    finally:
        Function.apply = saved


@contextlib.contextmanager
def _watch():
    """The launches recorded (``_recording_launches``), and under the interpreter its watch
    (``_interpreting``)."""
    with _recording_launches(), _interpreting():
        yield


@contextlib.contextmanager
def _interpreting(poison_scans=False):
    """Under the Triton interpreter: every load and store a kernel makes must fall inside a tensor
    passed to its launch, checked before the access (a stray store would corrupt the Python
    process's heap and kill the notebook's kernel, where on a GPU it would read garbage or fault);
    the launches and atomic operations are counted in ``SEEN``, and the widest
    ``tl.associative_scan`` (its length along the scanned axis) is kept there; what each
    ``tl.store`` (and atomic read-modify-write) writes is recorded in the running launch's
    ``written`` (a storage's byte offsets). ``poison_scans``: every float a ``tl.associative_scan``
    returns is 0.375 (``_scan_reaches_the_output``). Compiled on a GPU: nothing."""
    try:
        from triton.runtime import interpreter as ti
        executor, builder, scans = ti.GridExecutor, type(ti.interpreter_builder), ti.ScanOps
        saved = {(executor, "_init_args_hst"): executor._init_args_hst, (scans, "apply"): scans.apply,
                 **{(builder, k): getattr(builder, k) for k in ("create_masked_load", "create_masked_store",
                                                                "create_atomic_rmw", "create_atomic_cas")}}
        np_dtype = ti._get_np_dtype
    except (ImportError, AttributeError):  # compiled, or an interpreter of another shape
        yield
        return
    spans = []

    def init_args(self, args, kwargs):
        args_hst, kwargs_hst = saved[executor, "_init_args_hst"](self, args, kwargs)
        spans.clear()
        SEEN["launches"] += 1
        # (the host copies' spans, each with the storage of the tensor passed: the same one on the CPU)
        hst, dev = list(_leaves((args_hst, kwargs_hst))), list(_leaves((args, kwargs)))
        for x, dev in zip(hst, dev if len(dev) == len(hst) else hst):
            start = x.untyped_storage().data_ptr()
            spans.append((start, start + x.untyped_storage().nbytes(), dev.untyped_storage().data_ptr()))
        return args_hst, kwargs_hst

    def inside(ptrs, mask, what):
        active = np.broadcast_to(mask.data, ptrs.data.shape).astype(bool)
        p = ptrs.data[active].astype(np.uint64)
        size = np.dtype(np_dtype(ptrs.get_element_ty())).itemsize
        ok = np.zeros(p.shape, dtype=bool)
        for lo, hi, _ in spans:
            ok |= (p >= lo) & (p + size <= hi)
        if not ok.all():
            stray = p[~ok]
            def gap(x, below):  # bytes up to the nearest tensor start above x, or down to the nearest end below it
                return min((lo - x if below else x - hi for lo, hi, _ in spans
                            if (lo - 64 <= x < lo if below else hi <= x < hi + 64)), default=math.inf)

            # just below a tensor's start, and nearer to it than to another's end (two small tensors may lie a few
            # bytes apart: lanes past the first one's end are then also just below the second's start)
            before = all(gap(int(x), True) < gap(int(x), False) for x in stray)
            lanes = np.argwhere(active)[~ok]  # the stray lanes' indices in the block
            shown = ", ".join(str(tuple(x)) if len(x) > 1 else str(x[0]) for x in lanes[:3].tolist())
            # the block's last active lane alone, just past a tensor (several lanes past it: an unmasked load, a
            # round-56 review's case, not a shift)
            just_past = not ok[-1] and stray.size == 1 and any(hi <= int(stray[0]) < hi + 64 for _, hi, _ in spans)
            past_b = _rows_past_b(ptrs.data, active, lanes, spans)
            where = ("rows past the last through: here the stray lanes lie in the tile's row" + (
                     f"s {past_b} to {active.shape[0] - 1}" if past_b < active.shape[0] - 1 else f" {past_b}")
                     + ", rows at or past B, past the tensor's last row (not a row's last step read one on)"
                     + _fix(": mask the rows too, rows < B: m = (rows < B)[:, None] & (t < T)[None, :]")
                     if past_b is not None and not before else
                     "lanes before the start of a tensor through (a load shifted back, offs - 1 at t = 0"
                     + _fix(": mask it with t >= 1") + ")" if before else
                     "lanes past the end of the row (or rows past the last) through; here the block's last active "
                     "lane read just past the end of a tensor (a load shifted on, offs + 1 at the last row's last "
                     "step, t = T - 1" + _fix(": mask it with t + 1 < T") + ")" if just_past else
                     "lanes past the end of the row (or rows past the last) through")
            raise _OutOfBounds(
                f"a tl.{what}{_their_line()} touched memory outside every tensor passed to the kernel "
                f"({int((~ok).sum())} of {ok.size} active lanes; lane{'s' if len(lanes) > 1 else ''} {shown}"
                f"{', ...' if len(lanes) > 3 else ''} of the block): a tl.{what} without mask=, or with a mask that "
                f"lets {where}, or an address built with the wrong row start (row * T in a contiguous (B, T) tensor) "
                f"or another tensor's strides. (Stopped before the access: on a "
                "GPU it would read garbage or fault.)")
        return p

    def wrote(p):
        if _RUNNING:
            written = _RUNNING[-1].written
            for lo, hi, storage in spans:
                here = p[(p >= lo) & (p < hi)]
                if here.size:
                    written.setdefault(storage, []).append(here - np.uint64(lo))

    def load(self, ptrs, mask, *rest):
        inside(ptrs, mask, "load")
        SEEN["scalar_loads"] += ptrs.data.size == 1  # (one element: a loop over the steps, in the chunked ones)
        return saved[builder, "create_masked_load"](self, ptrs, mask, *rest)

    def store(self, ptrs, value, mask, *rest):
        wrote(inside(ptrs, mask, "store"))
        return saved[builder, "create_masked_store"](self, ptrs, value, mask, *rest)

    def atomic(key):
        def counted(self, *args, **kwargs):
            SEEN["atomics"] += 1
            if key == "create_atomic_rmw" and len(args) >= 4:  # (op, ptr, val, mask, ...): a write too
                ptr, mask = args[1], args[3]
                wrote(ptr.data[np.broadcast_to(mask.data, ptr.data.shape).astype(bool)].astype(np.uint64))
            return saved[builder, key](self, *args, **kwargs)
        return counted

    def scan(self, input):
        first = input[0] if isinstance(input, tuple) else input
        SEEN["widest_scan"] = max(SEEN["widest_scan"], int(np.shape(first.handle.data)[self.axis]))
        SEEN["tallest_scan"] = max(SEEN["tallest_scan"], int(np.size(first.handle.data)
                                                               // max(1, np.shape(first.handle.data)[self.axis])))
        SEEN["rows_scanned"] |= np.ndim(first.handle.data) == 2 and self.axis == 0  # a tile's rows, not its steps
        result = saved[scans, "apply"](self, input)
        if SEEN["not_associative"] is None and _the_student_s(getattr(self.combine_fn, "fn", self.combine_fn)):
            SEEN["not_associative"] = _associativity(self, input, result)
            SEEN["combine"] = _on_two_maps(self, input)
            SEEN["combine_reset_first"] = _on_two_maps(self, input, RESET_FIRST) if len(input) == 3 else None
            SEEN["combine_max"] = _on_two_maps(self, input, MAX_MAPS)
            SEEN["combine_max_inf"] = _on_two_maps(self, input, MAX_INF_MAPS)
            if SEEN["combine"] is not None and len(SEEN["combine"]) != len(input):
                SEEN["combine_arity"] = (
                    f"your combine returns {len(SEEN['combine'])} value(s) for a scan of {len(input)} blocks. "
                    f"tl.associative_scan calls it with {2 * len(input)} values, the first element's {len(input)} "
                    "then the second's, and takes back one value per block scanned, in the same order (a flag "
                    "block too).")
        if poison_scans:
            for r in result if isinstance(result, tuple) else (result,):
                if np.issubdtype(r.handle.data.dtype, np.floating):  # a finite value: 0 * x or x - x hides no NaN
                    r.handle.data = np.full_like(r.handle.data, 0.375)
        return result

    patches = {(executor, "_init_args_hst"): init_args, (scans, "apply"): scan, (builder, "create_masked_load"): load,
               (builder, "create_masked_store"): store, (builder, "create_atomic_rmw"): atomic("create_atomic_rmw"),
               (builder, "create_atomic_cas"): atomic("create_atomic_cas")}
    for (owner, key), fn in patches.items():
        setattr(owner, key, fn)
    try:
        yield
    finally:
        for (owner, key), fn in saved.items():
            setattr(owner, key, fn)


def _rows_past_b(addresses, active, lanes, spans) -> int | None:
    """In a 2-D tile of a load or store (``addresses``: its lanes' byte addresses, ``active``: the lanes
    its mask lets through, ``lanes``: the indices of those outside every tensor, ``spans``: the tensors'),
    where every stray lane lies in a row at or past the last row of the tensor that the tile's lane
    (0, 0) reads (rows at or past B, the row mask forgotten: a round-50 review's case, told as a load
    shifted on at the last row's last step): the tile's first such row, else None. A row's start is
    read from the tile's own addresses: lane (1, 0) one row on from lane (0, 0)."""
    if addresses.ndim != 2 or addresses.shape[0] < 2 or not len(lanes) or not active[0, 0]:
        return None
    first, stride = int(addresses[0, 0]), int(addresses[1, 0]) - int(addresses[0, 0])
    step = int(addresses[0, 1]) - int(addresses[0, 0]) if addresses.shape[1] > 1 else 0
    inside = [(lo, hi) for lo, hi, _ in spans if lo <= first < hi]
    if not 0 <= step < stride or not inside:  # (axis 0 the rows: a tile's steps run along axis 1)
        return None
    lo, hi = inside[0]
    n_rows, row = (hi - lo) // stride, (first - lo) // stride  # the tensor's rows; lane (0, 0)'s
    past = lanes[:, 0] + row >= n_rows
    return int(lanes[:, 0].min()) if past.all() else None


@contextlib.contextmanager
def _nan_wins():
    """Under the interpreter, tl.maximum and tl.minimum with their default, propagate_nan=NONE, return NaN
    where an operand is NaN, as propagate_nan=ALL does (np.maximum, not np.fmax): Triton does not promise the
    default's NaN handling, so an answer must not lean on it to drop a NaN (0 * -inf). Compiled: nothing
    (a GPU's default max drops the NaN, and no run there can show what the answer leans on)."""
    try:
        from triton.runtime import interpreter as ti
        builder = type(ti.interpreter_builder)
        saved = {k: getattr(builder, k) for k in ("create_maxnumf", "create_minnumf")}
    except (ImportError, AttributeError):  # compiled, or an interpreter of another shape
        yield
        return
    builder.create_maxnumf = lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.maximum)
    builder.create_minnumf = lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.minimum)
    try:
        yield
    finally:
        for k, fn in saved.items():
            setattr(builder, k, fn)


def _nan_winning(run):
    """``run`` with a NaN winning every max and min of the student's code (``_nan_wins``)."""
    def nan_winning(fn, args, kw):
        with _nan_wins():
            return run(fn, args, kw)
    return nan_winning


def _associativity(op, input, result=()) -> str:
    """Where the student's combine, as a ``tl.associative_scan`` (``op``, the interpreter's) applies it, is not
    associative on the scan's own elements: three random orders of them, p, q and s, both groupings compared
    ("" where they agree). A scan's tree (a GPU's; the interpreter's too, as the package runs it) groups the
    steps one way; this names the combine as the bug whatever values that grouping gives."""
    arrays = [np.asarray(x.handle.data).reshape(-1) for x in input]
    n = arrays[0].size
    # the real steps: padding lanes are all one tuple (the identity), left out where the commonest repeats
    _, kind, count = np.unique(np.stack([a.astype(np.float64) for a in arrays], 1), axis=0, return_inverse=True,
                               return_counts=True)
    real = np.flatnonzero(kind.reshape(-1) != count.argmax()) if count.max() > 1 else np.arange(n)
    if real.size == 0:
        return ""
    pool = [a[real] for a in arrays]
    if len(result) == len(input):  # and the scan's composed runs at those steps: runs meet runs
        pool = [np.concatenate((a, np.asarray(x.handle.data).reshape(-1)[real])) for a, x in zip(pool, result)]
    finite = np.all([np.isfinite(a.astype(np.float64)) for a in pool], axis=0)
    if finite.any():  # a NaN shown in p, q or s only distracts (the comparison skips NaN anyway)
        pool = [a[finite] for a in pool]
    rng = np.random.default_rng(0)
    p, q, s = ([op.to_tensor(a[order], x.dtype) for a, x in zip(pool, input)]
               for order in (rng.integers(0, pool[0].size, n) for _ in range(3)))

    def combine(x, y):
        out = op.combine_fn.fn(*x, *y)
        return out if isinstance(out, tuple) else (out,)

    def values(v):
        return np.asarray(v.handle.data if hasattr(v, "handle") else v, dtype=np.float64).reshape(-1)

    with np.errstate(all="ignore"):
        try:
            left, right = combine(combine(p, q), s), combine(p, combine(q, s))
        except Exception:  # a combine that runs on one element, not on blocks: the compile check says why
            return ""
        for i, (one, other) in enumerate(zip(left, right)):
            one, other = np.broadcast_arrays(values(one), values(other))
            bad = ~np.isclose(one, other, rtol=1e-4, atol=1e-4 * max(1.0, float(np.nanmax(np.abs(
                np.where(np.isfinite(one), one, 0.0)), initial=0.0)))) & ~(np.isnan(one) | np.isnan(other))
            if bad.any():
                j = int(np.argmax(bad))
                shown = lambda x: "(" + ", ".join(f"{values(v)[j]:.4g}" for v in x) + ")"  # noqa: E731
                return (f"result {i} of (p ⊕ q) ⊕ s is {one[j]:.6g}, of p ⊕ (q ⊕ s) {other[j]:.6g}, "
                        f"for p = {shown(p)}, q = {shown(q)}, s = {shown(s)} (⊕: your combine, its first "
                        "argument applied first)")
    return ""


def _reset_dropped() -> str:
    """Where the student's combine, on a reset in the run applied first (RESET_FIRST), turned its flag off,
    or let that reset cut the run (a select on k1, not k2: a combine that composes the a's of two runs
    without a reset, where one that keeps a2 alone is wrong without any reset)."""
    kept, plain = SEEN.get("combine_reset_first"), SEEN.get("combine")
    composes = plain is not None and np.isclose(plain[0], TWO_MAPS[0][0] * TWO_MAPS[1][0])  # a2 * a1 without a reset
    if kept is not None and len(kept) == 3 and np.allclose(kept[:2], RESET_FIRST[1][:2]) and composes:
        return (" The likely cause is a select on k1: the run (0.5, 1, True), then the run (0.25, 2, "
                "False), came out as the second run alone. A reset cuts what lies behind the step that holds it, so "
                "the select is on k2, the flag of the run applied second: the first run's reset was already applied "
                "inside it." + _fix(
                    " Select on k2: where it is set, the run applied second ignores the first."))
    if kept is None or len(kept) != 3 or kept[2]:
        return ""
    return (" Its flag part turned a reset off: the run (0.5, 1, True), then the run (0.25, 2, False), came out "
            "with its flag False, but a run that contains a reset is a reset, whichever of its two parts holds it.")


TWO_MAPS = ((0.5, 1.0, False), (0.25, 2.0, False))  # p then q, (a, b[, reset]): p ⊕ q = (0.125, 2.25), q ⊕ p = (0.125, 2.0)
RESET_FIRST = ((0.5, 1.0, True), (0.25, 2.0, False))  # a reset in p, applied first: p ⊕ q = (0.125, 2.25, True)
# p then q as max-maps y -> max(c, g y), (g, c[, reset]): p ⊕ q = (0.125, max(3, 0.25 * 1) = 3), the maps swapped
# (q applied first) c = max(1, 0.5 * 3) = 1.5, unlike c1 alone or max(c1, g2 c2) (both 1)
MAX_MAPS = ((0.5, 1.0, False), (0.25, 3.0, False))
# c1 = -inf (the identity's c: a padding lane, or a run of them) met by an underflowed g2 = 0: a guarded combine gives
# c = 3 (c2), one that leaves 0 * (-inf) to the max gives NaN (the interpreter's max lets it win, _nan_wins)
MAX_INF_MAPS = ((1.0, float("-inf"), False), (0.0, 3.0, False))


def _on_two_maps(op, input, maps=TWO_MAPS):
    """The student's combine, as the interpreter's scan ``op`` applies it (inside the scan: a @triton.jit
    function runs only there), on ``maps`` cut to the scan's arity: a tuple of floats, or None."""
    if len(input) not in (2, 3):
        return None
    kinds = [(x.dtype, np.asarray(x.handle.data).dtype) for x in input]
    p, q = (m[:len(input)] for m in maps)
    try:
        args = [op.to_tensor(np.asarray([v]).astype(np_type), dtype) for v, (dtype, np_type) in zip(p + q, kinds * 2)]
        with np.errstate(all="ignore"):
            out = op.combine_fn.fn(*args)
        return tuple(float(np.asarray(v.handle.data if hasattr(v, "handle") else v).reshape(-1)[0])
                     for v in (out if isinstance(out, tuple) else (out,)))
    except Exception:  # a combine that runs on one element only, or of another shape: the other checks say
        return None


def _leaves(x):
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (tuple, list)):
        for y in x:
            yield from _leaves(y)
    elif isinstance(x, dict):
        for y in x.values():
            yield from _leaves(y)


def _chain(e):
    """``e`` and the exceptions it was raised from."""
    while e is not None:
        yield e
        e = e.__cause__ or e.__context__


def _raised_from(e):
    """The innermost of Triton's compile errors in ``e``'s chain, the one at the student's line
    (compiled, each call wraps its callee's), else ``e``."""
    return ([x for x in _chain(e) if type(x).__name__ == "CompilationError"] or [e])[-1]


def _cause(e, kind):
    """The exception of ``kind`` in ``e``'s chain (the interpreter wraps what a kernel raises)."""
    return next((x for x in _chain(e) if isinstance(x, kind)), None)


def _describe(x) -> str:
    if x is None:
        return "None"
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of {len(x)}"
    name = type(x).__name__
    return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"


# ---- Write it yourself: the package's answers, refused while a student's function runs --------------
class _PackageAnswer(AssertionError):
    """Raised where a student's code called one of the package's answers during a check."""


def _is_jit(obj) -> bool:
    """A ``@triton.jit`` function, compiled or interpreted (it keeps its Python function as ``.fn``)."""
    return (_triton.HAS_TRITON and isinstance(obj, _triton.triton.runtime.jit.KernelInterface)
            and inspect.isfunction(getattr(obj, "fn", None)))


def _package_modules():
    return [(n, m) for n, m in list(sys.modules.items())
            if m is not None and (n == "rltriton_lite" or n.startswith("rltriton_lite."))]


def _code_names(code) -> set:
    """Every global and attribute name a code object reads, nested functions' included."""
    names = set(code.co_names)
    for c in code.co_consts:
        if inspect.iscode(c):
            names |= _code_names(c)
    return names


def _names_used(mod) -> set:
    """The names the module's own functions, classes and kernels read: the package's code reaches
    these through the module's attributes, so they stay as they are while a check runs."""
    names, todo, seen = set(), list(vars(mod).values()), set()
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        obj = obj.fn if _is_jit(obj) else getattr(obj, "__func__", obj)
        if isinstance(obj, property):
            todo += [obj.fget, obj.fset, obj.fdel]
        elif inspect.isfunction(obj) and obj.__module__ == mod.__name__:
            names |= _code_names(obj.__code__)
            todo.append(getattr(obj, "__wrapped__", None))
        elif inspect.isclass(obj) and obj.__module__ == mod.__name__:
            todo += list(vars(obj).values())
    return names


_ACTIVE: list = []  # (exercise, the refused calls' list) while a student's function runs (_refusing)
_REFUSERS: dict = {}  # id of each stand-in for a refused function -> its name (_refusing)
_CHECKER_ONLY: dict = {}  # id -> the checker's own functions that compute expected values (_checker_only)
_INTEGRATIONS = ("cleanrl", "openrlhf", "verl")  # the drop-ins that need no other library: imported to be refused


def _checker_only(fn, module=__name__):
    """``fn`` (the checker's own: ``cases``, a case builder, a ``_*_reference`` helper, the keys),
    refusing to run while a student's function runs, however the student's code reached it."""
    shown = f"{module}.{fn.__name__}"

    def guarded(*args, **kwargs):
        if _ACTIVE:
            ex, refused = _ACTIVE[-1]
            refused.append(shown)
            raise _PackageAnswer(_refusal(ex, f"{shown} is", shown))
        return fn(*args, **kwargs)

    guarded.__name__, guarded.__qualname__, guarded.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    guarded.__signature__ = inspect.signature(fn)
    _CHECKER_ONLY[id(guarded)] = (guarded, shown)
    return guarded


cases, _cases = _checker_only(cases), _checker_only(_cases)


# ---- The teacher's keys -----------------------------------------------------------------------------
# Where the package holds no exercise's answer elsewhere, its reference lives beside the solutions, out of
# the students' wheel (notebooks/solutions/_keys.py). A student's install has only its values on the fixed
# cases (_keys.npz), recorded from it: the fixed cases check there, the cases of a seed need the keys.
_KEYS_FILE = Path(__file__).resolve().parent.parent / "notebooks" / "solutions" / "_keys.py"
_RECORDED_KEYS = Path(__file__).with_name("_keys.npz")
_RECORDING: dict | None = None  # the values _key computed, by digest, while _record_keys runs
_KEYS_OFF = False  # set by _use_recorded: the keys are never loaded, their recorded values stand in


class _NoKey(LookupError):
    """A value of the teacher's keys that this install does not hold."""


@functools.cache
def _keys():
    """The teacher's keys (notebooks/solutions/_keys.py beside the package: a run from the
    repository), or None (a student's install: the wheel; or a graded notebook's process,
    ``_use_recorded``)."""
    if _KEYS_OFF or not _KEYS_FILE.is_file():
        return None
    spec = importlib.util.spec_from_file_location("rltriton_lite_keys", _KEYS_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, fn in list(vars(module).items()):
        if inspect.isfunction(fn) and fn.__module__ == module.__name__:
            setattr(module, name, _checker_only(fn, module.__name__))
    return module


@_checker_only
def _digest(name, args, kwargs) -> str:
    """One name for a call of the keys: the function, its arrays' dtypes, shapes and bytes, the rest's reprs."""
    h = hashlib.sha256(name.encode())
    for x in (*args, *sorted(kwargs.items())):
        x = x.item() if isinstance(x, np.generic) else x  # (a NumPy scalar's repr differs across versions)
        if isinstance(x, np.ndarray):
            h.update(f"{x.dtype.str}{x.shape}".encode() + np.ascontiguousarray(x).tobytes())
        else:
            h.update(repr(x).encode())
        h.update(b"|")
    return h.hexdigest()[:32]


def _recorded_values():
    """The function that returns the keys' values on the fixed cases, by digest (_keys.npz: an array, a
    tuple of arrays, or a number), read once; and, in a graded notebook's process, on the seed's
    (``_use_recorded``). The table lives in its closure, not in the module."""
    table: dict = {}

    def _recorded() -> dict:
        if not table:
            table.update(_load_recorded(_RECORDED_KEYS))
        return table
    return _recorded


# the expected values, and the digests that look them up: not for a student's function while it runs
_recorded = _checker_only(_recorded_values())


def _load_recorded(path) -> dict:
    """A file of recorded values (``_record_keys``'s): {digest: value}, its ``seed`` entry left out."""
    out: dict = {}
    with np.load(path) as table:
        files = [k for k in table.files if k != "seed"]
        for k in sorted(files, key=lambda k: (k.partition(".")[0], int(k.partition(".")[2] or 0))):
            digest, _, part = k.partition(".")  # "digest.i": part i of a tuple, in order
            v = table[k]  # (read once: each access decompresses)
            v = v.item() if v.ndim == 0 else v
            out[digest] = out.get(digest, ()) + (v,) if part else v
    return out


def _recorded_seed(path) -> int | None:
    """The seed a file of recorded values was drawn from (None: the fixed cases)."""
    with np.load(path) as table:
        return int(table["seed"]) if "seed" in table.files else None


def _use_recorded(values=None):
    """From now on the teacher's keys are never loaded: their values come from ``_keys.npz`` and
    ``values`` (``_load_recorded`` of a file ``_record_keys`` wrote for a seed), as in a student's
    install. The grader calls it in a graded notebook's process, which so never holds a reference,
    and adds the seed's values only after the notebook's cells have run (tools/grade.py)."""
    global _KEYS_OFF
    _KEYS_OFF = True
    _keys.cache_clear()
    _recorded().update(values or {})


@_checker_only
def _key(name, *args, **kwargs):
    """The teacher's reference ``name`` on these arguments, or without the keys its recorded value
    (the fixed cases and their hints'), else ``_NoKey``."""
    keys = _keys()
    if keys is None:
        try:
            return _recorded()[_digest(name, args, kwargs)]
        except KeyError:
            raise _NoKey(name) from None
    value = getattr(keys, name)(*args, **kwargs)
    if _RECORDING is not None:
        _RECORDING[_digest(name, args, kwargs)] = value
    return value


def _record_keys(path=_RECORDED_KEYS, seed=None, only=None) -> dict:
    """Record the keys' values on every case (the fixed ones, or with ``seed`` those drawn from it;
    ``only``: these exercises' alone), on the calls its hints make there and on the replay's second
    draw, into ``path`` (``_keys.npz`` by default; None: only return them): ``{digest: value}``."""
    global _RECORDING
    if _keys() is None:
        raise RuntimeError(f"recording the keys needs them: {_KEYS_FILE} is not there")
    _RECORDING = {}
    try:
        for name in names():
            before = len(_RECORDING)
            drawn = cases(name, seed) if only is None or name in only else []
            ex = _get(name)
            if len(_RECORDING) == before:
                continue
            for case, args, _, expected, *_ in drawn:
                if ex.hint is not None:  # a hint that tries slips computes each of them
                    for i, e in enumerate(expected if ex.results else (expected,)):
                        e = np.asarray(e)
                        ex.hint(args, i if ex.results else None, np.zeros(e.shape, bool), e, e)
                if ex.recompute is not None:  # the replay's reference, on the inputs it draws again
                    again = _cloned(args)
                    inputs = [x for x in _leaves(again) if x.dtype.is_floating_point and x.numel()]
                    for x, new in zip(inputs, _second_draws(ex, case, inputs)):
                        x.copy_(new)
                    with np.errstate(all="ignore"):
                        ex.recompute(*_as_numpy(tuple(again)))
        recorded = dict(_RECORDING)
    finally:
        _RECORDING = None
    if path is not None:
        flat = {} if seed is None else {"seed": np.asarray(seed)}
        for digest, v in recorded.items():
            if isinstance(v, tuple):
                flat.update({f"{digest}.{i}": np.asarray(x) for i, x in enumerate(v)})
            else:
                flat[digest] = np.asarray(v)
        np.savez_compressed(path, **flat)
        _recorded().clear()  # (read again at its next use)
    return recorded


def _answers():
    """The package's answers, ``{id: (object, name shown)}``: rltriton_lite's compute functions and
    every package module's public functions, every function of rltriton_lite.reference and
    rltriton_lite._torch_path, the integrations' drop-ins (functions and classes), the package's
    prologues and epilogues, the exercises' scan_hook and map_hook, and the checker's own
    functions that compute expected values; and ``[(module, attribute, object)]``, the module
    attributes a student's code reaches them through (a ``@triton.jit`` one but where the package's
    own code reads that name: its kernels look it up there). Recomputed when the package's loaded
    modules change (an integration imported)."""
    if not _ANSWERS:
        import importlib

        for name in _INTEGRATIONS:
            with contextlib.suppress(ImportError):
                importlib.import_module(f"rltriton_lite.integrations.{name}")
    if _ANSWERS.get("modules") != (len(sys.modules), len(_CHECKER_ONLY)):  # (a module imported since, the keys)
        key = (tuple(sorted(n for n, _ in _package_modules())), len(_CHECKER_ONLY))
        if _ANSWERS.get("key") != key:
            _ANSWERS.update(key=key, answers=_find_answers())
        _ANSWERS["modules"] = (len(sys.modules), len(_CHECKER_ONLY))
    return _ANSWERS["answers"]


_ANSWERS: dict = {}  # "key": the package's modules loaded, "answers": what _find_answers found for them


def _find_answers():
    import rltriton_lite as rl

    found = {}

    def add(obj, shown):
        found.setdefault(id(obj), (obj, shown))
        inner = inspect.unwrap(obj) if inspect.isfunction(obj) else obj  # (rl.gae.__wrapped__: the same answer)
        if inner is not obj:
            found.setdefault(id(inner), (inner, shown))

    for n in rl.__all__:
        if inspect.isfunction(getattr(rl, n)):
            add(getattr(rl, n), f"rltriton_lite.{n}")
    modules = _package_modules()
    for mname, mod in modules:
        public = getattr(mod, "__all__", ())
        if mname == __name__:
            continue
        for n, obj in vars(mod).items():
            if getattr(obj, "__module__", None) != mname:
                continue
            if mname.startswith("rltriton_lite.integrations.") and n in public and (
                    inspect.isfunction(obj) or inspect.isclass(obj)):
                add(obj, f"{mname}.{n}")  # a drop-in: the package's answer under another library's names
            elif inspect.isfunction(obj) and (n in public or (mod in (reference, _torch_path) and n[:1] != "_")):
                add(obj, f"{mname}.{n}")
    for mname, mod in modules:
        for n, obj in vars(mod).items():
            if (mname != __name__ and _is_jit(obj) and obj.fn.__module__ == mname
                    and n.endswith(("_prologue", "_epilogue"))):
                add(obj, f"{mname}.{n}")
    add(scan_hook, f"{__name__}.scan_hook")
    add(map_hook, f"{__name__}.map_hook")
    profile = sys.modules.get("rltriton_lite.profile")  # its byte counts answer vtrace_floor_bytes
    for n in ("op", "ops") if profile is not None else ():
        add(getattr(profile, n), f"rltriton_lite.profile.{n}")
    for i, (obj, shown) in _CHECKER_ONLY.items():
        add(obj, shown)
    holders = []
    for mname, mod in modules:
        used = set() if mod is reference else _names_used(mod)
        holders += [(mod, n, obj) for n, obj in vars(mod).items()
                    if id(obj) in found and id(obj) not in _CHECKER_ONLY and (not _is_jit(obj) or n not in used)]
    return found, holders


def _allowed(ex) -> set:
    """The ids of the package's functions that the exercise's task lets the student call."""
    found, _ = _answers()
    wanted = {f"rltriton_lite.{n}" for n in ex.may_use} | {f"{__name__}.{n}" for n in ex.may_use}
    return {i for i, (_, shown) in found.items() if shown in wanted}


def _refusal(ex, what: str, shown: str = "") -> str:
    if any(shown == s for _, s in _CHECKER_ONLY.values()):
        return (f"write it yourself: {what} the checker's own (it computes the expected values, and refuses to "
                "while your function runs)")
    # section 5's cleanrl_gae (a round-50 review: "the package's answer" read as if it were not CleanRL's loop)
    if ex.name == "lean_gae_loop" and shown == f"{__package__}.integrations.cleanrl.loop":
        return (f"{what} CleanRL's own loop (section 5's cleanrl_gae, as ppo.py has it), at about 15 tensor ops "
                "per step. The task asks for your version of that loop with at most 6 ops per step: what does not "
                "depend on the carry computed for every step before the loop, the recurrence alone in it.")
    found, _ = _answers()
    # each name once: a decorated answer and the function it wraps are found under one name (linear_scan)
    may = list(dict.fromkeys(shown for i, (_, shown) in found.items() if i in _allowed(ex)))
    return (f"write it yourself: {what} the package's answer " + (
        f"(of the package's functions, {ex.name} may call only {' and '.join(may)}, as its task says)" if may else
        f"({ex.name}'s task is to write it without the package's functions)"))


def _called_by_the_package() -> bool:
    """Whether the Python code that called the function calling this one (the libraries' frames
    passed over: torch's, functools', ...) is the package's own."""
    f = sys._getframe(2)
    while f is not None:
        top = (f.f_globals.get("__name__") or "").split(".")[0]
        if top == "rltriton_lite":
            return True
        if top not in _LIBRARIES and top not in sys.stdlib_module_names:
            return False
        f = f.f_back
    return False


@contextlib.contextmanager
def _refusing(ex):
    """While the block runs, each package answer that ``ex`` may not use raises a
    ``_PackageAnswer`` when the student's code calls it through a module attribute (``rl.gae``,
    ``rltriton_lite.reference.discounted_returns``, ``returns._gae_prologue``,
    ``integrations.torchrl.generalized_advantage_estimate`` ...), and the checker's own helpers
    refuse however they are reached; the package's own code still calls them (a function is
    refused only where the code that calls it is not the package's). Yields the list of those
    refused (a student's ``try`` cannot hide one)."""
    found, holders = _answers()
    allowed, refused, saved = _allowed(ex), [], []

    def refuser(shown, obj):
        def refuse(*args, **kwargs):
            if obj is not None and _called_by_the_package():
                return obj(*args, **kwargs)
            refused.append(shown)
            raise _PackageAnswer(_refusal(ex, f"{shown} is", shown))
        refuse.__name__ = refuse.__qualname__ = shown.rsplit(".", 1)[-1]
        _REFUSERS[id(refuse)] = shown
        return refuse

    token = (ex, refused)
    _ACTIVE.append(token)
    try:
        for mod, n, obj in holders:
            if id(obj) not in allowed:
                saved.append((mod, n, obj))
                setattr(mod, n, refuser(found[id(obj)][1], None if _is_jit(obj) else obj))
        yield refused
    finally:
        _ACTIVE[:] = [a for a in _ACTIVE if a is not token]
        for mod, n, obj in saved:
            _REFUSERS.pop(id(getattr(mod, n)), None)  # this block's stand-ins only (an outer one keeps its own)
            setattr(mod, n, obj)


def _refuse(ex, case, code, refused, error=None):
    """An AssertionError if the student's function called, named or is one of the package's answers."""
    called = _cause(error, _PackageAnswer) if error is not None else None
    # compiled, a @triton.jit function that names a refused one fails to compile, naming it
    compiled = next((shown for e in _chain(error) for i, shown in _REFUSERS.items()
                     if "Unsupported function referenced" in str(e) and f"{i:#x}" in str(e)), None)
    why = (_refusal(ex, f"{refused[0]} is", refused[0]) if refused else str(called) if called is not None
           else _refusal(ex, f"{compiled} is", compiled) if compiled else code.answer(ex))
    if why:
        raise _RuleBroken(f"{ex.name}, {case}: {why}") from None


_LIBRARIES = {"rltriton_lite", "triton", "torch", "numpy"}


def _python_on_blocks(py) -> list:
    """Where a ``@triton.jit`` function's source applies Python's min, max, and, or, not, if or
    while to what may be a block (anything but its tl.constexpr parameters and globals): it may
    run under the interpreter and still be wrong, or fail to compile on a GPU."""
    try:
        src = textwrap.dedent(inspect.getsource(py))
        tree = ast.parse(src)
    except (OSError, TypeError, SyntaxError):
        return []
    fdef = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if fdef is None:
        return []
    params = [*fdef.args.posonlyargs, *fdef.args.args, *fdef.args.kwonlyargs]
    static = {a.arg for a in params if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)} | {
        n.target.id for n in ast.walk(fdef) if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
        and "constexpr" in ast.unparse(n.annotation)}  # (a local VAR: tl.constexpr = 1 too)
    runtime = ({a.arg for a in params} | {
        n.id for n in ast.walk(fdef) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}) - static

    def on_block(node):
        return any(isinstance(n, ast.Name) and n.id in runtime for n in ast.walk(node))

    found = []
    for n in ast.walk(fdef):
        word = None
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("min", "max"):
            word = f"{n.func.id}("
        elif isinstance(n, ast.BoolOp) and on_block(n):
            word = "and" if isinstance(n.op, ast.And) else "or"
        elif isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not) and on_block(n.operand):
            word = "not"
        elif isinstance(n, (ast.If, ast.IfExp, ast.While)) and on_block(n.test):
            word = "while" if isinstance(n, ast.While) else "if"
        if word:
            found.append((n.lineno, word))
    lines = src.splitlines()
    out = []
    for lineno in sorted({ln for ln, _ in found}):
        line = lines[lineno - 1].strip()
        words = ", ".join(f"`{w}`" for w in sorted({w for ln, w in found if ln == lineno}))
        out.append(f"{words} in `{line if len(line) <= 60 else line[:57] + '...'}`")
    return out


_ATOMS = (int, float, complex, str, bytes, bool, type(None), np.ndarray, np.generic, torch.Tensor)
_HEAVY = {"torch", "numpy", "triton", "rltriton_lite"}  # libraries whose objects are not walked into


class _Code:
    """What the student's code shows, read once per check: their own functions reachable from
    ``fn`` (through the globals, closure variables and defaults each reads, the methods of their
    classes, the Python of their ``@triton.jit`` functions, the items of the dicts, lists, tuples
    and sets and the attributes of the objects among these, and the attributes each reads of
    their own modules; never into a library's), what those read, their ``@triton.jit`` functions,
    and their functions and classes themselves (``defs``, for a teacher's review)."""

    BUDGET = 20000  # objects looked at, at most

    def __init__(self, fn):
        self.fn, self.refs, self.jits, self.defs = fn, [], [], []
        todo, seen, budget = [(fn, None, None)], set(), self.BUDGET

        def push(obj, where, via):
            if not isinstance(obj, _ATOMS):
                todo.append((obj, where, via))
                if where is not None:
                    self.refs.append((where, via, obj))

        while todo and budget > 0:
            f, where, via = todo.pop()
            if id(f) in seen:
                continue
            seen.add(id(f))
            budget -= 1
            if isinstance(f, dict):
                for k, v in list(f.items())[:1000]:
                    push(v, where, f"{via}[{k!r}]")
                continue
            if isinstance(f, (list, tuple, set, frozenset)):
                for j, v in enumerate(list(f)[:1000]):
                    push(v, where, f"{via}[{j}]")
                continue
            if isinstance(f, functools.partial):
                for v in (f.func, *f.args, *f.keywords.values()):
                    push(v, where, via)
                continue
            if isinstance(f, (staticmethod, classmethod)):
                push(f.__func__, where, via)
                continue
            if inspect.ismethod(f):  # Returns.apply: torch's, but Returns is theirs
                push(f.__func__, where, via)
                push(f.__self__ if inspect.isclass(f.__self__) else type(f.__self__), where, via)
                continue
            if inspect.ismodule(f):
                continue  # a module's attributes: those a function reads (below)
            jit_fn = _is_jit(f)
            py = f.fn if jit_fn else f
            if not _the_student_s(py):
                continue
            if inspect.isclass(py):
                self.defs.append(py)
                for k, v in vars(py).items():
                    push(v, where, f"{via}.{k}" if via else k)
                continue
            if not inspect.isfunction(py):
                wrapped = getattr(py, "__wrapped__", None)
                if wrapped is not None:
                    push(wrapped, where, via)
                if callable(py) and not inspect.isbuiltin(py):
                    push(type(py), where, via)  # an object with a __call__ of theirs
                if hasattr(py, "__dict__") and type(py).__module__.split(".")[0] not in _HEAVY:
                    for k, v in list(vars(py).items())[:1000]:
                        push(v, where, f"{via}.{k}")
                continue
            self.defs.append(py)
            if jit_fn:
                self.jits.append(py)
            names = _code_names(py.__code__)
            for n in sorted(names):
                obj = py.__globals__.get(n, sys.modules.get(n))  # (a module: imported at the top, or in the function)
                if n in py.__globals__ or obj is not None:
                    push(obj, py.__name__, n)
                    if inspect.ismodule(obj) and not _library_module(obj):  # their own module: what they read of it
                        for a in sorted(names):
                            if a in vars(obj):
                                push(vars(obj)[a], py.__name__, f"{n}.{a}")
            for n, cell in zip(py.__code__.co_freevars, py.__closure__ or ()):
                try:
                    obj = cell.cell_contents
                except ValueError:  # not yet assigned
                    continue
                push(obj, py.__name__, n)
            for j, v in enumerate(py.__defaults__ or ()):
                push(v, py.__name__, f"a default ({j})")
            for k, v in (py.__kwdefaults__ or {}).items():
                push(v, py.__name__, f"the default of {k}")
            wrapped = getattr(py, "__wrapped__", None)
            if wrapped is not None:
                push(wrapped, py.__name__, "__wrapped__")

    def answer(self, ex):
        """Why the code is the package's answer (it is one, or reads one by name), or None."""
        found, _ = _answers()
        allowed = _allowed(ex)
        if id(self.fn) in found and id(self.fn) not in allowed:
            shown = found[id(self.fn)][1]
            return _refusal(ex, f"the function you passed is {shown},", shown)
        for where, via, obj in self.refs:
            if id(obj) in found and id(obj) not in allowed:
                shown = found[id(obj)][1]
                return _refusal(ex, f"your {where} reads {shown}" + ("" if shown.endswith(f".{via}") else
                                                                       f" (as {via})") + ", which is", shown)
        return None  # (a copy of a prologue's source is not looked for: a right answer is often the same text)

    def slips(self) -> str:
        """The Triton hint, where their @triton.jit code applies Python to what may be a block."""
        said = [f"{py.__name__}: {', '.join(where)}" for py in self.jits for where in [_python_on_blocks(py)] if where]
        if not said:
            return ""
        return ("\nYour @triton.jit code uses Python where a block may be (" + "; ".join(said) + "): it ran, but on "
                "a block these do not act element by element. " + TRITON_HINT)

    def sources(self) -> str:
        """The source of their functions and classes reachable from ``fn`` (each once; a method or
        a nested function inside one already shown is not shown again), for a teacher's review."""
        out, shown = [], set()
        for obj in self.defs:
            if id(obj) in shown:
                continue
            src = _source(obj)
            if src is None and inspect.isclass(obj):  # (a class of a notebook's cell: its methods' sources)
                methods = [m for m in (getattr(v, "__func__", v) for v in vars(obj).values()) if inspect.isfunction(m)]
                bases = ", ".join(f"{b.__module__}.{b.__qualname__}" if b.__module__ != obj.__module__ else
                                  b.__qualname__ for b in obj.__bases__)
                src = f"class {obj.__name__}({bases}):\n" + "\n".join(
                    textwrap.indent(m_src, "    ") for m in methods for m_src in [_source(m)] if m_src)
                shown |= {id(m) for m in methods}
            if src is None:
                continue
            shown.add(id(obj))
            origin = _origin(obj)
            src = f"# (from {origin})\n{src}" if origin else src
            if not any(src.strip() in o for o in out):
                out = [o for o in out if o.strip() not in src] + [src]
        return "\n\n".join(o.rstrip() + "\n" for o in out)


def _origin(obj):
    """The file a function or class reached from the student's came from, where it is not their
    notebook's (``__main__``): a teacher reviewing the sources sees what was imported."""
    if getattr(obj, "__module__", "__main__") == "__main__":
        return None
    code = getattr(obj, "__code__", None)
    try:
        return code.co_filename if code is not None else inspect.getsourcefile(obj)
    except TypeError:
        return None


def _source(obj):
    try:
        return textwrap.dedent(inspect.getsource(obj))
    except (OSError, TypeError):
        return None


def _library_module(mod) -> bool:
    top = mod.__name__.split(".")[0]
    return top in _LIBRARIES or top in sys.stdlib_module_names


# ---- What a task asks for besides the values ---------------------------------------------------
_NO_KERNEL = ("no Triton kernel of yours ran: this exercise asks you to write the kernel (a @triton.jit function, "
              "launched as kernel[grid](...)) and {fn} to launch it, not to compute the result in PyTorch or NumPy")


def _kernel_reads(launched) -> set:
    """Every name the code of the student's launched kernels reads, their @triton.jit helpers' too."""
    names = set()
    for launch in launched:
        for py in _Code(launch.kernel).jits:
            names |= _code_names(py.__code__)
    return names


def _your_function(fn) -> str:
    """The student's function, named so a name like `atomic` reads as a name in a sentence."""
    name = getattr(fn, "__name__", None)
    return f"your function `{name}`" if name and name != "<lambda>" else "your function"


def _no_kernel_note(ex, launched) -> str:
    if ex.needs in ("kernel", "scan") and not any(launch.mine for launch in launched):
        return "\n(And " + _NO_KERNEL.format(fn="your function") + ".)"
    return ""


def _require(ex, case, fn, args, launched, widest, functions, got=None):
    """What the exercise's task asks for besides the values, for one call (``ex.needs``): an
    AssertionError that says what is missing. Last, that the answer is the student's kernel's
    (``_written_by_their_kernel``)."""
    mine = [launch for launch in launched if launch.mine]
    if ex.needs in ("kernel", "scan") and not mine:
        raise AssertionError(f"{ex.name}, {case}: " + _NO_KERNEL.format(fn=_your_function(fn)))
    package = next((launch for launch in launched if not launch.theirs and _kernel_module(launch.kernel).split(".")[0]
                    == __name__.split(".")[0]), None) if ex.needs in ("kernel", "scan") else None
    if package is not None:
        raise AssertionError(
            f"{ex.name}, {case}: your function launched the package's own kernel "
            f"({_kernel_module(package.kernel)}.{getattr(getattr(package.kernel, 'fn', None), '__name__', '?')}): "
            "this exercise asks for the answer from your kernel alone, not from rltriton_lite's kernels")
    scanned = widest > 0 if INTERPRET else bool(_kernel_reads(mine) & {"associative_scan", "cumsum", "cumprod"})
    if ex.needs == "kernel" and scanned:  # no scan in the task: a scan is another exercise's (the harness's) machinery
        raise AssertionError(
            f"{ex.name}, {case}: your kernel ran a tl.associative_scan: this exercise needs none (each output comes "
            "from its own inputs, or from a sum): write the kernel for it, not a scan (a copy of the harness's)")
    if ex.needs == "scan":
        if not scanned:
            raise AssertionError(
                f"{ex.name}, {case}: your kernel ran no tl.associative_scan: this exercise asks for the returns as a "
                "scan of the pairs (a_t, b_t) in Triton (tl.associative_scan with your combine), not for a loop over "
                "the steps or a result worked out elsewhere")
    for i, what in ex.in_place:
        storage = args[i].untyped_storage().data_ptr()
        if not any(storage in launch.storages for launch in mine):
            raise AssertionError(
                f"{ex.name}, {case}: your kernel read a copy of {what}, not {what} itself (no launch received a tensor "
                f"of its storage: .contiguous(), .t().contiguous(), .clone() or torch.tensor(...) copies a strided "
                f"view): pass the (T, B) view itself to the kernel with its strides, and read element (t, b) at "
                f"X + t * x.stride(0) + b * x.stride(1)")
    if ex.needs == "autograd":
        if not functions:
            raise AssertionError(
                f"{ex.name}, {case}: no torch.autograd.Function of yours ran: this exercise asks for a subclass of "
                "torch.autograd.Function (class Returns(torch.autograd.Function) with a forward and a backward) called "
                "as Returns.apply(rewards, terminated, gamma), not for autograd through PyTorch operations")
        for phase, what in (("forward", "the reverse scan, exercises.scan_hook with your prologue"),
                            ("backward", "the transposed scan, exercises.scan_hook with your second prologue and "
                                         "reverse=False")):
            if not any(launch.theirs and launch.phase == phase for launch in launched):
                raise AssertionError(f"{ex.name}, {case}: your {phase} launched no Triton code of yours: it is {what}")
    _written_by_their_kernel(ex, case, got, launched, args)


def _kernel_module(kernel) -> str:
    """The module that defines a launched @triton.jit kernel ('' where it cannot be told)."""
    return getattr(getattr(kernel, "fn", None), "__module__", None) or ""


def _element_offsets(t) -> np.ndarray:
    """The byte offset of each of ``t``'s elements in its storage, in ``t``'s shape."""
    offs = np.asarray(t.storage_offset(), dtype=np.int64)
    for size, stride in zip(t.shape, t.stride()):
        offs = offs[..., None] + np.arange(size, dtype=np.int64) * stride
    return offs * t.element_size()


def _never_stored(value, theirs) -> np.ndarray:
    """Under the interpreter: which of ``value``'s elements no ``tl.store`` of the launches ``theirs``
    wrote (a bool array of its shape)."""
    storage = value.untyped_storage().data_ptr()
    stored = [o for launch in theirs for o in launch.written.get(storage, [])]
    offsets = _element_offsets(value)
    return ~np.isin(offsets, np.concatenate(stored).astype(np.int64)) if stored else np.ones(offsets.shape, dtype=bool)


def _stores_missing(value, launched):
    """_never_stored for ``value`` under the launches of the student's code that received its storage,
    or None where none did."""
    theirs = [launch for launch in launched if launch.theirs and value.untyped_storage().data_ptr() in launch.storages]
    return _never_stored(value, theirs) if theirs else None


ROW_0_ONLY = ("Your kernel's tl.store calls wrote row 0 only: every program stored into row 0, so {} of the tensor "
              "you returned never got a value (it holds whatever the buffer held)." + _fix(
                  " Row `row` starts at row * T: add that offset to every address the kernel stores to and loads from "
                  "(the loads may lack it too: row 0's answer in row 0 proves nothing about them)."))


ONE_PROGRAM_ROW_0 = ("Your kernel ran on one program, so only row 0 was stored: {} of the tensor you returned never "
                     "got a value (it holds whatever the buffer held)." + _fix(
                         " Launch one program per row, grid = (B,), each taking its row from tl.program_id(0)."))


NONE_STORED = ("Your kernel's tl.store calls wrote none of the {} elements of the tensor you returned: it holds "
               "whatever the buffer held before the launch (torch.empty: anything), so its values say nothing about "
               "your arithmetic. Did the kernel run on any program (a grid of n // BLOCK is 0 programs where "
               "n < BLOCK: triton.cdiv rounds up), and do its stores' addresses and mask reach that tensor{}?")


def _only_row_0_stored(got, unstored):
    """For a kernel's (B, T) answer and its _Unstored (_unstored_of): the number of rows after row 0 where
    row 0 alone was stored (a row offset left out of the stores), else None."""
    if not isinstance(unstored, _Unstored) or got.ndim != 2 or got.shape[0] < 2:
        return None
    missing = unstored.mask
    return got.shape[0] - 1 if not missing[0].any() and missing[1:].all() else None


def _unstored_note(ex, unstored, hinted=True, one_block=False) -> str:
    """For a wrong answer whose _Unstored (_unstored_of: a tuple of them for several results) shows
    elements no store of the student's wrote (a chunk never visited, a grid too small), a note that says
    so: the values there are whatever the buffer held. ``one_block``: the hint below says why (a block
    narrower than the row, _block_short_of_the_row)."""
    several = isinstance(unstored, tuple)
    for i, each in enumerate(unstored if several else [unstored]):
        missing = each.mask if each is not None else None
        if missing is not None and missing.any():
            first = f"index {tuple(int(i) for i in np.argwhere(missing)[0])}" if missing.ndim else "its one element"
            so = ("the hint below may point elsewhere" if hinted else "the values above may be anything")
            store = ("one block that covers the whole row." if ex.one_block else "a grid that covers the whole tensor"
                     + (", and a loop over the chunks in each program." if ex.needs == "scan" else "."))
            label = f" ({ex.results[i]})" if several and ex.results and i < len(ex.results) else ""
            return (f"\nFirst: your kernel's tl.store calls wrote only {int((~missing).sum())} of the {missing.size} "
                    f"elements of the tensor you returned{label} ({int(missing.sum())} never stored, the first at "
                    f"{first}). "
                    "Those hold whatever the buffer held before the launch (torch.empty: anything)"
                    + (": the hint below says why." if one_block else f", so {so}. Store every element: {store}"))
    return ""


BLOCK_SHORT_OF_THE_ROW = (
    "Your kernel ran one program whose block is {0} lanes wide (its tl.associative_scan's width), and the row has "
    "T = {1} steps: the steps from t = {0} on were never loaded, scanned or stored. This exercise is one program "
    "and one block, not a loop over chunks: the block must cover the whole row, BLOCK ≥ T, such as "
    "BLOCK = triton.next_power_of_2(T), the lanes past T masked.")


def _block_short_of_the_row(ex, got, launched, widest, unstored):
    """For a one-block exercise (``one_block``: block_scan) whose 1-D answer was not all stored (its
    _Unstored, _unstored_of): (the block's width, T) where every launch of the student's that received it
    ran one program and its widest tl.associative_scan was narrower than the row, else None."""
    if not ex.one_block or not isinstance(unstored, _Unstored) or got.ndim != 1 or not 0 < widest < got.numel():
        return None
    theirs = [launch for launch in launched if launch.theirs and got.untyped_storage().data_ptr() in launch.storages]
    if not theirs or any(_programs(launch) != 1 for launch in theirs) or not unstored.mask.any():
        return None
    return widest, got.numel()


_WRITE_IT = ("allocate the output (torch.empty), pass it to your kernel, tl.store every element of the answer into "
             "it, and return it (a view of it, .view(), .t() or a slice, is fine)")


def _written_by_their_kernel(ex, case, got, launched, args=()):
    """The answer is what the student's kernel wrote, for the exercises whose answer is tensors
    their kernel writes: each returned tensor's storage was passed to a launch of their kernel
    (for ``returns_autograd``, of their Triton code: the forward's for the returns, the
    backward's for the gradient), PyTorch did not write it after the last such launch (its
    ``_version``, which in-place ops, ``x[...] = ...`` and ``copy_`` bump and a kernel's stores do
    not, is the one recorded at that launch), and, under the interpreter, their kernels'
    ``tl.store`` calls wrote every one of its elements. Last, their launches run again on new
    inputs (``_replay``): the kernel must compute the answer from its inputs."""
    if ex.needs in ("kernel", "scan") and ex.results and isinstance(got, (tuple, list)) and len(got) == len(ex.results):
        results = [(f" ({name})", value, lambda launch: launch.mine) for name, value in zip(ex.results, got)]
    elif ex.needs in ("kernel", "scan"):
        results = [("", got, lambda launch: launch.mine)]
    elif ex.needs == "autograd" and isinstance(got, (tuple, list)) and len(got) == 2:
        results = [(f" ({ex.results[i]})", got[i], lambda launch, phase=phase: launch.theirs and launch.phase == phase)
                   for i, phase in enumerate(("forward", "backward"))]
    else:
        return
    checked = []  # (label, the returned tensor, the message's start): what the replay checks
    for label, value, whose in results:
        said = f"{ex.name}, {case}: the " + ("result" if not isinstance(value, torch.Tensor) else "tensor") + \
            f" you returned{label} was not written by your kernel: "
        if not isinstance(value, torch.Tensor):
            one = " (one number is a 0-d tensor: not .item())" if isinstance(value, (int, float, np.generic)) else ""
            raise AssertionError(said + f"it is {_describe(value)}, not the tensor your kernel stored into{one}; "
                                 + _WRITE_IT)
        if value.numel() == 0:
            continue
        storage = value.untyped_storage().data_ptr()
        theirs = [launch for launch in launched if whose(launch) and storage in launch.storages]
        if not theirs:
            raise AssertionError(said + "no launch of your kernel received its storage: PyTorch made it (a result "
                                        "worked out with tensor ops, or a copy of your kernel's output: .contiguous(), "
                                        ".clone(), .to(...), torch.stack/cat); " + _WRITE_IT)
        same = [(x, v) for x, v in theirs[-1].tensors if x.untyped_storage().data_ptr() == storage]
        now = _version(value)
        if now is not None and (any(_version(x) != v for x, v in same) or all(now != v for _, v in same)):
            raise AssertionError(
                f"{ex.name}, {case}: the tensor you returned{label} was changed by PyTorch after your kernel wrote it "
                "(an in-place op after the last launch that received it: out[...] = ..., out.copy_(...), out += ..., "
                "torch.where(..., out=out)): the kernel must write the whole answer itself, nothing patched up after "
                "the launch")
        if INTERPRET:
            missing = _never_stored(value, theirs)
            if missing.any():
                first = f"the first one never stored: index {tuple(int(i) for i in np.argwhere(missing)[0])}" \
                    if missing.ndim else "a 0-d tensor"
                raise AssertionError(
                    said + f"its tl.store calls wrote {int((~missing).sum())} of its {missing.size} elements "
                    f"({first}); the rest is what PyTorch put there before the launch "
                    "(torch.zeros, torch.empty, or values worked out in PyTorch). Store every element: a grid that "
                    "covers the whole tensor, a mask that lets every valid lane through")
        checked.append((label, value, said))
    if checked and (not INTERPRET or max(v.numel() for _, v, _ in checked) <= _REPLAY_UNDER_INTERPRETER):
        _replay(ex, case, args, launched, checked)
        _scan_reaches_the_output(ex, case, launched, checked)


def _run_again(launched, swap=lambda x: x, poison_scans=False):
    """Every launch of ``launched`` run again in order as it was (its own grid and arguments, each
    through ``swap``; their Python not run again), the accesses checked as in the student's call
    (``_interpreting``)."""
    with _interpreting(poison_scans), np.errstate(all="ignore"):
        for launch in launched:
            call_args, call_kwargs = launch.call
            type(launch.kernel).run(launch.kernel, *swap(call_args), **{k: swap(v) for k, v in call_kwargs.items()})


def _scan_reaches_the_output(ex, case, launched, checked):
    """Under the interpreter, for a scan exercise: the student's launches run again on the same
    inputs with every float of each ``tl.associative_scan``'s result replaced by 0.375 (finite, so
    that ``y + 0 * scanned`` does not hide it as it would a NaN); if the returned tensors come out the
    same, the scan's result never reached them (a loop over the steps beside a scan whose result is
    dropped). A launch that cannot run twice, or outputs that change anyway, pass."""
    if not INTERPRET or ex.needs != "scan":
        return
    before = [(value, value.detach().clone()) for _, value, _ in checked]
    try:
        try:
            _run_again(launched, poison_scans=True)
        except Exception:  # (say nothing rather than refuse a right answer)
            return
        same = all(torch.equal(torch.nan_to_num(value.detach(), nan=1e300), torch.nan_to_num(old, nan=1e300))
                   for value, old in before)
    finally:
        with torch.no_grad():
            for value, old in before:
                value.detach().copy_(old)
    if same:
        raise AssertionError(
            f"{ex.name}, {case}: your kernel ran a tl.associative_scan, but its result never reaches the answer: run "
            "again with every tl.associative_scan's result replaced by another value, your kernel wrote the same "
            "values. The answer must come from the scan of the steps' maps (store what tl.associative_scan returns, "
            "or values computed from it), not from a loop over the steps beside it")


# Under the interpreter the stores are recorded (above), and each replay interprets every launch again: CI
# replays the cases up to this many elements (each kernel exercise has some); compiled, every case.
_REPLAY_UNDER_INTERPRETER = 256


def _as_numpy(x):
    """The case's arguments as the checker's references take them: a tensor as a NumPy array (float64,
    flags bool), the rest as they are."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        return x.numpy() if x.dtype == torch.bool else x.double().numpy()
    if isinstance(x, (tuple, list)):
        return type(x)(_as_numpy(y) for y in x)
    return x


def _a_second_draw(x, rng):
    """New values for a float input, in ``x``'s shape, dtype and device: where ``x`` is finite, its
    finite values' mean plus a standard normal draw; where it is NaN or inf (behind an episode end, in a
    later episode), the same NaN or inf, so the case stays what it was."""
    old = x.detach().cpu().double().numpy()
    finite = np.isfinite(old)
    shift = float(old[finite].mean()) if finite.any() else 0.0
    return torch.as_tensor(np.where(finite, shift + rng.normal(size=old.shape), old), dtype=x.dtype, device=x.device)


def _second_draws(ex, case, inputs):
    """The replay's new values for the case's float inputs, in order (``_a_second_draw``)."""
    rng = np.random.default_rng([ex.stream, sum(map(ord, case)), 7])
    return [_a_second_draw(x, rng) for x in inputs]


def _cloned(x):
    """``x`` with every tensor in it cloned (tuples, lists and dicts rebuilt)."""
    if isinstance(x, torch.Tensor):
        return x.clone()
    if isinstance(x, (tuple, list)):
        return type(x)(_cloned(y) for y in x)
    if isinstance(x, dict):
        return {k: _cloned(v) for k, v in x.items()}
    return x


def _replay(ex, case, args, launched, checked):
    """Every launch the student's call made, run again in order as it was (its own arguments and
    grid; their Python is not run again), with the case's float inputs overwritten in place by a
    second draw (``_a_second_draw``: the same shapes, flags and NaN/inf positions, new values) and
    each returned tensor's storage replaced by a NaN-filled copy (0xFF bytes; 0xFF.. is NaN as a
    float); the inputs are put back afterwards. The returned tensors must then hold the checker's
    reference on the new inputs (``ex.recompute``, the case's tolerance). A result worked out in
    PyTorch or Python and copied into the output by a kernel comes back with the old inputs' values;
    an element the kernels do not store (or read before they store it) comes back NaN. A tensor
    that a launch received and that is a copy of an input (the input's shape and values: .clone(),
    .to(...), .double() before the launch) gets the new values too. Compiled or interpreted alike
    (under the interpreter, the accesses are bounds-checked as in the student's call). Without the
    keys' value on the new inputs (a student's install, on a keyed exercise) there is no replay."""
    inputs = [x for x in _leaves(args) if x.dtype.is_floating_point and x.numel()]
    if not inputs or ex.recompute is None:
        return
    mine = {x.untyped_storage().data_ptr() for x in inputs}
    outs = {v.untyped_storage().data_ptr() for _, v, _ in checked}
    copies, seen = [], set()
    for launch in launched:
        for t, _ in launch.tensors:
            where = t.untyped_storage().data_ptr()
            if where in mine or where in outs or id(t) in seen or not t.dtype.is_floating_point:
                continue
            seen.add(id(t))
            k = next((k for k, x in enumerate(inputs) if t.shape == x.shape and t.device == x.device and torch.equal(
                torch.nan_to_num(t.detach().to(x.dtype)), torch.nan_to_num(x.detach()))), None)
            if k is not None:
                copies.append((t, k))
    poison = {}
    for _, value, _ in checked:
        store = value.untyped_storage()
        poison.setdefault(store.data_ptr(), torch.empty(store.nbytes(), dtype=torch.uint8,
                                                        device=value.device).fill_(255))

    def swap(x):
        if isinstance(x, torch.Tensor) and x.untyped_storage().data_ptr() in poison:
            buf = poison[x.untyped_storage().data_ptr()]
            flat = buf[:buf.numel() - buf.numel() % x.element_size()].view(x.dtype)
            return flat.as_strided(x.shape, x.stride(), x.storage_offset())
        if isinstance(x, (tuple, list)):
            return type(x)(swap(y) for y in x)
        return x

    before = [(x, x.detach().clone()) for x in inputs] + [(t, t.detach().clone()) for t, _ in copies]
    try:
        with torch.no_grad():
            new = _second_draws(ex, case, inputs)
            for x, n in zip(inputs, new):
                x.detach().copy_(n)
            for t, k in copies:
                t.detach().copy_(new[k])
        with np.errstate(all="ignore"):
            try:
                expected = ex.recompute(*_as_numpy(tuple(args)))
            except _NoKey:  # a student's install: no key on new inputs (the grader, with the keys, replays)
                return
        try:
            _run_again(launched, swap)
        except Exception:  # (a launch that cannot run twice: say nothing rather than refuse a right answer)
            return
        again = [swap(value).detach().cpu().double().numpy() for _, value, _ in checked]
    finally:
        with torch.no_grad():
            for x, old in before:
                x.detach().copy_(old)
    for i, ((label, value, said), got) in enumerate(zip(checked, again)):
        want = np.asarray(expected[i] if isinstance(expected, tuple) else expected, dtype=np.float64)
        bad = ~np.isclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
        if not bad.any():
            continue
        at = tuple(int(j) for j in np.argwhere(bad)[0]) if bad.ndim else ()
        where = f"index {at}" if bad.ndim else "its one element"
        if np.isnan(got[bad]).any():
            unwritten = bad & np.isnan(got)
            first = tuple(int(j) for j in np.argwhere(unwritten)[0]) if bad.ndim else ()
            raise AssertionError(
                said + f"run again on new inputs with that buffer replaced by a NaN-filled copy, your kernel's "
                f"launches left {int(unwritten.sum())} of its {bad.size} elements NaN (the first: "
                f"{f'index {first}' if bad.ndim else 'its one element'}): their values came from PyTorch, put in "
                "the buffer before the launch, or your kernel reads the buffer before it writes it. " + _WRITE_IT)
        old = value.detach().cpu().double().numpy()
        stale = ", what it returned for the case's own inputs" if np.isclose(got[at], old[at], rtol=1e-5, atol=1e-5) \
            else ""
        whose = ("your Triton code's launches (scan_hook with your prologues)" if ex.needs == "autograd" else
                 "your kernel's launches")
        fix = ("the pairs your prologues return must be loaded from what scan_hook is given, and scan_hook given "
               "the Function's own inputs (rewards and terminated in the forward, the incoming gradient in the "
               "backward), not values worked out in PyTorch or Python" if ex.needs == "autograd" else
               "compute the answer in your kernel from the inputs it loads (tl.load of the tensors passed to it), "
               "not in PyTorch or Python before the launch, and pass it the inputs themselves")
        raise AssertionError(
            f"{ex.name}, {case}: {whose}, run again on new inputs, did not recompute the answer: the values came "
            f"from outside the kernel (the tensor you returned{label}: {int(bad.sum())} of its {bad.size} elements "
            f"wrong, the first at {where}: expected {want[at]:.6g} for the new inputs, got {got[at]:.6g}{stale}). "
            "The checker wrote a second draw of the case (new values, the same shapes and flags) into your input "
            "tensors and ran your launches again as they were, the same arguments and grids: " + fix)


_THEIR_LIBRARIES = _LIBRARIES | {"IPython", "ipykernel", "traitlets", "_pytest", "pytest", "pluggy", "xdist", "execnet"}
_LIBRARY_DIRS = tuple(sorted({os.path.join(os.path.realpath(p), "") for p in (
    *(p for k, p in sysconfig.get_paths().items() if k in ("stdlib", "platstdlib", "purelib", "platlib")),
    *(p for p in [getattr(site, "getusersitepackages", lambda: None)()] if p))}))


def _theirs(frame) -> bool:
    """Whether the frame runs the student's code: not a library's, the standard library's or the package's."""
    top = (frame.f_globals.get("__name__") or "").split(".")[0]
    if top in _THEIR_LIBRARIES or top in sys.stdlib_module_names:
        return False
    filename = frame.f_code.co_filename  # (<string>: exec'd code, theirs unless a library's globals run it)
    return not (filename.startswith("<frozen") or os.path.realpath(filename).startswith(_LIBRARY_DIRS))


def _their_line() -> str:
    """`` at line n: its source`` of the innermost frame of the student's code on the stack (the
    interpreter runs their kernel as Python), or "" where there is none."""
    frame = sys._getframe(1)
    while frame is not None and not _theirs(frame):
        frame = frame.f_back
    if frame is None:
        return ""
    source = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return f" at line {frame.f_lineno}" + (f" ({source})" if source else "")


@contextlib.contextmanager
def _counting_their_steps():
    """The Python lines and calls that the student's code runs while the block runs, in threads it
    starts too (``sys.settrace``, ``threading.settrace``; the tracers in force before are put back)."""
    count = [0]

    def line(frame, event, arg):
        if event == "line":
            count[0] += 1
        return line

    def call(frame, event, arg):
        if event == "call" and _theirs(frame):
            count[0] += 1
            return line
        return None

    import threading
    before, before_threads = sys.gettrace(), threading.gettrace()
    sys.settrace(call)
    threading.settrace(call)
    try:
        yield count
    finally:
        sys.settrace(before)
        threading.settrace(before_threads)


def _no_loop_over_time(inputs, small, large, how="linear_scan and tensor ops, whose Python does not grow with T "
                       "(shift with slicing or torch.cat, gather with an index tensor, and let the scan walk the steps)"):
    """A probe (``_Exercise.probe``): the student's Python steps (lines and calls) on ``inputs(T)``
    must not grow from T = ``small`` to T = ``large`` (the same batch, parameters and flags): a
    Python loop over time runs at least one line a step. Vectorised code runs the same lines."""
    def probe(ex, fn, code):
        steps = _counted(ex, fn, code, inputs, (small, large), _counting_their_steps, lambda count: count[0])
        if steps[1] - steps[0] >= (large - small) // 4:
            raise AssertionError(
                f"{ex.name}: a Python loop over time: your code ran {steps[0]} Python lines and calls on a rollout "
                f"of {small} steps and {steps[1]} on one of {large} (the same rows, parameters and flags): the task "
                f"asks for {how}")
    return probe


def _pairs_do_the_scan(inputs, multiplier):
    """A probe for the tensor-code prologues whose pairs the checker scans (gae_pairs, token_gae_pairs): on
    ``inputs()``, a rollout with no episode end, a must not be 0 at every step. Pairs (0, y) pass every case
    (y_t = b_t), with the answer computed before the scan, in a loop or a scan of the student's own."""
    def probe(ex, fn, code):
        args = inputs()
        with _watch(), np.errstate(all="ignore"), _refusing(ex) as refused:
            a, _ = fn(*args)
        _refuse(ex, "the probe", code, refused)
        if not np.any(np.asarray(_as_numpy(a), dtype=np.float64)):
            raise AssertionError(
                f"{ex.name}: your a is 0 at every step, on a rollout with no episode end: linear_scan then does "
                "nothing (y_t = b_t), and b holds the whole answer, computed before the scan. The task asks for "
                f"each step's own pair ({multiplier}), so that the scan carries the advantage back.")
    return probe


def _pairs_probe_inputs(*more):
    """One row of 6 steps, no episode end: the rewards and values, then ``more`` (flags, parameters)."""
    r, v = np.random.default_rng(6).normal(size=(2, 1, 6))
    return (_t(r), _t(v), *more)


def _counted(ex, fn, code, inputs, lengths, counting, read):
    """What ``counting()`` (a context) counts while the student's function runs on ``inputs(T)``, for
    each T in ``lengths`` (the probes' runs: refused as a check's are)."""
    out = []
    for T in lengths:
        args = inputs(T)  # (the checker's own work: before the watch)
        for _ in range(1 if INTERPRET else 2):  # compiled, the second run's: a first launch's compile runs exec'd code
            with _watch(), np.errstate(all="ignore"), _refusing(ex) as refused:
                with counting() as counter:
                    ex.run(fn, args, {})
            _refuse(ex, f"T={T}", code, refused)
        out.append(read(counter))
    return out


class _CountOps(torch.utils._python_dispatch.TorchDispatchMode):
    """The ATen ops run inside the block (notebook 08, section 5, counts CleanRL's loop with one)."""

    def __init__(self):
        super().__init__()
        self.n = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.n += 1
        return func(*args, **(kwargs or {}))


def _ops_per_step(inputs, small, large, budget, how):
    """A probe: the tensor ops the student's function runs on ``inputs(T)`` may grow by at most
    ``budget`` per step from T = ``small`` to T = ``large``."""
    def probe(ex, fn, code):
        counts = _counted(ex, fn, code, inputs, (small, large), _CountOps, lambda ops: ops.n)
        per_step = (counts[1] - counts[0]) / (large - small)
        if per_step > budget:
            raise AssertionError(
                f"{ex.name}: your loop runs {per_step:.3g} tensor ops per step ({counts[0]} ops on a rollout of "
                f"{small} steps, {counts[1]} on one of {large}); the task asks for at most {budget}. {how}")
    return probe


def _device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def _t(x, dtype=torch.float32):
    return torch.as_tensor(np.asarray(x), device=_device()).to(dtype)


def _flags(rng, shape, p):
    return rng.random(shape) < p


# What a case marks at each step, for the hint where an error starts (_hint):
DONE, TERM, TRUNC = ("an episode end", "a termination (no bootstrap; the trace is cut: a reset)",
                     "a truncation (it bootstraps from next_values, and the trace is cut: a reset)")
AT_WINDOW_END = {  # each derived from the mark it names, at the window's last step (cases() adds them)
    DONE: "an episode end at the window's last step (no bootstrap: nothing after the window is read there)",
    TERM: "a termination at the window's last step (no bootstrap)",
    TRUNC: "a truncation at the window's last step (it bootstraps from next_values there, and the trace is cut)"}


def _window_end_marks(ex, case):
    """The case with, for each of its episode-end marks, the same mark at the window's last step
    alone, under its own name: a bootstrap at a terminal last step is a mistake of its own."""
    if len(case) < 5:
        return case
    marks = dict(case[4])
    for base, label in AT_WINDOW_END.items():
        if base in marks:
            m = np.asarray(marks[base], dtype=bool)
            last = (slice(None),) * (ex.time_dim % m.ndim) + (-1,)
            end = np.zeros_like(m)
            end[last] = m[last]
            marks[label] = end
    return (*case[:4], marks)


_CARRY_LABELS = ("the last step of a chunk", "the first step of a chunk")  # _carry_steps' marks, and the like


def _carry_steps(shape, chunk=64, reverse=True, tile=False):
    """The steps where a chunk's scan meets the carry of the chunk before it in scan order (``tile``: a program's
    tile of rows, each row with a carry of its own)."""
    t = np.arange(shape[-1])
    at = (t % chunk == chunk - 1) & (t < shape[-1] - 1) if reverse else (t % chunk == 0) & (t > 0)
    label = ("the last step of a chunk, where the carry from the chunk after enters (the carry: the scanned value "
             "at that chunk's first step in time" + (
        "; in a tile, each row's own: a block of ROWS values, one per row, not one number shared by the tile's rows"
        if tile else "") + ")" + _fix(
        " Is the carry applied there, and is it the scanned value (G, vs, ...) at the first step in time of the "
        "chunk after, t = (that chunk's index) * CHUNK" + (
            ", taken row by row (tl.sum along axis 1)" if tile else "") + "?")
        if reverse else
             "the first step of a chunk, where the carry from the chunk before enters")
    return {label: np.broadcast_to(at, shape)}


SCAN_RULES = """
Tensors are (B, T), float32, flags bool (write ~flag or flag.to(x.dtype), not 1 - flag).
linear_scan(a, b) computes y_t = b_t + a_t y_{t+1} backwards in time from y_T = 0: a bootstrap
at the window's last step goes into b, and a_t = 0 cuts the trace. linear_scan takes a_t = 0 as a
reset (y_t = b_t, selected: a NaN after it never reaches y_t). A NaN inside b itself is yours to
select away (torch.where)."""


def _scan(fn, args, kw, initial=None):
    """A hook's (a, b) through the scan: y_t = b_t + a_t y_{t+1}, from y_T = ``initial`` (0 if None)."""
    pair = fn(*args, **kw)
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise AssertionError(f"{fn.__name__} must return the pair (a, b) for linear_scan, got {_describe(pair)}")
    if pair[1] is None or pair[0] is None:
        raise AssertionError(f"{fn.__name__} returned None for {'a' if pair[0] is None else 'b'}: the pair (a, b) "
                             "for linear_scan is two tensors (a may be a number)")
    if initial is None:
        return linear_scan(*pair)
    return linear_scan(*pair, initial=torch.full(pair[1].shape[:-1], initial, dtype=pair[1].dtype,
                                                  device=pair[1].device))


PAST_WINDOW = 100.0  # gae_pairs' y_T: what lies past the window, which the window's last step resets away


def _scan_past_window(fn, args, kw):
    """gae_pairs' scan starts from y_T = PAST_WINDOW, not 0: a last step that does not reset lets it in."""
    return _scan(fn, args, kw, initial=PAST_WINDOW)


# ---- Harnesses for Triton hooks: your @triton.jit function inside a fixed kernel ------------------
@jit
def _combine(a1, b1, k1, a2, b2, k2):
    # (a1, b1, k1): the steps after, applied first; a reset k2 selects (a2, b2), as scan.combine does
    return tl.where(k2, a2, a2 * a1), tl.where(k2, b2, b2 + a2 * b1), k1 | k2


@jit
def _scan_steps(step, m, carry, REVERSE: tl.constexpr):
    """The scanned values of a chunk's steps from the carry entering it: ``step`` is the prologue's
    triple (a, b, reset); a step outside ``m`` is the identity (1, 0, no reset), and a step whose
    reset is set is y_t = b_t, selected: what lies behind it, NaN included, never reaches it."""
    tl.static_assert(len(step) == 3, "scan_hook's prologue returns a triple (a, b, reset), as the package's "
                                     "prologues do: reset (a bool) is where the trace is cut, y_t = b_t selected")
    a = tl.where(m, step[0], 1.0)
    k = m & (step[2] != 0)
    a_s, b_s, k_s = tl.associative_scan((a, tl.where(m, step[1], 0.0), k), 0, _combine, reverse=REVERSE)
    return tl.where(k_s, b_s, b_s + a_s * carry)  # a reset in the composed map: the carry is not read


@jit
def _scan_hook_kernel(X, O, P, T, START, PROLOGUE: tl.constexpr, CHUNK: tl.constexpr, REVERSE: tl.constexpr,
                      EPILOGUE: tl.constexpr):
    row = tl.program_id(0)
    carry = START  # what lies past the window (0.0, unless a checker says otherwise)
    n_chunks = tl.cdiv(T, CHUNK)
    for i in range(0, n_chunks):
        c = i
        if REVERSE:
            c = n_chunks - 1 - i
        t = c * CHUNK + tl.arange(0, CHUNK)
        m = t < T
        offs = row * T + t
        y = _scan_steps(PROLOGUE(X, P, offs, t, m, T), m, carry, REVERSE)
        out = y
        if EPILOGUE is not None:  # (reverse scans) y_in = y_{t+1}: the same scan of the steps one step on
            m_n = m & (t + 1 < T) & (t + 1 < c * CHUNK + CHUNK)  # past the chunk: the carry itself
            y_in = _scan_steps(PROLOGUE(X, P, offs + 1, t + 1, m_n, T), m_n, carry, REVERSE)
            out = EPILOGUE(X, P, offs, t, m, T, y, y_in)
        tl.store(O + offs, out, mask=m)
        last = c * CHUNK + CHUNK - 1  # the carry for the next chunk in scan order: y at this one's end
        if REVERSE:
            last = c * CHUNK
        carry = tl.sum(tl.where(t == last, y, 0.0), 0)


@jit
def _map_hook_kernel(X, O, P, n, HOOK: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(O + offs, HOOK(X, P, offs, m), mask=m)


_PAST_THE_WINDOW = [0.0]  # where scan_hook starts: a checker's case may set it (_started_from)


def scan_hook(prologue, inputs, params, chunk: int = 64, reverse: bool = True, epilogue=None) -> torch.Tensor:
    """The reverse scan y_t = b_t + a_t y_{t+1} (y_T = 0) of the pairs that your ``@triton.jit``
    ``prologue(X, P, offs, t, m, T) -> (a, b, reset)`` returns for each chunk of ``chunk`` steps
    (``reverse=False``: the forward scan y_t = b_t + a_t y_{t-1}, y_{-1} = 0). With an
    ``epilogue(X, P, offs, t, m, T, y, y_in) -> out`` (reverse scans), what it returns is stored
    instead of y; ``y_in`` is the value that entered the step (y_t = b_t + a_t y_in), y_{t+1} in a
    reverse scan (0 after the row's last step): the package's epilogues' name for it.

    The arguments are the package's hooks' (docs/DESIGN.md, "Hooks"), in the package's order, with
    ``offs`` in place of ``SX`` and ``row``: ``X``: the pointers of ``inputs`` ((B, T) tensors, in
    order); ``P``: ``params``, ints (a count: ``for k in range(P[2])``) as ints, the rest as floats;
    ``offs``: the chunk's flat offsets into the inputs (``tl.load(X[0] + offs, mask=m,
    other=0.0)``); ``t``: the time indices; ``m``: the in-bounds mask; ``T``: the row length. One
    program per row; an input may have trailing axes (a (B, T, K) tensor: step ``offs``'s element
    ``a`` is at ``offs * K + a``).

    ``reset`` (a bool per step) is where the trace is cut, as in the package's prologues: y_t = b_t,
    selected, so nothing behind it (a later episode, what lies past the window, the carry from a later
    chunk; in a forward scan the steps before) reaches it, NaN or inf included; a's value there is
    never read. y_in at a reset step is still the value behind it (y_{t+1}). A NaN inside b itself
    (0 * NaN in b at a terminal step) is the prologue's to select away with tl.where.

    The scan starts from y_T = 0 (y_{-1} = 0 forwards). While a checker runs, a case may start it
    from another value, a stand-in for what lies past the window: a step that cuts the trace there
    keeps it out, as every estimator's window's last step must.
    """
    if epilogue is not None and not reverse:
        raise ValueError("scan_hook: an epilogue goes with a reverse scan")
    X = tuple(x.contiguous() for x in inputs)
    B, T = X[0].shape
    out = torch.empty(B, T, dtype=torch.float32, device=X[0].device)
    P = tuple(int(p) if isinstance(p, (int, np.integer)) and not isinstance(p, bool) else float(p) for p in params)
    _scan_hook_kernel[(B,)](X, out, P, T, float(_PAST_THE_WINDOW[0]), PROLOGUE=prologue, CHUNK=chunk,
                            REVERSE=reverse, EPILOGUE=epilogue)
    return out


def map_hook(hook, inputs, params, block: int = 64) -> torch.Tensor:
    """Your ``@triton.jit`` ``hook(X, P, offs, m) -> value`` applied elementwise: ``X`` the pointers
    of ``inputs`` (same shape), ``P`` ``params``, ``offs`` a block of flat offsets, ``m`` its mask."""
    X = tuple(x.contiguous() for x in inputs)
    out = torch.empty(X[0].shape, dtype=torch.float32, device=X[0].device)
    n = out.numel()
    _map_hook_kernel[(-(-n // block),)](X, out, tuple(float(p) for p in params), n, HOOK=hook, BLOCK=block)
    return out


# The runners reach the harnesses by these names: while a check runs, the public names scan_hook
# and map_hook refuse to serve an exercise that asks for the kernel itself (_refusing).
_harness_scan, _harness_map = scan_hook, map_hook


def _scan_with(n_inputs):
    """The runner of a prologue for scan_hook: the case's first ``n_inputs`` arguments are X, the rest P.
    A case whose kwargs hold ``past`` starts the scan there, a stand-in for what lies past the window
    (_started_from), and runs from 0 too: a prologue whose window's last step resets gives the same values
    from both, so where they differ, what lies past the window got in (SEEN["past_leaks"], _PAST_LEAKS)."""
    def run(fn, args, kw):
        X, P, past = args[:n_inputs], args[n_inputs:], kw.get("past", 0.0)
        from_0 = _harness_scan(fn, X, P) if past else None
        out = _started_from(past, _harness_scan, fn, X, P)
        if from_0 is not None and not torch.allclose(out, from_0, rtol=1e-6, atol=1e-6, equal_nan=True):
            SEEN["past_leaks"] = past
        return out
    return run


_PAST_LEAKS = ("Your window's last step does not reset, so the value past the window (here {:g}, where this case's "
               "scan starts) flows into the last step and, through it, into every step before it up to a reset: "
               "your prologue's scan gives other values from {:g} than from 0. Nothing of this window follows its "
               "last step, so the trace stops there: that step's reset keeps what lies past the window out, "
               "as a termination's keeps the next episode out." + _fix(
                   " Set the reset at the window's last step too, beside the other cuts of the trace: "
                   "... | (t == T - 1)."))


def _map_with(n_inputs):
    return lambda fn, args, kw: _harness_map(fn, args[:n_inputs], args[n_inputs:])


def _in_chunks(chunk_at):
    """The runner of an exercise that walks rows in chunks: under the interpreter, no
    ``tl.associative_scan`` of the student's may be wider than the case's chunk (one scan over a
    whole row needs no chunks and no carry: the exercise's point)."""
    def run(fn, args, kw):
        SEEN["widest_scan"] = SEEN["scalar_loads"] = 0
        out = fn(*args, **kw)
        chunk, widest, scalars = args[chunk_at], SEEN["widest_scan"], SEEN["scalar_loads"]
        steps = next((x.numel() for x in _leaves(args)), 0)  # the first input's (a hook's inputs, in hooked_scan)
        if INTERPRET and widest and scalars >= steps:  # (without a scan at all, _require says so)
            raise _RuleBroken(
                f"your kernel loaded one element at a time ({scalars} one-element tl.load calls for {steps} steps): "
                f"a loop over the steps, whatever else it scans. Walk each row in chunks of `chunk` steps, one "
                f"tl.load of CHUNK lanes per input and chunk, and scan them with tl.associative_scan")
        if INTERPRET and widest > chunk:
            raise _RuleBroken(
                f"your kernel ran a tl.associative_scan over {widest} steps at once where this case asks for chunks "
                f"of {chunk} steps: walk each row in chunks of `chunk` steps (a loop from the last chunk down, one "
                "tl.associative_scan of CHUNK lanes each), the carry from each chunk handed to the one before it")
        return out
    return run


HOOK_RULES = """
Inputs are float32 except the flags (bool: tl.load(...) != 0 gives the flag). Load one input as
tl.load(X[i] + offs, mask=m, other=0.0)."""
NEXT_STEP = """ The step after t is offs + 1 (mask it with m & (t + 1 < T))."""
# scan_hook's protocol: triples (a, b, reset), as the package's prologues. Every scan_hook task says so.
RESET_RULE = """
Triples (a, b, reset): reset, a bool per step, is where the trace is cut (an episode's end, the
window's last step): y_t = b_t there, selected, so nothing behind the step, NaN included, reaches
it; a keeps its usual value (it reaches no output there). A NaN inside b itself is yours: select NaN-able
inputs away in b with tl.where (gamma * (1 - term) * V' is 0 * NaN = NaN where V' is NaN)."""


def _past_case(past):
    """(the case name's suffix, the case's kwargs) of a case whose scan starts past the window (_scan_with)."""
    return (f", past the window: the scan starts from {past:g}", {"past": past}) if past else ("", {})


PAST_RULE = f"""
In the case marked "past the window", the checker's scan_hook starts from y_T = {PAST_WINDOW:g}, not 0, a
stand-in for what lies past the window: only a cut at the window's last step keeps it out, its reset
or a multiplier a = 0 there (0 * {PAST_WINDOW:g} = 0)."""


_COMPOSE_ORDER = ("the b part is wrong{}: is q applied first? (\"p first, then q\": y goes through p, "
                  "then what p gives through q)")
_COMPOSE_N1 = " (at n = 1 the A part cannot show its order, as 1 x 1 matrices commute: larger cases check it)"
_COMPOSE_A = ("1 x 1 matrices commute and n x n ones do not: the A part is in the wrong order" + _fix(
    ": the product's order is A2 @ A1 (y goes through A1 first), not A1 @ A2"))


def _compose_hint(args, i, got):
    """matrix_compose's usual slips: b1 not taken through q (or through q's matrix transposed), b2 left out, A
    elementwise or in the other order."""
    (A1, b1), (A2, b2) = args
    got = np.asarray(got)
    if i == 1 and got.shape == b1.shape and np.allclose(got, b1 + b2) and not np.allclose(A2 @ b1, b1):
        return _Whole("Your b is b1 + b2: p's vector part skips q, but q acts on all that p gives, b1 included."
                      + _fix(" Take b1 through q: b = A2 @ b1 + b2."))
    if i == 1 and got.shape == b1.shape and np.allclose(got, A2 @ b1) and not np.allclose(b2, 0):
        return _Whole("Your b is A2 @ b1: p's vector part goes through q, but q's own vector part b2 is missing: "
                      "q adds it after it acts." + _fix(" Add it: b = A2 @ b1 + b2."))
    if i == 1 and got.shape == b1.shape and A2.shape[0] > 1 and np.allclose(got, A2.T @ b1 + b2) \
            and not np.allclose(A2.T @ b1, A2 @ b1):
        return _Whole("Your b is b1 @ A2 + b2 (or A2.T @ b1 + b2): b1 went through q's matrix transposed. With a "
                      "vector on the left, @ multiplies by the matrix's columns, not its rows, which is why n = 1 "
                      "passed." + _fix(" Put the matrix first: b = A2 @ b1 + b2."))
    if i == 1 and got.shape == b1.shape and np.allclose(got, A1 @ b2 + b1):  # the operands swapped: q, then p
        return _COMPOSE_ORDER.format(_COMPOSE_N1 if A1.shape[0] == 1 else "") + _fix(
            ": apply p first, then q: b = A2 @ b1 + b2 (p's vector part through q's matrix, then q's own added), "
            "and A = A2 @ A1")
    if i == 1:
        return _COMPOSE_ORDER.format(_COMPOSE_N1 if A1.shape[0] == 1 else "")
    if got.shape == A1.shape and A1.shape[0] > 1 and np.allclose(got, A1 * A2):
        return _Whole("Your A is the elementwise product A1 * A2: at n = 1 it is the matrix product, which is why "
                      "n = 1 passed." + _fix(" Use the matrix product, @."))
    return _COMPOSE_A if _swapped_a(args, got) else None


def _swapped_a(args, got) -> bool:
    """matrix_compose's A is the product in the other order (right at n = 1, where the two agree)."""
    (A1, _), (A2, _) = args
    got = np.asarray(got)
    return got.shape == A1.shape and A1.shape[0] > 1 and np.allclose(got, A1 @ A2)


# ---- 00: the associative scan ---------------------------------------------------------------------
@_exercise("matrix_compose", "00_associative_scan", "numpy", stream=0, task="""
matrix_compose(p, q) -> (A, b): the composition "p first, then q" of two affine maps
y -> A_i @ y + b_i, with p = (A1, b1) and q = (A2, b2) NumPy arrays (n x n, n): combine's order.
""", scan=None, results=("A", "b"),
   hint=lambda args, i, bad, got, expected: _compose_hint(args, i, got))
def _matrix_compose_cases(d):
    rng = d.rng
    out = []
    for n in (1, d.int(3, 2, 5)):
        A1, A2 = rng.normal(size=(2, n, n))
        b1, b2 = rng.normal(size=(2, n))
        out.append((f"n={n}", ((A1, b1), (A2, b2)), {}, _key("matrix_compose", A1, b1, A2, b2)))
    return out



def _run_combine_arrays(fn, args, kw):
    """The student's triple, its a left out where the combined map resets (that a is never read)."""
    got = fn(*args, **kw)
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        raise AssertionError(f"combine_arrays must return the triple (a, b, k), got {_describe(got)}")
    (_, _, k1), (_, _, k2) = args
    a, b, k = (np.asarray(x) for x in got)
    return np.where(k1 | k2, 0.0, a) if a.shape == k1.shape else a, b, k


def _combine_arrays_hint(args, i, bad, got, expected):
    """combine_arrays' usual slips: a reset multiplied by 0, the first operand's reset winning or the
    operands' order swapped, the flag of one operand alone."""
    (a1, b1, k1), (a2, b2, k2) = args
    got = np.asarray(got)
    with np.errstate(all="ignore"):
        if i == 2 and got.shape == k2.shape:
            got = got != 0
            if (got == k2).all():
                return _Whole("Your flag is the second operand's alone. The combined map resets if either step "
                              "resets: a reset in the first operand still cuts what lies behind it." +
                              _fix(" k = k1 | k2."))
            if (got == (k1 & k2)).all():
                return _Whole("Your flag is set only where both operands reset: a run resets where either of "
                              "its steps does." + _fix(" k = k1 | k2, not k1 & k2."))
        if i != 1 or got.shape != b2.shape:
            return None
        if np.isnan(got[bad]).any() and (k2 & np.isnan(b1) & np.isnan(got)).any():
            return _Whole("Your b is NaN where the second operand resets and the first's b is a NaN: the reset "
                          "was a multiplication by 0 (0 * NaN = NaN), so the NaN behind the reset got through. "
                          "Select instead: the reset's b is b2 alone, with no arithmetic on b1." +
                          _fix(" b = np.where(k2, b2, b2 + a2 * b1)."))
        slips = {"your b selects on the first operand's flag. A reset drops what was applied before it: a reset "
                 "in the second operand drops the first map, while a reset in the first drops only what lay "
                 "before it, and the second map still applies" + _fix(": select on k2, b = np.where(k2, b2, "
                                                                       "b2 + a2 * b1)"): np.where(k1, b2, b2 + a2 * b1),
                 "where the first operand resets, your b is b1 alone: a reset in the first operand cuts what lay "
                 "before it, but the second map still applies to its output" + _fix(": b = np.where(k2, b2, b2 + a2 * "
                                                                                     "b1), with no select on k1"):
                     np.where(k2, b2, np.where(k1, b1, b2 + a2 * b1)),
                 "the operands' order is swapped (b1 + a1 * b2: the second map applied first). \"first\" is the "
                 "map applied first, so its output goes through the second" + _fix(": b = b2 + a2 * b1 where k2 "
                                                                                  "is clear"):
                     np.where(k1, b1, b1 + a1 * b2)}
    for what, slip in slips.items():
        if _is_slip(got, slip, expected):
            return _Whole(f"This is the combine with a slip: {what}.")
    return None


@_exercise("combine_arrays", "00_associative_scan", "numpy", stream=35, task="""
combine_arrays(first, second) -> (a, b, k): section 4's combine on whole arrays. first and second
are triples (a, b, k) of NumPy arrays of one shape (a, b float64, k bool), first the map applied
first (the order rule); element by element, a step with k set is the map y -> b, else y -> a y + b.
Return the combined triple elementwise, with np.where: select, never multiply by 0 (b1 may hold a
NaN where the second operand resets). The checker compares k and b everywhere, and a where k is
clear (the a of a reset is never read).
""", scan=None, results=("a", "b", "k"), run=_run_combine_arrays,
   hint=lambda args, i, bad, got, expected: _combine_arrays_hint(args, i, bad, got, expected))
def _combine_arrays_cases(d):
    rng = d.rng
    out = []
    for what in ("no resets", "resets in the second operand", "a NaN in the first operand behind a reset",
                 "resets in both operands"):
        shape = (d.int(2, 2, 4), d.int(5, 3, 8))
        a1, a2 = rng.uniform(0.3, 1.0, (2,) + shape)
        b1, b2 = rng.normal(size=(2,) + shape)
        k1 = _flags(rng, shape, 0.4 if what == "resets in both operands" else 0.0)
        k2 = _flags(rng, shape, 0.0 if what == "no resets" else 0.4)
        if what.startswith("a NaN"):
            k2[0, 1] = True
            b1[0, 1] = b1[-1, -1] = np.nan  # behind a reset, where the select drops it; and one that gets through
            k2[-1, -1] = False
        first, second = (a1, b1, k1), (a2, b2, k2)
        a, b, k = _key("combine_arrays", first, second)
        out.append((what, (first, second), {}, (np.where(k, 0.0, a), b, k)))
    return out


@_checker_only
def _chunked_reset_reference(a, b, reset, chunk, carry_at="first", select=True, order="last first",
                             swapped=False, carry_in_out=False):
    """00's chunked reverse scan with resets: chunk k holds steps k * chunk .. (k + 1) * chunk - 1;
    the chunks from the last in time (``order``), each step's map composed from the chunk's last step
    down (``swapped``: step t's map applied first, then the later run's), y_t = B_t where K_t
    (``select``; else B_t + A_t * carry), then the carry: y at the chunk's first step (``carry_at``: or
    its last). Returns (y, carry_in); ``carry_in_out``: carry_in holds the carry the chunk hands on."""
    T = a.shape[-1]
    y, carry_in, carry = np.zeros(T), np.zeros(T), 0.0
    starts = list(range(0, T, chunk))
    for start in (reversed(starts) if order == "last first" else starts):
        end = min(start + chunk, T)
        A, B, K = 1.0, 0.0, False
        for t in reversed(range(start, end)):
            A, B, K = (a[t], b[t], True) if reset[t] else (A * a[t], B + A * b[t], K) if swapped else \
                (a[t] * A, b[t] + a[t] * B, K)
            y[t] = B if (K and select) else B + A * carry
            carry_in[t] = carry
        carry = y[start] if carry_at == "first" else y[end - 1]
        if carry_in_out:
            carry_in[start:end] = carry
    return y, carry_in


_CHUNKED_RESET_SLIPS = {  # what the answer is, where it is the chunked scan with a slip
    "the carry is read at the chunk's last step in time. In a reverse scan the value that enters the chunk "
    "before is y at this chunk's first step in time: the step right after the chunk before ends"
    + _fix(": carry = y[start] once the chunk is done"): dict(carry_at="last"),
    "the chunks are walked from the first in time: a reverse scan starts from the window's end, where nothing "
    "comes after (carry 0)" + _fix(": walk the chunks from the last in time to the first"): dict(order="first first"),
    "step t's map and the run of later steps are composed in the wrong order (B + A * b[t]: step t's map applied "
    "first). Going back from the chunk's end, the run of later steps is applied first, then step t's map (the "
    "order rule, section 3)" + _fix(": with section 4's combine_np, run = combine_np(run, step), the run first "
                                     "(it keeps the reset); without a reset at step t, that is A, B = a[t] * A, "
                                     "b[t] + a[t] * B"): dict(swapped=True),
    "your carry_in holds the carry that each chunk hands on (y at its own first step), not the one that entered "
    "it: carry_in[t] is the value that came in from the chunk after, the carry as it was before this chunk "
    "replaced it (0.0 for the last chunk)" + _fix(": set carry_in for the chunk's steps before the line that "
                                                   "updates the carry"): dict(carry_in_out=True),
}


def _chunked_reset_hint(args, i, bad, got, expected, whole=None):
    """The usual slips that ``got`` is everywhere (a reset multiplied by 0, or a carry read where K is set, is
    left to the NaN hint: they differ only where a NaN lies behind a reset); else, where y goes wrong first at
    a step whose chunk's carry_in is wrong too (``whole``: y and carry_in), the carry that entered it."""
    for what, slip in _CHUNKED_RESET_SLIPS.items():
        with np.errstate(all="ignore"):
            other = _chunked_reset_reference(*args, **slip)[i]
        if _is_slip(np.asarray(got), other, expected):
            return _Whole(f"This is the chunked scan with a slip: {what}.")
    if i == 1 and bad.any():  # (y, compared first, is right)
        return ("Your y is right in this case, but carry_in is not. carry_in[t] is the carry that entered step t's "
                "chunk: y at the first step of the chunk after it in time (0.0 into the last chunk). Where your y "
                "is right all the same, the resets kept that carry out, or your y used another carry than the one "
                "you recorded.")
    if i != 0 or not isinstance(whole, (tuple, list)) or len(whole) != 2 or not bad.any():
        return None
    try:
        theirs = np.asarray(whole[1], dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        return None
    with np.errstate(all="ignore"):
        right = _chunked_reset_reference(*args)[1]
    t = int(np.flatnonzero(bad)[-1])  # where the error starts: every later step's y is right
    if theirs.shape != right.shape or np.isclose(theirs[t], right[t], rtol=1e-5, atol=1e-5, equal_nan=True):
        return None
    return (f"The carry that entered this chunk is wrong: carry_in[{t}] expected {_num(right[t])}, got "
            f"{_num(theirs[t])}, while every later step's y is right. The carry into a chunk is y at the first step "
            "of the chunk after it in time, handed on once that chunk is done (0.0 into the last chunk).")


@_exercise("chunked_reset_scan", "00_associative_scan", "numpy", stream=32, task="""
chunked_reset_scan(a, b, reset, chunk) -> (y, carry_in): the reverse scan y_t = b_t + a_t y_{t+1}
from y_T = 0, with resets (y_t = b_t where reset[t]: nothing after step t is read), computed as the
kernel does (sections 4 and 6): chunk k holds steps k * chunk to (k + 1) * chunk - 1 (the last one
may be shorter); walk the chunks from the last in time to the first; inside a chunk compose each
step's map from the chunk's last step down, with the reset combine, into (A_t, B_t, K_t); then
y_t = B_t where K_t is set, else B_t + A_t * carry; the next carry is y at the chunk's first step.
a, b: 1-D float64 NumPy arrays of T steps (b may hold a NaN or inf in a later episode); reset:
1-D bool; chunk >= 1. Return y and carry_in, both (T,) float64: carry_in[t] is the carry that
entered step t's chunk (0.0 for the last chunk). Select, never multiply by 0: a NaN behind a reset
must not reach an earlier step. What is graded is those two arrays, y and carry_in, and nothing
else: the checker cannot see how you computed them. A plain reverse loop over the steps, with
carry_in filled in afterwards from y, would pass and skip the point: write the chunk plan above,
as the kernel will run it.
""", scan="reverse", results=("y", "carry_in"),
   window_end="the row's last step (the last chunk's carry is 0: nothing comes after the row)",
   hint=lambda args, i, bad, got, expected, whole=None: _chunked_reset_hint(args, i, bad, got, expected, whole),
   ordinary="Step t is ordinary (no reset, not a chunk's last step), and every later step is right, so the "
            "error is in step t itself: check its map composed with the run of later steps to the chunk's end "
            "(the combine's order: step t's map is applied after that run's) and the carry it reads.",
   select_fix=" Select instead of multiplying, in the combine and on the carry: np.where(K, B, B + A * carry), "
              "never B + (1 - K) * A * carry.")
def _chunked_reset_cases(d):
    rng = d.rng
    out = []
    for what, T, chunk in (("no resets", d.int(6, 5, 9), d.int(4, 2, 4)),
                           ("resets, one at a chunk's last step", d.int(13, 10, 20), d.int(4, 3, 5)),
                           ("a NaN and an inf behind resets, one across a chunk boundary", d.int(12, 10, 16), 4),
                           ("many chunks, random resets", d.int(50, 30, 70), d.int(8, 5, 9))):
        a, b = rng.uniform(0.5, 1.0, T), rng.normal(size=T)
        reset = _flags(rng, T, 0.0 if what == "no resets" else 0.2)
        if what.startswith("resets"):
            reset[2 * chunk - 1] = True  # the last step of chunk 1: the carry from chunk 2 must not enter
        if what.startswith("a NaN"):
            reset[:] = False
            reset[chunk - 1], b[chunk] = True, np.nan  # chunk 1's first step is NaN: the carry into chunk 0 is NaN
            reset[chunk + 1], b[chunk + 2] = True, np.inf  # inside chunk 1, behind a reset
        last = np.zeros(T, dtype=bool)
        last[chunk - 1:T - 1:chunk] = True  # each chunk's last step but the window's: a later chunk's carry enters
        with np.errstate(all="ignore"):
            expected = _chunked_reset_reference(a, b, reset, chunk)
        out.append((f"{what}, T = {T}, chunk = {chunk}", (a, b, reset, chunk), {}, expected,
                    {"an episode end (a reset: y_t = b_t, nothing after it read, the carry included)": reset,
                     "the last step of a chunk in time, where the carry from the chunk after it enters": last}))
    return out


# ---- 00b: Triton from zero ------------------------------------------------------------------------
_DONE_ELEMENTWISE = "an episode end (terminated: V(s_{t+1}) is not read there)"
_PADDING_IDENTITY = ("the row's last step, with padding lanes after it in its block where the block is wider than "
                     "what is left of the row: the lanes past T must be the identity (1, 0), else their maps "
                     "compose into the last step's." + _fix(" Set a = tl.where(m, a, 1.0) and b = 0 there (loaded "
                                                            "with other=0.0, or tl.where(m, b, 0.0))."))


_STRIDED = ("Most elements are wrong: check the addresses. Element (t, b) of this case's rewards is at "
            "X + t * {0} + b * {1} (x.stride(0), x.stride(1)), terminated's at X + t * {2} + b * {3}, the output's "
            "at its own.")
_ROW_END = "the row's last step (t = T - 1: nothing after it, G_T = 0)"  # where no bootstrap is read


def _padded_last_step(done, block):
    """The mark for the row's last step where padding lanes may follow it in its block (the row's
    length not a multiple of ``block``, None: any block, a one-block scan's own choice) and no
    episode end cuts what they would compose into it."""
    T = done.shape[-1]
    at = np.zeros(done.shape, dtype=bool)
    if block is None or T % block:
        at[..., -1] = ~done[..., -1]
    return {_PADDING_IDENTITY: at}


@_checker_only
def _td_target_reference(r, v, done, gamma):
    """r_t + gamma V(s_{t+1}), r_t alone where done_t (V behind it never read)."""
    return r + np.where(done, 0.0, gamma * np.where(done, 0.0, v))


def _td_target_hint(args, got, expected):
    """The select's branches swapped: V(s_{t+1}) read where the episode ended, dropped where it goes on."""
    r, v, done, gamma = _as_numpy(tuple(args))
    with np.errstate(all="ignore"):
        swapped = r + np.where(done, gamma * v, 0.0)
    if _is_slip(got, swapped, expected):
        return _Whole("Your tl.where's two branches are swapped: your targets add gamma * V(s_{t+1}) where the "
                      "episode ended and leave it out where it goes on." + _fix(
                          " tl.where(cond, x, y) gives x where cond is true: tl.where(term, 0.0, gamma * v)."))
    return None


@_exercise("td_target_kernel", "00b_triton_from_zero", "kernel", stream=1, task="""
td_target_kernel(rewards, next_values, terminated, gamma) -> targets: r_t + gamma * (1 - term_t) *
V(s_{t+1}) elementwise, computed by your Triton kernel. Inputs are 1-D tensors of any length
(float32 rewards and next_values, bool terminated); gamma a float. Where term_t, V(s_{t+1}) is
never to be read (it may be NaN: the next episode's first state, or none): select it away with
tl.where, do not multiply it by (1 - term_t), as 0 * NaN = NaN.
""", needs="kernel", scan=None, recompute=lambda r, v, done, gamma: _td_target_reference(r, v, done, gamma),
   hint=lambda args, i, bad, got, expected: _td_target_hint(args, got, expected))
def _td_target_cases(d):
    rng, gamma = d.rng, d.real(0.9, 0.8, 0.99)
    out = []
    for n, nan in ((d.int(8, 2, 16), False), (1, False), (d.int(1000, 300, 1500), False), (d.int(16, 4, 32), True)):
        r, v = rng.normal(size=(2, n))
        done = _flags(rng, n, 0.2)
        expected = r + gamma * (1 - done) * v
        if nan:  # the value behind an episode end: never read
            done[d.int(5, 0, n - 1)] = True
            v, expected = np.where(done, np.nan, v), np.where(done, r, expected)
        out.append((f"{n} elements" + (", NaN next values behind the episode ends" if nan else ""),
                    (_t(r), _t(v), _t(done, torch.bool), gamma), {}, expected, {_DONE_ELEMENTWISE: done}))
    return out


def _composed(a, b, k, later_first=True, reverse=True):
    """Each step's composed map (A, B, K) to the row's end (``reverse``; else from its start), the combine
    applying the run that came before in scan order first (``later_first`` False: its operands swapped)."""
    A, B, K = (np.empty(a.shape), np.empty(a.shape), np.zeros(a.shape, bool))
    acc = None
    for t in (reversed(range(a.shape[-1])) if reverse else range(a.shape[-1])):
        x = (a[..., t], b[..., t], k[..., t])
        if acc is not None:
            (a1, b1, k1), (a2, b2, k2) = (acc, x) if later_first else (x, acc)
            x = (np.where(k2, a2, a2 * a1), np.where(k2, b2, b2 + a2 * b1), k1 | k2)
        acc = x
        A[..., t], B[..., t], K[..., t] = acc
    return A, B, K


def _combine_seen_swapped() -> bool:
    """Whether the interpreter saw the student's combine, run on two maps, apply them in the wrong order."""
    got_pq = SEEN["combine"]  # the combine on two maps (the interpreter): it tells where the values cannot
    (a1, b1, _), (a2, b2, _) = TWO_MAPS
    return got_pq is not None and len(got_pq) >= 2 and np.allclose(got_pq[:2], (a2 * a1, b1 + a1 * b2))  # q ⊕ p


def _swapped_hint(resets):
    """The hint for a combine whose operands are swapped (the maps applied in the wrong order)."""
    return _Whole("Your combine applies the two maps in the wrong order: the first operand, (a1, b1), is applied "
                  "first (in a reverse scan, the run later in time), then the second, (a2, b2) (the order rule, "
                  "notebook 00, section 3)." + _fix(
                      " Select on k2, the second operand's flag: tl.where(k2, a2, a2 * a1), tl.where(k2, b2, b2 + a2 * "
                      "b1)." if resets else " Compose them as (a2 * a1, b2 + a2 * b1)."))


def _order_hint(r, done, gamma, carry, resets, got, expected):
    """The returns' two slips of direction, where the answer is one: a combine whose operands are swapped
    (the maps applied in the wrong order), or a forward scan; ``carry`` enters where the scan starts. With
    ``resets``, an episode end is a reset flag (00c on); without, the pairs are 00b's (gamma, r_t), and
    ``done`` is all clear (_with_no_ends)."""
    swapped = _swapped_hint(resets)
    if _combine_seen_swapped():
        return swapped
    a = np.full(r.shape, gamma) if resets else gamma * (1.0 - done)
    k = done if resets else np.zeros(r.shape, bool)
    forwards = "Your scan runs forwards (reverse=False): a return is built from the row's end"
    with np.errstate(all="ignore"):
        for later_first, reverse, drops_carry, said in (
                (False, True, False, swapped),
                (True, False, False, forwards + _fix(", so scan with reverse=True") + "."),
                (True, False, True, forwards + ". (And last_value is left out: it reaches step t through A_t.)"
                 + _fix(" Scan with reverse=True, then G_t = B_t + A_t * last_value."))):
            if drops_carry and carry == 0.0:
                continue  # (no last_value in this exercise: the case above)
            A, B, K = _composed(a, r, k, later_first, reverse)
            slip = np.where(K, B, B + A * (0.0 if drops_carry else carry))
            finite = np.isfinite(slip) & np.isfinite(expected)  # (where both are NaN, other slips look alike)
            if _is_slip(got, slip, expected) and not np.allclose(slip[finite], expected[finite], rtol=1e-5,
                                                                  atol=1e-5):
                return _Whole(said)
    return None


def _last_value_hint(r, done, gamma, last, got, expected):
    """block_scan's slips with last_value: left out (G_T = 0), or added to every B_t undiscounted or times gamma."""
    B = reference.discounted_returns(r, gamma=gamma, terminated=done)  # the composed B_t: G_T = 0
    for slip, said in ((B, "Your returns leave last_value out: they are the returns of a row that ends with G_T = 0 "
                           "(or padding lanes past T with a = 0 cut it off)." + _fix(
                               " G_T = last_value reaches step t through A_t, the product of the discounts from t "
                               "to the row's end: G_t = B_t + A_t * last_value, with the padding lanes (1, 0).")),
                       (B + last, "Your returns add last_value to every step undiscounted (B_t + last_value)." + _fix(
                           " It reaches step t through A_t, the product of the discounts from t to the row's end: "
                           "G_t = B_t + A_t * last_value.")),
                       (B + gamma * last, "Your returns add last_value to every step discounted once (B_t + gamma * "
                        "last_value), where it is discounted once for every step from t to the row's end: gamma "
                        "stands where the scanned A_t belongs, or your combine's a part keeps a2 alone (A_t = a_t)."
                        + _fix(" G_t = B_t + A_t * last_value, with a2 * a1 as the combine's a part."))):
        if _is_slip(got, slip, expected):
            return _Whole(said)
    return None


def _one_chunk_order_hint(args, resets, got, expected, tiled=False):
    """_order_hint on a case whose rows fit one chunk (no carry enters them: the scan starts from 0); on
    rows of several chunks, the chunks walked first to last. ``tiled``: a program owns a tile of rows."""
    r, done, gamma, chunk = _as_numpy(tuple(args))
    if r.shape[-1] <= chunk:
        return _order_hint(r, done, gamma, 0.0, resets, got, expected)
    if _combine_seen_swapped():
        return _swapped_hint(resets)
    return _chunks_forwards_hint(r, done, gamma, chunk, got, expected) or \
        _carry_at_wrong_step_hint(r, done, gamma, chunk, got, expected, tiled) or \
        _carry_unscaled_hint(r, done, gamma, chunk, got, expected) or \
        _carry_from_b_hint(r, done, gamma, chunk, got, expected)


def _carry_from_b_hint(r, done, gamma, chunk, got, expected):
    """The carry handed on is the scanned B at the chunk's first step (carry = b_s there), not G there,
    B + A * carry_in: it leaves out the carry that entered the chunk. Said after the step's marks (the
    first wrong step is a chunk's last, where that carry arrives)."""
    T = r.shape[-1]
    slip, carry = np.empty(r.shape), np.zeros(r.shape[:-1])
    with np.errstate(all="ignore"):
        for c in reversed(range(-(-T // chunk))):
            steps = slice(c * chunk, min(T, (c + 1) * chunk))
            slip[..., steps] = reference.discounted_returns(r[..., steps], gamma=gamma, terminated=done[..., steps],
                                                            bootstrap_value=carry)
            carry = reference.discounted_returns(r[..., steps], gamma=gamma, terminated=done[..., steps])[..., 0]
    if not _is_slip(got, slip, expected):
        return None
    return ("Your carry leaves out the carry that entered this chunk: the value you hand on is the scanned B at the "
            "chunk's first step, the chunk's own rewards alone. G there is B + A * carry_in, carry_in the carry that "
            "entered the chunk: each chunk's values are right, but the carry it hands to the chunk before "
            "misses A * carry_in."
            + _fix(" Hand on G at the chunk's first step, the value you store there (b_s + a_s * carry), not b_s."))


def _chunk_walk(r, chunk, values, handed_on, initial=0.0):
    """A chunked reverse scan's values with a slip in its carry: each chunk's ``values(steps, carry)``
    from the carry handed in (``initial`` into the last chunk), last chunk first; the carry handed on
    is the value at step ``handed_on(c)`` of chunk ``c`` (0 where that step is past the row's end)."""
    T = r.shape[-1]
    out, carry = np.empty(r.shape), np.full(r.shape[:-1], initial)
    with np.errstate(all="ignore"):
        for c in reversed(range(-(-T // chunk))):
            steps = slice(c * chunk, min(T, (c + 1) * chunk))
            out[..., steps] = values(steps, carry)
            at = handed_on(c)
            carry = out[..., at] if at < T else np.zeros(r.shape[:-1])
    return out


def _carry_unscaled_hint(r, done, gamma, chunk, got, expected):
    """The carry added to every step of the chunk as it is, or times gamma once: not times A_t, the
    composed factor from step t to the chunk's end."""
    for scale, said in ((1.0, "added as it is"), (gamma, "times gamma once")):
        slip = _chunk_walk(r, chunk, lambda steps, carry: reference.discounted_returns(
            r[..., steps], gamma=gamma, terminated=done[..., steps]) + scale * carry[..., None], lambda c: c * chunk)
        if _is_slip(got, slip, expected):
            cut = " (and cut by an episode end between)" if done.any() else ""  # (00b's rows have none)
            return _Whole(f"Your carry enters every step of the chunk {said}. It is G at the next chunk's first "
                          f"step: it reaches step t discounted once for every step between{cut}, G_t = B_t + A_t * "
                          "carry." + _fix(" Multiply the carry by the scanned A_t."))
    return None


def _carry_at_wrong_step_hint(r, done, gamma, chunk, got, expected, tiled=False):
    """The carry handed on taken at another step of the chunk than its first: its last first (00b's chunked
    cumsum's carry, copied into the reverse scan), then every step between."""
    def walk(k):  # from the carry handed in; the carry handed on is G at step c * chunk + k
        return _chunk_walk(r, chunk, lambda steps, carry: reference.discounted_returns(
            r[..., steps], gamma=gamma, terminated=done[..., steps], bootstrap_value=carry), lambda c: c * chunk + k)
    if _is_slip(got, walk(chunk - 1), expected):
        return _Whole("Your carry is G at the chunk's last step, as the chunked cumsum's is. In a reverse scan the "
                      "value that enters the chunk before is G at this chunk's first step in time, t = c * CHUNK: the "
                      "step right after the chunk before ends." + _fix(
                          " Pick the carry with tl.where(t == c * CHUNK, g, 0.0), summed" + (
                              " along the steps: t[None, :] and tl.sum(..., axis=1), one carry per row of the tile."
                              if tiled else ".")))
    for k in range(1, chunk - 1):
        if _is_slip(got, walk(k), expected):
            return _Whole(f"Your carry is G at step c * CHUNK + {k} of the chunk, not at its first step in time: the "
                          "value that enters the chunk before is G at t = c * CHUNK, the step right after that chunk "
                          "ends." + _fix(" Compare t with c * CHUNK itself when you pick the carry."))
    return None


def _chunks_forwards_hint(r, done, gamma, chunk, got, expected):
    """The chunks walked first to last (00b's chunked cumsum's order): the row's first chunk then gets no
    carry, its values those of the chunk alone, and the last chunk gets one from the chunks before it."""
    T = r.shape[-1]
    first, last = slice(0, chunk), slice((T - 1) // chunk * chunk, T)
    alone = reference.discounted_returns(r[..., first], gamma=gamma, terminated=done[..., first])
    close = lambda x, y: np.allclose(x, y, rtol=1e-5, atol=1e-5, equal_nan=True)  # noqa: E731
    if close(alone, expected[..., first]) or not close(got[..., first], alone) or close(got[..., last], expected[..., last]):
        return None
    return _Whole("Your chunks run first to last: the row's first chunk was scanned as if nothing came after it, and "
                  "its last chunk was handed a carry from the chunks before it. A return is built from the row's "
                  "end." + _fix(" Walk the chunks from the last one, c = n_chunks - 1 - i, the carry going from "
                                "chunk c to chunk c - 1."))


def _with_no_ends(args):
    """00b's arguments (rewards, gamma, ...) as the hint helpers take them, (rewards, done, gamma, ...),
    done all clear: 00b's scans have no episode ends (00c adds them, as resets)."""
    r, *rest = args
    return (r, np.zeros(tuple(r.shape), bool), *rest)


def _block_scan_hint(args, got, expected):
    r, done, gamma, last = _as_numpy(_with_no_ends(tuple(args)))
    return _order_hint(r, done, gamma, float(last), False, got, expected) or \
        _last_value_hint(r, done, gamma, float(last), got, expected)


@_exercise("block_scan", "00b_triton_from_zero", "kernel", stream=2, task="""
block_scan(rewards, gamma, last_value) -> returns: G_t = r_t + gamma * G_{t+1} for one row (a 1-D
float32 tensor of length T <= 1024), G_T = last_value (a float), in one program with one
tl.associative_scan (no loop over the steps).
""", needs="scan", recompute=lambda r, gamma, last: reference.discounted_returns(
    r, gamma=gamma, bootstrap_value=np.float64(last)), one_block=True,
    hint=lambda args, i, bad, got, expected: _block_scan_hint(args, got, expected))
def _block_scan_cases(d):
    rng, gamma, last = d.rng, d.real(0.9, 0.8, 0.99), d.real(1.5, -2.0, 2.0)
    out = []
    for T, what in ((d.int(5, 2, 9), "a short row"), (d.int(64, 20, 100), "a longer row"), (1, "one step"),
                    (d.int(1000, 600, 1024), "a long row")):
        r = rng.normal(size=T)
        expected = reference.discounted_returns(r, gamma=gamma, bootstrap_value=np.float64(last))
        out.append((f"{what}, T={T}, last_value {last}", (_t(r), gamma, last), {}, expected,
                    _padded_last_step(np.zeros(T, bool), None if T < 1024 else 1024)))
    return out


@_exercise("chunked_scan", "00b_triton_from_zero", "kernel", stream=3, task="""
chunked_scan(rewards, gamma, chunk) -> returns: G_t = r_t + gamma * G_{t+1}, G_T = 0, for a
contiguous (B, T) float32 batch of any T: one program per row walking chunks of `chunk` steps (a
power of two, a tl.constexpr) from the end, the carry G_{t+1} handed from chunk to chunk.
""", needs="scan", run=_in_chunks(2), recompute=lambda r, gamma, chunk: reference.discounted_returns(r, gamma=gamma),
    key="chunks", window_end=_ROW_END,
    hint=lambda args, i, bad, got, expected: _one_chunk_order_hint(_with_no_ends(tuple(args)), False, got, expected))
def _chunked_scan_cases(d):
    rng, gamma = d.rng, d.real(0.9, 0.8, 0.99)
    out = []
    for shape, what, chunk in (((d.int(2, 1, 3), d.int(5, 2, 64)), "one chunk", 64),
                               ((d.int(3, 2, 4), d.int(300, 129, 330)), "rows of several chunks", 64),
                               ((d.int(3, 2, 3), d.int(700, 400, 720)), "longer rows, in more chunks", 128)):
        r = rng.normal(size=shape)
        out.append((f"{what}, shape {shape}, chunk {chunk}", (_t(r), gamma, chunk), {},
                    reference.discounted_returns(r, gamma=gamma),
                    {**_carry_steps(shape, chunk), **_padded_last_step(np.zeros(shape, bool), chunk)}))
    return out


# ---- 00c: episodes and hooks ----------------------------------------------------------------------
@_exercise("reset_scan", "00c_episodes_and_hooks", "kernel", stream=13, task="""
reset_scan(rewards, terminated, gamma, chunk) -> returns: G_t = r_t + gamma * G_{t+1}, G_T = 0, and
G_t = r_t where term_t: 00b's chunked_scan with episode ends as resets (terminated: bool, the
rewards' (B, T) shape). The combine takes triples (a, b, reset) and selects with tl.where where a
reset ends the episode, and the carry is selected away the same way, so a NaN or inf reward stays
inside its own episode (within a chunk and across chunks).
""", needs="scan", run=_in_chunks(3), recompute=lambda r, done, gamma, chunk: reference.discounted_returns(
    r, gamma=gamma, terminated=done), window_end=_ROW_END,
    select_fix=" Select instead of multiplying, in the combine and on the carry: tl.where(k_s, b_s, b_s + a_s * "
               "carry), never b_s + (1 - k_s) * a_s * carry.",
    hint=lambda args, i, bad, got, expected: _one_chunk_order_hint(args, True, got, expected))
def _reset_scan_cases(d):
    rng, gamma = d.rng, d.real(0.9, 0.8, 0.99)
    out = []
    for shape, chunk, what in (
            ((1, d.int(8, 6, 16)), 64, "a NaN after an episode end, one chunk"),
            ((2, d.int(300, 270, 330)), 64, "NaN and inf after episode ends, within and across chunks")):
        r, done = rng.normal(size=shape), _flags(rng, shape, 0.02)
        end = d.int(3, 0, min(shape[1], 64) - 3)  # an episode end in the first chunk, and a bad reward after it
        done[:, end] = True
        r[:, d.int(6, end + 1, min(shape[1], 64) - 1)] = np.nan
        if shape[1] > 64:  # an end in chunk 1, then a NaN in a later chunk; another end, then an inf in chunk 4
            end1 = d.int(100, 64, 120)
            nan1 = d.int(130, 128, 180)
            end2, inf1 = d.int(190, nan1 + 1, 250), d.int(260, 256, shape[1] - 1)
            done[:, [end1, end2]] = True
            done[0, 128:nan1], done[1, 256:inf1] = False, False  # their episodes reach the chunks' first steps: the
            r[0, nan1], r[1, inf1] = np.nan, np.inf                # carries into the chunks before are NaN and inf
            done[0, -1] = True  # and an episode end at the window's last step
        out.append((f"{what}, shape {shape}, chunk {chunk}", (_t(r), _t(done, torch.bool), gamma, chunk), {},
                    reference.discounted_returns(r, gamma=gamma, terminated=done),
                    {DONE: done, **_carry_steps(shape, chunk), **_reset_before_the_carry(done, chunk)}))
    return out


def _reset_before_the_carry(done, chunk):
    """The steps whose composed reset flag is set (an episode end at or after the step, in its chunk)
    in a chunk that a carry enters (every chunk but a row's last): G_t there must not read the carry."""
    flag = np.zeros(done.shape, dtype=bool)
    T = done.shape[-1]
    for start in range(0, T, chunk):
        seg = done[..., start:start + chunk]
        flag[..., start:start + chunk] = np.flip(np.logical_or.accumulate(np.flip(seg, -1), -1), -1)
    flag[..., (T - 1) // chunk * chunk:] = False  # the last chunk: no carry enters it
    return {"in a chunk that a carry enters, with the composed reset flag set (an episode end at or after it in "
            "its chunk: does your G_t read the carry there?). A factor 0 on the carry does not keep out a NaN or inf "
            "carry, whether A_t is 0 (a_t = gamma * (1 - term)) or a (1 - reset) multiplies it: 0 * NaN = NaN" + _fix(
                ": where the composed reset flag is set, G_t must not read the carry (G_t = B_t there, selected with "
                "tl.where, not B_t + A_t * carry)"): flag}


@_exercise("gae_kernel", "00c_episodes_and_hooks", "kernel", stream=4, task="""
gae_kernel(rewards, values, next_values, terminated, gamma, lam, chunk) -> advantages, (B, T) float32
and bool terminated: your reset_scan (chunks of `chunk` steps) with GAE's prologue, the
triple (a_t, b_t, reset_t) = (gamma*lam, delta_t, term_t) with delta_t = r_t + gamma (1 - term_t)
V(s_{t+1}) - V(s_t) written as a select (next_values behind a termination may be NaN), and its
epilogue storing the advantage Â_t (y_t, not the scan's A_t). Contiguous inputs.
""", needs="scan", run=_in_chunks(6), recompute=lambda r, v, nv, done, gamma, lam, chunk: reference.gae(
    r, v, next_values=nv, terminated=done, gamma=gamma, lambda_=lam)[0], hint=lambda *a: _gae_kernel_hint(*a))
def _gae_kernel_cases(d):
    rng, gamma, lam = d.rng, d.real(0.9, 0.8, 0.99), d.real(0.8, 0.5, 0.95)
    out = []
    for i, (shape, p) in enumerate((((d.int(2, 1, 3), d.int(7, 2, 20)), 0.0),
                                    ((d.int(3, 2, 3), d.int(600, 300, 640)), 0.05),
                                    ((2, d.int(300, 200, 330)), 0.05))):
        r, v, nv = rng.normal(size=(3, *shape))
        done = _flags(rng, shape, p)
        done[-1, -1] |= i == 1  # a termination at the window's last step: delta = r - V there
        what = f"shape {shape}, chunk 64" + (", episode ends" if p else "")
        if i == 2:  # NaN where nothing may read it: behind terminations, and in later episodes (later chunks)
            done[:, d.int(100, 64, 127)] = True
            nv, r = np.where(done, np.nan, nv), r.copy()
            r[:, d.int(150, 128, shape[1] - 1)] = np.nan
            what += ", NaN next values behind terminations and a NaN reward after one"
        adv, _ = reference.gae(r, v, next_values=nv, terminated=done, gamma=gamma, lambda_=lam)
        out.append((what, (_t(r), _t(v), _t(nv), _t(done, torch.bool), gamma, lam, 64), {}, adv,
                    {DONE: done, **_carry_steps(shape)}))
    # gamma * lam near 1 and short chunks with no episode end: a carry taken from the wrong value shows
    r, v, nv = rng.normal(size=(3, 2, 100))
    adv, _ = reference.gae(r, v, next_values=nv, gamma=0.99, lambda_=0.95)
    out.append(("shape (2, 100), chunk 16, no episode ends, gamma 0.99, lambda 0.95",
                (_t(r), _t(v), _t(nv), _t(np.zeros(r.shape, bool), torch.bool), 0.99, 0.95, 16), {}, adv,
                {**_carry_steps(r.shape, 16)}))
    return out


def _gae_with(r, v, nv, cut, dropped, decay, discount):
    """GAE's advantages with the trace decaying by ``decay`` and cut where ``cut``, and delta_t =
    r_t + discount V(s_{t+1}) - V(s_t) with the bootstrap dropped where ``dropped``: the answer, and each
    slip of gae_pairs' and gae_kernel's hints, from one formula."""
    return reference.linear_scan(np.where(cut, 0.0, decay), r + np.where(dropped, 0.0, discount * nv) - v)


def _gae_kernel_hint(args, i, bad, got, expected):
    """GAE with a wrong trace decay a_t (λ, γ, 1 or 0 in place of γλ) or δ_t without γ on V(s_{t+1}),
    where the answer is that."""
    r, v, nv, term, gamma, lam, _ = _as_numpy(tuple(args))
    with np.errstate(all="ignore"):
        def advantages(decay, discount=gamma, boots_at_ends=False):
            return _gae_with(r, v, nv, term, term & (not boots_at_ends), decay, discount)
        for decay, discount, boots, said in (
                (lam, gamma, False, "your trace decays by λ per step, not γλ" + _fix(
                    ": a_t = γλ, the discount included")),
                (gamma, gamma, False, "your trace decays by γ per step, not γλ" + _fix(": a_t = γλ, λ included")),
                (1.0, gamma, False, "your trace does not decay" + _fix(": a_t = γλ, not 1")),
                (0.0, gamma, False, "your trace stops at every step (the advantage is δ_t alone)" + _fix(
                    ": a_t = γλ, not 0")),
                (gamma * lam, 1.0, False, "your δ_t has no γ on V(s_{t+1})" + _fix(
                    ": δ_t = r_t + γ V(s_{t+1}) - V(s_t)")),
                (gamma * lam, gamma, True, "your δ_t at a termination still reads γ V(s_{t+1}), added as it is or "
                 "multiplied by 0: a terminal state has no next value, and 0 × NaN is NaN" + _fix(
                     ": select it away there (tl.where), δ_t = r_t - V(s_t)"))):
            if _is_slip(got, advantages(decay, discount, boots), expected):
                return _Whole(said[0].upper() + said[1:] + ".")
        if _is_slip(got, _gae_with(r, np.zeros_like(v), nv, term, term, gamma * lam, gamma), expected):
            return _Whole("Your δ_t leaves out - V(s_t): it is r_t + γ V(s_{t+1}) alone, the one-step target, not the "
                          "TD error." + _fix(" δ_t = r_t + γ V(s_{t+1}) - V(s_t), V(s_t) loaded from values."))
        if _is_slip(got, _gae_with(r, v, nv, np.zeros_like(term), term, gamma * lam, gamma), expected):
            return _Whole("Your trace runs across an episode end: no reset reached the scan, so the next episode's "
                          "advantages flow into the steps before it." + _fix(
                              " The triple is (a_t, b_t, reset_t) = (γλ, δ_t, term_t): pass term_t as the reset flag."))
        if _is_slip(got, expected + v, expected):
            return _Whole("Your kernel stores the returns, advantages + V(s_t): the task asks for the advantages "
                          "Â_t alone." + _fix(" Store the scanned values y_t themselves."))
        if _is_slip(got, _scanned_decay(term, gamma * lam, args[-1]), expected):
            return _Whole("Your kernel stores A_t, the scan's product of the decays to the chunk's end, not the "
                          "advantage." + _fix(" Store y_t = B_t where K_t, else B_t + A_t * carry."))
    return None


def _scanned_decay(term, a, chunk):
    """A_t of a reverse scan with resets in chunks of ``chunk``: a_t where step t resets, else a_t * A_{t+1},
    1 after each chunk's last step."""
    A = np.empty(term.shape)
    for end in range(term.shape[-1], 0, -chunk):
        acc = np.ones(term.shape[:-1])
        for t in range(end - 1, max(end - chunk, 0) - 1, -1):
            acc = np.where(term[..., t], a, a * acc)
            A[..., t] = acc
    return A


@jit
def _undefined_outside(m, a, b, reset):
    """A prologue's triple with made-up values on the lanes outside ``m`` (past the row's end): the
    loop that runs it must make those lanes the identity (1, 0, no reset) itself."""
    return tl.where(m, a, 2.0), tl.where(m, b, 100.0), reset | ~m


@jit
def _hooked_returns(X, P, offs, t, m, T):
    """The discounted return's triples: X = (rewards, terminated), P = (gamma,); a reset at an episode end."""
    r = tl.load(X[0] + offs, mask=m, other=0.0)
    done = tl.load(X[1] + offs, mask=m, other=0) != 0
    return _undefined_outside(m, P[0], r, done)


@jit
def _hooked_gae(X, P, offs, t, m, T):
    """GAE's triples: X = (rewards, values, next_values, terminated), P = (gamma, lam); a reset at a termination."""
    r = tl.load(X[0] + offs, mask=m, other=0.0)
    v = tl.load(X[1] + offs, mask=m, other=0.0)
    nv = tl.load(X[2] + offs, mask=m, other=0.0)
    done = tl.load(X[3] + offs, mask=m, other=0) != 0
    return _undefined_outside(m, P[0] * P[1], r + tl.where(done, 0.0, P[0] * nv) - v, done)


_HOOKED_BY_NAME = ("Every element is wrong with GAE's prologue: does your kernel call PROLOGUE, the prologue passed "
                   "in (a tl.constexpr argument), or a prologue of its own by name?")
_HOOKED_FLAG = ("A NaN crossed an episode end: the prologue's reset flag is not selected on everywhere it must be, "
                "in the combine and on the carry (a product by 0 lets 0 * NaN = NaN through), or it is lost on the "
                "way: the padding lanes must be (1, 0, no reset), and the flag of a real step kept." + _fix(
                    " Unpack a, b, reset = PROLOGUE(...); make the lanes outside m (1, 0, False): reset = reset & m; "
                    "scan the triple (a, b, reset) with your reset_combine; and select the carry away where the "
                    "composed flag is set."))
_HOOKED = {  # hooked_scan's prologues: what each scans, as the float64 loop (inputs, then params), from y_T = initial
    id(_hooked_returns): lambda r, done, gamma, initial=0.0: reference.discounted_returns(
        r, gamma=gamma, terminated=done, bootstrap_value=np.full(r.shape[:-1], initial)),
    id(_hooked_gae): lambda r, v, nv, done, gamma, lam: reference.gae(r, v, next_values=nv, terminated=done,
                                                                      gamma=gamma, lambda_=lam)[0],
}


def _hooked_scan_hint(args, bad, got, expected):
    """hooked_scan's slips: GAE's prologue not called (every element wrong), a NaN across an episode end,
    or, where the case starts from y_T = initial, the values of a scan from 0: initial never entered."""
    prologue, inputs, params, chunk, *initial = args
    if prologue is _hooked_gae and bad.all():
        return _HOOKED_BY_NAME
    if (bad & ~np.isfinite(got) & np.isfinite(expected)).any():
        return _HOOKED_FLAG
    if initial and initial[0] and _is_slip(got, _HOOKED[id(prologue)](*_as_numpy(tuple(inputs)), *params), expected):
        never = (f"Your values are those of a scan from y_T = 0: the value after the row, initial = {initial[0]:g} "
                 "here, never entered. ")
        if inputs[0].shape[-1] % chunk == 0:  # whole chunks: no padding lane, so the carry's start
            return _Whole(never + "This row is whole chunks, with no padding lanes: your carry does not start from "
                          "initial." + _fix(" Pass initial to the kernel and start the carry there: carry = START."))
        return _Whole(never + f"The case on whole chunks, initial = {initial[0]:g} too, passed: your carry starts "
                      "from initial. "
                      "Here the last chunk has padding lanes past T, and a reset flag left set there makes the "
                      "composed flag of every real step of that chunk set, so the carry (initial) is selected away."
                      + _fix(" Make the padding lanes the identity, the flag included: reset = reset & m."))
    return None


@_exercise("hooked_scan", "00c_episodes_and_hooks", "kernel", stream=24, task="""
hooked_scan(prologue, inputs, params, chunk, initial=0.0) -> y: one kernel for every algorithm, your gae_kernel's
chunk loop with the prologue passed in as a tl.constexpr argument, PROLOGUE. On each chunk of a row
the kernel calls PROLOGUE(X, P, offs, t, m, T): X the tuple `inputs` ((B, T) contiguous tensors),
P the tuple `params` (floats), offs the chunk's flat offsets row * T + t, t its time steps, m the
mask t < T, T the row length. The prologue returns the triple (a, b, reset), as the package's
prologues do: reset, a bool, is an episode's end (y_t = b_t, selected as in your reset_scan, so
nothing behind it, NaN included, reaches it). Outside m its values are not defined: make those
lanes the identity (1, 0, no reset). Scan y_t = b_t + a_t y_{t+1}
backwards from y_T = initial (a value after the row: the carry into its last chunk), in chunks of
`chunk` steps, one program per row, and return y, a (B, T) float32 tensor your kernel wrote. The
checker passes its own prologues (the discounted return's, GAE's): your one kernel is compiled once
for each. Its last two cases pass initial = 10, the first on whole chunks, the second with padding
lanes past T: a reset flag left set on a padding lane keeps initial out there.
""", needs="scan", run=_in_chunks(3),
   window_end="the row's last step (t = T - 1: y_T = initial after it, 0 unless the case passes one)",
   recompute=lambda prologue, inputs, params, chunk, *initial: _HOOKED[id(prologue)](*inputs, *params, *initial),
   hint=lambda args, i, bad, got, expected: _hooked_scan_hint(args, bad, got, expected))
def _hooked_scan_cases(d):
    rng, gamma, lam = d.rng, d.real(0.9, 0.8, 0.99), d.real(0.8, 0.5, 0.95)
    out = []
    for what, prologue, shape, p in (
            ("the discounted return, no episode ends, one chunk", _hooked_returns, (1, d.int(7, 2, 20)), 0.0),
            ("GAE, terminations (NaN next values behind them), several chunks", _hooked_gae,
             (d.int(2, 2, 3), 64 * d.int(3, 2, 3)), 0.05),  # whole chunks: no padding, the prologue is the point
            ("the discounted return, episode ends, NaN rewards in later episodes, several chunks", _hooked_returns,
             (2, d.int(200, 129, 256)), 0.05)):
        r, v, nv = rng.normal(size=(3, *shape))
        done = _flags(rng, shape, p)
        if p:
            done[:, d.int(100, 64, 127)] = True  # an end in the second chunk: later chunks' values never enter it
            done[-1, -1] = True  # and one at the row's last step
            nv = np.where(done, np.nan, nv)
        if "NaN rewards" in what:
            nan_at = d.int(160, 128, shape[1] - 1)
            r[:, nan_at] = np.nan
            done[0, 128:nan_at] = False  # row 0: the NaN reaches the carry into the chunk with the end
        if prologue is _hooked_returns:
            inputs, params = (r, done), (gamma,)
        else:
            inputs, params = (r, v, nv, done), (gamma, lam)
        expected = _HOOKED[id(prologue)](*inputs, *params)
        tensors = tuple(_t(x, torch.bool) if x.dtype == bool else _t(x) for x in inputs)
        out.append((f"{what}, shape {shape}, chunk 64", (prologue, tensors, params, 64), {}, expected,
                    {DONE: done, **_carry_steps(shape), **_padded_last_step(done, 64),
                     **_reset_before_the_carry(done, 64)}))
    # gamma near 1 and short chunks with no episode end: a carry taken from the wrong value shows
    r = rng.normal(size=(2, 100))
    done = np.zeros(r.shape, bool)
    out.append(("the discounted return, no episode ends, gamma 0.99, shape (2, 100), chunk 16",
                (_hooked_returns, (_t(r), _t(done, torch.bool)), (0.99,), 16), {},
                _HOOKED[id(_hooked_returns)](r, done, 0.99), {**_carry_steps(r.shape, 16)}))
    # a value after the row, y_T = initial, on whole chunks (no padding lanes): the carry's start alone
    initial = 10.0
    r = rng.normal(size=(1, 128))
    done = np.zeros(r.shape, bool)
    out.append((f"the discounted return, no episode ends, initial = {initial:g} after the row, whole chunks (no padding "
                "lanes), shape (1, 128), chunk 64", (_hooked_returns, (_t(r), _t(done, torch.bool)), (gamma,), 64,
                                                      initial), {},
                _HOOKED[id(_hooked_returns)](r, done, gamma, initial), {**_carry_steps(r.shape)}))
    # then into a last chunk with padding lanes; the prologue's reset is set there (_undefined_outside), so a
    # flag not cleared outside m keeps initial out
    shape = (2, d.int(100, 65, 127))
    r = rng.normal(size=shape)
    done = _flags(rng, shape, 0.05)
    done[:, -8:] = False  # the row's last steps inside an episode: initial reaches them
    out.append((f"the discounted return, episode ends, initial = {initial:g} after the row, shape {shape}, chunk 64",
                (_hooked_returns, (_t(r), _t(done, torch.bool)), (gamma,), 64, initial), {},
                _HOOKED[id(_hooked_returns)](r, done, gamma, initial),
                {DONE: done, **_carry_steps(shape), **_padded_last_step(done, 64)}))
    return out


@_exercise("strided_scan", "00d_more_scans", "kernel", stream=15, task="""
strided_scan(rewards, terminated, gamma, chunk) -> returns: reset_scan for time-major (T, B) tensors of
any strides (a transposed or sliced view included), read in place: element (t, b) of x is at
X + t * x.stride(0) + b * x.stride(1). Returns a (T, B) tensor; one program per column b. The
checker requires that your kernel receives the views themselves (a copy, .contiguous() of a
transposed view, fails).
""", needs="scan", in_place=((0, "rewards"), (1, "terminated")), time_dim=0, run=_in_chunks(3), window_end=_ROW_END,
   key="buffer",  # the two views that are not contiguous (T, B): read in place, the exercise's point
   hint=lambda args, i, bad, got, expected: _strided_hint(args, bad, got, expected),
   recompute=lambda r, done, gamma, chunk: reference.discounted_returns(r.T, gamma=gamma, terminated=done.T).T)
def _strided_scan_cases(d):
    rng, gamma = d.rng, d.real(0.9, 0.8, 0.99)
    out = []
    for what, T, B in (("contiguous (T, B)", d.int(50, 5, 64), d.int(3, 2, 4)),
                       ("a transposed (B, T) buffer", d.int(150, 65, 200), d.int(4, 2, 5)),
                       ("every other column of a wider buffer", d.int(90, 40, 130), d.int(3, 2, 4)),
                       ("rewards time-major, terminated a transposed buffer (strides of their own)",
                        d.int(70, 20, 100), d.int(3, 2, 4))):
        r, done = rng.normal(size=(T, B)), _flags(rng, (T, B), 0.05)
        done[-1, -1] |= what.startswith("contiguous")  # an episode end at the window's last step (time-major)
        expected = reference.discounted_returns(r.T, gamma=gamma, terminated=done.T).T
        rt, dt = _t(r), _t(done, torch.bool)
        if what.startswith("a transposed"):
            rt, dt = _t(r.T.copy()).t(), _t(done.T.copy(), torch.bool).t()  # strides (1, T)
        elif what.startswith("rewards time-major"):
            dt = _t(done.T.copy(), torch.bool).t()  # rewards (B, 1), terminated (1, T): one stride for both fails
        elif what.startswith("every other"):
            wide_r, wide_d = torch.zeros(T, 2 * B, device=rt.device), torch.zeros(T, 2 * B, dtype=torch.bool,
                                                                                 device=rt.device)
            wide_r[:, ::2], wide_d[:, ::2] = rt, dt
            rt, dt = wide_r[:, ::2], wide_d[:, ::2]  # strides (2B, 2)
        carry = {k: v.T for k, v in {**_carry_steps((B, T), 64), **_reset_before_the_carry(done.T, 64)}.items()}
        strides = f"strides {tuple(rt.stride())}" + (f" and {tuple(dt.stride())}" if dt.stride() != rt.stride()
                                                       else "")
        out.append((f"{what}, T={T}, B={B}, {strides}, chunk 64", (rt, dt, gamma, 64), {},
                    expected, {DONE: done, **carry}))  # (the marks of the time-last helpers, transposed)
    return out


def _strided_hint(args, bad, got, expected):
    """The addresses, where most elements are wrong and the last chunk of a column too: no carry enters
    it, so a slip in the carry leaves it right (its own marks name that slip); the stores' alone where
    the right values are all there, in other places."""
    T, chunk = bad.shape[0], args[3]
    last_chunk = bad[(T - 1) // chunk * chunk:]
    if bad.mean() > 0.5 and np.allclose(np.sort(got, axis=None), np.sort(expected, axis=None), rtol=1e-5, atol=1e-6):
        return _Whole("Every right value is there, in the wrong place: your loads are right, your stores' addresses "
                      "are not. The output has strides of its own: store element (t, b) at OUT + t * out.stride(0) "
                      "+ b * out.stride(1), read from the tensor you return (torch.empty((T, B)) has strides (B, 1); "
                      "torch.empty_like of a transposed view keeps the view's).")
    return _Whole(_STRIDED.format(*args[0].stride(), *args[1].stride())) if bad.mean() > 0.5 and last_chunk.any() \
        else None  # (the step's marks would point at a reset or a carry: the addresses are what is wrong)


_MAX_END = "the row's last step (t = T - 1: nothing after it, h = r there)"
_MAX_UNDERFLOW = "a g that underflows to 0 (gamma^k over a run of a chunk), a row's length not a multiple of the chunk"
_MAX_HUGE = "every reward below -1e30, a row's length not a multiple of the chunk"
_MAX_PADDING = ("the row's last step, padding lanes after it in its chunk: the lanes past T must be the identity, the "
                "pair (g, c) that leaves every y as it is, else they compose into the last step")


@_exercise("discounted_max", "00d_more_scans", "kernel", stream=25, task="""
discounted_max(rewards, terminated, gamma, chunk) -> h: h_t = max(r_t, gamma * h_{t+1}) backwards
in time, h_t = r_t where term_t (the episode ends: nothing after it counts) and at the row's last
step. (B, T) float32 rewards of either sign, bool terminated, contiguous, any T; 0 < gamma <= 1 a
float. A step is the map y -> max(r_t, gamma * y), not y -> b + a y: work out how two such maps
compose, what the identity is (for the padding lanes and for what enters a row's last chunk), and
how an episode end resets, then write the chunked scan of 00b and 00c for it: one program per
row, chunks of `chunk` steps (a power of two) from the last one down, each one
tl.associative_scan, the carry handed from each chunk to the one before it. A run's g, a power of
gamma, may underflow to 0 (the last case: gamma = 0.01); what a product of it then gives, and the
guard it needs, is the notebook's fold "The two guards", to open once you have found the identity.
Under the interpreter the checker's tl.maximum lets a NaN win (Triton does not promise that its
default drops it).
""", needs="scan", run=_nan_winning(_in_chunks(3)), window_end=_MAX_END, key="across chunks", maps="max-plus",
   ordinary=("An ordinary step, and every step the scan reached before it is right: check what your code computes "
             "at that step (its pair (g_t, c_t) = (gamma, r_t)) or, in your combine, the order in which it applies "
             "the two maps (the later steps' map first)."),
   hint=lambda args, i, bad, got, expected: _discounted_max_hint(args, bad, got, expected),
   recompute=lambda r, done, gamma, chunk: _key("discounted_max", r, done, gamma))
def _discounted_max_cases(d):
    rng, gamma = d.rng, d.real(0.9, 0.8, 0.99)
    out = []
    for shape, chunk, p_done, what, g in (
            ((2, d.int(40, 20, 60)), 64, 0.08, "one chunk, episode ends", gamma),
            ((3, d.int(100, 70, 120)), 32, 0.0, "a row's length not a multiple of the chunk, no episode end", gamma),
            ((2, d.int(700, 400, 720)), 128, 0.02, "episode ends, across chunks", gamma),
            ((2, d.int(100, 70, 120)), 64, 0.0, _MAX_UNDERFLOW, 0.01),
            ((1, d.int(50, 40, 60)), 32, 0.0, _MAX_HUGE, gamma)):
        r = rng.normal(size=shape) * 0.5 - 1.0  # mostly below 0: max's identity is -inf, not 0
        spikes = _flags(rng, shape, 0.03)
        r[spikes] = rng.uniform(1.0, 3.0, size=int(spikes.sum()))  # rare successes, their value carried back
        if what == _MAX_HUGE:  # every reward below -1e30 (float32 holds down to -3.4e38): -1e30 is no identity
            r = -(10.0 ** rng.uniform(31, 35, size=shape))
        done = _flags(rng, shape, p_done)
        done[-1, -1] |= p_done > 0  # an episode end at the window's last step
        m = _key("discounted_max", r, done, g)
        out.append((f"{what}{'' if what == _MAX_HUGE else ', rewards mostly below 0'}, shape {shape}, chunk {chunk}" + (
                    f", gamma {g:g}" if what == _MAX_UNDERFLOW else ""),
                    (_t(r), _t(done, torch.bool), g, chunk), {}, m,
                    {DONE: done, **_carry_steps(shape, chunk), **_max_marks(done, chunk)}))
    return out


def _max_marks(done, chunk):
    """discounted_max's own marks: the last step where padding lanes follow it in its block, and the
    steps whose chunk a carry enters with the composed reset flag set."""
    T = done.shape[-1]
    last = np.zeros(done.shape, dtype=bool)
    if T % chunk:
        last[..., -1] = ~done[..., -1]
    reset = next(iter(_reset_before_the_carry(done, chunk).values()))
    return {_MAX_PADDING: last,
            "in a chunk that a carry enters, with the composed reset flag set (an episode end at or after it in its "
            "chunk)" + _fix(": h_t must not read the carry there (select with tl.where)"): reset}


def _max_undiscounted(r, done, gamma, chunk):
    """discounted_max by a combine that leaves c1 undiscounted, (g2 g1, max(c2, c1)): in each chunk,
    the max of the rewards from t to the first episode end (the select keeps it there), the carry
    discounted by gamma to the chunk's end where no end is in between."""
    def chunk_values(steps, carry):
        h = np.empty(r[:, steps].shape)
        c, k, g = np.full_like(carry, -np.inf), np.zeros(carry.shape, bool), np.ones_like(carry)  # t to the end
        for j in reversed(range(h.shape[-1])):
            t = steps.start + j
            c = np.where(done[:, t], r[:, t], np.maximum(r[:, t], c))
            g, k = np.where(done[:, t], gamma, gamma * g), k | done[:, t]
            h[:, j] = np.where(k, c, np.maximum(c, g * carry))
        return h

    return _chunk_walk(r, chunk, chunk_values, lambda c: c * chunk, initial=-np.inf)  # -inf: max's identity


def _max_after(r, done, gamma, after):
    """The discounted maximum with ``after`` entering after the row's last step (-inf: the answer)."""
    h, out = np.full(r.shape[:-1], after, dtype=float), np.empty(r.shape)
    for t in reversed(range(r.shape[-1])):
        h = np.where(done[..., t], r[..., t], np.maximum(r[..., t], gamma * h))
        out[..., t] = h
    return out


def _max_combine_seen_swapped() -> bool:
    """Whether the interpreter saw the student's max-plus combine, run on MAX_MAPS, apply them in the wrong
    order: c = max(c1, g1 * c2), the second operand's map applied first."""
    got_pq = SEEN["combine_max"]
    (g1, c1, _), (_, c2, _) = MAX_MAPS
    return got_pq is not None and len(got_pq) >= 2 and np.isclose(got_pq[1], max(c1, g1 * c2))


def _discounted_max_hint(args, bad, got, expected):
    """A combine that applies the two maps in the wrong order (seen by the interpreter: associative,
    so it gets past that check); 0 where max's identity, -inf, belongs; or a NaN, 0 * inf; or a
    combine that leaves c1 undiscounted (associative too)."""
    if _max_combine_seen_swapped():
        return _Whole("Your combine applies the two maps in the wrong order: its c is max(c1, g1 * c2), the second "
                      "operand's map applied first. The first operand, (g1, c1), is applied first (in a reverse "
                      "scan, the run later in time), then the second, (g2, c2) (the order rule, notebook 00, "
                      "section 3): compose them on paper in that order. (Swapped, the combine is still associative: "
                      "the associativity check cannot see it.)" + _fix(
                          " The composed map is y -> max(c2, g2 max(c1, g1 y)); pull g2 inside the max: "
                          "c = max(c2, g2 * c1), and g = g2 * g1."))
    r, done, gamma, chunk = _as_numpy(tuple(args))
    with np.errstate(all="ignore"):
        if _is_slip(got, _max_undiscounted(r, done.astype(bool), float(gamma), int(chunk)), expected):
            return _Whole("Your combine leaves c1 undiscounted: the run applied first is discounted by the step "
                          "applied after it. Compose the two maps on paper, (g1, c1) first, then (g2, c2), and pull "
                          "g2 inside the max. (Dropping g2 keeps the combine associative: the associativity check "
                          "cannot see it.)" + _fix(
                              " max(c2, g2 max(c1, g1 y)) = max(max(c2, g2 c1), g2 g1 y), as g2 >= 0. In the "
                              "combine, c = max(c2, g2 * c1)."))
        if _is_slip(got, _max_after(r, done.astype(bool), float(gamma), 0.0), expected):
            return _Whole("These are the discounted maxima with 0 entering after the row's last step: max(r, gamma "
                          "* 0) there, and that 0 carried back wherever it beats the rewards. Two things enter a row's last chunk from "
                          "beyond the row: your first carry (the value after the row) and the padding lanes past T. "
                          "Both must be max's identity: which c leaves max(c, y) = y for every y?" + _fix(
                              " Start the carry at float('-inf'), and load the padding lanes as (g, c) = (1, -inf)."))
    g, e = got[bad], expected[bad]
    if np.isnan(g).any() and np.isfinite(e).all() and np.float32(gamma) ** int(chunk) == 0:
        said = ("A NaN where the answer is finite, with a gamma whose powers underflow: a run's g, gamma^k, is 0 "
                "in float32, and 0 * (-inf) = NaN where it meets max's identity (a padding lane's c, or the first "
                "carry). tl.maximum's default drops that NaN on some GPUs, but Triton does not promise it, and the "
                "checker lets the NaN win.")
        in_combine = " In the combine: tl.where(c1 == float('-inf'), c2, tl.maximum(c2, g2 * c1))."
        on_carry = (" After the scan: where the carry is -inf, h is the scanned c (tl.where(carry == float('-inf'), "
                    "c_s, tl.maximum(c_s, g_s * carry))).")
        probe = SEEN.get("combine_max_inf")  # the student's combine on c1 = -inf, g2 = 0 (MAX_INF_MAPS)
        if probe is not None and len(probe) >= 2 and np.isnan(probe[1]):
            return (said + " Your combine is where it comes from: on (g1, c1) = (1, -inf), a padding lane, then (g2, c2) = (0, 3), "
                    "its c is NaN, where the composed map's c is 3 (c2: max(3, 0 * y) for every y). Select the "
                    "product away there, where c1 is -inf." + _fix(in_combine)
                    + " (Check the carry after the scan too: it meets the same 0 * (-inf).)")
        if probe is not None and len(probe) >= 2 and np.isclose(probe[1], MAX_INF_MAPS[1][1]):
            return (said + " Your combine selects it away already (on (1, -inf), then (0, 3), its c is 3): the NaN "
                    "comes in after the scan, where the scanned g, 0, multiplies the first carry, -inf. Select the "
                    "product away there, where the carry is -inf." + _fix(on_carry))
        return said + _fix(" Select the product away where the -inf is." + in_combine + on_carry)
    if np.isnan(g).any() and np.isfinite(e).all():
        return ("A NaN where the answer is finite: 0 * inf = NaN. An episode end must select (tl.where), not "
                "multiply the carry or the later steps' maps by 0: with -inf in them, 0 * -inf is NaN.")
    if ((g == 0) & (e < 0)).any():
        return ("0 where the answer is below 0: 0 is not max's identity (max(r, 0) = 0 for r < 0): which c leaves "
                "max(c, y) = y for every y? Check what enters a row's last chunk, the padding lanes past T, and an "
                "episode end written as a factor 0 (max(r, 0 * y) = max(r, 0)).")
    return None


def _is_slip(got, slip, expected, at=slice(None)) -> bool:
    """Whether ``got`` is ``slip``, an exercise's reference computed with a known mistake, where
    that differs from ``expected`` (compared over time steps ``at``)."""
    return slip.shape == got.shape and not np.allclose(slip[..., at], expected[..., at], rtol=1e-5, atol=1e-5) \
        and np.allclose(got[..., at], slip[..., at], rtol=1e-5, atol=1e-5, equal_nan=True)


def _transposed_hint(args, i, bad, got, expected):
    """The transposed scan's off-by-one: a_t where step t takes a_{t-1}, or a_{t+1}; in a case that starts
    the scan from a value before the window, a step 0 that does not reset."""
    a, dy, past = _as_numpy(tuple(args))
    if past and bad[..., 0].any():  # (the cases that start from 0 passed: the start value got in)
        return _Whole("Your step 0 does not reset, so the value the scan starts from (here inf) enters g_0: nothing "
                      "comes before step 0, and a multiplier of 0 there keeps no inf out (0 * inf = NaN)."
                      + _fix(" Return the reset t == 0 beside the pair."))
    late = np.concatenate([a[:, 1:], np.zeros_like(a[:, :1])], axis=1)
    for which, shifted in (("a_t, step t's own", a), ("a_{t+1}, the step after", late)):
        if _is_slip(got, reference.linear_scan(shifted, dy, reverse=False), expected):
            return (f"Your multiplier is {which}, where the transposed scan's recurrence is g_t = dy_t + "
                    "a_{t-1} g_{t-1}." + _fix(" Load a at offs - 1, only where t >= 1."))
    return None


# ---- 01: returns -----------------------------------------------------------------------------------
_N_STEP_SLIPS = {  # what the answer is, where it is the n-step return with a slip
    "the sums run on past a termination (the next episode's rewards are not this one's)" + _fix(
        ": an episode that terminates at step s < t + n ends the sum at r_s, with no bootstrap"): dict(stops=False),
    "no bootstrap after the n steps" + _fix(": G_t adds gamma^n V(s_{t+n}), next_values at step t + n - 1"): dict(
        bootstraps=False),
    "no bootstrap at the window's end, where a sum is cut short by the end of the rollout (t + n > T)" + _fix(
        ": it adds gamma^n_t next_values at the last step (n_t = T - t steps summed), T - 1"): dict(
        window_end=False),
    "a termination at step t + n, just after the n steps, drops the bootstrap: the flags of t .. t + n are "
    "n + 1, one too many (the episode reached s_{t+n}, so V(s_{t+n}) is its bootstrap)" + _fix(
        ": only a termination at steps t .. t + n - 1 ends the sum and drops the bootstrap"): dict(inclusive="drop"),
    "a termination at step t + n, just after the n steps, makes the sum run on to r_{t+n}: the flags of t .. t + n "
    "are n + 1, one too many (the episode reached s_{t+n}, so after n rewards comes the bootstrap V(s_{t+n}))"
    + _fix(": only a termination at steps t .. t + n - 1 ends the sum"): dict(inclusive="sum"),
    "the bootstrap is read one step late" + _fix(
        ": V(s_{t+n}) is next_values[t + n - 1] (next_values[t] is V(s_{t+1})), not next_values[t + n]"): dict(
        value_step=1),
}


_N_STEP_WINDOW_HOW = (": count the flags of t .. t + n - 1, ends[t + n] - ends[t] with ends = "
                      "torch.cumsum(torch.nn.functional.pad(terminated.float(), (1, 0)), 1), the cumsum with a 0 in "
                      "front (ends[t] counts the flags before step t)")
_N_STEP_WINDOWS = {  # terminations counted in t + lo .. t + n + hi - 1, not t .. t + n - 1: (lo, hi, wrapped)
    (1, 1, False): "the terminations it counts are those of t + 1 .. t + n, a window one step late (ends[t + n] - "
    "ends[t] with ends a cumsum of the flags that has no 0 in front, so that ends[t] already counts step t's flag). "
    "A termination at step t itself is not counted, so G_t = S_t - gamma^n (S_{t+n} - V(s_{t+n})) subtracts the "
    "next episode's sum from S_t = r_t; and one at step t + n, just after the n steps, is, so the sum runs on to "
    "r_{t+n}" + _fix(_N_STEP_WINDOW_HOW),
    (-1, 0, False): "the terminations it counts are those of t - 1 .. t + n - 1, n + 1 flags from one step early "
    "(ends[t + n] - ends[t - 1], where ends[t] already counts the flags before step t). A termination at step t - 1, "
    "which ended the episode before step t began, stops step t's sum: G_t keeps S_t whole, summed on to the episode's "
    "end, where the n steps and the bootstrap V(s_{t+n}) belong" + _fix(_N_STEP_WINDOW_HOW),
    (-1, 0, True): "the terminations it counts are those of t - 1 .. t + n - 1, n + 1 flags from one step early "
    "(ends[t + n] - ends[t - 1], where ends[t] already counts the flags before step t; at t = 0, ends[-1] is the "
    "row's total). A termination at step t - 1, which ended the episode before step t began, stops step t's sum: "
    "G_t keeps S_t whole, summed on to the episode's end, where the n steps and the bootstrap V(s_{t+n}) belong"
    + _fix(_N_STEP_WINDOW_HOW),
    (0, -1, False): "the terminations it counts are those of t .. t + n - 2, a window one step short (ends[t + n - 1] "
    "- ends[t]). A termination at step t + n - 1, the last of the n steps, is not counted, so that step t is taken to "
    "run on: G_t = S_t - gamma^n (S_{t+n} - V(s_{t+n})) reads V(s_{t+n}), the next value behind that termination "
    "(NaN here: it is never to be read), and S_{t+n}, the next episode's sum" + _fix(_N_STEP_WINDOW_HOW),
}


def _n_step_window_slip(r, nv, term, gamma, n, expected, lo, hi, wrapped):
    """The scan form of the n-step return (G_t = S_t - gamma^n (S_{t+n} - V(s_{t+n})) where step t runs on, S_t
    where it does not) with the terminations of t + lo .. t + n + hi - 1 counted (clipped to the row; ``wrapped``:
    at t = 0 those of n .. T - 1, a count from ends[-1]), where that decides otherwise than t .. t + n - 1 does;
    ``expected`` elsewhere. S_t is the discounted sum to the episode's end (the window's end bootstraps)."""
    T = r.shape[-1]
    S = reference.discounted_returns(r, gamma=gamma, terminated=term, next_values=nv)
    ends = np.concatenate([np.zeros(term.shape[:-1] + (1,)), np.cumsum(term, -1)], -1)  # ends[k]: flags before k
    t = np.arange(T)

    def counted(a, b):  # a termination in steps a .. b - 1 (clipped to the row)
        a, b = np.clip(a, 0, T), np.clip(b, 0, T)
        return np.take(ends, np.maximum(a, b), -1) - np.take(ends, a, -1) > 0

    inside = t + n < T  # the n steps end inside the window
    runs_on = inside & ~counted(t, t + n)
    theirs = counted(t + lo, t + n + hi)
    if wrapped and n < T:
        theirs[..., 0] = counted(np.array(n), np.array(T))
    runs_on_theirs = inside & ~theirs
    k = np.minimum(t + n, T - 1)
    ran_on = S - gamma ** n * (np.take(S, k, -1) - np.take(nv, np.maximum(k - 1, 0), -1))
    return np.where(runs_on == runs_on_theirs, expected, np.where(runs_on_theirs, ran_on, S))


def _n_step_hint(args, i, bad, got, expected):
    r, nv, term, gamma, n = _as_numpy(tuple(args[:5]))
    for what, slip in _N_STEP_SLIPS.items():
        with np.errstate(all="ignore"):
            other = _key("n_step_returns", r, nv, term, gamma, n, **slip)
        # (a late read or a missing bootstrap: compared where t + n < T, as the edge depends on how the shifted
        # values were padded, and on whether the window's end kept its own bootstrap)
        at = np.arange(r.shape[-1]) + n < r.shape[-1] if slip.get("value_step") or "bootstraps" in slip else slice(None)
        if _is_slip(got, other, expected, at):
            return f"This is the n-step return with a slip: {what}."
    for (lo, hi, wrapped), what in _N_STEP_WINDOWS.items():
        with np.errstate(all="ignore"):
            other = _n_step_window_slip(r, nv, term.astype(bool), gamma, int(n), expected, lo, hi, wrapped)
        if _is_slip(got, other, expected):
            return _Whole(f"This is the n-step return with a slip: {what}.")
    term, T, n = term.astype(bool), r.shape[-1], int(n)
    ends_within = np.zeros(term.shape, dtype=bool)  # a termination at one of the steps t .. t + n - 1
    for k in range(min(n, T)):
        ends_within[..., :T - k] |= term[..., k:]
    if bad.any() and ends_within[bad].all() and np.isfinite(got[bad]).any():  # (NaN alone: the NaN hint says it)
        return ("Every wrong step has a termination within its n steps (t .. t + n - 1): the episode ends before "
                "the n steps do, so the sum stops at that termination's reward and adds no bootstrap." + _fix(
                    " Where a termination lies in t .. t + n - 1, G_t is the discounted sum of the rewards up to "
                    "it, with no gamma^n V(s_{t+n}) term."))
    past_end = np.arange(r.shape[-1]) + n >= r.shape[-1]  # fewer than n steps left in the window
    if bad.any() and past_end[np.nonzero(bad)[-1]].all() and not past_end.all() and np.isfinite(got[bad]).all():
        return ("Only steps whose n steps run past the window's end (t + n >= T) are wrong: fewer than n steps are "
                "left there, n_t = T - t, so the return sums to the window's end and bootstraps from next_values at "
                "its last step, as the task's n_t says, not from a value n steps on.")
    return None


def _n_step_probe_inputs(T):
    """Two rows of T steps, a termination at step 5, n = 3: the same but for T (the loop probe)."""
    r, nv = np.random.default_rng(5).normal(size=(2, 2, T))
    term = np.zeros((2, T), dtype=bool)
    term[:, 5] = True
    return _t(r), _t(nv), _t(term, torch.bool), 0.9, 3


@_exercise("n_step_returns", "01_discounted_return", "numpy", stream=5, task="""
n_step_returns(rewards, next_values, terminated, gamma, n) -> G, (B, T) tensors:
G_t = sum_{k<n_t} gamma^k r_{t+k} + [no termination in t..t+n_t-1] gamma^n_t V(s_{t+n_t}), n_t = n
steps or fewer: an episode that terminates inside the n steps adds no bootstrap; the window's end
bootstraps from next_values. Write it with tensor ops (rltriton_lite.linear_scan may be called;
any tensor ops will do). Returns G itself. No Python loop over time: besides its cases, the
checker runs it on 16 and 64 steps, and your code's Python lines must not grow with T.
""" + SCAN_RULES, may_use=("linear_scan",), probe=_no_loop_over_time(_n_step_probe_inputs, 16, 64),
   hint=lambda *a: _n_step_hint(*a),
   # (G is no scan of the student's: tensor ops, S_t at most one linear_scan among them)
   ordinary="An ordinary step, and the later steps of its row are right: check what your code computes at that "
            "step (the terminations it counts, those of t .. t + n - 1; the values it reads, S_{t+n} and V(s_{t+n}) "
            "= next_values[t + n - 1]; the power of gamma, gamma^n; and S_t itself, where you scan for it).")
def _n_step_cases(d):
    rng, gamma = d.rng, d.real(0.9, 0.8, 0.99)
    out = []
    T_long = d.int(30, 10, 40)  # n larger than the window
    for shape, p, n in (((1, d.int(6, 3, 10)), 0.0, 1), ((2, d.int(9, 5, 15)), 0.0, d.int(3, 2, 4)),
                        ((3, d.int(40, 20, 50)), 0.1, d.int(4, 3, 8)), ((2, T_long), 0.1, d.int(50, T_long + 1, 60))):
        r, nv = rng.normal(size=(2, *shape))
        done = _flags(rng, shape, p)
        done[-1, -1] |= p > 0 and n < shape[1]  # a termination at the window's last step (the third case)
        what = f"n={n}, shape {shape}" + (", terminations (NaN next values behind them)" if p else "")
        expected = _key("n_step_returns", r, nv, done, gamma, n)
        nv = np.where(done, np.nan, nv)  # V(s_{t+1}) behind a termination: never to be read (a select, not a 0 *)
        out.append((what, (_t(r), _t(nv), _t(done, torch.bool), gamma, n), {}, expected, {TERM: done}))
    return out


@_exercise("transposed_scan", "01b_prologues_and_backward", "hook", stream=10, task="""
transposed_scan: a @triton.jit prologue transposed_scan(X, P, offs, t, m, T) -> (a, b, reset)
for exercises.scan_hook(..., reverse=False), with X = (a, dy): the gradient of y = linear_scan(a, b)
(y_t = b_t + a_t y_{t+1}) with respect to b, g_t = dy_t + a_{t-1} g_{t-1} (g_0 = dy_0), as a
forward scan of the steps (a_{t-1}, dy_t). Step 0 has no step before it: g_0 = dy_0, a reset (in
the case marked "before the window", the checker's scan starts from inf, which only that reset
keeps out: a multiplier of 0 would not, as 0 * inf = NaN).
""" + HOOK_RULES + RESET_RULE, needs="hook", run=lambda fn, args, kw: _started_from(args[2], _harness_scan, fn,
                                                                                  args[:2], (), reverse=False),
   scan="forward", hint=lambda *a: _transposed_hint(*a))
def _transposed_scan_cases(d):
    rng = d.rng
    out = []
    for shape, past in (((1, d.int(5, 2, 9)), 0.0), ((2, d.int(100, 65, 140)), 0.0), ((3, d.int(40, 10, 64)), 0.0),
                        ((2, d.int(12, 5, 20)), np.inf)):
        a, dy = rng.uniform(0.5, 1.0, size=shape), rng.normal(size=shape)
        a_t = torch.tensor(a, requires_grad=False)
        b_t = torch.zeros(shape, dtype=torch.float64, requires_grad=True)
        (g,) = torch.autograd.grad((linear_scan(a_t, b_t, backend="torch") * torch.tensor(dy)).sum(), b_t)
        what = (f"shape {shape}" + (", several chunks" if shape[1] > 64 else "")
                + (", before the window: the scan starts from inf" if past else ""))
        out.append((what, (_t(a), _t(dy), past), {}, g.numpy(), _carry_steps(shape, reverse=False)))
    return out


@_checker_only
def _returns_and_gradient(r, done, gamma, w):
    """(G, dL/dr) for L = sum(w * G): the returns, and the transposed scan of w, forwards in time."""
    G = reference.discounted_returns(r, gamma=gamma, terminated=done)
    a_prev = np.concatenate([np.zeros((r.shape[0], 1)), gamma * (1 - done[:, :-1])], 1)  # gamma (1 - done_{t-1})
    return G, reference.linear_scan(a_prev, w, reverse=False)


def _with_gradient(fn, args, kw):
    """(returns, dL/drewards) for L = sum(w * returns): the forward and the backward of ``fn``, with
    scan_hook started from ``past`` (what lies past the window). The rewards passed share the case's
    tensor's storage, and the gradient into the returns is the case's ``w`` itself: the replay
    (``_replay``) writes new values into both."""
    r, d, gamma, w, past = args
    return _started_from(past, _forward_and_backward, fn, r, d, gamma, w)


def _started_from(past, run, *args, **kw):
    """``run(*args, **kw)`` with scan_hook's scans started from ``past`` (what lies past the window)."""
    _PAST_THE_WINDOW[0] = past
    try:
        return run(*args, **kw)
    finally:
        _PAST_THE_WINDOW[0] = 0.0


def _forward_and_backward(fn, r, d, gamma, w):
    r = r.detach().requires_grad_()
    y = fn(r, d, gamma)
    if not isinstance(y, torch.Tensor) or not y.requires_grad:
        raise AssertionError("the returns do not require grad: apply your autograd.Function (Returns.apply(...)), "
                             "not its forward")
    _PHASE[0] = "backward"  # the launches from here on are the backward's (_require)
    if y.shape == w.shape and y.dtype == w.dtype:
        (g,) = torch.autograd.grad(y, r, grad_outputs=w)  # dL/dy = w, the case's tensor itself
    else:  # (a wrong shape or dtype: the comparison says so)
        (g,) = torch.autograd.grad((y * w).sum(), r)
    _PHASE[0] = "forward"
    return y.detach(), g


def _returns_autograd_hint(args, i, bad, got, expected):
    """The backward's off-by-one: dL/drewards from step t's own flag where the transposed scan takes step t - 1's;
    in a case that starts the scans from a value past the window, a forward whose last step, or a backward whose
    step 0, does not reset."""
    r, done, gamma, w, past = _as_numpy(tuple(args))
    if past and i == 0:  # the forward's steps with the window's last step not a reset
        if _is_slip(got, reference.linear_scan(np.where(done, 0.0, gamma), r, initial=past), expected):
            return _Whole(f"Your forward's last step does not reset, so the value past the window (here {past:g}, "
                          "where this case's scan starts) flows into the last step and, through it, into every "
                          "step before it up to an episode end." + _fix(
                              " Reset at the window's last step as well as where terminated: term | (t == T - 1)."))
    if past and i == 1:  # the backward's steps with step 0 not a reset: a_{-1} = gamma
        a_prev = np.concatenate([np.full_like(r[..., :1], gamma), gamma * (1.0 - done[..., :-1])], -1)
        if _is_slip(got, reference.linear_scan(a_prev, w, reverse=False, initial=past), expected):
            return _Whole(f"Your backward's step 0 does not reset, so the value the forward scan starts from (here "
                          f"{past:g}) enters g_0 and every step after it up to an episode end. Nothing comes before "
                          "step 0." + _fix(" Make step 0 a reset: load term_{t-1} with other=1 where t == 0."))
    if i != 1:
        return None
    same_step = reference.linear_scan(gamma * (1.0 - done), w, reverse=False)  # gamma (1 - done_t), not done_{t-1}
    before = np.concatenate([np.zeros_like(done[:, :1], dtype=float), gamma * (1.0 - done[:, :-1])], 1)
    for a in (before, gamma * (1.0 - done)):  # the backward's pairs (or the forward's) scanned the forward's way
        if _is_slip(got, reference.linear_scan(a, w), expected):
            return _Whole("Your backward scans backwards in time, as the forward does. Each G_s sums the rewards "
                          "from step s on, so dL/dr_t collects dL/dG_s from every step s <= t: the transposed scan "
                          "runs forwards in time." + _fix(" In the backward, scan_hook(..., reverse=False)."))
    if _is_slip(got, same_step, expected):
        return ("Your backward is off by one step: at step t it reads step t's own flag, term_t, where the "
                "transposed scan needs step t - 1's." + _fix(
                    " In the transposed scan (forwards in time), g_t = dL/dG_t + gamma (1 - term_{t-1}) g_{t-1}: "
                    "step t resets where step t - 1 terminated. Load the flag one step back (offs - 1, only where "
                    "t >= 1; step 0 resets)."))
    return None


@_exercise("returns_autograd", "01b_prologues_and_backward", "hook", stream=16, task="""
returns_autograd(rewards, terminated, gamma) -> returns, differentiable in rewards: a
torch.autograd.Function whose forward runs the reverse scan G_t = r_t + gamma (1 - term_t) G_{t+1}
(exercises.scan_hook with your Triton prologue) and whose backward runs the transposed scan,
forwards in time: dL/dr_t = g_t, g_t = dL/dG_t + gamma (1 - term_{t-1}) g_{t-1} (scan_hook with
reverse=False and a second prologue; no step comes before t = 0).
Save what the backward needs with ctx.save_for_backward. (B, T) float32 rewards, bool terminated.
The window's last step resets in the forward, and step 0 in the backward (nothing before it): in
the cases marked "past the window", the checker's scan_hook starts both scans from """ + f"{PAST_WINDOW:g}" + """, not
0, a stand-in for what lies past the window, which only those resets keep out. The checker
requires the autograd.Function's apply, and Triton code of yours launched in the forward and in
the backward.
""" + RESET_RULE, needs="autograd", run=_with_gradient, scan=("reverse", "forward"),
   results=("the returns G", "dL/drewards"),
   window_end="the window's last step (t = T - 1: does it reset? a value may lie past the window)",
   may_use=("scan_hook",), recompute=lambda r, done, gamma, w, past: _returns_and_gradient(r, done, gamma, w),
   hint=lambda *a: _returns_autograd_hint(*a))
def _returns_autograd_cases(d):
    rng, gamma = d.rng, d.real(0.9, 0.8, 0.99)
    out = []
    for shape, p, past in (((1, d.int(6, 2, 9)), 0.0, 0.0), ((2, d.int(40, 10, 64)), 0.1, 0.0),
                           ((3, d.int(150, 65, 200)), 0.05, 0.0), ((2, d.int(20, 10, 64)), 0.1, PAST_WINDOW)):
        r, w = rng.normal(size=(2, *shape))
        done = _flags(rng, shape, p)
        done[-1, -1] |= p == 0.1 and not past  # an episode end at the window's last step
        if past:
            done[:, -1] = False  # the window ends inside an episode: the last step's own reset keeps y_T out
        what = (f"shape {shape}" + (", episode ends" if p else "") + (", several chunks" if shape[1] > 64 else "")
                + (f", past the window: both scans start from {past:g}" if past else ""))
        out.append((what, (_t(r), _t(done, torch.bool), gamma, _t(w), past), {},
                    _returns_and_gradient(r, done, gamma, w), {DONE: done}))
    return out


# ---- 02: GAE ---------------------------------------------------------------------------------------
@contextlib.contextmanager
def package_prologue(kind: str, prologue):
    """The package's own kernel for ``kind`` ("discounted_return", "gae" or "td_lambda") with
    ``prologue`` in place of its forward prologue, while the block runs. A mask's look-ahead is
    derived first (masks.py), as for a call with gradients: the prologue takes no ``ahead``."""
    from . import config, episode, returns

    saved = returns._KERNELS[kind]
    returns._KERNELS[kind] = (prologue,) + saved[1:]
    episode._PLANS.clear()  # a call's plan keeps the launch it made, prologue and all
    try:
        with config.using(dataclasses.replace(config.current(), look_ahead=False)):
            yield
    finally:
        returns._KERNELS[kind] = saved
        episode._PLANS.clear()


def _package_gae(fn, args, kw):
    with package_prologue("gae", fn):
        out = _harness_gae(*args, backend="triton", **kw)
    if kw.get("time_dim") == 0:
        return out.advantages.T, out.returns.T
    return tuple(out)


def _gae_pairs_hint(args, got, expected):
    """gae_pairs' slips: with truncations, the trace not cut there or no bootstrap there; the trace's decay
    without lam or without gamma; delta_t's bootstrap discounted by gamma * lam."""
    r, v, nv, term, trunc, gamma, lam = _as_numpy(tuple(args))
    ends = term | trunc
    with np.errstate(all="ignore"):
        if not np.allclose(_gae_with(r, v, nv, ends, term, gamma * lam, gamma), expected, rtol=1e-6, atol=1e-6):
            return None  # (not the task's pairs: no slip to name)
        slips = ((_gae_with(r, v, nv, term, term, gamma * lam, gamma),
                  "Your trace runs on through a truncation. A truncated step bootstraps from next_values, but its "
                  "episode still ends there, so the trace is cut (a = 0), as at any episode end."
                  + _fix(" Set a = 0 where terminated or truncated.")),
                 (_gae_with(r, v, nv, ends, ends, gamma * lam, gamma),
                  "Your truncated steps do not bootstrap. A time limit cut the episode, the state was not terminal, "
                  "so delta_t there reads next_values: only a termination drops it."
                  + _fix(" Select next_values away where terminated only.")),
                 (_gae_with(r, v, nv, ends, term, gamma, gamma),
                  "Your trace decays by gamma per step, not gamma * lam: lam is missing from a."
                  + _fix(" Set a = gamma * lam (0 at every episode end).")),
                 (_gae_with(r, v, nv, ends, term, lam, gamma),
                  "Your trace decays by lam per step, not gamma * lam: the discount is missing from a."
                  + _fix(" Set a = gamma * lam (0 at every episode end).")),
                 (_gae_with(r, v, nv, ends, term, gamma * lam, gamma * lam),
                  "Your delta_t discounts next_values by gamma * lam: lam weighs the trace (a) alone, and delta_t is "
                  "the one-step TD error." + _fix(" Set b = r + gamma * V(s_{t+1}) - V(s_t), without lam.")))
        delta = r + np.where(term, 0.0, gamma * nv) - v  # the task's b_t
        open_end = reference.linear_scan(np.where(ends, 0.0, gamma * lam), delta, initial=PAST_WINDOW)
        v_next = np.concatenate([v[..., 1:], nv[..., -1:]], -1)  # values[t + 1]: the next step's V, not V(s_{t+1})
        shifted = _gae_with(r, v, v_next, ends, term, gamma * lam, gamma)
        # the pair returned in the other order, (b, a): the checker scans linear_scan(b, a) (a round-56 review's case)
        cut = ends.copy()
        cut[..., -1] = True  # (the window's last step resets too)
        swapped = reference.linear_scan(delta, np.where(cut, 0.0, gamma * lam), initial=PAST_WINDOW)
    if _is_slip(got, swapped, expected):
        return _Whole("Your function returns the pair as (b, a): the checker scans linear_scan(a, b) with the first "
                      "array as the multipliers a_t and the second as the b_t, so your TD errors multiplied the carry "
                      "and your decays were added." + _fix(" return a, b (the multipliers first)."))
    if _is_slip(got, open_end, expected):
        return _Whole(f"Your window's last step does not reset, so the value past the window (here "
                      f"{PAST_WINDOW:g}, where the scan starts) flows into the last step and, through it, into every "
                      "step before it up to an episode end. The window's last step bootstraps from next_values in b, "
                      "so a = 0 there, as at an episode end." + _fix(
                          " Set a = 0 at the last step (t = T - 1) as well as where terminated or truncated."))
    if _is_slip(got, shifted, expected, at=slice(None, -1)):
        return _Whole("Your delta_t reads values[t + 1], the next step's value, where the task gives next_values: "
                      "V(s_{t+1}) of the state after step t, which after an episode end is not the next step's "
                      "first state." + _fix(" Read next_values[t] (selected away where terminated)."))
    return next((said for slip, said in slips if _is_slip(got, slip, expected)), None)  # after the step's marks


@_exercise("gae_pairs", "02_gae", "numpy", stream=6, task=f"""
gae_pairs(rewards, values, next_values, terminated, truncated, gamma, lam) -> (a, b): GAE's
prologue. The checker runs linear_scan(a, b) and compares y with the advantages: terminated
cuts the bootstrap and the trace, truncated only the trace (it bootstraps from next_values).
The window's last step resets too: the checker's scan starts from y_T = {PAST_WINDOW:g}, a stand-in for what
lies past the window, which a last step with a = 0 keeps out (its bootstrap is in b).
next_values behind a termination is never to be read (it may be NaN): select it away
(torch.where), do not multiply it by ~terminated, as 0 * NaN = NaN.
""" + SCAN_RULES, run=_scan_past_window, may_use=("linear_scan",),
   probe=_pairs_do_the_scan(lambda: _pairs_probe_inputs(
       _t(np.zeros((1, 6))), _t(np.zeros((1, 6), bool), torch.bool), _t(np.zeros((1, 6), bool), torch.bool),
       0.9, 0.8), "a = gamma * lam where the trace goes on"),
   hint=lambda args, i, bad, got, expected: _gae_pairs_hint(args, got, expected))
def _gae_pairs_cases(d):
    rng, gamma, lam = d.rng, d.real(0.9, 0.8, 0.99), d.real(0.8, 0.5, 0.95)
    out = []
    for shape, p_term, p_trunc in (((1, d.int(5, 2, 9)), 0.0, 0.0), ((2, d.int(40, 20, 64)), 0.1, 0.0),
                                   ((3, d.int(50, 30, 70)), 0.05, 0.1)):
        r, v, nv = rng.normal(size=(3, *shape))
        term = _flags(rng, shape, p_term)
        trunc = _flags(rng, shape, p_trunc)
        if p_trunc:  # both kinds of episode end at the window's last step
            term[-1, -1], term[0, -1], trunc[0, -1] = True, False, True
        trunc &= ~term
        adv, _ = reference.gae(r, v, next_values=nv, terminated=term, truncated=trunc, gamma=gamma, lambda_=lam)
        what = f"shape {shape}" + (", terminations" if p_term else "") + (", truncations" if p_trunc else "")
        if p_trunc:  # the next state's value behind a termination: NaN, never to be read
            nv = np.where(term, np.nan, nv)
            what += ", NaN next values behind the terminations"
        out.append((what, (_t(r), _t(v), _t(nv), _t(term, torch.bool), _t(trunc, torch.bool), gamma, lam), {}, adv,
                    {TERM: term, TRUNC: trunc}))
    return out


# the returns are checked after the advantages: where they are wrong, the advantages y were right
_KEEP_WRONG = _Whole("The advantages are right and the returns are not: the epilogue stores the returns as "
                     "y + keep[0], so check what keep hands it (the returns are A_t + V(s_t)).")


def _gae_prologue_hint(args, got, expected, kwargs):
    """The advantages of a prologue that resets at terminations only: the trace runs on through a truncation."""
    if "truncated" not in kwargs or {"mask", "time_dim"} & set(kwargs) or torch.is_tensor(kwargs.get("gamma")):
        return None  # (the case with truncations: batch-major, no mask, one gamma)
    r, v, nv, term, trunc = _as_numpy((args[0], args[1], kwargs["next_values"], kwargs["terminated"],
                                       kwargs["truncated"]))
    gamma, lam = float(kwargs["gamma"]), float(kwargs["lambda_"])
    with np.errstate(all="ignore"):
        slip = _gae_with(r, v, nv, term.astype(bool), term.astype(bool), gamma * lam, gamma)
    if _is_slip(got, slip, expected):
        return _Whole("Your reset is the termination alone, so the trace runs on through a truncation. A truncated "
                      "step still bootstraps from next_values, but its episode ends there: the reset is every "
                      "episode end, done, as in your gae_pairs." + _fix(" Return done as the reset, not term."))
    return None


@_exercise("gae_prologue", "02_gae", "hook", stream=14, task="""
gae_prologue: GAE's forward prologue in the package's own slots, a @triton.jit function
gae_prologue(X, SX, P, row, t, m, T, ACC) -> (a, b, reset, valid, keep) that rltriton_lite.gae
runs in its kernel instead of its own (exercises.package_prologue). The package's helpers read
the inputs: episode.step(X, SX, P, row, t, m, T, ACC) -> (gamma, lam, terminated, done, valid),
tile.load(X[REWARDS], SX[REWARDS], row, t, valid, 0.0, ACC) and episode.values_now_and_next(X, SX,
row, t, m, T, ACC) -> (V(s_t), V(s_{t+1})). The step (a, b) that makes y_t = b_t + a_t y_{t+1}
GAE's advantage, where it resets, and what keep must hold are yours (your gae_pairs has the
pair); the epilogue stores the advantages y and the returns y + keep[0], and valid is step's.
The checker calls rl.gae with masks, truncations, a per-step gamma, time-major inputs and no
next_values.
""", needs="hook", run=_package_gae, results=("advantages", "returns"),
   hint=lambda args, i, bad, got, expected, kwargs: _KEEP_WRONG if i == 1 else _gae_prologue_hint(
       args, got, expected, kwargs),
   hook_returns=(5, "a package prologue returns the 5-tuple (a, b, reset, valid, keep): the step's pair (a, b), "
                    "reset (where the trace is cut), valid (false on padding: episode.step's) and keep, a tuple "
                    "of what the epilogue reads (it stores the returns y + keep[0])"))
def _gae_prologue_cases(d):
    rng, g, lam = d.rng, d.real(0.97, 0.9, 0.99), d.real(0.9, 0.7, 0.97)
    out = []
    B, T = d.int(3, 3, 4), d.int(90, 65, 130)
    r, v, nv = rng.normal(size=(3, B, T))
    term, trunc = _flags(rng, (B, T), 0.05), _flags(rng, (B, T), 0.05)
    term[-1, -1], term[0, -1], trunc[0, -1] = True, False, True  # both kinds of end at the window's last step
    trunc &= ~term
    gamma = rng.uniform(0.9, 1.0, size=(B, T))
    mask = np.ones((B, T), dtype=bool)
    left, right, mid, width = d.int(7, 1, 10), d.int(5, 1, 10), d.int(40, 12, T - 20), d.int(4, 1, 8)
    mask[0, :left], mask[1, -right:], mask[2, mid:mid + width] = False, False, False  # left, right and mid-row padding
    boot = rng.normal(size=B)
    nv_nan = np.where(term, np.nan, nv)
    for what, kw, ref in (
            ("no episode ends", {}, {}),
            ("terminations and truncations, next_values (NaN behind terminations: never to be read)",
             dict(terminated=term, truncated=trunc, next_values=nv_nan), dict(terminated=term, truncated=trunc,
                                                                                next_values=nv_nan)),
            ("a per-step gamma and padding masks", dict(gamma=gamma, terminated=term, mask=mask),
             dict(gamma=gamma, terminated=term, mask=mask)),
            ("no next_values: values[t+1] and bootstrap_value", dict(terminated=term, bootstrap_value=boot),
             dict(terminated=term, bootstrap_value=boot))):
        kw = {k: (_t(x, torch.bool) if x.dtype == bool else _t(x)) for k, x in kw.items()}
        kw.setdefault("gamma", g)
        ref.setdefault("gamma", g)
        expected = reference.gae(r, v, lambda_=lam, **ref)
        padded = {"a padded step (mask false: it must be the identity, not a step)": ~mask} if "mask" in ref else {}
        marks = {TERM: term} if "terminated" in ref else {}  # only the ends this case passes: a case without
        marks.update({TRUNC: trunc} if "truncated" in ref else {})  # truncations has no step that is one
        out.append((f"{what}, shape ({B}, {T})", (_t(r), _t(v)), dict(kw, lambda_=lam), tuple(expected),
                    {**marks, **padded}))
    kw = dict(terminated=_t(term.T, torch.bool), truncated=_t(trunc.T, torch.bool), next_values=_t(nv.T), gamma=g,
              lambda_=lam, time_dim=0)
    expected = reference.gae(r, v, next_values=nv, terminated=term, truncated=trunc, gamma=g, lambda_=lam)
    out.append(("time-major (T, B) inputs, time_dim=0", (_t(r.T), _t(v.T)), kw, tuple(expected),
                {TERM: term, TRUNC: trunc}))
    return out


# ---- 03: TD(λ) -------------------------------------------------------------------------------------
def _next_actions(rng, q, p_greedy):
    """The action taken at s_{t+1}: with probability p_greedy one of the greedy actions (ties drawn
    uniformly among them), else one of the others (greedy after all where every action ties)."""
    is_max = q == q.max(-1, keepdims=True)
    want = rng.random(q.shape[:-1]) < p_greedy
    allowed = np.where(want[..., None], is_max, ~is_max)
    allowed |= is_max & ~allowed.any(-1, keepdims=True)
    return np.argmax(np.where(allowed, rng.random(q.shape), -1.0), -1)


@_exercise("q_lambda", "03_td_lambda", "hook", stream=7, task="""
q_lambda: a @triton.jit prologue q_lambda(X, P, offs, t, m, T) -> (a, b, reset) for exercises.scan_hook,
with X = (rewards, next_q, next_action, terminated) and P = (gamma, lam, n_actions): Watkins's
Q(lambda) targets. next_q is (B, T, n_actions) float32, Q(s_{t+1}, .) for each action (step offs's
action k is at offs * n_actions + k); next_action (B, T) int64, the action u_{t+1} taken at
s_{t+1} (u: an action; a_t is the scan's multiplier); n_actions an int. With a loop over the
actions (for k in range(n_actions)) compute max_q = max_u Q(s_{t+1}, u) and whether the action
taken is greedy, Q(s_{t+1}, u_{t+1}) == max_q (a tie for the max counts as greedy). Then
G_t = r_t + gamma (1 - term_t) [(1 - l_t) max_q + l_t G_{t+1}], l_t = lam where u_{t+1} is greedy
and 0 where it is not (the trace is cut) or at the window's last step (t == T - 1). Each cut of the
trace is a reset (a termination, a non-greedy next action, the window's last step). A multiplier
a_t = 0 at a cut passes too: what it multiplies, G_{t+1}, is finite in every case (0 * G_{t+1} = 0).
next_q behind a termination may be NaN: select it away (tl.where), do not multiply it by 0. The
harness scans y_t = b_t + a_t y_{t+1} from y_T = 0.
""" + HOOK_RULES + RESET_RULE + PAST_RULE, needs="hook", run=_scan_with(4), hint=lambda *a: _q_lambda_hint(*a))
def _q_lambda_cases(d):
    rng, gamma, lam = d.rng, d.real(0.9, 0.8, 0.99), d.real(0.8, 0.5, 0.95)
    out = []
    for what, shape, A, p_greedy, p_term, grid, past in (
            ("every next action greedy", (1, d.int(5, 2, 9)), d.int(3, 2, 4), 1.0, 0.0, False, 0.0),
            ("non-greedy actions", (2, d.int(30, 10, 64)), d.int(4, 3, 6), 0.6, 0.0, False, 0.0),
            ("ties (Q on a grid of integers: an action tied for the max is greedy)", (3, d.int(40, 20, 64)),
             d.int(4, 3, 6), 0.6, 0.0, True, 0.0),
            ("non-greedy actions and terminations (NaN Q-values behind them: never to be read), several chunks",
             (3, d.int(150, 65, 200)), d.int(5, 3, 6), 0.7, 0.08, False, 0.0),
            ("terminations with finite Q-values behind them and a greedy next action (the termination alone must "
             "cut the trace)", (2, d.int(12, 6, 20)), d.int(3, 2, 4), 1.0, 0.2, False, 0.0),
            ("every next action greedy", (2, d.int(20, 10, 64)), d.int(3, 2, 4), 1.0, 0.0, False, PAST_WINDOW)):
        r = rng.normal(size=shape)
        if grid:
            q = rng.integers(-2, 3, size=(*shape, A)).astype(np.float64)
        else:  # float32 values: the kernel's comparisons see the same numbers as this loop
            q = rng.normal(size=(*shape, A)).astype(np.float32).astype(np.float64)
        action = _next_actions(rng, q, p_greedy)
        term = _flags(rng, shape, p_term)
        term[-1, -1] |= p_term > 0  # a termination at the window's last step
        if p_greedy < 1:  # (else the values behind a termination stay finite, and greedy)
            q = np.where(term[..., None], np.nan, q)
        q_taken = np.take_along_axis(q, action[..., None], -1)[..., 0]
        greedy = q_taken == q.max(-1)
        ties = greedy & ((q == q_taken[..., None]).sum(-1) > 1)
        marks = {TERM: term, "followed by a non-greedy action (the trace is cut there: a reset, as at a termination)": ~greedy & ~term,
                 "followed by a greedy action tied with another for the max (greedy: the trace goes on; an argmax "
                 "picks one of the tied actions, and the other is then not greedy)" + _fix(
                     " Compare the Q of the action taken with the max, q_taken == max_q, not the action with the "
                     "first argmax: a tie is greedy."): ties,
                 **_carry_steps(shape)}
        suffix, kw = _past_case(past)
        out.append((f"{what}, shape {shape}, {A} actions{suffix}",
                    (_t(r), _t(q), _t(action, torch.int64), _t(term, torch.bool), gamma, lam, A), kw,
                    _key("q_lambda", r, q, action, term, gamma, lam), marks))
    return out


def _q_lambda_hint(args, i, bad, got, expected):
    """Q(lambda)'s targets with next_q read at offs + a, the action stride forgotten, with the trace not cut
    at the window's last step or at a non-greedy action (or there in b alone), or bootstrapped from the action
    taken."""
    r, q, action, term, gamma, lam, A = _as_numpy(tuple(args))
    action = action.astype(np.int64)  # (as the cases pass it to the key)
    flat = q.reshape(-1)
    strideless = flat[np.arange(r.size)[:, None] + np.arange(A)].reshape(q.shape)  # step offs's action a at offs + a
    with np.errstate(all="ignore"):
        slip = _key("q_lambda", r, strideless, action, term, gamma, lam)
        uncut = _key("q_lambda", r, q, action, term, gamma, lam, window_end=False)
        taken = _key("q_lambda", r, q, action, term, gamma, lam, taken=True)
        peng = _key("q_lambda", r, q, action, term, gamma, lam, greedy_cut=False)
        carried = _key("q_lambda", r, q, action, term, gamma, lam, carry_cut=False)
    if _is_slip(got, taken, expected):  # (a round-57 review's case: no hint then)
        return _Whole("These are the targets bootstrapped from the Q of the action taken, Q(s_{t+1}, u_{t+1}): Watkins's "
                      "Q(lambda) bootstraps from the greedy value, max_u Q(s_{t+1}, u), and follows the action taken "
                      "only through the trace (cut where it is not greedy)." + _fix(
                          " In b, (1 - l_t) * max_q, with max_q the loop's maximum over the actions."))
    if _is_slip(got, slip, expected):
        return _Whole("These are the targets of next_q read at offs + a: step offs's action a is at offs * n_actions "
                      "+ a (n_actions values per step, the actions last)." + _fix(
                          " Load tl.load(X[1] + offs * n_actions + a, ...)."))
    if _is_slip(got, peng, expected):  # (a round-58 review's case: only the step's mark then)
        return _Whole("These are Peng's Q(lambda) targets: your trace goes on after a non-greedy next action. "
                      "Watkins's Q(lambda) learns the greedy policy's values, so the trace stops where the action "
                      "taken is not greedy: l_t = 0 there, and G_t bootstraps fully from max_q." + _fix(
                          " A cut where q_taken < max_q: reset = term | ~greedy | (t == T - 1), and lam_t 0 there."))
    if _is_slip(got, carried, expected):  # (a round-71 review's case: the step named, no fix then)
        return _Whole("Your b bootstraps fully where the next action is not greedy (lambda_t = 0 there), but the "
                      "carry still goes on through a = gamma lam: G_{t+1} still reaches a step where Watkins's trace "
                      "stops. The cut must stop the carry too." + _fix(
                          " Set reset = term | ~greedy | (t == T - 1): the reset drops the carry where lambda_t is 0."))
    if _is_slip(got, uncut, expected):
        return _Whole("These are Q(lambda)'s targets with the trace not cut at the window's last step (t == T - 1): "
                      "there is no G_{t+1} to weigh there, so lambda_t must be 0 and the target bootstraps fully "
                      "from max_u next_q." + _fix(" lambda_t = 0 where t == T - 1: tl.where(t < T - 1, ..., 0.0)."))
    return None


_RETRACE_SLIPS = {  # a wrong trace c_{t+1} (its name in the keys), and what to say where the answer has it
    "the ratio is not cut at 1 (Retrace truncates pi/mu, so that the product of traces never grows)" + _fix(
        ": c_{t+1} = lam * min(1, exp(next_log_ratio_t))"): "uncut",
    "the trace lacks lambda" + _fix(": c_{t+1} = lam * min(1, exp(next_log_ratio_t))"): "no lambda",
    "the ratio of the wrong step: next_log_ratio_t is already log(pi/mu) at t+1 (the action the trace "
    "weighs)" + _fix("; read it at t, at the prologue's own offs, not one step further"): "next step's ratio",
    "the ratio of the step before: next_log_ratio_t is already log(pi/mu) at t+1 (the action the trace "
    "weighs), read at the prologue's own offs" + _fix("; read it at offs, not one step back"): "previous step's ratio",
    "the trace is not 0 at the window's last step (t == T - 1), where there is no G_{t+1} to weigh" + _fix(
        ": there the target is r_t + gamma E_pi Q(s_{t+1}, .)"): "no cut at the end",
}


def _retrace_hint(args, i, bad, got, expected):
    """Where the answer is Retrace's targets with a wrong trace (``_RETRACE_SLIPS``): which slip."""
    r, eq, q, lr, term, gamma, lam = _as_numpy(tuple(args[:7]))
    for what, trace in _RETRACE_SLIPS.items():
        with np.errstate(all="ignore"):
            slip = _key("retrace", r, eq, q, lr, term, gamma, lam, trace=trace)
        if _is_slip(got, slip, expected):
            return f"These are Retrace's targets with a wrong trace: {what}."
    with np.errstate(all="ignore"):
        slip = _key("retrace", r, eq, q, lr, term, gamma, lam, q_sign=1.0)
    if _is_slip(got, slip, expected):
        return _Whole("These are Retrace's targets with c Q(s_{t+1}, u_{t+1}) added" + _fix(
            ": it enters the bracket with a minus sign, c (G_{t+1} - Q(s_{t+1}, u_{t+1})), so b_t holds "
            "-gamma c Q(s_{t+1}, u_{t+1})") + ".")
    with np.errstate(all="ignore"):
        slip = _key("retrace", r, eq, q, lr, term, gamma, lam, carry_trace="lambda alone")
    if _is_slip(got, slip, expected):
        return _Whole("These are Retrace's targets with the multiplier a_t = gamma lam: the ratio is in your b_t's "
                      "c_{t+1} but not in the carry's. G_{t+1} is weighed by the same trace c_{t+1} as "
                      "Q(s_{t+1}, u_{t+1})" + _fix(": a_t = gamma (1 - term_t) c_{t+1}, the c_{t+1} of b_t") + ".")
    with np.errstate(all="ignore"):
        slip = _key("retrace", r, eq, q, lr, term, gamma, lam, carry_gamma=False)
    if _is_slip(got, slip, expected):
        return _Whole("These are Retrace's targets with G_{t+1} undiscounted: your a_t is c_{t+1}, without the "
                      "gamma in front of the bracket" + _fix(": a_t = gamma (1 - term_t) c_{t+1}") + ".")
    return None


@_exercise("retrace", "03_td_lambda", "hook", stream=8, task="""
retrace: a @triton.jit prologue retrace(X, P, offs, t, m, T) -> (a, b, reset) for exercises.scan_hook,
with X = (rewards, next_expected_q, next_q, next_log_ratio, terminated) and P = (gamma, lam):
Retrace(lambda) targets for Q(s_t, u_t) (u: an action): G_t = r_t + gamma (1 - term_t) [E_pi Q(s_{t+1}, .)
+ c_{t+1} (G_{t+1} - Q(s_{t+1}, u_{t+1}))], c_{t+1} = lam min(1, pi/mu at t+1) =
lam min(1, exp(next_log_ratio_t)), and c = 0 at the window's last step (t == T - 1), which resets,
as a termination does. Behind a termination the next_* inputs are never to be read (they may be NaN): select them away
(tl.where), do not multiply them by (1 - term).
""" + HOOK_RULES + RESET_RULE + PAST_RULE, needs="hook", run=_scan_with(5), hint=lambda *a: _retrace_hint(*a))
def _retrace_cases(d):
    rng, gamma, lam = d.rng, d.real(0.9, 0.8, 0.99), d.real(0.8, 0.5, 0.95)
    out = []
    for shape, spread, p_term, past in (((1, d.int(5, 2, 9)), 0.0, 0.0, 0.0), ((2, d.int(30, 10, 64)), 1.0, 0.0, 0.0),
                                        ((3, d.int(100, 30, 140)), 1.0, 0.1, 0.0),
                                        ((2, d.int(20, 10, 64)), 1.0, 0.0, PAST_WINDOW)):
        r, eq, q = rng.normal(size=(3, *shape))
        log_ratio = rng.normal(scale=spread, size=shape)
        term = _flags(rng, shape, p_term)
        term[-1, -1] |= p_term > 0  # a termination at the window's last step
        suffix, kw = _past_case(past)
        what = f"shape {shape}" + (", pi != mu" if spread else ", on-policy") + (", terminations" if p_term else "") + suffix
        expected = _key("retrace", r, eq, q, log_ratio, term, gamma, lam)
        if p_term:  # the next state's values behind a termination: NaN, never to be read
            eq, q, log_ratio = (np.where(term, np.nan, x) for x in (eq, q, log_ratio))
            what += " (NaN next values behind them)"
        out.append((what, (_t(r), _t(eq), _t(q), _t(log_ratio), _t(term, torch.bool), gamma, lam),
                    kw, expected, {TERM: term, **_carry_steps(shape)}))
    return out


# ---- 04: V-trace -----------------------------------------------------------------------------------
@jit
def vtrace_prologue(X, P, offs, t, m, T):
    """V-trace's vs as a reverse scan (λ = 1): X = (log_rhos, rewards, values, next_values,
    terminated), P = (gamma, rho_bar, c_bar). Inside an episode V(s_{t+1}) = next_values[t], so
    vs_t = V_t + ρ_t δ_t + γ_t c_t (vs_{t+1} - V'_t), with ρ_t = min(ρ̄, π/μ) and δ_t the TD error:
    a_t = γ_t c_t, b_t = V_t + ρ_t δ_t - γ_t c_t V'_t; a termination and the window's last step
    (which bootstraps: vs_T = V') reset, with b = V + ρ δ. Behind a termination V'_t is never
    read, only selected away (it may be NaN: 0 · NaN is NaN)."""
    gamma, rho_bar, c_bar = P[0], P[1], P[2]
    ratio = tl.exp(tl.load(X[0] + offs, mask=m, other=0.0))  # π/μ, before either clip
    r = tl.load(X[1] + offs, mask=m, other=0.0)
    v = tl.load(X[2] + offs, mask=m, other=0.0)
    v_next = tl.load(X[3] + offs, mask=m, other=0.0)
    term = tl.load(X[4] + offs, mask=m, other=0) != 0
    rho_delta = tl.minimum(ratio, rho_bar) * (r + tl.where(term, 0.0, gamma * v_next) - v)  # ρ_t δ_t
    reset = term | (t == T - 1)
    a = gamma * tl.minimum(ratio, c_bar)
    return a, v + rho_delta - tl.where(reset, 0.0, a * v_next), reset  # a select, as at every reset


def _vtrace_rollouts(d, behind_termination):
    """V-trace's rollouts for its exercises, simplest first: (what, the checker's arguments as
    NumPy, terminated, shape); ``behind_termination(shape)``: the next values at terminal steps,
    which nothing may read."""
    rng, gamma, rho_bar, c_bar = d.rng, d.real(0.9, 0.8, 0.99), d.real(1.0, 0.8, 1.5), d.real(0.9, 0.6, 1.0)
    for shape, p_term, spread in (((1, d.int(5, 2, 9)), 0.0, 0.0), ((2, d.int(100, 65, 140)), 0.0, 1.0),
                                  ((3, d.int(150, 65, 200)), 0.05, 1.0)):
        log_rhos = rng.normal(scale=spread, size=shape)
        r, v = rng.normal(size=(2, *shape))
        nv = np.concatenate([v[:, 1:], rng.normal(size=(shape[0], 1))], 1)  # one network: V' = V one step on
        term = _flags(rng, shape, p_term)
        term[-1, -1] |= p_term > 0  # a termination at the window's last step
        nv = np.where(term, behind_termination(shape), nv)
        what = f"shape {shape}" + (", terminations" if p_term else "") + (", off-policy" if spread else "")
        yield what, (log_rhos, r, v, nv, term, gamma, rho_bar, c_bar), term, shape


@_checker_only
def _vtrace_reference(log_rhos, r, v, nv, term, gamma, rho_bar, c_bar, chunk=None):
    return reference.vtrace(log_rhos, r, v, gamma=gamma, rho_bar=rho_bar, c_bar=c_bar, pg_rho_bar=rho_bar,
                            next_values=nv, terminated=term)


def _vtrace_chunk_walk(lr, r, v, nv, term, gamma, rho_bar, c_bar, chunk, k):
    """vs by notebook 04's affine step (a_t = 0 where step t resets: a termination, the window's last step),
    walked in chunks by ``_chunk_walk``, the carry handed on taken at step c * chunk + k of chunk c (k = 0:
    the answer)."""
    rho, c = np.minimum(rho_bar, np.exp(lr)), np.minimum(c_bar, np.exp(lr))
    with np.errstate(all="ignore"):
        delta = r + np.where(term, 0.0, gamma * nv) - v
        a, b = np.where(term, 0.0, gamma * c), v + rho * delta - np.where(term, 0.0, gamma * c * nv)
        a[..., -1], b[..., -1] = 0.0, (v + rho * delta)[..., -1]
    return _chunk_walk(r, chunk, lambda steps, carry: reference.linear_scan(a[..., steps], b[..., steps], initial=carry),
                       lambda chunk_i: chunk_i * chunk + k)


def _vtrace_kernel_hint(args, i, bad, got, expected):
    """Where vs at the window's last step keeps -gamma c V' (that step not a reset), or its carry is vs at the
    chunk's last step, or pg there reads vs one step past the row (0, or the next row's first vs) for
    next_values: say so."""
    lr, r, v, nv, term, gamma, rho_bar, c_bar = _as_numpy(tuple(args[:8]))
    if i == 1:
        if _pg_from_vs_t(lr, r, v, nv, term, gamma, rho_bar, c_bar, got, expected) is not None:
            return _Whole("Your pg reads vs at step t itself, vs_t, where vs_{t+1} belongs: the advantage "
                          "bootstraps from the value after the step." + _fix(
                              " Read vs one step on (offs + 1) inside the window, next_values at its last "
                              "step: tl.where(t == T - 1, next_values, vs_next)."))
        return _pg_as_vs_minus_v(lr, r, v, nv, term, gamma, rho_bar, c_bar, got, expected, fix=(
            " In the second kernel, pg = rho * (r + gamma * v_next - V): v_next the row's vs one step on, "
            "next_values at the window's last step, none at a termination.")) or _vtrace_pg_past_the_row(lr, r, v, nv, term, gamma, rho_bar,
                                                                             c_bar, bad, got)
    chunk = int(args[8])
    if r.shape[-1] > chunk and _is_slip(got, _vtrace_chunk_walk(lr, r, v, nv, term, gamma, rho_bar, c_bar, chunk,
                                                                chunk - 1), expected):
        return _Whole("Your carry is vs at the chunk's last step. In a reverse scan the value that enters the chunk "
                      "before is vs at this chunk's first step in time, t = ci * CHUNK: the step right after the chunk "
                      "before ends." + _fix(" Pick the carry with tl.sum(tl.where(t == ci * CHUNK, vs, 0.0), 0)."))
    with np.errstate(all="ignore"):
        kept = np.where(term[..., -1], 0.0, gamma * np.minimum(c_bar, np.exp(lr[..., -1])) * nv[..., -1])
    if _is_slip(got[..., -1], expected[..., -1] - kept, expected[..., -1]):
        return ("Your vs there keeps b's -gamma c V' term: it is cancelled by gamma c v_{t+1}, and the window's "
                "last step has no v_T to add." + _fix(" Give that step b's end form, b = V + rho delta (delta "
                                                      "bootstrapping from next_values), and make it a reset, as an "
                                                      "episode end is (its flag k set; a may keep gamma c)."))
    return None


def _vtrace_pg_past_the_row(lr, r, v, nv, term, gamma, rho_bar, c_bar, bad, got):
    """pg wrong at the window's last steps alone, and there equal to rho (r + gamma x - V) with x read
    at t + 1 = T: 0 (masked) or the next row's first vs."""
    last = np.zeros(bad.shape, dtype=bool)
    last[..., -1] = True
    if not bad.any() or (bad & ~last).any():
        return None
    with np.errstate(all="ignore"):
        vs = _vtrace_reference(lr, r, v, nv, term, gamma, rho_bar, c_bar)[0]
        weight = np.minimum(rho_bar, np.exp(lr[..., -1]))
        for after in (np.zeros(r.shape[:-1]), np.concatenate([vs[1:, 0], np.zeros(1)])):
            slip = weight * (r[..., -1] + gamma * after - v[..., -1])
            rows = bad[..., -1]
            if np.allclose(np.asarray(got)[..., -1][rows], slip[rows], rtol=1e-5, atol=1e-5):
                return ("Your pg at the window's last step reads vs one step on, at t + 1 = T: past the row (a "
                        "masked 0, or the next row's first step), where no step of this window follows." + _fix(
                            " There v_next is next_values: tl.where(t == T - 1, next_values, vs_next)."))
    return None


def _vtrace_tensors(args):
    return (*map(_t, args[:4]), _t(args[4], torch.bool), *args[5:])


def _pg_from_vs_t(lr, r, v, nv, term, gamma, rho_bar, c_bar, got, expected):
    """Whether ``got`` is V-trace's policy-gradient advantage with vs_t read where vs_{t+1} belongs: None
    where it is not; else whether next_values was still read at the window's last step (vtrace_pg's
    and vtrace_kernel's slip alike)."""
    with np.errstate(all="ignore"):
        vs = _vtrace_reference(lr, r, v, nv, term, gamma, rho_bar, c_bar)[0]
        last = np.arange(r.shape[-1]) == r.shape[-1] - 1
        for at_end in (False, True):
            v_next = np.where(last, nv, vs) if at_end else vs
            slip = np.minimum(rho_bar, np.exp(lr)) * (r + np.where(term, 0.0, gamma * v_next) - v)
            if _is_slip(np.asarray(got), slip, expected):
                return at_end
    return None


def _pg_as_vs_minus_v(lr, r, v, nv, term, gamma, rho_bar, c_bar, got, expected, y="vs_t", fix="", y_is=""):
    """Where ``got`` is rho_t (vs_t - V_t) or vs_t - V_t, section 4's identity (pg0 == vs0 - v, which needs
    c_t = rho_t) taken for the advantage: the hint that says so, else None."""
    with np.errstate(all="ignore"):
        vs = _vtrace_reference(lr, r, v, nv, term, gamma, rho_bar, c_bar)[0]
        rho = np.minimum(rho_bar, np.exp(lr))
    twice, once = (_is_slip(np.asarray(got), slip, expected) for slip in (rho * (vs - v), vs - v))
    if twice == once:  # neither, or both (rho_t is 1 wherever they are wrong): say the one the values show
        yours = f"{y} - V_t{y_is} (or rho_t times it: rho_t is 1 at every wrong step)" if once else None
    else:
        yours = (f"rho_t ({y} - V_t){y_is}: rho_t counted twice, since {y} - V_t already holds rho_t delta_t"
                 if twice else f"{y} - V_t{y_is}")
    if yours is None:
        return None
    why = (f"{y} - V_t = rho_t delta_t + gamma c_t ({y}_{{t+1}} - V'_t) is the advantage only where c_t = rho_t at "
           "every step (lambda = 1 and c_bar = rho_bar, as in section 4's pg0 == vs0 - v), clipped or not; here "
           f"c_bar = {_num(c_bar)} and rho_bar = {_num(rho_bar)}. The advantage bootstraps from the value after the "
           "step: rho_t (r_t + gamma v_{t+1} - V_t).")
    return _Whole(f"These are the policy-gradient advantages with a slip: your pg is {yours}. {why}" + _fix(fix))


def _pg_termination_ignored(log_rhos, r, v, nv, term, gamma, rho_bar, c_bar, got, expected):
    """The advantage at a termination bootstrapped as at any step (from y_in, the next episode's vs_{t+1}),
    compared away from a termination at the window's last step (next_values there is NaN)."""
    if not term.any():
        return None
    with np.errstate(all="ignore"):
        vs = _vtrace_reference(log_rhos, r, v, nv, term, gamma, rho_bar, c_bar)[0]
        v_next = np.concatenate([vs[..., 1:], nv[..., -1:]], axis=-1)
        slip = np.minimum(rho_bar, np.exp(log_rhos)) * (r + gamma * v_next - v)
    seen = ~(term & (np.arange(r.shape[-1]) == r.shape[-1] - 1))
    got = np.asarray(got)
    if np.allclose(slip[seen], expected[seen], rtol=1e-5, atol=1e-5) or \
            not np.allclose(got[seen], slip[seen], rtol=1e-5, atol=1e-5):
        return None
    return _Whole("These are the policy-gradient advantages with the terminations ignored: at a terminal step "
                  "your advantage still adds gamma * v_next, and y_in there is the next episode's vs_{t+1}. A "
                  "terminal step bootstraps nothing: pg_t = weight * (r_t - V_t) there." + _fix(
                      " gamma * v_next selected away at a termination: tl.where(term, 0.0, gamma * v_next)."))


def _vtrace_pg_hint(args, i, bad, got, expected):
    """vtrace_pg's weight unclipped or clipped at c_bar; y (vs_t) read where y_in (vs_{t+1}) belongs; or
    wrong at the window's last step alone, with y_in read there: y_in is 0 at that step."""
    log_rhos, r, v, nv, term, gamma, rho_bar, c_bar = _as_numpy(tuple(args[:8]))
    for clip, said in ((np.inf, "the ratio is not clipped: the weight is min(rho_bar, pi/mu)"),
                       (c_bar, "the ratio is clipped at c_bar, the trace's bound: the policy gradient's is rho_bar")):
        with np.errstate(all="ignore"):
            slip = reference.vtrace(log_rhos, r, v, gamma=gamma, rho_bar=rho_bar, c_bar=c_bar, pg_rho_bar=clip,
                                    next_values=nv, terminated=term)[1]
        if _is_slip(np.asarray(got), slip, expected):
            return _Whole(f"These are the policy-gradient advantages with a slip: {said}." + _fix(
                " The weight is min(rho_bar, exp(log_rhos)), rho_bar = P[1]: pg = weight * (r_t + gamma (1 - term_t) "
                "v_next - V_t)."))
    ignored = _pg_termination_ignored(log_rhos, r, v, nv, term, gamma, rho_bar, c_bar, got, expected)
    if ignored:
        return ignored
    vs_minus_v = _pg_as_vs_minus_v(log_rhos, r, v, nv, term, gamma, rho_bar, c_bar, got, expected, y="y",
                                   y_is=", y being the scan's vs_t", fix=(
        " Return rho * (r + tl.where(term, 0.0, gamma * v_next) - v), with v_next = tl.where(t == T - 1, "
        "next_values, y_in)."))
    if vs_minus_v:
        return vs_minus_v
    at_end = _pg_from_vs_t(log_rhos, r, v, nv, term, gamma, rho_bar, c_bar, got, expected)
    if at_end is not None:  # y, the scan's value at step t (vs_t), where y_in (vs_{t+1}) belongs
        there = (" inside the window (at its last step you read next_values, which is right)" if at_end else
                 " at every step (at the window's last one, next_values belongs)")
        return _Whole(
            f"These are the policy-gradient advantages with a slip: your v_next is y where y_in belongs,{there}"
            ". y is vs_t, the scan's value at step t itself (y_t = b_t + a_t y_in); the advantage bootstraps "
            "from vs_{t+1}, the value after the step, which is y_in: the value that entered step t from the "
            "step after it."
            + _fix(" v_next = y_in inside the window, next_values at its last step: "
                   "tl.where(t == T - 1, next_values, y_in)."))
    last = np.zeros(bad.shape, dtype=bool)
    last[..., -1] = True
    if not bad.any() or (bad & ~last).any():
        return None
    with np.errstate(all="ignore"):  # vs_{t+1} taken as y_in, which is 0 after the window
        slip = np.minimum(float(args[6]), np.exp(log_rhos)) * (r - v)
    if not np.allclose(np.asarray(got)[last], slip[last], rtol=1e-5, atol=1e-5):
        return None
    return ("Your pg there reads y_in, and at the window's last step y_in is 0: nothing enters the scan from after the "
            "window (it starts from y_T = 0), so vs_{t+1} is not known there." + _fix(
                " At t == T - 1, v_next is next_values: tl.where(t == T - 1, next_values, y_in)."))


@_exercise("vtrace_pg", "04_vtrace", "hook", stream=12, task="""
vtrace_pg: a @triton.jit epilogue vtrace_pg(X, P, offs, t, m, T, y, y_in) -> pg for
exercises.scan_hook(exercises.vtrace_prologue, X, P, epilogue=vtrace_pg), with X = (log_rhos,
rewards, values, next_values, terminated) and P = (gamma, rho_bar, c_bar): the scan gives y = vs_t
and y_in = vs_{t+1} (the value that entered step t: the scan runs backwards in time, y_t = b_t +
a_t y_in; the package's name, as in its own epilogues; at a termination, a reset, it is still
vs_{t+1}, the next episode's); return the policy-gradient advantage min(rho_bar, pi_t/mu_t) (r_t +
gamma (1 - term_t) v_{t+1} - V_t), where v_{t+1} is vs_{t+1} (y_in) inside the window and next_values
at its last step (t == T - 1). next_values behind a termination may be NaN: select it away.
""" + HOOK_RULES + RESET_RULE, needs="hook",
   run=lambda fn, args, kw: _harness_scan(vtrace_prologue, args[:5], args[5:], epilogue=fn), local=True,
   hint=lambda *a: _vtrace_pg_hint(*a),
   ordinary="An ordinary step, and the scan (given) is right there: check what your epilogue computes at that "
            "step (the terms it reads: vs_{t+1} is y_in, not y; the reward, V_t, the clip of rho).")
def _vtrace_pg_cases(d):
    return [(what + (", NaN next values behind the terminations" if term.any() else ""), _vtrace_tensors(args), {},
             _vtrace_reference(*args)[1], {TERM: term, **_carry_steps(shape)})
            for what, args, term, shape in _vtrace_rollouts(d, lambda shape: np.full(shape, np.nan))]


def _fixed_point_correction(V, P, R, pi, mu, gamma, rho_bar):
    """V-trace's mean correction at each state with the critic V: E_mu[rho (r + gamma V(s') - V(s)) | s]."""
    rho = np.minimum(rho_bar, pi / mu)
    return (mu * rho * (R + gamma * P @ V - V[:, None])).sum(1)


def _run_fixed_point(fn, args, kw):
    """The student's V, then the mean correction V-trace would apply with it (0 at the fixed point)."""
    V = fn(*args, **kw)
    if isinstance(V, torch.Tensor):
        V = V.detach().cpu().double().numpy()
    S = args[1].shape[0]
    if not isinstance(V, (np.ndarray, list, tuple)) or np.shape(V) != (S,):
        raise AssertionError(f"expected V, one value per state: an array of shape ({S},), got {_describe(V)}"
                             + (f" of shape {np.shape(V)}" if np.ndim(V) else ""))
    return _fixed_point_correction(np.asarray(V, dtype=np.float64), *args)


@_checker_only
def _value_under(nu, P, R, gamma):
    """V^nu: the solution of the Bellman equation of the policy nu (rows of nu summing to 1 or less)."""
    return np.linalg.solve(np.eye(len(R)) - gamma * np.einsum("sa,sat->st", nu, P), (nu * R).sum(1))


def _fixed_point_hint(args, i, bad, got, expected):
    """What the checker computes (it holds no answer), where the correction points, and the slip where it is one."""
    P, R, pi, mu, gamma, rho_bar = args
    s = int(np.flatnonzero(bad)[0])  # the state the message shows
    at_s = (f"At state {s}, V-trace's mean correction with your V is {got[s]:+.4g}, not 0: a one-step update "
            f"(c_bar = 0) would move V({s}) {'up' if got[s] > 0 else 'down'}.")
    said = ("The checker holds no answer to compare with: with your V it computes V-trace's mean correction in "
            "each state, E_mu[rho delta | s] = sum_u mu(u|s) min(rho_bar, pi/mu) (R(s,u) + gamma sum_s' "
            "P(s,u,s') V(s') - V(s)), which is 0 in every state at the fixed point and nowhere else. " + at_s)
    clipped_ratio = np.minimum(rho_bar, pi / mu)
    with np.errstate(all="ignore"):
        ratios = clipped_ratio / clipped_ratio.sum(1, keepdims=True)  # the clipped ratios normalised, mu left out
    fixed_point_where = ("V-trace's fixed point, in general, only where no weight is clipped (or all are clipped by one "
                         f"factor); here rho_bar = {rho_bar:g} clips pi/mu = {(pi / mu).max():.3g}")
    v_pi = f"Your V is V^pi, pi's own value. That is {fixed_point_where}."
    v_ratios = ("Your V is the value of the clipped ratios min(rho_bar, pi/mu) normalised state by state as the policy, "
                "mu left out: the correction averages those ratios under mu, so each action weighs mu(u|s) "
                "min(rho_bar, pi/mu), not min(rho_bar, pi/mu) alone.")
    weights = (" Normalise the weights min(rho_bar mu, pi) = mu(u|s) min(rho_bar, pi/mu) state by state (the policy "
               "pi_rho_bar)")
    fix_weights = _fix(weights + ", not the ratios min(rho_bar, pi/mu).")
    if np.allclose(ratios, pi):  # (04b's one state: pi = 1 - mu on two actions, and the clipped ratios normalise to pi)
        shown = lambda x: "(" + ", ".join(f"{v:.3g}" for v in x[s]) + ")"  # noqa: E731
        v_pi = ("Your V is V^pi, pi's own value, which two slips give on this case. Either your V ignores the clip: "
                f"V^pi is {fixed_point_where}. Or it normalises the clipped ratios min(rho_bar, pi/mu) state by state as the "
                f"policy, mu left out: here those ratios, {shown(clipped_ratio)}, normalise to pi itself, "
                f"{shown(pi)}, a coincidence of this case; the correction averages the ratios under mu, so each "
                "action weighs mu(u|s) min(rho_bar, pi/mu)." + _fix(weights + ": the clip applied, and mu in the "
                                                                         "weights."))
    slips = {
        v_pi: pi,
        "Your V is V^mu, mu's own value: where TD(0) on mu's data stops, without the weights rho.": mu,
        "Your V uses the weights min(rho_bar mu, pi) as a policy without normalising them state by state (where a "
        "weight is clipped they sum to less than 1: a discount of its own).": mu * clipped_ratio,
        v_ratios + fix_weights: ratios,
    }
    for what, nu in slips.items():
        with np.errstate(all="ignore"):
            slip = _fixed_point_correction(_value_under(nu, P, R, gamma), *args)
        if _is_slip(got, slip, expected):
            return _Whole(f"{what} {at_s}")  # (the slip named: the correction's definition is 04b's text)
    return said


@_exercise("vtrace_fixed_point", "04b_vtrace_fixed_point", "numpy", stream=26, task="""
vtrace_fixed_point(P_trans, R, pi, mu, gamma, rho_bar) -> V: the value that V-trace's critic
converges to in a finite MDP, learning from mu's data. P_trans: (S, A, S) float64, P_trans[s, u, s']
the probability of s' after action u in state s; R: (S, A) float64, the mean reward; pi, mu:
(S, A) float64, the target and behaviour policies (each row sums to 1; mu > 0 everywhere, pi may
be 0); gamma < 1; rho_bar > 0 (float("inf") for no clip). Return V, shape (S,): the V at which V-trace's mean correction
E_mu[rho_t delta_t | s_t = s] vanishes in every state, rho_t = min(rho_bar, pi/mu) and
delta_t = r_t + gamma V(s_{t+1}) - V(s_t). The checker computes that correction with your V.
""", scan=None, run=_run_fixed_point, hint=_fixed_point_hint)
def _vtrace_fixed_point_cases(d):
    rng, gamma = d.rng, d.real(0.9, 0.8, 0.97)
    out = []
    one = (np.ones((1, 2, 1)), d.pick(np.array([[1.0, 0.0]]), lambda rng: rng.normal(size=(1, 2))),
           *d.pick((np.array([[0.8, 0.2]]), np.array([[0.2, 0.8]])),  # (pi, mu): mu rarely takes action 0
                   lambda rng: tuple(np.array([[x, 1 - x]]) for x in (rng.uniform(0.6, 0.9), rng.uniform(0.1, 0.3)))))
    for what, (S, A), rho_bar in (("one state (as in 04b, section 1: pi/mu > 1 on action 0)", (1, 2), 1.0),
                                  ("3 states, 2 actions", (d.int(3, 2, 5), 2), 1.0),
                                  ("states on-policy and pi = 0 on an action", (d.int(6, 4, 8), 3),
                                   d.real(2.0, 1.2, 3.0)),
                                  ("no clip (rho_bar = inf)", (d.int(4, 2, 6), 3), float("inf"))):
        if what.startswith("one state"):
            P, R, pi, mu = one
        else:
            P = rng.dirichlet(np.ones(S), size=(S, A))
            R = rng.normal(size=(S, A))
            pi, mu = rng.dirichlet(np.ones(A), size=S), rng.dirichlet(np.ones(A), size=S)
            if what.startswith("states on-policy"):
                pi[0] = mu[0]  # state 0 on-policy (nothing to correct)
                pi[1] = 0.0
                pi[1, 0] = 1.0  # state 1: pi = 0 on every action but the first
        args = (P, R, pi, mu, gamma, rho_bar)
        out.append((f"{what}, gamma = {gamma:g}, rho_bar = {rho_bar:g}; compared: the mean correction with your V, "
                    "state by state (0 at the fixed point)", args, {}, np.zeros(P.shape[0]), {}))
    return out


# ---- 04c: V-trace in your own kernels -------------------------------------------------------------
@_exercise("vtrace_kernel", "04c_vtrace_kernel", "kernel", stream=23, task="""
vtrace_kernel(log_rhos, rewards, values, next_values, terminated, gamma, rho_bar, c_bar, chunk) ->
(vs, pg): V-trace end to end in Triton, on (B, T) float32 inputs and bool terminations (lambda = 1,
the policy gradient's clip is rho_bar). Your reset_scan (chunks of `chunk` steps, one program per
row) over the affine step of vs that notebook 04 derives, then the policy-gradient advantage
pg_t = min(rho_bar, pi/mu) (r_t + gamma (1 - term_t) vs'_{t+1} - V_t), pi/mu = exp(log_rhos),
vs'_{t+1} being vs_{t+1} inside the window and next_values at its last step. Both outputs written by kernels of yours (one
kernel, or the scan and then a kernel that reads vs one step on). next_values behind a termination
may be NaN: select it away. Contiguous inputs.
""", needs="scan", run=_in_chunks(8), results=("vs", "pg_advantages"), recompute=_vtrace_reference,
   hint=lambda *a: _vtrace_kernel_hint(*a))
def _vtrace_kernel_cases(d):
    out = []
    for what, args, term, shape in _vtrace_rollouts(d, lambda shape: np.full(shape, np.nan)):
        what += ", chunk 64" + (", NaN next values behind the terminations" if term.any() else "")
        out.append((what, _vtrace_tensors(args) + (64,), {}, _vtrace_reference(*args), {TERM: term, **_carry_steps(shape)}))
    return out


# ---- 05: PPO ---------------------------------------------------------------------------------------
@_exercise("dual_clip", "05_ppo", "hook", stream=17, task="""
dual_clip: a @triton.jit elementwise hook dual_clip(X, P, offs, m) -> loss for exercises.map_hook,
with X = (ratio, advantages) and P = (epsilon, c): dual-clip PPO's per-element loss,
-max(min(r A, clip(r, 1-eps, 1+eps) A), c A) where A < 0, and PPO's -min(r A, clip(r) A) where
A >= 0 (c > 1 bounds the loss of a negative advantage at a large ratio).
""" + HOOK_RULES, needs="hook", run=_map_with(2), scan=None, hint=lambda *a: _dual_clip_hint(*a),
   key="advantages")  # the clip on the right side of the advantage's sign is the exercise: no partial credit
def _dual_clip_cases(d):
    eps, c = d.real(0.2, 0.1, 0.3), d.real(3.0, 2.0, 4.0)
    r = np.array([0.5, 0.9, 1.0, 1.1, 1.5, 5.0, 0.5, 0.9, 1.0, 1.1, 1.5, 5.0])
    A = np.array([1.0] * 6 + [-1.0] * 6)
    bands = ((0.2, 1 - eps), (1 - eps, 1 + eps), (1 + eps, c), (c, 2 * c))  # below the clip, inside, above, above c

    def ratios(rng):
        return rng.permutation(np.concatenate([rng.uniform(lo, hi, size=2) for lo, hi in bands]))

    r_pos, r_neg = d.pick(r[:6], ratios), d.pick(r[6:], ratios)
    a_pos = d.pick(A[:6], lambda rng: rng.uniform(0.1, 2.0, 8))
    a_neg = d.pick(A[6:], lambda rng: -rng.uniform(0.1, 2.0, 8))
    scale = d.pick(np.linspace(0.5, 2, 12), lambda rng: rng.uniform(0.5, 2.0, 16))
    out = []
    for what, ratio, adv in (("positive advantages", r_pos, a_pos), ("negative advantages", r_neg, a_neg),
                             ("both", np.concatenate([r_pos, r_neg]), np.concatenate([a_pos, a_neg]) * scale)):
        obj = np.minimum(ratio * adv, np.clip(ratio, 1 - eps, 1 + eps) * adv)
        obj = np.where(adv < 0, np.maximum(obj, c * adv), obj)
        out.append((what, (_t(ratio), _t(adv), eps, c), {}, -obj))
    return out


def _dual_clip_hint(args, i, bad, got, expected):
    """Where the wrong elements all have A >= 0 and hold the dual clip's value (applied where it must
    not be), or all have A < 0 and hold PPO's plain loss (the dual clip left out): which side is wrong."""
    ratio, adv, eps, c = _as_numpy(tuple(args[:4]))
    if np.shape(adv) != bad.shape:
        return None
    ppo = -np.minimum(ratio * adv, np.clip(ratio, 1 - eps, 1 + eps) * adv)
    dual = np.minimum(ppo, -c * adv)  # -max(min(...), c A)
    if (adv[bad] >= 0).all() and np.allclose(got[bad], dual[bad], rtol=1e-5, atol=1e-5):
        return ("The wrong elements are those with A >= 0, and they hold the dual clip's value." + _fix(
            " For A ≥ 0 the dual clip must not apply (there the loss is PPO's -min(r A, clip(r, 1-eps, 1+eps) A) "
            "alone; select with tl.where(adv < 0, ...))."))
    neg = adv < 0
    unclipped = np.where(neg, -np.maximum(ratio * adv, c * adv), -ratio * adv)  # r A for PPO's min(r A, clip(r) A)
    if np.allclose(got[bad], unclipped[bad], rtol=1e-5, atol=1e-5) \
            and not np.allclose(unclipped[bad], expected[bad], rtol=1e-5, atol=1e-5):  # (a round-56 review's case)
        return ("Your loss leaves out PPO's clip: where the ratio r lies outside [1 - eps, 1 + eps] it uses r A, "
                "where PPO takes min(r A, clip(r, 1 - eps, 1 + eps) A). The dual clip is added to PPO's clip, not put "
                "in its place." + _fix(" The objective is min(r A, clip(r, 1-eps, 1+eps) A); for A < 0, then "
                                       "max(that, c A)."))
    floor_as_cap = -np.minimum(-ppo, c * adv)  # tl.minimum where the dual clip takes tl.maximum
    if neg.any() and np.allclose(got[neg], floor_as_cap[neg], rtol=1e-5, atol=1e-5) \
            and not np.allclose(floor_as_cap[neg], expected[neg], rtol=1e-5, atol=1e-5):
        return ("Where A < 0 your loss holds the smaller of the objective and c A: the dual clip is a floor on the "
                "objective, not a cap (it keeps a large ratio from pushing the loss without bound)." + _fix(
                    " For A < 0: -max(min(r A, clip(r) A), c A), tl.maximum."))
    floor_of_ratio = np.where(neg, np.minimum(ppo, -c * ratio), ppo)  # -max(min(...), c r): the floor c r, not c A
    if neg.any() and np.allclose(got[neg], floor_of_ratio[neg], rtol=1e-5, atol=1e-5) \
            and not np.allclose(floor_of_ratio[neg], expected[neg], rtol=1e-5, atol=1e-5):  # (a round-75 review's case)
        return ("Where A < 0 your objective's floor is c r, c times the ratio: the dual clip's floor is c A, c times "
                "the advantage." + _fix(" For A < 0: -max(min(r A, clip(r) A), c * A), with A the loaded advantage."))
    floor_at_c = np.minimum(ppo, c)  # -max(min(...), -c): the floor a number, not c times the advantage
    if neg.any() and np.allclose(got[neg], floor_at_c[neg], rtol=1e-5, atol=1e-5) \
            and not np.allclose(floor_at_c[neg], expected[neg], rtol=1e-5, atol=1e-5):
        return ("Where A < 0 your objective's floor is -c, a constant: the dual clip's floor is c A, c times the "
                "advantage (the two agree only where A = -1)." + _fix(
                    " For A < 0: -max(min(r A, clip(r) A), c * A), with A the loaded advantage."))
    if (adv[bad] < 0).all() and np.allclose(got[bad], ppo[bad], rtol=1e-5, atol=1e-5):
        return ("The wrong elements are those with A < 0, and they hold PPO's plain loss." + _fix(
            " For A < 0 the dual clip applies, -max(min(r A, clip(r) A), c A) (it bounds the loss where the ratio "
            "is large)."))
    return None


@_exercise("ppo_clip_grad", "05_ppo", "hook", stream=41, task="""
ppo_clip_grad: a @triton.jit elementwise hook ppo_clip_grad(X, P, offs, m) -> grad for exercises.map_hook,
with X = (ratio, advantages) and P = (epsilon,): per element, the gradient of PPO's per-element loss
l = -min(r A, clip(r, 1-eps, 1+eps) A) with respect to log pi (r = exp(log pi - log pi_old), so
dr/dlog pi = r): -A r where the unclipped term r A is the minimum, ties included (r A = clip(r) A: inside
the clip range and at its edges, r = 1 - eps, 1, 1 + eps), and 0 where the clipped term is strictly smaller.
That is the gradient of ppo_clip_loss(..., reduction="none")'s element, what its autograd gives; the
default mean's is it divided by N.
""" + HOOK_RULES, needs="hook", run=_map_with(2), scan=None, hint=lambda *a: _ppo_clip_grad_hint(*a),
   key="the gradient flows")  # where the gradient flows (outside the range, at ties) is the exercise: no partial credit
def _ppo_clip_grad_cases(d):
    eps = d.choice(0.2, _EXACT_EDGES)
    lo, hi = (float(np.float32(1) - np.float32(eps)), float(np.float32(1) + np.float32(eps)))  # the hook's 1 ± eps

    def magnitudes(k):  # |A|, a few of them
        return d.pick(np.array([1.0, 2.0, 0.5, 1.5, 0.25, 1.0][:k]), lambda rng: rng.uniform(0.1, 2.0, k))

    # the regions 05 section 1's table lacks: outside the range, the unclipped term the minimum
    lacking_r = np.concatenate([d.pick(np.array([0.5, 0.3]), lambda rng: rng.uniform(0.2, lo - 0.05, 2)),
                                d.pick(np.array([1.5, 2.5]), lambda rng: rng.uniform(hi + 0.05, 3.0, 2))])
    lacking_a = magnitudes(4) * np.array([1.0, 1.0, -1.0, -1.0])
    # the clipped term strictly the smaller: A > 0 above the range, A < 0 below it
    clipped_r = np.concatenate([d.pick(np.array([1.5, 3.0]), lambda rng: rng.uniform(hi + 0.05, 3.0, 2)),
                                d.pick(np.array([0.5, 0.3]), lambda rng: rng.uniform(0.2, lo - 0.05, 2))])
    clipped_a = magnitudes(4) * np.array([1.0, 1.0, -1.0, -1.0])
    # ties: both terms equal, at the edges (exact in float32), at 1, and inside
    inside = d.pick(np.array([0.9, 1.1]), lambda rng: rng.uniform(lo + 0.02, hi - 0.02, 2))
    tie_r = np.array([lo, 1.0, hi, lo, 1.0, hi, inside[0], inside[1]])
    tie_a = np.concatenate([magnitudes(3), -magnitudes(3), magnitudes(2) * np.array([1.0, -1.0])])
    # both signs of A, ratios across the range (a count drawn: other sizes under a seed)
    k = d.int(16, 12, 40)
    both_r = d.pick(np.array([0.3, 0.5, 0.85, 1.0, 1.1, 1.5, 2.0, 3.0] * 2),
                    lambda rng: np.concatenate([rng.uniform(0.2, 3.0, k - 4), [lo, hi, lo, hi]]))
    both_a = d.pick(np.array([1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 1.5, -1.5, -1.0, 1.0, -0.5, 0.5, -2.0, 2.0, -1.5, 1.5]),
                    lambda rng: rng.uniform(0.1, 2.0, k) * rng.choice([-1.0, 1.0], k))
    out = []
    for what, ratio, adv in (
            ("outside the clip range, where the unclipped term is the minimum (the regions 05 section 1's table "
             "lacks): the gradient flows", lacking_r, lacking_a),
            ("outside the clip range, where the clipped term is strictly smaller: no gradient", clipped_r, clipped_a),
            ("ties, r = 1 - eps, 1, 1 + eps and inside the range: the gradient flows", tie_r, tie_a),
            ("both signs of A, ratios across the range", both_r, both_a)):
        out.append((f"{what}, eps = {eps:g}", (_t(ratio), _t(adv), eps), {}, _ppo_clip_grad_of(ratio, adv, eps)))
    return out


# eps, 3 decimals from 0.1 to 0.3, whose 1 ± eps is the same float32 number whether a hook adds in float32 (a GPU's
# compile) or in float64 and rounds (the interpreter, 1.134 for eps = 0.134 one ulp below): the ties at the edges
_EXACT_EDGES = [e for e in (round(0.1 + k / 1000, 3) for k in range(201))
                if np.float32(1) + np.float32(e) == np.float32(1 + e)
                and np.float32(1) - np.float32(e) == np.float32(1 - e)]


def _ppo_clip_grad_of(ratio, adv, eps):
    """d l / d log pi per element, decided on the float32 numbers the hook sees: -A r where min(r A, clip(r) A)
    is r A (ties included), 0 where the clipped term is strictly smaller; float64 values."""
    r32, a32, e32 = np.float32(ratio), np.float32(adv), np.float32(eps)
    clipped = np.clip(r32, np.float32(1) - e32, np.float32(1) + e32) * a32
    return np.where(clipped < r32 * a32, 0.0, -np.float64(a32) * np.float64(r32))


def _ppo_clip_grad_hint(args, i, bad, got, expected):
    """The usual slips, each where it is what the wrong elements hold: the sign flipped, zero where the
    gradient must flow (the clip on the wrong side of A's sign), ties given 0 or half, the factor r left out."""
    ratio, adv, eps = _as_numpy(tuple(args[:3]))
    if np.shape(adv) != bad.shape:
        return None
    r32, e32 = np.float32(ratio), np.float32(eps)
    lo, hi = np.float32(1) - e32, np.float32(1) + e32
    outside = (r32 < lo) | (r32 > hi)
    flows = expected != 0
    tie = np.float32(adv) * np.clip(r32, lo, hi) == np.float32(adv) * r32
    close = lambda x, y: np.allclose(x, y, rtol=1e-5, atol=1e-6)  # noqa: E731
    if (flows[bad]).all() and close(got[bad], -expected[bad]):
        return ("Every wrong element is the gradient with its sign flipped. The loss is minus the objective, "
                "l = -min(r A, clip(r) A), so where the unclipped term is the minimum, dl/dlog pi = -A r: "
                "negative where A > 0 (a step down the loss makes that action more likely)." + _fix(
                    " Return -adv * ratio where the gradient flows."))
    zero_where_it_flows = bad & flows & outside & np.isclose(got, 0.0, atol=1e-6)
    flows_where_it_is_zero = bad & ~flows & outside & np.isclose(got, -adv * ratio, rtol=1e-5, atol=1e-6)
    if zero_where_it_flows.any() and not (bad & ~(zero_where_it_flows | flows_where_it_is_zero)).any():
        more = (" And it flows where the clipped term is strictly smaller (A > 0 with r > 1 + eps, A < 0 with "
                "r < 1 - eps): the clip is on the wrong side of A's sign." if flows_where_it_is_zero.any() else "")
        return ("Your gradient is 0 at elements outside the clip range where it must flow: A > 0 with r < 1 - eps, "
                "or A < 0 with r > 1 + eps. There clip(r) A is the larger term, so min(r A, clip(r) A) is r A and "
                "the gradient is -A r. The clip stops the gradient on one side of the range for each sign of A: "
                "above 1 + eps where A > 0, below 1 - eps where A < 0. A ratio outside the range is not enough "
                "(clip_fraction counts those)." + more + _fix(
                    " Return 0 only where the clipped term is strictly smaller: "
                    "tl.where(clipped * adv < ratio * adv, 0.0, -adv * ratio)."))
    if tie[bad].all() and close(got[bad], 0.0):
        return ("Your gradient is 0 at ties, where r A = clip(r) A (every ratio inside the clip range, and r = "
                "1 - eps, 1 + eps exactly). There both terms are the minimum, and the gradient is the unclipped "
                "term's, -A r: autograd of the package's loss gives each term half, and each half is -A r / 2, "
                "since clip(r) = r there." + _fix(
                    " Zero the gradient only where the clipped term is strictly smaller (<, not <=)."))
    if tie[bad].all() and close(got[bad], expected[bad] / 2):
        return ("Your gradient at ties is half of -A r. torch.min's autograd does give each of two equal terms "
                "half, but the clipped term's half is not lost: inside the range and at its edges clip(r) = r "
                "passes it on, so the two halves add up to -A r, the unclipped term's gradient." + _fix(
                    " At a tie return -adv * ratio, as where the unclipped term is strictly smaller."))
    if flows[bad].all() and close(got[bad], -adv[bad]) and not close(-adv[bad], expected[bad]):
        return ("Your gradient is -A where it flows: the factor r is missing. The loss depends on log pi through "
                "r = exp(log pi - log pi_old), and dr/dlog pi = r, so dl/dlog pi = -A r (the two agree only at "
                "r = 1). -A is the gradient with respect to r." + _fix(
                    " Return -adv * ratio where the gradient flows."))
    return None


_ONE_PROGRAM_AT_MOST = 8192  # elements: more in one program is no block of a reduction (two_stage_mean)


def _programs(launch):
    """The programs of a launch whose grid was a tuple (None for a grid function: not known here)."""
    grid = launch.call[1].get("grid")
    if isinstance(grid, (tuple, list)) and all(isinstance(g, int) for g in grid):
        return math.prod(grid)
    return None


def _twice(fn, args, kw):
    """Two calls, the same bits; the first with at least two launches of the student's kernels and
    no atomics (counted under the interpreter, where programs run one after another, so a race
    never shows; compiled, looked for in the kernels' code)."""
    before, atomics = len(LAUNCHES), SEEN["atomics"]
    first = fn(*args)
    mine = [launch for launch in LAUNCHES[before:] if launch.mine]
    if not mine:
        raise AssertionError(_NO_KERNEL.format(fn=_your_function(fn)))
    if SEEN["atomics"] > atomics or (not INTERPRET and any(n.startswith("atomic_") for n in _kernel_reads(mine))):
        raise AssertionError("your kernel uses an atomic (tl.atomic_add): atomics commit in the order the "
                             "programs finish, so on a GPU the bits change from run to run (the interpreter "
                             "runs programs one after another and cannot show it); write each program's "
                             "partial sum and add them in a second launch")
    if len(mine) < 2:
        # the answer not in a tensor the launch received: the partials in Triton, their sum elsewhere
        one = isinstance(first, torch.Tensor) and first.untyped_storage().data_ptr() not in mine[0].storages
        raise _RuleBroken(f"{len(mine)} kernel launch: " + (
            "your partials were added outside your kernels (in PyTorch, say): add them in a second launch of yours"
            if one else "a one-program sum walks the whole input alone (one SM of a GPU); split it over programs, "
                        "then add their partials in a second launch"))
    n, most = args[0].numel(), max((_programs(launch) for launch in mine), default=None)
    if most == 1 and n >= _ONE_PROGRAM_AT_MOST:
        raise AssertionError(f"every launch of yours ran one program, on {n} elements: the first one walks the whole "
                             "input alone (one SM of a GPU) and the second has nothing to add; give the first a "
                             "program per BLOCK elements, grid = (triton.cdiv(n, BLOCK),)")
    last = _programs(mine[-1])
    if last is not None and last > 1:
        raise _RuleBroken(f"your last launch ran {last} programs: each adds all the partials and stores the same "
                          f"total in one place, the work done {last} times and a race that only happens to store "
                          "equal values; the finishing launch is one program, grid = (1,)")
    second = fn(*args)
    if not torch.equal(torch.as_tensor(first), torch.as_tensor(second)):
        raise AssertionError("two calls on the same input gave different bits (a sum in a fixed order gives the "
                             "same bits every time). Either the order of the additions changed (an atomic, a race), "
                             "or your code read memory it never wrote: torch.empty holds whatever was there before, "
                             "so a partial that no program stored (a first grid too small: n // BLOCK rounds down) "
                             "changes from call to call")
    return first


def _two_stage_hint(x, got, expected):
    """Where two_stage_mean divided by the lanes, or dropped the partials past one block: which."""
    n = x.numel()
    blocks = -(-n // 1024)
    lanes = 1024 * blocks
    if np.isclose(float(got), float(expected) * n / lanes, rtol=1e-5) and lanes != n:
        return f"That is the sum divided by {lanes:,}, the lanes of the blocks, padding included." + _fix(
            f" Divide by n = {n:,}.")
    padded = _padding_added(x, got)
    if padded:
        return padded
    if n > 1024 * 1024:  # (before the full blocks' check: n // 8192 blocks of 8192 can be 1024 * 1024 elements)
        return (f"This case has n = {n:,} elements, {blocks:,} blocks of 1024 (more with a smaller BLOCK), so more "
                "partial sums than one block of the second stage holds: does it add all of them (a loop over the "
                "partials, block by block)?")
    return _one_block_of_partials(x, got) or _full_blocks_only(x, got) or _nothing_written(x, got)


def _padding_added(x, got):
    """Masked loads whose other= is not 0 (other=1.0, say): the sum is off by the same number c for each
    padding lane, past n in the first launch or past the last partial in the second (same BLOCK in both,
    a power of two); c a small whole number or a half, so that a wrong answer of another kind is not
    taken for it."""
    n = x.numel()
    total = float(x.detach().cpu().double().sum())
    off = float(got) * n - total
    tol = 1e-5 * float(x.detach().cpu().double().abs().sum()) + 1e-3
    found = []
    for block in (2 ** k for k in range(4, 14)):
        parts = -(-n // block)
        first, second = parts * block - n, -(-parts // block) * block - parts
        where = ("past n in the first launch, or past the last partial in the second" if first == second else
                 "past n in the first launch")
        for lanes, said in ((first, where), (second, "past the last partial in the second launch"),
                            (first + second, "past n in the first launch and past the last partial in the second")):
            if lanes <= 0:
                continue
            c = round(2 * off / lanes) / 2
            if c != 0 and abs(c) <= 10 and (c == int(c) or abs(c) == 0.5) and abs(off - lanes * c) <= tol:
                # (ties: a whole c, c nearest 1, blocks nearest 1024, the hints' BLOCK)
                found.append((c != int(c), abs(abs(c) - 1), abs(block.bit_length() - 11), lanes, block, c, said))
    if not found:
        return None
    *_, lanes, block, c, said = min(found)
    return (f"The lanes past n added something: your sum (mean times n) is off by {_num(off)}, that is {c:g} for "
            f"each of the {lanes:,} padding lanes ({said}, blocks of {block}). What does your masked tl.load return "
            "there (other=)?" + _fix(" Load with other=0.0, so that a padding lane adds 0, in both launches."))


def _nothing_written(x, got):
    """A first grid of n // BLOCK programs over a buffer from torch.empty: at n < BLOCK no program wrote a
    partial, and the finisher added whatever the memory held."""
    x = x.detach().cpu().double().numpy()
    if x.size >= 16 or np.isclose(float(got), -x.mean(), rtol=1e-5):  # (n // BLOCK is 0 for any BLOCK of 16 up)
        return None
    if not abs(float(got)) <= 100 * (np.abs(x).max() + 1):
        said = f"At n = {x.size} your mean is far from anything the input holds"
    else:  # (a small leftover, round 80's 5.92747e-07: the slips told apart before this one do not give it)
        said = (f"At n = {x.size} your mean, {float(got):.6g}, is not the input's "
                + (f"one value, {x[0]:.6g}" if x.size == 1 else f"mean, {x.mean():.6g}"))
    return (said + ": it looks like memory that no program wrote. Does the first launch have a program for the "
            "last, partial block? n // BLOCK is 0 here, so the second stage read uninitialised memory: a partial "
            "sum in a buffer from torch.empty (which holds whatever was there before) that no program stored."
            + _fix(" The first launch's grid: (triton.cdiv(n, BLOCK),)."))


def _full_blocks_only(x, got):
    """A first grid of n // BLOCK programs: the last, partial block has none, so the mean holds the full
    blocks' sum over n (0 where n < BLOCK)."""
    x = x.detach().cpu().double().numpy()
    n = x.size
    for block in (2 ** k for k in range(4, 14)):
        if n % block and np.isclose(float(got), x[:n // block * block].sum() / n, rtol=1e-5, atol=1e-7):
            return ("That is the sum of the full blocks only, over n (0 where n < BLOCK, or whatever an "
                    "unwritten partial held): the last, partial "
                    "block had no program. n // BLOCK rounds down; the first grid needs a program for a partial "
                    "block too." + _fix(" The first launch's grid: (triton.cdiv(n, BLOCK),)."))
    return None


def _one_block_of_partials(x, got):
    """A finisher that reads one block of partial sums, whatever the student's BLOCK: the sum of the
    first BLOCK * BLOCK elements over n."""
    x = x.detach().cpu().double().numpy()
    n = x.size
    for block in (2 ** k for k in range(4, 13)):
        if block * block < n and np.isclose(float(got), x[:block * block].sum() / n, rtol=1e-4, atol=0):
            return (f"That is the sum of the first {block * block:,} elements only, over n: with blocks of "
                    f"{block}, a second stage of one block adds {block} partial sums, and this case has "
                    f"{-(-n // block):,}." + _fix(" Loop over the partials, block by block, in a fixed order."))
    return None


@_exercise("two_stage_mean", "05_ppo", "kernel", stream=11, task="""
two_stage_mean(x) -> a 0-d tensor: the mean of a 1-D float32 tensor by the loss's reduction in two
launches: one program per BLOCK elements writes its partial sum (masked: padding adds 0), then one
program adds the partials in a fixed order and divides by n. The checker calls it twice on each
input: the two results must be the same bits.
""", needs="kernel", run=_twice, scan=None, recompute=lambda x: np.float64(x.mean()),
   hint=lambda args, i, bad, got, expected: _two_stage_hint(args[0], got, expected))
def _two_stage_cases(d):
    rng = d.rng
    ns = (1, d.int(777, 300, 1500), d.int(20000, 3000, 20000),
          d.int(1_100_000, 1_049_000, 1_200_000))  # more partials than one block of 1024: the finisher loops
    ns = tuple(n + (n % 1024 == 0) for n in ns)  # never a whole number of blocks: padding to get right
    return [(f"n={n}", (_t(x),), {}, np.float64(x.mean())) for n in ns for x in (rng.normal(size=n) + 0.5,)]


# ---- 06: SAC ---------------------------------------------------------------------------------------
def _soft_lambda_hint(args, got, expected):
    """soft_lambda_targets' slips in the continuation's entropy term, -alpha log_probs_{t+1} inside lam's
    term: left out, taken at full weight (so read even at lambda = 0), read at step t, or its sign flipped;
    in the soft value
    V'_t: + alpha log pi, or the larger critic; and at lambda = 0, where nothing is carried, that the error
    is in the step's own b."""
    r, q1, q2, nlp, lp, term, gamma, alpha, lam = _as_numpy(tuple(args))
    last = np.zeros(r.shape, dtype=bool)
    last[:, -1] = True
    nxt = np.concatenate([lp[:, 1:], np.zeros_like(lp[:, :1])], 1)  # log_probs_{t+1}; none at the window's end
    with np.errstate(all="ignore"):
        v, a = np.minimum(q1, q2) - alpha * nlp, np.where(term | last, 0.0, gamma * lam)

        def targets(weight, log_pi, a=a, v=v):
            return reference.linear_scan(a, r + np.where(term, 0.0, gamma * np.where(
                last, v, (1 - lam) * v - weight * alpha * log_pi)))

        a_times = np.where(term | last, 0.0, gamma * lam * (1 - alpha * nxt))  # the term multiplying G_{t+1}

        if not np.allclose(targets(lam, nxt), expected, rtol=1e-6, atol=1e-6):
            return None  # (these pairs are not the task's: no slip to name)
        fix = _fix(" In b, the continuation's entropy term is gamma (1 - term_t) lam_t (-alpha log_probs_{t+1}), lam_t = "
                   "lam where the trace goes on to t + 1, 0 at the window's last step.")
        kept = reference.linear_scan(np.where(term, 0.0, gamma * lam), r + np.where(
            term, 0.0, gamma * ((1 - lam) * v - lam * alpha * nxt)))  # lam at the window's last step too
        if _is_slip(got, kept, expected):
            return ("Your targets keep lambda at the window's last step: no G_T follows it (the scan starts from 0), "
                    "so lam_t = 0 there and the bracket is V'_t alone, the bootstrap at full weight." + _fix(
                        " lam_t = tl.where(m & (t + 1 < T) & ~term, lam, 0.0) in b; a may keep the plain lam (the reset "
                        "cuts the window's last step)."))
        for slip, said in ((targets(1.0, nxt), "Your targets read -alpha log_probs_{t+1} at full weight: in the task "
                            "it is inside lam's term, lam (G_{t+1} - alpha log_probs_{t+1}), so at lam = 0 no "
                            "log_probs are read at all."),
                           (targets(0.0, nxt), "Your targets leave out the continuation's entropy term, lam (-alpha "
                            "log_probs_{t+1}): the soft return pays alpha log pi at every step it continues through."),
                           (targets(lam, lp), "Your targets read log_probs at step t: the continuation's entropy term "
                            "is the next action's, -alpha log_probs_{t+1}, loaded at offs + 1."),
                           (reference.linear_scan(a, r + np.where(term, 0.0, np.where(
                               last, gamma * v, gamma * (1 - lam) * v - lam * alpha * nxt))),
                            "Your continuation's entropy term lacks the gamma in front of the bracket: G_t = r_t + "
                            "gamma (1 - term_t)[(1 - lam) V'_t + lam (G_{t+1} - alpha log_probs_{t+1})], so it is "
                            "-gamma lam alpha log_probs_{t+1}, discounted as the rest of the bracket is."),
                           (targets(-lam, nxt), "Your continuation's entropy term has the wrong sign: + lam alpha "
                            "log_probs_{t+1}. The soft return subtracts alpha log pi at every step it continues "
                            "through (the entropy bonus is -alpha log pi), lam (G_{t+1} - alpha log_probs_{t+1})."),
                           *((targets(w, nxt, a_times), "Your a_t holds the continuation's entropy term: -alpha "
                              "log_probs_{t+1} is added beside G_{t+1}, lam (G_{t+1} - alpha log_probs_{t+1}), it does "
                              "not multiply it. a_t is the multiplier of G_{t+1} alone.") for w in (0.0, lam))):
            if _is_slip(got, slip, expected):
                return said + fix
        for v_slip, said in ((np.minimum(q1, q2) + alpha * nlp, "Your soft value V'_t adds alpha log pi(u'|s_{t+1}): "
                              "the soft value subtracts it: its entropy bonus is -alpha log pi."),
                             (np.maximum(q1, q2) - alpha * nlp, "Your soft value V'_t takes the larger critic: SAC's "
                              "two critics are there to take the smaller, min(Q1, Q2), against overestimation.")):
            if _is_slip(got, targets(lam, nxt, v=v_slip), expected):
                return _Whole(said + _fix(" V'_t = min(Q1, Q2) - alpha * next_log_probs, both critics loaded at offs."))
    if np.ndim(lam) == 0 and float(lam) == 0.0:
        return _Whole("At lambda = 0 nothing is carried (a_t = 0 at every step), so each target is r_t + gamma "
                      "(1 - term_t) V'_t on its own: the error is in that step's b, most likely in V'_t (the smaller "
                      "critic minus alpha next_log_probs), not in the scan or the window's end.")
    return None


@_exercise("soft_lambda_targets", "06_sac", "hook", stream=9, task="""
soft_lambda_targets: a @triton.jit prologue soft_lambda_targets(X, P, offs, t, m, T) -> (a, b, reset) for
exercises.scan_hook, with X = (rewards, next_q1, next_q2, next_log_probs, log_probs, terminated)
and P = (gamma, alpha, lam): the soft lambda-return (rltriton_lite.sac_targets with two critics).
V'_t = min(Q1, Q2)(s_{t+1}) - alpha log pi(u'|s_{t+1}), with u' an action sampled fresh at s_{t+1};
G_t = r_t + gamma (1 - term_t)[(1 - lam) V'_t + lam (G_{t+1} - alpha log_probs_{t+1})], with V'_t
alone in the bracket at the window's last step (no G_T follows it: the trace is cut there). A
termination zeroes the bracket, G_t = r_t: the trace is cut there too. Behind a termination
next_q1, next_q2 and next_log_probs may be NaN: select them away with tl.where, do not multiply
by (1 - term).
""" + HOOK_RULES + NEXT_STEP + RESET_RULE + PAST_RULE, needs="hook", run=_scan_with(6),
    hint=lambda args, i, bad, got, expected: _soft_lambda_hint(args, got, expected))
def _soft_lambda_cases(d):
    rng, gamma, alpha, lam = d.rng, d.real(0.9, 0.8, 0.99), d.real(0.3, 0.1, 0.5), d.real(0.8, 0.5, 0.95)
    out = []
    for shape, lam, p_term, past in (((1, d.int(5, 2, 9)), 0.0, 0.0, 0.0), ((2, d.int(30, 10, 64)), lam, 0.0, 0.0),
                                     ((3, d.int(100, 30, 140)), lam, 0.1, 0.0),
                                     ((2, d.int(20, 10, 64)), lam, 0.1, PAST_WINDOW)):
        r, q1, q2, nlp, lp = rng.normal(size=(5, *shape))
        term = _flags(rng, shape, p_term)
        term[-1, -1] |= p_term > 0 and not past  # a termination at the window's last step
        if past:
            term[:, -1] = False  # the window ends inside an episode: the last step's own reset keeps y_T out
        expected = reference.sac_targets(r, [q1, q2], nlp, gamma=gamma, alpha=alpha, lambda_=lam, log_probs=lp,
                                         terminated=term)
        what = f"lambda={lam}, shape {shape}" + (", terminations" if p_term else "")
        if p_term:  # the next state's values behind a termination: NaN, never to be read
            q1, q2, nlp = (np.where(term, np.nan, x) for x in (q1, q2, nlp))
            what += " (NaN next values behind them)"
        suffix, kw = _past_case(past)
        out.append((what + suffix, (_t(r), _t(q1), _t(q2), _t(nlp), _t(lp), _t(term, torch.bool), gamma, alpha, lam),
                    kw, expected, {TERM: term, **_carry_steps(shape)}))
    return out


# ---- 07: CRR ---------------------------------------------------------------------------------------
@_exercise("awr_weights", "07_crr", "hook", stream=18, task="""
awr_weights: a @triton.jit elementwise hook awr_weights(X, P, offs, m) -> weight for
exercises.map_hook, with X = (advantages,) and P = (beta, max_weight): AWR's exponential weights
exp(A / beta), clipped at max_weight (AWR and CRR use 20). A NaN advantage (a broken critic) must
give a NaN weight, loud, not a plausible number.
""" + HOOK_RULES, needs="hook", run=_map_with(1), scan=None, hint=lambda *a: _awr_hint(*a))
def _awr_cases(d):
    A = d.pick(np.array([-3.0, -0.5, 0.0, 0.5, 2.0, 4.0]), lambda rng: rng.permutation(np.concatenate(
        [rng.uniform(-3, 0, 3), rng.uniform(0, 2, 3), rng.uniform(4.5, 6, 1)])))  # one above the clip
    huge = d.pick(np.array([-1000.0, -3.0, 0.0, 3.0, 50.0, 1000.0]), lambda rng: rng.permutation(np.concatenate(
        [rng.uniform(-1200, -500, 1), rng.uniform(-2, 2, 3), rng.uniform(50, 80, 1), rng.uniform(500, 1200, 1)])))
    with np.errstate(over="ignore"):  # exp(1000) is inf: the weight is max_weight all the same
        return [(f"beta={beta}" + (f", max_weight={w:g}" if w != 20 else "")
                 + (", advantages up to +-1000 (exp(A / beta) overflows to inf in float32 at the largest)" if big
                    else ""),
                 (_t(a), beta, w), {}, np.minimum(np.exp(a / beta), w))
                for a, beta, w, big in ((A, d.real(1.0, 0.7, 1.3), 20.0, False), (A, d.real(0.5, 0.3, 0.7), 20.0, False),
                                        (huge, d.real(1.0, 0.7, 1.3), 20.0, True),
                                        (A, d.real(1.0, 0.7, 1.3), 3.0, False))] + [  # P[1] read, not a literal 20
            ("beta=1.0, a NaN advantage among them (a broken critic: its weight must be NaN)",
             (_t(np.where(np.arange(A.size) == 1, np.nan, A)), 1.0, 20.0), {},
             np.minimum(np.exp(np.where(np.arange(A.size) == 1, np.nan, A)), 20.0))]


def _awr_hint(args, i, bad, got, expected):
    """Where the weights are AWR's with a usual slip: which one."""
    A, beta, max_w = _as_numpy(tuple(args[:3]))
    dropped = np.isnan(A) & ~np.isnan(got)
    if dropped.any():  # (a round-61 review: tl.minimum(nan, max_weight) is max_weight, and it passed)
        return _Whole(f"A NaN advantage got the weight {_num(got[dropped][0])}, a plausible number: a broken critic "
                      "would go unnoticed. Its weight must be NaN (notebook 07: NaN fails loudly in exp mode). "
                      "Triton's elementwise min, max and clamp drop a NaN by default (their propagate_nan), and a "
                      "comparison with a NaN is False (tl.where(w < max_weight, w, max_weight) gives max_weight)." + _fix(
                          " tl.minimum(w, max_weight, propagate_nan=tl.PropagateNan.ALL), or a select that keeps w "
                          "where it is not above max_weight: tl.where(w > max_weight, max_weight, w)."))
    with np.errstate(all="ignore"):
        slips = {"exp(A) without the temperature" + _fix(": divide the advantage by beta"):
                     np.minimum(np.exp(A), max_w),
                 "exp(A * beta), the advantage times the temperature" + _fix(
                     ": the temperature divides the advantage, exp(A / beta)"): np.minimum(np.exp(A * beta), max_w),
                 "exp(A) / beta, the exponential divided by the temperature" + _fix(
                     ": the temperature divides the advantage inside the exp, exp(A / beta)"):
                     np.minimum(np.exp(A) / beta, max_w),
                 "min(exp(A), max_weight) / beta, the clipped exponential divided by the temperature: beta divides "
                 "exp(A), not A, and the clip comes before it" + _fix(
                     ": the temperature divides the advantage inside the exp, exp(A / beta); clip that at max_weight, "
                     "last"): np.minimum(np.exp(A), max_w) / beta,
                 f"no weight is clipped at max_weight = {max_w:g}: where exp(A / beta) is above {max_w:g}, yours "
                 f"is exp(A / beta) itself. Either nothing clips it, or your clip is at a higher threshold, one that "
                 f"no weight here reaches (A / beta clipped at max_weight before the exp is one: it bounds the weight "
                 f"at exp(max_weight) = {np.exp(max_w):.3g}). What bounds the weight at max_weight is a clip of the "
                 f"weight itself at max_weight, or of A / beta at ln(max_weight) = {np.log(max_w):.4g}, before the exp"
                 + _fix(": tl.minimum(tl.exp(A / beta), max_weight)"): np.exp(A / beta),
                 "the clip takes the larger of the two, max(exp(A / beta), max_weight): every weight is at least "
                 "max_weight, where a clip from above keeps the smaller" + _fix(
                     ": tl.minimum(tl.exp(A / beta), max_weight)"): np.maximum(np.exp(A / beta), max_w),
                 "the advantage clipped before the exp, not the weight" + _fix(": clip exp(A / beta) at max_weight"):
                     np.exp(np.minimum(A / beta, max_w)),
                 "a clip from below too (at 1 / max_weight): nothing clips AWR's weights from below, a bad action's "
                 "weight may go to 0" + _fix(": clip from above only, tl.minimum(w, max_weight)"):
                     np.clip(np.exp(A / beta), 1 / max_w, max_w),
                 "a clip from below too (at 1): nothing clips AWR's weights from below, a negative advantage's weight "
                 "is below 1 and may go to 0" + _fix(": clip from above only, tl.minimum(w, max_weight)"):
                     np.clip(np.exp(A / beta), 1.0, max_w)}
    if max_w != 20:  # (20 is AWR's and CRR's usual clip: a literal 20 passes every case that passes 20)
        slips[f"the clip is 20, not max_weight = P[1] (here {max_w:g})" + _fix(": clip at P[1], the max_weight "
                                                                            "passed in")] = np.minimum(np.exp(A / beta), 20.0)
    for what, slip in slips.items():
        if _is_slip(got, slip, expected):
            return _Whole(f"These are AWR's weights with a slip: {what}.")
    at = _awr_clip_of_yours(A / beta, max_w, got, expected)
    if at is not None:  # (a round-50 review: a clip at another threshold was told "not clipped")
        return _Whole(f"These are AWR's weights with a slip: the weight is clipped at {at:.4g}, not at max_weight = "
                      f"P[1] = {max_w:g}. A clip of the weight bounds it at its own threshold, so that threshold is "
                      f"max_weight itself (or, on A / beta before the exp, ln(max_weight) = {np.log(max_w):.4g})"
                      + _fix(": tl.minimum(tl.exp(A / beta), P[1])") + ".")
    if (~np.isfinite(got) & (A / beta > 88)).any():  # float32's exp overflows above 88.7
        return _Whole("exp(A / beta) is inf in float32 there (A / beta > 88), and inf * 0 or inf / inf is NaN."
                      + _fix(" Clip the weight itself with tl.minimum, which maps inf to max_weight."))
    return None


def _awr_clip_of_yours(x, max_w, got, expected):
    """Where ``got`` is exp(x) clipped from above at one threshold other than ``max_w`` (exp(x) itself where
    it is below that threshold, the threshold where it is above, at least one lane clipped): the threshold,
    else None (a clip at a threshold no weight reaches is exp(x) everywhere: the unclipped slip's)."""
    with np.errstate(all="ignore"):
        w = np.exp(x)
        got = np.asarray(got, dtype=np.float64)
        if got.shape != w.shape or not np.isfinite(got).all():
            return None
        clipped = ~np.isclose(got, w, rtol=1e-5, atol=1e-6)
        if not clipped.any() or not (got[clipped] < w[clipped]).all():
            return None
        at = float(got[clipped][0])
        if not np.allclose(got[clipped], at, rtol=1e-5) or np.isclose(at, max_w, rtol=1e-5) \
                or not np.allclose(got, np.minimum(w, at), rtol=1e-5, atol=1e-6) \
                or np.allclose(got, expected, rtol=1e-5, atol=1e-6):
            return None
    return at


@_checker_only
def _awac_reference(A, beta):
    """AWAC's batch-normalised weights, N softmax(A / beta), in float64 (the max subtracted)."""
    x = np.asarray(A, dtype=np.float64) / beta
    e = np.exp(x - x.max())
    return x.size * e / e.sum()


def _awac_hint(A, beta, got, expected):
    """awac_weights' usual slips: softmax without the N, exp without the max, padding in the sum."""
    got = np.asarray(got, dtype=np.float64)
    if got.shape != expected.shape:
        return None
    n = got.size
    if n > 1 and np.allclose(got * n, expected, rtol=1e-4, atol=1e-7):
        return _Whole("These are softmax's probabilities, which sum to 1: AWAC's weights are N times them, so "
                      "that they sum to N and average 1 (a weight of 1 is an average sample)." + _fix(
                          " Multiply by N, the number of advantages."))
    if not np.isfinite(got).all() or not got.any():
        x, top_a = _as_numpy(A) / beta, _as_numpy(A).max()
        with np.errstate(all="ignore"):
            shifted = lambda top: np.exp((x - top).astype(np.float32))  # noqa: E731 -- exp in float32, as a kernel's
            max_of_a = np.isfinite(shifted(x.max())).all() and not np.isfinite(shifted(top_a)).all()
        if beta != 1 and max_of_a:
            return _Whole(f"exp overflowed to inf: here beta = {beta:g}, so A / beta runs up to {x.max():.4g}, while "
                          f"the max of A is {top_a:.4g}. Subtracting the max of A from A / beta leaves "
                          f"exp({x.max() - top_a:.4g}), inf in float32 (above 88.7). Is your max taken "
                          "of A, before the division by beta?" + _fix(
                              " The max pass takes the max of A / beta: divide each loaded block by beta before "
                              "tl.max."))
        below = "" if x.max() >= -104 else (
            " Every A / beta here is below -104: exp(A / beta) underflows unless the max is subtracted first, and a "
            "running max that starts at 0, not -inf, stays 0 and subtracts nothing." if x.size % 1024 == 0 else
            " Every A / beta here is below -104, and N is not a whole number of blocks: lanes past N loaded as 0 "
            "make the max 0, so exp(A / beta - max) underflows (if the case with whole blocks passed, look there "
            "first; else the max is not subtracted, or a running max starts at 0, not -inf).")
        if x.size > 1024 and x[:1024].max() < 88 < x.max():  # the largest past the first block
            below += (" Here the largest lie past the first 1,024 elements: does your max walk all N elements, "
                      "block by block?")
        return _Whole("exp(A / beta) overflowed to inf or underflowed to 0 (in float32 exp(x) is inf above x = "
                      f"88.7 and 0 below about -104; here A / beta runs from {x.min():.4g} to {x.max():.4g}), or "
                      "lanes past N set the max." + below + _fix(
                          " Subtract the max of A / beta before the exp (the softmax is unchanged by a shift), start "
                          "the running max at -inf, and load the lanes past N as -inf."))
    if beta != 1 and np.allclose(got, _awac_reference(_as_numpy(A), 1.0 / beta), rtol=1e-4, atol=1e-7):  # (round 57's case)
        return _Whole(f"These are AWAC's weights of A * beta, not A / beta: the temperature divides the advantage "
                      f"(here beta = {beta:g})." + _fix(" Load A and divide by beta before the max and the exp."))
    with np.errstate(all="ignore"):
        ratio = got / expected
    for block in (2 ** k for k in range(13, 3, -1)):  # the largest first: blocks of 1024 are blocks of 16 too
        starts = np.arange(0, n, block)
        scales = ratio[starts]
        if block < n and np.allclose(ratio, np.repeat(scales, block)[:n], rtol=1e-4) \
                and not np.allclose(scales, scales[0], rtol=1e-3):
            return _Whole(f"Within each block of {block} your weights are right up to one factor, but the factor "
                          "changes from block to block: each block is normalised on its own (its own max, its own "
                          "sum). A weight depends on the whole batch: the max and the sum must cover all N "
                          "advantages before any weight is written." + _fix(
                              " One program, whose three passes each loop over every block: for start in range(0, n, "
                              "BLOCK)."))
    if not np.allclose(ratio, ratio.flat[0], rtol=1e-4):  # (the slips below scale every weight alike)
        return None
    if ratio.flat[0] < 1:
        return _Whole(f"Every weight is too small by the same factor, {ratio.flat[0]:.4g}: your sum of the "
                      "exponentials holds terms it should not, the lanes past N?" + _fix(
                          " Load them as -inf (other=float(\"-inf\")): exp gives 0 there, and the max ignores them."))
    if ratio.flat[0] > 1:
        return _Whole(f"Every weight is too large by the same factor, {ratio.flat[0]:.4g}: your sum of the "
                      f"exponentials misses terms. Does each pass walk all N = {n} elements, block by block?" + _fix(
                          " Loop over the blocks in every pass: for start in range(0, n, BLOCK)."))
    return None


@_exercise("awac_weights", "07_crr", "kernel", stream=29, task="""
awac_weights(advantages, beta) -> w: AWAC's weights, normalised over the batch instead of clipped,
w_i = N softmax(A / beta)_i = N exp(A_i / beta) / sum_j exp(A_j / beta), for a 1-D float32 tensor
of N advantages (w sums to N: its mean is 1). w is a tensor that a @triton.jit kernel of your own
wrote. One program can do it, walking the tensor in blocks of BLOCK elements (a tl.constexpr, 1024
say) three times: the max of A / beta, then the sum of exp(A / beta - max), then w. Lanes past N
must change neither the max nor the sum. A / beta may be large (exp overflows float32 above 88.7)
or far below 0 (exp underflows to 0): subtract the max before the exp.
""", needs="kernel", scan=None, recompute=lambda A, beta: _awac_reference(A, beta), key="the max", walks_blocks=True,
    hint=lambda args, i, bad, got, expected: _awac_hint(args[0], args[1], got, expected))
def _awac_cases(d):
    rng, out = d.rng, []
    n1, n2, n3 = d.int(2500, 1100, 4000), d.int(1700, 1100, 2500), d.int(1500, 1100, 2000)
    n1, n2, n3 = (n + (n % 1024 == 0) for n in (n1, n2, n3))  # never a whole number of blocks: padding to get right
    n4 = 1024 * d.int(2, 2, 3)  # whole blocks: no lanes past N, so a slip there cannot show (a running max's start can)
    beta = d.real(0.5, 0.3, 2.0)
    grid = lambda n: np.round(64 * rng.normal(size=n)) / 64  # noqa: E731 -- exact in float32, and so A - max
    big = grid(n2)
    # past the first block alone: a max taken over that block leaves exp(A - max) to overflow
    big[rng.choice(np.arange(1024, n2), 3, replace=False)] = rng.integers(500, 1000, size=3)
    for what, A, b in (
            ("N=5, beta=1", rng.normal(size=5), 1.0),
            (f"N={n1}, beta={beta}: more than one block of 1024", rng.normal(size=n1), beta),
            # (the underflow first: a kernel with no max at all is told so there, before the case a max over
            # the first block alone fails)
            (f"N={n4}, beta=1, every advantage near -1000, a whole number of blocks of 1024 (no lanes past N; exp "
             "underflows to 0 without the max subtracted)", grid(n4) - 1000.0, 1.0),
            (f"N={n3}, beta=1, every advantage near -1000, lanes past N (exp underflows to 0 without the max "
             "subtracted)", grid(n3) - 1000.0, 1.0),
            (f"N={n2}, beta=1, three advantages from 500 to 1000, past the first block (exp overflows float32 "
             "without the max over every block subtracted)", big, 1.0)):
        out.append((what, (_t(A), b), {}, _awac_reference(A, b)))
    # last, so that a kernel with no max at all is told so above: a max of A, not of A / beta, fails here alone (the
    # extreme cases above have beta = 1, where the two are one: a round-55 review's case passed them)
    n5 = d.int(700, 300, 1000)
    A = 20.0 + np.round(640 * rng.random(n5)) / 64  # on a grid of 1/64: exact in float32
    A[rng.integers(n5)] = 30.0  # the max: exp(120 - 30) is inf in float32
    out.append((f"N={n5}, beta=0.25, advantages from 20 to 30 (A / beta up to 120: exp overflows float32 unless the "
                "max of A / beta is subtracted)", (_t(A), 0.25), {}, _awac_reference(A, 0.25)))
    return out


# ---- 08: profiling ---------------------------------------------------------------------------------
@_exercise("vtrace_floor_bytes", "08_profiling", "concept", stream=19, task="""
vtrace_floor_bytes(B, T, elem_bytes) -> bytes: the fewest bytes V-trace's forward must move for a
(B, T) rollout, as notebook 04's kernel reads and writes it (the profiler's call: log_rhos one
tensor, next_values a tensor of its own, floats of elem_bytes bytes, one flag, terminated, of 1 byte).
""", scan=None, says_expected=False, hint=lambda args, i, bad, got, expected: _floor_hint(*args, got))
def _vtrace_floor_cases(d):
    return [(f"B={B}, T={T}, {e}-byte elements", (B, T, e), {}, B * T * (6 * e + 1))
            for B, T, e in ((1, 1, 4), (d.int(16384, 1000, 65536), d.int(1024, 16, 4096), d.choice(4, (4, 8))),
                            (d.int(4096, 1, 8192), d.int(128, 1, 1024), 2))]


def _floor_hint(B, T, e, got):
    """What a wrong count of vtrace_floor_bytes left out, where it is one of the usual slips."""
    per_step = {6 * e: "the terminated flag's byte per step is left out",
                4 * e + 1: "two floats per step are missing. That is GAE's count (section 1: r_t and V_t read, "
                           "the flag, two outputs written), or V-trace's four float reads and its flag without the "
                           "two outputs it writes. V-trace's kernel reads log_rhos and next_values besides r_t and "
                           "V_t, and writes vs and the policy-gradient advantages",
                5 * e + 1: "one tensor of elem_bytes per step is missing: one of the four float inputs that "
                           "notebook 04's kernel reads (next_values, a tensor of its own, among them) or one of the "
                           "two outputs it writes (a count cannot say which: list the tensors with their bytes)",
                7 * e: "the flag is one byte per step, not elem_bytes",
                8 * (6 * e + 1): "that is the count in bits: the task asks for bytes",
                7 * e + 1: "one float tensor too many: notebook 04's kernel reads four (rewards, values, "
                           "next_values and log_rhos, the importance weights in one tensor, log pi - log mu, not "
                           "two log-probabilities) and writes two (vs and the policy-gradient advantages); a count "
                           "cannot say which one you added: list the tensors with their bytes",
                6 * e + 2: "one flag too many: notebook 04's call reads one, terminated (a truncation is not among "
                           "its inputs)"}
    try:
        if e == 2 and 2 * float(got) == B * T * (6 * 4 + 1):
            return ("that is half of the 4-byte count, the flag's byte halved too: in 2-byte floats each float "
                    "takes half, but the flag stays 1 byte per step")
        slip = per_step.get(int(got) // (B * T)) if int(got) % (B * T) == 0 else None
    except (TypeError, ValueError, OverflowError):
        return None
    return slip or "count per step, then times B * T: each input read once, each output written once, in bytes"


@_exercise("lean_gae_loop", "08_profiling", "numpy", stream=31, task="""
lean_gae_loop(rewards, values, dones, next_value, next_done, gamma, gae_lambda) -> (advantages,
returns): section 5's cleanrl_gae, CleanRL's loop over time, with at most 6 tensor ops per step
(CleanRL's runs 15). The arguments and results are cleanrl_gae's: (num_steps, num_envs) float32
tensors, time first; dones[t] is 1.0 where the episode ended before step t; next_value (1, num_envs);
next_done (num_envs,). Keep a Python loop over the steps for the recurrence, and compute what does
not depend on the carry for every step at once before it. No package function may be called. The
checker counts your ATen ops on 16 and 64 steps (as section 5's CountOps does).
""", time_dim=0, results=("advantages", "returns"),
    probe=_ops_per_step(lambda T: _cleanrl_probe_inputs(T), 16, 64, budget=6, how=(
        "Each op costs about a microsecond or more on a CPU whatever its size (section 5 printed this machine's "
        "figure): compute what does not depend on the carry, δ_t and the factor γλ(1 - done) of every step, "
        "with whole-tensor ops before the loop, and keep only the recurrence in it (an indexing such as x[t] "
        "counts as an op, a write advantages[t] = ... as two).")),
    window_end="the rollout's last step (it bootstraps from next_value, unless next_done says the episode ended)",
    ordinary="An ordinary step, and every step your loop reached before it is right (it runs backwards in time, "
             "from the rollout's last step): check what your code computes for that step, in the loop and in the "
             "whole-tensor ops before it (its delta_t, which step's dones it reads, the decay gamma * gae_lambda).",
    hint=lambda args, i, bad, got, expected: _cleanrl_hint(args, i, bad, got, expected))
def _lean_loop_cases(d):
    return _cleanrl_rollouts(d)


# ---- 09: benchmarks --------------------------------------------------------------------------------
HOST_BOUND_SHAPES = ((16, 128), (4096, 128), (64, 16384), (16384, 1024))  # the benchmark's, by size


def _bench_row(row: dict) -> dict:
    """A made-up results row with every key a real one has: the do_bench time ``ms`` between the GPU
    time and the wall time (the wall time where there is no GPU time), a floor at 4.3 TB/s."""
    gpu, wall_ms = row["kernel_ms"], row["full_call_us"] / 1e3
    ms = wall_ms if gpu is None else (gpu + wall_ms) / 2
    n_bytes = row.get("bytes", 17 * row["B"] * row["T"])
    floor_ms = 1e3 * n_bytes / 4.3e12
    return {**row, "ms": ms, "floor_ms": floor_ms, "pct_floor": 100 * floor_ms / ms, "max_rel_err": 1e-7, "tol": 1e-4,
            "checked_against": "reference" if row["impl"] == "rltriton_lite" else "rltriton_lite",
            "timer": "do_bench", "bytes": n_bytes}


@_checker_only
def _launch_model_reference(rows, algorithm, pass_, us_per_ms=1e3, wall=False, ours="rltriton_lite",
                            dtype="float32", any_pass=False, origin=False, per_gb=1e9, elements=False, swapped=False,
                            clock="kernel_ms"):
    """(t0 in µs, bandwidth in GB/s) of the least-squares line GPU time = t0 + bytes / bandwidth;
    the keywords make the usual slips (kernel_ms read as µs, wall time fitted, a filter left out,
    a line through the origin, GiB/s or B/s, elements in place of bytes, the bytes fitted against
    the time: its intercept, in bytes, taken for t0; the do_bench time, ``ms``, fitted)."""
    mine = [r for r in rows if r["algorithm"] == algorithm and (any_pass or r["pass"] == pass_)
            and r["kernel_ms"] is not None and (ours is None or r["impl"] == ours)
            and (dtype is None or r["dtype"] == dtype)]
    x = np.array([r["B"] * r["T"] if elements else r["bytes"] for r in mine], dtype=np.float64)
    y = np.array([r["full_call_us"] if wall else us_per_ms * r[clock] for r in mine], dtype=np.float64)
    if swapped:
        per_us, at_0 = np.polyfit(y, x, 1)  # bytes per µs, and bytes at t = 0
        return np.float64(at_0), np.float64(1e6 * per_us / per_gb)
    slope, t0 = ((x @ y) / (x @ x), 0.0) if origin else np.polyfit(x, y, 1)
    return np.float64(t0), np.float64(1e6 / slope / per_gb)  # slope: µs per byte


@_exercise("launch_model", "09_benchmarks", "numpy", stream=30, task="""
launch_model(rows, algorithm, pass_) -> (t0_us, GBps): fit a kernel's GPU time per call with
t = t0 + bytes / bandwidth, a fixed cost per launch plus its bytes at a bandwidth, by least squares
over its rows. rows: a benchmark's results rows, as for host_bound (keys "algorithm", "impl", "B",
"T", "dtype", "pass", "bytes": the bytes the call must move, "kernel_ms": the GPU time in
milliseconds, "full_call_us": the wall time in microseconds). Take this library's rows (impl
"rltriton_lite"), float32, of `algorithm` and pass `pass_`. Return t0 in microseconds and the
bandwidth in GB/s (10**9 bytes per second): np.polyfit(bytes, gpu_time_us, 1) gives the line's
slope (µs per byte) and intercept (t0).
""", scan=None, results=("t0_us", "GBps"), hint=lambda args, i, bad, got, expected: _launch_model_hint(args, i, got))
def _launch_model_cases(d):
    rng, out = d.rng, []
    shapes = sorted({(d.int(B, max(1, B // 2), 2 * B), d.int(T, max(1, T // 2), 2 * T)) for B, T in
                     (*HOST_BOUND_SHAPES, (1024, 1024))}, key=lambda s: s[0] * s[1])

    def line(alg, t0, gbps, pass_="fwd", impl="rltriton_lite", dtype="float32", noise=0.0, at=shapes):
        per_step = {"fwd": 17, "fwd+bwd": 33}[pass_] if dtype == "float32" else {"fwd": 9, "fwd+bwd": 17}[pass_]
        rows = []
        for B, T in at:
            n_bytes = B * T * per_step
            us = (t0 + n_bytes / (gbps * 1e3)) * float(rng.uniform(1 - noise, 1 + noise))
            rows.append(_bench_row({"algorithm": alg, "impl": impl, "B": B, "T": T, "dtype": dtype, "pass": pass_,
                                    "bytes": n_bytes, "kernel_ms": us / 1e3,
                                    "full_call_us": us + float(rng.uniform(15, 40))}))
        return rows

    t0, gbps = d.real(4.0, 2.0, 8.0), d.real(3000.0, 1500.0, 4500.0)
    out.append((f"gae, forward, its rows alone, on an exact line (t0 = {t0} µs, {gbps} GB/s)",
                (line("gae", t0, gbps), "gae", "fwd")))
    mixed = (line("vtrace", d.real(5.0, 2.0, 8.0), d.real(2500.0, 1500.0, 4500.0), noise=0.03)
             + line("vtrace", d.real(9.0, 6.0, 14.0), d.real(2000.0, 1500.0, 4500.0), pass_="fwd+bwd", noise=0.03)
             + line("vtrace", 7.0, 1800.0, dtype="bfloat16", noise=0.03)
             + line("vtrace", 12.0, 900.0, impl="torch_compile", noise=0.03)
             + line("gae", 3.0, 3500.0, noise=0.03))
    rng.shuffle(mixed)
    # a peer without a GPU time, last (not shuffled: a seed's cases keep their structure)
    mixed += [_bench_row({**r, "kernel_ms": None}) for r in line("vtrace", 300.0, 50.0, impl="pytorch_loop")]
    for pass_ in ("fwd", "fwd+bwd"):
        out.append((f"vtrace, {pass_}, measured (a few % of noise), among other passes, dtypes, implementations "
                    "(a peer's rows with kernel_ms = None) and algorithms", (mixed, "vtrace", pass_)))
    two = line("ppo", d.real(6.0, 2.0, 8.0), d.real(3300.0, 1500.0, 4500.0), noise=0.02, at=(shapes[0], shapes[-1]))
    out.append(("ppo, forward, two shapes only (the line through both)", (two, "ppo", "fwd")))
    return [(what, args, {}, _launch_model_reference(*args)) for what, args in out]


_LAUNCH_SLIPS = {
    "kernel_ms (milliseconds) fitted as if it were in µs" + _fix(": the GPU time in µs is 1000 * kernel_ms"):
        dict(us_per_ms=1.0),
    "the wall time (full_call_us) fitted: it holds the host's time per call too" + _fix(
        ": fit the GPU time, 1000 * kernel_ms"): dict(wall=True),
    "the do_bench time (ms) fitted: events around each call, which count host time where the GPU waits" + _fix(
        ": fit the GPU time, 1000 * kernel_ms"): dict(clock="ms"),
    "a line through the origin: t0 forced to 0" + _fix(": fit the intercept too (np.polyfit(x, y, 1))"):
        dict(origin=True),
    "rows of other implementations counted" + _fix(": keep impl == \"rltriton_lite\""): dict(ours=None),
    "rows of another dtype counted" + _fix(": keep dtype == \"float32\""): dict(dtype=None),
    "rows of the other pass counted" + _fix(": keep pass == pass_"): dict(any_pass=True),
    "rows of other implementations and dtypes counted (only the algorithm and the pass kept)" + _fix(
        ": keep impl == \"rltriton_lite\" and dtype == \"float32\" too"): dict(ours=None, dtype=None),
    "x and y swapped: the bytes fitted against the time, so the intercept is in bytes" + _fix(
        ": np.polyfit(x, y, 1) fits y against x: x the bytes, y the GPU time in µs"): dict(swapped=True),
    "the bandwidth in GiB/s (2**30 bytes), not GB/s (10**9)": dict(per_gb=2.0 ** 30),
    "the bandwidth in bytes per second, not GB/s" + _fix(": divide by 10**9"): dict(per_gb=1.0),
    "the line fitted against elements (B * T), not bytes" + _fix(": x is each row's \"bytes\""):
        dict(elements=True),
}


def _launch_model_hint(args, i, got):
    """Which usual slip gives ``got`` for result ``i`` (0: t0, 1: the bandwidth), if one does."""
    got = np.asarray(got, dtype=np.float64).reshape(-1)
    if got.size != 1 or not np.isfinite(got[0]):
        return None
    t0, gbps = _launch_model_reference(*args)
    right = (t0, gbps)[i]
    close = lambda x, y: bool(np.isclose(x, y, rtol=1e-5, atol=0.0))  # noqa: E731
    if i == 0 and close(got[0], 1e6 / gbps / 1e9):
        return _Whole("Your t0 is the line's slope (µs per byte): np.polyfit(x, y, 1) returns the slope first, then "
                      "the intercept." + _fix(" slope, t0 = np.polyfit(x, y, 1)."))
    # (result 1 is compared only where result 0, t0, was right: a slip that moves t0 is not this one)
    seen = [what for what, slip in _LAUNCH_SLIPS.items()
            if close(got[0], (ref := _launch_model_reference(*args, **slip))[i]) and not close(got[0], right)
            and (i == 0 or close(ref[0], t0))]
    if i == 1 and not seen and close(got[0], 1e3 * gbps):  # 1 / slope: bytes per µs
        return _Whole("Your bandwidth is 1 / slope, in bytes per µs: GB/s is 10**9 bytes per second." + _fix(
            " 10**6 / slope bytes per second, divided by 10**9."))
    if seen:
        return "That is the fit with a slip" + (f": {seen[0]}." if len(seen) == 1 else
                                                ", one of these: " + "; ".join(seen) + ".")
    if i == 1 and close(1e6 / got[0] / 1e9, right):
        return ("Your bandwidth is the line's slope (µs per byte), not a bandwidth" + _fix(
            ": the bandwidth is 1 / slope bytes per µs, that is 10**6 / slope bytes per second") + ".")
    if _through_two_points(args, i, got[0]):
        return _Whole("Your line goes through two of the rows' points, not the least-squares line through all of "
                      "them: with a few % of noise, two points give another line." + _fix(
                          " Fit all the points (least squares): np.polyfit(x, y, 1) over every row kept."))
    if i == 0:
        return "t0 is the line's intercept: the GPU time (in µs) the fit gives a call that moves 0 bytes."
    return "the bandwidth is the bytes per unit of GPU time along the line: 10**6 / slope bytes per second, in GB/s."


def _through_two_points(args, i, got) -> bool:
    """Whether ``got`` (result ``i``: 0 t0, 1 the bandwidth) is that of the line through two of the rows
    the fit keeps, where those are not all on one line."""
    rows, algorithm, pass_ = args
    mine = [r for r in rows if r["algorithm"] == algorithm and r["pass"] == pass_ and r["kernel_ms"] is not None
            and r["impl"] == "rltriton_lite" and r["dtype"] == "float32"]
    x = np.array([r["bytes"] for r in mine], dtype=np.float64)
    y = np.array([1e3 * r["kernel_ms"] for r in mine], dtype=np.float64)
    for j, k in itertools.combinations(range(len(x)), 2):
        if x[j] == x[k]:
            continue
        slope = (y[k] - y[j]) / (x[k] - x[j])
        line = (y[j] - slope * x[j], 1e6 / slope / 1e9)
        if np.isclose(got, line[i], rtol=1e-5, atol=0.0) and not np.isclose(
                line[i], _launch_model_reference(*args)[i], rtol=1e-5, atol=0.0):
            return True
    return False


@_checker_only
def _host_bound_reference(rows, algorithm, pass_, us_per_ms=1e3, ours="rltriton_lite", dtype="float32",
                          any_pass=False, first_run=False, size=lambda B, T: B * T, clock="kernel_ms",
                          at_least=False, factor=2.0, smallest=False):
    """B * T of the largest shape whose wall time exceeds twice its GPU time, or 0; the keywords
    make the usual slips (kernel_ms read as µs, a filter left out, the scan stopped at the first
    shape at or below 2x, shapes ordered by B or T, the do_bench time ``ms`` taken for the GPU time, a shape
    at exactly 2x counted, another threshold than 2x: ``factor``; ``smallest``: the smallest such shape)."""
    mine = [r for r in rows if r["algorithm"] == algorithm and (any_pass or r["pass"] == pass_) and r["kernel_ms"] is not None
            and (ours is None or r["impl"] == ours) and (dtype is None or r["dtype"] == dtype)]
    best = None
    for r in sorted(mine, key=lambda r: size(r["B"], r["T"])):
        if r["full_call_us"] > factor * us_per_ms * r[clock] \
                or (at_least and r["full_call_us"] == factor * us_per_ms * r[clock]):
            best = r
            if smallest:
                break
        elif first_run and best is not None:
            break
    return 0 if best is None else best["B"] * best["T"]


@_exercise("host_bound", "09_benchmarks", "numpy", stream=27, task="""
host_bound(rows, algorithm, pass_) -> elements: in a benchmark's results, the largest shape at
which a call of `algorithm` costs more than twice its GPU time in wall time. rows: a list of dicts,
the results file's "rows" (keys "algorithm", "impl", "B", "T", "dtype", "pass", "full_call_us": the
wall time per call in microseconds, "kernel_ms": the GPU time in milliseconds, None where the
implementation has no GPU time). Take this library's rows (impl "rltriton_lite"), float32, of pass
`pass_` ("fwd" or "fwd+bwd"). Return B * T of the largest shape (in elements, B * T) whose
full_call_us is more than twice its GPU time, or 0 when none is. The ratio need not fall as the
shape grows: look at every shape.
""", scan=None, hint=lambda args, i, bad, got, expected: _host_bound_hint(*args, got))
def _host_bound_cases(d):
    rng, out = d.rng, []
    shapes = [(d.int(B, max(1, B // 2), 2 * B), d.int(T, max(1, T // 2), 2 * T)) for B, T in HOST_BOUND_SHAPES]
    shapes = sorted(shapes, key=lambda s: s[0] * s[1])

    def row(alg, impl, shape, ratio, pass_="fwd", dtype="float32", gpu_us=None):
        gpu_us = float(rng.uniform(2, 60)) if gpu_us is None else gpu_us
        return _bench_row({"algorithm": alg, "impl": impl, "B": shape[0], "T": shape[1], "dtype": dtype,
                           "pass": pass_, "full_call_us": ratio * gpu_us, "kernel_ms": gpu_us / 1e3})

    def ratios(*at):  # wall ÷ GPU time at each shape, a little off the values given
        return [x * float(rng.uniform(0.97, 1.03)) for x in at]

    falling = [row("gae", "rltriton_lite", s, x) for s, x in zip(shapes, ratios(20, 8, 3, 1.02))]
    out.append(("gae, forward, the ratio falling with the shape", (falling, "gae", "fwd")))
    # PPO's: above 2x, below, then above again on few long rows (its map kernel's GPU time is small there)
    dip = [row("ppo", "rltriton_lite", s, x) for s, x in zip(shapes, ratios(12, 1.5, 12, 1.1))]
    out.append(("ppo, forward, the ratio not monotone (above 2x again after a shape below it)", (dip, "ppo", "fwd")))
    mixed = ([row("vtrace", "rltriton_lite", s, x) for s, x in zip(shapes, ratios(30, 9, 1.1, 1.05))]
             + [row("vtrace", "rltriton_lite", s, x, pass_="fwd+bwd") for s, x in zip(shapes, ratios(60, 40, 3, 1.5))]
             + [row("vtrace", "rltriton_lite", s, x, dtype="bfloat16") for s, x in zip(shapes, ratios(30, 9, 3, 1.05))]
             + [row("vtrace", "torch_compile", s, x) for s, x in zip(shapes, ratios(40, 12, 5, 3))]
             + [row("gae", "rltriton_lite", s, x) for s, x in zip(shapes, ratios(20, 9, 6, 4))])
    rng.shuffle(mixed)
    for pass_ in ("fwd", "fwd+bwd"):
        out.append((f"vtrace, {pass_}, among other passes, dtypes, implementations and algorithms",
                    (mixed, "vtrace", pass_)))
    gpu_bound = ([row("sac", "rltriton_lite", s, x) for s, x in zip(shapes, ratios(1.6, 1.3, 1.2, 1.05))]
                 + [_bench_row({**row("sac", "pytorch_loop", s, 1.0), "kernel_ms": None}) for s in shapes])
    out.append(("sac, forward, never above 2x (a peer without a GPU time among the rows)", (gpu_bound, "sac", "fwd")))
    # exactly 2x at the second shape (15.625 µs: every product and quotient of it here is exact in binary)
    edge = [row("crr", "rltriton_lite", s, x, gpu_us=15.625) for s, x in zip(shapes, (20.0, 2.0, 1.5, 1.25))]
    out.append(("crr, forward, exactly twice the GPU time at the second shape", (edge, "crr", "fwd")))
    # above 2x at the longest rows (the most steps T) and at the largest shape, which has fewer steps: the
    # largest by B * T is not the largest by T (last: the cases before draw what they always drew)
    longest = max(shapes, key=lambda s: (s[1], s[0]))
    long_rows = [row("td_lambda", "rltriton_lite", s, x) for s, x in zip(shapes, ratios(
        *(5.0 if s == longest else 3.0 if s == shapes[-1] else 1.2 + 0.3 * k for k, s in enumerate(shapes))))]
    out.append(("td_lambda, forward, above 2x at the longest rows (most steps) and at a larger shape of fewer steps",
                (long_rows, "td_lambda", "fwd")))
    return [(what, args, {}, _host_bound_reference(*args)) for what, args in out]


def _host_bound_hint(rows, algorithm, pass_, got):
    """Which usual slip of host_bound gives ``got`` here, if one does."""
    slips = {"kernel_ms (milliseconds) compared with full_call_us (microseconds) as if in one unit" + _fix(
                 ": the GPU time in µs is 1000 * kernel_ms"): dict(us_per_ms=1.0),
             "ms, the do_bench time, taken for the GPU time (it counts host time where the GPU waits)" + _fix(
                 ": the GPU time is kernel_ms"): dict(clock="ms"),
             "rows of other implementations counted" + _fix(": keep impl == \"rltriton_lite\""): dict(ours=None),
             "rows of another dtype counted" + _fix(": keep dtype == \"float32\""): dict(dtype=None),
             "rows of the other pass counted" + _fix(": keep pass == pass_"): dict(any_pass=True),
             "the search stops at the first shape at or below 2x, but the ratio can rise again at a larger "
             "shape" + _fix(": look at every shape"): dict(first_run=True),
             "a shape at exactly twice its GPU time counted, where the task asks for more than twice" + _fix(
                 ": full_call_us > 2 * the GPU time, not >="): dict(at_least=True),
             "shapes ordered by B (rows), not by their elements B * T": dict(size=lambda B, T: (B, T)),
             "shapes ordered by T (steps), not by their elements B * T": dict(size=lambda B, T: (T, B)),
             "the smallest such shape, where the task asks for the largest" + _fix(
                 ": keep the last shape above 2x in order of B * T (max, not min)"): dict(smallest=True)}
    got = np.asarray(got, dtype=float).reshape(-1)
    if got.size != 1 or not np.isfinite(got[0]) or got[0] != int(got[0]):
        return None
    got, right, seen = int(got[0]), _host_bound_reference(rows, algorithm, pass_), []
    shapes = {r["B"] * r["T"]: f"{r['B']}x{r['T']}" for r in rows}
    said = f"The answer is {shapes.get(right, 'none of the shapes (0)')}" + (
        f"; yours is {shapes[got]}. " if got in shapes else ". ")
    for what, slip in slips.items():
        if _host_bound_reference(rows, algorithm, pass_, **slip) == got != right:
            seen.append(what)
    threshold = _host_bound_threshold(rows, algorithm, pass_, got, right)
    at_least = next(iter(w for w in slips if slips[w] == dict(at_least=True)))
    if threshold and threshold.startswith("a threshold below") and at_least not in seen:  # (exactly 2x counted: a
        unit = next(iter(slips))  # threshold's slip of its own; a round-50 review: a 1.2x rule was told as the unit
        seen = [threshold] + [w for w in seen if w != unit]  # slip, which gives the same answer here)
    elif threshold and threshold.startswith("a threshold above"):  # (3x, say: after the slips giving that answer)
        seen = seen + [threshold]
    if seen:
        return _Whole(said + "That is the answer with a slip" + (
            f": {seen[0]}." if len(seen) == 1 else ", one of these: " + "; ".join(seen) + "."))
    if got == 0:
        return said + "0 means no shape is above 2x: compare full_call_us with 2 * 1000 * kernel_ms."
    side = next((k for r in rows if r["B"] * r["T"] == right for k in ("B", "T") if r[k] == got != right), None)
    if side:  # (a round-65 review: B returned got "The answer is ..." alone)
        return _Whole(said + f"Yours is the answer's {side} alone: return its elements, B * T.")
    return said.strip()


HOST_BOUND_THRESHOLDS = (1.1, 1.2, 1.25, 1.5, 3.0, 4.0, 5.0, 10.0)  # a student's rule of thumb, not the task's 2x


def _host_bound_threshold(rows, algorithm, pass_, got, right) -> str | None:
    """Where ``got`` is the answer under another threshold than 2x (one of ``HOST_BOUND_THRESHOLDS``: wall time
    more than 1.2 times the GPU time, say), what says so: the ratio at the student's shape (a lower threshold)
    or at the answer (a higher one). 1x is left out: wall time is never below GPU time, so a rule of 1x
    counts every shape, as kernel_ms read as µs does, and the unit slip is the likelier there."""
    if not any(_host_bound_reference(rows, algorithm, pass_, factor=x) == got != right for x in HOST_BOUND_THRESHOLDS):
        return None
    ratio = {r["B"] * r["T"]: r["full_call_us"] / (1e3 * r["kernel_ms"]) for r in rows if r["algorithm"] == algorithm
             and r["pass"] == pass_ and r["impl"] == "rltriton_lite" and r["dtype"] == "float32"
             and r["kernel_ms"] is not None}
    fix = _fix(": count a shape where full_call_us > 2 * 1000 * kernel_ms, the task's rule")
    if got in ratio and ratio[got] <= 2:
        return (f"a threshold below the task's 2x: at your shape the wall time is {ratio[got]:.3g} times the GPU "
                "time, not more than twice, so that shape is not host-bound by the task's rule" + fix)
    if right in ratio:
        return (f"a threshold above the task's 2x: at the answer's shape the wall time is {ratio[right]:.3g} times "
                "the GPU time, more than twice, so that shape counts" + fix)
    return None


# ---- 10: training ----------------------------------------------------------------------------------
@_checker_only
def _cleanrl_reference(rewards, values, dones, next_value, next_done, gamma, lam, terminated=None, bootstrap=True,
                       decay_unshifted=False):
    """CleanRL ppo.py's advantages and returns, in float64: GAE with terminated = dones shifted one
    step on, next_done at the last step (``terminated``, ``bootstrap``, ``decay_unshifted``: the usual
    slips; the last, the trace's decay from dones[t] while delta reads the shifted flag)."""
    d, nd = np.asarray(dones, dtype=np.float64), np.asarray(next_done, dtype=np.float64).reshape(1, -1)
    term = np.concatenate([d[1:], nd]) if terminated is None else terminated(d, nd)
    boot = np.asarray(next_value, dtype=np.float64).reshape(-1) if bootstrap else np.zeros(d.shape[1])
    if decay_unshifted:  # GAE's scan of delta with the decay's flag apart: (time last in linear_scan)
        r, v = np.asarray(rewards, dtype=np.float64), np.asarray(values, dtype=np.float64)
        delta = r + gamma * np.concatenate([v[1:], boot[None]]) * (1 - term) - v
        adv = reference.linear_scan((gamma * lam * (1 - d)).T, delta.T).T
        return adv, adv + v
    adv, returns = reference.gae(np.asarray(rewards).T, np.asarray(values).T, gamma=gamma, lambda_=lam,
                                 terminated=term.T > 0, bootstrap_value=boot)  # (time last there)
    return adv.T, returns.T


_CLEANRL_SLIPS = {  # what the advantages are, where they are CleanRL's with one slip
    "dones used as terminated, unshifted. dones[t] = 1 says the episode ended before step t (obs[t] is a new "
    "episode's first), so the cut belongs one step earlier" + _fix(
        ": terminated[t] = dones[t + 1], and next_done at the last step (torch.cat)"): dict(terminated=lambda d, nd: d),
    "next_done left out: where an episode ended at the rollout's last step (next_done set), your code still "
    "bootstraps there from next_value; it must not" + _fix(
        ": the last row of terminated is next_done"): dict(terminated=lambda d, nd: np.concatenate([d[1:], 0 * nd])),
    "dones shifted the wrong way (terminated[t] = dones[t - 1])" + _fix(
        ": dones[t + 1] says the episode ended after step t"): dict(
        terminated=lambda d, nd: np.concatenate([0 * nd, d[:-1]])),
    "the trace's decay reads dones[t], unshifted, while delta reads the shifted flag: both are "
    "1 - terminated[t], with terminated[t] = dones[t + 1]" + _fix(
        ": one nextnonterminal per step, 1 - dones[t + 1] (next_done at the last step), in delta and in the "
        "decay"): dict(decay_unshifted=True),
    "no bootstrap at the rollout's end: the last step reads V = 0 after it" + _fix(
        ": next_value is the value after the last step: rl.gae's bootstrap_value, or, in a loop of your own, the "
        "last row of the next values, torch.cat([values[1:], next_value])"): dict(bootstrap=False),
}


def _cleanrl_hint(args, i, bad, got, expected):
    r, v, d, nv, nd, gamma, lam = _as_numpy(tuple(args))
    if i == 1:  # the returns
        adv = _cleanrl_reference(r, v, d, nv, nd, gamma, lam)[0]
        for slip, said in ((adv, "Your returns are the advantages: CleanRL's returns are advantages + values"),
                           (adv - v, "Your returns are advantages - values: CleanRL's are advantages + values")):
            if _is_slip(got, slip, expected):
                return _Whole(said + ".")
        return None
    if got.shape != expected.shape:
        return None
    for what, slip in _CLEANRL_SLIPS.items():
        if _is_slip(got, _cleanrl_reference(r, v, d, nv, nd, gamma, lam, **slip)[0], expected):
            return _Whole(f"These are CleanRL's advantages with a slip: {what}.")
    if _is_slip(got, _cleanrl_reference(r, v, d, nv, nd, lam, gamma)[0], expected):  # (a round-50 review's case)
        return _Whole("These are CleanRL's advantages with a slip: gamma and lambda swapped. Your delta_t discounts "
                      "the next value by lambda (gae_lambda), where gamma belongs; the trace's decay, gamma * lambda, "
                      "is the same either way, so delta alone shows it" + _fix(
                          ": delta_t = r_t + gamma * V(s_{t+1}) * (1 - terminated_t) - V(s_t); in rl.gae, "
                          "gamma=gamma and lambda_=gae_lambda") + ".")
    # a decay of lean_gae_loop's own (written outside rl.gae), lambda or gamma alone: GAE with lambda / gamma, or 1
    for lam_as, said in ((lam / gamma, "gamma is missing from your decay: the trace decays by gamma * lambda per step"),
                         (1.0, "lambda is missing from your decay: the trace decays by gamma * lambda per step")):
        if _is_slip(got, _cleanrl_reference(r, v, d, nv, nd, gamma, lam_as)[0], expected):
            return _Whole(said + _fix(" decay = gamma * gae_lambda where the episode goes on, 0 where it ended") + ".")
    return None


def _cleanrl_probe_inputs(T):
    """Four envs of T steps, an episode end at step 5: the same but for T (the loop probe)."""
    rng = np.random.default_rng(10)
    r, v = rng.normal(size=(2, T, 4))
    d = np.zeros((T, 4))
    d[5] = 1.0
    return _t(r), _t(v), _t(d), _t(rng.normal(size=(1, 4))), _t(np.zeros(4)), 0.99, 0.95


@_exercise("cleanrl_advantages", "10_train_ppo", "numpy", stream=28, task="""
cleanrl_advantages(rewards, values, dones, next_value, next_done, gamma, gae_lambda) -> (advantages,
returns): section 2's cleanrl_gae, CleanRL's loop, as one call of rltriton_lite.gae. rewards,
values, dones: (num_steps, num_envs) float32 tensors, CleanRL's rollout buffers, time first; dones[t]
is 1.0 where the episode ended before step t (obs[t] is a new episode's first). next_value:
(1, num_envs), V of the observation after the rollout; next_done: (num_envs,), 1.0 where the
episode ended at the rollout's last step. Return CleanRL's advantages and returns = advantages +
values, each (num_steps, num_envs), equal to cleanrl_gae's up to float32 rounding. rl.gae is the
only package function you may call (not rltriton_lite.integrations: writing its conversion is the
exercise), with no Python loop over the steps: besides its cases, the checker runs it on 16
and 64 steps to see that your code's Python lines do not grow with T.
""", may_use=("gae",), time_dim=0, results=("advantages", "returns"),
    probe=_no_loop_over_time(_cleanrl_probe_inputs, 16, 64, how="one call of rl.gae and tensor ops, whose "
                             "Python does not grow with the rollout's length (build terminated with slicing and "
                             "torch.cat)"),
    window_end="the rollout's last step (it bootstraps from next_value, unless next_done says the episode ended)",
    ordinary="An ordinary step, and every step after it in time is right (rl.gae scans backwards from the rollout's "
             "last step): check what your code hands rl.gae at that step (its terminated flag, from dones one step "
             "on; its rewards and values) and what it makes of rl.gae's result there.",
    hint=lambda args, i, bad, got, expected: _cleanrl_hint(args, i, bad, got, expected))
def _cleanrl_cases(d):
    return _cleanrl_rollouts(d)


@_checker_only
def _cleanrl_rollouts(d):
    """CleanRL-shaped rollouts, time first, and their float64 advantages and returns (the cases of
    cleanrl_advantages and lean_gae_loop, each from its own stream)."""
    rng, gamma, lam = d.rng, d.real(0.99, 0.9, 0.999), d.real(0.95, 0.8, 0.99)
    out = []
    for what, T, N, p, last_done in (
            ("no episode ends (every step bootstraps, the last from next_value)", d.int(8, 5, 12), 3, 0.0, 0.0),
            ("episodes end inside the rollout (dones[t] = 1 before some steps, and at step 0)", d.int(40, 20, 50),
             4, 0.1, 0.0),
            ("episodes end at the rollout's last step in some envs (next_done = 1)", d.int(30, 13, 40), 5, 0.1, 0.5),
            ("CleanRL's CartPole shape, 128 steps x 4 envs, episode ends everywhere", 128, 4, 0.05, 0.5)):
        r, v = rng.normal(size=(2, T, N))
        dones = _flags(rng, (T, N), p).astype(np.float64)
        dones[0, 0] = float(p > 0)  # an episode that ended before the rollout: nothing in it changes
        nd = (np.arange(N) % 2 == 0).astype(np.float64) if last_done else np.zeros(N)
        nv = rng.normal(size=(1, N))
        expected = _cleanrl_reference(r, v, dones, nv, nd, gamma, lam)
        ended_after = np.concatenate([dones[1:], nd[None]]) > 0
        marks = {"a step after which the episode ended (dones[t + 1] = 1, or next_done at the last step: no "
                 "bootstrap, the trace is cut)": ended_after}
        out.append((f"{what}, shape ({T}, {N})", (_t(r), _t(v), _t(dones), _t(nv), _t(nd), gamma, lam), {}, expected,
                    marks))
    return out


# ---- 11: across devices ----------------------------------------------------------------------------
@_checker_only
def _segment_carries_reference(A, B, reset, initial, forward=False, own=False, use_initial=True, resets=True,
                               add_first=False, next_reset=False):
    """The carries one segment at a time, from the last back, in float64; the keywords make the
    usual slips (the segments before composed, each segment's own value, initial left out, the
    resets ignored, the map applied as (B + c) * A, each map selecting on the next segment's reset:
    ``next_reset`` True, none at the last segment; "wrap", reset[:, 0] there (reset[:, (s + 1) % S]);
    "clamp", its own (reset[:, min(s + 1, S - 1)]))."""
    rows, S = B.shape
    if next_reset:  # segment s reads reset[:, s + 1]; at the last segment none, the first's or its own
        last = {"wrap": reset[:, :1], "clamp": reset[:, -1:]}.get(next_reset, np.zeros_like(reset[:, :1]))
        reset = np.concatenate([reset[:, 1:], last], 1)
    out = np.empty((rows, S))
    for i in range(rows):
        c = initial[i] if use_initial else 0.0
        for s in (range(S) if forward else reversed(range(S))):
            if not own:
                out[i, s] = c
            c = B[i, s] if reset[i, s] and resets else (B[i, s] + c) * A[i, s] if add_first else B[i, s] + A[i, s] * c
            if own:
                out[i, s] = c
    return out


_CARRIES_SLIPS = {
    "composed from the segments before it, a forward scan's order: in a reverse scan the value that "
    "enters segment s comes from the segments after it and initial" + _fix(
        ": walk the segments from the last one back"): dict(forward=True),
    "each one is the value at its own segment's first step, one segment off: carries[:, s] is what enters "
    "segment s, before segment s's own map" + _fix(
        ": store the carry, then apply segment s's map to it for the segment before"): dict(own=True),
    "initial left out: the value after the last segment is initial, not 0" + _fix(
        ": start the walk from initial"): dict(use_initial=False),
    "the resets ignored: where reset[:, s] is set, the segment gives B[:, s] alone" + _fix(
        ": np.where(reset[:, s], B[:, s], B[:, s] + A[:, s] * c)"): dict(resets=False),
    "each map applied as (B + c) * A: a segment maps c to B + A * c": dict(add_first=True),
    "each segment's map selects on the reset of the next segment, reset[:, s + 1]: whether segment s gives "
    "B[:, s] alone is its own flag, reset[:, s] (an episode ends inside segment s)" + _fix(
        ": np.where(reset[:, s], B[:, s], B[:, s] + A[:, s] * c)"):  # (the last segment's flag: none, the
    (dict(next_reset=True), dict(next_reset="wrap"), dict(next_reset="clamp")),  # first's, its own: a round-50 case)
}


def _segment_carries_hint(args, i, bad, got, expected):
    """The usual slip that ``got`` is everywhere, if one is (a reset multiplied by 0 is left to
    the NaN hint: it differs only where a NaN lies behind a reset)."""
    for what, slips in _CARRIES_SLIPS.items():
        for slip in (slips if isinstance(slips, tuple) else (slips,)):
            if _is_slip(got, _segment_carries_reference(*args, **slip), expected):
                return _Whole(f"These are the carries with a slip: {what}.")
    return None


@_exercise("segment_carries", "11_across_devices", "numpy", stream=20, task="""
segment_carries(A, B, reset, initial) -> carries: the carry that enters each segment (a rank's
steps) of a reverse scan y_t = b_t + a_t y_{t+1}, from the segments' maps. A, B: (rows, S) float64
NumPy arrays, reset: (rows, S) bool, initial: (rows,) float64, the value after the last segment.
Segment s (S segments in time order) maps the value after it, c, to the value at its first step:
B[:, s] where reset[:, s] (an episode ends inside it: the carry is not read), else
B[:, s] + A[:, s] * c. Return carries, (rows, S): carries[:, s] is the value that enters segment s,
y at the first step of segment s + 1 (initial for the last segment). Write the reset as a select
(np.where), not as A = 0: a NaN or inf in a later episode must not reach an earlier one.
""", window_end="the last segment (its carry is initial, the value after every segment)",
   hint=lambda args, i, bad, got, expected: _segment_carries_hint(args, i, bad, got, expected),
   ordinary="An ordinary segment, the segments after it right: check the map that takes the carry into it "
            "(which segment's (A, B) composes with the carry, and in which order).", step="segment",
   select_fix=" Select instead of multiplying: np.where(reset[:, s], B[:, s], B[:, s] + A[:, s] * c), never "
              "B[:, s] + (1 - reset[:, s]) * A[:, s] * c.")
def _segment_carries_cases(d):
    rng = d.rng
    out = []
    for what, rows, S in (("one row, no resets", 1, d.int(3, 2, 5)), ("resets", d.int(4, 2, 6), d.int(5, 3, 8)),
                          ("a NaN and an inf in later episodes, behind resets", d.int(3, 2, 4), d.int(6, 4, 8))):
        A, B = rng.uniform(0.2, 1.0, size=(rows, S)), rng.normal(size=(rows, S))
        initial = rng.normal(size=rows)
        reset = _flags(rng, (rows, S), 0.0 if what.startswith("one") else 0.3)
        if what.startswith("a NaN"):
            k = d.int(2, 1, S - 3)  # segment k resets and k + 1, after it, holds a NaN: the carry into k is NaN
            reset[0, k], reset[0, k + 1], B[0, k + 1] = True, False, np.nan
            reset[-1, -1], initial[-1] = True, np.inf  # the last segment resets: initial (inf) is not read
        after = np.concatenate([reset[:, 1:], np.zeros((rows, 1), dtype=bool)], 1)
        out.append((f"{what}, {rows} row{'s' * (rows > 1)}, {S} segments", (A, B, reset, initial), {},
                    _segment_carries_reference(A, B, reset, initial),
                    {"the segment before one that resets (the carry into it is the next "
                     "segment's B alone, since that segment resets: no segment after it is read)": after}))
    return out


@_checker_only
def _segment_grad_carries_reference(A, sigma, reset, backwards=False, own=False, shift=False, no_sigma=False,
                                    no_carry=False, resets=True, next_reset=False):
    """What enters each rank in the backward, x (rows, R), from the first rank on, in float64; the
    keywords make the usual slips (composed from the ranks after it, as the forward's carries are;
    each rank's own x_{r+1} stored at r, one rank off; x_r from rank r's own sigma and A; the sigma
    term left out; the term A x left out; the resets ignored; the select on the next rank's reset)."""
    A, sigma, reset = (np.asarray(v) for v in (A, sigma, reset))
    rows, R = sigma.shape
    if next_reset:  # rank r selects on reset[:, r + 1] (its last rank passes nothing on: never read there)
        reset = np.concatenate([reset[:, 1:], np.zeros_like(reset[:, :1])], 1)
    # (r: the rank whose sigma, A and reset compose; at: the column the new x goes to)
    order = [(r, r - 1) for r in reversed(range(1, R))] if backwards else [(r + shift, r + 1 - own) for r in range(R - 1)]
    out = np.zeros((rows, R))
    with np.errstate(all="ignore"):
        for i in range(rows):
            x = 0.0
            for r, at in order:
                keep = 0.0 if no_carry else x
                x = sigma[i, r] if reset[i, r] and resets else (0.0 if no_sigma else sigma[i, r]) + A[i, r] * keep
                out[i, at] = x
    return out


_GRAD_CARRIES_SLIPS = {
    "composed from the ranks after it, starting from the last rank: that is the forward's order (section 2's "
    "carries). The gradient flows forwards in time, so what enters rank r comes from the ranks before it, and "
    "nothing enters rank 0" + _fix(": walk the ranks from the first: x[:, 0] = 0, then x[:, r + 1] from x[:, r]"):
    dict(backwards=True),
    "one rank off: x[:, r] is what enters rank r, x_r, not what rank r passes on, x_{r+1} (x[:, 0] is 0: nothing "
    "enters rank 0)" + _fix(": store what rank r passes on at r + 1: x[:, r + 1] = np.where(reset[:, r], "
                            "sigma[:, r], sigma[:, r] + A[:, r] * x[:, r])"): dict(own=True),
    "x[:, r + 1] composed from rank r + 1's own sigma and A: what enters rank r + 1 is what rank r passes on, "
    "sigma[:, r] + A[:, r] * x[:, r]" + _fix(": read column r of sigma, A and reset for x[:, r + 1]"): dict(shift=True),
    "the sigma term left out where the rank does not reset: what rank r passes on is sigma[:, r], the gradient its "
    "own steps send into its carry, plus A[:, r] * x[:, r]" + _fix(": x[:, r + 1] = sigma[:, r] + A[:, r] * x[:, r]"): dict(no_sigma=True),
    "the term A[:, r] * x[:, r] left out (or read as 0, from x[:, r + 1] before it is written): each rank passes "
    "on its own sigma alone, and the ranks before it are lost" + _fix(
        ": x[:, r + 1] = sigma[:, r] + A[:, r] * x[:, r], x[:, r] the column already written"): dict(no_carry=True),
    "the resets ignored: where reset[:, r] is set, rank r passes on sigma[:, r] alone" + _fix(
        ": np.where(reset[:, r], sigma[:, r], sigma[:, r] + A[:, r] * x[:, r])"): dict(resets=False),
    "each rank selects on the reset of the next rank, reset[:, r + 1]: whether x_r reaches rank r's carry is rank "
    "r's own flag, reset[:, r] (an episode ends inside rank r)" + _fix(
        ": np.where(reset[:, r], sigma[:, r], sigma[:, r] + A[:, r] * x[:, r])"): dict(next_reset=True),
}


def _segment_grad_carries_hint(args, i, bad, got, expected):
    """The usual slip that ``got`` is everywhere, if one is (a reset multiplied by 0 is left to
    the NaN hint: it differs only where a NaN or inf lies in A at a reset)."""
    for what, slip in _GRAD_CARRIES_SLIPS.items():
        if _is_slip(got, _segment_grad_carries_reference(*args, **slip), expected):
            return _Whole(f"These are the gradients with a slip: {what}.")
    return None


@_exercise("segment_grad_carries", "11_across_devices", "numpy", stream=42, scan="forward", task="""
segment_grad_carries(A, sigma, reset) -> x: the gradient that enters each rank from the ranks before
it, in the backward of a reverse scan whose steps are split across R ranks (notebook 11, section 6).
A, sigma: (rows, R) float64 NumPy arrays, reset: (rows, R) bool, the ranks in time order. A[:, r] is
rank r's map's multiplier (the product of its a_t); reset[:, r] is True where an episode ends inside
rank r (its first output does not read its carry c_r; A[:, r] is then not read, and may be NaN or
inf); sigma[:, r] is the gradient that rank r's own steps send into its carry c_r.
Return x, (rows, R): x[:, 0] = 0 (nothing enters rank 0), and what rank r passes on,
x[:, r + 1] = sigma[:, r] where reset[:, r], else sigma[:, r] + A[:, r] * x[:, r]. The last rank
passes nothing on: its sigma, A and reset are not read. Write the reset as a select (np.where),
not as A = 0: 0 * NaN is NaN.
""", hint=lambda args, i, bad, got, expected: _segment_grad_carries_hint(args, i, bad, got, expected),
   ordinary="An ordinary rank, the ranks before it right: check what the rank before it passes on (which rank's "
            "sigma and A, and which x it multiplies).", step="rank",
   select_fix=" Select instead of multiplying: np.where(reset[:, r], sigma[:, r], sigma[:, r] + A[:, r] * x[:, r]), "
              "never sigma[:, r] + (1 - reset[:, r]) * A[:, r] * x[:, r].")
def _segment_grad_carries_cases(d):
    rng = d.rng
    out = []
    for what, rows, R in (("one row, no resets", 1, d.int(3, 3, 6)), ("resets", d.int(4, 2, 6), d.int(5, 3, 8)),
                          ("a NaN and an inf in A, at ranks that reset", d.int(3, 2, 4), d.int(6, 4, 8))):
        A, sigma = rng.uniform(0.2, 1.0, size=(rows, R)), rng.normal(size=(rows, R))
        reset = _flags(rng, (rows, R), 0.0 if what.startswith("one") else 0.3)
        if what.startswith("a NaN"):
            k = d.int(2, 1, R - 2)  # rank k resets with A NaN, and x_k (its sigma before) is not 0: 0 * NaN would leak
            reset[0, k], A[0, k] = True, np.nan
            reset[-1, 1], A[-1, 1] = True, np.inf  # x_1 = sigma_0, not 0: 0 * inf would leak
            A[-1, -1] = sigma[-1, -1] = np.nan  # the last rank passes nothing on: never read
        after = np.concatenate([np.zeros((rows, 1), dtype=bool), reset[:, :-1]], 1)
        out.append((f"{what}, {rows} row{'s' * (rows > 1)}, {R} ranks", (A, sigma, reset), {},
                    _segment_grad_carries_reference(A, sigma, reset),
                    {"the rank after one that resets (what enters it is that rank's sigma alone: no rank before it "
                     "is read)": after}))
    return out



def _gae_segment_map_reference(rewards, values, terminated, next_first_value, gamma, lam, next_as=None, a_steps=0,
                               a_gamma=False, reset_at=None, carry_as_value=False, no_cut=False):
    """One rank's GAE map (A, B, reset) per row, from its own steps and the next rank's first value, in float64:
    B is the segment's first advantage from a carry of 0, A = (gamma lam)^n multiplies the carry where reset (a
    termination in the segment) is not set. The keywords make the usual slips: the next value at the segment's
    last step taken as 0 (``next_as="zero"``) or as its own last value ("own"), A over n + ``a_steps`` steps or
    of gamma alone, reset read at one step (``reset_at``), B's carry the next first value, not 0, B's loop not cut at
    a termination (``no_cut``)."""
    r, v, term = (np.asarray(x) for x in (rewards, values, terminated))
    rows, n = r.shape
    after = {"zero": np.zeros(rows), "own": v[:, -1]}.get(next_as, np.asarray(next_first_value, dtype=np.float64))
    v_next = np.concatenate([v[:, 1:], after[:, None]], 1)
    adv = after.copy() if carry_as_value else np.zeros(rows)
    with np.errstate(all="ignore"):
        delta = r + np.where(term, 0.0, gamma * v_next) - v
        for t in reversed(range(n)):
            adv = np.where(term[:, t] & (not no_cut), delta[:, t], delta[:, t] + gamma * lam * adv)
    A = np.full(rows, (gamma if a_gamma else gamma * lam) ** (n + a_steps))
    reset = term.any(1) if reset_at is None else term[:, reset_at].copy()
    return A, adv, reset


def _run_segment_map(fn, args, kw):
    """The student's (A, B, reset), its A left out where the segment terminates (that A is never read)."""
    got = fn(*args, **kw)
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        raise AssertionError(f"gae_segment_map must return the triple (A, B, reset), got {_describe(got)}")
    A, B, reset = (np.asarray(x) for x in got)
    ends = np.asarray(args[2]).any(1)
    return (np.where(ends, 0.0, A) if A.shape == ends.shape else A), B, reset


_SEGMENT_MAP_SLIPS = {
    "your delta at the segment's last step takes V(s_{t+1}) as 0. That value is the next rank's first value: "
    "next_first_value, what the first-values exchange brings (on the last rank, the bootstrap)" + _fix(
        " At the last step, V(s_{t+1}) = next_first_value: append it to values[:, 1:]."): dict(next_as="zero"),
    "your delta at the segment's last step reads the segment's own last value for V(s_{t+1}); the next state's "
    "value is the next rank's first, next_first_value" + _fix(
        " At the last step, V(s_{t+1}) = next_first_value."): dict(next_as="own"),
    "your A multiplies n - 1 factors of gamma lam. The carry is the advantage at the next rank's first step, and "
    "it reaches the segment's first step through every one of its n steps (the last step's A_hat = delta + "
    "gamma lam * carry included)" + _fix(" A = (gamma lam)^n, n the segment's steps."): dict(a_steps=-1),
    "your A is gamma^n: an advantage's carry is discounted by gamma lam a step, not gamma" + _fix(
        " A = (gamma lam)^n."): dict(a_gamma=True),
    "your B starts its advantages from next_first_value, a value, where B is computed from a carry of 0. The "
    "carry is an advantage (the next rank's first), and it enters through A, once the exchange of maps brings it"
    + _fix(" Start B's loop from 0; next_first_value enters delta at the last step only."): dict(carry_as_value=True),
    "your B's loop runs on through a termination: at a terminated step the advantage is delta_t alone, and the "
    "advantages after it (the next episode's) must not reach it" + _fix(
        " In B's loop, np.where(terminated[:, t], delta[:, t], delta[:, t] + gamma * lam * B)."): dict(no_cut=True),
    "your reset reads the segment's last step alone: a termination at any of its steps cuts the carry off from "
    "the segment's first step" + _fix(" reset = terminated.any(axis=1)."): dict(reset_at=-1),
    "your reset reads the segment's first step alone: a termination at any of its steps cuts the carry off" + _fix(
        " reset = terminated.any(axis=1)."): dict(reset_at=0)}


def _segment_map_hint(args, i, bad, got, expected):
    """The usual slip that ``got`` is, where one is."""
    got = np.asarray(got)
    ends = np.asarray(args[2]).any(1)
    if got.dtype != bool and got.shape == np.shape(expected) and (np.isnan(got) & ~np.isnan(expected)).any():
        return None  # a NaN the answer has not: a factor where a select belongs (select_fix), not a slip below
    for what, slip in _SEGMENT_MAP_SLIPS.items():
        ref = np.asarray(_gae_segment_map_reference(*args, **slip)[i])
        ref = np.where(ends, 0.0, ref) if i == 0 else ref
        if ref.dtype == bool:
            if got.shape == ref.shape and (got.astype(bool) == ref).all() and (ref != expected).any():
                return _Whole(f"That is the reset with a slip: {what}.")
        elif _is_slip(got.astype(np.float64), ref, np.asarray(expected, dtype=np.float64)):
            return _Whole(f"That is {('A', 'B')[i]} with a slip: {what}.")
    return None


@_exercise("gae_segment_map", "11_across_devices", "numpy", stream=36, task="""
gae_segment_map(rewards, values, terminated, next_first_value, gamma, lam) -> (A, B, reset): one rank's
map for GAE, from its own steps and one number per row that the next rank sends. rewards, values:
(rows, n) float64 NumPy arrays, the rank's n steps; terminated: (rows, n) bool; next_first_value:
(rows,) float64, V at the next rank's first step (on the last rank, the bootstrap value), which
delta reads at this rank's last step: delta_t = r_t + gamma V(s_{t+1}) - V(s_t), without the
gamma V(s_{t+1}) where terminated[t] (select: a value after a termination may be NaN). The rank's
advantages are A_hat_t = delta_t + gamma lam A_hat_{t+1}, cut at a termination (A_hat_t = delta_t,
a select too: the next episode's rewards may be NaN).
Return, per row, the map from the carry c (the advantage at the next rank's first step) to the
advantage at this rank's first step, A_hat_first = B where reset, else B + A c: B, the first
advantage computed with c = 0; A = (gamma lam)^n; reset, True where any of the n steps terminates.
Where reset is True, A is not read (nor graded).
""", scan=None, results=("A", "B", "reset"), run=_run_segment_map,
   select_fix=" Select instead of multiplying, in delta and in B's loop: delta = rewards + np.where(terminated, 0.0, "
              "gamma * v_next) - values, and B = np.where(terminated[:, t], delta[:, t], delta[:, t] + gamma * lam * "
              "B), never a factor (1 - terminated).",
   hint=lambda args, i, bad, got, expected: _segment_map_hint(args, i, bad, got, expected))
def _gae_segment_map_cases(d):
    rng, out = d.rng, []
    gamma, lam = d.real(0.9, 0.8, 0.99), d.real(0.8, 0.5, 0.95)
    for what, rows, n in (("one row, no terminations", 1, d.int(4, 3, 6)),
                          ("terminations, one at a segment's last step, one inside", d.int(4, 3, 6), d.int(7, 5, 10)),
                          ("a NaN next value behind a termination at the last step", d.int(3, 2, 4), d.int(5, 4, 8))):
        r, v = rng.normal(size=(rows, n)), rng.normal(size=(rows, n))
        term = _flags(rng, (rows, n), 0.0 if what.startswith("one") else 0.15)
        after = rng.normal(size=rows)
        if not what.startswith("one"):
            term[0], term[-1] = False, False  # row 0 ends at its last step alone; the last row runs through
            term[0, -1] = True
        if what.startswith("terminations"):
            term[1] = False
            term[1, n // 2] = True  # row 1 ends inside the segment, not at its last step
        if what.startswith("a NaN"):
            after[0] = np.nan  # after row 0's termination: never read (a product with 0 reads it: NaN)
        args = (r, v, term, after, gamma, lam)
        A, B, reset = _gae_segment_map_reference(*args)
        out.append((f"{what}, {rows} row{'s' * (rows > 1)} of {n} steps, gamma={gamma}, lam={lam}", args, {},
                    (np.where(reset, 0.0, A), B, reset)))
    # B's loop must select too: a NaN reward in the episode after a termination never reaches the steps before it
    rows, n = d.int(2, 2, 3), d.int(6, 5, 8)
    r, v, after = rng.normal(size=(rows, n)), rng.normal(size=(rows, n)), rng.normal(size=rows)
    term = np.zeros((rows, n), bool)
    term[0, n // 2] = True
    r[0, n // 2 + 1:] = np.nan
    args = (r, v, term, after, gamma, lam)
    A, B, reset = _gae_segment_map_reference(*args)
    out.append((f"NaN rewards after a termination inside row 0, {rows} rows of {n} steps, gamma={gamma}, lam={lam}",
                args, {}, (np.where(reset, 0.0, A), B, reset)))
    return out

# ---- 12: tokens ------------------------------------------------------------------------------------
@_checker_only
def _token_gae_reference(r, v, mask, gamma, lam):
    """verl's GAE over response tokens (0.9.1's loop, its whitening left out), in float64: a masked
    token is skipped, the next value and the advantage carried through it."""
    B, T = r.shape
    adv, next_v, last = np.zeros((B, T)), np.zeros(B), np.zeros(B)
    for t in reversed(range(T)):
        delta = r[:, t] + gamma * next_v - v[:, t]
        next_v = np.where(mask[:, t], v[:, t], next_v)
        last = np.where(mask[:, t], delta + gamma * lam * last, last)
        adv[:, t] = last
    return adv


def _token_value_scan_slips(r0, v0, mask, gamma, lam, v=None):
    """The advantages where the scan of the values that gives V_next has a slip: not shifted (each
    token reads its own value), its flag swapped (a = 1 at the policy tokens, 0 at the masked), or, given
    ``v``, the values as they are (not zeroed at the masked tokens) scanned."""
    def advantages(v_from_here, shift=True):
        v_next = np.concatenate([v_from_here[:, 1:], np.zeros_like(v0[:, :1])], 1) if shift else v_from_here
        return reference.linear_scan(np.where(mask, gamma * lam, 1.0), np.where(mask, r0 + gamma * v_next - v0, 0.0))

    return {
        "V_next is each policy token's own value: the scan of the values gives, at t, V at the first policy "
        "token at or after t, which is V_t itself at a policy token. V_next is that scan read one position "
        "later" + _fix(": torch.cat([scanned[..., 1:], zeros], -1)"): advantages(
            reference.linear_scan((~mask).astype(float), v0), shift=False),
        "the scan of the values has its flag swapped: it carries through the policy tokens and stops at the masked "
        "ones. It must stop at each policy token (a = 0 there: the token's own value) and carry a value back "
        "through the masked tokens before it (a = 1 there)" + _fix(": in the scan of the values, a = (~mask)"):
            advantages(reference.linear_scan(mask.astype(float), v0)),
        **({} if v is None else {
            "the scan of the values reads the masked tokens' values. At a masked token its a is 1, so it adds that "
            "token's b, the value there, to what it carries back: V_next at the token before a masked run is the next "
            "policy token's value plus every masked value between. What a masked token holds is never to be read: "
            "it may be NaN, and values * mask reads it too (0 * NaN = NaN)" + _fix(
                ": zero the values at the masked tokens before that scan, torch.where(mask, values, 0.0)"):
                advantages(reference.linear_scan((~mask).astype(float), v))}),
    }


def _token_gae_hint(args, got, expected):
    """OpenRLHF's semantics named where the student wrote them: the values and rewards zeroed by the
    mask, V(s_{t+1}) read at position t + 1 (compared at the policy tokens, where the two are defined);
    and the slips in the scan of the values that gives V_next."""
    r, v, mask, gamma, lam = _as_numpy(tuple(args))
    r0, v0 = np.where(mask, r, 0.0), np.where(mask, v, 0.0)
    got_ = np.asarray(got, dtype=np.float64)
    for what, slip in _token_value_scan_slips(r0, v0, mask, gamma, lam, v=v).items():
        if _is_slip(got_, slip, expected):
            return _Whole(f"These are verl's advantages with a slip: {what}.")
    v_next = np.concatenate([reference.linear_scan((~mask).astype(float), v0)[:, 1:], np.zeros_like(v0[:, :1])], 1)
    b = np.where(mask, r0 + gamma * v_next - v0, 0.0)
    for decay, said in ((gamma, "gamma"), (lam, "lam")):  # a at a policy token: gamma alone, or lam alone
        if _is_slip(got_, reference.linear_scan(np.where(mask, decay, 1.0), b), expected):
            return _Whole(f"These are verl's advantages with a slip: your trace decays by {said} per step, not "
                          "gamma * lam. GAE weighs the TD error k policy tokens on by (gamma lam)^k." + _fix(
                              " At a policy token, a = gamma * lam."))
    nxt = np.concatenate([v0[:, 1:], np.zeros_like(v0[:, :1])], 1)
    for read in (nxt, np.concatenate([v[:, 1:], np.zeros_like(v[:, :1])], 1)):  # zeroed in a hole, or as it is
        with np.errstate(invalid="ignore"):
            slip = reference.linear_scan(np.where(mask, gamma * lam, 1.0), np.where(mask, r0 + gamma * read - v0, 0.0))
        if _is_slip(got_, slip, expected):
            return _Whole("These are verl's advantages with a slip: V_next is read at position t + 1 whatever the "
                          "mask. At the last policy token before a hole, t + 1 is tool output, whose value is never to "
                          "be read (OpenRLHF's reading, section 5), not the next policy token's." + _fix(
                              " V_next is the value at the next policy token: a reverse scan of the values with "
                              "a = (~mask), read one position later."))
    theirs = reference.linear_scan(np.full_like(r0, gamma * lam), r0 + gamma * nxt - v0)
    if np.shape(got) != theirs.shape or np.allclose(theirs[mask], expected[mask], rtol=1e-5, atol=1e-5) \
            or not np.allclose(np.asarray(got)[mask], theirs[mask], rtol=1e-5, atol=1e-5):
        return None
    return ("At the policy tokens these are OpenRLHF's advantages (notebook 12, section 5): values zeroed by "
            "the mask and V(s_{t+1}) read at position t + 1, so the token before a hole bootstraps from the "
            "hole's 0 and the hole's positions add TD errors of their own. The task is verl's: a masked token "
            "is as if deleted." + _fix(" A masked token is the identity (a, b) = (1, 0), and V_next is the "
                                       "value at the next policy token, carried back across the hole by a "
                                       "reverse scan of the values."))


@_exercise("token_gae_pairs", "12_llm_tokens", "numpy", stream=21, task="""
token_gae_pairs(rewards, values, mask, gamma, lam) -> (a, b): verl's GAE over a batch of responses
as the pairs of one reverse scan. rewards, values: (B, T) float32; mask: (B, T) bool, True at the
policy's tokens, False at tool output inside a response and at the padding after it (what rewards
and values hold there is never to be read). The checker runs linear_scan(a, b) and compares y with
verl's advantages before its whitening, at every position. A masked token is as if deleted: the
identity (a, b) = (1, 0), so y there is the advantage carried back from the next policy token (0
after the last). At a policy token a = gamma * lam and b = r_t + gamma * V_next - V_t, V_next
the value at the next policy token, across any hole (0 after the response's last token). V_next
is itself a reverse scan of the values: linear_scan may be called.
""" + SCAN_RULES, run=_scan, may_use=("linear_scan",),
    probe=_pairs_do_the_scan(lambda: _pairs_probe_inputs(_t(np.ones((1, 6), bool), torch.bool), 0.9, 0.8),
                             "a = gamma * lam at a policy token"),
    window_end="the window's last position (no token after it: V_next = 0 there)",
    select_fix=" Select instead of multiplying: torch.where(mask, values, 0.0) and torch.where(mask, delta, 0.0), "
               "never values * mask or delta * mask (a masked token's value may be NaN).",
    hint=lambda args, i, bad, got, expected: _token_gae_hint(args, got, expected))
def _token_gae_cases(d):
    rng, gamma, lam = d.rng, d.real(0.99, 0.9, 0.999), d.real(0.95, 0.7, 0.99)
    out = []
    T1, T2, T3 = d.int(8, 5, 12), d.int(40, 20, 64), d.int(60, 30, 80)
    L1, L2, L3 = d.int(45, 15, T3 - 1), d.int(50, 20, T3 - 1), d.int(20, 8, T3 - 1)
    w1 = d.int(3, 1, 4)
    for what, T, lengths, holes in (
            ("one response, right-padded", T1, [d.int(5, 2, T1 - 1)], [[]]),
            ("right padding: a response as long as the window, a one-token response", T2,
             [T2, d.int(25, 2, T2 - 1), 1], [[], [], []]),
            ("tool output inside responses (multi-turn) and right padding", T3,
             [T3, L1, L2, L3],
             [[(d.int(20, 3, T3 - 10), d.int(5, 1, 6))],  # the whole window, one hole
              [(L1 - 1 - w1, w1)],  # a hole just before the response's last token
              [(d.int(5, 2, 6), 2), (d.int(30, 12, L2 - 6), d.int(4, 1, 4))],  # two holes
              [(d.int(10, 2, L3 - 3), 1)]])):  # a one-token hole
        B = len(lengths)
        pos = np.arange(T)
        mask = pos[None, :] < np.array(lengths)[:, None]
        for row, spans in enumerate(holes):
            for start, width in spans:
                mask[row, start:start + width] = False
        last = mask & ~np.concatenate([np.cumsum(mask[:, ::-1], 1)[:, ::-1][:, 1:] > 0,
                                       np.zeros((B, 1), dtype=bool)], 1)  # no policy token after it
        r = -0.05 * np.abs(rng.normal(size=(B, T)))  # a KL penalty per token (at masked ones too: not read)
        r[last] += rng.normal(size=B)  # the outcome reward, at each response's last token
        v = rng.normal(size=(B, T))  # the critic's values (at masked tokens too: not read)
        before_hole = mask & ~np.roll(mask, -1, 1) & ~last
        marks = {"a masked token (tool output or padding: as if deleted, the identity (1, 0))": ~mask,
                 "the last policy token before a hole (V_next: the value at the first policy token after the hole)":
                     before_hole,
                 "a response's last token (no policy token after it: V_next = 0)": last}
        expected = _token_gae_reference(r, v, mask, gamma, lam)
        if what.startswith("tool output"):  # what a masked token holds is never to be read: NaN there
            r, v = np.where(mask, r, np.nan), np.where(mask, v, np.nan)
            what += ", NaN at the masked tokens"
        out.append((f"{what}, shape ({B}, {T})", (_t(r), _t(v), _t(mask, torch.bool), gamma, lam), {}, expected,
                    marks))
    return out


# ---- 13: performance (the appendix) ----------------------------------------------------------------
SECTOR = 32  # bytes: the unit in which a GPU reads global memory (a 128-byte cache line is 4 sectors)


def _sectors_hint(addresses, nbytes, got, expected):
    """What a wrong count of warp_sectors did, where it is one of the usual slips (each computed from the
    case's addresses; one that gives the right count on this case is no slip here)."""
    first = np.asarray(addresses) // SECTOR
    slips = ((len({int(s) for s in first}), "that is the sectors of each load's first byte only: a load whose bytes "
              "cross a sector boundary touches two." + _fix(" Count every sector from its first byte's, address // "
                                                            "32, to its last byte's, (address + nbytes - 1) // 32.")),
             (len(addresses), "that is the number of lanes (or of distinct addresses): a sector that several lanes "
              "read counts once." + _fix(" Count the distinct sectors, address // 32, in a set.")),
             (-(-len(addresses) * nbytes // SECTOR), "that is the bytes asked for / 32: true only where the lanes "
              "read contiguous, aligned bytes." + _fix(" Put each lane's sectors into a set.")),
             (len({int(a) for a in addresses}), "that is the distinct addresses: several addresses can share one "
              "sector." + _fix(" Count address // 32, not address.")),
             (len({int(s) for s in first} | {int(s) for s in (np.asarray(addresses) + nbytes - 1) // SECTOR}),
              "that counts each load's first and last sectors only: a load wider than 32 bytes also touches "
              "the sectors between them." + _fix(" Count every sector from the first byte's to the last byte's, "
                                                  "range(first, last + 1).")),
             *((len({s for a in addresses for s in range(int(a) // SECTOR, (int(a) + end) // SECTOR)}),
                "that leaves out each load's last sector: range(first, last) stops before last." + _fix(
                    " Count range(first, last + 1), last = (address + nbytes - 1) // 32.")) for end in (nbytes - 1, nbytes)),
             (len({s for a in addresses for s in range(int(a) // SECTOR, (int(a) + nbytes) // SECTOR + 1)}),
              "that counts one byte too many at a load's end, where a load ends at a sector's end." + _fix(
                  " A load's last byte is address + nbytes - 1, so a load that ends at a sector's end does not touch "
                  "the next sector.")))
    try:
        got = int(got)
    except (TypeError, ValueError, OverflowError):
        return None
    if got == SECTOR * int(expected) != int(expected):  # (a round-56 review's case: no hint then)
        return _Whole(f"that is {SECTOR} times the answer: the bytes the sectors hold, not the sectors (each holds 32 "
                      "bytes)." + _fix(" Return the count of distinct sectors, not their bytes."))
    return next((said for value, said in slips if value == got != int(expected)), None)


@_exercise("warp_sectors", "13_appendix_performance", "numpy", stream=22, task="""
warp_sectors(addresses, nbytes) -> int: how many distinct 32-byte sectors one load instruction of a
warp touches. addresses: a 1-D int64 NumPy array, the byte address where each active lane's load
starts (a masked-off lane is left out, so there may be fewer than 32). Every lane loads nbytes
bytes (an int: 2, 4, 16 or more), the bytes address, address + 1, ..., address + nbytes - 1. Sector k
holds the bytes 32 k to 32 k + 31. A sector counts once however many lanes read from it, and a
load whose bytes cross a sector boundary touches both sectors.
""", scan=None, key="crossing",  # a load across a boundary touches both sectors: the task's point, no partial credit
    hint=lambda args, i, bad, got, expected: _sectors_hint(*args, got, expected))
def _warp_sectors_cases(d):
    rng, lane = d.rng, np.arange(32)
    base = 128 * d.int(8, 1, 4096)  # where a tensor starts: PyTorch's allocations are aligned
    at = base + 4 * d.int(5, 0, 31)
    B, n = d.int(1000, 16, 8192), d.int(20, 1, 31)
    size = d.int(64, 40, 256)
    off = 4 * d.int(2, 1, 7)  # a wide load's start, not on a sector boundary
    cases = [
        (f"float32, contiguous: lane i at {base} + 4 i", base + 4 * lane, 4),
        (f"float32, one per-row value read by every lane (stride 0): all 32 lanes at {at}",
         np.full(32, at), 4),
        (f"float32, one column of a time-major (T, B={B}) buffer: lane i at {base} + {4 * B} i (step i of "
         "one environment)", base + 4 * B * lane, 4),
        (f"bfloat16, contiguous, the last block of a row: {n} active lanes at {base} + 2 i", base + 2 * lane[:n], 2),
        (f"16-byte vectors (4 float32 steps a lane), aligned: lane i at {base} + 16 i", base + 16 * lane, 16),
        (f"16 bytes a lane, one float32 step off the 16-byte alignment (values[t+1], 4 steps a lane: too "
         f"misaligned for one vector load), loads crossing sector boundaries: lane i at {base + 4} + 16 i",
         base + 4 + 16 * lane, 16),
        (f"64 bytes a lane (a row of 16 float32 each, read as several vector loads, which touch the same sectors), "
         f"{off} bytes past a sector boundary, loads crossing sector boundaries: lane i at {base + off} + 64 i (each "
         "lane's bytes span three sectors)", base + off + 64 * lane, 64),
        (f"float32 gather: 32 lanes at random elements of a {size}-element tensor at {base} (some lanes share "
         "an element)", base + 4 * rng.integers(0, size, 32), 4),
    ]
    return [(what, (np.asarray(addresses, dtype=np.int64), nbytes), {},
             _key("warp_sectors", np.asarray(addresses, dtype=np.int64), nbytes))
            for what, addresses, nbytes in cases]


def _in_tiles(chunk_at, rows_at):
    """The runner of tiled_scan: _in_chunks' rules, and a tile of ``rows`` rows per program: the student's
    kernel launched on cdiv(B, rows) programs, and (under the interpreter) a tl.associative_scan over as many
    rows as a program owns."""
    chunked = _in_chunks(chunk_at)

    def run(fn, args, kw):
        SEEN["tallest_scan"], SEEN["rows_scanned"], before = 0, False, len(LAUNCHES)
        out = chunked(fn, args, kw)
        B, rows = args[0].shape[0], args[rows_at]
        programs = [n for n in (_programs(launch) for launch in LAUNCHES[before:] if launch.mine) if n is not None]
        if programs and -(-B // rows) not in programs:
            raise _RuleBroken(
                f"your kernel ran on {programs[0]} programs where {B} rows in tiles of rows={rows} make "
                f"{-(-B // rows)}: launch one program per tile, grid (triton.cdiv(B, rows),), each owning rows "
                f"pid * ROWS to pid * ROWS + ROWS - 1")
        if INTERPRET and SEEN["tallest_scan"] and SEEN["tallest_scan"] < min(rows, B):
            raise _RuleBroken(
                f"your kernel's tl.associative_scan took {SEEN['tallest_scan']} row(s) at a time where a program owns "
                f"{rows}: scan the (ROWS, CHUNK) tile at once, along axis 1, one scan per chunk for all its rows")
        return out
    return run


_ROWS_SCANNED = ("Your kernel's tl.associative_scan runs along axis 0, down the tile's rows: that scans across the "
                 "batch, one row's step into another row's. A tile is (ROWS, CHUNK), its rows the batch and its "
                 "columns the steps: time runs along axis 1." + _fix(" tl.associative_scan(..., axis=1, ...)."))


@_exercise("tiled_scan", "13_appendix_performance", "kernel", stream=23, task="""
tiled_scan(rewards, terminated, gamma, chunk, rows) -> returns, (B, T): reset_scan (00c) with a
tile of `rows` rows per program. Launch triton.cdiv(B, rows) programs; program p owns rows
p * ROWS to p * ROWS + ROWS - 1 (those past B masked off) and walks their chunks of CHUNK steps
from the last one down. Each chunk is a (ROWS, CHUNK) block: one tl.associative_scan along axis 1
(reverse=True) with your reset_combine, and a carry per row (a block of ROWS values) selected as in
reset_scan. Contiguous inputs; B need not be a multiple of rows.
""", needs="scan", run=_in_tiles(3, 4), recompute=lambda r, done, gamma, chunk, rows: reference.discounted_returns(
    r, gamma=gamma, terminated=done), window_end=_ROW_END,
    hint=lambda args, i, bad, got, expected: _ROWS_SCANNED if SEEN["rows_scanned"] else _one_chunk_order_hint(
        args[:4], True, got, expected, tiled=True))
def _tiled_scan_cases(d):
    rng, gamma = d.rng, d.real(0.9, 0.8, 0.99)
    out = []
    for shape, chunk, rows, what in (
            ((4, d.int(20, 8, 40)), 32, 4, "one tile, one chunk"),
            ((d.int(5, 5, 7), d.int(150, 100, 190)), 32, 4, "a last tile with rows past B, several chunks"),
            ((d.int(6, 5, 11), d.int(200, 140, 250)), 64, 2, "NaN and inf after episode ends, across chunks")):
        r, done = rng.normal(size=shape), _flags(rng, shape, 0.03)
        done[0, -1] = True  # an episode end at the window's last step
        if "NaN" in what:  # an end in the second chunk, then a bad reward in the chunk after: the carry is NaN
            done[:, chunk + 3] = True
            r[0, 2 * chunk + 1], r[-1, 2 * chunk + 5] = np.nan, np.inf
            done[0, chunk + 4:2 * chunk + 1] = False
            done[-1, chunk + 4:2 * chunk + 5] = False
        out.append((f"{what}, shape {shape}, chunk {chunk}, rows {rows}",
                    (_t(r), _t(done, torch.bool), gamma, chunk, rows), {},
                    reference.discounted_returns(r, gamma=gamma, terminated=done),
                    {DONE: done, **_carry_steps(shape, chunk, tile=True), **_reset_before_the_carry(done, chunk)}))
    return out


# ---- 13b: the GPU lab ------------------------------------------------------------------------------
SM_REGISTERS, SM_WARPS, SM_PROGRAMS, SM_SHARED = 65536, 64, 32, 233472  # an H100's or H200's SM (228 KiB)


def _resident_limits(regs, num_warps, shared_bytes) -> dict:
    """The programs each of an SM's four limits allows (no shared memory: no limit below the others)."""
    return {"registers": SM_REGISTERS // (regs * 32 * num_warps), "warps": SM_WARPS // num_warps,
            "programs": SM_PROGRAMS, "shared": SM_SHARED // shared_bytes if shared_bytes else SM_SHARED}


def _resident_reference(regs, num_warps, shared_bytes):
    return min(_resident_limits(regs, num_warps, shared_bytes).values())


def _resident_hint(regs, num_warps, shared_bytes, got):
    """What a wrong count of resident_programs left out, where it is one of the usual slips."""
    limits = _resident_limits(regs, num_warps, shared_bytes)
    without_registers = min(v for k, v in limits.items() if k != "registers")
    slips = (
        # registers counted per program (65536 // regs) or per warp, where that leaves them no limit at all
        (without_registers if limits["registers"] < without_registers else None,
         "your count is more than the registers allow: it counts registers per program or per warp, not per "
         "thread. A program of num_warps warps holds regs registers in each of its 32 * num_warps threads, all "
         "out of the SM's 65,536." + _fix(
             " registers: 65536 // (regs * 32 * num_warps).")),
        (min(SM_PROGRAMS, SM_WARPS // num_warps, SM_REGISTERS // (regs * num_warps), limits["shared"]),
         "your register limit counts one register per warp, not per thread: a program of num_warps warps "
         "holds regs registers in each of its 32 * num_warps threads." + _fix(
             " registers: 65536 // (regs * 32 * num_warps).")),
        (min(v for k, v in limits.items() if k != "programs"),
         "your count passes 32 programs: an SM holds at most 32 resident programs, however small they are."
         + _fix(" Take the smallest of the four limits, 32 among them.")),
        (min(v for k, v in limits.items() if k != "warps"),
         "your count passes 64 warps: an SM holds at most 64 warps at once, so at most 64 // num_warps programs."
         + _fix(" Take the smallest of the four limits, 64 // num_warps among them.")),
        (min(v for k, v in limits.items() if k != "shared"),
         "your count leaves out shared memory: the programs' shared memory together must fit the SM's 233,472 "
         "bytes." + _fix(" shared memory: 233472 // shared_bytes (no limit where shared_bytes is 0).")),
        (min(v for k, v in {**limits, "shared": 228000 // shared_bytes if shared_bytes else SM_SHARED}.items()),
         "your shared-memory limit is 228,000 bytes, 228 kB in decimal: the SM's 228 KiB are 228 * 1024 = "
         "233,472 bytes (a KiB is 1,024 bytes, a kB 1,000)." + _fix(" shared memory: 233472 // shared_bytes.")),
        # after 228,000: on the fixed case where both give 3, a student who read 228 kB sees that hint
        (min(v for k, v in {**limits, "shared": SM_SHARED // (shared_bytes + 1024)}.items()),
         "your count reserves 1 KiB of shared memory for each program (shared_bytes + 1024). A real sm_90 GPU "
         "does, but this exercise's model leaves the reserve out, as its task says." + _fix(
             " shared memory: 233472 // shared_bytes.")),
        (min(SM_PROGRAMS, SM_WARPS // num_warps, -(-SM_REGISTERS // (regs * 32 * num_warps)), limits["shared"]),
         "your register limit rounds up: a program runs only where all its registers fit, so the count rounds "
         "down." + _fix(" Use // (floor division).")))
    right = _resident_reference(regs, num_warps, shared_bytes)
    try:
        got = float(got)  # (inf: no shared memory counted as no limit, then max)
    except (TypeError, ValueError, OverflowError):
        return None
    if math.isfinite(got) and got != int(got):  # (a round-55 review's case: no hint then)
        return _Whole(f"your count, {got:.4g}, is not a whole number: a true division (/) in a limit. A program is "
                      "resident whole or not at all, so each limit's count rounds down." + _fix(
                          " Use // (floor division) in every limit."))
    got = got if math.isinf(got) else int(got)
    said = next((said for value, said in slips if value == got != right), None)
    # max for min (a round-50 review's case, no hint then), after the slips above (no cap of 32 is the max of
    # the others where no shared memory is counted): shared memory's count where there is none the SM's 233,472
    # bytes, left out, or inf
    largest = {max(limits.values()), max(v for k, v in limits.items() if k != "shared"), math.inf}
    if said is None and got in largest and got != right:  # (whole: an inf got is this slip, not a 0 * inf)
        return _Whole("your count is the largest of the limits, not the smallest: each limit caps the programs by "
                      "itself, so the SM holds only as many as the tightest one allows." + _fix(
                          " Take min(...) of the four counts, not max (here " + ", ".join(
                              f"{k} {v:,}" for k, v in limits.items() if k != "shared" or shared_bytes) + ")."))
    return said


@_exercise("resident_programs", "13b_gpu_lab", "concept", stream=33, task="""
resident_programs(regs, num_warps, shared_bytes) -> int: how many programs of a kernel an SM of an
H100 or H200 holds at once. Each program has num_warps warps of 32 threads; each thread uses regs
registers; each program uses shared_bytes bytes of shared memory (0: none). The SM's limits: 65,536
registers, 64 warps, 32 programs, and 233,472 bytes (228 KiB) of shared memory. The answer is the
smallest of the four counts each limit allows (a program is resident whole or not at all). The model
leaves out the GPU's rounding of registers and shared memory to its allocation units, and the
1 KiB of shared memory sm_90 reserves for each program.
""", scan=None, hint=lambda args, i, bad, got, expected: _resident_hint(*args, got))
def _resident_cases(d):
    cases = (("4 warps, no shared memory", (48, 4, 0)),
             ("4 warps, more registers per thread", (d.choice(72, (64, 72, 80, 96)), 4, 0)),
             ("one warp, few registers: the cap on programs", (d.choice(32, (16, 24, 32, 40)), 1, 0)),
             ("8 warps: the cap on warps", (d.choice(16, (16, 24, 32)), 8, 0)),
             ("4 warps, 40 KB of shared memory (a pipelined kernel's stages)",
              (32, 4, d.int(40000, 20000, 60000))),
             ("2 warps, 1 KiB of shared memory", (d.choice(64, (40, 48, 64, 96)), 2, 1024)),
             ("one warp, few registers, a little shared memory: the cap on programs again",
              (d.choice(16, (16, 24, 32)), 1, d.int(1000, 500, 4000))),
             # 6 programs' worth, in 228 KiB and in 228 kB alike; 5 with 1 KiB reserved for each program
             ("4 warps, shared memory the tightest limit (6 programs)", (32, 4, d.int(37950, 37889, 38000))),
             # 4 programs' worth in 228 KiB, 3 in 228,000 bytes (228 kB): a KiB read as 1,000 bytes shows
             ("4 warps, shared memory the tightest limit", (32, 4, d.int(58000, 57001, 58368))))
    return [(f"{what}: regs={a[0]}, num_warps={a[1]}, shared_bytes={a[2]}", a, {}, _resident_reference(*a))
            for what, a in cases]


# ---- 14: the GPU data ------------------------------------------------------------------------------
def _noise_reference(ours, other, x):
    return 1 if other[0] > x * ours[1] else -1 if ours[0] > x * other[1] else 0


def _noise_hint(ours, other, x, got):
    """Which usual slip a wrong verdict of noise_verdict is, where this case tells it apart."""
    def rule(o, p, faster=lambda a, b: a > b):
        return 1 if faster(p[0], x * o[1]) else -1 if faster(o[0], x * p[1]) else 0
    mid = lambda r: (r[0] + r[1]) / 2  # noqa: E731
    slips = ((rule(ours, other, lambda a, b: a >= b), "exactly x apart is within the noise: the rule calls a call "
              "faster only when the gap is MORE than x." + _fix(" Compare with >, not >=.")),
             (-_noise_reference(ours, other, x), "your signs are swapped: 1 means ours is faster (the other "
              "call's range lies above ours), -1 that the other call is." + _fix(" Return 1 where other's low end "
                                                                                  "> x * ours' high end.")),
             *((v, "you compared other points of the ranges than their nearest ends (the low ends, the far ends or "
               "the middles: where one of these says faster, the others often do too). The rule compares the "
               "nearest ends, the slower call's lowest timing against the faster call's highest, so that what it "
               "calls faster is faster beyond any drift." + _fix(
                   " Ours faster when other[0] > x * ours[1]; the other faster when ours[0] > x * other[1]."))
               for v in (1 if other[1] > x * ours[0] else -1 if ours[1] > x * other[0] else 0,
                         1 if mid(other) > x * mid(ours) else -1 if mid(ours) > x * mid(other) else 0,
                         1 if other[0] > x * ours[0] else -1 if ours[0] > x * other[0] else 0)))
    try:
        got = int(got)
    except (TypeError, ValueError, OverflowError):
        return None
    return next((said for value, said in slips if value == got != _noise_reference(ours, other, x)), None)


@_exercise("noise_verdict", "14_appendix_data", "concept", stream=34, task="""
noise_verdict(ours, other, x) -> int: the noise rule (section 6) on two wall-time ranges that were
not paired. ours and other: (lowest, highest) µs per call over the timings of each call (equal when
timed once). Return 1 when ours is faster (the other call's lowest timing is more than x times our
highest), -1 when the other call is faster (our lowest is more than x times its highest), and 0 when
the gap between the ranges' nearest ends is x or less: within the noise.
""", scan=None, hint=lambda args, i, bad, got, expected: _noise_hint(*args, got))
def _noise_cases(d):
    s = d.choice(1.0, (0.5, 2.0, 4.0, 8.0))  # a scale: powers of 2 keep every product exact
    cases = (("single timings, ours faster", (50.0, 50.0), (120.0, 120.0), 2.2),
             ("ranges, the nearest ends within x (the far ends and the middles more than x apart)",
              (10.0, 12.0), (20.0, 40.0), 2.2),
             ("the other call faster", (100.0, 120.0), (30.0, 40.0), 2.2),
             ("the nearest ends exactly x apart", (12.5, 12.5), (25.0, 30.0), 2.0),
             ("our range wide: its top decides", (10.0, 20.0), (30.0, 50.0), 2.0),
             ("the other call's far end more than x below ours, its near end not", (100.0, 120.0), (30.0, 50.0), 2.2),
             ("overlapping ranges", (40.0, 60.0), (50.0, 70.0), 2.2))
    scaled = [(what, tuple(v * s for v in o), tuple(v * s for v in p), x) for what, o, p, x in cases]
    return [(f"{what}: ours={o}, other={p}, x={x}", (o, p, x), {}, _noise_reference(o, p, x)) for what, o, p, x in scaled]
