"""Solution: vtrace_floor_bytes (notebook 08). Per step: four inputs and two outputs of elem_bytes
each, and one byte of flag; every one moved exactly once."""


def vtrace_floor_bytes(B, T, elem_bytes):
    return B * T * (6 * elem_bytes + 1)


solution = vtrace_floor_bytes
