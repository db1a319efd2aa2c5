import numpy as np


def solution(rewards, values, terminated, next_first_value, gamma, lam):
    rows, n = rewards.shape
    v_next = np.concatenate([values[:, 1:], next_first_value[:, None]], axis=1)  # the exchange's value at the end
    delta = rewards + np.where(terminated, 0.0, gamma * v_next) - values  # select: a NaN after an end stays out
    B = np.zeros(rows)
    for t in reversed(range(n)):  # the carry taken as 0
        B = np.where(terminated[:, t], delta[:, t], delta[:, t] + gamma * lam * B)
    return np.full(rows, (gamma * lam) ** n), B, terminated.any(axis=1)
