# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 04c — V-trace in your own kernels (the capstone)
#
# > **In short**
# >
# > * The first kernel scans `vs` row by row, in chunks, carrying one number from chunk to chunk.
# > * The second kernel computes the policy-gradient advantage, which reads the next step's `vs`.
# > * A short demo shows why the unused slots past a row's end must hold a step that changes nothing.
# > * There is one checked exercise, `vtrace_kernel`; its hints hold the key lines, part by part.
# >   One open question asks whether `pg` could join the first kernel.
#
# * **Time:** 1–2 h, one checked exercise and one short open question.
# * **Needs:** [notebook 00c](00c_episodes_and_hooks.ipynb) (your `reset_scan`) and
#   [notebook 04](04_vtrace.ipynb) (its sections 1 and 2, and your `vtrace_pg`). No GPU.
#
# > **Terms used here** (each links to the glossary)
# >
# > * [**chunk**](GLOSSARY.md#chunk): a stretch of `chunk` steps of a row that one program scans at once.
# > * [**carry**](GLOSSARY.md#carry): the value that enters a chunk from the chunk after it in time.
# > * [**identity**](GLOSSARY.md#identity): the triple $(1, 0, \text{false})$ that changes nothing; it fills the lanes past a row's end.
#
# Notebook 04 wrote V-trace as one reverse scan of $v_t$ itself
# ([its section 2](04_vtrace.ipynb#2.-Prologue,-scan,-epilogue)):
#
# $$v_t = \underbrace{V_t + \rho_t\delta_t - [\lnot\text{done}_t]\,\gamma_t c_t V'_t}_{b_t}
#   + \underbrace{\gamma_t c_t}_{a_t}\, v_{t+1}, \qquad \text{reset flag where done}_t .$$
#
# In 04 the [harness](GLOSSARY.md#harness) (`exercises.scan_hook`) ran your prologue and epilogue
# inside its own kernel. Here you write both kernels yourself: a chunked scan for `vs`, as your
# `reset_scan` in 00c, and a second kernel for the advantage, as your `vtrace_pg` in 04.

# %%
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # Triton kernels on the CPU

import triton
import triton.language as tl

import rltriton_lite as rl
from rltriton_lite import exercises

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

# %% [markdown]
# The combine is given: 00c's `reset_combine`, unchanged. Where its second operand resets, it
# returns that operand alone, and the first never enters.

# %%
@triton.jit
def reset_combine(a1, b1, k1, a2, b2, k2):  # (a1, b1, k1): the first operand, applied first
    return tl.where(k2, a2, a2 * a1), tl.where(k2, b2, b2 + a2 * b1), k1 | k2


# %% [markdown]
# ## Exercises
#
# Checked exercises work as in [notebook 00](00_associative_scan.ipynb#Exercises), under the
# [conventions card](GLOSSARY.md#conventions-for-every-exercise).
#
# **`vtrace_kernel`** (the capstone).
#
# **You write:** `vtrace_kernel(log_rhos, rewards, values, next_values, terminated, gamma, rho_bar,
# c_bar, chunk)`: a Triton kernel that scans `vs` row by row, in [chunks](GLOSSARY.md#chunk), then
# a second kernel that reads `vs` one step on, and the launcher that runs both.
#
# **It returns:** `(vs, pg)`, both (B, T): V-trace's targets $v_t$, and the advantage of your
# `vtrace_pg` (04), clipped at ρ̄.
#
# **Inputs:** (B, T) float32, contiguous, `terminated` bool; `log_rhos[t]` $= \log\pi_t/\mu_t$,
# `next_values[t]` $= V'_t = V(s_{t+1})$. `gamma`, `rho_bar`, `c_bar` numbers; `chunk` a power of two
# (`tl.arange` needs one). The rest is on the [conventions card](GLOSSARY.md#conventions-for-every-exercise).
#
# * **The recurrence** is the one above at λ = 1, no truncation input: $v_t = V_t + \rho_t\delta_t + \gamma(1-\text{done}_t)\,c_t\,(v_{t+1} - V'_t)$,
#   $\rho_t = \min(\bar\rho, \pi/\mu)$, $c_t = \min(\bar c, \pi/\mu)$, $\delta_t = r_t + \gamma(1-\text{term}_t)V'_t - V_t$.
# * **`pg` at step $t$** reads `vs` at step $t+1$, or `next_values` at the window's last step ($t = T-1$, the row's last).
#
# <details><summary>Details: why a second kernel for pg (needed for <code>vtrace_kernel</code>)</summary>
#
# `pg` reads $v_{t+1}$, the next step's `vs`: inside a chunk another lane's value, and at the
# chunk's last lane the carry. Triton has no cheap way to move a block by one lane (`tl.gather`
# can, as a general gather). Storing `vs` and loading it back in the same kernel needs a barrier
# between the store and the load (`tl.debug_barrier()`), or lane 5 may load `vs[6]` before lane 6
# has stored it. A second kernel starts only once the first has finished, so all of `vs` is in
# memory by then.
#
# The package's own V-trace kernel needs no second kernel. Its tiled scan keeps several steps per
# thread in registers, so it gets $v_{t+1}$ (04's `y_in`) along with `vs`. The course uses two kernels
# because your scan has one step per lane, and moving a block by one lane is not cheap in Triton.
#
# </details>
#
# (The checker's cases, and when the padding lanes' identity matters: the
# [appendix](#Appendix:-details-of-the-exercises).)

