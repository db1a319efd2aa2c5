"""Solution: matrix_compose (notebook 00). p(q(y)) = A1 (A2 y + b2) + b1."""


def matrix_compose(p, q):
    (A1, b1), (A2, b2) = p, q
    return A1 @ A2, b1 + A1 @ b2


solution = matrix_compose
