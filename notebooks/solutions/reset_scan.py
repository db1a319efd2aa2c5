"""Solution: reset_scan (notebook 00c). chunked_scan with (a, b, reset) triples: an episode end is
a select, never a multiplication by 0, inside the chunk and where the carry enters."""
import torch
import triton
import triton.language as tl


@triton.jit
def _reset_combine(a1, b1, k1, a2, b2, k2):
    # (a1, b1, k1): the steps after, applied first; a step that resets ignores them
    return tl.where(k2, a2, a2 * a1), tl.where(k2, b2, b2 + a2 * b1), k1 | k2


@triton.jit
def _reset_scan(R, D, G, gamma, T, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    carry = 0.0
    n_chunks = tl.cdiv(T, CHUNK)
    for i in range(0, n_chunks):
        c = n_chunks - 1 - i  # the chunks from the last one down
        t = c * CHUNK + tl.arange(0, CHUNK)
        m = t < T
        r = tl.load(R + row * T + t, mask=m, other=0.0)
        term = (tl.load(D + row * T + t, mask=m, other=0) != 0) & m  # padding: (1, 0, no reset)
        a = tl.where(m, gamma, 1.0)
        a_s, b_s, k_s = tl.associative_scan((a, r, term), 0, _reset_combine, reverse=True)
        g = tl.where(k_s, b_s, b_s + a_s * carry)  # an episode end after t: the carry never enters
        tl.store(G + row * T + t, g, mask=m)
        carry = tl.sum(tl.where(t == c * CHUNK, g, 0.0), 0)  # G at the chunk's first step


def reset_scan(rewards, terminated, gamma, chunk):
    rewards, terminated = rewards.contiguous(), terminated.contiguous()
    out = torch.empty_like(rewards)
    n_rows, T = rewards.shape
    _reset_scan[(n_rows,)](rewards, terminated, out, gamma, T, CHUNK=chunk)
    return out


solution = reset_scan