# %% [markdown]
# **What your kernel does**, part by part. The hints below hold the key lines.
#
# * **Part 1, the loop.** One program per row walks the row's chunks of `chunk` steps, from the
#   last to the first. It carries one number from chunk to chunk, $v$ at the first step of the
#   chunk just done, starting at 0.
# * **Part 2, the triple.** Split the recurrence as above, with [selects](GLOSSARY.md#select). At a
#   reset, [$b_t$](GLOSSARY.md#cut-step) is the formula above with $[\lnot\text{done}_t] = 0$.
#   Padding lanes get the [identity](GLOSSARY.md#identity) $(1, 0, \text{false})$.
# * **Part 3, the scan.** Use 00c's `reset_combine` unchanged (the cell above defines it), with
#   `reverse=True`. The cell below runs it on a chunk's last three [lanes](GLOSSARY.md#lane):
#   $a = 0.5$ on every lane, $b = (1, 2, 3)$ on lanes $(t, t+1, t+2)$, a reset at lane $t+1$, and a
#   carry $x = 10$ (a fourth lane, the identity, pads the block to 4).

# %%
@triton.jit
def _three_lanes(A, B, K, AS, BS, KS, N: tl.constexpr):  # lanes t, t+1, t+2, then one padding lane
    i = tl.arange(0, N)
    a_s, b_s, k_s = tl.associative_scan((tl.load(A + i), tl.load(B + i), tl.load(K + i) != 0), 0, reset_combine,
                                        reverse=True)
    tl.store(AS + i, a_s)
    tl.store(BS + i, b_s)
    tl.store(KS + i, k_s.to(tl.int32))


a3, b3 = torch.tensor([0.5, 0.5, 0.5, 1.0], device=DEVICE), torch.tensor([1.0, 2.0, 3.0, 0.0], device=DEVICE)
k3 = torch.tensor([False, True, False, False], device=DEVICE)  # the reset at lane t+1
a_s3, b_s3, k_s3 = torch.empty(4, device=DEVICE), torch.empty(4, device=DEVICE), torch.empty(4, dtype=torch.int32, device=DEVICE)
_three_lanes[(1,)](a3, b3, k3, a_s3, b_s3, k_s3, N=4)
vs3 = torch.where(k_s3 != 0, b_s3, b_s3 + a_s3 * 10.0)  # part 4, with the carry x = 10
print("maps:", list(zip(a_s3[:3].tolist(), b_s3[:3].tolist(), (k_s3[:3] != 0).tolist())), " vs:", vs3[:3].tolist())
assert a_s3[:3].tolist() == [0.25, 0.5, 0.5] and b_s3[:3].tolist() == [2.0, 2.0, 3.0]  # the table's maps
assert (k_s3[:3] != 0).tolist() == [True, True, False] and vs3[:3].tolist() == [2.0, 2.0, 8.0]  # and its vs

