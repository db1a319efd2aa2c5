"""Solution: dual_clip (notebook 05)."""
import triton
import triton.language as tl


@triton.jit
def dual_clip(X, P, offs, m):
    epsilon, c = P[0], P[1]
    ratio = tl.load(X[0] + offs, mask=m, other=1.0)
    adv = tl.load(X[1] + offs, mask=m, other=0.0)
    clipped = tl.minimum(tl.maximum(ratio, 1.0 - epsilon), 1.0 + epsilon)
    obj = tl.minimum(ratio * adv, clipped * adv)
    obj = tl.where(adv < 0, tl.maximum(obj, c * adv), obj)
    return -obj


solution = dual_clip
