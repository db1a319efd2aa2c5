"""Solution: vtrace_pg (notebook 04). The epilogue reads vs_{t+1} from the scan (y_in) inside the
window and bootstraps from next_values at its last step; a terminal step bootstraps nothing."""
import triton
import triton.language as tl


@triton.jit
def vtrace_pg(X, offs, t, T, m, P, y, y_in):
    gamma, rho_bar = P[0], P[1]
    rho = tl.exp(tl.load(X[0] + offs, mask=m, other=0.0))
    r = tl.load(X[1] + offs, mask=m, other=0.0)
    v = tl.load(X[2] + offs, mask=m, other=0.0)
    v_next = tl.where(t == T - 1, tl.load(X[3] + offs, mask=m, other=0.0), y_in)
    g = tl.where(tl.load(X[4] + offs, mask=m, other=0) != 0, 0.0, gamma)
    return tl.minimum(rho, rho_bar) * (r + g * v_next - v)


solution = vtrace_pg
