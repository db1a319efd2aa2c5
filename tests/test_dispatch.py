"""credit_assignment: the seven algorithms by name, with the unified defaults."""
from __future__ import annotations

import pytest
import torch

import rltriton_lite as rl

from conftest import DEVICE


def _data(B=3, T=20):
    g = torch.Generator().manual_seed(0)
    x = lambda: torch.randn(B, T, generator=g).to(DEVICE)  # noqa: E731
    term = (torch.rand(B, T, generator=g) < 0.1).to(DEVICE)
    return x, term


def test_every_name_matches_its_function(backend):
    x, term = _data()
    r, v, nv, lr, lp, olp, adv, q, q2, nlp = (x() for _ in range(10))
    cases = {
        "discounted_return": ((r,), dict(terminated=term), lambda: rl.discounted_returns(r, gamma=0.99, terminated=term, backend=backend)),
        "gae": ((r, v), dict(terminated=term), lambda: rl.gae(r, v, gamma=0.99, lambda_=0.95, terminated=term, backend=backend)),
        "td_lambda": ((r, nv), dict(terminated=term), lambda: rl.td_lambda(r, nv, gamma=0.99, lambda_=0.95, terminated=term, backend=backend)),
        # V-trace and SAC keep their own lambda (1.0 and 0.0) unless it is passed
        "vtrace": ((lr, r, v), dict(terminated=term), lambda: rl.vtrace(lr, r, v, gamma=0.99, terminated=term, backend=backend)),
        "sac": ((r, (q, q2), nlp), dict(terminated=term), lambda: rl.sac_targets(r, (q, q2), nlp, gamma=0.99, alpha=0.2, terminated=term, backend=backend)),
        "ppo": ((lp, olp, adv), dict(), lambda: rl.ppo_clip_loss(lp, olp, adv, epsilon=0.2, backend=backend)),
        "crr": ((lp, q, v), dict(), lambda: rl.crr_loss(lp, q, v, backend=backend)),
    }
    assert set(cases) == set(rl._dispatch.ALGORITHMS)
    for name, (args, kw, direct) in cases.items():
        got, want = rl.credit_assignment(name, *args, backend=backend, **kw), direct()
        for a, b in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_explicit_parameters_are_passed(backend):
    x, term = _data()
    r, v, lr = x(), x(), x()
    got = rl.credit_assignment("gae", r, v, gamma=0.9, lambda_=0.5, backend=backend)
    torch.testing.assert_close(got.advantages, rl.gae(r, v, gamma=0.9, lambda_=0.5, backend=backend).advantages)
    got = rl.credit_assignment("vtrace", lr, r, v, lambda_=0.7, backend=backend)
    torch.testing.assert_close(got.vs, rl.vtrace(lr, r, v, lambda_=0.7, backend=backend).vs)
    got = rl.credit_assignment("ppo", r, v, lr, epsilon=(0.1, 0.3), backend=backend)
    torch.testing.assert_close(got.loss, rl.ppo_clip_loss(r, v, lr, epsilon=(0.1, 0.3), backend=backend).loss)


def test_default_is_gae():
    """algorithm defaults to "gae": called with keyword data only, it runs GAE."""
    x, _ = _data()
    r, v = x(), x()
    torch.testing.assert_close(rl.credit_assignment(rewards=r, values=v).advantages, rl.gae(r, v).advantages)


def test_unknown_name_lists_the_valid_ones():
    with pytest.raises(ValueError, match="'gae'.*'crr'"):
        rl.credit_assignment("a2c", torch.zeros(2, 3))


def test_parameter_that_does_not_apply_is_refused():
    x, _ = _data()
    with pytest.raises(TypeError, match="epsilon"):
        rl.credit_assignment("gae", x(), x(), epsilon=0.1)
    with pytest.raises(TypeError, match="alpha"):
        rl.credit_assignment("ppo", x(), x(), x(), alpha=0.1)
    with pytest.raises(TypeError, match="lambda_"):
        rl.credit_assignment("discounted_return", x(), lambda_=0.5)
