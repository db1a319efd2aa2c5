"""Solution: q_lambda (notebook 03). Watkins's Q(lambda): a loop over the n_actions actions of next_q
(a (B, T, n_actions) tensor: step offs's action u at offs * n_actions + u) gives max_u Q(s_{t+1}, u) and the Q of the
action taken; that action is greedy where its Q equals the max (a tie counts as greedy). Then
TD(lambda) on the max: every cut of the trace (a termination, a non-greedy next action, the window's
last step) is a reset, where G_t bootstraps fully from max_q; a termination is selected away
(next_q may be NaN there)."""
import triton
import triton.language as tl


@triton.jit
def q_lambda(X, P, offs, t, m, T):
    gamma, lam, n_actions = P[0], P[1], P[2]
    r = tl.load(X[0] + offs, mask=m, other=0.0)
    next_action = tl.load(X[2] + offs, mask=m, other=0)
    term = tl.load(X[3] + offs, mask=m, other=0) != 0
    max_q = tl.load(X[1] + offs * n_actions, mask=m, other=0.0)  # action 0
    q_taken = max_q
    for k in range(1, n_actions):  # k: an action
        q_k = tl.load(X[1] + offs * n_actions + k, mask=m, other=0.0)
        max_q = tl.maximum(max_q, q_k)
        q_taken = tl.where(next_action == k, q_k, q_taken)
    greedy = q_taken == max_q  # a tie for the max is greedy
    cut = ~greedy | (t == T - 1)  # the trace stops here: G_t bootstraps fully from max_q
    lam_t = tl.where(cut, 0.0, lam)
    b_t = r + tl.where(term, 0.0, gamma * (1.0 - lam_t) * max_q)
    return gamma * lam, b_t, term | cut


solution = q_lambda
