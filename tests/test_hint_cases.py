"""Every exercise's "Hint 3: check it by hand" runs its small case through the exercise's solution
and prints what the hint says it "must print": the hand cases the notebooks give students are
pinned here, as the checkers are by tests/test_exercises.py."""
import contextlib
import io
import linecache
import re
from pathlib import Path

import jupytext
import numpy as np
import pytest
import torch

import rltriton_lite as rl
from rltriton_lite import exercises, profile
from solution_files import solution, with_edits

ROOT = Path(__file__).parent.parent
# their hand cases read the notebook's own variables (08's rollouts, 10's cleanrl_gae): the
# notebook's run under nbmake executes them, with the student's function, not the solution
NEEDS_THE_NOTEBOOK = {"lean_gae_loop", "cleanrl_advantages"}


def hint3_blocks(notebook: str, name: str) -> list[str]:
    """The python blocks of ``name``'s Hint 3, between the previous exercise's attempt cell and its own."""
    found = []
    for cell in jupytext.read(ROOT / "notebooks" / f"{notebook}.py").cells:
        if cell.cell_type == "code" and re.search(r"exercises\s*\.\s*attempt\s*\(", cell.source):
            if re.search(rf"exercises\s*\.\s*attempt\s*\(\s*[\"']{name}[\"']", cell.source):
                return found
            found = []
        elif cell.cell_type == "markdown":
            for hint in re.findall(r"<summary>Hint 3: check it by hand</summary>(.*?)</details>", cell.source, re.S):
                found += re.findall(r"```python\n(.*?)```", hint, re.S)
    raise AssertionError(f"{notebook}: no attempt cell for {name}")


def expected(code: str) -> list[str]:
    """What each "# must print X" comment promises: X, split at ", then ", a trailing note in words ("(the
    committed run)") and "twice"/"three times" cut."""
    said = []
    for x in re.findall(r"# must print (.*)", code):
        x = re.sub(r"\s*\([A-Za-z][^()]*\)\s*$", "", x.strip())
        x = re.sub(r",\s*(twice|three times)\s*$", "", x)
        said += [part.strip() for part in x.split(", then ")]
    return said


CASES = [(name, nb) for name, nb, _ in exercises.catalog() if name not in NEEDS_THE_NOTEBOOK]
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def test_the_exercises_left_out_are_real_and_need_their_notebook():
    names = exercises.names()
    assert NEEDS_THE_NOTEBOOK <= set(names)
    for name, nb, _ in exercises.catalog():
        if name in NEEDS_THE_NOTEBOOK:
            with pytest.raises(NameError):
                _run(name, nb)


def _run(name, notebook):
    blocks = hint3_blocks(notebook, name)
    # the notebooks' DEVICE: compiled kernels on a GPU take CUDA tensors only
    namespace = {"torch": torch, "np": np, "rl": rl, "exercises": exercises, "DEVICE": DEVICE, "KERNEL": "triton",
                 "rows": profile.committed_results()[1]["rows"], name: solution(name)}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for code in blocks:
            where = f"<{notebook}: {name}'s Hint 3, block {blocks.index(code)}>"
            # (a @triton.jit function defined in the block reads its source, compiled on a GPU: linecache holds it)
            linecache.cache[where] = (len(code), None, code.splitlines(True), where)
            exec(compile(code, where, "exec"), namespace)
    return blocks, out.getvalue()


@pytest.mark.parametrize("name, notebook", CASES, ids=[n for n, _ in CASES])
def test_hint_3_prints_what_it_promises(name, notebook):
    blocks, printed = _run(name, notebook)
    promised = [x for code in blocks for x in expected(code)]
    assert blocks and promised, f"{name}: Hint 3 has no python block saying what it must print"
    flat = " ".join(printed.replace(", device='cuda:0'", "").split())  # a CUDA tensor prints its device
    for x in promised:
        assert " ".join(x.split()) in flat, f"{name}: Hint 3 says it must print {x!r}; it printed {printed!r}"


def _message(name, fn):
    """What the checker says to ``fn``: a wrong answer's diagnosis, which Hint 3 no longer repeats."""
    with pytest.raises(AssertionError) as e:
        exercises.check(name, fn)
    return str(e.value)


def test_vtrace_kernel_s_checker_names_what_a_swapped_combine_prints(tmp_path):
    """04c's Hint 3 once said it: vs = (1.5, 1.5, 2) on its first case (chunk 2) means the combine's operands are
    swapped. A later review moved such diagnoses out of the hints: the checker says it."""
    swapped = with_edits("vtrace_kernel", [("return tl.where(k2, a2, a2 * a1), tl.where(k2, b2, b2 + a2 * b1), k1 | k2",
                                            "return tl.where(k1, a1, a1 * a2), tl.where(k1, b1, b1 + a1 * b2), k1 | k2")],
                         tmp_path)
    one_row = lambda *x: torch.tensor([x], device=DEVICE)  # noqa: E731
    vs, _ = swapped(torch.log(one_row(2.0, 0.5, 1.0)), one_row(1.0, 1.0, 1.0), one_row(1.0, 1.0, 1.0),
                            one_row(1.0, 1.0, 2.0), one_row(False, False, False), 0.5, 1.0, 1.0, 2)
    torch.testing.assert_close(vs.cpu(), torch.tensor([[1.5, 1.5, 2.0]]))
    assert "Your combine applies the two maps in the wrong order" in _message("vtrace_kernel", swapped)


