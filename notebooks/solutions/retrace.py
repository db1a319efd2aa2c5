"""Solution: retrace (notebook 03). a_t = gamma (1 - term_t) c_{t+1}, b_t = r_t + gamma (1 - term_t)
(E_pi Q_{t+1} - c_{t+1} Q_{t+1}), with c = 0 at the window's last step; each (1 - term_t) is a
select (tl.where), never a multiplication by 0; a termination and the window's last step reset."""
import triton
import triton.language as tl


@triton.jit
def retrace(X, P, offs, t, m, T):
    gamma, lam = P[0], P[1]
    r = tl.load(X[0] + offs, mask=m, other=0.0)
    expected_q = tl.load(X[1] + offs, mask=m, other=0.0)
    q = tl.load(X[2] + offs, mask=m, other=0.0)
    log_ratio = tl.load(X[3] + offs, mask=m, other=0.0)
    term = tl.load(X[4] + offs, mask=m, other=0) != 0
    more = t < T - 1  # c = 0 at the window's last step: the trace stops there
    c = tl.where(more, lam * tl.minimum(tl.exp(log_ratio), 1.0), 0.0)
    # selects, not a multiplication by (1 - term): a NaN behind a termination is never read into a sum
    b = r + tl.where(term, 0.0, gamma * (expected_q - tl.where(more, c * q, 0.0)))
    return gamma * c, b, term | ~more


solution = retrace
