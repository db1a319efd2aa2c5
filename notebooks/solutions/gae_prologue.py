"""Solution: gae_prologue (notebook 02). GAE's prologue in the package's slots: the step's
coefficients and flags from episode.step, delta_t with no bootstrap at a termination, a reset at
every episode end, and V(s_t) kept for the epilogue's returns."""
import triton
import triton.language as tl

from rltriton_lite.episode import REWARDS, step, values_now_and_next
from rltriton_lite.tile import load


@triton.jit
def gae_prologue(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    gamma, lam, term, done, valid = step(X, SX, P, row, t, m, T, ACC)
    r = load(X[REWARDS], SX[REWARDS], row, t, valid, 0.0, ACC)
    v, v_next = values_now_and_next(X, SX, row, t, m, T, ACC)
    delta = r + tl.where(term, 0.0, gamma * v_next) - v
    return gamma * lam, delta, done, valid, (v,)


solution = gae_prologue