def test_vtrace_kernel_s_checker_names_a_carry_from_the_last_lane(tmp_path):
    """04c's Hint 3 (round 62, until a later review moved it to the checker): the carry taken at the chunk's last
    lane, unclamped (padding in the row's last chunk, so the first carry is 0), prints (1.625, 1.25, 1.5, 1.0, 2.0)
    on its five-step row at chunk 2; the checker names the slip."""
    last_lane = with_edits("vtrace_kernel", [("carry = tl.sum(tl.where(t == ci * CHUNK, vs, 0.0), 0)",
                                              "carry = tl.sum(tl.where(t == ci * CHUNK + CHUNK - 1, vs, 0.0), 0)")],
                           tmp_path)
    one_row = lambda *x: torch.tensor([x], device=DEVICE)  # noqa: E731
    ones5 = one_row(1.0, 1.0, 1.0, 1.0, 1.0)
    vs, _ = last_lane(torch.log(one_row(2.0, 0.5, 1.0, 0.5, 1.0)), ones5, ones5, one_row(1.0, 1.0, 1.0, 1.0, 2.0),
                      one_row(False, False, False, False, False), 0.5, 1.0, 1.0, 2)
    np.testing.assert_allclose(vs.cpu().numpy(), [[1.625, 1.25, 1.5, 1.0, 2.0]], rtol=1e-6)
    assert "Your carry is vs at the chunk's last step" in _message("vtrace_kernel", last_lane)


def test_vtrace_kernel_s_checker_says_what_v2_1_means(tmp_path):
    """04c's Hint 3 (a cold review; a later one moved it to the checker): v_2 = 1 comes from b at the window's last
    step not in its end form (it kept -gamma c V'). The flag missing there, with b in its end form, still gives
    v_2 = 2: the carry into that step is 0, so the flag changes nothing there."""
    one_row = lambda *x: torch.tensor([x], device=DEVICE)  # noqa: E731
    args = (torch.log(one_row(2.0, 0.5, 1.0)), one_row(1.0, 1.0, 1.0), one_row(1.0, 1.0, 1.0), one_row(1.0, 1.0, 2.0),
            one_row(False, False, False), 0.5, 1.0, 1.0, 2)
    flag = ("tl.associative_scan((a, b, reset)", "tl.associative_scan((a, b, term)")  # no flag at t = T - 1
    b_kept = ("tl.where(reset, 0.0, gamma * cs * v_next)", "tl.where(term, 0.0, gamma * cs * v_next)")
    vs, _ = with_edits("vtrace_kernel", [flag], tmp_path)(*args)
    np.testing.assert_allclose(vs.cpu().numpy(), [[1.75, 1.5, 2.0]], rtol=1e-6)
    for edits in ([b_kept], [flag, b_kept]):
        vs, _ = with_edits("vtrace_kernel", edits, tmp_path)(*args)
        np.testing.assert_allclose(vs.cpu().numpy(), [[1.625, 1.25, 1.0]], rtol=1e-6)
    assert "Your vs there keeps b's -gamma c V' term" in _message("vtrace_kernel", with_edits("vtrace_kernel", [b_kept],
                                                                                            tmp_path))
    assert "means the window's last step was not a reset" not in (ROOT / "notebooks" / "04c_vtrace_kernel.py").read_text()


def test_vtrace_pg_s_hint_3_shows_rho_times_vs_minus_v(tmp_path):
    """04's Hint 3 for vtrace_pg (a cold review): rho (vs - V), section 4's on-policy identity, gives the terminated
    row's answer; the row without a termination shows it, 0.25 at t = 1 where the answer is 0.5. A later review:
    the ratio left unclipped prints 1.5 at t = 0 on the first line and 1.0 on the second (not 1.0 on both). A later
    one moved both diagnoses out of the hint: the checker names them."""
    lr_r_v = (torch.log(torch.tensor([[2.0, 0.5, 1.0]], device=DEVICE)), torch.ones(1, 3, device=DEVICE),
              torch.ones(1, 3, device=DEVICE))
    X = (*lr_r_v, torch.tensor([[1.0, 1.0, 2.0]], device=DEVICE), torch.tensor([[False, False, False]], device=DEVICE))
    X_term = (*lr_r_v, torch.tensor([[1.0, float("nan"), 2.0]], device=DEVICE),
              torch.tensor([[False, True, False]], device=DEVICE))
    wrong = with_edits("vtrace_pg", [
        ("(r + tl.where(term, 0.0, gamma * v_next) - v)", "(y - v)")], tmp_path)
    for fn, want in ((solution("vtrace_pg"), [[0.75, 0.5, 1.0]]), (wrong, [[0.75, 0.25, 1.0]])):
        got = exercises.scan_hook(exercises.vtrace_prologue, X, (0.5, 1.0, 1.0), epilogue=fn)
        np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-6)
    unclipped = with_edits("vtrace_pg", [("tl.minimum(rho, rho_bar) * ", "rho * ")], tmp_path)
    for x, want in ((X, [[1.5, 0.5, 1.0]]), (X_term, [[1.0, 0.0, 1.0]])):
        got = exercises.scan_hook(exercises.vtrace_prologue, x, (0.5, 1.0, 1.0), epilogue=unclipped)
        np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-6)
    assert "your pg is y - V_t" in _message("vtrace_pg", wrong)
    assert "the ratio is not clipped" in _message("vtrace_pg", unclipped)
