"""Solution: noise_verdict (notebook 14). The nearest ends decide: the slower call's fastest timing
against the faster call's slowest, more than x apart."""


def noise_verdict(ours, other, x):
    if other[0] > x * ours[1]:
        return 1
    if ours[0] > x * other[1]:
        return -1
    return 0


solution = noise_verdict
