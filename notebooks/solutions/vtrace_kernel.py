"""Solution: vtrace_kernel (notebook 04c). reset_scan over V-trace's step for vs, a reset at a
termination and at the window's last step (vs_{T-1} = V + rho delta: the bootstrap cancels), then
a second kernel for the policy-gradient advantage, which reads vs one step on from memory."""
import torch
import triton
import triton.language as tl


@triton.jit
def _reset_combine(a1, b1, k1, a2, b2, k2):
    # (a1, b1, k1): the steps after, applied first; a step that resets ignores them
    return tl.where(k2, a2, a2 * a1), tl.where(k2, b2, b2 + a2 * b1), k1 | k2


@triton.jit
def _vs_kernel(LR, R, V, NV, D, VS, gamma, rho_bar, c_bar, T, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    carry = 0.0
    n_chunks = tl.cdiv(T, CHUNK)
    for i in range(0, n_chunks):
        ci = n_chunks - 1 - i  # the chunk's index (c_t is the trace), the chunks from the last one down
        t = ci * CHUNK + tl.arange(0, CHUNK)
        m = t < T
        at = row * T + t
        ratio = tl.exp(tl.load(LR + at, mask=m, other=0.0))
        r = tl.load(R + at, mask=m, other=0.0)
        v = tl.load(V + at, mask=m, other=0.0)
        term = (tl.load(D + at, mask=m, other=0) != 0) & m
        v_next = tl.where(term, 0.0, tl.load(NV + at, mask=m, other=0.0))  # NaN behind a termination: selected
        rho = tl.minimum(ratio, rho_bar)
        cs = tl.minimum(ratio, c_bar)  # the trace c_t
        delta = r + gamma * v_next - v
        reset = term | (t == T - 1)  # the window's end too: vs_{T-1} = V + rho delta
        a = tl.where(m, gamma * cs, 1.0)
        b = tl.where(m, v + rho * delta - tl.where(reset, 0.0, gamma * cs * v_next), 0.0)
        a_s, b_s, k_s = tl.associative_scan((a, b, reset), 0, _reset_combine, reverse=True)
        vs = tl.where(k_s, b_s, b_s + a_s * carry)
        tl.store(VS + at, vs, mask=m)
        carry = tl.sum(tl.where(t == ci * CHUNK, vs, 0.0), 0)  # vs at the chunk's first step


@triton.jit
def _pg_kernel(LR, R, V, NV, D, VS, PG, gamma, rho_bar, T, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    t = i % T
    term = tl.load(D + i, mask=m, other=0) != 0
    last = t == T - 1
    vs_next = tl.load(VS + i + 1, mask=m & ~last, other=0.0)  # vs_{t+1}, this row's
    boot = tl.load(NV + i, mask=m & last & ~term, other=0.0)
    v_next = tl.where(term, 0.0, tl.where(last, boot, vs_next))
    rho = tl.minimum(tl.exp(tl.load(LR + i, mask=m, other=0.0)), rho_bar)
    pg = rho * (tl.load(R + i, mask=m, other=0.0) + gamma * v_next - tl.load(V + i, mask=m, other=0.0))
    tl.store(PG + i, pg, mask=m)


def vtrace_kernel(log_rhos, rewards, values, next_values, terminated, gamma, rho_bar, c_bar, chunk):
    x = [z.contiguous() for z in (log_rhos, rewards, values, next_values, terminated)]
    B, T = rewards.shape
    vs, pg = torch.empty_like(x[1]), torch.empty_like(x[1])
    _vs_kernel[(B,)](*x, vs, gamma, rho_bar, c_bar, T, CHUNK=chunk)
    block = 1024
    _pg_kernel[(triton.cdiv(B * T, block),)](*x, vs, pg, gamma, rho_bar, T, B * T, BLOCK=block)
    return vs, pg


solution = vtrace_kernel