# %% [markdown]
# Lane by lane:
#
# | lane | its triple | its scanned map `(a_s, b_s, k_s)` | `vs` |
# | --- | --- | --- | --- |
# | $t+2$ | $(0.5, 3, \text{false})$ | its own triple, $(0.5, 3, \text{false})$ | $3 + 0.5 \cdot 10 = 8$ |
# | $t+1$ | $(0.5, 2, \text{true})$ | its own triple: the reset keeps lane $t+2$ out | $2$, no $x$ |
# | $t$ | $(0.5, 1, \text{false})$ | $(0.5 \cdot 0.5,\ 1 + 0.5 \cdot 2,\ \text{true}) = (0.25, 2, \text{true})$ | $2$, no $x$ |
#
# The rule behind the table: the scan passes the later step's triple first, as `(a1, b1, k1)`
# ([notebook 00, section 3](00_associative_scan.ipynb#3.-The-backward-recurrence-as-a-reverse-scan)).
# So `reset_combine(later, earlier)` gives $b_e + a_e\,(b_l + a_l x)$: the later map is applied
# first, to the value $x$ carried in. If the earlier step resets, the result is $b_e$ alone. If
# only the later run resets, it is $b_e + a_e b_l$ with the flag set, so the carry $x$ never enters.
#
# Triton combines lanes in a tree, not one by one
# ([00b, section 2](00b_triton_from_zero.ipynb#2.-A-scan-of-one-block) replays one), but every
# call gets the later run first.
# Each step gets the scanned map `(a_s, b_s, k_s)` of itself and the chunk's later steps, as in
# your `reset_scan`.
#
# * **Part 4, the carry and the store.** `vs` is `b_s + a_s * carry` where `k_s` is false (no
#   reset up to the chunk's end), and `b_s` alone where it is true; it is stored at every real step.
# * **Part 5, the second kernel's $v_{t+1}$.** Each element of the (B, T) output on its own:
#   $v_{t+1}$ is the row's `vs` at step $t+1$, or `next_values` at the window's last step.
# * **Part 6, the advantage.** $\text{pg} = \rho^{pg}_t\,(r_t + \gamma v_{t+1} - V_t)$ as in your
#   `vtrace_pg`, with a select dropping $\gamma v_{t+1}$ at a termination. It is stored at every
#   real element.

# %% [markdown]
# Why padding lanes need the identity: a padding lane of NaN (`junk`) never shows where the last real
# step resets, as the window's last step always does here, but spoils every step where it does not:

# %%
def _vs_padded(pad, last_resets):  # the lanes above, a padding lane in place of the carry; carry 0 after the row
    a, b = torch.tensor([0.5, 0.5, 0.5, pad[0]], device=DEVICE), torch.tensor([1.0, 2.0, 3.0, pad[1]], device=DEVICE)
    k = torch.tensor([False, False, last_resets, False], device=DEVICE)
    a_s, b_s, k_s = torch.empty(4, device=DEVICE), torch.empty(4, device=DEVICE), torch.empty(4, dtype=torch.int32, device=DEVICE)
    _three_lanes[(1,)](a, b, k, a_s, b_s, k_s, N=4)
    return torch.where(k_s != 0, b_s, b_s + a_s * 0.0)[:3]  # part 4, on the real steps


identity, junk = (1.0, 0.0), (float("nan"), float("nan"))
assert torch.equal(_vs_padded(junk, True), _vs_padded(identity, True))  # the last step resets: the junk never shows
assert _vs_padded(identity, False).isfinite().all() and _vs_padded(junk, False).isnan().all()  # no reset: it does
print("no reset at the last step. junk:", _vs_padded(junk, False).tolist(), " identity:", _vs_padded(identity, False).tolist())

