"""``credit_assignment``: the seven algorithms behind one name-dispatched entry point."""
from __future__ import annotations

from .crr import crr_loss
from .ppo import ppo_clip_loss
from .returns import discounted_returns, gae, td_lambda
from .sac import sac_targets
from .vtrace import vtrace


class _Default(float):
    """A default value of the unified entry point, told apart from a value the caller passed."""

    __slots__ = ()


ALGORITHMS = ("discounted_return", "gae", "td_lambda", "vtrace", "ppo", "sac", "crr")


def credit_assignment(algorithm="gae", *args, gamma=_Default(0.99), lambda_=_Default(0.95),
                      epsilon=_Default(0.2), alpha=_Default(0.2), **kwargs):
    """Run one of the seven algorithms by name, with the original description's defaults.

    ``algorithm`` is one of ``"discounted_return"`` (:func:`discounted_returns`), ``"gae"``,
    ``"td_lambda"``, ``"vtrace"``, ``"ppo"`` (:func:`ppo_clip_loss`), ``"sac"``
    (:func:`sac_targets`) or ``"crr"`` (:func:`crr_loss`); ``*args`` and ``**kwargs`` go to
    that function. Each shared parameter goes to the algorithms that take it: ``gamma`` to the
    five return estimators, ``epsilon`` to PPO, ``alpha`` to SAC, and ``lambda_`` (0.95) to GAE
    and TD(λ). V-trace (λ = 1, IMPALA) and SAC (λ = 0, the one-step soft target) keep their own
    λ unless ``lambda_`` is passed explicitly.
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; valid: {', '.join(repr(a) for a in ALGORITHMS)}")
    plain = lambda x: float(x) if isinstance(x, _Default) else x  # noqa: E731
    takes = {"gamma": ("discounted_return", "gae", "td_lambda", "vtrace", "sac"),
             "lambda_": ("gae", "td_lambda", "vtrace", "sac"), "epsilon": ("ppo",), "alpha": ("sac",)}
    for name, value in dict(gamma=gamma, lambda_=lambda_, epsilon=epsilon, alpha=alpha).items():
        if not isinstance(value, _Default) and algorithm not in takes[name]:
            raise TypeError(f"{name} does not apply to {algorithm!r} (it applies to {', '.join(takes[name])})")
    if algorithm in ("discounted_return", "gae", "td_lambda", "vtrace", "sac"):
        kwargs["gamma"] = plain(gamma)
    if algorithm in ("gae", "td_lambda") or not isinstance(lambda_, _Default):
        kwargs["lambda_"] = plain(lambda_)
    fn = {
        "discounted_return": discounted_returns,
        "gae": gae,
        "td_lambda": td_lambda,
        "vtrace": vtrace,
        "ppo": ppo_clip_loss,
        "sac": sac_targets,
        "crr": crr_loss,
    }[algorithm]
    if algorithm == "ppo":
        kwargs["epsilon"] = plain(epsilon)
    if algorithm == "sac":
        kwargs["alpha"] = plain(alpha)
    return fn(*args, **kwargs)
