"""Solution: dual_clip (notebook 05)."""
import torch


def dual_clip(ratio, advantages, epsilon, c):
    obj = torch.minimum(ratio * advantages, ratio.clamp(1 - epsilon, 1 + epsilon) * advantages)
    obj = torch.where(advantages < 0, torch.maximum(obj, c * advantages), obj)
    return -obj


solution = dual_clip
