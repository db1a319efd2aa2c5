"""Solution: ppo_clip_grad (notebook 05)."""
import triton
import triton.language as tl


@triton.jit
def ppo_clip_grad(X, P, offs, m):
    epsilon = P[0]
    ratio = tl.load(X[0] + offs, mask=m, other=1.0)
    adv = tl.load(X[1] + offs, mask=m, other=0.0)
    clipped = tl.minimum(tl.maximum(ratio, 1.0 - epsilon), 1.0 + epsilon)
    # zero only where the clipped term is strictly the smaller; at a tie, the unclipped term's gradient
    return tl.where(clipped * adv < ratio * adv, 0.0, -adv * ratio)


solution = ppo_clip_grad
