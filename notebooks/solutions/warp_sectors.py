"""Solution: warp_sectors (notebook 13). Lane i reads the bytes addresses[i] to addresses[i] + nbytes - 1:
the sector of its first byte, the sector of its last byte, and every sector between them (one, or
two when the load crosses a boundary). A set counts each sector once, however many lanes read it."""
import numpy as np


def warp_sectors(addresses, nbytes):
    first = np.asarray(addresses) // 32
    last = (np.asarray(addresses) + nbytes - 1) // 32
    return len({int(s) for f, l in zip(first, last) for s in range(f, l + 1)})


solution = warp_sectors