# %% [markdown]
# <details><summary>Hint 1: where to start</summary>
#
# Copy your `reset_scan` from
# [00c, section 1](00c_episodes_and_hooks.ipynb#1.-Episode-ends-as-a-select:-the-reset). Its loop,
# combine, carry and store are the checklist's parts 1, 3 and 4 already: only the triple it builds
# (part 2) changes.
# For `pg`, start from your `vtrace_pg`. The formula is the same, with `y_in` replaced by a load of
# `vs` one element on.
#
# </details>
#
# <details><summary>Hint 2: the plan</summary>
#
# * Give each lane its triple: one for each kind of step of
#   [01's episode-end table](01_discounted_return.ipynb#The-episode-end-table), and the identity for
#   a padding lane past the row's end.
# * The first kernel, one program per row, walks the row's chunks last first, as your `reset_scan`.
#   The template below has that loop; `ci` is the chunk's index, so that `c` stays free for $c_t$.
# * The second kernel takes one block of the (B, T) elements per program, as flat indices
#   `e = row * T + t`. It reads $v_{t+1}$ one element on, except at the row's last step.
# * The launcher runs `vs_kernel[(B,)]`, then `pg_kernel[(triton.cdiv(B * T, BLOCK),)]`.
#
# </details>
#
# <details><summary>Hint 3: check it by hand</summary>
#
# [Notebook 04's by-hand case](04_vtrace.ipynb#1.-The-loop), with `chunk=2`: the carry crosses
# from the chunk {2} to the chunk {0, 1}. `next_values` is $(1, 1, 2)$, so its numbers are 04's: `vs` $= (1.75, 1.5, 2)$
# and `pg` $= (0.75, 0.5, 1)$. Step 2 is a reset, $v_2 = V_2 + \rho_2\delta_2 = 1 + 1 = 2$, with
# no $v_3$ in it. Then make step 1 terminal, with a NaN in `next_values` there: `vs`
# $= (1.5, 1, 2)$ and `pg` $= (0.5, 0, 1)$.
#
# ```python
# one_row = lambda *x: torch.tensor([x], device=DEVICE)  # noqa: E731 -- a tensor of one row
# lr_r_v = (torch.log(one_row(2.0, 0.5, 1.0)), one_row(1.0, 1.0, 1.0), one_row(1.0, 1.0, 1.0))
# for nv3, term3 in ((one_row(1.0, 1.0, 2.0), one_row(False, False, False)),
#                    (one_row(1.0, float("nan"), 2.0), one_row(False, True, False))):
#     print([x.tolist() for x in exercises.guarded(vtrace_kernel, *lr_r_v, nv3, term3, 0.5, 1.0, 1.0, 2)])
# # must print [[[1.75, 1.5, 2.0]], [[0.75, 0.5, 1.0]]], then [[[1.5, 1.0, 2.0]], [[0.5, 0.0, 1.0]]]
# ```
#
# For the carry, a row of five steps: $\pi/\mu = (2, 0.5, 1, 0.5, 1)$, rewards and values 1,
# `next_values` $(1, 1, 1, 1, 2)$.
# With `chunk=2` the carry crosses three chunks; with `chunk=16` the row is one chunk and no carry
# is read. The two must print the same `vs`:
#
# ```python
# lr5, ones5 = torch.log(one_row(2.0, 0.5, 1.0, 0.5, 1.0)), one_row(1.0, 1.0, 1.0, 1.0, 1.0)
# nv5, term5 = one_row(1.0, 1.0, 1.0, 1.0, 2.0), one_row(False, False, False, False, False)
# for chunk in (2, 16):
#     print(exercises.guarded(vtrace_kernel, lr5, ones5, ones5, nv5, term5, 0.5, 1.0, 1.0, chunk)[0].tolist())
# # must print [[1.71875, 1.4375, 1.75, 1.5, 2.0]], twice
# ```
#
# Run the checker before you open Hint 4.
#
# </details>
#
# <details><summary>Hint 4: the key lines</summary>
#
# | step | multiplier $a_t$ | $b_t$ | reset? (`k`) |
# | --- | --- | --- | --- |
# | ordinary | $\gamma c_t$ | $V_t + \rho_t\delta_t - \gamma c_t V'_t$ | no |
# | termination | — | $V_t + \rho_t(r_t - V_t)$ | yes |
# | the window's last step, not terminated | — | $V_t + \rho_t\delta_t$ | yes |
# | padding, past the row's end | 1 | 0 | no |
#
# A dash: the reset ignores $a_t$, so $\gamma c_t$ may stay there.
#
# ```python
# reset = term | ___  # ___: which other step has no v_{t+1} to read?
# a = tl.where(m, ___, 1.0)  # padding lanes: the identity
# b = tl.where(m, v + rho * delta - tl.where(reset, ___, ___), 0.0)  # ___: what does a reset drop?
# ```
#
# * **The next carry** is `vs` on one lane, picked out by a masked sum. Which step's `vs` enters
#   the chunk before?
# * **The second kernel's** $v_{t+1}$, masked so that it never reads past the row:
#
# ```python
# vs_next = tl.load(VS + e + 1, mask=m & (t < T - 1), other=0.0)  # next_values at t == T - 1 instead
# ```
#
# </details>

