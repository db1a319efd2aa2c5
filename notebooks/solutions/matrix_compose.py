"""Solution: matrix_compose (notebook 00). p first, then q: q(p(y)) = A2 (A1 y + b1) + b2."""


def matrix_compose(p, q):
    (A1, b1), (A2, b2) = p, q
    return A2 @ A1, A2 @ b1 + b2


solution = matrix_compose
