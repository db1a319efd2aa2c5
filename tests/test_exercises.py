"""The exercises' checkers: each accepts its solution (notebooks/solutions/<name>.py) and rejects
at least two plausible wrong answers, with a message that names the case."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from rltriton_lite import exercises

SOLUTIONS = Path(__file__).resolve().parent.parent / "notebooks" / "solutions"


def solution(name: str):
    spec = importlib.util.spec_from_file_location(f"solution_{name}", SOLUTIONS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.solution


def shift_left(x):
    """x_{t+1} at t (0 at the end): an off-by-one."""
    return torch.cat([x[..., 1:], torch.zeros_like(x[..., :1])], -1)


def no_flags(flags):
    return torch.zeros_like(flags)


def wrong_answers(name: str):
    """(what is wrong, fn): at least two per exercise, each a mistake a student makes."""
    s = solution(name)
    W = {
        "matrix_compose": [
            ("p first, then q", lambda p, q: s(q, p)),
            ("b1 + A2 b2", lambda p, q: (p[0] @ q[0], p[1] + q[0] @ q[1])),
        ],
        "td_target_kernel": [
            ("ignores dones", lambda r, v, d, g: s(r, v, no_flags(d), g)),
            ("gamma on the reward", lambda r, v, d, g: s(g * r, v, d, g)),
        ],
        "block_scan": [
            ("ignores dones", lambda r, d, g: s(r, no_flags(d), g)),
            ("a forward scan", lambda r, d, g: s(r.flip(0), d.flip(0), g).flip(0)),
        ],
        "chunked_scan": [
            ("no carry between chunks", lambda r, d, g: s(r, d | (torch.arange(r.shape[-1], device=d.device) % 128 == 127), g)),
            ("ignores dones", lambda r, d, g: s(r, no_flags(d), g)),
        ],
        "gae_kernel": [
            ("bootstraps at terminations", lambda r, v, nv, d, g, lam: s(r + g * d * nv, v, nv, d, g, lam)),
            ("lambda = 1", lambda r, v, nv, d, g, lam: s(r, v, nv, d, g, 1.0)),
        ],
        "n_step_returns": [
            ("one step too many", lambda r, nv, d, g, n: s(r, nv, d, g, n + 1)),
            ("ignores terminations", lambda r, nv, d, g, n: s(r, nv, no_flags(d), g, n)),
        ],
        "gae_pairs": [
            ("truncation ignored", lambda r, v, nv, term, trunc, g, lam: s(r, v, nv, term, no_flags(trunc), g, lam)),
            ("values for next_values", lambda r, v, nv, term, trunc, g, lam: s(r, v, v, term, trunc, g, lam)),
        ],
        "q_lambda": [
            ("trace never cut", lambda r, q, gr, term, g, lam: s(r, q, torch.ones_like(gr), term, g, lam)),
            ("greedy flag of step t, not t+1",
             lambda r, q, gr, term, g, lam: s(r, q, torch.cat([gr[..., :1], gr[..., :-1]], -1), term, g, lam)),
        ],
        "retrace": [
            ("c not truncated at 1", _retrace_untruncated),
            ("Q of the taken action for the expectation", lambda r, eq, q, lr, term, g, lam: s(r, q, q, lr, term, g, lam)),
        ],
        "dual_clip": [
            ("dual clip on positive advantages too",
             lambda ratio, adv, eps, c: -torch.maximum(-s(ratio, adv, eps, c), c * adv)),
            ("plain PPO", lambda ratio, adv, eps, c: s(ratio, adv, eps, float("-inf"))),
        ],
        "soft_lambda_targets": [
            ("no entropy on the continuation",
             lambda r, q1, q2, nlp, lp, term, g, al, lam: s(r, q1, q2, nlp, torch.zeros_like(lp), term, g, al, lam)),
            ("log pi of step t, not t+1",
             lambda r, q1, q2, nlp, lp, term, g, al, lam: s(r, q1, q2, nlp, torch.cat([lp[..., :1], lp[..., :-1]], -1),
                                                            term, g, al, lam)),
        ],
        "vtrace_floor_bytes": [
            ("no flag byte", lambda B, T, e: B * T * 6 * e),
            ("outputs not counted", lambda B, T, e: B * T * (4 * e + 1)),
        ],
        "awr_weights": [
            ("no clip", lambda A, beta, w: s(A, beta, float("inf"))),
            ("exp(A * beta)", lambda A, beta, w: s(A * beta * beta, beta, w)),
        ],
    }
    return W[name]


def _retrace_untruncated(r, eq, q, lr, term, g, lam):
    """Retrace with c = lam pi/mu (no truncation): the pairs built by hand."""
    c = lam * lr.exp()
    c[..., -1] = 0.0
    boot = g * (~term).to(r.dtype)
    return boot * c, r + boot * (eq - c * q)


def test_catalog():
    cat = exercises.catalog()
    assert [c[0] for c in cat] == exercises.names() and len(set(exercises.names())) == len(cat)
    assert all(kind in exercises.KINDS for _, _, kind in cat)
    notebooks = {nb for _, nb, _ in cat}
    for n in range(1, 8):  # every algorithm notebook has a kernel or hook exercise
        assert any(nb.startswith(f"0{n}_") and kind in ("kernel", "hook") for _, nb, kind in cat), n
    nb_dir = SOLUTIONS.parent
    assert all((nb_dir / f"{nb}.py").exists() for nb in notebooks), notebooks
    assert sorted(p.stem for p in SOLUTIONS.glob("*.py")) == sorted(exercises.names())


@pytest.mark.parametrize("name", exercises.names())
def test_solution_passes(name):
    assert exercises.check(name, solution(name)) is None
    assert exercises.task(name)


@pytest.mark.parametrize("name", exercises.names())
def test_wrong_answers_fail_with_a_message(name):
    wrong = wrong_answers(name)
    assert len(wrong) >= 2
    for what, fn in wrong:
        with pytest.raises(AssertionError, match=rf"^{name}, .*(expected|got)") as e:
            exercises.check(name, fn)
        assert "elements wrong" in str(e.value) or "shape" in str(e.value), (what, str(e.value))


def test_attempt_tells_a_starter_from_a_wrong_answer(capsys):
    def starter(*args):
        raise NotImplementedError

    assert exercises.attempt("awr_weights", starter) is False
    assert "not attempted yet" in capsys.readouterr().out
    assert exercises.attempt("awr_weights", solution("awr_weights")) is True
    with pytest.raises(AssertionError, match="awr_weights, beta=1.0: at index"):
        exercises.attempt("awr_weights", lambda A, beta, w: A)


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown exercise 'nope'"):
        exercises.check("nope", print)
    with pytest.raises(TypeError, match="fn must be a function"):
        exercises.check("awr_weights", 3)
    with pytest.raises(AssertionError, match="must return the pair"):
        exercises.check("gae_pairs", lambda *a: a[0])


@pytest.mark.parametrize("name,notebook", [(n, nb) for n, nb, _ in exercises.catalog()])
def test_notebook_has_the_starter(name, notebook):
    """Each exercise is set in its notebook: a starter function of its name and the checking cell."""
    text = (SOLUTIONS.parent / f"{notebook}.py").read_text()
    assert f"def {name}(" in text and f'exercises.attempt("{name}", {name})' in text
