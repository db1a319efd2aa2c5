"""Solution: segment_grad_carries (notebook 11). From the first rank on: nothing enters rank 0, and
what rank r passes on is its own sigma plus A times what entered it, or its sigma alone where it
resets (np.where), so a NaN or inf in A at a reset stays out."""
import numpy as np


def segment_grad_carries(A, sigma, reset):
    x = np.zeros_like(sigma)  # x[:, 0] = 0: nothing enters rank 0
    for r in range(sigma.shape[-1] - 1):  # the last rank passes nothing on
        x[:, r + 1] = np.where(reset[:, r], sigma[:, r], sigma[:, r] + A[:, r] * x[:, r])
    return x


solution = segment_grad_carries