# %%
# YOUR CODE: your two kernels, and the launcher returning (vs, pg). A template to uncomment and fill in:
#
# @triton.jit
# def vs_kernel(LR, R, V, NV, TERM, VS, gamma, rho_bar, c_bar, T, CHUNK: tl.constexpr):
#     row = tl.program_id(0)                      # one program per row
#     carry = 0.0                                 # nothing comes after the row
#     n_chunks = tl.cdiv(T, CHUNK)
#     for i in range(0, n_chunks):
#         ci = n_chunks - 1 - i                   # the chunks, last first
#         t = ci * CHUNK + tl.arange(0, CHUNK)
#         m = t < T                               # lanes past the row's end: padding
#         ...                                     # part 2: load the chunk at row * T + t, build the triple
#         ...                                     # part 3: the scan; part 4: vs, its store, the next carry
#
#
# @triton.jit
# def pg_kernel(LR, R, V, NV, TERM, VS, PG, gamma, rho_bar, T, n, BLOCK: tl.constexpr):
#     e = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # flat indices of the (B, T) elements
#     m, t = e < n, e % T                                  # n = B * T; t: the step within its row
#     ...                                                  # part 5: v_{t+1}; part 6: pg and its store
#
#
# def vtrace_kernel(log_rhos, rewards, values, next_values, terminated, gamma, rho_bar, c_bar, chunk):
#     B, T = rewards.shape
#     vs, pg = torch.empty_like(rewards), torch.empty_like(rewards)
#     vs_kernel[(B,)](log_rhos, rewards, values, next_values, terminated, vs, gamma, rho_bar, c_bar, T, CHUNK=chunk)
#     BLOCK = 1024
#     pg_kernel[(triton.cdiv(B * T, BLOCK),)](log_rhos, rewards, values, next_values, terminated, vs, pg,
#                                            gamma, rho_bar, T, B * T, BLOCK=BLOCK)
#     return vs, pg
def vtrace_kernel(log_rhos, rewards, values, next_values, terminated, gamma, rho_bar, c_bar, chunk):
    raise NotImplementedError  # replace this function by the template's launcher


# %%
exercises.attempt("vtrace_kernel", vtrace_kernel)

# %% [markdown]
# For part 2 you may reuse 04's prologue: the given `exercises.vtrace_prologue` that your
# `vtrace_pg` ran after. Add the padding lanes' identity, which the harness set for you there.
#
# **Your kernel against the package.** One random batch, with terminations (NaN behind them), clipped
# ratios and rows of several chunks, through your `vtrace_kernel` and through `rl.vtrace`:

# %%
g_cmp = torch.Generator().manual_seed(0)
B_cmp, T_cmp = 4, 100  # chunk 32 below: four chunks a row
lr_cmp = 0.5 * torch.randn(B_cmp, T_cmp, generator=g_cmp)  # log pi/mu: ratios from ~0.2 to ~5
r_cmp, v_cmp, nv_cmp = (torch.randn(B_cmp, T_cmp, generator=g_cmp) for _ in range(3))
term_cmp = torch.rand(B_cmp, T_cmp, generator=g_cmp) < 0.05
nv_cmp = torch.where(term_cmp, float("nan"), nv_cmp)  # never to be read
x_cmp = [x.to(DEVICE) for x in (lr_cmp, r_cmp, v_cmp, nv_cmp, term_cmp)]
want_vs, want_pg = rl.vtrace(*x_cmp[:3], gamma=0.9, rho_bar=1.0, c_bar=0.9, pg_rho_bar=1.0, next_values=x_cmp[3],
                             terminated=x_cmp[4])
try:
    got_vs, got_pg = vtrace_kernel(*x_cmp, 0.9, 1.0, 0.9, 32)
except NotImplementedError:
    print("vtrace_kernel is still the starter: write it above, then rerun this cell")
else:
    print(f"{int(term_cmp.sum())} terminations; largest |yours - rl.vtrace|: "
          f"vs {(got_vs - want_vs).abs().max().item():.2e}, pg {(got_pg - want_pg).abs().max().item():.2e}")

