"""Solution: combine_arrays (notebook 00, section 4). The combine of section 4 on arrays: np.where
selects element by element, as tl.where does in a kernel, so a NaN behind a reset is never read."""
import numpy as np


def combine_arrays(first, second):
    (a1, b1, k1), (a2, b2, k2) = first, second  # first: the map applied first
    return np.where(k2, a2, a2 * a1), np.where(k2, b2, b2 + a2 * b1), k1 | k2


solution = combine_arrays
