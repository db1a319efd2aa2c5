"""Solution: awac_weights (notebook 07). One program, three passes over the advantages in blocks:
the max of A / beta, the sum of exp(A / beta - max), then N exp(A / beta - max) / sum. Padding is
loaded as -inf: it never raises the max, and exp gives it 0 in the sum."""
import torch
import triton
import triton.language as tl


@triton.jit
def _awac_kernel(A, W, beta, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    top = float("-inf")
    for start in range(0, n, BLOCK):
        x = tl.load(A + start + offs, mask=start + offs < n, other=float("-inf")) / beta
        top = tl.maximum(top, tl.max(x, 0))
    total = 0.0
    for start in range(0, n, BLOCK):
        x = tl.load(A + start + offs, mask=start + offs < n, other=float("-inf")) / beta
        total += tl.sum(tl.exp(x - top), 0)
    for start in range(0, n, BLOCK):
        x = tl.load(A + start + offs, mask=start + offs < n, other=float("-inf")) / beta
        tl.store(W + start + offs, n * tl.exp(x - top) / total, mask=start + offs < n)


def awac_weights(advantages, beta):
    w = torch.empty_like(advantages)
    _awac_kernel[(1,)](advantages, w, beta, advantages.numel(), BLOCK=1024)
    return w


solution = awac_weights