# %% [markdown]
# Without a checker:
#
# *(Answer it in its cell below, for your teacher's grader.)*
#
# 1. Fuse the two kernels: compute `pg` inside `vs_kernel`, right after each chunk's `vs`. `pg` at
#    step $t$ needs $v_{t+1}$, which another lane of the same chunk computed (the carry, at the
#    chunk's last lane). Is a store of `vs` and a load of `vs[t+1]` safe there, without a second
#    kernel? If not, name two ways to make it safe.
#
#    <details><summary>Check yourself</summary>
#
#    Not as it stands: lane $t$ may load `vs[t+1]` before the thread that holds lane $t+1$ has stored
#    it. A `tl.debug_barrier()` between the store and the load makes it safe: one program owns the
#    whole row, so waiting for that program's threads is enough, and no other program writes the row.
#    A second way needs no barrier: scan the triples once more, loaded one step on, so that lane $t$
#    gets $v_{t+1}$ in a register, as 04's harness does for `y_in`; that doubles the scan's work.
#    Either way `pg` is the same formula on $v_{t+1}$, `vs` one step on (or `next_values` at the row's
#    last step). The interpreter runs a block as one NumPy array, so it cannot show the race.
#
#    </details>

# %% jupyter={"source_hidden": true}
# Checks: question 1's expected result (CI runs them; skip when reading)
assert callable(tl.debug_barrier)  # "a tl.debug_barrier()"
g_q = torch.Generator().manual_seed(1)
lr_q = 0.5 * torch.randn(3, 70, generator=g_q, dtype=torch.float64)
r_q, v_q, nv_q = (torch.randn(3, 70, generator=g_q, dtype=torch.float64) for _ in range(3))
term_q = torch.rand(3, 70, generator=g_q) < 0.05
nv_q = torch.where(term_q, float("nan"), nv_q)  # never to be read
vs_q, pg_q = rl.vtrace(lr_q, r_q, v_q, gamma=0.9, rho_bar=1.0, c_bar=0.9, pg_rho_bar=1.0, next_values=nv_q,
                       terminated=term_q)
vs_next_q = torch.cat([vs_q[:, 1:], nv_q[:, -1:]], 1)  # v_{t+1}: vs one step on, next_values at the row's last step
torch.testing.assert_close(pg_q, lr_q.exp().clamp(max=1.0) * (r_q + torch.where(term_q, 0.0, 0.9 * vs_next_q) - v_q))
done_q = term_q.clone()
done_q[:, -1] = True  # the window's last step
delta_q = r_q + torch.where(term_q, 0.0, 0.9 * nv_q) - v_q
a_q = torch.where(done_q, 0.0, 0.9 * lr_q.exp().clamp(max=0.9))  # gamma c_t, and a = 0 at a reset (tensor code)
b_q = v_q + lr_q.exp().clamp(max=1.0) * delta_q - torch.where(done_q, 0.0, a_q * nv_q)
torch.testing.assert_close(rl.linear_scan(a_q, b_q), vs_q)  # the triple of "What your kernel does"
torch.testing.assert_close(rl.linear_scan(a_q[:, 1:], b_q[:, 1:]), vs_q[:, 1:])  # "scan the triples ... one step on"
assert term_q.any()

# %% [markdown] tags=["answer-1"]
# **Answer 1.** *Your answer here (code for it: in cells under this one).*

# %% [markdown]
# ## What you now know
#
# * V-trace's `vs` is 00c's reset scan with another triple: $a_t = \gamma c_t$,
#   $b_t = V_t + \rho_t\delta_t - [\lnot\text{done}_t]\,\gamma c_t V'_t$, and the reset flag set at every
#   episode end and at the window's last step.
# * Padding lanes take the identity $(1, 0, \text{false})$. The carry, $v$ at a chunk's first step,
#   enters the chunk before it only where no reset flag cuts it.
# * An output that reads a neighbour's scanned value, here $v_{t+1}$, is simplest in a second
#   kernel: it starts only once all of `vs` is in memory.
# * Selects, not products with 0, keep a NaN behind a termination out of both outputs.

# %% [markdown]
# ## Appendix: details of the exercises
#
# **How `vtrace_kernel` is checked, and the padding lanes' identity.** The checker compares
# `(vs, pg)` with `reference.vtrace` on rows shorter and longer than a chunk, with terminations.
#
# The padding lanes' identity is a safeguard that never shows here. Padding lanes lie after step
# $T-1$, which always resets, so nothing from them reaches `vs`. The identity matters in a row with
# no reset at its end, such as one process's piece of a row split across processes (notebook 11):
# there the padding lanes' pair enters the chunk's map.
