"""Solution: gae_kernel (notebook 00c). reset_scan's chunk loop with GAE's prologue and epilogue as
functions: the prologue turns a chunk of inputs into (a, b, reset) triples, the epilogue stores."""
import torch
import triton
import triton.language as tl


@triton.jit
def _reset_combine(a1, b1, k1, a2, b2, k2):
    # (a1, b1, k1): the steps after, applied first; a step that resets ignores them
    return tl.where(k2, a2, a2 * a1), tl.where(k2, b2, b2 + a2 * b1), k1 | k2


@triton.jit
def _gae_prologue(R, V, NV, D, offs, m, gamma, lam):
    r = tl.load(R + offs, mask=m, other=0.0)
    v = tl.load(V + offs, mask=m, other=0.0)
    nv = tl.load(NV + offs, mask=m, other=0.0)
    term = (tl.load(D + offs, mask=m, other=0) != 0) & m
    delta = r + tl.where(term, 0.0, gamma * nv) - v  # a select: a NaN behind a terminal state is never read
    return tl.where(m, gamma * lam, 1.0), tl.where(m, delta, 0.0), term


@triton.jit
def _gae_epilogue(OUT, offs, m, y):
    tl.store(OUT + offs, y, mask=m)


@triton.jit
def _gae(R, V, NV, D, OUT, gamma, lam, T, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    carry = 0.0
    n_chunks = tl.cdiv(T, CHUNK)
    for i in range(0, n_chunks):
        c = n_chunks - 1 - i  # the chunks from the last one down
        t = c * CHUNK + tl.arange(0, CHUNK)
        m = t < T
        a, b, reset = _gae_prologue(R, V, NV, D, row * T + t, m, gamma, lam)
        a_s, b_s, k_s = tl.associative_scan((a, b, reset), 0, _reset_combine, reverse=True)
        y = tl.where(k_s, b_s, b_s + a_s * carry)
        _gae_epilogue(OUT, row * T + t, m, y)
        carry = tl.sum(tl.where(t == c * CHUNK, y, 0.0), 0)


def gae_kernel(rewards, values, next_values, terminated, gamma, lam, chunk):
    x = [t.contiguous() for t in (rewards, values, next_values, terminated)]
    out = torch.empty_like(x[0])
    n_rows, T = x[0].shape
    _gae[(n_rows,)](*x, out, gamma, lam, T, CHUNK=chunk)
    return out


solution = gae_kernel
