"""Solution: chunked_reset_scan (notebook 00). The kernel's plan in NumPy: chunks from the last in time;
inside one, each step's map composed from the chunk's end with the reset combine; then a select on
the carry; the next carry is y at the chunk's first step."""
import numpy as np


def chunked_reset_scan(a, b, reset, chunk):
    T = len(a)
    y, carry_in, carry = np.zeros(T), np.zeros(T), 0.0
    for start in reversed(range(0, T, chunk)):  # the chunks, from the last in time
        end = min(start + chunk, T)
        a_s, b_s, k_s = 1.0, 0.0, False  # the identity: the map of no steps
        for t in reversed(range(start, end)):  # step t applied after the run of steps t + 1 .. end - 1
            if reset[t]:
                a_s, b_s, k_s = a[t], b[t], True  # a reset drops the run: nothing after step t is read
            else:
                a_s, b_s = a[t] * a_s, b[t] + a[t] * b_s
            y[t] = b_s if k_s else b_s + a_s * carry  # a select: a NaN carry never enters where k_s is set
            carry_in[t] = carry
        carry = y[start]  # the value just after the last step of the chunk before, in time
    return y, carry_in


solution = chunked_reset_scan
