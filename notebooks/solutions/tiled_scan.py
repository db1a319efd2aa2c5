"""Solution: tiled_scan (notebook 13). reset_scan with a (ROWS, CHUNK) tile per program: the rows'
indices are a block of ROWS, the offsets a 2-D block rows[:, None] * T + t[None, :], the mask
row-in-bounds & step-in-bounds, one tl.associative_scan along axis 1, and a carry per row (a block
of ROWS values) taken at the chunk's first step by a sum along axis 1."""
import torch
import triton
import triton.language as tl


@triton.jit
def _reset_combine(a1, b1, k1, a2, b2, k2):
    # (a1, b1, k1): the steps after, applied first; a step that resets ignores them
    return tl.where(k2, a2, a2 * a1), tl.where(k2, b2, b2 + a2 * b1), k1 | k2


@triton.jit
def _tiled_returns(R, D, G, gamma, B, T, CHUNK: tl.constexpr, ROWS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)  # this program's rows
    carry = tl.zeros((ROWS,), dtype=tl.float32)  # one carry per row
    n_chunks = tl.cdiv(T, CHUNK)
    for i in range(0, n_chunks):
        c = n_chunks - 1 - i  # the chunks from the last one down
        t = c * CHUNK + tl.arange(0, CHUNK)
        m = (rows < B)[:, None] & (t < T)[None, :]  # (ROWS, CHUNK): rows past B and steps past T masked
        offs = rows[:, None] * T + t[None, :]
        r = tl.load(R + offs, mask=m, other=0.0)
        term = (tl.load(D + offs, mask=m, other=0) != 0) & m
        a = tl.where(m, gamma, 1.0)  # padding: the identity (1, 0, no reset)
        a_s, b_s, k_s = tl.associative_scan((a, r, term), 1, _reset_combine, reverse=True)
        g = tl.where(k_s, b_s, b_s + a_s * carry[:, None])  # an episode end after t: the carry never enters
        tl.store(G + offs, g, mask=m)
        carry = tl.sum(tl.where(t[None, :] == c * CHUNK, g, 0.0), 1)  # each row's G at the chunk's first step


def tiled_scan(rewards, terminated, gamma, chunk, rows):
    B, T = rewards.shape
    out = torch.empty_like(rewards)
    _tiled_returns[(triton.cdiv(B, rows),)](rewards, terminated, out, gamma, B, T, CHUNK=chunk, ROWS=rows)
    return out


solution = tiled_scan
