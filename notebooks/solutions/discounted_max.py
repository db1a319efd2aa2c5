"""Solution: discounted_max (notebook 00d). A step is the map y -> max(c, g y) with g = gamma >= 0.
Two of them compose into one of the same form: (g1, c1) first, then (g2, c2), is
y -> max(c2, g2 max(c1, g1 y)) = max(max(c2, g2 c1), g2 g1 y), so (g2 g1, max(c2, g2 c1)).
The identity is (1, -inf); an episode end selects, as in reset_scan. A run's g, a power of gamma,
can underflow to 0 (a small gamma over a long chunk), and 0 * (-inf) is NaN: where c1, or the
carry, is -inf, the composed c is selected (c2, or the scanned c) and the max's result on that NaN
is never used."""
import torch
import triton
import triton.language as tl


@triton.jit
def _max_combine(g1, c1, k1, g2, c2, k2):
    # (g1, c1, k1): the steps after, applied first; a step that resets ignores them
    c = tl.where(c1 == float("-inf"), c2, tl.maximum(c2, g2 * c1))  # max(c2, g2 * -inf) is c2, without 0 * -inf
    return tl.where(k2, g2, g2 * g1), tl.where(k2, c2, c), k1 | k2


@triton.jit
def _discounted_max(R, D, M, gamma, T, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    carry = float("-inf")  # nothing after the window: the identity
    n_chunks = tl.cdiv(T, CHUNK)
    for i in range(0, n_chunks):
        c = n_chunks - 1 - i  # the chunks from the last one down
        t = c * CHUNK + tl.arange(0, CHUNK)
        m = t < T
        r = tl.load(R + row * T + t, mask=m, other=float("-inf"))  # padding: (1, -inf, no reset)
        term = (tl.load(D + row * T + t, mask=m, other=0) != 0) & m
        g = tl.where(m, gamma, 1.0)
        g_s, c_s, k_s = tl.associative_scan((g, r, term), 0, _max_combine, reverse=True)
        # an episode end after t, or the -inf carry after the row (max(c_s, g_s * -inf) is c_s): the carry never enters
        out = tl.where(k_s, c_s, tl.where(carry == float("-inf"), c_s, tl.maximum(c_s, g_s * carry)))
        tl.store(M + row * T + t, out, mask=m)
        carry = tl.max(tl.where(t == c * CHUNK, out, float("-inf")), 0)  # h at the chunk's first step


def discounted_max(rewards, terminated, gamma, chunk):
    out = torch.empty_like(rewards)
    B, T = rewards.shape
    _discounted_max[(B,)](rewards, terminated, out, gamma, T, CHUNK=chunk)
    return out


solution = discounted_max
