"""The teacher's keys: the float64 references of the exercises whose answer the package does not
otherwise hold, kept here beside the solutions and out of the students' wheel.

``rltriton_lite.exercises`` loads this file when the package runs from the repository (the editable
install), and computes every case's expected values with it, the cases drawn from a seed included.
A student's install (the wheel) holds only these functions' values on the fixed cases, recorded in
``rltriton_lite/_keys.npz``: the students check their work on the fixed cases, and a grade drawn from
a seed needs this file. After a change here or to those cases, record them again:

    python -c "from rltriton_lite import exercises; exercises._record_keys()"

Each function is named after its exercise and takes NumPy arrays (float64 values, bool flags).
"""
import numpy as np


def matrix_compose(A1, b1, A2, b2):
    """(A1, b1) first, then (A2, b2): y -> A2 (A1 y + b1) + b2."""
    return A2 @ A1, A2 @ b1 + b2


def combine_arrays(first, second):
    """Section 4's combine on arrays: ``first`` applied first; a reset in ``second`` selects its own map."""
    (a1, b1, k1), (a2, b2, k2) = first, second
    return np.where(k2, a2, a2 * a1), np.where(k2, b2, b2 + a2 * b1), k1 | k2


def n_step_returns(r, nv, term, gamma, n, stops=True, bootstraps=True, window_end=True, value_step=0,
                   inclusive=None):
    """The loop. The hint's slips: ``stops`` False sums past a termination, ``bootstraps`` False
    adds no gamma^n V(s_{t+n}) after n steps, ``window_end`` False none at the window's end either,
    ``value_step`` 1 reads that bootstrap one step late (next_values[t + n], where the window has it),
    ``inclusive`` "drop" drops it where step t + n terminates (the flags of t..t+n, one too many), "sum"
    sums on to that termination in its place (a scan's sum S_t kept whole there)."""
    G = np.zeros_like(r)
    T = r.shape[-1]
    for row in np.ndindex(r.shape[:-1]):
        for t in range(T):
            g, disc = 0.0, 1.0
            for s in range(t, min(t + n, T)):
                g += disc * r[row + (s,)]
                disc *= gamma
                if term[row + (s,)] and stops:
                    break
                if s == t + n - 1 and bootstraps:
                    if inclusive and s + 1 < T and term[row + (s + 1,)]:
                        g += disc * r[row + (s + 1,)] if inclusive == "sum" else 0.0
                    else:
                        g += disc * nv[row + (min(s + value_step, T - 1),)]
                elif s == T - 1 and s != t + n - 1 and window_end:
                    g += disc * nv[row + (s,)]
            G[row + (t,)] = g
    return G


def q_lambda(r, next_q, next_action, term, gamma, lam, window_end=True, taken=False, greedy_cut=True,
             carry_cut=True):
    """Watkins's Q(lambda), one step at a time: a tie for the max counts as greedy. ``window_end``
    False, ``taken``, ``greedy_cut`` False and ``carry_cut`` False are the hint's slips: the trace not cut
    at the window's last step; the bootstrap from the Q of the action taken, not the max; the trace not cut
    at a non-greedy action (Peng's Q(lambda)); cut there in the bootstrap's weight alone, the carry still
    weighed by lam."""
    G = np.zeros(r.shape)
    B, T = r.shape
    for row in range(B):
        g_next = 0.0
        for t in reversed(range(T)):
            if term[row, t]:
                g = r[row, t]  # no bootstrap, and the trace ends (Q behind a termination is never read)
            else:
                q = next_q[row, t]
                max_q = q.max()
                greedy = q[next_action[row, t]] == max_q
                max_q = q[next_action[row, t]] if taken else max_q
                trace = lam if (greedy or not greedy_cut) and (t < T - 1 or not window_end) else 0.0
                g = r[row, t] + gamma * ((1 - trace) * max_q + (trace if carry_cut else lam) * g_next)
            G[row, t] = g_next = g
    return G


_TRACES = {  # c_{t+1} from (lam, next_log_ratio, t, T): Retrace's, and the hint's wrong ones
    "retrace": lambda lam, lr, t, T: lam * np.minimum(1.0, np.exp(lr[..., t])) * (t < T - 1),
    "uncut": lambda lam, lr, t, T: lam * np.exp(lr[..., t]) * (t < T - 1),
    "no lambda": lambda lam, lr, t, T: np.minimum(1.0, np.exp(lr[..., t])) * (t < T - 1),
    "next step's ratio": lambda lam, lr, t, T: lam * np.minimum(1.0, np.exp(lr[..., min(t + 1, T - 1)])) * (t < T - 1),
    "previous step's ratio": lambda lam, lr, t, T: (  # offs - 1, masked to 0 (a ratio of 1) at t = 0
        lam * np.minimum(1.0, np.exp(lr[..., t - 1] if t else np.zeros(lr.shape[:-1]))) * (t < T - 1)),
    "no cut at the end": lambda lam, lr, t, T: lam * np.minimum(1.0, np.exp(lr[..., t])),
    "lambda alone": lambda lam, lr, t, T: lam * np.ones(lr.shape[:-1]) * (t < T - 1),
}


def retrace(r, next_expected_q, next_q, next_log_ratio, term, gamma, lam, trace="retrace", q_sign=-1.0,
            carry_gamma=True, carry_trace=None):
    """The loop; ``trace`` names the trace c_{t+1} (``_TRACES``: Retrace's, or a slip of the hint's);
    ``q_sign`` +1 is the hint's sign slip, c (G_{t+1} + Q(s_{t+1}, u_{t+1})); ``carry_gamma`` False its
    a_t without gamma (c G_{t+1} undiscounted); ``carry_trace`` another trace on G_{t+1} alone (a_t = gamma lam,
    the ratio left out of the multiplier only)."""
    c_of, carry_of = _TRACES[trace], _TRACES[carry_trace or trace]
    G = np.zeros_like(r)
    carry = np.zeros(r.shape[:-1])
    T = r.shape[-1]
    for t in reversed(range(T)):
        c, c_carry = c_of(lam, next_log_ratio, t, T), carry_of(lam, next_log_ratio, t, T)
        g = 1.0 if carry_gamma else 1.0 / gamma  # (gamma * bracket below: the carry's term then undiscounted)
        bracket = np.where(term[..., t], 0.0, next_expected_q[..., t] + c_carry * g * carry + c * q_sign * next_q[..., t])
        G[..., t] = carry = r[..., t] + gamma * bracket
    return G


def discounted_max(r, done, gamma):
    """h_t = max(r_t, gamma h_{t+1}) backwards in time; h_t = r_t at an episode end and at the last step."""
    m = np.empty_like(r)
    after = np.full(r.shape[:-1], -np.inf)  # nothing after the window: max's identity
    for t in reversed(range(r.shape[-1])):
        after = np.where(done[..., t], r[..., t], np.maximum(r[..., t], gamma * after))
        m[..., t] = after
    return m


def warp_sectors(addresses, nbytes, sector=32):
    """The distinct sectors that the bytes address ... address + nbytes - 1 of every lane fall in."""
    first, last = addresses // sector, (addresses + nbytes - 1) // sector
    return len({int(s) for f, l in zip(first, last) for s in range(f, l + 1)})
