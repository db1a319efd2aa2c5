"""Solution: q_lambda (notebook 03). TD(lambda) with a per-step lambda: lam where the next action
is greedy, 0 where it is not and at the window's last step."""
import triton
import triton.language as tl


@triton.jit
def q_lambda(X, offs, t, T, m, P):
    gamma, lam = P[0], P[1]
    r = tl.load(X[0] + offs, mask=m, other=0.0)
    max_q = tl.load(X[1] + offs, mask=m, other=0.0)
    greedy = tl.load(X[2] + offs, mask=m, other=0) != 0
    term = tl.load(X[3] + offs, mask=m, other=0) != 0
    lam_t = tl.where(greedy & (t < T - 1), lam, 0.0)
    boot = tl.where(term, 0.0, gamma)
    return boot * lam_t, r + boot * (1.0 - lam_t) * max_q


solution = q_lambda
