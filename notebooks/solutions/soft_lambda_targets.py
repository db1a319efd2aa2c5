"""Solution: soft_lambda_targets (notebook 06). The continuation G_{t+1} - alpha log pi_{t+1} splits
into a_t G_{t+1} and a term of b_t that reads log_probs one step ahead (offs + 1)."""
import triton
import triton.language as tl


@triton.jit
def soft_lambda_targets(X, P, offs, t, m, T):
    gamma, alpha, lam = P[0], P[1], P[2]
    r = tl.load(X[0] + offs, mask=m, other=0.0)
    q_min = tl.minimum(tl.load(X[1] + offs, mask=m, other=0.0), tl.load(X[2] + offs, mask=m, other=0.0))
    v_soft = q_min - alpha * tl.load(X[3] + offs, mask=m, other=0.0)
    has_next = m & (t + 1 < T)
    log_pi_next = tl.load(X[4] + offs + 1, mask=has_next, other=0.0)
    term = tl.load(X[5] + offs, mask=m, other=0) != 0
    going_on = has_next & ~term  # the lambda-trace runs on to t + 1 (the window's last step bootstraps fully)
    cont = tl.where(going_on, lam, 0.0)
    soft_next = (1.0 - cont) * v_soft - tl.where(going_on, cont * alpha * log_pi_next, 0.0)
    # a select, not a multiplication by (1 - term): a NaN behind a termination is never read into a sum
    return gamma * lam, r + tl.where(term, 0.0, gamma * soft_next), ~going_on


solution = soft_lambda_targets
