"""Solution: vtrace_pg (notebook 04). The epilogue reads vs_{t+1} from the scan (y_in) inside the
window and bootstraps from next_values at its last step; a terminal step bootstraps nothing."""
import triton
import triton.language as tl


@triton.jit
def vtrace_pg(X, P, offs, t, m, T, y, y_in):
    gamma, rho_bar = P[0], P[1]
    rho = tl.exp(tl.load(X[0] + offs, mask=m, other=0.0))
    r = tl.load(X[1] + offs, mask=m, other=0.0)
    v = tl.load(X[2] + offs, mask=m, other=0.0)
    v_next = tl.where(t == T - 1, tl.load(X[3] + offs, mask=m, other=0.0), y_in)
    term = tl.load(X[4] + offs, mask=m, other=0) != 0
    # a select: at a termination y_in is still vs_{t+1} (the next episode's), never read into the sum
    return tl.minimum(rho, rho_bar) * (r + tl.where(term, 0.0, gamma * v_next) - v)


solution = vtrace_pg
