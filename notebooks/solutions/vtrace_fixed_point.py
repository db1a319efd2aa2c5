"""Solution: vtrace_fixed_point (notebook 04b). Section 1's argument, state by state: the mean
correction weighs each action by mu(u|s) min(rho_bar, pi/mu) = min(rho_bar mu, pi); normalised in
each state that is the policy pi_rho_bar, and V is its value, the solution of its Bellman equation."""
import numpy as np


def vtrace_fixed_point(P_trans, R, pi, mu, gamma, rho_bar):
    w = np.minimum(rho_bar * mu, pi)  # mu(u|s) * rho(s, u): each action u's weight in the correction
    nu = w / w.sum(axis=1, keepdims=True)  # pi_rho_bar, normalised state by state
    P_nu = np.einsum("sa,sat->st", nu, P_trans)  # its transition matrix
    r_nu = (nu * R).sum(axis=1)  # its mean reward
    return np.linalg.solve(np.eye(len(R)) - gamma * P_nu, r_nu)  # V = r_nu + gamma P_nu V


solution = vtrace_fixed_point
